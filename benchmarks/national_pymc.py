"""Time and ESS per second of the county model's PyMC fit, today's settings beside the new ones, up to national size.

The model is the county model's shape (ppdinfer.models.county_counts): county shares
theta ~ Dirichlet centred on last month's counts, this month's counts x ~ Multinomial(total,
theta) with a public total, released with discrete Laplace noise (epsilon = 1). Each problem is
fitted through ``ppdinfer.pymc.from_model`` and ``ppdinfer.pymc.sample`` (what ``sample_model`` runs):
PrivacyAugmentation on x with theta integrated out, then the exact Dirichlet draw of theta.

Problems:

- ``PA 67 (real)``: one month of Pennsylvania's 67 counties (as benchmarks/county_pymc.py,
  concentration 1000), when ../shared/data/covid_pa is there;
- ``synthetic J``: J counties (67, 670 and 3000 by default) generated from ``--seed`` (2026) by
  ``synthetic_problem``: shares ~ Dirichlet(2, ..., 2); last month's counts ~ Multinomial(300 J,
  shares); this month's ~ Multinomial(250 J, shares); prior concentration 15 J (about 15 per
  county, as 1000 over PA's 67); the release from the same seed.

Settings (each problem is fitted with both, in one process):

- ``today``: the moves before issue 26, the prior and local moves on every pair, 5 J pair moves per
  iteration (``moves=("prior", "local")``, 10 sweeps of J / 2 disjoint pairs: the old 5 sweeps of J
  random pairs), the chains one after the other (``cores=1``);
- ``new``: the default moves (prior and release, frequencies adapted during tuning), ``--sweeps``
  sweeps, the chains on ``--cores`` cores (PyMC's default start method, fork on Linux).

Columns: ``wall s`` the whole fit (model building, PyTensor and numba compilation or cache loading
included: the first fit of the process pays numba's), ``sampling s`` PyMC's sampling loop alone
(compilation excluded), ``cpu s`` the CPU time of the fit (this process and the chains' processes:
on a machine shared with other work, wall time above cpu / cores shows the wait), the smallest bulk ESS over the county shares and over the counts, the
largest R-hat over both, ESS/s (the smaller of the two smallest ESS over the wall time) and
microseconds per county per effective draw (wall time / (J x that ESS)). For the largest
synthetic J the targets of issue 26 (wall <= 10 s, ESS >= 1000, R-hat <= 1.01) are marked met or
missed. A last line fits seconds ~ J ** b over the synthetic sizes. Run:
``.venv/bin/python benchmarks/national_pymc.py [--sizes 67 670 3000] [--draws 1000] [--no-baseline]``.
"""

from __future__ import annotations

import argparse
import resource
import time
import warnings
from pathlib import Path

import arviz as az
import numpy as np
import pandas as pd

from ppdinfer.models import county_counts
from ppdinfer.pymc import from_model, sample

warnings.filterwarnings("ignore", message="Numba will use object mode")

#: the targets of issue 26 at J = 3000 on 2 cores
TARGET_SECONDS, TARGET_ESS, TARGET_RHAT = 10.0, 1000.0, 1.01


def synthetic_problem(n_counties: int, seed: int, epsilon: float = 1.0):
    """(model, y, z, x) of a synthetic month of ``n_counties`` counties, all drawn from ``seed``."""
    rng = np.random.default_rng([seed, n_counties])
    shares = rng.dirichlet(np.full(n_counties, 2.0))
    previous = rng.multinomial(300 * n_counties, shares)
    current = rng.multinomial(250 * n_counties, shares)
    model = county_counts.model(epsilon=epsilon, concentration=15.0 * n_counties)
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


def settings(sweeps: int, cores: int) -> dict:
    """The two settings compared: name -> keyword arguments of ``ppdinfer.pymc.sample``."""
    return {
        "today": {"moves": ("prior", "local"), "sweeps": 10, "cores": 1},
        "new": {"moves": None, "sweeps": sweeps, "cores": cores},
    }


def _cpu_seconds() -> float:
    """CPU seconds of this process and its finished children (the chains' processes)."""
    return sum(
        usage.ru_utime + usage.ru_stime
        for usage in (resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN))
    )


def fit(label, setting, problem, draws, tune, chains, seed, **options):
    """One fit and its row of the table."""
    model, y, z, _ = problem
    start, cpu = time.perf_counter(), _cpu_seconds()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        idata = sample(
            from_model(model, y, z),
            draws=draws,
            tune=tune,
            chains=chains,
            random_seed=seed,
            progressbar=False,
            compute_convergence_checks=False,
            **options,
        )
    seconds, cpu = time.perf_counter() - start, _cpu_seconds() - cpu
    ess = az.ess(idata, var_names=["share", "cases"], method="bulk")
    rhat = az.rhat(idata, var_names=["share", "cases"])
    share_ess, cases_ess = float(ess["share"].min()), float(ess["cases"].min())
    worst = min(share_ess, cases_ess)
    return {
        "problem": label,
        "settings": setting,
        "J": y.size,
        "wall s": seconds,
        "sampling s": float(idata["posterior"].attrs["sampling_time"]),
        "cpu s": cpu,
        "min ESS share": share_ess,
        "min ESS cases": cases_ess,
        "max R-hat": max(float(rhat["share"].max()), float(rhat["cases"].max())),
        "ESS/s": worst / seconds,
        "us/county/ESS": 1e6 * seconds / (y.size * worst),
    }


def verdict(row) -> str:
    """The targets of issue 26, each met or missed."""
    checks = {
        f"wall {row['wall s']:.1f} s <= {TARGET_SECONDS:g} s": row["wall s"] <= TARGET_SECONDS,
        f"min ESS {min(row['min ESS share'], row['min ESS cases']):.0f} >= {TARGET_ESS:g}": min(
            row["min ESS share"], row["min ESS cases"]
        )
        >= TARGET_ESS,
        f"max R-hat {row['max R-hat']:.4f} <= {TARGET_RHAT}": row["max R-hat"] <= TARGET_RHAT,
    }
    return "; ".join(f"{check}: {'met' if ok else 'MISSED'}" for check, ok in checks.items())


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[67, 670, 3000])
    parser.add_argument("--data", type=Path, default=Path(__file__).resolve().parents[2] / "shared/data/covid_pa")
    parser.add_argument("--month", default="2021-01")
    parser.add_argument("--draws", type=int, default=1000)
    parser.add_argument("--tune", type=int, default=500)
    parser.add_argument("--chains", type=int, default=2)
    parser.add_argument("--sweeps", type=int, default=5, help="sweeps per iteration of the new settings")
    parser.add_argument("--cores", type=int, default=2, help="cores of the new settings")
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument("--no-baseline", action="store_true", help="fit the new settings only")
    args = parser.parse_args()
    chosen = settings(args.sweeps, args.cores)
    if args.no_baseline:
        del chosen["today"]
    print(f"{args.chains} chains x ({args.tune} tune + {args.draws} draws), seed {args.seed}")
    for name, options in chosen.items():
        print(f"  {name}: {options}")
    problems = []
    if args.data.is_dir():
        problems.append((f"PA 67 (real, {args.month})", real_problem(args.data, args.month, args.seed)))
    problems += [(f"synthetic {size}", synthetic_problem(size, args.seed)) for size in args.sizes]
    rows = [
        fit(label, name, problem, args.draws, args.tune, args.chains, args.seed, **options)
        for label, problem in problems
        for name, options in reversed(chosen.items())  # the new settings first: they pay numba's loading
    ]
    table = pd.DataFrame(rows).set_index(["problem", "settings"])
    print()
    print(table.to_string(float_format=lambda v: f"{v:,.4g}"))
    synthetic = table[table.index.get_level_values("problem").str.startswith("synthetic")]
    for name in chosen:
        runs = synthetic.xs(name, level="settings")
        if len(runs) >= 2:
            slope = np.polyfit(np.log(runs["J"]), np.log(runs["wall s"]), 1)[0]
            print(f"\n{name}: cost growth over the synthetic sizes: wall seconds ~ J^{slope:.2f}")
    largest = synthetic[synthetic["J"] == synthetic["J"].max()]
    print(f"\ntargets at J = {int(largest['J'].iloc[0])} (issue 26):")
    for (_, name), row in largest.iterrows():
        print(f"  {name}: {verdict(row)}")
    if "today" in chosen:
        today, new = largest.xs("today", level="settings").iloc[0], largest.xs("new", level="settings").iloc[0]
        print(
            f"  new / today: wall x{new['wall s'] / today['wall s']:.2f}, "
            f"us per county per effective draw x{new['us/county/ESS'] / today['us/county/ESS']:.2f}"
        )


if __name__ == "__main__":
    main()
