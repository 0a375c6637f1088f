"""Wasserstein-infinity distance on the real line, exactly, through the quantile coupling.

On the line W_inf(P, Q) = sup over u in (0, 1) of |F_P^{-1}(u) - F_Q^{-1}(u)|, with the generalized
inverse F^{-1}(u) = min {x : F(x) >= u}: the quantile (comonotone) coupling is optimal.

For pmfs both quantile functions are step functions. The pairs of the coupling are read off the
gaps between the cumulative levels of P and Q: walking up the merged levels, each gap of positive
length carries one pair, the two points whose cumulative levels first reach its top.

Exact arithmetic. Every mass is taken at its exact binary value (a float is a dyadic rational),
the cumulative sums are Python integers over one power-of-two denominator and each pmf is
normalized exactly, so levels are compared without rounding: a mass of 1e-30 between two masses
of 1/2 still forms its pair. The flip side: masses that are equal in decimal but not in binary
(0.1 + 0.2 against 0.3) are different levels, and the sliver between them counts; that errs
towards a larger distance, the safe side for a sensitivity. Where the masses carry rounding (a
decimal grid, a computed pmf), ``tie_tolerance`` merges levels closer than that fraction of the
probability on their nearer side (min(F, 1 - F)); it then ignores true masses of that relative
size too. Log masses (from ``ppdinfer.privacy.sensitivity``) are converted to 53-bit dyadic numbers first, so tails
far below the float range count.
"""

from __future__ import annotations

import itertools
import math
from fractions import Fraction
from typing import NamedTuple

import numpy as np

from .. import validation as _checks

_LOG_2 = math.log(2.0)

COMPUTED_PMF_TOLERANCE = 1e-10
"""``tie_tolerance`` of the pmfs that ``ppdinfer.privacy.sensitivity`` computes (binomial log pmfs: rounding well below it)."""


class QuantileCoupling(NamedTuple):
    """The quantile coupling of two pmfs on a common support.

    Attributes
    ----------
    x, y : ndarray
        Paired support points, x from the first pmf and y from the second, in increasing order of
        quantile level; both sequences are non-decreasing.
    mass : ndarray
        Probability of each pair; sums to 1. A pair in a tail far below the float range keeps its
        place but shows mass 0.0.
    max_displacement : float
        max |x - y| over the pairs: the Wasserstein-infinity distance.

    Examples
    --------
    >>> from ppdinfer.privacy import quantile_coupling
    >>> coupling = quantile_coupling([0.5, 0.5, 0.0], [0.0, 0.5, 0.5], [0, 1, 2])
    >>> coupling.x, coupling.y, coupling.mass
    (array([0., 1.]), array([1., 2.]), array([0.5, 0.5]))
    >>> coupling.max_displacement
    1.0
    """

    x: np.ndarray
    y: np.ndarray
    mass: np.ndarray
    max_displacement: float


def quantile_coupling(p, q, support, *, tie_tolerance: float = 0.0) -> QuantileCoupling:
    r"""Quantile coupling of pmfs ``p`` and ``q`` on the strictly increasing ``support``, exactly.

    It pairs the u-quantiles of P and Q for every level u in (0, 1); on the line this coupling
    attains

    .. math::

        W_\infty(P, Q) = \sup_{u \in (0, 1)} |F_P^{-1}(u) - F_Q^{-1}(u)|,
        \qquad F^{-1}(u) = \min \{x : F(x) \ge u\}.

    Parameters
    ----------
    p, q : array_like
        Non-negative masses, one per support point, each summing to 1 (within 1e-9; each is
        normalized exactly by its own total).
    support : array_like
        Strictly increasing finite points.
    tie_tolerance : float
        0 (the default): exact on the binary values of the masses. A small positive value (e.g.
        1e-12 for masses on a decimal grid) merges cumulative levels that differ by less than
        that fraction of the probability on their nearer side, absorbing rounding in the inputs.

    References
    ----------
    .. [1] J. Seeman, M. Reimherr and A. Slavkovic, "Formal privacy for partially private data,"
        arXiv:2204.01102, 2022. Section 2.
    .. [2] N. Ding, "Kantorovich mechanism for Pufferfish privacy."

    Examples
    --------
    >>> from ppdinfer.privacy import quantile_coupling
    >>> coupling = quantile_coupling([0.25, 0.5, 0.25], [0.5, 0.25, 0.25], [0, 1, 2])
    >>> list(zip(coupling.x.tolist(), coupling.y.tolist(), coupling.mass.tolist()))
    [(0.0, 0.0, 0.25), (1.0, 0.0, 0.25), (1.0, 1.0, 0.25), (2.0, 2.0, 0.25)]
    """
    support = _checks.support_points(support)
    p = _checks.pmf(p, "p", support.size, normalize=False)
    q = _checks.pmf(q, "q", support.size, normalize=False)
    tie_tolerance = _checks.tolerance(tie_tolerance, "tie_tolerance")
    return _exact_coupling(_dyadic_masses(p), _dyadic_masses(q), support, tie_tolerance)


def w_inf(p, q, support, *, tie_tolerance: float = 0.0) -> float:
    """Wasserstein-infinity distance between pmfs ``p`` and ``q`` on ``support`` (see `quantile_coupling`).

    See Also
    --------
    ppdinfer.privacy.w_inf_samples : The same distance between samples.
    ppdinfer.privacy.quantile_coupling : The coupling that attains it.

    References
    ----------
    .. [1] J. Seeman, M. Reimherr and A. Slavkovic, "Formal privacy for partially private data,"
        arXiv:2204.01102, 2022. Section 2.
    .. [2] S. Song, Y. Wang and K. Chaudhuri, "Pufferfish privacy mechanisms for correlated data,"
        SIGMOD 2017.

    Examples
    --------
    >>> from ppdinfer.privacy import w_inf
    >>> w_inf([0.5, 0.5, 0.0], [0.0, 0.5, 0.5], [0, 1, 2])   # a shift by one
    1.0
    >>> w_inf([0.5, 0.5, 0.0], [0.5, 0.0, 0.5], [0, 1, 2])   # the upper half moves from 1 to 2
    1.0
    >>> w_inf([0.9, 0.1, 0.0], [0.9, 0.0, 0.1], [0, 5, 10])  # W_inf sees the tail, whatever its mass
    5.0
    """
    return quantile_coupling(p, q, support, tie_tolerance=tie_tolerance).max_displacement


def w_inf_samples(a, b) -> float:
    """Wasserstein-infinity distance between the empirical distributions of samples ``a`` and ``b``.

    The sizes m and k may differ. Quantile levels are multiples of 1 / (m k), so the coupling is
    found in integer arithmetic, exactly and without tolerance.

    See Also
    --------
    ppdinfer.privacy.w_inf : The same distance between pmfs.

    References
    ----------
    .. [1] J. Seeman, M. Reimherr and A. Slavkovic, "Formal privacy for partially private data,"
        arXiv:2204.01102, 2022. Section 2.

    Examples
    --------
    >>> from ppdinfer.privacy import w_inf_samples
    >>> w_inf_samples([0, 1, 2, 3], [1, 2, 3, 4, 5, 6])
    3.0
    """
    a = np.sort(_checks.vector(a, "a"))
    b = np.sort(_checks.vector(b, "b"))
    m, k = a.size, b.size
    # Right ends (in units of 1 / (m k)) of the gaps between the levels i / m and j / k.
    ends = np.union1d(np.arange(1, m + 1, dtype=np.int64) * k, np.arange(1, k + 1, dtype=np.int64) * m)
    return float(np.max(np.abs(a[-(-ends // k) - 1] - b[-(-ends // m) - 1])))


def coupling_from_logpmf(log_p: np.ndarray, log_q: np.ndarray, support: np.ndarray) -> QuantileCoupling:
    """`quantile_coupling` from log pmfs (-inf for no mass); the inputs are trusted, not checked."""
    return _exact_coupling(_dyadic_from_log(log_p), _dyadic_from_log(log_q), support, COMPUTED_PMF_TOLERANCE)


def _dyadic_masses(masses: np.ndarray) -> list[int]:
    """The exact binary values of non-negative floats as integers over one power-of-two denominator."""
    ratios = [value.as_integer_ratio() for value in masses.tolist()]
    shift = max(denominator.bit_length() for _, denominator in ratios)
    return [numerator << (shift - denominator.bit_length()) for numerator, denominator in ratios]


def _dyadic_from_log(log_masses: np.ndarray) -> list[int]:
    """exp(log_masses) as 53-bit integers over one power-of-two denominator, whatever the range."""
    finite = np.isfinite(log_masses)
    exponents = np.floor(np.where(finite, log_masses, 0.0) / _LOG_2).astype(np.int64)
    lowest = int(exponents[finite].min())
    return [
        round(math.exp(value - exponent * _LOG_2) * 2**52) << (exponent - lowest) if keep else 0
        for keep, exponent, value in zip(finite.tolist(), exponents.tolist(), log_masses.tolist())
    ]


def _exact_coupling(p: list[int], q: list[int], support: np.ndarray, tie_tolerance: float) -> QuantileCoupling:
    """The quantile coupling of the pmfs proportional to the integer masses ``p`` and ``q``."""
    total_p, total_q = sum(p), sum(q)
    # Cumulative levels over the common denominator total_p * total_q; the last level of each is top.
    levels_p = [level * total_q for level in itertools.accumulate(p)]
    levels_q = [level * total_p for level in itertools.accumulate(q)]
    top = total_p * total_q
    tolerance = Fraction(tie_tolerance)

    def next_level(reached: int, i: int, j: int) -> tuple[int, int, int]:
        """The first indices of p and q whose levels exceed ``reached``, and the lower of those levels."""
        while levels_p[i] <= reached:
            i += 1
        while levels_q[j] <= reached:
            j += 1
        return i, j, min(levels_p[i], levels_q[j])

    index_p, index_q, masses = [], [], []
    i = j = reached = 0
    while reached < top:
        i, j, level = next_level(reached, i, j)
        end = level
        while tolerance and end < top:  # absorb the levels within the tolerance of the run's end
            following = next_level(end, i, j)[2]
            if (following - end) * tolerance.denominator > tolerance.numerator * min(end, top - end):
                break
            end = following
        index_p.append(i)
        index_q.append(j)
        masses.append((end - reached) / top)
        reached = end
    x, y = support[index_p], support[index_q]
    return QuantileCoupling(x, y, np.array(masses), float(np.max(np.abs(x - y))))
