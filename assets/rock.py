"""The built-in default asset: a procedural boulder, plus a terrain patch for tests.

Both are deterministic functions of their arguments (same arguments, bit-identical arrays), built
with vectorized numpy in a second or two for a million triangles, so the demo works on a fresh
machine with nothing downloaded.

- `make_rock`: a geodesic sphere (see `assets.shapes`) sized to the requested triangle count,
  squashed into a boulder and displaced radially by a few large lumps and fractal gradient noise;
  closed, manifold, smooth normals.
- `make_terrain`: an open square heightfield (an open border all round), y up, with uvs.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from assets.shapes import geodesic_sphere_arrays
from preprocess.load import mesh_from_arrays
from preprocess.mesh import Mesh

__all__ = [
    "DEFAULT_ASSET",
    "default_mesh",
    "fbm",
    "gradient_noise",
    "make_rock",
    "make_terrain",
]

DEFAULT_ASSET = "rock"

_GRADIENTS = np.array(
    [
        [1, 1, 0],
        [-1, 1, 0],
        [1, -1, 0],
        [-1, -1, 0],
        [1, 0, 1],
        [-1, 0, 1],
        [1, 0, -1],
        [-1, 0, -1],
        [0, 1, 1],
        [0, -1, 1],
        [0, 1, -1],
        [0, -1, -1],
        [1, 1, 0],
        [-1, 1, 0],
        [0, -1, 1],
        [0, -1, -1],
    ],
    dtype=np.float64,
)  # fmt: skip  (Perlin's 12 edge directions, padded to 16 so a 4-bit hash picks one)


_P1 = np.uint64(0x9E3779B97F4A7C15)
_P2 = np.uint64(0xC2B2AE3D27D4EB4F)
_P3 = np.uint64(0x165667B19E3779F9)
_MIX = np.uint64(0xFF51AFD7ED558CCD)


def _seed_word(seed: int) -> np.uint64:
    return np.uint64((seed * 0x27D4EB2F165667C5 + 0x61C8864680B583EB) & 0xFFFFFFFFFFFFFFFF)


def _corner_index(hx: np.ndarray, hy: np.ndarray, hz: np.ndarray, s: np.uint64) -> np.ndarray:
    """Gradient index 0..15 of lattice corners from per-axis hash words (uint64)."""
    h = hx ^ hy ^ hz ^ s
    h ^= h >> np.uint64(32)
    h *= _MIX
    return (h >> np.uint64(60)).astype(np.intp)


def gradient_noise(p: np.ndarray, seed: int = 0) -> np.ndarray:
    """Perlin-style 3D gradient noise (numpy reference of the compiled kernel `fbm` uses).

    Args:
        p: (n, 3) float64 points (lattice spacing 1).
        seed: selects an independent noise field.

    Returns:
        (n,) float64, roughly in [-1, 1], zero at lattice points, C2-smooth (quintic fade).
    """
    p = np.asarray(p, dtype=np.float64)
    cell = np.floor(p)
    f = p - cell
    i = cell.astype(np.int64).astype(np.uint64)
    w = f * f * f * (f * (f * 6.0 - 15.0) + 10.0)  # quintic fade
    s = _seed_word(seed)
    hx = (i[:, 0] * _P1, (i[:, 0] + np.uint64(1)) * _P1)
    hy = (i[:, 1] * _P2, (i[:, 1] + np.uint64(1)) * _P2)
    hz = (i[:, 2] * _P3, (i[:, 2] + np.uint64(1)) * _P3)
    out = np.zeros(p.shape[0], dtype=np.float64)
    for dx in (0, 1):
        wx = w[:, 0] if dx else 1.0 - w[:, 0]
        for dy in (0, 1):
            wy = w[:, 1] if dy else 1.0 - w[:, 1]
            for dz in (0, 1):
                wz = w[:, 2] if dz else 1.0 - w[:, 2]
                g = _GRADIENTS[_corner_index(hx[dx], hy[dy], hz[dz], s)]
                dot = g[:, 0] * (f[:, 0] - dx) + g[:, 1] * (f[:, 1] - dy) + g[:, 2] * (f[:, 2] - dz)
                out += (wx * wy * wz) * dot
    return out


@numba.njit(cache=True, nogil=True)
def _fbm_kernel(p, octaves, seeds, offsets, frequency, lacunarity, gain, ridged, grads):
    n = p.shape[0]
    out = np.zeros(n, dtype=np.float64)
    for t in range(n):
        total = 0.0
        amp = 1.0
        freq = frequency
        for k in range(octaves):
            s = seeds[k]
            qx = p[t, 0] * freq + offsets[k, 0]
            qy = p[t, 1] * freq + offsets[k, 1]
            qz = p[t, 2] * freq + offsets[k, 2]
            cx, cy, cz = np.floor(qx), np.floor(qy), np.floor(qz)
            fx, fy, fz = qx - cx, qy - cy, qz - cz
            ix = np.uint64(np.int64(cx))
            iy = np.uint64(np.int64(cy))
            iz = np.uint64(np.int64(cz))
            wx1 = fx * fx * fx * (fx * (fx * 6.0 - 15.0) + 10.0)
            wy1 = fy * fy * fy * (fy * (fy * 6.0 - 15.0) + 10.0)
            wz1 = fz * fz * fz * (fz * (fz * 6.0 - 15.0) + 10.0)
            value = 0.0
            for dx in range(2):
                hx = (ix + np.uint64(dx)) * _P1
                wx = wx1 if dx else 1.0 - wx1
                for dy in range(2):
                    hy = (iy + np.uint64(dy)) * _P2
                    wy = wy1 if dy else 1.0 - wy1
                    for dz in range(2):
                        hz = (iz + np.uint64(dz)) * _P3
                        wz = wz1 if dz else 1.0 - wz1
                        h = hx ^ hy ^ hz ^ s
                        h ^= h >> np.uint64(32)
                        h *= _MIX
                        gi = np.intp(h >> np.uint64(60))
                        dot = (
                            grads[gi, 0] * (fx - dx)
                            + grads[gi, 1] * (fy - dy)
                            + grads[gi, 2] * (fz - dz)
                        )
                        value += (wx * wy * wz) * dot
            if ridged:
                value = 1.0 - 2.0 * abs(value)
            total += amp * value
            amp *= gain
            freq *= lacunarity
        out[t] = total
    return out


def _octave_params(octaves: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    seeds = np.array([_seed_word(seed * 1000 + k) for k in range(octaves)], dtype=np.uint64)
    k = np.arange(octaves, dtype=np.float64)[:, None]
    offsets = k * np.array([[17.31, -9.17, 5.73]])
    return seeds, offsets


def fbm(
    p: np.ndarray,
    octaves: int,
    *,
    seed: int = 0,
    frequency: float = 1.0,
    lacunarity: float = 2.03,
    gain: float = 0.5,
    ridged: bool = False,
    reference: bool = False,
) -> np.ndarray:
    """(n,) float64 fractal sum of `gradient_noise` octaves at (n, 3) float64 points ``p``.

    Octave k samples ``gradient_noise(p * frequency * lacunarity**k + k * (17.31, -9.17, 5.73),
    seed * 1000 + k)`` with amplitude ``gain**k`` (the offsets break lattice alignment between
    octaves). With ``ridged`` each octave contributes ``1 - 2|noise|`` (creases instead of round
    bumps). Runs a compiled numba kernel; ``reference=True`` runs the numpy version instead (same
    numbers up to rounding, for tests).
    """
    p = np.ascontiguousarray(p, dtype=np.float64)
    seeds, offsets = _octave_params(octaves, seed)
    if not reference:
        return _fbm_kernel(
            p, octaves, seeds, offsets, frequency, lacunarity, gain, ridged, _GRADIENTS
        )
    total = np.zeros(p.shape[0], dtype=np.float64)
    amp = 1.0
    freq = frequency
    for k in range(octaves):
        n = gradient_noise(p * freq + offsets[k], seed=seed * 1000 + k)
        total += amp * ((1.0 - 2.0 * np.abs(n)) if ridged else n)
        amp *= gain
        freq *= lacunarity
    return total


def rock_resolution(triangles: int) -> int:
    """The geodesic sphere's subdivision `make_rock` uses for about ``triangles`` triangles: the
    n whose 20 n^2 is nearest (at least 1)."""
    return max(1, round(math.sqrt(max(triangles, 20) / 20.0)))


def make_rock(triangles: int = 1_000_000, seed: int = 7) -> Mesh:
    """A boulder of about ``triangles`` triangles (20 n^2 for the nearest n: within 5% from about
    9,000 triangles up, 10% from 2,000), closed and manifold, smooth normals, no uvs, about 2
    units across.

    The base is a unit geodesic sphere; each vertex moves along its direction to radius
    ``1 + lumps + ridges + detail``: a few large low-frequency lumps give the silhouette, ridged
    noise gives crags, and fBm down to a few vertex spacings gives the surface grain. The shape is
    squashed and flattened underneath so that it sits like a rock. Radial displacement keeps the
    surface star-shaped, so it never self-intersects.
    """
    n = rock_resolution(triangles)
    dirs32, faces = geodesic_sphere_arrays(n)
    d = dirs32.astype(np.float64)

    rng = np.random.default_rng(seed)
    # Large lumps: a handful of smooth bumps and dents in random directions.
    lump_dirs = rng.normal(size=(7, 3))
    lump_dirs /= np.linalg.norm(lump_dirs, axis=1, keepdims=True)
    lump_amp = rng.uniform(-0.12, 0.22, size=7)
    lump_sharp = rng.uniform(2.0, 6.0, size=7)
    r = np.ones(d.shape[0], dtype=np.float64)
    for k in range(7):
        c = d @ lump_dirs[k]
        r += lump_amp[k] * np.exp(lump_sharp[k] * (c - 1.0))
    offset = rng.uniform(-100.0, 100.0, size=3)
    q = d + offset
    r += 0.18 * fbm(q, 2, seed=seed, frequency=1.1)
    r += 0.05 * fbm(q, 3, seed=seed + 1, frequency=2.5, ridged=True, gain=0.45)
    # Detail down to ~3 vertex spacings (the spacing on the unit sphere is about 1.1 / n).
    max_frequency = n / 3.3  # wavelength 1 / f >= 3 * spacing
    detail_octaves = max(1, min(8, int(math.log2(max(1.0, max_frequency / 4.0))) + 1))
    r += 0.035 * fbm(q, detail_octaves, seed=seed + 2, frequency=4.0, gain=0.55)
    r = np.maximum(r, 0.35)

    p = d * r[:, None]
    p *= np.array([1.15, 0.8, 0.95])  # squash into a boulder (y up)
    # Flatten the underside: compress what lies below y = -0.45 toward that plane.
    floor = -0.45
    below = p[:, 1] < floor
    p[below, 1] = floor + (p[below, 1] - floor) * 0.3
    return mesh_from_arrays(p.astype(np.float32), faces, name=f"rock-{seed}")


def make_terrain(
    resolution: int = 256,
    seed: int = 7,
    *,
    size: float = 2.0,
    height: float = 0.35,
    texture: int = 1024,
) -> Mesh:
    """An open heightfield patch: a (resolution + 1)^2 grid over [-size/2, size/2]^2 in x and z,
    y up, 2 * resolution^2 triangles counter-clockwise seen from above, uvs in [0, 1]^2 (u along
    x, v along z), smooth normals. Its border is open (4 * resolution boundary edges). Its
    material (`terrain_material`) has a base-colour texture of `texture` texels a side (0: none):
    the same heights, coloured by height and slope, with finer noise than the mesh holds.
    """
    if resolution < 1:
        raise ValueError(f"make_terrain: resolution must be >= 1, got {resolution}")
    k = resolution + 1
    t = np.linspace(0.0, 1.0, k)
    u, v = np.meshgrid(t, t, indexing="xy")  # u varies along columns (x), v along rows (z)
    u, v = u.ravel(), v.ravel()
    x = (u - 0.5) * size
    z = (v - 0.5) * size
    pts = np.stack([x, np.zeros_like(x), z], axis=1)
    y = _terrain_heights(pts, seed, height)
    positions = np.stack([x, y, z], axis=1).astype(np.float32)

    ids = np.arange(k * k).reshape(k, k)  # ids[row (z), col (x)]
    v00 = ids[:-1, :-1].ravel()
    v10 = ids[:-1, 1:].ravel()  # +x
    v01 = ids[1:, :-1].ravel()  # +z
    v11 = ids[1:, 1:].ravel()
    faces = np.concatenate([np.stack([v00, v01, v10], axis=1), np.stack([v10, v01, v11], axis=1)])
    uvs = np.stack([u, v], axis=1)
    mesh = mesh_from_arrays(positions, faces, uvs=uvs, name=f"terrain-{seed}")
    if texture:
        mesh.materials, mesh.textures = terrain_material(texture, seed, size=size, height=height)
    return mesh


def terrain_surface(x: np.ndarray, z: np.ndarray, resolution: int, seed: int = 7, *,
                    size: float = 2.0, height: float = 0.35) -> np.ndarray:
    """Heights (float64, the shape of `x`) of `make_terrain(resolution, seed, size=size,
    height=height)`'s surface at (x, z): its triangles' own heights (the grid's corners
    interpolated across the triangle holding the point, split along the same diagonal), not the
    noise between them, so that what stands on the terrain touches what is drawn. Points
    outside the patch take the nearest border's height."""
    k = resolution + 1
    t = np.linspace(0.0, 1.0, k)
    gx, gz = np.meshgrid((t - 0.5) * size, (t - 0.5) * size, indexing="xy")
    pts = np.stack([gx.ravel(), np.zeros(gx.size), gz.ravel()], axis=1)
    # rounded to float32 as the mesh's positions are
    grid = _terrain_heights(pts, seed, height).astype(np.float32).astype(np.float64)
    grid = grid.reshape(k, k)  # [row (z), col (x)]
    u = np.clip((np.asarray(x, np.float64) / size + 0.5) * resolution, 0, resolution)
    v = np.clip((np.asarray(z, np.float64) / size + 0.5) * resolution, 0, resolution)
    col = np.minimum(u.astype(np.int64), resolution - 1)
    row = np.minimum(v.astype(np.int64), resolution - 1)
    fu, fv = u - col, v - row
    h00, h10 = grid[row, col], grid[row, col + 1]
    h01, h11 = grid[row + 1, col], grid[row + 1, col + 1]
    # make_terrain's triangles (v00, v01, v10) and (v10, v01, v11): the diagonal fu + fv = 1
    lower = h00 + fu * (h10 - h00) + fv * (h01 - h00)
    upper = h11 + (1 - fu) * (h01 - h11) + (1 - fv) * (h10 - h11)
    return np.where(fu + fv <= 1.0, lower, upper)


def _terrain_heights(pts: np.ndarray, seed: int, height: float) -> np.ndarray:
    hills = fbm(pts * 1.3 + 50.0, 6, seed=seed, gain=0.5)
    ridges = fbm(pts * 2.1 - 20.0, 4, seed=seed + 1, ridged=True, gain=0.5)
    return height * (0.7 * hills + 0.3 * (ridges - 0.6))


def terrain_material(texels: int, seed: int = 7, *, size: float = 2.0, height: float = 0.35
                     ) -> tuple[list, list]:
    """([Material], [Texture]): a rough dielectric whose base-colour texture (texels x texels,
    sRGB) paints `make_terrain`'s heights: grass low and flat, rock on slopes, snow high, with
    noise a few texels wide (detail the mesh does not have: what a texture is for)."""
    from preprocess.materials import Material, Texture
    from preprocess.tess.color import linear_to_srgb

    t = (np.arange(texels) + 0.5) / texels
    u, v = np.meshgrid(t, 1.0 - t, indexing="xy")  # row 0 is the top of the image: v = 1
    pts = np.stack([(u.ravel() - 0.5) * size, np.zeros(u.size), (v.ravel() - 0.5) * size], 1)
    y = _terrain_heights(pts, seed, height).reshape(texels, texels)
    gz, gx = np.gradient(y, size / texels)
    slope = np.hypot(gx, gz)
    grain = fbm(pts * 40.0 + 3.0, 3, seed=seed + 2).reshape(texels, texels)
    grass = np.array([0.10, 0.22, 0.05])
    rock = np.array([0.25, 0.22, 0.19])
    snow = np.array([0.80, 0.82, 0.85])
    # slopes: median ~0.95 at the default size; heights: 90th percentile ~0.13
    w_rock = np.clip((slope - 0.9) * 2.0, 0, 1)[..., None]
    w_snow = np.clip((y / height - 0.38) * 12.0, 0, 1)[..., None] * (1 - 0.6 * w_rock)
    c = grass * (1 - w_rock - w_snow) + rock * w_rock + snow * w_snow
    c = np.clip(c * (1.0 + 0.35 * grain[..., None]), 0, 1)
    rgba = np.concatenate([np.rint(linear_to_srgb(c) * 255), np.full((texels, texels, 1), 255)],
                          axis=2).astype(np.uint8)
    return ([Material(name="terrain", base_color_texture=0, metallic=0.0, roughness=0.85)],
            [Texture(rgba, True, "terrain base colour")])


def default_mesh(triangles: int = 1_000_000) -> Mesh:
    """The built-in default asset (`DEFAULT_ASSET`): ``make_rock(triangles)``."""
    return make_rock(triangles)
