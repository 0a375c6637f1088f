"""Self-normalized importance sampling of theta | y, z: the corrected Algorithm 2.

theta_j ~ g (the proposal, default the prior), x_j ~ pi(x | theta_j, z), and
w_j = pi(y | x_j, z) pi(theta_j | z) / g(theta_j). The weighted proposals and their normalized
log weights are the ``proposal`` group; ``posterior`` is an equal-weight resample of them, so
that every ArviZ function (which knows no weights) summarises the posterior.
:func:`weighted_mean` and :func:`ppdinfer.summary` use all the weighted proposals.

The work runs in two passes over blocks of proposals, on as many threads as there are cores:
the first draws and weighs each block and summarizes its weights (largest log weight, sum and sum
of squares relative to it, largest weights); from these summaries alone one thread finds the
normalizer, the ESS and the PSIS fit; the second pass normalizes and smooths each block's log
weights and draws its share of the stratified resample (one compiled call per block). Nothing
touches all the proposals on one thread, the arrays the threads fill are allocated in small pages
(:func:`~ppdinfer.inference.parallel.empty_for_threads`), and the results do not depend on the
number of cores.
"""

from __future__ import annotations

import threading
import warnings
from collections.abc import Callable
from concurrent.futures import Executor
from dataclasses import dataclass

import numpy as np
import xarray as xr

from ..kernels.resampling import resample_block, running_sums, stratum_search
from ..rng import SeedLike, block_generator, root_seed
from ..validation import positive_int
from ._guards import check_box, check_possible, check_proposal, check_z_keys
from .model import PPDModel, check_distribution, draw_theta, theta_logpdf
from .parallel import BlockPool, empty_for_threads
from .rejection import BLOCK_SIZE
from .results import assemble, posterior_dataset

#: Pareto-k above this makes the importance estimate unreliable (Vehtari et al. 2024).
PARETO_K_THRESHOLD = 0.7
#: An ESS below this is too small to trust, whatever Pareto k says.
MIN_ESS = 100
#: PSIS fits the largest floor(draws / 5) weights and needs at least 5 of them.
MIN_PSIS_DRAWS = 25


class ImportanceWarning(UserWarning):
    """The importance weights are unreliable: a heavy tail (Pareto k > 0.7) or a tiny ESS.

    References
    ----------
    .. [1] A. Vehtari, D. Simpson, A. Gelman, Y. Yao and J. Gabry, "Pareto smoothed importance
        sampling," Journal of Machine Learning Research, 2024.

    Examples
    --------
    >>> import warnings
    >>> import ppdinfer as pp
    >>> from ppdinfer import generators, mechanisms, priors
    >>> model = pp.PPDModel(priors.Beta(1, 1), generators.Binomial(100), mechanisms.DiscreteLaplace(0.5), names="p")
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     result = pp.importance_sample(model, 40, draws=20, random_seed=1)   # far too few
    >>> caught[0].category is pp.ImportanceWarning
    True
    """


def importance_sample(
    model: PPDModel,
    y,
    z=None,
    *,
    draws: int = 10_000,
    proposal=None,
    random_seed: SeedLike = None,
    cores: int | None = None,
    executor: Executor | None = None,
) -> xr.DataTree:
    r"""Weighted draws of theta and x given the release y and public information z.

    The corrected Algorithm 2: theta_j ~ g, x_j ~ pi(x | theta_j, z), and the self-normalized
    weights

    .. math::

        w_j = \frac{\pi(y \mid x_j, z) \, \pi(\theta_j \mid z)}{g(\theta_j)}, \qquad
        \hat E[a(\theta) \mid y, z] = \frac{\sum_j w_j \, a(\theta_j)}{\sum_j w_j},

    with the diagnostics ESS = (sum_j w_j)^2 / sum_j w_j^2 and the Pareto-k of the weights'
    tail (PSIS, Vehtari et al. 2024).

    Warns (:class:`ImportanceWarning`) when Pareto k > 0.7, or when the ESS is below 100
    whatever k says: k is NaN when the largest weights are tied (common with a discrete
    likelihood) or when ``draws`` < 25, too few for PSIS, which is then skipped (and the ESS
    warning fires). Warns too when a ``proposal`` misses more than 0.1 % of the posterior (its
    density is zero where a pilot of 4096 prior draws weighted by the likelihood puts that
    much mass): the weights can never reach that part, and no other diagnostic sees it.
    Refuses a y of probability zero under the model (where that can be decided, see
    :func:`rejection_sample`), and a NaN log weight.

    Parameters
    ----------
    model : PPDModel
    y, z
        The release and the public information, as for :func:`rejection_sample`.
    draws : int
        Number of proposals (weighted draws), and of draws in the resampled ``posterior``.
    proposal : optional
        The distribution g of theta (``rvs`` and ``logpdf``, like a prior). Default: the prior,
        in which case w_j = pi(y | x_j, z).
    random_seed : int, SeedSequence or Generator, optional
        The same seed gives the same draws whatever ``cores`` or ``executor`` is: proposals come
        in blocks of 16,384, each from its own stream, and so do the uniforms of the resample.
    cores, executor : optional
        As for :func:`rejection_sample`: threads that draw and weigh blocks concurrently
        (default: every available core at the top level, one inside a worker), or an executor
        of your own. Each block also sums its weights and keeps its largest ones, so what is
        left to do over all the proposals at once (normalizing, PSIS, the resample) runs block
        by block too, on ``cores`` threads, and costs one thread little.

    Returns
    -------
    xarray.DataTree
        ``proposal``: the weighted proposals (theta and x) with ``log_weight`` (normalized, dims
        (chain, draw)) and ``psis_log_weight`` (Pareto-smoothed); ``posterior``: ``draws``
        equal-weight draws, a stratified resample of the proposals kept in proposal order (so
        repeats sit side by side and ArviZ's ESS counts them as such), its attrs giving
        ``proposals`` and ``ess``; ``sample_stats``: ``ess`` = (sum w)^2 / sum w^2 and
        ``pareto_k``; the other groups as for :func:`rejection_sample`.

    See Also
    --------
    ppdinfer.rejection_sample : Algorithm 1, exact draws.
    ppdinfer.exact_posterior : The posterior by enumeration.
    ppdinfer.exchange_sample : MCMC by the exchange algorithm.
    ppdinfer.weighted_mean : The weighted posterior means.
    ppdinfer.resample : Unweighted draws from the result.

    References
    ----------
    .. [1] J. Seeman, M. Reimherr and A. Slavkovic, "Formal privacy for partially private data,"
        arXiv:2204.01102, 2022. Algorithm 2.
    .. [2] A. Vehtari, D. Simpson, A. Gelman, Y. Yao and J. Gabry, "Pareto smoothed importance
        sampling," Journal of Machine Learning Research, 2024.

    Examples
    --------
    >>> import ppdinfer as pp
    >>> from ppdinfer import generators, mechanisms, priors
    >>> model = pp.PPDModel(priors.Beta(1, 1), generators.Binomial(100), mechanisms.DiscreteLaplace(0.5), names="p")
    >>> result = pp.importance_sample(model, 40, draws=2000, random_seed=1)
    >>> stats = result["sample_stats"]
    >>> bool(stats["ess"] > 100)          # enough effective draws
    True
    >>> float(stats["pareto_k"])          # undefined: a discrete likelihood's largest weights tie; read the ESS
    nan
    >>> round(float(pp.weighted_mean(result)["p"]), 1)
    0.4
    """
    draws = positive_int(draws, "draws")
    root = root_seed(random_seed)
    labels = model.labels(y, z)
    y, z, theta_shape, x_shape = model.prepare(y, z)
    model.check_memory(draws, theta_shape, x_shape)
    check_z_keys(model, y, z, "importance_sample")
    check_possible(model, y, z)
    coverage = None
    if proposal is not None:
        check_distribution(proposal, "proposal")
        coverage = check_proposal(model, proposal, y, z)
    n_blocks = -(-draws // BLOCK_SIZE)
    tail = _tail_size(draws)
    with BlockPool(cores, executor) as pool:
        store = _Proposals(draws) if pool.shares_memory else None
        weigh_block = _WeightedBlock(model, y, z, root, proposal, draws, largest=tail + 1 if tail else 0, store=store)
        theta, x, log_w, peaks, sums, squares, top_w, top_i = _joined(
            pool.map(weigh_block, pool.even_chunks(range(n_blocks)))
        )
    if store is not None:
        theta, x, log_w = store.arrays
    if theta.shape[1:] != (int(np.prod(theta_shape)),):
        raise ValueError(
            f"proposal draws have {theta.shape[1]} components but the prior's have {int(np.prod(theta_shape))}"
        )
    weights = _Normalizer.from_blocks(peaks, sums, squares)
    pareto_k, tail_index, tail_value = _pareto_tail(top_w, top_i, tail, weights.peak)
    ess = weights.ess
    if coverage is not None:
        warnings.warn(f"importance_sample: {coverage}", ImportanceWarning, stacklevel=2)
    if pareto_k > PARETO_K_THRESHOLD or ess < MIN_ESS:
        problem = (
            f"Pareto k = {pareto_k:.2f} > {PARETO_K_THRESHOLD}: the weights have a heavy tail"
            if pareto_k > PARETO_K_THRESHOLD
            else f"the effective sample size is below {MIN_ESS}"
        )
        warnings.warn(
            f"importance_sample: {problem} and the estimates are unreliable (ESS {ess:.0f} of {draws}); "
            "use a proposal closer to the posterior, more draws, or rejection_sample",
            ImportanceWarning,
            stacklevel=2,
        )
    finish = _FinishedBlock(
        theta=theta,
        x=x,
        log_w=log_w,
        weights=weights,
        uniforms=_Uniforms(root, n_blocks),
        tail_index=tail_index,
        tail_value=tail_value,
        psis_log_w=None if tail_index is None else empty_for_threads(log_w.shape, log_w.dtype),
        theta_out=empty_for_threads((draws, theta.shape[1]), theta.dtype),
        x_out=empty_for_threads((draws, *x.shape[1:]), x.dtype),
    )
    with BlockPool(cores) as pool:  # threads: the blocks write into the arrays above
        psis_sums, counts = _joined(pool.map(finish, pool.even_chunks(range(n_blocks))))
    if counts.sum() != draws:  # every stratum belongs to exactly one block
        raise RuntimeError(f"importance_sample: the resample has {counts.sum()} draws instead of {draws}")
    psis_log_w = finish.psis_log_w
    if psis_log_w is None:
        psis_log_w = log_w
    else:
        psis_log_w -= np.log(psis_sums.sum())
    proposals = posterior_dataset(model, theta, x, theta_shape, x_shape)
    posterior = posterior_dataset(model, finish.theta_out, finish.x_out, theta_shape, x_shape)
    posterior.attrs.update(resampling="stratified", proposals=draws, ess=ess)
    check_box(model, finish.x_out, z, "importance_sample")
    proposals = proposals.assign(
        log_weight=(["chain", "draw"], log_w.reshape(1, -1)),
        psis_log_weight=(["chain", "draw"], psis_log_w.reshape(1, -1)),
    )
    stats = xr.Dataset({"ess": ((), ess), "pareto_k": ((), pareto_k)})
    return assemble(model, y, z, posterior, stats, attrs={"sampler": "importance"}, labels=labels, proposal=proposals)


def _joined(chunks) -> tuple[np.ndarray, ...]:
    """The parts of ``BlockPool.map``'s chunks, each concatenated over the chunks (a lone chunk's as it is)."""
    return tuple(part[0] if len(part) == 1 else np.concatenate(part) for part in zip(*(parts for _, parts in chunks)))


def _tail_size(draws: int) -> int:
    """How many of the largest weights PSIS fits (as arviz-stats: floor(3 sqrt(S)) above 225 draws,
    floor(S / 5) below), or 0 below ``MIN_PSIS_DRAWS``, where no tail is fitted."""
    if draws < MIN_PSIS_DRAWS:
        return 0
    return int(3 * draws**0.5) if draws > 225 else draws // 5


def _largest(values: np.ndarray, count: int) -> np.ndarray:
    """Positions of the ``count`` largest ``values`` (all of them when there are fewer), in no particular order."""
    if count >= values.size:
        return np.arange(values.size)
    return np.argpartition(values, values.size - count)[values.size - count :] if count else np.arange(0)


def _relative_weights(log_w: np.ndarray) -> tuple[float, np.ndarray]:
    """A block's largest log weight (NaN if one is NaN) and its weights relative to that one (zeros
    for a block of zero weights)."""
    peak = log_w.max()
    if not peak > -np.inf:
        return peak, np.zeros_like(log_w)
    relative = np.subtract(log_w, peak)
    return peak, np.exp(relative, out=relative)


@dataclass(frozen=True)
class _WeightedBlock:
    """Draw and weigh one block of proposals: theta, x, the unnormalized log weights, and what the
    sampler needs of them as a whole (so that no pass over all the weights is left to one thread):
    the block's largest log weight, its weights' sum and sum of squares relative to that one, and
    its ``largest`` log weights with their positions (all a PSIS fit can use). With a ``store``
    (threads) theta, x and the log weights go there rather than back to the caller.

    A module-level class (not a closure) so that a process pool can pickle it.
    """

    model: PPDModel
    y: np.ndarray
    z: dict
    root: np.random.SeedSequence
    proposal: object
    draws: int
    largest: int
    store: _Proposals | None = None

    def __call__(self, block: int) -> tuple[np.ndarray, ...]:
        rng = block_generator(self.root, block)
        size = min(BLOCK_SIZE, self.draws - block * BLOCK_SIZE)
        g = self.model.prior if self.proposal is None else self.proposal
        theta = draw_theta(g, size, rng, self.z)
        x = self.model.simulate_x(theta, self.z, rng)
        log_w = self.model.loglik(self.y, x, self.z)
        if self.proposal is not None:
            log_g = theta_logpdf(self.proposal, theta, self.z)
            if np.any(np.isneginf(log_g)):
                raise ValueError("the proposal's logpdf is -inf at one of its own draws")
            log_w = log_w + self.model.prior_logpdf(theta, self.z) - log_g
        peak, relative = _relative_weights(log_w)
        cumulative, square = running_sums(relative)
        if np.isnan(peak):
            raise ValueError(
                "a log weight is NaN: the mechanism's logpdf, the prior's or the proposal's returned NaN at a proposal"
            )
        top = _largest(log_w, self.largest)
        summary = np.array([peak]), cumulative[-1:], np.array([square]), log_w[top], top + block * BLOCK_SIZE
        if self.store is None:
            return theta, x, log_w, *summary
        self.store.put(block * BLOCK_SIZE, theta, x, log_w)
        return theta[:0], x[:0], log_w[:0], *summary


class _Proposals:
    """theta, x and the log weights of all the proposals, which blocks running on threads write in
    place (no copy of them all on one thread); allocated by the first block to arrive, with its
    dtypes and shapes."""

    names = ("theta", "x", "log weights")

    def __init__(self, draws: int):
        self.draws = draws
        self.arrays: tuple[np.ndarray, ...] | None = None
        self._lock = threading.Lock()

    def put(self, start: int, *parts: np.ndarray) -> None:
        """Write one block's theta, x and log weights at position ``start``."""
        with self._lock:
            if self.arrays is None:
                self.arrays = tuple(empty_for_threads((self.draws, *part.shape[1:]), part.dtype) for part in parts)
        for name, part, whole in zip(self.names, parts, self.arrays, strict=True):
            if not np.can_cast(part.dtype, whole.dtype, "same_kind") or part.shape[1:] != whole.shape[1:]:
                raise ValueError(
                    f"the blocks of proposals disagree: {name} of dtype {part.dtype} and shape {part.shape[1:]} "
                    f"in one, {whole.dtype} and {whole.shape[1:]} in another"
                )
            whole[start : start + len(part)] = part


@dataclass(frozen=True)
class _Normalizer:
    """The weights as a whole, from the blocks' summaries: the largest log weight ``peak``, each
    block's weights' scale exp(block peak - peak), the cumulative weight (relative to ``peak``)
    where each block starts and ends (the last block of positive weight ends at infinity, so that
    rounding leaves no stratum of the resample without a block), and the ESS."""

    peak: float
    scale: np.ndarray
    starts: np.ndarray
    ends: np.ndarray
    total: float
    ess: float

    @classmethod
    def from_blocks(cls, peaks: np.ndarray, sums: np.ndarray, squares: np.ndarray) -> _Normalizer:
        """Combine the blocks' largest log weights, sums and sums of squares (relative to their peaks)."""
        peak = peaks.max()
        if not peak > -np.inf:
            raise ValueError(
                "every importance weight is zero: the proposal puts no mass where the posterior is, "
                "or y has probability zero under the model"
            )
        scale = np.exp(peaks - peak)
        mass = scale * sums
        starts = np.concatenate([[0.0], np.cumsum(mass)])
        ends = starts[1:].copy()
        ends[np.flatnonzero(mass)[-1]] = np.inf
        total = float(starts[-1])
        return cls(float(peak), scale, starts[:-1], ends, total, total**2 / float((scale**2 * squares).sum()))

    @property
    def log_total(self) -> float:
        """The log of the sum of all the weights: what normalizes the log weights."""
        return self.peak + float(np.log(self.total))


def pareto_k(log_weights) -> float:
    """Pareto k of importance weights given their logs (any shape): the PSIS fit of their largest values that
    :func:`importance_sample` reports; NaN where there are too few to fit (under ``MIN_PSIS_DRAWS``) or the
    largest tie. Above ``PARETO_K_THRESHOLD`` (0.7) the weights' tail is too heavy for their mean to be trusted.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> bool(pareto_k(rng.normal(0.0, 0.1, 4000)) < 0.5)              # nearly equal weights
    True
    >>> bool(pareto_k(np.log(rng.pareto(0.8, 4000) + 1.0)) > 0.7)      # weights of infinite mean
    True
    """
    flat = np.ravel(np.asarray(log_weights, dtype=float))
    if not flat.size:
        return float("nan")
    return _pareto_tail(flat, np.arange(flat.size), _tail_size(flat.size), float(flat.max()))[0]


def _pareto_tail(
    top_w: np.ndarray, top_i: np.ndarray, tail: int, peak: float
) -> tuple[float, np.ndarray | None, np.ndarray | None]:
    """Pareto k of the weights and their Pareto-smoothed tail (Vehtari et al. 2024), from the
    blocks' largest log weights ``top_w`` at positions ``top_i``: the ``tail`` largest of all
    and the next (the cutoff) are among them, and they are all that PSIS reads.

    Returns k, the positions of the smoothed weights (ascending) and their smoothed log weights
    relative to ``peak``; k is NaN and nothing is smoothed when PSIS cannot fit a tail (``tail``
    is 0: too few draws; or the largest weights take fewer distinct values than half the tail's
    size: a discrete likelihood, whose weights are bounded and whose fitted "tail shape" would be
    an artefact of the ties, e.g. k = 5.7 from 9 distinct values; read the ESS then), or when the
    fit fails. The fit is arviz-stats' own, given the tail and the cutoff, so k and the smoothed
    weights are those of its ``psislw`` on all the weights (tests/test_importance_scaling.py checks).
    """
    from arviz_stats.base import array_stats  # imported here: it takes seconds to import

    nothing = float("nan"), None, None
    if not tail:
        return nothing
    chosen = _largest(top_w, tail + 1)
    order = chosen[np.argsort(top_w[chosen], kind="stable")]
    values, index = top_w[order], top_i[order]
    if np.unique(values[1:]).size < tail / 2:
        return nothing
    try:
        smoothed, k = array_stats._ps_tail(values, tail + 1, tail, smooth_draws=True, tail="right", log_weights=True)
    except ValueError:  # "All tail values are the same"
        return nothing
    if not np.isfinite(k):
        return float(k), None, None
    # _ps_tail normalizes its values; the cutoff, the one value it leaves unsmoothed, is the smallest
    smoothed += values[0] - peak - smoothed.min()
    position = np.argsort(index, kind="stable")
    return float(k), index[position], smoothed[position]


@dataclass(frozen=True)
class _FinishedBlock:
    """The second pass over one block, once the weights are known as a whole: its normalized and
    Pareto-smoothed log weights written in place, and its share of the stratified resample written
    into ``theta_out`` and ``x_out``. Returns the sum of the block's smoothed weights (relative to
    the largest weight; 0 without smoothing) and its number of resampled draws. Threads only: it
    writes into the arrays it holds."""

    theta: np.ndarray
    x: np.ndarray
    log_w: np.ndarray
    weights: _Normalizer
    uniforms: _Uniforms
    tail_index: np.ndarray | None
    tail_value: np.ndarray | None
    psis_log_w: np.ndarray | None
    theta_out: np.ndarray
    x_out: np.ndarray

    def __call__(self, block: int) -> tuple[np.ndarray, np.ndarray]:
        rows = slice(block * BLOCK_SIZE, min((block + 1) * BLOCK_SIZE, self.log_w.size))
        log_w = self.log_w[rows]
        smoothed = 0.0
        if self.psis_log_w is not None:
            psis = self.psis_log_w[rows]
            np.subtract(log_w, self.weights.peak, out=psis)
            first, stop = np.searchsorted(self.tail_index, [rows.start, rows.stop])
            psis[self.tail_index[first:stop] - rows.start] = self.tail_value[first:stop]
            smoothed = float(np.exp(psis).sum())
        w, draws = self.weights, self.theta_out.shape[0]
        start, end = w.starts[block], w.ends[block]
        lo, hi = _strata_around(start, end, w.total, draws)
        _, relative = _relative_weights(log_w)  # as in the first pass: the same cumulative weights, bit for bit
        _, count = resample_block(
            relative,
            log_w,
            w.log_total,
            self.uniforms(lo, hi),
            lo,
            draws,
            w.total,
            start,
            end,
            w.scale[block],
            self.theta[rows],
            self.x[rows],
            self.theta_out,
            self.x_out,
        )
        return np.array([smoothed]), np.array([count])


@dataclass(frozen=True)
class _Uniforms:
    """The uniform of each stratum of a stratified resample: stratum k's is number k % BLOCK_SIZE of
    the stream of block ``first + k // BLOCK_SIZE`` under ``root``, so that any block of proposals
    can draw the ones of its strata."""

    root: np.random.SeedSequence
    first: int

    def __call__(self, start: int, stop: int) -> np.ndarray:
        """The uniforms of strata ``start`` to ``stop - 1``."""
        if stop <= start:
            return np.empty(0)
        parts = []
        for block in range(start // BLOCK_SIZE, -(-stop // BLOCK_SIZE)):
            offset = block * BLOCK_SIZE
            rng = block_generator(self.root, self.first + block)
            skip = max(start - offset, 0)
            rng.bit_generator.advance(skip)  # one 64-bit step per double: as if the skipped ones were drawn
            parts.append(rng.random(min(stop - offset, BLOCK_SIZE) - skip))
        return np.concatenate(parts)


def _stratified(
    cumulative: np.ndarray,
    start: float,
    end: float,
    scale: float,
    total: float,
    draws: int,
    uniforms: Callable[[int, int], np.ndarray],
) -> tuple[slice, np.ndarray]:
    """The part of a stratified resample that falls in one block of proposals.

    Stratum k of ``draws`` has the point p_k = (k + U_k) / draws * total on the cumulative weight
    of all the proposals; the block owns the strata whose point lies in [start, end), and the
    resampled proposal of each is the first whose cumulative weight exceeds it. Returns the
    block's strata (a slice: they are consecutive) and the positions in the block of their
    proposals, found from the block's own ``cumulative`` weights (relative to its largest, hence
    divided by ``scale``). Each p_k is computed the same way by every block, so the strata are
    shared out exactly, and the result is the stratified resample of all the proposals at once.
    ``uniforms(a, b)`` gives U_a, ..., U_{b-1} (a :class:`_Uniforms`).
    """
    lo, hi = _strata_around(start, end, total, draws)
    first, stop, index = stratum_search(cumulative, uniforms(lo, hi), lo, draws, total, start, end, scale)
    return slice(lo + first, lo + stop), index


def _strata_around(start: float, end: float, total: float, draws: int) -> tuple[int, int]:
    """A run of strata lo, ..., hi - 1 that holds every stratum whose point can lie in [start, end)
    (with a margin for rounding; none when the stretch is empty)."""
    if not end > start:
        return 0, 0
    return max(int(start / total * draws) - 1, 0), min(int(min(end, total) / total * draws) + 2, draws)


def _take(proposals: xr.Dataset, index: np.ndarray) -> xr.Dataset:
    """The proposals (one chain) at positions ``index``, as a chain of ``index.size`` draws."""
    return proposals.isel(draw=index).assign_coords(draw=np.arange(index.size))


def _weighted(result: xr.DataTree, smoothed: bool) -> tuple[xr.Dataset, xr.DataArray]:
    """The posterior variables of the weighted proposals, and their normalized weights."""
    if "proposal" not in result.children:
        raise ValueError("result has no importance weights: pass the output of importance_sample")
    proposals = result["proposal"].to_dataset()
    w = np.exp(proposals["psis_log_weight" if smoothed else "log_weight"])
    return proposals[list(result["posterior"].data_vars)], w


def weighted_mean(result: xr.DataTree, smoothed: bool = False) -> xr.Dataset:
    """Self-normalized importance estimates of the posterior means, from all the weighted proposals.

    sum_j w_j v_j / sum_j w_j for every posterior variable v, with the normalized weights
    (``smoothed=True``: the Pareto-smoothed ones).

    See Also
    --------
    ppdinfer.importance_sample : The sampler.
    ppdinfer.resample : Unweighted draws.

    References
    ----------
    .. [1] J. Seeman, M. Reimherr and A. Slavkovic, "Formal privacy for partially private data,"
        arXiv:2204.01102, 2022. Algorithm 2.
    .. [2] A. Vehtari, D. Simpson, A. Gelman, Y. Yao and J. Gabry, "Pareto smoothed importance
        sampling," Journal of Machine Learning Research, 2024.

    Examples
    --------
    >>> import ppdinfer as pp
    >>> from ppdinfer import generators, mechanisms, priors
    >>> model = pp.PPDModel(priors.Beta(1, 1), generators.Binomial(100), mechanisms.DiscreteLaplace(0.5), names="p")
    >>> result = pp.importance_sample(model, 40, draws=2000, random_seed=1)
    >>> means = pp.weighted_mean(result)
    >>> sorted(means.data_vars), round(float(means["x"]))
    (['p', 'x'], 40)
    """
    proposals, w = _weighted(result, smoothed)
    return (proposals * w).sum(("chain", "draw")) / w.sum()


def resample(
    result: xr.DataTree, draws: int | None = None, random_seed: SeedLike = None, smoothed: bool = False
) -> xr.DataTree:
    """Equal-weight posterior draws: a stratified resample of an importance result's proposals.

    As the ``posterior`` group of :func:`importance_sample`, but of any size (default: the number
    of proposals), from another seed, or by the Pareto-smoothed weights. The returned tree has
    the same groups except ``proposal`` and ``sample_stats``.

    See Also
    --------
    ppdinfer.importance_sample : The sampler.
    ppdinfer.weighted_mean : The weighted posterior means.

    Examples
    --------
    >>> import ppdinfer as pp
    >>> from ppdinfer import generators, mechanisms, priors
    >>> model = pp.PPDModel(priors.Beta(1, 1), generators.Binomial(100), mechanisms.DiscreteLaplace(0.5), names="p")
    >>> result = pp.importance_sample(model, 40, draws=2000, random_seed=1)
    >>> draws = pp.resample(result, draws=500, random_seed=2)
    >>> draws["posterior"].sizes["draw"], "proposal" in draws.children
    (500, False)
    """
    proposals, w = _weighted(result, smoothed)
    w = w.values.reshape(-1)
    draws = w.size if draws is None else positive_int(draws, "draws")
    cumulative = np.cumsum(w)
    uniforms = _Uniforms(root_seed(random_seed), 0)
    _, index = _stratified(cumulative, 0.0, np.inf, 1.0, float(cumulative[-1]), draws, uniforms)
    posterior = _take(proposals, index)
    groups = {
        name: result[name].to_dataset()
        for name in result.children
        if name not in ("posterior", "proposal", "sample_stats")
    }
    tree = xr.DataTree.from_dict({"posterior": posterior, **groups})
    tree.attrs.update(result.attrs, sampler="importance-resampled")
    return tree
