r"""Distribution privacy mechanisms of Chen & Ohrimenko, each returned as a release mechanism and likelihood.

A mechanism is (eps, delta)-distribution private for the pairs Psi when, for every (theta_i,
theta_j) in Psi and every set S, P(M(F) in S given theta_i) <= e^eps P(M(F) in S given theta_j) + delta,
F being drawn from f_theta. Each builder below calibrates the noise from a
:class:`~.DistributionFamily` and returns the mechanism object
(release sampler and likelihood of y given F = x):

- :func:`~.wasserstein_mechanism`: Theorem 3.1, (eps, 0), a ``Laplace`` of sensitivity Delta_W;
- :func:`~.approximate_wasserstein_mechanism`: Theorems 3.2 and 3.3, (eps, delta), a ``Laplace`` of sensitivity W;
- :func:`~.expected_value_laplace`: ExpM(L), Theorem 4.1, a ``Laplace`` of sensitivity Delta_{E,1};
- :func:`~.expected_value_gaussian`: ExpM(G), Theorem 4.2, a ``Gaussian``;
- :func:`~.directional_laplace`: DirM(L), Theorem 4.3, a ``KNormMechanism`` on the line along v;
- :func:`~.eigenvector_gaussian`: EigM(G), Theorem 4.5, a :class:`~.CorrelatedGaussian`;
- :func:`~.directional_gaussian`: DauM(G), Algorithm 1, a rank-one :class:`~.CorrelatedGaussian`.

The Gaussian calibrations come in two kinds (``calibration``). "classical" is the paper's: a
pair is safe when its Mahalanobis distance is at most eps / c, c = sqrt(2 ln(1.25 / delta)),
which is proved for eps < 1 only (a warning is raised beyond; at eps = 10 and delta = 1e-3 the
actual delta is 3.4e-3). "analytic" (the default) is exact: two Gaussians with one covariance at
Mahalanobis distance m are (eps, delta)-indistinguishable exactly when

.. math::

    \delta \ge \Phi\Bigl(-\frac{\epsilon}{m} + \frac{m}{2}\Bigr)
    - e^{\epsilon} \Phi\Bigl(-\frac{\epsilon}{m} - \frac{m}{2}\Bigr),

so the largest safe m is 1 / sigma* with sigma* the analytic Gaussian sigma of sensitivity 1
(:func:`~.mahalanobis_limit`). :func:`~.release_delta` audits any Gaussian family and noise
covariance exactly: this way when the two secrets of a pair share a covariance, and by a contour
integral of the privacy loss's moment generating function when they do not (the Gaussian designs
assume shared covariances; DauM warns when a pair's actual delta exceeds the target, and its
``calibration="audited"`` sets the noise from the exact audit instead).
"""

from __future__ import annotations

import math
import warnings

import numpy as np
from scipy import integrate, linalg, optimize

from ...geometry import SensitivitySpace
from ...validation import finite_array, positive_finite, probability
from ..gaussian import Gaussian, analytic_gaussian_sigma, gaussian_delta
from ..guarantee import Guarantee
from ..laplace import Laplace
from ..semidp import KNormMechanism
from .family import DiscreteLaw, DistributionFamily, GaussianLaw, covariance_matrix
from .noise import RANK_TOLERANCE, CorrelatedGaussian
from .transport import closeness_radius, wasserstein_inf

__all__ = [
    "DistributionPrivacyWarning",
    "approximate_wasserstein_mechanism",
    "classical_constant",
    "concentration_radius",
    "directional_gaussian",
    "directional_laplace",
    "eigenvector_gaussian",
    "expected_value_gaussian",
    "expected_value_laplace",
    "mahalanobis_distances",
    "mahalanobis_limit",
    "mean_direction",
    "misspecified_guarantee",
    "noiseless_release_is_private",
    "release_delta",
    "wasserstein_correction",
    "wasserstein_mechanism",
    "wasserstein_sensitivity",
]

CALIBRATIONS = ("analytic", "classical")
#: DauM's calibrations: the two above, or the smallest noise whose exact audit meets delta.
DAUM_CALIBRATIONS = (*CALIBRATIONS, "audited")
#: The audited calibration aims this fraction below delta, so the audit's quadrature error (below 1e-9
#: relative) never carries a release past the target.
AUDIT_MARGIN = 1e-6
#: Relative width of the final bracket of the audited DauM variance.
AUDIT_TOLERANCE = 1e-4
#: Gauss-Legendre rule of the audit's contour integral, applied on each piece of the contour.
_NODES, _WEIGHTS = np.polynomial.legendre.leggauss(24)
#: The analytic Mahalanobis limit is lowered by this fraction, so float rounding in the variances
#: it sets never carries a release past the target delta.
ROUNDING_MARGIN = 1e-12
#: Relative tolerance of "parallel" (mean differences and the direction v) and of "shared" covariances.
GEOMETRY_TOLERANCE = 1e-9


class DistributionPrivacyWarning(UserWarning):
    """A calibration is used outside the range its guarantee is proved for.

    Examples
    --------
    >>> import warnings
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     limit = mahalanobis_limit(10.0, 1e-3, calibration="classical")
    >>> caught[0].category.__name__
    'DistributionPrivacyWarning'
    """


def _distribution(mechanism, epsilon: float, delta: float, construction: str):
    """``mechanism`` stating the (epsilon, delta)-distribution privacy of ``construction``."""
    return mechanism.with_guarantee(Guarantee("distribution", epsilon=epsilon, delta=delta, note=construction))


def _family(family) -> DistributionFamily:
    if not isinstance(family, DistributionFamily):
        raise ValueError(f"family must be a DistributionFamily, got {family!r}")
    return family


def _positive_sensitivity(value: float, name: str) -> float:
    if value <= 0:
        raise ValueError(f"{name} is 0: the laws of every pair coincide and F can be released without noise")
    return value


# --- the Wasserstein mechanisms (Section 3) -----------------------------------------------------


def wasserstein_sensitivity(family) -> float:
    r"""Delta_W: the largest W_inf (L1 ground metric) between the laws of a pair of Psi.

    .. math::

        \Delta_W = \sup_{(\theta_i, \theta_j) \in \Psi} W_\infty(f_{\theta_i}, f_{\theta_j}).

    References
    ----------
    .. [1] M. Chen and O. Ohrimenko, "Protecting global properties of datasets with distribution
        privacy mechanisms." Theorem 3.1.
    .. [2] S. Song, Y. Wang and K. Chaudhuri, "Pufferfish privacy mechanisms for correlated data,"
        SIGMOD 2017.

    Examples
    --------
    >>> from ppdinfer.mechanisms.distribution import DiscreteLaw, DistributionFamily
    >>> family = DistributionFamily({"mu": DiscreteLaw([1, 2, 3, 100], [0.6, 0.2, 0.0, 0.2]),
    ...                              "nu": DiscreteLaw([1, 2, 3, 100], [0.4, 0.3, 0.2, 0.1])})
    >>> wasserstein_sensitivity(family)
    97.0
    """
    laws = _family(family)._laws_of(DiscreteLaw)
    return max(wasserstein_inf(laws[i], laws[j]) for i, j in family.pairs)


def wasserstein_mechanism(family, epsilon: float) -> Laplace:
    r"""Theorem 3.1: y = F + Laplace(Delta_W / eps) per coordinate, (eps, 0)-distribution private.

    See Also
    --------
    ppdinfer.mechanisms.distribution.approximate_wasserstein_mechanism : The (eps, delta) variant.
    ppdinfer.mechanisms.distribution.wasserstein_sensitivity : Its Delta_W.

    References
    ----------
    .. [1] M. Chen and O. Ohrimenko, "Protecting global properties of datasets with distribution
        privacy mechanisms." Theorem 3.1.
    .. [2] S. Song, Y. Wang and K. Chaudhuri, "Pufferfish privacy mechanisms for correlated data,"
        SIGMOD 2017.

    Examples
    --------
    >>> from ppdinfer.mechanisms.distribution import DiscreteLaw, DistributionFamily
    >>> family = DistributionFamily({"mu": DiscreteLaw([1, 2, 3, 100], [0.6, 0.2, 0.0, 0.2]),
    ...                              "nu": DiscreteLaw([1, 2, 3, 100], [0.4, 0.3, 0.2, 0.1])})
    >>> wasserstein_mechanism(family, epsilon=1.0)
    Laplace(epsilon=1.0, sensitivity=97.0)
    """
    epsilon = positive_finite(epsilon, "epsilon")
    noise = Laplace(epsilon, _positive_sensitivity(wasserstein_sensitivity(family), "Delta_W"))
    return _distribution(noise, epsilon, 0.0, "Theorem 3.1 (Wasserstein mechanism)")


def concentration_radius(family, deviation: float) -> float:
    r"""Theorem 3.3: W = Delta_{E,1} + 2 c' makes every pair (W, delta)-close.

    It holds when ||F - E F||_1 <= c' (``deviation``) with probability at least 1 - delta / 2
    under every theta (for a :class:`~.DiscreteLaw`, its ``deviation_quantile(1 - delta / 2)``).

    References
    ----------
    .. [1] M. Chen and O. Ohrimenko, "Protecting global properties of datasets with distribution
        privacy mechanisms." Theorem 3.3.

    Examples
    --------
    >>> from ppdinfer.mechanisms.distribution import DiscreteLaw, DistributionFamily
    >>> family = DistributionFamily({"a": DiscreteLaw([0, 1, 2]), "b": DiscreteLaw([1, 2, 3])})
    >>> concentration_radius(family, deviation=1.0)
    3.0
    """
    if deviation != 0:
        deviation = positive_finite(deviation, "deviation")
    return _family(family).mean_distance(1) + 2 * deviation


def approximate_wasserstein_mechanism(family, epsilon: float, delta: float, radius: float | None = None) -> Laplace:
    r"""Theorem 3.2: y = F + Laplace(W / eps) per coordinate, (eps, delta)-distribution private.

    W is ``radius`` when given (e.g. from :func:`~.concentration_radius`; the caller vouches that every
    pair is (W, delta)-close), otherwise the smallest W making every pair of discrete laws
    (W, delta)-close, computed exactly (:func:`~.closeness_radius`).

    .. math::

        W = \max_{(\theta_i, \theta_j) \in \Psi}
        \min\{t : f_{\theta_i}, f_{\theta_j} \text{ are } (t, \delta)\text{-close}\}.

    See Also
    --------
    ppdinfer.mechanisms.distribution.wasserstein_mechanism : The (eps, 0) mechanism.
    ppdinfer.mechanisms.distribution.concentration_radius : A radius W for it.

    References
    ----------
    .. [1] M. Chen and O. Ohrimenko, "Protecting global properties of datasets with distribution
        privacy mechanisms." Theorem 3.2.

    Examples
    --------
    >>> from ppdinfer.mechanisms.distribution import DiscreteLaw, DistributionFamily
    >>> family = DistributionFamily({"mu": DiscreteLaw([1, 2, 3, 100], [0.6, 0.2, 0.0, 0.2]),
    ...                              "nu": DiscreteLaw([1, 2, 3, 100], [0.4, 0.3, 0.2, 0.1])})
    >>> approximate_wasserstein_mechanism(family, epsilon=1.0, delta=0.1)     # 97 without delta
    Laplace(epsilon=1.0, sensitivity=1.0)
    """
    epsilon = positive_finite(epsilon, "epsilon")
    delta = probability(delta, "delta")
    if radius is None:
        laws = _family(family)._laws_of(DiscreteLaw)
        radius = max(closeness_radius(laws[i], laws[j], delta) for i, j in family.pairs)
    else:
        radius = positive_finite(radius, "radius")
    noise = Laplace(epsilon, _positive_sensitivity(radius, "W"))
    return _distribution(noise, epsilon, delta, "Theorem 3.2 (approximate Wasserstein mechanism)")


# --- the expected value mechanisms (Sections 4.1 and 4.2) ---------------------------------------


def expected_value_laplace(family, epsilon: float) -> Laplace:
    r"""ExpM(L), Theorem 4.1: y = F + Laplace(Delta_{E,1} / eps) per coordinate, (eps, 0)-private.

    Assumes the laws of each pair are translates of one another.

    See Also
    --------
    ppdinfer.mechanisms.distribution.expected_value_gaussian : The Gaussian variant.

    References
    ----------
    .. [1] M. Chen and O. Ohrimenko, "Protecting global properties of datasets with distribution
        privacy mechanisms." Theorem 4.1.

    Examples
    --------
    >>> from ppdinfer.mechanisms.distribution import DistributionFamily, GaussianLaw
    >>> family = DistributionFamily({1: GaussianLaw([100, 101], np.eye(2)), 2: GaussianLaw([99, 102], np.eye(2))})
    >>> expected_value_laplace(family, epsilon=0.5)
    Laplace(epsilon=0.5, sensitivity=2.0)
    """
    epsilon = positive_finite(epsilon, "epsilon")
    noise = Laplace(epsilon, _positive_sensitivity(_family(family).mean_distance(1), "Delta_{E,1}"))
    return _distribution(noise, epsilon, 0.0, "Theorem 4.1 (ExpM(L))")


def classical_constant(delta: float) -> float:
    r"""The paper's Gaussian constant c = sqrt(2 ln(1.25 / delta)) (valid for eps < 1 only).

    References
    ----------
    .. [1] M. Chen and O. Ohrimenko, "Protecting global properties of datasets with distribution
        privacy mechanisms." Section 4.

    Examples
    --------
    >>> [round(classical_constant(d), 4) for d in (1e-4, 1e-3, 1e-2)]
    [4.3436, 3.7765, 3.1075]
    """
    return math.sqrt(2 * math.log(1.25 / probability(delta, "delta")))


def mahalanobis_limit(epsilon: float, delta: float, calibration: str = "analytic") -> float:
    r"""The largest Mahalanobis distance m between two Gaussians (one covariance) that the calibration accepts.

    .. math::

        m^\ast_{\text{classical}} = \epsilon / c, \qquad
        m^\ast_{\text{analytic}} = \max\{m : \Phi(-\epsilon/m + m/2) - e^\epsilon \Phi(-\epsilon/m - m/2) \le \delta\}.

    The analytic limit is exact (lowered by ``ROUNDING_MARGIN``); the classical one is proved
    for eps < 1 only and warns (:class:`~.DistributionPrivacyWarning`) at eps >= 1.

    References
    ----------
    .. [1] M. Chen and O. Ohrimenko, "Protecting global properties of datasets with distribution
        privacy mechanisms." Theorem 4.4.

    Examples
    --------
    >>> round(mahalanobis_limit(0.5, 1e-3, "classical"), 4), round(mahalanobis_limit(0.5, 1e-3), 4)
    (0.1324, 0.2169)
    """
    epsilon = positive_finite(epsilon, "epsilon")
    delta = probability(delta, "delta")
    if calibration not in CALIBRATIONS:
        raise ValueError(f"calibration must be one of {CALIBRATIONS}, got {calibration!r}")
    if calibration == "analytic":
        return (1 - ROUNDING_MARGIN) / analytic_gaussian_sigma(epsilon, delta)
    if epsilon >= 1:
        warnings.warn(
            f"calibration='classical' (c = sqrt(2 ln(1.25 / delta))) is proved for epsilon < 1 only; at "
            f"epsilon = {epsilon:g} the release need not be (epsilon, delta)-private (at epsilon = 10 and "
            f"delta = 1e-3 the actual delta is 3.4e-3). Use calibration='analytic'.",
            DistributionPrivacyWarning,
            stacklevel=3,
        )
    return epsilon / classical_constant(delta)


def expected_value_gaussian(family, epsilon: float, delta: float, calibration: str = "analytic") -> Gaussian:
    r"""ExpM(G), Theorem 4.2: y = F + N(0, sigma^2 I), (eps, delta)-distribution private.

    .. math::

        \sigma_{\text{classical}} = c \, \Delta_{E,2} / \epsilon, \qquad
        \sigma_{\text{analytic}} = \text{the analytic Gaussian sigma for sensitivity } \Delta_{E,2}.

    Assumes the laws of each pair are translates of one another.

    See Also
    --------
    ppdinfer.mechanisms.distribution.expected_value_laplace : The Laplace variant.
    ppdinfer.mechanisms.distribution.eigenvector_gaussian : Noise along shared eigenvectors.
    ppdinfer.mechanisms.distribution.directional_gaussian : Noise along one direction.

    References
    ----------
    .. [1] M. Chen and O. Ohrimenko, "Protecting global properties of datasets with distribution
        privacy mechanisms." Theorem 4.2.

    Examples
    --------
    >>> from ppdinfer.mechanisms.distribution import DistributionFamily, GaussianLaw
    >>> family = DistributionFamily({1: GaussianLaw([100, 101], np.eye(2)), 2: GaussianLaw([99, 102], np.eye(2))})
    >>> round(expected_value_gaussian(family, 0.5, 1e-3, calibration="classical").sigma, 4)   # 3.7765 * sqrt 2 / 0.5
    10.6815
    >>> round(expected_value_gaussian(family, 0.5, 1e-3).sigma, 4)
    6.5197
    """
    sensitivity = _positive_sensitivity(_family(family).mean_distance(2), "Delta_{E,2}")
    if calibration == "analytic":
        noise = Gaussian(analytic_gaussian_sigma(epsilon, delta, sensitivity))
    else:
        noise = Gaussian(sensitivity / mahalanobis_limit(epsilon, delta, calibration))
    return _distribution(noise, epsilon, delta, f"Theorem 4.2 (ExpM(G), {calibration} calibration)")


def mean_direction(family, direction=None) -> np.ndarray:
    r"""The unit v to which every mean difference mu_i - mu_j of Psi is parallel (Theorem 4.3, Algorithm 1).

    ``direction`` (normalized here) is checked; when omitted, the largest mean difference gives v.

    References
    ----------
    .. [1] M. Chen and O. Ohrimenko, "Protecting global properties of datasets with distribution
        privacy mechanisms." Theorem 4.3 and Algorithm 1.

    Examples
    --------
    >>> from ppdinfer.mechanisms.distribution import DistributionFamily, GaussianLaw
    >>> family = DistributionFamily({1: GaussianLaw([100, 101], np.eye(2)), 2: GaussianLaw([99, 102], np.eye(2))})
    >>> mean_direction(family).round(4)
    array([ 0.7071, -0.7071])
    """
    differences = _family(family).mean_differences()
    norms = np.linalg.norm(differences, axis=1)
    if direction is None:
        direction = differences[np.argmax(norms)]
    direction = finite_array(direction, "direction")
    if direction.shape != (family.dim,) or not np.any(direction):
        raise ValueError(f"direction must be a nonzero vector of length {family.dim}, got {direction!r}")
    direction = direction / np.linalg.norm(direction)
    off = np.linalg.norm(differences - np.outer(differences @ direction, direction), axis=1)
    bad = np.flatnonzero(off > GEOMETRY_TOLERANCE * np.maximum(norms, 1e-300))
    if bad.size:
        raise ValueError(
            f"direction: the mean difference of pair {family.pairs[bad[0]]!r} is not parallel to "
            f"v = {direction.round(6)!r}; the directional mechanisms need every mu_i - mu_j parallel to v"
        )
    return direction


def directional_laplace(family, epsilon: float, direction=None) -> KNormMechanism:
    r"""DirM(L), Theorem 4.3: y = F + Y v with Y ~ Laplace(Delta_{E,2} / eps), (eps, 0)-private.

    The noise lies on the line through F along v; the component of F orthogonal to v is released
    exactly. The mechanism is the K-norm mechanism on span(v) with K = [-Delta_{E,2}, Delta_{E,2}] v,
    whose ``logpdf`` is the density on the line x + R v,

    .. math::

        \log \pi(y \mid x) = \log \frac{\epsilon}{2 \Delta_{E,2}}
        - \frac{\epsilon \lvert v^\top (y - x) \rvert}{\Delta_{E,2}}
        \quad \text{on the line}, \qquad -\infty \text{ off it.}

    See Also
    --------
    ppdinfer.mechanisms.distribution.directional_gaussian : The Gaussian variant.

    References
    ----------
    .. [1] M. Chen and O. Ohrimenko, "Protecting global properties of datasets with distribution
        privacy mechanisms." Theorem 4.3.

    Examples
    --------
    >>> from ppdinfer.mechanisms.distribution import DistributionFamily, GaussianLaw
    >>> family = DistributionFamily({1: GaussianLaw([100, 101], np.eye(2)), 2: GaussianLaw([99, 102], np.eye(2))})
    >>> mechanism = directional_laplace(family, epsilon=1.0)
    >>> x = np.array([100.0, 101.0])
    >>> mechanism.logpdf(x, [x, x + [1.0, 0.0]]).round(4)          # log(1 / (2 sqrt 2)); off the line
    array([-1.0397,    -inf])
    """
    epsilon = positive_finite(epsilon, "epsilon")
    sensitivity = _positive_sensitivity(_family(family).mean_distance(2), "Delta_{E,2}")
    direction = mean_direction(family, direction)
    noise = KNormMechanism(epsilon, SensitivitySpace([sensitivity * direction]))
    return _distribution(noise, epsilon, 0.0, "Theorem 4.3 (DirM(L))")


# --- adversarial uncertainty: Gaussian laws (Section 4.3 and Appendix A) ------------------------


def _noise(covariance, dim: int) -> np.ndarray:
    return np.zeros((dim, dim)) if covariance is None else covariance_matrix(covariance, "noise_covariance", dim)


def mahalanobis_distances(family, noise_covariance=None) -> np.ndarray:
    r"""Per pair of Psi, m_ij = sqrt((mu_i - mu_j)^T (Sigma_i + C)^{-1} (mu_i - mu_j)) (Theorem 4.4, Corollary A.1).

    C is the noise covariance (none by default). Sigma_i + C must be positive definite.

    References
    ----------
    .. [1] M. Chen and O. Ohrimenko, "Protecting global properties of datasets with distribution
        privacy mechanisms." Theorem 4.4.

    Examples
    --------
    >>> from ppdinfer.mechanisms.distribution import DistributionFamily, GaussianLaw
    >>> sigma = [[22, -6], [-6, 13]]
    >>> family = DistributionFamily({1: GaussianLaw([100, 101], sigma), 2: GaussianLaw([99, 102], sigma)})
    >>> mahalanobis_distances(family).round(4)                     # sqrt(23 / 250)
    array([0.3033, 0.3033])
    """
    laws = _family(family)._laws_of(GaussianLaw)
    noise = _noise(noise_covariance, family.dim)
    distances = []
    for (i, _), difference in zip(family.pairs, family.mean_differences()):
        try:
            factor = linalg.cho_factor(laws[i].covariance + noise)
        except linalg.LinAlgError:
            raise ValueError(
                f"the covariance of theta = {i!r} plus the noise covariance must be positive definite"
            ) from None
        distances.append(math.sqrt(max(float(difference @ linalg.cho_solve(factor, difference)), 0.0)))
    return np.array(distances)


def noiseless_release_is_private(
    family, epsilon: float, delta: float, calibration: str = "analytic", noise_covariance=None
) -> bool:
    r"""Theorem 4.4 (Corollary A.1 with noise covariance C): is F (+ N(0, C)) (eps, delta)-private?

    .. math::

        (\mu_i - \mu_j)^\top (\Sigma_i + C)^{-1} (\mu_i - \mu_j) \le m^{\ast 2}
        \quad \text{for every } (\theta_i, \theta_j) \in \Psi,

    with m* from :func:`~.mahalanobis_limit` ((eps / c)^2 in the paper). Assumes Sigma_i = Sigma_j
    within each pair.

    See Also
    --------
    ppdinfer.mechanisms.distribution.release_delta : The exact delta of such a release.
    ppdinfer.mechanisms.distribution.mahalanobis_distances : The distances it compares.

    References
    ----------
    .. [1] M. Chen and O. Ohrimenko, "Protecting global properties of datasets with distribution
        privacy mechanisms." Theorem 4.4 and Corollary A.1.

    Examples
    --------
    >>> from ppdinfer.mechanisms.distribution import DistributionFamily, GaussianLaw
    >>> sigma = [[22, -6], [-6, 13]]
    >>> family = DistributionFamily({1: GaussianLaw([100, 101], sigma), 2: GaussianLaw([99, 102], sigma)})
    >>> noiseless_release_is_private(family, 0.9, 1e-3, "classical"), noiseless_release_is_private(family, 0.9, 1e-3)
    (False, True)
    """
    limit = mahalanobis_limit(epsilon, delta, calibration)
    return bool(np.all(mahalanobis_distances(family, noise_covariance) <= limit))


def eigenvector_gaussian(
    family, epsilon: float, delta: float, calibration: str = "analytic", basis=None
) -> CorrelatedGaussian:
    r"""EigM(G), Theorem 4.5: y = F + N(0, sum_k sigma_k^2 v_k v_k^T) along shared eigenvectors v_k.

    .. math::

        \sigma_k^2 = \max_{\theta} \max\bigl(0, (\Delta_{E,2} / m^\ast)^2 - \lambda_{\theta,k}\bigr),
        \qquad \lambda_{\theta,k} = v_k^\top \Sigma_\theta v_k,

    with (Delta_{E,2} / m*)^2 = (c Delta_{E,2} / eps)^2 in the paper's calibration. lambda_{theta,k}
    are the eigenvalues of Sigma_theta (the paper calls them squared eigenvalues: an erratum). The
    basis v_k (columns of ``basis``, orthonormal) defaults to the eigenvectors of the pooled
    covariance, the mean of the Sigma_theta, as in the authors' code. The guarantee rests on
    Corollary A.2, min eig(Sigma_theta + C) >= (Delta_{E,2} / m*)^2 for every theta; when the
    basis does not diagonalize every Sigma_theta this can fail, and a
    :class:`~.DistributionPrivacyWarning` says so. Directions with sigma_k = 0 get no noise (the
    release is exact along them; see :class:`~.CorrelatedGaussian`).

    See Also
    --------
    ppdinfer.mechanisms.distribution.expected_value_gaussian : Isotropic noise.
    ppdinfer.mechanisms.distribution.directional_gaussian : Noise along one direction.

    References
    ----------
    .. [1] M. Chen and O. Ohrimenko, "Protecting global properties of datasets with distribution
        privacy mechanisms." Theorem 4.5.

    Examples
    --------
    >>> from ppdinfer.mechanisms.distribution import DistributionFamily, GaussianLaw
    >>> sigma = [[22, -6], [-6, 13]]
    >>> family = DistributionFamily({1: GaussianLaw([100, 101], sigma), 2: GaussianLaw([99, 102], sigma)})
    >>> import warnings
    >>> with warnings.catch_warnings(action="ignore"):    # the paper's example: eps = 1, classical c
    ...     mechanism = eigenvector_gaussian(family, 1.0, 1e-3, calibration="classical")
    >>> v1, v2 = np.array([1, 2]) / np.sqrt(5), np.array([2, -1]) / np.sqrt(5)
    >>> round(float(v1 @ mechanism.covariance @ v1), 2), round(float(v2 @ mechanism.covariance @ v2), 2)
    (18.52, 3.52)
    """
    laws = _family(family)._laws_of(GaussianLaw)
    target = (
        _positive_sensitivity(family.mean_distance(2), "Delta_{E,2}") / mahalanobis_limit(epsilon, delta, calibration)
    ) ** 2
    if basis is None:
        basis = np.linalg.eigh(np.mean([law.covariance for law in laws.values()], axis=0))[1]
    basis = finite_array(basis, "basis")
    if basis.shape != (family.dim, family.dim) or not np.allclose(basis.T @ basis, np.eye(family.dim), atol=1e-9):
        raise ValueError(f"basis must be an orthonormal {family.dim} x {family.dim} matrix (eigenvectors as columns)")
    eigenvalues = np.array([np.einsum("ik,ij,jk->k", basis, law.covariance, basis) for law in laws.values()])
    variances = np.maximum(target - eigenvalues, 0.0).max(axis=0)
    covariance = (basis * variances) @ basis.T
    for label, law in laws.items():
        if np.linalg.eigvalsh(law.covariance + covariance).min() < target * (1 - GEOMETRY_TOLERANCE):
            warnings.warn(
                f"the basis does not diagonalize the covariance of theta = {label!r}: min eig(Sigma + C) is below "
                f"(Delta_E2 / m*)^2 = {target:.6g}, so Theorem 4.5 does not apply; audit the release with "
                "release_delta or bound it with misspecified_guarantee",
                DistributionPrivacyWarning,
                stacklevel=2,
            )
    return _distribution(CorrelatedGaussian(covariance), epsilon, delta, "Theorem 4.5 (EigM(G))")


def directional_gaussian(
    family, epsilon: float, delta: float, calibration: str = "analytic", direction=None
) -> CorrelatedGaussian:
    r"""DauM(G), Algorithm 1: y = F + N(0, sigma^2 v v^T), sigma^2 in closed form or from the exact audit.

    The smallest sigma^2 making Sigma_i + (sigma^2 - (alpha_ij / m*)^2) v v^T positive
    semi-definite, alpha_ij = (mu_i - mu_j)^T v, follows from the matrix determinant lemma
    (det(Sigma + t v v^T) = det(Sigma) (1 + t v^T Sigma^{-1} v)):

    .. math::

        \sigma^2 = \max_{(\theta_i, \theta_j) \in \Psi}
        \max\Bigl(0, \Bigl(\frac{\alpha_{ij}}{m^\ast}\Bigr)^2 - \frac{1}{v^\top \Sigma_i^{-1} v}\Bigr),

    with 1 / m* = c / eps in the paper's calibration (the authors bisect to 0.001 instead). Then
    every pair is at Mahalanobis distance at most m* (Corollary A.1), which makes the release
    (eps, delta)-private when Sigma_i = Sigma_j within each pair. When a pair's covariances differ
    the closed form can miss: a :class:`~.DistributionPrivacyWarning` gives the actual delta
    (:func:`~.release_delta`, per-secret covariances) whenever it exceeds ``delta``.
    ``calibration="audited"`` instead takes the smallest sigma^2 whose exact audit meets delta,

    .. math::

        \sigma^2 = \min\{s \ge 0 : \texttt{release\_delta}(F, s \, v v^\top, \epsilon) \le \delta\},

    by bisection (the audit decreases in s: more noise is post-processing), to a relative 1e-4,
    aiming ``AUDIT_MARGIN`` below delta. Noise along v cannot hide a difference across v: the
    audit tends, as s grows, to the delta of the laws' parts orthogonal to v, and when that
    reaches delta no sigma^2 does and a ValueError says so.

    The noise lies on the line through F along v: the component of F orthogonal to v is released
    exactly; ``logpdf`` is the density on that line, -inf off it (and with sigma^2 = 0 the release
    is F itself).

    Parameters
    ----------
    family : DistributionFamily
        Gaussian laws whose mean differences are all parallel to one direction.
    epsilon, delta : float
        The target guarantee.
    calibration : {"analytic", "classical", "audited"}
        The closed form with the exact (analytic) or the paper's (classical) Mahalanobis limit,
        or the exact audit with the per-secret covariances.
    direction : array_like, optional
        v (see :func:`~.mean_direction`).

    Returns
    -------
    CorrelatedGaussian

    See Also
    --------
    ppdinfer.mechanisms.distribution.directional_laplace : The Laplace variant.
    ppdinfer.mechanisms.distribution.eigenvector_gaussian : Noise along shared eigenvectors.

    References
    ----------
    .. [1] M. Chen and O. Ohrimenko, "Protecting global properties of datasets with distribution
        privacy mechanisms." Algorithm 1.

    Examples
    --------
    >>> from ppdinfer.mechanisms.distribution import DistributionFamily, GaussianLaw
    >>> sigma = [[22, -6], [-6, 13]]
    >>> family = DistributionFamily({1: GaussianLaw([100, 101], sigma), 2: GaussianLaw([99, 102], sigma)})
    >>> mechanism = directional_gaussian(family, 0.5, 1e-3, calibration="classical")
    >>> round(float(np.trace(mechanism.covariance)), 4), mechanism.rank   # (2 sqrt 2 c)^2 - 1 / (23 / 500)
    (92.3553, 1)

    Two secrets whose covariances differ across v (the noise along v = (1, 0) cannot hide it):

    >>> unequal = DistributionFamily({0: GaussianLaw([0, 0], np.eye(2)), 1: GaussianLaw([1, 0], np.diag([1, 1.2]))})
    >>> import warnings
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     closed = directional_gaussian(unequal, 1.0, 1e-3)
    >>> caught[0].category.__name__
    'DistributionPrivacyWarning'
    >>> audited = directional_gaussian(unequal, 1.0, 1e-3, calibration="audited")
    >>> f"{release_delta(unequal, closed.covariance, 1.0):.2e}", f"{release_delta(unequal, audited.covariance, 1.0):.2e}"
    ('2.45e-03', '1.00e-03')
    """
    if calibration not in DAUM_CALIBRATIONS:
        raise ValueError(f"calibration must be one of {DAUM_CALIBRATIONS}, got {calibration!r}")
    laws = _family(family)._laws_of(GaussianLaw)
    direction = mean_direction(family, direction)
    if calibration == "audited":
        noise = CorrelatedGaussian(
            _audited_variance(family, epsilon, delta, direction) * np.outer(direction, direction)
        )
        return _distribution(noise, epsilon, delta, "Algorithm 1 (DauM(G), audited)")
    variance = _closed_form_variance(family, direction, mahalanobis_limit(epsilon, delta, calibration))
    mechanism = CorrelatedGaussian(variance * np.outer(direction, direction))
    unequal = [(i, j) for i, j in family.pairs if not _shared_covariance(laws[i], laws[j])]
    if unequal:
        actual = release_delta(family, mechanism.covariance, epsilon)
        if actual > delta:
            warnings.warn(
                f"DauM's calibration assumes Sigma_i = Sigma_j in each pair, but theta = {unequal[0][0]!r} and "
                f"{unequal[0][1]!r} have different covariances: the release's actual delta at epsilon = {epsilon:g} "
                f"is {actual:.3g}, not {delta:g} (release_delta audits it). Use calibration='audited' for noise "
                "calibrated to the per-secret covariances.",
                DistributionPrivacyWarning,
                stacklevel=2,
            )
    return _distribution(mechanism, epsilon, delta, f"Algorithm 1 (DauM(G), {calibration} calibration)")


def _closed_form_variance(family, direction: np.ndarray, limit: float) -> float:
    """Algorithm 1's sigma^2: every pair at Mahalanobis distance at most ``limit``, Sigma_i taken as shared."""
    variance = 0.0
    for (i, _), difference in zip(family.pairs, family.mean_differences()):
        try:
            factor = linalg.cho_factor(family.laws[i].covariance)
        except linalg.LinAlgError:
            raise ValueError(f"the covariance of theta = {i!r} must be positive definite for DauM") from None
        precision_along = float(direction @ linalg.cho_solve(factor, direction))
        variance = max(variance, (float(difference @ direction) / limit) ** 2 - 1 / precision_along)
    return variance


def _shared_covariance(law_i: GaussianLaw, law_j: GaussianLaw) -> bool:
    """Whether two Gaussian laws have one covariance (to ``GEOMETRY_TOLERANCE``, relative)."""
    return bool(np.allclose(law_i.covariance, law_j.covariance, rtol=GEOMETRY_TOLERANCE, atol=0.0))


def _audited_variance(family, epsilon: float, delta: float, direction: np.ndarray) -> float:
    """The smallest s with release_delta(family, s v v^T, eps) <= delta (1 - AUDIT_MARGIN), by bisection."""
    epsilon, delta = positive_finite(epsilon, "epsilon"), probability(delta, "delta")
    target = delta * (1 - AUDIT_MARGIN)
    line = np.outer(direction, direction)

    def meets(variance: float) -> bool:
        return release_delta(family, variance * line, epsilon) <= target

    if meets(0.0):
        return 0.0
    across = np.linalg.svd(line)[0][:, 1:]  # an orthonormal basis of the complement of v
    floor = 0.0
    if across.shape[1]:
        floor = release_delta(
            DistributionFamily(
                {
                    label: GaussianLaw(across.T @ law.mean, across.T @ law.covariance @ across)
                    for label, law in family.laws.items()
                },
                family.pairs,
            ),
            None,
            epsilon,
        )
    if floor >= target:
        raise ValueError(
            f"delta = {delta:g} cannot be met at epsilon = {epsilon:g} with noise along v alone: the secrets' laws "
            f"differ across v (their covariances), and even unbounded noise along v leaves delta = {floor:.3g}. "
            "Add noise across v as well (eigenvector_gaussian, audited with release_delta) or ask for a larger delta"
        )
    high = max(
        _closed_form_variance(family, direction, mahalanobis_limit(epsilon, delta)),
        1e-12 * max(float(direction @ law.covariance @ direction) for law in family.laws.values()),
    )
    start, low = high, high / 2
    while meets(low):  # the exact answer is often near the closed form: bracket it from there
        low, high = low / 2, low
        if low < 1e-12 * start:
            low = 0.0
            break
    while not meets(high):
        low, high = high, 2 * high
    while high - low > AUDIT_TOLERANCE * high:
        middle = (low + high) / 2
        low, high = (low, middle) if meets(middle) else (middle, high)
    return high


def release_delta(family, noise_covariance, epsilon: float) -> float:
    r"""The exact delta at ``epsilon`` of releasing F + N(0, C) for Gaussian laws F ~ N(mu_theta, Sigma_theta).

    Under theta_i and theta_j the release is P_i = N(mu_i, Sigma_i + C) and P_j = N(mu_j, Sigma_j + C),
    and delta is the largest hockey-stick divergence over the pairs,

    .. math::

        \delta(\epsilon) = \max_{(\theta_i, \theta_j) \in \Psi} \sup_S P_i(S) - e^{\epsilon} P_j(S)
        = \max_{(\theta_i, \theta_j) \in \Psi} E_{P_i}\bigl[(1 - e^{\epsilon - L})_+\bigr],
        \qquad L = \log \frac{dP_i}{dP_j}.

    When Sigma_i = Sigma_j, whitened, the two are unit Gaussians at distance m_ij
    (:func:`~.mahalanobis_distances`), whose exact privacy curve is the mu-GDP one
    (``ppdinfer.privacy.gdp_delta``, computed by ``gaussian_delta`` with sigma = 1):

    .. math::

        \delta_{ij}(\epsilon) = \Phi\Bigl(-\frac{\epsilon}{m_{ij}} + \frac{m_{ij}}{2}\Bigr)
        - e^{\epsilon} \Phi\Bigl(-\frac{\epsilon}{m_{ij}} - \frac{m_{ij}}{2}\Bigr).

    Otherwise L is a quadratic form of a Gaussian, and with its moment generating function
    M(s) = E_{P_i} e^{s L} (closed form: a product over the eigenvalues of Sigma_j + C in the
    metric of Sigma_i + C) and the Laplace transform 1 / (s (s + 1)) of u -> (1 - e^{-u})_+,

    .. math::

        \delta_{ij}(\epsilon) = \frac{1}{\pi} \int_0^\infty
        \operatorname{Re} \frac{M(c + i t) \, e^{-(c + i t) \epsilon}}{(c + i t)(c + i t + 1)} \, dt,

    on the line Re s = c at the saddle point, by Gauss-Legendre quadrature and an oscillatory
    (QAWF) tail: to about 1e-9 relative (checked against the closed form and against quadrature
    of the release laws).

    Parameters
    ----------
    family : DistributionFamily
        Gaussian laws; Sigma_theta + C must be positive definite.
    noise_covariance : array_like or None
        C, shape (m, m) (None: F released without noise).
    epsilon : float

    Returns
    -------
    float

    References
    ----------
    .. [1] M. Chen and O. Ohrimenko, "Protecting global properties of datasets with distribution
        privacy mechanisms." Theorem 4.4.

    Examples
    --------
    >>> from ppdinfer.mechanisms.distribution import DistributionFamily, GaussianLaw
    >>> sigma = [[22, -6], [-6, 13]]
    >>> family = DistributionFamily({1: GaussianLaw([100, 101], sigma), 2: GaussianLaw([99, 102], sigma)})
    >>> f"{release_delta(family, None, epsilon=1.0):.3g}"       # F released without noise
    '6.37e-05'
    >>> unequal = DistributionFamily({1: GaussianLaw([100, 101], sigma), 2: GaussianLaw([99, 102], np.eye(2) * 20)})
    >>> f"{release_delta(unequal, None, epsilon=1.0):.3g}"
    '0.0543'
    """
    epsilon = positive_finite(epsilon, "epsilon")
    laws = _family(family)._laws_of(GaussianLaw)
    noise = _noise(noise_covariance, family.dim)
    distances = mahalanobis_distances(family, noise_covariance)
    worst = 0.0
    for (i, j), distance in zip(family.pairs, distances):
        if _shared_covariance(laws[i], laws[j]):
            pair = gaussian_delta(1.0, epsilon, distance) if distance > 0 else 0.0  # = gdp_delta(m, epsilon)
        else:
            pair = _hockey_stick(
                laws[i].mean, laws[i].covariance + noise, laws[j].mean, laws[j].covariance + noise, epsilon, j
            )
        worst = max(worst, pair)
    return worst


def _hockey_stick(mean_i, cov_i, mean_j, cov_j, epsilon: float, label_j) -> float:
    """sup_S P_i(S) - e^eps P_j(S) for P = N(mean, cov), cov_i positive definite: the contour integral."""
    unwhiten = np.linalg.inv(np.linalg.cholesky(cov_i))  # small m x m: cheaper than triangular solves
    whitened = unwhiten @ cov_j @ unwhiten.T
    lam, rotation = np.linalg.eigh((whitened + whitened.T) / 2)
    if lam.min() <= RANK_TOLERANCE * lam.max():
        raise ValueError(f"the covariance of theta = {label_j!r} plus the noise covariance must be positive definite")
    # whitened, P_i = N(0, I) and P_j = N(e, diag(lam)); L = log dP_i / dP_j
    e2 = (rotation.T @ unwhiten @ (mean_j - mean_i)) ** 2
    log_lam = np.log(lam)
    curved = np.abs(lam - 1) > 1e-12
    frequency = float(np.sum(e2[curved] / (2 * (lam[curved] - 1))) + log_lam.sum() / 2) - epsilon
    if np.all(lam >= 1) and not np.any(e2[~curved] > 0) and frequency <= 0:
        return 0.0  # frequency + epsilon = sup L: the loss never exceeds epsilon

    def exponent(s):
        """log M(s) - s eps - log(s (s + 1)), for complex s of any shape."""
        s = np.asarray(s)
        a = 1 + s[..., None]
        d = 1 + a * (lam - 1)
        log_mgf = np.sum(a * (a - 1) / 2 * e2 / d - np.log(d) / 2 + a / 2 * log_lam, axis=-1)
        return log_mgf - s * epsilon - np.log(s * (s + 1))

    def slope(s):
        """d exponent / ds: its real part is how fast the phase of the integrand turns along the line."""
        s = np.asarray(s)
        a = 1 + s[..., None]
        d = 1 + a * (lam - 1)
        return (
            np.sum(
                e2 * ((2 * a - 1) / (2 * d) - a * (a - 1) * (lam - 1) / (2 * d**2)) - (lam - 1) / (2 * d) + log_lam / 2,
                axis=-1,
            )
            - epsilon
            - (2 * s + 1) / (s * (s + 1))
        )

    below = lam < 1  # M(c) is finite for c < lam / (1 - lam)
    c_max = min(float(np.min(lam[below] / (1 - lam[below]))) * (1 - 1e-9) if below.any() else np.inf, 1e8)
    # the saddle point: exponent(c) is convex on (0, c_max) and its minimum the Chernoff bound
    saddle = optimize.minimize_scalar(
        lambda u: float(exponent(math.exp(u)).real),
        bounds=(math.log(1e-10), math.log(c_max)),
        method="bounded",
        options={"xatol": 1e-10},
    )
    c = math.exp(saddle.x)
    peak = float(exponent(c).real)
    step = 1e-4 * c
    width = 1 / math.sqrt(max(float((exponent(c + step) - 2 * peak + exponent(c - step)).real) / step**2, 1e-300))

    def integrand(t):
        return np.exp(exponent(c + 1j * t) - peak)

    # far out the integrand is t^(-2 - r / 2) e^{i frequency t} (r: the eigenvalues lam != 1)
    settled = 40 * max(width, float(np.max(np.abs(lam[curved] / (lam[curved] - 1)), initial=0.0)))
    end = 40 * width
    while abs(integrand(end)) * end > 1e-13 and end < settled:
        end *= 2
    first = min(width, c) / 4
    edges = np.geomspace(first, end, max(int(math.log(end / first) / math.log(1.1)), 1) + 1)
    rate = np.abs(slope(c + 1j * edges).real)  # how fast the integrand turns there
    rate = np.maximum(rate[:-1], rate[1:])
    finer = [
        np.linspace(a, b, min(math.ceil((b - a) * r), 10_000) + 1)
        for a, b, r in zip(edges[:-1], edges[1:], rate)
        if (b - a) * r > 1
    ]
    edges = np.unique(np.concatenate([[0.0], edges, *finer]))
    half = np.diff(edges)[:, None] / 2
    total = float(np.sum(half * _WEIGHTS * integrand(edges[:-1, None] + half * (_NODES + 1)).real))
    if abs(integrand(end)) * end > 1e-13:
        if abs(frequency) * end > 1:
            smooth = lambda t: integrand(t) * np.exp(-1j * frequency * t)  # noqa: E731
            total += (
                integrate.quad(lambda t: smooth(t).real, end, np.inf, weight="cos", wvar=frequency, limlst=200)[0]
                - integrate.quad(lambda t: smooth(t).imag, end, np.inf, weight="sin", wvar=frequency, limlst=200)[0]
            )
        else:
            total += integrate.quad(lambda t: integrand(t).real, end, np.inf, limit=2000)[0]
    return min(max(0.0, math.exp(peak) * total / math.pi), 1.0)


# --- misspecified models (Section 4.4) ----------------------------------------------------------


def misspecified_guarantee(epsilon: float, delta: float, slack: float, eta: float) -> Guarantee:
    r"""Theorem 4.6: the guarantee of an (eps, delta) mechanism calibrated on approximations f~_theta.

    If max(D_inf^eta(f~_theta || f_theta), D_inf^eta(f_theta || f~_theta)) <= lambda (``slack``)
    for every theta, and the release depends on the data only through F, it is (eps', delta')-private:

    .. math::

        \epsilon' = \epsilon + 2 \lambda, \qquad \delta' = (1 + e^{\epsilon + \lambda}) \eta + e^{\lambda} \delta.

    See Also
    --------
    ppdinfer.mechanisms.distribution.wasserstein_correction : Theorem 4.7's correction.

    References
    ----------
    .. [1] M. Chen and O. Ohrimenko, "Protecting global properties of datasets with distribution
        privacy mechanisms." Theorem 4.6.

    Examples
    --------
    >>> guarantee = misspecified_guarantee(1.0, 1e-3, slack=0.1, eta=1e-4)
    >>> round(guarantee.epsilon, 4), round(guarantee.delta, 6)     # (1 + e^1.1) 1e-4 + e^0.1 1e-3
    (1.2, 0.001506)
    """
    epsilon = positive_finite(epsilon, "epsilon")
    delta = probability(delta, "delta", open_interval=False)
    slack = positive_finite(slack, "slack")
    eta = probability(eta, "eta", open_interval=False)
    delta_out = (1 + math.exp(epsilon + slack)) * eta + math.exp(slack) * delta
    return Guarantee("distribution", epsilon=epsilon + 2 * slack, delta=delta_out, note="Theorem 4.6")


def wasserstein_correction(epsilon: float, delta: float, slack: float, distance: float) -> tuple[Laplace, Guarantee]:
    r"""Theorem 4.7: extra Laplace(W / lambda) noise restores (eps + 2 lambda, e^lambda delta) under misspecification.

    W (``distance``) = sup over theta of W_inf(f_theta, f~_theta) (L1 ground metric, e.g. from
    :func:`~.wasserstein_inf`), lambda = ``slack``. Returns the
    extra noise, to add per coordinate to the release of the mechanism calibrated on f~, and the
    guarantee of the sum. (The likelihood of the sum is a convolution, not built here.)

    .. math::

        Z'_k \sim \operatorname{Laplace}(W / \lambda), \qquad
        \epsilon' = \epsilon + 2 \lambda, \qquad \delta' = e^{\lambda} \delta.

    See Also
    --------
    ppdinfer.mechanisms.distribution.misspecified_guarantee : Theorem 4.6's guarantee.

    References
    ----------
    .. [1] M. Chen and O. Ohrimenko, "Protecting global properties of datasets with distribution
        privacy mechanisms." Theorem 4.7.

    Examples
    --------
    >>> noise, guarantee = wasserstein_correction(1.0, 1e-3, slack=0.5, distance=0.2)
    >>> noise, round(guarantee.epsilon, 4), round(guarantee.delta, 6)
    (Laplace(epsilon=0.5, sensitivity=0.2), 2.0, 0.001649)
    """
    epsilon = positive_finite(epsilon, "epsilon")
    delta = probability(delta, "delta", open_interval=False)
    slack = positive_finite(slack, "slack")
    noise = Laplace(slack, positive_finite(distance, "distance"))
    return noise, Guarantee(
        "distribution", epsilon=epsilon + 2 * slack, delta=math.exp(slack) * delta, note="Theorem 4.7"
    )
