"""`tessera`: the command-line front door. Subcommands: `preprocess` (same as the `preprocess`
command), `info`, `render` (a PNG and the frame's statistics) and `bench` (a camera path over a
grid of instances, beside brute force). Errors the user caused print one line and exit 2:
every option value is checked as it is parsed, the input and output paths and the scene before
the GPU is opened, and what depends on the adapter (image size, instance count) by `Renderer`
before it allocates anything."""

from __future__ import annotations

import argparse
import math
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

# light imports only: numpy, wgpu and the builder are imported inside `main`, once the signals
# are ours (renderer.apps.signals)
from renderer.apps.preprocess_cli import (
    add_build_options,
    as_a_program,
    one_line_warnings,
    run_build,
    whole,
)
from renderer.apps.signals import (
    EXIT_SIGINT,
    EXIT_SIGTERM,
    StopSignals,
    end_quietly,
    quiet_destructors,
    stoppable,
    stopped,
    terminate_as_interrupt,
)

if TYPE_CHECKING:
    import numpy as np

    from renderer.apps.loader import LoadJob


class _Parser(argparse.ArgumentParser):
    """argparse, with its errors on one line (no usage block above them)."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def cmd_info(args: argparse.Namespace) -> int:
    """Print the statistics stored in a `.tess` file, once it opened (its records checked); with
    --verify, every page checked and decoded first (`AssetFile.verify`)."""
    from preprocess.tess.summary import summarize
    from preprocess.tess.container import TessFormatError
    from preprocess.tess.reader import read_tess

    why = _input_error(args.file)  # missing, a folder (was a traceback), unreadable
    if why:
        return _error(why)
    try:
        with read_tess(args.file, verify_pages=args.verify) as f:
            meta = f.meta
            text = summarize(meta, f.file_size, f.page_count, f.root_page_count)
    except (TessFormatError, KeyError, OSError) as e:
        message = e.args[-1] if isinstance(e, OSError) and e.args else str(e)
        # the reader's messages name the file already
        return _error(message if str(message).startswith(args.file) else f"{args.file}: "
                      f"{message}")
    print(text)
    if args.verify:
        print("  verified      every checksum, record and page, positions decoded")
    return 0


def _size(text: str) -> tuple[int, int]:
    from renderer.limits import MAX_IMAGE_SIZE

    try:
        w, h = (int(v) for v in text.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"size must look like 512x512, not {text!r}") from None
    if not (1 <= w <= MAX_IMAGE_SIZE and 1 <= h <= MAX_IMAGE_SIZE):
        raise argparse.ArgumentTypeError(f"size {text} out of range (1..{MAX_IMAGE_SIZE} a side)")
    return w, h


def _vec3(text: str) -> np.ndarray:
    import numpy as np

    from renderer.limits import MAX_WORLD

    try:
        v = np.array([float(x) for x in text.split(",")], np.float64)
    except ValueError:
        v = np.zeros(0)
    if v.shape != (3,) or not np.isfinite(v).all():
        raise argparse.ArgumentTypeError(f"expected x,y,z (3 finite numbers), not {text!r}")
    if not np.abs(v).max() <= MAX_WORLD:
        raise argparse.ArgumentTypeError(f"{text}: coordinates are at most {MAX_WORLD:.0e} in "
                                         "magnitude (float32 on the GPU)")
    return v


def _real(lo: float, hi: float = math.inf, *, lo_open: bool = True, unit: str = ""):
    """An argparse type: a finite number in (lo, hi] (`lo_open`) or in [lo, hi]."""
    if hi == math.inf:
        what = f"> {lo:g}" if lo_open else f">= {lo:g}"
    else:
        what = f"in ({lo:g}, {hi:g}]" if lo_open else f"between {lo:g} and {hi:g}"

    def parse(text: str) -> float:
        try:
            v = float(text)
        except ValueError:
            v = math.nan
        if not (math.isfinite(v) and (v > lo if lo_open else v >= lo) and v <= hi):
            raise argparse.ArgumentTypeError(f"must be a finite number {what}{unit}, not {text!r}")
        return v

    return parse


_POSITIVE = _real(0.0)


def _add_fov(p: argparse.ArgumentParser) -> None:
    from renderer.limits import MAX_FOV, MIN_FOV

    p.add_argument("--fov", type=_real(MIN_FOV, MAX_FOV, lo_open=False, unit=" degrees"),
                   default=60.0,
                   help=f"vertical field of view, degrees ({MIN_FOV:g}..{MAX_FOV:g}; 60)")


VIEWS = {"iso": (0.3, 0.35, 1.0), "front": (0.0, 0.0, 1.0), "side": (1.0, 0.0, 0.0),
         "top": (0.0, 1.0, 0.05), "back": (0.0, 0.0, -1.0)}


def _runtime_errors():
    from renderer.device import DeviceError
    from renderer.scene import SceneError

    return (DeviceError, SceneError, FileNotFoundError)


def _stream_options(args: argparse.Namespace) -> dict:
    """RenderOptions for --pool-mb / --upload-mb: a pool given means streaming; the sun's
    (--sun, --no-shadows, --shadow-pool-mb); the textures' pool (--texture-pool-mb)."""
    return {"streaming": True if args.pool_mb else None, "pool_mb": args.pool_mb,
            "upload_mb": args.upload_mb, "shadows": not args.no_shadows, "sun": args.sun,
            "shadow_pool_mb": args.shadow_pool_mb, "texture_pool_mb": args.texture_pool_mb,
            "texture_sampling": args.texture_sampling}


def _sun(text: str) -> tuple[float, float] | None:
    """An argparse type: AZIMUTH,ELEVATION in degrees (RenderOptions.sun's rules), or `none`."""
    if text.strip().lower() == "none":
        return None
    try:
        sun = tuple(float(x) for x in text.split(","))
    except ValueError:
        sun = ()
    if len(sun) != 2:
        raise argparse.ArgumentTypeError(f"expected AZIMUTH,ELEVATION in degrees, or none, not "
                                         f"{text!r}")
    try:
        from renderer.options import check_sun

        check_sun(sun, "the sun")
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
    return sun


def _error(message: str) -> int:
    print(f"tessera: error: {message}", file=sys.stderr)
    return 2


def _output_error(path: str, option: str, suffix: str) -> str | None:
    """Why `path` cannot be written as `option` (a `suffix` file), or None: checked before the
    GPU is opened, so that a typo costs no render."""
    p = Path(path)
    if p.is_dir() or not p.name:  # `.`, `..`, `/`: no file name to give a suffix
        return f"{option} {path}: is a folder; name a {suffix[1:].upper()} file in it"
    if p.suffix.lower() != suffix:
        return (f"{option} {path}: writes {suffix[1:].upper()} files only; name it "
                f"{p.with_suffix(suffix).name}")
    folder = p.parent
    if not folder.is_dir():
        return f"{option} {path}: no folder {folder}"
    if not os.access(folder, os.W_OK) or (p.exists() and not os.access(p, os.W_OK)):
        return f"{option} {path}: not writable"
    return None


def _folder_error(path: str, option: str) -> str | None:
    """Why `path` cannot be the folder `option` writes into (made if missing), or None: checked
    before the run, not after it."""
    p = Path(path)
    if p.exists() and not p.is_dir():
        return f"{option} {path}: is a file, not a folder"
    ancestor = p
    while not ancestor.exists():
        ancestor = ancestor.parent
    if not ancestor.is_dir() or not os.access(ancestor, os.W_OK):
        return f"{option} {path}: cannot make or write it ({ancestor} is not a writable folder)"
    return None


def _input_error(path: str) -> str | None:
    """Why `path` cannot be read, or None (before the GPU is opened)."""
    p = Path(path)
    if not p.exists():
        return f"{path}: no such file"
    if p.is_dir():
        return f"{path}: is a folder, not a file"
    try:
        with open(p, "rb") as f:
            f.read(1)
    except OSError as e:
        return f"{path}: cannot read: {e.strerror or e}"
    return None


def _up_error(path: str | None, up: str | None) -> str | None:
    """Why --up does not apply to `path`, or None: it is a mesh file's up axis."""
    if up is None:
        return None
    if path is None:
        return f"--up {up} applies to a mesh file; the built-in rock is Y-up"
    suffix = Path(path).suffix.lower()
    if suffix == ".tess":
        return (f"--up {up} applies to a mesh file; {path} is built already (preprocess --up "
                f"{up} the mesh instead)")
    if suffix == ".json":
        return (f"--up {up} applies to a mesh file; a scene file gives each mesh asset its own "
                f"up axis: {{\"file\": ..., \"up\": \"{up}\"}}")
    return None


def _same_point(a, b) -> bool:
    """Equal once on the GPU (float32)."""
    import numpy as np

    return bool(np.array_equal(np.asarray(a, np.float32), np.asarray(b, np.float32)))


def _precision_error(cam, height: int, center: np.ndarray, radius: float) -> str | None:
    """Why float32 positions cannot draw this view of the scene, or None: a scene far from the
    world origin for its size (a unit sphere moved 1e8 away draws nothing; 1e6 away, at 96
    pixels, its silhouette is off by 5). Checked for a camera outside the scene's bounding
    sphere only, where the distance to what it sees is known."""
    import numpy as np

    if float(np.linalg.norm(np.asarray(cam.eye, np.float64) - center)) <= radius:
        return None
    err = cam.float32_error_px(height, center)
    if err <= 1.0:
        return None
    reach = float(np.abs(center).max())
    return (f"the scene lies {reach:.3g} from the world origin, {reach / radius:.3g} times its "
            f"radius: float32 positions there are {err:.3g} pixels apart in this view (at most "
            "1); move the scene nearer the origin")


def cmd_render(args: argparse.Namespace, stop: StopSignals) -> int:
    """Render a .tess file (optionally as a grid of instances), a mesh file or a scene file to
    a PNG and print the stats. What needs no GPU is checked first: the paths, the scene file,
    the asset's header (and a mesh is preprocessed). What this run preprocessed (a mesh's or a
    scene's cache) goes again where the run fails or is stopped: a next run must not trust it
    (a scene the renderer refused) and nothing is left of a run that printed an error."""
    why = _render_args_error(args)
    if why:
        return _error(why)
    return _with_job(args, stop, lambda job: _render(args, job, stop))


def _with_job(args: argparse.Namespace, stop: StopSignals, work) -> int:
    """work(job): `job` resolves a mesh (preprocessed once, cached) or a scene file to .tess
    files (None for a .tess); what it built goes again where the work fails or is stopped."""
    job = None
    if Path(args.file).suffix.lower() != ".tess":
        from renderer.apps.loader import LoadJob

        job = LoadJob(args.file, args.up, check=stop.check)
    try:
        status = work(job)
        if status:
            stop.check()  # an error that followed a signal is the signal's
    except BaseException:
        stop.hold()  # stopped: a second signal must not cut the clean-up short
        if job is not None:
            job.discard()
        raise
    if status and job is not None:
        job.discard()
    return status


def _open_scene(args: argparse.Namespace, job: LoadJob | None, stop: StopSignals):
    """The renderer of `render` and `dataset` with its scene (`job` resolves a mesh or scene
    file to .tess files in this thread), the ground where asked: (renderer, the scene file's
    spec or None, the scene's centre and radius), or the one line of what went wrong."""
    from renderer.options import TRAVERSALS, RenderOptions

    opts = RenderOptions(tau=1.0 if args.tau is None else args.tau,
                         persistent=TRAVERSALS[args.traversal],
                         fallback32=args.fallback32, occlusion=not args.no_occlusion,
                         aggregates=not args.no_aggregates, **_stream_options(args))
    spec = None
    if job is None:
        from renderer.scene import open_asset

        open_asset(args.file)  # its header and hierarchy, before the GPU
        tess = args.file
    else:
        job.run()
        stop.check()  # a signal its build swallowed: its error, if any, is the signal's
        if job.error:
            return job.error
        spec, tess = job.spec, next(iter(job.tess.values()))
        if spec is not None and args.instances != 1:
            return "--instances applies to one asset, not to a scene file"
    from renderer.renderer import Renderer

    from renderer.apps.scene_file import place_scene

    r = Renderer(*args.size, options=opts)  # the GPU: checks the size against the adapter
    center, radius = place_scene(r, spec, tess, tess_paths=None if job is None else job.tess,
                                 instances=args.instances, ground=args.ground)
    return r, spec, center, radius


def _render(args: argparse.Namespace, job: LoadJob | None, stop: StopSignals) -> int:
    """`render` once its arguments are checked: the asset or scene (`_open_scene`), the GPU,
    the frame; then the PNG and the stats."""
    from renderer.results import INCOMPLETE

    try:
        opened = _open_scene(args, job, stop)
        if isinstance(opened, str):
            return _error(opened)
        r, spec, center, radius = opened
        cam = _render_camera(args, spec, center, radius)
        why = _precision_error(cam, args.size[1], center, radius)
        if why:
            return _error(why)
        stop.check()  # a signal held back while wgpu opened the GPU and took the scene
        # streaming: all detail in; --ssaa, --taa: checked against the adapter before drawing
        res = r.render_converged(cam, debug_view=args.debug, tau=args.tau, ssaa=args.ssaa,
                                 accumulate=args.taa)
    except (*_runtime_errors(), ValueError) as e:
        return _error(str(e))
    if res.stats.overflow & INCOMPLETE:  # no image with holes
        hint = "; --traversal level avoids it" if r.persistent else ""
        return _error("the culling traversal stopped with work left (this adapter cut a shader "
                      f"loop short): the image would miss parts of the scene{hint}")
    stop.check()  # the last moment a signal stops it: the frame is done, the PNG is written
    stop.hold()
    why = _save_render(args, res)
    if why:
        return _error(why)
    _print_render_stats(args, r, res)
    return 0


def _render_args_error(args: argparse.Namespace) -> str | None:
    """What is wrong with `render`'s arguments before anything is opened: the output paths, the
    input, the camera; None where nothing is."""
    from renderer.camera import max_fill

    for path, option, suffix in ((args.output, "-o", ".png"), (args.arrays, "--arrays", ".npz")):
        why = path is not None and _output_error(path, option, suffix)
        if why:
            return why
    why = _input_error(args.file) or _up_error(args.file, args.up)
    if why:
        return why
    if args.eye is not None and args.target is not None and _same_point(args.eye, args.target):
        return "--eye and --target are the same point"
    if args.eye is None and args.fill > max_fill(args.fov):
        return (f"--fill {args.fill:g}: at --fov {args.fov:g} the camera would be inside "
                f"the scene's bounding sphere (--fill at most {max_fill(args.fov):.3g})")
    return None


def _render_camera(args: argparse.Namespace, spec, center: np.ndarray, radius: float):
    """`render`'s camera: the scene file's (without --eye), at --eye (looking at --target, or
    the scene's centre), or along --view framing the scene. ValueError: an eye at the point it
    looks at."""
    from renderer.camera import Camera

    if args.eye is None and spec is not None and spec.camera is not None:
        return spec.camera
    if args.eye is not None:
        target = center if args.target is None else args.target
        if _same_point(args.eye, target):
            raise ValueError("--eye is the scene's centre, where the camera looks unless "
                             "--target says otherwise")
        return Camera(eye=args.eye, target=target, fov_y=args.fov, near=radius * 1e-3)
    return Camera.framing(center, radius, direction=VIEWS[args.view], fov_y=args.fov,
                          fill=args.fill)


def _save_render(args: argparse.Namespace, res) -> str | None:
    """Write the PNG (and the --arrays .npz); the error line where that fails (a full disk, a
    folder removed meanwhile: nothing half written stays), else None."""
    started = []
    try:
        started.append(args.output)
        res.save_png(args.output)
        if args.arrays:
            import numpy as np

            started.append(args.arrays)
            np.savez_compressed(args.arrays, color=res.color, depth=res.depth, normal=res.normal,
                                instance=res.instance, cluster=res.cluster,
                                triangle=res.triangle, level=res.level, hardware=res.hardware,
                                base_color=res.base_color, shading_normal=res.shading_normal,
                                roughness=res.roughness, metallic=res.metallic,
                                occlusion=res.occlusion, emissive=res.emissive,
                                material=res.material, velocity=res.velocity, shadow=res.shadow)
    except OSError as e:
        for path in started:
            Path(path).unlink(missing_ok=True)
        return f"cannot write {started[-1]}: {e.strerror or e}"
    return None


def _print_render_stats(args: argparse.Namespace, r, res) -> None:
    s = res.stats
    c = s.counters
    aa = "".join([f", ssaa {args.ssaa}: drawn at {args.size[0] * args.ssaa}x"
                  f"{args.size[1] * args.ssaa}" if args.ssaa > 1 else "",
                  f", {args.taa} frames accumulated" if args.taa else ""])
    print(f"wrote {args.output} ({args.size[0]}x{args.size[1]}, {args.debug} view{aa}) on "
          f"{r.ctx.description}")
    print(f"  scene       {r.scene.instance_count} instances, {r.scene.triangle_count():,} "
          "triangles at full detail")
    print(f"  instances   {c['instances_visible']} of {c['instances_tested']} in view, "
          f"{c['instances_far']} far (drawn from their root group, no BVH walk), "
          f"{c['instances_boxed']} farther (drawn as their asset's box)")
    if c["proxies_drawn"] or c["proxied_instances"]:
        print(f"  aggregates  {c['proxied_instances']} instances stood for by "
              f"{c['proxies_drawn']} proxy boxes in view (far groups under tau)")
    if r.streamer is not None:
        st = r.streamer
        print(f"  streaming   {res.stats.frame + 1} frames to load the view: "
              f"{st.resident_count} of {st.page_count} pages resident in a pool of {st.slots} "
              f"({st.totals.bytes_uploaded / 2**20:.1f} MB uploaded)")
    tp = r.texture_pool
    if tp is not None and tp.entries:
        how = (f"streamed, {tp.resident:,} of {tp.entries:,} tiles resident in {tp.slots:,} "
               f"slots" if tp.streaming else f"all {tp.entries:,} tiles resident")
        short = (s.textures or {}).get("short", 0)
        print(f"  textures    {len(tp.textures)} on the GPU in {tp.texture_bytes / 2**20:,.1f} "
              f"MiB: {how}" + (f"; {short:,} wanted tiles drawn from coarser mips (pool full)"
                               if short else ""))
    print(f"  culling     {c['nodes_visited']:,} BVH nodes, {c['groups_tested']:,} groups, "
          f"{c['clusters_tested']:,} clusters tested")
    print(f"  drawn       {s.clusters:,} clusters, {s.triangles:,} triangles (software "
          f"{c['sw_clusters']:,} clusters / {c['sw_triangles']:,} tris, hardware "
          f"{c['hw_clusters']:,} / {c['hw_triangles']:,})")
    print(f"  covered     {int(res.coverage.sum()):,} pixels, "
          f"{s.triangles / max(int(res.coverage.sum()), 1):.2f} triangles per covered pixel")
    sh = s.shadow
    if sh is not None:
        sun = "no sun" if r.sun is None else f"sun at {r.sun[0]:g}, {r.sun[1]:g} deg"
        lights = f", {len(r.lights)} spot/point lights" if r.lights else ""
        print(f"  shadows     {sun}{lights}: {sh['marked']:,} pages "
              f"({sh['pool_used']:,} of the pool's {sh['pool_pages']:,}), "
              f"{sh['triangles']:,} triangles drawn into them"
              + (f"; {sh['failed']:,} pages short, shaded from coarser levels"
                 if sh["failed"] else ""))
    if s.gpu_ms:
        print("  GPU ms      " + ", ".join(f"{k} {v:.2f}" for k, v in s.gpu_ms.items())
              + " (first frame: includes shader compilation)")
    if s.overflow:
        print(f"  warning     the queue or visible list overflowed (flags {s.overflow})")
    if sh is not None and sh["overflow"]:
        print(f"  warning     the shadow views' queue or visible list overflowed (flags "
              f"{sh['overflow']}): some shadows may be missing")


def cmd_bench(args: argparse.Namespace) -> int:
    """The suite (default) or a custom run (--scene / --instances / --pool-mb)."""
    from renderer.bench import suite as bench_suite
    from renderer.bench.custom import main_args
    from renderer.options import TRAVERSALS

    why = ((args.file is not None and _input_error(args.file))
           or (args.json is not None and _output_error(args.json, "--json", ".json"))
           or (args.compare is not None and _input_error(args.compare))
           or (args.plots is not None and _folder_error(args.plots, "--plots")))
    if why:
        return _error(why)
    if args.compare is not None:
        try:  # an earlier report of the right shape, before anything runs or is built
            bench_suite.read_report(args.compare, "--compare")
        except ValueError as e:
            return _error(str(e))
    try:
        if args.scene or args.instances is not None or args.pool_mb is not None:
            if args.file is None:
                raise ValueError("a custom run (--scene, --instances, --pool-mb) needs a .tess "
                                 "file")
            args.scene = args.scene or "orbit"
            args.instances = args.instances or 256
            args.frames = args.frames or 16
            return main_args(args)
        if args.scenario and "quality" in args.scenario:
            from renderer.bench import quality_suite

            known = quality_suite.models()
            bad = [m for m in args.models or [] if m not in known]
            if bad:
                raise ValueError(f"--models {bad[0]}: no such quality model (one of "
                                 f"{', '.join(known)})")
            qargv = ["--only", *args.models] if args.models else []
            qargv += ["--json", args.json] if args.json else []
            status = quality_suite.main(qargv)
            args.scenario = [s for s in args.scenario if s != "quality"]
            if status or not args.scenario:
                return status
            args.json = None if args.json is None else args.json.replace(".json", "-suite.json")
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
    import numpy as np

    from preprocess.mesh import MeshError

    why = args.screenshot is not None and _output_error(args.screenshot, "--screenshot", ".png")
    if why:
        return _error(why)
    if args.eye is not None and _same_point(args.eye, np.zeros(3) if args.target is None
                                            else args.target):
        return _error("--eye and --target are the same point (--target is the origin unless "
                      "given)")

    try:
        from renderer.apps.viewer import Viewer, ViewerOptions
    except ImportError as e:
        print(f"tessera: error: the viewer needs the 'viewer' extra (pip install tessera[viewer]):"
              f" {e}", file=sys.stderr)
        return 2
    from renderer.camera import Camera
    from renderer.options import TRAVERSALS, RenderOptions

    source = args.file
    why = _up_error(source, args.up)
    if why:
        return _error(why)
    if source is not None:  # what can be checked before a window opens
        why = _input_error(source)
        if why:
            return _error(why)
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
                             panel=not args.no_panel, up=args.up)
        viewer = Viewer(source, opts, RenderOptions(tau=args.tau,
                                                    persistent=TRAVERSALS[args.traversal],
                                                    fallback32=args.fallback32,
                                                    occlusion=not args.no_occlusion,
                                                    aggregates=not args.no_aggregates,
                                                    **_stream_options(args)))
        viewer.run()
    except (*_runtime_errors(), MeshError, ValueError) as e:
        print(f"tessera: error: {e}", file=sys.stderr)
        return 2
    except RuntimeError as e:  # glfw: no display
        print(f"tessera: error: cannot open a window: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # Viewer.run() has cancelled any preprocessing
        return EXIT_SIGINT
    if args.frames and viewer.app.error is not None:  # already printed by the viewer
        return 2
    if args.screenshot:
        print(f"wrote {args.screenshot} after {viewer.app.frames_drawn} frames")
    return 0


def _add_render_options(p: argparse.ArgumentParser, *, view: bool = False,
                        render: bool = False, bench: bool = False) -> None:
    from preprocess.config import UP_AXES
    from renderer.limits import MIN_SHADOW_PAGES, SHADOW_PAGE_BYTES
    from renderer.options import DEFAULT_SUN, TEXTURE_SAMPLINGS, TRAVERSALS

    # the least shadow pool: the coarsest level's pages (renderer.limits.MIN_SHADOW_PAGES)
    shadow_pool = _real(MIN_SHADOW_PAGES * SHADOW_PAGE_BYTES / 2**20, lo_open=False, unit=" MiB")
    what = "a .tess file"
    if view or render:
        what += ", a mesh file (preprocessed once, cached beside it), a scene .json"
    if view:
        what += ", or nothing (the built-in rock)"
    if bench:
        what += " (default: the built-in rock)"
    p.add_argument("file", nargs="?" if view or bench else None, help=what)
    if view or render:
        p.add_argument("--up", choices=UP_AXES,
                       help="the up axis of a mesh file preprocessed here (as preprocess --up; "
                            "default: y, or what its cached .tess was built with)")
    p.add_argument("--size", type=_size, default=(512, 512), help="image size WxH (512x512)")
    p.add_argument("--instances", type=whole(1), default=1,
                   help="instances on a square grid (default: 1; how many the adapter holds is "
                        "checked before they are built)")
    p.add_argument("--tau", type=_POSITIVE, default=1.0,
                   help="LOD threshold: largest projected error in pixels, > 0 (default: 1"
                        + ("; with --ssaa N, N in the large frame's pixels, the cut of one "
                           "output pixel; a --tau given is in the large frame's pixels)"
                           if render else ")"))
    p.add_argument("--traversal", choices=sorted(TRAVERSALS), default="auto",
                   help="BVH traversal: persistent workgroups, one dispatch per level, or auto "
                        "(persistent on GPUs, per level on CPU adapters; default)")
    p.add_argument("--fallback32", action="store_true",
                   help="force the 32-bit visibility path (for adapters without 64-bit atomics)")
    p.add_argument("--no-occlusion", action="store_true",
                   help="no two-pass HZB occlusion culling (on by default)")
    p.add_argument("--no-aggregates", action="store_true",
                   help="draw every instance itself: no aggregate proxies (a far group of "
                        "instances, or one far instance, as a dithered box; on by default)")
    p.add_argument("--pool-mb", type=_POSITIVE,
                   help="stream the pages through a GPU page pool of this size in MB (default: "
                        "stream only when the pages do not fit what the adapter binds, 1 GiB at "
                        "most)" + ("; bench also reports uploads, convergence and the cost "
                                   "against fully resident" if bench else ""))
    p.add_argument("--upload-mb", type=_POSITIVE, default=16.0,
                   help="streaming: MB of pages uploaded per frame at most (16)")
    p.add_argument("--texture-pool-mb", type=_POSITIVE,
                   help="stream the textures' tiles through a GPU pool of this size in MB (their "
                        "tables and coarsest mips included; default: every tile while the "
                        "textures fit what the adapter binds, else as many as fit, 1 GiB at "
                        "most); a tile not resident is drawn from a coarser mip")
    p.add_argument("--texture-sampling", choices=TEXTURE_SAMPLINGS, default="auto",
                   help="where the texture tiles are read from: 'hardware' (pool textures, "
                        "block-compressed ones decoded by the texture unit: adapters with "
                        "texture-compression-bc), 'shader' (a storage buffer, decoded by the "
                        "shader: every adapter), 'auto' (hardware on GPUs that have it; the "
                        "shader on CPU adapters, where it is faster)")
    p.add_argument("--sun", type=_sun, default=DEFAULT_SUN, metavar="AZIMUTH,ELEVATION",
                   help="the sun, in degrees: azimuth 0 towards +Z (behind the iso and front "
                        "views), 90 towards +X; elevation above the horizon, 0 < e <= 90 "
                        f"(default: {DEFAULT_SUN[0]:g},{DEFAULT_SUN[1]:g}); 'none': no sun (a "
                        "scene's spot and point lights and the ambient light it)")
    p.add_argument("--no-shadows", action="store_true",
                   help="no shadows (the sun and the lights still light the scene)")
    p.add_argument("--shadow-pool-mb", type=shadow_pool, default=64.0,
                   help="the shadow map's physical page pool in MB, 64 KiB a page (64); too "
                        "small a pool shades from coarser levels, never with holes")


def main(argv: list[str] | None = None, *, ending: bool = False) -> int:
    """The command; returns its exit status. SIGINT and SIGTERM at any moment of `preprocess`,
    `info` and `render`, parsing and imports included: one line, 130 or 143, nothing written
    (`renderer.apps.signals`). ending: the process exits right after (`command`): a signal once
    the work is done ends it at once with that status (`end_quietly`), not with a traceback from
    the interpreter's exit."""
    one_line_warnings("tessera")
    args = None
    with StopSignals("tessera") as stop:

        def work() -> int | None:
            nonlocal args
            args = _parser().parse_args(argv)
            return None if args.command in ("view", "bench") else _run(args, stop)

        status = stoppable(stop, work)
        if status is not None:
            if ending:
                stop.end_with(status)
            return status
    # view and bench: frame after frame with no point where a signal held back could be raised,
    # so Python's own Ctrl-C (a KeyboardInterrupt wherever it lands), and SIGTERM the same way
    # (it killed them, -15 and no line); what they write is written whole (`write_atomically`)
    with terminate_as_interrupt() as terminated:
        try:
            status = args.func(args)
        except KeyboardInterrupt:  # one line, 128 + the signal
            quiet_destructors()  # what the interrupt left half built says nothing after it
            status = (stopped("tessera: terminated", EXIT_SIGTERM) if terminated
                      else stopped("tessera: interrupted", EXIT_SIGINT))
    return end_quietly(status) if ending else status


def _run(args: argparse.Namespace, stop: StopSignals) -> int:
    """A command that takes its signals from `stop`."""
    if args.func is run_build:
        return run_build(args, stop=stop)
    if args.func in (cmd_render, cmd_dataset):
        return args.func(args, stop)
    return args.func(args)


def _parser() -> argparse.ArgumentParser:
    """`tessera` and its commands: preprocess, info, render, dataset, view, bench."""
    parser = _Parser(prog="tessera", description="Tessera: virtualized geometry for Python "
                     "(cluster LOD, GPU culling and rasterization).")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    p = sub.add_parser("preprocess", help="build a .tess asset from a mesh file")
    add_build_options(p)
    p.set_defaults(func=run_build)
    p = sub.add_parser("info", help="print the statistics of a .tess file")
    p.add_argument("file", help="a .tess file")
    p.add_argument("--verify", action="store_true",
                   help="also check every page: checksums, streams, positions decoded")
    p.set_defaults(func=cmd_info)
    _add_render_command(sub)
    _add_dataset_command(sub)
    _add_view_command(sub)
    _add_bench_command(sub)
    return parser


def cmd_dataset(args: argparse.Namespace, stop: StopSignals) -> int:
    """Render a scene from many cameras into a dataset folder (renderer/apps/dataset.py): a PNG
    and the arrays asked for a frame, the cameras' OpenCV and NeRF files. What needs no GPU is
    checked first; frames are written whole as they come (`Renderer.render_many`); a failure
    or a signal leaves the frames done, whole, and no camera files."""
    from renderer.apps.dataset import OUTPUTS

    why = _input_error(args.file) or _up_error(args.file, args.up)
    outputs = tuple(x for x in (args.outputs or "").split(",") if x)
    bad = [x for x in outputs if x not in OUTPUTS]
    if bad:
        why = why or f"--outputs {bad[0]}: one of {', '.join(OUTPUTS)}"
    out = Path(args.out_dir)
    if out.exists() and not out.is_dir():
        why = why or f"{out}: not a folder"
    if why:
        return _error(why)
    return _with_job(args, stop, lambda job: _dataset(args, job, stop, outputs))


def _dataset(args: argparse.Namespace, job, stop: StopSignals, outputs: tuple[str, ...]) -> int:
    import json
    import time

    from preprocess.tess.atomic import write_atomically
    from renderer.apps.dataset import camera_set, cameras_json, transforms_json, write_frame
    from renderer.results import INCOMPLETE

    out = Path(args.out_dir)
    try:
        opened = _open_scene(args, job, stop)
        if isinstance(opened, str):
            return _error(opened)
        r, _, center, radius = opened
        cams = camera_set(args.cameras, center, radius, args.fov)
        for i, cam in enumerate(cams):
            why = _precision_error(cam, args.size[1], center, radius)
            if why:
                return _error(f"camera {i}: {why}")
        for sub in ("images", *(["arrays"] if outputs else [])):
            (out / sub).mkdir(parents=True, exist_ok=True)
        stop.check()
        names = [f"{i:05d}" for i in range(len(cams))]
        t0 = time.perf_counter()
        w, h = args.size
        if args.ray is not None:  # chunks of cameras as Ray tasks, a renderer each
            from renderer.apps.dataset import on_ray

            scene = (args.file, args.up, r.options, tuple(args.size), args.instances,
                     args.ground)
            seconds = on_ray(args.ray, args.jobs, scene, cams, names, out, outputs, args.tau,
                             check=stop.check)
        else:
            for i, res in enumerate(r.render_many(cams, tau=args.tau)):
                if res.stats.overflow & INCOMPLETE:
                    return _error(f"frame {i}: the culling traversal stopped with work left "
                                  f"(this adapter cut a shader loop short)")
                write_frame(out, names[i], res, outputs)
                stop.check()
            seconds = time.perf_counter() - t0
        files = [f"images/{n}.png" for n in names]
        for name, doc in (("cameras.json", cameras_json(cams, w, h, files)),
                          ("transforms.json", transforms_json(cams, w, h, files))):
            text = json.dumps(doc, indent=1).encode()
            write_atomically(out / name, lambda f, text=text: f.write(text))
    except (*_runtime_errors(), ValueError) as e:  # BatchError: --ray's
        return _error(str(e))
    except OSError as e:
        return _error(f"{e.filename or out}: cannot write: {e.strerror or e}")
    print(f"wrote {len(cams)} frames ({w}x{h}{', ' + ', '.join(outputs) if outputs else ''}) "
          f"to {out} in {seconds:.1f} s ({len(cams) / seconds:.2f} frames a second) on "
          f"{r.ctx.description}; cameras in cameras.json (OpenCV) and transforms.json (NeRF)")
    return 0


def _add_dataset_command(sub) -> None:
    p = sub.add_parser("dataset", help="render a scene from many cameras: a PNG and the arrays "
                       "asked for a frame, the cameras' OpenCV and NeRF files")
    _add_render_options(p, render=True)
    p.add_argument("-O", "--out-dir", required=True, metavar="DIR",
                   help="the dataset's folder (images/, arrays/, cameras.json, "
                        "transforms.json; made if missing)")
    p.add_argument("--cameras", default="orbit:100",
                   help="orbit:N (around the scene, 25 degrees up), random:N[:SEED] (directions "
                        "over the sphere, distances varied), or a JSON file: a list of {eye, "
                        "target, up?, fov?} (default: orbit:100)")
    p.add_argument("--outputs", default="",
                   help="arrays a frame besides the PNG, comma-separated: depth (distance "
                        "along the view axis), normal (world), ids (instance, material), "
                        "velocity (pixels since the frame before)")
    p.add_argument("--ray", metavar="ADDRESS",
                   help="render on a Ray cluster (the 'ray' extra): host:port, 'auto' or "
                        "'local' (one of --jobs CPUs started here); chunks of consecutive "
                        "cameras as tasks of one GPU (or CPU), DIR on storage every node sees")
    p.add_argument("--jobs", type=whole(0), default=0,
                   help="--ray local: the cluster's CPUs (0: one a core)")
    p.add_argument("--ground", action="store_true",
                   help="put the scene on a ground plane (as tessera render --ground)")
    _add_fov(p)
    p.set_defaults(func=cmd_dataset)


def _add_render_command(sub) -> None:
    from renderer.options import DEBUG_VIEWS

    p = sub.add_parser("render", help="render a .tess, mesh or scene .json file to a PNG and "
                       "print the frame's stats")
    _add_render_options(p, render=True)
    p.add_argument("-o", "--output", default="render.png", help="PNG to write (render.png)")
    p.add_argument("--view", choices=sorted(VIEWS), default="iso",
                   help="camera direction, looking at the scene's centre (default: iso)")
    p.add_argument("--eye", type=_vec3, help="camera position x,y,z (overrides --view)")
    p.add_argument("--target", type=_vec3, help="point looked at x,y,z (default: scene centre)")
    _add_fov(p)
    p.add_argument("--fill", type=_POSITIVE, default=1.0,
                   help="fraction of the view height the scene's bounding sphere fills (1; at "
                        "most where the camera reaches the sphere: 2 at --fov 60)")
    p.add_argument("--debug", choices=DEBUG_VIEWS, default="lit",
                   help="color by: lit shading, cluster, triangle, group, LOD level, "
                        "raster (SW blue / HW orange), instance")
    p.add_argument("--arrays", help="also save every image (depth, ids, ...) to this .npz")
    p.add_argument("--ground", action="store_true",
                   help="put the scene on a ground plane (under its lowest point, 8 radii of "
                        "its bounding sphere a side) to catch its shadows")
    _add_antialias_options(p)
    p.set_defaults(func=cmd_render, tau=None)


def _add_antialias_options(p: argparse.ArgumentParser) -> None:
    """`render`'s anti-aliasing (renderer/antialias.py)."""
    from renderer.antialias import MAX_ACCUMULATE

    p.add_argument("--ssaa", type=whole(1), default=1, metavar="N",
                   help="supersample: draw N x N samples a pixel (the frame at N times the width "
                        "and height: the adapter must hold it) and average them in linear light "
                        "(1: off). The PNG, --debug views included, is the average; --arrays' "
                        "depth, normal, ids and G-buffer are the sample nearest each pixel's "
                        "centre")
    p.add_argument("--taa", type=whole(0, MAX_ACCUMULATE), default=0, metavar="K",
                   help="temporal accumulation: K frames from the still camera, each moved by a "
                        "sub-pixel jitter (Halton 2, 3), averaged on the GPU (0: off; 16 comes "
                        "near --ssaa 4 at a sixteenth of its memory). --arrays' depth, normal, "
                        "ids and G-buffer are the last frame's (jittered)")


def _add_view_command(sub) -> None:
    p = sub.add_parser("view", help="the interactive viewer (a .tess, a mesh file, a scene "
                       ".json, or nothing for the built-in rock)")
    _add_render_options(p, view=True)
    p.set_defaults(size=(1280, 800))
    p.add_argument("--frames", type=whole(0), default=0,
                   help="close after N frames (0: when the window closes)")
    p.add_argument("--screenshot", help="save the last frame, panel included, to this PNG")
    p.add_argument("--eye", type=_vec3, help="start camera position x,y,z")
    p.add_argument("--target", type=_vec3, help="start point looked at x,y,z (default: origin)")
    _add_fov(p)
    p.add_argument("--near", type=_POSITIVE, default=0.01,
                   help="near plane distance (with --eye; > 0)")
    p.add_argument("--no-vsync", action="store_true", help="draw as fast as possible")
    p.add_argument("--no-panel", action="store_true", help="hide the imgui panel")
    p.set_defaults(func=cmd_view)


def _add_bench_command(sub) -> None:
    p = sub.add_parser("bench", help="the benchmark suite (closeup, scaling, occluded, "
                       "streaming, textured) with brute-force and pygfx baselines; or one custom "
                       "run")
    _add_render_options(p, bench=True)
    p.set_defaults(instances=None, file=None)
    p.add_argument("--scenario", action="append", choices=["closeup", "scaling", "occluded",
                                                           "streaming", "textured", "shadows",
                                                           "instances", "quality"],
                   help="suite: run this scenario (repeat; default all but instances, 1 K to "
                        "16 M instances on a grid and on the terrain, and quality, which builds "
                        "its own models: what the LOD cut costs the picture)")
    p.add_argument("--models", nargs="+", metavar="NAME",
                   help="quality: these models (default all; `python tools/bench_quality.py "
                        "--help` lists them and every option)")
    p.add_argument("--quick", action="store_true",
                   help="suite: a one-minute version (grids up to 256, 4 frames a run)")
    p.add_argument("--frames", type=whole(1), help="frames on each camera path (suite 12, "
                                                    "quick 4; custom run 16)")
    p.add_argument("--no-brute", action="store_true", help="skip the brute-force baseline")
    p.add_argument("--no-pygfx", action="store_true", help="suite: skip the pygfx baseline")
    p.add_argument("--baseline-limit", type=_POSITIVE,
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
    p.add_argument("--brute-frames", type=whole(1), default=3,
                   help="custom run: brute-force frames measured (3; they are slow)")
    p.set_defaults(func=cmd_bench)


def command() -> int:
    """The `tessera` program (its console script, `python -m`)."""
    as_a_program()
    return main(ending=True)


if __name__ == "__main__":
    sys.exit(command())
