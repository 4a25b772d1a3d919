"""Every limit and capacity of the runtime, and every constant that the host and the shaders both
use, defined once here with what it costs. `renderer.layout` generates each of them into the WGSL
include (`layout.wgsl`), so a shader never spells one by hand: changing a limit is a one-line edit.

The format's own limits (cluster size, page size, BVH fan-out, the root error, the lights a scene
holds) are the builder's and the reader's too, so they live with the format in
`preprocess.tess.limits`, imported here.
"""

from __future__ import annotations

from preprocess.tess.limits import (
    BVH_FANOUT,
    MAX_CLUSTER_TRIANGLES,
    MAX_CLUSTER_VERTICES,
    MAX_LIGHTS,
    MAX_PAGE_CLUSTERS,
    MAX_WORLD,
    PAGE_ROOT,
    PAGE_SIZE,
    ROOT_ERROR,
)

__all__ = [
    "BVH_FANOUT",
    "DEFAULT_BINDING_LIMIT",
    "FLAG_OCCLUSION",
    "HZB_MAX_MIPS",
    "ID_EMPTY",
    "IMAGE_BUFFER_BYTES",
    "MAX_CLUSTER_TRIANGLES",
    "MAX_CLUSTER_VERTICES",
    "MAX_DISPATCH",
    "MAX_FOV",
    "MAX_IMAGE_SIZE",
    "MAX_PAGES",
    "MAX_TIMESTAMPS",
    "MAX_WORLD",
    "MIN_FOV",
    "NOT_RESIDENT",
    "PAGE_ROOT",
    "PAGE_SIZE",
    "READBACK_RING",
    "ROOT_ERROR",
    "SLOT_BITS",
    "SLOT_MASK",
    "TEXTURE_TILE_WORDS",
    "TILE_MISSING",
    "TRIANGLE_BITS",
    "WGSL_CONSTANTS",
    "WORKGROUP",
]

# -- addressing clusters
# a visible cluster is named by one u32, `page slot << SLOT_BITS | cluster index in the page`:
# 10 bits allow 1,024 clusters a page (a 128 KiB page holds ~500 of 128 triangles) and leave
# 22 bits of page slots
SLOT_BITS = 10
assert 1 << SLOT_BITS >= MAX_PAGE_CLUSTERS
SLOT_MASK = (1 << SLOT_BITS) - 1
MAX_PAGES = 1 << (32 - SLOT_BITS)  # pages (or pool slots) one scene addresses: 4,194,304
# the residency table's entry for a page in no pool slot (streaming)
NOT_RESIDENT = 0xFFFFFFFF
# -- texture tiles (renderer/texture_pool.py): a texture's mips above its tail live in tiles of
# TEXTURE_TILE_WORDS words (16 KiB: 64 x 64 RGBA8 texels, 128 x 128 in 16-byte blocks, 256 x 128
# in 8-byte ones), each in a slot of the pool or none (TILE_MISSING in the tile table)
TEXTURE_TILE_WORDS = 4096
TILE_MISSING = 0xFFFFFFFF
# the visibility buffer's payload is `visible index << TRIANGLE_BITS | triangle`: 7 bits hold
# MAX_CLUSTER_TRIANGLES triangles and leave 25 bits (32M) of visible clusters a frame
TRIANGLE_BITS = 7
assert 1 << TRIANGLE_BITS >= MAX_CLUSTER_TRIANGLES
# resolve's ids image on the background (every channel)
ID_EMPTY = 0xFFFFFFFF

# -- images
# the largest image side: 16384 is WebGPU's common max texture dimension. What an adapter allows
# is smaller: each image buffer is one storage binding, so a frame fits when its largest buffer
# fits `max_storage_buffer_binding_size` (128 MiB on lavapipe and GL: 16,777,216 pixels, 8 bytes
# a pixel; `Renderer` checks before it allocates anything)
MAX_IMAGE_SIZE = 16384
# the frame's image buffers, in bytes a pixel (renderer/frame.py allocates them from this): the
# visibility buffer (one 64-bit word, or depth and ids words without 64-bit atomics), then the
# resolve outputs (the G-buffer among them), split so that none holds more than the visibility
# buffer, and the depth targets' velocity. 68 bytes a pixel in all (and the HZB's 1.3),
# 17 GiB at 16384 x 16384
IMAGE_BUFFER_BYTES = {
    "vis": 8,  # 64-bit visibility: depth << 32 | payload
    "vis_depth": 4,  # 32-bit fallback: depth
    "vis_ids": 4,  # 32-bit fallback: payload
    "color": 4,  # RGBA8
    "depth_out": 4,  # NDC depth (reversed Z)
    "normal_xy": 8,  # world normal x, y (f32)
    "normal_z": 4,  # world normal z (f32)
    "ids_a": 8,  # instance, cluster (u32)
    "ids_b": 8,  # triangle, level << 1 | hardware (u32)
    # the G-buffer (shaders/resolve.wgsl): base colour RGBA8 sRGB, shading normal octahedral
    # 2 x 16 bits | roughness, metallic (8 bits each), scene material (16), emissive RGB8 sRGB,
    # occlusion (8)
    "gbuffer_a": 8,
    "gbuffer_b": 8,
    "velocity": 8,  # depth targets: screen motion since the previous frame, pixels (2 x f32)
}
# mips of the hierarchical depth buffer: 16 mips cover 65,536 pixels a side; the frame uniforms
# carry one u32 offset per mip (FRAME_DTYPE.hzb_mips)
HZB_MAX_MIPS = 16

# -- camera and world
# vertical field of view, degrees: 0 and 180 are degenerate (tan(fov / 2) is 0 or infinite), and
# near them the projection and the LOD scale leave float32's useful range; 1..179 is what a
# camera takes (`Camera`, the command line, scene files)
MIN_FOV = 1.0
MAX_FOV = 179.0

# -- dispatch
WORKGROUP = 64  # lanes of the culling workgroups, and of the shadow pages' list passes
PIXEL_TILE = 8  # a pixel pass's workgroup is PIXEL_TILE^2 lanes (resolve, hzb, depth_targets)
# the shadow mark pass's: 16^2 lanes (on CPU adapters a workgroup costs microseconds whatever it
# does: fewer, larger ones)
MARK_TILE = 16
SW_WORKGROUP = 128  # the software rasterizer's lanes: a cluster's triangles at most, one a lane
assert SW_WORKGROUP == MAX_CLUSTER_TRIANGLES
CLEAR_LANES = 256  # lanes clearing a shadow page
MAX_DISPATCH = 65535  # workgroups per dimension of one dispatch (WebGPU's guaranteed minimum)
# what WebGPU guarantees one storage binding may hold (128 MiB), for adapters that report no
# limit; the page buffer (or the streaming pool) is one binding
DEFAULT_BINDING_LIMIT = 1 << 27

# -- frame flags (FRAME_DTYPE.flags)
FLAG_OCCLUSION = 1  # test against the previous frame's HZB (two-pass occlusion culling)

# -- shadows (docs/ARCHITECTURE.md "Shadows"): virtual shadow maps of SHADOW_PAGE^2-texel pages in
# one physical pool. A shadow view is a square window of pages with a page table entry each (16
# bytes): the sun's are SHADOW_LEVELS clipmap levels of SHADOW_PAGES^2 pages (16,384^2 virtual
# texels a level, 4 MiB of table for the 16), each level twice the texel of the one before; a
# spot light's face, or each of a point light's six, is LOCAL_MIPS views, the mips of a
# LOCAL_PAGES^2-page window (8,192^2 texels down to one page). The table, then the physical pages
# (64 KiB each, 32-bit depth), in one buffer: one storage binding (OpenGL binds 16 a shader
# stage, and resolve needed all but one of them already).
SHADOW_PAGE = 128  # texels a page side
SHADOW_PAGE_SHIFT = 7  # log2(SHADOW_PAGE)
SHADOW_PAGES = 128  # pages a level side (a power of two: the table wraps around as levels scroll)
SHADOW_LEVELS = 16  # clipmap levels: the finest texel is 2^-15 of the coarsest
SUN_ENTRIES = SHADOW_LEVELS * SHADOW_PAGES * SHADOW_PAGES  # the sun's table entries
LOCAL_PAGES = 64  # pages a side of a local light's face at its finest mip
LOCAL_MIPS = 7  # mips of a face: 64^2 .. 1 pages
LOCAL_ENTRIES = sum((LOCAL_PAGES >> m) ** 2 for m in range(LOCAL_MIPS))  # table entries a face
# views in the uniform array `shadow_views` (224 bytes each: 56 KiB of WebGPU's guaranteed 64):
# the sun's levels, then the local lights' faces, LOCAL_MIPS views each
SHADOW_VIEWS = 256
MAX_LOCAL_FACES = (SHADOW_VIEWS - SHADOW_LEVELS) // LOCAL_MIPS  # 34: five point lights and 4 spots
# a pixel's pages are marked in the level of its footprint, FALLBACK_STEP levels coarser (64x
# fewer pages) and in the coarsest level, which the pool serves first: when it runs out, a
# coarser level shades the pixel, never nothing
FALLBACK_STEP = 3
# the coarsest window's side in radii of the scene's (grown) bounding sphere: the scene covers
# at most 5 x 5 of its pages, so that MIN_SHADOW_PAGES always hold them
COARSEST_SPAN = 64.0
MIN_SHADOW_PAGES = 32
SHADOW_PAGE_BYTES = 4 * SHADOW_PAGE * SHADOW_PAGE
# the hierarchical page mask: mips of a view's n^2 pages .. 1 flags; the sun's levels' 21,845
# words rounded up
HPM_STRIDE = 21848
assert sum((SHADOW_PAGES >> m) ** 2 for m in range(8)) <= HPM_STRIDE
# the queue and visible entries of a shadow view carry the view in the instance word's top
# bits: instance | view << VIEW_SHIFT (the main view is 0): 2^24 instances
VIEW_SHIFT = 24
INSTANCE_MASK = (1 << VIEW_SHIFT) - 1
# the instance buffer (renderer/instances.py, shaders/instance.wgsl): slots sorted by asset, each
# asset's run padded to whole blocks of INSTANCE_BLOCK slots, one asset index a block
INSTANCE_BLOCK = 64
assert INSTANCE_BLOCK == WORKGROUP  # the instance cull runs a workgroup per block
INSTANCE_SLOT_BYTES = 48  # a slot: the three rows of a 3 x 4 affine transform, float32
MOVED_VEC4S = 7  # an entry of the moved table (shaders/moved.wgsl): slot, rows before, rows now
# aggregate proxies (renderer/aggregates.py, shaders/block_cull.wgsl): a listed block entry with
# this bit is a proxy's slot; a root node's parent in the proxy node table
PROXY_ENTRY = 1 << 31
NO_NODE = 0xFFFFFFFF
BOX_TRIANGLES = 12  # the proxies' box (renderer/proxy_box.tess): one cluster, its root
assert SHADOW_VIEWS <= 1 << (32 - VIEW_SHIFT)
NO_PAGE = 0xFFFFFFFF  # a page table entry without a physical page

# -- readback
MAX_TIMESTAMPS = 48  # timestamp queries a frame: two per GPU pass (8 bytes each, read back)
READBACK_RING = 4  # readback buffers in flight before `submit` waits for the oldest

# -- debug views (RenderOptions, `--debug`): resolve picks a pixel's colour by index; the WGSL
# include declares each as `VIEW_<NAME>` (shaders/resolve.wgsl)
DEBUG_VIEWS = ("lit", "cluster", "triangle", "group", "level", "raster", "instance",
               "base_color", "material", "uv", "shading_normal",
               # the sun's shadow: its visibility (the shadow mask), the clipmap level sampled
               # per pixel (grey: none), the page under the pixel drawn this frame or cached
               "shadow", "shadow_level", "shadow_cache")

# what the WGSL include declares, as `const NAME: u32` (f32 for floats)
WGSL_CONSTANTS = {
    "SLOT_BITS": SLOT_BITS,
    "NOT_RESIDENT": NOT_RESIDENT,
    "TEXTURE_TILE_WORDS": TEXTURE_TILE_WORDS,
    "TILE_MISSING": TILE_MISSING,
    "TRIANGLE_BITS": TRIANGLE_BITS,
    "ID_EMPTY": ID_EMPTY,
    "HZB_MAX_MIPS": HZB_MAX_MIPS,
    "WORKGROUP": WORKGROUP,
    "PIXEL_TILE": PIXEL_TILE,
    "MARK_TILE": MARK_TILE,
    "SW_WORKGROUP": SW_WORKGROUP,
    "CLEAR_LANES": CLEAR_LANES,
    "MAX_DISPATCH": MAX_DISPATCH,
    "FLAG_OCCLUSION": FLAG_OCCLUSION,
    "MAX_CLUSTER_TRIANGLES": MAX_CLUSTER_TRIANGLES,
    "MAX_CLUSTER_VERTICES": MAX_CLUSTER_VERTICES,
    "PAGE_ROOT": PAGE_ROOT,
    "ROOT_ERROR": ROOT_ERROR,
    "SHADOW_PAGE": SHADOW_PAGE,
    "SHADOW_PAGE_SHIFT": SHADOW_PAGE_SHIFT,
    "SHADOW_PAGES": SHADOW_PAGES,
    "SHADOW_LEVELS": SHADOW_LEVELS,
    "SHADOW_VIEWS": SHADOW_VIEWS,
    "LOCAL_MIPS": LOCAL_MIPS,
    "MAX_LIGHTS": MAX_LIGHTS,
    "FALLBACK_STEP": FALLBACK_STEP,
    "VIEW_SHIFT": VIEW_SHIFT,
    "INSTANCE_MASK": INSTANCE_MASK,
    "INSTANCE_BLOCK": INSTANCE_BLOCK,
    "MOVED_VEC4S": MOVED_VEC4S,
    "PROXY_ENTRY": PROXY_ENTRY,
    "BOX_TRIANGLES": BOX_TRIANGLES,
    "NO_NODE": NO_NODE,
    "NO_PAGE": NO_PAGE,
    **{f"VIEW_{name.upper()}": i for i, name in enumerate(DEBUG_VIEWS)},
}
