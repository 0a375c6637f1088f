"""Seconds to fit every month of the national panel (3,000 counties x 24 months) on three executors.

The panel is ``ppdinfer.case_studies.covid_pa.national.synthetic_panel(--counties, --months,
seed=--seed)``: 72,000 released counts at the default size, each month's prior centred on the
month before's public counts. ``fit_months`` fits every month as one task (one PyMC fit of
``--chains`` chains, one after the other, of ``--tune`` + ``--draws`` steps) on:

1. ``local x1``: the local process pool (``LocalPool``) with 1 worker;
2. ``local x2``: the same with 2 workers;
3. ``dask x1``: a ``dask.distributed`` LocalCluster of 1 worker process with 1 thread, through
   ``Client.get_executor()`` (the panel scattered to the worker once), the workers' statistical
   profiler off (see benchmarks/covid_executors.py).

Each wall time runs from making the executor to the combined results, worker start-up included;
a small fit in this process first fills the disk caches of the compiled code, so no executor pays
for compilation alone. The three results must be identical (asserted; the seconds of each fit
aside). Printed: the wall seconds of each, the sum of the month fits' own seconds, the 5-minute
target for ``local x2`` (met / missed; at other sizes it is only scaled by the number of months,
and marked so), the ratio dask x1 / local x1, the smallest bulk ESS of a month against
``ESS_TARGET`` (400), the largest R-hat, and the z-scores of the posterior means against the true
counts. Run (about 40 minutes on 2 cores before the single-month speed-up of issue 26, part 1):
``.venv/bin/python benchmarks/national_months.py [--counties 3000] [--months 24] [--draws 1000]
[--tune 300] [--chains 2] [--sweeps 10] [--seed 2026]``; ``--counties 300 --months 6`` tries it in a minute.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import tempfile
import time
import warnings
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pandas as pd
import xarray as xr

from ppdinfer.case_studies.covid_pa.national import ESS_TARGET, fit_months, synthetic_panel, z_scores
from ppdinfer.case_studies.covid_pa.synthesis import LocalPool

warnings.filterwarnings("ignore", message="Numba will use object mode")
TARGET_SECONDS, TARGET_COUNTIES, TARGET_MONTHS = 300.0, 3000, 24


@contextlib.contextmanager
def local_executor(workers):
    with LocalPool(workers) as pool:
        yield pool


@contextlib.contextmanager
def dask_executor():
    """A LocalCluster of one worker process with one thread, its statistical profiler off."""
    import dask
    from distributed import Client, LocalCluster

    with (
        dask.config.set({"distributed.worker.profile.enabled": False}),
        LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=None) as cluster,
        Client(cluster) as client,
    ):
        yield client.get_executor()


def timed(make, panel, fit):
    """The fits on a fresh executor and the wall seconds from its start to the results."""
    with tempfile.TemporaryDirectory() as folder:
        start = time.perf_counter()
        with make() as executor:
            fits = fit_months(panel, executor=executor, results_dir=folder, **fit)
        return fits, time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--counties", type=int, default=TARGET_COUNTIES)
    parser.add_argument("--months", type=int, default=TARGET_MONTHS)
    parser.add_argument("--draws", type=int, default=1000, help="draws per chain")
    parser.add_argument("--tune", type=int, default=300, help="tuning steps per chain")
    parser.add_argument("--chains", type=int, default=2)
    parser.add_argument("--sweeps", type=int, default=10, help="augmentation sweeps per iteration")
    parser.add_argument("--seed", type=int, default=2026)
    args = parser.parse_args()
    panel = synthetic_panel(args.counties, args.months, seed=args.seed)
    fit = {"draws": args.draws, "tune": args.tune, "chains": args.chains, "sweeps": args.sweeps, "seed": args.seed}
    print(
        f"{args.counties} counties x {args.months} months ({panel.releases.size:,} released counts), "
        f"{args.chains} chains x ({args.tune} tune + {args.draws} draws) a month, {args.sweeps} sweeps; "
        f"{os.cpu_count()} cores"
    )
    fit_months(synthetic_panel(20, 1), draws=20, tune=20, executor=ThreadPoolExecutor(1), progressbar=False)
    runs = {"local x1": lambda: local_executor(1), "local x2": lambda: local_executor(2), "dask x1": dask_executor}
    results, rows = {}, []
    for label, make in runs.items():
        results[label], wall = timed(make, panel, {**fit, "progressbar": True})
        rows.append({"executor": label, "wall s": wall, "sum of fit s": float(results[label]["seconds"].sum())})
    reference = results["local x1"].drop_vars("seconds")
    for fits in results.values():
        xr.testing.assert_identical(fits.drop_vars("seconds"), reference)
    table = pd.DataFrame(rows).set_index("executor")
    table["months/min"] = 60 * args.months / table["wall s"]
    print(table.round(1).to_string())
    fits = results["local x1"]
    local1, local2, dask1 = table["wall s"]
    full = (args.counties, args.months) == (TARGET_COUNTIES, TARGET_MONTHS)
    projected = local2 * TARGET_MONTHS / args.months
    verdict = "met" if projected <= TARGET_SECONDS else "missed"
    print(
        f"5-minute target (local x2, {TARGET_COUNTIES} x {TARGET_MONTHS}): {verdict}, "
        + (
            f"{local2:.0f} s"
            if full
            else f"{projected:.0f} s scaled from {args.months} months at {args.counties} counties (not the target's size)"
        )
    )
    print(f"dask x1 / local x1 = {dask1 / local1:.3f}; speed-up on 2 workers = {local1 / local2:.2f}")
    z = z_scores(panel, fits).values.ravel()
    low = float(min(fits["ess_share"].min(), fits["ess_cases"].min()))
    print(
        f"smallest bulk ESS of a month {low:.0f} (target {ESS_TARGET}: {'met' if low >= ESS_TARGET else 'missed'}; "
        f"shares {float(fits['ess_share'].min()):.0f}, counts {float(fits['ess_cases'].min()):.0f}), "
        f"largest R-hat {float(fits['rhat'].max()):.3f}; z of the posterior means against the truth: "
        f"mean {np.nanmean(z):.3f}, sd {np.nanstd(z, ddof=1):.3f}; the three results are identical"
    )


if __name__ == "__main__":
    main()
