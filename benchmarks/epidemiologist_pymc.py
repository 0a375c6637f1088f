"""Smallest bulk ESS per second: ppdinfer.pymc.sample against plain pm.sample on an epidemiologist's model (issue 44).

30 counties; deaths d_i observed exactly, populations N_i released with discrete Gaussian noise (sigma 50),
d_i ~ Poisson(r_i N_i / 1e5), log r_i ~ Normal(mu, tau). N has two children (its release and the deaths), which
ppdinfer's compiled augmentation kernel and its summing out now both evaluate. The table gives, per sampler, the
wall time (the compilation included: each sampler starts from a fresh model), the smallest bulk ESS over every
variable (mu, tau, the log rates' offsets, and N where it is sampled or drawn) and ESS per second, with the ratio
against plain pm.sample measured in the same run (and the ratio over mu, tau and z alone: plain pm.sample's
Metropolis on N barely moves, so the all-variable ratio is set by N). Where nutpie or NumPyro is installed (the
``fast`` extra), the summed-out model is also sampled by each (``nuts_sampler``); plain pm.sample cannot hand N to
either (N is discrete), and a missing backend's row is skipped with a message. Run:
``.venv/bin/python benchmarks/epidemiologist_pymc.py [--counties 30] [--draws 1000] [--chains 2]``.
"""

from __future__ import annotations

import argparse
import time
import warnings

import arviz as az
import numpy as np
import pymc as pm
import pytensor.tensor as pt
from fast_backends import installed

import ppdinfer.pymc as ppm
from ppdinfer.mechanisms import DiscreteGaussian as DiscreteGaussianMechanism
from ppdinfer.pymc import DiscreteGaussian

SIGMA = 50.0


def data(counties: int, seed: int = 2026):
    """(prior mean of N, released N, deaths): county sizes 5,000 to 200,000, mortality about 800 per 100,000."""
    rng = np.random.default_rng(seed)
    population = np.round(np.exp(rng.uniform(np.log(5e3), np.log(2e5), counties))).astype(np.int64)
    rate = np.exp(np.log(800.0) + 0.2 * rng.normal(size=counties))
    deaths = rng.poisson(rate * population / 1e5)
    released = DiscreteGaussianMechanism(SIGMA).release(population, random_seed=rng)
    prior_mean = np.round(population * np.exp(0.05 * rng.normal(size=counties)))  # last census, a few % off
    return prior_mean.astype(float), np.asarray(released, dtype=float), deaths


def model(prior_mean, released, deaths):
    with pm.Model() as m:
        mu = pm.Normal("mu", np.log(800.0), 1.0)
        tau = pm.HalfNormal("tau", 0.5)
        z = pm.Normal("z", 0.0, 1.0, shape=prior_mean.size)
        n = pm.Poisson("N", prior_mean)
        DiscreteGaussian("y", mu=n, sigma=SIGMA, observed=released)
        pm.Poisson("d", pt.exp(mu + tau * z) * n / 1e5, observed=deaths)
    return m


def run(label, sampler, build, draws, tune, chains, seed):
    start = time.perf_counter()
    with build(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        idata = sampler(
            draws=draws,
            tune=tune,
            chains=chains,
            cores=1,
            random_seed=seed,
            progressbar=False,
            compute_convergence_checks=False,
        )
    seconds = time.perf_counter() - start
    ess = az.ess(idata, method="bulk")
    names = [name for name in ("mu", "tau", "z", "N") if name in ess]
    smallest = min(float(ess[name].min()) for name in names)
    theta = min(float(ess[name].min()) for name in ("mu", "tau", "z"))
    method = idata.posterior.attrs.get("ppdinfer_method", "-")
    return {
        "label": label,
        "seconds": seconds,
        "ess": smallest,
        "per_second": smallest / seconds,
        "method": method,
        "theta_per_second": theta / seconds,
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--counties", type=int, default=30)
    parser.add_argument("--draws", type=int, default=1000)
    parser.add_argument("--tune", type=int, default=1000)
    parser.add_argument("--chains", type=int, default=2)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    values = data(args.counties)

    def build():
        return model(*values)

    runs = [
        run("pm.sample (plain)", pm.sample, build, args.draws, args.tune, args.chains, args.seed),
        run(
            "ppdinfer augment",
            lambda **kw: ppm.sample(method="augment", **kw),
            build,
            args.draws,
            args.tune,
            args.chains,
            args.seed,
        ),
        run("ppdinfer auto", ppm.sample, build, args.draws, args.tune, args.chains, args.seed),
    ]
    for backend in installed():  # the summed-out model is continuous: any NUTS backend samples it
        runs.append(
            run(
                f"ppdinfer {backend}",
                lambda backend=backend, **kw: ppm.sample(method="marginalize", nuts_sampler=backend, **kw),
                build,
                args.draws,
                args.tune,
                args.chains,
                args.seed,
            )
        )
    base, theta_base = runs[0]["per_second"], runs[0]["theta_per_second"]
    print(f"{args.counties} counties, {args.chains} chains x {args.draws} draws ({args.tune} tuning)")
    print(
        f"{'sampler':<20} {'method':<12} {'seconds':>8} {'min ESS':>8} {'ESS/s':>8} {'ratio':>6} {'ratio (mu, tau, z only)':>24}"
    )
    for r in runs:
        print(
            f"{r['label']:<20} {r['method']:<12} {r['seconds']:8.1f} {r['ess']:8.0f} {r['per_second']:8.1f} "
            f"{r['per_second'] / base:6.1f} {r['theta_per_second'] / theta_base:24.1f}"
        )
    print("(wall time includes each sampler's compilation; run twice for numba's cache of the kernels)")
    print("(plain pm.sample on nutpie or NumPyro: not possible, N is discrete)")


if __name__ == "__main__":
    main()
