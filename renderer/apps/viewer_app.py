"""The viewer without its window: `ViewerApp` holds the renderer, the scene being opened (a
`renderer.apps.loader.LoadJob` in a background thread: meshes are preprocessed there while the
window keeps drawing a progress bar), the camera controls, and the panel's settings with the
actions that change them (`open`, `set_grid`, `set_traversal`, ...). Tests drive it by events,
without a window; `renderer.apps.panel` draws its panel with imgui and `renderer.apps.viewer`
is the window around it.
"""


from __future__ import annotations

import sys
import time
from dataclasses import dataclass

import numpy as np

from renderer.camera import Camera
from renderer.apps.controls import CameraControls
from renderer.renderer import Renderer
from renderer.options import DEFAULT_SUN, RenderOptions
from renderer.scene import grid_offsets
from renderer.apps.loader import LoadJob

PANEL_WIDTH = 300  # logical pixels, at the top left
MAX_GRID = 65536  # the instance grid slider's top

@dataclass
class ViewerOptions:
    """How the viewer starts."""

    size: tuple[int, int] = (1280, 800)  # window size
    vsync: bool = True
    frames: int = 0  # close after this many frames of the scene (0: run until closed)
    screenshot: str | None = None  # save the last frame (panel included) to this PNG
    instances: int = 1  # copies of the scene on a grid
    camera: Camera | None = None  # start here (default: the scene file's camera, or framed)
    panel: bool = True
    up: str | None = None  # the up axis of the mesh file opened first (loader.LoadJob.up)


class ViewerApp:
    """The viewer without its window (see the module docstring)."""

    def __init__(self, source: str | None, width: int, height: int,
                 options: ViewerOptions | None = None,
                 render_options: RenderOptions | None = None) -> None:
        self.opts = options or ViewerOptions()
        self.renderer = Renderer(max(width, 1), max(height, 1), options=render_options)
        self.last_sun = self.renderer.sun or DEFAULT_SUN  # the panel's sun checkbox brings it back
        self.controls = CameraControls(Camera(), scene_radius=1.0)
        self.tau = self.renderer.options.tau
        self.debug_view = 0
        self.freeze = False
        self.grid_count = max(1, self.opts.instances)
        self.grid_spacing = 1.0  # in scene diameters
        self.title = ""  # what is shown (file name)
        self.job: LoadJob | None = None
        self.message: str | None = None  # shown in the panel (an error, a saved screenshot)
        self.error: str | None = None  # the last failed open (for scripts: exit status)
        self.ready = False  # a scene is loaded and drawn
        self.frames_drawn = 0  # frames of a loaded scene
        self.frame_ms: list[float] = []
        self.screenshot_requested: str | None = None
        self.panel_rects: dict[str, tuple[float, float, float, float]] = {}  # for tests
        self.panel_passes: list[str] = []  # GPU passes listed in the panel
        # the scene's own instances: their assets (n,) and transform rows (n, 3, 4)
        self._base: tuple[np.ndarray, np.ndarray] = (np.zeros(0, np.int32),
                                                     np.zeros((0, 3, 4), np.float32))
        self._scene_radius = 1.0
        self.open(source, up=self.opts.up)

    # ------------------------------------------------------------------ opening

    def open(self, source: str | None, *, up: str | None = None) -> None:
        """Start opening a .tess, mesh or scene file (None: the built-in rock) in the
        background, a mesh file's up axis being `up` (see `renderer.apps.loader`); the current
        scene stays on screen until the new one is ready."""
        if self.job is not None and not self.job.finished.is_set():
            self.job.cancel()
        self.message = None
        self.job = LoadJob(source, up).start()

    @property
    def loading(self) -> bool:
        return self.job is not None and not self.job.finished.is_set()

    def poll(self) -> None:
        """Install a finished job's scene (main thread: it uploads to the GPU)."""
        job = self.job
        if job is None or not job.finished.is_set():
            return
        self.job = None
        if job.error is not None:
            self.error = job.error
            if job.error != "cancelled":
                self.message = f"cannot open {job.title}: {job.error}"
                print(f"tessera: error: {job.error}", file=sys.stderr)
            return
        try:
            self._install(job)
        except (OSError, ValueError) as e:  # SceneError: a .tess the renderer refuses
            self.error = str(e)
            self.message = f"cannot open {job.title}: {e}"
            print(f"tessera: error: {e}", file=sys.stderr)
            return
        self.error = None
        if job.built:
            self.message = f"preprocessed in {job.seconds:.1f} s, cached: {job.built[-1]}"

    def _install(self, job: LoadJob) -> None:
        r = self.renderer
        r.clear_scene()
        if job.spec is not None:
            job.spec.apply(r, job.tess)
            camera = self.opts.camera or job.spec.camera
        else:
            r.add_instance(r.load(next(iter(job.tess.values()))))
            camera = self.opts.camera
        self._base = (r.scene.instance_asset.copy(), r.scene.store.rows.copy())
        center, self._scene_radius = r.bounds()
        self.title = job.title
        self._place_grid()
        center, radius = r.bounds()
        if camera is not None and not self.ready:  # a start camera applies to the first scene
            self.controls.camera = Camera(eye=np.asarray(camera.eye, np.float64),
                                          target=np.asarray(camera.target, np.float64),
                                          fov_y=camera.fov_y, near=camera.near)
            self.controls.scene_radius = radius
        else:
            self.controls.camera = Camera.framing(center, radius)
            self.controls.scene_radius = radius
        self.ready = True

    # ------------------------------------------------------------------ actions

    def _place_grid(self) -> None:
        """The scene's own instances, copied on a square grid of `grid_count` cells in the XZ
        plane, `grid_spacing` scene diameters apart."""
        r = self.renderer
        r.scene.clear_instances()
        n = self.grid_count
        offsets = grid_offsets(n, 2 * self._scene_radius * self.grid_spacing)
        assets, rows = self._base
        for asset in np.unique(assets):  # every copy of an asset's instances in one call
            mine = rows[assets == asset]
            worlds = np.repeat(mine[None], n, axis=0)  # (n, k, 3, 4)
            worlds[:, :, :, 3] += offsets.astype(np.float32)[:, None, :]
            r.scene.add_instances(int(asset), worlds.reshape(-1, 3, 4))

    def set_grid(self, count: int, spacing: float | None = None) -> None:
        self.grid_count = int(min(max(count, 1), MAX_GRID))
        if spacing is not None:
            self.grid_spacing = float(spacing)
        if self.ready:
            self._place_grid()

    def set_traversal(self, persistent: bool) -> None:
        self.renderer.set_traversal(persistent)

    def set_occlusion(self, enabled: bool) -> None:
        self.renderer.set_occlusion(enabled)

    def set_shadows(self, enabled: bool) -> None:
        self.renderer.set_shadows(enabled)

    def set_sun(self, azimuth: float | None, elevation: float | None = None) -> None:
        """Move the sun, or take it away (None; the panel's checkbox brings the last back)."""
        if self.renderer.sun is not None:
            self.last_sun = self.renderer.sun
        self.renderer.set_sun(azimuth, elevation)

    def frame_scene(self) -> None:
        if self.ready:
            self.controls.frame_scene(*self.renderer.bounds())

    def request_screenshot(self, path: str | None = None) -> None:
        self.screenshot_requested = path or time.strftime("tessera-%Y%m%d-%H%M%S.png")

    def handle_event(self, event: dict, *, ui_mouse: bool = False,
                     ui_keyboard: bool = False) -> None:
        """A rendercanvas event: to the camera, unless the panel wants it (`ui_*`)."""
        kind = event.get("event_type", "")
        if kind.startswith("pointer") or kind == "wheel":
            if ui_mouse and kind != "pointer_up":
                return
        elif ui_keyboard:
            return
        if kind == "key_down" and str(event.get("key", "")).lower() == "f":
            self.frame_scene()
            return
        self.controls.handle_event(event)

    # ------------------------------------------------------------------ the frame

    def frame(self, dt: float) -> bool:
        """Advance by dt seconds and submit a frame; False while there is nothing to draw."""
        self.poll()
        self.frame_ms.append(dt * 1e3)
        del self.frame_ms[:-60]
        if not self.ready:
            return False
        self.controls.update(min(dt, 0.1))
        self.renderer.submit(self.controls.camera, tau=self.tau, debug_view=self.debug_view,
                             freeze_culling=self.freeze)
        self.frames_drawn += 1
        return True

    def close(self) -> None:
        if self.job is not None:
            self.job.cancel()
