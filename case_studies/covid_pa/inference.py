"""Inference the paper could not do (section 4.3): posteriors of county case rates given (Y, Z).

For one month t, each replicate releases the county case counts with discrete Laplace noise
(the raw release behind the post-processing method, Delta_Z = 2) and then compares two analyses:

- **Bayes**: the posterior of the counts x given the raw release y and the public z (last
  month's counts, this month's total), with the county-count model of
  :mod:`ppdinfer.models.county_counts` (Dirichlet prior centred on last month, multinomial
  given the total) fitted by the PyMC layer: collapsed data augmentation plus exact Dirichlet
  draws. Central credible intervals for x_j / population_j.
- **Plug-in**: the post-processed Y* (:func:`ppdinfer.postprocessing.postprocess`) taken as the
  truth plus discrete Laplace noise: Y*_j +- the noise's central quantile.

:func:`coverage_study` records both intervals for every county and replicate;
:func:`coverage_summary` reports how often each covers the true rate, for small and large
counties, at each epsilon.
"""

from __future__ import annotations

import contextlib
import logging
import math
import warnings
from collections.abc import Sequence

import numpy as np
import pandas as pd
from scipy import stats
from tqdm import tqdm

from ...mechanisms import DiscreteLaplace
from ...models import county_counts
from ...postprocessing import postprocess
from .synthesis import DELTA_Z
from .table import CovidTable


def laplace_quantile(mechanism: DiscreteLaplace, prob: float) -> int:
    """The smallest k with P(|noise| <= k) >= prob for discrete Laplace noise."""
    a = mechanism.a
    # P(|K| <= k) = 1 - 2 a^(k+1) / (1 + a)
    return max(0, int(np.ceil(np.log((1 - prob) * (1 + a) / 2) / np.log(a) - 1)))


def wem_coordinate_quantile(n: int, epsilon: float, sigma: float, prob: float, draws: int = 200_000,
                            seed: int = 0) -> float:
    """|y_j - x_j| quantile of one coordinate of the naive L2 WEM in n dimensions.

    Continuous approximation: the noise is R U with R ~ Gamma(n, epsilon / (2 sigma)) and U
    uniform on the unit sphere, so a coordinate is R U_1 (Monte Carlo).
    """
    rng = np.random.default_rng(seed)
    radius = rng.gamma(n, 2 * sigma / epsilon, size=draws)
    direction = rng.standard_normal((draws, n))
    first = direction[:, 0] / np.linalg.norm(direction, axis=1)
    return float(np.quantile(np.abs(radius * first), prob))


@contextlib.contextmanager
def _quiet_pymc():
    """Silence PyMC's per-fit log lines and warnings for the many small fits of a study."""
    logger = logging.getLogger("pymc")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        logger.setLevel(level)


def _laplace_twin(epsilon, concentration, z, y):
    model = county_counts.model(epsilon=epsilon, concentration=concentration, sensitivity=DELTA_Z)
    return model.to_pymc(y, z, mutable=True)


def _wem_twin(epsilon, concentration, z, y):
    import pymc as pm

    from ... import pymc as ppm
    from ...models._pymc_helpers import feasible_total_start

    alpha = county_counts.model(epsilon=epsilon, concentration=concentration).prior.concentration_vector(z)
    with pm.Model(coords={"county": np.arange(y.size)}) as twin:
        share = pm.Dirichlet("share", a=alpha, dims="county")
        cases = pm.Multinomial("cases", n=z["total"], p=share, dims="county",
                               initval=feasible_total_start(y, z["total"]))
        observed = pm.Data("y_release", y, dims="county")
        ppm.WassersteinNaive("y", mu=cases, epsilon=epsilon, sigma=DELTA_Z, observed=observed)
    return twin


def _release(kind: str, truth, epsilon: float, total: int, rng) -> tuple[np.ndarray, np.ndarray]:
    """(the release of the case counts, the plug-in estimate) for one replicate."""
    if kind == "laplace":
        raw = DiscreteLaplace(epsilon, DELTA_Z).release(truth, random_seed=rng)  # cases and deaths
        return raw[0], postprocess(raw[0], raw[1], total).cases
    from ...pymc.distributions import lattice_l2_draws

    y = lattice_l2_draws(truth[0], epsilon, DELTA_Z, None, rng)
    return y, y


#: How each release is analysed: Bayes twin, and the plug-in interval's half width in counts.
RELEASES = {
    "laplace": (_laplace_twin, lambda n, eps, prob: laplace_quantile(DiscreteLaplace(eps, DELTA_Z), prob)),
    "wem_naive": (_wem_twin, lambda n, eps, prob: wem_coordinate_quantile(n, eps, DELTA_Z, prob)),
}


def coverage_study(table: CovidTable, month: str, *, releases: Sequence[str] = ("laplace", "wem_naive"),
                   epsilons: Sequence[float] = (0.01, 1.0), replicates: int = 20, concentration: float = 1000.0,
                   prob: float = 0.9, draws: int = 1000, tune: int = 300, chains: int = 2, seed: int = 2024,
                   progressbar: bool = True) -> pd.DataFrame:
    """Bayes and plug-in intervals for every county's case rate, per release, epsilon and replicate.

    ``releases``: "laplace" (discrete Laplace noise on every count, Delta_Z = 2; plug-in from the
    post-processed Y*) and "wem_naive" (the Wasserstein exponential mechanism with the L2 loss and
    the naive base measure on the J case counts; plug-in from y itself). Returns one row per
    (release, epsilon, replicate, county) with the true rate, the posterior mean and interval,
    and the plug-in estimate and interval (rates per 100,000 people).
    """
    import pymc as pm

    from ... import pymc as ppm

    unknown = set(releases) - set(RELEASES)
    if unknown:
        raise ValueError(f"releases: unknown {sorted(unknown)}; choose from {list(RELEASES)}")
    t = table.month_index(month)
    truth = table.x(t)
    z_month = table.z(t)
    z = county_counts.public_information(z_month["previous_cases"], z_month["total"])
    per_100k = 1e5 / table.population
    rows = []
    bar = tqdm(total=len(releases) * len(epsilons) * replicates, desc="coverage", disable=not progressbar)
    for release in releases:
        build_twin, plugin_half_width = RELEASES[release]
        for e_index, epsilon in enumerate(epsilons):
            half_width = plugin_half_width(table.n_counties, epsilon, prob)
            twin = None
            for r in range(replicates):
                rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(list(RELEASES).index(release),
                                                                                    e_index, r)))
                y, plugin = _release(release, truth, epsilon, z_month["total"], rng)
                twin = twin or build_twin(epsilon, concentration, z, y)
                with twin, _quiet_pymc():
                    pm.set_data({"y_release": y})
                    idata = ppm.sample(draws=draws, tune=tune, chains=chains, cores=1, random_seed=rng,
                                       progressbar=False, compute_convergence_checks=False)
                cases = idata.posterior["cases"].values.reshape(-1, table.n_counties)
                # discrete quantiles: integer counts, each tail outside the interval at most (1 - prob) / 2
                lower, upper = np.quantile(cases, [(1 - prob) / 2, (1 + prob) / 2], axis=0, method="inverted_cdf")
                for j, county in enumerate(table.counties):
                    rows.append({
                        "release": release, "epsilon": epsilon, "replicate": r, "county": county,
                        "population": table.population[j], "true_rate": truth[0, j] * per_100k[j],
                        "bayes_mean": cases[:, j].mean() * per_100k[j],
                        "bayes_lower": lower[j] * per_100k[j], "bayes_upper": upper[j] * per_100k[j],
                        "plugin": plugin[j] * per_100k[j],
                        "plugin_lower": (plugin[j] - half_width) * per_100k[j],
                        "plugin_upper": (plugin[j] + half_width) * per_100k[j],
                    })
                bar.update()
    bar.close()
    return pd.DataFrame(rows)


def coverage_summary(study: pd.DataFrame, small_share: float = 1 / 3, confidence: float = 0.95) -> pd.DataFrame:
    """Coverage and mean width of both intervals, for small and large counties, per release and epsilon.

    Small counties are the ``small_share`` least populous; large the same share of the most.
    Columns: ``coverage`` (``covered`` of ``n`` cases, the county-replicates), its Wilson interval
    at level ``confidence`` (``coverage_low``, ``coverage_high``; cases taken as independent) and
    ``mean_width``.
    """
    populations = study.groupby("county")["population"].first().sort_values()
    n = max(1, int(round(small_share * populations.size)))
    size = pd.Series("middle", index=populations.index)
    size[populations.index[:n]] = "small"
    size[populations.index[-n:]] = "large"
    frame = study.assign(size=study["county"].map(size))
    frame = frame[frame["size"] != "middle"]
    out = []
    for method in ("bayes", "plugin"):
        covered = (frame[f"{method}_lower"] <= frame["true_rate"]) & (frame["true_rate"] <= frame[f"{method}_upper"])
        width = frame[f"{method}_upper"] - frame[f"{method}_lower"]
        summary = (frame.assign(covered=covered, width=width).groupby(["release", "epsilon", "size"])
                   .agg(coverage=("covered", "mean"), mean_width=("width", "mean"), covered=("covered", "sum"),
                        n=("covered", "size")))
        out.append(summary.assign(method=method).set_index("method", append=True))
    out = pd.concat(out).reorder_levels(["release", "epsilon", "size", "method"]).sort_index()
    intervals = [stats.binomtest(int(k), int(n)).proportion_ci(confidence, method="wilson")
                 for k, n in zip(out["covered"], out["n"])]
    return out.assign(coverage_low=[i.low for i in intervals], coverage_high=[i.high for i in intervals])


def enumerable_counties(table: CovidTable, month: str, limit: int = 200_000, most: int = 5) -> list[str]:
    """Up to ``most`` least populous counties whose split of the month's total can be enumerated."""
    t = table.month_index(month)
    chosen, total = [], 0
    for j in np.argsort(table.population):
        candidate = total + int(table.cases[t, j])
        if len(chosen) == most or math.comb(candidate + len(chosen), len(chosen)) > limit:
            break
        chosen.append(table.counties[j])
        total = candidate
    if len(chosen) < 2:
        raise ValueError(f"month {month}: even the two least populous counties have too many cases to enumerate")
    return chosen


def subproblem_check(table: CovidTable, month: str, counties: Sequence[str], *, epsilon: float = 1.0,
                     concentration: float = 1000.0, seed: int = 2024) -> pd.DataFrame:
    """Posterior means of the counts on a few-county subproblem by four methods that must agree.

    On counties small enough to enumerate, the PyMC fit is checked against the exact posterior,
    the rejection sampler and the importance sampler, for one raw release.
    """
    import pymc as pm  # noqa: F401  (the PyMC layer needs it)

    from ... import pymc as ppm
    from ...inference import exact_posterior, importance_sample, rejection_sample, weighted_mean

    small = table.subset(counties=list(counties), months=[month])
    z_month = small.z(0)
    z = county_counts.public_information(z_month["previous_cases"], z_month["total"])
    model = county_counts.model(epsilon=epsilon, concentration=concentration, sensitivity=DELTA_Z)
    y = model.mechanism.release(small.x(0)[0], random_seed=seed)
    with _quiet_pymc():
        exact = exact_posterior(model, y, z, draws=10)
        rejection = rejection_sample(model, y, z, draws=4000, random_seed=seed, progressbar=False)
        importance = importance_sample(model, y, z, draws=100_000, random_seed=seed)
        with model.to_pymc(y, z):
            mcmc = ppm.sample(draws=2000, tune=500, chains=2, cores=1, random_seed=seed, progressbar=False,
                              compute_convergence_checks=False)
    exact_x = exact["exact"]
    return pd.DataFrame({
        "true": small.x(0)[0],
        "release": y,
        "exact": (exact_x["x_support"].values * exact_x["x_pmf"].values[:, None]).sum(axis=0),
        "rejection": rejection["posterior"]["cases"].mean(("chain", "draw")).values,
        "importance": weighted_mean(importance)["cases"].values,
        "pymc": mcmc.posterior["cases"].mean(("chain", "draw")).values,
    }, index=pd.Index(small.counties, name="county"))
