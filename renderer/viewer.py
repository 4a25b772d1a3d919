"""`tessera view`: a glfw window (through rendercanvas) showing a scene drawn by the renderer,
with imgui-bundle panels for statistics and controls.

Two layers:
- `ViewerApp` holds everything but the window: the renderer, the scene being opened (a
  `renderer.loader.LoadJob` in a background thread: meshes are preprocessed there while the
  window keeps drawing a progress bar), the camera controls, and the panel's settings with the
  actions that change them (`open`, `set_grid`, `set_traversal`, ...). Tests drive it by events,
  without a window; `renderer.panel` draws its panel with imgui.
- `Viewer` is the window: each frame the renderer draws into its color buffer (the headless
  path, same passes), a full-screen triangle blits it into the window's texture
  (shaders/blit.wgsl), and imgui draws the panel on top. A file dropped on the window opens like
  one given on the command line. With `frames` set, the viewer closes itself after that many
  frames of the loaded scene and can save the window (panel included) to a PNG first.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import wgpu

from renderer.camera import Camera
from renderer.controls import CameraControls
from renderer.frame import Renderer, RenderOptions, grid_offsets, write_png
from renderer.gpu import READ, UNIFORM, Binding, bind_group, bind_group_layout, shader_module
from renderer.loader import LoadJob

PANEL_WIDTH = 300  # logical pixels, at the top left
MAX_GRID = 65536  # the instance grid slider's top

BLIT_BINDINGS = (
    Binding("frame", UNIFORM, "Frame", wgpu.ShaderStage.FRAGMENT),
    Binding("color", READ, "array<u32>", wgpu.ShaderStage.FRAGMENT),
)


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


class ViewerApp:
    """The viewer without its window (see the module docstring)."""

    def __init__(self, source: str | None, width: int, height: int,
                 options: ViewerOptions | None = None,
                 render_options: RenderOptions | None = None) -> None:
        self.opts = options or ViewerOptions()
        self.renderer = Renderer(max(width, 1), max(height, 1), options=render_options)
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
        self._base: list[tuple[int, np.ndarray]] = []  # the scene's own instances
        self._scene_radius = 1.0
        self.open(source)

    # ------------------------------------------------------------------ opening

    def open(self, source: str | None) -> None:
        """Start opening a .tess, mesh or scene file (None: the built-in rock) in the
        background; the current scene stays on screen until the new one is ready."""
        if self.job is not None and not self.job.finished.is_set():
            self.job.cancel()
        self.message = None
        self.job = LoadJob(source).start()

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
        self._base = list(zip(r.scene.instance_asset, r.scene.instance_world, strict=True))
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
        for asset, m in self._base:
            worlds = np.repeat(m[None], n, axis=0)
            worlds[:, :3, 3] += offsets.astype(np.float32)
            r.scene.add_instances(asset, worlds)

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


class Viewer:
    """The interactive window. `run()` returns when the window closes (or after `frames`)."""

    def __init__(self, source: str | None, options: ViewerOptions | None = None,
                 render_options: RenderOptions | None = None) -> None:
        from rendercanvas.glfw import RenderCanvas

        self.opts = options or ViewerOptions()
        w, h = self.opts.size
        self.canvas = RenderCanvas(size=(w, h), title="Tessera", vsync=self.opts.vsync,
                                   update_mode="continuous")
        pw, ph = self.canvas.get_physical_size()
        self.app = ViewerApp(source, pw, ph, self.opts, render_options)
        self.renderer = self.app.renderer
        self.device = self.renderer.device
        self.context = self.canvas.get_wgpu_context()
        fmt = self.context.get_preferred_format(self.renderer.ctx.adapter).replace("-srgb", "")
        self.format = fmt
        self.context.configure(device=self.device, format=fmt,
                               usage=wgpu.TextureUsage.RENDER_ATTACHMENT
                               | wgpu.TextureUsage.COPY_SRC)
        self._last = time.perf_counter()
        self._title = None
        self._screenshot_rgba: np.ndarray | None = None
        module = shader_module(self.device, "blit.wgsl", BLIT_BINDINGS, label="blit.shader")
        self._blit_bgl = bind_group_layout(self.device, BLIT_BINDINGS, "blit.bind_group_layout")
        self._blit = self.device.create_render_pipeline(
            layout=self.device.create_pipeline_layout(bind_group_layouts=[self._blit_bgl],
                                                      label="blit.layout"),
            vertex={"module": module, "entry_point": "vs_main", "buffers": []},
            primitive={"topology": "triangle-list"},
            depth_stencil=None, multisample={"count": 1},
            fragment={"module": module, "entry_point": "fs_main", "targets": [{"format": fmt}]},
            label="blit.pipeline")
        self._blit_group_gen = -1
        self.imgui = None
        if self.opts.panel:
            from wgpu.utils.imgui import ImguiRenderer

            from renderer.panel import draw_panel

            self.imgui = ImguiRenderer(self.device, self.canvas, render_target_format=fmt)
            self.imgui.set_gui(lambda: draw_panel(self.app))
        self.canvas.add_event_handler(self._on_event, "pointer_down", "pointer_up",
                                      "pointer_move", "wheel", "key_down", "key_up")
        self.canvas.add_event_handler(self._on_resize, "resize")
        self.canvas.add_event_handler(lambda e: self.app.close(), "close")
        self._hook_drop()
        self.canvas.request_draw(self._draw)

    def _hook_drop(self) -> None:
        """Files dropped on the window open like a command-line argument (glfw's drop callback;
        rendercanvas has no drop event)."""
        import glfw

        window = getattr(self.canvas, "_window", None)
        if window is not None:
            glfw.set_drop_callback(window, lambda _w, paths: paths and self.app.open(paths[0]))

    # ------------------------------------------------------------------ events

    def _on_event(self, event: dict) -> None:
        mouse = keyboard = False
        if self.imgui is not None:
            from imgui_bundle import imgui

            io = imgui.get_io()
            mouse, keyboard = io.want_capture_mouse, io.want_capture_keyboard
        self.app.handle_event(event, ui_mouse=mouse, ui_keyboard=keyboard)

    def _on_resize(self, event: dict) -> None:
        pw, ph = self.canvas.get_physical_size()
        if pw > 0 and ph > 0 and (pw, ph) != (self.renderer.frame.width,
                                              self.renderer.frame.height):
            self.renderer.resize(pw, ph)

    # ------------------------------------------------------------------ the frame

    def _draw(self) -> None:
        now = time.perf_counter()
        dt, self._last = now - self._last, now
        app, r = self.app, self.renderer
        drawn = app.frame(dt)
        title = f"Tessera: {app.title}" if app.title else "Tessera"
        if app.loading:
            title += f" (opening {app.job.title})"
        if title != self._title:
            self.canvas.set_title(title)
            self._title = title
        tex = self.context.get_current_texture()
        enc = self.device.create_command_encoder(label="viewer.blit")
        rp = enc.begin_render_pass(color_attachments=[{
            "view": tex.create_view(), "load_op": "clear", "store_op": "store",
            "clear_value": (0.08, 0.08, 0.09, 1)}], label="viewer.blit")
        if drawn:
            if self._blit_group_gen != r.frame.generation:
                self._blit_group = bind_group(self.device, self._blit_bgl, BLIT_BINDINGS,
                                              r.frame.buffers, "blit.bind_group")
                self._blit_group_gen = r.frame.generation
            rp.set_pipeline(self._blit)
            rp.set_bind_group(0, self._blit_group)
            rp.draw(3)
        rp.end()
        self.device.queue.submit([enc.finish()])
        if self.imgui is not None:
            self.imgui.render()
        if app.screenshot_requested:  # the panel's button: after the panel is drawn
            path, app.screenshot_requested = app.screenshot_requested, None
            try:
                write_png(path, self._read_texture(tex))
                app.message = f"saved {Path(path).resolve()}"
            except OSError as e:
                app.message = f"cannot save the screenshot: {e}"
        done = self.opts.frames and drawn and app.frames_drawn >= self.opts.frames
        failed = self.opts.frames and app.error is not None and not app.loading
        if done and self.opts.screenshot:
            self._screenshot_rgba = self._read_texture(tex)
            write_png(self.opts.screenshot, self._screenshot_rgba)
        if done or failed:
            self.canvas.close()

    def _read_texture(self, tex) -> np.ndarray:
        w, h = tex.size[0], tex.size[1]
        bpr = (w * 4 + 255) // 256 * 256
        buf = self.device.create_buffer(size=bpr * h, usage=wgpu.BufferUsage.COPY_DST
                                        | wgpu.BufferUsage.MAP_READ, label="viewer.screenshot")
        enc = self.device.create_command_encoder(label="viewer.screenshot")
        enc.copy_texture_to_buffer({"texture": tex, "mip_level": 0, "origin": (0, 0, 0)},
                                   {"buffer": buf, "offset": 0, "bytes_per_row": bpr,
                                    "rows_per_image": h}, (w, h, 1))
        self.device.queue.submit([enc.finish()])
        buf.map_sync(wgpu.MapMode.READ)
        raw = np.frombuffer(buf.read_mapped(), np.uint8).reshape(h, bpr)[:, : w * 4]
        img = raw.reshape(h, w, 4).copy()
        buf.unmap()
        if self.format.startswith("bgra"):
            img = img[..., [2, 1, 0, 3]]
        return img

    def run(self) -> None:
        from rendercanvas.glfw import loop

        try:
            loop.run()
        finally:
            self.app.close()
