"""A ground plane to catch a scene's shadows (`tessera render --ground`, `make demo`, the
`shadows` benchmark): a flat square of GROUND_CELLS^2 quads, built once into the user's cache
folder, placed under a scene's lowest point."""

from __future__ import annotations

import numpy as np

from assets.cache import cached_tess
from preprocess.mesh import Mesh

GROUND_CELLS = 32  # quads a side
GROUND_SCALE = 8.0  # the plane's side, in radii of the scene's bounding sphere


def ground_mesh(cells: int = GROUND_CELLS) -> Mesh:
    """A square of side 1 at y = 0, facing +Y, centred on the origin."""
    from preprocess.load import mesh_from_arrays

    g = np.linspace(-0.5, 0.5, cells + 1)
    x, z = np.meshgrid(g, g)
    pos = np.stack([x.ravel(), np.zeros(x.size), z.ravel()], 1).astype(np.float32)
    idx = np.arange(pos.shape[0]).reshape(cells + 1, cells + 1)
    a, b = idx[:-1, :-1].ravel(), idx[:-1, 1:].ravel()
    c, d = idx[1:, :-1].ravel(), idx[1:, 1:].ravel()
    faces = np.concatenate([np.stack([a, c, b], 1), np.stack([b, c, d], 1)])
    return mesh_from_arrays(pos, faces)


def ground_tess() -> str:
    """The ground's .tess, built once into the cache folder (`assets.cache.cached_tess`)."""
    return cached_tess(f"ground-{GROUND_CELLS}.tess", ground_mesh)


def ground_transform(scene, center: np.ndarray, radius: float) -> np.ndarray:
    """(4, 4) float32: the ground at the lowest point of every instance's bounding box (the
    root node's box under its transform), centred under `center`, GROUND_SCALE radii a side.
    `scene`: a renderer.scene.Scene."""
    lowest = np.inf
    rows = scene.store.rows  # (n, 3, 4): the second row gives y
    for a in np.unique(scene.instance_asset):
        node = scene.assets[a].nodes[0]
        lo, hi = node["box_min"].astype(np.float64), node["box_max"].astype(np.float64)
        corners = np.array([[(lo, hi)[(k >> i) & 1][i] for i in range(3)] for k in range(8)])
        y = rows[scene.instance_asset == a, 1].astype(np.float64)  # (k, 4)
        lowest = min(lowest, float((y[:, :3] @ corners.T + y[:, 3:]).min()))
    side = GROUND_SCALE * radius
    world = np.diag([side, 1.0, side, 1.0]).astype(np.float32)
    world[:3, 3] = center[0], lowest, center[2]
    return world
