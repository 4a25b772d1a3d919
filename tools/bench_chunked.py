"""Chunked against whole builds of one mesh (issue 37): a generated bumpy-sphere scan
(`bench_scan.write_scan`, 4M triangles by default) preprocessed whole and in chunks by the
`preprocess` command (`--verify` on both), then drawn by the quality benchmark
(`renderer.bench.quality.measure_quality`: its views and taus) from each file. Prints, per view
and tau, triangles per covered pixel and PSNR against the 4x4 supersampled full-detail frame for
both, and their ratios; and each build's seconds and peak memory.

    python tools/bench_chunked.py                       # 4M triangles, 4 chunks
    python tools/bench_chunked.py --triangles 1M --chunks 2 4 --size 256
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    sys.path.insert(0, str(ROOT))
    sys.path.insert(0, str(ROOT / "tools"))
    from bench_scan import parse_count, run_command, write_scan

    from renderer.bench import quality

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--triangles", default="4M", help="the scan's size (4M, 800k)")
    ap.add_argument("--chunks", type=int, nargs="+", default=[4], help="chunk counts to compare")
    ap.add_argument("--size", type=int, default=256, help="image size (square)")
    ap.add_argument("--taus", type=float, nargs="+", default=list(quality.TAUS))
    ap.add_argument("--no-verify", action="store_true", help="skip preprocess --verify")
    ap.add_argument("--dir", type=Path, default=None, help="where the files go (kept)")
    ap.add_argument("--images", type=Path, default=None,
                    help="a side-by-side PNG per view and build in this folder")
    args = ap.parse_args()
    work = args.dir or Path(tempfile.mkdtemp(prefix="chunked-"))
    work.mkdir(parents=True, exist_ok=True)
    ply = work / f"scan-{args.triangles}.ply"
    if not ply.exists():
        write_scan(ply, parse_count(args.triangles))
    rows: dict[int, list[dict]] = {}
    for chunks in [1, *args.chunks]:
        out = work / f"scan-{args.triangles}-{chunks}.tess"
        built = run_command(ply, out, not args.no_verify, chunks)
        build = sum(v for k, v in built["seconds"].items() if k not in ("load", "write"))
        print(json.dumps({"chunks": chunks, "build_s": round(build, 2),
                          "peak_gb": round(built["peak_gb"], 2),
                          "verified": not args.no_verify}), flush=True)
        images = None if args.images is None else args.images / f"chunks-{chunks}"
        rows[chunks] = [r for r in quality.measure_quality(out, quality.VIEWS, args.taus,
                                                             args.size, images=images)
                        if r["tau"] is not None]
    print(f"{'view':>5} {'tau':>4} {'chunks':>6} {'tri/px':>8} {'whole':>8} {'ratio':>6} "
          f"{'PSNR':>7} {'whole':>7} {'diff dB':>7}")
    for chunks in args.chunks:
        for whole, part in zip(rows[1], rows[chunks], strict=True):
            ratio = part["tri_per_px"] / max(whole["tri_per_px"], 1e-9)
            print(f"{whole['view']:>5} {whole['tau']:>4g} {chunks:>6} {part['tri_per_px']:8.3f} "
                  f"{whole['tri_per_px']:8.3f} {ratio:6.3f} {part['psnr']:7.2f} "
                  f"{whole['psnr']:7.2f} {part['psnr'] - whole['psnr']:+7.2f}")
    # pooled over the views per tau, as the quality suite pools them: all triangles over all
    # covered pixels, the PSNR of all squared errors
    print(f"{'all':>5} {'tau':>4} {'chunks':>6} {'tri/px':>8} {'whole':>8} {'ratio':>6} "
          f"{'PSNR':>7} {'whole':>7} {'ratio':>7}")
    for chunks in args.chunks:
        for tau in args.taus:
            a, b = (_pooled([r for r in rows[c] if r["tau"] == tau]) for c in (chunks, 1))
            print(f"{'all':>5} {tau:>4g} {chunks:>6} {a[0]:8.3f} {b[0]:8.3f} {a[0] / b[0]:6.3f} "
                  f"{a[1]:7.2f} {b[1]:7.2f} {a[1] / b[1]:7.3f}")
    print(f"files in {work}")


def _pooled(rows: list[dict]) -> tuple[float, float]:
    """(triangles per covered pixel, PSNR) of rows pooled."""
    from renderer.bench.quality import psnr_from

    pixels = sum(r["triangles"] / max(r["tri_per_px"], 1e-12) for r in rows)
    return (sum(r["triangles"] for r in rows) / pixels,
            psnr_from(sum(r["sse"] for r in rows), sum(r["psnr_samples"] for r in rows)))


if __name__ == "__main__":
    os.environ.setdefault("PYTHONPATH", str(ROOT))
    main()
