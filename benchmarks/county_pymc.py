"""Bulk ESS of theta per second on the county model at real scale (J = 67 Pennsylvania counties).

One month of real county case counts (JHU CSSE, read from ../shared/data/covid_pa) is released
with discrete Laplace noise; the posterior of the county shares theta is sampled by:

1. ``ppdinfer-step + conjugate``: PrivacyAugmentation on the latent counts, exact Dirichlet update;
2. ``ppdinfer-step + NUTS``: PrivacyAugmentation on the counts, NUTS on theta;
3. ``pymc generic``: PyMC's own step assignment (Metropolis on the integer counts, NUTS on theta);
4. ``importance``: ppdinfer.importance_sample with the prior as proposal (ESS and Pareto k).

For each epsilon the table gives wall time, the smallest bulk ESS over the 67 shares, ESS per
second, the largest R-hat, and ratios against PyMC's generic sampler. Run:
``.venv/bin/python benchmarks/county_pymc.py [--data DIR] [--month 2021-01]``.
"""

from __future__ import annotations

import argparse
import time
import warnings
from pathlib import Path

import arviz as az
import numpy as np
import pandas as pd
import pymc as pm

import ppdinfer as pp
import ppdinfer.pymc as ppm
from ppdinfer.models import county_counts

warnings.filterwarnings("ignore", message="Numba will use object mode")


def load_month(data: Path, month: str):
    """(previous month's county cases, this month's county cases) from the monthly table."""
    table = pd.read_csv(data / "pa_monthly_new_by_county.csv")
    wide = table.pivot(index="county", columns="month", values="new_cases")
    months = list(wide.columns)
    if month not in months or months.index(month) == 0:
        raise SystemExit(f"--month must be one of {months[1:]}")
    previous = months[months.index(month) - 1]
    return wide[previous].to_numpy(np.int64), wide[month].to_numpy(np.int64)


def run_mcmc(twin, label, draws, tune, chains, seed, **kwargs):
    start = time.perf_counter()
    with twin:
        idata = kwargs.pop("sampler")(
            draws=draws,
            tune=tune,
            chains=chains,
            cores=1,
            random_seed=seed,
            progressbar=False,
            compute_convergence_checks=False,
            **kwargs,
        )
    seconds = time.perf_counter() - start
    ess = float(az.ess(idata, var_names=["share"], method="bulk")["share"].min())
    rhat = float(az.rhat(idata, var_names=["share"])["share"].max())
    return {"method": label, "seconds": seconds, "min bulk ESS": ess, "ESS/s": ess / seconds, "max R-hat": rhat}


def run_importance(model, y, z, draws, seed):
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = pp.importance_sample(model, y, z, draws=draws, random_seed=seed)
    seconds = time.perf_counter() - start
    ess = float(result["sample_stats"]["ess"])
    k = float(result["sample_stats"]["pareto_k"])
    return {
        "method": f"importance (Pareto k {k:.2f})",
        "seconds": seconds,
        "min bulk ESS": ess,
        "ESS/s": ess / seconds,
        "max R-hat": float("nan"),
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=Path(__file__).resolve().parents[2] / "shared/data/covid_pa")
    parser.add_argument("--month", default="2021-01")
    parser.add_argument("--draws", type=int, default=1000)
    parser.add_argument("--tune", type=int, default=500)
    parser.add_argument("--chains", type=int, default=2)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    previous, current = load_month(args.data, args.month)
    total = int(current.sum())
    z = county_counts.public_information(previous, total)
    print(
        f"{args.month}: J = {current.size} counties, total {total} cases; {args.chains} chains x "
        f"({args.tune} tune + {args.draws} draws)\n"
    )
    for epsilon in (0.01, 1.0):
        model = county_counts.model(epsilon=epsilon, concentration=1000.0)
        y = model.mechanism.release(current, random_seed=args.seed)
        rows = [
            run_mcmc(
                model.to_pymc(y, z),
                "ppdinfer step + conjugate theta",
                args.draws,
                args.tune,
                args.chains,
                args.seed,
                sampler=ppm.sample,
            ),
            run_mcmc(
                model.to_pymc(y, z),
                "ppdinfer step + NUTS theta",
                args.draws,
                args.tune,
                args.chains,
                args.seed,
                sampler=ppm.sample,
                conjugate=False,
            ),
            run_mcmc(
                model.to_pymc(y, z),
                "pymc generic (Metropolis + NUTS)",
                args.draws,
                args.tune,
                args.chains,
                args.seed,
                sampler=pm.sample,
            ),
            run_importance(model, y, z, 100_000, args.seed),
        ]
        table = pd.DataFrame(rows).set_index("method")
        generic = table.loc["pymc generic (Metropolis + NUTS)", "ESS/s"]
        table["x generic"] = table["ESS/s"] / generic if generic > 0 else np.inf
        print(f"epsilon = {epsilon}")
        print(table.to_string(float_format=lambda v: f"{v:,.3g}"))
        print()


if __name__ == "__main__":
    main()
