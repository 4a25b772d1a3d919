"""Triangle-mesh adjacency shared by the loader and the DAG builder (numba, linear time): the
corners around each position (a counting sort), the triangle across each edge (found in the fan
of its smaller end), the triangles around each position, and a union-find."""

from __future__ import annotations

import preprocess.numba_cache  # noqa: F401  (first: drops stale numba caches)
from typing import NamedTuple

import numba as nb
import numpy as np

from preprocess.threads import balanced_spans, run_spans


# A fan of up to this many triangles matches its edges by comparing every pair (a scan's fans hold
# about 6); a larger one (a cone's apex) sorts them.
_PAIRWISE = 48


@nb.njit(cache=True, nogil=True)
def _count_corners(tri, lo, hi, off):
    """off[v + 1] = the corners at position v, for lo <= v < hi."""
    for t in range(tri.shape[0]):
        for c in range(3):
            v = tri[t, c]
            if lo <= v < hi:
                off[v + 1] += 1


@nb.njit(cache=True, nogil=True)
def _place_corners(tri, lo, hi, off, corners):
    """corners[off[v]:off[v + 1]] = 3 * t + c of the corners at position v, in triangle order,
    for lo <= v < hi."""
    fill = off[lo:hi].copy()
    for t in range(tri.shape[0]):
        for c in range(3):
            v = tri[t, c]
            if lo <= v < hi:
                corners[fill[v - lo]] = 3 * t + c
                fill[v - lo] += 1


def corners_by_position(tri: np.ndarray, p: int, threads: int | None = None
                        ) -> tuple[np.ndarray, np.ndarray]:
    """(offsets (p + 1,) int64, corners (3m,) int32, or int64 past 2**31 corners) of the corners
    3 * t + c at each of p positions, in triangle order: a counting sort, each thread sorting the
    corners of its own range of positions (reading all the triangles)."""
    off = np.zeros(p + 1, np.int64)
    spans = balanced_spans(np.arange(p + 1, dtype=np.int64), threads)
    run_spans(lambda lo, hi: _count_corners(tri, lo, hi, off), spans, threads)
    np.cumsum(off, out=off)
    corners = np.empty(3 * tri.shape[0], np.int32 if 3 * tri.shape[0] < 2**31 else np.int64)
    run_spans(lambda lo, hi: _place_corners(tri, lo, hi, off, corners), spans, threads)
    return off, corners


@nb.njit(cache=True, nogil=True)
def largest_fan(off, lo, hi):
    """The most corners any of positions lo..hi-1 has (at least 1): scratch size for a span."""
    k = 1
    for v in range(lo, hi):
        k = max(k, off[v + 1] - off[v])
    return k


@nb.njit(cache=True, nogil=True)
def fan_ends(tri, off, corners, v, nxt, prv):
    """The triangles around position v (corners[off[v]:off[v + 1]], `corners_by_position`): for
    the j-th, its corners after and before v (nxt[j], prv[j]). Returns their count."""
    s = off[v]
    k = off[v + 1] - s
    for j in range(k):
        cr = corners[s + j]
        t = cr // 3
        c = cr - 3 * t
        nxt[j] = tri[t, (c + 1) % 3]
        prv[j] = tri[t, (c + 2) % 3]
    return k


@nb.njit(cache=True, nogil=True)
def fan_mates(k, nxt, prv, mate):
    """The edges of a fan of k triangles around a position v (`fan_ends`): mate[2j] is the
    other triangle of the fan using edge (v, nxt[j]) where exactly two use it, else -1;
    mate[2j + 1] the same for (v, prv[j]). Every triangle using an edge (v, w) is in v's fan, so
    the count there is the mesh's. Returns the edge uses (v, nxt[j]) repeating an earlier one in
    the same direction (0 where the winding is consistent)."""
    repeated = 0
    if k <= _PAIRWISE:
        for j in range(k):
            for i in range(j):
                if nxt[i] == nxt[j]:
                    repeated += 1
                    break
        for j in range(k):
            for side in range(2):
                w = nxt[j] if side == 0 else prv[j]
                uses = 0
                other = -1
                for i in range(k):
                    if nxt[i] == w or prv[i] == w:
                        uses += 1
                        if i != j:
                            other = i
                mate[2 * j + side] = other if uses == 2 else -1
        return repeated
    ends = np.empty(2 * k, np.int64)
    for j in range(k):
        ends[2 * j] = nxt[j]
        ends[2 * j + 1] = prv[j]
    order = np.argsort(ends, kind="mergesort")  # stable: each run in triangle order
    at = 0
    while at < 2 * k:
        run = at + 1
        while run < 2 * k and ends[order[run]] == ends[order[at]]:
            run += 1
        seen_next = False
        for q in range(at, run):
            if order[q] % 2 == 0:  # a use in the direction (v, w)
                if seen_next:
                    repeated += 1
                seen_next = True
            mate[order[q]] = -1
        if run - at == 2:
            mate[order[at]] = order[at + 1] // 2
            mate[order[at + 1]] = order[at] // 2
        at = run
    return repeated


@nb.njit(cache=True, nogil=True)
def _fan_edges(lo, hi, tri, off, corners, neighbour, opposite):
    """`edge_neighbours` of the edges whose smaller end is in positions lo..hi-1."""
    k = largest_fan(off, lo, hi)
    nxt = np.empty(k, np.int64)
    prv = np.empty(k, np.int64)
    mate = np.empty(2 * k, np.int64)
    for v in range(lo, hi):
        k = fan_ends(tri, off, corners, v, nxt, prv)
        fan_mates(k, nxt, prv, mate)
        s = off[v]
        for j in range(k):
            for side in range(2):
                i = mate[2 * j + side]
                w = nxt[j] if side == 0 else prv[j]
                if i <= j or w < v:  # no mate, the pair seen from i, or the edge is w's
                    continue
                cj, ci = corners[s + j], corners[s + i]
                tj, ti = cj // 3, ci // 3
                # the edge from corner c to c + 1: from v where w follows v, else from w
                ej = cj - 3 * tj if side == 0 else (cj - 3 * tj + 2) % 3
                w_next_i = nxt[i] == w
                ei = ci - 3 * ti if w_next_i else (ci - 3 * ti + 2) % 3
                neighbour[tj, ej] = ti
                neighbour[ti, ei] = tj
                opp = (side == 0) != w_next_i
                opposite[tj, ej] = opp
                opposite[ti, ei] = opp


@nb.njit(cache=True, nogil=True)
def _census(lo, hi, tri, P, off, corners, border_vertex, nonmanifold_vertex, mark):
    """`edge_census` of the edges whose smaller end is in positions lo..hi-1: (open borders,
    non-manifold edges, edges used twice in the same direction, edges not allowed (`mark` False),
    the first of those (v, w, uses), the first same-direction edge (v, w), the summed
    |dihedral angle| x length of the edges of two triangles)."""
    k = largest_fan(off, lo, hi)
    nxt = np.empty(k, np.int64)
    prv = np.empty(k, np.int64)
    ends = np.empty(2 * k, np.int64)
    border = nonmanifold = flipped = bad = 0
    bad_v = bad_w = bad_uses = flip_v = flip_w = -1
    curvature = 0.0
    for v in range(lo, hi):
        k = fan_ends(tri, off, corners, v, nxt, prv)
        for j in range(k):
            ends[2 * j] = nxt[j]
            ends[2 * j + 1] = prv[j]
        order = np.argsort(ends[:2 * k], kind="mergesort")  # each run in triangle order
        at = 0
        while at < 2 * k:
            w = ends[order[at]]
            run = at + 1
            while run < 2 * k and ends[order[run]] == w:
                run += 1
            uses = run - at
            if w > v:
                forward = 0
                for q in range(at, run):
                    forward += order[q] % 2 == 0  # v then w in the triangle: v -> w
                if uses == 1:
                    border += 1
                elif uses > 2:
                    nonmanifold += 1
                if mark:
                    if uses == 1:
                        border_vertex[v] = True
                        border_vertex[w] = True
                    elif uses > 2:
                        nonmanifold_vertex[v] = True
                        nonmanifold_vertex[w] = True
                elif not (uses == 2 or (uses == 1 and border_vertex[v] and border_vertex[w])
                          or (uses > 2 and nonmanifold_vertex[v] and nonmanifold_vertex[w])):
                    if bad == 0:
                        bad_v, bad_w, bad_uses = v, w, uses
                    bad += 1
                if uses == 2:
                    if forward != 1:
                        if flipped == 0:
                            flip_v, flip_w = v, w
                        flipped += 1
                    s = off[v]
                    t1 = corners[s + order[at] // 2] // 3
                    t2 = corners[s + order[at + 1] // 2] // 3
                    curvature += _dihedral(P, tri, t1, t2) * np.sqrt(
                        (np.float64(P[v, 0]) - P[w, 0]) ** 2 + (np.float64(P[v, 1]) - P[w, 1]) ** 2
                        + (np.float64(P[v, 2]) - P[w, 2]) ** 2)
            at = run
    return (border, nonmanifold, flipped, bad, bad_v, bad_w, bad_uses, flip_v, flip_w,
            0.5 * curvature)


@nb.njit(cache=True, nogil=True, inline="always")
def _dihedral(P, tri, t1, t2):
    """The angle between the normals of triangles t1 and t2 (radians)."""
    n = np.zeros((2, 3))
    for r in range(2):
        t = t1 if r == 0 else t2
        a, b, c = tri[t, 0], tri[t, 1], tri[t, 2]
        ux, uy, uz = P[b, 0] - np.float64(P[a, 0]), P[b, 1] - np.float64(P[a, 1]), \
            P[b, 2] - np.float64(P[a, 2])
        vx, vy, vz = P[c, 0] - np.float64(P[a, 0]), P[c, 1] - np.float64(P[a, 1]), \
            P[c, 2] - np.float64(P[a, 2])
        n[r, 0], n[r, 1], n[r, 2] = uy * vz - uz * vy, uz * vx - ux * vz, ux * vy - uy * vx
        ln = max(np.sqrt(n[r, 0] ** 2 + n[r, 1] ** 2 + n[r, 2] ** 2), 1e-300)
        n[r] /= ln
    d = n[0, 0] * n[1, 0] + n[0, 1] * n[1, 1] + n[0, 2] * n[1, 2]
    return np.arccos(min(max(d, -1.0), 1.0))


class EdgeCensus(NamedTuple):
    """`edge_census`: the edges of a set of triangles, counted."""

    border: int  # edges used once
    nonmanifold: int  # edges used more than twice
    flipped: int  # edges of two triangles running them the same way
    bad: int  # edges not allowed (given the vertex flags): 0 where marking
    first_bad: tuple[int, int, int]  # (v, w, uses) of the first, (-1, -1, -1) if none
    first_flipped: tuple[int, int]  # (v, w), (-1, -1) if none
    curvature: float  # the sum over edges of two triangles of |dihedral angle| x length / 2
    border_vertex: np.ndarray  # (p,) bool: the flags given, or found (marking)
    nonmanifold_vertex: np.ndarray


def edge_census(tri: np.ndarray, P: np.ndarray, border_vertex: np.ndarray | None = None,
                nonmanifold_vertex: np.ndarray | None = None, threads: int | None = None
                ) -> EdgeCensus:
    """The edges of triangles ``tri`` (m, 3) int32 of position ids over positions P (p, 3)
    float32, each counted in the fan of its smaller end, in threads: no array per edge, only the
    corners by position (`corners_by_position`). Without vertex flags it marks the ends of open
    borders and of non-manifold edges; with them (an original's, for a cut of it), it counts the
    edges that are neither used twice nor allowed by them (an open border of the original used
    once, a non-manifold one of the original used more than twice) as bad."""
    p = P.shape[0]
    mark = border_vertex is None
    if mark:
        border_vertex = np.zeros(p, np.bool_)
        nonmanifold_vertex = np.zeros(p, np.bool_)
    tri = np.ascontiguousarray(tri, np.int32)
    off, corners = corners_by_position(tri, p, threads)
    parts = run_spans(lambda lo, hi: _census(lo, hi, tri, P, off, corners, border_vertex,
                                             nonmanifold_vertex, mark),
                      balanced_spans(off, threads, parts_per_thread=2), threads)
    first_bad = next(((r[4], r[5], r[6]) for r in parts if r[3]), (-1, -1, -1))
    first_flipped = next(((r[7], r[8]) for r in parts if r[2]), (-1, -1))
    return EdgeCensus(sum(r[0] for r in parts), sum(r[1] for r in parts),
                      sum(r[2] for r in parts), sum(r[3] for r in parts), first_bad,
                      first_flipped, float(sum(r[9] for r in parts)), border_vertex,
                      nonmanifold_vertex)


@nb.njit(cache=True, nogil=True)
def edge_neighbours(tri: np.ndarray, p: int) -> tuple[np.ndarray, np.ndarray]:
    """(neighbour (m, 3) int32, opposite (m, 3) bool) of triangles `tri` (m, 3) of position ids
    in 0..p-1: neighbour[t, c] is the triangle across the edge from corner c to corner c + 1, -1
    where that edge is not used by exactly two triangles (an open border, or non-manifold);
    opposite[t, c] whether the two run the edge in opposite directions (consistent winding).

    Each edge is found in the fan of its smaller end (`fan_mates`): O(m + p) whatever the
    valence. One thread; `surface_topology` runs the fans in threads."""
    m = tri.shape[0]
    off = np.zeros(p + 1, np.int64)
    _count_corners(tri, 0, p, off)
    for v in range(p):
        off[v + 1] += off[v]
    corners = np.empty(3 * m, np.int64)
    _place_corners(tri, 0, p, off, corners)
    neighbour = np.full((m, 3), -1, np.int32)
    opposite = np.zeros((m, 3), np.bool_)
    _fan_edges(0, p, tri, off, corners, neighbour, opposite)
    return neighbour, opposite


def surface_topology(ptri: np.ndarray, p: int, threads: int | None = None
                     ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(edge neighbours (m, 3) int32 as `edge_neighbours` gives them, and the triangles around
    each position: offsets (p + 1,) int64, triangles int32 in triangle order) of triangles
    ``ptri`` (m, 3) int32 of position ids, the fans in threads: one counting sort for both,
    nothing per corner but the corners themselves (which become the triangles)."""
    off, corners = corners_by_position(ptri, p, threads)
    neighbour = np.full((ptri.shape[0], 3), -1, np.int32)
    opposite = np.zeros((ptri.shape[0], 3), np.bool_)
    run_spans(lambda lo, hi: _fan_edges(lo, hi, ptri, off, corners, neighbour, opposite),
              balanced_spans(off, threads, parts_per_thread=4), threads)
    np.floor_divide(corners, 3, out=corners)
    return neighbour, off, corners


@nb.njit(cache=True, nogil=True)
def find(parent: np.ndarray, i: int) -> int:
    """The root of i in the union-find forest `parent`, halving the path on the way."""
    while parent[i] != i:
        parent[i] = parent[parent[i]]
        i = parent[i]
    return i
