"""Textures and materials into `.tess` sections: mip chains, sRGB-correct, and the records.

Every texture becomes its full mip chain down to 1 x 1 (mip i is max(1, w >> i) x max(1, h >> i)),
RGBA8, one texel a u32 word, all chains one after the other in the `texels` section. A mip texel
is the mean of the 2 x 2 (or 1 x 2, 2 x 1) texels above it; colour textures are averaged in linear
light and encoded back to sRGB (averaging sRGB values darkens: a black and white checker would
turn 0.5 sRGB, 21% grey, instead of 50%). Textures larger than `BuildConfig.max_texture_size`
start at the first mip that fits (half the memory per halving... a quarter, rather).

Then each mip is block-compressed (`TEXTURE_COMPRESSIONS`, `BuildConfig.texture_compression`,
default "bc"), by quicktex (rgbcx's BC1, BC3, BC4, BC5 encoders; the shaders decode the blocks
from the storage buffer, renderer's material.wgsl), in the format its use asks for
(`slot_format`):
colour BC1 (4 bits a texel) or BC3 where the base colour has alpha (8), normal maps BC5 (x and
y, 8), metallic-roughness BC5 (G and B, 8), occlusion BC4 (R, 4). A texture two slots use in
different formats (glTF's packed occlusion-roughness-metallic) is stored once a format. The
texels section is stored deflated in the file (a further ~30% of BC texels).

Memory on the GPU: RGBA8 is 4 bytes a texel, 4/3 of mip 0 for the chain: a 2048 x 2048 texture
is 21.3 MiB; BC1 and BC4 an eighth of that (2.7 MiB), BC3 and BC5 a quarter (5.3 MiB).
"""

from __future__ import annotations

import functools
import hashlib
import os
import warnings
from dataclasses import dataclass

import numpy as np

from preprocess.config import TEXTURE_COMPRESSIONS
from preprocess.materials import Material, Texture, default_material
from preprocess.mesh import MeshWarning
from preprocess.tess.color import linear_to_srgb, srgb_to_linear
from preprocess.tess.records import (
    MATERIAL_ALPHA_MASK,
    MATERIAL_DOUBLE_SIDED,
    MATERIAL_DTYPE,
    MATERIAL_TEXTURES,
    NO_TEXTURE,
    TEXTURE_BC1,
    TEXTURE_BC3,
    TEXTURE_BC4,
    TEXTURE_BC5_GB,
    TEXTURE_BC5_NORMAL,
    TEXTURE_DTYPE,
    TEXTURE_FORMATS,
    TEXTURE_RGBA8,
    TEXTURE_SRGB,
    chain_words,
)

__all__ = ["TextureSet", "compress_mip", "encode_materials",
           "mip_chain", "slot_format", "texture_bytes", "texture_set"]

_SRGB_TO_LINEAR = srgb_to_linear(np.arange(256) / 255.0).astype(np.float32)


def _half(a: np.ndarray) -> np.ndarray:
    """(h, w, 4) float32 -> (max(1, h // 2), max(1, w // 2), 4): 2 x 2 means (an odd last row or
    column folds into its neighbour's texel)."""
    h, w = a.shape[:2]
    if h > 1:
        top = a[0 : h - h % 2 : 2] + a[1 : h - h % 2 + 1 : 2]
        if h % 2:
            top[-1] += a[-1]
            top[-1] *= 2 / 3
        top *= 0.5  # in place: the same products, one array fewer
        a = top
    if w > 1:
        left = a[:, 0 : w - w % 2 : 2] + a[:, 1 : w - w % 2 + 1 : 2]
        if w % 2:
            left[:, -1] += a[:, -1]
            left[:, -1] *= 2 / 3
        left *= 0.5
        a = left
    return a


# linear -> sRGB byte through a table of 65,536 steps (a step is 1/3 of an sRGB byte at black)
_LUT_STEPS = 65535
_LINEAR_TO_SRGB = np.rint(linear_to_srgb(np.arange(_LUT_STEPS + 1) / _LUT_STEPS) * 255
                          ).astype(np.uint32)


def _encode(a: np.ndarray, srgb: bool) -> np.ndarray:
    """(h, w, 4) float32 linear 0..1 -> (h * w,) uint32 RGBA8 (RGB sRGB-encoded when srgb)."""
    c = np.clip(a, 0, 1)
    if srgb:
        q = _LINEAR_TO_SRGB[(c[..., :3] * _LUT_STEPS + 0.5).astype(np.int32)]
    else:
        q = (c[..., :3] * 255 + 0.5).astype(np.uint32)
    alpha = (c[..., 3] * 255 + 0.5).astype(np.uint32)
    return (q[..., 0] | (q[..., 1] << 8) | (q[..., 2] << 16) | (alpha << 24)).reshape(-1)


def mip_chain(texture: Texture, max_size: int = 0) -> list[np.ndarray]:
    """The mips of a texture, largest first, each (h, w) uint32 RGBA8, down to 1 x 1; the first
    is at most `max_size` a side (0: no limit)."""
    img = texture.image
    h, w = img.shape[:2]
    skip = 0  # the mips above the first kept
    while max_size and max(h, w) > max_size:
        h, w, skip = max(1, h // 2), max(1, w // 2), skip + 1
    mips = []
    if skip == 0:  # mip 0 exact, as the file had it: RGBA bytes are the little-endian word
        mips.append(np.ascontiguousarray(img).view("<u4").reshape(h, w))
        if h == 1 and w == 1:
            return mips
        skip = 1
    a = _reduced(img, texture.srgb, skip)
    while True:
        mips.append(_encode(a, texture.srgb).reshape(a.shape[:2]))
        if a.shape[0] == 1 and a.shape[1] == 1:
            return mips
        a = _half(a)


# texels of an image made linear float32 at a time (64 MiB): a 16,384^2 texture made float whole
# took 4 GiB and more for its temporaries
_BAND_TEXELS = 1 << 22


_BYTE_TO_UNIT = np.arange(256, dtype=np.float32) / 255  # a byte as float32 0..1


def _linear(img: np.ndarray, srgb: bool) -> np.ndarray:
    """(h, w, 4) uint8 -> float32 0..1 in linear light (RGB decoded from sRGB where `srgb`);
    table look-ups, twice as fast as the arithmetic, with the same values."""
    if not srgb:
        return _BYTE_TO_UNIT[img]
    a = _SRGB_TO_LINEAR[img]
    a[..., 3] = _BYTE_TO_UNIT[img[..., 3]]
    return a


def _reduced(img: np.ndarray, srgb: bool, k: int) -> np.ndarray:
    """Mip k >= 1 of an image, linear float32: `_linear` then `_half` k times, by bands of rows
    (a multiple of 2^k rows each, the last one holding the rest: every band halves as the whole
    image would, bit for bit, odd last rows included)."""
    rows = max(1, (_BAND_TEXELS // img.shape[1]) >> k) << k
    if img.shape[0] < 2 * rows:
        bands = [img]
    else:
        cuts = [y for y in range(0, img.shape[0], rows) if img.shape[0] - y >= rows]
        cuts.append(img.shape[0])
        bands = [img[cuts[i] : cuts[i + 1]] for i in range(len(cuts) - 1)]

    def reduce(band: np.ndarray) -> np.ndarray:
        a = _linear(band, srgb)
        for _ in range(k):
            a = _half(a)
        return a

    if len(bands) == 1:
        return reduce(img)
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:  # numpy frees the GIL
        return np.concatenate(list(pool.map(reduce, bands)))


def texture_bytes(width: int, height: int, fmt: int = TEXTURE_RGBA8) -> int:
    """Bytes of a width x height texture's whole mip chain on the GPU (and in the file, before
    the texels are deflated)."""
    mips = int(np.floor(np.log2(max(int(width), int(height), 1)))) + 1
    return 4 * chain_words(width, height, mips, fmt)


def slot_format(slot: str, texture: Texture, compression: str) -> int:
    """The format a texture is stored in for a material's texture field `slot`."""
    if compression == "none":
        return TEXTURE_RGBA8
    if slot == "base_color_texture":
        return TEXTURE_BC1 if texture.opaque else TEXTURE_BC3
    return {"emissive_texture": TEXTURE_BC1, "normal_texture": TEXTURE_BC5_NORMAL,
            "metallic_roughness_texture": TEXTURE_BC5_GB,
            "occlusion_texture": TEXTURE_BC4}[slot]


# quicktex's encoder level for BC1 and BC3's colour (0..18; rgbcx's presets): 5 keeps
# DamagedHelmet's base colour at 37.5 dB for 0.55 s a 2048² mip on one core (0: 37.0 dB,
# 10: 37.9 dB for 3.2 s); etcpak's fast BC1 was 34.2 dB
BC_LEVEL = 5


def compress_mip(mip: np.ndarray, fmt: int) -> np.ndarray:
    """One (h, w) RGBA8 mip (`mip_chain`'s words) as its format's words: itself for RGBA8, else
    its 4 x 4 blocks row by row (quicktex: rgbcx's encoders), a mip not a multiple of 4 padded
    by its edge texels."""
    if fmt == TEXTURE_RGBA8:
        return mip.reshape(-1)
    import quicktex

    h, w = mip.shape
    rgba = np.pad(mip.view(np.uint8).reshape(h, w, 4), ((0, -h % 4), (0, -w % 4), (0, 0)),
                  mode="edge")
    raw = quicktex.RawTexture.frombytes(np.ascontiguousarray(rgba).tobytes(), rgba.shape[1],
                                        rgba.shape[0])
    return np.frombuffer(_encoder(fmt).encode(raw).tobytes(), "<u4")


def _compressed(mips: list[np.ndarray], fmt: int, texture: Texture) -> tuple[int, list]:
    """(format, words of each mip) of a texture's chain in `fmt`; where the encoder fails, RGBA8
    with a warning naming the texture (the picture keeps it, uncompressed)."""
    try:
        return fmt, [compress_mip(m, fmt) for m in mips]
    except Exception as e:  # the encoder's own errors (memory, a library fault): one line
        warnings.warn(f"texture {texture.name!r}: {TEXTURE_FORMATS[fmt][0]} encoding failed "
                      f"({' '.join(str(e).split()) or type(e).__name__}): kept uncompressed",
                      MeshWarning, stacklevel=2)
        return TEXTURE_RGBA8, [m.reshape(-1) for m in mips]


@functools.cache
def _encoder(fmt: int):
    """quicktex's encoder for a format, made once: making one builds its tables (~35 ms, more
    than encoding a 1024² mip)."""
    from quicktex.s3tc.bc1 import BC1Encoder
    from quicktex.s3tc.bc3 import BC3Encoder
    from quicktex.s3tc.bc4 import BC4Encoder
    from quicktex.s3tc.bc5 import BC5Encoder

    return {TEXTURE_BC1: lambda: BC1Encoder(BC_LEVEL), TEXTURE_BC3: lambda: BC3Encoder(BC_LEVEL),
            TEXTURE_BC4: lambda: BC4Encoder(0), TEXTURE_BC5_NORMAL: lambda: BC5Encoder(0, 1),
            TEXTURE_BC5_GB: lambda: BC5Encoder(1, 2)}[fmt]()


def _image_key(texture: Texture, fmt: int) -> tuple:
    """What makes two textures one in a scene's set: their pixels, sRGB flag and format."""
    return texture.digest, texture.srgb, fmt


def _uses(materials: list[Material], textures: list[Texture], compression: str
          ) -> list[tuple[int, int]]:
    """The (texture, format) pairs the materials' slots use, in the order first used."""
    keys: list[tuple[int, int]] = []
    for m in materials:
        for f in MATERIAL_TEXTURES:
            t = getattr(m, f)
            if t >= 0 and (key := (t, slot_format(f, textures[t], compression))) not in keys:
                keys.append(key)
    return keys


def _material_records(materials: list[Material], index) -> np.ndarray:
    """MATERIAL_DTYPE records, each texture field `index(texture, slot)` (NO_TEXTURE: none)."""
    recs = np.zeros(len(materials), MATERIAL_DTYPE)
    for i, m in enumerate(materials):
        r = recs[i]
        r["base_color"] = m.base_color
        r["emissive"] = m.emissive
        r["alpha_cutoff"] = m.alpha_cutoff
        r["metallic"] = m.metallic
        r["roughness"] = m.roughness
        r["normal_scale"] = m.normal_scale
        r["occlusion_strength"] = m.occlusion_strength
        for f in MATERIAL_TEXTURES:
            t = getattr(m, f)
            r[f] = NO_TEXTURE if t < 0 else index(t, f)
        r["flags"] = ((MATERIAL_DOUBLE_SIDED if m.double_sided else 0)
                      | (MATERIAL_ALPHA_MASK if m.alpha_mode == "MASK" else 0))
    return recs


def _encode_textures(pairs: list[tuple[Texture, int]], max_texture_size: int
                     ) -> tuple[np.ndarray, np.ndarray]:
    """The `textures` records and `texels` of (texture, format) pairs, in their order."""
    tex = np.zeros(len(pairs), TEXTURE_DTYPE)
    chains = []
    offset = 0
    images = list({id(t): t for t, _ in pairs}.values())
    # numpy releases the GIL in the averaging: the textures' chains are built side by side,
    # then each (texture, format)'s mips compressed side by side
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=max(1, min(len(pairs), os.cpu_count() or 1))) as pool:
        built = dict(zip((id(t) for t in images),
                         pool.map(lambda t: mip_chain(t, max_texture_size), images), strict=True))
        encoded = list(pool.map(lambda p: _compressed(built[id(p[0])], p[1], p[0]), pairs))
    for i, (t, _) in enumerate(pairs):
        mips = built[id(t)]
        h, w = mips[0].shape
        fmt, words = encoded[i]
        tex[i] = (offset, w, h, len(mips), TEXTURE_SRGB if t.srgb else 0, fmt, (0, 0))
        chains += words
        offset += sum(len(x) for x in words)
    texels = np.concatenate(chains, dtype=np.uint32) if chains else np.zeros(1, np.uint32)
    return tex, texels


@dataclass
class TextureSet:
    """The textures of a scene's meshes, each once (`texture_set`): written to a file of their
    own beside the meshes' `.tess` files, whose materials index it (`encode_materials`)."""

    textures: np.ndarray  # TEXTURE_DTYPE
    texels: np.ndarray  # (n,) uint32
    digest: str  # of both: the meshes' files name it, the reader matches it
    index: dict[tuple, int]  # `_image_key` -> its record
    compression: str
    file: str = ""  # its file's name, beside the meshes' (`preprocess.scene_import`)

    @property
    def sections(self) -> dict[str, np.ndarray]:
        return {"textures": self.textures, "texels": self.texels}


def texture_set(meshes, *, max_texture_size: int = 0, compression: str = "bc"
                ) -> TextureSet | None:
    """The textures the meshes' materials use, once each however many meshes use them (the same
    pixels, sRGB flag and format), or None where they use none."""
    pairs, index = [], {}
    for mesh in meshes:
        materials = mesh.materials or [default_material()]
        for t, fmt in _uses(materials, mesh.textures, compression):
            key = _image_key(mesh.textures[t], fmt)
            if key not in index:
                index[key] = len(pairs)
                pairs.append((mesh.textures[t], fmt))
    if not pairs:
        return None
    tex, texels = _encode_textures(pairs, max_texture_size)
    h = hashlib.blake2b(tex.tobytes(), digest_size=16)
    h.update(texels.tobytes())
    return TextureSet(tex, texels, h.hexdigest(), index, compression)


def encode_materials(materials: list[Material], textures: list[Texture], *,
                     max_texture_size: int = 0, compression: str = "bc",
                     shared: TextureSet | None = None) -> dict[str, np.ndarray]:
    """The `materials`, `textures` and `texels` sections of an asset (`default_material()` alone
    when `materials` is empty). Textures no material uses are left out; one a format its uses
    ask for (`slot_format`; `compression` one of TEXTURE_COMPRESSIONS). `shared`: the scene's
    set (`texture_set`, which holds every texture of these materials): the materials index it,
    and the asset has no textures of its own (only `materials` returned)."""
    if compression not in TEXTURE_COMPRESSIONS:
        raise ValueError(f"texture compression must be one of {', '.join(TEXTURE_COMPRESSIONS)}, "
                         f"not {compression!r}")
    materials = materials or [default_material()]
    if shared is not None:
        return {"materials": _material_records(materials, lambda t, f: shared.index[_image_key(
            textures[t], slot_format(f, textures[t], shared.compression))])}
    keys = _uses(materials, textures, compression)
    remap = {key: i for i, key in enumerate(keys)}
    recs = _material_records(materials, lambda t, f: remap[
        (t, slot_format(f, textures[t], compression))])
    tex, texels = _encode_textures([(textures[t], fmt) for t, fmt in keys], max_texture_size)
    return {"materials": recs, "textures": tex, "texels": texels}
