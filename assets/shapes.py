"""Exact procedural shapes: the geodesic spheres of the reference figures.

`geodesic_sphere(n)` is the unit icosahedron with each face subdivided n x n (20 n^2 triangles,
10 n^2 + 2 vertices), every point pushed onto the unit sphere. A point on an edge or corner shared
by several faces is computed from the same operands in the same order whichever face generates it
(the corners of a face are taken in increasing global id), so the copies are bit-identical and weld
exactly. The reference figures in ``shared/assets/README.md`` use n = 224 (1,003,520 triangles) and
n = 448 (4,014,080 triangles).
"""

from __future__ import annotations

import numpy as np

from preprocess.io.weld import weld_positions
from preprocess.load import mesh_from_arrays
from preprocess.mesh import Mesh

__all__ = ["geodesic_sphere", "geodesic_sphere_arrays", "grid_square", "icosahedron"]


def grid_square(quads: int) -> tuple[np.ndarray, np.ndarray]:
    """The square [-1, 1]^2 x {0}, facing +z, `quads` x `quads` quads: ((quads + 1)^2, 3)
    float64 positions, row by row along +x then +y, and (2 quads^2, 3) int64 counter-clockwise
    triangles, every quad's first half then every quad's second."""
    xs = np.linspace(-1.0, 1.0, quads + 1)
    x, y = np.meshgrid(xs, xs)
    pos = np.stack([x.ravel(), y.ravel(), np.zeros(x.size)], axis=1)
    idx = np.arange((quads + 1) ** 2).reshape(quads + 1, quads + 1)
    a, b = idx[:-1, :-1].ravel(), idx[:-1, 1:].ravel()
    c, d = idx[1:, 1:].ravel(), idx[1:, :-1].ravel()
    return pos, np.concatenate([np.stack([a, b, c], 1), np.stack([a, c, d], 1)])


def icosahedron() -> tuple[np.ndarray, np.ndarray]:
    """The unit icosahedron: vertices (12, 3) float64 on the unit sphere, faces (20, 3) int64,
    counter-clockwise seen from outside."""
    t = (1.0 + 5.0**0.5) / 2.0
    v = np.array(
        [
            [-1, t, 0], [1, t, 0], [-1, -t, 0], [1, -t, 0],
            [0, -1, t], [0, 1, t], [0, -1, -t], [0, 1, -t],
            [t, 0, -1], [t, 0, 1], [-t, 0, -1], [-t, 0, 1],
        ],
        dtype=np.float64,
    )  # fmt: skip
    v /= np.sqrt((v * v).sum(axis=1))[:, None]
    f = np.array(
        [
            [0, 11, 5], [0, 5, 1], [0, 1, 7], [0, 7, 10], [0, 10, 11],
            [1, 5, 9], [5, 11, 4], [11, 10, 2], [10, 7, 6], [7, 1, 8],
            [3, 9, 4], [3, 4, 2], [3, 2, 6], [3, 6, 8], [3, 8, 9],
            [4, 9, 5], [2, 4, 11], [6, 2, 10], [8, 6, 7], [9, 8, 1],
        ],
        dtype=np.int64,
    )  # fmt: skip
    return v, f


def geodesic_sphere_arrays(n: int) -> tuple[np.ndarray, np.ndarray]:
    """The welded arrays of `geodesic_sphere`: positions (10 n^2 + 2, 3) float32 on the unit sphere
    and triangles (20 n^2, 3) int64 indexing them, counter-clockwise seen from outside."""
    if n < 1:
        raise ValueError(f"geodesic_sphere: n must be >= 1, got {n}")
    V, F = icosahedron()
    # Barycentric grid of one face: weights (n - i - j, i, j) on corners (a, b, c), i + j <= n.
    ii, jj = np.meshgrid(np.arange(n + 1), np.arange(n + 1), indexing="ij")
    inside = ii + jj <= n
    gi, gj = ii[inside], jj[inside]  # (g,) with g = (n + 1)(n + 2) / 2
    g = gi.size
    local = np.full((n + 1, n + 1), -1, dtype=np.int64)
    local[gi, gj] = np.arange(g)
    # Triangles of the grid: up (i,j)(i+1,j)(i,j+1) and down (i+1,j)(i+1,j+1)(i,j+1).
    ui, uj = np.nonzero(ii + jj <= n - 1)
    up = np.stack([local[ui, uj], local[ui + 1, uj], local[ui, uj + 1]], axis=1)
    di, dj = np.nonzero(ii + jj <= n - 2)
    down = np.stack([local[di + 1, dj], local[di + 1, dj + 1], local[di, dj + 1]], axis=1)
    grid_tris = np.concatenate([up, down])  # (n^2, 3)

    weights = np.stack([n - gi - gj, gi, gj], axis=1).astype(np.float64)  # (g, 3)
    points = np.empty((20, g, 3), dtype=np.float64)
    for f in range(20):
        corners = F[f]
        order = np.argsort(corners)  # add the corners in increasing global id
        acc = np.zeros((g, 3), dtype=np.float64)
        for k in order:
            acc = acc + weights[:, k, None] * V[corners[k]][None, :]
        points[f] = acc
    points = points.reshape(-1, 3)
    x, y, z = points[:, 0], points[:, 1], points[:, 2]
    length = np.sqrt(x * x + y * y + z * z)
    points /= length[:, None]
    faces = (grid_tris[None, :, :] + (np.arange(20) * g)[:, None, None]).reshape(-1, 3)
    positions, inverse = weld_positions(points)
    return positions, inverse[faces]


def geodesic_sphere(n: int) -> Mesh:
    """The unit geodesic sphere: an icosahedron subdivided n x n per face, 20 n^2 triangles and
    10 n^2 + 2 welded positions, smooth normals (one wedge per position), no uvs."""
    positions, faces = geodesic_sphere_arrays(n)
    return mesh_from_arrays(positions, faces, name=f"geodesic-sphere-{n}")
