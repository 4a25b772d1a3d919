"""Honest errors: the surface every cluster draws lies within its stored error of the original
mesh (`check_honest_error`), and how tight each level's stored error is to the measured distance,
one way and both ways (`error_tightness`).

Distances are the builder's own, exact (`preprocess.grid`: the nearest of the original's
triangles to each sample point, through a hash grid; each cluster's largest exact, the search
for a point nearer than it stopping early: `mesh_maxima`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from preprocess.cut import level_cut
from preprocess.grid import max_distance_to_mesh, mesh_maxima
from preprocess.lod import LodDag
from preprocess.verify.common import (
    MAX_REPORTED,
    fail,
    triangle_areas,
    triangle_index,
    uniform_weights,
)

__all__ = ["check_honest_error", "error_tightness"]


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
    default `preprocess.grid.max_distance_to_mesh` (the builder's exact distances).
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
    measured, farthest, points = _measured_distances(dag, cut, samples_per_cluster, rng_seed,
                                                     distance, refine)
    stored = _distance_error(dag)[cut]
    over = measured - (stored + tol)
    if (over > 0).any():
        k = int(np.argmax(over))
        i = cut[k]
        bad = cut[over > 0]
        fail(f"dishonest error: cluster {i} (level {dag.cluster_level[i]}) stores error "
             f"{stored[k]:.6g} but its surface point {farthest[k].tolist()} lies "
             f"{measured[k]:.6g} from the original mesh (tolerance {tol:.3g}); {len(bad)} "
             f"clusters exceed, e.g. {bad[:MAX_REPORTED].tolist()}")
    nz = stored > 0
    return {
        "clusters": len(cut),
        "points": points,
        "tolerance": tol,
        "max_distance": float(measured.max()),
        "max_ratio": float((measured[nz] / stored[nz]).max()) if nz.any() else 0.0,
        "level_ratios": _level_ratios(dag, cut, measured),
    }


def _distance_error(dag: LodDag) -> np.ndarray:
    """(c,) float64: what each cluster claims as its surface's largest distance to the original:
    its geometric error where the DAG knows it, else its LOD error (which is at least that)."""
    err = dag.cluster_geometric_error
    return np.asarray(dag.cluster_self_error if err is None else err, np.float64)


def _level_ratios(dag: LodDag, cut: np.ndarray, measured: np.ndarray) -> list[float]:
    """Per level above 0 (in order), the largest stored error over the largest measured
    distance of the level's sampled clusters (`cut`, each's largest distance `measured`; inf
    where nothing was measured above 0)."""
    level = np.asarray(dag.cluster_level)
    stored = _distance_error(dag)
    per_cluster = np.zeros(len(level))
    per_cluster[cut] = measured
    seen = np.zeros(len(level), bool)
    seen[cut] = True
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
    measured, _, _ = _measured_distances(dag, cut, samples_per_cluster, rng_seed, distance,
                                         refine)
    per_cluster = np.zeros(len(level))
    per_cluster[cut] = measured
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
        surface = wpos[np.asarray(dag.triangles)[triangle_index(dag, level_cut(dag, lv))]]
        back = float(np.max(dist_fn(pos, dag.mesh.positions, surface.astype(np.int32))))
        both = max(float(mz.max()), back)
        rows.append({"level": lv, "clusters": len(ids), "stored": float(s.max()),
                     "measured": float(mz.max()),
                     "ratio": float(s.max() / mz.max()) if mz.max() > 0 else float("inf"),
                     "median_ratio": float(np.median(s[ok] / mz[ok])) if ok.any() else 0.0,
                     "measured_two_sided": both,
                     "ratio_two_sided": float(s.max() / both) if both > 0 else float("inf")})
    return rows



# the clusters of a verify's honest check are sampled this many triangles at a time (~300 MB of
# points, corners and their sorts; the points of all the clusters above level 0 of a 20M-triangle
# scan at once held 15 GB, and a million triangles a batch ~1.5 GB: a 4M scan's peak)
HONEST_BATCH = 1 << 18


def _measured_distances(dag: LodDag, cut: np.ndarray, samples_per_cluster: int, rng_seed: int,
                        distance, refine: int = 0) -> tuple[np.ndarray, np.ndarray, int]:
    """Sample points on the clusters `cut` (samples_per_cluster by area on each, the centroid
    and edge midpoints of every triangle, and every vertex once per cluster) and measure their
    distance to the original mesh, the clusters `HONEST_BATCH` triangles at a time. (Without the
    centroids, a cluster of 128 triangles with 64 samples left half its triangles unsampled: the
    bunny's levels read 1.30-2.47 where the distance the builder found gave 1.14-1.21.)

    refine: then, on each cluster, the triangles of its `refine` farthest samples are sampled
    again on a 10-step barycentric grid (55 points each): the distance of a coarse surface to a
    scan peaks in narrow spots that uniform samples miss (igea level 2: the largest of 2,048
    random samples per cluster was 0.79 of the distance at a point the builder found).

    Returns (per cluster of `cut` the largest distance of its points (k,) float64, the point at
    that distance (k, 3) float64, the number of points measured)."""
    original = np.asarray(dag.mesh.position_triangles, np.int32)
    if distance is None:
        measure = mesh_maxima(dag.mesh.positions, original)  # its grid built once
        del original  # the grid holds the corners (12 bytes a triangle less while it runs)
    else:
        def measure(points: np.ndarray, owner: np.ndarray, groups: int) -> np.ndarray:
            return np.asarray(distance(points, dag.mesh.positions, original), np.float64)
    rng = np.random.default_rng(rng_seed)
    off = np.asarray(dag.cluster_tri_offset, np.int64)
    counts = off[cut + 1] - off[cut]
    ends = np.cumsum(counts)
    dmax = np.empty(len(cut), np.float64)
    far = np.empty((len(cut), 3), np.float64)
    total = 0
    lo = 0
    while lo < len(cut):
        hi = max(lo + 1, int(np.searchsorted(ends, ends[lo] - counts[lo] + HONEST_BATCH,
                                             side="right")))
        points, owner, measured = _batch_distances(dag, cut[lo:hi], samples_per_cluster, rng,
                                                   measure, refine)
        order = np.lexsort((-measured, owner))  # per cluster, its farthest point first
        first = order[np.searchsorted(owner[order], np.arange(hi - lo))]
        dmax[lo:hi] = measured[first]
        far[lo:hi] = points[first]
        total += len(points)
        lo = hi
    return dmax, far, total


def _batch_distances(dag: LodDag, cut: np.ndarray, samples_per_cluster: int,
                     rng: np.random.Generator, measure, refine: int
                     ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """`_measured_distances` of some clusters: (points (p, 3), the index in `cut` of each
    point's cluster, their distances)."""
    pos = np.asarray(dag.mesh.positions)  # float32: corners are made float64 a batch at a time
    off = np.asarray(dag.cluster_tri_offset, np.int64)
    rows = triangle_index(dag, cut)
    counts = off[cut + 1] - off[cut]
    owner = np.repeat(np.arange(len(cut)), counts)
    ptri = np.asarray(dag.mesh.wedge_position, np.int64)[np.asarray(dag.triangles)[rows]]
    # samples: a triangle of the cluster by area, then uniform barycentrics
    cum = np.cumsum(triangle_areas(pos, ptri))
    first = np.concatenate([[0], np.cumsum(counts)[:-1]])
    before = np.where(first > 0, cum[np.maximum(first - 1, 0)], 0.0)
    total = cum[first + counts - 1] - before
    sample_owner = np.repeat(np.arange(len(cut)), samples_per_cluster)
    target = before[sample_owner] + rng.random(len(sample_owner)) * total[sample_owner]
    pick = np.searchsorted(cum, target, side="right")
    last = first + counts - 1
    pick = np.clip(pick, first[sample_owner], last[sample_owner])
    w = uniform_weights(rng, len(pick))
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
    point_owner = np.concatenate([sample_owner, vkeys // len(pos)])
    measured = measure(points, point_owner, len(cut))
    if refine > 0 and len(samples):
        # each cluster's `refine` farthest samples, by a sort on (cluster, -distance) (the
        # distances of `grid.mesh_maxima`: exact for the farthest, bounds below it for the rest)
        near = measured[: len(samples)]
        order = np.lexsort((-near, sample_owner))
        start = np.searchsorted(sample_owner[order], np.arange(len(cut)))
        rank = np.arange(len(order)) - start[sample_owner[order]]
        tris = np.unique(pick[order[rank < refine]])
        g = np.array([(i / 9, j / 9, (9 - i - j) / 9) for i in range(10)
                      for j in range(10 - i)])
        grid = np.einsum("gk,tkd->tgd", g, pos[ptri[tris]]).reshape(-1, 3)
        grid_owner = np.repeat(owner[tris], len(g))
        points = np.concatenate([points, grid])
        point_owner = np.concatenate([point_owner, grid_owner])
        measured = np.concatenate([measured, measure(grid, grid_owner, len(cut))])
    return points, point_owner, measured
