"""Step 1 of the offline build: read a mesh file and weld it into a `Mesh`.

`load_mesh` reads OBJ, STL, PLY and OFF with the fast readers of `preprocess.readers`, and glTF/GLB
and whatever those readers leave out through trimesh (with ``process=False``: trimesh neither
merges nor drops anything, so the attributes survive); both give the same raw arrays, which
`mesh_from_arrays` welds and validates:

- positions are welded by exact value: float32 positions that are bit-identical (after folding -0.0
  into +0.0) become one position;
- wedges are the distinct (position, normal, uv) combinations, normals and uvs compared as the
  float32 values they are stored as, so a UV seam or a hard normal edge keeps two wedges at one
  position;
- normals from the file are kept (normalized); missing, zero-length or non-finite ones are
  replaced by the smooth area-weighted normal of their welded position, computed from the final
  triangles;
- degenerate triangles (two equal position ids, or a cross product exactly zero in float64) and
  exact duplicate triangles (the same three position ids in the same cyclic order) are dropped; a
  triangle repeating an earlier one in the reverse order is kept (a two-sided sheet), unless
  ``drop_reversed``;
- positions and wedges that no remaining triangle uses are dropped; the survivors keep the order in
  which they first appear in the input, so a mesh that is already clean comes back unchanged;
- inconsistent winding (an edge two triangles run the same way) is repaired by flipping the
  triangles that disagree with their part of the mesh (`_orient`);
- a mesh the position grid of `.tess` cannot hold is refused (`_check_grid`): an extent below
  `MIN_EXTENT`, a stray vertex far from the rest (the grid step grows with the extent), a mesh
  too far from the origin.

Every problem with the input raises `MeshError` with a one-line message that names the file; what
is repaired or left out (repeated faces, inconsistent winding, unsupported glTF extensions that
are only used) is named in a one-line `MeshWarning`.
"""

from __future__ import annotations

import contextlib
import io
import json
import logging
import math
import os
import re
import struct
import urllib.parse
import warnings
from collections.abc import Iterator
from pathlib import Path

import preprocess.numba_cache  # noqa: F401  (first: drops stale numba caches)
import numba as nb
import numpy as np

from preprocess.config import DEFAULT_CREASE_DEGREES
from preprocess.materials import (
    Material,
    Texture,
    alpha_modes,
    default_material,
    image_rgba,
    vertex_rgba,
)
from preprocess.mesh import Mesh, MeshError, MeshWarning, column_bounds
from preprocess.tess.limits import MAX_MATERIALS, MAX_WORLD
from preprocess.topology import edge_neighbours, find

__all__ = ["SUPPORTED_SUFFIXES", "load_mesh", "mesh_from_arrays", "weld_positions"]

#: File suffixes `load_mesh` accepts (lower case), mapped to trimesh's file type.
SUPPORTED_SUFFIXES: dict[str, str] = {
    ".obj": "obj",
    ".ply": "ply",
    ".stl": "stl",
    ".glb": "glb",
    ".gltf": "gltf",
    ".off": "off",
}

# --------------------------------------------------------------------------------------------------
# Grouping equal rows
#
# Hash tables in numba: one pass in input order numbers the groups by first appearance directly.
# They replaced a sort of packed (hash, row) keys, 2-6x slower (3M rows of an STL soup: 0.62 s
# against 0.09 s); every key is compared in full, so a hash collision costs a probe, never a
# wrong group.

_MIX = np.uint64(0x9E3779B97F4A7C15)
_CHAIN_LIMIT = 64  # see _clean_triangles


@nb.njit(cache=True, nogil=True)
def _group_keys(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Group the rows of an (n, c) uint32 array by exact equality (see `_group_rows`)."""
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
            h = (h ^ np.uint64(keys[i, k])) * _MIX
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
def _first_use(values: np.ndarray, bound: int) -> tuple[np.ndarray, np.ndarray]:
    """`_group_rows` of one column of ids in 0..bound-1: a lookup array instead of a hash."""
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


def _group_rows(cols: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Group the rows of equal-length uint32 (or smaller) columns by exact equality.

    Returns ``(inverse, first)``: ``inverse`` (n,) int64 is the group id of each row and ``first``
    (g,) int64 the index of the first row of each group; groups are numbered in order of first
    appearance, so ``first`` is increasing and ``inverse[first] == arange(g)``.
    """
    keys = np.empty((cols[0].shape[0], len(cols)), dtype=np.uint32)
    for k, col in enumerate(cols):
        keys[:, k] = col
    return _group_keys(keys)


def _float_bits(a: np.ndarray) -> np.ndarray:
    """The uint32 bit patterns of a float32 array, with -0.0 folded into +0.0."""
    a = np.ascontiguousarray(a, dtype=np.float32) + np.float32(0.0)  # -0.0 + 0.0 == +0.0
    return a.view(np.uint32)


# --------------------------------------------------------------------------------------------------
# Welding


@nb.njit(cache=True, nogil=True)
def _clean_triangles(F: np.ndarray, pos_of_vertex: np.ndarray, W64: np.ndarray,
                     by_hash: bool, drop_reversed: bool = False) -> tuple:
    """Keep the triangles that are neither degenerate nor a repeat, and sum their normals.

    ``F`` (m, 3) int64 vertex ids, ``pos_of_vertex`` (n,) int64 their welded position ids, ``W64``
    (p, 3) float64 welded positions. A triangle is dropped when two of its position ids are
    equal, when its cross product (b - a) x (c - a) is exactly zero in float64, or when an
    earlier kept triangle has the same position ids in the same cyclic order (or, with
    ``drop_reversed``, in the reverse order). Returns (the kept triangles' indices (k,) int64 in
    order, area-weighted normal sums (p, 3) float64, count of non-degenerate triangles, repeats
    in the same order (dropped), repeats in the reverse order (dropped with ``drop_reversed``,
    else kept)). Nothing larger is built: on a 2-core VM, fresh memory costs about
    1.3 ms per MB to touch, as much as the work itself. The sums add each kept triangle's cross
    product to its three positions in triangle and corner order: the order (and so the rounding)
    of the ``np.bincount`` this replaced.

    Repeats are found through a list per smallest position id (each triangle rotated so that it
    comes first): the lists are short and recently touched, 3x faster than a hash table, whose
    probes miss the cache. A list longer than `_CHAIN_LIMIT` (a fan of thousands of triangles
    around one vertex) makes this return a count of -1: call again with ``by_hash``.
    """
    m = F.shape[0]
    p = W64.shape[0]
    kept = np.empty(m, np.int64)
    sums = np.zeros((p, 3), np.float64)
    rot = np.empty((m, 3), np.int32)  # the kept triangles' position ids, smallest first
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
        if a == b or b == c or c == a:
            continue
        ux = W64[b, 0] - W64[a, 0]
        uy = W64[b, 1] - W64[a, 1]
        uz = W64[b, 2] - W64[a, 2]
        vx = W64[c, 0] - W64[a, 0]
        vy = W64[c, 1] - W64[a, 1]
        vz = W64[c, 2] - W64[a, 2]
        cx = uy * vz - uz * vy
        cy = uz * vx - ux * vz
        cz = ux * vy - uy * vx
        if cx == 0.0 and cy == 0.0 and cz == 0.0:
            continue
        nondegenerate += 1
        if b < a and b < c:  # rotate so that the smallest id comes first
            r0, r1, r2 = b, c, a
        elif c < a and c < b:
            r0, r1, r2 = c, a, b
        else:
            r0, r1, r2 = a, b, c
        same = False  # an earlier kept triangle in the same order
        turned = False  # ... or in the reverse order
        if by_hash:
            # the hash ignores the order of r1 and r2, so that a reversed repeat probes the same
            h = ((np.uint64(r0) * _MIX) ^ np.uint64(min(r1, r2))) * _MIX
            h = (h ^ np.uint64(max(r1, r2))) * _MIX
            h ^= h >> np.uint64(29)
            s = np.int64(h & np.uint64(size - 1))
            while table[s] >= 0:
                j = table[s]
                if rot[j, 0] == r0 and rot[j, 1] == r1 and rot[j, 2] == r2:
                    same = True
                    break
                if rot[j, 0] == r0 and rot[j, 1] == r2 and rot[j, 2] == r1:
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
                if rot[j, 1] == r1 and rot[j, 2] == r2:
                    same = True
                    break
                if rot[j, 1] == r2 and rot[j, 2] == r1:
                    turned = True
                    if drop_reversed:
                        break
                j = link[j]
                steps += 1
                if steps > _CHAIN_LIMIT:
                    return kept[:0], sums, -1, 0, 0
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
        rot[k, 0] = r0
        rot[k, 1] = r1
        rot[k, 2] = r2
        kept[k] = t
        for q in (a, b, c):
            sums[q, 0] += cx
            sums[q, 1] += cy
            sums[q, 2] += cz
        k += 1
    return kept[:k], sums, nondegenerate, repeats, reversed_repeats


def _unit(v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Normalize rows of (n, 3) float64; returns (unit rows, mask of rows with a usable length)."""
    with np.errstate(invalid="ignore", over="ignore"):
        length = np.sqrt(np.einsum("ij,ij->i", v, v))
        ok = np.isfinite(length) & (length > 0.0)
        if ok.all():
            return v / length[:, None], ok  # the common case, without masked copies
        out = np.zeros_like(v)
        out[ok] = v[ok] / length[ok, None]
    return out, ok



# --------------------------------------------------------------------------------------------------
# Hard edges: normals computed with a crease angle (when the file has none)

@nb.njit(cache=True, nogil=True)
def _crease_normals(tri: np.ndarray, P: np.ndarray, cos_crease: float) -> tuple:
    """Corner normals of triangles `tri` (m, 3) int64 position ids over positions P (p, 3)
    float64, with edges sharper than the crease kept hard.

    Around each position, the incident triangles are joined across every edge they share with a
    dihedral angle below the crease (cosine of the face normals >= cos_crease) and used by exactly
    two triangles; each joined arc of the fan gets one normal, the area-weighted mean of its
    triangles' normals. A crease therefore splits a position only where two or more crease edges
    meet it (one sharp edge in a smooth fan, as scan noise makes, leaves the fan in one piece).

    Returns (normals (m, 3, 3) float64 per corner, unit; splits: positions with more than one
    arc)."""
    m = tri.shape[0]
    p = P.shape[0]
    fn = np.empty((m, 3), np.float64)  # area-weighted (2 * area * unit)
    fu = np.empty((m, 3), np.float64)
    for t in range(m):
        a, b, c = tri[t, 0], tri[t, 1], tri[t, 2]
        ux, uy, uz = P[b, 0] - P[a, 0], P[b, 1] - P[a, 1], P[b, 2] - P[a, 2]
        vx, vy, vz = P[c, 0] - P[a, 0], P[c, 1] - P[a, 1], P[c, 2] - P[a, 2]
        nx, ny, nz = uy * vz - uz * vy, uz * vx - ux * vz, ux * vy - uy * vx
        fn[t, 0], fn[t, 1], fn[t, 2] = nx, ny, nz
        ln = np.sqrt(nx * nx + ny * ny + nz * nz)
        s = 1.0 / ln if ln > 0 else 0.0
        fu[t, 0], fu[t, 1], fu[t, 2] = nx * s, ny * s, nz * s
    neighbour, _ = edge_neighbours(tri, p)  # -1 on border and non-manifold edges: stay hard
    parent = np.arange(3 * m)  # corner id = 3 * t + c
    for ti in range(m):
        for c in range(3):
            tj = neighbour[ti, c]
            if tj <= ti:  # no neighbour, or the pair seen from tj already
                continue
            d = fu[ti, 0] * fu[tj, 0] + fu[ti, 1] * fu[tj, 1] + fu[ti, 2] * fu[tj, 2]
            if d < cos_crease:
                continue
            for end in (tri[ti, c], tri[ti, (c + 1) % 3]):  # both triangles' corners at each end
                x = 3 * ti + (0 if tri[ti, 0] == end else (1 if tri[ti, 1] == end else 2))
                y = 3 * tj + (0 if tri[tj, 0] == end else (1 if tri[tj, 1] == end else 2))
                rx, ry = find(parent, x), find(parent, y)
                if rx != ry:
                    parent[max(rx, ry)] = min(rx, ry)
    for i in range(3 * m):
        parent[i] = find(parent, i)
    sums = np.zeros((3 * m, 3), np.float64)
    for i in range(3 * m):
        r = parent[i]
        t = i // 3
        sums[r, 0] += fn[t, 0]
        sums[r, 1] += fn[t, 1]
        sums[r, 2] += fn[t, 2]
    out = np.empty((m, 3, 3), np.float64)
    first_root = np.full(p, -1, np.int64)
    split = np.zeros(p, np.bool_)
    for i in range(3 * m):
        r = parent[i]
        t, c = i // 3, i % 3
        q = tri[t, c]
        if first_root[q] < 0:
            first_root[q] = r
        elif first_root[q] != r:
            split[q] = True
        x, y, z = sums[r, 0], sums[r, 1], sums[r, 2]
        ln = np.sqrt(x * x + y * y + z * z)
        if ln > 0:
            out[t, c, 0], out[t, c, 1], out[t, c, 2] = x / ln, y / ln, z / ln
        else:  # opposite faces cancelled: this triangle's own normal
            out[t, c, 0], out[t, c, 1], out[t, c, 2] = fu[t, 0], fu[t, 1], fu[t, 2]
    return out, int(split.sum())


def mesh_from_arrays(
    positions: np.ndarray,
    faces: np.ndarray,
    normals: np.ndarray | None = None,
    uvs: np.ndarray | None = None,
    *,
    colors: np.ndarray | None = None,
    vertex_material: np.ndarray | None = None,
    name: str = "mesh",
    source: str | None = None,
    drop_reversed: bool = False,
    crease_angle: float = DEFAULT_CREASE_DEGREES,
) -> Mesh:
    """Weld raw triangle arrays into a validated `Mesh`.

    Args:
        positions: (n, 3) float, one row per input vertex (duplicates allowed: they are welded).
        faces: (m, 3) int, counter-clockwise triangles indexing ``positions``.
        normals: (n, 3) float per input vertex, or None to compute smooth area-weighted normals (one
            wedge per position then, unless uvs split it). Rows need not be unit length; zero-length
            or non-finite rows are replaced by the computed normal of their position.
        uvs: (n, 2) float per input vertex, or None.
        colors: (n, 4) float linear RGBA per input vertex (0..1), or None.
        vertex_material: (n,) int material index per input vertex (all of a triangle's corners
            share it: a material border splits positions into wedges like a UV seam), or None.
        name: the `Mesh.name`.
        source: how error messages name the input (defaults to ``name``), e.g. the file name.
        drop_reversed: also drop a triangle whose three positions an earlier one has in the
            reverse order (files: a duplicate; a two-sided sheet becomes one-sided). Without it
            both are kept.
        crease_angle: degrees; where normals are computed (``normals`` None), an edge whose two
            triangles meet at a larger angle stays hard (`_crease_normals`): a 90-degree CAD edge
            keeps two normals instead of one rounded one. 180 computes smooth normals everywhere.
            Default `DEFAULT_CREASE_DEGREES` (45): scan noise makes sharper edges than that
            rarely, and a lone sharp edge in a smooth fan splits nothing.

    Returns:
        A `Mesh`: positions (p, 3) float32, triangles (t, 3) int32 wedge ids, wedge_position (w,)
        int32, wedge_normal (w, 3) float32 unit, wedge_uv (w, 2) float32 or None.

    Raises:
        MeshError: bad shapes, NaN/inf coordinates, face indices out of range, no triangle left
            after dropping degenerate ones, or an extent the position grid cannot hold (see
            `_check_grid`).

    Warns:
        MeshWarning: repeated triangles dropped; inconsistent winding, repaired (see
            `_fix_winding`).
    """
    src = source or name
    P = np.asarray(positions)
    F = np.asarray(faces)
    if P.ndim != 2 or P.shape[1] != 3:
        raise MeshError(f"{src}: positions must have shape (n, 3), got {P.shape}")
    if F.ndim != 2 or F.shape[1] != 3:
        raise MeshError(f"{src}: faces must have shape (m, 3) (triangles), got {F.shape}")
    if F.size and not np.issubdtype(F.dtype, np.integer):
        raise MeshError(f"{src}: face indices must be integers, got {F.dtype}")
    n = P.shape[0]
    if F.shape[0] == 0:
        raise MeshError(f"{src}: the mesh has no triangles")
    P32 = _checked_float32(P, src)
    fmin, fmax = int(F.min()), int(F.max())
    if fmin < 0 or fmax >= n:
        worst = fmin if fmin < 0 else fmax
        raise MeshError(
            f"{src}: face index {worst} out of range (the mesh has {n} vertices, valid 0..{n - 1})"
        )
    F = F.astype(np.int64, copy=False)
    N_in = _per_vertex(normals, (n, 3), np.float64, "normals", src)
    UV_in = _per_vertex(uvs, (n, 2), np.float64, "uvs", src)
    C_in = _per_vertex(colors, (n, 4), np.float64, "colours", src)
    M_in = _per_vertex(vertex_material, (n,), np.int64, "vertex materials", src)

    # Weld positions by exact float32 value (-0.0 folded into +0.0).
    pbits = _float_bits(P32)
    pos_of_vertex, pos_first = _group_keys(pbits)
    del pbits
    welded = P32[pos_first] + np.float32(0.0)  # (p, 3) float32
    F, computed, repeats, reversed_repeats = _clean(F, pos_of_vertex, welded, src, drop_reversed)
    if repeats:
        _warn(f"{src}: {repeats} duplicated faces dropped (the same three vertices in the same "
              f"order as an earlier face)")
    if reversed_repeats and drop_reversed:
        _warn(f"{src}: {reversed_repeats} duplicated faces with reversed winding dropped (the "
              f"same three vertices as an earlier face: two-sided sheets become one-sided)")
    elif reversed_repeats:
        _warn(f"{src}: {reversed_repeats} faces repeat an earlier face with reversed winding: "
              f"both kept (a two-sided sheet), but their edges are locked in simplification")
    F, computed = _fix_winding(F, pos_of_vertex, welded, computed, src, drop_reversed)
    if N_in is None and crease_angle < 180.0:
        corner_normals, splits = _crease_normals(pos_of_vertex[F], welded.astype(np.float64),
                                                 float(np.cos(np.radians(crease_angle))))
        if splits:  # hard edges: one input vertex per corner, welded again by _wedges
            pos_of_vertex = pos_of_vertex[F].ravel()
            N_in = corner_normals.reshape(-1, 3)
            UV_in = None if UV_in is None else UV_in[F].ravel().reshape(-1, 2)
            C_in = None if C_in is None else C_in[F].ravel().reshape(-1, 4)
            M_in = None if M_in is None else M_in[F].ravel()
            F = np.arange(3 * F.shape[0], dtype=np.int64).reshape(-1, 3)
    wedge_of_vertex, wedge_vertex, vn32, vuv32 = _wedges(
        F, pos_of_vertex, computed, N_in, UV_in, src, extra=(C_in, M_in)
    )
    triangles = wedge_of_vertex[F]  # int32: the Mesh's type, half the memory to touch
    # Positions: those used, in order of first appearance among the wedges.
    wedge_pos_old = pos_of_vertex[wedge_vertex]
    pos_used, pos_new_first = _first_use(wedge_pos_old, welded.shape[0])
    positions_out = welded[wedge_pos_old[pos_new_first]]
    mesh = Mesh(
        positions=np.ascontiguousarray(positions_out, dtype=np.float32),
        triangles=np.ascontiguousarray(triangles, dtype=np.int32),
        wedge_position=np.ascontiguousarray(pos_used, dtype=np.int32),
        wedge_normal=np.ascontiguousarray(vn32, dtype=np.float32),
        wedge_uv=None if vuv32 is None else np.ascontiguousarray(vuv32, dtype=np.float32),
        wedge_color=(None if C_in is None else
                     np.ascontiguousarray(np.clip(C_in[wedge_vertex], 0, 1), np.float32)),
        wedge_material=None if M_in is None else M_in[wedge_vertex].astype(np.int32),
        name=name,
    )
    _check_grid(mesh, src)
    return mesh


def _per_vertex(values, shape: tuple, dtype, what: str, src: str) -> np.ndarray | None:
    """An optional per-vertex input array as `dtype`, None where absent; `MeshError` naming it
    where its shape is not `shape`."""
    if values is None:
        return None
    arr = np.asarray(values, dtype=dtype)
    if arr.shape != shape:
        raise MeshError(f"{src}: {what} must have shape {shape}, got {arr.shape}")
    return arr


def _checked_float32(P: np.ndarray, src: str) -> np.ndarray:
    """(n, 3) float32 positions, after checking they are finite in the input and in float32."""
    P64 = P.astype(np.float64, copy=False) if P.dtype != np.float32 else P
    if not np.isfinite(P64).all():
        bad = np.flatnonzero(~np.isfinite(P64).all(axis=1))
        raise MeshError(
            f"{src}: {bad.size} vertices have NaN or infinite coordinates (first: vertex {bad[0]})"
        )
    if P64.dtype == np.float32:
        return np.ascontiguousarray(P64)
    with np.errstate(over="ignore"):
        P32 = P64.astype(np.float32)
    if not np.isfinite(P32).all():
        raise MeshError(f"{src}: coordinates too large for float32 (max |x| {np.abs(P64).max():g})")
    return P32


def _clean(F: np.ndarray, pos_of_vertex: np.ndarray, welded: np.ndarray, src: str,
           drop_reversed: bool) -> tuple[np.ndarray, np.ndarray, int, int]:
    """Drop degenerate and repeated triangles; returns (kept faces (k, 3) int64, smooth unit
    normals per welded position (p, 3) float64, repeats dropped, of which reversed)."""
    W64 = welded.astype(np.float64)
    kept, sums, nondegenerate, repeats, reversed_repeats = _clean_triangles(
        F, pos_of_vertex, W64, False, drop_reversed)
    if nondegenerate < 0:  # a long fan around one vertex: the lists would be quadratic
        kept, sums, nondegenerate, repeats, reversed_repeats = _clean_triangles(
            F, pos_of_vertex, W64, True, drop_reversed)
    if nondegenerate == 0:
        raise MeshError(f"{src}: all {F.shape[0]} triangles are degenerate (zero area)")
    if kept.size < F.shape[0]:
        F = F[kept]
    computed, ok = _unit(sums)  # cross = 2 * area * unit normal: area-weighted
    if not ok.all():
        # Opposite faces cancelled out (a two-sided sheet): take one incident face's normal.
        tri_pos = pos_of_vertex[F]
        a, b, c = W64[tri_pos[:, 0]], W64[tri_pos[:, 1]], W64[tri_pos[:, 2]]
        face_unit, _ = _unit(_cross(b - a, c - a))
        fallback = np.zeros_like(computed)
        fallback[tri_pos.ravel()] = np.repeat(face_unit, 3, axis=0)
        computed[~ok] = fallback[~ok]
    return F, computed, repeats, reversed_repeats


@nb.njit(cache=True, nogil=True)
def _repeated_directed_edges(F: np.ndarray, pos_of_vertex: np.ndarray, p: int) -> int:
    """How many edge uses repeat an earlier use in the same direction, among triangles ``F``
    (m, 3) int64 of vertex ids, ``pos_of_vertex`` (n,) int64 their position ids in 0..p-1: 0 for
    consistent winding, the common case, found at the cost of a counting sort (17 ms for 1.3M
    triangles; `_orient` does more and takes 130 ms)."""
    m = F.shape[0]
    start = np.zeros(p + 1, np.int64)
    for t in range(m):
        for c in range(3):
            start[pos_of_vertex[F[t, c]] + 1] += 1
    for v in range(p):
        start[v + 1] += start[v]
    end = np.empty(3 * m, np.int32)  # the end of each edge, bucketed by its start
    for t in range(m):
        for c in range(3):
            a = pos_of_vertex[F[t, c]]
            end[start[a]] = pos_of_vertex[F[t, (c + 1) % 3]]
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


def _fix_winding(F: np.ndarray, pos_of_vertex: np.ndarray, welded: np.ndarray,
                 computed: np.ndarray, src: str, drop_reversed: bool
                 ) -> tuple[np.ndarray, np.ndarray]:
    """Make the winding consistent where two triangles run a shared edge the same way (`_orient`);
    returns (faces (k, 3) int64, smooth unit normals per welded position), recomputed when a
    triangle was flipped. A `MeshWarning` says how many edges disagreed and what was flipped.

    Inconsistent winding hides the flipped triangles from the front (back faces are culled),
    cancels their computed normals, and locks the edges for the simplifier (one LOD level)."""
    if _repeated_directed_edges(F, pos_of_vertex, welded.shape[0]) == 0:
        return F, computed
    same, flip, disagree = _orient(pos_of_vertex[F], welded)
    if same == 0:  # only non-manifold edges repeat a direction: nothing to make consistent
        return F, computed
    flipped = int(np.count_nonzero(flip))
    if flipped:
        F = F.copy()
        F[flip] = F[flip][:, [0, 2, 1]]
        F, computed, _, _ = _clean(F, pos_of_vertex, welded, src, drop_reversed)
    left = (f"; {disagree} edges cannot agree (a non-orientable surface): normals and "
            f"simplification may suffer") if disagree else ""
    _warn(f"{src}: {same} edges are used twice in the same direction: inconsistent winding; "
          f"{flipped} faces flipped to agree with their neighbours{left}")
    return F, computed


# the smallest extent a mesh may have: the renderer's culling clamps distances at 1e-12
# (TINY_DISTANCE in shaders/math.wgsl), so below ~1e-12 across a mesh is drawn from its root
# only, and near 1e-9 the clamp is within 0.1% of its size
MIN_EXTENT = 1e-9
# the coarsest position grid a mesh may get, in median edges: rounding moves a vertex by up to
# sqrt(3)/2 of a step, a fifth of an edge at this ratio; beyond it edges start collapsing
MAX_STEP_PER_EDGE = 0.25


def _check_grid(mesh: Mesh, src: str) -> None:
    """Raise `MeshError` when the mesh's positions do not fit the position grid of `.tess`:
    an extent too small for the renderer (`MIN_EXTENT`), a reach from the origin too large for
    it (`MAX_WORLD`: the renderer refused it only once asked to draw), a grid step coarser than
    `MAX_STEP_PER_EDGE` median edges (the step grows with the extent: a stray vertex at 1e30
    made one of 3.8e22 and merged the rest into two positions), or coordinates too far from the
    origin for 31-bit grid coordinates (which `pack` finds only after the whole build)."""
    from preprocess.pack import choose_step

    lo, hi = column_bounds(mesh.positions)
    extent = float((hi.astype(np.float64) - lo).max())
    if extent < MIN_EXTENT:
        raise MeshError(f"{src}: the mesh is {extent:.3g} across, less than the {MIN_EXTENT:g} "
                        f"the renderer resolves: scale it up")
    step = choose_step(mesh.positions, mesh.triangles, mesh.wedge_position, (lo, hi))
    # the median of the first edges of ~10,000 triangles (choose_step takes ~100,000: a test
    # with a factor 4 of margin needs less, and it cost 10 ms for igea)
    sample = mesh.triangles[:: max(1, mesh.triangle_count // 10_000), :2]
    ends = mesh.positions[mesh.wedge_position[sample]].astype(np.float64)
    median = float(np.median(np.linalg.norm(ends[:, 1] - ends[:, 0], axis=1)))
    if step > MAX_STEP_PER_EDGE * median:
        P = mesh.positions.astype(np.float64)
        centre = np.median(P, axis=0)
        dist = np.linalg.norm(P - centre, axis=1)
        far = int(np.argmax(dist))
        grid = f"(step {step:.3g} against a median edge of {median:.3g})"
        if dist[far] > 100 * max(np.percentile(dist, 99), median):
            x, y, z = mesh.positions[far].tolist()
            raise MeshError(f"{src}: a vertex at ({x:.3g}, {y:.3g}, {z:.3g}) is {dist[far]:.3g} "
                            f"from the others: the mesh's extent {extent:.3g} is too large for "
                            f"the position grid {grid}")
        raise MeshError(f"{src}: the mesh's extent {extent:.3g} is too large for the position "
                        f"grid {grid}: it spans more than 2^22 median edges")
    reach = float(np.abs(np.concatenate([lo, hi]).astype(np.float64)).max())
    if reach / step >= 2**31 - 1:
        raise MeshError(f"{src}: positions up to {reach:.3g} from the origin do not fit a "
                        f"31-bit grid of step {step:.3g} (the mesh spans {extent:.3g}); move it "
                        f"nearer the origin")
    # last: a stray vertex far out is named above as what it is
    reach = float(np.linalg.norm(np.maximum(np.abs(lo), np.abs(hi)).astype(np.float64)))
    if not reach <= MAX_WORLD:
        raise MeshError(f"{src}: the mesh reaches {reach:.3g} from the origin, beyond the "
                        f"{MAX_WORLD:.0e} the renderer draws (float32 squares distances): "
                        f"scale it down")


def _cross(u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Row-wise cross product of (m, 3) arrays, as `_clean_triangles` computes it."""
    out = np.empty_like(u)
    out[:, 0] = u[:, 1] * v[:, 2] - u[:, 2] * v[:, 1]
    out[:, 1] = u[:, 2] * v[:, 0] - u[:, 0] * v[:, 2]
    out[:, 2] = u[:, 0] * v[:, 1] - u[:, 1] * v[:, 0]
    return out


def _wedges(F: np.ndarray, pos_of_vertex: np.ndarray, computed: np.ndarray,
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
        wedge_of_used, wedge_first = _first_use(vpos, computed.shape[0])
        wedge_normal = computed[vpos[wedge_first]].astype(np.float32)
    else:
        if N_in is not None:
            vn, vok = _unit(N_in[used_vertex])
            vn[~vok] = computed[vpos[~vok]]
        else:
            vn = computed[vpos]
        vn32 = vn.astype(np.float32)
        cols = [vpos, *_float_bits(vn32).T]
        if UV_in is not None:
            vuv32 = UV_in[used_vertex].astype(np.float32)
            if not np.isfinite(vuv32).all():
                raise MeshError(f"{src}: texture coordinates contain NaN or infinite values")
            cols += [*_float_bits(vuv32).T]
        if C_in is not None:
            c = C_in[used_vertex]
            if not np.isfinite(c).all():
                raise MeshError(f"{src}: vertex colours contain NaN or infinite values")
            cols += [*_float_bits(c.astype(np.float32)).T]
        if M_in is not None:
            cols.append(M_in[used_vertex].astype(np.uint32))
        wedge_of_used, wedge_first = _group_rows(cols)
        wedge_normal = vn32[wedge_first]
        if UV_in is not None:
            wedge_uv = vuv32[wedge_first] + np.float32(0.0)
    wedge_of_vertex = np.full(n, -1, dtype=np.int32)
    wedge_of_vertex[used_vertex] = wedge_of_used
    return (wedge_of_vertex, used_vertex[wedge_first], wedge_normal + np.float32(0.0),
            wedge_uv)


# --------------------------------------------------------------------------------------------------
# Files


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """Silence trimesh's logging, Python warnings and numpy floating point warnings."""
    logger = logging.getLogger("trimesh")
    was_disabled = logger.disabled
    logger.disabled = True
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            yield
    finally:
        logger.disabled = was_disabled


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    msg = text[0].strip() if text else ""
    if len(msg) > 160:
        msg = msg[:157] + "..."
    return f"{type(exc).__name__}: {msg}" if msg else type(exc).__name__


_WS = np.frombuffer(b" \t", dtype=np.uint8)
_AFTER = np.frombuffer(b"/ \t\r\n", dtype=np.uint8)


def _obj_has_zero_index(raw: bytes) -> bool:
    """True when an OBJ face line uses index 0 (invalid: OBJ indices are 1-based or negative).

    trimesh silently turns 0 into -1 (the last vertex); this scan (vectorized, ~20 ms for 10 MB)
    catches it. A token ``0`` preceded by a blank and followed by ``/``, a blank or the line end is
    a candidate; it counts when its line starts with ``f``.
    """
    data = np.frombuffer(raw, dtype=np.uint8)
    if data.size < 3:
        return False
    zero = np.flatnonzero(data[1:] == ord("0")) + 1
    if zero.size == 0:
        return False
    zero = zero[np.isin(data[zero - 1], _WS)]
    nxt = zero + 1
    at_end = nxt >= data.size
    zero = zero[at_end | np.isin(data[np.minimum(nxt, data.size - 1)], _AFTER)]
    if zero.size == 0:
        return False
    newlines = np.flatnonzero(data == ord("\n"))
    line_start = np.searchsorted(newlines, zero)  # index of the newline before, + 1
    starts = np.where(line_start > 0, newlines[np.maximum(line_start - 1, 0)] + 1, 0)
    # Skip leading blanks of the line (rare): check the first non-blank byte.
    first = data[starts]
    blank = np.isin(first, _WS)
    if blank.any():
        for i in np.flatnonzero(blank):
            j = starts[i]
            while j < data.size and data[j] in (32, 9):
                j += 1
            first[i] = data[j] if j < data.size else 0
    return bool(np.any(first == ord("f")))


def _load_scene(path: Path, file_type: str, data: bytes = b""):
    """trimesh's scene of a file (data: its bytes where the caller read them already)."""
    import trimesh

    source: str | io.BytesIO = str(path)
    resolver = None
    if file_type in ("obj", "off", "stl"):
        from preprocess.readers import absolute_obj_indices, is_text

        data = data or path.read_bytes()
        if file_type == "obj" and (absolute := absolute_obj_indices(data, path.name)):
            # trimesh reads a relative index from the end of the whole file's list
            data = absolute
            source = io.BytesIO(data)
            resolver = trimesh.resolvers.FilePathResolver(str(path))
        try:
            data.decode("utf-8")
        except UnicodeDecodeError:
            if not is_text(data):
                return _load_scene_from(trimesh, source, file_type, resolver)  # binary STL
            # trimesh guesses another encoding with charset_normalizer (not installed): Latin-1
            # gives every byte a character, and only names are text
            source = io.BytesIO(data.decode("latin-1").encode("utf-8"))
            resolver = trimesh.resolvers.FilePathResolver(str(path))
    return _load_scene_from(trimesh, source, file_type, resolver)


def _load_scene_from(trimesh, source, file_type: str, resolver):
    load_scene = getattr(trimesh, "load_scene", None)
    if load_scene is not None:
        return load_scene(source, file_type=file_type, process=False, resolver=resolver)
    return trimesh.load(source, file_type=file_type, process=False, force="scene",
                        resolver=resolver)


# --------------------------------------------------------------------------------------------------
# glTF: the container and the JSON checked before trimesh reads them (its errors on a broken file
# named a file it looked for instead), and the extensions it would silently ignore

_GLB_JSON = 0x4E4F534A  # chunk types
_GLB_BIN = 0x004E4942
# extensions that change nothing this loader reads (positions, normals, first uvs, indices, node
# transforms): materials, lights, texture formats, metadata
_GLTF_HARMLESS = frozenset({"KHR_lights_punctual", "KHR_texture_basisu", "EXT_texture_webp",
                            "EXT_texture_avif", "KHR_xmp_json_ld", "KHR_xmp",
                            "EXT_lights_image_based", "KHR_animation_pointer",
                            "MSFT_texture_dds", "KHR_techniques_webgl"})
_DRACO = "KHR_draco_mesh_compression"


def _gltf_extension_ok(name: str) -> bool:
    if name == _DRACO:  # trimesh decodes it through DracoPy, when installed
        import importlib.util

        return importlib.util.find_spec("DracoPy") is not None
    return name in _GLTF_HARMLESS or (name.startswith("KHR_materials_")
                                      and name not in _GLTF_MATERIAL_DRAWN)


# material extensions drawn with the core model and named in a warning (what they add is left out)
_GLTF_MATERIAL_DRAWN = frozenset({"KHR_materials_emissive_strength", "KHR_materials_unlit",
                                  "KHR_materials_transmission", "KHR_materials_clearcoat",
                                  "KHR_materials_sheen", "KHR_materials_specular",
                                  "KHR_materials_ior", "KHR_materials_volume",
                                  "KHR_materials_iridescence", "KHR_materials_anisotropy",
                                  "KHR_materials_pbrSpecularGlossiness", "KHR_texture_transform"})


def _check_gltf(path: Path, file_type: str, label: str) -> dict:
    """Raise `MeshError` for a glTF/GLB file trimesh cannot read right: a GLB container that is
    not one or is cut short, JSON that does not parse, extensions it requires and trimesh does not
    know, buffers missing or too short, accessors reading past their views. Extensions used but
    not required and not known are named in a `MeshWarning` (their content is ignored). Returns
    the JSON."""
    binary = -1  # bytes of the GLB's BIN chunk
    if file_type == "glb":
        with path.open("rb") as f:  # the header and the JSON: the BIN chunk is trimesh's to read
            text, binary = _glb_json(f, path.stat().st_size, label)
    else:
        text = path.read_bytes()
    try:
        tree = json.loads(text)
    except json.JSONDecodeError as e:
        raise MeshError(f"{label}: invalid JSON: {e.msg} (line {e.lineno}, column {e.colno})"
                        ) from None
    except UnicodeDecodeError as e:
        raise MeshError(f"{label}: invalid JSON: not UTF-8 text (byte {e.start})") from None
    if not isinstance(tree, dict):
        raise MeshError(f"{label}: not a glTF file (its JSON is not an object)")
    version = str((tree.get("asset") or {}).get("version", "2.0"))
    if not version.startswith("2"):
        raise MeshError(f"{label}: glTF version {version} (only 2.0 is supported)")
    required = [str(e) for e in tree.get("extensionsRequired") or []]
    if _DRACO in required and not _gltf_extension_ok(_DRACO):
        raise MeshError(f"{label}: Draco-compressed meshes ({_DRACO}) are not supported "
                        f"(install DracoPy to read them)")
    missing = [e for e in required if not _gltf_extension_ok(e)
               and e not in _GLTF_MATERIAL_DRAWN]
    if missing:
        raise MeshError(f"{label}: requires glTF extensions that are not supported: "
                        f"{', '.join(missing)}")
    ignored = [str(e) for e in tree.get("extensionsUsed") or []
               if str(e) not in required and not _gltf_extension_ok(str(e))
               and str(e) not in _GLTF_MATERIAL_DRAWN]
    if ignored:
        _warn(f"{label}: glTF extensions not supported, ignored: {', '.join(ignored)}")
    drawn = [str(e) for e in tree.get("extensionsUsed") or [] if str(e) in _GLTF_MATERIAL_DRAWN]
    if drawn:
        _warn(f"{label}: glTF extensions not supported, drawn with the core material model: "
              f"{', '.join(drawn)}")
    _check_gltf_buffers(tree, path, binary, label)
    _check_gltf_materials(tree, path, label)
    _check_gltf_scene_features(tree, label)
    return tree


def _check_gltf_scene_features(tree: dict, label: str) -> None:
    """A `MeshWarning` naming what of a glTF scene is not drawn: animations, skins and morph
    targets (the meshes are drawn in their rest pose), cameras, punctual lights, scenes other
    than the default one, points and lines."""
    left = []
    if tree.get("animations"):
        left.append(f"{len(tree['animations'])} animations")
    if tree.get("skins"):
        left.append(f"{len(tree['skins'])} skins (drawn in the rest pose)")
    meshes = [m for m in tree.get("meshes") or [] if isinstance(m, dict)]
    morphs = sum(1 for m in meshes for p in m.get("primitives") or []
                 if isinstance(p, dict) and p.get("targets"))
    if morphs:
        left.append(f"morph targets on {morphs} primitives (drawn unmorphed)")
    if tree.get("cameras"):
        left.append(f"{len(tree['cameras'])} cameras")
    lights = _check_lights(tree, label)
    if lights:  # a scene (preprocess.scene_import.scene_lights) names its own
        _warn(f"{label}: lights not drawn: {lights} (a file of one mesh keeps none; --sun sets "
              f"the sun)")
    scenes = tree.get("scenes") or []
    if len(scenes) > 1:
        left.append(f"{len(scenes) - 1} scenes besides the default one")
    modes = {p.get("mode", 4) for m in meshes for p in m.get("primitives") or []
             if isinstance(p, dict)}
    if modes - {4, 5, 6}:
        left.append("points and lines")
    if left:
        _warn(f"{label}: not drawn: {', '.join(left)}")


def _check_lights(tree: dict, label: str) -> int:
    """`MeshError` for a KHR_lights_punctual light that cannot be drawn right (an unknown type,
    a NaN, infinite or negative intensity, a range that is not > 0, a colour that is not three
    finite numbers >= 0, a spot's cone angles out of order or past pi/2, a node naming a light
    the file lacks); returns how many lights the file has."""
    ext = (tree.get("extensions") or {}).get("KHR_lights_punctual") or {}
    lights = ext.get("lights") or []
    if not isinstance(lights, list):
        raise MeshError(f"{label}: KHR_lights_punctual.lights is not a list")
    for k, light in enumerate(lights):
        where = f"{label}: light {k}"
        if not isinstance(light, dict) or light.get("type") not in ("directional", "spot",
                                                                    "point"):
            raise MeshError(f"{where}: type must be directional, spot or point")
        for key in ("intensity", "range"):
            v = light.get(key, 1.0)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not (
                    math.isfinite(v) and (v > 0 if key == "range" else v >= 0)):
                raise MeshError(f"{where}: {key} {v!r} is not a finite number "
                                f"{'> 0' if key == 'range' else '>= 0'}")
        if light["type"] == "spot":
            cone = light.get("spot", {})
            inner = cone.get("innerConeAngle", 0.0) if isinstance(cone, dict) else None
            outer = cone.get("outerConeAngle", math.pi / 4) if isinstance(cone, dict) else None
            if not (all(isinstance(a, (int, float)) and not isinstance(a, bool)
                        for a in (inner, outer)) and 0 <= inner < outer <= math.pi / 2):
                raise MeshError(f"{where}: spot cone angles {inner!r}, {outer!r} are not "
                                f"0 <= innerConeAngle < outerConeAngle <= pi/2")
        c = light.get("color", [1.0, 1.0, 1.0])
        if not (isinstance(c, list) and len(c) == 3 and all(
                isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)
                and x >= 0 for x in c)):
            raise MeshError(f"{where}: color {c!r} is not three finite numbers >= 0")
    for i, node in enumerate(tree.get("nodes") or []):
        ref = ((node.get("extensions") or {}).get("KHR_lights_punctual") or {}) if isinstance(
            node, dict) else {}
        if "light" in ref and not (isinstance(ref["light"], int)
                                   and 0 <= ref["light"] < len(lights)):
            raise MeshError(f"{label}: node {i} names light {ref['light']!r}; the file has "
                            f"{len(lights)}")
    return len(lights)


def read_gltf_json(path: Path) -> dict:
    """The checked JSON of a glTF/GLB file (`_check_gltf`: `MeshError` with one line for a
    broken file; its `MeshWarning`s as the caller's)."""
    label = path.name
    file_type = "glb" if path.suffix.lower() == ".glb" else "gltf"
    try:
        return _check_gltf(path, file_type, label)
    except MeshError:
        raise
    except Exception as exc:
        raise MeshError(f"{label}: invalid glTF: {_one_line(exc)}") from None


def mesh_from_gltf_json(path: Path, tree: dict, *, name: str,
                        crease_angle: float = DEFAULT_CREASE_DEGREES) -> Mesh:
    """The `Mesh` of a glTF file whose JSON is `tree` (the file's, edited: its buffers and
    images still resolved beside `path`, a GLB's BIN chunk reused), read through trimesh like
    `load_mesh` reads a glTF: materials, colours, node transforms."""
    import trimesh

    label = path.name
    data = json.dumps(tree).encode()
    if path.suffix.lower() == ".glb":
        with path.open("rb") as f:
            _, binary = _glb_json(f, path.stat().st_size, label)
            f.seek(0)
            raw = f.read()
        chunks = [(data + b" " * (-len(data) % 4), _GLB_JSON)]
        if binary >= 0:
            at = 20 + struct.unpack("<I", raw[12:16])[0]
            chunks.append((raw[at + 8 : at + 8 + binary], _GLB_BIN))
        body = b"".join(struct.pack("<II", len(c), k) + c for c, k in chunks)
        glb = b"glTF" + struct.pack("<II", 2, 12 + len(body)) + body
        source, file_type = io.BytesIO(glb), "glb"
    else:
        source, file_type = io.BytesIO(data), "gltf"
    with _quiet():
        try:
            scene = _load_scene_from(trimesh, source, file_type,
                                     trimesh.resolvers.FilePathResolver(str(path)))
            parts = _flatten(scene, label, linear_colors=True)[0]
        except Exception as exc:
            raise MeshError(f"{label}: cannot read mesh {name!r}: {_one_line(exc)}") from None
    if not parts:
        raise MeshError(f"{label}: mesh {name!r} has no triangles")
    return _merge_and_weld(parts, name=name, source=label, crease_angle=crease_angle)


_GLTF_TEXTURE_ROLES = (("pbrMetallicRoughness", "baseColorTexture", "base colour"),
                       ("pbrMetallicRoughness", "metallicRoughnessTexture", "metallic-roughness"),
                       (None, "normalTexture", "normal"), (None, "emissiveTexture", "emissive"),
                       (None, "occlusionTexture", "occlusion"))


def _check_gltf_materials(tree: dict, path: Path, label: str) -> None:
    """`MeshWarning`s for what the materials ask and Tessera leaves out: image files missing on
    disk (drawn without them), textures reading a second uv set, samplers that do not repeat,
    and an emissive factor without a texture that lights a whole surface."""
    images = tree.get("images") or []
    textures = tree.get("textures") or []
    samplers = tree.get("samplers") or []
    missing: dict[str, list[str]] = {}
    broken: dict[str, list[str]] = {}
    checked: dict[str, str | None] = {}
    for mi, mat in enumerate(tree.get("materials") or []):
        if not isinstance(mat, dict):
            continue
        name = str(mat.get("name") or f"#{mi}")
        for outer, key, role in _GLTF_TEXTURE_ROLES:
            holder = (mat.get(outer) or {}) if outer else mat
            info = holder.get(key) if isinstance(holder, dict) else None
            if not isinstance(info, dict):
                continue
            if int(info.get("texCoord", 0) or 0) != 0:
                _warn(f"{label}: material {name!r}: its {role} texture reads uv set "
                      f"{info.get('texCoord')}; drawn with the first")
            ti = info.get("index")
            tex = textures[ti] if isinstance(ti, int) and 0 <= ti < len(textures) else {}
            si = tex.get("sampler") if isinstance(tex, dict) else None
            samp = samplers[si] if isinstance(si, int) and 0 <= si < len(samplers) else {}
            wraps = {samp.get("wrapS", 10497), samp.get("wrapT", 10497)} - {10497}
            if wraps:
                _warn(f"{label}: material {name!r}: its {role} texture clamps or mirrors; "
                      f"drawn repeating")
            src = tex.get("source") if isinstance(tex, dict) else None
            img = images[src] if isinstance(src, int) and 0 <= src < len(images) else None
            uri = img.get("uri") if isinstance(img, dict) else None
            if isinstance(uri, str) and not uri.startswith("data:"):
                file = path.parent / urllib.parse.unquote(uri)
                if not file.is_file():
                    missing.setdefault(uri, []).append(f"{name} {role}")
                elif uri not in checked:
                    checked[uri] = _image_problem(file)
                if checked.get(uri):
                    broken.setdefault(uri, []).append(f"{name} {role}")
        emissive = mat.get("emissiveFactor")
        if (isinstance(emissive, list) and any(float(x) > 0 for x in emissive[:3])
                and "emissiveTexture" not in mat):
            _warn(f"{label}: material {name!r}: emissive factor {tuple(emissive[:3])} without an "
                  f"emissive texture: the whole surface glows (as the file says)")
    for uri, uses in missing.items():
        _warn(f"{label}: texture {uri!r} not found ({', '.join(uses)}); drawn without it")
    for uri, uses in broken.items():
        _warn(f"{label}: texture {uri!r} cannot be read ({checked[uri]}; {', '.join(uses)}); "
              f"drawn without it")


def _image_problem(file: Path) -> str | None:
    """Why an image file cannot be decoded (Pillow's verdict on its header and data), or None."""
    from PIL import Image

    try:
        with Image.open(file) as img:
            img.verify()
        return None
    except Exception as exc:
        return _one_line(exc) or type(exc).__name__


def _glb_json(f: io.BufferedReader, size: int, label: str) -> tuple[bytes, int]:
    """(the JSON chunk, the BIN chunk's length or -1) of an open GLB file of ``size`` bytes."""
    head = f.read(20)
    if len(head) < 20:
        raise MeshError(f"{label}: not a GLB file ({size} bytes, less than a GLB header)")
    magic, version, length, chunk, kind = struct.unpack("<4sIIII", head)
    if magic != b"glTF":
        raise MeshError(f"{label}: not a GLB file (it starts with {magic!r}, not b'glTF')")
    if version != 2:
        raise MeshError(f"{label}: GLB version {version} (only version 2 is supported)")
    if length > size:
        raise MeshError(f"{label}: truncated GLB: the header says {length} bytes, the file "
                        f"holds {size}")
    if length < size:
        _warn(f"{label}: {size - length} bytes after the GLB's end ignored")
    if kind != _GLB_JSON:
        raise MeshError(f"{label}: invalid GLB: its first chunk is not JSON")
    if 20 + chunk > length:
        raise MeshError(f"{label}: truncated GLB: the JSON chunk needs {chunk} bytes, "
                        f"{length - 20} follow it")
    text = f.read(chunk)
    at = 20 + chunk
    binary = -1
    if at + 8 <= length:
        chunk, kind = struct.unpack("<II", f.read(8))
        if kind == _GLB_BIN:
            if at + 8 + chunk > length:
                raise MeshError(f"{label}: truncated GLB: the BIN chunk needs {chunk} bytes, "
                                f"{length - at - 8} follow it")
            binary = chunk
    return text, binary


def _check_gltf_buffers(tree: dict, path: Path, binary: int, label: str) -> None:
    """Buffers present and as long as they say; buffer views and accessors inside them."""
    sizes = []
    for i, buffer in enumerate(tree.get("buffers") or []):
        need = int(buffer.get("byteLength", 0))
        uri = buffer.get("uri")
        if uri is None:
            have = binary if binary >= 0 else 0
            where = "the GLB's BIN chunk"
        elif str(uri).startswith("data:"):
            sizes.append(need)  # decoded by trimesh; its length is checked there
            continue
        else:
            file = path.parent / urllib.parse.unquote(str(uri))
            if not file.is_file():
                raise MeshError(f"{label}: buffer {i} is in {uri!r}, which is missing")
            have = file.stat().st_size
            where = repr(str(uri))
        if have < need:
            raise MeshError(f"{label}: buffer {i} needs {need} bytes, {where} holds {have}")
        sizes.append(need)
    views = tree.get("bufferViews") or []
    for i, view in enumerate(views):
        b = view.get("buffer", 0)
        end = int(view.get("byteOffset", 0)) + int(view.get("byteLength", 0))
        if not 0 <= b < len(sizes) or end > sizes[b]:
            raise MeshError(f"{label}: buffer view {i} reads past the end of its buffer")
    for i, acc in enumerate(tree.get("accessors") or []):
        if "bufferView" not in acc:
            continue
        v = acc["bufferView"]
        if not 0 <= v < len(views):
            raise MeshError(f"{label}: accessor {i} names buffer view {v}, which is missing")
        item = (_GLTF_COMPONENT.get(acc.get("componentType"), 4)
                * _GLTF_WIDTH.get(acc.get("type"), 1))
        stride = int(views[v].get("byteStride") or item)
        count = int(acc.get("count", 0))
        need = int(acc.get("byteOffset", 0)) + (stride * (count - 1) + item if count else 0)
        if need > int(views[v].get("byteLength", 0)):
            raise MeshError(f"{label}: accessor {i} reads past the end of buffer view {v} "
                            f"({need} bytes, the view holds {views[v].get('byteLength', 0)})")


_GLTF_COMPONENT = {5120: 1, 5121: 1, 5122: 2, 5123: 2, 5125: 4, 5126: 4}  # bytes
_GLTF_WIDTH = {"SCALAR": 1, "VEC2": 2, "VEC3": 3, "VEC4": 4, "MAT2": 4, "MAT3": 9, "MAT4": 16}


def _warn(message: str) -> None:
    """A `MeshWarning`: something of the input left out or repaired; the build goes on."""
    warnings.warn(message, MeshWarning, stacklevel=3)


def load_mesh(path: str | os.PathLike, *,
              crease_angle: float = DEFAULT_CREASE_DEGREES,
              texture: str | os.PathLike | None = None) -> Mesh:
    """Load a mesh file as one welded, validated `Mesh` named after the file's stem.

    Formats: OBJ, PLY, STL, glTF/GLB and OFF (by suffix, case-insensitive). The common forms of
    OBJ, STL, PLY and OFF are read by `preprocess.readers` without importing trimesh (about 10x
    faster, and the same `Mesh` bit for bit); glTF/GLB and anything those readers leave out are
    read by trimesh.

    One asset per file: a file holding a scene (several objects in an OBJ, several meshes or nodes
    in a glTF) is flattened into one mesh, each node's geometry transformed by its world transform
    (positions by the matrix, normals by its inverse transpose, winding reversed where the
    transform mirrors). Point clouds and lines inside a scene that also has triangles are ignored.
    Polygons are triangulated by trimesh on load (a fan per polygon).

    Normals are kept where the file has them (OBJ ``vn``, PLY ``nx ny nz``, glTF ``NORMAL``), else
    computed with edges sharper than ``crease_angle`` degrees kept hard (see `mesh_from_arrays`);
    STL face normals are not used. UVs are kept where present
    (OBJ ``vt``, PLY ``s t``/``u v``, glTF ``TEXCOORD_0``, which trimesh flips to a lower-left
    origin and only reads for primitives with a material). In a scene where only some geometry has
    UVs, the others get uv (0, 0); likewise missing normals are computed.

    Materials (see `preprocess.materials`): glTF metallic-roughness materials with their
    textures, OBJ + MTL (``Kd``, ``map_Kd``), vertex colours (PLY ``red green blue [alpha]``, 8-bit
    sRGB; glTF ``COLOR_0``, linear). Each material's triangles keep their material id (a material
    border is a seam). ``texture``: an image file used as the base-colour texture of every
    material without one (an OBJ with uvs that names no MTL, as scans often come).

    Raises:
        MeshError: one line naming the file: missing file, unsupported or unreadable format, a
            file cut short or holding less than its header promises, no triangles (a point cloud
            or lines), NaN/inf coordinates, face indices out of range, nothing left after
            dropping degenerate triangles, an extent the position grid cannot hold, glTF
            extensions required and not supported.

    Warns:
        MeshWarning: one line naming the file for each thing left out or repaired: repeated
            faces, inconsistent winding, glTF extensions used and not supported, bytes after a
            GLB's or a binary STL's end. Given only once the file has loaded, so that a file
            that fails shows its error alone.
    """
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", MeshWarning)
        image = None
        if texture is not None:
            from preprocess.materials import read_image_file

            image = read_image_file(Path(texture), Path(path).name)
        mesh = _load(path, fast=True, crease_angle=crease_angle, texture=image)
    for w in caught:
        warnings.warn(w.message, w.category, stacklevel=2)  # as the caller's
    return mesh


def _load(path: str | os.PathLike, *, fast: bool,
          crease_angle: float = DEFAULT_CREASE_DEGREES,
          texture: np.ndarray | None = None) -> Mesh:
    """`load_mesh`; ``fast=False`` reads every format through trimesh (the reference that tests
    compare the fast readers with)."""
    p = Path(path)
    label = p.name
    if not p.exists():
        raise MeshError(f"{label}: file not found ({p})")
    if not p.is_file():
        raise MeshError(f"{label}: not a file ({p})")
    suffix = p.suffix.lower()
    file_type = SUPPORTED_SUFFIXES.get(suffix)
    if file_type is None:
        known = ", ".join(sorted(SUPPORTED_SUFFIXES))
        raise MeshError(f"{label}: unsupported file type {suffix or '(no suffix)'!r} ({known})")
    if p.stat().st_size == 0:
        raise MeshError(f"{label}: the file is empty")

    if file_type in ("gltf", "glb"):
        try:
            _check_gltf(p, file_type, label)
        except MeshError:
            raise
        except Exception as exc:  # JSON of the wrong shape: a list where an object belongs ...
            raise MeshError(f"{label}: invalid glTF: {_one_line(exc)}") from None
    meshes = None
    if fast:
        from preprocess.readers import read_parts

        try:
            with np.errstate(all="ignore"):
                meshes = read_parts(p, file_type, label)
        except MeshError:
            raise
        except Exception:
            # A bug in a fast reader must not make a readable file fail: trimesh reads it.
            meshes = None
    if meshes is None:
        meshes = _trimesh_parts(p, file_type, label)
    mesh = _merge_and_weld(meshes, name=p.stem, source=label, crease_angle=crease_angle,
                           base_color_texture=texture)
    if file_type == "obj" and mesh.materials:
        _mtl_extras(mesh, p, label)
    return mesh


def _trimesh_parts(p: Path, file_type: str, label: str) -> list[tuple]:
    """The geometry of a file read through trimesh, as `_flatten` gives it (never empty)."""
    raw = b""
    if file_type in ("obj", "off"):
        from preprocess.readers import check_text, warn_face_lines

        raw = p.read_bytes()  # read once for the checks around trimesh's own reading
        check_text(raw, label, file_type.upper())  # a binary file: trimesh's error says nothing
        if file_type == "obj":
            warn_face_lines(raw, label)
        elif (line := _comment_line(raw, _OFF_TRAILING_COMMENT)) is not None:
            # trimesh would misread the lines after it, without a word
            raise MeshError(f"{label}: line {line}: a comment after a line's data, which "
                            f"trimesh (reading this file for what the fast reader leaves to it) "
                            f"misreads: put it on a line of its own")
    with _quiet():
        if file_type == "obj" and _obj_has_zero_index(raw):
            raise MeshError(f"{label}: face index 0 out of range (OBJ indices start at 1)")
        try:
            scene = _load_scene(p, file_type, raw)
        except MeshError:
            raise
        except IndexError as exc:
            raise MeshError(f"{label}: face index out of range ({_one_line(exc)})") from None
        except Exception as exc:
            why = _obj_comment(raw) if file_type == "obj" else None
            raise MeshError(
                f"{label}: cannot read as {file_type.upper()}: {why or _one_line(exc)}"
            ) from None
        try:
            parts = _flatten(scene, label, linear_colors=file_type in ("gltf", "glb"))
        except Exception as exc:
            raise MeshError(f"{label}: cannot read the scene: {_one_line(exc)}") from None

    if parts is None or not parts[0]:
        kinds = parts[1] if parts is not None else []
        if kinds:
            raise MeshError(f"{label}: not a triangle mesh: it contains no faces (only "
                            f"{'/'.join(sorted(kinds))})")
        raise MeshError(f"{label}: no mesh found (empty or not a valid {file_type.upper()} file)")
    coloured = any(len(part) > 4 and part[4] is not None for part in parts[0])
    if file_type == "off" and not coloured and re.match(rb"\s*COFF", raw):
        _warn(f"{label}: COFF vertex colours in a file read through trimesh (for an unusual "
              f"line), which drops them: drawn without them")
    if file_type == "obj":
        from preprocess.readers import has_material_library

        if not coloured and _OBJ_COLOURED.search(raw):
            # trimesh keeps 'v x y z r g b' colours only where a geometry has no uvs
            _warn(f"{label}: vertex colours beside uvs in a file read through trimesh (for its "
                  f"materials or an unusual line): drawn without them")
        if not has_material_library(raw, p):  # trimesh's placeholder materials
            return [(*part[:5], None) for part in parts[0]]
    return parts[0]


# a vertex line with six values or more: 'v x y z r g b', colours after the position
_OBJ_COLOURED = re.compile(rb"(?m)^v(?:[ \t]+[^ \t\r\n#]+){6}")


# a comment after the data of a vertex or face line, which trimesh's OBJ parser cannot read (the
# fast reader reads it; a file it leaves to trimesh for something else fails there)
_OBJ_TRAILING_COMMENT = re.compile(rb"(?m)^(?:v[tn]?|f)[ \t][^#\r\n]*#")


# the same in an OFF file (the header's line, 'OFF # ...', too), which trimesh misreads
_OFF_TRAILING_COMMENT = re.compile(rb"(?m)^[ \t]*[^#\s][^#\r\n]*#")


def _comment_line(raw: bytes, pattern: re.Pattern) -> int | None:
    """The 1-based line of the first match of `pattern` in `raw` (None: none)."""
    from preprocess.readers import line_number

    found = pattern.search(raw)
    return None if found is None else line_number(raw, found.start())


def _obj_comment(raw: bytes) -> str | None:
    """Why trimesh could not read an OBJ, where a comment at the end of a data line is why."""
    line = _comment_line(raw, _OBJ_TRAILING_COMMENT)
    if line is None:
        return None
    return (f"line {line}: a comment at the end of a vertex or face line, which trimesh (reading "
            f"this file for what the fast reader leaves to it) cannot read: put it on a line of "
            f"its own")


def _flatten(scene, label: str = "mesh", *,
             linear_colors: bool = False) -> tuple[list[tuple], list[str]]:
    """The triangle geometry of a trimesh Scene in world space.

    Returns ``(meshes, other_kinds)``: each mesh is ``(positions (n, 3) float64, faces (m, 3)
    int64, normals (n, 3) float64 or None, uvs (n, 2) float64 or None, colours (n, 4) float64
    linear RGBA or None, material: a trimesh material or None)``; ``other_kinds`` names the
    non-triangle geometry seen ("points", "lines") for the error message. ``linear_colors``:
    the file's vertex colours are linear (glTF), not 8-bit sRGB (PLY, OBJ).
    """
    import trimesh

    meshes: list[tuple] = []
    others: set[str] = set()
    for node in scene.graph.nodes_geometry:
        transform, geom_name = scene.graph[node]
        geom = scene.geometry.get(geom_name)
        if geom is None:
            continue
        if not isinstance(geom, trimesh.Trimesh):
            others.add("points" if isinstance(geom, trimesh.PointCloud) else "lines")
            continue
        faces = np.asarray(geom.faces)
        if faces.size == 0:
            continue
        V = np.asarray(geom.vertices, dtype=np.float64)
        N = geom._cache.cache.get("vertex_normals") if hasattr(geom, "_cache") else None
        if N is not None:
            N = np.asarray(N, dtype=np.float64)
            if N.shape != V.shape:
                N = None
        uv = getattr(geom.visual, "uv", None)
        if uv is not None:
            uv = np.asarray(uv, dtype=np.float64)
            if uv.ndim != 2 or uv.shape[0] != V.shape[0] or uv.shape[1] < 2:
                uv = None
            else:
                uv = uv[:, :2]
        colors = _vertex_colors(geom, len(V), linear=linear_colors, label=label)
        material = getattr(geom.visual, "material", None)
        T = np.asarray(transform, dtype=np.float64)
        if not np.array_equal(T, np.eye(4)):
            L = T[:3, :3]
            V = V @ L.T + T[:3, 3]
            det = float(np.linalg.det(L))
            if N is not None:
                # Cofactor matrix = det * inverse transpose; times sign(det) keeps outward outward.
                cof = np.stack(
                    [
                        np.cross(L[:, 1], L[:, 2]),
                        np.cross(L[:, 2], L[:, 0]),
                        np.cross(L[:, 0], L[:, 1]),
                    ],
                    axis=1,
                )
                N = N @ (np.sign(det) * cof).T
            if det < 0:
                faces = faces[:, ::-1]
        meshes.append((V, faces, N, uv, colors, material))
    return meshes, sorted(others)


def _vertex_colors(geom, n: int, *, linear: bool, label: str) -> np.ndarray | None:
    """(n, 4) float64 linear RGBA vertex colours of a trimesh geometry, or None. glTF's COLOR_0
    is linear (``linear``); PLY and OBJ colours are 8-bit sRGB by convention."""
    visual = geom.visual
    raw = None
    if getattr(visual, "kind", None) == "vertex":  # ColorVisuals: uint8 RGBA
        raw = np.asarray(visual.vertex_colors)
    elif getattr(visual, "kind", None) == "face":
        _warn(f"{label}: per-face colours are not supported; drawn without them")
    elif hasattr(visual, "vertex_attributes") and "color" in visual.vertex_attributes:
        raw = np.asarray(visual.vertex_attributes["color"])  # glTF COLOR_0 beside a material
    if raw is None or raw.ndim != 2 or raw.shape[0] != n or raw.shape[1] not in (3, 4):
        return None
    if raw.dtype.kind == "f":
        c = raw.astype(np.float64)
    else:
        c = raw.astype(np.float64) / float(np.iinfo(raw.dtype).max)
    return vertex_rgba(c, srgb=not linear)


def _materials_of(parts: list[tuple], label: str) -> tuple[list[Material], list[Texture],
                                                           list[int]]:
    """The distinct materials of the parts (trimesh's, converted), their textures, and each
    part's material index. A part without material gets the default material when another part
    has one; a file without any material has the empty list."""
    if not any(len(p) > 5 and p[5] is not None for p in parts):
        return [], [], [0] * len(parts)
    materials: list[Material] = []
    textures: list[Texture] = []
    seen_mat: dict[int, int] = {}
    seen_tex: dict[tuple[int, bool], int] = {}

    def texture(img, srgb: bool, what: str) -> int:
        if img is None:
            return -1
        key = (id(img), srgb)
        if key not in seen_tex:
            seen_tex[key] = len(textures)
            textures.append(Texture(image_rgba(img, label, what), srgb,
                                    getattr(img, "filename", None) or what))
        return seen_tex[key]

    index = []
    for part in parts:
        m = part[5] if len(part) > 5 else None
        key = id(m)
        if key not in seen_mat:
            seen_mat[key] = len(materials)
            materials.append(default_material() if m is None
                             else _material_from_trimesh(m, texture, label))
        index.append(seen_mat[key])
    return materials, textures, index


def _material_from_trimesh(m, texture, label: str) -> Material:
    """A `Material` from trimesh's PBRMaterial (glTF) or SimpleMaterial (OBJ + MTL)."""
    name = str(getattr(m, "name", None) or "material")
    if hasattr(m, "baseColorTexture"):  # PBRMaterial
        bcf = m.baseColorFactor
        base = (tuple(float(x) / 255.0 for x in np.asarray(bcf).reshape(-1)[:4])
                if bcf is not None else (1.0, 1.0, 1.0, 1.0))
        emissive = (tuple(float(x) for x in np.asarray(m.emissiveFactor).reshape(-1)[:3])
                    if m.emissiveFactor is not None else (0.0, 0.0, 0.0))
        mode = str(m.alphaMode or "OPAQUE").upper()
        if mode not in alpha_modes:
            mode = "OPAQUE"
        if mode == "BLEND":
            _warn(f"{label}: material {name!r}: alpha blending is not supported; drawn opaque")
        return Material(
            name=name, base_color=base,
            base_color_texture=texture(m.baseColorTexture, True, f"{name} base colour"),
            metallic=1.0 if m.metallicFactor is None else float(m.metallicFactor),
            roughness=1.0 if m.roughnessFactor is None else float(m.roughnessFactor),
            metallic_roughness_texture=texture(m.metallicRoughnessTexture, False,
                                               f"{name} metallic-roughness"),
            normal_texture=texture(m.normalTexture, False, f"{name} normal"),
            emissive=emissive,
            emissive_texture=texture(m.emissiveTexture, True, f"{name} emissive"),
            occlusion_texture=texture(m.occlusionTexture, False, f"{name} occlusion"),
            double_sided=bool(m.doubleSided),
            alpha_mode=mode,
            alpha_cutoff=0.5 if m.alphaCutoff is None else float(m.alphaCutoff))
    # SimpleMaterial: MTL Kd (a linear factor, as glTF importers read it) and map_Kd
    diffuse = getattr(m, "diffuse", None)
    base = (tuple(float(x) / 255.0 for x in np.asarray(diffuse).reshape(-1)[:4])
            if diffuse is not None else (1.0, 1.0, 1.0, 1.0))
    return Material(name=name, base_color=base,
                    base_color_texture=texture(getattr(m, "image", None), True,
                                               f"{name} map_Kd"),
                    metallic=0.0, roughness=0.6)


def _merge_and_weld(meshes: list[tuple], *, name: str, source: str,
                    drop_reversed: bool = False,
                    crease_angle: float = DEFAULT_CREASE_DEGREES,
                    base_color_texture: np.ndarray | None = None) -> Mesh:
    """One `Mesh` of the parts (`_flatten`'s tuples; the fast readers give the first four
    fields): their vertices concatenated, each part's material and vertex colours kept per
    vertex, so that a material border becomes a seam of wedges."""
    materials, textures, part_material = _materials_of(meshes, source)
    if len(materials) > MAX_MATERIALS:
        raise MeshError(f"{source}: {len(materials)} materials in one mesh; an asset holds at "
                        f"most {MAX_MATERIALS} (preprocess.tess.limits.MAX_MATERIALS)")
    if base_color_texture is not None:
        if not materials:
            materials = [default_material()]
            part_material = [0] * len(meshes)
        textures.append(Texture(base_color_texture, True, "texture"))
        for mat in materials:
            if mat.base_color_texture < 0:
                mat.base_color_texture = len(textures) - 1
                mat.base_color = (1.0, 1.0, 1.0, mat.base_color[3])
    any_n = any(m[2] is not None for m in meshes)
    any_uv = any(m[3] is not None for m in meshes)
    any_c = any(len(m) > 4 and m[4] is not None for m in meshes)
    Vs, Fs, Ns, UVs, Cs, Ms = [], [], [], [], [], []
    offset = 0
    for part, mat in zip(meshes, part_material, strict=True):
        V, F, N, uv = part[:4]
        Vs.append(V)
        F = np.asarray(F, dtype=np.int64)
        Fs.append(F + offset if offset else F)  # no copy for the first (often only) part
        if any_n:
            Ns.append(N if N is not None else np.zeros_like(V))
        if any_uv:
            UVs.append(uv if uv is not None else np.zeros((V.shape[0], 2)))
        if any_c:
            c = part[4] if len(part) > 4 else None
            Cs.append(c if c is not None else np.ones((V.shape[0], 4)))
        if len(materials) > 1:
            Ms.append(np.full(V.shape[0], mat, np.int32))
        offset += V.shape[0]

    def join(arrays: list, present: bool):
        if not present:
            return None
        return arrays[0] if len(arrays) == 1 else np.concatenate(arrays)

    with np.errstate(all="ignore"):
        mesh = mesh_from_arrays(join(Vs, True), join(Fs, True), join(Ns, any_n),
                                join(UVs, any_uv), colors=join(Cs, any_c),
                                vertex_material=join(Ms, len(materials) > 1),
                                name=name, source=source, drop_reversed=drop_reversed,
                                crease_angle=crease_angle)
    if materials:
        if mesh.wedge_uv is None and any(t >= 0 for m in materials
                                         for t in m.texture_indices()):
            _warn(f"{source}: textures without texture coordinates; drawn without them")
            for m in materials:
                m.drop_textures()
        mesh.materials, mesh.textures = materials, textures
    return mesh


def weld_positions(points: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Merge bit-identical float32 points (-0.0 counts as +0.0).

    Args:
        points: (n, 3) float array.

    Returns:
        ``(positions, inverse)``: positions (p, 3) float32, each distinct point once in order of
        first appearance, and inverse (n,) int64 with ``positions[inverse] == points`` (as float32).
    """
    P32 = np.ascontiguousarray(points, dtype=np.float32)
    inverse, first = _group_keys(_float_bits(P32))
    return P32[first] + np.float32(0.0), inverse



# --------------------------------------------------------------------------------------------------
# OBJ + MTL: what trimesh's MTL reader drops (normal maps, missing files) read here


_MTL_DRAWN = {"newmtl", "kd", "ka", "ks", "ns", "ni", "map_kd", "illum", "map_bump", "bump",
              "norm", "d", "tr", "ke", "tf"}


def _mtl_files(obj: Path) -> list[Path]:
    """The MTL files an OBJ names that exist beside it."""
    from preprocess.readers import mtl_library_names

    return [obj.parent / n for n in mtl_library_names(obj.read_bytes())
            if (obj.parent / n).is_file()]


def _mtl_extras(mesh: Mesh, obj: Path, label: str) -> None:
    """Add the normal maps of an OBJ's MTL files (``norm``, ``map_Bump``, ``bump``: a
    tangent-space normal map; a grey one is a height map and is named, not used) to `mesh`'s
    materials, and name in a `MeshWarning` what is left out: a texture file missing, the MTL
    statements not drawn."""
    from preprocess.materials import read_image_file

    by_name = {m.name: m for m in mesh.materials}
    unknown: set[str] = set()
    current = None
    for mtl in _mtl_files(obj):
        for line in mtl.read_text(errors="replace").splitlines():
            words = line.split()
            if not words or words[0].startswith("#"):
                continue
            key = words[0].lower()
            if key == "newmtl":
                current = by_name.get(" ".join(words[1:]))
                continue
            if key not in _MTL_DRAWN:
                unknown.add(words[0])
                continue
            if key not in ("map_kd", "map_bump", "bump", "norm") or len(words) < 2:
                continue
            file = mtl.parent / words[-1]  # options (-bm 1.0 ...) come before the file
            if not file.is_file():
                _warn(f"{label}: texture {words[-1]!r} not found ({mtl.name} {words[0]}); "
                      f"drawn without it")
                continue
            if key == "map_kd" or current is None or mesh.wedge_uv is None:
                continue
            image = read_image_file(file, label)
            if np.ptp(image[..., :3].astype(np.int16), axis=2).max() == 0:
                _warn(f"{label}: {words[0]} {words[-1]!r} is a height map (grey); bump maps are "
                      f"not supported, normal maps are: drawn without it")
                continue
            mesh.textures.append(Texture(image, False, file.name))
            current.normal_texture = len(mesh.textures) - 1
            if "-bm" in words[1:-1]:
                at = words.index("-bm")
                try:
                    current.normal_scale = float(words[at + 1])
                except (IndexError, ValueError):
                    pass
    if unknown:
        _warn(f"{label}: MTL statements not supported, ignored: {', '.join(sorted(unknown))}")


def mesh_from_obj_text(path: Path, data: bytes, *, name: str,
                       crease_angle: float = DEFAULT_CREASE_DEGREES) -> Mesh:
    """The `Mesh` of OBJ text `data` (an OBJ file's, edited: one object's faces kept), its MTL
    files and textures resolved beside `path`, read as `load_mesh` reads an OBJ (what its faces
    lose is named by the caller, for the whole file: `readers.warn_face_lines`)."""
    import trimesh

    from preprocess.readers import has_material_library, read_obj_bytes

    label = path.name
    parts = None
    mtl = has_material_library(data, path)
    if not mtl:
        try:
            with np.errstate(all="ignore"):
                parts = read_obj_bytes(data, label, warn=False)  # the scene's, once
        except MeshError:
            raise
        except Exception:
            parts = None
    if parts is None:
        from preprocess.readers import absolute_obj_indices

        data = absolute_obj_indices(data, label) or data  # trimesh counts them from the end
        with _quiet():
            try:
                scene = _load_scene_from(trimesh, io.BytesIO(data), "obj",
                                         trimesh.resolvers.FilePathResolver(str(path)))
                parts = _flatten(scene, label)[0]
            except Exception as exc:
                raise MeshError(f"{label}: cannot read object {name!r}: {_one_line(exc)}"
                                ) from None
        if not mtl:  # trimesh's placeholder materials
            parts = [(*part[:5], None) for part in parts]
    if not parts:
        raise MeshError(f"{label}: object {name!r} has no triangles")
    mesh = _merge_and_weld(parts, name=name, source=label, crease_angle=crease_angle)
    if mesh.materials:
        _mtl_extras(mesh, path, label)
    return mesh
