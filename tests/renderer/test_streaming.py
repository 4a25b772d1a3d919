"""The CPU page streamer (renderer.streaming): the residency table and the effective flags stay
consistent through random request and eviction sequences in small pools, the residency-aware cut
is crack-free for any residency (checked with preprocess.verify.check_cut), and the pool policy
(budget, LRU, protection of recently used pages, priorities) does what it says."""

from __future__ import annotations

import numpy as np
import pytest

from preprocess.tess.limits import PAGE_ROOT
from preprocess.tess.pages import page_clusters
from preprocess.tess.records import NO_GROUP
from preprocess.build import build_file
from assets import builtin_mesh
from preprocess.config import BuildConfig
from preprocess.load import load_mesh
from preprocess.cut import projected_error, select_cut
from preprocess.verify import check_cut, default_cameras
from renderer.scene import open_asset
from renderer.layout import REQUEST_DTYPE
from renderer.limits import NOT_RESIDENT
from renderer.streaming import PageStreamer, select_resident_cut

SMALL_PAGES = BuildConfig(page_size=16 * 1024)  # many pages from small meshes


@pytest.fixture(scope="module")
def cli_sphere(tmp_path_factory):
    """A sphere built by the CLI, as a user would (16 KiB pages: 42 pages, 26 groups)."""
    from renderer.apps import cli

    path = tmp_path_factory.mktemp("stream") / "sphere.tess"
    assert cli.main(["preprocess", "--builtin", "sphere", "--triangles", "20000", "--page-kib",
                     "16", "-o", str(path), "-q"]) == 0
    return open_asset(path)


@pytest.fixture(scope="module")
def rock(tmp_path_factory):
    """A rock with its DAG (the cut checks need it)."""
    path = tmp_path_factory.mktemp("stream") / "rock.tess"
    result = build_file(builtin_mesh("rock", 30000), path, SMALL_PAGES)
    return open_asset(path), result.dag


@pytest.fixture(scope="module")
def scene(cli_sphere, rock):
    """Three assets (one twice): scene indices are offset by each asset's bases."""
    return [cli_sphere, rock[0], cli_sphere]


def topology(assets):
    """(group pages, group parents, pinned pages) of a scene, straight from the files, loop by
    loop: the reference the streamer's vectorized reading is compared with."""
    pages, parents, pinned = [], [], []
    page_base = group_base = 0
    for a in assets:
        for g in a.groups:
            parts = a.parts[g["first_part"] : g["first_part"] + g["part_count"]]
            pages.append({int(p) + page_base for p in parts["page"]})
            parents.append(set())
        for p in range(a.page_count):
            for rec in page_clusters(np.ascontiguousarray(a.file.pages_array()[p])):
                if rec["source_group"] != NO_GROUP:
                    parents[group_base + int(rec["source_group"])].add(group_base
                                                                       + int(rec["group"]))
        pinned.extend((a.file.page_flags & PAGE_ROOT) != 0)
        page_base += a.page_count
        group_base += len(a.groups)
    return pages, parents, np.array(pinned)


def brute_effective(pages, parents, resident):
    """The rule, by recursion: all own pages resident and every parent effective."""
    memo: dict[int, bool] = {}

    def eff(g: int) -> bool:
        if g not in memo:
            memo[g] = all(resident[p] for p in pages[g]) and all(eff(q) for q in parents[g])
        return memo[g]

    return np.array([eff(g) for g in range(len(pages))])


def check_state(s: PageStreamer, pages, parents, pinned) -> None:
    """Residency table, slot table and effective flags agree with each other and the rule."""
    res = s.residency
    held = np.flatnonzero(res != NOT_RESIDENT)
    assert len(np.unique(res[held])) == len(held), "two pages in one slot"
    assert (res[held] < s.slots).all()
    assert np.array_equal(s.slot_page[res[held]], held)
    assert (s.slot_page != NOT_RESIDENT).sum() == len(held)
    assert (res[pinned] != NOT_RESIDENT).all(), "root pages are always resident"
    eff = s.effective.astype(bool)
    assert s.effective.dtype == np.uint32
    for g in np.flatnonzero(eff):  # closed upward
        assert all(eff[q] for q in parents[g]), f"group {g} is effective, a parent is not"
    assert np.array_equal(eff, brute_effective(pages, parents, res != NOT_RESIDENT))


def test_topology_matches_the_files(scene) -> None:
    s = PageStreamer(scene, slots=200, upload_budget=4)
    pages, parents, pinned = topology(scene)
    assert s.group_count == len(pages) and s.page_count == len(pinned)
    for g in range(s.group_count):
        assert set(s.group_pages(g).tolist()) == pages[g]
        assert set(s.parents(g).tolist()) == parents[g]
        assert all(s.group_level[q] > s.group_level[g] for q in parents[g])
    for p in range(s.page_count):
        assert set(s.page_groups(p).tolist()) == {g for g in range(len(pages)) if p in pages[g]}
    assert np.array_equal(s.pinned, pinned)
    # only the root pages are resident at first, in the first slots
    assert s.resident_uploads() == [(k, int(p)) for k, p in enumerate(np.flatnonzero(pinned))]
    check_state(s, pages, parents, pinned)
    roots = [a.meta["root_group"] + b for a, b in zip(scene, s.group_base, strict=True)]
    assert s.effective[roots].all()


def test_random_requests_and_evictions_keep_the_invariants(scene) -> None:
    pages, parents, pinned = topology(scene)
    rng = np.random.default_rng(5)
    roots = int(pinned.sum())
    for _ in range(6):
        slots = int(rng.integers(roots, roots + 12))
        budget = int(rng.integers(1, 5))
        s = PageStreamer(scene, slots=slots, upload_budget=budget)
        total = 0
        for frame in range(30):
            req = np.zeros(int(rng.integers(0, 12)), REQUEST_DTYPE)
            req["group"] = rng.integers(0, s.group_count, len(req))
            req["priority"] = rng.random(len(req)) * 100
            used = rng.choice(slots, int(rng.integers(0, slots // 2 + 1)), replace=False)
            before = s.residency.copy()
            used_pages = s.slot_page[used][s.slot_page[used] != NOT_RESIDENT]
            version = s.residency_version
            # the first request served: the most wanted group that is not effective
            waiting = req[s.effective[req["group"]] == 0]
            first = waiting["group"][np.argmax(waiting["priority"])] if len(waiting) else None
            first_needs = s.pages_of(s.ancestors(first)) if first is not None else []
            uploads = s.update(req, used, frame)
            check_state(s, pages, parents, pinned)
            assert len(uploads) <= budget and s.stats.uploaded == len(uploads)
            assert len({slot for slot, _ in uploads}) == len(uploads)
            for slot, p in uploads:
                assert before[p] == NOT_RESIDENT and s.residency[p] == slot
            # what was uploaded is a page of a requested group or of one of its ancestors
            wanted = set(s.pages_of(s.ancestors(req["group"])).tolist()) if len(req) else set()
            assert {p for _, p in uploads} <= wanted
            evicted = np.flatnonzero((before != NOT_RESIDENT) & (s.residency == NOT_RESIDENT))
            assert len(evicted) == s.stats.evicted
            assert not pinned[evicted].any()
            assert not np.isin(evicted, used_pages).any(), "a page used in this frame was evicted"
            assert not np.isin(evicted, first_needs).any(), "evicted what the request needs"
            assert (s.residency_version != version) == bool(uploads)
            assert s.stats.requested == len(np.unique(req["group"]))
            assert s.stats.resident == int((s.residency != NOT_RESIDENT).sum())
            assert s.stats.bytes_uploaded == len(uploads) * s.page_size
            total += len(uploads)
        assert s.totals.uploaded == total and 0 < s.resident_fraction <= 1
        assert 0 < s.stats.pool_use <= 1


def test_load_all_and_page_bytes(scene) -> None:
    s = PageStreamer(scene, slots=PageStreamer(scene, 100, 1).page_count, upload_budget=1)
    uploads = s.load_all()
    assert len(uploads) + int(s.pinned.sum()) == s.page_count
    assert s.resident_fraction == 1.0 and s.effective.all()
    assert s.load_all() == []
    for _, p in s.resident_uploads()[::7]:
        k, local = s.asset_of_page(p)
        data = s.page_bytes(p)
        assert data.shape == (s.page_size,) and data.dtype == np.uint8
        assert np.array_equal(data, scene[k].file.pages_array()[local])
        assert int(data[4:8].view(np.uint32)[0]) == local  # the header names the local page
    small = PageStreamer(scene, slots=s.page_count - 1, upload_budget=1)
    with pytest.raises(ValueError, match=f"cannot hold all {s.page_count} pages"):
        small.load_all()


def test_too_few_slots_for_the_root_pages(scene) -> None:
    roots = int(PageStreamer(scene, slots=100, upload_budget=1).pinned.sum())
    assert roots == 3
    with pytest.raises(ValueError, match=r"2 slots cannot hold the scene's 3 root pages .*"
                                         r"use at least 3 slots"):
        PageStreamer(scene, slots=2, upload_budget=1)
    PageStreamer(scene, slots=3, upload_budget=1)  # exactly enough


def test_bad_requests_and_slots(cli_sphere) -> None:
    s = PageStreamer([cli_sphere], slots=10, upload_budget=2)
    g = s.group_count
    with pytest.raises(ValueError, match=rf"request for group {g}\.0: the scene has groups "
                                         rf"0\.\.{g - 1}"):
        s.update(np.array([[g, 1.0]]), None, 0)
    with pytest.raises(ValueError, match=r"used slot 10: the pool has slots 0\.\.9"):
        s.update(None, [10], 0)
    assert s.update(np.zeros((0, 2)), [], 0) == []  # nothing asked, nothing done


def _missing(s: PageStreamer, g: int) -> set[int]:
    """The pages a group still needs (its own and its ancestors')."""
    need = s.pages_of(s.ancestors(g, stop_at_effective=True))
    return set(need[s.residency[need] == NOT_RESIDENT].tolist())


def _two_missing(asset, full_pool: bool = False):
    """A streamer where everything is resident but the pages of two finest groups ga and gb
    (which need nothing else): (streamer, pages of ga, pages of gb, ga, gb). Pages holding only
    level-0 groups are never an ancestor's, so nothing but their own use stamps them. With
    full_pool the pool has exactly the slots it uses, else room to spare."""
    probe = PageStreamer([asset], slots=asset.page_count, upload_budget=1)
    finest = [g for g in range(probe.group_count)
              if (probe.page_level[probe.group_pages(g)] == 0).all()][::-1]
    for i, ga in enumerate(finest):
        for gb in finest[i + 1 :]:
            a, b = set(probe.group_pages(ga).tolist()), set(probe.group_pages(gb).tolist())
            if a & b:
                continue
            used = asset.page_count - len(a | b)
            s = PageStreamer([asset], slots=used if full_pool else asset.page_count + 5,
                             upload_budget=10_000)
            others = [g for g in range(s.group_count) if not (a | b) & set(s.group_pages(g))]
            s.update(np.array([[g, 1.0] for g in others]), None, 0)
            if s.resident_count == used and _missing(s, ga) == a and _missing(s, gb) == b:
                return s, sorted(a), sorted(b), ga, gb
    raise AssertionError("no two groups fit the test")


def test_higher_priority_served_first(cli_sphere) -> None:
    s, a, b, ga, gb = _two_missing(cli_sphere)
    assert not s.effective[[ga, gb]].any()
    s.upload_budget = 1
    loaded, frame = [], 1
    while not s.effective[gb]:  # gb first, one page per frame, then ga
        loaded += [p for _, p in s.update(np.array([[ga, 5.0], [gb, 7.5], [ga, 1.0]]), None,
                                          frame)]
        assert s.stats.requested == 2 and not s.effective[ga]
        frame += 1
    assert sorted(loaded) == b and s.stats.served == 1
    while not s.effective[ga]:
        loaded += [p for _, p in s.update(np.array([[ga, 5.0], [gb, 7.5]]), None, frame)]
        frame += 1
    assert sorted(loaded[len(b) :]) == a


def test_ancestors_are_loaded_coarse_first(cli_sphere) -> None:
    s = PageStreamer([cli_sphere], slots=100, upload_budget=1)
    g = int(np.flatnonzero(s.group_level == 0)[0])
    need = sorted(_missing(s, g))
    loaded = []
    for frame in range(len(need)):
        assert not s.effective[g]
        loaded += [p for _, p in s.update(np.array([[g, 1.0]]), None, frame)]
    assert sorted(loaded) == need and s.effective[g]
    levels = s.page_level[loaded]
    assert (np.diff(levels) <= 0).all(), "coarse pages first"
    assert s.update(np.array([[g, 1.0]]), None, 99) == []  # effective: nothing to do


def test_lru_eviction_and_recently_used_protection(cli_sphere) -> None:
    # a full pool without the pages m1, m2 of the groups g1, g2
    s, m1, m2, g1, g2 = _two_missing(cli_sphere, full_pool=True)
    assert (s.slot_page != NOT_RESIDENT).all(), "the pool is full"
    # three finest groups that neither request needs, alone in their pages: old, older, oldest
    # (a used page stamps all the pages of its group: the group needs them all)
    keep = set(s.pages_of(s.ancestors([g1, g2])).tolist())
    old = [g for g in range(s.group_count) if s.group_level[g] == 0 and s.effective[g]
           and all(s.page_groups(p).tolist() == [g] and p not in keep for p in s.group_pages(g))]
    old = old[:3]
    pages = [sorted(s.group_pages(g).tolist(), reverse=True) for g in old]
    slots = [s.residency[p].astype(np.int64) for p in pages]
    everything = np.arange(s.slots)
    for f in range(1, 4):  # old[i] last used in frame i
        s.update(None, np.setdiff1d(everything, np.concatenate(slots[:f])), f)
    for i in range(3):
        assert (s.last_use[pages[i]] == i).all()
    lru = np.concatenate(pages)  # eviction order: least recent first, then the later page
    lru_slots = s.residency[lru].astype(np.int64)
    # serving g1 evicts the least recently used, oldest first, into their slots
    s.upload_budget = len(m1)
    up = s.update(np.array([[g1, 1.0]]), np.setdiff1d(everything, np.concatenate(slots)), 4)
    assert [slot for slot, _ in up] == lru_slots[: len(m1)].tolist()
    assert (s.residency[lru[: len(m1)]] == NOT_RESIDENT).all()
    assert (s.residency[lru[len(m1) :]] != NOT_RESIDENT).all()
    assert sorted(p for _, p in up) == m1 and s.effective[g1] and s.stats.evicted == len(m1)
    # pages used in the latest frame are never evicted: only old[2]'s can go
    s.upload_budget = len(m2)
    up = s.update(np.array([[g2, 1.0]]), np.setdiff1d(everything, slots[2]), 5)
    assert [slot for slot, _ in up] == slots[2][: len(m2)].tolist()
    assert s.stats.evicted == len(up)
    # every slot used in the latest frame: nothing can be evicted, the request waits
    if not s.effective[g2]:
        assert s.update(np.array([[g2, 1.0]]), everything, 6) == []
        assert s.stats.evicted == 0 and not s.effective[g2]
    # a page in use protects the pages of its group's ancestors: they outlive unused pages
    s.update(None, [s.residency[m1[0]]], 7)
    for q in s.pages_of(s.ancestors(g1)):
        assert s.last_use[q] == 7


def test_requests_for_effective_groups_are_ignored(cli_sphere) -> None:
    s = PageStreamer([cli_sphere], slots=100, upload_budget=10)
    root = int(cli_sphere.meta["root_group"])
    assert s.update(np.array([[root, 1e9]]), None, 0) == []
    assert s.stats.requested == 1 and s.stats.uploaded == 0


def _cluster_pages(asset) -> np.ndarray:
    """The page of each cluster (by global cluster id) of a single asset."""
    out = np.zeros(int(asset.meta["clusters"]), np.int64)
    for p in range(asset.page_count):
        out[page_clusters(np.ascontiguousarray(asset.file.pages_array()[p]))["cluster"]] = p
    return out


def _cut_views(dag):
    """(camera, scale, taus): view-independent and three cameras, taus spread over the errors."""
    views = []
    for cam in [None, *default_cameras(dag)]:
        scale = 1.0 if cam is None else 500.0
        proj = projected_error(dag.group_sphere, dag.group_error, cam, scale=scale)
        finite = proj[np.isfinite(proj) & (proj > 0)]
        views.append((cam, scale, np.geomspace(0.5 * finite.min(), 2 * finite.max(), 5)))
    return views


def _check_resident_cuts(dag, asset, s: PageStreamer, resident: np.ndarray, views,
                         cluster_page) -> int:
    eff = s.effective_for(resident)
    mixed = 0
    for cam, scale, taus in views:
        own = projected_error(dag.cluster_self_sphere, dag.cluster_self_error, cam, scale=scale)
        grp = projected_error(dag.group_sphere, dag.group_error, cam, scale=scale)
        for tau in taus:
            drawn = select_resident_cut(own, grp, dag.cluster_group, dag.cluster_source_group,
                                        eff, float(tau))
            cut = np.flatnonzero(drawn)
            check_cut(dag, cut)  # exactly once, watertight, the right area
            assert (resident | s.pinned)[cluster_page[cut]].all(), "a drawn cluster is missing"
            mixed += len(np.unique(dag.cluster_level[cut])) > 1
            if eff.all():  # everything resident: the plain cut rule
                assert np.array_equal(cut, select_cut(dag, float(tau), cam, scale))
    return mixed


@pytest.mark.slow
@pytest.mark.parametrize("mesh", ["rock", "homer"])
def test_resident_cut_is_crack_free(rock, mesh, tmp_path, shared_assets) -> None:
    if mesh == "rock":
        asset, dag = rock
    else:
        homer = shared_assets / "homer.obj"
        if not homer.exists():
            pytest.skip(f"{homer} missing")
        path = tmp_path / "homer.tess"
        dag = build_file(load_mesh(homer), path, SMALL_PAGES).dag
        asset = open_asset(path)
    s = PageStreamer([asset], slots=asset.page_count, upload_budget=4)
    views = _cut_views(dag)
    cluster_page = _cluster_pages(asset)
    rng = np.random.default_rng(11)
    mixed = 0
    residencies = [np.ones(s.page_count, bool), np.zeros(s.page_count, bool)]
    residencies += [rng.random(s.page_count) < f for f in (0.5, 0.9)]
    for k in (2, 5, 10, 20):  # some groups with all their ancestors, and noise
        resident = rng.random(s.page_count) < 0.2
        resident[s.pages_of(s.ancestors(rng.permutation(s.group_count)[:k]))] = True
        residencies.append(resident)
    effective = [int(s.effective_for(r).sum()) for r in residencies]
    assert len(set(effective)) >= 5, f"residencies too alike: {effective} effective groups"
    for resident in residencies:
        mixed += _check_resident_cuts(dag, asset, s, resident, views, cluster_page)
    # and the residencies a small pool reaches through requests and evictions
    small = PageStreamer([asset], slots=int(s.pinned.sum()) + 6, upload_budget=3)
    for frame in range(12):
        req = np.stack([rng.integers(0, s.group_count, 6), rng.random(6)], axis=1)
        small.update(req, rng.choice(small.slots, 3, replace=False), frame)
        if frame % 4 == 3:
            resident = small.residency != NOT_RESIDENT
            assert np.array_equal(small.effective_for(resident), small.effective)
            mixed += _check_resident_cuts(dag, asset, small, resident, views, cluster_page)
    assert mixed > 10, "the cuts should mix levels"
