"""Triangle-mesh adjacency shared by the loader and the DAG builder (numba, linear time): the
triangle across each edge, the triangles around each position, and a union-find."""

from __future__ import annotations

import preprocess.numba_cache  # noqa: F401  (first: drops stale numba caches)
import numba as nb
import numpy as np


@nb.njit(cache=True, nogil=True)
def edge_neighbours(tri: np.ndarray, p: int) -> tuple[np.ndarray, np.ndarray]:
    """(neighbour (m, 3) int32, opposite (m, 3) bool) of triangles `tri` (m, 3) of position ids
    in 0..p-1: neighbour[t, c] is the triangle across the edge from corner c to corner c + 1, -1
    where that edge is not used by exactly two triangles (an open border, or non-manifold);
    opposite[t, c] whether the two run the edge in opposite directions (consistent winding).

    Edges are found by a counting sort on their smaller end, each bucket matched through a mark
    per larger end: O(m + p) whatever the valence (1M triangles in about 0.1 s)."""
    m = tri.shape[0]
    start = np.zeros(p + 1, np.int64)
    for t in range(m):
        for c in range(3):
            start[min(tri[t, c], tri[t, (c + 1) % 3]) + 1] += 1
    for v in range(p):
        start[v + 1] += start[v]
    fill = start[:-1].copy()
    other = np.empty(3 * m, np.int64)  # the larger end of each edge use
    use = np.empty(3 * m, np.int64)  # 3 * triangle + corner where the edge starts
    for t in range(m):
        for c in range(3):
            a, b = tri[t, c], tri[t, (c + 1) % 3]
            k = fill[min(a, b)]
            other[k] = max(a, b)
            use[k] = 3 * t + c
            fill[min(a, b)] += 1
    mark = np.full(p, -1, np.int64)  # per larger end: the bucket entry that saw it first
    uses = np.zeros(3 * m, np.int32)
    second = np.zeros(3 * m, np.int64)
    neighbour = np.full((m, 3), -1, np.int32)
    opposite = np.zeros((m, 3), np.bool_)
    for v in range(p):
        for k in range(start[v], start[v + 1]):
            f = mark[other[k]]
            if f < 0:
                mark[other[k]] = k
                uses[k] = 1
            else:
                uses[f] += 1
                second[f] = k
        for k in range(start[v], start[v + 1]):
            f = mark[other[k]]
            if uses[f] != 2 or f != k:  # not a two-triangle edge, or its second use
                continue
            k2 = second[k]
            t1, c1, t2, c2 = use[k] // 3, use[k] % 3, use[k2] // 3, use[k2] % 3
            opp = (tri[t1, c1] == v) != (tri[t2, c2] == v)
            neighbour[t1, c1] = t2
            neighbour[t2, c2] = t1
            opposite[t1, c1] = opp
            opposite[t2, c2] = opp
        for k in range(start[v], start[v + 1]):
            mark[other[k]] = -1
    return neighbour, opposite


@nb.njit(cache=True, nogil=True)
def vertex_triangles(ptri: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """(offsets (n + 1,) int64, triangles) of the triangles around each of n positions, for the
    triangles ptri (m, 3) of position ids."""
    off = np.zeros(n + 1, np.int64)
    for t in range(ptri.shape[0]):
        for c in range(3):
            off[ptri[t, c] + 1] += 1
    for i in range(n):
        off[i + 1] += off[i]
    fill = off[:-1].copy()
    tris = np.empty(off[n], np.int32)
    for t in range(ptri.shape[0]):
        for c in range(3):
            v = ptri[t, c]
            tris[fill[v]] = t
            fill[v] += 1
    return off, tris


@nb.njit(cache=True, nogil=True)
def find(parent: np.ndarray, i: int) -> int:
    """The root of i in the union-find forest `parent`, halving the path on the way."""
    while parent[i] != i:
        parent[i] = parent[parent[i]]
        i = parent[i]
    return i
