"""Wasserstein-infinity distance on the real line, exactly, through the quantile coupling.

On the line W_inf(P, Q) = sup over u in (0, 1) of |F_P^{-1}(u) - F_Q^{-1}(u)|, with the generalized
inverse F^{-1}(u) = min {x : F(x) >= u}: the quantile (comonotone) coupling is optimal.

For pmfs both quantile functions are step functions. The pairs of the coupling are read off the
gaps between the cumulative levels of P and Q: the levels are merged and sorted, and each gap of
positive length carries one pair, found by evaluating both quantile functions strictly inside it,
so a point without mass is never paired and no level is compared with an equal one.

Floating point. Levels at most 1/2 are cumulated from the left, the others from the right, in log
space, so tail masses far below 1e-16 keep their relative precision (`sensitivity` passes binomial
log pmfs straight in, so even tails below the float range count). Levels within a relative
``LEVEL_RTOL`` of each other count as one level: this absorbs rounding in cumulative sums (0.1 +
0.2 against 0.3) and ignores gaps whose relative length is below ``LEVEL_RTOL`` (e.g. a mass below
1e-10 times the mass on its tail side). The rounding of a cumulative sum grows like its length
times 1e-16, so the tolerance suits supports up to about 1e5 points.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from . import _checks

LEVEL_RTOL = 1e-10
"""Relative tolerance at which two cumulative levels are taken as equal."""

_LOG_HALF = -math.log(2.0)


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
    """

    x: np.ndarray
    y: np.ndarray
    mass: np.ndarray
    max_displacement: float


def quantile_coupling(p, q, support) -> QuantileCoupling:
    """Quantile coupling of pmfs ``p`` and ``q`` on the strictly increasing ``support``.

    Parameters
    ----------
    p, q : array_like
        Non-negative masses, one per support point, each summing to 1 (within 1e-9).
    support : array_like
        Strictly increasing finite points.
    """
    support = _checks.support_points(support)
    p = _checks.pmf(p, "p", support.size)
    q = _checks.pmf(q, "q", support.size)
    with np.errstate(divide="ignore"):
        return _coupling_from_logpmf(np.log(p), np.log(q), support)


def w_inf(p, q, support) -> float:
    """Wasserstein-infinity distance between pmfs ``p`` and ``q`` on ``support`` (see `quantile_coupling`)."""
    return quantile_coupling(p, q, support).max_displacement


def w_inf_samples(a, b) -> float:
    """Wasserstein-infinity distance between the empirical distributions of samples ``a`` and ``b``.

    The sizes m and k may differ. Quantile levels are multiples of 1 / (m k), so the coupling is
    found in integer arithmetic, exactly and without tolerance.
    """
    a = np.sort(_checks.vector(a, "a"))
    b = np.sort(_checks.vector(b, "b"))
    m, k = a.size, b.size
    # Right ends (in units of 1 / (m k)) of the gaps between the levels i / m and j / k.
    ends = np.union1d(np.arange(1, m + 1, dtype=np.int64) * k, np.arange(1, k + 1, dtype=np.int64) * m)
    return float(np.max(np.abs(a[-(-ends // k) - 1] - b[-(-ends // m) - 1])))


def _coupling_from_logpmf(log_p: np.ndarray, log_q: np.ndarray, support: np.ndarray) -> QuantileCoupling:
    """`quantile_coupling` from log pmfs (-inf for no mass); the inputs are trusted, not checked."""
    low_p, low_q, low_mass = _lower_half(log_p, log_q)
    high_p, high_q, high_mass = _lower_half(log_p[::-1], log_q[::-1])
    last = support.size - 1
    index_p = np.concatenate([low_p, last - high_p[::-1]])
    index_q = np.concatenate([low_q, last - high_q[::-1]])
    mass = np.concatenate([low_mass, high_mass[::-1]])
    # The coupling is monotone, so repeats of a pair (across the split at 1/2) are adjacent.
    repeat = (index_p[1:] == index_p[:-1]) & (index_q[1:] == index_q[:-1])
    new = np.flatnonzero(np.concatenate([[True], ~repeat]))
    x, y = support[index_p[new]], support[index_q[new]]
    return QuantileCoupling(x, y, np.add.reduceat(mass, new), float(np.max(np.abs(x - y))))


def _lower_half(log_p: np.ndarray, log_q: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Support indices paired by the quantile coupling on u in (0, 1/2], and the mass of each gap."""
    cum_p = np.logaddexp.accumulate(log_p)
    cum_q = np.logaddexp.accumulate(log_q)
    levels = np.concatenate([cum_p, cum_q, [_LOG_HALF]])
    levels = np.sort(levels[np.isfinite(levels) & (levels <= _LOG_HALF)])
    # Runs of levels closer than LEVEL_RTOL form one level spanning [first, last]; the top run ends at 1/2.
    gap = levels[1:] - levels[:-1] > LEVEL_RTOL
    first = levels[np.concatenate([[True], gap])]
    last = levels[np.concatenate([gap, [True]])]
    inside = np.concatenate([[first[0] - 1.0], (last[:-1] + first[1:]) / 2])
    index_p = np.searchsorted(cum_p, inside, side="left")
    index_q = np.searchsorted(cum_q, inside, side="left")
    top = np.exp(last)
    return index_p, index_q, np.concatenate([top[:1], top[1:] - top[:-1]])
