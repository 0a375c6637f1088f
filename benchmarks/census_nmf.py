"""Fitting the cells of a synthetic state's noisy-measurement file: seconds, ESS, R-hat, memory.

What is measured
----------------
A synthetic Pennsylvania (``ppdinfer.census.synthetic_state``: the first n of the 67 real county
populations, tracts of ~4,000 and block groups of ~1,350 people, 14 Hispanic origin x race cells per
block group) is released as the 2020 Census did: 'total', 'hispanic' and 'detailed' queries at
State, County, Tract and Block_Group with the production PL94 sigmas
(``ppdinfer.census.production_sigmas``) and the state total invariant. ``sample_cells`` then fits
every cell (2 chains in 2 threads, hyperparameters learned). For n = 1, 10, 67 counties each row
gives the fit's seconds and the 1-minute load average at its end (the machine is shared), the min
bulk ESS and max rank-normalized R-hat (``ppdinfer.inference.diagnostics.ess_rhat``, ArviZ's numbers)
over every cell, over the hyperparameters (alpha, phi, mean sizes, shares) and over each tract's
Hispanic share, their min / max (``min_ess``, ``max_rhat``), the cost per cell per effective draw
(seconds / (cells x min ESS)), the peak resident memory, and the RMSE of the posterior mean, the GLS
estimate and (``--topdown``) the TopDown-like estimate against the true cells.

Run with ``.venv/bin/python benchmarks/census_nmf.py [--counties 1 10 67] [--draws 1250] [--tune 200]
[--thin 4] [--options '{"hyper_rounds": 5}']`` (``--options``: more keyword arguments of
``sample_cells``, as JSON).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import time

import numpy as np
import scipy.sparse as sp

from ppdinfer.census import CellPrior, census_queries, gls_estimate, production_sigmas, sample_cells, synthetic_state
from ppdinfer.census.geography import TableSpec
from ppdinfer.inference.diagnostics import ess_rhat
from ppdinfer.mechanisms import NoisyMeasurements

QUERIES = {level: ["total", "hispanic", "detailed"] for level in ("State", "County", "Tract", "Block_Group")}


def peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def diagnostics(values: np.ndarray) -> tuple[float, float]:
    """(min bulk ESS, max R-hat) over the variables of draws (chains, n, ...) that vary."""
    ess, rhat = ess_rhat(values, block=4096)
    varying = np.ptp(values.reshape(values.shape[0] * values.shape[1], -1), axis=0).reshape(ess.shape) > 0
    if not varying.any():
        return float("nan"), float("nan")
    return float(np.nanmin(ess[varying])), float(np.nanmax(rhat[varying]))


def tract_hispanic_shares(cells: np.ndarray, prior: CellPrior, hispanic: np.ndarray) -> np.ndarray:
    """Each tract's Hispanic share in every draw: cells (chains, n, leaves, K) -> (chains, n, tracts)."""
    leaves = cells.shape[2]
    onehot = sp.csr_matrix((np.ones(leaves), (np.arange(leaves), prior.leaf_parent)), shape=(leaves, prior.n_parents))
    flat = lambda a: a.reshape(-1, leaves)  # noqa: E731
    hisp = (onehot.T @ flat(cells[..., hispanic].sum(axis=-1, dtype=float)).T).T
    total = (onehot.T @ flat(cells.sum(axis=-1, dtype=float)).T).T
    return (hisp / np.maximum(total, 1.0)).reshape(*cells.shape[:2], prior.n_parents)


def run(n_counties: int, draws: int, tune: int, thin: int, seed: int, topdown: bool, options: dict) -> dict:
    geo, truth = synthetic_state(n_counties, random_seed=seed)
    census = census_queries(geo, TableSpec.hispanic_race(), QUERIES)
    sigmas = production_sigmas(census)
    invariants = census.unit_invariants(["State"], [int(truth.sum())])
    mechanism = NoisyMeasurements(census.matrix, sigmas, invariants=invariants)
    start = time.perf_counter()
    y = mechanism.release(truth.ravel(), random_seed=seed + 1)
    release_s = time.perf_counter() - start
    start = time.perf_counter()
    gls = gls_estimate(census, y, sigmas, invariants)
    gls_s = time.perf_counter() - start
    row = {"counties": n_counties, "block_groups": geo.n_leaves, "cells": census.n_cells,
           "queries": census.n_queries, "release_s": release_s, "gls_s": gls_s}  # fmt: skip
    if topdown:
        from ppdinfer.census import topdown_estimate

        start = time.perf_counter()
        td = topdown_estimate(census, y, sigmas, invariants)
        row["topdown_s"] = time.perf_counter() - start
        row["rmse_topdown"] = float(np.sqrt(np.mean((td - truth) ** 2)))
    start = time.perf_counter()
    tree = sample_cells(census, mechanism, y, draws=draws, tune=tune, thin=thin, random_seed=seed + 2,
                        progressbar=False, **options)  # fmt: skip
    row["fit_s"] = time.perf_counter() - start
    row["load"] = os.getloadavg()[0]
    posterior = tree["posterior"]
    cells = posterior["cells"].values
    chains, kept = cells.shape[:2]
    flat = cells.reshape(chains, kept, -1)
    start = time.perf_counter()
    row["ess_cells"], row["rhat_cells"] = diagnostics(flat)
    hyper = np.concatenate(
        [posterior[name].values.reshape(chains, kept, -1) for name in ("alpha", "phi", "mean_size", "shares")], axis=2
    )
    row["ess_hyper"], row["rhat_hyper"] = diagnostics(hyper)
    hispanic = np.array([label.startswith("hispanic") for label in census.table.labels])
    shares = tract_hispanic_shares(cells, CellPrior(census), hispanic)
    row["ess_tract_hisp"], row["rhat_tract_hisp"] = diagnostics(shares)
    row["diag_s"] = time.perf_counter() - start
    row["min_ess"] = min(row["ess_cells"], row["ess_hyper"], row["ess_tract_hisp"])
    row["max_rhat"] = max(row["rhat_cells"], row["rhat_hyper"], row["rhat_tract_hisp"])
    row["us_per_cell_per_ess"] = 1e6 * row["fit_s"] / (census.n_cells * row["min_ess"])
    row["accept"] = float(tree["sample_stats"]["accept"].mean())
    row["alpha"] = float(posterior["alpha"].mean())
    row["phi"] = float(posterior["phi"].mean())
    row["rmse_posterior_mean"] = float(np.sqrt(np.mean((flat.mean(axis=(0, 1)) - truth.ravel()) ** 2)))
    row["rmse_gls"] = float(np.sqrt(np.mean((gls.cell_estimate - truth) ** 2)))
    row["peak_rss_mib"] = peak_mib()
    row["invariant_kept"] = bool((flat.sum(axis=2) == truth.sum()).all())
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--counties", type=int, nargs="+", default=[1, 10, 67])
    parser.add_argument("--draws", type=int, default=1250)
    parser.add_argument("--tune", type=int, default=200)
    parser.add_argument("--thin", type=int, default=4)
    parser.add_argument("--seed", type=int, default=2020)
    parser.add_argument("--topdown", action="store_true", help="also time the TopDown-like estimate")
    parser.add_argument("--options", default="{}", help="more keyword arguments of sample_cells, as JSON")
    args = parser.parse_args()
    for n in args.counties:
        row = run(n, args.draws, args.tune, args.thin, args.seed, args.topdown, json.loads(args.options))
        print(", ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in row.items()), flush=True)


if __name__ == "__main__":
    main()
