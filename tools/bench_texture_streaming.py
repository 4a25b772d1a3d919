"""Texture streaming (issue 35): what a frame keeps resident, uploads and shows with texture pools
of several sizes, side by side in one run.

For a textured source (DamagedHelmet by default; `--lantern`: the generated lantern-like scene of
three meshes sharing five 2048² textures, built uncompressed: 85 MiB; `--many N`: N sheets
side by side, each with a 2048² texture of its own, uncompressed, past what lavapipe binds from
N = 6 on), drawn at `--size` from `--views` views (an orbit at three distances, shadows off,
tau 1): for each pool (every tile resident where that fits; then each
`--pools` size in MiB; then the tails and tables alone) and each view, `render_converged`'s
frames, the tiles the frame wanted, resident, uploaded (MiB) and short (wanted, not resident:
drawn from a coarser mip), the PSNR of the picture against the first pool's, and the BasePass
(resolve) GPU time of the settled view, median of `--frames` frames.

    python tools/bench_texture_streaming.py                    # DamagedHelmet, 768 x 768
    python tools/bench_texture_streaming.py --lantern          # three meshes, shared textures
    python tools/bench_texture_streaming.py my.glb --pools 8 2
    python tools/bench_texture_streaming.py --many 24          # 512 MiB of textures
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # this checkout, not the installed one

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "assets" / "textured"


def _views(center, radius, n: int):
    from renderer import Camera

    out = []
    for i in range(n):
        a = 2 * np.pi * i / n
        d = (0.6, 1.0, 2.5)[i % 3]
        out.append(Camera.framing(center, radius * d,
                                  direction=(np.sin(a), 0.35, np.cos(a))))
    return out


def _scene_files(args, tmp: Path) -> list[Path]:
    """The .tess files to draw: the source's, or the lantern scene's meshes."""
    from preprocess.build import build_file
    from preprocess.config import BuildConfig

    if args.many:  # sheets with a texture of their own each, uncompressed
        import trimesh
        from PIL import Image

        from assets.shapes import grid_square

        out = []
        rng = np.random.default_rng(5)
        v, faces = grid_square(4)
        for i in range(args.many):
            cells = rng.integers(30, 230, (256, 256, 3), dtype=np.uint8)
            img = np.repeat(np.repeat(cells, 8, 0), 8, 1)  # 2048², cells of 8 texels
            mesh = trimesh.Trimesh(v, faces, process=False)
            mesh.visual = trimesh.visual.TextureVisuals(
                uv=(v[:, :2] + 1) / 2, material=trimesh.visual.material.PBRMaterial(
                    baseColorTexture=Image.fromarray(img), metallicFactor=0.0))
            mesh.export(tmp / f"sheet{i}.glb")
            build_file(tmp / f"sheet{i}.glb", tmp / f"sheet{i}.tess",
                       BuildConfig(texture_compression="none"))
            out.append(tmp / f"sheet{i}.tess")
        return out
    if args.lantern:
        from preprocess.scene_import import build_scene, read_scene
        from tools.bench_textures import lantern_scene

        src = lantern_scene(tmp / "lantern.glb")
        res = build_scene(read_scene(src), tmp / "lantern.json",
                          BuildConfig(texture_compression="none"))
        return [r.path for r in res]
    src = Path(args.source) if args.source else SHARED / "DamagedHelmet.glb"
    out = tmp / f"{src.stem}.tess"
    build_file(src, out, BuildConfig())
    return [out]


def _renderer(files, size, pool_mb, grid: bool):
    from renderer import Renderer, RenderOptions

    r = Renderer(size, size, options=RenderOptions(shadows=False, texture_pool_mb=pool_mb))
    side = int(np.ceil(np.sqrt(len(files))))
    for i, f in enumerate(files):
        world = np.eye(4)
        if grid:  # the sheets side by side, facing +z
            world[:2, 3] = 2.1 * (i % side), 2.1 * (i // side)
        r.add_instance(r.load(f), world)
    return r


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("source", nargs="?", help="a textured mesh (default: DamagedHelmet)")
    p.add_argument("--lantern", action="store_true",
                   help="instead: the generated lantern-like scene, uncompressed (320 MiB)")
    p.add_argument("--many", type=int, default=0, metavar="N",
                   help="instead: N sheets side by side, each with a 2048² texture of its own, "
                        "uncompressed (21.3 MiB each with mips: 6 or more exceed lavapipe's "
                        "128 MiB binding)")
    p.add_argument("--size", type=int, default=768, help="image side (768)")
    p.add_argument("--views", type=int, default=6, help="views of the orbit (6)")
    p.add_argument("--pools", type=float, nargs="*", default=[8.0, 4.0],
                   help="pool sizes in MiB after the default one (8 4)")
    p.add_argument("--frames", type=int, default=5,
                   help="frames of the settled view timed, median (5)")
    args = p.parse_args(argv)
    from renderer.bench.quality import psnr_from

    with tempfile.TemporaryDirectory(prefix="tessera-tstream-") as tmp:
        files = _scene_files(args, Path(tmp))
        first = _renderer(files, args.size, None, bool(args.many))
        center, radius = first.bounds()
        views = _views(center, radius, args.views)
        reference = []
        pools: list[float | None] = [None, *args.pools]
        rows = []
        for k, pool in enumerate([*pools, "tails"]):
            r = first if k == 0 else None
            if pool == "tails":
                tp = first.texture_pool
                pool = tp.fixed_bytes / 2**20
            if r is None:
                r = _renderer(files, args.size, pool, bool(args.many))
            last = -1  # the renderer's last frame
            for v, cam in enumerate(views):
                up = r.texture_pool.uploaded if r.texture_pool else 0
                t = time.perf_counter()
                res = r.render_converged(cam, tau=1.0)
                wall = time.perf_counter() - t
                tp = r.texture_pool
                mib = (tp.uploaded - up) * 16 / 1024
                ms = []
                for _ in range(args.frames):
                    timed = r.render(cam, tau=1.0)
                    ms.append(timed.stats.gpu_ms.get("resolve", 0.0))
                st = res.stats.textures or {}
                n_frames = res.stats.frame - last
                last = timed.stats.frame
                if k == 0:
                    reference.append(res.color)
                d = res.color[..., :3].astype(np.float64) - reference[v][..., :3]
                psnr = psnr_from(float((d * d).sum()), d.size)
                rows.append((pool, v, n_frames, st, tp.resident, tp, psnr, mib,
                             statistics.median(ms), wall))
        print(f"{len(files)} file(s), {args.size}x{args.size}, {args.views} views, on "
              f"{first.ctx.description}")
        print(f"{'pool MiB':>9} {'view':>4} {'frames':>6} {'wanted':>7} {'resident':>11} "
              f"{'up MiB':>7} {'short':>6} {'PSNR dB':>8} {'resolve ms':>10} {'wall s':>7}")
        for pool, v, frames, st, resident, tp, psnr, mib, ms, wall in rows:
            label = "all" if pool is None and not tp.streaming else (
                f"{tp.texture_bytes / 2**20:.1f}")
            print(f"{label:>9} {v:>4} {frames:>6} {st.get('wanted', '-'):>7} "
                  f"{resident:>5}/{tp.slots:<5} {mib:>7.1f} {st.get('short', 0):>6} "
                  f"{psnr:>8.2f} {ms:>10.2f} {wall:>7.2f}")
        print(f"textures: {len(first.texture_pool.textures)}, {first.texture_pool.entries:,} "
              f"tiles of 16 KiB above tails and tables of "
              f"{first.texture_pool.fixed_bytes / 2**20:.2f} MiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
