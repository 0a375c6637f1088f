"""Gaussian and discrete Gaussian noise mechanisms, with (epsilon, delta) calibrations."""

from __future__ import annotations

import math
from fractions import Fraction
from typing import TYPE_CHECKING

import numpy as np
from scipy import optimize, special

from ..validation import positive_finite, probability, unit_parameter
from . import exact_integer
from .base import AdditiveNoiseMechanism, recorded
from .guarantee import Guarantee

if TYPE_CHECKING:
    import mpmath


def classical_gaussian_sigma(epsilon: float, delta: float, sensitivity: float = 1.0) -> float:
    """sigma = sensitivity * sqrt(2 log(1.25 / delta)) / epsilon (Dwork & Roth 2014, Thm A.1).

    The classical bound is proved for epsilon < 1 only.

    See Also
    --------
    ppdinfer.mechanisms.analytic_gaussian_sigma : The exact calibration, valid at every epsilon.

    References
    ----------
    .. [1] C. Dwork and A. Roth, "The algorithmic foundations of differential privacy," Foundations and
        Trends in Theoretical Computer Science 9(3-4), 2014.

    Examples
    --------
    >>> round(classical_gaussian_sigma(0.5, 1e-5), 3)
    9.69
    """
    epsilon = positive_finite(epsilon, "epsilon")
    delta = probability(delta, "delta")
    sensitivity = positive_finite(sensitivity, "sensitivity")
    if epsilon >= 1:
        raise ValueError(
            f"epsilon must be < 1 for the classical Gaussian calibration, got {epsilon}; use method='analytic'"
        )
    return sensitivity * math.sqrt(2 * math.log(1.25 / delta)) / epsilon


def gaussian_delta(sigma: float, epsilon: float, sensitivity: float = 1.0) -> float:
    """The smallest delta for which N(0, sigma^2) noise is (epsilon, delta)-DP (Balle & Wang 2018, Thm 8).

    delta = Phi(a) - e^epsilon Phi(b) with a = r / 2 - epsilon / r, b = -r / 2 - epsilon / r and
    r = sensitivity / sigma, evaluated as Phi(a) (1 - exp(epsilon + log Phi(b) - log Phi(a))) on
    the log scale: no overflow of e^epsilon and no cancellation between the two terms' tails.

    See Also
    --------
    ppdinfer.mechanisms.analytic_gaussian_sigma : Its inverse in sigma.
    ppdinfer.privacy.gdp_delta : The same curve in terms of mu-GDP.

    References
    ----------
    .. [1] B. Balle and Y.-X. Wang, "Improving the Gaussian mechanism for differential privacy:
        analytical calibration and optimal denoising," ICML 2018.

    Examples
    --------
    >>> round(gaussian_delta(sigma=1.0, epsilon=1.0), 4)
    0.1269
    >>> gaussian_delta(sigma=1.0, epsilon=800.0)  # e^800 overflows a float; the log scale does not
    0.0
    """
    ratio = sensitivity / sigma
    log_a = float(special.log_ndtr(ratio / 2 - epsilon / ratio))
    if log_a == -math.inf:
        return 0.0
    log_b = float(special.log_ndtr(-ratio / 2 - epsilon / ratio))
    return max(0.0, -math.expm1(epsilon + log_b - log_a) * math.exp(log_a))


def gaussian_delta_precise(sigma: float, epsilon: float, sensitivity: float) -> mpmath.mpf:
    """gaussian_delta in 60-digit arithmetic (mpmath), to certify a calibration."""
    import mpmath

    with mpmath.workdps(60):
        ratio = mpmath.mpf(sensitivity) / mpmath.mpf(sigma)
        epsilon = mpmath.mpf(epsilon)
        return +(
            mpmath.ncdf(ratio / 2 - epsilon / ratio) - mpmath.exp(epsilon) * mpmath.ncdf(-ratio / 2 - epsilon / ratio)
        )


def analytic_gaussian_sigma(epsilon: float, delta: float, sensitivity: float = 1.0) -> float:
    """The smallest sigma with gaussian_delta(sigma, epsilon) <= delta (Balle & Wang 2018), conservatively.

    The root is found in floating point, then certified in 60-digit arithmetic: sigma is raised
    (by relative steps from 2^-50, doubling) until delta(sigma) <= delta holds in that arithmetic,
    so the returned sigma never gives more than the target delta; it exceeds the smallest such
    sigma by less than 1e-8 relative (measured for epsilon in [1e-6, 1000], delta in [1e-100, 0.9]).

    See Also
    --------
    ppdinfer.mechanisms.gaussian_delta : The delta it inverts.
    ppdinfer.mechanisms.classical_gaussian_sigma : The classical calibration.

    References
    ----------
    .. [1] B. Balle and Y.-X. Wang, "Improving the Gaussian mechanism for differential privacy:
        analytical calibration and optimal denoising," ICML 2018.

    Examples
    --------
    >>> sigma = analytic_gaussian_sigma(1.0, 1e-5)
    >>> round(sigma, 3), round(gaussian_delta(sigma, 1.0) / 1e-5, 6)
    (3.731, 1.0)
    """
    epsilon = positive_finite(epsilon, "epsilon")
    delta = probability(delta, "delta")
    sensitivity = positive_finite(sensitivity, "sensitivity")
    excess = lambda log_sigma: gaussian_delta(math.exp(log_sigma), epsilon, sensitivity) - delta  # noqa: E731
    low, high = math.log(sensitivity) - 10, math.log(sensitivity) + 10
    while excess(high) > 0:
        high += 10
    while excess(low) < 0:
        low -= 10
    sigma = math.exp(optimize.brentq(excess, low, high, xtol=1e-15, rtol=1e-15))
    return raise_until(sigma, lambda s: gaussian_delta_precise(s, epsilon, sensitivity) <= delta)


def raise_until(value: float, holds) -> float:
    """The floating-point root ``value`` raised by relative steps from 2^-50, doubling, until
    ``holds(value)`` (a check in high precision); from 0 the first step is 2^-50 itself."""
    step = 2.0**-50
    while not holds(value):
        value = value * (1 + step) if value > 0 else step
        step *= 2
    return value


_CALIBRATIONS = {"classical": classical_gaussian_sigma, "analytic": analytic_gaussian_sigma}

#: Smallest and largest sigma: beyond them sigma^2 or 1 / sigma^2 leaves double precision.
SIGMA_LIMITS = (1e-100, 1e100)
#: Largest sigma of the discrete Gaussian, whose draws are int64 (|noise| < 9.2e18 = 9,000 sigma).
DISCRETE_SIGMA_MAX = 1e15


def _sigma(value, largest: float = SIGMA_LIMITS[1]) -> float | np.ndarray:
    """sigma as a float, or a read-only vector of one sigma per coordinate, each within the limits."""
    sigma = unit_parameter(value, "sigma", positive_finite, "positive finite number")
    if not np.all((SIGMA_LIMITS[0] <= sigma) & (sigma <= largest)):
        raise ValueError(
            f"sigma must lie in [{SIGMA_LIMITS[0]:g}, {largest:g}] (double precision and int64 limits), got {value!r}"
        )
    if np.ndim(sigma):
        sigma.flags.writeable = False
    return sigma


def _per_coordinate_zcdp(sigma: np.ndarray) -> Guarantee:
    """rho-zCDP of independent (discrete) Gaussian noise of sigma_i per coordinate, as relative scales.

    With sigma_min the smallest sigma_i and s_i = sigma_i / sigma_min, the noise is (1 / (2 sigma_min^2))-zCDP
    for neighbours with sum_i ((f_i(x) - f_i(x')) / s_i)^2 <= 1: the Renyi divergence of order alpha between
    the two releases is alpha sum_i (f_i(x) - f_i(x'))^2 / (2 sigma_i^2) (Canonne, Kamath & Steinke 2020,
    Theorem 14, for the discrete Gaussian).
    """
    smallest = float(sigma.min())
    return Guarantee(
        "zcdp",
        rho=1 / (2 * smallest**2),
        sensitivity=recorded(sigma / smallest),
        note="a budget per coordinate: for neighbours with sum_i ((f_i(x) - f_i(x')) / sensitivity_i)^2 <= 1",
    )


class Gaussian(AdditiveNoiseMechanism):
    """y = x + N(0, sigma^2) noise per coordinate: (epsilon, delta)-DP when sigma is calibrated.

    A vector ``sigma`` (sigma_1, ..., sigma_d) gives coordinate i of the flattened release its own standard
    deviation, and a release of exactly d coordinates. With s_i = sigma_i / min_j sigma_j the relative scales,
    the release is rho-zCDP with rho = 1 / (2 min_j sigma_j^2) for the neighbours whose query values differ
    within the weighted L2 ball sqrt(sum_i ((f_i(x) - f_i(x')) / s_i)^2) <= 1, and ``guarantee()`` states
    it so (the s_i as its sensitivity). ``from_epsilon_delta`` with a vector ``sensitivity`` (Delta_1, ...,
    Delta_d) calibrates sigma_i for each Delta_i: (epsilon, delta)-DP for sum_i ((f_i(x) - f_i(x')) /
    Delta_i)^2 <= 1, since y_i / Delta_i is the calibrated Gaussian release of f_i / Delta_i, a query of L2
    sensitivity at most one.

    See Also
    --------
    ppdinfer.mechanisms.DiscreteGaussian : Gaussian noise on the integers.
    ppdinfer.mechanisms.analytic_gaussian_sigma : The exact calibration of sigma.
    ppdinfer.mechanisms.classical_gaussian_sigma : The classical calibration (epsilon < 1).

    References
    ----------
    .. [1] C. Dwork and A. Roth, "The algorithmic foundations of differential privacy," Foundations and
        Trends in Theoretical Computer Science 9(3-4), 2014.
    .. [2] B. Balle and Y.-X. Wang, "Improving the Gaussian mechanism for differential privacy:
        analytical calibration and optimal denoising," ICML 2018.

    Examples
    --------
    >>> round(Gaussian.from_epsilon_delta(1.0, 1e-5).sigma, 3)
    3.731
    >>> round(Gaussian.from_epsilon_delta(0.5, 1e-5, method="classical").sigma, 3)
    9.69
    >>> Gaussian.from_epsilon_delta(1.0, 1e-5, sensitivity=[1.0, 2.0]).sigma.round(3)   # a budget per statistic
    array([3.731, 7.461])
    """

    discrete = False
    power = 2
    scale_parameter = "sigma (or the sensitivity it was calibrated for)"

    def __init__(self, sigma: float | None = None, *extra, **calibration):
        if extra or calibration:
            positional = [repr(value) for value in (sigma, *extra) if value is not None]
            given = ", ".join(positional + [f"{key}={value!r}" for key, value in calibration.items()])
            raise TypeError(
                f"Gaussian takes the noise's standard deviation alone, Gaussian(sigma), got Gaussian({given}); "
                "for sigma calibrated to (epsilon, delta)-DP use Gaussian.from_epsilon_delta(epsilon, delta, "
                "sensitivity=1.0)"
            )
        self.sigma = _sigma(sigma)
        self.rate = 1 / (2 * self.sigma**2)
        if self.coordinates is None:
            self.log_norm = -0.5 * math.log(2 * math.pi * self.sigma**2)
        else:
            self.log_norm = -0.5 * np.log(2 * math.pi * self.sigma**2)

    @classmethod
    def from_epsilon_delta(cls, epsilon: float, delta: float, sensitivity: float = 1.0, method: str = "analytic"):
        """Calibrate sigma for (epsilon, delta)-DP; ``method`` is 'analytic' or 'classical'.

        The mechanism keeps the guarantee it was calibrated for: ``guarantee()`` states epsilon,
        delta and the L2 sensitivity. A vector ``sensitivity`` (one per released coordinate) gives
        sigma_i calibrated for Delta_i alone, each certified as for a scalar, and the guarantee
        holds for sum_i ((f_i(x) - f_i(x')) / Delta_i)^2 <= 1 (see the class).
        """
        if method not in _CALIBRATIONS:
            raise ValueError(f"method must be one of {sorted(_CALIBRATIONS)}, got {method!r}")
        calibrate = _CALIBRATIONS[method]
        sensitivity = unit_parameter(sensitivity, "sensitivity", positive_finite, "positive finite number")
        if np.ndim(sensitivity) == 0:
            return cls(calibrate(epsilon, delta, sensitivity)).with_guarantee(
                Guarantee(
                    "approximate", epsilon=epsilon, delta=delta, sensitivity=sensitivity, note=f"{method} calibration"
                )
            )
        sigmas = {value: calibrate(epsilon, delta, value) for value in dict.fromkeys(sensitivity.tolist())}
        return cls(np.array([sigmas[value] for value in sensitivity.tolist()])).with_guarantee(
            Guarantee(
                "approximate",
                epsilon=epsilon,
                delta=delta,
                sensitivity=recorded(sensitivity),
                note=f"{method} calibration; a budget per coordinate: for neighbours with "
                "sum_i ((f_i(x) - f_i(x')) / sensitivity_i)^2 <= 1",
            )
        )

    def parameters(self) -> dict[str, float | tuple[float, ...]]:
        return {"sigma": recorded(self.sigma)}

    def _guarantee(self) -> Guarantee:
        if self.coordinates is not None:
            return _per_coordinate_zcdp(self.sigma)
        # N(0, sigma^2) noise on a query of L2 sensitivity 1 is (1 / (2 sigma^2))-zCDP.
        return Guarantee("zcdp", rho=1 / (2 * self.sigma**2), sensitivity=1.0)

    def _noise(self, shape, rng, secure):
        return rng.normal(0.0, self.sigma if self.coordinates is None else self.sigma.reshape(shape), size=shape)


def discrete_gaussian_log_normalizer(sigma: float) -> float:
    """log sum_k exp(-k^2 / (2 sigma^2)) over all integers k, to double precision.

    Small sigma: the direct sum. Large sigma: the Poisson-summation (Jacobi theta) dual
    sqrt(2 pi) sigma * sum_m exp(-2 pi^2 sigma^2 m^2), whose terms vanish even faster.

    See Also
    --------
    ppdinfer.mechanisms.DiscreteGaussian : The mechanism it normalizes.

    References
    ----------
    .. [1] C. L. Canonne, G. Kamath and T. Steinke, "The discrete Gaussian for differential privacy," 2020.

    Examples
    --------
    >>> round(discrete_gaussian_log_normalizer(10.0) - math.log(math.sqrt(2 * math.pi) * 10.0), 12)
    0.0
    """
    if sigma < 1.0:
        k = np.arange(1, int(40 * sigma) + 3)
        return math.log1p(2 * np.exp(-(k**2) / (2 * sigma**2)).sum())
    m = np.arange(1, 4)
    dual = 2 * np.exp(-2 * math.pi**2 * sigma**2 * m**2).sum()
    return 0.5 * math.log(2 * math.pi) + math.log(sigma) + math.log1p(dual)


class DiscreteGaussian(AdditiveNoiseMechanism):
    """y = x + K on the integers with P(K = k) proportional to exp(-k^2 / (2 sigma^2)).

    Releases are drawn exactly (Canonne, Kamath & Steinke 2020), in a time that does not depend
    on the noise. A vector ``sigma`` gives each coordinate its own, with the weighted L2 guarantee of
    :class:`Gaussian` (their Theorem 14 covers independent coordinates of different scales).

    See Also
    --------
    ppdinfer.mechanisms.Gaussian : Gaussian noise on the real line.
    ppdinfer.mechanisms.discrete_gaussian_log_normalizer : Its normalizing constant.

    References
    ----------
    .. [1] C. L. Canonne, G. Kamath and T. Steinke, "The discrete Gaussian for differential privacy," 2020.

    Examples
    --------
    >>> k = np.arange(-60, 61)
    >>> round(float(np.exp(DiscreteGaussian(2.0).logpdf(0, k)).sum()), 12)  # the pmf sums to one
    1.0
    >>> DiscreteGaussian([1.0, 3.0]).guarantee().sensitivity   # rho = 1/2 for sum_i (change_i / s_i)^2 <= 1
    (1.0, 3.0)
    """

    discrete = True
    power = 2
    scale_parameter = "sigma"

    def __init__(self, sigma):
        self.sigma = _sigma(sigma, DISCRETE_SIGMA_MAX)
        self.rate = 1 / (2 * self.sigma**2)
        if self.coordinates is None:
            self.log_norm = -discrete_gaussian_log_normalizer(self.sigma)
        else:
            self.log_norm = -np.array([discrete_gaussian_log_normalizer(value) for value in self.sigma.tolist()])

    def parameters(self) -> dict[str, float | tuple[float, ...]]:
        return {"sigma": recorded(self.sigma)}

    def _guarantee(self) -> Guarantee:
        if self.coordinates is not None:
            return _per_coordinate_zcdp(self.sigma)
        # Canonne, Kamath & Steinke (2020), Theorem 14: (1 / (2 sigma^2))-zCDP for sensitivity 1.
        return Guarantee("zcdp", rho=1 / (2 * self.sigma**2), sensitivity=1.0)

    def _noise(self, shape, rng, secure):
        if self.coordinates is None:
            sigma_squared = Fraction(self.sigma) ** 2
            return exact_integer.sample_array(exact_integer.discrete_gaussian, sigma_squared, shape, rng, secure)
        squares = [Fraction(value) ** 2 for value in self.sigma.tolist()]
        return exact_integer.sample_per_coordinate(exact_integer.discrete_gaussian, squares, rng, secure).reshape(shape)
