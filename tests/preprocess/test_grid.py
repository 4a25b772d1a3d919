"""The triangle hash grid on its own (`preprocess.grid`): a point's nearest triangle and the
distances of many points to a mesh, exact against brute force, and the largest of them found with
searches cut short at the largest so far (`farthest_distance`)."""

from __future__ import annotations

import numpy as np
import pytest

from assets.shapes import geodesic_sphere_arrays
from preprocess.grid import farthest_distance, max_distance_to_mesh


def brute_distance(points, pos, pt):
    """Exact point-triangle distance by brute force (numpy, barycentric + edges)."""
    p = pos[pt].astype(np.float64)
    a, b, c = p[:, 0], p[:, 1], p[:, 2]
    out = np.full(len(points), np.inf)

    def seg(x, s0, s1):
        e = s1 - s0
        t = np.clip(((x - s0) * e).sum(-1) / np.maximum((e * e).sum(-1), 1e-300), 0, 1)
        return np.linalg.norm(x - s0 - t[:, None] * e, axis=-1)

    n = np.cross(b - a, c - a)
    n /= np.linalg.norm(n, axis=1, keepdims=True)
    for i, x in enumerate(points):
        h = ((x - a) * n).sum(-1)
        q = x - h[:, None] * n
        v0, v1, v2 = b - a, c - a, q - a
        d00, d01, d11 = (v0 * v0).sum(-1), (v0 * v1).sum(-1), (v1 * v1).sum(-1)
        d20, d21 = (v2 * v0).sum(-1), (v2 * v1).sum(-1)
        den = d00 * d11 - d01 * d01
        s = (d11 * d20 - d01 * d21) / den
        t = (d00 * d21 - d01 * d20) / den
        inside = (s >= 0) & (t >= 0) & (s + t <= 1)
        xs = np.broadcast_to(x, a.shape)
        d = np.minimum(np.minimum(seg(xs, a, b), seg(xs, b, c)), seg(xs, c, a))
        d = np.where(inside, np.abs(h), d)
        out[i] = d.min()
    return out


def test_max_distance_to_mesh_matches_brute_force():
    pos, tris = geodesic_sphere_arrays(2)
    tris = np.asarray(tris, np.int32)
    rng = np.random.default_rng(2)
    pos = (pos * (1 + 0.05 * rng.standard_normal((len(pos), 1)))).astype(np.float32)
    r = rng.random((20, 3, 2))  # 3 random points on each of the first 20 triangles
    r[r.sum(-1) > 1] = 1 - r[r.sum(-1) > 1]
    corners = pos[tris[:20]].astype(np.float64)[:, None]
    on = (corners[..., 0, :] + r[..., :1] * (corners[..., 1, :] - corners[..., 0, :])
          + r[..., 1:] * (corners[..., 2, :] - corners[..., 0, :])).reshape(-1, 3)
    pts = np.concatenate(
        [
            rng.normal(size=(150, 3)) * 0.7,  # inside and around
            rng.normal(size=(30, 3)) * 5.0,  # far away
            on,  # on the surface
        ]
    ).astype(np.float32)
    d = max_distance_to_mesh(pts, pos, tris)
    assert d.dtype == np.float64 and d.shape == (len(pts),)
    ref = brute_distance(pts.astype(np.float64), pos, tris)
    assert np.allclose(d, ref, rtol=1e-9, atol=1e-9)
    # the largest alone (searches cut short at the largest so far): the same maximum, whichever
    # order the points come in
    for order in (np.arange(len(pts)), np.argsort(ref), np.argsort(-ref)):
        assert farthest_distance(pts[order], pos, tris) == pytest.approx(ref.max(), rel=1e-12)
