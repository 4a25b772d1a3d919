"""Every value of a `.tess` asset that the GPU follows, checked against the file's own sizes.

The checksums say that the bytes are the ones written, not that the writer was right: a file
from another tool, a bug in a writer, or one edited with its checksums recomputed can hold a
triangle count of 255, an offset past its page or a BVH child past the nodes, and the GPU
follows them without bounds (WGSL clamps an index past a buffer to some element of it:
garbage on the screen, never an error). So what the GPU follows is checked here, with numpy
over whole record arrays (no Python loop per cluster):

- `check_asset`, when the file is opened (`preprocess.tess.reader.AssetFile`): the meta's step
  and bounds; each section's record type; the groups and their parts; the BVH nodes (children
  in range, one parent each, depths, spheres, boxes, max errors at least those below); the
  materials and textures; every page's header and cluster records (counts, stream offsets
  inside the page, groups, parts, levels, LOD errors, the source groups' bounds bit for bit).
  The records are read before their page's checksum is (pages are checked lazily).
- `check_page`, when a page is first read, before the GPU receives it: its streams decoded,
  every local index within its cluster's vertices, every material byte within the materials,
  float uvs finite, every position inside its cluster's bounds sphere and its BVH leaf's box.
- `check_sources`: the source group of every cluster record (what streaming and crack-free
  cuts rely on); `preprocess.verify.check_source_groups` runs it on a build too.

A failure raises `RecordError`, one line naming the section or page, the record and the field
("page 3 cluster 5: triangle_count 255, more than 128").
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, NoReturn

import numpy as np

from preprocess.tess.limits import (
    MAX_CLUSTER_TRIANGLES,
    MAX_CLUSTER_VERTICES,
    MAX_MATERIALS,
    MAX_PAGE_CLUSTERS,
    MAX_WORLD,
    ROOT_ERROR,
)
from preprocess.tess.pages import page_clusters
from preprocess.tess.records import (
    CHILD_EMPTY,
    CHILD_GROUP,
    CLUSTER_DTYPE,
    GROUP_DTYPE,
    MATERIAL_ALPHA_MASK,
    MATERIAL_BYTE_DOUBLE_SIDED,
    MATERIAL_DOUBLE_SIDED,
    MATERIAL_DTYPE,
    MATERIAL_TEXTURES,
    MODE_ALPHA_MASK,
    MODE_DOUBLE_SIDED,
    MODE_HAS_COLOR,
    MODE_HAS_MATERIAL,
    MODE_HAS_UV,
    MODE_MATERIAL_SHIFT,
    MODE_POSITION_MASK,
    MODE_UV_FLOAT,
    NO_GROUP,
    NO_TEXTURE,
    NODE_DTYPE,
    PAGE_HEADER_DTYPE,
    PART_DTYPE,
    TEXTURE_DTYPE,
    TEXTURE_FORMATS,
    TEXTURE_SRGB,
)

__all__ = ["PageContext", "PageRecords", "RecordError", "asset_sections", "check_asset",
           "check_bvh", "check_groups", "check_materials", "check_membership", "check_meta",
           "check_nesting", "check_page", "check_positions", "check_records", "check_sources",
           "containment_excess", "read_page_records"]

# the record type of each section; the first three make a file a Tessera asset
SECTIONS = {"bvh_nodes": NODE_DTYPE, "groups": GROUP_DTYPE, "group_parts": PART_DTYPE,
            "materials": MATERIAL_DTYPE, "textures": TEXTURE_DTYPE, "texels": np.dtype("<u4")}
REQUIRED = ("bvh_nodes", "groups", "group_parts")
# a sphere or box coordinate: the mesh lies within MAX_WORLD, so a radius within its diagonal
FAR = 4 * MAX_WORLD
F32_SLACK = 4.0 * float(np.finfo(np.float32).eps)  # float32 ulps of a coordinate's magnitude
F32_MAX = float(np.finfo(np.float32).max)
F32_TINY = float(np.finfo(np.float32).tiny)  # the least normal float32: a step below it is 0
SPHERE_REL_EPS = 1e-5  # containment slack, relative to the sphere's radius
KNOWN_MODE_BITS = (MODE_POSITION_MASK | MODE_HAS_UV | MODE_HAS_COLOR | MODE_HAS_MATERIAL
                   | MODE_DOUBLE_SIDED | MODE_ALPHA_MASK | MODE_UV_FLOAT
                   | 0xFF << MODE_MATERIAL_SHIFT)
MATERIAL_FLOATS = ("base_color", "emissive", "alpha_cutoff", "metallic", "roughness",
                   "normal_scale", "occlusion_strength")
UNIT_FACTORS = ("metallic", "roughness", "occlusion_strength")


class RecordError(ValueError):
    """A value of a `.tess` asset that the GPU must not follow: one line, without the path."""


def _fail(message: str) -> NoReturn:
    raise RecordError(message)


def _first(mask: np.ndarray) -> int | None:
    """The first (flat) index where mask holds, or None."""
    if not mask.any():  # the usual answer, without an array of indices
        return None
    return int(np.flatnonzero(mask)[0])


def _first_row(mask: np.ndarray) -> int | None:
    """The first row of a 2-D mask where any column holds, or None (faster than any(axis=1)
    over a few columns)."""
    k = _first(mask)
    return None if k is None else k // mask.shape[1]


def _ragged(starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Concatenated ranges starts[i] .. starts[i] + lengths[i] (int64), without a loop."""
    lengths = np.asarray(lengths, np.int64)
    before = np.cumsum(lengths) - lengths
    return np.repeat(np.asarray(starts, np.int64) - before, lengths) + np.arange(lengths.sum())


def _align4(n: np.ndarray) -> np.ndarray:
    return (n + 3) // 4 * 4


def _vec(v: np.ndarray) -> str:
    return "(" + ", ".join(f"{x:.6g}" for x in np.asarray(v).reshape(-1)) + ")"


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


# ---------------------------------------------------------------------------- meta and sections


def _number(value: Any) -> bool:
    """A JSON number that float32, as the GPU reads it, holds (not inf there)."""
    return (isinstance(value, (int, float)) and not isinstance(value, bool)
            and math.isfinite(value) and abs(value) <= F32_MAX)


def _meta_vector(meta: Mapping[str, Any], key: str, n: int) -> np.ndarray:
    value = meta.get(key)
    if not (isinstance(value, list) and len(value) == n and all(map(_number, value))):
        _fail(f"meta: {key} is {_short(value)}, not {n} finite numbers")
    return np.array(value, np.float64)


def check_meta(meta: Mapping[str, Any]) -> float:
    """The meta's values the renderer reads: the quantization step (finite, > 0), the bounds (a
    box within MAX_WORLD), the uv box where there is one. Returns the step."""
    step = meta.get("step")
    if not (_number(step) and step >= F32_TINY):
        _fail(f"meta: step is {_short(step)}, not a finite number > 0 (at least {F32_TINY:.3g}: "
              f"the GPU reads it as float32)")
    lo, hi = _meta_vector(meta, "bounds_min", 3), _meta_vector(meta, "bounds_max", 3)
    if (lo > hi).any() or max(np.abs(lo).max(), np.abs(hi).max()) > MAX_WORLD:
        _fail(f"meta: bounds_min {_vec(lo)} and bounds_max {_vec(hi)} are no box within "
              f"+-{MAX_WORLD:.0e}")
    for key in ("uv_min", "uv_max"):
        if key in meta:
            _meta_vector(meta, key, 2)
    return float(step)


def asset_sections(sections: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The asset's sections by name (`SECTIONS`), each of its record type and 1-D; the optional
    ones empty where the file has none."""
    for name in REQUIRED:
        if name not in sections:
            _fail(f"section {name!r} missing (not a Tessera asset?)")
    out = {}
    for name, dtype in SECTIONS.items():
        a = sections.get(name, np.zeros(0, dtype))
        if a.dtype != dtype or a.ndim != 1:
            _fail(f"section {name!r} holds {a.dtype.itemsize}-byte items of shape {a.shape}, "
                  f"not the {name} records of this format")
        if name in REQUIRED and not len(a):
            _fail(f"section {name!r} is empty")
        out[name] = a
    return out


Where = Callable[[int], str]  # names record k in a message: "section groups, group 7"


def _record(section: str, noun: str) -> Where:
    return lambda k: f"section {section}, {noun} {k}"


def containment_excess(outer: np.ndarray, inner_center: np.ndarray,
                       inner_radius: np.ndarray) -> np.ndarray:
    """How far each inner sphere pokes out of its outer sphere beyond the allowed slack
    (SPHERE_REL_EPS of the outer radius plus a few float32 ulps of the coordinates: spheres are
    stored as float32). outer (n, 4), inner_center (n, 3), inner_radius (n,) -> (n,) float64;
    > 0 means not contained."""
    o = np.asarray(outer, np.float64)
    c = np.asarray(inner_center, np.float64)
    r = np.asarray(inner_radius, np.float64)
    reach = np.linalg.norm(c - o[:, :3], axis=1) + r
    magnitude = np.maximum(np.abs(o[:, :3]).max(axis=1), np.abs(c).max(axis=1)) + o[:, 3]
    slack = SPHERE_REL_EPS * o[:, 3] + F32_SLACK * magnitude
    return reach - o[:, 3] - slack


def _spheres(where: Where, field: str, s: np.ndarray) -> None:
    """Spheres (n, 4) float32 finite, within FAR, radius >= 0."""
    if (k := _first_row(~(np.abs(s) <= FAR) | (s[:, 3:] < 0))) is not None:
        _fail(f"{where(k)}: {field} {_vec(s[k])}, not a sphere (finite, within "
              f"+-{FAR:.0e}, radius >= 0)")


def _errors(where: Where, field: str, e: np.ndarray) -> None:
    """LOD errors finite and >= 0 (ROOT_ERROR at most)."""
    if (k := _first(~((e >= 0) & (e <= np.float32(ROOT_ERROR))))) is not None:
        _fail(f"{where(k)}: {field} {e[k]:.9g}, not a finite number >= 0")


# ------------------------------------------------------------------------------- groups and BVH


def check_groups(groups: np.ndarray, parts: np.ndarray, page_count: int,
                 root_group: Any = None) -> int:
    """Groups and their parts: every part listed by exactly one group, as its group says; pages
    in range; cluster counts adding up; spheres and errors; one root group (error ROOT_ERROR),
    the meta's `root_group` where it names one. Returns the root group."""
    g, m = len(groups), len(parts)
    where = _record("groups", "group")
    first = groups["first_part"].astype(np.int64)
    count = groups["part_count"].astype(np.int64)
    if (j := _first(count < 1)) is not None:
        _fail(f"{where(j)}: part_count 0, at least 1")
    if (j := _first(first + count > m)) is not None:
        _fail(f"{where(j)}: first_part {first[j]} and part_count {count[j]} run past the "
              f"file's {m} group parts")
    listed = _ragged(first, count)
    owner = np.repeat(np.arange(g), count)
    times = np.bincount(listed, minlength=m)
    if (i := _first(times != 1)) is not None:
        _fail(f"section group_parts, part {i}: listed by {times[i]} groups, not by one")
    part_group = parts["group"].astype(np.int64)
    if (k := _first(part_group[listed] != owner)) is not None:
        _fail(f"section group_parts, part {listed[k]}: group {part_group[listed[k]]}, but "
              f"group {owner[k]} lists it")
    page, held = parts["page"].astype(np.int64), parts["cluster_count"].astype(np.int64)
    if (i := _first(page >= page_count)) is not None:
        _fail(f"section group_parts, part {i}: page {page[i]}, past the file's {page_count} "
              f"pages")
    if (i := _first(held < 1)) is not None:
        _fail(f"section group_parts, part {i}: cluster_count 0, at least 1")
    total = np.bincount(owner, weights=held[listed], minlength=g)
    if (j := _first(total != groups["cluster_count"])) is not None:
        _fail(f"{where(j)}: cluster_count {groups['cluster_count'][j]}, but its parts "
              f"hold {int(total[j])}")
    _spheres(where, "sphere", groups["sphere"])
    _errors(where, "error", groups["error"])
    roots = np.flatnonzero(groups["error"] >= np.float32(ROOT_ERROR))
    if len(roots) != 1:
        _fail(f"section groups: {len(roots)} groups have the root's error ({ROOT_ERROR:g}), "
              f"not one")
    if root_group is not None and root_group != int(roots[0]):
        _fail(f"meta: root_group is {_short(root_group)}, but group {roots[0]} has the root's "
              f"error")
    return int(roots[0])


def _children(nodes: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The nodes' child slots: (n, BVH_FANOUT) int64 the node or group each names, and where a
    slot names a node, where a group (neither: empty)."""
    ch = nodes["children"].astype(np.int64)
    is_group = (ch != CHILD_EMPTY) & (ch & CHILD_GROUP != 0)
    is_node = (ch != CHILD_EMPTY) & ~is_group
    return np.where(is_group, ch & (CHILD_GROUP - 1), ch), is_node, is_group


def check_bvh(nodes: np.ndarray, groups: np.ndarray) -> np.ndarray:
    """BVH nodes: each child slot empty, a node or a group in range; the root no child, every
    other node the child of one node, one level deeper (so no cycle, and every node reached);
    every group a leaf exactly once; spheres, boxes, max errors finite and at least those of
    the children and leaf groups. Returns (g,) int64, the node of each group's leaf."""
    n, g = len(nodes), len(groups)
    where = _record("bvh_nodes", "node")
    ref, is_node, is_group = _children(nodes)
    fan = ref.shape[1]

    def slot(k: int) -> str:
        return f"{where(k // fan)}: children[{k % fan}]"

    if (k := _first(is_group & (ref >= g))) is not None:
        _fail(f"{slot(k)} is group {ref.flat[k]}, past the file's {g} groups")
    if (k := _first(is_node & (ref >= n))) is not None:
        _fail(f"{slot(k)} is node {ref.flat[k]}, past the file's {n} nodes")
    at = np.flatnonzero(is_node)
    child, parent = ref.reshape(-1)[at], at // fan
    if (k := _first(child == 0)) is not None:
        _fail(f"{slot(at[k])} is the root node 0")
    times = np.bincount(child, minlength=n)
    if (v := _first(times[1:] != 1)) is not None:
        _fail(f"{where(v + 1)}: the child of {times[v + 1]} nodes, not of one")
    depth = nodes["depth"].astype(np.int64)
    if depth[0] != 0:
        _fail(f"{where(0)}: depth {depth[0]}, not 0 (the root)")
    if (k := _first(depth[child] != depth[parent] + 1)) is not None:
        _fail(f"{where(child[k])}: depth {depth[child[k]]}, but its parent node "
              f"{parent[k]} has depth {depth[parent[k]]}")
    at = np.flatnonzero(is_group)
    leaf, holder = ref.reshape(-1)[at], at // fan
    leaves = np.bincount(leaf, minlength=g)
    if (j := _first(leaves != 1)) is not None:
        _fail(f"section groups, group {j}: a leaf of {leaves[j]} BVH nodes, not of one")
    _spheres(where, "sphere", nodes["sphere"])
    lo, hi = nodes["box_min"], nodes["box_max"]
    if (u := _first(~(np.abs(np.hstack([lo, hi])) <= FAR).all(axis=1)
                    | (lo > hi).any(axis=1))) is not None:
        _fail(f"{where(u)}: box_min {_vec(lo[u])} and box_max {_vec(hi[u])}, not a "
              f"finite box")
    err = nodes["max_error"]
    _errors(where, "max_error", err)
    if (k := _first(err[parent] < err[child])) is not None:
        _fail(f"{where(parent[k])}: max_error {err[parent[k]]:.9g}, less than its child "
              f"node {child[k]}'s {err[child[k]]:.9g}")
    gerr = groups["error"]
    if (k := _first(err[holder] < gerr[leaf])) is not None:
        _fail(f"{where(holder[k])}: max_error {err[holder[k]]:.9g}, less than the error "
              f"{gerr[leaf[k]]:.9g} of its leaf group {leaf[k]}")
    leaf_node = np.zeros(g, np.int64)
    leaf_node[leaf] = holder
    return leaf_node


# ---------------------------------------------------------------------------------- materials


def check_materials(materials: np.ndarray, textures: np.ndarray, texels: np.ndarray) -> int:
    """Materials (at most MAX_MATERIALS; texture indices within the textures, factors finite,
    known flags) and textures (sizes, mips, a known format, each mip chain within the texels).
    Returns the materials a cluster may name: 1 (the default) in a file without."""
    nm, nt, n = len(materials), len(textures), len(texels)
    if nm > MAX_MATERIALS:
        _fail(f"section materials: {nm} materials, more than {MAX_MATERIALS}")
    where = _record("materials", "material")
    for field in MATERIAL_TEXTURES:
        idx = materials[field]
        if (i := _first((idx != NO_TEXTURE) & (idx >= nt))) is not None:
            _fail(f"{where(i)}: {field} {idx[i]}, past the file's {nt} textures")
    for field in MATERIAL_FLOATS:
        v = materials[field].reshape(nm, -1)
        if (i := _first(~np.isfinite(v).all(axis=1))) is not None:
            _fail(f"{where(i)}: {field} {_vec(v[i])}, not finite")
    for field in UNIT_FACTORS:  # the builder clamps them (glTF's range)
        v = materials[field].astype(np.float64)
        if (i := _first((v < 0) | (v > 1))) is not None:
            _fail(f"{where(i)}: {field} {v[i]:g}, not within 0..1")
    flags = materials["flags"].astype(np.int64)
    if (i := _first(flags & ~(MATERIAL_DOUBLE_SIDED | MATERIAL_ALPHA_MASK))) is not None:
        _fail(f"{where(i)}: flags {flags[i]:#x}, unknown bits")
    where = _record("textures", "texture")
    w, h = textures["width"].astype(np.int64), textures["height"].astype(np.int64)
    # the most texels n words hold: 8 a word in BC1 and BC4 (clipped: no int64 overflow)
    most = 8 * n
    big = (np.minimum(w, most + 1) * np.minimum(h, most + 1) > most)
    if (i := _first((w < 1) | (h < 1) | big)) is not None:
        _fail(f"{where(i)}: width {w[i]} and height {h[i]}, not a size of 1 texel up to "
              f"the {most} that the file's {n} texel words can hold")
    mips = textures["mips"].astype(np.int64)
    full = np.floor(np.log2(np.maximum(np.maximum(w, h), 1))).astype(np.int64) + 1
    if (i := _first((mips < 1) | (mips > full))) is not None:
        _fail(f"{where(i)}: mips {mips[i]}, not 1..{full[i]} for {w[i]} x {h[i]}")
    fmt = textures["format"].astype(np.int64)
    if (i := _first(~np.isin(fmt, list(TEXTURE_FORMATS)))) is not None:
        _fail(f"{where(i)}: format {fmt[i]}, not one of {sorted(TEXTURE_FORMATS)}")
    per_block = np.array([TEXTURE_FORMATS[f][1] for f in sorted(TEXTURE_FORMATS)])[fmt]
    chain = np.zeros(nt, np.int64)
    for k in range(int(mips.max(initial=0))):  # a loop over mip levels, not textures
        mw, mh = np.maximum(w >> k, 1), np.maximum(h >> k, 1)
        words = np.where(per_block > 0, per_block * ((mw + 3) // 4) * ((mh + 3) // 4), mw * mh)
        chain += np.where(k < mips, words, 0)
    offset = textures["offset"].astype(np.int64)
    if (i := _first(offset + chain > n)) is not None:
        _fail(f"{where(i)}: offset {offset[i]} and its {mips[i]} mips ({chain[i]} words) "
              f"run past the file's {n} texel words")
    flags = textures["flags"].astype(np.int64)
    if (i := _first(flags & ~TEXTURE_SRGB)) is not None:
        _fail(f"{where(i)}: flags {flags[i]:#x}, unknown bits")
    return max(nm, 1)


# ------------------------------------------------------------------------------- page records


@dataclass(frozen=True)
class PageRecords:
    """The cluster records of every page, read before the pages' checksums are checked."""

    records: dict[str, np.ndarray]  # each CLUSTER_DTYPE field of the n records, contiguous
    # (a record's fields lie 92 bytes apart: numpy runs ~7x faster on columns)
    page: np.ndarray  # (n,) int64: the page of each record
    slot: np.ndarray  # (n,) int64: its place in the page
    count: np.ndarray  # (P,) int64: each page's cluster_count
    streams_from: np.ndarray  # (P,) int64: where a page's streams may start (after its records)
    streams_to: np.ndarray  # (P,) int64: and end (its bytes_used)

    def where(self, k: int) -> str:
        return f"page {self.page[k]} cluster {self.slot[k]}"


def read_page_records(pages: np.ndarray, page_flags: np.ndarray) -> PageRecords:
    """Every page's header checked (at most MAX_PAGE_CLUSTERS clusters, its records and
    bytes_used within the page, its own index, the page table's flags) and its cluster records.
    pages: (P, page_size) uint8."""
    P, size = pages.shape
    hsize, rsize = PAGE_HEADER_DTYPE.itemsize, CLUSTER_DTYPE.itemsize
    if P and size < hsize:
        _fail(f"pages of {size} bytes, too small for their {hsize}-byte header")
    head = np.ascontiguousarray(pages[:, :hsize]).view(PAGE_HEADER_DTYPE).reshape(P)
    count = head["cluster_count"].astype(np.int64)
    used = head["bytes_used"].astype(np.int64)
    if (p := _first(count > MAX_PAGE_CLUSTERS)) is not None:
        _fail(f"page {p}: cluster_count {count[p]}, more than {MAX_PAGE_CLUSTERS}")
    end = hsize + rsize * count
    if (p := _first((end > used) | (used > size))) is not None:
        _fail(f"page {p}: bytes_used {used[p]}, not between the end of its {count[p]} cluster "
              f"records ({end[p]}) and the page size ({size})")
    if (p := _first(head["page"] != np.arange(P))) is not None:
        _fail(f"page {p}: page {head['page'][p]}, not its own index")
    if (p := _first(head["flags"] != page_flags)) is not None:
        _fail(f"page {p}: flags {head['flags'][p]:#x}, but the page table says "
              f"{page_flags[p]:#x}")
    raw = [pages[p, hsize : end[p]] for p in range(P)]  # a loop over pages, not clusters
    records = (np.concatenate(raw) if raw else np.zeros(0, np.uint8)).view(CLUSTER_DTYPE)
    page = np.repeat(np.arange(P), count)
    slot = np.arange(len(records)) - np.repeat(np.cumsum(count) - count, count)
    columns = {name: np.ascontiguousarray(records[name]) for name in CLUSTER_DTYPE.names}
    return PageRecords(columns, page, slot, count, end, used)


def _streams(mode: np.ndarray, nv: np.ndarray, nt: np.ndarray) -> list[tuple[str, np.ndarray]]:
    """Each stream's offset field and the bytes the GPU reads from it (0: none)."""
    has_uv = (mode & MODE_HAS_UV) != 0
    uv_words = np.where(has_uv, np.where(mode & MODE_UV_FLOAT, 2, 1), 0)
    color = (mode & MODE_HAS_COLOR) != 0
    mixed = (mode & MODE_HAS_MATERIAL) != 0
    return [("position_offset", np.where(mode & MODE_POSITION_MASK, 12, 6) * nv),
            ("normal_offset", 4 * nv * (1 + uv_words + color)),  # colours: after the uvs
            ("uv_offset", 4 * nv * uv_words),
            ("index_offset", np.where(mixed, _align4(3 * nt) + nt, 3 * nt))]


def _disjoint_streams(pr: PageRecords, streams: list[tuple[str, np.ndarray]]) -> None:
    """No two streams of a page share a byte: a normal or uv offset pointed into another
    stream decodes to normals and uvs as valid as any (octahedral words, unorm pairs), so a
    record that reads another's bytes could only be told by where it points. Sorted by page and
    start, any overlap shows between neighbours."""
    r = pr.records
    n = len(pr.page)
    kind = np.repeat(np.arange(len(streams)), n)
    owner = np.tile(np.arange(n), len(streams))
    start = np.concatenate([r[field].astype(np.int64) for field, _ in streams])
    stop = start + np.concatenate([length for _, length in streams])
    keep = stop > start
    kind, owner, start, stop = kind[keep], owner[keep], start[keep], stop[keep]
    page = pr.page[owner]
    order = np.argsort(page * (int(stop.max(initial=0)) + 1) + start, kind="stable")
    kind, owner, start, stop, page = (a[order] for a in (kind, owner, start, stop, page))
    clash = (page[1:] == page[:-1]) & (start[1:] < stop[:-1])
    if (i := _first(clash)) is not None:
        a, b = i, i + 1
        _fail(f"{pr.where(owner[b])}: {streams[kind[b]][0]} bytes {start[b]}..{stop[b]} overlap "
              f"cluster {pr.slot[owner[a]]}'s {streams[kind[a]][0]} bytes "
              f"{start[a]}..{stop[a]} (a page's streams share no byte)")


def check_records(pr: PageRecords, material_count: int, step: float) -> None:
    """Each cluster record's counts (1..MAX_CLUSTER_TRIANGLES triangles,
    1..MAX_CLUSTER_VERTICES vertices), mode (known bits, a position encoding, a material
    within the materials), streams (4-byte aligned, after its page's records and within the
    page's bytes_used), spheres, and grid origin (pos_min, by the quantization step)."""
    r, where = pr.records, pr.where
    nv, nt = r["vertex_count"].astype(np.int64), r["triangle_count"].astype(np.int64)
    if (k := _first((nt < 1) | (nt > MAX_CLUSTER_TRIANGLES))) is not None:
        _fail(f"{where(k)}: triangle_count {nt[k]}, not 1..{MAX_CLUSTER_TRIANGLES}")
    if (k := _first((nv < 1) | (nv > MAX_CLUSTER_VERTICES))) is not None:
        _fail(f"{where(k)}: vertex_count {nv[k]}, not 1..{MAX_CLUSTER_VERTICES}")
    mode = r["mode"].astype(np.int64)
    if (k := _first(mode & ~KNOWN_MODE_BITS)) is not None:
        _fail(f"{where(k)}: mode {mode[k]:#x}, unknown bits {mode[k] & ~KNOWN_MODE_BITS:#x}")
    if (k := _first((mode & MODE_POSITION_MASK) > 1)) is not None:
        _fail(f"{where(k)}: mode {mode[k]:#x}, position encoding {mode[k] & MODE_POSITION_MASK}"
              f" (0: 16-bit, 1: 32-bit)")
    material = mode >> MODE_MATERIAL_SHIFT & 0xFF
    if (k := _first((mode & MODE_HAS_MATERIAL == 0) & (material >= material_count))) is not None:
        _fail(f"{where(k)}: mode {mode[k]:#x} names material {material[k]}, past the file's "
              f"{material_count} materials")
    lo, hi = pr.streams_from[pr.page], pr.streams_to[pr.page]
    streams = _streams(mode, nv, nt)
    for field, length in streams:  # a loop over four streams
        off = r[field].astype(np.int64)
        bad = (length > 0) & ((off & 3 != 0) | (off < lo) | (off + length > hi))
        if (k := _first(bad)) is not None:
            _fail(f"{where(k)}: {field} {off[k]} and its {length[k]} bytes, not 4-byte aligned "
                  f"within the page's streams (bytes {lo[k]}..{hi[k]})")
    # the uvs lie in the normals' block, right after the normals (pack.py's layout, as the
    # shaders read them); the blocks themselves share no byte
    uv = (mode & MODE_HAS_UV) != 0
    place = r["normal_offset"].astype(np.int64) + 4 * nv
    if (k := _first(uv & (r["uv_offset"].astype(np.int64) != place))) is not None:
        _fail(f"{where(k)}: uv_offset {r['uv_offset'][k]}, not right after its normals "
              f"(normal_offset + 4 x vertex_count = {place[k]})")
    _disjoint_streams(pr, [x for x in streams if x[0] != "uv_offset"])
    _spheres(where, "bounds", r["bounds"])
    _spheres(where, "self_sphere", r["self_sphere"])
    # the grid origin every position is added to: the least coordinates of the cluster's
    # vertices, so within the box around its bounds sphere (plus the rounding to the grid)
    corner = r["pos_min"].astype(np.float64) * step
    b = r["bounds"].astype(np.float64)
    slack = (b[:, 3:] + step + F32_SLACK * (np.abs(b[:, :3]) + b[:, 3:]))
    if (k := _first_row(np.abs(corner - b[:, :3]) > slack)) is not None:
        _fail(f"{where(k)}: pos_min {_vec(r['pos_min'][k])}, at {_vec(corner[k])} on the grid of "
              f"step {step:g}, outside its bounds {_vec(b[k])}")


def check_membership(pr: PageRecords, parts: np.ndarray) -> None:
    """Every cluster record in exactly one group part, of the group that part is of; a part's
    clusters within its page's."""
    r, where = pr.records, pr.where
    first = parts["first_cluster"].astype(np.int64)
    held = parts["cluster_count"].astype(np.int64)
    page = parts["page"].astype(np.int64)
    if (i := _first(first + held > pr.count[page])) is not None:
        _fail(f"section group_parts, part {i}: first_cluster {first[i]} and cluster_count "
              f"{held[i]} run past the {pr.count[page[i]]} clusters of page {page[i]}")
    covered = _ragged((np.cumsum(pr.count) - pr.count)[page] + first, held)
    times = np.bincount(covered, minlength=len(pr.page))
    if (k := _first(times != 1)) is not None:
        _fail(f"{where(k)}: in {times[k]} group parts, not in one")
    part = np.repeat(np.arange(len(parts)), held)
    group = r["group"].astype(np.int64)
    want = parts["group"].astype(np.int64)[part]
    if (j := _first(group[covered] != want)) is not None:
        _fail(f"{where(covered[j])}: group {group[covered[j]]}, but group part {part[j]} holds "
              f"it for group {want[j]}")


def check_sources(groups: np.ndarray, records: np.ndarray | Mapping[str, np.ndarray], root: int,
                  where: Where) -> None:
    """The LOD bounds of cluster records (docs/ARCHITECTURE.md "Crack-free cuts"): the source
    group NO_GROUP exactly at level 0, else a group in range, not the root, one level finer,
    whose error and sphere are the cluster's self_error and self_sphere, bit for bit; a level-0
    cluster's LOD bound its own bounds and error 0; its group at its level or coarser (so a
    group's parents are coarser than it), its self error finite, >= 0 and at most its group's
    (the parent's) error; every group but the root the source of some cluster.
    records: CLUSTER_DTYPE (n,), or its fields by name; `where(k)` names record k."""
    g = len(groups)
    src, level = records["source_group"].astype(np.int64), records["level"].astype(np.int64)
    glevel, gerr = groups["level"].astype(np.int64), groups["error"]
    none = src == NO_GROUP
    if (k := _first(~none & (src >= g))) is not None:
        _fail(f"{where(k)}: source_group {src[k]}, past the file's {g} groups (or NO_GROUP)")
    if (k := _first(none != (level == 0))) is not None:
        _fail(f"{where(k)}: level {level[k]} and source_group {src[k]:#x}: the source group is "
              f"NO_GROUP exactly at level 0")
    gen = np.flatnonzero(~none)
    s = src[gen]
    if (k := _first(s == root)) is not None:
        _fail(f"{where(gen[k])}: source_group {root}, the root group, which is never simplified")
    if (k := _first(level[gen] != glevel[s] + 1)) is not None:
        _fail(f"{where(gen[k])}: level {level[gen[k]]}, but its source group {s[k]} has level "
              f"{glevel[s[k]]}: a produced cluster is exactly one level coarser")
    own = records["self_error"]
    _errors(where, "self_error", own)
    if (k := _first(own[gen] != gerr[s])) is not None:
        _fail(f"{where(gen[k])}: self_error {own[gen[k]]:.9g}, but its source group {s[k]} has "
              f"error {gerr[s[k]]:.9g}: they must be equal")
    bits = np.ascontiguousarray(records["self_sphere"]).view(np.uint32)
    gbits = np.ascontiguousarray(groups["sphere"]).view(np.uint32)
    if (k := _first_row(bits[gen] != gbits[s])) is not None:
        _fail(f"{where(gen[k])}: self_sphere {_vec(records['self_sphere'][gen[k]])}, but its "
              f"source group {s[k]} has sphere {_vec(groups['sphere'][s[k]])}: they must be "
              f"equal, bit for bit")
    lv0 = np.flatnonzero(none)
    bounds = np.ascontiguousarray(records["bounds"]).view(np.uint32)
    if (k := _first_row((bits[lv0] != bounds[lv0]) | (own[lv0, None] != 0))) is not None:
        _fail(f"{where(lv0[k])}: self_sphere {_vec(records['self_sphere'][lv0[k]])} and "
              f"self_error {own[lv0[k]]:.9g} at level 0: its LOD bound must be its bounds "
              f"{_vec(records['bounds'][lv0[k]])} and error 0")
    produced = np.bincount(s, minlength=g)
    produced[root] = 1
    if (j := _first(produced == 0)) is not None:
        _fail(f"section groups, group {j} (level {glevel[j]}) is the source of no cluster: "
              f"every group but the root {root} is simplified into coarser clusters")
    group = records["group"].astype(np.int64)
    if (k := _first(group >= g)) is not None:
        _fail(f"{where(k)}: group {group[k]}, past the file's {g} groups")
    if (k := _first(level > glevel[group])) is not None:  # so parents are coarser (streaming)
        _fail(f"{where(k)}: level {level[k]}, but its group {group[k]} has level "
              f"{glevel[group[k]]}: a cluster's group is at its level or coarser")
    if (k := _first(own > gerr[group])) is not None:
        _fail(f"{where(k)}: self_error {own[k]:.9g}, more than the error {gerr[group[k]]:.9g} "
              f"of its group {group[k]}: a group's error is at least its members'")


# ------------------------------------------------------------------------------ page contents


@dataclass(frozen=True)
class PageContext:
    """What `check_page` needs of the file (from `check_asset`)."""

    step: float  # the quantization step (meta)
    material_count: int  # materials a triangle may name
    leaf_node: np.ndarray  # (g,) int64: the BVH node whose leaf each group is
    node_box: np.ndarray  # (n, 6) float64: each node's box_min, box_max


def _split(lengths: np.ndarray, k: int) -> tuple[int, int]:
    """Item k of ragged runs of `lengths`: (run, place in the run)."""
    ends = np.cumsum(lengths)
    i = int(np.searchsorted(ends, k, side="right"))
    return i, int(k - (ends[i] - lengths[i]))


def _range_max(data: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """The largest of data[s : s + n] for each range (n >= 1): with one pass of
    `np.maximum.reduceat` over the page where the ranges lie apart in order (the packer's
    layout), else by gathering their elements."""
    order = np.argsort(starts, kind="stable")
    s, e = starts[order], starts[order] + lengths[order]
    if (s[1:] >= e[:-1]).all():
        bounds = np.stack([s, e], axis=1).reshape(-1)
        top = np.maximum.reduceat(data, bounds[:-1] if e[-1] >= len(data) else bounds)[0::2]
        out = np.empty_like(top)
        out[order] = top
        return out
    return np.maximum.reduceat(data[_ragged(starts, lengths)], np.cumsum(lengths) - lengths)


def check_page(page: np.ndarray, ctx: PageContext) -> None:
    """What the GPU follows in a page's streams, once its records passed `check_asset` and its
    checksum held: every local index within its cluster's vertex_count, every material byte
    within the materials, float uvs finite. Messages name the cluster by its place in the page
    ("cluster 5: ..."). Ranges of the page at a time, not a cluster at a time: about twice
    the time of the page's CRC32."""
    recs = page_clusters(page)
    if not len(recs):
        return
    nv, nt = recs["vertex_count"].astype(np.int64), recs["triangle_count"].astype(np.int64)
    mode = recs["mode"].astype(np.int64)
    io = recs["index_offset"].astype(np.int64)
    if (c := _first(_range_max(page, io, 3 * nt) >= nv)) is not None:
        local = page[io[c] : io[c] + 3 * nt[c]]
        corner = int(np.argmax(local >= nv[c]))
        _fail(f"cluster {c}: triangle {corner // 3} names vertex {local[corner]}, past its "
              f"vertex_count {nv[c]}")
    mixed = np.flatnonzero(mode & MODE_HAS_MATERIAL)
    if len(mixed):
        at = io[mixed] + _align4(3 * nt[mixed])
        named = page & ~np.uint8(MATERIAL_BYTE_DOUBLE_SIDED)
        if (k := _first(_range_max(named, at, nt[mixed]) >= ctx.material_count)) is not None:
            byte = named[at[k] : at[k] + nt[mixed[k]]]
            t = int(np.argmax(byte >= ctx.material_count))
            _fail(f"cluster {mixed[k]}: triangle {t}'s material byte names material "
                  f"{byte[t]}, past the file's {ctx.material_count} materials")
    floats = np.flatnonzero((mode & MODE_UV_FLOAT != 0) & (mode & MODE_HAS_UV != 0))
    if len(floats):
        bad = ~np.isfinite(page[: len(page) // 4 * 4].view("<f4"))
        at = recs["uv_offset"][floats].astype(np.int64) // 4
        if (k := _first(_range_max(bad, at, 2 * nv[floats]))) is not None:
            v = int(np.argmax(bad[at[k] : at[k] + 2 * nv[floats[k]]]))
            value = page[: len(page) // 4 * 4].view("<f4")[at[k] + v]
            _fail(f"cluster {floats[k]}: the uv of vertex {v // 2} is {value}, not finite")


def _grid(page: np.ndarray, recs: np.ndarray, nv: np.ndarray) -> np.ndarray:
    """(sum nv, 3) int64: the clusters' vertices on the grid, decoded as the GPU decodes them
    (pos_min plus 16-bit offsets, or 32-bit ones read as signed)."""
    wide = (recs["mode"] & MODE_POSITION_MASK) != 0
    size = np.where(wide, 4, 2)
    at = _ragged(recs["position_offset"].astype(np.int64) // size, 3 * nv)
    wide = np.repeat(wide, 3 * nv)
    narrow = page[: len(page) // 2 * 2].view("<u2").take(np.where(wide, 0, at))
    words = page[: len(page) // 4 * 4].view("<i4").take(np.where(wide, at, 0))
    grid = np.where(wide, words, narrow).reshape(-1, 3)
    return grid + np.repeat(recs["pos_min"].astype(np.int64), nv, axis=0)


def check_positions(page: np.ndarray, ctx: PageContext) -> None:
    """A page's positions decoded (once `check_page` passed): within 32-bit grid coordinates,
    inside their cluster's bounds sphere (plus the quantization error) and the box of their
    group's BVH leaf; the box and the coordinates by each cluster's extremes. What culling
    trusts without following it, so `AssetFile.verify` (`tessera info --verify`) checks it, not
    every read."""
    recs = page_clusters(page)
    if not len(recs):
        return
    nv = recs["vertex_count"].astype(np.int64)
    first = np.cumsum(nv) - nv
    grid = _grid(page, recs, nv)
    lo, hi = np.minimum.reduceat(grid, first), np.maximum.reduceat(grid, first)
    if (k := _first((lo < -(1 << 31)) | (hi >= 1 << 31))) is not None:
        _fail(f"cluster {k // 3}: its vertices reach grid coordinate "
              f"{min(lo.flat[k], hi.flat[k], key=abs)}, past 32 bits (pos_min "
              f"{_vec(recs['pos_min'][k // 3])})")
    node = ctx.leaf_node[recs["group"].astype(np.int64)]
    box = ctx.node_box[node]
    eps = F32_SLACK * np.abs(box).max(axis=1, keepdims=True)
    if (k := _first((lo * ctx.step < box[:, :3] - eps) | (hi * ctx.step > box[:, 3:] + eps))
            ) is not None:
        _fail(f"cluster {k // 3}: its vertices span {_vec(lo[k // 3] * ctx.step)} to "
              f"{_vec(hi[k // 3] * ctx.step)}, outside the box {_vec(box[k // 3])} of BVH node "
              f"{node[k // 3]}, its group's leaf")
    b = recs["bounds"].astype(np.float64)
    reach = (b[:, 3] + math.sqrt(3) / 2 * ctx.step + SPHERE_REL_EPS * b[:, 3]
             + F32_SLACK * (np.abs(b[:, :3]).max(axis=1) + b[:, 3]))
    d = grid * ctx.step - np.repeat(b[:, :3], nv, axis=0)
    if (k := _first(np.einsum("ij,ij->i", d, d) > np.repeat(reach * reach, nv))) is not None:
        c, v = _split(nv, k)
        _fail(f"cluster {c}: vertex {v} at {_vec(grid[k] * ctx.step)}, outside its bounds "
              f"{_vec(b[c])} by {math.sqrt(d[k] @ d[k]) - b[c, 3]:.3g}")


def check_nesting(nodes: np.ndarray, groups: np.ndarray, pr: PageRecords,
                  leaf_node: np.ndarray) -> None:
    """The LOD bounds nest, as docs/ARCHITECTURE.md "Crack-free cuts" needs them to (projected
    errors grow from child to parent only so; culling a node loses nothing below): a cluster's
    self_sphere inside its group's sphere, its bounds inside its BVH leaf's sphere; a node's
    sphere around its child nodes' and its leaf groups', its box around its child nodes'. What
    culling trusts without following it, so `AssetFile.verify` checks it."""
    ref, is_node, is_group = _children(nodes)
    fan = ref.shape[1]
    at = np.flatnonzero(is_node)
    child, parent = ref.reshape(-1)[at], at // fan
    at = np.flatnonzero(is_group)
    leaf, holder = ref.reshape(-1)[at], at // fan
    ns, gs = nodes["sphere"], groups["sphere"]
    for inner, outer, what in ((child, parent, "child node"), (leaf, holder, "leaf group")):
        s = ns[inner] if what == "child node" else gs[inner]
        ex = containment_excess(ns[outer], s[:, :3], s[:, 3])
        if (k := _first(ex > 0)) is not None:
            _fail(f"section bvh_nodes, node {outer[k]}: sphere {_vec(ns[outer[k]])} does not "
                  f"hold its {what} {inner[k]}'s {_vec(s[k])} (out by {ex[k]:.3g})")
    lo, hi = nodes["box_min"], nodes["box_max"]
    if (k := _first(((lo[child] < lo[parent]) | (hi[child] > hi[parent])).any(axis=1))
            ) is not None:
        _fail(f"section bvh_nodes, node {parent[k]}: its box does not hold its child node "
              f"{child[k]}'s")
    r = pr.records
    group = r["group"].astype(np.int64)
    ex = containment_excess(gs[group], r["self_sphere"][:, :3], r["self_sphere"][:, 3])
    if (k := _first(ex > 0)) is not None:
        _fail(f"{pr.where(k)}: self_sphere {_vec(r['self_sphere'][k])}, not inside the sphere "
              f"{_vec(gs[group[k]])} of its group {group[k]} (out by {ex[k]:.3g})")
    node = leaf_node[group]
    ex = containment_excess(ns[node], r["bounds"][:, :3], r["bounds"][:, 3])
    if (k := _first(ex > 0)) is not None:
        _fail(f"{pr.where(k)}: bounds {_vec(r['bounds'][k])}, not inside the sphere "
              f"{_vec(ns[node[k]])} of BVH node {node[k]}, its group's leaf (out by "
              f"{ex[k]:.3g})")


def check_asset(meta: Mapping[str, Any], sections: Mapping[str, np.ndarray], pages: np.ndarray,
                page_flags: np.ndarray) -> PageContext:
    """Everything opening a file checks (see the module's docstring): the meta, the sections
    and every page's header and records. pages: (P, page_size) uint8, their checksums not
    checked yet; page_flags: (P,) uint32. Returns what `check_page` needs."""
    s = asset_sections(sections)
    step = check_meta(meta)
    nodes, groups, parts = s["bvh_nodes"], s["groups"], s["group_parts"]
    root = check_groups(groups, parts, len(pages), meta.get("root_group"))
    leaf_node = check_bvh(nodes, groups)
    material_count = check_materials(s["materials"], s["textures"], s["texels"])
    pr = read_page_records(pages, page_flags)
    check_records(pr, material_count, step)
    check_membership(pr, parts)
    check_sources(groups, pr.records, root, pr.where)
    box = np.hstack([nodes["box_min"], nodes["box_max"]]).astype(np.float64)
    return PageContext(step, material_count, leaf_node, box)
