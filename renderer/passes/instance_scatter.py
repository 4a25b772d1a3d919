"""Instance scatter: the rows of the instances moved since the previous frame, written into their
slots of the instance buffer from the moved table (shaders/instance_scatter.wgsl), before
anything of the frame reads them."""

from __future__ import annotations

from renderer.gpu import READ, STORAGE, Binding, compute_pipelines
from renderer.limits import MAX_DISPATCH, WORKGROUP
from renderer.passes import Pass

BINDINGS = (
    Binding("instances", STORAGE, "array<vec4<u32>>"),
    Binding("moved", READ, "array<vec4<u32>>"),
)


class InstanceScatter(Pass):
    label = "instance_scatter"
    bindings = BINDINGS

    def __init__(self, device) -> None:
        super().__init__()
        self.bgl, pipes = compute_pipelines(device, "instance_scatter.wgsl", self.bindings,
                                            ["cs_main"], label=self.label)
        self.pipeline = pipes["cs_main"]

    def encode(self, frame, encoder, count: int) -> None:
        """`count` entries of the moved table."""
        cp = encoder.begin_compute_pass(label=self.label,
                                        timestamp_writes=frame.timestamps(self.label))
        cp.set_pipeline(self.pipeline)
        cp.set_bind_group(0, self.group(frame))
        groups = -(-count // WORKGROUP)
        cp.dispatch_workgroups(min(groups, MAX_DISPATCH), -(-groups // MAX_DISPATCH))
        cp.end()
