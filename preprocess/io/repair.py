"""Repair: degenerate and repeated triangles dropped, winding made consistent.

`clean` drops the triangles with two equal positions or a zero cross product and the repeats of
an earlier triangle (the same positions in the same cyclic order; in the reverse order too with
``drop_reversed``), and gives the kept ones as position ids (`_clean_triangles`, one numba pass).
Nothing larger than the output is built there: on a 2-core VM, fresh memory costs about 1.3 ms
per MB to touch, as much as the work itself. Repeats are found through a list per smallest
position id (each triangle rotated so that it comes first): the lists are short and recently
touched, 3x faster than a hash table, whose probes miss the cache; a fan of thousands of
triangles around one vertex falls back to the hash table.

`fix_winding` flips the triangles that disagree with their part of the mesh (`_orient`) where
edges are used twice in the same direction (counted by `repeated_directed_edges`, a counting sort,
or by `preprocess.io.normals.fan_normals` on its way), with a one-line `MeshWarning`.
"""

from __future__ import annotations

import preprocess.numba_cache  # noqa: F401  (first: drops stale numba caches)
from typing import NamedTuple

import numba as nb
import numpy as np

from preprocess.io.weld import MIX
from preprocess.mesh import MeshError, mesh_warning
from preprocess.topology import edge_neighbours

_CHAIN_LIMIT = 64  # see _clean_triangles


@nb.njit(cache=True, nogil=True, inline="always")
def _zero_cross(P, a, b, c):
    """Whether the cross product (b - a) x (c - a) of positions a, b, c of ``P`` (p, 3) float32
    is exactly zero in float64."""
    ax, ay, az = np.float64(P[a, 0]), np.float64(P[a, 1]), np.float64(P[a, 2])
    ux, uy, uz = P[b, 0] - ax, P[b, 1] - ay, P[b, 2] - az
    vx, vy, vz = P[c, 0] - ax, P[c, 1] - ay, P[c, 2] - az
    return uy * vz - uz * vy == 0.0 and uz * vx - ux * vz == 0.0 and ux * vy - uy * vx == 0.0


@nb.njit(cache=True, nogil=True, inline="always")
def _smallest_first(a, b, c):
    """The position ids of a triangle rotated so that the smallest comes first."""
    if b < a and b < c:
        return b, c, a
    if c < a and c < b:
        return c, a, b
    return a, b, c


@nb.njit(cache=True, nogil=True, inline="always")
def _slot(r0, r1, r2, mask):
    """The first slot of a hash table of ``mask + 1`` slots to probe for the triangle (r0, r1, r2),
    smallest id first: the hash ignores the order of r1 and r2, so that a reversed repeat probes
    the same."""
    h = ((np.uint64(r0) * MIX) ^ np.uint64(min(r1, r2))) * MIX
    h = (h ^ np.uint64(max(r1, r2))) * MIX
    h ^= h >> np.uint64(29)
    return np.int64(h & np.uint64(mask))


@nb.njit(cache=True, nogil=True)
def _clean_triangles(F: np.ndarray, pos_of_vertex: np.ndarray, P: np.ndarray,
                     by_hash: bool, drop_reversed: bool = False) -> tuple:
    """Keep the triangles that are neither degenerate nor a repeat.

    ``F`` (m, 3) int vertex ids, ``pos_of_vertex`` (n,) int their welded position ids, ``P``
    (p, 3) float32 welded positions. A triangle is dropped when two of its position ids are
    equal, when its cross product (b - a) x (c - a) is exactly zero in float64, or when an
    earlier kept triangle has the same position ids in the same cyclic order (or, with
    ``drop_reversed``, in the reverse order). Returns (the kept triangles' position ids (k, 3)
    int32 in order, which were kept (m,) bool, count of non-degenerate triangles, repeats in the
    same order (dropped), repeats in the reverse order (dropped with ``drop_reversed``, else
    kept)).

    Repeats are found through a list per smallest position id, or, ``by_hash``, a hash table
    (see the module docstring). A list longer than `_CHAIN_LIMIT` (a fan of thousands of
    triangles around one vertex) makes this return a count of -1: call again with ``by_hash``.
    """
    m = F.shape[0]
    p = P.shape[0]
    tri = np.empty((m, 3), np.int32)
    keep = np.zeros(m, np.bool_)
    head = np.full(p if not by_hash else 0, -1, np.int32)  # last kept triangle per smallest id
    link = np.empty(m if not by_hash else 0, np.int32)  # the one kept before it
    size = 16
    while by_hash and size < 2 * m:
        size <<= 1
    table = np.full(size if by_hash else 0, -1, np.int32)  # kept triangle per slot
    k = 0
    nondegenerate = 0
    repeats = 0
    reversed_repeats = 0
    for t in range(m):
        a = pos_of_vertex[F[t, 0]]
        b = pos_of_vertex[F[t, 1]]
        c = pos_of_vertex[F[t, 2]]
        if a == b or b == c or c == a or _zero_cross(P, a, b, c):
            continue
        nondegenerate += 1
        r0, r1, r2 = _smallest_first(a, b, c)
        same = False  # an earlier kept triangle in the same order
        turned = False  # ... or in the reverse order
        if by_hash:
            s = _slot(r0, r1, r2, size - 1)
            while table[s] >= 0:
                j = table[s]
                q0, q1, q2 = _smallest_first(tri[j, 0], tri[j, 1], tri[j, 2])
                if q0 == r0 and q1 == r1 and q2 == r2:
                    same = True
                    break
                if q0 == r0 and q1 == r2 and q2 == r1:
                    turned = True
                    if drop_reversed:
                        break
                s = (s + 1) & (size - 1)
            if not (same or (turned and drop_reversed)):
                table[s] = k
        else:
            j = head[r0]
            steps = 0
            while j >= 0:
                _, q1, q2 = _smallest_first(tri[j, 0], tri[j, 1], tri[j, 2])
                if q1 == r1 and q2 == r2:
                    same = True
                    break
                if q1 == r2 and q2 == r1:
                    turned = True
                    if drop_reversed:
                        break
                j = link[j]
                steps += 1
                if steps > _CHAIN_LIMIT:
                    return tri[:0], keep, -1, 0, 0
            if not (same or (turned and drop_reversed)):
                link[k] = head[r0]
                head[r0] = k
        if same:
            repeats += 1
            continue
        if turned:
            reversed_repeats += 1  # dropped or kept, as drop_reversed says
            if drop_reversed:
                continue
        tri[k, 0] = a
        tri[k, 1] = b
        tri[k, 2] = c
        keep[t] = True
        k += 1
    return tri[:k], keep, nondegenerate, repeats, reversed_repeats


class Cleaned(NamedTuple):
    """What `clean` keeps: the triangles as position ids, and which of the input's they are."""

    tri: np.ndarray  # (k, 3) int32 position ids
    keep: np.ndarray | None  # (m,) bool, None where every triangle was kept
    repeats: int  # repeats in the same order, dropped
    reversed_repeats: int  # repeats in the reverse order (dropped with drop_reversed)

    def faces(self, F: np.ndarray) -> np.ndarray:
        """The kept rows of the faces ``F`` given to `clean`."""
        return F if self.keep is None else F[self.keep]


def clean(F: np.ndarray, pos_of_vertex: np.ndarray, welded: np.ndarray, src: str,
          drop_reversed: bool) -> Cleaned:
    """Drop degenerate and repeated triangles (`_clean_triangles`)."""
    tri, keep, nondegenerate, repeats, reversed_repeats = _clean_triangles(
        F, pos_of_vertex, welded, False, drop_reversed)
    if nondegenerate < 0:  # a long fan around one vertex: the lists would be quadratic
        tri, keep, nondegenerate, repeats, reversed_repeats = _clean_triangles(
            F, pos_of_vertex, welded, True, drop_reversed)
    if nondegenerate == 0:
        raise MeshError(f"{src}: all {F.shape[0]} triangles are degenerate (zero area)")
    if tri.shape[0] < F.shape[0]:
        tri = tri.copy()  # not a view holding the dropped rows' memory
    else:
        keep = None
    return Cleaned(tri, keep, repeats, reversed_repeats)


@nb.njit(cache=True, nogil=True)
def repeated_directed_edges(tri: np.ndarray, p: int) -> int:
    """How many edge uses repeat an earlier use in the same direction, among triangles ``tri``
    (m, 3) of position ids in 0..p-1: 0 for consistent winding, the common case, found at the
    cost of a counting sort (17 ms for 1.3M triangles; `_orient` does more and takes 130 ms).
    (`preprocess.io.normals.fan_normals` counts the same on its way.)"""
    m = tri.shape[0]
    start = np.zeros(p + 1, np.int64)
    for t in range(m):
        for c in range(3):
            start[tri[t, c] + 1] += 1
    for v in range(p):
        start[v + 1] += start[v]
    end = np.empty(3 * m, np.int32)  # the end of each edge, bucketed by its start
    for t in range(m):
        for c in range(3):
            a = tri[t, c]
            end[start[a]] = tri[t, (c + 1) % 3]
            start[a] += 1
    mark = np.full(p, -1, np.int32)  # per end: the last start it was seen from
    count = 0
    k = 0
    for a in range(p):  # start[a] is now where bucket a ends
        while k < start[a]:
            b = end[k]
            if mark[b] == a:
                count += 1
            mark[b] = a
            k += 1
    return count


@nb.njit(cache=True, nogil=True)
def _orient(tri: np.ndarray, P: np.ndarray) -> tuple:
    """Consistent winding across the manifold edges of triangles ``tri`` (m, 3) int64 (position
    ids into ``P`` (p, 3) float32).

    Returns (edges used by exactly two triangles in the same direction, flip (m,) bool: the
    triangles to reverse, edges that still disagree after it). Nothing is flipped where no edge
    disagrees. Otherwise a walk over the triangles through their two-triangle edges gives each
    connected part one orientation; of its two, a part keeps the one that flips less area, unless
    that is less than 2/3 of it (half the triangles flipped: no majority) and the part is closed,
    where it keeps the one enclosing a positive volume (facing out). A non-orientable part (a
    Moebius strip) leaves edges that disagree.

    Edges come from `topology.edge_neighbours`: O(m + p), about 0.1 s for 1M triangles, where
    trimesh.repair.fix_winding took 103 s.
    """
    m = tri.shape[0]
    p = P.shape[0]
    flip = np.zeros(m, np.bool_)
    neighbour, agree = edge_neighbours(tri, p)  # agree: the two run the edge opposite ways
    closed = np.ones(m, np.bool_)  # no edge used once or more than twice
    same = 0
    for t in range(m):
        for c in range(3):
            if neighbour[t, c] < 0:
                closed[t] = False
            elif not agree[t, c]:
                same += 1
    same //= 2  # each disagreeing edge seen from both of its triangles
    if same == 0:
        return 0, flip, 0
    state = np.full(m, -1, np.int8)
    queue = np.empty(m, np.int64)
    disagree = 0
    for root in range(m):
        if state[root] >= 0:
            continue
        state[root] = 0
        queue[0] = root
        head, tail = 0, 1
        while head < tail:
            f = queue[head]
            head += 1
            for c in range(3):
                g = neighbour[f, c]
                if g < 0:
                    continue
                want = state[f] if agree[f, c] else 1 - state[f]
                if state[g] < 0:
                    state[g] = want
                    queue[tail] = g
                    tail += 1
                elif state[g] != want:
                    disagree += 1
        flipped_area = 0.0
        area = 0.0
        volume = 0.0
        part_closed = True
        for q in range(tail):
            f = queue[q]
            a, b, c = tri[f, 0], tri[f, 1], tri[f, 2]
            ax, ay, az = np.float64(P[a, 0]), np.float64(P[a, 1]), np.float64(P[a, 2])
            ux, uy, uz = P[b, 0] - ax, P[b, 1] - ay, P[b, 2] - az  # float64 from here
            vx, vy, vz = P[c, 0] - ax, P[c, 1] - ay, P[c, 2] - az
            nx, ny, nz = uy * vz - uz * vy, uz * vx - ux * vz, ux * vy - uy * vx
            s = np.sqrt(nx * nx + ny * ny + nz * nz)
            area += s
            sign = 1.0
            if state[f] == 1:
                flipped_area += s
                sign = -1.0
            # 6 x the signed volume of the tetrahedron (origin, a, b, c): a . (n of the triangle)
            volume += sign * (ax * nx + ay * ny + az * nz)
            part_closed = part_closed and closed[f]
        if flipped_area > area / 3 and flipped_area < 2 * area / 3 and part_closed:
            invert = volume < 0.0
        else:
            invert = flipped_area > area / 2
        for q in range(tail):
            f = queue[q]
            flip[f] = (state[f] == 1) != invert
    return same, flip, disagree // 2


def fix_winding(F: np.ndarray, cleaned: Cleaned, pos_of_vertex: np.ndarray,
                welded: np.ndarray, repeated: int, src: str, drop_reversed: bool
                ) -> tuple[np.ndarray, Cleaned]:
    """Make the winding consistent where two triangles run a shared edge the same way (`_orient`);
    ``repeated``: the edge uses repeating an earlier one in the same direction (nothing to do
    where 0: `repeated_directed_edges`). Returns (the faces, `clean`ed) as given, or, where a
    triangle was flipped, the kept faces flipped and cleaned again (a flip can make a repeat).
    A `MeshWarning` says how many edges disagreed and what was flipped.

    Inconsistent winding hides the flipped triangles from the front (back faces are culled),
    cancels their computed normals, and locks the edges for the simplifier (one LOD level)."""
    if repeated == 0:
        return F, cleaned
    same, flip, disagree = _orient(cleaned.tri, welded)
    if same == 0:  # only non-manifold edges repeat a direction: nothing to make consistent
        return F, cleaned
    flipped = int(np.count_nonzero(flip))
    if flipped:
        F = cleaned.faces(F).copy()
        F[flip] = F[flip][:, [0, 2, 1]]
        cleaned = clean(F, pos_of_vertex, welded, src, drop_reversed)
    left = (f"; {disagree} edges cannot agree (a non-orientable surface): normals and "
            f"simplification may suffer") if disagree else ""
    mesh_warning(f"{src}: {same} edges are used twice in the same direction: inconsistent winding; "
                 f"{flipped} faces flipped to agree with their neighbours{left}")
    return F, cleaned
