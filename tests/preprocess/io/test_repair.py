"""Repair (preprocess.io.repair): degenerate and repeated triangles dropped."""

from __future__ import annotations

import numpy as np

from preprocess.io import repair
from preprocess.load import mesh_from_arrays


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


def test_repeated_triangles_in_a_long_fan():
    """Around a vertex with thousands of triangles the per-vertex lists give way to the hash
    table (same result, no quadratic time); the hub's fan is matched by sorting its edges
    (`normals.fan_normals`: one smooth normal, no repeat in the same direction)."""
    n = 3001
    angle = np.linspace(0.0, 2.0 * np.pi, n - 1, endpoint=False)
    pos = np.concatenate([[[0.0, 0.0, 0.0]], np.stack([np.cos(angle), np.sin(angle),
                                                       np.zeros(n - 1)], axis=1)])
    ring = np.arange(1, n)
    fan = np.stack([np.zeros(n - 1, np.int64), ring, np.roll(ring, -1)], axis=1)
    faces = np.concatenate([fan, fan[::7], fan[::5, [1, 2, 0]]])
    mesh = mesh_from_arrays(pos, faces)
    assert mesh.triangle_count == n - 1 and mesh.wedge_position.shape == (n,)
    np.testing.assert_allclose(mesh.wedge_normal, np.tile([0.0, 0.0, 1.0], (n, 1)), atol=1e-7)
    tri_pos = np.arange(n, dtype=np.int64)
    by_list = repair._clean_triangles(faces, tri_pos, pos.astype(np.float32), False)
    by_hash = repair._clean_triangles(faces, tri_pos, pos.astype(np.float32), True)
    assert by_list[2] == -1  # the list gave up
    np.testing.assert_array_equal(by_hash[0], fan)
    np.testing.assert_array_equal(np.flatnonzero(by_hash[1]), np.arange(n - 1))
