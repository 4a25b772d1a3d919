"""What both benchmarks measure with: the camera paths, the one function that draws and times a
path (`measure`, per-frame medians and 95th percentiles from the GPU counters and timestamps) and
the one brute-force timer (`brute_force_ms`: every triangle of every instance at full detail
through the reference pipeline, the same cameras)."""

from __future__ import annotations

import math
import shutil
import statistics
import subprocess
import threading
import time

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
