"""Block-compressed textures against RGBA8 (issue 35): what each costs on disk, on the GPU, in the
picture, in preprocessing and in loading, side by side in one run.

For each textured source (the shared assets by default, or files given), built twice in this
process (`--texture-compression bc`, the default, and `none`): the source's bytes on disk (the
glTF/OBJ and the files it names), the `.tess` bytes, the texels the GPU holds, the build's
seconds (median of `--builds`), then the lit BasePass image of each at full detail (tau 1e-4)
from two distances, 512 x 512, shadows off: PSNR of the compressed against the uncompressed
over the whole image and over the asset's pixels, and the mean angle between their shading
normals (the normal maps) over the asset's pixels; last `tessera render FILE` wall time of
each, alternating, median of `--renders`.

    python tools/bench_textures.py                       # the shared textured assets
    python tools/bench_textures.py --renders 5 my.glb    # a file of your own
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # this checkout, not the installed one

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "assets" / "textured"
DEFAULT = ["DamagedHelmet.glb", "BoomBox/BoomBox.gltf", "spot/spot_triangulated.obj"]


def _source_bytes(path: Path) -> int:
    """The source file and what sits beside it that it names (a glTF's .bin and images, an
    OBJ's texture): the folder's files when the source is in a folder of its own."""
    if path.parent != SHARED and path.parent.parent == SHARED:  # an asset folder
        return sum(p.stat().st_size for p in path.parent.rglob("*") if p.is_file())
    return path.stat().st_size


def _psnr(a: np.ndarray, b: np.ndarray, mask: np.ndarray) -> float:
    d = a[..., :3].astype(np.float64) - b[..., :3]
    mse = float((d[mask] ** 2).mean()) if mask.any() else 0.0
    return float("inf") if mse == 0 else 10 * np.log10(255 ** 2 / mse)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("sources", nargs="*", help="textured meshes (default: the shared assets)")
    p.add_argument("--builds", type=int, default=3, help="builds of each kind, median (3)")
    p.add_argument("--renders", type=int, default=5,
                   help="`tessera render` runs of each kind, alternating, median (5)")
    args = p.parse_args(argv)

    from preprocess.build import build_file
    from preprocess.config import BuildConfig
    from renderer import Camera, Renderer, RenderOptions

    texture = {"spot_triangulated.obj": SHARED / "spot" / "spot_texture.png"}
    sources = [Path(s) for s in args.sources] or [SHARED / s for s in DEFAULT]
    with tempfile.TemporaryDirectory(prefix="tessera-textures-") as tmp:
        for src in sources:
            tex = texture.get(src.name)
            files, seconds = {}, {}
            for kind in ("bc", "none"):
                out = Path(tmp) / f"{src.stem}.{kind}.tess"
                times = []
                for _ in range(args.builds):
                    t = time.perf_counter()
                    res = build_file(src, out, BuildConfig(texture_compression=kind),
                                     texture=tex)
                    times.append(time.perf_counter() - t)
                files[kind], seconds[kind] = out, statistics.median(times)
                texel_mb = res.packed.meta.get("texture_bytes", 0) / 2**20
                print(f"{src.name:<28} {kind:<4} file {out.stat().st_size / 2**20:7.2f} MiB, "
                      f"texels on the GPU {texel_mb:7.2f} MiB "
                      f"({', '.join(res.packed.meta.get('texture_formats', []))}), build "
                      f"{seconds[kind]:.2f} s (median of {args.builds})")
            src_mb = (_source_bytes(src) + (tex.stat().st_size if tex else 0)) / 2**20
            ratio = files["bc"].stat().st_size / 2**20 / src_mb
            print(f"{'':<28} source {src_mb:.2f} MiB: the compressed file is {ratio:.2f}x it; "
                  f"build {seconds['bc'] / seconds['none']:.2f}x the uncompressed one's")
            renderers = {}
            for kind, path in files.items():
                r = Renderer(512, 512, options=RenderOptions(shadows=False))
                r.add_instance(r.load(path))
                renderers[kind] = r
            center, radius = renderers["none"].bounds()
            for distance in (1.0, 3.0):
                cam = Camera.framing(center, radius * distance, direction=(0.3, 0.35, 1.0))
                bc, raw = (renderers[k].render(cam, tau=1e-4) for k in ("bc", "none"))
                on = (bc.depth > 0) | (raw.depth > 0)
                both = (bc.depth > 0) & (raw.depth > 0)
                dots = np.clip(np.einsum("ijk,ijk->ij", bc.shading_normal, raw.shading_normal),
                               -1, 1)
                angle = float(np.degrees(np.arccos(dots[both])).mean()) if both.any() else 0.0
                print(f"{'':<28} {distance:.0f}x framed: PSNR "
                      f"{_psnr(bc.color, raw.color.astype(np.float64), np.ones_like(on)):.2f} dB "
                      f"whole image, {_psnr(bc.color, raw.color.astype(np.float64), on):.2f} dB "
                      f"over its {int(on.sum()):,} pixels; shading normals {angle:.3f} degrees "
                      f"apart on average")
            del renderers
            walls = {"bc": [], "none": []}
            for _ in range(args.renders):
                for kind, path in files.items():
                    t = time.perf_counter()
                    subprocess.run([sys.executable, "-m", "renderer.apps.cli", "render",
                                    str(path), "-o", str(Path(tmp) / "out.png")], check=True,
                                   capture_output=True, cwd=ROOT)
                    walls[kind].append(time.perf_counter() - t)
            b, n = statistics.median(walls["bc"]), statistics.median(walls["none"])
            print(f"{'':<28} tessera render: {b:.2f} s compressed, {n:.2f} s RGBA8 "
                  f"({b / n:.2f}x; medians of {args.renders}, alternating)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
