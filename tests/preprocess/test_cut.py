"""The cut rule (`preprocess.cut`) on the hand-made DAG and BVH (tests/preprocess/conftest.py): the
clusters a threshold selects, view-independent and from a camera, directly and through the
BVH, and the projected error.
"""

from __future__ import annotations

import numpy as np
import pytest

from preprocess.cut import projected_error, select_cut, select_cut_bvh
from preprocess.lod import Bvh, LodDag
from preprocess.tess.limits import ROOT_ERROR
from preprocess.verify import check_cut



@pytest.mark.slow
def test_select_cut_follows_the_rule(dag: LodDag, bvh: Bvh) -> None:
    assert select_cut(dag, 0.1).tolist() == [0, 1, 2, 3]
    assert select_cut(dag, 0.315).tolist() == [2, 3, 4]
    assert select_cut(dag, 0.33).tolist() == [4, 5]
    assert select_cut(dag, 1e30).tolist() == [6]
    # from a camera near the left half, the left half is finer than the right
    cam = np.array([2.0, 8.0, 1.0])
    scale = 10.0
    taus = np.geomspace(0.01, 100, 200)
    mixed = 0
    for tau in taus:
        cut = select_cut(dag, tau, cam, scale)
        check_cut(dag, cut)
        assert select_cut_bvh(dag, bvh, tau, cam, scale).tolist() == cut.tolist()
        mixed += cut.tolist() in ([0, 1, 5], [4, 2, 3])
    assert mixed > 0


def test_bvh_traversal_matches_rule(dag: LodDag, bvh: Bvh) -> None:
    for tau in (0.1, 0.315, 0.33, 0.5, 1e30):
        assert select_cut_bvh(dag, bvh, tau, None, 1.0).tolist() == select_cut(dag, tau).tolist()


def test_projected_error() -> None:
    spheres = np.array([[0, 0, 0, 1], [0, 0, 0, 2], [10, 0, 0, 1]], np.float32)
    errors = np.array([0.5, 1.0, ROOT_ERROR], np.float32)
    assert projected_error(spheres, errors).tolist() == [0.5, 1.0, np.inf]
    cam = np.array([5.0, 0, 0])
    p = projected_error(spheres, errors, cam, scale=100.0)
    assert p[0] == pytest.approx(0.5 * 100 / 4) and p[1] == pytest.approx(1.0 * 100 / 3)
    assert p[2] == np.inf  # the root stays infinite
    inside = projected_error(spheres[:1], errors[:1], np.zeros(3))
    assert inside[0] > 1e9  # a camera inside the sphere refines
    assert projected_error(spheres[:1], np.zeros(1, np.float32), np.zeros(3))[0] == 0
