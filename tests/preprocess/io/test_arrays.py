"""Raw arrays to a Mesh (preprocess.io.arrays.mesh_from_arrays): a clean mesh comes back unchanged,
bad arrays raise one line."""

from __future__ import annotations

import numpy as np
import pytest

from preprocess.load import mesh_from_arrays
from preprocess.mesh import MeshError


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
