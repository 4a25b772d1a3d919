"""trimesh's path: a file read through trimesh, its scene flattened into parts, its materials.

`load_mesh` hands trimesh glTF/GLB and whatever the fast readers leave out, with
``process=False`` (trimesh neither merges nor drops anything, so the attributes survive).
`flatten` gives the triangle geometry of its scene in world space as the parts
`preprocess.io.arrays.merge_and_weld` welds (each node's geometry transformed by its world
transform: positions by the matrix, normals by its inverse transpose, winding reversed where the
transform mirrors), with vertex colours and trimesh's material of each; `materials_of` turns
those into `Material`s and `Texture`s. `quiet` silences trimesh's logging and warnings around
it, and `one_line` makes the one-line message of what it raised.
"""

from __future__ import annotations

import contextlib
import logging
import os
import urllib.parse
import warnings
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from preprocess.io.mtl import for_trimesh
from preprocess.materials import (
    Material,
    Texture,
    TextureError,
    alpha_modes,
    default_material,
    image_rgba,
    texture_pixel_limit,
    vertex_rgba,
    warn_blending,
)
from preprocess.mesh import MeshWarning, mesh_warning


@contextlib.contextmanager
def quiet() -> Iterator[None]:
    """Silence trimesh's logging, Python warnings and numpy floating point warnings; our own
    `MeshWarning`s given inside (`flatten`'s) are given again once it ends."""
    logger = logging.getLogger("trimesh")
    was_disabled = logger.disabled
    logger.disabled = True
    caught: list = []
    try:
        with warnings.catch_warnings(record=True) as caught, np.errstate(all="ignore"):
            warnings.simplefilter("always")
            yield
    finally:
        logger.disabled = was_disabled
    for w in caught:
        if issubclass(w.category, MeshWarning):
            warnings.warn(w.message, stacklevel=3)


def one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    msg = text[0].strip() if text else ""
    if len(msg) > 160:
        msg = msg[:157] + "..."
    return f"{type(exc).__name__}: {msg}" if msg else type(exc).__name__


def load_scene_from(trimesh, source, file_type: str, path: str | os.PathLike):
    """trimesh's scene of ``source`` (a path or a file object), nothing merged or dropped
    (``trimesh``: the module, imported by the caller), the files it names resolved beside the
    file at ``path`` as `file_resolver` resolves them."""
    resolver = file_resolver(trimesh, path, uri=file_type in ("gltf", "glb"),
                             obj=file_type == "obj")
    load_scene = getattr(trimesh, "load_scene", None)
    with texture_pixel_limit():
        if load_scene is not None:
            return load_scene(source, file_type=file_type, process=False, resolver=resolver)
        return trimesh.load(source, file_type=file_type, process=False, force="scene",
                            resolver=resolver)


def file_resolver(trimesh, path: str | os.PathLike, *, uri: bool = False, obj: bool = False):
    """trimesh's resolver of the files a mesh file names, as Tessera reads them: a path relative
    to the mesh's folder, above it too (trimesh 5 refuses ``../x.png`` and then reads a file of
    the same name in the folder instead, if any), or absolute. ``uri``: names are URIs,
    percent-decoded (glTF: ``my%20tex.png``; trimesh does not decode them). ``obj``: the OBJ at
    ``path``: trimesh asks for its first ``mtllib`` only, and is handed what it reads of all of
    its MTL files that are there (`mtl.for_trimesh`: a first one missing lost the others'
    materials; no ``map_Kd``: `preprocess.io.mtl.mtl_extras` reads the textures itself)."""

    class Resolver(trimesh.resolvers.FilePathResolver):  # made here: trimesh loads lazily
        def get(self, name: str) -> bytes:
            if obj:
                return for_trimesh(Path(path))
            name = name.strip()
            return (Path(self.parent) / (urllib.parse.unquote(name) if uri else name)
                    ).read_bytes()

    return Resolver(str(path), allow_anywhere=True)


def flatten(scene, label: str = "mesh", *,
            linear_colors: bool = False) -> tuple[list[tuple], list[str]]:
    """The triangle geometry of a trimesh Scene in world space.

    Returns ``(meshes, other_kinds)``: each mesh is ``(positions (n, 3) float64, faces (m, 3)
    int64, normals (n, 3) float64 or None, uvs (n, 2) float64 or None, colours (n, 4) float64
    linear RGBA or None, material: a trimesh material or None)``; ``other_kinds`` names the
    non-triangle geometry seen ("points", "lines") for the error message. ``linear_colors``:
    the file's vertex colours are linear (glTF), not 8-bit sRGB (PLY, OBJ).
    """
    import trimesh

    meshes: list[tuple] = []
    others: set[str] = set()
    for node in scene.graph.nodes_geometry:
        transform, geom_name = scene.graph[node]
        geom = scene.geometry.get(geom_name)
        if geom is None:
            continue
        if not isinstance(geom, trimesh.Trimesh):
            others.add("points" if isinstance(geom, trimesh.PointCloud) else "lines")
            continue
        faces = np.asarray(geom.faces)
        if faces.size == 0:
            continue
        V = np.asarray(geom.vertices, dtype=np.float64)
        N = geom._cache.cache.get("vertex_normals") if hasattr(geom, "_cache") else None
        if N is not None:
            N = np.asarray(N, dtype=np.float64)
            if N.shape != V.shape:
                N = None
        uv = getattr(geom.visual, "uv", None)
        if uv is not None:
            uv = np.asarray(uv, dtype=np.float64)
            if uv.ndim != 2 or uv.shape[0] != V.shape[0] or uv.shape[1] < 2:
                uv = None
            else:
                uv = uv[:, :2]
        colors = _vertex_colors(geom, len(V), linear=linear_colors,
                                label=f"{label}: mesh {geom_name!r} COLOR_0" if linear_colors
                                else label)
        material = getattr(geom.visual, "material", None)
        T = np.asarray(transform, dtype=np.float64)
        if not np.array_equal(T, np.eye(4)):
            L = T[:3, :3]
            V = V @ L.T + T[:3, 3]
            det = float(np.linalg.det(L))
            if N is not None:
                # Cofactor matrix = det * inverse transpose; times sign(det) keeps outward outward.
                cof = np.stack(
                    [
                        np.cross(L[:, 1], L[:, 2]),
                        np.cross(L[:, 2], L[:, 0]),
                        np.cross(L[:, 0], L[:, 1]),
                    ],
                    axis=1,
                )
                N = N @ (np.sign(det) * cof).T
            if det < 0:
                faces = faces[:, ::-1]
        meshes.append((V, faces, N, uv, colors, material))
    return meshes, sorted(others)


def _vertex_colors(geom, n: int, *, linear: bool, label: str) -> np.ndarray | None:
    """(n, 4) float64 linear RGBA vertex colours of a trimesh geometry, or None. glTF's COLOR_0
    is linear (``linear``); PLY and OBJ colours are 8-bit sRGB by convention."""
    visual = geom.visual
    raw = None
    if getattr(visual, "kind", None) == "vertex":  # ColorVisuals: uint8 RGBA
        raw = np.asarray(visual.vertex_colors)
    elif getattr(visual, "kind", None) == "face":
        mesh_warning(f"{label}: per-face colours are not supported; drawn without them")
    elif hasattr(visual, "vertex_attributes") and "color" in visual.vertex_attributes:
        raw = np.asarray(visual.vertex_attributes["color"])  # glTF COLOR_0 beside a material
    if raw is None or raw.ndim != 2 or raw.shape[0] != n or raw.shape[1] not in (3, 4):
        return None
    if raw.dtype.kind == "f":
        c = raw.astype(np.float64)
    else:
        c = raw.astype(np.float64) / float(np.iinfo(raw.dtype).max)
    return vertex_rgba(c, srgb=not linear, label=label)


def materials_of(parts: list[tuple], label: str) -> tuple[list[Material], list[Texture],
                                                          list[int]]:
    """The distinct materials of the parts (trimesh's, converted), their textures, and each
    part's material index. A part without material gets the default material when another part
    has one; a file without any material has the empty list."""
    if not any(len(p) > 5 and p[5] is not None for p in parts):
        return [], [], [0] * len(parts)
    materials: list[Material] = []
    textures: list[Texture] = []
    seen_mat: dict[int, int] = {}
    seen_tex: dict[tuple[int, bool], int] = {}

    def texture(img, srgb: bool, material: str, role: str) -> int:
        """The index of a material's texture, decoded once for all its uses; -1, named in a
        warning, where it does not decode (Pillow opened it; `gltf_materials` named those it
        could not open)."""
        if img is None:
            return -1
        key = (id(img), srgb)
        if key not in seen_tex:
            try:
                image = image_rgba(img)
            except TextureError as e:
                mesh_warning(f"{label}: material {material!r}: its {role} texture cannot be "
                             f"read: {e}; drawn without it")
                return -1
            seen_tex[key] = len(textures)
            textures.append(Texture(image, srgb,
                                    getattr(img, "filename", None) or f"{material} {role}"))
        return seen_tex[key]

    index = []
    for part in parts:
        m = part[5] if len(part) > 5 else None
        key = id(m)
        if key not in seen_mat:
            seen_mat[key] = len(materials)
            materials.append(default_material() if m is None
                             else _material_from_trimesh(m, texture, label))
        index.append(seen_mat[key])
    return materials, textures, index


def _material_from_trimesh(m, texture, label: str) -> Material:
    """A `Material` from trimesh's PBRMaterial (glTF) or SimpleMaterial (OBJ + MTL)."""
    name = str(getattr(m, "name", None) or "material")
    if hasattr(m, "baseColorTexture"):  # PBRMaterial
        bcf = m.baseColorFactor
        base = (tuple(float(x) / 255.0 for x in np.asarray(bcf).reshape(-1)[:4])
                if bcf is not None else (1.0, 1.0, 1.0, 1.0))
        emissive = (tuple(float(x) for x in np.asarray(m.emissiveFactor).reshape(-1)[:3])
                    if m.emissiveFactor is not None else (0.0, 0.0, 0.0))
        mode = str(m.alphaMode or "OPAQUE").upper()
        if mode not in alpha_modes:
            mode = "OPAQUE"
        if mode == "BLEND":
            warn_blending(label, name)
        return Material(
            name=name, base_color=base,
            base_color_texture=texture(m.baseColorTexture, True, name, "base colour"),
            metallic=1.0 if m.metallicFactor is None else float(m.metallicFactor),
            roughness=1.0 if m.roughnessFactor is None else float(m.roughnessFactor),
            metallic_roughness_texture=texture(m.metallicRoughnessTexture, False, name,
                                               "metallic-roughness"),
            normal_texture=texture(m.normalTexture, False, name, "normal"),
            emissive=emissive,
            emissive_texture=texture(m.emissiveTexture, True, name, "emissive"),
            occlusion_texture=texture(m.occlusionTexture, False, name, "occlusion"),
            double_sided=bool(m.doubleSided),
            alpha_mode=mode,
            alpha_cutoff=0.5 if m.alphaCutoff is None else float(m.alphaCutoff))
    # SimpleMaterial: MTL Kd (a linear factor, as glTF importers read it); its map_Kd, norm and
    # the rest are read by `preprocess.io.mtl.mtl_extras`
    diffuse = getattr(m, "diffuse", None)
    base = (tuple(float(x) / 255.0 for x in np.asarray(diffuse).reshape(-1)[:4])
            if diffuse is not None else (1.0, 1.0, 1.0, 1.0))
    return Material(name=name, base_color=base,
                    base_color_texture=texture(getattr(m, "image", None), True, name, "map_Kd"),
                    metallic=0.0, roughness=0.6)
