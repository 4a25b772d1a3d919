"""Tests of the structure checks (`preprocess.verify.structure`) on the hand-made DAG and BVH
(tests/preprocess/conftest.py), corrupted one thing at a time: each corruption must be caught,
and the valid DAG must pass.
"""

from __future__ import annotations

import numpy as np
import pytest

from preprocess.lod import BVH_EMPTY, Bvh, LodDag, bvh_group_ref
from preprocess.tess.limits import ROOT_ERROR
from preprocess.verify import VerifyError, check_bvh, check_dag, check_limits



def test_valid_dag_passes(dag: LodDag, bvh: Bvh) -> None:
    limits = check_limits(dag)
    assert limits["max_triangles"] == 128 and limits["level0_fill"] == 1.0
    fig = check_dag(dag)
    assert fig["clusters_per_level"] == [4, 2, 1]
    assert fig["triangles_per_level"] == [512, 34, 2]
    assert fig["min_error"] == pytest.approx(0.31) and fig["max_error"] == pytest.approx(0.35)
    assert check_bvh(dag, bvh) == {"nodes": 2, "depth": 1, "mean_fanout": 2.5, "leaves": 4}


# --------------------------------------------------------------------------------------------------
# limits


def test_129_triangles(dag: LodDag) -> None:
    dag.cluster_tri_offset[1] += 1
    with pytest.raises(VerifyError, match=r"cluster 0 .* 129 triangles"):
        check_limits(dag)


def test_empty_cluster(dag: LodDag) -> None:
    dag.cluster_tri_offset[1] = 0
    with pytest.raises(VerifyError, match="cluster 0 has 0 triangles"):
        check_limits(dag)


def test_too_many_vertices(dag: LodDag) -> None:
    # one wedge per triangle corner: c0 indexes 384 distinct wedges
    m = dag.mesh
    corners = dag.triangles.reshape(-1)
    m.wedge_position = m.wedge_position[corners]
    m.wedge_normal = m.wedge_normal[corners]
    dag.triangles = np.arange(len(corners), dtype=np.int32).reshape(-1, 3)
    with pytest.raises(VerifyError, match=r"cluster 0 .* 384 distinct vertices"):
        check_limits(dag)


def test_degenerate_triangle(dag: LodDag) -> None:
    dag.triangles[5, 1] = dag.triangles[5, 0]
    with pytest.raises(VerifyError, match="triangle 5 of cluster 0 is degenerate"):
        check_limits(dag)


# --------------------------------------------------------------------------------------------------
# DAG structure, errors, spheres, root


def test_error_not_monotonic(dag: LodDag) -> None:
    dag.group_error[2] = 0.2  # below its members' (c4, c5) self errors
    with pytest.raises(VerifyError, match="error not monotonic: cluster 4"):
        check_dag(dag)


def test_generated_error_differs_from_source(dag: LodDag) -> None:
    dag.cluster_self_error[4] = 0.3
    with pytest.raises(VerifyError, match=r"cluster 4 has self error .* generated from group 0"):
        check_dag(dag)


def test_generated_sphere_differs_from_source(dag: LodDag) -> None:
    dag.cluster_self_sphere[5, 3] *= 0.9
    with pytest.raises(VerifyError, match="cluster 5 has self sphere"):
        check_dag(dag)


def test_level0_error_must_be_zero(dag: LodDag) -> None:
    dag.cluster_self_error[2] = 0.01
    with pytest.raises(VerifyError, match="level 0 cluster 2 has self error"):
        check_dag(dag)


def test_sphere_not_nested(dag: LodDag) -> None:
    dag.group_sphere[3, 3] *= 0.99  # the root sphere no longer holds c6's self sphere
    with pytest.raises(VerifyError, match=r"sphere not nested: .* cluster 6 .* group 3"):
        check_dag(dag)


def test_sphere_not_nested_by_center(dag: LodDag) -> None:
    dag.group_sphere[0, 1] += 0.01  # G0 shifted along y, where it is tight: c0 pokes out
    dag.cluster_self_sphere[4] = dag.group_sphere[0]
    with pytest.raises(VerifyError, match="sphere not nested"):
        check_dag(dag)


def test_epsilon_is_relative(dag: LodDag) -> None:
    dag.group_sphere[3, 3] *= 1 - 2e-6  # within SPHERE_REL_EPS: accepted
    check_dag(dag)


def test_bounds_miss_a_vertex(dag: LodDag) -> None:
    dag.cluster_bounds[3, 3] *= 0.9
    with pytest.raises(VerifyError, match=r"cluster_bounds .* of cluster 3 misses"):
        check_dag(dag)


def test_cluster_in_two_groups(dag: LodDag) -> None:
    dag.group_clusters[1] = 0
    with pytest.raises(VerifyError, match="cluster 0 is listed 2 times"):
        check_dag(dag)


def test_cluster_group_inconsistent(dag: LodDag) -> None:
    dag.cluster_group[2] = 0
    with pytest.raises(VerifyError, match="cluster 2 is listed in group 1 but its cluster_group"):
        check_dag(dag)


def test_source_at_level0(dag: LodDag) -> None:
    dag.cluster_source_group[1] = 0
    with pytest.raises(VerifyError, match="cluster 1 has level 0 and source group 0"):
        check_dag(dag)


def test_generated_not_coarser(dag: LodDag) -> None:
    dag.cluster_level[6] = 1
    with pytest.raises(VerifyError, match=r"cluster 6 .* generated from group 2 of level 1"):
        check_dag(dag)


def test_level0_must_be_the_original(dag: LodDag) -> None:
    dag.mesh.triangles = dag.mesh.triangles[1:]
    with pytest.raises(VerifyError, match="level 0 holds 512 triangles, the original mesh 511"):
        check_dag(dag)


def test_level0_must_hold_the_original_triangles_as_oriented(dag: LodDag,
                                                              monkeypatch) -> None:
    # the same count, one triangle flipped: the multiset hashes differ, and the sorted rows
    # name it (or, past EXACT_LEVEL0_TRIANGLES, only say so)
    import preprocess.verify.structure as structure

    check_dag(dag)  # rotated rows are the same triangle
    dag.mesh.triangles = np.roll(dag.mesh.triangles, 1, axis=1)
    check_dag(dag)
    dag.mesh.triangles[5] = dag.mesh.triangles[5, ::-1]
    with pytest.raises(VerifyError, match=r"level 0 triangles differ from the original mesh's: "
                                          r"sorted row \d+ is \[.*\] at level 0 but"):
        check_dag(dag)
    monkeypatch.setattr(structure, "EXACT_LEVEL0_TRIANGLES", 10)
    with pytest.raises(VerifyError, match=r"level 0 triangles differ from the original mesh's "
                                          r"\(wedge ids, orientation kept\)"):
        check_dag(dag)


def test_root_group_mismatch(dag: LodDag) -> None:
    dag.root_group = 2
    with pytest.raises(VerifyError, match="generated from the root group 2"):
        check_dag(dag)


def test_two_roots(dag: LodDag) -> None:
    dag.group_error[1] = ROOT_ERROR
    dag.cluster_self_error[5] = ROOT_ERROR  # consistent with its source, and monotonic
    dag.group_error[2] = ROOT_ERROR
    dag.cluster_self_error[6] = ROOT_ERROR
    with pytest.raises(VerifyError, match="3 groups have error ROOT_ERROR"):
        check_dag(dag)


def test_group_that_does_not_reach_the_root(dag: LodDag) -> None:
    # c6 now claims to come from G1: G2 = {c4, c5} generates nothing and is a dead end
    dag.cluster_source_group[6] = 1
    dag.cluster_self_error[6] = dag.group_error[1]
    dag.cluster_self_sphere[6] = dag.group_sphere[1]
    with pytest.raises(VerifyError, match=r"2 groups do not reach the root.* group 2 .*no cluster"):
        check_dag(dag)


# --------------------------------------------------------------------------------------------------
# BVH


def test_bvh_node_does_not_contain_child(dag: LodDag, bvh: Bvh) -> None:
    bvh.node_sphere[1, 3] *= 0.9  # node 1 no longer holds G0 and G1
    with pytest.raises(VerifyError, match=r"BVH node 1 .* does not contain its leaf group"):
        check_bvh(dag, bvh)


def test_bvh_root_does_not_contain_child_node(dag: LodDag, bvh: Bvh) -> None:
    bvh.node_sphere[1, 0] += 1.0
    bvh.node_sphere[1, 3] += 1.0  # still holds its groups, but pokes out of node 0
    with pytest.raises(VerifyError, match=r"BVH node 0 .* does not contain its child node 1"):
        check_bvh(dag, bvh)


def test_bvh_node_misses_cluster_bounds(dag: LodDag, bvh: Bvh) -> None:
    # cluster 4's triangles poke out of its group's LOD sphere, and so out of node 0
    dag.cluster_bounds[4, :3] = bvh.node_sphere[0, :3] + [bvh.node_sphere[0, 3], 0, 0]
    with pytest.raises(VerifyError, match=r"BVH node 0 .* does not contain the bounds .* of "
                       r"cluster 4"):
        check_bvh(dag, bvh)


def test_bvh_group_missing(dag: LodDag, bvh: Bvh) -> None:
    bvh.node_children[0, 2] = BVH_EMPTY
    with pytest.raises(VerifyError, match="group 3 appears 0 times"):
        check_bvh(dag, bvh)


def test_bvh_group_twice(dag: LodDag, bvh: Bvh) -> None:
    bvh.node_children[1, 2] = bvh_group_ref(2)
    with pytest.raises(VerifyError, match="group 2 appears 2 times"):
        check_bvh(dag, bvh)


def test_bvh_max_error_wrong(dag: LodDag, bvh: Bvh, grid) -> None:
    bvh.node_max_error[1] = grid.errors[0]
    with pytest.raises(VerifyError, match="BVH node 1 has max error"):
        check_bvh(dag, bvh)


def test_bvh_depth_wrong(dag: LodDag, bvh: Bvh) -> None:
    bvh.node_depth[1] = 2
    with pytest.raises(VerifyError, match="node 1 has depth 2"):
        check_bvh(dag, bvh)


def test_bvh_cycle(dag: LodDag, bvh: Bvh) -> None:
    bvh.node_children[1, 2] = 1
    with pytest.raises(VerifyError, match="node 1 is the child of 2 nodes"):
        check_bvh(dag, bvh)


def test_bvh_fanout(dag: LodDag, bvh: Bvh) -> None:
    bvh.node_children = np.concatenate([bvh.node_children, np.full((2, 1), -1, np.int32)], 1)
    with pytest.raises(VerifyError, match="node_children has shape"):
        check_bvh(dag, bvh)
