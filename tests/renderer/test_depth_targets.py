"""The depth targets pass: per-pixel velocity against closed-form answers (lavapipe, real WGSL).

The scene is a flat square (the plane z = 0 of its object space, 2 x 2, 16 x 16 quads) facing a
camera on its axis at distance D, so where the surface under every pixel is and where it was are
known in closed form:

- the camera moved sideways by (dx, dy): every point moved by (-f dx / D, +f dy / D) pixels
  (f = `Camera.lod_scale(height)`, pixels per unit at distance 1; y down);
- the camera moved forward by dz: a pixel at (u, v) from the image centre shows a point that was
  at (u, v) (D - dz) / D, so its velocity is (u, v) dz / D;
- an instance translated by (tx, ty) under a fixed camera: (+f tx / D, -f ty / D);
- anything else (a rotated instance, a tilted view): the pixel centre's ray against the plane, in
  float64 (`expected_velocity`), mapped back through the previous transforms.

Tolerance, 1e-3 px everywhere: the GPU works in float32, whose spacing at the ~100-pixel
coordinates of these images is 7.6e-6 px; the matrix products and the barycentric solve add a
few float32 roundings on values of size ~1-10, i.e. ~1e-5 px (the largest error measured on
lavapipe is 1.3e-5 px, printed by `pytest -s`). 1e-3 px leaves some 75x that, while anything
wrong (a half-pixel offset, a flipped axis, the wrong frame's matrix) is off by 0.1 px or more.
A static frame is exactly 0: where an instance's and the camera's matrices equal the previous
frame's, the shader writes 0 without arithmetic (the same products of the same inputs need not
round the same: on an NVIDIA H200 they left ~1e-6 px).
"""

from __future__ import annotations

import numpy as np
import pytest

from assets.shapes import grid_square
from preprocess.build import build_file
from preprocess.load import mesh_from_arrays
from renderer.camera import Camera
from renderer.renderer import Renderer
from renderer.options import RenderOptions
from renderer.scene import SceneError

pytestmark = pytest.mark.gpu

W, H = 96, 64  # not square: an x/y or aspect mix-up shows
D = 3.0  # the camera's distance to the plane
TOL = 1e-3  # pixels (module docstring)
PATHS = [False, True]  # fallback32: the 64-bit visibility buffer, then the 32-bit path
IDENTITY = np.eye(4)


@pytest.fixture(scope="module")
def plane_tess(tmp_path_factory, gpu) -> str:
    """The square [-1, 1]^2 x {0}, facing +z, 16 x 16 quads (512 triangles)."""
    pos, faces = grid_square(16)
    path = tmp_path_factory.mktemp("depth_targets") / "plane.tess"
    build_file(mesh_from_arrays(pos, faces, name="plane"), path)
    return str(path)


def renderer(plane_tess: str, worlds=(IDENTITY,), fallback32: bool = False) -> Renderer:
    r = Renderer(W, H, options=RenderOptions(fallback32=fallback32))
    if fallback32 and r.vis64:  # pragma: no cover - the option forces the 32-bit path
        pytest.fail("fallback32 did not select the 32-bit path")
    asset = r.load(plane_tess)
    for m in worlds:
        r.add_instance(asset, m)
    return r


def camera(x: float = 0.0, y: float = 0.0, z: float = D) -> Camera:
    """On the plane's axis (shifted by x, y), looking along -z."""
    return Camera(eye=np.array([x, y, z]), target=np.array([x, y, z - D]), near=0.01)


def translation(x: float, y: float, z: float = 0.0) -> np.ndarray:
    m = np.eye(4)
    m[:3, 3] = (x, y, z)
    return m


def pixel_centres() -> tuple[np.ndarray, np.ndarray]:
    """(H, W) x and y of every pixel centre, in pixels (x right, y down)."""
    return np.meshgrid(np.arange(W) + 0.5, np.arange(H) + 0.5)


def expected_velocity(now: Camera, before: Camera, world_now: np.ndarray,
                      world_before: np.ndarray) -> np.ndarray:
    """(H, W, 2) float64: the velocity of the point of the plane z = 0 (object space) under each
    pixel centre, from the camera matrices in float64 (NaN where the ray misses the plane)."""
    px, py = pixel_centres()
    ndc = np.stack([px / W * 2 - 1, 1 - py / H * 2], axis=-1)
    inv = np.linalg.inv(now.view_proj(W, H).astype(np.float64))

    def unproject(z: float) -> np.ndarray:  # NDC depth z (reversed: 1 on the near plane)
        p = np.concatenate([ndc, np.full((H, W, 1), z), np.ones((H, W, 1))], axis=-1) @ inv.T
        return p[..., :3] / p[..., 3:]

    p0, p1 = unproject(1.0), unproject(0.5)
    wn = np.asarray(world_now, np.float64)
    normal = np.linalg.inv(wn[:3, :3]).T @ np.array([0.0, 0.0, 1.0])
    t = ((wn[:3, 3] - p0) @ normal) / ((p1 - p0) @ normal)
    hit = p0 + t[..., None] * (p1 - p0)
    obj = np.concatenate([hit, np.ones((H, W, 1))], axis=-1) @ np.linalg.inv(wn).T
    clip = obj @ (before.view_proj(W, H).astype(np.float64) @ world_before).T
    prev = np.stack([(clip[..., 0] / clip[..., 3] * 0.5 + 0.5) * W,
                     (0.5 - clip[..., 1] / clip[..., 3] * 0.5) * H], axis=-1)
    return np.stack([px, py], axis=-1) - prev


def check(res, want, what: str) -> float:
    """Velocity equals `want` (an (H, W, 2) array or a 2-vector) on covered pixels and is 0 on the
    background; returns the largest error."""
    cov = res.coverage
    assert cov.sum() > 500, f"{what}: only {cov.sum()} pixels covered"
    want = np.broadcast_to(np.asarray(want, np.float64), res.velocity.shape)
    err = float(np.abs(res.velocity[cov] - want[cov]).max())
    assert err <= TOL, f"{what}: velocity off by {err:.3g} px"
    assert not res.velocity[~cov].any(), f"{what}: velocity on the background"
    print(f"\n[velocity] {what}: largest error {err:.2g} px on {int(cov.sum())} px")
    return err


# ------------------------------------------------------------------------------------------ camera


@pytest.mark.slow
@pytest.mark.parametrize("fallback32", PATHS)
def test_static_frames_have_zero_velocity(plane_tess, fallback32) -> None:
    r = renderer(plane_tess, fallback32=fallback32)
    cam = camera(0.1, -0.2)
    first = r.render(cam)  # the first frame: no previous one, no motion
    assert first.velocity.shape == (H, W, 2) and first.velocity.dtype == np.float32
    assert first.coverage.sum() > 500 and not first.velocity.any()
    second = r.render(cam)
    assert not second.velocity.any()
    # nothing moved: the pass is skipped and the buffer cleared (what it would write: the
    # exact 0 of a pass that runs is checked on the still instance of the test below); the
    # passes encoded are known with or without timestamps
    assert "depth_targets" not in second.stats.passes and "resolve" in second.stats.passes
    assert "depth_targets" in r.render(camera(0.2, -0.2)).stats.passes


@pytest.mark.slow
@pytest.mark.parametrize("fallback32", PATHS)
def test_sideways_camera_motion(plane_tess, fallback32) -> None:
    r = renderer(plane_tess, fallback32=fallback32)
    f = camera().lod_scale(H)
    dx, dy = 0.05, -0.03
    r.render(camera())
    res = r.render(camera(dx, dy))
    check(res, (-f * dx / D, f * dy / D), "sideways")
    # and back: the motion is measured from the previous submitted frame, not the first
    check(r.render(camera()), (f * dx / D, -f * dy / D), "sideways back")


@pytest.mark.slow
@pytest.mark.parametrize("fallback32", PATHS)
def test_forward_camera_motion(plane_tess, fallback32) -> None:
    # the velocity grows with the distance from the image centre: each pixel's own point counts
    r = renderer(plane_tess, fallback32=fallback32)
    dz = 0.2
    r.render(camera())
    res = r.render(camera(z=D - dz))
    px, py = pixel_centres()
    want = np.stack([px - W / 2, py - H / 2], axis=-1) * dz / D
    check(res, want, "forward")
    check(res, expected_velocity(camera(z=D - dz), camera(), np.eye(4), np.eye(4)),
          "forward (ray oracle)")


def test_turning_camera(plane_tess) -> None:
    # a tilted view of the plane: depth varies across the image, so perspective-correct
    # barycentrics matter; against the float64 ray oracle
    r = renderer(plane_tess)
    a = Camera(eye=np.array([0.4, -1.2, 2.6]), target=np.array([0.1, 0.0, 0.0]), near=0.01)
    b = Camera(eye=np.array([0.5, -1.0, 2.5]), target=np.array([0.0, 0.1, 0.0]), near=0.01)
    r.render(a)
    check(r.render(b), expected_velocity(b, a, np.eye(4), np.eye(4)), "turning")


def test_resize_and_a_new_scene_forget_the_previous_camera(plane_tess) -> None:
    r = renderer(plane_tess)
    r.render(camera())
    r.resize(W, H)  # another image: its pixels are not the previous frame's
    res = r.render(camera(0.05))
    assert res.coverage.any() and not res.velocity.any()
    r.clear_scene()
    r.add_instance(r.load(plane_tess))
    res = r.render(camera(0.1))
    assert res.coverage.any() and not res.velocity.any()
    f = camera().lod_scale(H)
    check(r.render(camera()), (f * 0.1 / D, 0.0), "after a new scene")


# --------------------------------------------------------------------------------------- instances


@pytest.mark.slow
@pytest.mark.parametrize("fallback32", PATHS)
def test_moved_instance_under_a_fixed_camera(plane_tess, fallback32) -> None:
    # two squares side by side, half scale; only the right one moves
    left, right = translation(-1.2, 0.0) @ np.diag([0.5, 0.5, 1, 1]), translation(1.2, 0.0)
    right = right @ np.diag([0.5, 0.5, 1, 1])
    r = renderer(plane_tess, [left, right], fallback32=fallback32)
    cam = camera()
    f = cam.lod_scale(H)
    r.render(cam)
    generation = r.frame.resources.generation
    tx, ty = 0.04, 0.07
    moved = translation(tx, ty) @ right
    r.set_transform(1, moved)
    res = r.render(cam)
    # rows rewritten in place: nothing re-uploaded
    assert r.frame.resources.generation == generation
    want = np.where((res.instance == 1)[..., None], [f * tx / D, -f * ty / D], 0.0)
    assert (res.instance == 0).sum() > 200 and (res.instance == 1).sum() > 200
    check(res, want, "translated instance")
    # the still one: exactly 0, not nearly
    assert not res.velocity[res.instance == 0].any()
    # the next frame, nothing moved: 0 again (its previous transform is now the current one)
    still = r.render(cam)
    assert still.coverage.any() and not still.velocity.any()
    # a rotation about the view axis and a tilt, against the ray oracle
    c, s = np.cos(0.3), np.sin(0.3)
    turn = np.array([[c, -s, 0, 0], [s, c, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1]])
    tilt = np.array([[1, 0, 0, 0], [0, 0.96, -0.28, 0], [0, 0.28, 0.96, 0], [0, 0, 0, 1]])
    rotated = translation(1.0, 0.1) @ turn @ tilt @ np.diag([0.5, 0.5, 1, 1])
    r.set_transform(1, rotated)
    res = r.render(cam)
    want = expected_velocity(cam, cam, rotated, moved)
    check(res, np.where((res.instance == 1)[..., None], want, 0.0), "rotated instance")


def test_camera_and_instance_motion_add_up(plane_tess) -> None:
    r = renderer(plane_tess)
    r.render(camera())
    world = translation(0.1, -0.05, 0.2)
    r.set_transform(0, world)
    now = camera(-0.04, 0.02, D + 0.1)
    check(r.render(now), expected_velocity(now, camera(), world, np.eye(4)), "camera and instance")


def test_moves_between_frames_keep_the_first_previous_transform(plane_tess) -> None:
    # several set_transform calls between two frames: the motion is from the last frame's
    # transform to the newest one; the caller's array may be changed in place between calls
    r = renderer(plane_tess)
    cam = camera()
    f = cam.lod_scale(H)
    r.render(cam)
    m = translation(0.02, 0.0)
    r.set_transform(0, m)
    m[0, 3] = 0.05
    r.set_transform(0, m)
    m[0, 3] = 99.0  # after the call: not the instance's transform
    check(r.render(cam), (f * 0.05 / D, 0.0), "two moves in one frame")


@pytest.mark.slow
def test_an_instance_moved_before_its_first_frame_has_no_motion(plane_tess) -> None:
    r = renderer(plane_tess)
    cam = camera()
    r.render(cam)
    new = r.add_instance(0, translation(-1.0, 0.5) @ np.diag([0.3, 0.3, 1, 1]))
    r.set_transform(new, translation(-1.2, 0.5) @ np.diag([0.3, 0.3, 1, 1]))
    r.set_transform(0, translation(0.5, 0.0) @ np.diag([0.5, 0.5, 1, 1]))  # and 0 really moves
    res = r.render(cam)
    assert (res.instance == new).sum() > 50
    assert not res.velocity[res.instance == new].any()
    assert np.abs(res.velocity[res.instance == 0]).max() > 1.0
    # after clear_instances the indices start again: instance 0 is new
    r.scene.clear_instances()
    r.add_instance(0)
    r.set_transform(0, translation(0.1, 0.0))
    res = r.render(cam)
    assert res.coverage.any() and not res.velocity.any()


def test_set_transform_checks_like_add_instance(plane_tess) -> None:
    r = renderer(plane_tess)
    for bad in (-1, 1, True, 0.0):
        with pytest.raises(SceneError, match="no instance"):
            r.set_transform(bad, np.eye(4))
    with pytest.raises(SceneError, match="finite"):
        r.set_transform(0, np.full((4, 4), np.nan))
    with pytest.raises(SceneError, match="finite"):
        r.set_transform(0, np.eye(3))
    with pytest.raises(SceneError, match="singular"):
        r.set_transform(0, np.diag([1.0, 0.0, 1.0, 1.0]))
    with pytest.raises(ValueError, match="MAX_WORLD"):
        r.set_transform(0, translation(1e19, 0.0))
    assert not r.scene.moved  # nothing half done
    res = r.render(camera())
    assert res.coverage.any() and not res.velocity.any()
