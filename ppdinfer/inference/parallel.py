"""Blocks of proposals on several cores, results in block order.

The exact samplers draw their proposals in fixed-size blocks, each from its own random stream
(``ppdinfer._random.block_generator``), and the work on one block (propose, weigh, test)
depends on nothing else. So blocks can run on any number of threads and, collected in block
order, give the same draws as one core. Threads suffice where the work releases the GIL:
NumPy's generators fill their arrays without it and ppdinfer's numba kernels are compiled
``nogil``; a model whose simulator is pure Python gains little, and loses nothing but the
threads' small overhead.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Executor, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TypeVar

import numpy as np

from .._validation import positive_int

T = TypeVar("T")


def available_cores() -> int:
    """The cores this process may run on (its CPU affinity where the platform tells it).

    Examples
    --------
    >>> available_cores() >= 1
    True
    """
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def resolve_cores(cores: int | None) -> int:
    """``cores`` as a positive int: None means every available core.

    Examples
    --------
    >>> resolve_cores(2)
    2
    >>> resolve_cores(None) == available_cores()
    True
    """
    return available_cores() if cores is None else positive_int(cores, "cores")


#: Chunks of contiguous blocks per worker in one call of ``run``: a few, so that the workers finish
#: together, while each task is long enough that thread hand-offs cost little.
CHUNKS_PER_WORKER = 4


@contextmanager
def block_map(cores: int | None = None, executor: Executor | None = None) -> Iterator[Callable]:
    """A ``run(function, blocks)`` (``blocks`` a range) that works on blocks concurrently and yields results in block order.

    ``function(block)`` returns a tuple of arrays. ``run`` groups the blocks into contiguous
    chunks (``CHUNKS_PER_WORKER`` per worker), calls ``function`` on each block of a chunk in
    one task, and yields, chunk by chunk in block order, the tuple of the chunk's arrays
    concatenated part by part. With one core (and no ``executor``) everything runs in this
    thread. With more, a thread pool of ``cores`` workers, shut down on exit without waiting for
    queued chunks (so an interrupt stops within one chunk's work). A user's ``executor`` (for
    instance a ``ProcessPoolExecutor`` for a model whose simulator holds the GIL) is used as
    given and left open; ``function`` must then pickle.

    Examples
    --------
    >>> import numpy as np
    >>> with block_map(cores=2) as run:
    ...     chunks = list(run(lambda block: (np.array([block, block * block]),), range(5)))
    >>> np.concatenate([squares for (squares,) in chunks])
    array([ 0,  0,  1,  1,  2,  4,  3,  9,  4, 16])
    """
    if executor is not None:
        yield lambda function, blocks: _ordered(executor, _Chunk(function), _chunked(blocks, 2))
        return
    workers = resolve_cores(cores)
    if workers == 1:
        yield lambda function, blocks: map(_Chunk(function), _chunked(blocks, 1))
        return
    pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="ppdinfer-block")
    try:
        yield lambda function, blocks: _ordered(pool, _Chunk(function), _chunked(blocks, workers))
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


@dataclass(frozen=True)
class _Chunk:
    """``function`` over a run of blocks, its tuples concatenated part by part (picklable)."""

    function: Callable

    def __call__(self, blocks: range) -> tuple:
        parts = [self.function(block) for block in blocks]
        return tuple(np.concatenate(part) for part in zip(*parts))


def _chunked(blocks: range, workers: int) -> list[range]:
    """``blocks`` as contiguous ranges, ``CHUNKS_PER_WORKER`` per worker (one range for one worker)."""
    size = len(blocks) if workers == 1 else -(-len(blocks) // (CHUNKS_PER_WORKER * workers))
    return [blocks[start:start + size] for start in range(0, len(blocks), max(size, 1))]


def _ordered(executor: Executor, function: Callable[[range], T], chunks: Iterable[range]) -> Iterator[T]:
    """Submit every chunk, then yield the results in submission order (cancelling the rest on exit)."""
    futures = [executor.submit(function, chunk) for chunk in chunks]
    try:
        for future in futures:
            yield future.result()
    finally:
        for future in futures:
            future.cancel()
