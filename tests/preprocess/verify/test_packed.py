"""Tests of the packed-file checks (`preprocess.verify.packed`) on small built assets (`built` in
tests/preprocess/conftest.py): every record names the group that produced it, in memory and
through a file, and each corruption of the source groups is caught."""

from __future__ import annotations

import numpy as np
import pytest

from preprocess.tess import read_tess, write_tess
from preprocess.tess.records import NO_GROUP
from preprocess.verify import VerifyError, check_packed, check_source_groups, packed_records


def test_source_groups_satisfy_the_invariants(built, tmp_path):
    _, _, dag, _, packed = built
    figures = check_packed(packed)
    recs = packed_records(packed.pages)
    groups = packed.sections["groups"]
    src = recs["source_group"].astype(np.int64)
    # the records carry the DAG's producing group; level 0 has none
    want = dag.cluster_source_group[recs["cluster"]]
    assert np.array_equal(src, np.where(want >= 0, want.astype(np.int64), NO_GROUP))
    assert (src[recs["level"] == 0] == NO_GROUP).all()
    assert figures["level0"] == int((recs["level"] == 0).sum()) > 0
    gen = src != NO_GROUP
    assert (recs["level"][gen] == groups["level"][src[gen]] + 1).all()
    assert (recs["self_error"][gen] == groups["error"][src[gen]]).all()
    assert (recs["self_sphere"][gen] == groups["sphere"][src[gen]]).all()
    # every group but the root produced clusters
    produced = np.zeros(len(groups), bool)
    produced[src[gen]] = True
    assert produced.sum() == len(groups) - 1 and not produced[dag.root_group]
    # and the same through the file
    path = tmp_path / "a.tess"
    write_tess(path, meta=packed.meta, sections=packed.sections, pages=packed.pages,
               page_flags=packed.page_flags)
    with read_tess(path) as f:
        assert check_packed(f) == figures


def test_source_group_checks_fail(built):
    *_, packed = built
    groups = packed.sections["groups"]
    recs = packed_records(packed.pages)
    k = int(np.flatnonzero(recs["source_group"] != NO_GROUP)[0])
    bad = recs.copy()
    bad["source_group"][k] = NO_GROUP
    with pytest.raises(VerifyError, match="source group is NO_GROUP exactly at level 0"):
        check_source_groups(groups, bad)
    bad = recs.copy()
    bad["self_error"][k] = np.nextafter(bad["self_error"][k], np.float32(np.inf))
    with pytest.raises(VerifyError, match=r"self_error .* must be equal"):
        check_source_groups(groups, bad)
    bad = recs.copy()
    bad["self_sphere"][k, 3] *= 2
    with pytest.raises(VerifyError, match=r"self_sphere .* bit for bit"):
        check_source_groups(groups, bad)
    bad = recs.copy()
    bad["level"][k] += 1
    with pytest.raises(VerifyError, match="exactly one level coarser"):
        check_source_groups(groups, bad)
    bad = recs.copy()  # the clusters of one group claim another group of its level as source
    src = bad["source_group"][bad["source_group"] != NO_GROUP].astype(np.int64)
    sources = np.unique(src)
    level = groups["level"][sources]
    g, other = sources[level == np.bincount(level).argmax()][:2]
    lie = bad["source_group"] == g
    bad["source_group"][lie] = other
    bad["self_sphere"][lie] = groups["sphere"][other]
    bad["self_error"][lie] = groups["error"][other]
    with pytest.raises(VerifyError, match=f"group {g} .* is the source of no cluster"):
        check_source_groups(groups, bad)
