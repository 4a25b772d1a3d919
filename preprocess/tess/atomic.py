"""Files written whole or not at all: the `.tess` files (`container.write_tess`) and the scene
files (`scene_file.write_scene_file`).

A file is written to a temporary name beside it, `.NAME.PID.HEX.tmp`, fsynced and renamed over
`NAME`, so that a reader never sees half a file and an existing `NAME` stays as it was until the
new one is complete. What raises on the way (a full disk, a KeyboardInterrupt from a signal)
removes the temporary file. A process that was killed (SIGKILL, a power cut) cannot: its file,
megabytes of it, is removed by the next write of `NAME` once no process with that PID runs.

A writer of several files that belong together (a scene: a `.tess` per mesh, then the scene
file) stages them: each is left complete under its temporary name (`stage_into`) until all are,
and only then renamed into place, the scene file last.
"""

from __future__ import annotations

import errno
import os
import re
import secrets
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

__all__ = ["check_writable", "fsync_dir", "write_atomically"]


def write_atomically(path: str | os.PathLike, write: Callable[[BinaryIO], None], *,
                     before_replace: Callable[[], None] | None = None,
                     stage_into: list[Path] | None = None) -> None:
    """Write `path` through write(f) (f: the temporary file, opened "wb"): fsync it, call
    before_replace (the last moment to cancel: an exception from it removes the file), rename
    it over `path` and fsync the folder. On any failure the temporary file is removed; an
    OSError names `path` (never the temporary file).

    stage_into: the complete file is not renamed but stays at its temporary name, appended to
    this list before the file is created (so that a caller stopped at any moment knows it), for
    the caller to rename over `path` or remove."""
    path = Path(path)
    _remove_stale_temps(path)
    tmp = _temp_path(path)
    if stage_into is not None:
        stage_into.append(tmp)
    try:
        fd = _create(tmp)
        with os.fdopen(fd, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        if before_replace is not None:
            before_replace()
        if stage_into is None:
            os.replace(tmp, path)
    except BaseException as exc:
        # a FileExistsError from _create: the name was someone else's; else it may be ours,
        # even where the exception came between creating it and knowing so (a signal)
        if not isinstance(exc, FileExistsError):
            try:
                os.unlink(tmp)
            except OSError:
                pass
        if isinstance(exc, OSError):
            raise _naming(exc, path) from exc
        raise
    if stage_into is None:
        fsync_dir(path.parent)


def check_writable(path: str | os.PathLike) -> None:
    """Raise the OSError that `write_atomically(path)` would meet creating its file, before any
    work is done: `path` is a folder, its folder is missing or not a folder, or no file can be
    created there (read-only, no permission, a pseudo file system such as /proc or /sys).
    Creates and removes an empty temporary file; the error's `filename` is `path`."""
    path = Path(path)
    if path.is_dir():
        raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), str(path))
    tmp = _temp_path(path)
    try:
        os.close(_create(tmp))
    except OSError as exc:
        raise _naming(exc, path) from exc
    try:
        os.unlink(tmp)
    except OSError:
        pass


def _temp_path(path: Path) -> Path:
    return path.parent / f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp"


def _create(tmp: Path) -> int:
    return os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666)


def _naming(exc: OSError, path: Path) -> OSError:
    """The same error (same errno, so the same OSError subclass) naming `path`."""
    return OSError(exc.errno, exc.strerror or str(exc), str(path))


def _remove_stale_temps(path: Path) -> None:
    """Remove the temporary files of `path` (`.NAME.PID.HEX.tmp`, exactly) whose writer is no
    longer running: a process killed while writing (SIGKILL cannot be caught) leaves its file,
    and nothing else would ever remove it. POSIX only (there `os.kill(pid, 0)` asks whether a
    process exists; on Windows it would end the process). A PID that runs again keeps its file
    until it is gone; a file written from another machine into a shared folder whose PID does
    not run here is removed (that writer then fails, cleanly, at its rename)."""
    if os.name != "posix":
        return
    pattern = re.compile(rf"\.{re.escape(path.name)}\.([0-9]+)\.[0-9a-f]{{8}}\.tmp")
    try:
        entries = list(os.scandir(path.parent))
    except OSError:
        return  # the write itself will say why
    for entry in entries:
        match = pattern.fullmatch(entry.name)
        if match is None:
            continue
        pid = int(match.group(1))
        if pid <= 0 or pid == os.getpid():
            continue
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            pass  # no such process: stale
        except (OSError, OverflowError):
            continue  # running (another user's), or not a PID this system has
        else:
            continue
        try:
            if entry.is_file(follow_symlinks=False):
                os.unlink(entry.path)
        except OSError:
            pass


def fsync_dir(directory: str | os.PathLike) -> None:
    """Make renames into `directory` durable (POSIX); best effort, a no-op where directories
    cannot be opened."""
    if os.name != "posix":
        return
    try:
        dfd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(dfd)
    except OSError:
        pass
    finally:
        os.close(dfd)
