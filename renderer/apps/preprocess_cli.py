"""`preprocess mesh.obj [-o out.tess]`: build a `.tess` cluster-LOD asset from a mesh file.

What the user can cause ends in one line on stderr and nothing left behind, never a traceback:
a missing or broken mesh, bad options, an output that cannot be written (checked before the build
where it can be: a folder, a missing folder, no permission; a full disk during the write), a
failed --verify: `preprocess: error: ...`, exit status 2. SIGINT (Ctrl-C) and SIGTERM at any
moment: `preprocess: interrupted; nothing written`, 130, or `... terminated ...`, 143; from the
moment the file is complete (its rename) the status is 0 whatever comes, the interpreter's exit
included (`end_quietly`).

Signals. Python's own handler raises KeyboardInterrupt wherever the main thread is, and in the
first second of a build that is often Python code that native code called: a ctypes callback of
llvmlite (numba loading or compiling a kernel) prints "Exception ignored" and carries on, so the
build finished and wrote its file; numba's `_numba_unpickle`, called by a compiled kernel, gave a
SystemError or a segmentation fault; a C extension being imported turned it into an ImportError.
And an exception raised in library code between taking a lock and entering the `with` that
would release it leaks the lock: numba's compiler lock (a Python `__enter__` around an RLock)
was left held by the main thread, a worker loading its first kernel waited on it forever, and
the interrupted build never exited (1 in ~500 signals at a random moment; CI saw it twice).
Here the handler records the signal and raises only at a safe point: where no frame of the main
thread belongs to such a module (`_HELD`: numba, llvmlite, threading, concurrent.futures, the
import machinery, ...). Otherwise the signal waits for the next check: every progress report
of the build, up to the one just before the final rename, raises for a recorded signal (a few
milliseconds apart in a warm build), and an error that follows a signal is reported as the
interrupt. Only what Python does before `main` runs (about 30 ms: the interpreter, `site`, this
module's few imports) is outside; the heavy imports (numpy, numba, the builder) happen inside
`main`.
"""

from __future__ import annotations

import argparse
import atexit
import os
import signal
import sys
import time
from typing import TYPE_CHECKING, NoReturn

from assets import BUILTIN

# triangle ids are 32-bit: the most a --builtin asset may ask for
MAX_TRIANGLES = 2**31 - 1

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path
    from types import FrameType

    from tqdm import tqdm

    from preprocess.config import BuildConfig
    from preprocess.mesh import Mesh
    from preprocess.scene_import import SceneMeshes

# exit statuses: 128 + the signal, as a shell reports a process the signal ended
EXIT_ERROR = 2
EXIT_SIGINT = 130
EXIT_SIGTERM = 143

COMPILE_NOTE = "preprocess: compiling the numba kernels once"  # then "(about 45 s on 2 cores)..."


class StopSignals:
    """While active (a `with` block on the main thread): SIGINT and SIGTERM raise
    KeyboardInterrupt and are remembered in `signum`, so that `check()` raises again where the
    first one was swallowed. After `hold()` they are only remembered: the work is complete and is
    let finish (the final rename of the file). A signal ignored when the block starts (a
    background job, `nohup`) stays ignored; off the main thread nothing is installed."""

    def __init__(self) -> None:
        self.signum: int | None = None  # the first signal received
        self.holding = False  # True once the work must not be cut short any more
        self._saved: dict[int, object] = {}
        self._unraisable: object = None
        self._ending: int | None = None  # `end_with`'s status

    def __enter__(self) -> StopSignals:
        for s in (signal.SIGINT, signal.SIGTERM):
            try:
                if signal.getsignal(s) is not signal.SIG_IGN:
                    self._saved[s] = signal.signal(s, self._on_signal)
            except ValueError:  # not the main thread: the caller handles its signals
                break
        if self._saved:
            self._unraisable = sys.unraisablehook
            sys.unraisablehook = self._on_unraisable
        return self

    def __exit__(self, *exc: object) -> None:
        if self._saved and self._ending is not None:
            end_quietly(self._ending)  # straight from ours: never Python's handler in between
        else:
            for s, handler in self._saved.items():
                signal.signal(s, handler)
        self._saved.clear()
        if self._unraisable is not None:
            sys.unraisablehook = self._unraisable
            self._unraisable = None

    def _on_unraisable(self, info: object) -> None:
        # where Python cannot raise (a weakref callback, a __del__, a ctypes callback) it prints
        # "Exception ignored" and goes on: ours is remembered, and raised again by check()
        if self.signum is not None and getattr(info, "exc_type", None) is KeyboardInterrupt:
            return
        self._unraisable(info)

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        if self.signum is None:
            self.signum = signum
        if not self.holding and _safe_to_raise(frame):
            raise KeyboardInterrupt

    def check(self) -> None:
        """Raise KeyboardInterrupt if a signal came (and was perhaps swallowed)."""
        if self.signum is not None and not self.holding:
            raise KeyboardInterrupt

    def hold(self) -> None:
        self.holding = True

    def end_with(self, status: int) -> None:
        """The process ends with `status` once the block is left (a program's last step): from
        now on a signal is only recorded, and after the block it ends the process at once with
        that status (`end_quietly`) instead of Python's handler taking over again. Without it,
        a Ctrl-C while the interpreter exits (tens of milliseconds: threads joined, modules
        torn down) printed a KeyboardInterrupt traceback or killed the process by SIGINT, the
        complete file in place."""
        self.holding = True
        self._ending = status

    def report(self) -> int:
        """Print the one line for a stop and return the exit status."""
        self.holding = True  # a second Ctrl-C while this prints changes nothing
        if self.signum == signal.SIGTERM:
            return stopped("preprocess: terminated; nothing written", EXIT_SIGTERM)
        return stopped("preprocess: interrupted; nothing written", EXIT_SIGINT)


def end_quietly(status: int) -> int:
    """Until the process exits, SIGINT and SIGTERM (unless ignored) do not change how it ends:
    for a program whose work is done and whose status is decided (the console scripts and
    `python -m`, after their main), so that a signal during the interpreter's exit neither
    prints a traceback nor turns the status into death by the signal. Until the exit handlers
    run (the worker threads joined), a signal ends the process at once with `status`; from then
    on (modules torn down, the native libraries' destructors: Python puts a handler of its own
    back to the default, which kills, but leaves an ignored signal ignored) it is ignored.
    Returns `status`."""
    for s in (signal.SIGINT, signal.SIGTERM):
        if signal.getsignal(s) is not signal.SIG_IGN:
            signal.signal(s, _ender(status))
    atexit.register(_ignore_stops)
    return status


def _ignore_stops() -> None:
    for s in (signal.SIGINT, signal.SIGTERM):
        signal.signal(s, signal.SIG_IGN)


def _ender(status: int) -> Callable[[int, FrameType | None], NoReturn]:
    def end(signum: int, frame: FrameType | None) -> NoReturn:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):  # closed, or a broken pipe: nothing more to say
                pass
        os._exit(status)
    return end


def stopped(line: str, status: int) -> int:
    """Print the one line of a command a signal stopped and return its exit status."""
    # CPython (`python -m`) remembers a KeyboardInterrupt that left code run by exec() of a
    # string (numba's and dataclasses' generated code), caught or not, and at exit kills the
    # process with SIGINT instead of returning our status; one more exec() forgets it
    exec("")
    print(line, file=sys.stderr)
    return status


# where a KeyboardInterrupt must not be raised (`_safe_to_raise`): modules that take locks in
# Python code or are called back by native code, and the import machinery
_HELD = ("numba", "llvmlite", "tqdm", "concurrent.futures", "logging", "threading", "queue",
         "contextlib")


def _held_roots() -> tuple[str, ...]:
    roots = ["<frozen importlib"]  # the import machinery: its module locks
    for name in _HELD:
        module = sys.modules.get(name)
        path = getattr(module, "__file__", None)
        if path:  # a package: its folder; a module: its file
            roots.append(os.path.dirname(path) + os.sep if path.endswith("__init__.py")
                         else path)
    return tuple(roots)


def _safe_to_raise(frame: FrameType | None) -> bool:
    """Whether a KeyboardInterrupt may be raised where the signal found the main thread: not
    while any frame on its stack belongs to a module of `_HELD`. Those take locks in Python code,
    where an exception between taking one and entering the `with` that releases it leaks it
    (numba's compiler lock, `threading.Condition` under every `Future.result`, tqdm's lock, an
    import's module lock: a worker then waits forever), or are called back by native code
    (an llvmlite ctypes callback swallows the exception and the build wrote its file; numba's
    `_numba_unpickle` raising crashed the process). Elsewhere (our code, numpy's, the
    loaders') it raises at once, as Python's own handler would."""
    roots = _held_roots()
    while frame is not None:
        if frame.f_code.co_filename.startswith(roots):
            return False
        frame = frame.f_back
    return True


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
    from preprocess.config import SHADING_WEIGHT, TEXTURED_SHADING_WEIGHT, UP_AXES, BuildConfig
    from preprocess.tess.limits import PAGE_SIZE

    d = BuildConfig()
    p.add_argument("mesh", nargs="?", help="input mesh: .obj .ply .stl .off .gltf .glb")
    p.add_argument("-o", "--output", help="output .tess (default: beside the input); a glTF "
                   "of several meshes or nodes: a scene file NAME.json and a .tess per mesh "
                   "beside it (the default), or NAME.tess merged")
    p.add_argument("--builtin", choices=BUILTIN,
                   help="build a built-in procedural asset instead of reading a file")
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
                        f"{d.max_texture_size}); a 2048 texture with mips is 21 MiB")
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
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bars or summary")


def run_build(args: argparse.Namespace, *, stop: StopSignals | None = None,
              ending: bool = False) -> int:
    """Build from parsed options; returns the exit status. SIGINT and SIGTERM end it with one
    line and nothing written (see the module docstring); `stop`: the caller's, already active;
    else its own, and `ending` as `main`'s."""
    if stop is None:
        return _stoppable_run(lambda own: _build(args, own), ending)
    return _stoppable(stop, lambda: _build(args, stop))


def _stoppable_run(work: Callable[[StopSignals], int], ending: bool) -> int:
    """work(stop) under signals of its own (`_stoppable`); ending: the process exits right
    after, and from the end of the work on a signal ends it at once with the status
    (`StopSignals.end_with`)."""
    with StopSignals() as stop:
        status = _stoppable(stop, lambda: work(stop))
        if ending:
            stop.end_with(status)
        return status


def _stoppable(stop: StopSignals, work: Callable[[], int]) -> int:
    """work(), its stop by a signal (`stop` active) made one line and the exit status."""
    try:
        status = work()
        stop.hold()  # done: what the status says stands
        return status
    except KeyboardInterrupt:
        return stop.report()
    except Exception:
        if stop.signum is None:
            raise
        return stop.report()  # e.g. an ImportError: a C extension's import was interrupted


class _RefusedError(Exception):
    """What `_build` refuses before it builds anything: one line (`fail`)."""


def _config(args: argparse.Namespace) -> BuildConfig:
    """The build configuration the options ask for, after the checks of what goes with what."""
    from preprocess.config import BuildConfig

    if (args.mesh is None) == (args.builtin is None):
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
                           max_texture_size=args.max_texture_size, up=args.up)
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
    from preprocess.tess.container import check_writable

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
    if not args.builtin:
        modules.update(FILE_KERNEL_SECONDS)
    elif args.builtin in ("rock", "terrain"):
        modules.update(ROCK_KERNEL_SECONDS)
    ahead = compile_seconds(modules)
    if ahead >= 3:
        about = round(ahead / 5) * 5 if ahead >= 10 else round(ahead)
        print(f"{COMPILE_NOTE} (about {about} s on 2 cores); later runs start at once",
              file=sys.stderr)


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

    try:
        config = _config(args)
        scene, source, output = _source(args)
        _check_output(output)
    except _RefusedError as e:
        return fail(str(e))
    verify_errors: tuple[type[BaseException], ...] = ()
    if args.verify:
        from preprocess.verify import VerifyError

        verify_errors = (VerifyError,)
    _note_compile(args)
    stop.check()
    bars = StageBars(not args.quiet)

    def progress(stage: str, done: int, total: int) -> None:
        stop.check()
        if stage == "write" and done >= total:
            stop.hold()  # the file is complete; the rename makes it appear
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
                                load_seconds=load_s)
        else:
            result = build_file(source, output, config, progress=progress, verify=args.verify,
                                texture=args.texture)
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
    return _stoppable_run(lambda stop: _main(argv, stop), ending)


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
