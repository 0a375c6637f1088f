"""Simulation-based calibration of the regression's two samplers on record-level simulations (regression_sbc).

Each simulation draws theta from the ``"regression"`` priors of scale ``--prior-scale`` (1), n records, clips them to
the box (x in [-6, 6], y in [-8, 8]) and releases the five statistics with Laplace noise at epsilon 1 (equal shares):
the release's true law. Fitted to each release:

- ``fit``, the normal approximation (NUTS, ``"regression"`` parametrization, one compiled twin whose release is
  swapped in, 1 chain of ``--draws`` after as many tuning steps), at each n of ``--sizes`` (2000);
- ``fit_records``, the exact sampler (2 chains of ``--records-draws``), at each n of ``--records-sizes`` (20).

Reported per sampler and n: the simulations, L, Pearson's chi-square p-value of each parameter's ranks (beta's
intercept and slope, sigma, mu_x, sd_x), a Kolmogorov-Smirnov p-value of the ranks' uniformity, the Bonferroni-
adjusted verdict, and for ``fit`` how many simulations its clipping check flagged. Run:
``.venv/bin/python benchmarks/regression_sbc.py [--simulations 100] [--sizes 2000] [--records-sizes 20]``.
"""

from __future__ import annotations

import argparse
import functools
import logging
import time
import warnings

import numpy as np
import pymc as pm
from scipy import stats

from ppdinfer.models import linear_regression as lr
from ppdinfer.models import regression_records, regression_sbc

BOX_X, BOX_Y = [(-6.0, 6.0)], (-8.0, 8.0)


class TwinSampler:
    """``fit``'s NUTS on one compiled twin, the release swapped in; counts the fits its clipping check flags."""

    def __init__(self, model, draws):
        self.model, self.draws, self.flagged = model, draws, 0
        self.twin = model.to_pymc(np.zeros(len(model.names)), mutable=True)

    def __call__(self, model, released, random_seed):
        with self.twin, warnings.catch_warnings():
            warnings.simplefilter("ignore")
            pm.set_data({"released": released})
            fit = pm.sample(draws=self.draws, tune=self.draws, chains=1, init="jitter+adapt_full",
                            random_seed=random_seed, progressbar=False, compute_convergence_checks=False)  # fmt: skip
            self.flagged += self.model.check_clipping(fit) > 1e-3
        return fit


def report(label, result, extra=""):
    cells = []
    for name in regression_sbc.NAMES:
        ranks = result.ranks[name].values.reshape(result.ranks.sizes["simulation"], -1)
        chi = np.atleast_1d(result.p_values[name].values)
        for k in range(ranks.shape[1]):
            u = (ranks[:, k] + np.random.default_rng(k).random(len(ranks))) / (result.draws + 1)
            cells.append(f"{name}[{k}] {chi[k]:.2g}/{stats.kstest(u, 'uniform').pvalue:.2g}")
    print(f"{label}: {result.ranks.sizes['simulation']} simulations, L = {result.draws}, {result.bins} bins, "
          f"{result.seconds:.0f} s; p-values chi-square/KS: " + ", ".join(cells)
          + f"; adjusted p {result.p_value:.2g}, calibrated {result.calibrated}{extra}")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--simulations", type=int, default=100)
    parser.add_argument("--sizes", default="2000")
    parser.add_argument("--records-sizes", default="20")
    parser.add_argument("--records-simulations", type=int, default=200)
    parser.add_argument("--draws", type=int, default=500)
    parser.add_argument("--records-draws", type=int, default=2000)
    parser.add_argument("--prior-scale", type=float, default=1.0)
    parser.add_argument("--seed", type=int, default=11)
    args = parser.parse_args()
    logging.getLogger("pymc").setLevel(logging.ERROR)
    for n in (int(v) for v in args.records_sizes.split(",") if v):
        model = lr.LinearRegressionModel(n, BOX_X, BOX_Y, 1.0, prior_scale=args.prior_scale)
        fit = functools.partial(regression_records.fit_records, draws=args.records_draws, tune=args.records_draws // 5)
        result = regression_sbc.calibrate(model, fit, simulations=args.records_simulations, random_seed=args.seed)
        report(f"fit_records, n = {n}", result)
    for n in (int(v) for v in args.sizes.split(",") if v):
        model = lr.LinearRegressionModel(n, BOX_X, BOX_Y, 1.0, prior_scale=args.prior_scale,
                                         parametrization="regression")  # fmt: skip
        sampler = TwinSampler(model, args.draws)
        start = time.perf_counter()
        result = regression_sbc.calibrate(model, sampler, simulations=args.simulations, random_seed=args.seed)
        report(
            f"fit, n = {n}", result, f"; clipping flagged in {sampler.flagged} ({time.perf_counter() - start:.0f} s)"
        )


if __name__ == "__main__":
    main()
