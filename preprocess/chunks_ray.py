"""The chunks of one mesh built as tasks on a Ray cluster (`preprocess big.ply --chunks N --ray
ADDRESS`): each chunk's sub-mesh goes to a worker (`build_one_chunk`), its levels come back as
arrays (`preprocess.dag.DagPart`), and the levels above the chunks are built here, on the driver,
as in the local chunked build (`preprocess.chunks`): the same DAG, whatever ran where.

A worker that dies (killed, out of memory, its node gone) has its chunk built again by Ray (up
to MAX_TRIES in all); one that fails every time ends the build with one line naming the chunk.
At most WINDOW_PER_CPU chunks a CPU of the cluster are in flight, so that the driver does not
hold every chunk's sub-mesh at once. docs/ARCHITECTURE.md ("The chunked build") says what each
side holds and sends.
"""

from __future__ import annotations

import dataclasses
from collections import deque
from collections.abc import Iterable, Iterator

from preprocess.batch import MAX_TRIES, ray_init
from preprocess.chunks import Chunk, ChunkRunner, build_one_chunk
from preprocess.config import BuildConfig
from preprocess.dag import DagPart
from preprocess.mesh import MeshError

WINDOW_PER_CPU = 2


def _chunk_task(chunk: Chunk, config: BuildConfig, coarsest: int) -> DagPart:
    """`build_one_chunk` in a Ray worker (numba's threads: the task's CPUs; numpy's errors as
    the command's own)."""
    import numba
    import numpy as np

    numba.set_num_threads(max(1, config.threads))
    np.seterr(all="ignore")
    return build_one_chunk(chunk, config, coarsest)


def ray_runner(address: str, jobs: int = 0) -> ChunkRunner:
    """A chunk runner (`preprocess.chunks.build_chunked`'s `runner`) on the Ray cluster at
    `address` ("local": one of `jobs` CPUs, 0 = every core, started here; "auto" and host:port
    as `preprocess --ray`). Each task takes `config.threads` CPUs (0: one)."""

    def run(chunks: Iterable[Chunk], config: BuildConfig, coarsest: int
            ) -> Iterator[tuple[Chunk, DagPart]]:
        try:
            ray, started = ray_init(address, jobs)
        except Exception as e:  # BatchError: not installed, not reached
            raise MeshError(str(e)) from None
        cpus = max(1, config.threads)
        cfg = dataclasses.replace(config, threads=cpus)
        task = ray.remote(num_cpus=cpus, max_retries=MAX_TRIES - 1)(_chunk_task)
        window = max(2, WINDOW_PER_CPU * int(ray.cluster_resources().get("CPU", 1)) // cpus)
        flight: deque = deque()
        try:
            for i, chunk in enumerate(chunks):
                flight.append((i, chunk, task.remote(chunk, cfg, coarsest)))
                chunk.mesh = None  # sent: the driver keeps only its ids
                while len(flight) >= window:
                    yield _result(ray, *flight.popleft())
            while flight:
                yield _result(ray, *flight.popleft())
        except BaseException:
            for _, _, ref in flight:
                ray.cancel(ref, force=True)
            raise
        finally:
            if started:
                ray.shutdown()

    return run


def _result(ray, i: int, chunk: Chunk, ref) -> tuple[Chunk, DagPart]:
    try:
        return chunk, ray.get(ref)
    except ray.exceptions.RayError as e:  # its worker died every time, or the task raised
        cause = getattr(e, "cause", None)
        if isinstance(cause, MeshError):
            raise cause from None
        raise MeshError(f"chunk {i + 1}: its Ray worker failed {MAX_TRIES} times "
                        f"({type(e).__name__})") from None
