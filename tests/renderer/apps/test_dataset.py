"""`tessera dataset` (issue 36; renderer/apps/dataset.py, `Renderer.render_many`): a scene from
many cameras in one process, each frame the single render's, the cameras' conventions checked
by putting every depth pixel back on the surface it shows."""

from __future__ import annotations

import json

import numpy as np
import pytest
import trimesh

from preprocess.build import build_file
from renderer import Renderer, RenderOptions
from renderer.apps.cli import main
from renderer.apps.dataset import camera_set

SIZE = 96


@pytest.fixture(scope="module")
def ball(tmp_path_factory):
    """A unit sphere (icosphere, 5,120 triangles) at (0.5, 0, -0.25)."""
    folder = tmp_path_factory.mktemp("ball")
    m = trimesh.creation.icosphere(4, 1.0)
    m.apply_translation((0.5, 0.0, -0.25))
    m.export(folder / "ball.ply")
    build_file(folder / "ball.ply", folder / "ball.tess")
    return folder / "ball.tess"


def test_every_depth_pixel_goes_back_onto_the_sphere_through_both_conventions(ball, tmp_path,
                                                                              gpu):
    out = tmp_path / "ds"
    assert main(["dataset", str(ball), "-O", str(out), "--cameras", "random:6:3", "--size",
                 f"{SIZE}x{SIZE}", "--outputs", "depth,normal,ids,velocity", "--tau", "0.5",
                 "--no-shadows"]) == 0
    cams = json.loads((out / "cameras.json").read_text())
    nerf = json.loads((out / "transforms.json").read_text())
    assert len(cams["frames"]) == len(nerf["frames"]) == 6
    centre = np.array([0.5, 0.0, -0.25])
    v, u = np.mgrid[0:SIZE, 0:SIZE].astype(np.float64)
    for k, (cv, nf) in enumerate(zip(cams["frames"], nerf["frames"], strict=True)):
        a = np.load(out / "arrays" / f"{k:05d}.npz")
        assert (out / nf["file_path"]).is_file()
        d = a["depth"].astype(np.float64)
        on = np.isfinite(d)
        assert 0.05 < on.mean() < 0.95
        assert np.array_equal(on, a["instance"] == 0) and (a["instance"][~on] == -1).all()
        kk, r, t = (np.array(cv[x]) for x in ("K", "R", "t"))
        # OpenCV: X_cam = ((u - cx) d / fx, (v - cy) d / fy, d), world = R^T (X_cam - t)
        cam_pts = np.stack([(u - kk[0, 2]) * d / kk[0, 0], (v - kk[1, 2]) * d / kk[1, 1], d], -1)
        world = (cam_pts[on] - t) @ r
        footprint = d[on] / kk[0, 0]  # a pixel's size at that depth
        off = np.abs(np.linalg.norm(world - centre, axis=1) - 1.0)
        assert (off <= footprint).all(), off.max() / footprint.max()
        # NeRF: the camera-to-world matrix (OpenGL axes), pixel edges at whole coordinates
        c2w = np.array(nf["transform_matrix"])
        fx, cx, cy = nerf["fl_x"], nerf["cx"], nerf["cy"]
        rays = np.stack([(u + 0.5 - cx) / fx, -(v + 0.5 - cy) / fx, -np.ones_like(u)], -1)
        world2 = rays[on] * d[on, None] @ c2w[:3, :3].T + c2w[:3, 3]
        assert np.allclose(world2, world, atol=1e-4)
        # the normals: outward, the sphere's, within the mesh's facets
        n = a["normal"][on]
        assert (np.einsum("ij,ij->i", n, (world - centre)) > 0.98).all()


def test_render_many_gives_each_camera_s_single_render(ball, gpu):
    r = Renderer(SIZE, SIZE, ctx=gpu, options=RenderOptions(shadows=True))
    r.add_instance(r.load(ball))
    cams = camera_set("orbit:5", *r.bounds(), 60.0)
    many = list(r.render_many(cams, in_flight=3))
    assert [m.stats.frame for m in many] == list(range(5))
    for cam, m in zip(cams, many, strict=True):
        one = r.render(cam)
        for k in ("color", "depth", "normal", "instance", "cluster", "triangle", "material"):
            assert np.array_equal(getattr(m, k), getattr(one, k)), k
    # the flow: from the frame before (none in the first)
    assert not many[0].velocity.any() and np.abs(many[1].velocity).max() > 1


@pytest.mark.parametrize("cameras,why", [
    ('[{"eye": [0, 0, NaN], "target": [0, 0, 0]}]', "eye must be three finite numbers"),
    ('[{"eye": [0, 0, 3], "target": [0, 0, 3]}]', "camera 0:"),
    ('{"eye": [0, 0, 3]}', "a JSON list of cameras"),
    ('[{"eye": [0, 0, 3], "target": [0, 0, 0], "zoom": 2}]', "unknown key 'zoom'"),
    ("orbit:0", "orbit:N with N >= 1"), ("spiral:3", "neither orbit:N"),
])
def test_bad_cameras_are_one_line_and_nothing_written(ball, tmp_path, gpu, capsys, cameras,
                                                      why):
    spec = cameras
    if cameras.startswith(("[", "{")):
        (tmp_path / "cams.json").write_text(cameras)
        spec = str(tmp_path / "cams.json")
    out = tmp_path / "ds"
    assert main(["dataset", str(ball), "-O", str(out), "--cameras", spec, "--size",
                 "32x32"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and why in err[0], err
    assert not out.exists()


def test_a_camera_file_draws_where_it_says(ball, tmp_path, gpu):
    cams = [{"eye": [0.5, 0.0, 3.0], "target": [0.5, 0.0, -0.25], "fov": 40},
            {"eye": [3.5, 1.0, -0.25], "target": [0.5, 0.0, -0.25], "up": [0, 1, 0]}]
    (tmp_path / "cams.json").write_text(json.dumps(cams))
    out = tmp_path / "ds"
    assert main(["dataset", str(ball), "-O", str(out), "--cameras", str(tmp_path / "cams.json"),
                 "--size", "48x48", "--outputs", "depth"]) == 0
    nerf = json.loads((out / "transforms.json").read_text())
    assert np.allclose(np.array(nerf["frames"][0]["transform_matrix"])[:3, 3], [0.5, 0, 3])
    assert nerf["frames"][1]["fl_x"] != nerf["fl_x"]  # its own field of view (60)
    d = np.load(out / "arrays" / "00000.npz")["depth"]
    assert abs(float(d[24, 24]) - 2.25) < 0.01  # straight at the sphere: 3 - (-0.25) - 1


def test_a_dataset_on_a_local_ray_cluster_is_the_one_drawn_here(ball, tmp_path, gpu):
    # chunks of consecutive cameras as Ray tasks (2 CPUs), a renderer each, the frame before a
    # chunk drawn first: every file the same as one process writes, the flow included
    pytest.importorskip("ray", reason="the 'ray' extra (make setup installs it)")
    common = [str(ball), "--cameras", "orbit:6", "--size", "48x48", "--outputs",
              "depth,ids,velocity", "--no-shadows"]
    assert main(["dataset", *common, "-O", str(tmp_path / "here")]) == 0
    assert main(["dataset", *common, "-O", str(tmp_path / "ray"), "--ray", "local",
                 "--jobs", "2"]) == 0
    for k in range(6):
        png = f"images/{k:05d}.png"
        assert (tmp_path / "ray" / png).read_bytes() == (tmp_path / "here" / png).read_bytes()
        a, b = (np.load(tmp_path / d / "arrays" / f"{k:05d}.npz") for d in ("here", "ray"))
        for name in ("depth", "instance", "velocity"):
            assert np.array_equal(a[name], b[name]), (k, name)
    for doc in ("cameras.json", "transforms.json"):
        assert (tmp_path / "ray" / doc).read_text() == (tmp_path / "here" / doc).read_text()
