"""Normals: unit rows and cross products, and the corner normals computed with a crease angle.

Where a file has no normals, `crease_normals` gives each corner the area-weighted normal of the
arc of its position's fan it lies in, the fan cut at edges sharper than the crease angle: a
90-degree CAD edge keeps two normals instead of one rounded one, while a lone sharp edge in a
smooth fan, as scan noise makes, splits nothing.
"""

from __future__ import annotations

import preprocess.numba_cache  # noqa: F401  (first: drops stale numba caches)
import numba as nb
import numpy as np

from preprocess.topology import edge_neighbours, find


def unit(v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Normalize rows of (n, 3) float64; returns (unit rows, mask of rows with a usable length)."""
    with np.errstate(invalid="ignore", over="ignore"):
        length = np.sqrt(np.einsum("ij,ij->i", v, v))
        ok = np.isfinite(length) & (length > 0.0)
        if ok.all():
            return v / length[:, None], ok  # the common case, without masked copies
        out = np.zeros_like(v)
        out[ok] = v[ok] / length[ok, None]
    return out, ok


def cross(u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Row-wise cross product of (m, 3) arrays, as `preprocess.io.repair._clean_triangles`
    computes it."""
    out = np.empty_like(u)
    out[:, 0] = u[:, 1] * v[:, 2] - u[:, 2] * v[:, 1]
    out[:, 1] = u[:, 2] * v[:, 0] - u[:, 0] * v[:, 2]
    out[:, 2] = u[:, 0] * v[:, 1] - u[:, 1] * v[:, 0]
    return out


@nb.njit(cache=True, nogil=True)
def crease_normals(tri: np.ndarray, P: np.ndarray, cos_crease: float) -> tuple:
    """Corner normals of triangles `tri` (m, 3) int64 position ids over positions P (p, 3)
    float64, with edges sharper than the crease kept hard.

    Around each position, the incident triangles are joined across every edge they share with a
    dihedral angle below the crease (cosine of the face normals >= cos_crease) and used by exactly
    two triangles; each joined arc of the fan gets one normal, the area-weighted mean of its
    triangles' normals. A crease therefore splits a position only where two or more crease edges
    meet it (one sharp edge in a smooth fan, as scan noise makes, leaves the fan in one piece).

    Returns (normals (m, 3, 3) float64 per corner, unit; splits: positions with more than one
    arc)."""
    m = tri.shape[0]
    p = P.shape[0]
    fn = np.empty((m, 3), np.float64)  # area-weighted (2 * area * unit)
    fu = np.empty((m, 3), np.float64)
    for t in range(m):
        a, b, c = tri[t, 0], tri[t, 1], tri[t, 2]
        ux, uy, uz = P[b, 0] - P[a, 0], P[b, 1] - P[a, 1], P[b, 2] - P[a, 2]
        vx, vy, vz = P[c, 0] - P[a, 0], P[c, 1] - P[a, 1], P[c, 2] - P[a, 2]
        nx, ny, nz = uy * vz - uz * vy, uz * vx - ux * vz, ux * vy - uy * vx
        fn[t, 0], fn[t, 1], fn[t, 2] = nx, ny, nz
        ln = np.sqrt(nx * nx + ny * ny + nz * nz)
        s = 1.0 / ln if ln > 0 else 0.0
        fu[t, 0], fu[t, 1], fu[t, 2] = nx * s, ny * s, nz * s
    neighbour, _ = edge_neighbours(tri, p)  # -1 on border and non-manifold edges: stay hard
    parent = np.arange(3 * m)  # corner id = 3 * t + c
    for ti in range(m):
        for c in range(3):
            tj = neighbour[ti, c]
            if tj <= ti:  # no neighbour, or the pair seen from tj already
                continue
            d = fu[ti, 0] * fu[tj, 0] + fu[ti, 1] * fu[tj, 1] + fu[ti, 2] * fu[tj, 2]
            if d < cos_crease:
                continue
            for end in (tri[ti, c], tri[ti, (c + 1) % 3]):  # both triangles' corners at each end
                x = 3 * ti + (0 if tri[ti, 0] == end else (1 if tri[ti, 1] == end else 2))
                y = 3 * tj + (0 if tri[tj, 0] == end else (1 if tri[tj, 1] == end else 2))
                rx, ry = find(parent, x), find(parent, y)
                if rx != ry:
                    parent[max(rx, ry)] = min(rx, ry)
    for i in range(3 * m):
        parent[i] = find(parent, i)
    sums = np.zeros((3 * m, 3), np.float64)
    for i in range(3 * m):
        r = parent[i]
        t = i // 3
        sums[r, 0] += fn[t, 0]
        sums[r, 1] += fn[t, 1]
        sums[r, 2] += fn[t, 2]
    out = np.empty((m, 3, 3), np.float64)
    first_root = np.full(p, -1, np.int64)
    split = np.zeros(p, np.bool_)
    for i in range(3 * m):
        r = parent[i]
        t, c = i // 3, i % 3
        q = tri[t, c]
        if first_root[q] < 0:
            first_root[q] = r
        elif first_root[q] != r:
            split[q] = True
        x, y, z = sums[r, 0], sums[r, 1], sums[r, 2]
        ln = np.sqrt(x * x + y * y + z * z)
        if ln > 0:
            out[t, c, 0], out[t, c, 1], out[t, c, 2] = x / ln, y / ln, z / ln
        else:  # opposite faces cancelled: this triangle's own normal
            out[t, c, 0], out[t, c, 1], out[t, c, 2] = fu[t, 0], fu[t, 1], fu[t, 2]
    return out, int(split.sum())
