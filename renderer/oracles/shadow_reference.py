"""Shadows, brute force: a truth for the virtual shadow maps that shares none of their code
(tests/renderer/test_shadows.py, `tessera bench --scenario shadows`).

Every original triangle of every instance is drawn from the sun by the GPU's own rasterizer
(`ReferenceRenderer`: no clusters, no LOD, no pages, no atomics) into one orthographic depth map
over the points asked about, `resolution`² texels (8x finer than the shadow map's texel where
the view asks for about a texel a pixel); a point sees the sun unless the map holds a surface
nearer the sun than itself by more than the map's own rasterization error (a texel's worth along
the point's slope). Both faces of every triangle cast. A spot or point light's the same way: a
perspective depth map from the light for each cube face that holds points asked about
(`light_visibility`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from renderer.device import GpuContext
from renderer.oracles.reference import ReferenceRenderer
from renderer.shadows import light_basis, sun_direction

__all__ = ["SunReference"]

_CUBE = np.array([[1, 0, 0], [-1, 0, 0], [0, 1, 0], [0, -1, 0], [0, 0, 1], [0, 0, -1]], float)


class SunReference:
    """Sun visibility of world points under a set of meshes, from a brute-force depth map."""

    def __init__(self, ctx: GpuContext, resolution: int = 2048) -> None:
        self.resolution = int(resolution)
        self.ref = ReferenceRenderer(ctx, self.resolution, self.resolution)
        self._boxes: list[np.ndarray] = []  # each mesh's box corners (8, 3)

    def add_mesh(self, positions: np.ndarray, triangles: np.ndarray) -> int:
        """(n, 3) float32 object-space positions and (m, 3) triangles: a mesh id."""
        p = np.asarray(positions, np.float32)
        lo, hi = p.min(axis=0).astype(np.float64), p.max(axis=0).astype(np.float64)
        self._boxes.append(np.array([[(lo, hi)[(k >> i) & 1][i] for i in range(3)]
                                     for k in range(8)]))
        return self.ref.add_mesh(p, np.asarray(triangles, np.uint32))

    def visibility(self, sun: tuple[float, float], instances: Sequence[tuple[int, np.ndarray]],
                   points: np.ndarray, normals: np.ndarray) -> np.ndarray:
        """Which of `points` (k, 3) see the sun ((azimuth, elevation) degrees), with their unit
        `normals` (k, 3) for the tolerance: (k,) bool."""
        s = sun_direction(*sun)
        u, v = light_basis(s)
        f = -s
        pts = np.asarray(points, np.float64)
        x, y = pts @ u, pts @ v
        cx, cy = (x.min() + x.max()) / 2, (y.min() + y.max()) / 2
        half = max(x.max() - x.min(), y.max() - y.min()) / 2 * 1.02 + 1e-9
        # the depth range: every instance's mesh bounds along the sun
        lo, hi = np.inf, -np.inf
        for mesh_id, world in instances:
            corners = self._boxes[mesh_id]
            w = np.asarray(world, np.float64)
            d = (corners @ w[:3, :3].T + w[:3, 3]) @ f
            lo, hi = min(lo, d.min()), max(hi, d.max())
        lo, hi = lo - 1e-3 * (hi - lo + 1e-9), hi + 1e-3 * (hi - lo + 1e-9)
        m = np.zeros((4, 4))
        m[0, :3], m[0, 3] = u / half, -cx / half
        m[1, :3], m[1, 3] = v / half, -cy / half
        m[2, :3], m[2, 3] = -f / (hi - lo), hi / (hi - lo)  # reversed: 1 nearest the sun
        m[3, 3] = 1.0
        depth = self.ref.render(m.astype(np.float32), instances, cull_backfaces=False)["depth"]
        n = self.resolution
        tx = np.clip(((x - cx) / half * 0.5 + 0.5) * n, 0, n - 1).astype(np.int64)
        ty = np.clip((0.5 - (y - cy) / half * 0.5) * n, 0, n - 1).astype(np.int64)
        z = (hi - pts @ f) / (hi - lo)
        texel = 2 * half / n
        nl = np.clip(np.asarray(normals, np.float64) @ s, 0.05, 1.0)
        slope = np.sqrt(1 - nl**2) / nl
        tol = (2.0 + 2.0 * slope) * texel / (hi - lo)
        return depth[ty, tx] <= z + tol

    def light_visibility(self, position, instances: Sequence[tuple[int, np.ndarray]],
                         points: np.ndarray, normals: np.ndarray) -> np.ndarray:
        """Which of `points` (k, 3) see a light at `position` (nothing between them and it),
        with their unit `normals` (k, 3) for the tolerance: (k,) bool. Points are taken by the
        cube face of their largest axis from the light, each face a 90-degree perspective
        depth map (reversed Z: depth = near / distance along the face's axis)."""
        eye = np.asarray(position, np.float64)
        pts = np.asarray(points, np.float64)
        d = pts - eye
        axis = np.abs(d).argmax(axis=1)
        face = 2 * axis + (np.take_along_axis(d, axis[:, None], 1)[:, 0] < 0)
        n = self.resolution
        out = np.ones(len(pts), bool)
        for f in np.unique(face):
            sel = face == f
            fwd = _CUBE[f]
            ref = np.array([0.0, 1.0, 0.0]) if abs(fwd[1]) < 0.5 else np.array([0.0, 0.0, 1.0])
            right = np.cross(fwd, ref)
            up = np.cross(right, fwd)
            z = d[sel] @ fwd
            near = max(float(z.min()) * 1e-3, 1e-9)
            m = np.zeros((4, 4))
            m[0, :3], m[1, :3], m[3, :3] = right, up, fwd
            m[:, 3] = -(m[:, :3] @ eye)
            m[2, 3] = near  # clip z = near, w = z: depth near / z
            depth = self.ref.render(m.astype(np.float32), instances,
                                    cull_backfaces=False)["depth"]
            x, y = (d[sel] @ right) / z, (d[sel] @ up) / z
            tx = np.clip((x * 0.5 + 0.5) * n, 0, n - 1).astype(np.int64)
            ty = np.clip((0.5 - y * 0.5) * n, 0, n - 1).astype(np.int64)
            stored = depth[ty, tx]
            with np.errstate(divide="ignore"):
                hit = np.where(stored > 0, near / stored, np.inf)
            texel = 2.0 * z / n  # a texel's size at the point
            to_light = -d[sel] / np.linalg.norm(d[sel], axis=1, keepdims=True)
            nl = np.clip(np.abs(np.sum(np.asarray(normals, np.float64)[sel] * to_light, axis=1)),
                         0.05, 1.0)
            slope = np.sqrt(1 - nl**2) / nl
            out[sel] = hit >= z - (2.0 + 2.0 * slope) * texel
        return out
