"""OBJ: the fast reader, and what is checked and named around trimesh where it reads the file.

`read_obj` parses an OBJ's bytes with one numba kernel (`_scan_obj`) and returns the same
per-geometry parts as trimesh's scene gives (`preprocess.io.trimesh_path.flatten`), so that
`mesh_from_arrays` builds a bit-identical `Mesh`. Where trimesh's result depends on one of its
quirks, the quirk is reproduced, not fixed:

- faces are split into one geometry per ``usemtl`` material, the geometries taken in the reverse
  order of each material's first use; each keeps only the vertices it references, in index
  order, or, when faces carry ``vt``/``vn`` indices, the distinct (v, vt, vn) index triples
  ordered as trimesh's ``unmerge_faces`` orders them (`preprocess.io.faces.unmerge`).
- Polygons: a group whose face lines all have the same corner count is triangulated like
  ``Trimesh.faces`` (quads: every first half, then every second half; larger: fans); a group with
  mixed counts per line (quads: (0 1 2)(2 3 0); larger: fans).
- ``vt``/``vn`` indices out of range drop the uvs/normals of that geometry, and face lines of
  fewer than three corners are skipped (by trimesh: this reader leaves such a file to it);
  `warn_face_lines` names both, whichever reader read the file.

Differences, where trimesh fails or reads wrong: a negative index counts back from the last
element defined above its line (the OBJ rule; trimesh counts from the end of the whole file's
list: `absolute_obj_indices` rewrites the text it reads); a comment after the data of a vertex or
face line ends the line (trimesh fails: "could not be read to its end"); text that is not UTF-8 is
read as Latin-1 (trimesh needs charset_normalizer to guess an encoding); 'v x y z r g b' colours
are kept beside uvs.

A file no reader can read right raises `MeshError`: bytes no text file holds, a file cut inside
a 'v' or 'f' line, no faces, a vertex of fewer than three coordinates, a face index 0 or out of
range. Anything else (vertex lines with mixed column counts, mixed corner layouts, line
continuations, indented lines, tabs after a keyword, numbers the parser does not know) returns
None, for trimesh (`before_trimesh`, `trimesh_failure` and `after_trimesh` check and name what
it would read wrong or drop). An OBJ naming an MTL file beside it goes to trimesh for its
materials (`preprocess.io.mtl`).

`mesh_from_obj_text` reads the edited text of one object of a scene (`preprocess.scene_import`).
"""

from __future__ import annotations

import io
import re
import warnings
from pathlib import Path

import preprocess.numba_cache  # noqa: F401  (first: drops stale numba caches)
import numba as nb
import numpy as np

from preprocess.config import DEFAULT_CREASE_DEGREES
from preprocess.io.arrays import merge_and_weld
from preprocess.io.faces import triangulate_lines, triangulate_uniform, unmerge
from preprocess.io.mtl import has_material_library, mtl_extras
from preprocess.io.text import (
    CONTROL,
    NUM_BAD,
    NUM_HARD,
    OK,
    POW10,
    Part,
    Raw,
    check_text,
    comment_line,
    cut_last_line,
    fix_hard,
    grow,
    is_blank,
    line_number,
    line_span,
    parse_number,
    token_end,
    truncated,
)
from preprocess.io.trimesh_path import flatten, load_scene_from, one_line, quiet
from preprocess.mesh import Mesh, MeshError, MeshWarning, mesh_warning

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
_OBJ_SPECIAL[CONTROL] = True
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


@nb.njit(cache=True, nogil=True, inline="always")
def _usemtl_at(data, k, end):
    """Whether "usemtl " starts at ``data[k]`` and ends before ``end``."""
    return (k + 7 <= end and data[k] == 117 and data[k + 1] == 115 and data[k + 2] == 101
            and data[k + 3] == 109 and data[k + 4] == 116 and data[k + 5] == 108
            and data[k + 6] == 32)


@nb.njit(cache=True, nogil=True, inline="always")
def _obj_buffers(data, special):
    """Pass 1 of `_scan_obj`: lines and bytes per kind, and the buffers pass 2 fills. A line of
    b bytes holds at most b // 2 numbers: the buffers are bounds, mostly never touched (so never
    paged in); counting the numbers themselves made this pass 3x slower. It also looks for what
    makes trimesh read a file differently (one scan here instead of one per pattern in Python).

    Returns (the v, vt, vn value buffers, the corner v, vt, vn index buffers, per face line its
    corner count, layout and material, the usemtl name spans, flags, the count of "usemtl "
    anywhere: trimesh splits at each).
    """
    n = data.size
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
                elif b == 117 and _usemtl_at(data, e, n):
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
    cv = np.empty(ntok[3], np.int64)
    ct = np.empty(ntok[3], np.int64)
    cn = np.empty(ntok[3], np.int64)
    fsize = np.empty(nface, np.int32)
    fpat = np.empty(nface, np.int8)
    fmat = np.empty(nface, np.int32)
    mspan = np.empty(2 * nmtl, np.int64)
    return (vals_v, vals_t, vals_n, cv, ct, cn, fsize, fpat, fmat, mspan, flags,
            usemtl_anywhere)


@nb.njit(cache=True, nogil=True, inline="always")
def _record_hard(hard, nhard, kind, at, start, end):
    """``hard`` (grown where full) with hard number ``nhard`` recorded: (kind, buffer index,
    start, end)."""
    if 4 * nhard + 4 > hard.size:
        hard = grow(hard, 4 * nhard + 4)
    hard[4 * nhard] = kind
    hard[4 * nhard + 1] = at
    hard[4 * nhard + 2] = start
    hard[4 * nhard + 3] = end
    return hard


@nb.njit(cache=True, nogil=True, inline="always")
def _zero_based(index, above):
    """An OBJ index 0-based, as trimesh shifts it: 1-based; a negative one counts back from the
    last of the ``above`` elements defined above its line (the OBJ rule: -1 is the latest;
    trimesh counts from the end of the whole file's list instead); 0 stays 0."""
    return index - 1 if index > 0 else (above + index if index < 0 else 0)


@nb.njit(cache=True, nogil=True, inline="always")
def _attribute_index(index, above):
    """`_zero_based` for a uv or normal index; one that reaches before its list is `_BEFORE`, out
    of range whichever way it is read, so that geometry is read without them, as with any index
    out of range."""
    k = _zero_based(index, above)
    return k if k >= 0 else _BEFORE


@nb.njit(cache=True, nogil=True, inline="always")
def _comment_start(data, j, stop):
    """Where the first '#' of ``data[j:stop]`` is, or ``stop``."""
    for q in range(j, stop):
        if data[q] == 35:
            return q
    return stop


@nb.njit(cache=True, nogil=True, inline="always")
def _blank(data, j, stop):
    """Whether ``data[j:stop]`` holds blanks only."""
    for q in range(j, stop):
        if not is_blank(data[q]):
            return False
    return True


@nb.njit(cache=True, nogil=True, inline="always")
def _vertex_kind(c1, c2):
    """The kind of a line starting with 'v' followed by ``c1`` and ``c2`` (0 past its end):
    (`_V`, `_VT`, `_VN` or -1, the offset of its first value, whether a tab follows the keyword,
    which trimesh does not read)."""
    if c1 == 32:
        return _V, 2, False
    if (c1 == 116 or c1 == 110) and c2 == 32:  # vt, vn
        return (_VT if c1 == 116 else _VN), 3, False
    return -1, 0, c1 == 9 or ((c1 == 116 or c1 == 110) and c2 == 9)


@nb.njit(cache=True, nogil=True)
def _scan_obj(data, pow10, special):
    """Two passes over an OBJ file's bytes: make buffers large enough (`_obj_buffers`), parse.

    Returns: status (0, or the 1-based number of the first line this reader leaves to trimesh);
    flags (`_CONTINUED`, `_NON_ASCII`, `_BINARY`); the count of "usemtl " anywhere; the v, vt,
    vn value buffers; lines per kind; values per line per kind (-2 where lines differ); the
    corner v, vt, vn index buffers (0-based as trimesh shifts them; vt and vn only for corners
    that have them) and their three counts; per face line its corner count, layout and material
    (index of its usemtl line, -1 before any); the face line count; the usemtl name spans and
    count; the hard numbers (kind, buffer index, start, end) and count; the first line with a
    face index ``0``; the first with a relative vertex index that reaches before the first vertex.
    """
    n = data.size
    (vals_v, vals_t, vals_n, cv, ct, cn, fsize, fpat, fmat, mspan, flags,
     usemtl_anywhere) = _obj_buffers(data, special)
    nvals = np.zeros(3, np.int64)
    nlines = np.zeros(3, np.int64)
    width = np.full(3, -1, np.int64)
    hard = np.empty(64, np.int64)  # (kind, index, start, end) per hard number
    ncorner = nt = nn = nface = nmtl = nhard = zero_line = status = line = 0
    before_line = 0  # the first face line whose relative vertex index reaches before the list
    cur_mat = -1
    # Pass 2: parse.
    i = 0
    while i < n and status == 0:
        line += 1
        e, stop = line_span(data, i)
        nxt = e + 1
        if stop == i:
            i = nxt
            continue
        c = data[i]
        if flags & _COMMENTED and (c == 118 or c == 102):  # a comment ends a 'v' or 'f' line
            stop = _comment_start(data, i + 1, stop)
        c1 = data[i + 1] if i + 1 < stop else 0
        c2 = data[i + 2] if i + 2 < stop else 0
        kind, skip, tab = -1, 0, False
        if c == 118:  # 'v'
            kind, skip, tab = _vertex_kind(c1, c2)
        if tab:
            status = line  # trimesh only knows 'v ' with a space
        if kind >= 0:
            count = 0
            at = nvals[kind]
            j = i + skip
            while True:
                while j < stop and is_blank(data[j]):
                    j += 1
                if j >= stop:
                    break
                value, j2, cls = parse_number(data, j, pow10)
                if cls == NUM_BAD:
                    status = line
                    break
                if kind == _V:
                    vals_v[at] = value
                elif kind == _VT:
                    vals_t[at] = value
                else:
                    vals_n[at] = value
                if cls == NUM_HARD:
                    hard = _record_hard(hard, nhard, kind, at, j, j2)
                    nhard += 1
                at += 1
                count += 1
                j = j2
            nvals[kind] = at
            width[kind] = count if width[kind] == -1 or width[kind] == count else -2
            nlines[kind] += 1
        elif c == 102:  # 'f'
            if c1 != 32:
                status = line  # trimesh splits faces at every line starting with 'f'
            j = i + 2
            corners = 0
            pat = -1
            while status == 0:
                while j < stop and is_blank(data[j]):
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
                if not ok or (pat != -1 and p != pat) or not token_end(data, j):
                    status = line  # a malformed corner, or layouts mixed within a line
                    break
                pat = p
                cv[ncorner] = _zero_based(vi, nlines[_V])
                if vi < 0 and nlines[_V] + vi < 0 and before_line == 0:
                    before_line = line
                if p == _P_VT or p == _P_VTN:
                    ct[nt] = _attribute_index(ti, nlines[_VT])
                    nt += 1
                if p == _P_VN or p == _P_VTN:
                    cn[nn] = _attribute_index(ni, nlines[_VN])
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
        elif c == 117 and _usemtl_at(data, i, stop):
            mspan[2 * nmtl] = i + 7
            mspan[2 * nmtl + 1] = stop
            cur_mat = nmtl
            nmtl += 1
        elif is_blank(c) and not _blank(data, i, stop):
            status = line  # an indented line: trimesh would not see its keyword
        # other lines (comments, o, g, s, mtllib, l, p, vp, ...) carry nothing trimesh keeps
        i = nxt
    return (status, flags, usemtl_anywhere, vals_v, vals_t, vals_n, nlines, width, cv, ct, cn,
            ncorner, nt, nn, fsize, fpat, fmat, nface, mspan, nmtl, hard, nhard, zero_line,
            before_line)


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
        tri = triangulate_lines(sizes)
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
            new_faces, mask_v, mask_vt, mask_vn = unmerge(faces, tex, norm)
        else:
            new_faces, mask_v, mask_vt = unmerge(faces, tex)
            mask_vn = None
        check_v(mask_v)
        if _in_range(mask_vt, vt):
            uv = vt[mask_vt]
        else:
            dropped.append("uvs")
        vertices = v[mask_v]
    elif norm is not None and vn is not None:
        new_faces, mask_v, mask_vn = unmerge(faces, norm)
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
        new_faces = triangulate_uniform(new_faces)
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
        e, stop = line_span(data, i)
        c = data[i] if stop > i else 0
        c1 = data[i + 1] if stop > i + 1 else 32
        if c == 118 and c1 == 116 and (stop - i == 2 or is_blank(data[i + 2])):  # 'vt'
            lines[0] += 1
        elif c == 118 and c1 == 110 and (stop - i == 2 or is_blank(data[i + 2])):  # 'vn'
            lines[1] += 1
        elif c == 102 and is_blank(c1):  # 'f'
            tokens = 0
            j = i + 1
            while j < stop and data[j] != 35:  # '#'
                if is_blank(data[j]):
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
                while j < stop and not is_blank(data[j]) and data[j] != 35:
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
            e, stop = line_span(data, i)
            c = data[i] if stop > i else 0
            c1 = data[i + 1] if stop > i + 1 else 0
            c2 = data[i + 2] if stop > i + 2 else 0
            copy_from = i
            if c == 118 and c1 == 32:  # 'v ': as the scan counts them
                count[0] += 1
            elif c == 118 and (c1 == 116 or c1 == 110) and c2 == 32:  # 'vt ', 'vn '
                count[1 if c1 == 116 else 2] += 1
            elif c == 102 and is_blank(c1):  # 'f'
                j = i + 1
                k = 0  # 0: v, 1: vt, 2: vn within a corner
                while j < stop and data[j] != 35:  # '#'
                    b = data[j]
                    if is_blank(b):
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
    cut = cut_last_line(raw)
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
            raise truncated(label, number, text, what)
    if v_width == -2 or 0 <= v_width < 3:
        short = _OBJ_SHORT_V.search(raw)
        if short is not None:
            count = len(short.group().split()) - 1
            raise MeshError(f"{label}: line {line_number(raw, short.start())}: a vertex with "
                            f"{count} coordinate{'s' if count > 1 else ''} (3 needed)")


def read_obj(raw: Raw, label: str, *, warn: bool = True) -> list[Part] | None:
    """The parts of an OBJ's bytes, or None where trimesh must read it (`read_parts`: its
    `MeshError`s and `MeshWarning`s). warn=False: what the faces lose is left to the caller
    (`warn_face_lines` on the whole file: an object's edited text has other line numbers)."""
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
        data, POW10, _OBJ_SPECIAL)
    if flags & _BINARY:
        check_text(raw, label, "OBJ")
    _obj_check_lines(raw, label, int(width[_V]))
    if status != OK:
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
            if len(h) and not fix_hard(vals, h[:, 1], h[:, 2], h[:, 3], raw):
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
# Read through trimesh: what the fast reader leaves to it

# a vertex line with six values or more: 'v x y z r g b', colours after the position
_OBJ_COLOURED = re.compile(rb"(?m)^v(?:[ \t]+[^ \t\r\n#]+){6}")


# a comment after the data of a vertex or face line, which trimesh's OBJ parser cannot read (the
# fast reader reads it; a file it leaves to trimesh for something else fails there)
_OBJ_TRAILING_COMMENT = re.compile(rb"(?m)^(?:v[tn]?|f)[ \t][^#\r\n]*#")


_WS = np.frombuffer(b" \t", dtype=np.uint8)
_AFTER = np.frombuffer(b"/ \t\r\n", dtype=np.uint8)


def _obj_has_zero_index(raw: bytes) -> bool:
    """True when an OBJ face line uses index 0 (invalid: OBJ indices are 1-based or negative).

    trimesh silently turns 0 into -1 (the last vertex); this scan (vectorized, ~20 ms for 10 MB)
    catches it. A token ``0`` preceded by a blank and followed by ``/``, a blank or the line end is
    a candidate; it counts when its line starts with ``f``.
    """
    data = np.frombuffer(raw, dtype=np.uint8)
    if data.size < 3:
        return False
    zero = np.flatnonzero(data[1:] == ord("0")) + 1
    if zero.size == 0:
        return False
    zero = zero[np.isin(data[zero - 1], _WS)]
    nxt = zero + 1
    at_end = nxt >= data.size
    zero = zero[at_end | np.isin(data[np.minimum(nxt, data.size - 1)], _AFTER)]
    if zero.size == 0:
        return False
    newlines = np.flatnonzero(data == ord("\n"))
    line_start = np.searchsorted(newlines, zero)  # index of the newline before, + 1
    starts = np.where(line_start > 0, newlines[np.maximum(line_start - 1, 0)] + 1, 0)
    # Skip leading blanks of the line (rare): check the first non-blank byte.
    first = data[starts]
    blank = np.isin(first, _WS)
    if blank.any():
        for i in np.flatnonzero(blank):
            j = starts[i]
            while j < data.size and data[j] in (32, 9):
                j += 1
            first[i] = data[j] if j < data.size else 0
    return bool(np.any(first == ord("f")))


def before_trimesh(raw: Raw, label: str) -> None:
    """Check an OBJ that trimesh is to read (its bytes; the fast reader left it): `MeshError`
    for bytes no text file holds (trimesh's error on them says nothing) and for a face index 0
    (which trimesh reads as -1, the last vertex, without a word); `MeshWarning`s for what its
    faces lose (`warn_face_lines`)."""
    check_text(raw, label, "OBJ")
    warn_face_lines(raw, label)
    if _obj_has_zero_index(raw):
        raise MeshError(f"{label}: face index 0 out of range (OBJ indices start at 1)")


def trimesh_failure(raw: Raw) -> str | None:
    """Why trimesh could not read an OBJ, where a comment at the end of a data line is why."""
    line = comment_line(raw, _OBJ_TRAILING_COMMENT)
    if line is None:
        return None
    return (f"line {line}: a comment at the end of a vertex or face line, which trimesh (reading "
            f"this file for what the fast reader leaves to it) cannot read: put it on a line of "
            f"its own")


def after_trimesh(parts: list[tuple], raw: Raw, path: Path, label: str,
                  coloured: bool) -> list[tuple]:
    """The parts trimesh read of an OBJ (``coloured``: whether one has vertex colours): a
    `MeshWarning` where it dropped 'v x y z r g b' colours (it keeps them only where a geometry
    has no uvs), and its placeholder materials dropped (`without_placeholders`)."""
    if not coloured and _OBJ_COLOURED.search(raw):
        mesh_warning(f"{label}: vertex colours beside uvs in a file read through trimesh (for its "
                     f"materials or an unusual line): drawn without them")
    return without_placeholders(parts, has_material_library(raw, path))


def without_placeholders(parts: list[tuple], mtl: bool) -> list[tuple]:
    """trimesh's parts of an OBJ with the materials it made up left out (the faces drawn with
    the default material): all where the file has no MTL library (``mtl``), else those of a
    `usemtl` no library defines, a grey 2 x 2 texture (`has_material_library` named them; it is
    handed no ``map_Kd``, `mtl.for_trimesh`, so a material with an image is one of these)."""
    return [(*part[:5], None if not mtl or getattr(part[5], "image", None) is not None
             else part[5]) for part in parts]


def mesh_from_obj_text(path: Path, data: bytes, *, name: str,
                       crease_angle: float = DEFAULT_CREASE_DEGREES) -> Mesh:
    """The `Mesh` of OBJ text `data` (an OBJ file's, edited: one object's faces kept), its MTL
    files and textures resolved beside `path`, read as `load_mesh` reads an OBJ (what its faces
    lose is named by the caller, for the whole file: `warn_face_lines`)."""
    import trimesh

    label = path.name
    parts = None
    mtl = has_material_library(data, path)
    if not mtl:
        try:
            with np.errstate(all="ignore"):
                parts = read_obj(data, label, warn=False)  # the scene's, once
        except MeshError:
            raise
        except Exception:
            parts = None
    if parts is None:
        data = absolute_obj_indices(data, label) or data  # trimesh counts them from the end
        with quiet():
            try:
                scene = load_scene_from(trimesh, io.BytesIO(data), "obj", path)
                parts = flatten(scene, label)[0]
            except Exception as exc:
                raise MeshError(f"{label}: cannot read object {name!r}: {one_line(exc)}"
                                ) from None
        parts = without_placeholders(parts, mtl)
    if not parts:
        raise MeshError(f"{label}: object {name!r} has no triangles")
    mesh = merge_and_weld(parts, name=name, source=label, crease_angle=crease_angle)
    if mesh.materials:
        mtl_extras(mesh, path, label)
    return mesh
