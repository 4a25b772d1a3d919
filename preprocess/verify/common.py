"""What the checks of `preprocess.verify` share: `VerifyError` and how a check fails (`fail`,
naming the first few offenders), sphere containment with its slack, and the triangles of
clusters (their rows, owners, areas, uniform samples).

Containment of spheres is tested with a slack of `SPHERE_REL_EPS` of the outer radius plus a few
float32 ulps of the coordinates (spheres are stored as float32): `containment_excess`, the one a
`.tess` file's checks use (`preprocess.tess.checks`).
"""

from __future__ import annotations

import numpy as np

from preprocess.lod import LodDag
from preprocess.tess.checks import SPHERE_REL_EPS, containment_excess

__all__ = ["AREA_CHUNK", "MAX_REPORTED", "SPHERE_REL_EPS", "VerifyError", "cluster_of_triangles",
           "containment_excess", "fail", "first_few", "sphere_str", "triangle_areas",
           "triangle_index", "uniform_weights"]

MAX_REPORTED = 5  # offenders listed in a message


class VerifyError(AssertionError):
    """A built DAG, BVH or cut breaks an invariant; the message names what and by how much."""


def fail(message: str) -> None:
    """Raise VerifyError(message)."""
    raise VerifyError(message)


def first_few(mask: np.ndarray) -> np.ndarray:
    """The first few indices where mask is true."""
    return np.flatnonzero(mask)[:MAX_REPORTED]


def sphere_str(s: np.ndarray) -> str:
    """A sphere (x, y, z, r) for a message."""
    return f"(center {s[0]:.6g} {s[1]:.6g} {s[2]:.6g}, radius {s[3]:.6g})"


def cluster_of_triangles(dag: LodDag) -> np.ndarray:
    """(T,) int32: the cluster owning each triangle of dag.triangles."""
    counts = np.diff(np.asarray(dag.cluster_tri_offset, np.int64))
    return np.repeat(np.arange(dag.cluster_count, dtype=np.int32), counts)


def triangle_index(dag: LodDag, clusters: np.ndarray) -> np.ndarray:
    """(t,) int64: the rows of dag.triangles owned by the given clusters, cluster by cluster."""
    off = np.asarray(dag.cluster_tri_offset, np.int64)
    start = off[clusters]
    count = off[clusters + 1] - start
    total = int(count.sum())
    if total == 0:
        return np.zeros(0, np.int64)
    base = np.repeat(start - np.concatenate([[0], np.cumsum(count)[:-1]]), count)
    return base + np.arange(total, dtype=np.int64)


def triangle_areas(positions: np.ndarray, ptri: np.ndarray) -> np.ndarray:
    """(t,) float64 areas of triangles (t, 3) of position ids, a million at a time (the float64
    corners of a scan's 100M triangles at once would be 7 GB)."""
    out = np.empty(len(ptri), np.float64)
    for lo in range(0, len(ptri), AREA_CHUNK):
        rows = ptri[lo:lo + AREA_CHUNK]
        a, b, c = (positions[rows[:, k]].astype(np.float64) for k in range(3))
        out[lo:lo + len(rows)] = 0.5 * np.linalg.norm(np.cross(b - a, c - a), axis=1)
    return out


AREA_CHUNK = 1 << 20


def uniform_weights(rng: np.random.Generator, n: int) -> np.ndarray:
    """(n, 3) barycentric weights of points uniform by area over a triangle."""
    r1, r2 = np.sqrt(rng.random(n)), rng.random(n)
    return np.stack([1 - r1, r1 * (1 - r2), r1 * r2], axis=1)

