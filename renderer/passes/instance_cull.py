"""Block cull and instance cull: the blocks of instance slots whose bounds touch the view, or the
aggregate proxy that stands for them when it is fine enough (`BlockCull`,
shaders/block_cull.wgsl), then the frustum and occlusion test of each of their instances' root
box (`InstanceCull`), or a proxy's box cluster; survivors seed the BVH queue, occluded ones the
post pass. The shadow views' instance cull takes every instance slot (no proxy)."""

from __future__ import annotations

from renderer.gpu import READ, STORAGE, UNIFORM, Binding, compute_pipelines
from renderer.layout import ARGS
from renderer.limits import INSTANCE_BLOCK, MAX_DISPATCH, SHADOW_VIEWS, WORKGROUP
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

# the blocks in view; the visible list, which a far instance's box joins at once
MAIN_BINDINGS = (*BINDINGS, Binding("blocks", READ, "array<u32>"),
                 Binding("visible", STORAGE, "array<vec2<u32>>"))

BLOCK_BINDINGS = (
    Binding("frame", UNIFORM, "Frame"),
    Binding("state", STORAGE, "array<atomic<u32>>"),
    Binding("block_bounds", READ, "array<vec4<f32>>"),
    Binding("blocks", STORAGE, "array<u32>"),
    Binding("args", STORAGE, "array<u32>"),
    Binding("aggregates", READ, "array<vec4<u32>>"),  # proxy nodes (renderer/aggregates.py)
)

SHADOW_BINDINGS = (
    *BINDINGS,
    Binding("shadow", UNIFORM, "ShadowInfo"),
    Binding("shadow_views", UNIFORM, f"array<ShadowView, {SHADOW_VIEWS}>"),
    Binding("shadow_hpm", READ, "array<u32>"),
    Binding("visible", STORAGE, "array<vec4<u32>>"),  # (instance | view, cluster, page) items
)


class BlockCull(Pass):
    """The blocks in view, and the instance cull's indirect dispatch over them."""

    label = "block_cull"
    bindings = BLOCK_BINDINGS

    def __init__(self, device) -> None:
        super().__init__()
        self.bgl, self.pipes = compute_pipelines(device, "block_cull.wgsl", self.bindings,
                                                 ["cs_blocks", "cs_block_args"], label=self.label)

    def encode(self, frame, encoder) -> None:
        groups = -(-frame.proxy_first // INSTANCE_BLOCK // WORKGROUP)
        cp = encoder.begin_compute_pass(label=self.label,
                                        timestamp_writes=frame.timestamps(self.label))
        cp.set_bind_group(0, self.group(frame))
        cp.set_pipeline(self.pipes["cs_blocks"])
        cp.dispatch_workgroups(min(groups, MAX_DISPATCH), -(-groups // MAX_DISPATCH))
        cp.set_pipeline(self.pipes["cs_block_args"])
        cp.dispatch_workgroups(1)
        cp.end()


class InstanceCull(Pass):
    """In the main view a workgroup per block in view (`BlockCull` listed them and wrote the
    dispatch); with `shadow`, a lane per slot tests its instance against every shadow view with
    pages to draw and queues its root once per view that wants it (renderer/shadows.py)."""

    label = "instance_cull"
    bindings = MAIN_BINDINGS

    def __init__(self, device, *, shadow: bool = False) -> None:
        super().__init__()
        self.shadow = shadow
        if shadow:
            self.label, self.bindings = "shadow_instance_cull", SHADOW_BINDINGS
        self.bgl, pipes = compute_pipelines(device, "instance_cull.wgsl", self.bindings,
                                            ["cs_main"], defines=["SHADOW"] if shadow else [],
                                            label=self.label)
        self.pipeline = pipes["cs_main"]

    def encode(self, frame, encoder) -> None:
        cp = encoder.begin_compute_pass(label=self.label,
                                        timestamp_writes=frame.timestamps(self.label))
        cp.set_pipeline(self.pipeline)
        cp.set_bind_group(0, self.group(frame))
        if self.shadow:
            groups = -(-frame.proxy_first // WORKGROUP)  # the shader reads gid.y past
            cp.dispatch_workgroups(min(groups, MAX_DISPATCH), -(-groups // MAX_DISPATCH))
        else:
            cp.dispatch_workgroups_indirect(frame.buffers["args"], 4 * ARGS["blocks_x"])
        cp.end()
