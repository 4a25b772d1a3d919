"""What a frame gives back: its statistics (`FrameStats`, from the GPU counters read back a few
frames late) and its images (`RenderResult`, numpy arrays), with a PNG writer."""

from __future__ import annotations

import os
import struct
import zlib
from dataclasses import dataclass, field

import numpy as np

from renderer.layout import OVERFLOW_BITS

INCOMPLETE = OVERFLOW_BITS["incomplete"]  # FrameStats.overflow: the traversal did not finish


@dataclass
class FrameStats:
    """What one frame did, from the GPU counters (and timestamps where available)."""

    frame: int
    counters: dict[str, int]
    # layout.OVERFLOW_BITS: 1 queue full, 2 visible list full, 4 occluded list full, 8
    # (INCOMPLETE): the traversal ended with work outstanding (a shader loop cut short: lavapipe
    # ends an invocation's loops after 65,535 iterations without an error)
    overflow: int
    gpu_ms: dict[str, float] = field(default_factory=dict)  # per pass
    cpu_ms: float = 0.0  # encoding and submission (lavapipe runs the work inside submission)
    streaming: dict | None = None  # pool use, pages resident/requested/uploaded/evicted, MB
    # texture tiles (None while none stream): wanted by the frame, missing among them, uploaded,
    # evicted, short (missing and not uploaded: drawn from coarser mips), resident, pool slots,
    # the pool's MiB (renderer/texture_pool.py `TexturePool.serve`)
    textures: dict | None = None
    encode_ms: float = 0.0  # the frame's CPU work before submission: Python, encoding
    # the sun's shadow map (None without shadows): table entries marked by the frame's pixels,
    # given a page, cached, drawn, left without one (pool spent: a coarser level serves their
    # pixels); pool pages in all and in use; what its views drew; their overflow bits
    shadow: dict | None = None
    # the passes the frame encoded, in order (`gpu_ms` holds those timed, where the adapter
    # has timestamps)
    passes: tuple[str, ...] = ()

    @property
    def triangles(self) -> int:
        return self.counters["sw_triangles"] + self.counters["hw_triangles"]

    @property
    def clusters(self) -> int:
        return self.counters["sw_clusters"] + self.counters["hw_clusters"]

    @property
    def gpu_total_ms(self) -> float:
        return float(sum(self.gpu_ms.values()))


@dataclass
class RenderResult:
    """Images of one frame (row 0 at the top) and its statistics."""

    color: np.ndarray  # (h, w, 4) uint8 RGBA
    depth: np.ndarray  # (h, w) float32 NDC depth, reversed Z (near / distance); 0 = background
    normal: np.ndarray  # (h, w, 3) float32 world-space unit normals; 0 = background
    instance: np.ndarray  # (h, w) int64 instance index, -1 = background
    cluster: np.ndarray  # (h, w) int64 cluster index within its asset, -1 = background
    triangle: np.ndarray  # (h, w) int64 triangle index within its cluster, -1 = background
    level: np.ndarray  # (h, w) int64 LOD level of the cluster (0 finest), -1 = background
    hardware: np.ndarray  # (h, w) bool: drawn by the hardware rasterizer
    # (h, w, 2) float32 screen motion of the surface under each pixel since the previous
    # submitted frame (camera and instance motion), in pixels, x right, y down: the point was at
    # (pixel centre - velocity). 0 on the background, on the first frame, after a resize or a new
    # scene, and where the point was behind the previous camera (shaders/depth_targets.wgsl)
    velocity: np.ndarray
    stats: FrameStats
    near: float = 0.0
    # (h, w) float32 the sun's visibility at each pixel's surface (the shadow map, filtered; in
    # steps of 1/255): 1 lit, 0 shadowed; 1 on the background and without shadows
    shadow: np.ndarray | None = None
    # the G-buffer the lit image is shaded from (resolve, Nanite's BasePass); background 0 / -1
    base_color: np.ndarray | None = None  # (h, w, 4) uint8: RGB sRGB-encoded, A the alpha
    shading_normal: np.ndarray | None = None  # (h, w, 3) float32 world, normal map applied
    roughness: np.ndarray | None = None  # (h, w) float32 0..1 (8-bit)
    metallic: np.ndarray | None = None  # (h, w) float32 0..1 (8-bit)
    occlusion: np.ndarray | None = None  # (h, w) float32 0..1 (8-bit): 1 = unoccluded
    emissive: np.ndarray | None = None  # (h, w, 3) uint8 sRGB-encoded
    material: np.ndarray | None = None  # (h, w) int64 scene material index, -1 = background

    @property
    def coverage(self) -> np.ndarray:
        """(h, w) bool: the pixels something was drawn on (depth > 0), aggregate proxies'
        included, whose pixels name no instance (`instance` -1)."""
        return self.depth > 0

    def distance(self) -> np.ndarray:
        """(h, w) float32 distance along the view axis (inf on the background)."""
        with np.errstate(divide="ignore"):
            return np.where(self.depth > 0, self.near / self.depth, np.inf).astype(np.float32)

    def save_png(self, path: str | os.PathLike) -> None:
        """Write the color image as a PNG."""
        write_png(path, self.color)


def write_png(path: str | os.PathLike, rgba: np.ndarray) -> None:
    """(h, w, 4) uint8 -> PNG file."""
    with open(path, "wb") as f:
        f.write(png_bytes(rgba))


def png_bytes(rgba: np.ndarray) -> bytes:
    """(h, w, 4) uint8 -> the bytes of a PNG file."""
    h, w = rgba.shape[:2]
    raw = np.concatenate([np.zeros((h, 1), np.uint8), rgba.reshape(h, w * 4)], axis=1)

    def chunk(tag: bytes, data: bytes) -> bytes:
        return (struct.pack(">I", len(data)) + tag + data
                + struct.pack(">I", zlib.crc32(tag + data) & 0xFFFFFFFF))

    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 6, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw.tobytes(), 6)) + chunk(b"IEND", b""))
