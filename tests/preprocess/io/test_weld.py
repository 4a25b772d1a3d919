"""Welding (preprocess.io.weld): positions welded by exact value, rows grouped by first appearance,
and wedges: a normal or uv seam keeps two wedges at one position."""

from __future__ import annotations

import numpy as np

from preprocess.io import weld
from preprocess.io.weld import weld_positions
from preprocess.load import load_mesh, mesh_from_arrays


# --------------------------------------------------------------------------------------------------
# wedges: normals and uvs


def test_normals_kept_from_file(tmp_path, write):
    # One triangle with deliberately non-geometric, non-unit normals.
    text = "v 0 0 0\nv 1 0 0\nv 0 1 0\nvn 0 3 4\nvn 0 0 0\nf 1//1 2//1 3//2\n"
    mesh = load_mesh(write(tmp_path / "n.obj", text))
    assert mesh.triangle_count == 1 and len(mesh.wedge_position) == 3
    by_pos = mesh.wedge_normal[np.argsort(mesh.wedge_position)]
    np.testing.assert_allclose(by_pos[0], [0, 0.6, 0.8], atol=1e-7)
    np.testing.assert_allclose(by_pos[1], [0, 0.6, 0.8], atol=1e-7)
    np.testing.assert_allclose(by_pos[2], [0, 0, 1], atol=1e-7)  # zero-length: computed


def test_normals_computed_when_absent(tmp_path, write, quad_obj):
    mesh = load_mesh(write(tmp_path / "q.obj", quad_obj))
    assert len(mesh.wedge_position) == mesh.vertex_count  # one wedge per position
    np.testing.assert_allclose(mesh.wedge_normal, np.tile([0, 0, 1], (6, 1)), atol=1e-7)


def test_hard_edge_normals_make_two_wedges(tmp_path, write):
    # Two faces of a folded sheet sharing the edge 1-2, each with its own face normal.
    text = (
        "v 0 0 0\nv 1 0 0\nv 0 1 0\nv 0 0 1\nvn 0 0 1\nvn 0 -1 0\n"
        "f 1//1 2//1 3//1\nf 2//2 1//2 4//2\n"
    )
    mesh = load_mesh(write(tmp_path / "hard.obj", text))
    assert mesh.vertex_count == 4
    assert len(mesh.wedge_position) == 6
    assert np.bincount(mesh.wedge_position).tolist() == [2, 2, 1, 1]


def test_uvs_kept_and_seam_makes_two_wedges(tmp_path, write, assert_valid):
    # Two triangles sharing the edge 2-3; vertex 3 has different uvs on each side (a seam).
    text = (
        "v 0 0 0\nv 1 0 0\nv 0 1 0\nv 1 1 0\n"
        "vt 0 0\nvt 1 0\nvt 0 1\nvt 0.25 0.75\nvt 1 1\n"
        "f 1/1 2/2 3/3\nf 2/2 4/5 3/4\n"
    )
    mesh = load_mesh(write(tmp_path / "seam.obj", text))
    assert_valid(mesh)
    assert mesh.wedge_uv is not None
    assert mesh.vertex_count == 4 and len(mesh.wedge_position) == 5
    counts = np.bincount(mesh.wedge_position)
    seam_pos = int(np.flatnonzero(counts == 2)[0])
    np.testing.assert_array_equal(mesh.positions[seam_pos], [0, 1, 0])
    uvs = mesh.wedge_uv[mesh.wedge_position == seam_pos]
    assert sorted(map(tuple, uvs.tolist())) == [(0.0, 1.0), (0.25, 0.75)]
    # both wedges at the seam share the smooth normal of the position
    np.testing.assert_array_equal(*mesh.wedge_normal[mesh.wedge_position == seam_pos])


# --------------------------------------------------------------------------------------------------
# welding and grouping


def test_duplicate_positions_are_welded():
    quad = np.array([[0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0]], dtype=np.float64)
    soup = np.concatenate([quad[[0, 1, 2]], quad[[0, 2, 3]]])  # 6 vertices, 4 positions
    soup[0, 0] = -0.0  # -0.0 and +0.0 are the same position
    mesh = mesh_from_arrays(soup, np.arange(6).reshape(2, 3))
    assert mesh.vertex_count == 4 and len(mesh.wedge_position) == 4
    np.testing.assert_array_equal(mesh.position_triangles, [[0, 1, 2], [0, 2, 3]])
    # nearly equal is not equal: welding is exact
    soup[3, 0] = np.nextafter(np.float32(0), np.float32(1))
    assert mesh_from_arrays(soup, np.arange(6).reshape(2, 3)).vertex_count == 5


def _first_appearance_reference(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(inverse, first) of `_group_rows` by np.unique: groups numbered by first appearance."""
    _, first, inverse = np.unique(rows, axis=0, return_index=True, return_inverse=True)
    order = np.argsort(first)
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    return rank[inverse.ravel()], first[order]


def test_grouping_matches_a_sort_based_reference():
    rng = np.random.default_rng(3)
    for columns in (1, 3, 6):
        rows = rng.integers(0, 4, size=(3000, columns)).astype(np.uint32)  # many equal rows
        inverse, first = weld.group_rows(list(rows.T))
        expect_inverse, expect_first = _first_appearance_reference(rows)
        np.testing.assert_array_equal(inverse, expect_inverse)
        np.testing.assert_array_equal(first, expect_first)
    pts = rng.integers(0, 5, size=(2000, 3)).astype(np.float32)
    pts[::7, 0] = -0.0  # the same position as +0.0
    got_pos, got_inv = weld_positions(pts)
    np.testing.assert_array_equal(got_pos[got_inv], pts + np.float32(0.0))
    assert len(got_pos) == len(np.unique(pts + np.float32(0.0), axis=0))
