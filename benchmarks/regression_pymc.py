"""Regression from Laplace-noised sufficient statistics: the gallery's twin against a plain hand-written model.

The economist's task (issue 44, part 3; the headline example of Bernstein & Sheldon 2019 and of Ju, Awan,
Gong & Rao 2022): n = 2,000 records, x ~ N(0, 1), y = 0.5 + 1.0 x + N(0, 1), clipped to x in [-4, 4],
y in [-6, 6]; released sum(x), sum(y), sum(x^2), sum(xy), sum(y^2), each with Laplace noise at an equal
share of epsilon = 1 (``ppdinfer.models.linear_regression``).

Fits, in one run, 2 chains one after the other (``cores=1``):

- after: ``LinearRegressionModel.fit``: the statistics non-centred (T = n m + L z), a dense mass matrix
  (``init="jitter+adapt_full"``); ``--tune`` / ``--draws`` (800 / 2000);
- plain: the same likelihood written by hand the obvious way: T ~ MvNormal(n m, n V) as a latent,
  s ~ Laplace(T, b), default ``pm.sample`` (diagonal mass matrix); ``--plain-tune`` / ``--plain-draws``
  (500 / 500: it hits the maximum tree depth, so it is run short and compared by ESS per second).

For each: wall time of the whole fit (compilation included) and of pm.sample's sampling, min bulk ESS over
the coefficients and over every variable, ESS per second, R-hat, divergences, the largest tree depth. Target: the
twin reaches min bulk ESS >= 1,000 over the coefficients in <= 30 s. Where nutpie or NumPyro is installed (the
``fast`` extra), the twin and the plain model are also fitted by each (``nuts_sampler``; a missing one's rows are
skipped with a message).

Then ``--replicates`` (40) replicate releases of fresh records and noise at the same truth, each fitted by
the twin (one model, the release in ``pm.Data``; ``--rep-tune`` / ``--rep-draws`` 500 / 500, 1 chain): the
coverage of the central 90% intervals of the intercept, the slope and sigma, with the binomial standard
error. First (``--sizes`` 50 200 2000, ``--law-replicates`` 4000; ``--only-law`` stops there) the normal
approximation of T | theta against T's exact law of clipped records, by Monte Carlo at the truth: how
often the Mahalanobis distance passes the chi^2 90% quantile, and the largest Kolmogorov distance of a
standardized statistic from N(0, 1). Run: ``.venv/bin/python benchmarks/regression_pymc.py``.
"""

from __future__ import annotations

import argparse
import logging
import time
import warnings

import arviz as az
import numpy as np
import pymc as pm
import pytensor.tensor as pt
from fast_backends import installed, min_bulk_ess
from scipy import stats

from ppdinfer.models import linear_regression as lr

TRUTH = {"beta": np.array([0.5, 1.0]), "sigma": 1.0}


def release(model, seed):
    x, y = lr.synthetic_records(
        model.n, TRUTH["beta"], TRUTH["sigma"], random_seed=np.random.SeedSequence(seed, spawn_key=(0,))
    )
    return model.release(x, y, random_seed=np.random.SeedSequence(seed, spawn_key=(1,)))


def plain_model(model, released) -> pm.Model:
    """The hand-written model: the statistics a centred MvNormal latent, the release Laplace around them."""
    with pm.Model() as plain:
        beta = pm.Normal("beta", 0.0, model.prior_scale, shape=2)
        sigma = pm.HalfNormal("sigma", model.prior_scale)
        mu_x = pm.Normal("mu_x", 0.0, model.prior_scale, shape=1)
        sd_x = pm.HalfNormal("sd_x", model.prior_scale, shape=1)
        m, V = lr.record_moments(beta, sigma, mu_x, pt.reshape(sd_x**2, (1, 1)))
        T = pm.MvNormal("T", mu=model.n * m, cov=model.n * V, shape=len(model.names))
        pm.Laplace("s", mu=T, b=model.noise_scale, observed=released)
    return plain


def report(name, fit, wall):
    ess = az.ess(fit, var_names=["beta"], method="bulk")["beta"].values
    every = min_bulk_ess(fit)
    rhats = az.rhat(fit, var_names=["beta", "sigma"])
    rhat = max(float(rhats[v].max()) for v in ("beta", "sigma"))
    stats = fit["sample_stats"]
    sampling = float(fit["sample_stats"].attrs.get("sampling_time", np.nan))
    depth = int(stats["tree_depth"].max()) if "tree_depth" in stats else int(np.log2(stats["n_steps"].max() + 1))
    print(
        f"{name:14s} wall {wall:7.1f} s  sampling {sampling:7.1f} s  min bulk ESS(beta) {ess.min():7.0f}  "
        f"ESS/s (wall) {ess.min() / wall:7.1f}  min bulk ESS (every variable) {every:7.0f} ({every / wall:7.1f}/s)  "
        f"max R-hat {rhat:.3f}  divergences {int(stats['diverging'].sum())}  max tree depth {depth}"
    )
    post = fit["posterior"]
    print(
        f"       beta mean {post['beta'].mean(('chain', 'draw')).values.round(3)}  sigma {float(post['sigma'].mean()):.3f}"
    )
    return ess.min(), wall


def coverage(model, replicates, tune, draws, seed):
    twin = model.to_pymc(release(model, seed), mutable=True)
    hits = {"intercept": [], "slope": [], "sigma": []}
    pit = {key: [] for key in hits}  # the posterior CDF at the truth: uniform over releases if calibrated
    start = time.perf_counter()
    for r in range(replicates):
        with twin:
            pm.set_data({"released": release(model, seed + 1 + r)})
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                fit = pm.sample(
                    draws=draws,
                    tune=tune,
                    chains=1,
                    init="jitter+adapt_full",
                    random_seed=[seed, r],
                    progressbar=False,
                    compute_convergence_checks=False,
                )
        model.check_clipping(fit)
        post = fit["posterior"]
        for key, values, truth in [
            ("intercept", post["beta"].values[..., 0], TRUTH["beta"][0]),
            ("slope", post["beta"].values[..., 1], TRUTH["beta"][1]),
            ("sigma", post["sigma"].values, TRUTH["sigma"]),
        ]:
            lo, hi = np.quantile(values, [0.05, 0.95])
            hits[key].append(lo <= truth <= hi)
            pit[key].append(float(np.mean(values < truth)))
        print(f"  replicate {r}: " + "  ".join(f"{k} {int(hits[k][-1])} {pit[k][-1]:.3f}" for k in hits), flush=True)
    elapsed = time.perf_counter() - start
    print(f"coverage of 90% intervals over {replicates} replicate releases ({elapsed:.0f} s):")
    for key, h in hits.items():
        p = np.mean(h)
        u = np.array(pit[key])
        ks = stats.kstest(u, "uniform").pvalue
        print(
            f"  {key:9s} {p:.3f} +- {np.sqrt(0.9 * 0.1 / replicates):.3f} (binomial se at 0.9); posterior CDF at the "
            f"truth: mean {u.mean():.3f}, sd {u.std():.3f} (uniform: 0.500, 0.289), KS p {ks:.2g}"
        )


def record_level_model(model, released) -> pm.Model:
    """The exact model: the records as latents (non-centred, the twin's joint prior), clipped, summed, Laplace."""
    d, scale = model.d, model.prior_scale
    with pm.Model() as exact:
        mu = pm.Normal("mu", 0.0, scale, shape=d + 1)
        chol, _, _ = pm.LKJCholeskyCov("chol", n=d + 1, eta=2.0, sd_dist=pm.HalfNormal.dist(scale, shape=d + 1))
        e = pm.Normal("e", 0.0, 1.0, shape=(model.n, d + 1))
        w = mu + pt.dot(e, chol.T)
        bounds = np.vstack([model.x_bounds, model.y_bounds])
        w = pt.clip(w, bounds[:, 0], bounds[:, 1])
        w = pt.concatenate([pt.ones((model.n, 1)), w], axis=1)
        pairs = np.array(lr._pairs(d))
        T = (w[:, pairs[:, 0]] * w[:, pairs[:, 1]]).sum(axis=0)
        cov = pt.dot(chol, chol.T)
        slope = cov[0, 1] / cov[0, 0]
        pm.Deterministic("beta", pt.stack([mu[1] - mu[0] * slope, slope]))
        pm.Deterministic("sigma", pt.sqrt(cov[1, 1] - cov[0, 1] * slope))
        pm.Laplace("s", mu=T, b=model.noise_scale, observed=released)
    return exact


def exact_comparison(sizes, seed, tune, draws, epsilon):
    """Posterior of (beta, sigma) under the normal approximation against the record-level model, one release."""
    print(f"normal approximation against the record-level posterior (epsilon {epsilon}, one release each; 2 chains):")
    for n in sizes:
        model = lr.model(n=n, epsilon=epsilon)
        released = release(model, seed + n)
        approx = model.fit(released, draws=draws, tune=tune, chains=2, cores=1, random_seed=seed)
        start = time.perf_counter()
        with record_level_model(model, released), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            exact = pm.sample(
                draws=draws,
                tune=tune,
                chains=2,
                cores=1,
                random_seed=seed,
                init="jitter+adapt_full",
                progressbar=False,
                compute_convergence_checks=False,
            )
        seconds = time.perf_counter() - start
        rows = []
        for name, index in [("intercept", 0), ("slope", 1), ("sigma", None)]:
            a, b = (f["posterior"][name if index is None else "beta"].values for f in (approx, exact))
            if index is not None:
                a, b = a[..., index], b[..., index]
            rows.append(f"{name} {a.mean():.3f}/{b.mean():.3f} sd {a.std():.3f}/{b.std():.3f}")
        ess = az.ess(exact, var_names=["beta"], method="bulk")["beta"].values.min()
        rhat = float(az.rhat(exact, var_names=["beta"])["beta"].max())
        print(
            f"  n = {n:5d} (approximation/exact): "
            + "; ".join(rows)
            + f"  [exact: {seconds:.0f} s, min ESS {ess:.0f}, R-hat {rhat:.3f}]"
        )


def approximation_error(sizes, replicates, seed):
    """The normal approximation of T | theta against T's exact law (clipped records, Monte Carlo).

    At the truth, for each n: ``replicates`` datasets' clipped statistics T; the Mahalanobis distance
    d^2 = (T - n m)' (n V)^-1 (T - n m) should be chi^2 with K degrees of freedom. Reported: how often d^2
    passes the chi^2 90% quantile (0.10 if the approximation were exact) and the largest Kolmogorov
    distance between a statistic's standardized law and N(0, 1).
    """
    from scipy import stats as st

    rng = np.random.default_rng(seed)
    print(f"normal approximation of T | theta at the truth, {replicates} Monte Carlo datasets each:")
    for n in sizes:
        model = lr.model(n=n, epsilon=None)
        m, V = lr.record_moments(TRUTH["beta"], TRUTH["sigma"], [0.0], [[1.0]])
        draws = np.empty((replicates, len(m)))
        for r in range(replicates):
            x = rng.standard_normal((n, 1))
            y = TRUTH["beta"][0] + x[:, 0] * TRUTH["beta"][1] + TRUTH["sigma"] * rng.standard_normal(n)
            draws[r] = lr.statistics(x, y, model.x_bounds, model.y_bounds)
        centred = draws - n * m
        d2 = np.einsum("ri,ij,rj->r", centred, np.linalg.inv(n * V), centred)
        beyond = np.mean(d2 > st.chi2.ppf(0.9, len(m)))
        standardized = centred / np.sqrt(n * np.diag(V))
        ks = [st.kstest(standardized[:, i], "norm").statistic for i in range(len(m))]
        worst = int(np.argmax(ks))
        print(
            f"  n = {n:5d}: P(d^2 > chi2_K(0.9)) = {beyond:.3f} (0.100 +- {np.sqrt(0.09 / replicates):.3f}); "
            f"largest KS distance {max(ks):.3f} ({model.names[worst]}; 1% critical value "
            f"{1.63 / np.sqrt(replicates):.3f})"
        )


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=2000)
    parser.add_argument("--epsilon", type=float, default=1.0)
    parser.add_argument("--seed", type=int, default=2019)
    parser.add_argument("--tune", type=int, default=800)
    parser.add_argument("--draws", type=int, default=2000)
    parser.add_argument("--plain-tune", type=int, default=500)
    parser.add_argument("--plain-draws", type=int, default=500)
    parser.add_argument("--skip-plain", action="store_true")
    parser.add_argument("--replicates", type=int, default=40)
    parser.add_argument("--rep-tune", type=int, default=500)
    parser.add_argument("--rep-draws", type=int, default=500)
    parser.add_argument("--sizes", type=int, nargs="*", default=[50, 200, 2000])
    parser.add_argument("--law-replicates", type=int, default=4000)
    parser.add_argument("--only-law", action="store_true", help="only the approximation's error")
    parser.add_argument("--exact-sizes", type=int, nargs="*", default=[])
    parser.add_argument("--exact-epsilon", type=float, default=10.0)
    args = parser.parse_args()
    if args.exact_sizes:
        exact_comparison(args.exact_sizes, args.seed, args.rep_tune, args.rep_draws, args.exact_epsilon)
        return
    if args.sizes and args.law_replicates:
        approximation_error(args.sizes, args.law_replicates, args.seed)
    if args.only_law:
        return
    logging.getLogger("pymc").setLevel(logging.ERROR)
    model = lr.model(n=args.n, epsilon=args.epsilon)
    released = release(model, args.seed)
    print(f"n = {args.n}, epsilon = {args.epsilon}; Laplace scales {model.noise_scale.round(1).tolist()}")

    start = time.perf_counter()
    fit = model.fit(released, draws=args.draws, tune=args.tune, chains=2, cores=1, random_seed=args.seed)
    after = report("twin", fit, time.perf_counter() - start)
    print(f"       clipped fraction (posterior mean bound) {fit.attrs['clipped_fraction']:.2g}")
    backends = installed()
    for backend in backends:
        start = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fit = model.fit(
                released, draws=args.draws, tune=args.tune, chains=2, cores=1, random_seed=args.seed,
                nuts_sampler=backend,
            )  # fmt: skip
        report(f"twin {backend}", fit, time.perf_counter() - start)
    if not args.skip_plain:
        for backend in ["pymc", *backends]:
            start = time.perf_counter()
            with plain_model(model, released), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                plain = pm.sample(
                    draws=args.plain_draws,
                    tune=args.plain_tune,
                    chains=2,
                    cores=1,
                    random_seed=args.seed,
                    progressbar=False,
                    compute_convergence_checks=False,
                    nuts_sampler=backend,
                )
            result = report("plain" if backend == "pymc" else f"plain {backend}", plain, time.perf_counter() - start)
            if backend == "pymc":
                before = result
        print(f"ESS per second, twin / plain: {(after[0] / after[1]) / (before[0] / before[1]):.1f}")
    if args.replicates:
        coverage(model, args.replicates, args.rep_tune, args.rep_draws, args.seed + 1000)


if __name__ == "__main__":
    main()
