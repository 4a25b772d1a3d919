"""Where the scene's pages live on the GPU: the GPU side of streaming.

Either every page is uploaded once into one storage buffer (resident: slot = page), or the pages
stream through a pool of fixed-size slots: the root pages on load, the rest when culling asks
(`renderer.streaming.PageStreamer` decides what to upload and evict; this module performs it).
Whether the scene streams, and how many slots a pool has, is decided here and only here, from the
options and the adapter's binding limit.

Buffers (by binding name): `pages` (the pages or the pool), `residency` (scene page -> slot, or
NOT_RESIDENT), `effective` (per scene group: usable for the cut), `request_stamp`, `requests`
(what culling asks for; read back) and `slot_used` (the frame that last used each slot; read
back).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

import numpy as np
import wgpu

from renderer.gpu import buffer, buffer_with
from renderer.layout import REQUEST_DTYPE
from renderer.limits import DEFAULT_BINDING_LIMIT, MAX_PAGES
from renderer.options import RenderOptions
from renderer.scene import Scene, SceneError

if TYPE_CHECKING:
    from renderer.streaming import PageStreamer

_BU = wgpu.BufferUsage


def binding_limit(limits: dict) -> int:
    """The most bytes the adapter binds in one storage buffer (the page buffer is one)."""
    return int(limits.get("max-storage-buffer-binding-size", DEFAULT_BINDING_LIMIT))


def pool_slots(options: RenderOptions, page_size: int, limits: dict) -> int:
    """Slots of a page pool: `pool_pages`, else `pool_mb` (default: what the adapter binds, 1 GiB
    at most), never more than one binding or the addressable pages hold."""
    cap = binding_limit(limits)
    if options.pool_pages is not None:
        slots = int(options.pool_pages)
    else:
        mb = options.pool_mb if options.pool_mb is not None else min(cap, 1 << 30) / 2**20
        slots = int(mb * 2**20) // page_size
    return max(1, min(slots, cap // page_size, MAX_PAGES))


class PagePool:
    """The scene's pages on the GPU, resident or streaming, and the tables culling reads.

    Attributes:
        buffers: the buffers above, by binding name.
        slots: page slots in `pages` (the page count when nothing streams).
        streamer: the `PageStreamer` when the scene streams, else None.
        page_size: bytes per page.
    """

    def __init__(self, device: wgpu.GPUDevice, scene: Scene, options: RenderOptions,
                 limits: dict) -> None:
        self.device = device
        self.options = o = options
        self.page_size = page_size = scene.assets[0].page_size
        gpu = scene.gpu_assets  # the scene's, and the proxies' box
        total = sum(a.page_count for a in gpu)
        groups = sum(len(a.groups) for a in gpu)
        # the proxies' box (Scene.gpu_assets) is a root page of its own on top of the pool asked
        extra = sum(a.page_count for a in gpu[len(scene.assets):])
        slots = min(pool_slots(o, page_size, limits) + extra,
                    binding_limit(limits) // page_size, MAX_PAGES)
        stream = o.streaming if o.streaming is not None else total > slots
        usage = _BU.STORAGE | _BU.COPY_DST
        self.streamer: PageStreamer | None = None
        self.buffers: dict[str, wgpu.GPUBuffer] = {}
        if stream:
            from renderer.streaming import PageStreamer  # (numba: loaded only to stream)

            budget = max(1, int(o.upload_mb * 2**20) // page_size)
            try:
                self.streamer = PageStreamer(gpu, slots, budget)
            except ValueError as e:
                raise SceneError(str(e)) from None
            self.buffers["pages"] = buffer(device, slots * page_size, "scene.page_pool", usage)
            for slot, page in self.streamer.resident_uploads():
                device.queue.write_buffer(self.buffers["pages"], slot * page_size,
                                          self.streamer.page_bytes(page))
            residency, effective = self.streamer.residency, self.streamer.effective
            self._tables = (self.streamer.residency_version, self.streamer.effective_version)
        else:
            if total > slots:
                raise SceneError(f"the scene's {total} pages ({total * page_size / 2**20:.0f} MiB) "
                                 f"do not fit a pool of {slots} pages: turn streaming on")
            self.buffers["pages"] = buffer_with(device, scene.page_data(), "scene.pages",
                                                _BU.STORAGE)
            slots = total
            residency = np.arange(total, dtype=np.uint32)  # slot = page
            effective = np.ones(groups, np.uint32)
        self.slots = slots
        self.buffers["residency"] = buffer_with(device, residency, "stream.residency",
                                                usage | _BU.COPY_SRC)
        self.buffers["effective"] = buffer_with(device, effective, "stream.effective",
                                                usage | _BU.COPY_SRC)
        self.buffers["request_stamp"] = buffer(device, 4 * groups, "stream.request_stamp", usage)
        self.buffers["requests"] = buffer(device, 8 * o.request_capacity, "stream.requests",
                                          _BU.STORAGE | _BU.COPY_SRC)
        self.buffers["slot_used"] = buffer(device, 4 * slots, "stream.slot_used",
                                           _BU.STORAGE | _BU.COPY_SRC | _BU.COPY_DST)
        self.frame_slot_page: np.ndarray | None = None  # slot -> page as the last frame saw it

    def pinned_slot(self, page: int) -> int:
        """The pool slot of scene page `page`, a root page (pinned: it never moves)."""
        if self.streamer is None:
            return page
        assert self.streamer.pinned[page]
        return int(self.streamer.residency[page])

    def begin_frame(self) -> None:
        """Remember what the slots hold for the frame being encoded (`slot_pages`)."""
        if self.streamer is not None:
            self.frame_slot_page = self.streamer.slot_page.copy()

    def serve(self, index: int, requests: np.ndarray, used_words: np.ndarray) -> dict:
        """Serve frame `index`'s page requests (REQUEST_DTYPE) and slot stamps (read back a few
        frames late): the uploads and table updates are queued before the next frame's commands,
        so every frame reads a consistent pool. Returns the frame's streaming statistics."""
        st = self.streamer
        assert st is not None
        used = np.flatnonzero(used_words == np.uint32(index & 0xFFFFFFFF))
        t0 = time.perf_counter()
        uploads = st.update(requests.view(REQUEST_DTYPE), used, index)
        q = self.device.queue
        for slot, page in uploads:
            q.write_buffer(self.buffers["pages"], slot * st.page_size, st.page_bytes(page))
        versions = (st.residency_version, st.effective_version)
        if versions[0] != self._tables[0]:
            q.write_buffer(self.buffers["residency"], 0, st.residency)
        if versions[1] != self._tables[1]:
            q.write_buffer(self.buffers["effective"], 0, st.effective)
        self._tables = versions
        ss = st.stats
        return {
            "pool_pages": st.slots, "resident": ss.resident, "pool_use": ss.pool_use,
            "requested": ss.requested, "uploaded": ss.uploaded, "evicted": ss.evicted,
            "mb_uploaded": ss.bytes_uploaded / 2**20, "update_ms": 1e3 * (time.perf_counter() - t0),
        }

    def slot_pages(self, slots: np.ndarray) -> np.ndarray:
        """Pool slots -> scene pages, as the last encoded frame saw them (identity when
        resident)."""
        if self.streamer is None or self.frame_slot_page is None:
            return slots
        return self.frame_slot_page[slots]
