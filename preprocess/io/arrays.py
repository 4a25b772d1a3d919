"""Raw triangle arrays welded into a validated `Mesh`: `mesh_from_arrays`, and `merge_and_weld`
for the parts a reader gives (the fast readers' or trimesh's).

- positions are welded by exact value: float32 positions that are bit-identical (after folding
  -0.0 into +0.0) become one position (`preprocess.io.weld`);
- wedges are the distinct (position, normal, uv) combinations, normals and uvs compared as the
  float32 values they are stored as, so a UV seam or a hard normal edge keeps two wedges at one
  position;
- normals from the file are kept (normalized); missing, zero-length or non-finite ones are
  replaced by the smooth area-weighted normal of their welded position, computed from the final
  triangles; where the file has none, edges sharper than the crease angle stay hard
  (`preprocess.io.normals`);
- degenerate triangles (two equal position ids, or a cross product exactly zero in float64) and
  exact duplicate triangles (the same three position ids in the same cyclic order) are dropped; a
  triangle repeating an earlier one in the reverse order is kept (a two-sided sheet), unless
  ``drop_reversed``; inconsistent winding (an edge two triangles run the same way) is repaired by
  flipping the triangles that disagree with their part of the mesh (`preprocess.io.repair`);
- positions and wedges that no remaining triangle uses are dropped; the survivors keep the order
  in which they first appear in the input, so a mesh that is already clean comes back unchanged;
- a mesh the position grid of `.tess` cannot hold is refused (`_check_grid`): an extent below
  `MIN_EXTENT`, a stray vertex far from the rest (the grid step grows with the extent), a mesh
  too far from the origin.

Each part's material (trimesh's, converted: `preprocess.io.trimesh_path.materials_of`) and vertex
colours are kept per vertex by `merge_and_weld`, so that a material border becomes a seam of
wedges.
"""

from __future__ import annotations

import preprocess.numba_cache  # noqa: F401  (first: drops stale numba caches)
import numba as nb
import numpy as np

from preprocess.config import DEFAULT_CREASE_DEGREES
from preprocess.io.normals import FanNormals, fan_normals
from preprocess.io.repair import clean, fix_winding, repeated_directed_edges
from preprocess.io.steps import step
from preprocess.io.trimesh_path import materials_of
from preprocess.io.weld import first_use, group_rows, weld_bits, wedges
from preprocess.materials import Texture, default_material, warn_textures_without_uvs
from preprocess.mesh import Mesh, MeshError, column_bounds, mesh_warning
from preprocess.tess.limits import MAX_MATERIALS, MAX_WORLD

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
            triangles meet at a larger angle stays hard (`crease_normals`): a 90-degree CAD edge
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
            `fix_winding`).
    """
    src = source or name
    P32, F = _checked_arrays(positions, faces, src)
    n = P32.shape[0]
    N_in = _per_vertex(normals, (n, 3), np.float64, "normals", src)
    UV_in = _per_vertex(uvs, (n, 2), np.float64, "uvs", src)
    C_in = _per_vertex(colors, (n, 4), np.float64, "colours", src)
    M_in = _per_vertex(vertex_material, (n,), np.int64, "vertex materials", src)

    # Weld positions by exact float32 value (-0.0 folded into +0.0).
    with step("weld"):
        pos_of_vertex, pos_first = weld_bits(P32)
        welded = P32[pos_first] + np.float32(0.0)  # (p, 3) float32
        del pos_first
    with step("clean"):
        cleaned = clean(F, pos_of_vertex, welded, src, drop_reversed)
    if cleaned.repeats:
        mesh_warning(f"{src}: {cleaned.repeats} duplicated faces dropped (the same three vertices "
                     f"in the same order as an earlier face)")
    if cleaned.reversed_repeats and drop_reversed:
        mesh_warning(f"{src}: {cleaned.reversed_repeats} duplicated faces with reversed winding "
                     f"dropped (the same three vertices as an earlier face: two-sided sheets "
                     f"become one-sided)")
    elif cleaned.reversed_repeats:
        mesh_warning(f"{src}: {cleaned.reversed_repeats} faces repeat an earlier face with "
                     f"reversed winding: both kept (a two-sided sheet), but their edges are "
                     f"locked in simplification")
    attributes = UV_in is not None or C_in is not None or M_in is not None
    normals_unit = False
    smooth = None
    if N_in is None:
        cos_crease = float(np.cos(np.radians(min(crease_angle, 180.0))))
        with step("normals"):
            fan = fan_normals(cleaned.tri, welded, cos_crease, smooth=crease_angle >= 180.0)
        with step("clean"):
            F, fixed = fix_winding(F, cleaned, pos_of_vertex, welded, fan.repeated, src,
                                   drop_reversed)
        if fixed is not cleaned:
            cleaned = fixed
            with step("normals"):
                fan = fan_normals(cleaned.tri, welded, cos_crease,
                                  smooth=crease_angle >= 180.0)
        if not attributes:
            del F, pos_of_vertex, cleaned
            with step("wedges"):
                mesh = _mesh_of_wedges(welded, fan, name)
            with step("checks"):
                _check_grid(mesh, src)
            return mesh
        with step("wedges"):
            F, pos_of_vertex, N_in, UV_in, C_in, M_in = _vertices_of_wedges(
                cleaned.faces(F), fan, pos_of_vertex, UV_in, C_in, M_in)
        normals_unit = True
    else:
        with step("clean"):
            F, cleaned = fix_winding(F, cleaned, pos_of_vertex, welded,
                                     repeated_directed_edges(cleaned.tri, welded.shape[0]), src,
                                     drop_reversed)
        tri = cleaned.tri

        def smooth() -> np.ndarray:
            """Per welded position its smooth area-weighted normal (float64)."""
            fan = fan_normals(tri, welded, -1.0, smooth=True)
            out = np.zeros(welded.shape, np.float64)
            out[fan.wedge_position] = fan.wedge_normal
            return out

        F = cleaned.faces(F)
    del cleaned
    with step("wedges"):
        wedge_of_vertex, wedge_vertex, vn32, vuv32 = wedges(
            F, pos_of_vertex, smooth, N_in, UV_in, src, extra=(C_in, M_in),
            normals_unit=normals_unit)
        triangles = wedge_of_vertex[F]  # int32: the Mesh's type, half the memory to touch
        # Positions: those used, in order of first appearance among the wedges.
        wedge_pos_old = pos_of_vertex[wedge_vertex]
        pos_used, pos_new_first = first_use(wedge_pos_old, welded.shape[0])
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
    with step("checks"):
        _check_grid(mesh, src)
    return mesh


def _mesh_of_wedges(welded: np.ndarray, fan: FanNormals, name: str) -> Mesh:
    """The `Mesh` of a mesh without attributes: `fan_normals`' wedges as they are, the positions
    no triangle uses dropped (the others keep their order)."""
    wedge_position = fan.wedge_position
    used = np.zeros(welded.shape[0], np.bool_)
    used[wedge_position] = True
    positions = welded
    if not used.all():
        positions = welded[used]
        wedge_position = (np.cumsum(used, dtype=np.int64) - 1)[wedge_position].astype(np.int32)
    return Mesh(positions=positions, triangles=fan.triangles, wedge_position=wedge_position,
                wedge_normal=fan.wedge_normal, wedge_uv=None, name=name)


@nb.njit(cache=True, nogil=True)
def _first_wedge_of_vertex(F: np.ndarray, triangles: np.ndarray, n: int) -> tuple:
    """(the wedge of each input vertex's first corner (n,) int32, -1 for a vertex no triangle
    uses; the corners 3 * t + c whose wedge is not their vertex's first (int64))."""
    vertex_wedge = np.full(n, -1, np.int32)
    other = np.empty(0, np.int64)
    count = 0
    for t in range(F.shape[0]):
        for c in range(3):
            v = F[t, c]
            w = triangles[t, c]
            if vertex_wedge[v] < 0:
                vertex_wedge[v] = w
            elif vertex_wedge[v] != w:
                if count == other.size:
                    grown = np.empty(max(16, 2 * count), np.int64)
                    grown[:count] = other[:count]
                    other = grown
                other[count] = 3 * t + c
                count += 1
    return vertex_wedge, other[:count].copy()


def _vertices_of_wedges(F: np.ndarray, fan: FanNormals, pos_of_vertex: np.ndarray,
                        UV_in, C_in, M_in) -> tuple:
    """For a mesh with attributes and computed normals: the input vertices made one a (vertex,
    wedge of `fan_normals`) pair, so that `wedges` keys them by the normal of their wedge as by
    their uv. A vertex whose corners lie in two arcs of a crease becomes two (the second one
    appended). Returns (faces, pos_of_vertex, normals (unit, float32), uvs, colours, materials)
    for `wedges`."""
    n = pos_of_vertex.shape[0]
    vertex_wedge, other = _first_wedge_of_vertex(F, fan.triangles, n)
    if other.size:
        t, c = other // 3, other % 3
        pair, first = group_rows([F[t, c].astype(np.uint32), fan.triangles[t, c].astype(np.uint32)])
        src = F[t, c][first]
        F = F.astype(np.int64 if n + first.size >= 2**31 else F.dtype)  # a copy
        F[t, c] = n + pair
        vertex_wedge = np.concatenate([vertex_wedge, fan.triangles[t, c][first]])
        source = np.concatenate([np.arange(n, dtype=np.int64), src])
        pos_of_vertex = pos_of_vertex[source]
        UV_in, C_in, M_in = (None if a is None else a[source] for a in (UV_in, C_in, M_in))
    normals = fan.wedge_normal[np.maximum(vertex_wedge, 0)]  # unused vertices: not looked at
    return F, pos_of_vertex, normals, UV_in, C_in, M_in


def _checked_arrays(positions, faces, src: str) -> tuple[np.ndarray, np.ndarray]:
    """(positions (n, 3) float32, faces (m, 3) int32, int64 past 2**31 vertices) after checking
    their shapes, the coordinates (`_checked_float32`) and the face indices; `MeshError` naming
    what is wrong."""
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
    return P32, np.ascontiguousarray(F, dtype=index_dtype(n))


def index_dtype(n: int) -> type:
    """The narrowest of int32 and int64 that numbers ``n`` vertices."""
    return np.int32 if n < 2**31 else np.int64


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


def merge_and_weld(meshes: list[tuple], *, name: str, source: str,
                   drop_reversed: bool = False,
                   crease_angle: float = DEFAULT_CREASE_DEGREES,
                   base_color_texture: np.ndarray | None = None) -> Mesh:
    """One `Mesh` of the parts (`flatten`'s tuples; the fast readers give the first four
    fields): their vertices concatenated, each part's material and vertex colours kept per
    vertex, so that a material border becomes a seam of wedges."""
    materials, textures, part_material = materials_of(meshes, source)
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
    ids = index_dtype(sum(part[0].shape[0] for part in meshes))
    unusable = 0  # the file's normals that are zero or not numbers
    for part, mat in zip(meshes, part_material, strict=True):
        V, F, N, uv = part[:4]
        Vs.append(V)
        if N is not None:
            with np.errstate(all="ignore"):  # as `unit` finds them, without its copy
                square = np.einsum("ij,ij->i", N, N, dtype=np.float64)
            unusable += int(np.count_nonzero(~(np.isfinite(square) & (square > 0))))
        F = np.asarray(F)
        in_range = (np.issubdtype(F.dtype, np.integer) and F.size
                    and F.min() >= 0 and F.max() < V.shape[0])
        # out of range: kept as it is in int64, for mesh_from_arrays to name
        F = F.astype(ids if in_range else np.int64, copy=False)
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

    if unusable:
        mesh_warning(f"{source}: {unusable:,} normals are zero or not numbers (NaN, infinite); "
                     f"those vertices' normals computed from the faces")
    with np.errstate(all="ignore"):
        mesh = mesh_from_arrays(join(Vs, True), join(Fs, True), join(Ns, any_n),
                                join(UVs, any_uv), colors=join(Cs, any_c),
                                vertex_material=join(Ms, len(materials) > 1),
                                name=name, source=source, drop_reversed=drop_reversed,
                                crease_angle=crease_angle)
    if materials:
        if mesh.wedge_uv is None and any(t >= 0 for m in materials
                                         for t in m.texture_indices()):
            warn_textures_without_uvs(source)
            for m in materials:
                m.drop_textures()
        mesh.materials, mesh.textures = materials, textures
    return mesh
