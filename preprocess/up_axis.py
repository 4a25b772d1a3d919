"""The source's up axis. Tessera's world is Y-up: the framing camera, the `iso` and `top` views
and `Renderer.add_grid`'s XZ plane assume it. Many scanners and CAD tools write Z-up, and such a
mesh would lie on its side; the build turns it Y-up once, before anything is derived from it
(`preprocess.build.build_asset`), so that the DAG, the BVH, the pages, the bounds and whatever
frames them see a Y-up mesh (docs/ARCHITECTURE.md "Offline" step 1)."""

from __future__ import annotations

import dataclasses
import os
import warnings
from pathlib import Path

import numpy as np

from preprocess.config import UP_AXES
from preprocess.mesh import Mesh, MeshWarning

Y_UP_SUFFIXES = (".gltf", ".glb")  # formats whose specification says Y-up

# (x, y, z) -> (x, z, -y): a quarter turn about +X that takes +Z to +Y and -Y (a Z-up tool's
# front) to +Z (Tessera's `front` view). Its determinant is +1: a rotation keeps handedness and
# the counter-clockwise winding of front faces. Swapping y and z instead (determinant -1) would
# mirror the mesh and turn every triangle inside out.
Z_UP_TO_Y_UP = np.array([[1, 0, 0], [0, 0, 1], [0, -1, 0]], np.float32)


def to_y_up(mesh: Mesh, up: str) -> Mesh:
    """`mesh`, whose up axis is `up` (one of `UP_AXES`), turned Y-up.

    "y": `mesh` itself, untouched. "z": a new Mesh whose `positions` (n, 3) float32 and
    `wedge_normal` (k, 3) float32 are rotated by `Z_UP_TO_Y_UP`; every other field (triangles,
    wedges, uvs, name, ...) is shared with `mesh`, which is not modified. The rotation only
    moves and negates coordinates, so it is exact: no position moves off its float32 value and
    welded positions stay welded. (A field holding directions added to Mesh must be rotated
    here too.)"""
    if up not in UP_AXES:
        raise ValueError(f"up axis must be one of {', '.join(UP_AXES)}, not {up!r}")
    if up == "y":
        return mesh
    return dataclasses.replace(mesh, positions=_z_up_to_y_up(mesh.positions),
                               wedge_normal=_z_up_to_y_up(mesh.wedge_normal))


def _z_up_to_y_up(a: np.ndarray) -> np.ndarray:
    """(n, 3) rows (x, y, z) -> (x, z, -y), in a's dtype; as `a @ Z_UP_TO_Y_UP.T`, exactly."""
    out = np.zeros_like(a)
    out[:, 0] = a[:, 0]
    out[:, 1] = a[:, 2]
    # + 0.0 makes -0.0 (from y = 0) plain 0.0: the bits of a rotated file do not depend on it
    np.add(np.negative(a[:, 1]), 0.0, out=out[:, 2])
    return out


def warn_against_spec(path: str | os.PathLike, up: str) -> None:
    """A one-line `MeshWarning` where `up` contradicts the file format: glTF is Y-up by its
    specification, but an exporter may have written Z-up anyway, so the rotation is applied as
    asked; the warning says so in case it was a slip."""
    p = Path(path)
    if up != "y" and p.suffix.lower() in Y_UP_SUFFIXES:
        warnings.warn(f"{p.name}: glTF is Y-up by its specification; turning it from "
                      f"{up.upper()}-up to Y-up as asked (--up {up})", MeshWarning, stacklevel=2)
