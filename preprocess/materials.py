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
rest is kept: a texture that cannot be read (missing, not an image, cut short, larger than
`MAX_TEXTURE_SIDE`, an index past the file's textures: `warn_texture`, the material drawn without
it), a texture that reads a second uv set, texture transforms, alpha blending (drawn opaque,
`warn_blending`), a colour that is not numbers (its default instead), unknown glTF material
extensions. Textures are decoded here for every format (`load_image`, `image_rgba`), with Pillow's
decompression-bomb limit raised to the largest texture Tessera reads (`texture_pixel_limit`).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from preprocess.mesh import MeshError, mesh_warning
from preprocess.tess.color import srgb_to_linear
from preprocess.tess.limits import MAX_TEXTURE_SIDE
from preprocess.tess.records import (
    DEFAULT_BASE_COLOR,
    DEFAULT_METALLIC,
    DEFAULT_ROUGHNESS,
    MATERIAL_TEXTURES,
)

__all__ = [
    "Material",
    "Texture",
    "TextureError",
    "TextureNotFoundError",
    "alpha_modes",
    "default_material",
    "image_problem",
    "image_rgba",
    "load_image",
    "read_image_file",
    "side_problem",
    "texture_pixel_limit",
    "vertex_rgba",
    "warn_blending",
    "warn_texture",
    "warn_textures_without_uvs",
]

# glTF alphaMode -> the flag kept (BLEND is drawn opaque, with a warning)
alpha_modes = ("OPAQUE", "MASK", "BLEND")


@dataclass
class Texture:
    """An RGBA8 image: (h, w, 4) uint8, row 0 at the top; `srgb` for colour data. Its image is
    not changed once made: `digest` and `opaque` are measured once."""

    image: np.ndarray
    srgb: bool
    name: str = "texture"

    @functools.cached_property
    def digest(self) -> bytes:
        """A hash of the pixels (with their shape): two textures of equal pixels are one in a
        scene's texture set (`preprocess.textures.texture_set`)."""
        img = np.ascontiguousarray(self.image)
        h = hashlib.blake2b(str(img.shape).encode(), digest_size=16)
        h.update(img)
        return h.digest()

    @functools.cached_property
    def opaque(self) -> bool:
        """Every texel's alpha 255."""
        return int(self.image[..., 3].min()) == 255


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


def vertex_rgba(c: np.ndarray, *, srgb: bool = True, label: str | None = None) -> np.ndarray:
    """(n, 4) float64 linear RGBA vertex colours from (n, 3) or (n, 4) values in 0..1: alpha 1
    where absent, NaN read as 1, clipped to 0..1, and the sRGB-encoded ones (PLY's, OBJ's and
    OFF's, by convention) turned linear (`srgb`; glTF's COLOR_0 is linear already). ``label``
    (a file, a mesh in it): where some values are NaN, a `MeshWarning` names it and counts them."""
    c = np.asarray(c, np.float64)
    if c.shape[1] == 3:
        c = np.concatenate([c, np.ones((len(c), 1))], axis=1)
    nan = np.isnan(c).any(axis=1)
    if label is not None and nan.any():
        mesh_warning(f"{label}: {int(nan.sum()):,} of {len(c):,} vertex colours are not numbers "
                     f"(NaN); those channels drawn as 1 (white, opaque)")
    c = np.clip(np.nan_to_num(c, nan=1.0), 0.0, 1.0)
    if srgb:
        c[:, :3] = srgb_to_linear(c[:, :3])
    return c


def warn_blending(label: str, material: str, why: str = "") -> None:
    """The `MeshWarning` of a material that blends (glTF alphaMode BLEND, MTL d < 1 or Tr > 0):
    Tessera draws every material opaque. ``why``: what in the file asks for it."""
    said = f" ({why})" if why else ""
    mesh_warning(f"{label}: material {material!r}: alpha blending is not supported{said}; drawn "
                 f"opaque")


def warn_texture(label: str, source: str, problem: str | None, uses: list[str]) -> None:
    """The one `MeshWarning` of a texture that cannot be read, for every format: ``source``
    names it (a file name, an embedded image), ``problem`` says why (None: the file is missing),
    ``uses`` where the materials use it ("material 'paint' base colour", "scene.mtl line 4");
    those materials are drawn without it."""
    why = "not found" if problem is None else f"cannot be read: {problem}"
    mesh_warning(f"{label}: texture {source} {why} ({'; '.join(uses)}); drawn without it")


class TextureError(ValueError):
    """An image that cannot be a texture; the message says why, in the user's terms, one line
    without the file's name (the caller names it and where it is used)."""


class TextureNotFoundError(TextureError):
    """A texture file that is not there."""


def warn_textures_without_uvs(label: str) -> None:
    """The `MeshWarning` of textures on a mesh without texture coordinates (not drawn)."""
    mesh_warning(f"{label}: textures without texture coordinates; drawn without them")


@contextlib.contextmanager
def texture_pixel_limit() -> Iterator[None]:
    """Pillow's decompression-bomb limit at the largest texture Tessera reads
    (`MAX_TEXTURE_SIDE` squared) while our code and trimesh's open images: its default (89M
    texels) refused a 16,384^2 texture that `--max-texture-size` accepts. Pillow refuses to open
    twice that many texels; `image_rgba` refuses a side past the limit before decoding."""
    from PIL import Image

    was = Image.MAX_IMAGE_PIXELS
    Image.MAX_IMAGE_PIXELS = MAX_TEXTURE_SIDE * MAX_TEXTURE_SIDE
    try:
        yield
    finally:
        Image.MAX_IMAGE_PIXELS = was


def image_problem(exc: BaseException) -> str:
    """Why Pillow could not open or decode an image, in the user's terms (no exception name)."""
    from PIL import Image, UnidentifiedImageError

    if isinstance(exc, UnidentifiedImageError):
        return "not an image (no image format Pillow reads)"
    if isinstance(exc, Image.DecompressionBombError):
        return f"more than {MAX_TEXTURE_SIDE:,} texels a side"
    text = (str(exc).strip().splitlines() or [""])[0]
    if isinstance(exc, (OSError, SyntaxError, EOFError, ValueError)) or not text:
        return f"cut short or corrupt ({text or type(exc).__name__})"
    return text


def side_problem(width: int, height: int) -> str | None:
    """Why an image of this size cannot be a texture (a side past `MAX_TEXTURE_SIDE`), or None."""
    if max(width, height) > MAX_TEXTURE_SIDE:
        return f"{width:,} x {height:,} texels, more than {MAX_TEXTURE_SIDE:,} a side"
    if min(width, height) < 1:
        return f"{width} x {height} texels"
    return None


# bytes of RGBA8 copied out of Pillow at a time: a 16,384^2 image went through one 1 GiB
# bytes object and a numpy copy of it (4 GiB at the peak); in bands it is the decoded image and
# the array (2 GiB)
_BAND_BYTES = 1 << 24


def _pil_rgba(img) -> np.ndarray:
    """(h, w, 4) uint8 of a decoded PIL image, band by band."""
    if img.mode in ("I;16", "I;16B", "I", "F"):  # 16-bit / float grey: scale to 8 bits
        a = np.asarray(img, np.float64)
        hi = 65535.0 if img.mode.startswith("I;16") or a.max() > 255 else 255.0
        a = np.clip(a / hi * 255 + 0.5, 0, 255).astype(np.uint8)
        return np.dstack([a, a, a, np.full_like(a, 255)])
    w, h = img.size
    out = np.empty((h, w, 4), np.uint8)
    rows = max(1, _BAND_BYTES // (4 * w))
    for y in range(0, h, rows):
        band = img if rows >= h else img.crop((0, y, w, min(h, y + rows)))
        if band.mode not in ("RGB", "RGBA"):  # texel by texel: a band converts as the whole
            band = band.convert("RGBA")
        rgb = band.mode == "RGB"  # Pillow keeps RGB as 4 bytes a texel
        out[y : y + band.height] = np.frombuffer(band.tobytes("raw", "RGBX" if rgb else "RGBA"),
                                                 np.uint8).reshape(band.height, w, 4)
        if rgb:
            out[y : y + band.height, :, 3] = 255
    return out


def image_rgba(img) -> np.ndarray:
    """A PIL image (any mode, opened and not yet decoded) or an array as (h, w, 4) uint8.

    Raises:
        TextureError: a side past `MAX_TEXTURE_SIDE` (said before decoding), an image that
            does not decode (cut short, corrupt), an array not (h, w), (h, w, 3) or (h, w, 4).
    """
    if hasattr(img, "convert"):
        problem = side_problem(*img.size)
        if problem:
            raise TextureError(problem)
        try:
            img.load()
            return _pil_rgba(img)
        except Exception as exc:
            raise TextureError(image_problem(exc)) from None
    a = np.asarray(img)
    if a.ndim == 2:
        a = np.dstack([a, a, a])
    if a.ndim == 3 and a.shape[2] == 3:
        a = np.dstack([a, np.full(a.shape[:2], 255, a.dtype)])
    if a.ndim != 3 or a.shape[2] != 4:
        raise TextureError(f"an array of shape {a.shape}, not (h, w, 3 or 4)")
    problem = side_problem(a.shape[1], a.shape[0])
    if problem:
        raise TextureError(problem)
    if a.dtype != np.uint8:
        a = np.clip(a.astype(np.float64) * (255 if a.dtype.kind == "f" else 1) + 0.5,
                    0, 255).astype(np.uint8)
    return np.ascontiguousarray(a)


def load_image(path: Path) -> np.ndarray:
    """(h, w, 4) uint8 of an image file (PNG, JPEG, ... through Pillow); `TextureError`
    ("not found", or why it cannot be decoded)."""
    from PIL import Image

    try:
        with texture_pixel_limit(), Image.open(path) as img:
            return image_rgba(img)
    except TextureError:
        raise
    except FileNotFoundError:
        raise TextureNotFoundError("not found") from None
    except IsADirectoryError:
        raise TextureError("a folder, not a file") from None
    except PermissionError:
        raise TextureError("no permission to read it") from None
    except Exception as exc:
        raise TextureError(image_problem(exc)) from None


def read_image_file(path: Path, label: str) -> np.ndarray:
    """(h, w, 4) uint8 of an image file the user named (`--texture`): `MeshError` with one line
    where it cannot be read."""
    try:
        return load_image(path)
    except TextureNotFoundError:
        raise MeshError(f"{label}: texture file not found ({path})") from None
    except TextureError as e:
        raise MeshError(f"{label}: cannot read the texture {path.name}: {e}") from None
