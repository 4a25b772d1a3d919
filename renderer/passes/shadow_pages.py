"""The shadow map's pages each frame (shaders/shadow_pages.wgsl): marked from the visibility
buffer, freed, allocated (the coarsest level first), listed and cleared for drawing."""

from __future__ import annotations

from renderer.gpu import READ, STORAGE, UNIFORM, Binding, compute_pipelines
from renderer.limits import SHADOW_LEVELS, SHADOW_PAGES
from renderer.passes import Pass, vis_bindings

ENTRIES = ("cs_mark", "cs_begin", "cs_free", "cs_alloc_level", "cs_alloc", "cs_clear_args")
SHADOW_UNIFORMS = (
    Binding("shadow", UNIFORM, "ShadowInfo"),
    Binding("shadow_views", UNIFORM, f"array<ShadowView, {SHADOW_LEVELS}>"),
)
CLEAR_BINDINGS = (
    *SHADOW_UNIFORMS,
    Binding("state", READ, "array<u32>"),
    Binding("shadow_draw", READ, "array<u32>"),
    Binding("shadow_map", STORAGE, "array<u32>"),
)


class ShadowClear(Pass):
    """The pages drawn this frame, cleared (shaders/shadow_clear.wgsl)."""

    label = "shadow_clear"
    bindings = CLEAR_BINDINGS

    def __init__(self, device) -> None:
        super().__init__()
        self.bgl, pipes = compute_pipelines(device, "shadow_clear.wgsl", CLEAR_BINDINGS,
                                            ["cs_main"], label=self.label)
        self.pipeline = pipes["cs_main"]


class ShadowPages(Pass):
    label = "shadow_pages"

    def __init__(self, device, *, vis64: bool) -> None:
        super().__init__()
        self.bindings = (
            Binding("frame", UNIFORM, "Frame"),
            *vis_bindings(vis64, write=False, ids=False),
            *SHADOW_UNIFORMS,
            Binding("shadow_dirty", READ, "array<vec4<i32>>"),
            Binding("shadow_marks", STORAGE, "array<atomic<u32>>"),
            Binding("shadow_map", STORAGE, "array<u32>"),
            Binding("shadow_free", STORAGE, "array<u32>"),
            Binding("shadow_pool_state", STORAGE, "array<atomic<u32>>"),
            Binding("shadow_hpm", STORAGE, "array<atomic<u32>>"),
            Binding("shadow_draw", STORAGE, "array<u32>"),
            Binding("state", STORAGE, "array<atomic<u32>>"),
            Binding("shadow_clear_args", STORAGE, "array<u32>"),
        )
        self.bgl, self.pipes = compute_pipelines(device, "shadow_pages.wgsl", self.bindings,
                                                 ENTRIES, defines=["VIS64"] if vis64 else [],
                                                 label=self.label)
        self.clear = ShadowClear(device)

    def encode(self, frame, encoder) -> None:
        """`frame`: the shadow views' resources (renderer.shadows.ShadowFrame)."""
        per_level = SHADOW_PAGES * SHADOW_PAGES
        entries = SHADOW_LEVELS * per_level
        bg = self.group(frame)
        steps = {"shadow_mark": [("cs_mark", None)],
                 "shadow_free": [("cs_begin", (1, 1)), ("cs_free", ((entries + 63) // 64, 1))],
                 "shadow_alloc": [*[step for _ in range(SHADOW_LEVELS) for step in (
                     ("cs_alloc_level", (1, 1)), ("cs_alloc", ((per_level + 63) // 64, 1)))],
                     ("cs_clear_args", (1, 1))]}  # the coarsest level first
        for label, work in steps.items():
            cp = encoder.begin_compute_pass(label=label, timestamp_writes=frame.timestamps(label))
            for name, size in work:
                cp.set_pipeline(self.pipes[name])
                cp.set_bind_group(0, bg)
                if size is None:
                    cp.dispatch_workgroups((frame.width + 7) // 8, (frame.height + 7) // 8)
                else:
                    cp.dispatch_workgroups(*size)
            cp.end()
        cp = encoder.begin_compute_pass(label="shadow_clear",
                                        timestamp_writes=frame.timestamps("shadow_clear"))
        cp.set_pipeline(self.clear.pipeline)
        cp.set_bind_group(0, self.clear.group(frame))
        cp.dispatch_workgroups_indirect(frame.buffers["shadow_clear_args"], 0)
        cp.end()
