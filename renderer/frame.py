"""The frame: a renderer's GPU resources, its uniforms and the sequence of passes
(`Frame.submit`), owned by `renderer.Renderer` (renderer/renderer.py), which checks what it is
given before it gets here.

    instance cull -> BVH/cluster cull (persistent or per level) -> raster args
    -> SW raster + HW raster (64-bit visibility buffer; or depth then ids without 64-bit atomics)
    -> [post pass: HZB, re-cull what the old HZB hid, raster] -> HZB for the next frame
    -> [shadows: the sun's and the lights' pages marked from the visibility buffer, allocated,
    cleared, drawn by the same instance cull, traversal and rasterizers; none on a still, cached
    frame]
    -> depth targets (velocity) -> resolve -> [temporal accumulation] -> statistics, timestamps
    (and page requests) copied for readback

Around it, one module a concern: the options (`renderer.options`), the results
(`renderer.results`), the pages on the GPU and the GPU side of streaming (`renderer.page_pool`),
and the readback ring (`renderer.readback`): statistics are read back without stalling, a few
frames late (`Frame.stats`); `Renderer.render()` (the numpy API) waits for its own frame, since
it reads images back anyway.
"""

from __future__ import annotations

import time

import numpy as np
import wgpu

from renderer.antialias import jitter
from renderer.camera import Camera, frustum_planes
from renderer.device import DeviceError, GpuContext
from renderer.gpu import buffer, buffer_with
from renderer.aggregates import Aggregates, slot_data
from renderer.aggregates import build_for_layout as build_aggregates
from renderer.instances import GpuInstances, world_spheres
from renderer.layout import ARGS_WORDS, FRAME_DTYPE, STATE, STATE_WORDS, STAT_NAMES
from renderer.lights import Light, faces_wanted
from renderer.limits import (
    MAX_LOCAL_FACES,
    READBACK_RING,
    TEXTURE_TILE_WORDS,
    DEFAULT_BINDING_LIMIT,
    FLAG_OCCLUSION,
    IMAGE_BUFFER_BYTES,
    MAX_TIMESTAMPS,
    MIN_SHADOW_PAGES,
    INSTANCE_BLOCK,
    MOVED_VEC4S,
    BOX_TRIANGLES,
    NO_NODE,
    SHADOW_PAGE_BYTES,
    SLOT_BITS,
)
from renderer.options import RenderOptions
from renderer.page_pool import PagePool
from renderer.texture_pool import HW_BINDINGS, HW_FORMATS, LAYER_COLUMNS, TexturePool
from renderer.passes.accumulate import Accumulate
from renderer.passes.cull import Cull
from renderer.passes.depth_targets import DepthTargets
from renderer.passes.hzb import HZB, hzb_levels
from renderer.passes.instance_cull import BlockCull, InstanceCull
from renderer.passes.instance_scatter import InstanceScatter
from renderer.passes.raster_hw import RasterHW
from renderer.passes.raster_sw import RasterSW
from renderer.passes.resolve import Resolve
from renderer.passes.shadow_pages import ShadowPages
from renderer.readback import InFlight, ReadbackRing, RingLayout
from renderer.results import INCOMPLETE, FrameStats
from renderer.scene import Scene, SceneError
from renderer.shadows import ShadowFrame, ShadowMap, pool_pages

__all__ = ["Frame", "FrameResources", "binding_limit", "image_buffers"]

# FRAME_DTYPE field -> (first 4-byte word, words)
_FRAME_WORDS = {name: (off // 4, FRAME_DTYPE[name].itemsize // 4)
                for name, (_, off, *_) in FRAME_DTYPE.fields.items()}
_BU = wgpu.BufferUsage


def binding_limit(device: wgpu.GPUDevice) -> tuple[int, str]:
    """The most bytes one storage buffer binding may hold on `device`, and the name of the limit
    that says so (a binding is also a buffer: the smaller of the two limits)."""
    lim = device.limits
    bind = int(lim.get("max-storage-buffer-binding-size", DEFAULT_BINDING_LIMIT))
    buf = int(lim.get("max-buffer-size", bind))
    return (bind, "max_storage_buffer_binding_size") if bind <= buf else (buf, "max_buffer_size")


def image_buffers(width: int, height: int, vis64: bool) -> dict[str, int]:
    """Bytes of each image buffer of a width x height frame (`limits.IMAGE_BUFFER_BYTES`)."""
    vis = ("vis",) if vis64 else ("vis_depth", "vis_ids")
    return {name: per * width * height for name, per in IMAGE_BUFFER_BYTES.items()
            if not name.startswith("vis") or name in vis}


def box_names(s: Scene, pool: PagePool) -> tuple[int, int]:
    """The proxies' box's one part (its global index) and one cluster (pool slot << SLOT_BITS |
    cluster in the page), by which the shaders know an instance drawn as its asset's box
    (instance.wgsl `draws_box`, cull.wgsl `visit`). The scene has the box (`proxy_assets`)."""
    box = s.gpu_assets[-1]
    first = int(box.root_group["first_part"])
    part = box.parts[first]
    assert box.root_triangles == BOX_TRIANGLES and int(box.root_group["part_count"]) == 1
    page = sum(a.page_count for a in s.assets) + int(part["page"])
    return (sum(len(a.parts) for a in s.assets) + first,
            (pool.pinned_slot(page) << SLOT_BITS) | int(part["first_cluster"]))


def _world_spheres(s: Scene, instances: np.ndarray | None, rows: np.ndarray | None = None
                   ) -> np.ndarray:
    """(k, 4) float64 world bounding spheres of instances `instances` of `s` (None: all; under
    `rows`, (k, 3, 4), default their current transforms): `instances.world_spheres`."""
    local = s.asset_spheres()
    if instances is None:
        return world_spheres(s.store.rows, s.store.asset, local)[0]
    idx = np.asarray(instances, np.int64)
    return world_spheres(s.store.rows[idx] if rows is None else rows, s.store.asset[idx],
                         local)[0]


def _enclosing(sph: np.ndarray) -> tuple[np.ndarray, float]:
    """(centre, radius): a sphere around (k, 4) spheres, centred on their bounding box."""
    lo = (sph[:, :3] - sph[:, 3:]).min(axis=0)
    hi = (sph[:, :3] + sph[:, 3:]).max(axis=0)
    c = (lo + hi) / 2
    return c, float((np.linalg.norm(sph[:, :3] - c, axis=1) + sph[:, 3]).max())


class FrameResources:
    """Buffers by binding name, sizes, and the per-frame timestamp slots the passes ask for."""

    def __init__(self, device: wgpu.GPUDevice) -> None:
        self.device = device
        self.buffers: dict[str, wgpu.GPUBuffer] = {}
        self.generation = 0  # bumped whenever a buffer is replaced (bind groups rebuild)
        self.width = self.height = 0
        self.instance_count = 0  # instance buffer slots (renderer/instances.py)
        self.proxy_first = 0  # the first aggregate proxy slot: instance slots end here
        self.proxy_nodes = 0  # aggregate proxy nodes (renderer/aggregates.py; 0: none)
        # a far instance drawn as its asset's box: the box's part and cluster (`box_names`;
        # NO_NODE: none)
        self.box_part = self.box_cref = NO_NODE
        self.max_depth = 0
        self.query_set: wgpu.GPUQuerySet | None = None
        self.labels: list[str] = []  # the passes timed this frame
        self.encoded: list[str] = []  # every pass encoded this frame, timed or not
        self.hw_target: wgpu.GPUTextureView | None = None
        self.hzb_levels: list[tuple[int, int]] = []
        self.hzb_offsets = np.zeros(0, np.int64)
        self.slots = 0  # pool slots (pages when nothing streams)

    def timestamps(self, label: str) -> dict | None:
        """The `timestamp_writes` of pass `label` (None where the adapter has no timestamps or
        the frame's queries are spent); every pass asks, so `encoded` lists them all."""
        self.encoded.append(label)
        if self.query_set is None or len(self.labels) * 2 + 2 > MAX_TIMESTAMPS:
            return None
        i = len(self.labels)
        self.labels.append(label)
        return {"query_set": self.query_set, "beginning_of_pass_write_index": 2 * i,
                "end_of_pass_write_index": 2 * i + 1}


class Frame:
    """A renderer's frame on the GPU: its resources (`resources`, the buffers by binding name),
    the passes, the shadow maps, the uniforms written each frame and `submit`, the sequence of
    passes; with what carries from one frame to the next (the previous view for velocity, the
    HZB's camera, still shadow pages, the readback ring). `renderer.Renderer` owns one and checks
    what it is given (sizes, lights, the sun, tau) before it gets here."""

    def __init__(self, ctx: GpuContext, options: RenderOptions, vis64: bool,
                 lights: tuple[Light, ...]) -> None:
        self.ctx, self.device, self.options, self.vis64 = ctx, ctx.device, options, vis64
        self.resources = FrameResources(self.device)
        self.frame_index = 0
        self._asset_version = self._instance_version = -1
        self.ring = ReadbackRing(self.device, self._read_back)
        self.latest: FrameStats | None = None  # the newest frame read back
        self.recent: dict[int, FrameStats] = {}  # the last frames read back, by index
        self._culled_gen = -1  # resources generation of the last culled frame (freeze_culling)
        self._uniform_key: tuple | None = None  # what _uniform_static was made for
        self._uniform_static = np.zeros(1, FRAME_DTYPE)
        self._last_view: tuple[np.ndarray, np.ndarray] | None = None
        # velocity's previous frame: the last submitted view_proj and the epoch it belongs to
        # (bumped by a resize and a new scene: no camera motion across them); the entries in
        # the moved table (shaders/moved.wgsl), cleared the frame after
        self._prev_view_proj: tuple[int, np.ndarray] | None = None
        self._motion_epoch = 0
        self._moved_count = 0
        self.instances: GpuInstances | None = None  # the instance buffer's slots
        self.aggregates: Aggregates | None = None  # the proxy tree over its blocks
        self._stale_blocks = np.zeros(0, np.int64)  # blocks whose instances moved (invalidate)
        self._agg_table = np.zeros((1, 8), np.uint32)  # the node table as last written
        self._moving = False  # this frame's camera or an instance moved (else velocity is 0)
        self.pool: PagePool | None = None  # the scene's pages on the GPU
        self.textures: TexturePool | None = None  # the scene's textures on the GPU
        self._frozen_last = False
        d = self.device
        self.block_cull = BlockCull(d)
        self.instance_cull = InstanceCull(d)
        self.instance_scatter = InstanceScatter(d)
        cpu = self.ctx.adapter_type == "CPU"
        self.persistent = (self.options.persistent if self.options.persistent is not None
                           else not cpu)
        self.raster_sw = RasterSW(
            d, vis64=self.vis64,
            lanes=self.options.sw_lanes or (4 if cpu else 128),
            rounds=self.options.sw_rounds or (4 if cpu else 1))
        self.cull = Cull(d, persistent=self.persistent,
                         workgroups=self.options.persistent_workgroups,
                         level_workgroups=self.options.level_workgroups or (16 if cpu else 1024),
                         sw_per_workgroup=self.raster_sw.clusters_per_workgroup)
        # texture tiles in pool textures read by the texture unit, or in the materials buffer
        ts = self.options.texture_sampling
        if ts == "hardware" and not self.ctx.bc_textures:
            raise DeviceError(f"texture_sampling 'hardware' needs texture-compression-bc, which "
                              f"{self.ctx.adapter_name} ({self.ctx.backend}) lacks: use 'shader'"
                              f" or 'auto'")
        self.hw_tiles = self.ctx.bc_textures and (ts == "hardware" or (ts == "auto" and not cpu))
        self.raster_hw = RasterHW(d, vis64=self.vis64, hw_tiles=self.hw_tiles)
        self.depth_targets = DepthTargets(d, vis64=self.vis64)
        self.resolve = Resolve(d, vis64=self.vis64, hw_tiles=self.hw_tiles)
        self.accumulate = Accumulate(d)
        # the last accumulated frame: (resources generation, its look (`_accumulation`), frame
        # index, its place in the jitter sequence); a frame that does not follow it starts a
        # new history
        self._accumulated: tuple | None = None
        self.hzb = HZB(d, vis64=self.vis64)
        # the sun's virtual shadow map, drawn by the same passes with SHADOW (renderer/shadows.py)
        self.shadow_pages = ShadowPages(d, vis64=self.vis64)
        self.shadow_instance_cull = InstanceCull(d, shadow=True)
        self.shadow_cull = Cull(d, persistent=self.persistent,
                                workgroups=self.options.persistent_workgroups,
                                level_workgroups=self.options.level_workgroups or (16 if cpu else
                                                                                   1024),
                                sw_per_workgroup=self.raster_sw.clusters_per_workgroup,
                                shadow=True)
        self.shadow_raster_sw = RasterSW(d, vis64=self.vis64, lanes=self.raster_sw.lanes,
                                         rounds=self.raster_sw.rounds, shadow=True)
        self.shadow_raster_hw = RasterHW(d, vis64=self.vis64, shadow=True,
                                         hw_tiles=self.hw_tiles)
        self.shadow_map: ShadowMap | None = None
        # (azimuth, elevation) degrees, or None: set_sun; spot and point lights: set_lights
        self.sun = None if self.options.sun is None else tuple(self.options.sun)
        self.lights: tuple[Light, ...] = lights
        # still frames: the key of each frame that ran the shadow passes (until read back), and
        # the key of the latest that found nothing to draw (frames with it skip the passes)
        self._shadow_runs: dict[int, tuple | None] = {}
        self._shadow_settled: tuple | None = None
        self._last_view_proj = np.zeros((4, 4), np.float32)
        # (scene, its world_version, (centre, radius)): `scene_bounds`
        self._scene_sphere: tuple | None = None
        # (world_version, (k, 4) spheres) of the instances the last frame moved (scene_bounds)
        self._moved_spheres: tuple[int, np.ndarray] | None = None
        self._shadow_need = 0  # shadow views' visible entries the instances need (_fit_lists)
        self.set_shadows(self.options.shadows)
        self.occlusion = self.options.occlusion
        # the camera and resources generation the HZB was built with (None: no HZB)
        self._hzb_from: tuple[np.ndarray, np.ndarray, int] | None = None
        o = self.options
        f = self.resources
        # the lists' capacities: the options', or more where the instances need it
        # (`_fit_lists`: every instance's root group in the queue and the visible list)
        self.queue_capacity, self.visible_capacity = o.queue_capacity, o.visible_capacity
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

    # ---------------------------------------------------------------- settings

    def set_occlusion(self, enabled: bool) -> None:
        """Switch two-pass occlusion culling on or off (on: from the next frame, once an HZB
        has been built)."""
        self.occlusion = bool(enabled)
        if not enabled:
            self._hzb_from = None

    def set_traversal(self, persistent: bool) -> None:
        """Switch the BVH traversal between persistent workgroups and one dispatch per level
        (both pipelines are built up front; the cut is the same)."""
        self.persistent = self.cull.persistent = self.shadow_cull.persistent = bool(persistent)

    def set_lights(self, lights: tuple[Light, ...]) -> None:
        """The spot and point lights from the next frame (checked: `Renderer.set_lights`), with
        room in the shadow pool for their faces; every shadow page is drawn again."""
        self.lights = lights
        if self.shadow_map.faces < min(faces_wanted(lights), MAX_LOCAL_FACES):
            self._new_shadow_map()
        self.resolve.configure(self.shadows, bool(lights))
        self.shadow_pages.set_lights(bool(lights))

    def set_shadows(self, enabled: bool) -> None:
        """Draw the sun's and the lights' shadows (from the next frame) or not; they light the lit
        view either way. The shadow pool (`RenderOptions.shadow_pool_mb`) is allocated when shadows
        are first switched on."""
        self.shadows = bool(enabled)
        o = self.options
        # the least pool until switched on
        pool = o.shadow_pool_mb if self.shadows else MIN_SHADOW_PAGES * SHADOW_PAGE_BYTES / 2**20
        if self.shadow_map is None or (self.shadows and self.shadow_map.pages
                                       < pool_pages(o.shadow_pool_mb)):
            self._new_shadow_map(pool)
        self.resolve.set_shadows(self.shadows)

    def _new_shadow_map(self, pool_mb: float | None = None) -> None:
        """The shadow maps' buffers made again (a larger pool, or room for more light faces):
        every page drawn again."""
        old = self.shadow_map
        pool = pool_mb if pool_mb is not None else old.pages * SHADOW_PAGE_BYTES / 2**20
        faces = min(faces_wanted(self.lights), MAX_LOCAL_FACES)
        self.shadow_map = ShadowMap(self.device, pool, binding_limit(self.device)[0],
                                    self._shadow_visible() if self.shadows else 2, faces)
        self.resources.buffers.update(self.shadow_map.buffers)
        self.resources.generation += 1
        self._shadow_frame = ShadowFrame(self.resources, self.shadow_map.frame_buffers,
                                         self.shadow_map.hw_target)

    def forget_scene(self) -> None:
        """The next frame uploads the scene it is given anew (`Renderer.clear_scene`)."""
        self._asset_version = self._instance_version = -1

    # ---------------------------------------------------------------- resources

    def resize(self, width: int, height: int) -> None:
        """Reallocate the image buffers for a width x height frame (checked:
        `Renderer.check_image`)."""
        d, f = self.device, self.resources
        f.width, f.height = width, height
        self._motion_epoch += 1  # new pixels: no camera motion into the next frame
        self.accumulate.drop_history()
        for name, nbytes in image_buffers(f.width, f.height, self.vis64).items():
            cleared = name.startswith("vis") or name == "velocity"  # by enc.clear_buffer
            usage = _BU.STORAGE | _BU.COPY_SRC | (_BU.COPY_DST if cleared else 0)
            label = "frame.depth" if name == "depth_out" else f"frame.{name}"
            f.buffers[name] = buffer(d, nbytes, label, usage)
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

    @property
    def streamer(self):
        """The `renderer.streaming.PageStreamer` while the scene streams, else None."""
        return self.pool.streamer if self.pool is not None else None

    # ---------------------------------------------------------------- the scene on the GPU

    def _upload_scene(self, s: Scene) -> None:
        """The scene's hierarchy, and its pages: all of them, or (streaming) a pool holding the
        root pages, with the residency and effective tables the culling pass reads."""
        f, o = self.resources, self.options
        self._motion_epoch += 1  # a new scene: no camera motion into its first frame
        pool_bytes = None if o.texture_pool_mb is None else int(o.texture_pool_mb * 2**20)
        budget = max(1, int(o.texture_upload_mb * 2**20) // (4 * TEXTURE_TILE_WORDS))
        self.textures, bufs = s.upload_geometry(self.device, binding_limit(self.device)[0],
                                                boxes=o.aggregates,
                                                texture_pool_bytes=pool_bytes,
                                                texture_budget=budget, hardware=self.hw_tiles)
        f.buffers.update(bufs)
        if self.hw_tiles:
            f.buffers.update(self._tile_textures())
        self.pool = PagePool(self.device, s, o, self.ctx.limits)
        f.buffers.update(self.pool.buffers)
        f.slots = self.pool.slots
        streaming = self.pool.streamer is not None
        self.ring.configure(RingLayout(request_capacity=o.request_capacity if streaming else 0,
                                       slots=self.pool.slots if streaming else 0,
                                       tiles=self.textures.entries if self.textures.streaming
                                       else 0))

    def _sync_scene(self, s: Scene) -> None:
        """What changed in the scene since the last frame, uploaded: its assets, its instances,
        or the rows of the instances moved (`_write_moved`)."""
        f = self.resources
        if self._asset_version != s.asset_version:
            self.shadow_map.invalidate()
            self._upload_scene(s)
            f.max_depth = max(a.depth for a in s.assets)
            self._asset_version = s.asset_version
            f.generation += 1
            # the instances laid out again: the proxies' asset-table rows follow the assets
            self._instance_version = None
        moved, before = s.take_moved()  # the instances moved, their transforms before
        if self._instance_version != s.instance_version:
            if not s.instance_count:
                raise SceneError("the scene has no instance: add_instance() first")
            self.shadow_map.invalidate()
            self._upload_instances(s)
            f.generation += 1
        elif len(moved):  # their shadows' pages: under their bounds before and after
            after = _world_spheres(s, moved)
            self.shadow_map.note_moved(2 * len(moved), lambda: np.concatenate(
                [_world_spheres(s, moved, before), after]))
            self._moved_spheres = (s.world_version, after)  # scene_bounds grows over them
            self.instances.grow_bounds(self._block_bounds, moved, after)
            self.device.queue.write_buffer(f.buffers["block_bounds"], 0, self._block_bounds)
            if self.aggregates is not None:  # their proxies stand aside until measured again
                blocks = np.unique(self.instances.slot[moved] // INSTANCE_BLOCK)
                nodes = self.aggregates.invalidate(blocks)
                self._stale_blocks = np.union1d(self._stale_blocks, blocks)
                self._agg_table[nodes, 4] = np.float32(np.inf).view(np.uint32)
                self.device.queue.write_buffer(f.buffers["aggregates"], 0, self._agg_table)
        elif len(self._stale_blocks):
            self._refresh_aggregates(s)
        self._write_moved(s, moved, before)
        self._moving = bool(len(moved))

    def _write_aggregates(self) -> None:
        """The proxy node table again (kept in `_agg_table`) and the proxies' rows."""
        lay, agg, q = self.instances, self.aggregates, self.device.queue
        self._agg_table = agg.table(lay.proxy_slot)
        q.write_buffer(self.resources.buffers["aggregates"], 0, self._agg_table)
        rows = np.zeros((lay.slots - lay.proxy_first, 3, 4), np.float32)
        rows[lay.proxy_slot - lay.proxy_first] = agg.proxy_rows()
        q.write_buffer(self.resources.buffers["instances"], 48 * lay.proxy_first, rows)

    def _refresh_aggregates(self, s: Scene) -> None:
        """Measure the proxies over the blocks whose instances moved again, once they rest: their
        blocks' spheres and the nodes above (`Aggregates.refresh`; ~0.1 ms a block)."""
        lay, blocks = self.instances, self._stale_blocks
        user = lay.user[(blocks[:, None] * INSTANCE_BLOCK + np.arange(INSTANCE_BLOCK)).ravel()]
        present = user >= 0  # those blocks' instances only, numbered as their slots
        some = np.maximum(user, 0)
        sites, content = slot_data(np.where(present, np.arange(len(user)), -1),
                                   _world_spheres(s, some),
                                   np.where(present, s.instance_areas(some), 0),
                                   s.instance_gaps(some))
        self.aggregates.refresh(blocks, self._block_bounds, sites, content)
        self._stale_blocks = np.zeros(0, np.int64)
        self._write_aggregates()

    def _upload_instances(self, s: Scene) -> None:
        """The instance buffer (slots by asset, then in k-d order), the blocks' bounds
        and the list the block cull fills; the scene's bounding sphere from the same spheres."""
        f, d = self.resources, self.device
        spheres = _world_spheres(s, None)
        self.instances = lay = GpuInstances.layout(s.instance_asset, spheres[:, :3])
        self._block_bounds = lay.block_bounds(spheres)
        f.proxy_first = lay.slots
        proxy_rows, table = None, np.zeros((1, 8), np.uint32)
        self.aggregates, self._stale_blocks = None, np.zeros(0, np.int64)
        if self.options.aggregates and s.proxy_assets is not None:
            self.aggregates = agg = build_aggregates(lay, self._block_bounds, spheres,
                                                     s.instance_areas(), s.instance_gaps())
            slots = lay.add_proxies(agg.asset, s.proxy_assets)
            proxy_rows, table = agg.proxy_rows(), agg.table(slots)
            self._agg_table = table  # (nodes, 8) words: moves mark their errors in it
        f.proxy_nodes = 0 if self.aggregates is None else self.aggregates.count
        # far instances drawn as their asset's box (instance_cull.wgsl `push_root`): the box's
        # part and cluster (NO_NODE: not drawn)
        on = self.options.aggregates and s.proxy_assets is not None
        f.box_part, f.box_cref = box_names(s, self.pool) if on else (NO_NODE, NO_NODE)
        f.buffers["aggregates"] = buffer_with(d, table, "scene.aggregates", _BU.STORAGE)
        f.buffers["instances"] = buffer_with(d, lay.words(s.store.rows, proxy_rows),
                                             "scene.instances", _BU.STORAGE)
        f.buffers["block_bounds"] = buffer_with(d, self._block_bounds, "scene.block_bounds",
                                                _BU.STORAGE)
        f.buffers["blocks"] = buffer(d, 4 * len(self._block_bounds), "frame.blocks",
                                     _BU.STORAGE | _BU.COPY_SRC)  # COPY_SRC: tests read it
        f.instance_count = lay.slots
        self._instance_version = s.instance_version
        self._fit_lists(s)
        self._scene_sphere = (s, s.world_version, _enclosing(spheres), s.instance_version)

    def _shadow_visible(self) -> int:
        """The shadow views' visible list: the options', or what the instances need
        (`_fit_lists`), within one binding (16 bytes an entry)."""
        need = max(self.options.shadow_visible_capacity, self._shadow_need)
        return min(need, binding_limit(self.device)[0] // 16 // 2 * 2)

    def _fit_lists(self, s: Scene) -> None:
        """Grow the queue, the visible list and the shadow views' (never past one binding, never
        below the options') so that every instance's root group fits with a quarter to spare: a
        far field of a million instances queues and draws a root cluster or more each (without
        it, the default lists overflowed at a million: instances and their shadows dropped,
        flagged)."""
        roots = np.zeros((max(len(s.assets), 1), 2), np.int64)
        for i, a in enumerate(s.assets):
            g = a.root_group
            roots[i] = g["part_count"], g["cluster_count"]
        parts, clusters = roots[s.instance_asset].sum(axis=0) * 5 // 4
        most = binding_limit(self.device)[0] // 8
        # the shadow views queue their roots in the same queue, an instance once per view that
        # wants it: room for three views each (a far field under the sun: 2.3 on average)
        q = min(max(self.options.queue_capacity, 3 * int(parts)), most)
        v = min(max(self.options.visible_capacity, 2 * int(clusters)), most // 2 * 2)
        d, f = self.device, self.resources
        if q != self.queue_capacity:
            f.buffers["queue"] = buffer(d, 8 * q, "frame.queue", _BU.STORAGE)
        if v != self.visible_capacity:
            f.buffers["visible"] = buffer(d, 8 * v, "frame.visible", _BU.STORAGE | _BU.COPY_SRC)
        self.queue_capacity, self.visible_capacity = q, v
        # the shadow views draw the same roots, once per view that wants them (as the queue)
        self._shadow_need = 2 * 3 * int(clusters)
        if self.shadows and self.shadow_map.visible_capacity < self._shadow_visible():
            self._new_shadow_map()

    def scene_bounds(self, s: Scene) -> tuple[np.ndarray, float]:
        """A sphere around every instance of `s` (`Renderer.bounds`, the sun's shadow map): kept
        until an instance is added or cleared (`Scene.instance_version`); when instances only
        moved since, grown (its centre kept) over their new bounds, not measured again (a
        million instances take ~0.3 s to measure; a frame moving 10,000 takes ~1 ms), so that it
        may be larger than a fresh measure after moves, never smaller."""
        cached = self._scene_sphere
        if cached is not None and cached[0] is s and cached[1] == s.world_version:
            return cached[2]
        moved = self._moved_spheres
        if (cached is not None and cached[0] is s and cached[3] == s.instance_version
                and moved is not None and moved[0] == s.world_version):
            c, r = cached[2]
            sph = moved[1]
            r = max(r, float((np.linalg.norm(sph[:, :3] - c, axis=1) + sph[:, 3]).max()))
        else:
            c, r = _enclosing(_world_spheres(s, None))
        self._scene_sphere = cached = (s, s.world_version, (c, r), s.instance_version)
        return cached[2]

    def _write_moved(self, s: Scene, moved: np.ndarray, before: np.ndarray) -> None:
        """The moved table (`GpuInstances.moved_table`): the instances moved since the previous
        frame, scattered into the instance buffer by the frame's first pass and read by the
        depth targets for velocity; emptied the frame after."""
        f = self.resources
        if not len(moved) and not self._moved_count and "moved" in f.buffers:
            return
        words = self.instances.moved_table(moved, before, s.store.rows[moved])
        buf = f.buffers.get("moved")
        if buf is None or buf.size < words.nbytes:
            # room to grow: twice the table, at least 256 entries (a first move re-binds nothing)
            room = np.zeros(max(2 * len(words), 4 + 4 * MOVED_VEC4S * 256), np.uint32)
            room[: len(words)] = words
            f.buffers["moved"] = buffer_with(self.device, room, "scene.moved", _BU.STORAGE)
            f.generation += 1
        self.device.queue.write_buffer(f.buffers["moved"], 0, words)
        self._moved_count = len(moved)

    # ---------------------------------------------------------------- the frame

    def _frame_uniforms(self, s: Scene, camera: Camera, tau: float, debug_view: int,
                        shift: tuple[float, float] | None = None) -> np.ndarray:
        """The frame's uniforms (written by `submit`), and the shadow views': the camera's
        matrices, the previous frame's for velocity and the HZB's camera for occlusion.
        `shift`: temporal accumulation's jitter, in pixels (x right, y down): the projection
        moved so that each pixel samples the point that far from its centre. Culling, the
        rasterizers, resolve and the shadow marks use the jittered matrix, velocity the
        unjittered one (`motion_view_proj`); the occlusion test's projection stays unjittered,
        the jitter (< 0.5 px) being inside its one-pixel margin (shaders/occlusion.wgsl)."""
        f, o = self.resources, self.options
        key = (f.width, f.height, f.instance_count, f.proxy_first, f.proxy_nodes, f.box_part,
               f.box_cref, f.generation)
        if self._uniform_key != key:  # what changes only with the size or the scene
            u = np.zeros(1, FRAME_DTYPE)
            u["viewport"] = [f.width, f.height, 1 / f.width, 1 / f.height]
            u["instance_count"] = f.instance_count
            u["proxies"] = [f.proxy_first, f.proxy_nodes, f.box_part, f.box_cref]
            u["queue_capacity"] = self.queue_capacity
            u["visible_capacity"] = self.visible_capacity
            u["occluded_capacity"] = o.occluded_capacity
            u["request_capacity"] = o.request_capacity
            u["page_words"] = self.pool.page_size // 4
            u["sw_max_edge"] = o.sw_max_edge
            u["hzb_size"] = [*f.hzb_levels[0], len(f.hzb_levels), 0]
            mips = np.zeros(16, np.uint32)
            mips[: len(f.hzb_offsets)] = f.hzb_offsets
            u["hzb_mips"] = mips.reshape(4, 4)
            self._uniform_static, self._uniform_key = u, key
        u = self._uniform_static.copy()
        fw, uw = u.view(np.float32), u.view(np.uint32)  # word views (field assignment is slow)
        view, proj, motion = camera.matrices(f.width, f.height)
        vp = motion
        if shift is not None:  # clip x += dx w: the NDC shift that brings the sample to centre
            t = np.eye(4)
            t[0, 3], t[1, 3] = -2 * shift[0] / f.width, 2 * shift[1] / f.height
            vp = (t @ motion.astype(np.float64)).astype(np.float32)
        pp = np.array([proj[0, 0], proj[1, 1], camera.near, 1.0], np.float32)

        def put(name: str, values) -> None:
            first, n = _FRAME_WORDS[name]
            fw[first : first + n] = np.asarray(values, np.float32).reshape(-1)

        put("view_proj", vp.T)
        put("motion_view_proj", motion.T)
        prev = self._prev_view_proj
        same = prev is not None and prev[0] == self._motion_epoch
        put("prev_view_proj", (prev[1] if same else motion).T)
        self._moving = self._moving or (same and not np.array_equal(prev[1], motion))
        self._prev_view_proj = (self._motion_epoch, motion)
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
        self._last_view_proj = vp
        # the shadow views' frame: the same, with their LOD threshold and visible list, no HZB
        su = u.copy()
        suw = su.view(np.uint32)
        suw[_FRAME_WORDS["flags"][0]] = 0
        suw[_FRAME_WORDS["visible_capacity"][0]] = self.shadow_map.visible_capacity
        su.view(np.float32)[_FRAME_WORDS["tau"][0]] = o.shadow_tau
        self.device.queue.write_buffer(self.shadow_map.frame_buffers["frame"], 0, su)
        inv = np.linalg.inv(vp.astype(np.float64))
        self.shadow_map.update(self.sun, self.scene_bounds(s),
                               np.asarray(camera.eye, np.float64), inv,
                               camera.lod_scale(f.height), self.frame_index, self.lights)
        return u

    def submit(self, scene: Scene, camera: Camera, tau: float, debug_view: int,
               freeze_culling: bool, *, started: float, accumulate: int = 0) -> int:
        """Encode and submit one frame of `scene` (`Renderer.submit`, which checked the
        arguments; `started`: its `time.perf_counter()` at the call; `accumulate`: the frames
        temporal accumulation averages, 0 for none); returns its index."""
        self._sync_scene(scene)  # after the checks: a frame refused keeps the moves for the next
        d, f = self.device, self.resources
        reset, k = self._accumulation(accumulate, (debug_view, tau, self.sun, self.lights,
                                                   self.shadows))
        d.queue.write_buffer(f.buffers["frame"], 0, self._frame_uniforms(
            scene, camera, tau, debug_view, jitter(k) if accumulate else None))
        f.labels, f.encoded = [], []
        enc = d.create_command_encoder(label=f"frame{self.frame_index}")
        frozen = freeze_culling and self.frame_index > 0 and f.generation == self._culled_gen
        self._frozen_last = frozen
        if self._moved_count:
            self.instance_scatter.encode(f, enc, self._moved_count)
        if not frozen:
            enc.clear_buffer(f.buffers["state"])
        for name in ("vis", "vis_depth", "vis_ids"):
            if name in f.buffers:
                enc.clear_buffer(f.buffers[name])
        # the passes, in order
        occlusion = self.occlusion and not frozen
        if not frozen:
            self.block_cull.encode(f, enc)
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
        shadows_ran = self.shadows and self._encode_shadows(enc, scene)
        if self._moving:
            self.depth_targets.encode(f, enc)
        else:  # what the pass would write, exactly (0 where nothing moved), for a buffer clear
            enc.clear_buffer(f.buffers["velocity"])
        self.resolve.encode(f, enc)
        if accumulate:
            self.accumulate.encode(f, enc, frames=accumulate, reset=reset, moving=self._moving)
        self.pool.begin_frame()
        ring = self.ring.acquire()
        lay = self.ring.layout
        enc.copy_buffer_to_buffer(f.buffers["state"], 0, ring, lay.STATE, 4 * len(STATE_WORDS))
        enc.copy_buffer_to_buffer(f.buffers["shadow_state"], 0, ring, lay.shadow_state,
                                  4 * len(STATE_WORDS))
        enc.copy_buffer_to_buffer(f.buffers["shadow_pool_state"], 0, ring, lay.shadow_pool, 16)
        if f.labels:
            enc.resolve_query_set(f.query_set, 0, 2 * len(f.labels), f.buffers["timestamps"], 0)
            enc.copy_buffer_to_buffer(f.buffers["timestamps"], 0, ring, lay.TIMESTAMPS,
                                      16 * len(f.labels))
        if lay.request_capacity:
            enc.copy_buffer_to_buffer(f.buffers["requests"], 0, ring, lay.requests,
                                      8 * lay.request_capacity)
            enc.copy_buffer_to_buffer(f.buffers["slot_used"], 0, ring, lay.slot_used, 4 * lay.slots)
        if lay.tiles:  # the texture tiles the BasePass wanted
            enc.copy_buffer_to_buffer(f.buffers["materials"], 4 * self.textures.stamp_at, ring,
                                      lay.tile_stamps_at, 4 * lay.tiles)
        buf = enc.finish()
        encode_ms = (time.perf_counter() - started) * 1e3  # the frame's Python and encoding work
        d.queue.submit([buf])
        promise = ring.map_async(wgpu.MapMode.READ)
        cpu_ms = (time.perf_counter() - started) * 1e3
        self.ring.submitted(InFlight(self.frame_index, ring, promise, list(f.labels), cpu_ms,
                                     frozen, encode_ms, self.shadows, shadows_ran,
                                     tuple(f.encoded), self.textures))
        self.frame_index += 1
        return self.frame_index - 1

    def restart_accumulation(self) -> None:
        """The next accumulated frame starts a new history (`Renderer.render_converged`)."""
        self._accumulated = None

    def _accumulation(self, frames: int, look: tuple) -> tuple[bool, int]:
        """(whether the history starts again, the frame's place in the jitter sequence) for a
        frame accumulating `frames` frames (0: none). A history goes on from the frame before
        only if that frame accumulated too, with the same image buffers and scene and the same
        `look` (debug view, tau, lighting): a change of any of them starts it again rather than
        fading in over K frames."""
        if not frames:
            self._accumulated = None
            return False, 0
        last = self._accumulated
        key = (self.resources.generation, look)
        goes_on = last is not None and last[:3] == (*key, self.frame_index - 1)
        k = last[3] + 1 if goes_on else 0
        self._accumulated = (*key, self.frame_index, k)
        return not goes_on, k

    def _shadow_key(self, scene: Scene) -> tuple | None:
        """What decides this frame's shadow pages: the camera, the sun, the scene's buffers; None
        while something is pending that draws pages again (a reset, moved instances, a changed
        streamed cut, `shadow_cache` off)."""
        sm = self.shadow_map
        if sm.changed or not self.options.shadow_cache:
            return None
        f = self.resources
        return (self._last_view_proj.tobytes(), self.sun, self.lights, f.generation,
                scene.instance_version, f.width, f.height)

    def _encode_shadows(self, enc: wgpu.GPUCommandEncoder, scene: Scene) -> bool:
        """The sun's shadow map: its pages marked from this frame's visibility buffer, freed,
        allocated and cleared; then the pages to draw drawn by the shadow views' instance cull,
        traversal and rasterizers (docs/ARCHITECTURE.md "Shadows"). A still frame after one that
        found every page it needed valid (nothing drawn, nothing short) does none of it: the
        same pixels would mark the same pages, all cached. Returns whether the passes ran."""
        sm, sf, f = self.shadow_map, self._shadow_frame, self.resources
        key = self._shadow_key(scene)
        if key is not None and key == self._shadow_settled:
            return False
        self._shadow_runs[self.frame_index] = key
        if sm.needs_reset:
            sm.reset(enc)
        if not self.options.shadow_cache:  # every page drawn again (benchmarks)
            sm.redraw_all()
        enc.clear_buffer(f.buffers["shadow_state"])
        enc.clear_buffer(f.buffers["shadow_hpm"])
        self.shadow_pages.encode(sf, enc)
        # the shadow views' page requests (streaming) follow the camera's in one list
        word = 4 * STATE["page_requests"]
        streaming = self.ring.layout.request_capacity > 0
        if streaming:
            enc.copy_buffer_to_buffer(f.buffers["state"], word, f.buffers["shadow_state"], word, 4)
        self.shadow_instance_cull.encode(sf, enc)
        self.shadow_cull.encode(sf, enc)
        self.shadow_raster_sw.encode(sf, enc)
        self.shadow_raster_hw.encode(sf, enc)
        if streaming:
            enc.copy_buffer_to_buffer(f.buffers["shadow_state"], word, f.buffers["state"], word, 4)
        return True

    def _read_back(self, item: InFlight, raw: np.ndarray) -> None:
        """A frame's readback (a few frames late): its statistics, and the page requests it made
        served (streaming)."""
        lay = self.ring.layout
        words = lay.state_words(raw)
        counters = {n: int(words[STATE[n]]) for n in STAT_NAMES}
        ts = lay.timestamps(raw)
        gpu_ms = {lab: float(ts[2 * i + 1] - ts[2 * i]) / 1e6
                  for i, lab in enumerate(item.labels) if ts[2 * i + 1] >= ts[2 * i]}
        overflow = int(words[STATE["overflow"]])
        if words[STATE["outstanding"]]:  # pushed and never finished: drawn without it
            overflow |= INCOMPLETE
        stats = FrameStats(item.index, counters, overflow, gpu_ms, item.cpu_ms,
                           encode_ms=item.encode_ms, passes=item.passes)
        if item.shadows:
            sw = lay.shadow_words(raw)
            pool = lay.shadow_pool_words(raw)
            free = int(pool[0]) if pool[0] <= self.shadow_map.pages else 0
            stats.shadow = {
                **{k: int(sw[STATE[f"shadow_{k}"]]) for k in (
                    "marked", "allocated", "cached", "drawn", "failed")},
                "pool_pages": self.shadow_map.pages, "pool_used": self.shadow_map.pages - free,
                "clusters": int(sw[STATE["sw_clusters"]] + sw[STATE["hw_clusters"]]),
                "hw_items": int(sw[STATE["hw_clusters"]]),  # (cluster, page) drawn by HW
                "triangles": int(sw[STATE["sw_triangles"]] + sw[STATE["hw_triangles"]]),
                # instances drawn as their asset's box, once for each view that drew them so
                "boxed": int(sw[STATE["instances_boxed"]]),
                "overflow": int(sw[STATE["overflow"]]) | (INCOMPLETE if sw[STATE["outstanding"]]
                                                         else 0),
                # a still frame reused every page (the counters are the last run's)
                "still": not item.shadows_ran,
            }
            key = self._shadow_runs.pop(item.index, None)
            for k in [k for k in self._shadow_runs if k < item.index]:
                del self._shadow_runs[k]
            if item.shadows_ran and key is not None:
                settled = (stats.shadow["drawn"] == 0 and stats.shadow["failed"] == 0
                           and not stats.shadow["overflow"])
                self._shadow_settled = key if settled else None
        if (self.streamer is not None and len(raw) * 4 == lay.size and not item.frozen
                and not self._frozen_last):  # a frozen frame draws old slots: keep them
            n = min(int(words[STATE["page_requests"]]), lay.request_capacity)
            stats.streaming = self.pool.serve(item.index, lay.request_words(raw, n),
                                              lay.slot_stamps(raw))
            if stats.streaming["uploaded"] or stats.streaming["evicted"]:
                # the cut changed: shadow pages drawn from the old one are stale (the next
                # frame draws every page again; a still, loaded view caches them)
                self.shadow_map.redraw_all()
        if lay.tiles and item.textures is self.textures and len(raw) * 4 == lay.size:
            stats.textures = self._serve_textures(item.index, lay.tile_stamps(raw))
        if self.latest is None or stats.frame > self.latest.frame:
            self.latest = stats
        self.recent[stats.frame] = stats  # `stats_of`: the last few frames', by index
        for k in [k for k in self.recent if k < stats.frame - 2 * READBACK_RING]:
            del self.recent[k]

    def _serve_textures(self, index: int, stamps: np.ndarray) -> dict:
        """Frame `index`'s texture tile stamps served (`TexturePool.serve`): the missing tiles
        it wanted written into their slots, then the tile table; its statistics."""
        t = self.textures
        uploads, stats = t.serve(stamps, index + 1, index)
        if uploads:
            self._write_tiles(uploads)
            self.device.queue.write_buffer(self.resources.buffers["materials"], 4 * t.table_at,
                                           t.table_words())
        return stats

    def _write_tiles(self, uploads) -> None:
        """Tiles (slot, entry) written into their slots: the materials buffer's, or (hardware
        sampling) their format's pool texture."""
        t, q = self.textures, self.device.queue
        buf = self.resources.buffers["materials"]
        for slot, entry in uploads:
            if not self.hw_tiles:
                q.write_buffer(buf, 4 * t.slot_word(slot), t.tile_words(entry))
                continue
            c, origin, layout, size = t.hw_copy(slot)
            q.write_texture({"texture": self._tile_pools[c], "origin": origin},
                            t.tile_words(entry), layout, size)

    def _tile_textures(self) -> dict:
        """The pool textures of hardware sampling (texture_pool.HW_FORMATS), their views by
        binding name; every tile written where nothing streams."""
        t = self.textures
        self._tile_pools = []
        views = {}
        for c, (fmt, name) in enumerate(zip(HW_FORMATS, HW_BINDINGS, strict=True)):
            rows, layers, (tw, th) = t.hw_layout(c)
            # a format no tile has: a placeholder of one block (nothing reads it), 2 layers
            size = (LAYER_COLUMNS * tw, rows * th, layers) if t.class_slots[c] else (4, 4, 2)
            tex = self.device.create_texture(
                size=size, format=fmt,
                usage=wgpu.TextureUsage.TEXTURE_BINDING | wgpu.TextureUsage.COPY_DST,
                label=f"textures.{name}")
            self._tile_pools.append(tex)
            views[name] = tex.create_view(dimension="2d-array")
        if not t.streaming:
            self._write_tiles([(int(s), int(e)) for s, e in enumerate(t.entry_of) if e >= 0])
        return views

    def stats_of(self, index: int) -> FrameStats | None:
        """Frame `index`'s statistics (waits for its readback); None where it is older than
        the last few frames read back."""
        self.ring.collect(wait_for=index)
        return self.recent.get(index)

    def stats(self, *, wait_for: int | None = None) -> FrameStats | None:
        """The newest frame statistics read back so far (every frame up to `wait_for` waited
        for)."""
        self.ring.collect(wait_for=wait_for)
        return self.latest

