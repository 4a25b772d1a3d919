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
    python tools/bench_textures.py --lantern             # a generated scene sharing textures

`--lantern`: a lantern-like glTF scene (`lantern_scene`: three meshes sharing one material of
five 2048² textures) preprocessed as a scene, its files' bytes in all, and the textures its
scene's materials buffer holds (`Scene.material_data`: one copy of each).
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
    """PSNR of the RGB of two images over the pixels of `mask`."""
    from renderer.bench.quality import psnr_from

    d = (a[..., :3].astype(np.float64) - b[..., :3])[mask]
    return psnr_from(float((d * d).sum()), d.size)


def lantern_scene(path: Path) -> Path:
    """A GLB of three meshes (a cylinder, a ball, a box) sharing one material: base colour, a
    normal map, a packed occlusion-roughness-metallic image (used as both), emissive, each
    2048² of smooth detail and blotchy noise (PNG: far smaller than photographs)."""
    import trimesh
    from PIL import Image

    rng = np.random.default_rng(7)
    n = 2048
    y, x = np.mgrid[0:n, 0:n] / n
    noise = np.kron(rng.normal(0, 1, (n // 8, n // 8)), np.ones((8, 8)))

    def image(a: np.ndarray) -> Image.Image:
        return Image.fromarray(np.clip(a * 255, 0, 255).astype(np.uint8))

    base = np.stack([0.5 + 0.3 * np.sin(9 * x) + 0.05 * noise,
                     0.4 + 0.2 * np.cos(7 * y) + 0.05 * noise,
                     0.3 + 0.1 * np.sin(5 * (x + y)) + 0.03 * noise], -1)
    nx, ny = 0.2 * np.sin(40 * x), 0.2 * np.cos(37 * y)
    normal = np.stack([0.5 + 0.5 * nx, 0.5 + 0.5 * ny,
                       0.5 + 0.5 * np.sqrt(1 - nx ** 2 - ny ** 2)], -1)
    orm = np.stack([0.8 + 0.2 * np.sin(3 * x), 0.3 + 0.4 * y + 0.05 * noise, (x > 0.5) * 1.0], -1)
    glow = np.stack([(np.hypot(x - 0.5, y - 0.5) < 0.1) * 1.0] * 3, -1)
    mat = trimesh.visual.material.PBRMaterial(
        baseColorTexture=image(base), normalTexture=image(normal),
        metallicRoughnessTexture=image(orm), occlusionTexture=image(orm),
        emissiveTexture=image(glow), emissiveFactor=(1, 0.8, 0.5))
    scene = trimesh.Scene()
    for i, geom in enumerate((trimesh.creation.cylinder(0.5, 2, 48),
                              trimesh.creation.icosphere(3, 0.6),
                              trimesh.creation.box((0.3, 1.5, 0.3)))):
        geom.apply_translation((1.5 * i, 0, 0))
        v = geom.vertices
        uv = np.stack([np.arctan2(v[:, 2], v[:, 0]) / (2 * np.pi) + 0.5, v[:, 1] / 2 + 0.5], -1)
        geom.visual = trimesh.visual.TextureVisuals(uv=uv, material=mat)
        scene.add_geometry(geom, geom_name=f"part{i}")
    scene.export(path)
    return path


def lantern(tmp: Path) -> None:
    """The lantern-like scene preprocessed (bc), its files and its scene's textures."""
    from preprocess.config import BuildConfig
    from preprocess.scene_import import build_scene, read_scene
    from renderer.scene import Scene, open_asset

    src = lantern_scene(tmp / "lantern.glb")
    t = time.perf_counter()
    results = build_scene(read_scene(src), tmp / "lantern.json", BuildConfig())
    built = time.perf_counter() - t
    files = sorted(p for p in tmp.iterdir() if p.suffix == ".tess")
    scene = Scene()
    for r in results:
        scene.add_asset(open_asset(r.path))
    pool, _ = scene.material_data(1 << 27)  # lavapipe's binding
    how = (f"streamed: {pool.slots:,} of {pool.entries:,} tiles fit" if pool.streaming
           else "every tile resident")
    print(f"lantern-like scene: source {src.stat().st_size / 1e6:.2f} MB; "
          f"{len(files)} files of {sum(p.stat().st_size for p in files) / 1e6:.2f} MB in all "
          f"({', '.join(f'{p.name} {p.stat().st_size / 1e6:.2f}' for p in files)}); built in "
          f"{built:.1f} s; the scene's textures on the GPU {pool.texture_bytes / 2**20:.1f} "
          f"MiB, {len(pool.textures)} textures, every mip ({how})")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("sources", nargs="*", help="textured meshes (default: the shared assets)")
    p.add_argument("--builds", type=int, default=3, help="builds of each kind, median (3)")
    p.add_argument("--renders", type=int, default=5,
                   help="`tessera render` runs of each kind, alternating, median (5)")
    p.add_argument("--lantern", action="store_true",
                   help="instead: the generated lantern-like scene (textures shared)")
    args = p.parse_args(argv)
    if args.lantern:
        with tempfile.TemporaryDirectory(prefix="tessera-lantern-") as tmp:
            lantern(Path(tmp))
        return 0

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
