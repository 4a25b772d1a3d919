"""Datasets (`tessera dataset`, issue 36): a scene drawn from many cameras in one process, each
frame's lit PNG and the arrays asked for, and the cameras in two documented conventions.

Cameras (`camera_set`): `orbit:N` (N views around the scene's bounding sphere, 25 degrees
above its equator, the sphere filling 90% of the view height), `random:N[:SEED]` (N views from
directions spread over the sphere, 10 degrees below the equator to 70 above, the sphere
filling 50 to 110% of the view), or a JSON file: a list of {"eye": [x, y, z], "target": [x, y,
z], "up": [x, y, z] (optional, +Y), "fov": degrees (optional, --fov)}.

Per frame N (`write_frame`): `images/N.png` (the lit image, sRGB RGBA8) and, with any of
--outputs, `arrays/N.npz`: `depth` (float32, the distance along the camera's view axis in
world units, inf on the background), `normal` (float32 world-space unit normals, 0 on the
background), `instance` and `material` (int32, -1 on the background) for `ids`, `velocity`
(float32 pixels, x right, y down: the surface under a pixel was at pixel centre - velocity in
the frame before; 0 in the first). Every file is written whole (a temporary name, renamed).

Cameras, at the end (`cameras_json`, `transforms_json`):
- `cameras.json`: OpenCV's pinhole convention: K (3 x 3: fx = fy = h / (2 tan(fov / 2)), the
  principal point (w / 2 - 0.5, h / 2 - 0.5): pixel centres at whole coordinates, (0, 0) the
  top left pixel's), R and t (world to camera: x right, y down, z forward, a point X at
  R X + t), per frame, with the image's width and height and the near plane.
- `transforms.json`: the NeRF convention (instant-ngp, nerfstudio): `camera_angle_x`, `fl_x`,
  `fl_y`, `cx`, `cy` (pixel edges at whole coordinates: cx = w / 2), `w`, `h`, and per frame
  `file_path` and `transform_matrix` (4 x 4 camera to world, OpenGL axes: x right, y up,
  looking down -z).

A pixel (u, v) of depth d is the world point R^T ((u - cx) d / fx, (v - cy) d / fy, d) - R^T t
(OpenCV's K, R, t): `tests/renderer/apps/test_dataset.py` puts every pixel of a sphere back on
it.
"""

from __future__ import annotations

import io
import json
import math
from pathlib import Path

import numpy as np

from preprocess.tess.atomic import write_atomically
from renderer.camera import Camera
from renderer.results import RenderResult, png_bytes

__all__ = ["OUTPUTS", "camera_set", "cameras_json", "on_ray", "opencv", "render_chunk",
           "transforms_json", "write_frame"]

OUTPUTS = ("depth", "normal", "ids", "velocity")  # what --outputs may name
# a GL view's axes (x right, y up, looking down -z) to OpenCV's (x right, y down, z forward)
_GL_TO_CV = np.diag([1.0, -1.0, -1.0])


def camera_set(spec: str, center: np.ndarray, radius: float, fov: float) -> list[Camera]:
    """The cameras of `spec` (module docstring) for a scene of bounding sphere (center,
    radius): ValueError naming what is wrong (an unknown kind, a count below 1, a file that is
    not such a list, a coordinate that is not a finite number)."""
    kind, _, rest = spec.partition(":")
    if kind in ("orbit", "random"):
        parts = rest.split(":")
        try:
            n = int(parts[0])
            seed = int(parts[1]) if kind == "random" and len(parts) > 1 else 0
        except ValueError:
            raise ValueError(f"--cameras {spec}: {kind}:N{'[:SEED]' if kind == 'random' else ''}"
                             f", N a whole number") from None
        if n < 1 or len(parts) > (2 if kind == "random" else 1):
            raise ValueError(f"--cameras {spec}: {kind}:N with N >= 1")
        rng = np.random.default_rng(seed)
        out = []
        for i in range(n):
            if kind == "orbit":
                az, el, fill = 2 * math.pi * i / n, math.radians(25.0), 0.9
            else:
                az = rng.uniform(0, 2 * math.pi)
                el = math.asin(rng.uniform(math.sin(math.radians(-10)),
                                           math.sin(math.radians(70))))
                fill = rng.uniform(0.5, 1.1)
            d = (math.cos(el) * math.sin(az), math.sin(el), math.cos(el) * math.cos(az))
            out.append(Camera.framing(center, radius, direction=d, fov_y=fov, fill=fill))
        return out
    path = Path(spec)
    if not path.is_file():
        raise ValueError(f"--cameras {spec}: neither orbit:N, random:N[:SEED] nor a camera "
                         f"file")
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ValueError(f"{path}: not a camera file (JSON): {e}") from None
    if not isinstance(doc, list) or not doc:
        raise ValueError(f"{path}: a camera file is a JSON list of cameras, one at least")
    out = []
    for i, c in enumerate(doc):
        if not isinstance(c, dict) or not {"eye", "target"} <= set(c):
            raise ValueError(f"{path}: camera {i} is not an object with eye and target")
        extra = set(c) - {"eye", "target", "up", "fov"}
        if extra:
            raise ValueError(f"{path}: camera {i}: unknown key {sorted(extra)[0]!r} (eye, "
                             f"target, up, fov)")
        vals = {}
        for k in ("eye", "target", "up"):
            if k in c:
                v = c[k]
                if not (isinstance(v, list) and len(v) == 3 and all(
                        isinstance(x, (int, float)) and not isinstance(x, bool)
                        and math.isfinite(x) for x in v)):
                    raise ValueError(f"{path}: camera {i}: {k} must be three finite numbers, "
                                     f"not {v!r}")
                vals[k] = np.array(v, np.float64)
        f = c.get("fov", fov)
        if not (isinstance(f, (int, float)) and not isinstance(f, bool) and math.isfinite(f)):
            raise ValueError(f"{path}: camera {i}: fov must be a number of degrees, not {f!r}")
        try:  # the near plane `tessera render --eye` gives: its frame and this one alike
            out.append(Camera(eye=vals["eye"], target=vals["target"],
                              up=vals.get("up", np.array([0.0, 1.0, 0.0])), fov_y=float(f),
                              near=radius * 1e-3))
        except ValueError as e:
            raise ValueError(f"{path}: camera {i}: {e}") from None
    return out


def opencv(cam: Camera, width: int, height: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(K, R, t) of `cam` for a width x height image, OpenCV's convention (module docstring)."""
    f = height / (2 * math.tan(math.radians(cam.fov_y) / 2))
    k = np.array([[f, 0, width / 2 - 0.5], [0, f, height / 2 - 0.5], [0, 0, 1]])
    view = cam.view().astype(np.float64)  # world to GL camera
    r = _GL_TO_CV @ view[:3, :3]
    t = _GL_TO_CV @ view[:3, 3]
    return k, r, t


def cameras_json(cams: list[Camera], width: int, height: int, names: list[str]) -> dict:
    """The OpenCV document of `cameras.json`."""
    frames = []
    for cam, name in zip(cams, names, strict=True):
        k, r, t = opencv(cam, width, height)
        frames.append({"image": name, "K": k.tolist(), "R": r.tolist(), "t": t.tolist(),
                       "near": cam.near})
    return {"convention": "opencv: x right, y down, z forward; pixel centres at whole "
                          "coordinates; a world point X is at R X + t",
            "width": width, "height": height, "frames": frames}


def transforms_json(cams: list[Camera], width: int, height: int, names: list[str]) -> dict:
    """The NeRF document of `transforms.json` (every camera's field of view the same, the
    first's, as the format has one; per-frame intrinsics where they differ)."""
    def focal(cam: Camera) -> float:
        return height / (2 * math.tan(math.radians(cam.fov_y) / 2))

    f0 = focal(cams[0])
    doc = {"camera_angle_x": 2 * math.atan(width / (2 * f0)), "fl_x": f0, "fl_y": f0,
           "cx": width / 2, "cy": height / 2, "w": width, "h": height, "frames": []}
    for cam, name in zip(cams, names, strict=True):
        to_world = np.linalg.inv(cam.view().astype(np.float64))  # GL camera to world
        frame = {"file_path": name, "transform_matrix": to_world.tolist()}
        if focal(cam) != f0:
            frame["fl_x"] = frame["fl_y"] = focal(cam)
        doc["frames"].append(frame)
    return doc


def write_frame(out: Path, name: str, res: RenderResult, outputs: tuple[str, ...]) -> None:
    """Frame `name`'s PNG, and its arrays where `outputs` asks (module docstring), each file
    written whole."""
    png = png_bytes(res.color)
    write_atomically(out / "images" / f"{name}.png", lambda f: f.write(png))
    if not outputs:
        return
    arrays = {}
    if "depth" in outputs:
        arrays["depth"] = res.distance()
    if "normal" in outputs:
        arrays["normal"] = res.normal.astype(np.float32)
    if "ids" in outputs:
        arrays["instance"] = res.instance.astype(np.int32)
        arrays["material"] = (res.material if res.material is not None
                              else np.full_like(res.instance, -1)).astype(np.int32)
    if "velocity" in outputs:
        arrays["velocity"] = res.velocity.astype(np.float32)
    buf = io.BytesIO()
    np.savez_compressed(buf, **arrays)
    data = buf.getvalue()
    write_atomically(out / "arrays" / f"{name}.npz", lambda f: f.write(data))


def open_renderer(source: str, up: str | None, options, size: tuple[int, int], instances: int,
                  ground: bool):
    """A renderer with the scene of `source` (a .tess, a mesh or a scene file, resolved as
    `tessera render` does; its cache built already) and the ground where asked: (renderer,
    the scene's centre, radius). ValueError: what went wrong, one line."""
    from renderer.apps.scene_file import place_scene
    from renderer.renderer import Renderer

    tess, spec, paths = source, None, None
    if Path(source).suffix.lower() != ".tess":
        from renderer.apps.loader import load_now

        job = load_now(source, up)
        if job.error:
            raise ValueError(job.error)
        tess, spec, paths = next(iter(job.tess.values())), job.spec, job.tess
    r = Renderer(*size, options=options)
    center, radius = place_scene(r, spec, tess, tess_paths=paths, instances=instances,
                                 ground=ground)
    return r, center, radius


def render_chunk(scene: tuple, cams: list[Camera], names: list[str], before: Camera | None,
                 out: Path, outputs: tuple[str, ...], tau: float | None) -> int:
    """Frames `names` of cameras `cams` into `out` by a renderer of its own (a Ray task):
    `scene` is `open_renderer`'s arguments; `before`, the camera of the frame before the chunk,
    drawn first and not written, so that the chunk's first velocity is the flow from it.
    Returns the frames written."""
    r, _, _ = open_renderer(*scene)
    frames = r.render_many(([before] if before is not None else []) + list(cams), tau=tau)
    if before is not None:
        next(frames)
    for name, res in zip(names, frames, strict=True):
        write_frame(out, name, res, outputs)
    return len(names)


def on_ray(address: str, jobs: int, scene: tuple, cams: list[Camera], names: list[str],
           out: Path, outputs: tuple[str, ...], tau: float | None,
           check=None) -> float:
    """The frames rendered as Ray tasks (`render_chunk`: a chunk of consecutive cameras each,
    one GPU a task where the cluster has GPUs, else one CPU), into `out` on storage every node
    sees; a task whose worker dies runs again (Ray, three times in all). Returns the seconds
    the frames took. `address` as `preprocess --ray`'s ("local": a cluster of `jobs` CPUs)."""
    import time

    from preprocess.batch import MAX_TRIES, ray_init

    ray, started = ray_init(address, jobs)
    try:
        gpus = int(ray.cluster_resources().get("GPU", 0))
        slots = gpus or int(ray.cluster_resources().get("CPU", 1))
        task = ray.remote(num_gpus=1 if gpus else 0, num_cpus=0 if gpus else 1,
                          max_retries=MAX_TRIES - 1)(render_chunk)
        per = -(-len(cams) // max(slots, 1))
        t0 = time.perf_counter()
        refs = [task.remote(scene, cams[i: i + per], names[i: i + per],
                            cams[i - 1] if i else None, out, outputs, tau)
                for i in range(0, len(cams), per)]
        try:
            pending = list(refs)
            while pending:
                done, pending = ray.wait(pending, num_returns=1, timeout=0.25)
                if check is not None:
                    check()
                for ref in done:
                    try:
                        ray.get(ref)
                    except ray.exceptions.RayTaskError as e:  # the task's own error
                        raise ValueError(" ".join(str(e.cause).split())) from None
                    except ray.exceptions.RayError as e:  # its worker died every time
                        raise ValueError(f"a Ray worker rendering the frames failed "
                                         f"{MAX_TRIES} times ({type(e).__name__})") from None
        except BaseException:
            for ref in refs:
                ray.cancel(ref)
            raise
        return time.perf_counter() - t0
    finally:
        if started:
            ray.shutdown()
