"""The summed-out gamma-Poisson window with a second child: the recurrence against the plain window sum (issue 44).

The epidemiologist's model with each county's population N_i ~ Poisson(e_i rate_i), rate_i ~ Gamma(a, a) integrated
out with N_i (e_i the last census), N_i released with discrete Gaussian noise (sigma 50) and the deaths
d_i ~ Poisson(exp(mu + tau z_i) N_i / 1e5) observed: N has two children. ``marginalize`` sums each window by the
compiled recurrence (``ppdinfer.pymc.window_ops``: the deaths' log density is linear in N after the log, so it adds
a slope to log q and a constant per cell) or, with ``recurrence=False``, by the plain logsumexp over every cell. The
table gives the seconds per log density + gradient evaluation of the marginal model and, for one NUTS run each
(PyMC's sampler, the same seed), the wall time and the smallest bulk ESS per second over mu, tau, z and a, with the
ratios (recurrence over plain) measured in the same process. Run:
``.venv/bin/python benchmarks/gamma_children_window.py [--counties 30] [--draws 1000]``.
"""

from __future__ import annotations

import argparse
import time
import warnings

import arviz as az
import numpy as np
import pymc as pm
import pytensor.tensor as pt
from epidemiologist_pymc import SIGMA, data

from ppdinfer.pymc import DiscreteGaussian
from ppdinfer.pymc.marginal import marginalize, sample_marginal


def model(prior_mean, released, deaths):
    with pm.Model() as m:
        a = pm.Gamma("a", 20.0, 1.0)  # the census is a few % off: rate_i near 1
        rate = pm.Gamma("rate", alpha=a, beta=a, shape=prior_mean.size)
        n = pm.Poisson("N", rate * prior_mean)
        DiscreteGaussian("y", mu=n, sigma=SIGMA, observed=released)
        mu = pm.Normal("mu", np.log(800.0), 1.0)
        tau = pm.HalfNormal("tau", 0.5)
        z = pm.Normal("z", 0.0, 1.0, shape=prior_mean.size)
        pm.Poisson("d", pt.exp(mu + tau * z) * n / 1e5, observed=deaths)
    return m


def evaluation_seconds(marginal, repeats: int) -> float:
    function = marginal.model.compile_logp(jacobian=True)
    gradient = marginal.model.compile_dlogp()
    point = marginal.model.initial_point()
    function(point), gradient(point)
    start = time.perf_counter()
    for _ in range(repeats):
        function(point)
        gradient(point)
    return (time.perf_counter() - start) / repeats


def run(marginal, draws, seed):
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        idata = sample_marginal(
            marginal, marginal_step="nuts", draws=draws, tune=draws, chains=2, cores=1, random_seed=seed,
            progressbar=False, compute_convergence_checks=False, nuts_sampler="pymc",
        )  # fmt: skip
    seconds = time.perf_counter() - start
    ess = az.ess(idata, method="bulk", var_names=["mu", "tau", "z", "a"])
    smallest = min(float(ess[name].min()) for name in ess.data_vars)
    return seconds, smallest


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--counties", type=int, default=30)
    parser.add_argument("--draws", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=300)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    built = model(*data(args.counties))
    rows = []
    for label, recurrence in (("recurrence", True), ("plain sum", False)):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            marginal = marginalize(built, recurrence=recurrence)
        per_eval = evaluation_seconds(marginal, args.repeats)
        seconds, ess = run(marginal, args.draws, args.seed)
        rows.append((label, marginal.latents[0].window_sum, marginal.cells, per_eval, seconds, ess))
    print(f"{args.counties} counties, 2 chains x {args.draws} draws ({args.draws} tuning), PyMC's NUTS")
    print(f"{'window sum':<12} {'cells':>7} {'ms/eval':>8} {'seconds':>8} {'min ESS':>8} {'ESS/s':>7}")
    for label, how, cells, per_eval, seconds, ess in rows:
        print(f"{label:<12} {cells:7d} {1e3 * per_eval:8.3f} {seconds:8.1f} {ess:8.0f} {ess / seconds:7.1f}  ({how})")
    (_, _, _, e0, s0, n0), (_, _, _, e1, s1, n1) = rows
    print(f"ratio (plain / recurrence): {e1 / e0:.1f}x per evaluation, {(n0 / s0) / (n1 / s1):.1f}x ESS per second")


if __name__ == "__main__":
    main()
