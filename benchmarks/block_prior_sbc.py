"""Simulation-based calibration of the block prior, longer than the test's: ``census_nmf.block_checks.block_prior_sbc``.

What is measured
----------------
``--simulations`` draws of the block prior on the case study's small geography (``SMALL_DESIGN``: one tract, two
block groups of three blocks, two of them empty, one holding a facility; cells 'a', 'b'; block totals measured with
sd 20), each released and fitted by ``sample_people(..., exposure=..., learn=True)`` with the priors it assumes
(``PRIORS``), the truth ranked among ``--draws`` of each fit's draws: the Bonferroni-adjusted p-value of the
chi-square tests of uniformity and each quantity's p-value, the fits' smallest ESS (10th percentile and median) and
largest R-hat, seconds. With ``--mutant``, the same for two simulators the fits do not assume: half the persons per
housing unit (mean_prior log 1.25 instead of log 2.5) and the facility ignored.

Run with ``.venv/bin/python benchmarks/block_prior_sbc.py [--simulations 300] [--draws 39] [--seed 1] [--mutant]``:
about 0.4 s per simulation on one core.
"""

from __future__ import annotations

import argparse
import json
import math
import time

import numpy as np


def summary(check, seconds: float) -> dict:
    result = check.result
    per = {name: np.round(np.ravel(value.values), 4).tolist() for name, value in result.p_values.data_vars.items()}
    return {
        "simulations": int(result.ranks.sizes["simulation"]), "draws": result.draws, "bins": result.bins,
        "p_value": round(result.p_value, 4), "calibrated": result.calibrated, "p_values": per,
        "min_ess_p10_median": np.round(np.percentile(check.min_ess, [10, 50]), 1).tolist(),
        "max_rhat": round(float(check.max_rhat.max()), 3), "seconds": round(seconds, 1),
    }  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--simulations", type=int, default=300)
    parser.add_argument("--draws", type=int, default=39)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--mutant", action="store_true", help="also the two wrong simulators")
    args = parser.parse_args()

    from ppdinfer.case_studies.census_nmf.block_checks import PRIORS, SMALL_DESIGN, block_prior_sbc
    from ppdinfer.census import LeafExposure

    e = SMALL_DESIGN.exposure
    runs = {"correct": {}}
    if args.mutant:
        runs["persons_per_unit"] = {"truth_priors": {**PRIORS, "mean_prior": (math.log(1.25), 0.5)}}
        runs["facilities_ignored"] = {"truth_exposure": LeafExposure(e.units, 0 * e.facilities, e.types)}
    out = {}
    for name, kwargs in runs.items():
        start = time.perf_counter()
        check = block_prior_sbc(simulations=args.simulations, draws=args.draws, random_seed=args.seed, **kwargs)
        out[name] = summary(check, time.perf_counter() - start)
        print(name, json.dumps(out[name]), flush=True)


if __name__ == "__main__":
    main()
