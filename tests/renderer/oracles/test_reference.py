"""The reference renderer against analytic and CPU ray-cast answers (real WGSL, any adapter)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from assets.shapes import geodesic_sphere
from renderer.camera import Camera
from renderer.oracles.reference import ReferenceRenderer

pytestmark = pytest.mark.gpu

W, H = 161, 121  # odd, so the centre pixel's centre lies on the optical axis
NEAR = 0.1
IDENTITY = np.eye(4, dtype=np.float32)


@pytest.fixture(scope="module")
def renderer(gpu) -> ReferenceRenderer:
    return ReferenceRenderer(gpu, W, H)


@pytest.fixture(scope="module")
def sphere4():
    return geodesic_sphere(4)  # 320 triangles: coarse, so the silhouette ring is visible


@pytest.fixture(scope="module")
def sphere8():
    return geodesic_sphere(8)  # 1,280 triangles


def translate(x: float, y: float = 0.0, z: float = 0.0) -> np.ndarray:
    m = np.eye(4, dtype=np.float32)
    m[:3, 3] = (x, y, z)
    return m


def on_axis_camera(distance: float = 3.0) -> Camera:
    return Camera(eye=np.array([0.0, 0.0, distance]), target=np.zeros(3), fov_y=60.0, near=NEAR)


def min_face_distance(positions: np.ndarray, triangles: np.ndarray) -> float:
    """Smallest distance from the origin to a face plane: the tessellated sphere (star-shaped
    about the origin, vertices on the unit sphere) contains the ball of this radius and lies
    inside the unit ball; 1 minus it is the largest chord sagitta."""
    v = positions.astype(np.float64)[triangles]
    n = np.cross(v[:, 1] - v[:, 0], v[:, 2] - v[:, 0])
    n /= np.linalg.norm(n, axis=1, keepdims=True)
    d = np.einsum("ij,ij->i", n, v[:, 0])
    assert (d > 0).all()  # every face looks away from the centre
    return float(d.min())


def pixel_ray(view_proj: np.ndarray, eye: np.ndarray, px: float, py: float):
    """World-space ray from the eye through the centre of pixel (px, py), row 0 at the top."""
    ndc = np.array([(px + 0.5) / W * 2 - 1, 1 - (py + 0.5) / H * 2, 1.0, 1.0])  # on near plane
    p = np.linalg.inv(view_proj.astype(np.float64)) @ ndc
    d = p[:3] / p[3] - eye
    return np.asarray(eye, np.float64), d / np.linalg.norm(d)


def ray_cast(origin, direction, positions, triangles):
    """Nearest hit of a ray with all triangles (Moller-Trumbore, both sides, float64).
    Returns (triangle, t, margin) with margin the smallest barycentric coordinate at the hit,
    or (-1, inf, 0) on a miss."""
    v = positions.astype(np.float64)[triangles]
    e1, e2 = v[:, 1] - v[:, 0], v[:, 2] - v[:, 0]
    p = np.cross(direction, e2)
    det = np.einsum("ij,ij->i", e1, p)
    ok = np.abs(det) > 1e-12
    inv = np.where(ok, 1.0 / np.where(ok, det, 1.0), 0.0)
    s = origin - v[:, 0]
    u = np.einsum("ij,ij->i", s, p) * inv
    q = np.cross(s, e1)
    w = (q @ direction) * inv
    t = np.einsum("ij,ij->i", e2, q) * inv
    margin = np.minimum(np.minimum(u, w), 1 - u - w)
    hit = ok & (margin >= 0) & (t > 0)
    if not hit.any():
        return -1, math.inf, 0.0
    t = np.where(hit, t, np.inf)
    k = int(np.argmin(t))
    return k, float(t[k]), float(margin[k])


def test_sphere_coverage_matches_the_analytic_disc(renderer, sphere4):
    cam = on_axis_camera(3.0)
    mid = renderer.add_mesh_from(sphere4)
    out = renderer.render(cam.view_proj(W, H), [(mid, IDENTITY)])
    assert out["depth"].shape == (H, W) and out["depth"].dtype == np.float32
    assert out["triangle"].dtype == np.int32 and out["instance"].dtype == np.int32
    covered = out["depth"] > 0
    assert ((out["triangle"] >= 0) == covered).all() and ((out["instance"] == 0) == covered).all()
    assert (out["instance"][~covered] == -1).all()

    # The true unit sphere at distance 3 projects to a disc of angular radius asin(1/3). Every
    # tessellated point lies between radius r_in (the nearest face plane) and 1 from the centre,
    # so the rasterized silhouette lies between the discs of asin(r_in/3) and asin(1/3). The
    # sampling is exact (a pixel is covered iff its centre is), so pixels are checked against
    # these two radii with only a float-rounding margin; between them is the one- or
    # two-pixel ring where the chord sagitta (1 - r_in) shrinks the polyhedron's silhouette.
    f_px = (H / 2) / math.tan(math.radians(cam.fov_y) / 2)
    r_in = min_face_distance(sphere4.positions, sphere4.position_triangles)
    disc_out = f_px * math.tan(math.asin(1 / 3))
    disc_in = f_px * math.tan(math.asin(r_in / 3))
    assert 0 < disc_out - disc_in < 1.0  # the ring is thin, but is there
    ys, xs = np.mgrid[0:H, 0:W]
    radius = np.hypot(xs + 0.5 - W / 2, ys + 0.5 - H / 2)
    eps = 0.01  # pixels
    assert covered[radius < disc_in - eps].all()
    assert not covered[radius > disc_out + eps].any()
    ring = (radius >= disc_in - eps) & (radius <= disc_out + eps)
    assert ring.sum() < 2 * math.pi * disc_out * 1.5  # a ring about a pixel wide
    assert abs(covered.sum() - math.pi * disc_out**2) < 2 * math.pi * disc_out


def test_depth_at_the_centre(renderer, sphere4):
    cam = on_axis_camera(3.0)
    mid = renderer.add_mesh_from(sphere4)
    vp = cam.view_proj(W, H)
    depth = renderer.render(vp, [(mid, IDENTITY)])["depth"][H // 2, W // 2]
    # NDC depth is near / distance. The true sphere's nearest point is at distance 3 - 1 = 2;
    # the tessellated surface on the axis is at radius r_in..1, so its distance lies in
    # [2, 3 - r_in]: the depth is near / 2 less at most a sagitta's worth (~0.5% here).
    r_in = min_face_distance(sphere4.positions, sphere4.position_triangles)
    assert NEAR / (3 - r_in) * (1 - 1e-6) <= depth <= NEAR / 2 * (1 + 1e-6)
    assert depth == pytest.approx(NEAR / 2, rel=0.01)
    # Exactly: the CPU ray hit along the axis (float32 depth, float32 transforms).
    origin, direction = pixel_ray(vp, cam.eye, W // 2, H // 2)
    _, t, _ = ray_cast(origin, direction, sphere4.positions, sphere4.position_triangles)
    assert depth == pytest.approx(NEAR / t, rel=1e-5)


def test_triangle_ids_match_cpu_ray_casts(renderer, sphere8):
    cam = Camera.framing(np.zeros(3), 1.0, fill=0.8)
    mid = renderer.add_mesh_from(sphere8)
    vp = cam.view_proj(W, H)
    out = renderer.render(vp, [(mid, IDENTITY)])
    forward = (cam.target - cam.eye) / np.linalg.norm(cam.target - cam.eye)
    tris = sphere8.position_triangles
    checked = 0
    pixels = [(W // 2, H // 2)] + [(x, y) for x in range(8, W, 12) for y in range(6, H, 12)]
    for px, py in pixels:
        origin, direction = pixel_ray(vp, cam.eye, px, py)
        k, t, margin = ray_cast(origin, direction, sphere8.positions, tris)
        if k < 0:
            # a clear miss stays empty (skip rays grazing the silhouette)
            _, _, m2 = ray_cast(origin, direction, sphere8.positions * 1.01, tris)
            if m2 <= 0:
                assert out["triangle"][py, px] == -1, (px, py)
            continue
        if margin < 1e-3 and (px, py) != (W // 2, H // 2):
            continue  # too close to an edge for the two rasterizers to agree exactly
        assert out["triangle"][py, px] == k, (px, py)
        assert out["instance"][py, px] == 0
        want = cam.near / (t * float(direction @ forward))
        # hardware rasterizers snap vertices to a sub-pixel grid (Vulkan's subPixelPrecisionBits:
        # 8 on NVIDIA and lavapipe) and interpolate depth from the snapped vertices, so depth may
        # move by its change over 1/256 px each way: bounded here by the change the ray cast
        # sees over 1/128 px in x and in y, plus float32 rounding (an H100 was 1.2e-4 relative
        # off at one pixel where the slope is steep)
        slope = 0.0
        for ox, oy in ((1 / 128, 0.0), (0.0, 1 / 128)):
            o2, d2 = pixel_ray(vp, cam.eye, px + ox, py + oy)
            k2, t2, _ = ray_cast(o2, d2, sphere8.positions, tris)
            if k2 == k:
                slope += abs(cam.near / (t2 * float(d2 @ forward)) - want)
        assert abs(float(out["depth"][py, px]) - want) <= slope + 1e-5 * want
        checked += 1
    assert checked > 30


def test_two_instances_side_by_side(renderer, sphere4):
    mid = renderer.add_mesh_from(sphere4)
    cam = on_axis_camera(6.0)
    vp = cam.view_proj(W, H)
    out = renderer.render(vp, [(mid, translate(-1.5)), (mid, translate(1.5))])
    inst = out["instance"]
    cols = np.broadcast_to(np.arange(W), (H, W))
    left, right = inst == 0, inst == 1
    assert left.sum() > 100 and right.sum() > 100
    assert (cols[left] < W // 2).all() and (cols[right] > W // 2).all()
    assert abs(int(left.sum()) - int(right.sum())) <= 0.02 * left.sum()  # mirror images
    assert ((inst >= 0) == (out["depth"] > 0)).all()
    assert ((inst >= 0) == (out["triangle"] >= 0)).all()

    # One in front of the other: the nearer one wins whatever the draw order.
    near, far = translate(0, 0, 1), translate(0, 0, 0)
    c = (H // 2, W // 2)
    assert renderer.render(vp, [(mid, far), (mid, near)])["instance"][c] == 1
    assert renderer.render(vp, [(mid, near), (mid, far)])["instance"][c] == 0
    assert renderer.render(vp, [(mid, near)])["depth"][c] == pytest.approx(
        NEAR / 4, rel=0.01)


def test_backface_culling(renderer, sphere4):
    mid = renderer.add_mesh_from(sphere4)
    vp = on_axis_camera(3.0).view_proj(W, H)
    # A closed sphere seen from outside: the back faces are always behind a front face.
    on = renderer.render(vp, [(mid, IDENTITY)], cull_backfaces=True)
    off = renderer.render(vp, [(mid, IDENTITY)], cull_backfaces=False)
    for name in ("depth", "triangle", "instance"):
        np.testing.assert_array_equal(on[name], off[name], err_msg=name)

    # A single triangle facing the camera (counter-clockwise on screen) and the same reversed.
    pts = np.array([[-1, -1, 0], [1, -1, 0], [0, 1, 0]], np.float32)
    ccw = renderer.add_mesh(pts, np.array([[0, 1, 2]]), label="ccw")
    cw = renderer.add_mesh(pts, np.array([[0, 2, 1]]), label="cw")
    drawn = renderer.render(vp, [(ccw, IDENTITY)])["depth"] > 0
    assert drawn.sum() > 100
    np.testing.assert_array_equal(renderer.render(vp, [(ccw, IDENTITY)], cull_backfaces=False)
                                  ["depth"] > 0, drawn)
    assert (renderer.render(vp, [(cw, IDENTITY)])["instance"] == -1).all()
    np.testing.assert_array_equal(renderer.render(vp, [(cw, IDENTITY)], cull_backfaces=False)
                                  ["depth"] > 0, drawn)

    # The inside of an open hemisphere, from its centre: all back faces.
    tris = sphere4.position_triangles
    back = tris[(sphere4.positions[tris][:, :, 2] < 0).all(axis=1)]
    hemi = renderer.add_mesh(sphere4.positions, back, label="hemisphere")
    inside = Camera(eye=np.zeros(3), target=np.array([0.0, 0.0, -1.0]), near=NEAR).view_proj(W, H)
    assert (renderer.render(inside, [(hemi, IDENTITY)])["depth"] == 0).all()
    seen = renderer.render(inside, [(hemi, IDENTITY)], cull_backfaces=False)
    assert (seen["triangle"][H // 2 - 20:H // 2 + 20, W // 2 - 20:W // 2 + 20] >= 0).all()
    r_in = min_face_distance(sphere4.positions, back)
    assert NEAR * (1 - 1e-6) <= seen["depth"][H // 2, W // 2] <= NEAR / r_in * (1 + 1e-6)


def test_chunked_index_bindings_draw_the_same(renderer, sphere8):
    ctx = renderer.ctx
    chunked = ReferenceRenderer(ctx, W, H)
    chunked.max_index_binding_bytes = 1000  # ~80 triangles a binding instead of millions
    mid = chunked.add_mesh_from(sphere8)
    assert len(chunked._meshes[mid].chunks) > 10
    whole = renderer.add_mesh_from(sphere8)
    vp = Camera.framing(np.zeros(3), 1.0).view_proj(W, H)
    a = chunked.render(vp, [(mid, IDENTITY), (mid, translate(0.8, 0.3, -1))])
    b = renderer.render(vp, [(whole, IDENTITY), (whole, translate(0.8, 0.3, -1))])
    assert (a["instance"] == 1).any() and (a["triangle"] > 1000).any()
    for name in ("depth", "triangle", "instance"):
        np.testing.assert_array_equal(a[name], b[name], err_msg=name)


def test_render_timed_and_errors(renderer, sphere4):
    mid = renderer.add_mesh_from(sphere4)
    vp = on_axis_camera(3.0).view_proj(W, H)
    instances = [(mid, translate(x, y)) for x in (-1, 1) for y in (-1, 1)]
    seconds = renderer.render_timed(vp, instances, repeats=3)
    assert isinstance(seconds, float) and seconds > 0
    # An empty frame clears everything.
    empty = renderer.render(vp, [])
    assert (empty["depth"] == 0).all() and (empty["triangle"] == -1).all()
    with pytest.raises(ValueError, match="names mesh"):
        renderer.render(vp, [(10_000, IDENTITY)])
    with pytest.raises(ValueError, match="indices span"):
        renderer.add_mesh(sphere4.positions, np.array([[0, 1, 10**6]]))
    with pytest.raises(ValueError, match="positions must be"):
        renderer.add_mesh(np.zeros((4, 2), np.float32), np.array([[0, 1, 2]]))
