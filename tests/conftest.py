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


class _TessParts:
    """A `.tess` file's parts as writable copies, for `craft_tess` to edit: `meta` (a dict),
    `sections` (name -> array), `pages` ((P, page_size) uint8), `page_flags` ((P,) uint32)."""

    def __init__(self, meta: dict, sections: dict, pages, page_flags) -> None:
        self.meta, self.sections, self.pages, self.page_flags = meta, sections, pages, page_flags

    def header(self, p: int):
        """Page p's header (PAGE_HEADER_DTYPE), a writable view."""
        from preprocess.tess.records import PAGE_HEADER_DTYPE

        return self.pages[p, : PAGE_HEADER_DTYPE.itemsize].view(PAGE_HEADER_DTYPE)[0]

    def records(self, p: int):
        """Page p's cluster records (CLUSTER_DTYPE), a writable view."""
        from preprocess.tess.records import CLUSTER_DTYPE, PAGE_HEADER_DTYPE

        start = PAGE_HEADER_DTYPE.itemsize
        n = int(self.header(p)["cluster_count"])
        return self.pages[p, start : start + n * CLUSTER_DTYPE.itemsize].view(CLUSTER_DTYPE)


def _craft_tess(src, dst, edit: Callable[[_TessParts], None]) -> Path:
    """Copy the `.tess` file `src` to `dst` with `edit(parts)` applied to its parts: written
    with the container's own writer, which computes every checksum again. So the bytes are
    whole and the values what the edit made them, as a file from another writer or edited on
    purpose would be."""
    import json

    import numpy as np

    from preprocess.tess.container import TessFile, write_tess

    with TessFile(src) as f:  # the plain container: the bytes checked, not the values
        parts = _TessParts(json.loads(json.dumps(f.meta)),
                           {k: np.array(v) for k, v in f.sections.items()},
                           np.array(f.pages_array()), np.array(f.page_flags))
    edit(parts)
    write_tess(dst, meta=parts.meta, sections=parts.sections, pages=parts.pages,
               page_flags=parts.page_flags)
    return Path(dst)


@pytest.fixture(scope="session")
def craft_tess() -> Callable[..., Path]:
    """`craft_tess(src, dst, edit)`: a copy of a `.tess` file with `edit(parts)` applied to its
    meta, sections, pages and page flags (`_TessParts`: `records(p)`, `header(p)` are views of
    page p), its checksums computed again (tests/preprocess/tess/test_checks.py,
    tests/renderer/apps/test_cli_errors.py)."""
    return _craft_tess


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
        io.display_size = (800, 800)  # the whole panel, the sun's sliders too
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


# ------------------------------------------------------------------------------------ glTF scenes

def _rewrite_glb(path, edit) -> None:
    """Apply `edit(tree)` to a GLB's JSON chunk, keeping its BIN chunk."""
    import json
    import struct

    raw = path.read_bytes()
    n = struct.unpack("<I", raw[12:16])[0]
    tree = json.loads(raw[20 : 20 + n])
    edit(tree)
    text = json.dumps(tree).encode()
    text += b" " * (-len(text) % 4)
    rest = raw[20 + n :]
    body = struct.pack("<II", len(text), 0x4E4F534A) + text + rest
    path.write_bytes(b"glTF" + struct.pack("<II", 2, 12 + len(body)) + body)


def _quat(axis, degrees):
    import numpy as np

    a = np.radians(degrees) / 2
    x, y, z = np.asarray(axis, float) / np.linalg.norm(axis) * np.sin(a)
    return [x, y, z, np.cos(a)]


def _street(path):
    """A GLB: a lamp post (a tall box) used by three nodes under a rotated, translated parent
    (one of them mirrored by a negative scale), and a ball used by one node; the meshes' two
    glTF copies of the post share accessors, as trimesh writes them."""
    import trimesh

    post = trimesh.creation.box(extents=(0.2, 2.0, 0.2))
    post.apply_translation((0.3, 1.0, 0.0))  # off-centre, so that a mirror shows
    ball = trimesh.creation.icosphere(subdivisions=2, radius=0.4)
    s = trimesh.Scene()
    for k in range(3):
        s.add_geometry(post, geom_name="post", node_name=f"post{k}")
    s.add_geometry(ball, geom_name="ball", node_name="ball")
    s.export(path)

    def edit(tree):
        nodes = tree["nodes"]
        posts = [i for i, n in enumerate(nodes) if n["name"].startswith("post")]
        ball = next(i for i, n in enumerate(nodes) if n["name"] == "ball")
        for k, i in enumerate(posts):
            nodes[i].pop("matrix", None)
            nodes[i]["translation"] = [2.0 * k, 0.0, 0.0]
        nodes[posts[2]]["scale"] = [-1.0, 1.0, 1.0]
        nodes[ball]["translation"] = [0.0, 2.4, 0.0]
        nodes.append({"name": "street", "children": [*posts, ball],
                      "translation": [1.0, 0.0, -3.0], "rotation": _quat((0, 1, 0), 90)})
        tree["scenes"] = [{"nodes": [len(nodes) - 1]}]
        tree["scene"] = 0

    _rewrite_glb(path, edit)
    return path


def _street_worlds():
    """The world matrices of `street`'s nodes, composed by hand: parent T * R, child T (* S)."""
    import numpy as np

    parent = np.eye(4)
    parent[:3, :3] = [[0, 0, 1], [0, 1, 0], [-1, 0, 0]]  # 90 degrees about +y
    parent[:3, 3] = [1.0, 0.0, -3.0]
    out = []
    for k in range(3):
        child = np.eye(4)
        child[0, 3] = 2.0 * k
        if k == 2:
            child = child @ np.diag([-1.0, 1.0, 1.0, 1.0])
        out.append(parent @ child)
    ball = np.eye(4)
    ball[1, 3] = 2.4
    out.append(parent @ ball)
    return out



def _fence(path):
    """A GLB: a fence (a quad whose base-colour texture's alpha is a checker of 8 x 8 holes,
    glTF MASK at 0.5) in front of an opaque wall of another material."""
    import numpy as np
    import trimesh
    from PIL import Image

    def quad(z, size):
        v = np.array([[-1, -1, z], [1, -1, z], [1, 1, z], [-1, 1, z]], float) * [size, size, 1]
        g = trimesh.Trimesh(v, [[0, 1, 2], [0, 2, 3]], process=False).subdivide().subdivide()
        return g, (g.vertices[:, :2] / size + 1) / 2

    rgba = np.zeros((64, 64, 4), np.uint8)
    rgba[..., :3] = (230, 180, 40)
    rgba[..., 3] = ((np.indices((64, 64)) // 8).sum(axis=0) % 2) * 255
    front, front_uv = quad(0.5, 1.0)
    front.visual = trimesh.visual.TextureVisuals(
        uv=front_uv, material=trimesh.visual.material.PBRMaterial(
            name="fence", baseColorTexture=Image.fromarray(rgba, "RGBA"), alphaMode="MASK",
            alphaCutoff=0.5, metallicFactor=0.0, roughnessFactor=0.7))
    back, _ = quad(0.0, 1.5)
    back.visual = trimesh.visual.TextureVisuals(material=trimesh.visual.material.PBRMaterial(
        name="wall", baseColorFactor=(0.2, 0.4, 0.9, 1.0), metallicFactor=0.0,
        roughnessFactor=0.5))
    scene = trimesh.Scene()
    scene.add_geometry(front, geom_name="fence", node_name="fence")
    scene.add_geometry(back, geom_name="wall", node_name="wall")
    scene.export(path)
    return path


@pytest.fixture(scope="session")
def gltf_fence() -> Callable:
    """`gltf_fence(path)` writes a GLB: a fence with a checker of alpha cut-outs (glTF MASK)
    in front of an opaque wall (tests/renderer/test_materials.py, test_shadows.py)."""
    return _fence


def _balls(path, subdivisions: int = 5, offset: float = 0.0):
    """A GLB of four meshes, a node each: icospheres of 20 * 4**subdivisions triangles (20,480
    by default: a few tenths of a second to build each) and radii 0.5 to 0.8, in a row along x
    from `offset`, named ball0 .. ball3."""
    import numpy as np
    import trimesh

    s = trimesh.Scene()
    for k in range(4):
        ball = trimesh.creation.icosphere(subdivisions=subdivisions, radius=0.5 + 0.1 * k)
        place = np.eye(4)
        place[0, 3] = offset + 2.0 * k
        s.add_geometry(ball, geom_name=f"ball{k}", node_name=f"ball{k}", transform=place)
    s.export(path)
    return path


@pytest.fixture(scope="session")
def gltf_balls() -> Callable:
    """`gltf_balls(path, subdivisions=5, offset=0.0)` writes a glTF scene of four distinct
    meshes, each a while to build: the moments between them are where the signal tests
    (tests/renderer/apps/test_signals.py) stop a scene's build."""
    return _balls


class _Street:
    """What `gltf_street` hands out: `write(path)` writes the GLB, `worlds()` its nodes' world
    matrices composed by hand, `rewrite(path, edit)` edits a GLB's JSON."""

    write = staticmethod(_street)
    worlds = staticmethod(_street_worlds)
    rewrite = staticmethod(_rewrite_glb)


@pytest.fixture(scope="session")
def gltf_street() -> type[_Street]:
    """A glTF scene as authored: a lamp post used by three nodes (one mirrored) under a rotated,
    translated parent, and a ball in a fourth node (tests/preprocess/test_scene_import.py,
    tests/renderer/apps/test_scene_render.py)."""
    return _Street
