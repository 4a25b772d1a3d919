"""The whole offline pipeline, stage by stage: load, cluster + simplify (the DAG), BVH, pack,
write. Times every stage and produces the statistics that `preprocess` prints at the end and
`tessera info` prints from a file."""

from __future__ import annotations

import contextlib
import errno
import os
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from preprocess.pack import PackedAsset, VertexEncoder, pack_asset
from preprocess.bvh import build_bvh
from preprocess.config import BuildConfig
from preprocess.dag import Progress, build_dag, trim_heap
from preprocess.lod import Bvh, LodDag
from preprocess.mesh import Mesh, MeshError
from preprocess.tess.container import write_tess
from preprocess.tess.limits import PAGE_ROOT
from preprocess.tess.records import DEFLATED_SECTIONS
from preprocess.tess.summary import summarize
from preprocess.textures import TextureSet
from preprocess.up_axis import to_y_up, warn_against_spec


# from this many triangles the encoded clusters wait for the pages on disk (`build_asset`):
# ~35 bytes a triangle that would otherwise stay in memory to the end of the build
SPILL_TRIANGLES = 1_000_000
_DISK_FULL = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)


def dag_stats(dag: LodDag) -> dict:
    """Figures of a built DAG that are stored in the file's meta."""
    counts = np.diff(dag.cluster_tri_offset)
    level0 = counts[dag.cluster_level == 0]
    root = dag.group_clusters[dag.group_cluster_offset[dag.root_group] :]
    return {
        "clusters_per_level": np.bincount(dag.cluster_level).tolist(),
        "triangles_per_level": np.bincount(dag.cluster_level, weights=counts)
        .astype(np.int64).tolist(),
        "level0_fill": float(level0.mean() / 128) if len(level0) else 0.0,
        "root_clusters": len(root),
        "root_triangles": int(counts[root].sum()),
    }


@dataclass
class BuildResult:
    path: Path
    dag: LodDag
    bvh: Bvh
    packed: PackedAsset
    file_size: int
    seconds: dict[str, float]
    verified: dict | None = None

    def summary(self) -> str:
        text = summarize(self.packed.meta, self.file_size, len(self.packed.pages),
                         int(np.count_nonzero(self.packed.page_flags & PAGE_ROOT)))
        if self.verified is not None:
            text += "\n  verified      limits, DAG, BVH, crack-free cuts, honest errors"
            honest = self.verified.get("honest")
            if honest and honest.get("level_ratios"):
                ratios = " ".join(f"{r:.2f}" for r in honest["level_ratios"])
                text += (f"\n  errors        stored geometric error / measured distance "
                         f"to the original, per level from 1 "
                         f"({honest['points'] // max(honest['clusters'], 1)} samples a cluster): "
                         f"{ratios}")
        return text


def build_asset(mesh: Mesh, config: BuildConfig | None = None, *,
                progress: Progress | None = None, seconds: dict | None = None,
                texture_set: TextureSet | None = None, chunks: int = 1,
                runner: Callable | None = None, spill: bool | None = None,
                spill_dir: str | os.PathLike | None = None
                ) -> tuple[LodDag, Bvh, PackedAsset]:
    """Mesh -> (DAG, BVH, packed pages); stage times go into `seconds` if given; `texture_set`:
    the scene's textures, which the mesh's materials index (`pack_asset`). A mesh whose
    up axis is not Y (`config.up`) is turned Y-up first (`preprocess.up_axis.to_y_up`): the
    DAG and everything after see the rotated mesh; `mesh` itself is not modified. chunks > 1:
    the DAG built chunk by chunk (`preprocess.chunks`), by `runner` where given
    (`chunks.ChunkRunner`: `preprocess.chunks_ray.ray_runner`, the chunks as Ray tasks).
    spill: the encoded clusters wait for the pages in an unnamed temporary file (in `spill_dir`,
    else the system's) rather than in memory (`VertexEncoder`); None: where the mesh has at least
    SPILL_TRIANGLES triangles."""
    cfg = config or BuildConfig()
    mesh = to_y_up(mesh, cfg.up)
    sec = seconds if seconds is not None else {}
    report = progress or (lambda stage, done, total: None)
    if spill is None:
        spill = mesh.triangle_count >= SPILL_TRIANGLES
    with contextlib.ExitStack() as stack:
        where = spill_dir if spill_dir is not None and os.path.isdir(spill_dir) else None
        file = stack.enter_context(tempfile.TemporaryFile(dir=where)) if spill else None
        try:
            return _build_asset(mesh, cfg, sec, report, texture_set, chunks, runner, file)
        except OSError as e:  # a full disk under the spill: say where (its file has no name)
            if file is None or e.filename is not None or e.errno not in _DISK_FULL:
                raise
            folder = os.path.abspath(where or tempfile.gettempdir())
            raise OSError(e.errno, e.strerror, f"{folder} (the build's temporary file of "
                                               f"encoded clusters)") from e


def _build_asset(mesh: Mesh, cfg: BuildConfig, sec: dict, report: Progress,
                 texture_set: TextureSet | None, chunks: int, runner: Callable | None,
                 spill) -> tuple[LodDag, Bvh, PackedAsset]:
    stamps: dict[str, float] = {}

    def timed(stage: str, done: int, total: int) -> None:
        stamps.setdefault(stage, time.perf_counter())
        if done >= total:
            sec[stage] = time.perf_counter() - stamps[stage]
        report(stage, done, total)

    # encodes finished clusters while the DAG is being built (on this thread if asked for one)
    encoder = VertexEncoder(mesh, background=cfg.threads != 1, spill=spill)
    try:
        if chunks > 1:
            from preprocess.chunks import build_chunked

            dag = build_chunked(mesh, chunks, cfg, progress=timed, on_clusters=encoder.add,
                                runner=runner)
        else:
            dag = build_dag(mesh, cfg, progress=timed, on_clusters=encoder.add)
    except BaseException:
        encoder.close()
        raise

    def bvh_timed() -> tuple[Bvh, float]:
        t0 = time.perf_counter()
        return build_bvh(dag), time.perf_counter() - t0

    # the BVH (mostly Python) is built beside the end of the vertex encoding (numba, without
    # the GIL); "pack" is the rest of the wall time from here
    t = time.perf_counter()
    report("bvh", 0, 1)
    with ThreadPoolExecutor(max_workers=1) as pool:
        pending = pool.submit(bvh_timed)
        encoded = encoder.result()
        bvh, sec["bvh"] = pending.result()
    report("bvh", 1, 1)
    report("pack", 0, 1)
    trim_heap()  # what the DAG's builder freed goes back before the pages are made
    packed = pack_asset(dag, bvh, cfg, encoded, texture_set=texture_set)
    report("pack", 1, 1)
    sec["pack"] = time.perf_counter() - t - sec["bvh"]
    packed.meta.update(dag_stats(dag))
    if chunks > 1:  # absent means one: a whole build's file is what it was before chunks
        packed.meta["chunks"] = chunks
    packed.meta["page_size"] = cfg.page_size
    packed.meta["shading_weight"] = cfg.shading_weight_for(mesh)
    if cfg.normal_cost:  # absent means 0: a default build's file is what it was before
        packed.meta["normal_cost"] = cfg.normal_cost
    if cfg.up != "y":  # absent means Y-up: a default build's file is what it was before `up`
        packed.meta["up"] = cfg.up
    return dag, bvh, packed


# Seconds to compile each module's numba kernels the first time, on the 2-core reference machine
# (a first `preprocess mesh.obj` took 46 s; a kernel another one calls compiles with its caller:
# `simplify`, `measure`, `grid` and `distance` inside `dag`'s group job; `dag`'s figure holds
# `grouping`'s, measured before they parted). The modules every build runs, then those that only
# mesh files (the fast readers of `preprocess.io`) or only the built-in rock and terrain
# (`assets.rock`) run. (The welding and reading kernels were one module each, 1.5 s and 6 s: those
# totals are kept, shared out as their first compiles measured on a 2-core machine.)
KERNEL_SECONDS = {"preprocess.dag": 33.0, "preprocess.pack": 3.0, "preprocess.cluster": 2.0,
                  "preprocess.io.weld": 0.25, "preprocess.io.repair": 0.75,
                  "preprocess.io.normals": 0.5, "preprocess.simplify": 0.0,
                  "preprocess.measure": 0.0, "preprocess.grid": 0.0, "preprocess.distance": 0.0,
                  "preprocess.grouping": 0.0, "preprocess.lod": 0.0}
# the readers' kernels, by the file types that call them (a glTF calls none)
FILE_KERNEL_SECONDS = {".obj": {"preprocess.io.obj": 4.5, "preprocess.io.text": 1.0},
                       ".ply": {"preprocess.io.ply": 0.5, "preprocess.io.text": 1.0},
                       ".off": {"preprocess.io.text": 1.0}, ".stl": {"preprocess.io.text": 1.0}}
ROCK_KERNEL_SECONDS = {"assets.rock": 0.5}


def compile_seconds(modules: dict[str, float]) -> float:
    """The seconds of numba compiling ahead (`modules`: name -> seconds, as KERNEL_SECONDS): the
    sum over the modules that have no kernel compiled in numba's disk cache, which numba keeps
    per module (`__pycache__/*.nbi` beside it, or under NUMBA_CACHE_DIR) and drops as a whole
    when the module's source changes. A module with some kernels compiled counts as ready: a
    kernel this input does not call is never compiled. 0.0 when it cannot tell (JIT disabled,
    another numba)."""
    import importlib

    try:
        from numba.core.dispatcher import Dispatcher

        ahead = 0.0
        for name, seconds in modules.items():
            module = importlib.import_module(name)
            indexes = [value._cache._cache_file for value in vars(module).values()
                       if isinstance(value, Dispatcher) and value.__module__ == name
                       and value.targetoptions.get("inline") != "always"  # compiled into callers
                       and hasattr(value._cache, "_cache_file")]  # cache=True
            if indexes and not any(index._load_index() for index in indexes):
                ahead += seconds
        return ahead
    except Exception:  # numba internals: a guess that fails says nothing rather than break
        return 0.0


# The peak memory of a whole `preprocess` command a triangle of the input (the loaded mesh, the
# DAG's triangles and wedges, the original's adjacency; the encoded vertices wait on disk from
# SPILL_TRIANGLES), measured on generated scans of 20M triangles (BENCHMARKS "Scans at
# photogrammetry scale", session 43), a little over: a whole build's (141 measured), a chunked
# one's (`preprocess.chunks`: the mesh, the assembled result and one chunk's build: 135 at 20M,
# part of it one chunk's, so less a triangle on a bigger mesh), and the peak while --verify
# checks what the build left (the mesh, the DAG, the pages) with its lean grid of the original
# (72) and a batch of samples: 217 for a chunked build of 20M triangles
BUILD_BYTES_PER_TRIANGLE = 160
CHUNKED_BYTES_PER_TRIANGLE = 150
VERIFIED_BYTES_PER_TRIANGLE = 240
# below this many triangles nothing is checked (the interpreter, numba and the imports are most
# of a small build's memory)
MEMORY_CHECK_TRIANGLES = 1_000_000


def available_memory() -> int | None:
    """The bytes the kernel says a new process can use without swapping (MemAvailable), None
    where it does not say (not Linux)."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def plan_chunks(name: str, triangles: int, verify: bool, limit: int | None,
                limit_is_given: bool = False, chunks: int | None = None) -> int:
    """How many chunks to build a mesh of ``triangles`` in: ``chunks`` where given, else one
    (the whole build) where that fits ``limit`` bytes by the measured figures above, else the
    chunked build's count (`preprocess.chunks.chunk_count`). `MeshError` (one line), before
    anything is built, when even that needs more than ``limit`` (the kernel would kill the
    build minutes later with no word). None: no limit known."""
    from preprocess.chunks import chunk_count

    if chunks is None:
        chunks = 1
        if (limit is not None and triangles >= MEMORY_CHECK_TRIANGLES
                and _need(triangles, verify, 1) > limit):
            chunks = chunk_count(triangles)
    if limit is None or triangles < MEMORY_CHECK_TRIANGLES:
        return chunks
    need = _need(triangles, verify, chunks)
    if need <= limit:
        return chunks
    what = "the --memory limit" if limit_is_given else "available"
    per = need / triangles
    how = "chunked " if chunks > 1 else ""
    raise MeshError(f"{name}: {triangles:,} triangles need about {need / 1e9:.1f} GB to "
                    f"{how}build{' and verify' if verify else ''} ({per:.0f} bytes a triangle), "
                    f"and {limit / 1e9:.1f} GB are {what}: free memory, or give --memory GB if "
                    f"you know it fits")


def bytes_per_triangle(chunks: int, verify: bool) -> int:
    """The measured peak of a build in `chunks` chunks (1: whole), verified or not, a triangle
    (the verify comes after the build's peak: the larger of the two counts)."""
    per = BUILD_BYTES_PER_TRIANGLE if chunks <= 1 else CHUNKED_BYTES_PER_TRIANGLE
    return max(per, VERIFIED_BYTES_PER_TRIANGLE if verify else 0)


def _need(triangles: int, verify: bool, chunks: int) -> int:
    return bytes_per_triangle(chunks, verify) * triangles


def build_file(source: str | os.PathLike | Mesh, output: str | os.PathLike,
               config: BuildConfig | None = None, *, progress: Progress | None = None,
               verify: bool = False, load_seconds: float | None = None,
               texture: str | os.PathLike | None = None,
               stage_into: list[Path] | None = None,
               texture_set: TextureSet | None = None,
               source_key: str | None = None,
               memory: tuple[int, bool] | None = None, chunks: int | None = None,
               runner: Callable | None = None) -> BuildResult:
    """Load (unless given a Mesh), build, verify if asked, and write a `.tess` file atomically.
    `config.up` turns the mesh Y-up (`build_asset`); a glTF file with an up axis other than Y,
    its specification's, gives a `MeshWarning` and is rotated all the same.

    progress(stage, done, total) is where a caller cancels (by raising): the stages of
    `build_asset`, then ("verify", 0, 1) and ("verify", 1, 1) with verify=True, ("write", 0, 1)
    before writing and ("write", 1, 1) once the file is complete on disk but not yet renamed to
    `output`. Whatever raises, from progress or not (a failed verification: `VerifyError`, before
    anything is written; a full disk: OSError naming `output`), leaves no file behind.
    stage_into: the file is left complete at a temporary name beside `output`, appended to this
    list (`write_tess`), for the caller to rename with the files that go with it (a scene's).
    texture_set: the scene's textures (`preprocess.textures.texture_set`, its file named by
    `texture_set.file`): the file's materials index them and it holds none of its own.
    source_key: what it was built from, kept in the meta (`preprocess.batch.source_key`: a
    batch's outputs up to date are not built again).
    memory: (bytes, given by the user) the build may use: a mesh that needs more for a whole
    build by the measured figures is built in chunks (`preprocess.chunks`), and one that needs
    more even so is refused once loaded (`plan_chunks`); None checks nothing. chunks: build in
    this many chunks (1: whole) whatever the memory; runner: who builds the chunks
    (`build_asset`)."""
    from preprocess.load import load_mesh

    seconds: dict[str, float] = {}
    load_steps: dict[str, float] = {}
    cfg = config or BuildConfig()
    if isinstance(source, Mesh):
        mesh = source
        if load_seconds is not None:
            seconds["load"] = load_seconds
    else:
        t = time.perf_counter()
        mesh = load_mesh(source, crease_angle=cfg.crease_angle, texture=texture,
                         steps=load_steps)
        seconds["load"] = time.perf_counter() - t
        warn_against_spec(source, cfg.up)
    limit, given = memory if memory is not None else (None, False)
    chunks = plan_chunks(mesh.name, mesh.triangle_count, verify, limit, given, chunks)
    dag, bvh, packed = build_asset(mesh, cfg, progress=progress, seconds=seconds,
                                   texture_set=texture_set, chunks=chunks, runner=runner,
                                   spill_dir=Path(output).parent)
    report = progress or (lambda stage, done, total: None)
    verified = None
    if verify:
        from preprocess.verify import check_all

        report("verify", 0, 1)
        trim_heap()  # what the build freed goes back before the checks' grid is made
        verified = check_all(dag, bvh)
        report("verify", 1, 1)
    t = time.perf_counter()
    # the load's own steps as "load.read" and so on: timings, which byte-for-byte comparisons of
    # files leave out with "seconds"
    timed = {**seconds, **{f"load.{k}": v for k, v in load_steps.items()}}
    packed.meta["seconds"] = {k: round(v, 4) for k, v in timed.items()}
    if source_key is not None:
        packed.meta["source_key"] = source_key
    report("write", 0, 1)
    size = write_tess(output, meta=packed.meta, sections=packed.sections, pages=packed.pages,
                      page_flags=packed.page_flags, before_replace=lambda: report("write", 1, 1),
                      stage_into=stage_into,
                      deflate=[n for n in DEFLATED_SECTIONS if n in packed.sections])
    seconds["write"] = time.perf_counter() - t
    return BuildResult(Path(output), dag, bvh, packed, size, seconds, verified)
