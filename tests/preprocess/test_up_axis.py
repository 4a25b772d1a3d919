"""The up axis (`preprocess.up_axis`, `BuildConfig.up`): a Z-up mesh is turned Y-up by a proper
rotation, once, before the build; its winding and its normals still face outward; a default
build is what it was before the option; glTF, Y-up by its specification, warns on `up="z"`.

The test mesh is a cone standing on the XY plane with its apex at +Z (Z-up), its base disc
closing it, flat normals from the file (`vn`, one per face):

        z
        |   apex (0, 0, 2)
        |  /\\
        | /  \\
        |/____\\   base: a disc of radius 0.5 at z = 0
        +-------- x
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import trimesh

from preprocess.build import build_file
from preprocess.config import BuildConfig
from preprocess.load import load_mesh
from preprocess.mesh import Mesh, MeshWarning
from preprocess.tess import read_tess
from preprocess.up_axis import Z_UP_TO_Y_UP, to_y_up

HEIGHT = 2.0
RADIUS = 0.5


def z_up_cone(sides: int = 24) -> tuple[np.ndarray, np.ndarray]:
    """(positions (n, 3), triangles (m, 3)) of the closed cone above, counter-clockwise seen from
    outside."""
    a = 2 * np.pi * np.arange(sides) / sides
    ring = np.stack([RADIUS * np.cos(a), RADIUS * np.sin(a), np.zeros(sides)], -1)
    pos = np.concatenate([ring, [[0, 0, HEIGHT]], [[0, 0, 0]]])
    apex, centre = sides, sides + 1
    i = np.arange(sides)
    j = (i + 1) % sides
    side = np.stack([i, j, np.full(sides, apex)], -1)  # counter-clockwise about +Z: outward
    base = np.stack([j, i, np.full(sides, centre)], -1)  # seen from below (-Z): outward
    return pos, np.concatenate([side, base])


def write_obj(path, pos: np.ndarray, tri: np.ndarray) -> str:
    """An OBJ with one flat normal per face (`f a//n b//n c//n`), the winding's."""
    p = pos[tri]
    n = np.cross(p[:, 1] - p[:, 0], p[:, 2] - p[:, 0])
    n /= np.linalg.norm(n, axis=1, keepdims=True)
    lines = [f"v {x:.9g} {y:.9g} {z:.9g}" for x, y, z in pos]
    lines += [f"vn {x:.9g} {y:.9g} {z:.9g}" for x, y, z in n]
    lines += [f"f {a + 1}//{k + 1} {b + 1}//{k + 1} {c + 1}//{k + 1}"
              for k, (a, b, c) in enumerate(tri)]
    path.write_text("\n".join(lines) + "\n")
    return str(path)


@pytest.fixture(scope="module")
def cone_obj(tmp_path_factory) -> str:
    return write_obj(tmp_path_factory.mktemp("up") / "cone.obj", *z_up_cone())


def signed_volume(mesh: Mesh) -> float:
    """Positive for a closed mesh whose triangles are counter-clockwise seen from outside."""
    p = mesh.positions.astype(np.float64)[mesh.position_triangles]
    return float(np.einsum("ij,ij->i", p[:, 0], np.cross(p[:, 1], p[:, 2])).sum() / 6)


def face_normals(mesh: Mesh) -> np.ndarray:
    """(m, 3) unit normals of the triangles by their winding."""
    p = mesh.positions.astype(np.float64)[mesh.position_triangles]
    n = np.cross(p[:, 1] - p[:, 0], p[:, 2] - p[:, 0])
    return n / np.linalg.norm(n, axis=1, keepdims=True)


def test_the_rotation_is_proper_and_takes_z_to_y() -> None:
    r = Z_UP_TO_Y_UP.astype(np.float64)
    assert np.linalg.det(r) == 1.0  # a rotation: no mirror, winding and handedness kept
    np.testing.assert_array_equal(r @ r.T, np.eye(3))
    np.testing.assert_array_equal(r @ [0, 0, 1], [0, 1, 0])  # up stays up
    np.testing.assert_array_equal(r @ [1, 0, 0], [1, 0, 0])  # right stays right
    np.testing.assert_array_equal(r @ [0, -1, 0], [0, 0, 1])  # a Z-up front faces `front`


def test_z_up_cone_stands_up_with_its_winding_and_normals_outward(cone_obj) -> None:
    mesh = load_mesh(cone_obj)
    before = mesh.positions.copy(), mesh.wedge_normal.copy()
    up = to_y_up(mesh, "z")
    # exactly the rotation, every other field shared; the input untouched
    np.testing.assert_array_equal(up.positions, mesh.positions @ Z_UP_TO_Y_UP.T)
    np.testing.assert_array_equal(up.wedge_normal, mesh.wedge_normal @ Z_UP_TO_Y_UP.T)
    assert up.positions.dtype == up.wedge_normal.dtype == np.float32
    assert up.triangles is mesh.triangles and up.wedge_position is mesh.wedge_position
    np.testing.assert_array_equal(mesh.positions, before[0])
    np.testing.assert_array_equal(mesh.wedge_normal, before[1])
    # height along +Y: the apex on top, the base disc in the XZ plane at y = 0
    lo, hi = up.positions.min(axis=0), up.positions.max(axis=0)
    np.testing.assert_allclose(hi - lo, [2 * RADIUS, HEIGHT, 2 * RADIUS], atol=1e-6)
    assert lo[1] == 0.0 and hi[1] == np.float32(HEIGHT)
    assert not np.signbit(up.positions[up.positions[:, 2] == 0, 2]).any()  # no -0.0
    # still closed and outward: positive volume, each wedge normal on its triangle's front side
    assert signed_volume(mesh) > 0 and signed_volume(up) == pytest.approx(signed_volume(mesh))
    wedge_n = up.wedge_normal[up.triangles]  # (m, 3, 3)
    assert (np.einsum("ij,ikj->ik", face_normals(up), wedge_n) > 0.99).all()
    assert to_y_up(mesh, "y") is mesh


def test_bad_up_axis_is_refused(cone_obj) -> None:
    with pytest.raises(ValueError, match="up axis"):
        BuildConfig(up="x")
    with pytest.raises(ValueError, match="up axis"):
        to_y_up(load_mesh(cone_obj), "Z")


def test_build_with_up_z_stores_a_y_up_asset_and_says_so(cone_obj, tmp_path) -> None:
    result = build_file(cone_obj, tmp_path / "z.tess", BuildConfig(up="z"), verify=True)
    with read_tess(tmp_path / "z.tess") as f:
        meta = dict(f.meta)
    assert meta["up"] == "z"
    extent = np.subtract(meta["bounds_max"], meta["bounds_min"])
    assert extent.argmax() == 1 and extent[1] == pytest.approx(HEIGHT, abs=1e-3)
    assert meta["bounds_min"][1] == pytest.approx(0.0, abs=1e-3)  # standing on y = 0
    assert "up axis       Z in the source" in result.summary()
    # the default build: Z stays up (lying on its side in Tessera's world), no `up` in the meta
    default = build_file(cone_obj, tmp_path / "y.tess")
    with read_tess(tmp_path / "y.tess") as f:
        assert "up" not in f.meta
        assert np.subtract(f.meta["bounds_max"], f.meta["bounds_min"]).argmax() == 2
    assert "up axis" not in default.summary()


def test_default_build_is_the_explicit_y_build_byte_for_byte(cone_obj, tmp_path) -> None:
    def content(path) -> tuple:
        with read_tess(path, verify_pages=True) as f:
            meta = {k: v for k, v in f.meta.items() if k != "seconds"}
            return (meta, {k: np.asarray(v).tobytes() for k, v in f.sections.items()},
                    [np.asarray(f.page(p)).tobytes() for p in range(f.page_count)])

    build_file(cone_obj, tmp_path / "a.tess")
    build_file(cone_obj, tmp_path / "b.tess", BuildConfig(up="y"))
    assert content(tmp_path / "a.tess") == content(tmp_path / "b.tess")


def test_gltf_is_y_up_by_its_spec_and_warns_on_up_z(tmp_path, cone_obj) -> None:
    pos, tri = z_up_cone()
    glb = tmp_path / "cone.glb"
    trimesh.Trimesh(pos, tri, process=False).export(glb)
    with pytest.warns(MeshWarning, match=r"cone\.glb: glTF is Y-up by its specification") as w:
        build_file(glb, tmp_path / "z.tess", BuildConfig(up="z"))
    assert len([x for x in w if issubclass(x.category, MeshWarning)]) == 1
    with read_tess(tmp_path / "z.tess") as f:  # rotated as asked
        assert np.subtract(f.meta["bounds_max"], f.meta["bounds_min"]).argmax() == 1
    with warnings.catch_warnings():
        warnings.simplefilter("error", MeshWarning)
        build_file(glb, tmp_path / "y.tess")  # the default: no warning
        build_file(cone_obj, tmp_path / "obj.tess", BuildConfig(up="z"))  # OBJ has no spec
