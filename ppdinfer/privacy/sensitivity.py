"""Delta_z, the Wasserstein-infinity sensitivity given public information z, for the paper's examples.

Delta_z = sup over theta_z in Theta_z and secret pairs (s1, s2) of W_inf(P(. | theta_z, s1),
P(. | theta_z, s2)) (Seeman, Reimherr & Slavkovic, "Formal privacy for partially private data",
Theorem 9). It scales the Wasserstein exponential mechanism.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import special, stats

from .. import validation as _checks
from ..geometry.wasserstein import coupling_from_logpmf
from ..validation import finite_array, nonnegative_counts, positive_finite, positive_int, probability

CLOSENESS_ATOL = 1e-12
"""Slack in |s / n - t_star| <= t, so that a count on the boundary (0.4 - 0.3 vs 0.1) is t-close."""

DEFAULT_THETAS = np.linspace(0.05, 0.95, 19)
"""Default success probabilities of the iid Bernoulli family in `delta_sdl_counts`."""


def delta_normal_mean(n, width) -> float:
    """Example 1 without public information: Delta = width / n.

    X_1, ..., X_n iid N(mu, sigma^2) and secrets X_1 = v with v in [-width/2, width/2]. Given
    X_1 = v the mean is N(mu + (v - mu) / n, (n - 1) sigma^2 / n^2): a location family, so W_inf is
    |v1 - v2| / n <= width / n whatever mu and sigma (paper, Appendix C, Example 3, Eq. 31-32).

    See Also
    --------
    ppdinfer.privacy.delta_conditional_normal_mean : The same mean with public Z.

    References
    ----------
    .. [1] J. Seeman, M. Reimherr and A. Slavkovic, "Formal privacy for partially private data,"
        arXiv:2204.01102, 2022. Example 1.

    Examples
    --------
    >>> from ppdinfer.privacy import delta_normal_mean
    >>> delta_normal_mean(n=100, width=2.0)      # records in [-1, 1]
    0.02
    """
    return positive_finite(width, "width") / positive_int(n, "n")


def delta_conditional_normal_mean(width, cov) -> float:
    """Example 1 with jointly normal public Z: Delta_z = |beta_1| width, beta = Sigma_VZ^{-1} Sigma_XVZ.

    Parameters
    ----------
    width : float
        D: every secret value v of X_1 lies in [-D/2, D/2].
    cov : array_like, shape (2 + d, 2 + d)
        Covariance of (Xbar, X_1, Z_1, ..., Z_d) ordered as in the paper's Eq. 15: Sigma_XVZ is
        cov[1:, 0] and Sigma_VZ = cov[1:, 1:], which must be positive definite (otherwise X_1 = v
        is degenerate given Z). With d = 0 (no Z) and iid records this gives width / n.

    See Also
    --------
    ppdinfer.privacy.delta_normal_mean : Without public information.

    Notes
    -----
    Given X_1 = v and Z = z, Xbar is normal with mean mu + Sigma_XVZ^T Sigma_VZ^{-1} (v - mu, z - mu_Z)
    and a variance free of v and z (Eq. 34): a location family in v. Both secrets of a pair share
    the same z, so W_inf is the gap between the two means, |beta_1| |v1 - v2|, at most |beta_1| D.
    The paper's Eq. 16 prints Sigma_XVZ^T Sigma_VZ^{-1} (D, z - mu_Z)^T; its term beta_Z (z - mu_Z)
    is common to both secrets and cancels in the difference, so it is left out here (kept, it would
    make the "sensitivity" depend on z and even negative). The supremum over a family of
    covariances is unbounded: with Z = X_2 - a X_1, beta_1 = (1 + a) / n.

    References
    ----------
    .. [1] J. Seeman, M. Reimherr and A. Slavkovic, "Formal privacy for partially private data,"
        arXiv:2204.01102, 2022. Example 1.

    Examples
    --------
    >>> import numpy as np
    >>> from ppdinfer.privacy import delta_conditional_normal_mean
    >>> n = 10                                   # iid records of variance 1, no Z: width / n
    >>> delta_conditional_normal_mean(2.0, np.array([[1 / n, 1 / n], [1 / n, 1.0]]))
    0.2
    """
    width = positive_finite(width, "width")
    cov = finite_array(cov, "cov")
    if cov.ndim != 2 or cov.shape[0] != cov.shape[1] or cov.shape[0] < 2:
        raise ValueError(f"cov must be a square matrix of size >= 2 over (Xbar, X_1, Z...), got shape {cov.shape}")
    scale = float(np.max(np.abs(cov)))
    if not np.allclose(cov, cov.T, rtol=0.0, atol=1e-12 * scale):
        raise ValueError("cov must be symmetric")
    if np.linalg.eigvalsh(cov)[0] < -1e-10 * scale:
        raise ValueError("cov must be positive semi-definite")
    cov_vz = cov[1:, 1:]
    try:
        np.linalg.cholesky(cov_vz)
    except np.linalg.LinAlgError:
        raise ValueError("cov: the covariance of (X_1, Z) must be positive definite") from None
    beta = np.linalg.solve(cov_vz, cov[1:, 0])
    return float(abs(beta[0]) * width)


@dataclass(frozen=True, eq=False)
class CountSensitivity:
    """Delta_z of a count of n binary records given a public set of possible counts.

    Attributes
    ----------
    allowed : ndarray
        The counts S_n consistent with z.
    secret_pairs : tuple of int
        Records i (0-based) whose pair (X_i = 0, X_i = 1) stays non-degenerate given z; records
        are exchangeable, so this is all of them or none.
    delta : int
        Delta_z; 0 when no pair remains or when z fixes the count.

    References
    ----------
    .. [1] J. Seeman, M. Reimherr and A. Slavkovic, "Formal privacy for partially private data,"
        arXiv:2204.01102, 2022. Examples 2 and 4.

    Examples
    --------
    >>> from ppdinfer.privacy import delta_sdl_counts
    >>> result = delta_sdl_counts(10, [5])       # z discloses the count
    >>> result.delta, len(result.secret_pairs)
    (0, 10)
    """

    allowed: np.ndarray
    secret_pairs: tuple[int, ...]
    delta: int


def k_anonymous_counts(n, k) -> np.ndarray:
    """Counts S_n for which releasing (S_n, n - S_n) is k-anonymous: {k, ..., n - k} (paper, Eq. 18).

    See Also
    --------
    ppdinfer.privacy.t_close_counts : The t-closeness counterpart.
    ppdinfer.privacy.delta_sdl_counts : Delta_z for such counts.

    References
    ----------
    .. [1] J. Seeman, M. Reimherr and A. Slavkovic, "Formal privacy for partially private data,"
        arXiv:2204.01102, 2022. Equation (18).

    Examples
    --------
    >>> from ppdinfer.privacy import k_anonymous_counts
    >>> k_anonymous_counts(10, 3)
    array([3, 4, 5, 6, 7])
    """
    n = positive_int(n, "n")
    k = positive_int(k, "k")
    if 2 * k > n:
        raise ValueError(f"k must be at most n / 2 = {n / 2} so that some count is k-anonymous, got {k}")
    return np.arange(k, n - k + 1)


def t_close_counts(n, t, t_star) -> np.ndarray:
    """Counts S_n with |S_n / n - t_star| <= t (L1 t-closeness to t_star, paper, Eq. 18).

    The comparison allows ``CLOSENESS_ATOL`` of rounding.

    See Also
    --------
    ppdinfer.privacy.k_anonymous_counts : The k-anonymity counterpart.
    ppdinfer.privacy.delta_sdl_counts : Delta_z for such counts.

    References
    ----------
    .. [1] J. Seeman, M. Reimherr and A. Slavkovic, "Formal privacy for partially private data,"
        arXiv:2204.01102, 2022. Equation (18).

    Examples
    --------
    >>> from ppdinfer.privacy import t_close_counts
    >>> t_close_counts(10, t=0.1, t_star=0.5)    # |s / 10 - 0.5| <= 0.1
    array([4, 5, 6])
    """
    n = positive_int(n, "n")
    t = probability(t, "t", open_interval=False)
    t_star = probability(t_star, "t_star", open_interval=False)
    counts = np.arange(n + 1)
    close = counts[np.abs(counts / n - t_star) <= t + CLOSENESS_ATOL]
    if close.size == 0:
        raise ValueError(f"t = {t} is too small: no count s in 0..{n} has |s / n - {t_star}| <= t")
    return close


def delta_sdl_counts(n, allowed, thetas=DEFAULT_THETAS) -> CountSensitivity:
    """Example 2 / 4: Delta_z of S_n = X_1 + ... + X_n when z says S_n lies in ``allowed``.

    Theta_z: X_1, ..., X_n iid Bernoulli(theta), theta in ``thetas``, conditioned on S_n in
    ``allowed``; secret pairs (X_i = 0, X_i = 1). Given X_i = 1, S_n is 1 + Bin(n - 1, theta)
    restricted to ``allowed``; given X_i = 0 it is Bin(n - 1, theta) restricted to ``allowed``.
    Delta_z is the largest W_inf between the two over ``thetas``, from their quantile functions
    (paper, Eq. 35).

    The public property only removes pairs: a pair remains when z allows a count <= n - 1 and one
    >= 1. For an interval of counts (k-anonymity, t-closeness) with at least two counts,
    Delta_z = 1 for every theta in (0, 1), the sensitivity without z. With P1 and P0 the laws given
    X_i = 1 and X_i = 0, P0 <= P1 <= P0 + 1 in the usual stochastic order (the first by the
    likelihood ratio, increasing in s; the second because any pmf conditioned on a window moved
    down by one moves down), so their quantiles differ by 0 or 1, and P1 != P0. An interval of one
    count discloses S_n: Delta_z = 0.

    Parameters
    ----------
    n : int
        Number of records.
    allowed : array_like of int
        Counts in 0..n consistent with z, e.g. from `k_anonymous_counts` or `t_close_counts`.
    thetas : array_like of float
        Success probabilities in (0, 1) spanning the family.

    See Also
    --------
    ppdinfer.privacy.k_anonymous_counts : k-anonymous counts.
    ppdinfer.privacy.t_close_counts : t-close counts.
    ppdinfer.privacy.delta_correlated_counts : Correlated records.

    References
    ----------
    .. [1] J. Seeman, M. Reimherr and A. Slavkovic, "Formal privacy for partially private data,"
        arXiv:2204.01102, 2022. Examples 2 and 4.

    Examples
    --------
    >>> from ppdinfer.privacy import delta_sdl_counts, k_anonymous_counts
    >>> delta_sdl_counts(10, k_anonymous_counts(10, 3))   # k-anonymity leaves Delta_z = 1
    CountSensitivity(allowed=array([3, 4, 5, 6, 7]), secret_pairs=(0, 1, 2, 3, 4, 5, 6, 7, 8, 9), delta=1)
    """
    n = positive_int(n, "n")
    allowed = np.unique(nonnegative_counts(allowed, "allowed"))
    if allowed.size == 0 or allowed[-1] > n:
        raise ValueError(f"allowed must be a non-empty set of counts in 0..{n}, got {allowed.tolist()}")
    thetas = _checks.vector(_checks.unit_interval(thetas, "thetas", open_interval=True), "thetas")
    if allowed[0] > n - 1 or allowed[-1] < 1:
        return CountSensitivity(allowed, (), 0)
    counts = np.arange(n + 1)
    outside = ~np.isin(counts, allowed)
    delta = 0
    for theta in thetas:
        log_one = _restrict(stats.binom.logpmf(counts - 1, n - 1, theta), outside)
        log_zero = _restrict(stats.binom.logpmf(counts, n - 1, theta), outside)
        delta = max(delta, round(coupling_from_logpmf(log_one, log_zero, counts).max_displacement))
    return CountSensitivity(allowed, tuple(range(n)), delta)


def _restrict(log_pmf: np.ndarray, outside: np.ndarray) -> np.ndarray:
    """Log pmf conditioned on the complement of ``outside``."""
    log_pmf = np.where(outside, -np.inf, log_pmf)
    return log_pmf - special.logsumexp(log_pmf)


def delta_correlated_counts(n, z0, z1) -> int | np.ndarray:
    """Section 4.4 / Figure 4: Delta_z = W_inf(1 + Bin(n - 1, z1), Bin(n - 1, z0)) for correlated counts.

    Family Theta_(z0, z1): P(X_i = 1 | X_j = 1, z) <= z1 and P(X_i = 1 | X_j = 0, z) >= z0 for
    i != j. The worst case sets the other n - 1 records iid Bernoulli at the extremes, z1 given
    X_j = 1 and z0 given X_j = 0 (paper, Eq. 35 and Section 4.4). Evaluated exactly from the
    quantile functions of the binomial log pmfs on {0, ..., n}, tails included.

    That worst case presumes the other records independent given X_j, with the bounds binding.
    Read literally, the one-sided bounds also allow P(X_i = 1 | X_j = 1) = 0 and
    P(X_i = 1 | X_j = 0) = 1 (Delta_z >= n - 2), and records moving together reach n.

    Parameters
    ----------
    n : int
        Number of records.
    z0, z1 : float or array_like
        Bounds in [0, 1] with z0 <= z1, broadcast against each other.

    Returns
    -------
    int or ndarray of int
        Delta_z in {1, ..., n}: 1 when z0 = z1 (the two laws differ by a shift of one), n when
        z0 = 0 < z1 or z0 < 1 = z1, non-decreasing in z1 and non-increasing in z0.

    See Also
    --------
    ppdinfer.privacy.plot_correlated_counts : Its Figure 4.

    References
    ----------
    .. [1] J. Seeman, M. Reimherr and A. Slavkovic, "Formal privacy for partially private data,"
        arXiv:2204.01102, 2022. Section 4.4.

    Examples
    --------
    >>> from ppdinfer.privacy import delta_correlated_counts
    >>> delta_correlated_counts(50, 0.1, [0.1, 0.5, 0.9, 1.0])   # from independence to n
    array([ 1, 25, 41, 50])
    """
    n = positive_int(n, "n")
    z0 = _checks.unit_interval(z0, "z0")
    z1 = _checks.unit_interval(z1, "z1")
    try:
        z0, z1 = np.broadcast_arrays(z0, z1)
    except ValueError:
        raise ValueError(f"z0 and z1 must broadcast together, got shapes {z0.shape} and {z1.shape}") from None
    if np.any(z0 > z1):
        raise ValueError(
            "z0 must not exceed z1 (z0 bounds P(X_i = 1 | X_j = 0) from below, z1 bounds "
            "P(X_i = 1 | X_j = 1) from above)"
        )
    counts = np.arange(n + 1)
    log_ones = stats.binom.logpmf(counts - 1, n - 1, z1.reshape(-1, 1))
    log_zeros = stats.binom.logpmf(counts, n - 1, z0.reshape(-1, 1))
    delta = np.array(
        [
            round(coupling_from_logpmf(log_one, log_zero, counts).max_displacement)
            for log_one, log_zero in zip(log_ones, log_zeros)
        ],
        dtype=np.int64,
    ).reshape(z0.shape)
    return int(delta) if delta.ndim == 0 else delta
