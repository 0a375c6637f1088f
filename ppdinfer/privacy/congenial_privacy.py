r"""Exact privacy of congenial (conditioned) mechanisms on small finite invariant sets.

Gong & Meng's congenial mechanism M* draws the release of an additive integer mechanism
M(x) = s(x) + U conditioned on the invariant set S* (see :mod:`ppdinfer.invariants`):

.. math::

    p^*(y \mid x) = \frac{p(y - s(x)) \, 1\{y \in S^*\}}{c(x)}, \qquad
    c(x) = P(M(x) \in S^*) = \sum_{y \in S^*} p(y - s(x)).

Theorem 2.1: over invariant-conforming k-neighbours (both s(x) and s(x') in S*), M* is
(1 + gamma*) k eps - DP when M is eps-DP per unit of distance, with

.. math::

    \gamma^* = \frac{1}{k \epsilon} \log \max_{(x, x')} \frac{c(x')}{c(x)} \in [0, 1].

Everything here is exact: S* is enumerated (it must be finite, e.g. equalities with
non-negativity or other bounds; an infinite S* is refused, never truncated) and c(x) is the
sum of the product noise pmf over it. :func:`congenial_privacy_loss` audits the mechanism
itself, the largest |log p*(y | x) / p*(y | x')|; its ratio to k eps, less 1, is the effective
gamma, which may be negative (Gong & Meng, Section 5.1).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable

import numpy as np

from ..invariants import LinearInvariants
from ..validation import integer_valued, positive_finite, positive_int

__all__ = ["conforming_probability", "congenial_gamma", "congenial_privacy_loss", "double_geometric_pmf"]


def double_geometric_pmf(epsilon, sensitivity=1) -> Callable[[np.ndarray], np.ndarray]:
    r"""The product double-geometric pmf of an integer noise vector, a = exp(-eps / sensitivity).

    .. math::

        p(u) = \prod_{i=1}^{d} \frac{1 - a}{1 + a} \, a^{|u_i|}, \qquad u \in \mathbb{Z}^d.

    Parameters
    ----------
    epsilon : float
        Privacy-loss budget, > 0.
    sensitivity : float, optional
        L1 sensitivity the noise is calibrated to (default 1), > 0.

    Returns
    -------
    callable
        ``pmf(u)`` for an integer array ``u`` of shape ``(N, d)`` (or ``(d,)``), returning the
        ``N`` probabilities (the product over the last axis).

    See Also
    --------
    ppdinfer.mechanisms.DiscreteLaplace : The mechanism with this noise.

    References
    ----------
    .. [1] R. Gong and X.-L. Meng, "Congenial differential privacy under mandated disclosure,"
        Proceedings of the 2020 ACM-IMS Foundations of Data Science Conference (FODS), 2020.
    .. [2] A. Ghosh, T. Roughgarden and M. Sundararajan, "Universally utility-maximizing privacy
        mechanisms," SIAM Journal on Computing 41(6), 2012.

    Examples
    --------
    >>> pmf = double_geometric_pmf(math.log(2))  # a = 1/2
    >>> np.round(pmf(np.array([[0], [1], [-2]])) * 12, 12).tolist()  # 1/3, 1/6, 1/12
    [4.0, 2.0, 1.0]
    """
    epsilon = positive_finite(epsilon, "epsilon")
    sensitivity = positive_finite(sensitivity, "sensitivity")
    log_a = -epsilon / sensitivity
    a = math.exp(log_a)
    log_norm = math.log((1 - a) / (1 + a))

    def pmf(u):
        u = np.atleast_2d(integer_valued(u, "u"))
        return np.exp(np.sum(log_norm + log_a * np.abs(u), axis=-1))

    return pmf


def _support(invariants) -> np.ndarray:
    if not isinstance(invariants, LinearInvariants):
        raise ValueError(f"invariants must be a LinearInvariants, got {type(invariants).__name__}")
    try:
        tables = invariants.enumerate()
    except ValueError as err:
        raise ValueError(f"invariants: S* must be finite and small to be enumerated exactly ({err})") from err
    if tables.shape[0] == 0:
        raise ValueError("invariants: S* is empty, no table satisfies them")
    return tables.reshape(tables.shape[0], -1)


def _log_noise(noise_pmf, u: np.ndarray) -> np.ndarray:
    if not callable(noise_pmf):
        raise ValueError(f"noise_pmf must be callable, got {noise_pmf!r}")
    probs = np.asarray(noise_pmf(u), dtype=np.float64).reshape(-1)
    if probs.shape != (u.shape[0],) or np.any(~np.isfinite(probs)) or np.any(probs < 0):
        raise ValueError(f"noise_pmf must return {u.shape[0]} non-negative probabilities for an (N, d) array")
    with np.errstate(divide="ignore"):
        return np.log(probs)


def _statistic(statistic, x, invariants: LinearInvariants) -> np.ndarray:
    if not callable(statistic):
        raise ValueError(f"statistic must be callable, got {statistic!r}")
    s = integer_valued(statistic(x), "statistic(x)")
    if s.size != invariants.n_cells:
        raise ValueError(
            f"statistic(x) must have {invariants.n_cells} cells (the invariants' shape "
            f"{invariants.shape}), got shape {s.shape}"
        )
    return s.reshape(-1)


def conforming_probability(noise_pmf, s, invariants) -> float:
    r"""c(s) = P(s + U in S*), exactly, by summing the noise pmf over the enumerated S*.

    .. math::

        c(s) = \sum_{y \in S^*} p(y - s).

    Parameters
    ----------
    noise_pmf : callable
        ``noise_pmf(u)`` for integer noise vectors ``u`` of shape ``(N, d)`` returns their ``N``
        probabilities, e.g. :func:`double_geometric_pmf`.
    s : array_like of int
        The confidential statistic, a table of the invariants' shape.
    invariants : LinearInvariants
        S*; it must be finite (ValueError otherwise).

    Returns
    -------
    float
        The normalizing constant of the congenial release's likelihood.

    References
    ----------
    .. [1] R. Gong and X.-L. Meng, "Congenial differential privacy under mandated disclosure,"
        Proceedings of the 2020 ACM-IMS Foundations of Data Science Conference (FODS), 2020. Section 2.

    Examples
    --------
    >>> inv = LinearInvariants.grand_total(2, 1) & LinearInvariants.nonnegative(2)  # S* = {(1, 0), (0, 1)}
    >>> pmf = double_geometric_pmf(math.log(2))
    >>> round(conforming_probability(pmf, [1, 0], inv), 12)  # (1/3)^2 + (1/6)^2
    0.138888888889
    """
    support = _support(invariants)
    s = integer_valued(s, "s").reshape(-1)
    if s.size != support.shape[1]:
        raise ValueError(f"s must have {support.shape[1]} cells, got {s.size}")
    return float(np.exp(_log_noise(noise_pmf, support - s)).sum())


def _conforming_pairs(statistic, invariants, neighbours):
    pairs = []
    for pair in neighbours:
        try:
            x, x_prime = pair
        except (TypeError, ValueError) as err:
            raise ValueError(f"neighbours must yield pairs (x, x'), got {pair!r}") from err
        s, s_prime = _statistic(statistic, x, invariants), _statistic(statistic, x_prime, invariants)
        if invariants.contains(s.reshape(invariants.shape)) and invariants.contains(s_prime.reshape(invariants.shape)):
            pairs.append((tuple(s.tolist()), tuple(s_prime.tolist())))
    if not pairs:
        raise ValueError("neighbours holds no invariant-conforming pair (x, x'): both s(x) and s(x') must lie in S*")
    return pairs


def _log_conditioned(noise_pmf, support, pairs):
    """log p(y - s) - log c(s) over the rows y of ``support``, for each distinct s of the pairs."""
    table = {}
    for s in {s for pair in pairs for s in pair}:
        log_p = _log_noise(noise_pmf, support - np.array(s, dtype=np.int64))
        c = np.exp(log_p).sum()
        if not c > 0:
            raise ValueError(f"P(M(x) in S*) = 0 for s(x) = {s}: the conditioned mechanism is undefined")
        table[s] = (log_p - math.log(c), c)
    return table


def congenial_gamma(noise_pmf, statistic, invariants, neighbours: Iterable, epsilon, k=1) -> float:
    r"""gamma* of Gong & Meng's Theorem 2.1, exactly, over the conforming pairs of ``neighbours``.

    .. math::

        \gamma^* = \frac{1}{k \epsilon} \log \max_{(x, x')} \frac{P(M(x') \in S^*)}{P(M(x) \in S^*)},

    with P(M(x) in S*) from :func:`conforming_probability`. Each pair counts in both orders, so
    gamma* >= 0; the congenial mechanism is then (1 + gamma*) k eps - DP over these pairs when M
    is eps-DP per unit of the distance at which the pairs lie (k).

    Parameters
    ----------
    noise_pmf : callable
        Product pmf of the integer noise, ``noise_pmf(u)`` for ``u`` of shape ``(N, d)``.
    statistic : callable
        ``statistic(x)``: the integer table s(x) of the invariants' shape.
    invariants : LinearInvariants
        The invariant set S*; finite (ValueError otherwise).
    neighbours : iterable of pairs
        Pairs ``(x, x')`` of databases at distance ``k``; pairs with s(x) or s(x') outside S*
        are skipped, and none left is a ValueError.
    epsilon : float
        The unconstrained mechanism's budget per unit of distance, > 0.
    k : int, optional
        The distance between the paired databases (default 1), >= 1.

    Returns
    -------
    float
        gamma*.

    See Also
    --------
    ppdinfer.privacy.congenial_privacy_loss : The exact privacy loss.
    ppdinfer.mechanisms.Congenial : The mechanism.

    References
    ----------
    .. [1] R. Gong and X.-L. Meng, "Congenial differential privacy under mandated disclosure,"
        Proceedings of the 2020 ACM-IMS Foundations of Data Science Conference (FODS), 2020. Theorem 2.1.

    Examples
    --------
    One binary record, s = (#0, #1) with the total 1 and non-negativity invariant:

    >>> inv = LinearInvariants.grand_total(2, 1) & LinearInvariants.nonnegative(2)
    >>> count = lambda x: [1 - x[0], x[0]]
    >>> congenial_gamma(double_geometric_pmf(1.0, 2), count, inv, [((0,), (1,))], 1.0)
    0.0
    """
    epsilon = positive_finite(epsilon, "epsilon")
    k = positive_int(k, "k")
    support = _support(invariants)
    pairs = _conforming_pairs(statistic, invariants, neighbours)
    table = _log_conditioned(noise_pmf, support, pairs)
    worst = max(abs(math.log(table[s][1]) - math.log(table[t][1])) for s, t in pairs)
    return worst / (k * epsilon)


def congenial_privacy_loss(noise_pmf, statistic, invariants, neighbours: Iterable) -> float:
    r"""The congenial mechanism's exact privacy loss over the conforming pairs of ``neighbours``.

    .. math::

        L = \max_{(x, x')} \max_{y \in S^*} \left| \log \frac{p^*(y \mid x)}{p^*(y \mid x')} \right|,
        \qquad p^*(y \mid x) = \frac{p(y - s(x)) \, 1\{y \in S^*\}}{c(x)}.

    M* is L-DP over these pairs (and no better); Theorem 2.1 says L <= (1 + gamma*) k eps,
    and L / (k eps) - 1 is the effective gamma. A y that one of the pair can release and the
    other cannot gives L = inf.

    Parameters
    ----------
    noise_pmf, statistic, invariants, neighbours
        As in :func:`congenial_gamma`.

    Returns
    -------
    float
        L, in nats.

    See Also
    --------
    ppdinfer.privacy.congenial_gamma : Theorem 2.1's gamma.

    References
    ----------
    .. [1] R. Gong and X.-L. Meng, "Congenial differential privacy under mandated disclosure,"
        Proceedings of the 2020 ACM-IMS Foundations of Data Science Conference (FODS), 2020.

    Examples
    --------
    With S* = {5} the release is always 5 (Gong & Meng's Example 5.2), so L = 0:

    >>> inv = LinearInvariants(None, None, [[1], [-1]], [5, -5])
    >>> groups = lambda x: [math.ceil(sum(x) / 10)]
    >>> pairs = [((1,) * 45 + (0,), (1,) * 46)]
    >>> congenial_privacy_loss(double_geometric_pmf(1.0), groups, inv, pairs)
    0.0
    """
    support = _support(invariants)
    pairs = _conforming_pairs(statistic, invariants, neighbours)
    table = _log_conditioned(noise_pmf, support, pairs)
    worst = 0.0
    for s, t in pairs:
        a, b = table[s][0], table[t][0]
        live = np.isfinite(a) | np.isfinite(b)
        if np.any(np.isfinite(a[live]) != np.isfinite(b[live])):
            return math.inf
        both = live & np.isfinite(a)
        if np.any(both):
            worst = max(worst, float(np.max(np.abs(a[both] - b[both]))))
    return worst
