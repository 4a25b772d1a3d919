"""glTF scenes as authored: one asset per distinct mesh, one instance per node that uses it.

A glTF file is a tree of nodes, each with a transform and perhaps a mesh; several nodes may use
one mesh (a wheel four times, a lamp in every street). `load_mesh` flattens all of it into one
mesh; `read_scene` keeps it: each distinct mesh is loaded once in its own space, and every node
that uses it becomes an instance with the node's world transform. `build_scene` preprocesses
each mesh into its own `.tess` (simplified once however many nodes use it) and writes a scene
file (`preprocess.tess.scene_file`: the format `tessera render` and `tessera view` open) that
places them:

    lamp.json                {"assets": {"post": "lamp.post.tess", ...},
                              "instances": [{"asset": "post", "matrix": [[...], ...]}, ...]}
    lamp.post.tess, lamp.bulb.tess, ...

Distinct means the same geometry: two glTF meshes whose primitives read the same accessors with
the same materials are one (exporters, trimesh's among them, write a mesh per node that share
accessors). A node whose transform mirrors (negative determinant) uses a mirrored copy of its mesh
(x negated, winding reversed) and the transform times that mirror, so that every instance
transform keeps the winding (the renderer culls back faces by it). A file of one mesh in one node
is no scene (`preprocess` builds it as one `.tess`) unless a node places a light: the scene file
carries the lights (`scene_lights`). A node that scales its mesh to nothing is left out with a
warning (`gltf_nodes.drawn`); one the renderer could not place is refused as the scene file's
reader and the renderer would refuse it (`check_transform`, `instance_reach`), before anything
is built. (Named apart from `renderer/scene.py`, the GPU scene.)
"""

from __future__ import annotations

import json
import math
import os
import re
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from preprocess.io.gltf_nodes import drawn, placements, walk
from preprocess.mesh import Mesh, MeshError, MeshWarning
from preprocess.tess.atomic import fsync_dir
from preprocess.tess.container import write_tess
from preprocess.tess.limits import MAX_WORLD, TEXTURE_SET_KIND, TEXTURE_SET_NAME
from preprocess.tess.records import DEFLATED_SECTIONS
from preprocess.textures import texture_set
from preprocess.tess.scene_file import (
    MAX_LIGHTS,
    box_sphere,
    check_transform,
    instance_reach,
    write_scene_file,
)

__all__ = ["SceneMeshes", "build_scene", "read_scene", "scene_summary"]

MIRROR = np.diag([-1.0, 1.0, 1.0, 1.0])  # object-space mirror of a mirrored node's mesh


@dataclass
class SceneMeshes:
    """A glTF scene: `meshes` (name -> Mesh, object space) and `instances` (mesh name, (4, 4)
    float64 object-to-world, row-major), in node order."""

    meshes: dict[str, Mesh] = field(default_factory=dict)
    instances: list[tuple[str, np.ndarray]] = field(default_factory=list)
    # the sun, (azimuth, elevation) degrees: the scene's first directional light
    # (KHR_lights_punctual) above the horizon, or None
    sun: tuple[float, float] | None = None
    # spot and point lights, scene-file entries in world space (scene_lights)
    lights: list[dict] = field(default_factory=list)
    sunless: bool = False  # lit by its own lights only: the scene file says "sun": null


def _places_light(node: dict) -> bool:
    """Whether a glTF node places a light (`KHR_lights_punctual`)."""
    return "light" in ((node.get("extensions") or {}).get("KHR_lights_punctual") or {})


def scene_lights(tree: dict, label: str, walked: list[tuple[int, dict, np.ndarray]],
                 targets: list[np.ndarray] | None = None
                 ) -> tuple[tuple[float, float] | None, list[dict]]:
    """The lights of a glTF scene (`KHR_lights_punctual`, each shining down its node's -Z):
    its sun, (azimuth, elevation) degrees as `RenderOptions.sun`, from its first directional
    light above the horizon (or None); and its spot and point lights (the first MAX_LIGHTS) as
    scene-file entries (preprocess/tess/scene_file.py) in world space, their intensities in suns:
    in units of the sun's illuminance where there is one, else such that the brightest gives
    one sun at the mean distance to `targets` (the meshes' world origins; 1 without them).
    What is not drawn is named in a `MeshWarning`: other directional lights, one below the
    horizon, lights past MAX_LIGHTS, the sun's colour and intensity (Tessera's sun is white).
    walked: the scene's nodes as `gltf_nodes.walk` met them. A light's values are checked by
    `io.gltf.read_gltf_json`."""
    lights = ((tree.get("extensions") or {}).get("KHR_lights_punctual") or {}).get("lights") or []
    placed = [(node, world) for _i, node, world in walked if _places_light(node)]
    sun, sun_lux, local, left = None, 1.0, [], []
    for node, world in placed:
        light = lights[int(node["extensions"]["KHR_lights_punctual"]["light"])]
        kind = light.get("type")
        down = world[:3, :3] @ np.array([0.0, 0.0, -1.0])  # the way it shines
        if kind in ("spot", "point"):
            entry = {"type": kind, "position": [float(x) for x in world[:3, 3]],
                     "intensity": float(light.get("intensity", 1.0)),
                     "color": [float(x) for x in light.get("color", [1.0, 1.0, 1.0])]}
            if "range" in light:
                entry["range"] = float(light["range"])
            if kind == "spot":
                if not np.linalg.norm(down) > 0:
                    left.append("a spot light with a singular transform")
                    continue
                cone = light.get("spot") or {}
                entry["direction"] = [float(x) for x in down / np.linalg.norm(down)]
                entry["inner_cone"] = math.degrees(cone.get("innerConeAngle", 0.0))
                entry["outer_cone"] = math.degrees(cone.get("outerConeAngle", math.pi / 4))
            local.append(entry)
            continue
        if not np.linalg.norm(down) > 0:
            left.append("a directional light with a singular transform")
            continue
        azimuth, elevation = _sun_angles(-down)
        if sun is not None:
            left.append("a second directional light")
        elif elevation <= 0:
            left.append(f"a directional light {-elevation:.0f} degrees below the horizon")
        else:
            sun, sun_lux = (azimuth, elevation), float(light.get("intensity", 1.0))
            if light.get("color", [1.0, 1.0, 1.0]) != [1.0, 1.0, 1.0]:
                left.append("the sun's colour (Tessera's sun is white)")
    if len(local) > MAX_LIGHTS:
        left.append(f"{len(local) - MAX_LIGHTS} spot and point lights past the first "
                    f"{MAX_LIGHTS}")
        local = local[:MAX_LIGHTS]
    if local:
        unit = sun_lux
        if sun is None:
            brightest = max(local, key=lambda e: e["intensity"])
            p = np.asarray(brightest["position"])
            d = (float(np.mean([np.linalg.norm(t - p) for t in targets])) if targets else 1.0)
            unit = brightest["intensity"] / max(d, 1e-6) ** 2
        for e in local:
            e["intensity"] = e["intensity"] / unit if unit > 0 else 0.0
    if left:
        warnings.warn(MeshWarning(f"{label}: lights not drawn: {'; '.join(left)}"
                                  + ("" if sun or local else "; the default sun lights the scene")),
                      stacklevel=2)
    return sun, local


def _sun_vector(azimuth: float, elevation: float) -> np.ndarray:
    """The unit vector towards a sun at (azimuth, elevation) degrees (renderer.shadows'
    convention: Y up, azimuth 0 towards +Z, 90 towards +X)."""
    a, e = math.radians(azimuth), math.radians(elevation)
    return np.array([math.cos(e) * math.sin(a), math.sin(e), math.cos(e) * math.cos(a)])


def _sun_angles(d: np.ndarray) -> tuple[float, float]:
    """(azimuth, elevation) degrees of a direction towards the sun (`_sun_vector`'s inverse)."""
    d = np.asarray(d, np.float64) / np.linalg.norm(d)
    return (math.degrees(math.atan2(d[0], d[2])) % 360.0,
            math.degrees(math.asin(float(np.clip(d[1], -1.0, 1.0)))))


def _signature(mesh: dict) -> str:
    """What makes two glTF meshes the same geometry: their primitives' accessors, indices,
    modes, materials and targets (names and extras aside)."""
    prims = [{k: p.get(k) for k in ("attributes", "indices", "mode", "material", "targets",
                                    "extensions")} for p in mesh.get("primitives") or []]
    return json.dumps(prims, sort_keys=True)


def _safe(name: str) -> str:
    s = re.sub(r"[^A-Za-z0-9_-]+", "-", name).strip("-")
    return s[:40] or "mesh"


def _single_mesh_tree(tree: dict, mesh_index: int) -> dict:
    """The file's JSON with one scene of one untransformed node holding mesh `mesh_index`."""
    t = dict(tree)
    t["nodes"] = [{"mesh": mesh_index}]
    t["scenes"] = [{"nodes": [0]}]
    t["scene"] = 0
    t.pop("animations", None)
    t.pop("skins", None)
    return t


def _mirrored(mesh: Mesh) -> Mesh:
    """`mesh` mirrored in x: positions and normals negated in x, winding reversed."""
    pos = mesh.positions.copy()
    pos[:, 0] = -pos[:, 0] + np.float32(0.0)
    nrm = mesh.wedge_normal.copy()
    nrm[:, 0] = -nrm[:, 0] + np.float32(0.0)
    return Mesh(positions=pos, triangles=np.ascontiguousarray(mesh.triangles[:, ::-1]),
                wedge_position=mesh.wedge_position, wedge_normal=nrm, wedge_uv=mesh.wedge_uv,
                name=mesh.name + "-mirrored", wedge_color=mesh.wedge_color,
                wedge_material=mesh.wedge_material, materials=mesh.materials,
                textures=mesh.textures)


_OBJ_OBJECT = re.compile(rb"^[ \t]*o[ \t]+([^\r\n]*)", re.MULTILINE)
_OBJ_FACE = re.compile(rb"^[ \t]*f[ \t]", re.MULTILINE)


def _obj_objects(path: Path, crease: float) -> SceneMeshes | None:
    """An OBJ of several objects (`o` lines with faces): a mesh per object (the file's text with
    the other objects' faces left out: vertices are global, unused ones drop), each placed once
    where it is (identity). None for fewer than two objects with faces."""
    from preprocess.io.mtl import has_material_library
    from preprocess.io.obj import mesh_from_obj_text, warn_face_lines

    data = path.read_bytes()
    heads = list(_OBJ_OBJECT.finditer(data))
    if len(heads) < 2:
        return None
    # the text before the first `o` line, then each object's: an object of its own where it has
    # faces (faces before the first `o` line: "default")
    cuts = [0, *(h.start() for h in heads), len(data)]
    names = ["default", *(h.group(1).strip().decode("utf-8", "replace") or f"object{k}"
                          for k, h in enumerate(heads))]
    chunks = [data[cuts[k] : cuts[k + 1]] for k in range(len(cuts) - 1)]
    objects = [k for k, c in enumerate(chunks) if _OBJ_FACE.search(c)]
    if len(objects) < 2:
        return None
    # every line but the faces (vertices, usemtl ...), kept in every object's text
    bare = [b"".join(line for line in c.splitlines(keepends=True) if not _OBJ_FACE.match(line))
            for c in chunks]
    warn_face_lines(data, path.name)  # once, with the file's line numbers
    has_material_library(data, path, path.name)  # the libraries missing named, once
    out = SceneMeshes()
    taken: set[str] = set()
    # every object reads the same material libraries: what they lack is said once, not per object
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", MeshWarning)
        for k in objects:
            text = b"".join(chunks[j] if j == k else bare[j] for j in range(len(chunks)))
            base = _safe(names[k])
            key, n = base, 2
            while key in taken:
                key, n = f"{base}-{n}", n + 1
            taken.add(key)
            out.meshes[key] = mesh_from_obj_text(path, text, name=key, crease_angle=crease)
            out.instances.append((key, np.eye(4)))
    for message in dict.fromkeys(str(w.message) for w in caught):
        warnings.warn(message, MeshWarning, stacklevel=3)
    return out


def read_scene(path: str | os.PathLike, *, crease_angle: float | None = None
               ) -> SceneMeshes | None:
    """The meshes and instances of a glTF/GLB file (or of an OBJ of several objects: a mesh
    each, placed where they are), or None where it is no scene (one mesh used by one node, one
    object, or another format): then `load_mesh` reads it as one asset.

    Raises:
        MeshError: one line naming the file (a broken file, a node tree with a cycle, a node
            the renderer could not place: a number past MAX_WORLD, bounds reaching past it).
    Warns:
        MeshWarning: as `load_mesh`.
    """
    from preprocess.config import DEFAULT_CREASE_DEGREES
    from preprocess.io.gltf import mesh_from_gltf_json, read_gltf_json

    p = Path(path)
    crease = DEFAULT_CREASE_DEGREES if crease_angle is None else crease_angle
    if p.suffix.lower() == ".obj" and p.is_file():
        return _obj_objects(p, crease)
    if p.suffix.lower() not in (".gltf", ".glb") or not p.is_file():
        return None
    label = p.name
    # the file's warnings are held until it is known to be a scene: where it is not,
    # `load_mesh` reads and checks it again, and they would show twice
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", MeshWarning)
        tree = read_gltf_json(p)
        walked = walk(tree, label)  # once: the meshes and the lights are read off it
        placed = drawn(placements(walked), label)  # a node scaled to nothing: left out
    lit = any(_places_light(node) for _i, node, _w in walked)
    if len(placed) < (1 if lit else 2):  # one mesh with lights placed is a scene
        return None
    for w in caught:  # the lights are the scene's to name (scene_lights)
        if not str(w.message).startswith(f"{label}: lights "):
            warnings.warn(w.message, w.category, stacklevel=2)
    sun, lights = scene_lights(tree, label, walked, [world[:3, 3] for _, _, world in placed])
    for node, _m, world in placed:  # before any mesh is read
        try:
            check_transform(world, f"node {node}")
        except ValueError as e:
            raise MeshError(f"{label}: {e}") from None
    names = _mesh_names(tree.get("meshes") or [], placed)
    out = SceneMeshes(sun=sun, lights=lights, sunless=sun is None and bool(lights))
    for node, m, world in placed:
        key, name = names[m]
        if name not in out.meshes:
            out.meshes[name] = mesh_from_gltf_json(p, _single_mesh_tree(tree, key), name=name,
                                                   crease_angle=crease)
        if np.linalg.det(world[:3, :3]) < 0:
            mirror = name + "-mirrored"
            if mirror not in out.meshes:
                out.meshes[mirror] = _mirrored(out.meshes[name])
            name, world = mirror, world @ MIRROR
        out.instances.append((name, world))
        pos = out.meshes[name].positions
        reach = instance_reach(world, box_sphere(pos.min(axis=0), pos.max(axis=0)))
        if not reach <= MAX_WORLD:  # Renderer.add_instance's test, before anything is built
            raise MeshError(f"{label}: node {node} places mesh {name!r} {reach:.3g} from the "
                            f"world origin; float32 positions hold at most {MAX_WORLD:.0e}")
    return out


def _mesh_names(meshes: list[dict], placed: list[tuple[int, int, np.ndarray]]
                ) -> dict[int, tuple[int, str]]:
    """Mesh index -> (the first placed mesh of the same geometry, `_signature`; the asset name
    they share: the mesh's name made safe, numbered where two are the same)."""
    signature = {m: _signature(meshes[m]) for _, m, _ in placed}
    first: dict[str, int] = {}  # signature -> the first mesh index with it
    for _, m, _ in placed:
        first.setdefault(signature[m], m)
    names: dict[int, str] = {}
    taken: set[str] = set()
    for m in first.values():
        base = _safe(str(meshes[m].get("name") or f"mesh{m}"))
        name, k = base, 2
        while name in taken:
            name, k = f"{base}-{k}", k + 1
        taken.add(name)
        names[m] = name
    return {m: (first[sig], names[first[sig]]) for m, sig in signature.items()}


def scene_summary(scene: SceneMeshes) -> str:
    """One line: how many meshes, instances and triangles."""
    per = {n: 0 for n in scene.meshes}
    for n, _ in scene.instances:
        per[n] += 1
    tris = sum(scene.meshes[n].triangle_count * k for n, k in per.items())
    return (f"{len(scene.meshes)} meshes, {len(scene.instances)} instances, {tris:,} triangles "
            f"placed ({sum(m.triangle_count for m in scene.meshes.values()):,} stored)")


def _turned(light: dict, turn: np.ndarray) -> dict:
    """A scene-file light with its position and direction turned (a Z-up scene made Y-up)."""
    out = dict(light)
    out["position"] = [float(x) for x in turn[:3, :3] @ np.asarray(light["position"])]
    if "direction" in light:
        out["direction"] = [float(x) for x in turn[:3, :3] @ np.asarray(light["direction"])]
    return out


def build_scene(scene: SceneMeshes, output: str | os.PathLike, config=None, *,
                progress=None, verify: bool = False, up: str = "y",
                source_key: str | None = None) -> list:
    """Preprocess every mesh of `scene` into `<output stem>.<mesh>.tess` beside `output` (a
    `.json` scene file), their textures once into `<output stem>.@textures.tess` (each image
    the meshes share stored once, `preprocess.textures.texture_set`; the meshes' materials index
    it), then write the scene file; returns the `BuildResult`s. The files appear
    together, the scene file last: each `.tess` waits complete under its temporary name
    (`build_file`'s `stage_into`) until all are, then they are renamed into place and the scene
    file written. Whatever stops it before (an error, a KeyboardInterrupt) leaves the folder as
    it was, an earlier build of the scene whole; a process killed leaves temporary files only,
    which the next build removes. `up`: the scene's up axis; a Z-up scene's instance transforms
    are turned Y-up (the meshes stay in their own space).
    progress(stage, done, total): each mesh's build stages as `build_file` reports them (where a
    caller cancels), and ("meshes", k, n) as the meshes are done: ("meshes", n, n) once every
    `.tess` is complete, just before they are renamed into place, the last moment to cancel.
    source_key: kept in every mesh's meta (`build_file`'s)."""
    from preprocess.build import build_file
    from preprocess.config import BuildConfig
    from preprocess.up_axis import Z_UP_TO_Y_UP

    out = Path(output)
    cfg = config or BuildConfig()
    if cfg.up != "y":  # the rotation goes into the instances, not into every mesh
        import dataclasses

        cfg = dataclasses.replace(cfg, up="y")
    turn = np.eye(4)
    if up == "z":
        turn[:3, :3] = Z_UP_TO_Y_UP
    stem = out.name[: -len(out.suffix)] if out.suffix else out.name
    staged: dict[Path, list[Path]] = {}  # each .tess -> its temporary name, once it has one
    results, files = [], {}
    renaming = False
    try:
        # the meshes' textures once, in a file of their own that their materials index
        shared = texture_set(scene.meshes.values(), max_texture_size=cfg.max_texture_size,
                             compression=cfg.texture_compression)
        if shared is not None:
            shared.file = f"{stem}.{TEXTURE_SET_NAME}.tess"
            tex_path = out.parent / shared.file
            staged[tex_path] = []
            write_tess(tex_path, meta={"kind": TEXTURE_SET_KIND, "texture_set": shared.digest,
                                       "name": stem}, sections=shared.sections,
                       pages=np.zeros((0, 16), np.uint8), page_flags=np.zeros(0, np.uint32),
                       stage_into=staged[tex_path], deflate=DEFLATED_SECTIONS)
        for k, (name, mesh) in enumerate(scene.meshes.items()):
            tess = out.parent / f"{stem}.{name}.tess"
            if progress is not None:
                progress("meshes", k, len(scene.meshes))
            staged[tess] = []
            results.append(build_file(mesh, tess, cfg, progress=progress, verify=verify,
                                      stage_into=staged[tess], texture_set=shared,
                                      source_key=source_key))
            files[name] = tess.name
        if progress is not None:
            progress("meshes", len(scene.meshes), len(scene.meshes))
        doc = _scene_doc(scene, files, turn)
        renaming = True
        for tess, (tmp,) in staged.items():
            os.replace(tmp, tess)
        fsync_dir(out.parent)
        write_scene_file(out, doc)
    except BaseException:
        _unstage(staged, out, renaming)
        raise
    return results


def _unstage(staged: dict[Path, list[Path]], scene_file: Path, renaming: bool) -> None:
    """Remove what a stopped `build_scene` wrote: the temporary files, and once the renaming
    had begun, the files renamed into place (their temporary name gone) and the scene file
    (an earlier one would name this build's files, removed)."""
    for tess, temps in staged.items():
        for tmp in temps:
            if tmp.exists():
                tmp.unlink(missing_ok=True)
            elif renaming:
                tess.unlink(missing_ok=True)
    if renaming:
        scene_file.unlink(missing_ok=True)


def _scene_doc(scene: SceneMeshes, files: dict[str, str], turn: np.ndarray) -> dict:
    """The scene file's content: the assets (`files`: mesh name -> .tess file name), the
    instances, the sun and the lights, all turned by `turn` (a Z-up scene made Y-up)."""
    doc = {
        "assets": files,
        "instances": [{"asset": name, "matrix": [[float(x) for x in row]
                                                 for row in (turn @ world)]}
                      for name, world in scene.instances],
    }
    if scene.sun is not None:
        # the light's direction turns with the scene (Y up: only a Z-up scene's moves)
        az, el = _sun_angles(turn[:3, :3] @ _sun_vector(*scene.sun))
        if el > 0:
            doc["sun"] = {"azimuth": round(az, 6), "elevation": round(el, 6)}
    elif scene.sunless:
        doc["sun"] = None
    if scene.lights:
        doc["lights"] = [_turned(e, turn) for e in scene.lights]
    return doc
