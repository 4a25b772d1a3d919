"""PLY: ASCII and binary, read as trimesh reads them (the fast reader of `read_parts`).

The header gives the elements and their properties (`_ply_header`); a body of one vertex and one
face element of one polygon size is read as numpy records (binary) or a whitespace table
(ASCII, `preprocess.io.text.table_checked`), with normals and 8-bit RGB[A] vertex colours. A file
of triangle strips (an element 'tristrips', as range scanners write them, which trimesh reads as
a point cloud) is read here (`_ply_strips`). Uvs, texture files, other colours, extra elements and
mixed polygon sizes are left to trimesh (None). A file that does not start with 'ply', a header
without 'end_header' or an unknown format, and a body holding fewer rows than the header promises
raise `MeshError` (checked before a file goes to trimesh, whose reader built a mesh with a hole
from an ASCII file cut short).
"""

from __future__ import annotations

import preprocess.numba_cache  # noqa: F401  (first: drops stale numba caches)
import numba as nb
import numpy as np

from preprocess.io.faces import strip_triangles, triangulate_mixed, triangulate_uniform
from preprocess.io.text import Part, Raw, cut_last_line, table_checked, truncated
from preprocess.mesh import MeshError

_PLY_TYPES = {
    "char": "i1", "uchar": "u1", "short": "i2", "ushort": "u2", "int": "i4", "int8": "i1",
    "int16": "i2", "int32": "i4", "int64": "i8", "uint": "u4", "uint8": "u1", "uint16": "u2",
    "uint32": "u4", "uint64": "u8", "float": "f4", "float16": "f2", "float32": "f4",
    "float64": "f8", "double": "f8",
}  # fmt: skip
_PLY_UV_NAMES = {"texture_u", "texture_v", "u", "v", "s", "t"}
_PLY_UV_PAIRS = (("s", "t"), ("u", "v"), ("texture_u", "texture_v"))
_PLY_INDEX_NAMES = ("vertex_index", "vertex_indices")
_PLY_FORMATS = ("ascii", "binary_little_endian", "binary_big_endian")
_PLY_PLURAL = {"vertex": "vertices", "face": "faces", "tristrips": "triangle strips"}


def _ply_header(raw: Raw, label: str):
    """(format, header end, [(element, count, [(name, type, count type or None)])]) or None.

    Raises `MeshError` for what no reader can read: a file that does not start with 'ply', a
    header cut before 'end_header', an unknown format.
    """
    first = raw[: max(raw.find(b"\n"), 0) or 64]
    if b"ply" not in first.lower():
        raise MeshError(f"{label}: not a PLY file (it does not start with 'ply')")
    end = raw.find(b"end_header")
    if end < 0:
        raise MeshError(f"{label}: truncated PLY header: no 'end_header' line")
    stop = raw.find(b"\n", end)
    if stop < 0:
        stop = len(raw) - 1  # the header is the whole file: the body checks say what is missing
    try:
        lines = raw[:end].decode("ascii").split("\n")
    except UnicodeDecodeError:
        return None
    if lines[0].strip() != "ply" or raw[end: stop + 1].strip() != b"end_header":
        return None
    fmt = None
    elements: list = []
    for text in lines[1:]:
        words = text.split()
        if not words or words[0] in ("comment", "obj_info"):
            if "texturefile" in text.lower():
                return None  # a texture: trimesh reads uvs through it
            continue
        if words[0] == "format" and len(words) == 3 and fmt is None:
            fmt = words[1]
        elif words[0] == "element" and len(words) == 3 and words[2].isdigit():
            elements.append((words[1], int(words[2]), []))
        elif words[0] == "property" and elements and len(words) == 3 and words[1] in _PLY_TYPES:
            elements[-1][2].append((words[2], _PLY_TYPES[words[1]], None))
        elif (words[0] == "property" and elements and len(words) == 5 and words[1] == "list"
              and words[2] in _PLY_TYPES and words[3] in _PLY_TYPES):
            elements[-1][2].append((words[4], _PLY_TYPES[words[3]], _PLY_TYPES[words[2]]))
        else:
            return None
    if fmt is None:
        raise MeshError(f"{label}: invalid PLY header: no 'format' line")
    if fmt not in _PLY_FORMATS:
        raise MeshError(f"{label}: unknown PLY format {fmt!r} (ascii, binary_little_endian or "
                        f"binary_big_endian)")
    return fmt, stop + 1, elements


def _ply_promise(elements: list, held: list[int]) -> str:
    """'the header promises 1000 vertices and 2000 faces, the body holds 998 vertices and 0
    faces', over the elements the header gives any of."""
    def counts(numbers: list[int]) -> str:
        return " and ".join(f"{k} {_PLY_PLURAL.get(e[0], repr(e[0]) + ' elements')}"
                            for e, k in zip(elements, numbers, strict=True) if e[1])
    return (f"the header promises {counts([e[1] for e in elements])}, the body holds "
            f"{counts(held)}")


def _ply_short(elements: list, rows: int) -> list[int]:
    """How many rows of each element ``rows`` rows in file order hold."""
    held = []
    for _, count, _ in elements:
        held.append(min(max(rows, 0), count))
        rows -= count
    return held


def _ply_held(elements: list, ntok: np.ndarray) -> list[int]:
    """How many rows of each element an ASCII body of fewer rows than promised holds: an element
    of scalars ends at the first row of another width (a header promising 1000 vertices over 998
    vertex rows: 998, not 1000 with two face rows taken for vertices)."""
    held = []
    r = 0
    for _, count, props in elements:
        rows = ntok[r: r + count]
        if all(p[2] is None for p in props):
            other = np.flatnonzero(rows != len(props))
            rows = rows[: other[0]] if other.size else rows
        held.append(len(rows))
        r += len(rows)
    return held


def read_ply(raw: Raw, label: str) -> list[Part] | None:
    """The part of a PLY file's bytes, or None where trimesh must read it (`read_parts`)."""
    header = _ply_header(raw, label)
    if header is None:
        return None
    fmt, data_start, elements = header
    names = [e[0] for e in elements]
    if "tristrips" in names:
        return _ply_strips(raw, fmt, data_start, elements, label)
    if names != ["vertex", "face"]:
        _ply_check_body(raw, fmt, data_start, elements, label)
        return None  # edges, materials, point clouds ...: trimesh
    (_, nv, vprops), (_, nf, fprops) = elements
    vnames = [p[0] for p in vprops]
    if nv == 0 or nf == 0 or any(p[2] is not None for p in vprops):
        _ply_check_body(raw, fmt, data_start, elements, label)
        return None
    lists = [k for k, p in enumerate(fprops) if p[2] is not None]
    colour_names = [c for c in ("red", "green", "blue", "alpha") if c in vnames]
    if len(colour_names) >= 3 and (colour_names[:3] != ["red", "green", "blue"] or any(
            p[1] != "u1" for p in vprops if p[0] in colour_names)):
        _ply_check_body(raw, fmt, data_start, elements, label)
        return None  # colours other than 8-bit RGB[A]: trimesh
    if (not {"x", "y", "z"} <= set(vnames) or _PLY_UV_NAMES & set(vnames)
            or len(lists) != 1 or fprops[lists[0]][0] not in _PLY_INDEX_NAMES):
        # uvs: trimesh merges them to 1e-8 and unmerges the faces
        _ply_check_body(raw, fmt, data_start, elements, label)
        return None
    li = lists[0]
    if fmt == "ascii":
        got = _ply_ascii(raw, data_start, nv, nf, vprops, fprops, li, elements, label)
    else:
        got = _ply_binary(raw, data_start, nv, nf, vprops, fprops, li, fmt)
        if got is None:
            _ply_check_body(raw, fmt, data_start, elements, label)
    if got is None:
        return None
    columns, faces = got
    if faces.shape[1] < 3:
        return None
    # float32 coordinates stay float32: mesh_from_arrays reads them as trimesh's float64 copy
    vertices = np.column_stack([columns[a] for a in "xyz"])
    if vertices.dtype != np.float32:
        vertices = vertices.astype(np.float64)
    normals = None
    if {"nx", "ny", "nz"} <= set(vnames):
        normals = np.column_stack([columns[a] for a in ("nx", "ny", "nz")]).astype(np.float64)
    colors = None
    if len(colour_names) >= 3:  # as trimesh: 8-bit sRGB (by convention), alpha 255 if absent
        from preprocess.materials import vertex_rgba

        colors = vertex_rgba(np.column_stack([columns[a] for a in colour_names]).astype(
            np.float64) / 255.0)
    # indices out of range (negative ones too) are left to mesh_from_arrays, as on trimesh's path
    faces = faces.astype(np.int32 if np.can_cast(faces.dtype, np.int32) else np.int64)
    return [(vertices, triangulate_uniform(faces), normals, None, colors)]


def _ply_check_body(raw: Raw, fmt: str, start: int, elements: list, label: str) -> None:
    """Raise `MeshError` when the body holds fewer rows than the header promises (before a file
    goes to trimesh, whose PLY reader built a mesh with a hole from an ASCII file cut short)."""
    if fmt == "ascii":
        data = np.frombuffer(raw, dtype=np.uint8)[start:]
        lines = int(np.count_nonzero(data == 10)) + (cut_last_line(raw) is not None)
        if lines < sum(e[1] for e in elements):
            raise MeshError(f"{label}: {_ply_promise(elements, _ply_short(elements, lines))}")
    else:
        _ply_binary_elements(raw, start, elements, fmt, label)


@nb.njit(cache=True, nogil=True)
def _walk_rows(data, pos, rows, kinds, sizes, csizes, csigned, big, pick):
    """Walk ``rows`` rows of a binary PLY element from byte ``pos``.

    Property k is a scalar of ``sizes[k]`` bytes (``kinds[k]`` 0) or a list (1): a count of
    ``csizes[k]`` bytes, signed where ``csigned[k]``, then that many items of ``sizes[k]`` bytes.
    Returns (rows complete, the offset after them, per row the offset of list ``pick``'s first
    item and its item count).
    """
    n = data.size
    at = np.zeros(rows, np.int64)
    cnt = np.zeros(rows, np.int64)
    for r in range(rows):
        q = pos
        for k in range(kinds.size):
            if kinds[k] == 0:
                q += sizes[k]
                continue
            cs = csizes[k]
            if q + cs > n:
                return r, pos, at, cnt
            v = np.int64(0)
            for b in range(cs):
                byte = data[q + b] if big else data[q + cs - 1 - b]
                v = (v << 8) | np.int64(byte)
            if csigned[k] and v >= (np.int64(1) << (8 * cs - 1)):
                v -= np.int64(1) << (8 * cs)
            if v < 0:
                return r, pos, at, cnt  # a negative count: the row is not what the header says
            q += cs
            if k == pick:
                at[r] = q
                cnt[r] = v
            q += v * sizes[k]
        if q > n:
            return r, pos, at, cnt
        pos = q
    return rows, pos, at, cnt


def _ply_binary_elements(raw: Raw, start: int, elements: list, fmt: str, label: str) -> dict:
    """Every element of a binary PLY body: {element: {property: values}}, a list property (the
    face indices, or the first list) as (items (k,), count per row (rows,) int64); other lists
    are skipped. Raises `MeshError` when the body holds less than the header promises."""
    order = "<" if fmt == "binary_little_endian" else ">"
    data = np.frombuffer(raw, dtype=np.uint8)
    pos = start
    out: dict = {}
    for e, (name, count, props) in enumerate(elements):
        if all(p[2] is None for p in props):
            dtype = np.dtype([(p[0], order + p[1]) for p in props])
            if pos + count * dtype.itemsize > data.size:
                held = (data.size - pos) // dtype.itemsize if dtype.itemsize else count
                raise MeshError(f"{label}: truncated binary PLY: "
                                f"{_ply_promise(elements, _held_at(elements, e, held))}")
            rec = np.frombuffer(raw, dtype=dtype, count=count, offset=pos)
            out[name] = {p[0]: rec[p[0]] for p in props}
            pos += count * dtype.itemsize
            continue
        lists = [k for k, p in enumerate(props) if p[2] is not None]
        named = [k for k in lists if props[k][0] in _PLY_INDEX_NAMES]
        pick = named[0] if named else lists[0]
        kinds = np.array([p[2] is not None for p in props], np.int64)
        sizes = np.array([np.dtype(p[1]).itemsize for p in props], np.int64)
        csizes = np.array([np.dtype(p[2] or "u1").itemsize for p in props], np.int64)
        csigned = np.array([(p[2] or "u1")[0] == "i" for p in props], np.bool_)
        done, end, at, cnt = _walk_rows(data, pos, count, kinds, sizes, csizes, csigned,
                                        order == ">", pick)
        if done < count:
            raise MeshError(f"{label}: truncated binary PLY: "
                            f"{_ply_promise(elements, _held_at(elements, e, done))}")
        item = np.dtype(order + props[pick][1])
        total = int(cnt.sum())
        first = np.repeat(at, cnt) + (np.arange(total) - np.repeat(np.cumsum(cnt) - cnt, cnt)) \
            * item.itemsize
        items = data[first[:, None] + np.arange(item.itemsize)].view(item).ravel()
        out[name] = {props[pick][0]: (items, cnt)}
        pos = end
    return out


def _held_at(elements: list, e: int, held: int) -> list[int]:
    """The rows of each element a binary body cut in element ``e``, after ``held`` rows, holds."""
    return [count for _, count, _ in elements[:e]] + [held] + [0] * (len(elements) - e - 1)


def _ply_ascii_elements(raw: Raw, start: int, elements: list, label: str) -> dict | None:
    """`_ply_binary_elements` for an ASCII body (None where trimesh must read it)."""
    total = sum(e[1] for e in elements)
    got, rows = table_checked(raw, start, total, False, label, "PLY")
    if got is None:
        return None
    vals, ntok, _ = got
    if rows < total:
        raise MeshError(f"{label}: {_ply_promise(elements, _ply_held(elements, ntok))}")
    ntok = ntok[:total].astype(np.int64)
    row_start = np.concatenate([[0], np.cumsum(ntok)])
    out: dict = {}
    r = 0
    for name, count, props in elements:
        tok, off = ntok[r: r + count], row_start[r: r + count]
        r += count
        lists = [k for k, p in enumerate(props) if p[2] is not None]
        if not lists:
            if np.any(tok != len(props)):
                return None
            block = vals[off[:, None] + np.arange(len(props))]
            out[name] = {p[0]: block[:, k].astype(p[1]) for k, p in enumerate(props)}
            continue
        li = lists[0]
        if len(lists) != 1 or li != len(props) - 1:
            return None  # a list before other properties: trimesh
        cnt = vals[off + li].astype(np.int64)
        if np.any(cnt < 0) or np.any(tok != li + 1 + cnt):
            return None
        total_items = int(cnt.sum())
        first = np.repeat(off + li + 1, cnt) + np.arange(total_items) \
            - np.repeat(np.cumsum(cnt) - cnt, cnt)
        out[name] = {props[li][0]: (vals[first].astype(props[li][1]), cnt)}
    return out


def _ply_strips(raw: Raw, fmt: str, start: int, elements: list, label: str) -> list[Part] | None:
    """A PLY whose faces are triangle strips (element 'tristrips', as range scanners write):
    read here, trimesh reads them as a point cloud."""
    if fmt == "ascii":
        els = _ply_ascii_elements(raw, start, elements, label)
    else:
        els = _ply_binary_elements(raw, start, elements, fmt, label)
    if els is None or not {"x", "y", "z"} <= set(els.get("vertex", {})):
        return None
    vertex = els["vertex"]
    vertices = np.column_stack([vertex[a] for a in "xyz"])
    if vertices.dtype != np.float32:
        vertices = vertices.astype(np.float64)
    parts = []
    for name in ("face", "tristrips"):
        lists = [v for v in els.get(name, {}).values() if isinstance(v, tuple)]
        if not lists:
            continue
        flat, cnt = lists[0]
        flat = flat.astype(np.int64)
        if name == "tristrips":
            parts.append(strip_triangles(flat, np.repeat(np.arange(cnt.size), cnt)))
        elif cnt.size:
            keep = np.repeat(cnt >= 3, cnt)  # a face of fewer than 3 corners draws nothing
            flat, cnt = flat[keep], cnt[cnt >= 3]
            if cnt.size:
                parts.append(triangulate_mixed(flat, cnt))
    faces = np.concatenate(parts) if parts else np.zeros((0, 3), np.int64)
    if faces.shape[0] == 0:
        raise MeshError(f"{label}: not a triangle mesh: its strips and faces draw no triangle")
    normals = uvs = None
    if {"nx", "ny", "nz"} <= set(vertex):
        normals = np.column_stack([vertex[a] for a in ("nx", "ny", "nz")]).astype(np.float64)
    for u, v in _PLY_UV_PAIRS:
        if u in vertex and v in vertex:
            uvs = np.column_stack([vertex[u], vertex[v]]).astype(np.float64)
            break
    return [(vertices, faces, normals, uvs)]


def _ply_binary(raw, start, nv, nf, vprops, fprops, li, fmt):
    order = "<" if fmt == "binary_little_endian" else ">"
    vdtype = np.dtype([(name, order + t) for name, t, _ in vprops])
    fstart = start + nv * vdtype.itemsize
    count_type = np.dtype(order + fprops[li][2])
    before = np.dtype([(name, order + t) for name, t, _ in fprops[:li]]).itemsize
    if fstart + before + count_type.itemsize > len(raw):
        return None
    k = int(np.frombuffer(raw, dtype=count_type, count=1, offset=fstart + before)[0])
    fields = []
    for idx, (name, t, _) in enumerate(fprops):
        if idx == li:
            fields += [("count", count_type), ("index", order + t, (k,))]
        else:
            fields.append((name, order + t))
    fdtype = np.dtype(fields)
    if fstart + nf * fdtype.itemsize != len(raw) or k < 1:
        return None  # mixed polygon sizes (trimesh's reader assumes the first face's size)
    vertex = np.frombuffer(raw, dtype=vdtype, count=nv, offset=start)
    face = np.frombuffer(raw, dtype=fdtype, count=nf, offset=fstart)
    if np.any(face["count"] != k):
        return None
    columns = {name: vertex[name] for name, _, _ in vprops}
    return columns, face["index"].reshape(nf, k)


def _ply_ascii(raw, start, nv, nf, vprops, fprops, li, elements, label):
    got, rows = table_checked(raw, start, nv + nf, False, label, "PLY")
    if got is None:
        return None
    vals, ntok, _ = got
    if rows < nv + nf:
        raise MeshError(f"{label}: {_ply_promise(elements, _ply_held(elements, ntok))}")
    width_v = len(vprops)
    if np.any(ntok[:nv] != width_v):
        return None
    ftok = ntok[nv:]
    if np.any(ftok != ftok[0]):
        cut = cut_last_line(raw)
        last = vals.size - int(ftok[-1])  # where the last row starts
        if cut is not None and (ftok[-1] <= li or ftok[-1] < len(fprops) + vals[last + li]):
            raise truncated(label, *cut, "an incomplete face")
        return None  # mixed polygon sizes: trimesh's ragged path
    vblock = vals[: nv * width_v].reshape(nv, width_v)
    fblock = vals[nv * width_v:].reshape(nf, int(ftok[0]))
    # numbers are read as float64 and cast to the declared type, as trimesh does
    columns = {name: vblock[:, k].astype(t) for k, (name, t, _) in enumerate(vprops)}
    k = int(fblock[0, li])
    if fblock.shape[1] != len(fprops) + k or np.any(fblock[:, li] != k):
        return None
    faces = fblock[:, li + 1: li + 1 + k].astype(fprops[li][1])
    return columns, faces


