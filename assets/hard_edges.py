"""Hard-edged and flat test models, made in code (numpy only), for the quality benchmark of issue 15
(`tools/bench_quality.py`): what scans never have and what users' models are full of.

- `bevelled_box`: a box with 45-degree chamfers, flat-shaded (45 and 35 degree creases);
- `star_prism`, `l_bracket`, `gear`: extruded profiles (`extrusion`); walls smooth where the
  profile turns by less than `crease` degrees, hard where it turns more; caps hard against walls;
- `faceted_sphere`: a low-poly geodesic sphere, flat-shaded (every facet its own vertices and
  face normal), each facet split into many coplanar triangles;
- `faceted_rock`: a dense rock, flat-shaded triangle by triangle (a low-poly look at high
  density: no two neighbours coplanar);
- `cad_part`: a stepped block with a boss, a pocket, a slot and a ledge, all 90-degree creases, and
  **no normals** (as an STL or a normal-less OBJ comes): the loader computes them.

How the normals come out today (`preprocess.load.mesh_from_arrays`): normals given per input
vertex are kept, and a position with several normals becomes several wedges, so the flat-shaded
models keep their creases exactly at full detail. Without normals (`cad_part`) they are computed
with the loader's crease angle (45 degrees by default, `preprocess.io.normals.crease_normals`): the
90-degree creases stay hard (with crease angle 180, one smooth normal per position, they shade as
rounded bevels one lattice step wide, even at full detail).

Every model is dense (a few thousand to ~100k triangles, set by `resolution` or `step`) so that the
simplifier has work to do. Points shared by two faces are computed from the same operands (an
integer lattice scaled once, or one array of profile samples), so they weld exactly: no
T-junction and no crack in the topology that the models would bring themselves.
"""

from __future__ import annotations

import itertools
import math
from functools import partial

import numpy as np

from preprocess.load import mesh_from_arrays
from preprocess.mesh import Mesh

__all__ = ["MODELS", "bevelled_box", "cad_part", "extrusion", "faceted_rock", "faceted_sphere",
           "gear", "l_bracket", "make", "star_prism"]


# ------------------------------------------------------------------------------ shared helpers


class _Soup:
    """Faces collected one patch at a time: positions, triangles and (optionally) a normal per
    vertex. Each patch has its own vertices; `mesh_from_arrays` welds equal positions and keeps
    a wedge per distinct normal."""

    def __init__(self) -> None:
        self.points: list[np.ndarray] = []
        self.tris: list[np.ndarray] = []
        self.normals: list[np.ndarray] = []
        self.count = 0

    def add(self, points: np.ndarray, tris: np.ndarray, normals: np.ndarray) -> None:
        """points (n, 3), tris (m, 3) indexing them, normals (n, 3) or (3,) for the patch."""
        n = len(points)
        self.points.append(np.asarray(points, np.float64))
        self.tris.append(np.asarray(tris, np.int64) + self.count)
        self.normals.append(np.broadcast_to(np.asarray(normals, np.float64), (n, 3)))
        self.count += n

    def mesh(self, name: str, *, with_normals: bool = True,
             transform: np.ndarray | None = None) -> Mesh:
        """The welded `Mesh`; `transform` (3, 3), a rotation, applies to positions and normals."""
        p = np.concatenate(self.points)
        nrm = np.concatenate(self.normals)
        if transform is not None:
            p = p @ transform.T
            nrm = nrm @ transform.T
        return mesh_from_arrays(p, np.concatenate(self.tris),
                                nrm if with_normals else None, name=name)


def _grid(nu: int, nv: int) -> np.ndarray:
    """(2 nu nv, 3) int64 triangles of an (nu + 1) x (nv + 1) vertex grid, vertex (i, j) at
    index i * (nv + 1) + j, counter-clockwise in (i, j)."""
    i, j = np.meshgrid(np.arange(nu), np.arange(nv), indexing="ij")
    a = (i * (nv + 1) + j).ravel()
    b, c, d = a + nv + 1, a + nv + 2, a + 1
    return np.concatenate([np.stack([a, b, c], 1), np.stack([a, c, d], 1)])


def _quad_patch(origin, u, v, nu: int, nv: int) -> tuple[np.ndarray, np.ndarray]:
    """Lattice points origin + i u + j v (0 <= i <= nu, 0 <= j <= nv) and their triangles,
    counter-clockwise around u x v. Integer inputs give integer points: exact."""
    i, j = np.meshgrid(np.arange(nu + 1), np.arange(nv + 1), indexing="ij")
    pts = (np.asarray(origin)[None] + i.reshape(-1, 1) * np.asarray(u)[None]
           + j.reshape(-1, 1) * np.asarray(v)[None])
    return pts, _grid(nu, nv)


def _triangle_patch(origin, u, v, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Lattice points origin + i u + j v (i + j <= n) and their n^2 triangles, counter-clockwise
    around u x v."""
    ii, jj = np.meshgrid(np.arange(n + 1), np.arange(n + 1), indexing="ij")
    inside = ii + jj <= n
    local = np.full((n + 1, n + 1), -1, np.int64)
    gi, gj = ii[inside], jj[inside]
    local[gi, gj] = np.arange(gi.size)
    ui, uj = np.nonzero(ii + jj <= n - 1)
    up = np.stack([local[ui, uj], local[ui + 1, uj], local[ui, uj + 1]], 1)
    di, dj = np.nonzero(ii + jj <= n - 2)
    down = np.stack([local[di + 1, dj], local[di + 1, dj + 1], local[di, dj + 1]], 1)
    pts = (np.asarray(origin)[None] + gi.reshape(-1, 1) * np.asarray(u)[None]
           + gj.reshape(-1, 1) * np.asarray(v)[None])
    return pts, np.concatenate([up, down])


def _facing(tris: np.ndarray, u, v, normal) -> np.ndarray:
    """The patch's triangles, reversed when u x v points away from `normal`."""
    return tris if float(np.dot(np.cross(u, v), normal)) > 0 else tris[:, ::-1]


def _unit(v) -> np.ndarray:
    v = np.asarray(v, np.float64)
    return v / np.linalg.norm(v, axis=-1, keepdims=True)


# Y up: profiles are drawn in the XY plane and extruded along +Z, then turned so that the
# extrusion stands along +Y (a proper rotation: windings keep their sense)
_Z_TO_Y = np.array([[1.0, 0.0, 0.0], [0.0, 0.0, 1.0], [0.0, -1.0, 0.0]])


# ------------------------------------------------------------------------------- bevelled box


def bevelled_box(size=(2.0, 1.25, 0.75), bevel: float = 0.125, *,
                 resolution: int = 32) -> Mesh:
    """A box of `size` centred on the origin, every edge cut by a 45-degree chamfer `bevel`
    wide (measured along the faces), flat-shaded: 6 faces, 12 chamfer strips and 8 corner
    triangles, each with its own normal. Creases: 45 degrees face/chamfer, 35.3 degrees
    chamfer/corner. Built on an integer lattice of `resolution` steps per unit; the default has
    16,256 triangles (about 2 x area x resolution^2)."""
    H = [max(1, round(s / 2 * resolution)) for s in size]  # half extents, lattice steps
    E = max(1, round(bevel * resolution))  # chamfer, lattice steps
    if E >= min(H):
        raise ValueError(f"bevelled_box: bevel {bevel} too wide for size {size}")
    soup = _Soup()
    eye = np.eye(3, dtype=np.int64)
    for k in range(3):  # the faces
        p, q = (k + 1) % 3, (k + 2) % 3
        for s in (-1, 1):
            origin = s * H[k] * eye[k] - (H[p] - E) * eye[p] - (H[q] - E) * eye[q]
            pts, tris = _quad_patch(origin, eye[p], eye[q], 2 * (H[p] - E), 2 * (H[q] - E))
            n = s * eye[k]
            soup.add(pts, _facing(tris, eye[p], eye[q], n), n)
    for k in range(3):  # the chamfer strips, along axis r, between faces k and q
        q, r = (k + 1) % 3, (k + 2) % 3
        for sk in (-1, 1):
            for sq in (-1, 1):
                origin = sk * H[k] * eye[k] + sq * (H[q] - E) * eye[q] - (H[r] - E) * eye[r]
                u, v = eye[r], -sk * eye[k] + sq * eye[q]
                pts, tris = _quad_patch(origin, u, v, 2 * (H[r] - E), E)
                n = _unit(sk * eye[k] + sq * eye[q])
                soup.add(pts, _facing(tris, u, v, n), n)
    for sx in (-1, 1):  # the corner triangles
        for sy in (-1, 1):
            for sz in (-1, 1):
                s = np.array([sx, sy, sz])
                corner = s * np.array([H[0], H[1] - E, H[2] - E])
                u, v = np.array([-sx, sy, 0]), np.array([-sx, 0, sz])
                pts, tris = _triangle_patch(corner, u, v, E)
                n = _unit(s)
                soup.add(pts, _facing(tris, u, v, n), n)
    for pts in soup.points:
        pts /= resolution
    return soup.mesh("bevelled-box")


# --------------------------------------------------------------------------------- extrusions


def _resample(polyline: np.ndarray, step: float) -> np.ndarray:
    """(k, 2) points of a polyline (first to last) at spacing about `step`, corners kept, the
    last point left out (the next piece starts there)."""
    out = []
    for a, b in itertools.pairwise(polyline):
        n = max(1, math.ceil(float(np.linalg.norm(b - a)) / step))
        t = np.arange(n)[:, None] / n
        out.append(a[None] * (1 - t) + b[None] * t)
    return np.concatenate(out)


def _arc(radius: float, a0: float, a1: float, step: float) -> np.ndarray:
    """(k + 1, 2) points of an arc from angle a0 to a1, chords about `step` long."""
    n = max(1, math.ceil(abs(a1 - a0) * radius / step))
    a = np.linspace(a0, a1, n + 1)
    return radius * np.stack([np.cos(a), np.sin(a)], 1)


def _rings(inner: np.ndarray | None, outer: np.ndarray, center: np.ndarray, rings: int
           ) -> tuple[np.ndarray, np.ndarray]:
    """A cap between a closed `outer` boundary (k, 2) and either a hole boundary `inner` (k, 2),
    point j facing point j, or the `center` (a fan): `rings` rings of k points. Returns (points
    (p, 2), triangles (t, 3) counter-clockwise); the outer ring is the last k points, the inner
    ring (with a hole) the first k."""
    k = len(outer)
    start = inner if inner is not None else np.broadcast_to(center, outer.shape)
    first = 0 if inner is not None else 1
    t = np.arange(first, rings + 1)[:, None, None] / rings
    pts = (start[None] * (1 - t) + outer[None] * t).reshape(-1, 2)
    pts[-k:] = outer  # the rim: the very samples the walls use (exact weld)
    nr = rings + 1 - first  # rings of k points
    j = np.arange(k)
    tris = []
    for r in range(nr - 1):
        a, b = r * k + j, r * k + (j + 1) % k
        c, d = b + k, a + k
        tris += [np.stack([a, c, d], 1), np.stack([a, b, c], 1)]
    if inner is None:  # the fan around the centre, which goes last
        pts = np.concatenate([pts, np.asarray(center, np.float64)[None]])
        tris.append(np.stack([np.full(k, len(pts) - 1), j, (j + 1) % k], 1))
    tris_a = np.concatenate(tris)
    # counter-clockwise in the plane, whatever the construction's sense
    e1 = pts[tris_a[:, 1]] - pts[tris_a[:, 0]]
    e2 = pts[tris_a[:, 2]] - pts[tris_a[:, 0]]
    area = e1[:, 0] * e2[:, 1] - e1[:, 1] * e2[:, 0]
    tris_a[area < 0] = tris_a[area < 0][:, ::-1]
    return pts, tris_a


def _walls(soup: _Soup, ring: np.ndarray, zs: np.ndarray, crease: float, *,
           inward: bool = False) -> None:
    """Walls over a closed counter-clockwise ring (k, 2) at heights zs: one patch per edge, its
    end normals the edge's own where the profile turns there by more than `crease` degrees,
    else the mean of the two edges' (smooth). `inward`: the walls of a hole (facing the axis)."""
    k = len(ring)
    d = np.roll(ring, -1, axis=0) - ring  # edge j: ring[j] -> ring[j + 1]
    n = _unit(np.stack([d[:, 1], -d[:, 0]], 1))  # outward for a CCW ring
    if inward:
        n = -n
    prev = np.roll(n, 1, axis=0)  # the normal of the edge ending at point j
    turn = np.degrees(np.arccos(np.clip((n * prev).sum(1), -1, 1)))
    smooth = _unit(n + prev)
    K = len(zs) - 1
    for j in range(k):
        j1 = (j + 1) % k
        ends = [smooth[j] if turn[j] <= crease else n[j],
                smooth[j1] if turn[j1] <= crease else n[j]]
        pts = np.array([[*ring[jj], z] for jj in (j, j1) for z in zs])
        nrm = np.array([[*ends[e], 0.0] for e in (0, 1) for _ in zs])
        tris = _grid(1, K)  # (i along the edge, j up): CCW around edge x up = outward
        soup.add(pts, tris[:, ::-1] if inward else tris, nrm)


def extrusion(profile: np.ndarray, height: float, *, step: float, hole: float | None = None,
              crease: float = 30.0, name: str = "extrusion") -> Mesh:
    """A prism: the closed counter-clockwise polygon `profile` (k, 2), star-shaped around the
    origin (every ray from it meets the boundary once), resampled to edges of about `step`,
    extruded by `height` along +Y (the profile lies in XZ). `hole`: a round hole of that radius
    around the axis (inside the profile's kernel). Walls smooth-shaded where the profile turns by
    at most `crease` degrees, hard elsewhere; caps hard against the walls."""
    outer = _resample(np.concatenate([profile, profile[:1]]), step)
    ang = np.arctan2(outer[:, 1], outer[:, 0])
    if not (np.diff(np.unwrap(ang)) > 0).all():
        raise ValueError(f"{name}: the profile must be counter-clockwise and star-shaped "
                         "around the origin")
    zs = np.linspace(0.0, height, max(1, math.ceil(height / step)) + 1)
    soup = _Soup()
    _walls(soup, outer, zs, crease)
    inner = None
    reach = float(np.linalg.norm(outer, axis=1).max())
    if hole is not None:
        inner = hole * np.stack([np.cos(ang), np.sin(ang)], 1)
        _walls(soup, inner, zs, crease, inward=True)
        reach -= hole
    pts2, tris = _rings(inner, outer, np.zeros(2), max(1, math.ceil(reach / step)))
    for z, sense in ((zs[-1], 1.0), (zs[0], -1.0)):
        pts = np.concatenate([pts2, np.full((len(pts2), 1), z)], 1)
        soup.add(pts, tris if sense > 0 else tris[:, ::-1], (0.0, 0.0, sense))
    return soup.mesh(name, transform=_Z_TO_Y)


def star_prism(points: int = 6, *, radius: float = 1.0, inner: float = 0.5,
               height: float = 0.35, step: float = 0.04) -> Mesh:
    """A star of `points` spikes extruded: every corner a hard edge (spikes turn by 132
    degrees, notches by 72). Default: 22,272 triangles."""
    a = np.pi / 2 + np.arange(2 * points) * np.pi / points
    r = np.where(np.arange(2 * points) % 2 == 0, radius, inner)
    profile = np.stack([r * np.cos(a), r * np.sin(a)], 1)
    return extrusion(profile, height, step=step, name="star-prism")


def l_bracket(size: float = 1.5, thickness: float = 0.5, height: float = 0.5, *,
              step: float = 0.04) -> Mesh:
    """An L profile (two arms `size` long, `thickness` thick) extruded: six 90-degree corners
    (one concave). Default: 23,104 triangles."""
    t, s = thickness, size
    c = t / 2  # the origin in the corner square: the L is star-shaped around it
    profile = np.array([[0, 0], [s, 0], [s, t], [t, t], [t, s], [0, s]], np.float64) - c
    return extrusion(profile, height, step=step, name="l-bracket")


def gear(teeth: int = 20, *, root: float = 1.0, tip: float = 1.15, hole: float = 0.3,
         height: float = 0.3, step: float = 0.03) -> Mesh:
    """A spur gear with trapezoidal teeth and a round bore: the root and tip arcs and the bore
    smooth, the flank corners hard (the profile turns by 76-78 degrees there).
    Default: 68,640 triangles."""
    pitch = 2 * np.pi / teeth
    pieces = []
    for k in range(teeth):
        a = k * pitch
        pieces.append(_arc(root, a, a + 0.5 * pitch, step)[:-1])  # the gap's floor
        foot = root * np.array([math.cos(a + 0.5 * pitch), math.sin(a + 0.5 * pitch)])
        head = tip * np.array([math.cos(a + 0.6 * pitch), math.sin(a + 0.6 * pitch)])
        pieces.append(_resample(np.stack([foot, head]), step))  # rising flank
        pieces.append(_arc(tip, a + 0.6 * pitch, a + 0.9 * pitch, step)[:-1])  # the tip
        head = tip * np.array([math.cos(a + 0.9 * pitch), math.sin(a + 0.9 * pitch)])
        foot = root * np.array([math.cos(a + pitch), math.sin(a + pitch)])
        pieces.append(_resample(np.stack([head, foot]), step))  # falling flank
    return extrusion(np.concatenate(pieces), height, step=step, hole=hole, name="gear")


# ----------------------------------------------------------------------------- faceted sphere


def faceted_sphere(base: int = 2, split: int = 16) -> Mesh:
    """A low-poly sphere: the geodesic sphere of 20 base^2 facets (`assets.shapes`), every facet
    flat with its own face normal (duplicated vertices, hard edges everywhere: 19-24 degrees
    between neighbours at base 2, 42 at base 1), each split into split^2 coplanar triangles.
    Points on a shared facet edge are summed from the same corners in the same order (increasing
    corner id), so both facets weld. Default: 20,480 triangles."""
    from assets.shapes import geodesic_sphere_arrays

    V, F = geodesic_sphere_arrays(base)
    V = V.astype(np.float64)
    n = split
    ii, jj = np.meshgrid(np.arange(n + 1), np.arange(n + 1), indexing="ij")
    inside = ii + jj <= n
    gi, gj = ii[inside], jj[inside]
    _, tris = _triangle_patch(np.zeros(3), np.zeros(3), np.zeros(3), n)
    weights = np.stack([n - gi - gj, gi, gj], 1).astype(np.float64)
    soup = _Soup()
    for f in F:
        acc = np.zeros((gi.size, 3))
        for k in np.argsort(f):
            acc = acc + weights[:, k, None] * V[f[k]][None]
        normal = _unit(np.cross(V[f[1]] - V[f[0]], V[f[2]] - V[f[0]]))
        soup.add(acc / n, tris, normal)
    return soup.mesh(f"faceted-sphere-{base}")


def faceted_rock(n: int = 32, *, bumps: float = 0.12, jitter: float = 0.35,
                 seed: int = 15) -> Mesh:
    """A flat-shaded rock: the geodesic sphere of 20 n^2 triangles displaced by low-frequency
    waves (amplitude `bumps`) and a per-vertex radial jitter (`jitter` times the edge length),
    every triangle its own facet (face normal, duplicated vertices). Unlike the split facets of
    `faceted_sphere`, no two triangles are coplanar: neighbouring facets differ by 16 degrees
    (median; a fifth by more than 30), so the simplifier cannot keep every crease and shrink.
    Default: 20,480 triangles."""
    from assets.shapes import geodesic_sphere_arrays

    V, F = geodesic_sphere_arrays(n)
    V = V.astype(np.float64)
    rng = np.random.default_rng(seed)
    waves = rng.normal(size=(6, 3)) * 2.0
    phase = rng.uniform(0, 2 * np.pi, 6)
    r = 1.0 + bumps * np.sin(V @ waves.T + phase).mean(1) * 2
    edge = 1.1 / n  # about the geodesic sphere's edge length
    r += jitter * edge * rng.uniform(-1, 1, len(V))
    P = V * r[:, None]
    a, b, c = P[F[:, 0]], P[F[:, 1]], P[F[:, 2]]
    normals = np.repeat(_unit(np.cross(b - a, c - a)), 3, axis=0)
    tris = np.arange(3 * len(F)).reshape(-1, 3)
    return mesh_from_arrays(P[F].reshape(-1, 3), tris, normals, name=f"faceted-rock-{n}")


# ---------------------------------------------------------------------------------- CAD part

# the part's cells (rows along Z, columns along X): heights in quarters of a cell width. A base
# plate (4), a boss (12), a pocket (1), a slot (2) and a ledge along the back (8). No two regions
# touch only at a corner (which would make four walls meet on one vertical edge)
_CAD_HEIGHTS = np.array([
    [4, 4, 4, 4, 4, 2, 4, 4, 4, 4, 4, 4],
    [4, 12, 12, 12, 4, 2, 4, 4, 4, 4, 4, 4],
    [4, 12, 12, 12, 4, 2, 1, 1, 1, 1, 4, 4],
    [4, 12, 12, 12, 4, 2, 1, 1, 1, 1, 4, 4],
    [4, 4, 4, 4, 4, 2, 1, 1, 1, 1, 4, 4],
    [4, 4, 4, 4, 4, 2, 1, 1, 1, 1, 4, 4],
    [4, 4, 4, 4, 4, 2, 4, 4, 4, 4, 4, 4],
    [8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8],
])


def cad_part(resolution: int = 8, *, cell: float = 0.25, normals: bool = False) -> Mesh:
    """A machined block of 12 x 8 cells `cell` wide (`_CAD_HEIGHTS`; 3 x 2 x 0.75 by default):
    flat faces meeting at 90-degree creases only, closed, on an integer lattice of `resolution`
    steps per cell (a multiple of 4). Without `normals` (the default), as a normal-less file
    comes: the loader computes them (hard at its crease angle). With `normals`, flat-shaded
    (what it should look like). Default: 38,016 triangles."""
    if resolution % 4:
        raise ValueError(f"cad_part: resolution must be a multiple of 4, not {resolution}")
    m = resolution
    h = _CAD_HEIGHTS * (m // 4)  # lattice units
    rows, cols = h.shape
    soup = _Soup()
    ex, ey, ez = np.eye(3, dtype=np.int64)
    for r in range(rows):  # tops
        for c in range(cols):
            pts, tris = _quad_patch(c * m * ex + h[r, c] * ey + r * m * ez, ex, ez, m, m)
            soup.add(pts, _facing(tris, ex, ez, ey), ey)
    pts, tris = _quad_patch(np.zeros(3, np.int64), ex, ez, cols * m, rows * m)  # bottom
    soup.add(pts, _facing(tris, ex, ez, -ey), -ey)
    padded = np.zeros((rows + 2, cols + 2), np.int64)
    padded[1:-1, 1:-1] = h
    for r in range(rows + 2):  # walls between neighbours (and around): along X, then Z
        for c in range(cols + 2):
            for dr, dc in ((0, 1), (1, 0)):
                if r + dr >= rows + 2 or c + dc >= cols + 2:
                    continue
                a, b = padded[r, c], padded[r + dr, c + dc]
                if a == b:
                    continue
                lo, hi = min(a, b), max(a, b)
                if dc:  # a wall at x = c m, from cell (r, c) to (r, c + 1)
                    origin, along, n = c * m * ex + lo * ey + (r - 1) * m * ez, ez, ex
                else:  # a wall at z = r m
                    origin, along, n = (c - 1) * m * ex + lo * ey + r * m * ez, ex, ez
                if a < b:  # the higher side is the far one: the wall faces back
                    n = -n
                pts, tris = _quad_patch(origin, along, ey, m, hi - lo)
                soup.add(pts, _facing(tris, along, ey, n), n)
    center = np.array([cols * m / 2, 0.0, rows * m / 2])
    for pts in soup.points:
        pts -= center
        pts *= cell / m
    return soup.mesh("cad-part" if not normals else "cad-part-flat", with_normals=normals)


# ------------------------------------------------------------------------------------ registry

# name -> (maker, what it tests); `make(name)` builds the default of each
MODELS = {
    "bevelled-box": (bevelled_box, "45/35-degree chamfer creases, flat-shaded"),
    "star-prism": (star_prism, "extruded star: sharp convex and concave corners"),
    "l-bracket": (l_bracket, "extruded L: 90-degree corners"),
    "gear": (gear, "extruded gear: smooth arcs and bore, hard flank corners"),
    "faceted-sphere": (faceted_sphere, "low-poly sphere of 80 flat-shaded facets (18-22 deg)"),
    "faceted-d20": (partial(faceted_sphere, 1, 32), "20 flat-shaded facets (42 deg creases)"),
    "faceted-rock": (faceted_rock, "dense flat-shaded rock: every triangle a facet"),
    "cad-part": (cad_part, "90-degree creases, no normals in the file (crease angle)"),
}


def make(name: str) -> Mesh:
    """The model `name` of `MODELS` with its default parameters."""
    if name not in MODELS:
        raise ValueError(f"no model {name!r} (one of {', '.join(MODELS)})")
    return MODELS[name][0]()
