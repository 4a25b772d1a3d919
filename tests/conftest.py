"""Fixtures shared by the test modules: the GPU device (and the `gpu` marker that goes with it),
the shared meshes beside the checkout, the preprocessed sphere, and the helpers that drive the
viewer (a window under Xvfb, its load jobs, its panel through a bare imgui context).

Test modules never import each other: what two of them share lives here, handed out by fixtures.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from renderer.apps.loader import LoadJob

# ../shared/assets beside the checkout: the scanned meshes (stanford-bunny, igea, homer, ...)
SHARED_ASSETS = Path(__file__).resolve().parents[2] / "shared" / "assets"


# ---------------------------------------------------------------------------------------- the GPU


@pytest.fixture(scope="session")
def gpu():
    """The device every renderer in the process shares (`create_context` caches it); skips the
    test where there is no usable adapter. A test that asks for it, directly or through another
    fixture, is marked `gpu`; a test marked `gpu` gets it (see below)."""
    from renderer.device import DeviceError, create_context

    try:
        return create_context()
    except DeviceError as e:  # pragma: no cover - machines without any Vulkan driver
        pytest.skip(str(e))


@pytest.fixture(autouse=True)
def _gpu_marked_tests_need_a_device(request: pytest.FixtureRequest) -> None:
    # tests marked `gpu` that open their device themselves (through Renderer, the CLI or the
    # viewer) skip where there is none, as those that ask for `gpu` do
    if request.node.get_closest_marker("gpu"):
        request.getfixturevalue("gpu")


@pytest.hookimpl(tryfirst=True)  # before `-m` deselects by marker
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # the marker follows the fixture, so `-m "not gpu"` never opens a device
    for item in items:
        if "gpu" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.gpu)


# ------------------------------------------------------------------------------------------ assets


@pytest.fixture(scope="session", autouse=True)
def _config_folder(tmp_path_factory) -> None:
    """The viewer keeps its imgui settings in the config folder: a temporary one for the run
    (subprocesses inherit it), not the user's."""
    os.environ["TESSERA_CONFIG"] = str(tmp_path_factory.mktemp("config"))


@pytest.fixture(scope="session")
def shared_assets() -> Path:
    """The folder of shared meshes (../shared/assets beside the checkout; CI has it, a bare
    checkout may not: each test says whether its absence skips or fails)."""
    return SHARED_ASSETS


@pytest.fixture(scope="session")
def sphere_tess(tmp_path_factory) -> str:
    """A 20,000-triangle geodesic sphere of radius 1, preprocessed once for the whole run (the
    renderer, occlusion, viewer and scene-file tests only read it)."""
    from renderer.apps import cli

    path = tmp_path_factory.mktemp("shared") / "sphere.tess"
    assert cli.main(["preprocess", "--builtin", "sphere", "--triangles", "20000",
                     "-o", str(path), "-q"]) == 0
    return str(path)


# -------------------------------------------------------------------------------------- the viewer


def _run_viewer(args: list[str]) -> subprocess.CompletedProcess:
    xvfb = shutil.which("xvfb-run")
    assert xvfb, "xvfb-run missing: `make setup` installs it (apt install xvfb)"
    env = dict(os.environ)
    env.pop("DISPLAY", None)
    return subprocess.run([xvfb, "-a", sys.executable, "-m", "renderer.apps.cli", "view", *args],
                          capture_output=True, text=True, timeout=180, env=env)


@pytest.fixture(scope="session")
def run_viewer() -> Callable[[list[str]], subprocess.CompletedProcess]:
    """`tessera view ARGS` in a real window on a virtual X server (xvfb-run); returns the
    finished process."""
    return _run_viewer


def _finish(job: LoadJob, timeout: float = 120.0) -> LoadJob:
    assert job.finished.wait(timeout), f"job still at {job.stage} after {timeout} s"
    return job


@pytest.fixture(scope="session")
def finish() -> Callable[..., LoadJob]:
    """Waits for a viewer `LoadJob` to end (at most `timeout` seconds) and returns it."""
    return _finish


class _Imgui:
    """A bare imgui context (no window, no GPU): each `frame` feeds the mouse, runs the panel
    and ends the frame, as the window's ImguiRenderer would."""

    def __init__(self, app) -> None:
        from imgui_bundle import imgui

        self.imgui, self.app = imgui, app
        self.ctx = imgui.create_context()
        io = imgui.get_io()
        io.display_size = (800, 600)
        io.backend_flags |= imgui.BackendFlags_.renderer_has_textures
        self.frame()
        self.frame()

    def frame(self, pos=None, down: bool = False, dt: float = 1 / 60) -> None:
        from renderer.apps.panel import draw_panel

        im = self.imgui
        io = im.get_io()
        if pos is not None:
            io.add_mouse_pos_event(*pos)
        io.add_mouse_button_event(0, down)
        io.delta_time = dt
        self.app.frame(dt)
        im.new_frame()
        draw_panel(self.app)
        im.render()

    def click(self, label: str, fx: float = 0.5, item: int | None = None) -> None:
        """Click a widget at fraction fx of its width; with `item`, then pick that entry of the
        combo list it opened (entries are one text line apart below the widget)."""
        x0, y0, x1, y1 = self.app.panel_rects[label]
        p = (x0 + (x1 - x0) * fx, (y0 + y1) / 2)
        self.frame(p, False, dt=0.5)  # a pause: no double click with the last one
        self.frame(p, True)
        self.frame(p, False)
        if item is not None:
            im = self.imgui
            line = im.get_text_line_height_with_spacing()
            q = (p[0], y1 + im.get_style().window_padding.y + (item + 0.5) * line)
            for down in (False, True, False):
                self.frame(q, down)

    def close(self) -> None:
        self.imgui.destroy_context(self.ctx)


@pytest.fixture(scope="session")
def imgui_panel() -> type[_Imgui]:
    """The class that drives a `ViewerApp`'s panel with fed mouse events: `ui = imgui_panel(app)`,
    then `ui.frame()`, `ui.click(label)`, and `ui.close()` at the end."""
    return _Imgui
