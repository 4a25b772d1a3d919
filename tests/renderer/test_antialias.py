"""Anti-aliasing (renderer/antialias.py, the accumulate pass) on lavapipe, real WGSL.

The scene is the aliasing case of issue 34 in small: a grid of spheres each a pixel or two
across, seen from above at 64 x 64, where a plain frame shows each sphere or not depending on
whether it covers a pixel centre. The reference is `render(ssaa=4)`, itself checked against a
4 x 4 larger frame box-filtered by hand.
"""

from __future__ import annotations

import numpy as np
import pytest

from preprocess.tess.color import linear_to_srgb, srgb_to_linear
from renderer.antialias import halton, jitter
from renderer.bench.quality import psnr_from
from renderer.camera import Camera
from renderer.options import RenderOptions
from renderer.renderer import Renderer

pytestmark = pytest.mark.gpu

SIZE = 64
GRID = 256  # 16 x 16 spheres: about 2 pixels each at SIZE
OPTS = RenderOptions(shadows=False)  # one frame's shadow pages differ from the next's


def _grid(sphere_tess: str, size: int = SIZE) -> tuple[Renderer, Camera]:
    r = Renderer(size, size, options=OPTS)
    r.add_grid(r.load(sphere_tess), GRID)
    return r, Camera.framing(*r.bounds(), direction=(0.3, 1.0, 0.6))


def _psnr(a: np.ndarray, b: np.ndarray) -> float:
    d = a[..., :3].astype(np.float64) - b[..., :3].astype(np.float64)
    return psnr_from(float((d * d).sum()), d.size)


def test_jitter_is_halton_2_3_within_the_pixel() -> None:
    assert [halton(i, 2) for i in range(1, 5)] == [0.5, 0.25, 0.75, 0.125]
    assert halton(1, 3) == pytest.approx(1 / 3) and halton(4, 3) == pytest.approx(4 / 9)
    points = np.array([jitter(k) for k in range(16)])
    assert (points >= -0.5).all() and (points < 0.5).all()
    # 16 points fill the pixel evenly: base 2 puts 2 in each eighth of x, base 3 (no
    # power of 2) one more or less than 8 in each half of y
    assert np.bincount(((points[:, 0] + 0.5) * 8).astype(int)).tolist() == [2] * 8
    assert abs(int((points[:, 1] < 0).sum()) - 8) <= 1


def test_ssaa_is_the_large_frame_box_filtered_in_linear_light(sphere_tess) -> None:
    n = 3
    r, cam = _grid(sphere_tess)
    res = r.render(cam, ssaa=n)
    big_r, _ = _grid(sphere_tess, n * SIZE)
    big = big_r.render(cam, tau=n * OPTS.tau)  # the LOD per output pixel, as ssaa's default
    blocks = big.color[..., :3].reshape(SIZE, n, SIZE, n, 3)
    linear = srgb_to_linear(blocks / 255.0).mean(axis=(1, 3))
    expected = np.floor(linear_to_srgb(linear) * 255 + 0.5)
    # the same large frame averaged the same way: equal to a rounding of the last bit (the
    # float64 sums of the two means may differ there), so at most 1 code value
    assert np.abs(res.color[..., :3] - expected).max() <= 1
    assert (res.color[..., 3] == 255).all()
    # averaging the sRGB codes instead (what linear light is for) would be visibly darker
    naive = blocks.astype(np.float64).mean(axis=(1, 3))
    assert np.abs(naive - expected).max() > 10
    # the other images: the sample nearest each output pixel's centre
    c = n // 2
    for name in ("instance", "triangle", "depth", "normal", "level"):
        assert np.array_equal(getattr(res, name), getattr(big, name)[c::n, c::n]), name
    # the cut of the plain frame (tau per output pixel), and the renderer back at its size
    plain = r.render(cam)
    assert res.stats.triangles == plain.stats.triangles == big.stats.triangles
    assert plain.color.shape == (SIZE, SIZE, 4)


def test_ssaa_past_the_adapter_or_not_a_count_is_one_line(sphere_tess) -> None:
    r, cam = _grid(sphere_tess)
    n = 2
    while True:  # the least factor this adapter cannot hold
        try:
            r.check_image(n * SIZE, n * SIZE)
        except ValueError:
            break
        n *= 2
    with pytest.raises(ValueError, match=f"^ssaa {n} draws 64x64 at") as e:
        r.render(cam, ssaa=n)
    assert "\n" not in str(e.value)
    assert r.render(cam).color.shape == (SIZE, SIZE, 4)  # nothing changed
    for bad in (0, -1, 1.5, True, "2"):
        with pytest.raises(ValueError, match="ssaa must be a whole number"):
            r.render(cam, ssaa=bad)
    for bad in (-1, 2.0, 1025):
        with pytest.raises(ValueError, match="accumulate must be a whole number"):
            r.render_converged(cam, accumulate=bad)


def test_accumulation_of_a_still_converges_to_the_supersampled_picture(sphere_tess) -> None:
    r, cam = _grid(sphere_tess)
    reference = r.render(cam, ssaa=4).color
    plain = _psnr(r.render(cam).color, reference)
    psnr = {k: _psnr(r.render_converged(cam, accumulate=k).color, reference)
            for k in (1, 4, 16)}
    print(f"PSNR against ssaa 4: plain {plain:.1f} dB, accumulated {psnr}")
    # each frame is one jittered sample a pixel, as aliased as the plain frame; the mean of k
    # of them is a box filter estimated from k samples, as ssaa 4 estimates it from 16 on a
    # grid: the two agree more with every frame. Measured on lavapipe: plain 22.1, 1 frame
    # 22.1, 4 frames 24.8, 16 frames 31.9 dB. 28 dB at 16 frames is 6 dB over the plain frame
    # with 4 dB of margin; a history that does not average (no jitter, clipping a still view,
    # a blend weight that is not 1 / n) stays near the plain frame's figure
    assert psnr[1] < psnr[4] < psnr[16]
    assert psnr[16] >= 28.0 and psnr[16] > plain + 6


def test_a_moving_instance_leaves_no_ghost(sphere_tess) -> None:
    r = Renderer(SIZE, SIZE, options=OPTS)
    asset = r.load(sphere_tess)
    still = r.add_instance(asset, np.diag([0.5, 0.5, 0.5, 1.0]))  # small: part of the view
    mover = r.add_instance(asset, _at(-2.0, 0.5))
    cam = Camera(eye=np.array([0.0, 0.0, 8.0]), target=np.zeros(3), fov_y=40)
    for _ in range(16):  # a converged history with the mover on the left
        before = r.render(cam, accumulate=16)
    left = before.instance == mover
    assert left.sum() > 20
    r.set_transform(mover, _at(2.0, -0.5))  # right and down: no pixel of the two overlaps
    after = r.render(cam, accumulate=16)
    now = r.render(cam)  # the same view, not accumulated (no jitter)
    gone = left & (now.instance < 0) & (after.instance < 0)
    assert gone.sum() > 20
    # where the mover left, the neighbourhood is the background alone: its old colour is
    # clipped to it in the first frame (without clipping it would keep 15/16 of the sphere)
    background = now.color[0, 0, :3].astype(int)
    assert np.abs(after.color[gone][:, :3].astype(int) - background).max() <= 1
    # the jitter is no motion: the instance that stayed has velocity 0 exactly, the mover's
    # points moved (4, -1) parallel to the image, (4, 1) x f / distance pixels (y down; f the
    # pixels a unit at distance 1). Within 0.02 px: the distance comes from the rasterized
    # depth, whose interpolation leaves 0.005 px at most here (lavapipe); a velocity through
    # the jittered matrix is off by the jitter's change, 0.43 px in this frame
    assert (after.velocity[after.instance == still] == 0).all()
    on = after.instance == mover
    f = cam.lod_scale(SIZE)
    expect = np.array([4.0, 1.0]) * f / after.distance()[on][:, None]
    assert np.abs(after.velocity[on] - expect).max() < 0.02


def _at(x: float, y: float) -> np.ndarray:
    m = np.diag([0.4, 0.4, 0.4, 1.0])
    m[:2, 3] = x, y
    return m
