"""Scene files (`scene.json`), the format on its own: several assets, placed one by one or on
grids, a camera, the sun and lights; read and checked here (`read_scene_file`, `parse_scene`),
written here (`write_scene_file`). `preprocess.scene_import` writes them (a glTF scene as
authored); `renderer.apps.scene_file` reads them into a renderer.

    {
      "assets": {"rock": "rock.tess", "bunny": "meshes/bunny.obj",
                 "scan": {"file": "scans/statue.ply", "up": "z"}},
      "instances": [
        {"asset": "bunny", "translate": [0, 0, 0], "rotate": [0, 90, 0], "scale": 2.0},
        {"asset": "rock", "matrix": [[1, 0, 0, 5], [0, 1, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1]]}
      ],
      "grids": [{"asset": "rock", "count": 256, "spacing": 3.0, "origin": [0, 0, -40]}],
      "camera": {"eye": [0, 5, 20], "target": [0, 0, 0], "fov": 60, "near": 0.01},
      "sun": {"azimuth": 30, "elevation": 50},
      "lights": [{"type": "spot", "position": [0, 6, 0], "direction": [0, -1, 0],
                  "intensity": 20, "outer_cone": 30}]
    }

- `assets` names each asset; a path is relative to the scene file. A `.tess` file is used as is;
  a mesh file (OBJ, PLY, STL, glTF, ...) is preprocessed once and cached beside it (`.tess`).
  An asset is a path, or `{"file": path, "up": "y" | "z"}` for a mesh file whose up axis is
  given (`preprocess --up`: a Z-up mesh is turned Y-up; without `up`, Y, or what its cached
  `.tess` was built with).
- `instances`: `translate` (x, y, z), `rotate` (degrees about X, then Y, then Z), `scale` (a
  number or x, y, z), or a row-major 4x4 `matrix` instead of all three; or, for many instances
  of one asset, `{"asset": name, "transforms": "trees.npy"}`: a NumPy `.npy` file (relative to
  the scene file) of k row-major affine transforms, shape (k, 4, 4) or (k, 3, 4), read in one
  piece (`Renderer.add_instances`).
- `grids`: `count` instances on a square grid in the XZ plane centred on `origin` (default the
  world origin), `spacing` apart (world units; default 1.2x the asset's diameter), like
  `Renderer.add_grid`.
- `camera` is optional (the viewer frames the scene without it): `fov` in degrees (1..179,
  default 60), `near` (default 0.01, or a thousandth of the eye-target distance where that is
  smaller, so that a camera on a tiny scene sees it).
- `sun` is optional: its azimuth and elevation in degrees, as `RenderOptions.sun` (elevation
  above the horizon, at most 90), or null for no sun; it replaces the renderer's sun when the
  scene is applied.
- `lights` is optional: spot and point lights (`renderer.Light`, at most MAX_LIGHTS: 16), each
  `{"type": "point" | "spot", "position": [x, y, z], "intensity": suns at distance 1 (1),
  "color": [r, g, b] (white), "range": distance (none), "direction": [x, y, z] (a spot's; down),
  "inner_cone": degrees (0), "outer_cone": degrees (45), "shadows": true | false (true)}`;
  they replace the renderer's lights when the scene is applied.

Every number must be finite; coordinates (translate, origin, spacing, scale, matrix, eye,
target) at most 1e18 in magnitude (`limits.MAX_WORLD`: float32 on the GPU); a grid's count a
whole number >= 1 (how many instances an adapter holds is checked when the renderer receives
them, before anything is built). Errors are `SceneFileError`: one line naming the file and the
entry at fault; an unknown key is an error too (a misspelt `scael` would otherwise be ignored in
silence).

What only the renderer knows (the field of view and the sun it can draw, a light's own checks,
the camera and light types, the default sun) the reader asks of a `SceneChecks` it is given,
each where the value is read, so that the first error in a file is the one reported. Like the
rest of `preprocess.tess`, this module needs numpy and the standard library only.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from preprocess.tess.atomic import write_atomically
from preprocess.tess.limits import MAX_LIGHTS, MAX_WORLD, UP_AXES

__all__ = ["MAX_LIGHTS", "Placement", "SceneChecks", "SceneDoc", "SceneFileError", "box_sphere",
           "check_transform", "instance_reach", "is_singular", "parse_scene", "read_scene_file",
           "scene_text", "write_scene_file"]

SINGULAR_DET = 1e-30  # |det| below which an instance transform is singular (is_singular)
SCENE_KEYS = {"assets", "instances", "grids", "camera", "sun", "lights"}
LIGHT_KEYS = {"type", "position", "intensity", "color", "range", "direction", "inner_cone",
              "outer_cone", "shadows"}


class SceneFileError(ValueError):
    """A scene file that cannot be read or is not valid."""


@dataclass(frozen=True)
class SceneChecks:
    """What the reader asks of the renderer a scene is for (renderer.apps.scene_file gives its
    own), each raising ValueError for a value it cannot draw: `fov(degrees, where)`;
    `sun((azimuth, elevation), where)`; `light(keywords)` makes one light from a `lights`
    entry's keyword arguments (`renderer.Light`'s: kind, position, intensity, color, range,
    direction, inner_cone and outer_cone in radians, shadows); `lights(list)` checks them
    together; `camera(eye, target, fov, near)` makes the camera; `default_sun`: (azimuth,
    elevation) of a `sun` entry that leaves one out."""

    fov: Callable[[float, str], None]
    sun: Callable[[tuple[float, float], str], None]
    light: Callable[..., Any]
    lights: Callable[[list], list]
    camera: Callable[..., Any]
    default_sun: tuple[float, float]


@dataclass
class Placement:
    """One instance (`matrix`), many (`transforms`) or a grid (`count`, `spacing`, `origin`)
    of a named asset."""

    asset: str
    matrix: np.ndarray | None = None
    # (k, 4, 4) or (k, 3, 4) numbers from a .npy (memory-mapped), and the entry naming it
    transforms: np.ndarray | None = None
    where: str = ""
    count: int = 0
    spacing: float | None = None
    origin: np.ndarray = field(default_factory=lambda: np.zeros(3))


@dataclass
class SceneDoc:
    """A parsed scene file."""

    path: Path
    assets: dict[str, Path]  # name -> file (absolute)
    placements: list[Placement]
    camera: Any = None  # SceneChecks.camera's, or None
    up: dict[str, str] = field(default_factory=dict)  # name -> up axis, for meshes given one
    # (azimuth, elevation) degrees; None: the renderer's; False: no sun
    sun: tuple[float, float] | bool | None = None
    lights: list | None = None  # SceneChecks.light's; None: the renderer's


# ------------------------------------------------------------------------------ reading

def _vec(v, where: str, n: int = 3, *, world: bool = True) -> np.ndarray:
    ok = (isinstance(v, list) and len(v) == n
          and all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in v)
          and all(math.isfinite(x) for x in v))
    if not ok:
        raise ValueError(f"{where}: expected {n} finite numbers, got {v!r}")
    if world and not max(abs(x) for x in v) <= MAX_WORLD:
        raise ValueError(f"{where}: {v!r} is beyond float32's reach on the GPU (at most "
                         f"{MAX_WORLD:.0e} in magnitude)")
    return np.asarray(v, dtype=np.float64)


def _number(v, where: str, *, positive: bool = False, world: bool = True) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        raise ValueError(f"{where}: expected a finite number, got {v!r}")
    if positive and v <= 0:
        raise ValueError(f"{where}: must be > 0, got {v!r}")
    if world and not abs(v) <= MAX_WORLD:
        raise ValueError(f"{where}: {v!r} is beyond float32's reach on the GPU (at most "
                         f"{MAX_WORLD:.0e})")
    return float(v)


def _count(v, where: str) -> int:
    """A whole number >= 1 (JSON writes 1e3 as a float: a whole float is taken)."""
    if (isinstance(v, bool) or not isinstance(v, (int, float))
            or (isinstance(v, float) and not (math.isfinite(v) and v.is_integer())) or v < 1):
        raise ValueError(f"{where}: expected a whole number >= 1, got {v!r}")
    return int(v)


def _rotation(deg: np.ndarray) -> np.ndarray:
    """Rotation about X, then Y, then Z (degrees): R = Rz @ Ry @ Rx."""
    x, y, z = np.radians(deg)
    rx = np.array([[1, 0, 0], [0, math.cos(x), -math.sin(x)], [0, math.sin(x), math.cos(x)]])
    ry = np.array([[math.cos(y), 0, math.sin(y)], [0, 1, 0], [-math.sin(y), 0, math.cos(y)]])
    rz = np.array([[math.cos(z), -math.sin(z), 0], [math.sin(z), math.cos(z), 0], [0, 0, 1]])
    return rz @ ry @ rx


def _instance(e: dict, where: str) -> np.ndarray:
    if "matrix" in e:
        if {"translate", "rotate", "scale"} & set(e):
            raise ValueError(f"{where}: give either 'matrix' or translate/rotate/scale, not both")
        rows = e["matrix"]
        if not isinstance(rows, list) or len(rows) != 4:
            raise ValueError(f"{where}.matrix: expected 4 rows of 4 finite numbers")
        m = np.stack([_vec(row, f"{where}.matrix[{k}]", 4) for k, row in enumerate(rows)])
        if not np.allclose(m[3], [0, 0, 0, 1]):
            raise ValueError(f"{where}.matrix: the last row must be 0, 0, 0, 1 (affine)")
    else:
        t = _vec(e.get("translate", [0, 0, 0]), f"{where}.translate")
        r = _vec(e.get("rotate", [0, 0, 0]), f"{where}.rotate", world=False)
        s = e.get("scale", 1.0)
        sv = (np.full(3, _number(s, f"{where}.scale", positive=True))
              if not isinstance(s, list) else _vec(s, f"{where}.scale"))
        if (sv <= 0).any():
            raise ValueError(f"{where}.scale: must be > 0, got {s!r}")
        m = np.eye(4)
        m[:3, :3] = _rotation(r) @ np.diag(sv)
        m[:3, 3] = t
    return check_transform(m, where)


def is_singular(m: np.ndarray) -> bool:
    """Whether a (4, 4) transform scales what it places to (next to) nothing: the renderer's
    test (`renderer.scene.checked_world`), |det| of its 3 x 3 part below 1e-30."""
    return abs(float(np.linalg.det(np.asarray(m, np.float64)[:3, :3]))) < SINGULAR_DET


def box_sphere(lo, hi) -> np.ndarray:
    """(4,) float32 (x, y, z, r): the sphere around a box (an asset's bounds), as the renderer
    frames and places assets (`renderer.scene.Asset.bounds_sphere`)."""
    lo, hi = np.asarray(lo, np.float64), np.asarray(hi, np.float64)
    return np.array([*(lo + hi) / 2, np.linalg.norm(hi - lo) / 2], np.float32)


def instance_reach(m: np.ndarray, sphere: np.ndarray) -> float:
    """How far from the world origin, along an axis, an instance whose asset's bounding sphere
    is `sphere` (`box_sphere`) reaches under the (4, 4) transform `m`: what the renderer holds
    to MAX_WORLD (`Renderer.add_instance`)."""
    m, s = np.asarray(m, np.float64), np.asarray(sphere, np.float64)
    reach = np.abs(m[:3, :3] @ s[:3] + m[:3, 3]) + s[3] * np.linalg.norm(m[:3, :3], axis=0).max()
    return float(reach.max())


def check_transform(m: np.ndarray, where: str) -> np.ndarray:
    """An instance's (4, 4) affine transform as the renderer takes it, float32: ValueError
    naming `where` for a number that is not finite or past MAX_WORLD, or a singular one
    (`is_singular`). The scene file's instances and `preprocess.scene_import`'s both pass here."""
    m = np.asarray(m, np.float64)
    if not np.isfinite(m).all():
        raise ValueError(f"{where}: the transform is not finite")
    if not np.abs(m).max() <= MAX_WORLD:
        raise ValueError(f"{where}: the transform holds {np.abs(m).max():.3g}, beyond "
                         f"float32's reach on the GPU (at most {MAX_WORLD:.0e} in magnitude)")
    if is_singular(m):
        raise ValueError(f"{where}: the transform is singular (its determinant is below 1e-30: "
                         "a uniform scale must be above 1e-10)")
    return m.astype(np.float32)


def _up(v, where: str, file) -> str:
    """A mesh asset's up axis (one of UP_AXES)."""
    if v not in UP_AXES:
        raise ValueError(f"{where}: expected one of {', '.join(map(repr, UP_AXES))}, got {v!r}")
    if isinstance(file, str) and file.lower().endswith(".tess"):
        raise ValueError(f"{where}: an up axis applies to a mesh file; {file} is built already "
                         "(preprocess --up)")
    return v


def _unknown(e: dict, allowed: set[str], where: str) -> None:
    extra = sorted(set(e) - allowed)
    if extra:
        raise ValueError(f"{where}: unknown key {extra[0]!r} (expected one of "
                         f"{', '.join(sorted(allowed))})")


def _assets(data: dict, folder: Path) -> tuple[dict[str, Path], dict[str, str]]:
    """`assets`: name -> file (resolved against `folder`), and name -> up axis where given."""
    assets = data.get("assets")
    if not isinstance(assets, dict) or not assets:
        raise ValueError("'assets' must name at least one asset: {\"name\": \"file\"}")
    resolved = {}
    up = {}
    for name, f in assets.items():
        if isinstance(f, dict):
            _unknown(f, {"file", "up"}, f"assets.{name}")
            if "up" in f:
                up[name] = _up(f["up"], f"assets.{name}.up", f.get("file"))
            f = f.get("file")
        if not isinstance(f, str) or not f:
            raise ValueError(f"assets.{name}: expected a file path, or {{\"file\": path, "
                             f"\"up\": axis}}, got {f!r}")
        resolved[name] = (folder / f).resolve()
    return resolved, up


def _transforms(v, where: str, folder: Path) -> np.ndarray:
    """An instance entry's `transforms`: a .npy file (relative to the scene's folder) of
    (k, 4, 4) or (k, 3, 4) numbers, memory-mapped; its values are checked when the renderer
    takes them (`Renderer.add_instances`: finite, affine, not singular, within MAX_WORLD)."""
    if not isinstance(v, str) or not v:
        raise ValueError(f"{where}: expected the path of a .npy file, got {v!r}")
    f = folder / v
    try:
        arr = np.load(f, mmap_mode="r", allow_pickle=False)
    except FileNotFoundError:
        raise ValueError(f"{where}: {f}: no such file") from None
    except (OSError, ValueError, EOFError) as e:
        raise ValueError(f"{where}: {f} is not a readable .npy array ({e})") from None
    if not isinstance(arr, np.ndarray):  # an .npz archive
        raise ValueError(f"{where}: {f} is not a .npy array")
    if arr.dtype.kind not in "fiu" or arr.ndim != 3 or arr.shape[1:] not in ((4, 4), (3, 4)):
        raise ValueError(f"{where}: {f.name} holds {arr.dtype} of shape {arr.shape}; expected "
                         "numbers of shape (k, 4, 4) or (k, 3, 4)")
    return arr


def _placements(data: dict, assets: dict[str, Path], folder: Path) -> list[Placement]:
    """`instances`, then `grids`."""
    placements = []
    for key in ("instances", "grids"):
        entries = data.get(key, [])
        if not isinstance(entries, list):
            raise ValueError(f"'{key}' must be a list")
        for i, e in enumerate(entries):
            where = f"{key}[{i}]"
            if not isinstance(e, dict):
                raise ValueError(f"{where}: expected an object")
            name = e.get("asset")
            if name not in assets:
                raise ValueError(f"{where}.asset: {name!r} is not one of the assets "
                                 f"({', '.join(assets)})")
            if key == "instances" and "transforms" in e:
                _unknown(e, {"asset", "transforms"}, where)
                placements.append(Placement(name, transforms=_transforms(
                    e["transforms"], f"{where}.transforms", folder), where=f"{where}.transforms"))
            elif key == "instances":
                _unknown(e, {"asset", "matrix", "translate", "rotate", "scale"}, where)
                placements.append(Placement(name, matrix=_instance(e, where)))
            else:
                _unknown(e, {"asset", "count", "spacing", "origin"}, where)
                count = _count(e.get("count"), f"{where}.count")
                spacing = e.get("spacing")
                placements.append(Placement(
                    name, count=count,
                    spacing=None if spacing is None else _number(spacing, f"{where}.spacing",
                                                                positive=True),
                    origin=_vec(e.get("origin", [0, 0, 0]), f"{where}.origin")))
    if not placements:
        raise ValueError("the scene places nothing: add 'instances' or 'grids'")
    return placements


def _camera(c, checks: SceneChecks):
    """`camera`: eye, target, fov and near, made into the renderer's camera."""
    if not isinstance(c, dict):
        raise ValueError("'camera' must be an object")
    _unknown(c, {"eye", "target", "fov", "near"}, "camera")
    eye = _vec(c.get("eye"), "camera.eye")
    target = _vec(c.get("target", [0, 0, 0]), "camera.target")
    if np.array_equal(eye.astype(np.float32), target.astype(np.float32)):
        raise ValueError("camera: eye and target are the same point")
    fov = _number(c.get("fov", 60.0), "camera.fov")
    checks.fov(fov, "camera.fov")
    near = (_number(c["near"], "camera.near", positive=True) if "near" in c
            else min(0.01, 1e-3 * float(np.linalg.norm(eye - target))))
    return checks.camera(eye=eye, target=target, fov=fov, near=near)


def _sun(c, checks: SceneChecks) -> tuple[float, float] | bool:
    """`sun`: (azimuth, elevation) degrees, or False for null (no sun)."""
    if c is None:
        return False
    if not isinstance(c, dict):
        raise ValueError("'sun' must be an object: {\"azimuth\": .., \"elevation\": ..}")
    _unknown(c, {"azimuth", "elevation"}, "sun")
    sun = (_number(c.get("azimuth", checks.default_sun[0]), "sun.azimuth", world=False),
           _number(c.get("elevation", checks.default_sun[1]), "sun.elevation", world=False))
    checks.sun(sun, "sun")
    return sun


def _light(c, where: str, checks: SceneChecks):
    """A scene file's light (the module docstring), ValueError naming `where`."""
    if not isinstance(c, dict):
        raise ValueError(f"{where} must be an object")
    _unknown(c, LIGHT_KEYS, where)
    if c.get("type") not in ("point", "spot"):
        raise ValueError(f"{where}.type must be \"point\" or \"spot\", not {c.get('type')!r}")
    kw = {"kind": c["type"], "position": tuple(_vec(c.get("position"), f"{where}.position"))}
    if "intensity" in c:
        kw["intensity"] = _number(c["intensity"], f"{where}.intensity", world=False)
    if "color" in c:
        kw["color"] = tuple(_vec(c["color"], f"{where}.color", world=False))
    if "range" in c:
        kw["range"] = _number(c["range"], f"{where}.range", positive=True)
    if "direction" in c:
        kw["direction"] = tuple(_vec(c["direction"], f"{where}.direction", world=False))
    for key in ("inner_cone", "outer_cone"):
        if key in c:
            kw[key] = math.radians(_number(c[key], f"{where}.{key}", world=False))
    if "shadows" in c:
        if not isinstance(c["shadows"], bool):
            raise ValueError(f"{where}.shadows must be true or false")
        kw["shadows"] = c["shadows"]
    try:
        return checks.light(**kw)
    except ValueError as e:
        raise ValueError(f"{where}: {e}") from None


def _lights(entries, checks: SceneChecks) -> list:
    """`lights`: each made by `checks.light`, then checked together."""
    if not isinstance(entries, list):
        raise ValueError("'lights' must be a list of lights")
    return checks.lights([_light(c, f"lights[{k}]", checks) for k, c in enumerate(entries)])


def parse_scene(data, path: str | os.PathLike, checks: SceneChecks) -> SceneDoc:
    """Validate a scene file's JSON content; asset paths are resolved against `path`'s folder.
    SceneFileError: one line, the file and the entry at fault."""
    path = Path(path)
    try:
        if not isinstance(data, dict):
            raise ValueError("the top level must be an object")
        _unknown(data, SCENE_KEYS, "scene")
        assets, up = _assets(data, path.parent)
        placements = _placements(data, assets, path.parent)
        camera = _camera(data["camera"], checks) if "camera" in data else None
        sun = _sun(data["sun"], checks) if "sun" in data else None
        lights = _lights(data["lights"], checks) if "lights" in data else None
    except ValueError as e:
        raise SceneFileError(f"{path}: {e}") from None
    return SceneDoc(path=path, assets=assets, placements=placements, camera=camera, up=up,
                    sun=sun, lights=lights)


def read_scene_file(path: str | os.PathLike, checks: SceneChecks) -> SceneDoc:
    """Read and validate a scene file (the module docstring)."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise SceneFileError(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError) as e:
        raise SceneFileError(f"{path}: cannot read: {e}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise SceneFileError(f"{path}: not valid JSON: {e.msg} (line {e.lineno}, column "
                             f"{e.colno})") from None
    return parse_scene(data, path, checks)


# ------------------------------------------------------------------------------ writing

def scene_text(doc: dict) -> str:
    """A scene file's text from its JSON content (`assets`, `instances`, and `sun` and `lights`
    where present): an asset, an instance or a light a line."""
    assets = ",\n".join(f"  {json.dumps(k)}: {json.dumps(v)}" for k, v in doc["assets"].items())
    inst = ",\n".join(f"  {json.dumps(i)}" for i in doc["instances"])
    sun = f',\n "sun": {json.dumps(doc["sun"])}' if "sun" in doc else ""
    if "lights" in doc:
        sun += ',\n "lights": [\n' + ",\n".join(f"  {json.dumps(e)}" for e in doc["lights"])
        sun += "\n ]"
    return f'{{\n "assets": {{\n{assets}\n }},\n "instances": [\n{inst}\n ]{sun}\n}}\n'


def write_scene_file(path: str | os.PathLike, doc: dict) -> None:
    """Write a scene file (`scene_text`) whole or not at all (`atomic.write_atomically`: a
    temporary file beside it, renamed over it)."""
    text = scene_text(doc).encode("utf-8")
    write_atomically(path, lambda f: f.write(text))
