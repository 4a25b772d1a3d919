"""A glTF scene opened as authored (issue 16): `tessera render scene.glb` builds a scene file and
a .tess per distinct mesh, and draws one instance per node; the picture equals the flattened
file's (`preprocess --merge`), drawn from the same camera."""

from __future__ import annotations

import json

import numpy as np
import pytest

from renderer.apps import cli as tessera_cli

pytestmark = pytest.mark.gpu


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
