"""Materials in the builder (issue 16): loading glTF materials, OBJ + MTL, vertex colours and
textures; mip chains; a material border carried through the DAG as a seam; the pages and
sections that hold it all. The scenes are made in the tests with trimesh's exporters."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest
import trimesh
from PIL import Image

from preprocess.build import build_file
from preprocess.config import BuildConfig
from preprocess.dag import build_dag
from preprocess.load import load_mesh
from preprocess.materials import Texture
from preprocess.tess.color import linear_to_srgb, srgb_to_linear
from preprocess.mesh import MeshWarning
from preprocess.tess import read_tess
from preprocess.tess.container import TessFile
from preprocess.tess.pages import decode_cluster, page_clusters
from preprocess.textures import mip_chain, texture_bytes
from preprocess.verify import check_all
from renderer.apps.preprocess_cli import main as preprocess_main


def sphere_halves(path, *, colors=((0.8, 0.1, 0.1, 1.0), (0.1, 0.2, 0.9, 1.0)), uv=False):
    """A GLB: an icosphere (5,120 triangles) whose upper and lower halves are two primitives with
    two materials; the halves share their border positions bit for bit."""
    s = trimesh.creation.icosphere(subdivisions=4)
    up = s.triangles_center[:, 2] > 0
    scene = trimesh.Scene()
    for i, half in enumerate((up, ~up)):
        part = s.submesh([np.flatnonzero(half)], append=True)
        mat = trimesh.visual.material.PBRMaterial(name=f"m{i}", baseColorFactor=colors[i],
                                                  metallicFactor=0.0, roughnessFactor=0.5)
        tex_uv = (part.vertices[:, :2] * 0.5 + 0.5) if uv else None
        part.visual = trimesh.visual.TextureVisuals(uv=tex_uv, material=mat)
        scene.add_geometry(part, geom_name=f"half{i}")
    scene.export(path)
    return path


def test_mips_average_in_linear_light():
    # a 1-in-4 white checker: its mip 1 is a quarter of the light, sRGB 137 (an average of the
    # sRGB values would say 64, far too dark)
    img = np.zeros((64, 64, 4), np.uint8)
    img[::2, ::2, :3] = 255
    img[..., 3] = 255
    mips = mip_chain(Texture(img, True))
    assert [m.shape for m in mips] == [(64 >> i, 64 >> i) for i in range(7)]
    assert np.all(mips[1] & 0xFF == 137) and np.all(mips[-1] & 0xFF == 137)
    assert np.all(mips[1] >> 24 == 255)
    # linear data (normal maps) is averaged as is
    lin = mip_chain(Texture(img, False))
    assert np.all(lin[1] & 0xFF == 64)
    # odd sizes halve down to 1 x 1; a size limit starts the chain at the first mip that fits
    assert [m.shape for m in mip_chain(Texture(np.full((5, 3, 4), 9, np.uint8), False))] == [
        (5, 3), (2, 1), (1, 1)]
    assert mip_chain(Texture(img, True), 16)[0].shape == (16, 16)
    assert texture_bytes(2048, 2048) == 4 * sum(4 ** k for k in range(12))


def test_srgb_round_trip():
    v = np.arange(256) / 255
    assert np.abs(linear_to_srgb(srgb_to_linear(v)) - v).max() < 1e-12


def test_two_materials_become_a_seam_and_keep_their_areas(tmp_path):
    mesh = load_mesh(sphere_halves(tmp_path / "halves.glb"))
    assert sorted(m.name for m in mesh.materials) == ["m0", "m1"]
    red = next(m for m in mesh.materials if m.name == "m0")
    assert np.allclose(red.base_color, (0.8, 0.1, 0.1, 1.0), atol=1 / 255)
    assert red.metallic == 0.0 and red.roughness == 0.5
    tri = mesh.triangle_materials()
    assert np.bincount(tri).sum() == 5120 and np.bincount(tri).min() > 2400
    # one position on the border, two wedges: the halves are welded, their attributes apart
    shared = np.intersect1d(mesh.wedge_position[mesh.triangles[tri == 0]],
                            mesh.wedge_position[mesh.triangles[tri == 1]])
    assert len(shared) > 30
    assert mesh.wedge_material is not None
    assert (mesh.wedge_material[mesh.triangles] == tri[:, None]).all()  # all three corners
    dag = build_dag(mesh)
    # every cut is crack-free and keeps each material's area (check_cut (d))
    figures = check_all(dag, thresholds=12, honest=False)
    ratios = [c for c in figures["cuts"]]
    assert len(ratios) > 12
    assert dag.level_count >= 4


def test_materials_travel_in_the_pages(tmp_path):
    src = sphere_halves(tmp_path / "halves.glb")
    out = tmp_path / "halves.tess"
    result = build_file(src, out, BuildConfig())
    mesh = result.dag.mesh
    tri_mat = mesh.triangle_materials(result.dag.triangles)
    with read_tess(out) as f:
        assert sorted(f.meta["materials"]) == ["m0", "m1"]
        recs = f.sections["materials"]
        assert len(recs) == 2 and len(f.sections["textures"]) == 0
        blue = f.meta["materials"].index("m1")
        np.testing.assert_allclose(recs["base_color"][blue], (0.1, 0.2, 0.9, 1.0), atol=1 / 255)
        mixed = 0
        for p in range(f.page_count):
            page = np.asarray(f.page(p))
            for rec in page_clusters(page):
                c = int(rec["cluster"])
                lo, hi = result.dag.cluster_tri_offset[c], result.dag.cluster_tri_offset[c + 1]
                got = decode_cluster(page, rec, f.meta["step"])["materials"]
                np.testing.assert_array_equal(got, tri_mat[lo:hi])
                mixed += len(np.unique(got)) > 1
        assert mixed > 0  # some clusters straddle the border and store a byte per triangle


def test_vertex_colours_from_ply_are_srgb_and_from_gltf_linear(tmp_path):
    s = trimesh.creation.icosphere(subdivisions=2)
    rng = np.random.default_rng(3)
    rgba = rng.integers(0, 256, (len(s.vertices), 4), dtype=np.uint8)
    rgba[:, 3] = 255
    coloured = trimesh.Trimesh(s.vertices, s.faces, vertex_colors=rgba, process=False)
    ply = tmp_path / "c.ply"
    ply.write_bytes(trimesh.exchange.ply.export_ply(coloured, encoding="binary"))
    ascii_ply = tmp_path / "a.ply"
    ascii_ply.write_bytes(trimesh.exchange.ply.export_ply(coloured, encoding="ascii"))
    glb = tmp_path / "c.glb"
    coloured.export(glb)
    for path, decode in ((ply, True), (ascii_ply, True), (glb, False)):
        mesh = load_mesh(path)
        assert mesh.wedge_color is not None, path.name
        # each wedge's colour is its position's, as the file has it per vertex
        ids = np.argmin(np.linalg.norm(s.vertices[None] - mesh.positions[mesh.wedge_position,
                                                                            None], axis=2),
                        axis=1)
        want = rgba[ids].astype(np.float64) / 255
        if decode:  # PLY: 8-bit sRGB by convention
            want[:, :3] = srgb_to_linear(want[:, :3])
        np.testing.assert_allclose(mesh.wedge_color, want, atol=1e-6, err_msg=path.name)


def test_textures_load_build_and_report(tmp_path, capsys):
    grid = trimesh.creation.box(extents=(2, 2, 0.2))
    grid = grid.subdivide().subdivide()
    uv = grid.vertices[:, :2] * 0.5 + 0.5
    img = Image.fromarray((np.indices((32, 64)).sum(axis=0) % 2 * 255).astype(np.uint8))
    mat = trimesh.visual.material.PBRMaterial(name="checker", baseColorTexture=img,
                                              doubleSided=True, alphaMode="BLEND")
    grid.visual = trimesh.visual.TextureVisuals(uv=uv, material=mat)
    path = tmp_path / "checker.glb"
    grid.export(path)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", MeshWarning)
        mesh = load_mesh(path)
    assert [str(w.message) for w in caught] == [
        "checker.glb: material 'checker': alpha blending is not supported; drawn opaque"]
    (m,) = mesh.materials
    assert m.double_sided and m.base_color_texture == 0
    assert mesh.textures[0].image.shape == (32, 64, 4) and mesh.textures[0].srgb
    out = tmp_path / "checker.tess"
    assert preprocess_main([str(path), "-o", str(out), "--max-texture-size", "16"]) == 0
    text = capsys.readouterr().out
    assert "materials     checker; uvs" in text and "textures      1 (16x8)" in text
    with read_tess(out) as f:
        t = f.sections["textures"][0]
        assert (t["width"], t["height"], t["mips"]) == (16, 8, 5)
        assert f.sections["materials"][0]["flags"] == 1  # double-sided


def test_a_texture_option_for_an_obj_without_mtl(tmp_path, capsys):
    box = trimesh.creation.box()
    lines = [f"v {x} {y} {z}" for x, y, z in box.vertices]
    lines += [f"vt {x * 0.5 + 0.5} {y * 0.5 + 0.5}" for x, y, _ in box.vertices]
    lines += [f"f {a + 1}/{a + 1} {b + 1}/{b + 1} {c + 1}/{c + 1}" for a, b, c in box.faces]
    obj = tmp_path / "box.obj"
    obj.write_text("\n".join(lines) + "\n")
    png = tmp_path / "paint.png"
    Image.fromarray(np.full((8, 8, 3), 200, np.uint8)).save(png)
    mesh = load_mesh(obj, texture=png)
    assert mesh.materials[0].base_color_texture == 0 and mesh.wedge_uv is not None
    assert preprocess_main([str(obj), "-o", str(tmp_path / "b.tess"), "--texture", str(png),
                            "-q"]) == 0
    assert preprocess_main([str(obj), "-o", str(tmp_path / "c.tess"), "--texture",
                            str(tmp_path / "none.png"), "-q"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "texture file not found" in err[0]
    assert not (tmp_path / "c.tess").exists()


def test_missing_texture_and_glowing_surface_are_named(shared_assets):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", MeshWarning)
        load_mesh(shared_assets / "textured" / "BoomBox" / "BoomBox.gltf")
        load_mesh(shared_assets / "textured" / "WaterBottle" / "WaterBottle.gltf")
    text = [str(w.message) for w in caught]
    assert text == [
        "BoomBox.gltf: texture 'BoomBox_occlusionRoughnessMetallic.png' not found (material "
        "'BoomBox_Mat' metallic-roughness; material 'BoomBox_Mat' occlusion); drawn without it",
        "WaterBottle.gltf: material 'BottleMat': emissive factor (1, 1, 1) without an emissive "
        "texture: the whole surface glows (as the file says)"]


def test_a_corrupted_texel_is_found(tmp_path):
    # the texels are a section like the others: a flipped byte fails its CRC before any use
    grid = trimesh.creation.box()
    img = Image.fromarray(np.full((16, 16, 3), 90, np.uint8))
    grid.visual = trimesh.visual.TextureVisuals(
        uv=grid.vertices[:, :2] + 0.5,
        material=trimesh.visual.material.PBRMaterial(baseColorTexture=img))
    path = tmp_path / "t.glb"
    grid.export(path)
    out = tmp_path / "t.tess"
    build_file(path, out)
    raw = bytearray(out.read_bytes())
    with TessFile(out) as f:  # where the texels' (deflated) bytes lie
        at = f.section_offsets["texels"]
    raw[at + 5] ^= 0x40
    out.write_bytes(bytes(raw))
    with pytest.raises(ValueError, match="texels"):
        read_tess(out).close()


def test_coarse_levels_prefilter_vertex_colours():
    # per-vertex noise: a coarse vertex stands for many, and carries their area-weighted mean
    # colour (as a far view's pixel averages them), not one original vertex's; the surface's
    # mean colour stays, its vertex-to-vertex spread shrinks level by level
    from preprocess.load import mesh_from_arrays

    s = trimesh.creation.icosphere(subdivisions=4)
    rng = np.random.default_rng(1)
    colors = np.c_[rng.random((len(s.vertices), 3)), np.ones(len(s.vertices))]
    dag = build_dag(mesh_from_arrays(s.vertices, s.faces, colors=colors))
    m = dag.mesh

    def level(lv):
        cl = np.flatnonzero(dag.cluster_level == lv)
        rows = np.concatenate([np.arange(dag.cluster_tri_offset[c], dag.cluster_tri_offset[c + 1])
                               for c in cl])
        tri = np.asarray(dag.triangles)[rows]
        p = m.positions[m.wedge_position[tri]].astype(np.float64)
        area = 0.5 * np.linalg.norm(np.cross(p[:, 1] - p[:, 0], p[:, 2] - p[:, 0]), axis=1)
        mean = (m.wedge_color[tri].mean(axis=1) * area[:, None]).sum(0) / area.sum()
        return mean[:3], m.wedge_color[np.unique(tri)][:, :3].std(0).mean()

    mean0, spread0 = level(0)
    assert spread0 > 0.25
    for lv in range(2, dag.level_count):
        mean, spread = level(lv)
        assert np.abs(mean - mean0).max() < 0.03, lv
        assert spread < 0.8 ** lv * spread0, (lv, spread)  # 0.29 -> 0.18, 0.13, 0.10 ... 0.01


def test_obj_mtl_colours_textures_and_normal_maps(tmp_path):
    # three materials over a subdivided quad: a map_Kd texture with a `norm` normal map (its
    # -bm scale kept), a grey map_Bump (a height map: named, not used), a map_Kd file missing
    # (named; trimesh drops it silently) and an MTL statement not drawn (map_Ks)
    grid = trimesh.creation.box(extents=(2, 2, 0.1)).subdivide()
    v, f = grid.vertices, grid.faces
    lines = ["mtllib scene.mtl"] + [f"v {a} {b} {c}" for a, b, c in v]
    lines += [f"vt {a * 0.5 + 0.5} {b * 0.5 + 0.5}" for a, b, _ in v]
    third = len(f) // 3
    for k, name in enumerate(("painted", "bumpy", "lost")):
        lines.append(f"usemtl {name}")
        lines += [f"f {a + 1}/{a + 1} {b + 1}/{b + 1} {c + 1}/{c + 1}"
                  for a, b, c in f[k * third:(k + 1) * third if k < 2 else len(f)]]
    (tmp_path / "scene.obj").write_text("\n".join(lines) + "\n")
    Image.fromarray(np.full((8, 8, 3), (200, 60, 30), np.uint8)).save(tmp_path / "paint.png")
    Image.fromarray(np.full((8, 8, 3), (140, 128, 250), np.uint8)).save(tmp_path / "nrm.png")
    Image.fromarray(np.full((8, 8), 90, np.uint8)).save(tmp_path / "height.png")
    (tmp_path / "scene.mtl").write_text(
        "newmtl painted\nKd 1 1 1\nmap_Kd paint.png\nnorm -bm 0.5 nrm.png\nmap_Ks spec.png\n"
        "newmtl bumpy\nKd 0.2 0.8 0.2\nmap_Bump height.png\n"
        "newmtl lost\nKd 0.5 0.5 0.5\nmap_Kd gone.png\n")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", MeshWarning)
        mesh = load_mesh(tmp_path / "scene.obj")
    text = sorted(str(w.message) for w in caught)
    assert text == sorted([
        "scene.obj: texture 'gone.png' not found (material 'lost' map_Kd, scene.mtl line 11); "
        "drawn without it",
        "scene.obj: material 'bumpy': map_Bump 'height.png' is a height map (grey); bump maps "
        "are not supported, normal maps are: drawn without it",
        "scene.obj: MTL statements not supported, ignored: map_Ks"])
    mats = {m.name: m for m in mesh.materials}
    assert sorted(mats) == ["bumpy", "lost", "painted"]
    painted = mats["painted"]
    assert painted.base_color_texture >= 0 and painted.normal_texture >= 0
    assert painted.normal_scale == 0.5
    normal_map = mesh.textures[painted.normal_texture]
    assert not normal_map.srgb and tuple(normal_map.image[0, 0, :3]) == (140, 128, 250)
    assert mats["bumpy"].normal_texture == -1
    assert np.allclose(mats["bumpy"].base_color[:3], (0.2, 0.8, 0.2), atol=1 / 255)
    assert mats["lost"].base_color_texture == -1


def test_more_materials_than_an_asset_holds_is_one_line(tmp_path):
    from preprocess.mesh import MeshError
    from preprocess.tess.limits import MAX_MATERIALS

    scene = trimesh.Scene()
    for k in range(MAX_MATERIALS + 1):
        tri = trimesh.Trimesh([[k, 0, 0], [k + 1, 0, 0], [k, 1, 0]], [[0, 1, 2]], process=False)
        tri.visual = trimesh.visual.TextureVisuals(material=trimesh.visual.material.PBRMaterial(
            name=f"m{k}", baseColorFactor=(k / 200, 0.5, 0.5, 1.0)))
        scene.add_geometry(tri, geom_name=f"t{k}")
    scene.export(tmp_path / "many.glb")
    with pytest.raises(MeshError, match=r"many.glb: 129 materials in one mesh; an asset holds "
                                        r"at most 128"):
        load_mesh(tmp_path / "many.glb")


def test_an_unreadable_texture_file_is_named(tmp_path):
    # trimesh drops a texture it cannot decode without a word; the loader names it
    box = trimesh.creation.box()
    img = Image.fromarray(np.full((8, 8, 3), 90, np.uint8))
    box.visual = trimesh.visual.TextureVisuals(
        uv=box.vertices[:, :2] + 0.5,
        material=trimesh.visual.material.PBRMaterial(name="paint", baseColorTexture=img))
    box.export(tmp_path / "box.gltf")  # writes the PNG beside it
    tree = json.loads((tmp_path / "box.gltf").read_text())
    uri = tree["images"][0]["uri"] if "uri" in tree["images"][0] else None
    if uri is None:  # embedded: write it out as a file the JSON names
        (tmp_path / "paint.png").write_bytes(b"\x89PNG\r\n\x1a\n" + b"\0" * 40)
        tree["images"][0] = {"uri": "paint.png"}
        (tmp_path / "box.gltf").write_text(json.dumps(tree))
        uri = "paint.png"
    else:
        (tmp_path / uri).write_bytes(b"\x89PNG\r\n\x1a\n" + b"\0" * 40)  # cut short
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", MeshWarning)
        mesh = load_mesh(tmp_path / "box.gltf")
    text = [str(w.message) for w in caught]
    assert len(text) == 1 and text[0].startswith(f"box.gltf: texture {uri!r} cannot be read: ")
    assert text[0].endswith("(material 'paint' base colour); drawn without it")
    assert mesh.materials[0].base_color_texture == -1


def test_a_texture_the_encoder_refuses_is_kept_uncompressed(monkeypatch):
    # the block encoder failing (memory, a library fault) on one texture: a warning names it
    # and the texture stays, as RGBA8; the others are compressed as asked
    import preprocess.textures as textures
    from preprocess.materials import Material
    from preprocess.tess.records import TEXTURE_BC5_NORMAL, TEXTURE_RGBA8, chain_words

    real = textures.compress_mip

    def failing(mip, fmt):
        if fmt != TEXTURE_BC5_NORMAL:
            raise MemoryError("out of memory")
        return real(mip, fmt)

    monkeypatch.setattr(textures, "compress_mip", failing)
    paint = np.full((16, 16, 4), 200, np.uint8)
    paint[..., 3] = 255  # opaque: BC1
    colour = Texture(paint, True, "paint.png")
    normal = Texture(np.full((16, 16, 4), 128, np.uint8), False, "bumps.png")
    with pytest.warns(MeshWarning, match=r"texture 'paint.png': bc1 encoding failed \(out of "
                                         r"memory\): kept uncompressed"):
        s = textures.encode_materials([Material(base_color_texture=0, normal_texture=1)],
                                      [colour, normal])
    assert s["textures"]["format"].tolist() == [TEXTURE_RGBA8, TEXTURE_BC5_NORMAL]
    assert s["texels"][0] == 0xFFC8C8C8  # the paint's first texel as a word
    assert len(s["texels"]) == chain_words(16, 16, 5) + chain_words(16, 16, 5, TEXTURE_BC5_NORMAL)
