"""LOD errors measured against the original surface (tight and honest), and prefiltered normals
at coarse levels (`preprocess.measure.original_distance`, `preprocess.simplify.collapse`
normal accumulation, `preprocess.verify.error_tightness`)."""

from __future__ import annotations


import numpy as np
import pytest

from preprocess.config import BuildConfig
from preprocess.dag import build_dag
from preprocess.load import mesh_from_arrays
from preprocess.cut import level_cut
from preprocess.grid import max_distance_to_mesh
from preprocess.verify import check_honest_error, error_tightness


def bumpy_sphere(n: int = 40, amplitude: float = 0.02, seed: int = 4):
    """A unit geodesic sphere with high-frequency radial noise: its vertex normals scatter around
    the radial direction, which a filtered (far) view of it shows."""
    from assets.shapes import geodesic_sphere_arrays

    p, f = geodesic_sphere_arrays(n)
    rng = np.random.default_rng(seed)
    p = p.astype(np.float64) * (1.0 + amplitude * rng.standard_normal(len(p)))[:, None]
    return mesh_from_arrays(p.astype(np.float32), f, crease_angle=180, name="bumpy")


def blob(n: int = 40):
    """A unit sphere deformed by a few smooth waves: curved everywhere, no noise, so that the
    distance from the simplified surface to the original and back agree."""
    from assets.shapes import geodesic_sphere_arrays

    p, f = geodesic_sphere_arrays(n)
    p = p.astype(np.float64)
    r = 1.0 + 0.15 * np.sin(3 * p[:, 0]) * np.cos(2 * p[:, 1]) + 0.1 * np.sin(4 * p[:, 2])
    return mesh_from_arrays((p * r[:, None]).astype(np.float32), f, crease_angle=180,
                            name="blob")


@pytest.fixture(scope="module")
def bumpy_dag():
    return build_dag(bumpy_sphere())


@pytest.mark.slow
def test_errors_are_honest_and_tight() -> None:
    """Per level, the largest stored geometric error against the largest distance found by 1024
    random samples per cluster (plus its vertices, then a dense grid on the triangles of each
    cluster's farthest samples) on the whole original mesh, on a smooth surface: never below it
    (honest, also checked point by point), and at most the issue's 1.3x at every level where no
    surface vanished (the builder keeps 1.15x its own samples' maximum as the margin for peaks
    between them; with 1.1x, dense checks found points up to 1.04x the stored error on igea and
    ogre); the same against the distance both ways at every level.
    Summed errors (before issue 15) stored 2-5x on such meshes. The geometric error does not
    depend on the shading term, which the LOD error adds on top of it."""
    dag = build_dag(blob(), BuildConfig())
    rows = error_tightness(dag, samples_per_cluster=1024, rng_seed=1)
    assert len(rows) >= 6
    for r in rows:
        assert r["measured_two_sided"] >= r["measured"]
        # honest one way (the level's surface to the original) and both ways (the original's
        # vertices to the surface drawn at that level too: a coarse closed mesh loses its tips,
        # which the error holds; 1.12-1.15 measured, 0.85 before the builder measured the
        # removed tips again at every level above), and tight against the distance both ways
        assert r["ratio"] >= 1.0 and 1.0 <= r["ratio_two_sided"] <= 1.3, rows
        # where no surface vanished (the distance both ways is the one-way distance), tight one
        # way too: the 1.3x (1.15-1.16 measured; the coarsest levels of this blob hold
        # tips 6-21% farther than the one-way distance, and read 1.18 and 1.38 one way)
        if r["measured_two_sided"] <= 1.05 * r["measured"]:
            assert r["ratio"] <= 1.3, rows
    check_honest_error(dag, np.flatnonzero(np.asarray(dag.cluster_level) > 0),
                       samples_per_cluster=256, rng_seed=2, refine=4)
    geometric = build_dag(blob(), BuildConfig(shading_weight=0.0))
    assert np.array_equal(geometric.cluster_geometric_error, dag.cluster_geometric_error)


def test_the_geometric_error_is_kept_apart_from_the_shading_term() -> None:
    """The LOD error is the larger of the geometric error and the shading term; the geometric
    one (what the next level's measurement leans on, and what verify holds to the distance)
    never decreases from child to parent either."""
    dag = build_dag(blob(20), BuildConfig(shading_weight=4.0))
    geo = np.asarray(dag.cluster_geometric_error)
    own = np.asarray(dag.cluster_self_error)
    assert (geo <= own).all() and (own > geo).any()
    level = np.asarray(dag.cluster_level)
    for c in np.flatnonzero(level > 0):
        g = int(dag.cluster_source_group[c])
        members = dag.group_clusters[dag.group_cluster_offset[g]:dag.group_cluster_offset[g + 1]]
        assert geo[c] >= geo[members].max()


def test_the_shading_weight_is_chosen_by_the_surface(tmp_path) -> None:
    """Automatic weight: 0.4 for a plain mesh (the `make demo` budget), 0.7 where a texture or
    vertex colours would lose what the error does not measure; an explicit weight wins; the
    file records the weight it was built with."""
    from preprocess.build import build_file
    from preprocess.config import SHADING_WEIGHT, TEXTURED_SHADING_WEIGHT

    plain = blob(8)
    coloured = mesh_from_arrays(plain.positions, plain.position_triangles,
                                colors=np.full((plain.vertex_count, 4), 0.5, np.float32),
                                crease_angle=180, name="coloured")
    cfg = BuildConfig()
    assert cfg.shading_weight_for(plain) == SHADING_WEIGHT == 0.4
    assert cfg.shading_weight_for(coloured) == TEXTURED_SHADING_WEIGHT == 0.7
    assert BuildConfig(shading_weight=0.2).shading_weight_for(coloured) == 0.2
    res = build_file(plain, tmp_path / "p.tess")
    assert res.packed.meta["shading_weight"] == 0.4
    assert "shading weight 0.4" in res.summary()
    with pytest.raises(ValueError, match="shading weight"):
        BuildConfig(shading_weight=float("nan"))


def flat_grid(n: int = 64) -> tuple[np.ndarray, np.ndarray]:
    """(positions, faces) of an n x n grid of squares, two triangles each, on [0, 1]^2 at z = 0:
    every collapse costs nothing geometrically."""
    x, y = np.meshgrid(np.linspace(0, 1, n + 1), np.linspace(0, 1, n + 1))
    pos = np.stack([x.ravel(), y.ravel(), np.zeros(x.size)], 1).astype(np.float32)
    i = np.arange(n)[:, None] * (n + 1) + np.arange(n)[None, :]
    faces = np.concatenate([np.stack([i, i + 1, i + n + 2], -1).reshape(-1, 3),
                            np.stack([i, i + n + 2, i + n + 1], -1).reshape(-1, 3)])
    return pos, faces


def flat_with_bumped_normals(n: int = 64):
    """A flat grid whose normals alone tilt (up to ~35 degrees) in a ring: only the normals tell
    where a collapse changes the shading."""
    pos, faces = flat_grid(n)
    r = np.hypot(pos[:, 0] - 0.5, pos[:, 1] - 0.5)
    tilt = 0.7 * np.sin(np.clip(r / 0.3, 0, 1) * np.pi) ** 2
    away = np.stack([pos[:, 0] - 0.5, pos[:, 1] - 0.5], 1) / np.maximum(r, 1e-9)[:, None]
    nrm = np.concatenate([away * tilt[:, None], np.ones((len(pos), 1))], 1)
    return mesh_from_arrays(pos, faces, normals=nrm / np.linalg.norm(nrm, axis=1)[:, None],
                            name="bumped-normals")


def test_normals_in_the_collapse_cost_keep_the_shading(tmp_path) -> None:
    """With `normal_cost`, collapses that bend the shading wait for those that do not: on a flat
    grid whose normals alone vary, the first levels simplify where the normals are uniform
    (level 1's errors are 0; 0.0011 mean without) and the shading error of levels 2 and 3 is
    about a tenth (0.00033 and 0.00065 against 0.0027 and 0.0064), with as many triangles.
    The file records the weight; nan is refused."""
    from preprocess.build import build_file

    mesh = flat_with_bumped_normals()
    plain = build_dag(mesh, BuildConfig(shading_weight=0.4))
    aware = build_dag(mesh, BuildConfig(shading_weight=0.4, normal_cost=0.5))
    for dag in (plain, aware):
        assert (np.asarray(dag.cluster_geometric_error) < 1e-5).all()  # flat: the slack only
    for level in (1, 2, 3):
        errors = []
        for dag in (plain, aware):
            lv = np.asarray(dag.cluster_level)
            sizes = np.diff(np.asarray(dag.cluster_tri_offset))[lv == level]
            errors.append((float(np.asarray(dag.cluster_self_error)[lv == level].mean()),
                           int(sizes.sum())))
        (e0, t0), (e1, t1) = errors
        assert e1 <= 0.3 * e0 and abs(t1 - t0) <= 0.05 * t0, (level, errors)
    res = build_file(mesh, tmp_path / "n.tess", BuildConfig(normal_cost=0.5))
    assert res.packed.meta["normal_cost"] == 0.5 and "normal cost 0.5" in res.summary()
    assert "normal_cost" not in build_file(mesh, tmp_path / "p.tess").packed.meta
    with pytest.raises(ValueError, match="normal cost"):
        BuildConfig(normal_cost=float("nan"))


def test_uvs_in_the_collapse_cost_keep_the_texture_in_place() -> None:
    """With `normal_cost`, uvs take part in the collapse cost too (in world units: a texture slid
    by d looks like an edge moved by d): on a flat grid with constant normals whose uvs are
    twisted inside a disc, the first two levels keep their triangles there (1,608 and 1,563 of
    the disc's triangles against 804 and 438 without), with as many triangles overall."""
    pos, faces = flat_grid()
    r = np.hypot(pos[:, 0] - 0.5, pos[:, 1] - 0.5)
    twist = 1.5 * np.clip(1 - r / 0.3, 0, 1) ** 2
    c, s = np.cos(twist), np.sin(twist)
    du, dv = pos[:, 0] - 0.5, pos[:, 1] - 0.5
    uv = np.stack([0.5 + c * du - s * dv, 0.5 + s * du + c * dv], 1).astype(np.float32)
    mesh = mesh_from_arrays(pos, faces, normals=np.tile([0, 0, 1.0], (len(pos), 1)), uvs=uv,
                            name="twisted-uvs")
    counts = []
    for cost in (0.0, 0.5):
        dag = build_dag(mesh, BuildConfig(shading_weight=0.4, normal_cost=cost))
        lv, off = np.asarray(dag.cluster_level), np.asarray(dag.cluster_tri_offset)
        p = np.asarray(dag.mesh.positions)[np.asarray(dag.mesh.wedge_position)]
        row = []
        for level in (1, 2):
            rows = np.concatenate([np.arange(off[k], off[k + 1])
                                   for k in np.flatnonzero(lv == level)])
            centre = p[np.asarray(dag.triangles)[rows]].mean(1)
            inside = int((np.hypot(centre[:, 0] - 0.5, centre[:, 1] - 0.5) < 0.25).sum())
            row.append((len(rows), inside))
        counts.append(row)
    for (total0, inside0), (total1, inside1) in zip(*counts, strict=True):
        assert abs(total1 - total0) <= 0.05 * total0 and inside1 >= 1.5 * inside0, counts


@pytest.mark.slow
def test_errors_with_shading_are_honest_and_never_decrease(bumpy_dag) -> None:
    """The shading term adds to the distance: errors stay above the measured distance, and
    grow along every child -> parent edge."""
    dag = bumpy_dag
    check_honest_error(dag, np.flatnonzero(np.asarray(dag.cluster_level) > 0),
                       samples_per_cluster=128, rng_seed=3)
    own = np.asarray(dag.cluster_self_error)
    parent = np.asarray(dag.group_error)[np.asarray(dag.cluster_group)]
    assert (parent >= own).all()


def test_coarse_normals_are_prefiltered(bumpy_dag) -> None:
    """A coarse vertex carries the area-weighted normal of the surface it stands for: on the
    bumpy sphere, coarse wedge normals lie much closer to the radial direction (the filtered
    surface's normal) than the original vertices' normals, which they would copy without
    prefiltering."""
    dag = bumpy_dag
    mesh = dag.mesh
    level = np.asarray(dag.cluster_level)
    off = np.asarray(dag.cluster_tri_offset)

    def spread(lv: int) -> float:
        ids = np.flatnonzero(level == lv)
        w = np.unique(np.concatenate([np.asarray(dag.triangles)[off[i] : off[i + 1]].ravel()
                                      for i in ids]))
        radial = mesh.positions[mesh.wedge_position[w]].astype(np.float64)
        radial /= np.linalg.norm(radial, axis=1, keepdims=True)
        cos = np.einsum("ij,ij->i", radial, mesh.wedge_normal[w])
        return float(np.degrees(np.arccos(np.clip(cos, -1, 1))).mean())

    fine = spread(0)
    coarse = spread(4)
    assert fine > 10.0  # the noise tilts the original normals
    assert coarse < 0.6 * fine, (fine, coarse)
    assert len(mesh.wedge_position) > dag.mesh.vertex_count  # fresh wedges were added


def test_the_pages_hold_the_prefiltered_normals(tmp_path) -> None:
    """The fresh wedges travel into the pages: every cluster's decoded normals are its wedges'."""
    from preprocess.build import build_file
    from preprocess.tess.pages import decode_cluster, page_clusters

    res = build_file(bumpy_sphere(16), tmp_path / "b.tess")
    meta = res.packed.meta
    mesh = res.dag.mesh
    checked = 0
    for page in res.packed.pages:
        for rec in page_clusters(page):
            tris = res.dag.cluster_triangles(int(rec["cluster"]))
            d = decode_cluster(page, rec, meta["step"], (meta["uv_min"], meta["uv_max"]))
            wedges = tris.ravel()[np.sort(np.unique(tris.ravel(), return_index=True)[1])]
            assert np.abs(d["normals"] - mesh.wedge_normal[wedges]).max() < 2e-4
            checked += 1
    assert checked == res.dag.cluster_count


@pytest.mark.slow
def test_verify_reports_the_tightness_per_level(tmp_path) -> None:
    """`preprocess --verify` prints, per level, the stored error over the measured distance:
    never below 1 (honest), and near it when the shading term is off."""
    from preprocess.build import build_file

    res = build_file(blob(24), tmp_path / "b.tess", BuildConfig(shading_weight=0.0), verify=True)
    ratios = res.verified["honest"]["level_ratios"]
    assert len(ratios) >= 4 and min(ratios) >= 1.0 and np.median(ratios) < 1.6, ratios
    line = [x for x in res.summary().splitlines() if x.strip().startswith("errors")]
    assert len(line) == 1 and f"{ratios[0]:.2f}" in line[0]


@pytest.mark.slow
def test_small_pieces_vanish_so_the_coarsest_level_is_small() -> None:
    """A sphere with 300 small separate shells around it (open quads of two triangles, as game
    assets have them: each is at its own minimum already): the coarsest level still gets to at
    most max(128, 1%) triangles, the pieces vanishing at an honest error, with every cut
    crack-free (check_all)."""
    from assets.shapes import geodesic_sphere_arrays
    from preprocess.bvh import build_bvh
    from preprocess.dag import coarsest_target
    from preprocess.verify import check_all

    p, f = geodesic_sphere_arrays(20)
    pos, faces = [p.astype(np.float64)], [f]
    rng = np.random.default_rng(7)
    base = len(p)
    for _ in range(300):
        c = rng.normal(size=3)
        c *= 1.3 / np.linalg.norm(c)
        u = np.cross(c, [0.3, 0.5, 0.8])
        u *= 0.02 / np.linalg.norm(u)
        v = np.cross(c / np.linalg.norm(c), u)
        pos.append(np.array([c - u - v, c + u - v, c + u + v, c - u + v]))
        faces.append(np.array([[0, 1, 2], [0, 2, 3]]) + base)
        base += 4
    mesh = mesh_from_arrays(np.concatenate(pos).astype(np.float32), np.concatenate(faces),
                            crease_angle=180, name="shells")
    dag = build_dag(mesh)
    off = np.asarray(dag.cluster_tri_offset)
    g = dag.root_group
    goff = np.asarray(dag.group_cluster_offset)
    root = np.asarray(dag.group_clusters)[goff[g] : goff[g + 1]]
    root_triangles = int((off[root + 1] - off[root]).sum())
    assert root_triangles <= coarsest_target(mesh.triangle_count), root_triangles
    check_all(dag, build_bvh(dag), thresholds=12)


@pytest.mark.slow
def test_coarse_levels_of_a_scan_hold_under_dense_checks(shared_assets) -> None:
    """Ogre's top levels (1,100-1,800 triangles standing for 124,000, some 90 of its edges long)
    against 1,024 random samples per cluster and a dense grid on the triangles of each cluster's
    4 farthest: no point farther than the stored error. With only a triangle's face and edge
    samples (and the refinement of those nearest the maximum distance to the group's input, which
    at coarse levels says little of the distance to the original) the coarsest level held 0.94x
    a point between them: a long triangle is also sampled on a grid whose points lie at most 8
    original edges apart (`preprocess.dag.SAMPLE_SPACING`)."""
    from preprocess.load import load_mesh

    path = shared_assets / "ogre.obj"
    assert path.exists(), f"{path} missing: CI runs with ../shared beside the checkout"
    dag = build_dag(load_mesh(path))
    level = np.asarray(dag.cluster_level)
    top = np.flatnonzero(level >= level.max() - 2)
    res = check_honest_error(dag, top, samples_per_cluster=1024, rng_seed=0, refine=4)
    assert res["max_ratio"] <= 1.0, res


@pytest.mark.slow
@pytest.mark.parametrize("name", ["cheburashka", "homer"])
def test_coarse_levels_keep_what_would_vanish(shared_assets, name) -> None:
    """Cheburashka's ears and homer's limbs: at the coarse levels (each one group, whole) the
    plain collapses let them vanish, and the stored error held the vanished surface (both ways)
    while the coarse surface itself lay 2x closer to the original (one way: cheburashka 2.14,
    homer 1.75). The builder simplifies such a group again holding the position nearest the
    farthest vanished one (`preprocess.dag.KEEP_RATIO`); measures a whole level's result against
    every original position, which needs a margin only for the surface between them
    (`DROPPED_FACTOR`, 1.05: 1.40 at both scans' worst level with the carried positions' 1.15);
    and once at the coarsest level's target, stops where a level would lose surface no hold kept
    (`LOSS_RATIO`: cheburashka went on to 50, 40 and 34 triangles at 2.06, 3.91 and 4.83, homer to
    88 at 4.06). The issue's target at every level: the stored error within 1.3x of the one-way
    distance (1.25 and 1.28 measured), at least the two-way one, and the coarsest level at most
    max(128, 1%) triangles."""
    from preprocess.dag import coarsest_target
    from preprocess.load import load_mesh

    path = shared_assets / f"{name}.obj"
    assert path.exists(), f"{path} missing: CI runs with ../shared beside the checkout"
    mesh = load_mesh(path)
    dag = build_dag(mesh)
    level = np.asarray(dag.cluster_level)
    off = np.asarray(dag.cluster_tri_offset)
    rows = error_tightness(dag, samples_per_cluster=1024, refine=4)
    for r in rows:
        assert 1.0 <= r["ratio"] <= 1.3, r
        assert r["ratio_two_sided"] >= 1.0, r
    coarsest = np.flatnonzero(level == level.max())
    assert int((off[coarsest + 1] - off[coarsest]).sum()) <= coarsest_target(mesh.triangle_count)
    # DROPPED_FACTOR's margin, for the original surface between its positions: 8 random points
    # on every original triangle lie within the stored error of the three coarsest levels' cuts
    # (1.05 and 1.03 measured at the worst of them)
    pos = np.asarray(mesh.positions, np.float64)
    ptri = np.asarray(mesh.position_triangles)
    rng = np.random.default_rng(5)
    t = np.repeat(np.arange(len(ptri)), 8)
    r1, r2 = np.sqrt(rng.random(len(t))), rng.random(len(t))
    w = np.stack([1 - r1, r1 * (1 - r2), r1 * r2], 1)
    points = np.einsum("pk,pkd->pd", w, pos[ptri[t]])
    tris = np.asarray(dag.triangles)
    wpos = np.asarray(dag.mesh.wedge_position)
    for lv in np.unique(level)[-3:]:
        cut = level_cut(dag, lv)
        rows = np.concatenate([np.arange(off[c], off[c + 1]) for c in cut])
        far = max_distance_to_mesh(points, mesh.positions, wpos[tris[rows]].astype(np.int32))
        stored = np.asarray(dag.cluster_geometric_error)[level == lv].max()
        assert far.max() <= stored, (lv, far.max() / stored)
