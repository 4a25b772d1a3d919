"""STL: binary and ASCII, read as trimesh reads them (the fast reader of `read_parts`).

A binary STL of the size its count says is one array of records; a file that starts with 'solid'
and holds no control byte is ASCII, read with trimesh's own string operations for the one-solid
case (several solids: None, for trimesh). Differences, where trimesh fails: ASCII text that is
not UTF-8 is read as Latin-1; a binary STL whose header says 0 triangles, or that has bytes after
its last one, is read with a `MeshWarning`. A file too short, or cut inside a record or before
'endsolid', raises `MeshError`.
"""

from __future__ import annotations

import warnings

import numpy as np

from preprocess.io.text import Part, Raw, is_text
from preprocess.mesh import MeshError, MeshWarning

_STL_RECORD = np.dtype([("normals", "<f4", (3,)), ("vertices", "<f4", (3, 3)), ("attr", "<u2")])


def read_stl(raw: Raw, label: str) -> list[Part] | None:
    """The part of an STL file's bytes, or None where trimesh must read it (`read_parts`)."""
    n = len(raw)
    count = int(np.frombuffer(raw, dtype="<u4", count=1, offset=80)[0]) if n >= 84 else -1
    size = 84 + count * _STL_RECORD.itemsize
    if size == n and count > 0:
        return [_stl_binary(raw, count)]
    if _stl_is_text(raw):
        return _read_stl_ascii(raw, label)
    if n < 84:
        raise MeshError(f"{label}: not an STL file ({n} bytes: too short for a binary STL, and "
                        f"not ASCII 'solid' text)")
    held, rest = divmod(n - 84, _STL_RECORD.itemsize)
    if count == 0:
        if held == 0 or rest:
            raise MeshError(f"{label}: a binary STL whose header promises no triangles")
        # writers that stream the triangles leave the count 0: the file's size says how many
        warnings.warn(f"{label}: the binary STL header says 0 triangles; read the {held} the "
                      f"file holds", MeshWarning, stacklevel=2)
        return [_stl_binary(raw, held)]
    if size > n:
        if held < count // 2:
            raise MeshError(f"{label}: not an STL file, or a truncated one: its header promises "
                            f"{count} triangles ({size} bytes), the file has {n} bytes")
        part = f" and {rest} bytes of one more" if rest else ""
        raise MeshError(f"{label}: truncated binary STL: the header promises {count} triangles, "
                        f"the file holds {held}{part}")
    warnings.warn(f"{label}: {n - size} bytes after the binary STL's last triangle ignored",
                  MeshWarning, stacklevel=2)
    return [_stl_binary(raw, count)]


def _stl_binary(raw: Raw, count: int) -> Part:
    rec = np.frombuffer(raw, dtype=_STL_RECORD, count=count, offset=84)
    vertices = rec["vertices"].reshape(-1, 3)
    faces = np.arange(3 * count, dtype=np.int64).reshape(-1, 3)
    return vertices, faces, None, None


def _stl_is_text(raw: Raw) -> bool:
    """Whether a file that is not a binary STL of the right size reads as ASCII STL: it starts
    with 'solid' (binary headers often do too) and holds no control byte."""
    return raw[:512].lstrip().lower().startswith(b"solid") and is_text(raw)


def _read_stl_ascii(raw: Raw, label: str) -> list[Part] | None:
    """trimesh's ASCII STL reader for the one-solid case (its own string operations)."""
    try:
        text = bytes(raw).decode("utf-8").strip().lower()
    except UnicodeDecodeError:
        text = bytes(raw).decode("latin-1").strip().lower()  # only names can be other text
    start, end = text.find("solid"), text.find("endsolid")
    if start >= 0 and end < 0:
        raise MeshError(f"{label}: truncated ASCII STL: no 'endsolid' (the file ends inside facet "
                        f"{text.count('endfacet') + 1})")
    if start < 0 or start > end:
        return None
    rest = text[end + len("endsolid"):]
    if rest.find("solid") >= 0 and rest.find("endsolid") >= 0:
        return None  # several solids: several geometries
    solid = text[start:end]
    pieces = solid.split("vertex")[1:]
    vertices = np.fromstring(" ".join(p[: p.find("\n")] for p in pieces), sep=" ")
    if len(vertices) < 3 or len(vertices) % 9 != 0 or len(vertices) != 3 * len(pieces):
        return None
    vertices = vertices.reshape(-1, 3)
    faces = np.arange(len(vertices), dtype=np.int64).reshape(-1, 3)
    return [(vertices, faces, None, None)]


