"""glTF scenes as authored (issue 16): one asset per distinct mesh, one instance per node, node
transforms composed down the tree (matrix or T * R * S), mirrored nodes, and the `preprocess`
command's scene files. The scene (`gltf_street` in tests/conftest.py) is written in the tests."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest
import trimesh

from preprocess.load import load_mesh
from preprocess.mesh import MeshWarning
from preprocess.scene_import import read_scene
from renderer.apps.preprocess_cli import main as preprocess_main
from renderer.apps.scene_file import load_scene_file


def test_a_scene_keeps_its_meshes_once_and_its_nodes_as_instances(tmp_path, gltf_street):
    scene = read_scene(gltf_street.write(tmp_path / "street.glb"))
    assert scene is not None
    assert sorted(scene.meshes) == ["ball", "post", "post-mirrored"]
    assert scene.meshes["post"].triangle_count == 12
    names = [n for n, _ in scene.instances]
    assert names == ["post", "post", "post-mirrored", "ball"]
    want = gltf_street.worlds()
    for (name, world), w in zip(scene.instances, want, strict=True):
        if name.endswith("mirrored"):  # the mirror moved into the mesh: world @ mirror
            w = w @ np.diag([-1.0, 1.0, 1.0, 1.0])
        np.testing.assert_allclose(world, w, atol=1e-12)
        assert np.linalg.det(world[:3, :3]) > 0  # no instance transform mirrors
    # placed, every instance's triangles are where the flattened file has them
    placed = []
    for name, world in scene.instances:
        m = scene.meshes[name]
        p = m.positions[m.wedge_position[m.triangles]].reshape(-1, 3).astype(np.float64)
        placed.append((np.c_[p, np.ones(len(p))] @ world.T)[:, :3])
    flat = load_mesh(tmp_path / "street.glb")
    got = np.unique(np.round(np.concatenate(placed), 5), axis=0)
    ref = np.unique(np.round(flat.positions.astype(np.float64), 5), axis=0)
    np.testing.assert_allclose(got, ref, atol=1e-5)
    # and the mirrored copy keeps its triangles outward: its signed volume is positive
    m = scene.meshes["post-mirrored"]
    p = m.positions[m.wedge_position[m.triangles]].astype(np.float64)
    assert np.einsum("ij,ij->i", p[:, 0], np.cross(p[:, 1], p[:, 2])).sum() > 0


def test_one_mesh_in_one_node_is_no_scene(tmp_path):
    path = tmp_path / "one.glb"
    trimesh.creation.box().export(path)
    assert read_scene(path) is None
    assert read_scene(tmp_path / "none.obj") is None


def test_preprocess_writes_a_scene_file_and_a_tess_per_mesh(tmp_path, capsys, gltf_street):
    src = gltf_street.write(tmp_path / "street.glb")
    assert preprocess_main([str(src), "-q"]) == 0
    doc = json.loads((tmp_path / "street.json").read_text())
    assert doc["assets"] == {"post": "street.post.tess", "post-mirrored":
                             "street.post-mirrored.tess", "ball": "street.ball.tess"}
    assert len(doc["instances"]) == 4
    for f in doc["assets"].values():
        assert (tmp_path / f).is_file()
    capsys.readouterr()
    # a .tess asked for by name: merged, with one line saying so
    with warnings.catch_warnings():  # the CLI prints them (pyproject ignores MeshWarning)
        warnings.simplefilter("always", MeshWarning)
        assert preprocess_main([str(src), "-o", str(tmp_path / "x.tess"), "-q"]) == 0
    err = [line for line in capsys.readouterr().err.strip().splitlines() if "compiling" not in line]
    assert err == ["preprocess: warning: street.glb: a scene of 3 meshes in 4 nodes, merged "
                   "into one .tess as -o asks (-o NAME.json keeps it a scene: a .tess per mesh)"]
    # --merge keeps one asset of every placed triangle
    assert preprocess_main([str(src), "--merge", "-o", str(tmp_path / "m.tess"), "-q"]) == 0
    from preprocess.tess import read_tess

    for name in ("x.tess", "m.tess"):
        with read_tess(tmp_path / name) as f:
            assert f.meta["input_triangles"] == 3 * 12 + 320
    # any other output: one line, exit 2, nothing written
    assert preprocess_main([str(src), "-o", str(tmp_path / "y.obj")]) == 2
    err = [line for line in capsys.readouterr().err.strip().splitlines() if "compiling" not in line]
    assert len(err) == 1 and "NAME.json" in err[0] and not list(tmp_path.glob("y*"))


@pytest.mark.parametrize("bad", ["cycle", "missing mesh"])
def test_a_broken_node_tree_is_one_line(tmp_path, capsys, bad, gltf_street):
    src = gltf_street.write(tmp_path / "street.glb")
    capsys.readouterr()

    def edit(tree):
        if bad == "cycle":
            tree["nodes"][0]["children"] = [len(tree["nodes"]) - 1]
        else:
            tree["nodes"][0]["mesh"] = 99

    gltf_street.rewrite(src, edit)
    assert preprocess_main([str(src), "-q"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("preprocess: error: street.glb: ")
    assert not list(tmp_path.glob("street.*.tess")) and not (tmp_path / "street.json").exists()


def test_an_obj_of_several_objects_is_a_scene(tmp_path, capsys):
    # two objects (the first with two materials, set before it and in it), vertices numbered
    # across the file: an asset each, placed where they are
    text = ("mtllib objs.mtl\nv 0 0 0\nv 1 0 0\nv 0 1 0\nv 1 1 0\nusemtl red\no first\nf 1 2 3\n"
            "usemtl blue\nf 2 4 3\no second\nv 3 0 0\nv 4 0 0\nv 3 1 0\nf 5 6 7\nf 6 4 7\n")
    (tmp_path / "objs.obj").write_text(text)
    (tmp_path / "objs.mtl").write_text("newmtl red\nKd 1 0 0\nnewmtl blue\nKd 0 0 1\n")
    scene = read_scene(tmp_path / "objs.obj")
    assert sorted(scene.meshes) == ["first", "second"]
    first, second = scene.meshes["first"], scene.meshes["second"]
    assert first.triangle_count == 2 and second.triangle_count == 2
    assert sorted(m.name for m in first.materials) == ["blue", "red"]
    assert [m.name for m in second.materials] == ["blue"]  # the material still active
    assert all(np.array_equal(w, np.eye(4)) for _, w in scene.instances)
    np.testing.assert_array_equal(np.sort(second.positions[:, 0]), [1, 3, 3, 4])
    assert preprocess_main([str(tmp_path / "objs.obj"), "-q"]) == 0
    assert json.loads((tmp_path / "objs.json").read_text())["assets"] == {
        "first": "objs.first.tess", "second": "objs.second.tess"}
    # an object of vertices alone (no faces) is no asset, but its vertices count for the others
    text = ("o points\nv 0 0 0\nv 1 0 0\nv 0 1 0\nv 1 1 0\no left\nf 1 2 3\no right\n"
            "f 2 4 3\n")
    (tmp_path / "shared.obj").write_text(text)
    shared = read_scene(tmp_path / "shared.obj")
    assert sorted(shared.meshes) == ["left", "right"]
    np.testing.assert_array_equal(np.sort(shared.meshes["right"].positions[:, 0]), [0, 1, 1])
    # one object: no scene
    (tmp_path / "one.obj").write_text("o only\nv 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\n")
    assert read_scene(tmp_path / "one.obj") is None


def test_a_file_that_is_no_scene_warns_once(tmp_path, capsys, gltf_street):
    # `preprocess` asks `read_scene` first and `load_mesh` after: the file's warnings show once
    path = tmp_path / "one.glb"
    trimesh.creation.box().export(path)
    gltf_street.rewrite(path, lambda tree: tree.update(animations=[{"channels": [],
                                                                    "samplers": []}]))
    capsys.readouterr()
    with warnings.catch_warnings():  # the CLI prints them (pyproject ignores MeshWarning)
        warnings.simplefilter("always", MeshWarning)
        assert preprocess_main([str(path), "-q"]) == 0
    err = [line for line in capsys.readouterr().err.splitlines() if "warning" in line]
    assert err == ["preprocess: warning: one.glb: not drawn: 1 animations"]


def _add_lights(tree, lights, placed):
    """KHR_lights_punctual `lights`, and nodes placing them: (light, rotation quaternion) each,
    under the scene's root."""
    tree.setdefault("extensions", {})["KHR_lights_punctual"] = {"lights": lights}
    tree.setdefault("extensionsUsed", []).append("KHR_lights_punctual")
    root = tree["scenes"][0]["nodes"][0]
    for light, rotation in placed:
        tree["nodes"].append({"extensions": {"KHR_lights_punctual": {"light": light}},
                              "rotation": rotation})
        tree["scenes"][0]["nodes"].append(len(tree["nodes"]) - 1)
    assert root == tree["scenes"][0]["nodes"][0]


def test_a_scene_s_first_directional_light_is_its_sun(tmp_path, capsys, gltf_street):
    """KHR_lights_punctual: a directional light shines down its node's -Z; tilted 40 degrees
    about X (towards -Y) and turned 30 about Y, the sun is at azimuth 30, elevation 40. A spot
    light is kept, its intensity in units of the sun's; the scene file carries both."""
    def _quat(axis, degrees):  # x, y, z, w about a unit axis
        a = np.radians(degrees) / 2
        return [*(np.asarray(axis, float) * np.sin(a)), np.cos(a)]

    src = gltf_street.write(tmp_path / "street.glb")
    turn = _quat((0, 1, 0), 30)
    tilt = _quat((1, 0, 0), -40)  # -Z tilted down: the light comes from above

    def quat_mul(a, b):
        x1, y1, z1, w1 = a
        x2, y2, z2, w2 = b
        return [w1 * x2 + x1 * w2 + y1 * z2 - z1 * y2, w1 * y2 - x1 * z2 + y1 * w2 + z1 * x2,
                w1 * z2 + x1 * y2 - y1 * x2 + z1 * w2, w1 * w2 - x1 * x2 - y1 * y2 - z1 * z2]

    gltf_street.rewrite(src, lambda tree: _add_lights(
        tree, [{"type": "directional", "intensity": 3.0}, {"type": "spot", "intensity": 5.0}],
        [(0, quat_mul(turn, tilt)), (1, [0, 0, 0, 1])]))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", MeshWarning)
        scene = read_scene(src)
    az, el = scene.sun
    assert abs(az - 30.0) < 1e-6 and abs(el - 40.0) < 1e-6
    assert not [str(w.message) for w in caught if "light" in str(w.message)]
    spot = {"type": "spot", "position": [0.0, 0.0, 0.0], "intensity": pytest.approx(5.0 / 3.0),
            "color": [1.0, 1.0, 1.0], "direction": [0.0, 0.0, -1.0], "inner_cone": 0.0,
            "outer_cone": pytest.approx(45.0)}
    assert scene.lights == [spot]
    capsys.readouterr()
    assert preprocess_main([str(src), "-q"]) == 0
    doc = json.loads((tmp_path / "street.json").read_text())
    assert doc["sun"] == {"azimuth": pytest.approx(30.0), "elevation": pytest.approx(40.0)}
    assert doc["lights"] == [spot]
    spec = load_scene_file(tmp_path / "street.json")
    assert spec.sun == pytest.approx((30.0, 40.0)) and len(spec.lights) == 1
    assert spec.lights[0].kind == "spot" and spec.lights[0].outer_cone == pytest.approx(
        np.pi / 4)


@pytest.mark.parametrize("light, message", [
    ({"type": "directional", "intensity": float("nan")}, "intensity nan"),
    ({"type": "point", "intensity": -2.0}, "intensity -2.0"),
    ({"type": "area"}, "type must be"),
    ({"type": "spot", "color": [1, 0.5]}, "color"),
    ({"type": "point", "range": 0}, "range 0"),
    ({"type": "spot", "spot": {"innerConeAngle": 0.9, "outerConeAngle": 0.5}}, "cone angles"),
    ({"type": "spot", "spot": {"outerConeAngle": 2.0}}, "cone angles"),
])
def test_a_light_that_cannot_be_drawn_right_is_one_line(tmp_path, capsys, gltf_street, light,
                                                         message):
    src = gltf_street.write(tmp_path / "street.glb")
    gltf_street.rewrite(src, lambda tree: _add_lights(tree, [light], [(0, [0, 0, 0, 1])]))
    capsys.readouterr()
    assert preprocess_main([str(src), "-q"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0], err
    assert not (tmp_path / "street.json").exists()


def _chain_gltf(path, depth: int, mesh_at: tuple[int, ...], edit=None):
    """A glTF of one triangle mesh whose nodes form a chain `depth` deep (node i's child is
    i + 1, each translated by 0.25 mm along x), the mesh placed in the nodes `mesh_at`."""
    import base64

    pos = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0]], np.float32)
    blob = pos.tobytes() + np.array([0, 1, 2], np.uint16).tobytes() + b"\0\0"
    nodes = [{"children": [i + 1], "translation": [0.00025, 0, 0]} for i in range(depth - 1)]
    nodes.append({"translation": [0.00025, 0, 0]})
    for i in mesh_at:
        nodes[i]["mesh"] = 0
    tree = {"asset": {"version": "2.0"}, "scene": 0, "scenes": [{"nodes": [0]}], "nodes": nodes,
            "meshes": [{"primitives": [{"attributes": {"POSITION": 0}, "indices": 1}]}],
            "buffers": [{"byteLength": len(blob), "uri": "data:application/octet-stream;base64,"
                         + base64.b64encode(blob).decode()}],
            "bufferViews": [{"buffer": 0, "byteOffset": 0, "byteLength": 36},
                            {"buffer": 0, "byteOffset": 36, "byteLength": 6}],
            "accessors": [{"bufferView": 0, "componentType": 5126, "count": 3, "type": "VEC3",
                           "min": [0, 0, 0], "max": [1, 1, 0]},
                          {"bufferView": 1, "componentType": 5123, "count": 3,
                           "type": "SCALAR"}]}
    if edit:
        edit(tree)
    path.write_text(json.dumps(tree))
    return path


def test_node_trees_of_any_depth_are_walked_in_linear_time(tmp_path):
    """A chain 20,000 nodes deep (glTF sets no limit; a depth limit of 1,000 once refused such
    files as cycles) is read, each instance at the sum of the translations above it."""
    import time

    src = _chain_gltf(tmp_path / "deep.gltf", 20_000, (9_999, 19_999))
    t = time.perf_counter()
    scene = read_scene(src)
    assert time.perf_counter() - t < 20.0  # a few seconds; quadratic would be minutes
    xs = sorted(float(world[0, 3]) for _, world in scene.instances)
    assert xs == pytest.approx([10_000 * 0.00025, 20_000 * 0.00025], rel=1e-9)


@pytest.mark.parametrize("bad, said", [
    ("scene index", '"scene" is 7; the file has 1 scene'),
    ("cycle", "the node tree has a cycle (1 -> 2 -> 3 -> 1)"),
    ("two parents", "node 3 is a child of two nodes (2 and 6)"),
    ("missing node", "node 4: child 99 is missing (the file has 6 nodes)"),
    ("root twice", "node 0 is a root of the scene and also a child (or a root twice)"),
])
def test_a_node_graph_that_is_no_tree_is_named(tmp_path, capsys, bad, said):
    """What is wrong with a node graph is said as it is: a cycle as a cycle (with its nodes), a
    node with two parents as that, a scene or node index past the file's: one line, exit 2."""

    def edit(tree):
        if bad == "scene index":
            tree["scene"] = 7
        elif bad == "cycle":
            tree["nodes"][3]["children"] = [1]
        elif bad == "two parents":  # a second root, node 6, also names node 3
            tree["nodes"].append({"children": [3]})
            tree["scenes"][0]["nodes"].append(6)
        elif bad == "missing node":
            tree["nodes"][4]["children"].append(99)
        else:
            tree["scenes"][0]["nodes"].append(0)

    src = _chain_gltf(tmp_path / "bad.gltf", 6, (2, 5), edit)
    capsys.readouterr()
    assert preprocess_main([str(src), "-q"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"preprocess: error: bad.gltf: {said}"]
    assert not list(tmp_path.glob("*.tess")) and not list(tmp_path.glob("*.json"))


def _ball(tree) -> dict:
    return next(n for n in tree["nodes"] if n.get("name") == "ball")


def test_a_node_scaled_to_nothing_is_left_out_of_the_scene(tmp_path, capsys, gltf_street):
    """A node scaled [0, 0, 0] beside the others draws nothing: it is named in a warning and
    left out, and the scene file the rest makes opens in the renderer (it was written with the
    instance, and `tessera render` refused it)."""
    src = gltf_street.write(tmp_path / "street.glb")
    gltf_street.rewrite(src, lambda tree: _ball(tree).update(scale=[0.0, 0.0, 0.0]))
    capsys.readouterr()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", MeshWarning)
        scene = read_scene(src)
    assert sorted(scene.meshes) == ["post", "post-mirrored"] and len(scene.instances) == 3
    said = [str(w.message) for w in caught]
    assert len(said) == 1 and said[0].startswith("street.glb: node ") and said[0].endswith(
        " to nothing (its transform is singular); left out")
    assert preprocess_main([str(src), "-q"]) == 0
    spec = load_scene_file(tmp_path / "street.json")
    assert len(spec.placements) == 3


@pytest.mark.parametrize("bad, said", [
    ("far", ": the transform holds 1e+30, beyond float32's reach on the GPU (at most 1e+18 in "
            "magnitude)"),
    ("reach", " places mesh 'ball' 1.25e+18 from the world origin; float32 positions hold at "
              "most 1e+18"),
    ("overflow", "'s transform is not finite"),
    ("nan", ": matrix is [nan, 0.0, 0, 0, 0, 1, 0, 0, 0, 0, 1,..., not 16 finite numbers"),
])
def test_a_node_the_renderer_cannot_place_is_one_line(tmp_path, capsys, gltf_street, bad, said):
    """A node translated by 1e30 (past what float32 holds on the GPU), one whose mesh reaches
    past it, one whose transforms overflow and one with a NaN: `preprocess` refuses the scene
    as `tessera render` would refuse its scene file (the scene file's own check), in one line,
    writing nothing."""
    def edit(tree):
        ball = _ball(tree)
        if bad == "far":
            ball["translation"] = [1e30, 0.0, 0.0]
        elif bad == "reach":  # every number within 1e18, the ball's bounds past it
            ball.update(translation=[9e17, 0.0, 0.0], scale=[5e17, 5e17, 5e17])
        elif bad == "overflow":
            ball["scale"] = [1e300, 1e300, 1e300]
            tree["nodes"][-1]["scale"] = [1e300, 1e300, 1e300]  # the parent
        else:
            ball.pop("translation")
            ball["matrix"] = [float("nan"), 0.0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1]

    src = gltf_street.write(tmp_path / "street.glb")
    gltf_street.rewrite(src, edit)
    capsys.readouterr()
    assert preprocess_main([str(src), "-q"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("preprocess: error: street.glb: node "), err
    assert err[0].endswith(said), err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["street.glb"]


def _textured_pair(path, shade: int = 90):
    """A GLB scene of two different meshes (a box and a ball) with one textured material."""
    import trimesh
    from PIL import Image

    y, x = np.mgrid[0:64, 0:64]
    img = np.stack([x * 4, y * 4, np.full_like(x, shade)], -1).astype(np.uint8)
    scene = trimesh.Scene()
    for i, geom in enumerate((trimesh.creation.box(), trimesh.creation.icosphere(2))):
        geom.apply_translation((3 * i, 0, 0))
        geom.visual = trimesh.visual.TextureVisuals(
            uv=geom.vertices[:, :2] * 0.3 + 0.5,
            material=trimesh.visual.material.PBRMaterial(baseColorTexture=Image.fromarray(img)))
        scene.add_geometry(geom, geom_name=f"part{i}")
    scene.export(path)
    return path


def test_a_scenes_meshes_share_one_textures_file(tmp_path, capsys):
    # two meshes with the same image: the image once, in the scene's textures file, which both
    # meshes' materials index (none in their own files); opened with them, uploaded once. A
    # textures file missing or from another build: one line naming it
    from preprocess.tess import read_tess
    from preprocess.tess.container import TessFile, TessFormatError
    from renderer.scene import Scene, SceneError, open_asset

    src = _textured_pair(tmp_path / "pair.glb")
    assert preprocess_main([str(src), "-q"]) == 0, capsys.readouterr().err
    doc = json.loads((tmp_path / "pair.json").read_text())
    shared = tmp_path / "pair.@textures.tess"
    with TessFile(shared) as t:
        assert set(t.sections) == {"textures", "texels"} and len(t.sections["textures"]) == 1
        digest = t.meta["texture_set"]
    scene = Scene()
    for name in doc["assets"].values():
        with TessFile(tmp_path / name) as raw:  # the mesh's own file holds no textures
            assert "textures" not in raw.sections and "texels" not in raw.sections
            assert raw.meta["texture_file"] == shared.name and raw.meta["texture_set"] == digest
        a = open_asset(tmp_path / name)
        assert len(a.textures) == 1 and a.materials["base_color_texture"][0] == 0
        scene.add_asset(a)
    pool, _ = scene.material_data(1 << 27)
    assert len(pool.textures) == 1  # one texture in the scene's buffer
    with pytest.raises(TessFormatError, match=r"@textures.tess: a scene's textures file, not an "
                                              r"asset: open the scene's .json"):
        read_tess(shared)
    mesh_file = tmp_path / doc["assets"]["part0"]
    other = _textured_pair(tmp_path / "other.glb", shade=200)
    assert preprocess_main([str(other), "-q"]) == 0
    shared.rename(tmp_path / "kept")
    with pytest.raises(TessFormatError, match=r"pair.part0.tess: its textures file "
                                              r"pair.@textures.tess is missing"):
        read_tess(mesh_file)
    (tmp_path / "other.@textures.tess").rename(shared)
    with pytest.raises(SceneError, match=r"pair.@textures.tess is not the textures file it was "
                                         r"built with"):
        open_asset(mesh_file)
