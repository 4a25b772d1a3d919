"""Batch rendering (issue 36): `tessera dataset` against one `tessera render` per view, side by
side in one run.

A shared asset (DamagedHelmet by default, preprocessed once here) drawn from `--views` views
of an orbit (a camera file) at `--size`, depth, normals and ids written with each PNG: the
dataset command's wall time against `tessera render FILE --eye ... --arrays` once per view
(every `--sample`-th view timed, times `--sample`); frames a second both ways and their ratio.
Then each of the sampled views' PNGs from the two compared pixel for pixel.

    python tools/bench_dataset.py                     # 100 views at 512 x 512
    python tools/bench_dataset.py --views 20 --sample 2 my.tess
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # this checkout, not the installed one

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "assets" / "textured"


def _tessera(args: list[str]) -> float:
    t = time.perf_counter()
    subprocess.run([sys.executable, "-m", "renderer.apps.cli", *args], check=True,
                   capture_output=True, cwd=ROOT)
    return time.perf_counter() - t


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("source", nargs="?", help="a .tess or mesh file (default: DamagedHelmet)")
    p.add_argument("--views", type=int, default=100, help="views (100)")
    p.add_argument("--size", default="512x512", help="image size (512x512)")
    p.add_argument("--sample", type=int, default=5,
                   help="one tessera render per view for every K-th view, times K (5)")
    args = p.parse_args(argv)
    from PIL import Image

    from preprocess.build import build_file

    with tempfile.TemporaryDirectory(prefix="tessera-dataset-") as tmp:
        tmp = Path(tmp)
        src = Path(args.source) if args.source else SHARED / "DamagedHelmet.glb"
        tess = src if src.suffix == ".tess" else tmp / f"{src.stem}.tess"
        if tess != src:
            build_file(src, tess)
        out = tmp / "ds"
        common = ["--size", args.size, "--no-shadows"]
        # an orbit as a camera file: `tessera render --eye --target` draws the same cameras
        # (the same near plane: a tenth of a percent of the scene's radius)
        from renderer.scene import open_asset

        a = open_asset(tess)
        centre, radius = a.bounds_sphere[:3].astype(float), float(a.bounds_sphere[3])
        views = []
        for k in range(args.views):
            ang = 2 * np.pi * k / args.views
            d = np.array([np.sin(ang) * 0.9, 0.42, np.cos(ang) * 0.9])
            views.append({"eye": (centre + 2.2 * radius * d / np.linalg.norm(d)).tolist(),
                          "target": centre.tolist()})
        (tmp / "cams.json").write_text(json.dumps(views))
        whole = _tessera(["dataset", str(tess), "-O", str(out), "--cameras",
                          str(tmp / "cams.json"), "--outputs", "depth,normal,ids", *common])
        singles, same = [], []
        for k in range(0, args.views, args.sample):
            eye, target = views[k]["eye"], views[k]["target"]
            png = tmp / f"single{k}.png"
            singles.append(_tessera(["render", str(tess), "-o", str(png), "--arrays",
                                     str(tmp / f"single{k}.npz"),
                                     "--eye=" + ",".join(repr(float(x)) for x in eye),
                                     "--target=" + ",".join(repr(float(x)) for x in target),
                                     *common]))
            a = np.asarray(Image.open(png))
            b = np.asarray(Image.open(out / "images" / f"{k:05d}.png"))
            same.append(int((np.abs(a.astype(int) - b.astype(int)).max(-1) > 0).sum()))
        each = sum(singles) * args.sample
        print(f"{args.views} views of {src.name} at {args.size}, depth, normals and ids")
        print(f"  tessera render per view  {each:7.1f} s ({args.views / each:.2f} frames a "
              f"second; median {np.median(singles):.2f} s a view, every {args.sample}th timed)")
        print(f"  tessera dataset          {whole:7.1f} s ({args.views / whole:.2f} frames a "
              f"second): {each / whole:.1f}x")
        print(f"  pixels differing between the two, per sampled view: {same}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
