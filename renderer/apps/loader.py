"""What `tessera view` opens, turned into `.tess` files off the main thread.

A source is a `.tess` file (used as is), a mesh file (preprocessed once, cached), a scene file
(`.json`, see `renderer.apps.scene_file`: each of its assets is one of the former), or nothing (the
built-in rock). `LoadJob` does the work in a background thread and publishes its progress (stage,
done, total) for a progress bar; `cancel()` stops a preprocess at its next progress report,
leaving nothing behind (`.tess` files are written atomically, and only at the end).

The cache: a mesh `m.obj` builds `m.tess` beside it, or, where that folder is not writable,
`~/.cache/tessera/<name>-<hash of the path>.tess`. A cached file is used while it is newer than
the mesh, opens cleanly and, where an up axis is asked for (`--up`, a scene file's `up`), was
built with that one (its meta's `up`, absent for Y); otherwise it is rebuilt. Without an up axis
asked for, a cached file is used whatever it was built with (a `preprocess --up z m.obj` beside
the mesh stays), and a build is Y-up. A scene's cache (`m.json`, or `m.z-up.json` for
`--up z`, and a `.tess` per mesh) is
complete when its scene file was written after every `.tess` it names (`build_scene` writes it
last); one that is not (a build killed while it renamed its files into place) is rebuilt. A job
that fails leaves none of the files it built (`discard`): a next run must not trust them.
"""

from __future__ import annotations

import hashlib
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from renderer.apps.scene_file import SceneSpec, load_scene_file

CACHE_DIR = Path(os.environ.get("TESSERA_CACHE", Path.home() / ".cache" / "tessera"))


class CancelledError(Exception):
    """Raised inside a preprocess when its job was cancelled."""


def cache_path(mesh: Path) -> Path:
    """Where the `.tess` built from a mesh file lives (see the module docstring)."""
    beside = mesh.with_suffix(".tess")
    if os.access(mesh.parent, os.W_OK):
        return beside
    key = hashlib.sha1(str(mesh.resolve()).encode()).hexdigest()[:12]
    return CACHE_DIR / f"{mesh.stem}-{key}.tess"


def _usable(tess: Path, newer_than: float, up: str | None = None) -> bool:
    from renderer.scene import open_asset

    if not tess.exists() or tess.stat().st_mtime < newer_than:
        return False
    try:
        asset = open_asset(tess)  # headers, section checksums, what the renderer needs
    except (OSError, ValueError):
        return False
    return up is None or asset.meta.get("up", "y") == up


def _scene_cache(source: Path, up: str | None) -> Path:
    """The scene file of a scene's cache: `cache_path` with `.json`, and `.z-up.json` for a
    Z-up build. A scene's meshes are stored as they are (Y up) and the turn is in its
    instances, so the axis is told by the scene file's name, not by its `.tess` files' meta
    (which made a Z-up scene build again on every run, and a later Y-up run use it)."""
    scene_path = cache_path(source).with_suffix(".json")
    return scene_path.with_name(f"{scene_path.stem}.z-up.json") if up == "z" else scene_path


def _cached_scene(scene_path: Path, newer_than: float) -> SceneSpec | None:
    """A scene's cache, or None where it must be built: its scene file missing, older than the
    source, unreadable, or written before one of its `.tess` files (incomplete: it was not the
    last file written), or one of those unusable (`_usable`)."""
    try:
        written = scene_path.stat().st_mtime
        if written < newer_than:
            return None
        spec = load_scene_file(scene_path)
        if all(_usable(p, newer_than) and p.stat().st_mtime <= written
               for p in spec.assets.values()):
            return spec
    except (OSError, ValueError):
        pass
    return None


@dataclass
class LoadJob:
    """Resolve a source to `.tess` files in a background thread (`start()`), or in this one
    (`run()`). Read `stage`/`done`/`total`/`asset` for progress; when `finished` is set,
    `error` holds a one-line message, or `tess` (asset name -> `.tess` path) and `spec` (the
    scene file, or None for a single asset) hold the result."""

    source: str | None
    up: str | None = None  # a mesh source's up axis, "y" or "z" (None: see the module docstring)
    # called at every progress report of a build, in the thread that runs the job: where a
    # caller on the main thread raises for a signal it held back (`StopSignals.check`)
    check: Callable[[], None] | None = None
    stage: str = "starting"
    done: int = 0
    total: int = 1
    asset: str = ""  # the asset being prepared, e.g. "bunny.obj (2 of 3)"
    tess: dict[str, str] = field(default_factory=dict)
    spec: SceneSpec | None = None
    error: str | None = None
    # the files this job wrote: .tess files preprocessed, a scene's cached scene file last
    built: list[str] = field(default_factory=list)
    seconds: float = 0.0
    finished: threading.Event = field(default_factory=threading.Event)
    _cancel: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    @property
    def title(self) -> str:
        return "built-in rock" if self.source is None else Path(self.source).name

    @property
    def fraction(self) -> float:
        return min(1.0, self.done / max(self.total, 1))

    def start(self) -> LoadJob:
        self._thread = threading.Thread(target=self.run, name="tessera-load", daemon=True)
        self._thread.start()
        return self

    def cancel(self, wait: float = 10.0) -> None:
        """Ask the job to stop, and wait (up to `wait` s) for it to."""
        self._cancel.set()
        if self._thread is not None:
            self._thread.join(wait)

    def discard(self) -> None:
        """Remove the files this job wrote (its caller failed with them, or was stopped)."""
        for path in reversed(self.built):  # a scene file before the .tess files it names
            Path(path).unlink(missing_ok=True)
        self.built.clear()

    def _progress(self, stage: str, done: int, total: int) -> None:
        if self.check is not None:
            self.check()
        if self._cancel.is_set():
            raise CancelledError
        self.stage, self.done, self.total = stage, int(done), max(int(total), 1)

    def run(self) -> None:

        t0 = time.perf_counter()
        try:
            if self.source is None:
                self.tess = {"rock": self._builtin_rock()}
            elif Path(self.source).suffix.lower() == ".json":
                if self.up is not None:
                    raise ValueError(f"{self.source}: an up axis applies to a mesh file; a "
                                     "scene file gives each of its meshes an \"up\"")
                self.stage = "reading the scene file"
                self.spec = load_scene_file(self.source)
                n = len(self.spec.assets)
                for k, (name, path) in enumerate(self.spec.assets.items()):
                    self.asset = f"{path.name} ({k + 1} of {n})" if n > 1 else path.name
                    self.tess[name] = self._resolve(path, self.spec.up.get(name))
            elif not self._file_scene(Path(self.source)):
                self.asset = Path(self.source).name
                self.tess = {Path(self.source).stem: self._resolve(Path(self.source), self.up)}
            self.stage = "done"
        except CancelledError:
            self.error = "cancelled"
        except (OSError, ValueError) as e:  # MeshError, SceneFileError, SceneError
            self.error = str(e)
        except MemoryError:
            self.error = f"{self.title}: out of memory while preprocessing"
        except Exception as e:  # a bug: still one line in the window, never a dead thread
            self.error = f"{self.title}: {type(e).__name__}: {e}"
        finally:
            if self.error is not None:
                self.discard()
            self.seconds = time.perf_counter() - t0
            self.finished.set()

    def _resolve(self, path: Path, up: str | None = None) -> str:
        """A .tess for one asset file, building (and caching) it from a mesh, whose up axis is
        `up`, when needed."""
        from preprocess.build import build_file
        from preprocess.config import BuildConfig
        from preprocess.load import SUPPORTED_SUFFIXES

        if not path.exists():
            raise FileNotFoundError(f"{path}: no such file")
        suffix = path.suffix.lower()
        if suffix == ".tess":
            if up is not None:
                raise ValueError(f"{path}: an up axis applies to a mesh file; a .tess is built "
                                 "already (preprocess --up)")
            return str(path)
        if suffix not in SUPPORTED_SUFFIXES:
            known = ", ".join(sorted([*SUPPORTED_SUFFIXES, ".tess", ".json"]))
            raise ValueError(f"{path}: cannot open {suffix or 'a file without a suffix'} "
                             f"({known})")
        out = cache_path(path)
        if _usable(out, path.stat().st_mtime, up):
            return str(out)
        out.parent.mkdir(parents=True, exist_ok=True)
        self.stage, self.done, self.total = "loading the mesh", 0, 1
        build_file(path, out, BuildConfig(up=up or "y"), progress=self._progress)
        self.built.append(str(out))
        return str(out)

    def _file_scene(self, path: Path) -> bool:
        """A glTF of several meshes or nodes, or an OBJ of several objects, opens as its scene
        (`preprocess.scene_import`): a scene file and a .tess per distinct mesh, cached beside it
        (`cache_path` with `.json`) while newer than the file and built with the asked up
        axis. False where it is no scene."""
        if path.suffix.lower() not in (".gltf", ".glb", ".obj") or not path.is_file():
            return False
        scene_path = _scene_cache(path, self.up)
        spec = _cached_scene(scene_path, path.stat().st_mtime)
        if spec is None:
            from preprocess.config import BuildConfig
            from preprocess.scene_import import build_scene, read_scene

            self.stage, self.done, self.total = "reading the scene", 0, 1
            scene = read_scene(path)
            if scene is None:
                return False
            scene_path.parent.mkdir(parents=True, exist_ok=True)
            results = build_scene(scene, scene_path, BuildConfig(), progress=self._progress,
                                  up=self.up or "y")
            # the scene's textures file first: discarded last, after the meshes naming it
            shared = sorted({r.packed.meta["texture_file"] for r in results
                             if "texture_file" in r.packed.meta})
            self.built += [*(str(scene_path.parent / n) for n in shared),
                           *(str(r.path) for r in results), str(scene_path)]
            spec = load_scene_file(scene_path)
        self.spec = spec
        self.tess = {name: str(p) for name, p in spec.assets.items()}
        return True

    def _builtin_rock(self) -> str:
        from preprocess.build import build_file
        from assets import builtin_mesh

        out = CACHE_DIR / "rock.tess"
        self.asset = "built-in rock (1M triangles)"
        if _usable(out, 0.0):
            return str(out)
        out.parent.mkdir(parents=True, exist_ok=True)
        self.stage = "generating the rock"
        build_file(builtin_mesh("rock", 1_000_000), out, progress=self._progress)
        self.built.append(str(out))
        return str(out)


def load_now(source: str | None, up: str | None = None) -> LoadJob:
    """Run a job in this thread (for scripts and `tessera render`); raises nothing: check
    `job.error`."""
    job = LoadJob(source, up)
    job.run()
    return job
