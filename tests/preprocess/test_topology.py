"""Adjacency found fan by fan (`preprocess.topology`: `corners_by_position`, `fan_mates`,
`edge_neighbours`, `surface_topology`) and the normals computed from it
(`preprocess.io.normals.fan_normals`), against brute force over every edge of small generated
meshes: random soups (non-manifold edges, open borders, repeats in either direction), fans of
more triangles than the pairwise matching takes (the sorted path), both winding directions."""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import pytest

from preprocess.io.normals import fan_normals
from preprocess.load import mesh_from_arrays
from preprocess.topology import _PAIRWISE, edge_census, edge_neighbours, surface_topology


def _soup(seed: int) -> tuple[np.ndarray, int]:
    """Triangles (m, 3) int32 over p positions: random ones (mostly non-manifold), a strip of
    a grid (manifold, with borders), and for every third seed a fan larger than `_PAIRWISE`
    around position 0, some of its triangles reversed."""
    rng = np.random.default_rng(seed)
    p = int(rng.integers(8, 60))
    tri = rng.integers(0, p, (int(rng.integers(1, 120)), 3))
    grid = np.arange(2 * 6).reshape(2, 6) + 1
    strip = np.concatenate([np.stack([grid[0, :-1], grid[1, :-1], grid[1, 1:]], 1),
                            np.stack([grid[0, :-1], grid[1, 1:], grid[0, 1:]], 1)])
    parts = [tri, strip % p]
    if seed % 3 == 0:
        k = _PAIRWISE + 20
        ring = np.arange(k) % (p - 1) + 1
        fan = np.stack([np.zeros(k, np.int64), ring, np.roll(ring, -1)], 1)
        fan[::9] = fan[::9, [0, 2, 1]]
        parts.append(fan)
    tri = np.concatenate(parts)
    keep = (tri[:, 0] != tri[:, 1]) & (tri[:, 1] != tri[:, 2]) & (tri[:, 2] != tri[:, 0])
    return tri[keep].astype(np.int32), p


def _edge_uses(tri: np.ndarray) -> dict:
    uses = defaultdict(list)
    for t, (a, b, c) in enumerate(tri.tolist()):
        for e, (x, y) in enumerate(((a, b), (b, c), (c, a))):
            uses[(min(x, y), max(x, y))].append((t, e, x < y))
    return uses


@pytest.mark.parametrize("seed", range(12))
def test_edges_found_in_fans_match_brute_force(seed: int) -> None:
    tri, p = _soup(seed)
    want = np.full(tri.shape, -1)
    opposite = np.zeros(tri.shape, bool)
    for u in _edge_uses(tri).values():
        if len(u) == 2:
            (t1, e1, d1), (t2, e2, d2) = u
            want[t1, e1], want[t2, e2] = t2, t1
            opposite[t1, e1] = opposite[t2, e2] = d1 != d2
    neighbour, opp = edge_neighbours(tri, p)
    np.testing.assert_array_equal(neighbour, want)
    np.testing.assert_array_equal(opp[want >= 0], opposite[want >= 0])
    neighbour2, off, tris = surface_topology(tri, p, threads=2)
    np.testing.assert_array_equal(neighbour2, want)
    for v in range(p):  # the triangles around each position, in triangle order
        assert tris[off[v]:off[v + 1]].tolist() == [t for t in range(len(tri)) if v in tri[t]]


@pytest.mark.parametrize("seed", range(9))
def test_edge_census_matches_brute_force(seed: int) -> None:
    """`edge_census` (what `verify` checks cuts with): open borders, non-manifold edges, edges
    used twice the same way, the vertices they mark, the curvature sum; given an original's
    flags, the edges they do not allow, and the first of them."""
    tri, p = _soup(seed)
    rng = np.random.default_rng(200 + seed)
    P = rng.uniform(0, 1, (p, 3)).astype(np.float32)
    uses = _edge_uses(tri)
    border = [e for e, u in uses.items() if len(u) == 1]
    many = [e for e, u in uses.items() if len(u) > 2]
    two = [(e, u) for e, u in uses.items() if len(u) == 2]
    P64 = P.astype(np.float64)
    n = np.cross(P64[tri[:, 1]] - P64[tri[:, 0]], P64[tri[:, 2]] - P64[tri[:, 0]])
    n /= np.linalg.norm(n, axis=1, keepdims=True)
    curvature = 0.5 * sum(np.arccos(np.clip(n[u[0][0]] @ n[u[1][0]], -1, 1))
                          * np.linalg.norm(P64[a] - P64[b]) for (a, b), u in two)
    census = edge_census(tri, P, threads=2)
    assert (census.border, census.nonmanifold) == (len(border), len(many))
    assert census.flipped == sum(u[0][2] == u[1][2] for _, u in two)
    assert census.curvature == pytest.approx(curvature, rel=1e-9)
    assert set(np.flatnonzero(census.border_vertex)) == {v for e in border for v in e}
    assert set(np.flatnonzero(census.nonmanifold_vertex)) == {v for e in many for v in e}
    # a cut of this mesh allowed nothing: every edge not used twice is bad, the first by v
    none = np.zeros(p, bool)
    check = edge_census(tri, P, none, none, threads=2)
    bad = sorted(e for e, u in uses.items() if len(u) != 2)
    assert check.bad == len(bad)
    if bad:
        assert check.first_bad == (*bad[0], len(uses[bad[0]]))


def _reference_normals(tri: np.ndarray, P: np.ndarray, cos_crease: float) -> list:
    """Per position, its arcs as sets of triangles and their area-weighted unit normals, by the
    definition: the fan's triangles joined across edges used by exactly two triangles whose
    normals are within the crease."""
    P = P.astype(np.float64)
    cr = np.cross(P[tri[:, 1]] - P[tri[:, 0]], P[tri[:, 2]] - P[tri[:, 0]])
    fu = cr / np.linalg.norm(cr, axis=1, keepdims=True)
    uses = _edge_uses(tri)
    arcs = []
    for v in range(P.shape[0]):
        fan = [t for t in range(len(tri)) if v in tri[t]]
        parent = {t: t for t in fan}

        def root(t, parent=parent):
            while parent[t] != t:
                t = parent[t]
            return t

        for (a, b), u in uses.items():
            if v in (a, b) and len(u) == 2 and fu[u[0][0]] @ fu[u[1][0]] >= cos_crease:
                ra, rb = root(u[0][0]), root(u[1][0])
                parent[max(ra, rb)] = min(ra, rb)
        groups = defaultdict(list)
        for t in fan:
            groups[root(t)].append(t)
        for members in groups.values():
            n = cr[members].sum(axis=0)
            arcs.append((v, frozenset(members), n / np.linalg.norm(n)))
    return arcs


@pytest.mark.parametrize("seed", range(6))
def test_fan_normals_match_the_definition(seed: int) -> None:
    """Each (position, arc) is one wedge, its normal the arc's area-weighted mean; every corner
    of an arc's triangles at that position uses it. Positions on a noisy height field, so that
    some edges are creases and most are not."""
    tri, p = _soup(seed)
    rng = np.random.default_rng(100 + seed)
    P = np.stack([rng.uniform(0, 1, p), rng.uniform(0, 1, p), 0.3 * rng.uniform(0, 1, p)], 1)
    P = P.astype(np.float32)
    cr = np.cross(P[tri[:, 1]] - P[tri[:, 0]], P[tri[:, 2]] - P[tri[:, 0]])
    tri = tri[np.linalg.norm(cr.astype(np.float64), axis=1) > 1e-6]
    cos = float(np.cos(np.radians(45)))
    fan = fan_normals(tri, P, cos, threads=2)
    arcs = _reference_normals(tri, P, cos)
    assert len(fan.wedge_position) == len(arcs)
    assert fan.splits == sum(np.bincount([v for v, _, _ in arcs]) > 1)
    for v, members, normal in arcs:
        corners = [(t, list(tri[t]).index(v)) for t in members]
        wedge = {int(fan.triangles[t, c]) for t, c in corners}
        assert len(wedge) == 1, (v, members)  # the arc's corners share one wedge
        (w,) = wedge
        assert fan.wedge_position[w] == v
        np.testing.assert_allclose(fan.wedge_normal[w], normal, atol=1e-6)


def test_uv_seams_and_creases_together() -> None:
    """A box with a uv per face corner and no normals: the wedges split at the uv seams and at
    the creases alike (`arrays._vertices_of_wedges`): each corner keeps its uv, and its normal
    is its face's."""
    box = np.array([[x, y, z] for x in (0, 1) for y in (0, 1) for z in (0, 1)], np.float64)
    faces = np.array([[0, 1, 3], [0, 3, 2], [4, 6, 7], [4, 7, 5], [0, 4, 5], [0, 5, 1],
                      [2, 3, 7], [2, 7, 6], [0, 2, 6], [0, 6, 4], [1, 5, 7], [1, 7, 3]])
    # one vertex per position (8), uvs from the position: seams where faces meet at an angle
    uv = box[:, :2] * 0.5 + box[:, 2:] * 0.25
    mesh = mesh_from_arrays(box, faces, uvs=uv)
    assert mesh.wedge_position.shape == (24,)  # three faces, three normals at each corner
    ptri = mesh.wedge_position[mesh.triangles]
    face_pos = mesh.positions[ptri].astype(np.float64)
    fn = np.cross(face_pos[:, 1] - face_pos[:, 0], face_pos[:, 2] - face_pos[:, 0])
    fn /= np.linalg.norm(fn, axis=1, keepdims=True)
    np.testing.assert_allclose(mesh.wedge_normal[mesh.triangles], np.repeat(fn[:, None], 3, 1),
                               atol=1e-7)
    positions_uv = {tuple(p): tuple(u) for p, u in zip(box.astype(np.float32).tolist(),
                                                       uv.astype(np.float32).tolist(),
                                                       strict=True)}
    got = mesh.wedge_uv[mesh.triangles].reshape(-1, 2)
    want = [positions_uv[tuple(p)] for p in mesh.positions[ptri].reshape(-1, 3).tolist()]
    np.testing.assert_array_equal(got, np.array(want, np.float32))
