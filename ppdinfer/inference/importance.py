"""Self-normalized importance sampling of theta | y, z: the corrected Algorithm 2.

theta_j ~ g (the proposal, default the prior), x_j ~ pi(x | theta_j, z), and
w_j = pi(y | x_j, z) pi(theta_j | z) / g(theta_j). The draws stay unweighted in the
``posterior`` group; their normalized log weights are in ``sample_stats.log_weight``. Use
:func:`weighted_mean` for posterior means and :func:`resample` for unweighted draws.
"""

from __future__ import annotations

import warnings

import numpy as np
import xarray as xr
from scipy import special

from .._random import SeedLike, as_generator
from .._validation import positive_int
from .model import PPDModel, draw_theta, theta_logpdf
from .results import assemble, posterior_dataset

#: Pareto-k above this makes the importance estimate unreliable (Vehtari et al. 2024).
PARETO_K_THRESHOLD = 0.7


class ImportanceWarning(UserWarning):
    """The importance weights have a heavy tail (Pareto k > 0.7)."""


def importance_sample(model: PPDModel, y, z=None, *, draws: int = 10_000, proposal=None,
                      random_seed: SeedLike = None) -> xr.DataTree:
    """Weighted draws of theta and x given the release y and public information z.

    Parameters
    ----------
    model : PPDModel
    y, z
        The release and the public information, as for :func:`rejection_sample`.
    draws : int
        Number of proposals (weighted draws).
    proposal : optional
        The distribution g of theta (``rvs`` and ``logpdf``, like a prior). Default: the prior,
        in which case w_j = pi(y | x_j, z).
    random_seed : int, SeedSequence or Generator, optional

    Returns
    -------
    xarray.DataTree
        ``posterior``: the unweighted proposals; ``sample_stats``: ``log_weight`` (normalized,
        dims (chain, draw)), ``psis_log_weight`` (Pareto-smoothed), ``ess`` = (sum w)^2 / sum w^2,
        ``pareto_k``; the other groups as for :func:`rejection_sample`.
    """
    draws = positive_int(draws, "draws")
    rng = as_generator(random_seed)
    y, z, theta_shape, x_shape = model.prepare(y, z)
    g = model.prior if proposal is None else proposal
    if proposal is not None and not (hasattr(proposal, "rvs") and hasattr(proposal, "logpdf")):
        raise ValueError("proposal must have rvs(size, random_state) and logpdf(theta) methods")
    theta = draw_theta(g, draws, rng, z)
    if theta.shape[1:] != (int(np.prod(theta_shape)),):
        raise ValueError(f"proposal draws have {theta.shape[1]} components but the prior's have {int(np.prod(theta_shape))}")
    x = model.simulate_x(theta, z, rng)
    log_w = model.loglik(y, x, z)
    if proposal is not None:
        log_g = theta_logpdf(proposal, theta, z)
        if np.any(np.isneginf(log_g)):
            raise ValueError("the proposal's logpdf is -inf at one of its own draws")
        log_w = log_w + model.prior_logpdf(theta, z) - log_g
    if not np.any(np.isfinite(log_w)):
        raise ValueError("every importance weight is zero: the proposal puts no mass where the posterior is")
    log_w = log_w - special.logsumexp(log_w)
    psis_log_w, pareto_k = pareto_smooth(log_w)
    ess = float(np.exp(-special.logsumexp(2 * log_w)))
    if pareto_k > PARETO_K_THRESHOLD:
        warnings.warn(
            f"importance_sample: Pareto k = {pareto_k:.2f} > {PARETO_K_THRESHOLD}: the weights have a heavy "
            f"tail and the estimates are unreliable (ESS {ess:.0f} of {draws}); use a proposal closer to the "
            "posterior, more draws, or rejection_sample",
            ImportanceWarning, stacklevel=2,
        )
    stats = xr.Dataset(
        {
            "log_weight": (["chain", "draw"], log_w.reshape(1, -1)),
            "psis_log_weight": (["chain", "draw"], psis_log_w.reshape(1, -1)),
            "ess": ((), ess),
            "pareto_k": ((), pareto_k),
        }
    )
    return assemble(model, y, z, posterior_dataset(model, theta, x, theta_shape, x_shape), stats,
                    attrs={"sampler": "importance", "weighted": 1})


def pareto_smooth(log_w: np.ndarray) -> tuple[np.ndarray, float]:
    """Pareto-smoothed normalized log weights and the tail shape k (Vehtari et al. 2024).

    With a discrete likelihood the largest weights are often tied; the tail fit is then
    undefined, k is NaN (a flat tail: no heavy tail to worry about) and the raw weights are
    returned. Read the ESS in that case.
    """
    from arviz_stats.base import array_stats  # imported here: it takes seconds to import

    try:
        # arviz-stats smooths LOO ratios 1 / p(y_i | theta), so it takes a log likelihood: negate.
        smoothed, k = array_stats.psislw(-log_w)
    except ValueError:  # "All tail values are the same"
        return log_w, float("nan")
    return smoothed - special.logsumexp(smoothed), float(k)


def _weights(result: xr.DataTree, smoothed: bool) -> xr.DataArray:
    stats = result["sample_stats"]
    name = "psis_log_weight" if smoothed else "log_weight"
    if name not in stats:
        raise ValueError("result has no importance weights: pass the output of importance_sample")
    return np.exp(stats[name])


def weighted_mean(result: xr.DataTree, smoothed: bool = False) -> xr.Dataset:
    """Self-normalized importance estimates of the posterior means of every posterior variable."""
    w = _weights(result, smoothed)
    posterior = result["posterior"].to_dataset()
    return (posterior * w).sum(("chain", "draw")) / w.sum()


def resample(result: xr.DataTree, draws: int | None = None, random_seed: SeedLike = None,
             smoothed: bool = False) -> xr.DataTree:
    """Unweighted posterior draws: multinomial resampling of an importance result by its weights.

    The returned tree has the same groups except ``sample_stats``; ``arviz`` summaries apply.
    Resampled draws repeat proposals, so their count overstates the information: see ``ess``.
    """
    w = _weights(result, smoothed).values.reshape(-1)
    draws = w.size if draws is None else positive_int(draws, "draws")
    index = as_generator(random_seed).choice(w.size, size=draws, p=w / w.sum())
    posterior = result["posterior"].to_dataset().stack(sample=("chain", "draw")).isel(sample=index)
    posterior = posterior.drop_vars(["sample", "chain", "draw"]).rename({"sample": "draw"})
    posterior = posterior.expand_dims(chain=1).assign_coords(chain=[0], draw=np.arange(draws))
    posterior = posterior.transpose("chain", "draw", ...)
    groups = {name: result[name].to_dataset() for name in result.children if name not in ("posterior", "sample_stats")}
    tree = xr.DataTree.from_dict({"posterior": posterior, **groups})
    tree.attrs.update(result.attrs, sampler="importance-resampled", weighted=0)
    return tree
