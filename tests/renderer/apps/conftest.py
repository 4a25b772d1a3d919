"""Fixtures of the command tests: `signal_child`, a command run in a subprocess as from a
terminal, for the tests that signal it at a chosen moment (test_preprocess_cli_errors.py,
test_signals.py, test_cli_render.py)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from renderer.apps.preprocess_cli import COMPILE_NOTE

ROOT = Path(__file__).resolve().parents[3]

# a command's main(argv) (argv[1]: its module), with an fsync that sleeps
# TESSERA_TEST_FSYNC_DELAY seconds first: "during the write" becomes a window a test can hit,
# and no signal arrives after the work is done; with TESSERA_TEST_MARK ("module:Class.method
# path"), a file at path appears each time that method has returned: a moment with no file
# of its own
_CHILD = """
import importlib, os, sys, time
fsync = os.fsync
def slow_fsync(fd):
    time.sleep(float(os.environ.get("TESSERA_TEST_FSYNC_DELAY", "0")))
    fsync(fd)
os.fsync = slow_fsync
if os.environ.get("TESSERA_TEST_MARK"):
    where, path = os.environ["TESSERA_TEST_MARK"].split(" ", 1)
    module, name = where.split(":")
    owner, method = name.split(".")
    cls = getattr(importlib.import_module(module), owner)
    real = getattr(cls, method)
    def marked(*args, **kwargs):
        out = real(*args, **kwargs)
        open(path, "a").close()
        return out
    setattr(cls, method, marked)
sys.exit(importlib.import_module(sys.argv[1]).main(sys.argv[2:]))
"""


def _default_sigint() -> None:
    # a suite started in the background (`make test &`) ignores SIGINT, and children inherit
    # that (the commands honour an ignored SIGINT, as a background job should): the child gets
    # the default disposition, as from a terminal
    signal.signal(signal.SIGINT, signal.SIG_DFL)


class _SignalChild:
    """What `signal_child` hands out: `start` a command, `wait_for` a moment of it by the files
    it writes, then read its stderr's `lines` and what it `left` in a folder. A child still
    running when the test ends (it failed before its signal) is killed."""

    default_sigint = staticmethod(_default_sigint)

    def __init__(self) -> None:
        self.children: list[subprocess.Popen] = []

    def start(self, module: str, args: list[str], *, fsync_delay: float = 0.0,
              mark: tuple[str, Path] | None = None, as_module: bool = False,
              env: dict | None = None) -> subprocess.Popen:
        """`module`'s main(args) in a child (`python -m module args` with as_module, without
        the slow fsync and the mark), its output piped as text. mark: ("module:Class.method",
        a file made once that method has returned)."""
        argv = ([sys.executable, "-m", module] if as_module
                else [sys.executable, "-c", _CHILD, module])
        child_env = dict(os.environ if env is None else env,
                         TESSERA_TEST_FSYNC_DELAY=str(fsync_delay))
        if mark is not None:
            child_env["TESSERA_TEST_MARK"] = f"{mark[0]} {mark[1]}"
        proc = subprocess.Popen([*argv, *args], cwd=ROOT, env=child_env, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, preexec_fn=_default_sigint)
        self.children.append(proc)
        return proc

    def end(self) -> None:
        for proc in self.children:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()

    @staticmethod
    def wait_for(proc: subprocess.Popen, folder: Path, found: Callable[[Path], bool],
                 what: str) -> None:
        """Poll `folder` until a file in it is `found` (a file gone meanwhile is not); fail
        where the child ends first or a minute passes."""
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and proc.poll() is None:
            for p in folder.iterdir():
                try:
                    if found(p):
                        return
                except FileNotFoundError:
                    pass
            time.sleep(0.002)
        raise AssertionError(f"{what} was never seen (status {proc.poll()})")

    @staticmethod
    def wait_for_the_write(proc: subprocess.Popen, folder: Path) -> None:
        """Until a temporary file has data in it (the empty probe made before a build does not
        count)."""
        _SignalChild.wait_for(proc, folder,
                              lambda p: p.name.endswith(".tmp") and p.stat().st_size > 0,
                              "the write")

    @staticmethod
    def lines(err: str) -> list[str]:
        """stderr's lines, the first run's compile note aside."""
        return [line for line in err.splitlines() if not line.startswith(COMPILE_NOTE)]

    @staticmethod
    def left(folder: Path) -> list[str]:
        return sorted(p.name for p in folder.iterdir())


@pytest.fixture
def signal_child() -> Iterator[_SignalChild]:
    """Run a command in a subprocess and signal it at a moment its files show (see
    `_SignalChild`)."""
    child = _SignalChild()
    yield child
    child.end()
