"""The camera: a right-handed view (looking down -Z), a perspective projection with reversed Z and
an infinite far plane, and what the culling passes derive from them.

Conventions (shared by every pass and by the reference renderer):
- matrices are numpy (4, 4) float32 applied to column vectors, ``clip = proj @ view @ world @ p``;
  they are uploaded transposed (WGSL `mat4x4<f32>` is column-major);
- clip z is ``near`` and clip w is the distance in front of the camera, so NDC depth is
  ``near / distance``: 1 on the near plane, 0 at infinity. The nearest surface has the largest
  depth, which is what the visibility buffer's `atomicMax` keeps;
- the LOD scale is the pixels per world unit at distance 1: ``height / (2 tan(fov_y / 2))``; an
  error e at distance d projects to ``e * lod_scale / d`` pixels.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, field

import numpy as np

from renderer.limits import MAX_FOV, MAX_WORLD, MIN_FOV


def _real(x) -> bool:
    return isinstance(x, numbers.Real) and not isinstance(x, bool)


def _normalized(v: tuple[float, float, float]) -> tuple[float, float, float]:
    n = max(math.sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2]), 1e-30)
    return v[0] / n, v[1] / n, v[2] / n


def _cross(a, b) -> tuple[float, float, float]:
    return (a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0])


def look_at(eye: np.ndarray, target: np.ndarray, up: np.ndarray | None = None) -> np.ndarray:
    """(4, 4) float32 world-to-view matrix of a camera at `eye` looking at `target`.
    (Scalar float64 arithmetic: it runs every frame, and numpy's small-array calls cost more
    than the maths.)"""
    e = tuple(float(x) for x in eye)
    d = tuple(float(t) - x for t, x in zip(target, e, strict=True))
    if not math.isfinite(sum(d)) or not any(d):
        raise ValueError(f"look_at: eye {list(e)} and target {[float(t) for t in target]} "
                         "must be finite and distinct points")
    f = _normalized(d)
    u0 = (0.0, 1.0, 0.0) if up is None else _normalized(tuple(float(x) for x in up))
    # looking along `up` (straight down, say) leaves the roll undefined: another up, the world
    # axis least aligned with the view, keeps such a camera usable
    if abs(f[0] * u0[0] + f[1] * u0[1] + f[2] * u0[2]) > 0.999 or not any(u0):
        u0 = (0.0, 0.0, 1.0) if abs(f[2]) < 0.9 else (1.0, 0.0, 0.0)
    s = _normalized(_cross(f, u0))
    u = _cross(s, f)
    b = (-f[0], -f[1], -f[2])
    return np.array([[*s, -(s[0] * e[0] + s[1] * e[1] + s[2] * e[2])],
                     [*u, -(u[0] * e[0] + u[1] * e[1] + u[2] * e[2])],
                     [*b, -(b[0] * e[0] + b[1] * e[1] + b[2] * e[2])],
                     [0.0, 0.0, 0.0, 1.0]], np.float32)


def perspective(fov_y: float, aspect: float, near: float) -> np.ndarray:
    """(4, 4) float32 reversed-Z projection with an infinite far plane (fov_y in radians)."""
    f = 1.0 / math.tan(fov_y / 2)
    p = np.zeros((4, 4), np.float64)
    p[0, 0] = f / aspect
    p[1, 1] = f
    p[2, 3] = near
    p[3, 2] = -1.0
    return p.astype(np.float32)


@dataclass
class Camera:
    """A perspective camera. `fov_y` is in degrees; `near` is the near-plane distance. The
    constructor checks its values (ValueError naming the field); an `up` parallel to the view
    is replaced by another axis (`look_at`)."""

    eye: np.ndarray = field(default_factory=lambda: np.array([0.0, 0.0, 3.0]))  # position
    target: np.ndarray = field(default_factory=lambda: np.zeros(3))  # point looked at
    up: np.ndarray = field(default_factory=lambda: np.array([0.0, 1.0, 0.0]))  # world up
    fov_y: float = 60.0  # vertical field of view, degrees (MIN_FOV..MAX_FOV: 1..179)
    near: float = 0.01  # near plane distance (world units, > 0)

    def __post_init__(self) -> None:
        for name in ("eye", "target", "up"):
            v = np.asarray(getattr(self, name), np.float64)
            if v.shape != (3,) or not np.isfinite(v).all():
                raise ValueError(f"camera {name} must be 3 finite numbers, not "
                                 f"{getattr(self, name)!r}")
            if not np.abs(v).max() <= MAX_WORLD:
                raise ValueError(f"camera {name} {v.tolist()} is beyond float32's reach: "
                                 f"coordinates up to {MAX_WORLD:.0e} (limits.MAX_WORLD)")
        check_fov(self.fov_y, "camera fov_y")
        if not (_real(self.near) and math.isfinite(self.near) and self.near > 0):
            raise ValueError(f"camera near must be a finite number > 0, not {self.near!r}")
        if not np.asarray(self.up, np.float64).any():
            raise ValueError("camera up must not be the zero vector")
        if np.array_equal(np.asarray(self.eye, np.float32), np.asarray(self.target, np.float32)):
            raise ValueError(f"camera eye and target are the same point "
                             f"({np.asarray(self.eye, np.float64).tolist()})")

    def view(self) -> np.ndarray:
        return look_at(self.eye, self.target, self.up)

    def projection(self, aspect: float) -> np.ndarray:
        return perspective(math.radians(self.fov_y), aspect, self.near)

    def view_proj(self, width: int, height: int) -> np.ndarray:
        """(4, 4) float32 world-to-clip matrix for a width x height viewport."""
        return self.matrices(width, height)[2]

    def matrices(self, width: int, height: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(view, projection, view_proj), each (4, 4) float32, computed once (per frame)."""
        view = self.view()
        proj = self.projection(width / height)
        return view, proj, (proj.astype(np.float64) @ view.astype(np.float64)).astype(np.float32)

    def lod_scale(self, height: int) -> float:
        """Pixels per world unit at distance 1 (see the module docstring)."""
        return height / (2 * math.tan(math.radians(self.fov_y) / 2))

    def float32_error_px(self, height: int, point) -> float:
        """How many pixels apart float32 positions near `point` are in a `height`-pixel image
        from this camera: the GPU holds world positions in float32, whose spacing (2^-23 of the
        magnitude) grows with the distance from the world origin. Above 1, what is drawn
        there is visibly wrong; a scene placed 1e8 from the origin draws nothing at all."""
        p = np.asarray(point, np.float64)
        e = np.asarray(self.eye, np.float64)
        reach = max(float(np.abs(p).max()), float(np.abs(e).max()))
        dist = float(np.linalg.norm(e - p))
        if dist == 0:
            return math.inf if reach else 0.0
        return reach * 2.0**-23 * self.lod_scale(height) / dist

    @staticmethod
    def framing(center: np.ndarray, radius: float, *, direction=(0.3, 0.35, 1.0),
                fov_y: float = 60.0, fill: float = 1.0) -> Camera:
        """A camera looking at a sphere from `direction`, at the distance where the sphere's
        silhouette fills `fill` of the view height: 0 < fill <= `max_fill(fov_y)`, where the
        camera reaches the sphere (2 at 60 degrees; past it, inside the sphere, it would see the
        back faces of a closed object, or nothing). The near plane is a thousandth of the
        distance, whatever the scene's size (a scene 1e-7 across too), and in front of the
        sphere (at 179 degrees the camera almost touches it)."""
        check_fov(fov_y, "fov_y")
        most = max_fill(fov_y)
        if not (_real(fill) and math.isfinite(fill) and 0 < fill <= most):
            raise ValueError(f"fill must be a number in (0, {most:.3g}] at a {fov_y:g} degree "
                             f"field of view (past it the camera is inside the sphere), not "
                             f"{fill!r}")
        if not (_real(radius) and math.isfinite(radius) and radius > 0):
            raise ValueError(f"framing needs a sphere of finite radius > 0, not {radius!r}")
        d = np.asarray(direction, np.float64)
        if d.shape != (3,) or not np.isfinite(d).all() or not d.any():
            raise ValueError(f"framing direction must be a non-zero x, y, z, not {direction!r}")
        d = d / np.linalg.norm(d)
        dist = radius / math.sin(math.radians(fov_y) / 2) / fill
        c = np.asarray(center, np.float64)
        near = dist * 1e-3
        if dist > radius:  # and nearer than the sphere (a wide view puts the camera close)
            near = min(near, (dist - radius) / 2)
        return Camera(eye=c + d * dist, target=c, fov_y=fov_y, near=near)


def max_fill(fov_y: float) -> float:
    """The largest `Camera.framing` fill at this field of view (degrees): the camera on the
    sphere."""
    return 1.0 / math.sin(math.radians(fov_y) / 2)


def check_fov(fov_y, what: str = "fov") -> None:
    """ValueError unless `fov_y` is a number of degrees in MIN_FOV..MAX_FOV (1..179)."""
    if not (_real(fov_y) and MIN_FOV <= fov_y <= MAX_FOV):
        raise ValueError(f"{what} must be between {MIN_FOV:g} and {MAX_FOV:g} degrees, "
                         f"not {fov_y!r}")


def frustum_planes(view_proj: np.ndarray) -> np.ndarray:
    """(5, 4) float32 world-space planes (nx, ny, nz, d), normalized, inside where
    ``n . p + d >= 0``: left, right, bottom, top, near (the far plane is at infinity).
    (Scalar float64 arithmetic: it runs every frame.)"""
    m = [[float(x) for x in row] for row in np.asarray(view_proj).tolist()]
    r0, r1, r2, r3 = m
    out = []
    for a, sign in ((r0, 1.0), (r0, -1.0), (r1, 1.0), (r1, -1.0), (r2, -1.0)):
        p = [r3[k] + sign * a[k] for k in range(4)]
        n = math.sqrt(p[0] * p[0] + p[1] * p[1] + p[2] * p[2])
        out.append([x / n for x in p])
    return np.array(out, np.float32)
