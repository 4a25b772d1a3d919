"""The viewer without a window: opening files in the background (progress, cache, errors,
cancelling), the panel's actions clicked through a real imgui context fed with mouse events, and
the same opening path through the real window under Xvfb (lavapipe)."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import numpy as np
import pytest
import trimesh

from renderer.apps.loader import LoadJob, cache_path


def write_sphere(path, subdivisions: int = 4) -> str:
    trimesh.creation.icosphere(subdivisions=subdivisions).export(path)
    return str(path)


@pytest.fixture(scope="module")
def sphere_obj(tmp_path_factory) -> str:
    return write_sphere(tmp_path_factory.mktemp("obj") / "ball.obj")


# ---------------------------------------------------------------------------- the loader


def test_mesh_is_preprocessed_in_the_background_with_progress_then_cached(sphere_obj,
                                                                           finish) -> None:
    out = cache_path(Path(sphere_obj))
    if out.exists():
        out.unlink()
    job = LoadJob(sphere_obj)
    seen = []
    report = job._progress
    job._progress = lambda stage, done, total: (seen.append((stage, done, total)),
                                                report(stage, done, total))
    job.start()
    assert job._thread.name == "tessera-load"
    finish(job)
    assert job.error is None, job.error
    assert job.tess == {"ball": str(out)} and out.exists() and job.built == [str(out)]
    stages = [s for s, _, _ in seen]
    assert {"cluster", "simplify", "bvh", "pack"} <= set(stages)
    assert all(0 <= d <= t for _, d, t in seen)
    assert job.fraction == 1.0 and job.stage == "done"
    # the second open uses the cache: nothing is built
    again = finish(LoadJob(sphere_obj).start())
    assert again.error is None and again.built == [] and again.tess == job.tess
    # a mesh newer than its cache, or a damaged cache, is built again
    os.utime(out, (time.time() - 100, time.time() - 100))
    assert finish(LoadJob(sphere_obj).start()).built == [str(out)]
    data = bytearray(out.read_bytes())
    data[40] ^= 0xFF
    out.write_bytes(bytes(data))
    rebuilt = finish(LoadJob(sphere_obj).start())
    assert rebuilt.error is None and rebuilt.built == [str(out)]


def test_cache_goes_to_the_cache_folder_when_the_mesh_folder_is_read_only(monkeypatch,
                                                                          tmp_path) -> None:
    from renderer.apps import loader

    monkeypatch.setattr(loader, "CACHE_DIR", tmp_path / "cache")
    monkeypatch.setattr(loader.os, "access", lambda p, mode: False)
    p = cache_path(Path("/somewhere/read/only/bunny.obj"))
    assert p.parent == tmp_path / "cache" and p.name.startswith("bunny-") and p.suffix == ".tess"
    assert p != cache_path(Path("/elsewhere/bunny.obj"))  # keyed by the full path


@pytest.mark.parametrize("content, expect", [
    ("v 0 0 0\nv 1 0 0\nv 0 1 0\n", "no triangles"),  # points only
    ("this is not an obj file {]\n", "ball"),
])
def test_a_failed_preprocess_is_one_line_and_leaves_nothing(tmp_path, content, expect,
                                                            finish) -> None:
    bad = tmp_path / "ball.obj"
    bad.write_text(content)
    job = finish(LoadJob(str(bad)).start())
    assert job.error and "\n" not in job.error and "Traceback" not in job.error
    assert "ball" in job.error
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ball.obj"]


def test_unknown_and_missing_files(tmp_path, finish) -> None:
    (tmp_path / "notes.txt").write_text("hello")
    job = finish(LoadJob(str(tmp_path / "notes.txt")).start())
    assert "cannot open .txt" in job.error and ".obj" in job.error
    job = finish(LoadJob(str(tmp_path / "gone.obj")).start())
    assert "no such file" in job.error


@pytest.mark.slow
def test_cancel_stops_a_preprocess_and_leaves_nothing(tmp_path) -> None:
    big = write_sphere(tmp_path / "big.obj", subdivisions=7)  # 327,680 triangles
    job = LoadJob(big).start()
    while job.stage in ("starting", "loading the mesh") and not job.finished.is_set():
        time.sleep(0.01)
    t0 = time.perf_counter()
    job.cancel()
    assert job.finished.is_set() and time.perf_counter() - t0 < 5.0
    assert job.error == "cancelled"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["big.obj"]


# ---------------------------------------------------------------------------- the app


@pytest.fixture
def ready_app(finish):
    """Opens `source` in a window-less app and draws its first frame."""

    def ready(source, **kw):
        from renderer.apps.viewer_app import ViewerApp, ViewerOptions

        app = ViewerApp(source, 160, 120, ViewerOptions(**kw))
        finish(app.job)
        assert app.frame(1 / 60), app.message
        return app

    return ready


@pytest.mark.gpu
def test_open_replaces_the_scene_and_a_failed_open_keeps_it(sphere_tess, sphere_obj, tmp_path,
                                                            ready_app, finish) -> None:
    app = ready_app(sphere_tess)
    assert app.title == "sphere.tess" and app.renderer.scene.instance_count == 1
    app.open(sphere_obj)  # what a file dropped on the window does
    finish(app.job)
    app.frame(1 / 60)
    assert app.title == "ball.obj" and len(app.renderer.scene.assets) == 1
    r = app.renderer.render(app.controls.camera)
    assert r.coverage.mean() > 0.05  # framed: the new scene is in view
    bad = tmp_path / "broken.obj"
    bad.write_text("v 0 0 0\n")
    app.open(str(bad))
    finish(app.job)
    assert app.frame(1 / 60)  # still drawing the ball
    assert app.title == "ball.obj" and app.message.startswith("cannot open broken.obj")
    assert app.error is not None


@pytest.mark.gpu
def test_grid_and_traversal_switch(sphere_tess, ready_app) -> None:
    app = ready_app(sphere_tess, instances=9)
    assert app.renderer.scene.instance_count == 9
    app.set_grid(20, spacing=2.0)
    assert app.renderer.scene.instance_count == 20
    app.frame_scene()
    cam = app.controls.camera
    app.set_traversal(True)
    a = app.renderer.render(cam)
    app.set_traversal(False)
    b = app.renderer.render(cam)
    assert not app.renderer.persistent
    assert a.stats.counters == b.stats.counters  # the same cut either way
    assert np.array_equal(a.triangle, b.triangle)


@pytest.mark.gpu
def test_frames_accumulate_by_default_and_the_switch_stops_it(sphere_tess, ready_app) -> None:
    app = ready_app(sphere_tess)
    assert app.taa  # on by default
    for _ in range(3):
        app.frame(1 / 60)
    r = app.renderer
    assert "accumulate" in r.stats(wait=True).passes
    assert r.frame._accumulated[3] == 3  # the fourth frame of one history
    app.taa = False  # the panel's checkbox
    app.frame(1 / 60)
    assert "accumulate" not in r.stats(wait=True).passes


@pytest.mark.gpu
def test_scene_file_camera_is_used_and_grid_copies_the_scene(sphere_tess, tmp_path,
                                                              ready_app) -> None:
    scene = tmp_path / "two.json"
    scene.write_text(json.dumps({
        "assets": {"s": sphere_tess},
        "instances": [{"asset": "s"}, {"asset": "s", "translate": [3, 0, 0], "scale": 0.5}],
        "camera": {"eye": [1, 2, 9], "target": [1, 0, 0], "fov": 50}}))
    app = ready_app(str(scene), instances=4)
    assert np.allclose(app.controls.camera.eye, [1, 2, 9]) and app.controls.camera.fov_y == 50
    assert app.renderer.scene.instance_count == 8  # 4 copies of the scene's 2 instances
    scales = sorted({round(float(m[0, 0]), 3) for m in app.renderer.scene.instance_world})
    assert scales == [0.5, 1.0]


@pytest.mark.slow
@pytest.mark.gpu
def test_panel_actions_by_fed_mouse_events(sphere_tess, ready_app, imgui_panel) -> None:
    from renderer.options import DEBUG_VIEWS

    app = ready_app(sphere_tess)
    ui = imgui_panel(app)
    try:
        assert {"LOD px", "view", "instances", "culling", "freeze culling", "screenshot"} <= set(
            app.panel_rects)
        assert app.renderer.occlusion  # on by default
        ui.click("occlusion culling", fx=0.05)
        assert not app.renderer.occlusion
        ui.click("occlusion culling", fx=0.05)
        assert app.renderer.occlusion
        ui.click("freeze culling", fx=0.05)
        assert app.freeze
        ui.click("freeze culling", fx=0.05)
        assert not app.freeze
        ui.click("temporal AA", fx=0.1)
        assert not app.taa
        ui.click("temporal AA", fx=0.1)
        assert app.taa
        sun = app.renderer.sun
        ui.click("sun", fx=0.1)  # no sun: the lights and the ambient light the scene
        assert app.renderer.sun is None
        ui.click("sun", fx=0.1)
        assert app.renderer.sun == sun
        persistent = app.renderer.persistent
        ui.click("culling", fx=0.3, item=1 if persistent else 0)
        assert app.renderer.persistent == (not persistent)
        ui.click("view", fx=0.3, item=DEBUG_VIEWS.index("cluster"))
        assert DEBUG_VIEWS[app.debug_view] == "cluster"
        ui.click("instances", fx=0.5)
        assert app.grid_count > 1 and app.renderer.scene.instance_count == app.grid_count
        tau = app.tau
        ui.click("LOD px", fx=0.6)  # the rect spans the label too: stay on the slider
        assert app.tau > tau
        cam_before = np.array(app.controls.camera.eye)
        ui.click("camera")
        assert app.controls.mode == "fly"
        ui.click("frame")
        assert not np.allclose(app.controls.camera.eye, cam_before)  # the grid, framed
        ui.click("screenshot")
        assert app.screenshot_requested and app.screenshot_requested.endswith(".png")
        # the frame drawn with the panel's settings: cluster colours, many instances
        res = app.renderer.render(app.controls.camera, tau=app.tau, debug_view=app.debug_view)
        c = res.stats.counters  # (the framed grid's far instances may be drawn by proxies)
        assert c["instances_visible"] + c["proxied_instances"] > 1
    finally:
        ui.close()


@pytest.mark.slow
@pytest.mark.gpu
def test_panel_shows_progress_and_cancel_works(tmp_path, imgui_panel, finish) -> None:
    from renderer.apps.viewer_app import ViewerApp

    big = write_sphere(tmp_path / "big.obj", subdivisions=7)
    app = ViewerApp(big, 160, 120)
    ui = imgui_panel(app)
    try:
        assert app.loading and "progress" in app.panel_rects and not app.ready
        job = app.job
        ui.click("cancel")
        finish(job)
        for _ in range(3):
            ui.frame()
        assert not app.loading and not app.ready and app.message is None
        assert sorted(p.name for p in tmp_path.iterdir()) == ["big.obj"]
    finally:
        ui.close()
        app.close()


# ---------------------------------------------------------------------------- the window


@pytest.mark.slow
@pytest.mark.gpu
def test_window_opens_a_scene_file_preprocessing_its_mesh(sphere_tess, tmp_path,
                                                          run_viewer) -> None:
    mesh = write_sphere(tmp_path / "ball.obj")
    scene = tmp_path / "scene.json"
    scene.write_text(json.dumps({"assets": {"ball": "ball.obj", "s": sphere_tess},
                                 "instances": [{"asset": "ball"},
                                               {"asset": "s", "translate": [2.5, 0, 0]}]}))
    png = tmp_path / "shot.png"
    out = run_viewer([str(scene), "--frames", "3", "--screenshot", str(png), "--size", "320x240",
                      "--no-vsync"])
    assert out.returncode == 0, out.stderr[-2000:]
    assert (tmp_path / "ball.tess").exists()  # cached beside the mesh
    from PIL import Image

    shot = np.asarray(Image.open(png).convert("RGB")).astype(int)
    right = shot[:, 200:]  # right of the panel: both spheres lit on the dark background
    assert (right.max(axis=2) > 60).mean() > 0.1
    assert os.path.getmtime(tmp_path / "ball.tess") > os.path.getmtime(mesh)


@pytest.mark.slow
@pytest.mark.gpu
def test_window_reports_a_failed_preprocess_and_exits_2(tmp_path, run_viewer) -> None:
    bad = tmp_path / "bad.obj"
    bad.write_text("v 0 0 0\nv 1 0 0\n")
    out = run_viewer([str(bad), "--frames", "2", "--size", "320x240", "--no-vsync"])
    assert out.returncode == 2, out.stderr[-2000:]
    assert "bad.obj" in out.stderr and "Traceback" not in out.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.obj"]


@pytest.mark.slow
def test_window_rejects_a_broken_scene_file_before_opening(tmp_path, run_viewer) -> None:
    scene = tmp_path / "scene.json"
    scene.write_text('{"assets": {"a": "a.tess"}, "instances": [{"asset": "b"}]}')
    out = run_viewer([str(scene), "--frames", "1"])
    assert out.returncode == 2
    assert "instances[0].asset" in out.stderr and "Traceback" not in out.stderr
