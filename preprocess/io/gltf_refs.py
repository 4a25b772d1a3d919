"""glTF JSON checked in one place before anything follows it: every index into another array
names an entry the file has, and every value read is of the JSON type glTF says.

A glTF file is arrays that point into each other by index (a primitive's `indices`, an
accessor's `bufferView`, a view's `buffer`, a node's `children` ...). Whoever follows an index
that is past its array fails far from the cause, so `check_refs` walks the geometry and the
scene once, with the table `_SCHEMA` of what each object holds, and raises `MeshError` with one
line in glTF's terms:

    mesh.glb: accessor 0: bufferView 9 is missing (the file has 3 buffer views)
    mesh.glb: accessor 2: count is 'ten', not a whole number >= 1

What the table leaves out is not read by Tessera (animations, skins, cameras, extras: named in a
warning as not drawn, and dropped before trimesh reads the file) or is checked where its
meaning is known: the materials, textures, images and samplers, and a primitive's `material`
(`gltf_materials.check_materials`: a reference past its array or a value that is not a number
is named in a warning and drawn without, as a texture that cannot be read is), lights
(`gltf._check_lights`), byte ranges and strides (`gltf_accessors.check_accessors`), the node
graph's shape (`gltf_nodes.walk`).
"""

from __future__ import annotations

import math
from collections.abc import Callable

from preprocess.mesh import MeshError

__all__ = ["check_refs"]

# what an entry of each top-level array is called in a message, and its plural
_NOUNS = {"accessors": ("accessor", "accessors"), "bufferViews": ("buffer view", "buffer views"),
          "buffers": ("buffer", "buffers"), "meshes": ("mesh", "meshes"),
          "nodes": ("node", "nodes"), "materials": ("material", "materials"),
          "textures": ("texture", "textures"), "images": ("image", "images"),
          "samplers": ("sampler", "samplers"), "scenes": ("scene", "scenes")}

# a rule: (the value, the tree, "where: key") -> None, or MeshError's text without the label
Rule = Callable[[object, dict, str], str | None]


def _short(v: object) -> str:
    text = repr(v)
    return text if len(text) <= 40 else text[:37] + "..."


def _is_int(v: object) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_number(v: object) -> bool:
    return (isinstance(v, (int, float)) and not isinstance(v, bool)
            and math.isfinite(float(v)))


def _ref(array: str) -> Rule:
    """An index into the top-level `array`."""
    def rule(v, tree, what):
        n = len(tree.get(array) or [])
        one, many = _NOUNS[array]
        if not _is_int(v):
            return f"{what} is {_short(v)}, not the index of a {one}"
        if not 0 <= v < n:
            return f"{what} {v} is missing (the file has {n} {one if n == 1 else many})"
        return None
    return rule


def _refs(array: str, item: str) -> Rule:
    """A list of indices into `array`, each called `item` in a message ("child 9")."""
    single = _ref(array)

    def rule(v, tree, what):
        if not isinstance(v, list):
            return f"{what} is {_short(v)}, not a list of {_NOUNS[array][1]}"
        for x in v:
            if problem := single(x, tree, item):
                return problem
        return None
    return rule


def _whole(least: int = 0) -> Rule:
    def rule(v, tree, what):
        if not _is_int(v) or v < least:
            return f"{what} is {_short(v)}, not a whole number >= {least}"
        return None
    return rule


def _numbers(n: int) -> Rule:
    def rule(v, tree, what):
        if not (isinstance(v, list) and len(v) == n and all(_is_number(x) for x in v)):
            return f"{what} is {_short(v)}, not {n} finite numbers"
        return None
    return rule


def _number(v, tree, what):
    return None if _is_number(v) else f"{what} is {_short(v)}, not a finite number"


def _one_of(*values) -> Rule:
    def rule(v, tree, what):
        if isinstance(v, bool) or v not in values:
            return f"{what} is {_short(v)}, not one of {', '.join(map(str, values))}"
        return None
    return rule


def _kind(kind: type, said: str) -> Rule:
    def rule(v, tree, what):
        if not isinstance(v, kind) or (kind is not bool and isinstance(v, bool)):
            return f"{what} is {_short(v)}, not {said}"
        return None
    return rule


_STRING, _BOOL = _kind(str, "a string"), _kind(bool, "true or false")
_COMPONENTS = _one_of(5120, 5121, 5122, 5123, 5125, 5126)
# key -> (rule or nested schema, required); a nested schema is a dict (an object) or a
# one-element list (a list of such objects)
_PRIMITIVE = {"attributes": ("accessors", True), "indices": (_ref("accessors"), False),
              "mode": (_one_of(0, 1, 2, 3, 4, 5, 6), False),
              "targets": (["accessors"], False)}
_SCHEMA: dict[str, dict] = {
    "buffers": {"byteLength": (_whole(1), True), "uri": (_STRING, False)},
    "bufferViews": {"buffer": (_ref("buffers"), True), "byteOffset": (_whole(0), False),
                    "byteLength": (_whole(1), True), "byteStride": (_whole(0), False)},
    "accessors": {"bufferView": (_ref("bufferViews"), False), "byteOffset": (_whole(0), False),
                  "componentType": (_COMPONENTS, True), "normalized": (_BOOL, False),
                  "count": (_whole(1), True),
                  "type": (_one_of("SCALAR", "VEC2", "VEC3", "VEC4", "MAT2", "MAT3", "MAT4"),
                           True),
                  "sparse": ({"count": (_whole(1), True),
                              "indices": ({"bufferView": (_ref("bufferViews"), True),
                                           "byteOffset": (_whole(0), False),
                                           "componentType": (_one_of(5121, 5123, 5125), True)},
                                          True),
                              "values": ({"bufferView": (_ref("bufferViews"), True),
                                          "byteOffset": (_whole(0), False)}, True)}, False)},
    "meshes": {"primitives": ([_PRIMITIVE], True)},
    "nodes": {"mesh": (_ref("meshes"), False), "children": (_refs("nodes", "child"), False),
              "matrix": (_numbers(16), False), "translation": (_numbers(3), False),
              "rotation": (_numbers(4), False), "scale": (_numbers(3), False)},
    "scenes": {"nodes": (_refs("nodes", "node"), False)},
}


def check_refs(tree: dict, label: str) -> None:
    """`MeshError` (one line, `label` first) for the first index in `tree` past the array it
    names, or value of the wrong JSON type, among those `_SCHEMA` lists; the top-level arrays
    must be lists of objects, and `scene` an index into `scenes`."""
    for array, schema in _SCHEMA.items():
        entries = tree.get(array, [])
        if not isinstance(entries, list):
            raise MeshError(f"{label}: \"{array}\" is {_short(entries)}, not a list")
        for i, entry in enumerate(entries):
            _check_object(entry, schema, f"{_NOUNS[array][0]} {i}", tree, label)
    scenes = tree.get("scenes") or []
    if "scene" in tree and tree["scene"] is not None and scenes:
        index = tree["scene"]
        if not _is_int(index) or not 0 <= index < len(scenes):
            raise MeshError(f"{label}: \"scene\" is {_short(index)}; the file has {len(scenes)} "
                            f"scene{'s' if len(scenes) != 1 else ''}")


def _check_object(obj: object, schema: dict, where: str, tree: dict, label: str) -> None:
    """One object against its schema (`_SCHEMA`'s entries), nested objects and lists of them
    included; `where` names it ("mesh 0 primitive 1")."""
    if not isinstance(obj, dict):
        raise MeshError(f"{label}: {where} is {_short(obj)}, not a JSON object")
    for key, (rule, required) in schema.items():
        if key not in obj:
            if required:
                raise MeshError(f"{label}: {where} has no {key}")
            continue
        v = obj[key]
        if isinstance(rule, dict):
            _check_object(v, rule, f"{where} {key}", tree, label)
        elif isinstance(rule, list):
            if not isinstance(v, list):
                raise MeshError(f"{label}: {where}: {key} is {_short(v)}, not a list of "
                                f"objects")
            if required and not v:
                raise MeshError(f"{label}: {where} has no {key}")
            inner = rule[0]
            for k, item in enumerate(v):
                if isinstance(inner, str):  # a map of names to indices (morph targets)
                    _check_names(item, inner, f"{where} {key}[{k}]", tree, label)
                else:
                    _check_object(item, inner, f"{where} {key[:-1]} {k}", tree, label)
        elif isinstance(rule, str):  # a map of names to indices into `rule` (attributes)
            _check_names(v, rule, where, tree, label)
        elif problem := rule(v, tree, key):
            raise MeshError(f"{label}: {where}: {problem}")


def _check_names(obj: object, array: str, where: str, tree: dict, label: str) -> None:
    """A map of names to indices into `array` (a primitive's attributes, a morph target)."""
    if not isinstance(obj, dict):
        raise MeshError(f"{label}: {where}: the attributes are {_short(obj)}, not a JSON object")
    rule = _ref(array)
    for name, v in obj.items():
        if problem := rule(v, tree, f"{name} {_NOUNS[array][0]}"):
            raise MeshError(f"{label}: {where}: {problem}")
