"""ppdinfer.interop.from_diffprivlib: diffprivlib's releases follow the converted likelihood.

diffprivlib's mechanisms take a ``random_state``, so these checks are seeded; the thresholds
(p > 1e-4 for the converted law, p < 1e-4 for a wrong scale) would catch a wrong conversion.
"""

import math

import numpy as np
import pytest
from release_checks import assert_rejection_matches_exact_posterior, chi_square_p_value
from scipy import stats

from ppdinfer.interop import from_diffprivlib
from ppdinfer.mechanisms import DiscreteGaussian, DiscreteLaplace, Gaussian, Laplace

mechanisms = pytest.importorskip("diffprivlib.mechanisms")
DRAWS = 20_000


def released_noise(mechanism, x, draws=DRAWS):
    return np.array([mechanism.randomise(x) for _ in range(draws)]) - x


def test_geometric_releases_follow_the_discrete_laplace_pmf():
    source = mechanisms.Geometric(epsilon=0.5, sensitivity=2, random_state=1)
    converted = from_diffprivlib(source)
    assert converted == DiscreteLaplace(0.5, 2)
    noise = released_noise(source, 7)
    assert chi_square_p_value(noise, converted, 10) > 1e-4
    assert chi_square_p_value(noise, DiscreteLaplace(0.6, 2), 10) < 1e-4


def test_discrete_gaussian_releases_follow_the_discrete_gaussian_pmf():
    source = mechanisms.GaussianDiscrete(epsilon=1.0, delta=1e-3, sensitivity=1, random_state=2)
    converted = from_diffprivlib(source)
    assert isinstance(converted, DiscreteGaussian)
    sigma = converted.parameters()["sigma"]
    assert 2 < sigma < 5  # (1, 1e-3)-DP for sensitivity 1 needs a few units of noise
    noise = released_noise(source, 3, draws=10_000)
    assert chi_square_p_value(noise, converted, 8) > 1e-4
    assert chi_square_p_value(noise, DiscreteGaussian(1.2 * sigma), 8) < 1e-4


@pytest.mark.parametrize("delta", [0.0, 0.05])
def test_laplace_releases_follow_the_converted_density(delta):
    source = mechanisms.Laplace(epsilon=1.0, delta=delta, sensitivity=0.5, random_state=3)
    converted = from_diffprivlib(source)
    scale = 0.5 / (1.0 - math.log(1 - delta))
    assert converted == Laplace(1.0 - math.log1p(-delta), 0.5)
    e = np.linspace(-2, 2, 9)
    np.testing.assert_allclose(converted.logpdf(0, e), stats.laplace(scale=scale).logpdf(e), rtol=1e-12)
    np.testing.assert_allclose(2 * scale**2, source.variance(0), rtol=1e-12)
    noise = released_noise(source, 1.5)
    assert stats.kstest(noise, stats.laplace(scale=scale).cdf).pvalue > 1e-4
    assert stats.kstest(noise, stats.laplace(scale=1.15 * scale).cdf).pvalue < 1e-4


@pytest.mark.parametrize("kind", ["Gaussian", "GaussianAnalytic"])
def test_gaussian_releases_follow_the_converted_density(kind):
    source = getattr(mechanisms, kind)(epsilon=0.8, delta=1e-5, sensitivity=1.0, random_state=4)
    converted = from_diffprivlib(source)
    sigma = converted.parameters()["sigma"]
    assert isinstance(converted, Gaussian) and math.isclose(sigma**2, source.variance(0), rel_tol=1e-12)
    if kind == "Gaussian":  # the classical calibration, in closed form
        assert math.isclose(sigma, math.sqrt(2 * math.log(1.25 / 1e-5)) / 0.8, rel_tol=1e-12)
    noise = released_noise(source, 0.0)
    assert stats.kstest(noise, stats.norm(scale=sigma).cdf).pvalue > 1e-4
    assert stats.kstest(noise, stats.norm(scale=1.1 * sigma).cdf).pvalue < 1e-4


def test_posterior_from_a_diffprivlib_release_matches_the_exact_posterior():
    source = mechanisms.Geometric(epsilon=0.5, sensitivity=1, random_state=5)
    assert_rejection_matches_exact_posterior(from_diffprivlib(source), source.randomise(20))


@pytest.mark.parametrize(
    "build, unsupported",
    [
        (lambda: mechanisms.GeometricTruncated(epsilon=1.0, sensitivity=1, lower=0, upper=10), "GeometricTruncated"),
        (
            lambda: mechanisms.LaplaceBoundedDomain(epsilon=1.0, sensitivity=1.0, lower=0, upper=10),
            "LaplaceBoundedDomain",
        ),
        (lambda: mechanisms.Staircase(epsilon=1.0, sensitivity=1.0), "Staircase"),
        (lambda: object(), "object"),
    ],
)
def test_unsupported_mechanisms_raise_naming_what(build, unsupported):
    with pytest.raises(ValueError, match=unsupported):
        from_diffprivlib(build())


def test_a_mechanism_without_noise_is_refused():
    with pytest.raises(ValueError, match="no noise"):
        from_diffprivlib(mechanisms.Geometric(epsilon=1.0, sensitivity=0))
