"""Quadric-error edge-collapse simplification of one cluster group (`collapse`).

Why this module exists. Every coarser DAG level is made by simplifying a group of clusters (about
1,000-4,000 triangles) to about half its triangles while the vertices shared with other groups stay
locked, so neighbouring groups still meet without cracks. This module only collapses; how far the
result lies from the original is measured by `preprocess.measure` (`simplify_sampled` runs the
collapses, then samples the result).

How. A Garland-Heckbert half-edge collapser in the style of meshoptimizer:
- topology is by position (`wedge_position[triangles]`); a collapse moves position u onto an
  existing neighbour v, so every output vertex is an original vertex (quantization stays
  consistent across levels) and never a new point;
- vertex kinds: *manifold* (one wedge, closed consistently oriented fan) may collapse onto any
  neighbour; *seam* (exactly two wedges, exactly two seam edges) only along a seam edge onto a seam
  or locked vertex, so seams stay chains of original seam vertices; everything else is *locked*:
  caller-locked vertices, open borders, non-manifold edges or vertices, seam ends and junctions;
- passes: cost every edge (best direction, `_edge_candidates`), sort (12-bit radix), perform
  non-conflicting collapses in order (a collapse freezes the one-ring of u for the rest of the
  pass, so every check sees an intact fan), rebuild adjacency, repeat until the target or no
  progress;
- a collapse is rejected when it breaks the link condition (non-manifold result), would create a
  duplicate triangle, or turns a triangle normal by more than about 78 degrees (or makes it
  degenerate).

Normal prefiltering: each input wedge starts with its normal times a third of the area of
its triangles; a collapse adds each of u's wedges into the wedge of v it maps to. So a
surviving wedge carries the area-weighted normal of the surface collapsed into it (over the
levels, of the original surface: `simplify_sampled` turns it into the coarse normal).

permissive: seams and creases may be crossed (see `_classify`); a collapse that moves a
position holding several wedges costs its squared length more than its quadric error, so
that collapses inside smooth regions go first; the moved wedges take the closest of the
target's (`_closest_wedge`).

normal_weight > 0: normals (and uvs, from column uv_start where >= 0) take part in the cost
of a collapse (`_attribute_quadrics`, as meshoptimizer's attribute quadrics): the collapse of
a manifold u onto v adds the area-weighted mean squared difference between v's attributes and
the attribute fields of u's triangles (and of those collapsed into u before) extended to v, in
distance units: a normal's as an angle times the group's mean triangle size (the units of
the shading term, `preprocess.measure.shading_term`), a uv's as the world length it slides,
both times normal_weight. Collapses that bend the shading or drag the texture wait for those
that do not.
"""

from __future__ import annotations

import preprocess.numba_cache  # noqa: F401  (first: drops stale numba caches)
import numba
import numpy as np


_MANIFOLD = 0
_SEAM = 1
_BORDER = 2
_LOCKED = 3

_FLIP_COS = 0.2  # reject a collapse that turns a triangle normal to a cosine below this
_MAX_PASSES = 200
_BORDER_WEIGHT = 2.0  # weight of the open-border edge planes (meshoptimizer's boundary weight)

_jit = numba.njit(cache=True, nogil=True)
_jit_inline = numba.njit(cache=True, nogil=True, inline="always")


@_jit_inline
def _cross(P, a, b, c):
    """(b - a) x (c - a) for the positions a, b, c of P: the triangle's normal times twice its
    area."""
    ux = P[b, 0] - P[a, 0]
    uy = P[b, 1] - P[a, 1]
    uz = P[b, 2] - P[a, 2]
    vx = P[c, 0] - P[a, 0]
    vy = P[c, 1] - P[a, 1]
    vz = P[c, 2] - P[a, 2]
    return uy * vz - uz * vy, uz * vx - ux * vz, ux * vy - uy * vx


# --------------------------------------------------------------------------------------------
# Adjacency, classification, quadrics
# --------------------------------------------------------------------------------------------


@_jit
def build_fans(tp, m, n, off, adj, cur):
    """Vertex -> triangle CSR over the first m rows of tp: adj[off[v]:off[v+1]] lists v's."""
    for i in range(n + 1):
        off[i] = 0
    for t in range(m):
        for c in range(3):
            off[tp[t, c] + 1] += 1
    for i in range(n):
        off[i + 1] += off[i]
    for i in range(n):
        cur[i] = off[i]
    for t in range(m):
        for c in range(3):
            v = tp[t, c]
            adj[cur[v]] = t
            cur[v] += 1


@_jit
def corner_of(tp, t, v):
    """Corner index of position v in triangle t, or -1."""
    if tp[t, 0] == v:
        return 0
    if tp[t, 1] == v:
        return 1
    if tp[t, 2] == v:
        return 2
    return -1


@_jit
def _add_plane(Q, i, nx, ny, nz, d, w):
    Q[i, 0] += w * nx * nx
    Q[i, 1] += w * ny * ny
    Q[i, 2] += w * nz * nz
    Q[i, 3] += w * nx * ny
    Q[i, 4] += w * nx * nz
    Q[i, 5] += w * ny * nz
    Q[i, 6] += w * nx * d
    Q[i, 7] += w * ny * d
    Q[i, 8] += w * nz * d
    Q[i, 9] += w * d * d
    Q[i, 10] += w


@_jit
def _quadric_value(Q, i, x, y, z):
    """Row i of quadrics in `_add_plane`'s layout at (x, y, z), not normalized."""
    return (
        Q[i, 0] * x * x
        + Q[i, 1] * y * y
        + Q[i, 2] * z * z
        + 2.0 * (Q[i, 3] * x * y + Q[i, 4] * x * z + Q[i, 5] * y * z)
        + 2.0 * (Q[i, 6] * x + Q[i, 7] * y + Q[i, 8] * z)
        + Q[i, 9]
    )


@_jit
def _quadric_error(Q, i, x, y, z):
    """Weight-normalized error of vertex i's quadric at (x, y, z): a mean squared distance."""
    w = Q[i, 10]
    if w <= 0.0:
        return 0.0
    return abs(_quadric_value(Q, i, x, y, z)) / w


@_jit
def _add_seam_plane(Q, P, tp, t, a, b, weight):
    """Add to a and b the plane through edge ab perpendicular to triangle t (seam and border
    quadrics), weighted by weight times the squared edge length."""
    nx, ny, nz = _cross(P, tp[t, 0], tp[t, 1], tp[t, 2])
    ex = P[b, 0] - P[a, 0]
    ey = P[b, 1] - P[a, 1]
    ez = P[b, 2] - P[a, 2]
    px = ey * nz - ez * ny
    py = ez * nx - ex * nz
    pz = ex * ny - ey * nx
    pl = np.sqrt(px * px + py * py + pz * pz)
    if pl <= 0.0:
        return
    px /= pl
    py /= pl
    pz /= pl
    d = -(px * P[a, 0] + py * P[a, 1] + pz * P[a, 2])
    w = weight * (ex * ex + ey * ey + ez * ez)
    _add_plane(Q, a, px, py, pz, d, w)
    _add_plane(Q, b, px, py, pz, d, w)


@_jit
def _one_walk(a, s, e, tp, adj, succ, sstamp, cnt, nbr, nn, n_border):
    """Whether a's fan (triangles adj[s:e]) is one consistently oriented cycle (an interior
    vertex, no border edge) or, with exactly two border edges, one consistently oriented open
    chain (a border vertex) through all of its triangles: a walk along succ (the corner after a
    -> the corner before a, set where sstamp == a; cnt: each neighbour's triangle count on its
    edge with a, nbr[:nn] the neighbours)."""
    deg = e - s
    if n_border == 0:
        x0 = tp[adj[s], (corner_of(tp, adj[s], a) + 1) % 3]
        x = succ[x0]
        steps = 1
        while x != x0 and steps <= deg:
            if sstamp[x] != a:
                return False
            x = succ[x]
            steps += 1
    elif n_border == 2:
        # from the border neighbour that starts a triangle to the other border neighbour
        border_start = -1
        for i in range(nn):
            b = nbr[i]
            if cnt[b] == 1 and sstamp[b] == a:
                border_start = b
                break
        if border_start < 0:
            return False
        x = succ[border_start]
        steps = 1
        while cnt[x] != 1 and steps <= deg:
            if sstamp[x] != a:
                return False
            x = succ[x]
            steps += 1
    else:
        return False
    return steps == deg


@_jit
def _classify(P, tp, tw, m, n, off, adj, locked, Q, permissive):
    """Vertex kinds (n,) int8, and seam- and border-edge quadrics added to Q. See the header.
    permissive: seams (attribute discontinuities: UV seams, creases) do not lock or restrict a
    vertex (their planes still go into Q); `collapse` makes crossing them dearer.

    One pass over each vertex's fan: per neighbour b, the triangle count and wedge agreement of
    edge (a, b), and the fan's successor map (the corner after a -> the corner before a, keyed by
    vertex); then the fan must be one walk through that map over all its triangles."""
    kind = np.full(n, _LOCKED, np.int8)
    stamp = np.full(n, -1, np.int32)  # stamp[b] == a: b is a neighbour of a seen already
    cnt = np.zeros(n, np.int32)
    first_t = np.zeros(n, np.int32)
    first_wa = np.zeros(n, np.int32)
    first_wb = np.zeros(n, np.int32)
    seam = np.zeros(n, np.bool_)
    sstamp = np.full(n, -1, np.int32)  # sstamp[b] == a: succ[b] is set for a's fan
    succ = np.zeros(n, np.int32)
    nbr = np.empty(2 * (3 * m + 1), np.int32)  # a's neighbours in first-seen order
    for a in range(n):
        s = off[a]
        e = off[a + 1]
        if s == e:
            continue
        lock = locked[a]
        nn = 0
        dup = False
        n_wedges = 0
        w0 = -1
        w1 = -1
        for k in range(s, e):
            t = adj[k]
            ia = corner_of(tp, t, a)
            wa = tw[t, ia]
            if wa != w0 and wa != w1:
                n_wedges += 1
                if w0 < 0:
                    w0 = wa
                elif w1 < 0:
                    w1 = wa
            ib = ia + 1 if ia < 2 else 0
            ic = ib + 1 if ib < 2 else 0
            for j in range(2):
                ix = ib if j == 0 else ic
                b = tp[t, ix]
                if stamp[b] != a:
                    stamp[b] = a
                    cnt[b] = 1
                    first_t[b] = t
                    first_wa[b] = wa
                    first_wb[b] = tw[t, ix]
                    seam[b] = False
                    nbr[nn] = b
                    nn += 1
                else:
                    cnt[b] += 1
                    if wa != first_wa[b] or tw[t, ix] != first_wb[b]:
                        if not seam[b] and a < b:
                            _add_seam_plane(Q, P, tp, first_t[b], a, b, 1.0)
                            _add_seam_plane(Q, P, tp, t, a, b, 1.0)
                        seam[b] = True
            b = tp[t, ib]
            if sstamp[b] == a:
                dup = True  # two triangles on (a, b) in the same orientation
            sstamp[b] = a
            succ[b] = tp[t, ic]
        n_seam = 0
        n_border = 0
        for i in range(nn):
            b = nbr[i]
            if cnt[b] == 1:
                n_border += 1
                if a < b:  # an open-border edge: keep the border's shape
                    _add_seam_plane(Q, P, tp, first_t[b], a, b, _BORDER_WEIGHT)
            elif cnt[b] != 2:
                lock = True  # non-manifold edge
            if seam[b]:
                n_seam += 1
        if lock or dup:
            continue
        if not _one_walk(a, s, e, tp, adj, succ, sstamp, cnt, nbr, nn, n_border):
            continue
        if permissive:
            n_seam = 0
            n_wedges = 1
        if n_border == 2:
            if n_seam == 0 and n_wedges == 1:
                kind[a] = _BORDER
        elif n_seam == 0 and n_wedges == 1:
            kind[a] = _MANIFOLD
        elif n_seam == 2 and n_wedges == 2:
            kind[a] = _SEAM
    return kind


@_jit
def _face_quadrics(P, tp, m, n):
    """(n, 11) float64: area-weighted plane quadrics of the incident triangles, per position."""
    Q = np.zeros((n, 11), np.float64)
    for t in range(m):
        a = tp[t, 0]
        b = tp[t, 1]
        c = tp[t, 2]
        nx, ny, nz = _cross(P, a, b, c)
        ln = np.sqrt(nx * nx + ny * ny + nz * nz)
        if ln <= 0.0:
            continue
        nx /= ln
        ny /= ln
        nz /= ln
        d = -(nx * P[a, 0] + ny * P[a, 1] + nz * P[a, 2])
        w = 0.5 * ln
        _add_plane(Q, a, nx, ny, nz, d, w)
        _add_plane(Q, b, nx, ny, nz, d, w)
        _add_plane(Q, c, nx, ny, nz, d, w)
    return Q


@_jit
def _attribute_quadrics(P, tp, tw, wedge_attr, m, n, normal_weight, uv_start):
    """Attribute quadrics (meshoptimizer's, per position) of the normals (columns 0:3 of
    wedge_attr) and, where uv_start >= 0, the uvs (columns uv_start, uv_start + 1): each
    triangle's field of each component k, linear over it (f_k(x) = g_k . x + d_k, g_k in the
    triangle's plane), weighted by the triangle's area w times c_k^2, the square of what a unit
    of that component is worth in distance: for a normal, normal_weight times the group's mean
    triangle size sqrt(2 x area) (the shading term's units, `shading_term`); for a uv, normal_weight
    times the world length of a uv unit on that triangle (a texture slid by d looks like an edge
    moved by d). Returns (QA (n, 11): sum w c^2 (g_k . x + d_k)^2 over triangles and components
    in _add_plane's layout, the area sum in column 10; GA (n, 4 K): sum w c^2 (g_k, d_k); WA (n, K):
    sum w c^2; K = 3 or 5 components)."""
    kc = 5 if uv_start >= 0 else 3
    QA = np.zeros((n, 11), np.float64)
    GA = np.zeros((n, 4 * kc), np.float64)
    WA = np.zeros((n, kc), np.float64)
    area_sum = 0.0
    for t in range(m):
        nx, ny, nz = _cross(P, tp[t, 0], tp[t, 1], tp[t, 2])
        area_sum += 0.5 * np.sqrt(nx * nx + ny * ny + nz * nz)
    normal_c2 = normal_weight * normal_weight * (2.0 * area_sum / m if m > 0 else 0.0)
    q = np.empty(10)
    ga = np.empty(4 * kc)
    wa = np.empty(kc)
    for t in range(m):
        a = tp[t, 0]
        e1x = P[tp[t, 1], 0] - P[a, 0]
        e1y = P[tp[t, 1], 1] - P[a, 1]
        e1z = P[tp[t, 1], 2] - P[a, 2]
        e2x = P[tp[t, 2], 0] - P[a, 0]
        e2y = P[tp[t, 2], 1] - P[a, 1]
        e2z = P[tp[t, 2], 2] - P[a, 2]
        d11 = e1x * e1x + e1y * e1y + e1z * e1z
        d12 = e1x * e2x + e1y * e2y + e1z * e2z
        d22 = e2x * e2x + e2y * e2y + e2z * e2z
        det = d11 * d22 - d12 * d12
        if not det > 1.0e-12 * d11 * d22 or det <= 0.0:
            continue  # degenerate: no field
        w = 0.5 * np.sqrt(det)  # the area
        uv_c2 = 0.0
        if uv_start >= 0:
            u0 = wedge_attr[tw[t, 0], uv_start]
            v0 = wedge_attr[tw[t, 0], uv_start + 1]
            uv_area = 0.5 * abs((wedge_attr[tw[t, 1], uv_start] - u0)
                                * (wedge_attr[tw[t, 2], uv_start + 1] - v0)
                                - (wedge_attr[tw[t, 2], uv_start] - u0)
                                * (wedge_attr[tw[t, 1], uv_start + 1] - v0))
            if uv_area > 1.0e-12:
                uv_c2 = normal_weight * normal_weight * w / uv_area
        q[:] = 0.0
        for k in range(kc):
            col = k if k < 3 else uv_start + k - 3
            c2 = normal_c2 if k < 3 else uv_c2
            a0 = np.float64(wedge_attr[tw[t, 0], col])
            da1 = np.float64(wedge_attr[tw[t, 1], col]) - a0
            da2 = np.float64(wedge_attr[tw[t, 2], col]) - a0
            # g = s e1 + r e2 with g . e1 = da1, g . e2 = da2
            s_ = (d22 * da1 - d12 * da2) / det
            r_ = (d11 * da2 - d12 * da1) / det
            gx = s_ * e1x + r_ * e2x
            gy = s_ * e1y + r_ * e2y
            gz = s_ * e1z + r_ * e2z
            dk = a0 - (gx * P[a, 0] + gy * P[a, 1] + gz * P[a, 2])
            wk = w * c2
            q[0] += wk * gx * gx
            q[1] += wk * gy * gy
            q[2] += wk * gz * gz
            q[3] += wk * gx * gy
            q[4] += wk * gx * gz
            q[5] += wk * gy * gz
            q[6] += wk * gx * dk
            q[7] += wk * gy * dk
            q[8] += wk * gz * dk
            q[9] += wk * dk * dk
            ga[4 * k] = wk * gx
            ga[4 * k + 1] = wk * gy
            ga[4 * k + 2] = wk * gz
            ga[4 * k + 3] = wk * dk
            wa[k] = wk
        for c in range(3):
            v = tp[t, c]
            for j in range(10):
                QA[v, j] += q[j]
            QA[v, 10] += w
            for j in range(4 * kc):
                GA[v, j] += ga[j]
            for j in range(kc):
                WA[v, j] += wa[j]
    return QA, GA, WA


@_jit
def _attribute_error(QA, GA, WA, u, x, y, z, wedge_attr, wv, uv_start):
    """Area-weighted mean over u's attribute fields (`_attribute_quadrics`) of sum_k c_k^2
    (f_k(x, y, z) - wedge wv's component k)^2: a squared distance."""
    w = QA[u, 10]
    if w <= 0.0:
        return 0.0
    r = _quadric_value(QA, u, x, y, z)
    for k in range(WA.shape[1]):
        a = np.float64(wedge_attr[wv, k if k < 3 else uv_start + k - 3])
        r += a * a * WA[u, k] - 2.0 * a * (GA[u, 4 * k] * x + GA[u, 4 * k + 1] * y
                                           + GA[u, 4 * k + 2] * z + GA[u, 4 * k + 3])
    return max(r, 0.0) / w


# --------------------------------------------------------------------------------------------
# Collapses
# --------------------------------------------------------------------------------------------


@_jit
def _twin(tp, off, adj, t, a, b):
    """The other triangle of edge (a, b) than t, found in a's fan, or -1."""
    for k in range(off[a], off[a + 1]):
        t2 = adj[k]
        if t2 != t and corner_of(tp, t2, b) >= 0:
            return t2
    return -1


@_jit
def _is_seam_edge(tp, tw, t, t2, a, b):
    ia = corner_of(tp, t, a)
    ib = corner_of(tp, t, b)
    ja = corner_of(tp, t2, a)
    jb = corner_of(tp, t2, b)
    return tw[t, ia] != tw[t2, ja] or tw[t, ib] != tw[t2, jb]


@_jit
def _can_collapse(P, tp, off, adj, u, v, border, locked, lstamp, sid, on):
    """Topology and flip checks of the half-edge collapse u -> v on intact fans; returns
    (ok, t1, t2): t1 and t2 are the triangles of edge uv (t2 = -1 along an open border).

    The link condition, with the open border linked to a virtual vertex: an interior u needs
    exactly two triangles on uv; a border u (border=True) exactly one (uv is a border edge, so
    a border vertex never moves inward), and u, v must not both be border neighbours of that
    triangle's third vertex; in both cases the common neighbours of u and v are exactly the
    third vertices of uv's triangles. So no edge ends up with more than two triangles, and a
    border edge keeps exactly one. And no new edge may join two caller-locked vertices: two
    neighbouring groups could both make the same chord across their shared border, and the cut
    would then hold four triangles on it."""
    t1 = -1
    t2 = -1
    o1 = -1
    o2 = -1
    for k in range(off[u], off[u + 1]):
        t = adj[k]
        iv = corner_of(tp, t, v)
        if iv >= 0:
            iu = corner_of(tp, t, u)
            o = tp[t, 3 - iu - iv]
            if t1 < 0:
                t1 = t
                o1 = o
            elif t2 < 0:
                t2 = t
                o2 = o
            else:
                return False, -1, -1
    if t1 < 0:
        return False, -1, -1
    if border:
        if t2 >= 0:
            return False, -1, -1
        if off[u + 1] - off[u] == 1:
            # u's only triangle is t1, so u-o1 is a border edge: v-o1 must not be one too
            uses = 0
            for k in range(off[v], off[v + 1]):
                if corner_of(tp, adj[k], o1) >= 0:
                    uses += 1
            if uses < 2:
                return False, -1, -1
    elif t2 < 0 or o1 == o2:
        return False, -1, -1
    # the summed (area-weighted) normal of u's fan: new triangles must also face its way, which
    # stops slivers standing across the surface (each still passing the per-triangle test)
    fx = 0.0
    fy = 0.0
    fz = 0.0
    for k in range(off[u], off[u + 1]):
        t = adj[k]
        nx, ny, nz = _cross(P, tp[t, 0], tp[t, 1], tp[t, 2])
        fx += nx
        fy += ny
        fz += nz
    ff = fx * fx + fy * fy + fz * fz
    # link condition: the common neighbours of u and v are exactly o1 and o2
    for k in range(off[v], off[v + 1]):
        t = adj[k]
        for c in range(3):
            lstamp[tp[t, c]] = sid
    for k in range(off[u], off[u + 1]):
        t = adj[k]
        if t == t1 or t == t2:
            continue
        iu = corner_of(tp, t, u)
        x = tp[t, (iu + 1) % 3]
        y = tp[t, (iu + 2) % 3]
        if x == v or y == v:
            return False, -1, -1  # a third triangle on uv (fans are intact: cannot happen)
        cx = lstamp[x] == sid and x != o1 and x != o2
        cy = lstamp[y] == sid and y != o1 and y != o2
        if cx or cy:
            return False, -1, -1
        if locked[v] and ((locked[x] and lstamp[x] != sid) or (locked[y] and lstamp[y] != sid)):
            return False, -1, -1
        if lstamp[x] == sid and lstamp[y] == sid:
            # u's triangle (u, x, y) becomes (v, x, y): a duplicate if v already has one on x, y
            for k2 in range(off[v], off[v + 1]):
                tv = adj[k2]
                if corner_of(tp, tv, x) >= 0 and corner_of(tp, tv, y) >= 0:
                    return False, -1, -1
        # normal flip or degenerate result
        a = tp[t, 0]
        b = tp[t, 1]
        c = tp[t, 2]
        nx, ny, nz = _cross(P, a, b, c)
        if iu == 0:
            a = v
        elif iu == 1:
            b = v
        else:
            c = v
        mx, my, mz = _cross(P, a, b, c)
        dot = nx * mx + ny * my + nz * mz
        mm = mx * mx + my * my + mz * mz
        nn = (nx * nx + ny * ny + nz * nz) * mm
        if dot <= 0.0 or dot * dot < _FLIP_COS * _FLIP_COS * nn:
            return False, -1, -1
        dot = fx * mx + fy * my + fz * mz
        if dot <= 0.0 or dot * dot < _FLIP_COS * _FLIP_COS * ff * mm:
            return False, -1, -1
        # and against the triangle's original normal, so that turns cannot add up over passes
        dot = on[t, 0] * mx + on[t, 1] * my + on[t, 2] * mz
        if dot <= 0.0 or dot * dot < _FLIP_COS * _FLIP_COS * mm:
            return False, -1, -1
    return True, t1, t2


@_jit
def _closest_wedge(wedge_attr, w, wa, wb):
    """Of wedges wa and wb, the one whose attributes are closest to wedge w's."""
    da = 0.0
    db = 0.0
    for j in range(wedge_attr.shape[1]):
        x = wedge_attr[w, j] - wedge_attr[wa, j]
        y = wedge_attr[w, j] - wedge_attr[wb, j]
        da += x * x
        db += y * y
    return wa if da <= db else wb


@_jit
def _radix_order(keys_f32, count, hist, order):
    """Order of the first count keys (non-negative float32), sorted by their top 12 bits."""
    bits = keys_f32.view(np.int32)
    for i in range(4096):
        hist[i] = 0
    for i in range(count):
        hist[(bits[i] >> 19) & 4095] += 1
    s = 0
    for i in range(4096):
        c = hist[i]
        hist[i] = s
        s += c
    for i in range(count):
        k = (bits[i] >> 19) & 4095
        order[hist[k]] = i
        hist[k] += 1


@_jit
def _unit_normals(P, tp, m):
    """(m, 3) float64: the unit normal of each triangle (0 where degenerate)."""
    on = np.zeros((m, 3), np.float64)
    for t in range(m):
        nx, ny, nz = _cross(P, tp[t, 0], tp[t, 1], tp[t, 2])
        ln = np.sqrt(nx * nx + ny * ny + nz * nz)
        if ln > 0.0:
            on[t, 0] = nx / ln
            on[t, 1] = ny / ln
            on[t, 2] = nz / ln
    return on


@_jit
def _wedge_sums(P, tp, tw, wedge_attr, m):
    """(k, a + 1) float64: per wedge, a third of the area of each of its triangles times each
    attribute column, summed, then that area itself (what the collapses merge)."""
    na = wedge_attr.shape[1] + 1
    nacc = np.zeros((wedge_attr.shape[0], na), np.float64)
    for t in range(m):
        nx, ny, nz = _cross(P, tp[t, 0], tp[t, 1], tp[t, 2])
        third = np.sqrt(nx * nx + ny * ny + nz * nz) / 6.0  # a third of the area
        for c in range(3):
            w = tw[t, c]
            for j in range(na - 1):
                nacc[w, j] += third * wedge_attr[w, j]
            nacc[w, na - 1] += third
    return nacc


@_jit
def _multi_wedge(tp, tw, m, n, permissive):
    """(n,) bool: positions with several wedges (seams, creases); none unless permissive."""
    multi = np.zeros(n, np.bool_)
    if permissive:
        first_w = np.full(n, -1, np.int32)
        for t in range(m):
            for c in range(3):
                a = tp[t, c]
                if first_w[a] < 0:
                    first_w[a] = tw[t, c]
                elif first_w[a] != tw[t, c]:
                    multi[a] = True
    return multi


@_jit
def _edge_candidates(P, tp, tw, m, off, adj, kind, Q, QA, GA, WA, wedge_attr, normal_weight,
                     uv_start, multi, cand_u, cand_v, cand_cost):
    """The cost of the best direction of every collapsible edge into cand_u, cand_v, cand_cost;
    returns their count. An interior edge is costed from its a < b side, an open border's from
    its only side; manifold vertices move along any edge but a seam, seam vertices only along a
    seam onto a seam or locked vertex, border vertices only along the border."""
    count = 0
    for t in range(m):
        for i in range(3):
            a = tp[t, i]
            b = tp[t, (i + 1) % 3]
            ka = kind[a]
            kb = kind[b]
            if ka == _LOCKED and kb == _LOCKED:
                continue
            seam_edge = False
            border_edge = False
            if ka == _SEAM or kb == _SEAM or ka == _BORDER or kb == _BORDER:
                t2 = _twin(tp, off, adj, t, a, b)
                if t2 < 0:
                    border_edge = True
                else:
                    seam_edge = _is_seam_edge(tp, tw, t, t2, a, b)
            if a > b and not border_edge:
                continue  # an interior edge is costed from its a < b side
            best = np.inf
            bu = -1
            bv = -1
            for d in range(2):
                u = a if d == 0 else b
                v = b if d == 0 else a
                ku = kind[u]
                if ku == _MANIFOLD:
                    if seam_edge:
                        continue
                elif ku == _SEAM:
                    if not seam_edge or kind[v] == _MANIFOLD:
                        continue
                elif ku == _BORDER:
                    if not border_edge:
                        continue
                else:
                    continue
                cost = _quadric_error(Q, u, P[v, 0], P[v, 1], P[v, 2])
                if normal_weight > 0.0 and ku == _MANIFOLD:
                    wv = tw[t, (i + 1) % 3] if d == 0 else tw[t, i]
                    cost += _attribute_error(QA, GA, WA, u, P[v, 0], P[v, 1], P[v, 2],
                                             wedge_attr, wv, uv_start)
                if multi[u]:
                    dx = P[u, 0] - P[v, 0]
                    dy = P[u, 1] - P[v, 1]
                    dz = P[u, 2] - P[v, 2]
                    cost += dx * dx + dy * dy + dz * dz
                if cost < best:
                    best = cost
                    bu = u
                    bv = v
            if bu >= 0:
                cand_u[count] = bu
                cand_v[count] = bv
                cand_cost[count] = np.float32(min(best, 3.0e38))
                count += 1
    return count


@_jit
def _merge_wedge(nacc, grew, into, w):
    """Wedge w's area-weighted sums go into wedge `into`'s."""
    for j in range(nacc.shape[1]):
        nacc[into, j] += nacc[w, j]
    grew[into] = True


@_jit
def _apply_collapse(u, v, t1, t2, wu1, wv1, wu2, wv2, tp, tw, off, adj, alive, modified,
                    frozen, pass_id, nacc, grew, wstamp, sid, wedge_attr, Q, QA, GA, WA,
                    normal_weight):
    """Move position u onto v: u's wedges merge into v's on the same side of any seam (a third
    wedge of u, permissive, into the closest), the triangles t1 (and t2) on the edge die, the
    others around u take v, u's one-ring is frozen for the rest of the pass, and v takes u's
    quadrics."""
    _merge_wedge(nacc, grew, wv1, wu1)
    wstamp[wu1] = sid
    if wu2 != wu1:
        _merge_wedge(nacc, grew, wv2, wu2)
        wstamp[wu2] = sid
    for k in range(off[u], off[u + 1]):
        t = adj[k]
        for c in range(3):
            frozen[tp[t, c]] = pass_id
        if t == t1 or t == t2:
            alive[t] = False
            continue
        iu = corner_of(tp, t, u)
        w = tw[t, iu]
        if w == wu1:
            nw = wv1
        elif w == wu2:
            nw = wv2
        else:
            nw = _closest_wedge(wedge_attr, w, wv1, wv2)
            if wstamp[w] != sid:  # a third wedge of u (permissive): into the closest
                wstamp[w] = sid
                _merge_wedge(nacc, grew, nw, w)
        tp[t, iu] = v
        tw[t, iu] = nw
        modified[t] = True
    for j in range(11):
        Q[v, j] += Q[u, j]
    if normal_weight > 0.0:
        for j in range(11):
            QA[v, j] += QA[u, j]
        for j in range(GA.shape[1]):
            GA[v, j] += GA[u, j]
        for j in range(WA.shape[1]):
            WA[v, j] += WA[u, j]


@_jit
def _compact(tp, tw, on, modified, src, alive, m):
    """Move the surviving triangles to the front (in order); returns their count."""
    k = 0
    for t in range(m):
        if alive[t]:
            if k != t:
                for c in range(3):
                    tp[k, c] = tp[t, c]
                    tw[k, c] = tw[t, c]
                    on[k, c] = on[t, c]
                modified[k] = modified[t]
                src[k] = src[t]
            alive[k] = True
            k += 1
    return k


@_jit
def _collapse_pass(count, order, cand_u, cand_v, cand_cost, error_goal, tri_goal, persist,
                   permissive, pass_id, sid, P, tp, tw, off, adj, kind, locked, lstamp, on,
                   alive, modified, frozen, nacc, grew, wstamp, wedge_attr, Q, QA, GA, WA,
                   normal_weight):
    """One pass: the candidates in cost order (`order`) collapse while they are no dearer than
    error_goal (beyond it only with persist, while none was performed) and fewer than tri_goal
    triangles went, each unless a collapse of this pass froze its ends or `_can_collapse` or
    the wedges refuse it. Returns (collapses performed, the last stamp id)."""
    removed = 0
    performed = 0
    for r in range(count):
        ci = order[r]
        cost = cand_cost[ci]
        if removed >= tri_goal:
            break
        if cost > error_goal and (performed > 0 or not persist):
            # the rest waits for the next pass, with fresh costs; but when every cheap
            # candidate was rejected (flips, links), go on to dearer ones instead of stopping
            break
        u = cand_u[ci]
        v = cand_v[ci]
        if frozen[u] == pass_id or frozen[v] == pass_id:
            continue
        sid += 1
        ok, t1, t2 = _can_collapse(
            P, tp, off, adj, u, v, kind[u] == _BORDER, locked, lstamp, sid, on
        )
        if not ok:
            continue
        wu1 = tw[t1, corner_of(tp, t1, u)]
        wv1 = tw[t1, corner_of(tp, t1, v)]
        wu2 = wu1
        wv2 = wv1
        if t2 >= 0:
            wu2 = tw[t2, corner_of(tp, t2, u)]
            wv2 = tw[t2, corner_of(tp, t2, v)]
        if kind[u] == _MANIFOLD and wv1 != wv2 and not permissive:
            continue
        if kind[u] == _SEAM and wu1 == wu2:
            continue
        _apply_collapse(u, v, t1, t2, wu1, wv1, wu2, wv2, tp, tw, off, adj, alive, modified,
                        frozen, pass_id, nacc, grew, wstamp, sid, wedge_attr, Q, QA, GA, WA,
                        normal_weight)
        removed += 1 if t2 < 0 else 2
        performed += 1
    return performed, sid


@_jit
def collapse(
    positions, triangles, wedge_position, wedge_attr, locked, target, persist, permissive,
    normal_weight=0.0, uv_start=-1
):
    """Simplify one group by half-edge collapses towards `target` triangles (it may end one
    below: a collapse removes two), stopping early when nothing can collapse. positions (n, 3)
    float32; triangles (m, 3) int32 wedge ids; wedge_position (k,) int32; wedge_attr (k, a)
    float32 (normal first); locked (n,) bool: positions that must not move. A pass does the
    cheapest collapses first, up to 1.5 times the cost of the one that would reach the target;
    when every one of those is rejected (flips, links), the pass ends the call, unless persist:
    then it goes on to dearer collapses (the DAG builder's second attempt).

    Returns (tw (m2, 3) int32 wedge ids, tp (m2, 3) int32 position ids, modified (m2,) bool,
    src (m2,) int32: the input triangle each output triangle was, nacc (k, 3) float64: per wedge,
    the area-weighted sum of the normals of the input surface it came to stand for, grew (k,)
    bool: wedges that took in others).

    Prefiltering, `permissive` and `normal_weight`: see the module docstring."""
    m = triangles.shape[0]
    n = positions.shape[0]
    P = positions.astype(np.float64)
    tw = triangles.copy()
    tp = np.empty((m, 3), np.int32)
    for t in range(m):
        for c in range(3):
            tp[t, c] = wedge_position[tw[t, c]]
    modified = np.zeros(m, np.bool_)
    src = np.arange(m).astype(np.int32)
    off = np.empty(n + 1, np.int32)
    adj = np.empty(3 * m, np.int32)
    cur = np.empty(n, np.int32)
    build_fans(tp, m, n, off, adj, cur)
    Q = _face_quadrics(P, tp, m, n)
    on = _unit_normals(P, tp, m)  # kept through compaction
    kind = _classify(P, tp, tw, m, n, off, adj, locked, Q, permissive)
    if normal_weight > 0.0:
        QA, GA, WA = _attribute_quadrics(P, tp, tw, wedge_attr, m, n, normal_weight, uv_start)
    else:
        QA = np.zeros((0, 11), np.float64)
        GA = np.zeros((0, 12), np.float64)
        WA = np.zeros((0, 3), np.float64)
    k_w = wedge_attr.shape[0]
    nacc = _wedge_sums(P, tp, tw, wedge_attr, m)
    grew = np.zeros(k_w, np.bool_)
    wstamp = np.full(k_w, -1, np.int64)
    multi = _multi_wedge(tp, tw, m, n, permissive)

    cap = 3 * m + 3  # at most one candidate per edge
    cand_u = np.empty(cap, np.int32)
    cand_v = np.empty(cap, np.int32)
    cand_cost = np.empty(cap, np.float32)
    order = np.empty(cap, np.int32)
    hist = np.empty(4096, np.int64)
    frozen = np.full(n, -1, np.int32)
    lstamp = np.full(n, -1, np.int32)
    alive = np.ones(m, np.bool_)
    sid = 0

    for pass_id in range(_MAX_PASSES):
        if m <= target:
            break
        count = _edge_candidates(P, tp, tw, m, off, adj, kind, Q, QA, GA, WA, wedge_attr,
                                 normal_weight, uv_start, multi, cand_u, cand_v, cand_cost)
        if count == 0:
            break
        _radix_order(cand_cost, count, hist, order)
        tri_goal = m - target
        edge_goal = tri_goal // 2
        error_goal = np.inf
        if edge_goal < count:
            error_goal = 1.5 * cand_cost[order[edge_goal]]
        performed, sid = _collapse_pass(count, order, cand_u, cand_v, cand_cost, error_goal,
                                        tri_goal, persist, permissive, pass_id, sid, P, tp, tw,
                                        off, adj, kind, locked, lstamp, on, alive, modified,
                                        frozen, nacc, grew, wstamp, wedge_attr, Q, QA, GA, WA,
                                        normal_weight)
        if performed == 0:
            break
        m = _compact(tp, tw, on, modified, src, alive, m)  # and rebuild the fans
        build_fans(tp, m, n, off, adj, cur)
    return tw[:m].copy(), tp[:m].copy(), modified[:m].copy(), src[:m].copy(), nacc, grew
