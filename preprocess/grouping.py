"""Grouping: the clusters of a DAG level in groups of about `BuildConfig.group_size` (METIS
over the edges they share, weighted by how many), and the positions that groups share, which stay
locked while each group simplifies so that neighbouring groups meet without cracks
(`preprocess.dag` builds the levels with these).
"""

from __future__ import annotations

import preprocess.numba_cache  # noqa: F401  (first: drops stale numba caches)
import numba as nb
import numpy as np
import pymetis


@nb.njit(cache=True, nogil=True)
def shared_positions(pos_tris: np.ndarray, tri_group: np.ndarray, n: int) -> np.ndarray:
    """(n,) bool: positions used by triangles of two or more groups (or clusters)."""
    first = np.full(n, -1, np.int32)
    shared = np.zeros(n, np.bool_)
    for t in range(pos_tris.shape[0]):
        g = tri_group[t]
        for k in range(3):
            p = pos_tris[t, k]
            if first[p] == -1:
                first[p] = g
            elif first[p] != g:
                shared[p] = True
    return shared


@nb.njit(cache=True, nogil=True)
def _adjacent_pairs(pos_tris: np.ndarray, tri_cluster: np.ndarray, n: int) -> np.ndarray:
    """(k, 2) int64 cluster pairs, one row per edge shared by triangles of two clusters
    (n: the number of positions); for an edge with more than two triangles, the cluster of its
    first triangle paired with each other cluster on it.

    Only edges whose two ends are used by two or more clusters can be shared: the others (most
    of them, inside clusters) are skipped. The candidates are bucketed by their smaller end
    (a counting sort, cache-friendly where a hash of edge keys is not) and matched within each
    bucket, which holds a handful."""
    m = pos_tris.shape[0]
    shared = shared_positions(pos_tris, tri_cluster, n)
    start = np.zeros(n + 1, np.int32)
    for t in range(m):
        a = pos_tris[t, 0]
        b = pos_tris[t, 1]
        c = pos_tris[t, 2]
        sa = shared[a]
        sb = shared[b]
        sc = shared[c]
        if sa and sb:
            start[min(a, b) + 1] += 1
        if sb and sc:
            start[min(b, c) + 1] += 1
        if sc and sa:
            start[min(c, a) + 1] += 1
    for i in range(n):
        start[i + 1] += start[i]
    total = start[n]
    cur = start[:n].copy()
    other = np.empty(total, np.int32)  # the larger end of each candidate edge
    owner = np.empty(total, np.int32)  # its triangle's cluster
    for t in range(m):
        if not (shared[pos_tris[t, 0]] or shared[pos_tris[t, 1]]):
            continue  # no edge of t has two shared ends
        cl = tri_cluster[t]
        for k in range(3):
            a = pos_tris[t, k]
            b = pos_tris[t, k + 1 if k < 2 else 0]
            if shared[a] and shared[b]:
                lo = min(a, b)
                i = cur[lo]
                other[i] = max(a, b)
                owner[i] = cl
                cur[lo] = i + 1
    out = np.empty((total, 2), np.int64)
    k = 0
    for v in range(n):
        for i in range(start[v] + 1, start[v + 1]):
            for j in range(start[v], i):  # the edge's first triangle, in triangle order
                if other[j] == other[i]:
                    if owner[j] != owner[i]:
                        out[k, 0] = owner[j]
                        out[k, 1] = owner[i]
                        k += 1
                    break
    return out[:k]


@nb.njit(cache=True, nogil=True)
def gather(store: np.ndarray, tri_off: np.ndarray, clusters: np.ndarray) -> np.ndarray:
    """The triangles of the given clusters, one after the other: (t, 3) int32 wedge ids."""
    t = 0
    for c in clusters:
        t += tri_off[c + 1] - tri_off[c]
    out = np.empty((t, 3), np.int32)
    k = 0
    for c in clusters:
        for i in range(tri_off[c], tri_off[c + 1]):
            for j in range(3):
                out[k, j] = store[i, j]
            k += 1
    return out


@nb.njit(cache=True, nogil=True)
def gather_level(store: np.ndarray, tri_off: np.ndarray, clusters: np.ndarray,
                 wpos: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(pos_tris (t, 3) int32 position ids, tri_cluster (t,) int32 index into clusters) of the
    triangles of the given clusters."""
    pos_tris = gather(store, tri_off, clusters)
    tri_cluster = np.empty(pos_tris.shape[0], np.int32)
    k = 0
    for ci in range(clusters.shape[0]):
        c = clusters[ci]
        for _ in range(tri_off[c], tri_off[c + 1]):
            for j in range(3):
                pos_tris[k, j] = wpos[pos_tris[k, j]]
            tri_cluster[k] = ci
            k += 1
    return pos_tris, tri_cluster


@nb.njit(cache=True, nogil=True)
def _pairs_to_csr(pairs: np.ndarray, nclusters: int
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Symmetric CSR of cluster pairs (one row per shared edge): (xadj, adjncy, weights = the
    number of rows of each pair), neighbours in increasing order."""
    k = pairs.shape[0]
    start = np.zeros(nclusters + 1, np.int64)
    for i in range(k):
        start[pairs[i, 0] + 1] += 1
        start[pairs[i, 1] + 1] += 1
    for c in range(nclusters):
        start[c + 1] += start[c]
    cur = start[:nclusters].copy()
    dst = np.empty(2 * k, np.int64)
    for i in range(k):
        a = pairs[i, 0]
        b = pairs[i, 1]
        dst[cur[a]] = b
        cur[a] += 1
        dst[cur[b]] = a
        cur[b] += 1
    xadj = np.zeros(nclusters + 1, np.int64)
    adjncy = np.empty(2 * k, np.int64)
    weights = np.empty(2 * k, np.int64)
    n = 0
    for c in range(nclusters):
        s = start[c]
        e = start[c + 1]
        for i in range(s + 1, e):  # insertion sort: a cluster has a few dozen shared edges
            v = dst[i]
            j = i - 1
            while j >= s and dst[j] > v:
                dst[j + 1] = dst[j]
                j -= 1
            dst[j + 1] = v
        for i in range(s, e):
            if i > s and dst[i] == dst[i - 1]:
                weights[n - 1] += 1
            else:
                adjncy[n] = dst[i]
                weights[n] = 1
                n += 1
        xadj[c + 1] = n
    return xadj, adjncy[:n].copy(), weights[:n].copy()


def _cluster_adjacency(pos_tris: np.ndarray, tri_cluster: np.ndarray, nclusters: int
                       ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """CSR graph of clusters sharing edges: (xadj, adjncy, weights = shared edge count)."""
    pairs = _adjacent_pairs(pos_tris, tri_cluster, int(pos_tris.max()) + 1)
    return _pairs_to_csr(pairs, nclusters)


def partition_clusters(pos_tris: np.ndarray, tri_cluster: np.ndarray, nclusters: int,
                       group_size: int) -> np.ndarray:
    """(nclusters,) int32 group of each cluster: METIS k-way over shared-edge adjacency.

    pos_tris (t, 3) int32 position ids of all triangles of the clusters; tri_cluster (t,) int32.
    """
    nparts = -(-nclusters // group_size)
    if nparts <= 1:
        return np.zeros(nclusters, np.int32)
    xadj, adjncy, weights = _cluster_adjacency(pos_tris, tri_cluster, nclusters)
    opts = pymetis.Options(seed=1)
    graph = pymetis.CSRAdjacency(xadj, adjncy)
    # recursive bisection: 4x faster than k-way for hundreds of parts, groups as good
    _, parts = pymetis.part_graph(nparts, graph, eweights=weights, options=opts, recursive=True)
    parts = np.asarray(parts, np.int32)
    # METIS may leave parts empty: renumber densely
    _, dense = np.unique(parts, return_inverse=True)
    return dense.astype(np.int32)


def group_level(store: np.ndarray, tri_off: np.ndarray, pending: np.ndarray, wpos: np.ndarray,
                position_count: int, group_size: int) -> tuple[list[np.ndarray], np.ndarray]:
    """The clusters `pending` of a level (rows tri_off[c]:tri_off[c + 1] of store, wedge ids;
    wpos: each wedge's position, of `position_count`) in groups (METIS over their shared edges):
    (each group's member clusters, the positions shared by groups: locked while they
    simplify)."""
    pos_tris, tri_cluster = gather_level(store, tri_off, pending, wpos)
    part = partition_clusters(pos_tris, tri_cluster, len(pending), group_size)
    locked = shared_positions(pos_tris, part[tri_cluster], position_count)
    ngroups = int(part.max()) + 1
    order = np.argsort(part, kind="stable")
    bounds = np.searchsorted(part[order], np.arange(ngroups + 1))
    return [pending[order[bounds[g] : bounds[g + 1]]] for g in range(ngroups)], locked
