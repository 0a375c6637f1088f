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
from typing import TypeVar

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


@contextmanager
def block_map(cores: int | None = None, executor: Executor | None = None) -> Iterator[Callable]:
    """A ``map(function, blocks)`` that runs blocks concurrently and yields results in block order.

    With one core (and no ``executor``) it is the built-in ``map``, with no thread at all. With
    more, a thread pool of ``cores`` workers, shut down on exit without waiting for queued blocks
    (so an interrupt stops within one block's work). A user's ``executor`` (for instance a
    ``ProcessPoolExecutor`` for a model whose simulator holds the GIL) is used as given and left
    open; its work must then pickle.

    Examples
    --------
    >>> with block_map(cores=2) as run:
    ...     list(run(lambda block: block * block, range(5)))
    [0, 1, 4, 9, 16]
    """
    if executor is not None:
        yield lambda function, blocks: _ordered(executor, function, blocks)
        return
    workers = resolve_cores(cores)
    if workers == 1:
        yield map
        return
    pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="ppdinfer-block")
    try:
        yield lambda function, blocks: _ordered(pool, function, blocks)
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def _ordered(executor: Executor, function: Callable[[int], T], blocks: Iterable[int]) -> Iterator[T]:
    """Submit every block, then yield the results in submission order (cancelling the rest on exit)."""
    futures = [executor.submit(function, block) for block in blocks]
    try:
        for future in futures:
            yield future.result()
    finally:
        for future in futures:
            future.cancel()
