"""Device creation with feature detection.

Tessera uses, when the adapter has them:
- `shader-int64` + `shader-int64-atomic-min-max`: the 64-bit visibility buffer (`atomicMax` on
  depth | ids). Without them, or with ``force_fallback32``, a two-pass 32-bit path draws the same
  image (depth pass, then an id pass on depth equality);
- `timestamp-query`: GPU time per pass;
- `subgroup`: reported only (no pass depends on it yet).

Nothing else is required beyond WebGPU's core; the storage limits are raised to what the adapter
allows, since one scene's pages live in one buffer.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

import wgpu

INT64_FEATURES = ("shader-int64", "shader-int64-atomic-min-max")


class DeviceError(RuntimeError):
    """No usable adapter, or the adapter lacks something Tessera needs."""


@dataclass
class GpuContext:
    """An open device and what Tessera may use on it."""

    adapter: wgpu.GPUAdapter
    device: wgpu.GPUDevice
    int64_atomics: bool  # 64-bit visibility buffer (else the 32-bit fallback)
    timestamps: bool  # per-pass GPU times
    subgroups: bool
    adapter_name: str
    backend: str
    adapter_type: str  # "DiscreteGPU", "IntegratedGPU", "CPU", ...
    limits: dict = field(default_factory=dict)
    # texture-compression-bc: texture tiles in the texture unit's BC formats (texture_pool.py)
    bc_textures: bool = False

    @property
    def description(self) -> str:
        flags = (("int64 atomics", self.int64_atomics), ("timestamps", self.timestamps),
                 ("subgroups", self.subgroups))
        have = [n for n, ok in flags if ok]
        lacks = [n for n, ok in flags if not ok]
        text = f"{self.adapter_name} ({self.backend}; {', '.join(have) or 'core WebGPU only'}"
        if lacks:
            text += f"; lacks {', '.join(lacks)}"
            if not self.int64_atomics:
                text += ": 32-bit visibility fallback"
        return text + ")"


_CACHE: dict[tuple, GpuContext] = {}


STORAGE_BUFFERS_NEEDED = 16  # the culling pass binds 16 (renderer/passes/cull.py)


def quiet_vulkan_loader() -> None:
    """Keep the Vulkan loader from printing "error: XDG_RUNTIME_DIR is invalid or not set in the
    environment." (twice) on every machine without a desktop session.

    The line comes from libwayland-client, called by Mesa's device-select layer (an implicit
    Vulkan layer, VK_LAYER_MESA_device_select, loaded into every Vulkan program) while the
    adapter is requested: it connects to the Wayland compositor to find the GPU driving the
    display. The compositor's socket lives in XDG_RUNTIME_DIR, so without it the probe can only
    fail, and it says so on stderr. In that case, unless the user steers that layer
    (MESA_VK_DEVICE_SELECT, DRI_PRIME, NODEVICE_SELECT), the layer is switched off for this
    process with the switch its manifest declares, NODEVICE_SELECT=1: it only orders the
    adapters, and wgpu chooses among them by power preference anyway. (Pointing XDG_RUNTIME_DIR
    at a made-up folder instead would mislead every child process that looks for a session
    there.) Must run before the first adapter request: the loader reads it once per process."""
    if os.environ.get("XDG_RUNTIME_DIR") or os.environ.get("WAYLAND_DISPLAY", "").startswith("/"):
        return  # a session (or an absolute socket path): the probe works, or fails quietly
    if any(k in os.environ for k in ("MESA_VK_DEVICE_SELECT", "DRI_PRIME", "NODEVICE_SELECT")):
        return
    os.environ["NODEVICE_SELECT"] = "1"


def create_context(*, force_fallback32: bool = False, power_preference: str = "high-performance",
                   shared: bool = True) -> GpuContext:
    """Open the best adapter. ``force_fallback32`` drops the 64-bit atomics even where they
    exist (the fallback is tested this way on lavapipe). ``shared`` reuses one device per
    setting within a process (tests open many renderers)."""
    key = (force_fallback32, power_preference)
    if shared and key in _CACHE:
        return _CACHE[key]
    quiet_vulkan_loader()
    try:
        adapter = wgpu.gpu.request_adapter_sync(power_preference=power_preference)
    except Exception as e:  # wgpu raises a bare RuntimeError when there is no driver at all
        raise DeviceError(f"no GPU adapter found ({e}); install a Vulkan driver (on Debian: "
                          "apt install mesa-vulkan-drivers) or run `make setup`") from e
    if adapter is None:
        raise DeviceError("no GPU adapter found; install a Vulkan driver (on Debian: apt install "
                          "mesa-vulkan-drivers) or run `make setup`")
    info = adapter.info
    name = info.get("device") or info.get("description") or "unknown adapter"
    backend = info.get("backend_type", "?")
    features = set(adapter.features)
    want = []
    int64 = all(f in features for f in INT64_FEATURES) and not force_fallback32
    if int64:
        want += list(INT64_FEATURES)
    timestamps = "timestamp-query" in features
    if timestamps:
        want.append("timestamp-query")
    subgroups = "subgroup" in features
    if subgroups:
        want.append("subgroup")
    bc = "texture-compression-bc" in features
    if bc:
        want.append("texture-compression-bc")
    lim = adapter.limits
    limits = {
        "max-storage-buffer-binding-size": lim["max-storage-buffer-binding-size"],
        "max-buffer-size": lim["max-buffer-size"],
        "max-storage-buffers-per-shader-stage": min(lim["max-storage-buffers-per-shader-stage"],
                                                    32),
        "max-compute-workgroup-storage-size": lim["max-compute-workgroup-storage-size"],
        "max-compute-invocations-per-workgroup": lim["max-compute-invocations-per-workgroup"],
        "max-compute-workgroup-size-x": lim["max-compute-workgroup-size-x"],
        # the image size the frame allows (Renderer.check_image)
        "max-texture-dimension-2d": lim["max-texture-dimension-2d"],
        "max-texture-array-layers": lim["max-texture-array-layers"],  # texture tile pools
        "max-compute-workgroups-per-dimension": lim["max-compute-workgroups-per-dimension"],
    }
    if limits["max-storage-buffers-per-shader-stage"] < STORAGE_BUFFERS_NEEDED:
        raise DeviceError(f"adapter {name} ({backend}) allows only "
                          f"{limits['max-storage-buffers-per-shader-stage']} storage buffers per "
                          f"shader stage; Tessera needs {STORAGE_BUFFERS_NEEDED}")
    try:
        device = adapter.request_device_sync(required_features=want, required_limits=limits,
                                             label="tessera.device")
    except Exception as e:
        why = " ".join(str(e).split())  # wgpu's message spans lines ("Caused by: ...")
        forced = os.environ.get("WGPU_BACKEND_TYPE", "").strip()
        if forced:  # e.g. OpenGL on NVIDIA's Linux driver: wgpu cannot open it (gfx-rs/wgpu#4751)
            why += (f" (WGPU_BACKEND_TYPE={forced} forces this backend; without it wgpu picks "
                    "Vulkan where a driver has it)")
        raise DeviceError(f"adapter {name} ({backend}) refused a device with {want}: {why}") from e
    ctx = GpuContext(adapter=adapter, device=device, int64_atomics=int64, timestamps=timestamps,
                     subgroups=subgroups, adapter_name=name, backend=backend,
                     adapter_type=str(info.get("adapter_type", "?")), limits=limits,
                     bc_textures=bc)
    if shared:
        _CACHE[key] = ctx
    return ctx
