"""Temporal accumulation (TAA): this frame's jittered lit colour blended into a reprojected,
clipped history; the result becomes the frame's colour (shaders/accumulate.wgsl).

The history is two pairs of buffers (linear RGB and the frames averaged, float32, split so that
none holds more than the visibility buffer's 8 bytes a pixel: it binds wherever the frame does),
read one frame and written the next: made by the first accumulated frame, dropped by a resize,
so that a renderer that never accumulates holds none of it."""

from __future__ import annotations

import numpy as np
import wgpu

from renderer.gpu import READ, STORAGE, UNIFORM, Binding, bind_group, buffer, compute_pipelines
from renderer.limits import PIXEL_TILE
from renderer.passes import Pass

# the clipping box's half-width in standard deviations of the 3 x 3 neighbourhood, in a frame
# where the camera or an instance moved: Salvi's tight box (moving edges keep no ghost). A frame
# where nothing moved clips nothing (the pipeline without CLIP, which reads no neighbour): no
# pixel can show a ghost there, and clipping would pull a sub-pixel object's history towards
# whatever this one jittered sample hit (an isolated object hit by 1 sample in 16 has a
# neighbourhood of background alone in the other 15), so a still view would never reach the
# supersampled picture
CLIP_SIGMA = 1.0
HISTORY_BYTES = 8  # a pixel, in each of the four history buffers

_BU = wgpu.BufferUsage


class Accumulate(Pass):
    label = "accumulate"

    def __init__(self, device: wgpu.GPUDevice) -> None:
        super().__init__()
        self.device = device
        self.bindings = (
            Binding("frame", UNIFORM, "Frame"),
            Binding("params", UNIFORM, "vec4<f32>"),  # 1 / K, reset (1 or 0), CLIP_SIGMA, 0
            # the sRGB decoding table at its head (renderer/layout.py SRGB_TABLE)
            Binding("materials", READ, "array<u32>"),
            Binding("color", STORAGE, "array<u32>"),
            Binding("velocity", READ, "array<vec2<f32>>"),
            Binding("history_rg", READ, "array<vec2<f32>>"),
            Binding("history_ba", READ, "array<vec2<f32>>"),
            Binding("out_rg", STORAGE, "array<vec2<f32>>"),
            Binding("out_ba", STORAGE, "array<vec2<f32>>"),
        )
        # with clipping (a frame where something moved) and without: an override constant, not
        # a branch on a uniform (docs/ARCHITECTURE.md "Testing": lavapipe)
        self.pipelines = {}
        for clip in (True, False):
            self.bgl, pipes = compute_pipelines(device, "accumulate.wgsl", self.bindings,
                                                ["cs_main", "cs_output"],
                                                constants={"CLIP": clip}, label=self.label)
            self.pipelines[clip] = pipes
        self.params = buffer(device, 16, "accumulate.params", _BU.UNIFORM | _BU.COPY_DST)
        self.history: list[tuple[wgpu.GPUBuffer, wgpu.GPUBuffer]] = []
        self._groups: dict[tuple, wgpu.GPUBindGroup] = {}
        self.parity = 0  # which history pair holds the previous frame's

    def drop_history(self) -> None:
        """Forget the history (a resize: its pixels are another image's)."""
        self.history, self._groups = [], {}

    def _ensure_history(self, width: int, height: int) -> None:
        if not self.history:
            nbytes = HISTORY_BYTES * width * height
            self.history = [tuple(buffer(self.device, nbytes, f"accumulate.history_{c}{i}",
                                         _BU.STORAGE | _BU.COPY_SRC) for c in ("rg", "ba"))
                            for i in (0, 1)]
            self._groups = {}

    def encode(self, frame, encoder: wgpu.GPUCommandEncoder, *, frames: int,
               reset: bool, moving: bool) -> None:
        """Blend the frame's colour into the history averaging up to `frames` frames (`reset`:
        start every pixel's history again; `moving`: the camera or an instance moved, clip the
        history), and write the result back as the frame's colour."""
        self._ensure_history(frame.width, frame.height)
        self.device.queue.write_buffer(self.params, 0, np.array(
            [1.0 / frames, 1.0 if reset else 0.0, CLIP_SIGMA, 0.0], np.float32))
        src, dst = self.history[self.parity], self.history[1 - self.parity]
        key = (frame.generation, self.parity)
        if key not in self._groups:
            self._groups = {k: g for k, g in self._groups.items() if k[0] == frame.generation}
            self._groups[key] = bind_group(
                self.device, self.bgl, self.bindings,
                {**frame.buffers, "params": self.params, "history_rg": src[0],
                 "history_ba": src[1], "out_rg": dst[0], "out_ba": dst[1]},
                f"{self.label}.bind_group")
        cp = encoder.begin_compute_pass(label=self.label,
                                        timestamp_writes=frame.timestamps(self.label))
        cp.set_bind_group(0, self._groups[key])
        groups = (-(-frame.width // PIXEL_TILE), -(-frame.height // PIXEL_TILE))
        for entry in ("cs_main", "cs_output"):
            cp.set_pipeline(self.pipelines[moving][entry])
            cp.dispatch_workgroups(*groups)
        cp.end()
        self.parity = 1 - self.parity
