"""Self-normalized importance sampling of theta | y, z: the corrected Algorithm 2.

theta_j ~ g (the proposal, default the prior), x_j ~ pi(x | theta_j, z), and
w_j = pi(y | x_j, z) pi(theta_j | z) / g(theta_j). The weighted proposals and their normalized
log weights are the ``proposal`` group; ``posterior`` is an equal-weight resample of them, so
that every ArviZ function (which knows no weights) summarises the posterior.
:func:`weighted_mean` and :func:`ppdinfer.summary` use all the weighted proposals.
"""

from __future__ import annotations

import warnings
from concurrent.futures import Executor
from dataclasses import dataclass

import numpy as np
import xarray as xr
from scipy import special

from .._random import SeedLike, as_generator, block_generator, root_seed
from .._validation import positive_int
from ..kernels import sorted_search
from ._guards import check_box, check_possible, check_proposal, check_z_keys
from .model import PPDModel, check_distribution, draw_theta, theta_logpdf
from .parallel import BlockPool
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
    :func:`rejection_sample`).

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
        in blocks of 16,384, each from its own stream, and the resample from one more.
    cores, executor : optional
        As for :func:`rejection_sample`: threads that draw and weigh blocks concurrently
        (default: every available core at the top level, one inside a worker), or an executor
        of your own.

    Returns
    -------
    xarray.DataTree
        ``proposal``: the weighted proposals (theta and x) with ``log_weight`` (normalized, dims
        (chain, draw)) and ``psis_log_weight`` (Pareto-smoothed); ``posterior``: ``draws``
        equal-weight draws, a stratified resample of the proposals kept in proposal order (so
        repeats sit side by side and ArviZ's ESS counts them as such), its attrs giving
        ``proposals`` and ``ess``; ``sample_stats``: ``ess`` = (sum w)^2 / sum w^2 and
        ``pareto_k``; the other groups as for :func:`rejection_sample`.

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
    weigh_block = _WeightedBlock(model, y, z, root, proposal, draws)
    with BlockPool(cores, executor) as pool:
        chunks = pool.map(weigh_block, pool.even_chunks(range(n_blocks)))
        theta, x, log_w = (np.concatenate(part) for part in zip(*(parts for _, parts in chunks)))
    if theta.shape[1:] != (int(np.prod(theta_shape)),):
        raise ValueError(
            f"proposal draws have {theta.shape[1]} components but the prior's have {int(np.prod(theta_shape))}"
        )
    if not np.any(np.isfinite(log_w)):
        raise ValueError(
            "every importance weight is zero: the proposal puts no mass where the posterior is, "
            "or y has probability zero under the model"
        )
    log_w, weights = _normalized(log_w)
    psis_log_w, pareto_k = pareto_smooth(log_w)
    ess = float(1 / np.dot(weights, weights))
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
    proposals = posterior_dataset(model, theta, x, theta_shape, x_shape)
    index = _stratified(weights, draws, block_generator(root, n_blocks))
    posterior = posterior_dataset(model, theta[index], x[index], theta_shape, x_shape)  # NumPy indexing: 2x xarray's
    posterior.attrs.update(resampling="stratified", proposals=draws, ess=ess)
    check_box(model, x[index], z, "importance_sample")
    proposals = proposals.assign(
        log_weight=(["chain", "draw"], log_w.reshape(1, -1)),
        psis_log_weight=(["chain", "draw"], psis_log_w.reshape(1, -1)),
    )
    stats = xr.Dataset({"ess": ((), ess), "pareto_k": ((), pareto_k)})
    return assemble(model, y, z, posterior, stats, attrs={"sampler": "importance"}, labels=labels, proposal=proposals)


@dataclass(frozen=True)
class _WeightedBlock:
    """Draw and weigh one block of proposals: theta, x and the unnormalized log weights.

    A module-level class (not a closure) so that a process pool can pickle it.
    """

    model: PPDModel
    y: np.ndarray
    z: dict
    root: np.random.SeedSequence
    proposal: object
    draws: int

    def __call__(self, block: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
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
        return theta, x, log_w


def pareto_smooth(log_w: np.ndarray) -> tuple[np.ndarray, float]:
    """Pareto-smoothed normalized log weights and the tail shape k (Vehtari et al. 2024).

    k is NaN, and the raw weights are returned, when PSIS cannot fit a tail: fewer than
    ``MIN_PSIS_DRAWS`` weights, or largest weights that take few distinct values (fewer than
    half the tail's size: a discrete likelihood, whose weights are bounded and whose fitted
    "tail shape" would be an artefact of the ties, e.g. k = 5.7 from 9 distinct values). Read
    the ESS in that case.
    """
    from arviz_stats.base import array_stats  # imported here: it takes seconds to import

    if log_w.size < MIN_PSIS_DRAWS or _tail_is_discrete(log_w):
        return log_w, float("nan")
    try:
        # arviz-stats smooths LOO ratios 1 / p(y_i | theta), so it takes a log likelihood: negate.
        smoothed, k = array_stats.psislw(-log_w)
    except ValueError:  # "All tail values are the same"
        return log_w, float("nan")
    return smoothed - special.logsumexp(smoothed), float(k)


def _tail_is_discrete(log_w: np.ndarray) -> bool:
    """Whether the PSIS tail (the ceil(min(0.2 S, 3 sqrt S)) largest weights) has fewer distinct
    values than half its size."""
    tail = int(np.ceil(min(0.2 * log_w.size, 3 * np.sqrt(log_w.size))))
    return np.unique(np.partition(log_w, log_w.size - tail)[-tail:]).size < tail / 2


def _normalized(log_w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The log weights normalized to sum to one, and the weights themselves (one pass of exp)."""
    top = log_w.max()
    weights = np.exp(log_w - top)
    total = weights.sum()
    return log_w - (top + np.log(total)), weights / total


def _stratified(weights: np.ndarray, draws: int, rng: np.random.Generator) -> np.ndarray:
    """Indices of ``draws`` equal-weight draws: one uniform in each of ``draws`` equal strata of
    the cumulative weights, so the indices come out sorted (and are found in one merge pass)."""
    cumulative = np.cumsum(weights)
    u = (np.arange(draws) + rng.random(draws)) / draws * cumulative[-1]
    return sorted_search(cumulative, u)  # capped at the last index: a guard against rounding


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
    posterior = _take(proposals, _stratified(w, draws, as_generator(random_seed)))
    groups = {
        name: result[name].to_dataset()
        for name in result.children
        if name not in ("posterior", "proposal", "sample_stats")
    }
    tree = xr.DataTree.from_dict({"posterior": posterior, **groups})
    tree.attrs.update(result.attrs, sampler="importance-resampled")
    return tree
