"""`tessera bench --scenario instances` (issue 34, "a million instances at the cost of the pixels
they cover"): 1 K to 16 M instances of the suite's asset (the built-in rock by default) and of a
small sphere (the forest's "tree", `assets.forest`), on a square grid (`Renderer.add_grid`) and
scattered over the built-in terrain (`assets.forest.scatter`, the forest's own placing, the
terrain drawn under them), each drawn along two paths: framed (`Camera.framing` from a few
directions around the scene) and flying through (low over the field, from its edge inwards,
looking ahead).

Counts go up by 4x (`COUNTS`; `--quick`: 1 K, 16 K and 65 K, the grid of rocks and the spheres on
the terrain, 2 frames a path). A field stops at the first count the adapter cannot hold (`Renderer.
check_instances`: the instance buffer is one storage binding) or whose frame or placing,
predicted from the counts measured (`_stop_reason`), would pass the suite's `baseline_limit`; the
row says which (`stopped`), and nothing past it is guessed.

A row per field, count and path: the suite's figures (`measure.measure`: frame median and p95,
GPU ms per pass, triangles drawn, GPU memory, ...) and `asset`, `layout`, `path`, `count`,
`placing_s` (the seconds `add_instances` / `add_grid` took), `covered_pixels` (pixels holding an
instance id in the path's middle frame, the terrain's included), `field_pixels` (those of the
counted instances alone), `frame_triangles` (triangles drawn in that frame) and
`triangles_per_covered_pixel`.
"""

from __future__ import annotations

import time

import numpy as np

from renderer.bench.measure import measure
from renderer.camera import Camera

COUNTS = tuple(4 ** k * 1024 for k in range(8))  # 1 K .. 16 M
QUICK_COUNTS = (1024, 16384, 65536)
FIELDS = (("rock", "grid"), ("sphere", "grid"), ("rock", "terrain"), ("sphere", "terrain"))
QUICK_FIELDS = (("rock", "grid"), ("sphere", "terrain"))
PATHS = ("framed", "flythrough")
# the quick run's terrain (the forest's is 131,072 triangles with a 1024^2 texture)
QUICK_TERRAIN = (64, 256)  # resolution, texels a side


def instances(suite) -> list[dict]:
    """The scenario's rows (the module docstring), for a `renderer.bench.suite.Suite`."""
    from assets.forest import TERRAIN_RESOLUTION, TERRAIN_TEXTURE, forest_assets

    cfg = suite.cfg
    resolution, texels = QUICK_TERRAIN if cfg.quick else (TERRAIN_RESOLUTION, TERRAIN_TEXTURE)
    built = forest_assets(resolution, texels)
    files = {"rock": cfg.asset, "sphere": built["tree"], "terrain": built["terrain"]}
    # --quick stays near a minute on lavapipe: 2 frames a path after 1, and the one that counts
    # the pixels (12 paths, frames of 0.3-2 s there)
    frames, warmup = (min(cfg.frames, 2), 1) if cfg.quick else (cfg.frames, cfg.warmup)
    rows = []
    for asset, layout in QUICK_FIELDS if cfg.quick else FIELDS:
        done: list = []  # (count, frame s, placing s) of the counts measured
        for n in cfg.instance_counts:
            r = suite.renderer()
            why = _stop_reason(r, n, done, cfg.baseline_limit, layout)
            if why is not None:
                rows.append({"variant": f"{asset} {layout} {n:,}", "asset": asset,
                             "layout": layout, "count": n, "stopped": why})
                suite._step(f"instances {asset} {layout} stopped")
                break
            field = _place(r, files, asset, layout, n, resolution)
            worst = 0.0
            for path in PATHS:
                cams = _path(r, field, path, frames)
                m = measure(r, cams, warmup)
                worst = max(worst, m["frame_ms"]["median"] / 1e3)
                rows.append({"variant": f"{asset} {layout} {path} {n:,}", "asset": asset,
                             "layout": layout, "path": path, "count": n,
                             "placing_s": field["placing_s"], **m,
                             **_coverage(r, cams[len(cams) // 2], field["first"])})
            suite._step(f"instances {asset} {layout} {n:,}")
            done.append((n, worst, field["placing_s"]))
            del r  # its buffers go before the next count's
    return rows


def _stop_reason(r, n: int, done: list, limit: float, layout: str) -> str | None:
    """Why a field stops at `n` instances (None: it goes on). `done`: (count, frame s, placing
    s) of the counts measured so far. The placing grows linearly with the count; the frame
    grows as it did between the last two counts (log-log), not less than not at all: Tessera's
    frame follows the pixels, and a linear guess would stop it where it has barely grown."""
    try:
        r.check_instances(n + (layout == "terrain"))
    except ValueError as e:
        return f"not run from {n:,}: {e}"
    if not done:
        return None
    n1, frame1, placing1 = done[-1]
    growth = 0.0  # one count measured: its frame, until a second says how it grows
    if len(done) > 1:
        n0, frame0, _ = done[-2]
        growth = max(np.log(frame1 / frame0) / np.log(n1 / n0), 0.0)
    for what, s in (("a frame", frame1 * (n / n1) ** growth), ("placing", placing1 * n / n1)):
        if s > limit:
            return (f"not run from {n:,}: {what} {s:.1f} s predicted from {n1:,} (limit "
                    f"{limit} s)")
    return None


def _place(r, files: dict, asset: str, layout: str, n: int, resolution: int) -> dict:
    """The field of `n` instances in a fresh renderer; what the paths need of it: the counted
    instances' first index, their asset's bounding sphere, the terrain's scale (terrain layout)
    and the seconds the placing took."""
    from assets.forest import KINDS, scatter, terrain_scale, terrain_world

    a = r.load(files[asset])
    sphere = r.scene.assets[a].bounds_sphere.astype(np.float64)
    out = {"sphere": sphere, "layout": layout, "resolution": resolution}
    if layout == "grid":
        t0 = time.perf_counter()
        placed = r.add_grid(a, n)
    else:
        scale = terrain_scale(n)
        r.add_instance(r.load(files["terrain"]), terrain_world(scale))
        kind = KINDS["rock" if asset == "rock" else "tree"]
        meta = r.scene.assets[a].meta
        worlds = scatter(n, (meta["bounds_min"], meta["bounds_max"]), scale,
                         terrain_resolution=resolution, sizes=kind.scale, stretch=kind.stretch,
                         tilt=kind.tilt)
        t0 = time.perf_counter()
        placed = r.add_instances(a, worlds)
        out["scale"] = scale
    out["placing_s"] = time.perf_counter() - t0
    out["first"] = placed[0]
    return out


def _path(r, field: dict, path: str, frames: int) -> list[Camera]:
    """The cameras of a path: framed, the whole scene from directions 30 degrees apart in all;
    or flying through, from the field's edge a quarter of the way in, a few of the asset's
    radii over the ground (the grid's plane, or the terrain's surface under the eye), looking
    ahead and a little down."""
    center, radius = r.bounds()
    if path == "framed":
        angles = np.radians(np.linspace(20.0, 50.0, frames))
        return [Camera.framing(center, radius, direction=(np.sin(a), 0.5, np.cos(a)))
                for a in angles]
    s = float(field["sphere"][3])
    if field["layout"] == "terrain":
        from assets.forest import TERRAIN_SIZE

        half = 0.5 * TERRAIN_SIZE * field["scale"]  # the terrain's half side
    else:
        half = radius / np.sqrt(2.0)  # the grid's half side, about
    x = -0.95 * half + 0.5 * half * np.linspace(0.0, 1.0, frames)
    z = np.full(frames, 0.1 * half)
    if field["layout"] == "terrain":
        from assets.rock import terrain_surface

        scale = field["scale"]
        ahead = np.concatenate([x, x + 4 * s])  # the ground under the eye and a little ahead
        ground = scale * terrain_surface(ahead / scale, np.concatenate([z, z]) / scale,
                                         field["resolution"])
        ground = np.maximum(ground[:frames], ground[frames:])
    else:
        ground = np.full(frames, center[1] - s)  # the grid's boxes sit around its centre
    y = ground + 3.0 * s
    return [Camera(eye=np.array([xi, yi, zi]), target=np.array([xi + 1.0, yi - 0.15, zi]),
                   near=1e-3 * s) for xi, yi, zi in zip(x, y, z, strict=True)]


def _coverage(r, cam: Camera, first: int) -> dict:
    """One frame at `cam`: the pixels it covers (`coverage`: anything drawn; `field_pixels`: the
    counted instances', from index `first` on, and the aggregate proxies', which stand for
    them), its triangles, and triangles per covered pixel."""
    res = r.render(cam)
    covered = int(res.coverage.sum())
    field = int(((res.instance >= first) | (res.coverage & (res.instance < 0))).sum())
    return {"covered_pixels": covered, "field_pixels": field,
            "frame_triangles": int(res.stats.triangles),
            "triangles_per_covered_pixel": res.stats.triangles / max(covered, 1)}
