"""Fast readers for OBJ, STL, PLY and OFF that give exactly what the trimesh path gives.

`load_mesh` used to read every file through trimesh: importing it costs ~0.5 s and its OBJ parser
~0.35 s for igea (269k triangles), more than the build itself. These readers parse the common
forms of the four text/binary formats with numpy and one numba kernel per text layout (OBJ lines,
whitespace tables), and return the same per-geometry arrays as ``load._flatten`` returns for a
trimesh scene, so that `mesh_from_arrays` builds a bit-identical `Mesh` (same positions, wedge
order, triangles, normals, uvs). Where trimesh's result depends on one of its quirks, the quirk is
reproduced, not fixed:

- OBJ faces are split into one geometry per ``usemtl`` material, the geometries taken in the
  reverse order of each material's first use; each keeps only the vertices it references, in
  index order, or, when faces carry ``vt``/``vn`` indices, the distinct (v, vt, vn) index triples
  ordered as trimesh's ``unmerge_faces`` orders them (its hash and its unstable argsort, copied).
- Negative OBJ indices count back from the end of the whole file's list, not from the line.
- Polygons: a group whose face lines all have the same corner count is triangulated like
  ``Trimesh.faces`` (quads: every first half, then every second half; larger: fans); a group with
  mixed counts per line (quads: (0 1 2)(2 3 0); larger: fans).
- ``vt``/``vn`` indices out of range drop the uvs/normals of that geometry, and face lines of
  fewer than three corners are skipped (by trimesh: this reader leaves such a file to it);
  `warn_face_lines` names both, whichever reader read the file.

Differences, where trimesh fails or reads wrong: OFF files with polygons larger than quads,
which trimesh fails to read under numpy 2 (a string multiply in its fan code), are read, fanned as
that code means to; PLY triangle strips (an element 'tristrips', as range scanners write them,
which trimesh reads as a point cloud) are read; a comment after the data of an OBJ vertex or face
line, where trimesh fails ("could not be read to its end"), ends the line, and so does one in an
OFF file, where trimesh's comment stripping repeats text (a face after such a comment was lost
without a word); OBJ and ASCII STL text that is not UTF-8 is read as Latin-1 (trimesh needs
charset_normalizer to guess an encoding); a binary STL whose header says 0 triangles, or that
has bytes after its last one, is read with a `MeshWarning`.

A file no reader can read right raises `MeshError` here, saying what is wrong, instead of going
to trimesh: bytes no text file holds in a text format, a file cut inside a line or a record, a
body holding fewer rows than its header promises, a PLY header without 'end_header', an OBJ
without faces or with a vertex of fewer than three coordinates.

Anything else (vertex lines with mixed column counts, mixed corner layouts, line continuations,
indented lines, tabs after a keyword, several STL solids, PLY uvs or extra elements, numbers
the parsers do not know) returns None, and `load_mesh` hands the file to trimesh as
before. The numba kernels are compiled once and cached on disk (``cache=True``); loading one from
the cache costs 5-15 ms, after numba's own first-call set-up (~0.3 s, which the build would pay
anyway). Measured on the 2-core machine: igea 0.04 s to read (trimesh: 0.35 s plus 0.5 s of
import), a 1M-triangle OBJ 0.2 s, the same as binary PLY 0.01 s.
"""

from __future__ import annotations

import mmap
import re
import warnings
from pathlib import Path

import preprocess.numba_cache  # noqa: F401  (first: drops stale numba caches)
import numba as nb
import numpy as np

from preprocess.mesh import MeshError, MeshWarning

__all__ = ["check_text", "has_material_library", "is_text", "mtl_library_names", "read_obj_bytes",
           "read_parts"]

#: One geometry as `load._flatten` returns it: positions (n, 3) float, triangles (m, 3) int64,
#: normals (n, 3) float64 or None, uvs (n, 2) float64 or None.
Part = tuple[np.ndarray, np.ndarray, "np.ndarray | None", "np.ndarray | None"]
#: The file's bytes: mapped by `read_parts` (tests may pass bytes).
Raw = "bytes | mmap.mmap"


def read_parts(path: Path, file_type: str, label: str) -> list[Part] | None:
    """The geometry of a mesh file as trimesh would give it, or None when trimesh must read it.

    Args:
        path: an existing, non-empty file.
        file_type: ``"obj"``, ``"stl"``, ``"ply"``, ``"off"`` (others give None).
        label: how error messages name the file.

    Raises:
        MeshError: one line naming the file: face indices out of range, or a file that is not
            of its format, is cut short or holds less than its header says (see the module
            docstring). Anything else these readers leave out returns None, for trimesh.

    Warns:
        MeshWarning: what is read anyway (a binary STL's count of 0, bytes after its end), or
            left out (OBJ uv and normal indices out of range, faces of fewer than 3 corners).
    """
    reader = _READERS.get(file_type)
    if reader is None:
        return None
    if path.stat().st_size == 0:
        return None  # nothing to map
    with path.open("rb") as f:
        # mapped, not read: no copy of the file, and its pages come from the page cache as the
        # parser reaches them (arrays made from it keep the map alive)
        raw = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    if file_type == "obj" and has_material_library(raw, path):
        return None  # materials: trimesh reads the MTL files and their textures
    return reader(raw, label)


_MTLLIB = re.compile(rb"^[ \t]*mtllib[ \t]+([^\r\n]+)", re.MULTILINE)


def mtl_library_names(raw: Raw) -> list[str]:
    """The MTL file names an OBJ's `mtllib` lines give."""
    if raw.find(b"mtllib") < 0:
        return []  # the common case: a byte search, not a regular expression over every line
    return [m.group(1).strip().decode("utf-8", "replace") for m in _MTLLIB.finditer(raw)]


def has_material_library(raw: Raw, path: Path) -> bool:
    """Whether an OBJ names an MTL file that exists beside it (its materials need trimesh)."""
    return any((path.parent / name).is_file() for name in mtl_library_names(raw))


# --------------------------------------------------------------------------------------------------
# Numbers: an exact fast path for decimal text, the rest handed back to numpy


# 10**k is exact in float64 for k <= 22: one multiplication or division by it rounds correctly
# (Clinger's fast path), so these values equal strtod's, which numpy's text parsers use.
_POW10 = np.array([10.0**k for k in range(23)], dtype=np.float64)
_MAX_EXACT = 1 << 53

# token classes returned by _parse_number
_NUM_OK = 0  # value exact
_NUM_HARD = 1  # a number the fast path cannot round exactly (or nan/inf): parse it in Python
_NUM_BAD = 2  # not a number this reader accepts

# kernel status codes (anything but _OK means: let trimesh read the file)
_OK = 0


@nb.njit(cache=True, nogil=True, inline="always")
def _is_blank(c: int) -> bool:
    return c == 32 or c == 9


@nb.njit(cache=True, nogil=True, inline="always")
def _line_span(data: np.ndarray, i: int) -> tuple[int, int]:
    """(the index of the newline ending the line that starts at i (or the size), where its text
    stops: before a CR of a CRLF)."""
    n = data.size
    e = i
    while e < n and data[e] != 10:
        e += 1
    return e, (e - 1 if e > i and data[e - 1] == 13 else e)


@nb.njit(cache=True, nogil=True, inline="always")
def _token_end(data: np.ndarray, j: int) -> bool:
    """True at the end of a token: a blank, a line end, a comment or the end of the data."""
    if j >= data.size:
        return True
    c = data[j]
    return c == 32 or c == 9 or c == 10 or c == 13 or c == 35


@nb.njit(cache=True, nogil=True)
def _parse_number(data, i, pow10):
    """Parse the decimal number at ``data[i]``: returns (value, end index, class)."""
    n = data.size
    j = i
    neg = False
    c = data[j]
    if c == 45:  # '-'
        neg = True
        j += 1
    elif c == 43:  # '+'
        j += 1
    if j < n and ((data[j] | 32) == 105 or (data[j] | 32) == 110):  # 'i' or 'n': inf, nan
        while not _token_end(data, j):
            j += 1
        return 0.0, j, _NUM_HARD
    mant = 0
    ndig = 0
    exp10 = 0
    digits = 0
    inexact = False
    while j < n and 48 <= data[j] <= 57:
        d = data[j] - 48
        digits += 1
        if mant != 0 or d != 0:
            if ndig < 18:
                mant = mant * 10 + d
                ndig += 1
            else:
                exp10 += 1
                inexact = True
        j += 1
    if j < n and data[j] == 46:  # '.'
        j += 1
        while j < n and 48 <= data[j] <= 57:
            d = data[j] - 48
            digits += 1
            if mant != 0 or d != 0:
                if ndig < 18:
                    mant = mant * 10 + d
                    ndig += 1
                    exp10 -= 1
                else:
                    inexact = True
            else:
                exp10 -= 1
            j += 1
    if digits == 0:
        return 0.0, j, _NUM_BAD
    if j < n and (data[j] | 32) == 101:  # 'e' or 'E'
        j += 1
        eneg = False
        if j < n and (data[j] == 45 or data[j] == 43):
            eneg = data[j] == 45
            j += 1
        e = 0
        edigits = 0
        while j < n and 48 <= data[j] <= 57:
            if e < 100000:
                e = e * 10 + (data[j] - 48)
            edigits += 1
            j += 1
        if edigits == 0:
            return 0.0, j, _NUM_BAD
        exp10 += -e if eneg else e
    if not _token_end(data, j):
        return 0.0, j, _NUM_BAD
    if mant == 0:
        return -0.0 if neg else 0.0, j, (_NUM_HARD if inexact else _NUM_OK)
    if inexact or mant >= _MAX_EXACT or exp10 > 22 or exp10 < -22:
        return 0.0, j, _NUM_HARD
    v = float(mant)
    if exp10 >= 0:
        v = v * pow10[exp10]
    else:
        v = v / pow10[-exp10]
    return (-v if neg else v), j, _NUM_OK


@nb.njit(cache=True, nogil=True, inline="always")
def _grow(a, need):
    """``a`` if it holds ``need`` items, else a copy twice as long (amortized appends)."""
    if need <= a.size:
        return a
    b = np.empty(max(need, 2 * a.size), dtype=a.dtype)
    b[: a.size] = a
    return b


def _fix_hard(values: np.ndarray, index: np.ndarray, starts: np.ndarray, ends: np.ndarray,
              raw: Raw) -> bool:
    """Parse the numbers the kernel left out, as numpy's text parser does; False if one fails."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # older numpy warns on a token it cannot read
        for k, s, e in zip(index.tolist(), starts.tolist(), ends.tolist(), strict=True):
            try:
                parsed = np.fromstring(raw[s:e], sep=" ")  # the parser trimesh's readers use
            except ValueError:  # numpy 2.x: text it cannot read to its end
                return False
            if parsed.size != 1:
                return False
            values[k] = parsed[0]
    return True


# --------------------------------------------------------------------------------------------------
# Text files that are not text, or cut short
#
# A reader that finds one of these raises `MeshError` instead of handing the file to trimesh,
# whose errors on them said nothing useful (its text decoder imports charset_normalizer, which is
# not installed, for any byte that is not UTF-8).

# bytes no text mesh file holds: the C0 controls but tab, line feed, vertical tab, form feed and
# carriage return, and DEL
_CONTROL = np.zeros(256, dtype=np.bool_)
_CONTROL[:32] = True
_CONTROL[[9, 10, 11, 12, 13]] = False
_CONTROL[127] = True


def _check_text(raw: Raw, label: str, kind: str, start: int = 0) -> None:
    """Raise `MeshError` naming the first control byte at or after ``start``, if any."""
    data = np.frombuffer(raw, dtype=np.uint8)[start:]
    hit = np.flatnonzero(_CONTROL[data])
    if hit.size:
        at = start + int(hit[0])
        raise MeshError(f"{label}: not a text {kind} file (byte 0x{raw[at]:02x} at offset {at})")


def is_text(raw: Raw) -> bool:
    """Whether bytes hold no control byte (see `_CONTROL`)."""
    return not _CONTROL[np.frombuffer(raw, dtype=np.uint8)].any()


def check_text(raw: Raw, label: str, kind: str) -> None:
    """Raise `MeshError` when a file of a text format (its bytes) holds a byte no text file
    holds."""
    _check_text(raw, label, kind)


def line_number(raw: Raw, offset: int) -> int:
    """The 1-based number of the line holding byte ``offset``."""
    return int(np.count_nonzero(np.frombuffer(raw, dtype=np.uint8)[:offset] == 10)) + 1


def _cut_last_line(raw: Raw) -> tuple[int, bytes] | None:
    """(number, text) of the last line when the file ends inside it (no final line feed)."""
    if len(raw) == 0 or raw[-1:] in (b"\n", b"\r"):
        return None
    start = raw.rfind(b"\n") + 1
    return line_number(raw, start), bytes(raw[start:])


def _truncated(label: str, number: int, text: bytes, what: str) -> MeshError:
    shown = text.decode("latin-1")
    shown = shown if len(shown) <= 40 else shown[:37] + "..."
    return MeshError(f"{label}: the file ends inside line {number} ({shown!r}: {what}); "
                     f"it looks truncated")


# --------------------------------------------------------------------------------------------------
# OBJ

# kinds of float lines
_V, _VT, _VN = 0, 1, 2
# a uv or normal corner index that is out of range whichever way it is read (a relative one that
# reaches before its list): that geometry is read without uvs or normals
_BEFORE = -(1 << 40)
# _scan_obj flags
_CONTINUED, _NON_ASCII, _BINARY, _COMMENTED = 1, 2, 4, 8
# bytes that pass 1 of _scan_obj looks at twice: backslash, 'u', control bytes, everything above
# ASCII
_OBJ_SPECIAL = np.zeros(256, dtype=np.bool_)
_OBJ_SPECIAL[[35, 92, 117]] = True  # '#', '\\', 'u'
_OBJ_SPECIAL[_CONTROL] = True
_OBJ_SPECIAL[128:] = True
# corner layouts: v, v/vt, v//vn, v/vt/vn
_P_V, _P_VT, _P_VN, _P_VTN = 0, 1, 2, 3


@nb.njit(cache=True, nogil=True, inline="always")
def _parse_index(data, j):
    """Parse an OBJ index at ``data[j]``: returns (value, end, ok, is the bare token '0')."""
    n = data.size
    k = j
    neg = False
    if k < n and data[k] == 45:
        neg = True
        k += 1
    start = k
    v = 0
    while k < n and 48 <= data[k] <= 57:
        v = v * 10 + (data[k] - 48)
        k += 1
    nd = k - start
    if nd == 0 or nd > 17:
        return 0, k, False, False
    bare_zero = (not neg) and nd == 1 and v == 0
    return (-v if neg else v), k, True, bare_zero


@nb.njit(cache=True, nogil=True)
def _scan_obj(data, pow10, special):
    """Two passes over an OBJ file's bytes: bound the buffer sizes, then parse.

    Returns, in order: status (0, or the 1-based number of the first line this reader leaves to
    trimesh); flags (`_CONTINUED`, `_NON_ASCII`, `_BINARY`); the count of "usemtl " anywhere in
    the text; the v, vt, vn value buffers; lines per kind; values per line per kind (-2 where
    lines differ); the corner v, vt, vn index buffers (0-based as trimesh shifts them; vt and vn
    only for corners that have them) and their three counts; per face line its corner count,
    layout and material (index of its usemtl line, -1 before any); the face line count; the
    usemtl name spans and count; the hard numbers (kind, buffer index, start, end) and count; the
    first line with a face index ``0``; the first line with a relative (negative) vertex index
    that reaches before the first vertex.
    """
    n = data.size
    # Pass 1: lines and bytes per kind. A line of b bytes holds at most b // 2 numbers: the
    # buffers below are bounds, mostly never touched (so never paged in); counting the numbers
    # themselves made this pass 3x slower. It also looks for what makes trimesh read a file
    # differently (one scan here instead of one per pattern in Python).
    ntok = np.zeros(4, np.int64)  # bounds on the v, vt, vn values and the face corners
    nface = 0
    nmtl = 0
    flags = 0  # _CONTINUED: a backslash ending a line; _NON_ASCII: bytes above 127
    usemtl_anywhere = 0  # "usemtl " at any position (trimesh splits at each)
    i = 0
    while i < n:
        c = data[i]
        e = i
        while e < n:
            b = data[e]
            if b == 10:
                break
            if special[b]:
                if b >= 128:
                    flags |= _NON_ASCII
                elif b < 32 or b == 127:
                    flags |= _BINARY
                elif b == 35:  # '#'
                    if e > i:
                        flags |= _COMMENTED  # after something: the end of a line's data?
                elif b == 92:  # '\\'
                    q = e + 1
                    while q < n and (data[q] == 32 or data[q] == 9 or data[q] == 13):
                        q += 1
                    if q == n or (data[q] == 10 and (q == e + 1 or data[e + 1] == 13)):
                        flags |= _CONTINUED
                elif (b == 117 and e + 6 < n and data[e + 1] == 115 and data[e + 2] == 101
                      and data[e + 3] == 109 and data[e + 4] == 116 and data[e + 5] == 108
                      and data[e + 6] == 32):  # "usemtl "
                    usemtl_anywhere += 1
            e += 1
        if c == 118:  # 'v'
            c1 = data[i + 1] if i + 1 < n else 0
            if c1 == 32:
                ntok[_V] += (e - i) // 2
            elif c1 == 116:
                ntok[_VT] += (e - i) // 2
            elif c1 == 110:
                ntok[_VN] += (e - i) // 2
        elif c == 102:  # 'f'
            ntok[3] += (e - i) // 2
            nface += 1
        elif c == 117:  # 'u'
            nmtl += 1
        i = e + 1
    vals_v = np.empty(ntok[_V], np.float64)
    vals_t = np.empty(ntok[_VT], np.float64)
    vals_n = np.empty(ntok[_VN], np.float64)
    nvals = np.zeros(3, np.int64)
    nlines = np.zeros(3, np.int64)
    width = np.full(3, -1, np.int64)
    cv = np.empty(ntok[3], np.int64)
    ct = np.empty(ntok[3], np.int64)
    cn = np.empty(ntok[3], np.int64)
    ncorner = 0
    nt = 0
    nn = 0
    fsize = np.empty(nface, np.int32)
    fpat = np.empty(nface, np.int8)
    fmat = np.empty(nface, np.int32)
    mspan = np.empty(2 * nmtl, np.int64)
    hard = np.empty(64, np.int64)  # (kind, index, start, end) per hard number
    nface = 0
    nmtl = 0
    nhard = 0
    zero_line = 0
    before_line = 0  # the first face line whose relative vertex index reaches before the list
    cur_mat = -1
    status = 0
    line = 0
    # Pass 2: parse.
    i = 0
    while i < n and status == 0:
        line += 1
        e, stop = _line_span(data, i)
        nxt = e + 1
        if stop == i:
            i = nxt
            continue
        c = data[i]
        if flags & _COMMENTED and (c == 118 or c == 102):  # a comment ends a 'v' or 'f' line
            for q in range(i + 1, stop):
                if data[q] == 35:
                    stop = q
                    break
        c1 = data[i + 1] if i + 1 < stop else 0
        c2 = data[i + 2] if i + 2 < stop else 0
        kind = -1
        j = i
        if c == 118:  # 'v'
            if c1 == 32:
                kind = _V
                j = i + 2
            elif (c1 == 116 or c1 == 110) and c2 == 32:  # vt, vn
                kind = _VT if c1 == 116 else _VN
                j = i + 3
            elif c1 == 9 or ((c1 == 116 or c1 == 110) and c2 == 9):
                status = line  # trimesh only knows 'v ' with a space
        if kind >= 0:
            count = 0
            at = nvals[kind]
            while True:
                while j < stop and _is_blank(data[j]):
                    j += 1
                if j >= stop:
                    break
                value, j2, cls = _parse_number(data, j, pow10)
                if cls == _NUM_BAD:
                    status = line
                    break
                if kind == _V:
                    vals_v[at] = value
                elif kind == _VT:
                    vals_t[at] = value
                else:
                    vals_n[at] = value
                if cls == _NUM_HARD:
                    if 4 * nhard + 4 > hard.size:
                        hard = _grow(hard, 4 * nhard + 4)
                    hard[4 * nhard] = kind
                    hard[4 * nhard + 1] = at
                    hard[4 * nhard + 2] = j
                    hard[4 * nhard + 3] = j2
                    nhard += 1
                at += 1
                count += 1
                j = j2
            nvals[kind] = at
            if width[kind] == -1:
                width[kind] = count
            elif width[kind] != count:
                width[kind] = -2
            nlines[kind] += 1
        elif c == 102:  # 'f'
            if c1 != 32:
                status = line  # trimesh splits faces at every line starting with 'f'
            j = i + 2
            corners = 0
            pat = -1
            while status == 0:
                while j < stop and _is_blank(data[j]):
                    j += 1
                if j >= stop:
                    break
                vi, j, ok, bare_zero = _parse_index(data, j)
                if bare_zero and zero_line == 0:
                    zero_line = line
                ti = 0
                ni = 0
                p = _P_V
                if ok and j < stop and data[j] == 47:  # '/'
                    j += 1
                    if j < stop and data[j] == 47:
                        ni, j, ok, _ = _parse_index(data, j + 1)
                        p = _P_VN
                    else:
                        ti, j, ok, _ = _parse_index(data, j)
                        p = _P_VT
                        if ok and j < stop and data[j] == 47:
                            ni, j, ok, _ = _parse_index(data, j + 1)
                            p = _P_VTN
                if not ok or (pat != -1 and p != pat) or not _token_end(data, j):
                    status = line  # a malformed corner, or layouts mixed within a line
                    break
                pat = p
                # 1-based; a negative index counts back from the last element defined above
                # this line (the OBJ rule: -1 is the latest vertex; trimesh counts from the end
                # of the whole file's list instead); 0 stays 0
                cv[ncorner] = vi - 1 if vi > 0 else (nlines[_V] + vi if vi < 0 else 0)
                if vi < 0 and nlines[_V] + vi < 0 and before_line == 0:
                    before_line = line
                # (a uv or normal one before its list: out of range whichever way it is read,
                # so that geometry is read without them, as with any index out of range)
                if p == _P_VT or p == _P_VTN:
                    ct[nt] = ti - 1 if ti > 0 else (nlines[_VT] + ti if ti < 0 else 0)
                    if ct[nt] < 0:
                        ct[nt] = _BEFORE
                    nt += 1
                if p == _P_VN or p == _P_VTN:
                    cn[nn] = ni - 1 if ni > 0 else (nlines[_VN] + ni if ni < 0 else 0)
                    if cn[nn] < 0:
                        cn[nn] = _BEFORE
                    nn += 1
                ncorner += 1
                corners += 1
            if status == 0 and corners < 3:
                status = line  # trimesh skips or misreads faces with fewer than 3 corners
            if status == 0:
                fsize[nface] = corners
                fpat[nface] = pat
                fmat[nface] = cur_mat
                nface += 1
        elif c == 117 and stop - i >= 7:  # 'u'
            if (c1 == 115 and c2 == 101 and data[i + 3] == 109 and data[i + 4] == 116
                    and data[i + 5] == 108 and data[i + 6] == 32):  # "usemtl "
                mspan[2 * nmtl] = i + 7
                mspan[2 * nmtl + 1] = stop
                cur_mat = nmtl
                nmtl += 1
        elif _is_blank(c):
            for q in range(i, stop):
                if not _is_blank(data[q]):
                    status = line  # an indented line: trimesh would not see its keyword
                    break
        # other lines (comments, o, g, s, mtllib, l, p, vp, ...) carry nothing trimesh keeps
        i = nxt
    return (status, flags, usemtl_anywhere, vals_v, vals_t, vals_n, nlines, width, cv, ct, cn,
            ncorner, nt, nn, fsize, fpat, fmat, nface, mspan, nmtl, hard, nhard, zero_line,
            before_line)


def _hashable_rows(stack: np.ndarray) -> np.ndarray:
    """trimesh.grouping.hashable_rows for (n, <=4) int64 rows, copied so that its order is ours."""
    precision = int(np.floor(64 / stack.shape[1]))
    d_min, d_max = stack.min(), stack.max()
    threshold = (2 ** (precision - 1)) - 1
    if d_max < threshold and d_min > -threshold:
        hashable = np.zeros(len(stack), dtype=np.uint64)
        bitbang = (stack.T + (threshold + 1)).astype(np.uint64)
        for offset, column in enumerate(bitbang):
            np.bitwise_xor(hashable, column << (offset * precision), out=hashable)
        return hashable
    dtype = np.dtype((np.void, stack.dtype.itemsize * stack.shape[1]))
    return np.ascontiguousarray(stack).view(dtype).reshape(-1)


def _unmerge(faces: np.ndarray, *args: np.ndarray) -> list[np.ndarray]:
    """trimesh.visual.texture.unmerge_faces (maintain_faces=False), step for step.

    One output vertex per distinct (v, vt[, vn]) index tuple, ordered by v index with trimesh's
    tie order (its row hash sorted by ``np.unique``, then an unstable ``argsort``): the order
    decides the wedge order of the `Mesh`, so it is copied, not improved.
    """
    stack = np.column_stack([faces.reshape(-1)] + [a.reshape(-1) for a in args])
    rows = _hashable_rows(stack)
    unique, inverse = np.unique(rows, return_index=True, return_inverse=True)[1:]
    pairs = stack[unique]
    order = pairs[:, 0].argsort()
    pairs = pairs[order]
    remap = np.zeros(len(order), dtype=np.int64)
    remap[order] = np.arange(len(order))
    new_faces = remap[inverse].reshape((-1, faces.shape[1]))
    return [new_faces, *pairs.T]


def _triangulate_uniform(faces: np.ndarray) -> np.ndarray:
    """(n, k) polygons to triangles as ``Trimesh.faces`` does (trimesh.geometry.triangulate_quads).

    Quads: all first halves (0 1 2), then all second halves (2 3 0); larger polygons: a fan each.
    """
    k = faces.shape[1]
    if k == 3:
        return faces
    if k == 4:
        return np.vstack((faces[:, [0, 1, 2]], faces[:, [2, 3, 0]]))
    fan = np.stack([np.zeros(k - 2, np.int64), np.arange(1, k - 1), np.arange(2, k)], axis=1)
    return faces[:, fan].reshape(-1, 3)


def _triangulate_lines(sizes: np.ndarray) -> np.ndarray:
    """Corner offsets of the triangles of polygons given line by line (trimesh's OBJ fallback).

    Per line of ``sizes[i]`` corners: a triangle as is, a quad as (0 1 2)(2 3 0), a larger polygon
    as a fan (0 i+1 i+2). Returns (t, 3) int64 indices into the flat corner list.
    """
    sizes = sizes.astype(np.int64)
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    tris = sizes - 2
    line = np.repeat(np.arange(sizes.size), tris)
    j = np.arange(line.size) - np.repeat(np.cumsum(tris) - tris, tris)  # triangle within line
    corner = np.stack([np.zeros_like(j), j + 1, j + 2], axis=1)
    second_of_quad = (sizes[line] == 4) & (j == 1)
    corner[second_of_quad] = [2, 3, 0]
    return starts[line][:, None] + corner


def _obj_group(v, vt, vn, cv, ct, cn, sizes, pat, pats, label, dropped):
    """One material group of an OBJ file as trimesh's load_obj builds its geometry, or None.

    ``cv``, ``ct``, ``cn``: the group's corner indices (0-based as trimesh shifts them; ``ct``
    and ``cn`` empty unless the layout ``pat`` has them); ``sizes`` and ``pats``: corner count and
    layout of each face line; ``dropped``: gets "uvs" or "normals" where indices out of range
    leave them out.
    """
    if np.any(pats != pat):
        return None  # mixed corner layouts in one geometry: trimesh's per-line path drops them
    if pat not in (_P_VT, _P_VTN):
        ct = None
    if pat not in (_P_VN, _P_VTN):
        cn = None
    nv = v.shape[0]
    if np.all(sizes == sizes[0]):
        # trimesh's vectorized path: (n, k) arrays, triangulated by the Trimesh constructor
        k = int(sizes[0])
        faces = cv.reshape(-1, k)
        tex = None if ct is None else ct.reshape(-1, k)
        norm = None if cn is None else cn.reshape(-1, k)
        uniform = True
    else:
        # trimesh's per-line fallback: polygons triangulated line by line, then unmerged
        tri = _triangulate_lines(sizes)
        faces = cv[tri]
        tex = None if ct is None else ct[tri]
        norm = None if cn is None else cn[tri]
        uniform = False

    def check_v(idx: np.ndarray) -> None:
        lo, hi = int(idx.min()), int(idx.max())
        if lo < -nv or hi >= nv:
            bad = lo if lo < -nv else hi
            shown = bad + 1 if bad >= 0 else bad  # as written in the file
            raise MeshError(
                f"{label}: face index {shown} out of range (the file has {nv} vertices)"
            )

    uv = normals = None
    if tex is not None:
        if norm is not None:
            new_faces, mask_v, mask_vt, mask_vn = _unmerge(faces, tex, norm)
        else:
            new_faces, mask_v, mask_vt = _unmerge(faces, tex)
            mask_vn = None
        check_v(mask_v)
        if _in_range(mask_vt, vt):
            uv = vt[mask_vt]
        else:
            dropped.append("uvs")
        vertices = v[mask_v]
    elif norm is not None and vn is not None:
        new_faces, mask_v, mask_vn = _unmerge(faces, norm)
        check_v(mask_v)
        vertices = v[mask_v]
    else:
        if norm is not None:  # normal indices, and not one 'vn' line
            dropped.append("normals")
        check_v(faces)
        mask = np.zeros(nv, dtype=bool)
        mask[faces] = True
        if mask.all():  # every vertex used: trimesh's compaction changes nothing
            new_faces = np.where(faces < 0, faces + nv, faces) if faces.min() < 0 else faces
            vertices = v
        else:
            inverse = np.zeros(nv, dtype=np.int64)
            inverse[mask] = np.arange(int(mask.sum()))
            new_faces = inverse[faces]
            vertices = v[mask]
        mask_vn = None
    if mask_vn is not None:
        if _in_range(mask_vn, vn):
            normals = vn[mask_vn]
        else:
            dropped.append("normals")
    if uniform:
        new_faces = _triangulate_uniform(new_faces)
    if vertices.shape[1] >= 6:  # 'v x y z r g b': colours after the position
        return vertices[:, :3], new_faces, normals, uv, _obj_colors(vertices[:, 3:6], label)
    return vertices, new_faces, normals, uv


def _obj_colors(rgb: np.ndarray, label: str) -> np.ndarray:
    """(n, 4) float64 linear RGBA of OBJ vertex colours (the three values after a vertex's
    position), as trimesh reads them on the other path (its 8-bit RGBA of values 0..1, clipped),
    then 8-bit sRGB to linear like every other file's colours. Values above 1 (a 0..255 file)
    are named in a warning: they read as 1."""
    from trimesh.visual.color import to_rgba

    from preprocess.materials import vertex_rgba

    if rgb.size and float(np.nanmax(rgb)) > 1.0:
        warnings.warn(f"{label}: vertex colours above 1 (0..255?): read as 0..1, clipped",
                      MeshWarning, stacklevel=3)
    return vertex_rgba(to_rgba(np.array(rgb, np.float64)).astype(np.float64) / 255.0)


def _in_range(idx: np.ndarray, values: np.ndarray | None) -> bool:
    """Whether the 0-based indices idx (negative: from the end) all point into values."""
    n = 0 if values is None else len(values)
    return bool(int(idx.min()) >= -n and int(idx.max()) < n)


@nb.njit(cache=True, nogil=True)
def _face_lines(data):
    """What trimesh leaves out of an OBJ's face lines without a word: ((count, 1-based line of
    the first) of the face lines with fewer than three corners; per kind, vt then vn: the lines
    of that kind, the largest positive index the corners give and its line, the first relative
    (negative) index that reaches before the elements of its kind above its line, its line and
    how many there were). A '#' ends a line's corners."""
    n = data.size
    short = np.zeros(2, np.int64)
    lines = np.zeros(2, np.int64)
    hi = np.zeros(2, np.int64)  # per kind: the largest index, and below its line
    hi_line = np.zeros(2, np.int64)
    lo = np.zeros(2, np.int64)  # per kind: a relative index before its list, its line, and
    lo_line = np.zeros(2, np.int64)  # how many of that kind lay above the line
    lo_above = np.zeros(2, np.int64)
    line = 0
    i = 0
    while i < n:
        line += 1
        e, stop = _line_span(data, i)
        c = data[i] if stop > i else 0
        c1 = data[i + 1] if stop > i + 1 else 32
        if c == 118 and c1 == 116 and (stop - i == 2 or _is_blank(data[i + 2])):  # 'vt'
            lines[0] += 1
        elif c == 118 and c1 == 110 and (stop - i == 2 or _is_blank(data[i + 2])):  # 'vn'
            lines[1] += 1
        elif c == 102 and _is_blank(c1):  # 'f'
            tokens = 0
            j = i + 1
            while j < stop and data[j] != 35:  # '#'
                if _is_blank(data[j]):
                    j += 1
                    continue
                tokens += 1
                _, j, _, _ = _parse_index(data, j)  # the vertex's: checked elsewhere
                k = 0  # 0: vt, 1: vn
                while k < 2 and j < stop and data[j] == 47:  # '/'
                    v, j, ok, _ = _parse_index(data, j + 1)
                    if ok:
                        if v > hi[k]:
                            hi[k] = v
                            hi_line[k] = line
                        if v < 0 and lines[k] + v < 0 and lo_line[k] == 0:
                            lo[k] = v  # relative, before the first of its kind above the line
                            lo_line[k] = line
                            lo_above[k] = lines[k]
                    k += 1
                while j < stop and not _is_blank(data[j]) and data[j] != 35:
                    j += 1  # the rest of a malformed corner
            if tokens < 3:
                short[0] += 1
                if short[1] == 0:
                    short[1] = line
        i = e + 1
    return short, lines, hi, hi_line, lo, lo_line, lo_above


@nb.njit(cache=True, nogil=True)
def _absolute_indices(data):
    """An OBJ's bytes with each relative (negative) face index written as the absolute one it
    means (-1: the latest element of its list defined above the line; a uv or normal one that
    reaches before its list: one past the end, out of range), and the first line where a vertex
    one reaches before the first vertex (0: none); (empty, 0) for a file without any."""
    n = data.size
    count = np.zeros(3, np.int64)  # v, vt, vn lines so far
    total = np.zeros(3, np.int64)  # in the whole file
    negatives = 0
    passes = 2
    out = np.empty(0, np.uint8)
    o = 0
    before = 0
    for pass_ in range(passes):
        count[:] = 0
        line = 0
        i = 0
        while i < n:
            line += 1
            e, stop = _line_span(data, i)
            c = data[i] if stop > i else 0
            c1 = data[i + 1] if stop > i + 1 else 0
            c2 = data[i + 2] if stop > i + 2 else 0
            copy_from = i
            if c == 118 and c1 == 32:  # 'v ': as the scan counts them
                count[0] += 1
            elif c == 118 and (c1 == 116 or c1 == 110) and c2 == 32:  # 'vt ', 'vn '
                count[1 if c1 == 116 else 2] += 1
            elif c == 102 and _is_blank(c1):  # 'f'
                j = i + 1
                k = 0  # 0: v, 1: vt, 2: vn within a corner
                while j < stop and data[j] != 35:  # '#'
                    b = data[j]
                    if _is_blank(b):
                        k = 0
                        j += 1
                        continue
                    if b == 47:  # '/'
                        k = min(k + 1, 2)
                        j += 1
                        continue
                    if b == 45:  # '-': a relative index
                        v, end, ok, _ = _parse_index(data, j)
                        if ok:
                            if pass_ == 0:
                                negatives += 1
                            else:
                                absolute = count[k] + v + 1
                                if absolute < 1:
                                    if k == 0 and before == 0:
                                        before = line
                                    absolute = total[k] + 1  # out of range: read without
                                    # that geometry's uvs or normals, as the fast reader does
                                for q in range(copy_from, j):
                                    out[o] = data[q]
                                    o += 1
                                text = str(absolute)  # numba: the digits of an int
                                for ch in text:
                                    out[o] = ord(ch)
                                    o += 1
                                copy_from = end
                            j = end
                            continue
                    j += 1
            if pass_ == 1:
                for q in range(copy_from, min(e + 1, n)):
                    out[o] = data[q]
                    o += 1
            i = e + 1
        if pass_ == 0:
            if negatives == 0:
                return out, 0
            out = np.empty(n + 20 * negatives, np.uint8)
            total[:] = count
    return out[:o], before


def _relative_error(label: str, line: int) -> MeshError:
    return MeshError(f"{label}: line {line}: a relative face index out of range (a negative "
                     f"index counts back from the last vertex above its line)")


def absolute_obj_indices(raw: Raw, label: str) -> bytes | None:
    """The OBJ text for trimesh, which reads a relative (negative) face index from the end of the
    whole file's list: each written as the absolute index it means, or None where none is
    relative (the file as it is). Raises `MeshError` for one that reaches before its list."""
    if raw.find(b"-") < 0:  # no negative number anywhere: nothing to scan
        return None
    out, before = _absolute_indices(np.frombuffer(raw, np.uint8))
    if before:
        raise _relative_error(label, int(before))
    return out.tobytes() if out.size else None


def _many(count: int, noun: str) -> str:
    """'1 normal', '2 normals' (noun: the plural)."""
    return f"{count} {noun if count != 1 else noun[:-1]}"


def warn_face_lines(raw: Raw, label: str) -> None:
    """`MeshWarning`s for what an OBJ's faces lose as trimesh reads them (and the fast reader,
    which gives what trimesh gives): face lines of fewer than three corners (skipped), uv or
    normal indices out of range (that geometry read without them)."""
    short, lines, hi, hi_line, lo, lo_line, lo_above = _face_lines(np.frombuffer(raw, np.uint8))
    if short[0]:
        warnings.warn(f"{label}: {short[0]} face line{'s' if short[0] > 1 else ''} with fewer "
                      f"than 3 corners skipped (line {short[1]}; a line is 'l')", MeshWarning,
                      stacklevel=2)
    for k, (kind, noun) in enumerate((("uv (vt)", "uvs"), ("normal (vn)", "normals"))):
        count = int(lines[k])
        bad = []
        if hi[k] > count:
            bad.append((int(hi[k]), int(hi_line[k]), f"the file has {_many(count, noun)}"))
        if lo_line[k]:
            bad.append((int(lo[k]), int(lo_line[k]),
                        f"it counts back from {_many(int(lo_above[k]), noun)} above its line"))
        if bad:
            index, at, why = bad[0]
            then = " (smooth ones computed)" if k == 1 else ""
            warnings.warn(f"{label}: line {at}: a face's {kind} index {index} is out of range "
                          f"({why}): read without {noun}{then}", MeshWarning, stacklevel=2)


# lines that draw lines or points ('l', 'p'): what a file without faces holds instead
_OBJ_LINES = re.compile(rb"(?m)^[lp][ \t]")
# a 'v' line with fewer than three values
_OBJ_SHORT_V = re.compile(rb"(?m)^v[ \t]+[^ \t\r\n]+(?:[ \t]+[^ \t\r\n]+)?[ \t]*\r?$")
_OBJ_CORNER = re.compile(r"-?\d+(?:/-?\d*(?:/-?\d+)?)?")


def _name(raw_name: bytes) -> str:
    """A material name: UTF-8, or else Latin-1 (every byte a character). Names are only compared
    with each other, so a file in another encoding groups its faces the same way."""
    try:
        return raw_name.decode("utf-8").strip()
    except UnicodeDecodeError:
        return raw_name.decode("latin-1").strip()


def _obj_check_lines(raw: Raw, label: str, v_width: int) -> None:
    """Raise `MeshError` for a file cut inside a 'v' or 'f' line, or for a vertex with fewer than
    three coordinates (trimesh clipped every vertex to the shortest line)."""
    cut = _cut_last_line(raw)
    if cut is not None:
        number, text = cut
        words = text.split(b"#", 1)[0].decode("latin-1").split()
        what = None
        if words and words[0] in ("v", "vn"):
            try:
                values = [float(w) for w in words[1:]]
            except ValueError:
                values = []
            if len(values) < 3:
                what = "a vertex without 3 coordinates"
        elif words and words[0] == "f":
            corners = words[1:]
            if len(corners) < 3 or not all(_OBJ_CORNER.fullmatch(w) for w in corners):
                what = "an incomplete face"
        if what is not None:
            raise _truncated(label, number, text, what)
    if v_width == -2 or 0 <= v_width < 3:
        short = _OBJ_SHORT_V.search(raw)
        if short is not None:
            count = len(short.group().split()) - 1
            raise MeshError(f"{label}: line {line_number(raw, short.start())}: a vertex with "
                            f"{count} coordinate{'s' if count > 1 else ''} (3 needed)")


def _read_obj(raw: Raw, label: str, warn: bool = True) -> list[Part] | None:
    dropped: list[str] = []
    parts = _read_obj_parts(raw, label, dropped)
    if warn and parts is not None and dropped:
        warn_face_lines(raw, label)  # what was left out, and where
    return parts


def _read_obj_parts(raw: Raw, label: str, dropped: list[str]) -> list[Part] | None:
    data = np.frombuffer(raw, dtype=np.uint8)
    (status, flags, usemtl_anywhere, vals_v, vals_t, vals_n, nlines, width, cv, ct, cn, ncorner,
     nt, nn, fsize, fpat, fmat, nface, mspan, nmtl, hard, nhard, zero_line,
     before_line) = _scan_obj(
        data, _POW10, _OBJ_SPECIAL)
    if flags & _BINARY:
        _check_text(raw, label, "OBJ")
    _obj_check_lines(raw, label, int(width[_V]))
    if status != _OK:
        return None  # something unusual
    if nface == 0:
        if nlines[_V] == 0:
            raise MeshError(f"{label}: no vertices and no faces (not an OBJ file?)")
        only = "lines/points" if _OBJ_LINES.search(raw) else "vertices: a point cloud"
        raise MeshError(f"{label}: not a triangle mesh: it contains no faces (only {only})")
    if nlines[_V] == 0:
        raise MeshError(f"{label}: faces but no vertices")
    if flags & _CONTINUED or usemtl_anywhere != nmtl:
        return None  # line continuations; 'usemtl ' inside a line (trimesh splits there too)
    if zero_line:
        raise MeshError(f"{label}: face index 0 out of range (OBJ indices start at 1)")
    if before_line:
        raise _relative_error(label, int(before_line))
    if nhard:
        hard = hard[: 4 * nhard].reshape(nhard, 4)
        for kind, vals in enumerate((vals_v, vals_t, vals_n)):
            h = hard[hard[:, 0] == kind]
            if len(h) and not _fix_hard(vals, h[:, 1], h[:, 2], h[:, 3], raw):
                return None
    arrays = []
    for kind, (vals, least, keep) in enumerate(((vals_v, 3, 3), (vals_t, 2, 2), (vals_n, 3, 3))):
        count, w = int(nlines[kind]), int(width[kind])
        if count == 0:
            arrays.append(None)
            continue
        if w < least or (kind == _VN and w != 3):
            return None  # mixed widths or too few values: trimesh's slow, lossy path
        if kind == _V and w >= 6:
            keep = 6  # x y z r g b: the colours go along with the positions
        arrays.append(vals[: count * w].reshape(count, w)[:, :keep])
    v, vt, vn = arrays
    sizes = fsize[:nface]
    pats = fpat[:nface]
    cv, ct, cn = cv[:ncorner], ct[: int(nt)], cn[: int(nn)]
    if nmtl == 0:
        part = _obj_group(v, vt, vn, cv, ct, cn, sizes, int(pats[0]), pats, label, dropped)
        return None if part is None else [part]
    # Materials: one geometry per name; trimesh builds them in order of first use, then pops them
    # from the end.
    names = [_name(raw[mspan[2 * k]: mspan[2 * k + 1]]) for k in range(nmtl)]
    key_of_mat: dict = {}
    group_of_mat = np.array([key_of_mat.setdefault(key, len(key_of_mat))
                             for key in [None, *names]])  # indexed by usemtl line + 1
    face_group = group_of_mat[fmat[:nface] + 1]
    groups, first = np.unique(face_group, return_index=True)
    corner_start = np.concatenate([[0], np.cumsum(sizes, dtype=np.int64)])
    # the vt / vn buffers hold only the corners that have one
    has_t = np.repeat((pats == _P_VT) | (pats == _P_VTN), sizes)
    has_n = np.repeat((pats == _P_VN) | (pats == _P_VTN), sizes)
    t_of_corner = np.cumsum(has_t) - 1
    n_of_corner = np.cumsum(has_n) - 1
    parts: list[Part] = []
    for g in groups[np.argsort(first)][::-1]:
        lines = np.flatnonzero(face_group == g)
        gs = sizes[lines]
        starts = corner_start[lines]
        corners = np.repeat(starts - np.cumsum(gs) + gs, gs) + np.arange(int(gs.sum()))
        gp = pats[lines]
        pat = int(gp[0])
        gct = ct[t_of_corner[corners]] if pat in (_P_VT, _P_VTN) else ct[:0]
        gcn = cn[n_of_corner[corners]] if pat in (_P_VN, _P_VTN) else cn[:0]
        parts.append(_obj_group(v, vt, vn, cv[corners], gct, gcn, gs, pat, gp, label,
                                dropped))
        if parts[-1] is None:
            return None
    return parts


# --------------------------------------------------------------------------------------------------
# STL

_STL_RECORD = np.dtype([("normals", "<f4", (3,)), ("vertices", "<f4", (3, 3)), ("attr", "<u2")])


def _read_stl(raw: Raw, label: str) -> list[Part] | None:
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


# --------------------------------------------------------------------------------------------------
# Whitespace tables (ASCII PLY, OFF)


@nb.njit(cache=True, nogil=True)
def _scan_table(data, start, max_lines, skip_blank, pow10):
    """Parse whitespace-separated numbers line by line from ``data[start:]``.

    Stops after ``max_lines`` lines (blank lines not counted when ``skip_blank``). Returns
    (status, values, tokens per line, integer-only flag per line, line count, hard numbers).
    status is 0, or the 1-based line (from ``start``) of a token that is not a number, a blank
    line that is not skipped, or a lone carriage return.
    """
    n = data.size
    vals = np.empty(max(16, (n - start) // 4), np.float64)
    ntok = np.zeros(max_lines, np.int32)
    isint = np.ones(max_lines, np.bool_)
    hard_i = np.empty(16, np.int64)
    hard_s = np.empty(16, np.int64)
    hard_e = np.empty(16, np.int64)
    nhard = 0
    nv = 0
    row = 0
    line = 0
    i = start
    while i < n and row < max_lines:
        line += 1
        e = i
        while e < n and data[e] != 10:
            e += 1
        stop = e
        if stop > i and data[stop - 1] == 13:
            stop -= 1
        j = i
        count = 0
        while True:
            while j < stop and _is_blank(data[j]):
                j += 1
            if j >= stop:
                break
            value, j2, cls = _parse_number(data, j, pow10)
            if cls == _NUM_BAD:
                return line, vals, ntok, isint, row, hard_i, hard_s, hard_e, nhard
            vals = _grow(vals, nv + 1)
            vals[nv] = value
            if cls == _NUM_HARD:
                hard_i = _grow(hard_i, nhard + 1)
                hard_s = _grow(hard_s, nhard + 1)
                hard_e = _grow(hard_e, nhard + 1)
                hard_i[nhard] = nv
                hard_s[nhard] = j
                hard_e[nhard] = j2
                nhard += 1
                isint[row] = False
            else:
                for q in range(j, j2):
                    if not (48 <= data[q] <= 57 or data[q] == 45 or data[q] == 43):
                        isint[row] = False
                        break
            nv += 1
            count += 1
            j = j2
        i = e + 1
        if count == 0:
            if skip_blank:
                continue
            return line, vals, ntok, isint, row, hard_i, hard_s, hard_e, nhard
        ntok[row] = count
        row += 1
    return 0, vals[:nv], ntok, isint, row, hard_i, hard_s, hard_e, nhard


def _table(raw: Raw, start: int, max_lines: int, skip_blank: bool):
    """(values, tokens per line, integer-only per line) of the next ``max_lines`` lines, or None."""
    data = np.frombuffer(raw, dtype=np.uint8)
    status, vals, ntok, isint, rows, hard_i, hard_s, hard_e, nhard = _scan_table(
        data, start, max_lines, skip_blank, _POW10
    )
    if status != _OK or rows != max_lines:
        return None
    if nhard and not _fix_hard(vals, hard_i[:nhard], hard_s[:nhard], hard_e[:nhard], raw):
        return None
    return vals, ntok, isint


def _table_checked(raw: Raw, start: int, max_lines: int, skip_blank: bool, label: str,
                   kind: str) -> tuple:
    """`_table` and the rows read: ((values, tokens per row, integer-only per row) or None, rows).

    Raises `MeshError` where the table stops at a control byte or inside a line the file ends in.
    A table that is only short (the file ends after ``rows`` < ``max_lines`` complete rows) comes
    back with the rows it has, for the caller to say what the header promised; one that stops at
    text it leaves to trimesh as (None, -1).
    """
    data = np.frombuffer(raw, dtype=np.uint8)
    status, vals, ntok, isint, rows, hard_i, hard_s, hard_e, nhard = _scan_table(
        data, start, max_lines, skip_blank, _POW10
    )
    if status != _OK:
        _check_text(raw, label, kind, start)
        cut = _cut_last_line(raw)
        if cut is not None and cut[0] == line_number(raw, start) + status - 1:
            raise _truncated(label, *cut, "not a row of numbers")
        return None, -1
    if nhard and not _fix_hard(vals, hard_i[:nhard], hard_s[:nhard], hard_e[:nhard], raw):
        return None, -1
    return (vals, ntok[:rows], isint[:rows]), rows


# --------------------------------------------------------------------------------------------------
# PLY

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


def _read_ply(raw: Raw, label: str) -> list[Part] | None:
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
    faces = faces.astype(np.int64)
    return [(vertices, _triangulate_uniform(faces), normals, None, colors)]


def _ply_check_body(raw: Raw, fmt: str, start: int, elements: list, label: str) -> None:
    """Raise `MeshError` when the body holds fewer rows than the header promises (before a file
    goes to trimesh, whose PLY reader built a mesh with a hole from an ASCII file cut short)."""
    if fmt == "ascii":
        data = np.frombuffer(raw, dtype=np.uint8)[start:]
        lines = int(np.count_nonzero(data == 10)) + (_cut_last_line(raw) is not None)
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
    got, rows = _table_checked(raw, start, total, False, label, "PLY")
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


def _strip_triangles(flat: np.ndarray, row: np.ndarray) -> np.ndarray:
    """Triangle strips to (t, 3) int64 triangles.

    ``flat`` (k,) the strips' vertex ids, -1 ending a strip; ``row`` (k,) the file row of each
    (a row ends a strip too). Strip v0 v1 v2 v3 v4 ... gives (v0 v1 v2) (v2 v1 v3) (v2 v3 v4):
    every other triangle reversed, so that all face the same way (OpenGL's rule); the count
    restarts with each strip. Triangles with a repeated vertex (strips joined by repeating one)
    keep their place in the count and are dropped.
    """
    flat = flat.astype(np.int64)
    n = flat.size
    if n < 3:
        return np.zeros((0, 3), np.int64)
    stop = flat == -1
    begins = np.ones(n, dtype=bool)
    begins[1:] = stop[:-1] | (row[1:] != row[:-1])
    strip_start = np.maximum.accumulate(np.where(begins, np.arange(n), 0))
    i = np.arange(n - 2)
    i = i[~stop[i] & ~stop[i + 1] & ~stop[i + 2] & (strip_start[i + 2] == strip_start[i])]
    a, b, c = flat[i], flat[i + 1], flat[i + 2]
    odd = (i - strip_start[i]) % 2 == 1
    tris = np.stack([np.where(odd, b, a), np.where(odd, a, b), c], axis=1)
    return tris[(a != b) & (b != c) & (a != c)]


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
            parts.append(_strip_triangles(flat, np.repeat(np.arange(cnt.size), cnt)))
        elif cnt.size:
            keep = np.repeat(cnt >= 3, cnt)  # a face of fewer than 3 corners draws nothing
            flat, cnt = flat[keep], cnt[cnt >= 3]
            if cnt.size:
                parts.append(_triangulate_mixed(flat, cnt))
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
    got, rows = _table_checked(raw, start, nv + nf, False, label, "PLY")
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
        cut = _cut_last_line(raw)
        last = vals.size - int(ftok[-1])  # where the last row starts
        if cut is not None and (ftok[-1] <= li or ftok[-1] < len(fprops) + vals[last + li]):
            raise _truncated(label, *cut, "an incomplete face")
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


# --------------------------------------------------------------------------------------------------
# OFF

_OFF_HEAD = re.compile(rb"\A\s*C?OFF[ \t]*(?:\r?\n|(?=[ \t\d]))")


_OFF_COMMENT = re.compile(rb"#[^\r\n]*")


def _read_off(raw: Raw, label: str) -> list[Part] | None:
    head = _OFF_HEAD.match(raw)
    if head is None:
        _check_text(raw, label, "OFF")
        if re.search(rb"C?OFF", raw) is None:
            raise MeshError(f"{label}: not an OFF file (no 'OFF' header)")
        return None
    if raw.find(b"#") >= 0:
        # comments: to the end of their line. trimesh's comment stripping copies the text
        # before a comment after a line's data back into the file: the faces after it
        # misread, a face silently lost
        raw = _OFF_COMMENT.sub(b"", raw)
        head = _OFF_HEAD.match(raw)
        if head is None:
            return None
    start = head.end()
    first, rows = _table_checked(raw, start, 1, True, label, "OFF")
    if first is None or rows < 1:
        raise MeshError(f"{label}: no vertex and face counts after 'OFF'")
    vals, ntok, isint = first
    if ntok[0] < 2 or not isint[0] or vals[0] < 0 or vals[1] < 0:
        raise MeshError(f"{label}: the OFF count line is not 'vertices faces [edges]'")
    nv, nf = int(vals[0]), int(vals[1])
    if nv == 0:
        raise MeshError(f"{label}: the OFF header promises no vertices")
    if nf == 0:
        raise MeshError(f"{label}: not a triangle mesh: it contains no faces (only points)")
    # where the count line ends: re-scan the vertex and face lines after it
    body = _skip_lines(raw, start, 1)
    got, rows = _table_checked(raw, body, nv + nf, True, label, "OFF")
    if got is None:
        return None
    if rows < nv + nf:
        raise MeshError(f"{label}: the header promises {nv} vertices and {nf} faces, the body "
                        f"holds {min(rows, nv)} vertices and {max(rows - nv, 0)} faces")
    vals, ntok, isint = got
    ntok = ntok.astype(np.int64)
    offsets = np.concatenate([[0], np.cumsum(ntok)])
    if np.any(ntok[:nv] < 3):
        return None
    vrows = offsets[:nv]
    vertices = vals[vrows[:, None] + np.arange(3)]
    frow = offsets[nv: nv + nf]
    if not np.all(isint[nv: nv + nf]):
        return None
    counts = vals[frow].astype(np.int64)
    short_f = np.flatnonzero((counts < 3) | (counts + 1 > ntok[nv:]))
    if short_f.size:
        _off_cut(raw, label, short_f[0] == nf - 1, "an incomplete face")
        return None
    corner = np.repeat(frow + 1 - np.cumsum(counts) + counts, counts) + np.arange(int(counts.sum()))
    flat = vals[corner].astype(np.int64)
    if flat.min() < 0 or flat.max() >= nv:
        bad = int(flat.min()) if flat.min() < 0 else int(flat.max())
        raise MeshError(
            f"{label}: face index {bad} out of range (the file has {nv} vertices, "
            f"valid 0..{nv - 1})"
        )
    if np.all(counts == counts[0]):
        faces = _triangulate_uniform(flat.reshape(nf, int(counts[0])))
    else:
        faces = _triangulate_mixed(flat, counts)
    if np.any(counts + 1 < ntok[nv:]):
        warnings.warn(f"{label}: face colours (values after a face's indices) are not "
                      f"supported: drawn without them", MeshWarning, stacklevel=3)
    colors = None
    extra = ntok[:nv] - 3
    if raw[head.start(): head.end()].lstrip()[:1] == b"C" and np.all(extra >= 3):
        # COFF: 'x y z r g b [a]' (trimesh drops them)
        width = 4 if np.all(extra >= 4) else 3
        colors = _off_colors(vals[vrows[:, None] + 3 + np.arange(width)])
    elif np.any(extra > 0):
        warnings.warn(f"{label}: values after a vertex's position that are no COFF colour "
                      f"(x y z r g b [a]) are not supported: ignored", MeshWarning,
                      stacklevel=3)
    return [(vertices, faces, None, None, colors)]


def _off_colors(c: np.ndarray) -> np.ndarray:
    """(n, 4) float64 linear RGBA of COFF vertex colours: 0..255 where every value is a whole
    number and one is above 1 (MeshLab's), else 0..1 (Geomview's); 8-bit sRGB by convention, as
    PLY's and OBJ's, so turned linear the same way (alpha 1 where absent)."""
    from preprocess.materials import vertex_rgba

    c = np.asarray(c, np.float64)
    return vertex_rgba(c / 255.0 if np.all(c == np.round(c)) and c.max() > 1.0 else c)


def _off_cut(raw: Raw, label: str, last_row: bool, what: str) -> None:
    """Raise `MeshError` when the bad row is the last one and the file ends inside it."""
    cut = _cut_last_line(raw)
    if last_row and cut is not None:
        raise _truncated(label, *cut, what)


def _skip_lines(raw: Raw, start: int, count: int) -> int:
    """The offset after the ``count``-th non-blank line from ``start``."""
    pos = start
    seen = 0
    while seen < count:
        nl = raw.find(b"\n", pos)
        if nl < 0:
            return len(raw)
        if raw[pos:nl].strip():
            seen += 1
        pos = nl + 1
    return pos


def _triangulate_mixed(flat: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Ragged polygons as trimesh.geometry.triangulate_quads orders them.

    All triangles first, then the quads' first halves, their second halves, then a fan per larger
    polygon, each in file order.
    """
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    tri_s = starts[counts == 3]
    quad_s = starts[counts == 4]
    parts = [flat[tri_s[:, None] + np.arange(3)]]
    quads = flat[quad_s[:, None] + np.arange(4)]
    parts += [quads[:, [0, 1, 2]], quads[:, [2, 3, 0]]]
    big = np.flatnonzero(counts > 4)
    if big.size:
        sizes = counts[big]
        fans = _triangulate_lines(sizes)  # no quads here: plain fans
        base = np.repeat(starts[big] - (np.cumsum(sizes) - sizes), sizes - 2)
        parts.append(flat[fans + base[:, None]])
    return np.concatenate(parts).astype(np.int64)


_READERS = {"obj": _read_obj, "stl": _read_stl, "ply": _read_ply, "off": _read_off}


def read_obj_bytes(data: bytes, label: str, *, warn: bool = True) -> list[Part] | None:
    """`read_parts` of OBJ text held in memory (None: trimesh must read it). warn=False: what
    the faces lose is left to the caller (`warn_face_lines` on the whole file: an object's
    edited text has other line numbers)."""
    return _read_obj(data, label, warn)
