"""ppdinfer.interop.from_tumult: Tumult's reported noise (mechanism, parameter) as ppdinfer mechanisms.

Tumult Analytics does not install cleanly here (the registry's 0.5.0 fails to build; Tumult Core
0.20 pins pandas and sympy below the project's and pulls in Spark), so the conversion is checked
against the laws Tumult Core documents for its measurements, written out independently below.
"""

import enum
import math

import numpy as np
import pytest
from scipy import special

from ppdinfer.interop import from_tumult
from ppdinfer.mechanisms import DiscreteGaussian, DiscreteLaplace, Gaussian, Laplace


class NoiseMechanism(enum.Enum):
    """Stands in for Tumult Analytics' noise mechanism enum (members carry the same names)."""

    LAPLACE = 1
    GEOMETRIC = 2
    DISCRETE_GAUSSIAN = 3
    EXPONENTIAL = 4
    GAUSSIAN = 5


@pytest.mark.parametrize("alpha", [0.5, 2.0, 7.3])
def test_geometric_noise_has_tumult_cores_pmf(alpha):
    mechanism = from_tumult({"noise_mechanism": NoiseMechanism.GEOMETRIC, "noise_parameter": alpha})
    k = np.arange(-30, 31)
    # AddGeometricNoise's documented pmf: (e^{1/a} - 1) / (e^{1/a} + 1) e^{-|k|/a}
    documented = (math.exp(1 / alpha) - 1) / (math.exp(1 / alpha) + 1) * np.exp(-np.abs(k) / alpha)
    np.testing.assert_allclose(np.exp(mechanism.logpdf(0, k)), documented, rtol=1e-12)
    assert isinstance(mechanism, DiscreteLaplace)


@pytest.mark.parametrize("sigma_squared", [0.3, 2.25, 40.0])
def test_discrete_gaussian_noise_has_tumult_cores_pmf(sigma_squared):
    mechanism = from_tumult([{"noise_mechanism": "DISCRETE_GAUSSIAN", "noise_parameter": sigma_squared}])
    k = np.arange(-200, 201)
    kernel = np.exp(-(k**2) / (2 * sigma_squared))
    np.testing.assert_allclose(np.exp(mechanism.logpdf(0, k[:60])), (kernel / kernel.sum())[:60], rtol=1e-10)
    assert mechanism == DiscreteGaussian(math.sqrt(sigma_squared))


def test_continuous_laplace_and_gaussian_noise():
    laplace = from_tumult({"noise_mechanism": "LAPLACE", "noise_parameter": 1.5})
    e = np.linspace(-4, 4, 9)
    np.testing.assert_allclose(laplace.logpdf(0, e), -np.abs(e) / 1.5 - math.log(3.0), rtol=1e-12)
    gaussian = from_tumult({"noise_mechanism": NoiseMechanism.GAUSSIAN, "noise_parameter": 4.0})
    assert gaussian == Gaussian(2.0) and isinstance(laplace, Laplace)


def test_budget_derivation_matches_ppdinfers_calibrated_mechanisms():
    """PureDP(eps) at sensitivity D gives alpha = D / eps; RhoZCDP(rho) gives sigma^2 = D^2 / (2 rho)."""
    epsilon, rho, sensitivity = 0.7, 0.125, 3
    pure = from_tumult({"noise_mechanism": "GEOMETRIC", "noise_parameter": sensitivity / epsilon})
    k = np.arange(-20, 21)
    np.testing.assert_allclose(pure.logpdf(0, k), DiscreteLaplace(epsilon, sensitivity).logpdf(0, k), rtol=1e-12)
    zcdp = from_tumult({"noise_mechanism": "DISCRETE_GAUSSIAN", "noise_parameter": sensitivity**2 / (2 * rho)})
    sigma = zcdp.parameters()["sigma"]
    assert math.isclose(sensitivity**2 / (2 * sigma**2), rho, rel_tol=1e-12)
    # the privacy loss of the converted pure-DP noise at distance D is exactly eps
    loss = np.max(np.abs(pure.logpdf(0, k) - pure.logpdf(sensitivity, k)))
    assert math.isclose(loss, epsilon, rel_tol=1e-9)
    assert special.logsumexp(zcdp.logpdf(0, np.arange(-400, 401))) == pytest.approx(0.0, abs=1e-12)


@pytest.mark.parametrize(
    "noise_info, message",
    [
        ({"noise_mechanism": NoiseMechanism.EXPONENTIAL, "noise_parameter": 1.0}, "EXPONENTIAL"),
        ([{"noise_mechanism": "GEOMETRIC", "noise_parameter": 1.0}] * 2, "exactly one"),
        ([], "exactly one"),
        ({"noise_mechanism": "GEOMETRIC", "noise_parameter": -2.0}, "noise_parameter"),
        ({"noise_mechanism": "GEOMETRIC"}, "noise_parameter"),
        (3.0, "noise_info"),
    ],
)
def test_unsupported_reports_raise_naming_what(noise_info, message):
    with pytest.raises(ValueError, match=message):
        from_tumult(noise_info)
