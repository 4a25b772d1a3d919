"""The in-memory triangle mesh the preprocessor works on, and the error a bad input raises.

Topology and attributes are kept apart: `positions` holds each distinct position once (welded), and
triangles index *wedges*, the distinct (position, normal, uv) combinations. Two wedges that share a
position sit on an attribute seam (a UV seam or a hard normal edge): topology welds across the seam,
shading keeps both sides.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


class MeshError(ValueError):
    """An input the preprocessor cannot use; the message is one line meant for the user."""


class MeshWarning(UserWarning):
    """Something of an input the preprocessor leaves out or repairs (an unsupported glTF
    extension, duplicated faces, inconsistent winding); the message is one line naming the file,
    and the build goes on. Raised through `warnings.warn`."""


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

    def wedge_attributes(self) -> np.ndarray:
        """(k, 3 or 5) float32: normal and uv side by side, the attributes that define seams."""
        if self.wedge_uv is None:
            return self.wedge_normal
        return np.concatenate([self.wedge_normal, self.wedge_uv], axis=1).astype(np.float32)
