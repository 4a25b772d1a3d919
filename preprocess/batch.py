"""Batch preprocessing: many inputs built into one output folder by one command, with a manifest.

`expand_inputs` turns what a user names (mesh files, folders, glob patterns, `@list` files) into
`Task`s: an input file and its output (a `.tess`, or a scene's `.json` with a `.tess` per mesh
beside it), a folder's files mirrored under the output folder by their place in it. Two inputs
that would write one output are refused before anything is built; an entry of a list file that
does not exist is a failed task, not the end of the batch.

`build_many` builds the tasks in worker processes (`jobs` of them, each build's numba threads
sharing the cores), one failure one failed line, and appends a line of JSON to the manifest for
every task as it ends: input, output, status (`built`, `skipped`: up to date, `failed`),
triangles, levels, seconds, the one-line error, the warnings. An output is up to date when its
`.tess` files (every mesh of a scene) record the same `source_key`: a BLAKE2 digest of the input
file, the files it names (a glTF's buffers and images, an OBJ's material libraries and their
maps) and the build options, so that a second run over an unchanged library only reads
metadata. Every file is written whole (`preprocess.tess.atomic`): a build stopped (Ctrl-C, a
worker that dies) leaves the previous output, or none.
"""

from __future__ import annotations

import dataclasses
import glob
import hashlib
import json
import os
import re
import time
import warnings
from collections.abc import Callable, Iterable
from collections import deque
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from multiprocessing import get_context
from pathlib import Path

from preprocess.config import BuildConfig
from preprocess.load import SUPPORTED_SUFFIXES

__all__ = ["BatchError", "Task", "build_many", "check_ray", "expand_inputs", "names_a_batch",
           "ray_init", "source_key"]

# bump when what a build writes changes without its options changing: every output rebuilt
KEY_VERSION = 1
MAX_TRIES = 3  # a build whose worker dies this often is a failed line
_GLOB = re.compile(r"[*?\[]")


class BatchError(ValueError):
    """A batch that cannot start (no input, two inputs writing one output, an output folder that
    cannot be written): one line."""


@dataclass(frozen=True)
class Task:
    """One input and where it goes; `problem`: why it cannot be built (a list file's missing
    entry), reported as a failed line."""

    input: Path
    output: Path
    problem: str | None = None


def _is_mesh(p: Path) -> bool:
    return p.is_file() and p.suffix.lower() in SUPPORTED_SUFFIXES


def _is_scene_source(p: Path) -> bool:
    """Files that may hold a scene (a `.json` and a `.tess` per mesh, `scene_import`)."""
    return p.suffix.lower() in (".gltf", ".glb", ".obj")


def names_a_batch(names: list[str]) -> bool:
    """Whether command-line inputs make a batch: several, or one that is a folder, a glob
    pattern or an @LIST."""
    return len(names) > 1 or any(n.startswith("@") or _GLOB.search(n) or Path(n).is_dir()
                                 for n in names)


def expand_inputs(names: Iterable[str], out_dir: Path | None) -> list[Task]:
    """The tasks of the inputs `names`: files, folders (their mesh files, recursively, mirrored
    under `out_dir`), glob patterns, `@FILE` (a list of inputs, a line each; `#` comments).
    Outputs go to `out_dir`, or beside each input where it is None. A missing file, folder or
    list, or a pattern that matches no mesh, is a BatchError; a list's missing entry a failed
    task."""
    found: list[tuple[Path, Path | None, str | None]] = []  # (input, folder it came from, problem)
    for name in names:
        if name.startswith("@"):
            listing = Path(name[1:])
            try:
                lines = listing.read_text(encoding="utf-8").splitlines()
            except OSError as e:
                raise BatchError(f"{listing}: cannot read the list: {e.strerror or e}") from None
            except UnicodeDecodeError:
                raise BatchError(f"{listing}: the list is not UTF-8 text") from None
            for line in lines:
                entry = line.strip()
                if not entry or entry.startswith("#"):
                    continue
                p = Path(entry) if Path(entry).is_absolute() else listing.parent / entry
                why = (None if _is_mesh(p) else
                       f"{entry}: no such file (named in {listing})" if not p.exists() else
                       f"{entry}: not a mesh file ({', '.join(sorted(SUPPORTED_SUFFIXES))})")
                found.append((p, None, why))
        elif _GLOB.search(name):
            hits = sorted(Path(h) for h in glob.glob(name, recursive=True))
            meshes = [h for h in hits if _is_mesh(h)]
            if not meshes:
                raise BatchError(f"{name}: matches no mesh file")
            found.extend((h, None, None) for h in meshes)
        else:
            p = Path(name)
            if p.is_dir():
                try:
                    meshes = sorted(q for q in p.rglob("*") if _is_mesh(q))
                except OSError as e:
                    raise BatchError(f"{p}: cannot read the folder: {e.strerror or e}") from None
                if not meshes:
                    raise BatchError(f"{p}: no mesh file in the folder "
                                     f"({', '.join(sorted(SUPPORTED_SUFFIXES))})")
                found.extend((q, p, None) for q in meshes)
            elif not p.exists():
                raise BatchError(f"{p}: no such file or folder")
            elif not _is_mesh(p):
                raise BatchError(f"{p}: not a mesh file ({', '.join(sorted(SUPPORTED_SUFFIXES))})")
            else:
                found.append((p, None, None))
    if not found:
        raise BatchError("no input: give mesh files, folders, patterns or @LIST")
    tasks, seen, written = [], set(), {}
    for p, folder, why in found:
        key = os.path.abspath(p)
        if key in seen:  # named twice (a file and its folder): built once
            continue
        seen.add(key)
        rel = p.relative_to(folder) if folder is not None else Path(p.name)
        suffix = ".json" if _is_scene_source(p) else ".tess"
        base = out_dir / rel if out_dir is not None else p
        out = base.with_suffix(suffix)
        other = written.setdefault(os.path.abspath(out), p)
        if other is not p:
            raise BatchError(f"{other} and {p} would both write {out}: give them different "
                             f"names or folders")
        tasks.append(Task(p, out, why))
    return tasks


def _named_files(path: Path) -> list[Path]:
    """The files an input names that its build reads: a glTF's buffers and images (not data
    URIs), an OBJ's material libraries and the maps they name; those that exist."""
    out: list[Path] = []
    suffix = path.suffix.lower()
    try:
        if suffix in (".gltf", ".glb"):
            raw = path.read_bytes()
            if suffix == ".glb":
                if len(raw) < 20:
                    return out
                n = int.from_bytes(raw[12:16], "little")
                raw = raw[20: 20 + n]
            doc = json.loads(raw.decode("utf-8", "replace"))
            for kind in ("buffers", "images"):
                for item in doc.get(kind) or []:
                    uri = item.get("uri") if isinstance(item, dict) else None
                    if isinstance(uri, str) and not uri.startswith("data:"):
                        out.append(path.parent / uri)
        elif suffix == ".obj":
            with path.open("rb") as f:
                for line in f:
                    if line.startswith(b"mtllib"):
                        for name in line.split()[1:]:
                            out.append(path.parent / name.decode("utf-8", "replace"))
            for mtl in list(out):
                if mtl.is_file():
                    for line in mtl.read_bytes().splitlines():
                        words = line.split()
                        if words and (words[0].startswith(b"map_") or words[0] in (b"bump",
                                                                                    b"norm")):
                            out.append(mtl.parent / words[-1].decode("utf-8", "replace"))
    except (OSError, ValueError, AttributeError):
        pass  # the build reports what it cannot read
    return [p for p in out if p.is_file()]


def source_key(path: Path, config: BuildConfig, verify: bool = False) -> str:
    """What an output was built from: the input's bytes and the files it names, the build
    options, `KEY_VERSION` (hex BLAKE2, 32 digits)."""
    h = hashlib.blake2b(digest_size=16)
    h.update(json.dumps([KEY_VERSION, dataclasses.asdict(config), bool(verify)],
                        sort_keys=True, default=str).encode())
    for p in [path, *_named_files(path)]:
        h.update(p.name.encode() + b"\0")
        with p.open("rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                h.update(chunk)
    return h.hexdigest()


def _recorded_key(output: Path) -> str | None:
    """The `source_key` an existing output was built with (every mesh of a scene the same), or
    None: missing, unreadable, another key among a scene's meshes."""
    from preprocess.tess.container import TessFile

    try:
        if output.suffix == ".json":
            doc = json.loads(output.read_text(encoding="utf-8"))
            files = [output.parent / a["file"] for a in doc.get("assets", {}).values()]
        else:
            files = [output]
        keys = set()
        for f in files:
            with TessFile(f) as t:
                keys.add(t.meta.get("source_key"))
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None
    return keys.pop() if len(keys) == 1 else None


def _build_one(task: Task, config: BuildConfig, verify: bool, key: str) -> dict:
    """Build one task in a worker (`_start_worker`'s, or a Ray worker: `_ray_build`): its
    manifest fields (status built or failed)."""
    from preprocess.build import build_file
    from preprocess.mesh import MeshError
    from preprocess.scene_import import build_scene, read_scene

    t0 = time.perf_counter()
    line: dict = {}
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        try:
            task.output.parent.mkdir(parents=True, exist_ok=True)
            scene = None
            if task.output.suffix == ".json":
                scene = read_scene(task.input, crease_angle=config.crease_angle)
            if scene is not None:
                results = build_scene(scene, task.output, config, verify=verify,
                                      up=config.up, source_key=key, progress=_stop_check)
                metas = [r.packed.meta for r in results]
            else:
                out = task.output.with_suffix(".tess")
                metas = [build_file(task.input, out, config, verify=verify, source_key=key,
                                    progress=_stop_check).packed.meta]
                line["output"] = str(out)
            line.update(status="built",
                        triangles=sum(int(m["input_triangles"]) for m in metas),
                        levels=max(int(m["levels"]) for m in metas), meshes=len(metas))
        except (MeshError, OSError, ValueError, MemoryError) as e:
            from preprocess.verify import VerifyError

            what = ("verify failed: " if isinstance(e, VerifyError) else
                    "out of memory" if isinstance(e, MemoryError) else "")
            text = (f"{e.filename}: {e.strerror}" if isinstance(e, OSError) and e.filename
                    and e.strerror else str(e))
            line.update(status="failed", error=" ".join((what + text).split()))
    line["seconds"] = round(time.perf_counter() - t0, 3)
    if said:
        line["warnings"] = [" ".join(str(w.message).split()) for w in said
                            if issubclass(w.category, UserWarning)]
    return line


_STOP = None  # a worker's: the batch's stop event (set: the build ends at its next report)


def _start_worker(threads: int, stop) -> None:
    """A worker process: numba's threads and numpy's errors as the command's own; Ctrl-C is
    the command's to handle (it sets `stop`, and each build ends at its next progress report,
    its files removed as a stopped build's are)."""
    import signal

    import numba
    import numpy as np

    global _STOP
    _STOP = stop
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    np.seterr(all="ignore")
    numba.set_num_threads(max(1, min(threads, numba.config.NUMBA_NUM_THREADS)))
    warnings.simplefilter("ignore", RuntimeWarning)


def _stop_check(stage: str, done: int, total: int) -> None:
    if _STOP is not None and _STOP.is_set():
        raise KeyboardInterrupt


def check_ray(address: str) -> None:
    """BatchError unless Ray is installed and `address` ("local", "auto", host:port,
    ray://host:port) can be reached: a TCP connection within 5 seconds (Ray's own attempt waits
    minutes on an address that does not answer)."""
    import importlib.util
    import socket

    if importlib.util.find_spec("ray") is None:
        raise BatchError("--ray needs Ray: pip install 'tessera[ray]' (make setup installs it)")
    if address in ("local", "auto"):
        return
    host, _, port = address.removeprefix("ray://").rpartition(":")
    if not host or not port.isdigit():
        raise BatchError(f"--ray {address}: not host:port, ray://host:port, auto or local")
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=5).close()
    except OSError as e:
        raise BatchError(f"--ray {address}: cannot reach the Ray cluster: "
                         f"{e.strerror or e}") from None


def ray_init(address: str, jobs: int):
    """(the ray module, whether this call started it): Ray connected to the cluster at
    `address` (`check_ray`), or a local one of `jobs` CPUs (0: every core) for "local".
    BatchError: not installed, not reached."""
    check_ray(address)
    import ray

    if ray.is_initialized():
        return ray, False
    try:
        if address == "local":
            ray.init(num_cpus=jobs or os.cpu_count() or 1, include_dashboard=False,
                     log_to_driver=False, configure_logging=False)
        else:
            ray.init(address=address, log_to_driver=False, configure_logging=False)
    except Exception as e:  # ConnectionError, a bad address, a cluster that is gone
        raise BatchError(f"--ray {address}: cannot reach the Ray cluster: "
                         f"{' '.join(str(e).split())}") from None
    return ray, True


def _ray_build(task: Task, config: BuildConfig, verify: bool, key: str) -> dict:
    """`_build_one` in a Ray worker (one CPU: numba's threads one; numpy's errors as the
    command's own)."""
    import numba
    import numpy as np

    numba.set_num_threads(1)
    np.seterr(all="ignore")
    return _build_one(task, config, verify, key)


def _on_ray(todo: list[tuple[Task, str]], config: BuildConfig, verify: bool, address: str,
            jobs: int, done: Callable[[Task, dict], None],
            check: Callable[[], None] | None) -> None:
    """The builds as Ray tasks (one CPU each) on the cluster at `address` ("auto": the one
    this machine belongs to; "local": a cluster of `jobs` CPUs, 0 = every core, started
    here), each writing its outputs where the batch says (storage every node sees), retried
    by Ray where its worker dies (MAX_TRIES in all); the lines written here as they end."""
    ray, started = ray_init(address, jobs)
    build = ray.remote(num_cpus=1, max_retries=MAX_TRIES - 1)(_ray_build)
    cfg = dataclasses.replace(config, threads=1)
    refs = {build.remote(task, cfg, verify, key): task for task, key in todo}
    try:
        while refs:
            ready, _ = ray.wait(list(refs), num_returns=1, timeout=0.25)
            if check is not None:
                check()
            for ref in ready:
                task = refs.pop(ref)
                try:
                    fields = ray.get(ref)
                except ray.exceptions.RayError as e:  # its worker died every time
                    fields = {"status": "failed", "seconds": 0.0,
                              "error": f"the Ray worker building it failed {MAX_TRIES} times "
                                       f"({type(e).__name__})"}
                done(task, fields)
    except BaseException:
        for ref in refs:  # KeyboardInterrupt in the running builds: their files removed
            ray.cancel(ref)
        for ref in refs:
            try:
                ray.get(ref, timeout=60)
            except Exception:
                pass
        raise
    finally:
        if started:
            ray.shutdown()


def build_many(tasks: list[Task], config: BuildConfig, manifest: Path, *, jobs: int = 0,
               verify: bool = False, force: bool = False,
               report: Callable[[dict], None] | None = None,
               check: Callable[[], None] | None = None,
               ray_address: str | None = None) -> list[dict]:
    """Build `tasks`, skipping those up to date (`force`: none), in `jobs` worker processes
    (0: one a core, at most the tasks), appending each task's line to `manifest` (JSON lines)
    as it ends and calling `report(line)`; returns the lines in the order they ended.
    `check()` is called every quarter second while builds run (a command's signals raise
    there). Whatever raises (KeyboardInterrupt) stops the workers at their builds' next
    report and goes on up: every output written is whole, none half-written. `ray_address`:
    the builds as tasks on a Ray cluster instead (`_on_ray`; "local" starts one of `jobs`
    CPUs here)."""
    lines: list[dict] = []

    def done(task: Task, fields: dict) -> None:
        line = {"input": str(task.input), "output": str(task.output), **fields}
        with manifest.open("a", encoding="utf-8") as f:
            f.write(json.dumps(line) + "\n")
        lines.append(line)
        if report is not None:
            report(line)

    todo: list[tuple[Task, str]] = []
    for task in tasks:
        if task.problem is not None:
            done(task, {"status": "failed", "error": task.problem, "seconds": 0.0})
            continue
        t0 = time.perf_counter()
        try:
            key = source_key(task.input, config, verify)
        except OSError as e:
            done(task, {"status": "failed", "seconds": 0.0,
                        "error": f"{task.input}: cannot read: {e.strerror or e}"})
            continue
        # a glTF or OBJ is a scene's .json, or one .tess where it holds one mesh
        outputs = [task.output, *([task.output.with_suffix(".tess")]
                                  if task.output.suffix == ".json" else [])]
        built = next((o for o in outputs if _recorded_key(o) == key), None)
        if not force and built is not None:
            done(task, {"output": str(built), "status": "skipped",
                        "seconds": round(time.perf_counter() - t0, 3)})
            continue
        todo.append((task, key))
    if not todo:
        return lines
    if ray_address is not None:
        _on_ray(todo, config, verify, ray_address, jobs, done, check)
        return lines
    cores = os.cpu_count() or 1
    jobs = max(1, min(jobs or cores, len(todo)))
    threads = max(1, cores // jobs)
    cfg = dataclasses.replace(config, threads=threads)
    tries = [0] * len(todo)
    queue = deque(range(len(todo)))
    ctx = get_context("spawn")
    stop = ctx.Event()
    while queue:
        # a pool whose worker died (killed, out of memory) is broken with every build it held:
        # those go again in a new pool, each at most MAX_TRIES times
        with ProcessPoolExecutor(jobs, mp_context=ctx, initializer=_start_worker,
                                 initargs=(threads, stop)) as pool:
            pending: dict[Future, int] = {}
            try:
                while queue or pending:
                    while queue and len(pending) < 2 * jobs:  # a few ahead of the workers
                        i = queue.popleft()
                        tries[i] += 1
                        task, key = todo[i]
                        pending[pool.submit(_build_one, task, cfg, verify, key)] = i
                    finished, _ = wait(pending, timeout=0.25, return_when=FIRST_COMPLETED)
                    if check is not None:
                        check()
                    broken = False
                    for fut in finished:
                        i = pending.pop(fut)
                        try:
                            done(todo[i][0], fut.result())
                        except BrokenProcessPool:
                            broken = True
                            queue.appendleft(i)
                        except Exception as e:  # a fault of ours in the build: its line
                            done(todo[i][0], {"status": "failed", "seconds": 0.0,
                                              "error": " ".join(f"internal error: "
                                                                f"{type(e).__name__}: {e}"
                                                                .split())})
                    if broken:
                        queue.extendleft(pending.values())
                        pending.clear()
                        for i in [i for i in queue if tries[i] >= MAX_TRIES]:
                            queue.remove(i)
                            done(todo[i][0], {"status": "failed", "seconds": 0.0,
                                              "error": f"the worker building it died "
                                                       f"{MAX_TRIES} times (killed, or out "
                                                       f"of memory)"})
                        break
            except BaseException:
                stop.set()  # the running builds end at their next report, their files removed
                pool.shutdown(wait=True, cancel_futures=True)
                raise
    return lines
