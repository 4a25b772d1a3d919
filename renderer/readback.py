"""Reading a frame's results back without stalling: a small ring of mappable buffers.

Each frame copies into one buffer of the ring, at the offsets of `RingLayout`: the `state` words
(counters, overflow flags), the pass timestamps, while streaming the page requests and the slot
stamps, and while textures stream their tiles' stamps. The buffer is mapped right after
submission; `ReadbackRing.collect` hands every mapping that has completed to the renderer (a few
frames late), or waits for a given frame.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import wgpu

from renderer.layout import STATE_WORDS
from renderer.limits import MAX_TIMESTAMPS, READBACK_RING

_BU = wgpu.BufferUsage


@dataclass(frozen=True)
class RingLayout:
    """Byte offsets of the parts of one readback buffer."""

    request_capacity: int = 0  # page request entries (8 bytes each); 0 when nothing streams
    slots: int = 0  # pool slots stamped (4 bytes each); 0 when nothing streams
    tiles: int = 0  # texture tile stamps (4 bytes each); 0 when no texture streams

    STATE = 0  # the state words (at most 64 of them)
    TIMESTAMPS = 256  # MAX_TIMESTAMPS u64 timestamps, two per pass

    def __post_init__(self) -> None:
        assert 4 * len(STATE_WORDS) <= self.TIMESTAMPS

    @property
    def requests(self) -> int:
        return self.TIMESTAMPS + 8 * MAX_TIMESTAMPS

    @property
    def slot_used(self) -> int:
        return self.requests + 8 * self.request_capacity

    @property
    def shadow_state(self) -> int:  # the shadow views' state words
        return self.slot_used + 4 * self.slots

    @property
    def shadow_pool(self) -> int:  # the shadow pool's four words (free-list top first)
        return self.shadow_state + 4 * len(STATE_WORDS)

    @property
    def tile_stamps_at(self) -> int:  # the texture tiles' stamps
        return self.shadow_pool + 16

    @property
    def size(self) -> int:
        return self.tile_stamps_at + 4 * self.tiles

    def tile_stamps(self, raw: np.ndarray) -> np.ndarray:
        """(tiles,) uint32: the frame (+ 1) whose BasePass last wanted each texture tile."""
        return raw[self.tile_stamps_at // 4 : self.tile_stamps_at // 4 + self.tiles]

    def shadow_words(self, raw: np.ndarray) -> np.ndarray:
        return raw[self.shadow_state // 4 : self.shadow_state // 4 + len(STATE_WORDS)]

    def shadow_pool_words(self, raw: np.ndarray) -> np.ndarray:
        return raw[self.shadow_pool // 4 : self.shadow_pool // 4 + 4]

    def state_words(self, raw: np.ndarray) -> np.ndarray:
        """(len(STATE_WORDS),) uint32 of a buffer read as (n,) uint32 words."""
        return raw[self.STATE // 4 : self.STATE // 4 + len(STATE_WORDS)]

    def timestamps(self, raw: np.ndarray) -> np.ndarray:
        """(MAX_TIMESTAMPS,) uint64: begin and end of each labelled pass, in order."""
        return raw[self.TIMESTAMPS // 4 : self.TIMESTAMPS // 4 + 2 * MAX_TIMESTAMPS].view(np.uint64)

    def request_words(self, raw: np.ndarray, count: int) -> np.ndarray:
        """(2 * count,) uint32: the first `count` page requests (REQUEST_DTYPE rows)."""
        return raw[self.requests // 4 : self.requests // 4 + 2 * count].copy()

    def slot_stamps(self, raw: np.ndarray) -> np.ndarray:
        """(slots,) uint32: the frame that last used each pool slot."""
        return raw[self.slot_used // 4 : self.slot_used // 4 + self.slots]


@dataclass
class InFlight:
    """A submitted frame whose readback buffer is being mapped."""

    index: int  # frame index
    buffer: wgpu.GPUBuffer
    promise: object  # buffer.map_async's
    labels: list[str]  # the timestamped passes, in order
    cpu_ms: float  # encoding and submission
    frozen: bool  # culling was skipped (freeze_culling)
    encode_ms: float  # the CPU work before submission
    shadows: bool = False  # the frame shaded with the shadow map
    shadows_ran: bool = False  # and ran its passes (a still frame reuses the last run's pages)
    passes: tuple[str, ...] = ()  # every pass encoded, timed or not
    textures: object = None  # the frame's TexturePool (its stamps are that pool's tiles)


class ReadbackRing:
    """Up to READBACK_RING readback buffers in flight; `on_frame(item, raw)` gets each completed
    one, in submission order, with its contents as (n,) uint32 words."""

    def __init__(self, device: wgpu.GPUDevice,
                 on_frame: Callable[[InFlight, np.ndarray], None]) -> None:
        self.device = device
        self.on_frame = on_frame
        self.layout = RingLayout()
        self.pending: list[InFlight] = []
        self._free: list[wgpu.GPUBuffer] = []

    def configure(self, layout: RingLayout) -> None:
        """A new layout (a scene change): buffers of the old size are dropped as they return."""
        self.layout = layout
        self._free = []

    def acquire(self) -> wgpu.GPUBuffer:
        """A buffer for the next frame: a free one, or a new one while fewer than READBACK_RING
        are in flight (else wait for the oldest)."""
        self.collect()
        if self._free:
            return self._free.pop()
        if len(self.pending) >= READBACK_RING:  # all in flight: wait for the oldest (rare)
            self.collect(wait_for=self.pending[0].index)
            if self._free:
                return self._free.pop()
        return self.device.create_buffer(size=self.layout.size,
                                         usage=_BU.MAP_READ | _BU.COPY_DST, label="frame.readback")

    def submitted(self, item: InFlight) -> None:
        self.pending.append(item)

    def collect(self, wait_for: int | None = None) -> None:
        """Hand every finished readback to `on_frame` (and wait for frame `wait_for` if
        given)."""
        keep = []
        for item in self.pending:
            done = getattr(item.promise, "_state", "") in ("fulfilled", "pending-fulfilled")
            if not done and wait_for is not None and item.index <= wait_for:
                item.promise.sync_wait()
                done = True
            if not done:
                keep.append(item)
                continue
            buf = item.buffer
            if buf.map_state != "mapped":
                item.promise.sync_wait()
            raw = np.frombuffer(buf.read_mapped(), np.uint32).copy()
            buf.unmap()
            if buf.size == self.layout.size:  # (a scene change resizes the ring)
                self._free.append(buf)
            self.on_frame(item, raw)
        self.pending = keep
