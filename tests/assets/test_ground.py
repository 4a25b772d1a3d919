"""The ground plane's cached file (`assets.ground.ground_tess`): built once into the user's cache
folder, and built again where the cached file does not open cleanly: one of an older format
version (what a user has after an update) or a damaged one, never an error."""

from __future__ import annotations

from pathlib import Path

import pytest

from assets.ground import GROUND_CELLS, ground_tess
from preprocess.tess import read_tess
from preprocess.tess.container import TESS_VERSION


@pytest.mark.parametrize("stale", ["older-version", "damaged"])
def test_a_stale_cached_ground_is_rebuilt(stale, tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    path = Path(ground_tess())
    assert path == tmp_path / "tessera" / f"ground-{GROUND_CELLS}.tess"
    data = bytearray(path.read_bytes())
    if stale == "older-version":
        data[8:12] = (TESS_VERSION - 1).to_bytes(4, "little")  # the header's version field
    else:
        data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))
    with pytest.raises(ValueError):
        with read_tess(path, verify_pages=True) as f:
            f.verify_all()
    assert ground_tess() == str(path)
    with read_tess(path, verify_pages=True) as f:  # rebuilt: opens, every page checks out
        f.verify_all()
        assert f.version == TESS_VERSION
