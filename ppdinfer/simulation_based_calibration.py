r"""Simulation-based calibration: does a sampler recover the posterior of a model's own simulations?

Talts, Betancourt, Simpson, Vehtari & Gelman (2018): draw theta from the prior, x from the
data model and y from the mechanism, fit the posterior to y, and count the posterior draws below
the true value. Because (theta, x) is then a draw from the posterior given y, that rank is
uniform on {0, ..., L} for any correct sampler with L independent draws,

.. math::

    \theta \sim \pi(\theta \mid z), \quad x \sim \pi(x \mid \theta, z), \quad
    y \sim \pi(y \mid x, z), \quad \theta_1, \dots, \theta_L \sim \pi(\theta \mid y, z)
    \ \Longrightarrow\ \#\{l : \theta_l < \theta\} \sim \mathrm{Uniform}\{0, \dots, L\},

componentwise, and so for x. A wrong likelihood, a mechanism misread, a bug in a sampler or
too few MCMC iterations show up as a rank histogram that is not flat. :func:`~ppdinfer.sbc` runs the
simulations (in parallel, each from its own random stream) and tests the ranks for uniformity;
:meth:`SBCResult.plot` draws the histograms against the band of a uniform one.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import threading
import time
import warnings
from collections.abc import Callable
from concurrent.futures import Executor
from dataclasses import dataclass

import numpy as np
import xarray as xr
from scipy import stats
from tqdm import tqdm

from .inference.enumeration import exact_posterior
from .inference.importance import importance_sample
from .inference.model import PPDModel, theta_as_given
from .inference.parallel import BlockPool
from .inference.rejection import BudgetWarning, rejection_sample
from .inference.results import assemble, posterior_dataset
from .rng import SeedLike, block_generator, root_seed
from .validation import positive_int, probability

#: Posterior draws L that the named samplers give each simulation unless ``draws`` says otherwise
#: (L + 1 = 100 ranks split evenly into 5, 10 or 20 bins).
DEFAULT_DRAWS = 99
#: Proposals per kept draw of the named "importance" sampler: its resample is thinned to L draws.
IMPORTANCE_PROPOSALS_PER_DRAW = 100
#: Most bins of the default chi-square test (and at most one per 10 simulations, at least 2).
MAX_DEFAULT_BINS = 20
_SAMPLER_NAMES = ("rejection", "importance", "exact")
#: The fewest simulations a rank bin of the chi-square test must expect (its approximation needs about 5):
#: with fewer, :func:`~ppdinfer.sbc` gives no verdict (``calibrated`` None, ``reason`` says why).
MIN_EXPECTED_PER_BIN = 5
#: Draws, tuning steps and chains of the default sampler of a PyMC builder (``ppdinfer.pymc.sample``).
PYMC_DEFAULTS = {"draws": 500, "tune": 500, "chains": 2}


@dataclass(frozen=True, repr=False)
class SBCResult:
    r"""The outcome of :func:`~ppdinfer.sbc`: ranks, their uniformity tests and a verdict.

    Attributes
    ----------
    ranks : xarray.Dataset
        The rank of the true value among the L posterior draws, one integer in 0..L per
        simulation and component: a variable per name of theta (and x with ``include_x``), dims
        ``simulation`` and the model's own dims of that variable. The ``simulation`` coordinate
        is the simulation's number, which fixes its random stream.
    truth : xarray.Dataset
        The simulated theta and x, laid out as ``ranks``.
    draws : int
        L, the posterior draws each rank counts among.
    bins : int
        The rank bins of the chi-square tests: ranks 0..L in ``bins`` runs of (nearly) equal length,
        each bin's expected count the simulations times its share of the L + 1 ranks.
    chi_square, p_values : xarray.Dataset
        Pearson's statistic and its p-value (chi-square with ``bins - 1`` degrees of freedom), per
        component, laid out as ``ranks`` without ``simulation``.
    p_value : float
        The Bonferroni-adjusted smallest p-value: min(1, m * min p) over the m component tests.
        Under calibration it is at most alpha with probability at most alpha, however the tests
        depend on each other.
    alpha : float
        The level of the verdict.
    calibrated : bool or None
        ``p_value > alpha``: no evidence that the pipeline is miscalibrated. None when there are
        too few simulations to test (a bin expecting fewer than ``MIN_EXPECTED_PER_BIN`` = 5 of
        them: at least 10 simulations for 2 bins, 5 per bin in general); ``reason`` says so.
    complete : bool
        False when Ctrl-C or a failing simulation stopped the run: the results then hold the
        simulations finished before it (``stopped_by`` says which).
    seconds : float
        The run's wall time.
    stopped_by : str
        Empty for a complete run; else what stopped it ("an interrupt", or the failed
        simulation's number, seed and error).
    reason : str
        Why ``calibrated`` is None (empty otherwise).

    References
    ----------
    .. [1] S. Talts, M. Betancourt, D. Simpson, A. Vehtari and A. Gelman, "Validating Bayesian inference
        algorithms with simulation-based calibration," 2018.

    Examples
    --------
    >>> import functools
    >>> import ppdinfer as pp
    >>> model = pp.PPDModel(pp.priors.Beta(2, 3), pp.generators.Binomial(30), pp.mechanisms.DiscreteLaplace(0.5),
    ...                     names="p")
    >>> result = pp.sbc(model, functools.partial(pp.exact_posterior, draws=19), simulations=40, random_seed=1,
    ...                 progressbar=False)
    >>> result
    SBCResult(simulations=40, draws=19, bins=4, p_value=0.94, calibrated=True)
    >>> result.ranks["p"].dims, int(result.ranks["p"].max()) <= 19
    (('simulation',), True)
    """

    ranks: xr.Dataset
    truth: xr.Dataset
    draws: int
    bins: int
    chi_square: xr.Dataset
    p_values: xr.Dataset
    p_value: float
    alpha: float
    calibrated: bool | None
    complete: bool
    seconds: float
    stopped_by: str = ""
    reason: str = ""

    def __repr__(self) -> str:
        reason = f", reason={self.reason!r}" if self.reason else ""
        return (
            f"SBCResult(simulations={self.ranks.sizes['simulation']}, draws={self.draws}, bins={self.bins}, "
            f"p_value={self.p_value:.3g}, calibrated={self.calibrated}{reason})"
        )

    def plot(self, band: float = 0.99, max_panels: int = 12):
        """Rank histograms, one panel per component, over the band of a uniform histogram.

        Each bin of a uniform histogram holds a Binomial(N, q) count, with N the simulations and q
        the bin's share of the L + 1 ranks; the grey band spans its central ``band`` interval per
        bin and the line its mean. A calibrated pipeline leaves about ``band`` of the bars inside;
        a U shape means posteriors too narrow (overconfident), a hump too wide, a slope a bias.
        The figure is built without pyplot (matplotlib is imported here only), so it needs no
        display.

        Parameters
        ----------
        band : float
            The probability of the shaded interval, in (0, 1).
        max_panels : int
            With more components than this, the ``max_panels`` with the smallest p-values are drawn.

        Returns
        -------
        matplotlib.figure.Figure

        Examples
        --------
        >>> import functools
        >>> import ppdinfer as pp
        >>> model = pp.PPDModel(pp.priors.Beta(2, 3), pp.generators.Binomial(30), pp.mechanisms.DiscreteLaplace(0.5),
        ...                     names="p")
        >>> result = pp.sbc(model, functools.partial(pp.exact_posterior, draws=19), simulations=40,
        ...                 include_x=True, random_seed=1, progressbar=False)
        >>> figure = result.plot()
        >>> [ax.get_title() for ax in figure.axes]
        ['p   (p = 0.94)', 'x   (p = 0.28)']
        >>> figure.savefig("sbc.png")                       # doctest: +SKIP
        """
        from matplotlib.figure import Figure

        band = probability(band, "band")
        max_panels = positive_int(max_panels, "max_panels")
        panels = [(name, index) for name in self.ranks.data_vars for index in np.ndindex(self.ranks[name].shape[1:])]
        if len(panels) > max_panels:
            order = np.argsort([float(self.p_values[name].values[index]) for name, index in panels], kind="stable")
            panels = [panels[i] for i in sorted(order[:max_panels])]
        simulations = self.ranks.sizes["simulation"]
        edges = rank_bin_edges(self.draws, self.bins)
        share = np.diff(edges) / (self.draws + 1)
        low, high = (stats.binom.ppf(q, simulations, share) for q in ((1 - band) / 2, (1 + band) / 2))
        columns = min(4, len(panels))
        rows = -(-len(panels) // columns)
        figure = Figure(figsize=(3.2 * columns, 2.6 * rows), layout="constrained")
        for ax, (name, index) in zip(np.atleast_1d(figure.subplots(rows, columns)).ravel(), panels):
            ranks = self.ranks[name].values[(slice(None), *index)]
            counts = np.bincount(np.searchsorted(edges, ranks, side="right") - 1, minlength=self.bins)
            ax.stairs(high, edges, baseline=low, fill=True, color="0.85", label=f"{band:.0%} band of uniform")
            ax.stairs(simulations * share, edges, color="0.4", linestyle="--")
            ax.stairs(counts, edges, color="tab:blue", linewidth=1.5, label="ranks")
            label = name + (str(list(index)) if index else "")
            ax.set(
                title=f"{label}   (p = {float(self.p_values[name].values[index]):.2g})",
                xlim=(0, self.draws + 1),
                xlabel=f"rank among {self.draws} draws",
                ylabel="simulations",
            )
        for ax in figure.axes[len(panels) :]:
            ax.remove()
        figure.axes[0].legend(loc="best", fontsize="small")
        return figure


def sbc(
    model: PPDModel | Callable,
    sampler: Callable | str | None = None,
    z=None,
    *,
    simulations: int = 200,
    draws: int | None = None,
    include_x: bool = False,
    bins: int | None = None,
    alpha: float = 0.01,
    random_seed: SeedLike = None,
    cores: int | None = None,
    executor: Executor | None = None,
    progressbar: bool = True,
    observed=None,
) -> SBCResult:
    r"""Simulation-based calibration of a model and a sampler (Talts et al. 2018).

    Each of the ``simulations`` draws theta ~ pi(theta | z) (``model.sample_prior``),
    x ~ pi(x | theta, z) (``model.simulate_x``) and y ~ pi(y | x, z) (``model.mechanism.release``),
    fits the posterior with ``sampler(model, y, z, seed)``, keeps L draws evenly spaced over the
    chains' draws, and ranks the truth among them, component by component:

    .. math::

        r = \#\{l : \theta_l < \theta\} + U, \qquad
        U \sim \mathrm{Uniform}\{0, \dots, \#\{l : \theta_l = \theta\}\},

    the second term breaking the ties of a discrete x at random. For a correct sampler with
    independent draws r is uniform on {0, ..., L}. Each component is tested by Pearson's
    chi-square over ``bins`` bins of ranks; the verdict is the Bonferroni-adjusted smallest
    p-value against ``alpha``.

    The simulations are independent and run on threads (the exact samplers' numba kernels and
    NumPy's generators release the GIL) or on ``executor``; simulation i draws from the stream
    ``SeedSequence(random_seed).spawn(simulations)[i]``, so the results do not depend on the
    cores or the executor. Ctrl-C stops the run and returns the simulations finished so far,
    with a :class:`~ppdinfer.BudgetWarning`. A simulation whose sampler raises stops the run
    too: the simulations before it are returned (``complete`` False, ``stopped_by`` naming the
    failed simulation's number, its sampler's ``random_seed`` and the error) with a
    ``RuntimeWarning`` saying the same, so an hour of simulations is not lost to one failure
    and the failure can be reproduced; when the first simulation fails, its error is raised
    (with a note naming it). The simulations kept are those before the failure, whatever
    happened in them, so their verdict is unbiased.

    With fewer simulations than the test needs (a rank bin expecting fewer than 5), there is
    no verdict: ``calibrated`` is None and ``reason`` says how many simulations are needed.

    **A PyMC model.** ``model`` may instead be a function ``builder(y) -> pm.Model`` that
    builds the PyMC model of a release y (a :class:`ppdinfer.pymc.Release` or another observed
    variable, observing ``y``), and ``observed`` a release of the shape it takes (the
    published one, say; its values do not matter). ``builder(observed)`` gives the prior draws
    of every variable (one ``pm.sample_prior_predictive`` call for all the simulations, seeded
    from ``random_seed``); each simulation then fits ``builder(y_i)`` to its simulated release
    y_i with ``sampler(random_seed=seed)`` called inside the model's context (default
    ``ppdinfer.pymc.sample`` with 500 draws and 500 tuning steps on 2 chains, one core, no
    progress bar) and ranks every free variable of the model (the integer latents that feed a
    release, x, with ``include_x``). The simulations run one after another (a fit may use
    several cores itself) with PyMC's log silenced, under sbc's own progress bar.

    Parameters
    ----------
    model : PPDModel or callable
        The model that simulates the data and that the sampler fits, or a function that builds
        a PyMC model from a release (above).
    sampler : callable or {"rejection", "importance", "exact"}
        Called as ``sampler(model, y, z, random_seed=seed)`` (``seed`` an int from the simulation's
        stream), it returns an ``xarray.DataTree`` whose ``posterior`` group holds the
        model's theta names (and its x name for ``include_x``) with dims (chain, draw, ...), as
        every ppdinfer sampler returns: e.g. ``functools.partial(pp.rejection_sample, draws=99,
        progressbar=False)``, or ``functools.partial(ppdinfer.pymc.sample_model, draws=1000,
        chains=2, progressbar=False)`` (its options go to ``pm.sample``; run it on a process pool
        through ``executor``). A ``ValueError`` says when its posterior lacks a variable, or has
        fewer than L draws. The names
        stand for :func:`~ppdinfer.rejection_sample` with L draws, :func:`~ppdinfer.importance_sample`
        with 100 L proposals (its resample thinned to L) and :func:`~ppdinfer.exact_posterior`
        with L draws, without progress bars.
    z : mapping, optional
        Public information, fixed over the simulations.
    simulations : int
        N, the number of simulations (Talts et al. use 1000; a few hundred catch gross errors).
    draws : int, optional
        L, the posterior draws each rank counts among: from a longer run, L draws evenly spaced
        over the chains (thinning, which weakens the autocorrelation of MCMC draws: for MCMC,
        L should not exceed the effective sample size, or the histogram comes out U-shaped even
        for a correct sampler). Default: 99 for a named sampler, every draw for a callable
        (which must then return the same number each time). Choose L + 1 divisible by ``bins``
        for bins of equal length.
    include_x : bool
        Rank the confidential x too, each coordinate a component.
    bins : int, optional
        Bins of the chi-square tests, 2 to L + 1. Default: one per 10 simulations, at least 2
        and at most 20 (and L + 1), lowered to a divisor of L + 1 (bins of equal length) where
        one lies within a factor 2.
    alpha : float
        Level of the verdict.
    random_seed : int, SeedSequence or Generator, optional
    cores : int, optional
        Threads running simulations at once: every available core by default at the top level
        (a sampler called inside then runs on one core), one inside a worker; one core runs
        without threads.
    executor : concurrent.futures.Executor, optional
        Runs the simulations instead, e.g. a ``ProcessPoolExecutor`` for PyMC samplers (the
        model and the sampler must then pickle: a ``functools.partial`` of a module-level
        function does, a lambda does not).
    progressbar : bool
    observed : array_like, optional
        For a PyMC builder only (and required there): a release of the shape it takes.

    Returns
    -------
    SBCResult
        ``ranks`` (an ``xarray.Dataset``: dims ``simulation`` and each variable's components),
        ``truth``, the tests ``chi_square`` and ``p_values`` per component, ``p_value`` (adjusted
        for the number of tests), ``calibrated`` and :meth:`SBCResult.plot`.

    See Also
    --------
    ppdinfer.SBCResult : Its result.

    References
    ----------
    .. [1] S. Talts, M. Betancourt, D. Simpson, A. Vehtari and A. Gelman, "Validating Bayesian inference
        algorithms with simulation-based calibration," 2018.

    Examples
    --------
    >>> import ppdinfer as pp
    >>> model = pp.PPDModel(pp.priors.Beta(2, 3), pp.generators.Binomial(30), pp.mechanisms.DiscreteLaplace(0.5),
    ...                     names="p")
    >>> result = pp.sbc(model, "exact", simulations=60, draws=19, random_seed=2, progressbar=False)
    >>> result.ranks.sizes["simulation"], result.bins, result.calibrated
    (60, 5, True)

    A wrong likelihood: y released at eps = 0.25 and read as if released at eps = 2 (too little
    noise), so the posteriors are too narrow and the ranks pile up at both ends.

    >>> import functools
    >>> wrong = pp.PPDModel(pp.priors.Beta(2, 3), pp.generators.Binomial(30), pp.mechanisms.DiscreteLaplace(2.0),
    ...                     names="p")
    >>> def misread(model, y, z, random_seed):
    ...     return pp.exact_posterior(wrong, y, z, draws=19, random_seed=random_seed)
    >>> noisy = pp.PPDModel(pp.priors.Beta(2, 3), pp.generators.Binomial(30), pp.mechanisms.DiscreteLaplace(0.25),
    ...                     names="p")
    >>> bad = pp.sbc(noisy, misread, simulations=60, include_x=True, random_seed=2, progressbar=False)
    >>> bad.calibrated, bool(bad.p_values["x"] < 1e-6)
    (False, True)

    Too few simulations give no verdict:

    >>> pp.sbc(model, "exact", simulations=3, draws=19, random_seed=2, progressbar=False).calibrated is None
    True

    A PyMC model, built from the release it observes:

    >>> import pymc as pm
    >>> from ppdinfer.pymc import Release
    >>> def build(y):
    ...     with pm.Model() as pymc_model:
    ...         p = pm.Beta("p", 2, 3)
    ...         Release("y", pp.mechanisms.DiscreteLaplace(0.5), pm.Binomial("x", n=30, p=p), observed=y)
    ...     return pymc_model
    >>> import ppdinfer.pymc
    >>> fit = functools.partial(ppdinfer.pymc.sample, draws=60, tune=60, chains=1, progressbar=False,
    ...                         compute_convergence_checks=False)
    >>> checked = pp.sbc(build, fit, observed=12, simulations=2, draws=19, random_seed=3, progressbar=False)
    >>> checked.ranks["p"].sizes["simulation"], checked.calibrated   # two fits: no verdict
    (2, None)
    """
    simulations = positive_int(simulations, "simulations")
    draws = None if draws is None else positive_int(draws, "draws")
    if not isinstance(model, PPDModel):
        if not callable(model):
            raise ValueError(
                f"model must be a ppdinfer.PPDModel or a function building a PyMC model from a release, got {model!r}"
            )
        return _sbc_pymc(
            model,
            sampler,
            z,
            observed,
            simulations,
            draws,
            include_x,
            bins,
            alpha,
            random_seed,
            cores,
            executor,
            progressbar,
        )
    if observed is not None:
        raise ValueError("observed is for a PyMC builder; a PPDModel simulates its releases itself")
    if sampler is None:
        raise ValueError("sampler is required with a PPDModel: a callable or one of " + str(list(_SAMPLER_NAMES)))
    sampler, draws = _resolve_sampler(sampler, draws)
    if not isinstance(include_x, (bool, np.bool_)):
        raise ValueError(f"include_x must be True or False, got {include_x!r}")
    if bins is not None:
        bins = positive_int(bins, "bins")
        if bins < 2 or (draws is not None and bins > draws + 1):
            raise ValueError(f"bins must lie between 2 and draws + 1 = {draws + 1 if draws else 'L + 1'}, got {bins}")
    alpha = probability(alpha, "alpha")
    root = root_seed(random_seed)
    z, theta_shape, x_shape, y = _shapes(model, z)
    names = (*model.names, model.x_name) if include_x else model.names
    task = _Simulation(model, sampler, z, root, theta_shape, x_shape, names, draws)
    start = time.perf_counter()
    parts, stopped_by = _run(task, simulations, cores, executor, progressbar)
    layout = assemble(
        model,
        y,
        z,
        posterior_dataset(
            model, np.zeros((1, int(np.prod(theta_shape)))), np.zeros((1, int(np.prod(x_shape)))), theta_shape, x_shape
        ),
    )
    return _summarize(
        layout["posterior"].to_dataset(), names, parts, bins, alpha, stopped_by, seconds=time.perf_counter() - start
    )


def _run(task, simulations: int, cores, executor, progressbar: bool) -> tuple[list, str]:
    """The parts of the simulations finished, in order, and what stopped the run ("" when none did).

    Ctrl-C or a simulation that raises stops it; the simulations before keep their results (with
    a warning) unless there are none, when the interrupt or the error goes on.
    """
    parts = []
    stopped_by = ""
    bar = tqdm(total=simulations, desc="sbc", unit="simulation", disable=not progressbar, leave=False)
    with BlockPool(cores, executor) as pool:
        try:
            for _, result in pool.map(task, (range(i, i + 1) for i in range(simulations))):
                parts.append(result)
                bar.update(1)
        except KeyboardInterrupt:
            if not parts:
                raise
            stopped_by = "an interrupt"
            warnings.warn(
                f"sbc stopped by an interrupt after {len(parts)} of {simulations} simulations; the "
                "results hold the finished ones",
                BudgetWarning,
                stacklevel=3,
            )
        except Exception as error:
            failed = getattr(error, "sbc_simulation", len(parts))
            seed = getattr(error, "sbc_seed", None)
            if not parts:
                raise
            stopped_by = (
                f"simulation {failed} (its sampler's random_seed={seed}) failed: {type(error).__name__}: {error}"
            )
            warnings.warn(
                f"sbc stopped after {len(parts)} of {simulations} simulations: {stopped_by}. The results hold the "
                f"{len(parts)} simulations before it",
                RuntimeWarning,
                stacklevel=3,
            )
        finally:
            bar.close()
    return parts, stopped_by


def _sbc_pymc(
    builder, sampler, z, observed, simulations, draws, include_x, bins, alpha, random_seed, cores, executor, progressbar
) -> SBCResult:
    """:func:`~ppdinfer.sbc` of a function that builds a PyMC model from a release (see there)."""
    import pymc as pm

    from .pymc.augmentation import privacy_latents

    if z is not None:
        raise ValueError("z is for a PPDModel; a PyMC builder holds its public information itself")
    if observed is None:
        raise ValueError("observed is required with a PyMC builder: a release of the shape builder(y) takes")
    if executor is not None or cores not in (None, 1):
        raise ValueError(
            "cores and executor are for a PPDModel; a PyMC builder's simulations run one after another "
            "(pass cores to the sampler: each fit may use several)"
        )
    if isinstance(sampler, str):
        raise ValueError(f"sampler for a PyMC builder must be a callable like ppdinfer.pymc.sample, got {sampler!r}")
    if sampler is None:
        from .pymc import sample

        sampler = functools.partial(
            sample, **PYMC_DEFAULTS, cores=1, progressbar=False, compute_convergence_checks=False
        )
    elif not callable(sampler):
        raise ValueError(f"sampler must be callable as sampler(random_seed=...) inside the model, got {sampler!r}")
    draws = draws or DEFAULT_DRAWS
    if not isinstance(include_x, (bool, np.bool_)):
        raise ValueError(f"include_x must be True or False, got {include_x!r}")
    if bins is not None:
        bins = positive_int(bins, "bins")
        if not 2 <= bins <= draws + 1:
            raise ValueError(f"bins must lie between 2 and draws + 1 = {draws + 1}, got {bins}")
    alpha = probability(alpha, "alpha")
    root = root_seed(random_seed)
    with _quiet_pymc():
        model = _built(builder, observed)
        releases = [rv.name for rv in model.observed_RVs]
        if len(releases) != 1:
            raise ValueError(
                f"model: builder(observed) must observe one release, its model observes {releases or 'nothing'}"
            )
        latents = {rv.name for rv in privacy_latents(model)}
        names = tuple(rv.name for rv in model.free_RVs if include_x or rv.name not in latents)
        # one call for all the simulations (PyMC compiles its forward sampler once), seeded from block 0 of
        # simulation 0's stream (its theta and x's stream for a PPDModel; unused otherwise in a PyMC run)
        prior_seed = int(
            block_generator(np.random.SeedSequence(root.entropy, spawn_key=(*root.spawn_key, 0)), 0).integers(2**63)
        )
        prior = pm.sample_prior_predictive(draws=simulations, model=model, random_seed=prior_seed)
    task = _PyMCSimulation(
        builder,
        sampler,
        root,
        names,
        prior["prior"].to_dataset(),
        prior["prior_predictive"][releases[0]].values[0],
        draws,
    )
    start = time.perf_counter()
    parts, stopped_by = _run(task, simulations, 1, None, progressbar)
    layout = prior["prior"].to_dataset().isel(draw=slice(0, 1))
    return _summarize(layout, names, parts, bins, alpha, stopped_by, seconds=time.perf_counter() - start)


def _built(builder, y):
    """``builder(y)``, checked to be a PyMC model."""
    import pymc as pm

    model = builder(y)
    if not isinstance(model, pm.Model):
        raise ValueError(f"model: the builder must return a pymc.Model, got {type(model).__name__}")
    return model


_QUIET = threading.Lock()


@contextlib.contextmanager
def _quiet_pymc():
    """PyMC's log (sampler assignment, timings, warnings of short runs) silenced inside, restored after."""
    with _QUIET:
        logger = logging.getLogger("pymc")
        level = logger.level
        logger.setLevel(logging.ERROR)
        try:
            yield
        finally:
            logger.setLevel(level)


@dataclass(frozen=True)
class _PyMCSimulation:
    """One simulation of a PyMC builder: its prior draw (theta, x, y), the fit of builder(y), the ranks."""

    builder: Callable
    sampler: Callable
    root: np.random.SeedSequence
    names: tuple[str, ...]
    prior: xr.Dataset  # every simulation's prior draw: dims (chain, draw, ...), draw = simulation
    releases: np.ndarray  # the simulated releases, one per simulation
    draws: int

    def __call__(self, index: int) -> tuple[np.ndarray, ...]:
        stream = np.random.SeedSequence(self.root.entropy, spawn_key=(*self.root.spawn_key, index))
        fit_seed = int(block_generator(stream, 1).integers(2**63))
        tie_rng = block_generator(stream, 2)
        truth = {name: self.prior[name].values[0, index] for name in self.names}
        with _naming(index, fit_seed), _quiet_pymc():
            with _built(self.builder, self.releases[index]):
                result = self.sampler(random_seed=fit_seed)
            return _ranked(index, result, truth, self.names, self.draws, tie_rng)


def rank_bin_edges(draws: int, bins: int) -> np.ndarray:
    """Edges of ``bins`` runs of consecutive ranks covering 0..``draws``, of lengths differing by at most 1.

    Bin j holds the ranks ``edges[j] <= r < edges[j + 1]``, edges[j] = floor(j (L + 1) / bins).

    Examples
    --------
    >>> from ppdinfer.simulation_based_calibration import rank_bin_edges
    >>> rank_bin_edges(99, 4)             # ranks 0..99: 25 in each bin
    array([  0,  25,  50,  75, 100])
    >>> rank_bin_edges(9, 3)              # ranks 0..9: 3, 3 and 4
    array([ 0,  3,  6, 10])
    """
    draws, bins = positive_int(draws, "draws"), positive_int(bins, "bins")
    if not 2 <= bins <= draws + 1:
        raise ValueError(f"bins must lie between 2 and draws + 1 = {draws + 1}, got {bins}")
    return np.arange(bins + 1) * (draws + 1) // bins


def rank_uniformity(ranks, draws: int, bins: int) -> tuple[np.ndarray, np.ndarray]:
    r"""Pearson's chi-square test that ranks in 0..L are uniform, per column.

    With O_j the ranks in bin j (:func:`rank_bin_edges`) and E_j = N (e_{j+1} - e_j) / (L + 1),

    .. math::

        X^2 = \sum_{j=1}^{B} \frac{(O_j - E_j)^2}{E_j} \ \sim\ \chi^2_{B - 1}
        \quad \text{(approximately, for E_j of 5 or more)}.

    Parameters
    ----------
    ranks : array_like of int, shape (N,) or (N, m)
        N ranks per column, each in 0..``draws``.
    draws : int
        L.
    bins : int
        B, between 2 and L + 1.

    Returns
    -------
    (numpy.ndarray, numpy.ndarray)
        The statistics and p-values, shape (m,) (or scalars for 1-D ranks).

    References
    ----------
    .. [1] S. Talts, M. Betancourt, D. Simpson, A. Vehtari and A. Gelman, "Validating Bayesian inference
        algorithms with simulation-based calibration," 2018.

    Examples
    --------
    >>> import numpy as np
    >>> from ppdinfer.simulation_based_calibration import rank_uniformity
    >>> statistic, p = rank_uniformity(np.arange(100), draws=99, bins=10)    # every rank once: flat
    >>> float(statistic), float(p)
    (0.0, 1.0)
    >>> statistic, p = rank_uniformity(np.r_[np.zeros(50, int), np.full(50, 99)], draws=99, bins=10)
    >>> float(statistic), bool(p < 1e-30)                 # U-shaped: all in the end bins
    (400.0, True)
    """
    edges = rank_bin_edges(draws, bins)
    ranks = np.asarray(ranks)
    if ranks.ndim not in (1, 2) or ranks.shape[0] == 0 or not np.issubdtype(ranks.dtype, np.integer):
        raise ValueError(f"ranks must be a non-empty integer array of shape (N,) or (N, m), got {ranks!r}")
    if ranks.min() < 0 or ranks.max() > draws:
        raise ValueError(f"ranks must lie in 0..draws = 0..{draws}, got values from {ranks.min()} to {ranks.max()}")
    columns = ranks.reshape(ranks.shape[0], -1)
    index = np.searchsorted(edges, columns, side="right") - 1
    counts = np.stack([np.bincount(column, minlength=bins) for column in index.T], axis=-1)
    expected = columns.shape[0] * np.diff(edges)[:, None] / (draws + 1)
    statistic = ((counts - expected) ** 2 / expected).sum(axis=0)
    p_value = stats.chi2.sf(statistic, bins - 1)
    if ranks.ndim == 1:
        return statistic[0], p_value[0]
    return statistic, p_value


def _resolve_sampler(sampler, draws: int | None) -> tuple[Callable, int | None]:
    """The sampler as a callable, and L (a named sampler's default when not given)."""
    if isinstance(sampler, str):
        if sampler not in _SAMPLER_NAMES:
            raise ValueError(f"sampler must be callable or one of {list(_SAMPLER_NAMES)}, got {sampler!r}")
        draws = draws or DEFAULT_DRAWS
        if sampler == "rejection":
            return functools.partial(rejection_sample, draws=draws, progressbar=False), draws
        if sampler == "importance":
            return functools.partial(importance_sample, draws=IMPORTANCE_PROPOSALS_PER_DRAW * draws), draws
        return functools.partial(exact_posterior, draws=draws), draws
    if not callable(sampler):
        raise ValueError(
            f"sampler must be callable as sampler(model, y, z, random_seed) or one of "
            f"{list(_SAMPLER_NAMES)}, got {sampler!r}"
        )
    return sampler, draws


def _default_bins(draws: int, simulations: int) -> int:
    """One bin per 10 simulations, between 2 and min(20, L + 1); the largest divisor of L + 1 within a
    factor 2 below that (bins of equal length) if there is one."""
    target = max(2, min(draws + 1, MAX_DEFAULT_BINS, simulations // 10))
    equal = [b for b in range(max(2, target // 2), target + 1) if (draws + 1) % b == 0]
    return equal[-1] if equal else target


def sbc_simulator(
    simulate: Callable,
    sampler: Callable,
    names,
    *,
    simulations: int = 200,
    draws: int | None = None,
    bins: int | None = None,
    alpha: float = 0.01,
    random_seed: SeedLike = None,
) -> SBCResult:
    """Simulation-based calibration of any simulator and sampler, for a model that is not a ``PPDModel``.

    Simulation i calls ``simulate(rng)`` for ``(truth, y)``, ``truth`` a mapping of each of ``names`` to its true
    value, then ranks each truth among the draws of ``sampler(y, random_seed=seed)`` (an ``xarray.DataTree`` whose
    ``posterior`` holds ``names`` with dims (chain, draw, ...)), exactly as :func:`~ppdinfer.sbc` does: ``rng`` is block 0 of
    the stream ``SeedSequence(random_seed).spawn(...)[i]``, ``seed`` comes from block 1, the ties' coin from block 2.
    The simulations run one after another. ``draws``, ``bins`` and ``alpha`` are :func:`~ppdinfer.sbc`'s.

    Examples
    --------
    >>> import numpy as np, xarray as xr
    >>> def simulate(rng):                       # mu ~ N(0, 1), y ~ N(mu, 1): the posterior is N(y / 2, 1 / 2)
    ...     mu = rng.standard_normal()
    ...     return {"mu": mu}, mu + rng.standard_normal()
    >>> def conjugate(y, random_seed):
    ...     draws = y / 2 + np.sqrt(0.5) * np.random.default_rng(random_seed).standard_normal((1, 99))
    ...     return xr.DataTree.from_dict({"posterior": xr.Dataset({"mu": (("chain", "draw"), draws)})})
    >>> result = sbc_simulator(simulate, conjugate, ["mu"], simulations=100, random_seed=1)
    >>> result.ranks["mu"].shape, result.calibrated
    ((100,), True)
    """
    simulations = positive_int(simulations, "simulations")
    draws = None if draws is None else positive_int(draws, "draws")
    names = tuple(names)
    if not names:
        raise ValueError("names must name at least one parameter")
    root = root_seed(random_seed)
    start = time.perf_counter()
    parts, layout = [], None
    for index in range(simulations):
        stream = np.random.SeedSequence(root.entropy, spawn_key=(*root.spawn_key, index))
        truth, y = simulate(block_generator(stream, 0))
        seed = int(block_generator(stream, 1).integers(2**63))
        with _naming(index, seed):
            result = sampler(y, random_seed=seed)
            parts.append(_ranked(index, result, truth, names, draws, block_generator(stream, 2)))
        if layout is None:
            layout = result["posterior"].to_dataset().isel(draw=slice(0, 1))
    return _summarize(layout, names, parts, bins, alpha, "", seconds=time.perf_counter() - start)


def _shapes(model: PPDModel, z):
    """z as the samplers see it, the shapes of theta and x, and one prior-predictive release y,
    checked by ``model.prepare``."""
    rng = np.random.default_rng(0)
    theta = model.unit_parameters(model.sample_prior(2, rng, z))  # what the data model sees
    x = np.asarray(model.simulate(theta_as_given(theta), z, rng))
    y, z, theta_shape, x_shape = model.prepare(model.mechanism.release(x[0], z, random_seed=rng), z)
    return z, theta_shape, x_shape, y


def _thinned(n: int, draws: int) -> np.ndarray:
    """Indices of ``draws`` of ``n`` draws, evenly spaced (the middle of each of ``draws`` equal runs)."""
    return (2 * np.arange(draws) + 1) * n // (2 * draws)


@dataclass(frozen=True)
class _Simulation:
    """One simulation: simulate (theta, x, y), fit, rank. A module-level class so that a process pool can pickle it."""

    model: PPDModel
    sampler: Callable
    z: dict | None
    root: np.random.SeedSequence
    theta_shape: tuple
    x_shape: tuple
    names: tuple[str, ...]
    draws: int | None

    def __call__(self, index: int) -> tuple[np.ndarray, ...]:
        stream = np.random.SeedSequence(self.root.entropy, spawn_key=(*self.root.spawn_key, index))
        rng = block_generator(stream, 0)  # (theta, x, y)
        fit_seed = int(block_generator(stream, 1).integers(2**63))
        tie_rng = block_generator(stream, 2)
        theta = self.model.sample_prior(1, rng, self.z)
        x = self.model.simulate_x(theta, self.z, rng)
        y = self.model.mechanism.release(x.reshape(self.x_shape), self.z, random_seed=rng)
        truth = posterior_dataset(self.model, theta, x, self.theta_shape, self.x_shape)
        truth = {name: truth[name].values[0, 0] for name in self.names}
        with _naming(index, fit_seed):
            result = self.sampler(self.model, np.asarray(y), self.z, random_seed=fit_seed)
            return _ranked(index, result, truth, self.names, self.draws, tie_rng)


@contextlib.contextmanager
def _naming(index: int, seed: int):
    """An error inside names simulation ``index`` and its sampler's seed (a note, and attributes sbc reads)."""
    try:
        yield
    except Exception as error:
        error.add_note(f"in sbc's simulation {index}, whose sampler got random_seed={seed}")
        try:
            error.sbc_simulation, error.sbc_seed = index, seed
        except AttributeError:  # an exception type without a __dict__
            pass
        raise


def _ranked(index: int, result, truth: dict, names, draws: int | None, tie_rng) -> tuple[np.ndarray, ...]:
    """One simulation's parts: its index, L per variable, the ranks of the truth among the posterior draws, the truth."""
    if not isinstance(result, xr.DataTree) or "posterior" not in result.children:
        raise ValueError(f"sampler must return an xarray.DataTree with a posterior group, got {type(result).__name__}")
    posterior = result["posterior"].to_dataset()
    ranks, truths, counts = [], [], []
    for name in names:
        true = np.asarray(truth[name])
        samples = _draws(posterior, name, true.shape)
        n = samples.shape[0]
        keep = draws or n
        if n < keep:
            raise ValueError(f"simulation {index}: the sampler returned {n} draws, fewer than draws={keep}")
        samples = samples[_thinned(n, keep)]
        below = (samples < true).sum(axis=0)
        tied = (samples == true).sum(axis=0)
        ranks.append((below + tie_rng.integers(0, tied + 1)).reshape(1, -1))
        truths.append(true.reshape(1, -1))
        counts.append(keep)
    return (np.array([index]), np.array([counts]), *ranks, *truths)


def _draws(posterior: xr.Dataset, name: str, shape: tuple) -> np.ndarray:
    """The posterior draws of ``name`` as (chains * draws, *shape)."""
    if name not in posterior:
        raise ValueError(
            f"the sampler's posterior has no variable {name!r} (it has {sorted(posterior.data_vars)}); "
            "the ranks need the model's theta names (and x_name with include_x)"
        )
    values = posterior[name]
    if not {"chain", "draw"} <= set(values.dims) or values.shape[2:] != shape:
        raise ValueError(
            f"the sampler's posterior {name!r} has dims {values.dims} and shape {values.shape}, not "
            f"(chain, draw, ...) with components of shape {shape}"
        )
    return values.transpose("chain", "draw", ...).values.reshape(-1, *shape)


def _summarize(layout: xr.Dataset, names, parts, bins, alpha, stopped_by: str, seconds) -> SBCResult:
    """The ranks and the truth as Datasets laid out as the samplers' results (``layout``: one draw of
    their posterior group), their uniformity tests and the verdict."""
    index, counts, *columns = (np.concatenate(part) for part in zip(*parts))
    if np.any(counts != counts[0, 0]):
        first = int(np.flatnonzero(np.any(counts != counts[0, 0], axis=1))[0])
        raise ValueError(
            f"the sampler returned {counts[first].max()} draws in simulation {index[first]} but "
            f"{counts[0, 0]} in simulation {index[0]}: pass draws=L to rank among L of them"
        )
    draws = int(counts[0, 0])
    simulations = index.size
    if bins is None:
        bins = _default_bins(draws, simulations)
    elif bins > draws + 1:
        raise ValueError(f"bins must lie between 2 and draws + 1 = {draws + 1}, got {bins}")
    ranks, truth, chi_square, p_values = {}, {}, {}, {}
    for i, name in enumerate(names):
        dims = layout[name].dims[2:]
        shape = layout[name].shape[2:]
        rank = columns[i]
        statistic, p_value = rank_uniformity(rank, draws, bins)
        ranks[name] = (("simulation", *dims), rank.reshape(simulations, *shape))
        truth[name] = (("simulation", *dims), columns[len(names) + i].reshape(simulations, *shape))
        chi_square[name] = (dims, statistic.reshape(shape))
        p_values[name] = (dims, p_value.reshape(shape))
    used = {dim for name in names for dim in layout[name].dims[2:]}
    labels = {dim: layout[dim].values for dim in layout.coords if dim in used}  # e.g. the units' names
    attrs = {"draws": draws, "bins": bins, "test": f"Pearson chi-square over {bins} rank bins"}
    all_p = np.concatenate([np.ravel(value) for _, value in p_values.values()])
    p_value = float(min(1.0, all_p.size * all_p.min()))
    calibrated, reason = p_value > alpha, ""
    fewest = simulations * int(np.diff(rank_bin_edges(draws, bins)).min()) / (draws + 1)
    if fewest < MIN_EXPECTED_PER_BIN:
        needed = int(np.ceil(MIN_EXPECTED_PER_BIN * simulations / fewest))
        calibrated = None
        reason = (
            f"too few simulations to test: {simulations} in {bins} rank bins expect {fewest:.3g} in the smallest, "
            f"and the chi-square test needs {MIN_EXPECTED_PER_BIN} (run at least {needed} simulations)"
        )
    per_simulation = {"simulation": index, **labels}
    return SBCResult(
        ranks=xr.Dataset(ranks, coords=per_simulation, attrs=attrs),
        truth=xr.Dataset(truth, coords=per_simulation),
        draws=draws,
        bins=bins,
        chi_square=xr.Dataset(chi_square, coords=labels, attrs=attrs),
        p_values=xr.Dataset(p_values, coords=labels, attrs=attrs),
        p_value=p_value,
        alpha=alpha,
        calibrated=calibrated,
        complete=not stopped_by,
        seconds=seconds,
        stopped_by=stopped_by,
        reason=reason,
    )
