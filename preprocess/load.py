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
  exact duplicate triangles (the same three position ids in the same cyclic order) are dropped;
- positions and wedges that no remaining triangle uses are dropped; the survivors keep the order in
  which they first appear in the input, so a mesh that is already clean comes back unchanged.

Every problem with the input raises `MeshError` with a one-line message that names the file.
"""

from __future__ import annotations

import contextlib
import logging
import os
import warnings
from collections.abc import Iterator
from pathlib import Path

import numba as nb
import numpy as np

from preprocess.mesh import Mesh, MeshError

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
                     by_hash: bool) -> tuple:
    """Keep the triangles that are neither degenerate nor a repeat, and sum their normals.

    ``F`` (m, 3) int64 vertex ids, ``pos_of_vertex`` (n,) int64 their welded position ids, ``W64``
    (p, 3) float64 welded positions. A triangle is dropped when two of its position ids are
    equal, when its cross product (b - a) x (c - a) is exactly zero in float64, or when an
    earlier kept triangle has the same position ids in the same cyclic order. Returns (the kept
    triangles' indices (k,) int64 in order, area-weighted normal sums (p, 3) float64, count of
    non-degenerate triangles). Nothing larger is built: on a 2-core VM, fresh memory costs about
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
        repeat = False
        if by_hash:
            h = ((np.uint64(r0) * _MIX) ^ np.uint64(r1)) * _MIX
            h = (h ^ np.uint64(r2)) * _MIX
            h ^= h >> np.uint64(29)
            s = np.int64(h & np.uint64(size - 1))
            while table[s] >= 0:
                j = table[s]
                if rot[j, 0] == r0 and rot[j, 1] == r1 and rot[j, 2] == r2:
                    repeat = True
                    break
                s = (s + 1) & (size - 1)
            if not repeat:
                table[s] = k
        else:
            j = head[r0]
            steps = 0
            while j >= 0:
                if rot[j, 1] == r1 and rot[j, 2] == r2:
                    repeat = True
                    break
                j = link[j]
                steps += 1
                if steps > _CHAIN_LIMIT:
                    return kept[:0], sums, -1
            if not repeat:
                link[k] = head[r0]
                head[r0] = k
        if repeat:
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
    return kept[:k], sums, nondegenerate


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


def mesh_from_arrays(
    positions: np.ndarray,
    faces: np.ndarray,
    normals: np.ndarray | None = None,
    uvs: np.ndarray | None = None,
    *,
    name: str = "mesh",
    source: str | None = None,
) -> Mesh:
    """Weld raw triangle arrays into a validated `Mesh`.

    Args:
        positions: (n, 3) float, one row per input vertex (duplicates allowed: they are welded).
        faces: (m, 3) int, counter-clockwise triangles indexing ``positions``.
        normals: (n, 3) float per input vertex, or None to compute smooth area-weighted normals (one
            wedge per position then, unless uvs split it). Rows need not be unit length; zero-length
            or non-finite rows are replaced by the computed normal of their position.
        uvs: (n, 2) float per input vertex, or None.
        name: the `Mesh.name`.
        source: how error messages name the input (defaults to ``name``), e.g. the file name.

    Returns:
        A `Mesh`: positions (p, 3) float32, triangles (t, 3) int32 wedge ids, wedge_position (w,)
        int32, wedge_normal (w, 3) float32 unit, wedge_uv (w, 2) float32 or None.

    Raises:
        MeshError: bad shapes, NaN/inf coordinates, face indices out of range, or no triangle left
            after dropping degenerate ones.
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
    N_in = None
    if normals is not None:
        N_in = np.asarray(normals, dtype=np.float64)
        if N_in.shape != (n, 3):
            raise MeshError(f"{src}: normals must have shape ({n}, 3), got {N_in.shape}")
    UV_in = None
    if uvs is not None:
        UV_in = np.asarray(uvs, dtype=np.float64)
        if UV_in.shape != (n, 2):
            raise MeshError(f"{src}: uvs must have shape ({n}, 2), got {UV_in.shape}")

    # Weld positions by exact float32 value (-0.0 folded into +0.0).
    pbits = _float_bits(P32)
    pos_of_vertex, pos_first = _group_keys(pbits)
    del pbits
    welded = P32[pos_first] + np.float32(0.0)  # (p, 3) float32
    F, computed = _clean(F, pos_of_vertex, welded, src)
    wedge_of_vertex, wedge_vertex, vn32, vuv32 = _wedges(
        F, pos_of_vertex, computed, N_in, UV_in, src
    )
    triangles = wedge_of_vertex[F]  # int32: the Mesh's type, half the memory to touch
    # Positions: those used, in order of first appearance among the wedges.
    wedge_pos_old = pos_of_vertex[wedge_vertex]
    pos_used, pos_new_first = _first_use(wedge_pos_old, welded.shape[0])
    positions_out = welded[wedge_pos_old[pos_new_first]]
    return Mesh(
        positions=np.ascontiguousarray(positions_out, dtype=np.float32),
        triangles=np.ascontiguousarray(triangles, dtype=np.int32),
        wedge_position=np.ascontiguousarray(pos_used, dtype=np.int32),
        wedge_normal=np.ascontiguousarray(vn32, dtype=np.float32),
        wedge_uv=None if vuv32 is None else np.ascontiguousarray(vuv32, dtype=np.float32),
        name=name,
    )


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


def _clean(F: np.ndarray, pos_of_vertex: np.ndarray, welded: np.ndarray,
           src: str) -> tuple[np.ndarray, np.ndarray]:
    """Drop degenerate and repeated triangles; returns (kept faces (k, 3) int64, smooth unit
    normals per welded position (p, 3) float64)."""
    W64 = welded.astype(np.float64)
    kept, sums, nondegenerate = _clean_triangles(F, pos_of_vertex, W64, False)
    if nondegenerate < 0:  # a long fan around one vertex: the lists would be quadratic
        kept, sums, nondegenerate = _clean_triangles(F, pos_of_vertex, W64, True)
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
    return F, computed


def _cross(u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Row-wise cross product of (m, 3) arrays, as `_clean_triangles` computes it."""
    out = np.empty_like(u)
    out[:, 0] = u[:, 1] * v[:, 2] - u[:, 2] * v[:, 1]
    out[:, 1] = u[:, 2] * v[:, 0] - u[:, 0] * v[:, 2]
    out[:, 2] = u[:, 0] * v[:, 1] - u[:, 1] * v[:, 0]
    return out


def _wedges(F: np.ndarray, pos_of_vertex: np.ndarray, computed: np.ndarray,
            N_in: np.ndarray | None, UV_in: np.ndarray | None, src: str) -> tuple:
    """The wedges: distinct (position, normal, uv) among the input vertices still used.

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
    if N_in is None and UV_in is None:
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


def _obj_has_zero_index(path: Path) -> bool:
    """True when an OBJ face line uses index 0 (invalid: OBJ indices are 1-based or negative).

    trimesh silently turns 0 into -1 (the last vertex); this scan (vectorized, ~20 ms for 10 MB)
    catches it. A token ``0`` preceded by a blank and followed by ``/``, a blank or the line end is
    a candidate; it counts when its line starts with ``f``.
    """
    data = np.fromfile(path, dtype=np.uint8)
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


def _load_scene(path: Path, file_type: str):
    import trimesh

    load_scene = getattr(trimesh, "load_scene", None)
    if load_scene is not None:
        return load_scene(str(path), file_type=file_type, process=False)
    return trimesh.load(str(path), file_type=file_type, process=False, force="scene")


def load_mesh(path: str | os.PathLike) -> Mesh:
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
    computed (see `mesh_from_arrays`); STL face normals are not used. UVs are kept where present
    (OBJ ``vt``, PLY ``s t``/``u v``, glTF ``TEXCOORD_0``, which trimesh flips to a lower-left
    origin and only reads for primitives with a material). In a scene where only some geometry has
    UVs, the others get uv (0, 0); likewise missing normals are computed.

    Raises:
        MeshError: one line naming the file: missing file, unsupported or unreadable format, no
            triangles (a point cloud or lines), NaN/inf coordinates, face indices out of range,
            or nothing left after dropping degenerate triangles.
    """
    return _load(path, fast=True)


def _load(path: str | os.PathLike, *, fast: bool) -> Mesh:
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
    return _merge_and_weld(meshes, name=p.stem, source=label)


def _trimesh_parts(p: Path, file_type: str, label: str) -> list[tuple]:
    """The geometry of a file read through trimesh, as `_flatten` gives it (never empty)."""
    with _quiet():
        if file_type == "obj" and _obj_has_zero_index(p):
            raise MeshError(f"{label}: face index 0 out of range (OBJ indices start at 1)")
        try:
            scene = _load_scene(p, file_type)
        except MeshError:
            raise
        except IndexError as exc:
            raise MeshError(f"{label}: face index out of range ({_one_line(exc)})") from None
        except Exception as exc:
            raise MeshError(
                f"{label}: cannot read as {file_type.upper()}: {_one_line(exc)}"
            ) from None
        try:
            parts = _flatten(scene)
        except Exception as exc:
            raise MeshError(f"{label}: cannot read the scene: {_one_line(exc)}") from None

    if parts is None or not parts[0]:
        kinds = parts[1] if parts is not None else []
        if kinds:
            raise MeshError(f"{label}: not a triangle mesh (contains {', '.join(sorted(kinds))})")
        raise MeshError(f"{label}: no mesh found (empty or not a valid {file_type.upper()} file)")
    return parts[0]


def _flatten(scene) -> tuple[list[tuple], list[str]]:
    """The triangle geometry of a trimesh Scene in world space.

    Returns ``(meshes, other_kinds)``: each mesh is ``(positions (n, 3) float64, faces (m, 3)
    int64, normals (n, 3) float64 or None, uvs (n, 2) float64 or None)``; ``other_kinds`` names the
    non-triangle geometry seen ("points", "lines/curves") for the error message.
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
            others.add("points" if isinstance(geom, trimesh.PointCloud) else "lines/curves")
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
        meshes.append((V, faces, N, uv))
    return meshes, sorted(others)


def _merge_and_weld(meshes: list[tuple], *, name: str, source: str) -> Mesh:
    any_n = any(m[2] is not None for m in meshes)
    any_uv = any(m[3] is not None for m in meshes)
    Vs, Fs, Ns, UVs = [], [], [], []
    offset = 0
    for V, F, N, uv in meshes:
        Vs.append(V)
        F = np.asarray(F, dtype=np.int64)
        Fs.append(F + offset if offset else F)  # no copy for the first (often only) part
        if any_n:
            Ns.append(N if N is not None else np.zeros_like(V))
        if any_uv:
            UVs.append(uv if uv is not None else np.zeros((V.shape[0], 2)))
        offset += V.shape[0]
    if len(meshes) == 1:
        V, F = Vs[0], Fs[0]
        N = Ns[0] if any_n else None
        UV = UVs[0] if any_uv else None
    else:
        V, F = np.concatenate(Vs), np.concatenate(Fs)
        N = np.concatenate(Ns) if any_n else None
        UV = np.concatenate(UVs) if any_uv else None
    with np.errstate(all="ignore"):
        return mesh_from_arrays(V, F, N, UV, name=name, source=source)


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
