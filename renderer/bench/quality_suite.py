"""The quality benchmark of issue 15: per model and view, triangles per covered pixel, normals more
than 30 degrees off full detail, PSNR against a 4x4 supersampled full-detail frame, coverage
difference and pinholes, at tau = 1, 2, 4 and full detail (`renderer.bench.quality`).

Models: the hard-edged and flat ones made in code (`assets.hard_edges`) and the shared ones
beside the checkout (../shared/assets: scans, a mechanical part without normals, glTF assets with
hard edges and seams), and the `make demo` scene (64 rocks at 512x512, the issue's own figures).
Each is built once into a cache folder, named after a hash of the model and of the preprocessor's
and the models' sources, so an edit to the builder rebuilds and a rerun does not.

    tessera bench --scenario quality                     # everything, 256x256 (~2 minutes)
    tessera bench --scenario quality --models demo       # the `make demo` scene, 512x512
    python tools/bench_quality.py --only gear cad-part --images /tmp/quality   # every option
    python tools/bench_quality.py --json out/bench/quality.json --size 512
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SHARED = ROOT.parent / "shared" / "assets"

# shared models: name -> (file under SHARED, what it tests)
SHARED_MODELS = {
    "bunny": ("stanford-bunny.obj", "scan, smooth (computed normals)"),
    "igea": ("igea.obj", "scan, 269k triangles (computed normals)"),
    "rocker-arm": ("rocker-arm.obj", "mechanical part, sharp features, no normals in the file"),
    "water-bottle": ("textured/WaterBottle/WaterBottle.gltf", "glTF, hard edges on the cap"),
    "damaged-helmet": ("textured/DamagedHelmet.glb", "glTF, UV seams everywhere"),
}
# the `make demo` scene: 64 copies of the built-in 1M-triangle rock on a grid, `tessera render
# --instances 64 --view iso --fill 1.7` at 512x512 (the 9.74 triangles per covered pixel)
DEMO = "demo"
DEMO_INSTANCES = 64
DEMO_FILL = 1.7
# the targets for hard-edged and flat models at tau = 1 (and pinholes at 4 too)
HARD_EDGED = ("bevelled-box", "star-prism", "l-bracket", "gear", "faceted-sphere",
              "faceted-d20", "faceted-rock", "cad-part", "rocker-arm", "water-bottle")
TARGET_NORMAL_OFF = 0.02
TARGET_DEMO_TRI_PER_PX = 2.5  # the demo scene at tau = 1, with PSNR at least today's


def models() -> dict[str, str]:
    from assets.hard_edges import MODELS

    out = {name: desc for name, (_, desc) in MODELS.items()}
    out.update({name: desc for name, (_, desc) in SHARED_MODELS.items()})
    out[DEMO] = (f"the `make demo` scene: {DEMO_INSTANCES} built-in 1M-triangle rocks, iso view, "
                 f"fill {DEMO_FILL}")
    return out


def _source_hash() -> str:
    """A hash of everything a build depends on: the preprocessor's and the models' sources."""
    h = hashlib.sha1()
    for p in sorted([*(ROOT / "preprocess").rglob("*.py"), *(ROOT / "assets").rglob("*.py")]):
        h.update(p.relative_to(ROOT).as_posix().encode())
        h.update(p.read_bytes())
    return h.hexdigest()


def _mesh(name: str, shared: Path):
    from assets.hard_edges import MODELS
    from preprocess.load import load_mesh

    if name in MODELS:
        return MODELS[name][0]()
    if name == DEMO:
        from assets import builtin_mesh

        return builtin_mesh("rock", 1_000_000)  # what `preprocess --builtin rock` builds
    return load_mesh(shared / SHARED_MODELS[name][0])


def normals_note(mesh) -> str:
    """How a mesh's normals came out of the loader: wedges per position (1: one smooth normal per
    position, given or computed; more: hard edges or seams kept)."""
    wedges = len(mesh.wedge_position)
    return (f"{mesh.triangle_count:,} triangles, {mesh.vertex_count:,} positions, {wedges:,} "
            f"wedges ({wedges / mesh.vertex_count:.2f} per position"
            f"{', uvs' if mesh.wedge_uv is not None else ''})")


def build(name: str, cache: Path, key: str, *, shared: Path = SHARED,
          rebuild: bool = False, normal_cost: float = 0.0) -> tuple[Path, str]:
    """The model's .tess in `cache` (built if missing or `rebuild`; `normal_cost`: the build's
    `BuildConfig.normal_cost`), and its normals note."""
    from preprocess.build import build_file
    from preprocess.config import BuildConfig

    stamp = key if not normal_cost else f"{key}:normal-cost {normal_cost!r}"
    if name in SHARED_MODELS:
        f = shared / SHARED_MODELS[name][0]
        st = f.stat()
        stamp = hashlib.sha1(f"{stamp}:{f}:{st.st_size}:{st.st_mtime_ns}".encode()).hexdigest()
    path = cache / f"{name}-{hashlib.sha1(f'{stamp}:{name}'.encode()).hexdigest()[:12]}.tess"
    note_path = path.with_suffix(".note.txt")
    if rebuild or not path.exists() or not note_path.exists():
        mesh = _mesh(name, shared)
        meta = build_file(mesh, path, BuildConfig(normal_cost=normal_cost)).packed.meta
        root, levels = int(meta["root_triangles"]), len(meta["clusters_per_level"])
        target = max(128, mesh.triangle_count // 100)
        over = "" if root <= target else f" (over max(128, 1%) = {target:,})"
        note_path.write_text(f"{normals_note(mesh)}; {levels} level{'s' if levels > 1 else ''}, "
                             f"root {root:,} triangles{over}")
    return path, note_path.read_text()


def targets(pooled_rows: list[dict]) -> list[str]:
    """The issue's targets: the demo scene at tau = 1 at most 2.5 triangles per covered pixel;
    on the hard-edged models at tau = 1 at most 2% of pixels more than 30 degrees off, no
    pinholes at tau = 1 and 4 (all views pooled; a pinhole is an empty pixel further inside
    than a tau-pixel error can move an edge, as the issue measured them)."""
    top = max((r["tau"] for r in pooled_rows if r["tau"] is not None), default=None)
    out = [f"{r['asset']:<16} level 0 only at every distance, tau {top:g} included: no LOD "
           "drawn, so its figures below say nothing about LOD"
           for r in pooled_rows if r["tau"] == top and r["max_level"] == 0]
    for r in pooled_rows:
        if r["asset"] == DEMO and r["tau"] == 1.0:
            ok = r["tri_per_px"] <= TARGET_DEMO_TRI_PER_PX
            out.append(f"{DEMO:<16} tau 1: {r['tri_per_px']:.2f} triangles per covered pixel "
                       f"(<= {TARGET_DEMO_TRI_PER_PX}: {'met' if ok else 'NOT met'}), PSNR "
                       f"{r['psnr']:.2f} dB (to keep: the issue measured 23.3)")
        if r["asset"] not in HARD_EDGED or r["tau"] not in (1.0, 4.0):
            continue
        if r["tau"] == 1.0:
            ok = r["normal_off"] <= TARGET_NORMAL_OFF
            out.append(f"{r['asset']:<16} tau 1: {100 * r['normal_off']:.2f}% normals off "
                       f"(<= 2%: {'met' if ok else 'NOT met'})")
        # a pinhole, as the issue counts them: an empty pixel further inside the reference's
        # solid region than ceil(tau) + 1 px, where no allowed error moves an edge (the nearer
        # ones are the silhouette moving within tau: the "pinholes" column counts them too)
        ok = r["pinholes_deep"] == 0
        out.append(f"{r['asset']:<16} tau {r['tau']:g}: {r['pinholes_deep']} pinholes deeper "
                   f"than the error ({r['pinholes']} empty pixels under a solid reference; "
                   f"0: {'met' if ok else 'NOT met'})")
    return out


def _parser(known: dict[str, str]) -> argparse.ArgumentParser:
    from renderer.bench import quality

    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--only", nargs="+", choices=list(known), help="these models (default all)")
    p.add_argument("--size", type=int, default=256, help="image size (square; the reference is "
                   f"{quality.SUPERSAMPLE}x larger)")
    p.add_argument("--taus", type=float, nargs="+", default=list(quality.TAUS))
    p.add_argument("--views", nargs="+", choices=[v.name for v in quality.VIEWS],
                   default=[v.name for v in quality.VIEWS])
    p.add_argument("--json", help="write the rows (per view and pooled) to this file")
    p.add_argument("--images", help="write a side-by-side PNG per model and view to this folder")
    p.add_argument("--cache", default=str(Path(tempfile.gettempdir()) / "tessera-quality"),
                   help="folder of the built .tess files (default: a temporary folder)")
    p.add_argument("--rebuild", action="store_true", help="build every model again")
    p.add_argument("--shared", default=str(SHARED),
                   help="the shared meshes' folder (default: ../shared/assets beside the checkout)")
    p.add_argument("--demo-size", type=int, default=512,
                   help=f"image size of the {DEMO} scene (512, as `make demo`)")
    p.add_argument("--normal-cost", type=float, default=0.0, metavar="W",
                   help="build with normals and uvs in the collapse cost (`preprocess "
                        "--normal-cost`; default 0)")
    return p


def _fail(message: str) -> int:
    print(f"tessera bench quality: error: {message}", file=sys.stderr)
    return 2


def _args_error(args: argparse.Namespace) -> str | None:
    """What is out of range in the arguments, or None."""
    if not 0 <= args.normal_cost <= 100:  # nan too
        return f"--normal-cost {args.normal_cost} out of range (0..100)"
    for flag, v in (("--size", args.size), ("--demo-size", args.demo_size)):
        if not 16 <= v <= 2048:
            return f"{flag} {v} out of range (16..2048)"
    if not all(t > 0 for t in args.taus):
        return "every tau must be > 0"
    return None


def _measure(args: argparse.Namespace, names: list[str], views: list, cache: Path, ctx,
             steps: dict[str, int]) -> tuple[list[dict], dict[str, str], dict[str, dict]]:
    """Each model built (or taken from the cache) and measured: (the rows, the build notes by
    model, the seconds each took to build and to measure)."""
    from tqdm import tqdm

    from renderer.bench import quality

    key = _source_hash()
    rows, notes, seconds = [], {}, {}
    bar = tqdm(total=sum(steps.values()), desc="bench_quality", unit="step",
               leave=False, file=sys.stderr)
    try:
        for name in names:
            t0 = time.perf_counter()
            bar.set_postfix_str(f"{name}: build")
            path, notes[name] = build(name, cache, key, shared=Path(args.shared),
                                      rebuild=args.rebuild, normal_cost=args.normal_cost)
            bar.update(1)
            t1 = time.perf_counter()

            def step(what: str) -> None:
                bar.set_postfix_str(what)
                bar.update(1)

            if name == DEMO:
                got = quality.measure_quality(
                    path, [quality.View(DEMO, fill=DEMO_FILL)], args.taus, args.demo_size,
                    ctx=ctx, instances=DEMO_INSTANCES, name=name, images=args.images,
                    progress=step)
            else:
                got = quality.measure_quality(path, views, args.taus, args.size, ctx=ctx,
                                              name=name, images=args.images, progress=step)
            rows += got
            seconds[name] = {"build": round(t1 - t0, 2),
                             "measure": round(time.perf_counter() - t1, 2)}
    finally:
        bar.close()
    return rows, notes, seconds


def _report(args: argparse.Namespace, known: dict[str, str], names: list[str], views: list,
            ctx, rows: list[dict], notes: dict[str, str], seconds: dict[str, dict],
            images: int) -> None:
    """The tables (per view and pooled), the targets, and the JSON file asked for."""
    from renderer.bench import quality

    pooled = quality.pooled(rows)
    print(f"{args.size}x{args.size} ({DEMO}: {args.demo_size}x{args.demo_size}), reference "
          f"{quality.SUPERSAMPLE}x{quality.SUPERSAMPLE} supersampled full detail, views "
          f"{', '.join(v.name for v in views)}, on {ctx.description}")
    for name in names:
        print(f"  {name:<16} {known[name]}; {notes[name]}")
    print()
    print(quality.table(rows))
    print()
    print("all views pooled:")
    print(quality.table(pooled))
    lines = targets(pooled)
    if lines:
        print()
        print("issue 15 targets (views pooled):")
        print("\n".join("  " + x for x in lines))
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        from preprocess.tess.atomic import write_atomically

        write_atomically(args.json, lambda f: f.write(json.dumps({
            "meta": {"size": args.size, "demo_size": args.demo_size,
                     "normal_cost": args.normal_cost,
                     "supersample": quality.SUPERSAMPLE,
                     "views": [v.__dict__ for v in views], "taus": args.taus,
                     "device": ctx.description, "models": notes,
                     "seconds": seconds},
            "rows": quality.to_json(rows), "pooled": quality.to_json(pooled)},
            indent=1).encode()))
        print(f"wrote {args.json}")
    if args.images:
        print(f"wrote {images} PNGs to {args.images}")


def main(argv: list[str] | None = None) -> int:
    from renderer.bench import quality

    known = models()
    args = _parser(known).parse_args(argv)
    why = _args_error(args)
    if why:
        return _fail(why)
    names = args.only or list(known)
    shared = Path(args.shared)
    missing = [n for n in names
               if n in SHARED_MODELS and not (shared / SHARED_MODELS[n][0]).exists()]
    if missing and args.only:
        return _fail(f"{', '.join(missing)}: not in {shared}")
    if missing:
        print(f"tessera bench quality: skipping {', '.join(missing)} (not in {shared})",
              file=sys.stderr)
    names = [n for n in names if n not in missing]
    cache = Path(args.cache)
    cache.mkdir(parents=True, exist_ok=True)
    views = [v for v in quality.VIEWS if v.name in args.views]

    from renderer.device import DeviceError, create_context

    try:
        ctx = create_context()
    except DeviceError as e:
        return _fail(str(e))
    steps = {n: 2 if n == DEMO else 1 + len(views) for n in names}
    rows, notes, seconds = _measure(args, names, views, cache, ctx, steps)
    _report(args, known, names, views, ctx, rows, notes, seconds,
            images=sum(steps.values()) - len(names))
    return 0


if __name__ == "__main__":
    sys.exit(main())
