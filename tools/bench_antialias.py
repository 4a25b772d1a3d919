"""Anti-aliasing of sub-pixel geometry (issue 34, item 4): a grid of many small spheres framed
whole, where a plain frame aliases into moiré, drawn plain, supersampled (`render(ssaa=2)`)
and with temporal accumulation (`render_converged(accumulate=K)`), each compared with the 4 x 4
supersampled frame (`ssaa=4`, its default tau: the cut of one output pixel, as every row's).

Printed per row: PSNR of the lit RGB over the whole image (background included) against the
reference, and the seconds the row took (its frames, readback and filtering; the first row
also compiles the shaders, so the reference is drawn once before anything is timed). The
sphere is the built-in one (`preprocess --builtin sphere`), built into a temporary folder;
shadows are off (a supersampled frame marks finer shadow pages: the comparison is of the
sampling alone).

    python tools/bench_antialias.py                            # 65,536 spheres at 512 x 512
    python tools/bench_antialias.py --instances 1000000 --frames 16 32
    python tools/bench_antialias.py --images /tmp/aa.png       # the rows side by side
    python tools/bench_antialias.py --cost 9                   # the accumulate pass's cost

`--cost R`: what temporal accumulation adds to a frame, on the sphere alone filling the view
(every pixel covered): the accumulate pass alone, without clipping (a still frame) and with it
(a frame where something moved), and resolve beside it, each recorded, submitted and waited
for R times (`renderer.bench.measure.pass_alone_ms`), three rounds alternating; medians.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # this checkout, not the installed one


def _psnr(a: np.ndarray, b: np.ndarray) -> float:
    from renderer.bench.quality import psnr_from

    d = a[..., :3].astype(np.float64) - b[..., :3].astype(np.float64)
    return psnr_from(float((d * d).sum()), d.size)


def _sphere(folder: Path, triangles: int) -> str:
    from assets import builtin_mesh
    from preprocess.build import build_file

    path = folder / "sphere.tess"
    build_file(builtin_mesh("sphere", triangles), path)
    return str(path)


def measure(tess: str, instances: int, size: int, frames: list[int], truth: int = 0,
            reference_tau: float | None = None) -> list[tuple]:
    """[(row name, seconds, PSNR dB, colour image)], the reference (ssaa 4) last. `truth` N:
    also the PSNR against ssaa N (more samples than the reference: how far each row, the
    reference too, is from the box filter both estimate). `reference_tau`: the references
    drawn by every instance itself (no aggregate proxies) at that tau in their own frame's
    pixels (small: nearer full detail, whose coverage the instances' coarse roots lose), and
    the plain and temporal rows also drawn without proxies, side by side."""
    from renderer.camera import Camera
    from renderer.options import RenderOptions
    from renderer.renderer import Renderer

    r = Renderer(size, size, options=RenderOptions(shadows=False))
    t = time.perf_counter()
    r.add_grid(r.load(tess), instances)
    print(f"{instances:,} spheres placed in {time.perf_counter() - t:.1f} s", flush=True)
    cam = Camera.framing(*r.bounds())  # the iso view of `tessera render`
    ref = r
    if reference_tau is not None:
        ref = Renderer(size, size, options=RenderOptions(shadows=False, aggregates=False),
                       ctx=r.ctx)
        ref.add_grid(ref.load(tess), instances)
    first = ref.render(cam, ssaa=4, tau=reference_tau)  # untimed: the shaders compile here
    if first.stats.overflow:
        raise SystemExit(f"the reference overflowed its lists ({first.stats.overflow}): a "
                         "larger --reference-tau")
    reference = first.color
    best = ref.render(cam, ssaa=truth, tau=reference_tau).color if truth else None

    def row(name: str, draw) -> tuple:
        t = time.perf_counter()
        color = draw().color
        seconds = time.perf_counter() - t
        against = f"  {_psnr(color, best):6.2f} dB" if truth else ""
        print(f"  {name:<24} {seconds:7.2f} s  {_psnr(color, reference):6.2f} dB{against}",
              flush=True)
        return name, seconds, _psnr(color, reference), color

    print(f"  {'':<24} {'time':>9}  PSNR against ssaa 4"
          + (f", against ssaa {truth}" if truth else ""))
    rows = [row("plain", lambda: r.render(cam)),
            row("ssaa 2", lambda: r.render(cam, ssaa=2))]
    rows += [row(f"temporal, {k} frames", lambda k=k: r.render_converged(cam, accumulate=k))
             for k in frames]
    if reference_tau is not None:
        rows += [row("plain, no proxies", lambda: ref.render(cam)),
                 row(f"temporal {frames[-1]}, no proxies",
                     lambda: ref.render_converged(cam, accumulate=frames[-1])),
                 row("ssaa 4 (the reference)", lambda: ref.render(cam, ssaa=4, tau=reference_tau))]
    else:
        rows.append(row("ssaa 4 (the reference)", lambda: r.render(cam, ssaa=4)))
    return rows


def cost(tess: str, size: int, repeats: int) -> None:
    """Print the accumulate pass's time alone, still and clipping, beside resolve's (`--cost`)."""
    import statistics
    from functools import partial

    from renderer.bench.measure import pass_alone_ms
    from renderer.camera import Camera
    from renderer.options import RenderOptions
    from renderer.renderer import Renderer

    r = Renderer(size, size, options=RenderOptions(shadows=False))
    r.add_instance(r.load(tess))
    cam = Camera.framing(*r.bounds(), fill=1.9)  # the sphere over the whole image
    r.render(cam, accumulate=16)  # what the passes read, the history made
    acc = r.frame.accumulate
    passes = {"resolve": r.frame.resolve.encode,
              "accumulate, still": partial(acc.encode, frames=16, reset=False, moving=False),
              "accumulate, clipping": partial(acc.encode, frames=16, reset=False, moving=True)}
    ms: dict[str, list[float]] = {name: [] for name in passes}
    for _ in range(3):  # alternate: the machine's noise falls on every pass alike
        for name, encode in passes.items():
            ms[name].append(pass_alone_ms(r, encode, repeats))
    for name, m in ms.items():
        m = statistics.median(m)
        print(f"{size}x{size} {name:<22} {m:7.2f} ms: {1e6 * m / size**2:5.1f} ns a pixel "
              f"(every pixel covered; {r.ctx.description})")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--instances", type=int, default=65536, help="spheres on the grid (65536)")
    p.add_argument("--size", type=int, default=512, help="image side in pixels (512)")
    p.add_argument("--triangles", type=int, default=2000,
                   help="the sphere's triangles at full detail (2000)")
    p.add_argument("--frames", type=int, nargs="+", default=[4, 16, 32],
                   help="temporal accumulation's frames, a row each (4 16 32)")
    p.add_argument("--truth", type=int, default=0, metavar="N",
                   help="also compare every row with ssaa N (e.g. 8: nearer the box filter "
                        "than the 4 x 4 reference)")
    p.add_argument("--reference-tau", type=float, metavar="T",
                   help="draw the references without aggregate proxies at this tau (in their "
                        "frame's pixels; e.g. 0.1, nearer full detail) and add rows without "
                        "proxies beside")
    p.add_argument("--images", help="write the rows side by side to this PNG")
    p.add_argument("--cost", type=int, metavar="R",
                   help="instead: the accumulate pass's time alone, R repeats a round")
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory() as folder:
        tess = _sphere(Path(folder), args.triangles)
        if args.cost:
            cost(tess, args.size, args.cost)
            return 0
        rows = measure(tess, args.instances, args.size, args.frames, args.truth,
                       args.reference_tau)
    if args.images:
        from renderer.results import write_png

        write_png(args.images, np.concatenate([c for *_, c in rows], axis=1))
        print(f"wrote {args.images}: " + ", ".join(name for name, *_ in rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
