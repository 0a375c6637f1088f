"""dapper's linear-regression example (Ju, Awan, Gong & Rao 2022, n = 100) refitted with ppdinfer's two methods.

Their setup, as published with the paper's code (github.com/nianqiaoju/dataaugmentation-mcmc-differentialprivacy,
commit 69ec6c9fdd85101f2a5efb46b6b64e93041af506: ``linearregression_gibbs.R`` and the ``.RData`` files it loads):
n = 100 records, two covariates x ~ N(m*, I) with m* = (0.900, -1.173), y = (1, x)' beta* + N(0, 2) with
beta* = (-1.795, -2.889, -0.662); every coordinate clipped to [-10, 10] and divided by 10; released: X'y (3), y'y
and X'X less the count (5), each with Laplace noise of scale Delta / epsilon, Delta = 13, epsilon in (10, 3, 1, 0.3,
0.1); their sampler knows sigma^2 = 2 and x's law and puts beta ~ N(0, 2^2 I). Their release at epsilon = 10
(``linearregression_sdpfixxy_N100p2noiselevel1iexp1.RData``) is ``THEIR_RELEASE`` below, rescaled to the records'
units (sums x 10, products x 100) and in ppdinfer's order.

Here, on the records' own scale (box [-10, 10]^3):

- the noise: ppdinfer's sensitivities for this box (replace-one neighbours, the count public) sum to 15 on the
  [-1, 1] scale, not 13, so scales Delta / epsilon = 13 / epsilon are ``LinearRegressionModel(epsilon=15 / 13
  epsilon, shares=sensitivity / 15)``: the same noise, its privacy level by ppdinfer's accounting;
- the model: ppdinfer learns sigma and x's law (``parametrization="regression"``, ``prior_scale=2``: beta ~ N(0, 2),
  sigma and the sds of x ~ HalfNormal(2), mu_x ~ N(0, 2), LKJ(2) correlations; ``"joint"``: N(0, 2) means and an
  LKJ(2) x HalfNormal(2) covariance of (x, y)), where their sampler fixes them at the truth; so its posteriors
  are expected to be wider than theirs.

Fits: ``fit`` (the normal approximation, NUTS, 2 x 1,000 draws, both parametrizations) and ``fit_records`` (exact
record-level data augmentation, the regression priors, 2 x ``--records-draws``) on their release, then ``fit``
(joint, 2 x 500) and ``fit_records`` (2 x ``--rep-records-draws``) on ``--replicates`` fresh datasets and releases
from their generating process at each of ``--epsilons`` (mean +- se over replicates of the posterior means and sds,
the coverage of the 90% intervals, the exact chains' smallest ESS). Beside them: the truth, and the posterior
without noise of their confidential records (shipped with their code; their model: sigma^2 = 2 known, beta ~ N(0,
4 I); computed here once, ``NO_NOISE``). Run: ``.venv/bin/python benchmarks/dapper_example.py [--replicates 20]``.
"""

from __future__ import annotations

import argparse
import logging
import time
import warnings

import arviz as az
import numpy as np
import pymc as pm

from ppdinfer.models import linear_regression as lr
from ppdinfer.models import regression_records

N, M_STAR, SIGMA2_STAR = 100, np.array([0.9001419863888682, -1.173345772552491]), 2.0
BETA_STAR = np.array([-1.7949707226263036, -2.8890028005548376, -0.662027156709289])
BOX, DELTA, THEIR_EPSILON = 10.0, 13.0, 10.0
#: Their released statistics at epsilon = 10 on the [-1, 1] scale, in ppdinfer's order (x0, x1, y, x0*x0, x0*x1,
#: x0*y, x1*x1, x1*y, y*y): sdp[[3]][1, 2:3], sdp[[1]][1], sdp[[3]][2, 2:3], sdp[[1]][2], sdp[[3]][3, 3],
#: sdp[[1]][3], sdp[[2]].
THEIR_RELEASE_UNIT = np.array([9.883476146737395, -13.850330625708425, -38.24397505071678, 2.188180090958528,
                               -2.288422835507728, -6.678300473475472, 3.4091531490715434, 3.199743390187855,
                               27.19852448963865])  # fmt: skip
#: The conjugate posterior of beta without noise from their confidential records (linearregression_XY_N100p2.RData)
#: under their model: mean and sd of (intercept, x0, x1).
NO_NOISE = (np.array([-2.2320, -2.7924, -0.8739]), np.array([0.2812, 0.1510, 0.1328]))
DEGREE = np.array([1, 1, 1, 2, 2, 2, 2, 2, 2])  # each statistic's degree: its unit is BOX ** degree


def their_model(epsilon: float, parametrization: str = "regression") -> lr.LinearRegressionModel:
    """ppdinfer's model of their release at their epsilon: the noise scales 13 / epsilon on the [-1, 1] scale."""
    box = [(-BOX, BOX)] * 2
    unit = lr.LinearRegressionModel(N, [(-1.0, 1.0)] * 2, (-1.0, 1.0), 1.0)
    sensitivity = unit.sensitivity.per_statistic[1:]
    total = sensitivity.sum()
    model = lr.LinearRegressionModel(N, box, (-BOX, BOX), epsilon * total / DELTA, shares=sensitivity / total,
                                     prior_scale=2.0, parametrization=parametrization)  # fmt: skip
    assert np.allclose(model.noise_scale, DELTA / epsilon * BOX**DEGREE), model.noise_scale
    return model


def records(rng):
    x = M_STAR + rng.standard_normal((N, 2))
    y = BETA_STAR[0] + x @ BETA_STAR[1:] + np.sqrt(SIGMA2_STAR) * rng.standard_normal(N)
    return x, y


def approximate(model, twin, released, seed, draws=1000):
    """``fit``'s sampler on one compiled twin (its release swapped in), with ``fit``'s clipping check."""
    with twin, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pm.set_data({"released": released})
        fit = pm.sample(draws=draws, tune=draws, chains=2, cores=1, init="jitter+adapt_full", random_seed=seed,
                        progressbar=False, compute_convergence_checks=False)  # fmt: skip
    model.check_clipping(fit)
    return fit


def summary(fit):
    """Posterior mean, sd, median and 90% interval of beta, whether the interval covers beta*, the smallest ESS and
    the largest tree depth (0 without one)."""
    beta = fit["posterior"]["beta"].values.reshape(-1, 3)
    lo, median, hi = np.quantile(beta, [0.05, 0.5, 0.95], axis=0)
    ess = float(np.min(az.ess(fit, var_names=["beta"])["beta"].values))
    depth = int(fit["sample_stats"]["tree_depth"].max()) if "tree_depth" in fit["sample_stats"] else 0
    return beta.mean(0), beta.std(0), median, hi - lo, (lo <= BETA_STAR) & (BETA_STAR <= hi), ess, depth


def show(label, mean, sd, extra=""):
    cells = "  ".join(f"{m:+.3f} ±{s:.3f}" for m, s in zip(mean, sd))
    print(f"  {label:<36s}{cells}  {extra}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replicates", type=int, default=8, help="replicates fitted by fit_records")
    parser.add_argument("--fit-replicates", type=int, default=3, help="the first ones also fitted by fit")
    parser.add_argument("--skip-release", action="store_true", help="only the replicates")
    parser.add_argument("--epsilons", default="10")
    parser.add_argument("--records-draws", type=int, default=20000)
    parser.add_argument("--rep-records-draws", type=int, default=10000)
    parser.add_argument("--seed", type=int, default=2022)
    args = parser.parse_args()
    logging.getLogger("pymc").setLevel(logging.ERROR)
    warnings.filterwarnings("ignore", category=UserWarning)
    rd = args.records_draws
    print("posterior mean ± sd of beta = (intercept, x0, x1); truth", BETA_STAR.round(3).tolist())
    model = their_model(THEIR_EPSILON)
    released = THEIR_RELEASE_UNIT * BOX**DEGREE
    print(f"their release (epsilon {THEIR_EPSILON:g} nominal, {model.epsilon:.3g} by ppdinfer's sensitivities):")
    show("no noise, their model (their data)", *NO_NOISE)
    if not args.skip_release:
        for parametrization in ("regression", "joint"):
            start = time.perf_counter()
            fitted = their_model(THEIR_EPSILON, parametrization)
            mean, sd, median, width, _, ess, depth = summary(
                approximate(fitted, fitted.to_pymc(released, mutable=True), released, args.seed)
            )
            show(f"fit ({parametrization})", mean, sd, f"ESS {ess:.0f}, tree depth {depth}, "
                 f"{time.perf_counter() - start:.0f} s; median {median.round(3)}, 90% width {width.round(3)}")  # fmt: skip
        start = time.perf_counter()
        exact = regression_records.fit_records(model, released, draws=rd, tune=rd // 10, random_seed=args.seed)
        mean, sd, median, width, _, ess, _ = summary(exact)
        show("fit_records (exact)", mean, sd, f"ESS {ess:.0f}, {time.perf_counter() - start:.0f} s, accept "
             f"{float(exact['sample_stats']['accept'].mean()):.2f}; median {median.round(3)}, 90% width {width.round(3)}")  # fmt: skip
    rd = args.rep_records_draws
    for epsilon in (float(v) for v in args.epsilons.split(",")):
        model = their_model(epsilon, "joint")
        twin = model.to_pymc(released, mutable=True)
        rows = {"fit": [], "fit_records": []}
        start = time.perf_counter()
        for r in range(args.replicates):
            rng = np.random.default_rng([args.seed, int(epsilon * 1000), r])
            x, y = records(rng)
            release = model.release(x, y, random_seed=rng)
            seed = np.random.SeedSequence([args.seed, r])
            exact = regression_records.fit_records(
                their_model(epsilon), release, draws=rd, tune=rd // 10, random_seed=seed
            )
            rows["fit_records"].append(summary(exact))
            show(f"replicate {r}: fit_records", *rows["fit_records"][-1][:2], f"ESS {rows['fit_records'][-1][5]:.0f}")
            if r < args.fit_replicates:
                rows["fit"].append(summary(approximate(model, twin, release, [args.seed, r], draws=300)))
                show(f"replicate {r}: fit (joint)", *rows["fit"][-1][:2], f"median {rows['fit'][-1][2].round(3)}")
        print(f"replicate datasets and releases at epsilon {epsilon:g} nominal ({time.perf_counter() - start:.0f} s): "
              "mean ± se over replicates of the posterior medians; of the 90% widths; 90% coverage")  # fmt: skip
        for name, values in rows.items():
            if not values:
                continue
            _, _, medians, widths, hits, ess, _ = (np.array(v) for v in zip(*values))
            k = len(medians)
            show(f"{name} medians ({k})", medians.mean(0), medians.std(0, ddof=1) / np.sqrt(k))
            show(f"{name} 90% widths", widths.mean(0), widths.std(0, ddof=1) / np.sqrt(k))
            print(f"  {name} coverage {hits.mean(0).round(3).tolist()}; smallest ESS median {np.median(ess):.0f}, "
                  f"min {ess.min():.0f}")  # fmt: skip


if __name__ == "__main__":
    main()
