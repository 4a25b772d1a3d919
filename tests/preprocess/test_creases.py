"""Hard edges: normals computed with a crease angle where a file has none
(`preprocess.io.normals.fan_normals`, `BuildConfig.crease_angle`), and creases kept through
simplification (they are seams: they slide only along themselves, or are crossed at a cost when
a group cannot shrink otherwise)."""

from __future__ import annotations

import numpy as np
import pytest

from assets.hard_edges import l_bracket
from preprocess.build import build_asset
from preprocess.config import DEFAULT_CREASE_DEGREES, BuildConfig
from preprocess.io.normals import fan_normals
from preprocess.load import mesh_from_arrays


def _without_normals(mesh):
    """The same surface as position triangles only, as a file without normals gives it."""
    return mesh.positions.copy(), mesh.wedge_position[mesh.triangles].astype(np.int64)


def _face_normals(positions, ptri) -> np.ndarray:
    p = np.asarray(positions, np.float64)[ptri]
    n = np.cross(p[:, 1] - p[:, 0], p[:, 2] - p[:, 0])
    return n / np.linalg.norm(n, axis=1, keepdims=True)


def _corner_angles(mesh, triangles) -> np.ndarray:
    """Degrees between each corner's wedge normal and its triangle's geometric normal."""
    fn = _face_normals(mesh.positions, mesh.wedge_position[triangles])
    wn = mesh.wedge_normal[triangles].astype(np.float64)
    cos = np.einsum("tcj,tj->tc", wn, fn)
    return np.degrees(np.arccos(np.clip(cos, -1, 1)))


def test_a_box_keeps_its_edges_and_a_sphere_stays_smooth() -> None:
    from assets.shapes import geodesic_sphere_arrays

    box = np.array([[x, y, z] for x in (0, 1) for y in (0, 1) for z in (0, 1)], np.float64)
    faces = np.array([[0, 1, 3], [0, 3, 2], [4, 6, 7], [4, 7, 5], [0, 4, 5], [0, 5, 1],
                      [2, 3, 7], [2, 7, 6], [0, 2, 6], [0, 6, 4], [1, 5, 7], [1, 7, 3]])
    fan = fan_normals(faces.astype(np.int32), box.astype(np.float32), np.cos(np.radians(45)))
    assert fan.splits == 8  # every corner: three faces, three creases
    assert fan.repeated == 0  # wound consistently
    assert np.bincount(fan.wedge_position).tolist() == [3] * 8  # three wedges a corner
    assert (fan.wedge_position[fan.triangles] == faces).all()
    np.testing.assert_allclose(fan.wedge_normal[fan.triangles],
                               np.repeat(_face_normals(box, faces)[:, None], 3, 1), atol=1e-7)
    p, f = geodesic_sphere_arrays(8)  # neighbouring faces 5-9 degrees apart
    fan = fan_normals(f.astype(np.int32), p.astype(np.float32), np.cos(np.radians(45)))
    assert fan.splits == 0 and (fan.triangles == f).all()
    radial = p / np.linalg.norm(p, axis=1, keepdims=True)
    assert np.einsum("ij,ij->i", fan.wedge_normal, radial).min() > 0.999


def test_crease_angle_decides_what_is_hard() -> None:
    """A bent sheet: two flat halves meeting at 60 degrees along a row of edges."""
    nx, ny = 8, 6
    xs = np.linspace(-1, 1, nx + 1)
    ys = np.linspace(0, 1, ny + 1)
    X, Y = np.meshgrid(xs, ys, indexing="ij")
    Z = np.abs(X) * np.tan(np.radians(30))  # each half tilted 30 degrees: a 60-degree fold
    pos = np.stack([X, Y, Z], -1).reshape(-1, 3)
    idx = np.arange(pos.shape[0]).reshape(nx + 1, ny + 1)
    a, b, c, d = idx[:-1, :-1], idx[1:, :-1], idx[1:, 1:], idx[:-1, 1:]
    faces = np.concatenate([np.stack([a, b, c], -1).reshape(-1, 3),
                            np.stack([a, c, d], -1).reshape(-1, 3)])
    fold = idx[nx // 2]  # the positions on the fold line
    for angle, hard in ((45, True), (75, False), (180, False)):
        mesh = mesh_from_arrays(pos, faces, crease_angle=angle)
        per_position = np.bincount(mesh.wedge_position, minlength=mesh.vertex_count)
        on_fold = np.isin(mesh.positions.view([("", mesh.positions.dtype)] * 3).ravel(),
                          pos[fold].astype(np.float32).view([("", np.float32)] * 3).ravel())
        if hard:
            # two wedges on the fold (its two ends too: two crease-free arcs each), one elsewhere
            assert (per_position[on_fold] == 2).all() and (per_position[~on_fold] == 1).all()
            assert _corner_angles(mesh, mesh.triangles).max() < 0.05  # flat (float32 normals)
        else:
            assert (per_position == 1).all()


def test_default_and_range() -> None:
    assert BuildConfig().crease_angle == DEFAULT_CREASE_DEGREES == 45.0
    for bad in (-1.0, 181.0, float("nan")):
        with pytest.raises(ValueError, match="crease angle"):
            BuildConfig(crease_angle=bad)


def test_creases_survive_every_level_of_a_flat_faced_part() -> None:
    """An L-bracket read without normals: every face is planar, so wherever the creases stayed
    creases, each corner's normal is its triangle's own; a crease rounded over would show as a
    corner normal tens of degrees off. Held at every level, permissive crossings included (the
    bracket's coarsest levels need them)."""
    ref = l_bracket(step=0.1)
    pos, ptri = _without_normals(ref)
    mesh = mesh_from_arrays(pos, ptri)
    assert len(mesh.wedge_position) > mesh.vertex_count  # the 90-degree edges split positions
    dag, _, packed = build_asset(mesh)
    level = np.asarray(dag.cluster_level)
    off = np.asarray(dag.cluster_tri_offset)
    assert level.max() >= 3
    for lv in range(int(level.max()) + 1):
        ids = np.flatnonzero(level == lv)
        rows = np.concatenate([np.arange(off[i], off[i + 1]) for i in ids])
        angles = _corner_angles(dag.mesh, np.asarray(dag.triangles)[rows])  # with fresh wedges
        # a few corners where a crossing merged two wedges may be off; most must be exact
        assert np.mean(angles < 1.0) > 0.9, (lv, np.mean(angles < 1.0))
    # and the build ends small: at most max(128, 1%) triangles in its root
    assert packed.meta["root_triangles"] <= max(128, mesh.triangle_count // 100)


def test_preprocess_refuses_a_bad_crease_angle(tmp_path, capsys) -> None:
    from renderer.apps.preprocess_cli import main

    status = main(["--builtin", "sphere", "--triangles", "500", "--crease-angle", "200",
                   "-o", str(tmp_path / "s.tess")])
    err = capsys.readouterr().err.strip().splitlines()
    assert status == 2 and len(err) == 1 and "crease angle" in err[0]
    assert not (tmp_path / "s.tess").exists()
