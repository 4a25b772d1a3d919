"""OFF and COFF: the fast reader, and what is checked and named around trimesh where it reads
the file.

`read_off` reads the count line, the vertex rows and the face rows as whitespace tables
(`preprocess.io.text.table_checked`), polygons triangulated as trimesh triangulates them.
Differences, where trimesh fails or reads wrong: polygons larger than quads, which trimesh fails
to read under numpy 2 (a string multiply in its fan code), are fanned as that code means to;
a comment ends its line (trimesh's comment stripping repeats text: a face after such a comment
was lost without a word); COFF's 'x y z r g b [a]' vertex colours are read (trimesh drops them).
A file without the 'OFF' header, a count line that is not one, or a body holding less than it
promises raises `MeshError`; what is left out (face colours, values after a vertex that are no
COFF colour) is named in a `MeshWarning`.
"""

from __future__ import annotations

import re
import warnings

import numpy as np

from preprocess.io.faces import triangulate_mixed, triangulate_uniform
from preprocess.io.text import (
    Part,
    Raw,
    check_text,
    comment_line,
    cut_last_line,
    table_checked,
    truncated,
)
from preprocess.mesh import MeshError, MeshWarning, mesh_warning

_OFF_HEAD = re.compile(rb"\A\s*C?OFF[ \t]*(?:\r?\n|(?=[ \t\d]))")


_OFF_COMMENT = re.compile(rb"#[^\r\n]*")


def read_off(raw: Raw, label: str) -> list[Part] | None:
    """The part of an OFF file's bytes, or None where trimesh must read it (`read_parts`)."""
    head = _OFF_HEAD.match(raw)
    if head is None:
        check_text(raw, label, "OFF")
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
    first, rows = table_checked(raw, start, 1, True, label, "OFF")
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
    got, rows = table_checked(raw, body, nv + nf, True, label, "OFF")
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
        faces = triangulate_uniform(flat.reshape(nf, int(counts[0])))
    else:
        faces = triangulate_mixed(flat, counts)
    if np.any(counts + 1 < ntok[nv:]):
        warnings.warn(f"{label}: face colours (values after a face's indices) are not "
                      f"supported: drawn without them", MeshWarning, stacklevel=3)
    colors = None
    extra = ntok[:nv] - 3
    if raw[head.start(): head.end()].lstrip()[:1] == b"C" and np.all(extra >= 3):
        # COFF: 'x y z r g b [a]' (trimesh drops them)
        width = 4 if np.all(extra >= 4) else 3
        colors = _off_colors(vals[vrows[:, None] + 3 + np.arange(width)], label)
    elif np.any(extra > 0):
        warnings.warn(f"{label}: values after a vertex's position that are no COFF colour "
                      f"(x y z r g b [a]) are not supported: ignored", MeshWarning,
                      stacklevel=3)
    return [(vertices, faces, None, None, colors)]


def _off_colors(c: np.ndarray, label: str) -> np.ndarray:
    """(n, 4) float64 linear RGBA of COFF vertex colours: 0..255 where every value is a whole
    number and one is above 1 (MeshLab's), else 0..1 (Geomview's); 8-bit sRGB by convention, as
    PLY's and OBJ's, so turned linear the same way (alpha 1 where absent; NaN named)."""
    from preprocess.materials import vertex_rgba

    c = np.asarray(c, np.float64)
    whole = np.all(c[~np.isnan(c)] == np.round(c[~np.isnan(c)]))
    return vertex_rgba(c / 255.0 if whole and np.nanmax(c, initial=0.0) > 1.0 else c,
                       label=label)


def _off_cut(raw: Raw, label: str, last_row: bool, what: str) -> None:
    """Raise `MeshError` when the bad row is the last one and the file ends inside it."""
    cut = cut_last_line(raw)
    if last_row and cut is not None:
        raise truncated(label, *cut, what)


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


# a comment after the data of a line (the header's line, 'OFF # ...', too), which trimesh misreads
_OFF_TRAILING_COMMENT = re.compile(rb"(?m)^[ \t]*[^#\s][^#\r\n]*#")


def before_trimesh(raw: Raw, label: str) -> None:
    """Check an OFF file that trimesh is to read (its bytes; the fast reader left it):
    `MeshError` for bytes no text file holds (trimesh's error on them says nothing) and for a
    comment after a line's data, after which trimesh would misread the lines, without a word."""
    check_text(raw, label, "OFF")
    if (line := comment_line(raw, _OFF_TRAILING_COMMENT)) is not None:
        raise MeshError(f"{label}: line {line}: a comment after a line's data, which "
                        f"trimesh (reading this file for what the fast reader leaves to it) "
                        f"misreads: put it on a line of its own")


def after_trimesh(raw: Raw, label: str, coloured: bool) -> None:
    """A `MeshWarning` where trimesh read a COFF file (``coloured``: whether its parts have
    vertex colours) and dropped its colours."""
    if not coloured and re.match(rb"\s*COFF", raw):
        mesh_warning(f"{label}: COFF vertex colours in a file read through trimesh (for an unusual "
                     f"line), which drops them: drawn without them")
