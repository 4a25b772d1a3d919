"""Aggregate proxies (renderer/aggregates.py, shaders/block_cull.wgsl): the k-d layout of the
instance slots, the proxy tree's honest errors measured against dense sampling, and on the GPU a
far field drawn by a few proxies whose picture keeps the instances' tone, every instance drawn
once, moved instances never lost."""

from __future__ import annotations

import numpy as np
import pytest

from renderer import aggregates
from renderer.camera import Camera
from renderer.instances import GpuInstances, as_matrices, kd_order
from renderer.limits import INSTANCE_BLOCK
from renderer.options import RenderOptions
from renderer.renderer import Renderer
from renderer.scene import proxy_box

W = H = 128


def scatter(n: int, seed: int, *, height: float = 2.0, slope: float = 0.0) -> np.ndarray:
    """(n, 4) spheres scattered over a 100 x 100 patch, radii 0.2..0.6, heights 0..`height`
    above a ground rising `slope` a unit of x (the k-d cells then span every height)."""
    rng = np.random.default_rng(seed)
    out = np.empty((n, 4))
    out[:, [0, 2]] = rng.uniform(-50, 50, (n, 2))
    out[:, 1] = rng.uniform(0, height, n) + slope * out[:, 0]
    out[:, 3] = rng.uniform(0.2, 0.6, n)
    return out


def test_kd_order_puts_neighbours_in_a_block() -> None:
    # a 40 x 40 grid (1,600 points, not a power of two): every block of 64 consecutive points
    # is a compact cell, at most 8 x 16 grid steps (a Morton curve's runs straddled its cells:
    # 43 x 25 at a million)
    i = np.arange(1600)
    pts = np.stack([i % 40, np.zeros(1600), i // 40], axis=1).astype(float)
    order, cells = kd_order(pts)
    assert np.array_equal(np.sort(order), i)
    # the blocks' cells tile the points' box: volumes (areas here) add up, each holds its own
    area = np.prod((cells[:, 1] - cells[:, 0])[:, [0, 2]], axis=1)
    assert area.sum() == pytest.approx(39 * 39) and len(cells) == 25
    own = pts[order].reshape(-1, INSTANCE_BLOCK, 3)
    assert ((own >= cells[:, None, 0]) & (own <= cells[:, None, 1])).all()
    blocks = pts[order].reshape(-1, INSTANCE_BLOCK, 3)
    ext = np.sort((blocks.max(axis=1) - blocks.min(axis=1))[:, [0, 2]], axis=1)
    assert (ext[:, 0] <= 7).all() and (ext[:, 1] <= 15).all()
    assert kd_order(pts[:1])[0].tolist() == [0] and len(kd_order(pts[:0])[0]) == 0


@pytest.mark.parametrize("seed, n, height, slope, inner",
                         [(1, 700, 2.0, 0.0, 1.0), (2, 1000, 30.0, 0.0, 1.0),
                          (3, 130, 0.0, 0.0, 1.0), (4, 900, 1.0, 0.6, 1.0),
                          (5, 800, 2.0, 0.0, 0.4), (6, 600, 0.0, 0.0, 0.0)])
def test_every_node_error_bounds_the_distance_both_ways(seed, n, height, slope, inner) -> None:
    # the proxy of a node (its box) and the instances it stands for, sampled densely: every
    # content point lies within the node's error of the box's surface, every point of the box's
    # surface within it of the content; errors and spheres nest. The content is a sphere
    # `inner` times the bounding sphere's radius at its centre (0: the centre alone), so that
    # each instance's gap (the farthest a point of its bounding sphere lies from its content)
    # is (1 - inner) r
    spheres = scatter(n, seed, height=height, slope=slope)
    spheres[:, 3] /= max(inner, 0.25)  # thinner content, larger spheres: the gap counts
    lay = GpuInstances.layout(np.zeros(n, np.int64), spheres[:, :3])
    bounds = lay.block_bounds(spheres)
    agg = aggregates.build_for_layout(lay, bounds, spheres, 4 * np.pi * spheres[:, 3] ** 2,
                                      (1 - inner) * spheres[:, 3])
    assert agg.level.max() >= 1 and (agg.parent >= 0).sum() == agg.count - 1
    rng = np.random.default_rng(seed)
    dirs = rng.normal(size=(96, 3))
    dirs /= np.linalg.norm(dirs, axis=1, keepdims=True)
    user = lay.user[: lay.instance_slots].reshape(-1, INSTANCE_BLOCK)
    for node in range(agg.count):
        lo, hi, err = agg.lo[node], agg.hi[node], agg.error[node]
        f = agg.first_block[node]
        size = 1
        top = node
        while agg.level[top] > 0:  # the blocks under it: first_block and its descendants' count
            top = agg.child[top][agg.child[top] >= 0][-1]
        size = agg.first_block[top] - f + 1
        inst = user[f : f + size].ravel()
        s = spheres[inst[inst >= 0]] * [1, 1, 1, inner]
        # content to box: points of each content sphere's surface (in the box's frame: a
        # block on a slope turns its box)
        frame = agg.axes[node]
        pts = (s[:, None, :3] + s[:, None, 3:] * dirs[None]).reshape(-1, 3) @ frame
        inside = np.minimum(pts - lo, hi - pts).min(axis=1)
        gap = np.maximum(np.maximum(lo - pts, pts - hi), 0)
        to_box = np.where(inside >= 0, inside, np.linalg.norm(gap, axis=1))
        assert (to_box <= err * (1 + 1e-9)).all(), (node, to_box.max(), err)
        # box to content: a 24 x 24 grid on each face against the spheres' surfaces
        t = (np.arange(24) + 0.5) / 24
        uu, vv = (x.ravel() for x in np.meshgrid(t, t, indexing="ij"))
        for ax in range(3):
            u, v = (ax + 1) % 3, (ax + 2) % 3
            for side in (lo[ax], hi[ax]):
                q = np.zeros((len(uu), 3))
                q[:, ax] = side
                q[:, u] = lo[u] + uu * (hi[u] - lo[u])
                q[:, v] = lo[v] + vv * (hi[v] - lo[v])
                q = q @ frame.T  # to the world
                d = np.abs(np.linalg.norm(q[:, None] - s[None, :, :3], axis=2) - s[None, :, 3])
                assert d.min(axis=1).max() <= err * (1 + 1e-9), (node, d.min(axis=1).max(), err)
        p = agg.parent[node]
        if p >= 0:
            assert agg.error[p] >= err
            gap = np.linalg.norm(agg.centre[p] - agg.centre[node]) + agg.radius[node]
            assert gap <= agg.radius[p] * (1 + 1e-12)


def test_each_asset_has_the_nodes_the_instance_buffer_is_sized_for() -> None:
    # assets of 57 and 400 blocks, and of 1, 70 and 1 blocks: each asset's tree stops at its
    # own root (an asset done sooner took a chain of one-child parents while the others went
    # on: 67 nodes where `node_count`, which sizes the instance buffer, said 66)
    rng = np.random.default_rng(5)
    for counts in ([64 * 57, 64 * 400], [1, 64 * 70, 5]):
        asset = np.concatenate([np.full(c, i) for i, c in enumerate(counts)])
        spheres = np.concatenate([rng.random((len(asset), 3)) * 100,
                                  np.full((len(asset), 1), 0.3)], axis=1)
        lay = GpuInstances.layout(asset, spheres[:, :3])
        agg = aggregates.build_for_layout(lay, lay.block_bounds(spheres), spheres,
                                          np.ones(len(asset)))
        assert np.bincount(agg.asset).tolist() == [
            aggregates.node_count(-(-c // INSTANCE_BLOCK)) for c in counts]
        assert (agg.parent < 0).sum() == len(counts)  # a root an asset


def test_blocks_measured_in_chunks_give_the_same_tree(monkeypatch) -> None:
    # `build` measures the blocks a chunk at a time (bounding its temporaries at a million
    # instances): every figure of the tree the same as measured at once, turned blocks included
    spheres = scatter(64 * 23 + 9, 4, height=1.0, slope=0.6)
    lay = GpuInstances.layout(np.zeros(len(spheres), np.int64), spheres[:, :3])
    bounds = lay.block_bounds(spheres)
    args = (lay, bounds, spheres, 4 * np.pi * spheres[:, 3] ** 2, 0.1 * spheres[:, 3])
    whole = aggregates.build_for_layout(*args)
    monkeypatch.setattr(aggregates, "CHUNK_BLOCKS", 5)
    chunked = aggregates.build_for_layout(*args)
    assert (whole.axes != np.eye(3)).any()  # the slope turned some blocks
    for name in ("lo", "hi", "error", "reach", "centre", "radius", "content", "axes"):
        assert np.array_equal(getattr(whole, name), getattr(chunked, name)), name


def test_the_proxy_box_is_a_unit_cube_of_one_cluster() -> None:
    box = proxy_box()
    assert box.meta["bounds_min"] == [0.0, 0.0, 0.0] and box.meta["bounds_max"] == [1.0, 1.0, 1.0]
    assert box.meta["input_triangles"] == 12 and box.meta["clusters"] == 1
    assert box.page_count == 1 and len(box.parts) == 1
    assert box.meta["surface_area"] == pytest.approx(6.0)


def test_an_assets_sphere_gap_bounds_its_surface_from_its_sphere(sphere_tess, monkeypatch) -> None:
    # the farthest a point of the bounding sphere (around the bounding box) lies from the
    # surface: the unit cube's circumsphere (radius sqrt(3)/2) is sqrt(3)/2 - 1/2 from a face
    # along its normal; the unit sphere's, sqrt(3) - 1 from the sphere. Bounded from above over
    # the root's triangles, within a cube cell, a sample spacing and the root's own error
    box = proxy_box()
    assert np.sqrt(3) / 2 - 0.5 <= box.sphere_gap <= 1.25 * (np.sqrt(3) / 2 - 0.5)
    r = Renderer(W, H)
    sphere = r.scene.assets[r.load(sphere_tess)]
    assert np.sqrt(3) - 1 <= sphere.sphere_gap <= 2 * np.sqrt(3)
    # a root of many triangles takes fewer points of each (here 3, then a subset): any points of
    # the surface bound the gap from above, so it only loosens
    from renderer import scene

    monkeypatch.setattr(scene, "GAP_POINTS", 5)
    assert box.sphere_gap <= scene._sphere_gap(box) <= np.sqrt(3)
    # an instance scaled by 2 and rotated keeps its gap times 2; one scaled by (1, 0.5, 1)
    # along its axes lies within (1 - 0.5) R more of its sphere (the ellipsoid inside it); a
    # sheared one says nothing (infinite: the aggregates take the sphere's diameter)
    rows = np.zeros((3, 3, 4), np.float32)
    rot = np.array([[0, -1, 0], [1, 0, 0], [0, 0, 1]], np.float32)
    rows[0, :, :3] = 2 * rot
    rows[1, :, :3] = rot @ np.diag([1, 0.5, 1])
    rows[2, :, :3] = [[1, 0.5, 0], [0, 1, 0], [0, 0, 1]]
    r.add_instances(0, as_matrices(rows))
    gaps = r.scene.instance_gaps()
    big = float(sphere.bounds_sphere[3])
    assert gaps[0] == pytest.approx(2 * sphere.sphere_gap, rel=1e-3)
    assert gaps[1] == pytest.approx(0.5 * big + sphere.sphere_gap, rel=1e-3)
    assert np.isinf(gaps[2])


def _box_distances(tris: np.ndarray, lo: np.ndarray, hi: np.ndarray, n: int = 60) -> float:
    """The two-way distance between the surface of the box lo..hi and the triangles, densely
    sampled: the box's faces on an n x n grid against the triangles' points, the triangles'
    points (an n-split barycentric grid) against the box's surface."""
    i, j = (x.ravel() for x in np.meshgrid(np.arange(n + 1), np.arange(n + 1), indexing="ij"))
    keep = i + j <= n
    w = np.stack([i[keep], j[keep], n - i[keep] - j[keep]], axis=1) / n
    pts = np.einsum("sv,mvd->msd", w, tris).reshape(-1, 3)
    inward = np.minimum(pts - lo, hi - pts).min(axis=1).max()
    faces = []
    g = (np.arange(n) + 0.5) / n
    for axis in range(3):
        u, v = (axis + 1) % 3, (axis + 2) % 3
        gu, gv = np.meshgrid(lo[u] + g * (hi[u] - lo[u]), lo[v] + g * (hi[v] - lo[v]))
        for side in (lo[axis], hi[axis]):
            q = np.zeros((gu.size, 3))
            q[:, axis], q[:, u], q[:, v] = side, gu.ravel(), gv.ravel()
            faces.append(q)
    q = np.concatenate(faces)
    from scipy.spatial import cKDTree

    outward = cKDTree(pts).query(q)[0].max()
    return float(max(inward, outward))


@pytest.fixture(scope="module")
def lump(tmp_path_factory) -> tuple[str, np.ndarray]:
    """A lumpy, stretched 80-triangle shape (one cluster: its root is its full detail) as a
    `.tess` file, and its triangles ((80, 3, 3))."""
    from preprocess.build import build_file
    from preprocess.config import BuildConfig
    from preprocess.load import mesh_from_arrays
    import trimesh

    m = trimesh.creation.icosphere(subdivisions=1)
    rng = np.random.default_rng(3)
    pos = m.vertices * rng.uniform(0.7, 1.3, (len(m.vertices), 1)) * [3.0, 1.0, 1.6]
    path = tmp_path_factory.mktemp("lump") / "lump.tess"
    build_file(mesh_from_arrays(pos, m.faces, name="lump"), path, BuildConfig(), verify=True)
    return str(path), pos[m.faces]


def test_an_assets_box_gap_bounds_the_distance_both_ways(sphere_tess, lump) -> None:
    # the error of drawing an instance as its box: the unit cube is its own box (0, but for
    # the face cells' half diagonal); the unit sphere's box's corners are sqrt(3) - 1 from the
    # sphere; the lump measured densely both ways lies within 1.15 of the bound (a face cell's
    # half diagonal and the corners' distances standing for a triangle's)
    box = proxy_box()
    assert box.box_gap <= 0.05  # a face cell's half diagonal: 1/24 of a side times 0.71
    r = Renderer(W, H)
    sphere = r.scene.assets[r.load(sphere_tess)]
    assert np.sqrt(3) - 1 <= sphere.box_gap <= 2 * np.sqrt(3)
    a = r.scene.assets[r.load(lump[0])]
    assert len(a.groups) == 1 and a.root_triangles == 80  # the root is the full detail
    lo, hi = (np.asarray(a.meta[k], np.float64) for k in ("bounds_min", "bounds_max"))
    true = _box_distances(lump[1], lo, hi)
    assert true <= a.box_gap <= 1.15 * true, (true, a.box_gap)


@pytest.mark.gpu
def test_far_instances_draw_as_their_box_in_their_tone(sphere_tess, lump) -> None:
    # 256 lumps 12 apart, each about two pixels: too sparse for a group's proxy, but nearly
    # every lump's box error projects under tau, so it is drawn as its box (12 triangles for
    # its 80) keeping the share of pixels the lump covers of it. Against the lumps themselves,
    # accumulated over 32 jittered frames: the same mean colour within 3% (measured 0.25%;
    # 0.03% from a 4 x 4 supersampled render's), and 27 dB (measured 29.2: the box spreads a
    # lump's coverage over its whole footprint, where the lump's own pixels are compact; 38 dB
    # against the supersampled render for the lumps, 28.8 for the boxes). Its pixels name the
    # instance, and moved, its velocity is its instance's (every instance moved 2 units along
    # x: the covered pixels' mean within 5%)
    out = []
    for agg in (True, False):
        r = Renderer(W, H, options=RenderOptions(aggregates=agg, shadows=False))
        r.add_grid(r.load(lump[0]), 256, spacing=12.0)
        cam = Camera.framing(*r.bounds(), fill=0.9)
        res = r.render(cam)
        drawn = res.depth > 0
        assert drawn.sum() > 300 and (res.instance[drawn] >= 0).all()
        tone = r.render_converged(cam, accumulate=32).color[..., :3] / 255.0
        rows = r.scene.store.rows.copy()
        rows[:, 0, 3] += 2.0
        r.set_transforms(np.arange(len(rows)), as_matrices(rows))
        moved = r.render(cam)
        speed = moved.velocity[moved.depth > 0]
        assert (speed[:, 0] > 0).all()
        out.append((res.stats, tone, speed.mean(axis=0)))
    (boxed, ta, va), (plain, tb, vb) = out
    assert boxed.counters["proxies_drawn"] == 0
    assert boxed.counters["instances_boxed"] >= 0.8 * 256
    assert plain.counters["instances_boxed"] == 0
    assert boxed.triangles * 3 < plain.triangles
    assert abs(ta.mean() - tb.mean()) < 0.03 * tb.mean()
    assert 10 * np.log10(1 / np.mean((ta - tb) ** 2)) > 27
    assert np.abs(va - vb).max() < 0.05 * np.abs(vb).max(), (va, vb)
    # the sphere's root (4 triangles) is cheaper than a box: its instances are never boxes
    r = far_field(sphere_tess, True, n=256)
    c = r.render(Camera.framing(*r.bounds(), fill=0.9)).stats.counters
    assert c["instances_boxed"] == 0 and c["instances_visible"] + c["proxied_instances"] == 256


@pytest.mark.gpu
def test_far_instances_cast_their_boxs_shadow(lump) -> None:
    # the lumps over a ground slab (the proxies' unit cube, stretched), a low sun: the shadow
    # views draw far lumps as their boxes too (3,120 shadow triangles against 20,528 when
    # written, each box keeping its share of texels), and the picture, accumulated, stays
    # within 40 dB of the one without boxes (measured 54.6), the shadowed share of the sun's
    # visibility within 15% (measured 1.4%)
    out = []
    for agg in (True, False):
        r = Renderer(256, 256, options=RenderOptions(aggregates=agg))
        r.add_grid(r.load(lump[0]), 256, spacing=12.0)
        # scaled by 0.7: their box error (2.0 units) would otherwise sit on a shadow level's
        # texel (powers of two: 2.0 here), boxed or not by a rounding
        rows = r.scene.store.rows.copy()
        rows[:, :, :3] *= 0.7
        r.set_transforms(np.arange(256), as_matrices(rows))
        ground = np.eye(4, dtype=np.float32)
        ground[[0, 1, 2], [0, 1, 2]] = [260, 1, 260]
        ground[:3, 3] = [-130, -2, -130]
        r.add_instance(r.load(str(proxy_box().path)), ground)
        r.set_sun(30.0, 12.0)
        cam = Camera.framing(*r.bounds(), fill=0.45, direction=(0.2, 0.6, 1.0))
        first = r.render(cam)
        lit = r.render_converged(cam, accumulate=32)
        out.append((first.stats.shadow, lit.color[..., :3].astype(float), lit.shadow))
    (sa, ca, va), (sb, cb, vb) = out
    assert sa["boxed"] > 0 and sb["boxed"] == 0
    assert sa["triangles"] < sb["triangles"]
    assert 10 * np.log10(255**2 / np.mean((ca - cb) ** 2)) > 40
    assert abs((1 - va).mean() - (1 - vb).mean()) < 0.15 * (1 - vb).mean()


def far_field(sphere_tess, agg: bool, n: int = 4096, **options) -> Renderer:
    r = Renderer(W, H, options=RenderOptions(aggregates=agg, shadows=False, **options))
    r.add_grid(r.load(sphere_tess), n, spacing=6.0)
    return r


@pytest.mark.gpu
def test_a_far_field_draws_few_proxies_in_the_instances_tone(sphere_tess) -> None:
    # 4,096 spheres of radius 1, 6 apart (a third of a pixel): proxies stand for nearly all of
    # them, with a hundredth of the triangles; every instance is drawn once (by itself or by
    # one proxy); the picture, accumulated over 32 jittered frames, keeps the instances' mean
    # colour within 15% (the dither's tone against sub-pixel spheres' coverage) and 30 dB
    with_proxies, plain = far_field(sphere_tess, True), far_field(sphere_tess, False)
    cam = Camera.framing(*plain.bounds(), fill=0.3)
    a, b = with_proxies.render(cam), plain.render(cam)
    ca, cb = a.stats.counters, b.stats.counters
    assert ca["proxies_drawn"] >= 1 and ca["proxied_instances"] >= 0.9 * 4096
    assert ca["proxied_instances"] + ca["instances_visible"] == 4096
    assert cb["proxies_drawn"] == 0 and cb["instances_visible"] == 4096
    assert a.stats.triangles * 20 < b.stats.triangles
    ta = with_proxies.render_converged(cam, accumulate=32).color[..., :3] / 255.0
    tb = plain.render_converged(cam, accumulate=32).color[..., :3] / 255.0
    assert abs(ta.mean() - tb.mean()) < 0.15 * tb.mean()
    assert 10 * np.log10(1 / np.mean((ta - tb) ** 2)) > 30
    # the pixels a proxy keeps name no instance
    drawn = a.depth > 0
    assert drawn.any() and (a.instance[drawn] == -1).mean() > 0.5


@pytest.mark.gpu
def test_a_field_on_a_slope_draws_turned_proxies_in_its_tone(sphere_tess) -> None:
    # 4,096 spheres on a plane rising 40 degrees: an aligned block's box would be as tall as it
    # is wide (its error half of that); the blocks turn their boxes to the plane, so that far
    # away they are drawn by turned proxies, whose picture keeps the instances' tone
    def field(agg: bool) -> Renderer:
        r = Renderer(W, H, options=RenderOptions(aggregates=agg, shadows=False))
        a = r.load(sphere_tess)
        g = np.arange(4096)
        x, z = (g % 64 - 31.5) * 6.0, (g // 64 - 31.5) * 6.0
        rows = np.zeros((4096, 3, 4), np.float32)
        rows[:, :, :3] = np.eye(3)
        rows[:, 0, 3], rows[:, 1, 3], rows[:, 2, 3] = x, np.tan(np.radians(40)) * x, z
        r.add_instances(a, as_matrices(rows))
        return r

    turned, plain = field(True), field(False)
    cam = Camera.framing(*plain.bounds(), direction=(-0.5, 0.4, 1.0), fill=0.3)
    a, b = turned.render(cam), plain.render(cam)
    agg = turned.frame.aggregates
    assert agg.turned[agg.level == 0].all()
    ca = a.stats.counters
    assert ca["proxied_instances"] >= 0.9 * 4096 and ca["proxies_drawn"] >= 1
    assert ca["proxied_instances"] + ca["instances_visible"] == 4096
    assert a.stats.triangles * 20 < b.stats.triangles
    ta = turned.render_converged(cam, accumulate=32).color[..., :3] / 255.0
    tb = plain.render_converged(cam, accumulate=32).color[..., :3] / 255.0
    assert abs(ta.mean() - tb.mean()) < 0.15 * tb.mean()
    assert 10 * np.log10(1 / np.mean((ta - tb) ** 2)) > 30


@pytest.mark.gpu
def test_near_instances_draw_themselves_and_moved_ones_are_never_lost(sphere_tess) -> None:
    # the camera low beyond one corner: near blocks draw their instances, far ones proxies, and
    # their sum is what is in view; an instance moved from the far field to under the camera
    # is drawn (its block's proxies stand aside), and once it rests the proxies are measured
    # again and stand for the far field as before
    r = far_field(sphere_tess, True, n=16384)
    eye = np.array([-900.0, 40.0, -900.0])
    cam = Camera(eye=tuple(eye), target=(0.0, 0.0, 0.0), near=0.1)
    res = r.render(cam)
    c = res.stats.counters
    assert c["proxies_drawn"] > 0 and c["instances_visible"] > 0
    before = c["proxied_instances"]
    far = int(np.argmax(r.scene.instance_world[:, 0, 3] + r.scene.instance_world[:, 2, 3]))
    moved = r.scene.instance_world[far].copy()
    moved[:3, 3] = eye + 20 * -eye / np.linalg.norm(eye)  # 20 ahead of the camera
    r.set_transforms([far], moved)
    after = r.render(cam)
    assert (after.instance == far).sum() > 10
    assert after.stats.counters["proxied_instances"] < before
    rest = r.render(cam)  # no move: the stale proxies measured again
    assert r.frame._stale_blocks.size == 0
    assert (rest.instance == far).sum() > 10
    assert rest.stats.counters["proxied_instances"] >= before - INSTANCE_BLOCK


@pytest.mark.gpu
def test_a_lone_far_instance_stays_in_the_picture(sphere_tess) -> None:
    # one sphere a fifth of a pixel across: its block's cell is a point, its proxy's box no
    # thinner than the sphere's bounds, so the proxy still draws about what the sphere covers
    # (8 x 8 supersampled at the plain frame's cut, summed over the image: within a factor of
    # four of the sphere's own, the box's faces lit unlike a sphere's average and dithered over
    # a few dozen samples; 109 and 246 against 78 when written, by the frame index's hash)
    sums = []
    for agg in (True, False):
        r = Renderer(W, H, options=RenderOptions(aggregates=agg, shadows=False))
        r.add_instance(r.load(sphere_tess))
        cam = Camera(eye=(0.0, 0.0, 560.0), target=(0.0, 0.0, 0.0), near=0.1)
        c = r.render(cam).stats.counters
        assert c["proxies_drawn"] == (1 if agg else 0)
        img = r.render(cam, ssaa=8, tau=8.0).color[..., :3].astype(float)
        sums.append((img - img[0, 0]).sum())
    assert sums[1] > 0 and 1 / 4 < sums[0] / sums[1] < 4, sums


@pytest.mark.gpu
def test_an_asset_loaded_later_keeps_the_proxies_right(sphere_tess) -> None:
    # the proxies' asset-table rows follow the assets (the box's, one a scene asset): an asset
    # loaded after the instances lays them out again, and the far field looks as before
    r = far_field(sphere_tess, True)
    cam = Camera.framing(*r.bounds(), fill=0.3)
    before = r.render(cam, ssaa=4)
    r.load(sphere_tess)  # two more assets, no instance of them (a stale row would be the
    r.load(sphere_tess)  # third asset's: its sphere's root drawn where the box should be)
    after = r.render(cam, ssaa=4)
    assert after.stats.counters["proxies_drawn"] == before.stats.counters["proxies_drawn"] > 0
    assert after.stats.triangles == before.stats.triangles  # boxes: 12 triangles a proxy
    a, b = (x.color[..., :3].astype(float) for x in (before, after))
    assert abs(a.mean() - b.mean()) < 0.05 * a.mean()
