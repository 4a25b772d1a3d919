"""Inputs `tessera` cannot handle give one line on stderr and exit status 2: never a traceback,
never a blank or garbled image with status 0, never a file left behind. What needs no GPU is
refused before the device is opened (`create_context` is made to fail here to prove it); what
depends on the adapter (image size, instance count) before anything is allocated, naming the
limit. The edge values that are valid render a picture."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from renderer.apps import cli

ROOT = Path(__file__).resolve().parents[3]


def _main(args: list[str]) -> int:
    """`tessera ARGS` in this process: its exit status (argparse's errors exit)."""
    try:
        return cli.main([str(a) for a in args])
    except SystemExit as e:
        return e.code


def _one_line_error(capsys) -> str:
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.endswith("\n"), err
    assert "Traceback" not in err and "error:" in err
    return err.strip()


@pytest.fixture
def no_gpu(monkeypatch):
    """Opening a device fails the test: the check must come before it."""
    def opened(*args, **kwargs):
        raise AssertionError("the GPU was opened")

    import renderer.device
    import renderer.renderer

    monkeypatch.setattr(renderer.device, "create_context", opened)
    monkeypatch.setattr(renderer.renderer, "create_context", opened)


# ------------------------------------------------------------ option values, before the GPU

BAD_OPTIONS = [
    ("render", "--fov", "0"), ("render", "--fov", "180"), ("render", "--fov", "-10"),
    ("render", "--fov", "1000"), ("render", "--fov", "nan"), ("render", "--fov", "0.99"),
    ("render", "--fov", "179.01"), ("render", "--fill", "0"), ("render", "--fill", "-1"),
    ("render", "--fill", "nan"), ("render", "--fill", "inf"),
    ("render", "--tau", "0"), ("render", "--tau", "-1"), ("render", "--tau", "nan"),
    ("render", "--tau", "inf"), ("render", "--size", "0x10"), ("render", "--size", "16385x8"),
    ("render", "--size", "64x"), ("render", "--eye", "1,2"), ("render", "--eye", "0,nan,1"),
    ("render", "--eye", "0,0,1e30"), ("render", "--target", "inf,0,0"),
    ("render", "--instances", "0"), ("render", "--instances", "-3"),
    ("render", "--instances", "2.5"), ("render", "--pool-mb", "0"),
    ("render", "--pool-mb", "nan"), ("render", "--upload-mb", "0"),
    ("render", "--upload-mb", "-inf"),
    ("render", "--sun", "nan,30"), ("render", "--sun", "10,0"), ("render", "--sun", "10,-20"),
    ("render", "--sun", "10,91"), ("render", "--sun", "10"), ("render", "--sun", "a,b"),
    ("render", "--sun", "0,0,1"), ("render", "--shadow-pool-mb", "0"),
    ("render", "--shadow-pool-mb", "1.99"),
    ("render", "--shadow-pool-mb", "nan"), ("view", "--sun", "0,0"),
    ("render", "--ssaa", "0"), ("render", "--ssaa", "-2"), ("render", "--ssaa", "1.5"),
    ("render", "--ssaa", "two"), ("render", "--taa", "-1"), ("render", "--taa", "2.5"),
    ("render", "--taa", "1025"),
    ("bench", "--shadow-pool-mb", "-1"),
    ("view", "--frames", "-1"), ("view", "--near", "0"), ("view", "--near", "nan"),
    ("view", "--fov", "180"), ("view", "--tau", "-1"),
    ("bench", "--frames", "0"), ("bench", "--baseline-limit", "nan"),
    ("bench", "--brute-frames", "0"), ("bench", "--instances", "0"), ("bench", "--tau", "inf"),
]


@pytest.mark.parametrize("command, option, value", BAD_OPTIONS)
def test_option_values_past_their_limits(command, option, value, tmp_path, capsys,
                                         no_gpu) -> None:
    out = tmp_path / "out.png"
    args = [command, tmp_path / "x.tess", option, value]
    if command == "render":
        args += ["-o", out]
    assert _main(args) == 2
    err = _one_line_error(capsys)
    assert f"argument {option}" in err
    assert not out.exists()


@pytest.mark.parametrize("args, message", [
    (["--eye", "1,1,1", "--target", "1,1,1"], "same point"),
    (["-o", "{tmp}/x.jpg"], "PNG files only"),
    (["-o", "{tmp}/x"], "PNG files only"),
    (["-o", "{tmp}/missing/x.png"], "no folder"),
    (["--arrays", "{tmp}/missing/x.npz"], "no folder"),
    (["--arrays", "{tmp}/x"], "NPZ files only"),
    (["-o", "{tmp}"], "is a folder"),
    (["-o", "."], "is a folder"),  # no name at all: was a ValueError traceback
    (["--arrays", ".."], "is a folder"),
    (["--fill", "2.01"], "inside the scene's bounding sphere"),  # at --fov 60: 2 at most
    (["--fill", "3", "--fov", "50"], "at most 2.37"),
])
def test_paths_and_camera_refused_before_the_gpu(sphere_tess, args, message, tmp_path, capsys,
                                                 no_gpu) -> None:
    args = [a.replace("{tmp}", str(tmp_path)) for a in args]
    if "-o" not in args:
        args += ["-o", str(tmp_path / "out.png")]
    assert _main(["render", sphere_tess, *args]) == 2
    assert message in _one_line_error(capsys)
    assert not list(tmp_path.glob("*.*"))


@pytest.mark.slow
def test_a_shadow_pool_past_the_adapter_is_one_line(sphere_tess, gpu, tmp_path, capsys) -> None:
    out = tmp_path / "out.png"
    assert _main(["render", sphere_tess, "--shadow-pool-mb", "1e7", "-o", out]) == 2
    assert "more than this adapter binds" in _one_line_error(capsys)
    assert not out.exists()


def test_missing_or_unreadable_input_refused_before_the_gpu(tmp_path, capsys, no_gpu) -> None:
    out = tmp_path / "out.png"
    assert _main(["render", tmp_path / "missing.tess", "-o", out]) == 2
    assert "no such file" in _one_line_error(capsys)
    assert _main(["render", tmp_path, "-o", out]) == 2
    assert "is a folder" in _one_line_error(capsys)
    (tmp_path / "junk.tess").write_bytes(b"not a tess file at all" * 10)
    assert _main(["render", tmp_path / "junk.tess", "-o", out]) == 2
    _one_line_error(capsys)
    assert _main(["bench", tmp_path / "missing.tess", "--json", tmp_path / "b.json"]) == 2
    assert "no such file" in _one_line_error(capsys)
    assert not out.exists()


def _255_triangles(parts) -> None:
    parts.records(0)["triangle_count"][0] = 255


def test_a_wrong_value_in_a_checksum_valid_file_refused_before_the_gpu(
        sphere_tess, craft_tess, tmp_path, capsys, no_gpu) -> None:
    """A file edited and checksummed again: its bytes are whole, a record is wrong. Once it
    rendered garbage with status 0; now opening it refuses, naming the page, record and field
    (every case: tests/preprocess/tess/test_checks.py)."""
    bad = craft_tess(sphere_tess, tmp_path / "bad.tess", _255_triangles)
    out = tmp_path / "out.png"
    assert _main(["render", bad, "-o", out]) == 2
    assert f"{bad}: page 0 cluster 0: triangle_count 255, not 1..128" in _one_line_error(capsys)
    assert not out.exists()


def test_info_refuses_a_wrong_value_in_a_checksum_valid_file(sphere_tess, craft_tess,
                                                            tmp_path) -> None:
    """`tessera info` as a program: status 2 and one line, no traceback."""
    bad = craft_tess(sphere_tess, tmp_path / "bad.tess", _255_triangles)
    done = subprocess.run([sys.executable, "-m", "renderer.apps.cli", "info", str(bad)],
                          capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert done.returncode == 2 and done.stdout == "", done
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr, done.stderr
    assert "page 0 cluster 0: triangle_count 255" in done.stderr


@pytest.mark.parametrize("option, content, message", [
    ("--plots", b"a file", "is a file, not a folder"),  # was FileExistsError after the suite
    ("--compare", b"\x80\x81 binary", "not a JSON file"),  # was the codec's words alone
    # another tool's JSON compared nothing and printed "no regression"
    ("--compare", b'{"models": {}}', "not a tessera bench suite report"),
    ("--compare", b'{"scenarios": {"scaling": [{"variant": "1"}]}}',
     "not a tessera bench suite report"),
])
def test_bench_files_refused_before_the_suite(sphere_tess, option, content, message, tmp_path,
                                              capsys, no_gpu) -> None:
    path = tmp_path / ("given.json" if option == "--compare" else "given")
    path.write_bytes(content)
    assert _main(["bench", sphere_tess, option, path, "--frames", "1"]) == 2
    assert message in _one_line_error(capsys)


# ------------------------------------------------------------------ scene files, before the GPU

def _scene(tmp_path, sphere_tess, **entry) -> str:
    """A scene file placing the sphere once with `entry` (or a grid with `grid=...`), plus
    `camera=...` if given."""
    camera = entry.pop("camera", None)
    sun = entry.pop("sun", None)
    data = {"assets": {"s": sphere_tess}}
    if sun is not None:
        data["sun"] = sun
    if "grid" in entry:
        data["grids"] = [{"asset": "s", **entry.pop("grid")}]
    else:
        data["instances"] = [{"asset": "s", **entry}]
    if camera is not None:
        data["camera"] = camera
    path = tmp_path / "scene.json"
    path.write_text(json.dumps(data))  # NaN and Infinity are written as JSON's extension
    return str(path)


@pytest.mark.parametrize("entry, where", [
    ({"grid": {"count": -4}}, "grids[0].count"),
    ({"grid": {"count": 2.5}}, "grids[0].count"),
    ({"grid": {"count": "9"}}, "grids[0].count"),
    ({"grid": {"count": math.nan}}, "grids[0].count"),
    ({"grid": {"count": 4, "spacing": math.inf}}, "grids[0].spacing"),
    ({"grid": {"count": 4, "origin": [0, 1e30, 0]}}, "grids[0].origin"),
    ({"scale": math.nan}, "instances[0].scale"),
    ({"scale": "big"}, "instances[0].scale"),
    ({"scale": -2}, "instances[0].scale"),
    ({"scale": 1e30}, "instances[0].scale"),
    ({"scale": 1e-12}, "singular"),
    ({"translate": [1e30, 0, 0]}, "instances[0].translate"),
    ({"translate": [0, "1", 0]}, "instances[0].translate"),
    ({"rotate": [0, math.inf, 0]}, "instances[0].rotate"),
    ({"scael": 2}, "'scael'"),
    ({"camera": {"eye": [0, 0, 5], "fov": 180}}, "camera.fov"),
    ({"camera": {"eye": [0, 0, 5], "fov": 0}}, "camera.fov"),
    ({"camera": {"eye": [0, 0, 5], "near": 0}}, "camera.near"),
    ({"camera": {"eye": [0, 0, 5], "near": math.nan}}, "camera.near"),
    ({"camera": {"eye": [1, 2, 3], "target": [1, 2, 3]}}, "same point"),
    ({"camera": {"eye": [0, 0, 1e19]}}, "camera.eye"),
    ({"sun": {"azimuth": 10, "elevation": 0}}, "not above the horizon"),
    ({"sun": {"azimuth": math.nan, "elevation": 30}}, "sun.azimuth"),
    ({"sun": {"azimuth": 10, "elevation": "high"}}, "sun.elevation"),
    ({"sun": [10, 30]}, "'sun' must be an object"),
    ({"sun": {"azimut": 10}}, "'azimut'"),
])
def test_scene_file_fields_refused_before_the_gpu(sphere_tess, entry, where, tmp_path, capsys,
                                                  no_gpu) -> None:
    out = tmp_path / "out.png"
    assert _main(["render", _scene(tmp_path, sphere_tess, **entry), "-o", out]) == 2
    assert where in _one_line_error(capsys)
    assert not out.exists()


# ------------------------------------------------------------- what the adapter decides (GPU)

def _binding_limit(gpu) -> int:
    from renderer.frame import binding_limit

    return binding_limit(gpu.device)[0]


@pytest.mark.slow
def test_size_past_the_adapter_limit_names_it_and_allocates_nothing(gpu, monkeypatch) -> None:
    import renderer.frame
    from renderer.renderer import Renderer

    side = math.isqrt(_binding_limit(gpu) // 8) + 1  # 8 bytes a pixel: the largest buffers
    if side > 16384:
        pytest.skip("this adapter binds every image size the command line takes")
    allocated = []
    monkeypatch.setattr(renderer.frame, "buffer", lambda *a, **k: allocated.append(a))
    with pytest.raises(ValueError, match="max_storage_buffer_binding_size") as e:
        Renderer(side, side)
    assert f"{side}x{side}" in str(e.value) and "at most" in str(e.value)
    assert allocated == []


@pytest.mark.gpu
def test_cli_size_past_the_adapter_limit(sphere_tess, gpu, tmp_path, capsys) -> None:
    side = math.isqrt(_binding_limit(gpu) // 8) + 1
    if side > 16384:
        pytest.skip("this adapter binds every image size the command line takes")
    out = tmp_path / "big.png"
    assert _main(["render", sphere_tess, "-o", out, "--size", f"{side}x{side}"]) == 2
    err = _one_line_error(capsys)
    assert "max_storage_buffer_binding_size" in err and "e.g." in err
    assert not out.exists()


@pytest.mark.gpu
def test_ssaa_past_the_adapter_limit(sphere_tess, gpu, tmp_path, capsys) -> None:
    side = math.isqrt(_binding_limit(gpu) // 8) + 1  # the least side it cannot hold
    n = -(-side // 16)
    out = tmp_path / "big.png"
    assert _main(["render", sphere_tess, "-o", out, "--size", "16x16", "--ssaa", n]) == 2
    err = _one_line_error(capsys)
    assert f"ssaa {n} draws 16x16 at {16 * n}x{16 * n}" in err
    assert "at most" in err or "out of range" in err  # the binding, or the largest image side
    assert not out.exists()


@pytest.mark.slow
@pytest.mark.gpu
def test_instances_past_the_adapter_limit(sphere_tess, gpu, tmp_path, capsys) -> None:
    from renderer.renderer import Renderer

    r = Renderer(16, 16)
    # 48 bytes an instance, a block of 64 slots an asset at a time, and a proxy slot for each
    # node of the aggregate tree over the blocks (about 8/7 of a slot a block)
    most = r.max_instances()
    per = _binding_limit(gpu) // 48 / (1 + 8 / 7 / 64)
    assert 0 < per - most < 64 + per / 700
    with pytest.raises(ValueError, match=f"at most {most:,} instances"):
        r.add_grid(r.load(sphere_tess), 10**12)  # refused before 64 TB of transforms
    out = tmp_path / "out.png"
    assert _main(["render", sphere_tess, "-o", out, "--size", "16x16", "--instances",
                  str(most + 1)]) == 2
    err = _one_line_error(capsys)
    assert f"at most {most:,} instances" in err and "max_storage_buffer_binding_size" in err
    scene = _scene(tmp_path, sphere_tess, grid={"count": 1e9})
    assert _main(["render", scene, "-o", out, "--size", "16x16"]) == 2
    assert "1,000,000,000 instances" in _one_line_error(capsys)
    assert not out.exists()


@pytest.mark.gpu
def test_scene_too_far_from_the_origin_for_float32(sphere_tess, tmp_path, capsys) -> None:
    out = tmp_path / "out.png"
    scene = _scene(tmp_path, sphere_tess, translate=[1e8, 0, 0])
    assert _main(["render", scene, "-o", out, "--size", "32x32"]) == 2
    assert "float32" in _one_line_error(capsys)
    assert not out.exists()


def _coverage(args: list, tmp_path, capsys, name: str) -> np.ndarray:
    arrays = tmp_path / f"{name}.npz"
    assert _main(["render", *args, "-o", tmp_path / f"{name}.png", "--size", "48x48",
                  "--arrays", arrays]) == 0
    capsys.readouterr()
    return np.load(arrays)["instance"] >= 0


@pytest.mark.slow
@pytest.mark.gpu
def test_edge_values_render_a_picture(sphere_tess, tmp_path, capsys) -> None:
    # a scene 1e-7 across is framed like a unit one (the near plane follows the scene's size)
    unit = _coverage([_scene(tmp_path, sphere_tess, scale=1.0)], tmp_path, capsys, "unit")
    tiny = _coverage([_scene(tmp_path, sphere_tess, scale=1e-7)], tmp_path, capsys, "tiny")
    assert unit.sum() > 100
    assert np.count_nonzero(unit != tiny) <= 0.02 * unit.sum()
    for args in (["--fov", "1"], ["--fill", "0.1"], ["--fill", "2"],
                 ["--eye", "0,5,0"],  # straight down: parallel to up, another up is taken
                 ["--eye", "0,-5,0", "--target", "0,0,0"],
                 # at 179 degrees only what lies beside the camera is more than a dot: four
                 # spheres around it, looking down between them
                 ["--fov", "179", "--instances", "4", "--eye", "0,0,0", "--target", "0,-1,0"]):
        assert _coverage([sphere_tess, *args], tmp_path, capsys, "edge").any(), args


# ------------------------------------------------------------------------------ the core API

def test_camera_and_options_refuse_bad_values() -> None:
    from renderer.camera import Camera, look_at
    from renderer.options import RenderOptions

    for kw in ({"fov_y": 0}, {"fov_y": 180}, {"fov_y": math.nan}, {"near": 0},
               {"near": -1.0}, {"eye": np.array([0.0, 0, math.inf])},
               {"eye": np.zeros(3), "target": np.zeros(3)}, {"up": np.zeros(3)}):
        with pytest.raises(ValueError):
            Camera(**kw)
    for kw in ({"fill": 0}, {"fill": math.nan}, {"fill": 2.01}, {"fov_y": 180}):
        with pytest.raises(ValueError):
            Camera.framing(np.zeros(3), 1.0, **kw)
    with pytest.raises(ValueError):
        Camera.framing(np.zeros(3), 0.0)
    v = look_at(np.array([0.0, 5, 0]), np.zeros(3))  # looking down the up vector
    assert np.isfinite(v).all()
    assert np.allclose(v[:3, :3] @ v[:3, :3].T, np.eye(3), atol=1e-6)
    assert Camera.framing(np.zeros(3), 1e-7).near < 1e-8
    for kw in ({"tau": math.nan}, {"tau": math.inf}, {"tau": 0}, {"upload_mb": 0},
               {"pool_mb": -1.0}, {"queue_capacity": 0}, {"pool_pages": 0}):
        with pytest.raises(ValueError, match="RenderOptions"):
            RenderOptions(**kw)


def test_a_baseline_that_cannot_run_is_a_line_in_the_table(monkeypatch) -> None:
    from renderer.bench import suite

    def refused(*args):
        raise RuntimeError("Request device failed (3): Validation Error\n\nCaused by:\n  "
                           "Unsupported features were requested: FLOAT32_FILTERABLE\n")

    monkeypatch.setattr(suite, "PygfxBaseline", refused)
    baseline, why = suite._pygfx(None, (8, 8))
    assert baseline is None
    assert why == "cannot run on this adapter: float32-filterable missing"


@pytest.mark.slow
@pytest.mark.gpu
def test_no_xdg_runtime_dir_no_loader_error(tmp_path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("XDG_RUNTIME_DIR",
                                                             "NODEVICE_SELECT")}
    done = subprocess.run([sys.executable, "-c", "from renderer.device import create_context; "
                           "print(create_context().adapter_name)"],
                          capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 0, done.stderr
    assert "XDG_RUNTIME_DIR" not in done.stderr
