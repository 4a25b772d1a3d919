"""Welding: rows grouped by exact equality, positions welded by their float32 bits, wedges.

`group_keys` numbers the distinct rows of a uint32 array in order of first appearance (a hash
table in numba); `first_use` does it for one column of small ids, with a lookup array;
`float_bits` gives the bit patterns positions and attributes are compared by (-0.0 folded into
+0.0). `weld_positions` merges bit-identical points; `wedges` makes the wedges of a mesh, the
distinct (position, normal, uv, colour, material) combinations among the vertices still used.
"""

from __future__ import annotations

import preprocess.numba_cache  # noqa: F401  (first: drops stale numba caches)
import numba as nb
import numpy as np

from preprocess.io.normals import unit
from preprocess.mesh import MeshError

# Hash tables in numba: one pass in input order numbers the groups by first appearance directly.
# They replaced a sort of packed (hash, row) keys, 2-6x slower (3M rows of an STL soup: 0.62 s
# against 0.09 s); every key is compared in full, so a hash collision costs a probe, never a
# wrong group.

#: the multiplier of the hashes here and in `preprocess.io.repair` (2**64 over the golden ratio)
MIX = np.uint64(0x9E3779B97F4A7C15)


@nb.njit(cache=True, nogil=True)
def group_keys(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Group the rows of an (n, c) uint32 array by exact equality (see `group_rows`)."""
    n, c = keys.shape
    size = 16
    while size < 2 * n:
        size <<= 1
    mask = size - 1
    table = np.full(size, -1, np.int32)  # group id per slot (meshes stay below 2**31 rows)
    inverse = np.empty(n, np.int64)
    first = np.empty(n, np.int64)
    groups = 0
    for i in range(n):
        h = np.uint64(0xCBF29CE484222325)
        for k in range(c):
            h = (h ^ np.uint64(keys[i, k])) * MIX
            h ^= h >> np.uint64(31)
        h ^= h >> np.uint64(29)
        s = np.int64(h & np.uint64(mask))
        while True:
            g = table[s]
            if g < 0:
                table[s] = groups
                first[groups] = i
                inverse[i] = groups
                groups += 1
                break
            f = first[g]
            same = True
            for k in range(c):
                if keys[f, k] != keys[i, k]:
                    same = False
                    break
            if same:
                inverse[i] = g
                break
            s = (s + 1) & mask
    return inverse, first[:groups]


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

    Returns ``(inverse, first)``: ``inverse`` (n,) int64 is the group id of each row and ``first``
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
        first appearance, and inverse (n,) int64 with ``positions[inverse] == points`` (as float32).
    """
    P32 = np.ascontiguousarray(points, dtype=np.float32)
    inverse, first = group_keys(float_bits(P32))
    return P32[first] + np.float32(0.0), inverse


def wedges(F: np.ndarray, pos_of_vertex: np.ndarray, computed: np.ndarray,
           N_in: np.ndarray | None, UV_in: np.ndarray | None, src: str,
           extra: tuple = (None, None)) -> tuple:
    """The wedges: distinct (position, normal, uv, colour, material) among the input vertices
    still used (``extra``: the colours (n, 4) and materials (n,) or None; a wedge's are those of
    its first input vertex, `wedge_vertex`).

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
    if N_in is None and UV_in is None and C_in is None and M_in is None:
        # One wedge per position, in order of first use; its normal is the computed one.
        wedge_of_used, wedge_first = first_use(vpos, computed.shape[0])
        wedge_normal = computed[vpos[wedge_first]].astype(np.float32)
    else:
        if N_in is not None:
            vn, vok = unit(N_in[used_vertex])
            vn[~vok] = computed[vpos[~vok]]
        else:
            vn = computed[vpos]
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
