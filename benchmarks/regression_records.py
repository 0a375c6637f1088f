"""The normal approximation of linear_regression against the exact record-level posterior, at n = 50, 200, 2,000.

One covariate, x in [-4, 4], y in [-6, 6], the five statistics released with Laplace noise at epsilon 1 (equal
shares), records from ``synthetic_records`` (beta = (0.5, 1), sigma = 1, x ~ N(0, 1)); both fits use the same
priors (``parametrization="regression"``: Normal(0, 10) coefficients and mu_x, HalfNormal(10) scales):

- exact: :func:`ppdinfer.models.regression_records.fit_records` (record-level data augmentation), 2 chains of
  ``--draws`` draws;
- approximate: ``LinearRegressionModel.fit`` (NUTS on the statistics' normal approximation), 2 x 1,000 draws.

Reported per n and parameter: both posterior means and sds, the difference of the means in units of the exact
sd (with its Monte Carlo error) and the ratio of the sds; each fit's seconds and smallest bulk ESS. The record-level
chain mixes ever more slowly as n grows (its ESS is printed): at n = 2,000 its figures are rough.
Run: ``.venv/bin/python benchmarks/regression_records.py [--sizes 50,200,2000] [--draws 20000]``.
"""

from __future__ import annotations

import argparse
import time
import warnings

import arviz as az
import numpy as np

from ppdinfer.models import linear_regression, regression_records

NAMES = (("beta", 0, "intercept"), ("beta", 1, "slope"), ("sigma", None, "sigma"), ("mu_x", 0, "mu_x"),
         ("sd_x", 0, "sd_x"))  # fmt: skip


def _draws(fit, name, index):
    values = fit["posterior"][name].values
    return values if index is None else values[..., index]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="50,200,2000")
    parser.add_argument("--draws", type=int, default=20000)
    args = parser.parse_args()
    warnings.filterwarnings("ignore")
    print(f"{'n':>5} {'parameter':<10}{'exact':>16}{'normal approx.':>18}{'diff / sd':>16}{'sd ratio':>9}")
    for n in (int(v) for v in args.sizes.split(",")):
        model = linear_regression.LinearRegressionModel(n, [(-4.0, 4.0)], (-6.0, 6.0), 1.0,
                                                        parametrization="regression")  # fmt: skip
        x, y = linear_regression.synthetic_records(n, random_seed=n)
        released = model.release(x, y, random_seed=n + 1)
        start = time.perf_counter()
        exact = regression_records.fit_records(model, released, draws=args.draws, tune=args.draws // 10,
                                               random_seed=1)  # fmt: skip
        exact_s = time.perf_counter() - start
        start = time.perf_counter()
        approx = model.fit(released, draws=1000, tune=1000, chains=2, random_seed=1)
        approx_s = time.perf_counter() - start
        ess_exact, ess_approx = [], []
        for name, index, label in NAMES:
            e, a = _draws(exact, name, index), _draws(approx, name, index)
            ee, ea = float(az.ess(e)), float(az.ess(a))
            ess_exact.append(ee)
            ess_approx.append(ea)
            sd = e.std()
            diff = (a.mean() - e.mean()) / sd
            mcse = np.sqrt(1.0 / ee + 1.0 / ea)
            print(f"{n:>5} {label:<10}{e.mean():>9.3f} ±{sd:>5.3f}{a.mean():>11.3f} ±{a.std():>5.3f}"
                  f"{diff:>+9.2f} ±{mcse:>4.2f}{a.std() / sd:>9.2f}")  # fmt: skip
        print(f"{n:>5} exact {exact_s:.1f} s (smallest ESS {min(ess_exact):.0f}); normal approximation "
              f"{approx_s:.1f} s (smallest ESS {min(ess_approx):.0f})")  # fmt: skip


if __name__ == "__main__":
    main()
