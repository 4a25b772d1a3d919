"""Tests of the .tess container (preprocess/tess/container.py): bit-exact round trips, atomic
writes, detection of a corrupted byte anywhere in the file, and clear errors for foreign, truncated
and future files."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from preprocess.tess import container as tessfile
from preprocess.tess.limits import PAGE_SIZE
from preprocess.tess.container import (
    HEADER_DTYPE,
    HEADER_SIZE,
    PAGE_ALIGN,
    PAGE_ENTRY_DTYPE,
    SECTION_ALIGN,
    SECTION_ENTRY_DTYPE,
    TESS_MAGIC,
    TESS_VERSION,
    TessFile,
    TessFormatError,
    write_tess,
)
from preprocess.tess.limits import PAGE_ROOT

CLUSTER_DTYPE = np.dtype(
    [
        ("center", "<f4", (3,)),
        ("radius", "<f4"),
        ("page", "<u4"),
        ("tri_count", "u1"),
        ("bounds", [("lo", "<f4", (3,)), ("hi", "<f4", (3,))]),
    ],
    align=True,  # has padding bytes
)


def _sample(page_size: int = 700, n_pages: int = 3, seed: int = 0) -> dict:
    """Keyword arguments of write_tess: structured, plain, 0-d and empty sections, random pages."""
    rng = np.random.default_rng(seed)
    clusters = np.zeros(7, CLUSTER_DTYPE)
    clusters["center"] = rng.normal(size=(7, 3))
    clusters["radius"] = rng.random(7)
    clusters["page"] = np.arange(7) % max(n_pages, 1)
    clusters["tri_count"] = rng.integers(1, 129, 7)
    clusters["bounds"]["lo"] = -1.0
    clusters["bounds"]["hi"] = rng.random((7, 3))
    return {
        "meta": {"name": "bunny", "stats": {"triangles": 1234, "levels": 5}, "step": 1e-4},
        "sections": {
            "clusters": clusters,
            "groups": rng.integers(0, 1 << 30, size=(5, 4), dtype=np.uint32),
            "bvh_nodes": rng.normal(size=(3, 8)).astype(np.float32),
            "scalar": np.array(2.5),
            "empty": np.zeros((0, 4), np.int16),
        },
        "pages": rng.integers(0, 256, size=(n_pages, page_size), dtype=np.uint8),
        "page_flags": np.array([PAGE_ROOT] + [0] * (n_pages - 1), np.uint32)[:n_pages],
    }


def _header(data: bytes) -> np.void:
    return np.frombuffer(data[:HEADER_SIZE], HEADER_DTYPE)[0]


def _assert_same(t: TessFile, kw: dict) -> None:
    assert t.meta == kw["meta"]
    assert list(t.sections) == list(kw["sections"])
    for name, arr in kw["sections"].items():
        got = t.sections[name]
        assert got.dtype == arr.dtype, name
        assert got.shape == arr.shape, name
        assert got.tobytes() == np.ascontiguousarray(arr).tobytes(), name
        assert not got.flags.writeable
    pages = kw["pages"]
    assert (t.page_count, t.page_size) == pages.shape
    assert np.array_equal(t.page_flags, kw["page_flags"]) and t.page_flags.dtype == np.uint32
    pa = t.pages_array()
    assert pa.shape == pages.shape and pa.dtype == np.uint8 and np.array_equal(pa, pages)
    for i in range(t.page_count):
        p = t.page(i)
        assert p.shape == (t.page_size,) and p.dtype == np.uint8
        assert np.array_equal(p, pages[i]) and not p.flags.writeable


@pytest.mark.parametrize("page_size,n_pages", [(700, 3), (4096, 2), (PAGE_SIZE, 2), (64, 0)])
def test_round_trip_bit_exact(tmp_path: Path, page_size: int, n_pages: int) -> None:
    kw = _sample(page_size, n_pages)
    path = tmp_path / "a.tess"
    size = write_tess(path, **kw)
    assert size == path.stat().st_size
    with TessFile(path, verify_pages=True) as t:
        assert t.file_size == size and t.version == TESS_VERSION
        _assert_same(t, kw)
        # writing what was read gives the same bytes
        size2 = write_tess(
            tmp_path / "b.tess",
            meta=t.meta,
            sections=t.sections,
            pages=t.pages_array(),
            page_flags=t.page_flags,
        )
    assert size2 == size
    assert (tmp_path / "b.tess").read_bytes() == path.read_bytes()
    assert sorted(os.listdir(tmp_path)) == ["a.tess", "b.tess"]  # no temporary files left


def test_layout_alignment(tmp_path: Path) -> None:
    path = tmp_path / "a.tess"
    write_tess(path, **_sample(700, 3))
    data = path.read_bytes()
    h = _header(data)
    assert bytes(h["magic"]) == TESS_MAGIC and int(h["header_size"]) == HEADER_SIZE
    assert int(h["file_size"]) == len(data)
    d0, n = int(h["dir_offset"]), int(h["section_count"])
    assert d0 % SECTION_ALIGN == 0 and int(h["page_table_offset"]) % SECTION_ALIGN == 0
    entries = np.frombuffer(data[d0 : d0 + n * SECTION_ENTRY_DTYPE.itemsize], SECTION_ENTRY_DTYPE)
    assert all(int(o) % SECTION_ALIGN == 0 for o in entries["offset"])
    pt = int(h["page_table_offset"])
    table = np.frombuffer(data[pt : pt + 3 * PAGE_ENTRY_DTYPE.itemsize], PAGE_ENTRY_DTYPE)
    assert all(int(o) % PAGE_ALIGN == 0 for o in table["offset"])
    assert list(table["flags"]) == [PAGE_ROOT, 0, 0]
    with TessFile(path) as t:
        for name, arr in t.sections.items():  # views into the mapping, 16-aligned
            if arr.size:
                assert arr.__array_interface__["data"][0] % SECTION_ALIGN == 0, name
        assert t.page(1).__array_interface__["data"][0] % PAGE_ALIGN == 0


def test_writer_normalizes_inputs(tmp_path: Path) -> None:
    kw = _sample()
    transposed = np.arange(12, dtype=np.float64).reshape(3, 4).T  # not C-contiguous
    big = np.arange(5, dtype=">i4")  # big-endian is stored little-endian, same values
    kw["sections"] = {"t": transposed, "big": big, "x" * 31: np.arange(3)}
    path = tmp_path / "a.tess"
    write_tess(path, **kw)
    with TessFile(path) as t:
        assert np.array_equal(t.sections["t"], transposed) and t.sections["t"].flags.c_contiguous
        assert np.array_equal(t.sections["big"], big)
        assert t.sections["big"].dtype == np.dtype("<i4")
        assert np.array_equal(t.sections["x" * 31], np.arange(3))


@pytest.mark.parametrize(
    "change,error",
    [
        ({"sections": {"x" * 32: np.zeros(3)}}, ValueError),
        ({"sections": {"": np.zeros(3)}}, ValueError),
        ({"sections": {"obj": np.array([1, "a"], dtype=object)}}, TypeError),
        ({"sections": {"list": [1, 2, 3]}}, TypeError),
        ({"meta": {"bad": object()}}, TypeError),
        ({"meta": {"nan": float("nan")}}, ValueError),
        ({"pages": np.zeros((2, 64), np.float32)}, TypeError),
        ({"pages": np.zeros(64, np.uint8)}, TypeError),
        ({"page_flags": np.zeros(5, np.uint32)}, TypeError),
    ],
)
def test_writer_rejects_bad_input(tmp_path: Path, change: dict, error: type) -> None:
    kw = {**_sample(64, 3), **change}
    with pytest.raises(error):
        write_tess(tmp_path / "a.tess", **kw)
    assert os.listdir(tmp_path) == []


def _existing(tmp_path: Path) -> tuple[Path, bytes]:
    path = tmp_path / "a.tess"
    write_tess(path, **_sample(64, 2, seed=1))
    return path, path.read_bytes()


def test_atomic_object_dtype_leaves_existing_file(tmp_path: Path) -> None:
    path, before = _existing(tmp_path)
    kw = _sample()
    kw["sections"]["bad"] = np.array([None, 1], dtype=object)
    with pytest.raises(TypeError, match="object"):
        write_tess(path, **kw)
    assert path.read_bytes() == before and os.listdir(tmp_path) == ["a.tess"]


@pytest.mark.parametrize("target", ["fsync", "replace", "write"])
def test_atomic_failure_mid_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, target: str
) -> None:
    path, before = _existing(tmp_path)
    kw = _sample(700, 3)

    during: list[list[str]] = []  # the directory when the failure happens

    def boom(*args: object, **kwargs: object) -> None:
        during.append(sorted(os.listdir(tmp_path)))
        raise OSError("disk on fire")

    if target == "write":
        # fail while the pages are being written: after part of the file is on disk
        real = np.ascontiguousarray
        calls = {"n": 0}

        def flaky(a: object, *args: object, **kwargs: object) -> np.ndarray:
            calls["n"] += 1
            if calls["n"] > len(kw["pages"]) + 1:  # past the CRC pass, during the page writes
                boom()
            return real(a, *args, **kwargs)

        monkeypatch.setattr(tessfile.np, "ascontiguousarray", flaky)
    else:
        monkeypatch.setattr(tessfile.os, target, boom)
    with pytest.raises(OSError, match="disk on fire"):
        write_tess(path, **kw)
    monkeypatch.undo()
    assert len(during[0]) == 2 and during[0][0].endswith(".tmp")  # it failed mid-write
    assert os.listdir(tmp_path) == ["a.tess"]
    assert path.read_bytes() == before
    # and with no previous file: nothing at all is left
    os.unlink(path)
    monkeypatch.setattr(tessfile.os, "fsync", boom)
    with pytest.raises(OSError):
        write_tess(path, **kw)
    assert os.listdir(tmp_path) == []


def _expected_errors(data: bytes) -> list[str]:
    """For each byte of a valid file, the part of the error message expected when it is corrupted
    (computed independently of the reader, from the layout dtypes)."""
    h = _header(data)
    out = ["padding"] * len(data)  # anything not claimed below must be zero padding

    def claim(start: int, stop: int, what: str) -> None:
        out[start:stop] = [what] * (stop - start)

    claim(0, 8, "not a .tess file")
    claim(8, 12, "version")
    claim(12, HEADER_SIZE, "header checksum mismatch")
    m0, d0 = int(h["meta_offset"]), int(h["dir_offset"])
    claim(m0, m0 + int(h["meta_size"]), "meta checksum mismatch")
    claim(d0, d0 + int(h["dir_size"]), "section directory checksum mismatch")
    n = int(h["section_count"])
    entries = np.frombuffer(data[d0 : d0 + n * SECTION_ENTRY_DTYPE.itemsize], SECTION_ENTRY_DTYPE)
    for e in entries:
        o = int(e["offset"])
        claim(o, o + int(e["nbytes"]), f"section {bytes(e['name']).decode()!r} checksum mismatch")
    pt0, P = int(h["page_table_offset"]), int(h["page_count"])
    claim(pt0, pt0 + P * PAGE_ENTRY_DTYPE.itemsize, "page table checksum mismatch")
    p0, size = int(h["pages_offset"]), int(h["page_size"])
    stride = (size + PAGE_ALIGN - 1) // PAGE_ALIGN * PAGE_ALIGN
    for i in range(P):
        claim(p0 + i * stride, p0 + i * stride + size, f"page {i} checksum mismatch")
        claim(p0 + i * stride + size, p0 + (i + 1) * stride, f"page {i} padding is not zero")
    return out


def _open_and_verify(path: Path) -> None:
    with TessFile(path) as t:
        t.verify_all()


@pytest.mark.slow
def test_every_corrupted_byte_is_detected(tmp_path: Path) -> None:
    kw = _sample(page_size=200, n_pages=3)
    good = tmp_path / "good.tess"
    write_tess(good, **kw)
    data = good.read_bytes()
    bad = tmp_path / "bad.tess"
    # every byte of the header, meta, directory, sections, page table and pages; every 13th byte
    # of the (long, zero) padding before and between the pages
    expected_at = _expected_errors(data)
    positions = [pos for pos, e in enumerate(expected_at) if "padding" not in e or pos % 13 == 0]
    seen = set()
    buf = bytearray(data)
    with open(bad, "wb") as f:
        for pos in positions:
            buf[pos] ^= 0x5A if pos % 2 else 0x01
            f.seek(0)
            f.write(buf)
            f.flush()
            buf[pos] = data[pos]
            expected = expected_at[pos]
            with pytest.raises(TessFormatError) as info:
                _open_and_verify(bad)
            msg = str(info.value)
            assert expected in msg, (pos, expected, msg)
            assert str(bad) in msg and "\n" not in msg
            seen.add(expected.split(" checksum")[0].split(" padding")[0])
    assert {"not a .tess file", "version", "header", "meta", "section directory"} <= seen
    assert {f"section {name!r}" for name in kw["sections"] if kw["sections"][name].size} <= seen
    assert {"page table", "page 0", "page 1", "page 2", "padding"} <= seen


def test_page_checks_are_lazy(tmp_path: Path) -> None:
    kw = _sample(700, 3)
    path = tmp_path / "a.tess"
    write_tess(path, **kw)
    data = bytearray(path.read_bytes())
    p1 = int(_header(bytes(data))["pages_offset"]) + PAGE_ALIGN + 5  # a byte of page 1
    data[p1] ^= 0xFF
    path.write_bytes(bytes(data))
    with TessFile(path) as t:  # opens: pages are not read yet
        assert np.array_equal(t.page(0), kw["pages"][0])
        assert np.array_equal(t.page(2), kw["pages"][2])
        with pytest.raises(TessFormatError, match="page 1 checksum mismatch"):
            t.page(1)
        with pytest.raises(TessFormatError, match="page 1 checksum mismatch"):
            t.verify_all()
        with pytest.raises(IndexError):
            t.page(3)
    with pytest.raises(TessFormatError, match="page 1 checksum mismatch"):
        TessFile(path, verify_pages=True)


def test_wrong_magic(tmp_path: Path) -> None:
    for content in [b"v 0 0 0\nv 1 0 0\nf 1 2 3\n" * 10, b"\x89PNG\r\n\x1a\n" + bytes(200), b"x"]:
        path = tmp_path / "mesh.obj"
        path.write_bytes(content)
        with pytest.raises(TessFormatError, match=r"not a \.tess file"):
            TessFile(path)
    # text-mode damage (CRLF -> LF) breaks the magic
    path = tmp_path / "a.tess"
    write_tess(path, **_sample(64, 1))
    path.write_bytes(path.read_bytes().replace(b"\r\n", b"\n"))
    with pytest.raises(TessFormatError, match=r"not a \.tess file"):
        TessFile(path)
    path.write_bytes(b"")
    with pytest.raises(TessFormatError, match="empty file"):
        TessFile(path)


@pytest.mark.slow
def test_truncated_and_extended(tmp_path: Path) -> None:
    path = tmp_path / "a.tess"
    write_tess(path, **_sample(700, 3))
    data = path.read_bytes()
    cut = tmp_path / "cut.tess"
    for n in [*range(1, 200), *range(200, len(data), 97), len(data) - 1]:
        cut.write_bytes(data[:n])
        with pytest.raises(TessFormatError, match="truncated"):
            TessFile(cut)
    cut.write_bytes(data + b"\x00")
    with pytest.raises(TessFormatError, match="trailing"):
        TessFile(cut)


def _with_version(data: bytes, version: int) -> bytes:
    h = np.frombuffer(data[:HEADER_SIZE], HEADER_DTYPE).copy()
    h["version"] = version
    h["header_crc"] = 0
    h["header_crc"] = tessfile._crc(h.tobytes())
    return h.tobytes() + data[HEADER_SIZE:]


def test_future_older_and_unknown_version(tmp_path: Path) -> None:
    path = tmp_path / "a.tess"
    write_tess(path, **_sample(64, 1))
    data = path.read_bytes()
    assert _with_version(data, TESS_VERSION) == data  # the helper recomputes the CRC faithfully
    newer = TESS_VERSION + 1
    path.write_bytes(_with_version(data, newer))
    msg = f"written by a newer Tessera \\(version {newer}\\); this reader knows {TESS_VERSION}"
    with pytest.raises(TessFormatError, match=msg):
        TessFile(path)
    assert TESS_VERSION == 4
    # 1: cluster records without source groups; 2: with parent_error and the page_deps sections;
    # 3: no deflated sections, textures RGBA8 only
    for older in (1, 2, 3):
        path.write_bytes(_with_version(data, older))
        msg = (f"a.tess: written by an older Tessera \\(version {older}\\); rebuild it with "
               "`preprocess`$")
        with pytest.raises(TessFormatError, match=msg):
            TessFile(path)
    path.write_bytes(_with_version(data, 0))
    with pytest.raises(TessFormatError, match="unsupported version 0"):
        TessFile(path)


def test_deflated_sections_round_trip_and_are_checked(tmp_path: Path) -> None:
    # a section stored deflated reads back bit for bit (read-only, as the mapped ones) and takes
    # less room; a flipped byte of its stream fails its checksum, and a stream that inflates to
    # other than the directory's size is refused in one line, never more memory than it says
    path = tmp_path / "a.tess"
    kw = _sample(64, 1)
    texels = np.tile(np.arange(4096, dtype=np.uint32) % 7, 16)
    kw["sections"]["texels"] = texels
    raw_size = write_tess(tmp_path / "raw.tess", **kw)
    size = write_tess(path, **kw, deflate=("texels",))
    assert size < raw_size - texels.nbytes // 2
    with TessFile(path) as t:
        assert np.array_equal(t.sections["texels"], texels)
        assert not t.sections["texels"].flags.writeable
        assert np.array_equal(t.sections["groups"], kw["sections"]["groups"])
    entries = _entries(path.read_bytes())
    e = entries[[bytes(n).rstrip(b"\0") for n in entries["name"]].index(b"texels")]
    assert e["codec"] == tessfile.CODEC_DEFLATE and e["stored"] < e["nbytes"]
    data = bytearray(path.read_bytes())
    data[int(e["offset"]) + 5] ^= 0x40
    path.write_bytes(bytes(data))
    with pytest.raises(TessFormatError, match="section 'texels' checksum mismatch"):
        TessFile(path)
    with pytest.raises(ValueError, match="deflate names sections the file does not have"):
        write_tess(tmp_path / "b.tess", **kw, deflate=("nothing",))
    # a stream of more bytes than the entry says: the entry's size edited, checksums recomputed
    write_tess(path, **kw, deflate=("texels",))
    data = path.read_bytes()
    h = _header(data)
    ent = _entries(data)
    i = [bytes(n).rstrip(b"\0") for n in ent["name"]].index(b"texels")
    ent[i]["nbytes"] -= 64
    ent[i]["shape"][0] -= 16
    d0 = int(h["dir_offset"])
    blob = ent.tobytes() + data[d0 + ent.nbytes: d0 + int(h["dir_size"])]
    hh = np.frombuffer(data[:HEADER_SIZE], HEADER_DTYPE).copy()
    hh["dir_crc"] = tessfile._crc(blob)
    hh["header_crc"] = 0
    hh["header_crc"] = tessfile._crc(hh.tobytes())
    path.write_bytes(hh.tobytes() + data[HEADER_SIZE:d0] + blob + data[d0 + len(blob):])
    with pytest.raises(TessFormatError, match="section 'texels' inflates to other than its "
                                              "262080 bytes"):
        TessFile(path)


def _entries(data: bytes) -> np.ndarray:
    h = _header(data)
    d0 = int(h["dir_offset"])
    return np.frombuffer(data[d0: d0 + int(h["section_count"]) * SECTION_ENTRY_DTYPE.itemsize],
                         SECTION_ENTRY_DTYPE).copy()


def test_close_and_views(tmp_path: Path) -> None:
    path = tmp_path / "a.tess"
    kw = _sample(700, 2)
    write_tess(path, **kw)
    t = TessFile(path)
    clusters = t.sections["clusters"]
    page = t.page(0)
    with pytest.raises(ValueError):
        clusters["radius"][0] = 1.0  # read-only
    t.close()
    assert t.closed
    with pytest.raises(ValueError, match="closed"):
        t.page(0)
    # views handed out before close stay valid
    assert clusters.tobytes() == kw["sections"]["clusters"].tobytes()
    assert np.array_equal(page, kw["pages"][0])
    t.close()  # idempotent
