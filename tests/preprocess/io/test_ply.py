"""The PLY reader (preprocess.io.ply): what it gives is what trimesh gives, bit for bit, and what it
leaves to trimesh or refuses."""

from __future__ import annotations

import numpy as np
import pytest
import trimesh

from preprocess.io.parts import read_parts
from preprocess.load import load_mesh


def test_ply_round_trip(tmp_path, assert_valid, assert_closed_manifold, signed_volume):
    box = trimesh.creation.box(extents=(1, 2, 3))
    path = tmp_path / "box.ply"
    box.export(path)
    mesh = load_mesh(path)
    assert_valid(mesh)
    assert (mesh.triangle_count, mesh.vertex_count) == (12, 8)
    assert_closed_manifold(mesh)
    assert signed_volume(mesh) == pytest.approx(6.0)


def test_ply_normals_kept(tmp_path):
    ico = trimesh.creation.icosphere(subdivisions=1)
    normals = ico.vertex_normals.copy()
    normals[:, 0] *= -1  # deliberately not the geometric normals
    tm = trimesh.Trimesh(ico.vertices, ico.faces, vertex_normals=normals, process=False)
    path = tmp_path / "normals.ply"
    tm.export(path, vertex_normal=True)
    mesh = load_mesh(path)
    np.testing.assert_allclose(mesh.wedge_normal, normals, atol=1e-6)


def test_ply_uvs_kept(tmp_path):
    ico = trimesh.creation.icosphere(subdivisions=1)
    uv = np.random.default_rng(1).random((len(ico.vertices), 2))
    ico.visual = trimesh.visual.TextureVisuals(uv=uv)
    path = tmp_path / "uv.ply"
    ico.export(path)
    mesh = load_mesh(path)
    assert mesh.wedge_uv is not None and len(mesh.wedge_position) == 42
    np.testing.assert_allclose(mesh.wedge_uv, uv.astype(np.float32))  # same order: first use


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
def test_fast_ply_reader_matches_trimesh(tmp_path, fmt, corners, assert_same_mesh):
    rng = np.random.default_rng(corners)
    vertices = rng.integers(0, 3, (20, 3)).astype(np.float32) + rng.random((20, 3)) * 0.5
    polygons = [rng.choice(20, size=corners, replace=False).tolist() for _ in range(30)]
    path = tmp_path / "mesh.ply"
    path.write_bytes(_ply_bytes(fmt, vertices, polygons))
    assert_same_mesh(path)
    path.write_bytes(_ply_bytes(fmt, vertices, polygons, normals=rng.normal(size=(20, 3)),
                                face_flags=True))
    assert_same_mesh(path)


def test_ply_left_to_trimesh(tmp_path, assert_same_mesh):
    ico = trimesh.creation.icosphere(subdivisions=1)
    ico.visual = trimesh.visual.TextureVisuals(uv=np.random.default_rng(1).random((42, 2)))
    path = tmp_path / "uv.ply"
    ico.export(path)  # uvs: trimesh merges them to 1e-8 and splits the vertices
    assert_same_mesh(path, fast_path=False)
    path = tmp_path / "mixed.ply"
    vertices = np.eye(4, 3, dtype=np.float32)
    path.write_bytes(_ply_bytes("binary_little_endian", vertices, [[0, 1, 2], [0, 2, 3, 1]]))
    assert read_parts(path, "ply", path.name) is None  # trimesh assumes one polygon size


# --------------------------------------------------------------------------------------------------
# errors: one line, naming the file


def test_error_off_and_binary_ply_index_out_of_range(tmp_path, write, load_error):
    text = "OFF\n3 2 0\n0 0 0\n1 0 0\n0 1 0\n3 0 1 2\n3 0 1 7\n"
    assert "out of range" in load_error(write(tmp_path / "oob.off", text))
    path = tmp_path / "oob.ply"
    path.write_bytes(_ply_bytes("binary_little_endian", np.eye(3, dtype=np.float32),
                                [[0, 1, 2], [0, 1, -1]]))
    assert "out of range" in load_error(path)


def test_error_ply_index_out_of_range(tmp_path, write, load_error):
    text = (
        "ply\nformat ascii 1.0\nelement vertex 3\nproperty float x\nproperty float y\n"
        "property float z\nelement face 1\nproperty list uchar int vertex_indices\nend_header\n"
        "0 0 0\n1 0 0\n0 1 0\n3 0 1 5\n"
    )
    assert "out of range" in load_error(write(tmp_path / "oob.ply", text))
