"""Logistic regression from Laplace-noised sufficient statistics: the normal approximation against the exact posterior.

One covariate, x ~ N(0, 1) clipped to [-4, 4], y ~ Bernoulli(logit^-1(-0.5 + x)); released sum(x), sum(y), sum(x^2)
and sum(xy), each with Laplace noise at an equal share of ``--epsilon`` (1); both fits use the same priors
(``ppdinfer.models.logistic_regression``: Normal(0, 2.5) coefficients and mu_x, HalfNormal(2.5) sd_x):

- exact: :func:`ppdinfer.models.regression_records.fit_records` (record-level data augmentation), 2 chains of
  ``--draws`` (20,000) draws, the baseline;
- approximate: ``LogisticRegressionModel.fit`` (NUTS on the statistics' normal approximation, Gauss-Hermite
  moments), 2 x 1,000 draws, with T centred on its law given the release (the default) and given theta
  (``centring="prior"``, the linear model's choice).

Reported per n (``--sizes`` 50, 200, 2000) and parameter: both posterior means and sds, the difference of the
means in units of the exact sd (with its Monte Carlo error) and the ratio of the sds; each fit's wall seconds
(compilation included), smallest bulk ESS and ESS per second. Then ``--replicates`` (40) replicate releases at
``--coverage-n`` (2,000) of fresh records and noise, each fitted by the twin (one model, the release in
``pm.Data``; 500 / 500 draws, 1 chain): the coverage of the central 90% intervals of the coefficients with the
binomial standard error. Run: ``.venv/bin/python benchmarks/logistic_regression.py``.
"""

from __future__ import annotations

import argparse
import logging
import time
import warnings

import arviz as az
import numpy as np
import pymc as pm

from ppdinfer.models import logistic_regression as lg
from ppdinfer.models import regression_records

TRUTH = np.array([-0.5, 1.0])
NAMES = (("beta", 0, "intercept"), ("beta", 1, "slope"), ("mu_x", 0, "mu_x"), ("sd_x", 0, "sd_x"))


def release(model, seed):
    x, y = lg.synthetic_records(model.n, TRUTH, random_seed=np.random.SeedSequence(seed, spawn_key=(0,)))
    return model.release(x, y, random_seed=np.random.SeedSequence(seed, spawn_key=(1,)))


def _draws(fit, name, index):
    return fit["posterior"][name].values[..., index]


def _timed(fit_function):
    start = time.perf_counter()
    fit = fit_function()
    seconds = time.perf_counter() - start
    ess = min(float(az.ess(_draws(fit, name, index))) for name, index, _ in NAMES)
    return fit, seconds, ess


def compare(n, epsilon, draws, seed):
    model = lg.model(n=n, epsilon=epsilon)
    released = release(model, seed + n)
    exact, exact_s, exact_ess = _timed(
        lambda: regression_records.fit_records(model, released, draws=draws, tune=draws // 10, random_seed=seed)
    )
    fits = {}
    for centring in ("release", "prior"):
        twin = lg.model(n=n, epsilon=epsilon, centring=centring)
        fits[centring] = _timed(lambda twin=twin: twin.fit(released, draws=1000, tune=1000, chains=2, random_seed=seed))
    approx = fits["release"][0]
    print(f"{'n':>5} {'parameter':<10}{'exact':>16}{'normal approx.':>18}{'diff / sd':>16}{'sd ratio':>9}")
    for name, index, label in NAMES:
        e, a = _draws(exact, name, index), _draws(approx, name, index)
        sd = e.std()
        mcse = np.sqrt(1.0 / float(az.ess(e)) + 1.0 / float(az.ess(a)))
        print(f"{n:>5} {label:<10}{e.mean():>9.3f} ±{sd:>5.3f}{a.mean():>11.3f} ±{a.std():>5.3f}"
              f"{(a.mean() - e.mean()) / sd:>+9.2f} ±{mcse:>4.2f}{a.std() / sd:>9.2f}")  # fmt: skip
    print(f"{n:>5} exact: {exact_s:.1f} s, smallest ESS {exact_ess:.0f}, {exact_ess / exact_s:.1f} ESS/s")
    for centring, (fit, seconds, ess) in fits.items():
        depth = int(fit["sample_stats"]["tree_depth"].max())
        print(f"{n:>5} approx ({centring} centring): {seconds:.1f} s, smallest ESS {ess:.0f}, "
              f"{ess / seconds:.1f} ESS/s ({ess / seconds / (exact_ess / exact_s):.1f} x exact), largest tree depth "
              f"{depth}, divergences {int(fit['sample_stats']['diverging'].sum())}, quadrature error "
              f"{fit.attrs['quadrature_error']:.1e}")  # fmt: skip


def coverage(n, epsilon, replicates, seed):
    model = lg.model(n=n, epsilon=epsilon)
    twin = model.to_pymc(release(model, seed), mutable=True)
    hits = []
    start = time.perf_counter()
    for r in range(replicates):
        with twin:
            pm.set_data({"released": release(model, seed + 1 + r)})
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                fit = pm.sample(draws=500, tune=500, chains=1, init="jitter+adapt_full", random_seed=[seed, r],
                                progressbar=False, compute_convergence_checks=False)  # fmt: skip
        model.check_clipping(fit)
        model.check_quadrature(fit)
        lo, hi = np.quantile(fit["posterior"]["beta"].values.reshape(-1, 2), [0.05, 0.95], axis=0)
        hits.append((lo <= TRUTH) & (TRUTH <= hi))
    rate = np.mean(hits, axis=0)
    print(f"coverage of 90% intervals, n = {n}, {replicates} replicate releases ({time.perf_counter() - start:.0f} s): "
          f"intercept {rate[0]:.3f}, slope {rate[1]:.3f} (binomial se at 0.9: {np.sqrt(0.09 / replicates):.3f})")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="50,200,2000")
    parser.add_argument("--epsilon", type=float, default=1.0)
    parser.add_argument("--draws", type=int, default=20000)
    parser.add_argument("--seed", type=int, default=2021)
    parser.add_argument("--replicates", type=int, default=40)
    parser.add_argument("--coverage-n", type=int, default=2000)
    args = parser.parse_args()
    warnings.filterwarnings("ignore")
    logging.getLogger("pymc").setLevel(logging.ERROR)
    for n in (int(v) for v in args.sizes.split(",") if v):
        compare(n, args.epsilon, args.draws, args.seed)
    if args.replicates:
        coverage(args.coverage_n, args.epsilon, args.replicates, args.seed + 1000)


if __name__ == "__main__":
    main()
