"""SIGINT and SIGTERM at any moment of every command (`renderer.apps.signals`; issue 33): one
line, `PROG: interrupted; nothing written` and 130, or `PROG: terminated; nothing written` and
143, and only whole files left. A scene's `.tess` files wait complete under temporary names until
all are, and its scene file is written last (`preprocess.scene_import.build_scene`); `tessera
render` removes the cache it built for a run that fails or is stopped, and builds again a scene
cache that is incomplete (`renderer.apps.loader`).

The signal is sent at a moment the files show (`signal_child` in conftest.py): once a scene's
first `.tess` is complete (the second's file has begun), during a cache's write; or raised
in-process where the command is (`tessera info`, a frame of `tessera render`). The scene is
`gltf_balls` (tests/conftest.py): four meshes of 20,480 triangles, a few tenths of a second each
to build, so that a signal sent as the second begins meets the build, never its end.
"""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import pytest
import trimesh

from preprocess.tess.reader import read_tess
from renderer.apps import cli as tessera_cli
from renderer.apps.loader import load_now

ENDING = {"SIGINT": (130, "interrupted"), "SIGTERM": (143, "terminated")}
BALLS = [f"balls.ball{k}.tess" for k in range(4)]  # the scene cache's .tess files
SCENE_CACHE = sorted(["balls.glb", "balls.json", *BALLS])
_getsignal = signal.getsignal  # the real one, where a test makes StopSignals install its own


def _second_mesh_begun(p: Path) -> bool:
    """The scene's first `.tess` is complete: the second mesh's file has begun."""
    return "ball1" in p.name


def _stopped(proc, sig: str, prog: str, signal_child) -> None:
    """Signal the child, then: its status is 128 + the signal and its stderr the one line."""
    proc.send_signal(getattr(signal, sig))
    _, err = proc.communicate(timeout=60)
    status, word = ENDING[sig]
    assert proc.returncode == status, err
    assert signal_child.lines(err) == [f"{prog}: {word}; nothing written"], err


# ------------------------------------------------------------------------------- in a child


@pytest.mark.slow
@pytest.mark.parametrize("sig", ["SIGINT", "SIGTERM"])
def test_a_signal_once_a_scene_s_first_tess_is_done_stops_preprocess(sig, tmp_path, gltf_balls,
                                                                     signal_child):
    """Before: the first `.tess` complete, every signal after it was held back as if the whole
    output were (the single file's rule): the build went on and exited 0."""
    src = gltf_balls(tmp_path / "balls.glb")
    proc = signal_child.start("renderer.apps.preprocess_cli", [str(src), "-q"])
    signal_child.wait_for(proc, tmp_path, _second_mesh_begun, "the second mesh's file")
    _stopped(proc, sig, "preprocess", signal_child)
    assert signal_child.left(tmp_path) == ["balls.glb"]


@pytest.mark.slow
@pytest.mark.parametrize("source", ["mesh.obj", "balls.glb"])
def test_sigterm_while_render_builds_its_cache_leaves_nothing(source, tmp_path, gltf_balls,
                                                              signal_child):
    """SIGTERM during the write of a mesh's cache (its fsync made slow) or between a scene's
    meshes. Before: death by the signal (-15) without a word, and a temporary file or part of a
    scene's cache left."""
    src = tmp_path / source
    if source == "mesh.obj":
        trimesh.creation.icosphere(subdivisions=3).export(src)
    else:
        gltf_balls(src)
    proc = signal_child.start("renderer.apps.cli",
                              ["render", str(src), "-o", str(tmp_path / "x.png")],
                              fsync_delay=30.0 if source == "mesh.obj" else 0.0)
    if source == "mesh.obj":
        signal_child.wait_for_the_write(proc, tmp_path)
    else:
        signal_child.wait_for(proc, tmp_path, _second_mesh_begun, "the second mesh's file")
    _stopped(proc, "SIGTERM", "tessera", signal_child)
    assert signal_child.left(tmp_path) == [source]


@pytest.mark.slow
def test_a_scene_killed_mid_build_leaves_temporary_files_only_then_is_built_again(
        tmp_path, gltf_balls, signal_child):
    """SIGKILL cannot be caught: what the killed build leaves is its temporary files, never a
    `.tess` without its scene file (before: the first mesh's), and the next run builds the
    cache and removes them."""
    src = gltf_balls(tmp_path / "balls.glb")
    proc = signal_child.start("renderer.apps.cli",
                              ["render", str(src), "-o", str(tmp_path / "x.png")])
    signal_child.wait_for(proc, tmp_path, _second_mesh_begun, "the second mesh's file")
    proc.kill()
    proc.communicate()
    left = [name for name in signal_child.left(tmp_path) if name != "balls.glb"]
    assert left and all(name.startswith(".balls.ball") and f".tess.{proc.pid}." in name
                        and name.endswith(".tmp") for name in left), left
    job = load_now(str(src))
    assert job.error is None and sorted(job.tess) == [f"ball{k}" for k in range(4)]
    assert signal_child.left(tmp_path) == SCENE_CACHE


@pytest.mark.slow
@pytest.mark.gpu
def test_sigterm_while_render_draws_leaves_no_png_or_a_whole_one(sphere_tess, tmp_path,
                                                                 signal_child):
    """SIGTERM once the frame is submitted (its images not yet read back, or already: the
    frame of a small sphere is quick): one line and 143 and no PNG, or, where it came once the
    PNG was begun, the PNG whole and 0. Before: death by the signal (-15)."""
    out = tmp_path / "out"
    out.mkdir()
    png = out / "x.png"
    proc = signal_child.start("renderer.apps.cli",
                              ["render", sphere_tess, "-o", str(png), "--size", "256x256"],
                              mark=("renderer.frame:Frame.submit", tmp_path / "submitted"))
    signal_child.wait_for(proc, tmp_path, lambda p: p.name == "submitted", "the frame")
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    if proc.returncode == 0:
        assert err == "" and png.read_bytes()[-12:-4] == b"\0\0\0\0IEND", err
    else:
        assert proc.returncode == 143, err
        assert signal_child.lines(err) == ["tessera: terminated; nothing written"], err
        assert signal_child.left(out) == []


# ------------------------------------------------------------------------------- in-process


@pytest.mark.parametrize("stop_at", [2, 4])
def test_a_stopped_scene_build_leaves_an_earlier_build_whole(stop_at, tmp_path, gltf_balls,
                                                             signal_child):
    """Stopped before its third mesh, or once every `.tess` is complete (the last moment to
    cancel): an earlier build of the scene stays as it was, its files untouched. Before: the
    meshes built so far had replaced the earlier ones and were removed, the earlier scene file
    naming files gone."""
    from preprocess.scene_import import build_scene, read_scene

    src = gltf_balls(tmp_path / "balls.glb", subdivisions=1)
    scene = read_scene(src)
    build_scene(scene, tmp_path / "balls.json")

    def files() -> dict[str, tuple[int, bytes]]:
        return {name: ((tmp_path / name).stat().st_mtime_ns, (tmp_path / name).read_bytes())
                for name in signal_child.left(tmp_path)}

    before = files()
    assert sorted(before) == SCENE_CACHE

    def stop(stage: str, done: int, total: int) -> None:
        if (stage, done) == ("meshes", stop_at):
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        build_scene(scene, tmp_path / "balls.json", progress=stop)
    assert files() == before


def test_an_incomplete_scene_cache_is_built_again(tmp_path, gltf_balls):
    """A scene cache whose scene file is older than one of its `.tess` files was not written
    last: a build killed while it renamed its files into place, the scene file an earlier
    build's. Before: it was used."""
    src = gltf_balls(tmp_path / "balls.glb", subdivisions=1)
    assert load_now(str(src)).error is None
    assert load_now(str(src)).built == []  # complete: used as it is
    written = (tmp_path / "balls.json").stat().st_mtime
    os.utime(tmp_path / BALLS[2], (written + 1, written + 1))
    again = load_now(str(src))
    assert again.error is None and {Path(p).name for p in again.built} >= set(BALLS)
    assert load_now(str(src)).built == []  # complete again


def test_a_z_up_scene_cache_is_used_again_and_kept_apart(tmp_path, gltf_balls):
    """A scene's meshes are stored Y-up and the turn is in its instances: the Z-up build was
    told by its `.tess` files' meta, so it was built again on every run (and a Y-up run after it
    could use its turned instances)."""
    src = gltf_balls(tmp_path / "balls.glb", subdivisions=1)
    z = load_now(str(src), "z")
    assert z.error is None and z.built
    assert load_now(str(src), "z").built == []  # used as it is
    y = load_now(str(src))
    assert y.error is None and y.built  # its own cache, not the Z-up one
    turned, upright = (json.loads((tmp_path / name).read_text())["instances"]
                       for name in ("balls.z-up.json", "balls.json"))
    assert [i["matrix"] for i in turned] != [i["matrix"] for i in upright]
    assert load_now(str(src), "z").built == [] and load_now(str(src), "y").built == []


@pytest.mark.parametrize("case", [
    "--instances",  # refused by `render` once the cache is built: one asset only
    "far",  # refused by the scene file's checks: a node 1e19 from the origin
    pytest.param("near", marks=pytest.mark.gpu),  # by the renderer: 1e7 away, float32 too coarse
])
def test_a_render_that_fails_leaves_no_cache(case, tmp_path, gltf_balls, capsys, signal_child):
    """Exit status 2 after the scene's cache was built: the cache goes with it (before: left,
    and used by the next run where it opened)."""
    offset = {"--instances": 0.0, "far": 1e19, "near": 1e7}[case]
    src = gltf_balls(tmp_path / "balls.glb", subdivisions=1, offset=offset)
    more = ["--instances", "4"] if case == "--instances" else []
    assert tessera_cli.main(["render", str(src), "-o", str(tmp_path / "x.png"),
                             "--size", "32x32", *more]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and err[0].startswith("tessera: error: "), err
    assert signal_child.left(tmp_path) == ["balls.glb"]


def test_a_failed_render_of_a_textured_scene_leaves_no_textures_file(tmp_path, capsys,
                                                                       signal_child):
    # the scene's textures file (`<scene>.@textures.tess`) goes with the cache it belongs to
    import numpy as np
    from PIL import Image

    img = Image.fromarray(np.full((16, 16, 3), 120, np.uint8))
    scene = trimesh.Scene()
    for k in range(2):
        ball = trimesh.creation.icosphere(subdivisions=1)
        ball.apply_translation((2.0 * k, 0, 0))
        ball.visual = trimesh.visual.TextureVisuals(
            uv=ball.vertices[:, :2] * 0.5 + 0.5,
            material=trimesh.visual.material.PBRMaterial(baseColorTexture=img))
        scene.add_geometry(ball, geom_name=f"ball{k}")
    src = tmp_path / "lit.glb"
    scene.export(src)
    assert tessera_cli.main(["render", str(src), "-o", str(tmp_path / "x.png"),
                             "--size", "32x32", "--instances", "4"]) == 2  # refused: a scene
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and err[0].startswith("tessera: error: "), err
    assert signal_child.left(tmp_path) == ["lit.glb"]


def _signal_here() -> None:
    """SIGTERM to this process, as if it arrived here; only while a command's handler is in
    place (Python's default would end the test run)."""
    assert _getsignal(signal.SIGTERM) not in (signal.SIG_DFL, signal.SIG_IGN, None), \
        "no handler of the command's for SIGTERM"
    signal.raise_signal(signal.SIGTERM)


@pytest.fixture
def handlers_installed(monkeypatch) -> None:
    """StopSignals installs its handlers whatever this run's dispositions (a run in the
    background or under nohup ignores signals, which a command honours)."""
    monkeypatch.setattr(signal, "getsignal", lambda s: signal.SIG_DFL)


def test_a_signal_during_info_is_one_line(sphere_tess, capsys, monkeypatch, handlers_installed):
    import preprocess.tess.summary

    summarize = preprocess.tess.summary.summarize

    def signalled(*args, **kwargs):
        _signal_here()
        return summarize(*args, **kwargs)

    monkeypatch.setattr(preprocess.tess.summary, "summarize", signalled)
    assert tessera_cli.main(["info", sphere_tess]) == 143
    out, err = capsys.readouterr()
    assert (out, err.splitlines()) == ("", ["tessera: terminated; nothing written"])


@pytest.mark.gpu
def test_a_signal_mid_frame_is_one_line_and_writes_nothing(sphere_tess, tmp_path, capsys,
                                                           monkeypatch, handlers_installed,
                                                           signal_child):
    """SIGTERM once a frame is submitted, before its images are read back: no PNG."""
    from renderer.frame import Frame

    submit = Frame.submit

    def signalled(self, *args, **kwargs):
        result = submit(self, *args, **kwargs)
        _signal_here()
        return result

    monkeypatch.setattr(Frame, "submit", signalled)
    assert tessera_cli.main(["render", sphere_tess, "-o", str(tmp_path / "x.png"),
                             "--size", "32x32"]) == 143
    assert capsys.readouterr().err.splitlines() == ["tessera: terminated; nothing written"]
    assert signal_child.left(tmp_path) == []


@pytest.mark.parametrize("quiet", [False, True])
def test_destructors_of_what_an_interrupt_left_half_built_say_nothing(quiet) -> None:
    # tessera bench/view stop where a KeyboardInterrupt lands, possibly inside wgpu's GPUBuffer
    # constructor, whose __del__ then raised AttributeError ("Exception ignored ...") after the
    # command's one line; `quiet_destructors` (called before that line) keeps stderr to it
    import subprocess
    import sys

    code = ("from renderer.apps.signals import quiet_destructors\n"
            f"if {quiet}: quiet_destructors()\n"
            "class Half:\n"
            "    def __del__(self):\n"
            "        self.missing\n"
            "Half()\n")
    err = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=Path(__file__).resolve().parents[3]).stderr
    assert ("Exception ignored" in err) != quiet, err


@pytest.mark.slow
@pytest.mark.parametrize("sig", ["SIGINT", "SIGTERM"])
def test_a_signal_mid_batch_leaves_whole_outputs_and_says_so(sig, tmp_path, signal_child):
    """`preprocess FOLDER -O OUT` (issue 36): the builds done stay, whole, in the manifest; the
    workers stop at their builds' next report; one line says so."""
    (tmp_path / "lib").mkdir()
    for i in range(12):
        trimesh.creation.icosphere(1 + i % 2).export(tmp_path / "lib" / f"m{i}.ply")
    out = tmp_path / "out"
    proc = signal_child.start("renderer.apps.preprocess_cli",
                              [str(tmp_path / "lib"), "-O", str(out), "-q", "--jobs", "2"])
    signal_child.wait_for(proc, tmp_path, lambda p: (out / "manifest.jsonl").is_file()
                          and (out / "manifest.jsonl").stat().st_size > 0, "the first line")
    proc.send_signal(getattr(signal, sig))
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == (130 if sig == "SIGINT" else 143), err
    lines = signal_child.lines(err)
    word = "interrupted" if sig == "SIGINT" else "terminated"
    assert len(lines) == 1 and lines[0].startswith(f"preprocess: {word}; ") and \
        "each output whole, the rest not built" in lines[0], err
    done = [json.loads(x) for x in (out / "manifest.jsonl").read_text().splitlines()]
    assert 1 <= len(done) < 12
    files = sorted(p for p in out.iterdir())
    for p in files:  # no temporary file; every output whole (a build that ended as the
        assert not p.name.endswith(".tmp") and not p.name.startswith("."), p  # signal came
        if p.suffix == ".tess":  # may have no line: its file is whole all the same)
            with read_tess(p):
                pass
    assert len(files) >= len(done) + 1

