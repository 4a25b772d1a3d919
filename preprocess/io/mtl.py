"""MTL: the material libraries an OBJ names, and what trimesh's MTL reader drops or reads wrong.

An OBJ that names an MTL file beside it (`has_material_library`) is read through trimesh, which
reads the materials' names and ``Kd``; `mtl_extras` then reads the rest here, with the policy of
the glTF loader (`preprocess.io.gltf_materials`, README "Input rules"): the textures (``map_Kd``,
and the normal maps ``norm``, ``map_Bump``, ``bump``; trimesh is handed the MTL files without
their ``map_Kd`` lines, `trimesh_path.file_resolver`) with their options (``-bm`` applied to a
normal map, the others named: Tessera has no texture transform), a path relative to the MTL
file's folder, above it or absolute, and a name with spaces; a texture that cannot be read is
named with why, the material, the statement and its line, and the material is drawn without it.
A ``Kd`` that is not numbers is named and drawn as a material without ``Kd`` is; transparency
(``d`` < 1, ``Tr`` > 0) is named and drawn opaque, as glTF's BLEND; a library missing and the
statements not drawn are named (`has_material_library`, where the file is first read).
"""

from __future__ import annotations

import math
import mmap
import re
from pathlib import Path

import numpy as np

from preprocess.io.text import Raw
from preprocess.materials import (
    Material,
    Texture,
    TextureNotFoundError,
    TextureError,
    load_image,
    warn_blending,
    warn_texture,
    warn_textures_without_uvs,
)
from preprocess.mesh import Mesh, mesh_warning

_MTLLIB = re.compile(rb"^[ \t]*mtllib[ \t]+([^\r\n]+)", re.MULTILINE)


def mtl_library_names(raw: Raw) -> list[str]:
    """The MTL file names an OBJ's `mtllib` lines give."""
    if raw.find(b"mtllib") < 0:
        return []  # the common case: a byte search, not a regular expression over every line
    return [m.group(1).strip().decode("utf-8", "replace") for m in _MTLLIB.finditer(raw)]


def has_material_library(raw: Raw, path: Path, label: str | None = None) -> bool:
    """Whether an OBJ names an MTL file that exists beside it (its materials need trimesh).
    ``label``: those it names and are not there are named in a `MeshWarning` (their materials
    are drawn as the default material: the caller reads each file once, `read_parts`)."""
    names = mtl_library_names(raw)
    missing = [n for n in names if not (path.parent / n).is_file()]
    if missing and label is not None:
        mesh_warning(f"{label}: material librar{'y' if len(missing) == 1 else 'ies'} "
                     f"{', '.join(map(repr, missing))} not found (mtllib); the faces of "
                     f"{'its' if len(missing) == 1 else 'their'} materials drawn with the "
                     f"default material")
    return len(missing) < len(names)


_MTL_DRAWN = {"newmtl", "kd", "ka", "ks", "ns", "ni", "map_kd", "illum", "map_bump", "bump",
              "norm", "d", "tr", "ke", "tf"}
_NORMAL_MAPS = {"norm", "map_bump", "bump"}
# the options of a texture statement and the values each takes ("on"/"off" for the switches;
# -o, -s and -t take one to three numbers)
_OPTION_VALUES = {"-blendu": 1, "-blendv": 1, "-bm": 1, "-boost": 1, "-cc": 1, "-clamp": 1,
                  "-imfchan": 1, "-mm": 2, "-texres": 1, "-type": 1, "-o": 3, "-s": 3, "-t": 3}
_SWITCHES = {"-blendu", "-blendv", "-cc", "-clamp"}


def texture_statement(line: str) -> tuple[list[list[str]], str]:
    """(the options of an MTL texture statement, each [option, values...]; the file it names,
    '' if none). The file is the rest of the line after the options, so that a name with spaces
    is one name; an option never takes the line's last word (the file's name)."""
    words = list(re.finditer(r"\S+", line))
    options: list[list[str]] = []
    k = 1
    while k < len(words) - 1 and re.fullmatch(r"-[A-Za-z]\w*", words[k].group()):
        option = [words[k].group()]
        name = option[0].lower()
        most = _OPTION_VALUES.get(name, 3)
        k += 1
        while len(option) <= most and k < len(words) - 1:
            value = words[k].group()
            numeric = name in ("-o", "-s", "-t") or name not in _OPTION_VALUES
            if (numeric and _number(value) is None) or (
                    name in _SWITCHES and value.lower() not in ("on", "off")):
                break
            option.append(value)
            k += 1
        options.append(option)
    return options, line[words[k].start():].strip() if k < len(words) else ""


def _number(text: str) -> float | None:
    """A finite number, or None."""
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def mtl_extras(mesh: Mesh, obj: Path, label: str) -> None:
    """Read what trimesh leaves of an OBJ's MTL files into `mesh`'s materials (see the module's
    docstring), naming in `MeshWarning`s what is left out."""
    reader = _MtlReader(mesh, label)
    for mtl in library_files(obj):
        reader.read(mtl)
    reader.finish()


def library_files(obj: Path) -> list[Path]:
    """The MTL files an OBJ file names that are there, in its order (the file mapped, not read:
    a scan's OBJ can be gigabytes)."""
    with obj.open("rb") as f:
        if obj.stat().st_size == 0:
            return []
        with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as raw:
            names = mtl_library_names(raw)
    return [obj.parent / n for n in names if (obj.parent / n).is_file()]


class _MtlReader:
    """What `mtl_extras` reads across an OBJ's MTL files into its mesh's materials (those its
    faces use: the others are not drawn), and what it names once at the end."""

    def __init__(self, mesh: Mesh, label: str):
        self.mesh, self.label = mesh, label
        self.by_name = {m.name: m for m in mesh.materials}
        self.unknown: set[str] = set()
        self.without_uvs = False
        # a texture file read as colour (sRGB) or not -> its index in mesh.textures, or why not
        self.loaded: dict[tuple[Path, bool], int | str | None] = {}
        self.unread: dict[tuple[str, str | None], list[str]] = {}  # (name, problem) -> uses
        self.blending: set[str] = set()

    def read(self, mtl: Path) -> None:
        current = None
        for n, line in enumerate(mtl.read_text(errors="replace").splitlines(), 1):
            words = line.split()
            if not words or words[0].startswith("#"):
                continue
            key = words[0].lower()
            if key == "newmtl":
                current = self.by_name.get(" ".join(words[1:]))
            elif key not in _MTL_DRAWN:
                self.unknown.add(words[0])
            elif current is None:
                continue  # before any newmtl, or a material no face uses
            elif key == "kd":
                self._kd(current, words, f"{mtl.name} line {n}")
            elif key in ("d", "tr"):
                self._opacity(current, words, f"{mtl.name} line {n}")
            elif key == "map_kd" or key in _NORMAL_MAPS:
                self._texture(current, line, mtl, f"{mtl.name} line {n}")

    def _kd(self, material: Material, words: list[str], where: str) -> None:
        """A Kd that is not one or three numbers: named, and drawn as a material without Kd
        (trimesh read NaN as black and words as its default)."""
        values = [_number(w) for w in words[1:]]
        if len(values) in (1, 3) and None not in values:
            return
        import trimesh

        grey = tuple(float(x) / 255 for x in trimesh.visual.material.SimpleMaterial().diffuse[:3])
        material.base_color = (*grey, material.base_color[3])
        mesh_warning(f"{self.label}: material {material.name!r}: Kd "
                     f"{' '.join(words[1:])!r} is not three numbers; drawn with the default, Kd "
                     f"{' '.join(f'{x:g}' for x in grey)} ({where})")

    def _opacity(self, material: Material, words: list[str], where: str) -> None:
        """d < 1 or Tr > 0 named as glTF's BLEND is (drawn opaque); one that is not a number
        named too."""
        value = _number(words[-1]) if len(words) > 1 else None
        said = f"{words[0]} {' '.join(words[1:])}"
        if value is None:
            mesh_warning(f"{self.label}: material {material.name!r}: {said!r} is not a number; "
                         f"drawn opaque ({where})")
        elif (value < 1 if words[0].lower() == "d" else value > 0) and (
                material.name not in self.blending):
            self.blending.add(material.name)
            warn_blending(self.label, material.name, f"{said}, {where}")

    def _texture(self, material: Material, line: str, mtl: Path, where: str) -> None:
        """A texture statement: its file read (relative to the MTL file, above it too, or
        absolute) and set on the material; its options applied (-bm on a normal map) or named."""
        statement = line.split()[0]
        normal = statement.lower() in _NORMAL_MAPS
        options, name = texture_statement(line)
        ignored = [o for o in options if not (normal and o[0].lower() == "-bm")]
        if ignored:
            moved = any(o[0].lower() in ("-o", "-s", "-t") for o in ignored)
            mesh_warning(f"{self.label}: material {material.name!r}: {statement} options not "
                         f"supported, ignored: {', '.join(' '.join(o) for o in ignored)} "
                         f"({where}{'; the texture is drawn unmoved and unscaled' * moved})")
        if not name:
            mesh_warning(f"{self.label}: material {material.name!r}: {statement} names no file "
                         f"({where}); drawn without a texture there")
            return
        if self.mesh.wedge_uv is None:
            self.without_uvs = True
            return
        index = self._load(mtl.parent / name, name, not normal,
                           f"material {material.name!r} {statement}, {where}")
        if index is None:
            return
        if not normal:
            material.base_color_texture = index
            return
        image = self.mesh.textures[index].image
        if np.ptp(image[..., :3].astype(np.int16), axis=2).max() == 0:
            mesh_warning(f"{self.label}: material {material.name!r}: {statement} {name!r} is a "
                         f"height map (grey); bump maps are not supported, normal maps are: "
                         f"drawn without it")
            return
        material.normal_texture = index
        scale = [o for o in options if o[0].lower() == "-bm" and len(o) > 1]
        if scale and _number(scale[-1][1]) is not None:
            material.normal_scale = float(scale[-1][1])

    def _load(self, file: Path, name: str, srgb: bool, use: str) -> int | None:
        """The index in mesh.textures of a texture file, read once for all its uses; None
        where it cannot be read (its uses gathered for one warning)."""
        key = (file, srgb)
        if key not in self.loaded:
            try:
                image = load_image(file)
            except TextureNotFoundError:
                self.loaded[key] = None
            except TextureError as e:
                self.loaded[key] = str(e)
            else:
                self.loaded[key] = len(self.mesh.textures)
                self.mesh.textures.append(Texture(image, srgb, file.name))
        got = self.loaded[key]
        if isinstance(got, int):
            return got
        self.unread.setdefault((repr(name), got), []).append(use)
        return None

    def finish(self) -> None:
        for (name, problem), uses in self.unread.items():
            warn_texture(self.label, name, problem, uses)
        if self.without_uvs:
            warn_textures_without_uvs(self.label)
        if self.unknown:
            mesh_warning(f"{self.label}: MTL statements not supported, ignored: "
                         f"{', '.join(sorted(self.unknown))}")
