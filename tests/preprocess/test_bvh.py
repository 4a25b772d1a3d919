"""The BVH on its own (`preprocess.bvh.build_bvh`): an 8-ary tree whose leaves are every group of
every level exactly once, each node's sphere and box holding what is below it, its max error the
largest group error below, and depths counted from the root; measured here directly on the tree,
not through `preprocess.verify` (whose BVH checks have tests of their own)."""

from __future__ import annotations

import numpy as np
import pytest

from assets.rock import make_terrain
from preprocess.bvh import build_bvh, group_boxes
from preprocess.config import BuildConfig
from preprocess.dag import build_dag
from preprocess.lod import BVH_EMPTY


@pytest.fixture(scope="module")
def tree():
    dag = build_dag(make_terrain(64, seed=6), BuildConfig(threads=1))  # 8,192 triangles
    return dag, build_bvh(dag)


def test_every_group_is_one_leaf_under_the_root(tree) -> None:
    dag, bvh = tree
    ch = bvh.node_children
    assert ch.shape[1] == 8
    leaves = -2 - ch[ch < BVH_EMPTY]
    assert np.array_equal(np.sort(leaves), np.arange(dag.group_count))
    inner = ch[ch >= 0]
    assert len(np.unique(inner)) == len(inner) == len(ch) - 1  # each node but the root once
    assert 0 not in inner
    # depths: the root 0, a child one more than its parent
    for node in range(len(ch)):
        for c in ch[node][ch[node] >= 0]:
            assert bvh.node_depth[c] == bvh.node_depth[node] + 1
    assert bvh.node_depth[0] == 0


def test_nodes_hold_what_is_below(tree) -> None:
    """Each node's sphere contains its children's spheres (a group's is its LOD sphere), its box
    their boxes (a group's the box of its members' triangles), and its max error is the largest
    group error below (what traversal tests to skip a subtree)."""
    dag, bvh = tree
    boxes = group_boxes(dag)
    ch = bvh.node_children

    def below(ref: int) -> tuple[np.ndarray, np.ndarray, float]:
        if ref >= 0:
            return (bvh.node_sphere[ref].astype(np.float64), bvh.node_box[ref],
                    float(bvh.node_max_error[ref]))
        g = -2 - ref
        return dag.group_sphere[g].astype(np.float64), boxes[g], float(dag.group_error[g])

    for node in range(len(ch)):
        s = bvh.node_sphere[node].astype(np.float64)
        errors = []
        for ref in ch[node][ch[node] != BVH_EMPTY]:
            cs, cb, ce = below(int(ref))
            assert np.linalg.norm(cs[:3] - s[:3]) + cs[3] <= s[3] * (1 + 1e-5) + 1e-6
            assert (cb[:3] >= bvh.node_box[node][:3] - 1e-6).all()
            assert (cb[3:] <= bvh.node_box[node][3:] + 1e-6).all()
            errors.append(ce)
        assert errors and bvh.node_max_error[node] == pytest.approx(max(errors), rel=1e-6)
