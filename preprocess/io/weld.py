"""Welding: rows grouped by exact equality, positions welded by their float32 bits, wedges.

`group_keys` numbers the distinct rows of a uint32 array in order of first appearance (hash
tables in numba, the rows shared among threads by their hash); `first_use` does it for one
column of small ids, with a lookup array;
`float_bits` gives the bit patterns positions and attributes are compared by (-0.0 folded into
+0.0). `weld_bits` groups points by value without that copy; `weld_positions` merges
bit-identical points with it; `wedges` makes the wedges of a mesh, the
distinct (position, normal, uv, colour, material) combinations among the vertices still used.
"""

from __future__ import annotations

from collections.abc import Callable

import preprocess.numba_cache  # noqa: F401  (first: drops stale numba caches)
import numba as nb
import numpy as np

from preprocess.io.normals import unit
from preprocess.mesh import MeshError
from preprocess.threads import MIN_SPAN, run_spans, thread_count

# Hash tables in numba: one pass in input order numbers the groups by first appearance directly.
# They replaced a sort of packed (hash, row) keys, 2-6x slower (3M rows of an STL soup: 0.62 s
# against 0.09 s); every key is compared in full, so a hash collision costs a probe, never a
# wrong group.

#: the multiplier of the hashes here and in `preprocess.io.repair` (2**64 over the golden ratio)
MIX = np.uint64(0x9E3779B97F4A7C15)


@nb.njit(cache=True, nogil=True, inline="always")
def _key(keys, i, k, fold):
    """Column k of row i, -0.0's bits as +0.0's where ``fold``."""
    b = keys[i, k]
    if fold and b == np.uint32(0x80000000):
        return np.uint32(0)
    return b


@nb.njit(cache=True, nogil=True)
def _group_part(keys, part, parts, fold, rep):
    """The rows whose hash falls in ``part`` of ``parts`` (its top bits), in input order:
    rep[i] = the first row equal to row i, i itself for a first one. Every row is hashed by
    every part (cheap beside the table's probes), no hash stored."""
    n, c = keys.shape
    size = 16
    while size < 2 * (n // parts + 1):
        size <<= 1
    mask = np.uint64(size - 1)
    table = np.full(size, -1, np.int32)  # the first row of a group per slot
    for i in range(n):
        h = np.uint64(0xCBF29CE484222325)
        for k in range(c):
            h = (h ^ np.uint64(_key(keys, i, k, fold))) * MIX
            h ^= h >> np.uint64(31)
        h ^= h >> np.uint64(29)
        if parts > 1 and np.int64(h >> np.uint64(56)) % parts != part:
            continue
        s = h & mask
        while True:
            f = table[s]
            if f < 0:
                table[s] = i
                rep[i] = i
                break
            same = True
            for k in range(c):
                if _key(keys, f, k, fold) != _key(keys, i, k, fold):
                    same = False
                    break
            if same:
                rep[i] = f
                break
            s = (s + np.uint64(1)) & mask


@nb.njit(cache=True, nogil=True)
def _number_groups(rep):
    """(group id per row (n,) int32, in order of first appearance; the first row of each
    group (g,) int64) from rep (`_group_part`)."""
    n = rep.shape[0]
    inverse = np.empty(n, np.int32)
    first = np.empty(n, np.int64)
    g = 0
    for i in range(n):
        r = rep[i]
        if r == i:
            inverse[i] = g
            first[g] = i
            g += 1
        else:
            inverse[i] = inverse[r]
    return inverse, first[:g].copy()


def group_keys(keys: np.ndarray, threads: int | None = None, fold: bool = False
               ) -> tuple[np.ndarray, np.ndarray]:
    """Group the rows of an (n, c) uint32 array by exact equality (see `group_rows`); ``fold``:
    the bits of -0.0 equal to those of +0.0 (float32 bit patterns, `weld_bits`). The rows are
    split among threads by their hash (up to 255 parts, one table each, none shared)."""
    keys = np.ascontiguousarray(keys, np.uint32)
    n = keys.shape[0]
    parts = max(1, min(thread_count(threads), 255, n // MIN_SPAN))
    rep = np.empty(n, np.int32)  # meshes stay below 2**31 rows
    run_spans(lambda lo, hi: _group_part(keys, lo, parts, fold, rep),
              [(q, q + 1) for q in range(parts)], threads)
    return _number_groups(rep)


def weld_bits(points: np.ndarray, threads: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """`group_keys` of (n, 3) float32 points compared by value (-0.0 equal to +0.0, bits
    otherwise), on their bits as they are (no folded copy)."""
    bits = np.ascontiguousarray(points, np.float32).view(np.uint32)
    return group_keys(bits, threads, fold=True)


@nb.njit(cache=True, nogil=True)
def first_use(values: np.ndarray, bound: int) -> tuple[np.ndarray, np.ndarray]:
    """`group_rows` of one column of ids in 0..bound-1: a lookup array instead of a hash."""
    seen = np.full(bound, -1, np.int64)
    inverse = np.empty(values.size, np.int64)
    first = np.empty(values.size, np.int64)
    groups = 0
    for i in range(values.size):
        v = values[i]
        g = seen[v]
        if g < 0:
            g = groups
            seen[v] = g
            first[g] = i
            groups += 1
        inverse[i] = g
    return inverse, first[:groups]


def group_rows(cols: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Group the rows of equal-length uint32 (or smaller) columns by exact equality.

    Returns ``(inverse, first)``: ``inverse`` (n,) int32 is the group id of each row and ``first``
    (g,) int64 the index of the first row of each group; groups are numbered in order of first
    appearance, so ``first`` is increasing and ``inverse[first] == arange(g)``.
    """
    keys = np.empty((cols[0].shape[0], len(cols)), dtype=np.uint32)
    for k, col in enumerate(cols):
        keys[:, k] = col
    return group_keys(keys)


def float_bits(a: np.ndarray) -> np.ndarray:
    """The uint32 bit patterns of a float32 array, with -0.0 folded into +0.0."""
    a = np.ascontiguousarray(a, dtype=np.float32) + np.float32(0.0)  # -0.0 + 0.0 == +0.0
    return a.view(np.uint32)


def weld_positions(points: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Merge bit-identical float32 points (-0.0 counts as +0.0).

    Args:
        points: (n, 3) float array.

    Returns:
        ``(positions, inverse)``: positions (p, 3) float32, each distinct point once in order of
        first appearance, and inverse (n,) int32 with ``positions[inverse] == points`` (as float32).
    """
    P32 = np.ascontiguousarray(points, dtype=np.float32)
    inverse, first = weld_bits(P32)
    return P32[first] + np.float32(0.0), inverse


def wedges(F: np.ndarray, pos_of_vertex: np.ndarray, smooth: Callable[[], np.ndarray] | None,
           N_in: np.ndarray, UV_in: np.ndarray | None, src: str,
           extra: tuple = (None, None), normals_unit: bool = False) -> tuple:
    """The wedges: distinct (position, normal, uv, colour, material) among the input vertices
    still used (``extra``: the colours (n, 4) and materials (n,) or None; a wedge's are those of
    its first input vertex, `wedge_vertex`). ``N_in``: a normal per input vertex, unit where
    ``normals_unit`` (else normalized here, and a row without a usable length replaced by its
    position's row of ``smooth()``, (p, 3) per welded position).

    Returns (wedge id per input vertex (n,) int32, -1 where unused; the input vertex of each
    wedge (w,) int64; wedge normals (w, 3) float32; wedge uvs (w, 2) float32 or None), wedges
    in order of first appearance among the used vertices.
    """
    n = pos_of_vertex.shape[0]
    used_mask = np.zeros(n, dtype=bool)
    used_mask[F.ravel()] = True
    used_vertex = np.flatnonzero(used_mask)  # sorted input vertex ids
    vpos = pos_of_vertex[used_vertex]
    wedge_uv = None
    C_in, M_in = extra
    if normals_unit:
        vn32 = np.ascontiguousarray(N_in[used_vertex], dtype=np.float32)
    else:
        vn, vok = unit(N_in[used_vertex])
        if not vok.all():
            vn[~vok] = smooth()[vpos[~vok]]
        vn32 = vn.astype(np.float32)
    cols = [vpos, *float_bits(vn32).T]
    if UV_in is not None:
        vuv32 = UV_in[used_vertex].astype(np.float32)
        if not np.isfinite(vuv32).all():
            raise MeshError(f"{src}: texture coordinates contain NaN or infinite values")
        cols += [*float_bits(vuv32).T]
    if C_in is not None:
        c = C_in[used_vertex]
        if not np.isfinite(c).all():
            raise MeshError(f"{src}: vertex colours contain NaN or infinite values")
        cols += [*float_bits(c.astype(np.float32)).T]
    if M_in is not None:
        cols.append(M_in[used_vertex].astype(np.uint32))
    wedge_of_used, wedge_first = group_rows(cols)
    wedge_normal = vn32[wedge_first]
    if UV_in is not None:
        wedge_uv = vuv32[wedge_first] + np.float32(0.0)
    wedge_of_vertex = np.full(n, -1, dtype=np.int32)
    wedge_of_vertex[used_vertex] = wedge_of_used
    return (wedge_of_vertex, used_vertex[wedge_first], wedge_normal + np.float32(0.0),
            wedge_uv)
