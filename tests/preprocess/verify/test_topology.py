"""Tests of the cut checks (`preprocess.verify.topology`) on the hand-made DAG
(tests/preprocess/conftest.py): valid cuts pass; holes, overlaps, cracks, flipped triangles and
lost area are caught.
"""

from __future__ import annotations

import numpy as np
import pytest

from preprocess.lod import LodDag
from preprocess.verify import VerifyError, check_cut



@pytest.mark.parametrize("cut", [[0, 1, 2, 3], [4, 2, 3], [0, 1, 5], [4, 5], [6]])
def test_valid_cuts_pass(dag: LodDag, cut: list[int]) -> None:
    fig = check_cut(dag, np.array(cut))
    assert fig["clusters"] == len(cut)
    assert abs(fig["area_ratio"] - 1) < 0.02
    assert fig["flipped_edges"] == 0
    assert fig["border_edges"] > 0


# --------------------------------------------------------------------------------------------------
# coverage, cracks, orientation, area


@pytest.mark.parametrize(
    ("cut", "message"),
    [
        ([], "empty"),
        ([0, 1, 2], "hole"),  # c3 missing
        ([4, 2], "hole"),
        ([0, 0, 1, 2, 3], "appears 2 times"),
        ([4, 0, 2, 3], "overlap"),  # c0 and its simplification c4
        ([6, 0], "overlap"),
        ([0, 1, 2, 3, 5], "overlap"),
        ([0, 1, 2, 3, 6], "overlap"),
        ([7], "out of range"),
    ],
)
def test_bad_cuts_fail(dag: LodDag, cut: list[int], message: str) -> None:
    with pytest.raises(VerifyError, match=message):
        check_cut(dag, np.array(cut, np.int64))


def test_missing_triangle_is_a_crack(dag: LodDag, grid) -> None:
    grid.remove_triangle(dag, 2, 40)  # an interior triangle of c2
    with pytest.raises(VerifyError, match="crack"):
        check_cut(dag, np.array([0, 1, 2, 3]))


def test_t_junction_between_levels_is_a_crack(dag: LodDag, grid) -> None:
    # c4 rebuilt without the odd vertices of the shared column: c4 next to c2, c3 cracks
    N, vid = grid.N, grid.vid
    h = N // 2
    c4 = [(vid(0, 0), vid(h, j), vid(h, j + 2)) for j in range(0, N, 2)]
    c4 += [(vid(0, 0), vid(h, N), vid(0, N))]
    o = dag.cluster_tri_offset
    tris = np.concatenate([dag.triangles[: o[4]], np.array(c4, np.int32), dag.triangles[o[5] :]])
    offsets = o.copy()
    offsets[5:] -= (o[5] - o[4]) - len(c4)
    dag.triangles, dag.cluster_tri_offset = tris, offsets
    with pytest.raises(VerifyError, match="crack"):
        check_cut(dag, np.array([4, 2, 3]))


def test_flipped_triangle_fails_orientation(dag: LodDag) -> None:
    row = int(dag.cluster_tri_offset[1]) + 50
    dag.triangles[row] = dag.triangles[row][::-1]
    with pytest.raises(VerifyError, match="orientation"):
        check_cut(dag, np.array([0, 1, 2, 3]))


def test_area_is_measured(dag: LodDag) -> None:
    ratio = check_cut(dag, np.array([6]))["area_ratio"]
    assert 0.99 < ratio < 1.0  # a flat square under a bumpy one
    # the tolerance grows with the cut's error (2 e / R): with no error, only area_tolerance is left
    dag.cluster_self_error[6] = 0
    # beyond it, lost area passes only where the original lies within the error of the cut
    # everywhere (a sheet beside a kept one): the bumps lie above the flat square
    with pytest.raises(VerifyError, match=r"area.*the original lies up to"):
        check_cut(dag, np.array([6]), area_tolerance=0.5 * (1 - ratio))
