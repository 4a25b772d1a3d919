"""The load's steps timed (read, weld, clean, normals, wedges, checks) for the build's summary:
`load_mesh(steps=...)` records into a dict while it runs (`recording`), and each step of the
loader that is worth a line says where it starts and ends (`step`); nothing is recorded, at no
cost, when nobody asked. The summary shows them in the order of
`preprocess.tess.summary.LOAD_STEPS`."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from contextvars import ContextVar

_record: ContextVar[dict[str, float] | None] = ContextVar("load_steps", default=None)


@contextlib.contextmanager
def recording(into: dict[str, float] | None) -> Iterator[None]:
    """Steps timed inside this block add their seconds to ``into`` (None: nothing recorded)."""
    token = _record.set(into)
    try:
        yield
    finally:
        _record.reset(token)


@contextlib.contextmanager
def step(name: str) -> Iterator[None]:
    """Time one step of the load (its seconds added to the recording, if any)."""
    into = _record.get()
    if into is None:
        yield
        return
    t = time.perf_counter()
    try:
        yield
    finally:
        into[name] = into.get(name, 0.0) + time.perf_counter() - t
