"""How frames are drawn: `RenderOptions`, and the names the command line and the viewer offer
(debug views, traversals). Imports no GPU library, so that argument parsing stays light."""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, fields

from renderer.lights import check_lights
from renderer.limits import DEBUG_VIEWS  # noqa: F401  (renderer.DEBUG_VIEWS, the apps' lists)

# resolve's debug views, by index (shaders/resolve.wgsl `frame.debug_view`)

# the sun of RenderOptions.sun: (azimuth, elevation) in degrees. Azimuth 0 puts the sun towards
# +Z (behind the default camera, `Camera.framing`), 90 towards +X; elevation is above the XZ
# horizon (Y is up)
DEFAULT_SUN = (60.0, 40.0)

# BVH traversal by name -> RenderOptions.persistent
TRAVERSALS = {"auto": None, "persistent": True, "level": False}
# RenderOptions.texture_sampling's values; "auto": hardware where the adapter has
# texture-compression-bc and is a GPU (lavapipe's texture unit is software: the shader's
# decoder is as fast there, and "shader" keeps CI on the path every adapter has)
TEXTURE_SAMPLINGS = ("auto", "hardware", "shader")


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
    # workgroups of 64 lanes per level of the per-level traversal (at least: more where a level
    # has over 8 items a lane, shaders/prepare.wgsl). None: 16 on CPU adapters (a workgroup
    # costs ~6 us there), 1024 on GPUs
    level_workgroups: int | None = None
    # SW raster lanes per cluster and rounds per workgroup (a workgroup draws 128 / lanes * rounds
    # clusters). None: 128 and 1 on GPUs (a workgroup per cluster); 4 and 4 on CPU adapters,
    # where a workgroup costs ~6 us whatever it does, and lanes are SIMD slots that a cluster of
    # a few triangles would leave idle: 3x faster at 1 instance, 13x at 65,536 (BENCHMARKS.md).
    # There a lane's 128 triangles must stay within lavapipe's 65,535 loop iterations an
    # invocation (shaders/raster_sw.wgsl): more lanes or fewer rounds, never fewer lanes or more
    sw_lanes: int | None = None
    sw_rounds: int | None = None
    timestamps: bool = True  # GPU time per pass, where the adapter has timestamp queries
    # two-pass occlusion culling against a hierarchical depth buffer (docs/ARCHITECTURE.md
    # "Runtime"): the main pass tests against the previous frame's HZB, the post pass re-tests
    # what it hid
    occlusion: bool = True
    occluded_capacity: int = 1 << 20  # deferred nodes and clusters per frame (8 bytes each)
    # aggregate proxies (renderer/aggregates.py): a far group of instances whose honest error
    # projects under tau drawn as one box covering the share of pixels its instances cover, and
    # a far instance whose box's error projects under tau as its asset's box (where the box has
    # fewer triangles than the asset's root); False draws every instance itself
    aggregates: bool = True
    # streaming (renderer/streaming.py): pages live in a GPU pool of `pool_mb` (default: what the
    # adapter binds in one buffer, at most 1 GiB); only the hierarchy and the root pages are
    # uploaded on load, the rest when culling asks. None: stream only when the scene's pages do not
    # fit the pool; True: always (tests, benchmarks); False: never (an error if they do not fit)
    streaming: bool | None = None
    pool_mb: float | None = None
    pool_pages: int | None = None  # overrides pool_mb (tests)
    upload_mb: float = 16.0  # page uploads per frame, at most
    request_capacity: int = 1 << 14  # page requests read back per frame
    # textures (renderer/texture_pool.py): their tiles in a GPU pool of `texture_pool_mb`
    # (records, tables and every mip tail included); None: every tile while the textures fit one
    # binding (nothing streams), else as many as fit, at most 1 GiB. A pool smaller than the
    # textures need streams the tiles the BasePass samples, at most `texture_upload_mb` a frame
    texture_pool_mb: float | None = None
    texture_upload_mb: float = 16.0
    # where the tiles are read from: "hardware" (pool textures in the texture unit's formats,
    # BC decoded by it: adapters with texture-compression-bc), "shader" (the materials buffer,
    # BC decoded by material.wgsl: every adapter), "auto" (TEXTURE_SAMPLING_AUTO)
    texture_sampling: str = "auto"
    # virtual shadow maps (docs/ARCHITECTURE.md "Shadows"); the lights light the lit view
    # whether or not they cast shadows
    shadows: bool = True
    # (azimuth, elevation) degrees, 0 < elevation <= 90; None: no sun (the lights and the
    # ambient term light the scene)
    sun: tuple[float, float] | None = DEFAULT_SUN
    # spot and point lights (renderer.Light, at most 16), each with its own shadow map in the pool
    lights: tuple = ()
    # the physical page pool (64 KiB a page), one storage buffer of fixed size: 64 MiB holds
    # 1,024 pages, about four times what a 1080p view marks
    shadow_pool_mb: float = 64.0
    shadow_tau: float = 1.0  # LOD threshold of the shadow views, in shadow texels
    # keep drawn pages while nothing that touches them moves; False draws every page every
    # frame (the benchmark's worst case)
    shadow_cache: bool = True
    # visible entries of the shadow views (16 bytes each): SW clusters, and a HW cluster per page
    shadow_visible_capacity: int = 1 << 20

    def __post_init__(self) -> None:
        """ValueError naming the field for a value no frame can use (nan, inf, <= 0, ...)."""
        for name in ("tau", "upload_mb", "pool_mb", "shadow_pool_mb", "shadow_tau",
                     "texture_pool_mb", "texture_upload_mb"):
            v = getattr(self, name)
            if v is None and name in ("pool_mb", "texture_pool_mb"):
                continue
            if not (_real(v) and math.isfinite(v) and v > 0):
                raise ValueError(f"RenderOptions.{name} must be a finite number > 0, not {v!r}")
        if self.texture_sampling not in TEXTURE_SAMPLINGS:
            raise ValueError(f"RenderOptions.texture_sampling must be one of "
                             f"{', '.join(TEXTURE_SAMPLINGS)}, not {self.texture_sampling!r}")
        if self.sun is not None:
            check_sun(self.sun, "RenderOptions.sun")
        check_lights(self.lights)
        if not isinstance(self.shadows, bool):
            raise ValueError(f"RenderOptions.shadows must be True or False, not {self.shadows!r}")
        if not (_real(self.sw_max_edge) and self.sw_max_edge >= 0):  # 0: all HW, inf: all SW
            raise ValueError(f"RenderOptions.sw_max_edge must be a number >= 0, not "
                             f"{self.sw_max_edge!r}")
        optional = {"level_workgroups", "sw_lanes", "sw_rounds", "pool_pages"}
        counts = ("_capacity", "_workgroups", "_lanes", "_rounds", "_pages")
        for f in fields(self):
            v = getattr(self, f.name)
            if f.name.endswith(counts) and not (
                    (v is None and f.name in optional)
                    or (isinstance(v, numbers.Integral) and not isinstance(v, bool) and v >= 1)):
                raise ValueError(f"RenderOptions.{f.name} must be a whole number >= 1, not {v!r}")


def check_sun(sun, what: str = "sun") -> None:
    """ValueError unless `sun` is (azimuth, elevation) in degrees with a finite azimuth and an
    elevation above the horizon, at most 90 (a sun at or below the horizon lights nothing)."""
    ok = (isinstance(sun, (tuple, list)) and len(sun) == 2 and all(_real(v) for v in sun)
          and all(math.isfinite(v) for v in sun))
    if not ok:
        raise ValueError(f"{what} must be (azimuth, elevation) in degrees, two finite numbers, "
                         f"not {sun!r}")
    if not 0 < sun[1] <= 90:
        raise ValueError(f"{what}: elevation {sun[1]:g} degrees is not above the horizon "
                         f"(0 < elevation <= 90; at or below it the sun lights nothing)")


def _real(x) -> bool:
    return isinstance(x, numbers.Real) and not isinstance(x, bool)
