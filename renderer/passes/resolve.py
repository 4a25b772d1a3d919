"""Resolve, Nanite's BasePass: the visibility buffer to the G-buffer, the lit image, depth,
normal and ids (shaders/resolve.wgsl)."""

from __future__ import annotations

from renderer.gpu import READ, STORAGE, TEXTURE, UNIFORM, Binding, compute_pipelines
from renderer.limits import MAX_LIGHTS, SHADOW_VIEWS
from renderer.passes import PixelPass, cluster_reader_bindings, vis_bindings
from renderer.texture_pool import HW_BINDINGS


class Resolve(PixelPass):
    label = "resolve"

    def __init__(self, device, *, vis64: bool, hw_tiles: bool = False) -> None:
        super().__init__()
        self.bindings = (
            *cluster_reader_bindings(),
            *vis_bindings(vis64, write=False),
            # read-write: the BasePass stamps the texture tiles it wants (TEXTURE_FEEDBACK)
            Binding("materials", STORAGE, "array<u32>"),
            Binding("color", STORAGE, "array<u32>"),
            Binding("depth_out", STORAGE, "array<f32>"),
            # split: no image buffer holds more than 8 bytes a pixel (limits.IMAGE_BUFFER_BYTES)
            Binding("normal_xy", STORAGE, "array<vec2<f32>>"),
            Binding("normal_z", STORAGE, "array<f32>"),
            Binding("ids_a", STORAGE, "array<vec2<u32>>"),
            Binding("ids_b", STORAGE, "array<vec2<u32>>"),
            Binding("gbuffer_a", STORAGE, "array<vec2<u32>>"),
            Binding("gbuffer_b", STORAGE, "array<vec2<u32>>"),
            # the sun and its shadow map (renderer/shadows.py): 16 storage buffers in all, what
            # OpenGL binds a stage at most
            Binding("shadow", UNIFORM, "ShadowInfo"),
            Binding("shadow_views", UNIFORM, f"array<ShadowView, {SHADOW_VIEWS}>"),
            Binding("shadow_map", READ, "array<u32>"),
            Binding("lights", UNIFORM, f"array<Light, {MAX_LIGHTS}>"),  # spot and point lights
            # hardware sampling: the texture tiles' pool textures (texture_pool.py)
            *(Binding(n, TEXTURE, "texture_2d_array<f32>") for n in HW_BINDINGS if hw_tiles),
        )
        # with the shadow maps sampled or not (RenderOptions.shadows), with spot and point
        # lights or not (their loop, never run, cost lavapipe 8% of the pass): built when first
        # wanted
        self.device, self.vis64, self.hw_tiles = device, vis64, hw_tiles
        self.pipelines = {}
        self.shadows = self.lights = False
        self.configure(True, False)

    def configure(self, shadows: bool, lights: bool) -> None:
        """The pipeline for shadows on or off and a scene with lights or none."""
        self.shadows, self.lights = bool(shadows), bool(lights)
        key = (self.shadows, self.lights)
        if key not in self.pipelines:
            self.bgl, pipes = compute_pipelines(self.device, "resolve.wgsl", self.bindings,
                                                ["cs_main"],
                                                defines=["TEXTURE_FEEDBACK",
                                                         *(["VIS64"] if self.vis64 else []),
                                                         *(["HW_TILES"] if self.hw_tiles
                                                           else [])],
                                                constants={"SHADOWS": key[0], "LIGHTS": key[1]},
                                                label=self.label)
            self.pipelines[key] = pipes["cs_main"]
        self.pipeline = self.pipelines[key]

    def set_shadows(self, on: bool) -> None:
        self.configure(on, self.lights)
