"""`tessera render` and `tessera bench` through their `main`: real frames on the adapter present
(lavapipe in CI), small scenes. The figures themselves are checked in test_render / test_cull;
here: the files written, the statistics printed, and one-line errors with exit status 2."""

from __future__ import annotations

import json

import numpy as np
import pytest

from preprocess.tessfile import read_tess
from renderer import cli as tessera_cli


@pytest.fixture(scope="module")
def sphere_tess(tmp_path_factory):
    path = tmp_path_factory.mktemp("cli_render") / "sphere.tess"
    assert tessera_cli.main(["preprocess", "--builtin", "sphere", "--triangles", "5000",
                             "-o", str(path), "-q"]) == 0
    return path


def test_render_writes_png_arrays_and_stats(sphere_tess, tmp_path, capsys):
    png = tmp_path / "out.png"
    npz = tmp_path / "out.npz"
    assert tessera_cli.main(["render", str(sphere_tess), "-o", str(png), "--size", "96x64",
                             "--instances", "4", "--arrays", str(npz), "--debug", "level",
                             "--traversal", "persistent"]) == 0
    out = capsys.readouterr().out
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    for word in ("instances   4 of 4 in view", "drawn", "triangles per covered pixel"):
        assert word in out
    arrays = np.load(npz)
    assert arrays["color"].shape == (64, 96, 4)
    assert arrays["depth"].shape == (64, 96)
    covered = arrays["instance"] >= 0
    assert covered.any() and (~covered).any()
    assert set(np.unique(arrays["instance"][covered])) <= {0, 1, 2, 3}
    assert (arrays["depth"][covered] > 0).all() and (arrays["depth"][~covered] == 0).all()


def test_render_explicit_camera_looking_away_draws_nothing(sphere_tess, tmp_path, capsys):
    png = tmp_path / "away.png"
    assert tessera_cli.main(["render", str(sphere_tess), "-o", str(png), "--size", "32x32",
                             "--eye", "0,0,5", "--target", "0,0,10"]) == 0
    assert "instances   0 of 1 in view" in capsys.readouterr().out


@pytest.mark.parametrize("args, message", [
    (["render", "missing.tess"], "no such file"),
    (["render", "{sphere}", "--size", "0x10"], "out of range"),
    (["render", "{sphere}", "--eye", "1,2"], "expected x,y,z"),
    (["bench", "missing.tess", "--no-brute"], "no such file"),
])
def test_errors_are_one_line_exit_2(sphere_tess, args, message, capsys):
    args = [a.replace("{sphere}", str(sphere_tess)) for a in args]
    if "--size" in args or "--eye" in args:  # argparse rejects these: exit status 2
        with pytest.raises(SystemExit) as e:
            tessera_cli.main(args)
        assert e.value.code == 2
    else:
        assert tessera_cli.main(args) == 2
    err = capsys.readouterr().err.strip()
    assert message in err
    assert "Traceback" not in err


def test_bench_prints_medians_beside_brute_force(sphere_tess, tmp_path, capsys):
    js = tmp_path / "bench.json"
    assert tessera_cli.main(["bench", str(sphere_tess), "--instances", "9", "--size", "64x64",
                             "--frames", "3", "--brute-frames", "1", "--json", str(js)]) == 0
    out = capsys.readouterr().out
    for word in ("tessera     frame", "GPU ms", "brute force frame", "speedup"):
        assert word in out
    figures = json.loads(js.read_text())
    with read_tess(sphere_tess) as f:
        assert figures["scene_triangles"] == 9 * f.meta["input_triangles"]
    assert figures["frames"] == 3 and figures["triangles"] > 0
    assert figures["brute_frame_ms"] > 0 and figures["speedup"] > 0
