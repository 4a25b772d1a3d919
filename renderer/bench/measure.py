"""What both benchmarks measure with: the camera paths, the one function that draws and times a
path (`measure`, per-frame medians and 95th percentiles from the GPU counters and timestamps),
frames drawn with some passes left out, side by side (`staged`: what each part of a frame costs
in wall time, where lavapipe's timestamps undercount), and the brute-force timers
(`brute_force_ms`: every triangle of every instance at full detail through the reference
pipeline, ids only; `brute_force_shaded_ms`: the same lit by the shaded reference, the same
cameras)."""

from __future__ import annotations

import math
import shutil
import statistics
import subprocess
import threading
import time
from contextlib import contextmanager

import numpy as np

from renderer.camera import Camera


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


def stat(values: list[float]) -> dict:
    """{"median", "p95"} of per-frame values (NaN when there are none)."""
    if not values:
        return {"median": float("nan"), "p95": float("nan")}
    v = np.asarray(values, np.float64)
    return {"median": float(statistics.median(values)), "p95": float(np.percentile(v, 95))}


def gpu_memory_mb(r) -> float:
    """Every buffer the renderer holds (the page pool included), in MB."""
    return sum(int(b.size) for b in r.frame.resources.buffers.values()) / 2**20


# After its warm-up frames, a path on a GPU is drawn this long under full load (WARMUP_BURST
# frames in flight, then waited for) before it is measured: a discrete GPU lowers its clock while
# the CPU sets a scene up (an H200 fell from 1,980 to ~400 MHz in the ~3 s it took to place
# 65,536 instances), and frames that are each waited for bring it back only part of the way
# (600-960 MHz; GPU time 1.05-2.14 ms where 0.57 at full clock). Under this load it is back at
# 1,980 MHz (BENCHMARKS.md, "2026-11-26, later"). Not on CPU adapters (no clock to raise; a
# lavapipe frame of 65,536 instances takes a second).
WARMUP_SECONDS = 0.5
WARMUP_BURST = 16


def gpu_clock_mhz(r) -> float | None:
    """The SM clock of the GPU drawing (MHz) where it is an NVIDIA GPU, nvidia-smi is on the
    PATH and sees exactly one GPU; else None. Figures carry the clock they were measured at: it
    follows the load (WARMUP_SECONDS), and a row measured at a fraction of it is not comparable
    with one at full clock."""
    exe = shutil.which("nvidia-smi")
    if exe is None or "nvidia" not in r.ctx.adapter_name.lower():
        return None
    try:
        out = subprocess.run([exe, "--query-gpu=clocks.sm", "--format=csv,noheader,nounits"],
                             capture_output=True, text=True, timeout=5).stdout.split()
        return float(out[0]) if len(out) == 1 else None  # several GPUs: which is ours?
    except (OSError, subprocess.SubprocessError, ValueError):
        return None


def path_frames(r, cams: list[Camera], warmup: int, warmup_seconds: float | None = None
                ) -> tuple[list[float], list, tuple[float, float | None] | None]:
    """Draw a camera path after `warmup` frames on its first cameras (on a GPU adapter, then
    `warmup_seconds` of the last of them under full load: WARMUP_SECONDS unless given), each
    frame waited for: (frame ms, submit to its statistics read back; FrameStats) per camera,
    and the GPU's clock as the frames began and after them (`gpu_clock_mhz`; None where it
    cannot be read)."""
    for k in range(warmup):
        r.submit(cams[k % len(cams)])
        r.stats(wait=True)
    if r.ctx.adapter_type != "CPU":
        seconds = WARMUP_SECONDS if warmup_seconds is None else warmup_seconds
        start = time.perf_counter()
        while time.perf_counter() - start < seconds:
            for _ in range(WARMUP_BURST):
                r.submit(cams[max(warmup - 1, 0) % len(cams)])
            r.stats(wait=True)
    frame_ms, stats = [], []
    clock: list = []  # read beside the frames: a pause to read it would let the clock fall
    reader = threading.Thread(target=lambda: clock.append(gpu_clock_mhz(r)), daemon=True)
    reader.start()
    for cam in cams:
        t0 = time.perf_counter()
        index = r.submit(cam)
        s = r.stats(wait=True)
        frame_ms.append((time.perf_counter() - t0) * 1e3)
        assert s is not None and s.frame == index
        stats.append(s)
    reader.join()
    clocks = (clock[0], gpu_clock_mhz(r)) if clock and clock[0] is not None else None
    return frame_ms, stats, clocks


def measure(r, cams: list[Camera], warmup: int, warmup_seconds: float | None = None) -> dict:
    """Draw a camera path (after `warmup` frames, and on a GPU `warmup_seconds` under load:
    `path_frames`) and summarize it: medians and p95 of the frame
    (submit to its statistics read back), of the CPU's encoding and submission (`cpu_ms`), of
    the work before submission (`encode_ms`: on lavapipe the GPU work itself runs inside
    submission) and of the GPU time (timestamps; per pass: medians); the medians of the GPU
    counters; the scene's size, GPU memory and streaming figures; where it can be read, the GPU's
    clock as the frames began and after them (`gpu_clock_mhz`)."""
    frame_ms, stats, clocks = path_frames(r, cams, warmup, warmup_seconds)
    return summarize(r, cams, frame_ms, stats, clocks)


def measure_interleaved(renderers: list, paths: list[list[Camera]], warmup: int) -> list[dict]:
    """`measure` for several renderers side by side: after `warmup` frames each, frame k of
    every renderer in turn (its own path's camera k), so that a shared, noisy machine slows
    them alike and their ratios hold; one `summarize` each."""
    for r, cams in zip(renderers, paths, strict=True):
        for k in range(warmup):
            r.submit(cams[k % len(cams)])
            r.stats(wait=True)
    frame_ms: list[list[float]] = [[] for _ in renderers]
    stats: list[list] = [[] for _ in renderers]
    for k in range(len(paths[0])):
        for i, (r, cams) in enumerate(zip(renderers, paths, strict=True)):
            t0 = time.perf_counter()
            index = r.submit(cams[k])
            s = r.stats(wait=True)
            frame_ms[i].append((time.perf_counter() - t0) * 1e3)
            assert s is not None and s.frame == index
            stats[i].append(s)
    return [summarize(r, cams, f, st, None)
            for r, cams, f, st in zip(renderers, paths, frame_ms, stats, strict=True)]


def summarize(r, cams: list[Camera], frame_ms: list[float], stats: list, clocks) -> dict:
    """What `measure` reports of a path's frames (`path_frames`)."""
    passes = list(dict.fromkeys(p for s in stats for p in s.gpu_ms))
    out = {
        "frames": len(cams),
        "frame_ms": stat(frame_ms),
        "cpu_ms": stat([s.cpu_ms for s in stats]),
        "encode_ms": stat([s.encode_ms for s in stats]),
        "gpu_ms": stat([s.gpu_total_ms for s in stats]),
        "gpu_pass_ms": {p: stat([s.gpu_ms.get(p, 0.0) for s in stats])["median"]
                        for p in passes},
        "clusters": int(statistics.median(s.clusters for s in stats)),
        "triangles": int(statistics.median(s.triangles for s in stats)),
        "counters": {k: int(statistics.median(s.counters[k] for s in stats))
                     for k in stats[0].counters},
        "scene_triangles": r.scene.triangle_count(),
        "instances": r.scene.instance_count,
        "gpu_memory_mb": gpu_memory_mb(r),
        "overflow": int(max(s.overflow for s in stats)),
    }
    if clocks is not None:
        out["gpu_clock_mhz"] = list(clocks)
    streamed = [s.streaming for s in stats if s.streaming]
    if streamed:
        out["streaming"] = {
            "pool_pages": streamed[-1]["pool_pages"],
            "pool_use": float(np.mean([x["pool_use"] for x in streamed])),
            "uploaded_mb_per_frame": stat([x["mb_uploaded"] for x in streamed]),
            "evicted_per_frame": stat([x["evicted"] for x in streamed]),
            "requested_per_frame": stat([x["requested"] for x in streamed]),
        }
    return out


def pass_alone_ms(r, encode, repeats: int = 9) -> float:
    """Median ms of one pass alone, after a frame has filled what it reads: `encode(frame,
    encoder)` (e.g. `r.frame.resolve.encode`) recorded, submitted and waited for `repeats` times.
    lavapipe's timestamps around a pass can read near zero, and a frame's time mixes in culling
    and rasterization; this is the pass's own wall time."""
    d = r.device
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        enc = d.create_command_encoder(label="bench.pass_alone")
        f = r.frame.resources
        f.labels = []
        encode(f, enc)
        d.queue.submit([enc.finish()])
        d.queue.read_buffer(f.buffers["state"], 0, 4)  # waits for the queue
        times.append(time.perf_counter() - t)
    return 1e3 * statistics.median(times)


def brute_force_ms(ctx, asset, worlds, cams: list[Camera], size: tuple[int, int],
                   frames: int) -> list[float]:
    """Brute force: every triangle of every instance (`worlds`, (k, 4, 4)) at full detail, the
    reference pipeline (instanced draws, back faces culled), at `frames` cameras spread over the
    path after one warm-up draw (pipelines, upload); ms of each frame."""
    from renderer.oracles.reference import ReferenceRenderer
    from renderer.scene import full_detail_mesh

    ref = ReferenceRenderer(ctx, *size)
    pos, tris = full_detail_mesh(asset)
    mesh = ref.add_mesh(pos, tris, label="bench.full_detail")
    inst = [(mesh, w) for w in worlds]
    ref.render_timed(cams[0].view_proj(*size), inst[:1])  # pipelines, upload
    picks = np.linspace(0, len(cams) - 1, max(1, frames)).round().astype(int)
    return [1e3 * ref.render_timed(cams[k].view_proj(*size), inst) for k in picks]


# ------------------------------------------------------------------------ parts of a frame

# The parts of a frame, in the order `Frame.submit` records them (docs/ARCHITECTURE.md
# "Runtime"): each a name and the passes (attributes of `Renderer.frame`) it adds; "occlusion"
# adds the HZB and the post pass (`Frame.occlusion`). A frame of the parts up to one of them
# leaves the later ones out (`without`). "velocity" (the depth targets, drawn when something
# moved) and "shading" (resolve, the BasePass) are what brute force's ids-only frame does not do.
PARTS = (("overhead", ()), ("culling", ("block_cull", "instance_cull", "cull")),
         ("raster", ("raster_sw", "raster_hw")), ("occlusion", ()),
         ("velocity", ("depth_targets",)), ("shading", ("resolve",)))
# the passes whose timestamps are the culling and rasterization of a frame (the visibility
# buffer), as `FrameStats.gpu_ms` labels them
VISIBILITY_LABELS = ("block_cull", "instance_cull", "cull", "raster_sw", "raster_hw", "hzb",
                     "post_cull", "post_raster_sw", "post_raster_hw", "raster_all_args",
                     "raster_sw.ids", "raster_hw.ids", "hzb_next")


@contextmanager
def without(r, passes: tuple[str, ...] = (), *, occlusion: bool = True):
    """Frames of `r` recorded without `passes` (their `encode` replaced by nothing) and, with
    `occlusion` False, without the HZB and post pass; as configured again after. What the
    passes left out would have written stays as the last full frame left it: the timing is the
    point, not the picture. The HZB of an earlier frame stays valid for the next full frame (it
    carries its own camera)."""
    f = r.frame
    saved = {name: getattr(f, name).encode for name in passes}
    was = f.occlusion
    try:
        for name in passes:
            getattr(f, name).encode = lambda frame, encoder, *a, **k: None
        f.occlusion = was and occlusion
        yield r
    finally:
        for name, encode in saved.items():
            getattr(f, name).encode = encode
        f.occlusion = was


def part_options(upto: str) -> dict:
    """`without`'s arguments for a frame of the PARTS up to `upto` (included)."""
    names = [n for n, _ in PARTS]
    later = PARTS[names.index(upto) + 1:]
    return {"passes": tuple(p for _, ps in later for p in ps),
            "occlusion": all(n != "occlusion" for n, _ in later)}


def staged(r, cams: list[Camera], variants: dict[str, dict], warmup: int) -> dict[str, dict]:
    """Frames of `r` in several variants (name -> `without`'s arguments), side by side: after
    `warmup` frames of each, frame k drawn in every variant in turn, each frame waited for, so
    that a shared, noisy machine slows them alike. Per variant: the frame, the CPU's work before
    submission (`encode_ms`), submission (`submit_ms`: on lavapipe the GPU work runs inside
    it), the wait for the statistics after it (`readback_ms`), each {"median", "p95"}; the
    timestamps' sum (`gpu_ms`) and that of the visibility passes (`visibility_gpu_ms`)."""
    rows: dict[str, dict[str, list[float]]] = {
        v: {k: [] for k in ("frame", "encode", "submit", "readback", "gpu", "vis_gpu")}
        for v in variants}
    for k in range(warmup):
        for opts in variants.values():
            with without(r, **opts):
                r.submit(cams[k % len(cams)])
                r.stats(wait=True)
    n = len(cams)
    for k in range(n):
        # variant i draws camera k + i: every frame moves from the one before (as a path's
        # frames do: the velocity pass runs), and each variant draws the whole path
        for i, (v, opts) in enumerate(variants.items()):
            with without(r, **opts):
                t0 = time.perf_counter()
                index = r.submit(cams[(k + i) % n])
                s = r.stats(wait=True)
                ms = (time.perf_counter() - t0) * 1e3
            assert s is not None and s.frame == index
            row = rows[v]
            row["frame"].append(ms)
            row["encode"].append(s.encode_ms)
            row["submit"].append(s.cpu_ms - s.encode_ms)
            row["readback"].append(ms - s.cpu_ms)
            row["gpu"].append(s.gpu_total_ms)
            row["vis_gpu"].append(sum(t for p, t in s.gpu_ms.items() if p in VISIBILITY_LABELS))
    return {v: {"frame_ms": stat(x["frame"]), "encode_ms": stat(x["encode"]),
                "submit_ms": stat(x["submit"]), "readback_ms": stat(x["readback"]),
                "gpu_ms": stat(x["gpu"]), "visibility_gpu_ms": stat(x["vis_gpu"])}
            for v, x in rows.items()}


def frame_parts(r, cams: list[Camera], warmup: int) -> dict:
    """Where a frame's wall time goes: frames of the PARTS up to each in turn (`staged`), and
    each part's cost, the difference of the medians of consecutive ones (`part_ms`; "overhead"
    is the frame with no pass: the uniforms, clears, readback copies, submission and the wait
    for the statistics). A frame's timestamps on lavapipe add up to a fraction of its time
    (BENCHMARKS.md "Lavapipe's timestamps undercount"): this is the wall time."""
    frames = staged(r, cams, {n: part_options(n) for n, _ in PARTS}, warmup)
    part_ms, before = {}, 0.0
    for n, _ in PARTS:
        now = frames[n]["frame_ms"]["median"]
        part_ms[n] = now - before
        before = now
    return {"frames": frames, "part_ms": part_ms}


def shaded_brute_force(ctx, asset, size: tuple[int, int]):
    """The shaded reference (`renderer.oracles.shaded_reference`) holding `asset`'s level-0
    triangles as one mesh, smooth normals, the default material: what `brute_force_shaded_ms`
    draws. Built once a benchmark (seconds for a million triangles)."""
    from preprocess.load import mesh_from_arrays
    from renderer.oracles.shaded_reference import ShadedReference
    from renderer.scene import full_detail_mesh

    pos, tris = full_detail_mesh(asset)
    return ShadedReference(ctx, *size, mesh_from_arrays(pos, tris, name="bench.full_detail"))


def brute_force_shaded_ms(reference, worlds, cams: list[Camera], size: tuple[int, int],
                          frames: int) -> list[float]:
    """Brute force, shaded: every triangle of every instance (`worlds`, (k, 4, 4)) at full detail
    lit by the shaded reference (`shaded_brute_force`: the GPU's rasterizer, the same BRDF and
    sun as resolve, `shaders/shading.wgsl`, forward: a pixel drawn over is shaded again), at
    `frames` cameras spread over the path after one warm-up draw; ms of each frame. Against
    Tessera's whole frame, as `brute_force_ms` (ids only) is against its visibility part."""
    def draw(cam: Camera) -> float:
        return 1e3 * reference.render_timed(cam.matrices(*size), cam.eye, worlds)

    draw(cams[0])  # pipelines, upload
    picks = np.linspace(0, len(cams) - 1, max(1, frames)).round().astype(int)
    return [draw(cams[k]) for k in picks]
