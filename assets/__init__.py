"""The built-in assets: procedural meshes, so that the demo and the tests work on a fresh machine
with nothing downloaded (`rock`: the default boulder, `terrain`: an open heightfield with uvs,
`sphere`: the geodesic sphere of the reference figures)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from preprocess.mesh import Mesh

BUILTIN = ("rock", "terrain", "sphere")


def builtin_mesh(name: str, triangles: int) -> Mesh:
    """The built-in asset `name` (one of BUILTIN) with about `triangles` triangles."""
    from assets import rock, shapes

    if name == "rock":
        return rock.make_rock(triangles)
    if name == "terrain":
        # 2 * resolution^2 triangles
        return rock.make_terrain(resolution=max(1, round((triangles / 2) ** 0.5)))
    if name == "sphere":
        n = max(1, round((triangles / 20) ** 0.5))
        return shapes.geodesic_sphere(n)
    raise ValueError(f"no built-in asset {name!r} (one of {', '.join(BUILTIN)})")
