"""Checks of a built cluster LOD DAG and its BVH (like bevy's `verify_bvh`), for the tests and for
`preprocess --verify`.

Every check either returns a small dict of measured figures or raises `VerifyError` (an
`AssertionError`) whose message names the offending cluster, group or node and the numbers.

- `structure`: `check_limits` (cluster sizes, no degenerate triangle), `check_dag` (the DAG's
  structure, monotonic errors, nested spheres, honest cluster bounds, a single root reached from
  every cluster) and `check_bvh` (every group exactly once as a leaf, nested spheres and boxes,
  exact max errors, depths, no cycles, fanout).
- `topology`: `check_cut`: a set of clusters covers the surface exactly once (by the DAG), is
  watertight and consistently oriented (by its edges) and has the original's area (within a
  tolerance), material by material.
- `errors`: `check_honest_error`: points sampled on clusters lie within the clusters' stored
  error of the original mesh; `error_tightness`: how close each level's stored error is to the
  measured distance.
- `packed`: `check_source_groups` (`check_packed` on a packed asset or an open file): the source
  group that every cluster record of the pages names, against the groups section (what streaming
  relies on).
- `check_all` (here): all of the above, with cuts at many thresholds, view-independent and from
  cameras, selected by the cut rule (`preprocess.cut`) and through the BVH.

`common` holds what they share: `VerifyError`, and sphere containment with a slack of
`SPHERE_REL_EPS` of the outer radius plus a few float32 ulps of the coordinates.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from preprocess.cut import projected_error, select_cut, select_cut_bvh
from preprocess.lod import Bvh, LodDag
from preprocess.verify.common import MAX_REPORTED, SPHERE_REL_EPS, VerifyError, fail
from preprocess.verify.errors import check_honest_error, error_tightness
from preprocess.verify.packed import check_packed, check_source_groups, packed_records
from preprocess.verify.structure import check_bvh, check_dag, check_limits
from preprocess.verify.topology import Topology, check_cut

__all__ = [
    "HONEST_REFINE",
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
    "error_tightness",
    "packed_records",
]

HONEST_REFINE = 4  # `check_all`: the farthest samples a cluster whose triangles are refined


def default_cameras(dag: LodDag) -> list[np.ndarray]:
    """Three camera positions around the mesh: far, mid-distance and grazing the surface."""
    pos = np.asarray(dag.mesh.positions, np.float64)
    lo, hi = pos.min(axis=0), pos.max(axis=0)
    center, radius = 0.5 * (lo + hi), 0.5 * float(np.linalg.norm(hi - lo))
    radius = radius if radius > 0 else 1.0
    dirs = np.array([[0.6, 0.3, 0.74], [-0.8, 0.5, -0.33], [0.2, -0.9, 0.4]])
    dirs /= np.linalg.norm(dirs, axis=1, keepdims=True)
    return [center + f * radius * d for f, d in zip((4.0, 1.5, 0.9), dirs, strict=True)]


def _thresholds(dag: LodDag, cam: np.ndarray | None, scale: float, thresholds: int) -> np.ndarray:
    """The `thresholds` taus of `check_all` for one view: log-uniform from half the smallest
    nonzero projected group error to twice the largest among the groups seen from outside, then
    twice the largest finite one (0.5 to 2 where no group shows an error)."""
    proj = projected_error(dag.group_sphere, dag.group_error, cam, scale=scale)
    useful = np.isfinite(proj) & (proj > 0)
    if not useful.any():
        return np.geomspace(0.5, 2.0, thresholds)
    # spread the taus over the groups seen from outside (a sphere around the camera
    # projects huge), then one tau above everything: the coarsest cut
    seen = useful
    if cam is not None:
        gs = np.asarray(dag.group_sphere, np.float64)
        seen = useful & (np.linalg.norm(gs[:, :3] - cam, axis=1) > gs[:, 3])
    spread = proj[seen] if seen.any() else proj[useful]
    return np.append(np.geomspace(0.5 * spread.min(), 2.0 * spread.max(), thresholds - 1),
                     2.0 * proj[useful].max())


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
    topo = Topology(dag.mesh)
    level = np.asarray(dag.cluster_level)
    own_error = np.asarray(dag.cluster_self_error)
    root_members = np.sort(np.flatnonzero(np.asarray(dag.cluster_group) == dag.root_group))
    views: list[np.ndarray | None] = [None, *(cameras if cameras is not None
                                              else default_cameras(dag))]
    cuts = []
    for cam in views:
        taus = _thresholds(dag, cam, scale, thresholds)
        for t, tau in enumerate(taus):
            cut = select_cut(dag, float(tau), cam, scale)
            where = f"tau {tau:.6g}, camera {None if cam is None else np.round(cam, 4).tolist()}"
            if t == 0 and (own_error[cut] > 0).any():
                i = cut[own_error[cut] > 0][0]
                fail(f"{where}: below every nonzero error the cut must draw only error-free "
                     f"clusters (level 0, or simplified at no error), but it draws cluster {i} "
                     f"of error {own_error[i]:.6g}")
            if t == len(taus) - 1 and not np.array_equal(cut, root_members):
                fail(f"{where}: above every error the cut must be the root group's "
                     f"{len(root_members)} members, got {len(cut)} clusters")
            try:
                fig = check_cut(dag, cut, area_tolerance=area_tolerance, _topology=topo)
            except VerifyError as exc:
                raise VerifyError(f"{where}: {exc}") from None
            if bvh is not None:
                via = select_cut_bvh(dag, bvh, float(tau), cam, scale)
                if not np.array_equal(via, cut):
                    diff = np.setxor1d(via, cut)
                    fail(f"{where}: the BVH traversal selects {len(via)} clusters, the cut rule "
                         f"{len(cut)}; they differ in {len(diff)} clusters, e.g. "
                         f"{diff[:MAX_REPORTED].tolist()}")
            cuts.append({"camera": None if cam is None else cam.tolist(), "tau": float(tau),
                         "clusters": fig["clusters"], "triangles": fig["triangles"],
                         "levels": fig["levels"], "area_ratio": fig["area_ratio"]})
    figures["cuts"] = cuts
    del topo  # its triangle areas (8 bytes a triangle) are not the honest check's
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
