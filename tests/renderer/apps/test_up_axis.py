"""`--up y|z` wherever the apps read a mesh file: `preprocess` and `tessera preprocess` (the meta
and `tessera info`), `tessera render` and the viewer's loader (the cache follows the up axis
asked for), scene files (`{"file": ..., "up": "z"}`); one-line errors with exit status 2 where it
does not apply. The GPU test renders a Z-up box from the side: upright with `--up z`, lying
down without.

The box, Z-up, 3 tall and 1 wide:

      z
      |__
      |  |
      |  |  3
      |__|____ x (and y)
       1
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import trimesh

from preprocess.tess import read_tess
from renderer.apps import cli as tessera_cli
from renderer.apps import preprocess_cli
from renderer.apps.loader import LoadJob, cache_path
from renderer.apps.scene_file import SceneFileError, parse_scene


def write_tall_box(path: Path) -> Path:
    """A closed box 1 x 1 x 3, standing on z = 0 (Z-up), counter-clockwise from outside."""
    box = trimesh.creation.box(extents=(1.0, 1.0, 3.0))
    box.apply_translation((0.0, 0.0, 1.5))
    assert box.is_winding_consistent and box.volume > 0
    box.export(path)
    return path


def up_of(tess: str | Path) -> tuple[str, np.ndarray]:
    """(the meta's up axis, the bounds' extent) of a .tess file."""
    with read_tess(tess) as f:
        return f.meta.get("up", "y"), np.subtract(f.meta["bounds_max"], f.meta["bounds_min"])


def test_preprocess_up_z_builds_upright_and_info_says_so(tmp_path, capsys) -> None:
    obj = write_tall_box(tmp_path / "box.obj")
    assert preprocess_cli.main([str(obj), "--up", "z", "-q"]) == 0
    up, extent = up_of(obj.with_suffix(".tess"))
    assert up == "z" and extent.argmax() == 1
    np.testing.assert_allclose(extent, [1, 3, 1], atol=1e-3)
    assert tessera_cli.main(["info", str(obj.with_suffix(".tess"))]) == 0
    assert "up axis       Z in the source, turned Y-up when built" in capsys.readouterr().out
    assert tessera_cli.main(["preprocess", str(obj), "-o", str(tmp_path / "y.tess"), "-q"]) == 0
    assert up_of(tmp_path / "y.tess")[0] == "y" and up_of(tmp_path / "y.tess")[1].argmax() == 2


@pytest.mark.parametrize("main, args, message", [
    (preprocess_cli.main, ["{obj}", "--up", "x"], "argument --up: invalid choice: 'x'"),
    (preprocess_cli.main, ["--builtin", "sphere", "--up", "z"], "the built-in assets are Y-up"),
    (tessera_cli.main, ["render", "{obj}", "--up", "Z"], "argument --up: invalid choice"),
    (tessera_cli.main, ["render", "{tess}", "--up", "z"], "is built already"),
    (tessera_cli.main, ["render", "{json}", "--up", "z"], "a scene file gives each mesh"),
    (tessera_cli.main, ["view", "--up", "z"], "the built-in rock is Y-up"),
])
def test_up_where_it_does_not_apply_is_one_line_exit_2(tmp_path, main, args, message,
                                                       capsys) -> None:
    files = {"{obj}": str(write_tall_box(tmp_path / "box.obj")),
             "{tess}": str(tmp_path / "box.tess"), "{json}": str(tmp_path / "scene.json")}
    Path(files["{tess}"]).write_bytes(b"not read")
    Path(files["{json}"]).write_text("{}")
    args = [files.get(a, a) for a in args]
    try:
        status = main(args)
    except SystemExit as e:  # argparse
        status = e.code
    assert status == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and "Traceback" not in err


def test_loader_cache_follows_the_up_axis_asked_for(tmp_path, finish) -> None:
    obj = write_tall_box(tmp_path / "box.obj")
    out = cache_path(obj)
    job = finish(LoadJob(str(obj), up="z").start())
    assert job.error is None and job.built == [str(out)] and up_of(out)[0] == "z"
    # no up axis asked for: the cached file, whatever it was built with
    assert finish(LoadJob(str(obj)).start()).built == []
    assert finish(LoadJob(str(obj), up="z").start()).built == []
    # another up axis: built again
    again = finish(LoadJob(str(obj), up="y").start())
    assert again.built == [str(out)] and up_of(out)[0] == "y" and up_of(out)[1].argmax() == 2
    assert "an up axis applies to a mesh file" in finish(LoadJob(str(out), up="z").start()).error


def test_scene_file_gives_a_mesh_its_up_axis(tmp_path, finish) -> None:
    write_tall_box(tmp_path / "box.obj")
    scene = {"assets": {"box": {"file": "box.obj", "up": "z"}, "plain": "box.tess"},
             "instances": [{"asset": "box"}]}
    spec = parse_scene(scene, tmp_path / "s.json")
    assert spec.up == {"box": "z"} and spec.assets["box"] == (tmp_path / "box.obj").resolve()
    del scene["assets"]["plain"]  # not there: the loader would look for it
    (tmp_path / "s.json").write_text(json.dumps(scene))
    job = finish(LoadJob(str(tmp_path / "s.json")).start())
    assert job.error is None, job.error
    up, extent = up_of(job.tess["box"])
    assert up == "z" and extent.argmax() == 1


@pytest.mark.parametrize("asset, where", [
    ({"file": "a.obj", "up": "x"}, "assets.a.up: expected one of 'y', 'z', got 'x'"),
    ({"file": "a.tess", "up": "z"}, "assets.a.up: an up axis applies to a mesh file"),
    ({"file": "a.obj", "upp": "z"}, "assets.a: unknown key 'upp'"),
    ({"up": "z"}, "assets.a: expected a file path"),
])
def test_scene_file_up_errors_name_the_entry(tmp_path, asset, where) -> None:
    with pytest.raises(SceneFileError) as e:
        parse_scene({"assets": {"a": asset}, "instances": [{"asset": "a"}]}, tmp_path / "s.json")
    assert where in str(e.value) and "\n" not in str(e.value)


def silhouette(npz: Path) -> tuple[int, int]:
    """(height, width) in pixels of what covers the image, whose faces all face the camera
    (the side view looks along -X: an inside-out box would show its far side, normals -X)."""
    arrays = np.load(npz)
    covered = arrays["instance"] >= 0
    assert (arrays["normal"][covered][:, 0] > 0.99).all()
    rows, cols = np.nonzero(covered)
    return int(rows.max() - rows.min() + 1), int(cols.max() - cols.min() + 1)


@pytest.mark.slow
@pytest.mark.gpu
def test_render_up_z_shows_the_box_upright(tmp_path, capsys) -> None:
    obj = write_tall_box(tmp_path / "box.obj")
    common = ["render", str(obj), "--view", "side", "--size", "96x96", "-o",
              str(tmp_path / "r.png")]
    assert tessera_cli.main([*common, "--up", "z", "--arrays", str(tmp_path / "z.npz")]) == 0
    h, w = silhouette(tmp_path / "z.npz")
    assert h > 2 * w  # 3 tall, 1 wide
    # the same file as Y-up (the cache is rebuilt for it): lying along the view's horizontal
    assert tessera_cli.main([*common, "--up", "y", "--arrays", str(tmp_path / "y.npz")]) == 0
    h, w = silhouette(tmp_path / "y.npz")
    assert w > 2 * h
    capsys.readouterr()


@pytest.mark.gpu
def test_viewer_opens_its_first_file_with_the_up_axis_given(tmp_path, finish) -> None:
    from renderer.apps.viewer_app import ViewerApp, ViewerOptions

    obj = write_tall_box(tmp_path / "box.obj")
    app = ViewerApp(str(obj), 64, 64, ViewerOptions(up="z"))
    finish(app.job)
    assert app.job.up == "z" and up_of(app.job.tess["box"])[0] == "z"
    assert app.frame(1 / 60), app.message
