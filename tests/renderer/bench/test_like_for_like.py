"""The brute-force comparisons compare like with like (issue 34, item 6): brute force's ids-only
frame against Tessera's frame without its shading passes (culling and rasterization alone), and
the shaded brute force (the shaded reference, every triangle lit) against the whole frame; the
closeup's frame taken apart. Real frames on the adapter present, a small image; the figures
themselves are BENCHMARKS.md's (wall times on a shared machine are compared there, not here)."""

from __future__ import annotations

import pytest

from renderer.bench import suite
from renderer.bench.measure import PARTS, camera_path, without


@pytest.mark.gpu
def test_frames_without_passes_leave_them_out_and_only_then(sphere_tess):
    from renderer import Renderer
    from renderer.options import RenderOptions

    r = Renderer(48, 48, options=RenderOptions(shadows=False))
    r.add_grid(r.load(sphere_tess), 4)
    cams = camera_path(*r.bounds(), 4)
    for cam in cams[:2]:  # the second frame has an HZB to test against: the post pass runs
        r.render(cam)
    full = set(r.render(cams[2]).stats.passes)
    assert {"resolve", "depth_targets", "hzb", "post_cull", "raster_sw"} <= full
    with without(r, ("depth_targets", "resolve"), occlusion=False):
        part = set(r.render(cams[3]).stats.passes)
    assert r.occlusion  # the switch as set before
    assert part == full - {"resolve", "depth_targets", "hzb", "post_cull", "post_raster_sw",
                           "post_raster_hw", "hzb_next"}
    assert set(r.render(cams[0]).stats.passes) == full  # as configured again after


@pytest.mark.slow
@pytest.mark.gpu
def test_scaling_compares_brute_force_with_the_matching_part(sphere_tess, capsys):
    cfg = suite.SuiteConfig(asset=sphere_tess, scenarios=("closeup", "scaling"), width=64,
                            height=64, frames=2, sizes=(1, 4), pygfx=False, progress=False,
                            baseline_limit=60.0)
    report = suite.Suite(cfg, log=print).run()
    for row in report["scenarios"]["scaling"]:
        vis, whole = row["visibility_ms"]["median"], row["whole_ms"]["median"]
        assert vis > 0 and whole > 0
        assert row["brute_speedup"] == pytest.approx(row["brute_frame_ms"] / vis)
        assert row["brute_shaded_speedup"] == pytest.approx(row["brute_shaded_frame_ms"] / whole)
        assert row["visibility_gpu_ms"]["median"] >= 0
    t = report["targets"]
    last = report["scenarios"]["scaling"][-1]
    assert t["brute_speedup"] == last["brute_speedup"]
    assert t["brute_shaded_speedup"] == last["brute_shaded_speedup"]
    # the closeup's frame in parts: each part's frame holds the parts before it, so the parts'
    # costs add up to the whole frame, and a frame's visibility timestamps are part of its own
    parts = report["scenarios"]["closeup"][0]["parts"]
    assert list(parts["part_ms"]) == [name for name, _ in PARTS]
    whole = parts["frames"][PARTS[-1][0]]["frame_ms"]["median"]
    assert sum(parts["part_ms"].values()) == pytest.approx(whole)
    for frame in parts["frames"].values():
        assert frame["visibility_gpu_ms"]["median"] <= frame["gpu_ms"]["median"]
        assert frame["encode_ms"]["median"] > 0 and frame["readback_ms"]["median"] >= 0
    assert parts["frames"]["overhead"]["gpu_ms"]["median"] == 0  # no pass was recorded
    report["meta"] = {"device": "d", "size": [64, 64], "asset": "a", "asset_triangles": 1,
                      "traversal": "t", "quick": False}
    report["scenarios"]["scaling"][0]["overflow"] = 1  # as a million far instances made it
    text = suite.table(report)
    assert text.count("the queue or visible list overflowed (flags 1)") == 1
    for words in ("ids only, against the visibility part", "lit, against the whole frame",
                  "culling and raster alone", "(wall time, frames of the parts side by side)",
                  "shaded brute force at 4, against the whole frame"):
        assert words in text
