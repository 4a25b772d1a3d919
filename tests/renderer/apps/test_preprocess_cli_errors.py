"""`preprocess` where it cannot do its job: an output that cannot be written (checked before the
build; a full disk during the write), a failed --verify, SIGINT / SIGTERM at any moment, a
killed writer's temporary file, the first run's numba compile; and the two meshes that broke the
DAG's honesty (an edge fan) and the BVH (a sphere of radius 1e-30).

The rule checked everywhere: one line on stderr (`preprocess: ...`), never a traceback, exit
status 2 (130 on SIGINT, 143 on SIGTERM), and nothing left in the output folder: neither the
.tess nor a temporary `.NAME.tess.PID.HEX.tmp`. The first run on a machine also prints the
one-line compile note (`COMPILE_NOTE`) before anything else; `_lines` sets it aside.

Kills run the command in a subprocess on a 200,000-triangle sphere (about 1.3 s to build), its
fsync made to take a second (`signal_child` in conftest.py), so that "during the write" is a
window a test can hit, and so that no signal arrives after the build has finished.
"""

from __future__ import annotations

import errno
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

import preprocess.build
import preprocess.verify
from assets.shapes import geodesic_sphere
from preprocess.build import KERNEL_SECONDS, build_asset, compile_seconds
from preprocess.load import mesh_from_arrays
from preprocess.mesh import Mesh
from preprocess.tess import read_tess, write_tess
from preprocess.verify import VerifyError, check_all
from renderer.apps import preprocess_cli, signals
from renderer.apps.preprocess_cli import COMPILE_NOTE

ROOT = Path(__file__).resolve().parents[3]
SMALL = ["--builtin", "sphere", "--triangles", "2000", "-q"]
MEDIUM = ["--builtin", "sphere", "--triangles", "200000", "-q"]
INTERRUPTED = "preprocess: interrupted; nothing written"
TERMINATED = "preprocess: terminated; nothing written"

def _lines(err: str) -> list[str]:
    """stderr's lines, the first run's compile note aside."""
    return [line for line in err.splitlines() if not line.startswith(COMPILE_NOTE)]


def _one_error(err: str) -> str:
    lines = _lines(err)
    assert "Traceback" not in err and len(lines) == 1, err
    assert lines[0].startswith("preprocess: error: "), err
    return lines[0]


def _left(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


# ------------------------------------------------------------------------- the output (finding 1)


def _never_build(*args, **kwargs):
    raise AssertionError("the build started: the output should have been refused before")


def _read_only_folder(tmp_path: Path) -> Path:
    if getattr(os, "geteuid", lambda: -1)() == 0:
        pytest.skip("root writes into a read-only folder")
    folder = tmp_path / "ro"
    folder.mkdir()
    folder.chmod(0o555)
    return folder


@pytest.mark.parametrize("case, expected", [
    ("a folder", "cannot write: Is a directory"),
    ("a missing folder", "output folder does not exist"),
    ("a file as folder", "not a folder"),
    ("read-only folder", "cannot write: Permission denied"),
    ("/proc", "cannot write: "),
    ("/sys", "cannot write: "),
])
def test_unwritable_output_is_refused_before_the_build(case, expected, tmp_path, capsys,
                                                       monkeypatch):
    monkeypatch.setattr(preprocess.build, "build_file", _never_build)
    if case == "a folder":
        out = tmp_path / "x.tess"
        out.mkdir()
    elif case == "a missing folder":
        out = tmp_path / "missing" / "x.tess"
    elif case == "a file as folder":
        (tmp_path / "file").write_text("")
        out = tmp_path / "file" / "x.tess"
    elif case == "read-only folder":
        out = _read_only_folder(tmp_path) / "x.tess"
    else:
        if not Path(case).is_dir() or sys.platform != "linux":
            pytest.skip(f"no {case} here")
        out = Path(case) / "x.tess"
    before = _left(tmp_path)
    assert preprocess_cli.main([*SMALL, "-o", str(out)]) == 2
    line = _one_error(capsys.readouterr().err)
    assert expected in line
    if "cannot write" in expected:
        assert line.startswith(f"preprocess: error: {out}: cannot write: ")
    assert _left(tmp_path) == before


class _FullDisk:
    """A binary file whose writes fail with ENOSPC once 64 KiB are in."""

    def __init__(self, f) -> None:
        self.f = f
        self.written = 0

    def write(self, data) -> int:
        self.written += memoryview(data).nbytes
        if self.written > 65536:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return self.f.write(data)

    def __getattr__(self, name):
        return getattr(self.f, name)

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.f.close()


def test_full_disk_during_the_write(tmp_path, capsys, monkeypatch):
    fdopen = os.fdopen
    monkeypatch.setattr(os, "fdopen", lambda *a, **k: _FullDisk(fdopen(*a, **k)))
    out = tmp_path / "x.tess"
    assert preprocess_cli.main([*SMALL, "-o", str(out)]) == 2
    line = _one_error(capsys.readouterr().err)
    assert line == f"preprocess: error: {out}: cannot write: No space left on device"
    assert _left(tmp_path) == []


@pytest.mark.parametrize("verify", [False, True])
def test_a_mesh_that_needs_more_memory_is_refused_once_loaded(verify, tmp_path, capsys,
                                                               monkeypatch):
    """`--memory`: a mesh the measured bytes a triangle say will not fit is one line and exit 2
    before anything is built (the system's killer gave no word, minutes in); one that fits
    builds; the limit defaults to what the machine has available."""
    monkeypatch.setattr(preprocess.build, "MEMORY_CHECK_TRIANGLES", 100)
    monkeypatch.setattr(preprocess.build, "build_asset", _never_build)
    out = tmp_path / "x.tess"
    need = preprocess.build.bytes_per_triangle(1, verify)  # a small mesh: one chunk
    args = [*SMALL, "-o", str(out), "-q", "--memory", "0.000001"] + (["--verify"] * verify)
    assert preprocess_cli.main(args) == 2
    line = _one_error(capsys.readouterr().err)
    assert re.search(rf"triangles need about .* GB to build{' and verify' * verify} \({need} "
                     r"bytes a triangle\), and 0\.0 GB are the --memory limit", line), line
    assert _left(tmp_path) == []
    monkeypatch.setattr(preprocess.build, "available_memory", lambda: 1000)
    assert preprocess_cli.main([*SMALL, "-o", str(out), "-q"]) == 2
    assert "GB are available" in _one_error(capsys.readouterr().err)


def test_a_mesh_within_the_memory_limit_builds(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(preprocess.build, "MEMORY_CHECK_TRIANGLES", 100)
    out = tmp_path / "x.tess"
    assert preprocess_cli.main([*SMALL, "-o", str(out), "-q", "--memory", "64"]) == 0
    assert out.exists()


@pytest.mark.parametrize("args", [["--triangles", "many"], ["--bogus"], ["-o"],
                                  # a negative size was a TypeError traceback (the sphere's
                                  # square root of it), 0 built a sphere of 20 triangles
                                  ["--triangles", "-5"], ["--triangles", "0"]])
def test_bad_arguments_are_one_line(args, tmp_path, capsys):
    with pytest.raises(SystemExit) as e:
        preprocess_cli.main([*SMALL, *args])
    assert e.value.code == 2
    line = _one_error(capsys.readouterr().err)
    assert line.endswith("(see preprocess --help)")


@pytest.mark.parametrize("args, message", [
    (["--builtin", "forest", "-o", "{tmp}/forest.tess"], "the forest is a scene file, NAME.json"),
    (["--builtin", "forest", "-o", "{tmp}/missing/f.json"], "output folder does not exist"),
    (["--builtin", "rock", "--instances", "5", "-o", "{tmp}/r.tess"],
     "--instances applies to --builtin forest"),
])
def test_forest_options_refused_in_one_line(args, message, tmp_path, capsys, monkeypatch):
    import assets.forest

    monkeypatch.setattr(assets.forest, "write_forest", _never_build)
    monkeypatch.setattr(preprocess.build, "build_file", _never_build)
    args = [a.replace("{tmp}", str(tmp_path)) for a in args]
    assert preprocess_cli.main([*args, "-q"]) == 2
    assert _one_error(capsys.readouterr().err).endswith(message)
    assert _left(tmp_path) == []


def test_forest_writes_its_scene_with_the_count_and_seed_asked(tmp_path, capsys, monkeypatch):
    # the writer itself is tests/assets/test_forest.py's: here, what the command hands it
    import assets.forest

    calls = []

    def write(path, count, *, seed):
        calls.append((path, count, seed))
        return {"rock": np.zeros((2, 3, 4)), "tree": np.zeros((3, 3, 4))}

    monkeypatch.setattr(assets.forest, "write_forest", write)
    out = tmp_path / "forest-scene.json"
    assert preprocess_cli.main(["--builtin", "forest", "-o", str(out), "--instances", "5",
                                "--seed", "9"]) == 0
    assert calls == [(out, 5, 9)]
    assert "2 rocks, 3 trees on the terrain" in capsys.readouterr().out


# ------------------------------------------------------------------------------ verify (finding 2)


def test_failed_verify_is_one_line_and_writes_nothing(tmp_path, capsys, monkeypatch):
    def failing(dag, bvh):
        raise VerifyError("tau 0.5, camera None: the cut's area is 1.5,\n0.0150 times the "
                          "original's 100")

    monkeypatch.setattr(preprocess.verify, "check_all", failing)
    out = tmp_path / "x.tess"
    assert preprocess_cli.main([*SMALL, "--verify", "-o", str(out)]) == 2
    line = _one_error(capsys.readouterr().err)
    assert line == ("preprocess: error: verify failed: tau 0.5, camera None: the cut's area is "
                    "1.5, 0.0150 times the original's 100")
    assert _left(tmp_path) == []


# ------------------------------------------------------------------------ signals (findings 3, 4)


def _start(signal_child, out: Path, *, fsync_delay: float = 1.0, module: bool = False,
           env: dict | None = None) -> subprocess.Popen:
    """`preprocess` of the MEDIUM sphere into `out` (`signal_child.start`)."""
    return signal_child.start("renderer.apps.preprocess_cli", [*MEDIUM, "-o", str(out)],
                              fsync_delay=fsync_delay, as_module=module, env=env)


@pytest.fixture(scope="module")
def startup() -> float:
    """How long Python takes to reach `main` here (about 40 ms; more on a busy machine): a
    signal before that meets Python's own handler (a KeyboardInterrupt traceback), which no
    code of ours can change. A signal "at 0.05 s" is sent no earlier than 1.5 times this."""
    t = time.perf_counter()
    subprocess.run([sys.executable, "-c", "import renderer.apps.preprocess_cli"], cwd=ROOT,
                   check=True)
    return time.perf_counter() - t


@pytest.mark.parametrize("sig, when", [
    ("SIGINT", 0.05),  # imports: numpy, numba, the builder
    ("SIGINT", 0.3),  # imports or numba loading its kernels (where llvmlite swallowed it)
    ("SIGINT", 1.0),  # building
    ("SIGINT", "write"),
    ("SIGTERM", "write"),
    ("SIGINT", "-m 0.3"),  # python -m: CPython's own exit status after an exec'd interrupt
])
@pytest.mark.slow
def test_a_signal_at_any_moment_ends_in_one_line_and_nothing_written(sig, when, tmp_path,
                                                                     startup, signal_child):
    out = tmp_path / "x.tess"
    proc = _start(signal_child, out, module=when == "-m 0.3")
    if when == "write":
        signal_child.wait_for_the_write(proc, tmp_path)
    else:
        time.sleep(max(0.3 if when == "-m 0.3" else when, 1.5 * startup))
    assert proc.poll() is None, "finished before the signal"
    proc.send_signal(getattr(signal, sig))
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == (130 if sig == "SIGINT" else 143), err
    assert _lines(err) == [INTERRUPTED if sig == "SIGINT" else TERMINATED], err
    assert _left(tmp_path) == []


def _signal_in(*files: str) -> None:
    """SIGINT sent from code compiled as if it were in files[-1], called through frames of the
    files before it (files[0] called from here): Python runs the handler in that innermost
    frame, as for a signal arriving while the main thread is there."""
    scope = {"signal": signal}
    call = "signal.raise_signal(signal.SIGINT)"
    for i, name in enumerate(reversed(files)):
        exec(compile(f"def f{i}():\n    {call}\n", name, "exec"), scope)
        call = f"f{i}()"
    eval(call, scope)


def test_a_signal_waits_while_the_main_thread_is_where_locks_are_taken(monkeypatch):
    """Code that takes locks in Python may have taken one and not yet entered the `with` that
    releases it (numba's compiler lock leaked so, a worker waited on it forever, the stopped
    build never exited): while any frame of the main thread is in such a module (numba,
    threading, the import machinery, ..., `signals._HELD`), the signal is only recorded
    and raised at the next check (`StopSignals.check`, every progress report); elsewhere (our
    code, numpy's) it raises where it lands, at once."""
    import contextlib

    import numba.core.compiler_lock

    ours = preprocess.build.__file__
    monkeypatch.setattr(signal, "getsignal", lambda s: signal.SIG_DFL)  # a pytest run in the
    # background ignores SIGINT, which StopSignals would honour; here it is taken as from a tty
    for where in ([ours, ours], [ours, np.__file__]):
        with signals.StopSignals("preprocess"):
            with pytest.raises(KeyboardInterrupt):
                _signal_in(*where)
    held = [threading.__file__, numba.core.compiler_lock.__file__, contextlib.__file__,
            "<frozen importlib._bootstrap>"]
    for where in ([held[0]], [ours, held[1]], [ours, held[2], ours], [ours, held[3], ours]):
        with signals.StopSignals("preprocess") as stop:
            try:
                _signal_in(*where)
            except KeyboardInterrupt:  # (not let through: it would stop the whole test run)
                pytest.fail(f"raised at once in {where}")
            assert stop.signum == signal.SIGINT, where
            with pytest.raises(KeyboardInterrupt):
                stop.check()


@pytest.mark.slow
def test_a_killed_writers_temporary_file_goes_with_the_next_write(tmp_path, capsys,
                                                                  signal_child):
    out = tmp_path / "x.tess"
    proc = _start(signal_child, out, fsync_delay=30.0)
    signal_child.wait_for_the_write(proc, tmp_path)
    proc.kill()  # SIGKILL: nothing can clean up
    proc.communicate()
    stale = _left(tmp_path)
    assert len(stale) == 1 and stale[0].startswith(f".x.tess.{proc.pid}.")
    assert preprocess_cli.main([*SMALL, "-o", str(out)]) == 0
    capsys.readouterr()
    assert _left(tmp_path) == ["x.tess"]


def test_only_dead_writers_temporary_files_are_removed(tmp_path):
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()  # reaped: no process has its PID now
    keep = [
        f".x.tess.{os.getppid()}.0123abcd.tmp",  # a running writer
        f".y.tess.{dead.pid}.0123abcd.tmp",  # another file's
        f".x.tess.{dead.pid}.0123abcd.tmp.old",  # not our pattern exactly
        f".x.tess.{dead.pid}.xyz.tmp",
        "x.tess.tmp",
    ]
    gone = f".x.tess.{dead.pid}.89abcdef.tmp"
    for name in [*keep, gone]:
        (tmp_path / name).write_bytes(b"partial")
    write_tess(tmp_path / "x.tess", meta={}, sections={}, pages=np.zeros((0, 16), np.uint8),
               page_flags=np.zeros(0, np.uint32))
    assert _left(tmp_path) == sorted([*keep, "x.tess"])


@pytest.mark.parametrize("program", [
    ["-m", "renderer.apps.preprocess_cli"],
    ["-m", "renderer.apps.cli", "preprocess"],
])
@pytest.mark.slow
def test_a_signal_once_the_file_is_there_changes_nothing(program, tmp_path, signal_child):
    """SIGINT as soon as the finished file appears: the work is done and the command ends with
    status 0 and nothing on stderr, the file whole. Before `end_quietly`, 1 in 4 tries here met
    the interpreter's exit: a KeyboardInterrupt traceback, or death by SIGINT (-2), the file in
    place. Eight tries: the window is tens of milliseconds, hit most times."""
    for i in range(8):
        out = tmp_path / f"x{i}.tess"
        proc = subprocess.Popen([sys.executable, *program, *SMALL, "-o", str(out)], cwd=ROOT,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                preexec_fn=signal_child.default_sigint)
        while not out.exists() and proc.poll() is None:
            time.sleep(0.0003)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
        assert (proc.returncode, _lines(err)) == (0, []), err
        read_tess(out, verify_pages=True)  # every checksum: whole
    assert sorted(p.name for p in tmp_path.iterdir()) == [f"x{i}.tess" for i in range(8)]


def test_signal_handlers_are_restored(tmp_path, capsys):
    before = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
    assert preprocess_cli.main([*SMALL, "-o", str(tmp_path / "x.tess")]) == 0
    assert preprocess_cli.main([*SMALL, "-o", str(tmp_path)]) == 2  # not .tess
    capsys.readouterr()
    assert (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)) == before


# ------------------------------------------------------------------ the first run (finding 5)


@pytest.mark.slow
def test_first_run_says_it_compiles_then_stops_cleanly(tmp_path, signal_child):
    folder = tmp_path / "out"
    folder.mkdir()
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "numba"))  # an empty cache
    proc = _start(signal_child, folder / "x.tess", env=env)
    first = proc.stderr.readline().rstrip("\n")  # before any kernel is compiled
    about = re.fullmatch(rf"{COMPILE_NOTE} \(about (\d+) s on 2 cores\); later runs start at once",
                         first)
    assert about and 30 <= int(about.group(1)) <= 60, first
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130 and err.splitlines() == [INTERRUPTED], err
    assert _left(folder) == []


def test_a_warm_cache_is_seen_as_warm():
    assert build_asset(geodesic_sphere(4)) is not None  # compiled or loaded by now
    assert compile_seconds(KERNEL_SECONDS) == 0.0


def test_the_note_counts_only_the_readers_an_input_calls(monkeypatch, capsys):
    # a glTF calls none of the OBJ, PLY and text readers' kernels: with the build's kernels
    # compiled and the readers' not, the note said "about 6 s" on every glTF run
    import argparse

    import preprocess.build

    def cold(modules):  # the build's kernels compiled, the readers' not
        return sum(v for k, v in modules.items() if k not in KERNEL_SECONDS)

    monkeypatch.setattr(preprocess.build, "compile_seconds", cold)
    for mesh, said in [("ball.glb", False), ("ball.gltf", False), ("ball.obj", True)]:
        preprocess_cli._note_compile(argparse.Namespace(builtin=None, mesh=mesh))
        assert (COMPILE_NOTE in capsys.readouterr().err) == said, mesh


# --------------------------------------------------------------------------- meshes (findings 6, 7)


def _write_obj(path: Path, positions: np.ndarray, triangles: np.ndarray) -> Path:
    """An OBJ of positions (9 significant digits: float32 read back exactly) and triangles."""
    text = "".join(f"v {x:.9g} {y:.9g} {z:.9g}\n" for x, y, z in positions)
    text += "".join(f"f {a + 1} {b + 1} {c + 1}\n" for a, b, c in triangles)
    path.write_text(text)
    return path


def _edge_fan(blades: int) -> Mesh:
    """Blades fanned around one edge, a paddle wheel seen along its axle (z):

                 tip 1
                   |
        tip 2 ---- 0/1 ---- tip 0      every blade: (0, 1, tip), 0 = (0,0,0), 1 = (0,0,1),
                   |                   tip k = (cos a, sin a, 0.5), a = 2 pi k / blades
                 tip 3
    """
    a = 2 * np.pi * np.arange(blades) / blades
    positions = np.zeros((blades + 2, 3))
    positions[1, 2] = 1.0
    positions[2:] = np.stack([np.cos(a), np.sin(a), np.full(blades, 0.5)], axis=1)
    faces = np.stack([np.zeros(blades, int), np.ones(blades, int), np.arange(2, blades + 2)], 1)
    return mesh_from_arrays(positions, faces, name="edge-fan")


@pytest.mark.slow
@pytest.mark.parametrize(("blades", "levels"), [(200, 1), (1000, 5)])
def test_edge_fan_errors_count_the_dropped_blades(blades, levels):
    """Blades are dropped level after level, down to 100; the error of every level holds the
    tips that went (each 1 from the axle; as far from the nearest kept blade as the angle
    between them allows): measured both ways, no level's stored error is below the distance.
    Below max(128, 1%) triangles the builder stops where a level would lose surface
    (`preprocess.dag.LOSS_RATIO`: every level of a fan does). The 200 blades' cut of 100 loses
    half the area at an error of 0.32, more than verify's area bound allows (0.05 + 2 x error /
    radius 1.5): its check falls back on the distance of the original to the cut, within the
    error (a sheet beside a kept one)."""
    from preprocess.dag import coarsest_target
    from preprocess.verify import error_tightness

    dag, bvh, _ = build_asset(_edge_fan(blades))
    level = np.asarray(dag.cluster_level)
    sizes = np.diff(dag.cluster_tri_offset)
    assert level.max() == levels
    assert sizes[level == level.max()].sum() <= coarsest_target(blades)
    for row in error_tightness(dag, samples_per_cluster=1024, refine=4):
        assert row["ratio_two_sided"] >= 1.0, row
    check_all(dag, bvh)


def test_edge_fan_verifies_through_the_command(tmp_path, capsys):
    mesh = _edge_fan(200)
    src = _write_obj(tmp_path / "fan.obj", mesh.positions[mesh.wedge_position], mesh.triangles)
    assert preprocess_cli.main([str(src), "--verify", "-q"]) == 0, capsys.readouterr().err
    assert _left(tmp_path) == ["fan.obj", "fan.tess"]


def _scaled(mesh: Mesh, s: float) -> Mesh:
    return Mesh(positions=(mesh.positions.astype(np.float64) * s).astype(np.float32),
                triangles=mesh.triangles, wedge_position=mesh.wedge_position,
                wedge_normal=mesh.wedge_normal, name=f"{mesh.name}-x{s:g}")


@pytest.mark.slow
@pytest.mark.parametrize("scale", [1e-30, 1e-36])
def test_a_tiny_sphere_keeps_its_bvh(scale):
    dag, bvh, _ = build_asset(_scaled(geodesic_sphere(10), scale))
    check_all(dag, bvh)  # the BVH's spheres contain their clusters' bounds
    radius = np.asarray(dag.cluster_bounds)[:, 3]
    assert radius.max() < 2 * scale  # no absolute slack (1e-30 doubled every bound)


def test_a_tiny_sphere_through_the_command(tmp_path, capsys):
    mesh = geodesic_sphere(10)
    src = _write_obj(tmp_path / "tiny.obj", mesh.positions.astype(np.float64) * 1e-30,
                     mesh.position_triangles)
    status = preprocess_cli.main([str(src), "--verify", "-q"])
    err = capsys.readouterr().err
    if status == 0:  # built and verified
        assert _lines(err) == [] and _left(tmp_path) == ["tiny.obj", "tiny.tess"]
    else:  # or refused by the loader as too small to represent: one line, nothing written
        assert status == 2 and "verify failed" not in _one_error(err)
        assert _left(tmp_path) == ["tiny.obj"]


@pytest.mark.parametrize("scale, built", [(1e17, True), (1e19, False), (1e30, False)])
def test_a_huge_mesh_is_refused_before_it_is_built(scale, built, tmp_path, capsys):
    """The renderer draws nothing reaching past MAX_WORLD (1e18) from the origin (float32
    squares distances); `preprocess` built such a mesh and only `tessera render` refused it."""
    mesh = geodesic_sphere(4)
    src = _write_obj(tmp_path / "huge.obj", mesh.positions.astype(np.float64) * scale,
                     mesh.position_triangles)
    status = preprocess_cli.main([str(src), "-q"])
    err = capsys.readouterr().err
    if built:
        assert status == 0 and _lines(err) == [], err
        assert _left(tmp_path) == ["huge.obj", "huge.tess"]
    else:
        assert status == 2
        assert re.fullmatch(r"preprocess: error: huge\.obj: the mesh reaches [0-9.e+]+ from the "
                            r"origin, beyond the 1e\+18 the renderer draws \(float32 squares "
                            r"distances\): scale it down", _one_error(err)), err
        assert _left(tmp_path) == ["huge.obj"]

