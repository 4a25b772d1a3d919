"""The forest (`assets.forest`): its instances stand on the terrain's drawn surface (the heights
under them are the terrain mesh's own triangles', `assets.rock.terrain_surface`), the same seed
gives the same forest, and the scene it writes draws: the terrain under its rocks and trees,
placed in one call each (`Renderer.add_instances`)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from assets.forest import (
    SINK,
    Kind,
    forest_transforms,
    scatter,
    terrain_scale,
    terrain_world,
    write_forest,
)
from assets.rock import make_terrain, terrain_surface

BOX = (np.array([-1.0, -0.5, -2.0]), np.array([3.0, 1.5, 0.0]))  # off-centre, on purpose
# small assets and a small terrain: the tests' builds take a second
TINY = {"rock": Kind("rock", 600, 0.5, (0.5, 1.5), tilt=20.0),
        "tree": Kind("sphere", 80, 0.5, (0.8, 1.2), stretch=2.5)}
RESOLUTION = 16


def test_terrain_surface_is_the_meshs_own_triangles() -> None:
    mesh = make_terrain(RESOLUTION, texture=0)
    rng = np.random.default_rng(3)
    tris = mesh.positions[mesh.position_triangles[rng.integers(0, len(mesh.triangles), 500)]]
    points = (tris * rng.dirichlet([1, 1, 1], 500)[..., None]).sum(axis=1)  # on the triangles
    h = terrain_surface(points[:, 0], points[:, 2], RESOLUTION)
    # float32 positions interpolated in float64: a few ulps of heights ~0.3
    np.testing.assert_allclose(h, points[:, 1], atol=1e-6)


def test_instances_stand_on_the_terrain() -> None:
    scale = terrain_scale(2000)
    w = scatter(2000, BOX, scale, seed=5, terrain_resolution=RESOLUTION, sizes=(0.5, 2.0),
                stretch=2.0, tilt=30.0)
    assert w.shape == (2000, 3, 4) and w.dtype == np.float32
    lo, hi = BOX
    foot = np.array([(lo[0] + hi[0]) / 2, lo[1], (lo[2] + hi[2]) / 2, 1.0])
    placed = w.astype(np.float64) @ foot  # the box's bottom centre in the world
    ground = scale * terrain_surface(placed[:, 0] / scale, placed[:, 2] / scale, RESOLUTION)
    tall = (hi[1] - lo[1]) * np.linalg.norm(w[:, :, 1].astype(np.float64), axis=1)
    # SINK of its height into the ground, to float32's rounding of world coordinates ~100
    np.testing.assert_allclose(ground - placed[:, 1], SINK * tall, atol=1e-3)
    assert np.abs(placed[:, [0, 2]]).max() < 0.5 * 2.0 * scale  # on the patch
    scales = np.linalg.norm(w[:, :, :3].astype(np.float64), axis=1)
    assert 0.5 - 1e-5 <= scales[:, 0].min() and scales[:, 0].max() <= 2.0 + 1e-5
    np.testing.assert_allclose(scales[:, 1], 2.0 * scales[:, 0], rtol=1e-5)  # stretched in y
    upright = w[:, 1, 1] / scales[:, 1]  # cos of the tilt
    assert upright.min() >= np.cos(np.radians(30.0)) - 1e-5 and upright.max() > 0.99


def test_a_seed_gives_the_same_forest() -> None:
    bounds = {"rock": BOX, "tree": BOX}
    a = forest_transforms(1001, bounds, seed=11, terrain_resolution=RESOLUTION, kinds=TINY)
    b = forest_transforms(1001, bounds, seed=11, terrain_resolution=RESOLUTION, kinds=TINY)
    c = forest_transforms(1001, bounds, seed=12, terrain_resolution=RESOLUTION, kinds=TINY)
    assert sum(len(w) for w in a.values()) == 1001
    for name in a:
        assert np.array_equal(a[name], b[name])
        assert not np.array_equal(a[name], c[name])


@pytest.mark.gpu
def test_the_forest_scene_file_draws_its_instances_on_the_terrain(tmp_path, monkeypatch) -> None:
    from renderer import Renderer
    from renderer.apps.scene_file import load_scene_file
    from renderer.options import RenderOptions

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    scene = tmp_path / "forest-scene.json"
    worlds = write_forest(scene, 300, seed=3, terrain_resolution=RESOLUTION, texture=0,
                          kinds=TINY)
    doc = json.loads(scene.read_text())
    placed = {e["asset"]: e for e in doc["instances"]}
    for name, w in worlds.items():
        stored = np.load(tmp_path / placed[name]["transforms"])
        assert stored.shape == (len(w), 3, 4) and np.array_equal(stored, w)
    # the scene file as `tessera view` opens it: the terrain, then each kind in one call
    spec = load_scene_file(scene)
    r = Renderer(96, 64, options=RenderOptions(shadows=False))
    index = spec.apply(r, {name: str(path) for name, path in spec.assets.items()})
    assert r.scene.instance_count == 301
    terrain = np.flatnonzero(r.scene.instance_asset == index["terrain"])
    assert len(terrain) == 1
    np.testing.assert_array_equal(r.scene.instance_world[terrain[0]],
                                  terrain_world(terrain_scale(300)))
    res = r.render(spec.camera)
    seen = np.unique(res.instance[res.instance >= 0])
    kinds = r.scene.instance_asset[seen]
    # the terrain, and rocks and trees standing on it, in the camera's view
    assert {index["terrain"], index["rock"], index["tree"]} <= set(kinds.tolist())
    assert len(seen) > 10
