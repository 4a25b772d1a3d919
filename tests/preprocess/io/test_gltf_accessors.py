"""glTF accessors read right or refused in one line (`preprocess.io.gltf_accessors`): strides
(interleaved attributes, padded records; a stride glTF forbids), sparse accessors (over a view
or over zeros, for positions, normals, uvs, colours and indices; an index past the elements, a
block past its view), normalized integers, and a buffer's data: URI that is not base64. Each
file is written by `gltf_builder` (tests/preprocess/conftest.py); a file using a feature is
compared with the same geometry written plainly."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from assets.shapes import geodesic_sphere_arrays
from preprocess.load import load_mesh
from preprocess.mesh import MeshWarning

V, F = geodesic_sphere_arrays(4)  # (162, 3) unit sphere, (320, 3) outward
V = V.astype(np.float32)
F = F.astype(np.uint32)


def _loaded(path):
    with warnings.catch_warnings():
        warnings.simplefilter("error", MeshWarning)  # none of these files asks for a warning
        return load_mesh(path)


def _corners(mesh) -> dict[str, np.ndarray]:
    """Each triangle corner's position, normal, uv and colour, rows sorted: what a file draws,
    however the loader orders and welds it."""
    w = mesh.triangles.reshape(-1)
    cols = [mesh.positions[mesh.wedge_position[w]], mesh.wedge_normal[w]]
    for extra in (mesh.wedge_uv, mesh.wedge_color):
        if extra is not None:
            cols.append(extra[w].astype(np.float32))
    rows = np.concatenate(cols, axis=1).reshape(-1, 3 * sum(c.shape[1] for c in cols))
    return np.unique(rows, axis=0)


def _same_as_plain(path, plain):
    got, want = _corners(_loaded(path)), _corners(_loaded(plain))
    np.testing.assert_array_equal(got, want)


def test_interleaved_position_and_normal_are_read_with_their_stride(tmp_path, gltf_builder):
    """One view holds POSITION and NORMAL per vertex (byteStride 24, and 32 with padding): each
    is read at its offset, every stride-th byte, as the plain file has them."""
    pos, nrm = V * 2 + np.float32(3), -V  # inward normals: nothing the loader would compute
    plain = gltf_builder()
    plain.node(mesh=plain.mesh(plain.triangles(pos, F, NORMAL=nrm)))
    plain.write(tmp_path / "plain.glb")
    for stride in (24, 32):
        b = gltf_builder()
        p_acc, n_acc = b.interleaved(pos, nrm, stride=stride)
        b.node(mesh=b.mesh({"attributes": {"POSITION": p_acc, "NORMAL": n_acc},
                            "indices": b.accessor(F.reshape(-1))}))
        path = b.write(tmp_path / f"stride{stride}.glb")
        assert b.tree["bufferViews"][0]["byteStride"] == stride
        _same_as_plain(path, tmp_path / "plain.glb")
    mesh = _loaded(tmp_path / "stride24.glb")
    assert mesh.triangle_count == 320
    np.testing.assert_allclose(np.linalg.norm(mesh.positions - 3, axis=1), 2.0, rtol=1e-6)


@pytest.mark.parametrize("stride, said", [
    (4, "accessor 0 (buffer view 0): byteStride 4 is less than an element (12 bytes: VEC3 of "
        "float)"),
    (6, "accessor 0 (buffer view 0): byteStride 6 is not a multiple of 4 from 4 to 252"),
    (256, "accessor 0 (buffer view 0): byteStride 256 is not a multiple of 4 from 4 to 252"),
])
def test_a_stride_gltf_forbids_is_one_line(tmp_path, gltf_builder, load_error, stride, said):
    """A POSITION view with a byteStride of 4 (less than its 12-byte VEC3) drew a jagged
    sphere from overlapping bytes: refused, naming the accessor and the view."""
    b = gltf_builder()
    b.node(mesh=b.mesh(b.triangles(V, F)))
    path = b.write(tmp_path / "strided.glb",
                   lambda t: t["bufferViews"][0].update(byteStride=stride))
    assert load_error(path) == f"strided.glb: {said}"


def test_a_stride_on_the_indices_view_is_one_line(tmp_path, gltf_builder, load_error):
    b = gltf_builder()
    b.node(mesh=b.mesh(b.triangles(V, F)))
    path = b.write(tmp_path / "strided.glb",
                   lambda t: t["bufferViews"][1].update(byteStride=4))
    assert load_error(path) == ("strided.glb: accessor 1 (buffer view 1): indices are read from "
                                "a view with a byteStride (4); glTF allows one on vertex "
                                "attributes only")


def _sparse_sphere(b, at, moved, **attributes):
    """The sphere with its positions' elements `at` moved to `moved` by a sparse block."""
    pos = b.sparse(V, np.asarray(at, np.uint32), np.asarray(moved, np.float32))
    attrs = {"POSITION": pos, **attributes}
    b.node(mesh=b.mesh({"attributes": attrs, "indices": b.accessor(F.reshape(-1))}))


def test_sparse_positions_move_the_vertices_they_name(tmp_path, gltf_builder):
    """Two vertices pulled out by a sparse block over the positions' view draw where the block
    puts them (trimesh drew them unmoved)."""
    at = [5, 77]
    moved = V[at] * 1.5
    b = gltf_builder()
    _sparse_sphere(b, at, moved)
    path = b.write(tmp_path / "sparse.gltf")
    want = V.copy()
    want[at] = moved
    plain = gltf_builder()
    plain.node(mesh=plain.mesh(plain.triangles(want, F)))
    _same_as_plain(path, plain.write(tmp_path / "plain.gltf"))
    radii = np.sort(np.linalg.norm(_loaded(path).positions, axis=1))
    np.testing.assert_allclose(radii[-2:], 1.5, rtol=1e-6)


def test_sparse_positions_over_zeros_are_the_positions(tmp_path, gltf_builder):
    """An accessor without a view is zeros: a sparse block naming every element gives the
    positions (was refused: "all triangles are degenerate")."""
    b = gltf_builder()
    pos = b.sparse(len(V), np.arange(len(V)), V)
    b.node(mesh=b.mesh({"attributes": {"POSITION": pos}, "indices": b.accessor(F.reshape(-1))}))
    plain = gltf_builder()
    plain.node(mesh=plain.mesh(plain.triangles(V, F)))
    _same_as_plain(b.write(tmp_path / "zeros.glb"), plain.write(tmp_path / "plain.glb"))


def test_sparse_normals_uvs_colours_and_indices(tmp_path, gltf_builder):
    """A sparse block on each other accessor a primitive reads: normals, uvs and colours
    changed at some vertices, and an index pointing a corner at a vertex no triangle used."""
    pos = np.concatenate([V, [[0.0, 0.0, 3.0]]]).astype(np.float32)  # the last: unused
    n = len(pos)
    nrm, uv = pos / np.linalg.norm(pos, axis=1, keepdims=True), (pos[:, :2] + 1) / 2
    rgba = np.full((n, 4), 0.5, np.float32)
    at = np.array([3, 40, 99], np.uint32)
    new_nrm, new_uv = -nrm[at], uv[at] * 0.5
    new_rgba = np.array([[1, 0, 0, 1], [0, 1, 0, 1], [0, 0, 1, 1]], np.float32)
    idx = F.reshape(-1).copy()
    b = gltf_builder()
    prim = {"attributes": {"POSITION": b.accessor(pos), "NORMAL": b.sparse(nrm, at, new_nrm),
                           "TEXCOORD_0": b.sparse(uv, at, new_uv),
                           "COLOR_0": b.sparse(rgba, at, new_rgba)},
            "indices": b.sparse(idx, [0], [n - 1]), "material": 0}
    b.node(mesh=b.mesh(prim))
    b.tree["materials"] = [{}]  # trimesh reads uvs only for a primitive with a material
    path = b.write(tmp_path / "sparse.glb")
    nrm[at], uv[at], rgba[at] = new_nrm, new_uv, new_rgba
    idx[0] = n - 1
    plain = gltf_builder()
    plain.node(mesh=plain.mesh({**plain.triangles(pos, idx, NORMAL=nrm, TEXCOORD_0=uv,
                                                  COLOR_0=rgba), "material": 0}))
    plain.tree["materials"] = [{}]
    _same_as_plain(path, plain.write(tmp_path / "plain.glb"))
    mesh = _loaded(path)
    assert (mesh.positions == [0, 0, 3]).all(axis=1).any()
    assert mesh.wedge_uv is not None and mesh.wedge_color is not None


@pytest.mark.parametrize("case, said", [
    ("index past the elements", "accessor 0: sparse index 1000000 is past its 162 elements"),
    ("indices past their view", "accessor 0: its sparse indices read past the end of buffer "
                                "view 1 (12 bytes, the view holds 8)"),
    ("values past their view", "accessor 0: its sparse values read past the end of buffer "
                               "view 2 (36 bytes, the view holds 24)"),
    ("more than the elements", "accessor 0: its sparse block replaces 163 elements; it has "
                               "162"),
])
def test_a_sparse_block_that_cannot_be_read_is_one_line(tmp_path, gltf_builder, load_error,
                                                         case, said):
    at, moved = [5, 1_000_000], V[:2]

    def edit(tree):
        sparse = tree["accessors"][0]["sparse"]
        if case == "indices past their view":
            sparse["count"] = 3
        elif case == "values past their view":
            sparse["count"] = 3
            tree["bufferViews"][1]["byteLength"] = 12  # its indices read on into the values
        elif case == "more than the elements":
            sparse["count"] = 163

    b = gltf_builder()
    _sparse_sphere(b, at if case == "index past the elements" else [5, 6], moved)
    path = b.write(tmp_path / "sparse.glb", edit)
    assert load_error(path) == f"sparse.glb: {said}"


def test_normalized_integer_uvs_and_colours_are_mapped_to_floats(tmp_path, gltf_builder):
    """KHR_mesh_quantization's normalized unsigned shorts (uvs) and bytes (colours) read as
    the floats they stand for (uvs were taken as integers). (trimesh reads uvs only for a
    primitive with a material.)"""
    q_uv = (np.abs(V[:, :2]) * 65535).astype(np.uint16)
    q_rgba = (np.abs(V[:, [0, 1, 2, 0]]) * 255).astype(np.uint8)
    b = gltf_builder()
    b.node(mesh=b.mesh({"attributes": {
        "POSITION": b.accessor(V), "TEXCOORD_0": b.accessor(q_uv, normalized=True),
        "COLOR_0": b.accessor(q_rgba, normalized=True)}, "indices": b.accessor(F.reshape(-1)),
        "material": 0}))
    b.tree["materials"] = [{}]
    plain = gltf_builder()
    plain.node(mesh=plain.mesh({**plain.triangles(
        V, F, TEXCOORD_0=(q_uv / np.float32(65535)).astype(np.float32),
        COLOR_0=(q_rgba / np.float32(255)).astype(np.float32)), "material": 0}))
    plain.tree["materials"] = [{}]
    got, want = _loaded(b.write(tmp_path / "q.glb")), _loaded(plain.write(tmp_path / "plain.glb"))
    assert got.wedge_uv is not None and 0 <= got.wedge_uv.min() and got.wedge_uv.max() <= 1
    np.testing.assert_allclose(_corners(got), _corners(want), atol=1e-6)


def test_quantized_positions_and_normals_are_read(tmp_path, gltf_builder):
    """KHR_mesh_quantization, required: positions as shorts in millimetres (the node scales
    them back to metres), normals as normalized bytes; read as the plain file's floats (the
    extension was refused as not supported)."""
    q_pos = np.round(V * 1000).astype(np.int16)
    q_nrm = np.round(V * 127).astype(np.int8)
    b = gltf_builder()
    b.node(mesh=b.mesh({"attributes": {"POSITION": b.accessor(q_pos),
                                       "NORMAL": b.accessor(q_nrm, normalized=True)},
                        "indices": b.accessor(F.reshape(-1))}), scale=[0.001] * 3)
    b.tree["extensionsUsed"] = b.tree["extensionsRequired"] = ["KHR_mesh_quantization"]
    plain = gltf_builder()
    plain.node(mesh=plain.mesh(plain.triangles(q_pos / np.float32(1000), F,
                                               NORMAL=q_nrm / np.float32(127))))
    got = _loaded(b.write(tmp_path / "q.glb"))
    np.testing.assert_allclose(_corners(got), _corners(_loaded(plain.write(tmp_path / "p.glb"))),
                               atol=1e-6)


@pytest.mark.parametrize("uri, said", [
    ("data:application/octet-stream;base64,@@@@", "buffer 0: its data: URI is not valid base64"),
    ("data:application/octet-stream,%00%01", "buffer 0: a data: URI that is not base64"),
])
def test_a_buffer_data_uri_that_is_not_base64_is_one_line(tmp_path, gltf_builder, load_error,
                                                           uri, said):
    """Was "cannot read as GLTF: AssertionError"."""
    b = gltf_builder()
    b.node(mesh=b.mesh(b.triangles(V, F)))
    path = b.write(tmp_path / "b64.gltf", lambda t: t["buffers"][0].update(uri=uri))
    assert load_error(path).startswith(f"b64.gltf: {said}")


def test_nan_colours_set_by_a_sparse_block_are_named(tmp_path, gltf_builder):
    # the NaN check read a colour accessor's view alone: a sparse block was not looked at
    rgba = np.full((len(V), 4), 0.5, np.float32)
    b = gltf_builder()
    b.node(mesh=b.mesh(b.triangles(V, F, COLOR_0=b.sparse(rgba, np.array([3, 7], np.uint32),
                                                         np.full((2, 4), np.nan, np.float32)))))
    path = b.write(tmp_path / "nan.glb")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", MeshWarning)
        mesh = load_mesh(path)
    said = [str(w.message) for w in caught if issubclass(w.category, MeshWarning)]
    assert said == [f"nan.glb: accessor 0 (COLOR_0 of mesh 0 ''): 2 of {len(V)} colours are not "
                    f"numbers (NaN); drawn without vertex colours"]
    assert mesh.wedge_color is None
