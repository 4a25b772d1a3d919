"""The shadow map's pages each frame (shaders/shadow_pages.wgsl, shadow_alloc.wgsl,
shadow_clear.wgsl): marked from the visibility buffer, freed, allocated (the coarsest views
first), listed and cleared for drawing."""

from __future__ import annotations

from renderer.gpu import READ, STORAGE, UNIFORM, Binding, compute_pipelines
from renderer.limits import MARK_TILE, MAX_LIGHTS, SHADOW_VIEWS, WORKGROUP
from renderer.passes import Pass, vis_bindings

ENTRIES = ("cs_begin", "cs_mark", "cs_free")
SHADOW_UNIFORMS = (
    Binding("shadow", UNIFORM, "ShadowInfo"),
    Binding("shadow_views", UNIFORM, f"array<ShadowView, {SHADOW_VIEWS}>"),
)
CLEAR_BINDINGS = (
    *SHADOW_UNIFORMS,
    Binding("state", READ, "array<u32>"),
    Binding("shadow_draw", READ, "array<u32>"),
    Binding("shadow_map", STORAGE, "array<u32>"),
)


ALLOC_BINDINGS = (
    *SHADOW_UNIFORMS,
    Binding("shadow_marked", READ, "array<u32>"),
    Binding("shadow_free", READ, "array<u32>"),
    Binding("shadow_map", STORAGE, "array<u32>"),
    Binding("shadow_owner", STORAGE, "array<u32>"),
    Binding("shadow_pool_state", STORAGE, "array<atomic<u32>>"),
    Binding("shadow_hpm", STORAGE, "array<atomic<u32>>"),
    Binding("shadow_draw", STORAGE, "array<u32>"),
    Binding("state", STORAGE, "array<atomic<u32>>"),
    Binding("shadow_clear_args", STORAGE, "array<u32>"),
)


class _Step(Pass):
    """One entry point of its own shader (`cs_main`): a step whose bind group must leave out a
    buffer the page passes bind (an indirect dispatch's arguments)."""

    def __init__(self, device, shader: str, bindings: tuple[Binding, ...], label: str) -> None:
        super().__init__()
        self.label, self.bindings = label, bindings
        self.bgl, pipes = compute_pipelines(device, shader, bindings, ["cs_main"], label=label)
        self.pipeline = pipes["cs_main"]


class ShadowPages(Pass):
    label = "shadow_pages"

    def __init__(self, device, *, vis64: bool) -> None:
        super().__init__()
        self.bindings = (
            Binding("frame", UNIFORM, "Frame"),
            *vis_bindings(vis64, write=False, ids=False),
            *SHADOW_UNIFORMS,
            Binding("lights", UNIFORM, f"array<Light, {MAX_LIGHTS}>"),
            Binding("shadow_dirty", READ, "array<vec4<i32>>"),
            Binding("shadow_marks", STORAGE, "array<atomic<u32>>"),
            Binding("shadow_marked", STORAGE, "array<u32>"),
            Binding("shadow_owner", STORAGE, "array<u32>"),
            Binding("shadow_map", STORAGE, "array<u32>"),
            Binding("shadow_free", STORAGE, "array<u32>"),
            Binding("shadow_pool_state", STORAGE, "array<atomic<u32>>"),
        )
        self.device, self.vis64 = device, vis64
        self.lights = False
        self._pipes: dict[bool, dict] = {}
        self.set_lights(False)
        # the marked entries given pages, the coarsest level first; the pages drawn, cleared
        self.alloc = _Step(device, "shadow_alloc.wgsl", ALLOC_BINDINGS, "shadow_alloc")
        self.clear = _Step(device, "shadow_clear.wgsl", CLEAR_BINDINGS, "shadow_clear")

    def set_lights(self, lights: bool) -> None:
        """The pipelines for a scene with spot or point lights, or none (built when first
        wanted)."""
        self.lights = bool(lights)
        if self.lights not in self._pipes:
            self.bgl, self._pipes[self.lights] = compute_pipelines(
                self.device, "shadow_pages.wgsl", self.bindings, ENTRIES,
                defines=["VIS64"] if self.vis64 else [], constants={"LIGHTS": self.lights},
                label=self.label)
        self.pipes = self._pipes[self.lights]

    def encode(self, frame, encoder) -> None:
        """`frame`: the shadow views' resources (renderer.shadows.ShadowFrame)."""
        bg = self.group(frame)

        def run(cp, name: str, size: tuple[int, int]) -> None:
            cp.set_pipeline(self.pipes[name])
            cp.set_bind_group(0, bg)
            cp.dispatch_workgroups(*size)

        cp = encoder.begin_compute_pass(label="shadow_mark",
                                        timestamp_writes=frame.timestamps("shadow_mark"))
        run(cp, "cs_begin", (1, 1))
        run(cp, "cs_mark", (-(-frame.width // MARK_TILE), -(-frame.height // MARK_TILE)))
        cp.end()
        cp = encoder.begin_compute_pass(label="shadow_free",
                                        timestamp_writes=frame.timestamps("shadow_free"))
        run(cp, "cs_free", (-(-frame.shadow_pages // WORKGROUP), 1))
        cp.end()
        cp = encoder.begin_compute_pass(label="shadow_alloc",
                                        timestamp_writes=frame.timestamps("shadow_alloc"))
        cp.set_pipeline(self.alloc.pipeline)
        cp.set_bind_group(0, self.alloc.group(frame))
        cp.dispatch_workgroups(1)  # one workgroup walks the levels, the coarsest first
        cp.end()
        cp = encoder.begin_compute_pass(label="shadow_clear",
                                        timestamp_writes=frame.timestamps("shadow_clear"))
        cp.set_pipeline(self.clear.pipeline)
        cp.set_bind_group(0, self.clear.group(frame))
        cp.dispatch_workgroups_indirect(frame.buffers["shadow_clear_args"], 0)
        cp.end()
