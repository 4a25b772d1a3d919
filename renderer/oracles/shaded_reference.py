"""The shaded reference renderer: a mesh's original triangles drawn with its materials by the
GPU's own rasterizer and texture units, the ground truth of Tessera's lit image.

Tessera shades a visibility buffer in a compute pass (`shaders/resolve.wgsl`): it rebuilds each
pixel's triangle from quantized pages, solves its barycentrics and their derivatives, samples
textures by hand from a storage buffer. This renderer does none of that: a vertex/fragment
pipeline with vertex buffers of the `Mesh`'s float attributes, one indexed draw per material, real
mipmapped textures (sRGB formats for colour textures) sampled trilinear by the hardware with the
mip its quad derivatives choose, the tangent frame from screen-space derivatives. Both light the
surface with the same `shaders/shading.wgsl`, so their images differ where the surfaces, the
attributes, the texture lookups or the LOD cut differ, which is what tests measure.

Row 0 of the returned images is the top.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import numpy as np
import wgpu

import shaders
from preprocess.materials import default_material
from preprocess.mesh import Mesh
from preprocess.textures import mip_chain
from renderer.device import GpuContext
from renderer.options import DEFAULT_SUN
from renderer.shadows import sun_direction

__all__ = ["ShadedReference"]

_COLOR = wgpu.TextureFormat.rgba8unorm
_DEPTH = wgpu.TextureFormat.depth32float
_UNIFORM_BYTES = 64 * 3 + 16 + 16 + 16


class ShadedReference:
    """Draws one `Mesh` (several instances of it) with its materials into a lit image."""

    def __init__(self, ctx: GpuContext, width: int, height: int, mesh: Mesh) -> None:
        self.device = d = ctx.device
        self.width, self.height = int(width), int(height)
        code = shaders.load("reference_shaded.wgsl")
        module = d.create_shader_module(label="shaded_reference.shader", code=code)
        self._frame_layout = d.create_bind_group_layout(label="shaded_reference.frame_layout",
                                                        entries=[{
            "binding": 0, "visibility": wgpu.ShaderStage.VERTEX | wgpu.ShaderStage.FRAGMENT,
            "buffer": {"type": wgpu.BufferBindingType.uniform}}])
        tex_entry = {"sample_type": wgpu.TextureSampleType.float,
                     "view_dimension": wgpu.TextureViewDimension.d2}
        fs = wgpu.ShaderStage.FRAGMENT
        self._mat_layout = d.create_bind_group_layout(label="shaded_reference.material_layout",
                                                      entries=[
            {"binding": 0, "visibility": fs, "buffer": {"type": wgpu.BufferBindingType.uniform}},
            {"binding": 1, "visibility": fs,
             "sampler": {"type": wgpu.SamplerBindingType.filtering}},
            *({"binding": 2 + i, "visibility": fs, "texture": tex_entry} for i in range(5))])
        layout = d.create_pipeline_layout(label="shaded_reference.pipeline_layout",
                                          bind_group_layouts=[self._frame_layout,
                                                              self._mat_layout])
        attrs = [(0, 3), (1, 3), (2, 2), (3, 4)]
        self._pipelines = {
            cull: d.create_render_pipeline(
                label=f"shaded_reference.pipeline.cull_{cull}", layout=layout,
                vertex={"module": module, "entry_point": "vs_main", "buffers": [
                    {"array_stride": 4 * width_, "step_mode": wgpu.VertexStepMode.vertex,
                     "attributes": [{"format": f"float32x{width_}", "offset": 0,
                                     "shader_location": loc}]}
                    for loc, width_ in attrs]},
                primitive={"topology": wgpu.PrimitiveTopology.triangle_list,
                           "front_face": wgpu.FrontFace.ccw, "cull_mode": cull},
                depth_stencil={"format": _DEPTH, "depth_write_enabled": True,
                               "depth_compare": wgpu.CompareFunction.greater},
                fragment={"module": module, "entry_point": "fs_main",
                          "targets": [{"format": _COLOR}]})
            for cull in (wgpu.CullMode.back, wgpu.CullMode.none)}
        self._sampler = d.create_sampler(
            label="shaded_reference.sampler", address_mode_u="repeat", address_mode_v="repeat",
            mag_filter="linear", min_filter="linear", mipmap_filter="linear")
        self._upload_mesh(mesh)
        size = (self.width, self.height, 1)
        usage = wgpu.TextureUsage.RENDER_ATTACHMENT | wgpu.TextureUsage.COPY_SRC
        self._color = d.create_texture(label="shaded_reference.color", size=size,
                                       format=_COLOR, usage=usage)
        self._depth = d.create_texture(label="shaded_reference.depth", size=size,
                                       format=_DEPTH, usage=usage)
        self._row = -(-self.width * 4 // 256) * 256
        self._readback = d.create_buffer(label="shaded_reference.readback",
                                         size=self._row * self.height,
                                         usage=wgpu.BufferUsage.MAP_READ
                                         | wgpu.BufferUsage.COPY_DST)

    def _upload_mesh(self, mesh: Mesh) -> None:
        d = self.device
        k = len(mesh.wedge_position)
        cols = {
            "position": np.asarray(mesh.positions, np.float32)[mesh.wedge_position],
            "normal": np.asarray(mesh.wedge_normal, np.float32),
            "uv": (np.asarray(mesh.wedge_uv, np.float32) if mesh.wedge_uv is not None
                   else np.zeros((k, 2), np.float32)),
            "color": (np.asarray(mesh.wedge_color, np.float32) if mesh.wedge_color is not None
                      else np.ones((k, 4), np.float32)),
        }
        self._vertex = [d.create_buffer_with_data(label=f"shaded_reference.{n}",
                                                  data=np.ascontiguousarray(a),
                                                  usage=wgpu.BufferUsage.VERTEX)
                        for n, a in cols.items()]
        materials = mesh.materials or [default_material()]
        tri_mat = mesh.triangle_materials()
        textures = {}  # mesh texture index -> view
        white = self._texture(np.full((1, 1), 0xFFFFFFFF, np.uint32)[None], False, "white")
        self._draws = []
        for i, m in enumerate(materials):
            tris = np.ascontiguousarray(mesh.triangles[tri_mat == i], np.uint32)
            if not len(tris):
                continue
            views, present = [], 0
            for bit, t in enumerate(m.texture_indices()):
                if t < 0 or mesh.wedge_uv is None:
                    views.append(white)
                    continue
                if t not in textures:
                    tex = mesh.textures[t]
                    textures[t] = self._texture(mip_chain(tex), tex.srgb, tex.name)
                views.append(textures[t])
                present |= 1 << bit
            u = np.zeros(16, np.float32)
            u[0:4] = m.base_color
            u[4:7] = m.emissive
            u[7] = m.alpha_cutoff
            u[8:12] = (m.metallic, m.roughness, m.normal_scale, m.occlusion_strength)
            u.view(np.uint32)[12:15] = (present, int(m.double_sided), int(m.alpha_mode == "MASK"))
            ubuf = d.create_buffer_with_data(label=f"shaded_reference.material{i}", data=u,
                                             usage=wgpu.BufferUsage.UNIFORM)
            group = d.create_bind_group(label=f"shaded_reference.material{i}.group",
                                        layout=self._mat_layout, entries=[
                {"binding": 0, "resource": {"buffer": ubuf, "offset": 0, "size": 64}},
                {"binding": 1, "resource": self._sampler},
                *({"binding": 2 + j, "resource": v} for j, v in enumerate(views))])
            ibuf = d.create_buffer_with_data(label=f"shaded_reference.indices{i}",
                                             data=tris.reshape(-1),
                                             usage=wgpu.BufferUsage.INDEX)
            self._draws.append((group, ibuf, 3 * len(tris), m.double_sided))

    def _texture(self, mips: list[np.ndarray], srgb: bool, label: str) -> wgpu.GPUTextureView:
        """A mipmapped RGBA8 texture of `preprocess.textures.mip_chain` words."""
        h, w = mips[0].shape
        fmt = wgpu.TextureFormat.rgba8unorm_srgb if srgb else wgpu.TextureFormat.rgba8unorm
        tex = self.device.create_texture(
            label=f"shaded_reference.texture.{label}", size=(w, h, 1), format=fmt,
            mip_level_count=len(mips),
            usage=wgpu.TextureUsage.TEXTURE_BINDING | wgpu.TextureUsage.COPY_DST)
        for level, m in enumerate(mips):
            mh, mw = m.shape
            self.device.queue.write_texture(
                {"texture": tex, "mip_level": level, "origin": (0, 0, 0)},
                np.ascontiguousarray(m, np.uint32), {"offset": 0, "bytes_per_row": 4 * mw,
                                                     "rows_per_image": mh}, (mw, mh, 1))
        return tex.create_view()

    def render_timed(self, camera_matrices: tuple[np.ndarray, np.ndarray, np.ndarray],
                     eye: Sequence[float], worlds: Sequence[np.ndarray], *,
                     sun: tuple[float, float] = DEFAULT_SUN) -> float:
        """Draw like `render` (the lit view) with no image read back, waiting for the GPU;
        returns the seconds the frame took (uniforms, encoding, submission and GPU time): the
        benchmarks' shaded brute force, against Tessera's whole frame."""
        t0 = time.perf_counter()
        enc = self._encode(camera_matrices, eye, worlds, 0, sun)
        # a copy of one texel after the draw, mapped: it resolves once the frame is done
        enc.copy_texture_to_buffer(
            {"texture": self._color, "mip_level": 0, "origin": (0, 0, 0)},
            {"buffer": self._readback, "offset": 0, "bytes_per_row": self._row,
             "rows_per_image": 1}, (1, 1, 1))
        self.device.queue.submit([enc.finish()])
        self._readback.map_sync(wgpu.MapMode.READ)
        self._readback.unmap()
        return time.perf_counter() - t0

    def _encode(self, camera_matrices, eye, worlds, view: int,
                sun: tuple[float, float]) -> wgpu.GPUCommandEncoder:
        """The frame's draws (`render`) in a new command encoder: per instance its uniforms,
        then every material's indexed draw."""
        d = self.device
        enc = d.create_command_encoder(label="shaded_reference.encoder")
        view_m, _, vp = camera_matrices
        groups = []
        for i, w in enumerate(worlds):
            u = np.zeros(_UNIFORM_BYTES // 4, np.float32)
            u[0:16] = np.asarray(vp, np.float32).T.reshape(-1)
            u[16:32] = np.asarray(w, np.float32).T.reshape(-1)
            u[32:48] = np.asarray(view_m, np.float32).T.reshape(-1)
            u[48:51] = eye
            u.view(np.uint32)[52] = view
            u[56:59] = sun_direction(*sun)
            buf = d.create_buffer_with_data(label=f"shaded_reference.uniforms{i}", data=u,
                                            usage=wgpu.BufferUsage.UNIFORM)
            groups.append(d.create_bind_group(label=f"shaded_reference.frame{i}",
                                              layout=self._frame_layout, entries=[
                {"binding": 0, "resource": {"buffer": buf, "offset": 0,
                                            "size": _UNIFORM_BYTES}}]))
        rp = enc.begin_render_pass(
            label="shaded_reference.pass",
            color_attachments=[{"view": self._color.create_view(),
                                "load_op": wgpu.LoadOp.clear, "store_op": wgpu.StoreOp.store,
                                "clear_value": (0, 0, 0, 0)}],
            depth_stencil_attachment={"view": self._depth.create_view(),
                                      "depth_clear_value": 0.0,
                                      "depth_load_op": wgpu.LoadOp.clear,
                                      "depth_store_op": wgpu.StoreOp.store})
        for g in groups:
            rp.set_bind_group(0, g)
            for loc, vb in enumerate(self._vertex):
                rp.set_vertex_buffer(loc, vb)
            for mat_group, ibuf, count, double in self._draws:
                rp.set_pipeline(self._pipelines[wgpu.CullMode.none if double
                                                else wgpu.CullMode.back])
                rp.set_bind_group(1, mat_group)
                rp.set_index_buffer(ibuf, wgpu.IndexFormat.uint32)
                rp.draw_indexed(count)
        rp.end()
        return enc

    def render(self, camera_matrices: tuple[np.ndarray, np.ndarray, np.ndarray],
               eye: Sequence[float], worlds: Sequence[np.ndarray], *,
               view: int = 0, sun: tuple[float, float] = DEFAULT_SUN) -> dict[str, np.ndarray]:
        """Draw the mesh once per world matrix. camera_matrices: (view, proj, view_proj) as
        `renderer.camera.Camera.matrices` gives them; view 0 lit, 7 base colour; `sun` the
        light's (azimuth, elevation) in degrees, as `RenderOptions.sun` (no shadows). Returns
        ``"color"`` (h, w, 4) uint8 and ``"depth"`` (h, w) float32 (0: nothing)."""
        d = self.device
        enc = self._encode(camera_matrices, eye, worlds, view, sun)
        out = {}
        for name, tex, aspect in (("color", self._color, wgpu.TextureAspect.all),
                                  ("depth", self._depth, wgpu.TextureAspect.depth_only)):
            # the colour is copied in the frame's own submission, the depth in one after it
            e = enc if name == "color" else d.create_command_encoder(
                label=f"shaded_reference.read_{name}")
            e.copy_texture_to_buffer(
                {"texture": tex, "mip_level": 0, "origin": (0, 0, 0), "aspect": aspect},
                {"buffer": self._readback, "offset": 0, "bytes_per_row": self._row,
                 "rows_per_image": self.height}, (self.width, self.height, 1))
            d.queue.submit([e.finish()])
            self._readback.map_sync(wgpu.MapMode.READ)
            try:
                raw = np.frombuffer(self._readback.read_mapped(), np.uint8).copy()
            finally:
                self._readback.unmap()
            img = raw.reshape(self.height, self._row)[:, : 4 * self.width]
            out[name] = (img.reshape(self.height, self.width, 4) if name == "color"
                         else img.copy().view(np.float32).reshape(self.height, self.width))
        return out
