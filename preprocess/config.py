"""The build configuration: every tunable of the preprocessor with its default. The hard limits
it is checked against, and the up axes a source may have (`UP_AXES`), are the format's
(`preprocess.tess.limits`)."""

from __future__ import annotations

from dataclasses import dataclass

from preprocess.tess.limits import (
    MAX_CLUSTER_TRIANGLES,
    MAX_CLUSTER_VERTICES,
    MAX_PAGE_SIZE,
    MAX_TEXTURE_SIDE,
    MAX_TEXTURE_SIZE,
    MIN_PAGE_SIZE,
    PAGE_SIZE,
    UP_AXES,
)

# where a mesh file has no normals they are computed, and an edge whose triangles meet at more than
# this many degrees stays hard (preprocess.io.normals.crease_normals): 90-degree CAD edges keep two
# normals. Scans rarely have noise sharper than this, and a lone sharp edge splits nothing.
DEFAULT_CREASE_DEGREES = 45.0

# the automatic shading weights (`BuildConfig.shading_weight_for`): the `make demo` scene meets
# a budget of 2.5 triangles per covered pixel at 0.4 with a picture closer to the supersampled
# truth than full detail; a textured asset (spot, 3x its framing distance) keeps 32.8 dB against
# the shaded reference at 0.7 and falls to 25.3 dB at 0.4
SHADING_WEIGHT = 0.4
TEXTURED_SHADING_WEIGHT = 0.7

# BuildConfig.texture_compression: "bc" (block-compressed, the default) or "none" (RGBA8)
TEXTURE_COMPRESSIONS = ("bc", "none")


@dataclass(frozen=True)
class BuildConfig:
    """Options of the cluster-LOD build; every field has a default that suits scanned meshes."""

    max_triangles: int = MAX_CLUSTER_TRIANGLES  # triangle limit per cluster (<= 128)
    max_vertices: int = MAX_CLUSTER_VERTICES  # vertex limit per cluster (<= 255)
    group_size: int = 16  # target clusters per group handed to METIS (8..32 works)
    simplify_ratio: float = 0.5  # each group is simplified to this fraction of its triangles
    stuck_ratio: float = 0.85  # a group that cannot get below this fraction is terminal
    page_size: int = PAGE_SIZE  # bytes per page
    root_page_levels: int = 2  # pages whose groups lie in this many coarsest levels are root pages
    # below a one-cluster root, keep halving it down to this many triangles: the root is the
    # least an instance draws however small on screen (65,536 rocks a few pixels wide drew
    # 128 triangles each; 4 is a tetrahedron for a closed mesh)
    min_root_triangles: int = 4
    threads: int = 0  # numba threads; 0 = all cores
    crease_angle: float = DEFAULT_CREASE_DEGREES  # degrees, for computed normals; 180: all smooth
    # a group's error also holds its shading term times this (preprocess.measure.shading_term: the
    # angle between coarse and finer normals, radians, times the coarse triangle's size):
    # 0 counts geometry only; more keeps finer levels where normals change. None: automatic,
    # `shading_weight_for`. On the `make demo` scene at tau 1 (BENCHMARKS.md, the PBR image):
    # 0.3 draws 1.63 triangles per covered pixel at 23.8 dB PSNR against a 4x4 supersampled
    # full-detail frame, 0.4 2.33 at 24.2, 0.7 6.5 at 25.2 (full detail: 918 at 23.8)
    shading_weight: float | None = None
    # normals and uvs in the cost of a collapse (preprocess.simplify._attribute_quadrics,
    # meshoptimizer's attribute quadrics), weighted by this times the shading weight: collapses
    # that bend the shading or drag the texture wait for those that do not. 0: geometry only (the
    # default: it costs 9-14% of the build, which the build-time budget does not hold). 0.5 on
    # the make demo scene at tau 1 (BENCHMARKS.md): 1.28 triangles per covered pixel at 23.77 dB
    # instead of 2.09 at 24.07; igea 1 dB better at tau 2 and 4 with fewer triangles
    normal_cost: float = 0.0
    # textures larger than this many texels a side keep their mips from the first that fits
    # (0: all); memory is 4/3 x 4 bytes a texel (preprocess.textures)
    max_texture_size: int = MAX_TEXTURE_SIZE
    # "bc": textures block-compressed in the format their use asks for (4 or 8 bits a texel,
    # preprocess.textures); "none": RGBA8 (32 bits a texel, no encoding loss)
    texture_compression: str = "bc"
    up: str = "y"  # the source's up axis, "y" or "z": a Z-up mesh is turned Y-up first (up_axis)

    def __post_init__(self) -> None:
        if not 1 <= self.max_triangles <= MAX_CLUSTER_TRIANGLES:
            raise ValueError(f"max_triangles must be in 1..{MAX_CLUSTER_TRIANGLES}")
        if not 3 <= self.max_vertices <= MAX_CLUSTER_VERTICES:
            raise ValueError(f"max_vertices must be in 3..{MAX_CLUSTER_VERTICES}")
        if not 2 <= self.group_size <= 64:
            raise ValueError("group_size must be in 2..64")
        if not 0.05 <= self.simplify_ratio < 1.0:
            raise ValueError("simplify_ratio must be in [0.05, 1)")
        if not self.simplify_ratio < self.stuck_ratio <= 1.0:
            raise ValueError("stuck_ratio must be in (simplify_ratio, 1]")
        if not 1 <= self.min_root_triangles <= MAX_CLUSTER_TRIANGLES:
            raise ValueError(f"min_root_triangles must be in 1..{MAX_CLUSTER_TRIANGLES}")
        if not MIN_PAGE_SIZE <= self.page_size <= MAX_PAGE_SIZE or self.page_size % 16:
            raise ValueError(f"page size must be a multiple of 16 bytes from "
                             f"{MIN_PAGE_SIZE // 1024} to {MAX_PAGE_SIZE // 1024} KiB, not "
                             f"{self.page_size / 1024:g} KiB")
        if self.shading_weight is not None and not 0 <= self.shading_weight <= 100:  # nan too
            raise ValueError(f"shading weight must be 0..100, not {self.shading_weight}")
        if not 0 <= self.normal_cost <= 100:  # nan too
            raise ValueError(f"normal cost must be 0..100, not {self.normal_cost}")
        if not 0 <= self.crease_angle <= 180:  # also refuses nan
            raise ValueError(f"crease angle must be 0..180 degrees, not {self.crease_angle}")
        if not 0 <= self.max_texture_size <= MAX_TEXTURE_SIDE:
            raise ValueError(f"max texture size must be 0 (no limit) to {MAX_TEXTURE_SIDE}, not "
                             f"{self.max_texture_size}")
        if self.texture_compression not in TEXTURE_COMPRESSIONS:
            raise ValueError(f"texture compression must be one of "
                             f"{', '.join(TEXTURE_COMPRESSIONS)}, not "
                             f"{self.texture_compression!r}")
        if self.up not in UP_AXES:
            raise ValueError(f"up axis must be one of {', '.join(UP_AXES)}, not {self.up!r}")
        if not 0 <= self.threads <= 1024:
            raise ValueError(f"threads must be 0 (one per core) to 1024, not {self.threads}")

    def shading_weight_for(self, mesh) -> float:
        """The shading weight a mesh is built with: `shading_weight`, or where None,
        SHADING_WEIGHT, or TEXTURED_SHADING_WEIGHT for a mesh with textures or vertex colours
        (what a texture or colour loses to simplification is not in the error yet: the larger
        shading term keeps it, at about three times the triangles)."""
        if self.shading_weight is not None:
            return float(self.shading_weight)
        coloured = bool(mesh.textures) or mesh.wedge_color is not None
        return TEXTURED_SHADING_WEIGHT if coloured else SHADING_WEIGHT
