"""GPU page streaming, the CPU side: which scene pages live in the GPU page pool, which groups the
GPU may use, and what to upload next. Pure numpy: nothing here talks to the GPU.

The pool. The scene's pages (page ``asset.page_base + local page``) are held in a GPU page pool of
`slots` fixed-size slots of ``page_size`` bytes. ``residency[page]`` is the page's slot, or
NOT_RESIDENT. Root pages (PAGE_ROOT) are pinned: loaded at construction, never evicted.

The rule. A group (``asset.group_base + local group``) is *effective* when

    every page holding one of its member clusters (the pages of its parts) is resident, and
    every parent group is effective,

where the parents of group H are the groups of which the clusters that H's simplification produced
(``source_group == H`` in the cluster records) are members. ``effective`` is therefore closed
upward: an effective group's parents, their parents, ..., up to the root, are effective. A group
whose own pages are resident but one of whose ancestors is not is *not* effective.

The cut. For a view and a threshold tau, cluster c (member of group G, produced by group S, or by
none at level 0) is drawn iff

    effective(G) and projected(G) > tau and (projected_self(c) <= tau or not effective(S)),

where projected(G) is G's (sphere, error) projected and projected_self(c) is c's (self_sphere,
self_error), which are S's, bit for bit (`preprocess.verify.check_source_groups`). Call G
*refined* when effective(G) and projected(G) > tau: the rule is "c is drawn iff its group is
refined and its source group is not". That is the cut rule of `preprocess.lod` with "projected(G)
> tau" replaced by "refined(G)", and it covers the surface exactly once, without cracks, whenever
the refined groups are closed upward (a refined group's parents are refined) and include the root
(`preprocess.verify.topology._check_coverage`: the groups simplified away are the complement,
closed downward). Both parts of refined are closed upward: effective by construction, and
projected(G) > tau because a parent's sphere contains its children's and its error is at least
theirs. The root's pages are pinned and its error projects to infinity. Every drawn cluster is
resident, since its group is effective. So any residency gives a crack-free, hole-free cut:
missing detail shows as coarser geometry. `select_resident_cut` is the rule in numpy (the tests
check it with `preprocess.verify.check_cut`).

The loop. Culling records a request (group, priority = projected error in pixels) for every group
it wants to refine (projected(G) > tau) that is not effective, and stamps every pool slot it used
(best: the slots of every group it visits, i.e. tests the members of). A few frames later
`PageStreamer.update` gets those, and:

- stamps the used slots with the frame, and also the pages of all ancestors of the groups in them
  (evicting an ancestor would make the used group non-effective, so ancestors count as used);
- serves the requests, highest priority first, within `upload_budget` pages per call: for each
  group, the missing pages of it and of all its non-effective ancestors, coarsest first (a group
  can only become effective when its ancestors are; partial progress is kept);
- takes free slots first, then evicts the least recently used pages that are not pinned, not used
  in the last `protect_frames` reported frames, not needed by (the group or any ancestor of) a
  request served in this call, and not uploaded in this call; among equally old pages the finer
  go first;
- recomputes ``effective`` (a pass over the groups by level, coarse to fine; parents are always
  at a coarser level) and returns the uploads (slot, scene page) to perform; `page_bytes` reads
  the page from the memory-mapped file.

Stamps arrive late: a slot stamped in frame f may have been given a new page since; the new page
is credited with the use (it only delays its eviction). The parent relation is read from the
cluster records at construction, which reads the record area of every page (a few KiB per page)
from the mapped files, not the geometry.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numba as nb
import numpy as np

from preprocess.tess.limits import PAGE_ROOT
from preprocess.tess.records import CLUSTER_DTYPE, NO_GROUP, PAGE_HEADER_DTYPE
from renderer.limits import NOT_RESIDENT
from renderer.scene import Asset

__all__ = [
    "PageStreamer",
    "StreamStats",
    "StreamTotals",
    "select_resident_cut",
]


@dataclass
class StreamStats:
    """What one `PageStreamer.update` did."""

    frame: int  # the frame the stamps and requests came from
    requested: int  # distinct groups requested
    served: int  # requests (not already effective) whose missing pages all became resident
    uploaded: int  # pages uploaded
    evicted: int  # pages evicted to make room
    bytes_uploaded: int
    resident: int  # pages resident after the update
    slots: int  # pool size
    effective: int  # effective groups after the update

    @property
    def pool_use(self) -> float:
        """Fraction of the pool's slots holding a page."""
        return self.resident / self.slots if self.slots else 0.0


@dataclass
class StreamTotals:
    """Counters over every update since construction."""

    updates: int = 0
    uploaded: int = 0
    evicted: int = 0
    bytes_uploaded: int = 0


def _csr(rows: np.ndarray, cols: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Distinct (row, col) pairs as CSR: (offsets (n + 1,) int64, cols sorted per row, int64)."""
    keys = np.sort(rows.astype(np.int64) * (1 << 32) + cols.astype(np.int64))
    if len(keys):
        keys = keys[np.concatenate([[True], keys[1:] != keys[:-1]])]
    r, c = keys >> 32, keys & 0xFFFFFFFF
    off = np.zeros(n + 1, np.int64)
    np.cumsum(np.bincount(r, minlength=n), out=off[1:])
    return off, c


def _gather(off: np.ndarray, data: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """The concatenated CSR rows `rows` of (off, data)."""
    start = off[rows]
    count = off[rows + 1] - start
    total = int(count.sum())
    if total == 0:
        return np.zeros(0, data.dtype)
    base = np.repeat(start - (np.cumsum(count) - count), count)
    return data[base + np.arange(total)]


@nb.njit(cache=True, nogil=True)
def _walk_up(par_off, par, start, eff, stop_at_effective, mark, token, out):  # pragma: no cover
    """Breadth-first from `start` along the parent edges; writes the distinct groups reached
    (start included) to out and returns their count. With stop_at_effective, effective groups
    are neither entered nor listed."""
    n = 0
    for g in start:
        if mark[g] != token and not (stop_at_effective and eff[g] != 0):
            mark[g] = token
            out[n] = g
            n += 1
    i = 0
    while i < n:
        g = out[i]
        i += 1
        for k in range(par_off[g], par_off[g + 1]):
            q = par[k]
            if mark[q] != token and not (stop_at_effective and eff[q] != 0):
                mark[q] = token
                out[n] = q
                n += 1
    return n


@nb.njit(cache=True, nogil=True)
def _pages_of(gp_off, gp, groups, n, mark, token, out):  # pragma: no cover
    """The distinct pages of groups[:n], written to out; returns their count."""
    m = 0
    for i in range(n):
        g = groups[i]
        for k in range(gp_off[g], gp_off[g + 1]):
            p = gp[k]
            if mark[p] != token:
                mark[p] = token
                out[m] = p
                m += 1
    return m


@nb.njit(cache=True, nogil=True)
def _effective_pass(order, par_off, par, missing, out):  # pragma: no cover
    """out[g] = 1 iff missing[g] == 0 and every parent of g has out 1; `order` lists the groups
    coarse to fine (parents before children)."""
    for g in order:
        ok = missing[g] == 0
        if ok:
            for k in range(par_off[g], par_off[g + 1]):
                if out[par[k]] == 0:
                    ok = False
                    break
        out[g] = 1 if ok else 0


def select_resident_cut(own_projected: np.ndarray, group_projected: np.ndarray,
                        cluster_group: np.ndarray, cluster_source_group: np.ndarray,
                        effective: np.ndarray, tau: float) -> np.ndarray:
    """(c,) bool: the clusters drawn at threshold tau with partial residency (module docstring).

    own_projected (c,): each cluster's projected (self_sphere, self_error); group_projected (g,):
    each group's projected (sphere, error); cluster_group (c,): the group each cluster is a member
    of; cluster_source_group (c,): the group that produced it, NO_GROUP (or any value outside
    0..g-1, e.g. -1) for none; effective (g,): nonzero where the group is effective. Group indices
    are into group_projected and effective (asset-local with a local `effective`, or global).

    Drawn iff effective(G) and projected(G) > tau and (own <= tau or not effective(S)).
    """
    eff = np.asarray(effective) != 0
    g = len(eff)
    group = np.asarray(cluster_group, np.int64)
    src = np.asarray(cluster_source_group, np.int64)
    has_src = (src >= 0) & (src < g)
    src_eff = np.zeros(len(src), bool)
    src_eff[has_src] = eff[src[has_src]]
    refined = eff & (np.asarray(group_projected, np.float64) > tau)
    return refined[group] & ((np.asarray(own_projected, np.float64) <= tau) | ~src_eff)


class PageStreamer:
    """The page pool's bookkeeping for the assets of a scene (see the module docstring).

    Attributes (read them, do not write them):
        page_count, group_count, page_size, slots, upload_budget, protect_frames: sizes.
        page_base, group_base: (assets,) int64, each asset's first scene page and group.
        residency: (page_count,) uint32, the slot of each scene page or NOT_RESIDENT.
        slot_page: (slots,) uint32, the page in each slot or NOT_RESIDENT.
        effective: (group_count,) uint32, 1 where the group is effective.
        pinned: (page_count,) bool, the root pages (always resident).
        group_level: (group_count,) int64.
        residency_version, effective_version: bumped whenever the array changes: re-upload the
            table to the GPU when the version differs from the one uploaded.
        stats: StreamStats of the last update (None before the first); totals: StreamTotals.
    """

    def __init__(self, assets: Sequence[Asset], slots: int, upload_budget: int, *,
                 protect_frames: int = 1) -> None:
        """Precompute the scene's topology and make the root pages resident (slots 0.. in page
        order; `resident_uploads()` lists them for the first upload).

        assets: the scene's assets in scene order (bases as in `Scene.asset_table`), one page
        size for all. slots: pool size in pages. upload_budget: most pages uploaded per update.
        protect_frames: pages used in this many of the latest reported frames are never evicted.
        Raises ValueError when the pool cannot hold the root pages or an asset is malformed.
        """
        if not assets:
            raise ValueError("a page streamer needs at least one asset")
        sizes = {int(a.page_size) for a in assets}
        if len(sizes) != 1:
            raise ValueError(f"assets with different page sizes {sorted(sizes)} in one pool")
        if upload_budget < 1:
            raise ValueError(f"upload_budget must be at least 1 page, not {upload_budget}")
        if protect_frames < 0:
            raise ValueError(f"protect_frames must be >= 0, not {protect_frames}")
        self.assets = list(assets)
        self.page_size = sizes.pop()
        self.slots = int(slots)
        self.upload_budget = int(upload_budget)
        self.protect_frames = int(protect_frames)
        pcounts = np.array([a.page_count for a in assets], np.int64)
        gcounts = np.array([len(a.groups) for a in assets], np.int64)
        self.page_base = np.concatenate([[0], np.cumsum(pcounts)[:-1]]).astype(np.int64)
        self.group_base = np.concatenate([[0], np.cumsum(gcounts)[:-1]]).astype(np.int64)
        self.page_count = P = int(pcounts.sum())
        self.group_count = G = int(gcounts.sum())

        gp_group, gp_page, edge_child, edge_parent, levels, pinned = [], [], [], [], [], []
        for a, pb, gb in zip(self.assets, self.page_base, self.group_base, strict=True):
            self._read_asset(a, int(pb), int(gb), gp_group, gp_page, edge_child, edge_parent)
            levels.append(np.asarray(a.groups["level"], np.int64))
            pinned.append((np.asarray(a.file.page_flags) & PAGE_ROOT) != 0)
        self.group_level = np.concatenate(levels)
        self.pinned = np.concatenate(pinned)
        # group -> its pages, page -> the groups with members in it, group -> its parents
        self._gp_off, self._gp = _csr(np.concatenate(gp_group), np.concatenate(gp_page), G)
        self._pg_off, self._pg = _csr(np.concatenate(gp_page), np.concatenate(gp_group), P)
        child, parent = np.concatenate(edge_child), np.concatenate(edge_parent)
        self._par_off, self._par = _csr(child, parent, G)
        ch = np.repeat(np.arange(G), np.diff(self._par_off))
        bad = self.group_level[self._par] <= self.group_level[ch]
        if bad.any():
            k = int(np.flatnonzero(bad)[0])
            raise ValueError(f"group {ch[k]} (level {self.group_level[ch[k]]}) has parent group "
                             f"{self._par[k]} of level {self.group_level[self._par[k]]}: parents "
                             "must be coarser (a malformed asset)")
        self._coarse_first = np.argsort(-self.group_level, kind="stable")  # parents first
        # a page's level: the coarsest group using it (coarse pages are loaded first)
        self.page_level = np.zeros(P, np.int64)
        pg_rows = np.repeat(np.arange(P), np.diff(self._pg_off))
        np.maximum.at(self.page_level, pg_rows, self.group_level[self._pg])

        roots = np.flatnonzero(self.pinned)
        if self.slots < len(roots):
            raise ValueError(f"a page pool of {self.slots} slots cannot hold the scene's "
                             f"{len(roots)} root pages (always resident): use at least "
                             f"{len(roots)} slots")
        self.residency = np.full(P, NOT_RESIDENT, np.uint32)
        self.slot_page = np.full(self.slots, NOT_RESIDENT, np.uint32)
        self.last_use = np.full(P, -(1 << 62), np.int64)  # frame of the last use, per page
        self._missing = np.diff(self._gp_off).astype(np.int64)  # non-resident pages per group
        self._mark = np.zeros(G, np.int64)  # visit marks of the ancestor walks
        self._page_mark = np.zeros(P, np.int64)
        self._token = 0
        self._group_buf = np.zeros(G, np.int64)
        self._page_buf = np.zeros(P, np.int64)
        self._free = list(range(self.slots - 1, len(roots) - 1, -1))  # a stack: pops lowest
        for slot, p in enumerate(roots):
            self._put(int(p), slot, -(1 << 62))
        self._latest = -(1 << 62)  # the latest frame reported
        self.effective = self.effective_for_missing(self._missing)
        self.residency_version = 1
        self.effective_version = 1
        self.stats: StreamStats | None = None
        self.totals = StreamTotals()

    # ------------------------------------------------------------------ topology
    @staticmethod
    def _read_asset(a: Asset, pb: int, gb: int, gp_group: list, gp_page: list,
                    edge_child: list, edge_parent: list) -> None:
        """One asset's group -> page pairs (from its parts) and parent edges (from its records)."""
        groups, parts = a.groups, a.parts
        ng = len(groups)
        counts = np.asarray(groups["part_count"], np.int64)
        first = np.asarray(groups["first_part"], np.int64)
        part_idx = np.repeat(first - (np.cumsum(counts) - counts), counts) + np.arange(counts.sum())
        if (counts < 1).any() or (len(part_idx) and part_idx.max() >= len(parts)):
            raise ValueError(f"{a.path}: a group without parts or with parts out of range")
        pages = np.asarray(parts["page"], np.int64)[part_idx]
        if len(pages) and (pages.max() >= a.page_count):
            raise ValueError(f"{a.path}: a group part names page {pages.max()}, the asset has "
                             f"{a.page_count}")
        gp_group.append(np.repeat(np.arange(ng), counts) + gb)
        gp_page.append(pages + pb)
        # the record area of every page (not the geometry): headers, then the records' fields
        arr = a.file.pages_array()
        hdr = PAGE_HEADER_DTYPE.itemsize
        counts = np.ascontiguousarray(arr[:, :hdr]).view(PAGE_HEADER_DTYPE)["cluster_count"]
        counts = counts.reshape(-1).astype(np.int64)
        width = int(counts.max(initial=0)) * CLUSTER_DTYPE.itemsize
        if hdr + width > a.page_size:
            raise ValueError(f"{a.path}: a page header claims more clusters than fit in a page")
        recs = np.ascontiguousarray(arr[:, hdr : hdr + width]).view(CLUSTER_DTYPE)
        valid = np.arange(recs.shape[1]) < counts[:, None]
        member_a = recs["group"][valid].astype(np.int64)
        source_a = recs["source_group"][valid].astype(np.int64)
        gen = source_a != NO_GROUP
        if (member_a >= ng).any() or (source_a[gen] >= ng).any():
            raise ValueError(f"{a.path}: a cluster record names a group out of range 0..{ng - 1}")
        edge_child.append(source_a[gen] + gb)
        edge_parent.append(member_a[gen] + gb)

    def group_pages(self, group: int) -> np.ndarray:
        """The scene pages holding the member clusters of a (scene) group."""
        return self._gp[self._gp_off[group] : self._gp_off[group + 1]]

    def page_groups(self, page: int) -> np.ndarray:
        """The (scene) groups with member clusters in a scene page."""
        return self._pg[self._pg_off[page] : self._pg_off[page + 1]]

    def parents(self, group: int) -> np.ndarray:
        """The parent groups of a group: those the clusters it produced are members of."""
        return self._par[self._par_off[group] : self._par_off[group + 1]]

    def ancestors(self, groups, *, stop_at_effective: bool = False) -> np.ndarray:
        """The given groups and all their ancestors (distinct, int64, nearest first). With
        stop_at_effective the walk neither enters nor lists effective groups: what remains are
        the groups whose pages may be missing for the given ones to become effective."""
        self._token += 1
        start = np.atleast_1d(np.asarray(groups, np.int64))
        n = _walk_up(self._par_off, self._par, start, self.effective, stop_at_effective,
                     self._mark, self._token, self._group_buf)
        return self._group_buf[:n].copy()

    def pages_of(self, groups) -> np.ndarray:
        """The distinct scene pages holding members of the given groups (int64)."""
        g = np.atleast_1d(np.asarray(groups, np.int64))
        self._token += 1
        m = _pages_of(self._gp_off, self._gp, g, len(g), self._page_mark, self._token,
                      self._page_buf)
        return self._page_buf[:m].copy()

    # ------------------------------------------------------------------ effective
    def effective_for_missing(self, missing: np.ndarray) -> np.ndarray:
        """(group_count,) uint32 effective flags, given the number of non-resident pages of each
        group: one pass over the parent edges, coarse levels first."""
        out = np.zeros(self.group_count, np.uint32)
        _effective_pass(self._coarse_first, self._par_off, self._par,
                        np.asarray(missing, np.int64), out)
        return out

    def effective_for(self, resident: np.ndarray) -> np.ndarray:
        """(group_count,) uint32: the effective flags for any set of resident pages (a (page_count,)
        bool mask; pinned pages count as resident). Does not change the streamer."""
        res = np.asarray(resident, bool) | self.pinned
        rows = np.repeat(np.arange(self.group_count), np.diff(self._gp_off))
        missing = np.bincount(rows, weights=~res[self._gp], minlength=self.group_count)
        return self.effective_for_missing(missing)

    def _refresh_effective(self) -> None:
        eff = self.effective_for_missing(self._missing)
        if not np.array_equal(eff, self.effective):
            self.effective[:] = eff  # in place: views of it stay current
            self.effective_version += 1

    # ------------------------------------------------------------------ slots
    def _put(self, page: int, slot: int, frame: int) -> int:
        """Place a page in a slot (evicting its page); returns 1 if a page was evicted."""
        old = int(self.slot_page[slot])
        evicted = 0
        if old != NOT_RESIDENT:
            self.residency[old] = NOT_RESIDENT
            self._missing[self.page_groups(old)] += 1
            evicted = 1
        self.residency[page] = slot
        self.slot_page[slot] = page
        self._missing[self.page_groups(page)] -= 1
        self.last_use[page] = frame
        return evicted

    def _stamp(self, pages: np.ndarray, frame: int) -> None:
        """Pages used in `frame`, and the pages of every ancestor of their effective groups."""
        self.last_use[pages] = np.maximum(self.last_use[pages], frame)
        groups = _gather(self._pg_off, self._pg, pages)
        groups = groups[self.effective[groups] != 0]
        if len(groups):
            up = self.pages_of(self.ancestors(groups))
            self.last_use[up] = np.maximum(self.last_use[up], frame)

    def _victims(self, frame_floor: int) -> np.ndarray:
        """Evictable pages, least recently used first (ties: finer pages, then later pages)."""
        held = self.slot_page[self.slot_page != NOT_RESIDENT].astype(np.int64)
        held = held[~self.pinned[held] & (self.last_use[held] < frame_floor)]
        order = np.lexsort((-held, self.page_level[held], self.last_use[held]))
        return held[order]

    # ------------------------------------------------------------------ the update
    def _requests(self, requests) -> tuple[np.ndarray, np.ndarray]:
        """Distinct requested groups, highest priority first (ties: lower group index)."""
        if requests is None:
            return np.zeros(0, np.int64), np.zeros(0)
        a = np.asarray(requests)
        if a.dtype.names:
            groups, prio = np.asarray(a["group"]).ravel(), np.asarray(a["priority"]).ravel()
        else:
            if a.size % 2:
                raise ValueError(f"requests must be (n, 2) (group, priority) rows, got {a.shape}")
            a = a.reshape(-1, 2)
            groups, prio = a[:, 0], a[:, 1]
        g = np.asarray(groups, np.float64)
        wrong = (g != np.floor(g)) | (g < 0) | (g >= self.group_count)
        if wrong.any():
            raise ValueError(f"request for group {g[wrong][0]}: the scene has groups "
                             f"0..{self.group_count - 1}")
        groups = g.astype(np.int64)
        prio = np.nan_to_num(np.asarray(prio, np.float64), nan=-np.inf)
        order = np.lexsort((-prio, groups))  # per group, the highest priority first
        groups, prio = groups[order], prio[order]
        first = np.ones(len(groups), bool)
        first[1:] = groups[1:] != groups[:-1]
        groups, prio = groups[first], prio[first]
        order = np.lexsort((groups, -prio))
        return groups[order], prio[order]

    def update(self, requests, used_slots, frame: int) -> list[tuple[int, int]]:
        """Take one frame's readback and decide the uploads (see the module docstring).

        requests: REQUEST_DTYPE (or any structured array with "group" and "priority"), or (n, 2)
            numbers (group, priority); scene group indices; repeated groups keep their highest
            priority; None for none.
        used_slots: pool slots the GPU used in `frame` (any integer array; None for none).
        frame: the frame the readback belongs to (monotonic; late, out-of-order reports are fine).

        Returns the uploads [(slot, scene page), ...] to perform (copy `page_bytes(page)` into the
        slot) before the GPU reads the new `residency` and `effective` tables. Raises ValueError
        for a group or slot out of range.
        """
        frame = int(frame)
        self._latest = max(self._latest, frame)
        used = np.asarray([] if used_slots is None else used_slots, np.int64).ravel()
        if len(used) and (used.min() < 0 or used.max() >= self.slots):
            bad = used[(used < 0) | (used >= self.slots)][0]
            raise ValueError(f"used slot {bad}: the pool has slots 0..{self.slots - 1}")
        pages = self.slot_page[used]
        pages = np.unique(pages[pages != NOT_RESIDENT]).astype(np.int64)
        if len(pages):
            self._stamp(pages, frame)
        groups, _ = self._requests(requests)
        requested = len(groups)
        groups = groups[self.effective[groups] == 0]
        protect = np.zeros(self.page_count, bool)  # needed by served requests or just uploaded
        uploads: list[tuple[int, int]] = []
        evicted = served = 0
        victims: np.ndarray | None = None
        vi = 0
        floor = self._latest - self.protect_frames + 1  # pages used at or after it stay
        budget = self.upload_budget
        full = False
        for g in groups:
            if budget == 0 or full:
                break
            protect[self.pages_of(self.ancestors(g))] = True
            need = self.pages_of(self.ancestors(g, stop_at_effective=True))
            missing = need[self.residency[need] == NOT_RESIDENT]
            missing = missing[np.argsort(-self.page_level[missing], kind="stable")]
            done = 0
            for p in missing:
                if budget == 0:
                    break
                if self._free:
                    slot = self._free.pop()
                else:
                    if victims is None:
                        victims = self._victims(floor)
                    while vi < len(victims) and protect[victims[vi]]:
                        vi += 1
                    if vi == len(victims):
                        full = True
                        break
                    slot = int(self.residency[victims[vi]])
                    vi += 1
                evicted += self._put(int(p), slot, frame)
                protect[p] = True
                uploads.append((slot, int(p)))
                budget -= 1
                done += 1
            served += done == len(missing)
        if uploads:
            self.residency_version += 1
            self._refresh_effective()
        self.stats = StreamStats(
            frame=frame, requested=requested, served=served, uploaded=len(uploads),
            evicted=evicted, bytes_uploaded=len(uploads) * self.page_size,
            resident=self.resident_count, slots=self.slots,
            effective=int(np.count_nonzero(self.effective)))
        t = self.totals
        t.updates += 1
        t.uploaded += len(uploads)
        t.evicted += evicted
        t.bytes_uploaded += len(uploads) * self.page_size
        return uploads

    # ------------------------------------------------------------------ helpers
    def load_all(self) -> list[tuple[int, int]]:
        """Make every page resident (the fully resident mode); returns the uploads to perform.
        Raises ValueError when the pool is smaller than the scene."""
        if self.slots < self.page_count:
            raise ValueError(f"a page pool of {self.slots} slots cannot hold all "
                             f"{self.page_count} pages of the scene")
        uploads = []
        for p in np.flatnonzero(self.residency == NOT_RESIDENT):
            slot = self._free.pop()
            self._put(int(p), slot, self._latest)
            uploads.append((slot, int(p)))
        if uploads:
            self.residency_version += 1
            self._refresh_effective()
        return uploads

    def resident_uploads(self) -> list[tuple[int, int]]:
        """(slot, scene page) for every resident page: what a freshly created pool needs."""
        slots = np.flatnonzero(self.slot_page != NOT_RESIDENT)
        return [(int(s), int(self.slot_page[s])) for s in slots]

    def page_bytes(self, scene_page: int) -> np.ndarray:
        """A scene page's page_size bytes: a read-only uint8 view of the memory-mapped file (its
        checksum verified on first access)."""
        p = int(scene_page)
        if not 0 <= p < self.page_count:
            raise IndexError(f"page {p} out of range (0..{self.page_count - 1})")
        k = int(np.searchsorted(self.page_base, p, side="right")) - 1
        return self.assets[k].file.page(p - int(self.page_base[k]))

    def asset_of_page(self, scene_page: int) -> tuple[int, int]:
        """(asset index, local page) of a scene page."""
        k = int(np.searchsorted(self.page_base, int(scene_page), side="right")) - 1
        return k, int(scene_page) - int(self.page_base[k])

    @property
    def resident_count(self) -> int:
        return int(np.count_nonzero(self.residency != NOT_RESIDENT))

    @property
    def resident_fraction(self) -> float:
        """Resident pages / scene pages."""
        return self.resident_count / self.page_count if self.page_count else 1.0
