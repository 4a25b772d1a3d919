"""Step 1 of the offline build: read a mesh file and weld it into a `Mesh`.

`load_mesh` reads OBJ, PLY, STL, glTF/GLB and OFF through trimesh (with ``process=False``: trimesh
neither merges nor drops anything, so the attributes survive) and hands the raw arrays to
`mesh_from_arrays`, which does the welding and validation:

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

_U64 = np.uint64


# --------------------------------------------------------------------------------------------------
# Grouping equal rows


def _hash_columns(cols: list[np.ndarray]) -> np.ndarray:
    """(n,) uint64: a mixed hash of equal-length unsigned integer columns."""
    h = np.full(cols[0].shape[0], _U64(0xCBF29CE484222325), dtype=np.uint64)
    mult = _U64(0x9E3779B97F4A7C15)
    for col in cols:
        h ^= col.astype(np.uint64, copy=False)
        h *= mult
        h ^= h >> _U64(31)
    h *= _U64(0xBF58476D1CE4E5B9)
    h ^= h >> _U64(29)
    return h


def _group_rows(cols: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Group the rows of equal-length unsigned integer columns by exact equality.

    Returns ``(inverse, first)``: ``inverse`` (n,) int64 is the group id of each row and ``first``
    (g,) int64 the index of the first row of each group; groups are numbered in order of first
    appearance, so ``first`` is increasing and ``inverse[first] == arange(g)``.

    How: the row index is packed into the low bits of one uint64 whose high bits are the key (the
    column itself when it fits, else a hash of the columns), and that array is sorted with
    ``np.sort`` (SIMD, several times faster than ``argsort``, ``lexsort`` or ``np.unique`` on a
    void view). Rows with equal hashes are then compared column by column; the rare runs of equal
    hashes that hold different rows are re-sorted exactly with ``lexsort``.
    """
    n = cols[0].shape[0]
    if n == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    ib = max(1, (n - 1).bit_length())  # bits for the row index
    shift = _U64(ib)
    exact_key = len(cols) == 1 and int(cols[0].max()).bit_length() <= 64 - ib
    if exact_key:
        key = cols[0].astype(np.uint64)
    else:
        key = _hash_columns(cols) >> shift
    packed = key << shift
    packed |= np.arange(n, dtype=np.uint64)
    del key
    packed.sort()
    order = (packed & _U64((1 << ib) - 1)).astype(np.int64)
    packed >>= shift
    same = packed[1:] == packed[:-1]
    if not exact_key:
        exact = same.copy()
        for col in cols:
            cs = col[order]
            exact &= cs[1:] == cs[:-1]
        bad = same & ~exact
        if bad.any():  # hash collisions: sort the affected runs exactly, in place
            run = np.cumsum(np.concatenate([[True], ~same]))
            pos = np.flatnonzero(np.isin(run, np.unique(run[1:][bad])))
            sub = order[pos]
            keys = [sub] + [col[sub] for col in cols[::-1]] + [run[pos]]
            order[pos] = sub[np.lexsort(keys)]
            exact = np.ones(n - 1, dtype=bool)
            for col in cols:
                cs = col[order]
                exact &= cs[1:] == cs[:-1]
        same = exact
    del packed
    start = np.empty(n, dtype=bool)
    start[0] = True
    np.logical_not(same, out=start[1:])
    sorted_group = np.cumsum(start) - 1  # group id in sorted order
    first_sorted = order[start]  # ties are in row order: the smallest row index of each group
    # Rank the groups by first appearance without another sort.
    is_first = np.zeros(n, dtype=np.int64)
    is_first[first_sorted] = 1
    rank_of_row = np.cumsum(is_first) - 1
    rank = rank_of_row[first_sorted]
    inverse = np.empty(n, dtype=np.int64)
    inverse[order] = rank[sorted_group]
    first = np.empty_like(first_sorted)
    first[rank] = first_sorted
    return inverse, first


def _float_bits(a: np.ndarray) -> np.ndarray:
    """The uint32 bit patterns of a float32 array, with -0.0 folded into +0.0."""
    a = np.ascontiguousarray(a, dtype=np.float32) + np.float32(0.0)  # -0.0 + 0.0 == +0.0
    return a.view(np.uint32)


# --------------------------------------------------------------------------------------------------
# Welding


def _cross(u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Row-wise cross product of (m, 3) arrays (faster than ``np.cross`` for many short rows)."""
    out = np.empty_like(u)
    out[:, 0] = u[:, 1] * v[:, 2] - u[:, 2] * v[:, 1]
    out[:, 1] = u[:, 2] * v[:, 0] - u[:, 0] * v[:, 2]
    out[:, 2] = u[:, 0] * v[:, 1] - u[:, 1] * v[:, 0]
    return out


def _unit(v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Normalize rows of (n, 3) float64; returns (unit rows, mask of rows with a usable length)."""
    with np.errstate(invalid="ignore", over="ignore"):
        length = np.sqrt(np.einsum("ij,ij->i", v, v))
        ok = np.isfinite(length) & (length > 0.0)
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
    P64 = np.asarray(positions)
    F = np.asarray(faces)
    if P64.ndim != 2 or P64.shape[1] != 3:
        raise MeshError(f"{src}: positions must have shape (n, 3), got {P64.shape}")
    if F.ndim != 2 or F.shape[1] != 3:
        raise MeshError(f"{src}: faces must have shape (m, 3) (triangles), got {F.shape}")
    if F.size and not np.issubdtype(F.dtype, np.integer):
        raise MeshError(f"{src}: face indices must be integers, got {F.dtype}")
    n = P64.shape[0]
    if F.shape[0] == 0:
        raise MeshError(f"{src}: the mesh has no triangles")

    # Coordinates: finite in the file and in float32.
    P64 = P64.astype(np.float64, copy=False)
    finite = np.isfinite(P64).all(axis=1)
    if not finite.all():
        bad = np.flatnonzero(~finite)
        raise MeshError(
            f"{src}: {bad.size} vertices have NaN or infinite coordinates (first: vertex {bad[0]})"
        )
    with np.errstate(over="ignore"):
        P32 = P64.astype(np.float32)
    if not np.isfinite(P32).all():
        raise MeshError(f"{src}: coordinates too large for float32 (max |x| {np.abs(P64).max():g})")

    # Indices in range.
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

    # 1. Weld positions by exact float32 value.
    pbits = _float_bits(P32)
    pos_of_vertex, pos_first = _group_rows([pbits[:, 0], pbits[:, 1], pbits[:, 2]])
    del pbits
    welded = P32[pos_first] + np.float32(0.0)  # (p, 3) float32, -0.0 folded
    tri_pos = pos_of_vertex[F]  # (m, 3) position ids
    p_count = welded.shape[0]

    # 2. Drop degenerate triangles: repeated position, or zero area in float64.
    m_in = tri_pos.shape[0]
    keep = (
        (tri_pos[:, 0] != tri_pos[:, 1])
        & (tri_pos[:, 1] != tri_pos[:, 2])
        & (tri_pos[:, 2] != tri_pos[:, 0])
    )
    W64 = welded.astype(np.float64)
    a, b, c = W64[tri_pos[:, 0]], W64[tri_pos[:, 1]], W64[tri_pos[:, 2]]
    cross = _cross(b - a, c - a)
    del a, b, c
    keep &= (cross != 0.0).any(axis=1)
    if not keep.any():
        raise MeshError(f"{src}: all {m_in} triangles are degenerate (zero area)")

    # 3. Drop exact duplicates: the same position ids in the same cyclic order.
    kept = np.flatnonzero(keep)
    t0, t1, t2 = (tri_pos[kept, k] for k in range(3))
    r1 = (t1 < t0) & (t1 < t2)  # rotate so that the smallest id comes first
    r2 = (t2 < t0) & (t2 < t1)
    c0 = np.where(r1, t1, np.where(r2, t2, t0)).astype(np.uint64)
    c1 = np.where(r1, t2, np.where(r2, t0, t1)).astype(np.uint64)
    c2 = np.where(r1, t0, np.where(r2, t1, t2)).astype(np.uint64)
    del t0, t1, t2, r1, r2
    if p_count < (1 << 21):
        tri_cols = [(c0 << _U64(42)) | (c1 << _U64(21)) | c2]
    else:
        tri_cols = [(c0 << _U64(32)) | c1, c2]
    _, tri_first = _group_rows(tri_cols)
    kept = kept[tri_first]
    del c0, c1, c2, tri_cols
    F = F[kept]
    tri_pos = tri_pos[kept]
    cross = cross[kept]

    # 4. Smooth area-weighted normals per welded position (cross = 2 * area * unit normal).
    flat = tri_pos.ravel()
    computed = np.empty((p_count, 3), dtype=np.float64)
    for axis in range(3):
        computed[:, axis] = np.bincount(
            flat, weights=np.repeat(cross[:, axis], 3), minlength=p_count
        )
    computed, ok = _unit(computed)
    if not ok.all():
        # Opposite faces cancelled out (a two-sided sheet): take one incident face's normal.
        face_unit, _ = _unit(cross)
        fallback = np.zeros((p_count, 3), dtype=np.float64)
        fallback[flat] = np.repeat(face_unit, 3, axis=0)
        computed[~ok] = fallback[~ok]

    # 5. Wedges: distinct (position, normal, uv) among the input vertices still used.
    used_mask = np.zeros(n, dtype=bool)
    used_mask[F.ravel()] = True
    used_vertex = np.flatnonzero(used_mask)  # sorted input vertex ids
    vpos = pos_of_vertex[used_vertex]
    if N_in is not None:
        vn, vok = _unit(N_in[used_vertex])
        vn[~vok] = computed[vpos[~vok]]
    else:
        vn = computed[vpos]
    vn32 = vn.astype(np.float32)
    vuv32 = None if UV_in is None else UV_in[used_vertex].astype(np.float32)
    if N_in is None and UV_in is None:
        # One wedge per position; order positions by first use.
        wedge_of_used, wedge_first = _group_rows([vpos.astype(np.uint64)])
    else:
        nb = _float_bits(vn32).astype(np.uint64)
        cols = [(vpos.astype(np.uint64) << _U64(32)) | nb[:, 0], (nb[:, 1] << _U64(32)) | nb[:, 2]]
        if vuv32 is not None:
            if not np.isfinite(vuv32).all():
                raise MeshError(f"{src}: texture coordinates contain NaN or infinite values")
            ub = _float_bits(vuv32).astype(np.uint64)
            cols.append((ub[:, 0] << _U64(32)) | ub[:, 1])
        wedge_of_used, wedge_first = _group_rows(cols)
    wedge_of_vertex = np.full(n, -1, dtype=np.int64)
    wedge_of_vertex[used_vertex] = wedge_of_used
    triangles = wedge_of_vertex[F]

    # 6. Renumber positions to those used, in order of first appearance among the wedges.
    wedge_pos_old = vpos[wedge_first]
    pos_used, pos_new_first = _group_rows([wedge_pos_old.astype(np.uint64)])
    positions_out = welded[wedge_pos_old[pos_new_first]]

    wedge_normal = vn32[wedge_first] + np.float32(0.0)
    wedge_uv = None if vuv32 is None else vuv32[wedge_first] + np.float32(0.0)
    return Mesh(
        positions=np.ascontiguousarray(positions_out, dtype=np.float32),
        triangles=np.ascontiguousarray(triangles, dtype=np.int32),
        wedge_position=np.ascontiguousarray(pos_used, dtype=np.int32),
        wedge_normal=np.ascontiguousarray(wedge_normal, dtype=np.float32),
        wedge_uv=None if wedge_uv is None else np.ascontiguousarray(wedge_uv, dtype=np.float32),
        name=name,
    )


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

    Formats: OBJ, PLY, STL, glTF/GLB and OFF (by suffix, case-insensitive), read by trimesh.

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
    meshes = parts[0]
    return _merge_and_weld(meshes, name=p.stem, source=label)


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
        Fs.append(np.asarray(F, dtype=np.int64) + offset)
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
    bits = _float_bits(P32)
    inverse, first = _group_rows([bits[:, 0], bits[:, 1], bits[:, 2]])
    return P32[first] + np.float32(0.0), inverse
