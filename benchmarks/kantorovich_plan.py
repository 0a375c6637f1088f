"""Time the Kantorovich plan on the line (the exact quantile coupling) against linear-programming solvers.

What is measured
----------------
For K support points (the integers 0..K-1) and two random pmfs (Dirichlet(1), seeded):

1. ``kantorovich_plan``: ppdinfer's plan, the exact quantile coupling of
   ``ppdinfer.geometry.wasserstein`` (integer arithmetic on the binary values of the masses), with
   ``tie_tolerance`` 0 and 1e-12;
2. ``ot.emd``: POT's network simplex on the dense K x K squared-distance cost (a general LP solver;
   with squared cost its optimum is the comonotone plan), only up to ``--lp-max`` points;
3. ``ot.emd_1d``: POT's dedicated one-dimensional solver (sorting, floating point), for reference.

For each size the table gives the seconds per plan (best of ``--repeats``), the plan sensitivity
each method reports (largest displacement with mass > 1e-12), and the largest absolute difference
between our dense plan and POT's where both were built.

Run with ``.venv/bin/python benchmarks/kantorovich_plan.py [--sizes 1000,10000,100000,1000000]
[--lp-max 3000] [--repeats 3]`` (about a minute with the defaults).
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import ot
from scipy import sparse

from ppdinfer.privacy.kantorovich import kantorovich_plan

MASS_TOLERANCE = 1e-12


def best_time(function, repeats: int):
    """(best seconds over ``repeats`` calls, the last result)."""
    best, result = float("inf"), None
    for _ in range(repeats):
        start = time.perf_counter()
        result = function()
        best = min(best, time.perf_counter() - start)
    return best, result


def sparse_sensitivity(rows, cols, mass, support) -> float:
    keep = mass > MASS_TOLERANCE
    return float(np.max(np.abs(support[rows[keep]] - support[cols[keep]])))


def run_size(size: int, lp_max: int, repeats: int, seed: int) -> dict[str, str]:
    rng = np.random.default_rng(seed)
    p, q = rng.dirichlet(np.ones(size)), rng.dirichlet(np.ones(size))
    support = np.arange(size, dtype=np.float64)
    row = {"K": f"{size:,}"}
    exact_time, plan = best_time(lambda: kantorovich_plan(p, q, support), repeats)
    tolerant_time, tolerant = best_time(lambda: kantorovich_plan(p, q, support, tie_tolerance=1e-12), repeats)
    row["ours (s)"] = f"{exact_time:.4f}"
    row["ours, tol 1e-12 (s)"] = f"{tolerant_time:.4f}"
    row["ours: pairs / sensitivity"] = f"{plan.rows.size:,} / {plan.sensitivity:g}"
    emd1d_time, emd1d = best_time(lambda: ot.emd_1d(support, support, p, q, metric="sqeuclidean", dense=False), repeats)
    emd1d = sparse.coo_matrix(emd1d)
    row["ot.emd_1d (s)"] = f"{emd1d_time:.4f}"
    row["emd_1d sensitivity"] = f"{sparse_sensitivity(emd1d.row, emd1d.col, emd1d.data, support):g}"
    if size <= lp_max:
        cost = np.subtract.outer(support, support) ** 2
        emd_time, emd = best_time(lambda: ot.emd(p, q, cost, numItermax=10**8), 1)
        rows, cols = np.nonzero(emd > MASS_TOLERANCE)
        row["ot.emd LP (s)"] = f"{emd_time:.3f}"
        row["LP sensitivity"] = f"{sparse_sensitivity(rows, cols, emd[rows, cols], support):g}"
        row["max abs(ours - LP)"] = f"{np.max(np.abs(plan.matrix() - emd)):.1e}"
    else:
        row["ot.emd LP (s)"] = row["LP sensitivity"] = row["max abs(ours - LP)"] = "-"
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,3000,10000,100000,1000000")
    parser.add_argument("--lp-max", type=int, default=3000, help="largest K for the dense LP (K^2 cost matrix)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=2026)
    args = parser.parse_args()
    rows = [run_size(int(size), args.lp_max, args.repeats, args.seed) for size in args.sizes.split(",")]
    header = list(rows[0])
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for row in rows:
        print("| " + " | ".join(row[key] for key in header) + " |")


if __name__ == "__main__":
    main()
