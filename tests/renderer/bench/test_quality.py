"""The quality scenario (renderer.bench.quality): its figures on constructed images whose answers
are known (identical frames, flipped normals, planted holes, a constant error), the test models it
measures (assets.hard_edges: closed, consistently wound, welded), and one GPU run on a small
generated model."""

from __future__ import annotations

import math
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from assets import hard_edges
from renderer.bench import quality
from renderer.bench.quality import Reference, View, compare, erode, reference_from

K = quality.SUPERSAMPLE
ROOT = Path(__file__).resolve().parents[3]
BG = np.array([20, 23, 28], np.uint8)  # resolve's background, (0.08, 0.09, 0.11) x 255


# ------------------------------------------------------------------------------ constructed images


def scene(shape: str) -> dict[str, np.ndarray]:
    """A small frame from an ASCII picture ('#' covered, '.' background): color (h, w, 4) uint8
    (covered pixels a shade that varies with x), normal (h, w, 3) +z, covered (h, w) bool."""
    rows = [r.strip() for r in shape.strip().splitlines()]
    cov = np.array([[c == "#" for c in r] for r in rows])
    h, w = cov.shape
    color = np.zeros((h, w, 4), np.uint8)
    color[..., :3] = BG
    color[..., 3] = 255
    shade = (100 + 10 * np.arange(w))[None, :].repeat(h, 0)
    color[cov, 0] = shade[cov]
    color[cov, 1] = shade[cov]
    color[cov, 2] = shade[cov] - 5
    normal = np.zeros((h, w, 3), np.float32)
    normal[cov] = (0, 0, 1)
    return {"color": color, "normal": normal, "covered": cov}


def supersampled(f: dict[str, np.ndarray]) -> Reference:
    """The reference of a frame whose every pixel is uniform over its K x K samples (the full-detail
    frame at the size being the frame itself)."""
    def up(a: np.ndarray) -> np.ndarray:
        return a.repeat(K, 0).repeat(K, 1)

    return reference_from(up(f["color"]), up(f["normal"]), up(f["covered"]), f["normal"],
                          f["covered"])


BLOB = """
........
.######.
.######.
.######.
.######.
.######.
........
"""


def test_box_filter_averages_blocks() -> None:
    a = np.arange(16, dtype=np.float64).reshape(4, 4)
    np.testing.assert_array_equal(quality.box_filter(a, 2), [[2.5, 4.5], [10.5, 12.5]])
    with pytest.raises(ValueError, match="multiple"):
        quality.box_filter(np.zeros((5, 4)), 2)


def test_identical_frames_have_no_error() -> None:
    f = scene(BLOB)
    m = compare(supersampled(f), f["color"], f["normal"], f["covered"], tau=1.0)
    assert m["psnr"] == math.inf
    assert m["normal_off"] == 0.0 and m["normal_off_filtered"] == 0.0
    assert m["coverage_diff"] == 0.0
    assert m["pinholes"] == 0 and m["pinholes_deep"] == 0
    assert m["covered"] == m["ref_covered"] == m["normal_px"] == 30
    assert quality.to_json([m])[0]["psnr"] is None  # strict JSON: no Infinity


def test_a_constant_error_gives_its_psnr() -> None:
    f = scene(BLOB)
    ref = supersampled(f)
    g = dict(f, color=f["color"].copy())
    g["color"][..., :3] += 1  # every pixel compared: covered ones and their background
    m = compare(ref, g["color"], g["normal"], g["covered"])
    assert m["psnr_samples"] == 3 * 30  # the covered pixels only (background is not compared)
    assert m["psnr"] == pytest.approx(20 * math.log10(255), abs=1e-9)


def test_flipped_normals_are_counted_beyond_30_degrees() -> None:
    f = scene(BLOB)
    ref = supersampled(f)
    n = f["normal"].copy()
    ys, xs = np.nonzero(f["covered"])
    n[ys[:3], xs[:3]] = (0, 0, -1)  # flipped: 180 degrees
    a = math.radians(31)
    n[ys[3:5], xs[3:5]] = (math.sin(a), 0, math.cos(a))  # just beyond
    a = math.radians(29)
    n[ys[5:9], xs[5:9]] = (0, math.sin(a), math.cos(a))  # just within: not counted
    m = compare(ref, f["color"], n, f["covered"])
    assert m["normal_off_px"] == 5 and m["normal_px"] == 30
    assert m["normal_off"] == pytest.approx(5 / 30)
    assert m["normal_off_filtered"] == pytest.approx(5 / 30)  # uniform pixels: the same normal


def test_a_planted_hole_is_one_pinhole() -> None:
    f = scene(BLOB)
    ref = supersampled(f)
    for (y, x), deep in (((3, 3), True), ((1, 1), False)):  # in the middle; on the silhouette
        g = {k: v.copy() for k, v in f.items()}
        g["covered"][y, x] = False
        g["color"][y, x, :3] = BG
        g["normal"][y, x] = 0
        m = compare(ref, g["color"], g["normal"], g["covered"], tau=1.0)
        assert m["pinholes"] == 1
        # deep at tau 1: no pixel within ceil(1) + 1 = 2 px of it short of solid; (3, 3) is 3 px
        # from the background, (1, 1) next to it
        assert m["pinholes_deep"] == (1 if deep else 0)
        m4 = compare(ref, g["color"], g["normal"], g["covered"], tau=4.0)
        assert m4["pinholes"] == 1 and m4["pinholes_deep"] == 0  # 5 px: an edge could move there
        assert m["coverage_diff_px"] == 1
        assert m["coverage_diff"] == pytest.approx(1 / 30)
        assert math.isfinite(m["psnr"]) and m["psnr"] > 20
        assert m["normal_px"] == 29 and m["normal_off"] == 0.0


def test_partly_covered_pixels_are_no_pinholes() -> None:
    f = scene(BLOB)
    up = {k: v.repeat(K, 0).repeat(K, 1) for k, v in f.items()}
    # the reference's right column of the blob is only half covered (samples 0..K/2-1 of each)
    x = 6
    up["covered"][:, x * K + K // 2 : (x + 1) * K] = False
    up["color"][:, x * K + K // 2 : (x + 1) * K, :3] = BG
    ref = reference_from(up["color"], up["normal"], up["covered"], f["normal"], f["covered"])
    assert ref.fraction[3, x] == 0.5 and ref.covered[3, x] and not ref.solid[3, x]
    g = {k: v.copy() for k, v in f.items()}
    g["covered"][:, x] = False  # the frame leaves that column out
    m = compare(ref, g["color"], g["normal"], g["covered"])
    assert m["pinholes"] == 0  # never entirely covered: an edge, not a hole
    assert m["coverage_diff_px"] == 5  # but half covered counts as covered


def test_erode_keeps_pixels_whose_neighbourhood_is_inside() -> None:
    f = scene("""
    #######
    #######
    ###.###
    #######
    #######
    """)
    got = erode(f["covered"], 1)
    want = scene("""
    #######
    ##...##
    ##...##
    ##...##
    #######
    """)["covered"]  # the image's edge continues outward: the border stays
    np.testing.assert_array_equal(got, want)
    assert not erode(f["covered"], 3).any()


def test_pooled_views_add_their_pixels() -> None:
    f = scene(BLOB)
    ref = supersampled(f)
    a = compare(ref, f["color"], f["normal"], f["covered"])
    n = f["normal"].copy()
    n[3, 3] = (1, 0, 0)
    b = compare(ref, f["color"], n, f["covered"])
    rows = [dict(asset="m", view=v, tau=1.0, triangles=t, tri_per_px=t / 30, max_level=1,
                 pinholes_hw=0, **m) for v, t, m in (("near", 30, a), ("far", 90, b))]
    (p,) = quality.pooled(rows)
    assert p["views"] == 2 and p["tri_per_px"] == pytest.approx(120 / 60)
    assert p["normal_off"] == pytest.approx(1 / 60)
    assert p["psnr"] == math.inf
    assert "m" in quality.table(rows) and "all" in quality.table([p])


def test_a_reference_above_level_0_is_refused() -> None:
    res = SimpleNamespace(level=np.array([[0, 2], [-1, 0]]),
                          coverage=np.array([[True, True], [False, True]]),
                          stats=SimpleNamespace(overflow=0))
    with pytest.raises(RuntimeError, match="level 2"):
        quality._check_full_detail(res, "test")


# ---------------------------------------------------------------------------------- the models


def edges_shared_twice(mesh) -> bool:
    t = mesh.position_triangles.astype(np.int64)
    e = np.sort(np.concatenate([t[:, [0, 1]], t[:, [1, 2]], t[:, [2, 0]]]), axis=1)
    _, count = np.unique(e, axis=0, return_counts=True)
    return bool((count == 2).all())


@pytest.mark.parametrize("make", [
    lambda: hard_edges.bevelled_box(resolution=8),
    lambda: hard_edges.star_prism(step=0.1),
    lambda: hard_edges.l_bracket(step=0.1),
    lambda: hard_edges.gear(12, step=0.08),
    lambda: hard_edges.faceted_sphere(2, 3),
    lambda: hard_edges.faceted_rock(6),
    lambda: hard_edges.cad_part(4),
    lambda: hard_edges.cad_part(4, normals=True),
], ids=["box", "star", "l", "gear", "sphere", "rock", "cad", "cad-flat"])
@pytest.mark.slow
def test_models_are_closed_wound_outward_and_welded(make) -> None:
    mesh = make()
    p = mesh.positions.astype(np.float64)
    a, b, c = (p[mesh.position_triangles[:, k]] for k in range(3))
    face = np.cross(b - a, c - a)
    assert (a * np.cross(b, c)).sum() / 6 > 0  # positive volume: outward winding
    assert edges_shared_twice(mesh)  # closed, and every shared point welded exactly
    agree = (face / np.linalg.norm(face, axis=1, keepdims=True)
             * mesh.wedge_normal[mesh.triangles].mean(axis=1)).sum(1)
    # hard edges kept as wedges (given, or computed with the loader's crease angle where the
    # cad part has no normals): every triangle's normals are its face's or close
    assert len(mesh.wedge_position) > mesh.vertex_count
    assert agree.min() > 0.7


def test_default_models_are_dense() -> None:
    for name in ("bevelled-box", "faceted-sphere", "cad-part"):
        assert 5_000 <= hard_edges.make(name).triangle_count <= 100_000
    with pytest.raises(ValueError, match="no model"):
        hard_edges.make("teapot")


def test_tool_rejects_a_bad_size_in_one_line(capsys) -> None:
    from renderer.bench.quality_suite import main

    assert main(["--size", "4", "--only", "gear"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--size 4" in err[0]


def test_tool_rejects_a_bad_normal_cost_in_one_line(capsys) -> None:
    from renderer.bench.quality_suite import main

    assert main(["--normal-cost", "nan", "--only", "gear"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--normal-cost nan" in err[0]


def test_builds_with_a_normal_cost_are_cached_apart(tmp_path) -> None:
    """A build with `--normal-cost` is another file in the cache (and says so in its meta): the
    default build's figures are never read for it, nor the other way."""
    from preprocess.tess import read_tess
    from renderer.bench.quality_suite import build

    plain, _ = build("bevelled-box", tmp_path, "k")
    costed, _ = build("bevelled-box", tmp_path, "k", normal_cost=0.5)
    assert plain != costed and plain.exists() and costed.exists()
    assert "normal_cost" not in read_tess(plain).meta
    assert read_tess(costed).meta["normal_cost"] == 0.5


def test_tessera_bench_rejects_an_unknown_quality_model_in_one_line(capsys) -> None:
    from renderer.apps.cli import main

    assert main(["bench", "--scenario", "quality", "--models", "teapot"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "teapot" in err[0] and "gear" in err[0]


# ------------------------------------------------------------------------------------- on a GPU


@pytest.mark.slow
@pytest.mark.gpu
def test_measure_quality_on_a_small_model(tmp_path) -> None:
    from preprocess.build import build_file

    path = tmp_path / "cad.tess"
    build_file(hard_edges.cad_part(4), path)
    views = [View("mid"), View("far", fill=0.5)]
    rows = quality.measure_quality(path, views, (1.0, 4.0), 64, images=tmp_path / "img")
    assert [(r["view"], r["tau"]) for r in rows] == [
        (v.name, t) for v in views for t in (None, 1.0, 4.0)]
    for r in rows:
        assert r["covered"] > 100 and r["triangles"] > 0 and r["overflow"] == 0
        assert r["reference_triangles"] >= r["triangles"]
        assert r["pinholes_hw"] >= 0  # the HW-only frame drew the same cut
        if r["tau"] is None:  # full detail at the size: level 0, aliasing only
            assert r["max_level"] == 0 and r["normal_off"] == 0.0
            # 64 x 64: aliased, but close (22.5 dB on lavapipe)
            assert r["psnr"] > 18 and r["pinholes_deep"] == 0 and r["coverage_diff"] < 0.05
        else:
            assert 0 <= r["normal_off"] <= 1 and math.isfinite(r["psnr"])
    png = sorted(p.name for p in (tmp_path / "img").iterdir())
    assert png == ["cad-part-far.png", "cad-part-mid.png"]
    print("\n" + quality.table(rows))
