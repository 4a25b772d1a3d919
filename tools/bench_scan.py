"""Scans at photogrammetry scale: a generated bumpy sphere of tens of millions of triangles,
written to a binary PLY in bands (never whole in memory, so that a 100M-triangle file needs no
more than a band), then preprocessed by the `preprocess` command as a user runs it.

For each size: the file's bytes, the wall time of the command, the load and build seconds from
the file's meta (and the load's steps), the command's peak resident memory (its own, from the
kernel: wait4's rusage of the child) in GB and in bytes a triangle, and the build's seconds per
million triangles. ``--verify`` runs the build's checks (`preprocess --verify`); ``--runs N``
takes the median of N commands (the numba caches warmed by a small build first).

    python tools/bench_scan.py                      # 20M triangles
    python tools/bench_scan.py --triangles 4M 20M --runs 3
    python tools/bench_scan.py --triangles 100M --verify --dir /var/tmp
    python tools/bench_scan.py --write-only --triangles 20M --dir /tmp   # just the file
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

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent


def parse_count(text: str) -> int:
    """'20M', '4.5M', '800k' or digits."""
    scale = {"k": 1_000, "m": 1_000_000, "g": 1_000_000_000}.get(text[-1:].lower(), 1)
    return int(float(text[:-1] if scale > 1 else text) * scale)


def write_scan(path: Path, triangles: int, band_rows: int = 256) -> int:
    """A closed-looking bumpy sphere as a latitude-longitude grid of n x n vertices (2 n (n - 1)
    triangles, about ``triangles``; open at the two poles) written as a binary little-endian PLY
    band by band. Returns the triangle count."""
    n = max(8, round((triangles / 2) ** 0.5))
    faces = 2 * n * (n - 1)
    u = np.linspace(0.0, 2.0 * np.pi, n, endpoint=False)
    v = np.linspace(0.001, np.pi - 0.001, n)
    header = (f"ply\nformat binary_little_endian 1.0\ncomment tools/bench_scan.py\n"
              f"element vertex {n * n}\nproperty float x\nproperty float y\nproperty float z\n"
              f"element face {faces}\nproperty list uchar int vertex_indices\nend_header\n")
    record = np.dtype([("count", "u1"), ("index", "<i4", (3,))])
    with path.open("wb") as f:
        f.write(header.encode())
        for r0 in range(0, n, band_rows):
            V = v[r0:r0 + band_rows, None]
            r = 1.0 + 0.02 * np.sin(7.0 * u[None, :]) * np.sin(9.0 * V)
            band = np.stack([r * np.sin(V) * np.cos(u), r * np.cos(V) + 0.0 * u,
                             r * np.sin(V) * np.sin(u)], axis=-1)
            f.write(band.astype("<f4").tobytes())
        cols = np.arange(n, dtype=np.int64)
        right = np.roll(cols, -1)
        for r0 in range(0, n - 1, band_rows):
            rows = np.arange(r0, min(r0 + band_rows, n - 1), dtype=np.int64)[:, None]
            a, b = rows * n + cols, rows * n + right
            c, d = b + n, a + n
            rec = np.empty((rows.shape[0], n, 2), record)
            rec["count"] = 3
            rec["index"][:, :, 0] = np.stack([a, c, b], axis=-1)
            rec["index"][:, :, 1] = np.stack([a, d, c], axis=-1)
            # all the first halves of a band, then its second halves: as one grid's faces
            f.write(np.ascontiguousarray(rec.transpose(0, 2, 1)).tobytes())
    return faces


def run_command(source: Path, out: Path, verify: bool, chunks: int | None = None) -> dict:
    """One `preprocess` command in a child process: wall seconds, the meta's seconds, peak RSS
    (chunks: `--chunks`, None: the command's default)."""
    args = [str(BIN / "preprocess"), str(source), "-o", str(out), "-q"]
    if verify:
        args.append("--verify")
    if chunks is not None:
        args += ["--chunks", str(chunks)]
    t = time.perf_counter()
    with tempfile.TemporaryFile("w+") as err:
        child = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=err)
        _, status, usage = os.wait4(child.pid, 0)  # this child's own peak, not all children's
        wall = time.perf_counter() - t
        code = os.waitstatus_to_exitcode(status)
        child.returncode = code
        if code != 0:
            err.seek(0)
            raise SystemExit(f"preprocess failed ({code}): {err.read().strip()}")
    peak = usage.ru_maxrss
    from preprocess.tess import TessFile

    with TessFile(out) as tess:
        meta = tess.meta
    seconds = {k: v for k, v in meta["seconds"].items() if not k.startswith("load.")}
    steps = {k[5:]: v for k, v in meta["seconds"].items() if k.startswith("load.")}
    return {"wall": wall, "seconds": seconds, "load_seconds": steps,
            "peak_gb": peak * 1024 / 1e9, "triangles": meta["input_triangles"],
            "chunks": meta.get("chunks", 1)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--triangles", nargs="+", default=["20M"],
                    help="sizes to generate (20M, 100M, 4.5M, 800k)")
    ap.add_argument("--runs", type=int, default=1, help="commands a size (median quoted)")
    ap.add_argument("--verify", action="store_true", help="preprocess --verify")
    ap.add_argument("--chunks", type=int, nargs="+", default=[None],
                    help="preprocess --chunks N, each in turn on every size (1: whole; default: "
                         "the command's choice)")
    ap.add_argument("--dir", type=Path, default=None,
                    help="where the PLY and .tess files go (default: a temporary folder)")
    ap.add_argument("--keep", action="store_true", help="keep the files")
    ap.add_argument("--write-only", action="store_true", help="write the PLY files and stop")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(dir=args.dir, prefix="scan-"))
    try:
        if not args.write_only:  # the numba caches, so that no run below pays for compiling
            small = work / "warm.ply"
            write_scan(small, 20_000)
            run_command(small, work / "warm.tess", args.verify)
        for size in args.triangles:
            count = parse_count(size)
            ply = work / f"scan-{size}.ply"
            t = time.perf_counter()
            faces = write_scan(ply, count)
            print(f"{ply.name}: {faces:,} triangles, {ply.stat().st_size / 1e6:.0f} MB "
                  f"(written in {time.perf_counter() - t:.1f} s)", flush=True)
            if args.write_only:
                continue
            for chunks in args.chunks:
                _report(args, [run_command(ply, work / f"scan-{size}.tess", args.verify, chunks)
                               for _ in range(args.runs)], faces)
            if not args.keep:
                ply.unlink()
                (work / f"scan-{size}.tess").unlink(missing_ok=True)
    finally:
        if not args.keep and not args.write_only:
            for f in work.glob("*"):
                f.unlink()
            work.rmdir()
        else:
            print(f"files in {work}")


def _report(args: argparse.Namespace, runs: list[dict], faces: int) -> None:
    """One line of figures (JSON) for the runs of one size and chunk count: medians, and the
    peak of them all."""
    median = sorted(runs, key=lambda r: r["wall"])[len(runs) // 2]
    sec = median["seconds"]
    build = sum(v for k, v in sec.items() if k not in ("load", "write"))
    steps = ", ".join(f"{k} {v:.2f}" for k, v in median["load_seconds"].items())
    peak = max(r["peak_gb"] for r in runs)
    print(json.dumps({
        "triangles": faces, "runs": len(runs),
        "wall_s": round(statistics.median(r["wall"] for r in runs), 2),
        "load_s": round(sec["load"], 2), "build_s": round(build, 2),
        "build_s_per_million": round(build / faces * 1e6, 3),
        "peak_gb": round(peak, 2), "bytes_per_triangle": round(peak * 1e9 / faces),
        "verify": args.verify, "chunks": median["chunks"]}))
    print(f"  load steps: {steps}; stages: "
          + ", ".join(f"{k} {v:.1f}" for k, v in sec.items()), flush=True)


if __name__ == "__main__":
    os.environ.setdefault("PYTHONPATH", str(ROOT))
    sys.path.insert(0, str(ROOT))
    main()
