"""Texture streaming (issue 35; renderer/texture_pool.py, shaders/material.wgsl): textures in 16
KiB tiles, a pool of fixed size holding the tiles the BasePass samples, the rest drawn from the
finest coarser mip that is resident (the always-resident tail at worst), never garbage."""

from __future__ import annotations

import numpy as np
import pytest
import trimesh
from PIL import Image

from assets.shapes import grid_square
from preprocess.build import build_file
from preprocess.config import BuildConfig
from preprocess.tess.records import (
    MATERIAL_DTYPE,
    TEXTURE_BC1,
    TEXTURE_BC5_NORMAL,
    TEXTURE_DTYPE,
    TEXTURE_FORMATS,
    TEXTURE_RGBA8,
    chain_words,
    mip_words,
)
from renderer import Camera, Renderer, RenderOptions
from renderer.apps.cli import main
from renderer.limits import TEXTURE_TILE_WORDS, TILE_MISSING
from renderer.texture_pool import PROTECT_FRAMES, TexturePool, TexturePoolError, tile_shift

SIZE = 160
# a tilted view over a 1024² texture on a 2 x 2 sheet: its near edge wants mip 0 and its far
# half the coarser mips, so a frame wants some of every level's tiles, never all of them
TILTED = Camera(eye=(0.0, -1.0, 0.45), target=(0.0, 0.1, 0.0), up=(0.0, 0.0, 1.0), fov_y=50.0)


def _pool(fmt: int, w: int, h: int, pool_bytes=None, budget=1024, n=1):
    """A TexturePool of `n` textures of random words (format `fmt`, w x h, a full chain)."""
    rng = np.random.default_rng(7)
    mips = int(np.log2(max(w, h))) + 1
    recs = np.zeros(n, TEXTURE_DTYPE)
    chains = []
    for i in range(n):
        recs[i] = (0, w, h, mips, 0, fmt, (0, 0))
        chains.append(rng.integers(0, 2**32, chain_words(w, h, mips, fmt), dtype=np.uint32))
    return TexturePool(np.zeros(1, MATERIAL_DTYPE), recs, chains, 1 << 27, pool_bytes,
                       budget), chains


@pytest.mark.parametrize("fmt,w,h", [(TEXTURE_RGBA8, 300, 70), (TEXTURE_BC1, 1024, 512),
                                     (TEXTURE_BC5_NORMAL, 200, 520)])
def test_tiles_hold_every_mip_word_and_the_tail_the_rest(fmt, w, h):
    # every word of every mip above the tail is in exactly one tile, where the shader's
    # addressing (tile = texel >> shift, blocks row by row in the tile) looks for it; the tail
    # is the chain's words from its first mip on, in the buffer where its record says
    pool, (chain,) = _pool(fmt, w, h)
    assert not pool.streaming and pool.resident == pool.entries
    t = pool.textures[0]
    sx, sy = tile_shift(fmt)
    per = TEXTURE_FORMATS[fmt][1] or 1  # words a block, or a texel
    unit = 1 if fmt == TEXTURE_RGBA8 else 4
    table = pool.words[pool.table_at: pool.stamp_at]
    entry = 0
    for k in range(t.tail_mip):
        mw, mh = max(1, w >> k), max(1, h >> k)
        assert mw > 1 << sx or mh > 1 << sy  # above the tail: more than one tile
        uw, uh = -(-mw // unit), -(-mh // unit)
        words = chain[int(t.offsets[k]): int(t.offsets[k]) + mip_words(mw, mh, fmt)]
        words = words.reshape(uh, uw, per)
        tw, th = (1 << sx) // unit, (1 << sy) // unit
        nx = -(-mw >> sx)
        for by in range(0, uh, 7):
            for bx in range(0, uw, 5):
                e = entry + (by // th) * nx + bx // tw
                first = int(table[e])
                at = first + ((by % th) * tw + bx % tw) * per
                assert np.array_equal(pool.words[at: at + per], words[by, bx])
        entry += nx * -(-mh >> sy)
    rec = pool.records[0]
    assert rec["tail_mip"] == t.tail_mip and entry == pool.entries
    tail = chain[int(t.offsets[t.tail_mip]):]
    assert np.array_equal(pool.words[rec["tail"]: rec["tail"] + len(tail)], tail)


def test_a_pool_too_small_for_the_tails_is_one_line():
    whole, _ = _pool(TEXTURE_BC1, 2048, 2048)
    with pytest.raises(TexturePoolError, match=r"texture pool of 0\.0 MiB is smaller than the "
                                               r"textures' coarsest mips and tables"):
        _pool(TEXTURE_BC1, 2048, 2048, pool_bytes=1000)
    # exactly the tails and tables: no slot, every sample from a tail
    tails, _ = _pool(TEXTURE_BC1, 2048, 2048, pool_bytes=whole.fixed_bytes)
    assert tails.streaming and tails.slots == 0 and tails.texture_bytes == whole.fixed_bytes
    # a 2048² BC1 texture: 170 tiles of 16 KiB above a tail of 10.7 KiB
    assert whole.entries == 170 and whole.fixed_bytes < 16 * 1024
    # what the adapter binds cannot hold even those
    recs = np.zeros(1, TEXTURE_DTYPE)
    recs[0] = (0, 64, 64, 7, 0, TEXTURE_RGBA8, (0, 0))
    with pytest.raises(TexturePoolError, match="more than this adapter binds"):
        TexturePool(np.zeros(1, MATERIAL_DTYPE), recs,
                    [np.zeros(chain_words(64, 64, 7), np.uint32)], 4096)


def test_serve_uploads_coarse_first_within_budget_and_evicts_the_least_recently_used():
    pool, _ = _pool(TEXTURE_RGBA8, 512, 512, pool_bytes=None, n=2)
    n = pool.entries  # per texture: 64 + 16 + 4 tiles above a 64² tail
    assert n == 2 * 84
    small, _ = _pool(TEXTURE_RGBA8, 512, 512, budget=10, n=2,
                     pool_bytes=pool.fixed_bytes + 30 * 4 * TEXTURE_TILE_WORDS)
    assert small.streaming and small.slots == 30
    stamps = np.zeros(n, np.uint32)
    want = np.arange(0, 84, 3)  # texture 0: 28 tiles of all three levels
    stamps[want] = 5
    up, st = small.serve(stamps, 5, 4)
    assert st["wanted"] == 28 and st["uploaded"] == 10 and st["short"] == 18
    levels = small.entry_level[[e for _, e in up]]
    assert levels.tolist() == sorted(levels.tolist(), reverse=True)  # coarse first
    assert levels.max() == 2
    for frame in range(5, 8):  # the rest within the budget, two more frames
        stamps[want] = frame + 1
        up, st = small.serve(stamps, frame + 1, frame)
    assert st["missing"] == 0 and st["resident"] == 28
    table = small.table_words()
    assert (table[want] != TILE_MISSING).all() and (np.delete(table, want) == TILE_MISSING).all()
    # a new view wants 10 tiles of texture 1: 2 free slots, then the oldest 8 of the 28; the
    # tiles used in the last PROTECT_FRAMES frames stay
    new = 84 + np.arange(10)
    stamps[:] = 0
    stamps[new] = 20
    stamps[want[:20]] = 20  # still used
    up, st = small.serve(stamps, 20, 19)
    assert st["uploaded"] == 10 and st["evicted"] == 8
    assert (small.slot_of[want[:20]] != TILE_MISSING).all()
    assert (small.slot_of[want[20:]] == TILE_MISSING).all()
    # every slot used by the last frames read back: nothing to evict, the rest short
    stamps[:] = 0
    stamps[84 + np.arange(10, 40)] = 21
    stamps[want[:20]] = 21
    stamps[new] = 21
    up, st = small.serve(stamps, 21, 20)
    assert st["uploaded"] == 0 and st["short"] == 30 and PROTECT_FRAMES >= 1


def sheet(path, *, size=1024, compression="none", holes=False):
    """A 2 x 2 sheet with a size² base-colour texture: colour cells of 8 texels with a thin
    grid, fine enough that each mip looks different. `holes`: a quarter of the cells
    transparent, an alpha cut-out (glTF MASK: the hardware rasterizer samples the alpha)."""
    v, faces = grid_square(8)
    uv = (v[:, :2] + 1) / 2
    rng = np.random.default_rng(3)
    cells = rng.integers(40, 230, (size // 8, size // 8, 4), dtype=np.uint8)
    cells[..., 3] = np.where(rng.random((size // 8, size // 8)) < 0.25, 0, 255)
    img = np.repeat(np.repeat(cells, 8, 0), 8, 1)
    img[::8, :, :3] = 20
    img[:, ::8, :3] = 20
    if not holes:
        img = img[..., :3]
    mesh = trimesh.Trimesh(v, faces, process=False)
    mesh.visual = trimesh.visual.TextureVisuals(uv=uv, material=trimesh.visual.material.PBRMaterial(
        baseColorTexture=Image.fromarray(img), metallicFactor=0.0, doubleSided=holes,
        alphaMode="MASK" if holes else None, alphaCutoff=0.5 if holes else None))
    glb = path.with_suffix(".glb")
    mesh.export(glb)
    build_file(glb, path, BuildConfig(texture_compression=compression))
    return path


def _render(tess, gpu, camera=TILTED, **opts):
    r = Renderer(SIZE, SIZE, ctx=gpu, options=RenderOptions(shadows=False, **opts))
    r.add_instance(r.load(tess))
    res = r.render_converged(camera, debug_view="base_color", tau=1.0)
    return r, res


def _sampling(gpu, sampling):
    if sampling == "hardware" and not gpu.bc_textures:  # pragma: no cover - lavapipe has it
        pytest.skip("the adapter has no texture-compression-bc: no texture unit to read BC")
    return sampling


@pytest.mark.parametrize("sampling", ["shader", "hardware"])
def test_a_small_pool_streams_the_tiles_the_view_samples(tmp_path, gpu, sampling):
    # a pool of a third of the tiles: the frames stream in the tiles the view samples and end
    # with the picture every tile resident gives, bit for bit; then a view of the other end of
    # the sheet evicts some and streams its own, and the first view comes back exactly
    # (the texture unit reads the tiles from pool textures, the shader from the buffer)
    ts = _sampling(gpu, sampling)
    tess = sheet(tmp_path / "sheet.tess")
    _, full = _render(tess, gpu, texture_sampling=ts)
    assert full.stats.textures is None  # everything fits: nothing streams
    r, res = _render(tess, gpu, texture_pool_mb=2.5, texture_sampling=ts)
    assert r.frame.hw_tiles == (ts == "hardware")
    tp = r.texture_pool
    assert tp.streaming and tp.entries == 340 and tp.slots < tp.entries // 2
    st = res.stats.textures
    assert st["uploaded"] == 0 and st["short"] == 0 and 0 < st["wanted"] <= tp.slots
    assert np.array_equal(res.color, full.color)
    assert tp.texture_bytes <= 2.5 * 2**20
    other = Camera(eye=(0.0, 1.0, 0.45), target=(0.0, -0.1, 0.0), up=(0.0, 0.0, 1.0), fov_y=50.0)
    _, full_other = _render(tess, gpu, camera=other, texture_sampling=ts)
    moved = r.render_converged(other, debug_view="base_color", tau=1.0)
    assert np.array_equal(moved.color, full_other.color)
    back = r.render_converged(TILTED, debug_view="base_color", tau=1.0)
    assert np.array_equal(back.color, full.color)
    assert r.texture_pool.resident <= tp.slots


@pytest.mark.parametrize("compression,codes", [("none", 0), ("bc", 1)])
def test_the_texture_unit_reads_the_tiles_as_the_shader_does(tmp_path, gpu, compression, codes):
    # the same tiles read by textureLoad from the pool textures (decoded by the texture unit)
    # and by material.wgsl from the buffer: RGBA8 bit for bit; BC3 (colour and the cut-out's
    # alpha) within a code, the rounding its interpolation leaves to implementations
    # (tests/renderer/test_texture_blocks.py); the same cut-out holes, drawn by the hardware
    # rasterizer from the same alpha
    _sampling(gpu, "hardware")
    tess = sheet(tmp_path / "holes.tess", compression=compression, holes=True)
    near = Camera(eye=(0.3, 0.2, 0.6), target=(0.3, 0.2, 0.0), fov_y=40.0)
    for cam in (TILTED, near):
        _, shader = _render(tess, gpu, camera=cam, texture_sampling="shader")
        _, unit = _render(tess, gpu, camera=cam, texture_sampling="hardware")
        assert 0.5 < (shader.depth > 0).mean() < 0.95  # holes: the background shows through
        assert np.array_equal(shader.depth > 0, unit.depth > 0)
        diff = np.abs(shader.color.astype(int) - unit.color.astype(int))
        assert diff.max() <= codes, diff.max()


def test_missing_tiles_fall_back_to_the_tail_never_garbage(tmp_path, gpu):
    # a pool of the tails and tables alone: every sample of the 1024² texture comes from its
    # tail's first mip (64²), bilinear, as an asset built with --max-texture-size 64 samples
    # its mip 0 where that one is magnified (this close view: lod < 4 at 1024², < 0 at 64²);
    # the texels are the same 2 x 2 means, so the pictures match within a code's rounding
    tess = sheet(tmp_path / "sheet.tess")
    near = Camera(eye=(0.3, 0.2, 0.5), target=(0.3, 0.2, 0.0), fov_y=40.0)
    whole, _ = _render(tess, gpu, camera=near)
    r, res = _render(tess, gpu, camera=near, texture_pool_mb=whole.texture_pool.fixed_bytes
                     / 2**20)
    assert r.texture_pool.slots == 0 and res.stats.textures["short"] > 0
    small = tmp_path / "small.tess"
    build_file(tmp_path / "sheet.glb", small, BuildConfig(texture_compression="none",
                                                           max_texture_size=64))
    _, ref = _render(small, gpu, camera=near)
    diff = np.abs(res.color[..., :3].astype(int) - ref.color[..., :3].astype(int))
    assert diff.max() <= 1, diff.max()
    # and not the full-detail picture: the view wanted finer mips it did not get
    _, fine = _render(tess, gpu, camera=near)
    assert np.abs(fine.color[..., :3].astype(int) - res.color[..., :3].astype(int)).max() > 40


def test_cli_refuses_a_pool_below_the_tails_in_one_line(tmp_path, gpu, capsys):
    tess = sheet(tmp_path / "sheet.tess", size=256, compression="bc")
    out = tmp_path / "x.png"
    code = main(["render", str(tess), "-o", str(out), "--size", "64x64",
                 "--texture-pool-mb", "0.001"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "texture pool of 0.0 MiB" in err[0]
    assert not out.exists()


def test_cli_renders_through_a_small_pool_and_says_what_is_resident(tmp_path, gpu, capsys):
    tess = sheet(tmp_path / "sheet.tess")
    out = tmp_path / "x.png"
    assert main(["render", str(tess), "-o", str(out), "--size", "96x96", "--texture-pool-mb",
                 "1.5", "--eye=0,-1,0.45", "--target=0,0.1,0", "--no-shadows"]) == 0
    lines = [x for x in capsys.readouterr().out.splitlines() if x.strip().startswith("textures")]
    assert len(lines) == 1 and "streamed" in lines[0] and "of 340 tiles resident in" in lines[0]
    assert out.is_file()
