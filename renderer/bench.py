"""`tessera bench`: render a camera path over a grid of instances and print per-frame medians,
beside the same scene drawn brute force (every triangle of every instance through the reference
pipeline), measured in the same run.

Figures (medians over the path's frames):
- frame ms: submit to GPU completion, the frame's whole cost as an application sees it;
- CPU ms: encoding and submitting the frame;
- GPU ms per pass, from timestamp queries (where the adapter has them);
- clusters and triangles drawn (GPU counters), scene triangles at full detail.
The brute-force figure is the median frame ms of the reference renderer over the same cameras
(fewer of them: it is slow), and the speedup is the ratio of the two medians.
"""

from __future__ import annotations

import json
import math
import statistics
import time
from dataclasses import dataclass

import numpy as np

from renderer.camera import Camera


@dataclass
class BenchConfig:
    """What `tessera bench` measures."""

    path: str  # the .tess asset
    instances: int = 256  # grid of instances
    width: int = 512
    height: int = 512
    frames: int = 16  # frames on the camera path (after warm-up)
    warmup: int = 2  # frames drawn first and not counted (pipeline compilation)
    brute_frames: int = 3  # brute-force frames (cameras spread over the path)
    brute: bool = True  # also measure brute force
    tau: float = 1.0
    persistent: bool | None = None  # None: the renderer's choice for the adapter
    fallback32: bool = False


def camera_path(center: np.ndarray, radius: float, frames: int, *, elevation: float = 30.0,
                fov_y: float = 60.0) -> list[Camera]:
    """Cameras orbiting a sphere (centre, radius) at `elevation` degrees, a quarter turn in all,
    at the distance where the sphere fills the view."""
    out = []
    dist = radius / math.sin(math.radians(fov_y) / 2)
    for k in range(frames):
        a = math.radians(20.0 + 90.0 * k / max(frames - 1, 1))
        e = math.radians(elevation)
        d = np.array([math.cos(e) * math.sin(a), math.sin(e), math.cos(e) * math.cos(a)])
        out.append(Camera(eye=center + d * dist, target=center, fov_y=fov_y,
                          near=max(dist * 1e-3, 1e-6)))
    return out


def _median(values: list[float]) -> float:
    return float(statistics.median(values)) if values else float("nan")


def run(cfg: BenchConfig, *, log=print) -> dict:
    """Run the benchmark; returns the figures (also printed through `log`)."""
    from renderer.frame import Renderer, RenderOptions

    opts = RenderOptions(tau=cfg.tau, persistent=cfg.persistent, fallback32=cfg.fallback32)
    r = Renderer(cfg.width, cfg.height, options=opts)
    asset = r.load(cfg.path)
    r.add_grid(asset, cfg.instances)
    center, radius = r.bounds()
    cams = camera_path(center, radius, cfg.frames)
    scene_tris = r.scene.triangle_count()
    log(f"device      {r.ctx.description}")
    log(f"scene       {cfg.instances} x {r.scene.assets[asset].meta.get('name', cfg.path)} = "
        f"{scene_tris:,} triangles, {cfg.width}x{cfg.height}, tau {cfg.tau} px, "
        f"{'persistent' if r.persistent else 'per-level'} traversal"
        f"{', 32-bit fallback' if not r.vis64 else ''}")
    for k in range(cfg.warmup):
        r.render(cams[k % len(cams)])
    frame_ms, stats = [], []
    for cam in cams:
        t0 = time.perf_counter()
        index = r.submit(cam)
        s = r.stats(wait=True)
        frame_ms.append((time.perf_counter() - t0) * 1e3)
        assert s is not None and s.frame == index
        stats.append(s)
    passes = list(stats[0].gpu_ms)
    out = {
        "device": r.ctx.description,
        "traversal": "persistent" if r.persistent else "per-level",
        "instances": cfg.instances,
        "scene_triangles": scene_tris,
        "size": [cfg.width, cfg.height],
        "frames": len(cams),
        "frame_ms": _median(frame_ms),
        "cpu_ms": _median([s.cpu_ms for s in stats]),
        "gpu_ms": {p: _median([s.gpu_ms.get(p, 0.0) for s in stats]) for p in passes},
        "gpu_total_ms": _median([s.gpu_total_ms for s in stats]),
        "clusters": int(_median([s.clusters for s in stats])),
        "triangles": int(_median([s.triangles for s in stats])),
        "sw_triangles": int(_median([s.counters["sw_triangles"] for s in stats])),
        "hw_triangles": int(_median([s.counters["hw_triangles"] for s in stats])),
        "nodes_visited": int(_median([s.counters["nodes_visited"] for s in stats])),
        "overflow": int(max(s.overflow for s in stats)),
    }
    log(f"tessera     frame {out['frame_ms']:.2f} ms (median of {len(cams)}), CPU "
        f"{out['cpu_ms']:.2f} ms, GPU {out['gpu_total_ms']:.2f} ms")
    log("  GPU ms    " + ", ".join(f"{p} {v:.2f}" for p, v in out["gpu_ms"].items()))
    log(f"  drawn     {out['clusters']:,} clusters, {out['triangles']:,} triangles "
        f"(SW {out['sw_triangles']:,}, HW {out['hw_triangles']:,}); "
        f"{out['nodes_visited']:,} BVH nodes visited")
    if out["overflow"]:
        log(f"  WARNING   queue or visible list overflowed (flags {out['overflow']}): raise "
            "queue_capacity / visible_capacity")
    if cfg.brute:
        from renderer.reference import ReferenceRenderer
        from renderer.scene import full_detail_mesh

        ref = ReferenceRenderer(r.ctx, cfg.width, cfg.height)
        pos, tris = full_detail_mesh(r.scene.assets[asset])
        mesh = ref.add_mesh(pos, tris, label="bench.full_detail")
        inst = [(mesh, m) for m in r.scene.instance_world]
        picks = np.linspace(0, len(cams) - 1, max(1, cfg.brute_frames)).round().astype(int)
        ref.render_timed(cams[0].view_proj(cfg.width, cfg.height), inst[:1])  # warm-up
        brute = [1e3 * ref.render_timed(cams[k].view_proj(cfg.width, cfg.height), inst)
                 for k in picks]
        out["brute_frame_ms"] = _median(brute)
        out["brute_frames"] = len(brute)
        out["speedup"] = out["brute_frame_ms"] / out["frame_ms"]
        log(f"brute force frame {out['brute_frame_ms']:.1f} ms (median of {len(brute)}), "
            f"{scene_tris:,} triangles")
        log(f"speedup     {out['speedup']:.1f}x (brute-force frame / tessera frame, same run)")
    return out


def main_args(args) -> int:
    from renderer.cli import TRAVERSALS

    cfg = BenchConfig(path=args.file, instances=args.instances, width=args.size[0],
                      height=args.size[1], frames=args.frames, brute=not args.no_brute,
                      brute_frames=args.brute_frames, tau=args.tau,
                      persistent=TRAVERSALS[args.traversal], fallback32=args.fallback32)
    out = run(cfg)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=2)
    return 0
