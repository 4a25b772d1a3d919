"""GPU culling (real WGSL: instance_cull.wgsl, cull.wgsl, math.wgsl, on any adapter, lavapipe
included) against its numpy twin `renderer.oracles.cpu_cull`.

- the twin and the GPU select the same clusters, in the same SW/HW bins, with the same instance
  frustum test and the same statistics counters, on a small scene (two procedural assets, ten
  instances: translated, uniformly scaled and rotated, non-uniformly scaled) seen from views that
  see everything, almost nothing, nothing, from far away and from inside a cluster's bounds;
- the persistent and the per-level traversals select exactly the same clusters;
- where an instance is entirely in view, the drawn cut is the cut `preprocess.cut.select_cut`
  chooses from the DAG, and covers the surface exactly once (`check_cut`);
- a queue too small for the scene raises the overflow flag, and the frame still finishes.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pytest

from preprocess.build import build_file
from assets import builtin_mesh
from preprocess.cut import projected_error, select_cut
from preprocess.verify import check_cut
from renderer.camera import Camera
from renderer.oracles.cpu_cull import COUNTER_NAMES, CullResult, cluster_records, cull, frame_view
from renderer.renderer import Renderer
from renderer.options import RenderOptions
from renderer.scene import Scene, open_asset

W, H = 160, 120
# A decision of the twin (float64) whose value lies closer than this (relative; see
# renderer/oracles/cpu_cull.py for how each margin is measured) to its threshold may come out the
# other way on the GPU, which rounds every step to float32 (about 6e-8 relative, times the few
# operations and the cancellation that the margins already account for). Only rows whose deciding
# margin is below SLACK may differ, and they must stay rare (MAX_FLIPS per frame).
SLACK = 1e-4
MAX_FLIPS = 3


# ------------------------------------------------------------------------------------ scene


def rotation(axis: tuple[float, float, float], angle: float) -> np.ndarray:
    """(3, 3) float64 rotation by `angle` radians about `axis`."""
    x, y, z = np.asarray(axis, np.float64) / np.linalg.norm(axis)
    c, s = np.cos(angle), np.sin(angle)
    k = np.array([[0, -z, y], [z, 0, -x], [-y, x, 0]])
    return np.eye(3) * c + s * k + (1 - c) * np.outer((x, y, z), (x, y, z))


def transform(t: tuple[float, float, float], linear: np.ndarray | float = 1.0) -> np.ndarray:
    """(4, 4) float32 affine transform: `linear` (3, 3) or a uniform scale, then `t`."""
    m = np.eye(4)
    m[:3, :3] = np.eye(3) * linear if np.isscalar(linear) else linear
    m[:3, 3] = t
    return m.astype(np.float32)


ROCK, SPHERE = 0, 1
COVER_INSTANCE = 1  # uniformly scaled and rotated: the coverage test's instance
INSTANCES = [
    (ROCK, transform((0.0, 0.0, 0.0))),
    (ROCK, transform((3.5, 0.3, -1.0), 0.6 * rotation((1.0, 2.0, 0.5), 0.8))),
    (SPHERE, transform((-3.0, 0.5, 0.0), 0.5)),
    (SPHERE, transform((0.0, 2.2, 0.5), np.diag([0.3, 0.8, 0.5]) @ rotation((0, 1, 0), 0.4))),
    *[(SPHERE, transform((-10.0 + 4.0 * k, 0.0, -12.0), 0.6)) for k in range(6)],
]


@dataclass
class Built:
    paths: list[str]
    dags: list  # LodDag per asset


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Built:
    d = tmp_path_factory.mktemp("cull")
    rock = build_file(builtin_mesh("rock", 30_000), d / "rock.tess")
    sphere = build_file(builtin_mesh("sphere", 8_000), d / "sphere.tess")
    return Built([str(rock.path), str(sphere.path)], [rock.dag, sphere.dag])


@pytest.fixture(scope="module")
def renderer_for(built: Built, gpu) -> Callable[..., Renderer]:
    """Renderers of the test scene by options (one device, shared by all: `gpu`, which skips
    without one)."""
    cache: dict[RenderOptions, Renderer] = {}

    def get(**options) -> Renderer:
        # the twin has no occlusion culling (tests/renderer/test_occlusion.py checks that
        # separately): without it, each view's selection does not depend on the view before
        o = RenderOptions(timestamps=False, occlusion=False, **options)
        if o not in cache:
            r = Renderer(W, H, options=o)
            ids = [r.load(p) for p in built.paths]
            for a, m in INSTANCES:
                r.add_instance(ids[a], m)
            cache[o] = r
        return cache[o]

    return get


def cameras(built: Built) -> dict[str, Camera]:
    """The test views (see the module docstring)."""
    dag = built.dags[ROCK]
    # the eye in the tight bounds of the frontmost finest cluster of the rock at the origin (so
    # those bounds reach the near plane, and the spheres around the eye project huge errors)
    level0 = np.flatnonzero(dag.cluster_level == 0)
    front = level0[np.argmax(dag.cluster_bounds[level0, 2])]
    eye = dag.cluster_bounds[front, :3].astype(np.float64)
    return {
        "overview": Camera(eye=np.array([2.0, 4.0, 14.0]), target=np.array([0.0, 0.0, -3.0]),
                           near=0.05),
        "inside": Camera(eye=eye, target=np.zeros(3), fov_y=70.0, near=1e-3),
        "close": Camera(eye=np.array([0.4, 0.6, 2.2]), target=np.array([0.0, 0.0, 0.0]),
                        near=0.01),
        "one_far_sphere": Camera(eye=np.array([-9.0, 0.5, -6.0]),
                                 target=np.array([-10.0, 0.0, -12.0]), fov_y=25.0, near=0.01),
        "edge": Camera(eye=np.array([1.5, 0.8, 6.0]), target=np.array([9.0, 0.0, -3.0]),
                       fov_y=50.0, near=0.01),
        "distant": Camera(eye=np.array([10.0, 30.0, 80.0]), target=np.array([0.0, 0.0, -5.0]),
                          fov_y=20.0, near=0.1),
        "nothing": Camera(eye=np.array([0.0, 0.0, 8.0]), target=np.array([0.0, 0.0, 20.0]),
                          near=0.01),
        # far enough that some instances skip their BVH (instance_cull.wgsl) and some do not
        "horizon": Camera(eye=np.array([0.0, 50.0, 225.0]), target=np.array([-3.0, 0.0, -6.0]),
                          fov_y=20.0, near=0.1),
    }


VIEWS = ("overview", "inside", "close", "one_far_sphere", "edge", "distant", "nothing", "horizon")


# ------------------------------------------------------------------------------------ helpers


def sorted_rows(rows: np.ndarray) -> np.ndarray:
    """(k, 2) uint32 rows sorted by (instance, cluster ref)."""
    rows = np.asarray(rows, np.uint32).reshape(-1, 2)
    return rows[np.lexsort((rows[:, 1], rows[:, 0]))]


def gpu_frame(r: Renderer, camera: Camera, tau: float) -> tuple[dict, dict[str, np.ndarray]]:
    """(counters, {"sw", "hw"} sorted rows) of one GPU frame."""
    stats = r.render(camera, tau=tau).stats
    assert stats.overflow == 0
    vis = r.read_visible()
    return stats.counters, {k: sorted_rows(v) for k, v in vis.items()}


def as_set(rows: np.ndarray) -> set[tuple[int, int]]:
    return {(int(a), int(b)) for a, b in rows}


def compare(gpu_counters: dict, gpu: dict[str, np.ndarray], cpu: CullResult) -> set:
    """Assert the GPU frame is the twin's answer, up to rare float32 rounding flips of decisions
    within SLACK of their thresholds; returns the flipped decisions, as (instance, margin) pairs
    (one decision may add or remove many rows: the members of a group share its sphere and
    error, and so do the clusters simplified from one group)."""
    margin = {(int(a), int(b)): m for (a, b), m in zip(cpu.rows, cpu.margin, strict=True)}
    hw_margin = {(int(a), int(b)): m for (a, b), m in zip(cpu.rows, cpu.hw_margin, strict=True)}
    near = {(int(a), int(b)): m for (a, b), m in zip(cpu.near_rows, cpu.near_margin, strict=True)}
    g_sw, g_hw = as_set(gpu["sw"]), as_set(gpu["hw"])
    assert not g_sw & g_hw, "a cluster is in both the SW and the HW list"
    assert len(g_sw) == len(gpu["sw"]) and len(g_hw) == len(gpu["hw"]), "a row is listed twice"
    c_sw, c_hw = (as_set(x) for x in cpu.split())
    g_all, c_all = g_sw | g_hw, c_sw | c_hw
    flips = set()
    for row in sorted(c_all - g_all):
        assert margin[row] < SLACK, f"GPU misses {row}; the twin draws it by margin {margin[row]}"
        flips.add((row[0], margin[row]))
    for row in sorted(g_all - c_all):
        assert row in near, f"GPU draws {row}; the twin has no decision near drawing it"
        flips.add((row[0], near[row]))
    for row in sorted((g_sw & c_hw) | (g_hw & c_sw)):
        assert hw_margin[row] < SLACK, (f"{row} is in the other SW/HW bin on the GPU; the twin's "
                                        f"margin is {hw_margin[row]}")
        flips.add((row[0], hw_margin[row]))
    assert len(flips) <= MAX_FLIPS, f"too many rounding flips: {sorted(flips)}"
    if cpu.near_decisions == 0:
        assert {k: gpu_counters[k] for k in COUNTER_NAMES} == cpu.counters
    else:  # a flip near the top of a BVH may change a few tests below it
        for k in COUNTER_NAMES:
            assert abs(gpu_counters[k] - cpu.counters[k]) <= 0.1 * cpu.counters[k] + 2, k
    return flips


# ------------------------------------------------------------------------------------ tests


@pytest.mark.slow
@pytest.mark.parametrize("tau, sw_max_edge", [(1.0, 32.0), (0.5, 3.0), (4.0, 12.0)])
def test_gpu_matches_numpy_twin(built: Built, renderer_for, tau: float,
                                sw_max_edge: float) -> None:
    r = renderer_for(persistent=True, sw_max_edge=sw_max_edge)
    flips = []
    for name, cam in cameras(built).items():
        counters, gpu = gpu_frame(r, cam, tau)
        cpu = cull(r.scene, cam, W, H, tau=tau, sw_max_edge=sw_max_edge, slack=SLACK)
        flips += [(name, f) for f in compare(counters, gpu, cpu)]
        # the instance frustum test: only instances that pass the twin's draw anything
        drawn = set(np.concatenate([gpu["sw"][:, 0], gpu["hw"][:, 0]]).tolist())
        assert drawn <= set(np.flatnonzero(cpu.instance_visible).tolist()), name
    assert len(flips) <= MAX_FLIPS, flips


def test_views_exercise_every_rule(built: Built) -> None:
    """The views above reach every branch of the rules (so the comparison means something):
    instances culled and kept, far instances skipping their BVH, several LOD levels, both bins,
    for both HW reasons."""
    scene = Scene()  # no device needed
    ids = [scene.add_asset(open_asset(p)) for p in built.paths]
    for a, m in INSTANCES:
        scene.add_instance(ids[a], m)
    cams = cameras(built)
    res = {n: cull(scene, c, W, H, tau=1.0, sw_max_edge=32.0) for n, c in cams.items()}
    n = len(INSTANCES)
    assert res["overview"].counters["instances_visible"] == n
    assert 1 <= res["one_far_sphere"].counters["instances_visible"] <= 2
    assert 1 <= res["edge"].counters["instances_visible"] <= n // 2
    assert res["nothing"].counters["instances_visible"] == 0 and len(res["nothing"].rows) == 0
    inside = res["inside"]
    assert inside.hw.any() and not inside.hw.all()
    # a cluster in HW only because its bounds reach the near plane (its edges are short)
    assert cull(scene, cams["inside"], W, H, tau=1.0, sw_max_edge=1e9).hw.any()
    # LOD: nearer sees finer clusters and more of them, several levels in one view
    assert len(res["close"].rows) > len(res["distant"].rows) > 0
    close_levels = cluster_records(scene, res["close"].rows[:, 1])["level"]
    far_levels = cluster_records(scene, res["distant"].rows[:, 1])["level"]
    assert len(np.unique(close_levels)) >= 2 and close_levels.min() < far_levels.min()
    dist = res["distant"]
    assert dist.counters["clusters_tested"] > len(dist.rows)  # some clusters are too fine
    # far instances drawn from their root group, beside one that still walks its BVH
    hz = res["horizon"].counters
    assert 0 < hz["instances_far"] < hz["instances_visible"] == n
    assert all(res[v].counters["instances_far"] == 0 for v in ("overview", "close", "inside"))


def test_comparison_detects_a_wrong_rule(built: Built, renderer_for) -> None:
    """The comparison fails for a twin with a slightly different tau or SW/HW threshold."""
    r = renderer_for(persistent=True, sw_max_edge=3.0)
    cam = cameras(built)["close"]
    counters, gpu = gpu_frame(r, cam, 1.0)
    assert len(gpu["sw"]) and len(gpu["hw"])
    compare(counters, gpu, cull(r.scene, cam, W, H, tau=1.0, sw_max_edge=3.0))
    with pytest.raises(AssertionError):
        compare(counters, gpu, cull(r.scene, cam, W, H, tau=1.2, sw_max_edge=3.0))
    with pytest.raises(AssertionError):
        compare(counters, gpu, cull(r.scene, cam, W, H, tau=1.0, sw_max_edge=4.0))


def test_decisions_exactly_at_the_threshold(built: Built, renderer_for) -> None:
    """tau set to the very value a drawn cluster's own error projects to: the twin sees a margin
    of about 0 for that row, and the comparison accepts either outcome for the rows that this
    decision (shared by the clusters with the same LOD sphere and error) decides."""
    r = renderer_for(persistent=True, sw_max_edge=12.0)
    cam = cameras(built)["close"]
    base = cull(r.scene, cam, W, H, tau=1.0, sw_max_edge=12.0)
    rec = cluster_records(r.scene, base.rows[:, 1])
    coarse = np.flatnonzero(rec["self_error"] > 0)
    assert len(coarse)
    checked = 0
    for k in coarse[:: max(1, len(coarse) // 4)]:
        inst = int(base.rows[k, 0])
        world = r.scene.instance_world[inst].astype(np.float64)
        scale = float(r.scene.instance_scales()[inst])
        s = rec[k]["self_sphere"].astype(np.float64)
        centre = world[:3, :3] @ s[:3] + world[:3, 3]
        gap = np.linalg.norm(centre - np.asarray(cam.eye, np.float32)) - s[3] * scale
        tau = float(rec[k]["self_error"]) * scale * float(np.float32(cam.lod_scale(H))) / gap
        cpu = cull(r.scene, cam, W, H, tau=tau, sw_max_edge=12.0, slack=SLACK)
        row = (inst, int(base.rows[k, 1]))
        near = {tuple(x): m for x, m in zip(cpu.near_rows.tolist(), cpu.near_margin, strict=True)}
        near.update({tuple(x): m for x, m in zip(cpu.rows.tolist(), cpu.margin, strict=True)})
        assert near[row] < 1e-6  # on the threshold, drawn or not
        counters, gpu = gpu_frame(r, cam, tau)
        compare(counters, gpu, cpu)
        checked += 1
    assert checked >= 2


@pytest.mark.slow
@pytest.mark.parametrize("view", VIEWS)
def test_persistent_and_per_level_traversals_agree(built: Built, renderer_for,
                                                   view: str) -> None:
    persistent = renderer_for(persistent=True, sw_max_edge=12.0)
    levels = renderer_for(persistent=False, sw_max_edge=12.0)
    cam = cameras(built)[view]
    for tau in (0.7, 3.0):
        c1, v1 = gpu_frame(persistent, cam, tau)
        c2, v2 = gpu_frame(levels, cam, tau)
        np.testing.assert_array_equal(v1["sw"], v2["sw"])
        np.testing.assert_array_equal(v1["hw"], v2["hw"])
        assert c1 == c2
        if view == "nothing":
            assert c1["instances_visible"] == 0 and c1["nodes_visited"] == 0
            assert len(v1["sw"]) + len(v1["hw"]) == 0
        else:
            assert len(v1["sw"]) + len(v1["hw"]) > 0


@pytest.mark.slow
def test_cut_of_an_instance_in_view_covers_its_surface_once(built: Built, renderer_for) -> None:
    r = renderer_for(persistent=True, sw_max_edge=32.0)
    dag = built.dags[ROCK]
    world = INSTANCES[COVER_INSTANCE][1].astype(np.float64)
    s = r.scene.assets[ROCK].nodes["sphere"][0].astype(np.float64)
    centre = (world @ np.append(s[:3], 1.0))[:3]
    radius = s[3] * np.linalg.norm(world[:3, :3], axis=0).max()
    inv = np.linalg.inv(world)
    sizes = []
    for k, (dist, tau) in enumerate([(2.1, 0.08), (3.0, 0.5), (5.0, 0.3), (8.0, 1.5)]):
        direction = np.array([np.sin(k), 0.4, np.cos(k)])
        eye = centre + radius * dist * direction / np.linalg.norm(direction)
        cam = Camera(eye=eye, target=centre, fov_y=60.0, near=0.01)
        # the instance's root sphere is entirely inside the frustum
        planes = frame_view(cam, W, H, tau=tau, sw_max_edge=32.0).planes
        assert (planes[:, :3] @ centre + planes[:, 3] > radius).all()
        r.render(cam, tau=tau)
        vis = r.read_visible()
        rows = np.concatenate([vis["sw"], vis["hw"]])
        rows = rows[rows[:, 0] == COVER_INSTANCE]
        drawn = np.sort(cluster_records(r.scene, rows[:, 1])["cluster"].astype(np.int64))
        eye_obj = (inv @ np.append(np.asarray(eye, np.float32), 1.0))[:3]
        scale = float(np.float32(cam.lod_scale(H)))
        want = select_cut(dag, tau, eye_obj, scale)
        # rounding: only clusters whose own or parent error projects within SLACK of tau may
        # differ (the object-space camera and the GPU's world-space float32 both round), and
        # few such decisions (values) may flip
        flipped = set()
        for c in np.setxor1d(drawn, want):
            own = projected_error(dag.cluster_self_sphere[[c]], dag.cluster_self_error[[c]],
                                  eye_obj, scale=scale)[0]
            g = dag.cluster_group[c]
            par = projected_error(dag.group_sphere[[g]], dag.group_error[[g]], eye_obj,
                                  scale=scale)[0]
            near = own if abs(own / tau - 1) < abs(par / tau - 1) else par
            assert abs(near / tau - 1) < SLACK, (
                f"cluster {c}: drawn {c in drawn}, select_cut {c in want}, own {own}, parent "
                f"{par}, tau {tau}")
            flipped.add(near)
        assert len(flipped) <= MAX_FLIPS
        assert len(np.unique(drawn)) == len(drawn)
        check_cut(dag, drawn)  # exactly once: no hole, no overlap, no crack
        sizes.append(len(drawn))
    assert len(set(sizes)) > 1  # the views choose different cuts


@pytest.mark.parametrize("persistent", [True, False])
def test_queue_overflow_is_flagged_and_the_frame_finishes(built: Built, renderer_for,
                                                          persistent: bool) -> None:
    r = renderer_for(persistent=persistent, sw_max_edge=32.0, queue_capacity=16)
    cam = cameras(built)["overview"]
    out: dict = {}

    def frame() -> None:
        out["stats"] = r.render(cam, tau=0.5).stats
        out["vis"] = r.read_visible()

    t = threading.Thread(target=frame, daemon=True)
    t.start()
    t.join(timeout=30.0)
    assert not t.is_alive(), "the frame did not finish with a full queue"
    stats = out["stats"]
    assert stats.overflow & 1
    # what was drawn is part of what a large enough queue draws
    cpu = cull(r.scene, cam, W, H, tau=0.5, sw_max_edge=32.0)
    got = as_set(np.concatenate([out["vis"]["sw"], out["vis"]["hw"]]))
    assert got <= as_set(cpu.rows) | as_set(cpu.near_rows)
    assert len(got) < len(cpu.rows)


def sphere_field(path: str, options: RenderOptions, side: int = 181
                 ) -> tuple[Renderer, Camera]:
    """side x side unit spheres 3 apart (32,761 by default) on the grid from (0, 0, 0) to
    (3 (side - 1), 0, -3 (side - 1)), seen from above at a slant."""
    r = Renderer(96, 96, options=options)
    half = 1.5 * (side - 1)
    r.add_grid(r.load(path), side * side, spacing=3.0, origin=(half, 0.0, -half))
    cam = Camera(eye=(1.5 * side, 2.0 * side, 1.0 * side), target=(1.5 * side, 0, -1.5 * side),
                 fov_y=60.0, near=0.01)
    return r, cam


@pytest.mark.slow
def test_a_traversal_cut_short_is_flagged(sphere_tess, gpu) -> None:
    """One persistent workgroup (64 lanes) for the 32,761 spheres: on a CPU adapter, lavapipe's
    65,535 loop iterations an invocation end its lanes' loops long before the work is done (it
    visited about 182,000 of 574,444 nodes and tested no cluster), which the frame must say:
    `FrameStats.overflow`'s INCOMPLETE bit (work left outstanding, or a loop of the culling
    shader stopped short of its condition), and `tessera render` writes no image. On a GPU the
    frame is whole: no bit, and the same nodes as the per-level traversal."""
    from renderer.results import INCOMPLETE

    base = dict(timestamps=False, occlusion=False, tau=0.01)
    r, cam = sphere_field(sphere_tess, RenderOptions(persistent=True, persistent_workgroups=1,
                                                     **base))
    stats = r.render(cam).stats
    if r.ctx.adapter_type == "CPU":
        assert stats.overflow & INCOMPLETE, stats
    else:
        whole, _ = sphere_field(sphere_tess, RenderOptions(persistent=False, **base))
        assert stats.overflow == 0
        assert stats.counters == whole.render(cam).stats.counters


@pytest.mark.slow
def test_a_big_level_is_spread_so_that_no_lane_is_cut_short(sphere_tess, gpu) -> None:
    """lavapipe ends every loop of a shader invocation, silently, once its loops made 65,535
    iterations in all; a node item costs up to a few thousand (its groups' parts visited inline).
    32,761 spheres traversed per level with one workgroup a level (`level_workgroups`=1, 64
    lanes) must select what 16 workgroups a level select: before the dispatch of each level was
    sized by the level (prepare.wgsl's `cs_level_begin`, at most LEVEL_ITEMS items a lane), it
    visited 49% of the nodes and drew 41% of the clusters, and said nothing; a loop cut short
    now also sets `FrameStats.overflow`'s INCOMPLETE bit (gpu_frame asserts none). (Not the
    persistent traversal as the reference: on lavapipe its lanes' polling counts against the
    same budget, and on a loaded machine it lost a part's clusters now and then.)"""
    frames = []
    for workgroups in (16, 1):
        r, cam = sphere_field(sphere_tess, RenderOptions(
            timestamps=False, occlusion=False, tau=0.01, persistent=False,
            level_workgroups=workgroups))
        frames.append(gpu_frame(r, cam, 0.01))
    (c1, v1), (c2, v2) = frames
    assert c1["nodes_visited"] > 400_000  # big levels (the bug lost half of them)
    assert c1 == c2
    np.testing.assert_array_equal(v1["sw"], v2["sw"])
    np.testing.assert_array_equal(v1["hw"], v2["hw"])
