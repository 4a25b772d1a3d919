"""The virtual shadow maps on the host: their buffers, the sun's light space and clipmap levels
of each frame, the spot and point lights' faces (renderer/lights.py), and what invalidates
pages (docs/ARCHITECTURE.md "Shadows").

The GPU decides which pages exist and which are drawn (shaders/shadow_pages.wgsl) and draws them
with the frame's own culling and rasterizers (the SHADOW variants of the passes); the host only
places the levels and says which pages moved instances dirtied. A level's window follows the
camera, snapped to its page grid, so that a still camera keeps its pages and a moving one draws
only those that scroll in; the windows of levels wide enough to hold the whole scene stay
around it however far the camera goes.
"""

from __future__ import annotations

import math
from collections import ChainMap

import numpy as np
import wgpu

from renderer.gpu import buffer
from renderer.layout import (
    ARGS_WORDS,
    FRAME_DTYPE,
    LIGHT_DTYPE,
    SHADOW_DTYPE,
    SHADOW_VIEW_DTYPE,
    STATE_WORDS,
)
from renderer.lights import Light, face_frames, faces_of, light_records, view_axes
from renderer.limits import (
    COARSEST_SPAN,
    HPM_STRIDE,
    LOCAL_ENTRIES,
    LOCAL_MIPS,
    LOCAL_PAGES,
    MAX_LIGHTS,
    MAX_LOCAL_FACES,
    MIN_SHADOW_PAGES,
    NO_PAGE,
    SHADOW_LEVELS,
    SHADOW_PAGE,
    SHADOW_PAGE_BYTES,
    SHADOW_PAGES,
    SHADOW_VIEWS,
    SUN_ENTRIES,
)

__all__ = ["ShadowFrame", "ShadowMap", "pool_pages", "shadow_level", "sun_direction"]

_BU = wgpu.BufferUsage
_MIB = 1 << 20
WINDOW = SHADOW_PAGES * SHADOW_PAGE  # texels a level's window side
MAX_DIRTY = 64  # moved bounds a frame; past it every page is invalidated
POOL_STATE_WORDS = 4 + SHADOW_VIEWS  # shaders/shadow_state.wgsl
# texels a receiver is pushed along its normal, and of depth bias under its plane
# (shaders/resolve.wgsl)
NORMAL_BIAS = 0.5
MARK_RADIUS = 4.0  # texels around a pixel's point whose pages it marks: the filter's reach
SCENE_MARGIN = 1.5  # the map's frame holds the scene's sphere grown by this (moves stay in it)


def sun_direction(azimuth: float, elevation: float) -> np.ndarray:
    """(3,) float64 unit vector towards a sun at `azimuth`, `elevation` degrees (Y up; azimuth
    0 towards +Z, 90 towards +X)."""
    a, e = math.radians(azimuth), math.radians(elevation)
    return np.array([math.cos(e) * math.sin(a), math.sin(e), math.cos(e) * math.cos(a)])


def shadow_level(distance: np.ndarray, lod_scale: float, texel0: float) -> np.ndarray:
    """The level a pixel at `distance` from the eye marks and samples (shaders/shadow.wgsl
    `shadow_level`, in float64): the coarsest whose texel (texel0 * 2^level) is no larger than
    the pixel's footprint (distance / lod_scale), clamped to the levels."""
    footprint = np.asarray(distance, np.float64) / lod_scale
    level = np.floor(np.log2(np.maximum(footprint / texel0, 1.0)))
    return np.clip(level, 0, SHADOW_LEVELS - 1).astype(np.int64)


def _mask_words(n: int) -> int:
    """Page-mask words of a view of n^2 pages: its mips n^2 .. 1 (shaders/shadow.wgsl)."""
    return (4 * n * n - 1) // 3


LOCAL_MASK_WORDS = sum(_mask_words(LOCAL_PAGES >> m) for m in range(LOCAL_MIPS))  # a face's


def table_words(faces: int) -> int:
    """Words of the page table with `faces` local faces (4 an entry): the pool follows."""
    return 4 * (SUN_ENTRIES + faces * LOCAL_ENTRIES)


def pool_pages(pool_mb: float) -> int:
    """Physical pages (SHADOW_PAGE_BYTES each) in a pool of `pool_mb` MiB."""
    return int(pool_mb * _MIB) // SHADOW_PAGE_BYTES


def light_basis(sun: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(u, v): the light space's x and y axes, with u x v = sun (a camera's right, up and back:
    the axes of a view looking away from the sun)."""
    return view_axes(-np.asarray(sun, np.float64))


class ShadowFrame:
    """The frame's resources as the shadow views' passes see them: the shadow frame uniforms,
    state, indirect arguments and visible list in place of the camera's, everything else the
    frame's own (`renderer.frame.FrameResources`)."""

    def __init__(self, frame, overrides: dict, hw_target: wgpu.GPUTextureView) -> None:
        self._frame = frame
        self.buffers = ChainMap(overrides, frame.buffers)
        self.hw_target = hw_target

    def __getattr__(self, name: str):
        return getattr(self._frame, name)

    @property
    def shadow_pages(self) -> int:
        """Physical pages in the pool."""
        return self.buffers["shadow_owner"].size // 4


class ShadowMap:
    """The buffers of the virtual shadow maps (the sun's, and the faces of up to `faces` local
    light faces) and the per-frame state the host keeps."""

    def __init__(self, device: wgpu.GPUDevice, pool_mb: float, binding_limit: int,
                 visible_capacity: int, faces: int = 0) -> None:
        pages = pool_pages(pool_mb)
        least = MIN_SHADOW_PAGES * SHADOW_PAGE_BYTES / _MIB
        if pages < MIN_SHADOW_PAGES:
            raise ValueError(f"a shadow pool of {pool_mb:g} MiB holds {pages} pages "
                             f"({SHADOW_PAGE_BYTES // 1024} KiB each); the coarsest level's need "
                             f"{MIN_SHADOW_PAGES}: at least {least:g} MiB")
        table = 4 * table_words(faces)
        if table + pages * SHADOW_PAGE_BYTES > binding_limit:
            most = (binding_limit - table) // SHADOW_PAGE_BYTES * SHADOW_PAGE_BYTES / _MIB
            raise ValueError(f"a shadow pool of {pool_mb:g} MiB is more than this adapter binds "
                             f"in one buffer with the page table ({binding_limit / _MIB:,.0f} "
                             f"MiB): at most {most:,.0f} MiB")
        if 16 * visible_capacity > binding_limit:
            raise ValueError(f"RenderOptions.shadow_visible_capacity {visible_capacity:,} needs "
                             f"{16 * visible_capacity / _MIB:,.0f} MiB; this adapter binds at "
                             f"most {binding_limit / _MIB:,.0f} MiB")
        self.device = device
        self.pages = pages
        self.faces = faces  # local faces the table holds
        self.visible_capacity = visible_capacity
        entries = SUN_ENTRIES + faces * LOCAL_ENTRIES
        mask_words = SHADOW_LEVELS * HPM_STRIDE + faces * LOCAL_MASK_WORDS
        st = _BU.STORAGE | _BU.COPY_DST | _BU.COPY_SRC
        self.buffers = {
            "shadow": buffer(device, SHADOW_DTYPE.itemsize, "shadow.uniforms",
                             _BU.UNIFORM | _BU.COPY_DST),
            "shadow_views": buffer(device, SHADOW_VIEWS * SHADOW_VIEW_DTYPE.itemsize,
                                   "shadow.views", _BU.UNIFORM | _BU.COPY_DST),
            "lights": buffer(device, MAX_LIGHTS * LIGHT_DTYPE.itemsize, "shadow.lights",
                             _BU.UNIFORM | _BU.COPY_DST),
            # the page table (table_words), then the physical pages: one binding
            "shadow_map": buffer(device, table + pages * SHADOW_PAGE_BYTES, "shadow.map", st),
            "shadow_marks": buffer(device, 4 * entries, "shadow.marks", st),
            "shadow_hpm": buffer(device, 4 * mask_words, "shadow.page_mask", st),
            # each view's entries marked this frame, listed once (shadow_pages.wgsl)
            "shadow_marked": buffer(device, 4 * entries, "shadow.marked", st),
            "shadow_free": buffer(device, 4 * pages, "shadow.free_list", st),
            "shadow_owner": buffer(device, 4 * pages, "shadow.owner", st),  # page id + 1 a page
            # free-list top, pressure now and next, 0, each view's marked count
            "shadow_pool_state": buffer(device, 4 * POOL_STATE_WORDS, "shadow.pool_state", st),
            "shadow_draw": buffer(device, 4 * pages, "shadow.draw_list", st),
            "shadow_dirty": buffer(device, 16 * MAX_DIRTY * SHADOW_VIEWS, "shadow.dirty", st),
            "shadow_state": buffer(device, 4 * len(STATE_WORDS), "shadow.state", st),
            "shadow_clear_args": buffer(device, 16, "shadow.clear_args",
                                        _BU.STORAGE | _BU.INDIRECT),  # shadow_clear's dispatch
        }
        # what the shadow views' culling and rasterizers bind in place of the camera's
        self.frame_buffers = {
            "frame": buffer(device, FRAME_DTYPE.itemsize, "shadow.frame_uniforms",
                            _BU.UNIFORM | _BU.COPY_DST),
            "state": self.buffers["shadow_state"],
            "args": buffer(device, 4 * len(ARGS_WORDS), "shadow.args",
                           _BU.STORAGE | _BU.INDIRECT),
            "visible": buffer(device, 16 * visible_capacity, "shadow.visible", _BU.STORAGE),
        }
        # the HW pass draws each (cluster, page) into a page-sized viewport (a placeholder:
        # WebGPU needs one attachment; the pool is the real target)
        self.hw_target = device.create_texture(
            size=(SHADOW_PAGE, SHADOW_PAGE, 1), format="depth32float",
            usage=wgpu.TextureUsage.RENDER_ATTACHMENT, label="shadow.placeholder").create_view()
        # (sun, texel0, zmin, centre, radius, lights): the frame the pages were drawn in
        self._key: tuple | None = None
        self._dirty: list[np.ndarray] = []  # moved instances' world spheres since the last frame
        self._all_dirty = False
        self._sent_dirty = False  # the last `update` sent moved bounds
        self.needs_reset = True
        self.views = np.zeros(SHADOW_VIEWS, SHADOW_VIEW_DTYPE)
        self.view_count = SHADOW_LEVELS
        self.uniform = np.zeros(1, SHADOW_DTYPE)
        self.light_faces: list[int] = []  # shadow faces each light got (0: none)

    # ------------------------------------------------------------------ invalidation

    def note_moved(self, count: int, spheres) -> None:
        """`count` world spheres that moved instances covered before and after their move
        (`spheres()` computes them, (count, 4), only when they are used): the pages under them
        are drawn again when next needed (past MAX_DIRTY, every page)."""
        if self._all_dirty or len(self._dirty) + count > MAX_DIRTY:
            self.redraw_all()
            return
        self._dirty.extend(np.asarray(spheres(), np.float64).reshape(-1, 4))

    def redraw_all(self) -> None:
        """Every page is drawn again when next needed (its geometry may have changed: a new
        streamed cut, or `shadow_cache` off); kept pages keep their physical pages."""
        self._all_dirty, self._dirty = True, []

    @property
    def changed(self) -> bool:
        """This frame (since `update`) draws pages again: a reset is due or moved bounds were
        sent."""
        return self.needs_reset or self._sent_dirty

    @property
    def texel0(self) -> float:
        """Level 0's texel, world units (the map's frame: set by the first `update`)."""
        return float(self._key[1])

    def invalidate(self) -> None:
        """Every page is drawn again when next needed (the scene changed)."""
        self.needs_reset = True

    # ------------------------------------------------------------------ per frame

    def reset(self, encoder: wgpu.GPUCommandEncoder) -> None:
        """Forget every page: the table empty, every physical page free."""
        q = self.device.queue
        table = np.zeros((SUN_ENTRIES + self.faces * LOCAL_ENTRIES, 4), np.uint32)
        table[:, 0] = NO_PAGE
        q.write_buffer(self.buffers["shadow_map"], 0, table)
        q.write_buffer(self.buffers["shadow_free"], 0, np.arange(self.pages, dtype=np.uint32))
        pool_state = np.zeros(POOL_STATE_WORDS, np.uint32)
        pool_state[0] = self.pages  # every page free
        q.write_buffer(self.buffers["shadow_pool_state"], 0, pool_state)
        encoder.clear_buffer(self.buffers["shadow_marks"])
        encoder.clear_buffer(self.buffers["shadow_owner"])
        self.needs_reset = False
        self._dirty, self._all_dirty = [], False

    def update(self, sun: tuple[float, float] | None, scene_sphere: tuple[np.ndarray, float],
               eye: np.ndarray, inv_view_proj: np.ndarray, lod_scale: float,
               frame_index: int, lights: tuple[Light, ...] = ()) -> None:
        """Write this frame's ShadowInfo, views and lights to the GPU (`self.uniform`,
        `self.views`); a reset is due when the sun, the lights or the scene's frame changed.
        `sun` None: no sun (its levels are placed as for one overhead, never marked)."""
        s = sun_direction(*(sun or (0.0, 90.0)))
        u, v = light_basis(s)
        c, r = np.asarray(scene_sphere[0], np.float64), float(scene_sphere[1])
        key = self._key
        inside = (key is not None and key[0] == sun and key[5] == tuple(lights)
                  and np.linalg.norm(c - key[3]) + r <= key[4])
        if not inside:  # a new frame for the map: the scene's sphere, grown, and the lights
            big = max(r, 1e-30) * SCENE_MARGIN
            # the coarsest level's window: COARSEST_SPAN radii, its texel a power of two
            coarsest = 2.0 ** math.ceil(math.log2(COARSEST_SPAN * big / WINDOW))
            texel0 = coarsest / 2 ** (SHADOW_LEVELS - 1)
            f = -s
            zmin = float(f @ c) - big
            key = (sun, texel0, zmin, c, big, tuple(lights))
            self._key = key
            self.needs_reset = True
            self._place_faces(list(lights), c, big)
        texel0, zmin, c0, big = key[1], key[2], key[3], key[4]
        zrange = 2 * big
        f = -s
        eye = np.asarray(eye, np.float64)
        cam = np.array([eye @ u, -(eye @ v)])  # light space, y down
        mid = np.array([c0 @ u, -(c0 @ v)])
        views, lv = self.views, np.arange(SHADOW_LEVELS)
        # the levels at once (each the same float64 arithmetic as one at a time)
        t = texel0 * 2.0**lv
        page = t * SHADOW_PAGE
        half = WINDOW * t / 2
        centre = np.repeat(cam[None], SHADOW_LEVELS, axis=0)
        slack = (half - big - page)[:, None]
        # a window that can hold the scene keeps it whole
        centre = np.where(slack > 0, np.clip(centre, mid - slack, mid + slack), centre)
        origin = np.floor(centre / page[:, None]).astype(np.int64) - SHADOW_PAGES // 2
        origin = np.clip(origin, -(1 << 30), 1 << 30)
        cx = (origin[:, 0] + SHADOW_PAGES // 2) * page
        cy = -(origin[:, 1] + SHADOW_PAGES // 2) * page
        m = np.zeros((SHADOW_LEVELS, 4, 4))
        m[:, 0, :3], m[:, 0, 3] = u / half[:, None], -cx / half
        m[:, 1, :3], m[:, 1, 3] = v / half[:, None], -cy / half
        m[:, 2, :3], m[:, 2, 3] = f / zrange, -zmin / zrange
        m[:, 3, 3] = 1.0
        views["view_proj"][:SHADOW_LEVELS] = m.transpose(0, 2, 1).reshape(SHADOW_LEVELS, -1)
        planes = np.zeros((SHADOW_LEVELS, 5, 4))
        planes[:, 0, :3], planes[:, 0, 3] = u, -(cx - half)
        planes[:, 1, :3], planes[:, 1, 3] = -u, cx + half
        planes[:, 2, :3], planes[:, 2, 3] = v, -(cy - half)
        planes[:, 3, :3], planes[:, 3, 3] = -v, cy + half
        planes[:, 4, 3] = 1.0
        views["planes"][:SHADOW_LEVELS] = planes
        views["origin"][:SHADOW_LEVELS, :2] = origin
        views["origin"][:SHADOW_LEVELS, 2:] = 0
        views["texel"][:SHADOW_LEVELS] = np.stack([t, 1 / t, 0 * t, 0 * t], axis=1)
        views["eye"][:SHADOW_LEVELS] = 0.0
        views["table"][:SHADOW_LEVELS, :3] = np.stack(
            [lv * SHADOW_PAGES**2, np.full(SHADOW_LEVELS, 7), lv * HPM_STRIDE], axis=1)
        un = self.uniform
        un["sun"] = [*s, 0.0 if sun is None else 1.0]
        un["axis_u"] = [*u, 0.0]
        un["axis_v"] = [*v, 0.0]
        un["depth"] = [zmin, 1 / zrange, texel0, NORMAL_BIAS]
        un["footprint"] = [lod_scale, 1.0, MARK_RADIUS, 0.0]
        un["inv_view_proj"] = np.asarray(inv_view_proj, np.float32).T.reshape(-1)
        un["views"] = [self.view_count, len(lights), table_words(self.faces), 0]
        dirty = self._dirty_rects(texel0)
        self._sent_dirty = len(dirty) > 0
        un["counts"] = [SHADOW_LEVELS, self.pages, frame_index + 1, len(dirty) // self.view_count]
        q = self.device.queue
        q.write_buffer(self.buffers["shadow"], 0, un)
        q.write_buffer(self.buffers["shadow_views"], 0, views)
        if len(dirty):
            q.write_buffer(self.buffers["shadow_dirty"], 0, dirty)

    def _place_faces(self, lights: list[Light], centre: np.ndarray, big: float) -> None:
        """The local lights' faces as views (SHADOW_LEVELS on, each face's LOCAL_MIPS mips in
        a row), their far planes at their range or the far side of the scene's (grown) sphere,
        the nearer; the allocator's order; the `lights` uniform."""
        views = self.views
        faces = faces_of(lights, min(self.faces, MAX_LOCAL_FACES))
        self.light_faces = faces
        first, v, entry, mask = [], SHADOW_LEVELS, SUN_ENTRIES, SHADOW_LEVELS * HPM_STRIDE
        rank = [(SHADOW_LEVELS - 1 - lv, 0, lv) for lv in range(SHADOW_LEVELS)]
        for light, count in zip(lights, faces, strict=True):
            first.append(v)
            if not count:
                continue
            pos = np.asarray(light.position, np.float64)
            # as far as the scene reaches (a near plane at 1/2000 of a huge range would
            # clip every caster), or its range where that is nearer
            far = min(light.range or math.inf, np.linalg.norm(pos - centre) + big)
            for frame in face_frames(light, max(far, 1e-6)):
                for m in range(LOCAL_MIPS):
                    n = LOCAL_PAGES >> m
                    views["view_proj"][v] = frame["view_proj"].T.reshape(-1)
                    views["planes"][v] = frame["planes"]
                    views["origin"][v] = 0
                    focal = n * SHADOW_PAGE / 2 / frame["tan_half"]
                    views["texel"][v] = [0.0, focal, frame["near"], frame["far"]]
                    views["eye"][v] = [*pos, 1.0]
                    views["table"][v, :3] = [entry, int(math.log2(n)), mask]
                    rank.append((LOCAL_MIPS - 1 - m, 1, v))
                    entry += n * n
                    mask += _mask_words(n)
                    v += 1
        self.view_count = v
        # the allocator's order: the coarsest of every view first (a sun's level before a
        # face's mip of the same rank)
        views["table"][:v, 3] = [view for *_, view in sorted(rank)]
        records = light_records(lights, first, faces)
        self.device.queue.write_buffer(self.buffers["lights"], 0, records)

    def _dirty_rects(self, texel0: float) -> np.ndarray:
        """(k * views, 4) int32 absolute page rectangles (x0, y0, x1, y1) a view, for each
        moved sphere (a rectangle of everything when too many moved)."""
        n_views = self.view_count
        big = np.iinfo(np.int32)
        if self._all_dirty:
            self._all_dirty, self._dirty = False, []
            return np.tile(np.array([[big.min, big.min, big.max, big.max]], np.int32),
                           (n_views, 1))
        if not self._dirty:
            return np.zeros((0, 4), np.int32)
        u = self.uniform["axis_u"][0, :3].astype(np.float64)
        v = self.uniform["axis_v"][0, :3].astype(np.float64)
        sph = np.array(self._dirty)
        self._dirty = []
        x, y, r = sph[:, :3] @ u, -(sph[:, :3] @ v), sph[:, 3]
        out = np.zeros((len(sph), n_views, 4), np.int64)
        for lv in range(SHADOW_LEVELS):
            page = texel0 * 2.0**lv * SHADOW_PAGE
            out[:, lv] = np.stack([np.floor((x - r) / page), np.floor((y - r) / page),
                                   np.floor((x + r) / page), np.floor((y + r) / page)], axis=1)
        for fv in range(SHADOW_LEVELS, n_views):
            out[:, fv] = face_page_rects(self.views[fv], sph)
        return np.clip(out, big.min, big.max).astype(np.int32).reshape(-1, 4)


def face_page_rects(view: np.ndarray, spheres: np.ndarray) -> np.ndarray:
    """(k, 4) page rectangles (x0, y0, x1, y1) of a face view (a SHADOW_VIEW_DTYPE record) that
    world spheres (k, 4) cover: their boxes in the face's axes, the corners projected (one
    reaching the near plane covers the window), as shaders/shadow.wgsl `shadow_page_rect` in
    float64 (grown by what float32 may round)."""
    m = view["view_proj"].reshape(4, 4).T.astype(np.float64)
    n = 1 << int(view["table"][1])
    near = float(view["texel"][2])
    a = float(view["texel"][1]) * 2.0 / (n * SHADOW_PAGE)
    c = np.c_[spheres[:, :3], np.ones(len(spheres))] @ m.T
    r = spheres[:, 3]
    w0, w1 = c[:, 3] - r, c[:, 3] + r
    safe = w0 > near
    w0s = np.where(safe, w0, 1.0)
    xs = np.stack([(c[:, 0] + sx * a * r) / w for sx in (-1, 1) for w in (w0s, w1)])
    ys = np.stack([(c[:, 1] + sy * a * r) / w for sy in (-1, 1) for w in (w0s, w1)])
    slack = 1e-4 * (1 + np.abs(xs).max(0) + np.abs(ys).max(0))  # float32 on the GPU
    x0 = np.floor((xs.min(0) - slack) * 0.5 * n + 0.5 * n)
    x1 = np.floor((xs.max(0) + slack) * 0.5 * n + 0.5 * n)
    y0 = np.floor((0.5 - (ys.max(0) + slack) * 0.5) * n)
    y1 = np.floor((0.5 - (ys.min(0) - slack) * 0.5) * n)
    rect = np.stack([x0, y0, x1, y1], axis=1)
    rect[~safe] = [0, 0, n - 1, n - 1]
    return np.clip(rect, -(1 << 30), 1 << 30)
