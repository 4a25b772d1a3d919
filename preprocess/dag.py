"""The cluster LOD DAG: level 0 clusters, then level after level of grouping (METIS over shared
edges), simplification of each group to about half with its border locked, and re-splitting, until
one root group remains. See `preprocess.lod` for the data and the cut rule it guarantees.

Errors are measured against the original surface, not summed level after level: a group's
geometric error is the largest distance of its simplified surface to the original mesh, found
over dense sample points (`original_distance`), or, where more, the largest distance of a
position the simplification removed to the simplified surface (surface dropped with nothing in
its place, `dropped_distance`; the farthest of them are carried up and measured again at every
level above), both times SAMPLED_FACTOR (a group that is the whole of its level: every original
position, exact, times DROPPED_FACTOR); its LOD error is the larger of that and the shading term
times the shading weight; both at least its members', so that errors never decrease from child to
parent (what makes the cut well defined). The dense-sampling checks of
`preprocess.verify` hold the errors to the true distance; `verify.error_tightness` reports how
close they are.

Threads: the groups of a level are independent, so each is one numba job (`_group_job`: gather,
localize, simplify, measure, re-split, bounds) that runs without the GIL in a pool of one worker
per core (more than two share two of glibc's malloc arenas: `ARENAS`); the main thread
partitions the next level, and records each group's result in group order as soon as it is in.
Results do not depend on the number of threads.
"""

from __future__ import annotations

import contextlib
import ctypes
import itertools
import os
import sys
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import NamedTuple

import preprocess.numba_cache  # noqa: F401  (first: drops stale numba caches)
import numba as nb
import numpy as np

from preprocess.cluster import build_clusters, cluster_triangles
from preprocess.config import BuildConfig
from preprocess.tess.limits import ROOT_ERROR

from preprocess.grouping import gather, group_level
from preprocess.lod import LodDag
from preprocess.mesh import Mesh
from preprocess.measure import (
    DROPPED_FACTOR,
    SAMPLE_SPACING,
    WITNESSES,
    cluster_positions,
    dropped_distance,
    edge_length2,
    farthest_by_cluster,
    group_errors,
    original_distance,
    simplify_sampled,
)
from preprocess.topology import find, surface_topology

# a group that is the whole of its level (the coarse levels, and those of a one-cluster root)
# whose removed positions lie more than KEEP_RATIO times further from its result than its result
# from its input has let surface vanish (an ear, a nose, a tip): it is simplified again with the
# input position nearest the farthest removed one held, up to KEEP_TRIES times (the holds add
# up), and keeps the result of the smallest error (LOD error, then geometric). Igea's coarsest
# level: 0.063 -> 0.031 at 122 triangles where 118; more in BENCHMARKS.md, "2026-11-26, later"
KEEP_RATIO = 1.15
KEEP_TRIES = 4
# at or below the coarsest level's target, a whole level's result whose geometric error is more
# than LOSS_RATIO times its own surface's (its samples' distance to the original) has lost
# surface that no hold kept (an ear at 40 triangles): it is not taken, the level below it is the
# root. Far copies draw a few more triangles; no level stores an error its surface does not show
LOSS_RATIO = 1.1
# a chunk's levels (`build_chunk`) stop at this one at the latest: its border stays at full
# detail until the levels above the chunks, which a cut keeps while the chunk's interior is
# finer than the first of those; built to one group, chunks drew 68x the triangles of a whole
# build from far (the border's fans under a group of the chunk's coarsest error); at 4 levels a
# 1M scan's chunked build drew 1.045x the whole one's over the quality views (BENCHMARKS.md)
CHUNK_LEVELS = 4
# a whole level's measure of every original position (`farthest_by_cluster`) is split into
# ranges of level-0 clusters holding at least this many positions, one a worker (the coarse
# levels are single groups: the other cores are idle there)
MEASURE_CHUNK = 16384

Progress = Callable[[str, int, int], None]  # (stage, done, total)
_TINY_RADIUS = float(np.finfo(np.float32).tiny)  # the smallest normal float32, 1.2e-38


@nb.njit(cache=True, nogil=True)
def merge_spheres(spheres: np.ndarray) -> np.ndarray:
    """(k, 4) float32 spheres -> (4,) float32 sphere containing them all (after float32 rounding).

    Centre: the middle of the box around the spheres; radius: the farthest sphere surface."""
    lo = np.full(3, np.inf)
    hi = np.full(3, -np.inf)
    for i in range(spheres.shape[0]):
        r = np.float64(spheres[i, 3])
        for a in range(3):
            lo[a] = min(lo[a], spheres[i, a] - r)
            hi[a] = max(hi[a], spheres[i, a] + r)
    out = np.zeros(4, np.float32)
    for a in range(3):
        out[a] = np.float32(0.5 * (lo[a] + hi[a]))
    rmax = 0.0
    for i in range(spheres.shape[0]):
        d = 0.0
        for a in range(3):
            e = np.float64(spheres[i, a]) - np.float64(out[a])
            d += e * e
        rmax = max(rmax, np.sqrt(d) + spheres[i, 3])
    out[3] = np.nextafter(np.float32(rmax * (1 + 1e-6)), np.float32(np.inf))
    return out


@nb.njit(cache=True, nogil=True, inline="always")
def _slot_of(table: np.ndarray, ids: np.ndarray, key: int) -> int:
    """The slot of ``key`` in an open-addressing table of local numbers (-1: empty) over
    ``ids`` (local number -> global id): where it is, or the empty slot it would take."""
    mask = table.shape[0] - 1
    s = (np.uint64(key) * np.uint64(0x9E3779B97F4A7C15)) >> np.uint64(32)
    s = np.int64(s) & mask
    while table[s] >= 0 and ids[table[s]] != key:
        s = (s + 1) & mask
    return s


@nb.njit(cache=True, nogil=True)
def _localize(tris: np.ndarray, wpos: np.ndarray
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """A group's sub-mesh with local numbering, in first-use order.

    tris (t, 3) global wedge ids. Returns (local tris (t, 3), wedges (k,) global ids, local
    wedge->position (k,), positions (n,) global ids). The global ids are found in hash tables of
    the group's size (a per-thread array a wedge of the whole mesh held 1.4 GB a thread at 100M
    triangles)."""
    t = tris.shape[0]
    local = np.zeros((t, 3), np.int32)
    wedges = np.zeros(3 * t, np.int32)
    lwp = np.zeros(3 * t, np.int32)
    pos = np.zeros(3 * t, np.int32)
    size = 16
    while size < 6 * t:
        size <<= 1
    wtable = np.full(size, -1, np.int32)
    ptable = np.full(size, -1, np.int32)
    nw = 0
    npos = 0
    for i in range(t):
        for k in range(3):
            w = tris[i, k]
            ws = _slot_of(wtable, wedges, w)
            if wtable[ws] < 0:
                p = wpos[w]
                ps = _slot_of(ptable, pos, p)
                if ptable[ps] < 0:
                    ptable[ps] = npos
                    pos[npos] = p
                    npos += 1
                wtable[ws] = nw
                wedges[nw] = w
                lwp[nw] = ptable[ps]
                nw += 1
            local[i, k] = wtable[ws]
    return local, wedges[:nw].copy(), lwp[:nw].copy(), pos[:npos].copy()


@nb.njit(cache=True, nogil=True)
def _cluster_bounds(positions: np.ndarray, tris: np.ndarray, wedge_position: np.ndarray,
                    offsets: np.ndarray) -> np.ndarray:
    """(c, 4) float32 bounding sphere of each cluster tris[offsets[i]:offsets[i + 1]] (wedge
    ids): the centre of its box, the farthest vertex (a little more, for rounding)."""
    c = offsets.shape[0] - 1
    out = np.zeros((c, 4), np.float32)
    for i in range(c):
        lx = ly = lz = np.inf
        hx = hy = hz = -np.inf
        for t in range(offsets[i], offsets[i + 1]):
            for k in range(3):
                p = wedge_position[tris[t, k]]
                x = np.float64(positions[p, 0])
                y = np.float64(positions[p, 1])
                z = np.float64(positions[p, 2])
                lx = min(lx, x)
                ly = min(ly, y)
                lz = min(lz, z)
                hx = max(hx, x)
                hy = max(hy, y)
                hz = max(hz, z)
        cx = 0.5 * (lx + hx)
        cy = 0.5 * (ly + hy)
        cz = 0.5 * (lz + hz)
        r2 = 0.0
        for t in range(offsets[i], offsets[i + 1]):
            for k in range(3):
                p = wedge_position[tris[t, k]]
                ex = positions[p, 0] - cx
                ey = positions[p, 1] - cy
                ez = positions[p, 2] - cz
                r2 = max(r2, ex * ex + ey * ey + ez * ez)
        out[i, 0] = cx
        out[i, 1] = cy
        out[i, 2] = cz
        # relative slack for the float32 rounding; the floor keeps a one-point cluster's radius
        # positive without an absolute epsilon (1e-30 doubled the bounds of a mesh that size)
        out[i, 3] = max(np.sqrt(r2) * (1.0 + 1e-6), _TINY_RADIUS)
    return out


@nb.njit(cache=True, nogil=True)
def _level0(triangles: np.ndarray, order: np.ndarray, offsets: np.ndarray,
            wedge_position: np.ndarray, positions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The level-0 clusters' triangles in cluster order, and their bounding spheres."""
    ordered = np.empty((order.shape[0], 3), np.int32)
    for i in range(order.shape[0]):
        for j in range(3):
            ordered[i, j] = triangles[order[i], j]
    return ordered, _cluster_bounds(positions, ordered, wedge_position, offsets)


@nb.njit(cache=True, nogil=True)
def _carried_by(members: np.ndarray, wit: np.ndarray, wit_off: np.ndarray) -> np.ndarray:
    """The original positions the members carry (rows wit_off[c]:wit_off[c + 1] of wit)."""
    ncarried = 0
    for c in members:
        ncarried += wit_off[c + 1] - wit_off[c]
    carried = np.empty(ncarried, np.int32)
    ncarried = 0
    for c in members:
        for i in range(wit_off[c], wit_off[c + 1]):
            carried[ncarried] = wit[i]
            ncarried += 1
    return carried


@nb.njit(cache=True, nogil=True)
def _kept_by_cluster(kept: np.ndarray, kept_row: np.ndarray, order: np.ndarray,
                     offsets: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Each kept position goes up with the new cluster of its nearest output triangle (kept_row:
    rows of the output; order, offsets: the new clusters' triangles): (ids, cluster offsets)."""
    nclusters = offsets.shape[0] - 1
    cluster_of = np.empty(k, np.int32)
    for c in range(nclusters):
        for i in range(offsets[c], offsets[c + 1]):
            cluster_of[order[i]] = c
    kept_off = np.zeros(nclusters + 1, np.int64)
    for i in range(kept.shape[0]):
        kept_off[cluster_of[kept_row[i]] + 1] += 1
    for c in range(nclusters):
        kept_off[c + 1] += kept_off[c]
    fill = kept_off[:nclusters].copy()
    kept_ids = np.empty(kept.shape[0], np.int32)
    for i in range(kept.shape[0]):
        c = cluster_of[kept_row[i]]
        kept_ids[fill[c]] = kept[i]
        fill[c] += 1
    return kept_ids, kept_off


@nb.njit(cache=True, nogil=True)
def _renumber(new_local: np.ndarray, order: np.ndarray, wedges: np.ndarray, fresh: np.ndarray,
              normal: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The output in cluster order: (local wedge ids, global wedge ids or -1 - j for the j-th
    fresh wedge (numbered in order of first use), each fresh wedge's source wedge and
    attributes)."""
    k = new_local.shape[0]
    fresh_id = np.full(wedges.shape[0], -1, np.int32)
    q = 0
    for t in range(k):
        for c in range(3):
            w = new_local[t, c]
            if fresh[w] and fresh_id[w] < 0:
                fresh_id[w] = q
                q += 1
    fresh_src = np.empty(q, np.int32)
    fresh_attr = np.empty((q, normal.shape[1]), np.float32)
    for w in range(wedges.shape[0]):
        if fresh_id[w] >= 0:
            fresh_src[fresh_id[w]] = wedges[w]
            for j in range(normal.shape[1]):
                fresh_attr[fresh_id[w], j] = normal[w, j]
    ordered = np.empty((k, 3), np.int32)
    out = np.empty((k, 3), np.int32)
    for t in range(k):
        for c in range(3):
            w = new_local[order[t], c]
            ordered[t, c] = w
            out[t, c] = -1 - fresh_id[w] if fresh_id[w] >= 0 else wedges[w]
    return ordered, out, fresh_src, fresh_attr


@nb.njit(cache=True, nogil=True)
def _group_job(store: np.ndarray, tri_off: np.ndarray, members: np.ndarray, wpos: np.ndarray,
               positions: np.ndarray, attrs: np.ndarray, locked: np.ndarray, below: np.ndarray,
               original: tuple, carried_rows: tuple, params: tuple):
    """Merge, simplify and re-split one group, all in numba so that the worker threads never
    wait for the GIL. below: each member's geometric error; original: the original surface
    (position triangles, edge neighbours, vertex-triangle offsets and triangles); carried_rows:
    (wit, wit_off, witnesses): the original positions each cluster carries, rows
    wit_off[c]:wit_off[c + 1] of wit, and how many a new cluster may carry; params: (ratio,
    stuck_ratio, max_triangles, max_vertices, permissive, color_start, normal_weight, uv_start,
    spacing).

    Returns (ok, new triangles cluster after cluster: global wedge ids, or -1 - j for the j-th
    fresh wedge, fresh wedges: (their source wedge (q,) int32, their prefiltered normal (q, 3)
    float32), the largest distance of the samples to the original (`original_distance`), the
    slack, the largest distance of a removed position to the output (`dropped_distance`), the
    shading term (`measure.shading_term`), cluster offsets, cluster bounds, the original
    positions each new cluster carries upward (ids, cluster offsets): at most `witnesses` per
    cluster, from the members' and the removed ones, the farthest; the farthest of them); ok
    is False when the group cannot get below stuck_ratio of its triangles (it is then terminal
    for this level). Attempts: cheap collapses; dearer ones; then, with `permissive`, across
    seams and creases, and last the smallest pieces that touch no other group may vanish
    (`_drop_small_pieces`). spacing: the farthest apart the samples of a long output triangle
    may lie (`SAMPLE_SPACING`)."""
    (ratio, stuck_ratio, max_triangles, max_vertices, permissive, color_start, normal_weight,
     uv_start, spacing) = params
    ptri, nbr, vt_off, vt_tri = original
    wit, wit_off, witnesses = carried_rows
    tris = gather(store, tri_off, members)
    local, wedges, local_wp, pos_ids = _localize(tris, wpos)
    m = tris.shape[0]
    n = pos_ids.shape[0]
    pos = np.empty((n, 3), np.float32)
    lock = np.empty(n, np.bool_)
    for i in range(n):
        for j in range(3):
            pos[i, j] = positions[pos_ids[i], j]
        lock[i] = locked[pos_ids[i]]
    attr = np.empty((wedges.shape[0], attrs.shape[1]), np.float32)
    for i in range(wedges.shape[0]):
        for j in range(attrs.shape[1]):
            attr[i, j] = attrs[wedges[i], j]
    target = max(1, int(m * ratio))
    new_local = local
    X = np.zeros((0, 3), np.float64)
    d = np.zeros(0, np.float64)
    slack = 0.0
    shade = 0.0
    normal = np.zeros((wedges.shape[0], attrs.shape[1]), np.float32)
    fresh = np.zeros(wedges.shape[0], np.bool_)
    near = np.zeros(0, np.int32)
    owner = np.zeros(0, np.int32)
    in_pt = np.zeros((0, 3), np.int32)
    if m > target:
        for attempt in range(3 if permissive else 2):
            (new_local, X, d, slack, normal, fresh, shade, near, in_pt, owner, _,
             _) = simplify_sampled(pos, local, local_wp, attr, lock, target, attempt > 0,
                                   attempt > 1, color_start, normal_weight, uv_start, spacing)
            if new_local.shape[0] <= stuck_ratio * m:
                break
        if permissive and new_local.shape[0] > stuck_ratio * m:
            new_local = _drop_small_pieces(pos, new_local, local_wp, lock,
                                           int(stuck_ratio * m))
    k = new_local.shape[0]
    if k == 0 or k > stuck_ratio * m:
        return (False, new_local, np.zeros(0, np.int32),
                np.zeros((0, attrs.shape[1]), np.float32), 0.0,
                slack, 0.0, shade, np.zeros(1, np.int64), np.zeros((0, 4), np.float32),
                np.zeros(0, np.int32), np.zeros(1, np.int64), -1)
    # each input triangle's distance to the original: at most its cluster's geometric error
    tri_below = np.empty(m, np.float64)
    t = 0
    for i in range(members.shape[0]):
        for _ in range(tri_off[members[i] + 1] - tri_off[members[i]]):
            tri_below[t] = below[i]
            t += 1
    own = original_distance(X, d, tri_below, near, owner, in_pt, pos_ids, positions, ptri,
                            nbr, vt_off, vt_tri)
    order, offsets = cluster_triangles(pos, new_local, local_wp, max_triangles, max_vertices)
    nclusters = offsets.shape[0] - 1
    dropped, kept, kept_row, farthest = dropped_distance(pos, new_local, local_wp, pos_ids,
                                                         positions,
                                                         _carried_by(members, wit, wit_off),
                                                         witnesses * nclusters)
    kept_ids, kept_off = _kept_by_cluster(kept, kept_row, order, offsets, k)
    ordered, out, fresh_src, fresh_attr = _renumber(new_local, order, wedges, fresh, normal)
    return (True, out, fresh_src, fresh_attr, own, slack, dropped, shade, offsets,
            _cluster_bounds(pos, ordered, local_wp, offsets), kept_ids, kept_off, farthest)


@nb.njit(cache=True, nogil=True)
def _drop_small_pieces(pos: np.ndarray, tris: np.ndarray, local_wp: np.ndarray,
                       lock: np.ndarray, goal: int) -> np.ndarray:
    """tris (k, 3) wedge ids without their smallest connected pieces (by bounding-box diagonal)
    among those with no locked position (so no other group shares them: nothing can crack),
    until at most `goal` triangles are left; the largest piece always stays. What a piece that
    vanishes costs is in the error: its positions' distance to what is left
    (`dropped_distance`), at least its size. Many-shelled assets (a game model's small
    separate parts) otherwise stop simplifying where each shell reached its own minimum."""
    k = tris.shape[0]
    n = pos.shape[0]
    parent = np.arange(n)
    for t in range(k):
        for c in range(1, 3):
            a = find(parent, local_wp[tris[t, 0]])
            b = find(parent, local_wp[tris[t, c]])
            if a != b:
                parent[max(a, b)] = min(a, b)
    root = np.empty(n, np.int64)
    for p in range(n):
        root[p] = find(parent, p)
    count = np.zeros(n, np.int64)
    locked_piece = np.zeros(n, np.bool_)
    lo = np.full((n, 3), np.inf)
    hi = np.full((n, 3), -np.inf)
    for t in range(k):
        count[root[local_wp[tris[t, 0]]]] += 1
        for c in range(3):
            p = local_wp[tris[t, c]]
            r = root[p]
            locked_piece[r] = locked_piece[r] or lock[p]
            for j in range(3):
                lo[r, j] = min(lo[r, j], pos[p, j])
                hi[r, j] = max(hi[r, j], pos[p, j])
    size = np.full(n, np.inf)
    biggest = -1
    for r in range(n):
        if count[r] > 0:
            size[r] = np.sqrt(np.sum((hi[r] - lo[r]) ** 2))
            if biggest < 0 or size[r] > size[biggest]:
                biggest = r
            if locked_piece[r]:
                size[r] = np.inf  # shared with other groups: stays
    size[biggest] = np.inf
    drop = np.zeros(n, np.bool_)
    left = k
    for r in np.argsort(size):
        if left <= goal or not np.isfinite(size[r]):
            break
        drop[r] = True
        left -= count[r]
    out = np.empty((left, 3), np.int32)
    i = 0
    for t in range(k):
        if not drop[root[local_wp[tris[t, 0]]]]:
            for c in range(3):
                out[i, c] = tris[t, c]
            i += 1
    return out


class Rows:
    """A numpy array that grows along its first axis (capacity doubles: appends are amortized
    O(rows) and need no per-row Python objects)."""

    def __init__(self, tail: tuple[int, ...], dtype, capacity: int = 1024) -> None:
        self.data = np.empty((max(capacity, 16), *tail), dtype)
        self.n = 0

    def extend(self, block) -> None:
        k = len(block)
        need = self.n + k
        if need > len(self.data):
            grown = np.empty((max(need, 2 * len(self.data)), *self.data.shape[1:]),
                             self.data.dtype)
            grown[: self.n] = self.data[: self.n]
            self.data = grown
        self.data[self.n : need] = block
        self.n = need

    @property
    def view(self) -> np.ndarray:
        return self.data[: self.n]


def _position_triangles(mesh: Mesh) -> np.ndarray:
    """(m, 3) int32: the mesh's triangles as position ids; the triangles themselves where every
    position has one wedge, numbered alike (a scan without attributes: no copy)."""
    wpos = np.asarray(mesh.wedge_position)
    tris = np.asarray(mesh.triangles)
    if (len(wpos) == len(mesh.positions) and tris.dtype == np.int32 and tris.flags.c_contiguous
            and np.array_equal(wpos, np.arange(len(wpos), dtype=wpos.dtype))):
        return tris
    return np.ascontiguousarray(wpos[tris], np.int32)


def _surface_topology(ptri: np.ndarray, n: int, threads: int
                      ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    return (ptri, *surface_topology(ptri, n, threads))


@nb.njit(cache=True, nogil=True)
def _mean_edge(positions: np.ndarray, ptri: np.ndarray) -> float:
    """The mean edge length of the triangles ptri (m, 3) (each edge once per triangle)."""
    total = 0.0
    for t in range(ptri.shape[0]):
        for e in range(3):
            total += np.sqrt(edge_length2(positions, ptri, t, e))
    return total / max(3 * ptri.shape[0], 1)


class _Simplified(NamedTuple):
    """One group simplified (`_Builder.simplify_group`), as `_Builder.add_simplified` records it:
    its new triangles cluster after cluster (global wedge ids, or -1 - j for the j-th fresh
    wedge), its geometric error and weighted shading term, the new clusters' offsets and bounds,
    the fresh wedges (source wedge, attributes) and the original positions each new cluster
    carries (ids, cluster offsets)."""

    new_tris: np.ndarray
    geo: float
    shade: float
    offsets: np.ndarray
    bounds: np.ndarray
    fresh_src: np.ndarray
    fresh_attr: np.ndarray
    witness: np.ndarray
    witness_off: np.ndarray
    surface: float  # the part of geo that is its own surface's distance to the original
    # (`_Builder.loses_surface` compares them)


class _Builder:
    """Accumulates clusters and groups while the levels are built. The triangles of all clusters
    live in one array, cluster after cluster (`store`, `tri_off`); worker threads only read the
    clusters of the level being simplified, the main thread appends between levels."""

    def __init__(self, mesh: Mesh, config: BuildConfig, pool: ThreadPoolExecutor,
                 threads: int, original: Mesh | None = None) -> None:
        self.mesh = mesh
        self.config = config
        self.shading_weight = config.shading_weight_for(mesh)
        self.positions = np.ascontiguousarray(mesh.positions, np.float32)
        # the wedges: the mesh's, then the fresh ones of coarse levels (prefiltered normals)
        attrs = np.ascontiguousarray(mesh.wedge_attributes(), np.float32)
        self.wedge_rows = Rows((), np.int32, 2 * len(mesh.wedge_position) + 1024)
        self.wedge_rows.extend(np.asarray(mesh.wedge_position, np.int32))
        self.attr_rows = Rows((attrs.shape[1],), np.float32, 2 * len(attrs) + 1024)
        self.attr_rows.extend(attrs)
        columns = mesh.attribute_columns()
        color, uv = columns.get("color"), columns.get("uv")
        self.color_start = -1 if color is None else color.start  # prefiltered like normals
        self.uv_start = -1 if uv is None else uv.start  # in the collapse cost with the normals
        m = mesh.triangle_count
        # every cluster's (t, 3) wedge ids: about 2m in all (each level about half the one below,
        # some more), 3m reserved so that it never grows (a copy at the end of the build, both
        # held at once; pages never written cost no memory)
        self.store = Rows((3,), np.int32, 3 * m + 1024)
        self.tri_off = Rows((), np.int64, m // 32 + 64)
        self.tri_off.extend([0])
        self.level = Rows((), np.int32)
        self.source = Rows((), np.int32)
        self.self_sphere = Rows((4,), np.float32)
        self.self_error = Rows((), np.float64)
        # the part of self_error that is distance (without the shading term): what the
        # input of the next level lies within, for the triangle inequality of its measurement
        self.geo_error = Rows((), np.float64)
        self.bounds = Rows((4,), np.float32)
        # per cluster, original positions not on it that it answers for (`dropped_distance`):
        # rows witness_off[c]:witness_off[c + 1] of witness
        self.witness = Rows((), np.int32)
        self.witness_off = Rows((), np.int64, m // 32 + 64)
        self.witness_off.extend([0])
        self.group_of = Rows((), np.int32)
        self.groups: list[np.ndarray] = []  # member cluster ids
        self.group_level: list[int] = []
        self.group_sphere: list[np.ndarray] = []
        self.group_error: list[float] = []
        # the original surface, which group errors are measured against: position triangles, their
        # edge neighbours and the triangles around each position (where walks start and step);
        # made by a worker while this thread clusters level 0 and partitions it (the first job
        # of the pool, so a group job that waits for it never waits for a job queued behind it)
        # (`original`: another mesh over the same positions, `build_top`'s)
        ptri = _position_triangles(original or mesh)
        self.pool = pool
        self.threads = threads
        self._original = pool.submit(_surface_topology, ptri, len(self.positions), threads)
        self._mean_edge = pool.submit(_mean_edge, self.positions, ptri)  # off the main thread too

    @property
    def original(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(ptri, edge neighbours, vertex-triangle offsets, vertex triangles) of the original."""
        return self._original.result()

    @property
    def spacing(self) -> float:
        """The farthest apart the samples of a long simplified triangle may lie
        (`SAMPLE_SPACING` of the original's mean edges)."""
        return SAMPLE_SPACING * self._mean_edge.result()

    @property
    def wpos(self) -> np.ndarray:
        """(k,) int32: the position of each wedge (the mesh's, then the fresh ones)."""
        return self.wedge_rows.view

    @property
    def attrs(self) -> np.ndarray:
        """(k, 3 or 5) float32: each wedge's normal (and uv)."""
        return self.attr_rows.view

    def cluster_sizes(self, clusters: np.ndarray) -> np.ndarray:
        off = self.tri_off.view
        return off[clusters + 1] - off[clusters]

    def add_clusters(self, ordered: np.ndarray, offsets: np.ndarray, bounds: np.ndarray,
                     level: int, source: int, sphere: np.ndarray | None, error: float,
                     geo_error: float, witness: np.ndarray | None = None,
                     witness_off: np.ndarray | None = None) -> np.ndarray:
        """Append the clusters ordered[offsets[i]:offsets[i+1]] with their bounds (and the
        original positions they carry: witness[witness_off[i]:witness_off[i+1]]); returns their
        ids. sphere None (level 0): each cluster's LOD sphere is its own bound."""
        first = self.level.n
        n = len(offsets) - 1
        if witness is None:
            witness, witness_off = np.zeros(0, np.int32), np.zeros(n + 1, np.int64)
        self.witness_off.extend(self.witness.n + witness_off[1:])
        self.witness.extend(witness)
        self.tri_off.extend(self.store.n + offsets[1:])
        self.store.extend(ordered)
        self.level.extend(np.full(n, level, np.int32))
        self.source.extend(np.full(n, source, np.int32))
        self.self_sphere.extend(bounds if sphere is None else np.broadcast_to(sphere, (n, 4)))
        self.self_error.extend(np.full(n, error))
        self.geo_error.extend(np.full(n, geo_error))
        self.bounds.extend(bounds)
        self.group_of.extend(np.full(n, -1, np.int32))
        return np.arange(first, first + n, dtype=np.int32)

    def add_given(self, given: Given) -> np.ndarray:
        """Append clusters built elsewhere (a chunk's coarsest, `build_top`): the mesh's
        triangles in cluster order, with their levels, LOD spheres, errors and carried
        positions as they were built; returns their ids."""
        ids = self.add_clusters(np.asarray(self.mesh.triangles, np.int32), given.offsets,
                                given.bounds, 0, -1, None, 0.0, 0.0, given.witness,
                                given.witness_off)
        self.level.view[ids] = given.level
        self.self_sphere.view[ids] = given.self_sphere
        self.self_error.view[ids] = given.self_error
        self.geo_error.view[ids] = given.geo_error
        return ids

    def part(self, top: np.ndarray) -> DagPart:
        """What this builder built, as arrays (`DagPart`); top: the clusters no group of its
        own holds (a chunk's coarsest), with the original positions they carry."""
        goff = np.zeros(len(self.groups) + 1, np.int64)
        np.cumsum([len(g) for g in self.groups], out=goff[1:])
        woff = self.witness_off.view
        top = np.asarray(top, np.int32)
        counts = woff[top + 1] - woff[top]
        top_witness_off = np.zeros(len(top) + 1, np.int64)
        np.cumsum(counts, out=top_witness_off[1:])
        top_witness = _carried_by(top, self.witness.view, woff)
        return DagPart(  # views: the builder is done with them
            triangles=self.store.view, tri_offset=self.tri_off.view,
            level=self.level.view, group=self.group_of.view,
            source=self.source.view, bounds=self.bounds.view,
            self_sphere=self.self_sphere.view, self_error=self.self_error.view,
            geo_error=self.geo_error.view,
            group_members=(np.concatenate(self.groups).astype(np.int32) if self.groups
                           else np.zeros(0, np.int32)),
            group_offset=goff, group_level=np.array(self.group_level, np.int32),
            group_sphere=np.array(self.group_sphere, np.float32).reshape(-1, 4),
            group_error=np.array(self.group_error, np.float64),
            wedge_position=self.wpos, wedge_attributes=self.attrs,
            top=top, top_witness=top_witness, top_witness_off=top_witness_off)

    def add_group(self, members: np.ndarray, level: int, error: float) -> int:
        g = len(self.groups)
        sphere = merge_spheres(self.self_sphere.view[members])
        self.groups.append(np.asarray(members, np.int32))
        self.group_level.append(level)
        self.group_sphere.append(sphere)
        self.group_error.append(error)
        self.group_of.view[members] = g
        return g

    def simplify_group(self, members: np.ndarray, locked: np.ndarray,
                       permissive: bool = False, whole: bool = False) -> _Simplified | None:
        """Merge, simplify and re-split one group (its own error against the original surface:
        `original_distance`, `dropped_distance`), or None when it cannot shrink enough.
        permissive: if it cannot otherwise, it may cross seams and creases. whole: the group is
        the whole of its level; where surface vanished it is simplified again, holding what
        vanished (KEEP_RATIO)."""
        cfg = self.config
        wpos, attrs = self.wpos, self.attrs  # this level's wedges (fresh ones may follow)

        def attempt(lock: np.ndarray) -> tuple[_Simplified, float, float, int] | None:
            (ok, new_tris, fresh_src, fresh_attr, own, slack, dropped, shade, offsets,
             bounds, witness, witness_off, farthest) = _group_job(
                self.store.view, self.tri_off.view, members, wpos, self.positions, attrs,
                lock, self.geo_error.view[members], self.original,
                (self.witness.view, self.witness_off.view, WITNESSES),
                (cfg.simplify_ratio, cfg.stuck_ratio, cfg.max_triangles, cfg.max_vertices,
                 permissive, self.color_start, cfg.normal_cost * self.shading_weight,
                 self.uv_start, self.spacing))
            if not ok:
                return None
            surface, geo = group_errors(own, dropped, slack)
            return (_Simplified(new_tris, geo, self.shading_weight * shade, offsets, bounds,
                                fresh_src, fresh_attr, witness, witness_off, surface),
                    own, dropped, farthest)

        first = attempt(locked)
        if first is None:
            return None
        best, own, dropped, farthest = first
        floor = dropped  # best's: a distance of an original position to it
        lock = None
        for _ in range(KEEP_TRIES if whole else 0):
            if not dropped > KEEP_RATIO * own or farthest < 0:
                break
            # surface vanished (what it removed lies further from it than it from its input):
            # hold the input position nearest the farthest removed one, and simplify again
            if lock is None:
                lock = locked.copy()
                ids = np.unique(wpos[gather(self.store.view, self.tri_off.view, members)])
            free = ids[~lock[ids]]
            if len(free) == 0:
                break
            d2 = ((self.positions[free] - self.positions[farthest]) ** 2).sum(axis=1)
            lock[free[int(np.argmin(d2))]] = True
            again = attempt(lock)
            if again is None:
                break
            res, own, dropped, farthest = again
            if (max(res.geo, res.shade), res.geo) < (max(best.geo, best.shade), best.geo):
                best, floor = res, dropped
        if whole:
            # the removed positions carried up (WITNESSES) were chosen at the levels below, and
            # a hold changes what lies farthest: a whole level is measured against every original
            # position (an edge fan's level 5 stored 0.98x its two-way distance with the carried
            # ones alone)
            full = self._farthest_original(best, floor)
            best = best._replace(geo=max(best.surface, DROPPED_FACTOR * full))
        return best

    def level0_positions(self, clusters: int) -> None:
        """Once level 0 is in (its first `clusters` clusters): their positions, cluster by
        cluster, and their spheres, for the whole levels' measures (`_farthest_original`)."""
        spheres = np.concatenate([self.bounds.view[:clusters],
                                  [[0.0, 0.0, 0.0, np.inf]]]).astype(np.float32)
        self._level0_rows = (spheres, self.pool.submit(
            cluster_positions, self.store.view, self.tri_off.view, clusters, self.wpos,
            len(self.positions)))

    def _farthest_original(self, result: _Simplified, floor: float) -> float:
        """The largest distance of an original position to a group's simplified triangles
        (`farthest_by_cluster`, over the level-0 clusters' positions): the clusters in
        contiguous ranges of at least MEASURE_CHUNK positions, one a worker, this thread taking
        the first and any range no worker has started (so that a worker waiting here never waits
        on a job queued behind it); the maximum is exact whatever the split. floor: a distance
        of some original position to the result, where each range's search starts."""
        wedge = result.new_tris.copy()
        fresh = wedge < 0  # -1 - j: the j-th fresh wedge, at its source's position
        wedge[fresh] = result.fresh_src[-1 - wedge[fresh]]
        tris = np.ascontiguousarray(self.wpos[wedge], np.int32)
        spheres, future = self._level0_rows
        off, ids = future.result()
        rows = len(off) - 1
        parts = max(1, min(self.threads, len(self.positions) // MEASURE_CHUNK))
        cuts = [rows * i // parts for i in range(parts + 1)]
        args = (self.positions, tris, spheres, off, ids)
        futures = [self.pool.submit(farthest_by_cluster, *args, a, b, floor)
                   for a, b in itertools.pairwise(cuts[1:])]
        best = farthest_by_cluster(*args, cuts[0], cuts[1], floor)
        for (a, b), f in zip(itertools.pairwise(cuts[1:]), futures, strict=True):
            best = max(best, farthest_by_cluster(*args, a, b, floor) if f.cancel()
                       else f.result())
        return float(best)

    def loses_surface(self, members: np.ndarray, result: _Simplified) -> bool:
        """Whether a whole level's result lost surface that no hold kept (`LOSS_RATIO`)."""
        geo = max(float(self.geo_error.view[members].max()), result.geo)
        return geo > LOSS_RATIO * result.surface

    def add_simplified(self, members: np.ndarray, level: int, result: _Simplified
                       ) -> np.ndarray:
        """Record a simplified group and its new clusters (one level up); returns their ids.
        Its error: its own against the original surface, at least its members' (so errors
        never decrease from child to parent)."""
        (new_tris, geo, shade, offsets, bounds, fresh_src, fresh_attr, witness, witness_off,
         _) = result
        if len(fresh_src):  # number the fresh wedges: the source's position, uv and material,
            base = self.wedge_rows.n  # a prefiltered normal and colour
            rows = fresh_attr
            self.wedge_rows.extend(self.wpos[fresh_src])
            self.attr_rows.extend(rows)
            new_tris = np.where(new_tris < 0, base - 1 - new_tris, new_tris).astype(np.int32)
        geo = max(float(self.geo_error.view[members].max()), geo)
        error = max(float(self.self_error.view[members].max()), geo, shade)
        g = self.add_group(members, level, error)
        return self.add_clusters(new_tris, offsets, bounds, level + 1, g, self.group_sphere[g],
                                 error, geo, witness, witness_off)


def coarsest_target(triangles: int) -> int:
    """The most triangles an asset's coarsest level should keep: max(128, 1% of the input).
    Seams and creases are crossed (at a cost) to get there, not beyond."""
    return max(128, triangles // 100)


def _halve_root(b: _Builder, pending: np.ndarray, level: int, coarsest: int,
                tick: Callable[[], None], hand_over: Callable[..., None]
                ) -> tuple[np.ndarray, int]:
    """Below a one-cluster root: halve it while it shrinks, down to min_root_triangles (the
    root is what every instance draws at least, however small on screen); crossing seams and
    creases only while it is over the coarsest level's target. Returns (the root cluster,
    its level)."""
    cfg = b.config
    none_locked = np.zeros(len(b.positions), bool)
    while len(pending) == 1 and b.cluster_sizes(pending)[0] > cfg.min_root_triangles:
        tick()  # where a caller may stop the build
        over = int(b.cluster_sizes(pending)[0]) > coarsest
        res = b.simplify_group(pending, none_locked, over, True)
        if res is None or len(res.offsets) != 2:  # stuck, or not one cluster
            break
        if not over and b.loses_surface(pending, res):
            break
        pending = b.add_simplified(pending, level, res)
        hand_over(b.store.view, b.tri_off.view, int(pending[0]), b.level.n, b.wpos,
                  b.attrs[:, :3])
        level += 1
    return pending, level


class Given(NamedTuple):
    """Clusters built elsewhere that a build starts from (`build_top`), rows in cluster order:
    the offsets of their triangles in the mesh's, their bounds, levels, LOD spheres, LOD and
    geometric errors, and the original positions each carries (`witness[witness_off[i]:
    witness_off[i + 1]]`, ids of the mesh's positions)."""

    offsets: np.ndarray
    bounds: np.ndarray
    level: np.ndarray
    self_sphere: np.ndarray
    self_error: np.ndarray
    geo_error: np.ndarray
    witness: np.ndarray
    witness_off: np.ndarray


class DagPart(NamedTuple):
    """A build's clusters and groups as arrays, in the numbering of the mesh it built from (its
    wedges, fresh ones appended: wedge_position, wedge_attributes): a chunk's (`build_chunk`,
    whose `top` clusters no group holds yet) or the levels above the chunks (`build_top`, whose
    last group is the root). Pickled between processes (`preprocess.chunks`)."""

    triangles: np.ndarray
    tri_offset: np.ndarray
    level: np.ndarray
    group: np.ndarray  # -1 for the top clusters of a chunk
    source: np.ndarray
    bounds: np.ndarray
    self_sphere: np.ndarray
    self_error: np.ndarray
    geo_error: np.ndarray
    group_members: np.ndarray
    group_offset: np.ndarray
    group_level: np.ndarray
    group_sphere: np.ndarray
    group_error: np.ndarray
    wedge_position: np.ndarray
    wedge_attributes: np.ndarray
    top: np.ndarray
    top_witness: np.ndarray
    top_witness_off: np.ndarray


class _Levels:
    """The level loop of a build (`_Levels.run`), with the progress it reports."""

    def __init__(self, b: _Builder, report: Progress, hand_over: Callable[..., None],
                 work: int) -> None:
        self.b, self.report, self.hand_over = b, report, hand_over
        self.work = work  # for the progress bar: each level halves the last
        self.done = 0

    def tick(self) -> None:
        self.report("simplify", min(self.done, self.work), self.work)

    def run(self, pending: np.ndarray, level: int, coarsest: int,
            border: np.ndarray | None = None, last: int | None = None
            ) -> tuple[np.ndarray, int]:
        """Group, simplify and re-split level after level while that shrinks the level; returns
        (the clusters left, the level they make). border: positions held at every level (a
        chunk's border with the others): it stops where its level is one group (that group's
        simplification wants its neighbours', in the levels above the chunks). last: the level
        it stops at, at the latest."""
        b, cfg = self.b, self.b.config
        # seams and creases are crossed only where needed: by a group some of whose clusters
        # already failed to shrink without crossing, while the level holds more than the
        # coarsest level's target
        stuck: set[int] = set()
        permissive_round = False
        while len(pending) > 1 and (last is None or level < last):
            first = b.level.n
            over = int(b.cluster_sizes(pending).sum()) > coarsest
            members, locked = group_level(b.store.view, b.tri_off.view, pending, b.wpos,
                                          len(b.positions), cfg.group_size)
            if border is not None:
                locked |= border
            ngroups = len(members)
            if ngroups == 1 and border is not None:
                break  # a chunk in one group: the levels above the chunks go on with it
            whole = ngroups == 1
            # the biggest groups first, so that the level does not end waiting on one of them
            sizes = [int(b.cluster_sizes(m).sum()) for m in members]
            futures: list = [None] * ngroups
            permissive = [over and any(int(c) in stuck for c in m) for m in members]
            for g in sorted(range(ngroups), key=lambda g: -sizes[g]):
                futures[g] = b.pool.submit(b.simplify_group, members[g], locked,
                                           permissive[g], whole)
            if whole and not over:
                res = futures[0].result()
                if res is not None and b.loses_surface(members[0], res):
                    break  # at the coarsest level's target already: this level is the root
            # each result is recorded as soon as it and those before it are in: group ids
            # follow the members' order, and the bookkeeping overlaps the other workers
            next_pending: list[np.ndarray] = []
            progressed = False
            for m, f, size in zip(members, futures, sizes, strict=True):
                res = f.result()
                self.done += size
                self.tick()
                if res is None:  # terminal for now: try again with other neighbours
                    next_pending.append(m)
                    stuck.update(m.tolist())
                    continue
                progressed = True
                next_pending.append(b.add_simplified(m, level, res))
            pending = np.concatenate(next_pending)
            self.hand_over(b.store.view, b.tri_off.view, first, b.level.n, b.wpos,
                           b.attrs[:, :3])
            level += 1
            if not progressed:
                if over and not permissive_round:
                    permissive_round = True  # every group failed: all may cross, once more
                    continue
                break
            permissive_round = False
        return pending, level


def _level_zero(b: _Builder, mesh: Mesh, hand_over: Callable[..., None]) -> np.ndarray:
    """Cluster the mesh: level 0 (its cluster ids)."""
    cfg = b.config
    order, offsets = build_clusters(mesh.positions, mesh.triangles, mesh.wedge_position,
                                    max_triangles=cfg.max_triangles,
                                    max_vertices=cfg.max_vertices, threads=b.threads)
    ordered, bounds = _level0(np.ascontiguousarray(mesh.triangles, np.int32), order,
                              offsets, b.wpos, b.positions)
    pending = b.add_clusters(ordered, offsets, bounds, 0, -1, None, 0.0, 0.0)
    b.level0_positions(len(pending))
    hand_over(b.store.view, b.tri_off.view, 0, b.level.n, b.wpos, b.attrs[:, :3])
    return pending


def build_dag(mesh: Mesh, config: BuildConfig | None = None, *,
              progress: Progress | None = None,
              on_clusters: Callable[..., None] | None = None
              ) -> LodDag:
    """Build the cluster LOD DAG of a mesh (see module docstring).

    on_clusters(triangles, tri_offset, first, end, wedge_position, wedge_normal), called on this
    thread: clusters first..end-1 are final (rows tri_offset[i]:tri_offset[i + 1] of triangles,
    wedge ids into wedge_position (k,) and wedge_normal (k, 3), the wedges so far: the mesh's and
    the fresh ones of the coarse levels; the arrays may be replaced by bigger ones later, these
    rows never change)."""
    cfg = config or BuildConfig()
    report = progress or (lambda stage, done, total: None)
    hand_over = on_clusters or (lambda *args: None)
    threads = cfg.threads or os.cpu_count() or 1
    _share_arenas(threads)
    with _stopping_pool(threads) as pool:
        b = _Builder(mesh, cfg, pool, threads)
        report("cluster", 0, 1)
        pending = _level_zero(b, mesh, hand_over)
        report("cluster", 1, 1)
        report("simplify", 0, 2 * mesh.triangle_count)
        levels = _Levels(b, report, hand_over, 2 * mesh.triangle_count)
        coarsest = coarsest_target(mesh.triangle_count)
        pending, level = levels.run(pending, 0, coarsest)
        pending, level = _halve_root(b, pending, level, coarsest, levels.tick, hand_over)
    b.add_group(pending, level, ROOT_ERROR)
    report("simplify", levels.work, levels.work)
    return _finish(b, mesh)


def build_chunk(mesh: Mesh, border: np.ndarray, config: BuildConfig, coarsest: int, *,
                progress: Progress | None = None) -> DagPart:
    """The levels of one chunk of a mesh (`preprocess.chunks`) with the positions it shares
    with other chunks (border (n,) bool) held at every level, up to level CHUNK_LEVELS (or to
    where no group shrinks, or the chunk is one group): its `top` clusters are left for
    `build_top`, which no group of the chunk holds. coarsest: the triangles of the chunk's share
    of the coarsest level, below which seams and creases are not crossed. Errors as
    `build_dag`'s, against the chunk's own triangles (never nearer than the whole original's)."""
    report = progress or (lambda stage, done, total: None)
    threads = config.threads or os.cpu_count() or 1
    _share_arenas(threads)
    skip = lambda *args: None  # noqa: E731
    with _stopping_pool(threads) as pool:
        b = _Builder(mesh, config, pool, threads)
        pending = _level_zero(b, mesh, skip)
        levels = _Levels(b, report, skip, 2 * mesh.triangle_count)
        pending, _ = levels.run(pending, 0, coarsest, np.ascontiguousarray(border, np.bool_),
                                CHUNK_LEVELS)
        return b.part(pending)


def build_top(mesh: Mesh, given: Given, config: BuildConfig, original: Mesh, *,
              coarsest: int, progress: Progress | None = None) -> DagPart:
    """The levels above a chunked build's chunks: from their top clusters (`given`, the mesh's
    triangles) to one root, as `build_dag` builds above level 0. mesh: the tops over the
    original's positions (the same array), so that errors are measured against the original
    itself, as a whole build's are (its surface walked; at a whole level, every position)."""
    report = progress or (lambda stage, done, total: None)
    threads = config.threads or os.cpu_count() or 1
    _share_arenas(threads)
    with _stopping_pool(threads) as pool:
        b = _Builder(mesh, config, pool, threads, original)
        pending = b.add_given(given)
        b.level0_positions(len(pending))
        levels = _Levels(b, report, lambda *args: None, 2 * mesh.triangle_count)
        pending, level = levels.run(pending, int(given.level.max()), coarsest)
        pending, level = _halve_root(b, pending, level, coarsest, levels.tick,
                                     lambda *args: None)
    b.add_group(pending, level, ROOT_ERROR)
    return b.part(np.zeros(0, np.int32))


# glibc's allocator gives each thread that allocates beside another an arena of its own (up to 8
# a core), which keeps what that thread freed: with one worker a core, each holds the high-water
# mark of the largest group it simplified, a fixed cost per core that dominated a small mesh's
# peak (the bunny on 16 workers: 33 MB, 470 MB per million triangles; 23 MB with two arenas).
# The workers allocate a few arrays a job, so sharing two arenas costs them no measurable time.
ARENAS = 2
_arenas_shared = False


def _share_arenas(threads: int) -> None:
    """Cap glibc's malloc arenas at ARENAS for the workers about to start (once per process,
    only for more than ARENAS workers, and not where MALLOC_ARENA_MAX already says how many)."""
    global _arenas_shared
    if (threads <= ARENAS or _arenas_shared or "MALLOC_ARENA_MAX" in os.environ
            or not sys.platform.startswith("linux")):
        return
    _arenas_shared = True
    try:
        ctypes.CDLL(None).mallopt(-8, ARENAS)  # M_ARENA_MAX
    except (OSError, AttributeError):  # not glibc
        pass


def trim_heap() -> None:
    """Give back to the system what glibc's allocator keeps of the memory freed so far
    (malloc_trim): between a chunked build's chunks, whose builders held hundreds of MB each
    (a no-op where the allocator is not glibc's)."""
    if sys.platform.startswith("linux"):
        try:
            ctypes.CDLL(None).malloc_trim(0)
        except (OSError, AttributeError):
            pass


@contextlib.contextmanager
def _stopping_pool(threads: int) -> Iterator[ThreadPoolExecutor]:
    """A thread pool that, left by an exception (an error, or a progress callback stopping the
    build), drops the groups still queued instead of simplifying them all first."""
    pool = ThreadPoolExecutor(max_workers=threads)
    try:
        yield pool
    except BaseException:
        pool.shutdown(cancel_futures=True)
        raise
    finally:
        pool.shutdown()


def _finish(b: _Builder, mesh: Mesh) -> LodDag:
    members = np.concatenate(b.groups).astype(np.int32)
    goff = np.zeros(len(b.groups) + 1, np.int64)
    np.cumsum([len(g) for g in b.groups], out=goff[1:])
    if len(b.wpos) > len(mesh.wedge_position):  # the fresh wedges of the coarse levels join
        mesh = mesh.with_wedges(b.wpos.copy(), b.attrs)
    return LodDag(
        mesh=mesh,
        triangles=b.store.view,
        cluster_tri_offset=b.tri_off.view,
        cluster_level=b.level.view,
        cluster_group=b.group_of.view,
        cluster_source_group=b.source.view,
        cluster_bounds=b.bounds.view,
        cluster_self_sphere=b.self_sphere.view,
        cluster_self_error=b.self_error.view.astype(np.float32),
        cluster_geometric_error=b.geo_error.view.astype(np.float32),
        group_level=np.array(b.group_level, np.int32),
        group_cluster_offset=goff,
        group_clusters=members,
        group_sphere=np.stack(b.group_sphere).astype(np.float32),
        group_error=np.array(b.group_error, np.float32),
        root_group=len(b.groups) - 1,
    )
