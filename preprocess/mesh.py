"""The in-memory triangle mesh the preprocessor works on, and the error and warning of its inputs.

Topology and attributes are kept apart: `positions` holds each distinct position once (welded), and
triangles index *wedges*, the distinct (position, normal, uv) combinations. Two wedges that share a
position sit on an attribute seam (a UV seam or a hard normal edge): topology welds across the seam,
shading keeps both sides.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field

import numpy as np


class MeshError(ValueError):
    """An input the preprocessor cannot use; the message is one line meant for the user."""


class MeshWarning(UserWarning):
    """Something of an input the preprocessor leaves out or repairs (an unsupported glTF
    extension, duplicated faces, inconsistent winding); the message is one line naming the file,
    and the build goes on. Raised through `warnings.warn`."""


def mesh_warning(message: str) -> None:
    """A `MeshWarning`: something of the input left out or repaired; the build goes on (the
    warning is attributed to the caller of the function that calls this)."""
    warnings.warn(message, MeshWarning, stacklevel=3)


def column_bounds(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(min, max) of each column of an (n, k) array, in its dtype. (numpy reduces an (n, 3)
    array along axis 0 with a strided loop: 70 ms for 2M positions; reducing the contiguous
    transposed rows takes a copy and a few percent of that.)"""
    t = np.ascontiguousarray(np.asarray(a).T)
    return t.min(axis=1), t.max(axis=1)


@dataclass
class Mesh:
    positions: np.ndarray  # (n, 3) float32: each distinct position once
    triangles: np.ndarray  # (m, 3) int32: wedge ids, counter-clockwise front faces
    wedge_position: np.ndarray  # (k,) int32: the position id of each wedge
    wedge_normal: np.ndarray  # (k, 3) float32: unit normal of each wedge
    wedge_uv: np.ndarray | None = None  # (k, 2) float32: texture coordinates, None when absent
    name: str = "mesh"  # a label for summaries
    wedge_color: np.ndarray | None = None  # (k, 4) float32 linear RGBA 0..1, None when absent
    # (k,) int32: the material of each wedge (a triangle's is its first corner's), None: all 0
    wedge_material: np.ndarray | None = None
    # preprocess.materials.Material list (empty: the default material) and the Texture list
    # their texture fields index
    materials: list = field(default_factory=list)
    textures: list = field(default_factory=list)

    @property
    def position_triangles(self) -> np.ndarray:
        """(m, 3) int32: the triangles as position ids (the welded topology)."""
        return self.wedge_position[self.triangles]

    @property
    def triangle_count(self) -> int:
        return int(self.triangles.shape[0])

    @property
    def vertex_count(self) -> int:
        return int(self.positions.shape[0])

    def attribute_columns(self) -> dict[str, slice]:
        """Where each attribute lies in the rows of `wedge_attributes`: normal, then uv, colour
        and material where present."""
        cols, at = {"normal": slice(0, 3)}, 3
        for name, width, arr in (("uv", 2, self.wedge_uv), ("color", 4, self.wedge_color),
                                 ("material", 1, self.wedge_material)):
            if arr is not None:
                cols[name] = slice(at, at + width)
                at += width
        return cols

    def wedge_attributes(self) -> np.ndarray:
        """(k, a) float32: normal, uv, colour and material side by side (`attribute_columns`),
        the attributes that define seams (a material id is exact in float32 below 2^24)."""
        parts = [self.wedge_normal]
        for arr in (self.wedge_uv, self.wedge_color, self.wedge_material):
            if arr is not None:
                parts.append(np.asarray(arr, np.float32).reshape(len(self.wedge_normal), -1))
        if len(parts) == 1:
            return self.wedge_normal
        return np.concatenate(parts, axis=1).astype(np.float32)

    def with_wedges(self, wedge_position: np.ndarray, attributes: np.ndarray) -> Mesh:
        """This mesh with another wedge table (the DAG's, fresh coarse wedges appended): rows of
        `wedge_attributes`' layout."""
        cols = self.attribute_columns()

        def col(name: str):
            if name not in cols:
                return None
            if attributes.shape[1] == cols[name].stop - cols[name].start:  # the whole table
                return attributes  # (normals only: at 20M triangles a copy was ~180 MB)
            return attributes[:, cols[name]].copy()

        material = col("material")
        return Mesh(positions=self.positions, triangles=self.triangles,
                    wedge_position=wedge_position, wedge_normal=col("normal"),
                    wedge_uv=col("uv"), name=self.name, wedge_color=col("color"),
                    wedge_material=None if material is None else
                    np.rint(material[:, 0]).astype(np.int32),
                    materials=self.materials, textures=self.textures)

    def triangle_materials(self, triangles: np.ndarray | None = None) -> np.ndarray:
        """(t,) int32: the material of each triangle (its first corner's), all 0 without
        materials; of `triangles` (wedge ids) when given, else of the mesh's."""
        tri = self.triangles if triangles is None else triangles
        if self.wedge_material is None:
            return np.zeros(len(tri), np.int32)
        return self.wedge_material[tri[:, 0]].astype(np.int32)
