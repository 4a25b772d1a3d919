"""Every index in a glTF file checked against the array it names, and every value read against
its JSON type, in one place (`preprocess.io.gltf_refs.check_refs`): one line in glTF's terms
(a primitive's material 50 said "face index out of range (IndexError...)"). The material side
(a primitive's material, textures, images, samplers, factors) is named in a warning and drawn
without, as a texture that cannot be read is (`gltf_materials`, README's input rules)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from assets.shapes import geodesic_sphere_arrays
from preprocess.mesh import MeshWarning
from renderer.apps import preprocess_cli

V, F = geodesic_sphere_arrays(3)
V = V.astype(np.float32)


def _textured(b) -> None:
    """The builder's file with a material whose base colour texture is image 0, a PNG in
    buffer view 2 (after the positions' and indices' views)."""
    import io

    from PIL import Image

    png = io.BytesIO()
    Image.new("RGB", (2, 2), (200, 30, 30)).save(png, "PNG")
    b.tree["images"] = [{"bufferView": b.view(png.getvalue()), "mimeType": "image/png"}]
    b.tree["textures"] = [{"source": 0, "sampler": 0}]
    b.tree["samplers"] = [{}]
    b.tree["materials"] = [{"pbrMetallicRoughness": {"baseColorTexture": {"index": 0}}}]
    b.tree["meshes"][0]["primitives"][0]["material"] = 0


def _set(path: str, value):
    """An edit setting the key at `path` ("meshes.0.primitives.0.material") to `value`, or
    removing it where `value` is `...`."""
    def edit(tree):
        *keys, last = path.split(".")
        at = tree
        for k in keys:
            at = at[int(k)] if isinstance(at, list) else at[k]
        if value is ...:
            del at[last]
        else:
            at[last] = value
    return edit


# (where, value, the line after the file's name)
BROKEN = [
    ("accessors.0.bufferView", 9, "accessor 0: bufferView 9 is missing (the file has 3 buffer "
                                  "views)"),
    ("bufferViews.1.buffer", 3, "buffer view 1: buffer 3 is missing (the file has 1 buffer)"),
    ("meshes.0.primitives.0.indices", 7, "mesh 0 primitive 0: indices 7 is missing (the file "
                                         "has 2 accessors)"),
    ("meshes.0.primitives.0.attributes.POSITION", 5, "mesh 0 primitive 0: POSITION accessor 5 "
                                                     "is missing (the file has 2 accessors)"),
    ("nodes.0.mesh", 3, "node 0: mesh 3 is missing (the file has 1 mesh)"),
    ("nodes.0.children", [0, 5], "node 0: child 5 is missing (the file has 1 node)"),
    ("scenes.0.nodes", [8], "scene 0: node 8 is missing (the file has 1 node)"),
    ("scene", 2, "\"scene\" is 2; the file has 1 scene"),
    # values of the wrong JSON type
    ("accessors.0.count", "ten", "accessor 0: count is 'ten', not a whole number >= 1"),
    ("accessors.1.componentType", 5124, "accessor 1: componentType is 5124, not one of 5120, "
                                        "5121, 5122, 5123, 5125, 5126"),
    ("bufferViews.0.byteOffset", -4, "buffer view 0: byteOffset is -4, not a whole number >= 0"),
    ("meshes.0.primitives.0.mode", "4", "mesh 0 primitive 0: mode is '4', not one of 0, 1, 2, "
                                        "3, 4, 5, 6"),
    ("nodes.0.translation", ["a", 0, 0], "node 0: translation is ['a', 0, 0], not 3 finite "
                                         "numbers"),
    ("meshes.0.primitives", [], "mesh 0 has no primitives"),
    ("accessors.0.count", ..., "accessor 0 has no count"),
    ("meshes.0.primitives", {}, "mesh 0: primitives is {}, not a list of objects"),
    ("nodes.0.mesh", True, "node 0: mesh is True, not the index of a mesh"),
]


@pytest.mark.parametrize("where, value, said", BROKEN,
                         ids=[f"{w}={v}" for w, v, _ in BROKEN])
def test_a_broken_reference_or_type_is_one_line_in_gltf_terms(tmp_path, gltf_builder,
                                                               load_error, where, value, said):
    b = gltf_builder()
    b.node(mesh=b.mesh(b.triangles(V, F)))
    _textured(b)
    path = b.write(tmp_path / "broken.glb", _set(where, value))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MeshWarning)
        assert load_error(path) == f"broken.glb: {said}"


# (where, value, what the warning says, whether the texture is still drawn)
MATERIAL_SIDE = [
    ("meshes.0.primitives.0.material", 50, "names material 50; the file has 1", False),
    ("images.0.bufferView", 77, "names buffer view 77", False),
    ("textures.0.source", 4, "names image 4; the file has 1", False),
    ("textures.0.sampler", 2, "names sampler 2; the file has 1", True),
    ("materials.0.pbrMetallicRoughness.baseColorTexture.index", 3, "is texture 3; the file has 1",
     False),
    ("materials.0.pbrMetallicRoughness.baseColorFactor", "red", "baseColorFactor", True),
]


@pytest.mark.parametrize("where, value, said, textured", MATERIAL_SIDE,
                         ids=[f"{w}={v}" for w, v, _, _ in MATERIAL_SIDE])
def test_a_broken_material_reference_is_named_and_the_rest_drawn(tmp_path, gltf_builder, where,
                                                                  value, said, textured):
    from preprocess.load import load_mesh

    b = gltf_builder()
    b.node(mesh=b.mesh(b.triangles(V, F)))
    _textured(b)
    path = b.write(tmp_path / "broken.glb", _set(where, value))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", MeshWarning)
        mesh = load_mesh(path)
    lines = [str(w.message) for w in caught if issubclass(w.category, MeshWarning)]
    assert any(line.startswith("broken.glb: ") and said in line for line in lines), lines
    assert mesh.triangle_count == len(F) and bool(mesh.textures) == textured


@pytest.mark.parametrize("name", ["fine.glb", "fine.gltf"])
def test_the_textured_file_the_cases_break_is_read(tmp_path, gltf_builder, name):
    """The file each case above breaks in one place: read whole, its texture (in a view of
    the GLB's BIN chunk, or of the glTF's data: URI buffer) drawn."""
    from preprocess.load import load_mesh

    b = gltf_builder()
    b.node(mesh=b.mesh(b.triangles(V, F)))
    _textured(b)
    mesh = load_mesh(b.write(tmp_path / name))
    assert mesh.triangle_count == len(F) and len(mesh.textures) == 1
    np.testing.assert_array_equal(mesh.textures[0].image[0, 0], [200, 30, 30, 255])


def test_preprocess_says_it_in_one_line_and_writes_nothing(tmp_path, gltf_builder, capsys):
    b = gltf_builder()
    b.node(mesh=b.mesh(b.triangles(V, F)))
    path = b.write(tmp_path / "view.glb", _set("accessors.0.bufferView", 9))
    assert preprocess_cli.main([str(path), "-q"]) == 2
    err = [x for x in capsys.readouterr().err.splitlines() if "compiling" not in x]
    assert err == ["preprocess: error: view.glb: accessor 0: bufferView 9 is missing (the file "
                   "has 2 buffer views)"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["view.glb"]
