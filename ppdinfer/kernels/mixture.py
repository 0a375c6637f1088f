"""Laplace mixtures on a sorted support: the log density at every support point in O(K)."""

from __future__ import annotations

import math

import numpy as np
from numba import njit


@njit(cache=True, nogil=True, inline="always")
def _log_add(a, b):
    """log(e^a + e^b), exact for -inf operands."""
    high, low = (a, b) if a >= b else (b, a)
    if low == -np.inf:
        return high
    return high + math.log1p(math.exp(low - high))


@njit(cache=True, nogil=True)
def laplace_mixture_logpdf(log_weights, support, rate):
    r"""log sum_j w_j e^(-rate |x_k - x_j|) at every point x_k of an increasing ``support``; O(K).

    The sum splits at x_k into the points left of it (j <= k) and right of it (j > k); each part
    follows from its neighbour's by one factor e^(-rate (x_{k+1} - x_k)), so two passes in log
    space (no underflow, however far apart the points) give every value.

    Examples
    --------
    >>> import numpy as np
    >>> values = laplace_mixture_logpdf(np.log([0.5, 0.5]), np.array([0.0, 1.0]), 1.0)
    >>> np.allclose(values, np.log(0.5 + 0.5 * np.exp(-1.0)))
    True
    """
    size = support.shape[0]
    left = np.empty(size)
    out = np.empty(size)
    acc = -np.inf
    for k in range(size):
        if k > 0:
            acc -= rate * (support[k] - support[k - 1])
        acc = _log_add(acc, log_weights[k])
        left[k] = acc
    acc = -np.inf  # the points right of x_k alone
    for k in range(size - 1, -1, -1):
        out[k] = _log_add(left[k], acc)
        if k > 0:
            acc = _log_add(acc, log_weights[k]) - rate * (support[k] - support[k - 1])
    return out
