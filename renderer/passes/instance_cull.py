"""Instance cull: frustum and occlusion test of every instance's root sphere; survivors seed the
BVH queue, occluded ones the post pass."""

from __future__ import annotations

from renderer.gpu import READ, STORAGE, UNIFORM, Binding, compute_pipelines
from renderer.limits import MAX_DISPATCH, SHADOW_VIEWS, WORKGROUP
from renderer.passes import Pass

BINDINGS = (
    Binding("frame", UNIFORM, "Frame"),
    Binding("instances", READ, "array<vec4<u32>>"),
    Binding("assets", READ, "array<AssetInfo>"),
    Binding("nodes", READ, "array<u32>"),
    Binding("queue", STORAGE, "array<atomic<u32>>"),
    Binding("state", STORAGE, "array<atomic<u32>>"),
    Binding("hzb", READ, "array<u32>"),
    Binding("occluded", STORAGE, "array<vec2<u32>>"),
)


SHADOW_BINDINGS = (
    *BINDINGS,
    Binding("shadow", UNIFORM, "ShadowInfo"),
    Binding("shadow_views", UNIFORM, f"array<ShadowView, {SHADOW_VIEWS}>"),
    Binding("shadow_hpm", READ, "array<u32>"),
)


class InstanceCull(Pass):
    """With `shadow`, a lane tests its instance against every shadow view with pages to draw
    and queues its root once per view that wants it (renderer/shadows.py)."""

    label = "instance_cull"
    bindings = BINDINGS

    def __init__(self, device, *, shadow: bool = False) -> None:
        super().__init__()
        if shadow:
            self.label, self.bindings = "shadow_instance_cull", SHADOW_BINDINGS
        self.bgl, pipes = compute_pipelines(device, "instance_cull.wgsl", self.bindings,
                                            ["cs_main"], defines=["SHADOW"] if shadow else [],
                                            label=self.label)
        self.pipeline = pipes["cs_main"]

    def encode(self, frame, encoder) -> None:
        n = frame.instance_count
        cp = encoder.begin_compute_pass(label=self.label,
                                        timestamp_writes=frame.timestamps(self.label))
        cp.set_pipeline(self.pipeline)
        cp.set_bind_group(0, self.group(frame))
        groups = -(-n // WORKGROUP)  # the shader reads gid.y past MAX_DISPATCH groups
        cp.dispatch_workgroups(min(groups, MAX_DISPATCH), -(-groups // MAX_DISPATCH))
        cp.end()
