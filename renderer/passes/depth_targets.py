"""Depth targets (Nanite's EmitDepthTargets): per-pixel velocity from the visibility buffer, this
frame's and the previous frame's camera and instance transforms (shaders/depth_targets.wgsl)."""

from __future__ import annotations

import wgpu

from renderer.gpu import READ, STORAGE, Binding, compute_pipelines
from renderer.passes import PixelPass, cluster_reader_bindings, vis_bindings


class DepthTargets(PixelPass):
    label = "depth_targets"

    def __init__(self, device: wgpu.GPUDevice, *, vis64: bool) -> None:
        super().__init__()
        self.bindings = (
            *cluster_reader_bindings(),
            *vis_bindings(vis64, write=False),
            # the instances moved since the previous frame, with their transforms then
            # (shaders/moved.wgsl): nothing an instance when nothing moves
            Binding("moved", READ, "array<vec4<u32>>"),
            Binding("velocity", STORAGE, "array<vec2<f32>>"),  # pixels, x right, y down
        )
        self.bgl, pipes = compute_pipelines(device, "depth_targets.wgsl", self.bindings,
                                            ["cs_main"], defines=["VIS64"] if vis64 else [],
                                            label=self.label)
        self.pipeline = pipes["cs_main"]
