"""The forest: about a million instances of the built-in assets (rocks of a few scales and
rotations, spheres stretched upright as "trees") standing on the built-in terrain, written as a
scene file and a transforms `.npy` per asset beside it (`preprocess --builtin forest -o
forest-scene.json`; `tessera view forest-scene.json` flies through it). The instances' placing
(`scatter`) is also the `instances` benchmark's "terrain" layout.

Everything is vectorized numpy: a million placements take a fraction of a second (the
terrain's heights under them are its triangles', `assets.rock.terrain_surface`). The assets are
built once into the cache folder (`assets.cache`), small so that the first run is quick.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from assets.cache import cached_tess
from assets.rock import terrain_surface
from preprocess.tess.atomic import write_atomically

FOREST_INSTANCES = 1_000_000  # the scene's default size
TERRAIN_RESOLUTION = 256  # the forest's terrain: 2 * 256^2 = 131,072 triangles
TERRAIN_TEXTURE = 1024  # texels a side of its base-colour texture
TERRAIN_SIZE = 2.0  # make_terrain's patch side (its own units)
SPACING = 4.0  # world units of terrain side per sqrt(instance): one instance per 16 square units
SINK = 0.15  # how far an instance sits into the ground, in its own height: none floats on a slope


@dataclass(frozen=True)
class Kind:
    """One sort of instance in the forest."""

    asset: str  # the built-in mesh (assets.BUILTIN)
    triangles: int  # its size
    share: float  # of the instances
    scale: tuple[float, float]  # uniform scale, drawn uniformly in this range
    stretch: float = 1.0  # extra scale along y (a sphere 2.5 tall is a poplar)
    tilt: float = 0.0  # largest tilt off the vertical, degrees


KINDS = {"rock": Kind("rock", 20_000, 0.4, (0.3, 1.4), tilt=25.0),
         "tree": Kind("sphere", 5_120, 0.6, (0.6, 1.2), stretch=2.5)}


def forest_assets(terrain_resolution: int = TERRAIN_RESOLUTION, texture: int = TERRAIN_TEXTURE,
                  kinds: dict[str, Kind] = KINDS) -> dict[str, str]:
    """name -> `.tess` path of the forest's assets ("terrain" and `kinds`), built once into the
    cache folder."""
    from assets import builtin_mesh
    from assets.rock import make_terrain

    paths = {"terrain": cached_tess(
        f"forest-terrain-{terrain_resolution}-{texture}.tess",
        lambda: make_terrain(terrain_resolution, texture=texture))}
    for name, k in kinds.items():
        paths[name] = cached_tess(f"{k.asset}-{k.triangles}.tess",
                                  lambda k=k: builtin_mesh(k.asset, k.triangles))
    return paths


def terrain_scale(count: int) -> float:
    """The terrain's uniform world scale for `count` instances: SPACING world units of side per
    square root of an instance."""
    return SPACING * math.sqrt(max(count, 1)) / TERRAIN_SIZE


def terrain_world(scale: float) -> np.ndarray:
    """(4, 4) float32: the terrain scaled uniformly about the origin."""
    return np.diag([scale, scale, scale, 1.0]).astype(np.float32)


def scatter(count: int, bounds: tuple, scale: float, *, seed: int = 7,
            terrain_resolution: int = TERRAIN_RESOLUTION, sizes: tuple[float, float] = (1, 1),
            stretch: float = 1.0, tilt: float = 0.0) -> np.ndarray:
    """(count, 3, 4) float32 object-to-world transforms (the top rows of 4 x 4s): instances of
    an asset whose box is `bounds` ((3,) low and high corners) scattered uniformly over the
    terrain scaled by `scale` (`terrain_world`), each turned about y at random, tilted up to
    `tilt` degrees, scaled by a number drawn in `sizes` (times `stretch` along y), its box's
    bottom centre on the terrain's surface there, SINK of its height into the ground.
    Deterministic for a seed."""
    rng = np.random.default_rng(seed)
    lo, hi = (np.asarray(b, np.float64) for b in bounds)
    half = 0.5 * TERRAIN_SIZE * scale * 0.98  # inside the border
    x, z = rng.uniform(-half, half, count), rng.uniform(-half, half, count)
    ground = scale * terrain_surface(x / scale, z / scale, terrain_resolution)
    yaw = rng.uniform(0.0, 2 * np.pi, count)
    lean = np.radians(tilt) * np.sqrt(rng.uniform(0.0, 1.0, count))
    s = rng.uniform(*sizes, count)
    cy, sy, cl, sl = np.cos(yaw), np.sin(yaw), np.cos(lean), np.sin(lean)
    # R = Ry(yaw) @ Rx(lean), then the scale diag(s, s * stretch, s)
    rot = np.zeros((count, 3, 3))
    rot[:, 0, 0], rot[:, 0, 1], rot[:, 0, 2] = cy, sy * sl, sy * cl
    rot[:, 1, 1], rot[:, 1, 2] = cl, -sl
    rot[:, 2, 0], rot[:, 2, 1], rot[:, 2, 2] = -sy, cy * sl, cy * cl
    m = rot * np.stack([s, s * stretch, s], axis=1)[:, None, :]
    # the box's bottom centre, object space, goes to (x, ground - sink, z)
    foot = np.array([(lo[0] + hi[0]) / 2, lo[1], (lo[2] + hi[2]) / 2])
    tall = (hi[1] - lo[1]) * s * stretch
    at = np.stack([x, ground - SINK * tall, z], axis=1)
    out = np.zeros((count, 3, 4), np.float32)
    out[:, :, :3] = m
    out[:, :, 3] = at - m @ foot
    return out


def forest_transforms(count: int, bounds: dict[str, tuple], *, seed: int = 7,
                      terrain_resolution: int = TERRAIN_RESOLUTION,
                      kinds: dict[str, Kind] = KINDS) -> dict[str, np.ndarray]:
    """name -> (k, 3, 4) float32 transforms of each of `kinds` (`bounds`: name -> its asset's
    box), `count` in all by their shares, on the terrain scaled by `terrain_scale(count)`."""
    scale = terrain_scale(count)
    out, left = {}, count
    names = list(kinds)
    for i, name in enumerate(names):
        k = kinds[name]
        n = left if i == len(names) - 1 else round(k.share * count)
        left -= n
        out[name] = scatter(n, bounds[name], scale, seed=seed + i,
                            terrain_resolution=terrain_resolution, sizes=k.scale,
                            stretch=k.stretch, tilt=k.tilt)
    return out


def forest_camera(count: int, terrain_resolution: int = TERRAIN_RESOLUTION) -> dict:
    """A scene file's camera: low over one corner of the forest, looking across it."""
    scale = terrain_scale(count)
    half = 0.5 * TERRAIN_SIZE * scale
    eye_xz = np.array([-0.4, 0.4]) * half
    ground = scale * float(terrain_surface(eye_xz[:1] / scale, eye_xz[1:] / scale,
                                           terrain_resolution)[0])
    eye = [float(eye_xz[0]), ground + 12.0 * SPACING, float(eye_xz[1])]
    target = [0.0, ground, 0.0]
    return {"eye": eye, "target": target, "fov": 60, "near": 0.05}


def write_forest(path: str | Path, count: int = FOREST_INSTANCES, *, seed: int = 7,
                 terrain_resolution: int = TERRAIN_RESOLUTION, texture: int = TERRAIN_TEXTURE,
                 kinds: dict[str, Kind] = KINDS) -> dict[str, np.ndarray]:
    """Write the forest: the scene file `path` (its assets in the cache folder, the terrain as
    one instance, each kind's instances as `{"asset": NAME, "transforms": FILE}` naming
    `<path stem>.<NAME>.npy` beside it, a camera) after the `.npy` files, each whole or not at
    all. Returns the transforms."""
    from preprocess.tess.reader import read_tess

    path = Path(path)
    if count < 1:
        raise ValueError(f"a forest needs at least 1 instance, not {count}")
    assets = forest_assets(terrain_resolution, texture, kinds)
    bounds = {}
    for name in kinds:
        with read_tess(assets[name]) as f:
            bounds[name] = (f.meta["bounds_min"], f.meta["bounds_max"])
    worlds = forest_transforms(count, bounds, seed=seed, terrain_resolution=terrain_resolution,
                               kinds=kinds)
    instances = [{"asset": "terrain", "scale": terrain_scale(count)}]
    for name, w in worlds.items():
        npy = path.with_name(f"{path.stem}.{name}.npy")
        write_atomically(npy, lambda f, w=w: np.save(f, w))
        instances.append({"asset": name, "transforms": npy.name})
    doc = {"assets": assets, "instances": instances,
           "camera": forest_camera(count, terrain_resolution)}
    text = json.dumps(doc, indent=1).encode()
    write_atomically(path, lambda f: f.write(text))
    return worlds
