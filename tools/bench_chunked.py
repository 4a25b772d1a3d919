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
        rows[chunks] = [r for r in quality.measure_quality(out, quality.VIEWS, args.taus,
                                                             args.size)
                        if r["tau"] is not None]
    print(f"{'view':>5} {'tau':>4} {'chunks':>6} {'tri/px':>8} {'whole':>8} {'ratio':>6} "
          f"{'PSNR':>7} {'whole':>7} {'diff dB':>7}")
    for chunks in args.chunks:
        for whole, part in zip(rows[1], rows[chunks], strict=True):
            ratio = part["tri_per_px"] / max(whole["tri_per_px"], 1e-9)
            print(f"{whole['view']:>5} {whole['tau']:>4g} {chunks:>6} {part['tri_per_px']:8.3f} "
                  f"{whole['tri_per_px']:8.3f} {ratio:6.3f} {part['psnr']:7.2f} "
                  f"{whole['psnr']:7.2f} {part['psnr'] - whole['psnr']:+7.2f}")
    print(f"files in {work}")


if __name__ == "__main__":
    os.environ.setdefault("PYTHONPATH", str(ROOT))
    main()
