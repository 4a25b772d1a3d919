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
from preprocess.config import BuildConfig
from preprocess.tess.records import (
    MATERIAL_DTYPE,
    NO_TEXTURE,
    TEXTURE_BC1,
    TEXTURE_DTYPE,
    chain_words,
)


def textured_box(path, size: int, shade: int):
    box = trimesh.creation.box()
    img = Image.fromarray(np.full((size, size, 3), shade, np.uint8))
    box.visual = trimesh.visual.TextureVisuals(
        uv=box.vertices[:, :2] + 0.5,
        material=trimesh.visual.material.PBRMaterial(baseColorTexture=img))
    box.export(path)
    return path


def test_block_compressed_tables_shrink_by_their_blocks(tmp_path):
    # BC1 chains (two words a 4 x 4 block): a texture that loses its top mip keeps the words of
    # the mips below, as the file has them, and a binding just short of both chains drops the
    # largest top mip only
    scene = Scene()
    for k, (size, shade) in enumerate(((64, 40), (128, 200))):
        out = tmp_path / f"b{k}.tess"
        build_file(textured_box(tmp_path / f"b{k}.glb", size, shade), out)
        scene.add_asset(open_asset(out))
    _, texs, texels = tables(scene.material_data(1 << 27)[0])
    assert texs["format"].tolist() == [TEXTURE_BC1, TEXTURE_BC1]
    chains = [chain_words(64, 64, 7, TEXTURE_BC1), chain_words(128, 128, 8, TEXTURE_BC1)]
    assert chains[1] == chains[0] + 2 * 32 * 32 and len(texels) == sum(chains) + 1
    whole = len(scene.material_data(1 << 27)[0]) * 4
    with pytest.warns(SceneWarning, match="1 top mips left out"):
        words, _ = scene.material_data(whole - 8)  # (the last word is padding)
    _, texs2, texels2 = tables(words)
    assert [(int(t["width"]), int(t["mips"])) for t in texs2] == [(64, 7), (64, 7)]
    big = scene.assets[1]
    kept = big.texels[2 * 32 * 32: chains[1]]  # its file's words after the top mip
    t = texs2[1]
    assert np.array_equal(texels2[int(t["offset"]): int(t["offset"]) + len(kept)], kept)


def test_a_texture_two_assets_hold_is_uploaded_once(tmp_path):
    # two meshes built from images with the same pixels (a scene's meshes sharing its images)
    # and a third with other pixels: the first two's materials name one texture, its words once
    scene = Scene()
    for k, shade in enumerate((40, 40, 200)):
        out = tmp_path / f"b{k}.tess"
        build_file(textured_box(tmp_path / f"b{k}.glb", 64, shade), out)
        scene.add_asset(open_asset(out))
    words, _ = scene.material_data(1 << 27)
    mats, texs, texels = tables(words)
    assert mats["base_color_texture"].tolist() == [0, 0, 1] and len(texs) == 2
    assert len(texels) == 2 * chain_words(64, 64, 7, TEXTURE_BC1) + 1
    assert np.array_equal(texels[: texs[1]["offset"]], scene.assets[0].texels)


def tables(words: np.ndarray):
    tex_at, texel_at, n_mat, n_tex = (int(x) for x in words[:4])
    mats = words[MATERIALS_HEADER_WORDS: tex_at].copy().view(MATERIAL_DTYPE)
    texs = words[tex_at: texel_at].copy().view(TEXTURE_DTYPE)
    assert len(mats) == n_mat and len(texs) == n_tex
    return mats, texs, words[texel_at:]


def test_material_tables_rebase_and_shrink_to_fit(tmp_path):
    # RGBA8 textures (a texel a word: each chain's shade read back where its record says)
    scene = Scene()
    for k, (size, shade) in enumerate(((64, 40), (128, 200))):
        out = tmp_path / f"b{k}.tess"
        build_file(textured_box(tmp_path / f"b{k}.glb", size, shade), out,
                   BuildConfig(texture_compression="none"))
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
        chain = texels2[int(t["offset"]): int(t["offset"]) + chain_words(64, 64, 7)]
        assert len(chain) == chain_words(64, 64, 7) and np.all(chain & 0xFF == shade)
    # an asset without materials draws with the default material: grey, no texture
    trimesh.creation.icosphere().export(tmp_path / "plain.ply")
    build_file(tmp_path / "plain.ply", tmp_path / "plain.tess")
    scene.add_asset(open_asset(tmp_path / "plain.tess"))
    words3, bases3 = scene.material_data(1 << 27)
    mats3, texs3, _ = tables(words3)
    assert bases3.tolist() == [0, 1, 2] and len(texs3) == 2
    assert mats3["base_color_texture"][2] == NO_TEXTURE
    np.testing.assert_allclose(mats3["base_color"][2], (0.6, 0.6, 0.6, 1.0))
