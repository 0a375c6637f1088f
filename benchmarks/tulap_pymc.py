"""A continuous mean released through Tulap: NUTS (a zero gradient) against ppdinfer's gradient-free slice step.

The model (issue 34, part 4): mu ~ Normal(0, 10), x_i ~ Normal(mu, 1) for ``--units`` units (20), each x_i
released as y_i = x_i + T_i with T_i ~ Tulap(epsilon = 1) (``ppdinfer.mechanisms.Tulap``), whose density is
piecewise constant, so the central-difference gradient of the release's log density is zero almost everywhere.
Synthetic data from ``--seed`` (2024): mu = 1, x_i ~ Normal(1, 1), y_i from Tulap(1).

Fits, in one run, each 2 chains one after the other (``cores=1``, so that both share the machine alike):

- before: ``pm.sample(step=pm.NUTS())``, NUTS on mu and x (what ``ppdinfer.pymc.sample`` did before);
  ``--nuts-tune`` / ``--nuts-draws`` (300 / 300: it costs ~0.1-0.2 s an iteration);
- PyMC's ``Slice`` on x (one coordinate at a time, the model's whole log density each time), NUTS on mu;
- after: ``ppdinfer.pymc.sample``, which gives x ``SeparableSlice`` (``Mechanism.smooth`` is False for
  Tulap; every coordinate's slice update at once, as the release is separable) and mu NUTS; these two with
  ``--tune`` / ``--draws`` (1000 / 1000).

For each: wall time of pm.sample's sampling (``sampling_time``), bulk ESS of mu and its ESS per second, the
posterior mean and sd of mu and their MCSE. Then the exact posterior of mu by quadrature: the marginal
likelihood of unit i is sum_k pmf(k) [Phi(y_i - k + 1/2 - mu) - Phi(y_i - k - 1/2 - mu)] (Tulap's density is
the discrete Laplace pmf on unit intervals; |k| <= 80), times the prior, on a grid of 20,001 points of mu;
z = (mean - exact mean) / MCSE, target |z| <= 4; and the ratio of ESS per second, target >= 10.
Run: ``.venv/bin/python benchmarks/tulap_pymc.py``.
"""

from __future__ import annotations

import argparse
import logging
import time
import warnings

import arviz as az
import numpy as np
import pymc as pm
from scipy import stats

import ppdinfer.pymc as ppm
from ppdinfer.mechanisms import Tulap


def tulap_data(units: int, seed: int, epsilon: float = 1.0):
    """(y, mechanism): y_i = x_i + Tulap noise, x_i ~ Normal(1, 1)."""
    rng = np.random.default_rng([seed, units])
    mechanism = Tulap(epsilon)
    x = rng.normal(1.0, 1.0, units)
    return mechanism.release(x, random_seed=rng), mechanism


def tulap_model(y, mechanism) -> pm.Model:
    with pm.Model() as model:
        mu = pm.Normal("mu", 0.0, 10.0)
        x = pm.Normal("x", mu, 1.0, shape=len(y))
        ppm.Release("y", mechanism, x, observed=y)
    return model


def exact_posterior(y, epsilon: float = 1.0, grid_size: int = 20_001, k_max: int = 80):
    """Mean and sd of mu | y by quadrature of the exact marginal likelihood (x integrated out in closed form)."""
    b = np.exp(-epsilon)
    k = np.arange(-k_max, k_max + 1)
    log_pmf = np.log((1 - b) / (1 + b)) + np.abs(k) * np.log(b)
    grid = np.linspace(-6.0, 8.0, grid_size)
    log_lik = np.zeros(grid_size)
    for y_i in y:  # one unit at a time: (k, grid) arrays
        upper = y_i - k[:, None] + 0.5 - grid[None, :]
        log_lik += np.log(np.exp(log_pmf) @ (stats.norm.cdf(upper) - stats.norm.cdf(upper - 1.0)))
    log_post = log_lik + stats.norm.logpdf(grid, 0.0, 10.0)
    weights = np.exp(log_post - log_post.max())
    weights /= weights.sum()
    mean = float(weights @ grid)
    return mean, float(np.sqrt(weights @ (grid - mean) ** 2))


def fit(model, sampler, draws, tune, seed, **kwargs):
    start = time.perf_counter()
    with model, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        idata = sampler(
            draws=draws,
            tune=tune,
            chains=2,
            cores=1,
            random_seed=seed,
            progressbar=False,
            compute_convergence_checks=False,
            **kwargs,
        )
    wall = time.perf_counter() - start
    posterior = idata["posterior"]
    sampling = float(idata["sample_stats"].attrs.get("sampling_time", wall))
    ess = float(az.ess(posterior, var_names=["mu"], method="bulk")["mu"])
    mcse = float(az.mcse(posterior, var_names=["mu"])["mu"])
    mu = posterior["mu"].values
    return {"wall": wall, "sampling": sampling, "ess": ess, "mcse": mcse, "mean": mu.mean(), "sd": mu.std()}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--units", type=int, default=20)
    parser.add_argument("--seed", type=int, default=2024)
    parser.add_argument("--tune", type=int, default=1000)
    parser.add_argument("--draws", type=int, default=1000)
    parser.add_argument("--nuts-tune", type=int, default=300)
    parser.add_argument("--nuts-draws", type=int, default=300)
    args = parser.parse_args(argv)
    logging.getLogger("pymc").setLevel(logging.ERROR)

    y, mechanism = tulap_data(args.units, args.seed)
    exact_mean, exact_sd = exact_posterior(y)
    print(f"Tulap(1) releases of {args.units} units; exact posterior of mu: mean {exact_mean:.4f}, sd {exact_sd:.4f}")
    model = tulap_model(y, mechanism)
    with model:
        nuts = fit(model, pm.sample, args.nuts_draws, args.nuts_tune, args.seed, step=pm.NUTS())
        per_coordinate = fit(model, pm.sample, args.draws, args.tune, args.seed, step=[pm.Slice([model["x"]])])
    after = fit(model, ppm.sample, args.draws, args.tune, args.seed)
    rows = (("NUTS (before)", nuts), ("pm.Slice on x", per_coordinate), ("SeparableSlice (after)", after))
    for name, result in rows:
        z = (result["mean"] - exact_mean) / result["mcse"]
        print(
            f"{name:22s} wall {result['wall']:7.1f} s, sampling {result['sampling']:7.1f} s, bulk ESS(mu) "
            f"{result['ess']:7.1f}, ESS/s {result['ess'] / result['sampling']:8.2f}; mean {result['mean']:.4f} "
            f"(MCSE {result['mcse']:.4f}, z {z:+.2f}), sd {result['sd']:.4f}"
        )
    ratio = (after["ess"] / after["sampling"]) / (nuts["ess"] / nuts["sampling"])
    print(f"ESS per second, after / before: {ratio:.1f}x (target >= 10)")


if __name__ == "__main__":
    main()
