"""Tests of the honest-error checks (`preprocess.verify.errors`) on the hand-made DAG
(tests/preprocess/conftest.py), and of the exact distances they measure with
(`preprocess.grid`, `preprocess.distance`).
"""

from __future__ import annotations

import numpy as np
import pytest

from preprocess.distance import point_triangle_d2_of
from preprocess.grid import max_distance_to_mesh
from preprocess.lod import LodDag
from preprocess.verify import VerifyError, check_honest_error



def test_honest_error_passes_and_measures(dag: LodDag) -> None:
    fig = check_honest_error(dag, np.array([4, 5, 6]))
    assert fig["clusters"] == 3
    triangles = int(np.diff(dag.cluster_tri_offset)[[4, 5, 6]].sum())
    # random samples, each triangle's centroid and edge midpoints, the vertices
    assert fig["points"] == 3 * 64 + 4 * triangles + 19 + 19 + 4
    assert 0.05 < fig["max_distance"] <= 0.3
    assert check_honest_error(dag, np.array([0, 1]))["points"] == 0  # level 0 is the original


def test_dishonest_error_fails(dag: LodDag) -> None:
    dag.cluster_self_error[4] = 0.01
    with pytest.raises(VerifyError, match="dishonest error: cluster 4"):
        check_honest_error(dag, np.array([4, 5, 6]))


# --------------------------------------------------------------------------------------------------
# distances


def test_distances_are_exact() -> None:
    """The distances the checks measure (`preprocess.grid.max_distance_to_mesh`: the nearest
    triangle through a hash grid) are the smallest of the distances to each triangle alone."""
    rng = np.random.default_rng(3)
    pos = rng.normal(size=(300, 3)).astype(np.float32)
    tris = np.array([rng.choice(300, 3, replace=False) for _ in range(500)], np.int32)
    tris = np.concatenate([tris, [[0, 1, 2]]])  # and a triangle repeated from the set
    pts = rng.normal(scale=1.5, size=(400, 3))
    brute = np.min([max_distance_to_mesh(pts, pos, tris[k : k + 1]) for k in range(len(tris))],
                   axis=0)
    assert np.allclose(max_distance_to_mesh(pts, pos, tris), brute, rtol=0, atol=1e-12)


def test_point_triangle_distance_regions() -> None:
    def distance(p, tri):
        return np.sqrt(point_triangle_d2_of(*p, tri, 0, 1, 2))

    tri = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0]], np.float64)
    pts = np.array([[0.2, 0.2, 0.5], [-1, -1, 0], [2, 0, 0], [0.5, -1, 0], [1, 1, 0]], np.float64)
    want = [0.5, np.sqrt(2), 1.0, 1.0, np.sqrt(0.5)]
    assert np.allclose([distance(p, tri) for p in pts], want)
    flat = np.array([[0, 0, 0], [1, 0, 0], [2, 0, 0]], np.float64)  # zero area
    assert np.isclose(distance(np.array([1.0, 1.0, 0.0]), flat), 1.0)
