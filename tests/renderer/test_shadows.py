"""The sun's virtual shadow map (renderer/shadows.py, shaders/shadow_pages.wgsl, the SHADOW
variants of the culling and raster passes) against analytic shadows, and its page cache.

The truth here shares no code with the shadow map: a box over a plane under a known sun, each
covered pixel's world point (from the frame's own depth) tested with a ray towards the sun
against the box (a slab test in float64). Tolerances: the shadow map's texel is about a pixel,
so pixels whose neighbourhood straddles the analytic shadow edge (one pixel each side) are
left out; everything else must agree.
"""

from __future__ import annotations

import dataclasses
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import trimesh

from preprocess.build import build_file
from preprocess.load import mesh_from_arrays
from preprocess.tess.color import srgb_to_linear
from renderer.camera import Camera
from renderer.renderer import Renderer
from renderer.lights import Light
from renderer.options import RenderOptions
from renderer.limits import FALLBACK_STEP, SHADOW_LEVELS, SHADOW_PAGES
from renderer.shadows import shadow_level, sun_direction

pytestmark = pytest.mark.gpu

SIZE = 256
SUN = (100.0, 40.0)
BOX_LO, BOX_HI = np.array([-0.5, 0.5, -0.5]), np.array([0.5, 1.5, 0.5])  # a unit box, floating
CAMERA = Camera(eye=(3.0, 6.0, 7.0), target=(-0.8, 0.4, 0.0), fov_y=50.0, near=0.05)
ROOT = Path(__file__).resolve().parents[2]


def _plane(n: int = 32, size: float = 10.0) -> tuple[np.ndarray, np.ndarray]:
    g = np.linspace(-size / 2, size / 2, n + 1)
    x, z = np.meshgrid(g, g)
    pos = np.stack([x.ravel(), np.zeros(x.size), z.ravel()], 1)
    idx = np.arange((n + 1) ** 2).reshape(n + 1, n + 1)
    a, b, c, d = (idx[:-1, :-1].ravel(), idx[:-1, 1:].ravel(), idx[1:, :-1].ravel(),
                  idx[1:, 1:].ravel())
    return pos, np.concatenate([np.stack([a, c, b], 1), np.stack([b, c, d], 1)])


@pytest.fixture(scope="module")
def box_scene(tmp_path_factory) -> dict[str, str]:
    """A 10 x 10 ground plane at y = 0 and a unit box (centred at the origin: the tests place
    it), as .tess files."""
    tmp = tmp_path_factory.mktemp("shadows")
    pos, faces = _plane()
    build_file(mesh_from_arrays(pos.astype(np.float32), faces), tmp / "plane.tess")
    box = trimesh.creation.box(extents=(1, 1, 1)).subdivide().subdivide()
    build_file(mesh_from_arrays(np.asarray(box.vertices, np.float32),
                                np.asarray(box.faces, np.int64)), tmp / "box.tess")
    return {"plane": str(tmp / "plane.tess"), "box": str(tmp / "box.tess")}


def _translate(x: float, y: float, z: float) -> np.ndarray:
    m = np.eye(4, dtype=np.float32)
    m[:3, 3] = x, y, z
    return m


def _scene(gpu, box_scene, boxes=((0.0, 1.0, 0.0),), size: int = SIZE, **options) -> Renderer:
    r = Renderer(size, size, ctx=gpu, options=RenderOptions(**{"sun": SUN, **options}))
    r.add_instance(r.load(box_scene["plane"]))
    box = r.load(box_scene["box"])
    for b in boxes:
        r.add_instance(box, _translate(*b))
    return r


def _world_points(res, camera: Camera) -> np.ndarray:
    """(h, w, 3) float64 world point under each pixel centre, from the frame's depth."""
    h, w = res.depth.shape
    vp = camera.view_proj(w, h).astype(np.float64)
    ys, xs = np.mgrid[0:h, 0:w]
    ndc = np.stack([(xs + 0.5) / w * 2 - 1, 1 - (ys + 0.5) / h * 2, res.depth,
                    np.ones_like(res.depth)], -1)
    p = ndc @ np.linalg.inv(vp).T
    return p[..., :3] / p[..., 3:]


def _box_blocks(points: np.ndarray, lo: np.ndarray, hi: np.ndarray, sun: np.ndarray
                ) -> np.ndarray:
    """Does the ray from each point towards the sun pass through the box? (slab test)"""
    with np.errstate(divide="ignore", invalid="ignore"):
        t0 = (lo - points) / sun
        t1 = (hi - points) / sun
    near = np.minimum(t0, t1).max(-1)
    far = np.maximum(t0, t1).min(-1)
    return (far >= np.maximum(near, 1e-4))


def _interior(mask: np.ndarray) -> np.ndarray:
    """Pixels whose 3 x 3 neighbourhood agrees with them (off the edge band)."""
    pad = np.pad(mask, 1, mode="edge")
    same = np.ones_like(mask)
    for dy in (0, 1, 2):
        for dx in (0, 1, 2):
            same &= pad[dy:dy + mask.shape[0], dx:dx + mask.shape[1]] == mask
    return same


def test_box_over_a_plane_matches_the_analytic_shadow(gpu, box_scene):
    r = _scene(gpu, box_scene)
    res = r.render(CAMERA)
    sun = sun_direction(*SUN)
    pts = _world_points(res, CAMERA)
    truth = _box_blocks(pts, BOX_LO, BOX_HI, sun)
    ground = res.instance == 0
    shadowed = res.shadow < 0.5
    keep = ground & _interior(truth)
    agree = (shadowed == truth)[keep].mean()
    acne = (shadowed & ~truth)[ground].mean()
    print(f"ground pixels {ground.sum()}, in the analytic shadow {truth[ground].sum()}, "
          f"agree {agree:.4%} off the edge band, lit but shadowed {acne:.4%}")
    assert truth[ground].sum() > 500  # the shadow is in view
    assert agree >= 0.995
    assert acne <= 0.001
    # the box's faces that face the sun are lit (no acne on the caster)
    box = res.instance == 1
    facing = box & ((res.normal @ sun) > 0.2)
    assert facing.sum() > 200
    assert (res.shadow[facing] < 0.5).mean() <= 0.001
    st = res.stats.shadow
    assert st["failed"] == 0 and st["drawn"] == st["marked"] > 0


def test_a_plate_drawn_by_the_hardware_rasterizer_casts_its_analytic_shadow(gpu, box_scene):
    """The ground plane scaled to a 3 x 3 plate at y = 2: big flat clusters, which the shadow
    views send to the HW pass, a (cluster, page) item each."""
    r = Renderer(SIZE, SIZE, ctx=gpu, options=RenderOptions(sun=SUN))
    plane = r.load(box_scene["plane"])
    r.add_instance(plane)
    r.add_instance(plane, np.diag([0.3, 1.0, 0.3, 1.0]).astype(np.float32) @ _translate(0, 2, 0))
    cam = Camera(eye=(2.0, 7.0, 9.0), target=(-1.5, 0.0, 0.0), fov_y=50.0, near=0.05)
    res = r.render(cam)
    sun = sun_direction(*SUN)
    truth = _box_blocks(_world_points(res, cam), np.array([-1.5, 1.999, -1.5]),
                        np.array([1.5, 2.001, 1.5]), sun)
    ground = res.instance == 0
    keep = ground & _interior(truth)
    agree = ((res.shadow < 0.5) == truth)[keep].mean()
    st = res.stats.shadow
    print(f"HW items {st['hw_items']} of {st['clusters']}; in the analytic shadow "
          f"{truth[ground].sum()} px, agree {agree:.4%} off the edge band")
    assert st["hw_items"] > 0 and truth[ground].sum() > 2000
    assert agree >= 0.995


@pytest.fixture(scope="module")
def rock_on_ground(tmp_path_factory) -> dict:
    """A 20,000-triangle built-in rock and the ground plane (assets.ground), as meshes and
    .tess files."""
    from assets import builtin_mesh
    from assets.ground import ground_mesh

    tmp = tmp_path_factory.mktemp("rock")
    out = {"rock": builtin_mesh("rock", 20_000), "ground": ground_mesh()}
    for name, mesh in list(out.items()):
        build_file(mesh, tmp / f"{name}.tess")
        out[f"{name}_tess"] = str(tmp / f"{name}.tess")
    return out


@pytest.mark.slow
@pytest.mark.parametrize("tau, floor", [(1e-6, 0.99), (1.0, 0.98)])
def test_a_rock_on_the_ground_against_the_brute_force_sun(gpu, rock_on_ground, tau, floor):
    """Against renderer.oracles.shadow_reference (every original triangle drawn from the sun by
    the GPU's own rasterizer, 2048^2): at full detail and at tau = 1, over the pixels that face
    the sun, off a one-pixel band along the truth's shadow edges. The floors are the issue's."""
    from assets.ground import ground_transform
    from renderer.oracles.shadow_reference import SunReference

    sun_at = (60.0, 40.0)
    r = Renderer(SIZE, SIZE, ctx=gpu, options=RenderOptions(sun=sun_at))
    r.add_instance(r.load(rock_on_ground["rock_tess"]))
    center, radius = r.bounds()
    ground = ground_transform(r.scene, center, radius)
    r.add_instance(r.load(rock_on_ground["ground_tess"]), ground)
    cam = Camera.framing(center, radius, direction=(0.3, 0.6, 1.0), fill=0.8)
    res = r.render(cam, tau=tau)
    ref = SunReference(gpu, 2048)
    meshes = [ref.add_mesh(m.positions, m.position_triangles)
              for m in (rock_on_ground["rock"], rock_on_ground["ground"])]
    cov = res.coverage
    lit = np.ones(cov.shape, bool)
    lit[cov] = ref.visibility(sun_at, [(meshes[0], np.eye(4, dtype=np.float32)),
                                       (meshes[1], ground)],
                              _world_points(res, cam)[cov], res.normal[cov])
    facing = cov & ((res.normal @ sun_direction(*sun_at)) > 0.1)
    _judge(res.shadow < 0.5, lit, facing, res.instance == 1, floor, f"tau {tau:g}, the sun")


def _judge(ours: np.ndarray, lit: np.ndarray, considered: np.ndarray, ground: np.ndarray,
           floor: float, what: str) -> None:
    """Shadowed here (`ours`) against lit in the truth, over the `considered` pixels off a
    one-pixel band along the truth's edges: agreement at least `floor`, acne (lit in the truth,
    shadowed here) at most 0.1%, and the ground under the rock, where it meets it, never lit."""
    keep = considered & _interior(lit)
    agree = (ours == ~lit)[keep].mean()
    acne = (ours & lit & keep).sum() / considered.sum()
    contact = keep & ~lit & ground
    print(f"{what}: {considered.sum()} px considered, {(~lit & considered).sum()} in the "
          f"truth's shadow; agree {agree:.4%}, acne {acne:.4%}, lit under the rock "
          f"{(~ours & contact).sum()} of {contact.sum()}")
    assert (~lit & considered).sum() > 600 and contact.sum() > 300
    assert agree >= floor
    assert acne <= 0.001
    assert (~ours & contact).mean() <= 0.002


def test_a_thin_wall_standing_on_the_ground_under_a_low_sun(gpu, box_scene, tmp_path):
    """A wall 2 x 1 x 0.02 standing on the ground, the sun 20 degrees above the horizon behind
    it: its long shadow against the analytic one. At its foot a texel of the sun's view spans
    1 / sin(20 deg) = 2.9 texels of ground: the filter (a texel each side) and the depth bias
    (half a texel, and a quarter of the receiver plane's slope) let light reach up to 3 texels of
    the sun's view behind the foot, where the truth's edge is sharp; never farther."""
    wall = trimesh.creation.box(extents=(2.0, 1.0, 0.02)).subdivide().subdivide()
    build_file(mesh_from_arrays(np.asarray(wall.vertices, np.float32),
                                np.asarray(wall.faces, np.int64)), tmp_path / "wall.tess")
    sun_at = (0.0, 20.0)
    r = Renderer(SIZE, SIZE, ctx=gpu, options=RenderOptions(sun=sun_at))
    r.add_instance(r.load(box_scene["plane"]))
    r.add_instance(r.load(str(tmp_path / "wall.tess")), _translate(0.0, 0.5, 0.0))
    cam = Camera(eye=(4.0, 3.5, -2.0), target=(0.0, 0.0, -1.5), fov_y=60.0, near=0.05)
    res = r.render(cam)
    truth = _box_blocks(_world_points(res, cam), np.array([-1.0, 0.0, -0.01]),
                        np.array([1.0, 1.0, 0.01]), sun_direction(*sun_at))
    ground = res.instance == 0
    keep = ground & _interior(truth)
    agree = ((res.shadow < 0.5) == truth)[keep].mean()
    pts = _world_points(res, cam)
    behind = -pts[..., 2] - 0.01  # how far behind the wall's back face
    dist = np.linalg.norm(pts - np.asarray(cam.eye), axis=-1)
    texel0 = r.frame.shadow_map.texel0
    texel = texel0 * 2.0 ** shadow_level(dist, cam.lod_scale(SIZE), texel0)
    reach = 3.0 * texel / np.sin(np.radians(sun_at[1]))  # 3 texels of the sun's view, on the ground
    leak = keep & truth & (res.shadow > 0.5) & (behind < 0.5)  # lit near the foot
    print(f"the wall's shadow: {truth[ground].sum()} px, agree {agree:.4%} off the edge band; "
          f"lit by the foot {leak.sum()} px, at most {behind[leak].max(initial=0):.3f} behind it "
          f"(the filter reaches {reach[leak].max(initial=0):.3f})")
    assert truth[ground].sum() > 3000
    assert agree >= 0.995
    assert (behind[leak] <= reach[leak]).all()


@pytest.mark.slow
def test_a_still_frame_draws_no_page_and_a_move_draws_only_its_own(gpu, box_scene):
    boxes = [(-3.0, 1.0, -3.0), (3.0, 1.0, -3.0), (-3.0, 1.0, 2.0), (2.0, 1.0, 2.0)]
    cam = Camera(eye=(0.0, 12.0, 6.0), target=(0.0, 0.0, 0.0), fov_y=60.0, near=0.05)
    r = _scene(gpu, box_scene, boxes)
    first = r.render(cam).stats.shadow
    still = r.render(cam)
    assert first["drawn"] == first["marked"] > 0
    assert still.stats.shadow["drawn"] == 0 and still.stats.shadow["clusters"] == 0
    assert still.stats.shadow["cached"] == still.stats.shadow["marked"]
    # that frame found every page valid: the next still frame runs no shadow pass at all
    again = r.render(cam)
    assert again.stats.shadow["still"] and not still.stats.shadow["still"]
    assert not any(p.startswith("shadow_") for p in again.stats.gpu_ms)
    assert np.array_equal(again.shadow, still.shadow)
    moved = (-3.0, 1.0, -2.4)
    r.set_transform(1, _translate(*moved))
    after = r.render(cam)
    st = after.stats.shadow
    print(f"pages drawn: first frame {first['drawn']}, still 0, after one box moved "
          f"{st['drawn']} of {st['marked']}")
    assert 0 < st["drawn"] < first["drawn"] / 3
    # what the cache kept and what it drew again is what a fresh map draws
    fresh = _scene(gpu, box_scene, [moved, *boxes[1:]]).render(cam)
    assert np.array_equal(after.instance, fresh.instance)
    assert np.abs(after.shadow - fresh.shadow).max() < 1e-6


def test_each_pixel_marks_the_level_of_its_footprint(gpu, box_scene):
    # the ground seen from above and aslant: footprints over about a factor of four
    cam = Camera(eye=(0.0, 3.0, 4.0), target=(0.0, 0.0, -1.0), fov_y=60.0, near=0.01)
    r = _scene(gpu, box_scene)
    res = r.render(cam)
    marks = np.frombuffer(r.device.queue.read_buffer(r.frame.resources.buffers["shadow_marks"]),
                          np.uint32).reshape(SHADOW_LEVELS, SHADOW_PAGES * SHADOW_PAGES)
    marked = {int(v) for v in np.nonzero((marks == res.stats.frame + 1).any(axis=1))[0]}
    dist = np.linalg.norm(_world_points(res, cam) - np.asarray(cam.eye), axis=-1)[res.coverage]
    want = shadow_level(dist, cam.lod_scale(SIZE), r.frame.shadow_map.texel0)
    last = SHADOW_LEVELS - 1
    expect = ({int(v) for v in np.unique(want)}
              | {min(int(v) + FALLBACK_STEP, last) for v in np.unique(want)} | {last})
    # a texel of the chosen level is no larger than the pixel, and more than half of it
    texel = r.frame.shadow_map.texel0 * 2.0 ** want
    footprint = dist / cam.lod_scale(SIZE)
    print(f"levels wanted {sorted(np.unique(want).tolist())}, marked {sorted(marked)}")
    assert len(np.unique(want)) >= 2
    assert ((texel <= footprint * 1.0001) & (texel > footprint / 2.0001)).all()
    # levels a pixel on a level's border may round either way: the marks must cover the wants
    assert expect <= marked <= expect | {min(v + 1, last) for v in expect} | {
        max(v - 1, 0) for v in expect}


@pytest.mark.slow
def test_a_pool_too_small_shades_from_coarser_levels_without_holes(gpu, box_scene):
    # close to the ground, 512 x 512: about twice the pages the least pool holds
    cam = Camera(eye=(0.8, 0.6, 2.2), target=(-0.8, 0.5, 0.0), fov_y=60.0, near=0.01)
    full = _scene(gpu, box_scene, size=512).render(cam)
    small = _scene(gpu, box_scene, size=512, shadow_pool_mb=2).render(cam)  # 32: the least
    st = small.stats.shadow
    print(f"32 pages: {st}; with 1,024: {full.stats.shadow}")
    assert st["pool_pages"] == 32 and st["pool_used"] == 32
    assert st["failed"] > 0 and full.stats.shadow["failed"] == 0
    # never light where the full map has deep shadow, away from its edges
    deep = (full.shadow < 0.05) & _interior(full.shadow < 0.5)
    assert deep.sum() > 500
    assert (small.shadow[deep] > 0.5).mean() <= 0.02


@pytest.mark.slow
def test_streamed_pages_cast_from_coarser_geometry_until_loaded(gpu, box_scene, sphere_tess):
    """A streaming scene: the first frame has only root pages (coarse casters), the converged
    one matches the scene fully resident; never a caster missing."""
    def scene(**options):
        r = Renderer(SIZE, SIZE, ctx=gpu, options=RenderOptions(sun=SUN, timestamps=False,
                                                                **options))
        r.add_instance(r.load(box_scene["plane"]))
        r.add_instance(r.load(sphere_tess), _translate(0.0, 1.5, 0.0))
        return r

    resident = scene(streaming=False).render(CAMERA)
    r = scene(streaming=True, pool_pages=64)
    first = r.render(CAMERA)
    done = r.render_converged(CAMERA)
    ground = resident.instance == 0
    deep = ground & (resident.shadow < 0.05) & _interior(resident.shadow < 0.5)
    assert deep.sum() > 300
    print(f"deep shadow {deep.sum()} px: lit in the first streamed frame "
          f"{(first.shadow[deep] > 0.5).mean():.4f}, converged "
          f"{(done.shadow[deep] > 0.5).mean():.4f}")
    assert (first.shadow[deep] > 0.5).mean() <= 0.05  # the root's coarse sphere casts
    same = done.instance == resident.instance
    assert same.mean() > 0.999
    assert np.abs(done.shadow - resident.shadow)[same & ground].mean() < 0.002


def test_shadows_off_leave_the_sun_and_no_shadow(gpu, box_scene):
    on = _scene(gpu, box_scene).render(CAMERA)
    off = _scene(gpu, box_scene, shadows=False).render(CAMERA)
    assert off.stats.shadow is None and (off.shadow == 1).all()
    lit = on.shadow > 0.99
    # the same sun: where nothing shadows, the pictures are the same
    diff = np.abs(on.color[lit].astype(int) - off.color[lit].astype(int)).max()
    assert diff <= 1


@pytest.mark.parametrize("options, message", [
    ({"sun": (float("nan"), 30.0)}, "two finite numbers"),
    ({"sun": (10.0, 0.0)}, "not above the horizon"),
    ({"sun": (10.0, -5.0)}, "not above the horizon"),
    ({"sun": (10.0,)}, "two finite numbers"),
    ({"shadow_pool_mb": 0}, "shadow_pool_mb"),
    ({"shadow_pool_mb": float("inf")}, "shadow_pool_mb"),
    ({"shadow_tau": -1.0}, "shadow_tau"),
])
def test_bad_sun_and_pool_options_are_refused(options, message):
    with pytest.raises(ValueError, match=message):
        RenderOptions(**options)


def test_a_pool_past_the_binding_limit_is_one_line(gpu):
    with pytest.raises(ValueError, match="more than this adapter binds"):
        Renderer(64, 64, ctx=gpu, options=RenderOptions(shadow_pool_mb=1e7))
    with pytest.raises(ValueError, match="at least 2 MiB"):
        Renderer(64, 64, ctx=gpu, options=RenderOptions(shadow_pool_mb=1.9))


def _render_shadow_fraction(box_scene, env: dict | None = None, options: str = f"sun={SUN!r}",
                            save: str | None = None) -> float:
    """The share of ground pixels in shadow, rendered by a child process (another backend)
    with RenderOptions(`options`); the lit image saved to `save` (.npy) if given."""
    code = (
        "import numpy as np, sys\n"
        "from renderer.renderer import Renderer\n"
        "from renderer.options import RenderOptions\n"
        "from renderer.lights import Light\n"
        "from renderer.camera import Camera\n"
        f"r = Renderer({SIZE}, {SIZE}, options=RenderOptions({options}))\n"
        f"r.add_instance(r.load({box_scene['plane']!r}))\n"
        "m = np.eye(4, dtype=np.float32); m[1, 3] = 1.0\n"
        f"r.add_instance(r.load({box_scene['box']!r}), m)\n"
        f"res = r.render(Camera(eye={tuple(CAMERA.eye)!r}, target={tuple(CAMERA.target)!r}, "
        f"fov_y={CAMERA.fov_y!r}, near={CAMERA.near!r}))\n"
        "g = res.instance == 0\n"
        + (f"np.save({save!r}, res.color)\n" if save else "")
        + "print(r.ctx.backend, (res.shadow[g] < 0.5).mean())\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                         env={**os.environ, **(env or {})}, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    backend, frac = out.stdout.split()[-2:]
    return backend, float(frac)


@pytest.mark.slow
def test_the_opengl_backend_draws_the_same_shadows(gpu, box_scene):
    res = _scene(gpu, box_scene).render(CAMERA)
    ground = res.instance == 0
    here = (res.shadow[ground] < 0.5).mean()
    backend, there = _render_shadow_fraction(box_scene, {"WGPU_BACKEND_TYPE": "OpenGL"})
    print(f"ground in shadow: {here:.4f} here, {there:.4f} on {backend}")
    assert abs(here - there) <= 0.002


@pytest.mark.slow
def test_the_opengl_backend_draws_the_same_local_light_shadows(gpu, box_scene, tmp_path):
    lights = (Light("point", LAMP, intensity=6.0),
              Light("spot", (1.5, 3.0, 1.0), intensity=8.0, direction=(-0.5, -1.0, -0.3)))
    res = _scene(gpu, box_scene, sun=None, lights=lights).render(CAMERA)
    backend, _ = _render_shadow_fraction(box_scene, {"WGPU_BACKEND_TYPE": "OpenGL"},
                                         f"sun=None, lights={lights!r}", str(tmp_path / "gl.npy"))
    there = np.load(tmp_path / "gl.npy")
    diff = np.abs(res.color.astype(int) - there.astype(int)).max(-1)
    print(f"{backend}: pixels off by more than 2 levels {(diff > 2).mean():.4%}")
    assert backend.lower().startswith("opengl") and (diff > 2).mean() < 0.002


def test_alpha_masked_casters_cast_their_cut_outs(gpu, tmp_path, gltf_fence):
    """A fence (glTF MASK: a checker of holes, half its area) 0.5 in front of a wall, the sun
    low behind the camera: the wall behind the fence is in the fence's shadow only where the
    fence is opaque, about half of it (all of it if the cut-out were ignored), and the wall
    around the fence's shadow is lit."""
    from preprocess.load import load_mesh

    src = gltf_fence(tmp_path / "fence.glb")
    build_file(src, tmp_path / "fence.tess", texture=None)
    mesh = load_mesh(src)
    fence_m = next(i for i, m in enumerate(mesh.materials) if m.name == "fence")
    sun_at = (0.0, 10.0)  # from +z, 10 degrees up: the fence's shadow lands 0.09 lower
    r = Renderer(SIZE, SIZE, ctx=gpu, options=RenderOptions(sun=sun_at))
    r.add_instance(r.load(str(tmp_path / "fence.tess")))
    cam = Camera(eye=(0.0, 0.0, 4.0), target=(0.0, 0.0, 0.0), fov_y=50.0, near=0.05)
    res = r.render(cam)
    pts = _world_points(res, cam)
    s = sun_direction(*sun_at)
    hit = pts + ((0.5 - pts[..., 2]) / s[2])[..., None] * s  # where the ray meets the fence
    wall = res.coverage & (res.material != fence_m) & (np.abs(pts[..., 2]) < 1e-3)
    behind = wall & (np.abs(hit[..., :2]) < 0.95).all(-1)  # under the fence's shadow
    around = wall & (np.abs(hit[..., :2]) > 1.05).any(-1)
    shaded = (res.shadow[behind] < 0.5).mean()
    print(f"wall behind the fence: {behind.sum()} px, {shaded:.3f} shadowed; around it "
          f"{(res.shadow[around] < 0.5).mean():.4f} shadowed")
    assert behind.sum() > 500 and around.sum() > 500
    assert 0.3 < shaded < 0.7
    assert (res.shadow[around] < 0.5).mean() < 0.01


def test_moving_the_sun_draws_the_shadow_anew(gpu, box_scene):
    r = _scene(gpu, box_scene)
    first = r.render(CAMERA)
    r.set_sun(280.0, 40.0)  # the other side: the shadow falls towards +x now
    moved = r.render(CAMERA)
    pts = _world_points(moved, CAMERA)
    ground = moved.instance == 0
    for res, sun_at in ((first, SUN), (moved, (280.0, 40.0))):
        truth = _box_blocks(pts, BOX_LO, BOX_HI, sun_direction(*sun_at))
        keep = ground & _interior(truth)
        assert truth[ground].sum() > 300
        assert ((res.shadow < 0.5) == truth)[keep].mean() >= 0.995
    assert moved.stats.shadow["drawn"] == moved.stats.shadow["marked"]  # nothing kept
    with pytest.raises(ValueError, match="horizon"):
        r.set_sun(10.0, 0.0)
    assert r.sun == (280.0, 40.0)


# -- spot and point lights: each with its own virtual shadow map (renderer/lights.py). The
# truth is the same slab test along the segment from each ground point to the light. A local
# light's term is read from the lit image: with no sun, visibility = (shadowed - ambient) /
# (unshadowed - ambient) in linear light (three renders: the light casting, the light not
# casting, no light), on ground the light reaches well (8-bit sRGB keeps that term to ~1%).

LAMP = (-1.2, 3.0, -1.0)  # behind the box: its shadow falls towards the camera


def _linear(color: np.ndarray) -> np.ndarray:
    return srgb_to_linear(color[..., :3] / 255.0).mean(-1)


def _light_visibility(gpu, box_scene, light: Light, camera: Camera = CAMERA, **options):
    """(visibility, light's term unshadowed, result): a light's shadow term per pixel."""
    def render(lights):
        r = _scene(gpu, box_scene, **{"sun": None, "lights": lights, **options})
        return r.render(camera)

    res = render((light,))
    bare = render((dataclasses.replace(light, shadows=False),))
    ambient = render(())
    term = _linear(bare.color) - _linear(ambient.color)
    with np.errstate(divide="ignore", invalid="ignore"):
        vis = (_linear(res.color) - _linear(ambient.color)) / term
    return vis, term, res


def _segment_blocked(points: np.ndarray, lo: np.ndarray, hi: np.ndarray, light) -> np.ndarray:
    """Does the segment from each point to the light pass through the box? (slab test)"""
    d = np.asarray(light, np.float64) - points
    with np.errstate(divide="ignore", invalid="ignore"):
        t0 = (lo - points) / d
        t1 = (hi - points) / d
    near = np.minimum(t0, t1).max(-1)
    far = np.maximum(t0, t1).min(-1)
    return (far >= np.maximum(near, 1e-4)) & (near <= 1.0)


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["point", "spot"])
def test_a_local_light_over_a_box_matches_the_analytic_shadow(gpu, box_scene, kind):
    light = Light(kind, LAMP, intensity=6.0, direction=(0.45, -1.0, 0.35),
                  inner_cone=math.radians(35), outer_cone=math.radians(50))
    vis, term, res = _light_visibility(gpu, box_scene, light)
    ground = res.instance == 0
    pts = _world_points(res, CAMERA)
    truth = _segment_blocked(pts, BOX_LO, BOX_HI, LAMP)
    reached = ground & (term > 0.05)
    keep = reached & _interior(truth)
    shadowed = vis < 0.5
    agree = (shadowed == truth)[keep].mean()
    acne = (shadowed & ~truth)[reached].mean()
    print(f"{kind}: {reached.sum()} ground px lit, {truth[reached].sum()} in the analytic "
          f"shadow; agree {agree:.4f}, acne {acne:.4f}; {res.stats.shadow}")
    assert truth[reached].sum() > 1000 and reached.sum() > 10000
    assert agree >= 0.99
    assert acne <= 0.001
    assert res.stats.shadow["failed"] == 0 and res.stats.shadow["marked"] > 0
    # the light falls off with the square of the distance, times the cosine: what the ground
    # gets unshadowed, over cos / d^2, is about constant (the BRDF's specular lobe aside)
    d = np.asarray(LAMP) - pts
    dist = np.linalg.norm(d, axis=-1)
    law = term / (d[..., 1] / dist / dist**2)
    if kind == "point":
        spread = np.percentile(law[reached], [10, 90])
        assert spread[1] / spread[0] < 1.25, spread
    else:  # outside the outer cone, nothing; inside the inner one, the full light
        axis = np.asarray(light.direction) / np.linalg.norm(light.direction)
        angle = np.degrees(np.arccos(np.clip((-d / dist[..., None]) @ axis, -1, 1)))
        assert np.abs(term[ground & (angle > 51)]).max() < 0.01
        inner = law[ground & (angle < 34) & ~truth & (term > 0.05)]
        assert np.percentile(inner, 90) / np.percentile(inner, 10) < 1.25


@pytest.mark.slow
def test_a_local_light_s_pages_are_cached_and_a_move_draws_only_its_own(gpu, box_scene):
    boxes = [(-3.0, 1.0, -3.0), (3.0, 1.0, -3.0), (-3.0, 1.0, 2.0), (2.0, 1.0, 2.0)]
    cam = Camera(eye=(0.0, 8.0, 5.0), target=(0.0, 0.0, 0.0), fov_y=60.0, near=0.05)
    lamp = Light("point", (0.0, 6.0, 0.0), intensity=36.0)
    r = _scene(gpu, box_scene, boxes, size=512, sun=None, lights=(lamp,))
    first = r.render(cam).stats.shadow
    still = r.render(cam).stats.shadow
    assert first["drawn"] == first["marked"] > 0
    assert still["drawn"] == 0 and still["cached"] == still["marked"]
    moved = (-3.0, 1.0, -2.4)
    r.set_transform(1, _translate(*moved))
    after = r.render(cam)
    st = after.stats.shadow
    print(f"point light: pages drawn first {first['drawn']}, after one box moved {st['drawn']}")
    assert 0 < st["drawn"] < first["drawn"] / 2
    fresh = _scene(gpu, box_scene, [moved, *boxes[1:]], size=512, sun=None,
                   lights=(lamp,)).render(cam)
    assert np.array_equal(after.instance, fresh.instance)
    assert np.abs(after.color.astype(int) - fresh.color.astype(int)).max() <= 1
    # a light moved: every page drawn again
    r.set_lights([dataclasses.replace(lamp, position=(0.5, 6.0, 0.0))])
    again = r.render(cam).stats.shadow
    assert again["drawn"] == again["marked"] > 0


@pytest.mark.slow
def test_local_lights_beside_the_sun_share_a_pool_too_small_without_holes(gpu, box_scene):
    """The sun and two point lights in the least pool (32 pages): pages run short, coarser
    levels and mips serve; where the sun's shadow is deep with the full pool, it stays."""
    lamps = (Light("point", (2.0, 2.0, 1.0), intensity=3.0),
             Light("point", (-2.0, 2.5, -1.0), intensity=3.0))
    cam = Camera(eye=(0.8, 0.6, 2.2), target=(-0.8, 0.5, 0.0), fov_y=60.0, near=0.01)
    full = _scene(gpu, box_scene, size=512, lights=lamps).render(cam)
    small = _scene(gpu, box_scene, size=512, lights=lamps, shadow_pool_mb=2).render(cam)
    st = small.stats.shadow
    print(f"32 pages: {st}; with 1,024: {full.stats.shadow}")
    assert st["failed"] > 0 and full.stats.shadow["failed"] == 0
    deep = (full.shadow < 0.05) & _interior(full.shadow < 0.5)
    assert deep.sum() > 500
    assert (small.shadow[deep] > 0.5).mean() <= 0.02
    # and the pictures agree but for the detail lost
    assert (np.abs(small.color.astype(int) - full.color.astype(int)).max(-1) > 24).mean() < 0.03


@pytest.mark.parametrize("kw, message", [
    ({"kind": "area"}, "kind"),
    ({"position": (0.0, float("nan"), 0.0)}, "position"),
    ({"intensity": -1.0}, "intensity"),
    ({"intensity": float("inf")}, "intensity"),
    ({"color": (1.0, -0.5, 1.0)}, "color"),
    ({"range": 0.0}, "range"),
    ({"kind": "spot", "direction": (0.0, 0.0, 0.0)}, "direction"),
    ({"kind": "spot", "inner_cone": 0.8, "outer_cone": 0.5}, "cones"),
    ({"kind": "spot", "outer_cone": 2.0}, "cones"),
])
def test_bad_lights_are_refused(kw, message):
    with pytest.raises(ValueError, match=message):
        Light(**{"kind": "point", "position": (0.0, 1.0, 0.0), **kw})


def test_too_many_lights_and_shadow_faces(gpu, box_scene):
    lamp = Light("point", (0.0, 3.0, 0.0))
    with pytest.raises(ValueError, match="at most 16"):
        RenderOptions(lights=(lamp,) * 17)
    with pytest.raises(ValueError, match=r"not a renderer\.Light"):
        RenderOptions(lights=({"type": "point"},))
    r = _scene(gpu, box_scene, sun=None)
    with pytest.warns(RuntimeWarning, match="36 shadow faces"):
        r.set_lights([lamp] * 6)  # 34 faces: five point lights cast, the sixth does not
    assert r.frame.shadow_map.faces == 34
    res = r.render(CAMERA)
    assert r.frame.shadow_map.light_faces == [6] * 5 + [0]
    assert res.stats.shadow["failed"] == 0


def test_no_sun_lights_the_scene_with_its_ambient_and_lamps(gpu, box_scene):
    dark = _scene(gpu, box_scene, sun=None).render(CAMERA)
    sunny = _scene(gpu, box_scene).render(CAMERA)
    ground = dark.instance == 0
    assert _linear(dark.color)[ground].mean() < 0.6 * _linear(sunny.color)[ground].mean()
    assert (dark.shadow[dark.coverage] == 0).all()  # the sun's visibility: none
    r = _scene(gpu, box_scene)
    r.set_sun(None)
    assert r.sun is None
    assert np.array_equal(r.render(CAMERA).color, dark.color)


@pytest.mark.slow
@pytest.mark.parametrize("tau, floor", [(1e-6, 0.99), (1.0, 0.98)])
def test_a_rock_on_the_ground_against_the_brute_force_point_light(gpu, rock_on_ground, tau,
                                                                   floor):
    """A point light low beside the rock against renderer.oracles.shadow_reference's
    `light_visibility` (every original triangle drawn from the light, a 2048^2 face), over the
    ground and rock the light reaches, off a one-pixel band along the truth's shadow edges."""
    from assets.ground import ground_transform
    from renderer.oracles.shadow_reference import SunReference

    def scene(lights):
        r = Renderer(SIZE, SIZE, ctx=gpu, options=RenderOptions(sun=None, lights=lights))
        r.add_instance(r.load(rock_on_ground["rock_tess"]))
        center, radius = r.bounds()
        ground = ground_transform(r.scene, center, radius)
        r.add_instance(r.load(rock_on_ground["ground_tess"]), ground)
        return r, center, radius, ground

    r, center, radius, ground = scene(())
    lamp = Light("point", tuple(center + np.array([1.1, 0.9, 0.4]) * radius),
                 intensity=4.0 * radius**2)
    cam = Camera.framing(center, radius, direction=(-0.3, 0.6, 1.0), fill=0.6)
    ambient = r.render(cam, tau=tau)
    res = scene((lamp,))[0].render(cam, tau=tau)
    bare = scene((dataclasses.replace(lamp, shadows=False),))[0].render(cam, tau=tau)
    term = _linear(bare.color) - _linear(ambient.color)
    with np.errstate(divide="ignore", invalid="ignore"):
        vis = (_linear(res.color) - _linear(ambient.color)) / term
    ref = SunReference(gpu, 2048)
    meshes = [ref.add_mesh(m.positions, m.position_triangles)
              for m in (rock_on_ground["rock"], rock_on_ground["ground"])]
    cov = res.coverage
    lit = np.ones(cov.shape, bool)
    lit[cov] = ref.light_visibility(lamp.position, [(meshes[0], np.eye(4, dtype=np.float32)),
                                                    (meshes[1], ground)],
                                    _world_points(res, cam)[cov], res.normal[cov])
    reached = cov & (term > 0.05)  # where the light reaches (its side)
    _judge(vis < 0.5, lit, reached, res.instance == 1, floor, f"tau {tau:g}, a point light")


@pytest.mark.slow
def test_a_light_s_huge_range_still_casts(gpu, box_scene):
    """A face's far plane stops at the scene (a near plane at 1/2000 of a range of 10^7 would
    clip every caster); a range that ends short of a receiver leaves it unlit."""
    light = Light("point", LAMP, intensity=6.0, range=1e7)
    vis, term, res = _light_visibility(gpu, box_scene, light)
    ground = res.instance == 0
    truth = _segment_blocked(_world_points(res, CAMERA), BOX_LO, BOX_HI, LAMP)
    keep = ground & (term > 0.05) & _interior(truth)
    assert truth[keep].sum() > 1000 and ((vis < 0.5) == truth)[keep].mean() >= 0.99
    short = _scene(gpu, box_scene, sun=None,
                   lights=(dataclasses.replace(light, range=2.0),)).render(CAMERA)
    bare = _scene(gpu, box_scene, sun=None).render(CAMERA)
    far = ground & (np.linalg.norm(_world_points(res, CAMERA) - LAMP, axis=-1) > 2.0)
    assert np.array_equal(short.color[far], bare.color[far])


def _anonymous_rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("RssAnon:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no RssAnon in /proc/self/status")


@pytest.mark.slow
def test_frames_with_shadows_and_lights_leak_no_native_memory(gpu, box_scene):
    """lavapipe compiles a variant of a shader for each dispatch whose branch or loop a uniform
    alone decides, and never frees it (~1 MB a frame with the sun's test and the lights' loop
    so written: tools/soak.py). Forty frames after a warm-up, the sun, a point light and a spot,
    each frame moving the camera (the passes run): the process's anonymous memory stays put."""
    lights = (Light("point", LAMP, intensity=6.0),
              Light("spot", (1.5, 3.0, 1.0), intensity=8.0, direction=(-0.5, -1.0, -0.3)))
    r = _scene(gpu, box_scene, size=64, lights=lights)
    cams = [Camera(eye=(3.0 + 0.01 * k, 6.0, 7.0), target=(-0.8, 0.4, 0.0), fov_y=50.0,
                   near=0.05) for k in range(60)]
    for cam in cams[:20]:
        r.render(cam)
    before = _anonymous_rss_mb()
    for cam in cams[20:]:
        r.render(cam)
    grown = _anonymous_rss_mb() - before
    print(f"anonymous RSS grew {grown:.1f} MB over 40 frames")
    assert grown < 12.0
