"""Aggregate proxies: a far group of instances drawn as one box (issue 34, item 3).

The instance blocks (`renderer.instances`: 64 slots of one asset in k-d order, 8 leaves of 8
each) are the leaves of a tree: a node of level k + 1 stands for 8 consecutive nodes of level k
of the same asset, up to one root per asset. Every node has a *proxy*: a box around its
instances, drawn with a coverage below one where the instances fill less of it (each pixel of
the box kept with that probability by a hash: `shaders/instance.wgsl` `proxy_keep`), so that a
far field of sparse instances keeps its tone instead of turning solid, and temporal
accumulation turns the dither into that tone.

The error of a proxy is honest as the DAG's is: a world distance bounding the two-sided
(Hausdorff) distance between the box's surface and everything it stands for, each instance's
content known by its bounding sphere (c, r) and its *gap* g, the farthest a point of that
sphere lies from the instance's full-detail surface (`Scene.instance_gaps`: from
`Asset.sphere_gap` and the instance's axis scales; 2r, which says nothing, where its transform
shears):
- content to box: a point of the ball is within d(c, ∂B) + r of the box's surface, and a ball
  inside the box within half the box's thinnest side of it (outside, within the ball's excess
  over the box);
- box to content: from a point q, the radial point of the sphere is ||q - c| - r| away and within
  g of the surface, and any point of the ball |q - c| + r away: min_i of the smaller is
  1-Lipschitz in q, so the largest value over a face is at most the largest over a grid of
  cell centres plus half a cell's diagonal. A block's box is the union of its leaves' k-d
  cells, a node's of its children's boxes: where the children's faces tile the node's (k-d
  cells do), every point of the node's surface is a point of a child's, and the node's bound is
  the largest of its children's (`_tiled_reach`); elsewhere, the children's boxes bound it
  (`_node_reach`, at each face cell's corners in each child's frame).
On a slope a block's aligned box is as tall as it is wide; such a block also tries a box turned
to the plane of its instances' centres (`_turned_boxes`: principal axes, measured over its 64
instances in that frame) and keeps it where its error is under TURN_GAIN of the aligned one's.
The proxy row is then the unit cube mapped onto the turned box (`proxy_rows`); the nodes above
stay aligned, around their children's boxes.
A node's error is the largest of its own two and its children's, and its bounding sphere holds
its children's, so its projected error is never smaller than a descendant's: `block_cull.wgsl`
draws the highest node under tau over each block, and every instance is drawn once, by itself
or by exactly one proxy (no hole, no double).

Coverage: a convex body's mean projected area over all directions is a quarter of its surface
(Cauchy); a node keeps its instances' total, sum area_asset * scale^2 / 4 (`content`), and the
shader divides it by the box's projected area along the view direction.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from renderer.instances import LEAF
from renderer.limits import INSTANCE_BLOCK as BLOCK
from renderer.limits import NO_NODE

FANOUT = 8  # nodes of level k under one of level k + 1
LEAVES = BLOCK // LEAF  # k-d leaves a block
LEAF_GRID = 4  # face cells per axis over a leaf's box (its LEAF instances)
NODE_GRID = 4  # face cells per axis over a higher node's box (its <= 8 children's), refined
REFINE = 32  # cells of a node's faces split further each round, at most
CHUNK_NODES = 256  # nodes measured at a time (bounds the (nodes, samples, sites) temporaries)
CHUNK_BLOCKS = 1024  # blocks measured at a time (`build`: bounds their temporaries, ~25 MB)
CHUNK_VALUES = 1 << 21  # `_site_reach`: (boxes, cells, sites) distances at a time
BLOCK_GRID = 8  # face cells per axis over a turned block's box (its 64 instances)
TURN_THICK = 1.5  # a block tries a turned box where its aligned one is this many diameters thick
TURN_GAIN = 0.8  # ... and keeps it where its error is below this share of the aligned one's (an
# aligned block's faces tile its parent's: the levels above stay tight)


@dataclass
class Aggregates:
    """The proxy tree over a layout's blocks: node n < blocks is block n; the levels above follow.
    Arrays of (nodes,): `lo`, `hi` (nodes, 3) float64 boxes; `error` float64 world distance
    (the honest bound above, never below a child's); `reach` float64 its box-to-content part;
    `centre` (nodes, 3), `radius` float64 bounding spheres (each holding its children's);
    `content` float64 mean projected area of the instances; `parent` int64 (-1: a root);
    `child` (nodes, FANOUT) int64 (-1: none); `first_block`, `asset`, `level` int64."""

    lo: np.ndarray
    hi: np.ndarray
    error: np.ndarray
    reach: np.ndarray
    centre: np.ndarray
    radius: np.ndarray
    content: np.ndarray
    parent: np.ndarray
    child: np.ndarray
    first_block: np.ndarray
    asset: np.ndarray
    level: np.ndarray
    leaf_cells: np.ndarray | None = None  # (blocks, LEAVES, 2, 3) the blocks' k-d leaf cells
    # (nodes, 3, 3) each box's frame: world = axes @ local, `lo`, `hi` local (identity: an
    # axis-aligned box; a block on a slope turns its box to its instances' plane)
    axes: np.ndarray | None = None

    @property
    def turned(self) -> np.ndarray:
        """(nodes,) bool: boxes not axis-aligned."""
        return ~_aligned(self.axes)

    def world_box(self, nodes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """World axis-aligned boxes (lo, hi) around nodes' boxes (their own where aligned)."""
        ax = self.axes[nodes]
        mid = np.einsum("...ij,...j->...i", ax, (self.lo[nodes] + self.hi[nodes]) / 2)
        half = np.einsum("...ij,...j->...i", np.abs(ax), (self.hi[nodes] - self.lo[nodes]) / 2)
        return mid - half, mid + half

    @property
    def count(self) -> int:
        return len(self.error)

    def proxy_rows(self) -> np.ndarray:
        """(nodes, 3, 4) float32 instance rows of the proxies (`shaders/instance.wgsl`): the box
        asset's unit cube mapped onto each node's box: its first two edges, its third edge's
        length and the content's mean projected area, its corner."""
        size = np.maximum(self.hi - self.lo, 1e-6 * np.abs(self.hi - self.lo).max(initial=1.0))
        rows = np.zeros((self.count, 3, 4), np.float32)
        rows[:, 0, :3] = self.axes[:, :, 0] * size[:, :1]
        rows[:, 1, :3] = self.axes[:, :, 1] * size[:, 1:2]
        rows[:, 2, 0], rows[:, 2, 1] = size[:, 2], self.content
        rows[:, :, 3] = np.einsum("nij,nj->ni", self.axes, self.lo)
        return rows

    def table(self, proxy_slot: np.ndarray) -> np.ndarray:
        """The GPU node table as (nodes, 8) words (`block_cull.wgsl`): the sphere (float32, its
        radius rounded up by a millionth of the coordinates so that a parent's still holds its
        children's), the error (rounded up), the parent (NO_NODE), the first block and the
        node's proxy slot."""
        t = np.zeros((self.count, 8), np.uint32)
        sphere = np.zeros((self.count, 4), np.float32)
        sphere[:, :3] = self.centre
        pad = 1e-6 * (np.abs(self.centre).max(axis=1) + self.radius) * (1 + self.level)
        sphere[:, 3] = _up(self.radius + pad)
        t[:, :4] = sphere.view(np.uint32)
        t[:, 4] = _up(self.error).view(np.uint32)
        t[:, 5] = np.where(self.parent < 0, NO_NODE, self.parent).astype(np.uint32)
        t[:, 6] = self.first_block
        t[:, 7] = proxy_slot
        return t

    def invalidate(self, blocks: np.ndarray) -> np.ndarray:
        """Make blocks `blocks` and their ancestors draw as instances (error inf: moved
        instances left their boxes) until `refresh`; returns the nodes changed."""
        nodes = _with_ancestors(self.parent, np.unique(np.asarray(blocks, np.int64)))
        self.error[nodes] = np.inf
        return nodes

    def refresh(self, blocks: np.ndarray, bounds: np.ndarray, sites: np.ndarray,
                content: np.ndarray) -> np.ndarray:
        """Measure blocks `blocks` ((k,) sorted, unique) and their ancestors again: `bounds`
        the whole layout's (`build`'s), `sites` (k, 64, 4) and `content` (k, 64) those blocks'
        slots'; returns the nodes changed."""
        blocks = np.asarray(blocks, np.int64)
        _measure_blocks(self, blocks, bounds, sites, content)
        todo = blocks
        done = [blocks]
        while True:
            up = np.unique(self.parent[todo])
            up = up[up >= 0]
            if not len(up):
                break
            _measure_nodes(self, up)
            done.append(up)
            todo = up
        return np.concatenate(done)


def _up(v: np.ndarray) -> np.ndarray:
    """float64 `v` as float32 rounded up (inf stays inf)."""
    f = np.asarray(v).astype(np.float32)
    return np.where(f < v, np.nextafter(f, np.float32(np.inf)), f)


def _with_ancestors(parent: np.ndarray, nodes: np.ndarray) -> np.ndarray:
    out = [nodes]
    while len(nodes):
        nodes = np.unique(parent[nodes])
        nodes = nodes[nodes >= 0]
        out.append(nodes)
    return np.concatenate(out)


def _face_cells(lo: np.ndarray, hi: np.ndarray, g: int) -> tuple[np.ndarray, np.ndarray]:
    """(m, 6 g², 3) centres of a g x g grid of cells on each face of m boxes, and each cell's
    half size (m, 6 g², 3), zero along its face's normal."""
    m = len(lo)
    t = (np.arange(g) + 0.5) / g
    ext = hi - lo
    out = np.empty((m, 6, g * g, 3))
    hs = np.zeros((m, 6, g * g, 3))
    k = 0
    for a in range(3):
        u, v = (a + 1) % 3, (a + 2) % 3
        uu, vv = np.meshgrid(t, t, indexing="ij")
        for side in (lo, hi):
            out[:, k, :, a] = side[:, a, None]
            out[:, k, :, u] = lo[:, u, None] + uu.reshape(-1) * ext[:, u, None]
            out[:, k, :, v] = lo[:, v, None] + vv.reshape(-1) * ext[:, v, None]
            hs[:, k, :, u] = ext[:, u, None] / (2 * g)
            hs[:, k, :, v] = ext[:, v, None] / (2 * g)
            k += 1
    return out.reshape(m, 6 * g * g, 3), hs.reshape(m, 6 * g * g, 3)


def _to_box_surface(c: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Distance from points `c` to the surfaces of boxes (lo, hi) (broadcast), inside or out."""
    inside = np.minimum(c - lo, hi - c).min(axis=-1)
    gap = np.maximum(np.maximum(lo - c, c - hi), 0)
    return np.where(inside >= 0, inside, np.sqrt((gap * gap).sum(axis=-1)))


def _nearest(q: np.ndarray, c: np.ndarray, r: np.ndarray, g: np.ndarray) -> np.ndarray:
    """(m, k) the nearest content's reach from points `q` (m, k, 3) over instances with spheres
    `c` (m, s, 3), `r` (m, s) (inf: no instance) and gaps `g` (m, s): min_i of min(|q - c_i| +
    r_i, ||q - c_i| - r_i| + g_i); float32, squared distances by a matrix product."""
    d2 = ((q * q).sum(-1)[:, :, None] - 2 * np.matmul(q, c.transpose(0, 2, 1))
          + (c * c).sum(-1)[:, None, :])
    d = np.sqrt(np.maximum(d2, 0))
    r, g = r[:, None, :], g[:, None, :]
    return np.minimum(d + r, np.abs(d - r) + g).min(axis=2)


def _deepest(clo, chi, lo, hi) -> np.ndarray:
    """How far inside boxes (lo, hi) (m, 3) a point of their children's boxes (clo, chi)
    (m, k, 3) can lie from the surface: along each axis the largest of min(x - lo, hi - x) over
    the child's interval (half the extent if the interval holds the middle), the smallest over
    axes (m, k): an upper bound of d(x, surface) over every x of the child."""
    mid = ((lo + hi) / 2)[:, None]
    x = np.clip(mid, clo, chi)  # the interval's point nearest the middle
    return np.minimum(x - lo[:, None], hi[:, None] - x).min(axis=-1).clip(0, None)


def _tiled_reach(lo, hi, clo, chi, reach) -> np.ndarray:
    """(m,) box-to-content bound of m nodes whose children's boxes (`clo`, `chi` (m, k, 3),
    `reach` (m, k), inf: no child) tile each of the node's faces with their own (k-d cells):
    every point of the node's surface is then a point of a child's surface, within that
    child's reach of its content, so the node's is the largest of those children's. inf where
    the faces are not covered exactly (the caller measures those nodes another way)."""
    out = np.zeros(len(lo))
    covered = np.ones(len(lo), bool)
    real = np.isfinite(reach)
    for a in range(3):
        u, v = (a + 1) % 3, (a + 2) % 3
        face = (hi[:, u] - lo[:, u]) * (hi[:, v] - lo[:, v])
        part = (chi[..., u] - clo[..., u]) * (chi[..., v] - clo[..., v])
        for touch in (clo[..., a] <= lo[:, None, a], chi[..., a] >= hi[:, None, a]):
            t = touch & real
            area = np.where(t, part, 0).sum(axis=1)
            covered &= np.abs(area - face) <= 1e-9 * np.maximum(face, 1e-30) + 1e-300
            out = np.maximum(out, np.where(t, reach, 0).max(axis=1))
    return np.where(covered, out, np.inf)


def _aligned(axes: np.ndarray) -> np.ndarray:
    """Whether frames (..., 3, 3) are the identity (an axis-aligned box), over the last two axes."""
    return (axes == np.eye(3)).all(axis=(-2, -1))


def _children_reach(lo, hi, clo, chi, reach, cax=None) -> np.ndarray:
    """(m,) box-to-content bound of m axis-aligned boxes over their children's boxes (`clo`,
    `chi` (m, k, 3) in the children's frames `cax` (m, k, 3, 3); None: aligned) and bounds
    (`reach` (m, k), inf: no child): the largest of the children's where aligned children's
    faces tile the box's (`_tiled_reach`), else bounded at face cells' corners (`_node_reach`:
    an asset's last nodes, leaves on hilly ground, turned boxes, moved instances)."""
    if cax is None:
        cax = np.broadcast_to(np.eye(3), (*clo.shape[:2], 3, 3))
    aligned = _aligned(cax).all(axis=1)
    out = np.full(len(lo), np.inf)
    if aligned.any():
        out[aligned] = _tiled_reach(lo[aligned], hi[aligned], clo[aligned], chi[aligned],
                                    reach[aligned])
    loose = ~np.isfinite(out)
    if loose.any():
        out[loose] = _node_reach(lo[loose], hi[loose], clo[loose], chi[loose], reach[loose],
                                 np.ascontiguousarray(cax[loose]))
    return out


def _node_reach(lo, hi, clo, chi, reach, cax, rounds: int = 4) -> np.ndarray:
    """(m,) box-to-content bound of m axis-aligned nodes over their children: boxes `clo`,
    `chi` (m, k, 3) in frames `cax` (m, k, 3, 3) with box-to-content bounds `reach` (m, k)
    (inf: no child). Each face in NODE_GRID² cells; over a cell, d(q, B_j) is convex, so its
    largest value is at one of the cell's corners: min_j of that plus reach_j bounds the cell
    with no sampling slack (a point of the node's surface inside a child's box lies on that
    box's surface: the node holds its children). Cells whose bound exceeds the largest value
    found at a cell centre by more than a tenth are split in four, `rounds` times."""
    out = np.zeros(len(lo))
    for a in range(0, len(lo), CHUNK_NODES):
        s = slice(a, a + CHUNK_NODES)
        out[s] = _reach_chunk(lo[s], hi[s], clo[s], chi[s], reach[s], cax[s], rounds)
    return out


def _box_distance(p, bl, bh, ax) -> np.ndarray:
    """Distances from points `p` (c, ..., 3) world to boxes (bl, bh) (c, k, 3) in frames `ax`
    (c, k, 3, 3) (world = ax @ local): (c, k, ...)."""
    local = np.matmul(p.reshape(len(p), 1, -1, 3), ax)  # axᵀ p, each child's frame
    local = local.reshape(*ax.shape[:2], *p.shape[1:])
    shape = (*bl.shape[:2],) + (1,) * (local.ndim - 3) + (3,)
    g = np.maximum(np.maximum(bl.reshape(shape) - local, 0), local - bh.reshape(shape))
    return np.sqrt((g * g).sum(-1))


def _reach_chunk(lo, hi, clo, chi, reach, cax, rounds):
    m, g = len(lo), NODE_GRID
    t = np.arange(g) / g
    # cells: (node, cell lo (3), cell hi (3)), a face's own axis flat
    cl, ch, node = [], [], []
    ext = hi - lo
    for ax in range(3):
        u, v = (ax + 1) % 3, (ax + 2) % 3
        uu, vv = (x.reshape(-1) for x in np.meshgrid(t, t, indexing="ij"))
        for side in (lo, hi):
            c0 = np.empty((m, g * g, 3))
            c0[:, :, ax] = side[:, ax, None]
            c0[:, :, u] = lo[:, u, None] + uu * ext[:, u, None]
            c0[:, :, v] = lo[:, v, None] + vv * ext[:, v, None]
            c1 = c0.copy()
            c1[:, :, u] += ext[:, u, None] / g
            c1[:, :, v] += ext[:, v, None] / g
            cl.append(c0)
            ch.append(c1)
            node.append(np.repeat(np.arange(m)[:, None], g * g, axis=1))
    cl = np.concatenate(cl, axis=1).reshape(-1, 3)
    ch = np.concatenate(ch, axis=1).reshape(-1, 3)
    node = np.concatenate(node, axis=1).reshape(-1)
    best = np.zeros(m)  # the largest value at a cell centre: a lower bound
    bound = np.zeros(m)
    pick = np.array([[(c >> a) & 1 for a in range(3)] for c in range(8)], bool)  # corners
    aligned = bool(_aligned(cax).all())
    for r in range(rounds + 1):
        bl, bh, e = clo[node], chi[node], reach[node]  # (cells, k, 3), (cells, k)
        mid = (cl + ch) / 2
        if aligned:  # the largest gap over the cell per axis apart (its corners: no einsum)
            gap0 = np.maximum(np.maximum(bl - cl[:, None], 0), cl[:, None] - bh)
            gap1 = np.maximum(np.maximum(bl - ch[:, None], 0), ch[:, None] - bh)
            gmax = np.maximum(gap0, gap1)
            ub = (np.sqrt((gmax * gmax).sum(-1)) + e).min(axis=1)
            gm = np.maximum(np.maximum(bl - mid[:, None], 0), mid[:, None] - bh)
            at = (np.sqrt((gm * gm).sum(-1)) + e).min(axis=1)
        else:  # turned children: the cell's 8 corners (4 distinct) in each child's frame
            ax = cax[node]
            corners = np.where(pick[None], ch[:, None], cl[:, None])  # (cells, 8, 3)
            ub = (_box_distance(corners, bl, bh, ax).max(axis=2) + e).min(axis=1)
            at = (_box_distance(mid, bl, bh, ax) + e).min(axis=1)
        np.maximum.at(best, node, at)
        open_ = ub > best[node] * 1.1 + 1e-9 * (1 + np.abs(cl).max(axis=1))
        # at most REFINE cells a node split further (the largest bounds): the rest keep theirs
        rank = np.empty(len(ub), np.int64)
        by = np.lexsort((-ub, node))
        first = np.searchsorted(node[by], node[by])
        rank[by] = np.arange(len(ub)) - first
        open_ &= rank < REFINE
        if r == rounds or not open_.any():
            np.maximum.at(bound, node, ub)
            break
        np.maximum.at(bound, node[~open_], ub[~open_])
        # split the open cells in four along their two long axes (a face cell is flat in one)
        cl, ch, node = cl[open_], ch[open_], node[open_]
        flat = np.argmin(ch - cl, axis=1)
        halves = []
        for du in (0, 1):
            for dv in (0, 1):
                a0, a1 = cl.copy(), ch.copy()
                for which, d in ((1, du), (2, dv)):
                    ax = (flat + which) % 3
                    i = np.arange(len(cl))
                    midv = (cl[i, ax] + ch[i, ax]) / 2
                    a0[i, ax] = np.where(d, midv, cl[i, ax])
                    a1[i, ax] = np.where(d, ch[i, ax], midv)
                halves.append((a0, a1))
        cl = np.concatenate([h[0] for h in halves])
        ch = np.concatenate([h[1] for h in halves])
        node = np.tile(node, 4)
    return np.maximum(bound, best)


def node_count(blocks: int) -> int:
    """The proxy nodes over `blocks` blocks of one asset (`build`'s tree: the blocks, then an
    eighth of each level rounded up, until one)."""
    n, level = blocks, blocks
    while level > 1:
        level = -(-level // FANOUT)
        n += level
    return n


def slot_data(user: np.ndarray, spheres: np.ndarray, areas: np.ndarray,
              gaps: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Per slot of `user` ((k * 64,) each slot's instance, -1 padding): the world sphere and
    gap ((k, 64, 5), from `spheres` (n, 4) and `gaps` (n,) in instance order; None: twice the
    radius, which says nothing of the content) and the mean projected area ((k, 64), a quarter
    of `areas` (n,): Cauchy), 0 for padding."""
    i = np.maximum(user, 0)
    sites = np.empty((len(i), 5))
    sites[:, :4] = spheres[i]
    sites[:, 4] = 2 * sites[:, 3] if gaps is None else np.minimum(gaps[i], 2 * sites[:, 3])
    sites = sites.reshape(-1, BLOCK, 5)
    content = np.where(user >= 0, np.asarray(areas, np.float64)[i] / 4, 0.0)
    return sites, content.reshape(-1, BLOCK)


def build_for_layout(lay, bounds: np.ndarray, spheres: np.ndarray, areas: np.ndarray,
                     gaps: np.ndarray | None = None) -> Aggregates:
    """`build` over a layout (`GpuInstances`, before `add_proxies`): its blocks and their
    `bounds`, the instances' world `spheres` ((n, 4), instance order), full-detail surface
    `areas` ((n,) world units squared: `Scene.instance_areas`) and gaps ((n,):
    `Scene.instance_gaps`; None: nothing known)."""
    sites, content = slot_data(lay.user[: lay.instance_slots], spheres, areas, gaps)
    return build(lay.blocks[: len(bounds)], bounds, lay.cells, sites, content)


def build(blocks: np.ndarray, bounds: np.ndarray, cells: np.ndarray, slot_sites: np.ndarray,
          slot_area: np.ndarray) -> Aggregates:
    """The proxy tree of a layout: `blocks` (B,) each block's asset (`GpuInstances.blocks`),
    `bounds` (B, 2, 4) its count (`block_bounds`), `cells` (B * LEAVES, 2, 3) its leaves' k-d
    cells (`GpuInstances.cells`: the cells of an asset tile its instances' centres' box, so that
    a node's children's faces cover its own, without the gaps between tight boxes),
    `slot_sites` (B, 64, 5) float64 the world sphere and gap of each slot's instance (anything where
    the block's count says padding: slots are filled from a block's start), `slot_area` (B, 64)
    its content's mean projected area (0 for padding): `slot_data`."""
    nb = len(blocks)
    used = bounds[:, 0, 3] > 0
    # the topology: 8 consecutive used nodes of one asset under a parent, level by level, until
    # each asset has one (global node indices: the blocks, then each level's after the one
    # below; as many nodes an asset as `node_count` says, which sizes the instance buffer)
    parent = np.full(nb, -1)
    child = [np.full((nb, FANOUT), -1)]
    asset = [blocks.astype(np.int64)]
    first = [np.arange(nb)]
    total = nb
    cur = np.flatnonzero(used)  # the current level's nodes (global)
    cur_asset = asset[0][cur]
    cur_first = first[0][cur]
    while len(cur):
        # an asset down to one node at this level has its root: the others go on
        start = np.concatenate([[True], cur_asset[1:] != cur_asset[:-1]])
        run = np.cumsum(start) - 1
        alone = np.bincount(run)[run] == 1
        cur, cur_asset, cur_first, start = (x[~alone] for x in (cur, cur_asset, cur_first, start))
        if not len(cur):
            break
        rank = np.arange(len(cur)) - np.flatnonzero(start)[np.cumsum(start) - 1]
        key = np.cumsum(rank % FANOUT == 0) - 1
        m = int(key[-1]) + 1
        parent = np.concatenate([parent, np.full(m, -1)])
        parent[cur] = total + key
        ch = np.full((m, FANOUT), -1)
        ch[key, rank % FANOUT] = cur
        heads = rank % FANOUT == 0
        child.append(ch)
        asset.append(cur_asset[heads])
        first.append(cur_first[heads])
        cur, cur_asset, cur_first = total + np.arange(m), asset[-1], first[-1]
        total += m
    level = np.repeat(np.arange(len(child)), [len(c) for c in child])
    n = total
    agg = Aggregates(
        lo=np.zeros((n, 3)), hi=np.zeros((n, 3)), error=np.full(n, np.inf),
        reach=np.full(n, np.inf), centre=np.zeros((n, 3)), radius=np.zeros(n),
        content=np.zeros(n), parent=parent, child=np.concatenate(child),
        first_block=np.concatenate(first), asset=np.concatenate(asset), level=level)
    agg.leaf_cells = np.asarray(cells, np.float64).reshape(nb, LEAVES, 2, 3)
    agg.axes = np.tile(np.eye(3), (n, 1, 1))
    # the blocks in chunks: their (blocks, 64, ...) float64 temporaries bounded (a million
    # instances measured at once peaked at ~400 MB of them)
    used_blocks = np.flatnonzero(used)
    sites, area = slot_sites.reshape(nb, BLOCK, 5), slot_area.reshape(nb, BLOCK)
    for a in range(0, len(used_blocks), CHUNK_BLOCKS):
        b = used_blocks[a: a + CHUNK_BLOCKS]
        _measure_blocks(agg, b, bounds, sites[b], area[b])
    for lv in range(1, int(agg.level.max(initial=0)) + 1):
        _measure_nodes(agg, np.flatnonzero(agg.level == lv))
    return agg


def _measure_blocks(agg: Aggregates, b: np.ndarray, bounds, sites, content) -> None:
    """Boxes, bounds, spheres and content of blocks `b`: `bounds` all blocks' (`build`'s),
    `sites` (k, 64, 5) and `content` (k, 64) theirs. A block's box is the union of its
    leaves' (their k-d cells, each axis thinner than the leaf's largest instance widened to
    that instance's diameter: a flat field's cells are flat, a lone instance's a point, and
    their proxies would draw nothing); its reach that of its leaves, which tile its faces
    (`_tiled_reach`), each measured over its LEAF instances (`_site_reach`)."""
    k = len(b)
    count = bounds[b, 0, 3].astype(np.int64)
    present = np.arange(BLOCK)[None, :] < count[:, None]
    lp = present.reshape(k, LEAVES, LEAF)
    ls = sites.reshape(k, LEAVES, LEAF, 5)
    has = lp.any(axis=2)
    cells = np.where(has[..., None, None], agg.leaf_cells[b], 0)  # (empty leaves: lo > hi)
    rmax = np.where(lp, ls[..., 3], 0).max(axis=2)
    mid = (cells[:, :, 0] + cells[:, :, 1]) / 2
    half = np.maximum((cells[:, :, 1] - cells[:, :, 0]) / 2, rmax[..., None])
    lo_c, hi_c = np.minimum(cells[:, :, 0], mid - half), np.maximum(cells[:, :, 1], mid + half)
    # along an axis where the leaf's spheres fill under half its cell (instances on hilly
    # ground: the cells span every height), their own extent instead (the faces there then
    # tile no longer, and the block is bounded by its leaves' corners)
    c, r = ls[..., :3], ls[..., 3:4]
    lo_t = np.where(lp[..., None], c - r, np.inf).min(axis=2)
    hi_t = np.where(lp[..., None], c + r, -np.inf).max(axis=2)
    tight = (hi_t - lo_t) < (hi_c - lo_c) / 2
    llo = np.where(has[..., None], np.where(tight, lo_t, lo_c), np.inf)
    lhi = np.where(has[..., None], np.where(tight, hi_t, hi_c), -np.inf)
    lreach = np.full((k, LEAVES), np.inf)
    lreach[has] = _site_reach(llo[has], lhi[has], ls[has][..., :3], ls[has][..., 3],
                              ls[has][..., 4], lp[has])
    lo, hi = llo.min(axis=1), lhi.max(axis=1)
    reach = _children_reach(lo, hi, np.where(has[..., None], llo, 0),
                            np.where(has[..., None], lhi, 0), lreach)
    own = np.where(present, _ball_to_surface(sites[..., :3], sites[..., 3], lo[:, None],
                                             hi[:, None]), 0).max(axis=1)
    error = np.where(count > 0, np.maximum(own, reach), np.inf)
    axes = np.broadcast_to(np.eye(3), (k, 3, 3)).copy()
    # a block whose aligned box is thick (instances on a slope) tries a box turned to the
    # plane of its instances' centres, measured over its instances directly, and keeps it
    # where its error is clearly smaller (both are honest)
    thick = (count >= 3) & ((hi - lo).min(axis=1) > TURN_THICK * 2 * rmax.max(axis=1))
    if thick.any():
        t = np.flatnonzero(thick)
        ax, tlo, thi, treach, town = _turned_boxes(sites[t], present[t])
        better = np.maximum(town, treach) < TURN_GAIN * error[t]
        t, ax, tlo, thi = t[better], ax[better], tlo[better], thi[better]
        lo[t], hi[t], reach[t], axes[t] = tlo, thi, treach[better], ax
        error[t] = np.maximum(town[better], treach[better])
    agg.lo[b], agg.hi[b], agg.reach[b], agg.axes[b] = lo, hi, reach, axes
    agg.error[b] = error
    agg.content[b] = content.sum(axis=1)
    agg.centre[b] = np.einsum("kij,kj->ki", axes, (lo + hi) / 2)
    agg.radius[b] = np.linalg.norm(hi - lo, axis=1) / 2


def _turned_boxes(sites, present):
    """For k blocks' slots (`sites` (k, 64, 5), `present` (k, 64)): each one's frame (k, 3, 3),
    the principal axes of its instances' centres (right-handed, the thinnest last), its box in
    that frame around their spheres (lo, hi (k, 3)), the box-to-content bound over its
    instances (BLOCK_GRID² cells a face) and the content-to-box bound."""
    c, r, g = sites[..., :3], sites[..., 3], sites[..., 4]
    w = present.astype(np.float64)
    mean = (c * w[..., None]).sum(axis=1) / w.sum(axis=1)[:, None]
    d = (c - mean[:, None]) * w[..., None]
    _, vec = np.linalg.eigh(np.einsum("kni,knj->kij", d, d))
    ax = vec[:, :, ::-1].copy()  # largest spread first
    ax[:, :, 2] = np.cross(ax[:, :, 0], ax[:, :, 1])
    local = np.einsum("kji,knj->kni", ax, c)  # axᵀ c
    lo = np.where(present[..., None], local - r[..., None], np.inf).min(axis=1)
    hi = np.where(present[..., None], local + r[..., None], -np.inf).max(axis=1)
    reach = _site_reach(lo, hi, local, r, g, present, BLOCK_GRID)
    own = np.where(present, _ball_to_surface(local, r, lo[:, None], hi[:, None]), 0).max(axis=1)
    return ax, lo, hi, reach, own


def _ball_to_surface(c, r, lo, hi) -> np.ndarray:
    """The farthest a point of balls (c, r) lies from the surfaces of boxes (lo, hi)
    (broadcast): d(c, ∂B) + r, and for a ball inside its box no more than half the box's
    thinnest side (every inner point is that close to a face), outside no more than the
    length of the ball's excess over the box along the axes."""
    excess = np.maximum(np.maximum(lo - (c - r[..., None]), (c + r[..., None]) - hi), 0)
    held = np.maximum((hi - lo).min(axis=-1) / 2, np.sqrt((excess * excess).sum(axis=-1)))
    return np.minimum(_to_box_surface(c, lo, hi) + r, held)


def _site_reach(lo, hi, centres, radii, gaps, present, grid: int = LEAF_GRID) -> np.ndarray:
    """(m,) box-to-content bound of m boxes over their instances, spheres `centres` (m, s, 3),
    `radii` (m, s), `gaps` (m, s), `present` (m, s): over grid² cells a face, the nearest
    content's reach from the cell's centre (`_nearest`) plus half the cell's diagonal
    (1-Lipschitz)."""
    out = np.empty(len(lo))
    step = max(1, CHUNK_VALUES // (6 * grid * grid * max(centres.shape[1], 1)))
    for a in range(0, len(lo), step):
        s = slice(a, a + step)
        q, hs = _face_cells(lo[s], hi[s], grid)
        mid = ((lo[s] + hi[s]) / 2)[:, None]  # float32 about the box's centre
        v = _nearest((q - mid).astype(np.float32), (centres[s] - mid).astype(np.float32),
                     np.where(present[s], radii[s], np.inf).astype(np.float32),
                     gaps[s].astype(np.float32))
        # float32 rounding of the squared distances: a relative 1e-5 of the box, added
        out[s] = ((v + np.sqrt((hs * hs).sum(-1))).max(axis=1)
                  + 1e-5 * np.abs(hi[s] - lo[s]).max(axis=1))
    return out


def _measure_nodes(agg: Aggregates, p: np.ndarray) -> None:
    """Boxes, bounds, spheres and content of nodes `p` above the blocks, from their children
    (measured already)."""
    child = agg.child[p]
    has = child >= 0
    ch = np.where(has, child, 0)
    wlo, whi = agg.world_box(ch)  # the children's world boxes (their own where aligned)
    lo = np.where(has[..., None], wlo, np.inf).min(axis=1)
    hi = np.where(has[..., None], whi, -np.inf).max(axis=1)
    cax = np.where(has[..., None, None], agg.axes[ch], np.eye(3))
    reach = _children_reach(lo, hi, agg.lo[ch], agg.hi[ch], np.where(has, agg.reach[ch], np.inf),
                            cax)
    # content to box: a child's content lies in its box or within its error of it, so no
    # deeper in the node's box than that box's deepest point plus the error; and none inside
    # the box is farther than half its thinnest side from a face
    deep = np.where(has, _deepest(wlo, whi, lo, hi) + agg.error[ch], 0).max(axis=1)
    own = np.minimum(deep, np.maximum((hi - lo).min(axis=1) / 2, 0))
    agg.lo[p], agg.hi[p], agg.reach[p], agg.axes[p] = lo, hi, reach, np.eye(3)
    agg.error[p] = np.maximum(np.maximum(own, reach), np.where(has, agg.error[ch], 0).max(axis=1))
    agg.content[p] = np.where(has, agg.content[ch], 0).sum(axis=1)
    agg.centre[p] = c = (lo + hi) / 2
    agg.radius[p] = np.where(has, np.linalg.norm(agg.centre[ch] - c[:, None], axis=2)
                             + agg.radius[ch], 0).max(axis=1)
