"""`tessera`: the command-line front door. Subcommands: `preprocess` (same as the `preprocess`
command), `info`, `render` (a PNG and the frame's statistics) and `bench` (a camera path over a
grid of instances, beside brute force). Errors the user caused print one line and exit 2."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

from renderer.apps.preprocess_cli import add_build_options, run_build
from renderer.options import DEBUG_VIEWS, TRAVERSALS


def cmd_info(args: argparse.Namespace) -> int:
    """Print the statistics stored in a `.tess` file (and check every checksum with --verify)."""
    from preprocess.tess.summary import summarize
    from preprocess.tess.container import TessFormatError, read_tess

    try:
        with read_tess(args.file, verify_pages=args.verify) as f:
            meta = f.meta
            text = summarize(meta, f.file_size, f.page_count, f.root_page_count)
    except FileNotFoundError:
        print(f"tessera: error: {args.file}: no such file", file=sys.stderr)
        return 2
    except (TessFormatError, KeyError) as e:
        print(f"tessera: error: {args.file}: {e}", file=sys.stderr)
        return 2
    print(text)
    if args.verify:
        print("  checksums     all sections and pages verified")
    return 0


def _size(text: str) -> tuple[int, int]:
    try:
        w, h = (int(v) for v in text.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"size must look like 512x512, not {text!r}") from None
    if not (1 <= w <= 16384 and 1 <= h <= 16384):
        raise argparse.ArgumentTypeError(f"size {text} out of range (1..16384)")
    return w, h


def _vec3(text: str) -> np.ndarray:
    try:
        v = np.array([float(x) for x in text.split(",")], np.float64)
    except ValueError:
        v = np.zeros(0)
    if v.shape != (3,) or not np.isfinite(v).all():
        raise argparse.ArgumentTypeError(f"expected x,y,z, not {text!r}")
    return v


VIEWS = {"iso": (0.3, 0.35, 1.0), "front": (0.0, 0.0, 1.0), "side": (1.0, 0.0, 0.0),
         "top": (0.0, 1.0, 0.05), "back": (0.0, 0.0, -1.0)}


def _runtime_errors():
    from renderer.device import DeviceError
    from renderer.scene import SceneError

    return (DeviceError, SceneError, FileNotFoundError)


def _stream_options(args: argparse.Namespace) -> dict:
    """RenderOptions for --pool-mb / --upload-mb: a pool given means streaming."""
    if args.pool_mb is not None and not args.pool_mb > 0:
        raise ValueError(f"--pool-mb must be > 0, not {args.pool_mb}")
    return {"streaming": True if args.pool_mb else None, "pool_mb": args.pool_mb,
            "upload_mb": args.upload_mb}


def cmd_render(args: argparse.Namespace) -> int:
    """Render a .tess file (optionally as a grid of instances), a mesh file or a scene file to
    a PNG and print the stats."""
    from renderer.camera import Camera
    from renderer.frame import Renderer
    from renderer.options import RenderOptions

    try:
        opts = RenderOptions(tau=args.tau, persistent=TRAVERSALS[args.traversal],
                             fallback32=args.fallback32, occlusion=not args.no_occlusion,
                             **_stream_options(args))
        r = Renderer(*args.size, options=opts)
        spec = None
        if Path(args.file).suffix.lower() == ".tess":
            tess = args.file
        else:  # a mesh (preprocessed once, cached) or a scene file
            from renderer.apps.loader import load_now

            job = load_now(args.file)
            if job.error:
                print(f"tessera: error: {job.error}", file=sys.stderr)
                return 2
            spec, tess = job.spec, next(iter(job.tess.values()))
        if spec is not None:
            if args.instances != 1:
                print("tessera: error: --instances applies to one asset, not to a scene file",
                      file=sys.stderr)
                return 2
            spec.apply(r, job.tess)
        elif args.instances == 1:
            r.add_instance(r.load(tess))
        else:
            r.add_grid(r.load(tess), args.instances)
        center, radius = r.bounds()
        if args.eye is None and spec is not None and spec.camera is not None:
            cam = spec.camera
        elif args.eye is not None:
            cam = Camera(eye=args.eye, target=center if args.target is None else args.target,
                         fov_y=args.fov, near=max(radius * 1e-3, 1e-6))
        else:
            cam = Camera.framing(center, radius, direction=VIEWS[args.view], fov_y=args.fov,
                                 fill=args.fill)
        res = r.render_converged(cam, debug_view=args.debug)  # streaming: all detail in
    except (*_runtime_errors(), ValueError) as e:
        print(f"tessera: error: {e}", file=sys.stderr)
        return 2
    res.save_png(args.output)
    if args.arrays:
        np.savez_compressed(args.arrays, color=res.color, depth=res.depth, normal=res.normal,
                            instance=res.instance, cluster=res.cluster, triangle=res.triangle,
                            level=res.level, hardware=res.hardware)
    s = res.stats
    c = s.counters
    print(f"wrote {args.output} ({args.size[0]}x{args.size[1]}, {args.debug} view) on "
          f"{r.ctx.description}")
    print(f"  scene       {r.scene.instance_count} instances, {r.scene.triangle_count():,} "
          "triangles at full detail")
    print(f"  instances   {c['instances_visible']} of {c['instances_tested']} in view, "
          f"{c['instances_far']} far (drawn from their root group, no BVH walk)")
    if r.streamer is not None:
        st = r.streamer
        print(f"  streaming   {res.stats.frame + 1} frames to load the view: "
              f"{st.resident_count} of {st.page_count} pages resident in a pool of {st.slots} "
              f"({st.totals.bytes_uploaded / 2**20:.1f} MB uploaded)")
    print(f"  culling     {c['nodes_visited']:,} BVH nodes, {c['groups_tested']:,} groups, "
          f"{c['clusters_tested']:,} clusters tested")
    print(f"  drawn       {s.clusters:,} clusters, {s.triangles:,} triangles (software "
          f"{c['sw_clusters']:,} clusters / {c['sw_triangles']:,} tris, hardware "
          f"{c['hw_clusters']:,} / {c['hw_triangles']:,})")
    print(f"  covered     {int(res.coverage.sum()):,} pixels, "
          f"{s.triangles / max(int(res.coverage.sum()), 1):.2f} triangles per covered pixel")
    if s.gpu_ms:
        print("  GPU ms      " + ", ".join(f"{k} {v:.2f}" for k, v in s.gpu_ms.items())
              + " (first frame: includes shader compilation)")
    if s.overflow:
        print(f"  warning     the queue or visible list overflowed (flags {s.overflow})")
    return 0


def cmd_bench(args: argparse.Namespace) -> int:
    """The suite (default) or a custom run (--scene / --instances / --pool-mb)."""
    from renderer.bench import suite as bench_suite
    from renderer.bench.custom import main_args

    try:
        if args.scene or args.instances is not None or args.pool_mb is not None:
            if args.file is None:
                raise ValueError("a custom run (--scene, --instances, --pool-mb) needs a .tess "
                                 "file")
            args.scene = args.scene or "orbit"
            args.instances = args.instances or 256
            args.frames = args.frames or 16
            return main_args(args)
        asset = args.file
        if asset is None:
            from renderer.apps.loader import load_now

            print("tessera bench: the built-in rock (built once into ~/.cache/tessera)",
                  file=sys.stderr)
            job = load_now(None)
            if job.error:
                raise ValueError(job.error)
            asset = job.tess["rock"]
        cfg = bench_suite.SuiteConfig(
            asset=asset, scenarios=tuple(args.scenario or bench_suite.SCENARIOS),
            width=args.size[0], height=args.size[1], quick=args.quick, frames=args.frames,
            brute=not args.no_brute, pygfx=not args.no_pygfx,
            baseline_limit=args.baseline_limit, persistent=TRAVERSALS[args.traversal])
        return bench_suite.main(cfg, json_path=args.json, compare_path=args.compare,
                                plots_dir=args.plots)
    except (*_runtime_errors(), ValueError) as e:
        print(f"tessera: error: {e}", file=sys.stderr)
        return 2


def cmd_view(args: argparse.Namespace) -> int:
    """The interactive viewer (glfw window, imgui panels)."""
    from preprocess.mesh import MeshError

    try:
        from renderer.apps.viewer import Viewer, ViewerOptions
    except ImportError as e:
        print(f"tessera: error: the viewer needs the 'viewer' extra (pip install tessera[viewer]):"
              f" {e}", file=sys.stderr)
        return 2
    from renderer.camera import Camera
    from renderer.options import RenderOptions

    source = args.file
    if source is not None:  # what can be checked before a window opens
        if not Path(source).exists():
            print(f"tessera: error: {source}: no such file", file=sys.stderr)
            return 2
        if Path(source).suffix.lower() == ".json":
            from renderer.apps.scene_file import SceneFileError, load_scene_file

            try:
                load_scene_file(source)
            except SceneFileError as e:
                print(f"tessera: error: {e}", file=sys.stderr)
                return 2
    try:
        cam = None
        if args.eye is not None:
            cam = Camera(eye=args.eye, target=np.zeros(3) if args.target is None else args.target,
                         fov_y=args.fov, near=args.near)
        opts = ViewerOptions(size=args.size, vsync=not args.no_vsync, frames=args.frames,
                             screenshot=args.screenshot, instances=args.instances, camera=cam,
                             panel=not args.no_panel)
        viewer = Viewer(source, opts, RenderOptions(tau=args.tau,
                                                    persistent=TRAVERSALS[args.traversal],
                                                    fallback32=args.fallback32,
                                                    occlusion=not args.no_occlusion,
                                                    **_stream_options(args)))
        viewer.run()
    except (*_runtime_errors(), MeshError, ValueError) as e:
        print(f"tessera: error: {e}", file=sys.stderr)
        return 2
    except RuntimeError as e:  # glfw: no display
        print(f"tessera: error: cannot open a window: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # Viewer.run() has cancelled any preprocessing
        return 130
    if args.frames and viewer.app.error is not None:  # already printed by the viewer
        return 2
    if args.screenshot:
        print(f"wrote {args.screenshot} after {viewer.app.frames_drawn} frames")
    return 0


def _add_render_options(p: argparse.ArgumentParser, *, view: bool = False,
                        render: bool = False, bench: bool = False) -> None:
    what = "a .tess file"
    if view or render:
        what += ", a mesh file (preprocessed once, cached beside it), a scene .json"
    if view:
        what += ", or nothing (the built-in rock)"
    if bench:
        what += " (default: the built-in rock)"
    p.add_argument("file", nargs="?" if view or bench else None, help=what)
    p.add_argument("--size", type=_size, default=(512, 512), help="image size WxH (512x512)")
    p.add_argument("--instances", type=int, default=1,
                   help="instances on a square grid (default: 1)")
    p.add_argument("--tau", type=float, default=1.0,
                   help="LOD threshold: largest projected error in pixels (default: 1)")
    p.add_argument("--traversal", choices=sorted(TRAVERSALS), default="auto",
                   help="BVH traversal: persistent workgroups, one dispatch per level, or auto "
                        "(persistent on GPUs, per level on CPU adapters; default)")
    p.add_argument("--fallback32", action="store_true",
                   help="force the 32-bit visibility path (for adapters without 64-bit atomics)")
    p.add_argument("--no-occlusion", action="store_true",
                   help="no two-pass HZB occlusion culling (on by default)")
    p.add_argument("--pool-mb", type=float,
                   help="stream the pages through a GPU page pool of this size in MB (default: "
                        "stream only when the pages do not fit what the adapter binds, 1 GiB at "
                        "most)" + ("; bench also reports uploads, convergence and the cost "
                                   "against fully resident" if bench else ""))
    p.add_argument("--upload-mb", type=float, default=16.0,
                   help="streaming: MB of pages uploaded per frame at most (16)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="tessera", description="Tessera: virtualized geometry "
                                     "for Python (cluster LOD, GPU culling and rasterization).")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    p = sub.add_parser("preprocess", help="build a .tess asset from a mesh file")
    add_build_options(p)
    p.set_defaults(func=run_build)
    p = sub.add_parser("info", help="print the statistics of a .tess file")
    p.add_argument("file", help="a .tess file")
    p.add_argument("--verify", action="store_true", help="also check every page checksum")
    p.set_defaults(func=cmd_info)
    p = sub.add_parser("render", help="render a .tess, mesh or scene .json file to a PNG and "
                       "print the frame's stats")
    _add_render_options(p, render=True)
    p.add_argument("-o", "--output", default="render.png", help="PNG to write (render.png)")
    p.add_argument("--view", choices=sorted(VIEWS), default="iso",
                   help="camera direction, looking at the scene's centre (default: iso)")
    p.add_argument("--eye", type=_vec3, help="camera position x,y,z (overrides --view)")
    p.add_argument("--target", type=_vec3, help="point looked at x,y,z (default: scene centre)")
    p.add_argument("--fov", type=float, default=60.0, help="vertical field of view, degrees")
    p.add_argument("--fill", type=float, default=1.0,
                   help="fraction of the view height the scene's bounding sphere fills")
    p.add_argument("--debug", choices=DEBUG_VIEWS, default="lit",
                   help="color by: lit shading, cluster, triangle, group, LOD level, "
                        "raster (SW blue / HW orange), instance")
    p.add_argument("--arrays", help="also save every image (depth, ids, ...) to this .npz")
    p.set_defaults(func=cmd_render)
    p = sub.add_parser("view", help="the interactive viewer (a .tess, a mesh file, a scene "
                       ".json, or nothing for the built-in rock)")
    _add_render_options(p, view=True)
    p.set_defaults(size=(1280, 800))
    p.add_argument("--frames", type=int, default=0,
                   help="close after N frames (0: when the window closes)")
    p.add_argument("--screenshot", help="save the last frame, panel included, to this PNG")
    p.add_argument("--eye", type=_vec3, help="start camera position x,y,z")
    p.add_argument("--target", type=_vec3, help="start point looked at x,y,z (default: origin)")
    p.add_argument("--fov", type=float, default=60.0, help="vertical field of view, degrees")
    p.add_argument("--near", type=float, default=0.01, help="near plane distance (with --eye)")
    p.add_argument("--no-vsync", action="store_true", help="draw as fast as possible")
    p.add_argument("--no-panel", action="store_true", help="hide the imgui panel")
    p.set_defaults(func=cmd_view)
    p = sub.add_parser("bench", help="the benchmark suite (closeup, scaling, occluded, "
                       "streaming) with brute-force and pygfx baselines; or one custom run")
    _add_render_options(p, bench=True)
    p.set_defaults(instances=None, file=None)
    p.add_argument("--scenario", action="append", choices=["closeup", "scaling", "occluded",
                                                           "streaming"],
                   help="suite: run this scenario (repeat; default all)")
    p.add_argument("--quick", action="store_true",
                   help="suite: a one-minute version (grids up to 256, 4 frames a run)")
    p.add_argument("--frames", type=int, help="frames on each camera path (suite 12, quick 4; "
                                              "custom run 16)")
    p.add_argument("--no-brute", action="store_true", help="skip the brute-force baseline")
    p.add_argument("--no-pygfx", action="store_true", help="suite: skip the pygfx baseline")
    p.add_argument("--baseline-limit", type=float,
                   help="suite: a baseline predicted slower than this many seconds a frame is "
                        "not run at that size (30; quick 5)")
    p.add_argument("--json", help="also write the figures to this JSON file (suite: plots "
                                  "beside it)")
    p.add_argument("--compare", help="suite: flag regressions against this earlier JSON "
                                     "(exit status 1)")
    p.add_argument("--plots", help="suite: write scaling.png and passes.png to this folder")
    p.add_argument("--scene", choices=["orbit", "field"],
                   help="a custom run instead of the suite: orbit (a quarter orbit over a grid of "
                        "--instances, 256 by default) or field (a dense field from ground level, "
                        "occlusion on and off)")
    p.add_argument("--brute-frames", type=int, default=3,
                   help="custom run: brute-force frames measured (3; they are slow)")
    p.set_defaults(func=cmd_bench)
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
