"""glTF accessors read with numpy: the bytes of a file's buffers, the byte layout of its
accessors checked, and an accessor's elements as an array.

trimesh 5.2 reads accessors itself, and wrongly where a file uses what glTF allows: it ignores
sparse accessors (positions moved by a sparse block drew unmoved, a sparse index of a million
went unnoticed) and it follows a `byteStride` smaller than an element (overlapping bytes: a
jagged sphere). Here `check_accessors` holds every accessor to the specification's layout (a
stride of 4..252 bytes, a multiple of 4 and at least an element, on vertex attributes only;
accessors and sparse blocks inside their views), `Buffers` gives the bytes of the buffers (a
GLB's BIN chunk, a file beside it, a base64 `data:` URI checked as such), and `read_accessor`
reads one accessor with its stride and its sparse substitution; `as_float` applies the
`normalized` flag. `preprocess.io.gltf_primitives` hands trimesh what these read, tightly packed.
Every error is a `MeshError` of one line naming the accessor and its buffer view.
"""

from __future__ import annotations

import base64
import binascii
import urllib.parse
from collections.abc import Callable
from pathlib import Path

import numpy as np

from preprocess.mesh import MeshError

__all__ = ["COMPONENT_DTYPES", "QUANTIZATION", "TYPE_WIDTH", "Buffers", "as_float",
           "check_accessors", "decode_data_uri", "element_size", "read_accessor"]

QUANTIZATION = "KHR_mesh_quantization"  # integer attributes, which `as_float` reads

# glTF componentType -> its little-endian numpy type
COMPONENT_DTYPES = {5120: np.dtype("<i1"), 5121: np.dtype("<u1"), 5122: np.dtype("<i2"),
                    5123: np.dtype("<u2"), 5125: np.dtype("<u4"), 5126: np.dtype("<f4")}
TYPE_WIDTH = {"SCALAR": 1, "VEC2": 2, "VEC3": 3, "VEC4": 4, "MAT2": 4, "MAT3": 9, "MAT4": 16}
_COMPONENT_NAMES = {5120: "byte", 5121: "unsigned byte", 5122: "short", 5123: "unsigned short",
                    5125: "unsigned int", 5126: "float"}
_MIN_STRIDE, _MAX_STRIDE = 4, 252  # the specification's bounds on bufferView.byteStride


def element_size(acc: dict) -> int:
    """Bytes of one element of an accessor (a VEC3 of floats: 12)."""
    return COMPONENT_DTYPES[acc["componentType"]].itemsize * TYPE_WIDTH[acc["type"]]


def _kind(acc: dict) -> str:
    return f"{acc['type']} of {_COMPONENT_NAMES[acc['componentType']]}"


def _index_accessors(tree: dict) -> set[int]:
    """The accessors primitives read as indices (their views may have no byteStride)."""
    return {p["indices"] for m in tree.get("meshes") or [] for p in m["primitives"]
            if "indices" in p}


def check_accessors(tree: dict, label: str) -> None:
    """`MeshError` for an accessor whose bytes cannot be read right: a stride that glTF forbids
    (`_check_stride`), elements past the end of the view, a sparse block past its view or
    with more entries than the accessor. Expects `gltf_refs.check_refs`'s types."""
    views = tree.get("bufferViews") or []
    indices = _index_accessors(tree)
    for i, acc in enumerate(tree.get("accessors") or []):
        item = element_size(acc)
        count = acc["count"]
        if "bufferView" in acc:
            v = acc["bufferView"]
            stride = _check_stride(acc, i, views[v], v, i in indices, label)
            need = acc.get("byteOffset", 0) + stride * (count - 1) + item
            if need > views[v]["byteLength"]:
                raise MeshError(f"{label}: accessor {i} reads past the end of buffer view {v} "
                                f"({need} bytes, the view holds {views[v]['byteLength']})")
        sparse = acc.get("sparse")
        if sparse is None:
            continue
        if sparse["count"] > count:
            raise MeshError(f"{label}: accessor {i}: its sparse block replaces "
                            f"{sparse['count']} elements; it has {count}")
        blocks = (("indices", COMPONENT_DTYPES[sparse["indices"]["componentType"]].itemsize),
                  ("values", item))
        for key, size in blocks:
            v = sparse[key]["bufferView"]
            need = sparse[key].get("byteOffset", 0) + size * sparse["count"]
            if need > views[v]["byteLength"]:
                raise MeshError(f"{label}: accessor {i}: its sparse {key} read past the end "
                                f"of buffer view {v} ({need} bytes, the view holds "
                                f"{views[v]['byteLength']})")


def _check_stride(acc: dict, i: int, view: dict, v: int, is_index: bool, label: str) -> int:
    """The byte stride accessor i reads its view with (its element size where the view sets
    none); `MeshError` where the view's byteStride is not one glTF allows."""
    item = element_size(acc)
    stride = view.get("byteStride")
    if stride is None:
        return item
    where = f"{label}: accessor {i} (buffer view {v})"
    if is_index:
        raise MeshError(f"{where}: indices are read from a view with a byteStride ({stride}); "
                        f"glTF allows one on vertex attributes only")
    if not (_MIN_STRIDE <= stride <= _MAX_STRIDE and stride % 4 == 0):
        raise MeshError(f"{where}: byteStride {stride} is not a multiple of 4 from "
                        f"{_MIN_STRIDE} to {_MAX_STRIDE}")
    if stride < item:
        raise MeshError(f"{where}: byteStride {stride} is less than an element "
                        f"({item} bytes: {_kind(acc)})")
    return stride


def decode_data_uri(uri: str, what: str, label: str) -> bytes:
    """The bytes of a base64 `data:` URI (`what`: "buffer 0", for the message); `MeshError`
    for one that is not base64 or not valid base64."""
    head, sep, payload = uri.partition(",")
    if not sep or not head.endswith(";base64"):
        raise MeshError(f"{label}: {what}: a data: URI that is not base64 "
                        f"({head[:40]!r}; only base64 is supported)")
    try:
        return base64.b64decode(payload, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise MeshError(f"{label}: {what}: its data: URI is not valid base64 ({exc})") from None


class Buffers:
    """The bytes of a glTF file's buffers, each read (a file beside it), decoded (a `data:`
    URI) or taken from the GLB's BIN chunk (`binary`: the bytes, or a function that reads them,
    called only if a view of the chunk is asked for) when first asked for."""

    def __init__(self, path: Path, tree: dict,
                 binary: bytes | memoryview | Callable[[], memoryview | None] | None,
                 label: str):
        self.path, self.tree, self.binary, self.label = path, tree, binary, label
        self._data: dict[int, memoryview] = {}

    def __getitem__(self, b: int) -> memoryview:
        if b not in self._data:
            buffer = self.tree["buffers"][b]
            uri = buffer.get("uri")
            if uri is None:
                data = self.binary() if callable(self.binary) else self.binary
                data = data if data is not None else b""
            elif uri.startswith("data:"):
                data = decode_data_uri(uri, f"buffer {b}", self.label)
            else:
                data = (self.path.parent / urllib.parse.unquote(uri)).read_bytes()
            if len(data) < buffer["byteLength"]:
                raise MeshError(f"{self.label}: buffer {b} needs {buffer['byteLength']} bytes, "
                                f"it holds {len(data)}")
            self._data[b] = memoryview(data)
        return self._data[b]

    def view(self, v: int) -> memoryview:
        """The bytes of buffer view v."""
        view = self.tree["bufferViews"][v]
        start = view.get("byteOffset", 0)
        data = self[view["buffer"]][start : start + view["byteLength"]]
        if len(data) < view["byteLength"]:
            raise MeshError(f"{self.label}: buffer view {v} reads past the end of its buffer")
        return data


def read_accessor(tree: dict, buffers: Buffers, i: int, label: str) -> np.ndarray:
    """Accessor i's elements, (count, width) in its component type: read with its view's
    stride, zeros where it has no view, its sparse block substituted. `check_accessors` has
    held its layout to the specification."""
    acc = tree["accessors"][i]
    dtype = COMPONENT_DTYPES[acc["componentType"]]
    width, count = TYPE_WIDTH[acc["type"]], acc["count"]
    if "bufferView" in acc:
        view = tree["bufferViews"][acc["bufferView"]]
        item = dtype.itemsize * width
        stride = view.get("byteStride") or item
        raw = np.frombuffer(buffers.view(acc["bufferView"]), np.uint8,
                            count=stride * (count - 1) + item, offset=acc.get("byteOffset", 0))
        rows = np.lib.stride_tricks.as_strided(raw, (count, item), (stride, 1), writeable=False)
        out = np.ascontiguousarray(rows).view(dtype).reshape(count, width)
    else:  # no view: zeros, which a sparse block may change
        out = np.zeros((count, width), dtype)
    sparse = acc.get("sparse")
    if sparse is not None:
        k = sparse["count"]
        where = sparse["indices"]
        at = np.frombuffer(buffers.view(where["bufferView"]),
                           COMPONENT_DTYPES[where["componentType"]], count=k,
                           offset=where.get("byteOffset", 0))
        if k and int(at.max()) >= count:
            raise MeshError(f"{label}: accessor {i}: sparse index {int(at.max())} is past its "
                            f"{count} elements")
        values = np.frombuffer(buffers.view(sparse["values"]["bufferView"]), dtype,
                               count=k * width, offset=sparse["values"].get("byteOffset", 0))
        out = out.copy() if not out.flags.writeable else out
        out[at.astype(np.int64)] = values.reshape(k, width)
    return out


def as_float(a: np.ndarray, acc: dict) -> np.ndarray:
    """An accessor's elements as float32: normalized integers mapped to [0, 1] (unsigned) or
    [-1, 1] (signed) as glTF says, other integers (KHR_mesh_quantization) as they are."""
    if a.dtype.kind == "f":
        return a.astype(np.float32, copy=False)
    f = a.astype(np.float32)
    if acc.get("normalized"):
        top = float(np.iinfo(a.dtype).max)
        f = f / top if a.dtype.kind == "u" else np.maximum(f / top, -1.0)
    return f
