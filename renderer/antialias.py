"""Anti-aliasing on the host (docs/ARCHITECTURE.md "Anti-aliasing"): the options' checks, the
sub-pixel jitter of temporal accumulation (Halton 2, 3), and a supersampled frame box-filtered
down to the output size in linear light (`downsample`).

A grid of sub-pixel objects aliases into moiré: each pixel centre hits an object or misses it.
Two cures share these helpers:

- supersampling (`Renderer.render(ssaa=N)`, `tessera render --ssaa N`): the frame drawn at
  N x N times the pixels, each output pixel the mean of its N x N samples' lit colour, in linear
  light (sRGB decoded before averaging, encoded after: averaging the encoded values darkens
  every edge between light and dark). The other images are data, not colour, and an average of
  ids, depths or normals is no id, depth or normal of anything: they are the sample nearest the
  output pixel's centre (sample (N // 2, N // 2) of its block: the centre for odd N, the lower
  right of the four nearest for even N), velocity scaled to output pixels;
- temporal accumulation (`Renderer.submit(accumulate=K)`, `render_converged(accumulate=K)`,
  the viewer): each frame's projection moved by `jitter(k)`, a point of the Halton (2, 3)
  sequence, and blended into a history on the GPU (`renderer/passes/accumulate.py`).
"""

from __future__ import annotations

import numbers
from dataclasses import replace

import numpy as np

from preprocess.tess.color import linear_to_srgb, srgb_to_linear
from renderer.results import RenderResult

__all__ = ["MAX_ACCUMULATE", "check_accumulate", "check_ssaa", "downsample", "halton", "jitter"]

# frames a history averages at most: its weights are 1 / n up to n = K, and float32 keeps a
# mean of 1,024 frames' 8-bit values to well under a code value
MAX_ACCUMULATE = 1024

# sRGB code -> linear, once: the decode of every sample
_LINEAR = srgb_to_linear(np.arange(256) / 255.0)


def _whole(v) -> bool:
    return isinstance(v, numbers.Integral) and not isinstance(v, bool)


def check_ssaa(n) -> int:
    """`n` as the samples a pixel along each axis (ValueError with one line unless a whole
    number >= 1)."""
    if not (_whole(n) and n >= 1):
        raise ValueError(f"ssaa must be a whole number >= 1 (samples a pixel along each axis), "
                         f"not {n!r}")
    return int(n)


def check_accumulate(k) -> int:
    """`k` as the frames a temporal history averages (0: none; ValueError with one line unless a
    whole number in 0..MAX_ACCUMULATE)."""
    if not (_whole(k) and 0 <= k <= MAX_ACCUMULATE):
        raise ValueError(f"accumulate must be a whole number of frames, 0 (off) to "
                         f"{MAX_ACCUMULATE}, not {k!r}")
    return int(k)


def halton(index: int, base: int) -> float:
    """The `index`-th (from 1) point of the van der Corput sequence in `base`, in [0, 1)."""
    f, x, i = 1.0, 0.0, int(index)
    while i > 0:
        f /= base
        x += f * (i % base)
        i //= base
    return x


def jitter(k: int) -> tuple[float, float]:
    """The sub-pixel offset of the k-th (from 0) accumulated frame, in pixels (x right, y down),
    in [-0.5, 0.5)^2: Halton (2, 3) from its first point, so that any run of frames covers the
    pixel evenly (a box filter, as supersampling's) and 16 frames come near a 4 x 4 grid."""
    return halton(k + 1, 2) - 0.5, halton(k + 1, 3) - 0.5


def downsample(res: RenderResult, n: int) -> RenderResult:
    """A frame drawn at n times the width and height, as an output-size `RenderResult`: the
    colour box-filtered in linear light, every other image the sample nearest each output
    pixel's centre (velocity in output pixels), the statistics the supersampled frame's."""
    if n == 1:
        return res
    h, w = res.color.shape[0] // n, res.color.shape[1] // n
    rgb = _LINEAR[res.color[..., :3]].reshape(h, n, w, n, 3).mean(axis=(1, 3))
    alpha = res.color[..., 3].reshape(h, n, w, n).mean(axis=(1, 3))
    color = np.empty((h, w, 4), np.uint8)
    # round to nearest, as resolve.wgsl's pack_rgba (x * 255 + 0.5, truncated)
    color[..., :3] = np.floor(linear_to_srgb(rgb) * 255 + 0.5).astype(np.uint8)
    color[..., 3] = np.floor(alpha + 0.5).astype(np.uint8)
    c = n // 2  # the sample nearest the output pixel's centre

    def pick(a):
        return None if a is None else np.ascontiguousarray(a[c::n, c::n])

    images = {name: pick(getattr(res, name)) for name in (
        "depth", "normal", "instance", "cluster", "triangle", "level", "hardware", "shadow",
        "base_color", "shading_normal", "roughness", "metallic", "occlusion", "emissive",
        "material")}
    velocity = pick(res.velocity) / np.float32(n)
    return replace(res, color=color, velocity=velocity, **images)
