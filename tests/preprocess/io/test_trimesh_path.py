"""trimesh's path (preprocess.io.trimesh_path): a glTF scene flattened into one mesh, each node's
geometry in world space."""

from __future__ import annotations

import numpy as np
import pytest
import trimesh

from preprocess.load import load_mesh


def test_glb_scene_is_flattened_with_transforms(tmp_path, assert_valid, assert_closed_manifold,
                                                signed_volume):
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


def test_quiet_silences_trimesh_and_keeps_our_warnings():
    # flatten runs inside quiet(): its MeshWarnings (per-face colours, NaN colours) were
    # silenced with trimesh's own
    import warnings

    from preprocess.io.trimesh_path import quiet
    from preprocess.mesh import MeshWarning, mesh_warning

    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        with quiet():
            warnings.warn("trimesh's own", UserWarning, stacklevel=1)
            mesh_warning("x.ply: per-face colours are not supported; drawn without them")
    assert [(w.category, str(w.message)) for w in got] == [
        (MeshWarning, "x.ply: per-face colours are not supported; drawn without them")]
