"""The cut rule of `preprocess.lod` on a DAG, in numpy: which clusters a view and a threshold
tau draw.

- `projected_error`: the error a (sphere, error) pair shows from a view (a camera position and
  the pixels per unit at distance 1, or no camera: world units), as the cut compares it with tau.
- `select_cut`: the clusters drawn at tau, by the rule
  projected(self sphere, self error) <= tau < projected(parent group's sphere, its error);
  `select_cut_bvh` reaches the same clusters through the BVH, as the GPU does.
- `level_cut`: the clusters drawn when every group up to a level is taken coarse.

The checks (`preprocess.verify`), the culling tests and the streaming tests hold the renderer's
cuts to these.
"""

from __future__ import annotations

import numpy as np

from preprocess.lod import BVH_EMPTY, Bvh, LodDag
from preprocess.tess.limits import ROOT_ERROR

__all__ = ["level_cut", "projected_error", "select_cut", "select_cut_bvh"]

_TINY_DISTANCE = 1e-12  # the distance floor of the perspective projection (camera inside)


def projected_error(spheres: np.ndarray, errors: np.ndarray, camera: np.ndarray | None = None, *,
                    scale: float = 1.0) -> np.ndarray:
    """The error a (sphere, error) pair shows from a view, as the cut compares it with tau.

    spheres (c, 4) (x, y, z, r), errors (c,) -> (c,) float64.

    - With a camera position (3,): ``error * scale / max(|camera - center| - r, tiny)``: the error
      seen at the nearest point of the sphere, in pixels when ``scale`` is the perspective's
      pixels per unit at distance 1 (``viewport_height / (2 tan(fov_y / 2))``). A camera inside
      the sphere sees it at the distance floor, i.e. as huge (refine), unless the error is 0.
    - With camera None (orthographic, view-independent): the error itself; tau is then in world
      units.

    ROOT_ERROR (the root group's error) projects to +inf: nothing ever replaces the root.
    Projection is monotonic: a sphere containing another, with an error >= the other's, never
    projects smaller, which is what makes the cut consistent.
    """
    e = np.asarray(errors, np.float64)
    if camera is None:
        out = e.copy()
    else:
        s = np.asarray(spheres, np.float64)
        cam = np.asarray(camera, np.float64).reshape(3)
        dist = np.linalg.norm(s[:, :3] - cam, axis=1) - s[:, 3]
        out = e * float(scale) / np.maximum(dist, _TINY_DISTANCE)
    out[e >= np.float32(ROOT_ERROR)] = np.inf
    return out


def select_cut(dag: LodDag, tau: float, camera: np.ndarray | None = None,
               scale: float = 1.0) -> np.ndarray:
    """(k,) int32 ids of the clusters drawn at threshold tau (the rule of `preprocess.lod`):
    projected(self_sphere, self_error) <= tau < projected(parent group sphere, parent error)."""
    own = projected_error(dag.cluster_self_sphere, dag.cluster_self_error, camera, scale=scale)
    parent = projected_error(dag.group_sphere, dag.group_error, camera, scale=scale)
    drawn = (own <= tau) & (parent[np.asarray(dag.cluster_group)] > tau)
    return np.flatnonzero(drawn).astype(np.int32)


def select_cut_bvh(dag: LodDag, bvh: Bvh, tau: float, camera: np.ndarray | None,
                   scale: float) -> np.ndarray:
    """(k,) int32: select_cut, but reaching the groups through the BVH as the GPU does (a node is
    descended when its projected max error is > tau)."""
    node_proj = projected_error(bvh.node_sphere, bvh.node_max_error, camera, scale=scale)
    children = np.asarray(bvh.node_children, np.int64)
    frontier = np.array([0]) if node_proj[0] > tau else np.zeros(0, np.int64)
    groups = []
    while len(frontier):
        refs = children[frontier].reshape(-1)
        groups.append(-2 - refs[refs < BVH_EMPTY])
        nodes = refs[refs >= 0]
        frontier = nodes[node_proj[nodes] > tau]
    if not groups:
        return np.zeros(0, np.int32)
    g = np.concatenate(groups)
    goff = np.asarray(dag.group_cluster_offset, np.int64)
    members = np.concatenate([dag.group_clusters[goff[j] : goff[j + 1]] for j in g])
    own = projected_error(dag.cluster_self_sphere[members], dag.cluster_self_error[members],
                          camera, scale=scale)
    parent = projected_error(dag.group_sphere[dag.cluster_group[members]],
                             dag.group_error[dag.cluster_group[members]], camera, scale=scale)
    return np.sort(members[(own <= tau) & (parent > tau)]).astype(np.int32)


def level_cut(dag: LodDag, level: int) -> np.ndarray:
    """(k,) the clusters drawn when every group up to `level` is taken coarse: those of that
    level, and finer ones whose group is simplified only later (they waited for neighbours) or
    is the root."""
    lvl = np.asarray(dag.cluster_level)
    glev = np.asarray(dag.group_level)[np.asarray(dag.cluster_group)].astype(np.int64)
    glev[np.asarray(dag.cluster_group) == dag.root_group] = np.iinfo(np.int64).max
    return np.flatnonzero((lvl <= level) & (glev >= level))
