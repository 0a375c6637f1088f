"""Privacy accounting.

- epsilon-TP: composition and conditioning rules (Seeman, Reimherr & Slavkovic, Section 2).
- f-DP, Gaussian DP and zCDP: tradeoff functions, (eps, delta) conversions and group privacy,
  for Semi-DP (Cho & Awan): a DP release with an invariant t is Semi-DP under a(t)-record
  adjacency through group privacy (their Section 6, the 2020 Census).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import NamedTuple

import numpy as np
from scipy import optimize, special

from ..mechanisms.gaussian import gaussian_delta, gaussian_delta_precise, raise_until
from ..validation import finite_array, positive_finite, positive_int, probability


def sequential_composition(epsilons: Iterable[float]) -> float:
    """Lemma 6: releases each eps_b-TP and independent given (X, Z) are jointly (sum of eps_b)-TP.

    See Also
    --------
    ppdinfer.privacy.parallel_composition : Releases on disjoint partitions.

    References
    ----------
    .. [1] J. Seeman, M. Reimherr and A. Slavkovic, "Formal privacy for partially private data,"
        arXiv:2204.01102, 2022. Lemma 6.

    Examples
    --------
    >>> from ppdinfer.privacy import sequential_composition
    >>> sequential_composition([0.5, 0.25])      # two releases about the same records
    0.75
    """
    return sum(_epsilons(epsilons))


def parallel_composition(epsilons: Iterable[float]) -> float:
    """Lemma 7: releases on disjoint partitions X_b, each depending on X only through X_b, are (max eps_b)-TP.

    The lemma states it for a common eps; a release that is eps_b-TP is also max(eps)-TP, so
    the maximum covers unequal budgets.

    See Also
    --------
    ppdinfer.privacy.sequential_composition : Releases on the same data.

    References
    ----------
    .. [1] J. Seeman, M. Reimherr and A. Slavkovic, "Formal privacy for partially private data,"
        arXiv:2204.01102, 2022. Lemma 7.

    Examples
    --------
    >>> from ppdinfer.privacy import parallel_composition
    >>> parallel_composition([0.5, 1.0])          # one release per county, counties disjoint
    1.0
    """
    return max(_epsilons(epsilons))


def condition_on_public_subset(epsilon: float) -> float:
    """Lemma 8: an eps-DP release conditioned on the public event "X lies in a subset" is 2 eps-TP.

    References
    ----------
    .. [1] J. Seeman, M. Reimherr and A. Slavkovic, "Formal privacy for partially private data,"
        arXiv:2204.01102, 2022. Lemma 8.

    Examples
    --------
    >>> from ppdinfer.privacy import condition_on_public_subset
    >>> condition_on_public_subset(0.5)           # e.g. a DP count known to be k-anonymous
    1.0
    """
    return 2.0 * positive_finite(epsilon, "epsilon")


def _epsilons(epsilons: Iterable[float]) -> list[float]:
    """Check a non-empty collection of privacy budgets, each a positive finite number."""
    try:
        values = list(epsilons)
    except TypeError:
        raise ValueError(f"epsilons must be a collection of numbers, got {epsilons!r}") from None
    if not values:
        raise ValueError("epsilons must hold at least one epsilon")
    return [positive_finite(value, f"epsilons[{i}]") for i, value in enumerate(values)]


# --- f-DP, Gaussian DP and zCDP accounting (Semi-DP, Cho & Awan, Sections 2 and 6) -------------
#
# Convention: alpha is the type-I error of a test of X against X' and f(alpha) the smallest
# type-II error at that level (Dong, Roth & Su 2022). The notes on the Semi-DP paper write the
# tradeoff functions with 1 - alpha in place of alpha; the curves are the same.


def gaussian_tradeoff(alpha, mu: float):
    """The mu-GDP tradeoff function G_mu(alpha) = Phi(Phi^{-1}(1 - alpha) - mu).

    G_mu is the tradeoff between type-I error alpha and type-II error of the optimal test of
    N(0, 1) against N(mu, 1) (Dong, Roth & Su 2022); a mechanism is mu-GDP when every test of two
    adjacent datasets is at least this hard. Phi^{-1}(1 - alpha) is evaluated as -Phi^{-1}(alpha),
    exact in the tail alpha -> 0.

    Parameters
    ----------
    alpha : float or array_like
        Type-I error(s), in [0, 1].
    mu : float
        The GDP parameter, > 0.

    Returns
    -------
    float or ndarray
        G_mu(alpha): 1 at alpha = 0, 0 at alpha = 1, Phi(-mu) at alpha = 1/2.

    See Also
    --------
    ppdinfer.privacy.laplace_tradeoff : The tradeoff function of pure eps-DP.

    References
    ----------
    .. [1] J. Dong, A. Roth and W. J. Su, "Gaussian differential privacy," Journal of the Royal
        Statistical Society Series B 84(1), 2022.

    Examples
    --------
    >>> from ppdinfer.privacy import gaussian_tradeoff
    >>> round(gaussian_tradeoff(0.05, mu=1.0), 4)     # power of the best 5% test is 1 - 0.7405
    0.7405
    >>> gaussian_tradeoff([0.0, 1.0], mu=2.0)
    array([1., 0.])
    """
    mu = positive_finite(mu, "mu")
    alpha = _levels(alpha)
    value = special.ndtr(-special.ndtri(alpha) - mu)
    return float(value) if value.ndim == 0 else value


def laplace_tradeoff(alpha, epsilon: float):
    """The eps-DP tradeoff function f_{eps,0}(alpha) = max(0, 1 - e^eps alpha, e^-eps (1 - alpha)).

    A mechanism is eps-DP exactly when its tradeoff function lies above f_{eps,0} (Wasserman &
    Zhou 2010; Dong, Roth & Su 2022). The Laplace mechanism with scale sensitivity / eps is
    eps-DP: its tradeoff lies above this curve and equals it for alpha <= e^-eps / 2 (and,
    by symmetry, near alpha = 1); randomized response attains it everywhere. The kink is at
    alpha = 1 / (1 + e^eps), where f(alpha) = alpha. e^eps alpha is evaluated as
    exp(eps + log alpha), so a large eps does not overflow.

    Parameters
    ----------
    alpha : float or array_like
        Type-I error(s), in [0, 1].
    epsilon : float
        The privacy parameter, > 0.

    Returns
    -------
    float or ndarray
        f_{eps,0}(alpha).

    See Also
    --------
    ppdinfer.privacy.gaussian_tradeoff : The mu-GDP tradeoff function.

    References
    ----------
    .. [1] J. Dong, A. Roth and W. J. Su, "Gaussian differential privacy," Journal of the Royal
        Statistical Society Series B 84(1), 2022.
    .. [2] Y. H. Cho and J. Awan, "Formal privacy guarantees with invariant statistics."

    Examples
    --------
    >>> import math
    >>> from ppdinfer.privacy import laplace_tradeoff
    >>> kink = 1 / (1 + math.e)
    >>> round(laplace_tradeoff(kink, epsilon=1.0), 6) == round(kink, 6)   # symmetric: f(kink) = kink
    True
    >>> laplace_tradeoff([0.0, 0.5, 1.0], epsilon=1.0)
    array([1.        , 0.18393972, 0.        ])
    """
    epsilon = positive_finite(epsilon, "epsilon")
    alpha = _levels(alpha)
    with np.errstate(divide="ignore", over="ignore"):
        steep = 1.0 - np.exp(epsilon + np.log(alpha))
    value = np.maximum(np.maximum(steep, np.exp(-epsilon) * (1.0 - alpha)), 0.0)
    return float(value) if value.ndim == 0 else value


def gdp_delta(mu: float, epsilon: float) -> float:
    """The exact (eps, delta(eps)) curve of mu-GDP (Dong, Roth & Su 2022, Corollary 2.13).

    delta(eps) = Phi(-eps / mu + mu / 2) - e^eps Phi(-eps / mu - mu / 2): mu-GDP is
    (eps, delta(eps))-DP for every eps, and for no smaller delta. It is the Gaussian mechanism's
    curve with mu = sensitivity / sigma, computed by `ppdinfer.mechanisms.gaussian_delta` on the
    log scale (no overflow of e^eps, no cancellation in the tails).

    Parameters
    ----------
    mu : float
        The GDP parameter, > 0.
    epsilon : float
        The (eps, delta) privacy parameter, > 0.

    Returns
    -------
    float
        delta(eps), in [0, 1]: 0.0 once it is below the smallest float, 1.0 once it is within
        half an ulp of 1 (large mu, small eps).

    See Also
    --------
    ppdinfer.privacy.gdp_epsilon : Its inverse in eps.
    ppdinfer.mechanisms.gaussian_delta : The same curve for N(0, sigma^2) noise.

    References
    ----------
    .. [1] J. Dong, A. Roth and W. J. Su, "Gaussian differential privacy," Journal of the Royal
        Statistical Society Series B 84(1), 2022.
    .. [2] Y. H. Cho and J. Awan, "Formal privacy guarantees with invariant statistics."

    Examples
    --------
    >>> from ppdinfer.privacy import gdp_delta
    >>> round(gdp_delta(mu=1.0, epsilon=1.0), 4)      # N(0, 1) noise on a sensitivity-1 query
    0.1269
    >>> gdp_delta(mu=1.0, epsilon=10.0)
    9.81...e-23
    """
    mu = positive_finite(mu, "mu")
    epsilon = positive_finite(epsilon, "epsilon")
    return _gdp_delta(mu, epsilon)


def gdp_epsilon(mu: float, delta: float) -> float:
    """The smallest eps with gdp_delta(mu, eps) <= delta: mu-GDP as (eps, delta)-DP, conservatively.

    delta(eps) decreases from delta(0) = 2 Phi(mu / 2) - 1 (the total variation distance of
    N(0, 1) and N(mu, 1)) to 0, so the root is unique; when delta >= delta(0) the answer is 0.
    The root is found in floating point, then certified in 60-digit arithmetic: eps is raised
    (by relative steps from 2^-50, doubling) until delta(eps) <= delta holds there, so the
    returned eps never carries more than the target delta.

    Parameters
    ----------
    mu : float
        The GDP parameter, > 0.
    delta : float
        The target delta, in (0, 1).

    Returns
    -------
    float
        eps >= 0 with gdp_delta(mu, eps) <= delta.

    See Also
    --------
    ppdinfer.privacy.gdp_delta : The curve it inverts.
    ppdinfer.privacy.gaussian_zcdp_epsilon : The same for rho-zCDP Gaussian noise.

    References
    ----------
    .. [1] J. Dong, A. Roth and W. J. Su, "Gaussian differential privacy," Journal of the Royal
        Statistical Society Series B 84(1), 2022.

    Examples
    --------
    >>> from ppdinfer.privacy import gdp_delta, gdp_epsilon
    >>> eps = gdp_epsilon(mu=1.0, delta=1e-5)
    >>> round(eps, 4), gdp_delta(1.0, eps) <= 1e-5
    (4.3772, True)
    """
    mu = positive_finite(mu, "mu")
    delta = probability(delta, "delta")
    if _certified(mu, 0.0, delta):
        return 0.0
    excess = lambda eps: _gdp_delta(mu, eps) - delta  # noqa: E731
    high = 1.0
    while excess(high) > 0:
        high *= 2.0
    epsilon = optimize.brentq(excess, 0.0, high, xtol=1e-15, rtol=1e-15)
    return raise_until(epsilon, lambda eps: _certified(mu, eps, delta))


def zcdp_epsilon(rho: float, delta: float, bound: str = "standard") -> float:
    r"""An eps with every rho-zCDP release (eps, delta)-DP, by one of three conversions.

    ``bound="standard"``: eps = rho + 2 sqrt(rho log(1/delta)), Bun & Steinke (2016),
    Proposition 1.3; Lemma 40 of the Semi-DP paper, which uses it for the 2020 Census.

    ``bound="optimal"``: the conversion of Canonne, Kamath & Steinke (2020), Proposition 12 (also
    Asoodeh et al.), the one OpenDP uses. A mechanism with Renyi
    divergence at most alpha rho of order alpha > 1 (every order, for rho-zCDP) is
    (eps, delta)-DP for

    .. math::

        \epsilon = \min_{\alpha > 1} \; \alpha \rho + \frac{\log(1 / \delta) - \log(\alpha - 1)
            + \alpha \log(1 - 1 / \alpha)}{\alpha - 1}

    (clipped at 0), minimized numerically over log(alpha - 1). At the standard bound's order
    alpha = 1 + sqrt(log(1/delta) / rho) the objective is the standard eps plus
    [(alpha - 1) log(alpha - 1) - alpha log alpha] / (alpha - 1) < 0, so this eps is never larger.

    ``bound="gaussian"``: the exact eps of a continuous Gaussian mechanism with this rho,
    `gaussian_zcdp_epsilon`. It is smaller still, but holds only for continuous Gaussian noise
    (the 2020 Census added discrete Gaussian noise: use one of the other two there).

    Parameters
    ----------
    rho : float
        The zCDP parameter, > 0.
    delta : float
        The target delta, in (0, 1).
    bound : {"standard", "optimal", "gaussian"}
        The conversion.

    Returns
    -------
    float
        eps >= 0 with the release (eps, delta)-DP.

    See Also
    --------
    ppdinfer.privacy.gaussian_zcdp_epsilon : The exact conversion for Gaussian noise.

    References
    ----------
    .. [1] M. Bun and T. Steinke, "Concentrated differential privacy: simplifications, extensions, and
        lower bounds," Theory of Cryptography Conference (TCC), 2016.
    .. [2] C. L. Canonne, G. Kamath and T. Steinke, "The discrete Gaussian for differential privacy," 2020.
    .. [3] Y. H. Cho and J. Awan, "Formal privacy guarantees with invariant statistics." Lemma 40.

    Examples
    --------
    >>> from ppdinfer.privacy import zcdp_epsilon
    >>> round(zcdp_epsilon(2.56, 1e-10), 5)          # the 2020 Census persons budget (Section 6)
    17.91528
    >>> round(zcdp_epsilon(2.56, 1e-10, bound="optimal"), 5)
    17.15831
    >>> round(zcdp_epsilon(2.56, 1e-10, bound="gaussian"), 5)
    16.47939
    """
    if bound not in _ZCDP_BOUNDS:
        raise ValueError(f"bound must be one of {_ZCDP_BOUNDS}, got {bound!r}")
    if bound == "gaussian":
        return gaussian_zcdp_epsilon(rho, delta)
    rho = positive_finite(rho, "rho")
    delta = probability(delta, "delta")
    log_inverse_delta = -math.log(delta)
    standard = rho + 2.0 * math.sqrt(rho * log_inverse_delta)
    if bound == "standard":
        return standard

    def epsilon_at(log_excess: float) -> float:  # the objective at alpha = 1 + exp(log_excess)
        excess = math.exp(log_excess)
        alpha = 1.0 + excess
        return alpha * rho + (log_inverse_delta - log_excess + alpha * (log_excess - math.log(alpha))) / excess

    start = 0.5 * (math.log(log_inverse_delta) - math.log(rho))  # the standard bound's order
    found = optimize.minimize_scalar(
        epsilon_at, bounds=(start - 20.0, start + 20.0), method="bounded", options={"xatol": 1e-10}
    )
    return max(0.0, min(float(found.fun), epsilon_at(start)))


_ZCDP_BOUNDS = ("standard", "optimal", "gaussian")


def gaussian_zcdp_epsilon(rho: float, delta: float) -> float:
    """The exact eps of a rho-zCDP Gaussian mechanism at delta: gdp_epsilon(sqrt(2 rho), delta).

    N(0, sigma^2) noise on a query of l2 sensitivity Delta is rho-zCDP with rho = Delta^2 /
    (2 sigma^2) and mu-GDP with mu = Delta / sigma = sqrt(2 rho); Gaussian releases compose to
    a Gaussian one with the rho's added, so the same holds for a composition. Its mu-GDP curve is
    exact, so this eps is never larger than `zcdp_epsilon`'s bound, which must hold for every
    rho-zCDP mechanism. It is exact for continuous Gaussian noise only: a release that is only
    known to be rho-zCDP (or uses discrete Gaussian noise, as the 2020 Census did) is covered by
    `zcdp_epsilon`, not by this. ``zcdp_epsilon(rho, delta, bound="gaussian")`` returns this eps.

    Parameters
    ----------
    rho : float
        The zCDP parameter, > 0.
    delta : float
        The target delta, in (0, 1).

    Returns
    -------
    float
        The smallest eps (certified as in `gdp_epsilon`) with the Gaussian release (eps, delta)-DP.

    See Also
    --------
    ppdinfer.privacy.zcdp_epsilon : Conversions for any zCDP release.
    ppdinfer.privacy.gdp_epsilon : The GDP conversion it uses.

    References
    ----------
    .. [1] M. Bun and T. Steinke, "Concentrated differential privacy: simplifications, extensions, and
        lower bounds," Theory of Cryptography Conference (TCC), 2016.
    .. [2] J. Dong, A. Roth and W. J. Su, "Gaussian differential privacy," Journal of the Royal
        Statistical Society Series B 84(1), 2022.

    Examples
    --------
    >>> from ppdinfer.privacy import gaussian_zcdp_epsilon, zcdp_epsilon
    >>> round(gaussian_zcdp_epsilon(2.56, 1e-10), 4), round(zcdp_epsilon(2.56, 1e-10), 4)
    (16.4794, 17.9153)
    """
    rho = positive_finite(rho, "rho")
    delta = probability(delta, "delta")
    return gdp_epsilon(math.sqrt(2.0 * rho), delta)


def gdp_group(mu: float, k: int) -> float:
    """Group privacy of mu-GDP: a mu-GDP release is (k mu)-GDP for datasets k records apart.

    Dong, Roth & Su (2022), Theorem 2.14: G_mu composed k times with itself is G_{k mu}. Under
    Semi-DP with semi-adjacency parameter a(t), a DP release is Semi-DP with k = a(t).

    Parameters
    ----------
    mu : float
        The GDP parameter for adjacent datasets, > 0.
    k : int
        The group size (number of record changes), >= 1.

    Returns
    -------
    float
        k mu.

    See Also
    --------
    ppdinfer.privacy.zcdp_group : The zCDP counterpart.

    References
    ----------
    .. [1] J. Dong, A. Roth and W. J. Su, "Gaussian differential privacy," Journal of the Royal
        Statistical Society Series B 84(1), 2022.
    .. [2] Y. H. Cho and J. Awan, "Formal privacy guarantees with invariant statistics."

    Examples
    --------
    >>> from ppdinfer.privacy import gdp_group
    >>> gdp_group(0.5, 2)
    1.0
    """
    return positive_int(k, "k") * positive_finite(mu, "mu")


def zcdp_group(rho: float, k: int) -> float:
    """Group privacy of zCDP: a rho-zCDP release is (k^2 rho)-zCDP for datasets k records apart.

    Bun & Steinke (2016), Proposition 1.9; Lemma 39 of the Semi-DP paper. It agrees with
    `gdp_group` through rho = mu^2 / 2.

    Parameters
    ----------
    rho : float
        The zCDP parameter for adjacent datasets, > 0.
    k : int
        The group size (number of record changes), >= 1.

    Returns
    -------
    float
        k^2 rho.

    See Also
    --------
    ppdinfer.privacy.gdp_group : The GDP counterpart.
    ppdinfer.privacy.zcdp_group_account : Its (eps, delta).

    References
    ----------
    .. [1] M. Bun and T. Steinke, "Concentrated differential privacy: simplifications, extensions, and
        lower bounds," Theory of Cryptography Conference (TCC), 2016.
    .. [2] Y. H. Cho and J. Awan, "Formal privacy guarantees with invariant statistics."

    Examples
    --------
    >>> from ppdinfer.privacy import zcdp_group
    >>> zcdp_group(2.56, 2)                       # the Census persons budget under a(t) = 2
    10.24
    """
    return positive_int(k, "k") ** 2 * positive_finite(rho, "rho")


class ZCDPGroupAccount(NamedTuple):
    """The (eps, delta) guarantees of a rho-zCDP release for datasets k records apart.

    Attributes
    ----------
    k : int
        The group size: 1 for DP, a(t) for Semi-DP.
    rho : float
        k^2 times the advertised rho (`zcdp_group`).
    delta : float
        The delta at which eps is reported.
    epsilon_bound : float
        rho + 2 sqrt(rho log(1/delta)) (`zcdp_epsilon`): holds for every rho-zCDP mechanism;
        what the Semi-DP paper prints.
    epsilon_gaussian : float
        The exact eps of a continuous Gaussian mechanism with this rho (`gaussian_zcdp_epsilon`):
        never larger than epsilon_bound.

    References
    ----------
    .. [1] M. Bun and T. Steinke, "Concentrated differential privacy: simplifications, extensions, and
        lower bounds," Theory of Cryptography Conference (TCC), 2016.
    .. [2] Y. H. Cho and J. Awan, "Formal privacy guarantees with invariant statistics." Section 6.

    Examples
    --------
    >>> from ppdinfer.privacy import zcdp_group_account
    >>> zcdp_group_account(2.56, 1e-10, k=2).rho
    10.24
    """

    k: int
    rho: float
    delta: float
    epsilon_bound: float
    epsilon_gaussian: float


MAX_GROUP_RHO = 1e15
"""The largest k^2 rho that `zcdp_group_account` converts (eps about 1e15; far beyond it the conversions overflow)."""


def zcdp_group_account(rho: float, delta: float, k: int = 1) -> ZCDPGroupAccount:
    """A rho-zCDP release seen k records apart (Semi-DP with a(t) = k): its zCDP and (eps, delta).

    The release is (k^2 rho)-zCDP for datasets k records apart (`zcdp_group`), and rho'-zCDP gives
    eps = rho' + 2 sqrt(rho' log(1/delta)) (`zcdp_epsilon`). Section 6 of the Semi-DP paper
    (Cho & Awan) applies this to the 2020 Census: with the state populations invariant,
    a(t) = 2, so the persons budget rho = 2.56 becomes 10.24 and, at delta = 1e-10, eps = 17.91528
    (k = 1, as advertised) becomes 40.95057. The exact Gaussian eps (`gaussian_zcdp_epsilon`) is
    reported beside it; it is smaller, but exact only for continuous Gaussian noise (the Census
    added discrete Gaussian noise).

    Parameters
    ----------
    rho : float
        The advertised zCDP parameter for adjacent datasets, > 0.
    delta : float
        The target delta, in (0, 1).
    k : int, optional
        The group size: 1 (default) for DP, a(t) for Semi-DP.

    Returns
    -------
    ZCDPGroupAccount
        k, k^2 rho, delta and both eps.

    See Also
    --------
    ppdinfer.privacy.zcdp_group : The group zCDP parameter.

    References
    ----------
    .. [1] M. Bun and T. Steinke, "Concentrated differential privacy: simplifications, extensions, and
        lower bounds," Theory of Cryptography Conference (TCC), 2016.
    .. [2] Y. H. Cho and J. Awan, "Formal privacy guarantees with invariant statistics." Section 6.

    Examples
    --------
    >>> from ppdinfer.privacy import zcdp_group_account
    >>> dp = zcdp_group_account(2.56, 1e-10)          # 2020 Census persons tables, as advertised
    >>> semi = zcdp_group_account(2.56, 1e-10, k=2)   # Semi-DP with the state populations invariant
    >>> round(dp.epsilon_bound, 5), round(semi.epsilon_bound, 5)
    (17.91528, 40.95057)
    >>> round(dp.epsilon_gaussian, 3), round(semi.epsilon_gaussian, 3)
    (16.479, 38.405)
    """
    rho = positive_finite(rho, "rho")
    delta = probability(delta, "delta")
    k = positive_int(k, "k")
    if k * k * rho > MAX_GROUP_RHO:  # rho = 1e308 would reach the Gaussian conversion as mu = inf
        raise ValueError(
            f"rho: k^2 rho = {k * k * rho:.3g} (rho = {rho!r}, k = {k}) exceeds {MAX_GROUP_RHO:.0e}, "
            f"beyond which the (eps, delta) conversions overflow (such a release protects nothing)"
        )
    group_rho = zcdp_group(rho, k)
    return ZCDPGroupAccount(
        k=k,
        rho=group_rho,
        delta=delta,
        epsilon_bound=zcdp_epsilon(group_rho, delta),
        epsilon_gaussian=gaussian_zcdp_epsilon(group_rho, delta),
    )


def _gdp_delta(mu: float, epsilon: float) -> float:
    """gdp_delta without the checks; epsilon = 0 gives the total variation distance."""
    return gaussian_delta(sigma=1.0, epsilon=epsilon, sensitivity=mu)


def _certified(mu: float, epsilon: float, delta: float) -> bool:
    """Whether delta(epsilon) <= delta in 60-digit arithmetic."""
    return gaussian_delta_precise(1.0, epsilon, mu) <= delta


def _levels(alpha) -> np.ndarray:
    """Check type-I error level(s): finite numbers in [0, 1]."""
    arr = finite_array(alpha, "alpha")
    if np.any((arr < 0) | (arr > 1)):
        raise ValueError(f"alpha must lie in [0, 1], got {alpha!r}")
    return arr
