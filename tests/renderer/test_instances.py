"""Instances in bulk (issue 34): `Renderer.add_instances` / `set_transforms` on arrays, the
48-byte instance slots sorted by asset on the GPU (renderer/instances.py), their indices mapped
back to the caller's, the moved table (velocity and the scatter pass), and scene files that name
a `.npy` of transforms. Real WGSL on the adapter present."""

from __future__ import annotations

import json

import numpy as np
import pytest

from renderer.apps.scene_file import SceneFileError, load_scene_file
from renderer.camera import Camera
from renderer.instances import max_scales, world_spheres
from renderer.limits import INSTANCE_BLOCK, INSTANCE_SLOT_BYTES
from renderer.options import RenderOptions
from renderer.oracles.cpu_cull import cull
from renderer.renderer import Renderer
from renderer.scene import SceneError

pytestmark = pytest.mark.gpu

W = H = 96
SIDE = 6  # a 6 x 6 grid of spheres (radius 1), 3 apart, seen from above


def field(seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """(36, 3, 4) rows: spheres on a grid, each rotated and scaled a little; (36,) asset index,
    the two assets interleaved so that GPU slots (sorted by asset) differ from indices."""
    rng = np.random.default_rng(seed)
    k = SIDE * SIDE
    rows = np.zeros((k, 3, 4), np.float32)
    for i in range(k):
        q, _ = np.linalg.qr(rng.normal(size=(3, 3)))
        rows[i, :, :3] = q * np.sign(np.linalg.det(q)) * rng.uniform(0.6, 1.2)
    g = np.arange(k)
    rows[:, 0, 3] = (g % SIDE - (SIDE - 1) / 2) * 3.0
    rows[:, 2, 3] = (g // SIDE - (SIDE - 1) / 2) * 3.0
    return rows, (g % 3 == 1).astype(np.int64)


def top_camera() -> Camera:
    return Camera(eye=(0.0, 24.0, 0.01), target=(0.0, 0.0, 0.0), near=0.1)


def centre_pixels(rows: np.ndarray, cam: Camera) -> np.ndarray:
    """(k, 2) float (x, y) image position of each instance's origin."""
    _, _, vp = cam.matrices(W, H)
    p = np.concatenate([rows[:, :, 3], np.ones((len(rows), 1))], axis=1) @ vp.T.astype(np.float64)
    ndc = p[:, :2] / p[:, 3:]
    return np.stack([(ndc[:, 0] + 1) / 2 * W, (1 - ndc[:, 1]) / 2 * H], axis=1)


def one_by_one(sphere_tess, rows, asset) -> Renderer:
    r = Renderer(W, H)
    ids = [r.load(sphere_tess), r.load(sphere_tess)]
    for m, a in zip(rows, asset, strict=True):
        r.add_instance(ids[a], np.vstack([m, [0, 0, 0, 1]]))
    return r


def test_bulk_instances_draw_and_name_as_one_by_one(sphere_tess) -> None:
    rows, asset = field()
    cam = top_camera()
    single = one_by_one(sphere_tess, rows, asset).render(cam)
    # the same instances in two calls, (k, 3, 4) arrays, in the same index order
    r = Renderer(W, H)
    ids = [r.load(sphere_tess), r.load(sphere_tess)]
    order = np.argsort(asset, kind="stable")  # every asset-0 instance, then every asset-1
    first = r.add_instances(ids[0], rows[asset == 0])
    second = r.add_instances(ids[1], np.concatenate(  # and (k, 4, 4) for the second asset
        [rows[asset == 1], np.tile([[[0, 0, 0, 1]]], (int(asset.sum()), 1, 1))], axis=1))
    assert list(first) + list(second) == list(range(len(rows)))
    bulk = r.render(cam)
    assert np.array_equal(bulk.color, single.color)
    # each instance's own pixel names it, in each renderer's own indices (slots are sorted by
    # asset on the GPU: a missing mapping back names the wrong instance)
    px = centre_pixels(rows, cam).astype(int)
    assert (single.instance[px[:, 1], px[:, 0]] == np.arange(len(rows))).all()
    inverse = np.empty_like(order)
    inverse[order] = np.arange(len(order))
    assert (bulk.instance[px[:, 1], px[:, 0]] == inverse).all()
    visible = r.read_visible()
    assert set(np.unique(np.concatenate([visible["sw"][:, 0], visible["hw"][:, 0]]))) == set(
        range(len(rows)))
    # 48 bytes an instance: 24 + 12 instances, each asset's run padded to a block of slots,
    # then each asset's aggregate proxies (one node each: its block) padded alike, then one
    # asset index a block
    lay = r.frame.instances
    assert lay.instance_slots == 2 * INSTANCE_BLOCK
    slots = 4 * INSTANCE_BLOCK
    assert lay.slots == slots and r.frame.aggregates.count == 2
    assert r.frame.resources.buffers["instances"].size == slots * INSTANCE_SLOT_BYTES + 16


@pytest.mark.parametrize("index, bad, why", [
    (5, lambda m: m.__setitem__((1, 1), np.nan), "must be finite"),
    (7, lambda m: m.__setitem__((3, 0), 0.5), "must be affine"),
    (2, lambda m: m.__setitem__((slice(0, 3), 0), 0.0), "must not be singular"),
])
def test_bad_transforms_are_one_line_and_nothing_is_added(sphere_tess, index, bad, why) -> None:
    r = Renderer(W, H)
    a = r.load(sphere_tess)
    worlds = np.repeat(np.eye(4)[None], 10, axis=0)
    bad(worlds[index])
    with pytest.raises(SceneError, match=f"transform {index} {why}"):
        r.add_instances(a, worlds)
    with pytest.raises(SceneError, match="shape"):
        r.add_instances(a, np.zeros((3, 4, 3)))
    with pytest.raises(SceneError, match="no asset 1"):
        r.add_instances(1, np.eye(4))
    with pytest.raises(ValueError, match="MAX_WORLD"):
        r.add_instances(a, [np.eye(4), np.diag([1e18, 1e18, 1e18, 1.0])])
    assert r.scene.instance_count == 0
    r.add_instances(a, worlds[:1])
    with pytest.raises(SceneError, match=f"an instance transform {why}"):
        r.set_transforms([0], worlds[index])
    with pytest.raises(SceneError, match="no instance 3"):
        r.set_transforms([0, 3], np.eye(4))
    with pytest.raises(SceneError, match="2 instances to move but 3 transforms"):
        r.set_transforms([0, 0], np.repeat(np.eye(4)[None], 3, axis=0))
    assert not r.scene.moved


def test_set_transforms_moves_many_in_place_with_velocity(sphere_tess) -> None:
    rows, asset = field(1)
    cam = top_camera()
    r = one_by_one(sphere_tess, rows, asset)
    r.render(cam)
    generation = r.frame.resources.generation
    moved = np.array([0, 4, 5, 17, 30])  # both assets, runs and singles
    after = rows[moved].copy()
    after[:, 0, 3] += 0.4  # along +x, about 1.4 pixels on screen
    r.set_transforms(moved, after)
    res = r.render(cam)
    assert r.frame.resources.generation == generation  # no re-upload, no new bind group
    new_rows = rows.copy()
    new_rows[moved] = after
    expect = one_by_one(sphere_tess, new_rows, asset).render(cam)
    assert np.array_equal(res.color, expect.color)
    on_moved = np.isin(res.instance, moved)
    speed = np.linalg.norm(res.velocity, axis=2)
    assert (speed[~on_moved] == 0).all()
    # the motion of the moved instances' centres on screen; their surfaces, 1 unit nearer the
    # camera than the centres (of 24), move up to 1 / 23 more: 10% covers it
    shift = (centre_pixels(after, cam) - centre_pixels(rows[moved], cam)).mean(axis=0)
    assert abs(shift[0]) > 1 and abs(shift[1]) < 0.01
    assert np.allclose(res.velocity[on_moved], shift, rtol=0.1, atol=0.02)
    again = r.render(cam)  # nothing moved since: the moved table is emptied
    assert not again.velocity.any()


def test_scene_file_names_a_npy_of_transforms(sphere_tess, tmp_path) -> None:
    rows, _ = field(2)
    np.save(tmp_path / "balls.npy", rows)
    scene = tmp_path / "scene.json"

    def write(entry) -> None:
        scene.write_text(json.dumps({"assets": {"ball": sphere_tess},
                                     "instances": [{"asset": "ball", **entry}]}))

    write({"transforms": "balls.npy"})
    spec = load_scene_file(scene)
    r = Renderer(W, H)
    spec.apply(r, {"ball": sphere_tess})
    assert r.scene.instance_count == len(rows)
    assert np.array_equal(r.scene.store.rows, rows)
    bad = np.repeat(np.eye(4)[None], 5, axis=0)
    bad[3, 0, 0] = np.inf
    np.save(tmp_path / "bad.npy", bad)
    np.save(tmp_path / "flat.npy", np.zeros((4, 16)))
    np.savez(tmp_path / "arch.npz", rows)
    (tmp_path / "text.npy").write_text("not an array")
    for entry, message in (
            ({"transforms": "missing.npy"}, "instances\\[0\\].transforms: .*missing.npy: no such"),
            ({"transforms": "flat.npy"}, r"flat.npy holds float64 of shape \(4, 16\)"),
            ({"transforms": "arch.npz"}, "arch.npz is not a .npy array"),
            ({"transforms": "text.npy"}, "text.npy is not a readable .npy array"),
            ({"transforms": "balls.npy", "scale": 2}, "unknown key 'scale'")):
        write(entry)
        with pytest.raises(SceneFileError, match=message):
            load_scene_file(scene)
    # the values are checked as the renderer takes them, the entry named
    write({"transforms": "bad.npy"})
    spec = load_scene_file(scene)
    with pytest.raises(SceneFileError, match=r"scene.json: instances\[0\].transforms: an "
                                             r"instance transform 3 must be finite"):
        spec.apply(Renderer(W, H), {"ball": sphere_tess})


def test_world_spheres_and_scales_match_float64() -> None:
    # the bounds every check and the shadow map use, against the plain float64 formula; one
    # asset index for all rows means that asset (not the first), as for a single instance
    rows, _ = field(3)
    local = np.array([[0.1, 0.2, 0.3, 1.5], [1.0, -2.0, 0.5, 0.25]])
    assets = np.arange(len(rows)) % 2
    got, reach = world_spheres(rows, assets, local)
    r64 = rows.astype(np.float64)
    centre = np.einsum("kij,kj->ki", r64[:, :, :3], local[assets, :3]) + r64[:, :, 3]
    scale = np.linalg.norm(r64[:, :, :3], axis=1).max(axis=1)
    np.testing.assert_allclose(got[:, :3], centre, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(got[:, 3], local[assets, 3] * scale, rtol=1e-6)
    np.testing.assert_allclose(max_scales(rows), scale, rtol=1e-6)
    assert reach == pytest.approx((np.abs(centre).max(axis=1) + got[:, 3]).max())
    one, _ = world_spheres(rows[:1], [1], local)
    assert np.array_equal(one, world_spheres(rows[:1], np.array([1]), local)[0])
    np.testing.assert_allclose(one[0, :3], r64[0, :, :3] @ local[1, :3] + r64[0, :, 3])


def big_field(n: int, seed: int) -> np.ndarray:
    """(n, 3, 4) rows: spheres scattered over a 200 x 200 square, rotated and scaled."""
    rng = np.random.default_rng(seed)
    rows = np.zeros((n, 3, 4), np.float32)
    q, _ = np.linalg.qr(rng.normal(size=(n, 3, 3)))
    rows[:, :, :3] = q * rng.uniform(0.5, 1.5, (n, 1, 1))
    rows[:, [0, 2], 3] = rng.uniform(-100, 100, (n, 2))
    return rows


def test_blocks_out_of_view_skip_their_instances_and_grow_when_they_move(sphere_tess) -> None:
    # 3,000 spheres of two assets seen from above one corner: most blocks of 64 slots are
    # out of view; the instances the GPU finds in view are the CPU twin's (renderer/oracles:
    # the root box against the frustum, float64, ties within 1e-4 either way); no aggregate
    # proxies (test_aggregates.py), so that every instance in view is drawn by itself
    rows = big_field(3000, 4)
    r = Renderer(W, H, options=RenderOptions(occlusion=False, aggregates=False))
    ids = [r.load(sphere_tess), r.load(sphere_tess)]
    r.add_instances(ids[0], rows[:1800])
    r.add_instances(ids[1], rows[1800:])
    cam = Camera(eye=(-85.0, 20.0, -85.0), target=(-85.0, 0.0, -84.9), near=0.1)
    res = r.render(cam)
    c = res.stats.counters
    blocks = r.frame.instances.instance_slots // INSTANCE_BLOCK
    assert blocks == 29 + 19  # 1,800 and 1,200 instances in blocks of 64
    assert 0 < c["blocks_visible"] < blocks / 3
    assert c["instances_tested"] == 3000
    twin = cull(r.scene, cam, W, H, tau=r.options.tau)
    sure = twin.instance_visible & (twin.instance_margin > 1e-4)
    maybe = twin.instance_visible | (twin.instance_margin < 1e-4)
    assert sure.sum() <= c["instances_visible"] <= maybe.sum() and sure.sum() > 10
    # an instance moved from out of view into it: its block's box grows with it
    far = int(np.argmax(np.linalg.norm(rows[:, [0, 2], 3] - [-85, -85], axis=1)))
    moved = rows[far].copy()
    moved[:, 3] = [-85.0, 0.0, -85.0]  # under the camera
    listed = np.frombuffer(r.device.queue.read_buffer(r.frame.resources.buffers["blocks"]),
                           np.uint32)[: c["blocks_visible"]]
    assert r.frame.instances.slot[far] // INSTANCE_BLOCK not in listed  # its block out of view
    r.set_transforms([far], moved)
    after = r.render(cam)
    assert (after.instance == far).sum() > 20
    fresh = Renderer(W, H, options=RenderOptions(occlusion=False, aggregates=False))
    ids = [fresh.load(sphere_tess), fresh.load(sphere_tess)]
    placed = rows.copy()
    placed[far] = moved
    fresh.add_instances(ids[0], placed[:1800])
    fresh.add_instances(ids[1], placed[1800:])
    assert np.array_equal(after.color, fresh.render(cam).color)


def test_the_lists_grow_to_hold_every_instance_root(sphere_tess) -> None:
    # 3,000 far spheres, each drawing its root cluster, against lists sized for 1,000: the
    # queue and the visible list grow with the instances (they overflowed, dropping instances,
    # at a million with the default sizes)
    r = Renderer(W, H, options=RenderOptions(queue_capacity=1000, visible_capacity=2000))
    r.add_instances(r.load(sphere_tess), big_field(3000, 5))
    res = r.render(Camera.framing(*r.bounds()))
    assert res.stats.overflow == 0
    assert r.frame.queue_capacity >= 3000 and r.frame.visible_capacity >= 6000
    assert res.stats.counters["instances_visible"] == 3000
    assert res.stats.clusters >= 3000  # a root cluster or more each, none dropped


def test_dispatches_past_max_dispatch_draw_every_block_once(sphere_tess, monkeypatch) -> None:
    # WebGPU dispatches at most 65,535 workgroups a dimension: past that a pass dispatches in
    # 2-D, rows of MAX_DISPATCH, and the last row's workgroups past the work must return (the
    # instance cull's once read earlier frames' block entries and drew those blocks again; at 16
    # million instances, 72,000 blocks in view, most likely what left the H100's picture nearly
    # empty). With MAX_DISPATCH lowered to 7 the instance cull (16 blocks: 3 rows), the scatter
    # (8 workgroups) and every other pass past 7 workgroups go 2-D here: the same picture and
    # the same counts as one row
    import weakref

    import renderer.passes.instance_cull as ic
    import renderer.passes.instance_scatter as sc
    from renderer import gpu, limits

    def frame() -> tuple:
        # every block in view and listed (no proxy); 512 of the 1,024 moved (the scatter)
        r = Renderer(W, H, options=RenderOptions(shadows=True, aggregates=False))
        a = r.load(sphere_tess)
        r.add_grid(a, 1024, spacing=2.5)
        cam = Camera.framing(*r.bounds(), direction=(0.3, 1.0, 0.2))
        r.render(cam)
        r.set_transforms(np.arange(0, 1024, 2), r.scene.store.rows[::2] + 0.01)
        res = r.render(cam)
        c = res.stats.counters
        return (res.depth, res.instance, c["instances_visible"], res.stats.triangles,
                c["proxies_drawn"], c["proxied_instances"])

    one = frame()
    for mod in (ic, sc):
        monkeypatch.setattr(mod, "MAX_DISPATCH", 7)
    monkeypatch.setitem(limits.WGSL_CONSTANTS, "MAX_DISPATCH", 7)
    # the pipelines built with the constant as it was stay on the shared device: build afresh
    monkeypatch.setattr(gpu, "_BUILT", weakref.WeakKeyDictionary())
    rows = frame()
    assert np.array_equal(one[0], rows[0]) and np.array_equal(one[1], rows[1])
    assert one[2:] == rows[2:] and one[2] > 0
