"""Tests of preprocess.simplify (the group simplifier) through preprocess.measure.simplify_measured:
the collapses the DAG builder runs, measured as it measures a group of level 0."""

from __future__ import annotations

import numpy as np
import pytest

from preprocess.grid import farthest_distance, max_distance_to_mesh
from preprocess.measure import SAMPLED_FACTOR, simplify_measured

# ------------------------------------------------------------------------------------------------
# Small meshes
# ------------------------------------------------------------------------------------------------


def grid(n: int, noise: float = 0.0, seed: int = 0):
    """(n+1) x (n+1) vertices on [0, 1]^2 at z = 0 (plus noise in z), 2 n^2 triangles, CCW up."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0 : n + 1, 0 : n + 1] / n
    z = noise * rng.standard_normal(x.shape)
    pos = np.stack([x, y, z], -1).reshape(-1, 3).astype(np.float32)
    idx = np.arange((n + 1) ** 2).reshape(n + 1, n + 1)
    a, b, c, d = idx[:-1, :-1], idx[:-1, 1:], idx[1:, 1:], idx[1:, :-1]
    tris = np.concatenate(
        [np.stack([a, b, c], -1).reshape(-1, 3), np.stack([a, c, d], -1).reshape(-1, 3)]
    ).astype(np.int32)
    return pos, tris


def icosphere(level: int):
    """Unit ico-sphere: 20 * 4**level triangles, CCW seen from outside."""
    t = (1 + 5**0.5) / 2
    v = [
        (-1, t, 0), (1, t, 0), (-1, -t, 0), (1, -t, 0), (0, -1, t), (0, 1, t),
        (0, -1, -t), (0, 1, -t), (t, 0, -1), (t, 0, 1), (-t, 0, -1), (-t, 0, 1),
    ]  # fmt: skip
    f = [
        (0, 11, 5), (0, 5, 1), (0, 1, 7), (0, 7, 10), (0, 10, 11), (1, 5, 9), (5, 11, 4),
        (11, 10, 2), (10, 7, 6), (7, 1, 8), (3, 9, 4), (3, 4, 2), (3, 2, 6), (3, 6, 8),
        (3, 8, 9), (4, 9, 5), (2, 4, 11), (6, 2, 10), (8, 6, 7), (9, 8, 1),
    ]  # fmt: skip
    verts = [np.array(p, float) / np.linalg.norm(p) for p in v]
    faces = f
    for _ in range(level):
        cache: dict[tuple[int, int], int] = {}

        def mid(i: int, j: int, cache: dict = cache) -> int:
            key = (min(i, j), max(i, j))
            if key not in cache:
                m = verts[i] + verts[j]
                verts.append(m / np.linalg.norm(m))
                cache[key] = len(verts) - 1
            return cache[key]

        new = []
        for a, b, c in faces:
            ab, bc, ca = mid(a, b), mid(b, c), mid(c, a)
            new += [(a, ab, ca), (b, bc, ab), (c, ca, bc), (ab, bc, ca)]
        faces = new
    return np.array(verts, np.float32), np.array(faces, np.int32)


def no_wedges(pos):
    """One wedge per position: (wedge_position, wedge_attr)."""
    return np.arange(len(pos), dtype=np.int32), pos.copy()


def tri_normals(pos, pt):
    p = pos[pt].astype(np.float64)
    return np.cross(p[:, 1] - p[:, 0], p[:, 2] - p[:, 0])


def edges_once(pt):
    """Undirected edges used by exactly one triangle, as a set of sorted pairs."""
    e = np.sort(np.concatenate([pt[:, [0, 1]], pt[:, [1, 2]], pt[:, [2, 0]]]), axis=1)
    uniq, count = np.unique(e, axis=0, return_counts=True)
    return {tuple(x) for x in uniq[count == 1]}


def assert_valid(pos, pt):
    """No triangle with two equal positions, no duplicate triangles, no zero-area triangle."""
    assert (pt[:, 0] != pt[:, 1]).all() and (pt[:, 1] != pt[:, 2]).all()
    assert (pt[:, 2] != pt[:, 0]).all()
    key = np.sort(pt, axis=1)
    assert len(np.unique(key, axis=0)) == len(pt), "duplicate triangles"
    assert (np.linalg.norm(tri_normals(pos, pt), axis=1) > 0).all()


def edge_counts(pt):
    """{sorted undirected edge: number of triangles using it}."""
    e = np.sort(np.concatenate([pt[:, [0, 1]], pt[:, [1, 2]], pt[:, [2, 0]]]), axis=1)
    uniq, count = np.unique(e, axis=0, return_counts=True)
    return {tuple(int(v) for v in x): int(k) for x, k in zip(uniq, count, strict=True)}


def assert_border_kept(pos, pt_in, pt_out, locked):
    """The crack-free contract with the neighbours and the original border: no edge used by more
    than two triangles; an output edge used once joins two input border vertices; an input border
    edge between two locked vertices is still used exactly once; two output triangles on an edge
    use it in opposite directions (no fold)."""
    cin = edge_counts(pt_in)
    cout = edge_counts(pt_out)
    border_v = {v for e, k in cin.items() if k == 1 for v in e}
    assert max(cout.values()) <= 2, "an edge is used by more than two triangles"
    for e, k in cout.items():
        if k == 1:
            assert e[0] in border_v and e[1] in border_v, f"new border edge {e}"
    for e, k in cin.items():
        if k == 1 and locked[e[0]] and locked[e[1]]:
            assert cout.get(e, 0) == 1, f"locked border edge {e} used {cout.get(e, 0)} times"
    directed = np.concatenate([pt_out[:, [0, 1]], pt_out[:, [1, 2]], pt_out[:, [2, 0]]])
    assert len(np.unique(directed, axis=0)) == len(directed), "an edge used twice the same way"


def dense_points(pos, pt, k: int, seed: int = 0):
    """k uniform random points on each triangle, (len(pt) * k, 3) float64."""
    rng = np.random.default_rng(seed)
    r = rng.random((len(pt), k, 2))
    flip = r.sum(-1) > 1
    r[flip] = 1 - r[flip]
    p = pos[pt].astype(np.float64)
    a, b, c = p[:, None, 0], p[:, None, 1], p[:, None, 2]
    return (a + r[..., :1] * (b - a) + r[..., 1:] * (c - a)).reshape(-1, 3)


# ------------------------------------------------------------------------------------------------
# Tests
# ------------------------------------------------------------------------------------------------


def test_hexagon_fan_exact():
    """The centre of a flat hexagon fan collapses onto a rim vertex: 6 -> 4 triangles, error ~0.

      6---5
     / \\ / \\        the rim is an open border (locked); only the centre 0 can move
    1---0---4
     \\ / \\ /
      2---3
    """
    ang = np.arange(6) * np.pi / 3 + np.pi
    pos = np.concatenate([[[0, 0, 0]], np.stack([np.cos(ang), np.sin(ang), 0 * ang], -1)])
    pos = pos.astype(np.float32)
    tris = np.array([[0, i, i % 6 + 1] for i in range(1, 7)], np.int32)
    assert (tri_normals(pos, tris)[:, 2] > 0).all()
    wp, wa = no_wedges(pos)
    out, err = simplify_measured(pos, tris, wp, wa, np.zeros(7, bool), 4)
    assert out.shape == (4, 3) and out.dtype == np.int32
    assert 0 not in out
    assert edges_once(out) == edges_once(tris)
    assert (tri_normals(pos, out)[:, 2] > 0).all()
    assert err < 1e-5


def test_flat_grid_halves_with_zero_error():
    pos, tris = grid(16)
    wp, wa = no_wedges(pos)
    out, err = simplify_measured(pos, tris, wp, wa, np.zeros(len(pos), bool), len(tris) // 2)
    assert len(tris) // 2 - 1 <= len(out) <= len(tris) // 2
    assert err < 1e-5
    assert_valid(pos, out)
    assert (tri_normals(pos, out)[:, 2] > 0).all()
    # the open border slides along itself only: output border edges join input border vertices
    # on one side of the square, and the four corners stay
    assert_border_kept(pos, tris, out, np.zeros(len(pos), bool))
    for a, b in edges_once(out):
        assert np.any(np.isclose(pos[a, :2], pos[b, :2]) & np.isclose(pos[a, :2] % 1.0, 0.0))
    assert {0, 16, 17 * 16, 17 * 17 - 1} <= set(out.reshape(-1).tolist())
    # the output still covers the square: same area
    assert np.isclose(np.linalg.norm(tri_normals(pos, out), axis=1).sum() / 2, 1.0, atol=1e-5)


def test_locked_border_of_noisy_patch_is_kept():
    pos, tris = grid(20, noise=0.01, seed=3)
    wp, wa = no_wedges(pos)
    rng = np.random.default_rng(5)
    locked = rng.random(len(pos)) < 0.1
    out, err = simplify_measured(pos, tris, wp, wa, locked, len(tris) // 2)
    assert len(out) <= len(tris) // 2 + 1
    assert_valid(pos, out)
    assert_border_kept(pos, tris, out, locked)
    kept = np.zeros(len(pos), bool)
    kept[out.reshape(-1)] = True
    assert kept[locked].all(), "a locked vertex was removed"
    assert err > 0
    d = max_distance_to_mesh(dense_points(pos, out, 40), pos, tris)
    assert d.max() <= err


def test_icosphere_reaches_target_with_honest_error():
    pos, tris = icosphere(3)  # 1280 triangles
    wp, wa = no_wedges(pos)
    target = 640
    out, err = simplify_measured(pos, tris, wp, wa, np.zeros(len(pos), bool), target)
    assert target - 1 <= len(out) <= target
    assert_valid(pos, out)
    # closed and manifold: every edge used twice, no open border
    assert not edges_once(out)
    # no flipped triangle: all normals point outward
    n = tri_normals(pos, out)
    assert ((n * pos[out].mean(axis=1)).sum(-1) > 0).all()
    # the error is honest against dense independent sampling, and not absurdly loose
    d = max_distance_to_mesh(dense_points(pos, out, 200, seed=1), pos, tris)
    assert d.max() <= err
    assert err < 1.3 * d.max() + 1e-6
    assert 0 < err < 0.05


def test_noisy_sphere_error_is_an_upper_bound():
    pos, tris = icosphere(3)
    rng = np.random.default_rng(11)
    pos = (pos * (1 + 0.02 * rng.standard_normal((len(pos), 1)))).astype(np.float32)
    wp, wa = no_wedges(pos)
    # the builder's measure: SAMPLED_FACTOR times the larger of the largest distance over its
    # samples to the input and of the removed vertices' to the output, each at most the true
    # two-sided distance (so the error is at most the factor times that, + slack; its samples
    # can find a point farther than 300 random ones a triangle: here 1.01x); the factor's margin
    # lifts it above the dense one-sided distance
    for target in (640, 320):
        out, err = simplify_measured(pos, tris, wp, wa, np.zeros(len(pos), bool), target)
        assert_valid(pos, out)
        d = max_distance_to_mesh(dense_points(pos, out, 300, seed=target), pos, tris)
        assert d.max() <= err
        back = farthest_distance(pos, pos, out)  # every input vertex to the output
        assert err < 1.02 * SAMPLED_FACTOR * max(d.max(), back) + 1e-5


def test_everything_locked_returns_input():
    pos, tris = icosphere(2)
    wp, wa = no_wedges(pos)
    out, err = simplify_measured(pos, tris, wp, wa, np.ones(len(pos), bool), 10)
    assert np.array_equal(out, tris)
    assert err == 0.0


def test_target_above_count_returns_input():
    pos, tris = grid(4)
    wp, wa = no_wedges(pos)
    out, err = simplify_measured(pos, tris, wp, wa, np.zeros(len(pos), bool), 1000)
    assert np.array_equal(out, tris) and err == 0.0


def seam_grid(n: int):
    """A flat n x n grid whose middle column x = 1/2 is a UV seam: positions there have two wedges,
    one for the left chart and one for the right chart. Returns (pos, tris as wedge ids,
    wedge_position, wedge_attr (normal + uv), chart of each wedge, seam positions)."""
    pos, pt = grid(n)
    x = pos[:, 0]
    seam = np.where(np.isclose(x, 0.5))[0]
    k = len(pos)
    wedge_position = np.concatenate([np.arange(k), seam]).astype(np.int32)
    right_wedge = np.full(k, -1)
    right_wedge[seam] = k + np.arange(len(seam))
    chart = np.concatenate([np.where(x <= 0.5, 0, 1), np.ones(len(seam), int)])
    tris = pt.copy()
    centroid_x = pos[pt][:, :, 0].mean(axis=1)
    for t in np.where(centroid_x > 0.5)[0]:
        for c in range(3):
            if right_wedge[pt[t, c]] >= 0:
                tris[t, c] = right_wedge[pt[t, c]]
    uv = pos[wedge_position, :2].copy()
    uv[chart == 1, 0] += 3.0  # the right chart lives elsewhere in texture space
    normal = np.tile([0.0, 0.0, 1.0], (len(wedge_position), 1))
    attr = np.concatenate([normal, uv], axis=1).astype(np.float32)
    return pos, tris.astype(np.int32), wedge_position, attr, chart, set(seam.tolist())


def test_uv_seam_is_preserved():
    pos, tris, wp, attr, chart, seam = seam_grid(16)
    assert (chart[tris] == chart[tris][:, :1]).all()  # every input triangle in one chart
    out, err = simplify_measured(pos, tris, wp, attr, np.zeros(len(pos), bool), len(tris) // 2)
    assert len(out) <= len(tris) // 2 + 1
    pt = wp[out]
    assert_valid(pos, pt)
    assert err < 1e-5
    # every output triangle still lies in one chart: wedges picked on the right side of the seam
    assert (chart[out] == chart[out][:, :1]).all()
    # seam positions kept are a subset of the input's, and still have both wedges
    wedges_of: dict[int, set[int]] = {}
    for w in out.reshape(-1):
        wedges_of.setdefault(int(wp[w]), set()).add(int(w))
    out_seam = {p for p, ws in wedges_of.items() if len(ws) > 1}
    assert out_seam <= seam
    assert out_seam == seam & set(wedges_of)
    assert len(out_seam) >= 2
    for p in out_seam:
        assert len(wedges_of[p]) == 2
    # seam positions stay on the seam line x = 1/2 (a seam vertex only slides along the seam)
    assert np.allclose(pos[sorted(out_seam), 0], 0.5)
    # the seam is still an unbroken chain from bottom to top: the edges between seam positions
    seam_edges = {
        tuple(sorted((int(a), int(b))))
        for tri in pt
        for a, b in ((tri[0], tri[1]), (tri[1], tri[2]), (tri[2], tri[0]))
        if a in out_seam and b in out_seam
    }
    ys = sorted(pos[p, 1] for p in out_seam)
    assert ys[0] == 0.0 and ys[-1] == 1.0
    assert len(seam_edges) == len(out_seam) - 1


@pytest.mark.parametrize("seed", [0, 1])
def test_random_locks_on_noisy_sphere_stay_valid(seed):
    pos, tris = icosphere(3)
    rng = np.random.default_rng(seed)
    pos = (pos * (1 + 0.01 * rng.standard_normal((len(pos), 1)))).astype(np.float32)
    locked = rng.random(len(pos)) < 0.3
    wp, wa = no_wedges(pos)
    out, _ = simplify_measured(pos, tris, wp, wa, locked, 640)
    assert_valid(pos, out)
    assert not edges_once(out)
    # no new edge between two locked vertices: two neighbouring groups could both make the same
    # chord across their shared border (four triangles on one edge in the cut)
    old = edge_counts(tris)
    assert not [e for e in edge_counts(out) if locked[e[0]] and locked[e[1]] and e not in old]
    kept = np.zeros(len(pos), bool)
    kept[out.reshape(-1)] = True
    assert kept[locked].all()
    n = tri_normals(pos, out)
    assert ((n * pos[out].mean(axis=1)).sum(-1) > 0).all()


def strip(n: int):
    """A 1 x n strip of quads (two rows of n + 1 vertices), every vertex on the open border, CCW
    up; the rungs and diagonals are interior edges joining two border vertices."""
    x = np.arange(n + 1, dtype=np.float64) / n
    pos = np.concatenate([np.stack([x, 0 * x, 0 * x], -1), np.stack([x, 0 * x + 0.2, 0 * x], -1)])
    a = np.arange(n)
    b, c, d = a + 1, a + n + 2, a + n + 1
    tris = np.concatenate([np.stack([a, b, c], -1), np.stack([a, c, d], -1)]).astype(np.int32)
    return pos.astype(np.float32), tris


def test_border_vertices_only_collapse_along_the_border():
    """Reproduces the border link condition: in a strip every vertex is a border vertex, and a
    collapse along a rung or diagonal (both ends on the border, the edge interior) would pinch the
    strip and put two triangles on a border edge. Only collapses along the border are legal, so
    the strip stays one strip, every edge used once or twice, and it still reaches far below the
    input."""
    pos, tris = strip(12)
    wp, wa = no_wedges(pos)
    for locked in (np.zeros(len(pos), bool), np.arange(len(pos)) % 5 == 0):
        out, err = simplify_measured(pos, tris, wp, wa, locked, 4)
        assert_valid(pos, out)
        assert_border_kept(pos, tris, out, locked)
        assert (tri_normals(pos, out)[:, 2] > 0).all()
        # still one strip: one border loop, V - E + F = 1
        counts = edge_counts(out)
        verts = set(out.reshape(-1).tolist())
        assert len(verts) - len(counts) + len(out) == 1
        assert len(out) < len(tris)
        assert err < 1e-5  # the output lies on the input (it may be shorter at the ends)


def test_valence_three_border_fan_stays_one_triangle():
    """A single triangle, and a triangle split into three around an interior vertex: the border
    vertices must not collapse (each would leave an edge with no triangle or a degenerate fan)."""
    pos = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [0.3, 0.3, 0]], np.float32)
    wp, wa = no_wedges(pos)
    one = np.array([[0, 1, 2]], np.int32)
    out, err = simplify_measured(pos, one, wp, wa, np.zeros(4, bool), 0)
    assert np.array_equal(out, one) and err == 0.0
    three = np.array([[0, 1, 3], [1, 2, 3], [2, 0, 3]], np.int32)
    out, err = simplify_measured(pos, three, wp, wa, np.zeros(4, bool), 0)
    assert np.array_equal(np.sort(out, axis=1), [[0, 1, 2]])
    assert err < 1e-5


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_holes_and_locks_keep_the_border_contract(seed):
    """Noisy grids with random holes and random locked vertices (a group's sub-mesh): open
    borders simplify along themselves, locked border edges stay, nothing folds."""
    rng = np.random.default_rng(seed)
    pos, tris = grid(24, noise=0.02, seed=seed)
    keep = rng.random(len(tris)) > 0.08
    tris = tris[keep]
    locked = rng.random(len(pos)) < 0.05
    wp, wa = no_wedges(pos)
    for target in (len(tris) // 2, len(tris) // 8):
        out, err = simplify_measured(pos, tris, wp, wa, locked, target)
        assert_valid(pos, out)
        assert_border_kept(pos, tris, out, locked)
        n = tri_normals(pos, out)
        # nothing folded over (a triangle of three border vertices may stand nearly vertical)
        assert (n[:, 2] > -0.05 * np.linalg.norm(n, axis=1)).all()
        kept = np.zeros(len(pos), bool)
        kept[out.reshape(-1)] = True
        assert kept[locked & np.isin(np.arange(len(pos)), tris)].all()
        d = max_distance_to_mesh(dense_points(pos, out, 30, seed=target), pos, tris)
        assert d.max() <= err


def test_open_border_simplifies():
    """An open patch with nothing locked (a mesh with holes, or an open terrain) halves with its
    border moving along itself, not stuck at its border."""
    pos, tris = grid(32, noise=0.01, seed=4)
    wp, wa = no_wedges(pos)
    out, err = simplify_measured(pos, tris, wp, wa, np.zeros(len(pos), bool), len(tris) // 8)
    assert len(out) <= len(tris) // 8 + 1
    assert err < 0.1
    assert_border_kept(pos, tris, out, np.zeros(len(pos), bool))
    assert len(edges_once(out)) < len(edges_once(tris))
