"""Assets and instances on the GPU.

Every loaded asset's hierarchy (BVH nodes, groups, group parts) and pages are concatenated into
scene-wide buffers; the asset table gives each asset's bases, so a node, group, part or page is
addressed by one global index in the shaders. The pages themselves go to the GPU through
`renderer.page_pool` (all of them, or streamed). A visible cluster is named by
``page slot << SLOT_BITS | cluster``, hence at most 2^SLOT_BITS clusters per page
(`renderer.limits`).
"""

from __future__ import annotations

import functools
import os
import hashlib
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import wgpu

from preprocess.tess.records import (
    MATERIAL_TEXTURES,
    NO_TEXTURE,
    TEXTURE_DTYPE,
    chain_words,
    default_material_record,
)
from preprocess.tess.limits import ROOT_ERROR
from preprocess.tess.container import TessFile
from preprocess.tess.reader import read_tess
from preprocess.tess.scene_file import box_sphere
from renderer.gpu import buffer_with
from renderer.instances import (
    ORTHOGONAL,
    InstanceError,
    InstanceStore,
    as_matrices,
    checked_rows,
    max_scales,
    axis_scales,
)
from renderer.layout import ASSET_DTYPE
from renderer.limits import NO_NODE
from renderer.texture_pool import TexturePool

class SceneError(ValueError):
    """An asset or instance the renderer cannot take (clear, one-line message)."""


@dataclass
class Asset:
    """A `.tess` asset as the renderer holds it (the file stays memory-mapped)."""

    path: str
    file: TessFile
    meta: dict
    nodes: np.ndarray  # NODE_DTYPE
    groups: np.ndarray  # GROUP_DTYPE
    parts: np.ndarray  # PART_DTYPE
    page_count: int
    page_size: int
    materials: np.ndarray | None = None  # MATERIAL_DTYPE (None: a file without materials)
    textures: np.ndarray | None = None  # TEXTURE_DTYPE
    texels: np.ndarray | None = None  # (n,) uint32 RGBA8

    @property
    def bounds_sphere(self) -> np.ndarray:
        """(4,) float32: a sphere around the asset's bounding box (for framing and placing)."""
        return box_sphere(self.meta["bounds_min"], self.meta["bounds_max"])

    @property
    def root_group(self) -> np.void:
        """The root group's record (GROUP_DTYPE): the one with ROOT_ERROR (SceneError unless
        there is exactly one)."""
        root = np.flatnonzero(self.groups["error"] >= np.float32(ROOT_ERROR))
        if len(root) != 1:
            raise SceneError(f"{self.meta.get('name', 'asset')}: {len(root)} root groups")
        return self.groups[root[0]]

    @property
    def depth(self) -> int:
        return int(self.nodes["depth"].max())

    @functools.cached_property
    def sphere_gap(self) -> float:
        """The farthest a point of `bounds_sphere` lies from the full-detail surface (asset
        units): what an aggregate proxy's box, which meets the instances' spheres, may miss
        their content by (`renderer/aggregates.py`). Bounded from above over the root group's
        clusters (`_sphere_gap`); the sphere's diameter where they cannot say."""
        return _sphere_gap(self)

    @functools.cached_property
    def root_mesh(self) -> tuple[np.ndarray, float] | None:
        """The root group's triangles and how far the full detail may lie from them
        (`_root_triangles`), decoded once: the gaps and the box's shares read them."""
        return _root_triangles(self)

    @functools.cached_property
    def root_triangles(self) -> int:
        """Triangles of the root group (what a far instance draws; 0 where unknown)."""
        return 0 if self.root_mesh is None else len(self.root_mesh[0])

    @functools.cached_property
    def box_fill(self) -> tuple[float, float, float, float]:
        """The share of the faces of the asset's box across x, y and z that the asset covers
        seen along that axis, and the weight of the box-like (L1) estimate of its shadow
        between the axes against the ellipsoid-like (L2) one (`_box_fill`; from the root's
        triangles, 1 where the file cannot say): what an instance drawn as its box keeps of its
        pixels (shaders/instance.wgsl `instance_box`)."""
        return _box_fill(self)

    @functools.cached_property
    def box_gap(self) -> float:
        """The largest distance, either way, between the surface of the asset's bounding box
        (meta bounds) and its full-detail surface (asset units): the error of drawing a far
        instance as its box (shaders/instance_cull.wgsl `push_root`). Bounded from above over
        the root group's clusters (`_box_gap`); the box's diagonal where they cannot say."""
        return _box_gap(self)


GAP_CELLS = 24  # `_sphere_gap`: cubes across the bounding sphere's diameter
BOX_CELLS = 16  # `_box_gap`: face cells across the box's longest side
GAP_SPLITS = 8  # `_sphere_gap`: samples along each edge of a root triangle (at most)
GAP_POINTS = 20_000  # `_sphere_gap`: surface points at most


def _root_triangles(a: Asset) -> tuple[np.ndarray, float] | None:
    """The root group's triangles ((m, 3, 3) float64, asset units) and how far the full detail
    may lie from them (the largest `self_error` plus `quantization_error`); None where the
    file cannot say."""
    from preprocess.tess.pages import decode_cluster, page_clusters

    try:
        g = a.root_group
        parts = a.parts[int(g["first_part"]) : int(g["first_part"]) + int(g["part_count"])]
        tris, err = [], 0.0
        for part in parts:
            page = np.ascontiguousarray(a.file.page(int(part["page"])))
            first = int(part["first_cluster"])
            for rec in page_clusters(page)[first : first + int(part["cluster_count"])]:
                d = decode_cluster(page, rec, float(a.meta["step"]))
                tris.append(d["positions"][d["triangles"]].astype(np.float64))
                err = max(err, float(rec["self_error"]))
    except (SceneError, ValueError, IndexError):
        return None
    if not tris:
        return None
    return np.concatenate(tris), err + float(a.meta.get("quantization_error", 0.0))


def _surface_points(t: np.ndarray) -> np.ndarray:
    """Points of the triangles `t` ((m, 3, 3)), at most GAP_POINTS: any of them bounds the
    distance to the surface from above, so a large root takes fewer a triangle, the bound only
    looser."""
    k = GAP_SPLITS
    while k > 1 and len(t) * (k + 1) * (k + 2) // 2 > GAP_POINTS:
        k -= 1
    i, j = (x.ravel() for x in np.meshgrid(np.arange(k + 1), np.arange(k + 1), indexing="ij"))
    keep = i + j <= k
    w = np.stack([i[keep], j[keep], k - i[keep] - j[keep]], axis=1) / k  # barycentric
    pts = np.einsum("sv,mvd->msd", w, t).reshape(-1, 3)
    if len(pts) > GAP_POINTS:
        pts = pts[np.random.default_rng(0).choice(len(pts), GAP_POINTS, replace=False)]
    return pts


def _farthest_from(q: np.ndarray, pts: np.ndarray) -> float:
    """max over the points q of the distance to the nearest of `pts`."""
    pp = (pts * pts).sum(axis=1)
    far = 0.0
    for lo in range(0, len(q), 1024):
        c = q[lo : lo + 1024]
        d2 = (c * c).sum(axis=1)[:, None] - 2 * c @ pts.T + pp[None, :]
        far = max(far, float(np.sqrt(np.maximum(d2.min(axis=1), 0)).max()))
    return far


def _sphere_gap(a: Asset) -> float:
    """An upper bound of max over points p of the bounding sphere of d(p, full-detail surface),
    numpy only, at most ~0.2 s: the sphere is covered by cubes of side h (those within h√3/2 of
    it); from a cube's centre, the distance to the nearest of points spread over the root
    clusters' triangles (points of that surface: no nearer than it) plus h√3/2 bounds every
    point of the cube (1-Lipschitz); the root clusters are within their `self_error` of the
    full detail, positions within `quantization_error` of theirs."""
    sphere = a.bounds_sphere.astype(np.float64)
    c, radius = sphere[:3], float(sphere[3])
    worst = 2 * radius  # a point of the ball is within its diameter of any other
    root = a.root_mesh
    if root is None or radius <= 0:
        return worst
    pts = _surface_points(root[0]) - c
    h = 2 * radius / GAP_CELLS
    axis = (np.arange(GAP_CELLS + 1) - GAP_CELLS / 2) * h
    cube = np.stack(np.meshgrid(axis, axis, axis, indexing="ij"), axis=-1).reshape(-1, 3)
    slack = h * np.sqrt(3) / 2
    cube = cube[np.abs(np.linalg.norm(cube, axis=1) - radius) <= slack]
    gap = _farthest_from(cube, pts) + slack + root[1]
    return min(gap * (1 + 1e-6), worst)


def _triangles_distance(q: np.ndarray, t: np.ndarray) -> np.ndarray:
    """(n,) the distance from each point q ((n, 3)) to the nearest of the triangles t
    ((m, 3, 3)): to the plane where the point's foot lies inside, else to the nearest edge."""
    a, b, c = t[:, 0], t[:, 1], t[:, 2]
    n = np.cross(b - a, c - a)
    nn = (n * n).sum(axis=1)
    unit = n / np.sqrt(np.maximum(nn, 1e-300))[:, None]
    out = np.empty(len(q))
    step = max(1, (1 << 20) // max(len(t), 1))
    for lo in range(0, len(q), step):
        p = q[lo : lo + step, None, :]  # (k, 1, 3)
        height = ((p - a) * unit).sum(axis=2)  # (k, m)
        foot = p - height[..., None] * unit
        inside = nn > 0
        for u, v in ((a, b), (b, c), (c, a)):
            inside = inside & ((np.cross(v - u, foot - u) * n).sum(axis=2) >= 0)
        d = np.where(inside, np.abs(height), np.inf)
        for u, v in ((a, b), (b, c), (c, a)):
            e = v - u
            s = np.clip(((p - u) * e).sum(axis=2) / np.maximum((e * e).sum(axis=1), 1e-300),
                        0, 1)
            d = np.minimum(d, np.linalg.norm(p - (u + s[..., None] * e), axis=2))
        out[lo : lo + step] = d.min(axis=1)
    return out


FILL_GRID = 32  # `_box_fill`: points across the box's shadow (a share within ~0.01 of 64's)


def _shadow_area(t: np.ndarray, lo: np.ndarray, hi: np.ndarray, d: np.ndarray) -> float:
    """The area of the shadow of the triangles t ((m, 3, 3)) along the unit direction d, over
    FILL_GRID² points spread over the rectangle around the box lo..hi's shadow: the share of
    them inside some projected triangle times the rectangle's area."""
    e1 = np.cross(d, [1.0, 0, 0] if abs(d[0]) < 0.9 else [0, 1.0, 0])
    e1 /= np.linalg.norm(e1)
    e2 = np.cross(d, e1)
    corners = np.stack(np.meshgrid(*zip(lo, hi, strict=True), indexing="ij"), axis=-1)
    corners = corners.reshape(-1, 3)
    cu, cv = corners @ e1, corners @ e2
    if not (cu.max() > cu.min() and cv.max() > cv.min()):
        return 0.0  # the box seen edge on: a line
    g = (np.arange(FILL_GRID) + 0.5) / FILL_GRID
    pu, pv = (x.ravel() for x in np.meshgrid(cu.min() + g * (cu.max() - cu.min()),
                                             cv.min() + g * (cv.max() - cv.min())))
    tu, tv = t @ e1, t @ e2  # (m, 3)
    hit = np.zeros(len(pu), bool)
    step = max(1, (1 << 20) // len(pu))
    for s in range(0, len(t), step):
        au, av = tu[s : s + step], tv[s : s + step]
        sides = []
        for k in range(3):
            bu, bv = au[:, k], av[:, k]
            nu, nv = au[:, (k + 1) % 3], av[:, (k + 1) % 3]
            sides.append((nu - bu)[None] * (pv[:, None] - bv[None])
                         - (nv - bv)[None] * (pu[:, None] - bu[None]))
        e = np.stack(sides)  # (3, points, triangles): inside where all share a sign
        hit |= (((e >= 0).all(axis=0) | (e <= 0).all(axis=0))
                & (np.abs(e).sum(axis=0) > 0)).any(axis=1)
    return float(hit.mean() * (cu.max() - cu.min()) * (cv.max() - cv.min()))


def _box_fill(a: Asset) -> tuple[float, float, float, float]:
    """`Asset.box_fill`: per axis, the share of the box's face that the root's shadow along the
    axis covers (`_shadow_area`); and the weight w that makes the shadow along a direction d,
    estimated as w L1 + (1 - w) L2 of the axis shadows A_k |d_k| (L1: exact for a box, L2 for
    an ellipsoid), nearest (least squares) to the shadows measured along the four diagonals."""
    lo = np.asarray(a.meta["bounds_min"], np.float64)
    hi = np.asarray(a.meta["bounds_max"], np.float64)
    root = a.root_mesh
    if root is None:
        return (1.0, 1.0, 1.0, 1.0)
    t = root[0]
    e = hi - lo
    face = np.array([e[1] * e[2], e[0] * e[2], e[0] * e[1]])
    axes = np.array([_shadow_area(t, lo, hi, np.eye(3)[k]) for k in range(3)])
    fill = np.where(face > 0, axes / np.maximum(face, 1e-300), 1.0)
    num = den = 0.0
    for sx, sy in ((1, 1), (1, -1), (-1, 1), (-1, -1)):
        d = np.array([sx, sy, 1.0]) / np.sqrt(3)
        k = np.abs(d) * axes
        l1, l2 = k.sum(), np.sqrt((k * k).sum())
        num += (_shadow_area(t, lo, hi, d) - l2) * (l1 - l2)
        den += (l1 - l2) ** 2
    w = float(np.clip(num / den, 0, 1)) if den > 0 else 1.0
    return (float(fill[0]), float(fill[1]), float(fill[2]), w)


def _box_gap(a: Asset) -> float:
    """An upper bound of the distance, both ways, between the surface of the asset's box (meta
    bounds) and its full-detail surface, numpy only (~0.05 s for a 76-triangle root, 0.5 s for
    721). Box to content: each face cut
    into cells of side at most h (BOX_CELLS across the longest side), the distance from a
    cell's centre to the root's triangles (`_triangles_distance`) plus half the cell's
    diagonal (1-Lipschitz). Content to box: a point inside the box is within
    min over the six faces of their distances (each affine), so over a root triangle within
    min over faces of the largest of its corners' distances to that face. Both plus the root's
    distance to the full detail (`_root_triangles`)."""
    lo = np.asarray(a.meta["bounds_min"], np.float64)
    hi = np.asarray(a.meta["bounds_max"], np.float64)
    worst = float(np.linalg.norm(hi - lo))
    root = a.root_mesh
    if root is None or not worst > 0:
        return worst
    t, err = root
    # content to box: the six faces' distances at the corners, (m, 3 corners, 6)
    faces = np.concatenate([t - lo, hi - t], axis=2)
    inward = float(np.maximum(faces.max(axis=1).min(axis=1), 0).max())
    # box to content: cells over each face
    h = (hi - lo).max() / BOX_CELLS
    outward = 0.0
    for axis in range(3):
        u, v = (axis + 1) % 3, (axis + 2) % 3
        nu, nv = (max(1, int(np.ceil((hi[k] - lo[k]) / h))) for k in (u, v))
        cu, cv = (hi[u] - lo[u]) / nu, (hi[v] - lo[v]) / nv
        gu, gv = np.meshgrid(lo[u] + (np.arange(nu) + 0.5) * cu,
                             lo[v] + (np.arange(nv) + 0.5) * cv, indexing="ij")
        for side in (lo[axis], hi[axis]):
            q = np.zeros((gu.size, 3))
            q[:, axis], q[:, u], q[:, v] = side, gu.ravel(), gv.ravel()
            outward = max(outward, float(_triangles_distance(q, t).max())
                          + 0.5 * float(np.hypot(cu, cv)))
    gap = max(inward, outward) + err
    return min(gap * (1 + 1e-6), worst)


def _box_area(a: Asset) -> float:
    e = np.asarray(a.meta["bounds_max"], np.float64) - np.asarray(a.meta["bounds_min"])
    return float(2 * (e[0] * e[1] + e[1] * e[2] + e[2] * e[0]))


@functools.cache
def proxy_box() -> Asset | None:
    """The unit cube aggregate proxies draw (`renderer/aggregates.py`; the file is made by
    tools/make_proxy_box.py), opened once; None, with a SceneWarning, where it cannot be read
    (an install without it: every instance is then drawn itself)."""
    try:
        return open_asset(Path(__file__).parent / "proxy_box.tess")
    except SceneError as e:
        warnings.warn(f"no aggregate proxies: {e}", SceneWarning, stacklevel=2)
        return None


def open_asset(path: str | os.PathLike) -> Asset:
    """Open and check a `.tess` file (raises SceneError with the reason): every value the GPU
    follows, its sections' and its pages' records (`preprocess.tess.checks`); a page's streams
    when it is first read."""
    try:
        f = read_tess(path)
    except FileNotFoundError:
        raise SceneError(f"{path}: no such file") from None
    except ValueError as e:  # TessFormatError
        raise SceneError(str(e)) from None
    s = f.sections
    return Asset(path=str(path), file=f, meta=dict(f.meta), nodes=s["bvh_nodes"],
                 groups=s["groups"], parts=s["group_parts"], page_count=f.page_count,
                 page_size=f.page_size, materials=s.get("materials"),
                 textures=s.get("textures"), texels=s.get("texels"))


class SceneWarning(UserWarning):
    """Something of a scene drawn other than the files say (textures made smaller to fit the
    adapter); one line, and the frame goes on."""


def _texture_chains(textures: np.ndarray, texels: np.ndarray | None):
    """(record, its chain's words) of each texture of an asset, the words a read-only view."""
    for rec in textures:
        n = chain_words(rec["width"], rec["height"], rec["mips"], rec["format"])
        yield rec, np.asarray(texels[int(rec["offset"]): int(rec["offset"]) + n], np.uint32)


def verify_pages(asset: Asset) -> None:
    """Check the CRC32 of every page of `asset` not checked yet (raises SceneError naming the bad
    pages). Every page the GPU receives goes through here or through `TessFile.page`: a flipped
    byte never reaches a shader. zlib's CRC32 runs at about 3.9 GB/s on the 2-core CI machine,
    so a 200 MB asset costs some 50 ms on load (BENCHMARKS.md)."""
    try:
        asset.file.verify_all()
    except ValueError as e:  # TessFormatError
        raise SceneError(str(e)) from None


def full_detail_mesh(asset: Asset) -> tuple[np.ndarray, np.ndarray]:
    """The asset's level-0 clusters as one mesh: ((n, 3) float32 positions on the asset's grid,
    (m, 3) int64 triangles). These are the original triangles (positions quantized to the grid,
    at most `quantization_error` away), which brute-force rendering draws."""
    from preprocess.tess.pages import decode_cluster, page_clusters

    verify_pages(asset)
    pages = asset.file.pages_array()
    step = float(asset.meta["step"])
    positions, triangles = [], []
    base = 0
    for p in range(asset.page_count):
        page = np.ascontiguousarray(pages[p])
        recs = page_clusters(page)
        for r in recs[recs["level"] == 0]:
            c = decode_cluster(page, r, step)
            positions.append(c["positions"])
            triangles.append(c["triangles"].astype(np.int64) + base)
            base += len(c["positions"])
    if not positions:
        return np.zeros((0, 3), np.float32), np.zeros((0, 3), np.int64)
    return np.concatenate(positions), np.concatenate(triangles)


def grid_offsets(count: int, spacing: float) -> np.ndarray:
    """(count, 3) float64 offsets of a square grid in the XZ plane, row by row along +x, centred
    on the origin, `spacing` apart (`Renderer.add_grid`, the viewer's instance grid)."""
    side = int(np.ceil(np.sqrt(count)))
    k = np.arange(count)
    out = np.zeros((count, 3))
    out[:, 0] = (k % side - (side - 1) / 2) * spacing
    out[:, 2] = (k // side - (side - 1) / 2) * spacing
    return out


@dataclass
class Scene:
    """Assets and instances (`renderer.instances.InstanceStore`: arrays, added and moved in
    bulk); the renderer's frame uploads what changed (`instance_version`, `take_moved`)."""

    assets: list[Asset] = field(default_factory=list)
    store: InstanceStore = field(default_factory=InstanceStore)
    asset_version: int = 0  # bumped when assets change (geometry re-upload)
    instance_version: int = 0  # bumped when instances are added or cleared (re-upload)
    world_version: int = 0  # bumped whenever an instance is added, moved or cleared (bounds)

    @property
    def gpu_assets(self) -> list[Asset]:
        """The assets the GPU holds: the scene's, then the aggregate proxies' box
        (`proxy_box`) where its page size is the scene's (else no proxy is drawn)."""
        box = proxy_box()
        if box is not None and self.assets and box.page_size == self.assets[0].page_size:
            return [*self.assets, box]
        return list(self.assets)

    @property
    def proxy_assets(self) -> int | None:
        """The asset-table row of the first asset's proxies (asset i's at this + i: the box with
        that asset's first material), or None when the GPU has no box."""
        return len(self.assets) + 1 if len(self.gpu_assets) > len(self.assets) else None

    def add_asset(self, asset: Asset) -> int:
        self.assets.append(asset)
        self.asset_version += 1
        return len(self.assets) - 1

    def check_asset(self, asset) -> int:
        if (isinstance(asset, bool) or not isinstance(asset, (int, np.integer))
                or not 0 <= asset < len(self.assets)):
            raise SceneError(f"no asset {asset!r} (the scene has {len(self.assets)})")
        return int(asset)

    def add_instance(self, asset: int, world: np.ndarray | None = None) -> int:
        return self.add_instances(asset, np.eye(4, dtype=np.float32) if world is None
                                  else world).start

    def add_instances(self, asset: int, worlds: np.ndarray) -> range:
        """Instances of one asset: `worlds` one (4, 4) or (3, 4) affine transform or k of them,
        checked (`checked`). Returns their indices."""
        a = self.check_asset(asset)
        return self.add_rows(a, self.checked(worlds))

    @staticmethod
    def checked(worlds) -> np.ndarray:
        """(k, 3, 4) float32 rows of transforms checked by `instances.checked_rows` (SceneError
        naming the first bad one)."""
        try:
            return checked_rows(worlds)
        except InstanceError as e:
            raise SceneError(str(e)) from None

    def add_rows(self, asset: int, rows: np.ndarray) -> range:
        """Instances of asset `asset` (checked) with (k, 3, 4) float32 rows (checked)."""
        out = self.store.append(asset, rows)
        self.instance_version += 1
        self.world_version += 1
        return out

    def set_transform(self, instance: int, world: np.ndarray) -> None:
        """Move an instance: its (4, 4) object-to-world transform, checked as `add_instance`
        checks it (`set_transforms` moves many in one call)."""
        self.set_transforms(np.array([self.check_instance(instance)]), world)

    def check_instance(self, instance) -> int:
        """`instance` as an index of this scene's instances (SceneError unless it is one)."""
        if (isinstance(instance, bool) or not isinstance(instance, (int, np.integer))
                or not 0 <= instance < self.instance_count):
            raise SceneError(f"no instance {instance!r} (the scene has {self.instance_count})")
        return int(instance)

    def asset_spheres(self) -> np.ndarray:
        """(A, 4) float64: each asset's bounding sphere (`Asset.bounds_sphere`)."""
        return np.array([a.bounds_sphere for a in self.assets], np.float64).reshape(-1, 4)

    def set_transforms(self, instances, worlds: np.ndarray) -> None:
        """Move instances `instances` ((k,) integers) to `worlds` ((k, 4, 4) or (k, 3, 4), or one
        transform for all of them), checked first (nothing changes on a SceneError). The
        instance buffer is not rebuilt: the renderer rewrites the moved slots in place."""
        self.move_rows(*self.checked_moves(instances, worlds))

    def checked_moves(self, instances, worlds) -> tuple[np.ndarray, np.ndarray]:
        """(indices (k,) int64, rows (k, 3, 4) float32) of a move, checked (SceneError)."""
        idx = np.asarray(instances)
        n = self.instance_count
        if idx.ndim != 1 or idx.dtype.kind not in "iu":
            raise SceneError(f"instances to move must be a (k,) array of integers, not "
                             f"{idx.dtype} of shape {idx.shape}")
        idx = idx.astype(np.int64)
        if len(idx) and not (0 <= idx.min() and idx.max() < n):
            bad = int(idx[(idx < 0) | (idx >= n)][0])
            raise SceneError(f"no instance {bad} (the scene has {n})")
        rows = self.checked(worlds)
        if len(rows) == 1 and len(idx) != 1:
            rows = np.broadcast_to(rows, (len(idx), 3, 4))
        if len(rows) != len(idx):
            raise SceneError(f"{len(idx)} instances to move but {len(rows)} transforms")
        return idx, rows

    def move_rows(self, idx: np.ndarray, rows: np.ndarray) -> None:
        """Move instances `idx` to `rows` (both checked: `checked_moves`)."""
        self.store.move(idx, rows)
        self.world_version += 1

    def clear_instances(self) -> None:
        self.store.clear()
        self.instance_version += 1
        self.world_version += 1

    def take_moved(self) -> tuple[np.ndarray, np.ndarray]:
        """(indices, their (m, 3, 4) rows before): the instances moved since the last call, each
        with its transform of the previous frame when the renderer calls this once a frame."""
        return self.store.take_moved()

    @property
    def moved(self) -> bool:
        """Whether instances moved since the renderer last took the moves."""
        return self.store.moving

    @property
    def instance_count(self) -> int:
        return self.store.count

    @property
    def instance_asset(self) -> np.ndarray:
        """(n,) int32: each instance's asset (a view: do not write)."""
        return self.store.asset

    @property
    def instance_world(self) -> np.ndarray:
        """(n, 4, 4) float32: each instance's transform (a new array)."""
        return as_matrices(self.store.rows)

    def instance_areas(self, instances: np.ndarray | None = None) -> np.ndarray:
        """(k,) float64 the full-detail surface area in world units of instances `instances`
        ((k,) indices; None: all): its asset's (`surface_area` in the meta; older files: its
        bounding box's, an over-estimate) times the square of its largest axis scale."""
        per = np.array([a.meta.get("surface_area", _box_area(a)) for a in self.assets],
                       np.float64)
        i = slice(None) if instances is None else np.asarray(instances, np.int64)
        return per[self.store.asset[i]] * max_scales(self.store.rows[i]).astype(np.float64) ** 2

    def instance_gaps(self, instances: np.ndarray | None = None) -> np.ndarray:
        """(k,) float64 the world gap of instances `instances` ((k,) indices; None: all): how far
        a point of its bounding sphere may lie from its content. Where its transform scales
        orthogonal axes by smin..smax (`axis_scales`): the world sphere (radius smax R) lies
        within (smax - smin) R of the asset's sphere's image, whose points lie within smax
        times `Asset.sphere_gap` of the content; inf (nothing known) elsewhere."""
        i = slice(None) if instances is None else np.asarray(instances, np.int64)
        asset = self.store.asset[i]
        gap = np.array([a.sphere_gap for a in self.assets], np.float64)[asset]
        radius = self.asset_spheres()[asset, 3]
        smin, smax = axis_scales(self.store.rows[i]).T
        smin, smax = smin / (1 + ORTHOGONAL), smax * (1 + ORTHOGONAL)  # the stretch, bounded
        out = (smax - smin) * radius + smax * gap
        return np.where(np.isfinite(out), out, np.inf)

    def instance_scales(self) -> np.ndarray:
        """(n,) float32: each instance's largest axis scale, as the GPU computes it."""
        return max_scales(self.store.rows)

    def triangle_count(self) -> int:
        """Full-detail triangles of all instances (what brute force would draw)."""
        per = np.array([int(a.meta["input_triangles"]) for a in self.assets], np.int64)
        return int(per[self.store.asset].sum()) if len(per) else 0

    def asset_table(self, material_bases: np.ndarray | None = None, boxes: bool = False
                    ) -> np.ndarray:
        """ASSET_DTYPE rows of `gpu_assets`, then one per asset for its proxies: the box's row
        with the asset's first material (`proxy_assets`), which with `boxes` an asset's row
        names as its `box_row` (with the box's corner, sides and error: an instance drawn as
        its box; measured at the first call, `Asset.box_gap`, `box_fill`)."""
        gpu = self.gpu_assets
        proxies = len(self.assets) if len(gpu) > len(self.assets) else 0
        out = np.zeros(max(1, len(gpu) + proxies), ASSET_DTYPE)
        node = group = part = page = 0
        for i, a in enumerate(gpu):
            err = a.groups["error"]
            finite = err[err < np.float32(ROOT_ERROR)]
            g = a.root_group
            uv_box = [*a.meta.get("uv_min", [0.0, 0.0]), *a.meta.get("uv_max", [1.0, 1.0])]
            base = material_bases[i] if material_bases is not None and i < len(self.assets) else 0
            lo = np.asarray(a.meta["bounds_min"], np.float32)
            size = np.asarray(a.meta["bounds_max"], np.float32) - lo
            # a far instance may be drawn as its box where that has fewer triangles
            boxed = (boxes and proxies and i < len(self.assets)
                     and a.root_triangles > gpu[-1].root_triangles)
            out[i] = (node, group, part, page, float(a.meta["step"]), len(a.nodes),
                      float(finite.max()) if len(finite) else 0.0,
                      part + int(g["first_part"]), int(g["part_count"]), base,
                      len(gpu) + i if boxed else NO_NODE, 0, uv_box,
                      (*lo, a.box_gap if boxed else np.inf), (*size, 0),
                      a.box_fill if boxed else (1, 1, 1, 1))
            node += len(a.nodes)
            group += len(a.groups)
            part += len(a.parts)
            page += a.page_count
        for i in range(proxies):
            out[len(gpu) + i] = out[len(gpu) - 1]
            out[len(gpu) + i]["material_base"] = (material_bases[i] if material_bases is not None
                                                  else 0)
        return out

    def material_data(self, limit_bytes: int, pool_bytes: int | None = None,
                      budget: int = 1024, *, hardware: bool = False
                      ) -> tuple[TexturePool, np.ndarray]:
        """The scene's `materials` buffer (`TexturePool.words`; `renderer/texture_pool.py` lays
        it out and streams its textures' tiles) and each asset's first material. Texture
        indices are made scene-wide; a texture several assets hold (the same record and words)
        is in it once. `limit_bytes`: what the adapter binds in one buffer; `pool_bytes`,
        `budget`, `hardware`: the texture pool's (`TexturePool`)."""
        recs, texs, chains, bases = [], [], [], []
        n_mat = 0
        seen: dict[tuple, int] = {}  # a texture's record and words -> its scene-wide index
        hashed: dict[tuple, bytes] = {}  # (texels array, offset) -> its chain's hash: a scene's
        # meshes hold one texels array (their textures file's), hashed once
        for a in self.assets:
            m = a.materials if a.materials is not None and len(a.materials) else \
                default_material_record()
            m = m.copy()
            t = a.textures if a.textures is not None else np.zeros(0, TEXTURE_DTYPE)
            # each texture once a scene: one the assets before hold (the same record and
            # words: a scene's meshes built from one glTF share its images) is not added again
            index = np.zeros(len(t), np.int64)
            for i, (rec, words) in enumerate(_texture_chains(t, a.texels)):
                at = (id(a.texels), int(rec["offset"]), len(words))
                if at not in hashed:
                    hashed[at] = hashlib.blake2b(words, digest_size=16).digest()
                key = (*(int(rec[f]) for f in ("width", "height", "mips", "flags", "format")),
                       hashed[at])
                if key not in seen:
                    seen[key] = len(texs)
                    texs.append(rec)
                    chains.append(words)
                index[i] = seen[key]
            for f in MATERIAL_TEXTURES:  # (the reader checked the indices: below len(t))
                if len(t):
                    none = m[f] == NO_TEXTURE
                    m[f] = np.where(none, NO_TEXTURE, index[np.where(none, 0, m[f])])
            bases.append(n_mat)
            recs.append(m)
            n_mat += len(m)
        tex = np.array(texs, TEXTURE_DTYPE) if texs else np.zeros(0, TEXTURE_DTYPE)
        pool = TexturePool(np.concatenate(recs), tex, chains, limit_bytes, pool_bytes, budget,
                           hardware=hardware)
        return pool, np.array(bases, np.uint32)

    def page_data(self) -> np.ndarray:
        """Every page of every asset, in scene page order, as one (n,) uint32 array."""
        gpu = self.gpu_assets
        data = np.zeros(sum(a.page_count * a.page_size for a in gpu) // 4, np.uint32)
        o = 0
        for a in gpu:
            verify_pages(a)
            arr = a.file.pages_array()
            data[o : o + arr.size // 4] = np.ascontiguousarray(arr).view(np.uint32).reshape(-1)
            o += arr.size // 4
        return data

    def upload_geometry(self, device: wgpu.GPUDevice, binding_limit: int = 1 << 27,
                        boxes: bool = False, texture_pool_bytes: int | None = None,
                        texture_budget: int = 1024, hardware: bool = False
                        ) -> tuple[TexturePool, dict[str, wgpu.GPUBuffer]]:
        """The scene's hierarchy buffers: assets (`boxes`: with their boxes, `asset_table`),
        nodes, groups, parts, and the materials with their textures (the pages are
        `renderer.page_pool`'s)."""
        if not self.assets:
            raise SceneError("the scene has no asset: load a .tess file first")
        sizes = {a.page_size for a in self.assets}
        if len(sizes) != 1:
            raise SceneError(f"assets with different page sizes {sorted(sizes)} in one scene")
        usage = wgpu.BufferUsage.STORAGE
        pool, bases = self.material_data(binding_limit, texture_pool_bytes, texture_budget,
                                         hardware=hardware)
        gpu = self.gpu_assets
        return pool, {
            "materials": buffer_with(device, pool.words, "scene.materials",
                                     usage | wgpu.BufferUsage.COPY_SRC),
            "assets": buffer_with(device, self.asset_table(bases, boxes), "scene.assets", usage),
            "nodes": buffer_with(device, np.concatenate([a.nodes for a in gpu]),
                                 "scene.nodes", usage),
            "groups": buffer_with(device, np.concatenate([a.groups for a in gpu]),
                                  "scene.groups", usage),
            "parts": buffer_with(device, np.concatenate([a.parts for a in gpu]),
                                 "scene.parts", usage),
        }
