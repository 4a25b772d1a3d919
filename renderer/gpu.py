"""Small helpers over wgpu: bindings declared once (the WGSL header and the bind group layout
come from the same list), shader modules from `shaders/`, and buffers."""

from __future__ import annotations

import weakref
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import wgpu

import shaders
from renderer.layout import generated_includes

STORAGE = "storage"  # read_write storage buffer
READ = "read"  # read-only storage buffer
UNIFORM = "uniform"
TEXTURE = "texture"  # a texture read with textureLoad (wgsl_type e.g. "texture_2d_array<f32>")

_KIND = {
    STORAGE: (wgpu.BufferBindingType.storage, "var<storage, read_write>"),
    READ: (wgpu.BufferBindingType.read_only_storage, "var<storage, read>"),
    UNIFORM: (wgpu.BufferBindingType.uniform, "var<uniform>"),
    TEXTURE: (None, "var"),
}


@dataclass(frozen=True)
class Binding:
    """One buffer binding of a pass: its WGSL name and type and how the pass uses it."""

    name: str  # the WGSL variable and the resource key
    kind: str  # STORAGE, READ, UNIFORM or TEXTURE
    wgsl_type: str  # e.g. "array<u32>"
    stages: int = wgpu.ShaderStage.COMPUTE


def wgsl_header(bindings: Sequence[Binding], group: int = 0) -> str:
    """The `@group(g) @binding(i) var<...>` lines for `bindings`, in order."""
    return "\n".join(f"@group({group}) @binding({i}) {_KIND[b.kind][1]} {b.name}: {b.wgsl_type};"
                     for i, b in enumerate(bindings)) + "\n"


def shader_module(device: wgpu.GPUDevice, name: str, bindings: Sequence[Binding], *,
                  defines: Iterable[str] = (), label: str | None = None) -> wgpu.GPUShaderModule:
    """Compile shaders/<name> with the bindings' header in front of it."""
    code = wgsl_header(bindings) + shaders.load(name, defines=defines,
                                                generated=generated_includes())
    return device.create_shader_module(code=code, label=label or name)


def bind_group_layout(device: wgpu.GPUDevice, bindings: Sequence[Binding], label: str
                      ) -> wgpu.GPUBindGroupLayout:
    entries = [{"binding": i, "visibility": b.stages,
                **({"texture": {"sample_type": wgpu.TextureSampleType.unfilterable_float,
                                "view_dimension": wgpu.TextureViewDimension.d2_array}}
                   if b.kind == TEXTURE else {"buffer": {"type": _KIND[b.kind][0]}})}
               for i, b in enumerate(bindings)]
    return device.create_bind_group_layout(entries=entries, label=label)


def bind_group(device: wgpu.GPUDevice, layout: wgpu.GPUBindGroupLayout,
               bindings: Sequence[Binding],
               resources: Mapping[str, wgpu.GPUBuffer | tuple[wgpu.GPUBuffer, int, int]],
               label: str) -> wgpu.GPUBindGroup:
    """A bind group for `bindings` from resources by binding name: a whole buffer, or
    (buffer, offset, size) for a range of one, or a texture view (TEXTURE)."""
    entries = []
    for i, b in enumerate(bindings):
        res = resources[b.name]
        if b.kind == TEXTURE:
            entries.append({"binding": i, "resource": res})
            continue
        buf, offset, size = res if isinstance(res, tuple) else (res, 0, res.size)
        entries.append({"binding": i, "resource": {"buffer": buf, "offset": offset,
                                                   "size": size}})
    return device.create_bind_group(layout=layout, entries=entries, label=label)


# pipelines (and their layouts) already built on a device, by what they were built from: every
# Renderer on a shared device (the tests', the viewer's after a new scene) compiles each once;
# a pipeline is immutable, so sharing it is safe
_BUILT: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def cached(device: wgpu.GPUDevice, key: tuple, build: Callable[[], object]):
    """`build()`'s result for `key` on `device`, built once per device."""
    per_device = _BUILT.setdefault(device, {})
    if key not in per_device:
        per_device[key] = build()
    return per_device[key]


def compute_pipelines(device: wgpu.GPUDevice, name: str, bindings: Sequence[Binding],
                      entry_points: Sequence[str], *, defines: Iterable[str] = (),
                      constants: dict | None = None, label: str
                      ) -> tuple[wgpu.GPUBindGroupLayout, dict[str, wgpu.GPUComputePipeline]]:
    """One layout and a pipeline per entry point of shaders/<name> (built once per device for
    the same arguments: `cached`)."""
    defines = tuple(defines)
    key = ("compute", name, tuple(bindings), tuple(entry_points), defines,
           tuple(sorted((constants or {}).items())), label)
    return cached(device, key, lambda: _compute_pipelines(device, name, bindings, entry_points,
                                                          defines, constants, label))


def _compute_pipelines(device, name, bindings, entry_points, defines, constants, label):
    module = shader_module(device, name, bindings, defines=defines, label=f"{label}.shader")
    bgl = bind_group_layout(device, bindings, f"{label}.bind_group_layout")
    layout = device.create_pipeline_layout(bind_group_layouts=[bgl], label=f"{label}.layout")
    pipes = {}
    for ep in entry_points:
        stage = {"module": module, "entry_point": ep}
        if constants:
            stage["constants"] = constants
        pipes[ep] = device.create_compute_pipeline(layout=layout, compute=stage,
                                                   label=f"{label}.{ep}")
    return bgl, pipes


def buffer(device: wgpu.GPUDevice, size: int, label: str, usage: int) -> wgpu.GPUBuffer:
    """A zero-initialized buffer of at least 16 bytes, size rounded up to 16."""
    return device.create_buffer(size=max(16, (int(size) + 15) // 16 * 16), usage=usage,
                                label=label)


def buffer_with(device: wgpu.GPUDevice, data: np.ndarray, label: str, usage: int
                ) -> wgpu.GPUBuffer:
    """A buffer holding `data` (padded with zeros to a multiple of 16 bytes)."""
    raw = np.ascontiguousarray(data).view(np.uint8).reshape(-1)
    size = max(16, (raw.nbytes + 15) // 16 * 16)
    buf = device.create_buffer(size=size, usage=usage | wgpu.BufferUsage.COPY_DST, label=label)
    if raw.nbytes:
        device.queue.write_buffer(buf, 0, raw)
    return buf
