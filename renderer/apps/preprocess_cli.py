"""`preprocess mesh.obj [-o out.tess]`: build a `.tess` cluster-LOD asset from a mesh file.

Errors the user can cause (a missing or broken file, bad options) print one line on stderr and
exit with status 2; nothing is left behind.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from typing import TYPE_CHECKING

import numpy as np

from assets import BUILTIN, builtin_mesh
from preprocess.config import BuildConfig
from preprocess.mesh import Mesh, MeshError
from preprocess.tess.limits import PAGE_SIZE

if TYPE_CHECKING:
    from tqdm import tqdm

class StageBars:
    """One tqdm bar per stage, fed by the builder's (stage, done, total) reports."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self.bars: dict[str, tqdm] = {}

    def __call__(self, stage: str, done: int, total: int) -> None:
        if not self.enabled:
            return
        bar = self.bars.get(stage)
        if bar is None:
            from tqdm import tqdm

            unit = "tri" if total > 1 else "step"
            bar = tqdm(total=total, desc=f"{stage:>9}", unit=unit, unit_scale=True,
                       leave=True, file=sys.stderr, dynamic_ncols=True)
            self.bars[stage] = bar
        bar.update(done - bar.n)
        if done >= total:
            bar.close()

    def close(self) -> None:
        for bar in self.bars.values():
            bar.close()


def add_build_options(p: argparse.ArgumentParser) -> None:
    """The options shared by `preprocess` and `tessera preprocess`."""
    d = BuildConfig()
    p.add_argument("mesh", nargs="?", help="input mesh: .obj .ply .stl .off .gltf .glb")
    p.add_argument("-o", "--output", help="output .tess (default: beside the input)")
    p.add_argument("--builtin", choices=BUILTIN,
                   help="build a built-in procedural asset instead of reading a file")
    p.add_argument("--triangles", type=int, default=1_000_000,
                   help="size of a --builtin asset in triangles (default: 1,000,000)")
    p.add_argument("--max-triangles", type=int, default=d.max_triangles,
                   help=f"triangles per cluster, at most 128 (default: {d.max_triangles})")
    p.add_argument("--max-vertices", type=int, default=d.max_vertices,
                   help=f"vertices per cluster, at most 255 (default: {d.max_vertices})")
    p.add_argument("--group-size", type=int, default=d.group_size,
                   help=f"clusters per group (default: {d.group_size})")
    p.add_argument("--page-kib", type=int, default=PAGE_SIZE // 1024,
                   help=f"streaming page size in KiB (default: {PAGE_SIZE // 1024})")
    p.add_argument("--threads", type=int, default=0,
                   help="worker threads, 0 = one per core (default: 0)")
    p.add_argument("--prove-errors", action="store_true",
                   help="try to prove each group's error bound by subdividing its triangles "
                        "(slower; falls back to 1.5x the sampled maximum where it fails)")
    p.add_argument("--verify", action="store_true",
                   help="check the DAG invariants (limits, errors, crack-free cuts) after building")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bars or summary")


def run_build(args: argparse.Namespace) -> int:
    """Build from parsed options; returns the exit status."""
    from preprocess.build import build_file

    if (args.mesh is None) == (args.builtin is None):
        return fail("give a mesh file or --builtin NAME (one of them)")
    try:
        config = BuildConfig(max_triangles=args.max_triangles, max_vertices=args.max_vertices,
                             group_size=args.group_size, page_size=args.page_kib * 1024,
                             threads=args.threads, prove_errors=args.prove_errors)
    except ValueError as e:
        return fail(str(e))
    if args.builtin:
        source: str | Mesh = args.builtin
        output = Path(args.output or f"{args.builtin}.tess")
    else:
        source = args.mesh
        output = Path(args.output) if args.output else Path(args.mesh).with_suffix(".tess")
    if output.suffix != ".tess":
        return fail(f"{output}: the output file must end in .tess")
    if not output.parent.exists():
        return fail(f"{output.parent}: output folder does not exist")
    bars = StageBars(not args.quiet)
    try:
        if args.builtin:
            t0 = time.perf_counter()
            mesh = builtin_mesh(args.builtin, args.triangles)
            load_s = time.perf_counter() - t0
            result = build_file(mesh, output, config, progress=bars, verify=args.verify,
                                load_seconds=load_s)
        else:
            result = build_file(source, output, config, progress=bars, verify=args.verify)
    except MeshError as e:
        bars.close()
        return fail(str(e))
    except KeyboardInterrupt:
        bars.close()
        print("interrupted; nothing written", file=sys.stderr)
        return 130
    bars.close()
    if not args.quiet:
        print(result.summary())
    return 0


def fail(message: str) -> int:
    print(f"preprocess: error: {message}", file=sys.stderr)
    return 2


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="preprocess",
        description="Build a .tess cluster-LOD asset (clusters, LOD DAG, BVH, pages) from a mesh.")
    add_build_options(parser)
    args = parser.parse_args(argv)
    np.seterr(all="ignore")
    return run_build(args)


if __name__ == "__main__":
    sys.exit(main())
