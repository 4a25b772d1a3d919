"""Fixtures shared by the loading tests (test_load.py and io/, one test module per module of
`preprocess.io`): the `Mesh` contract and edge checks, writing a small file, loading one through
the fast readers and through trimesh to compare them bit for bit, a load's one-line error, and the
shared real meshes.

Test modules never import each other: what two of them share lives here, handed out by fixtures
(each a function, or the text of a small OBJ).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from preprocess.mesh import Mesh, MeshError


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
