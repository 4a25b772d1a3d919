"""Do the culling traversals agree, frame after frame, on this adapter? For each grid size, the
per-level traversal, the persistent one (its default workgroups) and the persistent one with a
single workgroup render the same grid of rocks from the same camera `--frames` times; the script
prints, per traversal, how many frames were flagged INCOMPLETE (`FrameStats.overflow` bit 3: a
loop of the culling shader was cut short) and the distinct outcomes seen (overflow, nodes
visited, clusters tested, triangles drawn). Exit status 1 when the outcomes of the traversals or
of the frames differ, or when a frame was flagged, except where a CPU adapter (lavapipe) cuts the
persistent traversal's long loops, which the flag is there to say.

    python tools/check_traversals.py                          # the built-in rock, 1,024 / 4,096
    python tools/check_traversals.py out/rock.tess --sizes 1024 65536 --frames 30 --occlusion
"""

from __future__ import annotations

import argparse
import collections
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # this checkout, not the installed one

from renderer import Camera, Renderer, RenderOptions
from renderer.results import INCOMPLETE

VARIANTS = {
    "per-level": dict(persistent=False),
    "persistent": dict(persistent=True),
    "persistent, 1 workgroup": dict(persistent=True, persistent_workgroups=1),
}


def run(path: str, count: int, name: str, frames: int, size: tuple[int, int],
        occlusion: bool) -> tuple[collections.Counter, int, float, bool]:
    """(outcomes seen, frames flagged INCOMPLETE, median frame ms, CPU adapter?)."""
    r = Renderer(*size, options=RenderOptions(occlusion=occlusion, **VARIANTS[name]))
    asset = r.load(path)
    r.add_grid(asset, count)
    side = int(np.ceil(np.sqrt(count)))
    extent = 1.2 * 2 * float(r.scene.assets[asset].bounds_sphere[3]) * side
    cam = Camera(eye=(0.0, 0.5 * extent, 0.6 * extent), target=(0.0, 0.0, 0.0), fov_y=60.0,
                 near=0.05)
    seen: collections.Counter = collections.Counter()
    flagged, times = 0, []
    for _ in range(frames):
        t0 = time.perf_counter()
        st = r.render(cam).stats
        times.append(time.perf_counter() - t0)
        flagged += bool(st.overflow & INCOMPLETE)
        seen[(st.overflow, st.counters["nodes_visited"], st.counters["clusters_tested"],
              st.triangles)] += 1
    return seen, flagged, 1000 * float(np.median(times)), r.ctx.adapter_type == "CPU"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("file", nargs="?", help="a .tess file (default: the built-in rock, built)")
    p.add_argument("--sizes", type=int, nargs="+", default=[1024, 4096],
                   help="grid sizes, in instances (1024 4096)")
    p.add_argument("--frames", type=int, default=10, help="frames per traversal (10)")
    p.add_argument("--size", default="640x360", help="image size WxH (640x360)")
    p.add_argument("--occlusion", action="store_true", help="two-pass occlusion culling on")
    args = p.parse_args(argv)
    size = tuple(int(v) for v in args.size.lower().split("x"))
    with tempfile.TemporaryDirectory() as tmp:
        path = args.file
        if path is None:
            from assets import builtin_mesh
            from preprocess.build import build_file

            path = str(Path(tmp) / "rock.tess")
            build_file(builtin_mesh("rock", 1_000_000), path)
        failed = False
        for count in args.sizes:
            whole: set = set()  # the outcomes of the frames not cut short, every traversal
            for name in VARIANTS:
                seen, flagged, ms, cpu = run(path, count, name, args.frames, size, args.occlusion)
                excused = cpu and name != "per-level"
                print(f"{count:>6} rocks  {name:<24} {args.frames} frames, {flagged} flagged "
                      f"INCOMPLETE, {len(seen)} outcome(s) {dict(seen)}; {ms:.1f} ms a "
                      "render(), images read back"
                      + ("  (a CPU adapter cuts its loops: flagged, as it must be)"
                         if excused and flagged else ""), flush=True)
                failed |= bool(flagged) and not excused
                whole |= {o for o in seen if not o[0] & INCOMPLETE}
            if len(whole) > 1:
                print(f"{count:>6} rocks  the frames disagree: {sorted(whole)}", flush=True)
                failed = True
    print("FAIL" if failed else "ok: every traversal, every frame, the same outcome")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
