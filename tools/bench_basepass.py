"""What the BasePass (the resolve pass: G-buffer, textures, light) costs a pixel, measured alone.

A frame is drawn once (culling and rasterization fill the visibility buffer); then the resolve
pass alone is encoded, submitted and waited for, again and again, and its median wall time is
taken (lavapipe's timestamps around this pass read near zero, and a whole frame mixes in the
culling and rasterization). Scenes: the built-in terrain (200,000 triangles, filling most of the
view) with its 1024 x 1024 base-colour texture block-compressed (BC1, the default) and as
RGBA8 (`--texture-compression none`), and with the default material, measured alternately in
one run; where the adapter has texture-compression-bc, the two textured ones again with their
tiles read by the texture unit (`texture_sampling="hardware"`); optionally a .tess of your own
(its materials as built).

    python tools/bench_basepass.py [--sizes 512 1024] [--repeats 9] [extra.tess ...]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("extra", nargs="*", help="more .tess files to measure")
    p.add_argument("--sizes", type=int, nargs="+", default=[512, 1024])
    p.add_argument("--repeats", type=int, default=9)
    args = p.parse_args(argv)

    from assets.rock import make_terrain
    from preprocess.build import build_file
    from preprocess.config import BuildConfig
    from renderer import Camera, Renderer, RenderOptions
    from renderer.device import create_context
    from renderer.bench.measure import pass_alone_ms

    with tempfile.TemporaryDirectory(prefix="tessera-basepass-") as tmp:
        files = {}
        for texture, compression in ((1024, "bc"), (1024, "none"), (0, "none")):
            path = Path(tmp) / f"terrain{texture}{compression}.tess"
            build_file(make_terrain(316, texture=texture), path,
                       BuildConfig(texture_compression=compression))
            name = ("terrain, default material" if not texture else
                    f"terrain, 1024 {'BC1' if compression == 'bc' else 'RGBA8'} texture")
            files[name] = path
        for extra in args.extra:
            files[Path(extra).name] = Path(extra)
        for size in args.sizes:
            scenes = []
            runs = [(name, path, "auto") for name, path in files.items()]
            if create_context().bc_textures:  # the texture unit's BC decoding too
                runs += [(f"{name} (texture unit)", path, "hardware")
                         for name, path in files.items() if "texture" in name]
            for name, path, sampling in runs:
                r = Renderer(size, size, options=RenderOptions(texture_sampling=sampling))
                r.add_instance(r.load(path))
                cam = Camera.framing(*r.bounds(), direction=(0.2, 0.9, 0.4), fill=1.8)
                img = r.render(cam)
                scenes.append((name, r, int(img.coverage.sum()), []))
            for _ in range(3):  # alternate: the machine's noise falls on every scene alike
                for _, r, _, ms in scenes:
                    ms.append(pass_alone_ms(r, r.frame.resolve.encode, args.repeats))
            for name, r, covered, ms in scenes:
                m = statistics.median(ms)
                print(f"{size}x{size} {name:<43} resolve {m:7.2f} ms: "
                      f"{1e6 * m / (size * size):6.1f} ns a pixel, "
                      f"{1e6 * m / max(covered, 1):6.1f} ns a covered pixel "
                      f"({covered:,} covered; {r.ctx.description})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
