"""The scene's material buffer (renderer.scene.Scene.material_data): every asset's materials and
textures in one binding, indices made scene-wide, a texture several assets hold once, and
textures that would not fit one binding streamed through a pool of tiles (every mip kept)."""

from __future__ import annotations

import numpy as np
import trimesh
from PIL import Image

from preprocess.build import build_file
from renderer.layout import (
    GPU_TEXTURE_DTYPE,
    MATERIALS_COUNT,
    MATERIALS_HEADER_WORDS,
    MATERIALS_TEXTURE_COUNT,
    MATERIALS_TEXTURES,
)
from renderer.limits import TEXTURE_TILE_WORDS, TILE_MISSING
from renderer.scene import Scene, open_asset
from preprocess.config import BuildConfig
from preprocess.tess.records import (
    MATERIAL_DTYPE,
    NO_TEXTURE,
    TEXTURE_BC1,
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


def test_textures_past_the_binding_stream_rather_than_shrink(tmp_path):
    # BC1 textures whose tiles do not all fit the binding: every mip kept (no texture made
    # smaller), the tails and tables resident, as many tile slots as fit, and the buffer
    # within the binding; where they fit, every tile resident and nothing streams
    scene = Scene()
    for k, (size, shade) in enumerate(((512, 40), (1024, 200))):
        out = tmp_path / f"b{k}.tess"
        build_file(textured_box(tmp_path / f"b{k}.glb", size, shade), out)
        scene.add_asset(open_asset(out))
    whole, _ = scene.material_data(1 << 27)
    assert not whole.streaming and whole.resident == whole.entries
    assert whole.records["format"].tolist() == [TEXTURE_BC1, TEXTURE_BC1]
    assert whole.records["mips"].tolist() == [10, 11]
    limit = whole.nbytes - 10 * 4 * TEXTURE_TILE_WORDS
    pool, _ = scene.material_data(limit)
    assert pool.streaming and pool.slots == whole.entries - 10 and pool.nbytes <= limit
    assert pool.records["mips"].tolist() == [10, 11] and pool.resident == 0
    assert (pool.table_words() == TILE_MISSING).all()


def test_a_texture_two_assets_hold_is_uploaded_once(tmp_path):
    # two meshes built from images with the same pixels (a scene's meshes sharing its images)
    # and a third with other pixels: the first two's materials name one texture, its words once
    scene = Scene()
    for k, shade in enumerate((40, 40, 200)):
        out = tmp_path / f"b{k}.tess"
        build_file(textured_box(tmp_path / f"b{k}.glb", 64, shade), out)
        scene.add_asset(open_asset(out))
    pool, _ = scene.material_data(1 << 27)
    mats, texs = tables(pool)
    assert mats["base_color_texture"].tolist() == [0, 0, 1] and len(texs) == 2
    # 64² BC1: all tail, the file's chain as it is
    n = chain_words(64, 64, 7, TEXTURE_BC1)
    assert pool.entries == 0 and pool.pool_at - pool.tail_at == 2 * n
    t0 = int(texs[0]["tail"])
    assert np.array_equal(pool.words[t0: t0 + n], scene.assets[0].texels)


def tables(pool):
    """(the materials, the GPU texture records) of a TexturePool's buffer, read back from its
    words where the header says."""
    w = pool.words
    tex_at, n_mat, n_tex = (int(w[i]) for i in (MATERIALS_TEXTURES, MATERIALS_COUNT,
                                               MATERIALS_TEXTURE_COUNT))
    mats = w[MATERIALS_HEADER_WORDS: tex_at].copy().view(MATERIAL_DTYPE)
    texs = w[tex_at: tex_at + n_tex * GPU_TEXTURE_DTYPE.itemsize // 4].copy().view(
        GPU_TEXTURE_DTYPE)
    assert len(mats) == n_mat
    return mats, texs


def test_material_tables_rebase(tmp_path):
    # RGBA8 textures (a texel a word: each chain's shade read back where its record says)
    scene = Scene()
    for k, (size, shade) in enumerate(((64, 40), (128, 200))):
        out = tmp_path / f"b{k}.tess"
        build_file(textured_box(tmp_path / f"b{k}.glb", size, shade), out,
                   BuildConfig(texture_compression="none"))
        scene.add_asset(open_asset(out))
    pool, bases = scene.material_data(1 << 27)
    mats, texs = tables(pool)
    assert bases.tolist() == [0, 1]
    assert mats["base_color_texture"].tolist() == [0, 1]  # scene-wide texture indices
    assert [(int(t["width"]), int(t["mips"])) for t in texs] == [(64, 7), (128, 8)]
    # the 64² one is all tail; the 128² one has a mip of four 64² tiles
    assert texs["tail_mip"].tolist() == [0, 1] and pool.entries == 4
    for t, shade in zip(texs, (40, 200), strict=True):  # each tail where its record says
        assert pool.words[int(t["tail"])] & 0xFF == shade
    first = pool.table_words()[0]
    assert np.all(pool.words[first: first + TEXTURE_TILE_WORDS] & 0xFF == 200)
    # an asset without materials draws with the default material: grey, no texture
    trimesh.creation.icosphere().export(tmp_path / "plain.ply")
    build_file(tmp_path / "plain.ply", tmp_path / "plain.tess")
    scene.add_asset(open_asset(tmp_path / "plain.tess"))
    pool3, bases3 = scene.material_data(1 << 27)
    mats3, texs3 = tables(pool3)
    assert bases3.tolist() == [0, 1, 2] and len(texs3) == 2
    assert mats3["base_color_texture"][2] == NO_TEXTURE
    np.testing.assert_allclose(mats3["base_color"][2], (0.6, 0.6, 0.6, 1.0))
