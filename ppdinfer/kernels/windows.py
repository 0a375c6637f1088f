r"""Sums over a latent count's window by recurrence: no exponential or log-gamma per window cell.

A Poisson count whose Gamma rate is integrated out is negative binomial, and summed against a release's noise over a
window k = lo, ..., lo + width - 1 its log likelihood is, per coordinate,

.. math::

    \log \sum_j \exp(t_j), \qquad t_j = \log\Gamma(k_j + s) + k_j \log q + c_j,

(s the shape, q = ratio / (1 + ratio), c_j the noise's log density minus log k_j!, constant). Successive terms differ
by a factor exp(t_{j+1} - t_j) = (k_j + s) q exp(c_{j+1} - c_j), and the digamma of the gradient by 1 / (k_j + s),
so from the peak of c (c is concave: its ratios are at most 1 above the peak and at least 1 below it) the sum and
its gradient take a few multiplications per cell, where the plain sum takes an exponential (and a gathered
log-gamma). Accumulators are rescaled before they could overflow.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

_BIG = 1e250
_LOG_BIG = math.log(_BIG)


@njit(cache=True, nogil=True)
def digamma(x):
    """The digamma function for x > 0: recurrence up to 8, then the asymptotic series (error below 1e-14).

    Examples
    --------
    >>> round(float(digamma(1.0)), 12)     # -Euler's gamma
    -0.577215664902
    """
    result = 0.0
    while x < 8.0:
        result -= 1.0 / x
        x += 1.0
    f = 1.0 / (x * x)
    series = f * (1.0 / 12 - f * (1.0 / 120 - f * (1.0 / 252 - f * (1.0 / 240 - f * (1.0 / 132 - f * 691.0 / 32760)))))
    return result + math.log(x) - 0.5 / x - series


@njit(cache=True, nogil=True)
def gamma_poisson_window(shape, log_q, lo, step, peak, peak_log):
    """(sum over coordinates of log sum_j exp(t_j), d/d shape per coordinate, d/d log_q per coordinate).

    ``shape`` and ``log_q`` hold one value per coordinate i, ``lo`` the window's first count, ``step`` (width - 1,
    coordinates) the constant part's ratios exp(c_{j+1} - c_j), ``peak`` the index j0 of c's largest value and
    ``peak_log`` that value c_{j0} (module docstring).

    Examples
    --------
    >>> import numpy as np
    >>> from scipy import special, stats
    >>> k = np.arange(3, 9).astype(float)
    >>> c = stats.norm.logpdf(5.2, k, 1.5) - special.gammaln(k + 1)
    >>> value, _, _ = gamma_poisson_window(np.array([2.5]), np.array([np.log(0.7)]), np.array([3]),
    ...                                    np.exp(np.diff(c))[:, None], np.array([int(np.argmax(c))]),
    ...                                    np.array([c.max()]))
    >>> plain = special.logsumexp(special.gammaln(k + 2.5) + k * np.log(0.7) + c)
    >>> bool(abs(value - plain) < 1e-12)
    True
    """
    width = step.shape[0] + 1
    units = lo.shape[0]
    total = 0.0
    d_shape = np.empty(units)
    d_log_q = np.empty(units)
    for i in range(units):
        s, lq = shape[i], log_q[i]
        q = math.exp(lq)
        j0 = peak[i]
        k0 = lo[i] + j0
        psi0 = digamma(k0 + s)
        # terms relative to the peak's, w_j = exp(t_j - t_j0), held as w exp(e); the sums are held times exp(-r)
        r = 0.0
        sw, sw_psi, sw_k = 1.0, 0.0, 0.0  # sums of w_j, w_j (psi_j - psi_j0), w_j (k_j - k_j0)
        for direction in (1, -1):
            w, e, psi, scale = 1.0, 0.0, psi0, math.exp(-r)
            j = j0
            while 0 <= j + direction < width:
                if direction > 0:  # w_{j+1} = w_j (k_j + s) q step_j
                    x = lo[i] + j + s
                    w *= x * q * step[j, i]
                    psi += 1.0 / x
                else:  # w_{j-1} = w_j / ((k_{j-1} + s) q step_{j-1})
                    x = lo[i] + j - 1 + s
                    w *= 1.0 / (x * q * step[j - 1, i])
                    psi -= 1.0 / x
                j += direction
                if w > _BIG:  # the term's own scale
                    w /= _BIG
                    e += _LOG_BIG
                    if e > r:  # the sums move to the term's scale
                        shrink = math.exp(r - e)
                        sw, sw_psi, sw_k, r = sw * shrink, sw_psi * shrink, sw_k * shrink, e
                    scale = math.exp(e - r)
                term = w * scale
                sw += term
                sw_psi += term * (psi - psi0)
                sw_k += term * (j - j0)
        total += math.lgamma(k0 + s) + k0 * lq + peak_log[i] + r + math.log(sw)
        d_shape[i] = psi0 + sw_psi / sw
        d_log_q[i] = k0 + sw_k / sw
    return total, d_shape, d_log_q


@njit(cache=True, nogil=True)
def gamma_poisson_window_value(shape, log_q, lo, step, peak, peak_log):
    """The value of :func:`gamma_poisson_window` alone (no digamma, no gradient sums): what a sampler that needs no
    gradient evaluates.

    Examples
    --------
    >>> import numpy as np
    >>> args = (np.array([2.5, 4.0]), np.log(np.array([0.7, 0.2])), np.array([3, 0]),
    ...         np.exp(-np.arange(10.0)).reshape(5, 2), np.array([1, 0]), np.array([-1.0, -2.0]))
    >>> bool(abs(gamma_poisson_window_value(*args) - gamma_poisson_window(*args)[0]) < 1e-12)
    True
    """
    width = step.shape[0] + 1
    total = 0.0
    for i in range(lo.shape[0]):
        s, lq = shape[i], log_q[i]
        q = math.exp(lq)
        j0 = peak[i]
        k0 = lo[i] + j0
        r, sw = 0.0, 1.0
        for direction in (1, -1):
            w, e, scale = 1.0, 0.0, math.exp(-r)
            j = j0
            while 0 <= j + direction < width:
                if direction > 0:
                    w *= (lo[i] + j + s) * q * step[j, i]
                else:
                    w *= 1.0 / ((lo[i] + j - 1 + s) * q * step[j - 1, i])  # a reciprocal off the chain of products
                j += direction
                if w > _BIG:
                    w /= _BIG
                    e += _LOG_BIG
                    if e > r:
                        sw, r = sw * math.exp(r - e), e
                    scale = math.exp(e - r)
                sw += w * scale
        total += math.lgamma(k0 + s) + k0 * lq + peak_log[i] + r + math.log(sw)
    return total


@njit(cache=True, nogil=True)
def tail_share(edge, inner, total):
    """A bound on the mass beyond a window's edge relative to the window's total: ``edge`` is the edge's term,
    ``inner`` its neighbour inside, ``total`` the window's sum (any common scale). Terms that are log-concave in k
    (the supported priors times the noise) fall outward at least as fast as edge / inner, so the mass beyond is at
    most the geometric series edge r / (1 - r), r = edge / inner; 1 where the terms do not fall outward.

    Examples
    --------
    >>> round(float(tail_share(1e-3, 1e-2, 1.0)), 6)    # r = 0.1: 1e-3 * 0.1 / 0.9
    0.000111
    >>> float(tail_share(2.0, 1.0, 10.0))                # rising outward: no bound
    1.0
    """
    if not edge > 0.0:
        return 0.0
    if not inner > edge:
        return 1.0
    ratio = edge / inner
    return min(edge / total * ratio / (1.0 - ratio), 1.0)


@njit(cache=True, nogil=True)
def _edge_share(edge, inner, innermost, total):
    """``tail_share`` at one edge, or 1 where the three terms nearest it are not log-concave (edge * innermost >
    inner^2): the geometric bound's assumption fails there."""
    if edge * innermost > inner * inner:
        return 1.0
    return tail_share(edge, inner, total)


@njit(cache=True, nogil=True)
def _edge_mass(w, width, total, open_low, open_high):
    """The bound on the omitted mass relative to the window's (``_edge_share`` at each open edge) of one
    coordinate's terms ``w[:width]`` (a common scale, summing to ``total``); 1 at an open edge of a window of
    fewer than 3 values."""
    bound = 0.0
    if open_low:
        bound += _edge_share(w[0], w[1], w[2], total) if width > 2 else 1.0
    if open_high:
        bound += _edge_share(w[width - 1], w[width - 2], w[width - 3], total) if width > 2 else 1.0
    return min(bound, 1.0)


@njit(cache=True, nogil=True)
def window_edge_mass(log_terms, lo, top):
    """Per coordinate i, a bound on the mass its window omits relative to the mass it keeps: ``log_terms``
    (width, coordinates) are log p(x_i = k | theta) + log pi(y_i | k) over k = lo_i, ..., lo_i + width - 1 (up to
    a constant per coordinate), ``top`` the largest value of x_i's support (inf where there is none); an edge at
    x_i's support (0 below, ``top`` above) omits nothing (``tail_share``).

    Examples
    --------
    >>> import numpy as np
    >>> from scipy import stats
    >>> k = np.arange(0, 30)[:, None]
    >>> terms = stats.poisson.logpmf(k, 10.0) + stats.norm.logpdf(12.0, k, 2.0)
    >>> bound = window_edge_mass(terms, np.array([0]), np.array([np.inf]))
    >>> tail = np.exp(stats.poisson.logpmf(np.arange(30, 200), 10.0) + stats.norm.logpdf(12.0, np.arange(30, 200), 2.0))
    >>> bool(tail.sum() / np.exp(terms).sum() <= bound[0] < 1e-12)
    True
    """
    width, units = log_terms.shape
    out = np.empty(units)
    w = np.empty(width)
    for i in range(units):
        top_term = -math.inf
        for j in range(width):
            top_term = max(top_term, log_terms[j, i])
        total = 0.0
        for j in range(width):
            w[j] = math.exp(log_terms[j, i] - top_term) if top_term > -math.inf else 0.0
            total += w[j]
        out[i] = _edge_mass(w, width, total, lo[i] > 0, lo[i] + width - 1 < top[i]) if total > 0 else 1.0
    return out


@njit(cache=True, nogil=True)
def gamma_poisson_window_checked_draws(shape, log_q, lo, step, peak, constant, u):
    """(the draws of :func:`gamma_poisson_window_draws`, and per draw the largest bound over the coordinates on the
    mass the window omits relative to the mass it keeps: :func:`window_edge_mass` of the same terms, from the
    recurrence's weights at no extra cost).

    Examples
    --------
    >>> import numpy as np
    >>> from scipy import special
    >>> k = np.arange(4, 7)[:, None]
    >>> c = np.log(np.array([[0.2], [0.5], [0.3]])) - special.gammaln(k + 1.0)
    >>> args = (np.ones((1, 1)), np.zeros((1, 1)), np.array([4]), np.exp(np.diff(c, axis=0)), np.array([1]), c)
    >>> counts, edge = gamma_poisson_window_checked_draws(*args, np.array([[0.5]]))
    >>> counts.ravel().tolist(), bool(edge[0] > 0.1)      # a window of 3 counts omits much of these weights
    ([5], True)
    """
    draws, units = shape.shape
    width = step.shape[0] + 1
    out = np.empty((draws, units), dtype=np.int64)
    edge = np.zeros(draws)
    w = np.empty(width)
    for d in range(draws):
        for i in range(units):
            s, lq = shape[d, i], log_q[d, i]
            q = math.exp(lq)
            j0 = peak[i]
            w[j0] = 1.0
            total = 1.0
            for j in range(j0, width - 1):
                w[j + 1] = w[j] * ((lo[i] + j + s) * q * step[j, i])  # one product on the chain
                total += w[j + 1]
            for j in range(j0 - 1, -1, -1):
                w[j] = w[j + 1] * (1.0 / ((lo[i] + j + s) * q * step[j, i]))
                total += w[j]
            if not total < _BIG:  # the terms from their logarithms, relative to the largest
                top = -math.inf
                for j in range(width):
                    k = lo[i] + j
                    w[j] = math.lgamma(k + s) + k * lq + constant[j, i]
                    top = max(top, w[j])
                total = 0.0
                for j in range(width):
                    w[j] = math.exp(w[j] - top)
                    total += w[j]
            edge[d] = max(edge[d], _edge_mass(w, width, total, lo[i] > 0, True))
            threshold = u[d, i] * total
            running, chosen = 0.0, -1
            for j in range(width):
                if w[j] > 0:
                    running += w[j]
                    chosen = j
                    if running > threshold:
                        break
            out[d, i] = lo[i] + chosen
    return out, edge


@njit(cache=True, nogil=True)
def gamma_poisson_window_draws(shape, log_q, lo, step, peak, constant, u):
    """Exact draws of the counts given the parameters: for each draw d and coordinate i, the k of the window drawn
    with probability proportional to exp(t_j) (module docstring), at u[d, i] uniform on [0, 1) (inverse CDF).

    ``shape`` and ``log_q`` are (draws, coordinates); ``lo``, ``step`` and ``peak`` as in
    :func:`gamma_poisson_window`, and ``constant`` the c_j themselves (width, coordinates), read only where the
    recurrence's terms would overflow (then the terms are computed from their logarithms).

    Examples
    --------
    >>> import numpy as np
    >>> from scipy import special
    >>> k = np.arange(4, 7)[:, None]                  # a window of 3 counts from 4, one coordinate: with shape 1
    >>> c = np.log(np.array([[0.2], [0.5], [0.3]])) - special.gammaln(k + 1.0)   # and q 1, the weights are these
    >>> args = (np.ones((2, 1)), np.zeros((2, 1)), np.array([4]), np.exp(np.diff(c, axis=0)), np.array([1]), c)
    >>> gamma_poisson_window_draws(*args, np.array([[0.1], [0.99]])).ravel().tolist()
    [4, 6]
    """
    return gamma_poisson_window_checked_draws(shape, log_q, lo, step, peak, constant, u)[0]
