r"""Frequentist tests and confidence intervals for a binomial proportion from a Tulap release.

The release is Z = X + N with X ~ Binomial(n, theta) the confidential count and N ~ Tulap(0,
b = e^{-eps}, q), the canonical noise of (eps, delta)-DP for a count of sensitivity 1
(``ppdinfer.mechanisms.CanonicalNoise.approximate``; ``Tulap`` when delta = 0). Awan &
Slavkovic (2018, "Differentially private uniformly most powerful tests for binomial data"; 2020,
"Differentially private inference for binomial data") show that the uniformly most powerful
(eps, delta)-DP tests of theta are functions of such a release, with the p-values

.. math::

    p_{>}(z) = P_{\theta_0}(X + N \ge z) = \sum_{k=0}^{n} \binom{n}{k} \theta_0^k
        (1 - \theta_0)^{n - k} \, F_N(k - z), \qquad
    p_{<}(z) = \sum_{k=0}^{n} \binom{n}{k} \theta_0^k (1 - \theta_0)^{n - k} \, F_N(z - k),

with F_N the Tulap CDF (symmetric, so P(N >= z - k) = F_N(k - z)). The binomial family has a
monotone likelihood ratio in X and Tulap noise is canonical for f_{eps,delta}, so the test that
rejects when ``p_>`` <= alpha is the uniformly most powerful (eps, delta)-DP test of
H0: theta <= theta0 against theta > theta0, and ``p_<`` likewise for theta >= theta0 against
theta < theta0. Under theta = theta0 the release is continuous and ``p_>`` is its survival function,
so ``p_>`` is exactly Uniform(0, 1): the size is alpha exactly.

The two-sided p-value is that of Awan & Slavkovic's test based on T = |Z - n theta0|,

.. math::

    p_{\ne}(z) = P_{\theta_0}(|X + N - n\theta_0| \ge |z - n\theta_0|)
        = p_{>}(n\theta_0 + T) + p_{<}(n\theta_0 - T),

again exactly Uniform(0, 1) under theta0 (size alpha). It is unbiased at theta0 = 1/2, where the
law of Z - n/2 is symmetric, and asymptotically unbiased otherwise: for small n and theta0 away
from 1/2 its power dips slightly below alpha next to theta0 (n = 10, eps = 1, theta0 = 0.2: 0.046 at
theta = 0.155), so it is not exactly UMPU there. It is the test that the binomialDP R package and
OpenDP (``BinomialCND.p_value``) compute.

The confidence interval inverts the two-sided test: it holds the theta0 with ``p_!=(z)`` > alpha,
so it covers the true theta with probability level (the test's size is alpha exactly). It is
not OpenDP's ``BinomialCND.confidence_interval``, which keeps theta0 at the estimate z / n and
returns the z-values whose p-value exceeds alpha, divided by n: an interval symmetric about z / n
that does not invert the test (its ends are the points where the test at theta0 = z / n stops
accepting, not the theta0 that the test at the observed z stops accepting). The binomialDP package
inverts the test, as here.
"""

from __future__ import annotations

import numpy as np
from scipy import stats
from scipy.optimize import elementwise

from ..mechanisms.canonical import CanonicalNoise
from ..validation import finite_array, positive_finite, positive_int, probability

__all__ = ["binomial_interval", "binomial_test"]

_ALTERNATIVES = ("greater", "less", "two-sided")


def binomial_test(z, n: int, theta0: float, epsilon: float, delta: float = 0.0, alternative: str = "greater"):
    r"""The p-value of the optimal (eps, delta)-DP test of a binomial proportion from Z = X + Tulap noise.

    With X ~ Binomial(n, theta) and Z = X + N, N ~ Tulap(0, b = e^{-eps}, q) (q from delta),

    .. math::

        p_{>}(z) = \sum_k P_{\theta_0}(X = k) \, F_N(k - z), \qquad
        p_{<}(z) = \sum_k P_{\theta_0}(X = k) \, F_N(z - k), \qquad
        p_{\ne}(z) = p_{>}(n\theta_0 + T) + p_{<}(n\theta_0 - T), \quad T = |z - n\theta_0|.

    ``"greater"`` is the UMP test of H0: theta <= theta0 against theta > theta0, ``"less"`` that of
    theta >= theta0 against theta < theta0 (Awan & Slavkovic 2018); ``"two-sided"`` tests
    theta = theta0 by the distance of Z from n theta0 (unbiased at theta0 = 1/2, asymptotically
    unbiased otherwise; see the module docstring). Each p-value is exactly Uniform(0, 1) at
    theta = theta0.

    Parameters
    ----------
    z : float or array_like
        The released value(s) Z (any finite reals; an array gives one p-value each).
    n : int
        The number of trials, >= 1.
    theta0 : float
        The null proportion, in [0, 1].
    epsilon : float
        The privacy parameter of the release, > 0.
    delta : float
        Its delta, in [0, 1); 0 (default) for pure eps-DP (Tulap with q = 0).
    alternative : {"greater", "less", "two-sided"}
        H1: theta > theta0, theta < theta0, or theta != theta0.

    Returns
    -------
    float or ndarray
        The p-value(s), in [0, 1].

    See Also
    --------
    ppdinfer.binomial_interval : The confidence interval that inverts it.
    ppdinfer.mechanisms.Tulap : The release mechanism.

    References
    ----------
    .. [1] J. Awan and A. Slavkovic, "Differentially private uniformly most powerful tests for binomial
        data," NeurIPS 2018.
    .. [2] J. Awan and S. Vadhan, "Canonical noise distributions and private hypothesis tests," The
        Annals of Statistics 51(2), 2023.

    Examples
    --------
    >>> import ppdinfer as pp
    >>> round(pp.binomial_test(3.0, n=10, theta0=0.5, epsilon=0.5, delta=1e-8), 6)
    0.761621
    >>> round(pp.binomial_test(3.0, n=10, theta0=0.5, epsilon=0.5, delta=1e-8, alternative="less"), 6)
    0.238379
    >>> round(pp.binomial_test(1.0, n=10, theta0=0.5, epsilon=0.5, delta=1e-8, alternative="two-sided"), 6)
    0.184141
    >>> pp.binomial_test([2.0, 8.0], n=10, theta0=0.5, epsilon=1.0).round(4)
    array([0.9253, 0.0747])
    """
    if alternative not in _ALTERNATIVES:
        raise ValueError(f"alternative must be one of {_ALTERNATIVES}, got {alternative!r}")
    z = finite_array(z, "z")
    n = positive_int(n, "n")
    theta0 = probability(theta0, "theta0", open_interval=False)
    noise = _noise(epsilon, delta)
    p = _pvalue(z, n, np.full(z.shape, theta0), noise, alternative)
    return float(p) if p.ndim == 0 else p


def binomial_interval(z, n: int, epsilon: float, delta: float = 0.0, level: float = 0.95):
    r"""The confidence interval for a binomial proportion that inverts the two-sided test of `binomial_test`.

    The interval holds every theta0 whose two-sided p-value at the observed z exceeds
    alpha = 1 - level,

    .. math::

        C(z) = \{\theta_0 \in [0, 1] : p_{\ne}(z; \theta_0) > \alpha\},

    so P_theta(theta in C(Z)) = level for every theta: the test has size alpha exactly. At
    theta0 = z / n (for 0 <= z <= n) the p-value is 1; each end is the root of p - alpha between
    z / n and 0 (or 1), found for all z at once by ``scipy.optimize.elementwise.find_root``
    (a bracketing method, to a few ulps). An end is 0 (or 1) when that theta0 is not rejected. A z
    so far outside [0, n] that even theta0 = z / n clipped to [0, 1] is rejected (probability
    below alpha under every theta) gives the empty interval, reported as both ends equal to that
    clipped estimate.

    Parameters
    ----------
    z : float or array_like
        The released value(s) Z = X + N (any finite reals).
    n : int
        The number of trials, >= 1.
    epsilon : float
        The privacy parameter of the release, > 0.
    delta : float
        Its delta, in [0, 1); 0 (default) for pure eps-DP.
    level : float
        The confidence level, in (0, 1).

    Returns
    -------
    tuple of (float, float) or tuple of (ndarray, ndarray)
        The lower and upper ends, shaped like ``z``.

    See Also
    --------
    ppdinfer.binomial_test : The test it inverts.

    References
    ----------
    .. [1] J. Awan and A. Slavkovic, "Differentially private uniformly most powerful tests for binomial
        data," NeurIPS 2018.
    .. [2] J. Awan and S. Vadhan, "Canonical noise distributions and private hypothesis tests," The
        Annals of Statistics 51(2), 2023.

    Examples
    --------
    >>> import ppdinfer as pp
    >>> low, high = pp.binomial_interval(100.0, n=1000, epsilon=0.1, delta=1e-8)
    >>> round(low, 5), round(high, 5)
    (0.06692, 0.13581)
    >>> round(pp.binomial_test(100.0, 1000, low, 0.1, 1e-8, alternative="two-sided"), 9)   # the test at alpha
    0.05
    >>> low, high = pp.binomial_interval([0.3, 9.5], n=10, epsilon=1.0)
    >>> low.round(3), high.round(3)
    (array([0.  , 0.54]), array([0.439, 1.   ]))
    """
    z = finite_array(z, "z")
    n = positive_int(n, "n")
    alpha = 1.0 - probability(level, "level")
    noise = _noise(epsilon, delta)
    estimate = np.clip(z / n, 0.0, 1.0)

    def excess(theta, z):  # p(z; theta) - alpha: > 0 where theta is in the interval
        return _pvalue(z, n, theta, noise, "two-sided") - alpha

    inside = excess(estimate, z) > 0
    ends = []
    for boundary in (0.0, 1.0):
        end = np.where(inside, boundary, estimate)  # the boundary when accepted; the estimate when empty
        search = inside & (excess(end, z) <= 0)
        if np.any(search):
            bracket = (end[search], estimate[search]) if boundary == 0.0 else (estimate[search], end[search])
            end[search] = elementwise.find_root(excess, bracket, args=(z[search],)).x
        ends.append(end)
    low, high = ends
    if z.ndim == 0:
        return float(low), float(high)
    return low, high


def _noise(epsilon, delta) -> CanonicalNoise:
    """Tulap(0, e^-eps, q) at sensitivity 1, with the parameters checked."""
    return CanonicalNoise.approximate(positive_finite(epsilon, "epsilon"), delta)


def _pvalue(z: np.ndarray, n: int, theta: np.ndarray, noise: CanonicalNoise, alternative: str) -> np.ndarray:
    """The p-values of `binomial_test` for z and theta0 = theta paired elementwise (arrays of one shape)."""
    k = np.arange(n + 1.0)
    pmf = stats.binom.pmf(k, n, theta[..., None])
    if alternative == "greater":
        p = (noise.sf(z[..., None] - k) * pmf).sum(axis=-1)
    elif alternative == "less":
        p = (noise.cdf(z[..., None] - k) * pmf).sum(axis=-1)
    else:  # both tails computed directly, so a tiny p-value keeps its precision
        centre, distance = n * theta, np.abs(z - n * theta)
        upper = noise.sf((centre + distance)[..., None] - k)
        lower = noise.cdf((centre - distance)[..., None] - k)
        p = ((upper + lower) * pmf).sum(axis=-1)
    return np.clip(p, 0.0, 1.0)
