"""Fixtures shared by the builder's test modules (tests/preprocess): a cluster LOD DAG and BVH
built by hand for the checker's tests (`preprocess.verify`, the cut rule in `preprocess.cut`), and
small assets built and packed once (the packer's and the packed-file checks' tests).

The hand-made DAG covers a 16 x 16 quad height field (vertex (x, y) has id 17 y + x, |z| <= 0.15):

    level 0: c0 = left-bottom, c1 = left-top, c2 = right-bottom, c3 = right-top (128 triangles each)
    groups:  G0 = {c0, c1} (error 0.31), G1 = {c2, c3} (error 0.32)
    level 1: c4 from G0, c5 from G1: fans over each half that keep the shared column x = 8 (locked)
    group:   G2 = {c4, c5} (error 0.35)
    level 2: c6 from G2: the two triangles of the square
    root:    G3 = {c6}
    BVH:     node 0 -> [node 1, G2, G3]; node 1 -> [G0, G1]

Every simplified surface interpolates vertices with |z| <= 0.15 over the same square, so it lies
within 0.3 of the original: the errors above are honest.

And for the loading tests (test_load.py and io/, one test module per module of
`preprocess.io`): the `Mesh` contract and edge checks, writing a small file, loading one through
the fast readers and through trimesh to compare them bit for bit, a load's one-line error, and the
shared real meshes.

Test modules never import each other: what two of them share lives here, handed out by fixtures
(each a function, or the text of a small OBJ).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from assets.rock import make_terrain
from assets.shapes import geodesic_sphere
from preprocess.build import build_asset
from preprocess.config import BuildConfig
from preprocess.io.gltf import glb_bytes
from preprocess.lod import BVH_EMPTY, Bvh, LodDag, bvh_group_ref
from preprocess.mesh import Mesh, MeshError
from preprocess.tess.limits import ROOT_ERROR

# ------------------------------------------------------------------------------ the hand-made DAG

N = 16  # quads per side
ERRORS = (0.31, 0.32, 0.35)


def vid(x: int, y: int) -> int:
    return y * (N + 1) + x


def grid_positions() -> np.ndarray:
    """(289, 3) float32 height field."""
    y, x = np.mgrid[0 : N + 1, 0 : N + 1].astype(np.float64)
    z = 0.15 * np.sin(0.9 * x) * np.cos(0.7 * y)
    return np.stack([x, y, z], axis=-1).reshape(-1, 3).astype(np.float32)


def quads(xs: range, ys: range) -> list[tuple[int, int, int]]:
    tris = []
    for y in ys:
        for x in xs:
            a, b, c, d = vid(x, y), vid(x + 1, y), vid(x + 1, y + 1), vid(x, y + 1)
            tris += [(a, b, c), (a, c, d)]
    return tris


def bounds(points: np.ndarray) -> np.ndarray:
    p = points.astype(np.float64)
    c = 0.5 * (p.min(axis=0) + p.max(axis=0))
    r = np.linalg.norm(p - c, axis=1).max() * (1 + 1e-6)
    return np.array([*c, r], np.float32)


def merge(spheres: np.ndarray) -> np.ndarray:
    s = spheres.astype(np.float64)
    c = 0.5 * ((s[:, :3] - s[:, 3:]).min(axis=0) + (s[:, :3] + s[:, 3:]).max(axis=0))
    r = (np.linalg.norm(s[:, :3] - c, axis=1) + s[:, 3]).max() * (1 + 1e-6)
    return np.array([*c, r], np.float32)


def union_box(boxes: np.ndarray) -> np.ndarray:
    return np.concatenate([boxes[:, :3].min(axis=0), boxes[:, 3:].max(axis=0)])


def make_dag() -> tuple[LodDag, Bvh]:
    pos = grid_positions()
    h = N // 2
    level0 = [quads(range(h), range(h)), quads(range(h), range(h, N)),
              quads(range(h, N), range(h)), quads(range(h, N), range(h, N))]
    c4 = [(vid(0, 0), vid(h, j), vid(h, j + 1)) for j in range(N)]
    c4 += [(vid(0, 0), vid(h, N), vid(0, N))]
    c5 = [(vid(N, 0), vid(h, j + 1), vid(h, j)) for j in range(N)]
    c5 += [(vid(N, 0), vid(N, N), vid(h, N))]
    c6 = [(vid(0, 0), vid(N, 0), vid(N, N)), (vid(0, 0), vid(N, N), vid(0, N))]
    clusters = [*level0, c4, c5, c6]
    tris = np.array([t for c in clusters for t in c], np.int32)
    offsets = np.cumsum([0] + [len(c) for c in clusters]).astype(np.int64)
    mesh = Mesh(
        positions=pos,
        triangles=np.array([t for c in level0 for t in c], np.int32),
        wedge_position=np.arange(len(pos), dtype=np.int32),
        wedge_normal=np.tile(np.array([0, 0, 1], np.float32), (len(pos), 1)),
        name="grid",
    )
    cb = np.stack([bounds(pos[np.array(c).reshape(-1)]) for c in clusters])
    self_sphere = cb.copy()
    g_sphere = np.zeros((4, 4), np.float32)
    g_sphere[0] = merge(self_sphere[[0, 1]])
    g_sphere[1] = merge(self_sphere[[2, 3]])
    self_sphere[4], self_sphere[5] = g_sphere[0], g_sphere[1]
    g_sphere[2] = merge(self_sphere[[4, 5]])
    self_sphere[6] = g_sphere[2]
    g_sphere[3] = merge(self_sphere[[6]])
    g_error = np.array([*ERRORS, ROOT_ERROR], np.float32)
    dag = LodDag(
        mesh=mesh,
        triangles=tris,
        cluster_tri_offset=offsets,
        cluster_level=np.array([0, 0, 0, 0, 1, 1, 2], np.int32),
        cluster_group=np.array([0, 0, 1, 1, 2, 2, 3], np.int32),
        cluster_source_group=np.array([-1, -1, -1, -1, 0, 1, 2], np.int32),
        cluster_bounds=cb,
        cluster_self_sphere=self_sphere,
        cluster_self_error=np.array([0, 0, 0, 0, g_error[0], g_error[1], g_error[2]], np.float32),
        group_level=np.array([0, 0, 1, 2], np.int32),
        group_cluster_offset=np.array([0, 2, 4, 6, 7], np.int64),
        group_clusters=np.arange(7, dtype=np.int32),
        group_sphere=g_sphere,
        group_error=g_error,
        root_group=3,
    )
    children = np.full((2, 8), BVH_EMPTY, np.int32)
    children[0, :3] = [1, bvh_group_ref(2), bvh_group_ref(3)]
    children[1, :2] = [bvh_group_ref(0), bvh_group_ref(1)]
    n1 = merge(g_sphere[[0, 1]])
    bvh = Bvh(
        node_sphere=np.stack([merge(np.stack([n1, g_sphere[2], g_sphere[3]])), n1]),
        node_box=np.stack([union_box(dag.cluster_boxes()[:7]), union_box(dag.cluster_boxes()[:4])]),
        node_max_error=np.array([ROOT_ERROR, ERRORS[1]], np.float32),
        node_children=children,
        node_depth=np.array([0, 1], np.int32),
    )
    return dag, bvh


def remove_triangle(dag: LodDag, cluster: int, k: int) -> None:
    row = int(dag.cluster_tri_offset[cluster]) + k
    dag.triangles = np.delete(dag.triangles, row, axis=0)
    dag.cluster_tri_offset = dag.cluster_tri_offset.copy()
    dag.cluster_tri_offset[cluster + 1 :] -= 1


@pytest.fixture
def dag() -> LodDag:
    """The hand-made DAG (above), fresh for each test: tests corrupt it."""
    return make_dag()[0]


@pytest.fixture
def bvh() -> Bvh:
    """The hand-made DAG's BVH, fresh for each test."""
    return make_dag()[1]


@pytest.fixture(scope="session")
def grid() -> SimpleNamespace:
    """What the tests that corrupt the hand-made DAG know of it: `N` (quads per side),
    `vid(x, y)` (a vertex id), `errors` (the groups' errors below the root) and
    `remove_triangle(dag, cluster, k)`."""
    return SimpleNamespace(N=N, vid=vid, errors=ERRORS, remove_triangle=remove_triangle)


# ---------------------------------------------------------------------------- small built assets


@pytest.fixture(scope="session", params=["terrain-uv", "sphere-small-pages"])
def built(request):
    """(mesh, config, dag, bvh, packed) of a UV-mapped terrain and of a sphere on small pages
    (small pages force groups to split across pages); the tests only read them."""
    if request.param == "terrain-uv":
        mesh, cfg = make_terrain(64, seed=2), BuildConfig()
    else:  # small pages force groups to split across pages
        mesh, cfg = geodesic_sphere(40), BuildConfig(page_size=16 * 1024)
    dag, bvh, packed = build_asset(mesh, cfg)
    return mesh, cfg, dag, bvh, packed


def _edge_use_counts(mesh: Mesh) -> tuple[np.ndarray, np.ndarray]:
    """(undirected edge use counts, directed edge use counts) over position ids."""
    t = mesh.position_triangles.astype(np.int64)
    directed = np.concatenate([t[:, [0, 1]], t[:, [1, 2]], t[:, [2, 0]]])
    n = mesh.vertex_count
    d_keys = directed[:, 0] * n + directed[:, 1]
    u_keys = np.minimum(directed[:, 0], directed[:, 1]) * n + np.maximum(
        directed[:, 0], directed[:, 1]
    )
    return np.unique(u_keys, return_counts=True)[1], np.unique(d_keys, return_counts=True)[1]


def _assert_closed_manifold(mesh: Mesh) -> None:
    undirected, directed = _edge_use_counts(mesh)
    assert (undirected == 2).all(), "every edge is shared by exactly two triangles"
    assert (directed == 1).all(), "consistent orientation: each directed edge used once"


def _signed_volume(mesh: Mesh) -> float:
    p = mesh.positions.astype(np.float64)[mesh.position_triangles]
    return float(np.einsum("ij,ij->i", p[:, 0], np.cross(p[:, 1], p[:, 2])).sum() / 6.0)


def _assert_valid(mesh: Mesh) -> None:
    """The Mesh contract: dtypes, shapes, ranges, unit normals, everything referenced."""
    assert mesh.positions.dtype == np.float32 and mesh.positions.shape[1] == 3
    assert mesh.triangles.dtype == np.int32 and mesh.triangles.shape[1] == 3
    assert mesh.wedge_position.dtype == np.int32
    assert mesh.wedge_normal.dtype == np.float32
    k = mesh.wedge_position.shape[0]
    assert mesh.wedge_normal.shape == (k, 3)
    assert mesh.triangles.min() >= 0 and mesh.triangles.max() < k
    assert np.array_equal(np.unique(mesh.triangles), np.arange(k)), "all wedges used"
    assert np.array_equal(np.unique(mesh.wedge_position), np.arange(mesh.vertex_count))
    np.testing.assert_allclose(np.linalg.norm(mesh.wedge_normal, axis=1), 1.0, atol=1e-5)
    if mesh.wedge_uv is not None:
        assert mesh.wedge_uv.dtype == np.float32 and mesh.wedge_uv.shape == (k, 2)
    # positions distinct, wedges distinct
    assert np.unique(mesh.positions, axis=0).shape[0] == mesh.vertex_count
    assert np.unique(
        np.concatenate([mesh.wedge_position[:, None].astype(np.float32), mesh.wedge_attributes()],
                       axis=1), axis=0
    ).shape[0] == k  # fmt: skip
    pt = mesh.position_triangles
    assert (pt[:, 0] != pt[:, 1]).all() and (pt[:, 1] != pt[:, 2]).all()
    assert (pt[:, 2] != pt[:, 0]).all()


def _write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def _assert_same_mesh(path: Path, *, fast_path: bool = True) -> Mesh:
    """Load ``path`` through the fast readers and through trimesh; every array bit for bit.

    ``fast_path``: whether the fast reader must handle the file itself (False: it must hand the
    file to trimesh, which then reads it as before).
    """
    from preprocess import load as load_module
    from preprocess.io.parts import read_parts

    handled = read_parts(path, path.suffix[1:].lower(), path.name) is not None
    assert handled == fast_path, f"{path.name}: fast reader handled it: {handled}"
    fast = load_module._load(path, fast=True)
    ref = load_module._load(path, fast=False)
    for field in ("positions", "triangles", "wedge_position", "wedge_normal", "wedge_uv",
                  "wedge_color"):
        a, b = getattr(fast, field), getattr(ref, field)
        assert (a is None) == (b is None), field
        if a is not None:
            assert a.dtype == b.dtype and a.shape == b.shape, field
            assert a.tobytes() == b.tobytes(), f"{path.name}: {field} differs"
    assert fast.name == ref.name
    return fast


def _load_error(path: Path) -> str:
    """The message of the `MeshError` loading ``path`` raises: one line, naming the file."""
    from preprocess.load import load_mesh

    with pytest.raises(MeshError) as info:
        load_mesh(path)
    message = str(info.value)
    assert "\n" not in message, message
    assert path.name in message, message
    return message


@pytest.fixture(scope="session")
def edge_use_counts() -> Callable[[Mesh], tuple[np.ndarray, np.ndarray]]:
    return _edge_use_counts


@pytest.fixture(scope="session")
def assert_closed_manifold() -> Callable[[Mesh], None]:
    return _assert_closed_manifold


@pytest.fixture(scope="session")
def signed_volume() -> Callable[[Mesh], float]:
    return _signed_volume


@pytest.fixture(scope="session")
def assert_valid() -> Callable[[Mesh], None]:
    return _assert_valid


@pytest.fixture(scope="session")
def write() -> Callable[[Path, str], Path]:
    """Write text to a path; returns the path."""
    return _write


@pytest.fixture(scope="session")
def assert_same_mesh() -> Callable[..., Mesh]:
    return _assert_same_mesh


@pytest.fixture(scope="session")
def load_error() -> Callable[[Path], str]:
    return _load_error


@pytest.fixture(scope="session")
def quad_obj() -> str:
    """Two quads side by side in the z = 0 plane: 6 vertices, 4 triangles."""
    return """\
v 0 0 0
v 1 0 0
v 1 1 0
v 0 1 0
v 2 0 0
v 2 1 0
f 1 2 3 4
f 2 5 6 3
"""


@pytest.fixture
def shared(shared_assets):
    """A shared mesh by name (fails where ../shared is missing: CI has it)."""
    def find(name: str) -> Path:
        path = shared_assets / name
        assert path.exists(), f"{path} missing: CI runs with ../shared beside the checkout"
        return path

    return find


# ------------------------------------------------------------------------------ small glTF files

_GLTF_COMPONENT = {np.dtype("int8"): 5120, np.dtype("uint8"): 5121, np.dtype("int16"): 5122,
                   np.dtype("uint16"): 5123, np.dtype("uint32"): 5125,
                   np.dtype("float32"): 5126}
_GLTF_TYPE = {1: "SCALAR", 2: "VEC2", 3: "VEC3", 4: "VEC4"}


class GltfBuilder:
    """A glTF file written piece by piece, for the loading tests of glTF's corners (strides,
    sparse accessors, primitive modes, broken references): arrays go into one buffer as views
    and accessors, primitives into meshes, meshes into nodes; `write` makes a GLB (a `.glb`
    path) or a glTF with the buffer as a base64 data: URI, after an optional `edit(tree)`.

        b = GltfBuilder()
        b.node(mesh=b.mesh(b.triangles(V, F)))
        b.write(tmp_path / "sphere.glb")
    """

    def __init__(self) -> None:
        self.tree: dict = {"asset": {"version": "2.0"}, "scene": 0, "scenes": [{"nodes": []}],
                           "nodes": [], "meshes": [], "buffers": [], "bufferViews": [],
                           "accessors": []}
        self.blob = bytearray()

    def view(self, data: bytes, **fields) -> int:
        """A buffer view of `data` (4-byte aligned in the buffer); its index."""
        self.blob += b"\0" * (-len(self.blob) % 4)
        self.tree["bufferViews"].append({"buffer": 0, "byteOffset": len(self.blob),
                                         "byteLength": len(data), **fields})
        self.blob += data
        return len(self.tree["bufferViews"]) - 1

    def accessor(self, array, *, view: int | None = None, **fields) -> int:
        """An accessor of `array` ((n,) or (n, k), its dtype the component type) in a view of
        its own, or reading `view` (with `byteOffset` in `fields`), or none where `fields`
        has a sparse block and `view` is -1; its index."""
        a = np.asarray(array)
        rows = a.reshape(len(a), -1)
        if view is None:
            view = self.view(np.ascontiguousarray(rows).tobytes())
        acc = {"componentType": _GLTF_COMPONENT[a.dtype], "count": len(a),
               "type": _GLTF_TYPE[rows.shape[1]]}
        if view >= 0:
            acc["bufferView"] = view
        self.tree["accessors"].append({**acc, **fields})
        return len(self.tree["accessors"]) - 1

    def sparse(self, base, at, values, **fields) -> int:
        """An accessor of `base` (or of zeros, without a view, where `base` is an int: the
        count) whose sparse block sets elements `at` (uint32) to `values`; its index."""
        values = np.asarray(values)
        if isinstance(base, int):
            base, view = np.zeros((base, *values.shape[1:]), values.dtype), -1
        else:  # the base's view first, then the block's indices and values
            base = np.asarray(base)
            view = self.view(np.ascontiguousarray(base).tobytes())
        block = {"count": len(at),
                 "indices": {"bufferView": self.view(np.asarray(at, np.uint32).tobytes()),
                             "componentType": 5125},
                 "values": {"bufferView": self.view(np.ascontiguousarray(values).tobytes())}}
        return self.accessor(base, view=view, sparse=block, **fields)

    def interleaved(self, *arrays, stride: int | None = None) -> list[int]:
        """Accessors of (n, k) arrays interleaved in one view (one record a vertex, padded to
        `stride` bytes); their indices."""
        rec = np.dtype({"names": [f"a{k}" for k in range(len(arrays))],
                        "formats": [(a.dtype, a.shape[1:]) for a in arrays],
                        "itemsize": stride or sum(a[0].nbytes for a in arrays)})
        rows = np.zeros(len(arrays[0]), rec)
        for k, a in enumerate(arrays):
            rows[f"a{k}"] = a
        v = self.view(rows.tobytes(), byteStride=rec.itemsize)
        return [self.accessor(a, view=v, byteOffset=rec.fields[f"a{k}"][1])
                for k, a in enumerate(arrays)]

    def triangles(self, v, f=None, *, mode: int | None = None, **attributes) -> dict:
        """A primitive: positions `v` ((n, 3) float32), indices `f` (uint32, any shape; None:
        not indexed), `mode` (None: glTF's default, triangles), more attributes by name (an
        array, or an accessor index)."""
        attrs = {"POSITION": self.accessor(np.asarray(v, np.float32))}
        for name, a in attributes.items():
            attrs[name] = a if isinstance(a, int) else self.accessor(a)
        p: dict = {"attributes": attrs}
        if f is not None:
            p["indices"] = self.accessor(np.asarray(f, np.uint32).reshape(-1))
        if mode is not None:
            p["mode"] = mode
        return p

    def mesh(self, *primitives: dict) -> int:
        self.tree["meshes"].append({"primitives": list(primitives)})
        return len(self.tree["meshes"]) - 1

    def node(self, *, root: bool = True, **fields) -> int:
        """A node (a root of the scene unless `root` is False); its index."""
        self.tree["nodes"].append(fields)
        if root:
            self.tree["scenes"][0]["nodes"].append(len(self.tree["nodes"]) - 1)
        return len(self.tree["nodes"]) - 1

    def write(self, path: Path, edit: Callable[[dict], None] | None = None) -> Path:
        import base64
        import json

        tree = json.loads(json.dumps(self.tree))
        blob = bytes(self.blob) + b"\0" * (-len(self.blob) % 4)
        tree["buffers"] = [{"byteLength": len(blob)}]
        if path.suffix != ".glb":
            tree["buffers"][0]["uri"] = ("data:application/octet-stream;base64,"
                                         + base64.b64encode(blob).decode())
        if edit is not None:
            edit(tree)
        if path.suffix != ".glb":
            path.write_text(json.dumps(tree))
            return path
        path.write_bytes(glb_bytes(tree, blob))
        return path


@pytest.fixture
def gltf_builder() -> type[GltfBuilder]:
    """`GltfBuilder`: small glTF and GLB files written in a test, piece by piece."""
    return GltfBuilder
