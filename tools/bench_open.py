"""Opening a `.tess` with and without the checks of its values (`preprocess/tess/checks.py`).

For each file: `TessFile(path)` (the container's parse alone: bytes and checksums, what
`read_tess` was before the checks) against `read_tess(path)` (that, then every value the GPU
follows), opened alternately in one process so that both meet the same load; then the checks
alone: at open (`check_asset`), a page's streams when it is first read (`check_page`) beside the
page's CRC32, and what `verify` adds (`check_nesting`, `check_positions`). Medians, milliseconds.

    python tools/bench_open.py out/rock.tess DamagedHelmet.tess --runs 30
"""

from __future__ import annotations

import argparse
import statistics
import time
import zlib

import numpy as np

from preprocess.tess import TessFile, read_tess
from preprocess.tess import checks


def median_ms(fn, runs: int, clock=time.process_time) -> float:
    fn()  # warm: the page cache, the imports
    times = []
    for _ in range(runs):
        t = clock()
        fn()
        times.append(clock() - t)
    return 1e3 * statistics.median(times)


def opens(path: str, runs: int) -> None:
    """Before and after, interleaved: wall and CPU medians."""
    got = {TessFile: ([], []), read_tess: ([], [])}
    for _ in range(2):
        TessFile(path).close()
        read_tess(path).close()
    for _ in range(runs):
        for opener, (wall, cpu) in got.items():
            w, c = time.perf_counter(), time.process_time()
            opener(path).close()
            wall.append(time.perf_counter() - w)
            cpu.append(time.process_time() - c)
    (bw, bc), (aw, ac) = ([1e3 * statistics.median(x) for x in got[k]] for k in got)
    print(f"  open: before {bw:.2f} ms wall, {bc:.2f} cpu; after {aw:.2f} ms wall, {ac:.2f} cpu; "
          f"{aw / bw:.3f}x wall, {ac / bc:.3f}x cpu")


def parts(path: str, runs: int) -> None:
    """The checks alone, and the CRC32 they stand beside."""
    with read_tess(path) as f:
        pages = [np.asarray(f.page(i)) for i in range(f.page_count)]
        args = (f.meta, f.sections, f.pages_array(), f.page_flags)
        ctx = checks.check_asset(*args)
        recs = checks.read_page_records(f.pages_array(), f.page_flags)
        nodes, groups = f.sections["bvh_nodes"], f.sections["groups"]
        ms = {
            "check_asset": median_ms(lambda: checks.check_asset(*args), runs),
            "check_page": median_ms(lambda: [checks.check_page(p, ctx) for p in pages], runs),
            "pages' CRC32": median_ms(lambda: [zlib.crc32(p) for p in pages], runs),
            "verify: nesting": median_ms(
                lambda: checks.check_nesting(nodes, groups, recs, ctx.leaf_node), runs),
            "verify: positions": median_ms(
                lambda: [checks.check_positions(p, ctx) for p in pages], runs),
        }
    print(f"  {f.page_count} pages, {len(recs.page):,} clusters; "
          + "; ".join(f"{k} {v:.2f} ms" for k, v in ms.items()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="+", help=".tess files")
    parser.add_argument("--runs", type=int, default=30, help="opens of each (default 30)")
    args = parser.parse_args()
    for path in args.files:
        print(path)
        opens(path, args.runs)
        parts(path, args.runs)


if __name__ == "__main__":
    main()
