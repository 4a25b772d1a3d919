"""Fixtures shared by the test modules."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def sphere_tess(tmp_path_factory) -> str:
    """A 20,000-triangle geodesic sphere of radius 1, preprocessed once for the whole run (the
    renderer, occlusion, viewer and scene-file tests only read it)."""
    from renderer.apps import cli

    path = tmp_path_factory.mktemp("shared") / "sphere.tess"
    assert cli.main(["preprocess", "--builtin", "sphere", "--triangles", "20000",
                     "-o", str(path), "-q"]) == 0
    return str(path)
