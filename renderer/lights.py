"""Spot and point lights (glTF's `KHR_lights_punctual` model): what they are, their checks, and
the shadow views their faces are drawn into (docs/ARCHITECTURE.md "Shadows").

A light's `intensity` is the irradiance it gives a surface facing it at distance 1, in suns
(the sun of `RenderOptions.sun` gives 1): it falls off with the square of the distance, windowed
to zero at `range` as glTF says (`(1 - (d / range)^4)^2`), and a spot's over the edge of its
cone, from `inner_cone` (full) to `outer_cone` (none), both half-angles in radians. A spot
light whose outer cone is at most MAX_SPOT_FACE degrees casts its shadow through one
perspective face; a wider spot and a point light through six (a cube around the light).
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass

import numpy as np

from renderer.layout import LIGHT_DTYPE
from renderer.limits import MAX_LIGHTS

__all__ = ["Light", "check_lights", "face_frames", "faces_of", "faces_wanted", "light_records",
           "view_axes"]

MAX_SPOT_FACE = 60.0  # degrees: a spot's outer cone up to this casts through one face
# a face's window reaches past its cone (a cube face past 45 degrees) by this share of its
# half-width: 4 texels of the coarsest mip (one page), what the filter and the pages marked
# around a point reach past a face's edge
FACE_MARGIN = 1.0 / 16.0
NEAR_SHARE = 1.0 / 2000.0  # a face's near plane, a share of its far distance


@dataclass(frozen=True)
class Light:
    """A spot or point light. `direction`: the way a spot shines (need not be unit);
    `color`: linear RGB, multiplied by `intensity`; `range`: None for none."""

    kind: str  # "point" or "spot"
    position: tuple[float, float, float]
    intensity: float = 1.0
    color: tuple[float, float, float] = (1.0, 1.0, 1.0)
    direction: tuple[float, float, float] = (0.0, -1.0, 0.0)
    range: float | None = None
    inner_cone: float = 0.0
    outer_cone: float = math.pi / 4
    shadows: bool = True

    def __post_init__(self) -> None:
        """ValueError naming the field for a light that cannot be drawn right."""
        if self.kind not in ("point", "spot"):
            raise ValueError(f"Light.kind must be 'point' or 'spot', not {self.kind!r}")
        for name in ("position", "color", "direction"):
            v = getattr(self, name)
            if not (isinstance(v, (tuple, list, np.ndarray)) and len(v) == 3
                    and all(_real(x) and math.isfinite(x) for x in v)):
                raise ValueError(f"Light.{name} must be three finite numbers, not {v!r}")
            object.__setattr__(self, name, tuple(float(x) for x in v))
        if min(self.color) < 0:
            raise ValueError(f"Light.color must be >= 0, not {self.color!r}")
        if not (_real(self.intensity) and math.isfinite(self.intensity)
                and self.intensity >= 0):
            raise ValueError(f"Light.intensity must be a finite number >= 0, not "
                             f"{self.intensity!r}")
        if self.range is not None and not (_real(self.range) and math.isfinite(self.range)
                                           and self.range > 0):
            raise ValueError(f"Light.range must be None or a finite number > 0, not "
                             f"{self.range!r}")
        if self.kind == "spot":
            if not math.hypot(*self.direction) > 0:
                raise ValueError("Light.direction of a spot light must not be zero")
            if not (_real(self.inner_cone) and _real(self.outer_cone)
                    and 0 <= self.inner_cone < self.outer_cone <= math.pi / 2):
                raise ValueError(f"a spot light's cones must be 0 <= inner_cone < outer_cone "
                                 f"<= pi/2 (radians), not {self.inner_cone!r}, "
                                 f"{self.outer_cone!r}")
        if not isinstance(self.shadows, bool):
            raise ValueError(f"Light.shadows must be True or False, not {self.shadows!r}")

    @property
    def faces(self) -> int:
        """The shadow faces it needs: 1 for a spot up to MAX_SPOT_FACE degrees, else 6."""
        if self.kind == "spot" and math.degrees(self.outer_cone) <= MAX_SPOT_FACE:
            return 1
        return 6


def check_lights(lights) -> list[Light]:
    """The lights as a list, ValueError past MAX_LIGHTS or for what is not a Light."""
    out = list(lights or [])
    for i, light in enumerate(out):
        if not isinstance(light, Light):
            raise ValueError(f"light {i} is a {type(light).__name__}, not a renderer.Light")
    if len(out) > MAX_LIGHTS:
        raise ValueError(f"{len(out)} spot and point lights; a scene holds at most {MAX_LIGHTS}")
    return out


def faces_of(lights: list[Light], budget: int) -> list[int]:
    """Shadow faces each light gets: its own (`Light.faces`) while `budget` lasts, in order;
    0 for one without shadows or past the budget."""
    out = []
    for light in lights:
        want = light.faces if light.shadows else 0
        out.append(want if want <= budget else 0)
        budget -= out[-1]
    return out


def faces_wanted(lights) -> int:
    """The shadow faces the lights would take with no budget (`faces_of`)."""
    return sum(light.faces for light in lights if light.shadows)


def view_axes(forward: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(right, up) of a view looking along `forward` (unit), right = forward x up, up towards +Y
    (+Z when looking nearly straight up or down): a light face's, and the sun's light space
    (`renderer.shadows.light_basis`)."""
    ref = np.array([0.0, 1.0, 0.0]) if abs(forward[1]) < 0.99 else np.array([0.0, 0.0, 1.0])
    right = np.cross(forward, ref)
    right /= np.linalg.norm(right)
    return right, np.cross(right, forward)


_CUBE = np.array([[1, 0, 0], [-1, 0, 0], [0, 1, 0], [0, -1, 0], [0, 0, 1], [0, 0, -1]], float)


def face_frames(light: Light, far: float) -> list[dict]:
    """Each shadow face of a light (`Light.faces`): its view_proj (column vectors, world ->
    clip, depth 0 at the near plane .. 1 at `far`), culling planes (four sides and the near
    plane, inward), the tangent of its half-width and its near and far distances. A point
    light's six are +x, -x, +y, -y, +z, -z (shaders/shadow.wgsl `light_face`)."""
    eye = np.asarray(light.position, np.float64)
    if light.faces == 1:
        d = np.asarray(light.direction, np.float64)
        forwards = [d / np.linalg.norm(d)]
        tan_half = math.tan(light.outer_cone) * (1 + FACE_MARGIN)
    else:
        forwards = list(_CUBE)
        tan_half = 1 + FACE_MARGIN
    near = far * NEAR_SHARE
    out = []
    for f in forwards:
        r, u = view_axes(f)
        a = 1.0 / tan_half
        m = np.zeros((4, 4))
        m[0, :3], m[1, :3], m[3, :3] = a * r, a * u, f
        k = far / (far - near)
        m[2, :3] = k * f
        m[:, 3] = -(m[:, :3] @ eye)
        m[2, 3] -= k * near
        sides = [tan_half * f - r, tan_half * f + r, tan_half * f - u, tan_half * f + u]
        planes = [[*(n / np.linalg.norm(n)), -float(n / np.linalg.norm(n) @ eye)] for n in sides]
        planes.append([*f, -float(f @ eye) - near])
        out.append({"view_proj": m, "planes": np.array(planes), "tan_half": tan_half,
                    "near": near, "far": far})
    return out


def light_records(lights: list[Light], first_views: list[int], faces: list[int]) -> np.ndarray:
    """The `lights` uniform (MAX_LIGHTS LIGHT_DTYPE records) for `lights`, the k-th light's
    faces from view `first_views[k]` (`faces[k]` of them; 0: no shadow)."""
    rec = np.zeros(MAX_LIGHTS, LIGHT_DTYPE)
    for k, light in enumerate(lights):
        rec["position"][k] = [*light.position, light.range or 0.0]
        if light.kind == "spot":
            d = np.asarray(light.direction, np.float64)
            rec["direction"][k] = [*(d / np.linalg.norm(d)), math.cos(light.outer_cone)]
            edge = max(math.cos(light.inner_cone) - math.cos(light.outer_cone), 1e-4)
        else:
            rec["direction"][k] = [0.0, -1.0, 0.0, -2.0]  # every direction inside its "cone"
            edge = 1.0
        rec["color"][k] = [*(np.asarray(light.color) * light.intensity), 1.0 / edge]
        rec["views"][k] = [first_views[k], faces[k], 0, 0]
    return rec


def _real(x) -> bool:
    return isinstance(x, numbers.Real) and not isinstance(x, bool)
