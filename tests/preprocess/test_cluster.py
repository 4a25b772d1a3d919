"""Level 0 on its own (`preprocess.cluster.build_clusters`): a kd-split of triangle centroids into
clusters of at most `max_triangles` triangles and `max_vertices` wedges, every triangle in exactly
one, nearly full and spatially compact; the same with the first cut in two threads."""

from __future__ import annotations

import numpy as np
import pytest

from assets.rock import make_terrain
from assets.shapes import geodesic_sphere
from preprocess.cluster import build_clusters


@pytest.mark.parametrize("limits", [(128, 255), (64, 96), (32, 40)])
def test_clusters_cover_every_triangle_within_the_limits(limits) -> None:
    mesh = make_terrain(48, seed=2)  # 4,608 triangles, uvs: wedges split at seams
    max_t, max_v = limits
    order, offsets = build_clusters(mesh.positions, mesh.triangles, mesh.wedge_position,
                                    max_triangles=max_t, max_vertices=max_v)
    m = mesh.triangle_count
    assert np.array_equal(np.sort(order), np.arange(m))  # each triangle exactly once
    sizes = np.diff(offsets)
    assert sizes.min() > 0 and sizes.max() <= max_t
    for c in range(len(sizes)):
        wedges = np.unique(mesh.triangles[order[offsets[c]:offsets[c + 1]]])
        assert len(wedges) <= max_v
    # ~full: no more clusters than the triangle limit needs, plus a few for the vertex limit
    # and the kd cuts (the builder's level-0 fill is 98% on the scans: test_dag)
    assert len(sizes) <= int(np.ceil(m / max_t) * 1.15) + 1


def test_clusters_are_compact_and_the_threads_agree() -> None:
    """A cluster of a closed sphere spans a small patch: its triangles' centroids lie within a
    few triangle widths of each other (a kd-split of centroids, not a scatter), and the first
    cut in two threads gives the same clusters."""
    mesh = geodesic_sphere(24)  # 11,520 triangles of about equal size on the unit sphere
    order, offsets = build_clusters(mesh.positions, mesh.triangles, mesh.wedge_position)
    pt = mesh.wedge_position[mesh.triangles]
    centroid = mesh.positions[pt].mean(axis=1)
    edge = np.linalg.norm(mesh.positions[pt[:, 0]] - mesh.positions[pt[:, 1]], axis=1).mean()
    for c in range(len(offsets) - 1):
        cc = centroid[order[offsets[c]:offsets[c + 1]]]
        # 128 triangles fill a patch about sqrt(128 / 2) = 8 edges across; a kd box of them
        # stays within twice that
        assert np.linalg.norm(cc.max(axis=0) - cc.min(axis=0)) < 16 * edge
    order2, offsets2 = build_clusters(mesh.positions, mesh.triangles, mesh.wedge_position,
                                      threads=2)
    assert np.array_equal(offsets, offsets2) and np.array_equal(order, order2)
