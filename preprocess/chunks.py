"""The chunked build: one mesh split into spatial chunks whose DAGs are built one at a time (or
as tasks on a Ray cluster, `preprocess.chunks_ray`), then the levels above them.

Why. A whole build holds, beside the mesh and its result, the original's adjacency and every
level's working arrays at once (about 185 bytes a triangle at 20M); a chunk's build holds its
own share, so that what grows with the mesh is the mesh, the assembled result and, for the top
levels, the original's adjacency. It is also how one mesh's work spreads over many machines.

How (the DAG's own rule, one level up):
1. `split`: the triangles in `chunks` spatial cells of nearly equal counts (a k-d split of their
   centroids across the longest axis); `chunk_border`: the positions used by more than one chunk.
2. `build_chunk` (`preprocess.dag`), for each chunk's sub-mesh (`chunk_inputs`): level 0 and the
   levels above it with its border held at every level, so that whatever each chunk does, their
   surfaces still meet; `dag.CHUNK_LEVELS` (4) levels at most, fewer where the chunk is one
   group or no group shrinks. The clusters left (the chunk's *top*: its interior at level 4,
   the full-detail fans of its border positions) are in no group yet. Errors are measured
   against the chunk's own triangles, never nearer than the whole original's.
3. `build_top`: the tops of all chunks as one mesh over the original's positions, grouped across
   the chunk borders and simplified level by level to one root, measured against the whole
   original as a whole build measures (its surface walked; at a whole level every position).
4. `_Assembly`: the chunks' clusters and groups, then the top's, renumbered into one `LodDag`
   over the mesh's wedges (fresh coarse wedges appended); the vertex encoder is handed each
   chunk's clusters as they come.

The result has every invariant of a whole build (`preprocess.verify`): level 0 the original
triangles, crack-free cuts, honest and monotonic errors, one root. What it costs: the fans of
the border positions stay at full detail until the levels above the chunks (more triangles
drawn near chunk borders while the chunks' interiors are drawn at levels 0-4), and those levels
are built here, on one machine (a sixteenth of the triangles and the borders' fans); measured
in BENCHMARKS.md ("Scans at photogrammetry scale").
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Iterator

import preprocess.numba_cache  # noqa: F401  (first: drops stale numba caches)
import numba as nb
import numpy as np

from preprocess.cluster import kd_split, triangle_centroids
from preprocess.config import BuildConfig
from preprocess.dag import (
    DagPart,
    Given,
    Progress,
    Rows,
    build_chunk,
    build_top,
    coarsest_target,
    trim_heap,
)
from preprocess.lod import LodDag
from preprocess.mesh import Mesh
from preprocess.tess.limits import ROOT_ERROR

# a chunk of the automatic split (`chunk_count`) holds at most this many triangles: its build
# (about 185 bytes a triangle at the peak) stays under 1 GB beside the assembled result
CHUNK_TRIANGLES = 4_000_000


def chunk_count(triangles: int, chunk_triangles: int = CHUNK_TRIANGLES) -> int:
    """How many chunks a mesh of `triangles` is split into by default."""
    return max(1, -(-triangles // chunk_triangles))


def split(mesh: Mesh, chunks: int) -> tuple[np.ndarray, np.ndarray]:
    """The triangles in `chunks` spatial cells of nearly equal counts: (triangle ids (m,) int32,
    cell offsets (chunks + 1,) int64), each cell's ids ascending. A k-d split of the triangle
    centroids (`cluster.kd_split`, level 0's): each cell cut across its longest axis at the
    count that gives its halves' chunks equal shares."""
    m = mesh.triangle_count
    tri = np.ascontiguousarray(mesh.triangles, np.int32)
    perm = np.arange(m, dtype=np.int32)
    offsets = np.zeros(chunks + 1, np.int64)
    offsets[-1] = m
    if chunks > 1 and m:
        cs = np.ascontiguousarray(triangle_centroids(
            np.ascontiguousarray(mesh.positions, np.float32),
            np.ascontiguousarray(mesh.wedge_position, np.int32), tri).T)
        cells = [(0, m, 0, chunks)]
        while cells:
            lo, hi, first, k = cells.pop()
            if k == 1:
                continue
            left = k // 2
            cut = lo + (hi - lo) * left // k
            if lo < cut < hi:
                kd_split(cs, perm, lo, hi, cut)
            offsets[first + left] = cut
            cells += [(lo, cut, first, left), (cut, hi, first + left, k - left)]
        del cs
        for c in range(chunks):
            perm[offsets[c]:offsets[c + 1]].sort()  # the mesh's order: reads in sequence
    return perm, offsets


@nb.njit(cache=True, nogil=True)
def chunk_border(tri: np.ndarray, wpos: np.ndarray, ids: np.ndarray, offsets: np.ndarray,
                 n: int) -> np.ndarray:
    """(n,) bool: the positions used by triangles of more than one chunk (`split`'s)."""
    first = np.full(n, -1, np.int32)
    border = np.zeros(n, np.bool_)
    for c in range(offsets.shape[0] - 1):
        for i in range(offsets[c], offsets[c + 1]):
            for k in range(3):
                p = wpos[tri[ids[i], k]]
                if first[p] < 0:
                    first[p] = c
                elif first[p] != c:
                    border[p] = True
    return border


@nb.njit(cache=True, nogil=True)
def _sub_mesh(tri: np.ndarray, ids: np.ndarray, wpos: np.ndarray, wslot: np.ndarray,
              pslot: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The triangles `ids` of a mesh renumbered: (local triangles, their wedges' global ids in
    ascending order, each wedge's local position, the positions' global ids ascending). wslot,
    pslot: -1 scratch a slot per global wedge and position, left as found."""
    nw = 0
    for t in ids:
        for k in range(3):
            w = tri[t, k]
            if wslot[w] < 0:
                wslot[w] = 0
                nw += 1
    wedges = np.empty(nw, np.int32)
    nw = 0
    for t in ids:
        for k in range(3):
            w = tri[t, k]
            if wslot[w] == 0:
                wslot[w] = 1
                wedges[nw] = w
                nw += 1
    wedges.sort()
    npos = 0
    for i in range(nw):
        p = wpos[wedges[i]]
        if pslot[p] < 0:
            pslot[p] = 0
            npos += 1
    pos = np.empty(npos, np.int32)
    npos = 0
    for i in range(nw):
        p = wpos[wedges[i]]
        if pslot[p] == 0:
            pslot[p] = 1
            pos[npos] = p
            npos += 1
    pos.sort()
    for i in range(npos):
        pslot[pos[i]] = i
    local_wp = np.empty(nw, np.int32)
    for i in range(nw):
        wslot[wedges[i]] = i
        local_wp[i] = pslot[wpos[wedges[i]]]
    local = np.empty((ids.shape[0], 3), np.int32)
    for i in range(ids.shape[0]):
        for k in range(3):
            local[i, k] = wslot[tri[ids[i], k]]
    for i in range(nw):
        wslot[wedges[i]] = -1
    for i in range(npos):
        pslot[pos[i]] = -1
    return local, wedges, local_wp, pos


def _mesh_of(mesh: Mesh, positions: np.ndarray, triangles: np.ndarray,
             wedge_position: np.ndarray, attributes: np.ndarray, name: str) -> Mesh:
    """A mesh with the attributes, materials and textures of `mesh` over other arrays."""
    return dataclasses.replace(mesh, positions=positions, triangles=triangles,
                               name=name).with_wedges(wedge_position, attributes)


class Chunk:
    """One chunk's input: its sub-mesh (`mesh`; None once sent to be built elsewhere), the
    positions it shares with other chunks (`border`), its wedges' and positions' ids in the whole
    mesh, its triangle count."""

    def __init__(self, mesh: Mesh, border: np.ndarray, wedges: np.ndarray,
                 positions: np.ndarray) -> None:
        self.mesh: Mesh | None = mesh
        self.border, self.wedges, self.positions = border, wedges, positions
        self.triangles = mesh.triangle_count


def chunk_inputs(mesh: Mesh, chunks: int) -> Iterator[Chunk]:
    """The chunks of a mesh: split (`split`, `chunk_border`) now, each chunk's sub-mesh made
    as it is asked for."""
    tri = np.ascontiguousarray(mesh.triangles, np.int32)
    wpos = np.ascontiguousarray(mesh.wedge_position, np.int32)
    ids, off = split(mesh, chunks)
    border = chunk_border(tri, wpos, ids, off, len(mesh.positions))

    def made() -> Iterator[Chunk]:
        attrs = mesh.wedge_attributes()
        wslot = np.full(len(wpos), -1, np.int32)
        pslot = np.full(len(mesh.positions), -1, np.int32)
        for c in range(chunks):
            local, wedges, local_wp, pos = _sub_mesh(tri, ids[off[c]:off[c + 1]], wpos, wslot,
                                                     pslot)
            sub = _mesh_of(mesh, mesh.positions[pos], local, local_wp, attrs[wedges],
                           f"{mesh.name} chunk {c + 1}/{chunks}")
            yield Chunk(sub, border[pos], wedges, pos)

    return made()


def build_one_chunk(chunk: Chunk, config: BuildConfig, coarsest: int,
                    progress: Progress | None = None) -> DagPart:
    """`build_chunk` of one chunk (what a Ray task runs)."""
    assert chunk.mesh is not None
    return build_chunk(chunk.mesh, chunk.border, config, coarsest, progress=progress)


class _Assembly:
    """The whole DAG, part after part: the chunks' (`add_chunk`), then the top's (`add_top`)."""

    def __init__(self, mesh: Mesh) -> None:
        m = mesh.triangle_count
        attrs = np.ascontiguousarray(mesh.wedge_attributes(), np.float32)
        self.mesh = mesh
        self.wpos = Rows((), np.int32, len(mesh.wedge_position) + 1024)
        self.wpos.extend(np.asarray(mesh.wedge_position, np.int32))
        self.attrs = Rows((attrs.shape[1],), np.float32, len(attrs) + 1024)
        self.attrs.extend(attrs)
        del attrs
        # about 2m triangles and m / 55 clusters in all: reserved at 3m and m / 32 so that they
        # never grow (a copy, both held; pages never written cost no memory)
        self.store = Rows((3,), np.int32, 3 * m + 1024)
        self.tri_off = Rows((), np.int64, m // 32 + 64)
        self.tri_off.extend([0])
        names = (("level", (), np.int32), ("group", (), np.int32), ("source", (), np.int32),
                 ("bounds", (4,), np.float32), ("self_sphere", (4,), np.float32),
                 ("self_error", (), np.float64), ("geo_error", (), np.float64))
        self.rows = {name: Rows(tail, dtype, m // 32 + 64) for name, tail, dtype in names}
        self.members = Rows((), np.int32, m // 32 + 64)
        self.goff = Rows((), np.int64)
        self.goff.extend([0])
        self.group_rows = {"level": Rows((), np.int32), "sphere": Rows((4,), np.float32),
                           "error": Rows((), np.float64)}
        self.top: list[np.ndarray] = []  # each chunk's top clusters (whole-DAG ids)
        self.top_witness: list[np.ndarray] = []  # the positions they carry (whole-mesh ids)
        self.top_witness_off: list[np.ndarray] = []

    @property
    def clusters(self) -> int:
        return self.rows["level"].n

    def _wedges(self, part: DagPart, wedges: np.ndarray, positions: np.ndarray | None
                ) -> np.ndarray:
        """part's wedge ids -> the whole mesh's: its first len(wedges) are `wedges`, the fresh
        ones after them are appended (their positions through `positions`; None: the mesh's
        own)."""
        fresh_pos = part.wedge_position[len(wedges):]
        if positions is not None:
            fresh_pos = positions[fresh_pos]
        base = self.wpos.n
        self.wpos.extend(fresh_pos)
        self.attrs.extend(part.wedge_attributes[len(wedges):])
        return np.concatenate([wedges, np.arange(base, base + len(fresh_pos), dtype=np.int32)])

    def _add(self, part: DagPart, wedge_map: np.ndarray, cluster_map: np.ndarray,
             new: slice) -> None:
        """Append part's clusters `new` (cluster_map: part ids -> whole-DAG ids, those of `new`
        the next ones) and all its groups."""
        g0 = self.goff.n - 1
        off = part.tri_offset
        a, b = off[new.start], off[new.stop]
        self.store.extend(wedge_map[part.triangles[a:b]])
        self.tri_off.extend(self.store.n - (b - off[new.start + 1:new.stop + 1]))
        for name, rows in self.rows.items():
            values = getattr(part, name)[new]
            if name in ("group", "source"):
                values = np.where(values >= 0, values + g0, -1)
            rows.extend(values)
        self.members.extend(cluster_map[part.group_members])
        self.goff.extend(self.goff.view[-1] + part.group_offset[1:])
        self.group_rows["level"].extend(part.group_level)
        self.group_rows["sphere"].extend(part.group_sphere)
        self.group_rows["error"].extend(part.group_error)

    def add_chunk(self, part: DagPart, chunk: Chunk) -> tuple[int, int]:
        """Append a chunk's clusters and groups; returns the range of their whole-DAG ids."""
        first = self.clusters
        n = len(part.level)
        wedge_map = self._wedges(part, chunk.wedges, chunk.positions)
        self._add(part, wedge_map, np.arange(first, first + n, dtype=np.int32), slice(0, n))
        self.top.append(first + part.top)
        self.top_witness.append(chunk.positions[part.top_witness])
        self.top_witness_off.append(part.top_witness_off)
        return first, self.clusters

    def top_input(self) -> tuple[Mesh, Given, np.ndarray]:
        """The chunks' tops as one mesh over the mesh's positions and the given clusters over
        it (`build_top`): (mesh, given, its wedges' whole-mesh ids)."""
        top = np.concatenate(self.top)
        off = self.tri_off.view
        counts = off[top + 1] - off[top]
        rows = np.concatenate([self.store.view[off[c]:off[c + 1]] for c in top])
        wedges = np.unique(rows)
        woff = [np.zeros(1, np.int64)]
        for part_off in self.top_witness_off:
            woff.append(part_off[1:] + woff[-1][-1])
        offsets = np.zeros(len(top) + 1, np.int64)
        np.cumsum(counts, out=offsets[1:])
        r = self.rows
        given = Given(offsets=offsets, bounds=r["bounds"].view[top], level=r["level"].view[top],
                      self_sphere=r["self_sphere"].view[top],
                      self_error=r["self_error"].view[top], geo_error=r["geo_error"].view[top],
                      witness=np.concatenate(self.top_witness).astype(np.int32),
                      witness_off=np.concatenate(woff))
        mesh = _mesh_of(self.mesh, self.mesh.positions,
                        np.searchsorted(wedges, rows).astype(np.int32),
                        self.wpos.view[wedges], self.attrs.view[wedges], f"{self.mesh.name} top")
        return mesh, given, wedges.astype(np.int32)

    def add_top(self, part: DagPart, wedges: np.ndarray) -> tuple[int, int]:
        """Append the levels above the chunks (`build_top`'s part over `top_input`'s mesh):
        its first clusters are the tops, already here, which its groups now hold."""
        top = np.concatenate(self.top)
        first = self.clusters
        n = len(part.level)
        wedge_map = self._wedges(part, wedges, None)
        cluster_map = np.concatenate([top, np.arange(first, first + n - len(top),
                                                     dtype=np.int32)]).astype(np.int32)
        g0 = self.goff.n - 1
        self.rows["group"].view[top] = part.group[:len(top)] + g0
        self._add(part, wedge_map, cluster_map, slice(len(top), n))
        return first, self.clusters

    def finish(self) -> LodDag:
        mesh = self.mesh
        if self.wpos.n > len(mesh.wedge_position):  # the fresh wedges of the coarse levels
            mesh = mesh.with_wedges(self.wpos.view.copy(), self.attrs.view)
        r, g = self.rows, self.group_rows
        return LodDag(
            mesh=mesh, triangles=self.store.view, cluster_tri_offset=self.tri_off.view,
            cluster_level=r["level"].view, cluster_group=r["group"].view,
            cluster_source_group=r["source"].view, cluster_bounds=r["bounds"].view,
            cluster_self_sphere=r["self_sphere"].view,
            cluster_self_error=r["self_error"].view.astype(np.float32),
            cluster_geometric_error=r["geo_error"].view.astype(np.float32),
            group_level=g["level"].view, group_cluster_offset=self.goff.view,
            group_clusters=self.members.view, group_sphere=g["sphere"].view,
            group_error=g["error"].view.astype(np.float32), root_group=self.goff.n - 2)


ChunkRunner = Callable[[Iterable[Chunk], BuildConfig, int], Iterator[tuple[Chunk, DagPart]]]


def run_here(chunks: Iterable[Chunk], config: BuildConfig, coarsest: int,
             progress: Progress | None = None) -> Iterator[tuple[Chunk, DagPart]]:
    """The chunks built one after another in this process, each on every thread."""
    for chunk in chunks:
        yield chunk, build_one_chunk(chunk, config, coarsest, progress)


def build_chunked(mesh: Mesh, chunks: int, config: BuildConfig | None = None, *,
                  progress: Progress | None = None,
                  on_clusters: Callable[..., None] | None = None,
                  runner: ChunkRunner | None = None) -> LodDag:
    """The DAG of a mesh built chunk by chunk (module docstring): `chunks` spatial chunks, built
    by `runner` (default: here, one after another: `run_here`;
    `preprocess.chunks_ray.ray_runner`: as Ray tasks), then the levels above them here.
    progress and on_clusters as `build_dag`'s (the "cluster" stage is the split, the "simplify"
    stage runs over the chunks, then the top levels)."""
    cfg = config or BuildConfig()
    report = progress or (lambda stage, done, total: None)
    hand_over = on_clusters or (lambda *args: None)
    chunks = max(1, min(int(chunks), mesh.triangle_count))
    m = mesh.triangle_count
    coarsest = coarsest_target(m)
    work = 2 * m
    base = 0  # the work of the chunks done

    def chunk_progress(stage: str, done: int, total: int) -> None:
        report("simplify", min(base + done, work), work)

    report("cluster", 0, 1)
    inputs = chunk_inputs(mesh, chunks)
    report("cluster", 1, 1)
    report("simplify", 0, work)
    whole = _Assembly(mesh)
    chunk_coarsest = max(1, coarsest // chunks)
    if runner is None:
        built = run_here(inputs, cfg, chunk_coarsest, chunk_progress)
    else:
        built = runner(inputs, cfg, chunk_coarsest)
    for chunk, part in built:
        first, end = whole.add_chunk(part, chunk)
        chunk.mesh = None
        del part
        trim_heap()
        base += 2 * chunk.triangles
        report("simplify", min(base, work), work)
        hand_over(whole.store.view, whole.tri_off.view, first, end, whole.wpos.view,
                  whole.attrs.view[:, :3])
    top_mesh, given, wedges = whole.top_input()
    part = build_top(top_mesh, given, cfg, mesh, coarsest=coarsest)
    del top_mesh
    first, end = whole.add_top(part, wedges)
    hand_over(whole.store.view, whole.tri_off.view, first, end, whole.wpos.view,
              whole.attrs.view[:, :3])
    report("simplify", work, work)
    dag = whole.finish()
    assert dag.group_error[dag.root_group] == np.float32(ROOT_ERROR)
    return dag


