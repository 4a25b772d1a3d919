"""Tests of the checker itself (`preprocess.verify`) on a DAG built by hand, corrupted one thing at
a time: each corruption must be caught, and the valid DAG must pass.

The hand-made DAG covers a 16 x 16 quad height field (vertex (x, y) has id 17 y + x, |z| <= 0.15):

    level 0: c0 = left-bottom, c1 = left-top, c2 = right-bottom, c3 = right-top (128 triangles each)
    groups:  G0 = {c0, c1} (error 0.31), G1 = {c2, c3} (error 0.32)
    level 1: c4 from G0, c5 from G1: fans over each half that keep the shared column x = 8 (locked)
    group:   G2 = {c4, c5} (error 0.35)
    level 2: c6 from G2: the two triangles of the square
    root:    G3 = {c6}
    BVH:     node 0 -> [node 1, G2, G3]; node 1 -> [G0, G1]

Every simplified surface interpolates vertices with |z| <= 0.15 over the same square, so it lies
within 0.3 of the original: the errors above are honest.
"""

from __future__ import annotations

import numpy as np
import pytest

from preprocess.cut import projected_error, select_cut, select_cut_bvh
from preprocess.distance import max_distance_to_mesh, point_triangle_d2_of
from preprocess.tess.limits import ROOT_ERROR
from preprocess.lod import BVH_EMPTY, Bvh, LodDag, bvh_group_ref
from preprocess.mesh import Mesh
from preprocess.verify import (
    VerifyError,
    check_all,
    check_bvh,
    check_cut,
    check_dag,
    check_honest_error,
    check_limits,
)

N = 16  # quads per side
ERRORS = (0.31, 0.32, 0.35)


def vid(x: int, y: int) -> int:
    return y * (N + 1) + x


def grid_positions() -> np.ndarray:
    """(289, 3) float32 height field."""
    y, x = np.mgrid[0 : N + 1, 0 : N + 1].astype(np.float64)
    z = 0.15 * np.sin(0.9 * x) * np.cos(0.7 * y)
    return np.stack([x, y, z], axis=-1).reshape(-1, 3).astype(np.float32)


def quads(xs: range, ys: range) -> list[tuple[int, int, int]]:
    tris = []
    for y in ys:
        for x in xs:
            a, b, c, d = vid(x, y), vid(x + 1, y), vid(x + 1, y + 1), vid(x, y + 1)
            tris += [(a, b, c), (a, c, d)]
    return tris


def bounds(points: np.ndarray) -> np.ndarray:
    p = points.astype(np.float64)
    c = 0.5 * (p.min(axis=0) + p.max(axis=0))
    r = np.linalg.norm(p - c, axis=1).max() * (1 + 1e-6)
    return np.array([*c, r], np.float32)


def merge(spheres: np.ndarray) -> np.ndarray:
    s = spheres.astype(np.float64)
    c = 0.5 * ((s[:, :3] - s[:, 3:]).min(axis=0) + (s[:, :3] + s[:, 3:]).max(axis=0))
    r = (np.linalg.norm(s[:, :3] - c, axis=1) + s[:, 3]).max() * (1 + 1e-6)
    return np.array([*c, r], np.float32)


def union_box(boxes: np.ndarray) -> np.ndarray:
    return np.concatenate([boxes[:, :3].min(axis=0), boxes[:, 3:].max(axis=0)])


def make_dag() -> tuple[LodDag, Bvh]:
    pos = grid_positions()
    h = N // 2
    level0 = [quads(range(h), range(h)), quads(range(h), range(h, N)),
              quads(range(h, N), range(h)), quads(range(h, N), range(h, N))]
    c4 = [(vid(0, 0), vid(h, j), vid(h, j + 1)) for j in range(N)]
    c4 += [(vid(0, 0), vid(h, N), vid(0, N))]
    c5 = [(vid(N, 0), vid(h, j + 1), vid(h, j)) for j in range(N)]
    c5 += [(vid(N, 0), vid(N, N), vid(h, N))]
    c6 = [(vid(0, 0), vid(N, 0), vid(N, N)), (vid(0, 0), vid(N, N), vid(0, N))]
    clusters = [*level0, c4, c5, c6]
    tris = np.array([t for c in clusters for t in c], np.int32)
    offsets = np.cumsum([0] + [len(c) for c in clusters]).astype(np.int64)
    mesh = Mesh(
        positions=pos,
        triangles=np.array([t for c in level0 for t in c], np.int32),
        wedge_position=np.arange(len(pos), dtype=np.int32),
        wedge_normal=np.tile(np.array([0, 0, 1], np.float32), (len(pos), 1)),
        name="grid",
    )
    cb = np.stack([bounds(pos[np.array(c).reshape(-1)]) for c in clusters])
    self_sphere = cb.copy()
    g_sphere = np.zeros((4, 4), np.float32)
    g_sphere[0] = merge(self_sphere[[0, 1]])
    g_sphere[1] = merge(self_sphere[[2, 3]])
    self_sphere[4], self_sphere[5] = g_sphere[0], g_sphere[1]
    g_sphere[2] = merge(self_sphere[[4, 5]])
    self_sphere[6] = g_sphere[2]
    g_sphere[3] = merge(self_sphere[[6]])
    g_error = np.array([*ERRORS, ROOT_ERROR], np.float32)
    dag = LodDag(
        mesh=mesh,
        triangles=tris,
        cluster_tri_offset=offsets,
        cluster_level=np.array([0, 0, 0, 0, 1, 1, 2], np.int32),
        cluster_group=np.array([0, 0, 1, 1, 2, 2, 3], np.int32),
        cluster_source_group=np.array([-1, -1, -1, -1, 0, 1, 2], np.int32),
        cluster_bounds=cb,
        cluster_self_sphere=self_sphere,
        cluster_self_error=np.array([0, 0, 0, 0, g_error[0], g_error[1], g_error[2]], np.float32),
        group_level=np.array([0, 0, 1, 2], np.int32),
        group_cluster_offset=np.array([0, 2, 4, 6, 7], np.int64),
        group_clusters=np.arange(7, dtype=np.int32),
        group_sphere=g_sphere,
        group_error=g_error,
        root_group=3,
    )
    children = np.full((2, 8), BVH_EMPTY, np.int32)
    children[0, :3] = [1, bvh_group_ref(2), bvh_group_ref(3)]
    children[1, :2] = [bvh_group_ref(0), bvh_group_ref(1)]
    n1 = merge(g_sphere[[0, 1]])
    bvh = Bvh(
        node_sphere=np.stack([merge(np.stack([n1, g_sphere[2], g_sphere[3]])), n1]),
        node_box=np.stack([union_box(dag.cluster_boxes()[:7]), union_box(dag.cluster_boxes()[:4])]),
        node_max_error=np.array([ROOT_ERROR, ERRORS[1]], np.float32),
        node_children=children,
        node_depth=np.array([0, 1], np.int32),
    )
    return dag, bvh


@pytest.fixture
def dag() -> LodDag:
    return make_dag()[0]


@pytest.fixture
def bvh() -> Bvh:
    return make_dag()[1]


def remove_triangle(dag: LodDag, cluster: int, k: int) -> None:
    row = int(dag.cluster_tri_offset[cluster]) + k
    dag.triangles = np.delete(dag.triangles, row, axis=0)
    dag.cluster_tri_offset = dag.cluster_tri_offset.copy()
    dag.cluster_tri_offset[cluster + 1 :] -= 1


# --------------------------------------------------------------------------------------------------
# the valid DAG passes


def test_valid_dag_passes(dag: LodDag, bvh: Bvh) -> None:
    limits = check_limits(dag)
    assert limits["max_triangles"] == 128 and limits["level0_fill"] == 1.0
    fig = check_dag(dag)
    assert fig["clusters_per_level"] == [4, 2, 1]
    assert fig["triangles_per_level"] == [512, 34, 2]
    assert fig["min_error"] == pytest.approx(0.31) and fig["max_error"] == pytest.approx(0.35)
    assert check_bvh(dag, bvh) == {"nodes": 2, "depth": 1, "mean_fanout": 2.5, "leaves": 4}


@pytest.mark.parametrize("cut", [[0, 1, 2, 3], [4, 2, 3], [0, 1, 5], [4, 5], [6]])
def test_valid_cuts_pass(dag: LodDag, cut: list[int]) -> None:
    fig = check_cut(dag, np.array(cut))
    assert fig["clusters"] == len(cut)
    assert abs(fig["area_ratio"] - 1) < 0.02
    assert fig["flipped_edges"] == 0
    assert fig["border_edges"] > 0


@pytest.mark.slow
def test_select_cut_follows_the_rule(dag: LodDag, bvh: Bvh) -> None:
    assert select_cut(dag, 0.1).tolist() == [0, 1, 2, 3]
    assert select_cut(dag, 0.315).tolist() == [2, 3, 4]
    assert select_cut(dag, 0.33).tolist() == [4, 5]
    assert select_cut(dag, 1e30).tolist() == [6]
    # from a camera near the left half, the left half is finer than the right
    cam = np.array([2.0, 8.0, 1.0])
    scale = 10.0
    taus = np.geomspace(0.01, 100, 200)
    mixed = 0
    for tau in taus:
        cut = select_cut(dag, tau, cam, scale)
        check_cut(dag, cut)
        assert select_cut_bvh(dag, bvh, tau, cam, scale).tolist() == cut.tolist()
        mixed += cut.tolist() in ([0, 1, 5], [4, 2, 3])
    assert mixed > 0


def test_check_all_passes(dag: LodDag, bvh: Bvh) -> None:
    fig = check_all(dag, bvh, thresholds=20)
    assert len(fig["cuts"]) == 20 * 4
    assert fig["cuts"][0]["levels"] == [4] and fig["cuts"][19]["levels"] == [0, 0, 1]
    assert 0 < fig["honest"]["max_ratio"] <= 1
    assert fig["honest"]["points"] > 3 * 64
    lo, hi = fig["area_ratio"]
    assert 0.98 < lo <= hi < 1.02
    assert check_all(dag, None, thresholds=2, honest=False)["bvh"] is None


# --------------------------------------------------------------------------------------------------
# cuts: coverage, cracks, orientation, area


@pytest.mark.parametrize(
    ("cut", "message"),
    [
        ([], "empty"),
        ([0, 1, 2], "hole"),  # c3 missing
        ([4, 2], "hole"),
        ([0, 0, 1, 2, 3], "appears 2 times"),
        ([4, 0, 2, 3], "overlap"),  # c0 and its simplification c4
        ([6, 0], "overlap"),
        ([0, 1, 2, 3, 5], "overlap"),
        ([0, 1, 2, 3, 6], "overlap"),
        ([7], "out of range"),
    ],
)
def test_bad_cuts_fail(dag: LodDag, cut: list[int], message: str) -> None:
    with pytest.raises(VerifyError, match=message):
        check_cut(dag, np.array(cut, np.int64))


def test_missing_triangle_is_a_crack(dag: LodDag) -> None:
    remove_triangle(dag, 2, 40)  # an interior triangle of c2
    with pytest.raises(VerifyError, match="crack"):
        check_cut(dag, np.array([0, 1, 2, 3]))


def test_t_junction_between_levels_is_a_crack(dag: LodDag) -> None:
    # c4 rebuilt without the odd vertices of the shared column: c4 next to c2, c3 cracks
    h = N // 2
    c4 = [(vid(0, 0), vid(h, j), vid(h, j + 2)) for j in range(0, N, 2)]
    c4 += [(vid(0, 0), vid(h, N), vid(0, N))]
    o = dag.cluster_tri_offset
    tris = np.concatenate([dag.triangles[: o[4]], np.array(c4, np.int32), dag.triangles[o[5] :]])
    offsets = o.copy()
    offsets[5:] -= (o[5] - o[4]) - len(c4)
    dag.triangles, dag.cluster_tri_offset = tris, offsets
    with pytest.raises(VerifyError, match="crack"):
        check_cut(dag, np.array([4, 2, 3]))


def test_flipped_triangle_fails_orientation(dag: LodDag) -> None:
    row = int(dag.cluster_tri_offset[1]) + 50
    dag.triangles[row] = dag.triangles[row][::-1]
    with pytest.raises(VerifyError, match="orientation"):
        check_cut(dag, np.array([0, 1, 2, 3]))


def test_area_is_measured(dag: LodDag) -> None:
    ratio = check_cut(dag, np.array([6]))["area_ratio"]
    assert 0.99 < ratio < 1.0  # a flat square under a bumpy one
    # the tolerance grows with the cut's error (2 e / R): with no error, only area_tolerance is left
    dag.cluster_self_error[6] = 0
    # beyond it, lost area passes only where the original lies within the error of the cut
    # everywhere (a sheet beside a kept one): the bumps lie above the flat square
    with pytest.raises(VerifyError, match=r"area.*the original lies up to"):
        check_cut(dag, np.array([6]), area_tolerance=0.5 * (1 - ratio))


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


def test_bvh_max_error_wrong(dag: LodDag, bvh: Bvh) -> None:
    bvh.node_max_error[1] = ERRORS[0]
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


def test_bvh_traversal_matches_rule(dag: LodDag, bvh: Bvh) -> None:
    for tau in (0.1, 0.315, 0.33, 0.5, 1e30):
        assert select_cut_bvh(dag, bvh, tau, None, 1.0).tolist() == select_cut(dag, tau).tolist()


# --------------------------------------------------------------------------------------------------
# honest errors and distances


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


def test_distances_are_exact() -> None:
    """The distances the checks measure (`preprocess.distance.max_distance_to_mesh`: the nearest
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


# --------------------------------------------------------------------------------------------------
# projected error


def test_projected_error() -> None:
    spheres = np.array([[0, 0, 0, 1], [0, 0, 0, 2], [10, 0, 0, 1]], np.float32)
    errors = np.array([0.5, 1.0, ROOT_ERROR], np.float32)
    assert projected_error(spheres, errors).tolist() == [0.5, 1.0, np.inf]
    cam = np.array([5.0, 0, 0])
    p = projected_error(spheres, errors, cam, scale=100.0)
    assert p[0] == pytest.approx(0.5 * 100 / 4) and p[1] == pytest.approx(1.0 * 100 / 3)
    assert p[2] == np.inf  # the root stays infinite
    inside = projected_error(spheres[:1], errors[:1], np.zeros(3))
    assert inside[0] > 1e9  # a camera inside the sphere refines
    assert projected_error(spheres[:1], np.zeros(1, np.float32), np.zeros(3))[0] == 0
