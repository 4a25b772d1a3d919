"""The STL reader (preprocess.io.stl): binary and ASCII, what trimesh gives, bit for bit."""

from __future__ import annotations

import numpy as np
import pytest
import trimesh

from preprocess.load import load_mesh


def test_stl_welds_triangle_soup(tmp_path, assert_closed_manifold):
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


@pytest.mark.parametrize("file_type", ["stl", "stl_ascii"])
def test_fast_stl_reader_matches_trimesh(tmp_path, file_type, assert_same_mesh):
    mesh = trimesh.creation.icosphere(subdivisions=2)
    mesh.vertices += np.random.default_rng(0).normal(size=mesh.vertices.shape) * 1e-3
    path = tmp_path / "ico.stl"
    path.write_bytes(mesh.export(file_type=file_type).encode() if file_type == "stl_ascii"
                     else mesh.export(file_type=file_type))
    assert assert_same_mesh(path).triangle_count == 320
