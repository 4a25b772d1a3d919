"""The measurement's parts on their own (`preprocess.measure`): which edges of a simplified
group are sampled from which side (`edge_sides`), and a whole level's measure of every original
position (`farthest_by_cluster`), exact against brute force. The measured errors of simplified
patches are held to dense brute-force distances in test_simplify (through `simplify_measured`),
those of whole DAGs in test_lod_errors and verify/test_errors."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from assets.shapes import geodesic_sphere_arrays
from preprocess.grid import max_distance_to_mesh
from preprocess.measure import edge_sides, farthest_by_cluster


def test_open_border_edges_are_sampled_from_their_only_side():
    """A new edge is sampled once: from its a < b side where both sides exist, and from its
    only side on an open border, whichever way that side runs (the bunny's level 7 held its
    largest distance at the midpoint of a border edge running b -> a, 4.5% beyond every
    sample); an input edge used once (a group's border with its neighbours) lies on the input."""
    none = np.zeros((0, 3), np.int32)
    # two triangles sharing 0-1; every other edge is a border edge
    sides = edge_sides(np.array([[0, 1, 2], [1, 0, 3]], np.int32), none)
    assert sides.tolist() == [[True, True, True], [False, True, True]]
    # each edge exactly once
    tri = np.array([[0, 1, 2], [1, 0, 3], [2, 1, 4]], np.int32)
    sides = edge_sides(tri, none)
    keys = {tuple(sorted((int(t[e]), int(t[(e + 1) % 3])))) for t in tri for e in range(3)}
    assert int(sides.sum()) == len(keys)
    # the border edges 2 -> 0 and 3 -> 1 are the input's: not sampled from their b -> a side
    sides = edge_sides(np.array([[0, 1, 2], [1, 0, 3]], np.int32),
                        np.array([[0, 1, 2], [0, 3, 1]], np.int32))
    assert sides.tolist() == [[True, True, False], [False, True, False]]


def test_the_whole_level_measure_passes_over_clusters_exactly() -> None:
    """`measure.farthest_by_cluster` (a whole level's measure of every original position) passes
    over a cluster whose sphere lies within the largest distance so far: its maximum must be the
    brute-force one (every position measured), whatever ranges of clusters it is split into,
    with the leftover row (unused positions, an infinite radius) measured point by point."""
    rng = np.random.default_rng(9)
    fine, _ = geodesic_sphere_arrays(24)
    fine = fine * (1.0 + 0.03 * rng.standard_normal((len(fine), 1)))  # a bumpy original
    fine[::97] *= 1.25  # a few spikes
    coarse, coarse_tris = geodesic_sphere_arrays(2)  # what a coarse level keeps
    positions = np.concatenate([fine, coarse]).astype(np.float32)
    tris = (np.asarray(coarse_tris) + len(fine)).astype(np.int32)
    # clusters: the fine positions sorted along a space-filling-ish key, 64 a cluster, each in its
    # bounding sphere; the coarse ones as the leftover row
    order = np.lexsort(np.floor(fine * 4).T).astype(np.int32)
    fine[order[-1]] *= 1.5  # the farthest, in the last cluster measured
    positions[: len(fine)] = fine
    rows = np.array_split(order, len(order) // 64)
    spheres = []
    for r in rows:
        p = positions[r].astype(np.float64)
        c = 0.5 * (p.min(axis=0) + p.max(axis=0))
        spheres.append([*c, np.sqrt(((p - c) ** 2).sum(axis=1)).max() * (1 + 1e-6)])
    spheres.append([0.0, 0.0, 0.0, np.inf])
    ids = np.concatenate([*rows, np.arange(len(fine), len(positions))]).astype(np.int32)
    off = np.cumsum([0, *map(len, rows), len(coarse)]).astype(np.int64)
    spheres = np.asarray(spheres, np.float32)
    truth = max_distance_to_mesh(positions, positions, tris).max()
    n = len(off) - 1
    for cuts in ([0, n], [0, n // 3, n], [0, 1, n // 2, n - 1, n]):
        got = max(farthest_by_cluster(positions, tris, spheres, off, ids, a, b)
                  for a, b in itertools.pairwise(cuts))
        assert got == pytest.approx(truth, rel=1e-12)
    # a floor (a distance some position has: the farthest removed one's, in the builder) only
    # lets clusters pass sooner: the same maximum, in one range or several
    some = max_distance_to_mesh(positions[order[::50]], positions, tris).max()
    for cuts in ([0, n], [0, n // 3, n]):
        got = max(farthest_by_cluster(positions, tris, spheres, off, ids, a, b, some)
                  for a, b in itertools.pairwise(cuts))
        assert got == pytest.approx(truth, rel=1e-12)
    # and clusters are passed over, not measured point by point: spheres of radius 0 at each
    # cluster's mean position (which the lone spike hardly moves) miss the farthest (the
    # exactness rests on the spheres holding their positions)
    shrunk = spheres.copy()
    for i, r in enumerate(rows):
        shrunk[i] = [*positions[r].mean(axis=0), 0.0]
    assert farthest_by_cluster(positions, tris, shrunk, off, ids, 0, n) < 0.9 * truth
