"""SIGINT (Ctrl-C) and SIGTERM for the commands (`preprocess`, `tessera preprocess|info|render`):
at any moment, one line on stderr, `PROG: interrupted; nothing written` and exit status 130, or
`PROG: terminated; nothing written` and 143; what the command had begun writing is removed (the
writers clean up as the KeyboardInterrupt passes: `preprocess.tess.atomic`). From the moment its
work is complete (a file's rename, a scene's renames, a PNG about to be saved) the command's
status stands whatever comes, the interpreter's exit included (`StopSignals.hold`, `end_quietly`).

Why not Python's own handler. It raises KeyboardInterrupt wherever the main thread is, and in the
first second of a build that is often Python code that native code called: a ctypes callback of
llvmlite (numba loading or compiling a kernel) prints "Exception ignored" and carries on, so the
build finished and wrote its file; numba's `_numba_unpickle`, called by a compiled kernel, gave a
SystemError or a segmentation fault; a C extension being imported turned it into an ImportError.
And an exception raised in library code between taking a lock and entering the `with` that
would release it leaks the lock: numba's compiler lock (a Python `__enter__` around an RLock)
was left held by the main thread, a worker loading its first kernel waited on it forever, and
the interrupted build never exited (1 in ~500 signals at a random moment; CI saw it twice).
Here the handler records the signal and raises only at a safe point: where no frame of the main
thread belongs to such a module (`_HELD`: numba, llvmlite, threading, concurrent.futures, wgpu,
the import machinery, ...). Otherwise the signal waits for the next check (`StopSignals.check`):
every progress report of a build, up to the one just before the final rename, raises for a
recorded signal (a few milliseconds apart in a warm build), `tessera render` checks once the GPU
is open and the scene uploaded and once the frame is drawn, and an error that follows a signal
is reported as the interrupt. Only what Python does before a command's `main` runs (about 30
ms: the interpreter, `site`, the command module's few imports) is outside; the heavy imports
(numpy, numba, the builder, wgpu) happen inside `main`.

`tessera view` and `tessera bench` keep Python's own handler: their loops draw frame after frame
with no progress report where a signal held back could be raised.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import signal
import sys
from typing import TYPE_CHECKING, NoReturn

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from types import FrameType

# exit statuses: 128 + the signal, as a shell reports a process the signal ended
EXIT_SIGINT = 130
EXIT_SIGTERM = 143


class StopSignals:
    """While active (a `with` block on the main thread) for the command `prog`: SIGINT and
    SIGTERM raise KeyboardInterrupt and are remembered in `signum`, so that `check()` raises
    again where the first one was swallowed. After `hold()` they are only remembered: the work
    is complete and is let finish (the final rename of the file). A signal ignored when the
    block starts (a background job, `nohup`) stays ignored; off the main thread nothing is
    installed."""

    def __init__(self, prog: str) -> None:
        self.prog = prog  # the command's name, which begins its line
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
            return stopped(f"{self.prog}: terminated; nothing written", EXIT_SIGTERM)
        return stopped(f"{self.prog}: interrupted; nothing written", EXIT_SIGINT)


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


@contextlib.contextmanager
def terminate_as_interrupt() -> Iterator[list[int]]:
    """SIGTERM raised as KeyboardInterrupt wherever it lands, as Python's Ctrl-C is, for the
    commands with no safe point to wait for (`tessera view`, `tessera bench`); the list it gives
    holds the signal once one came, to tell the two apart. A SIGTERM ignored when it starts
    stays ignored; the handler before it is put back."""
    came: list[int] = []

    def on_term(signum: int, frame: FrameType | None) -> None:
        came.append(signum)
        raise KeyboardInterrupt

    if signal.getsignal(signal.SIGTERM) is signal.SIG_IGN:
        yield came
        return
    before = signal.signal(signal.SIGTERM, on_term)
    try:
        yield came
    finally:
        signal.signal(signal.SIGTERM, before)


def quiet_destructors() -> None:
    """From now on, errors raised by destructors are not printed: for a command a
    KeyboardInterrupt stopped wherever it landed (`tessera view`, `tessera bench`), which may
    have been inside a library object's constructor (wgpu's GPUBuffer, whose `__del__` then
    printed "Exception ignored ... AttributeError" after the command's one line)."""
    sys.unraisablehook = lambda info: None


def stopped(line: str, status: int) -> int:
    """Print the one line of a command a signal stopped and return its exit status."""
    # CPython (`python -m`) remembers a KeyboardInterrupt that left code run by exec() of a
    # string (numba's and dataclasses' generated code), caught or not, and at exit kills the
    # process with SIGINT instead of returning our status; one more exec() forgets it
    exec("")
    print(line, file=sys.stderr)
    return status


# where a KeyboardInterrupt must not be raised (`_safe_to_raise`): modules that take locks in
# Python code or are called back by native code or leave objects half made, and the import
# machinery
_HELD = ("numba", "llvmlite", "tqdm", "concurrent.futures", "logging", "threading", "queue",
         "contextlib", "wgpu")


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
    `_numba_unpickle` raising crashed the process; wgpu's cffi callbacks), or leave an object
    half made (a wgpu object stopped in its constructor printed "Exception ignored in
    GPUObjectBase.__del__" and a traceback when it was collected, 1 in ~30 signals mid-frame).
    Elsewhere (our code, numpy's, the loaders') it raises at once, as Python's own handler
    would."""
    roots = _held_roots()
    while frame is not None:
        if frame.f_code.co_filename.startswith(roots):
            return False
        frame = frame.f_back
    return True


def run_stoppable(prog: str, work: Callable[[StopSignals], int], ending: bool) -> int:
    """work(stop) under signals of its own (`stoppable`); ending: the process exits right
    after, and from the end of the work on a signal ends it at once with the status
    (`StopSignals.end_with`)."""
    with StopSignals(prog) as stop:
        status = stoppable(stop, lambda: work(stop))
        if ending:
            stop.end_with(status)
        return status


def stoppable(stop: StopSignals, work: Callable[[], int | None]) -> int | None:
    """work(), its stop by a signal (`stop` active) made one line and the exit status (None
    from work: no status yet, `tessera main` runs the command with Python's own handler)."""
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
