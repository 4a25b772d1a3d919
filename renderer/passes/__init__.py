"""The GPU passes of a frame, one module and one WGSL file each (docs/ARCHITECTURE.md "Runtime").

A pass declares its bindings once (`BINDINGS`: the WGSL header and the bind group layout both come
from it), builds its pipelines in its constructor and records its commands in
``encode(frame, encoder)``, where `frame` (renderer.frame.FrameResources) holds the buffers by
binding name. Passes never own scene data.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import wgpu

from renderer.gpu import READ, STORAGE, UNIFORM, Binding, bind_group
from renderer.limits import PIXEL_TILE

if TYPE_CHECKING:
    from renderer.frame import FrameResources


def cluster_reader_bindings(frame_stages: int = wgpu.ShaderStage.COMPUTE,
                            read_stages: int = wgpu.ShaderStage.COMPUTE) -> tuple[Binding, ...]:
    """The bindings of a pass that decodes visible clusters (shaders/cluster.wgsl): the frame,
    instances, asset table, pages and the visible list, in this order."""
    return (
        Binding("frame", UNIFORM, "Frame", frame_stages),
        Binding("instances", READ, "array<vec4<u32>>", read_stages),
        Binding("assets", READ, "array<AssetInfo>", read_stages),
        Binding("pages", READ, "array<u32>", read_stages),
        Binding("visible", READ, "array<vec2<u32>>", read_stages),
    )


def vis_bindings(vis64: bool, *, write: bool, ids: bool = True,
                 stages: int = wgpu.ShaderStage.COMPUTE) -> tuple[Binding, ...]:
    """The visibility buffer's bindings (shaders/visbuffer.wgsl): `vis`, one 64-bit word a pixel,
    or without 64-bit atomics the pair `vis_depth` and `vis_ids`. The rasterizers write them
    (atomics), the HZB (depth only: `ids=False`) and resolve read them."""
    if vis64:
        return (Binding("vis", STORAGE, "array<atomic<u64>>", stages) if write else
                Binding("vis", READ, "array<vec2<u32>>", stages),)
    kind, wgsl = (STORAGE, "array<atomic<u32>>") if write else (READ, "array<u32>")
    out = (Binding("vis_depth", kind, wgsl, stages),)
    return (*out, Binding("vis_ids", kind, wgsl, stages)) if ids else out


class Pass:
    """Base: keeps the bind group of the current resources, rebuilt when they change."""

    label = "pass"
    bindings: tuple = ()

    def __init__(self) -> None:
        self._bg: wgpu.GPUBindGroup | None = None
        self._bg_key: int = -1
        self.bgl: wgpu.GPUBindGroupLayout | None = None

    def group(self, frame: FrameResources) -> wgpu.GPUBindGroup:
        if self._bg is None or self._bg_key != frame.generation:
            self._bg = bind_group(frame.device, self.bgl, self.bindings, frame.buffers,
                                  f"{self.label}.bind_group")
            self._bg_key = frame.generation
        return self._bg


class PixelPass(Pass):
    """A pass of one lane per pixel, in 8 x 8 workgroups (`cs_main` with
    `@workgroup_size(PIXEL_TILE, PIXEL_TILE)`): `self.pipeline` dispatched over the frame."""

    pipeline: wgpu.GPUComputePipeline

    def encode(self, frame: FrameResources, encoder: wgpu.GPUCommandEncoder) -> None:
        cp = encoder.begin_compute_pass(label=self.label,
                                        timestamp_writes=frame.timestamps(self.label))
        cp.set_pipeline(self.pipeline)
        cp.set_bind_group(0, self.group(frame))
        cp.dispatch_workgroups(-(-frame.width // PIXEL_TILE), -(-frame.height // PIXEL_TILE))
        cp.end()
