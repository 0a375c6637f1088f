r"""The Bayesian attacker of a Pufferfish secret: the posterior of the secret given a release.

In Pufferfish privacy the secret s (a person's race, a dataset's share of high earners) is not
the data x but a property correlated with it: the attacker knows the conditional laws
P(x | s) and a prior P(s), sees the release y ~ pi(y | x) of a mechanism, and updates

.. math::

    P(s \mid y) = \frac{P(s) \, p(y \mid s)}{\sum_{s'} P(s') \, p(y \mid s')}, \qquad
    p(y \mid s) = \sum_x P(x \mid s) \, \pi(y \mid x).

The mechanism is eps-Pufferfish private for a pair (s_i, s_j) exactly when the posterior odds
never move by more than a factor e^eps from the prior odds, whatever the prior and the release:

.. math::

    e^{-\epsilon} \le \frac{P(s_i \mid y) / P(s_j \mid y)}{P(s_i) / P(s_j)}
    = \frac{p(y \mid s_i)}{p(y \mid s_j)} \le e^{\epsilon}.

:func:`~ppdinfer.secret_posterior` sums x exactly over a finite support (the mechanism's ``logpdf``
batched over the support); :func:`~ppdinfer.secret_posterior_mc` estimates p(y | s) by Monte Carlo from
a sampler of x given s, for continuous or large x; :func:`~ppdinfer.posterior_odds_ratio` is the factor
above and :func:`~ppdinfer.plot_prior_posterior_odds` draws it against the e^(+-eps) band.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import NamedTuple

import numpy as np
from scipy import special

from ..mechanisms.base import Mechanism
from ..priors import Categorical
from ..rng import SeedLike, as_generator
from ..validation import finite_array, positive_finite, positive_int, probability_vector

__all__ = [
    "MonteCarloSecretPosterior",
    "plot_prior_posterior_odds",
    "posterior_odds_ratio",
    "secret_log_likelihood",
    "secret_posterior",
    "secret_posterior_mc",
]


def secret_log_likelihood(conditionals, support, mechanism: Mechanism, y) -> np.ndarray:
    r"""log p(y | s) for every secret s and release y, summing x exactly over its support.

    .. math::

        \log p(y \mid s_k) = \log \sum_{m} P(x_m \mid s_k) \, \pi(y \mid x_m).

    Parameters
    ----------
    conditionals : array_like, shape (K, S)
        Row k is the pmf P(x | s_k) over the S points of ``support``.
    support : array_like, shape (S,) or (S, d)
        The values of x (one per row), as the mechanism's ``logpdf`` takes them.
    mechanism : Mechanism
        The release pi(y | x).
    y : array_like
        One release (the shape of one x) or many, stacked on a first axis.

    Returns
    -------
    numpy.ndarray
        Shape (K,) for one release, (R, K) for R releases.

    References
    ----------
    .. [1] D. Kifer and A. Machanavajjhala, "Pufferfish: a framework for mathematical privacy
        definitions," ACM Transactions on Database Systems 39(1), 2014.
    .. [2] J. Seeman, M. Reimherr and A. Slavkovic, "Formal privacy for partially private data,"
        arXiv:2204.01102, 2022. Section 2.

    Examples
    --------
    >>> from ppdinfer.privacy.attacker import secret_log_likelihood
    >>> from ppdinfer.mechanisms import Laplace
    >>> conditionals = [[0.5, 0.5, 0.0], [0.0, 0.5, 0.5]]       # x in {0, 1, 2} given s = 0, 1
    >>> secret_log_likelihood(conditionals, [0, 1, 2], Laplace(1.0), [0.0, 2.0]).round(4)
    array([[-1.073, -2.073],
           [-2.073, -1.073]])
    """
    conditionals, support = _conditionals(conditionals, support)
    releases, single = _releases(y, support.shape[1:], mechanism)
    release_loglik = np.stack([mechanism.logpdf(release, support) for release in releases])  # (R, S)
    with np.errstate(divide="ignore"):
        log_conditionals = np.log(conditionals)
    log_likelihood = special.logsumexp(log_conditionals[None, :, :] + release_loglik[:, None, :], axis=2)
    return log_likelihood[0] if single else log_likelihood


def secret_posterior(prior, conditionals, support, mechanism: Mechanism, y) -> np.ndarray:
    r"""The attacker's posterior P(s | y) over the secrets, exactly, for one release or many.

    .. math::

        P(s_k \mid y) = \frac{P(s_k) \sum_m P(x_m \mid s_k) \, \pi(y \mid x_m)}
        {\sum_{l} P(s_l) \sum_m P(x_m \mid s_l) \, \pi(y \mid x_m)}.

    Parameters
    ----------
    prior : array_like of K probabilities, or ppdinfer.priors.Categorical
        P(s) over the secret indices 0..K-1.
    conditionals, support, mechanism, y
        As for :func:`~ppdinfer.secret_log_likelihood`.

    Returns
    -------
    numpy.ndarray
        Posterior probabilities, shape (K,) for one release, (R, K) for R releases.

    See Also
    --------
    ppdinfer.secret_posterior_mc : The Monte Carlo version.
    ppdinfer.posterior_odds_ratio : The odds factor of a release.

    References
    ----------
    .. [1] D. Kifer and A. Machanavajjhala, "Pufferfish: a framework for mathematical privacy
        definitions," ACM Transactions on Database Systems 39(1), 2014.
    .. [2] J. Seeman, M. Reimherr and A. Slavkovic, "Formal privacy for partially private data,"
        arXiv:2204.01102, 2022. Section 2.

    Examples
    --------
    >>> from ppdinfer.privacy.attacker import secret_posterior
    >>> from ppdinfer.mechanisms import Laplace
    >>> conditionals = [[0.5, 0.5, 0.0], [0.0, 0.5, 0.5]]
    >>> secret_posterior([0.5, 0.5], conditionals, [0, 1, 2], Laplace(1.0), 0.0).round(4)
    array([0.7311, 0.2689])
    >>> secret_posterior([0.9, 0.1], conditionals, [0, 1, 2], Laplace(1.0), [0.0, 1.0, 2.0]).round(4)
    array([[0.9607, 0.0393],
           [0.9   , 0.1   ],
           [0.768 , 0.232 ]])
    """
    log_likelihood = secret_log_likelihood(conditionals, support, mechanism, y)
    return _posterior(prior, log_likelihood)


class MonteCarloSecretPosterior(NamedTuple):
    """The result of :func:`~ppdinfer.secret_posterior_mc`: the estimated posterior and the Monte Carlo
    relative standard errors of the estimated p(y | s).

    Examples
    --------
    >>> import numpy as np
    >>> from ppdinfer.privacy.attacker import MonteCarloSecretPosterior
    >>> result = MonteCarloSecretPosterior(np.array([0.7, 0.3]), np.array([0.01, 0.02]))
    >>> result.probabilities.tolist(), result.relative_se.tolist()
    ([0.7, 0.3], [0.01, 0.02])
    """

    #: Estimated P(s | y): shape (K,) for one release, (R, K) for R releases.
    probabilities: np.ndarray
    #: Standard error of each estimate of p(y | s) divided by the estimate, same shape.
    relative_se: np.ndarray


def secret_posterior_mc(
    prior, samplers: Sequence[Callable], mechanism: Mechanism, y, *, draws: int = 10_000, random_seed: SeedLike = None
) -> MonteCarloSecretPosterior:
    r"""The attacker's posterior P(s | y) with p(y | s) estimated by Monte Carlo over x given s.

    For continuous x, or a support too large to sum over: draw x_1..x_N from P(x | s_k) and

    .. math::

        \hat p(y \mid s_k) = \frac{1}{N} \sum_{n=1}^{N} \pi(y \mid x_n), \qquad
        \hat P(s_k \mid y) = \frac{P(s_k) \, \hat p(y \mid s_k)}{\sum_l P(s_l) \, \hat p(y \mid s_l)}.

    Each estimate of p(y | s) is unbiased; its relative standard error is reported. The same
    draws of x serve every release.

    Parameters
    ----------
    prior : array_like of K probabilities, or ppdinfer.priors.Categorical
    samplers : sequence of K callables
        ``samplers[k](size, rng)`` returns ``size`` draws of x given s_k, stacked on the first axis.
    mechanism : Mechanism
    y : array_like
        One release (the shape of one x) or many, stacked on a first axis.
    draws : int
        N, the draws of x per secret.
    random_seed : int, SeedSequence or Generator, optional

    Returns
    -------
    MonteCarloSecretPosterior

    See Also
    --------
    ppdinfer.secret_posterior : The exact version.

    References
    ----------
    .. [1] D. Kifer and A. Machanavajjhala, "Pufferfish: a framework for mathematical privacy
        definitions," ACM Transactions on Database Systems 39(1), 2014.
    .. [2] J. Seeman, M. Reimherr and A. Slavkovic, "Formal privacy for partially private data,"
        arXiv:2204.01102, 2022. Section 2.

    Examples
    --------
    >>> from ppdinfer.privacy.attacker import secret_posterior_mc
    >>> from ppdinfer.mechanisms import Laplace
    >>> samplers = [lambda size, rng: rng.normal(0.0, 1.0, size),   # x given s = 0
    ...             lambda size, rng: rng.normal(1.0, 1.0, size)]   # x given s = 1
    >>> result = secret_posterior_mc([0.5, 0.5], samplers, Laplace(1.0), 0.0, draws=20_000, random_seed=1)
    >>> result.probabilities.round(2), bool(result.relative_se.max() < 0.01)
    (array([0.56, 0.44]), True)
    """
    draws = positive_int(draws, "draws")
    if len(samplers) < 2 or not all(callable(sampler) for sampler in samplers):
        raise ValueError("samplers must hold at least 2 callables sampler(size, rng), one per secret")
    rng = as_generator(random_seed)
    samples = [np.asarray(sampler(draws, rng)) for sampler in samplers]
    shapes = {sample.shape for sample in samples}
    if len(shapes) != 1 or samples[0].shape[0] != draws:
        raise ValueError(f"every sampler must return {draws} draws of one shape, got shapes {sorted(shapes)}")
    releases, single = _releases(y, samples[0].shape[1:], mechanism)
    log_likelihood = np.empty((releases.shape[0], len(samples)))
    relative_se = np.empty_like(log_likelihood)
    for k, sample in enumerate(samples):
        for r, release in enumerate(releases):
            loglik = mechanism.logpdf(release, sample)
            top = loglik.max()
            scaled = np.exp(loglik - top)
            log_likelihood[r, k] = top + np.log(scaled.mean())
            relative_se[r, k] = scaled.std() / (scaled.mean() * np.sqrt(draws))
    probabilities = _posterior(prior, log_likelihood)
    if single:
        return MonteCarloSecretPosterior(probabilities[0], relative_se[0])
    return MonteCarloSecretPosterior(probabilities, relative_se)


def posterior_odds_ratio(conditionals, support, mechanism: Mechanism, y, pair: tuple[int, int] = (0, 1)) -> np.ndarray:
    r"""Posterior odds over prior odds of the secrets ``pair = (i, j)``: the factor a release moves them by.

    .. math::

        \frac{P(s_i \mid y) / P(s_j \mid y)}{P(s_i) / P(s_j)} = \frac{p(y \mid s_i)}{p(y \mid s_j)},

    the same for every prior that gives both secrets positive probability (the other secrets
    cancel too), which is why no prior is asked for. The release is eps-Pufferfish private for
    the pair exactly when this lies in [e^-eps, e^eps] for every y.

    Parameters
    ----------
    conditionals, support, mechanism, y
        As for :func:`~ppdinfer.secret_log_likelihood`.
    pair : (int, int)
        The indices i and j of the two secrets.

    Returns
    -------
    numpy.ndarray
        Shape () for one release, (R,) for R releases.

    See Also
    --------
    ppdinfer.plot_prior_posterior_odds : Its plot.
    ppdinfer.secret_posterior : The posterior itself.

    References
    ----------
    .. [1] D. Kifer and A. Machanavajjhala, "Pufferfish: a framework for mathematical privacy
        definitions," ACM Transactions on Database Systems 39(1), 2014.
    .. [2] J. Seeman, M. Reimherr and A. Slavkovic, "Formal privacy for partially private data,"
        arXiv:2204.01102, 2022. Section 2.

    Examples
    --------
    >>> import numpy as np
    >>> from ppdinfer.privacy.attacker import posterior_odds_ratio
    >>> from ppdinfer.mechanisms import Laplace
    >>> conditionals = [[0.5, 0.5, 0.0], [0.0, 0.5, 0.5]]      # W_inf = 1
    >>> ratio = posterior_odds_ratio(conditionals, [0, 1, 2], Laplace(1.0), np.linspace(-20, 20, 401))
    >>> round(float(np.log(ratio).max()), 4)                  # at most eps = 1
    1.0
    """
    log_likelihood = secret_log_likelihood(conditionals, support, mechanism, y)
    i, j = _pair(pair, log_likelihood.shape[-1])
    return np.exp(log_likelihood[..., i] - log_likelihood[..., j])


def plot_prior_posterior_odds(
    odds_ratios, epsilon: float, prior_odds_range: tuple[float, float] = (1e-2, 1e2), max_lines: int = 2000
):
    r"""Plot posterior odds against prior odds, one line per release, with the e^(+-eps) band.

    A release y multiplies every prior odds by the same factor r(y) (:func:`~ppdinfer.posterior_odds_ratio`),
    so on log-log axes each release is a line of slope 1; eps-Pufferfish privacy keeps every line
    inside the shaded band

    .. math::

        e^{-\epsilon} \, \frac{P(s_i)}{P(s_j)} \le \frac{P(s_i \mid y)}{P(s_j \mid y)}
        \le e^{\epsilon} \, \frac{P(s_i)}{P(s_j)}.

    Lines leaving the band (beyond a relative 1e-9 for rounding) are drawn in red, the others in
    blue; the title counts them. The figure is built without pyplot, so it needs no display.

    Parameters
    ----------
    odds_ratios : array_like
        r(y) for many releases (positive).
    epsilon : float
        The privacy level whose band is drawn.
    prior_odds_range : (float, float)
        The range of prior odds on the horizontal axis.
    max_lines : int
        At most this many releases are drawn (the first ones); all are counted in the title.

    Returns
    -------
    matplotlib.figure.Figure

    References
    ----------
    .. [1] D. Kifer and A. Machanavajjhala, "Pufferfish: a framework for mathematical privacy
        definitions," ACM Transactions on Database Systems 39(1), 2014.
    .. [2] J. Seeman, M. Reimherr and A. Slavkovic, "Formal privacy for partially private data,"
        arXiv:2204.01102, 2022. Section 2.

    Examples
    --------
    >>> import numpy as np
    >>> from ppdinfer.privacy.attacker import plot_prior_posterior_odds
    >>> figure = plot_prior_posterior_odds(np.exp([-0.5, 0.2, 1.5]), epsilon=1.0)
    >>> figure.axes[0].get_title()
    '1 of 3 releases outside $e^{\\pm 1}$'
    >>> figure.savefig("odds.png")                       # doctest: +SKIP
    """
    ratios = finite_array(odds_ratios, "odds_ratios").reshape(-1)
    if ratios.size == 0 or np.any(ratios <= 0):
        raise ValueError(f"odds_ratios must hold at least one positive number, got {odds_ratios!r}")
    epsilon = positive_finite(epsilon, "epsilon")
    low, high = (positive_finite(value, "prior_odds_range") for value in prior_odds_range)
    if low >= high:
        raise ValueError(f"prior_odds_range must be (low, high) with low < high, got {prior_odds_range!r}")
    max_lines = positive_int(max_lines, "max_lines")
    outside = np.abs(np.log(ratios)) > epsilon * (1 + 1e-9)
    prior = np.array([low, high])
    from matplotlib.collections import LineCollection
    from matplotlib.figure import Figure  # matplotlib on first use: import ppdinfer stays light

    figure = Figure(figsize=(4.6, 4.2), layout="constrained")
    ax = figure.subplots()
    ax.set(xscale="log", yscale="log")
    ax.fill_between(prior, prior * np.exp(-epsilon), prior * np.exp(epsilon), color="0.85")
    for sign in (-1, 1):
        ax.plot(
            prior,
            prior * np.exp(sign * epsilon),
            color="black",
            linestyle=":",
            linewidth=1.2,
            zorder=3,
            label=rf"$e^{{\pm {epsilon:g}}}$ band" if sign > 0 else None,
        )
    ax.plot(prior, prior, color="0.4", linestyle="--", linewidth=1, zorder=3, label="posterior = prior")
    shown = ratios[:max_lines]
    segments = np.stack([np.broadcast_to(prior, (shown.size, 2)), prior * shown[:, None]], axis=-1)
    colors = np.where(outside[:max_lines, None], [[0.8, 0.1, 0.1, 0.5]], [[0.1, 0.3, 0.8, 0.2]])
    ax.add_collection(LineCollection(segments, colors=colors, linewidths=0.8))
    ax.autoscale_view()
    ax.set(
        xlabel=r"prior odds $P(s_i) / P(s_j)$",
        ylabel=r"posterior odds $P(s_i \mid y) / P(s_j \mid y)$",
        title=rf"{int(outside.sum())} of {ratios.size} releases outside $e^{{\pm {epsilon:g}}}$",
    )
    ax.legend(loc="upper left", fontsize="small")
    return figure


def _conditionals(conditionals, support) -> tuple[np.ndarray, np.ndarray]:
    """The (K, S) pmfs and the support as an array with one x per row, checked to fit together."""
    support = finite_array(support, "support")
    if support.ndim == 0 or support.shape[0] < 2:
        raise ValueError(f"support must hold at least 2 values of x (one per row), got {support!r}")
    table = finite_array(conditionals, "conditionals")
    if table.ndim != 2 or table.shape[0] < 2 or table.shape[1] != support.shape[0]:
        raise ValueError(
            f"conditionals must have shape (K, S) with K >= 2 secrets and S = {support.shape[0]} "
            f"support points, got shape {table.shape}"
        )
    return np.stack([probability_vector(row, f"conditionals[{k}]") for k, row in enumerate(table)]), support


def _releases(y, x_shape: tuple, mechanism: Mechanism) -> tuple[np.ndarray, bool]:
    """The releases stacked on a first axis, and whether a single release was given."""
    if not isinstance(mechanism, Mechanism):
        raise ValueError(f"mechanism must be a ppdinfer.mechanisms.Mechanism, got {mechanism!r}")
    releases = finite_array(y, "y")
    if releases.shape == x_shape:
        return releases[None], True
    if releases.shape[1:] != x_shape or releases.shape[0] == 0:
        raise ValueError(f"y must be one release of shape {x_shape} or a stack of them, got shape {releases.shape}")
    return releases, False


def _pair(pair, n_secrets: int) -> tuple[int, int]:
    if (
        len(pair) != 2
        or not all(isinstance(k, (int, np.integer)) and 0 <= k < n_secrets for k in pair)
        or pair[0] == pair[1]
    ):
        raise ValueError(f"pair must be two different secret indices in 0..{n_secrets - 1}, got {pair!r}")
    return int(pair[0]), int(pair[1])


def _posterior(prior, log_likelihood: np.ndarray) -> np.ndarray:
    """P(s | y) from P(s) and log p(y | s) (last axis: the secrets)."""
    probabilities = prior.probabilities if isinstance(prior, Categorical) else probability_vector(prior, "prior")
    if probabilities.size != log_likelihood.shape[-1]:
        raise ValueError(f"prior has {probabilities.size} secrets but the conditionals have {log_likelihood.shape[-1]}")
    with np.errstate(divide="ignore"):
        log_joint = np.log(probabilities) + log_likelihood
    log_evidence = special.logsumexp(log_joint, axis=-1, keepdims=True)
    if not np.all(np.isfinite(log_evidence)):
        raise ValueError("a release has probability zero under every secret the prior allows")
    return np.exp(log_joint - log_evidence)
