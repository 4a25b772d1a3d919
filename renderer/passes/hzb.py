"""The hierarchical depth buffer, built from the visibility buffer's depth (shaders/hzb.wgsl):
mip 0 at half the image size, each texel the farthest depth below it; one dispatch per three
mips."""

from __future__ import annotations

from renderer.gpu import STORAGE, UNIFORM, Binding, bind_group_layout, shader_module
from renderer.limits import HZB_MAX_MIPS, PIXEL_TILE
from renderer.passes import Pass, vis_bindings


def hzb_levels(width: int, height: int) -> list[tuple[int, int]]:
    """(width, height) of every mip: half the image (rounded up), halved down to 1x1."""
    w, h = (width + 1) // 2, (height + 1) // 2
    out = [(w, h)]
    while (w, h) != (1, 1):
        w, h = (w + 1) // 2, (h + 1) // 2
        out.append((w, h))
    if len(out) > HZB_MAX_MIPS:
        raise ValueError(f"image too large for the HZB ({len(out)} mips, at most {HZB_MAX_MIPS})")
    return out


LEVELS_PER_DISPATCH = 3  # shaders/hzb.wgsl: a lane owns a 4 x 4 block of the finest of three


class HZB(Pass):
    label = "hzb"

    def __init__(self, device, *, vis64: bool) -> None:
        super().__init__()
        self.bindings = (Binding("frame", UNIFORM, "Frame"),
                         *vis_bindings(vis64, write=False, ids=False),
                         Binding("hzb", STORAGE, "array<u32>"))
        self.device = device
        self.module = shader_module(device, "hzb.wgsl", self.bindings,
                                    defines=["VIS64"] if vis64 else [], label="hzb.shader")
        self.bgl = bind_group_layout(device, self.bindings, "hzb.bind_group_layout")
        self.layout = device.create_pipeline_layout(bind_group_layouts=[self.bgl],
                                                    label="hzb.layout")
        self.pipes: dict[int, object] = {}

    def _pipe(self, mip: int, levels: int):
        key = (mip, levels)
        if key not in self.pipes:  # one per first mip and level count, made when first needed
            self.pipes[key] = self.device.create_compute_pipeline(
                layout=self.layout, label=f"hzb.mip{mip}x{levels}",
                compute={"module": self.module, "entry_point": "cs_main",
                         "constants": {"MIP": mip, "LEVELS": levels}})
        return self.pipes[key]

    def encode(self, frame, encoder, label: str = "hzb") -> None:
        cp = encoder.begin_compute_pass(label=label, timestamp_writes=frame.timestamps(label))
        cp.set_bind_group(0, self.group(frame))
        count = len(frame.hzb_levels)
        for mip in range(0, count, LEVELS_PER_DISPATCH):
            levels = min(LEVELS_PER_DISPATCH, count - mip)
            w, h = frame.hzb_levels[mip + levels - 1]  # a lane per texel of the coarsest
            cp.set_pipeline(self._pipe(mip, levels))
            cp.dispatch_workgroups(-(-w // PIXEL_TILE), -(-h // PIXEL_TILE))
        cp.end()
