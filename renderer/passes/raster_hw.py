"""Hardware rasterizer: one indirect draw with vertex pulling (shaders/raster_hw.wgsl)."""

from __future__ import annotations

import wgpu

from renderer.gpu import READ, TEXTURE, Binding, bind_group_layout, cached, shader_module
from renderer.layout import ARGS
from renderer.passes import Pass, cluster_reader_bindings, vis_bindings
from renderer.passes.raster_sw import shadow_raster_bindings
from renderer.texture_pool import HW_BINDINGS

VF = wgpu.ShaderStage.VERTEX | wgpu.ShaderStage.FRAGMENT


class RasterHW(Pass):
    label = "raster_hw"

    def __init__(self, device, *, vis64: bool, shadow: bool = False,
                 hw_tiles: bool = False) -> None:
        super().__init__()
        # alpha cut-outs read the texture tiles from their pool textures (texture_pool.py)
        tiles = tuple(Binding(n, TEXTURE, "texture_2d_array<f32>", wgpu.ShaderStage.FRAGMENT)
                      for n in HW_BINDINGS) if hw_tiles else ()
        if shadow:  # the shadow views' (cluster, page) items into the shadow map
            self.label = "shadow_raster_hw"
            self.bindings = (
                *shadow_raster_bindings(cluster_reader_bindings(VF, wgpu.ShaderStage.VERTEX),
                                        VF, wgpu.ShaderStage.FRAGMENT),
                Binding("state", READ, "array<u32>", wgpu.ShaderStage.VERTEX),
                Binding("materials", READ, "array<u32>", VF),
                *tiles,
            )
            vis64 = True  # one variant
        else:
            self.bindings = (
                *cluster_reader_bindings(VF, wgpu.ShaderStage.VERTEX),
                Binding("state", READ, "array<u32>", wgpu.ShaderStage.VERTEX),
                *vis_bindings(vis64, write=True, stages=wgpu.ShaderStage.FRAGMENT),
                # alpha cut-outs (glTF MASK): the fragment shader samples the base colour's alpha
                Binding("materials", READ, "array<u32>", VF),
                *tiles,
            )
        self.bgl, self.pipelines = cached(device, ("raster_hw", shadow, vis64, hw_tiles),
                                          lambda: self._build(device, shadow, vis64, hw_tiles))

    def _build(self, device, shadow: bool, vis64: bool, hw_tiles: bool) -> tuple:
        defines = (["SHADOW"] if shadow else (["VIS64"] if vis64 else [])) + (
            ["HW_TILES"] if hw_tiles else [])
        module = shader_module(device, "raster_hw.wgsl", self.bindings, defines=defines,
                               label=f"{self.label}.shader")
        bgl = bind_group_layout(device, self.bindings, f"{self.label}.bind_group_layout")
        layout = device.create_pipeline_layout(bind_group_layouts=[bgl],
                                               label=f"{self.label}.layout")
        pipelines = []
        for id_pass in ([False] if vis64 else [False, True]):
            frag = {"module": module, "entry_point": "fs_main", "targets": []}
            if not vis64:
                frag["constants"] = {"ID_PASS": id_pass}
            pipelines.append(device.create_render_pipeline(
                layout=layout,
                vertex={"module": module, "entry_point": "vs_main", "buffers": []},
                primitive={"topology": "triangle-list", "front_face": "ccw", "cull_mode": "none"},
                # a placeholder depth target (WebGPU needs one attachment); the visibility buffer
                # is the real target
                depth_stencil={"format": "depth32float", "depth_write_enabled": False,
                               "depth_compare": "always"},
                multisample={"count": 1},
                fragment=frag,
                label=f"{self.label}.pipeline{'.ids' if id_pass else ''}",
            ))
        return bgl, pipelines

    def encode(self, frame, encoder, variant: int = 0, label: str | None = None) -> None:
        name = label or (self.label if variant == 0 else f"{self.label}.ids")
        # the placeholder is never tested nor written: load and store it, so that no pass
        # clears it (a clear of a 2560x1440 target cost 0.27 ms a pass on an H100)
        rp = encoder.begin_render_pass(
            color_attachments=[], label=name,
            depth_stencil_attachment={"view": frame.hw_target, "depth_load_op": "load",
                                      "depth_store_op": "store"},
            timestamp_writes=frame.timestamps(name))
        rp.set_pipeline(self.pipelines[variant])
        rp.set_bind_group(0, self.group(frame))
        rp.draw_indirect(frame.buffers["args"], 4 * ARGS["hw_vertex_count"])
        rp.end()
