"""`preprocess mesh.obj [-o out.tess]`: build a `.tess` cluster-LOD asset from a mesh file.

What the user can cause ends in one line on stderr and nothing left behind, never a traceback:
a missing or broken mesh, bad options, an output that cannot be written (checked before the build
where it can be: a folder, a missing folder, no permission; a full disk during the write), a
failed --verify: `preprocess: error: ...`, exit status 2. SIGINT (Ctrl-C) and SIGTERM at any
moment: `preprocess: interrupted; nothing written`, 130, or `... terminated ...`, 143; from the
moment the output is complete (a file's rename; a scene's, once every `.tess` is complete) the
status is 0 whatever comes, the interpreter's exit included (`renderer.apps.signals`: why the
handler raises only at safe points, and checks at every progress report of the build).
"""

from __future__ import annotations

import argparse
import signal
import sys
import time
from typing import TYPE_CHECKING, NoReturn

from assets import BUILTIN
from renderer.apps.signals import (
    EXIT_SIGINT,
    EXIT_SIGTERM,
    StopSignals,
    run_stoppable,
    stoppable,
    stopped,
)

# triangle ids are 32-bit: the most a --builtin asset may ask for
MAX_TRIANGLES = 2**31 - 1

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

    from tqdm import tqdm

    from preprocess.config import BuildConfig
    from preprocess.mesh import Mesh
    from preprocess.scene_import import SceneMeshes

EXIT_ERROR = 2  # what the user can mend: a bad input, option or output

COMPILE_NOTE = "preprocess: compiling the numba kernels once"  # then "(about 45 s on 2 cores)..."


class OneLineParser(argparse.ArgumentParser):
    """argparse, its errors on one line (no usage block above them)."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_ERROR, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


class StageBars:
    """One tqdm bar per stage, fed by the builder's (stage, done, total) reports; a scene's
    ("meshes", k, n) reports keep one bar of meshes and start the stage bars again for each."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self.bars: dict[str, tqdm] = {}

    def __call__(self, stage: str, done: int, total: int) -> None:
        if not self.enabled:
            return
        if stage == "meshes":
            for name in [n for n in self.bars if n != "meshes"]:
                self.bars.pop(name).close()
        bar = self.bars.get(stage)
        if bar is None:
            from tqdm import tqdm

            unit = "tri" if total > 1 else "step"
            bar = tqdm(total=total, desc=f"{stage:>9}", unit=unit, unit_scale=True,
                       leave=True, file=sys.stderr, dynamic_ncols=True)
            self.bars[stage] = bar
        bar.update(done - bar.n)
        if done >= total:
            bar.close()

    def close(self) -> None:
        for bar in self.bars.values():
            bar.close()


def whole(lo: int, hi: int | None = None):
    """An argparse type: a whole number in lo..hi."""

    def parse(text: str) -> int:
        try:
            v = int(text)
        except ValueError:
            v = None
        if v is None or v < lo or (hi is not None and v > hi):
            what = f">= {lo}" if hi is None else f"in {lo}..{hi}"
            raise argparse.ArgumentTypeError(f"must be a whole number {what}, not {text!r}")
        return v

    return parse


def add_build_options(p: argparse.ArgumentParser) -> None:
    """The options shared by `preprocess` and `tessera preprocess`."""
    from preprocess.config import (
        SHADING_WEIGHT,
        TEXTURE_COMPRESSIONS,
        TEXTURED_SHADING_WEIGHT,
        UP_AXES,
        BuildConfig,
    )
    from preprocess.tess.limits import PAGE_SIZE

    d = BuildConfig()
    p.add_argument("mesh", nargs="*", metavar="INPUT",
                   help="input mesh: .obj .ply .stl .off .gltf .glb. Several inputs, a folder "
                        "(its mesh files, recursively), a glob pattern or @LIST (a file naming "
                        "inputs, a line each) build a batch: see -O")
    p.add_argument("-o", "--output", help="output .tess (default: beside the input); a glTF "
                   "of several meshes or nodes: a scene file NAME.json and a .tess per mesh "
                   "beside it (the default), or NAME.tess merged")
    p.add_argument("--builtin", choices=(*BUILTIN, "forest"),
                   help="build a built-in procedural asset instead of reading a file; forest: "
                        "a scene file (-o NAME.json) of --instances rocks and trees on the "
                        "terrain, their transforms in .npy files beside it, the assets cached")
    p.add_argument("--instances", type=whole(1), default=None,
                   help="--builtin forest: instances in the scene (default: 1,000,000)")
    p.add_argument("--seed", type=whole(0), default=7,
                   help="--builtin forest: the seed of its placements (default: 7)")
    p.add_argument("--triangles", type=whole(1, MAX_TRIANGLES), default=1_000_000,
                   help="size of a --builtin asset in triangles (default: 1,000,000)")
    p.add_argument("--max-triangles", type=int, default=d.max_triangles,
                   help=f"triangles per cluster, at most 128 (default: {d.max_triangles})")
    p.add_argument("--max-vertices", type=int, default=d.max_vertices,
                   help=f"vertices per cluster, at most 255 (default: {d.max_vertices})")
    p.add_argument("--group-size", type=int, default=d.group_size,
                   help=f"clusters per group (default: {d.group_size})")
    p.add_argument("--page-kib", type=int, default=PAGE_SIZE // 1024,
                   help=f"streaming page size in KiB (default: {PAGE_SIZE // 1024})")
    p.add_argument("--crease-angle", type=float, default=d.crease_angle, metavar="DEG",
                   help="where the file has no normals: edges sharper than this stay hard "
                        f"(0..180; 180 smooths everything; default: {d.crease_angle:g})")
    p.add_argument("--shading-weight", type=float, default=d.shading_weight, metavar="W",
                   help="weight of the shading term in LOD errors: 0 counts geometry only, more "
                        "keeps finer levels where normals change (0..100; default: "
                        f"{SHADING_WEIGHT:g}, or {TEXTURED_SHADING_WEIGHT:g} for a mesh with "
                        "textures or vertex colours)")
    p.add_argument("--normal-cost", type=float, default=d.normal_cost, metavar="W",
                   help="weight of the normals and uvs in the cost of a collapse, times the "
                        "shading weight: collapses that bend the shading or drag the texture "
                        "wait for those that do not "
                        "(0..100; default: 0, geometry only; at 0.5 the make demo scene draws "
                        "39%% fewer triangles at tau 1 for 0.3 dB of PSNR; the build takes "
                        "~10%% longer)")
    p.add_argument("--texture", metavar="IMAGE",
                   help="an image used as the base-colour texture of every material without one "
                        "(an OBJ with uvs that names no MTL); needs uvs")
    p.add_argument("--max-texture-size", type=int, default=d.max_texture_size, metavar="PX",
                   help="textures larger than this many texels a side keep their mips from the "
                        "first that fits (0: no limit; default: "
                        f"{d.max_texture_size}); a 2048 texture with mips is 2.7 to 5.3 MiB "
                        "block-compressed, 21 MiB uncompressed")
    p.add_argument("--texture-compression", choices=TEXTURE_COMPRESSIONS,
                   default=d.texture_compression,
                   help="bc: textures block-compressed in the format their use asks for (BC1 "
                        "colour, BC3 colour with alpha, BC5 normal maps and metallic-roughness, "
                        "BC4 occlusion: 4 or 8 bits a texel; default); none: RGBA8, 32 bits a "
                        "texel, no encoding loss")
    p.add_argument("--up", choices=UP_AXES, default=d.up,
                   help="the mesh file's up axis: z turns a Z-up mesh (many scanners and CAD "
                        "tools) Y-up, Tessera's up. glTF is Y-up by its specification; --up z "
                        "on a glTF warns, then rotates as asked, for exporters that wrote Z-up "
                        f"anyway (default: {d.up})")
    p.add_argument("--merge", action="store_true",
                   help="a glTF of several meshes or nodes, an OBJ of several objects: one .tess "
                        "of everything placed, instead of a scene file and a .tess per distinct "
                        "mesh")
    p.add_argument("--threads", type=int, default=0,
                   help="worker threads, 0 = one per core (default: 0)")
    p.add_argument("--verify", action="store_true",
                   help="check the DAG invariants (limits, errors, crack-free cuts) before "
                        "writing; a failure writes nothing")
    p.add_argument("--memory", type=float, metavar="GB", default=None,
                   help="the memory the build may use: a mesh of a million triangles or more "
                        "whose whole build needs more by the measured bytes a triangle is "
                        "built in chunks, and one that needs more even so is refused in one "
                        "line once loaded, rather than killed by the system minutes later "
                        "(default: what the machine has available)")
    p.add_argument("--chunks", type=whole(1), default=None, metavar="N",
                   help="build the mesh in N spatial chunks with locked borders, then the "
                        "levels above them (1: whole; default: whole where it fits --memory, "
                        "else chunks of 4M triangles); with --ray, the chunks are Ray tasks "
                        "of --threads CPUs each (docs/ARCHITECTURE.md, the chunked build)")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bars or summary")
    b = p.add_argument_group("batch", "many inputs in one command: their outputs in one "
                             "folder, a manifest line each (JSON: input, output, status built | "
                             "skipped | failed, triangles, levels, seconds, error, warnings); "
                             "an output up to date with its input and options is skipped; one "
                             "failure does not stop the rest (exit 2 at the end)")
    b.add_argument("-O", "--out-dir", metavar="DIR",
                   help="the batch's output folder (made if missing; a folder's files keep "
                        "their places under it; default: beside each input)")
    b.add_argument("--manifest", metavar="FILE",
                   help="the manifest, appended to (default: DIR/manifest.jsonl, or "
                        "./manifest.jsonl without -O)")
    b.add_argument("--jobs", type=int, default=0,
                   help="builds at once, each in a worker process (default: 0, one a core)")
    b.add_argument("--force", action="store_true",
                   help="build every input, up to date or not")
    b.add_argument("--ray", metavar="ADDRESS",
                   help="build on a Ray cluster (the 'ray' extra): its address (host:port, "
                        "ray://host:10001), 'auto' (the cluster this machine belongs to) or "
                        "'local' (one of --jobs CPUs started here); the inputs and the output "
                        "folder on storage every node sees (docs/BATCH.md)")


def run_build(args: argparse.Namespace, *, stop: StopSignals | None = None,
              ending: bool = False) -> int:
    """Build from parsed options; returns the exit status. SIGINT and SIGTERM end it with one
    line and nothing written (see the module docstring); `stop`: the caller's, already active;
    else its own, and `ending` as `main`'s."""
    work = _build
    if isinstance(args.mesh, list):  # the command line's inputs: one build, or a batch
        if _is_batch(args):
            work = _batch
        else:
            args.mesh = args.mesh[0] if args.mesh else None
    if stop is None:
        return run_stoppable("preprocess", lambda own: work(args, own), ending)
    return stoppable(stop, lambda: work(args, stop))


def _is_batch(args: argparse.Namespace) -> bool:
    """Several inputs, a folder, a pattern, a list (`names_a_batch`), or a batch's option (an
    output folder, a manifest, a Ray cluster): a batch."""
    from preprocess.batch import names_a_batch

    return (args.out_dir is not None or args.manifest is not None
            or (args.ray is not None and args.chunks is None) or names_a_batch(args.mesh))


def _batch(args: argparse.Namespace, stop: StopSignals) -> int:
    """Many inputs (`preprocess.batch`): the tasks, the output folder and the manifest checked
    first, then the builds in worker processes, a line each in the manifest; a bar and each
    failure's line unless -q; exit 2 when any failed."""
    from pathlib import Path

    from preprocess.batch import BatchError, build_many, check_ray, expand_inputs
    from preprocess.tess.atomic import check_writable

    for flag, given in (("--builtin", args.builtin), ("-o", args.output),
                        ("--texture", args.texture), ("--merge", args.merge),
                        ("--instances", args.instances is not None),
                        ("--memory", args.memory is not None),
                        ("--chunks", args.chunks is not None)):
        if given:
            return fail(f"{flag} applies to one input, not to a batch")
    if args.jobs < 0:
        return fail(f"--jobs must be 0 or more, not {args.jobs}")
    args.mesh, names = None, args.mesh
    args.builtin = None
    try:
        config = _config(args, batch=True)
        out_dir = Path(args.out_dir) if args.out_dir else None
        tasks = expand_inputs(names, out_dir)
        if args.ray is not None:
            check_ray(args.ray)
        if out_dir is not None:
            if out_dir.exists() and not out_dir.is_dir():
                raise _RefusedError(f"{out_dir}: not a folder")
            try:
                out_dir.mkdir(parents=True, exist_ok=True)
            except OSError as e:
                raise _RefusedError(f"{out_dir}: cannot make the output folder: "
                                    f"{e.strerror or e}") from None
        manifest = Path(args.manifest) if args.manifest else (out_dir or Path(".")) / \
            "manifest.jsonl"
        _check_output(manifest)
        for t in tasks:
            if out_dir is None and t.problem is None:
                check_writable(t.output)
    except (BatchError, _RefusedError) as e:
        return fail(str(e))
    except OSError as e:
        return fail(f"{e.filename}: cannot write: {e.strerror or e}")
    stop.check()
    bar = None
    if not args.quiet:
        from tqdm import tqdm

        bar = tqdm(total=len(tasks), unit="mesh", desc="preprocess", leave=False,
                   file=sys.stderr)

    finished = [0]

    def report(line: dict) -> None:
        finished[0] += 1
        if line["status"] == "failed":
            name = Path(line["input"]).name
            what = line["error"] if name in line["error"] else f"{line['input']}: {line['error']}"
            text = f"preprocess: error: {what}"
            (bar.write(text, file=sys.stderr) if bar is not None else
             print(text, file=sys.stderr))
        if bar is not None:
            bar.update(1)

    t0 = time.perf_counter()
    try:
        lines = build_many(tasks, config, manifest, jobs=args.jobs, verify=args.verify,
                           force=args.force, report=report, check=stop.check,
                           ray_address=args.ray)
    except BatchError as e:  # --ray: no Ray, or its cluster unreachable
        if bar is not None:
            bar.close()
        return fail(str(e))
    except KeyboardInterrupt:  # the outputs done stay (whole), the rest are not built
        stop.hold()
        if bar is not None:
            bar.close()
        word, status = (("terminated", EXIT_SIGTERM) if stop.signum == signal.SIGTERM
                        else ("interrupted", EXIT_SIGINT))
        return stopped(f"preprocess: {word}; {finished[0]} of {len(tasks)} inputs done, each "
                       f"output whole, the rest not built (manifest {manifest})", status)
    finally:
        if bar is not None:
            bar.close()
    counts = {k: sum(1 for x in lines if x["status"] == k) for k in ("built", "skipped",
                                                                      "failed")}
    if not args.quiet:
        print(f"{len(lines)} inputs in {time.perf_counter() - t0:.1f} s: {counts['built']} "
              f"built, {counts['skipped']} up to date, {counts['failed']} failed; manifest "
              f"{manifest}")
    if counts["failed"]:
        return fail(f"{counts['failed']} of {len(lines)} inputs failed (their lines in "
                    f"{manifest})")
    return 0


class _RefusedError(Exception):
    """What `_build` refuses before it builds anything: one line (`fail`)."""


def _config(args: argparse.Namespace, batch: bool = False) -> BuildConfig:
    """The build configuration the options ask for, after the checks of what goes with what
    (`batch`: for many inputs, named elsewhere)."""
    from preprocess.config import BuildConfig

    if not batch and (args.mesh is None) == (args.builtin is None):
        raise _RefusedError("give a mesh file or --builtin NAME (one of them)")
    if args.texture and args.builtin:
        raise _RefusedError("--texture applies to a mesh file, not to --builtin")
    if args.builtin and args.up != "y":
        raise _RefusedError(f"--up {args.up} applies to a mesh file; the built-in assets are Y-up")
    try:
        return BuildConfig(max_triangles=args.max_triangles, max_vertices=args.max_vertices,
                           group_size=args.group_size, page_size=args.page_kib * 1024,
                           threads=args.threads,
                           crease_angle=args.crease_angle,
                           shading_weight=args.shading_weight,
                           normal_cost=args.normal_cost,
                           max_texture_size=args.max_texture_size,
                           texture_compression=args.texture_compression, up=args.up)
    except ValueError as e:
        raise _RefusedError(str(e)) from None


def _source(args: argparse.Namespace) -> tuple[SceneMeshes | None, str | Mesh, Path]:
    """(the scene, or None; the source: a built-in's name or a mesh file; the output file): a
    glTF or OBJ file that holds a scene is built as one (a `.tess` per mesh and a scene file)
    unless --merge or `-o NAME.tess` asks for one merged `.tess`."""
    from pathlib import Path

    from preprocess.mesh import MeshError

    scene = None
    if (not args.builtin and not args.merge
            and Path(args.mesh).suffix.lower() in (".gltf", ".glb", ".obj")):
        from preprocess.scene_import import read_scene

        try:
            scene = read_scene(args.mesh, crease_angle=args.crease_angle)
        except MeshError as e:
            raise _RefusedError(str(e)) from None
    if args.builtin:
        source: str | Mesh = args.builtin
        output = Path(args.output or f"{args.builtin}.tess")
    elif scene is not None and args.output and Path(args.output).suffix == ".tess":
        # one .tess asked for by name: the scene is merged, and the line says so
        import warnings

        from preprocess.mesh import MeshWarning

        warnings.warn(f"{Path(args.mesh).name}: a scene of {len(scene.meshes)} meshes in "
                      f"{len(scene.instances)} nodes, merged into one .tess as -o asks "
                      f"(-o NAME.json keeps it a scene: a .tess per mesh)", MeshWarning,
                      stacklevel=1)
        scene = None
        source = args.mesh
        output = Path(args.output)
    elif scene is not None:
        source = args.mesh
        output = Path(args.output) if args.output else Path(args.mesh).with_suffix(".json")
        if output.suffix != ".json":
            raise _RefusedError(f"{output}: a scene's output is a scene file, NAME.json (and a "
                                f".tess per mesh beside it), or NAME.tess for one merged .tess")
        if args.texture:
            raise _RefusedError("--texture applies to one mesh, not to a scene (--merge builds "
                                "one)")
    else:
        source = args.mesh
        output = Path(args.output) if args.output else Path(args.mesh).with_suffix(".tess")
    if output.suffix != ".tess" and scene is None:
        raise _RefusedError(f"{output}: the output file must end in .tess")
    return scene, source, output


def _check_output(output: Path) -> None:
    """Whether `output` can be written, before the build, not after it: a folder, no
    permission, a read-only file system."""
    from preprocess.tess.atomic import check_writable

    parent = output.parent
    if not parent.exists():
        raise _RefusedError(f"{parent}: output folder does not exist")
    if not parent.is_dir():
        raise _RefusedError(f"{parent}: not a folder")
    try:
        check_writable(output)
    except OSError as e:
        raise _RefusedError(f"{output}: cannot write: {e.strerror or e}") from None


def _note_compile(args: argparse.Namespace) -> None:
    """A line on stderr where the numba kernels this build needs compile first (3 s or more):
    even with -q, a silent 45 s looks like a hang."""
    from preprocess.build import (
        FILE_KERNEL_SECONDS,
        KERNEL_SECONDS,
        ROCK_KERNEL_SECONDS,
        compile_seconds,
    )

    modules = dict(KERNEL_SECONDS)
    if not args.builtin:  # a glTF's readers compile nothing (the note said "about 6 s" each time)
        from pathlib import Path

        modules.update(FILE_KERNEL_SECONDS.get(Path(args.mesh).suffix.lower(), {}))
    elif args.builtin in ("rock", "terrain"):
        modules.update(ROCK_KERNEL_SECONDS)
    ahead = compile_seconds(modules)
    if ahead >= 3:
        about = round(ahead / 5) * 5 if ahead >= 10 else round(ahead)
        print(f"{COMPILE_NOTE} (about {about} s on 2 cores); later runs start at once",
              file=sys.stderr)


def _build_forest(args: argparse.Namespace, stop: StopSignals) -> int:
    """`--builtin forest`: the forest's scene file and transforms (`assets.forest`), its assets
    built into the cache folder on the first run."""
    from pathlib import Path

    from assets.forest import FOREST_INSTANCES, write_forest

    output = Path(args.output or "forest-scene.json")
    try:
        if output.suffix != ".json":
            raise _RefusedError(f"{output}: the forest is a scene file, NAME.json")
        _check_output(output)
    except _RefusedError as e:
        return fail(str(e))
    count = args.instances or FOREST_INSTANCES
    stop.check()
    t0 = time.perf_counter()
    try:
        worlds = write_forest(output, count, seed=args.seed)
    except (OSError, ValueError) as e:
        return fail(str(e))
    if not args.quiet:
        kinds = ", ".join(f"{len(w):,} {name}s" for name, w in worlds.items())
        print(f"{output}: {kinds} on the terrain ({time.perf_counter() - t0:.1f} s); open it "
              f"with `tessera view {output}`")
    return 0


def _build_scene(args: argparse.Namespace, scene: SceneMeshes, output: Path,
                 config: BuildConfig, progress: Callable[[str, int, int], None]) -> None:
    """A scene: a `.tess` per mesh and the scene file (`preprocess.scene_import.build_scene`),
    and what was built said unless -q."""
    from preprocess.scene_import import build_scene, scene_summary
    from preprocess.up_axis import warn_against_spec

    warn_against_spec(args.mesh, args.up)
    results = build_scene(scene, output, config, progress=progress, verify=args.verify,
                          up=args.up)
    if not args.quiet:
        print(f"{output.name}: {scene_summary(scene)}")
        for r in results:
            print(r.summary())
        print(f"scene file {output}: open it with `tessera view {output}` or "
              f"`tessera render {output}`")


def _build(args: argparse.Namespace, stop: StopSignals) -> int:
    from preprocess.build import build_file
    from preprocess.mesh import MeshError

    if args.builtin == "forest":
        if args.chunks is not None:
            return fail("--chunks applies to one mesh, not to --builtin forest")
        return _build_forest(args, stop)
    if args.instances is not None:
        return fail("--instances applies to --builtin forest")
    if args.memory is not None and not 0 < args.memory < float("inf"):
        return fail(f"--memory must be a positive number of GB, not {args.memory:g}")
    try:
        config = _config(args)
        scene, source, output = _source(args)
        _check_output(output)
        if scene is not None and args.chunks is not None:
            raise _RefusedError("--chunks applies to one mesh, not to a scene's meshes")
        if args.ray is not None:
            from preprocess.batch import BatchError, check_ray

            try:
                check_ray(args.ray)
            except BatchError as e:
                raise _RefusedError(str(e)) from None
    except _RefusedError as e:
        return fail(str(e))
    verify_errors: tuple[type[BaseException], ...] = ()
    if args.verify:
        from preprocess.verify import VerifyError

        verify_errors = (VerifyError,)
    _note_compile(args)
    stop.check()
    bars = StageBars(not args.quiet)

    # the last report before the output appears: the file complete, or a scene's every .tess
    # (its own "write" reports come mesh after mesh, and a signal after one must still stop it)
    last = "write" if scene is None else "meshes"

    def progress(stage: str, done: int, total: int) -> None:
        stop.check()
        if stage == last and done >= total:
            stop.hold()  # complete; the renames make it appear
        bars(stage, done, total)

    try:
        if scene is not None:
            _build_scene(args, scene, output, config, progress)
            return 0
        if args.builtin:
            from assets import builtin_mesh

            t0 = time.perf_counter()
            mesh = builtin_mesh(args.builtin, args.triangles)
            load_s = time.perf_counter() - t0
            stop.check()
            result = build_file(mesh, output, config, progress=progress, verify=args.verify,
                                load_seconds=load_s, memory=_memory_limit(args),
                                chunks=args.chunks, runner=_chunk_runner(args))
        else:
            result = build_file(source, output, config, progress=progress, verify=args.verify,
                                texture=args.texture, memory=_memory_limit(args),
                                chunks=args.chunks, runner=_chunk_runner(args))
    except MeshError as e:
        stop.check()
        return fail(str(e))
    except verify_errors as e:
        stop.check()
        return fail(f"verify failed: {e}")
    except OSError as e:
        stop.check()
        if e.filename == str(output):
            return fail(f"{output}: cannot write: {e.strerror or e}")
        return fail(f"{e.filename}: {e.strerror}" if e.filename and e.strerror else str(e))
    except MemoryError:
        stop.check()
        return fail(f"out of memory building {output}")
    finally:
        bars.close()
    if not args.quiet:
        print(result.summary())
    return 0


def _chunk_runner(args: argparse.Namespace):
    """Who builds the chunks of a chunked build: the Ray cluster of --ray, or this process."""
    if args.ray is None:
        return None
    from preprocess.chunks_ray import ray_runner

    return ray_runner(args.ray)


def _memory_limit(args) -> tuple[int, bool] | None:
    """(bytes, given) for `build_file`'s memory check: --memory, or what the machine has
    available (None where it does not say)."""
    if args.memory is not None:
        return int(args.memory * 1e9), True
    from preprocess.build import available_memory

    free = available_memory()
    return None if free is None else (free, False)


def one_line_warnings(prog: str) -> None:
    """Print every warning (a MeshWarning: a feature of the input left out or repaired) as one
    line, `prog: warning: ...`, instead of Python's two lines naming our source file."""
    import warnings

    def show(message, category, filename, lineno, file=None, line=None) -> None:
        text = " ".join(str(message).splitlines())
        print(f"{prog}: warning: {text}", file=file or sys.stderr)

    warnings.showwarning = show


def fail(message: str) -> int:
    text = " ".join(str(message).splitlines())  # one line, whatever the message holds
    print(f"preprocess: error: {text}", file=sys.stderr)
    return EXIT_ERROR


def main(argv: list[str] | None = None, *, ending: bool = False) -> int:
    """The command; returns its exit status. ending: the process exits right after (`command`):
    a signal from the end of the work on ends it at once with that status (`end_with`)."""
    # the signals first: everything after, imports included, ends in one line when stopped
    one_line_warnings("preprocess")
    return run_stoppable("preprocess", lambda stop: _main(argv, stop), ending)


def command() -> int:
    """The `preprocess` program (its console script, `python -m`)."""
    as_a_program()
    return main(ending=True)


def as_a_program() -> None:
    """What a program does that a function called from Python must not: output to a reader
    that went away (`... | head`) ends the process as it ends a C tool, silently, instead of a
    BrokenPipeError traceback from the next print."""
    if hasattr(signal, "SIGPIPE"):
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)


def _main(argv: list[str] | None, stop: StopSignals) -> int:
    import numpy as np

    parser = OneLineParser(
        prog="preprocess",
        description="Build a .tess cluster-LOD asset (clusters, LOD DAG, BVH, pages) from a mesh.")
    add_build_options(parser)
    args = parser.parse_args(argv)
    np.seterr(all="ignore")
    return run_build(args, stop=stop)


if __name__ == "__main__":
    sys.exit(command())
