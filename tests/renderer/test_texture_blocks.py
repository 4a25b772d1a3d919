"""Block-compressed textures (issue 35): shaders/material.wgsl's BC1/BC3/BC4/BC5 decoder against
the GPU's own texture unit reading the same blocks (`texture-compression-bc`, which lavapipe has
on Vulkan and OpenGL), and the encoder's blocks against the image they encode."""

from __future__ import annotations

import numpy as np
import pytest
import wgpu

import shaders
from preprocess.tess.color import linear_to_srgb
from preprocess.tess.records import (
    MATERIAL_DTYPE,
    TEXTURE_BC1,
    TEXTURE_BC3,
    TEXTURE_BC4,
    TEXTURE_BC5_GB,
    TEXTURE_BC5_NORMAL,
    TEXTURE_DTYPE,
    TEXTURE_FORMATS,
    TEXTURE_RGBA8,
    TEXTURE_SRGB,
    mip_words,
)
from preprocess.textures import compress_mip
from renderer.gpu import READ, STORAGE, Binding, bind_group, buffer, buffer_with, compute_pipelines
from renderer.texture_pool import TexturePool

# (texture record format, sRGB, the GPU format whose texture unit decodes the same blocks)
CASES = [(TEXTURE_BC1, False, "bc1-rgba-unorm"), (TEXTURE_BC1, True, "bc1-rgba-unorm-srgb"),
         (TEXTURE_BC3, False, "bc3-rgba-unorm"), (TEXTURE_BC3, True, "bc3-rgba-unorm-srgb"),
         (TEXTURE_BC4, False, "bc4-r-unorm"), (TEXTURE_BC5_NORMAL, False, "bc5-rg-unorm"),
         (TEXTURE_BC5_GB, False, "bc5-rg-unorm")]
# mips 300 x 140, 150 x 70, 75 x 35: edge blocks part-used; tiles of 256 x 128 (BC1, BC4) or
# 128 x 128 texels above the tail, edge tiles part-used
SIZE = (300, 140)
MIPS = 3


def _mips(w: int, h: int):
    return [(max(1, w >> k), max(1, h >> k)) for k in range(MIPS)]


def _device(gpu) -> wgpu.GPUDevice:
    if "texture-compression-bc" not in gpu.adapter.features:  # pragma: no cover - lavapipe has it
        pytest.skip("the adapter has no texture-compression-bc: no texture unit to compare with")
    return gpu.adapter.request_device_sync(required_features=["texture-compression-bc"],
                                           label="test.bc")


def _ours(d: wgpu.GPUDevice, textures: list[tuple[int, bool, np.ndarray]], tmp_path):
    """Every texel of every mip of `textures` ((format, srgb, words)) through material.wgsl's
    tiles and tails (`mip_words_at`, `tap_texel`): (texture, mip) -> (h, w, 4) float32."""
    recs = np.zeros(len(textures), TEXTURE_DTYPE)
    for i, (fmt, srgb, _) in enumerate(textures):
        recs[i] = (0, SIZE[0], SIZE[1], MIPS, TEXTURE_SRGB if srgb else 0, fmt, (0, 0))
    # the renderer's own buffer: the mips above the tail in tiles, every tile resident
    words = TexturePool(np.zeros(1, MATERIAL_DTYPE), recs, [w for _, _, w in textures],
                        1 << 27).words
    queries = np.array([(t, k, x, y) for t in range(len(textures))
                        for k, (w, h) in enumerate(_mips(*SIZE))
                        for y in range(h) for x in range(w)], np.uint32)
    src = tmp_path / "probe.wgsl"
    src.write_text("""#include "layout.wgsl"
#include "shading.wgsl"
#include "material.wgsl"
@compute @workgroup_size(64)
fn cs_main(@builtin(global_invocation_id) gid: vec3<u32>) {
    if gid.x >= arrayLength(&queries) {
        return;
    }
    let q = queries[gid.x];
    let tex = texture_info(q.x);
    let x = vec2<u32>(q.z);
    let y = vec2<u32>(q.w);
    let fp = Footprint(mip_words_at(tex, q.y, x, y, false), x, y, vec2<f32>(0.0), q.y);
    out[gid.x] = tap_texel(tex, fp, 0u);
}
""")
    bindings = (Binding("materials", READ, "array<u32>"),
                Binding("queries", READ, "array<vec4<u32>>"),
                Binding("out", STORAGE, "array<vec4<f32>>"))
    old = shaders.HERE
    shaders.HERE = tmp_path  # the loader reads from here; layout.wgsl is generated
    for name in ("shading.wgsl", "material.wgsl"):
        (tmp_path / name).write_text((old / name).read_text())
    try:
        bgl, pipes = compute_pipelines(d, "probe.wgsl", bindings, ["cs_main"], label="probe")
    finally:
        shaders.HERE = old
    res = {"materials": buffer_with(d, words, "probe.materials", wgpu.BufferUsage.STORAGE),
           "queries": buffer_with(d, queries, "probe.queries", wgpu.BufferUsage.STORAGE),
           "out": buffer(d, 16 * len(queries), "probe.out",
                         wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_SRC)}
    enc = d.create_command_encoder()
    cp = enc.begin_compute_pass()
    cp.set_pipeline(pipes["cs_main"])
    cp.set_bind_group(0, bind_group(d, bgl, bindings, res, "probe"))
    cp.dispatch_workgroups(-(-len(queries) // 64))
    cp.end()
    d.queue.submit([enc.finish()])
    out = np.frombuffer(d.queue.read_buffer(res["out"]), np.float32).reshape(-1, 4)
    got, at = {}, 0
    for t in range(len(textures)):
        for k, (w, h) in enumerate(_mips(*SIZE)):
            got[t, k] = out[at: at + w * h].reshape(h, w, 4)
            at += w * h
    return got


def _texture_unit(d: wgpu.GPUDevice, gpu_format: str, words: np.ndarray, fmt: int):
    """Every texel of every mip of the blocks `words` as the GPU's texture unit reads them
    (textureLoad from a texture of `gpu_format`): mip -> (h, w, 4) float32."""
    block_bytes = 4 * TEXTURE_FORMATS[fmt][1]
    tex = d.create_texture(size=(*SIZE, 1), format=gpu_format, mip_level_count=MIPS,
                           usage=wgpu.TextureUsage.TEXTURE_BINDING | wgpu.TextureUsage.COPY_DST)
    at = 0
    for k, (w, h) in enumerate(_mips(*SIZE)):
        n = mip_words(w, h, fmt)
        bw, bh = -(-w // 4), -(-h // 4)
        d.queue.write_texture({"texture": tex, "mip_level": k}, words[at: at + n],
                              {"bytes_per_row": bw * block_bytes, "rows_per_image": bh},
                              (4 * bw, 4 * bh, 1))
        at += n
    code = """
@group(0) @binding(0) var tex: texture_2d<f32>;
@group(0) @binding(1) var<storage, read_write> out: array<vec4<f32>>;
@compute @workgroup_size(1)
fn cs_main() {
    var at = 0u;
    for (var k = 0u; k < textureNumLevels(tex); k++) {
        let size = textureDimensions(tex, k);
        for (var y = 0u; y < size.y; y++) {
            for (var x = 0u; x < size.x; x++) {
                out[at] = textureLoad(tex, vec2<u32>(x, y), k);
                at++;
            }
        }
    }
}
"""
    n_out = sum(w * h for w, h in _mips(*SIZE))
    out_buf = d.create_buffer(size=16 * n_out,
                              usage=wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_SRC)
    pipe = d.create_compute_pipeline(layout="auto", compute={
        "module": d.create_shader_module(code=code), "entry_point": "cs_main"})
    group = d.create_bind_group(layout=pipe.get_bind_group_layout(0), entries=[
        {"binding": 0, "resource": tex.create_view()},
        {"binding": 1, "resource": {"buffer": out_buf}}])
    enc = d.create_command_encoder()
    cp = enc.begin_compute_pass()
    cp.set_pipeline(pipe)
    cp.set_bind_group(0, group)
    cp.dispatch_workgroups(1)
    cp.end()
    d.queue.submit([enc.finish()])
    out = np.frombuffer(d.queue.read_buffer(out_buf), np.float32).reshape(-1, 4)
    got, at = {}, 0
    for k, (w, h) in enumerate(_mips(*SIZE)):
        got[k] = out[at: at + w * h].reshape(h, w, 4)
        at += w * h
    return got


def _codes(linear: np.ndarray) -> np.ndarray:
    return linear_to_srgb(np.clip(linear, 0, 1)) * 255


@pytest.mark.gpu
def test_every_block_decodes_as_the_texture_unit_does(gpu, tmp_path) -> None:
    # random words as blocks: every mode of each format (BC1's three colours and transparent
    # black, BC4's six values and the two ends, BC3's colour half always four colours), each
    # texel of three mips (edge blocks part-used) read by material.wgsl and by the GPU's
    # texture unit from a texture of the same blocks. Tolerance: the formats leave the
    # interpolation's rounding to the implementation (Direct3D allows a few percent of the
    # endpoints' range); lavapipe's unit divides BC1's thirds as (2 a + b) * 85 >> 8, down by up
    # to 1.4 codes where ours is exact (an sRGB texel's codes rounded to whole ones before the
    # table, as the unit's): within 2 codes, sRGB compared as codes
    d = _device(gpu)
    rng = np.random.default_rng(35)
    textures = []
    for fmt, srgb, _ in CASES:
        n = sum(mip_words(w, h, fmt) for w, h in _mips(*SIZE))
        textures.append((fmt, srgb, rng.integers(0, 1 << 32, n, dtype=np.uint64).astype(np.uint32)))
    ours = _ours(d, textures, tmp_path)
    for t, (fmt, srgb, gpu_format) in enumerate(CASES):
        unit = _texture_unit(d, gpu_format, textures[t][2], fmt)
        for k in range(MIPS):
            a, b = ours[t, k], unit[k]
            name = f"{TEXTURE_FORMATS[fmt][0]}{' srgb' if srgb else ''} mip {k}"
            if fmt == TEXTURE_BC4:
                b = np.concatenate([np.repeat(b[..., :1], 3, -1), b[..., 3:]], -1)
            elif fmt == TEXTURE_BC5_NORMAL:
                n = a[..., :2] * 2 - 1
                z = np.sqrt(np.maximum(1 - (n * n).sum(-1), 0)) * 0.5 + 0.5
                np.testing.assert_allclose(a[..., 2], z, atol=1e-5, err_msg=name)
                b = np.concatenate([b[..., :2], a[..., 2:3], b[..., 3:]], -1)
            elif fmt == TEXTURE_BC5_GB:
                b = np.stack([np.zeros_like(b[..., 0]), b[..., 0], b[..., 1], b[..., 3]], -1)
            if srgb:
                a = np.concatenate([_codes(a[..., :3]), a[..., 3:] * 255], -1)
                b = np.concatenate([_codes(b[..., :3]), b[..., 3:] * 255], -1)
            else:
                a, b = a * 255, b * 255
            assert np.abs(a - b).max() <= 2, (name, np.abs(a - b).max())
        if fmt == TEXTURE_BC1:  # the random blocks hold both of its modes and transparent texels
            assert (unit[0][..., 3] == 0).any() and (unit[0][..., 3] == 1).any()


def _image(w: int, h: int) -> np.ndarray:
    """(h, w, 4) uint8: colour as textures have it, a shade over a few hues (BC1 keeps a line
    of colours a block), and an alpha that varies on its own (BC3 and BC4 keep it apart)."""
    y, x = np.mgrid[0:h, 0:w] / np.array([h, w])[:, None, None]
    shade = 0.25 + 0.7 * (0.5 + 0.5 * np.sin(3 * x + 2 * y))
    img = np.stack([shade * 0.9, shade * (0.55 + 0.2 * y), shade * 0.35 + 0.1, 0.25 + 0.7 * x], -1)
    return np.rint(img * 255).astype(np.uint8)


@pytest.mark.gpu
def test_the_encoder_keeps_the_image(gpu) -> None:
    # the image at each mip's size through compress_mip, decoded by the texture unit: the
    # channels each format keeps within 30 dB of the source for BC1 and BC3's colour (measured
    # 31.7-38.0, the small mips' steeper ramps lowest: four colours on a line a block), 37 dB
    # for BC4 and BC5's channels (measured 38.3-47.3), and BC1's alpha 1; on three mips, 20 x 12
    # down to 5 x 3 (padded by their edge texels)
    d = _device(gpu)
    h, w = SIZE[1], SIZE[0]
    for fmt, gpu_format, keep, least in ((TEXTURE_BC1, "bc1-rgba-unorm", [0, 1, 2], 30),
                                         (TEXTURE_BC3, "bc3-rgba-unorm", [0, 1, 2, 3], 30),
                                         (TEXTURE_BC4, "bc4-r-unorm", [0], 37),
                                         (TEXTURE_BC5_NORMAL, "bc5-rg-unorm", [0, 1], 37),
                                         (TEXTURE_BC5_GB, "bc5-rg-unorm", [1, 2], 37)):
        mips = [_image(mw, mh) for mw, mh in _mips(w, h)]
        if fmt == TEXTURE_BC1:  # chosen for opaque colour only
            for m in mips:
                m[..., 3] = 255
        words = np.concatenate([compress_mip(m.view("<u4").reshape(m.shape[:2]), fmt)
                                for m in mips])
        unit = _texture_unit(d, gpu_format, words, fmt)
        for k, m in enumerate(mips):
            got = unit[k] * 255
            if fmt == TEXTURE_BC5_GB:  # G and B in the two channels
                got = np.stack([got[..., 3], got[..., 0], got[..., 1], got[..., 3]], -1)
            err = got[..., keep] - m[..., keep]
            psnr = 10 * np.log10(255 ** 2 / max(float((err * err).mean()), 1e-12))
            assert psnr >= least, (TEXTURE_FORMATS[fmt][0], k, psnr)
            if fmt == TEXTURE_BC1:
                assert (got[..., 3] == 255).all()
    rgba = _image(w, h)
    assert np.array_equal(compress_mip(rgba.view("<u4").reshape(h, w), TEXTURE_RGBA8),
                          rgba.view("<u4").reshape(-1))
