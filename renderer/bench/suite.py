"""`tessera bench` (the suite): named scenarios, each a scene and a scripted camera path, drawn
headless for warm-up and measured frames, with baselines measured in the same run.

Scenarios (`SCENARIOS`, and `ASKED_ONLY` when named):
- ``closeup``: one instance of the asset filling the view, a quarter orbit around it; and its
  frame taken apart (`measure.frame_parts`: what culling, raster, occlusion, velocity and
  resolve each add, in wall time);
- ``scaling``: square grids of 1, 16, 256, 4,096 and 65,536 instances (``--quick``: 1, 16,
  256), the camera orbiting over the whole grid; beside each size, the baselines, each against
  the part of the frame that does what it does (BASELINE_AGAINST): brute force (every triangle
  of every instance at full detail, instanced through the reference pipeline, ids and depth)
  against the frame without resolve and velocity (culling and rasterization: ``visibility_ms``,
  drawn side by side with the whole frame, ``whole_ms``), shaded brute force (the same
  triangles lit by the shaded reference) against the whole frame, and pygfx (the same
  full-detail mesh, `InstancedMesh`, offscreen) where installed. A baseline whose next size
  would take longer than ``baseline_limit`` seconds a frame (extrapolated linearly from its last
  measured size) is not run, and is marked as such; it is never guessed;
- ``occluded``: a dense field of overlapping instances seen from ground level, drawn with
  occlusion culling on and off (`renderer.bench.measure.field_path`);
- ``streaming``: four copies of the asset (each its own pages) on a grid, a pool of a quarter of
  their pages, the camera jumping close to one instance after another;
- ``textured``: the built-in terrain (built here: 200,000 triangles, ``--quick`` 50,000) with
  its 1024 x 1024 base-colour texture and, beside it, the same terrain with the default
  material, along the closeup path; then, seen from above filling the view, the resolve pass
  (the BasePass) timed alone (`measure.pass_alone_ms`): what texture sampling costs a pixel,
  and what the texture holds on the GPU;
- ``shadows``: `make demo`'s scene (64 instances, 16 with ``--quick``, on a ground plane,
  `assets.ground`) under the default sun, side by side in one run: without shadows, with every
  page drawn every frame, with the cache (a still camera: nothing drawn after the first frame),
  the same two with a point light and a spot beside the sun (`demo_lamps`: seven more shadow
  faces), and orbiting with and without shadows; the ratios are the issue's cost targets. The other
  scenarios draw no shadows, so that their figures compare with earlier runs;
- ``instances`` (only when named): 1 K to 16 M instances on grids and on the terrain, framed and
  flying through (`renderer.bench.instances`).

For every run: per-frame medians and 95th percentiles of the frame (submit to completion), of
the CPU's work before submission (``encode_ms``: Python and encoding; on lavapipe the GPU work
itself runs inside submission, so ``cpu_ms`` would measure it too), and of the GPU time per pass
(timestamp queries); clusters and triangles drawn; scene triangles; GPU memory (every buffer the
renderer holds, the page pool included). Output: a table, JSON (`--json`), comparison with an
earlier JSON (`--compare`, regressions flagged and exit status 1), plots (`--plots`).
"""

from __future__ import annotations

import datetime
import json
import math
import re
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from preprocess.tess.atomic import write_atomically
from renderer.bench.measure import (
    brute_force_ms,
    brute_force_shaded_ms,
    camera_path,
    field_path,
    frame_parts,
    measure,
    measure_interleaved,
    part_options,
    pass_alone_ms,
    shaded_brute_force,
    staged,
)
from renderer.camera import Camera

SCENARIOS = ("closeup", "scaling", "occluded", "streaming", "textured", "shadows")
# run only when named: minutes of placing and drawing up to millions of instances
ASKED_ONLY = ("instances",)
SIZES = (1, 16, 256, 4096, 65536)
QUICK_SIZES = (1, 16, 256)
REGRESSION = 1.15  # --compare: slower than this ratio (and by more than 0.5 ms) is flagged
# what each baseline's frame is compared with (the scaling rows' `<baseline>_speedup`): brute
# force draws ids and depth only, against Tessera's frame without its resolve and velocity passes
# (culling and rasterization into the visibility buffer); shaded brute force lights every pixel
# it draws with resolve's BRDF, against the whole frame; pygfx (an unlit material, its image
# read back) against the path's frames
BASELINE_AGAINST = {"brute": "visibility_ms", "brute_shaded": "whole_ms", "pygfx": "frame_ms"}


@dataclass
class SuiteConfig:
    asset: str  # a .tess file
    scenarios: tuple[str, ...] = SCENARIOS
    width: int = 512
    height: int = 512
    quick: bool = False
    frames: int | None = None  # measured frames per run (default 12, quick 4)
    warmup: int = 2
    sizes: tuple[int, ...] | None = None  # scaling (default SIZES, quick QUICK_SIZES)
    brute: bool = True
    pygfx: bool = True
    baseline_limit: float | None = None  # seconds a frame (default 30, quick 5): a baseline
    # predicted slower than this at a size is not run there
    persistent: bool | None = None
    progress: bool = True
    # the instances scenario's counts (default instances.COUNTS, quick instances.QUICK_COUNTS)
    instance_counts: tuple[int, ...] | None = None

    def __post_init__(self) -> None:
        from renderer.bench.instances import COUNTS, QUICK_COUNTS

        known = SCENARIOS + ASKED_ONLY
        bad = [s for s in self.scenarios if s not in known]
        if bad:
            raise ValueError(f"unknown scenario {bad[0]!r} (one of {', '.join(known)})")
        if self.instance_counts is None:
            self.instance_counts = QUICK_COUNTS if self.quick else COUNTS
        if self.frames is None:
            self.frames = 4 if self.quick else 12
        if self.sizes is None:
            self.sizes = QUICK_SIZES if self.quick else SIZES
        if self.baseline_limit is None:
            self.baseline_limit = 5.0 if self.quick else 30.0


# ---------------------------------------------------------------------------------- baselines


class PygfxBaseline:
    """pygfx (the Python wgpu engine) drawing the same full-detail mesh as one InstancedMesh,
    offscreen; each frame waits for its image (`canvas.draw()`)."""

    def __init__(self, asset, size: tuple[int, int]) -> None:
        import pygfx as gfx
        from rendercanvas.offscreen import RenderCanvas

        from renderer.scene import full_detail_mesh

        self.gfx = gfx
        self.canvas = RenderCanvas(size=size, pixel_ratio=1)
        self.renderer = gfx.WgpuRenderer(self.canvas)
        pos, tris = full_detail_mesh(asset)
        self.geometry = gfx.Geometry(positions=np.ascontiguousarray(pos, np.float32),
                                     indices=np.ascontiguousarray(tris, np.int32))
        self.material = gfx.MeshBasicMaterial()
        self.version = gfx.__version__

    def frame_s(self, worlds: np.ndarray, cams: list[Camera], frames: int = 2) -> float:
        gfx = self.gfx
        scene = gfx.Scene()
        mesh = gfx.InstancedMesh(self.geometry, self.material, len(worlds))
        for i, w in enumerate(worlds):
            mesh.set_matrix_at(i, np.asarray(w, np.float32))
        scene.add(mesh)
        w, h = self.canvas.get_physical_size()
        times = []
        picks = np.linspace(0, len(cams) - 1, frames).round().astype(int)
        for k in [picks[0], *picks]:  # the first draw uploads and compiles: not counted
            c = cams[k]
            cam = gfx.PerspectiveCamera(c.fov_y, w / h, depth_range=(c.near, c.near * 1e6))
            cam.local.position = tuple(np.asarray(c.eye, float))
            cam.look_at(tuple(np.asarray(c.target, float)))
            self.canvas.request_draw(lambda s=scene, cm=cam: self.renderer.render(s, cm))
            t0 = time.perf_counter()
            np.asarray(self.canvas.draw())
            times.append(time.perf_counter() - t0)
        return float(statistics.median(times[1:]))


def _pygfx(asset, size):
    """The pygfx baseline, or None and why it cannot run: a baseline that fails is a line in
    the table, never the end of the run."""
    from renderer.device import quiet_vulkan_loader

    quiet_vulkan_loader()  # pygfx may request the first adapter of the process
    try:
        return PygfxBaseline(asset, size), None
    except ImportError as e:
        return None, f"pygfx not installed ({e.name}): pip install tessera[bench]"
    except Exception as e:  # e.g. an OpenGL adapter without the float32-filterable it asks for
        return None, f"cannot run on this adapter: {_reason(e)}"


def _reason(e: Exception) -> str:
    """One line from a wgpu error: the features a device request lacked, else its first line."""
    text = str(e)
    m = re.search(r"Unsupported features were requested: ([A-Z0-9_, |]+)", text)
    if m:
        names = [f.strip().lower().replace("_", "-") for f in re.split(r"[,|]", m.group(1))]
        return f"{', '.join(n for n in names if n)} missing"
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    return f"{type(e).__name__}: {lines[0] if lines else ''}"


# ---------------------------------------------------------------------------------- scenarios


class Suite:
    def __init__(self, cfg: SuiteConfig, log=print) -> None:
        from renderer.renderer import Renderer
        from renderer.options import RenderOptions
        from renderer.scene import open_asset

        self.cfg, self.log = cfg, log
        self.Renderer, self.RenderOptions = Renderer, RenderOptions
        self.asset = open_asset(cfg.asset)
        self.size = (cfg.width, cfg.height)
        self.ctx = None
        self.results: dict = {}
        from renderer.bench.instances import FIELDS, QUICK_FIELDS

        fields = len(QUICK_FIELDS if cfg.quick else FIELDS)
        steps = {"closeup": 1, "scaling": 3 * len(cfg.sizes), "occluded": 2, "streaming": 2,
                 "textured": 2, "shadows": 7, "instances": fields * len(cfg.instance_counts)}
        self.total = sum(steps[s] for s in cfg.scenarios)
        self._bar = None
        if cfg.progress:
            from tqdm import tqdm

            self._bar = tqdm(total=self.total, desc="tessera bench", unit="run", leave=False,
                             file=sys.stderr)

    def _step(self, what: str) -> None:
        if self._bar is not None:
            self._bar.set_postfix_str(what)
            self._bar.update(1)

    def renderer(self, **options):
        options.setdefault("shadows", False)  # the shadows scenario measures them
        o = self.RenderOptions(persistent=self.cfg.persistent, **options)
        r = self.Renderer(*self.size, options=o, ctx=self.ctx)
        self.ctx = r.ctx
        return r

    def run(self) -> dict:
        try:
            for name in self.cfg.scenarios:
                self.results[name] = getattr(self, name)()
        finally:  # an error's line starts on a line of its own, not after the bar
            if self._bar is not None:
                self._bar.close()
        r = self.renderer()
        return {
            "meta": {"date": datetime.date.today().isoformat(), "device": r.ctx.description,
                     "size": list(self.size), "quick": self.cfg.quick,
                     "asset": self.asset.meta.get("name", self.cfg.asset),
                     "asset_triangles": int(self.asset.meta["input_triangles"]),
                     "traversal": "persistent" if r.persistent else "per-level"},
            "scenarios": self.results,
            "targets": targets(self.results, self.cfg),
        }

    def closeup(self) -> list[dict]:
        r = self.renderer()
        r.add_instance(r.load(self.cfg.asset))
        cams = camera_path(*r.bounds(), self.cfg.frames)
        m = measure(r, cams, self.cfg.warmup)
        # where the frame's time goes: frames of its parts side by side (wall time: lavapipe's
        # timestamps undercount)
        m["parts"] = frame_parts(r, cams, self.cfg.warmup)
        self._step("closeup")
        return [{"variant": "1 instance", **m}]

    def scaling(self) -> list[dict]:
        cfg = self.cfg
        rows = []
        pyg, pyg_why = _pygfx(self.asset, self.size) if cfg.pygfx else (None, "not asked")
        # (instances, seconds) of the last size each baseline was measured at
        last = {"brute": None, "brute_shaded": None, "pygfx": None}
        why = {"brute": None if cfg.brute else "not asked",
               "brute_shaded": None if cfg.brute else "not asked", "pygfx": pyg_why}
        self._shaded = None  # the shaded reference: built when first measured
        for n in cfg.sizes:
            r = self.renderer()
            a = r.load(cfg.asset)
            r.add_grid(a, n)
            cams = camera_path(*r.bounds(), cfg.frames)
            m = measure(r, cams, cfg.warmup)
            row = {"variant": f"{n} instances", **m, **self._like_for_like(r, cams)}
            self._step(f"scaling {n}")
            worlds = np.array(r.scene.instance_world)
            for base in ("brute", "brute_shaded", "pygfx"):
                if why[base] is None and last[base] is not None:
                    n0, s0 = last[base]
                    predicted = s0 * n / n0
                    if predicted > cfg.baseline_limit:
                        why[base] = (f"not run from {n:,} instances: {predicted:.1f} s a frame "
                                     f"predicted from {n0:,} (limit {cfg.baseline_limit} s)")
                if why[base] is None:
                    try:
                        s = self._baseline_s(base, pyg, worlds, cams)
                    except Exception as e:  # a baseline's failure is reported, not fatal
                        why[base] = f"failed at {n:,} instances: {_reason(e)}"
                if why[base] is None:
                    last[base] = (n, s)
                    row[f"{base}_frame_ms"] = 1e3 * s
                    row[f"{base}_speedup"] = 1e3 * s / row[BASELINE_AGAINST[base]]["median"]
                else:
                    row[f"{base}_skipped"] = why[base]
                if base != "brute_shaded":
                    self._step(f"scaling {n} {base}")
            rows.append(row)
        if pyg is not None:
            rows[0]["pygfx_version"] = pyg.version
        return rows

    def _like_for_like(self, r, cams: list[Camera]) -> dict:
        """The frame and its visibility part (culling and rasterization: the resolve and
        velocity passes left out), side by side (`measure.staged`): what the brute-force
        baselines are compared with (BASELINE_AGAINST)."""
        both = staged(r, cams, {"visibility": part_options("occlusion"), "whole": {}},
                      self.cfg.warmup)
        return {"visibility_ms": both["visibility"]["frame_ms"],
                "whole_ms": both["whole"]["frame_ms"],
                "visibility_gpu_ms": both["visibility"]["visibility_gpu_ms"]}

    def _baseline_s(self, base: str, pyg, worlds: np.ndarray, cams: list[Camera]) -> float:
        """Seconds a frame of one baseline takes at these instances (median of 2 frames)."""
        if base == "pygfx":
            return pyg.frame_s(worlds, cams)
        if base == "brute":
            ms = brute_force_ms(self.ctx, self.asset, worlds, cams, self.size, 2)
        else:
            if self._shaded is None:
                self._shaded = shaded_brute_force(self.ctx, self.asset, self.size)
            ms = brute_force_shaded_ms(self._shaded, worlds, cams, self.size, 2)
        return statistics.median(ms) / 1e3

    def occluded(self) -> list[dict]:
        n = 256 if self.cfg.quick else 1024
        rows = []
        for occ in (True, False):
            r = self.renderer(occlusion=occ)
            a = r.load(self.cfg.asset)
            node = r.scene.assets[a].nodes[0]
            spacing, cams = field_path(np.concatenate([node["box_min"], node["box_max"]]), n,
                                       self.cfg.frames)
            r.add_grid(a, n, spacing=spacing)
            m = measure(r, cams, self.cfg.warmup)
            self._step(f"occluded {'on' if occ else 'off'}")
            rows.append({"variant": f"occlusion {'on' if occ else 'off'}", **m})
        rows[0]["occlusion_triangle_ratio"] = rows[1]["triangles"] / max(rows[0]["triangles"], 1)
        return rows

    def streaming(self) -> list[dict]:
        copies, per = 4, 4  # 4 assets (their own pages), 4 instances each
        pages = self.asset.page_count * copies
        rows = []
        for stream in (True, False):
            opts = ({"streaming": True, "pool_pages": max(pages // 4, copies)} if stream
                    else {"streaming": False})
            r = self.renderer(**opts)
            ids = [r.load(self.cfg.asset) for _ in range(copies)]
            s = self.asset.bounds_sphere.astype(np.float64)
            d = 2.4 * float(s[3])
            centres = []
            for k in range(copies * per):
                m = np.eye(4, dtype=np.float32)
                m[:3, 3] = [(k % 4 - 1.5) * d - s[0], -s[1], (k // 4 - 1.5) * d - s[2]]
                r.add_instance(ids[k % copies], m)
                centres.append(m[:3, 3] + s[:3])
            cams = []
            for k in range(max(self.cfg.frames, 8)):  # close to a different instance each frame
                c = centres[(5 * k) % len(centres)]
                a = 0.9 * k
                eye = c + 1.6 * float(s[3]) * np.array([math.sin(a), 0.5, math.cos(a)])
                cams.append(Camera(eye=eye, target=c, near=1e-3 * float(s[3])))
            # no warm-up under load: every frame streams pages in, and what the path uploads
            # is what this scenario measures
            m = measure(r, cams, self.cfg.warmup, warmup_seconds=0.0)
            self._step(f"streaming {'on' if stream else 'off'}")
            row = {"variant": "pool 25%" if stream else "fully resident", **m}
            if stream:
                row["scene_pages"] = pages
                row["evicted_total"] = r.streamer.totals.evicted
                row["uploaded_mb_total"] = r.streamer.totals.bytes_uploaded / 2**20
            rows.append(row)
        return rows


    def textured(self) -> list[dict]:
        import tempfile

        from assets.rock import make_terrain
        from preprocess.build import build_file

        tris = 50_000 if self.cfg.quick else 200_000
        resolution = max(1, round((tris / 2) ** 0.5))
        rows = []
        with tempfile.TemporaryDirectory(prefix="tessera-bench-") as tmp:
            for texture in (1024, 0):
                path = Path(tmp) / f"terrain{texture}.tess"
                build_file(make_terrain(resolution, texture=texture), path)
                r = self.renderer()
                a = r.load(path)
                r.add_instance(a)
                center, radius = r.bounds()
                cams = camera_path(center, radius, self.cfg.frames)
                m = measure(r, cams, self.cfg.warmup)
                self._step(f"textured {texture or 'none'}")
                pixels = self.size[0] * self.size[1]
                resolve = m["gpu_pass_ms"].get("resolve", float("nan"))
                above = Camera.framing(center, radius, direction=(0.2, 0.9, 0.4), fill=1.8)
                covered = int(r.render(above).coverage.sum())
                alone = pass_alone_ms(r, r.frame.resolve.encode, 5 if self.cfg.quick else 9)
                rows.append({
                    "variant": "1024 texture" if texture else "no texture", **m,
                    "covered": covered, "resolve_alone_ms": alone,
                    "texture_mb": r.scene.assets[a].meta.get("texture_bytes", 0) / 2**20,
                    "resolve_ns_per_pixel": 1e6 * resolve / pixels})
        rows[0]["texture_ns_per_covered_pixel"] = (
            1e6 * (rows[0]["resolve_alone_ms"] - rows[1]["resolve_alone_ms"])
            / max(rows[0]["covered"], 1))
        return rows


    def instances(self) -> list[dict]:
        from renderer.bench.instances import instances

        return instances(self)

    def shadows(self) -> list[dict]:
        from assets.ground import ground_tess, ground_transform

        n = 16 if self.cfg.quick else 64
        variants = (("no shadows", {"shadows": False}, True),
                    ("every page", {"shadows": True, "shadow_cache": False}, True),
                    ("cached", {"shadows": True}, True),
                    # the sun, a point light and a spot: 8 more faces in the pool
                    ("+lamps, every", {"shadows": True, "shadow_cache": False}, True),
                    ("+lamps, cached", {"shadows": True}, True),
                    ("orbit, none", {"shadows": False}, False),
                    ("orbit, shadows", {"shadows": True}, False))
        renderers, paths = [], []
        for variant, options, still in variants:
            r = self.renderer(**options)
            r.add_grid(r.load(self.cfg.asset), n)
            center, radius = r.bounds()
            r.add_instance(r.load(ground_tess()), ground_transform(r.scene, center, radius))
            if "lamps" in variant:
                r.set_lights(demo_lamps(center, radius))
            cams = camera_path(center, radius, self.cfg.frames)
            renderers.append(r)
            paths.append([cams[len(cams) // 2]] * len(cams) if still else cams)
        rows = []
        # the still camera's three side by side, then the orbit's two: a shared machine's
        # noise slows each set alike
        for group in ((0, 1, 2, 3, 4), (5, 6)):
            ms = measure_interleaved([renderers[i] for i in group],
                                     [paths[i] for i in group], self.cfg.warmup)
            for i, m in zip(group, ms, strict=True):
                shadow = renderers[i].stats(wait=True).shadow
                if shadow is not None:
                    m["shadow"] = shadow
                self._step(f"shadows {variants[i][0]}")
                rows.append({"variant": variants[i][0], **m})
        base = {True: rows[0]["frame_ms"]["median"], False: rows[5]["frame_ms"]["median"]}
        for row, (_v, _o, still) in zip(rows, variants, strict=True):
            row["shadow_cost"] = row["frame_ms"]["median"] / base[still]
        return rows


def demo_lamps(center: np.ndarray, radius: float) -> list:
    """A warm point light low over the scene's centre and a cool spot from above one side (the
    shadows scenario's lamps), each giving about a sun where it shines."""
    from renderer.lights import Light

    c = np.asarray(center, np.float64)
    point = c + np.array([0.3, 0.12, 0.2]) * radius
    spot = c + np.array([-0.4, 0.6, -0.1]) * radius
    return [Light("point", tuple(point), intensity=(0.3 * radius) ** 2, color=(1.0, 0.6, 0.3)),
            Light("spot", tuple(spot), intensity=(0.6 * radius) ** 2, color=(0.4, 0.6, 1.0),
                  direction=(0.3, -1.0, 0.1), inner_cone=0.3, outer_cone=0.45)]


# ---------------------------------------------------------------------------------- reporting


def targets(results: dict, cfg: SuiteConfig) -> dict:
    """The issue's lavapipe targets, from the scaling rows (where they were run)."""
    rows = results.get("scaling")
    if not rows:
        return {}
    first, last = rows[0], rows[-1]
    growth = last["frame_ms"]["median"] / first["frame_ms"]["median"]
    brute = [r for r in rows if "brute_frame_ms" in r]
    out = {
        "instances": [first["instances"], last["instances"]],
        "frame_growth": growth,
        "frame_growth_ok": growth <= 3.0,
        "encode_ms_at_largest": last["encode_ms"]["median"],
        "encode_ok": last["encode_ms"]["median"] < 2.0,
    }
    if brute:  # like for like: brute force's ids against the frame's visibility part
        b = brute[-1]
        out.update(brute_largest_instances=b["instances"], brute_speedup=b["brute_speedup"],
                   brute_speedup_ok=b["brute_speedup"] >= 50.0)
    shaded = [r for r in rows if "brute_shaded_frame_ms" in r]
    if shaded:  # and lit brute force against the whole frame
        b = shaded[-1]
        out.update(brute_shaded_largest_instances=b["instances"],
                   brute_shaded_speedup=b["brute_shaded_speedup"])
    return out


def _fmt(x: float) -> str:
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:,.2f}"


def _clock(m: dict) -> str:
    """The GPU clock a row was measured at, where known (`measure.gpu_clock_mhz`)."""
    c = m.get("gpu_clock_mhz")
    return "" if not c else f"  {c[0]:.0f}" + (f"-{c[1]:.0f} MHz" if c[1] else " MHz")


def table(report: dict) -> str:
    lines = [f"device {report['meta']['device']}, {report['meta']['size'][0]}x"
             f"{report['meta']['size'][1]}, asset {report['meta']['asset']} "
             f"({report['meta']['asset_triangles']:,} triangles), "
             f"{report['meta']['traversal']} traversal" + (" (quick)" if report["meta"]["quick"]
                                                          else "")]
    head = (f"{'scenario':<10} {'variant':<17} {'scene tris':>15} {'frame ms':>9} {'p95':>8} "
            f"{'CPU ms':>7} {'GPU ms':>7} {'clusters':>9} {'triangles':>11} {'GPU MB':>7}")
    lines += [head, "-" * len(head)]
    for name, rows in report["scenarios"].items():
        for r in rows:
            if "stopped" in r:  # the instances scenario's last count, not run
                lines.append(f"{name:<10} {r['variant']:<17} {r['stopped']}")
                continue
            lines.append(
                f"{name:<10} {r['variant']:<17} {r['scene_triangles']:>15,} "
                f"{_fmt(r['frame_ms']['median']):>9} {_fmt(r['frame_ms']['p95']):>8} "
                f"{_fmt(r['encode_ms']['median']):>7} {_fmt(r['gpu_ms']['median']):>7} "
                f"{r['clusters']:>9,} {r['triangles']:>11,} {r['gpu_memory_mb']:>7.1f}"
                + _clock(r))
            if "visibility_ms" in r:
                lines.append(f"{'':<10} {'  visibility':<17} {'':>15} "
                             f"{_fmt(r['visibility_ms']['median']):>9} "
                             f"{_fmt(r['visibility_ms']['p95']):>8}   culling and raster "
                             f"alone (timestamps {_fmt(r['visibility_gpu_ms']['median'])} ms); "
                             f"the whole frame beside it {_fmt(r['whole_ms']['median'])}")
            for base in ("brute", "brute_shaded", "pygfx"):
                label = "  " + base.replace("_", " ")
                if f"{base}_frame_ms" in r:
                    lines.append(f"{'':<10} {label:<17} {'':>15} "
                                 f"{_fmt(r[base + '_frame_ms']):>9}   Tessera "
                                 f"{r[base + '_speedup']:.1f}x faster ({BASELINE_TEXT[base]})")
                elif r.get(f"{base}_skipped") and name == "scaling":
                    lines.append(f"{'':<10} {label:<17} {r[base + '_skipped']}")
            if "parts" in r:
                lines += _parts_lines(r["parts"])
            if r.get("overflow"):  # e.g. a million far instances fill the BVH queue
                lines.append(f"{'':<10} {'  warning':<17} the queue or visible list overflowed "
                             f"(flags {r['overflow']}): a frame drawn without some of its "
                             f"clusters")
            if "placing_s" in r:
                lines.append(f"{'':<10} {'  pixels':<17} {r['covered_pixels']:,} covered "
                             f"({r['field_pixels']:,} by the field), "
                             f"{_fmt(r['triangles_per_covered_pixel'])} triangles a covered "
                             f"pixel; placed in {_fmt(r['placing_s'])} s")
            if "streaming" in r:
                st = r["streaming"]
                lines.append(f"{'':<10} {'  pool':<17} {st['pool_pages']} pages, "
                             f"{100 * st['pool_use']:.0f}% used, "
                             f"{_fmt(st['uploaded_mb_per_frame']['median'])} MB uploaded a "
                             f"frame (p95 {_fmt(st['uploaded_mb_per_frame']['p95'])}), "
                             f"{r.get('evicted_total', 0)} evicted")
            if "resolve_ns_per_pixel" in r:
                lines.append(f"{'':<10} {'  resolve':<17} "
                             f"{_fmt(r['resolve_ns_per_pixel'])} ns a pixel (GPU timestamps), "
                             f"textures {r['texture_mb']:.1f} MiB")
            if "resolve_alone_ms" in r:
                lines.append(f"{'':<10} {'  BasePass':<17} {_fmt(r['resolve_alone_ms'])} ms "
                             f"alone from above, {r['covered']:,} pixels covered"
                             + (f"; the texture adds "
                                f"{_fmt(r['texture_ns_per_covered_pixel'])} ns a covered pixel"
                                if "texture_ns_per_covered_pixel" in r else ""))
            if "shadow_cost" in r and r["variant"] not in ("no shadows", "orbit, none"):
                sh = r.get("shadow") or {}
                lines.append(f"{'':<10} {'  shadows':<17} {r['shadow_cost']:.2f}x the frame "
                             f"without; last frame: {sh.get('marked', 0)} pages marked, "
                             f"{sh.get('drawn', 0)} drawn, {sh.get('cached', 0)} cached, "
                             f"pool {sh.get('pool_used', 0)}/{sh.get('pool_pages', 0)}")
            if "occlusion_triangle_ratio" in r:
                lines.append(f"{'':<10} {'  occlusion':<17} "
                             f"{r['occlusion_triangle_ratio']:.1f}x fewer triangles")
    t = report.get("targets") or {}
    if t:
        lines.append(f"targets: frame {t['frame_growth']:.2f}x from {t['instances'][0]:,} to "
                     f"{t['instances'][1]:,} instances (<= 3: "
                     f"{'met' if t['frame_growth_ok'] else 'NOT met'}); CPU (encode) "
                     f"{t['encode_ms_at_largest']:.2f} ms at {t['instances'][1]:,} (< 2: "
                     f"{'met' if t['encode_ok'] else 'NOT met'})"
                     + (f"; {t['brute_speedup']:.0f}x brute force at "
                        f"{t['brute_largest_instances']:,} instances, ids against culling and "
                        f"raster (>= 50: {'met' if t['brute_speedup_ok'] else 'NOT met'})"
                        if "brute_speedup" in t else "")
                     + (f"; {t['brute_shaded_speedup']:.0f}x shaded brute force at "
                        f"{t['brute_shaded_largest_instances']:,}, against the whole frame"
                        if "brute_shaded_speedup" in t else ""))
    return "\n".join(lines)


# what the table says each baseline was compared with (BASELINE_AGAINST)
BASELINE_TEXT = {"brute": "ids only, against the visibility part",
                 "brute_shaded": "lit, against the whole frame",
                 "pygfx": "unlit, against the frame"}


def _parts_lines(parts: dict) -> list[str]:
    """The closeup's frame taken apart (`measure.frame_parts`): each part's wall ms, and where
    the whole frame's time is spent (encoding, submission, the readback's wait)."""
    whole = parts["frames"][list(parts["frames"])[-1]]
    cost = ", ".join(f"{n} {_fmt(ms)}" for n, ms in parts["part_ms"].items())
    return [f"{'':<10} {'  parts':<17} {cost} ms (wall time, frames of the parts side by side)",
            f"{'':<10} {'':<17} the whole frame {_fmt(whole['frame_ms']['median'])} ms: encode "
            f"{_fmt(whole['encode_ms']['median'])}, submit {_fmt(whole['submit_ms']['median'])}"
            f" (lavapipe runs the passes in it), readback "
            f"{_fmt(whole['readback_ms']['median'])}; timestamps "
            f"{_fmt(whole['gpu_ms']['median'])}"]


def read_report(path: str, option: str) -> dict:
    """An earlier suite report (`--json`), checked before the suite runs: a file that is not one
    (another tool's JSON, a binary file) is refused in one line rather than compared with
    nothing and read as "no regression"."""
    try:
        old = json.loads(Path(path).read_bytes())
    except OSError as e:
        raise ValueError(f"{option} {path}: cannot read: {e.strerror or e}") from None
    except ValueError:  # not UTF-8, not JSON
        raise ValueError(f"{option} {path}: not a JSON file") from None
    scenarios = old.get("scenarios") if isinstance(old, dict) else None
    ok = isinstance(scenarios, dict) and all(
        isinstance(rows, list) and all(
            isinstance(r, dict) and "variant" in r
            and ("stopped" in r or all(isinstance(r.get(k), dict) and "median" in r[k]
                                       for k in ("frame_ms", "gpu_ms")))
            for r in rows)
        for rows in scenarios.values())
    if not ok:
        raise ValueError(f"{option} {path}: not a tessera bench suite report (written by "
                         "tessera bench --json)")
    return old


def compare(report: dict, old: dict) -> list[str]:
    """Regressions against an earlier report: a run's median frame or GPU time more than
    REGRESSION times the old one (and 0.5 ms more)."""
    out = []
    for name, rows in report["scenarios"].items():
        before = {r["variant"]: r for r in old.get("scenarios", {}).get(name, [])}
        for r in rows:
            b = before.get(r["variant"])
            if b is None or "stopped" in r or "stopped" in b:
                continue
            for key in ("frame_ms", "gpu_ms"):
                new, was = r[key]["median"], b[key]["median"]
                if new > REGRESSION * was and new - was > 0.5:
                    out.append(f"{name} / {r['variant']}: {key} {was:.2f} -> {new:.2f} "
                               f"({new / was:.2f}x)")
    return out


def plots(report: dict, folder: Path) -> list[Path]:
    """scaling.png (frame time against scene triangles, log-log: Tessera, brute force, pygfx),
    instances.png (`_instances_plot`) and passes.png (GPU ms per pass, stacked, per run)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    folder.mkdir(parents=True, exist_ok=True)
    written = []
    meta = report["meta"]
    rows = report["scenarios"].get("scaling")
    if rows:
        fig, ax = plt.subplots(figsize=(6.4, 4.4), dpi=120)
        tris = [r["scene_triangles"] for r in rows]
        ax.plot(tris, [r["frame_ms"]["median"] for r in rows], "o-", label="Tessera")
        for base, style in (("brute", "s--"), ("pygfx", "^:")):
            pts = [(r["scene_triangles"], r[f"{base}_frame_ms"]) for r in rows
                   if f"{base}_frame_ms" in r]
            if pts:
                ax.plot(*zip(*pts, strict=True), style,
                        label="brute force" if base == "brute" else "pygfx")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("scene triangles (full detail)")
        ax.set_ylabel("frame ms (median)")
        ax.set_title(f"scaling: {meta['asset']} grids, {meta['size'][0]}x{meta['size'][1]}\n"
                     f"{meta['device'][:60]}", fontsize=9)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend()
        fig.tight_layout()
        p = folder / "scaling.png"
        write_atomically(p, lambda f: fig.savefig(f, format="png"))
        plt.close(fig)
        written.append(p)
    rows = [r for r in report["scenarios"].get("instances", []) if "stopped" not in r]
    if rows:
        written.append(_instances_plot(rows, meta, folder, plt))
    runs = [(f"{n}\n{r['variant']}", r["gpu_pass_ms"]) for n, rs in report["scenarios"].items()
            for r in rs if r.get("gpu_pass_ms")]
    if runs:
        passes = list(dict.fromkeys(p for _, g in runs for p in g))
        fig, ax = plt.subplots(figsize=(max(6.4, 0.8 * len(runs)), 4.4), dpi=120)
        bottom = np.zeros(len(runs))
        for p in passes:
            v = np.array([g.get(p, 0.0) for _, g in runs])
            ax.bar(range(len(runs)), v, bottom=bottom, label=p)
            bottom += v
        ax.set_xticks(range(len(runs)), [n for n, _ in runs], fontsize=7, rotation=45,
                      ha="right")
        ax.set_ylabel("GPU ms (median, timestamp queries)")
        ax.set_title(f"GPU time per pass, {meta['device'][:60]}", fontsize=9)
        ax.legend(fontsize=7, ncol=2)
        fig.tight_layout()
        p = folder / "passes.png"
        write_atomically(p, lambda f: fig.savefig(f, format="png"))
        plt.close(fig)
        written.append(p)
    return written


def _instances_plot(rows: list[dict], meta: dict, folder: Path, plt) -> Path:
    """instances.png: frame time (median) and triangles per covered pixel (log) against the
    number of instances, log x, a line per field and path."""
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(6.4, 6.4), dpi=120, sharex=True)
    for key in dict.fromkeys((r["asset"], r["layout"], r["path"]) for r in rows):
        mine = [r for r in rows if (r["asset"], r["layout"], r["path"]) == key]
        counts = [r["count"] for r in mine]
        top.plot(counts, [r["frame_ms"]["median"] for r in mine], "o-", label=" ".join(key))
        bottom.plot(counts, [r["triangles_per_covered_pixel"] for r in mine], "o-")
    top.set_ylabel("frame ms (median)")
    bottom.set_ylabel("triangles per covered pixel")
    bottom.set_yscale("log")  # from about one (the pixels) to thousands (far instances' roots)
    bottom.set_xlabel("instances")
    for ax in (top, bottom):
        ax.set_xscale("log")
        ax.grid(True, which="both", alpha=0.3)
    top.legend(fontsize=7)
    top.set_title(f"instances, {meta['size'][0]}x{meta['size'][1]}, {meta['device'][:60]}",
                  fontsize=9)
    fig.tight_layout()
    p = folder / "instances.png"
    write_atomically(p, lambda f: fig.savefig(f, format="png"))
    plt.close(fig)
    return p


def main(cfg: SuiteConfig, *, json_path: str | None = None, compare_path: str | None = None,
         plots_dir: str | None = None, log=print) -> int:
    old = read_report(compare_path, "--compare") if compare_path else None
    report = Suite(cfg, log).run()
    log(table(report))
    if json_path:
        write_atomically(json_path, lambda f: f.write(json.dumps(report, indent=2).encode()))
        log(f"wrote {json_path}")
    if plots_dir or json_path:
        folder = Path(plots_dir) if plots_dir else Path(json_path).parent
        for p in plots(report, folder):
            log(f"wrote {p}")
    if old is not None:
        bad = compare(report, old)
        for line in bad:
            log(f"REGRESSION {line}")
        if bad:
            return 1
        log(f"no regression against {compare_path}")
    return 0
