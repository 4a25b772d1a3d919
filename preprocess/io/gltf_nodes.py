"""The node tree of a glTF file: each node's world transform, in time linear in the nodes.

A glTF scene is a forest of nodes, each with a local transform (`matrix`, or translation,
rotation and scale) and perhaps a mesh; a node's world transform is its parent's times its own.
`walk` composes them depth first with an explicit stack (trimesh's scene graph orders a chain's
`np.linalg.multi_dot` in cubic time: an 800-deep chain took 74 s). `placements` lists the
nodes that place a mesh; `flat_tree` gives trimesh a tree of those alone, each a root with its
world matrix, so that however deep the file's tree, trimesh's graph is one level deep. A node
that scales its mesh to nothing (a singular transform, as the renderer tests it) draws nothing:
`drawn` leaves it out with a warning. A node with both a `matrix` and TRS properties (glTF allows
one or the other) is drawn with its matrix, as glTF viewers do, and named; a rotation that is
not a unit quaternion is normalized, one of length zero is one line. A file with meshes and no
nodes at all (`default_nodes`) draws each mesh once where it is, named.
"""

from __future__ import annotations

import numpy as np

from preprocess.mesh import MeshError, mesh_warning
from preprocess.tess.scene_file import is_singular

__all__ = ["default_nodes", "drawn", "flat_tree", "local_matrix", "placements", "walk"]


def local_matrix(node: dict) -> np.ndarray:
    """A glTF node's local transform, (4, 4) float64 row-major: `matrix` (column-major in the
    file) or T * R * S."""
    if "matrix" in node:
        return np.asarray(node["matrix"], np.float64).reshape(4, 4).T
    m = np.eye(4)
    if "scale" in node:
        m = np.diag([*np.asarray(node["scale"], np.float64), 1.0]) @ m
    if "rotation" in node:
        q = np.asarray(node["rotation"], np.float64)
        x, y, z, w = q / np.linalg.norm(q)  # `walk` refused a zero quaternion
        r = np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                      [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                      [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])
        rot = np.eye(4)
        rot[:3, :3] = r
        m = rot @ m
    if "translation" in node:
        t = np.eye(4)
        t[:3, 3] = np.asarray(node["translation"], np.float64)
        m = t @ m
    return m


def walk(tree: dict, label: str) -> list[tuple[int, dict, np.ndarray]]:
    """(node index, node, world) of every node of the file's scene, depth first from its
    roots, in time linear in the nodes whatever their depth. A node with two parents, a cycle
    and a transform that overflows are one line each (glTF's nodes form disjoint trees); the
    indices themselves were checked by `gltf_refs.check_refs`."""
    nodes = tree.get("nodes") or []
    scenes = tree.get("scenes") or []
    if scenes:
        roots = scenes[tree.get("scene") or 0].get("nodes") or []
    else:  # no scene: every node nobody names as a child
        children = {c for n in nodes for c in n.get("children") or []}
        roots = [i for i in range(len(nodes)) if i not in children]
    out = []
    parent_of: dict[int, int] = {}  # node -> the node that names it as a child (-1: a root)
    stack = [(int(i), np.eye(4), -1) for i in reversed(roots)]
    while stack:
        i, parent, above = stack.pop()
        if i in parent_of:
            raise MeshError(f"{label}: {_revisit(i, above, parent_of)}")
        parent_of[i] = above
        node = nodes[i]
        _check_local(i, node, label)
        world = parent @ local_matrix(node)
        if not np.isfinite(world).all():
            raise MeshError(f"{label}: node {i}'s transform is not finite")
        out.append((i, node, world))
        stack.extend((int(c), world, i) for c in reversed(node.get("children") or []))
    return out


def _check_local(i: int, node: dict, label: str) -> None:
    """A rotation of length zero is one line; a matrix beside TRS properties is named (the
    matrix is drawn). The values' types were checked by `gltf_refs.check_refs`."""
    if "rotation" in node and not np.linalg.norm(np.asarray(node["rotation"], np.float64)) > 0:
        raise MeshError(f"{label}: node {i}: rotation {node['rotation']} is not a rotation (a "
                        f"quaternion of length zero)")
    trs = [k for k in _TRANSFORM[1:] if k in node]
    if "matrix" in node and trs:
        mesh_warning(f"{label}: node {i} has both a matrix and {', '.join(trs)} (glTF allows one "
                     f"or the other): drawn with the matrix")


def default_nodes(tree: dict, label: str) -> dict:
    """`tree`, or where it has meshes and no nodes at all (nothing places them), a copy with one
    node for each mesh, at the origin, named in a warning (trimesh drew them so)."""
    meshes = tree.get("meshes") or []
    if tree.get("nodes") or not meshes:
        return tree
    mesh_warning(f"{label}: no node places its {len(meshes)} mesh{'es' * (len(meshes) != 1)}: "
                 f"each drawn once where it is")
    t = dict(tree)
    t["nodes"] = [{"mesh": m} for m in range(len(meshes))]
    t["scenes"] = [{"nodes": list(range(len(meshes)))}]
    t["scene"] = 0
    return t


def _revisit(i: int, above: int, parent_of: dict[int, int]) -> str:
    """What it means that the walk reaches node i again, from `above`: a cycle where i is among
    the nodes above it, else a node with two parents (or named twice as a root)."""
    chain = [above]
    while chain[-1] >= 0 and chain[-1] != i:
        chain.append(parent_of[chain[-1]])
    if chain[-1] == i:
        path = " -> ".join(str(n) for n in [i, *reversed(chain[:-1]), i])
        return f"the node tree has a cycle ({path})"
    first, second = parent_of[i], above
    if first < 0 or second < 0:
        return f"node {i} is a root of the scene and also a child (or a root twice)"
    return f"node {i} is a child of two nodes ({first} and {second})"


def placements(walked: list[tuple[int, dict, np.ndarray]]) -> list[tuple[int, int, np.ndarray]]:
    """(node, mesh index, world) of every node with a mesh among the nodes `walk` met, in its
    order (depth first from the scene's roots)."""
    return [(i, int(node["mesh"]), world) for i, node, world in walked if "mesh" in node]


def drawn(placed: list[tuple[int, int, np.ndarray]], label: str
          ) -> list[tuple[int, int, np.ndarray]]:
    """`placed` less the nodes whose transform scales their mesh to nothing (singular, as the
    renderer tests an instance), each named in a warning; `MeshError` where that leaves none."""
    flat = [p for p in placed if is_singular(p[2])]
    for node, mesh, _ in flat:
        mesh_warning(f"{label}: node {node} scales mesh {mesh} to nothing (its transform is "
                     f"singular); left out")
    if placed and len(flat) == len(placed):
        raise MeshError(f"{label}: nothing to draw: every node that places a mesh scales it to "
                        f"nothing (a singular transform)")
    return [p for p in placed if not is_singular(p[2])]


_TRANSFORM = ("matrix", "translation", "rotation", "scale")


def _flat_node(node: dict, mesh: int, world: np.ndarray) -> dict:
    """A root node placing `mesh` at `world`: with the node's own transform where that is its
    world (a root: trimesh composes it as it always did, to the bit), else the world matrix
    (column-major)."""
    if np.array_equal(world, local_matrix(node)) and not (
            "matrix" in node and any(k in node for k in _TRANSFORM[1:])):
        return {"mesh": mesh, **{k: node[k] for k in _TRANSFORM if k in node}}
    return {"mesh": mesh, "matrix": [float(x) for x in world.T.reshape(-1)]}


def flat_tree(tree: dict, placed: list[tuple[int, int, np.ndarray]]) -> dict:
    """The file's JSON with its scene replaced by one root node for each of `placed` (node,
    mesh, world), at its world transform (`_flat_node`); no animations or skins, which name
    the nodes it drops."""
    t = dict(tree)
    t["nodes"] = [_flat_node(tree["nodes"][i], m, w) for i, m, w in placed]
    t["scenes"] = [{"nodes": list(range(len(placed)))}]
    t["scene"] = 0
    t.pop("animations", None)
    t.pop("skins", None)
    return t
