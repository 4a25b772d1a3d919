"""BVH and cluster culling: LOD by projected error, frustum, SW/HW bins (shaders/cull.wgsl).

Two traversals of the same rules: ``persistent`` (one dispatch of persistent workgroups pulling
from the global queue; see ARCHITECTURE "Persistent-thread culling") and per-level (one indirect
dispatch per BVH depth, the portable fallback). Then `prepare.wgsl` sizes the raster work.
"""

from __future__ import annotations

from renderer.gpu import READ, STORAGE, UNIFORM, Binding, compute_pipelines
from renderer.passes import Pass

BINDINGS = (
    Binding("frame", UNIFORM, "Frame"),
    Binding("instances", READ, "array<Instance>"),
    Binding("assets", READ, "array<AssetInfo>"),
    Binding("nodes", READ, "array<u32>"),
    Binding("groups", READ, "array<u32>"),
    Binding("parts", READ, "array<u32>"),
    Binding("pages", READ, "array<u32>"),
    Binding("queue", STORAGE, "array<atomic<u32>>"),
    Binding("state", STORAGE, "array<atomic<u32>>"),
    Binding("visible", STORAGE, "array<vec2<u32>>"),
)

PREPARE_BINDINGS = (
    Binding("frame", UNIFORM, "Frame"),
    Binding("state", STORAGE, "array<atomic<u32>>"),
    Binding("args", STORAGE, "array<u32>"),
)


class Prepare(Pass):
    """One-lane passes writing indirect arguments (shaders/prepare.wgsl)."""

    label = "prepare"
    bindings = PREPARE_BINDINGS

    def __init__(self, device) -> None:
        super().__init__()
        self.bgl, self.pipes = compute_pipelines(device, "prepare.wgsl", PREPARE_BINDINGS,
                                                 ["cs_level_args", "cs_raster_args"],
                                                 label=self.label)

    def dispatch(self, cp, frame, entry: str) -> None:
        cp.set_pipeline(self.pipes[entry])
        cp.set_bind_group(0, self.group(frame))
        cp.dispatch_workgroups(1)


class Cull(Pass):
    label = "cull"
    bindings = BINDINGS

    def __init__(self, device, *, persistent: bool, workgroups: int = 128) -> None:
        super().__init__()
        self.persistent = persistent
        self.workgroups = workgroups  # persistent workgroups
        self.bgl, self.pipes = compute_pipelines(device, "cull.wgsl", BINDINGS,
                                                 ["cs_persistent", "cs_level"], label=self.label)
        self.prepare = Prepare(device)

    def encode(self, frame, encoder) -> None:
        cp = encoder.begin_compute_pass(label=self.label,
                                        timestamp_writes=frame.timestamps(self.label))
        if self.persistent:
            cp.set_pipeline(self.pipes["cs_persistent"])
            cp.set_bind_group(0, self.group(frame))
            cp.dispatch_workgroups(self.workgroups)
        else:
            # nodes of depth d push depth d + 1 nodes and the parts of their groups: the deepest
            # level (max depth + 1) holds only parts
            for _ in range(frame.max_depth + 2):
                self.prepare.dispatch(cp, frame, "cs_level_args")
                cp.set_pipeline(self.pipes["cs_level"])
                cp.set_bind_group(0, self.group(frame))
                cp.dispatch_workgroups_indirect(frame.buffers["args"], 0)
        self.prepare.dispatch(cp, frame, "cs_raster_args")
        cp.end()
