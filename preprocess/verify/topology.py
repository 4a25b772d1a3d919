"""Cut topology: a set of clusters draws the surface exactly once (`check_cut`).

Coverage by the DAG (no hole, no overlap), watertight and consistently oriented by its edges,
the original's area within a tolerance that grows with the cut's error, and the area of every
material. `Topology` holds the original mesh's edge figures that a cut is compared with
(`preprocess.verify.check_all` builds it once for all its cuts).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from preprocess.grid import farthest_distance
from preprocess.lod import LodDag
from preprocess.mesh import Mesh, column_bounds
from preprocess.topology import edge_census
from preprocess.verify.common import (
    AREA_CHUNK,
    MAX_REPORTED,
    fail,
    first_few,
    triangle_areas,
    triangle_index,
    uniform_weights,
)

__all__ = ["LOST_SAMPLES", "MATERIAL_AREA_SLACK", "Topology", "check_cut"]

MATERIAL_AREA_SLACK = 0.1  # (d) of `check_cut`: what a permissive crossing may move
LOST_SAMPLES = 200_000  # (c) of `check_cut`: the most points on the original it measures


class Topology:
    """Edge figures of the original mesh that `check_cut` compares a cut with."""

    def __init__(self, mesh: Mesh) -> None:
        self.n = int(mesh.positions.shape[0])
        ptri = np.ascontiguousarray(mesh.position_triangles, np.int32)
        census = edge_census(ptri, mesh.positions)  # marks the border and non-manifold ends
        self.border_vertex = census.border_vertex
        self.nonmanifold_vertex = census.nonmanifold_vertex
        self.flipped_edges = census.flipped
        self.triangle_area = triangle_areas(mesh.positions, ptri)
        self.area = float(self.triangle_area.sum())
        lo, hi = column_bounds(mesh.positions)
        self.radius = max(0.5 * float(np.linalg.norm(hi.astype(np.float64) - lo)),
                          float(np.finfo(np.float64).tiny))  # no absolute floor: tiny meshes
        self.border_edges = census.border
        self.nonmanifold_edges = census.nonmanifold
        # the radius of the area check: A / M, M the total mean curvature (the sum over interior
        # edges of |dihedral angle| x length / 2): a sphere's radius for a sphere; for a tube of
        # radius r, 2 r, whose area a surface within e of it can change by about e / r (a thin
        # limb shrunk or flattened), and small pieces that may vanish count the same way. At
        # most half the bounding-box diagonal (flat meshes: M ~ 0)
        self.area_radius = self.radius
        if census.curvature > 0:
            self.area_radius = min(self.radius, self.area / census.curvature)


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
        fail(f"the cut uses a simplification of the root group {dag.root_group}")
    expected = ((src < 0) | collapsed[np.maximum(src, 0)]) & ~collapsed[cgroup]
    missing = np.flatnonzero(expected & ~drawn)
    if len(missing):
        i = int(missing[0])
        why = ("it is level 0" if src[i] < 0
               else f"its source group {src[i]} is simplified away by the cut")
        fail(f"hole in the cut: {len(missing)} clusters cover surface that nothing in the cut "
             f"covers, e.g. cluster {i} (level {level[i]}): {why}, its own group {cgroup[i]} is "
             f"not (no cluster generated from it, or coarser, is in the cut), yet it is not in "
             f"the cut")
    extra = np.flatnonzero(drawn & ~expected)
    if len(extra):
        i = int(extra[0])
        j = cgroup[i]
        made = np.flatnonzero(src == j)
        fail(f"overlap in the cut: {len(extra)} clusters are drawn where a coarser version is "
             f"drawn too, e.g. cluster {i} (level {level[i]}) while its group {j} is simplified "
             f"away (into clusters {made[:MAX_REPORTED].tolist()}, which are in the cut or "
             f"simplified further)")


def check_cut(dag: LodDag, cut: np.ndarray, *, area_tolerance: float = 0.05,
              _topology: Topology | None = None) -> dict[str, Any]:
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
        fail(f"a cut is a 1-D array of cluster ids, got shape {cut.shape} dtype {cut.dtype}")
    if len(cut) == 0:
        fail("the cut is empty: it covers nothing")
    cut = cut.astype(np.int64)
    if cut.min() < 0 or cut.max() >= c:
        fail(f"the cut holds cluster ids out of range 0..{c - 1}: {cut[(cut < 0) | (cut >= c)]}")
    times = np.bincount(cut, minlength=c)
    for i in first_few(times > 1):
        fail(f"cluster {i} appears {times[i]} times in the cut (overlap)")
    _check_coverage(dag, cut)

    topo = _topology or Topology(dag.mesh)
    rows = triangle_index(dag, cut)
    ptri = _cut_triangles(np.asarray(dag.mesh.wedge_position, np.int32),
                          np.asarray(dag.triangles), rows)
    census = edge_census(ptri, dag.mesh.positions, topo.border_vertex, topo.nonmanifold_vertex)
    if census.bad:
        v, w, uses = census.first_bad
        users = _users(dag, cut, ptri, v, w)
        pos = dag.mesh.positions
        fail(f"crack: {census.bad} edges of the cut are not shared by exactly two triangles, "
             f"e.g. the edge between positions {v} {pos[v].tolist()} and {w} "
             f"{pos[w].tolist()} is used by {uses} triangles (of clusters "
             f"{users.tolist()}, levels {dag.cluster_level[users].tolist()})"
             + ("; its ends are on the original border"
                if topo.border_vertex[v] and topo.border_vertex[w] else ""))
    if topo.flipped_edges == 0 and census.flipped:
        v, w = census.first_flipped
        users = _users(dag, cut, ptri, v, w)
        fail(f"orientation: {census.flipped} edges are used twice in the same direction, "
             f"e.g. the edge {v}-{w} by clusters {users.tolist()} (levels "
             f"{dag.cluster_level[users].tolist()}); the original mesh is consistently oriented")
    area = float(triangle_areas(dag.mesh.positions, ptri).sum())
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
            fail(f"the cut's area is {area:.6g}, {ratio:.4f} times the original's "
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
        "border_edges": census.border,
        "flipped_edges": census.flipped,
        "nonmanifold_edges": census.nonmanifold,
    }


def _cut_triangles(wedge_position: np.ndarray, triangles: np.ndarray, rows: np.ndarray
                   ) -> np.ndarray:
    """(t, 3) int32: the rows of the DAG's triangles as position ids, a million at a time (no
    int64 copy of a scan's cut)."""
    out = np.empty((len(rows), 3), np.int32)
    for lo in range(0, len(rows), AREA_CHUNK):
        out[lo:lo + AREA_CHUNK] = wedge_position[triangles[rows[lo:lo + AREA_CHUNK]]]
    return out


def _users(dag: LodDag, cut: np.ndarray, ptri: np.ndarray, v: int, w: int) -> np.ndarray:
    """The clusters of the cut whose triangles use the edge v-w (for an error message)."""
    uses = np.flatnonzero((ptri == v).any(axis=1) & (ptri == w).any(axis=1))
    counts = np.diff(np.asarray(dag.cluster_tri_offset, np.int64))[cut]
    return cut[np.searchsorted(np.cumsum(counts), uses, side="right")]


def _farthest_lost(dag: LodDag, ptri: np.ndarray) -> float:
    """The largest distance to a cut's triangles (ptri: position triangles) of the original's
    vertices and of points on its triangles (4 each by area, at most LOST_SAMPLES in all)."""
    pos = np.asarray(dag.mesh.positions, np.float64)
    orig = np.asarray(dag.mesh.position_triangles, np.int64)
    rng = np.random.default_rng(0)
    cum = np.cumsum(triangle_areas(pos, orig))
    pick = np.searchsorted(cum, rng.random(min(4 * len(orig), LOST_SAMPLES)) * cum[-1],
                           side="right").clip(0, len(orig) - 1)
    w = uniform_weights(rng, len(pick))
    points = np.concatenate([pos, np.einsum("pk,pkd->pd", w, pos[orig[pick]])])
    # the Hausdorff early break: most points cost one triangle test
    return farthest_distance(points, dag.mesh.positions, ptri.astype(np.int32))


def _check_material_areas(dag: LodDag, rows: np.ndarray, ptri: np.ndarray, topo: Topology,
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
        fail(f"a triangle of the cut uses material {int(mats.max())}; the mesh has {k}")
    now = np.bincount(mats, weights=triangle_areas(mesh.positions, ptri), minlength=k)
    big = base >= 0.05 * base.sum()
    ratios = now[big] / base[big]
    for m, r in zip(np.flatnonzero(big), ratios, strict=True):
        if not abs(r - 1.0) <= allowed + MATERIAL_AREA_SLACK:
            fail(f"material {m} covers {r:.3f} times its original area in the cut (tolerance "
                 f"{allowed + MATERIAL_AREA_SLACK:.3g}): its border moved")
    return float(ratios.min()), float(ratios.max())
