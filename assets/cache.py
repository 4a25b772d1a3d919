"""Built-in assets built once into the user's cache folder ($XDG_CACHE_HOME/tessera, else
~/.cache/tessera), atomically, and again where the cached file does not open cleanly (an older
format version, a damaged file): the ground plane of `--ground`, the forest's assets."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from preprocess.mesh import Mesh


def cache_folder() -> Path:
    """$XDG_CACHE_HOME/tessera, else ~/.cache/tessera."""
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "tessera"


def cached_tess(filename: str, make_mesh: Callable[[], Mesh]) -> str:
    """The `.tess` called `filename` in the cache folder, built from `make_mesh()` where it is
    missing or unusable (`usable`); its path."""
    path = cache_folder() / filename
    if not usable(path):
        from preprocess.build import build_file

        path.parent.mkdir(parents=True, exist_ok=True)
        build_file(make_mesh(), path)
    return str(path)


def usable(path: Path) -> bool:
    """Whether a cached file opens cleanly: header, version, the checksums of its sections and of
    every page (built-in assets are small: all of them are read)."""
    from preprocess.tess.reader import read_tess

    try:
        with read_tess(path, verify_pages=True) as f:
            f.verify_all()
            return True
    except (OSError, ValueError):  # missing, unreadable, or a TessFormatError
        return False
