"""Gaussian and discrete Gaussian noise mechanisms, with (epsilon, delta) calibrations."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
from scipy import optimize, special

from .._validation import positive_finite, probability
from . import _exact_integer
from .base import AdditiveNoiseMechanism


def classical_gaussian_sigma(epsilon: float, delta: float, sensitivity: float = 1.0) -> float:
    """sigma = sensitivity * sqrt(2 log(1.25 / delta)) / epsilon (Dwork & Roth 2014, Thm A.1).

    The classical bound is proved for epsilon < 1 only.
    """
    epsilon = positive_finite(epsilon, "epsilon")
    delta = probability(delta, "delta")
    sensitivity = positive_finite(sensitivity, "sensitivity")
    if epsilon >= 1:
        raise ValueError(
            f"epsilon must be < 1 for the classical Gaussian calibration, got {epsilon}; "
            "use method='analytic'"
        )
    return sensitivity * math.sqrt(2 * math.log(1.25 / delta)) / epsilon


def gaussian_delta(sigma: float, epsilon: float, sensitivity: float = 1.0) -> float:
    """The smallest delta for which N(0, sigma^2) noise is (epsilon, delta)-DP (Balle & Wang 2018, Thm 8)."""
    ratio = sensitivity / sigma
    return float(
        special.ndtr(ratio / 2 - epsilon / ratio)
        - math.exp(epsilon) * special.ndtr(-ratio / 2 - epsilon / ratio)
    )


def analytic_gaussian_sigma(epsilon: float, delta: float, sensitivity: float = 1.0) -> float:
    """The smallest sigma with gaussian_delta(sigma, epsilon) <= delta (Balle & Wang 2018)."""
    epsilon = positive_finite(epsilon, "epsilon")
    delta = probability(delta, "delta")
    sensitivity = positive_finite(sensitivity, "sensitivity")
    excess = lambda log_sigma: gaussian_delta(math.exp(log_sigma), epsilon, sensitivity) - delta  # noqa: E731
    low, high = math.log(sensitivity) - 10, math.log(sensitivity) + 10
    while excess(high) > 0:
        high += 10
    while excess(low) < 0:
        low -= 10
    return math.exp(optimize.brentq(excess, low, high, xtol=1e-14, rtol=1e-14))


_CALIBRATIONS = {"classical": classical_gaussian_sigma, "analytic": analytic_gaussian_sigma}


class Gaussian(AdditiveNoiseMechanism):
    """y = x + N(0, sigma^2) noise per coordinate."""

    discrete = False
    power = 2

    def __init__(self, sigma: float):
        self.sigma = positive_finite(sigma, "sigma")
        self.rate = 1 / (2 * self.sigma**2)
        self.log_norm = -0.5 * math.log(2 * math.pi * self.sigma**2)

    @classmethod
    def from_epsilon_delta(cls, epsilon: float, delta: float, sensitivity: float = 1.0, method: str = "analytic"):
        """Calibrate sigma for (epsilon, delta)-DP; ``method`` is 'analytic' or 'classical'."""
        if method not in _CALIBRATIONS:
            raise ValueError(f"method must be one of {sorted(_CALIBRATIONS)}, got {method!r}")
        return cls(_CALIBRATIONS[method](epsilon, delta, sensitivity))

    def parameters(self) -> dict[str, float]:
        return {"sigma": self.sigma}

    def _noise(self, shape, rng, secure):
        return rng.normal(0.0, self.sigma, size=shape)


def discrete_gaussian_log_normalizer(sigma: float) -> float:
    """log sum_k exp(-k^2 / (2 sigma^2)) over all integers k, to double precision.

    Small sigma: the direct sum. Large sigma: the Poisson-summation (Jacobi theta) dual
    sqrt(2 pi) sigma * sum_m exp(-2 pi^2 sigma^2 m^2), whose terms vanish even faster.
    """
    if sigma < 1.0:
        k = np.arange(1, int(40 * sigma) + 3)
        return math.log1p(2 * np.exp(-(k**2) / (2 * sigma**2)).sum())
    m = np.arange(1, 4)
    dual = 2 * np.exp(-2 * math.pi**2 * sigma**2 * m**2).sum()
    return 0.5 * math.log(2 * math.pi) + math.log(sigma) + math.log1p(dual)


class DiscreteGaussian(AdditiveNoiseMechanism):
    """y = x + K on the integers with P(K = k) proportional to exp(-k^2 / (2 sigma^2)).

    Releases are drawn with exact integer arithmetic (Canonne, Kamath & Steinke 2020).
    """

    discrete = True
    power = 2

    def __init__(self, sigma: float):
        self.sigma = positive_finite(sigma, "sigma")
        self.rate = 1 / (2 * self.sigma**2)
        self.log_norm = -discrete_gaussian_log_normalizer(self.sigma)

    def parameters(self) -> dict[str, float]:
        return {"sigma": self.sigma}

    def _noise(self, shape, rng, secure):
        sigma_squared = Fraction(self.sigma) ** 2
        return _exact_integer.sample_array(_exact_integer.discrete_gaussian, sigma_squared, shape, rng, secure)
