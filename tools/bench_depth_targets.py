"""The depth targets pass (velocity): what it costs a pixel.

By default a flat 8,192-triangle square fills the whole image (every pixel covered, few clusters:
the pure per-pixel cost; background pixels return early); with `--asset`, a grid of that asset
framed (many clusters and pages: what a real scene costs). The camera moves sideways every frame
so that the pass runs (a frame without motion clears the buffer instead). Frames with the pass
and without it (its `encode` replaced by nothing) alternate, so both see the same load on a shared
machine; each is timed from `submit` to its statistics read back. Printed: the median frame both
ways, their difference per covered pixel, and the pass's and resolve's GPU timestamps (medians),
where the adapter has timestamps.

    python tools/bench_depth_targets.py                         # 512x512 and 1024x1024
    python tools/bench_depth_targets.py --size 1920x1080 --frames 30 --fallback32
    python tools/bench_depth_targets.py --asset out/rock.tess --instances 16
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # this checkout, not the installed one


def plane(path: Path, n: int = 64) -> None:
    """The square [-1, 1]^2 x {0}, facing +z, n x n quads, preprocessed to `path`."""
    from assets.shapes import grid_square
    from preprocess.build import build_file
    from preprocess.load import mesh_from_arrays

    pos, faces = grid_square(n)
    build_file(mesh_from_arrays(pos, faces, name="plane"), path)


def measure(tess: Path, width: int, height: int, frames: int, fallback32: bool,
            instances: int = 0) -> dict:
    """Median ms of frames with and without the pass, the timestamps of it and resolve, and the
    covered pixels. `instances` 0: the square `tess` filling the view; else a framed grid."""
    from renderer.camera import Camera
    from renderer.renderer import Renderer
    from renderer.options import RenderOptions

    r = Renderer(width, height, options=RenderOptions(fallback32=fallback32))
    if instances:
        r.add_grid(r.load(tess), instances)
        c = Camera.framing(*r.bounds(), fill=1.6)
        shift = np.array([0.002 * r.bounds()[1], 0.0, 0.0])
        cams = [c, Camera(eye=c.eye + shift, target=c.target + shift, near=c.near)]
    else:
        r.add_instance(r.load(tess))
        # 0.9 units away at 60 degrees: the square covers the whole view at aspects up to 1.9
        cams = [Camera(eye=np.array([dx, 0.0, 0.9]), target=np.array([dx, 0.0, 0.0]), near=0.01)
                for dx in (0.0, 0.01)]
    first = r.render(cams[0])
    if not instances and not first.coverage.all():
        raise SystemExit(f"{width}x{height}: the square covers {first.coverage.mean():.0%} of "
                         "the image; use an aspect of 1.9 at most")
    real = r.frame.depth_targets.encode
    ms: dict[str, list[float]] = {"with": [], "without": []}
    stamps: dict[str, list[float]] = {"depth_targets": [], "resolve": []}
    k = 0
    for i in range(frames):
        for mode in ("with", "without") if i % 2 else ("without", "with"):
            r.frame.depth_targets.encode = real if mode == "with" else (lambda frame, encoder: None)
            k += 1
            t0 = time.perf_counter()
            r.submit(cams[k % 2])  # another camera than the frame before: the pass runs
            stats = r.stats(wait=True)
            ms[mode].append((time.perf_counter() - t0) * 1e3)
            if mode == "with":
                for label, values in stamps.items():
                    if label in stats.gpu_ms:
                        values.append(stats.gpu_ms[label])
    out = {m: statistics.median(v) for m, v in ms.items()}
    out.update({f"{label}_ts": statistics.median(v) if v else float("nan")
                for label, v in stamps.items()})
    out["vis64"] = r.vis64
    out["covered"] = int(first.coverage.sum())
    out["device"] = r.ctx.description
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size", action="append", help="WxH (repeat; default 512x512, 1024x1024)")
    ap.add_argument("--frames", type=int, default=16, help="frames each way, a size (16)")
    ap.add_argument("--fallback32", action="store_true", help="the 32-bit visibility path")
    ap.add_argument("--asset", type=Path, help="a .tess file drawn as a grid (default: the square)")
    ap.add_argument("--instances", type=int, default=16, help="grid instances with --asset (16)")
    args = ap.parse_args(argv)
    sizes = [tuple(int(v) for v in s.lower().split("x")) for s in args.size or
             ("512x512", "1024x1024")]
    with tempfile.TemporaryDirectory() as tmp:
        tess = args.asset
        if tess is None:
            tess = Path(tmp) / "plane.tess"
            plane(tess)
        for w, h in sizes:
            m = measure(tess, w, h, args.frames, args.fallback32,
                        args.instances if args.asset else 0)
            px = m["covered"]
            diff = m["with"] - m["without"]
            print(f"{w}x{h} ({'64' if m['vis64'] else '32'}-bit visibility, {m['device']}), "
                  f"{px / (w * h):.0%} covered: frame {m['with']:.1f} ms with the pass, "
                  f"{m['without']:.1f} without: {diff:.2f} ms, {diff * 1e6 / px:.1f} ns a "
                  f"covered pixel; timestamps: depth_targets {m['depth_targets_ts']:.2f} ms "
                  f"({m['depth_targets_ts'] * 1e6 / px:.1f} ns a covered pixel), resolve "
                  f"{m['resolve_ts']:.2f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
