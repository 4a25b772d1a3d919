"""GPU data layout: the one place where host and shader structures are defined.

- The `.tess` records (`preprocess.tess.records`) are read by the shaders as raw u32 words; this
  module generates a WGSL constant for every field's word offset and every record's size, so the
  shaders never spell an offset by hand.
- The renderer's own structs (frame uniforms, instances, asset table) are numpy dtypes here, and
  their WGSL `struct` declarations are generated from them, with WGSL's alignment rules checked.
- The `state` buffer (queue heads, counts, statistics) is a list of named u32 words.
- Every limit shared by host and shaders (`renderer.limits`) becomes a WGSL constant.

`generated_includes()` returns these as virtual include files for `shaders.load`.
"""

from __future__ import annotations

import numpy as np

from preprocess.tess.records import (
    CHILD_EMPTY,
    CHILD_GROUP,
    CLUSTER_DTYPE,
    GROUP_DTYPE,
    MATERIAL_ALPHA_MASK,
    MATERIAL_DOUBLE_SIDED,
    MATERIAL_DTYPE,
    MATERIAL_BYTE_DOUBLE_SIDED,
    MODE_ALPHA_MASK,
    MODE_DOUBLE_SIDED,
    MODE_UV_FLOAT,
    MODE_HAS_COLOR,
    MODE_HAS_MATERIAL,
    MODE_HAS_UV,
    MODE_MATERIAL_SHIFT,
    MODE_POSITION_MASK,
    NO_TEXTURE,
    TEXTURE_FORMATS,
    TEXTURE_SRGB,
    NO_GROUP,
    NODE_DTYPE,
    PAGE_HEADER_DTYPE,
    PART_DTYPE,
)
from renderer.limits import BVH_FANOUT, HZB_MAX_MIPS, WGSL_CONSTANTS

# the scene's `materials` buffer (renderer/texture_pool.py lays it out, shaders/material.wgsl
# reads it): a header of MATERIALS_HEADER_WORDS words (the MATERIALS_* words below, then
# SRGB_TABLE_WORDS f32: the linear value of each 8-bit sRGB code, a lookup instead of three
# pow() a texel), every asset's MATERIAL_DTYPE records, a GPU_TEXTURE_DTYPE record a texture,
# the tile table (a word a tile of a mip above the tail: its first word in the pool, or
# TILE_MISSING), the tile stamps (a word a tile: the last frame whose BasePass sampled it + 1),
# every texture's mip tail, then the pool's tile slots (TEXTURE_TILE_WORDS words each)
MATERIALS_TEXTURES = 0  # first word of the texture records
MATERIALS_POOL = 1  # first word of the pool
MATERIALS_COUNT = 2  # materials
MATERIALS_TEXTURE_COUNT = 3  # textures
MATERIALS_STAMP_DELTA = 4  # a tile's stamp word less its table word
MATERIALS_STREAMING = 5  # 1: the BasePass stamps the tiles it samples (textures stream)
# hardware sampling: log2 of the rows of tiles a layer of each pool texture holds (5 words,
# texture_pool.HW_FORMATS order)
MATERIALS_TILE_ROWS = 8
SRGB_TABLE_WORDS = 256
SRGB_TABLE = 16  # its first word
MATERIALS_HEADER_WORDS = SRGB_TABLE + SRGB_TABLE_WORDS

# A texture as the GPU reads it (renderer/texture_pool.py): its mips above the tail in tiles of
# TEXTURE_TILE_WORDS words (`texture_pool.tile_shift`), the tail (the mips that fit one tile)
# whole, a mip after another as in the file
GPU_TEXTURE_DTYPE = np.dtype([
    ("tail", "<u4"),  # the word of the tail's first mip in the buffer
    ("width", "<u4"),  # mip 0
    ("height", "<u4"),
    ("mips", "<u4"),
    ("flags", "<u4"),  # TEXTURE_SRGB
    ("format", "<u4"),  # TEXTURE_FORMATS
    ("tail_mip", "<u4"),  # the first mip of the tail
    ("table", "<u4"),  # the word of mip 0's first tile in the tile table
])

FRAME_DTYPE = np.dtype([
    ("view_proj", "<f4", 16),  # world -> clip, column-major
    # the previous submitted frame's motion_view_proj (velocity: shaders/depth_targets.wgsl);
    # this frame's own on the first frame and after a resize or a new scene (no camera motion)
    ("prev_view_proj", "<f4", 16),
    ("view", "<f4", 16),  # world -> view, column-major
    ("planes", "<f4", (5, 4)),  # frustum planes, world space, inside where n.p + d >= 0
    ("camera", "<f4", 4),  # xyz eye position, w: lod scale (pixels per unit at distance 1)
    ("viewport", "<f4", 4),  # width, height, 1/width, 1/height
    ("tau", "<f4"),  # LOD threshold in pixels
    ("near", "<f4"),  # near plane distance
    ("sw_max_edge", "<f4"),  # clusters with a larger typical triangle edge (pixels) go to HW
    ("debug_view", "<u4"),  # resolve: an index of limits.DEBUG_VIEWS (VIEW_* in WGSL)
    ("instance_count", "<u4"),
    ("queue_capacity", "<u4"),  # queue entries
    ("visible_capacity", "<u4"),  # visible cluster slots (SW from the front, HW from the back)
    ("frame_index", "<u4"),
    ("flags", "<u4"),  # FLAG_OCCLUSION: test against the HZB
    ("occluded_capacity", "<u4"),  # entries of the occluded list (nodes front, clusters back)
    ("request_capacity", "<u4"),  # page request entries per frame (streaming)
    ("page_words", "<u4"),  # u32 words per page: the scene's page size (shaders/cluster.wgsl)
    # occlusion (shaders/hzb.wgsl): this frame's and the previous frame's camera, and the HZB
    ("proj", "<f4", 4),  # P00, P11, near, 1
    ("prev_view", "<f4", 16),  # the view the HZB was built from (main pass test)
    ("prev_proj", "<f4", 4),  # its P00, P11, near, and 1 if the HZB is valid (else 0)
    ("hzb_size", "<u4", 4),  # mip 0 width, height, mip count, 0
    ("hzb_mips", "<u4", (HZB_MAX_MIPS // 4, 4)),  # word offset of each mip in the hzb buffer
    # view_proj without temporal accumulation's sub-pixel jitter (renderer/antialias.py): what
    # velocity measures motion with, so that the jitter is no motion (= view_proj unjittered)
    ("motion_view_proj", "<f4", 16),
    # aggregate proxies (renderer/aggregates.py): x: the first proxy slot (the instances' slots
    # end there: the block cull and the shadow views' instance cull stop at it), y: proxy nodes
    # in the `aggregates` table (0: none drawn); z, w: the box's part and cluster, which a far
    # instance drawn as its asset's box draws (instance_cull.wgsl `push_root`; NO_NODE: none)
    ("proxies", "<u4", 4),
])

# the virtual shadow maps (renderer/shadows.py, shaders/shadow.wgsl): one uniform a frame
SHADOW_DTYPE = np.dtype([
    ("sun", "<f4", 4),  # xyz: unit direction towards the sun; w: 1 when there is a sun
    ("axis_u", "<f4", 4),  # light space: x = dot(p, axis_u), y = dot(p, axis_v) (world units)
    ("axis_v", "<f4", 4),
    # x: depth of the scene's nearest point to the sun along -sun; y: 1 / the depth range (depth
    # in the map is 0 nearest the sun, 1 farthest); z: level 0's texel (world units); w: bias
    # along the normal, in texels
    ("depth", "<f4", 4),
    # x: the sun's levels, y: pool pages, z: this frame's stamp (marks), w: moved bounds sent
    ("counts", "<u4", 4),
    # the camera's footprint: x: pixels per world unit at distance 1 (lod scale), y: texels per
    # pixel wanted (1), z: the pages marked around a pixel's point, in texels; w: 0
    ("footprint", "<f4", 4),
    ("inv_view_proj", "<f4", 16),  # the camera's clip -> world (the mark pass)
    # x: views in use (the sun's levels, then the local faces' mips), y: local lights,
    # z: the pool's first word in `shadow_map` (after the table), w: 0
    ("views", "<u4", 4),
])

# one shadow view, in the uniform array `shadow_views` (SHADOW_VIEWS of them): a level of the
# sun's clipmap (orthographic) or a mip of a local light's face (perspective)
SHADOW_VIEW_DTYPE = np.dtype([
    # world -> the view's window: NDC x, y in -1..1, z 0..1 after the divide by w (w = 1 for
    # the sun's; for a face, z is 0 at its near plane and 1 at its far plane)
    ("view_proj", "<f4", 16),
    ("planes", "<f4", (5, 4)),  # the window's sides and a plane behind the light (culling)
    ("origin", "<i4", 4),  # x, y: the window's first page (absolute page coordinates); z, w: 0
    # x: texel size (world units; the sun's), y: texels per world unit (the sun's) or at
    # distance 1 (a face's focal length, in texels), z, w: a face's near and far distances
    ("texel", "<f4", 4),
    ("eye", "<f4", 4),  # xyz: the light's position (a face), w: 1 for a face (perspective)
    # x: the view's first table entry, y: log2 of its pages a side, z: its first page-mask word,
    # w: the view the page allocator serves in this record's place (coarsest first)
    ("table", "<u4", 4),
])

# a spot or point light, in the uniform array `lights` (MAX_LIGHTS; RenderOptions and
# renderer.lights.Light say what the values mean)
LIGHT_DTYPE = np.dtype([
    ("position", "<f4", 4),  # xyz: world position, w: range (0: none)
    # xyz: the way a spot light shines (unit), w: the cosine of its outer cone (a point light: -2)
    ("direction", "<f4", 4),
    # rgb: colour x intensity, the irradiance at distance 1 facing the light in suns; w:
    # 1 / (cos inner - cos outer) (a spot's cone edge)
    ("color", "<f4", 4),
    ("views", "<u4", 4),  # x: its first shadow view, y: faces (0: no shadow, 1: spot, 6), z, w: 0
])

# an instance as the shaders use it (shaders/instance.wgsl builds it from the 48-byte slot of
# the instance buffer, renderer/instances.py): not a storage layout
INSTANCE_WGSL = """struct Instance {
    world: mat4x4<f32>,  // object -> world (affine)
    asset: u32,  // index into the asset table
    scale: f32,  // largest axis scale of `world` (spheres and errors grow by it)
    // the share of the pixels it covers that an aggregate proxy keeps (renderer/aggregates.py:
    // its instances' projected area over its box's, along the view); 1 for an instance
    coverage: f32,
}"""

ASSET_DTYPE = np.dtype([
    ("node_base", "<u4"),  # first BVH node of the asset in the scene's node buffer
    ("group_base", "<u4"),  # first group
    ("part_base", "<u4"),  # first group part
    ("page_base", "<u4"),  # first page in the page buffer
    ("step", "<f4"),  # position grid step
    ("node_count", "<u4"),
    # the largest error of every group but the root: an instance where it projects <= tau from
    # the root node's sphere can only draw root-group clusters (instance_cull.wgsl)
    ("far_error", "<f4"),
    ("root_first_part", "<u4"),  # the root group's parts (global part indices)
    ("root_part_count", "<u4"),
    ("material_base", "<u4"),  # the asset's first material in the scene's material table
    # the asset-table row of its box (the proxies' box with its first material; NO_NODE: none):
    # a far instance whose box error projects <= tau draws it (instance_cull.wgsl `push_root`)
    ("box_row", "<u4"),
    ("pad", "<u4"),
    ("uv_box", "<f4", 4),  # the uvs' box (meta uv_min, uv_max): 16-bit uvs map onto it
    # xyz: the asset's box corner (object space), w: its box error (`Asset.box_gap`)
    ("box_min", "<f4", 4),
    # xyz: the box's sides, w: 0
    ("box_size", "<f4", 4),
    # xyz: the share of the box's faces across x, y, z that the asset covers seen along that
    # axis, w: the weight of the box-like estimate of its shadow between them (`Asset.box_fill`)
    ("box_fill", "<f4", 4),
])

# the bits of the state buffer's `overflow` word (FrameStats.overflow), generated as OVERFLOW_*:
# the traversal queue was full, the visible list, the occluded list; the traversal ended with
# work outstanding or a loop of cull.wgsl stopped short of its condition (INCOMPLETE, also set by
# the host from `outstanding`: lavapipe ends an invocation's loops after 65,535 iterations)
OVERFLOW_BITS = {"queue": 1, "visible": 2, "occluded": 4, "incomplete": 8}

# the words of the `state` buffer, in order
STATE_WORDS = (
    "queue_write",  # entries reserved in the queue
    "queue_read",  # entries claimed (persistent traversal)
    "outstanding",  # entries pushed and not yet finished (0 at the end of a whole traversal)
    "level_start",  # per-level traversal: the current level's queue range
    "level_end",
    "sw_count",  # visible clusters for the software rasterizer
    "hw_count",  # visible clusters for the hardware rasterizer
    "overflow",  # OVERFLOW_BITS, or'ed
    # statistics (reset every frame)
    "instances_tested",
    "instances_visible",
    "instances_far",  # drawn from their root group without a BVH traversal (instance_cull.wgsl)
    "blocks_visible",  # blocks of INSTANCE_BLOCK slots whose bounds touch the view (block_cull)
    "proxies_drawn",  # aggregate proxies drawn, each for a node's instances (block_cull)
    "proxied_instances",  # instances drawn by those proxies instead of themselves
    "instances_boxed",  # instances drawn as their asset's box (instance_cull.wgsl `push_root`)
    "nodes_visited",
    "groups_tested",
    "clusters_tested",
    "sw_clusters",
    "hw_clusters",
    "sw_triangles",
    "hw_triangles",
    "occluded_instances",  # main pass: instances, nodes, clusters behind the previous HZB
    "occluded_nodes",
    "occluded_clusters",
    "post_clusters",  # clusters drawn by the post pass (occluded last frame, visible now)
    "post_rejected",  # candidates the post pass found occluded again (culled for good)
    "page_requests",  # groups wanted finer but not resident (streaming), one entry each
    # occlusion bookkeeping
    "occluded_nodes_count",  # entries in the occluded list: nodes from the front
    "occluded_clusters_count",  # and clusters from the back
    "sw_first",  # the raster passes draw visible[first..count) (the post pass: the new ones)
    "hw_first",
    "occluded_total",  # entries reserved in the occluded list (both ends)
    # the shadow map's pages (the shadow state only: shaders/shadow_pages.wgsl)
    "shadow_marked",  # table entries the frame's pixels need
    "shadow_allocated",  # of them, given a physical page this frame
    "shadow_cached",  # of them, valid from an earlier frame: not drawn again
    "shadow_drawn",  # of them, cleared and drawn this frame (the draw list's length)
    "shadow_failed",  # of them, left without a page: the pool was spent (a coarser level serves)
)
STATE = {name: i for i, name in enumerate(STATE_WORDS)}
STAT_NAMES = STATE_WORDS[STATE["instances_tested"] : STATE["occluded_nodes_count"]]

# the words of the `args` buffer (indirect dispatch and draw arguments)
ARGS_WORDS = (
    "sw_x", "sw_y", "sw_z",  # software raster dispatch
    "hw_vertex_count", "hw_instance_count", "hw_first_vertex", "hw_first_instance",  # HW draw
    "post_x", "post_y", "post_z",  # the post pass's seeding dispatch
    "level_x", "level_y", "level_z",  # the per-level traversal's dispatch of the current level
    "blocks_x", "blocks_y", "blocks_z",  # the instance cull: a workgroup per visible block
)
ARGS = {name: i for i, name in enumerate(ARGS_WORDS)}

REQUEST_DTYPE = np.dtype([  # one page request of the culling pass (streaming)
    ("group", "<u4"),  # the scene group wanted finer than what is resident
    ("priority", "<f4"),  # its projected error in pixels
])


def _wgsl_type(dt: np.dtype, shape: tuple[int, ...], what: str) -> tuple[str, int]:
    """WGSL type and alignment for a field of base dtype dt and subarray shape."""
    base = {"f": "f32", "u": "u32", "i": "i32"}[dt.kind]
    assert dt.itemsize == 4, what
    if shape == ():
        return base, 4
    if shape == (16,) and base == "f32":
        return "mat4x4<f32>", 16
    if shape == (4,):
        return f"vec4<{base}>", 16
    if len(shape) == 2 and shape[1] == 4:
        return f"array<vec4<{base}>, {shape[0]}>", 16
    if len(shape) == 1:
        return f"array<{base}, {shape[0]}>", 4
    raise ValueError(f"{what}: no WGSL type for shape {shape}")


def wgsl_struct(name: str, dtype: np.dtype, *, uniform: bool = False) -> str:
    """A WGSL struct with exactly the layout of `dtype` (asserted against WGSL's rules)."""
    lines = [f"struct {name} {{"]
    pos = 0
    for field in dtype.names:
        sub, off = dtype.fields[field][:2]
        base, shape = (sub.subdtype if sub.subdtype else (sub, ()))
        wtype, align = _wgsl_type(base, shape, f"{name}.{field}")
        if wtype.startswith("array<u32") or wtype.startswith("array<i32"):
            # plain scalar arrays are only used as padding; spell them as scalars
            for k in range(shape[0]):
                lines.append(f"    {field}_{k}: {wtype[6:9]},")
            pos = off + sub.itemsize
            continue
        if off % align or off != pos:
            raise ValueError(f"{name}.{field} at byte {off} breaks WGSL alignment {align}")
        if uniform and wtype.startswith("array<") and not wtype.startswith("array<vec4"):
            raise ValueError(f"{name}.{field}: uniform arrays need a 16-byte stride")
        lines.append(f"    {field}: {wtype},")
        pos = off + sub.itemsize
    if dtype.itemsize % 16:
        raise ValueError(f"{name} is {dtype.itemsize} bytes, not a multiple of 16")
    lines.append("}")
    return "\n".join(lines)


def wgsl_offsets(prefix: str, dtype: np.dtype) -> str:
    """WGSL constants: the record size in words and every field's word offset."""
    assert dtype.itemsize % 4 == 0
    lines = [f"const {prefix}_WORDS: u32 = {dtype.itemsize // 4}u;"]
    for field in dtype.names:
        off = dtype.fields[field][1]
        assert off % 4 == 0
        lines.append(f"const {prefix}_{field.upper()}: u32 = {off // 4}u;")
    return "\n".join(lines)


def wgsl_const(name: str, value: float) -> str:
    """`const NAME: u32 = ...;` (f32 for a float)."""
    if isinstance(value, float):
        return f"const {name}: f32 = {value:.6e};"
    text = f"{value:#x}" if value > 0xFFFF else str(value)
    return f"const {name}: u32 = {text}u;"


def generated_includes() -> dict[str, str]:
    """{"layout.wgsl": ...}: every generated constant and struct."""
    parts = [
        "// generated by renderer/layout.py from the numpy dtypes; do not edit",
        wgsl_offsets("NODE", NODE_DTYPE),
        wgsl_offsets("GROUP", GROUP_DTYPE),
        wgsl_offsets("PART", PART_DTYPE),
        wgsl_offsets("PAGE_HEADER", PAGE_HEADER_DTYPE),
        wgsl_offsets("CLUSTER", CLUSTER_DTYPE),
        f"const CHILD_EMPTY: u32 = {CHILD_EMPTY:#x}u;",
        f"const CHILD_GROUP: u32 = {CHILD_GROUP:#x}u;",
        f"const NO_GROUP: u32 = {NO_GROUP:#x}u;",
        f"const MODE_POSITION_MASK: u32 = {MODE_POSITION_MASK:#x}u;",
        wgsl_offsets("MATERIAL", MATERIAL_DTYPE),
        wgsl_offsets("TEXTURE", GPU_TEXTURE_DTYPE),
        "\n".join(wgsl_const(n, v) for n, v in (
            ("MODE_HAS_UV", MODE_HAS_UV), ("MODE_HAS_COLOR", MODE_HAS_COLOR),
            ("MODE_HAS_MATERIAL", MODE_HAS_MATERIAL), ("MODE_MATERIAL_SHIFT", MODE_MATERIAL_SHIFT),
            ("MODE_DOUBLE_SIDED", MODE_DOUBLE_SIDED), ("MODE_ALPHA_MASK", MODE_ALPHA_MASK),
            ("MODE_UV_FLOAT", MODE_UV_FLOAT),
            ("MATERIAL_BYTE_DOUBLE_SIDED", MATERIAL_BYTE_DOUBLE_SIDED),
            ("MATERIAL_DOUBLE_SIDED", MATERIAL_DOUBLE_SIDED),
            ("MATERIAL_ALPHA_MASK", MATERIAL_ALPHA_MASK), ("NO_TEXTURE", NO_TEXTURE),
            ("TEXTURE_SRGB", TEXTURE_SRGB), ("MATERIALS_HEADER_WORDS", MATERIALS_HEADER_WORDS),
            ("SRGB_TABLE", SRGB_TABLE), ("MATERIALS_TEXTURES", MATERIALS_TEXTURES),
            ("MATERIALS_POOL", MATERIALS_POOL), ("MATERIALS_STAMP_DELTA", MATERIALS_STAMP_DELTA),
            ("MATERIALS_STREAMING", MATERIALS_STREAMING),
            ("MATERIALS_TILE_ROWS", MATERIALS_TILE_ROWS))),
        # TEXTURE_FORMAT_BC1 ...: a texture record's `format` (preprocess/tess/records.py)
        "\n".join(wgsl_const("TEXTURE_FORMAT_" + name.upper().replace("-", "_"), code)
                  for code, (name, _, _) in TEXTURE_FORMATS.items()),
        f"const BVH_FANOUT: u32 = {BVH_FANOUT}u;",
        "\n".join(wgsl_const(n, v) for n, v in WGSL_CONSTANTS.items()),
        "\n".join(f"const S_{n.upper()}: u32 = {i}u;" for n, i in STATE.items()),
        "\n".join(f"const OVERFLOW_{n.upper()}: u32 = {b}u;" for n, b in OVERFLOW_BITS.items()),
        "\n".join(f"const A_{n.upper()}: u32 = {i}u;" for n, i in ARGS.items()),
        wgsl_struct("Frame", FRAME_DTYPE, uniform=True),
        INSTANCE_WGSL,
        wgsl_struct("AssetInfo", ASSET_DTYPE),
        wgsl_struct("ShadowInfo", SHADOW_DTYPE, uniform=True),
        wgsl_struct("ShadowView", SHADOW_VIEW_DTYPE),
        wgsl_struct("Light", LIGHT_DTYPE),
    ]
    return {"layout.wgsl": "\n".join(parts) + "\n"}
