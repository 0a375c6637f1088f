"""Small-area estimation from noisy counts: ppdinfer's sampler against the plain PyMC model a user would write.

The model (200 hospitals, issue 23): exposures e_i, rates lambda_i ~ Gamma(a, a / m) (mean m),
hyperpriors a ~ Gamma(2, 1) and m ~ Gamma(2, 1), counts x_i ~ Poisson(e_i lambda_i), each count
released with Gaussian noise calibrated to (epsilon 1, delta 1e-6) by the analytic Gaussian
mechanism. Synthetic data from ``--seed`` (2023): e_i ~ Uniform(20, 200), lambda_i ~ Gamma(2, 1)
(a = m = 2), x_i ~ Poisson(e_i lambda_i), y_i = x_i + N(0, sigma^2).

Fits, in one run, each 2 chains on 2 cores (``--tune`` 1000, ``--draws`` 1000):

- ppdinfer: ``ppdinfer.pymc.Release("y", Gaussian(sigma), x)`` and ``ppdinfer.pymc.sample``
  (``method="auto"``, issue 34: x and lambda summed out over a window around y, NUTS on a and m, then x and
  lambda drawn exactly per draw; ``--method augment`` gives the data-augmentation step on x with lambda
  integrated out, lambda | x drawn exactly by ConjugateGamma, NUTS on a and m);
- plain PyMC: ``pm.Normal("y", mu=x, sigma=sigma)`` and ``pm.sample`` (PyMC's default: its
  Metropolis on the integer x, NUTS on the rest).

For each: wall time (compilation included), the smallest bulk ESS and the largest R-hat over
every variable, and bulk ESS per second; targets: ppdinfer within 60 s with min bulk ESS >= 400
and max R-hat <= 1.01, and >= 20x the plain model's min bulk ESS per second.

Then, with a and m fixed at 2 (the posterior factorizes over hospitals), ppdinfer's per-hospital
posterior means of lambda_i and x_i against exact per-unit rejection draws
(``ppdinfer.rejection_sample`` on each hospital's model): z = difference / sqrt(MCSE^2 +
sd^2 / n_exact), target |z| <= 3 (its spread over the hospitals is reported: with 400
comparisons about one |z| exceeds 3 by chance). Run: ``.venv/bin/python benchmarks/hospitals_pymc.py``.
"""

from __future__ import annotations

import argparse
import functools
import time
import warnings

import arviz as az
import numpy as np
import pymc as pm
from scipy import stats

import ppdinfer as pp
import ppdinfer.pymc as ppm
from ppdinfer.mechanisms.gaussian import analytic_gaussian_sigma

warnings.filterwarnings("ignore")


def synthetic_hospitals(n_hospitals: int, seed: int):
    """(exposure, x, y, sigma) of the synthetic problem, all drawn from ``seed``."""
    rng = np.random.default_rng([seed, n_hospitals])
    exposure = rng.uniform(20.0, 200.0, n_hospitals)
    rate = rng.gamma(2.0, 1.0, n_hospitals)
    x = rng.poisson(exposure * rate)
    sigma = analytic_gaussian_sigma(1.0, 1e-6)
    y = pp.mechanisms.Gaussian(sigma).release(x, random_seed=rng)
    return exposure, x, y, sigma


def hierarchical_model(exposure, y, sigma, *, plain: bool, fixed: float | None = None) -> pm.Model:
    """The model: ppdinfer's Release, or a plain pm.Normal release; a and m fixed at ``fixed`` if given."""
    with pm.Model(coords={"hospital": np.arange(len(y))}) as model:
        a = fixed if fixed is not None else pm.Gamma("a", 2.0, 1.0)
        m = fixed if fixed is not None else pm.Gamma("m", 2.0, 1.0)
        rate = pm.Gamma("rate", alpha=a, beta=a / m, dims="hospital")
        x = pm.Poisson("x", rate * exposure, dims="hospital", initval=np.clip(np.round(y), 0, None).astype(int))
        if plain:
            pm.Normal("y", mu=x, sigma=sigma, observed=y, dims="hospital")
        else:
            ppm.Release("y", pp.mechanisms.Gaussian(sigma), x, observed=y, dims="hospital")
    return model


def fit(model, sampler, draws, tune, seed):
    start = time.perf_counter()
    with model:
        idata = sampler(
            draws=draws,
            tune=tune,
            chains=2,
            cores=2,
            random_seed=seed,
            progressbar=False,
            compute_convergence_checks=False,
        )
    seconds = time.perf_counter() - start
    ess = az.ess(idata, method="bulk")
    rhat = az.rhat(idata)
    min_ess = min(float(ess[name].min()) for name in ess.data_vars)
    max_rhat = max(float(rhat[name].max()) for name in rhat.data_vars)
    return idata, seconds, min_ess, max_rhat


def exact_per_unit(exposure, y, sigma, draws, seed):
    """Exact rejection draws of (lambda_i, x_i) for each hospital with a = m = 2: mean and sd of each."""
    means, sds = np.empty((2, len(y))), np.empty((2, len(y)))
    for i, (e, y_i) in enumerate(zip(exposure, y, strict=True)):
        unit = pp.PPDModel(
            pp.priors.Gamma(2.0, 1.0), pp.generators.Poisson(e), pp.mechanisms.Gaussian(sigma), names="rate"
        )
        result = pp.rejection_sample(
            unit, y_i, draws=draws, random_seed=np.random.SeedSequence([seed, i]), progressbar=False
        )
        for row, name in enumerate(("rate", "x")):
            values = result["posterior"][name].values.reshape(-1)
            means[row, i], sds[row, i] = values.mean(), values.std()
    return means, sds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hospitals", type=int, default=200)
    parser.add_argument("--draws", type=int, default=1000)
    parser.add_argument("--tune", type=int, default=1000)
    parser.add_argument("--exact-draws", type=int, default=4000)
    parser.add_argument("--seed", type=int, default=2023)
    parser.add_argument("--method", default="auto", choices=["auto", "augment", "marginalize"])
    args = parser.parse_args()
    ppd_sample = functools.partial(ppm.sample, method=args.method)
    exposure, x, y, sigma = synthetic_hospitals(args.hospitals, args.seed)
    print(
        f"{args.hospitals} hospitals (seed {args.seed}), Gaussian release sigma = {sigma:.3f} "
        f"(eps 1, delta 1e-6); counts {x.min()}..{x.max()}"
    )

    rows = {}
    for label, plain, sampler in (
        ("ppdinfer (Release + sample)", False, ppd_sample),
        ("plain PyMC (pm.Normal + pm.sample)", True, pm.sample),
    ):
        _, seconds, min_ess, max_rhat = fit(
            hierarchical_model(exposure, y, sigma, plain=plain), sampler, args.draws, args.tune, args.seed
        )
        rows[label] = (seconds, min_ess, max_rhat, min_ess / seconds)
        print(
            f"{label:38s} {seconds:7.1f} s  min bulk ESS {min_ess:8.1f}  max R-hat {max_rhat:6.3f}  "
            f"ESS/s {min_ess / seconds:8.2f}"
        )
    ours, plain = rows["ppdinfer (Release + sample)"], rows["plain PyMC (pm.Normal + pm.sample)"]
    met = ours[0] <= 60 and ours[1] >= 400 and ours[2] <= 1.01
    print(f"target: within 60 s, min bulk ESS >= 400, max R-hat <= 1.01: {'met' if met else 'MISSED'}")
    ratio = ours[3] / plain[3]
    print(
        f"min bulk ESS per second, ppdinfer / plain PyMC: {ratio:.0f}x (target >= 20x: "
        f"{'met' if ratio >= 20 else 'MISSED'})"
    )

    idata, seconds, min_ess, max_rhat = fit(
        hierarchical_model(exposure, y, sigma, plain=False, fixed=2.0), ppd_sample, args.draws, args.tune, args.seed + 1
    )
    start = time.perf_counter()
    exact_mean, exact_sd = exact_per_unit(exposure, y, sigma, args.exact_draws, args.seed)
    exact_seconds = time.perf_counter() - start
    print(
        f"a = m = 2 fixed: ppdinfer {seconds:.1f} s (min bulk ESS {min_ess:.0f}, max R-hat {max_rhat:.3f}); exact "
        f"per-unit rejection {args.exact_draws} draws per hospital in {exact_seconds:.1f} s"
    )
    beyond = 0
    for row, name in enumerate(("rate", "x")):
        mean = idata["posterior"][name].mean(("chain", "draw")).values
        mcse = az.mcse(idata, var_names=[name])[name].values
        z = (mean - exact_mean[row]) / np.sqrt(mcse**2 + exact_sd[row] ** 2 / args.exact_draws)
        beyond += int(np.sum(np.abs(z) > 3))
        print(
            f"  {name}: z = (ppdinfer - exact) / se over {len(z)} hospitals: mean {z.mean():+.2f}, sd {z.std():.2f}, "
            f"largest |z| {np.abs(z).max():.2f}, |z| > 3 for {np.sum(np.abs(z) > 3)}; KS against N(0, 1): "
            f"p = {stats.kstest(z, 'norm').pvalue:.2f}"
        )
    print(
        f"|z| > 3 in {beyond} of {2 * args.hospitals} comparisons (about {0.0027 * 2 * args.hospitals:.1f} by chance "
        "alone when both agree)"
    )


if __name__ == "__main__":
    main()
