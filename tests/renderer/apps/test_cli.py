"""The command lines: `preprocess` and `tessera preprocess|info`, called through their `main`.
A good input writes a .tess and prints the summary; every bad input prints one line on stderr,
exits with status 2, and leaves nothing behind."""

from __future__ import annotations

import numpy as np
import pytest
import trimesh

from assets.rock import make_terrain
from renderer.apps import preprocess_cli
from renderer.apps import cli as tessera_cli


@pytest.fixture(scope="module")
def terrain_obj(tmp_path_factory):
    mesh = make_terrain(48, seed=4)
    path = tmp_path_factory.mktemp("cli") / "terrain.obj"
    trimesh.Trimesh(mesh.positions, mesh.position_triangles, process=False).export(path)
    return path


@pytest.mark.slow
def test_preprocess_writes_beside_input_and_info_agrees(terrain_obj, capsys):
    assert preprocess_cli.main([str(terrain_obj)]) == 0
    out = capsys.readouterr().out
    tess = terrain_obj.with_suffix(".tess")
    assert tess.exists()
    for word in ("input", "clusters", "level 0", "root", "pages", "file", "seconds"):
        assert word in out
    assert "4,608 triangles, 2,401 vertices" in out  # 48 x 48 quads, two triangles each
    assert tessera_cli.main(["info", str(tess), "--verify"]) == 0
    info = capsys.readouterr().out
    # the same statistics block, read back from the file
    assert info.split("  seconds")[0] == out.split("  seconds")[0]


def test_tessera_preprocess_with_options(terrain_obj, tmp_path, capsys):
    out = tmp_path / "small.tess"
    args = ["preprocess", str(terrain_obj), "-o", str(out), "--max-triangles", "64",
            "--group-size", "8", "--page-kib", "32", "--verify", "-q"]
    assert tessera_cli.main(args) == 0
    assert out.exists() and capsys.readouterr().out == ""


def _write(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(text)
    return p


BAD_INPUTS = {
    "missing": None,
    "unknown.xyz": "1 2 3\n",
    "points.obj": "v 0 0 0\nv 1 0 0\nv 0 1 0\n",
    "lines.obj": "v 0 0 0\nv 1 0 0\nv 0 1 0\nl 1 2\nl 2 3\n",
    "empty.obj": "",
    "nan.obj": "v 0 0 0\nv nan 0 0\nv 0 1 0\nf 1 2 3\n",
    "inf.obj": "v 0 0 0\nv inf 0 0\nv 0 1 0\nf 1 2 3\n",
    "range.obj": "v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 9\n",
    "degenerate.obj": "v 0 0 0\nv 1 0 0\nv 2 0 0\nf 1 2 3\n",
}


@pytest.mark.parametrize("name", list(BAD_INPUTS))
def test_bad_input_one_line_exit_2_nothing_left(name, tmp_path, capsys):
    text = BAD_INPUTS[name]
    path = tmp_path / ("missing.obj" if text is None else name)
    if text is not None:
        path.write_text(text)
    before = sorted(p.name for p in tmp_path.iterdir())
    assert preprocess_cli.main([str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith("preprocess: error: ") and path.name in err
    assert sorted(p.name for p in tmp_path.iterdir()) == before


@pytest.mark.parametrize("args", [["--max-triangles", "200"], ["--page-kib", "1"],
                                  ["-o", "out.obj"], ["--group-size", "1"]])
def test_bad_options_exit_2(terrain_obj, args, capsys):
    assert preprocess_cli.main([str(terrain_obj), *args]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err


def test_info_on_corrupted_file(terrain_obj, tmp_path, capsys):
    out = tmp_path / "t.tess"
    assert preprocess_cli.main([str(terrain_obj), "-o", str(out), "-q"]) == 0
    data = bytearray(out.read_bytes())
    data[len(data) - 5000] ^= 0x40  # a byte inside the last page
    out.write_bytes(bytes(data))
    assert tessera_cli.main(["info", str(out), "--verify"]) == 2
    err = capsys.readouterr().err
    assert "checksum mismatch" in err and err.count("\n") == 1
    assert tessera_cli.main(["info", str(tmp_path / "nope.tess")]) == 2
    capsys.readouterr()
    np.testing.assert_equal(out.exists(), True)
    # a folder was an IsADirectoryError traceback; a foreign file's message named it twice
    assert tessera_cli.main(["info", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err == f"tessera: error: {tmp_path}: is a folder, not a file\n"
    (tmp_path / "notes.txt").write_text("not a tess file\n" * 20)
    assert tessera_cli.main(["info", str(tmp_path / "notes.txt")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.count("notes.txt") == 1
