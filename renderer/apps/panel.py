"""The viewer's imgui panel: statistics, settings and actions of a `ViewerApp`.

`draw_panel(app)` runs inside an imgui frame (the window's `ImguiRenderer`, or a bare imgui
context in the tests, which click its widgets by feeding mouse events). It records each widget's
rectangle in `app.panel_rects` so that a test can find where to click.
"""

from __future__ import annotations

import numpy as np

from renderer.options import DEBUG_VIEWS
from renderer.results import INCOMPLETE
from renderer.apps.viewer_app import MAX_GRID, PANEL_WIDTH, ViewerApp

TRAVERSAL_NAMES = ["persistent", "per level"]
# the frame's passes in the order they run (renderer.frame.Frame.submit)
PASS_ORDER = ["instance_cull", "cull", "raster_sw", "raster_hw", "hzb", "post_cull",
              "post_raster_sw", "post_raster_hw", "raster_sw.ids", "raster_hw.ids", "hzb_next",
              "shadow_mark", "shadow_free", "shadow_alloc", "shadow_clear",
              "shadow_instance_cull", "shadow_cull", "shadow_raster_sw", "shadow_raster_hw",
              "depth_targets", "resolve"]
# passes shown on another's line (the panel keeps its height whatever the frame encodes): the
# instance hierarchy's and the moved instances' passes are the instance cull's work
PANEL_LINE = {"block_cull": "instance_cull", "instance_scatter": "instance_cull"}


def draw_panel(app: ViewerApp) -> None:
    """The panel, top to bottom: what is being opened, the statistics, the settings and the
    actions."""
    from imgui_bundle import imgui

    imgui.set_next_window_pos((8, 8), imgui.Cond_.always)
    imgui.set_next_window_size((PANEL_WIDTH, 0), imgui.Cond_.always)
    imgui.begin("Tessera", None, imgui.WindowFlags_.no_move | imgui.WindowFlags_.no_resize)
    imgui.text(app.title or "(nothing open)")
    _opening(imgui, app)
    imgui.separator()
    _statistics(imgui, app)
    imgui.separator()
    _settings(imgui, app)
    _actions(imgui, app)
    imgui.end()


def _mark(imgui, app: ViewerApp, label: str) -> None:
    """The last widget's rectangle in `app.panel_rects[label]`."""
    a, b = imgui.get_item_rect_min(), imgui.get_item_rect_max()
    app.panel_rects[label] = (a.x, a.y, b.x, b.y)


def _opening(imgui, app: ViewerApp) -> None:
    """Opening: progress, errors."""
    job = app.job
    if job is not None and not job.finished.is_set():
        imgui.text_wrapped(f"opening {job.asset or job.title}")
        imgui.progress_bar(job.fraction, (-1, 0), f"{job.stage} {100 * job.fraction:.0f}%")
        _mark(imgui, app, "progress")
        if imgui.button("cancel"):
            job.cancel(wait=0.0)
        _mark(imgui, app, "cancel")
    if app.message:
        color = (1.0, 0.45, 0.4, 1.0) if app.message.startswith("cannot") else (0.6, 0.9, 0.6, 1)
        imgui.push_style_color(imgui.Col_.text, color)
        imgui.text_wrapped(app.message)
        imgui.pop_style_color()
        _mark(imgui, app, "message")
        if imgui.small_button("dismiss"):
            app.message = None
        _mark(imgui, app, "dismiss")


def _statistics(imgui, app: ViewerApp) -> None:
    """Timings and counters: the frame's, each pass's, what was culled and drawn."""
    r = app.renderer
    ms = float(np.median(app.frame_ms)) if app.frame_ms else 0.0
    imgui.text(f"frame {ms:.1f} ms ({1000 / max(ms, 1e-3):.0f} fps)")
    s = r.stats() if app.ready else None
    if s is None:
        return
    if s.gpu_ms:
        # every pass seen so far keeps its line (frozen culling skips two): no jumping; the
        # depth targets, skipped while nothing moves, have theirs from the first frame
        names = app.panel_passes
        lines: dict[str, float] = {}
        for n, v in s.gpu_ms.items():
            if n != "accumulate":  # temporal AA: on the total's line, below
                lines[PANEL_LINE.get(n, n)] = lines.get(PANEL_LINE.get(n, n), 0.0) + v
        names.extend(n for n in (*lines, "depth_targets") if n not in names)
        names.sort(key=lambda n: PASS_ORDER.index(n) if n in PASS_ORDER else len(PASS_ORDER))
        # temporal AA's pass on the total's line: the panel keeps its height (it fills 800 px)
        taa = s.gpu_ms.get("accumulate")
        imgui.text(f"GPU {s.gpu_total_ms:.2f} ms" + ("" if taa is None else
                                                     f"  (temporal AA {taa:.2f})"))
        for name in names:
            v = lines.get(name)
            imgui.text(f"  {name:<14} " + ("      -" if v is None else f"{v:7.2f} ms"))
    c = s.counters
    # (proxies: aggregate boxes, each standing for a far group of instances)
    imgui.text(f"instances  {c['instances_visible']:,} / {c['instances_tested']:,}"
               f"  ({c['instances_far']:,} far, {c['instances_boxed']:,} boxes, "
               f"{c['proxied_instances']:,} in {c['proxies_drawn']:,} proxies)")
    imgui.text(f"nodes      {c['nodes_visited']:,}")
    imgui.text(f"clusters   SW {c['sw_clusters']:,}  HW {c['hw_clusters']:,}")
    imgui.text(f"triangles  SW {c['sw_triangles']:,}  HW {c['hw_triangles']:,}")
    if r.occlusion:  # two lines either way: the panel never jumps under the mouse
        imgui.text(f"occluded   {c['occluded_instances']:,} inst  {c['occluded_nodes']:,} "
                   f"nodes  {c['occluded_clusters']:,} cl")
        imgui.text(f"post pass  {c['post_clusters']:,} drawn  {c['post_rejected']:,} culled")
    else:
        imgui.text("occluded   (occlusion culling off)")
        imgui.text("post pass  -")
    imgui.text(f"scene      {r.scene.triangle_count():,} triangles")
    _pages(imgui, app, s)


def _pages(imgui, app: ViewerApp, s) -> None:
    """The streaming pool, the texture tiles while they stream, and the shadow pages (`s`: the
    frame's statistics), the lights, and what a frame cut short."""
    r = app.renderer
    st = s.streaming
    if r.streamer is not None:  # three lines while streaming (stats arrive a frame late)
        pool = r.streamer
        imgui.text(f"pool       {pool.resident_count:,} / {pool.slots:,} pages "
                   f"({pool.slots * pool.page_size / 2**20:.0f} MB)")
        if st is not None:
            imgui.text(f"pages      {st['requested']:,} wanted  {st['uploaded']:,} up  "
                       f"{st['evicted']:,} out")
            imgui.text(f"uploaded   {st['mb_uploaded']:.1f} MB this frame")
        else:
            imgui.text("pages      -")
            imgui.text("uploaded   -")
    tp, ts = r.texture_pool, s.textures
    if tp is not None and tp.streaming:  # the texture tiles while they stream
        imgui.text(f"textures   {tp.resident:,} / {tp.slots:,} tiles "
                   f"({tp.texture_bytes / 2**20:.0f} MB)")
        if ts is not None:
            imgui.text(f"tiles      {ts['wanted']:,} wanted  {ts['uploaded']:,} up  "
                       f"{ts['evicted']:,} out" + (f"  {ts['short']:,} short"
                                                    if ts["short"] else ""))
    sh = s.shadow
    if sh is not None:  # the sun's and the lights' pages while shadows are on
        imgui.text(f"shadow     {sh['drawn']:,} drawn  {sh['cached']:,} cached  pool "
                   f"{sh['pool_used']:,}/{sh['pool_pages']:,}"
                   + (f"  {sh['failed']:,} short" if sh["failed"] else ""))
    if r.lights:
        imgui.text(f"lights     {len(r.lights)} spot/point, "
                   f"{sum(r.frame.shadow_map.light_faces)} shadow faces")
    if s.overflow & INCOMPLETE:
        imgui.text_colored((1.0, 0.45, 0.4, 1.0), "traversal cut short: scene incomplete")
    if s.overflow & ~INCOMPLETE:
        imgui.text_colored((1.0, 0.45, 0.4, 1.0), "queue overflow: detail dropped")


def _settings(imgui, app: ViewerApp) -> None:
    """The LOD threshold, the debug view, the grid, culling, shadows and the sun."""
    r = app.renderer
    _, app.tau = imgui.slider_float("LOD px", app.tau, 0.25, 16.0, "%.2f",
                                    imgui.SliderFlags_.logarithmic)
    _mark(imgui, app, "LOD px")
    _, app.debug_view = imgui.combo("view", app.debug_view, list(DEBUG_VIEWS))
    _mark(imgui, app, "view")
    changed_n, n = imgui.slider_int("instances", app.grid_count, 1, MAX_GRID, "%d",
                                    imgui.SliderFlags_.logarithmic)
    _mark(imgui, app, "instances")
    changed_s, sp = imgui.slider_float("spacing", app.grid_spacing, 0.5, 4.0)
    _mark(imgui, app, "spacing")
    if changed_n or changed_s:
        app.set_grid(n, sp)
    current = 0 if r.persistent else 1
    changed_t, t = imgui.combo("culling", current, TRAVERSAL_NAMES)
    _mark(imgui, app, "culling")
    if changed_t and t != current:
        app.set_traversal(t == 0)
    changed_o, occ = imgui.checkbox("occlusion culling", r.occlusion)
    _mark(imgui, app, "occlusion culling")
    if changed_o:
        app.set_occlusion(occ)
    changed_sh, on = imgui.checkbox("shadows", r.shadows)
    _mark(imgui, app, "shadows")
    if changed_sh:
        app.set_shadows(on)
    imgui.same_line()  # one row for both: the panel fits small windows
    changed_s, sun_on = imgui.checkbox("sun", r.sun is not None)
    _mark(imgui, app, "sun")
    if changed_s:
        app.set_sun(*(app.last_sun if sun_on else (None,)))
    if r.sun is not None:
        az, el = r.sun
        changed_a, az = imgui.slider_float("sun azimuth", az % 360.0, 0.0, 360.0, "%.0f deg")
        _mark(imgui, app, "sun azimuth")
        changed_e, el = imgui.slider_float("sun elevation", el, 1.0, 90.0, "%.0f deg")
        _mark(imgui, app, "sun elevation")
        if changed_a or changed_e:
            app.set_sun(az, min(max(el, 1.0), 90.0))
    _, app.freeze = imgui.checkbox("freeze culling", app.freeze)
    _mark(imgui, app, "freeze culling")
    imgui.same_line()
    _, app.taa = imgui.checkbox("temporal AA", app.taa)  # jittered frames, accumulated
    _mark(imgui, app, "temporal AA")


def _actions(imgui, app: ViewerApp) -> None:
    """The camera mode, framing the scene, a screenshot, and how to open a file."""
    if imgui.button(f"camera: {app.controls.mode}"):
        app.controls.mode = "fly" if app.controls.mode == "orbit" else "orbit"
    _mark(imgui, app, "camera")
    imgui.same_line()
    if imgui.button("frame (F)"):
        app.frame_scene()
    _mark(imgui, app, "frame")
    imgui.same_line()
    if imgui.button("screenshot"):
        app.request_screenshot()
    _mark(imgui, app, "screenshot")
    imgui.push_style_color(imgui.Col_.text, imgui.get_style_color_vec4(imgui.Col_.text_disabled))
    imgui.text_wrapped("drop a .tess, mesh or scene .json file on the window to open it")
    imgui.pop_style_color()
