"""Batch preprocessing (issue 36; preprocess/batch.py, `preprocess INPUTS -O DIR`): many inputs in
one command, a manifest line each, outputs up to date skipped, one failure one line, a worker
that dies retried, and only whole files whatever stops it."""

from __future__ import annotations

import json
import multiprocessing
import os
import signal
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
