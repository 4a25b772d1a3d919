"""`tessera view`: a glfw window (through rendercanvas) showing a scene drawn by the renderer,
with imgui-bundle panels for statistics and controls.

Each window frame: the renderer draws the scene into its color buffer (headless path, same
passes), a full-screen triangle blits it into the window's texture (shaders/blit.wgsl), and imgui
draws the panel on top. With ``frames`` set, the viewer closes itself after that many frames and
can save the window (panel included) to a PNG first: for scripts and tests.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import wgpu

from renderer.camera import Camera
from renderer.controls import CameraControls
from renderer.frame import Renderer, RenderOptions, write_png
from renderer.frame_views import DEBUG_VIEWS
from renderer.gpu import READ, UNIFORM, Binding, bind_group, bind_group_layout, shader_module

PANEL_WIDTH = 300  # logical pixels, at the top left

BLIT_BINDINGS = (
    Binding("frame", UNIFORM, "Frame", wgpu.ShaderStage.FRAGMENT),
    Binding("color", READ, "array<u32>", wgpu.ShaderStage.FRAGMENT),
)


@dataclass
class ViewerOptions:
    """How the viewer starts."""

    size: tuple[int, int] = (1280, 800)  # window size
    vsync: bool = True
    frames: int = 0  # close after this many frames (0: run until the window closes)
    screenshot: str | None = None  # save the last frame (panel included) to this PNG
    instances: int = 1  # instances on a grid
    camera: Camera | None = None  # start here (default: the scene framed)
    panel: bool = True


class Viewer:
    """The interactive window. `run()` returns when the window closes (or after `frames`)."""

    def __init__(self, path: str, options: ViewerOptions | None = None,
                 render_options: RenderOptions | None = None) -> None:
        from rendercanvas.glfw import RenderCanvas

        self.opts = options or ViewerOptions()
        w, h = self.opts.size
        self.canvas = RenderCanvas(size=(w, h), title=f"Tessera: {path}", vsync=self.opts.vsync,
                                   update_mode="continuous")
        pw, ph = self.canvas.get_physical_size()
        self.renderer = Renderer(max(pw, 1), max(ph, 1), options=render_options)
        self.device = self.renderer.device
        self.context = self.canvas.get_wgpu_context()
        fmt = self.context.get_preferred_format(self.renderer.ctx.adapter).replace("-srgb", "")
        self.format = fmt
        self.context.configure(device=self.device, format=fmt,
                               usage=wgpu.TextureUsage.RENDER_ATTACHMENT
                               | wgpu.TextureUsage.COPY_SRC)
        self.asset = self.renderer.load(path)
        self.grid_count = self.opts.instances
        self.grid_spacing = 1.0  # in asset diameters
        self._place_grid()
        center, radius = self.renderer.bounds()
        self.controls = CameraControls(self.opts.camera or Camera.framing(center, radius),
                                       scene_radius=radius)
        self.tau = self.renderer.options.tau
        self.debug_view = 0
        self.freeze = False
        self.frame_ms: list[float] = []
        self.frames_drawn = 0
        self._last = time.perf_counter()
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

            self.imgui = ImguiRenderer(self.device, self.canvas, render_target_format=fmt)
            self.imgui.set_gui(self._panel)
        self.canvas.add_event_handler(self._on_event, "pointer_down", "pointer_up",
                                      "pointer_move", "wheel", "key_down", "key_up")
        self.canvas.add_event_handler(self._on_resize, "resize")
        self.canvas.request_draw(self._draw)

    # ------------------------------------------------------------------ scene

    def _place_grid(self) -> None:
        self.renderer.scene.clear_instances()
        if self.grid_count <= 1:
            self.renderer.add_instance(self.asset)
        else:
            d = 2 * float(self.renderer.scene.assets[self.asset].bounds_sphere[3])
            self.renderer.add_grid(self.asset, self.grid_count, spacing=d * self.grid_spacing)

    # ------------------------------------------------------------------ events

    def _on_event(self, event: dict) -> None:
        if self.imgui is not None:
            from imgui_bundle import imgui

            io = imgui.get_io()
            if event["event_type"].startswith("pointer") or event["event_type"] == "wheel":
                if io.want_capture_mouse:
                    return
            elif io.want_capture_keyboard:
                return
        if event["event_type"] == "key_down" and str(event.get("key", "")).lower() == "f":
            self.controls.frame_scene(*self.renderer.bounds())
            return
        self.controls.handle_event(event)

    def _on_resize(self, event: dict) -> None:
        pw, ph = self.canvas.get_physical_size()
        if pw > 0 and ph > 0 and (pw, ph) != (self.renderer.frame.width,
                                              self.renderer.frame.height):
            self.renderer.resize(pw, ph)

    # ------------------------------------------------------------------ the frame

    def _draw(self) -> None:
        now = time.perf_counter()
        dt, self._last = now - self._last, now
        self.frame_ms.append(dt * 1e3)
        del self.frame_ms[:-60]
        self.controls.update(min(dt, 0.1))
        r = self.renderer
        r.submit(self.controls.camera, tau=self.tau, debug_view=self.debug_view,
                 freeze_culling=self.freeze)
        tex = self.context.get_current_texture()
        enc = self.device.create_command_encoder(label="viewer.blit")
        rp = enc.begin_render_pass(color_attachments=[{
            "view": tex.create_view(), "load_op": "clear", "store_op": "store",
            "clear_value": (0, 0, 0, 1)}], label="viewer.blit")
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
        self.frames_drawn += 1
        if self.opts.frames and self.frames_drawn >= self.opts.frames:
            if self.opts.screenshot:
                self._screenshot_rgba = self._read_texture(tex)
                write_png(self.opts.screenshot, self._screenshot_rgba)
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

    # ------------------------------------------------------------------ panel

    def _panel(self) -> None:
        from imgui_bundle import imgui

        r = self.renderer
        imgui.set_next_window_pos((8, 8), imgui.Cond_.always)
        imgui.set_next_window_size((PANEL_WIDTH, 0), imgui.Cond_.always)
        imgui.begin("Tessera", None, imgui.WindowFlags_.no_move | imgui.WindowFlags_.no_resize)
        ms = float(np.median(self.frame_ms)) if self.frame_ms else 0.0
        imgui.text(f"frame {ms:.1f} ms ({1000 / max(ms, 1e-3):.0f} fps)")
        s = r.stats()
        if s is not None:
            if s.gpu_ms:
                imgui.text(f"GPU {s.gpu_total_ms:.2f} ms")
                for name, v in s.gpu_ms.items():
                    imgui.text(f"  {name:<14} {v:7.2f} ms")
            c = s.counters
            imgui.separator()
            imgui.text(f"instances  {c['instances_visible']:,} / {c['instances_tested']:,}")
            imgui.text(f"nodes      {c['nodes_visited']:,}")
            imgui.text(f"clusters   SW {c['sw_clusters']:,}  HW {c['hw_clusters']:,}")
            imgui.text(f"triangles  SW {c['sw_triangles']:,}  HW {c['hw_triangles']:,}")
            imgui.text(f"scene      {r.scene.triangle_count():,} triangles")
        imgui.separator()
        _, self.tau = imgui.slider_float("LOD px", self.tau, 0.25, 16.0, "%.2f",
                                         imgui.SliderFlags_.logarithmic)
        _, self.debug_view = imgui.combo("view", self.debug_view, list(DEBUG_VIEWS))
        changed_n, n = imgui.slider_int("instances", self.grid_count, 1, 4096)
        changed_s, sp = imgui.slider_float("spacing", self.grid_spacing, 0.5, 4.0)
        if changed_n or changed_s:
            self.grid_count, self.grid_spacing = n, sp
            self._place_grid()
        _, self.freeze = imgui.checkbox("freeze culling", self.freeze)
        imgui.text(f"traversal: {'persistent' if r.persistent else 'per level'}")
        imgui.text(f"camera: {self.controls.mode} (Tab switches, F frames)")
        if imgui.button("screenshot"):
            write_png("tessera_screenshot.png", self._read_texture(
                self.context.get_current_texture()))
        imgui.end()

    def run(self) -> None:
        from rendercanvas.glfw import loop

        loop.run()
