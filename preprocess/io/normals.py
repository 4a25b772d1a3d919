"""Normals: unit rows, and the normals a mesh without them is given.

`fan_normals` looks at each position's fan (the triangles around it, `corners_by_position`) on
its own: the fan's triangles are joined across every edge they share with a dihedral angle below
the crease angle and used by exactly two triangles, and each joined arc of the fan gets one
normal, the area-weighted mean of its triangles' normals (`smooth`: the whole fan one arc). A
90-degree CAD edge keeps two normals instead of one rounded one, while a lone sharp edge in a
smooth fan, as scan noise makes, splits nothing. Each (position, arc) is a wedge of the mesh: the
fast path of `preprocess.io.arrays` takes the triangles, wedges and normals as they come.

Every position is independent, so the fans run in spans on a thread pool (numba, without the
GIL); nothing per corner is kept but the arc of each corner, which is the triangles' wedge id.
The edges used by exactly two triangles around a position are found among its own fan
(`preprocess.topology.fan_mates`).
"""

from __future__ import annotations

import preprocess.numba_cache  # noqa: F401  (first: drops stale numba caches)
from typing import NamedTuple

import numba as nb
import numpy as np

from preprocess.threads import balanced_spans, run_spans
from preprocess.topology import corners_by_position, fan_ends, fan_mates, find, largest_fan


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


class FanNormals(NamedTuple):
    """What `fan_normals` gives: wedges numbered position by position, arcs in the order of
    their first triangle."""

    triangles: np.ndarray  # (m, 3) int32: each corner's wedge (its position's arc)
    wedge_position: np.ndarray  # (w,) int32: the position of each wedge, non-decreasing
    wedge_normal: np.ndarray  # (w, 3) float32 unit
    splits: int  # positions with more than one arc
    repeated: int  # edge uses that repeat an earlier use in the same direction (bad winding)


@nb.njit(cache=True, nogil=True)
def _fan(v, tri, P, off, corners, cos_crease, smooth, nxt, prv, mate, fn, l2, par, arc, last,
         sums):
    """The arcs of position v's fan, in scratch arrays of at least its size: arc[j] for its j-th
    triangle (arcs numbered by their first triangle), sums[a] the area-weighted normal sum of arc
    a, last[a] its last triangle; fn[j] the j-th triangle's cross product, l2[j] its square
    length. Returns (triangles, arcs, edge uses repeating an earlier one from v in the same
    direction)."""
    k = fan_ends(tri, off, corners, v, nxt, prv)
    s = off[v]
    for j in range(k):
        t = corners[s + j] // 3
        a, b, d = tri[t, 0], tri[t, 1], tri[t, 2]  # the triangle's own order: one cross for all
        ax, ay, az = np.float64(P[a, 0]), np.float64(P[a, 1]), np.float64(P[a, 2])
        ux, uy, uz = P[b, 0] - ax, P[b, 1] - ay, P[b, 2] - az
        vx, vy, vz = P[d, 0] - ax, P[d, 1] - ay, P[d, 2] - az
        nx, ny, nz = uy * vz - uz * vy, uz * vx - ux * vz, ux * vy - uy * vx
        fn[j, 0], fn[j, 1], fn[j, 2] = nx, ny, nz
        l2[j] = nx * nx + ny * ny + nz * nz
        par[j] = 0 if smooth else j
    repeated = fan_mates(k, nxt, prv, mate)
    if not smooth:
        for j in range(k):
            for side in range(2):
                i = mate[2 * j + side]
                if i > j:
                    _join(j, i, fn, l2, cos_crease, par)
    arcs = 0
    for j in range(k):
        r = find(par, j)
        if r == j:
            arc[j] = arcs
            sums[arcs, 0] = 0.0
            sums[arcs, 1] = 0.0
            sums[arcs, 2] = 0.0
            arcs += 1
        else:
            arc[j] = arc[r]
        a = arc[j]
        sums[a, 0] += fn[j, 0]
        sums[a, 1] += fn[j, 1]
        sums[a, 2] += fn[j, 2]
        last[a] = j
    return k, arcs, repeated


@nb.njit(cache=True, nogil=True, inline="always")
def _join(i, j, fn, l2, cos_crease, par):
    """Join triangles i and j of a fan (union by the smaller root) where their normals are
    within the crease: cos(angle) = d / sqrt(l2[i] l2[j]) >= cos_crease compared squared, without
    a square root or a division (a scan's fans are most of its load)."""
    d = fn[i, 0] * fn[j, 0] + fn[i, 1] * fn[j, 1] + fn[i, 2] * fn[j, 2]
    bound = cos_crease * cos_crease * l2[i] * l2[j]
    if (d >= 0.0 and (cos_crease <= 0.0 or d * d >= bound)) or (
            d < 0.0 and cos_crease < 0.0 and d * d <= bound):
        ri, rj = find(par, i), find(par, j)
        if ri != rj:
            par[max(ri, rj)] = min(ri, rj)


@nb.njit(cache=True, nogil=True, inline="always")
def _arc_normal(sums, fn, last, a, out, o):
    """out[o] = the unit normal of arc a (float32, -0.0 folded into +0.0); where its triangles'
    normals cancel (a two-sided sheet), its last triangle's."""
    x, y, z = sums[a, 0], sums[a, 1], sums[a, 2]
    ln = np.sqrt(x * x + y * y + z * z)
    if not ln > 0:
        j = last[a]
        x, y, z = fn[j, 0], fn[j, 1], fn[j, 2]
        ln = np.sqrt(x * x + y * y + z * z)
    if ln > 0:
        x, y, z = x / ln, y / ln, z / ln
    out[o, 0] = np.float32(x) + np.float32(0.0)
    out[o, 1] = np.float32(y) + np.float32(0.0)
    out[o, 2] = np.float32(z) + np.float32(0.0)


@nb.njit(cache=True, nogil=True)
def _scratch(off, lo, hi):
    k = largest_fan(off, lo, hi)
    return (np.empty(k, np.int64), np.empty(k, np.int64), np.empty(2 * k, np.int64),
            np.empty((k, 3), np.float64), np.empty(k, np.float64), np.empty(k, np.int64),
            np.empty(k, np.int64), np.empty(k, np.int64), np.empty((k, 3), np.float64))


@nb.njit(cache=True, nogil=True)
def _fans(lo, hi, tri, P, off, corners, cos_crease, smooth, narcs, first_normal):
    """Positions lo..hi-1: the arcs each has (narcs) and the normal of its first (first_normal).
    Returns the edge uses repeating an earlier one in the same direction."""
    nxt, prv, mate, fn, l2, par, arc, last, sums = _scratch(off, lo, hi)
    repeated = 0
    for v in range(lo, hi):
        _, arcs, rep = _fan(v, tri, P, off, corners, cos_crease, smooth, nxt, prv, mate, fn,
                            l2, par, arc, last, sums)
        repeated += rep
        narcs[v] = arcs
        if arcs:
            _arc_normal(sums, fn, last, 0, first_normal, v)
    return repeated


@nb.njit(cache=True, nogil=True)
def _wedges(lo, hi, tri, P, off, corners, cos_crease, base, narcs, first_normal,
            wedge_position, wedge_normal, triangles):
    """Positions lo..hi-1: their wedges' positions and normals; the fans of those with more than
    one arc worked out again, their corners given their arc's wedge in `triangles` (the others
    hold their position's first wedge already: `_first_wedges`)."""
    nxt, prv, mate, fn, l2, par, arc, last, sums = _scratch(off, lo, hi)
    for v in range(lo, hi):
        b = base[v]
        if narcs[v] == 1:
            wedge_position[b] = v
            for i in range(3):
                wedge_normal[b, i] = first_normal[v, i]
        elif narcs[v] > 1:
            k, arcs, _ = _fan(v, tri, P, off, corners, cos_crease, False, nxt, prv, mate, fn,
                              l2, par, arc, last, sums)
            for a in range(arcs):
                wedge_position[b + a] = v
                _arc_normal(sums, fn, last, a, wedge_normal, b + a)
            s = off[v]
            for j in range(k):
                cr = corners[s + j]
                t = cr // 3
                triangles[t, cr - 3 * t] = b + arc[j]


@nb.njit(cache=True, nogil=True)
def _first_wedges(lo, hi, tri, base, triangles):
    """Triangles lo..hi-1: each corner given its position's first wedge."""
    for t in range(lo, hi):
        for c in range(3):
            triangles[t, c] = base[tri[t, c]]


def fan_normals(tri: np.ndarray, P: np.ndarray, cos_crease: float, smooth: bool = False,
                threads: int | None = None) -> FanNormals:
    """The wedges and normals of triangles `tri` (m, 3) int32 of position ids over positions P
    (p, 3) float32 (non-degenerate triangles: `preprocess.io.repair.clean`), edges sharper than
    the crease (cosine of the face normals below ``cos_crease``), open borders and non-manifold
    edges kept hard, or with ``smooth`` one normal a position. A position no triangle uses has
    no wedge. See the module docstring."""
    m, p = tri.shape[0], P.shape[0]
    off, corners = corners_by_position(tri, p, threads)
    spans = balanced_spans(off, threads, parts_per_thread=4)
    narcs = np.empty(p, np.int32)
    first_normal = np.empty((p, 3), np.float32)
    repeated = sum(run_spans(lambda lo, hi: _fans(lo, hi, tri, P, off, corners, cos_crease,
                                                  smooth, narcs, first_normal), spans,
                             threads))
    splits = int(np.count_nonzero(narcs > 1))
    if splits == 0 and not (narcs == 0).any():  # a wedge a position: the arcs are the positions
        return FanNormals(np.ascontiguousarray(tri, dtype=np.int32),
                          np.arange(p, dtype=np.int32), first_normal, 0, repeated)
    base = np.zeros(p + 1, np.int64)
    np.cumsum(narcs, out=base[1:])
    w = int(base[p])
    triangles = np.empty((m, 3), np.int32)
    run_spans(lambda lo, hi: _first_wedges(lo, hi, tri, base, triangles),
              balanced_spans(np.arange(m + 1, dtype=np.int64), threads), threads)
    wedge_position = np.empty(w, np.int32)
    wedge_normal = np.empty((w, 3), np.float32)
    run_spans(lambda lo, hi: _wedges(lo, hi, tri, P, off, corners, cos_crease, base, narcs,
                                     first_normal, wedge_position, wedge_normal, triangles),
              spans, threads)
    return FanNormals(triangles, wedge_position, wedge_normal, splits, repeated)
