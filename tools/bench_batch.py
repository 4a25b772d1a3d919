"""Batch preprocessing (issue 36): one `preprocess` command over a library against one command per
mesh, side by side in one run.

The library: the shared scans (`../shared/assets/*.obj`) and generated small meshes (spheres,
boxes, cylinders, tori and bumpy spheres of 80 to 20,000 triangles, as PLY, OBJ, STL and OFF),
`--count` in all (200). Timed: `preprocess FILE -o OUT -q` once per mesh (the sum, or with
`--sample K` every K-th mesh's time times K), then `preprocess LIBRARY -O OUT -q` (worker
processes, one a core), then the same again with every output up to date; with `--ray`, the
batch again on a local Ray cluster (`--ray local`).

    python tools/bench_batch.py                 # 200 meshes
    python tools/bench_batch.py --sample 5      # one command per mesh for every 5th only
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
SHARED = ROOT.parent / "shared" / "assets"


def library(folder: Path, count: int) -> list[Path]:
    """The shared scans and generated meshes, `count` files in `folder`."""
    import shutil

    import trimesh

    out = []
    for p in sorted(SHARED.glob("*.obj"))[:count]:
        shutil.copy(p, folder / p.name)
        out.append(folder / p.name)
    rng = np.random.default_rng(11)
    kinds = ("sphere", "box", "cylinder", "torus", "bumpy")
    i = 0
    while len(out) < count:
        kind = kinds[i % len(kinds)]
        if kind == "sphere":
            m = trimesh.creation.icosphere(int(rng.integers(1, 5)), 1.0)
        elif kind == "box":
            m = trimesh.creation.box(rng.uniform(0.5, 2, 3)).subdivide().subdivide()
        elif kind == "cylinder":
            m = trimesh.creation.cylinder(0.5, 2.0, int(rng.integers(8, 128)))
        elif kind == "torus":
            m = trimesh.creation.torus(1.0, 0.3, int(rng.integers(16, 96)),
                                       int(rng.integers(8, 48)))
        else:
            m = trimesh.creation.icosphere(int(rng.integers(3, 6)), 1.0)
            m.vertices *= 1 + 0.05 * rng.standard_normal((len(m.vertices), 1))
        path = folder / f"gen{i:03d}.{('ply', 'obj', 'stl', 'off')[i % 4]}"
        m.export(path)
        out.append(path)
        i += 1
    return out


def _run(args: list[str]) -> float:
    t = time.perf_counter()
    subprocess.run([sys.executable, "-m", "renderer.apps.preprocess_cli", *args], check=False,
                   capture_output=True, cwd=ROOT)
    return time.perf_counter() - t


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--count", type=int, default=200, help="meshes in the library (200)")
    p.add_argument("--sample", type=int, default=1,
                   help="one command per mesh for every K-th mesh only, its time times K (1)")
    p.add_argument("--jobs", type=int, default=0, help="the batch's --jobs (0: one a core)")
    p.add_argument("--ray", action="store_true",
                   help="also the batch on a local Ray cluster of --jobs CPUs (the 'ray' extra)")
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="tessera-batch-") as tmp:
        lib = Path(tmp) / "library"
        lib.mkdir()
        files = library(lib, args.count)
        singles = Path(tmp) / "singles"
        singles.mkdir()
        each = []
        for k, f in enumerate(files):
            if k % args.sample == 0:
                each.append(_run([str(f), "-o", str(singles / f"{f.stem}.tess"), "-q"]))
        one_each = sum(each) * args.sample
        out = Path(tmp) / "out"
        batch = _run([str(lib), "-O", str(out), "-q", "--jobs", str(args.jobs)])
        again = _run([str(lib), "-O", str(out), "-q", "--jobs", str(args.jobs)])
        on_ray = None
        if args.ray:
            on_ray = _run([str(lib), "-O", str(Path(tmp) / "ray"), "-q", "--ray", "local",
                           "--jobs", str(args.jobs or 2)])
        lines = [json.loads(x) for x in (out / "manifest.jsonl").read_text().splitlines()]
        first = lines[: len(files)]
        tris = sum(x.get("triangles", 0) for x in first)
        status = {s: sum(1 for x in first if x["status"] == s) for s in ("built", "failed")}
        print(f"{len(files)} meshes ({tris:,} triangles in all; {status['built']} built, "
              f"{status['failed']} failed)")
        print(f"  one command per mesh   {one_each:7.1f} s"
              + (f" (every {args.sample}th timed, x{args.sample})" if args.sample > 1 else "")
              + f", median {np.median(each):.2f} s a command")
        print(f"  one batch command      {batch:7.1f} s  ({batch / one_each:.2f}x)")
        print(f"  again, all up to date  {again:7.1f} s")
        if on_ray is not None:
            print(f"  on a local Ray cluster {on_ray:7.1f} s  ({on_ray / batch:.2f}x the batch in "
                  f"one process; Ray's start included)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
