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
too few MCMC iterations show up as a rank histogram that is not flat. :func:`sbc` runs the
simulations (in parallel, each from its own random stream) and tests the ranks for uniformity;
:meth:`SBCResult.plot` draws the histograms against the band of a uniform one.
"""

from __future__ import annotations

import functools
import time
import warnings
from collections.abc import Callable
from concurrent.futures import Executor
from dataclasses import dataclass

import numpy as np
import xarray as xr
from scipy import stats
from tqdm import tqdm

from .._random import SeedLike, block_generator, root_seed
from .._validation import positive_int, probability
from .enumeration import exact_posterior
from .importance import importance_sample
from .model import PPDModel, _natural
from .parallel import BlockPool
from .rejection import BudgetWarning, rejection_sample
from .results import assemble, posterior_dataset

#: Posterior draws L that the named samplers give each simulation unless ``draws`` says otherwise
#: (L + 1 = 100 ranks split evenly into 5, 10 or 20 bins).
DEFAULT_DRAWS = 99
#: Proposals per kept draw of the named "importance" sampler: its resample is thinned to L draws.
IMPORTANCE_PROPOSALS_PER_DRAW = 100
#: Most bins of the default chi-square test (and at most one per 10 simulations, at least 2).
MAX_DEFAULT_BINS = 20
_SAMPLER_NAMES = ("rejection", "importance", "exact")


@dataclass(frozen=True, repr=False)
class SBCResult:
    r"""The outcome of :func:`sbc`: ranks, their uniformity tests and a verdict.

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
    calibrated : bool
        ``p_value > alpha``: no evidence that the pipeline is miscalibrated.
    complete : bool
        False when Ctrl-C stopped the run: the results then hold the simulations finished.
    seconds : float
        The run's wall time.

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
    calibrated: bool
    complete: bool
    seconds: float

    def __repr__(self) -> str:
        return (
            f"SBCResult(simulations={self.ranks.sizes['simulation']}, draws={self.draws}, bins={self.bins}, "
            f"p_value={self.p_value:.3g}, calibrated={self.calibrated})"
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
    model: PPDModel,
    sampler: Callable | str,
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
    with a :class:`~ppdinfer.BudgetWarning`.

    Parameters
    ----------
    model : PPDModel
        The model that simulates the data and that the sampler fits.
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

    Returns
    -------
    SBCResult
        ``ranks`` (an ``xarray.Dataset``: dims ``simulation`` and each variable's components),
        ``truth``, the tests ``chi_square`` and ``p_values`` per component, ``p_value`` (adjusted
        for the number of tests), ``calibrated`` and :meth:`SBCResult.plot`.

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
    """
    if not isinstance(model, PPDModel):
        raise ValueError(f"model must be a ppdinfer.PPDModel, got {model!r}")
    simulations = positive_int(simulations, "simulations")
    draws = None if draws is None else positive_int(draws, "draws")
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

    parts = []
    start = time.perf_counter()
    bar = tqdm(total=simulations, desc="sbc", unit="simulation", disable=not progressbar, leave=False)
    with BlockPool(cores, executor) as pool:
        try:
            for _, result in pool.map(task, (range(i, i + 1) for i in range(simulations))):
                parts.append(result)
                bar.update(1)
        except KeyboardInterrupt:
            if not parts:
                raise
            warnings.warn(
                f"sbc stopped by an interrupt after {len(parts)} of {simulations} simulations; the "
                "results hold the finished ones",
                BudgetWarning,
                stacklevel=2,
            )
        finally:
            bar.close()
    seconds = time.perf_counter() - start
    layout = assemble(
        model,
        y,
        z,
        posterior_dataset(
            model, np.zeros((1, int(np.prod(theta_shape)))), np.zeros((1, int(np.prod(x_shape)))), theta_shape, x_shape
        ),
    )
    return _summarize(
        layout["posterior"].to_dataset(), names, parts, bins, alpha, complete=len(parts) == simulations, seconds=seconds
    )


def rank_bin_edges(draws: int, bins: int) -> np.ndarray:
    """Edges of ``bins`` runs of consecutive ranks covering 0..``draws``, of lengths differing by at most 1.

    Bin j holds the ranks ``edges[j] <= r < edges[j + 1]``, edges[j] = floor(j (L + 1) / bins).

    Examples
    --------
    >>> from ppdinfer.inference.sbc import rank_bin_edges
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

    Examples
    --------
    >>> import numpy as np
    >>> from ppdinfer.inference.sbc import rank_uniformity
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


def _shapes(model: PPDModel, z):
    """z as the samplers see it, the shapes of theta and x, and one prior-predictive release y,
    checked by ``model.prepare``."""
    rng = np.random.default_rng(0)
    theta = model.unit_parameters(model.sample_prior(2, rng, z))  # what the data model sees
    x = np.asarray(model.simulate(_natural(theta), z, rng))
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
        result = self.sampler(self.model, np.asarray(y), self.z, random_seed=fit_seed)
        if not isinstance(result, xr.DataTree) or "posterior" not in result.children:
            raise ValueError(
                f"sampler must return an xarray.DataTree with a posterior group, got {type(result).__name__}"
            )
        posterior = result["posterior"].to_dataset()
        truth = posterior_dataset(self.model, theta, x, self.theta_shape, self.x_shape)
        ranks, truths, counts = [], [], []
        for name in self.names:
            true = truth[name].values[0, 0]
            samples = _draws(posterior, name, true.shape)
            n = samples.shape[0]
            keep = self.draws or n
            if n < keep:
                raise ValueError(f"simulation {index}: the sampler returned {n} draws, fewer than draws={keep}")
            samples = samples[_thinned(n, keep)]
            below = (samples < true).sum(axis=0)
            tied = (samples == true).sum(axis=0)
            ranks.append((below + tie_rng.integers(0, tied + 1)).reshape(1, -1))
            truths.append(np.asarray(true).reshape(1, -1))
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


def _summarize(layout: xr.Dataset, names, parts, bins, alpha, complete, seconds) -> SBCResult:
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
        calibrated=p_value > alpha,
        complete=complete,
        seconds=seconds,
    )
