"""Synthesis of the whole county-month table by each method (paper section 4.2), with checkpoints.

A *task* is one (method, epsilon, replicate): it releases every month of the table and writes
one netCDF file to the results directory (atomically: written to a temporary name, then
renamed), with the run's configuration and a checksum (:mod:`.results_dir`). Its random stream
depends only on (seed, method, epsilon, replicate), so results do not depend on the order tasks
run in, the executor, or whether the run was interrupted: :func:`run_synthesis` skips the tasks
whose files are sound and gives the same final results as an uninterrupted run. The executor
machinery (:class:`LocalPool`, :func:`share`, :func:`run_tasks`) serves the coverage study
(:mod:`.inference`) too.

Methods (Delta_Z = 2 throughout, as in the paper):

- ``postprocess``: y = x + DiscreteLaplace(eps / 2) on every count, then the two-stage
  post-processing (:func:`ppdinfer.postprocessing.postprocess`), with its contraction flags;
- ``wem_naive``, ``wem_congenial``, ``wem_prior``: the Wasserstein exponential mechanism with
  the L2 loss and the naive, congenial and prior-congenial base measures.
"""

from __future__ import annotations

import ctypes
import json
import multiprocessing
import os
import signal
import sys
import threading
from collections.abc import Sequence
from concurrent.futures import FIRST_COMPLETED, Executor, ProcessPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import xarray as xr
from tqdm import tqdm

from ...mechanisms import DiscreteLaplace
from ...mechanisms.wem import PriorCongenial, WassersteinExponential
from ...postprocessing import postprocess
from . import results_dir as rundir
from .table import CovidTable

DELTA_Z = 2.0
METHODS = ("postprocess", "wem_naive", "wem_congenial", "wem_prior")
EPSILONS = (0.01, 1.0)
FLAGS = ("contracted_case_zeros", "contracted_death_zeros", "contracted_rates")


#: The WEM methods' base measures (the L2 loss throughout).
WEM_BASE_MEASURES = {"wem_naive": "naive", "wem_congenial": "congenial", "wem_prior": PriorCongenial(alpha=1.0)}


def wem_mechanism(method: str, epsilon: float) -> WassersteinExponential:
    """The mechanism of a WEM method at ``epsilon``. Its release is exact where affordable (its
    ``exact_proposals(z, J)`` at most ``EXACT_PROPOSAL_LIMIT``, which depends on z and J only),
    else a Metropolis chain."""
    return WassersteinExponential(epsilon, DELTA_Z, loss="l2", base_measure=WEM_BASE_MEASURES[method])


def _wem(method):
    def release(x, z, epsilon, rng, sweeps):
        return wem_mechanism(method, epsilon).release(x, z, random_seed=rng, sweeps=sweeps), {}

    return release


def _postprocess(x, z, epsilon, rng, sweeps):
    noisy = DiscreteLaplace(epsilon, DELTA_Z).release(x, random_seed=rng)
    result = postprocess(noisy[0], noisy[1], z["total"])
    flags = {name: getattr(result, name) for name in FLAGS}
    return np.stack([result.cases, result.deaths]), flags


#: method name -> release(x, z, epsilon, rng, sweeps) -> (y of shape (2, J), flags by name)
RELEASES = {
    "postprocess": _postprocess,
    "wem_naive": _wem("wem_naive"),
    "wem_congenial": _wem("wem_congenial"),
    "wem_prior": _wem("wem_prior"),
}


@dataclass(frozen=True)
class Task:
    """One (method, epsilon, replicate) of the synthesis."""

    method: str
    epsilon: float
    replicate: int

    @property
    def filename(self) -> str:
        return f"{self.method}_eps{self.epsilon:g}_rep{self.replicate:03d}.nc"

    def seed(self, seed: int) -> np.random.SeedSequence:
        """The task's own stream: a function of (seed, method, epsilon, replicate) only."""
        key = (METHODS.index(self.method), EPSILONS.index(self.epsilon), self.replicate)
        return np.random.SeedSequence(seed, spawn_key=key)


def synthesize(table: CovidTable, task: Task, seed: int, sweeps: int | None = None) -> xr.Dataset:
    """Every month of ``table`` released by ``task.method`` at ``task.epsilon``, stamped with the
    run's configuration and checksum (:func:`.results_dir.stamp`)."""
    config = rundir.run_config(table, seed, sweeps)
    rng = np.random.default_rng(task.seed(seed))
    release = RELEASES[task.method]
    months, flags = [], {name: [] for name in FLAGS}
    for t in range(table.n_months):
        y, month_flags = release(table.x(t), table.z(t), task.epsilon, rng, config["sweeps"])
        months.append(y)
        for name, values in month_flags.items():
            flags[name].append(values)
    data = {"y": (("month", "series", "county"), np.asarray(months, dtype=np.int32))}
    data.update(
        {name: (("month", "county"), np.asarray(values, dtype=np.int8)) for name, values in flags.items() if values}
    )
    dataset = xr.Dataset(
        data,
        coords={"month": list(table.months), "series": ["cases", "deaths"], "county": list(table.counties)},
        attrs={"method": task.method, "epsilon": task.epsilon, "replicate": task.replicate},
    )
    return rundir.stamp(dataset, config)


def write_result(dataset: xr.Dataset, path: Path) -> None:
    """Write a result file atomically: to a temporary name in its folder, then renamed to ``path``.

    The file is encoded in memory and written with plain file calls: given a file name, xarray
    takes a write lock per file, which on a dask worker is a distributed lock (round trips to the
    scheduler: 90 ms a file here, more than the 10 ms the write takes).
    """
    rundir.write_atomically(path, dataset.to_netcdf(engine="scipy"))


def _run_task(table: CovidTable, task: Task, seed: int, results_dir: Path, sweeps: int | None) -> Task:
    write_result(synthesize(table, task, seed, sweeps), results_dir / task.filename)
    return task


def tasks(methods: Sequence[str] = METHODS, epsilons: Sequence[float] = EPSILONS, replicates: int = 100) -> list[Task]:
    """Every (method, epsilon, replicate) of a run, validated."""
    unknown = set(methods) - set(RELEASES)
    if unknown:
        raise ValueError(f"methods: unknown {sorted(unknown)}; choose from {list(RELEASES)}")
    if any(e not in EPSILONS for e in epsilons):
        raise ValueError(f"epsilons must be among {EPSILONS}, got {list(epsilons)}")
    if replicates < 1:
        raise ValueError(f"replicates must be a positive integer, got {replicates}")
    return [Task(m, float(e), r) for m in methods for e in epsilons for r in range(replicates)]


def _die_with_parent(parent: int, stop) -> None:
    """Pool worker initializer: end this worker as soon as the process that started it is gone,
    or ``stop`` (a multiprocessing Event) is set.

    On Linux the kernel kills the worker when its parent dies (``PR_SET_PDEATHSIG``: strictly,
    when the parent *thread* that started it ends, hence a pool is used from the thread that
    made it); elsewhere, and for a parent gone before this ran, a daemon thread watches the
    parent pid every second (the compiled kernels release the GIL).
    """
    if sys.platform == "linux":
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # 1 = PR_SET_PDEATHSIG

    def watch():
        while os.getppid() == parent and not stop.wait(1):
            pass
        os._exit(1)

    threading.Thread(target=watch, name="ppdinfer-parent-watch", daemon=True).start()


class LocalPool(ProcessPoolExecutor):
    """A pool of fresh ("spawn") processes, which never outlive this process (forking a process
    that runs numba and PyTensor threads can deadlock). ``workers`` defaults to all cores."""

    def __init__(self, workers: int | None = None):
        if workers is not None and workers < 1:
            raise ValueError(f"workers must be a positive integer, got {workers}")
        context = multiprocessing.get_context("spawn")
        self._stop = context.Event()
        super().__init__(
            max_workers=workers or os.cpu_count(),
            mp_context=context,
            initializer=_die_with_parent,
            initargs=(os.getpid(), self._stop),
        )

    def stop(self) -> None:
        """Cancel the tasks not started and end the workers now, abandoning the running tasks
        (which :meth:`shutdown`, even with ``wait=False``, lets finish before this process exits)."""
        self._stop.set()
        self.shutdown(wait=False, cancel_futures=True)


def share(executor: Executor, value):
    """``value`` as the tasks of ``executor`` should receive it: for a dask executor
    (``distributed.Client(address).get_executor()``) a future of ``value`` scattered once to every
    worker, which dask hands to each task as the value itself; for any other executor ``value``."""
    distributed = sys.modules.get("distributed")
    if distributed is None or not isinstance(executor, distributed.cfexecutor.ClientExecutor):
        return value
    # hash=False: a key of its own, which an earlier run's release of an equal value cannot take away
    return executor._client.scatter(value, broadcast=True, hash=False)  # the Client the executor submits to


def run_tasks(
    function,
    todo: Sequence,
    shared,
    *args,
    executor: Executor | None = None,
    desc: str = "tasks",
    progressbar: bool = True,
) -> list:
    """``function(shared, task, *args)`` for every task of ``todo`` on ``executor`` (default: a
    :class:`LocalPool` of all cores); returns the results in the order they finished.

    ``shared`` (the table) goes to each dask worker once (:func:`share`). A tqdm bar counts the
    finished tasks. On any exception, Ctrl-C included, the tasks not finished are cancelled (and
    a pool made here is ended at once) before it propagates: what the finished tasks wrote stays.
    On the main thread Ctrl-C only sets a flag while the tasks run, which the wait for them reads
    every 0.2 s: a KeyboardInterrupt raised inside the futures' own code could leave one of their
    locks held, and the cancelling would then wait on it for ever.
    """
    if not todo:
        return []
    own = executor is None
    executor = executor or LocalPool()
    done, futures = [], []
    interrupted = threading.Event()
    catch = threading.current_thread() is threading.main_thread()  # only there can a handler be set
    if catch:
        previous = signal.signal(signal.SIGINT, lambda signum, frame: interrupted.set())
    try:
        shared = share(executor, shared)
        futures = [executor.submit(function, shared, task, *args) for task in todo]
        pending = set(futures)
        with tqdm(total=len(futures), desc=desc, unit="task", disable=not progressbar) as bar:
            while pending and not interrupted.is_set():
                finished, pending = wait(pending, timeout=0.2, return_when=FIRST_COMPLETED)
                for future in finished:
                    done.append(future.result())
                    bar.update()
        if interrupted.is_set():
            raise KeyboardInterrupt
    except BaseException:
        for future in futures:
            future.cancel()
        if own:
            executor.stop()
        raise
    finally:
        if catch:
            signal.signal(signal.SIGINT, previous)
        if own:
            executor.shutdown(wait=True, cancel_futures=True)
    return done


def run_synthesis(
    table: CovidTable,
    results_dir: str | Path,
    *,
    methods: Sequence[str] = METHODS,
    epsilons: Sequence[float] = EPSILONS,
    replicates: int = 100,
    seed: int = 2024,
    executor: Executor | None = None,
    sweeps: int | None = None,
    progressbar: bool = True,
    fresh: bool = False,
) -> list[Task]:
    """Run every missing task and return the tasks completed in this call.

    The directory's configuration must be this run's (more replicates, methods or epsilons
    extend a run); a damaged result file is redone. See :mod:`.results_dir`.

    Parameters
    ----------
    executor
        Any ``concurrent.futures.Executor``: by default a local process pool, or e.g.
        ``distributed.Client(address).get_executor()`` for a dask cluster.
    sweeps
        MCMC sweeps per WEM release (default: the mechanism's).
    fresh
        Delete the directory's results first, whatever their configuration.

    Raises
    ------
    ResultsError
        The directory holds a run of another configuration, or another run is using it.
    """
    results_dir = Path(results_dir)
    planned = tasks(methods, epsilons, replicates)
    config = rundir.run_config(table, seed, sweeps)
    results_dir.mkdir(parents=True, exist_ok=True)
    with rundir.locked(results_dir):
        rundir.prepare(results_dir, config, fresh)
        todo = [task for task in planned if not rundir.usable(results_dir / task.filename, config)]
        return run_tasks(
            _run_task,
            todo,
            table,
            seed,
            results_dir,
            sweeps,
            executor=executor,
            desc="synthesis",
            progressbar=progressbar,
        )


def load_results(results_dir: str | Path) -> xr.Dataset:
    """All task files combined: ``y`` with dims (synthesis, epsilon, replicate, month, series, county).

    The ``synthesis`` dimension holds the method names, in the order of :data:`METHODS` (it is not
    called "method" because ``Dataset.sel`` reserves that keyword). A (method, epsilon,
    replicate) without a file (an unfinished run) is NaN; the flags are NaN for the methods that
    have none. The attributes are the run's configuration (:func:`.results_dir.run_config`).

    Raises
    ------
    FileNotFoundError
        No result file.
    ResultsError
        A file is damaged (the message names it), or the files (or ``run.json``) are of more
        than one configuration.
    """
    results_dir = Path(results_dir)
    files = sorted(results_dir.glob("*.nc"))
    if not files:
        raise FileNotFoundError(f"no synthesis results in {results_dir}")
    found, configs = {}, {}
    for path in files:
        ds, config = rundir.read_result(path)
        configs.setdefault(json.dumps(config, sort_keys=True), []).append(path.name)
        found[(ds.attrs["method"], float(ds.attrs["epsilon"]), int(ds.attrs["replicate"]))] = ds
    config = json.loads(next(iter(configs)))
    if len(configs) > 1:
        other = json.loads(list(configs)[1])
        raise rundir.ResultsError(
            f"{results_dir} mixes results of {len(configs)} configurations "
            f"({', '.join(f'{len(names)} files like {names[0]}' for names in configs.values())}): "
            f"{rundir.differences(config, other, ('in the first', 'in the second'))}"
        )
    manifest = results_dir / rundir.MANIFEST
    recorded = rundir.read_json(manifest) if manifest.exists() else config
    if recorded != config:
        raise rundir.ResultsError(
            f"{results_dir}: its files are of another configuration than {manifest.name} "
            f"({rundir.differences(recorded, config, ('in ' + manifest.name, 'in the files'))})"
        )
    methods = [m for m in METHODS if any(key[0] == m for key in found)]
    epsilons = sorted({key[1] for key in found})
    replicates = sorted({key[2] for key in found})
    template = next(iter(found.values()))
    data = {}
    for name in ("y", *FLAGS):
        dims = template["y"].dims if name == "y" else ("month", "county")
        shape = tuple(template.sizes[d] for d in dims)
        values = np.full((len(methods), len(epsilons), len(replicates), *shape), np.nan)
        for (m, e, r), ds in found.items():
            if name in ds:
                values[methods.index(m), epsilons.index(e), replicates.index(r)] = ds[name].values
        data[name] = (("synthesis", "epsilon", "replicate", *dims), values)
    coords = {
        "synthesis": methods,
        "epsilon": epsilons,
        "replicate": replicates,
        **{d: template[d].values for d in ("month", "series", "county")},
    }
    return xr.Dataset(data, coords=coords, attrs=config)
