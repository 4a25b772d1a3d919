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
    # streaming: pages through a pool of pool_mb (None: all resident); the path is also drawn
    # fully resident for comparison, and a fresh renderer counts the frames a static view takes
    # to converge
    pool_mb: float | None = None
    upload_mb: float = 16.0


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


def path_frames(r, cams: list[Camera], warmup: int) -> tuple[list[float], list]:
    """Draw a camera path after `warmup` frames on its first cameras, each frame waited for:
    (frame ms, submit to its statistics read back; FrameStats) per camera."""
    for k in range(warmup):
        r.submit(cams[k % len(cams)])
        r.stats(wait=True)
    frame_ms, stats = [], []
    for cam in cams:
        t0 = time.perf_counter()
        index = r.submit(cam)
        s = r.stats(wait=True)
        frame_ms.append((time.perf_counter() - t0) * 1e3)
        assert s is not None and s.frame == index
        stats.append(s)
    return frame_ms, stats


def _measure(r, cams: list[Camera], warmup: int) -> dict:
    """Median figures of a camera path (after `warmup` frames on its first cameras)."""
    frame_ms, stats = path_frames(r, cams, warmup)
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


def _streaming_figures(cfg: BenchConfig, r, cams: list[Camera], m: dict, log) -> dict:
    """Streaming figures: what the path uploaded, the same path fully resident, and the frames a
    static close-up of the first instance takes to converge in a fresh renderer."""
    from renderer.frame import Renderer
    from renderer.options import RenderOptions

    st = r.streamer
    tot = st.totals
    out = {"pool_pages": st.slots, "scene_pages": st.page_count,
           "pool_mb": st.slots * st.page_size / 2**20, "uploaded_pages": tot.uploaded,
           "evicted_pages": tot.evicted, "uploaded_mb": tot.bytes_uploaded / 2**20}
    # convergence: frames until a frame's readback leads to no upload (each frame waits: the
    # readback is one frame late, as in a real loop at most a few)
    fresh = Renderer(cfg.width, cfg.height, options=r.options, ctx=r.ctx)
    for a in r.scene.assets:
        fresh.load(a.path)
    for a, w in zip(r.scene.instance_asset, r.scene.instance_world, strict=True):
        fresh.add_instance(a, w)
    # the view: a close-up of the first instance, which wants most of its asset's pages
    a0 = fresh.scene.assets[fresh.scene.instance_asset[0]]
    w0 = np.asarray(fresh.scene.instance_world[0], np.float64)
    sphere = a0.bounds_sphere.astype(np.float64)
    close = Camera.framing((w0 @ np.append(sphere[:3], 1.0))[:3],
                           float(sphere[3]) * float(np.linalg.norm(w0[:3, :3], axis=0).max()))
    t0 = time.perf_counter()
    frames, update_ms = 0, []
    for frames in range(1, 500):
        fresh.submit(close)
        s = fresh.stats(wait=True)
        if s.streaming is not None:
            update_ms.append(s.streaming["update_ms"])
            if s.streaming["uploaded"] == 0 and frames > 1:  # steady
                break
    secs = time.perf_counter() - t0
    ftot = fresh.streamer.totals
    wanted = s.streaming["requested"] if s is not None and s.streaming else 0
    out.update(converge_frames=frames, converge_s=secs, still_wanted=wanted,
               converge_mb=ftot.bytes_uploaded / 2**20,
               upload_mb_per_s=ftot.bytes_uploaded / 2**20 / max(secs, 1e-9),
               update_ms=_median(update_ms),
               # MB per second of the CPU's streaming work (read the requests, choose, copy the
               # pages from the mapped file into the queue)
               stream_mb_per_cpu_s=ftot.bytes_uploaded / 2**20 / max(sum(update_ms) / 1e3, 1e-9))
    # the same path, everything resident
    res = Renderer(cfg.width, cfg.height, options=RenderOptions(**{
        **r.options.__dict__, "streaming": False, "pool_mb": None}), ctx=r.ctx)
    for a in r.scene.assets:
        res.load(a.path)
    for a, w in zip(r.scene.instance_asset, r.scene.instance_world, strict=True):
        res.add_instance(a, w)
    rm = _measure(res, cams, cfg.warmup)
    out["resident_frame_ms"] = rm["frame_ms"]
    out["frame_cost"] = m["frame_ms"] / max(rm["frame_ms"], 1e-9)
    log(f"streaming   pool {out['pool_mb']:.1f} MB = {st.slots} of {st.page_count} pages; the "
        f"path uploaded {out['uploaded_mb']:.1f} MB ({tot.uploaded} pages), evicted "
        f"{tot.evicted}")
    if wanted:
        log(f"  NOTE      the close-up wants more than the pool holds: {wanted} groups still "
            "asked for when the pool stopped changing")
    log(f"  converge  a close-up from nothing resident: {frames} frames, "
        f"{out['converge_mb']:.1f} MB in {secs:.2f} s ({out['upload_mb_per_s']:.0f} MB/s with "
        f"every frame drawn and waited for; the CPU's update + upload {out['update_ms']:.2f} ms "
        f"a frame, {out['stream_mb_per_cpu_s']:.0f} MB per CPU second)")
    log(f"  resident  the same path fully resident: frame {rm['frame_ms']:.2f} ms "
        f"(streaming {m['frame_ms']:.2f} ms, {out['frame_cost']:.2f}x)")
    return out


def run(cfg: BenchConfig, *, log=print) -> dict:
    """Run the benchmark; returns the figures (also printed through `log`)."""
    from renderer.frame import Renderer
    from renderer.options import RenderOptions

    if cfg.scene not in ("orbit", "field"):
        raise ValueError(f"unknown bench scene {cfg.scene!r} (orbit, field)")
    stream = cfg.pool_mb is not None
    opts = RenderOptions(tau=cfg.tau, persistent=cfg.persistent, fallback32=cfg.fallback32,
                         occlusion=cfg.occlusion, streaming=stream, pool_mb=cfg.pool_mb,
                         upload_mb=cfg.upload_mb)
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
    if stream:
        out["streaming"] = _streaming_figures(cfg, r, cams, m, log)
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
        from renderer.oracles.reference import ReferenceRenderer
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
    from renderer.options import TRAVERSALS

    cfg = BenchConfig(path=args.file, instances=args.instances, width=args.size[0],
                      height=args.size[1], frames=args.frames, brute=not args.no_brute,
                      brute_frames=args.brute_frames, tau=args.tau,
                      persistent=TRAVERSALS[args.traversal], fallback32=args.fallback32,
                      occlusion=not args.no_occlusion, scene=args.scene,
                      pool_mb=args.pool_mb, upload_mb=args.upload_mb)
    out = run(cfg)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=2)
    return 0
