"""Software rasterizer: a workgroup per visible SW cluster (shaders/raster_sw.wgsl)."""

from __future__ import annotations

from renderer.gpu import READ, STORAGE, Binding, compute_pipelines
from renderer.layout import ARGS
from renderer.passes import Pass, cluster_reader_bindings


def vis_bindings(vis64: bool, kind: str, stages=None) -> tuple[Binding, ...]:
    """The visibility buffer bindings of a raster pass (64-bit, or the 32-bit pair)."""
    extra = {} if stages is None else {"stages": stages}
    if vis64:
        return (Binding("vis", kind, "array<atomic<u64>>", **extra),)
    return (Binding("vis_depth", kind, "array<atomic<u32>>", **extra),
            Binding("vis_ids", kind, "array<atomic<u32>>", **extra))


class RasterSW(Pass):
    label = "raster_sw"

    def __init__(self, device, *, vis64: bool) -> None:
        super().__init__()
        self.bindings = (
            *cluster_reader_bindings(),
            Binding("state", READ, "array<u32>"),
            *vis_bindings(vis64, STORAGE),
        )
        defines = ["VIS64"] if vis64 else []
        variants = [False] if vis64 else [False, True]
        self.pipelines = []
        for id_pass in variants:
            self.bgl, pipes = compute_pipelines(
                device, "raster_sw.wgsl", self.bindings, ["cs_main"], defines=defines,
                constants={"ID_PASS": id_pass} if not vis64 else None,
                label=f"{self.label}{'.ids' if id_pass else ''}")
            self.pipelines.append(pipes["cs_main"])

    def encode(self, frame, encoder, variant: int = 0, label: str | None = None) -> None:
        name = label or (self.label if variant == 0 else f"{self.label}.ids")
        cp = encoder.begin_compute_pass(label=name, timestamp_writes=frame.timestamps(name))
        cp.set_pipeline(self.pipelines[variant])
        cp.set_bind_group(0, self.group(frame))
        cp.dispatch_workgroups_indirect(frame.buffers["args"], 4 * ARGS["sw_x"])
        cp.end()
