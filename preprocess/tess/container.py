"""The `.tess` container: a memory-mappable file of named numpy sections and fixed-size pages.

This module owns the byte layout of the file (as numpy structured dtypes: `HEADER_DTYPE`,
`SECTION_ENTRY_DTYPE`, `PAGE_ENTRY_DTYPE`); what goes *into* the sections and pages (clusters,
groups, BVH nodes, page contents) is `preprocess.tess.records`. The container is generic: any
plain or structured numpy dtype, any shape, round-trips bit-exactly.

On-disk layout, version 2. Little-endian everywhere; every offset is from the start of the file;
every byte of the file is covered by a CRC32 (`zlib.crc32`) or must be zero padding, so a single
corrupted byte anywhere is detected (header, meta, directory and sections when the file is opened,
pages lazily when first accessed or all at once with `verify_all()`).

    offset           size           contents
    ---------------  -------------  ----------------------------------------------------------
    0                128            header (HEADER_DTYPE, below)
    meta_offset      meta_size      meta: UTF-8 JSON, sort_keys, separators (",", ":")
                                    zero padding to a multiple of 16
    dir_offset       dir_size       section directory: section_count x SECTION_ENTRY_DTYPE
                                    (128 bytes each), then the dtype descriptions (UTF-8 JSON
                                    of np.lib.format.dtype_to_descr) back to back
                                    zero padding to a multiple of 16
    entry.offset     entry.nbytes   section data, C order, in directory order, each 16-aligned
                                    (zero padding between sections)
    page_table_off   24 x P         page table: P x PAGE_ENTRY_DTYPE
                                    zero padding to a multiple of 4096 (only when P > 0)
    pages_offset     P x stride     pages: page i at pages_offset + i * stride, where
                                    stride = page_size rounded up to 4096; each page is
                                    page_size data bytes followed by zero padding
    file_size                       end of file (no trailing bytes)

Header (`HEADER_DTYPE`, 128 bytes):

    off  type     field               meaning
    ---  -------  ------------------  ----------------------------------------------------------
    0    u8[8]    magic               b"TESS\\x00\\r\\n\\x1a" (catches text-mode/transfer damage)
    8    u32      version             4 (TESS_VERSION)
    12   u32      header_size         128
    16   u32      flags               0 (no flags defined)
    20   u32      page_size           bytes of data per page
    24   u32      page_count          P
    28   u32      section_count       number of directory entries
    32   u64      meta_offset         128
    40   u64      meta_size           bytes of meta JSON (without padding)
    48   u64      dir_offset
    56   u64      dir_size            entries + dtype descriptions (without padding)
    64   u64      page_table_offset
    72   u64      pages_offset        a multiple of 4096 when P > 0
    80   u64      file_size           total file size in bytes
    88   u32      meta_crc            CRC32 of the meta JSON bytes
    92   u32      dir_crc             CRC32 of the directory bytes (entries + descriptions)
    96   u32      page_table_crc      CRC32 of the page table bytes
    100  u8[24]   reserved            zero
    124  u32      header_crc          CRC32 of bytes 0..128 with this field zeroed

Section directory entry (`SECTION_ENTRY_DTYPE`, 128 bytes):

    off  type     field               meaning
    ---  -------  ------------------  ----------------------------------------------------------
    0    u8[32]   name                UTF-8, 1..31 bytes, zero padded
    32   u64      offset              byte offset of the data (a multiple of 16)
    40   u64      nbytes              dtype.itemsize * prod(shape)
    48   u64[7]   shape               the first ndim entries are used, the rest zero
    104  u64      stored              bytes of the data in the file: nbytes, or the deflated size
    112  u16      ndim                0..7
    114  u16      codec               0 (CODEC_RAW): the array's bytes; 1 (CODEC_DEFLATE): zlib's
                                      deflate stream of them (inflated when the file is opened)
    116  u32      crc32               CRC32 of the section's bytes in the file
    120  u32      descr_offset        offset of the dtype description, from dir_offset
    124  u32      descr_size          bytes of the dtype description

Page table entry (`PAGE_ENTRY_DTYPE`, 24 bytes):

    off  type     field               meaning
    ---  -------  ------------------  ----------------------------------------------------------
    0    u64      offset              pages_offset + i * stride
    8    u32      size                page_size
    12   u32      flags               bit 0 (PAGE_ROOT): root page, always resident
    16   u32      crc32               CRC32 of the page's page_size data bytes
    20   u32      reserved            zero

The version covers what the packer puts in the file too (`preprocess.tess.records`), so a
layout change there bumps it; the reader refuses every other version with a one-line message:
    1  the first layout
    2  cluster records name their source group (the group whose simplification produced them;
       `CLUSTER_DTYPE.source_group`, formerly padding): streaming derives group parents from it
    3  what no reader used is gone: the cluster records' `parent_error` (92 bytes a record, not
       96: the group's error is in `groups`) and the `page_deps`/`page_dep_offset` sections
       (streaming derives what it needs from `source_group`)
    4  a section may be stored deflated (`SECTION_ENTRY_DTYPE.codec`, `stored`; at most 7
       dimensions), and textures block-compressed (`TEXTURE_DTYPE.format`, formerly padding)

Files are written atomically (`preprocess.tess.atomic`: a temporary file in the same directory,
fsync, `os.replace`), so a crash never leaves a partial `.tess` at the destination path.
"""

from __future__ import annotations

import json
import math
import mmap
import os
import zlib
from collections.abc import Callable, Collection, Mapping
from pathlib import Path
from typing import Any, BinaryIO, NamedTuple, NoReturn

import numpy as np

from preprocess.tess.atomic import write_atomically
from preprocess.tess.limits import PAGE_ROOT

__all__ = [
    "HEADER_DTYPE",
    "HEADER_SIZE",
    "MAX_SECTION_NAME_BYTES",
    "MAX_SECTION_NDIM",
    "PAGE_ALIGN",
    "PAGE_ENTRY_DTYPE",
    "PAGE_ROOT",
    "SECTION_ALIGN",
    "SECTION_ENTRY_DTYPE",
    "TESS_MAGIC",
    "TESS_VERSION",
    "TessFile",
    "TessFormatError",
    "write_tess",
]

TESS_MAGIC = b"TESS\x00\r\n\x1a"  # 8 bytes, PNG-style
TESS_VERSION = 4  # see the version list in the module docstring

SECTION_ALIGN = 16  # sections (and meta, directory, page table) start on 16-byte boundaries
PAGE_ALIGN = 4096  # pages start on 4096-byte boundaries (mmap / OS page friendly)
MAX_SECTION_NAME_BYTES = 31  # UTF-8 bytes; the 32-byte field always ends with a zero
MAX_SECTION_NDIM = 7
CODEC_RAW, CODEC_DEFLATE = 0, 1  # how a section's bytes are stored (SECTION_ENTRY_DTYPE.codec)
DEFLATE_LEVEL = 6  # zlib's default: level 9 saves ~1% more of BC texels for twice the time

HEADER_DTYPE = np.dtype(
    [
        ("magic", "S8"),
        ("version", "<u4"),
        ("header_size", "<u4"),
        ("flags", "<u4"),
        ("page_size", "<u4"),
        ("page_count", "<u4"),
        ("section_count", "<u4"),
        ("meta_offset", "<u8"),
        ("meta_size", "<u8"),
        ("dir_offset", "<u8"),
        ("dir_size", "<u8"),
        ("page_table_offset", "<u8"),
        ("pages_offset", "<u8"),
        ("file_size", "<u8"),
        ("meta_crc", "<u4"),
        ("dir_crc", "<u4"),
        ("page_table_crc", "<u4"),
        ("reserved", "u1", (24,)),
        ("header_crc", "<u4"),
    ]
)
HEADER_SIZE = HEADER_DTYPE.itemsize
_HEADER_CRC_OFFSET = HEADER_DTYPE.fields["header_crc"][1]

SECTION_ENTRY_DTYPE = np.dtype(
    [
        ("name", "S32"),
        ("offset", "<u8"),
        ("nbytes", "<u8"),
        ("shape", "<u8", (MAX_SECTION_NDIM,)),
        ("stored", "<u8"),
        ("ndim", "<u2"),
        ("codec", "<u2"),
        ("crc32", "<u4"),
        ("descr_offset", "<u4"),
        ("descr_size", "<u4"),
    ]
)

PAGE_ENTRY_DTYPE = np.dtype(
    [
        ("offset", "<u8"),
        ("size", "<u4"),
        ("flags", "<u4"),
        ("crc32", "<u4"),
        ("reserved", "<u4"),
    ]
)

assert HEADER_SIZE == 128 and _HEADER_CRC_OFFSET == HEADER_SIZE - 4
assert SECTION_ENTRY_DTYPE.itemsize == 128
assert PAGE_ENTRY_DTYPE.itemsize == 24

_U32_MAX = 0xFFFFFFFF


class TessFormatError(ValueError):
    """A .tess file that cannot be read: one clear line naming the file and what is wrong."""


def _align(n: int, a: int) -> int:
    return (n + a - 1) // a * a


def _crc(buf: Any) -> int:
    """CRC32 of a bytes-like object or a C-contiguous numpy array (as its raw bytes)."""
    if isinstance(buf, np.ndarray):
        buf = buf.reshape(-1).view(np.uint8)
    return zlib.crc32(buf) & _U32_MAX


def _as_bytes(arr: np.ndarray) -> np.ndarray:
    """The raw bytes of a C-contiguous array as a 1-D uint8 view (works for every dtype)."""
    return arr.reshape(-1).view(np.uint8)


def _meta_json(meta: Mapping[str, Any]) -> bytes:
    if not isinstance(meta, Mapping):
        raise TypeError(f"meta must be a dict, not {type(meta).__name__}")
    try:
        text = json.dumps(
            dict(meta), sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
        )
    except TypeError as e:
        raise TypeError(f"meta is not JSON-serializable: {e}") from e
    except ValueError as e:
        raise ValueError(f"meta is not JSON-serializable: {e}") from e
    return text.encode("utf-8")


def _little_endian(dt: np.dtype) -> np.dtype:
    le = dt.newbyteorder("<")
    return le if le != dt else dt


def _prepare_section(name: Any, arr: Any, deflate: bool = False
                     ) -> tuple[bytes, np.ndarray, bytes, bytes | None]:
    """Validate one section; returns (name bytes, C-contiguous little-endian array, descr JSON,
    its deflated bytes or None: stored as they are)."""
    if not isinstance(name, str):
        raise TypeError(f"section name must be a str, not {type(name).__name__}")
    raw = name.encode("utf-8")
    if not raw:
        raise ValueError("section name must not be empty")
    if len(raw) > MAX_SECTION_NAME_BYTES:
        raise ValueError(
            f"section name {name!r} is {len(raw)} UTF-8 bytes; at most {MAX_SECTION_NAME_BYTES}"
        )
    if b"\x00" in raw:
        raise ValueError(f"section name {name!r} contains a NUL character")
    if not isinstance(arr, np.ndarray):
        raise TypeError(f"section {name!r} must be a numpy array, not {type(arr).__name__}")
    if arr.dtype.hasobject:
        raise TypeError(f"section {name!r} has an object dtype ({arr.dtype}); cannot be stored")
    if arr.dtype.itemsize == 0:
        raise TypeError(f"section {name!r} has a zero-size dtype ({arr.dtype})")
    if arr.ndim > MAX_SECTION_NDIM:
        raise ValueError(f"section {name!r} has {arr.ndim} dimensions; at most {MAX_SECTION_NDIM}")
    le = _little_endian(arr.dtype)
    if le != arr.dtype:
        arr = arr.astype(le, order="C")
    elif not arr.flags.c_contiguous:
        arr = arr.copy(order="C")
    descr = np.lib.format.dtype_to_descr(arr.dtype)
    descr_json = json.dumps(descr, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    packed = zlib.compress(_as_bytes(arr), DEFLATE_LEVEL) if deflate else None
    return raw, arr, descr_json, packed


def _descr_from_json(obj: Any) -> Any:
    """Turn the JSON form of a dtype_to_descr description back into its tuple form."""
    if isinstance(obj, str):
        return obj
    if isinstance(obj, list):
        fields = []
        for f in obj:
            if not isinstance(f, list) or len(f) not in (2, 3):
                raise ValueError("bad field description")
            fname = tuple(f[0]) if isinstance(f[0], list) else f[0]
            field = (fname, _descr_from_json(f[1]))
            if len(f) == 3:
                field += (tuple(int(s) for s in f[2]),)
            fields.append(field)
        return fields
    raise ValueError("bad dtype description")


def write_tess(
    path: str | os.PathLike,
    *,
    meta: Mapping[str, Any],
    sections: Mapping[str, np.ndarray],
    pages: np.ndarray,
    page_flags: np.ndarray,
    before_replace: Callable[[], None] | None = None,
    stage_into: list[Path] | None = None,
    deflate: Collection[str] = (),
) -> int:
    """Write a .tess file atomically and return its size in bytes.

    Args:
        path: destination; replaced atomically (a temporary file in the same directory is written,
            fsynced and renamed over it). On any failure the temporary file is removed, no partial
            file is left and an existing file at `path` is untouched.
        meta: small JSON-able dict (mesh name, stats, quantization step, ...); written with
            sort_keys and fixed separators, NaN/inf refused.
        sections: name -> numpy array, plain or structured dtype, any shape (ndim <= 7), e.g.
            'clusters', 'groups', 'bvh_nodes'. Names are 1..31 UTF-8 bytes. Non-contiguous arrays
            are made contiguous, big-endian dtypes are stored little-endian, object dtypes are
            refused. Directory order is the dict's order.
        pages: (P, page_size) uint8, page_size >= 1. P may be 0.
        page_flags: (P,) unsigned ints that fit in uint32 (bit 0 = PAGE_ROOT).
        before_replace: called once the temporary file is complete and on disk, just before it
            is renamed to `path`: the last moment a caller can cancel (an exception from it
            removes the temporary file and propagates).
        stage_into: the complete file is left at its temporary name, appended to this list
            before it is created, for the caller to rename over `path` with the files that
            belong with it (`preprocess.tess.atomic.write_atomically`).
        deflate: names of sections stored deflated (zlib), inflated when the file is opened:
            for sections that compress well and are read whole (block-compressed texels).

    Raises:
        TypeError / ValueError: invalid arguments (nothing is written).
        OSError: the file could not be written (nothing is left behind); its `filename` is
            `path` (never the temporary file) and its `strerror` the system's reason.
    """
    path = Path(path)
    # validate everything before touching the disk
    meta_bytes = _meta_json(meta)
    if not isinstance(sections, Mapping):
        raise TypeError(f"sections must be a dict, not {type(sections).__name__}")
    unknown = set(deflate) - set(sections)
    if unknown:
        raise ValueError(f"deflate names sections the file does not have: {sorted(unknown)}")
    prepared = [_prepare_section(n, a, n in deflate) for n, a in sections.items()]
    flags = _checked_pages(pages, page_flags)
    lay = _layout(prepared, meta_bytes, *(int(s) for s in pages.shape))
    P, page_size = lay.page_count, lay.page_size

    table = np.zeros(P, PAGE_ENTRY_DTYPE)
    table["offset"] = lay.pages_offset + np.arange(P, dtype=np.uint64) * np.uint64(lay.stride)
    table["size"] = page_size
    table["flags"] = flags
    table["crc32"] = [_crc(np.ascontiguousarray(pages[i])) for i in range(P)]
    header = _header(lay, meta_bytes, table)

    def body(f: BinaryIO) -> None:
        written = 0

        def put(data: Any) -> None:
            nonlocal written
            f.write(data)
            written += len(data) if not isinstance(data, np.ndarray) else data.nbytes

        def pad_to(offset: int) -> None:
            if offset > written:
                put(bytes(offset - written))

        put(header.tobytes())
        put(meta_bytes)
        pad_to(lay.dir_offset)
        put(lay.dir_bytes)
        for i, (_, arr, _, packed) in enumerate(prepared):
            pad_to(int(lay.directory[i]["offset"]))
            put(_as_bytes(arr) if packed is None else packed)
        pad_to(lay.page_table_offset)
        put(table.tobytes())
        pad_to(lay.pages_offset)
        page_pad = bytes(lay.stride - page_size)
        for i in range(P):
            put(np.ascontiguousarray(pages[i]))
            if page_pad:
                put(page_pad)
        if written != lay.file_size:  # a bug in the layout code, never user error
            raise AssertionError(f"wrote {written} bytes, layout says {lay.file_size}")

    write_atomically(path, body, before_replace=before_replace, stage_into=stage_into)
    return lay.file_size


def _checked_pages(pages: np.ndarray, page_flags: np.ndarray) -> np.ndarray:
    """The page flags as uint32, once pages and flags are found to be what `write_tess` takes."""
    if not isinstance(pages, np.ndarray) or pages.dtype != np.uint8 or pages.ndim != 2:
        desc = f"{pages.dtype} {pages.shape}" if isinstance(pages, np.ndarray) else type(pages)
        raise TypeError(f"pages must be a (P, page_size) uint8 array, not {desc}")
    P, page_size = (int(s) for s in pages.shape)
    if not 1 <= page_size <= _U32_MAX:
        raise ValueError(f"page_size must be in 1..{_U32_MAX}, not {page_size}")
    if P > _U32_MAX:
        raise ValueError(f"too many pages: {P}")
    flags_in = np.asarray(page_flags)
    if flags_in.shape != (P,) or flags_in.dtype.kind not in "ui":
        raise TypeError(
            f"page_flags must be a ({P},) integer array, not {flags_in.dtype} {flags_in.shape}"
        )
    if P and (int(flags_in.min()) < 0 or int(flags_in.max()) > _U32_MAX):
        raise ValueError("page_flags values must fit in uint32")
    return flags_in.astype(np.uint32)


class _Layout(NamedTuple):
    """Where everything of a file goes (`_layout`)."""

    page_count: int
    page_size: int
    directory: np.ndarray  # SECTION_ENTRY_DTYPE, offsets filled in
    dir_bytes: bytes  # the directory and the dtype descriptions
    dir_offset: int
    page_table_offset: int
    pages_offset: int
    stride: int  # page_size rounded up to PAGE_ALIGN
    file_size: int


def _layout(prepared: list, meta_bytes: bytes, P: int, page_size: int) -> _Layout:
    """The file's layout: header, meta, directory (entries, then the dtype descriptions), the
    sections (each SECTION_ALIGN-aligned), the page table, the pages (PAGE_ALIGN-aligned)."""
    dir_offset = _align(HEADER_SIZE + len(meta_bytes), SECTION_ALIGN)
    n_sec = len(prepared)
    directory = np.zeros(n_sec, SECTION_ENTRY_DTYPE)
    descr_blob = bytearray()
    descr_pos = n_sec * SECTION_ENTRY_DTYPE.itemsize
    for i, (raw, arr, descr_json, packed) in enumerate(prepared):
        e = directory[i]
        e["name"] = raw
        e["nbytes"] = arr.nbytes
        e["shape"][: arr.ndim] = arr.shape
        e["ndim"] = arr.ndim
        e["codec"] = CODEC_RAW if packed is None else CODEC_DEFLATE
        e["stored"] = arr.nbytes if packed is None else len(packed)
        e["crc32"] = _crc(arr) if packed is None else _crc(packed)
        e["descr_offset"] = descr_pos + len(descr_blob)
        e["descr_size"] = len(descr_json)
        descr_blob += descr_json
    dir_size = descr_pos + len(descr_blob)
    pos = _align(dir_offset + dir_size, SECTION_ALIGN)
    for i in range(n_sec):
        directory[i]["offset"] = pos
        pos = _align(pos + int(directory[i]["stored"]), SECTION_ALIGN)
    page_table_offset = pos
    table_end = page_table_offset + P * PAGE_ENTRY_DTYPE.itemsize
    stride = _align(page_size, PAGE_ALIGN)
    pages_offset = _align(table_end, PAGE_ALIGN) if P else table_end
    return _Layout(P, page_size, directory, directory.tobytes() + bytes(descr_blob), dir_offset,
                   page_table_offset, pages_offset, stride, pages_offset + P * stride)


def _header(lay: _Layout, meta_bytes: bytes, table: np.ndarray) -> np.ndarray:
    """The file header (HEADER_DTYPE) with its checksums."""
    header = np.zeros((), HEADER_DTYPE)
    header["magic"] = TESS_MAGIC
    header["version"] = TESS_VERSION
    header["header_size"] = HEADER_SIZE
    header["page_size"] = lay.page_size
    header["page_count"] = lay.page_count
    header["section_count"] = len(lay.directory)
    header["meta_offset"] = HEADER_SIZE
    header["meta_size"] = len(meta_bytes)
    header["dir_offset"] = lay.dir_offset
    header["dir_size"] = len(lay.dir_bytes)
    header["page_table_offset"] = lay.page_table_offset
    header["pages_offset"] = lay.pages_offset
    header["file_size"] = lay.file_size
    header["meta_crc"] = _crc(meta_bytes)
    header["dir_crc"] = _crc(lay.dir_bytes)
    header["page_table_crc"] = _crc(table.tobytes())
    header["header_crc"] = _crc(header.tobytes())  # computed with the field still zero
    return header


class TessFile:
    """An open .tess file, memory-mapped and read-only.

    On open the magic, version, header checksum, meta checksum, section directory checksum, every
    section's checksum, the page table checksum and all padding before the pages are verified;
    pages are verified lazily (`page(i)` checks page i's CRC the first time) unless
    `verify_pages=True`, or all at once with `verify_all()`. Any problem raises TessFormatError
    with one line naming the file and what is broken. This is the container: bytes and
    checksums. What the sections and pages of an asset mean, and whether the GPU may follow
    them, a subclass checks (`check_contents`, `page_contents_problem`): `read_tess`
    (`preprocess.tess.reader.AssetFile`).

    Attributes:
        path: the file's path.
        version: format version of the file (TESS_VERSION).
        meta: dict, the meta JSON.
        sections: dict name -> read-only np.ndarray view of the mapping (a deflated section's:
            its inflated bytes), with the exact dtype and shape written (byte order
            little-endian), in directory order.
        section_offsets, section_stored: dict name -> where the section's bytes start in the
            file, and how many there are (fewer than its array's where deflated).
        page_count: P.
        page_size: bytes per page.
        page_stride: distance between consecutive pages in the file (page_size rounded to 4096).
        page_flags: (P,) uint32, read-only (bit 0 = PAGE_ROOT).
        page_offsets: (P,) uint64 file offsets of the pages, read-only.
        page_crcs: (P,) uint32 CRC32 of each page, read-only.
        file_size: bytes.
    """

    def __init__(self, path: str | os.PathLike, *, verify_pages: bool = False) -> None:
        self.path = Path(path)
        self._mmap: mmap.mmap | None = None
        self._buf: np.ndarray | None = None
        try:
            with open(self.path, "rb") as f:
                size = os.fstat(f.fileno()).st_size
                if size < len(TESS_MAGIC):
                    head = f.read(len(TESS_MAGIC))
                    if size == 0:
                        self._fail("empty file, not a .tess file")
                    if head == TESS_MAGIC[:size]:
                        self._fail(f"truncated: {size} bytes, the header alone is {HEADER_SIZE}")
                    self._fail("not a .tess file (bad magic)")
                self._mmap = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        except OSError as e:
            raise OSError(e.errno, f"{self.path}: cannot open .tess file: {e.strerror}") from e
        self._buf = np.frombuffer(self._mmap, dtype=np.uint8)
        try:
            self._parse(size)
            self.check_contents()
            if verify_pages:
                self.verify_all()
        except BaseException:
            self.close()
            raise

    # ------------------------------------------------------------------ parsing
    def _fail(self, what: str) -> NoReturn:
        raise TessFormatError(f"{self.path}: {what}")

    def _parse(self, size: int) -> None:
        h = self._parse_header(size)
        self._covered: list[tuple[int, int, str]] = [(0, HEADER_SIZE, "the header")]
        self.meta: dict[str, Any] = self._parse_meta(h)
        self.sections = self._parse_sections(h)
        table = self._parse_page_table(h)
        self._check_padding()
        del self._covered  # only the parse needs it

        def frozen(a: np.ndarray) -> np.ndarray:
            a = np.ascontiguousarray(a)
            a.flags.writeable = False
            return a

        self.page_flags = frozen(table["flags"])
        self.page_offsets = frozen(table["offset"])
        self.page_crcs = frozen(table["crc32"])
        self._verified = np.zeros(self.page_count, dtype=bool)

    def _parse_header(self, size: int) -> np.void:
        """The header, checked: magic, version, checksum, sizes."""
        buf = self._buf
        assert buf is not None
        if bytes(buf[:8]) != TESS_MAGIC:
            self._fail("not a .tess file (bad magic)")
        if size < 12:
            self._fail(f"truncated: {size} bytes, the header alone is {HEADER_SIZE}")
        version = int(buf[8:12].view("<u4")[0])
        if version > TESS_VERSION:
            self._fail(
                f"written by a newer Tessera (version {version}); this reader knows {TESS_VERSION}"
            )
        if 1 <= version < TESS_VERSION:
            self._fail(f"written by an older Tessera (version {version}); rebuild it with "
                       "`preprocess`")
        if version != TESS_VERSION:
            self._fail(f"unsupported version {version}; this reader knows {TESS_VERSION}")
        if size < HEADER_SIZE:
            self._fail(f"truncated: {size} bytes, the header alone is {HEADER_SIZE}")
        hbytes = bytearray(buf[:HEADER_SIZE])
        stored_crc = int.from_bytes(hbytes[_HEADER_CRC_OFFSET:], "little")
        hbytes[_HEADER_CRC_OFFSET:] = bytes(4)
        if _crc(bytes(hbytes)) != stored_crc:
            self._fail("header checksum mismatch")
        h = np.frombuffer(bytes(hbytes), HEADER_DTYPE)[0]
        if int(h["header_size"]) != HEADER_SIZE:
            self._fail(f"header size {int(h['header_size'])} is not {HEADER_SIZE}")
        if int(h["flags"]) != 0:
            self._fail(f"unknown header flags 0x{int(h['flags']):x}")
        file_size = int(h["file_size"])
        if size < file_size:
            self._fail(f"truncated: header says {file_size} bytes, file has {size}")
        if size > file_size:
            self._fail(f"{size - file_size} unexpected trailing bytes after the end ({file_size})")
        self.version = version
        self.file_size = file_size
        self.page_size = int(h["page_size"])
        self.page_count = int(h["page_count"])
        self.page_stride = _align(self.page_size, PAGE_ALIGN)
        return h

    def _region(self, offset: int, nbytes: int, what: str) -> np.ndarray:
        """Bytes offset..offset + nbytes of the file, which must lie inside it; recorded as
        covered (`_check_padding`)."""
        if offset < 0 or nbytes < 0 or offset + nbytes > self.file_size:
            self._fail(f"{what} (bytes {offset}..{offset + nbytes}) lies outside the file")
        self._covered.append((offset, offset + nbytes, what))
        return self._buf[offset : offset + nbytes]

    def _parse_meta(self, h: np.void) -> dict[str, Any]:
        meta_raw = self._region(int(h["meta_offset"]), int(h["meta_size"]), "the meta")
        if _crc(meta_raw) != int(h["meta_crc"]):
            self._fail("meta checksum mismatch")
        try:
            meta = json.loads(bytes(meta_raw).decode("utf-8"))
        except ValueError as e:
            self._fail(f"meta is not valid UTF-8 JSON ({e})")
        if not isinstance(meta, dict):
            self._fail("meta is not a JSON object")
        return meta

    def _parse_sections(self, h: np.void) -> dict[str, np.ndarray]:
        """The section directory and every section, checked against their checksums."""
        n_sec = int(h["section_count"])
        dir_offset, dir_size = int(h["dir_offset"]), int(h["dir_size"])
        dir_raw = self._region(dir_offset, dir_size, "the section directory")
        if _crc(dir_raw) != int(h["dir_crc"]):
            self._fail("section directory checksum mismatch")
        entries_size = n_sec * SECTION_ENTRY_DTYPE.itemsize
        if entries_size > dir_size:
            self._fail(f"section directory too small for {n_sec} sections")
        entries = np.frombuffer(bytes(dir_raw[:entries_size]), SECTION_ENTRY_DTYPE)
        sections: dict[str, np.ndarray] = {}
        self.section_offsets: dict[str, int] = {}
        self.section_stored: dict[str, int] = {}
        for i, e in enumerate(entries):
            try:
                name = bytes(e["name"]).decode("utf-8")
            except UnicodeDecodeError:
                self._fail(f"section {i} has an invalid name")
            if not name or name in sections:
                self._fail(f"section {i} has an empty or duplicate name {name!r}")
            label = f"section {name!r}"
            d0, dn = int(e["descr_offset"]), int(e["descr_size"])
            ndim = int(e["ndim"])
            if d0 < entries_size or d0 + dn > dir_size or ndim > MAX_SECTION_NDIM:
                self._fail(f"{label} has a malformed directory entry")
            try:
                descr = json.loads(bytes(dir_raw[d0 : d0 + dn]).decode("utf-8"))
                dtype = np.lib.format.descr_to_dtype(_descr_from_json(descr))
            except (ValueError, TypeError, KeyError, IndexError) as err:
                self._fail(f"{label} has an invalid dtype description ({err})")
            shape = tuple(int(s) for s in e["shape"][:ndim])
            nbytes = int(e["nbytes"])
            if dtype.hasobject or dtype.itemsize * math.prod(shape) != nbytes:
                self._fail(f"{label}: dtype {dtype} and shape {shape} do not match {nbytes} bytes")
            offset = int(e["offset"])
            if offset % SECTION_ALIGN:
                self._fail(f"{label} is not {SECTION_ALIGN}-byte aligned (offset {offset})")
            codec, stored = int(e["codec"]), int(e["stored"])
            if codec not in (CODEC_RAW, CODEC_DEFLATE) or (codec == CODEC_RAW
                                                           and stored != nbytes):
                self._fail(f"{label}: codec {codec} with {stored} bytes stored for {nbytes}")
            data = self._region(offset, stored, label)
            if _crc(data) != int(e["crc32"]):
                self._fail(f"{label} checksum mismatch")
            self.section_offsets[name], self.section_stored[name] = offset, stored
            if codec == CODEC_DEFLATE:
                data = self._inflate(data, nbytes, label)
            sections[name] = data.view(dtype).reshape(shape)
        return sections

    def _inflate(self, data: np.ndarray, nbytes: int, label: str) -> np.ndarray:
        """A deflated section's bytes inflated (read-only), exactly `nbytes` of them: never more
        memory than the directory says, whatever the stream holds."""
        z = zlib.decompressobj()
        try:
            out = z.decompress(data, nbytes)
            done = z.eof and not z.unconsumed_tail
        except zlib.error as err:
            self._fail(f"{label} does not inflate ({err})")
        if len(out) != nbytes or not done:
            self._fail(f"{label} inflates to other than its {nbytes} bytes")
        return np.frombuffer(out, np.uint8)  # read-only, as the mapping's views

    def _parse_page_table(self, h: np.void) -> np.ndarray:
        """The page table, checked against the header's layout."""
        P = self.page_count
        pt_offset = int(h["page_table_offset"])
        pt_raw = self._region(pt_offset, P * PAGE_ENTRY_DTYPE.itemsize, "the page table")
        if _crc(pt_raw) != int(h["page_table_crc"]):
            self._fail("page table checksum mismatch")
        table = np.frombuffer(bytes(pt_raw), PAGE_ENTRY_DTYPE)
        pages_offset = int(h["pages_offset"])
        if P:
            if pages_offset % PAGE_ALIGN:
                self._fail(f"pages are not {PAGE_ALIGN}-byte aligned (offset {pages_offset})")
            expected = pages_offset + np.arange(P, dtype=np.uint64) * np.uint64(self.page_stride)
            if not np.array_equal(table["offset"], expected) or np.any(
                table["size"] != self.page_size
            ):
                self._fail("page table offsets or sizes do not match the header")
            if pages_offset + P * self.page_stride != self.file_size:
                self._fail("pages do not end at the end of the file")
        elif pages_offset != self.file_size:
            self._fail("no pages, but the file does not end after the page table")
        self._pages_offset = pages_offset
        return table

    def _check_padding(self) -> None:
        """Every byte before the pages that no checksum covers must be zero padding."""
        buf = self._buf
        covered = sorted(self._covered)
        end, after = 0, "the start"
        pages_offset = self._pages_offset
        for start, stop, what in [*covered, (pages_offset, pages_offset, "the pages")]:
            if start < end:
                self._fail(f"{what} overlaps {after}")
            if start > end and np.any(buf[end:start]):
                bad = end + int(np.flatnonzero(buf[end:start])[0])
                self._fail(f"nonzero padding at byte {bad} (after {after})")
            if stop >= end:
                end, after = stop, what

    # ------------------------------------------------------------------ pages
    def _check_open(self) -> np.ndarray:
        if self._buf is None:
            raise ValueError(f"{self.path}: I/O on a closed TessFile")
        return self._buf

    def _page_problem(self, i: int) -> str | None:
        buf = self._check_open()
        start = self._pages_offset + i * self.page_stride
        if _crc(buf[start : start + self.page_size]) != int(self.page_crcs[i]):
            return "checksum mismatch"
        if np.any(buf[start + self.page_size : start + self.page_stride]):
            return "padding is not zero"
        return self.page_contents_problem(buf[start : start + self.page_size])

    # ------------------------------------------------------------------ what a subclass knows
    def check_contents(self) -> None:
        """Check what the sections and pages mean, once the file is parsed; a plain container
        knows no meaning (`preprocess.tess.reader.AssetFile` checks every value of an asset that
        the GPU follows). Raises TessFormatError."""

    def page_contents_problem(self, page: np.ndarray) -> str | None:
        """What is wrong with a page's contents once its checksum held, or None (a plain
        container: nothing)."""
        return None

    def page(self, i: int) -> np.ndarray:
        """Page i as a read-only (page_size,) uint8 view of the mapping; its CRC (and padding) is
        checked the first time it is accessed. Raises IndexError, TessFormatError."""
        buf = self._check_open()
        i = int(i)
        if not 0 <= i < self.page_count:
            raise IndexError(f"page {i} out of range (0..{self.page_count - 1})")
        if not self._verified[i]:
            problem = self._page_problem(i)
            if problem:
                self._fail(f"page {i} {problem}")
            self._verified[i] = True
        start = self._pages_offset + i * self.page_stride
        return buf[start : start + self.page_size]

    def pages_array(self) -> np.ndarray:
        """All pages as a read-only (P, page_size) uint8 view of the mapping (rows are page_stride
        bytes apart; C-contiguous when page_size is a multiple of 4096). Not checksummed here:
        call `verify_all()` first where that matters."""
        buf = self._check_open()
        P, stride = self.page_count, self.page_stride
        rows = buf[self._pages_offset : self._pages_offset + P * stride].reshape(P, stride)
        return rows[:, : self.page_size]

    def verify_all(self) -> None:
        """Check every page not yet verified; raises TessFormatError naming the bad pages."""
        self._check_open()
        bad = []
        for i in np.flatnonzero(~self._verified):
            problem = self._page_problem(int(i))
            if problem:
                bad.append(f"page {int(i)} {problem}")
            else:
                self._verified[i] = True
        if bad:
            more = f" (and {len(bad) - 3} more bad pages)" if len(bad) > 3 else ""
            self._fail("; ".join(bad[:3]) + more)

    # ------------------------------------------------------------------ lifetime
    def close(self) -> None:
        """Release the mapping. Section and page views handed out earlier keep it alive (and
        valid) until they are garbage-collected."""
        self._buf = None
        self.sections = {}
        mm, self._mmap = self._mmap, None
        if mm is not None:
            try:
                mm.close()
            except BufferError:
                pass  # views still exported; the mapping is unmapped when they are freed

    @property
    def root_page_count(self) -> int:
        """Pages flagged PAGE_ROOT (always resident)."""
        return int(np.count_nonzero(self.page_flags & PAGE_ROOT))

    @property
    def closed(self) -> bool:
        return self._buf is None

    def __enter__(self) -> TessFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self.closed else f"{self.file_size} bytes"
        return (
            f"TessFile({str(self.path)!r}, {state}, sections={list(self.sections)}, "
            f"pages={getattr(self, 'page_count', '?')}x{getattr(self, 'page_size', '?')})"
        )

