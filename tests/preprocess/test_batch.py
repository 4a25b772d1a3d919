"""Batch preprocessing (issue 36; preprocess/batch.py, `preprocess INPUTS -O DIR`): many inputs in
one command, a manifest line each, outputs up to date skipped, one failure one line, a worker
that dies retried, and only whole files whatever stops it."""

from __future__ import annotations

import json
import multiprocessing
import os
import signal
import time
from pathlib import Path

import pytest
import trimesh

from preprocess.batch import BatchError, build_many, expand_inputs
from preprocess.config import BuildConfig
from preprocess.tess.reader import read_tess
from renderer.apps.preprocess_cli import main


def library(folder: Path, n: int = 5) -> list[Path]:
    """`n` small meshes in `folder` (a sub-folder for the last), PLY, OBJ and STL."""
    (folder / "sub").mkdir(parents=True, exist_ok=True)
    out = []
    for i in range(n):
        m = trimesh.creation.icosphere(1 + i % 2, 1.0 + 0.1 * i)
        p = folder / ("sub" if i == n - 1 else ".") / f"m{i}.{('ply', 'obj', 'stl')[i % 3]}"
        m.export(p)
        out.append(p)
    return out


def lines_of(manifest: Path) -> list[dict]:
    return [json.loads(x) for x in manifest.read_text().splitlines()]


def whole(folder: Path) -> list[str]:
    """Every file under `folder`: no temporary file, every .tess opens (checksums)."""
    names = []
    for p in sorted(folder.rglob("*")):
        if p.is_file():
            assert not p.name.endswith(".tmp") and not p.name.startswith("."), p
            if p.suffix == ".tess":
                with read_tess(p):
                    pass
            names.append(str(p.relative_to(folder)))
    return names


def test_inputs_expand_from_files_folders_patterns_and_lists(tmp_path):
    lib = library(tmp_path / "lib")
    out = tmp_path / "out"
    tasks = expand_inputs([str(tmp_path / "lib")], out)
    assert sorted(str(t.output.relative_to(out)) for t in tasks) == [
        "m0.tess", "m1.json", "m2.tess", "m3.tess", "sub/m4.json"]  # OBJ: maybe a scene
    assert [t.input for t in expand_inputs([str(tmp_path / "lib" / "*.ply")], out)] == [lib[0],
                                                                                       lib[3]]
    listing = tmp_path / "list.txt"
    listing.write_text("# the library\nlib/m0.ply\n\nlib/gone.ply\nlib/sub/m4.ply\n")
    tasks = expand_inputs([f"@{listing}"], out)
    assert [t.problem is None for t in tasks] == [True, False, False]
    assert "gone.ply: no such file (named in" in tasks[1].problem
    # a file named twice is built once; two files writing one output are refused
    assert len(expand_inputs([str(lib[0]), str(tmp_path / "lib")], out)) == 5
    (tmp_path / "other").mkdir()
    trimesh.creation.box().export(tmp_path / "other" / "m0.ply")
    with pytest.raises(BatchError, match="would both write"):
        expand_inputs([str(lib[0]), str(tmp_path / "other" / "m0.ply")], out)
    for bad, why in (("nowhere", "no such file or folder"), ("lib/*.xyz", "matches no mesh"),
                     ("@nolist.txt", "cannot read the list")):
        with pytest.raises(BatchError, match=why):
            expand_inputs([str(tmp_path / bad) if not bad.startswith("@")
                           else "@" + str(tmp_path / bad[1:])], out)


def test_a_batch_builds_each_input_once_and_a_rerun_skips_what_is_up_to_date(tmp_path, capsys):
    lib = library(tmp_path / "lib")
    (tmp_path / "lib" / "broken.ply").write_text("ply\nformat ascii 1.0\nelement vertex 3\n"
                                                 "end_header\n1 2\n")
    out = tmp_path / "out"
    assert main([str(tmp_path / "lib"), "-O", str(out), "-q", "--jobs", "2"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["preprocess: error: broken.ply: the header promises 3 vertices, the body "
                   "holds 1 vertices",
                   f"preprocess: error: 1 of 6 inputs failed (their lines in "
                   f"{out / 'manifest.jsonl'})"]
    first = lines_of(out / "manifest.jsonl")
    assert sorted(x["input"] for x in first) == sorted(
        str(p) for p in [*lib, tmp_path / "lib" / "broken.ply"])  # each input once
    built = {Path(x["input"]).name: x for x in first if x["status"] == "built"}
    assert len(built) == 5 and all(x["triangles"] in (80, 320) for x in built.values())
    # an OBJ of one object is one .tess, not a scene
    assert built["m1.obj"]["output"] == str(out / "m1.tess")
    assert whole(out) == ["m0.tess", "m1.tess", "m2.tess", "m3.tess", "manifest.jsonl",
                          "sub/m4.tess"]
    with read_tess(out / "m0.tess") as f:
        assert len(f.meta["source_key"]) == 32
    # again: every output up to date, nothing built; one input changed: that one built
    assert main([str(tmp_path / "lib"), "-O", str(out), "-q"]) == 2
    again = lines_of(out / "manifest.jsonl")[len(first):]
    assert sorted(x["status"] for x in again) == ["failed"] + ["skipped"] * 5
    trimesh.creation.box().export(lib[2])
    (tmp_path / "lib" / "broken.ply").unlink()
    assert main([str(tmp_path / "lib"), "-O", str(out), "-q"]) == 0
    third = lines_of(out / "manifest.jsonl")[len(first) + len(again):]
    assert {Path(x["input"]).name: x["status"] for x in third} == {
        "m0.ply": "skipped", "m1.obj": "skipped", "m2.stl": "built", "m3.ply": "skipped",
        "m4.obj": "skipped"}
    # another option: every output built again
    assert main([str(tmp_path / "lib"), "-O", str(out), "-q", "--max-triangles", "64"]) == 0
    fourth = lines_of(out / "manifest.jsonl")[len(first) + len(again) + len(third):]
    assert [x["status"] for x in fourth] == ["built"] * 5


def test_batch_refusals_are_one_line(tmp_path, capsys):
    library(tmp_path / "lib", 2)
    (tmp_path / "file").write_text("x")
    for argv, why in (
            ([str(tmp_path / "nowhere"), "-O", str(tmp_path / "o")], "no such file or folder"),
            ([str(tmp_path / "lib"), "-O", str(tmp_path / "file")], "not a folder"),
            ([str(tmp_path / "lib"), "-O", str(tmp_path / "o"), "--builtin", "rock"],
             "--builtin applies to one input"),
            ([str(tmp_path / "lib"), "-o", str(tmp_path / "x.tess")], "-o applies to one")):
        assert main([*argv, "-q"]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and why in err[0], err
    assert not (tmp_path / "o").exists()


def test_a_worker_killed_mid_batch_has_its_builds_retried(tmp_path):
    # the first line ends, then a worker is killed (SIGKILL: no clean-up of its own): the pool
    # breaks, its builds go again in a new one; every input ends once, built, no partial file
    lib = library(tmp_path / "lib", 6)
    out = tmp_path / "out"
    killed = []

    def report(line: dict) -> None:
        if not killed:
            victim = multiprocessing.active_children()[0]
            os.kill(victim.pid, signal.SIGKILL)
            killed.append(victim.pid)

    lines = build_many(expand_inputs([str(tmp_path / "lib")], out), BuildConfig(),
                       out / "manifest.jsonl", jobs=2, report=report)
    assert killed
    assert sorted(x["input"] for x in lines) == sorted(str(p) for p in lib)
    assert all(x["status"] == "built" for x in lines), lines
    assert lines_of(out / "manifest.jsonl") == lines
    assert len(whole(out)) == 7


def _ray_builds() -> list[int]:
    """The processes of Ray workers running a build (their title `ray::_ray_build`)."""
    pids = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                if (d / "cmdline").read_bytes().startswith(b"ray::_ray_build"):
                    pids.append(int(d.name))
            except OSError:
                pass
    return pids


@pytest.fixture
def ray_local():
    ray = pytest.importorskip("ray", reason="the 'ray' extra (make setup installs it)")
    yield ray
    if ray.is_initialized():  # pragma: no cover - build_many shuts down what it started
        ray.shutdown()


def test_a_batch_on_a_local_ray_cluster_builds_as_the_one_in_process(tmp_path, ray_local):
    # a local cluster of 2 CPUs (`--ray local --jobs 2`): the same outputs, a line each
    lib = library(tmp_path / "lib")
    assert main([str(tmp_path / "lib"), "-O", str(tmp_path / "here"), "-q"]) == 0
    assert main([str(tmp_path / "lib"), "-O", str(tmp_path / "ray"), "-q", "--ray", "local",
                 "--jobs", "2"]) == 0
    here = {Path(x["input"]).name: x for x in lines_of(tmp_path / "here" / "manifest.jsonl")}
    there = {Path(x["input"]).name: x for x in lines_of(tmp_path / "ray" / "manifest.jsonl")}
    assert sorted(there) == sorted(p.name for p in lib)
    for name, x in there.items():
        assert x["status"] == "built" and (x["triangles"], x["levels"]) == (
            here[name]["triangles"], here[name]["levels"])
    assert whole(tmp_path / "ray") == whole(tmp_path / "here")
    # up to date on the cluster too
    assert main([str(tmp_path / "lib"), "-O", str(tmp_path / "ray"), "-q", "--ray",
                 "local"]) == 0
    again = lines_of(tmp_path / "ray" / "manifest.jsonl")[len(there):]
    assert [x["status"] for x in again] == ["skipped"] * len(lib)


def test_a_ray_worker_killed_mid_batch_has_its_build_retried(tmp_path, ray_local):
    # builds of a second or so each on 2 CPUs; once the first line is in, a worker running a
    # build is killed (SIGKILL): Ray runs that build again; every input once, built, whole
    (tmp_path / "lib").mkdir()
    for i in range(6):
        trimesh.creation.icosphere(5, 1.0 + 0.1 * i).export(tmp_path / "lib" / f"b{i}.ply")
    out = tmp_path / "out"
    killed = []

    def report(line: dict) -> None:
        deadline = time.monotonic() + 20
        while not killed and time.monotonic() < deadline:
            running = _ray_builds()
            if running:
                os.kill(running[0], signal.SIGKILL)
                killed.append(running[0])
            time.sleep(0.01)

    lines = build_many(expand_inputs([str(tmp_path / "lib")], out), BuildConfig(),
                       out / "manifest.jsonl", jobs=2, report=report, ray_address="local")
    assert killed
    assert sorted(Path(x["input"]).name for x in lines) == [f"b{i}.ply" for i in range(6)]
    assert all(x["status"] == "built" for x in lines), lines
    assert len(whole(out)) == 7


def test_an_unreachable_ray_cluster_is_one_line_before_anything(tmp_path, capsys, ray_local):
    library(tmp_path / "lib", 2)
    assert main([str(tmp_path / "lib"), "-O", str(tmp_path / "out"), "--ray",
                 "127.0.0.1:1"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["preprocess: error: --ray 127.0.0.1:1: cannot reach the Ray cluster: "
                   "Connection refused"]
    assert not (tmp_path / "out").exists()
