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
import statistics
import time
from dataclasses import dataclass

import numpy as np

from renderer.bench.measure import brute_force_ms, camera_path, field_path, measure
from renderer.camera import Camera
from renderer.options import DEFAULT_SUN


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
    aggregates: bool = True  # aggregate proxies (RenderOptions.aggregates)
    # "orbit": a quarter orbit over the grid; "field": a dense field (instances overlapping) seen
    # from ground level, creeping forward, drawn with occlusion culling on and then off
    scene: str = "orbit"
    # streaming: pages through a pool of pool_mb (None: all resident); the path is also drawn
    # fully resident for comparison, and a fresh renderer counts the frames a static view takes
    # to converge
    pool_mb: float | None = None
    upload_mb: float = 16.0
    # the sun (RenderOptions): shadows drawn, its direction, the shadow pool
    shadows: bool = True
    sun: tuple[float, float] = DEFAULT_SUN
    shadow_pool_mb: float = 64.0



def _copy_instances(src, dst) -> None:
    """The instances of renderer `src` added to renderer `dst` (the same assets, in order)."""
    rows, assets = src.scene.store.rows, src.scene.instance_asset
    for a in np.unique(assets):
        dst.add_instances(int(a), rows[assets == a])

def _median(values: list[float]) -> float:
    return float(statistics.median(values)) if values else float("nan")


def _log_measure(log, name: str, m: dict) -> None:
    c = m["counters"]
    log(f"{name:<11} frame {m['frame_ms']['median']:.2f} ms (median of {m['frames']}), CPU "
        f"{m['cpu_ms']['median']:.2f} ms, GPU {m['gpu_ms']['median']:.2f} ms"
        + (f" (GPU clock {m['gpu_clock_mhz'][0]:.0f} MHz)" if m.get("gpu_clock_mhz") else ""))
    if m["gpu_pass_ms"]:
        log("  GPU ms    " + ", ".join(f"{p} {v:.2f}" for p, v in m["gpu_pass_ms"].items()))
    log(f"  drawn     {m['clusters']:,} clusters, {m['triangles']:,} triangles "
        f"(SW {c['sw_triangles']:,}, HW {c['hw_triangles']:,}); "
        f"{c['nodes_visited']:,} BVH nodes visited")
    if c["occluded_instances"] or c["occluded_nodes"] or c["occluded_clusters"]:
        log(f"  occlusion main pass deferred {c['occluded_instances']:,} instances, "
            f"{c['occluded_nodes']:,} nodes, {c['occluded_clusters']:,} clusters; post pass drew "
            f"{c['post_clusters']:,} clusters, culled {c['post_rejected']:,} candidates")
    if m["overflow"]:
        log(f"  WARNING   a list overflowed (flags {m['overflow']}): raise queue_capacity / "
            "visible_capacity / occluded_capacity")


def _streaming_figures(cfg: BenchConfig, r, cams: list[Camera], m: dict, log) -> dict:
    """Streaming figures: what the path uploaded, the same path fully resident, and the frames a
    static close-up of the first instance takes to converge in a fresh renderer."""
    from renderer.renderer import Renderer
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
    _copy_instances(r, fresh)
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
    _copy_instances(r, res)
    rm = measure(res, cams, cfg.warmup)
    out["resident_frame_ms"] = rm["frame_ms"]["median"]
    out["frame_cost"] = m["frame_ms"]["median"] / max(rm["frame_ms"]["median"], 1e-9)
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
    log(f"  resident  the same path fully resident: frame {rm['frame_ms']['median']:.2f} ms "
        f"(streaming {m['frame_ms']['median']:.2f} ms, {out['frame_cost']:.2f}x)")
    return out


def run(cfg: BenchConfig, *, log=print) -> dict:
    """Run the benchmark; returns the figures (also printed through `log`)."""
    from renderer.renderer import Renderer
    from renderer.options import RenderOptions

    if cfg.scene not in ("orbit", "field"):
        raise ValueError(f"unknown bench scene {cfg.scene!r} (orbit, field)")
    stream = cfg.pool_mb is not None
    opts = RenderOptions(tau=cfg.tau, persistent=cfg.persistent, fallback32=cfg.fallback32,
                         occlusion=cfg.occlusion, aggregates=cfg.aggregates,
                         streaming=stream, pool_mb=cfg.pool_mb,
                         upload_mb=cfg.upload_mb, shadows=cfg.shadows, sun=cfg.sun,
                         shadow_pool_mb=cfg.shadow_pool_mb)
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
    # with streaming, no warm-up under load: every frame streams pages in, and what the path
    # uploads is what is measured
    m = measure(r, cams, cfg.warmup, **({"warmup_seconds": 0.0} if stream else {}))
    out.update(m)
    out["occlusion"] = r.occlusion
    _log_measure(log, "tessera", m)
    if stream:
        out["streaming"] = _streaming_figures(cfg, r, cams, m, log)
    if cfg.scene == "field":  # the same path without occlusion culling, side by side
        r.set_occlusion(not r.occlusion)
        other = measure(r, cams, cfg.warmup)
        name = "occlusion " + ("on" if r.occlusion else "off")
        _log_measure(log, name, other)
        on, off = (other, m) if r.occlusion else (m, other)
        out["occlusion_on"], out["occlusion_off"] = on, off
        out["occlusion_triangle_ratio"] = off["triangles"] / max(on["triangles"], 1)
        out["occlusion_frame_ratio"] = (off["frame_ms"]["median"]
                                        / max(on["frame_ms"]["median"], 1e-9))
        log(f"occlusion   {out['occlusion_triangle_ratio']:.1f}x fewer triangles, frame "
            f"{out['occlusion_frame_ratio']:.2f}x faster (medians, same run)")
    if cfg.brute:
        brute = brute_force_ms(r.ctx, a, r.scene.instance_world, cams, (cfg.width, cfg.height),
                               cfg.brute_frames)
        out["brute_frame_ms"] = _median(brute)
        out["brute_frames"] = len(brute)
        out["speedup"] = out["brute_frame_ms"] / out["frame_ms"]["median"]
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
                      occlusion=not args.no_occlusion, aggregates=not args.no_aggregates,
                      scene=args.scene,
                      pool_mb=args.pool_mb, upload_mb=args.upload_mb,
                      shadows=not args.no_shadows, sun=args.sun,
                      shadow_pool_mb=args.shadow_pool_mb)
    out = run(cfg)
    if args.json:
        from preprocess.tess.atomic import write_atomically

        write_atomically(args.json, lambda f: f.write(json.dumps(out, indent=2).encode()))
    return 0
