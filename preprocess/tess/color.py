"""sRGB encoding (IEC 61966-2-1), once for the builder, the format's tables and the renderer:
texels and vertex colours are stored sRGB-encoded, filtered and lit linear."""

from __future__ import annotations

import numpy as np

__all__ = ["linear_to_srgb", "srgb_to_linear"]


def srgb_to_linear(c) -> np.ndarray:
    """sRGB-encoded values in 0..1 to linear, float64."""
    c = np.asarray(c, np.float64)
    return np.where(c <= 0.04045, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)


def linear_to_srgb(c) -> np.ndarray:
    """Linear values in 0..1 (clipped) to sRGB-encoded ones, float64."""
    c = np.clip(np.asarray(c, np.float64), 0.0, 1.0)
    return np.where(c <= 0.0031308, c * 12.92, 1.055 * c ** (1 / 2.4) - 0.055)
