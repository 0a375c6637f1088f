"""Special functions the compiled kernels share (numba), accurate where the plain formulas lose their digits.

A log prior of a count x holds log-gammas of about x log x (1.4e17 at x = 4e15), which float64 carries only
to +-16; a kernel's Metropolis-Hastings ratio needs the *difference* of two of them, so it takes that
difference directly (:func:`log_gamma_step`) rather than subtracting the two. NumPy's (and numba's) Poisson
generator makes the same subtraction, so a prior draw at such a mean comes from :func:`poisson_draw`.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

#: Where log_gamma_step turns to Stirling's series: past it, two log-gammas (above 1.3e7) would cancel to a
#: difference that float64 holds to about 1e-9, and the series' first omitted term is below 1e-20.
_STIRLING = 1e6


@njit(cache=True, nogil=True)
def log_gamma_step(x, d):
    """lgamma(x + d) - lgamma(x) for x > 0 and x + d > 0, accurate however large x is.

    Where x and x + d are both past 1e6 it is Stirling's series, written so that no two large terms
    cancel: (x + d - 1/2) log1p(d / x) + d (log x - 1) - d / (12 x (x + d)); at x = 4e15 the two
    log-gammas alone are 1.4e17, whose difference float64 would round by +-16.

    Examples
    --------
    >>> import math
    >>> bool(abs(log_gamma_step(10.0, 2.5) - (math.lgamma(12.5) - math.lgamma(10.0))) < 1e-12)
    True
    >>> bool(abs(log_gamma_step(4e15, 1.0) - math.log(4e15)) < 1e-12)      # Gamma(x + 1) = x Gamma(x)
    True
    """
    y = x + d
    if x < _STIRLING or y < _STIRLING:
        return math.lgamma(y) - math.lgamma(x)
    return (y - 0.5) * math.log1p(d / x) + d * (math.log(x) - 1.0) - d / (12.0 * x * y)


#: The mean from which :func:`poisson_draw` replaces numba's Poisson generator (NumPy's algorithm): its
#: acceptance test subtracts log-gammas of about lam log lam, rounded by ~1e-16 of that, so at lam = 4e15 its
#: draws have a standard deviation of 1.23 sqrt(lam) and ten times the normal tails; at 1e7 its log
#: probabilities are off by a few 1e-8.
POISSON_EXACT = 1e7


@njit(cache=True, nogil=True)
def _poisson_log_ratio(k, m, log_lam):
    """log p(k) - log p(m) of a Poisson pmf with log mean ``log_lam``, by a log-gamma step."""
    d = float(k - m)
    return 0.0 if d == 0.0 else d * log_lam - log_gamma_step(m + 1.0, d)


@njit(cache=True, nogil=True)
def poisson_draw(lam):
    """A draw from Poisson(lam) (numba's generator, seeded by ``np.random.seed``), right at any mean.

    From ``POISSON_EXACT`` on it is rejection from an envelope that the pmf's log-concavity makes a bound:
    flat at the mode m's mass over [m - a, m + a] (a = sqrt(lam)), geometric beyond, with the pmf's own
    slopes at m - a and m + a; a candidate k is accepted with p(k) / envelope(k), p(k) / p(m) taken by a
    log-gamma step (about 0.8 of the candidates are accepted). Rounding leaves each probability right to about
    1e-6 of itself at lam = 4e15 (NumPy's generator: to a factor of e^16).

    Examples
    --------
    >>> import numpy as np
    >>> from numba import njit
    >>> @njit
    ... def draws(lam, n):
    ...     np.random.seed(1)
    ...     return np.array([poisson_draw(lam) for _ in range(n)])
    >>> z = (draws(4e15, 4000) - 4e15) / np.sqrt(4e15)
    >>> bool(abs(z.mean()) < 0.1 and abs(z.std() - 1.0) < 0.05)
    True
    """
    if not lam >= POISSON_EXACT:
        return np.random.poisson(lam)
    m, a = math.floor(lam), math.floor(math.sqrt(lam))
    log_lam = math.log(lam)
    top, bottom = m + a, m - a
    right = _poisson_log_ratio(top, m, log_lam)  # <= 0: m is a mode
    left = _poisson_log_ratio(bottom, m, log_lam)
    right_slope = -math.log1p((top + 1.0 - lam) / lam)  # log p(k + 1) / p(k) = log lam / (k + 1) at k = top
    left_slope = math.log1p((bottom - lam) / lam)  # log p(k - 1) / p(k) = log k / lam at k = bottom
    right_mass = math.exp(right + right_slope) / -math.expm1(right_slope)
    left_mass = math.exp(left + left_slope) / -math.expm1(left_slope)
    middle = 2.0 * a + 1.0
    while True:
        u = np.random.random() * (middle + right_mass + left_mass)
        if u < middle:
            k, bound = bottom + int(u), 0.0
        else:
            right_tail = u < middle + right_mass
            slope = right_slope if right_tail else left_slope
            j = 1 + int(math.floor(math.log(1.0 - np.random.random()) / slope))  # P(j) proportional to e^(slope j)
            k = top + j if right_tail else bottom - j
            bound = (right if right_tail else left) + j * slope
        if k >= 0 and math.log(1.0 - np.random.random()) <= _poisson_log_ratio(k, m, log_lam) - bound:
            return k


@njit(cache=True, nogil=True)
def poisson_draws(means, seed):
    """Independent draws of Poisson(means[i]) by :func:`poisson_draw`, with numba's generator seeded by ``seed``
    (a seed taken from a numpy Generator makes them follow its stream).

    Examples
    --------
    >>> import numpy as np
    >>> means = np.array([4e15, 2.5e7])
    >>> bool(np.all(poisson_draws(means, 7) == poisson_draws(means, 7)))
    True
    """
    np.random.seed(seed)
    out = np.empty(means.size, dtype=np.int64)
    for i in range(means.size):
        out[i] = poisson_draw(means[i])
    return out
