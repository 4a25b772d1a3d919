"""The renderer: scene buffers, per-frame resources, and the frame as a flat list of passes.

    instance cull -> BVH/cluster cull (persistent or per level) -> raster args
    -> SW raster + HW raster (64-bit visibility buffer; or depth then ids without 64-bit atomics)
    -> resolve -> statistics and timestamps copied for readback

Statistics are read back without stalling: each frame copies the `state` words and the pass
timestamps into one buffer of a small ring and maps it; `stats()` returns the newest frame whose
mapping is complete (a few frames late). `render()` (the numpy API) waits for its own frame, since
it reads images back anyway.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field

import numpy as np
import wgpu

from renderer.camera import Camera, frustum_planes
from renderer.device import GpuContext, create_context
from renderer.frame_views import DEBUG_VIEWS
from renderer.gpu import buffer, buffer_with
from renderer.layout import (
    ARGS_WORDS,
    FLAG_OCCLUSION,
    FRAME_DTYPE,
    STAT_NAMES,
    STATE,
    STATE_WORDS,
)
from renderer.passes.cull import Cull
from renderer.passes.hzb import HZB, hzb_levels
from renderer.passes.instance_cull import InstanceCull
from renderer.passes.raster_hw import RasterHW
from renderer.passes.raster_sw import RasterSW
from renderer.passes.resolve import Resolve
from renderer.scene import MAX_PAGES, SLOT_BITS, Scene, SceneError, open_asset
from renderer.streaming import REQUEST_DTYPE

MAX_TIMESTAMPS = 48
SLOT_MASK = (1 << SLOT_BITS) - 1
RING = 4  # readback buffers in flight
# FRAME_DTYPE field -> (first 4-byte word, words)
_FRAME_WORDS = {name: (off // 4, FRAME_DTYPE[name].itemsize // 4)
                for name, (_, off, *_) in FRAME_DTYPE.fields.items()}
_BU = wgpu.BufferUsage


@dataclass(frozen=True)
class RenderOptions:
    """How frames are drawn; every field has a default that suits most scenes."""

    tau: float = 1.0  # LOD threshold: largest projected error allowed, in pixels
    # persistent-thread traversal (True), one dispatch per BVH level (False), or None: persistent
    # on GPUs, per level on CPU adapters (lavapipe), where spinning workgroups lose their time
    # slices to each other under load (BENCHMARKS.md)
    persistent: bool | None = None
    fallback32: bool = False  # force the 32-bit visibility path even with 64-bit atomics
    sw_max_edge: float = 32.0  # clusters whose typical triangle edge is longer (px) go to HW
    queue_capacity: int = 1 << 20  # BVH queue entries (8 bytes each)
    visible_capacity: int = 1 << 21  # visible cluster slots, SW and HW halves (8 bytes each)
    persistent_workgroups: int = 128  # workgroups of the persistent traversal
    # workgroups of 64 lanes per level of the per-level traversal. None: 16 on CPU adapters (a
    # workgroup costs ~6 us there), 1024 on GPUs
    level_workgroups: int | None = None
    # SW raster lanes per cluster and rounds per workgroup (a workgroup draws 128 / lanes * rounds
    # clusters). None: 128 and 1 on GPUs (a workgroup per cluster); 4 and 8 on CPU adapters,
    # where a workgroup costs ~6 us whatever it does, and lanes are SIMD slots that a cluster of
    # a few triangles would leave idle: 3x faster at 1 instance, 13x at 65,536 (BENCHMARKS.md)
    sw_lanes: int | None = None
    sw_rounds: int | None = None
    timestamps: bool = True  # GPU time per pass, where the adapter has timestamp queries
    # two-pass occlusion culling against a hierarchical depth buffer (ARCHITECTURE "Runtime"):
    # the main pass tests against the previous frame's HZB, the post pass re-tests what it hid
    occlusion: bool = True
    occluded_capacity: int = 1 << 20  # deferred nodes and clusters per frame (8 bytes each)
    # streaming (renderer/streaming.py): pages live in a GPU pool of `pool_mb` (default: what the
    # adapter binds in one buffer, at most 1 GiB); only the hierarchy and the root pages are
    # uploaded on load, the rest when culling asks. None: stream only when the scene's pages do not
    # fit the pool; True: always (tests, benchmarks); False: never (an error if they do not fit)
    streaming: bool | None = None
    pool_mb: float | None = None
    pool_pages: int | None = None  # overrides pool_mb (tests)
    upload_mb: float = 16.0  # page uploads per frame, at most
    request_capacity: int = 1 << 14  # page requests read back per frame


def grid_offsets(count: int, spacing: float) -> np.ndarray:
    """(count, 3) float64 offsets of a square grid in the XZ plane, row by row along +x, centred
    on the origin, `spacing` apart (`Renderer.add_grid`, the viewer's instance grid)."""
    side = int(np.ceil(np.sqrt(count)))
    k = np.arange(count)
    out = np.zeros((count, 3))
    out[:, 0] = (k % side - (side - 1) / 2) * spacing
    out[:, 2] = (k // side - (side - 1) / 2) * spacing
    return out


@dataclass
class FrameStats:
    """What one frame did, from the GPU counters (and timestamps where available)."""

    frame: int
    counters: dict[str, int]
    overflow: int  # bit 0: queue full, bit 1: visible list full, bit 2: occluded list full
    gpu_ms: dict[str, float] = field(default_factory=dict)  # per pass
    cpu_ms: float = 0.0  # encoding and submission (lavapipe runs the work inside submission)
    streaming: dict | None = None  # pool use, pages resident/requested/uploaded/evicted, MB
    encode_ms: float = 0.0  # the frame's CPU work before submission: Python, encoding

    @property
    def triangles(self) -> int:
        return self.counters["sw_triangles"] + self.counters["hw_triangles"]

    @property
    def clusters(self) -> int:
        return self.counters["sw_clusters"] + self.counters["hw_clusters"]

    @property
    def gpu_total_ms(self) -> float:
        return float(sum(self.gpu_ms.values()))


@dataclass
class RenderResult:
    """Images of one frame (row 0 at the top) and its statistics."""

    color: np.ndarray  # (h, w, 4) uint8 RGBA
    depth: np.ndarray  # (h, w) float32 NDC depth, reversed Z (near / distance); 0 = background
    normal: np.ndarray  # (h, w, 3) float32 world-space unit normals; 0 = background
    instance: np.ndarray  # (h, w) int64 instance index, -1 = background
    cluster: np.ndarray  # (h, w) int64 cluster index within its asset, -1 = background
    triangle: np.ndarray  # (h, w) int64 triangle index within its cluster, -1 = background
    level: np.ndarray  # (h, w) int64 LOD level of the cluster (0 finest), -1 = background
    hardware: np.ndarray  # (h, w) bool: drawn by the hardware rasterizer
    stats: FrameStats
    near: float = 0.0

    @property
    def coverage(self) -> np.ndarray:
        return self.instance >= 0

    def distance(self) -> np.ndarray:
        """(h, w) float32 distance along the view axis (inf on the background)."""
        with np.errstate(divide="ignore"):
            return np.where(self.depth > 0, self.near / self.depth, np.inf).astype(np.float32)

    def save_png(self, path: str | os.PathLike) -> None:
        """Write the color image as a PNG."""
        write_png(path, self.color)


def write_png(path: str | os.PathLike, rgba: np.ndarray) -> None:
    """(h, w, 4) uint8 -> PNG file."""
    import struct
    import zlib

    h, w = rgba.shape[:2]
    raw = np.concatenate([np.zeros((h, 1), np.uint8), rgba.reshape(h, w * 4)], axis=1)

    def chunk(tag: bytes, data: bytes) -> bytes:
        return (struct.pack(">I", len(data)) + tag + data
                + struct.pack(">I", zlib.crc32(tag + data) & 0xFFFFFFFF))

    png = (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 6, 0, 0, 0))
           + chunk(b"IDAT", zlib.compress(raw.tobytes(), 6)) + chunk(b"IEND", b""))
    with open(path, "wb") as f:
        f.write(png)


class FrameResources:
    """Buffers by binding name, sizes, and the per-frame timestamp slots the passes ask for."""

    def __init__(self, device: wgpu.GPUDevice) -> None:
        self.device = device
        self.buffers: dict[str, wgpu.GPUBuffer] = {}
        self.generation = 0  # bumped whenever a buffer is replaced (bind groups rebuild)
        self.width = self.height = 0
        self.instance_count = 0
        self.max_depth = 0
        self.query_set: wgpu.GPUQuerySet | None = None
        self.labels: list[str] = []
        self.hw_target: wgpu.GPUTextureView | None = None
        self.hzb_levels: list[tuple[int, int]] = []
        self.hzb_offsets = np.zeros(0, np.int64)
        self.slots = 0  # pool slots (pages when nothing streams)

    def timestamps(self, label: str) -> dict | None:
        if self.query_set is None or len(self.labels) * 2 + 2 > MAX_TIMESTAMPS:
            return None
        i = len(self.labels)
        self.labels.append(label)
        return {"query_set": self.query_set, "beginning_of_pass_write_index": 2 * i,
                "end_of_pass_write_index": 2 * i + 1}


class Renderer:
    """Draws `.tess` assets, instanced, with the GPU choosing the clusters every frame.

    >>> r = Renderer(512, 512)
    >>> rock = r.load("out/rock.tess")
    >>> r.add_instance(rock)                     # identity transform
    >>> img = r.render(Camera.framing(*r.bounds()))
    >>> img.save_png("rock.png"); img.stats.triangles
    """

    def __init__(self, width: int = 512, height: int = 512, *,
                 options: RenderOptions | None = None, ctx: GpuContext | None = None) -> None:
        self.options = options or RenderOptions()
        if width < 1 or height < 1 or width > 16384 or height > 16384:
            raise ValueError(f"image size {width}x{height} out of range (1..16384)")
        self.ctx = ctx or create_context(force_fallback32=self.options.fallback32)
        self.device = self.ctx.device
        self.vis64 = self.ctx.int64_atomics and not self.options.fallback32
        self.scene = Scene()
        self.frame = FrameResources(self.device)
        self.frame_index = 0
        self._asset_version = self._instance_version = -1
        # (frame, ring buffer, promise, labels, cpu ms, frozen, encode ms)
        self._pending: list[tuple] = []
        self._free: list[wgpu.GPUBuffer] = []
        self._latest: FrameStats | None = None
        self._culled_gen = -1  # resources generation of the last culled frame (freeze_culling)
        self._uniform_key: tuple | None = None  # what _uniform_static was made for
        self._uniform_static = np.zeros(1, FRAME_DTYPE)
        self._last_view: tuple[np.ndarray, np.ndarray] | None = None
        self.streamer = None  # a PageStreamer while the scene streams
        self._ring_size = 0
        self._frozen_last = False
        d = self.device
        self.instance_cull = InstanceCull(d)
        cpu = self.ctx.adapter_type == "CPU"
        self.persistent = (self.options.persistent if self.options.persistent is not None
                           else not cpu)
        self.raster_sw = RasterSW(
            d, vis64=self.vis64,
            lanes=self.options.sw_lanes or (4 if cpu else 128),
            rounds=self.options.sw_rounds or (8 if cpu else 1))
        self.cull = Cull(d, persistent=self.persistent,
                         workgroups=self.options.persistent_workgroups,
                         level_workgroups=self.options.level_workgroups or (16 if cpu else 1024),
                         sw_per_workgroup=self.raster_sw.clusters_per_workgroup)
        self.raster_hw = RasterHW(d, vis64=self.vis64)
        self.resolve = Resolve(d, vis64=self.vis64)
        self.hzb = HZB(d, vis64=self.vis64)
        self.occlusion = self.options.occlusion
        # the camera and resources generation the HZB was built with (None: no HZB)
        self._hzb_from: tuple[np.ndarray, np.ndarray, int] | None = None
        o = self.options
        f = self.frame
        f.buffers.update({
            "frame": buffer(d, FRAME_DTYPE.itemsize, "frame.uniforms", _BU.UNIFORM | _BU.COPY_DST),
            "state": buffer(d, 4 * len(STATE_WORDS), "frame.state",
                            _BU.STORAGE | _BU.COPY_SRC | _BU.COPY_DST),
            "args": buffer(d, 4 * len(ARGS_WORDS), "frame.args", _BU.STORAGE | _BU.INDIRECT),
            "queue": buffer(d, 8 * o.queue_capacity, "frame.queue", _BU.STORAGE),
            "visible": buffer(d, 8 * o.visible_capacity, "frame.visible",
                              _BU.STORAGE | _BU.COPY_SRC),
            "occluded": buffer(d, 8 * o.occluded_capacity, "frame.occluded", _BU.STORAGE),
        })
        if self.ctx.timestamps and o.timestamps:
            f.query_set = d.create_query_set(type="timestamp", count=MAX_TIMESTAMPS,
                                             label="frame.timestamps")
            f.buffers["timestamps"] = buffer(d, 8 * MAX_TIMESTAMPS, "frame.timestamp_resolve",
                                             _BU.QUERY_RESOLVE | _BU.COPY_SRC)
        self.resize(width, height)

    # ---------------------------------------------------------------- scene

    def load(self, path: str | os.PathLike) -> int:
        """Open a `.tess` asset; returns its index for `add_instance`."""
        return self.scene.add_asset(open_asset(path))

    def clear_scene(self) -> None:
        """Drop every asset and instance (the next frame uploads whatever is added after)."""
        self.scene = Scene()
        self._asset_version = self._instance_version = -1

    def set_occlusion(self, enabled: bool) -> None:
        """Switch two-pass occlusion culling on or off (on: from the next frame, once an HZB
        has been built)."""
        self.occlusion = bool(enabled)
        if not enabled:
            self._hzb_from = None

    def set_traversal(self, persistent: bool) -> None:
        """Switch the BVH traversal between persistent workgroups and one dispatch per level
        (both pipelines are built up front; the cut is the same)."""
        self.persistent = self.cull.persistent = bool(persistent)

    def add_instance(self, asset: int, transform: np.ndarray | None = None) -> int:
        """Place an asset with a (4, 4) object-to-world transform (identity by default)."""
        return self.scene.add_instance(asset, transform)

    def add_grid(self, asset: int, count: int, *, spacing: float | None = None,
                 origin=(0.0, 0.0, 0.0)) -> range:
        """`count` instances of an asset on a square grid in the XZ plane, centred on `origin`
        (the asset's bounding sphere centred on each grid point), `spacing` apart (default:
        1.2 x the asset's diameter)."""
        s = self.scene.assets[asset].bounds_sphere.astype(np.float64)
        spacing = float(spacing or 2.4 * float(s[3]))
        worlds = np.repeat(np.eye(4, dtype=np.float32)[None], count, axis=0)
        worlds[:, :3, 3] = np.asarray(origin, np.float64) - s[:3] + grid_offsets(count, spacing)
        return self.scene.add_instances(asset, worlds)

    def bounds(self) -> tuple[np.ndarray, float]:
        """(center, radius) of a sphere around every instance."""
        if not self.scene.instance_count:
            raise SceneError("the scene has no instance")
        pts, rad = [], []
        for a, m in zip(self.scene.instance_asset, self.scene.instance_world, strict=True):
            s = self.scene.assets[a].bounds_sphere.astype(np.float64)
            pts.append((m.astype(np.float64) @ np.append(s[:3], 1.0))[:3])
            rad.append(s[3] * float(np.linalg.norm(m[:3, :3], axis=0).max()))
        pts_a = np.array(pts)
        lo = (pts_a - np.array(rad)[:, None]).min(axis=0)
        hi = (pts_a + np.array(rad)[:, None]).max(axis=0)
        c = (lo + hi) / 2
        return c, float(max(np.linalg.norm(p - c) + r for p, r in zip(pts_a, rad, strict=True)))

    # ---------------------------------------------------------------- resources

    def resize(self, width: int, height: int) -> None:
        d, f = self.device, self.frame
        f.width, f.height = int(width), int(height)
        n = f.width * f.height
        rw = _BU.STORAGE | _BU.COPY_DST | _BU.COPY_SRC
        if self.vis64:
            f.buffers["vis"] = buffer(d, 8 * n, "frame.vis", rw)
        else:
            f.buffers["vis_depth"] = buffer(d, 4 * n, "frame.vis_depth", rw)
            f.buffers["vis_ids"] = buffer(d, 4 * n, "frame.vis_ids", rw)
        f.buffers["color"] = buffer(d, 4 * n, "frame.color", _BU.STORAGE | _BU.COPY_SRC)
        f.buffers["depth_out"] = buffer(d, 4 * n, "frame.depth", _BU.STORAGE | _BU.COPY_SRC)
        f.buffers["normal"] = buffer(d, 16 * n, "frame.normal", _BU.STORAGE | _BU.COPY_SRC)
        f.buffers["ids"] = buffer(d, 16 * n, "frame.ids", _BU.STORAGE | _BU.COPY_SRC)
        f.hzb_levels = hzb_levels(f.width, f.height)
        offsets = np.cumsum([0] + [w * h for w, h in f.hzb_levels])
        f.hzb_offsets = offsets[:-1]
        f.buffers["hzb"] = buffer(d, 4 * int(offsets[-1]), "frame.hzb",
                                  _BU.STORAGE | _BU.COPY_SRC)
        # the HW pass needs an attachment: a placeholder (the visibility buffer is the target)
        f.hw_target = d.create_texture(size=(f.width, f.height, 1), format="depth32float",
                                       usage=wgpu.TextureUsage.RENDER_ATTACHMENT,
                                       label="raster_hw.placeholder").create_view()
        f.generation += 1

    def _upload_scene(self) -> None:
        """The scene's hierarchy, and its pages: all of them, or (streaming) a pool holding the
        root pages, with the residency and effective tables the culling pass reads."""
        from renderer.streaming import PageStreamer

        s, f, o, d = self.scene, self.frame, self.options, self.device
        if not s.assets:
            raise SceneError("the scene has no asset: load a .tess file first")
        page_size = s.assets[0].page_size
        total = sum(a.page_count for a in s.assets)
        groups = sum(len(a.groups) for a in s.assets)
        cap = int(self.ctx.limits.get("max-storage-buffer-binding-size", 1 << 27))
        if o.pool_pages is not None:
            slots = int(o.pool_pages)
        else:
            mb = o.pool_mb if o.pool_mb is not None else min(cap, 1 << 30) / 2**20
            slots = int(mb * 2**20) // page_size
        slots = max(1, min(slots, cap // page_size, MAX_PAGES))
        stream = o.streaming if o.streaming is not None else total > slots
        usage = _BU.STORAGE | _BU.COPY_DST
        self.streamer = None
        if stream:
            budget = max(1, int(o.upload_mb * 2**20) // page_size)
            try:
                self.streamer = PageStreamer(s.assets, slots, budget)
            except ValueError as e:
                raise SceneError(str(e)) from None
            f.buffers.update(s.upload_geometry(d, self.ctx.limits, pages=False))
            f.buffers["pages"] = buffer(d, slots * page_size, "scene.page_pool", usage)
            for slot, page in self.streamer.resident_uploads():
                d.queue.write_buffer(f.buffers["pages"], slot * page_size,
                                     self.streamer.page_bytes(page))
            residency, effective = self.streamer.residency, self.streamer.effective
            self._tables = (self.streamer.residency_version, self.streamer.effective_version)
        else:
            if total > slots and o.streaming is False:
                raise SceneError(f"the scene's {total} pages ({total * page_size / 2**20:.0f} MiB) "
                                 f"do not fit a pool of {slots} pages: turn streaming on")
            f.buffers.update(s.upload_geometry(d, self.ctx.limits))
            slots = total
            residency = np.arange(total, dtype=np.uint32)  # slot = page
            effective = np.ones(groups, np.uint32)
        f.buffers["residency"] = buffer_with(d, residency, "stream.residency",
                                             usage | _BU.COPY_SRC)
        f.buffers["effective"] = buffer_with(d, effective, "stream.effective",
                                             usage | _BU.COPY_SRC)
        f.buffers["request_stamp"] = buffer(d, 4 * groups, "stream.request_stamp", usage)
        f.buffers["requests"] = buffer(d, 8 * o.request_capacity, "stream.requests",
                                       _BU.STORAGE | _BU.COPY_SRC)
        f.buffers["slot_used"] = buffer(d, 4 * slots, "stream.slot_used",
                                        _BU.STORAGE | _BU.COPY_SRC | _BU.COPY_DST)
        f.slots = slots
        # the ring of readback buffers: state, timestamps, and (streaming) requests and slot stamps
        self._ring_size = 256 + 8 * MAX_TIMESTAMPS
        if self.streamer is not None:
            self._ring_size += 8 * o.request_capacity + 4 * slots
        self._free = []

    def _stream(self, index: int, raw: np.ndarray, stats: FrameStats) -> None:
        """Serve a frame's page requests (read back a few frames late): the uploads and table
        updates are queued before the next frame's commands, so every frame reads a consistent
        pool."""
        st, f, o = self.streamer, self.frame, self.options
        words = raw[: len(STATE_WORDS)]
        n = min(int(words[STATE["page_requests"]]), o.request_capacity)
        base = (256 + 8 * MAX_TIMESTAMPS) // 4
        req = raw[base: base + 2 * n].copy().view(REQUEST_DTYPE)
        used_words = raw[base + 2 * o.request_capacity: base + 2 * o.request_capacity + st.slots]
        used = np.flatnonzero(used_words == np.uint32(index & 0xFFFFFFFF))
        t0 = time.perf_counter()
        uploads = st.update(req, used, index)
        q = self.device.queue
        for slot, page in uploads:
            q.write_buffer(f.buffers["pages"], slot * st.page_size, st.page_bytes(page))
        versions = (st.residency_version, st.effective_version)
        if versions[0] != self._tables[0]:
            q.write_buffer(f.buffers["residency"], 0, st.residency)
        if versions[1] != self._tables[1]:
            q.write_buffer(f.buffers["effective"], 0, st.effective)
        self._tables = versions
        ss = st.stats
        stats.streaming = {
            "pool_pages": st.slots, "resident": ss.resident, "pool_use": ss.pool_use,
            "requested": ss.requested, "uploaded": ss.uploaded, "evicted": ss.evicted,
            "mb_uploaded": ss.bytes_uploaded / 2**20, "update_ms": 1e3 * (time.perf_counter() - t0),
        }

    def _sync_scene(self) -> None:
        s, f = self.scene, self.frame
        if self._asset_version != s.asset_version:
            self._upload_scene()
            f.max_depth = max(a.depth for a in s.assets)
            self._asset_version = s.asset_version
            f.generation += 1
        if self._instance_version != s.instance_version:
            if not s.instance_count:
                raise SceneError("the scene has no instance: add_instance() first")
            f.buffers.update(s.upload_instances(self.device))
            f.instance_count = s.instance_count
            self._instance_version = s.instance_version
            f.generation += 1

    def _frame_uniforms(self, camera: Camera, tau: float, debug_view: int) -> np.ndarray:
        f, o = self.frame, self.options
        key = (f.width, f.height, f.instance_count, f.generation)
        if self._uniform_key != key:  # what changes only with the size or the scene
            u = np.zeros(1, FRAME_DTYPE)
            u["viewport"] = [f.width, f.height, 1 / f.width, 1 / f.height]
            u["instance_count"] = f.instance_count
            u["queue_capacity"] = o.queue_capacity
            u["visible_capacity"] = o.visible_capacity
            u["occluded_capacity"] = o.occluded_capacity
            u["request_capacity"] = o.request_capacity
            u["sw_max_edge"] = o.sw_max_edge
            u["hzb_size"] = [*f.hzb_levels[0], len(f.hzb_levels), 0]
            mips = np.zeros(16, np.uint32)
            mips[: len(f.hzb_offsets)] = f.hzb_offsets
            u["hzb_mips"] = mips.reshape(4, 4)
            self._uniform_static, self._uniform_key = u, key
        u = self._uniform_static.copy()
        fw, uw = u.view(np.float32), u.view(np.uint32)  # word views (field assignment is slow)
        view, proj, vp = camera.matrices(f.width, f.height)
        pp = np.array([proj[0, 0], proj[1, 1], camera.near, 1.0], np.float32)

        def put(name: str, values) -> None:
            first, n = _FRAME_WORDS[name]
            fw[first : first + n] = np.asarray(values, np.float32).reshape(-1)

        put("view_proj", vp.T)
        put("view", view.T)
        put("planes", frustum_planes(vp))
        put("camera", [*camera.eye, camera.lod_scale(f.height)])
        put("tau", tau)
        put("near", camera.near)
        put("proj", pp)
        uw[_FRAME_WORDS["debug_view"][0]] = debug_view
        uw[_FRAME_WORDS["frame_index"][0]] = self.frame_index
        if self.occlusion:
            uw[_FRAME_WORDS["flags"][0]] = FLAG_OCCLUSION
            if self._hzb_from is not None and self._hzb_from[2] == f.generation:
                put("prev_view", self._hzb_from[0].T)
                put("prev_proj", self._hzb_from[1])
        self._last_view = (view, pp)
        return u

    # ---------------------------------------------------------------- the frame

    def submit(self, camera: Camera, *, tau: float | None = None,
               debug_view: str | int = "lit", freeze_culling: bool = False) -> int:
        """Encode and submit one frame; returns its index. Nothing waits for the GPU: stats
        arrive later through `stats()`, images through `read_images()`. With
        `freeze_culling`, the clusters chosen by the previous frame are drawn again from this
        camera (culling is skipped), to inspect what a view selected from elsewhere."""
        t0 = time.perf_counter()
        self._sync_scene()
        view = DEBUG_VIEWS.index(debug_view) if isinstance(debug_view, str) else int(debug_view)
        tau = self.options.tau if tau is None else float(tau)
        if not tau > 0:
            raise ValueError(f"tau must be > 0 pixels, not {tau}")
        d, f = self.device, self.frame
        d.queue.write_buffer(f.buffers["frame"], 0, self._frame_uniforms(camera, tau, view))
        f.labels = []
        enc = d.create_command_encoder(label=f"frame{self.frame_index}")
        frozen = freeze_culling and self.frame_index > 0 and f.generation == self._culled_gen
        self._frozen_last = frozen
        if not frozen:
            enc.clear_buffer(f.buffers["state"])
        for name in ("vis", "vis_depth", "vis_ids"):
            if name in f.buffers:
                enc.clear_buffer(f.buffers[name])
        # the passes, in order
        occlusion = self.occlusion and not frozen
        if not frozen:
            self.instance_cull.encode(f, enc)
            self.cull.encode(f, enc)
            self._culled_gen = f.generation
        self.raster_sw.encode(f, enc)
        self.raster_hw.encode(f, enc)
        if occlusion:
            if self._hzb_from is not None and self._hzb_from[2] == f.generation:
                # post pass: what the old HZB hid, tested against this frame's
                self.hzb.encode(f, enc)
                self.cull.encode_post(f, enc)
                self.raster_sw.encode(f, enc, label="post_raster_sw")
                self.raster_hw.encode(f, enc, label="post_raster_hw")
        if not self.vis64:  # the id passes of the 32-bit path, after every depth pass
            if occlusion:
                self.cull.encode_raster_all(f, enc)
            self.raster_sw.encode(f, enc, 1)
            self.raster_hw.encode(f, enc, 1)
        if occlusion:  # the HZB the next frame's main pass tests against
            self.hzb.encode(f, enc, label="hzb_next")
            view, proj = self._last_view  # this frame's, from _frame_uniforms
            self._hzb_from = (view, proj, f.generation)
        elif frozen:
            self._hzb_from = None
        self.resolve.encode(f, enc)
        if self.streamer is not None:
            self._slot_page = self.streamer.slot_page.copy()  # what this frame's slots hold
        ring = self._ring_buffer()
        enc.copy_buffer_to_buffer(f.buffers["state"], 0, ring, 0, 4 * len(STATE_WORDS))
        if f.labels:
            enc.resolve_query_set(f.query_set, 0, 2 * len(f.labels), f.buffers["timestamps"], 0)
            enc.copy_buffer_to_buffer(f.buffers["timestamps"], 0, ring, 256, 16 * len(f.labels))
        if self.streamer is not None:
            off = 256 + 8 * MAX_TIMESTAMPS
            enc.copy_buffer_to_buffer(f.buffers["requests"], 0, ring, off,
                                      8 * self.options.request_capacity)
            enc.copy_buffer_to_buffer(f.buffers["slot_used"], 0, ring,
                                      off + 8 * self.options.request_capacity, 4 * f.slots)
        buf = enc.finish()
        encode_ms = (time.perf_counter() - t0) * 1e3  # the frame's Python and encoding work
        d.queue.submit([buf])
        promise = ring.map_async(wgpu.MapMode.READ)
        cpu_ms = (time.perf_counter() - t0) * 1e3
        self._pending.append((self.frame_index, ring, promise, list(f.labels), cpu_ms, frozen,
                              encode_ms))
        self.frame_index += 1
        return self.frame_index - 1

    def _ring_buffer(self) -> wgpu.GPUBuffer:
        self._collect()
        if self._free:
            return self._free.pop()
        if len(self._pending) >= RING:  # all in flight: wait for the oldest (rare)
            self._collect(wait_for=self._pending[0][0])
            if self._free:
                return self._free.pop()
        return self.device.create_buffer(size=self._ring_size,
                                         usage=_BU.MAP_READ | _BU.COPY_DST, label="frame.readback")

    def _collect(self, wait_for: int | None = None) -> None:
        """Read every finished readback (and wait for frame `wait_for` if given)."""
        keep = []
        for item in self._pending:
            index, buf, promise, labels, cpu_ms, frozen, encode_ms = item
            done = getattr(promise, "_state", "") in ("fulfilled", "pending-fulfilled")
            if not done and wait_for is not None and index <= wait_for:
                promise.sync_wait()
                done = True
            if not done:
                keep.append(item)
                continue
            if buf.map_state != "mapped":
                promise.sync_wait()
            raw = np.frombuffer(buf.read_mapped(), np.uint32).copy()
            buf.unmap()
            if buf.size == self._ring_size:  # (a scene change resizes the ring)
                self._free.append(buf)
            words = raw[: len(STATE_WORDS)]
            counters = {n: int(words[STATE[n]]) for n in STAT_NAMES}
            ts = raw[64 : 64 + 2 * MAX_TIMESTAMPS].view(np.uint64)
            gpu_ms = {lab: float(ts[2 * i + 1] - ts[2 * i]) / 1e6
                      for i, lab in enumerate(labels) if ts[2 * i + 1] >= ts[2 * i]}
            stats = FrameStats(index, counters, int(words[STATE["overflow"]]), gpu_ms, cpu_ms,
                               encode_ms=encode_ms)
            if (self.streamer is not None and len(raw) * 4 == self._ring_size and not frozen
                    and not self._frozen_last):  # a frozen frame draws old slots: keep them
                self._stream(index, raw, stats)
            if self._latest is None or stats.frame > self._latest.frame:
                self._latest = stats
        self._pending = keep

    def stats(self, *, wait: bool = False) -> FrameStats | None:
        """The newest frame statistics read back so far (all submitted frames with wait)."""
        self._collect(wait_for=self.frame_index - 1 if wait else None)
        return self._latest

    def read_images(self) -> dict[str, np.ndarray]:
        """The resolve outputs of the last submitted frame (waits for the GPU)."""
        f = self.frame
        h, w = f.height, f.width
        q = self.device.queue
        n = w * h
        color = np.frombuffer(q.read_buffer(f.buffers["color"]), np.uint8)[: 4 * n]
        depth = np.frombuffer(q.read_buffer(f.buffers["depth_out"]), np.float32)[:n]
        normal = np.frombuffer(q.read_buffer(f.buffers["normal"]), np.float32)[: 4 * n]
        ids = np.frombuffer(q.read_buffer(f.buffers["ids"]), np.uint32)[: 4 * n].reshape(h, w, 4)
        empty = ids[..., 0] == 0xFFFFFFFF

        def col(k: int) -> np.ndarray:
            return np.where(empty, -1, ids[..., k].astype(np.int64))

        return {
            "color": color.reshape(h, w, 4).copy(),
            "depth": depth.reshape(h, w).copy(),
            "normal": normal.reshape(h, w, 4)[..., :3].copy(),
            "instance": col(0),
            "cluster": col(1),
            "triangle": col(2),
            "level": np.where(empty, -1, (ids[..., 3] >> 1).astype(np.int64)),
            "hardware": ~empty & ((ids[..., 3] & 1) == 1),
        }

    def render(self, camera: Camera, *, tau: float | None = None,
               debug_view: str | int = "lit", freeze_culling: bool = False) -> RenderResult:
        """Draw one frame and return its images and exact statistics (waits for the GPU)."""
        index = self.submit(camera, tau=tau, debug_view=debug_view,
                            freeze_culling=freeze_culling)
        images = self.read_images()
        self._collect(wait_for=index)
        assert self._latest is not None and self._latest.frame == index
        return RenderResult(**images, stats=self._latest, near=camera.near)

    def render_converged(self, camera: Camera, *, max_frames: int = 200, **kw) -> RenderResult:
        """`render` until streaming is steady for this view: a frame after which nothing was
        uploaded (everything wanted is resident, or the pool holds only pages this view uses and
        cannot take more: then `stats.streaming["requested"]` stays above 0), at most
        `max_frames` frames; one frame when nothing streams."""
        res = self.render(camera, **kw)
        first = res.stats.frame
        while self.streamer is not None and res.stats.frame - first < max_frames:
            st = res.stats.streaming
            if st is not None and st["uploaded"] == 0 and res.stats.frame > first:
                break
            res = self.render(camera, **kw)
        return res

    def read_hzb(self) -> list[np.ndarray]:
        """The HZB of the last submitted frame (waits): one (h, w) uint32 array per mip, reversed-Z
        depth bits, each texel the farthest depth below it (renderer.cpu_cull.hzb_mips)."""
        f = self.frame
        raw = np.frombuffer(self.device.queue.read_buffer(f.buffers["hzb"]), np.uint32)
        return [raw[o: o + w * h].reshape(h, w).copy()
                for o, (w, h) in zip(f.hzb_offsets, f.hzb_levels, strict=True)]

    def read_visible(self) -> dict[str, np.ndarray]:
        """The last frame's visible clusters (waits): {"sw", "hw"}: (k, 2) uint32 rows
        (instance, scene page << 10 | cluster slot in the page), in the order the GPU wrote
        them."""
        q = self.device.queue
        state = np.frombuffer(q.read_buffer(self.frame.buffers["state"]), np.uint32)
        vis = np.frombuffer(q.read_buffer(self.frame.buffers["visible"]), np.uint32).reshape(-1, 2)
        half = self.options.visible_capacity // 2
        sw = min(int(state[STATE["sw_count"]]), half)
        hw = min(int(state[STATE["hw_count"]]), half)
        out = {"sw": vis[:sw].copy(), "hw": vis[half : half + hw].copy()}
        if self.streamer is not None:  # pool slots -> scene pages, as the frame saw them
            for rows in out.values():
                slot = rows[:, 1] >> SLOT_BITS
                rows[:, 1] = (self._slot_page[slot] << SLOT_BITS) | (rows[:, 1] & SLOT_MASK)
        return out
