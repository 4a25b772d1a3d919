"""The host/shader contract: WGSL structs and offsets generated from the numpy dtypes, read back
through real WGSL on the adapter present; the shader loader's directives."""

from __future__ import annotations

import numpy as np
import pytest
import wgpu

import shaders
from renderer.device import create_context
from renderer.gpu import READ, STORAGE, UNIFORM, Binding, compute_pipelines, bind_group
from renderer.gpu import buffer, buffer_with
from renderer.instances import GpuInstances, checked_rows, max_scales
from renderer.layout import ASSET_DTYPE, FRAME_DTYPE, wgsl_struct


def test_generated_structs_match_the_dtypes_on_the_gpu(tmp_path, gpu) -> None:
    # fill every field with a distinct value; a shader copies a few fields out; any offset
    # disagreement between numpy and WGSL reads the wrong word; and the 48-byte instances
    # (renderer/instances.py) read back through shaders/instance.wgsl, as themselves and as
    # their asset's box (drawing the box's cluster, frame.proxies.w: the asset table's box_row,
    # box_min and box_size)
    d = gpu.device
    frame = np.zeros(1, FRAME_DTYPE)
    frame.view(np.uint32)[:] = np.arange(FRAME_DTYPE.itemsize // 4, dtype=np.uint32) + 1000
    frame["tau"] = 1.5
    frame["debug_view"] = 7
    frame["viewport"] = [640, 480, 1 / 640, 1 / 480]
    # instances of two assets, interleaved: slots are sorted by asset and padded per asset
    rng = np.random.default_rng(3)
    mats = np.repeat(np.eye(4)[None], 70, axis=0)
    mats[:, :3, :3] = rng.normal(size=(70, 3, 3))
    mats[:, :3, 3] = rng.normal(size=(70, 3))
    rows = checked_rows(mats)
    asset = (np.arange(70) % 3 == 0).astype(np.int32)  # 24 of asset 1, 46 of asset 0
    lay = GpuInstances.layout(asset)
    frame["instance_count"] = lay.slots
    frame["proxies"] = [lay.slots, 0, 76, 77]  # proxy slots from here on; the box's part, cluster
    assets = np.zeros(2, ASSET_DTYPE)
    assets["box_row"] = [5, 9]
    assets["box_min"] = [[-1, -2, -3, 0.5], [0.25, 0.5, 0.75, 0.1]]
    assets["box_size"] = [[2, 4, 6, 7], [1, 0.5, 0.25, 0.1]]
    bindings = (Binding("frame", UNIFORM, "Frame"),
                Binding("instances", READ, "array<vec4<u32>>"),
                Binding("assets", READ, "array<AssetInfo>"),
                Binding("out", STORAGE, "array<f32>"))
    src = tmp_path / "probe.wgsl"
    src.write_text("""#include "layout.wgsl"
#include "instance.wgsl"
@compute @workgroup_size(1)
fn cs_main() {
    out[0] = frame.tau;
    out[1] = f32(frame.debug_view);
    out[2] = frame.viewport.y;
    out[3] = f32(frame.flags);
    // per slot: present, asset, scale, the 16 entries of world (column-major); then as a box
    // the asset and the 16 entries
    for (var s = 0u; s < frame.instance_count; s++) {
        let o = 4u + 36u * s;
        out[o] = select(0.0, 1.0, instance_present(s));
        let inst = instance(s);
        out[o + 1u] = f32(inst.asset);
        out[o + 2u] = inst.scale;
        let boxed = entry_instance(s, 77u);
        out[o + 19u] = f32(boxed.asset);
        for (var c = 0u; c < 4u; c++) {
            for (var r = 0u; r < 4u; r++) {
                out[o + 3u + 4u * c + r] = inst.world[c][r];
                out[o + 20u + 4u * c + r] = boxed.world[c][r];
            }
        }
    }
}
""")
    old = shaders.HERE
    shaders.HERE = tmp_path  # the loader reads from here; layout.wgsl is generated
    (tmp_path / "instance.wgsl").write_text((old / "instance.wgsl").read_text())
    try:
        bgl, pipes = compute_pipelines(d, "probe.wgsl", bindings, ["cs_main"], label="probe")
    finally:
        shaders.HERE = old
    n_out = 4 + 36 * lay.slots
    res = {"frame": buffer_with(d, frame, "probe.frame", wgpu.BufferUsage.UNIFORM),
           "instances": buffer_with(d, lay.words(rows), "probe.inst", wgpu.BufferUsage.STORAGE),
           "assets": buffer_with(d, assets, "probe.assets", wgpu.BufferUsage.STORAGE),
           "out": buffer(d, 4 * n_out, "probe.out",
                         wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_SRC)}
    enc = d.create_command_encoder()
    cp = enc.begin_compute_pass()
    cp.set_pipeline(pipes["cs_main"])
    cp.set_bind_group(0, bind_group(d, bgl, bindings, res, "probe"))
    cp.dispatch_workgroups(1)
    cp.end()
    d.queue.submit([enc.finish()])
    out = np.frombuffer(d.queue.read_buffer(res["out"]), np.float32)[:n_out]
    flags_word = frame.view(np.uint32)[FRAME_DTYPE.fields["flags"][1] // 4]
    assert out[:4].tolist() == [1.5, 7.0, 480.0, float(flags_word)]
    per = out[4:].reshape(lay.slots, 36)
    assert lay.slots == 128  # 46 of asset 0 and 24 of asset 1, each padded to 64 slots
    present = lay.user >= 0
    assert (per[:, 0] == present).all()
    got = per[present]
    user = lay.user[present]
    assert (got[:, 1] == asset[user]).all()
    world = got[:, 3:19].reshape(-1, 4, 4).transpose(0, 2, 1)  # column-major -> rows
    assert (world[:, :3] == rows[user]).all() and (world[:, 3] == [0, 0, 0, 1]).all()
    # the GPU's scale and numpy's twin (renderer.instances.max_scales) agree to rounding
    np.testing.assert_allclose(got[:, 2], max_scales(rows[user]), rtol=1e-6)
    # as its box: the unit cube onto the asset's box, then the instance's transform
    assert (got[:, 19] == assets["box_row"][asset[user]]).all()
    box = np.repeat(np.eye(4)[None], len(user), axis=0)
    a = assets[asset[user]]
    box[:, [0, 1, 2], [0, 1, 2]] = a["box_size"][:, :3]
    box[:, :3, 3] = a["box_min"][:, :3]
    np.testing.assert_allclose(got[:, 20:].reshape(-1, 4, 4).transpose(0, 2, 1),
                               world @ box, rtol=1e-5, atol=1e-5)


def test_struct_generation_rejects_layouts_wgsl_cannot_express() -> None:
    bad = np.dtype([("a", "<f4"), ("v", "<f4", 4), ("pad", "<u4", 3)])  # vec4 at byte 4
    with pytest.raises(ValueError, match="alignment"):
        wgsl_struct("Bad", bad)
    odd = np.dtype([("a", "<f4"), ("b", "<f4")])  # 8 bytes: not a multiple of 16
    with pytest.raises(ValueError, match="multiple of 16"):
        wgsl_struct("Odd", odd)


def test_loader_directives(tmp_path, monkeypatch) -> None:
    (tmp_path / "inc.wgsl").write_text("const A: u32 = 1u;\n")
    (tmp_path / "main.wgsl").write_text(
        '#include "inc.wgsl"\n#include "inc.wgsl"\n#ifdef X\nx\n#else\nnot_x\n#endif\n'
        '#ifndef Y\nno_y\n#endif\n#include "gen.wgsl"\n')
    (tmp_path / "broken.wgsl").write_text("#ifdef X\nx\n")
    monkeypatch.setattr(shaders, "HERE", tmp_path)
    text = shaders.load("main.wgsl", defines=["X"], generated={"gen.wgsl": "generated\n"})
    assert text.split() == ["const", "A:", "u32", "=", "1u;", "x", "no_y", "generated"]
    assert "not_x" in shaders.load("main.wgsl", generated={"gen.wgsl": ""})
    with pytest.raises(shaders.ShaderSourceError, match="without #endif"):
        shaders.load("broken.wgsl")
    with pytest.raises(shaders.ShaderSourceError, match="no shader named"):
        shaders.load("missing.wgsl")


@pytest.mark.gpu
def test_device_description_names_what_it_lacks() -> None:
    ctx = create_context(force_fallback32=True)
    assert not ctx.int64_atomics
    assert "lacks int64 atomics" in ctx.description and ctx.adapter_name in ctx.description


@pytest.mark.gpu
def test_traversal_default_follows_the_adapter() -> None:
    from renderer.renderer import Renderer
    from renderer.options import RenderOptions

    r = Renderer(8, 8)
    # persistent workgroups spin; on a CPU adapter they fight over time slices (BENCHMARKS.md)
    assert r.persistent == (r.ctx.adapter_type != "CPU")
    assert Renderer(8, 8, options=RenderOptions(persistent=True)).persistent is True
    assert Renderer(8, 8, options=RenderOptions(persistent=False)).persistent is False


def test_every_package_is_shipped() -> None:
    # pyproject lists packages explicitly: a new subpackage missing there works in the editable
    # install but vanishes from a wheel
    import tomllib
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    listed = set(tomllib.loads((root / "pyproject.toml").read_text())["tool"]["setuptools"]
                 ["packages"])
    found = {str(p.parent.relative_to(root)).replace("/", ".")
             for top in ("preprocess", "renderer", "shaders", "assets")
             for p in (root / top).rglob("__init__.py")}
    assert found <= listed, f"not in pyproject packages: {sorted(found - listed)}"
