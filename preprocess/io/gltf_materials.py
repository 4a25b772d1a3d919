"""glTF materials and textures, checked before trimesh reads them: what cannot be drawn as the file
asks is named in one `MeshWarning` line and repaired in the JSON that trimesh then reads.

The policy (README, "Input rules"), the same as OBJ + MTL's (`preprocess.io.mtl`): a texture that
cannot be read is named with why and with the materials and slots that use it, and those
materials are drawn without it: an index past the file's textures or images, an image file
missing, a data URI that is not base64 or holds no bytes, bytes Pillow cannot open as an image.
Its reference is removed from the JSON, so that trimesh (which dropped such textures without a
word, and failed the whole file on an image naming a missing buffer view) never meets it; an
image that passes Pillow's checks and then does not decode (a JPEG cut short) is named when it
is decoded (`trimesh_path.materials_of`). A factor that is not numbers (``baseColorFactor
[NaN, 1, 1, 1]``) is read as absent, its default named; vertex colours (COLOR_0) holding NaN are
dropped from their primitive, named with their accessor. Samplers that do not repeat, a second
uv set and an emissive factor lighting a whole surface are named; the material is drawn as it is.
"""

from __future__ import annotations

import base64
import binascii
import io
import json
import math
import urllib.parse
from pathlib import Path

import numpy as np

from preprocess.io.gltf_accessors import Buffers, read_accessor
from preprocess.materials import image_problem, side_problem, texture_pixel_limit, warn_texture
from preprocess.mesh import MeshError, mesh_warning

__all__ = ["check_materials", "material_extensions"]

# (the object holding it, the texture info's key, the slot's name in messages)
_TEXTURE_SLOTS = (("pbrMetallicRoughness", "baseColorTexture", "base colour"),
                  ("pbrMetallicRoughness", "metallicRoughnessTexture", "metallic-roughness"),
                  (None, "normalTexture", "normal"), (None, "emissiveTexture", "emissive"),
                  (None, "occlusionTexture", "occlusion"))
# (the object holding it, the factor, how many numbers, its default: what is drawn without it)
# (holder, key, how many numbers, default, the range glTF gives them)
_FACTORS = (("pbrMetallicRoughness", "baseColorFactor", 4, [1, 1, 1, 1], (0, 1)),
            ("pbrMetallicRoughness", "metallicFactor", 1, 1, (0, 1)),
            ("pbrMetallicRoughness", "roughnessFactor", 1, 1, (0, 1)),
            (None, "emissiveFactor", 3, [0, 0, 0], (0, 1)),
            (None, "alphaCutoff", 1, 0.5, (0, math.inf)),
            ("normalTexture", "scale", 1, 1, (-math.inf, math.inf)),
            ("occlusionTexture", "strength", 1, 1, (0, 1)))
_REPEAT = 10497  # the sampler wrap mode Tessera draws


def material_extensions(tree: dict) -> list[str]:
    """The extensions the materials, their texture slots and the textures use, whether or not
    ``extensionsUsed`` lists them (``KHR_texture_transform`` on a texture slot went unnamed)."""
    found: set[str] = set()
    for mat in _dicts(tree.get("materials")):
        found.update(_extensions(mat))
        for holder in (mat, mat.get("pbrMetallicRoughness")):
            for info in (holder or {}).values() if isinstance(holder, dict) else ():
                if isinstance(info, dict) and "index" in info:
                    found.update(_extensions(info))
    for tex in _dicts(tree.get("textures")):
        found.update(_extensions(tex))
    return sorted(found)


def check_materials(tree: dict, path: Path, label: str, buffers: Buffers) -> bool:
    """Name what the materials ask and Tessera leaves out or cannot read, in `MeshWarning`s,
    and repair ``tree`` (in place) so that trimesh draws what the warnings say; returns whether
    it changed anything. See the module's docstring."""
    # image -> (how it is named, problem): those naming a buffer view the file lacks, first
    images: dict[int, tuple[str, str | None]] = _neutralize_images(tree)
    repaired = _material_references(tree, label) or bool(images)
    uses: dict[tuple[str, str | None], list[str]] = {}
    for mi, mat in enumerate(tree.get("materials") or []):  # objects, all of them
        name = str(mat.get("name") or f"#{mi}")
        repaired |= _repair_factors(mat, name, label)
        for outer, key, role in _TEXTURE_SLOTS:
            holder = (mat.get(outer) or {}) if outer else mat
            info = holder.get(key) if isinstance(holder, dict) else None
            if not isinstance(info, dict):
                continue
            image, problem = _texture_image(tree, info, label, name, role)
            if image is not None:
                if image not in images:
                    images[image] = _image_problem(tree, image, path, buffers)
                if images[image][1] is not None:
                    uses.setdefault(images[image], []).append(f"material {name!r} {role}")
                    problem = images[image][1]
            if problem is not None:
                del holder[key]
                repaired = True
        _warn_glow(mat, name, label)
    for (source, problem), where in uses.items():
        warn_texture(label, source, None if problem == _MISSING else problem, where)
    return _drop_nan_colours(tree, buffers, label) or repaired


_MISSING = "not found"


def _material_references(tree: dict, label: str) -> bool:
    """`MeshError` for a material that is not a JSON object (a broken file); a primitive naming
    a material the file lacks named and drawn with the default material (trimesh refused the
    file for a "face index out of range"). Returns whether one was."""
    materials = tree.get("materials") or []
    if not isinstance(materials, list):
        raise MeshError(f"{label}: its materials are not a JSON list")
    for i, mat in enumerate(materials):
        if not isinstance(mat, dict):
            raise MeshError(f"{label}: material {i} is not a JSON object")
    changed = False
    for mi, mesh in enumerate(_dicts(tree.get("meshes"))):
        for pi, prim in enumerate(_dicts(mesh.get("primitives"))):
            m = prim.get("material")
            if m is not None and not (isinstance(m, int) and not isinstance(m, bool)
                                      and 0 <= m < len(materials)):
                mesh_warning(f"{label}: mesh {mi} {mesh.get('name') or ''!r} primitive {pi} "
                             f"names material {m!r}; the file has {len(materials)}: drawn with "
                             f"the default material")
                del prim["material"]
                changed = True
    return changed


def _texture_image(tree: dict, info: dict, label: str, name: str,
                   role: str) -> tuple[int | None, str | None]:
    """(the image a texture slot draws, a problem of the slot itself or None), its problem
    named here; the sampler and uv set it asks for named where Tessera draws otherwise."""
    where = f"{label}: material {name!r}: its {role} texture"
    if info.get("texCoord", 0) not in (0, None):
        mesh_warning(f"{where} reads uv set {info.get('texCoord')}; drawn with the first")
    textures = tree.get("textures") or []
    ti = info.get("index")
    if not (isinstance(ti, int) and not isinstance(ti, bool) and 0 <= ti < len(textures)
            and isinstance(textures[ti], dict)):
        return _slot_problem(where, f"is texture {ti!r}; the file has {len(textures)}")
    tex = textures[ti]
    samplers = tree.get("samplers") or []
    si = tex.get("sampler")
    samp = samplers[si] if isinstance(si, int) and 0 <= si < len(samplers) else {}
    if si is not None and not (isinstance(si, int) and not isinstance(si, bool)
                               and 0 <= si < len(samplers) and isinstance(samp, dict)):
        mesh_warning(f"{where} (texture {ti}) names sampler {si!r}; the file has "
                     f"{len(samplers)}: drawn repeating, filtered")
        del tex["sampler"]
        samp = {}
    if isinstance(samp, dict) and {samp.get("wrapS", _REPEAT), samp.get("wrapT", _REPEAT)} != {
            _REPEAT}:
        mesh_warning(f"{where} clamps or mirrors; drawn repeating")
    # trimesh's order: an EXT_texture_webp image first, then the core one
    src = ((tex.get("extensions") or {}).get("EXT_texture_webp") or {}).get("source",
                                                                            tex.get("source"))
    images = tree.get("images") or []
    if src is None:
        others = ", ".join(_extensions(tex))
        return _slot_problem(where, f"(texture {ti}) has no image Tessera reads"
                             + (f" (only {others})" if others else ""))
    if not (isinstance(src, int) and 0 <= src < len(images) and isinstance(images[src], dict)):
        return _slot_problem(where, f"(texture {ti}) names image {src!r}; the file has "
                             f"{len(images)}")
    return src, None


def _slot_problem(where: str, problem: str) -> tuple[None, str]:
    mesh_warning(f"{where} {problem}; drawn without it")
    return None, problem


def _image_problem(tree: dict, index: int, gltf: Path, buffers: Buffers
                   ) -> tuple[str, str | None]:
    """(how the image is named, why it cannot be read or None): the checks trimesh makes before
    it decodes, and Pillow opening it (its header: the decoding is `image_rgba`'s)."""
    img = tree["images"][index]
    uri = img.get("uri")
    embedded = _embedded(index, img)
    if img.get("mimeType") == "image/ktx2":
        return embedded if uri is None else repr(uri), "a KTX2 image, not supported"
    if isinstance(uri, str) and not uri.startswith("data:"):
        file = _path_of(gltf, uri)
        if not file.is_file():
            return repr(uri), _MISSING
        return repr(uri), _open_problem(file)
    if isinstance(uri, str):
        at = uri.find("base64,")
        if at < 0:
            return embedded, "a data URI that is not base64"
        try:  # as trimesh decodes it: characters outside base64 skipped
            raw = base64.b64decode(uri[at + 7 :])
        except (binascii.Error, ValueError):
            raw = b""
        if not raw:
            return embedded, "its data URI holds no bytes (or is not base64)"
    elif isinstance(img.get("bufferView"), int):
        raw = buffers.view(img["bufferView"])
        if not raw:
            return embedded, f"its buffer view {img['bufferView']} holds no bytes"
    else:
        return embedded, "it has neither a uri nor a buffer view"
    return embedded, _open_problem(io.BytesIO(raw))


def _path_of(gltf: Path, uri: str) -> Path:
    """The file a glTF's relative URI names (percent-decoded, relative to the glTF's folder,
    above it too), as `trimesh_path.file_resolver` reads it."""
    return gltf.parent / urllib.parse.unquote(uri.strip())


def _open_problem(source) -> str | None:
    """Why an image (a path or a file object) cannot be a texture, or None: Pillow cannot open
    it, it is larger than `MAX_TEXTURE_SIDE`, or Pillow's check of its data fails (a PNG cut
    short; without decoding it, which is `image_rgba`'s, where what this misses is named)."""
    from PIL import Image

    try:
        with texture_pixel_limit(), Image.open(source) as img:
            img.verify()
            return side_problem(*img.size)
    except Exception as exc:
        return image_problem(exc)


def _neutralize_images(tree: dict) -> dict[int, tuple[str, str]]:
    """Images naming a buffer view the file lacks, made empty: trimesh decodes every image, used
    or not, and such a one failed the whole file. Returns them as `_image_problem` names them
    (their uses are named with the textures')."""
    views = len(tree.get("bufferViews") or [])
    found = {}
    for i, img in enumerate(tree.get("images") or []):
        if isinstance(img, dict) and "bufferView" in img and not (
                isinstance(img["bufferView"], int) and 0 <= img["bufferView"] < views):
            found[i] = (_embedded(i, img), f"it names buffer view {img['bufferView']!r}; the "
                                           f"file has {views}")
            tree["images"][i] = {k: v for k, v in img.items() if k == "name"}
    return found


def _embedded(index: int, img: dict) -> str:
    return f"image {index}" + (f" {img['name']!r}" if img.get("name") else "") + " (embedded)"


def _repair_factors(mat: dict, name: str, label: str) -> bool:
    """Factors that are not the numbers glTF says removed (read as absent: their defaults),
    and numbers outside glTF's range clamped into it (a metallic factor of 2 lit as no metal
    can), each named; returns whether any was."""
    changed = False
    for outer, key, n, default, (low, high) in _FACTORS:
        holder = (mat.get(outer) or {}) if outer else mat
        if not isinstance(holder, dict) or key not in holder:
            continue
        v = holder[key]
        values = v if isinstance(v, list) and n > 1 else [v]
        what = f"{outer}.{key}" if outer in ("normalTexture", "occlusionTexture") else key
        if len(values) == n and all(_finite(x) for x in values):
            if all(low <= x <= high for x in values):
                continue
            clamped = [min(max(x, low), high) for x in values]
            holder[key] = clamped if n > 1 else clamped[0]
            mesh_warning(f"{label}: material {name!r}: {what} {json.dumps(v)} is outside "
                         f"glTF's {low:g}..{high:g}; drawn clamped, {json.dumps(holder[key])}")
            changed = True
            continue
        mesh_warning(f"{label}: material {name!r}: {what} {json.dumps(v)} is not "
                     f"{'a number' if n == 1 else f'{n} numbers'}; drawn with the default, "
                     f"{json.dumps(default)}")
        del holder[key]
        changed = True
    return changed


def _finite(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def _warn_glow(mat: dict, name: str, label: str) -> None:
    emissive = mat.get("emissiveFactor")
    if isinstance(emissive, list) and any(x > 0 for x in emissive) and (
            "emissiveTexture" not in mat):
        mesh_warning(f"{label}: material {name!r}: emissive factor {tuple(emissive)} "
                     f"without an emissive texture: the whole surface glows (as the file says)")


def _drop_nan_colours(tree: dict, buffers: Buffers, label: str) -> bool:
    """COLOR_0 attributes holding NaN removed from their primitives, each named with its
    accessor: trimesh read them as black where the primitive has no material and white where it
    has one; without them a primitive is drawn with its material's colour alone."""
    changed = False
    accessors = tree.get("accessors") or []
    for mi, mesh in enumerate(_dicts(tree.get("meshes"))):
        for prim in _dicts(mesh.get("primitives")):
            attrs = prim.get("attributes")
            ai = attrs.get("COLOR_0") if isinstance(attrs, dict) else None
            acc = accessors[ai] if isinstance(ai, int) and 0 <= ai < len(accessors) else None
            if not isinstance(acc, dict) or acc.get("componentType") != 5126:
                continue  # only floats hold NaN
            colours = read_accessor(tree, buffers, ai, label)  # its stride and sparse block
            bad = int(np.isnan(colours).any(axis=1).sum())
            if bad:
                mesh_warning(f"{label}: accessor {ai} (COLOR_0 of mesh {mi} "
                             f"{mesh.get('name') or ''!r}): {bad:,} of {len(colours):,} colours "
                             f"are not numbers (NaN); drawn without vertex colours")
                del attrs["COLOR_0"]
                changed = True
    return changed


def _dicts(items) -> list[dict]:
    return [x for x in items if isinstance(x, dict)] if isinstance(items, list) else []


def _extensions(obj: dict) -> list[str]:
    ext = obj.get("extensions")
    return [str(e) for e in ext] if isinstance(ext, dict) else []
