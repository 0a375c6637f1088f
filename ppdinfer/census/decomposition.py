"""A state's fit in parallel pieces: the units of one geography level (e.g. counties) moved at once, exactly.

:func:`~ppdinfer.census.people.sample_people` with ``decompose=Decomposition("County")`` runs, before each of its
sweeps over the whole table, ``sweeps`` *local* sweeps of every county in parallel (threads, or the tasks of an
executor whose workers share this process's memory, such as dask's ``Client(processes=False)``). A local sweep
makes only the moves that keep every cell's sum over the county: exchanges of people between two of its leaves
that keep their cell (no turn), line draws, bump trades and relocations, each with its partner leaf drawn inside
the county, the hyperparameters held. Swaps are left to the whole-table sweep: a swap's first half is applied to every level before
its second takes it back, so for a moment it changes the state's sums, which another county's moves read.

Why the posterior is exactly the whole state's
----------------------------------------------
Such a move changes the sums of its two leaves' ancestors below the county and nothing above: not the county's
own cells, not the state's, not a bound above the leaves' common ancestor. Its Metropolis-Hastings ratio reads
only the county's leaves, the county's measurements below it and the hyperparameters, none of which another
county's local moves change. So the counties' local sweeps commute: running them at once gives the draws that
running them one after another would, and each is a Metropolis-Hastings kernel that keeps the posterior, as is
their composition with the whole-table sweep that follows (it makes every other move: within a leaf, between
counties, spreads and flips, which change the state's sums, and the hyperparameters). Each county has its own
random stream (the chain's seed spawned per county), so the draws do not depend on the executor or the order in
which the counties finish: ``executor=None`` (one after another, in the chain's thread) gives the same draws.

What it does not do: ship a county's table to another machine. The counties share one table in memory (a
process on many threads); a cluster of processes would need each county's cells moved to its worker and back
every round.
"""

from __future__ import annotations

import itertools
from concurrent.futures import Executor, Future
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from ..validation import positive_int

if TYPE_CHECKING:
    from .grouped_release import GroupedRelease
    from .people import PersonMoves

__all__ = ["Decomposition", "submit_shared"]


@dataclass(frozen=True)
class Decomposition:
    """The units of ``level`` moved in parallel between whole-table sweeps (module docstring).

    Attributes
    ----------
    level : str
        A level of the release's geography above its leaves (e.g. ``"County"``).
    sweeps : int
        Local sweeps of every unit before each whole-table sweep.
    moves : PersonMoves, optional
        The local moves' rates: its ``exchanges`` (never turning), ``lines``, ``bumps`` and ``relocations``; its other
        moves change cells' sums over the unit (a swap for a moment) and are left to the whole-table sweep, and its
        ``narrow_residuals`` is not read (the units share the fit's residuals). Default ``PersonMoves(lines=1.0)``.
    executor : concurrent.futures.Executor, optional
        Runs the units' local sweeps; its tasks must share this process's memory (a ``ThreadPoolExecutor``,
        ``distributed.Client(processes=False, memory_limit=0).get_executor(pure=False)``: no memory limit, since
        the workers' process holds the table), which :meth:`check_executor` tests at each fit's start. Each task
        carries only a key (:func:`submit_shared`). Default: one after another in the chain's thread (the same
        draws).

    Examples
    --------
    >>> Decomposition("County", sweeps=2).sweeps
    2
    """

    level: str
    sweeps: int = 1
    moves: PersonMoves | None = None
    executor: Executor | None = field(default=None, compare=False)

    def __post_init__(self):
        if not isinstance(self.level, str):
            raise ValueError(f"Decomposition: level must be a level name, got {self.level!r}")
        positive_int(self.sweeps, "Decomposition: sweeps")
        if self.executor is not None and not isinstance(self.executor, Executor):
            raise ValueError(
                f"Decomposition: executor must be a concurrent.futures.Executor, got {type(self.executor).__name__}"
            )

    def check_executor(self) -> None:
        """Refuse an executor whose tasks would not change this process's arrays (a process pool: the local moves
        would be made on copies and lost) or that would hash the table at each task (dask's default ``pure=True``,
        which may also hand back a finished task's result for an unchanged table rather than run it).

        Examples
        --------
        >>> from concurrent.futures import ThreadPoolExecutor
        >>> with ThreadPoolExecutor(2) as pool:
        ...     Decomposition("County", executor=pool).check_executor()
        """
        if self.executor is None:
            return
        if type(self.executor).__name__ == "ClientExecutor" and getattr(self.executor, "_kwargs", {}).get("pure", True):
            raise ValueError(
                "Decomposition: a dask executor must be client.get_executor(pure=False): with pure=True dask hashes "
                "every array of the table at each task, and may return a finished task's result instead of moving"
            )
        probe = np.zeros(1)
        try:
            submit_shared(self.executor, _mark, probe).result()
        except KeyError:  # a worker in another process: the task table is not its
            pass
        if probe[0] != 1.0:
            raise ValueError(
                f"Decomposition: the tasks of {type(self.executor).__name__} do not share this process's memory (a "
                "process pool?): the local moves would be made on copies and lost; use threads"
            )

    def spans(self, release: GroupedRelease) -> np.ndarray:
        """(units, 2) leaf ranges [start, stop) of ``level``'s units that hold two leaves or more (a unit of one
        leaf has no local move).

        Examples
        --------
        >>> from ppdinfer.census import Geography, GroupedRelease, TableSpec, census_queries
        >>> from ppdinfer.mechanisms import NoisyMeasurements
        >>> geo = Geography(["s", "c1", "c2", "b1", "b2", "b3"], [None, "s", "s", "c1", "c1", "c2"],
        ...                 level_names=["State", "County", "Block"])
        >>> q = census_queries(geo, TableSpec(("a",)), {"Block": ["total"]})
        >>> mech = NoisyMeasurements(q.matrix, 1.0)
        >>> release = GroupedRelease.from_census(q, mech, mech.release([3, 4, 5], random_seed=1))
        >>> Decomposition("County").spans(release).tolist()
        [[0, 2]]
        """
        geo = release.geography
        if self.level not in geo.level_names:
            raise ValueError(f"Decomposition: level {self.level!r} is not one of {geo.level_names}")
        if geo.level_names.index(self.level) >= geo.n_levels - 1:
            raise ValueError(f"Decomposition: level {self.level!r} is the leaves' own; name a level above them")
        units = geo.level(self.level)
        spans = np.stack([geo.leaf_start[units], geo.leaf_stop[units]], axis=1).astype(np.int64)
        return spans[spans[:, 1] - spans[:, 0] >= 2]


def _mark(probe: np.ndarray) -> None:
    probe[0] = 1.0


#: The tasks handed to an executor by :func:`submit_shared`, by key, until they run.
_SHARED: dict[int, tuple] = {}
_KEYS = itertools.count()


def submit_shared(executor: Executor, fn, *args) -> Future:
    """``executor.submit(fn, *args)`` for an executor whose tasks run in this process, with only a key passing
    through it: ``fn`` and ``args`` wait in a process-wide table that the task reads. Dask pickles a task's
    arguments even on a ``Client(processes=False)``, which for a state's table (gigabytes) copies it at every
    task; here nothing but the key is copied, and the task works on the caller's arrays.

    Examples
    --------
    >>> from concurrent.futures import ThreadPoolExecutor
    >>> table = np.zeros(3)
    >>> with ThreadPoolExecutor(1) as pool:
    ...     submit_shared(pool, np.add.at, table, [0, 2], 1.0).result()
    >>> table.tolist()
    [1.0, 0.0, 1.0]
    """
    key = next(_KEYS)
    _SHARED[key] = (fn, args)
    future = executor.submit(_run_shared, key)
    future.add_done_callback(lambda _: _SHARED.pop(key, None))
    return future


def _run_shared(key: int):
    fn, args = _SHARED[key]
    return fn(*args)
