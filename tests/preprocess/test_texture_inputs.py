"""Textures and colours a file asks for and Tessera cannot draw (issue 33): never dropped without
a word, the same policy for glTF and OBJ + MTL (README "Input rules"). A texture that cannot be
read (missing, not an image, cut short, an index past the file's textures, larger than 16,384 a
side) is one warning naming the material, the slot and why, and the material is drawn without
it; a colour that is not numbers is one warning and its default; what is read instead of being
dropped (a texture above the file's folder, `map_Kd` with options, a name with a space, a
16,384^2 texture) is read.

Every file is generated here: a textured quad as glTF JSON or GLB bytes, OBJ + MTL text, PNGs
written with Pillow (or, for the 16,384^2 one, by hand: a palette PNG of one colour is 150 KB).
The loader is called in-process; the command once, in-process, where its status is the point.
"""

from __future__ import annotations

import base64
import io
import json
import struct
import warnings
import zlib
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from preprocess.io.gltf import glb_bytes
from preprocess.load import load_mesh
from preprocess.mesh import MeshWarning
from renderer.apps.preprocess_cli import main as preprocess_main

PAINT = (200, 60, 30)


def png(color=PAINT, size=(8, 8)) -> bytes:
    out = io.BytesIO()
    Image.fromarray(np.full((size[1], size[0], 3), color, np.uint8)).save(out, "PNG")
    return out.getvalue()


def data_uri(data: bytes, mime: str = "image/png") -> str:
    return f"data:{mime};base64," + base64.b64encode(data).decode()


def quad_gltf(image: dict | None = None, *, color: np.ndarray | None = None,
              extra: bytes = b"") -> tuple[dict, bytes]:
    """A glTF tree of one textured quad (material 'paint', its base colour texture 0, image 0 =
    ``image``, an 8 x 8 PNG by default) and its buffer's bytes; ``color``: a (4, 4) float32
    COLOR_0; ``extra``: bytes appended to the buffer in a view of their own (the last)."""
    pos = np.array([[0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0]], "<f4")
    uv = np.array([[0, 1], [1, 1], [1, 0], [0, 0]], "<f4")
    idx = np.array([0, 1, 2, 0, 2, 3], "<u4")
    arrays = [pos.tobytes(), uv.tobytes(), idx.tobytes()]
    attributes = {"POSITION": 0, "TEXCOORD_0": 1}
    accessors = [
        {"bufferView": 0, "componentType": 5126, "count": 4, "type": "VEC3",
         "min": [0, 0, 0], "max": [1, 1, 0]},
        {"bufferView": 1, "componentType": 5126, "count": 4, "type": "VEC2"},
        {"bufferView": 2, "componentType": 5125, "count": 6, "type": "SCALAR"}]
    if color is not None:
        arrays.append(np.asarray(color, "<f4").tobytes())
        attributes["COLOR_0"] = 3
        accessors.append({"bufferView": 3, "componentType": 5126, "count": 4, "type": "VEC4"})
    if extra:
        arrays.append(extra)
    views, at = [], 0
    for a in arrays:
        views.append({"buffer": 0, "byteOffset": at, "byteLength": len(a)})
        at += len(a) + (-len(a) % 4)
    binary = b"".join(a + b"\0" * (-len(a) % 4) for a in arrays)
    tree = {
        "asset": {"version": "2.0"}, "scene": 0, "scenes": [{"nodes": [0]}],
        "nodes": [{"mesh": 0}],
        "meshes": [{"name": "quad", "primitives": [
            {"attributes": attributes, "indices": 2, "material": 0}]}],
        "materials": [{"name": "paint", "pbrMetallicRoughness": {
            "baseColorTexture": {"index": 0}}}],
        "textures": [{"source": 0}],
        "images": [image if image is not None else {"uri": data_uri(png())}],
        "buffers": [{"byteLength": len(binary)}],
        "bufferViews": views, "accessors": accessors,
    }  # fmt: skip
    return tree, binary


def write_gltf(path: Path, tree: dict, binary: bytes) -> Path:
    """``tree`` as a .gltf (its buffer a data URI) or a .glb (its buffer the BIN chunk)."""
    if path.suffix == ".gltf":
        tree["buffers"][0]["uri"] = data_uri(binary, "application/octet-stream")
        path.write_text(json.dumps(tree))
        return path
    path.write_bytes(glb_bytes(tree, binary))
    return path


def loaded(path: Path):
    """(load_mesh(path), the messages of its MeshWarnings)."""
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always", MeshWarning)
        mesh = load_mesh(path)
    return mesh, [str(w.message) for w in got if issubclass(w.category, MeshWarning)]


def painted(mesh) -> bool:
    """Whether the quad's material draws its base colour texture, and the texture is PAINT."""
    (m,) = mesh.materials
    return m.base_color_texture >= 0 and tuple(
        mesh.textures[m.base_color_texture].image[0, 0, :3]) == PAINT


# ------------------------------------------------------------------------------------------ glTF


def _texture_index(tree: dict) -> None:
    tree["materials"][0]["pbrMetallicRoughness"]["baseColorTexture"]["index"] = 5


def _image_source(tree: dict) -> None:
    tree["textures"][0]["source"] = 7


def _view_index(tree: dict) -> None:
    tree["images"][0] = {"bufferView": 9, "mimeType": "image/png"}


def _broken_normal(tree: dict) -> None:
    tree["images"].append({"uri": data_uri(b"not an image")})
    tree["textures"].append({"source": 1})
    tree["materials"][0]["normalTexture"] = {"index": 1}


# name -> (file, the image, an edit of the tree, what the one warning says)
UNREADABLE = {
    "not-an-image": (".gltf", {"uri": data_uri(b"hello, not an image")}, None,
                     "texture image 0 (embedded) cannot be read: not an image (no image format "
                     "Pillow reads) (material 'paint' base colour); drawn without it"),
    "empty": (".gltf", {"uri": data_uri(b"")}, None,
              "texture image 0 (embedded) cannot be read: its data URI holds no bytes (or is "
              "not base64) (material 'paint' base colour)"),
    "bad-base64": (".gltf", {"uri": "data:image/png;base64,@@@###"}, None,
                   "its data URI holds no bytes (or is not base64)"),
    "cut-short": (".gltf", {"uri": data_uri(png(size=(64, 64))[:-40])}, None,
                  "texture image 0 (embedded) cannot be read: cut short or corrupt"),
    "texture-index": (".gltf", None, _texture_index,
                      "material 'paint': its base colour texture is texture 5; the file has 1; "
                      "drawn without it"),
    "image-source": (".gltf", None, _image_source,
                     "material 'paint': its base colour texture (texture 0) names image 7; the "
                     "file has 1; drawn without it"),
    "missing-view": (".glb", None, _view_index,
                     "texture image 0 (embedded) cannot be read: it names buffer view 9"),
    "glb-not-an-image": (".glb", {"bufferView": 3, "mimeType": "image/png"}, None,
                         "texture image 0 (embedded) cannot be read: not an image"),
    "too-large": (".gltf", {"uri": data_uri(png(size=(16385, 1)))}, None,
                  "cannot be read: 16,385 x 1 texels, more than 16,384 a side"),
}


@pytest.mark.parametrize("case", sorted(UNREADABLE))
def test_a_gltf_texture_that_cannot_be_read_is_named_and_left_out(case, tmp_path):
    suffix, image, edit, phrase = UNREADABLE[case]
    tree, binary = quad_gltf(image, extra=b"<svg>not a png</svg>" if case.startswith("glb")
                             else b"")
    if edit is not None:
        edit(tree)
    path = write_gltf(tmp_path / f"{case}{suffix}", tree, binary)
    mesh, said = loaded(path)
    assert len(said) == 1 and said[0].startswith(f"{path.name}: ") and phrase in said[0], said
    assert "Error" not in said[0]  # the user's terms, not an exception's name
    assert mesh.materials[0].base_color_texture == -1 and mesh.triangle_count == 2


def test_a_gltf_material_index_past_the_materials_is_named(tmp_path):
    # trimesh refused the file for a "face index out of range"
    tree, binary = quad_gltf()
    tree["meshes"][0]["primitives"][0]["material"] = 4
    mesh, said = loaded(write_gltf(tmp_path / "lost.gltf", tree, binary))
    assert said == ["lost.gltf: mesh 0 'quad' primitive 0 names material 4; the file has 1: "
                    "drawn with the default material"]
    assert mesh.materials == [] and mesh.triangle_count == 2


def test_a_gltf_material_that_is_not_an_object_is_refused(tmp_path, load_error):
    # the file itself is broken: one line (it was an AttributeError's)
    tree, binary = quad_gltf()
    tree["materials"][0] = "paint"
    message = load_error(write_gltf(tmp_path / "junk.gltf", tree, binary))
    assert message == "junk.gltf: material 0 is not a JSON object"


def test_a_gltf_normal_texture_that_is_no_image_leaves_the_rest(tmp_path):
    tree, binary = quad_gltf()
    _broken_normal(tree)
    mesh, said = loaded(write_gltf(tmp_path / "normal.gltf", tree, binary))
    assert said == ["normal.gltf: texture image 1 (embedded) cannot be read: not an image (no "
                    "image format Pillow reads) (material 'paint' normal); drawn without it"]
    assert painted(mesh) and mesh.materials[0].normal_texture == -1


def test_a_cut_short_texture_builds_with_a_warning(tmp_path, capsys):
    """The command: the same file is built (status 0, one warning line), where it was refused."""
    tree, binary = quad_gltf({"uri": data_uri(png(size=(64, 64))[:-40])})
    path = write_gltf(tmp_path / "cut.gltf", tree, binary)
    with warnings.catch_warnings():
        warnings.simplefilter("always", MeshWarning)
        assert preprocess_main([str(path), "-o", str(tmp_path / "cut.tess"), "-q"]) == 0
    err = [x for x in capsys.readouterr().err.splitlines() if "compiling" not in x]
    assert len(err) == 1 and err[0].startswith("preprocess: warning: cut.gltf: texture image 0")
    assert (tmp_path / "cut.tess").is_file()


@pytest.mark.parametrize("uri", ["../up.png", "my%20tex.png"])
def test_a_gltf_texture_above_its_folder_or_with_a_space_is_read(uri, tmp_path):
    (tmp_path / "up.png").write_bytes(png())
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "my tex.png").write_bytes(png())
    (tmp_path / "sub" / "up.png").write_bytes(png((0, 0, 255)))  # what trimesh read instead
    tree, binary = quad_gltf({"uri": uri})
    mesh, said = loaded(write_gltf(tmp_path / "sub" / "quad.gltf", tree, binary))
    assert said == [] and painted(mesh)


@pytest.mark.parametrize("outer, key, value, default", [
    ("pbrMetallicRoughness", "baseColorFactor", [float("nan"), 1, 1, 1], "[1, 1, 1, 1]"),
    ("pbrMetallicRoughness", "roughnessFactor", "rough", "1"),
    (None, "emissiveFactor", [1, None, 0], "[0, 0, 0]"),
])
def test_a_gltf_factor_that_is_not_numbers_is_named_and_its_default_drawn(outer, key, value,
                                                                         default, tmp_path):
    tree, binary = quad_gltf()
    (tree["materials"][0][outer] if outer else tree["materials"][0])[key] = value
    mesh, said = loaded(write_gltf(tmp_path / "factor.gltf", tree, binary))
    assert said == [f"factor.gltf: material 'paint': {key} {json.dumps(value)} is not "
                    f"{'a number' if not isinstance(value, list) else f'{len(value)} numbers'}; "
                    f"drawn with the default, {default}"]
    (m,) = mesh.materials
    assert m.base_color == (1.0, 1.0, 1.0, 1.0) and m.roughness == 1.0
    assert m.emissive == (0.0, 0.0, 0.0) and painted(mesh)


@pytest.mark.parametrize("outer, key, value, clamped, field, expect", [
    ("pbrMetallicRoughness", "metallicFactor", 2.5, "1", "metallic", 1.0),
    ("pbrMetallicRoughness", "roughnessFactor", -0.5, "0", "roughness", 0.0),
    (None, "emissiveFactor", [3, 0.5, -1], "[1, 0.5, 0]", "emissive", (1.0, 0.5, 0.0)),
])
def test_a_gltf_factor_outside_its_range_is_named_and_clamped(outer, key, value, clamped, field,
                                                              expect, tmp_path):
    # drawn as written before: a metallic factor of 2.5 lit brighter than any metal
    tree, binary = quad_gltf()
    (tree["materials"][0][outer] if outer else tree["materials"][0])[key] = value
    mesh, said = loaded(write_gltf(tmp_path / "range.gltf", tree, binary))
    assert said[0] == (f"range.gltf: material 'paint': {key} {json.dumps(value)} is outside "
                       f"glTF's 0..1; drawn clamped, {clamped}")
    assert said[1:] == ([] if key != "emissiveFactor" else [  # the warning it always had
        "range.gltf: material 'paint': emissive factor (1, 0.5, 0) without an emissive texture: "
        "the whole surface glows (as the file says)"])
    (m,) = mesh.materials
    assert getattr(m, field) == pytest.approx(expect)


@pytest.mark.parametrize("material", [True, False])
def test_nan_vertex_colours_are_named_with_their_accessor_and_dropped(material, tmp_path):
    # trimesh read them black beside no material and white beside one, without a word
    color = np.full((4, 4), np.nan, np.float32)
    tree, binary = quad_gltf(color=color)
    if not material:
        del tree["meshes"][0]["primitives"][0]["material"]
    mesh, said = loaded(write_gltf(tmp_path / "nan.gltf", tree, binary))
    assert said == ["nan.gltf: accessor 3 (COLOR_0 of mesh 0 'quad'): 4 of 4 colours are not "
                    "numbers (NaN); drawn without vertex colours"]
    assert mesh.wedge_color is None


def test_nan_vertex_colours_of_an_off_are_counted(tmp_path):
    path = tmp_path / "c.off"
    path.write_text("COFF\n3 1 0\n0 0 0 nan 0 0\n1 0 0 255 0 0\n0 1 0 255 0 0\n3 0 1 2\n")
    mesh, said = loaded(path)
    assert said == ["c.off: 1 of 3 vertex colours are not numbers (NaN); those channels drawn "
                    "as 1 (white, opaque)"]
    np.testing.assert_allclose(mesh.wedge_color[:, :3], [[1, 0, 0]] * 3)  # 0..255, as the rest


def test_a_texture_transform_not_listed_as_used_is_named(tmp_path):
    tree, binary = quad_gltf()
    tree["materials"][0]["pbrMetallicRoughness"]["baseColorTexture"]["extensions"] = {
        "KHR_texture_transform": {"scale": [2, 2]}}
    mesh, said = loaded(write_gltf(tmp_path / "moved.gltf", tree, binary))
    assert said == ["moved.gltf: glTF extensions not supported, drawn with the core material "
                    "model: KHR_texture_transform"]
    assert painted(mesh)


# ----------------------------------------------------------------------------------- OBJ + MTL


def obj_quad(folder: Path, mtl: str, *, mtllib: str | None = "quad.mtl",
             normals: str = "") -> Path:
    """An OBJ quad with uvs, its faces using material 'paint', naming ``mtllib`` (None: no
    mtllib line, nor usemtl; ``mtl`` written as quad.mtl), bad.png (not an image) beside it;
    ``normals``: vn lines, each corner using the first."""
    folder.mkdir(exist_ok=True)
    (folder / "quad.mtl").write_text(mtl)
    (folder / "bad.png").write_bytes(b"<html>not an image</html>")
    n = "/1" if normals else ""
    (folder / "quad.obj").write_text(
        (f"mtllib {mtllib}\n" if mtllib else "")
        + "v 0 0 0\nv 1 0 0\nv 1 1 0\nv 0 1 0\nvt 0 0\nvt 1 0\nvt 1 1\nvt 0 1\n"
        + normals + "usemtl paint\n" * bool(mtllib)
        + f"f 1/1{n} 2/2{n} 3/3{n}\nf 1/1{n} 3/3{n} 4/4{n}\n")
    return folder / "quad.obj"


@pytest.mark.parametrize("statement, beside, said", [
    ("map_Kd tex.png", "tex.png", []),
    # a name with a space: read (it was named "not found" where 'tex.png' was not beside it)
    ("map_Kd my tex.png", "my tex.png", []),
    ("map_Kd -s 4 4 1 -o 0.5 0.5 0 tex.png", "tex.png",
     ["quad.obj: material 'paint': map_Kd options not supported, ignored: -s 4 4 1, -o 0.5 0.5 "
      "0 (quad.mtl line 3; the texture is drawn unmoved and unscaled)"]),
    ("map_Kd -clamp on -bm 2 tex.png", "tex.png",
     ["quad.obj: material 'paint': map_Kd options not supported, ignored: -clamp on, -bm 2 "
      "(quad.mtl line 3)"]),
    # above the MTL's folder, or an absolute path: read, not the file of the same name beside it
    ("map_Kd ../up/tex.png", None, []),
    ("map_Kd ABSOLUTE", None, []),
])
def test_an_mtl_texture_is_read_with_its_options_named(statement, beside, said, tmp_path):
    (tmp_path / "up").mkdir()
    (tmp_path / "up" / "tex.png").write_bytes(png())
    (tmp_path / "obj").mkdir()
    (tmp_path / "obj" / (beside or "tex.png")).write_bytes(png(PAINT if beside else (0, 0, 255)))
    mtl = f"newmtl paint\nKd 1 1 1\n{statement}\n".replace("ABSOLUTE",
                                                          str(tmp_path / "up" / "tex.png"))
    mesh, got = loaded(obj_quad(tmp_path / "obj", mtl))
    assert got == said and painted(mesh)


@pytest.mark.parametrize("statement, phrase", [
    ("map_Kd bad.png", "texture 'bad.png' cannot be read: not an image (no image format Pillow "
                       "reads) (material 'paint' map_Kd, quad.mtl line 3); drawn without it"),
    ("norm bad.png", "texture 'bad.png' cannot be read: not an image (no image format Pillow "
                     "reads) (material 'paint' norm, quad.mtl line 3); drawn without it"),
    ("map_Kd cut.png", "texture 'cut.png' cannot be read: cut short or corrupt"),
    ("map_Kd wide.png", "texture 'wide.png' cannot be read: 16,385 x 1 texels, more than 16,384 "
                        "a side (material 'paint' map_Kd, quad.mtl line 3)"),
    ("map_Kd gone.png", "texture 'gone.png' not found (material 'paint' map_Kd, quad.mtl line 3)"),
])
def test_an_mtl_texture_that_cannot_be_read_is_named_and_left_out(statement, phrase, tmp_path):
    (tmp_path / "obj").mkdir()
    (tmp_path / "obj" / "cut.png").write_bytes(png(size=(64, 64))[:-40])
    (tmp_path / "obj" / "wide.png").write_bytes(png(size=(16385, 1)))
    mesh, said = loaded(obj_quad(tmp_path / "obj", f"newmtl paint\nKd 1 1 1\n{statement}\n"))
    assert len(said) == 1 and said[0].startswith("quad.obj: ") and phrase in said[0], said
    (m,) = mesh.materials
    assert m.base_color_texture == -1 and m.normal_texture == -1


@pytest.mark.parametrize("line, said", [
    ("Kd nan 0.5 0.5", "material 'paint': Kd 'nan 0.5 0.5' is not three numbers; drawn with the "
                       "default, Kd 0.4 0.4 0.4 (quad.mtl line 2)"),
    ("Kd red green blue", "material 'paint': Kd 'red green blue' is not three numbers; drawn "
                          "with the default, Kd 0.4 0.4 0.4 (quad.mtl line 2)"),
])
def test_an_mtl_colour_that_is_not_numbers_is_named_and_its_default_drawn(line, said, tmp_path):
    mesh, got = loaded(obj_quad(tmp_path, f"newmtl paint\n{line}\n"))
    assert got == [f"quad.obj: {said}"]
    assert np.allclose(mesh.materials[0].base_color, (0.4, 0.4, 0.4, 1.0))


@pytest.mark.parametrize("line", ["d 0.3", "Tr 0.7"])
def test_an_mtl_transparency_is_named_as_gltf_blending_is(line, tmp_path):
    mesh, said = loaded(obj_quad(tmp_path, f"newmtl paint\nKd 1 0 0\n{line}\n"))
    assert said == [f"quad.obj: material 'paint': alpha blending is not supported ({line}, "
                    f"quad.mtl line 3); drawn opaque"]
    assert mesh.materials[0].alpha_mode == "OPAQUE"


@pytest.mark.parametrize("another", [False, True])
def test_a_missing_material_library_is_named(another, tmp_path):
    # trimesh reads the first mtllib only: the materials of the one after it were lost too
    path = obj_quad(tmp_path, "newmtl paint\nKd 1 0 0\n", mtllib="gone.mtl")
    if another:
        path.write_text(path.read_text().replace("mtllib gone.mtl\n",
                                                 "mtllib gone.mtl\nmtllib quad.mtl\n"))
    mesh, said = loaded(path)
    assert said == ["quad.obj: material library 'gone.mtl' not found (mtllib); the faces of its "
                    "materials drawn with the default material"]
    assert [(m.name, m.base_color) for m in mesh.materials] == (
        [("paint", (1.0, 0.0, 0.0, 1.0))] if another else [])


def test_nan_and_zero_normals_are_counted(tmp_path):
    path = obj_quad(tmp_path, "", mtllib=None, normals="vn nan 0 1\nvn 0 0 1\n")
    text = path.read_text().replace("f 1/1/1 3/3/1 4/4/1", "f 1/1/2 3/3/2 4/4/2")
    path.write_text(text.replace("vn 0 0 1", "vn 0 0 0"))  # one NaN, one zero normal
    mesh, said = loaded(path)
    assert said == ["quad.obj: 6 normals are zero or not numbers (NaN, infinite); those "
                        "vertices' normals computed from the faces"]
    np.testing.assert_allclose(np.abs(mesh.wedge_normal[:, 2]), 1.0)


def test_the_warnings_of_an_obj_scene_are_given_once(tmp_path):
    path = obj_quad(tmp_path, "newmtl paint\nKd nan 1 1\n")
    text = path.read_text().replace("f 1/1 2/2 3/3\n", "o a\nf 1/1 2/2 3/3\no b\n")
    path.write_text("mtllib gone.mtl\n" + text)
    from preprocess.scene_import import read_scene

    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always", MeshWarning)
        scene = read_scene(path)
    assert scene is not None and sorted(scene.meshes) == ["a", "b"]
    assert [str(w.message) for w in got] == [
        "quad.obj: material library 'gone.mtl' not found (mtllib); the faces of its materials "
        "drawn with the default material",
        "quad.obj: material 'paint': Kd 'nan 1 1' is not three numbers; drawn with the default, "
        "Kd 0.4 0.4 0.4 (quad.mtl line 2)"]


# ------------------------------------------------------------------ the largest texture, 16,384^2


def solid_png(side: int, color=PAINT) -> bytes:
    """A side x side PNG of one colour: a palette image of one bit a texel (150 KB at 16,384)."""
    row = b"\0" * (1 + (side + 7) // 8)
    packer = zlib.compressobj(1)
    body = b"".join(packer.compress(row) for _ in range(side)) + packer.flush()

    def chunk(kind: bytes, data: bytes) -> bytes:
        return (struct.pack(">I", len(data)) + kind + data
                + struct.pack(">I", zlib.crc32(kind + data)))

    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", side, side, 1, 3, 0, 0,
                                                             0))
            + chunk(b"PLTE", bytes(color)) + chunk(b"IDAT", body) + chunk(b"IEND", b""))


def test_our_reads_use_the_texture_limit_not_pillows(tmp_path, monkeypatch):
    # Pillow's own limit (89M texels) refused a 16,384^2 texture for glTF and dropped it for
    # MTL; made tiny here, so that an 8 x 8 texture stands for one past it
    monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", 20)
    tree, binary = quad_gltf()
    (tmp_path / "obj").mkdir()
    (tmp_path / "obj" / "tex.png").write_bytes(png())
    for path in (write_gltf(tmp_path / "quad.gltf", tree, binary),
                 obj_quad(tmp_path / "obj", "newmtl paint\nmap_Kd tex.png\n")):
        mesh, said = loaded(path)
        assert said == [] and painted(mesh), path
    assert Image.MAX_IMAGE_PIXELS == 20  # raised for our reads only


def test_a_texture_option_past_the_limit_is_refused_naming_it(tmp_path):
    # the option is the user's, not the file's: refused in one line, as one not found is
    from preprocess.mesh import MeshError

    (tmp_path / "wide.png").write_bytes(png(size=(16385, 1)))
    with pytest.raises(MeshError) as info:
        load_mesh(obj_quad(tmp_path, "", mtllib=None), texture=tmp_path / "wide.png")
    assert str(info.value) == ("quad.obj: cannot read the texture wide.png: 16,385 x 1 texels, "
                               "more than 16,384 a side")


@pytest.mark.slow
def test_a_texture_of_16384_texels_a_side_is_read_and_downsized(tmp_path, capsys):
    # --texture refused it even with --max-texture-size 0; read (1 GiB decoded, 1.4 GiB at the
    # peak), the file keeps mips from 2,048 down (--max-texture-size's default)
    (tmp_path / "big.png").write_bytes(solid_png(16384))
    obj = obj_quad(tmp_path, "", mtllib=None)
    out = tmp_path / "big.tess"
    assert preprocess_main([str(obj), "--texture", str(tmp_path / "big.png"),
                            "--texture-compression", "none", "-o", str(out), "-q"]
                           ) == 0, capsys.readouterr().err
    from preprocess.tess import read_tess

    with read_tess(out) as f:  # RGBA8 (asked): its first texel read back as a word
        t = f.sections["textures"][0]
        assert (t["width"], t["height"], t["mips"]) == (2048, 2048, 12)
        assert f.sections["texels"][0] == 0xFF000000 | PAINT[2] << 16 | PAINT[1] << 8 | PAINT[0]


# ------------------------------------------------- MTL cases once silently wrong (issue 33, part 5)


def test_a_kd_of_one_value_is_grey_and_keeps_the_library(tmp_path):
    # the spec's 'Kd 0.5' is g = b = r; trimesh failed on the whole library, every material lost
    mesh, said = loaded(obj_quad(tmp_path, "newmtl paint\nKd 0.5\nnewmtl other\nKd 1 0 0\n"))
    assert said == []
    (m,) = mesh.materials
    assert m.name == "paint" and np.allclose(m.base_color, (0.5, 0.5, 0.5, 1.0), atol=1 / 255)


@pytest.mark.parametrize("mtllib", ["quad.mtl", None])
def test_a_usemtl_no_library_defines_is_named_once(mtllib, tmp_path):
    # read through trimesh (a library there) and by the fast reader (none): the faces of the
    # name drawn with the default material (trimesh's made-up grey 2 x 2 texture, without a word)
    path = obj_quad(tmp_path, "newmtl paint\nKd 1 0 0\n", mtllib=mtllib)
    text = path.read_text().replace("f 1/1 3/3 4/4", "usemtl nothere\nf 1/1 3/3 4/4")
    path.write_text(text + "v 2 0 0\nvt 0 0\nusemtl nothere\nf 2/2 5/5 3/3\n")
    mesh, said = loaded(path)
    assert said == [f"quad.obj: usemtl 'nothere' (line {12 if mtllib else 10}): no material "
                    f"library defines it; drawn with the default material"]
    assert not mesh.textures
    assert sorted(m.name for m in mesh.materials) == ([] if mtllib is None
                                                      else ["default", "paint"])


def test_a_material_library_that_is_not_text_is_named_in_one_clean_line(tmp_path):
    path = obj_quad(tmp_path, "")
    (tmp_path / "quad.mtl").write_bytes(b"\x00\xff\xfe\x1b[31m" * 50)
    mesh, said = loaded(path)
    assert said == ["quad.obj: material library 'quad.mtl' is not text: drawn with the default "
                    "material"]
    assert mesh.materials == [] and not mesh.textures


def test_a_statement_from_the_file_is_named_without_its_control_characters(tmp_path):
    _, said = loaded(obj_quad(tmp_path, "newmtl paint\nKd 1 0 0\nmap\u202eKd x\n"))
    assert said == ["quad.obj: MTL statements not supported, ignored: map\\u202eKd"]


@pytest.mark.parametrize("statement, mtllib", [
    ("map_Kd sub\\tex.png", "quad.mtl"),  # Windows separators, common in real exports
    ('map_Kd "tex.png"', "quad.mtl"),  # quoted, as some exporters write it
    ('map_Kd "sub\\tex.png"', "sub\\quad.mtl"),
])
def test_a_windows_or_quoted_name_is_read(statement, mtllib, tmp_path):
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "tex.png").write_bytes(png())
    (tmp_path / "tex.png").write_bytes(png())
    path = obj_quad(tmp_path, "", mtllib=mtllib)
    where = tmp_path / "sub" if "\\" in mtllib else tmp_path
    (where / "quad.mtl").write_text(f"newmtl paint\nKd 1 1 1\n{statement}\n")
    if "\\" in mtllib:
        (where / "tex.png").write_bytes(png((0, 0, 255)))  # sub/sub/tex.png is meant
        (where / "sub").mkdir()
        (where / "sub" / "tex.png").write_bytes(png())
    mesh, said = loaded(path)
    assert said == [] and painted(mesh)
