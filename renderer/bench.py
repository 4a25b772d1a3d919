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
    occlusion: bool = True
    # "orbit": a quarter orbit over the grid; "field": a dense field (instances overlapping) seen
    # from ground level, creeping forward, drawn with occlusion culling on and then off
    scene: str = "orbit"


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


def field_path(box: np.ndarray, count: int, frames: int) -> tuple[float, list[Camera]]:
    """The "field" scene: grid spacing (60% of the asset's box width: neighbours overlap) and
    cameras at the height of the boxes' centre, from 0.75 box widths before the first row,
    creeping forward along the rows by a quarter box width in all, looking along the field."""
    lo, hi = np.asarray(box[:3], np.float64), np.asarray(box[3:], np.float64)
    width = float(max(hi[0] - lo[0], hi[2] - lo[2]))
    spacing = 0.6 * width
    side = math.ceil(math.sqrt(count))
    front = (side - 1) / 2 * spacing + 0.5 * width  # the first row's front, on +z
    cams = []
    for k in range(frames):
        z = front + 0.75 * width - 0.25 * width * k / max(frames - 1, 1)
        x = 0.1 * width
        cams.append(Camera(eye=np.array([x, 0.0, z]), target=np.array([x, 0.0, z - 1.0]),
                           near=width * 1e-3))
    return spacing, cams


def _median(values: list[float]) -> float:
    return float(statistics.median(values)) if values else float("nan")


def _measure(r, cams: list[Camera], warmup: int) -> dict:
    """Median figures of a camera path (after `warmup` frames on its first cameras)."""
    for k in range(warmup):
        r.render(cams[k % len(cams)])
    frame_ms, stats = [], []
    for cam in cams:
        t0 = time.perf_counter()
        index = r.submit(cam)
        s = r.stats(wait=True)
        frame_ms.append((time.perf_counter() - t0) * 1e3)
        assert s is not None and s.frame == index
        stats.append(s)
    passes = list(dict.fromkeys(p for s in stats for p in s.gpu_ms))
    counters = stats[0].counters
    return {
        "frames": len(cams),
        "frame_ms": _median(frame_ms),
        "cpu_ms": _median([s.cpu_ms for s in stats]),
        "gpu_ms": {p: _median([s.gpu_ms.get(p, 0.0) for s in stats]) for p in passes},
        "gpu_total_ms": _median([s.gpu_total_ms for s in stats]),
        "clusters": int(_median([s.clusters for s in stats])),
        "triangles": int(_median([s.triangles for s in stats])),
        **{k: int(_median([s.counters[k] for s in stats])) for k in counters},
        "overflow": int(max(s.overflow for s in stats)),
    }


def _log_measure(log, name: str, m: dict) -> None:
    log(f"{name:<11} frame {m['frame_ms']:.2f} ms (median of {m['frames']}), CPU "
        f"{m['cpu_ms']:.2f} ms, GPU {m['gpu_total_ms']:.2f} ms")
    if m["gpu_ms"]:
        log("  GPU ms    " + ", ".join(f"{p} {v:.2f}" for p, v in m["gpu_ms"].items()))
    log(f"  drawn     {m['clusters']:,} clusters, {m['triangles']:,} triangles "
        f"(SW {m['sw_triangles']:,}, HW {m['hw_triangles']:,}); "
        f"{m['nodes_visited']:,} BVH nodes visited")
    if m["occluded_instances"] or m["occluded_nodes"] or m["occluded_clusters"]:
        log(f"  occlusion main pass deferred {m['occluded_instances']:,} instances, "
            f"{m['occluded_nodes']:,} nodes, {m['occluded_clusters']:,} clusters; post pass drew "
            f"{m['post_clusters']:,} clusters, culled {m['post_rejected']:,} candidates")
    if m["overflow"]:
        log(f"  WARNING   a list overflowed (flags {m['overflow']}): raise queue_capacity / "
            "visible_capacity / occluded_capacity")


def run(cfg: BenchConfig, *, log=print) -> dict:
    """Run the benchmark; returns the figures (also printed through `log`)."""
    from renderer.frame import Renderer, RenderOptions

    if cfg.scene not in ("orbit", "field"):
        raise ValueError(f"unknown bench scene {cfg.scene!r} (orbit, field)")
    opts = RenderOptions(tau=cfg.tau, persistent=cfg.persistent, fallback32=cfg.fallback32,
                         occlusion=cfg.occlusion)
    r = Renderer(cfg.width, cfg.height, options=opts)
    asset = r.load(cfg.path)
    a = r.scene.assets[asset]
    if cfg.scene == "field":
        node = a.nodes[0]
        spacing, cams = field_path(np.concatenate([node["box_min"], node["box_max"]]),
                                   cfg.instances, cfg.frames)
        r.add_grid(asset, cfg.instances, spacing=spacing)
    else:
        r.add_grid(asset, cfg.instances)
        center, radius = r.bounds()
        cams = camera_path(center, radius, cfg.frames)
    scene_tris = r.scene.triangle_count()
    log(f"device      {r.ctx.description}")
    log(f"scene       {cfg.instances} x {a.meta.get('name', cfg.path)} = {scene_tris:,} "
        f"triangles ({cfg.scene}), {cfg.width}x{cfg.height}, tau {cfg.tau} px, "
        f"{'persistent' if r.persistent else 'per-level'} traversal"
        f"{', 32-bit fallback' if not r.vis64 else ''}")
    out = {
        "device": r.ctx.description,
        "scene": cfg.scene,
        "traversal": "persistent" if r.persistent else "per-level",
        "instances": cfg.instances,
        "scene_triangles": scene_tris,
        "size": [cfg.width, cfg.height],
    }
    m = _measure(r, cams, cfg.warmup)
    out.update(m)
    out["occlusion"] = r.occlusion
    _log_measure(log, "tessera", m)
    if cfg.scene == "field":  # the same path without occlusion culling, side by side
        r.set_occlusion(not r.occlusion)
        other = _measure(r, cams, cfg.warmup)
        name = "occlusion " + ("on" if r.occlusion else "off")
        _log_measure(log, name, other)
        on, off = (other, m) if r.occlusion else (m, other)
        out["occlusion_on"], out["occlusion_off"] = on, off
        out["occlusion_triangle_ratio"] = off["triangles"] / max(on["triangles"], 1)
        out["occlusion_frame_ratio"] = off["frame_ms"] / max(on["frame_ms"], 1e-9)
        log(f"occlusion   {out['occlusion_triangle_ratio']:.1f}x fewer triangles, frame "
            f"{out['occlusion_frame_ratio']:.2f}x faster (medians, same run)")
    if cfg.brute:
        from renderer.reference import ReferenceRenderer
        from renderer.scene import full_detail_mesh

        ref = ReferenceRenderer(r.ctx, cfg.width, cfg.height)
        pos, tris = full_detail_mesh(a)
        mesh = ref.add_mesh(pos, tris, label="bench.full_detail")
        inst = [(mesh, w) for w in r.scene.instance_world]
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
                      persistent=TRAVERSALS[args.traversal], fallback32=args.fallback32,
                      occlusion=not args.no_occlusion, scene=args.scene)
    out = run(cfg)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=2)
    return 0
