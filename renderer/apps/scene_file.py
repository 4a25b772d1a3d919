"""Scene files (`scene.json`) into a renderer. The format, its checks, reading and writing, is
`preprocess.tess.scene_file` (its docstring describes a file); here are what only the renderer
knows, the checks it asks for (`RENDERER_CHECKS`: the field of view and the sun the renderer
draws, `renderer.Light` and its checks, `Camera`), and `SceneSpec.apply`, which loads the assets
and adds the instances, the sun and the lights to a `Renderer`.

    spec = load_scene_file("scene.json")      # SceneFileError: one line naming the entry
    spec.apply(renderer, tess_paths)          # name -> asset index
"""

from __future__ import annotations

import os
from dataclasses import dataclass, fields

from preprocess.tess import scene_file as tess_scene
from preprocess.tess.scene_file import Placement, SceneChecks, SceneDoc, SceneFileError
from renderer.camera import Camera, check_fov
from renderer.lights import Light, check_lights
from renderer.options import DEFAULT_SUN, check_sun

__all__ = ["RENDERER_CHECKS", "Placement", "SceneFileError", "SceneSpec", "load_scene_file",
           "parse_scene", "place_scene"]


def _camera(*, eye, target, fov: float, near: float) -> Camera:
    return Camera(eye=eye, target=target, fov_y=fov, near=near)


# what the scene file's reader asks of the renderer (preprocess.tess.scene_file.SceneChecks)
RENDERER_CHECKS = SceneChecks(fov=check_fov, sun=check_sun, light=Light, lights=check_lights,
                              camera=_camera, default_sun=DEFAULT_SUN)


@dataclass
class SceneSpec(SceneDoc):
    """A parsed scene file, its camera a `Camera` and its lights `renderer.Light`s."""

    def apply(self, renderer, tess_paths: dict[str, str | os.PathLike]) -> dict[str, int]:
        """Load the assets (`tess_paths`: name -> .tess file, e.g. from `renderer.apps.loader`) into
        a renderer and add the instances; returns name -> asset index."""
        index = {name: renderer.load(tess_paths[name]) for name in self.assets}
        for p in self.placements:
            a = index[p.asset]
            if p.matrix is not None:
                renderer.add_instance(a, p.matrix)
                continue
            if p.transforms is not None:  # its values checked here: one line naming the entry
                try:
                    renderer.add_instances(a, p.transforms)
                except ValueError as e:
                    raise SceneFileError(f"{self.path}: {p.where}: {e}") from None
                continue
            renderer.add_grid(a, p.count, spacing=p.spacing, origin=p.origin)
        if self.sun is False:
            renderer.set_sun(None)
        elif self.sun is not None:
            renderer.set_sun(*self.sun)
        if self.lights is not None:
            renderer.set_lights(self.lights)
        return index


def place_scene(renderer, spec: SceneSpec | None, tess: str | os.PathLike, *,
                tess_paths: dict[str, str | os.PathLike] | None = None, instances: int = 1,
                ground: bool = False):
    """The scene of `tessera render` and `tessera dataset` into `renderer`: a scene file's
    (`spec`, its assets in `tess_paths`), or the asset `tess` once or as a grid of `instances`;
    a ground plane under it where asked (`assets.ground`). Returns the scene's centre and
    radius, the ground left out."""
    if spec is not None:
        spec.apply(renderer, tess_paths)
    elif instances == 1:
        renderer.add_instance(renderer.load(tess))
    else:
        renderer.add_grid(renderer.load(tess), instances)  # checks the count first
    center, radius = renderer.bounds()
    if ground:
        from assets.ground import ground_tess, ground_transform

        renderer.add_instance(renderer.load(ground_tess()),
                              ground_transform(renderer.scene, center, radius))
    return center, radius


def _spec(doc: SceneDoc) -> SceneSpec:
    return SceneSpec(**{f.name: getattr(doc, f.name) for f in fields(SceneDoc)})


def parse_scene(data, path: str | os.PathLike) -> SceneSpec:
    """Validate a scene file's JSON content; asset paths are resolved against `path`'s folder."""
    return _spec(tess_scene.parse_scene(data, path, RENDERER_CHECKS))


def load_scene_file(path: str | os.PathLike) -> SceneSpec:
    """Read and validate a scene file (`preprocess.tess.scene_file`)."""
    return _spec(tess_scene.read_scene_file(path, RENDERER_CHECKS))
