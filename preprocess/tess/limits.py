"""The hard limits of the `.tess` format, shared by the builder, the reader and (through
`renderer.limits`, which generates them into the WGSL include) the shaders. Each is one line here;
what it costs is said beside it."""

from __future__ import annotations

# triangles per cluster: the software rasterizer gives a cluster one workgroup of up to 128 lanes,
# and the visibility buffer keeps 7 bits of triangle index
MAX_CLUSTER_TRIANGLES = 128
# vertices per cluster: local indices are stored in 8 bits (3 bytes a triangle)
MAX_CLUSTER_VERTICES = 255
# bytes per streaming page by default (Nanite's size): the unit of upload and eviction; smaller
# pages stream finer but cost more page-table and request entries
PAGE_SIZE = 128 * 1024
MIN_PAGE_SIZE = 16 * 1024  # a page must hold the largest cluster (~4 KiB) several times over
# the largest page: bigger pages stream in coarser steps, and a page holds at most
# MAX_PAGE_CLUSTERS clusters anyway (1 MiB is ~300 full clusters)
MAX_PAGE_SIZE = 1024 * 1024
# clusters per page: the renderer names a cluster by page slot and its index in the page in one
# u32, with 10 bits for the index (renderer.limits.SLOT_BITS)
MAX_PAGE_CLUSTERS = 1024
# children per BVH node: one node is 96 bytes and a culling lane tests all of its children
BVH_FANOUT = 8
# the parent error of the root group's clusters: projects above every threshold, so nothing
# coarser ever replaces them
ROOT_ERROR = 3.0e38
# page flag (page table and page header) of a root page: always resident, never evicted
PAGE_ROOT = 1
# materials per asset: a cluster whose triangles use several stores a byte per triangle, 7 bits
# of material and 1 of double-sidedness
MAX_MATERIALS = 128
# the largest texture side kept by default (BuildConfig.max_texture_size): larger ones start at
# the first mip that fits. 2048 x 2048 with its mips is 21.3 MiB on the GPU (preprocess.textures)
MAX_TEXTURE_SIZE = 2048
# the largest texture side the builder reads (and `--max-texture-size` may keep): WebGPU's common
# largest 2D texture. A 16,384^2 RGBA8 image is 1 GiB decoded; Pillow's decompression-bomb limit
# is raised to its texel count for our reads only (preprocess.materials.texture_pixel_limit)
MAX_TEXTURE_SIDE = 16384
# the largest world coordinate a mesh, a camera or an instance's bounds may reach: the GPU squares
# distances in float32, which overflows past 1.8e19 (on lavapipe a sphere scaled by 1e18
# renders, by 1e19 it loses pixels, by 1e20 it is blank). `preprocess` refuses a mesh beyond it
MAX_WORLD = 1e18
# spot and point lights a scene holds: a scene file's `lights` (preprocess.tess.scene_file; the
# glTF importer keeps the first this many) and the renderer's `lights` uniform
MAX_LIGHTS = 16
# a source's up axis: what a `.tess` records in its meta ("up") and a scene file's asset may name
# (preprocess.up_axis turns a Z-up source Y-up); Tessera's world is Y-up
UP_AXES = ("y", "z")

# a scene's textures file (`preprocess.scene_import.build_scene`): `<scene>.@textures.tess`, its
# meta's "kind"; mesh names never hold "@", so it never shares a name with a mesh's file
TEXTURE_SET_NAME = "@textures"
TEXTURE_SET_KIND = "textures"
