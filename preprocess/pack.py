"""The page packer: turns a LOD DAG and its BVH into the `.tess` sections and pages (the records
and page layout are defined in `preprocess.tess.records`; the container is written by
`preprocess.tess.container`). Vertex streams are quantized and encoded with numba, partly in a
background thread while the DAG is still being built (`VertexEncoder`).

Quantization: one grid per mesh (per-cluster grids crack). The step is a power of two, so that
grid coordinates times the step are exact in float32: the largest power of two not above 1/64 of
the median edge length, clamped so that the mesh spans between 2^16 and 2^24 steps. The largest
position error is sqrt(3)/2 * step, stored in the meta as `quantization_error`.
"""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import NamedTuple

import preprocess.numba_cache  # noqa: F401  (first: drops stale numba caches)
import numba as nb
import numpy as np

from preprocess.config import BuildConfig
from preprocess.lod import BVH_EMPTY, Bvh, LodDag
from preprocess.mesh import Mesh, MeshError, column_bounds
from preprocess.textures import TextureSet, encode_materials
from preprocess.tess.color import linear_to_srgb
from preprocess.tess.limits import MAX_MATERIALS, MAX_PAGE_CLUSTERS, PAGE_ROOT, ROOT_ERROR
from preprocess.tess.records import (
    CHILD_EMPTY,
    CHILD_GROUP,
    CLUSTER_DTYPE,
    GROUP_DTYPE,
    MATERIAL_BYTE_DOUBLE_SIDED,
    MODE_ALPHA_MASK,
    MODE_DOUBLE_SIDED,
    MODE_UV_FLOAT,
    MODE_HAS_COLOR,
    MODE_HAS_MATERIAL,
    MODE_HAS_UV,
    MODE_MATERIAL_SHIFT,
    NO_GROUP,
    NODE_DTYPE,
    PAGE_HEADER_DTYPE,
    PART_DTYPE,
    TEXTURE_FORMATS,
    MATERIAL_TEXTURES,
    NO_TEXTURE,
)

@nb.njit(cache=True, nogil=True)
def _edge_lengths(positions: np.ndarray, triangles: np.ndarray, wedge_position: np.ndarray,
                  stride: int) -> np.ndarray:
    """Length of the first edge of every stride-th triangle (wedge ids), in float64."""
    out = np.empty((triangles.shape[0] + stride - 1) // stride, np.float64)
    for i in range(out.shape[0]):
        a = wedge_position[triangles[i * stride, 0]]
        b = wedge_position[triangles[i * stride, 1]]
        d2 = 0.0
        for j in range(3):
            e = np.float64(positions[b, j]) - np.float64(positions[a, j])
            d2 += e * e
        out[i] = np.sqrt(d2)
    return out


def choose_step(positions: np.ndarray, triangles: np.ndarray, wedge_position: np.ndarray,
                bounds: tuple[np.ndarray, np.ndarray] | None = None) -> float:
    """The grid step (a power of two) for a mesh (triangles as wedge ids); see the module
    docstring. The median edge is taken over the first edge of at most ~100,000 triangles."""
    lo, hi = bounds if bounds is not None else column_bounds(positions)
    extent = float((hi - lo).max()) or 1.0
    lengths = _edge_lengths(np.ascontiguousarray(positions, np.float32),
                            np.ascontiguousarray(triangles, np.int32),
                            np.ascontiguousarray(wedge_position, np.int32),
                            max(1, len(triangles) // 100_000))
    median = float(np.median(lengths)) or extent / 1024
    step = min(max(median / 64, extent * 2.0**-24), extent * 2.0**-16)
    return float(2.0 ** np.floor(np.log2(step)))


def octahedral_encode(n: np.ndarray) -> np.ndarray:
    """(k, 3) unit normals -> (k,) uint32, two 16-bit snorm components."""
    n = np.ascontiguousarray(n, np.float64).reshape(-1, 3)
    return _octahedral_rows(n, np.arange(len(n)))


@nb.njit(cache=True, nogil=True, inline="always")
def _octahedral_one(x, y, z):
    s = max(abs(x) + abs(y) + abs(z), 1e-30)
    x, y, z = x / s, y / s, z / s
    if z >= 0:
        ox, oy = x, y
    else:
        ox = (1 - abs(y)) * (1.0 if x >= 0 else -1.0)
        oy = (1 - abs(x)) * (1.0 if y >= 0 else -1.0)
    qx = np.int64(np.rint(min(max(ox, -1.0), 1.0) * 32767)) & 0xFFFF
    qy = np.int64(np.rint(min(max(oy, -1.0), 1.0) * 32767)) & 0xFFFF
    return np.uint32(qx | (qy << 16))


@nb.njit(cache=True, nogil=True)
def _octahedral_rows(n, rows):
    """octahedral_encode of n[rows] (computed in float64, whatever n's float type)."""
    out = np.empty(rows.shape[0], np.uint32)
    for i in range(rows.shape[0]):
        r = rows[i]
        out[i] = _octahedral_one(np.float64(n[r, 0]), np.float64(n[r, 1]), np.float64(n[r, 2]))
    return out


@nb.njit(cache=True, nogil=True)
def _vertex_grid(positions, step, wedge_position, vertices):
    """(V, 3) int32 grid coordinates of the cluster vertices: round(position / step), half to
    even as np.round, in float64 (the caller checks that the mesh fits in 31 bits)."""
    out = np.empty((vertices.shape[0], 3), np.int32)
    for i in range(vertices.shape[0]):
        p = wedge_position[vertices[i]]
        for a in range(3):
            out[i, a] = np.int64(np.rint(np.float64(positions[p, a]) / step))
    return out


@nb.njit(cache=True, nogil=True)
def _local_vertices(triangles: np.ndarray, offsets: np.ndarray, slot: np.ndarray
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per cluster triangles[offsets[i]:offsets[i + 1]]: its distinct wedges in first-use order
    and the local corner indices. slot: one entry per wedge, all -1 (and -1 again on return).

    Returns (vertex_offset (c+1,), vertices (V,) wedge ids, local (T, 3) uint8)."""
    c = offsets.shape[0] - 1
    vertex_offset = np.zeros(c + 1, np.int64)
    vertices = np.zeros(triangles.shape[0] * 3, np.int32)
    local = np.zeros(triangles.shape, np.uint8)
    nv = 0
    for i in range(c):
        start = nv
        for t in range(offsets[i], offsets[i + 1]):
            for k in range(3):
                w = triangles[t, k]
                if slot[w] < 0:
                    slot[w] = nv - start
                    vertices[nv] = w
                    nv += 1
                local[t, k] = slot[w]
        for v in range(start, nv):
            slot[vertices[v]] = -1
        vertex_offset[i + 1] = nv
    return vertex_offset, vertices[:nv].copy(), local


def _align4(n: np.ndarray | int) -> np.ndarray | int:
    return (n + 3) // 4 * 4


@nb.njit(cache=True, nogil=True)
def _assign_pages(group_order, group_offset, group_clusters, size, header, page_size,
                  max_clusters):
    """Groups in `group_order` go to pages in turn, each group's members contiguous; a group that
    does not fit in what is left of a page starts a new page, and is split into parts only when
    it fills whole pages by itself. Returns (cluster_page, cluster_slot, parts (k, 4) as
    (page, first_cluster, cluster_count, group), group_first_part, group_part_count, pages)."""
    c = group_clusters.shape[0]
    g_count = group_order.shape[0]
    cluster_page = np.zeros(c, np.int64)
    cluster_slot = np.zeros(c, np.int64)
    parts = np.zeros((c + g_count, 4), np.int64)
    first_part = np.zeros(g_count, np.int64)
    part_count = np.zeros(g_count, np.int64)
    page = 0
    slot = 0
    used = header
    nparts = 0
    for g in group_order:
        lo = group_offset[g]
        hi = group_offset[g + 1]
        need = 0
        for i in range(lo, hi):
            need += size[group_clusters[i]]
        if (used + need > page_size or slot + hi - lo > max_clusters) and slot > 0:
            page += 1
            slot = 0
            used = header
        first_part[g] = nparts
        run_start = slot
        for i in range(lo, hi):
            cl = group_clusters[i]
            if used + size[cl] > page_size or slot >= max_clusters:
                parts[nparts, 0] = page
                parts[nparts, 1] = run_start
                parts[nparts, 2] = slot - run_start
                parts[nparts, 3] = g
                nparts += 1
                page += 1
                slot = 0
                used = header
                run_start = 0
            cluster_page[cl] = page
            cluster_slot[cl] = slot
            slot += 1
            used += size[cl]
        parts[nparts, 0] = page
        parts[nparts, 1] = run_start
        parts[nparts, 2] = slot - run_start
        parts[nparts, 3] = g
        nparts += 1
        part_count[g] = nparts - first_part[g]
    return cluster_page, cluster_slot, parts[:nparts].copy(), first_part, part_count, page + 1


@dataclass
class PackedAsset:
    """What goes into the file: meta, sections and pages (`preprocess.tess.write_tess`)."""

    meta: dict
    sections: dict[str, np.ndarray]
    pages: np.ndarray  # (P, page_size) uint8
    page_flags: np.ndarray  # (P,) uint32


@nb.njit(cache=True, nogil=True)
def _grid_ranges(vgrid: np.ndarray, vertex_offset: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per cluster: pos_min (c, 3) int64, the smallest grid coordinates of its vertices, and
    mode (c,) int64: 0 when every offset from pos_min fits in 16 bits, else 1."""
    c = vertex_offset.shape[0] - 1
    pos_min = np.zeros((c, 3), np.int64)
    mode = np.zeros(c, np.int64)
    for i in range(c):
        for a in range(3):
            lo = np.int64(vgrid[vertex_offset[i], a])
            hi = lo
            for v in range(vertex_offset[i] + 1, vertex_offset[i + 1]):
                lo = min(lo, vgrid[v, a])
                hi = max(hi, vgrid[v, a])
            pos_min[i, a] = lo
            if hi - lo >= 65536:
                mode[i] = 1
    return pos_min, mode


@dataclass
class EncodedRun:
    """The vertex streams of the clusters first..end-1, numbered within the run."""

    first: int
    end: int
    vertices: np.ndarray  # (V,) int32 wedge ids, per cluster in first-use order
    local: np.ndarray  # (T, 3) uint8: the triangles' local corner indices
    vgrid: np.ndarray  # (V, 3) int32 grid coordinates
    normals: np.ndarray  # (V,) uint32 octahedral normals

    def load(self) -> EncodedRun:
        return self


# the arrays of an `EncodedRun` in the order a spilled run holds them: (name, dtype, columns)
_RUN_ARRAYS = (("vertices", np.int32, 0), ("local", np.uint8, 3), ("vgrid", np.int32, 3),
               ("normals", np.uint32, 0))


@dataclass
class SpilledRun:
    """An `EncodedRun` written to a temporary file (`VertexEncoder(spill=...)`): its arrays one
    after the other from `offset`, V vertices and T triangles; `load` reads them back."""

    first: int
    end: int
    file: object  # an open binary file (a `tempfile.TemporaryFile`)
    offset: int
    vertex_count: int
    triangle_count: int

    @staticmethod
    def write(file, first: int, end: int, run: EncodedRun) -> SpilledRun:
        """Append the run's arrays to `file` (its end: only the encoder's thread writes)."""
        offset = file.seek(0, 2)
        for name, dtype, _ in _RUN_ARRAYS:
            np.ascontiguousarray(getattr(run, name), dtype).tofile(file)
        file.flush()
        return SpilledRun(first, end, file, offset, len(run.vertices), len(run.local))

    def load(self) -> EncodedRun:
        arrays = {}
        self.file.seek(self.offset)
        for name, dtype, cols in _RUN_ARRAYS:
            rows = self.triangle_count if name == "local" else self.vertex_count
            a = np.fromfile(self.file, dtype, rows * max(cols, 1))
            arrays[name] = a.reshape(rows, cols) if cols else a
        return EncodedRun(self.first, self.end, **arrays)


@dataclass
class EncodedVertices:
    """Each cluster's vertices as the pages store them, which needs neither the BVH nor the page
    layout (`build_asset` builds the BVH meanwhile). The per-vertex arrays stay in the runs they
    were encoded in: joining them would copy (and page-fault) a few hundred MB on big meshes."""

    step: float  # the quantization grid step
    bounds: tuple[np.ndarray, np.ndarray]  # the mesh's box
    vertex_offset: np.ndarray  # (c + 1,) int64: cluster i's vertices are [offset[i], offset[i+1])
    pos_min: np.ndarray  # (c, 3) int64: per cluster, the least grid coordinates
    mode: np.ndarray  # (c,) int64: 0 = 16-bit offsets, 1 = 32-bit
    runs: list[EncodedRun | SpilledRun]  # in cluster order, covering every cluster once

    def take(self) -> Iterator[EncodedRun]:
        """The runs in order, each dropped from `runs` (and read back if spilled) as it comes:
        the caller frees each once used."""
        while self.runs:
            yield self.runs.pop(0).load()


@nb.njit(cache=True, nogil=True)
def _encode_clusters(triangles, offsets, slot, positions, wedge_position, wedge_normal, step):
    """The `EncodedVertices` arrays of the clusters triangles[offsets[i]:offsets[i + 1]]."""
    vertex_offset, vertices, local = _local_vertices(triangles, offsets, slot)
    vgrid = _vertex_grid(positions, step, wedge_position, vertices)  # (V, 3)
    pos_min, mode = _grid_ranges(vgrid, vertex_offset)
    normals = _octahedral_rows(wedge_normal, vertices)
    return vertex_offset, vertices, local, vgrid, pos_min, mode, normals


def _encode_run(first: int, end: int, spill, *args) -> tuple:
    """(vertex_offset, pos_min, mode, run) of clusters first..end-1 (`_encode_clusters`' args);
    the run written to `spill` where given (`SpilledRun`)."""
    voff, vertices, local, vgrid, pos_min, mode, normals = _encode_clusters(*args)
    run = EncodedRun(first, end, vertices, local, vgrid, normals)
    if spill is not None:
        run = SpilledRun.write(spill, first, end, run)
    return voff, pos_min, mode, run


class VertexEncoder:
    """Encodes the vertices of clusters in a background thread while the DAG is being built:
    `build_dag(on_clusters=encoder.add)` hands it each run of clusters as soon as they are final
    (their triangles never change after), so the work fills the cores' idle moments (METIS, the
    end of a level) instead of adding to the end of the build. `result()` joins the runs.
    background=False encodes on the caller's thread instead (a build asked to use one thread).
    spill: a binary file (a `tempfile.TemporaryFile`) the encoded runs wait in for the pages,
    instead of memory (`SpilledRun`: at 20M triangles they held ~700 MB, a fifth of the build's
    peak); the caller closes it once the pages are written."""

    def __init__(self, mesh: Mesh, background: bool = True, spill=None) -> None:
        self.positions = np.ascontiguousarray(mesh.positions, np.float32)
        self.wedge_position = np.ascontiguousarray(mesh.wedge_position, np.int32)
        self.wedge_normal = np.ascontiguousarray(mesh.wedge_normal, np.float32)
        self.bounds = column_bounds(self.positions)
        self.step = choose_step(self.positions, mesh.triangles, self.wedge_position, self.bounds)
        reach = max(float(np.abs(self.bounds[0]).max(initial=0)),
                    float(np.abs(self.bounds[1]).max(initial=0)))
        if reach / self.step >= 2**31 - 1:
            raise MeshError(f"{mesh.name}: positions up to {reach:g} from the origin do not fit "
                            f"a 31-bit grid of step {self.step:g} (the mesh spans "
                            f"{float((self.bounds[1] - self.bounds[0]).max()):g}); move it "
                            f"nearer the origin")
        self.slot = np.full(len(self.wedge_position), -1, np.int32)  # one run at a time
        self.pool = ThreadPoolExecutor(max_workers=1) if background else None
        self.spill = spill
        self.runs: list = []

    def add(self, triangles: np.ndarray, tri_offset: np.ndarray, first: int, end: int,
            wedge_position: np.ndarray | None = None, wedge_normal: np.ndarray | None = None
            ) -> None:
        """Encode clusters first..end-1 (rows tri_offset[i]:tri_offset[i + 1] of triangles),
        whose wedges are the mesh's or, when given, wedge_position (k,) and wedge_normal (k, 3)
        (the mesh's followed by the fresh wedges of coarse levels, `build_dag`)."""
        if end <= first:
            return
        if wedge_position is not None and len(wedge_position) > len(self.wedge_position):
            self.wedge_position = np.ascontiguousarray(wedge_position, np.int32)
            self.wedge_normal = np.ascontiguousarray(wedge_normal, np.float32)
            self.slot = np.full(2 * len(self.wedge_position), -1, np.int32)  # a new scratch
        rows = triangles[tri_offset[first] : tri_offset[end]]
        offsets = tri_offset[first : end + 1] - tri_offset[first]
        args = (first, end, self.spill, rows, offsets, self.slot, self.positions,
                self.wedge_position, self.wedge_normal, float(self.step))
        if self.pool is None:
            done: Future = Future()
            done.set_result(_encode_run(*args))
            self.runs.append(done)
        else:
            self.runs.append(self.pool.submit(_encode_run, *args))

    def result(self) -> EncodedVertices:
        try:
            parts = [f.result() for f in self.runs]
        finally:
            self.close()
        self.slot = None  # its scratch (8 bytes a wedge) is not needed by the pages
        vertex_offset = [np.zeros(1, np.int64)]
        pos_min = []
        mode = []
        runs = []
        for voff, run_min, run_mode, run in parts:
            vertex_offset.append(voff[1:] + vertex_offset[-1][-1])
            pos_min.append(run_min)
            mode.append(run_mode)
            runs.append(run)
        self.runs = []  # the futures held the arrays too (the pages consume the runs)
        del parts
        return EncodedVertices(self.step, self.bounds, np.concatenate(vertex_offset),
                               np.concatenate(pos_min), np.concatenate(mode), runs)

    def close(self) -> None:
        if self.pool is not None:
            self.pool.shutdown(cancel_futures=True)


def encode_vertices(dag: LodDag) -> EncodedVertices:
    """Quantize and encode the vertices of every cluster (see the module docstring)."""
    encoder = VertexEncoder(dag.mesh, background=False)
    encoder.add(np.ascontiguousarray(dag.triangles, np.int32),
                np.asarray(dag.cluster_tri_offset, np.int64), 0, dag.cluster_count)
    return encoder.result()


def pack_asset(dag: LodDag, bvh: Bvh, config: BuildConfig | None = None,
               encoded: EncodedVertices | None = None, *,
               texture_set: TextureSet | None = None) -> PackedAsset:
    """Lay out the DAG's clusters in pages, coarse to fine, and build the hierarchy sections.
    encoded: `encode_vertices(dag)`, when the caller made it already (its runs are consumed:
    each is freed once written into the pages). texture_set: the scene's textures (in a file of
    their own, `texture_set.file`), which the materials index."""
    cfg = config or BuildConfig()
    mesh = dag.mesh
    enc = encoded if encoded is not None else encode_vertices(dag)
    step = enc.step
    bounds = enc.bounds
    has_uv = mesh.wedge_uv is not None
    has_color = mesh.wedge_color is not None
    vertex_offset, mode = enc.vertex_offset, enc.mode
    nv = np.diff(vertex_offset)
    nt = np.diff(dag.cluster_tri_offset)
    mat = _cluster_materials(dag)
    mixed = mat.mixed
    uv_float = has_uv and _uvs_need_floats(mesh, cfg.max_texture_size)
    pos_bytes = _align4(np.where(mode == 0, 6, 12) * nv)
    uv_words = (2 if uv_float else 1) if has_uv else 0  # u32 words a vertex
    attr_bytes = nv * 4 * (1 + uv_words + has_color)
    idx_bytes = _align4(nt * 3) + np.where(mixed, _align4(nt), 0)
    data_bytes = pos_bytes + attr_bytes + idx_bytes
    record = CLUSTER_DTYPE.itemsize
    header = PAGE_HEADER_DTYPE.itemsize
    if (data_bytes + record).max() + header > cfg.page_size:
        raise ValueError("page_size too small for one cluster")

    # pages: groups coarse to fine, each group's members contiguous; a group that does not fit
    # in what is left of a page starts a new page, and is split only if it fills pages by itself
    group_order = np.lexsort((np.arange(dag.group_count), -dag.group_level)).astype(np.int64)
    cluster_page, cluster_slot, parts, group_first_part, group_part_count, npages = (
        _assign_pages(group_order, dag.group_cluster_offset, dag.group_clusters,
                      (data_bytes + record).astype(np.int64), header, cfg.page_size,
                      MAX_PAGE_CLUSTERS))
    order = np.lexsort((cluster_slot, cluster_page))
    page_start = np.searchsorted(cluster_page[order], np.arange(npages + 1))
    assert (np.diff(page_start) > 0).all(), "an empty page"
    pages = np.zeros((npages, cfg.page_size), np.uint8)
    records = np.zeros(dag.cluster_count, CLUSTER_DTYPE)  # the stream offsets come below
    max_level = int(dag.group_level.max())
    root_level = max_level - cfg.root_page_levels + 1
    page_flags = np.zeros(npages, np.uint32)
    _fill_records(records, dag, enc, mat, uv_float)
    # per page (clusters in slot order): the byte offsets of every cluster's streams after the
    # header and the records, the header, the records
    count = np.diff(page_start)
    page_of = cluster_page[order].astype(np.int64)
    rank = np.arange(len(order)) - page_start[page_of]  # the record's place in its page
    db = data_bytes[order]
    before = np.cumsum(db) - db  # stream bytes before this cluster, over all pages
    offs = header + record * count[page_of] + before - before[page_start[page_of]]
    m = order
    records["position_offset"][m] = offs
    records["normal_offset"][m] = offs + pos_bytes[m]
    records["uv_offset"][m] = np.where(has_uv, offs + pos_bytes[m] + nv[m] * 4, 0)
    records["index_offset"][m] = offs + pos_bytes[m] + attr_bytes[m]
    first = order[page_start[:-1]]  # coarse to fine: a page's first cluster has its coarsest
    page_flags[dag.group_level[dag.cluster_group[first]] >= root_level] = PAGE_ROOT
    hdr = np.zeros(npages, PAGE_HEADER_DTYPE)
    hdr["cluster_count"] = count
    hdr["page"] = np.arange(npages)
    hdr["bytes_used"] = header + record * count + np.bincount(page_of, weights=db,
                                                              minlength=npages).astype(np.int64)
    hdr["flags"] = page_flags
    pages[:, :header] = hdr.view(np.uint8).reshape(npages, header)
    _place_records(pages, records[order].view(np.uint8).reshape(len(order), record), page_of,
                   rank, header)

    _write_cluster_data(pages, dag, enc, records, cluster_page, mat, uv_float)
    nodes, groups, part_arr = _hierarchy_sections(dag, bvh, step, parts, group_first_part,
                                                  group_part_count)
    meta = _asset_meta(dag, step, bounds, uv_float)
    material_sections = encode_materials(mesh.materials, mesh.textures,
                                         max_texture_size=cfg.max_texture_size,
                                         compression=cfg.texture_compression,
                                         shared=texture_set)
    if texture_set is not None:  # the textures are the scene's file's: named, and matched
        meta["texture_file"], meta["texture_set"] = texture_set.file, texture_set.digest
        used = np.unique(np.concatenate([material_sections["materials"][f]
                                         for f in MATERIAL_TEXTURES]))
        tex = texture_set.textures[used[used != NO_TEXTURE]]
        meta["texture_bytes"] = 0  # the scene's file holds them (`texture_set_bytes`)
        meta["texture_set_bytes"] = int(texture_set.texels.nbytes)
    else:
        tex = material_sections["textures"]
        meta["texture_bytes"] = int(material_sections["texels"].nbytes) if len(tex) else 0
    meta["textures"] = [[int(w), int(h)] for w, h in zip(tex["width"], tex["height"],
                                                         strict=True)]
    meta["texture_formats"] = sorted({TEXTURE_FORMATS[int(f)][0] for f in tex["format"]})
    sections = {
        **material_sections,
        "bvh_nodes": nodes,
        "groups": groups,
        "group_parts": part_arr,
    }
    return PackedAsset(meta=meta, sections=sections, pages=pages, page_flags=page_flags)


class _Materials(NamedTuple):
    """Per cluster: whether its triangles' materials differ (then it stores a byte per
    triangle), the smallest (its material otherwise), whether any is double-sided or cut out
    by alpha; per triangle of the DAG: its material and whether that is double-sided."""

    mixed: np.ndarray
    lo: np.ndarray
    any_double: np.ndarray
    any_masked: np.ndarray
    tri_material: np.ndarray
    tri_double: np.ndarray


def _cluster_materials(dag: LodDag) -> _Materials:
    """The materials of the DAG's clusters: one for the whole cluster in its mode bits, or a
    byte per triangle."""
    mesh = dag.mesh
    tri_material = mesh.triangle_materials(dag.triangles)
    if len(tri_material) and int(tri_material.max()) >= MAX_MATERIALS:
        raise ValueError(f"{int(tri_material.max()) + 1} materials; at most {MAX_MATERIALS}")
    tstart = np.asarray(dag.cluster_tri_offset[:-1], np.int64)
    mixed = np.zeros(dag.cluster_count, bool)
    if len(tri_material):
        lo = np.minimum.reduceat(tri_material, tstart)
        hi = np.maximum.reduceat(tri_material, tstart)
        mixed = lo != hi
    else:
        lo = np.zeros(dag.cluster_count, np.int32)
    double = np.array([m.double_sided for m in mesh.materials] or [False], bool)
    masked = np.array([m.alpha_mode == "MASK" for m in mesh.materials] or [False], bool)
    any_masked = (np.maximum.reduceat(masked[tri_material].astype(np.int8), tstart).astype(bool)
                  if len(tri_material) else np.zeros(dag.cluster_count, bool))
    tri_double = double[tri_material] if len(tri_material) else np.zeros(0, bool)
    any_double = (np.maximum.reduceat(tri_double.astype(np.int8), tstart).astype(bool)
                  if len(tri_material) else np.zeros(dag.cluster_count, bool))
    return _Materials(mixed, lo, any_double, any_masked, tri_material, tri_double)


def _fill_records(records: np.ndarray, dag: LodDag, enc: EncodedVertices, mat: _Materials,
                  uv_float: bool) -> None:
    """The cluster records' fields but the stream offsets: spheres, errors, ids, the position
    grid origin, the mode bits (position encoding, uvs, colours, materials), counts, level,
    source group."""
    mesh = dag.mesh
    records["self_sphere"] = dag.cluster_self_sphere
    records["bounds"] = dag.cluster_bounds
    records["self_error"] = dag.cluster_self_error
    records["group"] = dag.cluster_group
    records["cluster"] = np.arange(dag.cluster_count)
    records["pos_min"] = enc.pos_min
    records["mode"] = (enc.mode | (MODE_HAS_UV if mesh.wedge_uv is not None else 0)
                       | (MODE_HAS_COLOR if mesh.wedge_color is not None else 0)
                       | np.where(mat.mixed, MODE_HAS_MATERIAL,
                                  mat.lo.astype(np.int64) << MODE_MATERIAL_SHIFT)
                       | np.where(mat.any_double, MODE_DOUBLE_SIDED, 0)
                       | np.where(mat.any_masked, MODE_ALPHA_MASK, 0)
                       | (MODE_UV_FLOAT if uv_float else 0))
    records["vertex_count"] = np.diff(enc.vertex_offset)
    records["triangle_count"] = np.diff(dag.cluster_tri_offset)
    records["level"] = dag.cluster_level
    src = dag.cluster_source_group.astype(np.int64)
    records["source_group"] = np.where(src >= 0, src, NO_GROUP)


def _write_cluster_data(pages: np.ndarray, dag: LodDag, enc: EncodedVertices,
                        records: np.ndarray, cluster_page: np.ndarray, mat: _Materials,
                        uv_float: bool) -> None:
    """Each cluster's streams into its page at the offsets of its record: positions, normals,
    uvs, colours (after the uvs or normals), indices, and where its materials differ a material
    byte per triangle (after the indices)."""
    mesh = dag.mesh
    has_uv = mesh.wedge_uv is not None
    has_color = mesh.wedge_color is not None
    uv_words = (2 if uv_float else 1) if has_uv else 0  # u32 words a vertex
    vertex_offset, pos_min, mode = enc.vertex_offset, enc.pos_min, enc.mode
    nv = np.diff(vertex_offset)
    nt = np.diff(dag.cluster_tri_offset)
    offsets = [records[k].astype(np.int64) for k in ("position_offset", "normal_offset",
                                                      "uv_offset", "index_offset")]
    tri_offset = np.asarray(dag.cluster_tri_offset, np.int64)
    if has_uv:
        uv_min = mesh.wedge_uv.min(axis=0).astype(np.float64)
        uv_max = mesh.wedge_uv.max(axis=0).astype(np.float64)
    for run in enc.take():  # each run freed once written: its bytes become the pages' (zeros:
        # not resident until written), so both are never held whole
        uvs = np.zeros(0, np.uint32)
        if has_uv and not uv_float:
            uv = mesh.wedge_uv[run.vertices].astype(np.float64)
            q = np.round((uv - uv_min) / np.maximum(uv_max - uv_min, 1e-30) * 65535)
            uvs = (q[:, 0].astype(np.uint32) | (q[:, 1].astype(np.uint32) << 16))
        _write_streams(pages, cluster_page, *offsets, mode, pos_min, vertex_offset, run.vgrid,
                       run.normals, uvs, has_uv and not uv_float, tri_offset, run.local,
                       run.first, run.end)
        if uv_float:
            words = np.ascontiguousarray(mesh.wedge_uv[run.vertices], np.float32).view(np.uint32)
            _write_words(pages, cluster_page, offsets[2], vertex_offset, words, run.first,
                         run.end)
        if has_color:  # after the uvs (or normals): the offset follows from the record
            _write_words(pages, cluster_page, offsets[1] + nv * 4 * (1 + uv_words),
                         vertex_offset, _rgba8_srgb(mesh.wedge_color[run.vertices])[:, None],
                         run.first, run.end)
    if mat.mixed.any():  # after the indices
        _write_material_bytes(pages, cluster_page, offsets[3] + _align4(nt * 3), tri_offset,
                              (mat.tri_material
                               | np.where(mat.tri_double, MATERIAL_BYTE_DOUBLE_SIDED, 0)
                               ).astype(np.uint8), mat.mixed)


def _hierarchy_sections(dag: LodDag, bvh: Bvh, step: float, parts: np.ndarray,
                        group_first_part: np.ndarray, group_part_count: np.ndarray
                        ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The always-resident sections: (bvh_nodes, groups, group_parts)."""
    nodes = np.zeros(len(bvh.node_depth), NODE_DTYPE)
    nodes["sphere"] = bvh.node_sphere
    box = np.asarray(bvh.node_box, np.float64)
    nodes["box_min"] = box[:, :3] - step  # rounding to the grid moves a vertex by <= step / 2
    nodes["box_max"] = box[:, 3:] + step
    nodes["max_error"] = bvh.node_max_error
    nodes["depth"] = bvh.node_depth
    ch = bvh.node_children.astype(np.int64)
    nodes["children"] = np.where(ch == BVH_EMPTY, CHILD_EMPTY,
                                 np.where(ch >= 0, ch, CHILD_GROUP | (-2 - ch)))
    groups = np.zeros(dag.group_count, GROUP_DTYPE)
    groups["sphere"] = dag.group_sphere
    groups["error"] = dag.group_error
    groups["level"] = dag.group_level
    groups["first_part"] = group_first_part
    groups["part_count"] = group_part_count
    groups["cluster_count"] = np.diff(dag.group_cluster_offset)
    part_arr = np.zeros(len(parts), PART_DTYPE)
    for i, name in enumerate(("page", "first_cluster", "cluster_count", "group")):
        part_arr[name] = parts[:, i]
    return nodes, groups, part_arr


@nb.njit(cache=True, nogil=True)
def _area_sum(positions: np.ndarray, triangles: np.ndarray, wedge_position: np.ndarray) -> float:
    """The triangles' (wedge ids) total area, in float64, without a temporary per triangle."""
    total = 0.0
    d = np.empty((2, 3))  # the edges from the first corner
    for t in range(triangles.shape[0]):
        a = wedge_position[triangles[t, 0]]
        for e in range(2):
            b = wedge_position[triangles[t, e + 1]]
            for k in range(3):
                d[e, k] = np.float64(positions[b, k]) - positions[a, k]
        cross = 0.0
        for k in range(3):
            i, j = (k + 1) % 3, (k + 2) % 3
            c = d[0, i] * d[1, j] - d[0, j] * d[1, i]
            cross += c * c
        total += np.sqrt(cross)
    return total / 2


def _surface_area(mesh) -> float:
    """The mesh's triangles' total area, in float64 (at 20M triangles the position triangles
    and float64 corners a numpy version made were the build's peak)."""
    return float(_area_sum(mesh.positions, np.ascontiguousarray(mesh.triangles),
                           np.ascontiguousarray(mesh.wedge_position)))


def _asset_meta(dag: LodDag, step: float, bounds: np.ndarray, uv_float: bool) -> dict:
    """The asset's meta (the textures' sizes are added beside the material sections)."""
    mesh = dag.mesh
    has_uv = mesh.wedge_uv is not None
    meta = {
        "name": mesh.name,
        "step": step,
        "quantization_error": float(np.sqrt(3) / 2 * step),
        "has_uv": bool(has_uv),
        "has_color": mesh.wedge_color is not None,
        "uv_float": bool(uv_float),
        "materials": [m.name for m in mesh.materials] or ["default"],
        "uv_min": mesh.wedge_uv.min(axis=0).tolist() if has_uv else [0.0, 0.0],
        "uv_max": mesh.wedge_uv.max(axis=0).tolist() if has_uv else [1.0, 1.0],
        "bounds_min": bounds[0].tolist(),
        "bounds_max": bounds[1].tolist(),
        "input_triangles": int(mesh.triangle_count),
        # the full-detail surface area (object units squared): aggregate proxies' coverage
        "surface_area": _surface_area(mesh),
        "input_vertices": int(mesh.vertex_count),
        "clusters": int(dag.cluster_count),
        "groups": int(dag.group_count),
        "levels": int(dag.level_count),
        "root_group": int(dag.root_group),
        "root_error": ROOT_ERROR,
    }
    return meta


def _rgba8_srgb(c: np.ndarray) -> np.ndarray:
    """(n, 4) float linear RGBA 0..1 -> (n,) uint32 RGBA8, RGB sRGB-encoded."""
    q = np.rint(np.concatenate([linear_to_srgb(c[:, :3]), np.clip(c[:, 3:], 0, 1)], axis=1)
                * 255).astype(np.uint32)
    return q[:, 0] | (q[:, 1] << 8) | (q[:, 2] << 16) | (q[:, 3] << 24)


def _uvs_need_floats(mesh: Mesh, max_texture_size: int) -> bool:
    """Whether 16-bit uvs over the asset's uv box would move a texel of its largest texture by
    more than a quarter (`MODE_UV_FLOAT`)."""
    used = {t for m in mesh.materials for t in m.texture_indices()} - {-1}
    if not used:
        return False
    side = max(max(mesh.textures[t].image.shape[:2]) for t in used)
    if max_texture_size:
        side = min(side, max_texture_size)
    lo, hi = column_bounds(mesh.wedge_uv)
    return float((hi - lo).max()) * side / 65535 > 0.25


@nb.njit(cache=True, nogil=True)
def _write_words(pages, cluster_page, off, vertex_offset, words, first, end):
    """The u32 words of each vertex (a row of `words`, (n, k)) of clusters first..end-1, one
    after the other from byte offset off[c] of their page; words holds that run's vertices
    only."""
    vbase = vertex_offset[first]
    for c in range(first, end):
        page = pages[cluster_page[c]]
        o = off[c]
        for v in range(vertex_offset[c] - vbase, vertex_offset[c + 1] - vbase):
            for k in range(words.shape[1]):
                for b in range(4):
                    page[o + b] = (words[v, k] >> (8 * b)) & 0xFF
                o += 4


@nb.njit(cache=True, nogil=True)
def _write_material_bytes(pages, cluster_page, off, tri_offset, material, mixed):
    """The material byte of every triangle of the clusters with mixed materials."""
    for c in range(len(mixed)):
        if mixed[c]:
            page = pages[cluster_page[c]]
            o = off[c]
            for t in range(tri_offset[c], tri_offset[c + 1]):
                page[o] = material[t]
                o += 1


@nb.njit(cache=True, nogil=True)
def _place_records(pages, rec_bytes, page_of, rank, header):
    """Copy record i's bytes to page page_of[i], after the header, at place rank[i]."""
    size = rec_bytes.shape[1]
    for i in range(rec_bytes.shape[0]):
        o = header + size * rank[i]
        pages[page_of[i], o : o + size] = rec_bytes[i]


@nb.njit(cache=True, nogil=True)
def _write_streams(pages, cluster_page, pos_off, nrm_off, uv_off, idx_off, mode, pos_min,
                   vertex_offset, vgrid, normals, uvs, has_uv, tri_offset, local, first, end):
    """Write the vertex and index streams of clusters first..end-1 into their pages; vgrid,
    normals, uvs and local hold that run only (numbered from its first vertex and triangle)."""
    vbase = vertex_offset[first]
    tbase = tri_offset[first]
    for c in range(first, end):
        page = pages[cluster_page[c]]
        o = pos_off[c]
        for v in range(vertex_offset[c] - vbase, vertex_offset[c + 1] - vbase):
            for a in range(3):
                d = vgrid[v, a] - pos_min[c, a]
                if mode[c] == 0:
                    page[o] = d & 0xFF
                    page[o + 1] = (d >> 8) & 0xFF
                    o += 2
                else:
                    for b in range(4):
                        page[o + b] = (d >> (8 * b)) & 0xFF
                    o += 4
        o = nrm_off[c]
        for v in range(vertex_offset[c] - vbase, vertex_offset[c + 1] - vbase):
            for b in range(4):
                page[o + b] = (normals[v] >> (8 * b)) & 0xFF
            o += 4
        if has_uv:
            o = uv_off[c]
            for v in range(vertex_offset[c] - vbase, vertex_offset[c + 1] - vbase):
                for b in range(4):
                    page[o + b] = (uvs[v] >> (8 * b)) & 0xFF
                o += 4
        o = idx_off[c]
        for t in range(tri_offset[c] - tbase, tri_offset[c + 1] - tbase):
            for k in range(3):
                page[o] = local[t, k]
                o += 1
