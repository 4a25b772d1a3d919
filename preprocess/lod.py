"""The cluster LOD DAG as built in memory: struct-of-arrays numpy data, the contract between the
DAG builder, the BVH, the page packer and the checks in `preprocess.verify`.

Terms. A *group* is a set of clusters of one level that were merged, simplified together with their
shared border locked, and re-split into the clusters of a coarser level. Every cluster is a
*member* of exactly one group (the one whose simplification replaces it) and was *generated* from
at most one group (none at level 0). The last group, the *root*, is never simplified: its members'
parent error is `ROOT_ERROR`.

The cut rule. For a view and a threshold tau, cluster i is drawn when
    projected(self_sphere[i], self_error[i]) <= tau < projected(parent_sphere[i], parent_error[i]).
Group spheres contain their members' self spheres and group errors are >= their members' self
errors, so projected errors grow along every child->parent edge and every point of the surface is
drawn exactly once; locked group borders make the cut watertight.
"""

from __future__ import annotations

from dataclasses import dataclass

import preprocess.numba_cache  # noqa: F401  (first: drops stale numba caches)
import numba
import numpy as np

from preprocess.mesh import Mesh


@numba.njit(cache=True, nogil=True)
def _cluster_boxes(positions, wedge_position, triangles, offsets):
    n = offsets.shape[0] - 1
    out = np.empty((n, 6), np.float32)
    for c in range(n):
        lo0 = lo1 = lo2 = np.float32(np.inf)
        hi0 = hi1 = hi2 = np.float32(-np.inf)
        for t in range(offsets[c], offsets[c + 1]):
            for k in range(3):
                p = wedge_position[triangles[t, k]]
                x, y, z = positions[p, 0], positions[p, 1], positions[p, 2]
                lo0, lo1, lo2 = min(lo0, x), min(lo1, y), min(lo2, z)
                hi0, hi1, hi2 = max(hi0, x), max(hi1, y), max(hi2, z)
        out[c, 0], out[c, 1], out[c, 2] = lo0, lo1, lo2
        out[c, 3], out[c, 4], out[c, 5] = hi0, hi1, hi2
    return out


@dataclass
class LodDag:
    mesh: Mesh  # the welded input: positions and wedges that all levels index
    triangles: np.ndarray  # (T, 3) int32: wedge ids, every level's clusters concatenated
    cluster_tri_offset: np.ndarray  # (c + 1,) int64: cluster i owns triangles[o[i]:o[i+1]]
    cluster_level: np.ndarray  # (c,) int32: 0 is the finest level
    cluster_group: np.ndarray  # (c,) int32: the group this cluster is a member of
    cluster_source_group: np.ndarray  # (c,) int32: the group it was generated from, -1 at level 0
    cluster_bounds: np.ndarray  # (c, 4) float32: tight sphere (x, y, z, r) of its own triangles
    cluster_self_sphere: np.ndarray  # (c, 4) float32: sphere used with self_error (LOD bound)
    # (c,) float32: the LOD error: the larger of the geometric error below and the shading term
    # (`BuildConfig.shading_weight`)
    cluster_self_error: np.ndarray
    group_level: np.ndarray  # (g,) int32: level of the group's members
    group_cluster_offset: np.ndarray  # (g + 1,) int64: group j's members are
    group_clusters: np.ndarray  # (c,) int32:   group_clusters[o[j]:o[j+1]]
    group_sphere: np.ndarray  # (g, 4) float32: contains its members' self spheres
    group_error: np.ndarray  # (g,) float32: >= members' self errors; ROOT_ERROR for the root
    root_group: int  # index of the root group (the last one)
    # (c,) float32: the largest distance of its surface to the original (<= self_error); None
    # where not known (a DAG read back from a file)
    cluster_geometric_error: np.ndarray | None = None

    @property
    def cluster_count(self) -> int:
        return int(self.cluster_level.shape[0])

    @property
    def group_count(self) -> int:
        return int(self.group_level.shape[0])

    @property
    def level_count(self) -> int:
        return int(self.cluster_level.max()) + 1

    @property
    def cluster_parent_sphere(self) -> np.ndarray:
        """(c, 4) float32: the sphere of the group each cluster is a member of."""
        return self.group_sphere[self.cluster_group]

    @property
    def cluster_parent_error(self) -> np.ndarray:
        """(c,) float32: the error of the group each cluster is a member of."""
        return self.group_error[self.cluster_group]

    def cluster_boxes(self) -> np.ndarray:
        """(c, 6) float32: min xyz, max xyz of each cluster's triangle vertices."""
        return _cluster_boxes(np.ascontiguousarray(self.mesh.positions, np.float32),
                              np.ascontiguousarray(self.mesh.wedge_position),
                              np.ascontiguousarray(self.triangles),
                              np.ascontiguousarray(self.cluster_tri_offset, np.int64))

    def cluster_triangles(self, i: int) -> np.ndarray:
        """(t, 3) int32 wedge ids of cluster i."""
        return self.triangles[self.cluster_tri_offset[i] : self.cluster_tri_offset[i + 1]]


BVH_EMPTY = -1  # an unused child slot


def bvh_group_ref(group: int) -> int:
    """Encode a group as a BVH child reference (negative, below BVH_EMPTY)."""
    return -2 - group


@dataclass
class Bvh:
    """8-ary BVH over the groups of all levels. Child slot v >= 0 is node v; v == BVH_EMPTY is
    unused; v < BVH_EMPTY is the group -2 - v (a leaf). Node 0 is the root."""

    node_sphere: np.ndarray  # (N, 4) float32: contains the spheres of everything below
    node_box: np.ndarray  # (N, 6) float32: min xyz, max xyz of every triangle below (culling)
    node_max_error: np.ndarray  # (N,) float32: max group error below (LOD: descend if > tau)
    node_children: np.ndarray  # (N, 8) int32: child references, see above
    node_depth: np.ndarray  # (N,) int32: 0 at the root (for per-level traversal)
