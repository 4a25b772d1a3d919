"""Software rasterizer: workgroups of SW_WORKGROUP (128) lanes over the visible SW clusters
(shaders/raster_sw.wgsl); `lanes` lanes per cluster, `rounds` rounds of 128 / lanes clusters."""

from __future__ import annotations

import wgpu

from renderer.gpu import READ, STORAGE, UNIFORM, Binding, compute_pipelines
from renderer.layout import ARGS
from renderer.limits import SHADOW_VIEWS, SW_WORKGROUP
from renderer.passes import Pass, cluster_reader_bindings, vis_bindings

COMPUTE = wgpu.ShaderStage.COMPUTE


def shadow_raster_bindings(reader: tuple[Binding, ...], stages: int = COMPUTE,
                           fragment: int = COMPUTE) -> tuple[Binding, ...]:
    """A cluster reader's bindings for the shadow views: the visible list of 16-byte entries,
    and the shadow map (shaders/shadow_raster.wgsl); `fragment` the stage that writes it."""
    return (
        *(Binding("visible", READ, "array<vec4<u32>>", b.stages) if b.name == "visible" else b
          for b in reader),
        Binding("shadow", UNIFORM, "ShadowInfo", stages),
        Binding("shadow_views", UNIFORM, f"array<ShadowView, {SHADOW_VIEWS}>", stages),
        # the page table and the pool: written in the fragment stage (a vertex stage may not
        # write storage), where the HW pass also reads the item's physical page
        Binding("shadow_map", STORAGE, "array<atomic<u32>>", fragment),
    )


class RasterSW(Pass):
    label = "raster_sw"

    def __init__(self, device, *, vis64: bool, lanes: int = SW_WORKGROUP, rounds: int = 1,
                 shadow: bool = False) -> None:
        super().__init__()
        if lanes not in [1 << k for k in range(SW_WORKGROUP.bit_length())] or rounds < 1:
            raise ValueError(f"SW raster: lanes must be a power of two up to {SW_WORKGROUP} and "
                             f"rounds >= 1 (got {lanes}, {rounds})")
        self.clusters_per_workgroup = SW_WORKGROUP // lanes * rounds
        self.lanes, self.rounds = lanes, rounds
        self.bindings = (
            *cluster_reader_bindings(),
            Binding("state", READ, "array<u32>"),
            *vis_bindings(vis64, write=True),
        )
        defines = ["VIS64"] if vis64 else []
        variants = [False] if vis64 else [False, True]
        if shadow:  # the shadow views' SW clusters into the shadow map (one variant)
            self.label = "shadow_raster_sw"
            self.bindings = (*shadow_raster_bindings(cluster_reader_bindings()),
                             Binding("state", READ, "array<u32>"),
                             Binding("shadow_hpm", READ, "array<u32>"))
            defines, variants = ["SHADOW", "SHADOW_SW"], [False]
        self.pipelines = []
        for id_pass in variants:
            self.bgl, pipes = compute_pipelines(
                device, "raster_sw.wgsl", self.bindings, ["cs_main"], defines=defines,
                constants={**({} if vis64 or shadow else {"ID_PASS": id_pass}),
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
