"""Polygons and corners as trimesh builds its faces, copied so that the fast readers give its
triangles in its order: polygons of one size (`triangulate_uniform`: ``Trimesh.faces``), polygons
line by line (`triangulate_lines`: its OBJ fallback) and ragged polygons (`triangulate_mixed`:
``trimesh.geometry.triangulate_quads``), triangle strips (`strip_triangles`: a PLY's and a
glTF primitive's, wound as OpenGL draws them), and faces unmerged into one vertex per distinct
(v, vt, vn) index tuple (`unmerge`: ``trimesh.visual.texture.unmerge_faces``).

The order decides the wedge order of the `Mesh`, so trimesh's is copied, not improved.
"""

from __future__ import annotations

import numpy as np


def triangulate_uniform(faces: np.ndarray) -> np.ndarray:
    """(n, k) polygons to triangles as ``Trimesh.faces`` does (trimesh.geometry.triangulate_quads).

    Quads: all first halves (0 1 2), then all second halves (2 3 0); larger polygons: a fan each.
    """
    k = faces.shape[1]
    if k == 3:
        return faces
    if k == 4:
        return np.vstack((faces[:, [0, 1, 2]], faces[:, [2, 3, 0]]))
    fan = np.stack([np.zeros(k - 2, np.int64), np.arange(1, k - 1), np.arange(2, k)], axis=1)
    return faces[:, fan].reshape(-1, 3)


def triangulate_lines(sizes: np.ndarray) -> np.ndarray:
    """Corner offsets of the triangles of polygons given line by line (trimesh's OBJ fallback).

    Per line of ``sizes[i]`` corners: a triangle as is, a quad as (0 1 2)(2 3 0), a larger polygon
    as a fan (0 i+1 i+2). Returns (t, 3) int64 indices into the flat corner list.
    """
    sizes = sizes.astype(np.int64)
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    tris = sizes - 2
    line = np.repeat(np.arange(sizes.size), tris)
    j = np.arange(line.size) - np.repeat(np.cumsum(tris) - tris, tris)  # triangle within line
    corner = np.stack([np.zeros_like(j), j + 1, j + 2], axis=1)
    second_of_quad = (sizes[line] == 4) & (j == 1)
    corner[second_of_quad] = [2, 3, 0]
    return starts[line][:, None] + corner


def triangulate_mixed(flat: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Ragged polygons as trimesh.geometry.triangulate_quads orders them.

    All triangles first, then the quads' first halves, their second halves, then a fan per larger
    polygon, each in file order.
    """
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    tri_s = starts[counts == 3]
    quad_s = starts[counts == 4]
    parts = [flat[tri_s[:, None] + np.arange(3)]]
    quads = flat[quad_s[:, None] + np.arange(4)]
    parts += [quads[:, [0, 1, 2]], quads[:, [2, 3, 0]]]
    big = np.flatnonzero(counts > 4)
    if big.size:
        sizes = counts[big]
        fans = triangulate_lines(sizes)  # no quads here: plain fans
        base = np.repeat(starts[big] - (np.cumsum(sizes) - sizes), sizes - 2)
        parts.append(flat[fans + base[:, None]])
    return np.concatenate(parts).astype(np.int64)


def strip_triangles(flat: np.ndarray, row: np.ndarray) -> np.ndarray:
    """Triangle strips to (t, 3) int64 triangles.

    ``flat`` (k,) the strips' vertex ids, -1 ending a strip; ``row`` (k,) the file row of each
    (a row ends a strip too). Strip v0 v1 v2 v3 v4 ... gives (v0 v1 v2) (v2 v1 v3) (v2 v3 v4):
    every other triangle reversed, so that all face the same way (OpenGL's rule); the count
    restarts with each strip. Triangles with a repeated vertex (strips joined by repeating one)
    keep their place in the count and are dropped.
    """
    flat = flat.astype(np.int64)
    n = flat.size
    if n < 3:
        return np.zeros((0, 3), np.int64)
    stop = flat == -1
    begins = np.ones(n, dtype=bool)
    begins[1:] = stop[:-1] | (row[1:] != row[:-1])
    strip_start = np.maximum.accumulate(np.where(begins, np.arange(n), 0))
    i = np.arange(n - 2)
    i = i[~stop[i] & ~stop[i + 1] & ~stop[i + 2] & (strip_start[i + 2] == strip_start[i])]
    a, b, c = flat[i], flat[i + 1], flat[i + 2]
    odd = (i - strip_start[i]) % 2 == 1
    tris = np.stack([np.where(odd, b, a), np.where(odd, a, b), c], axis=1)
    return tris[(a != b) & (b != c) & (a != c)]


def _hashable_rows(stack: np.ndarray) -> np.ndarray:
    """trimesh.grouping.hashable_rows for (n, <=4) int64 rows, copied so that its order is ours."""
    precision = int(np.floor(64 / stack.shape[1]))
    d_min, d_max = stack.min(), stack.max()
    threshold = (2 ** (precision - 1)) - 1
    if d_max < threshold and d_min > -threshold:
        hashable = np.zeros(len(stack), dtype=np.uint64)
        bitbang = (stack.T + (threshold + 1)).astype(np.uint64)
        for offset, column in enumerate(bitbang):
            np.bitwise_xor(hashable, column << (offset * precision), out=hashable)
        return hashable
    dtype = np.dtype((np.void, stack.dtype.itemsize * stack.shape[1]))
    return np.ascontiguousarray(stack).view(dtype).reshape(-1)


def unmerge(faces: np.ndarray, *args: np.ndarray) -> list[np.ndarray]:
    """trimesh.visual.texture.unmerge_faces (maintain_faces=False), step for step.

    One output vertex per distinct (v, vt[, vn]) index tuple, ordered by v index with trimesh's
    tie order (its row hash sorted by ``np.unique``, then an unstable ``argsort``): the order
    decides the wedge order of the `Mesh`, so it is copied, not improved.
    """
    stack = np.column_stack([faces.reshape(-1)] + [a.reshape(-1) for a in args])
    rows = _hashable_rows(stack)
    unique, inverse = np.unique(rows, return_index=True, return_inverse=True)[1:]
    pairs = stack[unique]
    order = pairs[:, 0].argsort()
    pairs = pairs[order]
    remap = np.zeros(len(order), dtype=np.int64)
    remap[order] = np.arange(len(order))
    new_faces = remap[inverse].reshape((-1, faces.shape[1]))
    return [new_faces, *pairs.T]
