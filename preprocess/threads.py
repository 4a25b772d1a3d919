"""Work split into spans for a thread pool: the loader's numba kernels run without the GIL, one
span a call (`run_spans`), as many threads as numba is told to use (a batch's workers share the
cores out: `preprocess.batch`)."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import numpy as np

# below this many items a span is not worth a thread
MIN_SPAN = 1 << 16


def thread_count(threads: int | None = None) -> int:
    """``threads``, or numba's thread count (all cores unless set lower)."""
    if threads:
        return threads
    import numba

    return numba.get_num_threads()


def balanced_spans(offsets: np.ndarray, threads: int | None = None,
                   parts_per_thread: int = 1) -> list[tuple[int, int]]:
    """Spans (lo, hi) of 0..len(offsets)-1 with about equal work each, item i's work being
    offsets[i + 1] - offsets[i] (a non-decreasing int array; ``arange`` for equal items):
    ``parts_per_thread`` a thread, fewer where the items are few."""
    n = offsets.shape[0] - 1
    parts = max(1, min(thread_count(threads) * parts_per_thread, n // MIN_SPAN))
    if parts == 1:
        return [(0, n)]
    targets = np.linspace(offsets[0], offsets[-1], parts + 1)[1:-1]
    cuts = np.searchsorted(offsets, targets)
    bounds = np.unique(np.concatenate([[0], np.clip(cuts, 0, n), [n]]))
    return [(int(a), int(b)) for a, b in itertools.pairwise(bounds.tolist())]


def run_spans(work: Callable[[int, int], object], spans: list[tuple[int, int]],
              threads: int | None = None) -> list:
    """work(lo, hi) for every span, on a pool of ``threads`` (`thread_count`) when there is more
    than one span; the results in span order."""
    if len(spans) == 1:
        return [work(*spans[0])]
    with ThreadPoolExecutor(max_workers=min(len(spans), thread_count(threads))) as pool:
        return list(pool.map(lambda span: work(*span), spans))
