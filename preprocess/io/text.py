"""What the fast readers share: numbers, lines and tables of text, and the checks that a text
file is text and whole.

`parse_number` reads a decimal number exactly as numpy's text parser (strtod) would, with one
multiplication or division by an exact power of ten (Clinger's fast path); the numbers it cannot
round that way come back as hard, for `fix_hard` to parse through numpy. `table_checked` reads the
whitespace tables of ASCII PLY and OFF bodies with it (the kernel `_scan_table`); the OBJ kernel
(`preprocess.io.obj`) reads its lines with it and with the line and token helpers here (numba
functions inlined into their callers).

A reader that finds bytes no text file holds (`check_text`), or a file cut inside its last line
(`cut_last_line`, `truncated`), raises `MeshError` instead of handing the file to trimesh, whose
errors on them said nothing useful.
"""

from __future__ import annotations

import re
import warnings

import preprocess.numba_cache  # noqa: F401  (first: drops stale numba caches)
import numba as nb
import numpy as np

from preprocess.mesh import MeshError

#: One geometry as `preprocess.io.trimesh_path.flatten` returns it: positions (n, 3) float,
#: triangles (m, 3) int64, normals (n, 3) float64 or None, uvs (n, 2) float64 or None (a fifth
#: field, colours (n, 4) float64 or None, where a reader has them).
Part = tuple[np.ndarray, np.ndarray, "np.ndarray | None", "np.ndarray | None"]
#: The file's bytes: mapped by `preprocess.io.parts.read_parts` (tests may pass bytes).
Raw = "bytes | mmap.mmap"


# --------------------------------------------------------------------------------------------------
# Numbers: an exact fast path for decimal text, the rest handed back to numpy


# 10**k is exact in float64 for k <= 22: one multiplication or division by it rounds correctly
# (Clinger's fast path), so these values equal strtod's, which numpy's text parsers use.
POW10 = np.array([10.0**k for k in range(23)], dtype=np.float64)
_MAX_EXACT = 1 << 53

# token classes returned by parse_number
_NUM_OK = 0  # value exact
NUM_HARD = 1  # a number the fast path cannot round exactly (or nan/inf): parse it in Python
NUM_BAD = 2  # not a number this reader accepts

# kernel status codes (anything but OK means: let trimesh read the file)
OK = 0


@nb.njit(cache=True, nogil=True, inline="always")
def is_blank(c: int) -> bool:
    return c == 32 or c == 9


@nb.njit(cache=True, nogil=True, inline="always")
def line_span(data: np.ndarray, i: int) -> tuple[int, int]:
    """(the index of the newline ending the line that starts at i (or the size), where its text
    stops: before a CR of a CRLF)."""
    n = data.size
    e = i
    while e < n and data[e] != 10:
        e += 1
    return e, (e - 1 if e > i and data[e - 1] == 13 else e)


@nb.njit(cache=True, nogil=True, inline="always")
def token_end(data: np.ndarray, j: int) -> bool:
    """True at the end of a token: a blank, a line end, a comment or the end of the data."""
    if j >= data.size:
        return True
    c = data[j]
    return c == 32 or c == 9 or c == 10 or c == 13 or c == 35


@nb.njit(cache=True, nogil=True)
def parse_number(data, i, pow10):
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
        while not token_end(data, j):
            j += 1
        return 0.0, j, NUM_HARD
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
        return 0.0, j, NUM_BAD
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
            return 0.0, j, NUM_BAD
        exp10 += -e if eneg else e
    if not token_end(data, j):
        return 0.0, j, NUM_BAD
    if mant == 0:
        return -0.0 if neg else 0.0, j, (NUM_HARD if inexact else _NUM_OK)
    if inexact or mant >= _MAX_EXACT or exp10 > 22 or exp10 < -22:
        return 0.0, j, NUM_HARD
    v = float(mant)
    if exp10 >= 0:
        v = v * pow10[exp10]
    else:
        v = v / pow10[-exp10]
    return (-v if neg else v), j, _NUM_OK


@nb.njit(cache=True, nogil=True, inline="always")
def grow(a, need):
    """``a`` if it holds ``need`` items, else a copy twice as long (amortized appends)."""
    if need <= a.size:
        return a
    b = np.empty(max(need, 2 * a.size), dtype=a.dtype)
    b[: a.size] = a
    return b


def fix_hard(values: np.ndarray, index: np.ndarray, starts: np.ndarray, ends: np.ndarray,
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
CONTROL = np.zeros(256, dtype=np.bool_)
CONTROL[:32] = True
CONTROL[[9, 10, 11, 12, 13]] = False
CONTROL[127] = True


def check_text(raw: Raw, label: str, kind: str, start: int = 0) -> None:
    """Raise `MeshError` when a file of a text format (its bytes) holds a byte no text file
    holds, naming the first such byte at or after ``start``."""
    data = np.frombuffer(raw, dtype=np.uint8)[start:]
    hit = np.flatnonzero(CONTROL[data])
    if hit.size:
        at = start + int(hit[0])
        raise MeshError(f"{label}: not a text {kind} file (byte 0x{raw[at]:02x} at offset {at})")


def is_text(raw: Raw) -> bool:
    """Whether bytes hold no control byte (see `CONTROL`)."""
    return not CONTROL[np.frombuffer(raw, dtype=np.uint8)].any()


def line_number(raw: Raw, offset: int) -> int:
    """The 1-based number of the line holding byte ``offset``."""
    return int(np.count_nonzero(np.frombuffer(raw, dtype=np.uint8)[:offset] == 10)) + 1


def cut_last_line(raw: Raw) -> tuple[int, bytes] | None:
    """(number, text) of the last line when the file ends inside it (no final line feed)."""
    if len(raw) == 0 or raw[-1:] in (b"\n", b"\r"):
        return None
    start = raw.rfind(b"\n") + 1
    return line_number(raw, start), bytes(raw[start:])


def truncated(label: str, number: int, text: bytes, what: str) -> MeshError:
    shown = text.decode("latin-1")
    shown = shown if len(shown) <= 40 else shown[:37] + "..."
    return MeshError(f"{label}: the file ends inside line {number} ({shown!r}: {what}); "
                     f"it looks truncated")


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
            while j < stop and is_blank(data[j]):
                j += 1
            if j >= stop:
                break
            value, j2, cls = parse_number(data, j, pow10)
            if cls == NUM_BAD:
                return line, vals, ntok, isint, row, hard_i, hard_s, hard_e, nhard
            vals = grow(vals, nv + 1)
            vals[nv] = value
            if cls == NUM_HARD:
                hard_i = grow(hard_i, nhard + 1)
                hard_s = grow(hard_s, nhard + 1)
                hard_e = grow(hard_e, nhard + 1)
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
        data, start, max_lines, skip_blank, POW10
    )
    if status != OK or rows != max_lines:
        return None
    if nhard and not fix_hard(vals, hard_i[:nhard], hard_s[:nhard], hard_e[:nhard], raw):
        return None
    return vals, ntok, isint


def table_checked(raw: Raw, start: int, max_lines: int, skip_blank: bool, label: str,
                  kind: str) -> tuple:
    """`_table` and the rows read: ((values, tokens per row, integer-only per row) or None, rows).

    Raises `MeshError` where the table stops at a control byte or inside a line the file ends in.
    A table that is only short (the file ends after ``rows`` < ``max_lines`` complete rows) comes
    back with the rows it has, for the caller to say what the header promised; one that stops at
    text it leaves to trimesh as (None, -1).
    """
    data = np.frombuffer(raw, dtype=np.uint8)
    status, vals, ntok, isint, rows, hard_i, hard_s, hard_e, nhard = _scan_table(
        data, start, max_lines, skip_blank, POW10
    )
    if status != OK:
        check_text(raw, label, kind, start)
        cut = cut_last_line(raw)
        if cut is not None and cut[0] == line_number(raw, start) + status - 1:
            raise truncated(label, *cut, "not a row of numbers")
        return None, -1
    if nhard and not fix_hard(vals, hard_i[:nhard], hard_s[:nhard], hard_e[:nhard], raw):
        return None, -1
    return (vals, ntok[:rows], isint[:rows]), rows


def comment_line(raw: bytes, pattern: re.Pattern) -> int | None:
    """The 1-based line of the first match of `pattern` in `raw` (None: none)."""
    found = pattern.search(raw)
    return None if found is None else line_number(raw, found.start())

