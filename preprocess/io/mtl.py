"""MTL: the material libraries an OBJ names, and what trimesh's MTL reader drops or reads wrong.

An OBJ that names an MTL file beside it (`has_material_library`) is read through trimesh, which
reads the materials' names and ``Kd``; `mtl_extras` then reads the rest here, with the policy of
the glTF loader (`preprocess.io.gltf_materials`, README "Input rules"): the textures (``map_Kd``,
and the normal maps ``norm``, ``map_Bump``, ``bump``; trimesh is handed only the MTL files'
``newmtl`` and well-formed ``Kd`` lines, `for_trimesh`) with their options (``-bm`` applied to a
normal map, the others named: Tessera has no texture transform), a path relative to the MTL
file's folder, above it or absolute, a name with spaces, in quotes or with ``\\`` separators
(`find_file`); a texture that cannot be read is
named with why, the material, the statement and its line, and the material is drawn without it.
A ``Kd`` that is not numbers is named and drawn as a material without ``Kd`` is; transparency
(``d`` < 1, ``Tr`` > 0) is named and drawn opaque, as glTF's BLEND; a library missing or not
text, a ``usemtl`` no library defines (`has_material_library`, where the file is first read) and
the statements not drawn are named.
"""

from __future__ import annotations

import math
import mmap
import re
from pathlib import Path

import numpy as np

from preprocess.io.text import Raw, is_text, line_number
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


def find_file(folder: Path, name: str) -> Path:
    """The file an MTL or OBJ line names, relative to ``folder`` (or absolute): as written, or
    else without the double quotes some exporters put around it, or else with its ``\\`` read
    as ``/`` (a Windows exporter's ``sub\\tex.png``); as written where none of these is a file
    (the caller names it as written)."""
    tried = [name]
    if len(name) > 2 and name[0] == name[-1] == '"':
        tried.append(name[1:-1])
    tried += [n.replace("\\", "/") for n in tried if "\\" in n]
    return next((folder / n for n in tried if (folder / n).is_file()), folder / name)


def printable(text: str) -> str:
    """Text from a file as a message shows it: control characters escaped, as repr does."""
    return text if text.isprintable() else repr(text)[1:-1]


def has_material_library(raw: Raw, path: Path, label: str | None = None) -> bool:
    """Whether an OBJ names an MTL file that is there beside it and is text (its materials need
    trimesh). ``label``: what is lost is named in `MeshWarning`s, by the caller that reads the
    file first (`read_parts`; an OBJ scene once): the libraries it names that are not there or
    not text, and where none is lost, the `usemtl` names no library defines (their faces are
    drawn with the default material)."""
    names = mtl_library_names(raw)
    files = [find_file(path.parent, n) for n in names]
    missing = [n for n, f in zip(names, files, strict=True) if not f.is_file()]
    binary = [n for n, f in zip(names, files, strict=True) if f.is_file() and not _is_text(f)]
    if label is not None:
        if missing:
            mesh_warning(f"{label}: material librar{'y' if len(missing) == 1 else 'ies'} "
                         f"{', '.join(map(repr, missing))} not found (mtllib); the faces of "
                         f"{'its' if len(missing) == 1 else 'their'} materials drawn with the "
                         f"default material")
        for n in binary:
            mesh_warning(f"{label}: material library {n!r} is not text: drawn with the default "
                         f"material")
        if not missing and not binary:
            _warn_undefined_materials(raw, path, label)
    return len(missing) + len(binary) < len(names)


def _is_text(mtl: Path) -> bool:
    with mtl.open("rb") as f:
        if mtl.stat().st_size == 0:
            return True
        with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as raw:
            return is_text(raw)


_USEMTL = re.compile(rb"^[ \t]*usemtl[ \t]+([^\r\n]*)", re.MULTILINE)


def _warn_undefined_materials(raw: Raw, path: Path, label: str) -> None:
    """Name once, with its first line, each `usemtl` name no `newmtl` of the OBJ's libraries
    defines (trimesh drew its faces with a placeholder material, the fast reader with none)."""
    if raw.find(b"usemtl") < 0:
        return
    defined = {" ".join(words[1:]) for _, text in library_texts(path)
               for words in map(str.split, text.splitlines())
               if words and words[0].lower() == "newmtl"}
    said: set[str] = set()
    for m in _USEMTL.finditer(raw):
        name = m.group(1).decode("utf-8", "replace").strip()
        if name and name not in defined and name not in said:
            said.add(name)
            mesh_warning(f"{label}: usemtl {name!r} (line {line_number(raw, m.start())}): no"
                         f" material library defines it; drawn with the default material")


def library_texts(obj: Path) -> list[tuple[Path, str]]:
    """(file, its text) of each MTL file an OBJ names that is there and is text, in its order
    (bytes that are not UTF-8 read as U+FFFD: trimesh, handed them, lost the whole library)."""
    texts = []
    for mtl in library_files(obj):
        data = mtl.read_bytes()
        if is_text(data):
            texts.append((mtl, data.decode("utf-8", "replace")))
    return texts


def for_trimesh(obj: Path) -> bytes:
    """The MTL text trimesh is handed for an OBJ (one file for all of its libraries: it reads
    the first ``mtllib`` only): the ``newmtl`` lines and the ``Kd`` of one or three numbers, as
    three (the spec's ``Kd 0.5`` is grey), all it reads that Tessera draws. trimesh's
    ``parse_mtl`` dropped the whole library, without a word, on a ``Kd`` of one value, on bytes
    not UTF-8, and took ``map_Kd -s 2 2 tex.png``'s options for the file's name; `mtl_extras`
    reads the rest, and names what is wrong."""
    kept = []
    for _, text in library_texts(obj):
        for line in text.splitlines():
            words = line.split()
            key = words[0].lower() if words else ""
            values = [_number(w) for w in words[1:]]
            if key == "newmtl":
                kept.append(line)
            elif key == "kd" and len(values) in (1, 3) and None not in values:
                kept.append("Kd " + " ".join(words[1:] * (3 // len(values))))
    return "\n".join(kept).encode()


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
    for mtl, text in library_texts(obj):
        reader.read(mtl, text)
    reader.finish()


def library_files(obj: Path) -> list[Path]:
    """The MTL files an OBJ file names that are there, in its order (the file mapped, not read:
    a scan's OBJ can be gigabytes)."""
    with obj.open("rb") as f:
        if obj.stat().st_size == 0:
            return []
        with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as raw:
            names = mtl_library_names(raw)
    return [f for f in (find_file(obj.parent, n) for n in names) if f.is_file()]


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

    def read(self, mtl: Path, text: str) -> None:
        current = None
        for n, line in enumerate(text.splitlines(), 1):
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
        index = self._load(find_file(mtl.parent, name), name, not normal,
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
                         f"{', '.join(sorted(map(printable, self.unknown)))}")
