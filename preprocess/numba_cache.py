"""Stale numba caches go before any kernel of the preprocessor loads: every module of it that
compiles with numba imports this first (reading a `.tess` through `preprocess.tess` does not, and
pays nothing)."""

from __future__ import annotations

import hashlib
from pathlib import Path


def _drop_stale_numba_caches() -> None:
    """numba keys a cached (`cache=True`) function by its own source file only: `dag._group_job`
    calls kernels of `simplify` and `cluster`, the OBJ kernel of `io.obj` the number parser of
    `io.text`, so after an update that changes those files and not the caller's, its cached code
    would be the old one, silently. So the package's numba caches (preprocess/__pycache__ and
    preprocess/io/__pycache__: *.nbi, *.nbc) go whenever any of its sources in those folders
    changed since they were written (a hash of the sources, ~1 ms); numba compiles afresh.
    Nothing happens where the caches live elsewhere (NUMBA_CACHE_DIR) or the folder is
    read-only."""
    here = Path(__file__).parent
    folders = (here, here / "io")
    cache = here / "__pycache__"
    try:
        digest = hashlib.sha1(b"".join(p.read_bytes() for folder in folders
                                       for p in sorted(folder.glob("*.py"))))
        stamp = cache / "numba-sources.sha1"
        if stamp.exists() and stamp.read_text() == digest.hexdigest():
            return
        for folder in folders:
            for f in [*folder.glob("__pycache__/*.nbi"), *folder.glob("__pycache__/*.nbc")]:
                f.unlink(missing_ok=True)
        cache.mkdir(exist_ok=True)
        stamp.write_text(digest.hexdigest())
    except OSError:
        pass




_drop_stale_numba_caches()
