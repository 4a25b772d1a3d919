"""Values inside a checksum-valid `.tess` are checked, not believed (preprocess/tess/checks.py,
through `read_tess`): a small textured asset is built once, then for each value the GPU follows
one copy has that value made wrong and its checksums computed again (`craft_tess`). Opening it
must refuse in one line naming the section or page, the record and the field, and so must
`tessera info --verify` (which passed every such file); what lies in a page's streams is refused
when the page is first read (before the GPU receives it), and what culling only trusts (decoded
positions) by `verify`.

The asset: a 24 x 24 quad sheet from an OBJ whose halves have two textured materials (clusters
on the border store a material byte a triangle), its uvs tiled 2,000 times (float uvs), on
16 KiB pages (4 pages).
"""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
from PIL import Image

from preprocess.build import build_file
from preprocess.config import BuildConfig
from preprocess.tess import TessFormatError, read_tess
from preprocess.tess.limits import ROOT_ERROR
from preprocess.tess.records import (
    CHILD_EMPTY,
    CHILD_GROUP,
    MODE_HAS_MATERIAL,
    MODE_MATERIAL_SHIFT,
    MODE_POSITION_MASK,
    NO_GROUP,
)
from renderer.apps import cli


def _sheet(folder, n: int = 24):
    """An OBJ + MTL: an n x n quad sheet, left half `red`, right half `blue`, each with a
    16 x 16 PNG texture; uvs 0..2000."""
    for name, colour in (("red", (200, 40, 30)), ("blue", (30, 60, 220))):
        img = np.zeros((16, 16, 3), np.uint8)
        img[:] = colour
        img[::4] = 255
        Image.fromarray(img).save(folder / f"{name}.png")
    (folder / "sheet.mtl").write_text("newmtl red\nKd 1 1 1\nmap_Kd red.png\n"
                                      "newmtl blue\nKd 1 1 1\nmap_Kd blue.png\n")
    i, j = np.meshgrid(np.arange(n + 1), np.arange(n + 1), indexing="ij")
    x, z = i.ravel() / n, j.ravel() / n
    lines = ["mtllib sheet.mtl"]
    lines += [f"v {a:.6f} {0.05 * math.sin(7 * a) * math.cos(5 * b):.6f} {b:.6f}"
              for a, b in zip(x, z, strict=True)]
    lines += [f"vt {2000 * a:.6f} {2000 * b:.6f}" for a, b in zip(x, z, strict=True)]
    for name, cols in (("red", range(n // 2)), ("blue", range(n // 2, n))):
        lines.append(f"usemtl {name}")
        for a in cols:
            for b in range(n):
                v = a * (n + 1) + b + 1
                q = (v, v + n + 1, v + n + 2, v + 1)
                lines += [f"f {q[0]}/{q[0]} {q[1]}/{q[1]} {q[2]}/{q[2]}",
                          f"f {q[0]}/{q[0]} {q[2]}/{q[2]} {q[3]}/{q[3]}"]
    (folder / "sheet.obj").write_text("\n".join(lines) + "\n")
    return folder / "sheet.obj"


@pytest.fixture(scope="module")
def sheet(tmp_path_factory):
    """The textured sheet's `.tess` (see the module docstring), built once."""
    folder = tmp_path_factory.mktemp("sheet")
    out = folder / "sheet.tess"
    build_file(_sheet(folder), out, BuildConfig(page_size=16 * 1024))
    return out


def _where(parts, test):
    """(page, record) of the first cluster record for which test(record) holds."""
    for p in range(len(parts.pages)):
        recs = parts.records(p)
        hits = np.flatnonzero([test(r) for r in recs])
        if len(hits):
            return p, int(hits[0])
    raise AssertionError("no such cluster in the sheet")


def _record(test=lambda r: True):
    """An edit of one field of the first cluster record for which test(record) holds:
    `_record(test)(field, value or f(record))`."""
    def field(name, value):
        def edit(parts):
            p, k = _where(parts, test)
            rec = parts.records(p)[k : k + 1]
            rec[name] = value(rec[0]) if callable(value) else value
        return edit
    return field


def _section(name, field, index, value):
    def edit(parts):
        arr = parts.sections[name]
        arr[field][index] = value(arr) if callable(value) else value
    return edit


def _meta(key, value):
    def edit(parts):
        parts.meta[key] = value(parts.meta) if callable(value) else value
    return edit


def _page_header(p, field, value):
    def edit(parts):
        parts.header(p)[field] = value(parts) if callable(value) else value
    return edit


def _child_slot(parts, kind):
    """(node, slot) of the first child slot of a kind: 'node', 'group' or 'empty'."""
    ch = parts.sections["bvh_nodes"]["children"].astype(np.int64)
    empty = ch == CHILD_EMPTY
    group = ~empty & (ch & CHILD_GROUP != 0)
    mask = {"empty": empty, "group": group, "node": ~empty & ~group}[kind]
    return divmod(int(np.flatnonzero(mask)[0]), ch.shape[1])


def _child(kind, value):
    def edit(parts):
        u, k = _child_slot(parts, kind)
        parts.sections["bvh_nodes"]["children"][u, k] = value(parts)
    return edit


def _twice(parts):  # an empty slot given a node that is some node's child already
    u, k = _child_slot(parts, "empty")
    v, s = _child_slot(parts, "node")
    nodes = parts.sections["bvh_nodes"]
    nodes["children"][u, k] = nodes["children"][v, s]


def _two_roots(parts):
    groups = parts.sections["groups"]
    groups["error"][int(np.argmin(groups["error"]))] = np.float32(ROOT_ERROR)


def _index_byte(parts):  # the first corner of the first triangle names a vertex past the cluster
    rec = parts.records(0)[0]
    parts.pages[0, int(rec["index_offset"])] = int(rec["vertex_count"])


def _shared_indices(parts):  # cluster 1 reads cluster 0's indices (overlapping streams)
    recs = parts.records(0)
    recs["index_offset"][1] = recs["index_offset"][0]
    recs["triangle_count"][1] = min(recs["triangle_count"][:2])


def _shared_normals(parts):  # cluster 1's normals are cluster 0's: as valid as any, but not its
    recs = parts.records(0)
    recs["vertex_count"][1] = min(recs["vertex_count"][:2])
    recs["normal_offset"][1] = recs["normal_offset"][0]
    recs["uv_offset"][1] = recs["normal_offset"][1] + 4 * recs["vertex_count"][1]


def _swapped_indices(parts):  # clusters 0 and 1 read each other's indices (apart, out of order),
    recs = parts.records(0)  # and cluster 1 has 1 vertex
    recs["triangle_count"][:2] = min(recs["triangle_count"][:2])
    recs["index_offset"][:2] = recs["index_offset"][1::-1].copy()
    recs["vertex_count"][1] = 1
    if recs["uv_offset"][1]:  # the uvs right after the one normal
        recs["uv_offset"][1] = recs["normal_offset"][1] + 4


def _material_byte(parts):  # a mixed cluster's first triangle names material 5 of 2
    p, k = _where(parts, lambda r: r["mode"] & MODE_HAS_MATERIAL)
    rec = parts.records(p)[k]
    at = int(rec["index_offset"]) + (3 * int(rec["triangle_count"]) + 3) // 4 * 4
    parts.pages[p, at] = 5


def _uv_nan(parts):
    rec = parts.records(0)[0]
    at = int(rec["uv_offset"])
    parts.pages[0, at : at + 4] = np.frombuffer(np.float32(np.nan).tobytes(), np.uint8)


def _far_vertex(parts):  # the first vertex of a 16-bit cluster at offsets 65535: far outside
    p, k = _where(parts, lambda r: r["mode"] & MODE_POSITION_MASK == 0)
    at = int(parts.records(p)[k]["position_offset"])
    parts.pages[p, at : at + 6] = 255


def _root_level_0(parts):  # the root group (coarsest) at level 0: below its members
    groups = parts.sections["groups"]
    groups["level"][int(np.argmax(groups["error"]))] = 0


def _level0(r):
    return r["source_group"] == NO_GROUP


def _produced(r):
    return r["source_group"] != NO_GROUP


def _single_material(r):
    return not r["mode"] & MODE_HAS_MATERIAL


# (id, edit, the one line's pattern): refused when the file is opened
AT_OPEN = [
    ("meta-step-zero", _meta("step", 0), r"meta: step is 0, not a finite number > 0"),
    ("meta-step-float32", _meta("step", 1e-50),
     r"meta: step is 1e-50, not a finite number > 0 \(at least 1.18e-38: the GPU reads it as "
     r"float32"),
    ("meta-bounds", _meta("bounds_min", lambda m: [v + 10 for v in m["bounds_max"]]),
     r"meta: bounds_min .* and bounds_max .* are no box"),
    ("meta-uv-box", _meta("uv_min", [0.0]), r"meta: uv_min is \[0.0\], not 2 finite numbers"),
    ("section-dtype", lambda parts: parts.sections.update(
        groups=parts.sections["groups"].view(np.uint32)), r"section 'groups' holds 4-byte"),
    ("node-child-node", _child("node", lambda parts: 23),
     r"section bvh_nodes, node \d+: children\[\d\] is node 23, past the file's \d+ nodes"),
    ("node-child-group", _child("group", lambda parts: CHILD_GROUP | 999),
     r"section bvh_nodes, node \d+: children\[\d\] is group 999, past the file's \d+ groups"),
    ("node-child-root", _child("empty", lambda parts: 0), r"children\[\d\] is the root node 0"),
    ("node-child-twice", _twice, r"section bvh_nodes, node \d+: the child of 2 nodes, not of "
                                 r"one"),
    ("node-depth", _section("bvh_nodes", "depth", 1, lambda a: a["depth"][1] + 1),
     r"section bvh_nodes, node 1: depth 2, but its parent node 0 has depth 0"),
    ("node-sphere", _section("bvh_nodes", "sphere", (2, 3), -1.0),
     r"section bvh_nodes, node 2: sphere .* not a sphere"),
    ("node-box", _section("bvh_nodes", "box_min", (2, 0), lambda a: a["box_max"][2, 0] + 1),
     r"section bvh_nodes, node 2: box_min .* not a finite box"),
    ("node-max-error", _section("bvh_nodes", "max_error", 0, 0.0),
     r"section bvh_nodes, node 0: max_error 0, less than its child node"),
    ("node-max-error-nan", _section("bvh_nodes", "max_error", 1, np.nan),
     r"section bvh_nodes, node 1: max_error nan, not a finite number >= 0"),
    ("group-first-part", _section("groups", "first_part", 0, 100),
     r"section groups, group 0: first_part 100 and part_count \d+ run past"),
    ("group-part-count", _section("groups", "part_count", 0, 0),
     r"section groups, group 0: part_count 0, at least 1"),
    ("group-cluster-count", _section("groups", "cluster_count", 0, lambda a: a["cluster_count"][0]
                                     + 1), r"section groups, group 0: cluster_count \d+, but"),
    ("group-error", _section("groups", "error", 1, -1.0),
     r"section groups, group 1: error -1, not a finite number >= 0"),
    ("group-sphere", _section("groups", "sphere", (1, 0), np.inf),
     r"section groups, group 1: sphere .* not a sphere"),
    ("group-two-roots", _two_roots, r"section groups: 2 groups have the root's error"),
    ("part-page", _section("group_parts", "page", 0, 4),
     r"section group_parts, part 0: page 4, past the file's 4 pages"),
    ("part-first-cluster", _section("group_parts", "first_cluster", 0, 50),
     r"section group_parts, part 0: first_cluster 50 and cluster_count \d+ run past the \d+ "
     r"clusters of page \d"),
    ("part-cluster-count", _section("group_parts", "cluster_count", 0, 0),
     r"section group_parts, part 0: cluster_count 0, at least 1"),
    ("part-group", _section("group_parts", "group", 0, lambda a: (a["group"][0] + 1) % len(a)),
     r"section group_parts, part 0: group \d+, but group \d+ lists it"),
    ("material-texture", _section("materials", "base_color_texture", 0, 7),
     r"section materials, material 0: base_color_texture 7, past the file's 2 textures"),
    ("material-factor", _section("materials", "roughness", 1, np.nan),
     r"section materials, material 1: roughness \(nan\), not finite"),
    ("material-metallic", _section("materials", "metallic", 1, 2.5),
     r"section materials, material 1: metallic 2.5, not within 0..1"),
    ("material-occlusion", _section("materials", "occlusion_strength", 0, -1.0),
     r"section materials, material 0: occlusion_strength -1, not within 0..1"),
    ("material-flags", _section("materials", "flags", 0, 0x40),
     r"section materials, material 0: flags 0x40, unknown bits"),
    ("texture-offset", _section("textures", "offset", 1, 60),
     r"section textures, texture 1: offset 60 and its 5 mips \(46 words\) run past the "
     r"file's 92 texel words"),
    ("texture-offset-rgba8", _section("textures", "format", 1, 0),  # BC1's words read as RGBA8
     r"section textures, texture 1: offset 46 and its 5 mips \(341 words\) run past the "
     r"file's 92 texel words"),
    ("texture-format", _section("textures", "format", 0, 9),
     r"section textures, texture 0: format 9, not one of \[0, 1, 2, 3, 4, 5\]"),
    ("texture-width", _section("textures", "width", 0, 100_000),
     r"section textures, texture 0: width 100000 and height 16, not a size"),
    ("texture-mips", _section("textures", "mips", 0, 9),
     r"section textures, texture 0: mips 9, not 1..5 for 16 x 16"),
    ("texture-flags", _section("textures", "flags", 0, 0x10),
     r"section textures, texture 0: flags 0x10, unknown bits"),
    ("page-cluster-count", _page_header(0, "cluster_count", 2000),
     r"page 0: cluster_count 2000, more than 1024"),
    ("page-bytes-used", _page_header(1, "bytes_used", 20_000),
     r"page 1: bytes_used 20000, not between the end of its \d+ cluster records"),
    ("page-index", _page_header(1, "page", 0), r"page 1: page 0, not its own index"),
    ("page-flags", lambda parts: parts.page_flags.__setitem__(1, parts.page_flags[1] ^ 1),
     r"page 1: flags 0x\d, but the page table says 0x\d"),
    ("cluster-triangle-count", _record()("triangle_count", 255),
     r"page 0 cluster 0: triangle_count 255, not 1..128"),
    ("cluster-vertex-count", _record()("vertex_count", 0),
     r"page 0 cluster 0: vertex_count 0, not 1..255"),
    ("cluster-mode-bits", _record()("mode", lambda r: r["mode"] | 1 << 30),
     r"page 0 cluster 0: mode 0x4.*, unknown bits 0x40000000"),
    ("cluster-position-encoding", _record()("mode", lambda r: r["mode"] & ~np.uint32(0xFF) | 2),
     r"page 0 cluster 0: mode 0x.*, position encoding 2"),
    ("cluster-material", _record(_single_material)(
        "mode", lambda r: r["mode"] | 9 << MODE_MATERIAL_SHIFT),
     r"page \d cluster \d+: mode 0x.* names material 9, past the file's 2 materials"),
    ("cluster-position-offset", _record()("position_offset", lambda r: r["position_offset"] + 2),
     r"page 0 cluster 0: position_offset \d+ and its \d+ bytes, not 4-byte aligned within"),
    ("cluster-normal-offset", _record()("normal_offset", 16 * 1024 - 4),
     r"page 0 cluster 0: normal_offset 16380 and its \d+ bytes, not 4-byte aligned within the "
     r"page's streams"),
    ("cluster-uv-offset", _record()("uv_offset", 1 << 20), r"page 0 cluster 0: uv_offset"),
    ("cluster-index-offset", _record()("index_offset", 16),
     r"page 0 cluster 0: index_offset 16 and its \d+ bytes, not 4-byte aligned within the "
     r"page's streams \(bytes \d+..\d+\)"),
    ("cluster-index-shared", _shared_indices,
     r"page 0 cluster 1: index_offset bytes \d+..\d+ overlap cluster 0's index_offset bytes "
     r"\d+..\d+ \(a page's streams share no byte\)"),
    ("cluster-normal-shared", _shared_normals,
     r"page 0 cluster 1: normal_offset bytes \d+..\d+ overlap cluster 0's normal_offset"),
    ("cluster-uv-apart", _record()("uv_offset", lambda r: r["uv_offset"] + 4),
     r"page 0 cluster 0: uv_offset \d+, not right after its normals \(normal_offset \+ 4 x "
     r"vertex_count = \d+\)"),
    ("cluster-bounds", _record()("bounds", lambda r: (*r["bounds"][:3], np.nan)),
     r"page 0 cluster 0: bounds .*nan.* not a sphere"),
    ("cluster-self-sphere", _record()("self_sphere", lambda r: (*r["self_sphere"][:3], -1)),
     r"page 0 cluster 0: self_sphere .* not a sphere"),
    ("cluster-pos-min", _record()("pos_min", lambda r: r["pos_min"] + (1 << 20)),
     r"page 0 cluster 0: pos_min \(.*\), at \(.*\) on the grid of step .*, outside its bounds"),
    ("cluster-group", _record()("group", lambda r: r["group"] + 1),
     r"page 0 cluster 0: group \d+, but group part \d+ holds it for group \d+"),
    ("cluster-source-group", _record(_produced)("source_group", 999),
     r"page \d cluster \d+: source_group 999, past the file's \d+ groups"),
    ("cluster-source-level-0", _record(_produced)("source_group", NO_GROUP),
     r"page \d cluster \d+: level \d+ and source_group 0xffffffff: the source group is "
     r"NO_GROUP exactly at level 0"),
    ("cluster-level", _record(_produced)("level", lambda r: r["level"] + 1),
     r"level \d+, but its source group \d+ has level \d+: a produced cluster is exactly one"),
    ("group-level", _root_level_0,
     r"page 0 cluster \d+: level \d+, but its group \d+ has level 0: a cluster's group is at "
     r"its level or coarser"),
    ("cluster-self-error-nan", _record()("self_error", np.nan),
     r"page 0 cluster 0: self_error nan, not a finite number >= 0"),
    ("cluster-self-error", _record(_produced)("self_error", lambda r: r["self_error"] + 1),
     r"self_error .*, but its source group \d+ has error .*: they must be equal"),
    ("cluster-self-error-level-0", _record(_level0)("self_error", 1.0),
     r"self_error 1 at level 0: its LOD bound must be its bounds"),
]

# refused when the page is first read (the file opens)
AT_PAGE = [
    ("stream-index", _index_byte,
     r"page 0 cluster 0: triangle 0 names vertex \d+, past its vertex_count \d+"),
    ("stream-index-out-of-order", _swapped_indices,
     r"page 0 cluster 1: triangle \d+ names vertex \d+, past its vertex_count 1"),
    ("stream-material", _material_byte,
     r"page \d cluster \d+: triangle 0's material byte names material 5, past the file's 2 "
     r"materials"),
    ("stream-uv", _uv_nan, r"page 0 cluster 0: the uv of vertex 0 is nan, not finite"),
]


def _craft(sheet, tmp_path, craft_tess, edit):
    return craft_tess(sheet, tmp_path / "bad.tess", edit)


def _refusal(error: pytest.ExceptionInfo, pattern: str, path) -> None:
    message = str(error.value)
    assert "\n" not in message and message.startswith(f"{path}: "), message
    assert re.search(pattern, message), message


def test_the_sheet_opens_and_verifies(sheet):
    """The file the cases edit opens, passes `verify`, and holds what they edit: several pages,
    two textures, clusters with a material byte a triangle and with one material, float uvs,
    16-bit positions, level-0 and produced clusters."""
    from preprocess.tess.pages import page_clusters
    from preprocess.tess.records import MODE_UV_FLOAT

    with read_tess(sheet, verify_pages=True) as f:  # every check, positions decoded
        assert f.page_count == 4 and len(f.sections["textures"]) == 2
        recs = np.concatenate([page_clusters(f.page(p)) for p in range(f.page_count)])
    mode = recs["mode"]
    assert (mode & MODE_HAS_MATERIAL != 0).any() and (mode & MODE_HAS_MATERIAL == 0).any()
    assert (mode & MODE_UV_FLOAT != 0).all() and (mode & MODE_POSITION_MASK == 0).any()
    assert (recs["source_group"] == NO_GROUP).any() and (recs["source_group"] != NO_GROUP).any()


@pytest.mark.parametrize("edit, pattern", [c[1:] for c in AT_OPEN], ids=[c[0] for c in AT_OPEN])
def test_a_wrong_value_is_refused_at_open(sheet, tmp_path, craft_tess, capsys, edit, pattern):
    bad = _craft(sheet, tmp_path, craft_tess, edit)
    with pytest.raises(TessFormatError) as error:
        read_tess(bad)
    _refusal(error, pattern, bad)
    assert cli.main(["info", "--verify", str(bad)]) == 2  # it passed every such file
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and re.search(pattern, err), err


@pytest.mark.parametrize("edit, pattern", [c[1:] for c in AT_PAGE], ids=[c[0] for c in AT_PAGE])
def test_a_wrong_stream_is_refused_when_its_page_is_read(sheet, tmp_path, craft_tess, edit,
                                                         pattern):
    bad = _craft(sheet, tmp_path, craft_tess, edit)
    with read_tess(bad) as f:  # the records are right: the file opens
        with pytest.raises(TessFormatError) as error:
            for p in range(f.page_count):  # as streaming reads pages, one at a time
                f.page(p)
    _refusal(error, pattern, bad)
    with read_tess(bad) as f, pytest.raises(TessFormatError) as error:
        f.verify_all()  # as the renderer checks every page before a resident upload
    _refusal(error, pattern, bad)


def test_a_far_position_is_refused_by_verify(sheet, tmp_path, craft_tess, capsys):
    bad = _craft(sheet, tmp_path, craft_tess, _far_vertex)
    with read_tess(bad) as f:
        f.verify_all()  # nothing the GPU follows is wrong
        with pytest.raises(TessFormatError) as error:
            f.verify()
    _refusal(error, r"page \d cluster \d+: its vertices span .* outside the box .* of BVH "
                    r"node \d+, its group's leaf", bad)
    assert cli.main(["info", str(bad)]) == 0
    capsys.readouterr()
    assert cli.main(["info", "--verify", str(bad)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "outside the box" in err, err


def test_a_damaged_page_is_named_before_its_records(sheet, tmp_path, craft_tess):
    """Records are read before their page's checksum: where one fails and its page's checksum
    fails too, the checksum is the cause."""
    bad = _craft(sheet, tmp_path, craft_tess, AT_OPEN[[c[0] for c in AT_OPEN].index(
        "cluster-triangle-count")][1])
    with read_tess(sheet) as f:
        start = int(f.page_offsets[0])
    data = bytearray(bad.read_bytes())
    data[start + 8000] ^= 0x5A  # a byte of page 0's streams: its checksum no longer holds
    bad.write_bytes(bytes(data))
    with pytest.raises(TessFormatError, match=r"page 0 checksum mismatch$"):
        read_tess(bad)
