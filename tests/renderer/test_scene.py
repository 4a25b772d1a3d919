"""The scene's material buffer (renderer.scene.Scene.material_data): every asset's materials and
textures in one binding, indices made scene-wide, and textures that would not fit one binding
shrunk by their largest mips with a warning, never cut or garbled."""

from __future__ import annotations

import numpy as np
import pytest
import trimesh
from PIL import Image

from preprocess.build import build_file
from renderer.layout import MATERIALS_HEADER_WORDS
from renderer.scene import Scene, SceneWarning, open_asset
from preprocess.tess.records import MATERIAL_DTYPE, NO_TEXTURE, TEXTURE_DTYPE, chain_texels


def textured_box(path, size: int, shade: int):
    box = trimesh.creation.box()
    img = Image.fromarray(np.full((size, size, 3), shade, np.uint8))
    box.visual = trimesh.visual.TextureVisuals(
        uv=box.vertices[:, :2] + 0.5,
        material=trimesh.visual.material.PBRMaterial(baseColorTexture=img))
    box.export(path)
    return path


def tables(words: np.ndarray):
    tex_at, texel_at, n_mat, n_tex = (int(x) for x in words[:4])
    mats = words[MATERIALS_HEADER_WORDS: tex_at].copy().view(MATERIAL_DTYPE)
    texs = words[tex_at: texel_at].copy().view(TEXTURE_DTYPE)
    assert len(mats) == n_mat and len(texs) == n_tex
    return mats, texs, words[texel_at:]


def test_material_tables_rebase_and_shrink_to_fit(tmp_path):
    scene = Scene()
    for k, (size, shade) in enumerate(((64, 40), (128, 200))):
        out = tmp_path / f"b{k}.tess"
        build_file(textured_box(tmp_path / f"b{k}.glb", size, shade), out)
        scene.add_asset(open_asset(out))
    words, bases = scene.material_data(1 << 27)
    mats, texs, texels = tables(words)
    assert bases.tolist() == [0, 1]
    assert mats["base_color_texture"].tolist() == [0, 1]  # scene-wide texture indices
    assert [(int(t["width"]), int(t["mips"])) for t in texs] == [(64, 7), (128, 8)]
    for t, shade in zip(texs, (40, 200), strict=True):  # each chain where its record says
        first = texels[int(t["offset"])]
        assert first & 0xFF == shade
    # a binding too small for both chains: the largest texture loses its top mip, with a warning
    need = len(words) * 4
    small = need - 4 * 128 * 128 + 64
    with pytest.warns(SceneWarning, match="1 top mips left out"):
        words2, _ = scene.material_data(small)
    assert len(words2) * 4 <= small
    _, texs2, texels2 = tables(words2)
    assert [(int(t["width"]), int(t["mips"])) for t in texs2] == [(64, 7), (64, 7)]
    for t, shade in zip(texs2, (40, 200), strict=True):
        chain = texels2[int(t["offset"]): int(t["offset"]) + chain_texels(64, 64, 7)]
        assert len(chain) == chain_texels(64, 64, 7) and np.all(chain & 0xFF == shade)
    # an asset without materials draws with the default material: grey, no texture
    trimesh.creation.icosphere().export(tmp_path / "plain.ply")
    build_file(tmp_path / "plain.ply", tmp_path / "plain.tess")
    scene.add_asset(open_asset(tmp_path / "plain.tess"))
    words3, bases3 = scene.material_data(1 << 27)
    mats3, texs3, _ = tables(words3)
    assert bases3.tolist() == [0, 1, 2] and len(texs3) == 2
    assert mats3["base_color_texture"][2] == NO_TEXTURE
    np.testing.assert_allclose(mats3["base_color"][2], (0.6, 0.6, 0.6, 1.0))
