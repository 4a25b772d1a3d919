"""The 8-ary BVH over the groups of all levels.

Each LOD level gets its own subtree (Nanite does the same): groups of one level are similar in size
and error, so a whole subtree of fine levels is rejected at its root when its largest error already
projects below the threshold. A top tree joins the level subtrees. Subtrees are built top-down by
splitting the sphere centres at count medians along the longest axis, three times per node (eight
children). Nodes are numbered breadth-first, so node 0 is the root and each depth is contiguous
(the per-level traversal dispatches one depth at a time).

A node's sphere contains the LOD spheres of the groups below it and also the tight bounds of their
member clusters (a simplified cluster may poke slightly out of its group's LOD sphere): the LOD
test projects the node's max error from it (a bigger sphere only projects a bigger error, so it
stays conservative). A node's *box* is the axis-aligned box of every triangle below it: the
runtime's frustum and occlusion tests use it. LOD spheres nest and grow level by level, and so do
spheres merged from spheres: on a unit sphere the root's LOD sphere has radius 2.3, a sphere
around its clusters' bounds 2.2, its box is [-1, 1]^3; an occlusion test of a bound twice too big
rarely succeeds.
"""

from __future__ import annotations

import numpy as np

from preprocess.tess.limits import BVH_FANOUT
from preprocess.dag import merge_spheres
from preprocess.lod import BVH_EMPTY, Bvh, LodDag, bvh_group_ref


class _Nodes:
    def __init__(self) -> None:
        self.children: list[list[int]] = []
        self.sphere: list[np.ndarray] = []
        self.box: list[np.ndarray] = []
        self.error: list[float] = []

    def add(self, refs: list[int], spheres: np.ndarray, boxes: np.ndarray,
            errors: np.ndarray) -> int:
        self.children.append(refs)
        self.sphere.append(merge_spheres(spheres))
        self.box.append(np.concatenate([boxes[:, :3].min(axis=0), boxes[:, 3:].max(axis=0)]))
        self.error.append(float(errors.max()))
        return len(self.children) - 1


def _split(idx: np.ndarray, centers: np.ndarray, parts: int) -> list[np.ndarray]:
    """Split idx into `parts` (a power of two) spatially coherent pieces of near-equal count."""
    if parts == 1 or len(idx) <= 1:
        return [idx]
    c = centers[idx]
    axis = int(np.argmax(c.max(axis=0) - c.min(axis=0)))
    order = idx[np.argsort(c[:, axis], kind="stable")]
    half = len(order) // 2
    return _split(order[:half], centers, parts // 2) + _split(order[half:], centers, parts // 2)


def _build(nodes: _Nodes, refs: np.ndarray, spheres: np.ndarray, boxes: np.ndarray,
           errors: np.ndarray) -> int:
    """A subtree over items (child references with their LOD spheres, boxes and errors);
    returns its node."""
    if len(refs) <= BVH_FANOUT:
        return nodes.add([int(r) for r in refs], spheres, boxes, errors)
    pieces = [p for p in _split(np.arange(len(refs)), spheres[:, :3], BVH_FANOUT) if len(p)]
    child = [_build(nodes, refs[p], spheres[p], boxes[p], errors[p]) for p in pieces]
    return nodes.add(child, np.stack([nodes.sphere[c] for c in child]),
                     np.stack([nodes.box[c] for c in child]),
                     np.array([nodes.error[c] for c in child]))


def group_boxes(dag: LodDag) -> np.ndarray:
    """(g, 6) float32: per group, the box of its members' triangles."""
    cb = dag.cluster_boxes()[np.asarray(dag.group_clusters, np.int64)]
    off = np.asarray(dag.group_cluster_offset, np.int64)
    # reduceat along axis 0 of an (n, 3) array runs a strided loop per segment (0.6 s for the
    # 1M sphere's groups): reduce the transposed, contiguous rows instead
    lo = np.minimum.reduceat(np.ascontiguousarray(cb[:, :3].T), off[:-1], axis=1).T
    hi = np.maximum.reduceat(np.ascontiguousarray(cb[:, 3:].T), off[:-1], axis=1).T
    return np.concatenate([lo, hi], axis=1).astype(np.float32)


def _group_reach(dag: LodDag) -> np.ndarray:
    """(g, 4) float32: per group, a sphere containing its LOD sphere and its members' bounds."""
    out = np.asarray(dag.group_sphere, np.float32).copy()
    off = np.asarray(dag.group_cluster_offset, np.int64)
    members = np.asarray(dag.group_clusters, np.int64)
    bounds = np.asarray(dag.cluster_bounds, np.float32)
    # only groups with a member poking out need a merge; measured in float64: the squares of
    # float32 differences underflow to 0 on a tiny mesh (a unit sphere scaled to 1e-30 found no
    # member poking out, and its BVH nodes missed their clusters' bounds)
    centers = out[:, :3].astype(np.float64)
    owner = np.repeat(np.arange(len(out)), np.diff(off))
    b = bounds[members].astype(np.float64)
    poke = np.linalg.norm(b[:, :3] - centers[owner], axis=1) + b[:, 3] > out[owner, 3]
    for g in np.unique(owner[poke]):
        out[g] = merge_spheres(np.concatenate([out[g : g + 1], b[off[g] : off[g + 1]]]))
    return out


def build_bvh(dag: LodDag) -> Bvh:
    """8-ary BVH whose leaves are the groups of `dag` (every group exactly once)."""
    nodes = _Nodes()
    reach = _group_reach(dag)
    tight = group_boxes(dag)
    level_roots = []
    for level in np.unique(dag.group_level):
        groups = np.flatnonzero(dag.group_level == level)
        refs = np.array([bvh_group_ref(int(g)) for g in groups], np.int64)
        level_roots.append(_build(nodes, refs, reach[groups], tight[groups],
                                  dag.group_error[groups]))
    roots = np.array(level_roots, np.int64)
    if len(roots) == 1:
        root = int(roots[0])
    else:
        root = _build(nodes, roots, np.stack([nodes.sphere[r] for r in roots]),
                      np.stack([nodes.box[r] for r in roots]),
                      np.array([nodes.error[r] for r in roots]))
    # breadth-first renumbering: root first, depths contiguous
    new_id = {root: 0}
    queue = [root]
    depth = [0]
    for old in queue:
        for ref in nodes.children[old]:
            if ref >= 0:
                new_id[ref] = len(queue)
                queue.append(ref)
                depth.append(depth[new_id[old]] + 1)
    n = len(queue)
    children = np.full((n, BVH_FANOUT), BVH_EMPTY, np.int32)
    for i, old in enumerate(queue):
        refs = [new_id[r] if r >= 0 else r for r in nodes.children[old]]
        children[i, : len(refs)] = refs
    return Bvh(
        node_sphere=np.stack([nodes.sphere[o] for o in queue]).astype(np.float32),
        node_box=np.stack([nodes.box[o] for o in queue]).astype(np.float32),
        node_max_error=np.array([nodes.error[o] for o in queue], np.float32),
        node_children=children,
        node_depth=np.array(depth, np.int32),
    )
