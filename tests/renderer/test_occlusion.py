"""Two-pass occlusion culling against the HZB (lavapipe, real WGSL).

- The HZB the GPU builds equals its numpy twin (`cpu_cull.hzb_mips`) bit for bit, so it is
  conservative by construction: every texel is the farthest depth of the pixels below it.
- The GPU's per-instance occlusion decisions equal the numpy twin of the test
  (`cpu_cull.occlusion_visible`).
- Never a missing pixel: along a scripted camera path through a dense field (static frames, slow
  moves, jumps), every frame drawn with occlusion culling has the same instance, cluster and
  triangle ids as the frame drawn without it, on at least 99.99% of pixels. Both draw the same
  cluster wherever it is visible; they could differ only where two clusters write exactly the same
  depth to a pixel, where the tie goes to the larger visible-list index, and the lists are
  ordered differently (none seen: the runs below are 100% equal).
- The post pass is what keeps it correct: a jump to a view the old HZB hid shows the clusters the
  main pass rejected (post-pass counters), and a full occluded list falls back to drawing.
"""

from __future__ import annotations

import numpy as np
import pytest

from renderer.camera import Camera
from renderer.oracles.cpu_cull import hzb_mips, occlusion_visible
from renderer.renderer import Renderer
from renderer.options import RenderOptions

pytestmark = pytest.mark.gpu

SIZE = (192, 144)


def field(path: str, count: int = 256, size: tuple[int, int] = SIZE, **options) -> Renderer:
    """A square field of overlapping spheres (unit radius, 1.2 apart) on the XZ plane."""
    r = Renderer(*size, options=RenderOptions(timestamps=False, **options))
    a = r.load(path)
    r.add_grid(a, count, spacing=1.2)
    return r


def path_cameras() -> list[Camera]:
    """Ground level into the field: static, creeping forward, turning, a jump across the field,
    a jump to a view from above, and back."""
    cams = []
    eye = np.array([0.3, 0.2, 11.0])
    for _ in range(3):  # static
        cams.append(Camera(eye=eye.copy(), target=np.array([0.3, 0.0, 0.0]), near=0.01))
    for k in range(4):  # creeping forward and turning
        e = eye + np.array([0.2 * k, 0.0, -0.6 * k])
        cams.append(Camera(eye=e, target=e + np.array([np.sin(0.2 * k), -0.05, -1.0]),
                           near=0.01))
    cams.append(Camera(eye=np.array([-12.0, 0.3, -12.0]), target=np.zeros(3), near=0.01))
    cams.append(Camera(eye=np.array([0.0, 25.0, 3.0]), target=np.zeros(3), near=0.01))
    cams.append(Camera(eye=eye.copy(), target=np.array([0.3, 0.0, 0.0]), near=0.01))
    return cams


# 8 mips (dispatches of 3, 3, 2 levels: hzb.wgsl) and 9 mips with odd sizes at most levels
@pytest.mark.slow
@pytest.mark.parametrize("size", [SIZE, (301, 97)])
def test_hzb_equals_its_numpy_twin(sphere_tess, size) -> None:
    r = field(sphere_tess, size=size)
    res = r.render(path_cameras()[0])
    mips = r.read_hzb()
    want = hzb_mips(res.depth.view(np.uint32))
    assert len(want) == (8 if size == SIZE else 9)
    assert [m.shape for m in mips] == [m.shape for m in want]
    for k, (got, exp) in enumerate(zip(mips, want, strict=True)):
        assert np.array_equal(got, exp), f"mip {k} differs"
    assert mips[-1].shape == (1, 1) and mips[0].shape == ((size[1] + 1) // 2, (size[0] + 1) // 2)


@pytest.mark.slow
@pytest.mark.parametrize("persistent", [False, True])
def test_instance_decisions_match_the_numpy_twin(sphere_tess, persistent) -> None:
    from renderer.oracles.cpu_cull import occlusion_visible_box

    r = field(sphere_tess, persistent=persistent)
    cams = path_cameras()
    r.render(cams[0])
    mips = r.read_hzb()
    res = r.render(cams[1])  # main pass: the HZB of cams[0], with cams[0]'s camera
    node = r.scene.assets[0].nodes[0]
    box = np.concatenate([node["box_min"], node["box_max"]]).astype(np.float64)
    worlds = np.array(r.scene.instance_world, np.float64)
    from renderer.oracles.cpu_cull import _frustum_box_decision, frame_view

    view = frame_view(cams[1], *SIZE, tau=1.0, sw_max_edge=32.0)
    inside, _ = _frustum_box_decision(view, worlds, np.tile(box, (len(worlds), 1)))
    p = cams[0].projection(SIZE[0] / SIZE[1])
    visible = occlusion_visible_box(worlds[inside], np.tile(box, (int(inside.sum()), 1)),
                                    cams[0].view(), (p[0, 0], p[1, 1], cams[0].near), SIZE, mips)
    c = res.stats.counters
    assert c["instances_visible"] == int(inside.sum())
    assert abs(c["occluded_instances"] - int((~visible).sum())) <= 1
    assert c["occluded_instances"] > 20  # the field hides most of itself at ground level


def test_cluster_sphere_decisions_match_the_numpy_twin(sphere_tess) -> None:
    from renderer.oracles.cpu_cull import cluster_records

    r = field(sphere_tess, occlusion=False)
    cams = path_cameras()
    r.render(cams[0])
    mips = r.read_hzb() if r.occlusion else None
    assert mips is None  # no HZB is built without occlusion; build one with it on
    r.set_occlusion(True)
    r.render(cams[0])
    mips = r.read_hzb()
    vis = r.read_visible()
    rows = np.concatenate([vis["sw"], vis["hw"]])
    rec = cluster_records(r.scene, rows[:, 1])
    worlds = np.array(r.scene.instance_world, np.float64)[rows[:, 0]]
    b = rec["bounds"].astype(np.float64)
    centres = np.einsum("kij,kj->ki", worlds[:, :3, :3], b[:, :3]) + worlds[:, :3, 3]
    spheres = np.concatenate([centres, b[:, 3:]], axis=1)
    p = cams[0].projection(SIZE[0] / SIZE[1])
    # against the HZB of the very frame that drew them, every drawn cluster with a visible pixel
    # must pass, and most drawn clusters of a static view are visible
    res = r.render(cams[0])
    ids = set(zip(res.instance[res.coverage].tolist(), res.cluster[res.coverage].tolist(),
                  strict=True))
    glob = rec["cluster"].astype(np.int64)
    seen = np.array([(int(i), int(g)) in ids for i, g in zip(rows[:, 0], glob, strict=True)])
    ok = occlusion_visible(spheres, cams[0].view(), (p[0, 0], p[1, 1], cams[0].near), SIZE,
                           mips)
    assert seen.any() and ok[seen].all()


@pytest.mark.parametrize("options", [{}, {"persistent": True}, {"fallback32": True}],
                         ids=["per-level", "persistent", "fallback32"])
@pytest.mark.slow
def test_no_missing_pixel_along_a_camera_path(sphere_tess, options) -> None:
    on, off = field(sphere_tess, **options), field(sphere_tess, occlusion=False, **options)
    removed = []
    for k, cam in enumerate(path_cameras()):
        a, b = on.render(cam), off.render(cam)
        for name in ("instance", "cluster", "triangle"):
            same = (getattr(a, name) == getattr(b, name)).mean()
            assert same >= 0.9999, f"frame {k}: {name} ids equal on {same:.4%} of pixels"
        assert np.array_equal(a.coverage, b.coverage), f"frame {k}: coverage differs"
        assert not a.stats.overflow
        removed.append(b.stats.triangles / max(a.stats.triangles, 1))
    # from the second frame on, occlusion removes work at ground level: the first frame has no
    # HZB yet; moving frames test against the previous view's HZB, and what they disocclude is
    # caught by the post pass (drawn, never lost), so they remove less (1.6x on the second frame
    # since the tight errors of issue 15 draw the far spheres coarser; 2.3x before)
    assert removed[0] == pytest.approx(1.0)
    assert removed[1] > 1.4 and min(removed[1:7]) > 1.05, removed


@pytest.mark.slow
def test_post_pass_draws_what_the_old_hzb_hid(sphere_tess) -> None:
    r = field(sphere_tess)
    cams = path_cameras()
    r.render(cams[0])
    # from the far side of the field, almost everything the old view's HZB hid is now in front
    res = r.render(cams[7])
    c = res.stats.counters
    assert c["post_clusters"] > 0
    ref = field(sphere_tess, occlusion=False).render(cams[7])
    assert np.array_equal(res.triangle, ref.triangle)


def test_full_occluded_list_falls_back_to_drawing(sphere_tess) -> None:
    r = field(sphere_tess, occluded_capacity=8)
    cams = path_cameras()
    r.render(cams[0])
    res = r.render(cams[1])
    assert res.stats.overflow & 4  # flagged
    ref = field(sphere_tess, occlusion=False).render(cams[1])
    assert np.array_equal(res.triangle, ref.triangle)
    assert np.array_equal(res.instance, ref.instance)


@pytest.mark.slow
@pytest.mark.parametrize("persistent", [False, True])
def test_ground_level_view_of_a_32x32_field_rasterizes_4x_fewer_triangles(sphere_tess,
                                                                           persistent) -> None:
    # standing 1.5 units in front of the first row, eyes at the spheres' centres: the front row
    # hides the field behind it. Further back, more of the field shows between and above the
    # front spheres and the 2x2-texel test rejects less (BENCHMARKS.md has the figures)
    cam = Camera(eye=np.array([0.3, 0.0, 16 * 1.2 + 1.5]), target=np.array([0.3, 0.0, 0.0]),
                 near=0.01)
    # at 320x240 (smaller images give the far field fewer pixels, coarser texels). The ratio also
    # follows the LOD: since errors are measured against the original surface (issue 15) the far
    # spheres draw coarser levels, so what the HZB hides weighs less: 4.1x here (5.6x before)
    on = field(sphere_tess, 1024, (320, 240), persistent=persistent)
    off = field(sphere_tess, 1024, (320, 240), occlusion=False, persistent=persistent)
    for _ in range(2):  # the second frame has the first one's HZB
        a, b = on.render(cam), off.render(cam)
    assert np.array_equal(a.triangle, b.triangle) and np.array_equal(a.instance, b.instance)
    ratio = b.stats.triangles / a.stats.triangles
    assert ratio >= 3.5, (f"occlusion culling: {b.stats.triangles:,} -> {a.stats.triangles:,} "
                          f"triangles ({ratio:.1f}x)")
    assert a.stats.counters["occluded_instances"] > 500
