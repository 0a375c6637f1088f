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
(seconds / (cells x min ESS)), the peak resident memory of the fit, and the RMSE of the posterior mean,
the GLS estimate and (``--topdown``) the TopDown-like estimate against the true cells.

The exact-sampler reference (``exact_*``): the same draws shuffled across chains and iterations (one
permutation for every variable), then the same estimator. That is what independent draws with the
same marginals would score, so it separates the estimator's own spread from the sampler's mixing. The
min over tens of thousands of cells, many of them 0 in all but a few draws, falls with the number of
cells even for exact draws (a cell non-zero in 3 of 2,500 draws scores about 1,000-1,250). Hence
``us_per_cell_per_exact_ess`` (seconds / (cells x the reference's min ESS)): what an exact sampler at
the same cost per draw would score, and ``ess_cells_q001`` beside its reference, a tail that does not
hang on one cell.

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


def diagnostics(values: np.ndarray, order: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Bulk ESS and R-hat of the variables of draws (chains, n, ...) that vary. With ``order`` (a permutation
    of the chains x n draws), the draws are first shuffled by it: the ESS an exact sampler with the same
    marginals would get from the same estimator."""
    chains, n = values.shape[:2]
    flat = values.reshape(chains * n, -1)
    ess, rhat = [], []
    for start in range(0, flat.shape[1], 4096):
        block = flat[:, start : start + 4096] if order is None else flat[order, start : start + 4096]
        varying = np.ptp(block, axis=0) > 0
        e, r = ess_rhat(block[:, varying].reshape(chains, n, -1))
        ess.append(e)
        rhat.append(r)
    return np.concatenate(ess), np.concatenate(rhat)


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
    row["peak_rss_mib"] = peak_mib()  # the fit's: before the diagnostics' copies
    start = time.perf_counter()
    hyper = np.concatenate(
        [posterior[name].values.reshape(chains, kept, -1) for name in ("alpha", "phi", "mean_size", "shares")], axis=2
    )
    hispanic = np.array([label.startswith("hispanic") for label in census.table.labels])
    shares = tract_hispanic_shares(cells, CellPrior(census), hispanic)
    order = np.random.default_rng(seed + 3).permutation(chains * kept)
    for name, values in (("cells", flat), ("hyper", hyper), ("tract_hisp", shares)):
        ess, rhat = diagnostics(values)
        row[f"ess_{name}"], row[f"rhat_{name}"] = float(np.nanmin(ess)), float(np.nanmax(rhat))
        exact, _ = diagnostics(values, order)
        row[f"exact_ess_{name}"] = float(np.nanmin(exact))
        if name == "cells":
            row["ess_cells_q001"] = float(np.quantile(ess, 0.001))
            row["exact_ess_cells_q001"] = float(np.quantile(exact, 0.001))
    row["diag_s"] = time.perf_counter() - start
    row["min_ess"] = min(row["ess_cells"], row["ess_hyper"], row["ess_tract_hisp"])
    row["exact_min_ess"] = min(row["exact_ess_cells"], row["exact_ess_hyper"], row["exact_ess_tract_hisp"])
    row["max_rhat"] = max(row["rhat_cells"], row["rhat_hyper"], row["rhat_tract_hisp"])
    row["us_per_cell_per_draw"] = 1e6 * row["fit_s"] / (census.n_cells * chains * kept)
    row["us_per_cell_per_ess"] = 1e6 * row["fit_s"] / (census.n_cells * row["min_ess"])
    row["us_per_cell_per_exact_ess"] = 1e6 * row["fit_s"] / (census.n_cells * row["exact_min_ess"])
    row["accept"] = float(tree["sample_stats"]["accept"].mean())
    row["alpha"] = float(posterior["alpha"].mean())
    row["phi"] = float(posterior["phi"].mean())
    row["rmse_posterior_mean"] = float(np.sqrt(np.mean((flat.mean(axis=(0, 1)) - truth.ravel()) ** 2)))
    row["rmse_gls"] = float(np.sqrt(np.mean((gls.cell_estimate - truth) ** 2)))
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
