"""Instances in bulk (issue 34): what placing, moving and holding a million instances costs.

In one process, on a grid of a small sphere (built here, or `--asset`): the time to place the
instances (`add_grid`; `add_instances` of the same (k, 4, 4) array), the instance buffer's bytes
an instance on the GPU, the first frame (the layout: slots sorted by asset and along a Morton
curve, the blocks' boxes, the upload), the CPU's work before submission (`FrameStats.encode_ms`)
with the instances at rest and with `--moves` random instances moved every frame
(`set_transforms` timed apart), and the peak resident memory of the process. Medians of
`--frames` frames.

    python tools/bench_instances.py                       # 65,536 and 1,000,000 instances
    python tools/bench_instances.py --counts 4000000 --moves 10000
    python tools/bench_instances.py --views               # frames framed and low over a corner
    python tools/bench_instances.py --views --scatter     # a sparse field scattered over hills

`--views` uses only `add_grid` and `render` (APIs older than this work), so the tool copied into
an older checkout measures the code before it, side by side.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # this checkout, not the installed one


def _sphere(folder: Path) -> str:
    from renderer.apps import cli

    path = folder / "sphere.tess"
    assert cli.main(["preprocess", "--builtin", "sphere", "--triangles", "20480", "-o",
                     str(path), "-q"]) == 0
    return str(path)


def run(asset: str, count: int, moves: int, frames: int, size=(512, 512)) -> None:
    from renderer.camera import Camera
    from renderer.renderer import Renderer

    r = Renderer(*size)
    a = r.load(asset)
    t = time.perf_counter()
    r.add_grid(a, count)
    grid_s = time.perf_counter() - t
    worlds = r.scene.instance_world  # (k, 4, 4) float32
    other = Renderer(*size, ctx=r.ctx)
    b = other.load(asset)
    t = time.perf_counter()
    other.add_instances(b, worlds)
    bulk_s = time.perf_counter() - t
    del other, worlds
    cam = Camera.framing(*r.bounds())
    t = time.perf_counter()
    r.render(cam)
    first_s = time.perf_counter() - t
    per = r.frame.resources.buffers["instances"].size / count
    rest = []
    for _ in range(frames):
        rest.append(r.render(cam).stats.encode_ms)
    rng = np.random.default_rng(0)
    rows = r.scene.store.rows
    moving, setting = [], []
    for _ in range(frames):
        idx = rng.choice(count, min(moves, count), replace=False)
        new = rows[idx].copy()
        new[:, :, 3] += rng.normal(0, 0.01, (len(idx), 3)).astype(np.float32)
        t = time.perf_counter()
        r.set_transforms(idx, new)
        setting.append(1e3 * (time.perf_counter() - t))
        moving.append(r.render(cam).stats.encode_ms)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"{count:>10,} instances: add_grid {1e3 * grid_s:6.0f} ms, add_instances (k, 4, 4) "
          f"{1e3 * bulk_s:6.0f} ms; {per:.1f} B an instance on the GPU; first frame "
          f"{1e3 * first_s:6.0f} ms")
    print(f"{'':>21} CPU before submission: at rest {statistics.median(rest):.2f} ms, moving "
          f"{moves:,} a frame {statistics.median(moving):.2f} ms + set_transforms "
          f"{statistics.median(setting):.2f} ms; peak RSS {peak:,.0f} MB")


def views(asset: str, count: int, frames: int, aggregates: bool = True,
          size=(512, 512), passes: bool = False, png: str | None = None,
          scatter: bool = False, sw_lanes: int | None = None) -> None:
    """The grid framed whole, and seen from low over one corner along a diagonal (about two
    thirds of the instances in the frustum): frame medians, GPU passes, what was drawn (covered
    pixels: those with depth, proxies' included, in the first frame and in one after the
    measured ones; the lists' overflow flags). `aggregates` False: no aggregate proxies; `png`:
    a folder for the frame after the measured ones. `scatter`: instead of the grid, instances
    scaled 2-5 times and turned at random, scattered at random over hills whose side grows
    with the square root of the count (6.4 unscaled bounding radii apart on average: the demo
    rock at 65,536 over 3,000 units), framed and seen from low over a corner
    (`add_instances`). `sw_lanes`: `RenderOptions.sw_lanes` (SW raster lanes a cluster)."""
    from renderer.bench.measure import measure
    from renderer.camera import Camera
    from renderer.renderer import Renderer

    if aggregates and sw_lanes is None:
        r = Renderer(*size)
    else:  # (RenderOptions.aggregates is newer than the checkouts compared against)
        from renderer.options import RenderOptions

        r = Renderer(*size, options=RenderOptions(aggregates=aggregates, sw_lanes=sw_lanes))
    a = r.load(asset)
    s = r.scene.assets[a].bounds_sphere
    t = time.perf_counter()
    if scatter:  # over hills, 6.4 bounding radii apart on average
        from renderer.instances import as_matrices

        rng = np.random.default_rng(5)
        side = 3.2 * float(s[3]) * np.sqrt(count)  # half the field's side
        x, z = rng.uniform(-side, side, count), rng.uniform(-side, side, count)
        y = 0.08 * side * np.sin(x / (0.17 * side)) * np.cos(z / (0.21 * side))
        yaw, k = rng.uniform(0, 2 * np.pi, count), rng.uniform(2, 5, count)
        q = np.zeros((count, 3, 4), np.float32)
        q[:, 0, 0], q[:, 0, 2], q[:, 1, 1] = np.cos(yaw) * k, np.sin(yaw) * k, k
        q[:, 2, 0], q[:, 2, 2] = -np.sin(yaw) * k, np.cos(yaw) * k
        q[:, :, 3] = np.stack([x, y, z], axis=1)
        r.add_instances(a, as_matrices(q))
        low = Camera(eye=(-1.07 * side, 0.11 * side, -1.07 * side), target=(0, 0, 0),
                     near=0.01 * float(s[3]))
        cams = (("framed", Camera.framing(*r.bounds(), direction=(0.3, 0.6, 1.0))),
                ("low", low))
    else:
        r.add_grid(a, count)
        sp = 2.4 * float(s[3])
        half = (int(np.ceil(np.sqrt(count))) - 1) / 2 * sp
        corner = Camera(eye=(-half, 3 * float(s[3]), -half - 2 * sp),
                        target=(-0.7 * half, 0, -0.4 * half), near=0.01 * float(s[3]))
        cams = (("framed", Camera.framing(*r.bounds())), ("corner", corner))
    place = time.perf_counter() - t
    for name, cam in cams:
        t = time.perf_counter()
        res = r.render(cam)  # the first frame: the layout, the proxies, the upload
        first = time.perf_counter() - t
        st = res.stats
        cov = int((res.depth > 0).sum())
        # the same camera `frames` times, after 1 frame (and on a GPU half a second under load,
        # which brings its clock up: renderer.bench.measure), each frame waited for
        m = measure(r, [cam] * frames, 1)
        proxies = st.counters.get("proxies_drawn", 0)
        clock = m.get("gpu_clock_mhz")
        print(f"{count:>10,} {name}: {proxies:,} proxies, first frame {1e3 * first:6.0f} ms, "
              f"median {m['frame_ms']['median']:7.2f} ms; GPU {m['gpu_ms']['median']:.3f} ms; "
              f"CPU before submission {m['encode_ms']['median']:.2f} ms; "
              f"visible {st.counters['instances_visible']:,}, triangles {st.triangles:,}, "
              f"covered px {cov:,} ({st.triangles / max(cov, 1):.1f} a pixel)"
              + (f"; SM clock {clock[0]:.0f}-{clock[1]:.0f} MHz" if clock else ""))
        later = r.render(cam)
        print(f"{'':>11}overflow flags: first frame {st.overflow}, measured {m['overflow']}, "
              f"after {later.stats.overflow}; covered px after "
              f"{int((later.depth > 0).sum()):,}; proxied instances "
              f"{later.stats.counters.get('proxied_instances', 0):,}; as boxes "
              f"{later.stats.counters.get('instances_boxed', 0):,}")
        if png:
            Path(png).mkdir(parents=True, exist_ok=True)
            later.save_png(Path(png) / f"{count}_{name}.png")
        if passes:  # GPU ms a pass, medians
            print(f"{'':>11}passes: "
                  + ", ".join(f"{k} {v:.3f}" for k, v in m["gpu_pass_ms"].items()))
    print(f"{'':>11}placed in {1e3 * place:.0f} ms; peak RSS "
          f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:,.0f} MB")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--asset", help="a .tess file (default: a 20,480-triangle sphere, built)")
    ap.add_argument("--counts", type=int, nargs="+", default=[65536, 1_000_000])
    ap.add_argument("--moves", type=int, default=10_000, help="instances moved a frame")
    ap.add_argument("--frames", type=int, default=5)
    ap.add_argument("--views", action="store_true",
                    help="instead: frames framed and low over a corner (add_grid, render only)")
    ap.add_argument("--sw-lanes", type=int,
                    help="--views: SW raster lanes a cluster (RenderOptions.sw_lanes)")
    ap.add_argument("--scatter", action="store_true",
                    help="--views over instances scattered at random over hills, not a grid")
    ap.add_argument("--no-aggregates", action="store_true",
                    help="--views without aggregate proxies (every instance drawn itself)")
    ap.add_argument("--size", default="512x512", help="image size WxH (512x512)")
    ap.add_argument("--passes", action="store_true", help="--views: the GPU ms of each pass")
    ap.add_argument("--png", help="--views: save the frame after the measured ones here")
    args = ap.parse_args()
    size = tuple(int(v) for v in args.size.lower().split("x"))
    with tempfile.TemporaryDirectory() as tmp:
        asset = args.asset or _sphere(Path(tmp))
        for n in args.counts:  # each count in a process of its own: peak memory is its own
            if len(args.counts) > 1:
                import subprocess

                subprocess.run([sys.executable, __file__, "--asset", asset, "--counts", str(n),
                                "--moves", str(args.moves), "--frames", str(args.frames),
                                "--size", args.size, *(["--passes"] if args.passes else []),
                                *(["--png", args.png] if args.png else []),
                                *(["--views"] if args.views else []),
                                *(["--scatter"] if args.scatter else []),
                                *(["--sw-lanes", str(args.sw_lanes)] if args.sw_lanes else []),
                                *(["--no-aggregates"] if args.no_aggregates else [])],
                               check=True)
            elif args.views:
                views(asset, n, args.frames, not args.no_aggregates, size, args.passes, args.png,
                      args.scatter, args.sw_lanes)
            else:
                run(asset, n, args.moves, args.frames, size)


if __name__ == "__main__":
    main()
