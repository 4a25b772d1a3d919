"""Structure checks of a built DAG and its BVH (like bevy's `verify_bvh`).

- `check_limits`: cluster sizes (1..128 triangles, <= 255 distinct wedges), no degenerate triangle.
- `check_dag`: the DAG's structure (membership partition, sources, levels, level 0 = the original
  triangles), monotonic errors, nested spheres, honest cluster bounds, a single root reached from
  every cluster.
- `check_bvh`: every group exactly once as a leaf, nested spheres and boxes, exact max errors,
  depths, no cycles, fanout.
"""

from __future__ import annotations

import itertools

from dataclasses import dataclass
from typing import Any

import numpy as np

from preprocess.lod import BVH_EMPTY, Bvh, LodDag
from preprocess.tess.limits import (
    BVH_FANOUT,
    MAX_CLUSTER_TRIANGLES,
    MAX_CLUSTER_VERTICES,
    ROOT_ERROR,
)
from preprocess.verify.common import (
    MAX_REPORTED,
    cluster_of_triangles,
    containment_excess,
    fail,
    first_few,
    sphere_str,
    triangle_index,
)

__all__ = ["check_bvh", "check_dag", "check_limits"]


# --------------------------------------------------------------------------------------------------
# Limits


# the structure checks run over whole clusters this many triangles at a time (~250 MB of
# float64 corners and their spheres): over the 40M triangles of a 20M-triangle scan's DAG at
# once, their float64 corners and int64 keys held 16 GB, and 2M at a time ~0.9 GB
CHECK_CHUNK = 1 << 19


def cluster_chunks(off: np.ndarray) -> list[tuple[int, int]]:
    """Ranges [a, b) of clusters (`cluster_tri_offset` ``off``) of about `CHECK_CHUNK` triangles
    each, whole clusters."""
    c = len(off) - 1
    cuts = np.searchsorted(off, np.arange(CHECK_CHUNK, off[-1], CHECK_CHUNK))
    bounds = np.unique(np.concatenate([[0], cuts, [c]]).clip(0, c))
    return [(int(a), int(b)) for a, b in itertools.pairwise(bounds.tolist())]


def check_limits(dag: LodDag, max_triangles: int = MAX_CLUSTER_TRIANGLES,
                 max_vertices: int = MAX_CLUSTER_VERTICES) -> dict[str, Any]:
    """Cluster sizes and triangle sanity.

    Every cluster owns 1..max_triangles triangles (`cluster_tri_offset` (c + 1,) increasing from 0
    to T) indexing at most max_vertices distinct wedges; every wedge id is in range; no triangle is
    degenerate (two equal position ids).

    Returns {"clusters", "triangles", "max_triangles", "max_vertices", "level0_fill"}: the largest
    cluster's triangle and wedge counts, and the mean level-0 triangles per cluster / max_triangles.
    """
    c = dag.cluster_count
    tris = np.asarray(dag.triangles)
    off = np.asarray(dag.cluster_tri_offset, np.int64)
    if tris.ndim != 2 or tris.shape[1] != 3:
        fail(f"triangles has shape {tris.shape}, expected (T, 3)")
    if off.shape != (c + 1,):
        fail(f"cluster_tri_offset has shape {off.shape}, expected ({c + 1},) for {c} clusters")
    if c == 0:
        fail("the DAG has no cluster")
    if off[0] != 0 or off[-1] != len(tris):
        fail(f"cluster_tri_offset runs from {off[0]} to {off[-1]}, expected 0 to {len(tris)}")
    counts = np.diff(off)
    for i in first_few(counts < 1):
        fail(f"cluster {i} has {counts[i]} triangles (must be 1..{max_triangles})")
    for i in first_few(counts > max_triangles):
        fail(f"cluster {i} (level {dag.cluster_level[i]}) has {counts[i]} triangles "
             f"(limit {max_triangles})")
    k = int(dag.mesh.wedge_position.shape[0])
    if tris.min() < 0 or tris.max() >= k:
        t = int(np.flatnonzero((tris < 0).any(axis=1) | (tris >= k).any(axis=1))[0])
        fail(f"triangle {t} has wedge ids {tris[t].tolist()} out of range 0..{k - 1}")
    owner = cluster_of_triangles(dag)
    wedges = np.zeros(c, np.int64)
    wpos = np.asarray(dag.mesh.wedge_position)
    for a, b in cluster_chunks(off):  # whole clusters, a few million triangles at a time
        rows = slice(off[a], off[b])
        keys = np.unique(owner[rows].astype(np.int64)[:, None] * k + tris[rows].astype(np.int64))
        wedges += np.bincount(keys // k, minlength=c)
        p = wpos[tris[rows]]
        degenerate = (p[:, 0] == p[:, 1]) | (p[:, 1] == p[:, 2]) | (p[:, 2] == p[:, 0])
        for t in first_few(degenerate):
            fail(f"triangle {off[a] + t} of cluster {owner[off[a] + t]} is degenerate: position "
                 f"ids {p[t].tolist()}")
    for i in first_few(wedges > max_vertices):
        fail(f"cluster {i} (level {dag.cluster_level[i]}, {counts[i]} triangles) has {wedges[i]} "
             f"distinct vertices (wedges), limit {max_vertices}")
    level0 = np.asarray(dag.cluster_level) == 0
    fill = float(counts[level0].mean() / max_triangles) if level0.any() else 0.0
    return {
        "clusters": c,
        "triangles": len(tris),
        "max_triangles": int(counts.max()),
        "max_vertices": int(wedges.max()),
        "level0_fill": fill,
    }


# --------------------------------------------------------------------------------------------------
# DAG structure, errors and bounds


def _canonical_triangles(tris: np.ndarray) -> np.ndarray:
    """(m, 3) int64 triangles rotated so that the smallest id comes first (orientation kept), rows
    sorted: equal arrays mean equal multisets of oriented triangles."""
    t = np.asarray(tris, np.int64)
    r = np.argmin(t, axis=1)
    rows = np.arange(len(t))
    out = np.stack([t[rows, r], t[rows, (r + 1) % 3], t[rows, (r + 2) % 3]], axis=1)
    return out[np.lexsort(out.T[::-1])]


def _check_shapes(dag: LodDag) -> None:
    c, g = dag.cluster_count, dag.group_count
    shapes = {
        "cluster_level": (c,), "cluster_group": (c,), "cluster_source_group": (c,),
        "cluster_bounds": (c, 4), "cluster_self_sphere": (c, 4), "cluster_self_error": (c,),
        "group_level": (g,), "group_cluster_offset": (g + 1,), "group_clusters": (c,),
        "group_sphere": (g, 4), "group_error": (g,),
    }
    for name, shape in shapes.items():
        actual = np.shape(getattr(dag, name))
        if actual != shape:
            fail(f"{name} has shape {actual}, expected {shape} ({c} clusters, {g} groups)")
    for name in ("cluster_bounds", "cluster_self_sphere", "cluster_self_error", "group_sphere"):
        a = np.asarray(getattr(dag, name))
        bad = ~np.isfinite(a).reshape(len(a), -1).all(axis=1)
        if a.ndim == 2:
            bad |= a[:, 3] < 0
        for i in first_few(bad):
            fail(f"{name}[{i}] = {a[i].tolist()} is not finite or has a negative radius")


def _check_membership(dag: LodDag) -> None:
    c, g = dag.cluster_count, dag.group_count
    goff = np.asarray(dag.group_cluster_offset, np.int64)
    members = np.asarray(dag.group_clusters, np.int64)
    cgroup = np.asarray(dag.cluster_group, np.int64)
    if goff[0] != 0 or goff[-1] != c or (np.diff(goff) < 0).any():
        fail(f"group_cluster_offset must increase from 0 to {c}: starts {goff[0]}, ends "
             f"{goff[-1]}, decreasing at {first_few(np.diff(goff) < 0).tolist()}")
    for j in first_few(np.diff(goff) == 0):
        fail(f"group {j} has no member cluster")
    if members.min() < 0 or members.max() >= c:
        fail(f"group_clusters holds ids out of range 0..{c - 1}")
    times = np.bincount(members, minlength=c)
    for i in first_few(times != 1):
        fail(f"cluster {i} is listed {times[i]} times in group_clusters (membership must be a "
             f"partition: exactly once)")
    if cgroup.min() < 0 or cgroup.max() >= g:
        i = int(np.flatnonzero((cgroup < 0) | (cgroup >= g))[0])
        fail(f"cluster {i} has cluster_group {cgroup[i]}, out of range 0..{g - 1}")
    listed_in = np.repeat(np.arange(g), np.diff(goff))
    for k in first_few(cgroup[members] != listed_in):
        i = members[k]
        fail(f"cluster {i} is listed in group {listed_in[k]} but its cluster_group is "
             f"{cgroup[i]}")


def _check_levels(dag: LodDag) -> dict[str, Any]:
    g = dag.group_count
    level = np.asarray(dag.cluster_level, np.int64)
    glevel = np.asarray(dag.group_level, np.int64)
    src = np.asarray(dag.cluster_source_group, np.int64)
    cgroup = np.asarray(dag.cluster_group, np.int64)
    for i in first_few(level < 0):
        fail(f"cluster {i} has level {level[i]}")
    for i in first_few((src < -1) | (src >= g)):
        fail(f"cluster {i} has source group {src[i]}, out of range -1..{g - 1}")
    for i in first_few((src == -1) != (level == 0)):
        fail(f"cluster {i} has level {level[i]} and source group {src[i]}: the source group is "
             f"-1 exactly at level 0")
    gen = np.flatnonzero(src >= 0)
    for i in gen[first_few(level[gen] <= glevel[src[gen]])]:
        fail(f"cluster {i} (level {level[i]}) was generated from group {src[i]} of level "
             f"{glevel[src[i]]}: a generated cluster must be coarser than its source group")
    for i in first_few(level > glevel[cgroup]):
        fail(f"cluster {i} has level {level[i]} but its group {cgroup[i]} has level "
             f"{glevel[cgroup[i]]}: a group's level is at least its members' levels")
    for j in gen[first_few(src[gen] == dag.root_group)]:
        fail(f"cluster {j} was generated from the root group {dag.root_group}, which is never "
             f"simplified")
    lo = np.full(g, np.iinfo(np.int64).max)
    np.minimum.at(lo, cgroup, level)
    mixed = int((lo != glevel).sum())
    return {"mixed_level_groups": mixed}


def _check_level0(dag: LodDag) -> None:
    level0 = np.flatnonzero(np.asarray(dag.cluster_level) == 0)
    off = np.asarray(dag.cluster_tri_offset, np.int64)
    original = np.asarray(dag.mesh.triangles)
    held = int((off[level0 + 1] - off[level0]).sum())
    if held != len(original):
        fail(f"level 0 holds {held} triangles, the original mesh {len(original)}: level 0 "
             f"must be exactly the original triangles")
    # the two multisets of oriented triangles compared by a 128-bit sum of their hashes, a
    # million rows at a time: their sorted copies held ~10 GB at 100M triangles (a difference
    # is then found by sorting, where that fits)
    tris = np.asarray(dag.triangles)
    ours = np.zeros(2, np.uint64)
    for a, b in cluster_chunks(off):
        rows = level0[(level0 >= a) & (level0 < b)]
        ours += _multiset_hash(tris[triangle_index(dag, rows)])
    theirs = np.zeros(2, np.uint64)
    for lo in range(0, len(original), CHECK_CHUNK):
        theirs += _multiset_hash(original[lo:lo + CHECK_CHUNK])
    if np.array_equal(ours, theirs):
        return
    where = ""
    if held <= EXACT_LEVEL0_TRIANGLES:
        a = _canonical_triangles(tris[triangle_index(dag, level0)])
        b = _canonical_triangles(original)
        k = int(np.flatnonzero((a != b).any(axis=1))[0])
        where = f": sorted row {k} is {a[k].tolist()} at level 0 but {b[k].tolist()} in the mesh"
    fail(f"level 0 triangles differ from the original mesh's{where} (wedge ids, orientation "
         f"kept)")


# a level 0 that differs from the original is shown by its first differing sorted row up to
# this many triangles (the sort's copies: ~100 bytes a triangle)
EXACT_LEVEL0_TRIANGLES = 20_000_000


def _multiset_hash(tris: np.ndarray) -> np.ndarray:
    """(2,) uint64: two sums (mod 2^64) over the rows of tris (t, 3) of a hash of each triangle
    rotated to start at its smallest id (orientation kept): equal for equal multisets of
    oriented triangles, different otherwise but for a chance of 2^-128."""
    t = np.asarray(tris, np.int64)
    r = np.argmin(t, axis=1)
    rows = np.arange(len(t))
    a, b, c = (t[rows, (r + k) % 3].astype(np.uint64) for k in range(3))
    out = np.zeros(2, np.uint64)
    with np.errstate(over="ignore"):
        for i, (p, q, s) in enumerate(((0x9E3779B97F4A7C15, 0xC2B2AE3D27D4EB4F,
                                        0x165667B19E3779F9),
                                       (0xD6E8FEB86659FD93, 0xFF51AFD7ED558CCD,
                                        0xC4CEB9FE1A85EC53))):
            h = a * np.uint64(p) + b * np.uint64(q) + c * np.uint64(s)
            h ^= h >> np.uint64(31)
            h *= np.uint64(0xBF58476D1CE4E5B9)
            h ^= h >> np.uint64(29)
            out[i] = h.sum(dtype=np.uint64)
    return out


def _check_errors(dag: LodDag) -> None:
    level = np.asarray(dag.cluster_level)
    src = np.asarray(dag.cluster_source_group, np.int64)
    cgroup = np.asarray(dag.cluster_group, np.int64)
    own = np.asarray(dag.cluster_self_error, np.float32)
    gerr = np.asarray(dag.group_error, np.float32)
    for j in first_few(~np.isfinite(gerr) | (gerr < 0)):
        fail(f"group {j} has error {gerr[j]}: errors are finite and >= 0")
    for i in first_few(own < 0):
        fail(f"cluster {i} has a negative self error {own[i]}")
    for i in first_few((level == 0) & (own != 0)):
        fail(f"level 0 cluster {i} has self error {own[i]}: the original surface has error 0 "
             f"(else no threshold below it draws anything there)")
    for i in first_few(own > gerr[cgroup]):
        fail(f"error not monotonic: cluster {i} (level {level[i]}) has self error {own[i]:.9g} > "
             f"error {gerr[cgroup[i]]:.9g} of its parent group {cgroup[i]}")
    gen = np.flatnonzero(src >= 0)
    for i in gen[first_few(own[gen] != gerr[src[gen]])]:
        fail(f"cluster {i} has self error {own[i]:.9g} but was generated from group {src[i]} of "
             f"error {gerr[src[i]]:.9g}: clusters generated from a group carry its error")
    sphere = np.asarray(dag.cluster_self_sphere, np.float32)
    gsphere = np.asarray(dag.group_sphere, np.float32)
    for i in gen[first_few((sphere[gen] != gsphere[src[gen]]).any(axis=1))]:
        fail(f"cluster {i} has self sphere {sphere_str(sphere[i])} but was generated from group "
             f"{src[i]} with sphere {sphere_str(gsphere[src[i]])}: they must be equal")


def _check_spheres(dag: LodDag) -> dict[str, Any]:
    cgroup = np.asarray(dag.cluster_group, np.int64)
    sphere = np.asarray(dag.cluster_self_sphere, np.float32)
    gsphere = np.asarray(dag.group_sphere, np.float32)
    excess = containment_excess(gsphere[cgroup], sphere[:, :3], sphere[:, 3])
    for i in first_few(excess > 0):
        fail(f"sphere not nested: the self sphere {sphere_str(sphere[i])} of cluster {i} pokes "
             f"{excess[i]:.6g} out of the sphere {sphere_str(gsphere[cgroup[i]])} of its parent "
             f"group {cgroup[i]}")
    # cluster_bounds must hold every vertex of the cluster
    tris = np.asarray(dag.triangles)
    off = np.asarray(dag.cluster_tri_offset, np.int64)
    pos = np.asarray(dag.mesh.positions, np.float64)
    wpos = np.asarray(dag.mesh.wedge_position)
    owner = cluster_of_triangles(dag)
    bounds = np.asarray(dag.cluster_bounds, np.float32)
    for a, b in cluster_chunks(off):  # whole clusters, a few million triangles at a time
        rows = slice(off[a], off[b])
        mine = np.repeat(owner[rows], 3)
        verts = pos[wpos[tris[rows].reshape(-1)]]
        excess = containment_excess(bounds[mine], verts, np.zeros(len(verts)))
        for k in first_few(excess > 0):
            i = mine[k]
            fail(f"cluster_bounds {sphere_str(bounds[i])} of cluster {i} misses its vertex "
                 f"{verts[k].tolist()} by {excess[k]:.6g}")
    # reported, not required: the LOD sphere of the group vs the clusters' own geometry
    outside = containment_excess(gsphere[cgroup], bounds[:, :3], bounds[:, 3]) > 0
    return {"bounds_outside_group_sphere": int(outside.sum())}


def _check_root(dag: LodDag) -> None:
    g = dag.group_count
    gerr = np.asarray(dag.group_error, np.float32)
    roots = np.flatnonzero(gerr >= np.float32(ROOT_ERROR))
    if len(roots) != 1:
        fail(f"{len(roots)} groups have error ROOT_ERROR ({roots[:MAX_REPORTED].tolist()}): "
             f"exactly one, the root, must")
    if roots[0] != dag.root_group:
        fail(f"group {roots[0]} has error ROOT_ERROR but root_group is {dag.root_group}")
    if gerr[roots[0]] != np.float32(ROOT_ERROR):
        fail(f"the root group's error is {gerr[roots[0]]}, expected ROOT_ERROR {ROOT_ERROR}")
    if dag.root_group != g - 1:
        fail(f"root_group is {dag.root_group}; the root is the last group ({g - 1})")
    # single root: every group reaches the root along "member of g -> cluster generated from g ->
    # its group"; walk the reversed edges from the root
    src = np.asarray(dag.cluster_source_group, np.int64)
    cgroup = np.asarray(dag.cluster_group, np.int64)
    gen = src >= 0
    edge_from, edge_to = src[gen], cgroup[gen]  # group -> group one step coarser
    order = np.argsort(edge_to, kind="stable")
    edge_from, edge_to = edge_from[order], edge_to[order]
    starts = np.searchsorted(edge_to, np.arange(g + 1))
    reached = np.zeros(g, bool)
    reached[dag.root_group] = True
    frontier = np.array([dag.root_group])
    while len(frontier):
        prev = np.concatenate([edge_from[starts[j] : starts[j + 1]] for j in frontier])
        prev = np.unique(prev)
        frontier = prev[~reached[prev]]
        reached[frontier] = True
    if not reached.all():
        lost = np.flatnonzero(~reached)
        dead = lost[np.bincount(src[gen], minlength=g)[lost] == 0]  # generate nothing: the cause
        j = int(dead[0] if len(dead) else lost[0])
        made = np.flatnonzero(src == j)
        how = (f"it generated clusters {made[:MAX_REPORTED].tolist()} in groups "
               f"{np.unique(cgroup[made])[:MAX_REPORTED].tolist()}" if len(made)
               else "it generated no cluster")
        members = np.flatnonzero(cgroup == j)[:MAX_REPORTED].tolist()
        fail(f"{int((~reached).sum())} groups do not reach the root group {dag.root_group}, e.g. "
             f"group {j} (level {dag.group_level[j]}, members {members}): {how}")


def check_dag(dag: LodDag) -> dict[str, Any]:
    """The structure, errors and bounds of a DAG (docs/ARCHITECTURE.md "Offline" step 4).

    - shapes agree, spheres and errors are finite, radii and errors >= 0;
    - membership is a partition: each cluster is listed exactly once, in the group named by its
      cluster_group, and no group is empty;
    - cluster_source_group is -1 exactly at level 0; a generated cluster's level is above its
      source group's level; a group's level is at least its members' levels (clusters that could
      not be simplified are carried to a coarser group, so a group may mix levels); nothing is
      generated from the root;
    - level 0 is exactly the original mesh's triangles (as oriented wedge triangles);
    - errors: level 0 self errors are 0; self_error <= group_error of the parent group; a generated
      cluster's self error and self sphere equal its source group's (bit for bit);
    - spheres: a group's sphere contains its members' self spheres; cluster_bounds contains the
      cluster's vertices;
    - root: exactly one group has error ROOT_ERROR, it is root_group and the last group, and every
      group (hence every cluster) reaches it through member -> generated chains.

    Returns {"levels", "groups", "clusters_per_level", "groups_per_level", "triangles_per_level",
    "mixed_level_groups", "bounds_outside_group_sphere", "min_error", "max_error"}: min_error and
    max_error over the nonzero finite group errors (None when there is none).
    """
    _check_shapes(dag)
    _check_membership(dag)
    figures: dict[str, Any] = {}
    figures.update(_check_levels(dag))
    _check_level0(dag)
    _check_errors(dag)
    figures.update(_check_spheres(dag))
    _check_root(dag)
    level = np.asarray(dag.cluster_level)
    tri_counts = np.diff(np.asarray(dag.cluster_tri_offset, np.int64))
    gerr = np.asarray(dag.group_error, np.float64)
    finite = gerr[(gerr < ROOT_ERROR) & (gerr > 0)]
    figures.update({
        "levels": dag.level_count,
        "groups": dag.group_count,
        "clusters_per_level": np.bincount(level).tolist(),
        "groups_per_level": np.bincount(np.asarray(dag.group_level)).tolist(),
        "triangles_per_level": np.bincount(level, weights=tri_counts).astype(np.int64).tolist(),
        "min_error": float(finite.min()) if len(finite) else None,
        "max_error": float(finite.max()) if len(finite) else None,
    })
    return figures




# --------------------------------------------------------------------------------------------------
# BVH


@dataclass
class _BvhEdges:
    """A BVH's edges, once `_check_bvh_links` holds them sound: slot kinds (N, F), node -> child
    node (pn -> child_nodes), node -> leaf group (pg -> leaf_groups), and the nodes' depths."""

    is_node: np.ndarray
    is_group: np.ndarray
    pn: np.ndarray
    child_nodes: np.ndarray
    pg: np.ndarray
    leaf_groups: np.ndarray
    depth: np.ndarray


def _check_bvh_links(dag: LodDag, bvh: Bvh) -> _BvhEdges:
    """Shapes, child refs, single parents, leaves exactly once, depths and reach from the
    root (see `check_bvh`)."""
    g = dag.group_count
    children = np.asarray(bvh.node_children, np.int64)
    n = len(children)
    if children.ndim != 2 or children.shape[1] > BVH_FANOUT or n == 0:
        fail(f"node_children has shape {children.shape}, expected (N >= 1, <= {BVH_FANOUT})")
    for name, shape in (("node_sphere", (n, 4)), ("node_box", (n, 6)), ("node_max_error", (n,)),
                        ("node_depth", (n,))):
        if np.shape(getattr(bvh, name)) != shape:
            fail(f"{name} has shape {np.shape(getattr(bvh, name))}, expected {shape}")
    is_node = children >= 0
    is_group = children < BVH_EMPTY
    bad = (is_node & (children >= n)) | (is_group & (-2 - children >= g))
    for u in first_few(bad.any(axis=1)):
        fail(f"node {u} has child refs {children[u].tolist()} out of range ({n} nodes, "
             f"{g} groups)")
    for u in first_few(~(is_node | is_group).any(axis=1)):
        fail(f"node {u} has no child")
    parent_node = np.repeat(np.arange(n), children.shape[1]).reshape(children.shape)
    child_nodes = children[is_node]
    times = np.bincount(child_nodes, minlength=n)
    if times[0]:
        fail(f"the root node 0 is the child of node {parent_node[is_node][child_nodes == 0][0]}")
    for v in first_few(times[1:] != 1) + 1:
        fail(f"node {v} is the child of {times[v]} nodes (must be exactly one)")
    leaf_groups = -2 - children[is_group]
    leaf_times = np.bincount(leaf_groups, minlength=g)
    for j in first_few(leaf_times != 1):
        fail(f"group {j} appears {leaf_times[j]} times as a BVH leaf (must be exactly once)")
    depth = np.asarray(bvh.node_depth, np.int64)
    if depth[0] != 0:
        fail(f"the root node has depth {depth[0]}")
    pn = parent_node[is_node]
    for k in first_few(depth[child_nodes] != depth[pn] + 1):
        fail(f"node {child_nodes[k]} has depth {depth[child_nodes[k]]} but its parent node "
             f"{pn[k]} has depth {depth[pn[k]]}")
    reached = np.zeros(n, bool)
    reached[0] = True
    frontier = np.array([0])
    while len(frontier):
        nxt = children[frontier]
        nxt = nxt[nxt >= 0]
        if reached[nxt].any():
            fail(f"cycle: node {nxt[reached[nxt]][0]} is reached twice from the root")
        reached[nxt] = True
        frontier = nxt
    for v in first_few(~reached):
        fail(f"node {v} is not reached from the root")
    return _BvhEdges(is_node, is_group, pn, child_nodes, parent_node[is_group], leaf_groups,
                     depth)


def _check_bvh_bounds(dag: LodDag, bvh: Bvh, e: _BvhEdges) -> None:
    """Node spheres and boxes hold their child nodes, their leaf groups and those groups' member
    clusters (see `check_bvh`)."""
    g = dag.group_count
    pn, child_nodes, pg, leaf_groups = e.pn, e.child_nodes, e.pg, e.leaf_groups
    # containment
    nsphere = np.asarray(bvh.node_sphere, np.float32)
    ex = containment_excess(nsphere[pn], nsphere[child_nodes, :3], nsphere[child_nodes, 3])
    for k in first_few(ex > 0):
        fail(f"BVH node {pn[k]} {sphere_str(nsphere[pn[k]])} does not contain its child node "
             f"{child_nodes[k]} {sphere_str(nsphere[child_nodes[k]])}: out by {ex[k]:.6g}")
    gsphere = np.asarray(dag.group_sphere, np.float32)
    ex = containment_excess(nsphere[pg], gsphere[leaf_groups, :3], gsphere[leaf_groups, 3])
    for k in first_few(ex > 0):
        fail(f"BVH node {pg[k]} {sphere_str(nsphere[pg[k]])} does not contain its leaf group "
             f"{leaf_groups[k]} {sphere_str(gsphere[leaf_groups[k]])}: out by {ex[k]:.6g}")
    leaf_node = np.zeros(g, np.int64)
    leaf_node[leaf_groups] = pg
    cbounds = np.asarray(dag.cluster_bounds, np.float32)
    holder = leaf_node[np.asarray(dag.cluster_group, np.int64)]
    ex = containment_excess(nsphere[holder], cbounds[:, :3], cbounds[:, 3])
    for i in first_few(ex > 0):
        fail(f"BVH node {holder[i]} {sphere_str(nsphere[holder[i]])} does not contain the bounds "
             f"{sphere_str(cbounds[i])} of cluster {i} of its leaf group: out by {ex[i]:.6g}")
    # boxes (frustum and occlusion): contain the child nodes' boxes and every vertex of the
    # member clusters of the leaf groups
    box = np.asarray(bvh.node_box, np.float32)
    out = np.maximum(box[child_nodes, 3:] - box[pn, 3:], box[pn, :3] - box[child_nodes, :3])
    for k in first_few(out.max(axis=1) > 0):
        fail(f"BVH node {pn[k]} box {box[pn[k]].tolist()} does not contain the box of its child "
             f"node {child_nodes[k]} {box[child_nodes[k]].tolist()}")
    cbox = dag.cluster_boxes()
    out = np.maximum(cbox[:, 3:] - box[holder, 3:], box[holder, :3] - cbox[:, :3])
    for i in first_few(out.max(axis=1) > 0):
        fail(f"BVH node {holder[i]} box {box[holder[i]].tolist()} does not contain the "
             f"triangles of cluster {i} of its leaf group (box {cbox[i].tolist()})")


def check_bvh(dag: LodDag, bvh: Bvh) -> dict[str, Any]:
    """The 8-ary BVH over the groups (docs/ARCHITECTURE.md "Offline" step 5).

    - node_children (N, F) with F <= BVH_FANOUT; each slot is BVH_EMPTY, a node 0..N-1 or a group
      ref (-2 - group); every node has at least one child;
    - node 0 is the root: never a child; every other node is the child of exactly one node, every
      group a leaf exactly once;
    - node_depth is 0 at the root and parent + 1 below (with single parents this also rules out
      cycles); every node is reached from the root;
    - node spheres contain their child nodes' spheres, their leaf groups' spheres and the bounds
      of those groups' member clusters (so that culling a node by its sphere loses no geometry);
    - node_max_error equals the max group_error of the groups below (exactly: a max of float32).

    Returns {"nodes", "depth", "mean_fanout", "leaves"}.
    """
    e = _check_bvh_links(dag, bvh)
    _check_bvh_bounds(dag, bvh, e)
    n = len(e.is_node)
    pn, child_nodes, pg, leaf_groups, depth = e.pn, e.child_nodes, e.pg, e.leaf_groups, e.depth
    # max errors, bottom up
    expected = np.full(n, -np.inf, np.float32)
    np.maximum.at(expected, pg, np.asarray(dag.group_error, np.float32)[leaf_groups])
    for d in range(int(depth.max()), 0, -1):
        at = depth[child_nodes] == d
        np.maximum.at(expected, pn[at], expected[child_nodes[at]])
    actual = np.asarray(bvh.node_max_error, np.float32)
    for u in first_few(actual != expected):
        fail(f"BVH node {u} has max error {actual[u]:.9g}, but the max error of the groups below "
             f"it is {expected[u]:.9g}")
    slots = (e.is_node | e.is_group).sum(axis=1)
    return {"nodes": n, "depth": int(depth.max()), "mean_fanout": float(slots.mean()),
            "leaves": int(e.is_group.sum())}
