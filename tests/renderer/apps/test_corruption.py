"""A corruption sweep over every region of a `.tess` file, through `tessera info`, `info --verify`
and `tessera render`, resident and streaming.

One byte is flipped in each region (header, meta, meta padding, directory, directory padding,
every section, the padding between sections, the page table, its padding, and every page's data
and padding). Every byte of the file is covered by a CRC32 or must be zero, so:

- `info --verify` refuses every corruption: one line, exit 2;
- `info` and a resident render refuse every corruption outside the pages the moment the file is
  opened (and one in a page's records that makes a record wrong: the page's checksum is named),
  and a resident render refuses a corrupted page before uploading it (the GPU receives every
  page);
- a streaming render refuses a corrupted page when it is streamed in; a page the view never asks
  for may stay corrupted, and then the image must be the clean file's image, byte for byte.

Nothing ends in a traceback, and a refused render leaves no image behind.
"""

from __future__ import annotations

import zlib

import numpy as np
import pytest

from preprocess.tess import read_tess
from preprocess.tess.container import HEADER_DTYPE, PAGE_ENTRY_DTYPE, SECTION_ENTRY_DTYPE
from renderer.apps import cli

SIZE = "64x64"


@pytest.fixture(scope="module")
def clean(tmp_path_factory):
    """A small asset of a few 17 KiB pages (so each page is followed by padding) whose front
    view streams only some of its pages."""
    from renderer.apps import preprocess_cli

    path = tmp_path_factory.mktemp("corrupt") / "clean.tess"
    assert preprocess_cli.main(["--builtin", "sphere", "--triangles", "3000", "--page-kib", "17",
                                "-o", str(path), "-q"]) == 0
    return path


def regions(path) -> list[tuple[str, int, int]]:
    """(name, start, end) of every region of the file, from its own header and directory."""
    raw = path.read_bytes()
    h = np.frombuffer(raw[:HEADER_DTYPE.itemsize], HEADER_DTYPE)[0]
    dir_offset, n_sec = int(h["dir_offset"]), int(h["section_count"])
    entries = np.frombuffer(raw[dir_offset : dir_offset + n_sec * SECTION_ENTRY_DTYPE.itemsize],
                            SECTION_ENTRY_DTYPE)
    page_size, pages = int(h["page_size"]), int(h["page_count"])
    stride = -(-page_size // 4096) * 4096
    meta_end, dir_end = 128 + int(h["meta_size"]), dir_offset + int(h["dir_size"])
    out = [("header", 0, 128), ("meta", 128, meta_end), ("meta padding", meta_end, dir_offset),
           ("directory", dir_offset, dir_end)]
    sections = sorted((int(e["offset"]), int(e["nbytes"]), e["name"].tobytes().rstrip(b"\0"))
                      for e in entries)
    out += [("directory padding", dir_end, sections[0][0])]
    for (offset, nbytes, name), nxt in zip(sections, [*sections[1:], None], strict=True):
        end = nxt[0] if nxt else int(h["page_table_offset"])
        out += [(f"section {name.decode()}", offset, offset + nbytes),
                (f"padding after {name.decode()}", offset + nbytes, end)]
    table_end = int(h["page_table_offset"]) + PAGE_ENTRY_DTYPE.itemsize * pages
    out += [("page table", int(h["page_table_offset"]), table_end),
            ("page table padding", table_end, int(h["pages_offset"]))]
    for i in range(pages):
        start = int(h["pages_offset"]) + i * stride
        out += [(f"page {i}", start, start + page_size),
                (f"page {i} padding", start + page_size, start + stride)]
    assert out[-1][2] == len(raw)
    return [r for r in out if r[2] > r[1]]


def corrupt(clean, tmp_path, start: int, end: int):
    """A copy of `clean` with one byte flipped, at a position that depends on the region only."""
    data = bytearray(clean.read_bytes())
    at = start + zlib.crc32(f"{start}:{end}".encode()) % (end - start)
    data[at] ^= 0x5A
    path = tmp_path / "bad.tess"
    path.write_bytes(bytes(data))
    return path


def one_line_refusal(capsys, rc: int) -> str:
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if "XDG_RUNTIME_DIR" not in line]
    assert rc == 2, err
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


def test_every_region_is_covered(clean):
    names = [r[0] for r in regions(clean)]
    for want in ("header", "meta", "directory", "section bvh_nodes", "section groups",
                 "page table", "page table padding", "page 0", "page 0 padding", "page 3"):
        assert want in names
    assert read_tess(clean).page_count >= 3


def test_info_and_verify_refuse_every_region(clean, tmp_path, capsys):
    assert cli.main(["info", str(clean)]) == 0
    clean_info = capsys.readouterr().out
    for name, start, end in regions(clean):
        bad = corrupt(clean, tmp_path, start, end)
        one_line_refusal(capsys, cli.main(["info", "--verify", str(bad)]))
        rc = cli.main(["info", str(bad)])
        if name.startswith("page ") and "table" not in name:
            # pages are checked lazily: without --verify, info reads only their records, and a
            # flip that makes a record wrong is named as its page's checksum
            if rc == 0:
                assert capsys.readouterr().out == clean_info, name
            else:
                assert "checksum mismatch" in one_line_refusal(capsys, rc), name
        else:
            message = one_line_refusal(capsys, rc)
            assert "bad.tess" in message, (name, message)


@pytest.mark.slow
@pytest.mark.gpu
def test_render_refuses_or_draws_the_clean_image(clean, tmp_path, capsys, gpu):
    outputs = {}
    for mode, extra in (("resident", []), ("streaming", ["--pool-mb", "0.05"])):
        out = tmp_path / f"clean-{mode}.png"
        assert cli.main(["render", str(clean), "-o", str(out), "--size", SIZE, "--view", "front",
                         "--arrays", str(tmp_path / f"clean-{mode}.npz"), *extra]) == 0
        outputs[mode] = (out.read_bytes(), np.load(tmp_path / f"clean-{mode}.npz"))
    capsys.readouterr()
    drawn_from_corrupt_pages = 0
    for name, start, end in regions(clean):
        bad = corrupt(clean, tmp_path, start, end)
        for mode, extra in (("resident", []), ("streaming", ["--pool-mb", "0.05"])):
            out, arrays = tmp_path / "out.png", tmp_path / "out.npz"
            rc = cli.main(["render", str(bad), "-o", str(out), "--size", SIZE, "--view", "front",
                           "--arrays", str(arrays), *extra])
            if mode == "resident" or not name.startswith("page "):
                one_line_refusal(capsys, rc)
                assert not out.exists() and not arrays.exists(), (name, mode)
            elif rc == 2:  # the view streamed the page in and its checksum failed
                one_line_refusal(capsys, rc)
                assert not out.exists(), (name, mode)
            else:  # a page the view never asked for: the picture must not change
                assert rc == 0, capsys.readouterr().err
                capsys.readouterr()
                assert out.read_bytes() == outputs[mode][0], (name, mode)
                got = np.load(arrays)
                for key in ("depth", "instance", "cluster", "triangle"):
                    np.testing.assert_array_equal(got[key], outputs[mode][1][key], err_msg=name)
                drawn_from_corrupt_pages += 1
                out.unlink()
                arrays.unlink()
    # the sweep reaches both streaming outcomes: refused pages and pages never asked for
    assert drawn_from_corrupt_pages > 0
