"""Grouping on its own (`preprocess.grouping`): the clusters of a level partitioned by METIS into
groups of about `group_size`, each group's clusters connected through shared edges, and the
positions locked for simplification exactly those that more than one group uses."""

from __future__ import annotations

import numpy as np

from assets.rock import make_terrain
from preprocess.cluster import build_clusters
from preprocess.grouping import group_level


def test_groups_partition_the_level_and_lock_their_shared_positions() -> None:
    mesh = make_terrain(64, seed=4)  # 8,192 triangles: 64 level-0 clusters
    order, offsets = build_clusters(mesh.positions, mesh.triangles, mesh.wedge_position)
    store = np.ascontiguousarray(mesh.triangles[order], np.int32)
    pending = np.arange(len(offsets) - 1, dtype=np.int32)
    members, locked = group_level(store, offsets.astype(np.int64), pending,
                                  np.ascontiguousarray(mesh.wedge_position, np.int32),
                                  len(mesh.positions), 8)
    # a partition of the level's clusters, in groups of about 8
    flat = np.sort(np.concatenate(members))
    assert np.array_equal(flat, pending)
    sizes = [len(m) for m in members]
    assert min(sizes) >= 4 and max(sizes) <= 12
    # locked: the positions that triangles of two or more groups use
    group_of_cluster = np.empty(len(pending), np.int64)
    for g, m in enumerate(members):
        group_of_cluster[m] = g
    cluster_of_tri = np.repeat(pending, np.diff(offsets))
    pt = mesh.wedge_position[store]
    groups_at = [set() for _ in range(len(mesh.positions))]
    for t in range(len(pt)):
        for p in pt[t]:
            groups_at[p].add(int(group_of_cluster[cluster_of_tri[t]]))
    want = np.array([len(s) > 1 for s in groups_at])
    assert np.array_equal(locked, want)
    # each group is one connected patch: its clusters share edges with each other
    for m in members:
        tris = np.concatenate([np.arange(offsets[c], offsets[c + 1]) for c in m])
        assert _patches(tris, pt, cluster_of_tri) == 1


def _patches(tris: np.ndarray, pt: np.ndarray, cluster_of_tri: np.ndarray) -> int:
    """The number of connected sets of clusters among the triangles `tris` (position triangles
    pt), clusters joined where they share an edge."""
    parent: dict[int, int] = {}

    def find(c: int) -> int:
        while parent.setdefault(c, c) != c:
            c = parent[c]
        return c

    edge_owner: dict[tuple[int, int], int] = {}
    for t in tris:
        c = int(cluster_of_tri[t])
        find(c)
        for e in range(3):
            key = tuple(sorted((int(pt[t, e]), int(pt[t, (e + 1) % 3]))))
            parent[find(edge_owner.setdefault(key, c))] = find(c)
    return len({find(c) for c in list(parent)})
