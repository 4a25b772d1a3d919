"""A hash grid over a mesh's triangles that finds a point's nearest triangle in tens of exact
point-triangle tests (`build_triangle_grid`, `nearest_triangle`), and the distances of many
points to a mesh found with it: each point's (`max_distance_to_mesh`) and the largest
(`farthest_distance`, `measure_point`: a search stops at the first triangle no farther than the
largest so far).

The builder measures every LOD level's distance to the original with these
(`preprocess.measure`), and `preprocess.verify` checks the stored errors with them.
"""

from __future__ import annotations

from collections.abc import Callable

import preprocess.numba_cache  # noqa: F401  (first: drops stale numba caches)
import numba
import numpy as np

from preprocess.distance import point_segment_d2, point_triangle_d2_of
from preprocess.threads import balanced_spans, run_spans

__all__ = ["build_lean_grid", "build_triangle_grid", "farthest_distance", "max_distance_to_mesh",
           "measure_point", "mesh_maxima", "nearest_triangle", "point_triangle_d2"]

_jit = numba.njit(cache=True, nogil=True)
_jit_inline = numba.njit(cache=True, nogil=True, inline="always")


# Per-triangle record of the distance grid, G (m, _G_SIZE) float64:
# a (0:3), e0 = b - a (3:6), e1 = c - a (6:9), unit normal (9:12), d00, d01, d11, 1 / det (12:16),
# box lo (16:19), box hi (19:22).
_G_SIZE = 22
# The lean record (`build_lean_grid`), G (m, _LEAN_SIZE) float32: the corners a (0:3), b (3:6),
# c (6:9), everything else computed at each test: 36 bytes a triangle where G takes 176 (a
# verify's grid of a 100M-triangle scan: 3.6 GB, not 17.6)
_LEAN_SIZE = 9


@_jit_inline
def _box_lo(G, t, j):
    if G.shape[1] == _LEAN_SIZE:
        return np.float64(min(G[t, j], G[t, 3 + j], G[t, 6 + j]))
    return G[t, 16 + j]


@_jit_inline
def _box_hi(G, t, j):
    if G.shape[1] == _LEAN_SIZE:
        return np.float64(max(G[t, j], G[t, 3 + j], G[t, 6 + j]))
    return G[t, 19 + j]


@_jit_inline
def point_triangle_d2(px, py, pz, G, t):
    """Exact squared distance from p to triangle t of G: the projection when it falls inside,
    else the nearest of the three edges."""
    if G.shape[1] == _LEAN_SIZE:  # the corners, as the distance engine takes them
        return point_triangle_d2_of(px, py, pz, G.reshape((G.shape[0] * 3, 3)), 3 * t,
                                    3 * t + 1, 3 * t + 2)
    vx = px - G[t, 0]
    vy = py - G[t, 1]
    vz = pz - G[t, 2]
    h = vx * G[t, 9] + vy * G[t, 10] + vz * G[t, 11]
    d20 = vx * G[t, 3] + vy * G[t, 4] + vz * G[t, 5]
    d21 = vx * G[t, 6] + vy * G[t, 7] + vz * G[t, 8]
    inv = G[t, 15]
    if inv > 0.0:
        b1 = (G[t, 14] * d20 - G[t, 13] * d21) * inv
        b2 = (G[t, 12] * d21 - G[t, 13] * d20) * inv
        if b1 >= 0.0 and b2 >= 0.0 and b1 + b2 <= 1.0:
            return h * h
    ax = G[t, 0]
    ay = G[t, 1]
    az = G[t, 2]
    e0x = G[t, 3]
    e0y = G[t, 4]
    e0z = G[t, 5]
    e1x = G[t, 6]
    e1y = G[t, 7]
    e1z = G[t, 8]
    r = point_segment_d2(px, py, pz, ax, ay, az, e0x, e0y, e0z)
    r = min(r, point_segment_d2(px, py, pz, ax, ay, az, e1x, e1y, e1z))
    r = min(
        r,
        point_segment_d2(
            px, py, pz, ax + e0x, ay + e0y, az + e0z, e1x - e0x, e1y - e0y, e1z - e0z
        ),
    )
    return r


@_jit
def _hash_cell(ix, iy, iz, mask):
    h = (ix * 73856093) ^ (iy * 19349663) ^ (iz * 83492791)
    return h & mask


@_jit
def build_triangle_grid(positions, pt):
    """Hash grid over triangles pt (m, 3) of positions (n, 3). Returns (G (m, _G_SIZE) float64
    triangle records, gp (8,) float64: origin, 1 / cell size, dims, boff (buckets + 1,) int64
    bucket offsets, btri (entries,) int32 triangles per bucket). Every triangle is listed in the
    bucket of each cell its box overlaps; colliding cells share a bucket (a superset: harmless)."""
    m = pt.shape[0]
    G = np.empty((m, _G_SIZE), np.float64)
    lo = np.full(3, np.inf)
    hi = np.full(3, -np.inf)
    area = 0.0
    for t in range(m):
        a = pt[t, 0]
        b = pt[t, 1]
        c = pt[t, 2]
        for j in range(3):
            x = np.float64(positions[a, j])
            y = np.float64(positions[b, j])
            z = np.float64(positions[c, j])
            G[t, j] = x
            G[t, 3 + j] = y - x
            G[t, 6 + j] = z - x
            G[t, 16 + j] = min(x, y, z)
            G[t, 19 + j] = max(x, y, z)
            lo[j] = min(lo[j], G[t, 16 + j])
            hi[j] = max(hi[j], G[t, 19 + j])
        nx = G[t, 4] * G[t, 8] - G[t, 5] * G[t, 7]
        ny = G[t, 5] * G[t, 6] - G[t, 3] * G[t, 8]
        nz = G[t, 3] * G[t, 7] - G[t, 4] * G[t, 6]
        ln = np.sqrt(nx * nx + ny * ny + nz * nz)
        area += 0.5 * ln
        if ln > 0.0:
            nx /= ln
            ny /= ln
            nz /= ln
        G[t, 9] = nx
        G[t, 10] = ny
        G[t, 11] = nz
        d00 = G[t, 3] * G[t, 3] + G[t, 4] * G[t, 4] + G[t, 5] * G[t, 5]
        d01 = G[t, 3] * G[t, 6] + G[t, 4] * G[t, 7] + G[t, 5] * G[t, 8]
        d11 = G[t, 6] * G[t, 6] + G[t, 7] * G[t, 7] + G[t, 8] * G[t, 8]
        det = d00 * d11 - d01 * d01
        G[t, 12] = d00
        G[t, 13] = d01
        G[t, 14] = d11
        # a (nearly) degenerate triangle takes the edge path
        G[t, 15] = 1.0 / det if det > 1.0e-12 * d00 * d11 and ln > 0.0 else 0.0
    gp, boff, btri = _buckets(G, lo, hi, area, 1.0, np.int64)
    return G, gp, boff, btri


# `build_lean_grid`'s cells are this many times the usual side: a triangle is listed in ~2 cells,
# not ~6 (a 20M-triangle scan's bucket lists took 77 bytes a triangle); its queries start at a
# hint, so bigger buckets cost them little
LEAN_CELLS = 2.0
# `build_lean_grid`'s second grid has cells this many times the first's: a point farther from
# the mesh than FAR_CELLS / 2 fine cells is searched on it (an exact search visits every cell
# within the distance: a coarse level's point 20 cells away visited ~30,000 fine cells, ~40
# coarse ones)
FAR_CELLS = 8.0


@_jit
def build_lean_grid(positions, pt):
    """`build_triangle_grid` with lean records (`_LEAN_SIZE`): the same buckets and answers,
    a fifth of the memory, each test a little dearer, cells LEAN_CELLS times the side and int32
    bucket offsets (a mesh of up to 2^31 / 12 triangles); and a second grid of FAR_CELLS times
    the cell side for far points (`nearest_lean`). Returns (G, gp, boff, btri, gp2, boff2,
    btri2)."""
    m = pt.shape[0]
    G = np.empty((m, _LEAN_SIZE), np.float32)
    lo = np.full(3, np.inf)
    hi = np.full(3, -np.inf)
    area = 0.0
    for t in range(m):
        for c in range(3):
            for j in range(3):
                G[t, 3 * c + j] = positions[pt[t, c], j]
        for j in range(3):
            lo[j] = min(lo[j], _box_lo(G, t, j))
            hi[j] = max(hi[j], _box_hi(G, t, j))
        e0x = np.float64(G[t, 3]) - G[t, 0]
        e0y = np.float64(G[t, 4]) - G[t, 1]
        e0z = np.float64(G[t, 5]) - G[t, 2]
        e1x = np.float64(G[t, 6]) - G[t, 0]
        e1y = np.float64(G[t, 7]) - G[t, 1]
        e1z = np.float64(G[t, 8]) - G[t, 2]
        nx = e0y * e1z - e0z * e1y
        ny = e0z * e1x - e0x * e1z
        nz = e0x * e1y - e0y * e1x
        area += 0.5 * np.sqrt(nx * nx + ny * ny + nz * nz)
    gp, boff, btri = _buckets(G, lo, hi, area, LEAN_CELLS, np.int32)
    gp2, boff2, btri2 = _buckets(G, lo, hi, area, LEAN_CELLS * FAR_CELLS, np.int32)
    return G, gp, boff, btri, gp2, boff2, btri2


@_jit
def _buckets(G, lo, hi, area, scale, offset_type):
    """The grid over G's triangles (boxes lo..hi, total area): (gp, boff, btri) as
    `build_triangle_grid` returns them; scale: its cells this many times the usual side;
    offset_type: boff's (int32 where the entries are known to fit)."""
    m = G.shape[0]
    gp = np.zeros(8, np.float64)
    gp[3] = 1.0
    gp[4] = 1.0
    gp[5] = 1.0
    gp[6] = 1.0
    if m == 0:
        return gp, np.zeros(2, offset_type), np.zeros(0, np.int32)
    ext = 0.0
    for j in range(3):
        gp[j] = lo[j]
        ext = max(ext, hi[j] - lo[j])
    h = 1.5 * np.sqrt(area / m) * scale
    if not h > 0.0:
        h = ext / 8.0 if ext > 0.0 else 1.0
    h = max(h, ext * 1.0e-6, 1.0e-30)
    while True:  # coarser cells when big triangles would be listed in too many
        inv = 1.0 / h
        entries = 0
        for t in range(m):
            k = 1
            for j in range(3):
                k *= (int((_box_hi(G, t, j) - lo[j]) * inv)
                      - int((_box_lo(G, t, j) - lo[j]) * inv) + 1)
            entries += k
        if entries <= 12 * m + 64:
            break
        h *= 1.5
    inv = 1.0 / h
    gp[3] = inv
    for j in range(3):
        gp[4 + j] = np.float64(int((hi[j] - lo[j]) * inv) + 1)
    size = 16
    while size < entries:
        size *= 2
    mask = size - 1
    boff = np.zeros(size + 1, offset_type)
    for t in range(m):
        x0 = int((_box_lo(G, t, 0) - lo[0]) * inv)
        y0 = int((_box_lo(G, t, 1) - lo[1]) * inv)
        z0 = int((_box_lo(G, t, 2) - lo[2]) * inv)
        x1 = int((_box_hi(G, t, 0) - lo[0]) * inv)
        y1 = int((_box_hi(G, t, 1) - lo[1]) * inv)
        z1 = int((_box_hi(G, t, 2) - lo[2]) * inv)
        for ix in range(x0, x1 + 1):
            for iy in range(y0, y1 + 1):
                for iz in range(z0, z1 + 1):
                    boff[_hash_cell(ix, iy, iz, mask) + 1] += 1
    for i in range(size):
        boff[i + 1] += boff[i]
    bcur = boff[:size].copy()
    btri = np.empty(boff[size], np.int32)
    for t in range(m):
        x0 = int((_box_lo(G, t, 0) - lo[0]) * inv)
        y0 = int((_box_lo(G, t, 1) - lo[1]) * inv)
        z0 = int((_box_lo(G, t, 2) - lo[2]) * inv)
        x1 = int((_box_hi(G, t, 0) - lo[0]) * inv)
        y1 = int((_box_hi(G, t, 1) - lo[1]) * inv)
        z1 = int((_box_hi(G, t, 2) - lo[2]) * inv)
        for ix in range(x0, x1 + 1):
            for iy in range(y0, y1 + 1):
                for iz in range(z0, z1 + 1):
                    hc = _hash_cell(ix, iy, iz, mask)
                    btri[bcur[hc]] = t
                    bcur[hc] += 1
    return gp, boff, btri


@_jit
def _visit_bucket(px, py, pz, hc, G, boff, btri, stamp, qid, best, bt, enough):
    """Test the untested triangles of bucket hc against p; returns the updated (best, bt), as
    soon as best <= enough."""
    for k in range(boff[hc], boff[hc + 1]):
        t = btri[k]
        if stamp[t] == qid:
            continue
        stamp[t] = qid
        dx = max(_box_lo(G, t, 0) - px, 0.0, px - _box_hi(G, t, 0))
        dy = max(_box_lo(G, t, 1) - py, 0.0, py - _box_hi(G, t, 1))
        dz = max(_box_lo(G, t, 2) - pz, 0.0, pz - _box_hi(G, t, 2))
        if dx * dx + dy * dy + dz * dz >= best:
            continue
        d2 = point_triangle_d2(px, py, pz, G, t)
        if d2 < best:
            best = d2
            bt = t
            if best <= enough:
                break
    return best, bt


@_jit
def _cell_of(x, o, inv, dim):
    c = (x - o) * inv
    if not c > 0.0:  # also nan
        return 0
    return int(min(c, dim - 1.0))


@_jit
def nearest_triangle(px, py, pz, hint, G, gp, boff, btri, stamp, qid, enough):
    """(squared distance, triangle) of the grid triangle nearest to p. hint: a triangle to try
    first (-1: none), which makes coherent queries cheap. The search stops as soon as it finds a
    squared distance <= enough (then the result is an upper bound, not the minimum)."""
    mask = boff.shape[0] - 2
    best = np.inf
    bt = -1
    if hint >= 0:
        best = point_triangle_d2(px, py, pz, G, hint)
        bt = hint
        stamp[hint] = qid
        if best <= enough:
            return best, bt
    ox = gp[0]
    oy = gp[1]
    oz = gp[2]
    inv = gp[3]
    nx = int(gp[4])
    ny = int(gp[5])
    nz = int(gp[6])
    cx = _cell_of(px, ox, inv, gp[4])
    cy = _cell_of(py, oy, inv, gp[5])
    cz = _cell_of(pz, oz, inv, gp[6])
    # p's own cell first: it usually holds the nearest triangle
    best, bt = _visit_bucket(
        px, py, pz, _hash_cell(cx, cy, cz, mask), G, boff, btri, stamp, qid, best, bt, enough
    )
    if best <= enough:
        return best, bt
    if bt < 0:
        # rings of cells around p's cell until some triangle is found
        for r in range(1, max(nx, ny, nz) + 1):
            for ix in range(max(cx - r, 0), min(cx + r, nx - 1) + 1):
                for iy in range(max(cy - r, 0), min(cy + r, ny - 1) + 1):
                    for iz in range(max(cz - r, 0), min(cz + r, nz - 1) + 1):
                        if max(abs(ix - cx), abs(iy - cy), abs(iz - cz)) != r:
                            continue
                        best, bt = _visit_bucket(
                            px,
                            py,
                            pz,
                            _hash_cell(ix, iy, iz, mask),
                            G,
                            boff,
                            btri,
                            stamp,
                            qid,
                            best,
                            bt,
                            enough,
                        )
            if bt >= 0:
                break
        if bt < 0:
            return np.inf, -1
        if best <= enough:
            return best, bt
    # every cell within the current best distance
    d = np.sqrt(best)
    h = 1.0 / inv
    x0 = _cell_of(px - d, ox, inv, gp[4])
    x1 = _cell_of(px + d, ox, inv, gp[4])
    y0 = _cell_of(py - d, oy, inv, gp[5])
    y1 = _cell_of(py + d, oy, inv, gp[5])
    z0 = _cell_of(pz - d, oz, inv, gp[6])
    z1 = _cell_of(pz + d, oz, inv, gp[6])
    for ix in range(x0, x1 + 1):
        bx = ox + ix * h
        ex = max(bx - px, 0.0, px - bx - h)
        if ex * ex >= best:
            continue
        for iy in range(y0, y1 + 1):
            by = oy + iy * h
            ey = max(by - py, 0.0, py - by - h)
            if ex * ex + ey * ey >= best:
                continue
            for iz in range(z0, z1 + 1):
                bz = oz + iz * h
                ez = max(bz - pz, 0.0, pz - bz - h)
                if ex * ex + ey * ey + ez * ez >= best:
                    continue
                if ix == cx and iy == cy and iz == cz:
                    continue  # visited first
                best, bt = _visit_bucket(
                    px,
                    py,
                    pz,
                    _hash_cell(ix, iy, iz, mask),
                    G,
                    boff,
                    btri,
                    stamp,
                    qid,
                    best,
                    bt,
                    enough,
                )
                if best <= enough:
                    return best, bt
    return best, bt


@_jit
def _distances(points, positions, pt):
    G, gp, boff, btri = build_triangle_grid(positions, pt)
    return _distances_on(points, G, gp, boff, btri)


@_jit
def _distances_on(points, G, gp, boff, btri):
    """`max_distance_to_mesh` with the mesh's grid built already."""
    p = points.shape[0]
    out = np.empty(p, np.float64)
    stamp = np.full(max(G.shape[0], 1), -1, np.int32)
    hint = -1
    for i in range(p):
        d2, hint = nearest_triangle(
            points[i, 0], points[i, 1], points[i, 2], hint, G, gp, boff, btri, stamp, i, -1.0
        )
        out[i] = np.sqrt(d2)
    return out


@_jit
def _farthest(points, positions, pt):
    G, gp, boff, btri = build_triangle_grid(positions, pt)
    stamp = np.full(max(pt.shape[0], 1), -1, np.int32)
    worst = 0.0
    hint = -1
    for i in range(points.shape[0]):
        worst, hint = measure_point(np.float64(points[i, 0]), np.float64(points[i, 1]),
                                     np.float64(points[i, 2]), hint, G, gp, boff, btri, stamp,
                                     i, worst)
    return np.sqrt(worst)


@_jit
def measure_point(px, py, pz, hint, G, gp, boff, btri, stamp, qid, worst):
    # a sample only matters when it is farther than the worst so far: the search stops at the
    # first triangle that is at least that close (the Hausdorff early break), so the result stays
    # the exact maximum over the samples
    d2, hint = nearest_triangle(px, py, pz, hint, G, gp, boff, btri, stamp, qid, worst)
    return max(d2, worst), hint


def max_distance_to_mesh(
    points: np.ndarray, positions: np.ndarray, pos_triangles: np.ndarray
) -> np.ndarray:
    """Distance from each point to the nearest of the triangles (exact point-triangle distance).

    points (p, 3) float32 or float64; positions (n, 3) float32/float64; pos_triangles (m, 3) int32
    position ids. Returns (p,) float64 distances (inf for every point when m == 0). A hash grid over
    the triangles keeps this at tens of point-triangle tests per point for points near the surface;
    consecutive points that are close to each other are cheapest (the last hit is tried first).
    """
    pts = np.ascontiguousarray(points, dtype=np.float64).reshape(-1, 3)
    pos = np.ascontiguousarray(positions, dtype=np.float64).reshape(-1, 3)
    tri = np.ascontiguousarray(pos_triangles, dtype=np.int32).reshape(-1, 3)
    return _distances(pts, pos, tri)


def mesh_maxima(positions: np.ndarray, pos_triangles: np.ndarray
                ) -> Callable[[np.ndarray, np.ndarray, int], np.ndarray]:
    """For many batches of points in groups (a verify's samples of each cluster): the largest
    distance of each group's points to the mesh, exact, at a fraction of the cost of each
    point's own (`max_distance_to_mesh`). A point's search stops at the first triangle no
    farther than NEAR_MAX times its group's largest distance so far (the Hausdorff early break
    of `farthest_distance`, per group): the point that sets a group's maximum and those within
    NEAR_MAX of it are measured exactly (what ranks a verify's farthest samples), the others get
    an upper bound of their distance no larger than that.
    The returned function takes points (p, 3), their groups (p,) int64 in 0..groups-1 and the
    group count, and gives those (p,) float64 distances; its grid (lean: `build_lean_grid`) is
    built once, the points shared among threads. positions: float32 (or exactly so)."""
    pos = np.ascontiguousarray(positions, dtype=np.float32).reshape(-1, 3)
    tri = np.ascontiguousarray(pos_triangles, dtype=np.int32).reshape(-1, 3)
    if 12 * len(tri) + 64 >= 2**31:  # the lean grid's int32 bucket offsets
        raise ValueError(f"{len(tri):,} triangles: at most {(2**31 - 65) // 12:,} for a lean grid")
    grid = build_lean_grid(pos, tri)  # float32 corners: the positions exactly

    def measure(points: np.ndarray, owner: np.ndarray, groups: int) -> np.ndarray:
        pts = np.ascontiguousarray(points, dtype=np.float64).reshape(-1, 3)
        own = np.ascontiguousarray(owner, dtype=np.int64)
        spans = balanced_spans(np.arange(len(pts) + 1, dtype=np.int64))
        return np.concatenate(run_spans(lambda lo, hi: _maxima_on(pts[lo:hi], own[lo:hi],
                                                                  groups, *grid), spans)
                              or [np.zeros(0)])

    return measure


# `mesh_maxima`'s points within this share of their group's largest distance are measured
# exactly: a verify refines the triangles of each cluster's 4 farthest samples, and with the
# maximum alone exact, the peak of a 327K-triangle sphere's level 13 read 1.22 for 1.16
NEAR_MAX = 0.8


@_jit
def nearest_lean(px, py, pz, hint, G, gp, boff, btri, gp2, boff2, btri2, stamp, qid, enough):
    """`nearest_triangle` on a lean grid (`build_lean_grid`): on its coarse grid where the
    hint lies more than FAR_CELLS / 2 fine cells away (the same answer, found in fewer
    cells)."""
    if hint >= 0:
        far = 0.5 * FAR_CELLS / gp[3]
        d2 = point_triangle_d2(px, py, pz, G, hint)
        if d2 <= enough:  # as nearest_triangle answers it, without testing the hint again
            return d2, hint
        if d2 > far * far:
            return nearest_triangle(px, py, pz, hint, G, gp2, boff2, btri2, stamp, qid, enough)
    return nearest_triangle(px, py, pz, hint, G, gp, boff, btri, stamp, qid, enough)


@_jit
def _maxima_on(points, owner, groups, G, gp, boff, btri, gp2, boff2, btri2):
    """`mesh_maxima` of some points (this thread's: each group's maximum so far is its own)."""
    p = points.shape[0]
    out = np.empty(p, np.float64)
    worst = np.zeros(groups, np.float64)  # squared
    stamp = np.full(max(G.shape[0], 1), -1, np.int32)
    hint = -1
    for i in range(p):
        g = owner[i]
        d2, hint = nearest_lean(points[i, 0], points[i, 1], points[i, 2], hint, G, gp, boff,
                                btri, gp2, boff2, btri2, stamp, i,
                                NEAR_MAX * NEAR_MAX * worst[g])
        worst[g] = max(worst[g], d2)
        out[i] = np.sqrt(d2)
    return out


def farthest_distance(
    points: np.ndarray, positions: np.ndarray, pos_triangles: np.ndarray
) -> float:
    """The largest distance from the points to the nearest of the triangles, as the maximum of
    `max_distance_to_mesh` (exact), but a point's search stops at the first triangle no farther
    than the largest distance so far (the Hausdorff early break), so most points cost one test.
    points (p, 3), positions (n, 3) float32/float64; pos_triangles (m, 3) int32 (m > 0)."""
    pos = np.ascontiguousarray(positions, dtype=np.float64).reshape(-1, 3)
    tri = np.ascontiguousarray(pos_triangles, dtype=np.int32).reshape(-1, 3)
    pts = np.ascontiguousarray(points).reshape(-1, 3)
    return float(_farthest(pts, pos, tri))
