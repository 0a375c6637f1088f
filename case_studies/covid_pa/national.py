"""Every month of a national county panel fitted as independent tasks on any executor (issue 26).

The COVID study's monthly model (:mod:`ppdinfer.models.county_counts`) at national scale: for
month t = 1, ..., M, the county shares theta_t ~ Dirichlet centred on month t - 1's public counts
(concentration ``concentration_per_county`` x J), this month's counts x_t ~ Multinomial(total_t,
theta_t) with the public total, and the release y_t = x_t + DiscreteLaplace(epsilon / Delta_Z) per
county (Delta_Z = 2, the case study's). Month 0 is public prior information only.

:func:`synthetic_panel` makes the data from a documented seed; :func:`fit_months` fits each month
as one task (:func:`ppdinfer.pymc.sample_model`: data augmentation on x, exact Dirichlet draws of
theta) on any ``concurrent.futures.Executor`` (a :class:`.synthesis.LocalPool`, or a dask
``Client.get_executor()``, which gets the panel once), checkpointed to one file per month. A
month's random stream depends only on (seed, month), so the results are the same whatever the
executor, the number of workers, the order months finish in, or interruptions.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Sequence
from concurrent.futures import Executor
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import xarray as xr

from ... import __version__
from ...inference.diagnostics import ess_rhat
from ...mechanisms import DiscreteLaplace
from ...models import county_counts
from ...validation import positive_finite, positive_int
from . import results_dir as rundir
from .inference import _quiet_pymc
from .synthesis import DELTA_Z, run_tasks, write_result

#: Mean cases per county per month and the national wave: total_t ~ Poisson(250 J (1 + 0.5 sin(2 pi t / 12))).
CASES_PER_COUNTY, WAVE = 250, 0.5
#: sd of the monthly log-normal drift of each county's share.
DRIFT = 0.1
#: The spawn keys' first entries: the panel's counts, its releases, the fits (a seed shared by
#: :func:`synthetic_panel` and :func:`fit_months` gives them independent streams).
_COUNTS, _RELEASES, _FITS = 0, 1, 2
#: The smallest bulk ESS per month that :func:`fit_months`' default draws aim at (checked by the benchmark).
ESS_TARGET = 400


@dataclass(frozen=True, eq=False)
class NationalPanel:
    """Counts of J counties over months 0..M and the releases of months 1..M.

    ``counts[t]`` is month t's confidential x_t (``counts[0]``, month 0, is public prior
    information only; month t's prior is centred on ``counts[t - 1]``, public by then);
    ``releases[t - 1]`` is y_t. Make one with :func:`synthetic_panel`.

    Examples
    --------
    >>> from ppdinfer.case_studies.covid_pa.national import synthetic_panel
    >>> panel = synthetic_panel(counties=4, months=2, seed=1)
    >>> panel.n_counties, panel.n_months, panel.counts.shape, panel.releases.shape
    (4, 2, (3, 4), (2, 4))
    """

    counts: np.ndarray
    releases: np.ndarray
    epsilon: float
    seed: int

    @property
    def n_counties(self) -> int:
        """J, the number of counties."""
        return self.counts.shape[1]

    @property
    def n_months(self) -> int:
        """M, the number of released (fitted) months; the panel holds M + 1 months of counts."""
        return self.releases.shape[0]

    def month(self, t: int) -> tuple[np.ndarray, dict, np.ndarray]:
        """Month ``t``'s (release y_t, public z_t for :mod:`ppdinfer.models.county_counts`, truth x_t).

        Examples
        --------
        >>> from ppdinfer.case_studies.covid_pa.national import synthetic_panel
        >>> panel = synthetic_panel(counties=4, months=2, seed=1)
        >>> y, z, x = panel.month(2)
        >>> bool(z["total"] == x.sum()), bool((z["previous"] == panel.counts[1]).all())
        (True, True)
        """
        if isinstance(t, bool) or int(t) != t or not 1 <= t <= self.n_months:
            raise ValueError(f"month must be an integer from 1 to {self.n_months}, got {t!r}")
        x = self.counts[t]
        return self.releases[t - 1], county_counts.public_information(self.counts[t - 1], int(x.sum())), x

    def digest(self) -> str:
        """SHA-256 of the counts, the releases and epsilon (what the fits depend on).

        Examples
        --------
        >>> from ppdinfer.case_studies.covid_pa.national import synthetic_panel
        >>> synthetic_panel(counties=4, months=2, seed=1).digest() == synthetic_panel(4, 2, seed=2).digest()
        False
        """
        digest = hashlib.sha256(np.float64(self.epsilon).tobytes())
        for values in (self.counts, self.releases):
            digest.update(np.asarray(values.shape, dtype=np.int64).tobytes())
            digest.update(np.ascontiguousarray(values, dtype=np.int64).tobytes())
        return digest.hexdigest()


def _stream(seed: int, *key: int) -> np.random.Generator:
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=key))


def _seed(seed, name: str = "seed") -> int:
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"{name} must be a non-negative integer, got {seed!r}")
    return int(seed)


def synthetic_panel(counties: int = 3000, months: int = 24, *, epsilon: float = 1.0, seed: int = 2026) -> NationalPanel:
    r"""A synthetic national panel: ``counties`` counties over ``months`` + 1 months, released at ``epsilon``.

    From ``seed`` alone:

    .. math::

        \theta_0 \sim \mathrm{Dirichlet}(2, \dots, 2), \quad
        \theta_{t,j} \propto \theta_{t-1,j} e^{0.1 \xi_{t,j}},\ \xi_{t,j} \sim N(0, 1), \quad
        s_t \sim \mathrm{Poisson}(250 J (1 + 0.5 \sin(2 \pi t / 12))), \quad
        x_t \sim \mathrm{Multinomial}(s_t, \theta_t),

    for t = 0..M, and y_t = x_t + DiscreteLaplace(epsilon / 2) per county for t = 1..M. Month t's
    draws come from the stream (seed, t) (its release from (seed, t) of another family), so a
    panel of fewer months is the start of a longer one.

    Parameters
    ----------
    counties : int
        J, at least 2.
    months : int
        M, the months released (and fitted); month 0 comes on top.
    epsilon : float
        Privacy level of the discrete Laplace release (sensitivity Delta_Z = 2).
    seed : int
        The panel's seed.

    Examples
    --------
    >>> from ppdinfer.case_studies.covid_pa.national import synthetic_panel
    >>> panel = synthetic_panel(counties=3000, months=24, seed=2026)
    >>> panel.counts.shape, panel.releases.size
    ((25, 3000), 72000)
    >>> bool((synthetic_panel(30, 2).counts == synthetic_panel(30, 5).counts[:3]).all())
    True
    """
    counties, months = positive_int(counties, "counties"), positive_int(months, "months")
    if counties < 2:
        raise ValueError(f"counties must be at least 2, got {counties}")
    epsilon, seed = positive_finite(epsilon, "epsilon"), _seed(seed)
    counts = []
    for t in range(months + 1):
        rng = _stream(seed, _COUNTS, t)
        if t == 0:
            shares = rng.dirichlet(np.full(counties, 2.0))
        else:
            shares = shares * np.exp(DRIFT * rng.standard_normal(counties))
            shares /= shares.sum()
        total = rng.poisson(CASES_PER_COUNTY * counties * (1 + WAVE * np.sin(2 * np.pi * t / 12)))
        counts.append(rng.multinomial(total, shares))
    counts = np.asarray(counts, dtype=np.int64)
    mechanism = DiscreteLaplace(epsilon, DELTA_Z)
    releases = np.asarray(
        [mechanism.release(counts[t], random_seed=_stream(seed, _RELEASES, t)) for t in range(1, months + 1)],
        dtype=np.int64,
    )
    return NationalPanel(counts, releases, epsilon, seed)


def fit_config(
    panel: NationalPanel,
    *,
    draws: int = 1000,
    tune: int = 300,
    chains: int = 2,
    sweeps: int = 10,
    concentration_per_county: float = 15.0,
    seed: int = 2026,
) -> dict:
    """What a month's fit depends on besides the month: the panel (its digest), model, sampler, seed.

    Examples
    --------
    >>> from ppdinfer.case_studies.covid_pa.national import fit_config, synthetic_panel
    >>> config = fit_config(synthetic_panel(4, 2, seed=1), draws=100)
    >>> config["draws"], config["chains"], config["counties"]
    (100, 2, 4)
    """
    if isinstance(tune, bool) or not isinstance(tune, (int, np.integer)) or tune < 0:
        raise ValueError(f"tune must be a non-negative integer, got {tune!r}")
    if positive_int(draws, "draws") < 4:
        raise ValueError(f"draws must be at least 4 (for the ESS and R-hat), got {draws}")
    return {
        "draws": int(draws),
        "tune": int(tune),
        "chains": positive_int(chains, "chains"),
        "sweeps": positive_int(sweeps, "sweeps"),
        "concentration_per_county": positive_finite(concentration_per_county, "concentration_per_county"),
        "seed": _seed(seed),
        "counties": panel.n_counties,
        "epsilon": panel.epsilon,
        "panel": panel.digest(),
        "version": __version__,
    }


def _filename(t: int) -> str:
    return f"month_{t:03d}.nc"


def fit_month(panel: NationalPanel, t: int, config: dict) -> xr.Dataset:
    """Month ``t``'s fit: posterior means and sds of the shares and counts, the smallest bulk ESS
    (shares, counts), the largest R-hat (NaN with one chain) and the seconds it took, stamped with
    ``config`` (:func:`fit_config`). Its stream is (``config["seed"]``, t) alone.

    Examples
    --------
    >>> from ppdinfer.case_studies.covid_pa.national import fit_config, fit_month, synthetic_panel
    >>> panel = synthetic_panel(counties=5, months=1, seed=1)
    >>> fit = fit_month(panel, 1, fit_config(panel, draws=50, tune=50))
    >>> fit["cases_mean"].dims, round(abs(float(fit["cases_mean"].sum()) - int(panel.counts[1].sum())), 6)
    (('month', 'county'), 0.0)
    """
    from ...pymc import sample_model

    y, z, _ = panel.month(t)
    model = county_counts.model(
        epsilon=panel.epsilon, concentration=config["concentration_per_county"] * panel.n_counties, sensitivity=DELTA_Z
    )
    start = time.perf_counter()
    with _quiet_pymc():
        idata = sample_model(
            model,
            y,
            z,
            draws=config["draws"],
            tune=config["tune"],
            chains=config["chains"],
            sweeps=config["sweeps"],
            cores=1,
            random_seed=_stream(config["seed"], _FITS, t),
            progressbar=False,
            compute_convergence_checks=False,
        )
    posterior = idata["posterior"]
    draws = {name: posterior[name].values for name in ("share", "cases")}  # (chains, draws, J) each
    ess, rhat = ess_rhat(np.concatenate([draws["share"], draws["cases"]], axis=2))
    data = {}
    for index, (name, values) in enumerate(draws.items()):
        flat = values.reshape(-1, panel.n_counties)
        data[f"{name}_mean"] = (("month", "county"), flat.mean(axis=0)[None])
        data[f"{name}_sd"] = (("month", "county"), flat.std(axis=0, ddof=1)[None])
        part = ess[index * panel.n_counties : (index + 1) * panel.n_counties]
        data[f"ess_{name}"] = ("month", [np.nanmin(part) if np.isfinite(part).any() else np.nan])
    data["rhat"] = ("month", [np.nanmax(rhat) if np.isfinite(rhat).any() else np.nan])  # NaN: one chain
    data["seconds"] = ("month", [time.perf_counter() - start])
    dataset = xr.Dataset(
        data,
        coords={"month": np.array([t], dtype=np.int32), "county": np.arange(panel.n_counties, dtype=np.int32)},
    )
    return rundir.stamp(dataset, config)


def _run_month(panel: NationalPanel, t: int, config: dict, folder: Path) -> int:
    write_result(fit_month(panel, t, config), folder / _filename(t))
    return t


def fit_months(
    panel: NationalPanel,
    months: Sequence[int] | None = None,
    *,
    draws: int = 1000,
    tune: int = 300,
    chains: int = 2,
    sweeps: int = 10,
    concentration_per_county: float = 15.0,
    seed: int = 2026,
    executor: Executor | None = None,
    results_dir: str | Path | None = None,
    fresh: bool = False,
    progressbar: bool = True,
) -> xr.Dataset:
    """Fit every month of ``panel`` (or ``months``, from 1 to M) as an independent task on ``executor``.

    Each month is :func:`fit_month`, one PyMC fit of ``chains`` chains run one after the other in
    its worker, written to ``results_dir`` (default: a temporary folder) as one checked file. A
    rerun into the same folder skips the finished months, so an interrupted run (Ctrl-C included)
    keeps its finished months and resumes; a tqdm bar counts the months as they finish.

    Parameters
    ----------
    panel : NationalPanel
        The data (:func:`synthetic_panel`).
    months : sequence of int, optional
        The months to fit (default all, 1..M).
    draws, tune, chains : int
        Per month: draws and tuning steps per chain, and the chains.
    sweeps : int
        Sweeps of the data-augmentation step per iteration (:func:`ppdinfer.pymc.sample`). The default,
        10, is twice the sampler's: in months whose counts moved far from the previous month's (the prior's
        centre), 5 sweeps gave a bulk ESS near 250 of 2,000 draws, 10 sweeps about 630 (seed 2026, month 12).
    concentration_per_county : float
        The Dirichlet prior's concentration is this times J.
    seed : int
        Month t's fit draws from the stream (seed, t) alone.
    executor : concurrent.futures.Executor, optional
        Default: a :class:`.synthesis.LocalPool` of all cores; or e.g.
        ``distributed.Client(address).get_executor()``, whose workers get the panel once.
    results_dir : str or Path, optional
        The checkpoint folder.
    fresh : bool
        Delete the folder's results first (needed to change the configuration).
    progressbar : bool
        Show the months finishing.

    Returns
    -------
    xarray.Dataset
        Dims (month, county): ``share_mean``, ``share_sd``, ``cases_mean``, ``cases_sd``; dim month:
        ``ess_share`` and ``ess_cases`` (smallest bulk ESS over the counties), ``rhat`` (largest
        over shares and counts), ``seconds`` (of the fit, which alone varies between runs). The
        attributes are the configuration (:func:`fit_config`) and ``ess_target``.

    Raises
    ------
    ResultsError
        ``results_dir`` holds a run of another configuration, or another run is using it.

    Examples
    --------
    >>> from concurrent.futures import ThreadPoolExecutor
    >>> from ppdinfer.case_studies.covid_pa.national import fit_months, synthetic_panel
    >>> panel = synthetic_panel(counties=5, months=2, seed=1)
    >>> fits = fit_months(panel, draws=50, tune=50, executor=ThreadPoolExecutor(1), progressbar=False)
    >>> dict(fits["cases_mean"].sizes), fits["month"].values.tolist()
    ({'month': 2, 'county': 5}, [1, 2])
    """
    if not isinstance(panel, NationalPanel):
        raise ValueError(f"panel must be a NationalPanel (see synthetic_panel), got {type(panel).__name__}")
    planned = list(range(1, panel.n_months + 1)) if months is None else list(months)
    if not planned or len(set(planned)) != len(planned):
        raise ValueError(f"months must list distinct months from 1 to {panel.n_months}, got {months!r}")
    for t in planned:
        panel.month(t)  # validation
    config = fit_config(
        panel,
        draws=draws,
        tune=tune,
        chains=chains,
        sweeps=sweeps,
        concentration_per_county=concentration_per_county,
        seed=seed,
    )
    with rundir.task_folder(results_dir, config, fresh, prefix="national_") as folder:
        todo = [t for t in planned if not rundir.usable(folder / _filename(t), config)]
        run_tasks(_run_month, todo, panel, config, folder, executor=executor, desc="months", progressbar=progressbar)
        fits = [rundir.read_result(folder / _filename(t))[0] for t in sorted(planned)]
    combined = xr.concat([fit.drop_attrs() for fit in fits], dim="month")
    return combined.assign_attrs({**config, "ess_target": ESS_TARGET})


def national_step(
    counties: int = 3000,
    months: int = 24,
    *,
    results: Path,
    seed: int = 2026,
    draws: int = 1000,
    tune: int = 300,
    chains: int = 2,
    sweeps: int = 10,
    workers: int | None = None,
    executor: Executor | None = None,
    fresh: bool = False,
    progressbar: bool = True,
) -> xr.Dataset:
    """``ppdinfer covid national``: the synthetic panel of ``seed``, every month fitted on a local pool
    of ``workers`` processes (or ``executor``) with checkpoints in ``results/national``; prints one
    line per month (ESS, R-hat, seconds, z-scores of the posterior means against the truth) and writes
    ``results/national.nc``.

    Examples
    --------
    >>> import tempfile
    >>> from concurrent.futures import ThreadPoolExecutor
    >>> from pathlib import Path
    >>> from ppdinfer.case_studies.covid_pa.national import national_step
    >>> with tempfile.TemporaryDirectory() as out:
    ...     fits = national_step(5, 1, results=Path(out), draws=50, tune=50, executor=ThreadPoolExecutor(1),
    ...                          progressbar=False)  # doctest: +ELLIPSIS
    ess_share ...
    1 months of 5 counties fitted in ... s; written to .../national.nc
    """
    from .pipeline import _pool

    panel = synthetic_panel(counties, months, seed=seed)
    folder = Path(results) / "national"
    start = time.perf_counter()
    with _pool(workers, executor, folder) as pool:
        fits = fit_months(
            panel,
            draws=draws,
            tune=tune,
            chains=chains,
            sweeps=sweeps,
            seed=seed,
            executor=pool,
            results_dir=folder,
            fresh=fresh,
            progressbar=progressbar,
        )
    table = month_table(panel, fits)
    print(table.to_string(float_format=lambda v: f"{v:.3g}"))
    path = Path(results) / "national.nc"
    rundir.write_atomically(path, fits.to_netcdf(engine="scipy"))
    print(f"{months} months of {counties} counties fitted in {time.perf_counter() - start:.0f} s; written to {path}")
    return fits


def month_table(panel: NationalPanel, fits: xr.Dataset):
    """One row per fitted month: the smallest ESS, the largest R-hat, seconds, and the mean and sd over
    the counties of z_j = (posterior mean - true count) / posterior sd.

    Examples
    --------
    >>> from concurrent.futures import ThreadPoolExecutor
    >>> from ppdinfer.case_studies.covid_pa.national import fit_months, month_table, synthetic_panel
    >>> panel = synthetic_panel(counties=5, months=1, seed=1)
    >>> fits = fit_months(panel, draws=50, tune=50, executor=ThreadPoolExecutor(1), progressbar=False)
    >>> list(month_table(panel, fits).columns)
    ['ess_share', 'ess_cases', 'rhat', 'seconds', 'z_mean', 'z_sd']
    """
    z = z_scores(panel, fits)
    frame = fits[["ess_share", "ess_cases", "rhat", "seconds"]].to_dataframe()
    return frame.assign(z_mean=z.mean("county").values, z_sd=z.std("county", ddof=1).values)


def z_scores(panel: NationalPanel, fits: xr.Dataset) -> xr.DataArray:
    """(posterior mean - true count) / posterior sd per fitted month and county (NaN where the sd is 0).

    Examples
    --------
    >>> from concurrent.futures import ThreadPoolExecutor
    >>> from ppdinfer.case_studies.covid_pa.national import fit_months, synthetic_panel, z_scores
    >>> panel = synthetic_panel(counties=5, months=1, seed=1)
    >>> fits = fit_months(panel, draws=50, tune=50, executor=ThreadPoolExecutor(1), progressbar=False)
    >>> z_scores(panel, fits).dims
    ('month', 'county')
    """
    truth = xr.DataArray(panel.counts[fits["month"].values], dims=("month", "county"), coords={"month": fits["month"]})
    sd = fits["cases_sd"].where(fits["cases_sd"] > 0)
    return (fits["cases_mean"] - truth) / sd
