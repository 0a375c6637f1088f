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

:func:`coverage_study` records both intervals for every county and replicate, one checkpointed
task per (release, epsilon, replicate) on any executor (:func:`.synthesis.run_tasks`);
:func:`coverage_summary` reports how often each covers the true rate, for small and large
counties, at each epsilon.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import math
import warnings
from collections.abc import Sequence
from concurrent.futures import Executor
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import xarray as xr
from scipy import stats

from ... import __version__
from ...mechanisms import DiscreteLaplace
from ...models import county_counts
from ...postprocessing import postprocess
from ...validation import positive_finite, positive_int, probability
from . import results_dir as rundir
from .synthesis import DELTA_Z, run_tasks, write_result
from .table import CovidTable


def laplace_quantile(mechanism: DiscreteLaplace, prob: float) -> int:
    """The smallest k with P(|noise| <= k) >= prob for discrete Laplace noise."""
    a = mechanism.a
    # P(|K| <= k) = 1 - 2 a^(k+1) / (1 + a)
    return max(0, int(np.ceil(np.log((1 - prob) * (1 + a) / 2) / np.log(a) - 1)))


@functools.lru_cache(maxsize=64)
def wem_coordinate_quantile(
    n: int, epsilon: float, sigma: float, prob: float, draws: int = 200_000, seed: int = 0
) -> float:
    """|y_j - x_j| quantile of one coordinate of the naive L2 WEM in n dimensions.

    Continuous approximation: the noise is R U with R ~ Gamma(n, epsilon / (2 sigma)) and U
    uniform on the unit sphere, so a coordinate is R U_1 (Monte Carlo). Cached: every task of a
    (release, epsilon) in a worker needs the same value (a third of a second at n = 67).
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
    from ...pymc import feasible_total_start

    alpha = county_counts.model(epsilon=epsilon, concentration=concentration).prior.concentration_vector(z)
    with pm.Model(coords={"county": np.arange(y.size)}) as twin:
        share = pm.Dirichlet("share", a=alpha, dims="county")
        cases = pm.Multinomial(
            "cases", n=z["total"], p=share, dims="county", initval=feasible_total_start(y, z["total"])
        )
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


#: The per-county values of a replicate's file (rates per 100,000 people), in the study's column order.
COLUMNS = (
    "population",
    "true_rate",
    "bayes_mean",
    "bayes_lower",
    "bayes_upper",
    "plugin",
    "plugin_lower",
    "plugin_upper",
)


@dataclass(frozen=True)
class CoverageTask:
    """One (release, epsilon, replicate) of the coverage study: one release, one PyMC fit."""

    release: str
    epsilon: float
    replicate: int

    @property
    def filename(self) -> str:
        return f"{self.release}_eps{self.epsilon!r}_rep{self.replicate:03d}.nc"  # repr: one name per epsilon

    def seed(self, seed: int) -> np.random.SeedSequence:
        """The task's own stream: a function of (seed, release, epsilon, replicate) only; the
        epsilon enters by its bits, so that its position among the study's epsilons does not matter."""
        epsilon_bits = int(np.float64(self.epsilon).view(np.uint64))
        return np.random.SeedSequence(
            seed, spawn_key=(list(RELEASES).index(self.release), epsilon_bits, self.replicate)
        )


def coverage_config(
    table: CovidTable,
    month: str,
    *,
    concentration: float = 1000.0,
    prob: float = 0.9,
    draws: int = 1000,
    tune: int = 300,
    chains: int = 2,
    seed: int = 2024,
) -> dict:
    """What a coverage study's results depend on besides (release, epsilon, replicate): the
    table (counties, months, digest of its counts), the month, the model, the sampler and the seed."""
    month = table.months[table.month_index(month)]  # its label, also when given by index
    if int(seed) != seed or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed}")
    if int(tune) != tune or tune < 0:
        raise ValueError(f"tune must be a non-negative integer, got {tune}")
    draws, chains = positive_int(draws, "draws"), positive_int(chains, "chains")
    prob, concentration = probability(prob, "prob"), positive_finite(concentration, "concentration")
    return {
        "month": month,
        "concentration": float(concentration),
        "prob": float(prob),
        "draws": int(draws),
        "tune": int(tune),
        "chains": int(chains),
        "seed": int(seed),
        "counties": list(table.counties),
        "months": list(table.months),
        "data": rundir.table_digest(table),
        "version": __version__,
    }


def coverage_tasks(
    releases: Sequence[str] = ("laplace", "wem_naive"), epsilons: Sequence[float] = (0.01, 1.0), replicates: int = 20
) -> list[CoverageTask]:
    """Every (release, epsilon, replicate) of a study, validated."""
    unknown = set(releases) - set(RELEASES)
    if unknown:
        raise ValueError(f"releases: unknown {sorted(unknown)}; choose from {list(RELEASES)}")
    epsilons = [positive_finite(e, "epsilons") for e in epsilons]
    replicates = positive_int(replicates, "replicates")
    return [CoverageTask(r, e, i) for r in releases for e in epsilons for i in range(replicates)]


def fit_replicate(table: CovidTable, task: CoverageTask, config: dict) -> xr.Dataset:
    """Bayes and plug-in intervals of every county's case rate for one task, stamped with ``config``
    (:func:`.results_dir.stamp`): one release of the month, its own PyMC twin, one fit."""
    from ... import pymc as ppm

    t = table.month_index(config["month"])
    truth = table.x(t)
    z_month = table.z(t)
    z = county_counts.public_information(z_month["previous_cases"], z_month["total"])
    prob = config["prob"]
    build_twin, plugin_half_width = RELEASES[task.release]
    half_width = plugin_half_width(table.n_counties, task.epsilon, prob)
    rng = np.random.default_rng(task.seed(config["seed"]))
    y, plugin = _release(task.release, truth, task.epsilon, z_month["total"], rng)
    with build_twin(task.epsilon, config["concentration"], z, y), _quiet_pymc():
        idata = ppm.sample(
            draws=config["draws"],
            tune=config["tune"],
            chains=config["chains"],
            cores=1,
            random_seed=rng,
            progressbar=False,
            compute_convergence_checks=False,
        )
    cases = idata.posterior["cases"].values.reshape(-1, table.n_counties)
    # discrete quantiles: integer counts, each tail outside the interval at most (1 - prob) / 2
    lower, upper = np.quantile(cases, [(1 - prob) / 2, (1 + prob) / 2], axis=0, method="inverted_cdf")
    per_100k = 1e5 / table.population
    # population as int32: the netCDF 3 files have no 64-bit integers
    values = {
        "population": table.population.astype(np.int32),
        "true_rate": truth[0] * per_100k,
        "bayes_mean": cases.mean(axis=0) * per_100k,
        "bayes_lower": lower * per_100k,
        "bayes_upper": upper * per_100k,
        "plugin": plugin * per_100k,
        "plugin_lower": (plugin - half_width) * per_100k,
        "plugin_upper": (plugin + half_width) * per_100k,
    }
    dataset = xr.Dataset(
        {name: ("county", np.asarray(v)) for name, v in values.items()},
        coords={"county": list(table.counties)},
        attrs={"release": task.release, "epsilon": task.epsilon, "replicate": task.replicate},
    )
    return rundir.stamp(dataset, config)


def _run_coverage_task(table: CovidTable, task: CoverageTask, config: dict, folder: Path) -> CoverageTask:
    write_result(fit_replicate(table, task, config), folder / task.filename)
    return task


def coverage_study(
    table: CovidTable,
    month: str,
    *,
    releases: Sequence[str] = ("laplace", "wem_naive"),
    epsilons: Sequence[float] = (0.01, 1.0),
    replicates: int = 20,
    concentration: float = 1000.0,
    prob: float = 0.9,
    draws: int = 1000,
    tune: int = 300,
    chains: int = 2,
    seed: int = 2024,
    results_dir: str | Path | None = None,
    executor: Executor | None = None,
    fresh: bool = False,
    progressbar: bool = True,
) -> pd.DataFrame:
    """Bayes and plug-in intervals for every county's case rate, per release, epsilon and replicate.

    ``releases``: "laplace" (discrete Laplace noise on every count, Delta_Z = 2; plug-in from the
    post-processed Y*) and "wem_naive" (the Wasserstein exponential mechanism with the L2 loss and
    the naive base measure on the J case counts; plug-in from y itself). Returns one row per
    (release, epsilon, replicate, county) with the true rate, the posterior mean and interval,
    and the plug-in estimate and interval (rates per 100,000 people), in that order.

    Each (release, epsilon, replicate) is a task (:func:`fit_replicate`) run on ``executor``
    (default: a local process pool of all cores; or e.g. ``distributed.Client(address).get_executor()``,
    which gets the table once) that writes one checked file to ``results_dir`` (default: a
    temporary folder). A rerun into the same folder skips the finished tasks, so an interrupted
    study resumes; more releases, epsilons or replicates extend it. A task's random stream depends
    only on (seed, release, epsilon, replicate), so the frame is the same whatever the executor,
    the number of workers, the order tasks finish in, or interruptions.

    Raises
    ------
    ResultsError
        ``results_dir`` holds a study of another configuration (:func:`coverage_config`; ``fresh``
        deletes its results first), or another run is using it.
    """
    planned = coverage_tasks(releases, epsilons, replicates)
    config = coverage_config(
        table, month, concentration=concentration, prob=prob, draws=draws, tune=tune, chains=chains, seed=seed
    )
    with rundir.task_folder(results_dir, config, fresh, prefix="coverage_") as folder:
        todo = [task for task in planned if not rundir.usable(folder / task.filename, config)]
        run_tasks(
            _run_coverage_task, todo, table, config, folder, executor=executor, desc="coverage", progressbar=progressbar
        )
        return pd.concat([_rows(rundir.read_result(folder / task.filename)[0]) for task in planned], ignore_index=True)


def _rows(dataset: xr.Dataset) -> pd.DataFrame:
    """A task file as the study's rows, one per county."""
    rows = dataset[list(COLUMNS)].to_dataframe().reset_index()
    keys = {
        "release": str(dataset.attrs["release"]),
        "epsilon": float(dataset.attrs["epsilon"]),
        "replicate": int(dataset.attrs["replicate"]),
    }
    return rows.assign(**keys, population=rows["population"].astype(np.int64))[[*keys, "county", *COLUMNS]]


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
        summary = (
            frame.assign(covered=covered, width=width)
            .groupby(["release", "epsilon", "size"])
            .agg(
                coverage=("covered", "mean"),
                mean_width=("width", "mean"),
                covered=("covered", "sum"),
                n=("covered", "size"),
            )
        )
        out.append(summary.assign(method=method).set_index("method", append=True))
    out = pd.concat(out).reorder_levels(["release", "epsilon", "size", "method"]).sort_index()
    intervals = [
        stats.binomtest(int(k), int(n)).proportion_ci(confidence, method="wilson")
        for k, n in zip(out["covered"], out["n"])
    ]
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


def subproblem_check(
    table: CovidTable,
    month: str,
    counties: Sequence[str],
    *,
    epsilon: float = 1.0,
    concentration: float = 1000.0,
    seed: int = 2024,
) -> pd.DataFrame:
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
            mcmc = ppm.sample(
                draws=2000,
                tune=500,
                chains=2,
                cores=1,
                random_seed=seed,
                progressbar=False,
                compute_convergence_checks=False,
            )
    exact_x = exact["exact"]
    return pd.DataFrame(
        {
            "true": small.x(0)[0],
            "release": y,
            "exact": (exact_x["x_support"].values * exact_x["x_pmf"].values[:, None]).sum(axis=0),
            "rejection": rejection["posterior"]["cases"].mean(("chain", "draw")).values,
            "importance": weighted_mean(importance)["cases"].values,
            "pymc": mcmc.posterior["cases"].mean(("chain", "draw")).values,
        },
        index=pd.Index(small.counties, name="county"),
    )
