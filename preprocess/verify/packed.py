"""Checks of packed pages: the source group that every cluster record of the pages names, against
the groups section (what streaming relies on), on records (`check_source_groups`), a packed asset
or an open `.tess` file (`check_packed`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from preprocess.tess.checks import RecordError, check_sources
from preprocess.tess.limits import ROOT_ERROR
from preprocess.tess.pages import page_clusters
from preprocess.tess.records import NO_GROUP
from preprocess.verify.common import fail

__all__ = ["check_packed", "check_source_groups", "packed_records"]


def packed_records(pages: np.ndarray) -> np.ndarray:
    """All cluster records (CLUSTER_DTYPE) of (P, page_size) uint8 pages, page after page."""
    recs = [page_clusters(np.ascontiguousarray(pages[p])) for p in range(len(pages))]
    if not recs:
        return np.zeros(0, page_clusters(np.zeros(16, np.uint8)).dtype)
    return np.concatenate(recs)


def check_source_groups(groups: np.ndarray, records: np.ndarray,
                        root_group: int | None = None) -> dict[str, Any]:
    """The source group of every cluster record, against the asset's groups section: the
    checks a `.tess` file meets when it is opened (`preprocess.tess.checks.check_sources`), on
    a build's records.

    groups: GROUP_DTYPE (g,); records: CLUSTER_DTYPE, every cluster of the asset once (see
    `packed_records`); root_group: default the one group with error ROOT_ERROR.

    - source_group is NO_GROUP exactly at level 0, else a group index in range, never the root;
    - a cluster produced by group P is one level coarser: level == P.level + 1;
    - its LOD bound is P's, bit for bit: self_error == P.error and self_sphere == P.sphere (the
      builder hands every cluster it splits out of P's simplification P's sphere and error, so the
      cut's "own error <= tau" of a cluster is "P's error <= tau", the test that makes a cut
      with partial residency crack-free);
    - a level-0 cluster's LOD sphere is its own tight bound: self_sphere == bounds, self_error 0;
    - every group but the root produced at least one cluster (a group is only kept when its
      simplification succeeded; the root is never simplified);
    - a cluster's self error is at most its group's error.

    Returns {"generated": clusters with a source group, "level0": clusters without,
    "max_produced": the most clusters one group produced}.
    """
    g = len(groups)
    if root_group is None:
        roots = np.flatnonzero(groups["error"] >= np.float32(ROOT_ERROR))
        if len(roots) != 1:
            fail(f"{len(roots)} groups have error ROOT_ERROR: cannot tell the root group")
        root_group = int(roots[0])
    ids = np.asarray(records["cluster"], np.int64)
    try:
        check_sources(groups, records, root_group, lambda k: f"cluster {ids[k]}")
    except RecordError as e:
        fail(str(e))
    src = np.asarray(records["source_group"], np.int64)
    gen = src != NO_GROUP
    produced = np.bincount(src[gen], minlength=g)
    return {"generated": int(gen.sum()), "level0": int((~gen).sum()),
            "max_produced": int(produced.max()) if g else 0}


def check_packed(asset: Any) -> dict[str, Any]:
    """`check_source_groups` on a packed asset (`preprocess.pack.PackedAsset`) or an open `.tess`
    file (`preprocess.tess.TessFile`): the records of all its pages against its groups."""
    pages = asset.pages if isinstance(getattr(asset, "pages", None), np.ndarray) \
        else asset.pages_array()
    root = asset.meta.get("root_group")
    return check_source_groups(asset.sections["groups"], packed_records(pages),
                               None if root is None else int(root))
