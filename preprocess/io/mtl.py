"""MTL: the material libraries an OBJ names, and what trimesh's MTL reader drops.

An OBJ that names an MTL file beside it (`has_material_library`) is read through trimesh, which
reads the MTL files and their textures (``Kd``, ``map_Kd``); `mtl_extras` then reads here what it
drops: normal maps (``norm``, ``map_Bump``, ``bump``), texture files missing (named), and the
statements not drawn (named).
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from preprocess.io.text import Raw
from preprocess.materials import Texture
from preprocess.mesh import Mesh, mesh_warning

_MTLLIB = re.compile(rb"^[ \t]*mtllib[ \t]+([^\r\n]+)", re.MULTILINE)


def mtl_library_names(raw: Raw) -> list[str]:
    """The MTL file names an OBJ's `mtllib` lines give."""
    if raw.find(b"mtllib") < 0:
        return []  # the common case: a byte search, not a regular expression over every line
    return [m.group(1).strip().decode("utf-8", "replace") for m in _MTLLIB.finditer(raw)]


def has_material_library(raw: Raw, path: Path) -> bool:
    """Whether an OBJ names an MTL file that exists beside it (its materials need trimesh)."""
    return any((path.parent / name).is_file() for name in mtl_library_names(raw))


_MTL_DRAWN = {"newmtl", "kd", "ka", "ks", "ns", "ni", "map_kd", "illum", "map_bump", "bump",
              "norm", "d", "tr", "ke", "tf"}


def _mtl_files(obj: Path) -> list[Path]:
    """The MTL files an OBJ names that exist beside it."""
    return [obj.parent / n for n in mtl_library_names(obj.read_bytes())
            if (obj.parent / n).is_file()]


def mtl_extras(mesh: Mesh, obj: Path, label: str) -> None:
    """Add the normal maps of an OBJ's MTL files (``norm``, ``map_Bump``, ``bump``: a
    tangent-space normal map; a grey one is a height map and is named, not used) to `mesh`'s
    materials, and name in a `MeshWarning` what is left out: a texture file missing, the MTL
    statements not drawn."""
    from preprocess.materials import read_image_file

    by_name = {m.name: m for m in mesh.materials}
    unknown: set[str] = set()
    current = None
    for mtl in _mtl_files(obj):
        for line in mtl.read_text(errors="replace").splitlines():
            words = line.split()
            if not words or words[0].startswith("#"):
                continue
            key = words[0].lower()
            if key == "newmtl":
                current = by_name.get(" ".join(words[1:]))
                continue
            if key not in _MTL_DRAWN:
                unknown.add(words[0])
                continue
            if key not in ("map_kd", "map_bump", "bump", "norm") or len(words) < 2:
                continue
            file = mtl.parent / words[-1]  # options (-bm 1.0 ...) come before the file
            if not file.is_file():
                mesh_warning(f"{label}: texture {words[-1]!r} not found ({mtl.name} {words[0]}); "
                             f"drawn without it")
                continue
            if key == "map_kd" or current is None or mesh.wedge_uv is None:
                continue
            image = read_image_file(file, label)
            if np.ptp(image[..., :3].astype(np.int16), axis=2).max() == 0:
                mesh_warning(f"{label}: {words[0]} {words[-1]!r} is a height map (grey); bump maps "
                             f"are not supported, normal maps are: drawn without it")
                continue
            mesh.textures.append(Texture(image, False, file.name))
            current.normal_texture = len(mesh.textures) - 1
            if "-bm" in words[1:-1]:
                at = words.index("-bm")
                try:
                    current.normal_scale = float(words[at + 1])
                except (IndexError, ValueError):
                    pass
    if unknown:
        mesh_warning(f"{label}: MTL statements not supported, ignored: "
                     f"{', '.join(sorted(unknown))}")

