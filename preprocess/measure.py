"""The honest error: how far a simplified group lies from the original surface, measured.

Why this module exists. The LOD error the runtime trusts to pick a cut must be an upper bound of
the real distance of a level's surface to the original mesh, not a quadric estimate (a quadric's
planes extend to infinity and under-estimate at folds and corners). The DAG builder
(`preprocess.dag`) simplifies each group with `simplify_sampled` (the collapses of
`preprocess.simplify`, then prefiltered normals and colours, dense samples of the changed
triangles with their distances to the group's input, and the shading term) and bounds the
distance to the original from those samples (`original_distance`, walking the original surface:
`preprocess.distance.surface_walk`), from the original positions the simplification removed
(`dropped_distance`, the farthest of them carried up level after level) and, for a group that is
the whole of its level, from every original position (`farthest_by_cluster`). `group_errors`
turns those distances into the group's stored error; `simplify_measured` does all of it for one
mesh patch (what the tests hold to dense brute-force distances). The distances themselves are
`preprocess.distance`'s, found through its triangle grid (`preprocess.grid`).
"""

from __future__ import annotations

import preprocess.numba_cache  # noqa: F401  (first: drops stale numba caches)
import numba as nb
import numpy as np

from preprocess.distance import point_triangle_d2_of, surface_walk
from preprocess.grid import build_triangle_grid, measure_point, nearest_triangle
from preprocess.simplify import build_fans, collapse, corner_of

# a group's error is this times the largest distance to the original surface found over its
# sample points (`original_distance`): the margin for the farthest point falling between
# samples (the dense-sampling checks of preprocess.verify hold it to the true distance; at 1.1
# a dense second round found points 1.04x the stored error on igea and ogre)
SAMPLED_FACTOR = 1.15
# the longest walk over the original surface from a sample's start to its nearest triangle
WALK_STEPS = 256
# a simplified triangle longer than 3 x this many of the original's mean edges is also sampled
# on a grid of points at most this many edges apart (`simplify._SPACING_STEPS`): ogre's coarsest
# level (triangles 90 of its edges long) kept 0.94x the distance of a dense check without it
SAMPLE_SPACING = 8.0
# original positions removed below that each cluster carries upward and measures again at every
# level (the farthest from it): a removed tip recedes further as the levels above simplify
WITNESSES = 32
# a whole level's group measures the distance of every original position to its result
# (`_Builder.simplify_group`): exact there, so its margin is only for the original surface
# between them (dense points on every original triangle: at least 1.027x, homer's level 7), not
# SAMPLED_FACTOR's for removed positions that were not carried up (6% short on rocker-arm)
DROPPED_FACTOR = 1.05
_ERROR_SLACK = 1.0e-6  # the slack: this times the input bounding-box diagonal (float rounding)

_jit = nb.njit(cache=True, nogil=True)
_jit_inline = nb.njit(cache=True, nogil=True, inline="always")


@_jit
def edge_sides(out_pt, in_pt):
    """(m, 3) bool: whether edge e of output triangle t (out_pt[t, e] -> out_pt[t, (e + 1) % 3])
    is sampled from t: from its a < b side, and from either side where no output triangle has
    the reverse and it is no input edge (in_pt: the input's position triangles), i.e. an open
    border that collapses moved (its other side never comes; the bunny's level 7 held its
    largest distance at the midpoint of one running b -> a, 4.5% beyond every sample). A group's
    border with its neighbours is an input edge: it lies on the input."""
    m = out_pt.shape[0]
    k = in_pt.shape[0]
    n = 0
    for t in range(m):
        for c in range(3):
            n = max(n, out_pt[t, c] + 1)
    for t in range(k):
        for c in range(3):
            n = max(n, in_pt[t, c] + 1)
    out_off = np.empty(n + 1, np.int32)  # the triangles around each position, both sides'
    out_adj = np.empty(3 * m, np.int32)
    in_off = np.empty(n + 1, np.int32)
    in_adj = np.empty(3 * k, np.int32)
    cur = np.empty(n, np.int32)
    build_fans(out_pt, m, n, out_off, out_adj, cur)
    build_fans(in_pt, k, n, in_off, in_adj, cur)
    here = np.zeros((m, 3), np.bool_)
    for t in range(m):
        for e in range(3):
            a = out_pt[t, e]
            b = out_pt[t, (e + 1) % 3]
            if a < b:
                here[t, e] = True
                continue
            found = False  # the reverse edge b -> a: the other side samples it
            for i in range(out_off[b], out_off[b + 1]):
                t2 = out_adj[i]
                if out_pt[t2, (corner_of(out_pt, t2, b) + 1) % 3] == a:
                    found = True
                    break
            if not found:  # an input edge {b, a} lies on the input
                for i in range(in_off[b], in_off[b + 1]):
                    if corner_of(in_pt, in_adj[i], a) >= 0:
                        found = True
                        break
            here[t, e] = not found
    return here


@_jit
def input_triangles(pos, tri, wpos):
    """(the input's position triangles (m, 3) int32, the slack: _ERROR_SLACK times the input's
    bounding-box diagonal)."""
    m = tri.shape[0]
    in_pt = np.empty((m, 3), np.int32)
    lo = np.full(3, np.inf, np.float32)
    hi = np.full(3, -np.inf, np.float32)
    for t in range(m):
        for c in range(3):
            p = wpos[tri[t, c]]
            in_pt[t, c] = p
            for j in range(3):
                lo[j] = min(lo[j], pos[p, j])
                hi[j] = max(hi[j], pos[p, j])
    d2 = 0.0
    for j in range(3):
        e = np.float64(hi[j]) - np.float64(lo[j])
        d2 += e * e
    return in_pt, _ERROR_SLACK * np.sqrt(d2)


# Samples for the errors against the original surface (`simplify_sampled`): denser than the
# seeds above, since their maximum is the error itself (times preprocess.dag.SAMPLED_FACTOR);
# then the triangles whose samples come within _REFINE_NEAR of the maximum are sampled again (at
# most _REFINE_TRIANGLES of them, those nearest it) at the barycentric points of a 10-step grid
# but its corners (input vertices: at distance 0, on an edge for the shading term, and never
# walked to the original, each the original vertex it is)
_REFINE_NEAR = 0.7
_REFINE_TRIANGLES = 32
_REFINE_WEIGHTS = np.array([(i / 9, j / 9, (9 - i - j) / 9) for i in range(10)
                            for j in range(10 - i) if max(i, j, 9 - i - j) < 9], np.float64)
# a moved triangle longer than the builder's spacing (a few of the original's edges) is also
# sampled on a barycentric grid of at most this many steps whose points lie at most that far
# apart: at coarse levels one triangle stands for thousands of original ones, and the distance
# peaks in features a few original edges wide that its face and edge samples straddle
_SPACING_STEPS = 12
# each new edge's midpoint, where a chord lies farthest from the smooth surface it cuts across
# (at 1/3 and 2/3 the samples read 8/9 of it: built without the margin, the seven scans' errors
# were up to 12% short of a denser check's distance; with the midpoint, 4%), and three face
# points (the centroid as a fourth cost 10% of igea's build for nothing the checks saw)
_DENSE_EDGE_SAMPLES = np.array([0.5], dtype=np.float64)
_DENSE_FACE_SAMPLES = np.array(
    [
        [2.0 / 3.0, 1.0 / 6.0, 1.0 / 6.0],
        [1.0 / 6.0, 2.0 / 3.0, 1.0 / 6.0],
        [1.0 / 6.0, 1.0 / 6.0, 2.0 / 3.0],
    ],
    dtype=np.float64,
)


@_jit_inline
def edge_length2(positions, pt, t, e):
    """The squared length of edge e (from corner e to the next) of triangle t of pt (m, 3)."""
    a = pt[t, e]
    b = pt[t, (e + 1) % 3]
    d2 = 0.0
    for j in range(3):
        d2 += (np.float64(positions[a, j]) - np.float64(positions[b, j])) ** 2
    return d2


@_jit
def _spacing_steps(positions, out_pt, t, spacing):
    """The steps of the grid a moved triangle t is sampled on besides its face and edge samples
    (`_SPACING_STEPS`): ceil(longest edge / spacing), 0 when that is 3 or less (no spacing, or
    the face and edge samples are that dense already)."""
    if spacing <= 0.0:
        return 0
    longest = 0.0
    for e in range(3):
        longest = max(longest, edge_length2(positions, out_pt, t, e))
    steps = int(np.ceil(np.sqrt(longest) / spacing))
    return min(steps, _SPACING_STEPS) if steps > 3 else 0


@_jit
def _count_samples(positions, in_pt, out_pt, sampled, moved, edge_samples, face_samples,
                   spacing):
    """(samples, sampled triangles, the `_spacing_steps` of each moved triangle, `edge_sides`)
    for `sample_distances`."""
    count = 0
    k = 0
    grid_steps = np.zeros(out_pt.shape[0], np.int32)
    here = edge_sides(out_pt, in_pt)
    for t in range(out_pt.shape[0]):
        if sampled[t]:
            k += 1
            count += face_samples.shape[0]
            if not moved[t]:
                continue
            for e in range(3):
                if here[t, e]:
                    count += edge_samples.shape[0]
            grid_steps[t] = _spacing_steps(positions, out_pt, t, spacing)
            if grid_steps[t] > 0:
                count += (grid_steps[t] + 1) * (grid_steps[t] + 2) // 2 - 3
    return count, k, grid_steps, here


@_jit
def _place_samples(X, k, positions, out_pt, t, here, edge_samples, steps):
    """Output triangle t's edge samples (on the edges it samples: `edge_sides`), then its grid
    of `steps` steps but the corners, into X from row k; returns (the row after its edge
    samples, the row after all)."""
    for e in range(3):
        i0 = out_pt[t, e]
        i1 = out_pt[t, (e + 1) % 3]
        if not here[t, e]:
            continue
        for s in range(edge_samples.shape[0]):
            w1 = edge_samples[s]
            for j in range(3):
                X[k, j] = ((1.0 - w1) * np.float64(positions[i0, j])
                           + w1 * np.float64(positions[i1, j]))
            k += 1
    edges_end = k
    for a in range(steps + 1):
        for b in range(steps + 1 - a):
            if a == steps or b == steps or a + b == 0:
                continue  # a corner: an input vertex
            wa = a / steps
            wb = b / steps
            for j in range(3):
                X[k, j] = (wa * np.float64(positions[out_pt[t, 0], j])
                           + wb * np.float64(positions[out_pt[t, 1], j])
                           + (1.0 - wa - wb) * np.float64(positions[out_pt[t, 2], j]))
            k += 1
    return edges_end, k


@_jit
def _refine_peaks(X, d, owner, near_tri, corners, worst, grid):
    """The samples with, appended, those of the second, dense round: on the triangles whose
    samples came within _REFINE_NEAR of the maximum `worst` (at most _REFINE_TRIANGLES, those
    nearest it), at the points _REFINE_WEIGHTS of their corners (rows of `corners`), exact.
    grid: the input's triangle grid (G, gp, boff, btri, stamp)."""
    G, gp, boff, btri, stamp = grid
    count = X.shape[0]
    peak = np.zeros(corners.shape[0], np.float64)  # each triangle's largest sample distance
    for i in range(count):
        peak[owner[i]] = max(peak[owner[i]], d[i])
    rows = np.flatnonzero(peak >= _REFINE_NEAR * worst)
    if rows.shape[0] > _REFINE_TRIANGLES:  # those nearest the maximum
        rows = rows[np.argsort(-peak[rows], kind="stable")[:_REFINE_TRIANGLES]]
    w = _REFINE_WEIGHTS
    extra = rows.shape[0] * w.shape[0]
    X2 = np.empty((count + extra, 3), np.float64)
    d2s = np.empty(count + extra, np.float64)
    owner2 = np.empty(count + extra, np.int32)
    near2 = np.empty(count + extra, np.int32)
    X2[:count] = X
    d2s[:count] = d
    owner2[:count] = owner
    near2[:count] = near_tri
    k = count
    hint = -1
    for r in rows:
        for s in range(w.shape[0]):
            for j in range(3):
                X2[k, j] = (w[s, 0] * corners[r, j] + w[s, 1] * corners[r, 3 + j]
                            + w[s, 2] * corners[r, 6 + j])
            dd, hint = nearest_triangle(X2[k, 0], X2[k, 1], X2[k, 2], hint, G, gp, boff, btri,
                                        stamp, count + k, -1.0)
            d2s[k] = np.sqrt(dd)
            owner2[k] = r
            near2[k] = hint
            k += 1
    return X2, d2s, owner2, near2


@_jit
def sample_distances(positions, in_pt, out_pt, sampled, moved, src, edge_samples,
                     face_samples, spacing=0.0):
    """Sample points of the `sampled` output triangles and their distances to the input
    triangles: (points (s, 3) float64, distances (s,) float64 (exact, except an edge sample's
    where below _REFINE_NEAR times the maximum: there an upper bound under it), owner (s,)
    int32: the sample's row, near (s,) int32: its nearest input triangle, row_tri (k,) int32:
    the output triangle of each row, one per sampled triangle). The samples: face samples, and
    edge samples on each edge from its a < b side or where it is used once (`edge_sides`), then
    the refinement of the triangles nearest the maximum (`_refine_peaks`). A triangle that did
    not move (not `moved`: it is input triangle src[t], only its normals changed) gets its face
    samples at distance 0 on src[t], with no search and no edge samples (for the shading
    term). spacing > 0: a moved triangle longer than 3 x spacing is also sampled on the grid of
    `_spacing_steps` steps (its points but the corners, measured exactly, after its edge
    samples)."""
    count, k, grid_steps, here = _count_samples(positions, in_pt, out_pt, sampled, moved,
                                                edge_samples, face_samples, spacing)
    X = np.empty((count, 3), np.float64)
    d = np.empty(count, np.float64)
    owner = np.empty(count, np.int32)
    near_tri = np.empty(count, np.int32)
    corners = np.empty((k, 9), np.float64)
    row_tri = np.empty(k, np.int32)
    if count == 0:
        return X, d, owner, near_tri, row_tri
    G, gp, boff, btri = build_triangle_grid(positions, in_pt)
    stamp = np.full(max(in_pt.shape[0], 1), -1, np.int32)
    k = 0
    row = 0
    worst = 0.0
    for t in range(out_pt.shape[0]):
        if not sampled[t]:
            continue
        row_tri[row] = t
        for c in range(3):
            for j in range(3):
                corners[row, 3 * c + j] = positions[out_pt[t, c], j]
        first = k
        for s in range(face_samples.shape[0]):
            for j in range(3):
                X[k, j] = (face_samples[s, 0] * np.float64(positions[out_pt[t, 0], j])
                           + face_samples[s, 1] * np.float64(positions[out_pt[t, 1], j])
                           + face_samples[s, 2] * np.float64(positions[out_pt[t, 2], j]))
            k += 1
        if not moved[t]:
            for i in range(first, k):
                d[i] = 0.0
                owner[i] = row
                near_tri[i] = src[t]
            row += 1
            continue
        edges_end, k = _place_samples(X, k, positions, out_pt, t, here, edge_samples,
                                      grid_steps[t])
        hint = src[t]
        for i in range(first, k):
            # face and grid samples exact (the shading term reads their nearest triangle); an
            # edge sample's search may stop at any triangle within _REFINE_NEAR of the largest
            # distance so far: the maximum and the triangles the refinement picks stay the same
            exact = i < first + face_samples.shape[0] or i >= edges_end
            enough = -1.0 if exact else (_REFINE_NEAR * worst) ** 2
            d2, hint = nearest_triangle(X[i, 0], X[i, 1], X[i, 2], hint, G, gp, boff, btri,
                                        stamp, i, enough)
            d[i] = np.sqrt(d2)
            worst = max(worst, d[i])
            owner[i] = row
            near_tri[i] = hint
        row += 1
    # the triangles whose samples came near the maximum are sampled again, densely: the peak of
    # the distance often lies between the first samples of a coarse triangle
    if worst <= 0.0:
        return X, d, owner, near_tri, row_tri
    X2, d2s, owner2, near2 = _refine_peaks(X, d, owner, near_tri, corners[:row], worst,
                                           (G, gp, boff, btri, stamp))
    return X2, d2s, owner2, near2, row_tri


@_jit
def shading_term(X, owner, near, row_tri, positions, in_pt, in_w, in_normal, out_pt, out_w,
             out_normal, src):
    """The shading term of a simplification: the largest, over the sample points X (s, 3), of
    the angle (radians) between the output surface's interpolated normal at the point and the
    input surface's at its nearest input triangle `near` (the point's projection, clamped into
    the triangle), times the size of the point's output triangle (row_tri[owner]), sqrt(2 x its
    area) (a long sliver along a cylinder spreads its error thin); points on an edge of their
    triangle are left out (at a crease, the nearest input triangle may lie on either side), and
    where the nearest input triangle faces away (the far side of a thin part) the input triangle
    the output triangle came from (src) stands in.

    What it stands for: a normal off by an angle a over a triangle of size s changes the lit
    image about as much as moving an edge by a * s (both project to pixels the same way), so it
    is compared with tau like a distance; `BuildConfig.shading_weight` scales it."""
    worst = 0.0
    for i in range(X.shape[0]):
        t = row_tri[owner[i]]
        w0, w1, w2, fx, fy, fz = _weights(positions, out_pt, t, X[i, 0], X[i, 1], X[i, 2])
        if min(w0, w1, w2) < 0.05:
            continue  # on an edge: at a crease its nearest input triangle may be either side's
        size = np.sqrt(np.sqrt(fx * fx + fy * fy + fz * fz))  # sqrt(2 x area): small for slivers
        if np.pi * size <= worst:
            continue  # no angle can raise the maximum
        ox = w0 * out_normal[out_w[t, 0], 0] + w1 * out_normal[out_w[t, 1], 0] + w2 * out_normal[
            out_w[t, 2], 0]
        oy = w0 * out_normal[out_w[t, 0], 1] + w1 * out_normal[out_w[t, 1], 1] + w2 * out_normal[
            out_w[t, 2], 1]
        oz = w0 * out_normal[out_w[t, 0], 2] + w1 * out_normal[out_w[t, 1], 2] + w2 * out_normal[
            out_w[t, 2], 2]
        ti = near[i]
        far_side = ti < 0
        if not far_side:  # a thin part's far side can be nearest: then the triangle it came from
            v0, v1, v2, gx, gy, gz = _weights(positions, in_pt, ti, X[i, 0], X[i, 1], X[i, 2])
            far_side = fx * gx + fy * gy + fz * gz <= 0.0
        if far_side:
            ti = src[t]
            v0, v1, v2, _, _, _ = _weights(positions, in_pt, ti, X[i, 0], X[i, 1], X[i, 2])
        v1 = min(max(v1, 0.0), 1.0)  # the projection, clamped into the triangle
        v2 = min(max(v2, 0.0), 1.0 - v1)
        v0 = 1.0 - v1 - v2
        ix = v0 * in_normal[in_w[ti, 0], 0] + v1 * in_normal[in_w[ti, 1], 0] + v2 * in_normal[
            in_w[ti, 2], 0]
        iy = v0 * in_normal[in_w[ti, 0], 1] + v1 * in_normal[in_w[ti, 1], 1] + v2 * in_normal[
            in_w[ti, 2], 1]
        iz = v0 * in_normal[in_w[ti, 0], 2] + v1 * in_normal[in_w[ti, 1], 2] + v2 * in_normal[
            in_w[ti, 2], 2]
        cx = oy * iz - oz * iy
        cy = oz * ix - ox * iz
        cz = ox * iy - oy * ix
        angle = np.arctan2(np.sqrt(cx * cx + cy * cy + cz * cz), ox * ix + oy * iy + oz * iz)
        worst = max(worst, angle * size)
    return worst


@_jit_inline
def _weights(positions, pt, t, px, py, pz):
    """(w0, w1, w2, n): the barycentric weights of p's projection on the plane of triangle t of
    pt (unclamped; (1, 0, 0) for a degenerate triangle) and the triangle's area-weighted normal
    n = e0 x e1."""
    a = pt[t, 0]
    ax = np.float64(positions[a, 0])
    ay = np.float64(positions[a, 1])
    az = np.float64(positions[a, 2])
    e0x = np.float64(positions[pt[t, 1], 0]) - ax
    e0y = np.float64(positions[pt[t, 1], 1]) - ay
    e0z = np.float64(positions[pt[t, 1], 2]) - az
    e1x = np.float64(positions[pt[t, 2], 0]) - ax
    e1y = np.float64(positions[pt[t, 2], 1]) - ay
    e1z = np.float64(positions[pt[t, 2], 2]) - az
    vx = px - ax
    vy = py - ay
    vz = pz - az
    d00 = e0x * e0x + e0y * e0y + e0z * e0z
    d01 = e0x * e1x + e0y * e1y + e0z * e1z
    d11 = e1x * e1x + e1y * e1y + e1z * e1z
    det = d00 * d11 - d01 * d01
    nx = e0y * e1z - e0z * e1y
    ny = e0z * e1x - e0x * e1z
    nz = e0x * e1y - e0y * e1x
    if not det > 1.0e-30 * d00 * d11 or det <= 0.0:
        return 1.0, 0.0, 0.0, nx, ny, nz
    d20 = vx * e0x + vy * e0y + vz * e0z
    d21 = vx * e1x + vy * e1y + vz * e1z
    w1 = (d11 * d20 - d01 * d21) / det
    w2 = (d00 * d21 - d01 * d20) / det
    return 1.0 - w1 - w2, w1, w2, nx, ny, nz


@_jit
def simplify_sampled(pos, tri, wpos, attr, lock, target, persist, permissive, color_start,
                      normal_weight=0.0, uv_start=-1, spacing=0.0):
    """The collapses of `simplify` (normal_weight: see `collapse`), the prefiltered normals
    (and vertex colours: the four columns of `attr` from `color_start`, none where it is
    negative), then the dense samples of
    the changed triangles with their distances to this input (`sample_distances`) and the
    shading term (`shading_term`): (new triangles (m2, 3) int32 wedge ids, points (s, 3), distances
    (s,), slack: 1e-6 of the input's bounding-box diagonal, attributes (k, a) float32 per wedge:
    where `fresh`, the prefiltered normal (the area-weighted normals it stands for, normalized)
    and colour (their area-weighted mean), the input's uvs and material; else the input's
    attributes, fresh (k,) bool: wedges that took in
    others and whose position is not locked by the caller (a locked position is shared with
    other groups, which keep its normal), shading term, near (s,) int32: each sample's nearest
    input triangle, in_pt (m, 3) int32: the input's position triangles, owner (s,) and row_tri:
    each sample's output triangle is row_tri[owner], out_p (m2, 3) int32: the output's position
    triangles)."""
    out_w, out_p, modified, src, nacc, grew = collapse(
        pos, tri, wpos, attr, lock, target, persist, permissive, normal_weight, uv_start
    )
    k_w = attr.shape[0]
    na = attr.shape[1]
    in_normal = np.empty((k_w, 3), np.float32)
    out_normal = np.empty((k_w, na), np.float32)  # every attribute; the normal first
    fresh = np.zeros(k_w, np.bool_)
    for w in range(k_w):
        for j in range(3):
            in_normal[w, j] = attr[w, j]
        for j in range(na):
            out_normal[w, j] = attr[w, j]
        if grew[w] and not lock[wpos[w]]:
            ln = np.sqrt(nacc[w, 0] ** 2 + nacc[w, 1] ** 2 + nacc[w, 2] ** 2)
            if ln > 0.0:
                fresh[w] = True
                for j in range(3):
                    out_normal[w, j] = nacc[w, j] / ln
                area = nacc[w, na]
                if color_start >= 0 and area > 0.0:
                    for j in range(color_start, color_start + 4):
                        out_normal[w, j] = min(max(nacc[w, j] / area, 0.0), 1.0)
    in_pt, slack = input_triangles(pos, tri, wpos)
    # sampled: the moved triangles, and those whose normals changed
    sampled = modified.copy()
    for t in range(out_w.shape[0]):
        for c in range(3):
            if fresh[out_w[t, c]]:
                sampled[t] = True
    X, d, owner, near, row_tri = sample_distances(pos, in_pt, out_p, sampled, modified, src,
                                                   _DENSE_EDGE_SAMPLES, _DENSE_FACE_SAMPLES,
                                                   spacing)
    shade = shading_term(X, owner, near, row_tri, pos, in_pt, tri, in_normal, out_p, out_w,
                     out_normal, src)
    return (out_w, X, d, slack, out_normal, fresh, shade, near, in_pt,
            owner, row_tri, out_p)


@_jit
def _heap_down(hd: np.ndarray, hi: np.ndarray, hr: np.ndarray, n: int) -> None:
    """Restore the min-heap order of hd[:n] (with hi, hr alongside) below its root."""
    i = 0
    while True:
        small = i
        for c in (2 * i + 1, 2 * i + 2):
            if c < n and hd[c] < hd[small]:
                small = c
        if small == i:
            return
        hd[i], hd[small] = hd[small], hd[i]
        hi[i], hi[small] = hi[small], hi[i]
        hr[i], hr[small] = hr[small], hr[i]
        i = small


@_jit
def dropped_distance(pos: np.ndarray, new_local: np.ndarray, local_wp: np.ndarray,
                      pos_ids: np.ndarray, positions: np.ndarray, carried: np.ndarray,
                      keep: int) -> tuple[float, np.ndarray, np.ndarray]:
    """Largest distance to the simplified triangles of the original positions that are not on
    them: those this simplification removed, and those the members carry (`carried`: removed
    below, ids into positions); pos (n, 3) float32 the group's positions (pos_ids: their ids in
    positions), new_local (k, 3) int32 wedge ids after, local_wp (w,) int32 each wedge's position.
    Returns (that distance, the `keep` farthest of those positions (their ids), the output
    triangle (row of new_local) nearest each): what the new clusters carry upward; and the id
    of the farthest of them (-1 if none).

    The sampled error measures one way, from the output to the original, which sees every moved
    triangle but not surface dropped with nothing in its place: a border vertex collapsed along
    its border takes its ear with it (200 blades fanned around one edge lost 98.5% of their area
    at error 0), and the last levels of a closed mesh shrink it. The removed positions are
    original vertices, so this is the other way, original to output, at those points. A tip
    removed at one level recedes further as the levels above simplify around it (cheburashka's
    coarsest level held 0.70 of the distance of its farthest original vertex): so the farthest
    positions are carried and measured again at every level above (a search stops at the first
    triangle within the `keep`-th largest distance so far: only those kept are exact)."""
    n = pos.shape[0]
    k = new_local.shape[0]
    out_pt = np.empty((k, 3), np.int32)
    used = np.zeros(n, np.bool_)
    for t in range(k):
        for c in range(3):
            out_pt[t, c] = local_wp[new_local[t, c]]
            used[out_pt[t, c]] = True
    keep = max(keep, 1)
    hd = np.zeros(keep, np.float64)  # a min-heap of the farthest: squared distance, id, triangle
    hi = np.zeros(keep, np.int32)
    hr = np.zeros(keep, np.int32)
    count = 0
    if k == 0:
        return 0.0, hi[:0].copy(), hr[:0].copy(), -1
    G, gp, boff, btri = build_triangle_grid(pos, out_pt)
    stamp = np.full(k, -1, np.int32)
    hint = -1
    total = carried.shape[0] + n
    for q in range(total):  # the carried first: the farthest, so that the heap fills high
        if q < carried.shape[0]:
            p = carried[q]
            px = np.float64(positions[p, 0])
            py = np.float64(positions[p, 1])
            pz = np.float64(positions[p, 2])
        else:
            v = q - carried.shape[0]
            if used[v]:
                continue
            p = pos_ids[v]
            px = np.float64(pos[v, 0])
            py = np.float64(pos[v, 1])
            pz = np.float64(pos[v, 2])
        enough = hd[0] if count == keep else -1.0
        d2, t = nearest_triangle(px, py, pz, hint, G, gp, boff, btri, stamp, q, enough)
        if t < 0:
            continue
        hint = t
        if count < keep:  # push, sifting up
            i = count
            count += 1
            while i > 0 and hd[(i - 1) // 2] > d2:
                j = (i - 1) // 2
                hd[i], hi[i], hr[i] = hd[j], hi[j], hr[j]
                i = j
            hd[i], hi[i], hr[i] = d2, p, t
        elif d2 > hd[0]:
            hd[0], hi[0], hr[0] = d2, p, t
            _heap_down(hd, hi, hr, count)
    worst = 0.0
    worst_id = -1
    for i in range(count):
        if hd[i] >= worst:
            worst = hd[i]
            worst_id = hi[i]
    return np.sqrt(worst), hi[:count].copy(), hr[:count].copy(), worst_id


@_jit
def original_distance(X: np.ndarray, d: np.ndarray, below: np.ndarray, near: np.ndarray,
                       owner: np.ndarray, in_pt: np.ndarray, pos_ids: np.ndarray,
                       positions: np.ndarray, ptri: np.ndarray, nbr: np.ndarray,
                       vt_off: np.ndarray, vt_tri: np.ndarray) -> float:
    """The largest distance to the original mesh over the sample points X (s, 3) of a
    simplified group, whose distances to the group's input surface are d (s,) (at input
    triangles near (s,) of in_pt, local position ids: pos_ids maps them to the original's), each
    input triangle t lying within below[t] of the original (its cluster's geometric error).

    Each point x has two upper bounds of its distance to the original surface: d(x) + below[t]
    (the triangle inequality through the nearest input point, on t), exact at level 1 where
    below is 0, and the distance to the original triangle a
    walk over the original surface ends on (`distance.surface_walk`), the true distance unless
    the walk stops in a fold, whatever the level. The points go in decreasing order of the first
    bound, so that the loop ends at the first one that cannot raise the maximum: the fewest
    walks (at coarse levels, where that bound is loose, a tenth of the points or less). A walk
    starts at a triangle around the corner of x's nearest input triangle nearest to x (every
    input vertex is an original one) or, where that is nearer x, at the triangle the last walk
    from a point of the same output triangle (owner (s,): each sample's row) ended on (coarse
    triangles span dozens of original ones: igea's level-11 job took 1,111 walks of 56 steps
    from the corners, 573 with both starts), and is not walked when that triangle is already no
    farther than the maximum. The smaller bound counts. (The samples include
    `measure.sample_distances`' second, dense round on the triangles nearest the maximum
    distance to the input.) A walk that would raise the maximum is checked by walks from the
    nearest input triangle's other corners."""
    if below.shape[0] == 0 or below.max() == 0.0:
        return d.max() if d.shape[0] else 0.0
    n = X.shape[0]
    bound = np.empty(n, np.float64)
    for i in range(n):
        bound[i] = d[i] + below[near[i]]
    last = np.full(owner.max() + 1 if n else 0, -1, np.int32)  # each row's last walk's end
    best = 0.0
    for i in np.argsort(-bound, kind="mergesort"):
        if bound[i] <= best:
            break  # no point left can raise the maximum
        px, py, pz = X[i, 0], X[i, 1], X[i, 2]
        corner = -1
        corner_d2 = np.inf
        for c in range(3):
            v = pos_ids[in_pt[near[i], c]]
            d2 = ((positions[v, 0] - px) ** 2 + (positions[v, 1] - py) ** 2
                  + (positions[v, 2] - pz) ** 2)
            if d2 < corner_d2:
                corner, corner_d2 = v, d2
        start = vt_tri[vt_off[corner]]
        s2 = point_triangle_d2_of(px, py, pz, positions, ptri[start, 0], ptri[start, 1],
                                   ptri[start, 2])
        prev = last[owner[i]]  # or where the last walk from the same output triangle ended
        if prev >= 0:
            p2 = point_triangle_d2_of(px, py, pz, positions, ptri[prev, 0], ptri[prev, 1],
                                       ptri[prev, 2])
            if p2 < s2:
                start, s2 = prev, p2
        if s2 <= best * best:
            continue  # the walk's first triangle is near enough already: it cannot raise it
        w2, end = surface_walk(px, py, pz, start, positions, ptri, nbr, vt_off, vt_tri,
                               WALK_STEPS)
        last[owner[i]] = end
        if min(bound[i], np.sqrt(w2)) > best:
            # it would raise the maximum: a walk can stop in a fold (thin parts, coarse levels),
            # so walks from the corners of its nearest input triangle get a say too
            for c in range(3):
                other = vt_tri[vt_off[pos_ids[in_pt[near[i], c]]]]
                if other != start:
                    o2, _ = surface_walk(px, py, pz, other, positions, ptri, nbr, vt_off,
                                         vt_tri, WALK_STEPS)
                    w2 = min(w2, o2)
        best = max(best, min(bound[i], np.sqrt(w2)))
    return best


@_jit
def cluster_positions(store: np.ndarray, tri_off: np.ndarray, clusters: int, wpos: np.ndarray,
                       n: int) -> tuple[np.ndarray, np.ndarray]:
    """The distinct positions of each of the first `clusters` clusters (rows off[c]:off[c + 1]
    of ids), then one more row: the positions no triangle of theirs uses (none, for a mesh
    whose positions are all used). A position shared by clusters is listed in the first."""
    seen = np.zeros(n, np.bool_)
    ids = np.empty(n, np.int32)
    off = np.zeros(clusters + 2, np.int64)
    k = 0
    for c in range(clusters):
        for t in range(tri_off[c], tri_off[c + 1]):
            for j in range(3):
                p = wpos[store[t, j]]
                if not seen[p]:
                    seen[p] = True
                    ids[k] = p
                    k += 1
        off[c + 1] = k
    for p in range(n):
        if not seen[p]:
            ids[k] = p
            k += 1
    off[clusters + 1] = k
    return off, ids


@_jit
def farthest_by_cluster(positions: np.ndarray, tris: np.ndarray, spheres: np.ndarray,
                         off: np.ndarray, ids: np.ndarray, first: int, last: int,
                         floor: float = 0.0) -> float:
    """The largest distance of the positions of rows first..last-1 (rows off[c]:off[c + 1] of
    ids, each row inside the sphere spheres[c] (c, 4)) to the triangles tris (k, 3) (position
    ids). As `grid.farthest_distance` over those positions (a point's search stops at the first
    triangle within the largest distance so far), but a row whose sphere lies within that
    distance (its centre within it less the radius of some triangle) is passed over whole: none
    of its positions can raise the maximum, which stays exact. At coarse levels most of the
    original's level-0 clusters pass: one search a cluster instead of one a position. floor: a
    distance some original position is known to have (the farthest removed position's): the
    search starts at it, so that clusters pass from the first (the maximum is the same)."""
    G, gp, boff, btri = build_triangle_grid(positions, tris)
    stamp = np.full(max(tris.shape[0], 1), -1, np.int32)
    worst2 = floor * floor
    hint = -1
    q = 0
    for c in range(first, last):
        r = np.float64(spheres[c, 3])
        slack = np.sqrt(worst2) - r
        if slack > 0.0:
            d2, t = nearest_triangle(np.float64(spheres[c, 0]), np.float64(spheres[c, 1]),
                             np.float64(spheres[c, 2]), hint, G, gp, boff, btri, stamp, q,
                             slack * slack)
            q += 1
            if t >= 0:
                hint = t
                if d2 <= slack * slack:
                    continue
        for i in range(off[c], off[c + 1]):
            p = ids[i]
            worst2, hint = measure_point(np.float64(positions[p, 0]),
                                          np.float64(positions[p, 1]),
                                          np.float64(positions[p, 2]), hint, G, gp, boff, btri,
                                          stamp, q, worst2)
            q += 1
    return np.sqrt(worst2)




def group_errors(own: float, dropped: float, slack: float) -> tuple[float, float]:
    """(surface, geometric error) of a simplified group from its samples' largest distance to
    the original (`own`, `original_distance`) and its removed positions' (`dropped`,
    `dropped_distance`): both with the samples' margin SAMPLED_FACTOR and twice the slack. The
    dropped distance is measured at the positions this group removes, not at those removed
    below whose surface it moves further (without the margin the coarsest levels of closed scans
    held 0.91-0.98 of the two-sided distance)."""
    surface = own * SAMPLED_FACTOR + 2.0 * slack
    return surface, max(surface, dropped * SAMPLED_FACTOR + 2.0 * slack)


def simplify_measured(positions: np.ndarray, triangles: np.ndarray, wedge_position: np.ndarray,
                      wedge_attr: np.ndarray, locked: np.ndarray, target_triangles: int, *,
                      persist: bool = False) -> tuple[np.ndarray, float]:
    """Simplify one mesh patch towards target_triangles and measure it as the DAG builder
    measures a group of level 0: (new triangles (m2, 3) int32 wedge ids, geometric error).

    positions (n, 3) float32; triangles (m, 3) int32 wedge ids; wedge_position (k,) int32 the
    position of each wedge; wedge_attr (k, a) float32 the wedge attributes (normal first, maybe
    uv); locked (n,) bool: positions that must not move (open borders, non-manifold vertices and
    seam ends are locked as well: `preprocess.simplify.collapse`). persist: go on to dearer
    collapses when every cheap one is rejected (the builder's second attempt).

    The error is `group_errors` of the samples' largest distance to this input (the original,
    at level 0) and of the removed positions' largest distance to the output: an upper bound of
    the two-sided distance up to the sampling margin, which tests hold to dense brute-force
    distances. 0.0 when nothing changed."""
    pos = np.ascontiguousarray(positions, dtype=np.float32).reshape(-1, 3)
    tri = np.ascontiguousarray(triangles, dtype=np.int32).reshape(-1, 3)
    wpos = np.ascontiguousarray(wedge_position, dtype=np.int32).reshape(-1)
    attr = np.ascontiguousarray(wedge_attr, dtype=np.float32)
    if attr.ndim == 1:
        attr = attr.reshape(-1, 1)
    lock = np.ascontiguousarray(locked, dtype=np.bool_).reshape(-1)
    if lock.shape[0] != pos.shape[0]:
        raise ValueError("locked must have one entry per position")
    if attr.shape[0] != wpos.shape[0]:
        raise ValueError("wedge_attr must have one row per wedge")
    target = max(int(target_triangles), 0)
    if tri.shape[0] <= target:
        return tri.copy(), 0.0
    out, _, d, slack, *_ = simplify_sampled(pos, tri, wpos, attr, lock, target, persist, False,
                                            -1)
    if np.array_equal(out, tri):
        return out, 0.0
    ids = np.arange(len(pos), dtype=np.int32)
    dropped, *_ = dropped_distance(pos, out, wpos, ids, pos, np.zeros(0, np.int32), 1)
    own = float(d.max()) if len(d) else 0.0
    return out, group_errors(own, float(dropped), float(slack))[1]
