"""Checks of a built cluster LOD DAG and its BVH (like bevy's `verify_bvh`), for the tests and for
`preprocess --verify`.

Every check either returns a small dict of measured figures or raises `VerifyError` (an
`AssertionError`) whose message names the offending cluster, group or node and the numbers.

- `check_limits`: cluster sizes (1..128 triangles, <= 255 distinct wedges), no degenerate triangle.
- `check_dag`: the DAG's structure (membership partition, sources, levels, level 0 = the original
  triangles), monotonic errors, nested spheres, honest cluster bounds, a single root reached from
  every cluster.
- `check_bvh`: every group exactly once as a leaf, nested spheres, exact max errors, depths, no
  cycles, fanout.
- `check_cut`: a set of clusters covers the surface exactly once (by the DAG), is watertight and
  consistently oriented (by its edges) and has the original's area (within a tolerance).
- `check_honest_error`: points sampled on clusters lie within the clusters' stored error of the
  original mesh, at the builder's exact distances (`preprocess.distance`).
- `check_all`: all of the above, with cuts at many thresholds, view-independent and from cameras,
  selected by the cut rule (`preprocess.cut`) and through the BVH.
- `check_source_groups` (`check_packed` on a packed asset or an open file): the source group that
  every cluster record of the pages names, against the groups section (what streaming relies on).

Containment of spheres is tested with a slack of `SPHERE_REL_EPS` of the outer radius plus a few
float32 ulps of the coordinates (spheres are stored as float32).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from preprocess.tess.pages import page_clusters
from preprocess.tess.records import NO_GROUP
from preprocess.tess.limits import (
    BVH_FANOUT,
    MAX_CLUSTER_TRIANGLES,
    MAX_CLUSTER_VERTICES,
    ROOT_ERROR,
)
from preprocess.cut import level_cut, projected_error, select_cut, select_cut_bvh
from preprocess.distance import farthest_distance, max_distance_to_mesh
from preprocess.lod import BVH_EMPTY, Bvh, LodDag
from preprocess.mesh import Mesh

__all__ = [
    "SPHERE_REL_EPS",
    "VerifyError",
    "check_all",
    "check_bvh",
    "check_cut",
    "check_dag",
    "check_honest_error",
    "check_limits",
    "check_packed",
    "check_source_groups",
    "packed_records",
]

SPHERE_REL_EPS = 1e-5  # containment slack, relative to the outer sphere's radius
_F32_SLACK = 4.0 * float(np.finfo(np.float32).eps)  # ulps of the coordinates' magnitude
_MAX_REPORTED = 5  # offenders listed in a message


class VerifyError(AssertionError):
    """A built DAG, BVH or cut breaks an invariant; the message names what and by how much."""


def _fail(message: str) -> None:
    raise VerifyError(message)


def _first(mask: np.ndarray) -> np.ndarray:
    """The first few indices where mask is true."""
    return np.flatnonzero(mask)[:_MAX_REPORTED]


def _containment_excess(outer: np.ndarray, inner_center: np.ndarray,
                        inner_radius: np.ndarray) -> np.ndarray:
    """How far each inner sphere pokes out of its outer sphere beyond the allowed slack.

    outer (n, 4), inner_center (n, 3), inner_radius (n,) -> (n,) float64; > 0 means not contained.
    """
    o = np.asarray(outer, np.float64)
    c = np.asarray(inner_center, np.float64)
    r = np.asarray(inner_radius, np.float64)
    reach = np.linalg.norm(c - o[:, :3], axis=1) + r
    magnitude = np.maximum(np.abs(o[:, :3]).max(axis=1), np.abs(c).max(axis=1)) + o[:, 3]
    slack = SPHERE_REL_EPS * o[:, 3] + _F32_SLACK * magnitude
    return reach - o[:, 3] - slack


def _sphere_str(s: np.ndarray) -> str:
    return f"(center {s[0]:.6g} {s[1]:.6g} {s[2]:.6g}, radius {s[3]:.6g})"


def _cluster_of_triangles(dag: LodDag) -> np.ndarray:
    """(T,) int32: the cluster owning each triangle of dag.triangles."""
    counts = np.diff(np.asarray(dag.cluster_tri_offset, np.int64))
    return np.repeat(np.arange(dag.cluster_count, dtype=np.int32), counts)


def _triangle_index(dag: LodDag, clusters: np.ndarray) -> np.ndarray:
    """(t,) int64: the rows of dag.triangles owned by the given clusters, cluster by cluster."""
    off = np.asarray(dag.cluster_tri_offset, np.int64)
    start = off[clusters]
    count = off[clusters + 1] - start
    total = int(count.sum())
    if total == 0:
        return np.zeros(0, np.int64)
    base = np.repeat(start - np.concatenate([[0], np.cumsum(count)[:-1]]), count)
    return base + np.arange(total, dtype=np.int64)


# --------------------------------------------------------------------------------------------------
# Limits


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
        _fail(f"triangles has shape {tris.shape}, expected (T, 3)")
    if off.shape != (c + 1,):
        _fail(f"cluster_tri_offset has shape {off.shape}, expected ({c + 1},) for {c} clusters")
    if c == 0:
        _fail("the DAG has no cluster")
    if off[0] != 0 or off[-1] != len(tris):
        _fail(f"cluster_tri_offset runs from {off[0]} to {off[-1]}, expected 0 to {len(tris)}")
    counts = np.diff(off)
    for i in _first(counts < 1):
        _fail(f"cluster {i} has {counts[i]} triangles (must be 1..{max_triangles})")
    for i in _first(counts > max_triangles):
        _fail(f"cluster {i} (level {dag.cluster_level[i]}) has {counts[i]} triangles "
              f"(limit {max_triangles})")
    k = int(dag.mesh.wedge_position.shape[0])
    if tris.min() < 0 or tris.max() >= k:
        t = int(np.flatnonzero((tris < 0).any(axis=1) | (tris >= k).any(axis=1))[0])
        _fail(f"triangle {t} has wedge ids {tris[t].tolist()} out of range 0..{k - 1}")
    owner = _cluster_of_triangles(dag)
    keys = np.unique(owner.astype(np.int64)[:, None] * k + tris.astype(np.int64))
    wedges = np.bincount(keys // k, minlength=c)
    for i in _first(wedges > max_vertices):
        _fail(f"cluster {i} (level {dag.cluster_level[i]}, {counts[i]} triangles) has {wedges[i]} "
              f"distinct vertices (wedges), limit {max_vertices}")
    p = np.asarray(dag.mesh.wedge_position)[tris]
    degenerate = (p[:, 0] == p[:, 1]) | (p[:, 1] == p[:, 2]) | (p[:, 2] == p[:, 0])
    for t in _first(degenerate):
        _fail(f"triangle {t} of cluster {owner[t]} is degenerate: position ids {p[t].tolist()}")
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
            _fail(f"{name} has shape {actual}, expected {shape} ({c} clusters, {g} groups)")
    for name in ("cluster_bounds", "cluster_self_sphere", "cluster_self_error", "group_sphere"):
        a = np.asarray(getattr(dag, name))
        bad = ~np.isfinite(a).reshape(len(a), -1).all(axis=1)
        if a.ndim == 2:
            bad |= a[:, 3] < 0
        for i in _first(bad):
            _fail(f"{name}[{i}] = {a[i].tolist()} is not finite or has a negative radius")


def _check_membership(dag: LodDag) -> None:
    c, g = dag.cluster_count, dag.group_count
    goff = np.asarray(dag.group_cluster_offset, np.int64)
    members = np.asarray(dag.group_clusters, np.int64)
    cgroup = np.asarray(dag.cluster_group, np.int64)
    if goff[0] != 0 or goff[-1] != c or (np.diff(goff) < 0).any():
        _fail(f"group_cluster_offset must increase from 0 to {c}: starts {goff[0]}, ends "
              f"{goff[-1]}, decreasing at {_first(np.diff(goff) < 0).tolist()}")
    for j in _first(np.diff(goff) == 0):
        _fail(f"group {j} has no member cluster")
    if members.min() < 0 or members.max() >= c:
        _fail(f"group_clusters holds ids out of range 0..{c - 1}")
    times = np.bincount(members, minlength=c)
    for i in _first(times != 1):
        _fail(f"cluster {i} is listed {times[i]} times in group_clusters (membership must be a "
              f"partition: exactly once)")
    if cgroup.min() < 0 or cgroup.max() >= g:
        i = int(np.flatnonzero((cgroup < 0) | (cgroup >= g))[0])
        _fail(f"cluster {i} has cluster_group {cgroup[i]}, out of range 0..{g - 1}")
    listed_in = np.repeat(np.arange(g), np.diff(goff))
    for k in _first(cgroup[members] != listed_in):
        i = members[k]
        _fail(f"cluster {i} is listed in group {listed_in[k]} but its cluster_group is "
              f"{cgroup[i]}")


def _check_levels(dag: LodDag) -> dict[str, Any]:
    g = dag.group_count
    level = np.asarray(dag.cluster_level, np.int64)
    glevel = np.asarray(dag.group_level, np.int64)
    src = np.asarray(dag.cluster_source_group, np.int64)
    cgroup = np.asarray(dag.cluster_group, np.int64)
    for i in _first(level < 0):
        _fail(f"cluster {i} has level {level[i]}")
    for i in _first((src < -1) | (src >= g)):
        _fail(f"cluster {i} has source group {src[i]}, out of range -1..{g - 1}")
    for i in _first((src == -1) != (level == 0)):
        _fail(f"cluster {i} has level {level[i]} and source group {src[i]}: the source group is "
              f"-1 exactly at level 0")
    gen = np.flatnonzero(src >= 0)
    for i in gen[_first(level[gen] <= glevel[src[gen]])]:
        _fail(f"cluster {i} (level {level[i]}) was generated from group {src[i]} of level "
              f"{glevel[src[i]]}: a generated cluster must be coarser than its source group")
    for i in _first(level > glevel[cgroup]):
        _fail(f"cluster {i} has level {level[i]} but its group {cgroup[i]} has level "
              f"{glevel[cgroup[i]]}: a group's level is at least its members' levels")
    for j in gen[_first(src[gen] == dag.root_group)]:
        _fail(f"cluster {j} was generated from the root group {dag.root_group}, which is never "
              f"simplified")
    lo = np.full(g, np.iinfo(np.int64).max)
    np.minimum.at(lo, cgroup, level)
    mixed = int((lo != glevel).sum())
    return {"mixed_level_groups": mixed}


def _check_level0(dag: LodDag) -> None:
    level0 = np.flatnonzero(np.asarray(dag.cluster_level) == 0)
    ours = np.asarray(dag.triangles)[_triangle_index(dag, level0)]
    original = np.asarray(dag.mesh.triangles)
    if len(ours) != len(original):
        _fail(f"level 0 holds {len(ours)} triangles, the original mesh {len(original)}: level 0 "
              f"must be exactly the original triangles")
    a, b = _canonical_triangles(ours), _canonical_triangles(original)
    differ = (a != b).any(axis=1)
    if differ.any():
        k = int(np.flatnonzero(differ)[0])
        _fail(f"level 0 triangles differ from the original mesh's: sorted row {k} is "
              f"{a[k].tolist()} at level 0 but {b[k].tolist()} in the mesh (wedge ids, "
              f"orientation kept)")


def _check_errors(dag: LodDag) -> None:
    level = np.asarray(dag.cluster_level)
    src = np.asarray(dag.cluster_source_group, np.int64)
    cgroup = np.asarray(dag.cluster_group, np.int64)
    own = np.asarray(dag.cluster_self_error, np.float32)
    gerr = np.asarray(dag.group_error, np.float32)
    for j in _first(~np.isfinite(gerr) | (gerr < 0)):
        _fail(f"group {j} has error {gerr[j]}: errors are finite and >= 0")
    for i in _first(own < 0):
        _fail(f"cluster {i} has a negative self error {own[i]}")
    for i in _first((level == 0) & (own != 0)):
        _fail(f"level 0 cluster {i} has self error {own[i]}: the original surface has error 0 "
              f"(else no threshold below it draws anything there)")
    for i in _first(own > gerr[cgroup]):
        _fail(f"error not monotonic: cluster {i} (level {level[i]}) has self error {own[i]:.9g} > "
              f"error {gerr[cgroup[i]]:.9g} of its parent group {cgroup[i]}")
    gen = np.flatnonzero(src >= 0)
    for i in gen[_first(own[gen] != gerr[src[gen]])]:
        _fail(f"cluster {i} has self error {own[i]:.9g} but was generated from group {src[i]} of "
              f"error {gerr[src[i]]:.9g}: clusters generated from a group carry its error")
    sphere = np.asarray(dag.cluster_self_sphere, np.float32)
    gsphere = np.asarray(dag.group_sphere, np.float32)
    for i in gen[_first((sphere[gen] != gsphere[src[gen]]).any(axis=1))]:
        _fail(f"cluster {i} has self sphere {_sphere_str(sphere[i])} but was generated from group "
              f"{src[i]} with sphere {_sphere_str(gsphere[src[i]])}: they must be equal")


def _check_spheres(dag: LodDag) -> dict[str, Any]:
    cgroup = np.asarray(dag.cluster_group, np.int64)
    sphere = np.asarray(dag.cluster_self_sphere, np.float32)
    gsphere = np.asarray(dag.group_sphere, np.float32)
    excess = _containment_excess(gsphere[cgroup], sphere[:, :3], sphere[:, 3])
    for i in _first(excess > 0):
        _fail(f"sphere not nested: the self sphere {_sphere_str(sphere[i])} of cluster {i} pokes "
              f"{excess[i]:.6g} out of the sphere {_sphere_str(gsphere[cgroup[i]])} of its parent "
              f"group {cgroup[i]}")
    # cluster_bounds must hold every vertex of the cluster
    tris = np.asarray(dag.triangles)
    pos = np.asarray(dag.mesh.positions, np.float64)
    owner = np.repeat(_cluster_of_triangles(dag), 3)
    verts = pos[np.asarray(dag.mesh.wedge_position)[tris.reshape(-1)]]
    bounds = np.asarray(dag.cluster_bounds, np.float32)
    excess = _containment_excess(bounds[owner], verts, np.zeros(len(verts)))
    for k in _first(excess > 0):
        i = owner[k]
        _fail(f"cluster_bounds {_sphere_str(bounds[i])} of cluster {i} misses its vertex "
              f"{verts[k].tolist()} by {excess[k]:.6g}")
    # reported, not required: the LOD sphere of the group vs the clusters' own geometry
    outside = _containment_excess(gsphere[cgroup], bounds[:, :3], bounds[:, 3]) > 0
    return {"bounds_outside_group_sphere": int(outside.sum())}


def _check_root(dag: LodDag) -> None:
    g = dag.group_count
    gerr = np.asarray(dag.group_error, np.float32)
    roots = np.flatnonzero(gerr >= np.float32(ROOT_ERROR))
    if len(roots) != 1:
        _fail(f"{len(roots)} groups have error ROOT_ERROR ({roots[:_MAX_REPORTED].tolist()}): "
              f"exactly one, the root, must")
    if roots[0] != dag.root_group:
        _fail(f"group {roots[0]} has error ROOT_ERROR but root_group is {dag.root_group}")
    if gerr[roots[0]] != np.float32(ROOT_ERROR):
        _fail(f"the root group's error is {gerr[roots[0]]}, expected ROOT_ERROR {ROOT_ERROR}")
    if dag.root_group != g - 1:
        _fail(f"root_group is {dag.root_group}; the root is the last group ({g - 1})")
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
        how = (f"it generated clusters {made[:_MAX_REPORTED].tolist()} in groups "
               f"{np.unique(cgroup[made])[:_MAX_REPORTED].tolist()}" if len(made)
               else "it generated no cluster")
        members = np.flatnonzero(cgroup == j)[:_MAX_REPORTED].tolist()
        _fail(f"{int((~reached).sum())} groups do not reach the root group {dag.root_group}, e.g. "
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
# Source groups in the packed pages


def packed_records(pages: np.ndarray) -> np.ndarray:
    """All cluster records (CLUSTER_DTYPE) of (P, page_size) uint8 pages, page after page."""
    recs = [page_clusters(np.ascontiguousarray(pages[p])) for p in range(len(pages))]
    if not recs:
        return np.zeros(0, page_clusters(np.zeros(16, np.uint8)).dtype)
    return np.concatenate(recs)


def check_source_groups(groups: np.ndarray, records: np.ndarray,
                        root_group: int | None = None) -> dict[str, Any]:
    """The source group of every cluster record, against the asset's groups section.

    groups: GROUP_DTYPE (g,); records: CLUSTER_DTYPE, every cluster of the asset once (see
    `packed_records`); root_group: default the one group with error ROOT_ERROR.

    - source_group is NO_GROUP exactly at level 0, else a group index in range, never the root;
    - a cluster produced by group P is one level coarser: level == P.level + 1;
    - its LOD bound is P's, bit for bit: self_error == P.error and self_sphere == P.sphere (the
      builder hands every cluster it splits out of P's simplification P's sphere and error, so the
      cut's "own error <= tau" of a cluster is "P's error <= tau", the test that makes a cut
      with partial residency crack-free);
    - a level-0 cluster's LOD sphere is its own tight bound: self_sphere == bounds, self_error 0;
    - every group but the root produced at least one cluster (a group is only kept when its
      simplification succeeded; the root is never simplified).

    Returns {"generated": clusters with a source group, "level0": clusters without,
    "max_produced": the most clusters one group produced}.
    """
    g = len(groups)
    src = np.asarray(records["source_group"], np.int64)
    level = np.asarray(records["level"], np.int64)
    ids = np.asarray(records["cluster"], np.int64)
    glevel = np.asarray(groups["level"], np.int64)
    gerr = np.asarray(groups["error"], np.float32)
    if root_group is None:
        roots = np.flatnonzero(gerr >= np.float32(ROOT_ERROR))
        if len(roots) != 1:
            _fail(f"{len(roots)} groups have error ROOT_ERROR: cannot tell the root group")
        root_group = int(roots[0])
    none = src == NO_GROUP
    for k in _first(~none & ((src < 0) | (src >= g))):
        _fail(f"cluster {ids[k]} has source group {src[k]}, out of range 0..{g - 1} "
              f"(or NO_GROUP {NO_GROUP:#x})")
    for k in _first(none != (level == 0)):
        _fail(f"cluster {ids[k]} has level {level[k]} and source group {src[k]:#x}: the source "
              f"group is NO_GROUP exactly at level 0")
    gen = np.flatnonzero(~none)
    s = src[gen]
    for k in gen[_first(s == root_group)]:
        _fail(f"cluster {ids[k]} names the root group {root_group} as its source; the root is "
              f"never simplified")
    for k in gen[_first(level[gen] != glevel[s] + 1)]:
        _fail(f"cluster {ids[k]} has level {level[k]} but its source group {src[k]} has level "
              f"{glevel[src[k]]}: a produced cluster is exactly one level coarser")
    own = np.asarray(records["self_error"], np.float32)
    for k in gen[_first(own[gen] != gerr[s])]:
        _fail(f"cluster {ids[k]} has self error {own[k]:.9g} but its source group {src[k]} has "
              f"error {gerr[src[k]]:.9g}: they must be equal")
    sphere = np.ascontiguousarray(records["self_sphere"], np.float32)
    gsphere = np.ascontiguousarray(groups["sphere"], np.float32)
    bits, gbits = sphere.view(np.uint32), gsphere.view(np.uint32)
    for k in gen[_first((bits[gen] != gbits[s]).any(axis=1))]:
        _fail(f"cluster {ids[k]} has self sphere {_sphere_str(sphere[k])} but its source group "
              f"{src[k]} has sphere {_sphere_str(gsphere[src[k]])}: they must be equal, bit for "
              f"bit")
    bounds = np.ascontiguousarray(records["bounds"], np.float32).view(np.uint32)
    lv0 = np.flatnonzero(none)
    for k in lv0[_first((bits[lv0] != bounds[lv0]).any(axis=1) | (own[lv0] != 0))]:
        _fail(f"level-0 cluster {ids[k]} has self sphere {_sphere_str(sphere[k])} and self error "
              f"{own[k]:.9g}: its LOD bound must be its own bounds sphere and error 0")
    produced = np.bincount(s, minlength=g)
    barren = produced == 0
    barren[root_group] = False
    for j in _first(barren):
        _fail(f"group {j} (level {glevel[j]}) is the source of no cluster: every group but the "
              f"root {root_group} produced the clusters of its simplification")
    return {"generated": len(gen), "level0": len(lv0),
            "max_produced": int(produced.max()) if g else 0}


def check_packed(asset: Any) -> dict[str, Any]:
    """`check_source_groups` on a packed asset (`preprocess.pack.PackedAsset`) or an open `.tess`
    file (`preprocess.tess.TessFile`): the records of all its pages against its groups."""
    pages = asset.pages if isinstance(getattr(asset, "pages", None), np.ndarray) \
        else asset.pages_array()
    root = asset.meta.get("root_group")
    return check_source_groups(asset.sections["groups"], packed_records(pages),
                               None if root is None else int(root))


# --------------------------------------------------------------------------------------------------
# BVH


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
    g = dag.group_count
    children = np.asarray(bvh.node_children, np.int64)
    n = len(children)
    if children.ndim != 2 or children.shape[1] > BVH_FANOUT or n == 0:
        _fail(f"node_children has shape {children.shape}, expected (N >= 1, <= {BVH_FANOUT})")
    for name, shape in (("node_sphere", (n, 4)), ("node_box", (n, 6)), ("node_max_error", (n,)),
                        ("node_depth", (n,))):
        if np.shape(getattr(bvh, name)) != shape:
            _fail(f"{name} has shape {np.shape(getattr(bvh, name))}, expected {shape}")
    is_node = children >= 0
    is_group = children < BVH_EMPTY
    bad = (is_node & (children >= n)) | (is_group & (-2 - children >= g))
    for u in _first(bad.any(axis=1)):
        _fail(f"node {u} has child refs {children[u].tolist()} out of range ({n} nodes, "
              f"{g} groups)")
    for u in _first(~(is_node | is_group).any(axis=1)):
        _fail(f"node {u} has no child")
    parent_node = np.repeat(np.arange(n), children.shape[1]).reshape(children.shape)
    child_nodes = children[is_node]
    times = np.bincount(child_nodes, minlength=n)
    if times[0]:
        _fail(f"the root node 0 is the child of node {parent_node[is_node][child_nodes == 0][0]}")
    for v in _first(times[1:] != 1) + 1:
        _fail(f"node {v} is the child of {times[v]} nodes (must be exactly one)")
    leaf_groups = -2 - children[is_group]
    leaf_times = np.bincount(leaf_groups, minlength=g)
    for j in _first(leaf_times != 1):
        _fail(f"group {j} appears {leaf_times[j]} times as a BVH leaf (must be exactly once)")
    depth = np.asarray(bvh.node_depth, np.int64)
    if depth[0] != 0:
        _fail(f"the root node has depth {depth[0]}")
    pn = parent_node[is_node]
    for k in _first(depth[child_nodes] != depth[pn] + 1):
        _fail(f"node {child_nodes[k]} has depth {depth[child_nodes[k]]} but its parent node "
              f"{pn[k]} has depth {depth[pn[k]]}")
    reached = np.zeros(n, bool)
    reached[0] = True
    frontier = np.array([0])
    while len(frontier):
        nxt = children[frontier]
        nxt = nxt[nxt >= 0]
        if reached[nxt].any():
            _fail(f"cycle: node {nxt[reached[nxt]][0]} is reached twice from the root")
        reached[nxt] = True
        frontier = nxt
    for v in _first(~reached):
        _fail(f"node {v} is not reached from the root")
    # containment
    nsphere = np.asarray(bvh.node_sphere, np.float32)
    ex = _containment_excess(nsphere[pn], nsphere[child_nodes, :3], nsphere[child_nodes, 3])
    for k in _first(ex > 0):
        _fail(f"BVH node {pn[k]} {_sphere_str(nsphere[pn[k]])} does not contain its child node "
              f"{child_nodes[k]} {_sphere_str(nsphere[child_nodes[k]])}: out by {ex[k]:.6g}")
    gsphere = np.asarray(dag.group_sphere, np.float32)
    pg = parent_node[is_group]
    ex = _containment_excess(nsphere[pg], gsphere[leaf_groups, :3], gsphere[leaf_groups, 3])
    for k in _first(ex > 0):
        _fail(f"BVH node {pg[k]} {_sphere_str(nsphere[pg[k]])} does not contain its leaf group "
              f"{leaf_groups[k]} {_sphere_str(gsphere[leaf_groups[k]])}: out by {ex[k]:.6g}")
    leaf_node = np.zeros(g, np.int64)
    leaf_node[leaf_groups] = pg
    cbounds = np.asarray(dag.cluster_bounds, np.float32)
    holder = leaf_node[np.asarray(dag.cluster_group, np.int64)]
    ex = _containment_excess(nsphere[holder], cbounds[:, :3], cbounds[:, 3])
    for i in _first(ex > 0):
        _fail(f"BVH node {holder[i]} {_sphere_str(nsphere[holder[i]])} does not contain the bounds "
              f"{_sphere_str(cbounds[i])} of cluster {i} of its leaf group: out by {ex[i]:.6g}")
    # boxes (frustum and occlusion): contain the child nodes' boxes and every vertex of the
    # member clusters of the leaf groups
    box = np.asarray(bvh.node_box, np.float32)
    out = np.maximum(box[child_nodes, 3:] - box[pn, 3:], box[pn, :3] - box[child_nodes, :3])
    for k in _first(out.max(axis=1) > 0):
        _fail(f"BVH node {pn[k]} box {box[pn[k]].tolist()} does not contain the box of its child "
              f"node {child_nodes[k]} {box[child_nodes[k]].tolist()}")
    cbox = dag.cluster_boxes()
    out = np.maximum(cbox[:, 3:] - box[holder, 3:], box[holder, :3] - cbox[:, :3])
    for i in _first(out.max(axis=1) > 0):
        _fail(f"BVH node {holder[i]} box {box[holder[i]].tolist()} does not contain the "
              f"triangles of cluster {i} of its leaf group (box {cbox[i].tolist()})")
    # max errors, bottom up
    expected = np.full(n, -np.inf, np.float32)
    np.maximum.at(expected, pg, np.asarray(dag.group_error, np.float32)[leaf_groups])
    for d in range(int(depth.max()), 0, -1):
        at = depth[child_nodes] == d
        np.maximum.at(expected, pn[at], expected[child_nodes[at]])
    actual = np.asarray(bvh.node_max_error, np.float32)
    for u in _first(actual != expected):
        _fail(f"BVH node {u} has max error {actual[u]:.9g}, but the max error of the groups below "
              f"it is {expected[u]:.9g}")
    slots = (is_node | is_group).sum(axis=1)
    return {"nodes": n, "depth": int(depth.max()), "mean_fanout": float(slots.mean()),
            "leaves": int(is_group.sum())}


# --------------------------------------------------------------------------------------------------
# Cuts


class _Topology:
    """Edge figures of the original mesh that `check_cut` compares a cut with."""

    def __init__(self, mesh: Mesh) -> None:
        self.n = int(mesh.positions.shape[0])
        ptri = np.asarray(mesh.position_triangles, np.int64)
        keys, counts, forward, inverse = _edges(ptri, self.n)
        self.border_vertex = np.zeros(self.n, bool)
        once = keys[counts == 1]
        self.border_vertex[once // self.n] = True
        self.border_vertex[once % self.n] = True
        self.nonmanifold_vertex = np.zeros(self.n, bool)
        many = keys[counts > 2]
        self.nonmanifold_vertex[many // self.n] = True
        self.nonmanifold_vertex[many % self.n] = True
        self.flipped_edges = int(((counts == 2) & (forward != 1)).sum())
        self.triangle_area = _areas(mesh.positions, ptri)
        self.area = float(self.triangle_area.sum())
        pos = np.asarray(mesh.positions, np.float64)
        self.radius = max(0.5 * float(np.linalg.norm(pos.max(axis=0) - pos.min(axis=0))),
                          float(np.finfo(np.float64).tiny))  # no absolute floor: tiny meshes
        self.border_edges = len(once)
        self.nonmanifold_edges = len(many)
        # the radius of the area check: A / M, M the total mean curvature (the sum over interior
        # edges of |dihedral angle| x length / 2): a sphere's radius for a sphere; for a tube of
        # radius r, 2 r, whose area a surface within e of it can change by about e / r (a thin
        # limb shrunk or flattened), and small pieces that may vanish count the same way. At
        # most half the bounding-box diagonal (flat meshes: M ~ 0)
        self.area_radius = self.radius
        order = np.argsort(inverse, kind="stable")
        key_of = inverse[order]
        pairs = np.flatnonzero((key_of[1:] == key_of[:-1]) & (counts[key_of[:-1]] == 2))
        if len(pairs):
            p = pos[ptri]
            fn = np.cross(p[:, 1] - p[:, 0], p[:, 2] - p[:, 0])
            fn /= np.maximum(np.linalg.norm(fn, axis=1, keepdims=True), 1e-300)
            t1, t2 = order[pairs] // 3, order[pairs + 1] // 3
            angle = np.arccos(np.clip(np.einsum("ij,ij->i", fn[t1], fn[t2]), -1.0, 1.0))
            k = keys[key_of[pairs]]
            length = np.linalg.norm(pos[k // self.n] - pos[k % self.n], axis=1)
            curvature = 0.5 * float((angle * length).sum())
            if curvature > 0:
                self.area_radius = min(self.radius, self.area / curvature)

def _edges(ptri: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Undirected edges of triangles (t, 3) position ids: (keys lo * n + hi, use counts, uses in
    the lo -> hi direction, inverse (3t,) of each directed edge into keys)."""
    a = ptri.reshape(-1)
    b = ptri[:, [1, 2, 0]].reshape(-1)
    lo, hi = np.minimum(a, b), np.maximum(a, b)
    keys, inverse, counts = np.unique(lo * n + hi, return_inverse=True, return_counts=True)
    forward = np.bincount(inverse, weights=(a < b), minlength=len(keys)).astype(np.int64)
    return keys, counts, forward, inverse


def _areas(positions: np.ndarray, ptri: np.ndarray) -> np.ndarray:
    p = np.asarray(positions, np.float64)
    a, b, c = p[ptri[:, 0]], p[ptri[:, 1]], p[ptri[:, 2]]
    return 0.5 * np.linalg.norm(np.cross(b - a, c - a), axis=1)


def _uniform_weights(rng: np.random.Generator, n: int) -> np.ndarray:
    """(n, 3) barycentric weights of points uniform by area over a triangle."""
    r1, r2 = np.sqrt(rng.random(n)), rng.random(n)
    return np.stack([1 - r1, r1 * (1 - r2), r1 * r2], axis=1)


def _check_coverage(dag: LodDag, cut: np.ndarray) -> None:
    """The cut covers the surface exactly once, by the DAG.

    A group whose simplification is used (collapsed) replaces its members by the clusters it
    generated. A cut is valid iff there is a set S of collapsed groups, closed downward (a collapsed
    group's members' source groups are collapsed too), without the root, such that the cut is
    exactly {clusters whose source group is in S or who are level 0} minus {clusters whose own group
    is in S}. S is forced by the cut: the closure of its clusters' source groups.
    """
    c, g = dag.cluster_count, dag.group_count
    src = np.asarray(dag.cluster_source_group, np.int64)
    cgroup = np.asarray(dag.cluster_group, np.int64)
    level = np.asarray(dag.cluster_level)
    drawn = np.zeros(c, bool)
    drawn[cut] = True
    collapsed = np.zeros(g, bool)
    s = src[cut]
    collapsed[s[s >= 0]] = True
    while True:  # downward closure, one level per pass
        feeding = collapsed[cgroup] & (src >= 0)
        new = np.unique(src[feeding])
        new = new[~collapsed[new]]
        if not len(new):
            break
        collapsed[new] = True
    if collapsed[dag.root_group]:
        _fail(f"the cut uses a simplification of the root group {dag.root_group}")
    expected = ((src < 0) | collapsed[np.maximum(src, 0)]) & ~collapsed[cgroup]
    missing = np.flatnonzero(expected & ~drawn)
    if len(missing):
        i = int(missing[0])
        why = ("it is level 0" if src[i] < 0
               else f"its source group {src[i]} is simplified away by the cut")
        _fail(f"hole in the cut: {len(missing)} clusters cover surface that nothing in the cut "
              f"covers, e.g. cluster {i} (level {level[i]}): {why}, its own group {cgroup[i]} is "
              f"not (no cluster generated from it, or coarser, is in the cut), yet it is not in "
              f"the cut")
    extra = np.flatnonzero(drawn & ~expected)
    if len(extra):
        i = int(extra[0])
        j = cgroup[i]
        made = np.flatnonzero(src == j)
        _fail(f"overlap in the cut: {len(extra)} clusters are drawn where a coarser version is "
              f"drawn too, e.g. cluster {i} (level {level[i]}) while its group {j} is simplified "
              f"away (into clusters {made[:_MAX_REPORTED].tolist()}, which are in the cut or "
              f"simplified further)")


def check_cut(dag: LodDag, cut: np.ndarray, *, area_tolerance: float = 0.05,
              _topology: _Topology | None = None) -> dict[str, Any]:
    """A set of clusters (a cut: (k,) cluster ids) draws the surface exactly once.

    (a) coverage, by the DAG: no cluster twice, and the cut is exactly the clusters that a
        downward-closed set of simplified-away groups leaves (see `_check_coverage`); an empty cut
        fails.
    (b) watertight, by the edges of the cut's triangles as position ids (so UV seams and hard
        edges do not split them): every edge is used by exactly two triangles, once in each
        direction, except: an edge whose two ends are on the original mesh's open border may be
        used once; an edge whose two ends are on the original's non-manifold edges may be used
        more than twice; and orientation is only enforced when the original is consistently
        oriented (else the number of flipped edges is reported).
    (c) area: |cut area / original area - 1| <= area_tolerance + 2 e / R, e the largest self error
        in the cut and R = A / M, A the original's area and M its total mean curvature, at most
        half its bounding-box diagonal: a surface within e of the original may lose about
        2 e M / A of its area (a sphere of radius R shrunk by e, a limb of radius R / 2
        flattened, pieces smaller than e vanishing). Beyond it, a cut that lost area passes
        only where the original (its vertices and points on its triangles) lies within e of
        it everywhere: a sheet beside a kept one (a fan's blades, leaves) goes with no area
        bound in terms of e (`_farthest_lost`).
    (d) materials (a mesh with several): every material holding at least 5% of the original's
        area keeps its area within the same tolerance plus `MATERIAL_AREA_SLACK`: a material
        border is a seam, so simplification moves it only along itself, except where a stuck
        group crosses it (permissive) and a corner's material changes sides.

    Returns {"clusters", "triangles", "levels" (clusters per level), "area_ratio",
    "border_edges", "flipped_edges", "nonmanifold_edges"}.
    """
    c = dag.cluster_count
    cut = np.asarray(cut)
    if cut.ndim != 1 or (len(cut) and not np.issubdtype(cut.dtype, np.integer)):
        _fail(f"a cut is a 1-D array of cluster ids, got shape {cut.shape} dtype {cut.dtype}")
    if len(cut) == 0:
        _fail("the cut is empty: it covers nothing")
    cut = cut.astype(np.int64)
    if cut.min() < 0 or cut.max() >= c:
        _fail(f"the cut holds cluster ids out of range 0..{c - 1}: {cut[(cut < 0) | (cut >= c)]}")
    times = np.bincount(cut, minlength=c)
    for i in _first(times > 1):
        _fail(f"cluster {i} appears {times[i]} times in the cut (overlap)")
    _check_coverage(dag, cut)

    topo = _topology or _Topology(dag.mesh)
    n = topo.n
    rows = _triangle_index(dag, cut)
    owner = np.repeat(cut, np.diff(np.asarray(dag.cluster_tri_offset, np.int64))[cut])
    ptri = np.asarray(dag.mesh.wedge_position, np.int64)[np.asarray(dag.triangles)[rows]]
    keys, counts, forward, inverse = _edges(ptri, n)
    lo, hi = keys // n, keys % n
    border = topo.border_vertex[lo] & topo.border_vertex[hi]
    nonmanifold = topo.nonmanifold_vertex[lo] & topo.nonmanifold_vertex[hi]
    ok = (counts == 2) | ((counts == 1) & border) | ((counts > 2) & nonmanifold)
    if not ok.all():
        bad = np.flatnonzero(~ok)
        e = int(bad[0])
        users = owner[np.flatnonzero(inverse == e) // 3]
        pos = dag.mesh.positions
        _fail(f"crack: {len(bad)} edges of the cut are not shared by exactly two triangles, e.g. "
              f"the edge between positions {lo[e]} {pos[lo[e]].tolist()} and {hi[e]} "
              f"{pos[hi[e]].tolist()} is used by {counts[e]} triangles (of clusters "
              f"{users.tolist()}, levels {dag.cluster_level[users].tolist()})"
              + ("; its ends are on the original border" if border[e] else ""))
    flipped = (counts == 2) & (forward != 1)
    if topo.flipped_edges == 0 and flipped.any():
        e = int(np.flatnonzero(flipped)[0])
        users = owner[np.flatnonzero(inverse == e) // 3]
        _fail(f"orientation: {int(flipped.sum())} edges are used twice in the same direction, "
              f"e.g. the edge {lo[e]}-{hi[e]} by clusters {users.tolist()} (levels "
              f"{dag.cluster_level[users].tolist()}); the original mesh is consistently oriented")
    area = float(_areas(dag.mesh.positions, ptri).sum())
    ratio = area / topo.area if topo.area > 0 else float("nan")
    error = float(np.asarray(dag.cluster_self_error, np.float64)[cut].max())
    allowed = area_tolerance + 2.0 * error / topo.area_radius
    far = None
    if not abs(ratio - 1.0) <= allowed:
        # lost: where the original lies within the error of the cut everywhere, what went was
        # a sheet beside a kept one (a fan's blades, leaves on a branch), which no area bound
        # in terms of the error allows for
        far = _farthest_lost(dag, ptri) if ratio < 1.0 else np.inf
        if not far <= error + 2e-5 * topo.radius:  # float32 rounding, as check_honest_error
            _fail(f"the cut's area is {area:.6g}, {ratio:.4f} times the original's "
                  f"{topo.area:.6g} (tolerance {allowed:.4g}: {area_tolerance} + 2 x max error "
                  f"{error:.4g} / radius {topo.area_radius:.4g})"
                  + (f", and the original lies up to {far:.4g} from it" if ratio < 1.0 else ""))
    material_ratio = _check_material_areas(dag, rows, ptri, topo, allowed)
    return {
        "clusters": len(cut),
        "triangles": len(rows),
        "levels": np.bincount(dag.cluster_level[cut]).tolist(),
        "area_ratio": ratio,
        "lost_distance": far,  # where the area check fell back on it (else None)
        "material_area_ratio": material_ratio,
        "border_edges": int((counts == 1).sum()),
        "flipped_edges": int(flipped.sum()),
        "nonmanifold_edges": int((counts > 2).sum()),
    }


MATERIAL_AREA_SLACK = 0.1  # (d) of `check_cut`: what a permissive crossing may move
HONEST_REFINE = 4  # `check_all`: the farthest samples a cluster whose triangles are refined
LOST_SAMPLES = 200_000  # (c) of `check_cut`: the most points on the original it measures


def _farthest_lost(dag: LodDag, ptri: np.ndarray) -> float:
    """The largest distance to a cut's triangles (ptri: position triangles) of the original's
    vertices and of points on its triangles (4 each by area, at most LOST_SAMPLES in all)."""
    pos = np.asarray(dag.mesh.positions, np.float64)
    orig = np.asarray(dag.mesh.position_triangles, np.int64)
    rng = np.random.default_rng(0)
    cum = np.cumsum(_areas(pos, orig))
    pick = np.searchsorted(cum, rng.random(min(4 * len(orig), LOST_SAMPLES)) * cum[-1],
                           side="right").clip(0, len(orig) - 1)
    w = _uniform_weights(rng, len(pick))
    points = np.concatenate([pos, np.einsum("pk,pkd->pd", w, pos[orig[pick]])])
    # the Hausdorff early break: most points cost one triangle test
    return farthest_distance(points, dag.mesh.positions, ptri.astype(np.int32))


def _check_material_areas(dag: LodDag, rows: np.ndarray, ptri: np.ndarray, topo: _Topology,
                          allowed: float) -> tuple[float, float] | None:
    """(min, max) over the materials of (their area in the cut / in the original), those with
    at least 5% of the area; None for a mesh of one material. Fails beyond the tolerance."""
    mesh = dag.mesh
    if mesh.wedge_material is None:
        return None
    orig = mesh.triangle_materials()
    k = int(orig.max()) + 1
    base = np.bincount(orig, weights=topo.triangle_area, minlength=k)
    mats = mesh.triangle_materials(np.asarray(dag.triangles)[rows])
    if len(mats) and mats.max() >= k:
        _fail(f"a triangle of the cut uses material {int(mats.max())}; the mesh has {k}")
    now = np.bincount(mats, weights=_areas(mesh.positions, ptri), minlength=k)
    big = base >= 0.05 * base.sum()
    ratios = now[big] / base[big]
    for m, r in zip(np.flatnonzero(big), ratios, strict=True):
        if not abs(r - 1.0) <= allowed + MATERIAL_AREA_SLACK:
            _fail(f"material {m} covers {r:.3f} times its original area in the cut (tolerance "
                  f"{allowed + MATERIAL_AREA_SLACK:.3g}): its border moved")
    return float(ratios.min()), float(ratios.max())


# --------------------------------------------------------------------------------------------------
# Honest errors


def check_honest_error(dag: LodDag, cut: np.ndarray, *, samples_per_cluster: int = 64,
                       rng_seed: int = 0, tolerance: float | None = None,
                       distance=None, refine: int = 0) -> dict[str, Any]:
    """Every drawn surface lies within its stored error of the original mesh.

    For each cluster of `cut` ((k,) ids, any set of clusters) above level 0, samples
    `samples_per_cluster` points uniformly by area on its triangles, plus all its vertices, and
    measures their distance to the original mesh (all of `dag.mesh`'s triangles); each must be <=
    the cluster's geometric error (its self_error where the DAG has none) + tolerance. Level 0
    clusters are the original triangles (`check_dag` checks that), at distance 0, and are
    skipped.

    tolerance: default 1e-5 of the mesh's bounding-box diagonal: float32 rounding of positions,
    sample points and stored errors (the preprocessor measures against the same float32 positions).
    distance: f(points (p, 3), positions (n, 3), pos_triangles (m, 3)) -> (p,) float64 distances;
    default `preprocess.distance.max_distance_to_mesh` (the builder's exact distances).
    refine: the triangles of each cluster's `refine` farthest samples are sampled again, densely
    (see `_measured_distances`).

    Returns {"clusters", "points", "tolerance", "max_distance", "max_ratio", "level_ratios"}:
    max_ratio is the largest measured distance / stored error over clusters with a nonzero error;
    level_ratios, per level, the largest stored error / the largest measured distance (how
    tight, as `error_tightness` with these samples).
    """
    pos = np.asarray(dag.mesh.positions, np.float64)
    diag = float(np.linalg.norm(pos.max(axis=0) - pos.min(axis=0)))
    tol = 1e-5 * diag if tolerance is None else float(tolerance)
    cut = np.unique(np.asarray(cut, np.int64))
    cut = cut[np.asarray(dag.cluster_level)[cut] > 0]
    if not len(cut):
        return {"clusters": 0, "points": 0, "tolerance": tol, "max_distance": 0.0,
                "max_ratio": 0.0}
    points, point_cluster, measured = _measured_distances(dag, cut, samples_per_cluster,
                                                          rng_seed, distance, refine)
    stored = _distance_error(dag)[point_cluster]
    over = measured - (stored + tol)
    if (over > 0).any():
        k = int(np.argmax(over))
        i = point_cluster[k]
        bad = np.unique(point_cluster[over > 0])
        _fail(f"dishonest error: cluster {i} (level {dag.cluster_level[i]}) stores error "
              f"{stored[k]:.6g} but its surface point {points[k].tolist()} lies {measured[k]:.6g} "
              f"from the original mesh (tolerance {tol:.3g}); {len(bad)} clusters exceed, e.g. "
              f"{bad[:_MAX_REPORTED].tolist()}")
    nz = stored > 0
    return {
        "clusters": len(cut),
        "points": len(points),
        "tolerance": tol,
        "max_distance": float(measured.max()),
        "max_ratio": float((measured[nz] / stored[nz]).max()) if nz.any() else 0.0,
        "level_ratios": _level_ratios(dag, point_cluster, measured),
    }


def _distance_error(dag: LodDag) -> np.ndarray:
    """(c,) float64: what each cluster claims as its surface's largest distance to the original:
    its geometric error where the DAG knows it, else its LOD error (which is at least that)."""
    err = dag.cluster_geometric_error
    return np.asarray(dag.cluster_self_error if err is None else err, np.float64)


def _level_ratios(dag: LodDag, point_cluster: np.ndarray, measured: np.ndarray) -> list[float]:
    """Per level above 0 (in order), the largest stored error over the largest measured
    distance of the level's sampled clusters (inf where nothing was measured above 0)."""
    level = np.asarray(dag.cluster_level)
    stored = _distance_error(dag)
    per_cluster = np.zeros(len(level))
    np.maximum.at(per_cluster, point_cluster, measured)
    seen = np.zeros(len(level), bool)
    seen[point_cluster] = True
    out = []
    for lv in range(1, int(level.max()) + 1):
        ids = np.flatnonzero((level == lv) & seen)
        if not len(ids):
            continue
        m = per_cluster[ids].max()
        out.append(float(stored[ids].max() / m) if m > 0 else float("inf"))
    return out


def error_tightness(dag: LodDag, *, samples_per_cluster: int = 256, rng_seed: int = 0,
                    distance=None, refine: int = 4) -> list[dict[str, Any]]:
    """How close each level's stored error is to the real distance of its surface to the
    original mesh: per level above 0, the largest stored error of its clusters and the largest
    measured distance (`samples_per_cluster` points by area on each cluster plus its vertices,
    then the triangles of each cluster's `refine` farthest samples on a dense grid, against all
    of the original triangles), their ratio (1: as tight as measurable; below 1:
    dishonest), and the median over clusters of stored / measured. The stored error is the
    geometric one where the DAG has it (the LOD error may be larger: the shading term).

    That distance runs one way, from the level's surface to the original. The other way, the
    original's vertices to the surface drawn at that level (its clusters and the finer ones not
    yet grouped: `preprocess.cut.level_cut`), sees surface that vanished (a coarsest level of a
    closed mesh loses its tips; small pieces vanish at an error); the builder's errors hold both
    ("dropped" in `preprocess.dag`), so "measured_two_sided" (the larger of the two) and
    "ratio_two_sided" are the Hausdorff distance and the ratio to it.

    Returns [{"level", "clusters", "stored", "measured", "ratio", "median_ratio",
    "measured_two_sided", "ratio_two_sided"}]."""
    level = np.asarray(dag.cluster_level)
    cut = np.flatnonzero(level > 0)
    if not len(cut):
        return []
    _, point_cluster, measured = _measured_distances(dag, cut, samples_per_cluster, rng_seed,
                                                     distance, refine)
    per_cluster = np.zeros(len(level))
    np.maximum.at(per_cluster, point_cluster, measured)
    stored = _distance_error(dag)
    dist_fn = distance or max_distance_to_mesh
    pos = np.asarray(dag.mesh.positions, np.float64)
    wpos = np.asarray(dag.mesh.wedge_position, np.int64)
    rows = []
    for lv in range(1, int(level.max()) + 1):
        ids = np.flatnonzero(level == lv)
        if not len(ids):  # a level every group of which waited for neighbours
            continue
        s, mz = stored[ids], per_cluster[ids]
        ok = mz > 0
        surface = wpos[np.asarray(dag.triangles)[_triangle_index(dag, level_cut(dag, lv))]]
        back = float(np.max(dist_fn(pos, dag.mesh.positions, surface.astype(np.int32))))
        both = max(float(mz.max()), back)
        rows.append({"level": lv, "clusters": len(ids), "stored": float(s.max()),
                     "measured": float(mz.max()),
                     "ratio": float(s.max() / mz.max()) if mz.max() > 0 else float("inf"),
                     "median_ratio": float(np.median(s[ok] / mz[ok])) if ok.any() else 0.0,
                     "measured_two_sided": both,
                     "ratio_two_sided": float(s.max() / both) if both > 0 else float("inf")})
    return rows


def _measured_distances(dag: LodDag, cut: np.ndarray, samples_per_cluster: int, rng_seed: int,
                        distance, refine: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Sample points on the clusters `cut` (samples_per_cluster by area on each, the centroid
    of every triangle, and every vertex once per cluster), the cluster of each, and its distance
    to the original mesh. (Without the centroids, a cluster of 128 triangles with 64 samples left
    half its triangles unsampled: the bunny's levels read 1.30-2.47 where the distance the
    builder found gave 1.14-1.21.)

    refine: then, on each cluster, the triangles of its `refine` farthest samples are sampled
    again on a 10-step barycentric grid (55 points each): the distance of a coarse surface to a
    scan peaks in narrow spots that uniform samples miss (igea level 2: the largest of 2,048
    random samples per cluster was 0.79 of the distance at a point the builder found)."""
    pos = np.asarray(dag.mesh.positions, np.float64)
    dist_fn = distance or max_distance_to_mesh
    rng = np.random.default_rng(rng_seed)
    off = np.asarray(dag.cluster_tri_offset, np.int64)
    rows = _triangle_index(dag, cut)
    counts = off[cut + 1] - off[cut]
    owner = np.repeat(cut, counts)
    ptri = np.asarray(dag.mesh.wedge_position, np.int64)[np.asarray(dag.triangles)[rows]]
    # samples: a triangle of the cluster by area, then uniform barycentrics
    cum = np.cumsum(_areas(pos, ptri))
    first = np.concatenate([[0], np.cumsum(counts)[:-1]])
    before = np.where(first > 0, cum[np.maximum(first - 1, 0)], 0.0)
    total = cum[first + counts - 1] - before
    sample_owner = np.repeat(np.arange(len(cut)), samples_per_cluster)
    target = before[sample_owner] + rng.random(len(sample_owner)) * total[sample_owner]
    pick = np.searchsorted(cum, target, side="right")
    last = first + counts - 1
    pick = np.clip(pick, first[sample_owner], last[sample_owner])
    w = _uniform_weights(rng, len(pick))
    # then every triangle's centroid and edge midpoints
    fixed = np.array([[1 / 3, 1 / 3, 1 / 3], [0.5, 0.5, 0.0], [0.0, 0.5, 0.5], [0.5, 0.0, 0.5]])
    pick = np.concatenate([pick, np.repeat(np.arange(len(rows)), len(fixed))])
    sample_owner = np.concatenate([sample_owner,
                                   np.repeat(np.arange(len(cut)), counts * len(fixed))])
    w = np.concatenate([w, np.tile(fixed, (len(rows), 1))])
    samples = np.einsum("pk,pkd->pd", w, pos[ptri[pick]])
    # vertices, once per cluster
    vkeys = np.unique(np.repeat(owner, 3) * len(pos) + ptri.reshape(-1))
    points = np.concatenate([samples, pos[vkeys % len(pos)]])
    point_cluster = np.concatenate([cut[sample_owner], vkeys // len(pos)])
    original = np.asarray(dag.mesh.position_triangles, np.int32)
    measured = np.asarray(dist_fn(points, dag.mesh.positions, original), np.float64)
    if refine > 0 and len(samples):
        # each cluster's `refine` farthest samples, by a sort on (cluster, -distance)
        near = measured[: len(samples)]
        order = np.lexsort((-near, sample_owner))
        start = np.searchsorted(sample_owner[order], np.arange(len(cut)))
        rank = np.arange(len(order)) - start[sample_owner[order]]
        tris = np.unique(pick[order[rank < refine]])
        g = np.array([(i / 9, j / 9, (9 - i - j) / 9) for i in range(10)
                      for j in range(10 - i)])
        grid = np.einsum("gk,tkd->tgd", g, pos[ptri[tris]]).reshape(-1, 3)
        tri_cluster = np.repeat(owner[tris], len(g))
        points = np.concatenate([points, grid])
        point_cluster = np.concatenate([point_cluster, tri_cluster])
        measured = np.concatenate([measured, np.asarray(
            dist_fn(grid, dag.mesh.positions, original), np.float64)])
    return points, point_cluster, measured


# --------------------------------------------------------------------------------------------------
# Everything


def _default_cameras(dag: LodDag) -> list[np.ndarray]:
    """Three camera positions around the mesh: far, mid-distance and grazing the surface."""
    pos = np.asarray(dag.mesh.positions, np.float64)
    lo, hi = pos.min(axis=0), pos.max(axis=0)
    center, radius = 0.5 * (lo + hi), 0.5 * float(np.linalg.norm(hi - lo))
    radius = radius if radius > 0 else 1.0
    dirs = np.array([[0.6, 0.3, 0.74], [-0.8, 0.5, -0.33], [0.2, -0.9, 0.4]])
    dirs /= np.linalg.norm(dirs, axis=1, keepdims=True)
    return [center + f * radius * d for f, d in zip((4.0, 1.5, 0.9), dirs, strict=True)]


def check_all(dag: LodDag, bvh: Bvh | None = None, *, thresholds: int = 20,
              cameras: list[np.ndarray] | None = None, scale: float = 1.0,
              area_tolerance: float = 0.05, honest: bool = True,
              samples_per_cluster: int = 64) -> dict[str, Any]:
    """All checks of a built DAG (and BVH), with cuts at many thresholds.

    Views: camera None (view-independent, tau in world units) and `cameras` (default: three
    positions around the mesh, far, mid and grazing, so that cuts mix levels). For each view, the
    `thresholds` values of tau are spread log-uniformly from half the smallest nonzero projected
    group error (the cut must draw only clusters of error 0: level 0 where no group simplified
    at no error) to twice the largest finite one among the groups whose sphere does not hold the
    camera, plus one tau above all of them (the cut must be the root group's members). Each cut
    passes `check_cut`, and with a BVH, the cut reached through the BVH must equal `select_cut`'s.
    The honest error is checked once on every generated cluster (a cluster's honesty does not
    depend on the cut), with the triangles of each cluster's `HONEST_REFINE` farthest samples
    sampled again densely: the figure `preprocess --verify` prints per level (stored / measured)
    reads the distance's narrow peaks (the bunny's levels 1.30-2.47 without them and without
    each triangle's centroid and edge midpoints; 1.09-1.21 with).

    Returns {"limits", "dag", "bvh", "honest": the figures of each check, "cuts": one
    {"camera", "tau", "clusters", "triangles", "levels", "area_ratio"} per cut, "area_ratio":
    (min, max) over the cuts, "mixed_cuts": cuts that draw more than one level}.
    """
    if thresholds < 2:
        raise ValueError("thresholds must be at least 2")
    figures: dict[str, Any] = {"limits": check_limits(dag), "dag": check_dag(dag)}
    figures["bvh"] = check_bvh(dag, bvh) if bvh is not None else None
    topo = _Topology(dag.mesh)
    level = np.asarray(dag.cluster_level)
    own_error = np.asarray(dag.cluster_self_error)
    root_members = np.sort(np.flatnonzero(np.asarray(dag.cluster_group) == dag.root_group))
    views: list[np.ndarray | None] = [None, *(cameras if cameras is not None
                                              else _default_cameras(dag))]
    cuts = []
    for cam in views:
        proj = projected_error(dag.group_sphere, dag.group_error, cam, scale=scale)
        useful = np.isfinite(proj) & (proj > 0)
        if not useful.any():
            taus = np.geomspace(0.5, 2.0, thresholds)
        else:
            # spread the taus over the groups seen from outside (a sphere around the camera
            # projects huge), then one tau above everything: the coarsest cut
            seen = useful
            if cam is not None:
                gs = np.asarray(dag.group_sphere, np.float64)
                seen = useful & (np.linalg.norm(gs[:, :3] - cam, axis=1) > gs[:, 3])
            spread = proj[seen] if seen.any() else proj[useful]
            taus = np.append(np.geomspace(0.5 * spread.min(), 2.0 * spread.max(), thresholds - 1),
                             2.0 * proj[useful].max())
        for t, tau in enumerate(taus):
            cut = select_cut(dag, float(tau), cam, scale)
            where = f"tau {tau:.6g}, camera {None if cam is None else np.round(cam, 4).tolist()}"
            if t == 0 and (own_error[cut] > 0).any():
                i = cut[own_error[cut] > 0][0]
                _fail(f"{where}: below every nonzero error the cut must draw only error-free "
                      f"clusters (level 0, or simplified at no error), but it draws cluster {i} "
                      f"of error {own_error[i]:.6g}")
            if t == len(taus) - 1 and not np.array_equal(cut, root_members):
                _fail(f"{where}: above every error the cut must be the root group's "
                      f"{len(root_members)} members, got {len(cut)} clusters")
            try:
                fig = check_cut(dag, cut, area_tolerance=area_tolerance, _topology=topo)
            except VerifyError as exc:
                raise VerifyError(f"{where}: {exc}") from None
            if bvh is not None:
                via = select_cut_bvh(dag, bvh, float(tau), cam, scale)
                if not np.array_equal(via, cut):
                    diff = np.setxor1d(via, cut)
                    _fail(f"{where}: the BVH traversal selects {len(via)} clusters, the cut rule "
                          f"{len(cut)}; they differ in {len(diff)} clusters, e.g. "
                          f"{diff[:_MAX_REPORTED].tolist()}")
            cuts.append({"camera": None if cam is None else cam.tolist(), "tau": float(tau),
                         "clusters": fig["clusters"], "triangles": fig["triangles"],
                         "levels": fig["levels"], "area_ratio": fig["area_ratio"]})
    figures["cuts"] = cuts
    ratios = [c["area_ratio"] for c in cuts]
    figures["area_ratio"] = (min(ratios), max(ratios))
    figures["mixed_cuts"] = sum(1 for c in cuts if np.count_nonzero(c["levels"]) > 1)
    if honest:
        figures["honest"] = check_honest_error(dag, np.flatnonzero(level > 0),
                                               samples_per_cluster=samples_per_cluster,
                                               refine=HONEST_REFINE)
    else:
        figures["honest"] = None
    return figures
