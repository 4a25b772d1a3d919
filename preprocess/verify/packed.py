"""Checks of packed pages: the source group that every cluster record of the pages names, against
the groups section (what streaming relies on), on records (`check_source_groups`), a packed asset
or an open `.tess` file (`check_packed`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from preprocess.tess.limits import ROOT_ERROR
from preprocess.tess.pages import page_clusters
from preprocess.tess.records import NO_GROUP
from preprocess.verify.common import fail, first_few, sphere_str

__all__ = ["check_packed", "check_source_groups", "packed_records"]


def packed_records(pages: np.ndarray) -> np.ndarray:
    """All cluster records (CLUSTER_DTYPE) of (P, page_size) uint8 pages, page after page."""
    recs = [page_clusters(np.ascontiguousarray(pages[p])) for p in range(len(pages))]
    if not recs:
        return np.zeros(0, page_clusters(np.zeros(16, np.uint8)).dtype)
    return np.concatenate(recs)


def check_source_groups(groups: np.ndarray, records: np.ndarray,
                        root_group: int | None = None) -> dict[str, Any]:
    """The source group of every cluster record, against the asset's groups section.

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
      simplification succeeded; the root is never simplified).

    Returns {"generated": clusters with a source group, "level0": clusters without,
    "max_produced": the most clusters one group produced}.
    """
    g = len(groups)
    src = np.asarray(records["source_group"], np.int64)
    level = np.asarray(records["level"], np.int64)
    ids = np.asarray(records["cluster"], np.int64)
    glevel = np.asarray(groups["level"], np.int64)
    gerr = np.asarray(groups["error"], np.float32)
    if root_group is None:
        roots = np.flatnonzero(gerr >= np.float32(ROOT_ERROR))
        if len(roots) != 1:
            fail(f"{len(roots)} groups have error ROOT_ERROR: cannot tell the root group")
        root_group = int(roots[0])
    none = src == NO_GROUP
    for k in first_few(~none & ((src < 0) | (src >= g))):
        fail(f"cluster {ids[k]} has source group {src[k]}, out of range 0..{g - 1} "
             f"(or NO_GROUP {NO_GROUP:#x})")
    for k in first_few(none != (level == 0)):
        fail(f"cluster {ids[k]} has level {level[k]} and source group {src[k]:#x}: the source "
             f"group is NO_GROUP exactly at level 0")
    gen = np.flatnonzero(~none)
    s = src[gen]
    for k in gen[first_few(s == root_group)]:
        fail(f"cluster {ids[k]} names the root group {root_group} as its source; the root is "
             f"never simplified")
    for k in gen[first_few(level[gen] != glevel[s] + 1)]:
        fail(f"cluster {ids[k]} has level {level[k]} but its source group {src[k]} has level "
             f"{glevel[src[k]]}: a produced cluster is exactly one level coarser")
    own = np.asarray(records["self_error"], np.float32)
    for k in gen[first_few(own[gen] != gerr[s])]:
        fail(f"cluster {ids[k]} has self error {own[k]:.9g} but its source group {src[k]} has "
             f"error {gerr[src[k]]:.9g}: they must be equal")
    sphere = np.ascontiguousarray(records["self_sphere"], np.float32)
    gsphere = np.ascontiguousarray(groups["sphere"], np.float32)
    bits, gbits = sphere.view(np.uint32), gsphere.view(np.uint32)
    for k in gen[first_few((bits[gen] != gbits[s]).any(axis=1))]:
        fail(f"cluster {ids[k]} has self sphere {sphere_str(sphere[k])} but its source group "
             f"{src[k]} has sphere {sphere_str(gsphere[src[k]])}: they must be equal, bit for "
             f"bit")
    bounds = np.ascontiguousarray(records["bounds"], np.float32).view(np.uint32)
    lv0 = np.flatnonzero(none)
    for k in lv0[first_few((bits[lv0] != bounds[lv0]).any(axis=1) | (own[lv0] != 0))]:
        fail(f"level-0 cluster {ids[k]} has self sphere {sphere_str(sphere[k])} and self error "
             f"{own[k]:.9g}: its LOD bound must be its own bounds sphere and error 0")
    produced = np.bincount(s, minlength=g)
    barren = produced == 0
    barren[root_group] = False
    for j in first_few(barren):
        fail(f"group {j} (level {glevel[j]}) is the source of no cluster: every group but the "
             f"root {root_group} produced the clusters of its simplification")
    return {"generated": len(gen), "level0": len(lv0),
            "max_produced": int(produced.max()) if g else 0}


def check_packed(asset: Any) -> dict[str, Any]:
    """`check_source_groups` on a packed asset (`preprocess.pack.PackedAsset`) or an open `.tess`
    file (`preprocess.tess.TessFile`): the records of all its pages against its groups."""
    pages = asset.pages if isinstance(getattr(asset, "pages", None), np.ndarray) \
        else asset.pages_array()
    root = asset.meta.get("root_group")
    return check_source_groups(asset.sections["groups"], packed_records(pages),
                               None if root is None else int(root))
