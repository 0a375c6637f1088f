"""Seconds for the same coverage-study fits on four executors, in one run.

The tasks are those of ``ppdinfer covid infer`` (one release of one month of the real Pennsylvania
county counts and one PyMC fit each, checkpointed to a file) on:

1. ``local x1``: the local process pool (``LocalPool``) with 1 worker;
2. ``dask x1``: a ``dask.distributed`` LocalCluster of 1 worker process with 1 thread, through
   ``Client.get_executor()`` (the table scattered to the worker once), with dask's defaults;
3. ``dask x1, no profiler``: the same with the workers' statistical profiler off
   (``DASK_DISTRIBUTED__WORKER__PROFILE__ENABLED=False`` where the workers start): by default it
   samples the stack every 10 ms, which costs these Python-heavy fits 5-15 % of their time here;
4. ``local xN``: the local process pool on all cores.

The executors are all started and their workers warmed (imports, and small fits of the study's model
at its epsilons, so that process start-up and compilation are left out) before the clock starts; the
start-up is shown apart. Then the study runs ``--repeats`` rounds, each once on every executor in
turn, and the fastest run of each counts (on a shared machine other load only adds, and falls on all
alike). The four frames must be identical. The table gives seconds and tasks per second, and the
ratios dask x1 / local x1 (the overhead of going through dask: at most 1.1 is the target) and local
x1 / local xN (the speed-up on all cores), of the fastest runs and round by round. Needs the
``dask`` extra. Run:
``.venv/bin/python benchmarks/covid_executors.py [--data DIR] [--replicates 1]
[--draws 1000] [--tune 300] [--chains 2] [--repeats 3]`` (the fits of ``ppdinfer covid infer``;
about 4 minutes on 2 cores).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import tempfile
import time
import warnings
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pandas as pd

from ppdinfer.case_studies.covid_pa import load_monthly
from ppdinfer.case_studies.covid_pa.data import default_data
from ppdinfer.case_studies.covid_pa.inference import coverage_study
from ppdinfer.case_studies.covid_pa.synthesis import LocalPool

warnings.filterwarnings("ignore", message="Numba will use object mode")
MONTH = "2021-01"


def warm(table, epsilons) -> int:
    """A worker's first fits (imports, compilation of both PyMC twins, the plug-in quantiles it
    caches per epsilon) on the study's model with a few draws; returns its pid."""
    with tempfile.TemporaryDirectory() as folder:
        coverage_study(
            table,
            MONTH,
            epsilons=epsilons,
            replicates=1,
            draws=10,
            tune=10,
            chains=1,
            results_dir=folder,
            executor=ThreadPoolExecutor(1),
            progressbar=False,
        )
    time.sleep(0.5)  # hold this worker while the others warm
    return os.getpid()


@contextlib.contextmanager
def dask_executor(profile: bool):
    """A LocalCluster of one worker process with one thread; ``profile=False`` turns off the
    workers' statistical profiler (by default it samples every thread's stack every 10 ms)."""
    import dask
    from distributed import Client, LocalCluster

    with (
        dask.config.set({"distributed.worker.profile.enabled": profile}),
        LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=None) as cluster,
        Client(cluster) as client,
    ):
        yield client.get_executor()


@contextlib.contextmanager
def local_executor(workers):
    with LocalPool(workers) as pool:
        yield pool


def started(stack, make, workers, table, epsilons):
    """An executor, entered on ``stack``, with its workers warmed; and the seconds that took."""
    start = time.perf_counter()
    executor = stack.enter_context(make())
    pids = {future.result() for future in [executor.submit(warm, table, epsilons) for _ in range(workers)]}
    if len(pids) != workers:
        print(f"warning: the warm-up reached {len(pids)} of {workers} workers")
    return executor, time.perf_counter() - start


def study_seconds(executor, table, study):
    """The study into a fresh folder: its frame and seconds."""
    with tempfile.TemporaryDirectory() as folder:
        start = time.perf_counter()
        frame = coverage_study(table, MONTH, results_dir=folder, executor=executor, **study)
        return frame, time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=None, help="data folder (default: the repository's)")
    parser.add_argument("--replicates", type=int, default=1, help="replicates per release and epsilon")
    parser.add_argument("--draws", type=int, default=1000)
    parser.add_argument("--tune", type=int, default=300)
    parser.add_argument("--chains", type=int, default=2)
    parser.add_argument("--workers", type=int, default=os.cpu_count(), help="workers of the all-cores pool")
    parser.add_argument("--repeats", type=int, default=3, help="rounds over the executors (default 3)")
    args = parser.parse_args()
    table = load_monthly(args.data or default_data())
    study = {
        "epsilons": [0.01, 1.0],
        "replicates": args.replicates,
        "draws": args.draws,
        "tune": args.tune,
        "chains": args.chains,
        "seed": 2024,
        "progressbar": False,
    }
    tasks = 2 * 2 * args.replicates
    print(
        f"{tasks} fits of the {table.n_counties}-county model ({MONTH}), {args.draws} draws after {args.tune} "
        f"tuning, {args.chains} chains; {os.cpu_count()} cores"
    )
    runs = [
        ("local x1", lambda: local_executor(1), 1),
        ("dask x1", lambda: dask_executor(True), 1),
        ("dask x1, no profiler", lambda: dask_executor(False), 1),
        (f"local x{args.workers}", lambda: local_executor(args.workers), args.workers),
    ]
    frames, seconds, startup = {}, {label: [] for label, _, _ in runs}, {}
    with contextlib.ExitStack() as stack:
        executors = {}
        for label, make, workers in runs:
            executors[label], startup[label] = started(stack, make, workers, table, study["epsilons"])
        for _ in range(args.repeats):  # round robin: the machine's other load falls on every executor alike
            for label, executor in executors.items():
                frames[label], elapsed = study_seconds(executor, table, study)
                seconds[label].append(elapsed)
    rows = [
        {
            "executor": label,
            "workers": workers,
            "start-up s": startup[label],
            "seconds": min(seconds[label]),
            "slowest repeat s": max(seconds[label]),
            "tasks/s": tasks / min(seconds[label]),
        }
        for label, _, workers in runs
    ]
    frames = list(frames.values())
    for frame in frames[1:]:
        pd.testing.assert_frame_equal(frame, frames[0])
    result = pd.DataFrame(rows).set_index("executor")
    print(result.round(2).to_string())
    local1, dask1, dask1_quiet, local_all = result["seconds"]
    print(
        f"fastest runs: dask x1 / local x1 = {dask1 / local1:.3f} with dask's defaults, {dask1_quiet / local1:.3f} "
        f"without the workers' profiler (target <= 1.1); speed-up on {args.workers} workers = "
        f"{local1 / local_all:.2f}; the four frames are identical"
    )
    local_runs, (default_runs, quiet_runs) = (
        np.array(seconds["local x1"]),
        (np.array(seconds[label]) for label in ("dask x1", "dask x1, no profiler")),
    )
    print(
        f"round by round ({args.repeats} rounds; median, range): dask x1 / local x1 = "
        f"{_spread(default_runs / local_runs)} with dask's defaults, {_spread(quiet_runs / local_runs)} without "
        "the profiler"
    )


def _spread(ratios) -> str:
    return f"{np.median(ratios):.3f} ({ratios.min():.3f} to {ratios.max():.3f})"


if __name__ == "__main__":
    main()
