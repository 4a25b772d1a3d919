"""`preprocess.verify.check_all` on the hand-made DAG and BVH (tests/preprocess/conftest.py): every
check, with cuts at many thresholds from four views.
"""

from __future__ import annotations

from preprocess.lod import Bvh, LodDag
from preprocess.verify import check_all



def test_check_all_passes(dag: LodDag, bvh: Bvh) -> None:
    fig = check_all(dag, bvh, thresholds=20)
    assert len(fig["cuts"]) == 20 * 4
    assert fig["cuts"][0]["levels"] == [4] and fig["cuts"][19]["levels"] == [0, 0, 1]
    assert 0 < fig["honest"]["max_ratio"] <= 1
    assert fig["honest"]["points"] > 3 * 64
    lo, hi = fig["area_ratio"]
    assert 0.98 < lo <= hi < 1.02
    assert check_all(dag, None, thresholds=2, honest=False)["bvh"] is None
