"""glTF and GLB: the container and the JSON checked, the geometry read, and what the file asks
that is not drawn, named.

`read_gltf_json` checks the file first (`_check_gltf`): a GLB container that is not one or is cut
short, JSON that does not parse, an index of the geometry or the scene past its array or a
value of the wrong type (`gltf_refs`), extensions required and not known, buffers missing or
too short, accessors whose layout glTF forbids or that read past their views
(`gltf_accessors`), lights that cannot be drawn each raise `MeshError` with one line;
extensions used and not known (listed in ``extensionsUsed`` or not), animations, skins,
cameras, lights, other scenes, points and lines are named in `MeshWarning`s, and so is what the
materials ask and Tessera cannot draw (textures that cannot be read, references past the
materials, textures, images or samplers, factors that are not numbers, a second uv set,
clamping samplers) by `preprocess.io.gltf_materials`, which repairs the JSON to match.

`gltf_parts` (`load_mesh`'s glTF reader) places every mesh of the scene by our own walk of the
node tree (`gltf_nodes`) and `mesh_from_gltf_json` reads one mesh of a scene
(`preprocess.scene_import`); both read the geometry with numpy (`gltf_primitives`: strides,
sparse accessors, normalized integers, strips and fans) and hand trimesh a GLB of it tightly
packed, which trimesh reads with the file's materials, textures and colours.
"""

from __future__ import annotations

import io
import json
import math
import struct
import urllib.parse
from pathlib import Path

from preprocess.config import DEFAULT_CREASE_DEGREES
from preprocess.io.arrays import merge_and_weld
from preprocess.io.gltf_accessors import (
    QUANTIZATION,
    Buffers,
    check_accessors,
    decode_data_uri,
)
from preprocess.io.gltf_nodes import default_nodes, drawn, flat_tree, placements, walk
from preprocess.io.gltf_primitives import DRACO, draco_available, packed_tree
from preprocess.io.gltf_materials import check_materials, material_extensions
from preprocess.io.gltf_refs import check_refs
from preprocess.io.trimesh_path import flatten, load_scene_from, one_line, quiet
from preprocess.mesh import Mesh, MeshError, mesh_warning

_GLB_JSON = 0x4E4F534A  # chunk types
_GLB_BIN = 0x004E4942
# extensions that change nothing this loader reads (positions, normals, first uvs, indices, node
# transforms): materials, lights, texture formats, metadata
_GLTF_HARMLESS = frozenset({"KHR_lights_punctual", "KHR_texture_basisu", "EXT_texture_webp",
                            "EXT_texture_avif", "KHR_xmp_json_ld", "KHR_xmp",
                            "EXT_lights_image_based", "KHR_animation_pointer",
                            "MSFT_texture_dds", "KHR_techniques_webgl"})


def _gltf_extension_ok(name: str) -> bool:
    if name == DRACO:  # decoded through DracoPy, when installed (gltf_primitives)
        return draco_available()
    if name == QUANTIZATION:  # integer attributes, read by gltf_accessors
        return True
    return name in _GLTF_HARMLESS or (name.startswith("KHR_materials_")
                                      and name not in _GLTF_MATERIAL_DRAWN)


# material extensions drawn with the core model and named in a warning (what they add is left out)
_GLTF_MATERIAL_DRAWN = frozenset({"KHR_materials_emissive_strength", "KHR_materials_unlit",
                                  "KHR_materials_transmission", "KHR_materials_clearcoat",
                                  "KHR_materials_sheen", "KHR_materials_specular",
                                  "KHR_materials_ior", "KHR_materials_volume",
                                  "KHR_materials_iridescence", "KHR_materials_anisotropy",
                                  "KHR_materials_pbrSpecularGlossiness", "KHR_texture_transform"})


def _check_gltf(path: Path, file_type: str, label: str) -> dict:
    """Raise `MeshError` for a glTF/GLB file trimesh cannot read right: a GLB container that is
    not one or is cut short, JSON that does not parse, extensions it requires and trimesh does not
    know, buffers missing or too short, accessors reading past their views. Extensions used but
    not required and not known are named in a `MeshWarning` (their content is ignored). Returns
    the JSON."""
    binary = -1  # bytes of the GLB's BIN chunk
    if file_type == "glb":
        with path.open("rb") as f:  # the header and the JSON: the BIN chunk is trimesh's to read
            text, binary = _glb_json(f, path.stat().st_size, label)
    else:
        text = path.read_bytes()
    try:
        tree = json.loads(text)
    except json.JSONDecodeError as e:
        raise MeshError(f"{label}: invalid JSON: {e.msg} (line {e.lineno}, column {e.colno})"
                        ) from None
    except UnicodeDecodeError as e:
        raise MeshError(f"{label}: invalid JSON: not UTF-8 text (byte {e.start})") from None
    if not isinstance(tree, dict):
        raise MeshError(f"{label}: not a glTF file (its JSON is not an object)")
    version = str((tree.get("asset") or {}).get("version", "2.0"))
    if not version.startswith("2"):
        raise MeshError(f"{label}: glTF version {version} (only 2.0 is supported)")
    required = [str(e) for e in tree.get("extensionsRequired") or []]
    if DRACO in required and not _gltf_extension_ok(DRACO):
        raise MeshError(f"{label}: Draco-compressed meshes ({DRACO}) are not supported "
                        f"(install DracoPy to read them)")
    missing = [e for e in required if not _gltf_extension_ok(e)
               and e not in _GLTF_MATERIAL_DRAWN]
    if missing:
        raise MeshError(f"{label}: requires glTF extensions that are not supported: "
                        f"{', '.join(missing)}")
    used = [str(e) for e in tree.get("extensionsUsed") or []]
    used += [e for e in material_extensions(tree) if e not in used]  # used, and not listed
    ignored = [e for e in used if e not in required and not _gltf_extension_ok(e)
               and e not in _GLTF_MATERIAL_DRAWN]
    if ignored:
        mesh_warning(f"{label}: glTF extensions not supported, ignored: {', '.join(ignored)}")
    drawn = [e for e in used if e in _GLTF_MATERIAL_DRAWN]
    if drawn:
        mesh_warning(f"{label}: glTF extensions not supported, drawn with the core material model: "
                     f"{', '.join(drawn)}")
    check_refs(tree, label)  # every index and type, once, before anything follows them
    _check_gltf_buffers(tree, path, binary, label)
    check_accessors(tree, label)
    # the GLB's BIN chunk read only if an embedded image or colour needs checking
    check_materials(tree, path, label, Buffers(
        path, tree, (lambda: _glb_binary(path)) if binary >= 0 else None, label))
    _check_gltf_scene_features(tree, label)
    return default_nodes(tree, label)


def _check_gltf_scene_features(tree: dict, label: str) -> None:
    """A `MeshWarning` naming what of a glTF scene is not drawn: animations, skins and morph
    targets (the meshes are drawn in their rest pose), cameras, punctual lights, scenes other
    than the default one, points and lines."""
    left = []
    if tree.get("animations"):
        left.append(f"{len(tree['animations'])} animations")
    if tree.get("skins"):
        left.append(f"{len(tree['skins'])} skins (drawn in the rest pose)")
    meshes = [m for m in tree.get("meshes") or [] if isinstance(m, dict)]
    morphs = sum(1 for m in meshes for p in m.get("primitives") or []
                 if isinstance(p, dict) and p.get("targets"))
    if morphs:
        left.append(f"morph targets on {morphs} primitives (drawn unmorphed)")
    if tree.get("cameras"):
        left.append(f"{len(tree['cameras'])} cameras")
    lights = _check_lights(tree, label)
    if lights:  # a scene (preprocess.scene_import.scene_lights) names its own
        mesh_warning(f"{label}: lights not drawn: {lights} (a file of one mesh keeps none; --sun "
                     f"sets the sun)")
    scenes = tree.get("scenes") or []
    if len(scenes) > 1:
        left.append(f"{len(scenes) - 1} scenes besides the default one")
    modes = {p.get("mode", 4) for m in meshes for p in m.get("primitives") or []
             if isinstance(p, dict)}
    if modes - {4, 5, 6}:
        left.append("points and lines")
    if left:
        mesh_warning(f"{label}: not drawn: {', '.join(left)}")


def _check_lights(tree: dict, label: str) -> int:
    """`MeshError` for a KHR_lights_punctual light that cannot be drawn right (an unknown type,
    a NaN, infinite or negative intensity, a range that is not > 0, a colour that is not three
    finite numbers >= 0, a spot's cone angles out of order or past pi/2, a node naming a light
    the file lacks); returns how many lights the file has."""
    ext = (tree.get("extensions") or {}).get("KHR_lights_punctual") or {}
    lights = ext.get("lights") or []
    if not isinstance(lights, list):
        raise MeshError(f"{label}: KHR_lights_punctual.lights is not a list")
    for k, light in enumerate(lights):
        where = f"{label}: light {k}"
        if not isinstance(light, dict) or light.get("type") not in ("directional", "spot",
                                                                    "point"):
            raise MeshError(f"{where}: type must be directional, spot or point")
        for key in ("intensity", "range"):
            v = light.get(key, 1.0)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not (
                    math.isfinite(v) and (v > 0 if key == "range" else v >= 0)):
                raise MeshError(f"{where}: {key} {v!r} is not a finite number "
                                f"{'> 0' if key == 'range' else '>= 0'}")
        if light["type"] == "spot":
            cone = light.get("spot", {})
            inner = cone.get("innerConeAngle", 0.0) if isinstance(cone, dict) else None
            outer = cone.get("outerConeAngle", math.pi / 4) if isinstance(cone, dict) else None
            if not (all(isinstance(a, (int, float)) and not isinstance(a, bool)
                        for a in (inner, outer)) and 0 <= inner < outer <= math.pi / 2):
                raise MeshError(f"{where}: spot cone angles {inner!r}, {outer!r} are not "
                                f"0 <= innerConeAngle < outerConeAngle <= pi/2")
        c = light.get("color", [1.0, 1.0, 1.0])
        if not (isinstance(c, list) and len(c) == 3 and all(
                isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)
                and x >= 0 for x in c)):
            raise MeshError(f"{where}: color {c!r} is not three finite numbers >= 0")
    for i, node in enumerate(tree.get("nodes") or []):
        ref = ((node.get("extensions") or {}).get("KHR_lights_punctual") or {}) if isinstance(
            node, dict) else {}
        if "light" in ref and not (isinstance(ref["light"], int)
                                   and 0 <= ref["light"] < len(lights)):
            raise MeshError(f"{label}: node {i} names light {ref['light']!r}; the file has "
                            f"{len(lights)}")
    return len(lights)


def read_gltf_json(path: Path) -> dict:
    """The checked JSON of a glTF/GLB file (`_check_gltf`: `MeshError` with one line for a
    broken file; its `MeshWarning`s as the caller's)."""
    label = path.name
    file_type = "glb" if path.suffix.lower() == ".glb" else "gltf"
    try:
        return _check_gltf(path, file_type, label)
    except MeshError:
        raise
    except Exception as exc:
        raise MeshError(f"{label}: invalid glTF: {one_line(exc)}") from None


def gltf_parts(path: Path, tree: dict) -> list[tuple]:
    """The triangle geometry of a glTF file whose checked JSON is `tree`, in world space, as
    `flatten` gives it: every mesh a node of its scene places, at the node's world transform
    (`gltf_nodes`: composed by our walk, in linear time however deep the tree), a node that
    scales its mesh to nothing left out with a warning."""
    label = path.name
    placed = placements(walk(tree, label))
    if not placed:
        count = len(tree.get("meshes") or [])
        raise MeshError(f"{label}: no node of its scene places a mesh (the file has {count} "
                        f"mesh{'es' * (count != 1)})")
    return _scene_parts(path, flat_tree(tree, drawn(placed, label)))


def mesh_from_gltf_json(path: Path, tree: dict, *, name: str,
                        crease_angle: float = DEFAULT_CREASE_DEGREES) -> Mesh:
    """The `Mesh` of a glTF file whose checked JSON is `tree`, edited so that its nodes place
    what the mesh holds (`preprocess.scene_import`: one untransformed node)."""
    parts = _scene_parts(path, tree, name=name)
    return merge_and_weld(parts, name=name, source=path.name, crease_angle=crease_angle)


def _scene_parts(path: Path, tree: dict, *, name: str | None = None) -> list[tuple]:
    """`flatten`'s parts of the meshes `tree`'s nodes place (its buffers and images resolved
    beside `path`, a GLB's BIN chunk reused): the geometry read by `gltf_primitives` and
    handed to trimesh tightly packed, which reads the materials, colours and node transforms."""
    import trimesh

    label = path.name
    binary = _glb_binary(path) if path.suffix.lower() == ".glb" else None
    packed, data = packed_tree(tree, Buffers(path, tree, binary, label), binary, label)
    what = f"mesh {name!r}" if name else "its meshes"
    with quiet():
        try:
            scene = load_scene_from(trimesh, io.BytesIO(glb_bytes(packed, data)), "glb",
                                    path)
            parts = flatten(scene, label, linear_colors=True)[0]
        except Exception as exc:
            raise MeshError(f"{label}: cannot read {what}: {one_line(exc)}") from None
    if not parts:
        raise MeshError(f"{label}: {what} has no triangles")
    return parts


def _glb_binary(path: Path) -> memoryview | None:
    """The BIN chunk of a GLB file (its container checked by `_check_gltf`), or None."""
    raw = path.read_bytes()
    length, json_length = struct.unpack("<II", raw[8:16])
    at = 20 + json_length
    if at + 8 > length:
        return None
    size, kind = struct.unpack("<II", raw[at : at + 8])
    return memoryview(raw)[at + 8 : at + 8 + size] if kind == _GLB_BIN else None


def glb_bytes(tree: dict, binary: bytes) -> bytes:
    """A GLB file's bytes: `tree`'s JSON and the BIN chunk `binary` (what trimesh reads here;
    the tests write their files with it too)."""
    data = json.dumps(tree).encode()
    chunks = [(data + b" " * (-len(data) % 4), _GLB_JSON),
              (binary + b"\0" * (-len(binary) % 4), _GLB_BIN)]
    body = b"".join(struct.pack("<II", len(c), k) + c for c, k in chunks)
    return b"glTF" + struct.pack("<II", 2, 12 + len(body)) + body


def _glb_json(f: io.BufferedIOBase, size: int, label: str) -> tuple[bytes, int]:
    """(the JSON chunk, the BIN chunk's length or -1) of an open GLB file of ``size`` bytes."""
    head = f.read(20)
    if len(head) < 20:
        raise MeshError(f"{label}: not a GLB file ({size} bytes, less than a GLB header)")
    magic, version, length, chunk, kind = struct.unpack("<4sIIII", head)
    if magic != b"glTF":
        raise MeshError(f"{label}: not a GLB file (it starts with {magic!r}, not b'glTF')")
    if version != 2:
        raise MeshError(f"{label}: GLB version {version} (only version 2 is supported)")
    if length > size:
        raise MeshError(f"{label}: truncated GLB: the header says {length} bytes, the file "
                        f"holds {size}")
    if length < size:
        mesh_warning(f"{label}: {size - length} bytes after the GLB's end ignored")
    if kind != _GLB_JSON:
        raise MeshError(f"{label}: invalid GLB: its first chunk is not JSON")
    if 20 + chunk > length:
        raise MeshError(f"{label}: truncated GLB: the JSON chunk needs {chunk} bytes, "
                        f"{length - 20} follow it")
    text = f.read(chunk)
    at = 20 + chunk
    binary = -1
    if at + 8 <= length:
        chunk, kind = struct.unpack("<II", f.read(8))
        if kind == _GLB_BIN:
            if at + 8 + chunk > length:
                raise MeshError(f"{label}: truncated GLB: the BIN chunk needs {chunk} bytes, "
                                f"{length - at - 8} follow it")
            binary = chunk
    return text, binary


def _check_gltf_buffers(tree: dict, path: Path, binary: int, label: str) -> None:
    """Buffers present and as long as they say (a `data:` URI decoded); buffer views inside
    them. Expects `check_refs`'s types."""
    sizes = []
    for i, buffer in enumerate(tree.get("buffers") or []):
        need = buffer["byteLength"]
        uri = buffer.get("uri")
        if uri is None:
            have = binary if binary >= 0 else 0
            where = "the GLB's BIN chunk"
        elif uri.startswith("data:"):
            have = len(decode_data_uri(uri, f"buffer {i}", label))
            where = "its data: URI"
        else:
            file = path.parent / urllib.parse.unquote(uri)
            if not file.is_file():
                raise MeshError(f"{label}: buffer {i} is in {uri!r}, which is missing")
            have = file.stat().st_size
            where = repr(uri)
        if have < need:
            raise MeshError(f"{label}: buffer {i} needs {need} bytes, {where} holds {have}")
        sizes.append(need)
    for i, view in enumerate(tree.get("bufferViews") or []):
        if view.get("byteOffset", 0) + view["byteLength"] > sizes[view["buffer"]]:
            raise MeshError(f"{label}: buffer view {i} reads past the end of its buffer")
