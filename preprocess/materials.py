"""Materials as the builder reads them: glTF 2.0 metallic-roughness, OBJ + MTL, vertex colours.

A `Material` is glTF's metallic-roughness model (every other source maps onto it): a base colour
factor times an optional base-colour texture times the vertex colour, metallic and roughness
factors times an optional metallic-roughness texture (glTF packing: roughness in G, metallic in
B), an optional tangent-space normal map, an emissive factor times an optional texture, an
optional occlusion texture (R), double-sidedness and alpha cut-outs. Textures are RGBA8 images
(numpy, row 0 at the top, as image files store them); colour textures (base colour, emissive)
hold sRGB values, the others linear ones. `preprocess.textures` encodes them with mip chains
into the `.tess` (`preprocess.tess.records.MATERIAL_DTYPE`, `TEXTURE_DTYPE`).

What a file asks for and Tessera does not draw is named in one `MeshWarning` line each, and the
rest is kept: a texture missing on disk, a texture that reads a second uv set, texture transforms,
alpha blending (drawn opaque), unknown glTF material extensions.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from preprocess.mesh import MeshError
from preprocess.tess.color import srgb_to_linear
from preprocess.tess.records import (
    DEFAULT_BASE_COLOR,
    DEFAULT_METALLIC,
    DEFAULT_ROUGHNESS,
    MATERIAL_TEXTURES,
)

__all__ = [
    "Material",
    "Texture",
    "alpha_modes",
    "default_material",
    "vertex_rgba",
]

# glTF alphaMode -> the flag kept (BLEND is drawn opaque, with a warning)
alpha_modes = ("OPAQUE", "MASK", "BLEND")


@dataclass
class Texture:
    """An RGBA8 image: (h, w, 4) uint8, row 0 at the top; `srgb` for colour data."""

    image: np.ndarray
    srgb: bool
    name: str = "texture"


@dataclass
class Material:
    """glTF metallic-roughness; texture fields index `Mesh.textures` (-1: none)."""

    name: str = "default"
    base_color: tuple = (1.0, 1.0, 1.0, 1.0)  # linear RGBA factor
    base_color_texture: int = -1  # sRGB RGBA, times base_color
    metallic: float = 1.0  # glTF's defaults: a material without the texture and factors
    roughness: float = 1.0  # is a rough metal (OBJ and the default material set 0 and 1)
    metallic_roughness_texture: int = -1  # linear: G roughness, B metallic, times the factors
    normal_texture: int = -1  # tangent space, linear, (0.5, 0.5, 1) = flat
    normal_scale: float = 1.0
    emissive: tuple = (0.0, 0.0, 0.0)  # linear RGB factor
    emissive_texture: int = -1  # sRGB, times emissive
    occlusion_texture: int = -1  # linear, R channel
    occlusion_strength: float = 1.0
    double_sided: bool = False  # back faces drawn, their normals flipped
    alpha_mode: str = "OPAQUE"  # OPAQUE, MASK (cut-out below alpha_cutoff) or BLEND (as OPAQUE)
    alpha_cutoff: float = 0.5

    def texture_indices(self) -> tuple[int, ...]:
        """Its texture fields, in `MATERIAL_TEXTURES` order (-1: none)."""
        return tuple(getattr(self, f) for f in MATERIAL_TEXTURES)

    def drop_textures(self) -> None:
        """Every texture field set to none."""
        for f in MATERIAL_TEXTURES:
            setattr(self, f, -1)


def default_material() -> Material:
    """What a mesh without a material is drawn with: a light grey dielectric, rough."""
    return Material(name="default", base_color=DEFAULT_BASE_COLOR, metallic=DEFAULT_METALLIC,
                    roughness=DEFAULT_ROUGHNESS)


def vertex_rgba(c: np.ndarray, *, srgb: bool = True) -> np.ndarray:
    """(n, 4) float64 linear RGBA vertex colours from (n, 3) or (n, 4) values in 0..1: alpha 1
    where absent, NaN read as 1, clipped to 0..1, and the sRGB-encoded ones (PLY's, OBJ's and
    OFF's, by convention) turned linear (`srgb`; glTF's COLOR_0 is linear already)."""
    c = np.asarray(c, np.float64)
    if c.shape[1] == 3:
        c = np.concatenate([c, np.ones((len(c), 1))], axis=1)
    c = np.clip(np.nan_to_num(c, nan=1.0), 0.0, 1.0)
    if srgb:
        c[:, :3] = srgb_to_linear(c[:, :3])
    return c


def image_rgba(img, label: str, what: str) -> np.ndarray:
    """A PIL image (any mode) or an array as (h, w, 4) uint8."""
    try:
        if hasattr(img, "convert"):
            if img.mode in ("I;16", "I;16B", "I", "F"):  # 16-bit / float grey: scale to 8 bits
                a = np.asarray(img, np.float64)
                hi = 65535.0 if img.mode.startswith("I;16") or a.max() > 255 else 255.0
                a = np.clip(a / hi * 255 + 0.5, 0, 255).astype(np.uint8)
                return np.dstack([a, a, a, np.full_like(a, 255)])
            a = np.asarray(img.convert("RGBA"), np.uint8)
        else:
            a = np.asarray(img)
            if a.ndim == 2:
                a = np.dstack([a, a, a])
            if a.shape[2] == 3:
                a = np.dstack([a, np.full(a.shape[:2], 255, a.dtype)])
            if a.dtype != np.uint8:
                a = np.clip(a.astype(np.float64) * (255 if a.dtype.kind == "f" else 1) + 0.5,
                            0, 255).astype(np.uint8)
    except Exception as exc:  # a truncated or undecodable image
        raise MeshError(f"{label}: cannot decode the {what} texture: {exc}") from None
    if a.ndim != 3 or a.shape[2] != 4 or min(a.shape[:2]) < 1:
        raise MeshError(f"{label}: the {what} texture has shape {a.shape}, not (h, w, 3 or 4)")
    return np.ascontiguousarray(a)


def read_image_file(path: Path, label: str) -> np.ndarray:
    """(h, w, 4) uint8 of an image file (PNG, JPEG, ... through Pillow)."""
    from PIL import Image

    try:
        with Image.open(path) as img:
            img.load()
            return image_rgba(img, label, path.name)
    except MeshError:
        raise
    except FileNotFoundError:
        raise MeshError(f"{label}: texture file not found ({path})") from None
    except Exception as exc:
        raise MeshError(f"{label}: cannot read the texture {path.name}: {exc}") from None
