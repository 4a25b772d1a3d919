"""The quality scenario (issue 15): what the LOD cut costs the picture, per asset and view.

For each view, Tessera draws the asset at full detail (tau = `FULL_DETAIL_TAU`: every cluster
drawn is level 0, checked on the level image) twice: at the measured size, and at `SUPERSAMPLE`
times its width and height, box-filtered down to the measured size: the **reference**, the image a
pixel should show (its colour the mean of 4 x 4 samples, its coverage the share of them covered).
It is Tessera's own full-detail frame, so the reference shares the resolve pass's shading exactly
and every difference is the LOD cut's (or aliasing's: the full-detail frame at the measured size
is reported as the row ``tau = full``). The brute-force reference renderer draws the same level-0
triangles but gives ids and depth only: shading them would need a second, CPU copy of resolve's
lighting, which is one more thing that could disagree.

Then the asset is drawn at each tau and compared (`compare`):

- ``tri_per_px``: triangles drawn (`FrameStats.triangles`) per covered pixel (`instance >= 0`);
- ``normal_off``: share of the pixels covered in both that and the full-detail frame at the same
  size whose normals are more than `NORMAL_OFF_DEGREES` apart (the issue's figure);
  ``normal_off_filtered``: the same against the reference's filtered normal (the normalized mean
  of the 16 samples) on the pixels the reference covers entirely; it is not zero at full detail
  (aliasing), which makes it the fairer figure for sub-pixel triangles;
- ``psnr``: of the lit RGB (0..255) against the reference, over the pixels covered in either
  (the reference covering a pixel when any sample is covered), background included where one of
  them is empty; inf for identical images;
- ``coverage_diff``: pixels covered in one of the frame and the reference and not the other
  (the reference covering a pixel when at least half its samples are), relative to the
  reference's covered pixels;
- ``pinholes``: empty pixels whose 16 reference samples are all covered; ``pinholes_deep``: those
  of them further than ceil(tau) + 1 px inside the reference's solid region, where no allowed
  error moves an edge; ``pinholes_hw``: ``pinholes`` of the same cut drawn by the hardware
  rasterizer alone (-1 if its cut differed), which tells holes in the cut from cracks the
  software rasterizer leaves.

Frames are drawn as `tessera render` draws one: a fresh frame with no occlusion history
(``occlusion=False``: a first frame has no HZB to test against), fully resident. The camera paths
and timers of `renderer.bench.measure` do not apply (still frames, no timing): the views here are
`View`s, framings of the asset's bounding sphere at three distances.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from renderer.camera import Camera

__all__ = ["FULL_DETAIL_TAU", "NORMAL_OFF_DEGREES", "SUPERSAMPLE", "TAUS", "VIEWS", "Reference",
           "View", "box_filter", "compare", "diagnostic", "erode", "measure_quality", "pooled",
           "psnr_from", "reference_from", "strip", "table", "to_json"]

FULL_DETAIL_TAU = 1e-6  # pixels: no stored error projects below this: level 0 only
SUPERSAMPLE = 4  # the reference's samples per pixel along each axis
NORMAL_OFF_DEGREES = 30.0  # a normal further than this from full detail's counts as wrong
TAUS = (1.0, 2.0, 4.0)
HW_ONLY_EDGE = 1e-3  # RenderOptions.sw_max_edge that sends every cluster to the HW rasterizer


@dataclass(frozen=True)
class View:
    """A framing of the asset's bounding sphere."""

    name: str
    fill: float = 1.0  # share of the view height the bounding sphere fills
    zoom: float = 1.0  # telephoto: the field of view narrowed this many times, same eye
    direction: tuple[float, float, float] = (0.3, 0.35, 1.0)  # from the centre to the eye

    def camera(self, center: np.ndarray, radius: float) -> Camera:
        c = Camera.framing(center, radius, direction=self.direction, fill=self.fill)
        if self.zoom != 1.0:
            half = math.atan(math.tan(math.radians(c.fov_y) / 2) / self.zoom)
            c = Camera(eye=c.eye, target=c.target, fov_y=math.degrees(2 * half), near=c.near)
        return c


# near: a quarter of the object across the view (triangles of many pixels); mid: the object fills
# the view; far: the object a quarter of the view high
VIEWS = (View("near", zoom=4.0), View("mid"), View("far", fill=0.25))


# ------------------------------------------------------------------------------------- metrics


@dataclass
class Reference:
    """What each pixel of an h x w frame should show, and the full-detail frame at that size."""

    color: np.ndarray  # (h, w, 3) float64 RGB 0..255: the mean of the samples (background too)
    fraction: np.ndarray  # (h, w) float64: share of the samples covered
    normal: np.ndarray  # (h, w, 3) float64 unit mean of the covered samples' normals (0: none)
    full_normal: np.ndarray  # (h, w, 3) float32 the full-detail frame's normals (pixel centres)
    full_covered: np.ndarray  # (h, w) bool the full-detail frame's coverage

    @property
    def covered(self) -> np.ndarray:
        """(h, w) bool: at least half the samples covered (what a pixel-centre sample shows)."""
        return self.fraction >= 0.5

    @property
    def solid(self) -> np.ndarray:
        """(h, w) bool: every sample covered."""
        return self.fraction >= 1.0


def box_filter(a: np.ndarray, k: int) -> np.ndarray:
    """The mean of each k x k block: (k h, k w, ...) -> (h, w, ...) float64."""
    h, w = a.shape[0] // k, a.shape[1] // k
    if a.shape[0] != h * k or a.shape[1] != w * k:
        raise ValueError(f"box_filter: {a.shape[:2]} is not a multiple of {k}")
    b = np.asarray(a, np.float64).reshape(h, k, w, k, *a.shape[2:])
    return b.mean(axis=(1, 3))


def _unit(v: np.ndarray) -> np.ndarray:
    n = np.linalg.norm(v, axis=-1, keepdims=True)
    return np.divide(v, n, out=np.zeros_like(v, dtype=np.float64), where=n > 0)


def reference_from(ss_color: np.ndarray, ss_normal: np.ndarray, ss_covered: np.ndarray,
                   full_normal: np.ndarray, full_covered: np.ndarray,
                   k: int = SUPERSAMPLE) -> Reference:
    """The `Reference` from a full-detail frame at k times the size (color (kh, kw, 3 or 4)
    uint8, normal (kh, kw, 3), coverage (kh, kw) bool) and one at the size (normal, coverage)."""
    cov = np.asarray(ss_covered, bool)
    normal = np.where(cov[..., None], np.asarray(ss_normal, np.float64), 0.0)
    return Reference(color=box_filter(ss_color[..., :3], k), fraction=box_filter(cov, k),
                     normal=_unit(box_filter(normal, k)),
                     full_normal=np.asarray(full_normal, np.float32),
                     full_covered=np.asarray(full_covered, bool))


def _off(a: np.ndarray, b: np.ndarray, mask: np.ndarray, degrees: float) -> tuple[int, int]:
    """(pixels of `mask` whose unit normals a and b are more than `degrees` apart, pixels)."""
    dot = (_unit(a[mask].astype(np.float64)) * _unit(b[mask].astype(np.float64))).sum(-1)
    return int(np.count_nonzero(dot < math.cos(math.radians(degrees)))), int(dot.size)


def erode(mask: np.ndarray, r: int) -> np.ndarray:
    """(h, w) bool: the pixels of `mask` whose every pixel within Chebyshev distance r is in it
    (the image's edge pixels continue outward)."""
    out = np.asarray(mask, bool)
    if r <= 0:
        return out
    for axis in (0, 1):
        pad = [(0, 0), (0, 0)]
        pad[axis] = (r, r)
        win = np.lib.stride_tricks.sliding_window_view(np.pad(out, pad, mode="edge"),
                                                      2 * r + 1, axis=axis)
        out = win.all(axis=-1)
    return out


def compare(ref: Reference, color: np.ndarray, normal: np.ndarray, covered: np.ndarray, *,
            tau: float | None = None, degrees: float = NORMAL_OFF_DEGREES) -> dict:
    """A frame (color (h, w, 3 or 4) uint8, normal (h, w, 3), covered (h, w) bool) against the
    reference: the figures of the module docstring, with the pixel counts they come from (so
    that views pool: `pooled`). `tau` sets the margin of ``pinholes_deep`` (None: full detail,
    1 px)."""
    cov = np.asarray(covered, bool)
    off, both = _off(normal, ref.full_normal, cov & ref.full_covered, degrees)
    off_f, solid = _off(normal, ref.normal, cov & ref.solid, degrees)
    union = cov | (ref.fraction > 0)
    err = np.asarray(color[..., :3], np.float64)[union] - ref.color[union]
    sse = float((err * err).sum())
    ref_cov = ref.covered
    holes = ref.solid & ~cov
    margin = (math.ceil(tau) if tau is not None else 0) + 1
    return {
        "covered": int(cov.sum()),
        "ref_covered": int(ref_cov.sum()),
        "normal_off": off / both if both else 0.0,
        "normal_off_px": off,
        "normal_px": both,
        "normal_off_filtered": off_f / solid if solid else 0.0,
        "normal_off_filtered_px": off_f,
        "normal_filtered_px": solid,
        "psnr": psnr_from(sse, 3 * int(union.sum())),
        "sse": sse,
        "psnr_samples": 3 * int(union.sum()),
        "coverage_diff": int((cov ^ ref_cov).sum()) / max(int(ref_cov.sum()), 1),
        "coverage_diff_px": int((cov ^ ref_cov).sum()),
        "pinholes": int(holes.sum()),
        "pinholes_deep": int((holes & erode(ref.solid, margin)).sum()),
    }


def psnr_from(sse: float, samples: int, peak: float = 255.0) -> float:
    """PSNR in dB of a sum of squared errors over `samples` values (inf when it is 0; NaN when
    there is nothing to compare)."""
    if samples == 0:
        return float("nan")
    if sse == 0:
        return float("inf")
    return 10 * math.log10(peak * peak * samples / sse)


# --------------------------------------------------------------------------------- measurement


def _check_full_detail(res, what: str) -> None:
    levels = res.level[res.coverage]
    if levels.size and int(levels.max()) > 0:
        raise RuntimeError(f"{what}: the full-detail frame drew level {int(levels.max())} "
                           f"(tau {FULL_DETAIL_TAU} px did not force level 0): the reference "
                           "would not be the original surface")
    if res.stats.overflow:
        raise RuntimeError(f"{what}: the full-detail frame overflowed (flags "
                           f"{res.stats.overflow}): raise RenderOptions' capacities")


def measure_quality(tess_path: str | os.PathLike, views: Sequence[View] = VIEWS,
                    taus: Sequence[float] = TAUS, size: int = 256, *, ctx=None,
                    instances: int = 1, name: str | None = None,
                    images: str | os.PathLike | None = None,
                    progress: Callable[[str], None] | None = None) -> list[dict]:
    """Draw a `.tess` asset from each view at full detail (the reference, supersampled) and at
    each tau, `size` x `size`; one row per (view, tau), the full-detail frame at the size first
    (``tau`` None), each with the `compare` figures and ``pinholes_hw``, ``triangles``,
    ``clusters``, ``tri_per_px``, ``mean_level``, ``max_level``, ``overflow`` and
    ``reference_triangles`` (drawn by the supersampled frame). `instances` > 1: that many on
    a grid (`Renderer.add_grid`), the views framing them all (`make demo`: 64, fill 1.7).
    `images`: a folder where a side-by-side PNG per view is written (`strip`). `ctx`: the GPU
    context to share."""
    from renderer.renderer import Renderer
    from renderer.options import RenderOptions

    report = progress or (lambda what: None)
    # no shadows: what the LOD cut costs the picture, comparable with runs before them (a
    # supersampled frame would mark finer shadow levels; `--scenario shadows` measures them)
    opts = RenderOptions(occlusion=False, streaming=False, shadows=False)
    r = Renderer(size, size, options=opts, ctx=ctx)
    big = Renderer(SUPERSAMPLE * size, SUPERSAMPLE * size, options=opts, ctx=r.ctx)
    # the same cut, every cluster through the hardware rasterizer: tells the cut's holes from
    # the software rasterizer's (it snaps triangles over 125 px to 1/16 px, not 1/256)
    hw = Renderer(size, size, options=RenderOptions(occlusion=False, streaming=False,
                                                    shadows=False, sw_max_edge=HW_ONLY_EDGE),
                  ctx=r.ctx)
    for x in (r, big, hw):  # as `tessera render` places them
        if instances == 1:
            x.add_instance(x.load(tess_path))
        else:
            x.add_grid(x.load(tess_path), instances)
    label = name or r.scene.assets[0].meta.get("name") or Path(tess_path).stem
    center, radius = r.bounds()
    rows = []
    for view in views:
        cam = view.camera(center, radius)
        ss = big.render(cam, tau=FULL_DETAIL_TAU)
        _check_full_detail(ss, f"{label} {view.name} x{SUPERSAMPLE}")
        full = r.render(cam, tau=FULL_DETAIL_TAU)
        _check_full_detail(full, f"{label} {view.name}")
        ref = reference_from(ss.color, ss.normal, ss.coverage, full.normal, full.coverage)
        frames = [(None, full)] + [(float(t), r.render(cam, tau=float(t))) for t in taus]
        for tau, res in frames:
            m = compare(ref, res.color, res.normal, res.coverage, tau=tau)
            h = hw.render(cam, tau=FULL_DETAIL_TAU if tau is None else tau)
            same = h.stats.triangles == res.stats.triangles  # the cut is the rasterizers' own
            m["pinholes_hw"] = int((ref.solid & ~h.coverage).sum()) if same else -1
            lv = res.level[res.coverage]
            rows.append({
                "asset": label, "view": view.name, "tau": tau,
                "triangles": res.stats.triangles, "clusters": res.stats.clusters,
                "tri_per_px": res.stats.triangles / max(m["covered"], 1),
                "mean_level": float(lv.mean()) if lv.size else 0.0,
                "max_level": int(lv.max()) if lv.size else 0,
                "overflow": res.stats.overflow, **m,
                "reference_triangles": ss.stats.triangles,
            })
        if images is not None:
            Path(images).mkdir(parents=True, exist_ok=True)
            from renderer.results import write_png

            write_png(Path(images) / f"{label}-{view.name}.png", strip(ref, frames))
        report(f"{label} {view.name}")
    return rows


# ---------------------------------------------------------------------------------- pictures

_BACKGROUND = (0, 0, 0)
_OK = (110, 110, 110)
_NORMAL_OFF = (230, 40, 40)  # covered, normal more than NORMAL_OFF_DEGREES from full detail
_PINHOLE = (255, 230, 0)  # empty, every reference sample covered
_EDGE = (40, 110, 255)  # covered in one of the frame and the reference only


def diagnostic(ref: Reference, normal: np.ndarray, covered: np.ndarray) -> np.ndarray:
    """(h, w, 4) uint8: grey where the frame agrees with full detail, red where its normal is
    more than NORMAL_OFF_DEGREES off, blue where the coverage differs, yellow on pinholes."""
    h, w = covered.shape
    out = np.zeros((h, w, 4), np.uint8)
    out[..., 3] = 255
    out[covered] = (*_OK, 255)
    both = covered & ref.full_covered
    dot = (_unit(np.asarray(normal, np.float64)) * _unit(ref.full_normal.astype(np.float64))
           ).sum(-1)
    out[both & (dot < math.cos(math.radians(NORMAL_OFF_DEGREES)))] = (*_NORMAL_OFF, 255)
    out[covered ^ ref.covered] = (*_EDGE, 255)
    out[ref.solid & ~covered] = (*_PINHOLE, 255)
    return out


def strip(ref: Reference, frames: list, *, panel: int = 256) -> np.ndarray:
    """(2 h, (1 + len(frames)) w, 4) uint8: the reference then each frame (tau None first), lit
    above, `diagnostic` below (under the reference: its coverage share, grey). Cropped to what
    any of them covers (6 px around) and magnified (nearest) towards `panel` px, so that a far
    view is not a speck."""
    h, w = ref.fraction.shape
    top = [np.concatenate([np.round(ref.color).astype(np.uint8), np.full((h, w, 1), 255,
                                                                        np.uint8)], -1)]
    g = np.round(255 * ref.fraction).astype(np.uint8)
    bottom = [np.stack([g, g, g, np.full_like(g, 255)], -1)]
    seen = ref.fraction > 0
    for _, res in frames:
        top.append(res.color)
        bottom.append(diagnostic(ref, res.normal, res.coverage))
        seen = seen | res.coverage
    ys, xs = np.nonzero(seen)
    if len(ys):
        y0, y1 = max(int(ys.min()) - 6, 0), min(int(ys.max()) + 7, h)
        x0, x1 = max(int(xs.min()) - 6, 0), min(int(xs.max()) + 7, w)
    else:
        y0, y1, x0, x1 = 0, h, 0, w
    zoom = max(1, panel // max(y1 - y0, x1 - x0))

    def cut(a: np.ndarray) -> np.ndarray:
        return a[y0:y1, x0:x1].repeat(zoom, 0).repeat(zoom, 1)

    top, bottom = [cut(a) for a in top], [cut(a) for a in bottom]
    ph = top[0].shape[0]
    sep = np.full((ph, 2, 4), 255, np.uint8)
    row = [np.concatenate([x for a in top for x in (a, sep)][:-1], 1),
           np.concatenate([x for a in bottom for x in (a, sep)][:-1], 1)]
    return np.concatenate([row[0], np.full((2, row[0].shape[1], 4), 255, np.uint8), row[1]])


# ---------------------------------------------------------------------------------- reporting


def pooled(rows: list[dict]) -> list[dict]:
    """One row per (asset, tau), every view's pixels pooled: triangles per covered pixel over
    all views, shares of all pixels compared, PSNR of all errors, pinholes summed."""
    out: dict[tuple, dict] = {}
    for r in rows:
        p = out.setdefault((r["asset"], r["tau"]), {"asset": r["asset"], "view": "all",
                                                    "tau": r["tau"], "views": 0})
        p["views"] += 1
        for k in ("triangles", "covered", "ref_covered", "normal_off_px", "normal_px",
                  "normal_off_filtered_px", "normal_filtered_px", "sse", "psnr_samples",
                  "coverage_diff_px", "pinholes", "pinholes_deep"):
            p[k] = p.get(k, 0) + r[k]
        hw = r.get("pinholes_hw", -1)
        p["pinholes_hw"] = -1 if min(hw, p.get("pinholes_hw", 0)) < 0 else (
            p.get("pinholes_hw", 0) + hw)
        p["max_level"] = max(p.get("max_level", 0), r["max_level"])
    for p in out.values():
        p["tri_per_px"] = p["triangles"] / max(p["covered"], 1)
        p["normal_off"] = p["normal_off_px"] / max(p["normal_px"], 1)
        p["normal_off_filtered"] = p["normal_off_filtered_px"] / max(p["normal_filtered_px"], 1)
        p["psnr"] = psnr_from(p["sse"], p["psnr_samples"])
        p["coverage_diff"] = p["coverage_diff_px"] / max(p["ref_covered"], 1)
    return list(out.values())


def table(rows: list[dict]) -> str:
    """A text table of `measure_quality` (or `pooled`) rows."""
    head = (f"{'asset':<16} {'view':<5} {'tau':>4} {'triangles':>10} {'tri/px':>7} "
            f"{'nrm>30':>7} {'filt.':>6} {'PSNR dB':>7} {'cov diff':>8} {'pinholes':>8} "
            f"{'deep':>5} {'HW':>5} {'levels':>6}")
    lines = [head, "-" * len(head)]
    last = None
    for r in rows:
        if last is not None and r["asset"] != last:
            lines.append("")
        last = r["asset"]
        tau = "full" if r["tau"] is None else f"{r['tau']:g}"
        mean = f"{r['mean_level']:.1f}/" if "mean_level" in r else "max "
        psnr = "inf" if r["psnr"] is None else f"{r['psnr']:.2f}"  # None: inf through to_json
        lines.append(
            f"{r['asset'][:16]:<16} {r['view']:<5} {tau:>4} {r['triangles']:>10,} "
            f"{r['tri_per_px']:>7.2f} {100 * r['normal_off']:>6.2f}% "
            f"{100 * r['normal_off_filtered']:>5.1f}% {psnr:>7} "
            f"{100 * r['coverage_diff']:>7.2f}% {r['pinholes']:>8,} {r['pinholes_deep']:>5,} "
            f"{r.get('pinholes_hw', -1):>5} {mean:>4}{r['max_level']:<2}")
    lines += [
        f"nrm>30: pixels covered here and at full detail whose normals differ by more than "
        f"{NORMAL_OFF_DEGREES:g} deg; filt.: the same against the {SUPERSAMPLE}x{SUPERSAMPLE} "
        "reference's mean normal, on the pixels it covers entirely",
        f"PSNR: lit RGB against the {SUPERSAMPLE}x{SUPERSAMPLE} supersampled full-detail frame; "
        "cov diff: pixels covered in one only, over the reference's covered pixels",
        "pinholes: empty where the reference is solid; deep: more than ceil(tau)+1 px inside; "
        "HW: pinholes of the same cut drawn by the HW rasterizer only; levels: mean/max drawn"]
    return "\n".join(lines)


def to_json(rows: list[dict]) -> list[dict]:
    """The rows with non-finite floats (PSNR of identical images) as None: strict JSON."""
    return [{k: (None if isinstance(v, float) and not math.isfinite(v) else v)
             for k, v in r.items()} for r in rows]
