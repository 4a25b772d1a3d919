"""The chunked build (`preprocess.chunks`): a mesh split into spatial chunks, each chunk's levels
built with its border held, then the levels above them. Checked on generated meshes against
brute force (the split, the border, the sub-meshes) and by every check of `preprocess.verify`
(level 0 the original, crack-free cuts from several views, honest errors measured against the
original, which the top levels never see); the triangles a cut draws against the whole build's;
the same DAG as Ray tasks, with a worker killed; the command's `--chunks`."""

from __future__ import annotations

import dataclasses
import os
import signal
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from preprocess.build import (BUILD_BYTES_PER_TRIANGLE, CHUNKED_BYTES_PER_TRIANGLE,
                              MEMORY_CHECK_TRIANGLES, plan_chunks)
from preprocess.bvh import build_bvh
from preprocess.chunks import build_chunked, chunk_border, chunk_count, chunk_inputs, split
from preprocess.config import BuildConfig
from preprocess.cut import select_cut
from preprocess.dag import build_dag
from preprocess.io.arrays import mesh_from_arrays
from preprocess.mesh import Mesh, MeshError
from preprocess.verify import check_all


def bumpy_sphere(subdivisions: int = 5) -> Mesh:
    """An icosphere with bumps (20 * 4^subdivisions triangles, closed), computed normals."""
    import trimesh

    s = trimesh.creation.icosphere(subdivisions)
    v = s.vertices * (1 + 0.05 * np.sin(7 * s.vertices[:, :1]) * np.cos(5 * s.vertices[:, 1:2]))
    return mesh_from_arrays(v.astype(np.float32), s.faces.astype(np.int32), name="bumpy")


def terrain() -> Mesh:
    from assets.rock import make_terrain

    return make_terrain(80, seed=5)  # 12,800 triangles, an open border, uvs


def test_the_split_is_balanced_and_the_border_is_the_shared_positions():
    mesh = bumpy_sphere(4)
    ids, offsets = split(mesh, 5)
    assert np.array_equal(np.sort(ids), np.arange(mesh.triangle_count))
    chunk_of = np.empty(mesh.triangle_count, np.int64)
    for c in range(5):
        assert (np.diff(ids[offsets[c]:offsets[c + 1]]) > 0).all()  # each chunk ascending
        chunk_of[ids[offsets[c]:offsets[c + 1]]] = c
    counts = np.bincount(chunk_of, minlength=5)
    assert counts.sum() == mesh.triangle_count and np.ptp(counts) <= 1, counts
    ptri = mesh.wedge_position[mesh.triangles]
    # spatial: each chunk's centroids lie apart from the others' (its box holds few of theirs)
    cent = mesh.positions[ptri].mean(axis=1)
    for c in range(5):
        lo, hi = cent[chunk_of == c].min(0), cent[chunk_of == c].max(0)
        inside = ((cent >= lo) & (cent <= hi)).all(axis=1)
        assert (inside & (chunk_of != c)).sum() < 0.1 * counts[c]
    used = [set(np.unique(ptri[chunk_of == c]).tolist()) for c in range(5)]
    brute = np.zeros(mesh.vertex_count, bool)
    for p in range(mesh.vertex_count):
        brute[p] = sum(p in u for u in used) > 1
    border = chunk_border(mesh.triangles, mesh.wedge_position, ids, offsets, mesh.vertex_count)
    assert np.array_equal(border, brute) and border.any()


def test_the_chunks_give_back_the_mesh():
    mesh = terrain()
    chunks = list(chunk_inputs(mesh, 3))
    rows = []
    for chunk in chunks:
        sub = chunk.mesh
        # the sub-mesh's wedges and positions are the mesh's, attributes and all
        assert np.array_equal(chunk.positions[sub.wedge_position],
                              mesh.wedge_position[chunk.wedges])
        assert np.array_equal(sub.wedge_uv, mesh.wedge_uv[chunk.wedges])
        assert np.array_equal(sub.positions, mesh.positions[chunk.positions])
        rows.append(chunk.wedges[sub.triangles])
        # the border held: exactly the positions another chunk uses too
        others = np.unique(np.concatenate([c.positions for c in chunks if c is not chunk]))
        assert np.array_equal(chunk.border, np.isin(chunk.positions, others))
    got = np.concatenate(rows)
    assert sorted(map(tuple, got.tolist())) == sorted(map(tuple, mesh.triangles.tolist()))


@pytest.mark.parametrize("make, chunks", [(bumpy_sphere, 4), (terrain, 3)],
                         ids=["closed-sphere", "terrain-with-uvs"])
def test_a_chunked_build_passes_every_check(make, chunks):
    mesh = make()
    dag = build_chunked(mesh, chunks, BuildConfig())
    fig = check_all(dag, build_bvh(dag), thresholds=12)
    assert dag.group_clusters[dag.group_cluster_offset[dag.root_group]:].size >= 1
    assert fig["dag"]["levels"] >= 6
    # the honest check measured every level against the original: errors are never below the
    # distance (check_all raises), and the top levels' bounds through the chunks' tops stay
    # within 3x of it (a whole build's: 1.15-1.3)
    ratios = fig["honest"]["level_ratios"]
    assert max(ratios) < 3.0, ratios


def test_a_chunked_build_draws_about_what_the_whole_one_does():
    # the strips along chunk borders stay fine up to the top levels: a cut draws more triangles
    # there; from views near and far, at most 30% more than the whole build's cut
    mesh = bumpy_sphere(5)
    whole = build_dag(mesh, BuildConfig())
    chunked = build_chunked(mesh, 4, BuildConfig())
    centre = mesh.positions.mean(axis=0)
    for distance, tau in ((3.0, 1.0), (8.0, 1.0), (30.0, 1.0), (8.0, 4.0)):
        camera = centre + np.array([0.3, 0.4, 1.0]) / np.linalg.norm([0.3, 0.4, 1.0]) * distance
        drawn = []
        for dag in (whole, chunked):
            cut = select_cut(dag, tau, camera, scale=1000.0)
            drawn.append(int(np.diff(dag.cluster_tri_offset)[cut].sum()))
        assert drawn[1] <= 1.3 * drawn[0], (distance, tau, drawn)


def test_plan_chunks_builds_whole_where_it_fits_and_chunked_where_not():
    big = 50_000_000
    assert plan_chunks("m", big, False, int(100e9)) == 1
    between = big * (BUILD_BYTES_PER_TRIANGLE + CHUNKED_BYTES_PER_TRIANGLE) // 2
    assert plan_chunks("m", big, False, between) == chunk_count(big)
    assert plan_chunks("m", big, False, None) == 1
    assert plan_chunks("m", 1000, False, 1) == 1  # small meshes are never refused
    assert plan_chunks("m", big, False, int(100e9), chunks=3) == 3
    with pytest.raises(MeshError, match=r"m: 50,000,000 triangles need about .* GB to chunked "
                                        r"build and verify .* --memory limit"):
        plan_chunks("m", big, True, int(5e9), True)
    assert MEMORY_CHECK_TRIANGLES <= big


def test_the_command_builds_in_chunks(tmp_path, capsys):
    from renderer.apps.preprocess_cli import main
    from preprocess.tess import TessFile

    src = tmp_path / "bumpy.ply"
    import trimesh

    m = bumpy_sphere(4)
    trimesh.Trimesh(m.positions, m.wedge_position[m.triangles], process=False).export(src)
    out = tmp_path / "bumpy.tess"
    assert main([str(src), "-o", str(out), "--chunks", "3", "--verify"]) == 0
    text = capsys.readouterr().out
    assert "built in 3 chunks" in text and "verified" in text
    with TessFile(out) as tess:
        assert tess.meta["chunks"] == 3
    with pytest.raises(SystemExit) as stopped:  # argparse's usage error
        main([str(src), "-o", str(tmp_path / "x.tess"), "--chunks", "0"])
    assert stopped.value.code == 2
    assert "--chunks: must be a whole number >= 1, not '0'" in capsys.readouterr().err
    assert not (tmp_path / "x.tess").exists()
    assert main(["--builtin", "forest", "-o", str(tmp_path / "f.tess"), "--chunks", "2"]) == 2
    assert capsys.readouterr().err.strip() == (
        "preprocess: error: --chunks applies to one mesh, not to --builtin forest")


# ------------------------------------------------------------------------------------ on Ray


@pytest.fixture
def ray_local():
    ray = pytest.importorskip("ray", reason="the 'ray' extra (make setup installs it)")
    yield ray
    if ray.is_initialized():  # pragma: no cover - the runner shuts down what it started
        ray.shutdown()


def _chunk_tasks() -> list[int]:
    pids = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                if (d / "cmdline").read_bytes().startswith(b"ray::_chunk_task"):
                    pids.append(int(d.name))
            except OSError:
                pass
    return pids


def _same(a, b) -> None:
    for f in ("triangles", "cluster_tri_offset", "cluster_level", "cluster_group",
              "cluster_source_group", "cluster_self_error", "cluster_self_sphere",
              "group_cluster_offset", "group_clusters", "group_error", "group_sphere"):
        assert np.array_equal(getattr(a, f), getattr(b, f)), f
    assert np.array_equal(a.mesh.wedge_position, b.mesh.wedge_position)


def test_chunks_on_a_local_ray_cluster_with_a_worker_killed(ray_local):
    # 2 CPUs, 4 chunks of one thread each: the same DAG as the chunks built here, one after
    # another; a worker building a chunk is killed (SIGKILL) and Ray builds that chunk again
    from preprocess.chunks_ray import ray_runner

    mesh = bumpy_sphere(5)
    cfg = BuildConfig(threads=1)
    here = build_chunked(mesh, 4, cfg)
    killed: list[int] = []

    def kill_one() -> None:
        deadline = time.monotonic() + 120
        while not killed and time.monotonic() < deadline:
            running = _chunk_tasks()
            if running:
                time.sleep(0.5)  # into its build
                try:
                    os.kill(running[0], signal.SIGKILL)
                    killed.append(running[0])
                except ProcessLookupError:
                    continue
            time.sleep(0.05)

    killer = threading.Thread(target=kill_one, daemon=True)
    killer.start()
    there = build_chunked(mesh, 4, cfg, runner=ray_runner("local", 2))
    killer.join()
    assert killed
    _same(here, there)
    check_all(there, build_bvh(there), thresholds=6)


def test_a_chunked_build_on_threads_is_the_one_on_one_thread():
    mesh = terrain()
    _same(build_chunked(mesh, 3, BuildConfig(threads=1)),
          build_chunked(mesh, 3, dataclasses.replace(BuildConfig(), threads=2)))
