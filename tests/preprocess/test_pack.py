"""The page packer and decoder: every cluster of the DAG is in exactly one page, decodes back to its
own triangles within the documented quantization error, pages respect their size and order, and
the hierarchy sections agree with the DAG and BVH (on the assets `built` in
tests/preprocess/conftest.py; that every record names the group that produced it is
tests/preprocess/verify/test_packed.py's)."""

from __future__ import annotations

import numpy as np
import pytest

from assets.rock import make_terrain
from assets.shapes import geodesic_sphere
from preprocess.pack import octahedral_encode
from preprocess.tess.limits import PAGE_ROOT
from preprocess.tess.pages import decode_cluster, octahedral_decode, page_clusters
from preprocess.tess.records import CHILD_EMPTY, CHILD_GROUP
from preprocess.build import build_asset
from preprocess.config import BuildConfig
from preprocess.tess import read_tess, write_tess


def test_octahedral_normals_round_trip():
    rng = np.random.default_rng(1)
    n = rng.normal(size=(10_000, 3))
    n /= np.linalg.norm(n, axis=1, keepdims=True)
    n[:6] = np.vstack([np.eye(3), -np.eye(3)])  # the axes, where the octahedron folds
    back = octahedral_decode(octahedral_encode(n))
    # 16-bit components: about 2 / 32767 of the octahedron's side, ~1e-4 in angle
    assert np.abs(back - n).max() < 2e-4


@pytest.mark.slow
def test_every_cluster_decodes_to_its_triangles(built):
    _, cfg, dag, _, packed = built
    mesh = dag.mesh  # the input mesh, with the fresh wedges of the coarse levels
    meta = packed.meta
    step = meta["step"]
    seen = np.zeros(dag.cluster_count, np.int64)
    for p in range(len(packed.pages)):
        page = packed.pages[p]
        for rec in page_clusters(page):
            c = int(rec["cluster"])
            seen[c] += 1
            tris = dag.cluster_triangles(c)
            d = decode_cluster(page, rec, step, (meta["uv_min"], meta["uv_max"]))
            assert d["triangles"].max() < rec["vertex_count"] <= cfg.max_vertices
            assert len(d["triangles"]) == len(tris) == rec["triangle_count"]
            # local indices name the cluster's wedges in first-use order
            wedges = tris.ravel()[np.sort(np.unique(tris.ravel(), return_index=True)[1])]
            assert np.array_equal(wedges[d["triangles"]], tris)
            want = mesh.positions[mesh.wedge_position[wedges]]
            # one grid per mesh: rounding moves each coordinate at most step / 2
            assert np.abs(d["positions"] - want).max() <= step / 2 * (1 + 1e-6)
            assert np.abs(d["normals"] - mesh.wedge_normal[wedges]).max() < 2e-4
            if mesh.wedge_uv is not None:
                span = np.asarray(meta["uv_max"]) - np.asarray(meta["uv_min"])
                assert (np.abs(d["uvs"] - mesh.wedge_uv[wedges]) <= span / 65535 + 1e-6).all()
            assert rec["self_error"] == dag.cluster_self_error[c]
            assert rec["group"] == dag.cluster_group[c]
    assert (seen == 1).all(), "every cluster is stored exactly once"


@pytest.mark.slow
def test_pages_hold_groups_coarse_to_fine(built):
    _, cfg, dag, _, packed = built
    levels = []
    for p, page in enumerate(packed.pages):
        header = page[:16].view(np.uint32)
        assert header[1] == p and header[2] <= cfg.page_size
        recs = page_clusters(page)
        levels.append(dag.group_level[recs["group"]])
    order = np.concatenate(levels)
    assert (np.diff(order) <= 0).all(), "groups are placed coarse to fine"
    root = packed.page_flags & PAGE_ROOT
    assert root[0] and (np.diff(root.astype(np.int64)) <= 0).all(), "root pages are a prefix"
    root_group_pages = packed.sections["group_parts"]["page"][
        packed.sections["group_parts"]["group"] == dag.root_group]
    assert root[root_group_pages].all(), "the root group is in root pages"


def test_group_parts_cover_members(built):
    _, _, dag, _, packed = built
    groups = packed.sections["groups"]
    parts = packed.sections["group_parts"]
    for g in range(dag.group_count):
        got = []
        for k in range(groups["first_part"][g], groups["first_part"][g] + groups["part_count"][g]):
            part = parts[k]
            assert part["group"] == g
            recs = page_clusters(packed.pages[part["page"]])
            run = recs[part["first_cluster"] : part["first_cluster"] + part["cluster_count"]]
            got.extend(run["cluster"].tolist())
        members = dag.group_clusters[dag.group_cluster_offset[g] : dag.group_cluster_offset[g + 1]]
        assert sorted(got) == sorted(members.tolist())
        assert groups["cluster_count"][g] == len(members)


def test_sections_match_bvh(built):
    _, _, _, bvh, packed = built
    nodes = packed.sections["bvh_nodes"]
    ch = bvh.node_children.astype(np.int64)
    enc = nodes["children"].astype(np.int64)
    assert (enc[ch == -1] == CHILD_EMPTY).all()
    assert (enc[ch >= 0] == ch[ch >= 0]).all()
    assert (enc[ch < -1] == (CHILD_GROUP | (-2 - ch[ch < -1]))).all()
    # the always-resident sections are the BVH's, the groups' and the materials' (version 3
    # dropped the page dependency sections no reader used)
    assert {"bvh_nodes", "groups", "group_parts"} <= set(packed.sections)
    assert not {"page_deps", "page_dep_offset"} & set(packed.sections)


def test_file_round_trip_bit_exact(built, tmp_path):
    *_, packed = built
    a, b = tmp_path / "a.tess", tmp_path / "b.tess"
    write_tess(a, meta=packed.meta, sections=packed.sections, pages=packed.pages,
               page_flags=packed.page_flags)
    with read_tess(a, verify_pages=True) as f:
        assert f.meta == packed.meta
        for name, arr in packed.sections.items():
            assert f.sections[name].dtype == arr.dtype
            assert np.array_equal(f.sections[name], arr)
        assert np.array_equal(f.pages_array(), packed.pages)
        write_tess(b, meta=f.meta, sections=f.sections, pages=f.pages_array(),
                   page_flags=f.page_flags)
    assert a.read_bytes() == b.read_bytes()


@pytest.mark.slow
def test_build_is_the_same_with_one_thread_or_several():
    """The groups of a level run in parallel and the vertices are encoded in a background thread
    (`VertexEncoder`) while the DAG grows; none of it may change the result. One thread also
    encodes on the caller's thread, and `pack_asset` alone encodes everything at the end; the
    encoded clusters of a big mesh wait for the pages in a temporary file (`spill`, read back
    run by run): all must give the same pages and sections, byte for byte."""
    from preprocess.pack import pack_asset

    mesh = make_terrain(64, seed=3)  # uvs (read back with the spilled runs), open borders
    builds = [build_asset(mesh, BuildConfig(threads=t), spill=spill)
              for t, spill in ((1, False), (2, False), (3, False), (1, True), (2, True))]
    dag, bvh, first = builds[0]
    others = [packed for _, _, packed in builds[1:]] + [pack_asset(dag, bvh, BuildConfig())]
    for packed in others:
        assert np.array_equal(packed.pages, first.pages)
        for name, arr in first.sections.items():
            assert np.array_equal(packed.sections[name], arr), name


def test_a_mesh_too_far_from_the_origin_for_the_grid_is_refused():
    """Grid coordinates are 31-bit: a small mesh a million units from the origin (a georeferenced
    scan) would overflow them, so the build stops with a MeshError (one line in the CLI)."""
    from preprocess.mesh import MeshError

    mesh = geodesic_sphere(8)
    mesh.positions = mesh.positions + np.float32(1.0e6)
    with pytest.raises(MeshError, match="31-bit grid"):
        build_asset(mesh, BuildConfig())


def test_a_full_disk_under_the_spill_names_its_folder(tmp_path, monkeypatch):
    """The encoded clusters' temporary file has no name: a disk that fills under it gives an
    OSError naming the folder it was in (the CLI's one line), not a bare errno."""
    import errno

    from preprocess import pack

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(pack.SpilledRun, "write", staticmethod(full))
    with pytest.raises(OSError, match="No space left") as caught:
        build_asset(geodesic_sphere(4), BuildConfig(), spill=True, spill_dir=tmp_path)
    assert caught.value.filename.startswith(str(tmp_path))
    assert "temporary file" in caught.value.filename
    assert list(tmp_path.iterdir()) == []  # nothing left behind
