"""The fast readers of OBJ, STL, PLY and OFF, by file type: `read_parts`.

`load_mesh` used to read every file through trimesh: importing it costs ~0.5 s and its OBJ parser
~0.35 s for igea (269k triangles), more than the build itself. The readers of
`preprocess.io.obj`, `.stl`, `.ply` and `.off` parse the common forms of the four text/binary
formats with numpy and one numba kernel per text layout (OBJ lines, whitespace tables), and return
the same per-geometry arrays as `preprocess.io.trimesh_path.flatten` returns for a trimesh scene,
so that `mesh_from_arrays` builds a bit-identical `Mesh` (same positions, wedge order, triangles,
normals, uvs). Where trimesh's result depends on one of its quirks, the quirk is reproduced, not
fixed; where trimesh fails or reads wrong, each module says what is read instead.

A file no reader can read right raises `MeshError`, saying what is wrong, instead of going to
trimesh: bytes no text file holds in a text format, a file cut inside a line or a record, a body
holding fewer rows than its header promises. Anything else the readers do not know returns None,
and `load_mesh` hands the file to trimesh as before. The numba kernels are compiled once and
cached on disk (``cache=True``); loading one from the cache costs 5-15 ms, after numba's own
first-call set-up (~0.3 s, which the build would pay anyway). Measured on the 2-core machine:
igea 0.04 s to read (trimesh: 0.35 s plus 0.5 s of import), a 1M-triangle OBJ 0.2 s, the same as
binary PLY 0.01 s.
"""

from __future__ import annotations

import mmap
from pathlib import Path

from preprocess.io.mtl import has_material_library
from preprocess.io.obj import read_obj
from preprocess.io.off import read_off
from preprocess.io.ply import read_ply
from preprocess.io.stl import read_stl
from preprocess.io.text import Part

_READERS = {"obj": read_obj, "stl": read_stl, "ply": read_ply, "off": read_off}


def read_parts(path: Path, file_type: str, label: str) -> list[Part] | None:
    """The geometry of a mesh file as trimesh would give it, or None when trimesh must read it.

    Args:
        path: an existing, non-empty file.
        file_type: ``"obj"``, ``"stl"``, ``"ply"``, ``"off"`` (others give None).
        label: how error messages name the file.

    Raises:
        MeshError: one line naming the file: face indices out of range, or a file that is not
            of its format, is cut short or holds less than its header says (see each
            reader's module). Anything else these readers leave out returns None, for trimesh.

    Warns:
        MeshWarning: what is read anyway (a binary STL's count of 0, bytes after its end), or
            left out (OBJ uv and normal indices out of range, faces of fewer than 3 corners, an
            MTL library it names and is not there).
    """
    reader = _READERS.get(file_type)
    if reader is None:
        return None
    if path.stat().st_size == 0:
        return None  # nothing to map
    with path.open("rb") as f:
        # mapped, not read: no copy of the file, and its pages come from the page cache as the
        # parser reaches them (arrays made from it keep the map alive)
        raw = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    if file_type == "obj" and has_material_library(raw, path, label):
        return None  # materials: trimesh reads the MTL files and their textures
    return reader(raw, label)

