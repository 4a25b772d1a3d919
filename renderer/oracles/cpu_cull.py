"""The CPU twin of the GPU culling rules (``shaders/math.wgsl``, ``shaders/instance_cull.wgsl``,
``shaders/cull.wgsl``), in numpy, for tests.

`cull` answers, for a Scene, a Camera, a viewport, ``tau`` and ``sw_max_edge``, what one frame's
culling passes select: the same clusters, in the same SW/HW bins, with the same statistics
counters. The rules, applied exactly as the shaders do:

- instance: its BVH root's box, under the world matrix, must touch the frustum (five planes, no
  far plane; per plane the box centre against the half extents projected on the normal);
- far instance: when its asset's ``far_error`` (the largest error of every group but the root)
  projects <= tau from the root node's LOD sphere, the root group's parts are visited directly
  (its clusters tested as below) and no BVH node is (``instances_far``);
- BVH node: visited (counted) when its parent pushed it; it is descended when its box touches the
  frustum and its max error, projected from its LOD sphere (centre by the matrix, radius by the
  instance's largest axis scale), is > tau. A descended node
  pushes its child nodes, and tests (counts) each child group: a group whose error projects > tau
  pushes its parts;
- part: each member cluster is tested (counted) and drawn when its own error projects <= tau and
  its bounds sphere touches the frustum;
- SW/HW: a drawn cluster goes to the hardware rasterizer when its bounds reach the near plane or
  when ``2 r_px / sqrt(triangles) > sw_max_edge`` (``wants_hardware``).

Errors project as ``error * scale * lod_scale / max(|eye - centre| - radius, 1e-12)`` (the root
error never falls below any threshold). Every input the GPU reads is float32 (the scene's records,
the frame uniforms as `renderer.frame` writes them); the twin computes in float64 from those same
float32 values, so it can only disagree where the GPU's float32 rounding moves a value across its
threshold. To recognise those cases each decision has a *margin*: how far its value is from the
threshold, relative to the size of the quantities that were rounded (see `_projected_decision`,
`_frustum_decision`). `cull` also follows, with ``slack``, every branch that a decision closer
than ``slack`` to its threshold would have taken the other way, so a test can tell a rounding flip
(a row whose margin is below ``slack``) from a real disagreement.

Queue and visible-list capacities are not modelled (the twin never overflows).
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass, field

import numpy as np

from preprocess.tess.pages import page_clusters
from preprocess.tess.records import CHILD_EMPTY, CHILD_GROUP, CLUSTER_DTYPE, MODE_ALPHA_MASK
from preprocess.tess.limits import ROOT_ERROR
from renderer.camera import Camera, frustum_planes
from renderer.limits import SLOT_BITS
from renderer.scene import Asset, Scene, SceneError

TINY_DISTANCE = 1e-12  # math.wgsl TINY_DISTANCE
_ROOT_ERROR = float(np.float32(ROOT_ERROR))  # the f32 value the shaders compare with
COUNTER_NAMES = ("instances_tested", "instances_visible", "instances_far", "nodes_visited",
                 "groups_tested", "clusters_tested", "sw_clusters", "hw_clusters", "sw_triangles",
                 "hw_triangles")


@dataclass
class CullResult:
    """What the GPU culling passes select for one frame, and how close each decision was.

    Rows are sorted by (instance, cluster ref); a cluster ref is ``global page << 10 | slot``, the
    second word of `Renderer.read_visible()` rows.
    """

    rows: np.ndarray  # (k, 2) uint32: (instance, page << 10 | slot) of every drawn cluster
    hw: np.ndarray  # (k,) bool: drawn by the hardware rasterizer (else software)
    triangles: np.ndarray  # (k,) uint32: triangles of each drawn cluster
    margin: np.ndarray  # (k,) float64: smallest relative margin of the decisions that drew the row
    hw_margin: np.ndarray  # (k,) float64: relative margin of the SW/HW choice of each row
    near_rows: np.ndarray  # (m, 2) uint32: rows not drawn that a decision within slack would draw
    near_margin: np.ndarray  # (m,) float64: the smallest margin on each near row's path
    instance_visible: np.ndarray  # (n,) bool: the instance frustum test
    instance_margin: np.ndarray  # (n,) float64: its relative margin
    counters: dict[str, int] = field(default_factory=dict)  # COUNTER_NAMES, as the GPU's stats
    near_decisions: int = 0  # decisions (on the exact traversal) closer than slack: counters are
    #                          only exact when this is 0

    def split(self) -> tuple[np.ndarray, np.ndarray]:
        """(sw rows (a, 2) uint32, hw rows (b, 2) uint32), each sorted."""
        return self.rows[~self.hw], self.rows[self.hw]


@dataclass
class _SceneTables:
    """Scene-wide (global index) float64 copies of what the shaders read."""

    node_sphere: np.ndarray  # (N, 4) float64: LOD sphere
    node_box: np.ndarray  # (N, 6) float64: min xyz, max xyz (frustum)
    node_error: np.ndarray  # (N,) float64
    node_child_node: np.ndarray  # (N, 8) int64 global node index, -1 where not a node
    node_child_group: np.ndarray  # (N, 8) int64 global group index, -1 where not a group
    root: np.ndarray  # (A,) int64 global root node per asset
    root_group: np.ndarray  # (A,) int64 global root group per asset
    far_error: np.ndarray  # (A,) float64: the asset table's far_error (instance_cull.wgsl)
    group_sphere: np.ndarray  # (G, 4) float64
    group_error: np.ndarray  # (G,) float64
    group_parts_clusters: np.ndarray  # (G,) int64: clusters in the group's parts
    group_offset: np.ndarray  # (G + 1,) int64: group j's clusters are clusters[o[j]:o[j+1]]
    group_clusters: np.ndarray  # (C,) int64 index into the cluster arrays below
    cl_self_sphere: np.ndarray  # (C, 4) float64
    cl_bounds: np.ndarray  # (C, 4) float64
    cl_self_error: np.ndarray  # (C,) float64
    cl_triangles: np.ndarray  # (C,) int64
    cl_mode: np.ndarray  # (C,) int64 record modes (MODE_ALPHA_MASK: always HW)
    cl_ref: np.ndarray  # (C,) uint32: global page << 10 | slot
    cl_record: np.ndarray  # (C,) CLUSTER_DTYPE: the records themselves


_CACHE: dict[int, tuple[weakref.ref, dict]] = {}


def _asset_arrays(asset: Asset) -> dict:
    """Per-asset arrays (local indices), cached while the Asset lives."""
    key = id(asset)
    hit = _CACHE.get(key)
    if hit is not None and hit[0]() is asset:
        return hit[1]
    pages = asset.file.pages_array()
    recs = [page_clusters(pages[p]) for p in range(asset.page_count)]
    page_first = np.cumsum([0] + [len(r) for r in recs])
    allrec = np.concatenate(recs) if recs else np.zeros(0, CLUSTER_DTYPE)
    slots = np.concatenate([np.arange(len(r)) for r in recs]) if recs else np.zeros(0, np.int64)
    page_of = np.repeat(np.arange(asset.page_count), [len(r) for r in recs])
    parts = asset.parts
    groups = asset.groups
    # each group's clusters, through its parts (as cull.wgsl reaches them)
    gfirst = groups["first_part"].astype(np.int64)
    gcount = groups["part_count"].astype(np.int64)
    part_ids = _ranges(gfirst, gcount)
    p_first = page_first[parts["page"].astype(np.int64)] + parts["first_cluster"].astype(np.int64)
    p_count = parts["cluster_count"].astype(np.int64)
    members = _ranges(p_first[part_ids], p_count[part_ids])
    per_group = np.bincount(np.repeat(np.arange(len(groups)), gcount),
                            weights=p_count[part_ids], minlength=len(groups)).astype(np.int64)
    out = {
        "rec": allrec, "slot": slots.astype(np.int64), "page": page_of.astype(np.int64),
        "group_members": members, "group_count": per_group,
    }
    _CACHE[key] = (weakref.ref(asset, lambda _: _CACHE.pop(key, None)), out)
    return out


def _ranges(first: np.ndarray, count: np.ndarray) -> np.ndarray:
    """Concatenated ranges [first[i], first[i] + count[i]) as one (sum(count),) int64 array."""
    count = np.asarray(count, np.int64)
    total = int(count.sum())
    if total == 0:
        return np.zeros(0, np.int64)
    starts = np.repeat(np.asarray(first, np.int64) - np.cumsum(count) + count, count)
    return starts + np.arange(total)


def _scene_tables(scene: Scene) -> _SceneTables:
    node_sphere, node_box, node_error, c_node, c_group, roots = [], [], [], [], [], []
    root_groups: list[int] = []
    g_sphere, g_error, g_count, g_members = [], [], [], []
    cs, cb, ce, ct, cref, crec = [], [], [], [], [], []
    node_base = group_base = page_base = cluster_base = 0
    for a in scene.assets:
        arr = _asset_arrays(a)
        node_sphere.append(a.nodes["sphere"].astype(np.float64))
        node_box.append(np.concatenate([a.nodes["box_min"], a.nodes["box_max"]],
                                       axis=1).astype(np.float64))
        node_error.append(a.nodes["max_error"].astype(np.float64))
        ch = a.nodes["children"].astype(np.int64)
        is_group = (ch != CHILD_EMPTY) & ((ch & CHILD_GROUP) != 0)
        is_node = (ch != CHILD_EMPTY) & ~is_group
        c_node.append(np.where(is_node, ch + node_base, -1))
        c_group.append(np.where(is_group, (ch & ~CHILD_GROUP) + group_base, -1))
        roots.append(node_base)
        root_groups.append(group_base + int(np.argmax(a.groups["error"])))
        g_sphere.append(a.groups["sphere"].astype(np.float64))
        g_error.append(a.groups["error"].astype(np.float64))
        g_count.append(arr["group_count"])
        g_members.append(arr["group_members"] + cluster_base)
        rec = arr["rec"]
        cs.append(rec["self_sphere"].astype(np.float64))
        cb.append(rec["bounds"].astype(np.float64))
        ce.append(rec["self_error"].astype(np.float64))
        ct.append(rec["triangle_count"].astype(np.int64))
        cref.append(((arr["page"] + page_base) << SLOT_BITS) | arr["slot"])
        crec.append(rec)
        node_base += len(a.nodes)
        group_base += len(a.groups)
        page_base += a.page_count
        cluster_base += len(rec)
    counts = np.concatenate(g_count)
    return _SceneTables(
        node_sphere=np.concatenate(node_sphere), node_box=np.concatenate(node_box),
        node_error=np.concatenate(node_error),
        node_child_node=np.concatenate(c_node), node_child_group=np.concatenate(c_group),
        root=np.array(roots, np.int64), root_group=np.array(root_groups, np.int64),
        far_error=scene.asset_table()["far_error"][: len(roots)].astype(np.float64),
        group_sphere=np.concatenate(g_sphere),
        group_error=np.concatenate(g_error), group_parts_clusters=counts,
        group_offset=np.concatenate([[0], np.cumsum(counts)]).astype(np.int64),
        group_clusters=np.concatenate(g_members), cl_self_sphere=np.concatenate(cs),
        cl_bounds=np.concatenate(cb), cl_self_error=np.concatenate(ce),
        cl_triangles=np.concatenate(ct),
        cl_mode=np.concatenate([r["mode"].astype(np.int64) for r in crec]),
        cl_ref=np.concatenate(cref).astype(np.uint32),
        cl_record=np.concatenate(crec))


@dataclass
class CullView:
    """The frame uniforms the culling shaders read, as float64 copies of their float32 values."""

    planes: np.ndarray  # (5, 4)
    eye: np.ndarray  # (3,)
    lod_scale: float
    tau: float
    sw_max_edge: float


def frame_view(camera: Camera, width: int, height: int, *, tau: float,
               sw_max_edge: float) -> CullView:
    """The culling uniforms exactly as `Frame._frame_uniforms` computes them (float32)."""
    vp = camera.view_proj(width, height)
    return CullView(planes=frustum_planes(vp).astype(np.float64),
                    eye=np.asarray(camera.eye, np.float32).astype(np.float64),
                    lod_scale=float(np.float32(camera.lod_scale(height))),
                    tau=float(np.float32(tau)), sw_max_edge=float(np.float32(sw_max_edge)))


# ------------------------------------------------------------------------------------ decisions


def _world_spheres(world: np.ndarray, scale: np.ndarray, s: np.ndarray) -> np.ndarray:
    """world (k, 4, 4), scale (k,), object spheres s (k, 4) -> world spheres (k, 4) float64."""
    c = np.einsum("kij,kj->ki", world[:, :3, :3], s[:, :3]) + world[:, :3, 3]
    return np.concatenate([c, (s[:, 3] * scale)[:, None]], axis=1)


def _frustum_decision(view: CullView, s: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """`sphere_in_frustum` for world spheres s (k, 4) -> (inside (k,) bool, margin (k,) float64).

    A plane's value ``n . c + d + r`` is compared with 0; its margin is ``|value|`` relative to
    ``|c| + |d| + r`` (float32 rounds the centre, the dot product and the sums at that size). An
    inside sphere flips when any plane flips (the smallest margin); an outside one only when every
    failing plane flips (the largest margin among them).
    """
    p = view.planes
    v = s[:, :3] @ p[:, :3].T + p[:, 3] + s[:, 3:4]  # (k, 5)
    mag = np.linalg.norm(s[:, :3], axis=1)[:, None] + np.abs(p[:, 3]) + np.abs(s[:, 3:4])
    rel = np.abs(v) / np.maximum(mag, 1e-300)
    ok = v >= 0
    inside = ok.all(axis=1)
    margin = np.where(inside, rel.min(axis=1), np.where(ok, 0.0, rel).max(axis=1))
    return inside, margin


def _frustum_box_decision(view: CullView, world: np.ndarray, box: np.ndarray
                          ) -> tuple[np.ndarray, np.ndarray]:
    """`box_in_frustum` for object boxes (k, 6) under world matrices (k, 4, 4): per plane the
    centre's distance against the half extents projected on the plane normal; margins as in
    `_frustum_decision`."""
    c = np.einsum("kij,kj->ki", world[:, :3, :3], 0.5 * (box[:, :3] + box[:, 3:])) + world[:, :3, 3]
    h = 0.5 * (box[:, 3:] - box[:, :3])  # (k, 3)
    axes = world[:, :3, :3] * h[:, None, :]  # column j: the transformed axis j times h_j
    p = view.planes
    r = np.abs(np.einsum("pi,kij->kpj", p[:, :3], axes)).sum(axis=2)  # (k, 5)
    v = c @ p[:, :3].T + p[:, 3] + r
    mag = np.linalg.norm(c, axis=1)[:, None] + np.abs(p[:, 3]) + r
    rel = np.abs(v) / np.maximum(mag, 1e-300)
    ok = v >= 0
    inside = ok.all(axis=1)
    margin = np.where(inside, rel.min(axis=1), np.where(ok, 0.0, rel).max(axis=1))
    return inside, margin


def _projected_decision(view: CullView, err: np.ndarray, s: np.ndarray, scale: np.ndarray,
                        threshold: float) -> tuple[np.ndarray, np.ndarray]:
    """``projected_error(err, s, scale) > threshold`` for errors (k,), world spheres (k, 4) and
    instance scales (k,) -> (above (k,) bool, margin (k,) float64).

    The comparison is the same as ``|eye - c| - r < D`` with ``D = err scale lod_scale /
    threshold``: the margin is ``|D - (|eye - c| - r)|`` relative to ``|eye| + |c| + |eye - c| + r
    + D``, the size of what float32 subtracts. Errors of 0 and root errors have infinite margins
    (no rounding changes 0 or HUGE).
    """
    dist = np.linalg.norm(s[:, :3] - view.eye, axis=1)
    gap = dist - s[:, 3]
    value = err * scale * view.lod_scale / np.maximum(gap, TINY_DISTANCE)
    root = err >= _ROOT_ERROR
    above = root | (value > threshold)
    D = err * scale * view.lod_scale / threshold
    mag = (np.linalg.norm(view.eye) + np.linalg.norm(s[:, :3], axis=1) + dist + np.abs(s[:, 3])
           + np.abs(D))
    margin = np.abs(D - gap) / np.maximum(mag, 1e-300)
    margin[root | (err == 0)] = np.inf
    return above, margin


def _hardware_decision(view: CullView, b: np.ndarray, triangles: np.ndarray,
                       mode: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """`wants_hardware` for world bounds b (k, 4), triangle counts (k,) and record modes (k,)
    -> (hw (k,) bool, margin (k,) float64); an alpha-masked cluster always (margin inf)."""
    p = view.planes[4]
    ahead = b[:, :3] @ p[:3] + p[3]
    near = ahead < b[:, 3]
    near_margin = (np.abs(ahead - b[:, 3])
                   / (np.linalg.norm(b[:, :3], axis=1) + abs(p[3]) + np.abs(b[:, 3])))
    dist = np.linalg.norm(b[:, :3] - view.eye, axis=1)
    gap = dist - b[:, 3]
    r_px = b[:, 3] * view.lod_scale / np.maximum(gap, TINY_DISTANCE)
    root_t = np.sqrt(np.maximum(triangles, 1).astype(np.float64))
    edge = 2.0 * r_px / root_t > view.sw_max_edge
    D = 2.0 * b[:, 3] * view.lod_scale / (root_t * view.sw_max_edge)
    mag = np.linalg.norm(view.eye) + np.linalg.norm(b[:, :3], axis=1) + dist + b[:, 3] + D
    edge_margin = np.abs(D - gap) / mag
    hw = near | edge
    # an OR flips when every true term flips (true), or when any term flips (false)
    t_near = np.where(near, near_margin, 0.0)
    t_edge = np.where(edge, edge_margin, 0.0)
    margin = np.where(hw, np.maximum(t_near, t_edge), np.minimum(near_margin, edge_margin))
    if mode is not None:
        masked = (np.asarray(mode, np.int64) & MODE_ALPHA_MASK) != 0
        hw = hw | masked
        margin = np.where(masked, np.inf, margin)
    return hw, margin


# ------------------------------------------------------------------------------------ traversal


def cull(scene: Scene, camera: Camera, width: int, height: int, *, tau: float,
         sw_max_edge: float = 32.0, slack: float = 1e-4) -> CullResult:
    """The clusters the GPU culling passes draw for one frame (see the module docstring).

    Traverses every instance's BVH level by level (all instances at once), in float64. Branches
    that a decision within ``slack`` (relative margin) of its threshold would take the other way
    are followed too, but only reported as `CullResult.near_rows` and never counted.
    """
    if not scene.assets:
        raise SceneError("the scene has no asset")
    n = scene.instance_count
    walk = _Walk(
        t=_scene_tables(scene),
        view=frame_view(camera, width, height, tau=tau, sw_max_edge=sw_max_edge),
        world=np.array(scene.instance_world, np.float32).reshape(n, 4, 4).astype(np.float64),
        scale=scene.instance_scales().astype(np.float64),  # the f32 the GPU computes
        slack=slack)
    walk.counters["instances_tested"] = n
    vis, vis_margin, frontier = walk.instances(np.array(scene.instance_asset, np.int64), n)
    walk.traverse(*frontier)
    return walk.clusters(vis, vis_margin)


@dataclass
class _Walk:
    """`cull`'s traversal, phase by phase: the instances (`instances`), the BVH levels
    (`traverse`), the clusters of the parts visited (`clusters`). Each phase counts its
    decisions (`counters`), and those closer than `slack` to their threshold
    (`near_decisions`); the parts visited gather in `found`."""

    t: _SceneTables
    view: CullView
    world: np.ndarray  # (n, 4, 4) float64 of the float32 transforms
    scale: np.ndarray  # (n,) float64 of the float32 largest axis scales
    slack: float
    counters: dict[str, int] = field(default_factory=lambda: dict.fromkeys(COUNTER_NAMES, 0))
    near_decisions: int = 0
    # (instance, cluster, exact, margin) of the clusters of every part visited
    found: list[tuple[np.ndarray, ...]] = field(default_factory=list)

    def instances(self, asset: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray, tuple]:
        """The instance cull (the root's box against the frustum) and the far instances (the
        root group's clusters, without the BVH): (visible, its margin, the frontier of the
        BVH: instance, global node, exact (every decision on the way taken as computed), and
        the smallest margin on the way)."""
        t, view, slack = self.t, self.view, self.slack
        roots = t.root[asset] if n else np.zeros(0, np.int64)
        vis, vis_margin = _frustum_box_decision(view, self.world, t.node_box[roots])
        self.counters["instances_visible"] = int(vis.sum())
        self.near_decisions += int((vis_margin < slack).sum())
        keep = vis | (vis_margin < slack)
        inst = np.flatnonzero(keep)
        node = roots[inst]
        exact = vis[inst]
        margin = vis_margin[inst]
        s = _world_spheres(self.world[inst], self.scale[inst], t.node_sphere[node])
        up, far_m = _projected_decision(view, t.far_error[asset[inst]], s, self.scale[inst],
                                        view.tau)
        far = ~up
        self.near_decisions += int((exact & (far_m < slack)).sum())
        self.counters["instances_far"] = int((exact & far).sum())
        if far.any():
            self._parts(t.root_group[asset[inst[far]]], inst[far], exact[far], margin[far])
        return vis, vis_margin, (inst[up], node[up], exact[up], margin[up])

    def _parts(self, g: np.ndarray, inst: np.ndarray, exact: np.ndarray,
               margin: np.ndarray) -> None:
        """The parts of groups `g` (of instances `inst`) visited: their clusters found."""
        t = self.t
        self.counters["clusters_tested"] += int(t.group_parts_clusters[g][exact].sum())
        cnt = t.group_parts_clusters[g]
        members = t.group_clusters[_ranges(t.group_offset[g], cnt)]
        self.found.append((np.repeat(inst, cnt), members, np.repeat(exact, cnt),
                           np.repeat(margin, cnt)))

    def traverse(self, inst: np.ndarray, node: np.ndarray, exact: np.ndarray,
                 margin: np.ndarray) -> None:
        """The BVH, level by level from the frontier: nodes descended, their child groups
        tested."""
        t, view, slack = self.t, self.view, self.slack
        world, scale = self.world, self.scale
        while len(inst):
            self.counters["nodes_visited"] += int(exact.sum())
            s = _world_spheres(world[inst], scale[inst], t.node_sphere[node])
            f_in, f_m = _frustum_box_decision(view, world[inst], t.node_box[node])
            e_up, e_m = _projected_decision(view, t.node_error[node], s, scale[inst], view.tau)
            go = f_in & e_up
            # a descended node flips with either test; a skipped one only when every failing
            # test flips
            m_node = np.where(go, np.minimum(f_m, e_m),
                              np.maximum(np.where(f_in, 0.0, f_m), np.where(e_up, 0.0, e_m)))
            self.near_decisions += int((exact & (m_node < slack)).sum())
            take = go | (m_node < slack)
            inst, node = inst[take], node[take]
            exact = exact[take] & go[take]
            margin = np.minimum(margin[take], m_node[take])
            # child groups: tested by every descended node
            cg = t.node_child_group[node]  # (k, 8)
            gk, gj = np.nonzero(cg >= 0)
            g = cg[gk, gj]
            self.counters["groups_tested"] += int(exact[gk].sum())
            if len(g):
                gi = inst[gk]
                gs = _world_spheres(world[gi], scale[gi], t.group_sphere[g])
                want, w_m = _projected_decision(view, t.group_error[g], gs, scale[gi], view.tau)
                self.near_decisions += int((exact[gk] & (w_m < slack)).sum())
                gtake = want | (w_m < slack)
                self._parts(g[gtake], gi[gtake], exact[gk][gtake] & want[gtake],
                            np.minimum(margin[gk][gtake], w_m[gtake]))
            # child nodes: the next level
            cn = t.node_child_node[node]
            nk, nj = np.nonzero(cn >= 0)
            inst, node, exact, margin = inst[nk], cn[nk, nj], exact[nk], margin[nk]

    def clusters(self, vis: np.ndarray, vis_margin: np.ndarray) -> CullResult:
        """The clusters of the parts visited: drawn where their own error is <= tau and their
        bounds are in the frustum; SW or HW; the result, with the instance cull's."""
        t, view, slack, counters = self.t, self.view, self.slack, self.counters
        if self.found:
            ci, cc, c_exact, c_margin = (np.concatenate(x)
                                         for x in zip(*self.found, strict=True))
        else:
            ci = cc = np.zeros(0, np.int64)
            c_exact = np.zeros(0, bool)
            c_margin = np.zeros(0)
        world, scale = self.world[ci], self.scale[ci]
        own_s = _world_spheres(world, scale, t.cl_self_sphere[cc])
        coarse, o_m = _projected_decision(view, t.cl_self_error[cc], own_s, scale, view.tau)
        b = _world_spheres(world, scale, t.cl_bounds[cc])
        b_in, b_m = _frustum_decision(view, b)
        draw = ~coarse & b_in
        m_cl = np.where(draw, np.minimum(o_m, b_m),
                        np.maximum(np.where(coarse, o_m, 0.0), np.where(b_in, 0.0, b_m)))
        self.near_decisions += int((c_exact & (m_cl < slack)).sum())
        row_margin = np.minimum(c_margin, m_cl)
        drawn = c_exact & draw
        near = ~drawn & (row_margin < slack) & (draw | (m_cl < slack))
        tris = t.cl_triangles[cc]
        hw, hw_m = _hardware_decision(view, b, tris, t.cl_mode[cc])
        self.near_decisions += int((drawn & (hw_m < slack)).sum())

        def rows_of(mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
            r = np.stack([ci[mask].astype(np.uint32), t.cl_ref[cc[mask]]], axis=1)
            order = np.lexsort((r[:, 1], r[:, 0])) if len(r) else np.zeros(0, np.int64)
            return r[order].reshape(-1, 2), order

        rows, order = rows_of(drawn)
        sel = np.flatnonzero(drawn)[order]
        near_rows, norder = rows_of(near)
        hw_sel = hw[sel]
        for name, mask in (("sw", ~hw_sel), ("hw", hw_sel)):
            counters[f"{name}_clusters"] = int(mask.sum())
            counters[f"{name}_triangles"] = int(tris[sel][mask].sum())
        return CullResult(rows=rows, hw=hw_sel, triangles=tris[sel].astype(np.uint32),
                          margin=row_margin[sel], hw_margin=hw_m[sel], near_rows=near_rows,
                          near_margin=row_margin[np.flatnonzero(near)[norder]],
                          instance_visible=vis, instance_margin=vis_margin, counters=counters,
                          near_decisions=self.near_decisions)


def cluster_records(scene: Scene, refs: np.ndarray) -> np.ndarray:
    """Cluster refs (k,) uint32 (``global page << 10 | slot``, as in `Renderer.read_visible()`)
    -> their (k,) CLUSTER_DTYPE records; a record's `cluster` field is the cluster's index in its
    asset's DAG."""
    t = _scene_tables(scene)
    order = np.argsort(t.cl_ref, kind="stable")
    keys = t.cl_ref[order]
    refs = np.asarray(refs, np.uint32).reshape(-1)
    pos = np.minimum(np.searchsorted(keys, refs), max(len(keys) - 1, 0))
    if len(refs) and not (keys[pos] == refs).all():
        raise ValueError("a cluster ref names no cluster record of the scene")
    return t.cl_record[order[pos]]


__all__ = ["COUNTER_NAMES", "CullResult", "CullView", "cluster_records", "cull", "frame_view"]


# ---------------------------------------------------------------------------- occlusion


def hzb_mips(depth_bits: np.ndarray) -> list[np.ndarray]:
    """The HZB of shaders/hzb.wgsl from a (h, w) image of reversed-Z depth bits (uint32, 0 where
    empty): mip 0 the minimum (farthest) of each 2x2 pixel block, each further mip the minimum of
    2x2 texels below, blocks past an odd edge taking only what exists; down to 1x1."""
    out = []
    cur = np.asarray(depth_bits, np.uint32)
    while True:
        h, w = cur.shape
        pad = np.full((h + h % 2, w + w % 2), 0xFFFFFFFF, np.uint32)
        pad[:h, :w] = cur
        cur = pad.reshape(pad.shape[0] // 2, 2, pad.shape[1] // 2, 2).min(axis=(1, 3))
        out.append(cur)
        if cur.shape == (1, 1):
            return out


def _hzb_occludes(ndc: np.ndarray, nearest: float, size: tuple[int, int],
                  mips: list[np.ndarray]) -> bool:
    """shaders/occlusion.wgsl's `hzb_occludes` for one NDC rectangle (x0, y0, x1, y1)."""
    w, h = size
    size_v = np.array([w, h], np.float64)
    lo = np.array([(ndc[0] * 0.5 + 0.5) * w, (0.5 - ndc[3] * 0.5) * h]) - 1.0
    hi = np.array([(ndc[2] * 0.5 + 0.5) * w, (0.5 - ndc[1] * 0.5) * h]) + 1.0
    lo = np.clip(lo, 0.0, size_v - 1.0)
    hi = np.clip(hi, 0.0, size_v - 1.0)
    if (hi < lo).any():
        return False
    extent = float(max(hi - lo))
    mip = 0 if extent <= 2.0 else min(int(np.ceil(np.log2(extent))) - 1, len(mips) - 1)
    while True:
        t0 = lo.astype(np.int64) >> (mip + 1)
        t1 = hi.astype(np.int64) >> (mip + 1)
        if (t1 - t0 <= 1).all() or mip + 1 >= len(mips):
            break
        mip += 1
    far = mips[mip][t0[1]: t1[1] + 1, t0[0]: t1[0] + 1].min()
    return bool(np.float32(nearest).view(np.uint32) < far)


def _sphere_axis(a: float, z: float, r: float, p: float) -> tuple[float, float]:
    """Mara and McGuire's bounds of a sphere (view coordinate a, depth z ahead, radius r) on one
    screen axis, times the projection scale p (as shaders/occlusion.wgsl)."""
    n = np.sqrt(max(a * a + z * z - r * r, 0.0))
    lo = (n * -a - r * -z) / (r * -a + n * -z) * p
    hi = (n * -a + r * -z) / (-r * -a + n * -z) * p
    return lo, hi


def occlusion_visible(spheres: np.ndarray, view: np.ndarray, proj: tuple[float, float, float],
                      size: tuple[int, int], mips: list[np.ndarray]) -> np.ndarray:
    """shaders/occlusion.wgsl's sphere test for world spheres (n, 4) against an HZB
    (`hzb_mips`), with camera `view` (4x4 world -> view) and `proj` (P00, P11, near), in a `size`
    (w, h) image: True where a sphere may be visible. Computed in float64 (the GPU in float32:
    decisions within rounding of a texel edge or of the depth comparison may differ)."""
    s = np.asarray(spheres, np.float64).reshape(-1, 4)
    p00, p11, znear = (float(x) for x in proj)
    vm = np.asarray(view, np.float64)
    out = np.ones(len(s), bool)
    for i, (x, y, z, r) in enumerate(s):
        v = vm[:3, :3] @ [x, y, z] + vm[:3, 3]
        c = np.array([v[0], v[1], -v[2]])
        if c[2] < r + znear:
            continue

        x0, x1 = _sphere_axis(c[0], c[2], r, p00)
        y0, y1 = _sphere_axis(c[1], c[2], r, p11)
        out[i] = not _hzb_occludes(np.array([x0, y0, x1, y1]), znear / (c[2] - r), size, mips)
    return out


def occlusion_visible_box(world: np.ndarray, box: np.ndarray, view: np.ndarray,
                          proj: tuple[float, float, float], size: tuple[int, int],
                          mips: list[np.ndarray]) -> np.ndarray:
    """shaders/occlusion.wgsl's box test for object boxes (n, 6) under world matrices (n, 4, 4),
    as `occlusion_visible`."""
    p00, p11, znear = (float(x) for x in proj)
    vm = np.asarray(view, np.float64)
    out = np.ones(len(box), bool)
    corners = np.array([[k & 1, (k >> 1) & 1, (k >> 2) & 1] for k in range(8)], bool)
    for i in range(len(box)):
        lo, hi = box[i, :3].astype(np.float64), box[i, 3:].astype(np.float64)
        pts = np.where(corners, hi, lo)  # (8, 3)
        m = vm @ np.asarray(world[i], np.float64)
        v = pts @ m[:3, :3].T + m[:3, 3]
        z = -v[:, 2]
        if (z < znear).any():
            continue
        px, py = v[:, 0] / z * p00, v[:, 1] / z * p11
        ndc = np.array([px.min(), py.min(), px.max(), py.max()])
        out[i] = not _hzb_occludes(ndc, znear / z.min(), size, mips)
    return out
