"""Camera controls for the viewer, independent of any window: they take rendercanvas-style event
dicts (``{"event_type": "pointer_move", "x": .., "y": .., "buttons": (1,)}``, ``"wheel"`` with
``dy``, ``"key_down"``/``"key_up"`` with ``key``) and update a `Camera`, so they are tested by
feeding events.

- Orbit: drag with the left button rotates about the target, right (or middle) button pans,
  the wheel zooms (distance times 1.1 per notch).
- Fly: WASD moves, Q/E down/up, drag to look, Shift for 4x speed; speed follows the scene size.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from renderer.camera import Camera


def _unit(v: np.ndarray) -> np.ndarray:
    return v / max(float(np.linalg.norm(v)), 1e-30)


@dataclass
class CameraControls:
    """Orbit and fly, switchable (`mode`), sharing one camera."""

    camera: Camera
    scene_radius: float = 1.0  # sets speeds and the near plane
    mode: str = "orbit"  # "orbit" or "fly"
    rotate_speed: float = 0.005  # radians per pixel dragged
    fly_speed: float = 0.5  # scene radii per second
    keys: set = field(default_factory=set)
    _drag: tuple | None = None  # (x, y, button)

    def frame_scene(self, center: np.ndarray, radius: float) -> None:
        """Look at the whole scene from the current direction (the 'F' key)."""
        d = _unit(np.asarray(self.camera.eye, np.float64) - np.asarray(self.camera.target))
        framed = Camera.framing(center, radius, direction=d, fov_y=self.camera.fov_y)
        self.camera.eye, self.camera.target = framed.eye, framed.target
        self.camera.near = framed.near
        self.scene_radius = float(radius)

    def _axes(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        fwd = _unit(np.asarray(self.camera.target, np.float64) - self.camera.eye)
        right = _unit(np.cross(fwd, self.camera.up))
        return fwd, right, np.cross(right, fwd)

    def handle_event(self, event: dict) -> bool:
        """Apply one event; returns True if the camera changed (or may change on `update`)."""
        kind = event.get("event_type")
        if kind == "pointer_down":
            self._drag = (event["x"], event["y"], event.get("button", 1))
            return False
        if kind == "pointer_up":
            self._drag = None
            return False
        if kind == "pointer_move" and self._drag is not None:
            x0, y0, button = self._drag
            dx, dy = event["x"] - x0, event["y"] - y0
            self._drag = (event["x"], event["y"], button)
            if self.mode == "orbit" and button == 1:
                self._orbit(dx, dy)
            elif self.mode == "orbit":
                self._pan(dx, dy)
            else:
                self._look(dx, dy)
            return True
        if kind == "wheel":
            self._zoom(float(event.get("dy", 0.0)))
            return True
        if kind == "key_down":
            key = str(event.get("key", "")).lower()
            if key == "tab":
                self.mode = "fly" if self.mode == "orbit" else "orbit"
                return False
            self.keys.add(key)
            return True
        if kind == "key_up":
            self.keys.discard(str(event.get("key", "")).lower())
            return False
        return False

    def _orbit(self, dx: float, dy: float) -> None:
        c = self.camera
        target = np.asarray(c.target, np.float64)
        off = np.asarray(c.eye, np.float64) - target
        r = float(np.linalg.norm(off))
        up = _unit(np.asarray(c.up, np.float64))
        yaw = -dx * self.rotate_speed
        pitch = -dy * self.rotate_speed
        # yaw about the world up, pitch about the camera's right, clamped short of the poles
        off = _rotate(off, up, yaw)
        elev = math.asin(max(-1.0, min(1.0, float(np.dot(_unit(off), up)))))
        pitch = max(-1.5 - elev, min(1.5 - elev, pitch))
        right = _unit(np.cross(off, up))
        off = _rotate(off, right, -pitch)
        c.eye = target + _unit(off) * r

    def _pan(self, dx: float, dy: float) -> None:
        c = self.camera
        _, right, up = self._axes()
        dist = float(np.linalg.norm(np.asarray(c.eye) - c.target))
        scale = dist * 2 * math.tan(math.radians(c.fov_y) / 2) / 600.0
        move = (-dx * right + dy * up) * scale
        c.eye = np.asarray(c.eye, np.float64) + move
        c.target = np.asarray(c.target, np.float64) + move

    def _look(self, dx: float, dy: float) -> None:
        c = self.camera
        fwd, _, _ = self._axes()
        up = _unit(np.asarray(c.up, np.float64))
        fwd = _rotate(fwd, up, -dx * self.rotate_speed)
        elev = math.asin(max(-1.0, min(1.0, float(np.dot(fwd, up)))))
        pitch = max(-1.5 - elev, min(1.5 - elev, -dy * self.rotate_speed))
        fwd = _rotate(fwd, _unit(np.cross(fwd, up)), pitch)
        dist = float(np.linalg.norm(np.asarray(c.target) - c.eye))
        c.target = np.asarray(c.eye, np.float64) + _unit(fwd) * dist

    def _zoom(self, notches: float) -> None:
        c = self.camera
        if self.mode == "fly":  # the wheel changes the flying speed
            self.fly_speed *= 1.1 ** (-np.sign(notches))
            return
        off = np.asarray(c.eye, np.float64) - c.target
        factor = 1.1 ** float(np.clip(notches / 100.0 if abs(notches) > 10 else notches, -20, 20))
        c.eye = np.asarray(c.target, np.float64) + off * factor

    def update(self, dt: float) -> bool:
        """Advance held keys by dt seconds (fly mode moves; orbit mode ignores keys)."""
        if self.mode != "fly" or not self.keys:
            return False
        fwd, right, _ = self._axes()
        up = _unit(np.asarray(self.camera.up, np.float64))
        move = np.zeros(3)
        for key, v in (("w", fwd), ("s", -fwd), ("d", right), ("a", -right), ("e", up),
                       ("q", -up)):
            if key in self.keys:
                move += v
        if not move.any():
            return False
        speed = self.fly_speed * self.scene_radius * (4.0 if "shift" in self.keys else 1.0)
        step = _unit(move) * speed * dt
        self.camera.eye = np.asarray(self.camera.eye, np.float64) + step
        self.camera.target = np.asarray(self.camera.target, np.float64) + step
        return True


def _rotate(v: np.ndarray, axis: np.ndarray, angle: float) -> np.ndarray:
    """Rodrigues' rotation of v about a unit axis."""
    k = _unit(axis)
    return (v * math.cos(angle) + np.cross(k, v) * math.sin(angle)
            + k * float(np.dot(k, v)) * (1 - math.cos(angle)))
