"""The records of a `.tess` asset as numpy structured dtypes: BVH nodes, groups, group parts (the
always-resident sections) and the page header and cluster records inside each page. The
renderer's WGSL reads them as raw u32 words at offsets generated from these dtypes
(`renderer.layout`), so the two sides cannot drift.

Sections (always resident, small):
    bvh_nodes    NODE_DTYPE, node 0 is the root, breadth-first
    groups       GROUP_DTYPE, the BVH leaves; a group's members live in one or more parts
    group_parts  PART_DTYPE, a run of a group's member clusters inside one page

Page layout (page_size bytes, little-endian, every offset a multiple of 4):
    0     PAGE_HEADER_DTYPE (16 bytes): cluster count, page index, bytes used, flags
    16    cluster records, CLUSTER_DTYPE (92 bytes each); besides the group a cluster is a
          member of (`group`), a record names the group whose simplification produced it
          (`source_group`, NO_GROUP at level 0): its self_sphere and self_error are that
          group's sphere and error, bit for bit (`preprocess.verify.check_source_groups`), and
          streaming derives the parent relation between groups from it
    ...   per cluster, at the offsets its record gives:
          positions  u16 x 3 per vertex (6 bytes, stream padded to 4) when the cluster spans less
                     than 65,536 grid steps on every axis (mode 0), else u32 x 3 (mode 1); the
                     vertex is (pos_min + offset) * step (step from the asset meta)
          normals    u32 per vertex: octahedral, 16 bits per component (snorm)
          uvs        u32 per vertex when the asset has uvs: 16-bit unorm each, mapped to the
                     asset's uv box (meta uv_min, uv_max); or, with MODE_UV_FLOAT, two float32
          colours    u32 per vertex when the cluster has MODE_HAS_COLOR: RGBA8, RGB sRGB-encoded
                     (linear values are what the mesh holds; 8-bit sRGB keeps the darks), right
                     after the uvs (or the normals): no offset field of its own
          indices    u8 x 3 per triangle, local vertex indices, stream padded to 4
          materials  u8 per triangle when the cluster has MODE_HAS_MATERIAL: the asset's
                     material index in bits 0..6, bit 7 set where that material is double-sided,
                     right after the indices (padded to 4); else every triangle has material
                     MODE bits 16..23. MODE_DOUBLE_SIDED: some triangle is double-sided (all of
                     them without a material stream): the rasterizers keep its back faces.
                     MODE_ALPHA_MASK: some triangle's material cuts out by alpha

Materials (sections; a file without them has one default material):
    materials    MATERIAL_DTYPE per material, glTF metallic-roughness (preprocess.materials)
    textures     TEXTURE_DTYPE per texture: its mip chain in `texels`
    texels       (n,) uint32 words, every texture's mips one after the other, row 0 at the top:
                 RGBA8 texels or BC blocks (TEXTURE_FORMATS); colour textures hold sRGB values
                 (TEXTURE_SRGB), filtered in linear space when the mips were made
                 (preprocess.textures); stored deflated in the file

Quantization: one grid per mesh (per-cluster grids crack). The step is a power of two, so that
grid coordinates times the step are exact in float32 (`preprocess.pack.choose_step`). The largest
position error is sqrt(3)/2 * step, stored in the meta as `quantization_error`.

`preprocess.tess.pages` decodes pages; `preprocess.pack` writes them.
"""

from __future__ import annotations

import numpy as np

from preprocess.tess.limits import PAGE_ROOT

__all__ = [
    "CHILD_EMPTY",
    "CHILD_GROUP",
    "CLUSTER_DTYPE",
    "DEFAULT_BASE_COLOR",
    "DEFAULT_METALLIC",
    "DEFAULT_ROUGHNESS",
    "DEFLATED_SECTIONS",
    "GROUP_DTYPE",
    "MATERIAL_ALPHA_MASK",
    "MATERIAL_BYTE_DOUBLE_SIDED",
    "MATERIAL_DOUBLE_SIDED",
    "MATERIAL_DTYPE",
    "MATERIAL_TEXTURES",
    "MODE_ALPHA_MASK",
    "MODE_DOUBLE_SIDED",
    "MODE_HAS_COLOR",
    "MODE_HAS_MATERIAL",
    "MODE_HAS_UV",
    "MODE_MATERIAL_SHIFT",
    "MODE_POSITION_MASK",
    "MODE_UV_FLOAT",
    "NODE_DTYPE",
    "NO_GROUP",
    "NO_TEXTURE",
    "PAGE_HEADER_DTYPE",
    "PAGE_ROOT",
    "PART_DTYPE",
    "TEXTURE_BC1",
    "TEXTURE_BC3",
    "TEXTURE_BC4",
    "TEXTURE_BC5_GB",
    "TEXTURE_BC5_NORMAL",
    "TEXTURE_DTYPE",
    "TEXTURE_FORMATS",
    "TEXTURE_RGBA8",
    "TEXTURE_SRGB",
    "chain_words",
    "default_material_record",
    "mip_words",
]

NODE_DTYPE = np.dtype([
    ("sphere", "<f4", 4),  # center xyz, radius: contains everything below
    ("max_error", "<f4"),  # largest group error below: descend only if it projects above tau
    ("depth", "<u4"),  # 0 at the root
    ("pad", "<u4", 2),
    ("children", "<u4", 8),  # child refs: CHILD_EMPTY, node index, or CHILD_GROUP | group index
    ("box_min", "<f4", 3),  # the box of every triangle below, grown by one grid step (the
    ("box_max", "<f4", 3),  # positions are quantized): frustum and occlusion culling
    ("pad2", "<u4", 2),
])
CHILD_EMPTY = 0xFFFFFFFF
CHILD_GROUP = 0x80000000

GROUP_DTYPE = np.dtype([
    ("sphere", "<f4", 4),  # contains the LOD spheres of its members
    ("error", "<f4"),  # members' parent error; ROOT_ERROR for the root group
    ("level", "<u4"),  # LOD level of the group (members' level, 0 finest)
    ("first_part", "<u4"),  # index into group_parts
    ("part_count", "<u4"),
    ("cluster_count", "<u4"),  # members
    ("pad", "<u4", 3),
])

PART_DTYPE = np.dtype([
    ("page", "<u4"),  # page holding this run of members
    ("first_cluster", "<u4"),  # index of the first cluster record in that page
    ("cluster_count", "<u4"),
    ("group", "<u4"),
])

PAGE_HEADER_DTYPE = np.dtype([
    ("cluster_count", "<u4"),
    ("page", "<u4"),  # this page's index
    ("bytes_used", "<u4"),
    ("flags", "<u4"),  # PAGE_ROOT
])

CLUSTER_DTYPE = np.dtype([
    ("self_sphere", "<f4", 4),  # LOD sphere used with self_error
    ("bounds", "<f4", 4),  # tight sphere of the cluster's triangles (frustum, occlusion)
    ("self_error", "<f4"),  # distance bound of this surface to the original
    ("group", "<u4"),  # the group it is a member of
    ("cluster", "<u4"),  # global cluster index (ids, debug views)
    ("pos_min", "<i4", 3),  # grid origin of its positions
    ("mode", "<u4"),  # bits 0..7 position mode (0: u16, 1: u32); bit 8 (MODE_HAS_UV): has uvs
    ("vertex_count", "<u4"),
    ("triangle_count", "<u4"),
    ("level", "<u4"),
    ("position_offset", "<u4"),  # byte offsets from the page start
    ("normal_offset", "<u4"),
    ("uv_offset", "<u4"),
    ("index_offset", "<u4"),
    ("source_group", "<u4"),  # the group whose simplification produced it; NO_GROUP at level 0
])
NO_GROUP = 0xFFFFFFFF  # source_group of level-0 clusters (the original triangles)
MODE_POSITION_MASK = 0xFF  # CLUSTER_DTYPE.mode: the position encoding (0: u16, 1: u32)
MODE_HAS_UV = 0x100  # CLUSTER_DTYPE.mode: the cluster stores uvs
MODE_HAS_COLOR = 0x200  # the cluster stores vertex colours (after the uvs)
MODE_HAS_MATERIAL = 0x400  # the cluster stores a material byte per triangle (after the indices)
MODE_MATERIAL_SHIFT = 16  # else bits 16..23 of mode: the material of all its triangles
MODE_DOUBLE_SIDED = 0x800  # some triangle's material is double-sided (back faces drawn)
# some triangle's material cuts out by alpha (glTF MASK): the cluster is drawn by the hardware
# rasterizer, whose fragment shader tests the alpha (shaders/raster_hw.wgsl)
MODE_ALPHA_MASK = 0x1000
# the cluster's uvs are two float32 (8 bytes a vertex) instead of 16-bit unorm in the asset's uv
# box: where that box is so large against the textures that 1/65535 of it exceeds a quarter texel
# (tiled uvs: 0..64 over a 2048 texture would move texels by 2)
MODE_UV_FLOAT = 0x2000
MATERIAL_BYTE_DOUBLE_SIDED = 0x80  # in the material stream: this triangle's is

MATERIAL_DTYPE = np.dtype([
    ("base_color", "<f4", 4),  # linear RGBA factor
    ("emissive", "<f4", 3),  # linear RGB factor
    ("alpha_cutoff", "<f4"),  # MASK: texels with alpha below it are cut out (else unused)
    ("metallic", "<f4"),  # factors, times the metallic-roughness texture's B and G
    ("roughness", "<f4"),
    ("normal_scale", "<f4"),  # scales the normal map's x and y
    ("occlusion_strength", "<f4"),  # 0: the occlusion texture does nothing, 1: all of it
    # texture indices (the asset's; -1 as 0xffffffff: none), in MATERIAL_TEXTURES order
    ("base_color_texture", "<u4"),
    ("metallic_roughness_texture", "<u4"),
    ("normal_texture", "<u4"),
    ("emissive_texture", "<u4"),
    ("occlusion_texture", "<u4"),
    ("flags", "<u4"),  # MATERIAL_DOUBLE_SIDED, MATERIAL_ALPHA_MASK
    ("pad", "<u4", 2),
])
MATERIAL_TEXTURES = ("base_color_texture", "metallic_roughness_texture", "normal_texture",
                     "emissive_texture", "occlusion_texture")
MATERIAL_DOUBLE_SIDED = 0x1  # back faces drawn (their normal flipped)
MATERIAL_ALPHA_MASK = 0x2  # alpha cut-out at alpha_cutoff
NO_TEXTURE = 0xFFFFFFFF

TEXTURE_DTYPE = np.dtype([
    ("offset", "<u4"),  # first texel of mip 0 in `texels` (mip i follows mip i - 1)
    ("width", "<u4"),  # mip 0; mip i is max(1, width >> i) by max(1, height >> i)
    ("height", "<u4"),
    ("mips", "<u4"),  # down to 1 x 1
    ("flags", "<u4"),  # TEXTURE_SRGB
    ("format", "<u4"),  # TEXTURE_FORMATS: how its mips' words hold the texels
    ("pad", "<u4", 2),
])
TEXTURE_SRGB = 0x1  # texels are sRGB-encoded (decode before filtering)
# the sections a file stores deflated (`write_tess`'s `deflate`), where it has them: read whole,
# and block-compressed texels lose a further ~30% (RGBA8 ones ~70%)
DEFLATED_SECTIONS = ("texels",)

# A texture's `format`: (name, words a 4 x 4 block, what a texel reads as). RGBA8 is a word a
# texel, row by row; the BC formats (Direct3D's block compression, read by every desktop GPU)
# are 4 x 4 blocks of 8 or 16 bytes, row by row, a mip's edge blocks padded (their texels past
# the mip's edge never read). BC5's two channels hold a normal map's x and y (z = the rest of
# a unit vector) or a metallic-roughness texture's G and B.
TEXTURE_RGBA8, TEXTURE_BC1, TEXTURE_BC3, TEXTURE_BC4, TEXTURE_BC5_NORMAL, TEXTURE_BC5_GB = range(6)
TEXTURE_FORMATS = {
    TEXTURE_RGBA8: ("rgba8", 0, "RGBA"),
    TEXTURE_BC1: ("bc1", 2, "RGB, alpha 1 (or 0 in a block's transparent texels)"),
    TEXTURE_BC3: ("bc3", 4, "RGBA"),
    TEXTURE_BC4: ("bc4", 2, "R (as R, G and B), alpha 1"),
    TEXTURE_BC5_NORMAL: ("bc5-normal", 4, "x, y, z = sqrt(1 - x² - y²) (0..1 codes), alpha 1"),
    TEXTURE_BC5_GB: ("bc5-gb", 4, "0, G, B, alpha 1"),
}

# what an asset without materials is drawn with: a light grey dielectric, rough
DEFAULT_BASE_COLOR = (0.6, 0.6, 0.6, 1.0)
DEFAULT_METALLIC = 0.0
DEFAULT_ROUGHNESS = 0.6


def default_material_record() -> np.ndarray:
    """(1,) MATERIAL_DTYPE: the default material (`DEFAULT_BASE_COLOR` ...), no texture."""
    rec = np.zeros(1, MATERIAL_DTYPE)
    rec["base_color"] = DEFAULT_BASE_COLOR
    rec["metallic"], rec["roughness"] = DEFAULT_METALLIC, DEFAULT_ROUGHNESS
    rec["normal_scale"] = rec["occlusion_strength"] = 1.0
    for f in MATERIAL_TEXTURES:
        rec[f] = NO_TEXTURE
    return rec


def mip_words(width: int, height: int, fmt: int = TEXTURE_RGBA8) -> int:
    """Words of one width x height mip in `texels` (a texel a word, or its blocks' words)."""
    per_block = TEXTURE_FORMATS[int(fmt)][1]
    if not per_block:
        return int(width) * int(height)
    return per_block * (-(-int(width) // 4)) * (-(-int(height) // 4))


def chain_words(width: int, height: int, mips: int, fmt: int = TEXTURE_RGBA8) -> int:
    """Words of a texture's first `mips` mips in `texels` (mip i is max(1, width >> i) x
    max(1, height >> i))."""
    return sum(mip_words(max(1, int(width) >> k), max(1, int(height) >> k), fmt)
               for k in range(int(mips)))



assert NODE_DTYPE.itemsize == 96 and GROUP_DTYPE.itemsize == 48
assert CLUSTER_DTYPE.itemsize == 92 and PAGE_HEADER_DTYPE.itemsize == 16
assert MATERIAL_DTYPE.itemsize == 80 and TEXTURE_DTYPE.itemsize == 32
