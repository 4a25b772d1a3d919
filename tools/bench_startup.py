"""Startup: the wall time of short `tessera` commands, and the libraries each one loads.

Each command runs in a fresh interpreter (median of --runs, after one run that warms the numba and
shader caches): `tessera info` on a small asset, and `tessera render` of it at 256x256. Besides
the seconds, it lists which of the heavy libraries (numba, trimesh, pymetis, wgpu, glfw, imgui,
rendercanvas, matplotlib, pygfx) the command imported.

    python tools/bench_startup.py                      # this tree
    python tools/bench_startup.py --tree OLD --cli renderer.cli   # another checkout, side by side
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HEAVY = ("numba", "trimesh", "pymetis", "wgpu", "glfw", "imgui_bundle", "rendercanvas",
         "matplotlib", "pygfx")

CHILD = """
import json, sys
sys.argv = ["tessera", *json.loads(sys.argv[1])]
from {cli} import main
code = main(sys.argv[1:])
heavy = [m for m in {heavy!r} if m in sys.modules]
print("LOADED " + json.dumps(heavy), file=sys.stderr)
sys.exit(code)
"""


def run(tree: Path, cli: str, args: list[str]) -> tuple[float, list[str]]:
    env = dict(os.environ, PYTHONPATH=str(tree))
    code = CHILD.format(cli=cli, heavy=HEAVY)
    t0 = time.perf_counter()
    p = subprocess.run([sys.executable, "-c", code, json.dumps(args)], env=env, cwd=tree,
                       capture_output=True, text=True)
    seconds = time.perf_counter() - t0
    if p.returncode != 0:
        raise SystemExit(f"{args[0]} failed ({p.returncode}): {p.stderr.strip()[-400:]}")
    loaded = next(json.loads(ln[7:]) for ln in p.stderr.splitlines() if ln.startswith("LOADED "))
    return seconds, loaded


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tree", action="append", type=Path,
                    help="a checkout to time (repeat to compare; default: this one)")
    ap.add_argument("--cli", action="append",
                    help="the tessera command's module in each tree (renderer.apps.cli)")
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--asset", help="a .tess file (default: a 20,000-triangle sphere, built once)")
    args = ap.parse_args(argv)
    trees = args.tree or [ROOT]
    clis = args.cli or ["renderer.apps.cli"] * len(trees)
    if len(clis) != len(trees):
        ap.error("give one --cli per --tree")
    tmp = Path(tempfile.mkdtemp(prefix="tessera_startup_"))
    asset = args.asset
    if asset is None:
        asset = str(tmp / "sphere.tess")
        run(trees[0], clis[0], ["preprocess", "--builtin", "sphere", "--triangles", "20000",
                                "-o", asset, "-q"])
    commands = {
        "info": ["info", asset],
        "render": ["render", asset, "--size", "256x256", "-o", str(tmp / "r.png")],
    }
    for name, cmd in commands.items():
        times: dict[int, list[float]] = {i: [] for i in range(len(trees))}
        loaded: dict[int, list[str]] = {}
        for tree, cli in zip(trees, clis, strict=True):
            run(tree, cli, cmd)  # warm caches
        for _ in range(args.runs):  # alternate the trees: this machine drifts
            for i, (tree, cli) in enumerate(zip(trees, clis, strict=True)):
                s, loaded[i] = run(tree, cli, cmd)
                times[i].append(s)
        for i, tree in enumerate(trees):
            med = statistics.median(times[i])
            print(f"{name:<7} {med:6.3f} s median of {args.runs} "
                  f"({min(times[i]):.3f}-{max(times[i]):.3f})  {tree}  loads: "
                  f"{', '.join(loaded[i]) or 'none of them'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
