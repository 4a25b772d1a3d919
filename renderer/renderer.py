"""The renderer's front door: `Renderer`, the scene API and the numpy API around the frame.

What a caller sees: the adapter's limits checked before anything is allocated (`check_image`,
`check_instances`: one-line ValueErrors naming the limit), the scene (`load`, `add_instance`,
`add_grid`, `set_transform`), the lighting and the switches (`set_sun`, `set_lights`,
`set_shadows`, `set_occlusion`, `set_traversal`), and the frames: `submit` (nothing waits),
`stats()` (read back a few frames late), `render()` (waits for its own frame and decodes the
images into a `RenderResult`; supersampled with `ssaa`), `render_converged`, `read_hzb`,
`read_visible`; temporal anti-aliasing through `accumulate` (docs/ARCHITECTURE.md
"Anti-aliasing").

The frame itself, its GPU resources, uniforms and the sequence of passes, is
`renderer.frame.Frame`, which the Renderer owns (`Renderer.frame`).
"""

from __future__ import annotations

import os
import time
import warnings
from collections import deque
from collections.abc import Iterable, Iterator
from contextlib import contextmanager

import numpy as np
import wgpu

from preprocess.tess.pages import octahedral_decode
from renderer.aggregates import node_count
from renderer.antialias import check_accumulate, check_ssaa, downsample
from renderer.camera import Camera
from renderer.device import GpuContext, create_context
from renderer.frame import Frame, binding_limit, image_buffers
from renderer.instances import world_spheres
from renderer.layout import STATE
from renderer.lights import Light, check_lights, faces_wanted
from renderer.limits import (
    MAX_LOCAL_FACES,
    ID_EMPTY,
    IMAGE_BUFFER_BYTES,
    INSTANCE_BLOCK,
    INSTANCE_MASK,
    INSTANCE_SLOT_BYTES,
    MAX_IMAGE_SIZE,
    MAX_WORLD,
    SLOT_BITS,
    SLOT_MASK,
)
from renderer.options import DEBUG_VIEWS, RenderOptions, check_sun
from renderer.results import FrameStats, RenderResult
from renderer.scene import Scene, SceneError, grid_offsets, open_asset

__all__ = ["Renderer"]

_MIB = 1 << 20
# the buffers a frame's images are read from (`read_images`, `render_many`'s copies)
_IMAGE_BUFFERS = ("color", "depth_out", "normal_xy", "normal_z", "ids_a", "ids_b", "gbuffer_a",
                  "gbuffer_b", "velocity")


def _mib(nbytes: int, beside: int | None = None) -> str:
    """`nbytes` in MiB, or in bytes where MiB would read the same as `beside`."""
    text = f"{nbytes / _MIB:,.0f} MiB" if nbytes >= 10 * _MIB else f"{nbytes / _MIB:,.1f} MiB"
    if beside is not None and text == _mib(beside):
        return f"{nbytes:,} bytes"
    return text


def _check_size(width: int, height: int) -> None:
    ok = all(isinstance(v, (int, np.integer)) and not isinstance(v, bool)
             for v in (width, height))
    if not (ok and 1 <= width <= MAX_IMAGE_SIZE and 1 <= height <= MAX_IMAGE_SIZE):
        raise ValueError(f"image size {width}x{height} out of range (whole numbers, "
                         f"1..{MAX_IMAGE_SIZE})")


def _check_world(reach: float, what: str) -> None:
    if not reach <= MAX_WORLD:
        raise ValueError(f"{what} reach {reach:.3g} from the world origin; float32 positions "
                         f"hold at most {MAX_WORLD:.0e} (limits.MAX_WORLD)")


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
        _check_size(width, height)  # what needs no device: before one is opened
        self.ctx = ctx or create_context(force_fallback32=self.options.fallback32)
        self.device = self.ctx.device
        self.vis64 = self.ctx.int64_atomics and not self.options.fallback32
        self.check_image(width, height)  # what the adapter binds: before anything is allocated
        self._check_capacities()
        self.scene = Scene()
        lights = tuple(check_lights(self.options.lights))
        self.frame = Frame(self.ctx, self.options, self.vis64, lights)
        self.set_lights(lights)
        self.resize(width, height)

    # ---------------------------------------------------------------- the frame's switches

    @property
    def sun(self) -> tuple[float, float] | None:
        """(azimuth, elevation) degrees, or None: `set_sun`."""
        return self.frame.sun

    @property
    def lights(self) -> tuple[Light, ...]:
        """The spot and point lights: `set_lights`."""
        return self.frame.lights

    @property
    def shadows(self) -> bool:
        """Whether shadows are drawn: `set_shadows`."""
        return self.frame.shadows

    @property
    def occlusion(self) -> bool:
        """Whether two-pass occlusion culling is on: `set_occlusion`."""
        return self.frame.occlusion

    @property
    def persistent(self) -> bool:
        """Whether the BVH traversal runs in persistent workgroups: `set_traversal`."""
        return self.frame.persistent

    @property
    def streamer(self):
        """The `renderer.streaming.PageStreamer` while the scene streams, else None."""
        return self.frame.streamer

    @property
    def texture_pool(self):
        """The scene's textures on the GPU (`renderer.texture_pool.TexturePool`: tiles resident,
        streaming or not), once a frame has been drawn; else None."""
        return self.frame.textures

    def set_occlusion(self, enabled: bool) -> None:
        """Switch two-pass occlusion culling on or off (on: from the next frame, once an HZB
        has been built)."""
        self.frame.set_occlusion(enabled)

    def set_traversal(self, persistent: bool) -> None:
        """Switch the BVH traversal between persistent workgroups and one dispatch per level
        (both pipelines are built up front; the cut is the same)."""
        self.frame.set_traversal(persistent)

    def set_sun(self, azimuth: float | None, elevation: float | None = None) -> None:
        """Move the sun, (azimuth, elevation) in degrees as `RenderOptions.sun` (ValueError for
        one at or below the horizon), or take it away (None); every shadow page is drawn
        again."""
        if azimuth is None:
            self.frame.sun = None
            return
        check_sun((azimuth, elevation))
        self.frame.sun = (float(azimuth), float(elevation))

    def set_lights(self, lights) -> None:
        """The scene's spot and point lights (renderer.Light, at most MAX_LIGHTS; ValueError
        otherwise), from the next frame: each casts its shadow through its own faces of the
        shadow pool while MAX_LOCAL_FACES last (a RuntimeWarning names those past it, lit without
        a shadow); every shadow page is drawn again."""
        lights = tuple(check_lights(lights))
        want = faces_wanted(lights)
        if want > MAX_LOCAL_FACES:
            warnings.warn(f"the lights need {want} shadow faces (a spot 1, a point light 6); "
                          f"the first {MAX_LOCAL_FACES} are drawn, the lights past them cast "
                          f"no shadow", RuntimeWarning, stacklevel=2)
        self.frame.set_lights(lights)

    def set_shadows(self, enabled: bool) -> None:
        """Draw the sun's and the lights' shadows (from the next frame) or not; they light the lit
        view either way. The shadow pool (`RenderOptions.shadow_pool_mb`) is allocated when shadows
        are first switched on."""
        self.frame.set_shadows(enabled)

    # ---------------------------------------------------------------- scene

    def load(self, path: str | os.PathLike) -> int:
        """Open a `.tess` asset; returns its index for `add_instance`."""
        return self.scene.add_asset(open_asset(path))

    def clear_scene(self) -> None:
        """Drop every asset and instance (the next frame uploads whatever is added after)."""
        self.scene = Scene()
        self.frame.forget_scene()

    def add_instance(self, asset: int, transform: np.ndarray | None = None) -> int:
        """Place an asset with a (4, 4) or (3, 4) affine object-to-world transform (identity by
        default); returns the instance's index."""
        return self.add_instances(asset, np.eye(4, dtype=np.float32) if transform is None
                                  else transform).start

    def add_instances(self, asset: int, transforms: np.ndarray) -> range:
        """Place k instances of an asset in one call: `transforms` (k, 4, 4) or (k, 3, 4) affine
        object-to-world transforms (float32 kept as given). Each is checked (finite, affine,
        not singular, within MAX_WORLD: SceneError or ValueError naming the first bad one, and
        nothing is added); returns their indices."""
        a = self.scene.check_asset(asset)
        rows = self.scene.checked(transforms)
        self.check_instances(len(rows), a)
        self._check_reach(np.array([a]), rows)
        return self.scene.add_rows(a, rows)

    def set_transform(self, instance: int, transform: np.ndarray) -> None:
        """Move an instance: its (4, 4) object-to-world transform from the next frame on,
        checked as `add_instance` checks it (SceneError, or ValueError past `MAX_WORLD`). The
        next frame's velocity measures the motion from the transform of the frame before; the
        rows change in place (no re-upload, the HZB stays valid)."""
        self.set_transforms(np.array([self.scene.check_instance(instance)]), transform)

    def set_transforms(self, instances, transforms: np.ndarray) -> None:
        """Move many instances in one call: `instances` (k,) indices, `transforms` (k, 4, 4) or
        (k, 3, 4) (or one transform for all), checked as `add_instances` checks them (nothing
        moves on an error). The next frame uploads only the moved rows (a table of k entries,
        scattered into place on the GPU) and its velocity measures their motion."""
        idx, rows = self.scene.checked_moves(instances, transforms)
        self._check_reach(self.scene.instance_asset[idx], rows)
        self.scene.move_rows(idx, rows)

    def _check_reach(self, assets: np.ndarray, rows: np.ndarray) -> None:
        """ValueError if an instance of `assets[i]` under `rows[i]` ((k, 3, 4), checked) reaches
        past MAX_WORLD (`scene_file.instance_reach`: its bounding sphere's farthest coordinate)."""
        _check_world(world_spheres(rows, assets, self.scene.asset_spheres())[1],
                     "the instance's bounds")

    def add_grid(self, asset: int, count: int, *, spacing: float | None = None,
                 origin=(0.0, 0.0, 0.0)) -> range:
        """`count` instances of an asset on a square grid in the XZ plane, centred on `origin`
        (the asset's bounding sphere centred on each grid point), `spacing` apart (default:
        1.2 x the asset's diameter)."""
        if isinstance(count, bool) or not isinstance(count, (int, np.integer)) or count < 1:
            raise ValueError(f"a grid needs a whole number of instances >= 1, not {count!r}")
        if spacing is not None and not (np.isfinite(spacing) and spacing > 0):
            raise ValueError(f"grid spacing must be a finite number > 0, not {spacing!r}")
        o = np.asarray(origin, np.float64)
        if o.shape != (3,) or not np.isfinite(o).all():
            raise ValueError(f"grid origin must be 3 finite numbers, not {origin!r}")
        asset = self.scene.check_asset(asset)
        self.check_instances(int(count), asset)  # before the transforms are built
        s = self.scene.assets[asset].bounds_sphere.astype(np.float64)
        spacing = float(spacing or 2.4 * float(s[3]))
        half = (int(np.ceil(np.sqrt(count))) - 1) / 2 * spacing
        _check_world(float(np.abs(o).max() + half + s[3]), "the grid's bounds")
        rows = np.zeros((count, 3, 4), np.float32)
        rows[:, [0, 1, 2], [0, 1, 2]] = 1  # identity rotations: nothing to check but the reach
        rows[:, :, 3] = o - s[:3] + grid_offsets(count, spacing)
        return self.scene.add_rows(asset, rows)

    def max_instances(self) -> int:
        """The most instances of one asset a scene may hold on this adapter: the instance buffer
        is one storage binding of INSTANCE_SLOT_BYTES an instance (slots padded per asset: see
        renderer/instances.py; aggregate proxies after them), and the queue's instance word
        holds 2^VIEW_SHIFT slots."""
        limit = binding_limit(self.device)[0]
        lo, hi = 0, limit // INSTANCE_SLOT_BYTES + 1  # fits, does not
        while hi - lo > 1:
            mid = (lo + hi) // 2
            need, slots = self._instance_buffer(np.array([mid]))
            lo, hi = (mid, hi) if need <= limit and slots <= INSTANCE_MASK + 1 else (lo, mid)
        return lo

    def _instance_buffer(self, counts: np.ndarray) -> tuple[int, int]:
        """(bytes, slots) of the instance buffer for `counts` instances of each asset: each
        asset's run padded to whole blocks, with aggregate proxies a slot a node after them
        (each asset's padded alike), then an asset index a block."""
        blocks = -(-np.asarray(counts, np.int64) // INSTANCE_BLOCK)
        slots = int(blocks.sum()) * INSTANCE_BLOCK
        if self.options.aggregates:
            slots += sum(-(-node_count(int(b)) // INSTANCE_BLOCK) * INSTANCE_BLOCK
                         for b in blocks if b)
        return slots * INSTANCE_SLOT_BYTES + 16 * -(-slots // (4 * INSTANCE_BLOCK)), slots

    def check_instances(self, more: int, asset: int = 0) -> None:
        """Raise ValueError, before anything is built, if the scene cannot take `more` instances
        of `asset`: the message names the adapter's limit and the largest count."""
        counts = np.bincount(self.scene.instance_asset,
                             minlength=max(len(self.scene.assets), asset + 1)).astype(np.int64)
        counts[asset] += more
        total = int(counts.sum())
        need, slots = self._instance_buffer(counts)
        limit, name = binding_limit(self.device)
        if need > limit or slots > INSTANCE_MASK + 1:
            n = self.scene.instance_count
            have = f" (the scene has {n:,})" if n else ""
            why = (f"this adapter binds at most {_mib(limit, need)} ({name})" if need > limit
                   else f"instance indices hold at most {INSTANCE_MASK + 1:,} slots")
            raise ValueError(f"{total:,} instances need {_mib(need, limit)} for the instance "
                             f"buffer ({INSTANCE_SLOT_BYTES} bytes each); {why}: at most "
                             f"{self.max_instances():,} instances{have}")

    def bounds(self) -> tuple[np.ndarray, float]:
        """(center, radius) of a sphere around every instance."""
        if not self.scene.instance_count:
            raise SceneError("the scene has no instance")
        c, r = self.frame.scene_bounds(self.scene)
        return c.copy(), r

    # ---------------------------------------------------------------- resources

    def check_image(self, width: int, height: int) -> None:
        """Raise ValueError, before anything is allocated, if this adapter cannot hold a
        width x height frame: each image buffer is one storage binding (the largest holds 8
        bytes a pixel, `limits.IMAGE_BUFFER_BYTES`), the HW pass's attachment one texture. The
        message names the limit and the largest image."""
        _check_size(width, height)
        lim = self.device.limits
        side = int(lim.get("max-texture-dimension-2d", MAX_IMAGE_SIZE))
        if max(width, height) > side:
            raise ValueError(f"image size {width}x{height}: this adapter's textures are at most "
                             f"{side} pixels a side (max_texture_dimension_2d)")
        sizes = image_buffers(width, height, self.vis64)
        name = max(sizes, key=sizes.get)
        limit, limit_name = binding_limit(self.device)
        if sizes[name] > limit:
            per = IMAGE_BUFFER_BYTES[name]
            most = limit // per
            square = int(np.sqrt(most))
            what = ("visibility" if name.startswith("vis") else
                    {"depth_out": "depth", "normal_xy": "normal", "ids_a": "ids"}.get(name, name))
            raise ValueError(f"image size {width}x{height} needs {_mib(sizes[name], limit)} for "
                             f"its {what} buffer ({per} bytes a pixel); this adapter binds at most "
                             f"{_mib(limit, sizes[name])} ({limit_name}): at most {most:,} "
                             f"pixels, e.g. {square}x{square}")

    def _check_capacities(self) -> None:
        """The frame's lists (RenderOptions capacities), each one storage binding."""
        o = self.options
        limit, name = binding_limit(self.device)
        for field_name, count in (("queue_capacity", o.queue_capacity),
                                  ("visible_capacity", o.visible_capacity),
                                  ("occluded_capacity", o.occluded_capacity)):
            if 8 * count > limit:
                raise ValueError(f"RenderOptions.{field_name} {count:,} needs "
                                 f"{_mib(8 * count, limit)}; this adapter binds at most "
                                 f"{_mib(limit, 8 * count)} ({name}): at most {limit // 8:,}")

    def resize(self, width: int, height: int) -> None:
        """Reallocate the image buffers for a width x height frame (ValueError, with nothing
        changed, where this adapter cannot hold it: `check_image`)."""
        self.check_image(width, height)
        self.frame.resize(int(width), int(height))

    # ---------------------------------------------------------------- the frames

    def submit(self, camera: Camera, *, tau: float | None = None,
               debug_view: str | int = "lit", freeze_culling: bool = False,
               accumulate: int = 0) -> int:
        """Encode and submit one frame; returns its index. Nothing waits for the GPU: stats
        arrive later through `stats()`, images through `read_images()`. With
        `freeze_culling`, the clusters chosen by the previous frame are drawn again from this
        camera (culling is skipped), to inspect what a view selected from elsewhere.

        `accumulate` K > 0: temporal anti-aliasing (renderer/antialias.py). The frame is drawn
        with a sub-pixel jitter (the next point of a Halton (2, 3) sequence) and its colour
        blended on the GPU into a history reprojected with the frame's velocity (and, in a frame
        where the camera or an instance moved, clipped to this frame's neighbourhood:
        renderer/passes/accumulate.py), a pixel's history averaging its last K frames at most:
        a still view converges to a box-filtered picture, motion leaves no ghost. The colour
        image becomes the accumulated one; depth, normal, ids and the G-buffer stay this
        (jittered) frame's. The history goes on while frames accumulate one after another with
        the same size, scene, debug view, tau and lighting; any other frame starts it again."""
        t0 = time.perf_counter()
        view = DEBUG_VIEWS.index(debug_view) if isinstance(debug_view, str) else int(debug_view)
        tau = self.options.tau if tau is None else float(tau)
        if not (np.isfinite(tau) and tau > 0):
            raise ValueError(f"tau must be a finite number > 0 pixels, not {tau}")
        frames = check_accumulate(accumulate)
        return self.frame.submit(self.scene, camera, tau, view, freeze_culling, started=t0,
                                 accumulate=frames)

    def stats(self, *, wait: bool = False) -> FrameStats | None:
        """The newest frame statistics read back so far (all submitted frames with wait)."""
        return self.frame.stats(wait_for=self.frame.frame_index - 1 if wait else None)

    def read_images(self) -> dict[str, np.ndarray]:
        """The resolve and depth-target outputs of the last submitted frame (waits for the
        GPU)."""
        f = self.frame.resources
        q = self.device.queue
        return self._decode_images({k: np.frombuffer(q.read_buffer(f.buffers[k]), np.uint8)
                                    for k in _IMAGE_BUFFERS}, f.width, f.height)

    def _decode_images(self, raw: dict[str, np.ndarray], w: int, h: int
                       ) -> dict[str, np.ndarray]:
        """The images of a frame from its image buffers' bytes (`_IMAGE_BUFFERS`)."""
        n = w * h

        def view(k: str, dtype, per: int) -> np.ndarray:  # image buffer k, `per` words a pixel
            return raw[k][: 4 * per * n].view(dtype)

        color = view("color", np.uint8, 1)
        depth = view("depth_out", np.float32, 1)
        normal = np.concatenate([view("normal_xy", np.float32, 2).reshape(h, w, 2),
                                 view("normal_z", np.float32, 1).reshape(h, w, 1)], axis=2)
        ids = np.concatenate([  # instance, cluster | triangle, level << 1 | hw
            view(k, np.uint32, 2).reshape(h, w, 2) for k in ("ids_a", "ids_b")], axis=2)
        empty = ids[..., 0] == ID_EMPTY
        ga, gb = (view(k, np.uint32, 2).reshape(h, w, 2) for k in ("gbuffer_a", "gbuffer_b"))

        def col(k: int) -> np.ndarray:
            return np.where(empty, -1, ids[..., k].astype(np.int64))

        def bytes4(words: np.ndarray) -> np.ndarray:
            return np.ascontiguousarray(words).view(np.uint8).reshape(h, w, 4)

        velocity = view("velocity", np.float32, 2)
        return {
            "color": color.reshape(h, w, 4).copy(),
            "depth": depth.reshape(h, w).copy(),
            "normal": normal,
            "instance": self.frame.instances.to_user(col(0)),  # GPU slots -> instances
            "cluster": col(1),
            "triangle": col(2),
            "level": np.where(empty, -1, ((ids[..., 3] & 0xFFFFFF) >> 1).astype(np.int64)),
            "hardware": ~empty & ((ids[..., 3] & 1) == 1),
            "base_color": bytes4(ga[..., 0]),
            "shading_normal": np.where(  # octahedral, as the pages encode normals
                empty[..., None], np.float32(0),
                octahedral_decode(ga[..., 1].reshape(-1)).reshape(h, w, 3)),
            "roughness": (gb[..., 0] & 0xFF).astype(np.float32) / 255,
            "metallic": ((gb[..., 0] >> 8) & 0xFF).astype(np.float32) / 255,
            "material": np.where(empty, -1, (gb[..., 0] >> 16).astype(np.int64)),
            "emissive": bytes4(gb[..., 1])[..., :3].copy(),
            "occlusion": (gb[..., 1] >> 24).astype(np.float32) / 255,
            "velocity": velocity.reshape(h, w, 2).copy(),
            # resolve keeps the sun's visibility in ids_b's top 8 bits
            "shadow": np.where(empty, np.float32(1), (ids[..., 3] >> 24).astype(np.float32)
                               / np.float32(255)),
        }

    def render(self, camera: Camera, *, tau: float | None = None,
               debug_view: str | int = "lit", freeze_culling: bool = False,
               accumulate: int = 0, ssaa: int = 1) -> RenderResult:
        """Draw one frame and return its images and exact statistics (waits for the GPU);
        `accumulate` as `submit`'s.

        `ssaa` N > 1: supersampled, the frame drawn at N x N times the pixels and box-filtered
        down (`renderer.antialias.downsample`): the colour is the mean of each pixel's N x N
        samples in linear light; depth, normal, ids, the G-buffer and velocity (in output
        pixels) are the sample nearest the pixel's centre; the statistics are the large
        frame's. Unless `tau` is given, the LOD threshold is N times `RenderOptions.tau` in the
        large frame's pixels, which chooses the detail per output pixel (the cut of the plain
        frame); a `tau` given is in the large frame's pixels. ValueError, before anything is
        drawn, where this adapter cannot hold the large frame (`check_image`)."""
        n = check_ssaa(ssaa)
        with self._supersampled(n):
            index = self.submit(camera, tau=self._ssaa_tau(tau, n), debug_view=debug_view,
                                freeze_culling=freeze_culling, accumulate=accumulate)
            return downsample(self._result(camera, index), n)

    def render_many(self, cameras: Iterable[Camera], *, tau: float | None = None,
                    debug_view: str | int = "lit", in_flight: int = 2
                    ) -> Iterator[RenderResult]:
        """`render` for each camera in turn, with up to `in_flight` frames submitted ahead of
        the one being read back: each frame's images are copied into a mappable buffer of its
        own right after it (a ring of `in_flight` + 1), so the GPU draws the next frames while
        the CPU decodes this one. The images are those `render` gives for the same camera,
        velocity aside (it is the motion since the camera before, a dataset's flow); streamed
        pages or texture tiles arrive as they do over any sequence of frames."""
        if not (isinstance(in_flight, int) and in_flight >= 0):
            raise ValueError(f"in_flight must be a whole number >= 0, not {in_flight!r}")
        pending: deque = deque()
        free: list = []
        for cam in cameras:
            index = self.submit(cam, tau=tau, debug_view=debug_view)
            pending.append((cam, index, self._stage_images(free)))
            while len(pending) > in_flight:
                yield self._staged_result(*pending.popleft(), free)
        while pending:
            yield self._staged_result(*pending.popleft(), free)

    def _stage_images(self, free: list) -> tuple:
        """The last submitted frame's image buffers copied into a mappable buffer (one of
        `free`, or a new one): (the buffer, {name: (offset, size)}, width, height)."""
        f = self.frame.resources
        sizes = {k: f.buffers[k].size for k in _IMAGE_BUFFERS}
        total = sum(sizes.values())
        buf = next((b for b in free if b.size == total), None)
        if buf is None:
            buf = self.device.create_buffer(size=total, label="render_many.staging",
                                            usage=wgpu.BufferUsage.MAP_READ
                                            | wgpu.BufferUsage.COPY_DST)
        else:
            free.remove(buf)
        enc = self.device.create_command_encoder(label="render_many.copy")
        at, where = 0, {}
        for k, size in sizes.items():
            enc.copy_buffer_to_buffer(f.buffers[k], 0, buf, at, size)
            where[k] = (at, size)
            at += size
        self.device.queue.submit([enc.finish()])
        return buf, where, f.width, f.height

    def _staged_result(self, camera: Camera, index: int, staged: tuple, free: list
                       ) -> RenderResult:
        """Frame `index`'s RenderResult from its staged copy (waits for it); the buffer back to
        `free`."""
        buf, where, w, h = staged
        buf.map_sync(wgpu.MapMode.READ)
        try:
            data = np.frombuffer(buf.read_mapped(), np.uint8)
            images = self._decode_images({k: data[o: o + n] for k, (o, n) in where.items()},
                                         w, h)
        finally:
            buf.unmap()
        free.append(buf)
        stats = self.frame.stats_of(index)
        assert stats is not None and stats.frame == index
        return RenderResult(**images, stats=stats, near=camera.near)

    def _result(self, camera: Camera, index: int) -> RenderResult:
        """The images and statistics of frame `index`, the last submitted (waits)."""
        images = self.read_images()
        stats = self.frame.stats(wait_for=index)
        assert stats is not None and stats.frame == index
        return RenderResult(**images, stats=stats, near=camera.near)

    def _ssaa_tau(self, tau: float | None, n: int) -> float | None:
        return self.options.tau * n if tau is None and n > 1 else tau

    @contextmanager
    def _supersampled(self, n: int):
        """The frame at n times the width and height inside the block, back after it (the
        large one checked against the adapter first: one line naming the option)."""
        if n == 1:
            yield
            return
        f = self.frame.resources
        w, h = f.width, f.height
        try:
            self.check_image(n * w, n * h)
        except ValueError as e:
            raise ValueError(f"ssaa {n} draws {w}x{h} at {n * w}x{n * h}: {e}") from None
        self.frame.resize(n * w, n * h)
        try:
            yield
        finally:
            self.frame.resize(w, h)

    def render_converged(self, camera: Camera, *, max_frames: int = 200, accumulate: int = 0,
                         ssaa: int = 1, **kw) -> RenderResult:
        """`render` until streaming is steady for this view: a frame after which nothing was
        uploaded (everything wanted is resident, or the pool holds only pages this view uses and
        cannot take more: then `stats.streaming["requested"]` stays above 0), at most
        `max_frames` frames; one frame when nothing streams. `ssaa` as `render`'s.

        `accumulate` K > 0: then K frames of temporal accumulation (`submit`) from this still
        camera, the colour their history: each pixel the mean of K jittered samples (a box
        filter, as ssaa's, with its samples on a Halton sequence rather than a grid; a still
        view clips nothing). The other images are the last (jittered) frame's."""
        frames = check_accumulate(accumulate)
        n = check_ssaa(ssaa)
        kw["tau"] = self._ssaa_tau(kw.get("tau"), n)
        with self._supersampled(n):
            res = None
            if self._streams() or not frames:
                res = self._streamed(camera, max_frames, kw)
            self.frame.restart_accumulation()  # a history of this still alone
            for k in range(frames):
                index = self.submit(camera, accumulate=frames, **kw)
                if k == frames - 1:
                    res = self._result(camera, index)
            return downsample(res, n)

    def _streamed(self, camera: Camera, max_frames: int, kw: dict) -> RenderResult:
        """Frames until streaming is steady (`render_converged`)."""
        res = self.render(camera, **kw)
        first = res.stats.frame
        while self._streams() and res.stats.frame - first < max_frames:
            uploaded = [st["uploaded"] for st in (res.stats.streaming, res.stats.textures)
                        if st is not None]
            if uploaded and not any(uploaded) and res.stats.frame > first:
                break
            res = self.render(camera, **kw)
        return res

    def _streams(self) -> bool:
        """Whether pages or texture tiles stream."""
        t = self.frame.textures
        return self.streamer is not None or (t is not None and t.streaming)

    def read_hzb(self) -> list[np.ndarray]:
        """The HZB of the last submitted frame (waits): one (h, w) uint32 array per mip, reversed-Z
        depth bits, each texel the farthest depth below it (renderer.oracles.cpu_cull.hzb_mips)."""
        f = self.frame.resources
        raw = np.frombuffer(self.device.queue.read_buffer(f.buffers["hzb"]), np.uint32)
        return [raw[o: o + w * h].reshape(h, w).copy()
                for o, (w, h) in zip(f.hzb_offsets, f.hzb_levels, strict=True)]

    def read_visible(self) -> dict[str, np.ndarray]:
        """The last frame's visible clusters (waits): {"sw", "hw"}: (k, 2) uint32 rows
        (instance, scene page << 10 | cluster slot in the page), in the order the GPU wrote
        them."""
        q = self.device.queue
        buffers = self.frame.resources.buffers
        state = np.frombuffer(q.read_buffer(buffers["state"]), np.uint32)
        vis = np.frombuffer(q.read_buffer(buffers["visible"]), np.uint32).reshape(-1, 2)
        half = self.frame.visible_capacity // 2
        sw = min(int(state[STATE["sw_count"]]), half)
        hw = min(int(state[STATE["hw_count"]]), half)
        out = {"sw": vis[:sw].copy(), "hw": vis[half : half + hw].copy()}
        for rows in out.values():  # pool slots -> scene pages, as the frame saw them
            page = self.frame.pool.slot_pages(rows[:, 1] >> SLOT_BITS)
            rows[:, 1] = (page << SLOT_BITS) | (rows[:, 1] & SLOT_MASK)
            rows[:, 0] = self.frame.instances.to_user(rows[:, 0])  # instance slots -> indices
        return out
