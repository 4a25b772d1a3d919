"""The whole offline pipeline, stage by stage: load, cluster + simplify (the DAG), BVH, pack,
write. Times every stage and produces the statistics that `preprocess` prints at the end and
`tessera info` prints from a file."""

from __future__ import annotations

import os
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from preprocess.asset import PackedAsset, VertexEncoder, pack_asset
from preprocess.bvh import build_bvh
from preprocess.config import BuildConfig
from preprocess.dag import Progress, build_dag
from preprocess.lod import Bvh, LodDag
from preprocess.mesh import Mesh
from preprocess.tessfile import write_tess


STAGES = ("load", "cluster", "simplify", "bvh", "pack", "write")  # in pipeline order


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


def summarize(meta: dict, file_size: int, page_count: int, root_pages: int) -> str:
    """The statistics block shared by `preprocess` and `tessera info`."""
    per_level = meta["clusters_per_level"]
    tris_level = meta["triangles_per_level"]
    lines = [
        f"{meta['name']}",
        f"  input         {meta['input_triangles']:,} triangles, "
        f"{meta['input_vertices']:,} vertices",
        f"  clusters      {meta['clusters']:,} in {meta['levels']} levels, "
        f"{meta['groups']:,} groups; level-0 fill {100 * meta['level0_fill']:.1f}%",
    ]
    for lv, (c, t) in enumerate(zip(per_level, tris_level, strict=True)):
        noun = "clusters" if c != 1 else "cluster "
        lines.append(f"    level {lv:<3} {c:>8,} {noun} {t:>11,} triangles")
    lines += [
        f"  root          {meta['root_clusters']} cluster{'s' * (meta['root_clusters'] != 1)}, "
        f"{meta['root_triangles']:,} triangles",
        f"  quantization  step {meta['step']:.3g} (max error {meta['quantization_error']:.3g})",
        f"  pages         {page_count:,} of {meta['page_size'] // 1024} KiB "
        f"({root_pages} root)",
        f"  file          {file_size / 2**20:.2f} MiB",
    ]
    seconds = meta.get("seconds", {})
    if seconds:  # pipeline order (the meta JSON stores its keys sorted)
        order = [k for k in STAGES if k in seconds] + [k for k in seconds if k not in STAGES]
        parts = ", ".join(f"{k} {seconds[k]:.2f}" for k in order)
        total = sum(v for k, v in seconds.items() if k != "load")
        lines.append(f"  seconds       {parts} (build {total:.2f} without load)")
    return "\n".join(lines)


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
                         int((self.packed.page_flags & 1).sum()))
        if self.verified is not None:
            text += "\n  verified      limits, DAG, BVH, crack-free cuts, honest errors"
        return text


def build_asset(mesh: Mesh, config: BuildConfig | None = None, *,
                progress: Progress | None = None, seconds: dict | None = None
                ) -> tuple[LodDag, Bvh, PackedAsset]:
    """Mesh -> (DAG, BVH, packed pages); stage times go into `seconds` if given."""
    cfg = config or BuildConfig()
    sec = seconds if seconds is not None else {}
    report = progress or (lambda stage, done, total: None)
    stamps: dict[str, float] = {}

    def timed(stage: str, done: int, total: int) -> None:
        stamps.setdefault(stage, time.perf_counter())
        if done >= total:
            sec[stage] = time.perf_counter() - stamps[stage]
        report(stage, done, total)

    # encodes finished clusters while the DAG is being built (on this thread if asked for one)
    encoder = VertexEncoder(mesh, background=cfg.threads != 1)
    try:
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
    packed = pack_asset(dag, bvh, cfg, encoded)
    report("pack", 1, 1)
    sec["pack"] = time.perf_counter() - t - sec["bvh"]
    packed.meta.update(dag_stats(dag))
    packed.meta["page_size"] = cfg.page_size
    return dag, bvh, packed


def build_file(source: str | os.PathLike | Mesh, output: str | os.PathLike,
               config: BuildConfig | None = None, *, progress: Progress | None = None,
               verify: bool = False, load_seconds: float | None = None) -> BuildResult:
    """Load (unless given a Mesh), build, and write a `.tess` file atomically."""
    from preprocess.load import load_mesh

    seconds: dict[str, float] = {}
    if isinstance(source, Mesh):
        mesh = source
        if load_seconds is not None:
            seconds["load"] = load_seconds
    else:
        t = time.perf_counter()
        mesh = load_mesh(source)
        seconds["load"] = time.perf_counter() - t
    cfg = config or BuildConfig()
    dag, bvh, packed = build_asset(mesh, cfg, progress=progress, seconds=seconds)
    verified = None
    if verify:
        from preprocess.verify import check_all

        verified = check_all(dag, bvh)
    t = time.perf_counter()
    packed.meta["seconds"] = {k: round(v, 4) for k, v in seconds.items()}
    size = write_tess(output, meta=packed.meta, sections=packed.sections, pages=packed.pages,
                      page_flags=packed.page_flags)
    seconds["write"] = time.perf_counter() - t
    return BuildResult(Path(output), dag, bvh, packed, size, seconds, verified)
