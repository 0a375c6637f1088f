"""Time and ESS per second of ppdinfer.pymc.sample_model on county-shaped problems up to a national size.

The model is the county model's shape (ppdinfer.models.county_counts): county shares
theta ~ Dirichlet centred on last month's counts, this month's counts x ~ Multinomial(total,
theta) with a public total, released with discrete Laplace noise (epsilon = 1). Each problem is
fitted through the generic entry point ``sample_model(model, y, z)``: PrivacyAugmentation on
x with theta integrated out, then the exact Dirichlet draw of theta.

Problems:

- ``PA 67 (real)``: one month of Pennsylvania's 67 counties (as benchmarks/county_pymc.py,
  concentration 1000), when ../shared/data/covid_pa is there;
- ``synthetic J``: J counties (67, 700 and 3000 by default) generated from ``--seed`` (2026) by
  ``synthetic_problem``: shares ~ Dirichlet(2, ..., 2); last month's counts ~ Multinomial(300 J,
  shares); this month's ~ Multinomial(250 J, shares); prior concentration 15 J (about 15 per
  county, as 1000 over PA's 67); the release from the same seed.

For each: wall time of the fit (compilation included), the smallest bulk ESS over the county
shares and over the counts, ESS per second, the largest R-hat, and the cost per draw. A last
line fits seconds ~ J ** b over the synthetic sizes. Run:
``.venv/bin/python benchmarks/national_pymc.py [--sizes 67 700 3000] [--draws 1000]``.
"""

from __future__ import annotations

import argparse
import time
import warnings
from pathlib import Path

import arviz as az
import numpy as np
import pandas as pd

from ppdinfer.models import county_counts
from ppdinfer.pymc import sample_model

warnings.filterwarnings("ignore", message="Numba will use object mode")


def synthetic_problem(n_counties: int, seed: int):
    """(model, y, z, x) of a synthetic month of ``n_counties`` counties, all drawn from ``seed``."""
    rng = np.random.default_rng([seed, n_counties])
    shares = rng.dirichlet(np.full(n_counties, 2.0))
    previous = rng.multinomial(300 * n_counties, shares)
    current = rng.multinomial(250 * n_counties, shares)
    model = county_counts.model(epsilon=1.0, concentration=15.0 * n_counties)
    z = county_counts.public_information(previous, int(current.sum()))
    y = model.mechanism.release(current, random_seed=rng)
    return model, y, z, current


def real_problem(data: Path, month: str, seed: int):
    """(model, y, z, x) of Pennsylvania's month ``month`` (the 67-county benchmark's setup)."""
    from county_pymc import load_month  # benchmarks/county_pymc.py, on the path when run as a script

    previous, current = load_month(data, month)
    model = county_counts.model(epsilon=1.0, concentration=1000.0)
    z = county_counts.public_information(previous, int(current.sum()))
    return model, model.mechanism.release(current, random_seed=seed), z, current


def fit(label, problem, draws, tune, chains, seed):
    model, y, z, _ = problem
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        idata = sample_model(
            model,
            y,
            z,
            draws=draws,
            tune=tune,
            chains=chains,
            cores=1,
            random_seed=seed,
            progressbar=False,
            compute_convergence_checks=False,
        )
    seconds = time.perf_counter() - start
    ess = az.ess(idata, var_names=["share", "cases"], method="bulk")
    share_ess = float(ess["share"].min())
    return {
        "problem": label,
        "J": y.size,
        "total": z["total"],
        "seconds": seconds,
        "ms/draw": 1000 * seconds / (chains * (draws + tune)),
        "min ESS share": share_ess,
        "min ESS cases": float(ess["cases"].min()),
        "ESS/s (share)": share_ess / seconds,
        "max R-hat": float(az.rhat(idata, var_names=["share"])["share"].max()),
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[67, 700, 3000])
    parser.add_argument("--data", type=Path, default=Path(__file__).resolve().parents[2] / "shared/data/covid_pa")
    parser.add_argument("--month", default="2021-01")
    parser.add_argument("--draws", type=int, default=1000)
    parser.add_argument("--tune", type=int, default=500)
    parser.add_argument("--chains", type=int, default=2)
    parser.add_argument("--seed", type=int, default=2026)
    args = parser.parse_args()
    print(f"{args.chains} chains x ({args.tune} tune + {args.draws} draws), seed {args.seed}, cores=1\n")
    rows = []
    if args.data.is_dir():
        rows.append(
            fit(
                f"PA 67 (real, {args.month})",
                real_problem(args.data, args.month, args.seed),
                args.draws,
                args.tune,
                args.chains,
                args.seed,
            )
        )
    for size in args.sizes:
        rows.append(
            fit(f"synthetic {size}", synthetic_problem(size, args.seed), args.draws, args.tune, args.chains, args.seed)
        )
    table = pd.DataFrame(rows).set_index("problem")
    print(table.to_string(float_format=lambda v: f"{v:,.3g}"))
    synthetic = table[table.index.str.startswith("synthetic")]
    if len(synthetic) >= 2:
        slope = np.polyfit(np.log(synthetic["J"]), np.log(synthetic["seconds"]), 1)[0]
        print(f"\ncost growth over the synthetic sizes: seconds ~ J^{slope:.2f}")


if __name__ == "__main__":
    main()
