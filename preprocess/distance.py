"""Exact distances of a point to a triangle: point-segment and point-triangle distances, and
walks over a surface's triangles to a point's nearest (the original surface that the LOD errors
are measured against: `preprocess.measure`). The hash grid that finds a point's nearest triangle
among many is `preprocess.grid`'s.
"""

from __future__ import annotations

import preprocess.numba_cache  # noqa: F401  (first: drops stale numba caches)
import numba
import numpy as np

__all__ = ["point_segment_d2", "point_triangle_d2_of", "surface_walk"]

_jit = numba.njit(cache=True, nogil=True)
_jit_inline = numba.njit(cache=True, nogil=True, inline="always")


@_jit_inline
def point_segment_d2(px, py, pz, ax, ay, az, ex, ey, ez):
    """Squared distance from p to the segment a + s e, s in [0, 1]."""
    ee = ex * ex + ey * ey + ez * ez
    s = 0.0
    if ee > 0.0:
        s = ((px - ax) * ex + (py - ay) * ey + (pz - az) * ez) / ee
        s = min(max(s, 0.0), 1.0)
    dx = px - ax - s * ex
    dy = py - ay - s * ey
    dz = pz - az - s * ez
    return dx * dx + dy * dy + dz * dz


@_jit_inline
def point_triangle_d2_of(px, py, pz, P, a, b, c):
    """Exact squared distance from p to the triangle (P[a], P[b], P[c]) (as `point_triangle_d2`,
    without a precomputed record)."""
    return _point_triangle_d2_at(px, py, pz, P, a, b, c)[0]


@_jit_inline
def _point_triangle_d2_at(px, py, pz, P, a, b, c):
    """(exact squared distance from p to the triangle (P[a], P[b], P[c]), whether the nearest
    point lies inside the triangle rather than on its border)."""
    ax = np.float64(P[a, 0])
    ay = np.float64(P[a, 1])
    az = np.float64(P[a, 2])
    e0x = np.float64(P[b, 0]) - ax
    e0y = np.float64(P[b, 1]) - ay
    e0z = np.float64(P[b, 2]) - az
    e1x = np.float64(P[c, 0]) - ax
    e1y = np.float64(P[c, 1]) - ay
    e1z = np.float64(P[c, 2]) - az
    vx = px - ax
    vy = py - ay
    vz = pz - az
    d00 = e0x * e0x + e0y * e0y + e0z * e0z
    d01 = e0x * e1x + e0y * e1y + e0z * e1z
    d11 = e1x * e1x + e1y * e1y + e1z * e1z
    det = d00 * d11 - d01 * d01
    if det > 1.0e-12 * d00 * d11:
        d20 = vx * e0x + vy * e0y + vz * e0z
        d21 = vx * e1x + vy * e1y + vz * e1z
        b1 = (d11 * d20 - d01 * d21) / det
        b2 = (d00 * d21 - d01 * d20) / det
        if b1 >= 0.0 and b2 >= 0.0 and b1 + b2 <= 1.0:
            qx = vx - b1 * e0x - b2 * e1x
            qy = vy - b1 * e0y - b2 * e1y
            qz = vz - b1 * e0z - b2 * e1z
            return qx * qx + qy * qy + qz * qz, b1 > 0.0 and b2 > 0.0 and b1 + b2 < 1.0
    r = point_segment_d2(px, py, pz, ax, ay, az, e0x, e0y, e0z)
    r = min(r, point_segment_d2(px, py, pz, ax, ay, az, e1x, e1y, e1z))
    return min(r, point_segment_d2(px, py, pz, ax + e0x, ay + e0y, az + e0z, e1x - e0x,
                                    e1y - e0y, e1z - e0z)), False


@_jit
def surface_walk(px, py, pz, start, positions, ptri, nbr, vt_off, vt_tri, max_steps):
    """(squared distance, triangle): from triangle `start` of the mesh (ptri (m, 3); its edge
    neighbours nbr (m, 3) and the triangles around each position vt_off, vt_tri from
    `preprocess.topology`), step to a neighbour nearer p while there is one, at most
    max_steps times: across an edge (3 tests) while that brings it nearer, else, where p's
    nearest point on the triangle is on its border, to the nearest of the triangles sharing a
    vertex (near a vertex the triangles around it are all equally far, a plateau that edge
    steps alone would stop on; with the nearest point inside, no triangle sharing only a vertex
    is nearer unless the surface folds back). The distance to the triangle it ends on is an
    upper bound of p's distance to the mesh, equal to it unless the walk stopped in a local
    minimum (a fold of the surface); coherent points cost a few steps."""
    t = start
    best, inside = _point_triangle_d2_at(px, py, pz, positions, ptri[t, 0], ptri[t, 1],
                                         ptri[t, 2])
    for _ in range(max_steps):
        nxt = -1
        nxt_inside = False
        for c in range(3):
            u = nbr[t, c]
            if u >= 0:
                d2, ins = _point_triangle_d2_at(px, py, pz, positions, ptri[u, 0], ptri[u, 1],
                                                ptri[u, 2])
                if d2 < best:
                    best = d2
                    nxt = u
                    nxt_inside = ins
        if nxt < 0 and not inside:
            for c in range(3):
                v = ptri[t, c]
                for k in range(vt_off[v], vt_off[v + 1]):
                    u = vt_tri[k]
                    if u == t:
                        continue
                    d2, ins = _point_triangle_d2_at(px, py, pz, positions, ptri[u, 0],
                                                    ptri[u, 1], ptri[u, 2])
                    if d2 < best:
                        best = d2
                        nxt = u
                        nxt_inside = ins
        if nxt < 0:
            break
        t = nxt
        inside = nxt_inside
    return best, t
