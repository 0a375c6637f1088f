r"""Fit f_theta on Adult subsets, calibrate the Gaussian mechanisms, measure their L2 error and audit them.

For a protected gap Delta_p the secret is theta in {0.5 - Delta_p / 2, 0.5 + Delta_p / 2}, the
income share of the subset; f_theta = N(mu_theta, Sigma_theta) is fitted to F on many subsets
drawn at that share (``data.py``). The mechanisms compared (Table 2, Figures 2 and 3):

- ExpM(G), EigM(G), DauM(G): the distribution privacy mechanisms of
  :mod:`ppdinfer.mechanisms.distribution`, calibrated "classical" (c = sqrt(2 ln(1.25 / delta)),
  the paper's choice at every eps) or "analytic" (exact);
- GroupDP(G): the DP Gaussian for a group of k = n = 100 records, sensitivity k times the L2 norm
  of the per-record sensitivities (1.8750 on Adult);
- DP(G): the record-level DP Gaussian (k = 1), the "DP" line of Figure 3; it gives no
  distribution privacy.

The utility of a mechanism is the mean of the L2 error over repetitions, next to its expectation

.. math::

    \mathbb{E} \lVert M(F) - F \rVert_2 = \mathbb{E} \lVert N(0, C) \rVert_2 ,

and its exact delta at eps (``audited_delta``) treats each ordered pair (theta_i, theta_j) with the
shared covariance Sigma_i, the assumption of Theorems 4.4 and 4.5 and of Algorithm 1.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping

import numpy as np
import pandas as pd

from ...mechanisms import Gaussian
from ...mechanisms.distribution import (
    CorrelatedGaussian,
    DistributionFamily,
    DistributionPrivacyWarning,
    GaussianLaw,
    directional_gaussian,
    eigenvector_gaussian,
    expected_value_gaussian,
    mahalanobis_limit,
    release_delta,
)
from ...rng import SeedLike, as_generator
from ...validation import positive_finite, positive_int, probability
from .data import SUBSET_SIZE, IncomePools, subset_queries

__all__ = [
    "CALIBRATIONS",
    "DISTRIBUTION_MECHANISMS",
    "GROUP_SIZE",
    "MECHANISMS",
    "audited_delta",
    "build_mechanisms",
    "expected_error",
    "fit_family",
    "noise_covariance",
    "secret_queries",
    "shares",
    "utility",
]

#: The group size of the group-DP baseline (k = n, the whole subset).
GROUP_SIZE = SUBSET_SIZE
DISTRIBUTION_MECHANISMS = ("ExpM(G)", "EigM(G)", "DauM(G)")
MECHANISMS = (*DISTRIBUTION_MECHANISMS, "GroupDP(G)", "DP(G)")
CALIBRATIONS = ("classical", "analytic")
#: Draws behind :func:`expected_error` (relative Monte Carlo error about 0.2 per cent).
EXPECTATION_DRAWS = 50_000


def shares(gap: float) -> tuple[float, float]:
    """The two secrets 0.5 -+ gap / 2, rounded to 6 decimals.

    Examples
    --------
    >>> shares(0.1)
    (0.45, 0.55)
    """
    gap = probability(gap, "gap")
    return round(0.5 - gap / 2, 6), round(0.5 + gap / 2, 6)


def secret_queries(
    pools: IncomePools, gap: float, subsets: int, random_seed: SeedLike = None
) -> dict[float, np.ndarray]:
    """F on ``subsets`` subsets per secret 0.5 -+ gap / 2, as arrays of shape (subsets, 5) keyed by the secret.

    Examples
    --------
    >>> pools = IncomePools(np.ones((120, 5)), np.zeros((120, 5)))
    >>> {share: rows[0, 3] for share, rows in secret_queries(pools, 0.2, 2, random_seed=0).items()}
    {0.4: np.float64(40.0), 0.6: np.float64(60.0)}
    """
    rng = as_generator(random_seed)
    subsets = positive_int(subsets, "subsets")
    return {share: subset_queries(pools, share, subsets, rng) for share in shares(gap)}


def fit_family(queries: Mapping[float, np.ndarray]) -> DistributionFamily:
    r"""f_theta = N(sample mean, sample covariance) of the rows of F drawn under each secret theta.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> pools = IncomePools(rng.normal(1.0, 1.0, (120, 5)), rng.normal(0.0, 1.0, (120, 5)))
    >>> family = fit_family(secret_queries(pools, 0.2, 30, random_seed=1))
    >>> sorted(family.laws), family.dim
    ([0.4, 0.6], 5)
    """
    laws = {}
    for share, rows in queries.items():
        rows = np.asarray(rows, dtype=float)
        if rows.ndim != 2 or rows.shape[0] < 2:
            raise ValueError(f"queries[{share!r}] must be an array of at least two rows of F, got shape {rows.shape}")
        laws[share] = GaussianLaw(rows.mean(axis=0), np.cov(rows, rowvar=False))
    return DistributionFamily(laws)


def build_mechanisms(
    family: DistributionFamily, epsilon: float, delta: float, calibration: str, record_sensitivity: float
) -> dict[str, Gaussian | CorrelatedGaussian]:
    """Every mechanism of :data:`MECHANISMS` at (eps, delta), calibrated ``calibration``.

    ``record_sensitivity`` is the L2 norm of the per-record sensitivities of F (1.8750 on Adult).
    The DP Gaussians get sigma = sensitivity c / eps (classical, at every eps as in the paper) or the
    analytic sigma. The classical calibration beyond eps = 1 is used as the paper does, its
    ``DistributionPrivacyWarning`` silenced here: :func:`audited_delta` reports the actual delta.

    Examples
    --------
    >>> family = DistributionFamily({0.45: GaussianLaw([0.0, 0.0], np.eye(2)),
    ...                              0.55: GaussianLaw([1.0, 0.0], np.eye(2))})
    >>> built = build_mechanisms(family, 0.5, 1e-3, "classical", record_sensitivity=1.0)
    >>> round(built["ExpM(G)"].sigma, 4), round(built["GroupDP(G)"].sigma, 2)     # c / eps, 100 c / eps
    (7.553, 755.3)
    """
    if calibration not in CALIBRATIONS:
        raise ValueError(f"calibration must be one of {CALIBRATIONS}, got {calibration!r}")
    epsilon, delta = positive_finite(epsilon, "epsilon"), probability(delta, "delta")
    record_sensitivity = positive_finite(record_sensitivity, "record_sensitivity")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DistributionPrivacyWarning)
        limit = mahalanobis_limit(epsilon, delta, calibration)  # sigma = sensitivity / limit for the DP Gaussians
        return {
            "ExpM(G)": expected_value_gaussian(family, epsilon, delta, calibration),
            "EigM(G)": eigenvector_gaussian(family, epsilon, delta, calibration),
            "DauM(G)": directional_gaussian(family, epsilon, delta, calibration),
            "GroupDP(G)": Gaussian(GROUP_SIZE * record_sensitivity / limit),
            "DP(G)": Gaussian(record_sensitivity / limit),
        }


def noise_covariance(mechanism: Gaussian | CorrelatedGaussian, dim: int) -> np.ndarray:
    """The covariance C of the noise a mechanism adds to F in R^dim.

    Examples
    --------
    >>> noise_covariance(Gaussian(2.0), 2)
    array([[4., 0.],
           [0., 4.]])
    """
    covariance = mechanism.noise_covariance(positive_int(dim, "dim"))
    if covariance is None:
        raise ValueError(f"mechanism must add Gaussian noise (a Gaussian or a CorrelatedGaussian), got {mechanism!r}")
    return covariance


def expected_error(covariance, draws: int = EXPECTATION_DRAWS, random_seed: SeedLike = 0) -> float:
    r"""E ||N(0, C)||_2 by Monte Carlo over ``draws`` draws of the eigen-coordinates of C.

    Examples
    --------
    >>> round(expected_error(np.eye(1), draws=100_000), 2)        # sqrt(2 / pi) = 0.798
    0.8
    """
    variances = np.clip(np.linalg.eigvalsh(np.asarray(covariance, dtype=float)), 0.0, None)
    normals = as_generator(random_seed).standard_normal((positive_int(draws, "draws"), variances.size))
    return float(np.sqrt((normals**2 * variances).sum(axis=1)).mean())


def audited_delta(family: DistributionFamily, covariance, epsilon: float) -> float:
    r"""The exact delta at eps of F + N(0, C), each ordered pair (i, j) taken with the shared covariance Sigma_i.

    .. math::

        \delta = \max_{(i, j)} \Phi\Bigl(-\frac{\epsilon}{m_{ij}} + \frac{m_{ij}}{2}\Bigr)
        - e^{\epsilon} \Phi\Bigl(-\frac{\epsilon}{m_{ij}} - \frac{m_{ij}}{2}\Bigr),
        \qquad m_{ij}^2 = (\mu_i - \mu_j)^\top (\Sigma_i + C)^{-1} (\mu_i - \mu_j).

    Examples
    --------
    >>> family = DistributionFamily({0: GaussianLaw([0.0], [[1.0]]), 1: GaussianLaw([1.0], [[4.0]])})
    >>> f"{audited_delta(family, np.zeros((1, 1)), 1.0):.4f}"      # m = 1 for the pair (0, 1)
    '0.1269'
    """
    worst = 0.0
    for i, j in family.pairs:
        shared = family.laws[i].covariance
        pair = DistributionFamily(
            {i: GaussianLaw(family.laws[i].mean, shared), j: GaussianLaw(family.laws[j].mean, shared)}, pairs=[(i, j)]
        )
        worst = max(worst, release_delta(pair, covariance, epsilon))
    return worst


def utility(
    pools: IncomePools,
    family: DistributionFamily,
    epsilons,
    delta: float,
    record_sensitivity: float,
    repetitions: int,
    random_seed: SeedLike = None,
) -> pd.DataFrame:
    """L2 errors of every mechanism and calibration at each eps over ``repetitions`` subsets.

    Each repetition draws one subset (at a secret of ``family`` taken in turn) and releases its F
    through every mechanism. One row per (mechanism, calibration, eps) with the columns ``error``
    (mean), ``error_se``, ``expected_error`` (:func:`expected_error`) and ``delta_audited``
    (:func:`audited_delta`).

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> pools = IncomePools(rng.normal(1.0, 1.0, (120, 5)), rng.normal(0.0, 1.0, (120, 5)))
    >>> family = fit_family(secret_queries(pools, 0.2, 30, random_seed=1))
    >>> table = utility(pools, family, [1.0], 1e-3, record_sensitivity=0.1, repetitions=3, random_seed=2)
    >>> len(table), sorted(table.columns)[:3]
    (10, ['calibration', 'delta_audited', 'epsilon'])
    """
    rng = as_generator(random_seed)
    repetitions = positive_int(repetitions, "repetitions")
    secrets = list(family.laws)
    queries = np.array([subset_queries(pools, secrets[r % len(secrets)], 1, rng)[0] for r in range(repetitions)])
    rows = []
    for epsilon in epsilons:
        for calibration in CALIBRATIONS:
            for name, mechanism in build_mechanisms(family, epsilon, delta, calibration, record_sensitivity).items():
                errors = np.array([np.linalg.norm(mechanism.release(x, random_seed=rng) - x) for x in queries])
                covariance = noise_covariance(mechanism, family.dim)
                rows.append(
                    {
                        "mechanism": name,
                        "calibration": calibration,
                        "epsilon": float(epsilon),
                        "error": errors.mean(),
                        "error_se": errors.std(ddof=1) / np.sqrt(repetitions),
                        "expected_error": expected_error(covariance),
                        "delta_audited": audited_delta(family, covariance, epsilon),
                    }
                )
    return pd.DataFrame(rows)
