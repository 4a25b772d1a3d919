"""`tessera bench --scenario instances` at tiny counts on a small image: its rows and JSON keys
(renderer.bench.instances' docstring), the stops (a count the adapter cannot hold, a frame
predicted past the limit) said in the row, the plot written. Real frames on the adapter present;
the figures themselves are BENCHMARKS.md's."""

from __future__ import annotations

import json

import pytest

from renderer.bench import suite
from renderer.bench.instances import PATHS, QUICK_FIELDS

KEYS = {"variant", "asset", "layout", "path", "count", "placing_s", "frame_ms", "gpu_ms",
        "gpu_pass_ms", "triangles", "covered_pixels", "field_pixels", "frame_triangles",
        "triangles_per_covered_pixel", "gpu_memory_mb", "instances"}


@pytest.fixture
def small_cache(tmp_path, monkeypatch):
    # the scenario's terrain and sphere are built into the cache folder: a fresh one
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))


@pytest.mark.slow
@pytest.mark.gpu
def test_instances_scenario_rows_json_and_plot(sphere_tess, tmp_path, small_cache, capsys):
    cfg = suite.SuiteConfig(asset=sphere_tess, scenarios=("instances",), quick=True, width=64,
                            height=48, frames=1, instance_counts=(4, 16, 10**9),
                            progress=False)
    js = tmp_path / "bench.json"
    assert suite.main(cfg, json_path=str(js)) == 0
    rows = json.loads(js.read_text())["scenarios"]["instances"]
    measured = [r for r in rows if "stopped" not in r]
    assert [(r["asset"], r["layout"], r["path"], r["count"]) for r in measured] == [
        (a, lay, p, n) for a, lay in QUICK_FIELDS for n in (4, 16) for p in PATHS]
    for r in measured:
        assert KEYS <= set(r)
        assert r["frame_ms"]["p95"] >= r["frame_ms"]["median"] > 0 and r["placing_s"] >= 0
        assert 0 < r["field_pixels"] <= r["covered_pixels"] <= 64 * 48
        assert r["triangles_per_covered_pixel"] == pytest.approx(
            r["frame_triangles"] / r["covered_pixels"])
        # the terrain is an instance too: it is drawn under the field
        assert r["instances"] == r["count"] + (r["layout"] == "terrain")
    # a billion instances do not fit any adapter's binding: the row says so, nothing is built
    stops = [r for r in rows if "stopped" in r]
    assert [r["count"] for r in stops] == [10**9] * len(QUICK_FIELDS)
    assert all("instances need" in r["stopped"] and "this adapter binds at most" in r["stopped"]
               for r in stops)
    out = capsys.readouterr().out
    assert "triangles a covered pixel" in out and "not run from 1,000,000,000" in out
    assert (tmp_path / "instances.png").stat().st_size > 1000


@pytest.mark.slow
@pytest.mark.gpu
def test_a_count_whose_frame_would_pass_the_limit_is_not_run(sphere_tess, small_cache, capsys):
    cfg = suite.SuiteConfig(asset=sphere_tess, scenarios=("instances",), quick=True, width=32,
                            height=32, frames=1, instance_counts=(4, 16),
                            baseline_limit=1e-6, progress=False)
    rows = suite.Suite(cfg, log=print).run()["scenarios"]["instances"]
    assert [r["count"] for r in rows] == [4, 4, 16, 4, 4, 16]
    for r in rows[2], rows[5]:
        assert r["stopped"].startswith("not run from 16: a frame ")
        assert "predicted from 4 (limit 1e-06 s)" in r["stopped"]
