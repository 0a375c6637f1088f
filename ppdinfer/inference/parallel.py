"""Chunks of blocks of proposals on several cores, results in block order.

The exact samplers draw their proposals in fixed-size blocks, each from its own random stream
(``ppdinfer.rng.block_generator``), and the work on one block (propose, weigh, test)
depends on nothing else. So blocks can run on any number of threads and, collected in block
order, give the same draws as one core. Threads suffice where the work releases the GIL:
NumPy's generators fill their arrays without it and ppdinfer's numba kernels are compiled
``nogil``; a model whose simulator is pure Python gains little, and loses nothing but the
threads' small overhead.
"""

from __future__ import annotations

import multiprocessing
import os
import threading
import warnings
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Executor, ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

from ..validation import positive_int


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
    """``cores`` as a positive int, at most the available cores (more are capped, with a warning: extra
    threads would only compete for the same cores, and thousands of them cost minutes and gigabytes).
    None means every available core at the top level (the main
    thread of a process that no multiprocessing parent started), and 1 inside a worker thread or a
    child process: that caller is parallel already, and threads of its own in every worker would
    only compete for the same cores.

    Examples
    --------
    >>> resolve_cores(1)
    1
    >>> resolve_cores(None) == available_cores()        # here, at the top level
    True
    >>> from concurrent.futures import ThreadPoolExecutor
    >>> ThreadPoolExecutor(1).submit(resolve_cores, None).result()
    1
    """
    if cores is not None:
        cores, available = positive_int(cores, "cores"), available_cores()
        if cores > available:
            warnings.warn(
                f"cores={cores} exceeds the {available} cores available: using {available}", UserWarning, stacklevel=4
            )
            return available
        return cores
    top_level = threading.current_thread() is threading.main_thread() and multiprocessing.parent_process() is None
    return available_cores() if top_level else 1


_HUGE_PAGE_ADVICE = threading.Lock()


def empty_for_threads(shape, dtype) -> np.ndarray:
    """``np.empty(shape, dtype)`` for several threads to fill, in memory of ordinary 4 KiB pages.

    numpy asks Linux for transparent huge pages on arrays of 4 MiB and more. Where the host of a
    virtual machine backs its memory lazily (as on the machines this project is measured on),
    the first touch of a huge page costs milliseconds, and threads touching new huge pages at
    once wait on each other: there, 40 MB took 17-92 ms to fill on one thread, against 19 ms in
    small pages, which two threads fill in 12 ms. This array is allocated without that advice
    (the kernel still uses huge pages where it is set to do so always).

    Examples
    --------
    >>> array = empty_for_threads((1_000_000, 2), np.float64)
    >>> array.shape, array.dtype
    ((1000000, 2), dtype('float64'))
    """
    set_advice = getattr(np._core.multiarray, "_set_madvise_hugepage", None)  # private: absent, plain np.empty
    if set_advice is None:
        return np.empty(shape, dtype)
    with _HUGE_PAGE_ADVICE:
        previous = set_advice(False)
        try:
            return np.empty(shape, dtype)
        finally:
            set_advice(previous)


#: Chunks of contiguous blocks per worker when the work is known in advance: a few, so that the
#: workers finish together, while each task is long enough that thread hand-offs cost little.
CHUNKS_PER_WORKER = 4
#: Chunks submitted ahead of the one being collected, per worker: enough that no worker waits for
#: the next chunk while the caller looks at a result.
LOOKAHEAD_PER_WORKER = 2


class BlockPool:
    """Runs a function over chunks of blocks concurrently and gives the results back in block order.

    With one core (and no ``executor``) every chunk runs in the calling thread. With more, on a
    thread pool of ``cores`` workers, shut down on exit without waiting for queued chunks (so an
    interrupt stops within one chunk's work). A user's ``executor`` (for instance a
    ``ProcessPoolExecutor`` for a model whose simulator holds the GIL) is used as given and left
    open; the function must then pickle, and ``workers`` counts the available cores.
    ``shares_memory`` says whether the function runs in this process (in the calling thread, or on
    the pool's or a user's threads), where it may write into arrays the caller holds.

    Examples
    --------
    >>> import numpy as np
    >>> with BlockPool(cores=2) as pool:
    ...     results = list(pool.map(lambda block: (np.array([block, block * block]),), pool.even_chunks(range(5))))
    >>> [list(chunk) for chunk, _ in results][:2]
    [[0], [1]]
    >>> np.concatenate([squares for _, (squares,) in results])
    array([ 0,  0,  1,  1,  2,  4,  3,  9,  4, 16])
    """

    def __init__(self, cores: int | None = None, executor: Executor | None = None):
        if executor is not None and not callable(getattr(executor, "submit", None)):
            raise ValueError(
                f"executor must be a concurrent.futures.Executor (with a submit method), e.g. "
                f"ThreadPoolExecutor(4), or None for the sampler's own threads; got {executor!r}"
            )
        self.workers = available_cores() if executor is not None else resolve_cores(cores)
        self.shares_memory = executor is None or isinstance(executor, ThreadPoolExecutor)
        self._own = executor is None and self.workers > 1
        self._executor = (
            ThreadPoolExecutor(max_workers=self.workers, thread_name_prefix="ppdinfer-block") if self._own else executor
        )

    def __enter__(self) -> BlockPool:
        return self

    def __exit__(self, *exc_info) -> None:
        if self._own:
            self._executor.shutdown(wait=True, cancel_futures=True)

    def even_chunks(self, blocks: range) -> list[range]:
        """``blocks`` as contiguous ranges, ``CHUNKS_PER_WORKER`` per worker (one range for one core),
        their lengths differing by one at most, so that the workers finish together.

        Examples
        --------
        >>> [len(chunk) for chunk in BlockPool(cores=2).even_chunks(range(62))]
        [8, 8, 8, 8, 8, 8, 7, 7]
        """
        count = 1 if self._executor is None else min(CHUNKS_PER_WORKER * self.workers, len(blocks))
        size, longer = divmod(len(blocks), max(count, 1))  # the first `longer` chunks have one block more
        starts = [k * size + min(k, longer) for k in range(count + 1)]
        return [blocks[start:stop] for start, stop in zip(starts[:-1], starts[1:], strict=True) if stop > start]

    def map(self, function: Callable[[int], tuple], chunks: Iterable[range]) -> Iterator[tuple[range, tuple]]:
        """``(chunk, parts)`` for each chunk, in order: ``parts`` is the tuple of arrays that
        ``function(block)`` returns, concatenated part by part over the chunk's blocks.

        ``chunks`` is read lazily, ``LOOKAHEAD_PER_WORKER`` chunks per worker ahead of the one
        being collected, so a caller can size the next chunks from the results so far (and stop
        reading: the chunks submitted and not started are then cancelled).
        """
        run_chunk = _Chunk(function)
        if self._executor is None:
            yield from ((chunk, run_chunk(chunk)) for chunk in chunks)
            return
        chunks = iter(chunks)
        pending = deque()
        try:
            while True:
                while len(pending) < LOOKAHEAD_PER_WORKER * self.workers:
                    chunk = next(chunks, None)
                    if chunk is None:
                        break
                    pending.append((chunk, self._executor.submit(run_chunk, chunk)))
                if not pending:
                    return
                chunk, future = pending.popleft()
                yield chunk, future.result()
        finally:
            for _, future in pending:
                future.cancel()


@dataclass(frozen=True)
class _Chunk:
    """``function`` over a run of blocks, its tuples concatenated part by part (picklable)."""

    function: Callable

    def __call__(self, blocks: range) -> tuple:
        parts = [self.function(block) for block in blocks]
        return tuple(np.concatenate(part) for part in zip(*parts))
