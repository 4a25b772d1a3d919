"""The viewer: camera controls fed with events (no window), and the real window under Xvfb with
lavapipe: its screenshot equals the headless render of the same camera outside the panel, and the
panel is drawn."""

from __future__ import annotations

import numpy as np
import pytest

from renderer.camera import Camera
from renderer.apps.controls import CameraControls


def controls() -> CameraControls:
    return CameraControls(Camera(eye=np.array([0.0, 0.0, 5.0]), target=np.zeros(3)),
                          scene_radius=1.0)


def test_orbit_drag_keeps_distance_and_target() -> None:
    c = controls()
    c.handle_event({"event_type": "pointer_down", "x": 100, "y": 100, "button": 1})
    assert c.handle_event({"event_type": "pointer_move", "x": 200, "y": 130})
    c.handle_event({"event_type": "pointer_up", "x": 200, "y": 130})
    eye = np.asarray(c.camera.eye)
    assert np.allclose(np.linalg.norm(eye), 5.0)  # orbit: same distance to the target
    assert np.allclose(c.camera.target, 0.0)
    assert eye[0] < -0.5  # dragging right swings the camera to the left of the target
    assert eye[1] > 0.3  # dragging down raises it
    # moving without a button held does nothing
    before = eye.copy()
    assert not c.handle_event({"event_type": "pointer_move", "x": 300, "y": 300})
    assert np.allclose(c.camera.eye, before)


def test_orbit_never_flips_over_the_pole() -> None:
    c = controls()
    c.handle_event({"event_type": "pointer_down", "x": 0, "y": 0, "button": 1})
    c.handle_event({"event_type": "pointer_move", "x": 0, "y": 5000})
    up = float(np.dot(np.asarray(c.camera.eye) / 5.0, [0, 1, 0]))
    assert 0.9 < up < 1.0  # clamped short of straight up


def test_wheel_zooms_and_pan_moves_both() -> None:
    c = controls()
    c.handle_event({"event_type": "wheel", "dy": 1.0})
    assert np.isclose(np.linalg.norm(c.camera.eye), 5.5)
    c.handle_event({"event_type": "wheel", "dy": -2.0})
    assert np.isclose(np.linalg.norm(c.camera.eye), 5.5 / 1.21)
    c.handle_event({"event_type": "pointer_down", "x": 0, "y": 0, "button": 2})
    c.handle_event({"event_type": "pointer_move", "x": 50, "y": 0})
    assert c.camera.target[0] < 0 and np.isclose(c.camera.eye[0], c.camera.target[0])


def test_fly_keys_move_with_scene_sized_speed() -> None:
    c = controls()
    c.handle_event({"event_type": "key_down", "key": "Tab"})
    assert c.mode == "fly"
    c.scene_radius = 10.0
    c.handle_event({"event_type": "key_down", "key": "w"})
    assert c.update(1.0)
    assert np.allclose(c.camera.eye, [0, 0, 0])  # 0.5 radii per second towards -z: 5 units
    c.handle_event({"event_type": "key_down", "key": "Shift"})
    c.update(0.5)
    assert np.allclose(c.camera.eye, [0, 0, -10])  # 4x with shift
    c.handle_event({"event_type": "key_up", "key": "w"})
    c.handle_event({"event_type": "key_up", "key": "Shift"})
    assert not c.update(1.0)
    # mouse look turns the view in place
    c.handle_event({"event_type": "pointer_down", "x": 0, "y": 0, "button": 1})
    c.handle_event({"event_type": "pointer_move", "x": 100, "y": 0})
    assert np.allclose(c.camera.eye, [0, 0, -10])
    assert not np.allclose(c.camera.target, [0, 0, -15])


def test_frame_scene_looks_at_the_whole_scene() -> None:
    c = controls()
    c.frame_scene(np.array([10.0, 0, 0]), 2.0)
    assert np.allclose(c.camera.target, [10, 0, 0])
    assert np.isclose(np.linalg.norm(np.asarray(c.camera.eye) - [10, 0, 0]), 2.0 / np.sin(
        np.radians(30)))


@pytest.mark.slow
@pytest.mark.gpu
def test_window_screenshot_matches_headless_render(sphere_tess, tmp_path, run_viewer) -> None:
    from renderer.renderer import Renderer
    from renderer.apps.viewer_app import PANEL_WIDTH, TAA_FRAMES

    png = tmp_path / "shot.png"
    eye, size = (0.6, 0.5, 2.6), (640, 360)
    out = run_viewer([str(sphere_tess), "--frames", "4", "--screenshot", str(png), "--size",
                      f"{size[0]}x{size[1]}", "--no-vsync", "--eye", ",".join(map(str, eye)),
                      "--near", "0.01"])
    assert out.returncode == 0, out.stderr[-2000:]
    from PIL import Image

    shot = np.asarray(Image.open(png).convert("RGBA"))
    assert shot.shape == (size[1], size[0], 4)
    r = Renderer(*size)
    r.add_instance(r.load(sphere_tess))
    cam = Camera(eye=np.array(eye), target=np.zeros(3), near=0.01)
    for _ in range(3):  # the viewer's temporal AA, on by default: the same 4 jittered frames
        r.submit(cam, accumulate=TAA_FRAMES)
    ref = r.render(cam, accumulate=TAA_FRAMES).color
    # right of the panel the window shows the renderer's color buffer, blitted pixel for pixel
    right = slice(PANEL_WIDTH + 24, None)
    diff = np.abs(shot[:, right, :3].astype(int) - ref[:, right, :3].astype(int)).max(axis=2)
    assert (diff <= 1).mean() >= 0.999, f"{(diff > 1).mean():.4%} of the pixels differ"
    assert (ref[:, right, :3] != ref[0, -1, :3]).any(axis=2).mean() > 0.05  # the sphere is there
    # the panel covers the top left: there the window differs from the render
    panel = np.abs(shot[10:60, 10:PANEL_WIDTH, :3].astype(int)
                   - ref[10:60, 10:PANEL_WIDTH, :3].astype(int)).max(axis=2)
    assert (panel > 8).mean() > 0.5


@pytest.mark.slow
def test_missing_file_is_one_line_exit_2(tmp_path, run_viewer) -> None:
    out = run_viewer([str(tmp_path / "nope.tess"), "--frames", "1"])
    assert out.returncode == 2
    assert "no such file" in out.stderr and "Traceback" not in out.stderr


@pytest.mark.gpu
def test_freeze_culling_keeps_the_culled_set(sphere_tess) -> None:
    # the panel's "freeze culling": later frames draw the clusters the frozen frame chose
    from renderer.renderer import Renderer

    r = Renderer(64, 64)
    r.add_instance(r.load(sphere_tess))
    near = Camera(eye=np.array([0.0, 0.0, 1.6]), target=np.zeros(3), near=0.01)
    far = Camera(eye=np.array([0.0, 0.0, 40.0]), target=np.zeros(3), near=0.01)
    a = r.render(near, tau=1.0)
    chosen = r.read_visible()
    b = r.render(far, tau=1.0, freeze_culling=True)
    assert b.stats.counters == a.stats.counters
    for k in ("sw", "hw"):
        assert np.array_equal(r.read_visible()[k], chosen[k])
    assert b.coverage.sum() < a.coverage.sum()  # drawn from the far camera
    c = r.render(far, tau=1.0)  # unfrozen: culled again, far fewer triangles
    assert c.stats.triangles < a.stats.triangles
