"""The project's structure: no import cycles or imports running back up the layers
(tools/check_imports.py), and each entry point loads only the libraries it needs: reading a
`.tess` needs numpy alone, the core API none of the applications' libraries."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BUILDER = ("numba", "trimesh", "pymetis")
APPS = ("glfw", "imgui_bundle", "rendercanvas", "matplotlib", "pygfx", "tqdm")


def _loaded(code: str) -> list[str]:
    """The top-level modules a fresh interpreter has imported after running `code`."""
    probe = (code + "\nimport json, sys\n"
             "print(json.dumps(sorted({m.split('.')[0] for m in sys.modules})))")
    out = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True,
                         check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


@pytest.mark.slow
def test_no_import_cycle_and_nothing_imported_from_above() -> None:
    p = subprocess.run([sys.executable, str(ROOT / "tools" / "check_imports.py")],
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stdout


@pytest.mark.slow
def test_check_imports_finds_a_cycle_and_an_upward_import() -> None:
    """The checker itself: a planted cycle and a planted upward import are both reported."""
    sys.path.insert(0, str(ROOT / "tools"))
    try:
        import check_imports
    finally:
        sys.path.pop(0)
    assert check_imports.cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [
        ["a", "b", "c"]]
    g = check_imports.graph()
    g["preprocess.tess.pages"] = g["preprocess.tess.pages"] | {"preprocess.pack"}
    g["renderer.scene"] = g["renderer.scene"] | {"preprocess.mesh"}
    problems = check_imports.upward(g)
    assert any(p.startswith("preprocess.tess.pages imports preprocess.pack") for p in problems)
    assert any(p.startswith("renderer.scene imports preprocess.mesh") for p in problems)
    planted = {"preprocess.planted": "from preprocess.simplify import _twin, surface_walk\n"
                                     "from .mesh import _x\nfrom numpy import _y\n"}
    assert check_imports.private_imports(planted) == [
        "preprocess.planted imports the private preprocess.simplify._twin",
        "preprocess.planted imports the private .mesh._x"]


def test_reading_a_tess_file_needs_numpy_only(sphere_tess) -> None:
    loaded = _loaded(f"from preprocess.tess import read_tess\n"
                     f"from preprocess.tess.pages import decode_cluster, page_clusters\n"
                     f"f = read_tess({sphere_tess!r}, verify_pages=True)\n"
                     f"page_clusters(f.page(0))")
    assert not set(loaded) & {*BUILDER, "wgpu", *APPS}, loaded


def test_tessera_info_loads_no_builder_library(sphere_tess) -> None:
    loaded = _loaded(f"from renderer.apps.cli import main\n"
                     f"assert main(['info', {sphere_tess!r}, '--verify']) == 0")
    assert not set(loaded) & {*BUILDER, "wgpu", *APPS}, loaded


@pytest.mark.slow
@pytest.mark.gpu
def test_the_core_api_loads_no_application_library(sphere_tess) -> None:
    loaded = _loaded(f"from renderer import Camera, Renderer, RenderOptions\n"
                     f"r = Renderer(64, 64, options=RenderOptions())\n"
                     f"r.add_instance(r.load({sphere_tess!r}))\n"
                     f"assert r.render(Camera.framing(*r.bounds())).coverage.any()")
    assert "wgpu" in loaded
    # numba too stays out while nothing streams (renderer.streaming is imported to stream)
    assert not set(loaded) & {*APPS, *BUILDER}, loaded
