"""Step 1 of the offline build: read a mesh file and weld it into a `Mesh`.

`load_mesh` reads OBJ, STL, PLY and OFF with the fast readers of `preprocess.io` (one module per
format: `obj`, `stl`, `ply`, `off`, dispatched by `preprocess.io.parts.read_parts`), glTF/GLB
with `preprocess.io.gltf` (checked, its geometry read with numpy and placed by its nodes, its
materials through trimesh), and whatever the fast readers leave out through trimesh
(`preprocess.io.trimesh_path`, with ``process=False``: trimesh neither merges nor drops
anything, so the attributes survive); all give the same raw arrays, which
`preprocess.io.arrays.merge_and_weld` and `mesh_from_arrays` weld and validate (see there:
positions welded by exact value, wedges, normals kept or computed with a crease angle,
degenerate and repeated triangles dropped, winding repaired, a mesh the position grid cannot
hold refused).

Every problem with the input raises `MeshError` with a one-line message that names the file; what
is repaired or left out (repeated faces, inconsistent winding, unsupported glTF extensions that
are only used) is named in a one-line `MeshWarning`.
"""

from __future__ import annotations

import io
import os
import warnings
from pathlib import Path

import numpy as np

from preprocess.config import DEFAULT_CREASE_DEGREES
from preprocess.io import obj, off
from preprocess.io.arrays import merge_and_weld, mesh_from_arrays
from preprocess.io.gltf import gltf_parts, read_gltf_json
from preprocess.io.mtl import mtl_extras
from preprocess.io.obj import absolute_obj_indices
from preprocess.io.parts import read_parts
from preprocess.io.steps import recording, step
from preprocess.io.text import is_text
from preprocess.io.trimesh_path import flatten, load_scene_from, one_line, quiet
from preprocess.mesh import Mesh, MeshError, MeshWarning

__all__ = ["SUPPORTED_SUFFIXES", "load_mesh", "mesh_from_arrays"]

#: File suffixes `load_mesh` accepts (lower case), mapped to trimesh's file type.
SUPPORTED_SUFFIXES: dict[str, str] = {
    ".obj": "obj",
    ".ply": "ply",
    ".stl": "stl",
    ".glb": "glb",
    ".gltf": "gltf",
    ".off": "off",
}


def load_mesh(path: str | os.PathLike, *,
              crease_angle: float = DEFAULT_CREASE_DEGREES,
              texture: str | os.PathLike | None = None,
              steps: dict[str, float] | None = None) -> Mesh:
    """Load a mesh file as one welded, validated `Mesh` named after the file's stem.

    Formats: OBJ, PLY, STL, glTF/GLB and OFF (by suffix, case-insensitive). The common forms of
    OBJ, STL, PLY and OFF are read by the fast readers of `preprocess.io` without importing
    trimesh (about 10x faster, and the same `Mesh` bit for bit); glTF/GLB and anything those
    readers leave out are read by trimesh.

    One asset per file: a file holding a scene (several objects in an OBJ, several meshes or nodes
    in a glTF) is flattened into one mesh, each node's geometry transformed by its world transform
    (positions by the matrix, normals by its inverse transpose, winding reversed where the
    transform mirrors). Point clouds and lines inside a scene that also has triangles are ignored.
    Polygons are triangulated by trimesh on load (a fan per polygon).

    Normals are kept where the file has them (OBJ ``vn``, PLY ``nx ny nz``, glTF ``NORMAL``), else
    computed with edges sharper than ``crease_angle`` degrees kept hard (see `mesh_from_arrays`);
    STL face normals are not used. UVs are kept where present
    (OBJ ``vt``, PLY ``s t``/``u v``, glTF ``TEXCOORD_0``, which trimesh flips to a lower-left
    origin and only reads for primitives with a material). In a scene where only some geometry has
    UVs, the others get uv (0, 0); likewise missing normals are computed.

    Materials (see `preprocess.materials`): glTF metallic-roughness materials with their
    textures, OBJ + MTL (``Kd``, ``map_Kd``), vertex colours (PLY ``red green blue [alpha]``, 8-bit
    sRGB; glTF ``COLOR_0``, linear). Each material's triangles keep their material id (a material
    border is a seam). ``texture``: an image file used as the base-colour texture of every
    material without one (an OBJ with uvs that names no MTL, as scans often come).

    ``steps``: a dict the seconds of the load's steps are added to (`preprocess.io.steps`:
    read, weld, clean, normals, wedges, checks).

    Raises:
        MeshError: one line naming the file: missing file, unsupported or unreadable format, a
            file cut short or holding less than its header promises, no triangles (a point cloud
            or lines), NaN/inf coordinates, face indices out of range, nothing left after
            dropping degenerate triangles, an extent the position grid cannot hold, glTF
            extensions required and not supported.

    Warns:
        MeshWarning: one line naming the file for each thing left out or repaired: repeated
            faces, inconsistent winding, glTF extensions used and not supported, bytes after a
            GLB's or a binary STL's end. Given only once the file has loaded, so that a file
            that fails shows its error alone.
    """
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", MeshWarning)
        image = None
        if texture is not None:
            from preprocess.materials import read_image_file

            image = read_image_file(Path(texture), Path(path).name)
        with recording(steps):
            mesh = _load(path, fast=True, crease_angle=crease_angle, texture=image)
    for w in caught:
        warnings.warn(w.message, w.category, stacklevel=2)  # as the caller's
    return mesh


def _load(path: str | os.PathLike, *, fast: bool,
          crease_angle: float = DEFAULT_CREASE_DEGREES,
          texture: np.ndarray | None = None) -> Mesh:
    """`load_mesh`; ``fast=False`` reads every format through trimesh (the reference that tests
    compare the fast readers with)."""
    p = Path(path)
    label = p.name
    if not p.exists():
        raise MeshError(f"{label}: file not found ({p})")
    if not p.is_file():
        raise MeshError(f"{label}: not a file ({p})")
    suffix = p.suffix.lower()
    file_type = SUPPORTED_SUFFIXES.get(suffix)
    if file_type is None:
        known = ", ".join(sorted(SUPPORTED_SUFFIXES))
        raise MeshError(f"{label}: unsupported file type {suffix or '(no suffix)'!r} ({known})")
    if p.stat().st_size == 0:
        raise MeshError(f"{label}: the file is empty")

    meshes = None
    with step("read"):
        if file_type in ("gltf", "glb"):  # checked, its geometry read by us, the rest by trimesh
            meshes = gltf_parts(p, read_gltf_json(p))
        elif fast:
            try:
                with np.errstate(all="ignore"):
                    meshes = read_parts(p, file_type, label)
            except MeshError:
                raise
            except Exception:
                # A bug in a fast reader must not make a readable file fail: trimesh reads it.
                meshes = None
        if meshes is None:
            meshes = _trimesh_parts(p, file_type, label)
    mesh = merge_and_weld(meshes, name=p.stem, source=label, crease_angle=crease_angle,
                          base_color_texture=texture)
    if file_type == "obj" and mesh.materials:
        mtl_extras(mesh, p, label)
    return mesh


def _trimesh_parts(p: Path, file_type: str, label: str) -> list[tuple]:
    """The geometry of a file read through trimesh, as `flatten` gives it (never empty)."""
    raw = b""
    if file_type in ("obj", "off"):
        raw = p.read_bytes()  # read once for the checks around trimesh's own reading
        (obj if file_type == "obj" else off).before_trimesh(raw, label)
    with quiet():
        try:
            scene = _load_scene(p, file_type, raw)
        except MeshError:
            raise
        except IndexError as exc:
            raise MeshError(f"{label}: face index out of range ({one_line(exc)})") from None
        except Exception as exc:
            why = obj.trimesh_failure(raw) if file_type == "obj" else None
            raise MeshError(
                f"{label}: cannot read as {file_type.upper()}: {why or one_line(exc)}"
            ) from None
        try:
            parts = flatten(scene, label)
        except Exception as exc:
            raise MeshError(f"{label}: cannot read the scene: {one_line(exc)}") from None

    if parts is None or not parts[0]:
        kinds = parts[1] if parts is not None else []
        if kinds:
            raise MeshError(f"{label}: not a triangle mesh: it contains no faces (only "
                            f"{'/'.join(sorted(kinds))})")
        raise MeshError(f"{label}: no mesh found (empty or not a valid {file_type.upper()} file)")
    coloured = any(len(part) > 4 and part[4] is not None for part in parts[0])
    if file_type == "off":
        off.after_trimesh(raw, label, coloured)
    if file_type == "obj":
        return obj.after_trimesh(parts[0], raw, p, label, coloured)
    return parts[0]


def _load_scene(path: Path, file_type: str, data: bytes = b""):
    """trimesh's scene of a file (data: its bytes where the caller read them already)."""
    import trimesh

    source: str | io.BytesIO = str(path)
    if file_type in ("obj", "off", "stl"):
        data = data or path.read_bytes()
        if file_type == "obj" and (absolute := absolute_obj_indices(data, path.name)):
            # trimesh reads a relative index from the end of the whole file's list
            data = absolute
            source = io.BytesIO(data)
        try:
            data.decode("utf-8")
        except UnicodeDecodeError:
            if not is_text(data):
                return load_scene_from(trimesh, source, file_type, path)  # binary STL
            # trimesh guesses another encoding with charset_normalizer (not installed): Latin-1
            # gives every byte a character, and only names are text
            source = io.BytesIO(data.decode("latin-1").encode("utf-8"))
    return load_scene_from(trimesh, source, file_type, path)
