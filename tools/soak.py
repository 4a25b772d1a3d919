"""Soak: a long streaming run whose pool is smaller than the camera path's working set, so pages
are requested, uploaded and evicted all along; prints whether memory stays flat.

A grid of rocks (each instance its own copy of the asset's pages, so the scene's pages are many
times the pool), a camera that flies along the rows and back at varying height and distance,
`--frames` frames (1,500 by default), each waited for; the sun's shadows on, with `--lights` a
point light's and a spot's too. Every 50 frames it records the process's
resident memory (RSS, from /proc), the Python heap's allocated blocks, the renderer's GPU buffers
(bytes and count) and the streaming totals. At the end: the figures at frame 100 and at the end,
the growth, the pages uploaded and evicted, and a verdict. Exit status 1 when the anonymous RSS
(the heap, not the mapped file) grew by more than --max-growth-mb after the warm-up, when the GPU
buffers changed, or when nothing was evicted (the run did not test what it is for).

    python tools/soak.py    # 1,500 frames, 320x240, 16 rocks, pool: roots + 1/4 of a rock
    python tools/soak.py --frames 300 --json soak.json
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # this checkout, not the installed one

from renderer.camera import Camera


def rss_mb() -> tuple[float, float]:
    """Resident memory of this process in MB: (anonymous, file-backed), from /proc (zeros
    elsewhere). The file-backed part grows while the mapped .tess pages are first read (bounded
    by the files' size); the anonymous part is what a leak would grow."""
    try:
        fields = dict(line.split(":", 1) for line in
                      Path("/proc/self/status").read_text().splitlines() if ":" in line)
        kb = [int(fields[k].split()[0]) for k in ("RssAnon", "RssFile")]
    except (OSError, KeyError, ValueError):
        return 0.0, 0.0
    return kb[0] / 1024, kb[1] / 1024


def flight(frames: int, spacing: float, side: int, radius: float) -> list[Camera]:
    """Down the rows and back, low over the rocks, swinging in height and sideways, so that the
    set of near (detailed) rocks changes every few frames."""
    extent = (side - 1) / 2 * spacing
    cams = []
    for k in range(frames):
        t = k / max(frames - 1, 1)
        z = extent * math.cos(2 * math.pi * 2 * t)  # two passes down and back
        x = extent * 0.8 * math.sin(2 * math.pi * 5 * t)
        y = radius * (0.6 + 1.5 * (0.5 + 0.5 * math.sin(2 * math.pi * 3 * t)))
        eye = np.array([x, y, z + 1.2 * radius])
        cams.append(Camera(eye=eye, target=np.array([x * 0.5, 0.0, z - 2.0 * radius]),
                           near=radius * 1e-3))
    return cams


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--frames", type=int, default=1500)
    p.add_argument("--size", default="320x240", help="image size WxH")
    p.add_argument("--rocks", type=int, default=16, help="instances, each with its own pages")
    p.add_argument("--triangles", type=int, default=300_000, help="triangles of the rock")
    p.add_argument("--pool-fraction", type=float, default=0.25,
                   help="pool pages besides the root pages, as a fraction of ONE rock's pages "
                        "(default 0.25)")
    p.add_argument("--max-growth-mb", type=float, default=32.0,
                   help="RSS growth after frame 100 that fails the soak (default 32)")
    p.add_argument("--lights", action="store_true",
                   help="add a point light and a spot over the rocks (their shadow maps too)")
    p.add_argument("--json", help="write the samples and the verdict to this file")
    return p


def rocks(args: argparse.Namespace, w: int, h: int):
    """(the renderer of the grid of rocks, streaming through a pool of roots + a fraction of one
    rock; the camera path; the pool's pages; one rock's pages)."""
    from assets import builtin_mesh
    from preprocess.build import build_file
    from renderer.options import RenderOptions
    from renderer.renderer import Renderer
    from renderer.scene import open_asset

    folder = Path(tempfile.mkdtemp(prefix="tessera-soak-"))
    path = folder / "rock.tess"
    build_file(builtin_mesh("rock", args.triangles), path)
    rock = open_asset(path)
    rock_pages = rock.page_count
    # every rock's root pages stay resident; the rest of the pool is a fraction of one rock
    pool = rock.file.root_page_count * args.rocks + max(int(rock_pages * args.pool_fraction), 4)
    r = Renderer(w, h, options=RenderOptions(timestamps=False, streaming=True, pool_pages=pool))
    side = math.ceil(math.sqrt(args.rocks))
    sphere = None
    for k in range(args.rocks):  # one asset per rock: the scene's pages are rocks x pages
        a = r.load(path)
        sphere = r.scene.assets[a].bounds_sphere.astype(np.float64)
        spacing = 3.0 * float(sphere[3])
        world = np.eye(4)
        world[:3, 3] = [(k % side - (side - 1) / 2) * spacing, 0.0,
                        (k // side - (side - 1) / 2) * spacing]
        r.add_instance(a, world)
    assert sphere is not None
    if args.lights:
        from renderer.bench.suite import demo_lamps

        r.set_lights(demo_lamps(*r.bounds()))
    cams = flight(args.frames, 3.0 * float(sphere[3]), side, float(sphere[3]))
    return r, cams, pool, rock_pages


def fly(r, cams: list[Camera]) -> tuple[list[dict], list[float]]:
    """Every frame of the path, each waited for: (a sample of the memory, the GPU buffers and
    the streaming totals every 50 frames and at the last, each frame's ms)."""
    import tracemalloc

    from renderer.bench.measure import gpu_memory_mb

    tracemalloc.start()
    samples = []
    buffers0 = None
    t0 = time.perf_counter()
    frame_ms = []
    for k, cam in enumerate(cams):
        t = time.perf_counter()
        r.submit(cam)
        s = r.stats(wait=True)
        frame_ms.append((time.perf_counter() - t) * 1e3)
        if s is not None and s.overflow:
            print(f"soak: frame {k}: a list overflowed (flags {s.overflow})", file=sys.stderr)
        if k % 50 == 0 or k == len(cams) - 1:
            tot = r.streamer.totals
            buffers = sorted((name, int(b.size)) for name, b in r.frame.resources.buffers.items())
            buffers0 = buffers0 or buffers
            samples.append({
                "frame": k, "rss_mb": rss_mb()[0], "rss_file_mb": rss_mb()[1],
                "python_mb": tracemalloc.get_traced_memory()[0] / 2**20,
                "gpu_mb": gpu_memory_mb(r), "gpu_buffers": len(buffers),
                "same_buffers": buffers == buffers0, "uploaded": tot.uploaded,
                "evicted": tot.evicted, "seconds": time.perf_counter() - t0})
    tracemalloc.stop()
    return samples, frame_ms


def verdict_of(args: argparse.Namespace, samples: list[dict], frame_ms: list[float],
               size: tuple[int, int], pool: int, rock_pages: int) -> dict:
    """The samples printed (ten of them), the growth after the warm-up, and the verdict, its
    `problems` listed."""
    base = next(x for x in samples if x["frame"] >= 100) if len(samples) > 2 else samples[0]
    last = samples[-1]
    growth = last["rss_mb"] - base["rss_mb"]
    print(f"{'frame':>6} {'anon MB':>8} {'file MB':>8} {'Python MB':>10} {'GPU MB':>8} "
          f"{'uploaded':>9} {'evicted':>8}")
    for x in samples[:: max(len(samples) // 10, 1)] + ([last] if len(samples) > 10 else []):
        print(f"{x['frame']:>6} {x['rss_mb']:>8.1f} {x['rss_file_mb']:>8.1f} "
              f"{x['python_mb']:>10.2f} {x['gpu_mb']:>8.1f} {x['uploaded']:>9,} {x['evicted']:>8,}")
    verdict = {
        "frames": args.frames, "size": list(size), "rocks": args.rocks, "pool_pages": pool,
        "scene_pages": args.rocks * rock_pages, "frame_ms_median": statistics.median(frame_ms),
        "rss_growth_mb": growth, "python_growth_mb": last["python_mb"] - base["python_mb"],
        "gpu_buffers_unchanged": all(x["same_buffers"] for x in samples),
        "uploaded": last["uploaded"], "evicted": last["evicted"],
    }
    print(f"soak: anonymous RSS {base['rss_mb']:.1f} MB at frame {base['frame']} -> "
          f"{last['rss_mb']:.1f} MB at frame {last['frame']} ({growth:+.1f} MB); Python heap "
          f"{verdict['python_growth_mb']:+.2f} MB; GPU buffers "
          f"{'unchanged' if verdict['gpu_buffers_unchanged'] else 'CHANGED'} "
          f"({last['gpu_mb']:.1f} MB); {last['uploaded']:,} pages uploaded, {last['evicted']:,} "
          f"evicted; frame {verdict['frame_ms_median']:.1f} ms median")
    problems = []
    if growth > args.max_growth_mb:
        problems.append(f"RSS grew {growth:.1f} MB (limit {args.max_growth_mb:g})")
    if not verdict["gpu_buffers_unchanged"]:
        problems.append("the GPU buffers changed")
    if last["evicted"] == 0:
        problems.append("nothing was evicted: the pool held the working set")
    verdict["problems"] = problems
    return verdict


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    w, h = (int(v) for v in args.size.lower().split("x"))
    r, cams, pool, rock_pages = rocks(args, w, h)
    print(f"soak: {args.frames} frames at {w}x{h}; {args.rocks} rocks x {rock_pages} pages = "
          f"{args.rocks * rock_pages} pages through a pool of {pool} "
          f"({pool * r.scene.assets[0].page_size / 2**20:.1f} MB)", flush=True)
    samples, frame_ms = fly(r, cams)
    verdict = verdict_of(args, samples, frame_ms, (w, h), pool, rock_pages)
    if args.json:
        Path(args.json).write_text(json.dumps({"samples": samples, "verdict": verdict}, indent=1))
    problems = verdict["problems"]
    print("soak: " + ("; ".join(problems) if problems else "flat"))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
