"""Splitting triangles into clusters: at most 128 triangles and 255 vertices each, spatially
compact, nearly full.

Method: a kd-split of the triangle centroids by counts. A range of s triangles that needs
k = ceil(s / max_triangles) clusters is cut along the longest axis of its centroid box so that the
left side holds exactly floor(k / 2) full clusters; selection (not a full sort) finds the cut. Every
leaf is then full except at most one per split chain, which is what makes the fill ~99.9% (the
greedy growth of meshopt_buildMeshlets reaches ~95-99%); cuts along the longest axis keep leaves
compact. A leaf with more than `max_vertices` distinct wedges (a fragmented soup) is halved again.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import preprocess.numba_cache  # noqa: F401  (first: drops stale numba caches)
import numba as nb
import numpy as np


@nb.njit(cache=True, nogil=True)
def _select(cs: np.ndarray, axis: int, perm: np.ndarray, lo: int, hi: int, k: int) -> None:
    """Reorder cs[:, lo:hi] (and perm with it) so that the k-th smallest cs[axis] sits at k,
    smaller ones before it. The centroids travel with perm: sequential access, no indirection."""
    keys = cs[axis]
    left = lo
    right = hi - 1
    while right > left:
        mid = (left + right) >> 1
        # median of three as the pivot
        a = keys[left]
        b = keys[mid]
        c = keys[right]
        if a > b:
            a, b = b, a
        if b > c:
            b = c
            if a > b:
                b = a
        pivot = b
        i = left
        j = right
        while i <= j:
            while keys[i] < pivot:
                i += 1
            while keys[j] > pivot:
                j -= 1
            if i <= j:
                t = perm[i]
                perm[i] = perm[j]
                perm[j] = t
                for d in range(3):
                    f = cs[d, i]
                    cs[d, i] = cs[d, j]
                    cs[d, j] = f
                i += 1
                j -= 1
        if k <= j:
            right = j
        elif k >= i:
            left = i
        else:
            return


@nb.njit(cache=True, nogil=True)
def _count_wedges(tris: np.ndarray, perm: np.ndarray, lo: int, hi: int, stamp: np.ndarray,
                  tag: int) -> int:
    n = 0
    for t in range(lo, hi):
        for c in range(3):
            w = tris[perm[t], c]
            if stamp[w] != tag:
                stamp[w] = tag
                n += 1
    return n


@nb.njit(cache=True, nogil=True)
def kd_split(cs: np.ndarray, perm: np.ndarray, lo: int, hi: int, cut: int) -> None:
    """Partition perm[lo:hi] (and cs) at cut along the longest axis of the centroid box."""
    extent = np.empty(3)
    for a in range(3):
        lo_a = np.inf  # scalars, not array cells: the loop vectorizes
        hi_a = -np.inf
        for t in range(lo, hi):
            v = cs[a, t]
            if v < lo_a:
                lo_a = v
            if v > hi_a:
                hi_a = v
        extent[a] = hi_a - lo_a
    axis = 0
    if extent[1] > extent[axis]:
        axis = 1
    if extent[2] > extent[axis]:
        axis = 2
    _select(cs, axis, perm, lo, hi, cut)


@nb.njit(cache=True, nogil=True)
def _top_cut(lo: int, hi: int, max_triangles: int) -> int:
    """Where a range of more than max_triangles is cut: a multiple of max_triangles, so that
    every cluster but the last is full."""
    k = (hi - lo + max_triangles - 1) // max_triangles
    return lo + (k // 2) * max_triangles


@nb.njit(cache=True, nogil=True)
def _kd_range(cs: np.ndarray, tris: np.ndarray, perm: np.ndarray, lo: int, hi: int,
              stamp: np.ndarray, max_triangles: int, max_vertices: int) -> np.ndarray:
    """Cluster perm[lo:hi] by recursive splits; returns the clusters' ends (absolute), in
    order. stamp: one entry per wedge, private to the caller."""
    ends = np.zeros(hi - lo + 1, np.int64)
    nclusters = 0
    stack = np.zeros((128, 2), np.int64)
    stack[0, 0] = lo
    stack[0, 1] = hi
    top = 1
    tag = 0
    while top > 0:
        top -= 1
        lo_ = stack[top, 0]
        hi_ = stack[top, 1]
        s = hi_ - lo_
        if s <= max_triangles:
            tag += 1
            if s <= 1 or _count_wedges(tris, perm, lo_, hi_, stamp, tag) <= max_vertices:
                # leaves are emitted in stack order: the right part is pushed first, so the
                # cluster sequence follows the split tree left to right (spatially coherent)
                ends[nclusters] = hi_
                nclusters += 1
                continue
            cut = lo_ + s // 2
        else:
            cut = _top_cut(lo_, hi_, max_triangles)
        kd_split(cs, perm, lo_, hi_, cut)
        stack[top, 0] = cut
        stack[top, 1] = hi_
        stack[top + 1, 0] = lo_
        stack[top + 1, 1] = cut
        top += 2
    return ends[:nclusters].copy()


@nb.njit(cache=True, nogil=True)
def cluster_triangles(positions: np.ndarray, tris: np.ndarray, wedge_position: np.ndarray,
                      max_triangles: int, max_vertices: int) -> tuple[np.ndarray, np.ndarray]:
    """`build_clusters` in one thread, on contiguous float32 / int32 inputs with at least one
    triangle (the DAG builder calls it from its numba group job)."""
    m = tris.shape[0]
    cs = np.ascontiguousarray(triangle_centroids(positions, wedge_position, tris).T)
    perm = np.arange(m).astype(np.int32)
    ends = _kd_range(cs, tris, perm, 0, m, np.full(wedge_position.shape[0], -1, np.int64),
                     max_triangles, max_vertices)
    offsets = np.zeros(ends.shape[0] + 1, np.int64)
    offsets[1:] = ends
    return perm, offsets


def _kd_clusters_2(centroids: np.ndarray, tris: np.ndarray, wedge_count: int,
                   max_triangles: int, max_vertices: int) -> tuple[np.ndarray, np.ndarray]:
    """(order, offsets) of the kd clusters, the first cut made here and its two sides clustered
    in two threads: the same clusters in the same order as one thread makes (the recursion is
    independent on each side of a cut)."""
    m = tris.shape[0]
    perm = np.arange(m).astype(np.int32)
    cs = np.ascontiguousarray(centroids.T)  # (3, m), permuted along with perm
    cut = int(_top_cut(0, m, max_triangles))
    kd_split(cs, perm, 0, m, cut)
    with ThreadPoolExecutor(max_workers=2) as pool:
        sides = [pool.submit(_kd_range, cs, tris, perm, a, b,
                             np.full(wedge_count, -1, np.int64), max_triangles, max_vertices)
                 for a, b in ((0, cut), (cut, m))]
        ends = np.concatenate([f.result() for f in sides])
    return perm, np.concatenate([[0], ends]).astype(np.int64)


@nb.njit(cache=True, nogil=True)
def triangle_centroids(positions: np.ndarray, wedge_position: np.ndarray, tris: np.ndarray
                       ) -> np.ndarray:
    """(m, 3) float32 centroids of triangles given as wedge ids."""
    out = np.zeros((tris.shape[0], 3), np.float32)
    for t in range(tris.shape[0]):
        for k in range(3):
            p = wedge_position[tris[t, k]]
            for a in range(3):
                out[t, a] += positions[p, a] * np.float32(1.0 / 3.0)
    return out


def build_clusters(positions: np.ndarray, triangles: np.ndarray, wedge_position: np.ndarray, *,
                   max_triangles: int = 128, max_vertices: int = 255, threads: int = 1
                   ) -> tuple[np.ndarray, np.ndarray]:
    """Split a triangle list into clusters.

    positions (n, 3) float32; triangles (m, 3) int32 wedge ids; wedge_position (k,) int32.
    Returns (order (m,) int32, offsets (c + 1,) int64): cluster i is the triangles
    triangles[order[offsets[i]:offsets[i + 1]]]. threads > 1: the two sides of the first cut in
    two threads (the same result).
    """
    tris = np.ascontiguousarray(triangles, dtype=np.int32)
    if tris.shape[0] == 0:
        return np.zeros(0, np.int32), np.zeros(1, np.int64)
    pos = np.ascontiguousarray(positions, np.float32)
    wpos = np.ascontiguousarray(wedge_position, np.int32)
    if threads > 1 and tris.shape[0] > 2 * max_triangles:
        return _kd_clusters_2(triangle_centroids(pos, wpos, tris), tris, int(wpos.shape[0]),
                              max_triangles, max_vertices)
    return cluster_triangles(pos, tris, wpos, max_triangles, max_vertices)
