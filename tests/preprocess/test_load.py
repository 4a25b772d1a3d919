"""Loading and welding (preprocess.load, preprocess.io) and the procedural assets (assets.rock,
assets.shapes)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import trimesh

from assets.rock import DEFAULT_ASSET, default_mesh, fbm, make_rock, make_terrain, rock_resolution
from assets.shapes import geodesic_sphere
from preprocess import load as load_module
from preprocess.io import parts, repair, weld
from preprocess.io.parts import read_parts
from preprocess.io.text import _table
from preprocess.io.weld import weld_positions
from preprocess.load import load_mesh, mesh_from_arrays
from preprocess.mesh import Mesh, MeshError, MeshWarning



# --------------------------------------------------------------------------------------------------
# helpers


def edge_use_counts(mesh: Mesh) -> tuple[np.ndarray, np.ndarray]:
    """(undirected edge use counts, directed edge use counts) over position ids."""
    t = mesh.position_triangles.astype(np.int64)
    directed = np.concatenate([t[:, [0, 1]], t[:, [1, 2]], t[:, [2, 0]]])
    n = mesh.vertex_count
    d_keys = directed[:, 0] * n + directed[:, 1]
    u_keys = np.minimum(directed[:, 0], directed[:, 1]) * n + np.maximum(
        directed[:, 0], directed[:, 1]
    )
    return np.unique(u_keys, return_counts=True)[1], np.unique(d_keys, return_counts=True)[1]


def assert_closed_manifold(mesh: Mesh) -> None:
    undirected, directed = edge_use_counts(mesh)
    assert (undirected == 2).all(), "every edge is shared by exactly two triangles"
    assert (directed == 1).all(), "consistent orientation: each directed edge used once"


def signed_volume(mesh: Mesh) -> float:
    p = mesh.positions.astype(np.float64)[mesh.position_triangles]
    return float(np.einsum("ij,ij->i", p[:, 0], np.cross(p[:, 1], p[:, 2])).sum() / 6.0)


def assert_valid(mesh: Mesh) -> None:
    """The Mesh contract: dtypes, shapes, ranges, unit normals, everything referenced."""
    assert mesh.positions.dtype == np.float32 and mesh.positions.shape[1] == 3
    assert mesh.triangles.dtype == np.int32 and mesh.triangles.shape[1] == 3
    assert mesh.wedge_position.dtype == np.int32
    assert mesh.wedge_normal.dtype == np.float32
    k = mesh.wedge_position.shape[0]
    assert mesh.wedge_normal.shape == (k, 3)
    assert mesh.triangles.min() >= 0 and mesh.triangles.max() < k
    assert np.array_equal(np.unique(mesh.triangles), np.arange(k)), "all wedges used"
    assert np.array_equal(np.unique(mesh.wedge_position), np.arange(mesh.vertex_count))
    np.testing.assert_allclose(np.linalg.norm(mesh.wedge_normal, axis=1), 1.0, atol=1e-5)
    if mesh.wedge_uv is not None:
        assert mesh.wedge_uv.dtype == np.float32 and mesh.wedge_uv.shape == (k, 2)
    # positions distinct, wedges distinct
    assert np.unique(mesh.positions, axis=0).shape[0] == mesh.vertex_count
    assert np.unique(
        np.concatenate([mesh.wedge_position[:, None].astype(np.float32), mesh.wedge_attributes()],
                       axis=1), axis=0
    ).shape[0] == k  # fmt: skip
    pt = mesh.position_triangles
    assert (pt[:, 0] != pt[:, 1]).all() and (pt[:, 1] != pt[:, 2]).all()
    assert (pt[:, 2] != pt[:, 0]).all()


def write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


QUAD_OBJ = """\
v 0 0 0
v 1 0 0
v 1 1 0
v 0 1 0
v 2 0 0
v 2 1 0
f 1 2 3 4
f 2 5 6 3
"""


# --------------------------------------------------------------------------------------------------
# formats


def test_obj_round_trip(tmp_path):
    sphere = trimesh.creation.icosphere(subdivisions=2)
    path = tmp_path / "ico.obj"
    sphere.export(path, include_normals=False)
    mesh = load_mesh(path)
    assert_valid(mesh)
    assert mesh.name == "ico"
    assert mesh.triangle_count == 320 and mesh.vertex_count == 162
    assert mesh.wedge_uv is None
    assert_closed_manifold(mesh)
    assert signed_volume(mesh) > 0


def test_ply_round_trip(tmp_path):
    box = trimesh.creation.box(extents=(1, 2, 3))
    path = tmp_path / "box.ply"
    box.export(path)
    mesh = load_mesh(path)
    assert_valid(mesh)
    assert (mesh.triangle_count, mesh.vertex_count) == (12, 8)
    assert_closed_manifold(mesh)
    assert signed_volume(mesh) == pytest.approx(6.0)


def test_stl_welds_triangle_soup(tmp_path):
    box = trimesh.creation.box()
    path = tmp_path / "box.stl"
    box.export(path)
    assert trimesh.load(path, process=False).vertices.shape[0] == 36  # STL is a triangle soup
    mesh = load_mesh(path)
    assert (mesh.triangle_count, mesh.vertex_count) == (12, 8)
    assert_closed_manifold(mesh)
    # 90-degree edges are creases: each corner keeps one flat normal per face (3 wedges)
    assert len(mesh.wedge_position) == 24
    n = mesh.wedge_normal
    assert np.allclose(np.abs(n).max(axis=1), 1.0) and np.allclose(np.abs(n).sum(axis=1), 1.0)
    p = mesh.positions[mesh.wedge_position]
    assert (np.sign(n[np.abs(n) == 1]) == np.sign(p[np.abs(n) == 1])).all()  # outward
    # smoothed (crease angle 180): flat faces share corners, normals point out of the corners
    # (area-weighted, so not exactly diagonal: a corner touches one or two triangles of a face)
    smooth = load_mesh(path, crease_angle=180)
    assert len(smooth.wedge_position) == 8
    n = smooth.wedge_normal
    p = smooth.positions[smooth.wedge_position]
    np.testing.assert_array_equal(np.sign(n), np.sign(p))


def test_off(tmp_path):
    path = tmp_path / "box.off"
    trimesh.creation.box().export(path)
    mesh = load_mesh(path)
    assert (mesh.triangle_count, mesh.vertex_count) == (12, 8)


def test_glb_scene_is_flattened_with_transforms(tmp_path):
    box = trimesh.creation.box()  # unit cube, volume 1
    ico = trimesh.creation.icosphere(subdivisions=1)
    scene = trimesh.Scene()
    move_scale = trimesh.transformations.translation_matrix([10, 0, 0]) @ np.diag([2, 2, 2, 1.0])
    scene.add_geometry(box, node_name="big", geom_name="box", transform=move_scale)
    scene.add_geometry(ico, node_name="ball", geom_name="ico")
    mirror = trimesh.transformations.translation_matrix([-10, 0, 0]) @ np.diag([-1, 1, 1, 1.0])
    scene.add_geometry(box, node_name="mirrored", geom_name="box", transform=mirror)
    path = tmp_path / "scene.glb"
    scene.export(path)

    mesh = load_mesh(path)
    assert_valid(mesh)
    assert mesh.triangle_count == 12 + 80 + 12
    assert mesh.vertex_count == 8 + 42 + 8
    lo, hi = mesh.positions.min(axis=0), mesh.positions.max(axis=0)
    np.testing.assert_allclose(lo, [-10.5, -1.0, -1.0], atol=1e-6)
    np.testing.assert_allclose(hi, [11.0, 1.0, 1.0], atol=1e-6)
    big = mesh.positions[:, 0] > 5
    assert big.sum() == 8
    np.testing.assert_allclose(np.sort(np.unique(mesh.positions[big, 0])), [9.0, 11.0])
    # every part stays outward-facing (the mirror flips winding back): volumes add up
    assert_closed_manifold(mesh)
    assert signed_volume(mesh) == pytest.approx(8.0 + ico.volume + 1.0, rel=1e-5)


def test_glb_normals_transformed_by_inverse_transpose(tmp_path):
    ico = trimesh.creation.icosphere(subdivisions=1)
    normals = ico.vertex_normals.copy()
    scene = trimesh.Scene()
    scene.add_geometry(ico, node_name="n", geom_name="ico", transform=np.diag([2.0, 1, 1, 1]))
    path = tmp_path / "normals.glb"
    scene.export(path, include_normals=True)
    mesh = load_mesh(path)
    assert (mesh.triangle_count, mesh.vertex_count) == (80, 42)
    expect = normals / np.array([2.0, 1, 1])
    expect /= np.linalg.norm(expect, axis=1, keepdims=True)
    # match wedges to the original vertices by position
    pos = mesh.positions[mesh.wedge_position] / np.array([2.0, 1, 1], dtype=np.float32)
    dist = np.linalg.norm(pos[:, None, :] - ico.vertices[None, :, :], axis=2)
    np.testing.assert_allclose(mesh.wedge_normal, expect[dist.argmin(axis=1)], atol=1e-5)


def test_obj_quads_are_triangulated(tmp_path):
    mesh = load_mesh(write(tmp_path / "quads.obj", QUAD_OBJ))
    assert mesh.triangle_count == 4 and mesh.vertex_count == 6
    np.testing.assert_allclose(mesh.wedge_normal, np.tile([0, 0, 1], (6, 1)), atol=1e-7)


def test_obj_several_objects_are_merged(tmp_path):
    text = "o a\nv 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\no b\nv 5 0 0\nv 6 0 0\nv 5 1 0\nf 4 5 6\n"
    mesh = load_mesh(write(tmp_path / "two.obj", text))
    assert (mesh.triangle_count, mesh.vertex_count) == (2, 6)


# --------------------------------------------------------------------------------------------------
# attributes


def test_normals_kept_from_file(tmp_path):
    # One triangle with deliberately non-geometric, non-unit normals.
    text = "v 0 0 0\nv 1 0 0\nv 0 1 0\nvn 0 3 4\nvn 0 0 0\nf 1//1 2//1 3//2\n"
    mesh = load_mesh(write(tmp_path / "n.obj", text))
    assert mesh.triangle_count == 1 and len(mesh.wedge_position) == 3
    by_pos = mesh.wedge_normal[np.argsort(mesh.wedge_position)]
    np.testing.assert_allclose(by_pos[0], [0, 0.6, 0.8], atol=1e-7)
    np.testing.assert_allclose(by_pos[1], [0, 0.6, 0.8], atol=1e-7)
    np.testing.assert_allclose(by_pos[2], [0, 0, 1], atol=1e-7)  # zero-length: computed


def test_ply_normals_kept(tmp_path):
    ico = trimesh.creation.icosphere(subdivisions=1)
    normals = ico.vertex_normals.copy()
    normals[:, 0] *= -1  # deliberately not the geometric normals
    tm = trimesh.Trimesh(ico.vertices, ico.faces, vertex_normals=normals, process=False)
    path = tmp_path / "normals.ply"
    tm.export(path, vertex_normal=True)
    mesh = load_mesh(path)
    np.testing.assert_allclose(mesh.wedge_normal, normals, atol=1e-6)


def test_normals_computed_when_absent(tmp_path):
    mesh = load_mesh(write(tmp_path / "q.obj", QUAD_OBJ))
    assert len(mesh.wedge_position) == mesh.vertex_count  # one wedge per position
    np.testing.assert_allclose(mesh.wedge_normal, np.tile([0, 0, 1], (6, 1)), atol=1e-7)


def test_hard_edge_normals_make_two_wedges(tmp_path):
    # Two faces of a folded sheet sharing the edge 1-2, each with its own face normal.
    text = (
        "v 0 0 0\nv 1 0 0\nv 0 1 0\nv 0 0 1\nvn 0 0 1\nvn 0 -1 0\n"
        "f 1//1 2//1 3//1\nf 2//2 1//2 4//2\n"
    )
    mesh = load_mesh(write(tmp_path / "hard.obj", text))
    assert mesh.vertex_count == 4
    assert len(mesh.wedge_position) == 6
    assert np.bincount(mesh.wedge_position).tolist() == [2, 2, 1, 1]


def test_uvs_kept_and_seam_makes_two_wedges(tmp_path):
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


def test_ply_uvs_kept(tmp_path):
    ico = trimesh.creation.icosphere(subdivisions=1)
    uv = np.random.default_rng(1).random((len(ico.vertices), 2))
    ico.visual = trimesh.visual.TextureVisuals(uv=uv)
    path = tmp_path / "uv.ply"
    ico.export(path)
    mesh = load_mesh(path)
    assert mesh.wedge_uv is not None and len(mesh.wedge_position) == 42
    np.testing.assert_allclose(mesh.wedge_uv, uv.astype(np.float32))  # same order: first use


# --------------------------------------------------------------------------------------------------
# welding and cleanup (mesh_from_arrays)


def test_clean_input_comes_back_unchanged():
    rng = np.random.default_rng(0)
    pos = rng.random((50, 3)).astype(np.float32)
    faces = np.array([[i, (i + 1) % 50, (i + 7) % 50] for i in range(50)])
    mesh = mesh_from_arrays(pos, faces, crease_angle=180)  # smooth: one wedge per position
    np.testing.assert_array_equal(mesh.positions, pos)
    np.testing.assert_array_equal(mesh.triangles, faces)
    np.testing.assert_array_equal(mesh.wedge_position, np.arange(50))
    again = mesh_from_arrays(mesh.positions, mesh.triangles, mesh.wedge_normal)
    np.testing.assert_array_equal(again.wedge_normal, mesh.wedge_normal)
    np.testing.assert_array_equal(again.triangles, mesh.triangles)


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


def test_degenerate_and_duplicate_triangles_are_dropped():
    pos = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [2, 0, 0], [5, 5, 5]], dtype=np.float32)
    faces = np.array(
        [
            [0, 1, 2],  # kept
            [0, 0, 2],  # repeated index
            [0, 1, 3],  # collinear: zero area
            [1, 2, 0],  # same triangle, rotated: duplicate
            [0, 2, 1],  # opposite orientation: kept (a two-sided sheet)
            [0, 1, 2],  # exact duplicate
        ]
    )
    mesh = mesh_from_arrays(pos, faces)
    assert mesh.triangle_count == 2
    np.testing.assert_array_equal(mesh.position_triangles, [[0, 1, 2], [0, 2, 1]])
    assert mesh.vertex_count == 3  # positions 3 and 4 are no longer used
    np.testing.assert_allclose(np.linalg.norm(mesh.wedge_normal, axis=1), 1.0, atol=1e-6)


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


def test_repeated_triangles_in_a_long_fan():
    """Around a vertex with thousands of triangles the per-vertex lists give way to the hash
    table (same result, no quadratic time)."""
    n = 3001
    angle = np.linspace(0.0, 2.0 * np.pi, n - 1, endpoint=False)
    pos = np.concatenate([[[0.0, 0.0, 0.0]], np.stack([np.cos(angle), np.sin(angle),
                                                       np.zeros(n - 1)], axis=1)])
    ring = np.arange(1, n)
    fan = np.stack([np.zeros(n - 1, np.int64), ring, np.roll(ring, -1)], axis=1)
    faces = np.concatenate([fan, fan[::7], fan[::5, [1, 2, 0]]])
    mesh = mesh_from_arrays(pos, faces)
    assert mesh.triangle_count == n - 1
    tri_pos = np.arange(n, dtype=np.int64)
    W64 = pos.astype(np.float32).astype(np.float64)
    by_list = repair._clean_triangles(faces, tri_pos, W64, False)
    by_hash = repair._clean_triangles(faces, tri_pos, W64, True)
    assert by_list[2] == -1  # the list gave up
    np.testing.assert_array_equal(by_hash[0], np.arange(n - 1))


def test_array_errors():
    pos = np.zeros((3, 3))
    with pytest.raises(MeshError, match="out of range"):
        mesh_from_arrays(np.eye(3), [[0, 1, 3]], name="bad")
    with pytest.raises(MeshError, match="out of range"):
        mesh_from_arrays(np.eye(3), [[0, 1, -1]])
    with pytest.raises(MeshError, match="degenerate"):
        mesh_from_arrays(pos, [[0, 1, 2]])
    with pytest.raises(MeshError, match="no triangles"):
        mesh_from_arrays(pos, np.zeros((0, 3), int))
    with pytest.raises(MeshError, match="NaN"):
        mesh_from_arrays([[0, 0, 0], [1, 0, 0], [0, np.inf, 0]], [[0, 1, 2]])
    with pytest.raises(MeshError, match="shape"):
        mesh_from_arrays(np.eye(3), [[0, 1, 2, 0]])


# --------------------------------------------------------------------------------------------------
# the fast readers (preprocess.io) give exactly what the trimesh path gives


def assert_same_mesh(path: Path, *, fast_path: bool = True) -> Mesh:
    """Load ``path`` through the fast readers and through trimesh; every array bit for bit.

    ``fast_path``: whether the fast reader must handle the file itself (False: it must hand the
    file to trimesh, which then reads it as before).
    """
    handled = read_parts(path, path.suffix[1:].lower(), path.name) is not None
    assert handled == fast_path, f"{path.name}: fast reader handled it: {handled}"
    fast = load_module._load(path, fast=True)
    ref = load_module._load(path, fast=False)
    for field in ("positions", "triangles", "wedge_position", "wedge_normal", "wedge_uv",
                  "wedge_color"):
        a, b = getattr(fast, field), getattr(ref, field)
        assert (a is None) == (b is None), field
        if a is not None:
            assert a.dtype == b.dtype and a.shape == b.shape, field
            assert a.tobytes() == b.tobytes(), f"{path.name}: {field} differs"
    assert fast.name == ref.name
    return fast


_GRID = "".join(  # 18 vertices, no three on a line (a jittered 3 x 3 x 2 grid)
    f"v {x + 0.13 * y * y} {y + 0.07 * z + 0.011 * x * x} {z + 0.05 * x * y}\n"
    for x in (0, 1, 2) for y in (0, 1, 2) for z in (0, 1)
)
_TEX = "vt 0 0\nvt 1 0\nvt 1 1\nvt 0 1\nvt 0.5 0.25\n"
_NRM = "vn 0 0 1\nvn 0 1 0\nvn 1 0 0\nvn 0 0 0\n"

_COLOURED = "".join(  # the grid with a colour after each position (MeshLab's 'v x y z r g b')
    f"{line} {(k * 0.37) % 1:.3f} {(k * 0.61) % 1:.3f} {(k * 0.23) % 1:.3f}\n"
    for k, line in enumerate(_GRID.splitlines())
)

OBJ_CASES = {
    "triangles": _GRID + "f 1 3 5\nf 3 7 5\nf 2 4 6\n",
    # colours were dropped by the fast reader without a word (trimesh's path kept them)
    "vertex colours": _COLOURED + "f 1 3 5\nf 3 7 5\nf 2 4 6\n",
    "vertex colours, normals, quads": _COLOURED + _NRM
    + "f 1//1 3//1 5//2\nf 3//3 7//1 5//2 6//4\n",
    "quads": _GRID + "f 1 3 9 7\nf 2 4 10 8\nf 3 5 11 9\n",
    "pentagons": _GRID + "f 1 3 5 11 7\nf 2 4 6 12 8\n",
    "mixed polygons": _GRID + "f 1 3 5\nf 1 3 9 7\nf 2 4 6 12 10 8\nf 5 11 9\n",
    "negative indices": _GRID + "f -18 -16 -14\nf 3 -12 5\nf -1 -3 -5 -7\n",
    "v/vt": _GRID + _TEX + "f 1/1 3/2 5/3\nf 3/2 7/4 5/3\nf 1/5 3/2 9/3 7/4\n",
    "v//vn": _GRID + _NRM + "f 1//1 3//1 5//2\nf 3//3 7//1 5//2\nf 5//4 7//1 9//2\n",
    "v/vt/vn": _GRID + _TEX + _NRM + "f 1/1/1 3/2/1 5/3/2\nf 3/2/3 7/4/1 5/3/2 6/1/4\n",
    "negative vt vn": _GRID + _TEX + _NRM + "f 1/-1/-1 3/-2/1 5/3/-4\nf 3/2/3 7/-5/1 5/3/2\n",
    "vt out of range": _GRID + _TEX + "f 1/1 3/2 5/9\nf 3/2 7/4 5/3\n",
    "vn out of range": _GRID + _NRM + "f 1//1 3//7 5//2\n",
    "vt without vt lines": _GRID + "f 1/1 3/2 5/3\n",
    "materials": _GRID + _TEX + "mtllib none.mtl\no a\nf 1 3 5\nusemtl red\nf 3 7 5\n"
    "g side\nusemtl blue\nf 2/1 4/2 6/3\nusemtl red\ns 1\nf 7 9 11\nusemtl blue\n"
    "f 8/2 10/3 12/4\nusemtl \nf 1 2 3\n",
    "objects and comments": "# made by hand\no first\n" + _GRID + "g g1\nf 1 3 5\no second\n"
    "f 2 4 6\nl 1 2\n# the end",
    "unused and repeated vertices": _GRID + "v 0 0 0\nv 1 0 0\nf 19 3 20\nf 1 3 2\nf 1 3 2\n",
    # float32's largest in a vertex no face uses (a mesh reaching it is refused: MAX_WORLD)
    "numbers": "v 0.1 1e-3 -2.5E+2\nv 123456789.123456789 0.30000000000000004 -0\n"
    "v 3.4028234663852886e17 1.4e-45 +7\nv 1.5 .25 3.\nv 3.4028234663852886e38 -1e-320 1\n"
    "f 1 2 3\nf 1 3 4\n",
    "crlf": (_GRID + "f 1 3 5\nf 3 7 5\n").replace("\n", "\r\n"),
    "tabs inside lines": _GRID + "f 1\t3 5\nf 3 7\t 5 \n",
}


@pytest.mark.parametrize("case", sorted(OBJ_CASES))
def test_fast_obj_reader_matches_trimesh(tmp_path, case):
    assert_same_mesh(write(tmp_path / "case.obj", OBJ_CASES[case]))


OBJ_LEFT_TO_TRIMESH = {
    "line continuation": _GRID + "f 1 3 \\\n5\nf 3 7 5\n",
    "usemtl inside a comment": _GRID + "f 1 3 5\n# usemtl x\nf 3 7 5\n",
    "corner layouts mixed": _GRID + _TEX + "f 1 3 5\nf 3/1 7/2 5/3\n",
    "vertex widths mixed": "v 0 0 0\nv 1 0 0 1\nv 0 1 0\nf 1 2 3\n",
    "indented line": _GRID + "  f 1 3 5\nf 3 7 5\n",
    "tab after keyword": _GRID + "f\t1 3 5\nf 3 7 5\n",
}


@pytest.mark.parametrize("case", sorted(OBJ_LEFT_TO_TRIMESH))
def test_unusual_obj_is_left_to_trimesh(tmp_path, case):
    assert_same_mesh(write(tmp_path / "case.obj", OBJ_LEFT_TO_TRIMESH[case]), fast_path=False)


@pytest.mark.parametrize("uvs", ["vt 0 0\nvt 1 0\nvt 1 1\nvt 0 1\nvt 0.5 0.25\n",
                                 "vt 0 0 0\nvt 1 0 0\nvt 1 1 0\nvt 0 1 0\nvt 0.5 0.25 0\n"])
def test_obj_vertex_colours_beside_uvs(tmp_path, uvs):
    """trimesh drops 'v x y z r g b' colours where a geometry has uvs (and the fast reader
    dropped them always, without a word); the fast reader now keeps them, each vertex its colour
    as in the same file without uvs (read alike by both paths), and trimesh's path, which reads
    such a file when it has materials, names the loss."""
    faces = "f 1/1 3/2 5/3\nf 3/2 7/4 5/3 6/1\n"
    with_uv = write(tmp_path / "uv.obj", _COLOURED + uvs + faces)
    plain = assert_same_mesh(write(tmp_path / "plain.obj", _COLOURED + "f 1 3 5\nf 3 7 5 6\n"))

    def colour_at(mesh):
        return {tuple(mesh.positions[mesh.wedge_position[w]]): tuple(mesh.wedge_color[w])
                for w in range(len(mesh.wedge_position))}

    fast = load_module._load(with_uv, fast=True)
    assert fast.wedge_uv is not None and fast.wedge_color is not None
    assert colour_at(fast) == colour_at(plain)
    with pytest.warns(MeshWarning, match="vertex colours beside uvs .* drawn without them"):
        slow = load_module._load(with_uv, fast=False)
    assert slow.wedge_color is None
    # colours written 0..255 read as 0..1, clipped: named
    loud = _GRID.splitlines()
    text = "".join(f"{line} 255 {k} 0\n" for k, line in enumerate(loud)) + "f 1 3 5\n"
    with pytest.warns(MeshWarning, match="vertex colours above 1"):
        load_mesh(write(tmp_path / "bytes.obj", text))


def test_comments_after_the_data_of_a_line_are_read(tmp_path):
    """Trimesh cannot read an OBJ with a comment after a vertex or face line's data (numpy's
    "could not be read to its end"); the fast reader ends such a line at its '#', and reads
    what trimesh reads of the file without the comments, bit for bit."""
    from preprocess import load as load_module

    body = _GRID + _TEX + _NRM + "f 1/1/1 3/2/1 5/3/2\nf 3/2/3 7/4/1 5/3/2 6/1/4\n"
    lines = body.splitlines()
    noted = "\n".join(f"{line} # note {k}" if k % 3 == 0 else
                      f"{line}#n" if k % 3 == 1 else line
                      for k, line in enumerate(lines)) + "\n# the end\n"
    mesh = load_module._load(write(tmp_path / "noted.obj", noted), fast=True)
    ref = load_module._load(write(tmp_path / "plain.obj", body), fast=False)
    for field in ("positions", "triangles", "wedge_position", "wedge_normal", "wedge_uv"):
        assert getattr(mesh, field).tobytes() == getattr(ref, field).tobytes(), field
    with pytest.raises(MeshError, match=r"line 1: a comment at the end of a vertex or face "
                                        r"line.*put it on a line of its own"):
        # a line continuation: left to trimesh, which cannot read the comment
        load_mesh(write(tmp_path / "continued.obj", "v 0 0 0 # a\n" + _GRID + "f 1 2 \\\n3\n"))


def test_fast_obj_reader_on_random_files(tmp_path):
    """Random OBJ files mixing every feature above, seeded."""
    rng = np.random.default_rng(11)
    for i in range(40):
        nv = int(rng.integers(6, 30))
        lines = [f"v {x!r} {y!r} {z!r}" for x, y, z in rng.normal(size=(nv, 3)).tolist()]
        lines += [f"vt {u} {v}" for u, v in rng.integers(0, 3, (8, 2)).tolist()]
        lines += [f"vn {a!r} {b!r} {c!r}" for a, b, c in rng.normal(size=(5, 3)).tolist()]
        layout = int(rng.integers(0, 4))
        for _ in range(int(rng.integers(1, 25))):
            if rng.random() < 0.15:
                lines.append(f"usemtl m{rng.integers(0, 3)}")
            k = int(rng.choice([3, 4, 6])) if i % 2 else 3
            corners = []
            for v in rng.choice(nv, size=k, replace=False).tolist():
                vi = v + 1 if rng.random() < 0.7 else v - nv
                t, n = int(rng.integers(1, 9)), int(rng.integers(1, 6))
                corners.append([f"{vi}", f"{vi}/{t}", f"{vi}//{n}", f"{vi}/{t}/{n}"][layout])
            lines.append("f " + " ".join(corners))
        assert_same_mesh(write(tmp_path / f"random{i}.obj", "\n".join(lines) + "\n"))


def _ply_bytes(fmt: str, vertices: np.ndarray, polygons: list, *, normals=None,
               face_flags: bool = False) -> bytes:
    """A PLY file: float x y z (and nx ny nz), uchar red; int vertex_indices (and uchar flags)."""
    head = ["ply", f"format {fmt} 1.0", "comment by hand", f"element vertex {len(vertices)}",
            "property float x", "property float y", "property float z"]
    if normals is not None:
        head += ["property float nx", "property float ny", "property float nz"]
    head += ["property uchar red", f"element face {len(polygons)}",
             "property list uchar int vertex_indices"]
    head += ["property uchar flags"] if face_flags else []
    text = ("\n".join([*head, "end_header"]) + "\n").encode()
    if fmt == "ascii":
        rows = []
        for i, v in enumerate(vertices.tolist()):
            extra = [] if normals is None else normals[i].tolist()
            rows.append(" ".join(repr(x) for x in [*v, *extra]) + " 200")
        for poly in polygons:
            rows.append(" ".join(str(x) for x in [len(poly), *poly, *([3] if face_flags else [])]))
        return text + ("\n".join(rows) + "\n").encode()
    o = "<" if fmt == "binary_little_endian" else ">"
    fields = [(a, o + "f4") for a in "xyz"]
    fields += [] if normals is None else [(a, o + "f4") for a in ("nx", "ny", "nz")]
    rec = np.zeros(len(vertices), [*fields, ("red", "u1")])
    for k, a in enumerate("xyz"):
        rec[a] = vertices[:, k]
    if normals is not None:
        for k, a in enumerate(("nx", "ny", "nz")):
            rec[a] = normals[:, k]
    blob = rec.tobytes()
    for poly in polygons:
        blob += np.uint8(len(poly)).tobytes() + np.asarray(poly, o + "i4").tobytes()
        blob += b"\x03" if face_flags else b""
    return text + blob


@pytest.mark.parametrize("fmt", ["ascii", "binary_little_endian", "binary_big_endian"])
@pytest.mark.parametrize("corners", [3, 4, 5])
def test_fast_ply_reader_matches_trimesh(tmp_path, fmt, corners):
    rng = np.random.default_rng(corners)
    vertices = rng.integers(0, 3, (20, 3)).astype(np.float32) + rng.random((20, 3)) * 0.5
    polygons = [rng.choice(20, size=corners, replace=False).tolist() for _ in range(30)]
    path = tmp_path / "mesh.ply"
    path.write_bytes(_ply_bytes(fmt, vertices, polygons))
    assert_same_mesh(path)
    path.write_bytes(_ply_bytes(fmt, vertices, polygons, normals=rng.normal(size=(20, 3)),
                                face_flags=True))
    assert_same_mesh(path)


def test_ply_left_to_trimesh(tmp_path):
    ico = trimesh.creation.icosphere(subdivisions=1)
    ico.visual = trimesh.visual.TextureVisuals(uv=np.random.default_rng(1).random((42, 2)))
    path = tmp_path / "uv.ply"
    ico.export(path)  # uvs: trimesh merges them to 1e-8 and splits the vertices
    assert_same_mesh(path, fast_path=False)
    path = tmp_path / "mixed.ply"
    vertices = np.eye(4, 3, dtype=np.float32)
    path.write_bytes(_ply_bytes("binary_little_endian", vertices, [[0, 1, 2], [0, 2, 3, 1]]))
    assert read_parts(path, "ply", path.name) is None  # trimesh assumes one polygon size


@pytest.mark.parametrize("file_type", ["stl", "stl_ascii"])
def test_fast_stl_reader_matches_trimesh(tmp_path, file_type):
    mesh = trimesh.creation.icosphere(subdivisions=2)
    mesh.vertices += np.random.default_rng(0).normal(size=mesh.vertices.shape) * 1e-3
    path = tmp_path / "ico.stl"
    path.write_bytes(mesh.export(file_type=file_type).encode() if file_type == "stl_ascii"
                     else mesh.export(file_type=file_type))
    assert assert_same_mesh(path).triangle_count == 320


OFF_CASES = {
    "triangles": "OFF\n4 2 0\n0 0 0\n1 0 0\n0 1 0\n1 1 0.5\n3 0 1 2\n3 1 3 2\n",
    "quads, one-line header, blank lines": "OFF 6 2 0\n\n0 0 0\n1 0 0\n1 1 0\n0 1 0\n2 0 0\n"
    "2 1 0\n4 0 1 2 3\n4 1 4 5 2\n",
    "triangles and quads": "OFF\n6 3 0\n0 0 0\n1 0 0\n1 1 0\n0 1 0\n2 0 0\n2 1 0\n"
    "4 0 1 2 3\n3 1 4 5\n3 1 5 2\n",
    "comments on lines of their own": "OFF\n# made by hand\n4 2 0\n0 0 0\n1 0 0\n# half\n"
    "0 1 0\n1 1 0.5\n3 0 1 2\n3 1 3 2\n",
}


@pytest.mark.parametrize("case", sorted(OFF_CASES))
def test_fast_off_reader_matches_trimesh(tmp_path, case):
    assert_same_mesh(write(tmp_path / "case.off", OFF_CASES[case]))


@pytest.mark.parametrize("rows, expected", [
    # MeshLab's 0..255 with alpha, and Geomview's 0..1 without
    (["0 0 0 255 0 0 255", "1 0 0 0 255 0 128", "0 1 0 0 0 255 255", "1 1 1 255 255 255 255"],
     [[1, 0, 0, 1], [0, 1, 0, 128 / 255], [0, 0, 1, 1], [1, 1, 1, 1]]),
    (["0 0 0 1 0 0", "1 0 0 0 1 0", "0 1 0 0 0 1", "1 1 1 0.5 0.5 0.5"],
     [[1, 0, 0, 1], [0, 1, 0, 1], [0, 0, 1, 1], [0.5, 0.5, 0.5, 1]]),
])
def test_coff_vertex_colours_are_read(tmp_path, rows, expected):
    """COFF's 'x y z r g b [a]' colours were dropped without a word (trimesh drops them; so did
    the fast reader): read as sRGB like PLY's and OBJ's; values after a plain OFF vertex and face
    colours, which are not drawn, are named."""
    from preprocess.tess.color import srgb_to_linear

    text = "COFF\n4 2 0\n" + "\n".join(rows) + "\n3 0 1 2\n3 1 3 2\n"
    mesh = load_mesh(write(tmp_path / "c.off", text))
    want = np.array(expected, np.float64)
    want[:, :3] = srgb_to_linear(want[:, :3])
    got = {tuple(mesh.positions[p]): mesh.wedge_color[w]
           for w, p in enumerate(mesh.wedge_position)}
    for row, colour in zip(rows, want, strict=True):
        position = tuple(np.float32(float(x)) for x in row.split()[:3])
        np.testing.assert_allclose(got[position], colour, atol=1e-6)
    with pytest.warns(MeshWarning, match="face colours .* are not supported"):
        load_mesh(write(tmp_path / "f.off", "OFF\n3 1 0\n0 0 0\n1 0 0\n0 1 0\n"
                        "3 0 1 2 255 0 0\n"))
    with pytest.warns(MeshWarning, match="no COFF colour"):
        load_mesh(write(tmp_path / "x.off", "OFF\n3 1 0\n0 0 0 7\n1 0 0 7\n0 1 0 7\n"
                        "3 0 1 2\n"))


OFF_COMMENTED = "OFF # a header\n# own line\n4 2 0\n0 0 0 # a vertex\n1 0 0#x\n0 1 0\n1 1 0.5\n" \
    "3 0 1 2 # the first face\n3 1 3 2\n# the end\n"


def test_off_comments_are_read_where_trimesh_lost_a_face(tmp_path):
    """Trimesh's comment stripping copies the text before a comment after a line's data back
    into the file: with one after the first face, it read one triangle of two, without a word.
    The fast reader ends each line at its '#': what trimesh reads of the file without them."""
    from preprocess import load as load_module

    mesh = load_module._load(write(tmp_path / "noted.off", OFF_COMMENTED), fast=True)
    plain = "".join(line.split("#")[0].rstrip() + "\n" for line in OFF_COMMENTED.splitlines())
    ref = load_module._load(write(tmp_path / "plain.off", plain), fast=False)
    assert mesh.triangle_count == 2
    for field in ("positions", "triangles", "wedge_position", "wedge_normal"):
        assert getattr(mesh, field).tobytes() == getattr(ref, field).tobytes(), field
    # where trimesh must read it, it is refused rather than misread
    with pytest.raises(MeshError, match=r"line 1: a comment after a line's data, which trimesh"):
        load_module._load(tmp_path / "noted.off", fast=False)


def test_fast_off_reader_reads_pentagons(tmp_path):
    # trimesh 4.x/5.x fails on OFF polygons larger than quads under numpy 2 (a string multiply
    # in its fan code); the fast reader fans them as that code means to.
    text = "OFF\n5 1 0\n0 0 0\n1 0 0\n2 1 0\n1 2 0\n0 1 0\n5 0 1 2 3 4\n"
    mesh = load_mesh(write(tmp_path / "pentagon.off", text))
    np.testing.assert_array_equal(mesh.position_triangles, [[0, 1, 2], [0, 2, 3], [0, 3, 4]])


@pytest.mark.parametrize("name", ["beast.obj", "stanford-bunny.obj",
                                  "textured/spot/spot_quadrangulated.obj",
                                  "textured/spot/spot_control_mesh.obj"])
@pytest.mark.slow
def test_fast_reader_matches_trimesh_on_real_meshes(name, shared):
    assert_same_mesh(shared(name))


def test_a_bug_in_a_fast_reader_falls_back_to_trimesh(tmp_path, monkeypatch):
    def broken(raw, label):
        raise RuntimeError("bug")

    monkeypatch.setitem(parts._READERS, "obj", broken)
    mesh = load_mesh(write(tmp_path / "quads.obj", QUAD_OBJ))
    assert mesh.triangle_count == 4


def test_number_parser_matches_numpy(tmp_path):
    """Decimal text to float64 exactly as numpy's parser (strtod): the fast path where it is
    exact, numpy for the rest."""
    rng = np.random.default_rng(5)
    values = np.concatenate([rng.normal(size=300) * 10.0 ** rng.integers(-30, 30, 300),
                             rng.random(100), [0.1, 0.2, 0.3, 1e22, 1e23, 5e-324, 2.0**53 + 1]])
    texts = [repr(x) for x in values.tolist()] + [f"{x:.6f}" for x in values[:100]]
    texts += [f"{x:.25e}" for x in values[:50]] + ["-0", "+1.5", "1.", ".5", "1e400", "nan"]
    text = " ".join(texts)
    got = _table(text.encode(), 0, 1, skip_blank=False)
    with np.errstate(all="ignore"):
        expect = np.fromstring(text, sep=" ")
    assert got is not None
    np.testing.assert_array_equal(got[0].view(np.uint64)[:-1], expect.view(np.uint64)[:-1])
    assert np.isnan(got[0][-1])


# --------------------------------------------------------------------------------------------------
# errors from files: one line, naming the file


def _error(path: Path) -> str:
    with pytest.raises(MeshError) as info:
        load_mesh(path)
    message = str(info.value)
    assert "\n" not in message, message
    assert path.name in message, message
    return message


def test_error_missing_file(tmp_path):
    assert "not found" in _error(tmp_path / "nothing.obj")


def test_error_unsupported_suffix(tmp_path):
    assert "unsupported" in _error(write(tmp_path / "mesh.fbx", "whatever"))


def test_error_unreadable(tmp_path):
    for name in ("junk.ply", "junk.glb", "junk.obj", "junk.stl"):
        path = tmp_path / name
        path.write_bytes(b"garbage\x00\x01 not a mesh at all")
        _error(path)
    _error(write(tmp_path / "empty.obj", ""))


def test_error_point_cloud(tmp_path):
    path = tmp_path / "cloud.ply"
    trimesh.PointCloud(np.random.default_rng(0).random((10, 3))).export(path)
    assert "not a triangle mesh" in _error(path)
    points_obj = write(tmp_path / "points.obj", "v 0 0 0\nv 1 0 0\nv 1 1 0\n")
    assert "not a triangle mesh" in _error(points_obj)
    lines_obj = write(tmp_path / "lines.obj", "v 0 0 0\nv 1 0 0\nv 1 1 0\nl 1 2 3\n")
    assert "not a triangle mesh" in _error(lines_obj)


def test_error_nan_coordinates(tmp_path):
    assert "NaN" in _error(write(tmp_path / "nan.obj", "v 0 0 nan\nv 1 0 0\nv 1 1 0\nf 1 2 3\n"))
    assert "NaN" in _error(write(tmp_path / "inf.obj", "v 0 0 0\nv inf 0 0\nv 1 1 0\nf 1 2 3\n"))


@pytest.mark.parametrize("face", ["1 2 4", "1 2 99", "1 2 -7", "0 1 2", "1 2 3 100"])
def test_error_obj_index_out_of_range(tmp_path, face):
    path = write(tmp_path / "oob.obj", f"v 0 0 0\nv 1 0 0\nv 1 1 0\nf 1 2 3\nf {face}\n")
    assert "out of range" in _error(path)


def _relative_obj(mtl: bool, objects: bool) -> tuple[str, str]:
    """An OBJ whose faces each define their three corners (v, vt, vn) just above them and name
    them -3, -2, -1, and its twin with the absolute indices those mean."""
    p, f = _small_sphere()
    rel, ab = ["mtllib m.mtl\nusemtl red\n"] if mtl else [""], []
    for k, tri in enumerate(f):
        head = f"o part{k // 40}\n" if objects and k % 40 == 0 else ""
        block = "".join(f"v {x} {y} {z}\nvt {x / 2 + 0.5} {y / 2 + 0.5}\nvn {x} {y} {z}\n"
                        for x, y, z in p[tri])
        rel.append(head + block + "f -3/-3/-3 -2/-2/-2 -1/-1/-1\n")
        a = 3 * k
        ab.append(head + block + f"f {a + 1}/{a + 1}/{a + 1} {a + 2}/{a + 2}/{a + 2} "
                  f"{a + 3}/{a + 3}/{a + 3}\n")
    return "".join(rel), rel[0] + "".join(ab)


def _small_sphere():
    from assets.shapes import geodesic_sphere_arrays

    p, f = geodesic_sphere_arrays(2)
    return np.asarray(p, np.float32), np.asarray(f)


@pytest.mark.parametrize("mtl, objects", [(False, False), (True, False), (False, True)])
def test_relative_obj_indices_count_back_from_their_line(tmp_path, mtl, objects):
    """A negative OBJ index counts back from the last vertex (uv, normal) defined above its line;
    trimesh counts from the end of the whole file's list, so a file that defines each face's
    corners just above it read as one triangle repeated (80 faces "duplicated", 1 kept). Read
    by the fast reader, by trimesh (a material library: rewritten to absolute indices first) and
    as a scene of objects, each is its absolute twin exactly."""
    from preprocess.scene_import import read_scene

    (tmp_path / "m.mtl").write_text("newmtl red\nKd 0.8 0.1 0.1\n")
    rel, ab = _relative_obj(mtl, objects)
    a, b = write(tmp_path / "rel.obj", rel), write(tmp_path / "abs.obj", ab)
    if objects:
        ra, rb = read_scene(a), read_scene(b)
        pairs = [(ra.meshes[k], rb.meshes[k]) for k in rb.meshes]
        assert len(pairs) == 2
    else:
        pairs = [(load_mesh(a), load_mesh(b))]
    for m, ref in pairs:
        assert m.triangle_count == ref.triangle_count > 1
        for field in ("positions", "triangles", "wedge_position", "wedge_normal", "wedge_uv"):
            assert getattr(m, field).tobytes() == getattr(ref, field).tobytes(), field
    # before the first vertex: one line naming it, on either reader's path
    head = "mtllib m.mtl\nusemtl red\n" if mtl else ""
    bad = write(tmp_path / "bad.obj", head + "v 0 0 0\nv 1 0 0\nv 1 1 0\nf -1 -2 -4\n")
    assert f"line {3 + head.count(chr(10)) + 1}: a relative face index out of range" in \
        _error(bad)


@pytest.mark.parametrize("face", ["1/1 2/1 9/1", "1//1 -9//1 2//1", "1/1/1 2/1/1 3/1/1 0/1/1"])
def test_error_obj_index_out_of_range_with_attributes(tmp_path, face):
    text = f"v 0 0 0\nv 1 0 0\nv 1 1 0\nvt 0 0\nvn 0 0 1\nf 1/1/1 2/1/1 3/1/1\nf {face}\n"
    assert "out of range" in _error(write(tmp_path / "oob.obj", text))


def test_error_off_and_binary_ply_index_out_of_range(tmp_path):
    text = "OFF\n3 2 0\n0 0 0\n1 0 0\n0 1 0\n3 0 1 2\n3 0 1 7\n"
    assert "out of range" in _error(write(tmp_path / "oob.off", text))
    path = tmp_path / "oob.ply"
    path.write_bytes(_ply_bytes("binary_little_endian", np.eye(3, dtype=np.float32),
                                [[0, 1, 2], [0, 1, -1]]))
    assert "out of range" in _error(path)


def test_error_ply_index_out_of_range(tmp_path):
    text = (
        "ply\nformat ascii 1.0\nelement vertex 3\nproperty float x\nproperty float y\n"
        "property float z\nelement face 1\nproperty list uchar int vertex_indices\nend_header\n"
        "0 0 0\n1 0 0\n0 1 0\n3 0 1 5\n"
    )
    assert "out of range" in _error(write(tmp_path / "oob.ply", text))


def test_error_all_degenerate(tmp_path):
    path = write(tmp_path / "flat.obj", "v 0 0 0\nv 1 0 0\nv 2 0 0\nf 1 2 3\nf 1 1 2\n")
    assert "degenerate" in _error(path)


# --------------------------------------------------------------------------------------------------
# real meshes


@pytest.fixture
def shared(shared_assets):
    def find(name: str) -> Path:
        path = shared_assets / name
        assert path.exists(), f"{path} missing: CI runs with ../shared beside the checkout"
        return path

    return find


def test_real_bunny(shared):
    mesh = load_mesh(shared("stanford-bunny.obj"))
    assert_valid(mesh)
    assert (mesh.triangle_count, mesh.vertex_count) == (69_451, 34_834)


def test_real_beast_quads_uvs_seams(shared):
    mesh = load_mesh(shared("beast.obj"), crease_angle=180)  # smooth normals
    assert_valid(mesh)
    assert mesh.triangle_count == 64_618
    assert mesh.wedge_uv is not None
    assert len(mesh.wedge_position) == 33_963  # the README's vertex count: (position, uv) pairs
    assert mesh.vertex_count == 32_311  # welded positions: seams share them
    assert mesh.vertex_count < len(mesh.wedge_position)
    # the file has no normals: by default, edges sharper than 45 degrees are creases, which add
    # wedges where two or more meet a position
    creased = load_mesh(shared("beast.obj"))
    assert creased.vertex_count == 32_311
    assert 33_963 < len(creased.wedge_position) < 1.2 * 33_963


@pytest.mark.slow
def test_real_igea(shared):
    mesh = load_mesh(shared("igea.obj"))
    assert (mesh.triangle_count, mesh.vertex_count) == (268_686, 134_345)
    # The assets README calls igea open at the neck, but this file is closed: every edge is used
    # twice and V - E + F == 2.
    undirected, _ = edge_use_counts(mesh)
    assert (undirected == 2).all()


def test_real_bunny_has_open_holes(shared):
    undirected, _ = edge_use_counts(load_mesh(shared("stanford-bunny.obj")))
    assert (undirected == 1).any(), "holes in the base"


# --------------------------------------------------------------------------------------------------
# procedural assets


@pytest.mark.parametrize("n", [1, 2, 7])
def test_geodesic_sphere(n):
    mesh = geodesic_sphere(n)
    assert_valid(mesh)
    assert mesh.triangle_count == 20 * n * n
    assert mesh.vertex_count == 10 * n * n + 2
    assert_closed_manifold(mesh)
    np.testing.assert_allclose(np.linalg.norm(mesh.positions, axis=1), 1.0, atol=1e-6)
    assert signed_volume(mesh) > 0


def test_rock_is_closed_manifold_and_deterministic():
    assert DEFAULT_ASSET == "rock"
    mesh = make_rock(30_000, seed=3)
    assert_valid(mesh)
    assert abs(mesh.triangle_count - 30_000) <= 0.05 * 30_000
    assert_closed_manifold(mesh)
    assert signed_volume(mesh) > 0
    again = make_rock(30_000, seed=3)
    np.testing.assert_array_equal(mesh.positions, again.positions)
    np.testing.assert_array_equal(mesh.triangles, again.triangles)
    other = make_rock(30_000, seed=4)
    assert not np.array_equal(mesh.positions, other.positions)
    extent = mesh.positions.max(axis=0) - mesh.positions.min(axis=0)
    assert (extent > 1.0).all() and (extent < 4.0).all()


def test_rock_triangle_count_within_5_percent():
    # what make_rock builds is 20 n^2 triangles: within 5% of the count asked from about 9,000
    # up (steps of 20 (2n + 1)), within 10% from 2,000
    for triangles in np.geomspace(2_000, 4_000_000, 200).astype(int):
        n = rock_resolution(int(triangles))
        share = abs(20 * n * n - triangles) / triangles
        assert share <= (0.05 if triangles >= 9_000 else 0.10), (triangles, n)
    for triangles in (2_700, 30_000):
        n = rock_resolution(triangles)
        assert make_rock(triangles, seed=1).triangle_count == 20 * n * n


@pytest.mark.slow
def test_terrain_has_open_border_and_uvs():
    res = 24
    mesh = make_terrain(resolution=res, seed=1)
    assert_valid(mesh)
    assert mesh.triangle_count == 2 * res * res
    assert mesh.vertex_count == (res + 1) ** 2
    assert mesh.wedge_uv is not None
    undirected, directed = edge_use_counts(mesh)
    assert (undirected == 1).sum() == 4 * res
    assert (directed == 1).all()
    assert (mesh.wedge_normal[:, 1] > 0).all(), "faces up"


def test_fbm_kernel_matches_numpy_reference():
    p = np.random.default_rng(5).normal(size=(500, 3)) * 4.0
    for ridged in (False, True):
        fast = fbm(p, 4, seed=2, frequency=1.3, ridged=ridged)
        ref = fbm(p, 4, seed=2, frequency=1.3, ridged=ridged, reference=True)
        np.testing.assert_allclose(fast, ref, rtol=0, atol=1e-12)


def test_default_mesh():
    mesh = default_mesh(triangles=5_000)
    assert mesh.name.startswith(DEFAULT_ASSET)
    assert abs(mesh.triangle_count - 5_000) <= 0.05 * 5_000
