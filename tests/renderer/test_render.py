"""Tessera's frames against the brute-force reference renderer, and what the renderer promises
about itself (real WGSL on whatever adapter there is; on lavapipe the whole file takes about
half a minute, most of it building the ~1M-triangle rock once).

Figures are printed (``pytest -s`` shows them); every tolerance says why it is what it is.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from preprocess.tess.pages import decode_cluster, page_clusters
from preprocess.build import build_file
from assets import builtin_mesh
from preprocess.load import load_mesh, mesh_from_arrays
from preprocess.mesh import Mesh
from renderer.camera import Camera
from renderer.renderer import Renderer
from renderer.options import DEBUG_VIEWS, RenderOptions
from renderer.results import RenderResult
from renderer.oracles.reference import ReferenceRenderer

pytestmark = pytest.mark.gpu

SIZE = 512  # the comparison views are SIZE x SIZE
TINY_TAU = 1e-6  # pixels: no error projects below this, so every cluster drawn is level 0
IDENTITY = np.eye(4, dtype=np.float32)


# ------------------------------------------------------------------------------------------- assets


@dataclass
class Built:
    """A .tess file and the very mesh it was built from (what the reference draws)."""

    path: Path
    mesh: Mesh


def _build(mesh: Mesh, path: Path) -> Built:
    build_file(mesh, path)  # what `preprocess` does, in process, on the same Mesh object
    return Built(path, mesh)


@pytest.fixture(scope="module")
def bunny(tmp_path_factory, gpu, shared_assets) -> Built:
    path = shared_assets / "stanford-bunny.obj"
    if not path.exists():
        pytest.skip(f"{path} not available")
    return _build(load_mesh(path), tmp_path_factory.mktemp("assets") / "bunny.tess")


@pytest.fixture(scope="module")
def rock100k(tmp_path_factory, gpu) -> Built:
    # `preprocess --builtin rock --triangles 100000` builds exactly this mesh
    return _build(builtin_mesh("rock", 100_000),
                  tmp_path_factory.mktemp("assets") / "rock100k.tess")


@pytest.fixture(scope="module")
def rock1m(tmp_path_factory, gpu) -> Built:
    # the default asset (`preprocess --builtin rock`): 1,003,520 triangles
    return _build(builtin_mesh("rock", 1_000_000),
                  tmp_path_factory.mktemp("assets") / "rock1m.tess")


def renderer_for(built: Built, size: int = SIZE, **options) -> tuple[Renderer, int]:
    r = Renderer(size, size, options=RenderOptions(**options))
    asset = r.load(built.path)
    r.add_instance(asset)
    return r, asset


def reference_render(ctx, built: Built, camera: Camera, size: int = SIZE
                     ) -> dict[str, np.ndarray]:
    ref = ReferenceRenderer(ctx, size, size)
    mesh_id = ref.add_mesh_from(built.mesh)
    return ref.render(camera.view_proj(size, size), [(mesh_id, IDENTITY)])


# ------------------------------------------------------------------------------------------ cameras


def full_view(r: Renderer, fill: float = 1.0, direction=(0.3, 0.35, 1.0)) -> Camera:
    return Camera.framing(*r.bounds(), fill=fill, direction=direction)


def close_view(r: Renderer, zoom: float = 8.0, direction=(0.3, 0.35, 1.0)) -> Camera:
    """A telephoto look at the middle of the object from outside it: the framing camera's eye,
    its field of view narrowed `zoom` times, so triangles cover many pixels."""
    c = full_view(r, direction=direction)
    fov = math.degrees(2 * math.atan(math.tan(math.radians(c.fov_y) / 2) / zoom))
    return Camera(eye=c.eye, target=c.target, fov_y=fov, near=c.near)


# ------------------------------------------------------------------------------------- asset tables


def cluster_records(r: Renderer, asset: int) -> tuple[np.ndarray, np.ndarray]:
    """Every cluster record of an asset (CLUSTER_DTYPE), indexed by its global cluster index
    (the `cluster` id the renderer reports), and the page index of each."""
    pages = r.scene.assets[asset].file.pages_array()
    recs, where = [], []
    for p in range(pages.shape[0]):
        rc = page_clusters(pages[p])
        recs.append(rc.copy())
        where.append(np.full(len(rc), p))
    allrec = np.concatenate(recs)
    pagesof = np.concatenate(where)
    order = np.argsort(allrec["cluster"])
    assert (allrec["cluster"][order] == np.arange(len(allrec))).all()
    return allrec[order], pagesof[order]


@dataclass
class Decoded:
    """Every triangle of an asset as the renderer reads it: triangle (cluster c, local t) is
    row offset[c] + t of `positions` (object space, dequantized) and `grid` (grid coordinates)."""

    offset: np.ndarray  # (clusters + 1,)
    positions: np.ndarray  # (n, 3, 3) float64
    grid: np.ndarray  # (n, 3, 3) int64
    level: np.ndarray  # (n,) level of the triangle's cluster

    def rows(self, cluster: np.ndarray, triangle: np.ndarray) -> np.ndarray:
        return self.offset[cluster] + triangle


def decode_asset(r: Renderer, asset: int) -> Decoded:
    a = r.scene.assets[asset]
    step = float(a.meta["step"])
    recs, page_of = cluster_records(r, asset)
    pages = a.file.pages_array()
    offset = np.concatenate([[0], np.cumsum(recs["triangle_count"].astype(np.int64))])
    grid = np.zeros((offset[-1], 3, 3), np.int64)
    for c in range(len(recs)):
        d = decode_cluster(pages[page_of[c]], recs[c], step)
        g = np.round(d["positions"].astype(np.float64) / step).astype(np.int64)
        grid[offset[c] : offset[c + 1]] = g[d["triangles"].astype(np.int64)]
    level = np.repeat(recs["level"].astype(np.int64), np.diff(offset))
    return Decoded(offset, grid * step, grid, level)


def original_ids(dec: Decoded, mesh: Mesh, step: float) -> np.ndarray:
    """The original triangle id of every level-0 triangle (-1 elsewhere, and for one with no
    original twin). Matching is by geometry: a decoded vertex is exactly grid * step, so its grid
    coordinates are those the preprocessor computed as round(original / step); a triangle's key
    is the cyclic triple of its grid vertices rotated to start at the smallest, which keeps the
    winding (a front and a back face on the same three vertices stay apart)."""
    level0 = dec.level == 0
    orig_tris = np.round(mesh.positions.astype(np.float64) / step).astype(np.int64)[
        mesh.position_triangles]
    m = len(orig_tris)
    grids = np.concatenate([orig_tris.reshape(-1, 3), dec.grid[level0].reshape(-1, 3)])
    _, vid = np.unique(grids, axis=0, return_inverse=True)
    vid = vid.reshape(-1, 3)
    assert vid.max() < 1 << 21

    def keys(v: np.ndarray) -> np.ndarray:
        k = np.argmin(v, axis=1)
        rot = v[np.arange(len(v))[:, None], (k[:, None] + np.arange(3)) % 3]
        return (rot[:, 0] << 42) | (rot[:, 1] << 21) | rot[:, 2]

    ok = keys(vid[:m])
    order = np.argsort(ok, kind="stable")
    ok_sorted = ok[order]
    qk = keys(vid[m:])
    pos = np.clip(np.searchsorted(ok_sorted, qk), 0, m - 1)
    ids = np.full(len(dec.level), -1, np.int64)
    ids[level0] = np.where(ok_sorted[pos] == qk, order[pos], -1)
    return ids


def edge_distance(tris: np.ndarray, view_proj: np.ndarray, size: int,
                  pixels: np.ndarray) -> np.ndarray:
    """Distance in pixels from each pixel centre to the nearest edge (line) of its triangle.
    tris: (k, 3, 3) world positions; pixels: (k, 2) (row, column)."""
    vp = view_proj.astype(np.float64)
    h = np.concatenate([tris, np.ones((*tris.shape[:2], 1))], axis=-1) @ vp.T
    ndc = h[..., :2] / h[..., 3:4]
    s = np.stack([(ndc[..., 0] * 0.5 + 0.5) * size, (0.5 - ndc[..., 1] * 0.5) * size], -1)
    c = np.stack([pixels[:, 1] + 0.5, pixels[:, 0] + 0.5], -1)
    best = np.full(len(c), np.inf)
    for i in range(3):
        a, b = s[:, i], s[:, (i + 1) % 3]
        e = b - a
        cross = e[:, 0] * (c[:, 1] - a[:, 1]) - e[:, 1] * (c[:, 0] - a[:, 0])
        best = np.minimum(best, np.abs(cross) / np.maximum(np.hypot(e[:, 0], e[:, 1]), 1e-30))
    return best


# A pixel may change hands between two rasterizations of the same triangles only if its centre
# lies within this many pixels of an edge: the software rasterizer and lavapipe both snap vertices
# to 1/256 px (each moves <= sqrt(2)/512 = 0.003 px; the SW rasterizer drops to 1/16 px only for
# triangles over 125 px, none in these views), quantized positions sit <= quantization_error
# from the originals (<= 0.001 px in these views) and float32 transforms add ~1e-4 px; rounded
# up to 1/64 px.
EDGE_BAND = 1 / 64


def band_check(view_proj: np.ndarray, size: int, differ: np.ndarray,
               tri_a: np.ndarray, tri_b: np.ndarray) -> np.ndarray:
    """For the pixels `differ` (bool image), the distance of the centre to the nearest edge of
    either image's triangle there (tri_a, tri_b: (h, w, 3, 3) world positions, NaN where that
    image has none)."""
    px = np.argwhere(differ)
    da = edge_distance(tri_a[differ], view_proj, size, px)
    db = edge_distance(tri_b[differ], view_proj, size, px)
    return np.fmin(da, db)


def combined_ids(res: RenderResult) -> np.ndarray:
    """One int64 per pixel naming the triangle (instance, cluster, triangle); -1 background."""
    return np.where(res.coverage,
                    (res.instance << 40) | (res.cluster << 8) | res.triangle, -1)


def coverage_agreement(a: np.ndarray, b: np.ndarray) -> float:
    union = a | b
    return 1.0 - float((a ^ b).sum()) / max(int(union.sum()), 1)


# ---------------------------------------------------------------------------------- 1. vs reference


@pytest.mark.slow
@pytest.mark.parametrize("which", ["bunny", "rock100k"])
def test_matches_reference_at_one_pixel(which, request, gpu) -> None:
    built: Built = request.getfixturevalue(which)
    r, asset = renderer_for(built)
    cam = full_view(r)
    res = r.render(cam, tau=1.0)
    ref = reference_render(gpu, built, cam)
    mine, theirs = res.coverage, ref["instance"] >= 0
    assert res.stats.overflow == 0
    assert theirs.sum() > 0.1 * SIZE * SIZE  # the object fills a good part of the view
    assert (res.level[mine] > 0).any()  # tau = 1 px really simplifies somewhere

    # Coverage, over the union of the covered pixels (over all pixels the background, which
    # agrees trivially, would make any figure look good). Silhouettes move by at most the
    # projected error of their cluster, <= 1 px, so only a thin band along them may flip:
    # at least 99% of the union agrees.
    cov = coverage_agreement(mine, theirs)

    # Depth where both drew something. Per pixel, the drawn cluster's surface lies within
    # self_error (times the instance scale, 1 here) of the original, and its vertices within
    # quantization_error of where the simplifier put them; the software rasterizer also samples
    # the triangle's plane at vertex positions snapped to 1/256 px, a lateral shift of at most
    # sqrt(2)/512 px, i.e. sqrt(2)/512 * z / lod_scale world units at view distance z. A distance
    # E along the view axis changes NDC depth (near / z) by near * E / (z (z - E)) at most. That
    # bounds the depth difference where the surface faces the camera within 45 degrees; at
    # grazing angles and on silhouettes (where one image sees a surface behind the other's
    # edge) the difference along a ray is unbounded, hence: >= 98% of the pixels within it.
    recs, _ = cluster_records(r, asset)
    meta = r.scene.assets[asset].meta
    both = mine & theirs
    z = cam.near / ref["depth"][both].astype(np.float64)
    e = (recs["self_error"][res.cluster[both]].astype(np.float64)
         + float(meta["quantization_error"])
         + math.sqrt(2) / 512 * z / cam.lod_scale(SIZE))
    tol = cam.near * e / (z * np.maximum(z - e, 1e-30))
    tol += 4 * np.spacing(ref["depth"][both])  # float32 rounding of both depths (a few ulp)
    diff = np.abs(res.depth[both].astype(np.float64) - ref["depth"][both])
    within = float((diff <= tol).mean())
    print(f"\n[{which} @ tau=1] {res.stats.triangles} triangles, levels "
          f"{sorted(set(res.level[mine].tolist()))}; coverage agreement {cov:.4%} of "
          f"{int((mine | theirs).sum())} px; depth within the error bound on {within:.4%} of "
          f"{int(both.sum())} px (median |diff| / bound "
          f"{float(np.median(diff / tol)):.3f})")
    assert cov >= 0.99
    assert within >= 0.98


# ---------------------------------------------------------------------------------- 2. finest level


def tessera_triangles(res: RenderResult, dec: Decoded) -> np.ndarray:
    """(h, w, 3, 3) world positions of the triangle each pixel shows (NaN on the background);
    one identity instance."""
    out = np.full((*res.cluster.shape, 3, 3), np.nan)
    cov = res.coverage
    out[cov] = dec.positions[dec.rows(res.cluster[cov], res.triangle[cov])]
    return out


@pytest.mark.parametrize("which,zoom,sw_max_edge,min_agree", [
    ("bunny", 8.0, 32.0, 0.995),  # triangles of tens of px, the default SW/HW split
    ("rock100k", 6.0, 32.0, 0.995),
    ("bunny", 1.0, 0.0, 0.995),  # the whole bunny, sub-pixel triangles, all HW
    # the same all SW: triangles of ~1.5 px (~2 px of edge per px^2), the edge band flips a few
    # tenths of a percent of the pixels (checked exactly below)
    ("bunny", 1.0, 1e9, 0.995),
])
@pytest.mark.slow
def test_finest_level_draws_the_original_triangles(which, zoom, sw_max_edge, min_agree,
                                                   request, gpu) -> None:
    built: Built = request.getfixturevalue(which)
    r, asset = renderer_for(built, sw_max_edge=sw_max_edge)
    cam = close_view(r, zoom)
    res = r.render(cam, tau=TINY_TAU)
    ref = reference_render(gpu, built, cam)
    mine, theirs = res.coverage, ref["triangle"] >= 0
    assert mine.sum() > 0.1 * SIZE * SIZE
    assert (res.level[mine] == 0).all()  # tau tiny: the original triangles only
    dec = decode_asset(r, asset)
    ids = original_ids(dec, built.mesh, float(r.scene.assets[asset].meta["step"]))
    assert (ids[dec.level == 0] >= 0).all()  # level 0 holds original triangles only
    orig = np.full(res.cluster.shape, -1, np.int64)
    orig[mine] = ids[dec.rows(res.cluster[mine], res.triangle[mine])]

    both = mine & theirs
    agree = float((orig == ref["triangle"])[both].mean())
    cov = coverage_agreement(mine, theirs)
    # Every pixel where the images differ (another triangle, or covered in one only) must have
    # its centre within EDGE_BAND of an edge of a triangle drawn there.
    differ = (orig != ref["triangle"]) & (mine | theirs)
    ref_tris = np.full((*mine.shape, 3, 3), np.nan)
    ref_tris[theirs] = built.mesh.positions.astype(np.float64)[
        built.mesh.position_triangles[ref["triangle"][theirs]]]
    dist = band_check(cam.view_proj(SIZE, SIZE), SIZE, differ, tessera_triangles(res, dec),
                      ref_tris)
    kind = "HW" if res.hardware[mine].all() else "SW" if not res.hardware.any() else "SW+HW"
    print(f"\n[{which} zoom {zoom} {kind} @ tau={TINY_TAU}] {res.stats.triangles} triangles; "
          f"ids agree on {agree:.4%} of {int(both.sum())} px covered by both; coverage on "
          f"{cov:.4%}; {int(differ.sum())} px differ, the farthest centre "
          f"{float(dist.max()) if len(dist) else 0.0:.4f} px from an edge")
    assert agree >= min_agree
    assert cov >= min_agree
    assert (dist <= EDGE_BAND).all()


# -------------------------------------------------------------------------------------- 3. SW vs HW


# The floor on agreement follows the triangle size: the differing pixels are those of the edge
# band (checked exactly), whose share is the edge length per pixel (~2.3 / sqrt(triangle area in
# px)) times the band's mean width (~0.001 px, both snapping to 1/256 px): a few pixels in a
# quarter million for triangles of ~10 px or more, well under 1% for the ~1 px triangles of
# whole-object views.
@pytest.mark.parametrize("which,zoom,tau,floor", [
    ("bunny", 8.0, 1.0, 0.999),  # triangles of tens of px
    ("rock100k", 3.0, 1.0, 0.999),  # ~5 px triangles
    ("rock100k", 1.0, 1.0, 0.995),  # the whole rock: ~1 px triangles
    ("bunny", 1.0, TINY_TAU, 0.995),  # the whole bunny at level 0: sub-pixel triangles
])
@pytest.mark.slow
def test_software_and_hardware_rasterizers_agree(which, zoom, tau, floor, request) -> None:
    built: Built = request.getfixturevalue(which)
    sw, asset = renderer_for(built, sw_max_edge=1e9)  # all software (no near-plane cluster)
    hw, _ = renderer_for(built, sw_max_edge=0.0)  # all hardware
    cam = close_view(sw, zoom)
    a = sw.render(cam, tau=tau)
    b = hw.render(cam, tau=tau)
    assert a.stats.counters["hw_clusters"] == 0 and a.stats.counters["sw_clusters"] > 0
    assert b.stats.counters["sw_clusters"] == 0 and b.stats.counters["hw_clusters"] > 0
    assert not a.hardware.any() and b.hardware[b.coverage].all()
    # the LOD cut does not depend on the rasterizer: the same clusters and triangles
    assert a.stats.triangles == b.stats.triangles
    ia, ib = combined_ids(a), combined_ids(b)
    both = a.coverage & b.coverage
    agree = float((ia == ib)[both].mean())
    cov = coverage_agreement(a.coverage, b.coverage)
    dec = decode_asset(sw, asset)
    differ = ia != ib
    dist = band_check(cam.view_proj(SIZE, SIZE), SIZE, differ, tessera_triangles(a, dec),
                      tessera_triangles(b, dec))
    print(f"\n[{which} zoom {zoom} tau={tau}: SW vs HW] {a.stats.counters['sw_clusters']} "
          f"clusters, {a.stats.triangles} triangles; ids agree on {agree:.4%} of "
          f"{int(both.sum())} px, coverage on {cov:.4%}; {int(differ.sum())} px differ, the "
          f"farthest centre {float(dist.max()) if len(dist) else 0.0:.4f} px from an edge")
    assert agree >= floor
    assert cov >= floor
    assert (dist <= EDGE_BAND).all()


def hatch(rows: int, per_row: int, height: float = 20.0, pitch: float = 2.0) -> Mesh:
    """rows x per_row separate slivers in the plane z = 0, in pixel units of a 1024 px view (see
    `pixel_camera`): each leans across a height x height box but covers about a tenth of it, one
    every `pitch` px along a row, rows 2 px apart: little to draw, much for a SW lane to loop
    over (its box), and no sliver hides another."""
    i, j = np.meshgrid(np.arange(per_row), np.arange(rows))
    x0 = (i * pitch - 512.0 + 8.0).ravel()
    y0 = (j * (height + 2.0) - 512.0 + 8.0).ravel()
    corners = np.stack([np.stack([x0, y0], 1), np.stack([x0 + height + 1.0, y0 + height], 1),
                        np.stack([x0 + height, y0 + height], 1)], 1)  # (n, 3, 2), facing +z
    pos = np.concatenate([corners, np.zeros((*corners.shape[:2], 1))], -1).reshape(-1, 3)
    return mesh_from_arrays(pos.astype(np.float32), np.arange(len(pos)).reshape(-1, 3),
                            name="hatch")


def pixel_camera() -> Camera:
    """Looking down -z at the plane z = 0 from 1000 units: 1 unit = 1 px at 1024 x 1024."""
    fov = math.degrees(2 * math.atan(512.0 / 1000.0))
    return Camera(eye=np.array([0.0, 0.0, 1000.0]), target=np.zeros(3), fov_y=fov, near=1.0)


@pytest.mark.slow
def test_software_lanes_draw_every_triangle_of_a_long_run(tmp_path, gpu) -> None:
    """Lavapipe (llvmpipe) ends every loop of a shader invocation, silently, once its loops made
    65,535 iterations together (Mesa's LP_MAX_TGSI_LOOP_ITERATIONS): a SW lane that loops over
    many triangle boxes lost its last triangles (a 4x4 supersampled near view of the bunny lost
    2% of its pixels with the CPU defaults, 25% at one lane a cluster). Here most lanes draw
    about 190 slivers with 20 x 20 px boxes (one lane a cluster, three rounds; a cluster holds 85
    slivers, the 255 vertices a cluster may have): 84,000 iterations at a pixel an iteration,
    27,000 at four; every pixel the hardware rasterizer covers must be covered, by the same
    triangle. (On GPUs there is no such limit: the test holds there too.)"""
    built = _build(hatch(46, 500), tmp_path / "hatch.tess")  # 23,000 slivers, 360 clusters
    sw, _ = renderer_for(built, size=1024, sw_max_edge=1e9, sw_lanes=1, sw_rounds=3,
                         occlusion=False)
    hw, _ = renderer_for(built, size=1024, sw_max_edge=0.0, occlusion=False)
    cam = pixel_camera()
    a = sw.render(cam, tau=TINY_TAU)
    b = hw.render(cam, tau=TINY_TAU)
    assert a.stats.counters["sw_clusters"] > 256 and a.stats.counters["hw_clusters"] == 0
    assert b.stats.counters["hw_clusters"] == a.stats.counters["sw_clusters"]
    ia, ib = combined_ids(a), combined_ids(b)
    missing = int((b.coverage & ~a.coverage).sum())
    print(f"\n[hatch, 1 lane a cluster, 3 rounds] {a.stats.counters['sw_clusters']} clusters, "
          f"{int(b.coverage.sum())} px drawn by HW, {missing} of them empty in SW")
    assert missing == 0
    # the same triangles: only pixel centres on an edge may go either way (no sliver overlaps
    # another, so a differing id is a sample on a sliver's border)
    assert float((ia == ib)[a.coverage & b.coverage].mean()) >= 0.99


# -------------------------------------------------------------------------------------- 4. fallback


@pytest.mark.slow
def test_fallback32_draws_the_same_image(bunny) -> None:
    # sw_max_edge = 6 px: a mix of SW and HW clusters in both views, so both rasterizers'
    # 32-bit paths (depth pass, then id pass) are exercised
    r64, _ = renderer_for(bunny, sw_max_edge=6.0)
    r32, _ = renderer_for(bunny, sw_max_edge=6.0, fallback32=True)
    if not r64.vis64:
        pytest.skip("no 64-bit atomics on this adapter: both would be the 32-bit path")
    assert not r32.vis64
    for cam in (close_view(r64, 2.0), full_view(r64)):
        a = r64.render(cam, tau=1.0)
        b = r32.render(cam, tau=1.0)
        hw = a.hardware[a.coverage]
        assert hw.any() and not hw.all()
        # exact: both paths keep the largest depth and, among equal depths, the largest
        # payload; the images come from the same resolve
        np.testing.assert_array_equal(combined_ids(a), combined_ids(b))
        np.testing.assert_array_equal(a.depth, b.depth)
        np.testing.assert_array_equal(a.color, b.color)
        assert a.stats.counters == b.stats.counters
        print(f"\n[fallback32] identical on {int(a.coverage.sum())} covered px "
              f"({int(hw.sum())} by hardware)")


@pytest.mark.slow
def test_sw_raster_packing_draws_the_same_image(bunny) -> None:
    # the SW raster's packing (lanes per cluster, clusters per workgroup) only changes which lane
    # draws a triangle: every pixel keeps the same largest (depth, payload), so the images are
    # bit-identical. (128, 1) is the GPU default, (8, 4) the CPU adapters'; (1, 3) and (32, 3)
    # leave partly filled workgroups and lanes looping over many triangles
    configs = [(128, 1), (8, 4), (1, 3), (32, 3)]
    renderers = [renderer_for(bunny, sw_lanes=lanes, sw_rounds=rounds)[0]
                 for lanes, rounds in configs]
    assert [r.frame.raster_sw.clusters_per_workgroup for r in renderers] == [1, 64, 384, 12]
    for cam in (close_view(renderers[0], 2.0), full_view(renderers[0])):
        first = renderers[0].render(cam, tau=1.0)
        assert first.stats.counters["sw_clusters"] > 12
        for r, cfg in zip(renderers[1:], configs[1:], strict=True):
            res = r.render(cam, tau=1.0)
            np.testing.assert_array_equal(combined_ids(res), combined_ids(first), err_msg=str(cfg))
            np.testing.assert_array_equal(res.depth, first.depth)
            assert res.stats.counters == first.stats.counters


# ------------------------------------------------------------------------------------------ 5. work


@pytest.mark.slow
def test_triangles_scale_with_resolution(rock1m) -> None:
    r, _ = renderer_for(rock1m, size=256)
    cam = full_view(r, fill=1.6)
    counts = {}
    for size in (256, 512):
        r.resize(size, size)
        res = r.render(cam)
        assert res.stats.overflow == 0
        counts[size] = (res.stats.triangles, int(res.coverage.sum()))
    ratio = counts[512][0] / counts[256][0]
    print(f"\n[resolution] 256^2: {counts[256][0]} triangles on {counts[256][1]} px; 512^2: "
          f"{counts[512][0]} on {counts[512][1]} px; ratio {ratio:.2f}")
    # Twice the resolution makes every error project twice as large in pixels, i.e. the
    # threshold is halved in world terms. A simplified surface's error grows about as the
    # square of its edge length (the sagitta of a smooth surface), so the edge length allowed
    # shrinks by sqrt(2) and the count of triangles (~ 1 / edge^2) doubles: ~2x, linear in the
    # resolution (per axis), not 4x like the pixels. The range allows for the discrete levels
    # (each holds half the triangles of the one below), the clusters kept whole, and a rough
    # surface whose error does not follow the smooth law exactly.
    assert 1.4 <= ratio <= 3.0


@pytest.mark.slow
def test_far_instances_cost_little(rock1m) -> None:
    near, _ = renderer_for(rock1m)
    cam = full_view(near, fill=1.6)
    alone = near.render(cam)
    crowd, asset = renderer_for(rock1m)
    # 4 far instances, 200 radii away towards the top corners of the view (clear of the near
    # rock, which covers the middle): each covers a few pixels
    _, radius = crowd.bounds()
    view = cam.view().astype(np.float64)
    side, up, back = view[0, :3], view[1, :3], view[2, :3]
    for k in range(4):
        m = np.eye(4, dtype=np.float32)
        lateral = (k - 1.5) * 0.25 * side + 0.4 * up  # in units of the distance; fov 60: +-0.58
        m[:3, 3] = cam.eye + 200 * radius * (lateral - back)
        crowd.add_instance(asset, m)
    res = crowd.render(cam)
    assert res.stats.counters["instances_visible"] == 5
    far_px = int((res.instance >= 1).sum())
    assert 0 < far_px < 200  # they are on screen, and tiny
    added = res.stats.triangles - alone.stats.triangles
    extra = added / alone.stats.triangles
    root = int(crowd.scene.assets[asset].meta["root_triangles"])
    print(f"\n[far instances] 1 near: {alone.stats.triangles} triangles; + 4 far ({far_px} px): "
          f"{res.stats.triangles} (+{added}, +{extra:.2%}; the root level has {root})")
    # a far instance a few pixels wide needs no detail: its errors project under a pixel near
    # the top of the DAG (the halved root levels of 4 to 64 triangles), so it draws at most one
    # cluster, while the near one draws ~2e5 triangles; the four together must add under 10%
    assert 0 < added <= 4 * 128
    assert extra < 0.10


@pytest.mark.slow
def test_triangles_per_pixel_stay_bounded(rock1m) -> None:
    r, _ = renderer_for(rock1m)
    cam = full_view(r, fill=2.0)  # the rock fills most of the view
    res = r.render(cam)
    px = int(res.coverage.sum())
    per_px = res.stats.triangles / px
    print(f"\n[1M rock, 512^2, tau=1] {res.stats.triangles} triangles rasterized for {px} covered "
          f"px ({px / SIZE**2:.0%} of the view): {per_px:.2f} per pixel; "
          f"{res.stats.counters['sw_clusters']} SW + {res.stats.counters['hw_clusters']} HW "
          f"clusters (brute force: {rock1m.mesh.triangle_count / px:.2f} per pixel)")
    assert px > 0.7 * SIZE * SIZE
    # The cut keeps triangles whose error projects to ~tau = 1 px, i.e. edges of a pixel or
    # more on an object some 400 px across, so about one triangle per covered pixel; on top
    # come the back faces of the drawn clusters (counted, culled per triangle), the hidden
    # layers (no occlusion culling yet) and the finer cut that grazing silhouettes need: a
    # few, not the ~5 per covered pixel of the full 1M triangles in this view.
    assert per_px <= 4.0


# ----------------------------------------------------------------------------------- 6. debug views


def chroma(color: np.ndarray) -> np.ndarray:
    c = color[..., :3].astype(np.float64)
    return c / np.maximum(c.sum(axis=-1, keepdims=True), 1.0)


@pytest.mark.slow
def test_debug_views(bunny) -> None:
    # two bunnies side by side, seen at twice the framing zoom; sw_max_edge = 6 px gives a mix
    # of SW and HW clusters, tau = 1 px a mix of levels
    r, asset = renderer_for(bunny, sw_max_edge=6.0)
    _, radius = r.bounds()
    m = np.eye(4, dtype=np.float32)
    m[0, 3], m[2, 3] = 1.2 * radius, -0.5 * radius
    r.add_instance(asset, m)
    cam = close_view(r, 2.0)
    base = r.render(cam, tau=1.0)
    cov = base.coverage
    assert base.hardware[cov].any() and (~base.hardware[cov]).any()
    assert len(np.unique(base.level[cov])) >= 2 and len(np.unique(base.instance[cov])) == 2
    # every id view shades albedo * the same scalar light, so a pixel's chromaticity is its
    # albedo's, and the lit view lights a grey material with a white light; judged on well-lit,
    # unsaturated pixels, where 8-bit rounding moves chromaticity by < 0.01 (a channel >= 40 of
    # 255, +-0.5 rounding)
    lit = r.render(cam, tau=1.0, debug_view="lit")
    good = cov & (lit.color[..., :3].min(axis=-1) >= 60) & (lit.color[..., :3].max(axis=-1) < 250)
    assert good.sum() > 0.3 * cov.sum()
    views = {}
    for v in DEBUG_VIEWS:
        res = r.render(cam, tau=1.0, debug_view=v)
        np.testing.assert_array_equal(combined_ids(res), combined_ids(base))  # ids do not change
        assert (~cov).any() and (res.color[~cov] == res.color[~cov][0]).all()  # background
        views[v] = chroma(res.color)
        g = good & (res.color[..., :3].min(axis=-1) >= 40) & (res.color[..., :3].max(-1) < 255)
        views[v + ".good"] = g
    # lit: the default material, grey (0.6, 0.6, 0.6), under a white light
    grey = np.full(3, 1 / 3)
    assert np.abs(views["lit"][good] - grey).max() < 0.01

    def per_key(view: str, key: np.ndarray) -> tuple[float, np.ndarray, float]:
        """(largest chroma spread within a key, (keys, 3) mean chroma per key, share of the
        neighbouring pixels of different keys whose chroma differs by > 0.02, NaN if none)"""
        ch, g = views[view], views[view + ".good"]
        k = key[g]
        order = np.argsort(k, kind="stable")
        ks, vs = k[order], ch[g][order]
        starts = np.flatnonzero(np.r_[True, ks[1:] != ks[:-1]])
        spread = float((np.maximum.reduceat(vs, starts) - np.minimum.reduceat(vs, starts)).max())
        means = np.add.reduceat(vs, starts) / np.diff(np.r_[starts, len(ks)])[:, None]
        pair = g[:, 1:] & g[:, :-1] & (key[:, 1:] != key[:, :-1])
        dist = np.abs(ch[:, 1:] - ch[:, :-1]).max(axis=-1)
        return spread, means, float((dist[pair] > 0.02).mean()) if pair.any() else math.nan

    group_of = cluster_records(r, asset)[0]["group"].astype(np.int64)
    keys = {"cluster": (base.instance << 32) | base.cluster,  # hash(cluster, instance)
            "triangle": (base.cluster << 8) | base.triangle,  # hash(cluster, triangle)
            "group": (base.instance << 32) | group_of[np.maximum(base.cluster, 0)],
            "level": base.level,  # a palette
            "raster": base.hardware.astype(np.int64),  # two colours
            "instance": base.instance}  # hash(instance)
    for view, key in keys.items():
        spread, means, neighbours = per_key(view, np.where(cov, key, -1))
        told = "no neighbouring keys" if math.isnan(neighbours) else f"{neighbours:.1%}"
        print(f"\n[debug {view}] {len(means)} keys; chroma spread within a key {spread:.4f}; "
              f"neighbouring keys told apart: {told}")
        assert len(means) >= 2
        assert spread < 0.02  # one albedo per key (8-bit rounding only)
        if view in ("cluster", "triangle", "group"):
            # hash colours: two neighbouring keys rarely get colours within 0.02 of each other
            assert neighbours >= 0.9
        else:  # a few keys (levels, SW/HW, instances), all told apart
            gap = np.abs(means[:, None] - means[None]).max(axis=-1)
            assert gap[~np.eye(len(means), dtype=bool)].min() > 0.02
    # raster: SW blue-ish, HW orange
    ras, g = views["raster"], views["raster.good"]
    assert ((ras[..., 0] > ras[..., 2]) == base.hardware)[g].all()
    # level at the finest threshold: one palette entry (level 0) on every pixel
    lv = r.render(cam, tau=TINY_TAU, debug_view="level")
    ch = chroma(lv.color)
    pal0 = np.array([0.25, 0.45, 0.95]) / 1.65
    g0 = lv.coverage & (lv.color[..., :3].min(axis=-1) >= 40)
    assert g0.sum() > 0.3 * lv.coverage.sum()
    assert np.abs(ch[g0] - pal0).max() < 0.02
