"""Scene files: parsing, one-line errors that name the entry at fault, placing instances, and
`tessera render scene.json` against the same scene built through the Python API."""

from __future__ import annotations

import json

import numpy as np
import pytest

from renderer.apps.scene_file import SceneFileError, load_scene_file, parse_scene


def test_parse_places_instances_and_grids(tmp_path) -> None:
    spec = parse_scene({
        "assets": {"a": "meshes/a.obj", "b": "/abs/b.tess"},
        "instances": [
            {"asset": "a", "translate": [1, 2, 3], "rotate": [0, 90, 0], "scale": 2},
            {"asset": "b", "matrix": [[1, 0, 0, 4], [0, 1, 0, 5], [0, 0, 1, 6], [0, 0, 0, 1]]},
            {"asset": "a", "scale": [1, 2, 3]}],
        "grids": [{"asset": "b", "count": 9, "spacing": 2.5, "origin": [0, 0, -10]}],
        "camera": {"eye": [0, 1, 5]}, "sun": {"azimuth": 200, "elevation": 20}},
        tmp_path / "scene.json")
    assert spec.assets["a"] == (tmp_path / "meshes" / "a.obj").resolve()
    assert str(spec.assets["b"]) == "/abs/b.tess"
    m = spec.placements[0].matrix
    # rotate 90 degrees about Y, then scale 2: x goes to -z
    assert np.allclose(m[:3, :3] @ [1, 0, 0], [0, 0, -2], atol=1e-6)
    assert np.allclose(m[:3, 3], [1, 2, 3])
    assert np.allclose(spec.placements[1].matrix[:3, 3], [4, 5, 6])
    assert np.allclose(np.diag(spec.placements[2].matrix)[:3], [1, 2, 3])
    g = spec.placements[3]
    assert g.matrix is None and g.count == 9 and g.spacing == 2.5
    assert np.allclose(spec.camera.eye, [0, 1, 5]) and np.allclose(spec.camera.target, 0)
    assert spec.sun == (200, 20)


@pytest.mark.parametrize("data, where", [
    ([], "top level"),
    ({"assets": {}}, "'assets'"),
    ({"assets": {"a": "a.tess"}}, "places nothing"),
    ({"assets": {"a": "a.tess"}, "instances": [{"asset": "b"}]}, "instances[0].asset"),
    ({"assets": {"a": "a.tess"}, "instances": [{"asset": "a", "translate": [1, 2]}]},
     "instances[0].translate"),
    ({"assets": {"a": "a.tess"}, "instances": [{"asset": "a", "scale": 0}]},
     "instances[0].scale"),
    ({"assets": {"a": "a.tess"}, "instances": [{"asset": "a", "scale": [1, -1, 1]}]},
     "instances[0].scale"),
    ({"assets": {"a": "a.tess"}, "instances": [{"asset": "a", "matrix": [[1, 0, 0, 0]] * 4}]},
     "last row"),
    ({"assets": {"a": "a.tess"}, "instances": [{"asset": "a", "matrix": np.eye(4).tolist(),
                                                 "scale": 2}]}, "not both"),
    ({"assets": {"a": "a.tess"}, "instances": [{"asset": "a", "translate": [0, 0, "x"]}]},
     "instances[0].translate"),
    ({"assets": {"a": "a.tess"}, "instances": [{"asset": "a", "colour": "red"}]}, "'colour'"),
    ({"assets": {"a": "a.tess"}, "grids": [{"asset": "a", "count": 0}]}, "grids[0].count"),
    ({"assets": {"a": "a.tess"}, "grids": [{"asset": "a", "count": 2.5}]}, "grids[0].count"),
    ({"assets": {"a": "a.tess"}, "grids": [{"asset": "a", "count": 4, "spacing": -1}]},
     "grids[0].spacing"),
    ({"assets": {"a": "a.tess"}, "grids": [{"asset": "a", "count": 4}], "camera": {}},
     "camera.eye"),
    ({"assets": {"a": "a.tess"}, "grids": [{"asset": "a", "count": 4}],
      "camera": {"eye": [0, 0, 0]}}, "same point"),
    ({"assets": {"a": "a.tess"}, "grids": [{"asset": "a", "count": 4}],
      "camera": {"eye": [0, 0, 1], "fov": 200}}, "camera.fov"),
    ({"assets": {"a": "a.tess"}, "grids": [{"asset": "a", "count": 4}], "lights": {}},
     "'lights'"),
    ({"assets": {"a": "a.tess"}, "grids": [{"asset": "a", "count": 4}],
      "lights": [{"type": "area", "position": [0, 1, 0]}]}, "lights[0].type"),
    ({"assets": {"a": "a.tess"}, "grids": [{"asset": "a", "count": 4}],
      "lights": [{"type": "point"}]}, "lights[0].position"),
    ({"assets": {"a": "a.tess"}, "grids": [{"asset": "a", "count": 4}],
      "lights": [{"type": "point", "position": [0, 1, 0], "intensity": float("nan")}]},
     "lights[0].intensity"),
    ({"assets": {"a": "a.tess"}, "grids": [{"asset": "a", "count": 4}],
      "lights": [{"type": "point", "position": [0, 1, 0], "intensity": -1}]},
     "lights[0]: Light.intensity"),
    ({"assets": {"a": "a.tess"}, "grids": [{"asset": "a", "count": 4}],
      "lights": [{"type": "spot", "position": [0, 1, 0], "inner_cone": 40,
                  "outer_cone": 30}]}, "lights[0]: a spot light's cones"),
    ({"assets": {"a": "a.tess"}, "grids": [{"asset": "a", "count": 4}],
      "lights": [{"type": "point", "position": [0, 1, 0], "shadow": False}]}, "'shadow'"),
    ({"assets": {"a": "a.tess"}, "grids": [{"asset": "a", "count": 4}],
      "lights": [{"type": "point", "position": [0, 1, 0]}] * 17}, "at most 16"),
])
def test_errors_name_the_entry(tmp_path, data, where) -> None:
    with pytest.raises(SceneFileError) as e:
        parse_scene(data, tmp_path / "s.json")
    msg = str(e.value)
    assert msg.startswith(str(tmp_path / "s.json")) and where in msg and "\n" not in msg


def test_unreadable_files(tmp_path) -> None:
    with pytest.raises(SceneFileError, match="no such file"):
        load_scene_file(tmp_path / "none.json")
    (tmp_path / "bad.json").write_text('{"assets": {"a": "a.tess"},\n "instances": [}')
    with pytest.raises(SceneFileError, match=r"not valid JSON: .*line 2"):
        load_scene_file(tmp_path / "bad.json")


@pytest.mark.slow
@pytest.mark.gpu
def test_render_scene_file_equals_the_api(sphere_tess, tmp_path) -> None:
    from renderer.apps import cli
    from renderer.camera import Camera
    from renderer.renderer import Renderer

    scene = tmp_path / "scene.json"
    scene.write_text(json.dumps({
        "assets": {"s": str(sphere_tess)},
        "instances": [{"asset": "s", "translate": [-1.2, 0, 0]},
                      {"asset": "s", "translate": [1.2, 0, 0], "rotate": [0, 0, 30],
                       "scale": 0.7}],
        "grids": [{"asset": "s", "count": 4, "spacing": 2.2, "origin": [0, 0, -4]}],
        "camera": {"eye": [0, 3, 7], "target": [0, 0, -1], "fov": 55}}))
    arrays = tmp_path / "a.npz"
    assert cli.main(["render", str(scene), "-o", str(tmp_path / "s.png"), "--size", "160x120",
                     "--arrays", str(arrays)]) == 0
    got = np.load(arrays)
    r = Renderer(160, 120)
    a = r.load(sphere_tess)
    r.add_instance(a, _translate(-1.2, 0, 0))
    m = _translate(1.2, 0, 0)
    c, s = np.cos(np.radians(30)), np.sin(np.radians(30))
    m[:3, :3] = np.array([[c, -s, 0], [s, c, 0], [0, 0, 1]]) * 0.7
    r.add_instance(a, m)
    r.add_grid(a, 4, spacing=2.2, origin=(0, 0, -4))
    ref = r.render(Camera(eye=np.array([0.0, 3, 7]), target=np.array([0.0, 0, -1]), fov_y=55))
    assert r.scene.instance_count == 6
    assert np.array_equal(got["instance"], ref.instance)
    assert np.array_equal(got["triangle"], ref.triangle)
    assert len(np.unique(ref.instance[ref.coverage])) == 6  # every instance is in view


def _translate(x, y, z) -> np.ndarray:
    m = np.eye(4, dtype=np.float32)
    m[:3, 3] = [x, y, z]
    return m


@pytest.mark.gpu
def test_render_scene_file_errors_are_one_line(tmp_path, capsys) -> None:
    from renderer.apps import cli

    scene = tmp_path / "scene.json"
    scene.write_text(json.dumps({"assets": {"s": "missing.tess"},
                                 "instances": [{"asset": "s"}]}))
    assert cli.main(["render", str(scene), "-o", str(tmp_path / "x.png")]) == 2
    err = capsys.readouterr().err
    assert "missing.tess: no such file" in err and err.count("\n") == 1
