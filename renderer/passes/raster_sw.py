"""Software rasterizer: workgroups of 128 lanes over the visible SW clusters
(shaders/raster_sw.wgsl); `lanes` lanes per cluster, `rounds` rounds of 128 / lanes clusters."""

from __future__ import annotations

from renderer.gpu import READ, Binding, compute_pipelines
from renderer.layout import ARGS
from renderer.passes import Pass, cluster_reader_bindings, vis_bindings


class RasterSW(Pass):
    label = "raster_sw"

    def __init__(self, device, *, vis64: bool, lanes: int = 128, rounds: int = 1) -> None:
        super().__init__()
        if lanes not in (1, 2, 4, 8, 16, 32, 64, 128) or rounds < 1:
            raise ValueError(f"SW raster: lanes must be a power of two up to 128 and rounds >= 1 "
                             f"(got {lanes}, {rounds})")
        self.clusters_per_workgroup = 128 // lanes * rounds
        self.bindings = (
            *cluster_reader_bindings(),
            Binding("state", READ, "array<u32>"),
            *vis_bindings(vis64, write=True),
        )
        defines = ["VIS64"] if vis64 else []
        variants = [False] if vis64 else [False, True]
        self.pipelines = []
        for id_pass in variants:
            self.bgl, pipes = compute_pipelines(
                device, "raster_sw.wgsl", self.bindings, ["cs_main"], defines=defines,
                constants={**({} if vis64 else {"ID_PASS": id_pass}),
                           "SW_LANES": lanes, "SW_ROUNDS": rounds},
                label=f"{self.label}{'.ids' if id_pass else ''}")
            self.pipelines.append(pipes["cs_main"])

    def encode(self, frame, encoder, variant: int = 0, label: str | None = None) -> None:
        name = label or (self.label if variant == 0 else f"{self.label}.ids")
        cp = encoder.begin_compute_pass(label=name, timestamp_writes=frame.timestamps(name))
        cp.set_pipeline(self.pipelines[variant])
        cp.set_bind_group(0, self.group(frame))
        cp.dispatch_workgroups_indirect(frame.buffers["args"], 4 * ARGS["sw_x"])
        cp.end()
