"""glTF primitives read as triangles, and the tree trimesh reads them from.

trimesh 5.2 reads a primitive's accessors itself (wrongly where they are sparse or strided
against the rules: `gltf_accessors`) and drops triangle fans without a word. Here every
primitive of the meshes a tree's nodes place is read with `gltf_accessors` (positions, normals,
first uvs, colours, indices; a Draco primitive decoded through DracoPy), its strips and fans
made triangles as glTF winds them, and `packed_tree` hands trimesh an edited tree whose
accessors hold exactly those arrays, tightly packed in the BIN chunk of the GLB trimesh reads.
trimesh then reads nothing it gets wrong and still does what it does well: materials,
textures, colours and node transforms. Points and lines are left out (`gltf` names them in a
warning); a file with nothing else is one line.
"""

from __future__ import annotations

import importlib.util

import numpy as np

from preprocess.io.faces import strip_triangles
from preprocess.io.gltf_accessors import Buffers, as_float, read_accessor
from preprocess.io.trimesh_path import one_line
from preprocess.mesh import MeshError, mesh_warning

__all__ = ["DRACO", "draco_available", "packed_tree", "primitive_arrays", "triangles"]

DRACO = "KHR_draco_mesh_compression"
_TRIANGLES, _STRIP, _FAN = 4, 5, 6  # glTF primitive modes drawn; 0-3 are points and lines
# attribute -> the accessor types it may have (the others are not read)
_ATTRIBUTES = {"POSITION": ("VEC3",), "NORMAL": ("VEC3",), "TEXCOORD_0": ("VEC2",),
               "COLOR_0": ("VEC3", "VEC4")}
_EMPTY_URI = "data:application/octet-stream;base64,"  # a buffer trimesh need not read


def draco_available() -> bool:
    """Whether Draco-compressed primitives can be decoded (DracoPy is installed)."""
    return importlib.util.find_spec("DracoPy") is not None


def triangles(mode: int, index: np.ndarray, where: str) -> np.ndarray:
    """(t, 3) uint32 triangles of a primitive of `mode` (4, 5 or 6) from its (k,) vertex
    indices, wound as glTF says: a list three by three (indices after the last whole triangle
    left out with a warning), a strip's every other triangle reversed (`strip_triangles`, which
    also drops the degenerate triangles that join strips), a fan's (i + 1, i + 2, 0)."""
    index = index.astype(np.int64, copy=False)
    if mode == _TRIANGLES:
        whole = len(index) - len(index) % 3
        if whole < len(index):
            mesh_warning(f"{where}: {len(index) - whole} indices after the last whole triangle "
                         f"left out")
        tris = index[:whole].reshape(-1, 3)
    elif mode == _STRIP:
        tris = strip_triangles(index, np.zeros(len(index), np.int64))
    else:
        i = np.arange(max(len(index) - 2, 0))
        tris = np.stack([index[i + 1], index[i + 2], np.full(len(i), index[0] if len(index)
                                                                else 0)], axis=1)
    return np.ascontiguousarray(tris, np.uint32).reshape(-1, 3)


def _draco(p: dict, tree: dict, buffers: Buffers, where: str) -> dict[str, np.ndarray] | None:
    """A Draco primitive's decoded attributes by glTF name and its "indices" (None where the
    primitive is not compressed or DracoPy is missing: its accessors are read as they are)."""
    ext = (p.get("extensions") or {}).get(DRACO)
    if not isinstance(ext, dict) or not draco_available():
        return None
    import DracoPy

    v = ext.get("bufferView")
    views = tree.get("bufferViews") or []
    if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v < len(views):
        raise MeshError(f"{where}: its Draco bufferView {v!r} is missing (the file has "
                        f"{len(views)} buffer views)")
    try:
        decoded = DracoPy.decode(bytes(buffers.view(v)))
    except Exception as exc:
        raise MeshError(f"{where}: its Draco data cannot be decoded ({one_line(exc)})") from None
    names = {ident: name for name, ident in (ext.get("attributes") or {}).items()}
    out = {names[a["unique_id"]]: np.asarray(a["data"]) for a in decoded.attributes
           if a["unique_id"] in names}
    faces = getattr(decoded, "faces", None)
    if faces is not None:
        out["indices"] = np.asarray(faces).reshape(-1)
    return out


def primitive_arrays(tree: dict, buffers: Buffers, m: int, k: int, label: str
                     ) -> dict[str, np.ndarray] | None:
    """Mesh m's primitive k as trimesh should read it: "POSITION" (n, 3) float32, "NORMAL"
    (n, 3) float32, "TEXCOORD_0" (n, 2) float32, "COLOR_0" (n, 3|4) uint8 or float32 (those
    the primitive has) and "indices" (t, 3) uint32; None for points and lines, and for a
    primitive without positions (left out with a warning). `MeshError` for an attribute of the
    wrong type or count, or an index past the vertices."""
    p = tree["meshes"][m]["primitives"][k]
    where = f"{label}: mesh {m} primitive {k}"
    mode = p.get("mode", _TRIANGLES)
    if mode not in (_TRIANGLES, _STRIP, _FAN):
        return None
    attrs = p["attributes"]
    if "POSITION" not in attrs:
        mesh_warning(f"{where} has no POSITION; left out")
        return None
    decoded = _draco(p, tree, buffers, where)
    accessors = tree["accessors"]
    out: dict[str, np.ndarray] = {}
    for name, types in _ATTRIBUTES.items():
        if name not in attrs:
            continue
        acc = accessors[attrs[name]]
        if acc["type"] not in types:
            raise MeshError(f"{where}: {name} accessor {attrs[name]} is {acc['type']}, not "
                            f"{' or '.join(types)}")
        raw = decoded[name] if decoded and name in decoded else read_accessor(
            tree, buffers, attrs[name], label)
        raw = raw.reshape(len(raw), -1)
        keep = name == "COLOR_0" and raw.dtype == np.uint8  # as trimesh reads it already
        out[name] = raw if keep else as_float(raw, acc)
        if len(out[name]) != len(out["POSITION"]):
            raise MeshError(f"{where}: {name} has {len(out[name])} elements, POSITION "
                            f"{len(out['POSITION'])}")
    n = len(out["POSITION"])
    if decoded and "indices" in decoded:
        index, mode = decoded["indices"], _TRIANGLES  # Draco decodes triangles
    elif "indices" in p:
        acc = accessors[p["indices"]]
        if acc["type"] != "SCALAR" or acc["componentType"] not in (5121, 5123, 5125):
            raise MeshError(f"{where}: indices accessor {p['indices']} is {acc['type']} of "
                            f"type {acc['componentType']}, not SCALAR unsigned integers")
        index = read_accessor(tree, buffers, p["indices"], label).reshape(-1)
    else:
        index = np.arange(n)
    if len(index) and int(index.max()) >= n:
        raise MeshError(f"{where}: index {int(index.max())} is past its {n} vertices")
    out["indices"] = triangles(mode, index, where)
    return out


class _Packer:
    """Arrays appended to one byte blob, each as a buffer view (of buffer 0, 4-byte aligned)
    and a tightly packed accessor; views numbered from `first_view`."""

    def __init__(self, first_view: int):
        self.first_view = first_view
        self.chunks: list[bytes] = []
        self.size = 0
        self.views: list[dict] = []
        self.accessors: list[dict] = []

    def add(self, a: np.ndarray, type_: str) -> int:
        component = {np.dtype(np.float32): 5126, np.dtype(np.uint32): 5125,
                     np.dtype(np.uint8): 5121}[a.dtype]
        data = np.ascontiguousarray(a, a.dtype.newbyteorder("<")).tobytes()
        self.views.append({"buffer": 0, "byteOffset": self.size, "byteLength": len(data)})
        self.chunks += [data, b"\0" * (-len(data) % 4)]
        self.size += len(data) + (-len(data) % 4)
        acc = {"bufferView": self.first_view + len(self.views) - 1, "componentType": component,
               "count": len(a), "type": type_}
        if component == 5121:
            acc["normalized"] = True
        self.accessors.append(acc)
        return len(self.accessors) - 1


def packed_tree(tree: dict, buffers: Buffers, binary: bytes | memoryview | None, label: str
                ) -> tuple[dict, bytes]:
    """(the tree, its BIN chunk) of the GLB trimesh reads for `tree` (whose nodes place the
    meshes, as `gltf_nodes.flat_tree` gives it): the placed meshes as `primitive_arrays` reads
    them, in accessors of their own in the BIN chunk; the file's buffers and views kept where
    an image reads them (a GLB's BIN chunk after the packed arrays), emptied elsewhere.
    `MeshError` where no primitive holds triangles."""
    used = sorted({n["mesh"] for n in tree["nodes"] if "mesh" in n})
    views = tree.get("bufferViews") or []
    pack = _Packer(len(views))
    meshes, left = [], 0
    for m in used:
        mesh = tree["meshes"][m]
        prims = []
        for k, p in enumerate(mesh["primitives"]):
            arrays = primitive_arrays(tree, buffers, m, k, label)
            if arrays is None:
                left += 1
                continue
            tris = arrays.pop("indices")
            out = {"attributes": {name: pack.add(a, {1: "SCALAR", 2: "VEC2", 3: "VEC3",
                                                     4: "VEC4"}[a.shape[1]])
                                  for name, a in arrays.items()},
                   "indices": pack.add(tris.reshape(-1), "SCALAR")}
            if "material" in p:
                out["material"] = p["material"]
            ext = {k: v for k, v in (p.get("extensions") or {}).items() if k != DRACO}
            if ext:
                out["extensions"] = ext
            prims.append(out)
        meshes.append({**{k: mesh[k] for k in ("name", "extras") if k in mesh},
                       "primitives": prims})
    if not any(m["primitives"] for m in meshes):
        raise MeshError(f"{label}: nothing to draw: the placed meshes have no triangles (their "
                        f"{left} primitives are points, lines or without positions)")
    t = dict(tree)
    t["meshes"] = meshes
    t["nodes"] = [{**n, "mesh": used.index(n["mesh"])} if "mesh" in n else n
                  for n in tree["nodes"]]
    t["accessors"] = pack.accessors
    packed = b"".join(pack.chunks)
    t["buffers"], t["bufferViews"], extra = _kept_buffers(tree, binary, len(packed))
    t["bufferViews"] += pack.views
    return t, packed + extra


def _kept_buffers(tree: dict, binary: bytes | memoryview | None, base: int
                  ) -> tuple[list[dict], list[dict], bytes]:
    """(buffers, views, bytes after the packed arrays in the BIN chunk) of the packed tree:
    buffer 0 is the BIN chunk; the file's buffer b is buffer b + 1, kept where an image reads
    it (a GLB's own BIN chunk moves into buffer 0, after the `base` packed bytes) and emptied
    elsewhere, with the views nothing reads."""
    views = tree.get("bufferViews") or []
    read = {img["bufferView"] for img in tree.get("images") or [] if "bufferView" in img}
    needed = {views[v]["buffer"] for v in read}
    own = next((b for b, buf in enumerate(tree.get("buffers") or []) if "uri" not in buf), None)
    extra = bytes(binary) if binary is not None and own in needed else b""
    buffers = [{"byteLength": base + len(extra)}]
    buffers += [{"uri": buf["uri"], "byteLength": buf["byteLength"]}
                if b in needed and b != own else {"uri": _EMPTY_URI, "byteLength": 0}
                for b, buf in enumerate(tree.get("buffers") or [])]
    out = []
    for v, view in enumerate(views):
        if v not in read:
            out.append({"buffer": 0, "byteLength": 0})
        elif view["buffer"] == own:
            out.append({**view, "buffer": 0, "byteOffset": base + view.get("byteOffset", 0)})
        else:
            out.append({**view, "buffer": view["buffer"] + 1})
    return buffers, out, extra
