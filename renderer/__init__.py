"""Tessera's runtime: draw `.tess` assets with GPU-driven cluster culling and rasterization.

    from renderer import Renderer, Camera
    r = Renderer(512, 512)
    rock = r.load("out/rock.tess")
    r.add_grid(rock, 16)
    img = r.render(Camera.framing(*r.bounds()))
    img.color, img.depth, img.normal, img.instance, img.cluster, img.triangle, img.stats

Names are imported lazily, so that `tessera info` does not load wgpu.
"""

from __future__ import annotations

from typing import Any

_EXPORTS = {
    "Renderer": "renderer.renderer",
    "RenderOptions": "renderer.options",
    "RenderResult": "renderer.results",
    "FrameStats": "renderer.results",
    "DEBUG_VIEWS": "renderer.limits",
    "Camera": "renderer.camera",
    "Light": "renderer.lights",
    "ReferenceRenderer": "renderer.oracles.reference",
    "create_context": "renderer.device",
    "DeviceError": "renderer.device",
    "SceneError": "renderer.scene",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        import importlib

        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'renderer' has no attribute {name!r}")
