"""A glTF scene opened as authored (issue 16): `tessera render scene.glb` builds a scene file and
a .tess per distinct mesh, and draws one instance per node; the picture equals the flattened
file's (`preprocess --merge`), drawn from the same camera."""

from __future__ import annotations

import json

import numpy as np
import pytest

from renderer.apps import cli as tessera_cli

pytestmark = pytest.mark.gpu


@pytest.mark.slow
def test_a_gltf_scene_renders_as_authored_and_as_merged(tmp_path, gltf_street):
    src = gltf_street.write(tmp_path / "street.glb")
    cam = ["--eye", "4.5,2.5,-1", "--target", "1,1,-5", "--size", "160x120"]
    assert tessera_cli.main(["render", str(src), "-o", str(tmp_path / "s.png"),
                             "--arrays", str(tmp_path / "s.npz"), *cam]) == 0
    doc = json.loads((tmp_path / "street.json").read_text())  # the cache beside the file
    assert len(doc["instances"]) == 4 and len(doc["assets"]) == 3
    assert tessera_cli.main(["preprocess", str(src), "--merge", "-o", str(tmp_path / "m.tess"),
                             "-q"]) == 0
    assert tessera_cli.main(["render", str(tmp_path / "m.tess"), "-o", str(tmp_path / "m.png"),
                             "--arrays", str(tmp_path / "m.npz"), *cam]) == 0
    s, m = np.load(tmp_path / "s.npz"), np.load(tmp_path / "m.npz")
    assert sorted(np.unique(s["instance"][s["instance"] >= 0]).tolist()) == [0, 1, 2, 3]
    covered = s["depth"] > 0
    assert covered.sum() > 800
    # the same surfaces: coverage alike but for a few silhouette pixels (the two builds quantize
    # positions on different grids), colours alike where both draw
    assert (covered != (m["depth"] > 0)).mean() < 0.005
    both = covered & (m["depth"] > 0)
    d = s["color"][..., :3].astype(float) - m["color"][..., :3]
    assert 10 * np.log10(255**2 / max((d[both] ** 2).mean(), 1e-9)) > 35
    # opened again, the cached scene is used (nothing rebuilt)
    before = {p.name: p.stat().st_mtime for p in tmp_path.glob("street.*.tess")}
    assert tessera_cli.main(["render", str(src), "-o", str(tmp_path / "t.png"), *cam]) == 0
    assert before == {p.name: p.stat().st_mtime for p in tmp_path.glob("street.*.tess")}


@pytest.mark.slow
def test_a_gltf_scene_s_own_lamps_light_it(tmp_path, gltf_street, capsys):
    """KHR_lights_punctual spot and point lights are drawn: a scene lit only by a lamp beside
    its posts has no sun in its scene file, its lamp in world space; the lamp's side of the
    posts is brighter than the far side, and the picture darker everywhere without it."""
    src = gltf_street.write(tmp_path / "street.glb")

    def lamp(tree):
        tree.setdefault("extensions", {})["KHR_lights_punctual"] = {
            "lights": [{"type": "point", "intensity": 20.0, "color": [1.0, 0.9, 0.8]}]}
        tree.setdefault("extensionsUsed", []).append("KHR_lights_punctual")
        street = tree["scenes"][0]["nodes"][0]
        tree["nodes"].append({"extensions": {"KHR_lights_punctual": {"light": 0}},
                              "translation": [2.0, 1.5, 1.5]})  # in the street's frame
        tree["nodes"][street]["children"].append(len(tree["nodes"]) - 1)

    gltf_street.rewrite(src, lamp)
    cam = ["--eye", "4.5,2.5,-1", "--target", "1,1,-5", "--size", "160x120"]
    capsys.readouterr()
    assert tessera_cli.main(["render", str(src), "-o", str(tmp_path / "s.png"),
                             "--arrays", str(tmp_path / "s.npz"), *cam]) == 0
    assert "no sun, 1 spot/point lights" in capsys.readouterr().out
    doc = json.loads((tmp_path / "street.json").read_text())
    assert doc["sun"] is None and len(doc["lights"]) == 1
    # the street's frame turns 90 degrees about +y and moves by (1, 0, -3)
    assert doc["lights"][0]["position"] == pytest.approx([2.5, 1.5, -5.0])
    lit = np.load(tmp_path / "s.npz")
    doc.pop("lights")
    (tmp_path / "dark.json").write_text(json.dumps(doc))
    assert tessera_cli.main(["render", str(tmp_path / "dark.json"), "-o",
                             str(tmp_path / "d.png"), "--arrays", str(tmp_path / "d.npz"),
                             *cam]) == 0
    dark = np.load(tmp_path / "d.npz")
    covered = lit["depth"] > 0
    gain = lit["color"][..., :3].astype(float).mean(-1) - dark["color"][..., :3].mean(-1)
    print(f"brighter by {gain[covered].mean():.1f} levels on average; most {gain.max():.0f}")
    assert (gain[covered] >= -1).all() and gain[covered].mean() > 10 and gain.max() > 80
