"""`tessera view`: a glfw window (through rendercanvas) showing a scene drawn by the renderer,
with imgui-bundle panels for statistics and controls.

`Viewer` is the window around a `renderer.apps.viewer_app.ViewerApp` (everything but the window):
each frame the renderer draws into its color buffer (the headless path, same passes), a
full-screen triangle blits it into the window's texture (shaders/blit.wgsl), and imgui draws the
panel (`renderer.apps.panel`) on top. A file dropped on the window opens like one given on the
command line. With `frames` set, the viewer closes itself after that many frames of the loaded
scene and can save the window (panel included) to a PNG first.
"""


from __future__ import annotations

import os
import time
from pathlib import Path

import numpy as np
import wgpu

from renderer.options import RenderOptions
from renderer.results import write_png
from renderer.gpu import READ, UNIFORM, Binding, bind_group, bind_group_layout, shader_module

from renderer.apps.viewer_app import ViewerApp, ViewerOptions

BLIT_BINDINGS = (
    Binding("frame", UNIFORM, "Frame", wgpu.ShaderStage.FRAGMENT),
    Binding("color", READ, "array<u32>", wgpu.ShaderStage.FRAGMENT),
)


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

            from renderer.apps.panel import draw_panel

            self.imgui = ImguiRenderer(self.device, self.canvas, render_target_format=fmt)
            self.imgui.set_gui(lambda: draw_panel(self.app))
            self._keep_imgui_settings()
        self.canvas.add_event_handler(self._on_event, "pointer_down", "pointer_up",
                                      "pointer_move", "wheel", "key_down", "key_up")
        self.canvas.add_event_handler(self._on_resize, "resize")
        self.canvas.add_event_handler(lambda e: self.app.close(), "close")
        self._hook_drop()
        self.canvas.request_draw(self._draw)

    def _keep_imgui_settings(self) -> None:
        """imgui saves its window layout to `imgui.ini` in the working directory by default;
        keep it in the user's config folder instead (TESSERA_CONFIG, else
        $XDG_CONFIG_HOME/tessera or ~/.config/tessera), or nowhere if that cannot be made."""
        from imgui_bundle import imgui

        folder = Path(os.environ.get("TESSERA_CONFIG") or Path(
            os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config") / "tessera")
        try:
            folder.mkdir(parents=True, exist_ok=True)
            imgui.get_io().set_ini_filename(str(folder / "imgui.ini"))
        except OSError:
            imgui.get_io().set_ini_filename(None)  # settings for this session only

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
        f = self.renderer.frame.resources
        if pw > 0 and ph > 0 and (pw, ph) != (f.width, f.height):
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
            f = r.frame.resources
            if self._blit_group_gen != f.generation:
                self._blit_group = bind_group(self.device, self._blit_bgl, BLIT_BINDINGS,
                                              f.buffers, "blit.bind_group")
                self._blit_group_gen = f.generation
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
