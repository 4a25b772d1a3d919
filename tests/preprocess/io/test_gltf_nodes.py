"""A glTF file's node tree placed by our own walk (`preprocess.io.gltf_nodes`): a mesh at the
end of a chain thousands of nodes deep loads in linear time where its world transform puts it
(trimesh's scene graph took 74 s for 800 nodes), and a node that scales its mesh to nothing is
left out with a warning, or refused in one line where nothing else is drawn."""

from __future__ import annotations

import time
import warnings

import numpy as np

from assets.shapes import geodesic_sphere_arrays
from preprocess.load import load_mesh
from preprocess.mesh import MeshWarning

V, F = geodesic_sphere_arrays(3)
V = V.astype(np.float32)


def test_a_mesh_at_the_end_of_a_deep_chain_loads_where_the_chain_puts_it(tmp_path,
                                                                        gltf_builder):
    """5,000 nodes, each turned 0.05 degrees about y and moved 1 cm along its x: the sphere at
    the end lands where the product of the 5,000 transforms puts it."""
    depth = 5_000
    half = np.radians(0.05) / 2
    local = {"translation": [0.01, 0.0, 0.0], "rotation": [0.0, np.sin(half), 0.0, np.cos(half)]}
    b = gltf_builder()
    mesh = b.mesh(b.triangles(V, F))
    first = b.node(**local, children=[1])
    for k in range(1, depth):
        b.node(root=False, **local, **({"children": [k + 1]} if k < depth - 1 else {"mesh": mesh}))
    assert first == 0 and len(b.tree["nodes"]) == depth
    path = b.write(tmp_path / "deep.gltf")
    t = time.perf_counter()
    got = load_mesh(path)
    print(f"\n{depth}-deep chain loaded in {time.perf_counter() - t:.2f} s")
    step = np.eye(4)
    c, s = np.cos(2 * half), np.sin(2 * half)
    step[:3, :3] = [[c, 0, s], [0, 1, 0], [-s, 0, c]]
    step[0, 3] = 0.01
    world = np.linalg.matrix_power(step, depth)
    want = V.astype(np.float64) @ world[:3, :3].T + world[:3, 3]
    assert got.triangle_count == len(F)
    np.testing.assert_allclose(got.positions.min(axis=0), want.min(axis=0), atol=1e-4)
    np.testing.assert_allclose(got.positions.max(axis=0), want.max(axis=0), atol=1e-4)
    assert np.linalg.norm(world[:3, 3]) > 10  # far from where an unplaced mesh would be


def test_a_node_scaled_to_nothing_is_left_out_with_a_warning(tmp_path, gltf_builder,
                                                             load_error):
    """Two nodes place the sphere, one scaled [0, 0, 0]: the other is drawn, the first named
    in a warning; where it is the only one, one line says there is nothing to draw."""
    b = gltf_builder()
    mesh = b.mesh(b.triangles(V, F))
    b.node(mesh=mesh, translation=[5.0, 0.0, 0.0])
    b.node(mesh=mesh, scale=[0.0, 0.0, 0.0])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", MeshWarning)
        got = load_mesh(b.write(tmp_path / "zero.glb"))
    assert got.triangle_count == len(F)
    np.testing.assert_allclose(got.positions.mean(axis=0), [5, 0, 0], atol=1e-6)
    assert [str(w.message) for w in caught] == [
        "zero.glb: node 1 scales mesh 0 to nothing (its transform is singular); left out"]
    only = gltf_builder()
    only.node(mesh=only.mesh(only.triangles(V, F)), scale=[0.0, 1.0, 1.0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MeshWarning)
        said = load_error(only.write(tmp_path / "flat.glb"))
    assert said == ("flat.glb: nothing to draw: every node that places a mesh scales it to "
                    "nothing (a singular transform)")


def _load_said(path) -> tuple[object, list[str]]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", MeshWarning)
        mesh = load_mesh(path)
    return mesh, [str(w.message) for w in caught if issubclass(w.category, MeshWarning)]


def test_a_matrix_beside_trs_is_drawn_as_the_matrix_and_named(tmp_path, gltf_builder):
    # glTF allows a matrix or TRS; with both, the walk used the matrix and trimesh composed both
    # (the sphere landed 1 further along x than the walk had placed it)
    b = gltf_builder()
    matrix = np.eye(4)
    matrix[:3, 3] = [5, 0, 0]
    b.node(mesh=b.mesh(b.triangles(V, F)), matrix=matrix.T.reshape(-1).tolist(),
           translation=[1, 2, 3])
    mesh, said = _load_said(b.write(tmp_path / "both.glb"))
    np.testing.assert_allclose(mesh.positions.mean(0), V.mean(0) + np.array([5, 0, 0]), atol=1e-5)
    assert said == ["both.glb: node 0 has both a matrix and translation (glTF allows one or the "
                    "other): drawn with the matrix"]


def test_a_rotation_is_normalized_and_one_of_length_zero_is_one_line(tmp_path, gltf_builder,
                                                                     load_error):
    b = gltf_builder()
    b.node(mesh=b.mesh(b.triangles(V, F)), rotation=[0, 0, 2, 2], translation=[3, 0, 0])
    mesh, _ = _load_said(b.write(tmp_path / "long.glb"))
    turned = V @ np.array([[0, 1, 0], [-1, 0, 0], [0, 0, 1]]) + [3, 0, 0]  # 90 degrees about z
    np.testing.assert_allclose(np.sort(mesh.positions, 0), np.sort(turned, 0), atol=1e-5)
    b = gltf_builder()
    b.node(mesh=b.mesh(b.triangles(V, F)), rotation=[0, 0, 0, 0])
    assert load_error(b.write(tmp_path / "zero.glb")) == (
        "zero.glb: node 0: rotation [0, 0, 0, 0] is not a rotation (a quaternion of length zero)")


def test_meshes_without_nodes_are_drawn_once_where_they_are(tmp_path, gltf_builder):
    # nothing places them: refused as "no node of its scene places a mesh" (trimesh drew them)
    b = gltf_builder()
    b.mesh(b.triangles(V, F))
    b.mesh(b.triangles(V + np.float32([4, 0, 0]), F))
    assert not b.tree.get("nodes")
    mesh, said = _load_said(b.write(tmp_path / "bare.gltf"))
    assert mesh.triangle_count == 2 * len(F)
    np.testing.assert_allclose(mesh.positions.max(0), V.max(0) + np.array([4, 0, 0]), atol=1e-5)
    assert said == ["bare.gltf: no node places its 2 meshes: each drawn once where it is"]
