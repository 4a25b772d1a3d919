"""glTF primitive modes (`preprocess.io.gltf_primitives`): triangle strips and fans made
triangles as glTF winds them, indexed and not, beside triangle lists and alone; points and lines
named in a warning as left out, and a file of nothing else refused in one line."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from assets.shapes import geodesic_sphere_arrays
from preprocess.load import load_mesh
from preprocess.mesh import MeshWarning

V, F = geodesic_sphere_arrays(4)  # (162, 3) unit sphere, (320, 3) outward
V = V.astype(np.float32)


def _grid_strip() -> tuple[np.ndarray, np.ndarray]:
    """A 2 x 5 vertex grid in the z = 0 plane and its strip, 8 triangles facing +z:

        5 - 6 - 7 - 8 - 9       strip 5 0 6 1 7 2 8 3 9 4: (5 0 6) (0 1 6) reversed to
        | \\ | \\ | \\ | \\ |       (6 0 1), (6 1 7) ... every other triangle turned
        0 - 1 - 2 - 3 - 4
    """
    x, y = np.meshgrid(np.arange(5), np.arange(2))
    v = np.stack([x.ravel(), y.ravel(), np.zeros(10)], 1).astype(np.float32)
    return v, np.array([5, 0, 6, 1, 7, 2, 8, 3, 9, 4], np.uint32)


def _fan() -> tuple[np.ndarray, np.ndarray]:
    """A hexagon's centre (vertex 0) and rim counter-clockwise (1..7, 7 = 1 closing it): a fan
    of 6 triangles facing +z."""
    a = np.radians(np.arange(7) * 60.0)
    rim = np.stack([np.cos(a), np.sin(a), np.zeros(7)], 1)
    return np.concatenate([[[0, 0, 0]], rim]).astype(np.float32), np.arange(8, dtype=np.uint32)


def _facing(mesh) -> np.ndarray:
    """Each triangle's geometric normal's z (the surfaces here lie in z = 0)."""
    p = mesh.positions.astype(np.float64)[mesh.position_triangles]
    return np.cross(p[:, 1] - p[:, 0], p[:, 2] - p[:, 0])[:, 2]


def _loaded(path):
    with warnings.catch_warnings():
        warnings.simplefilter("error", MeshWarning)  # a repaired winding would warn
        return load_mesh(path)


def test_strip_and_fan_triangles_are_wound_as_gltf_says():
    """The rule itself: a strip's i-th triangle (v_i, v_i+1, v_i+2), every other one turned;
    a fan's (v_i+1, v_i+2, v_0); a list three by three."""
    from preprocess.io.gltf_primitives import triangles

    np.testing.assert_array_equal(triangles(5, np.array([0, 1, 2, 3, 4]), "t"),
                                  [[0, 1, 2], [2, 1, 3], [2, 3, 4]])
    np.testing.assert_array_equal(triangles(6, np.array([0, 1, 2, 3]), "t"),
                                  [[1, 2, 0], [2, 3, 0]])
    np.testing.assert_array_equal(triangles(4, np.array([0, 1, 2, 2, 1, 3]), "t"),
                                  [[0, 1, 2], [2, 1, 3]])
    assert triangles(6, np.array([0, 1]), "t").shape == (0, 3)


@pytest.mark.parametrize("shape", ["strip", "fan"])
@pytest.mark.parametrize("indexed", [True, False])
def test_strips_and_fans_are_drawn_facing_one_way(tmp_path, gltf_builder, shape, indexed):
    """Mode 5 (strip) and 6 (fan), with indices and without (the vertices in strip order):
    every triangle drawn, all facing +z, nothing repaired."""
    v, order = _grid_strip() if shape == "strip" else _fan()
    b = gltf_builder()
    mode = 5 if shape == "strip" else 6
    prim = b.triangles(v, order, mode=mode) if indexed else b.triangles(v[order], mode=mode)
    b.node(mesh=b.mesh(prim))
    mesh = _loaded(b.write(tmp_path / f"{shape}.glb"))
    assert mesh.triangle_count == (8 if shape == "strip" else 6)
    assert (_facing(mesh) > 0).all()


def test_a_fan_beside_triangles_is_drawn_too(tmp_path, gltf_builder):
    """A sphere's triangle list and a fan beside it in one mesh: both drawn (the fan was left
    out without a word), and a fan alone is a mesh (was "no mesh found")."""
    v, order = _fan()
    b = gltf_builder()
    b.node(mesh=b.mesh(b.triangles(V, F), b.triangles(v + np.float32(3), order, mode=6)))
    assert _loaded(b.write(tmp_path / "both.glb")).triangle_count == 320 + 6
    alone = gltf_builder()
    alone.node(mesh=alone.mesh(alone.triangles(v, mode=6)))
    assert _loaded(alone.write(tmp_path / "fan.gltf")).triangle_count == 6


def test_points_and_lines_are_named_and_a_file_of_nothing_else_is_one_line(
        tmp_path, gltf_builder, load_error):
    b = gltf_builder()
    lines = [b.triangles(V[:4], [0, 1, 1, 2], mode=1), b.triangles(V[:5], mode=0)]
    b.node(mesh=b.mesh(b.triangles(V, F), *lines))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", MeshWarning)
        mesh = load_mesh(b.write(tmp_path / "mixed.glb"))
    assert mesh.triangle_count == 320
    assert [str(w.message) for w in caught] == ["mixed.glb: not drawn: points and lines"]
    only = gltf_builder()
    only.node(mesh=only.mesh(*[only.triangles(V[:4], mode=m) for m in (0, 1, 2, 3)]))
    assert load_error(only.write(tmp_path / "lines.glb")) == (
        "lines.glb: nothing to draw: the placed meshes have no triangles (their 4 primitives "
        "are points, lines or without positions)")
