"""ppdinfer.interop: OpenDP measurements become ppdinfer mechanisms with the same noise law.

OpenDP's samplers cannot be seeded, so the checks on its releases are statistical, with
thresholds (p > 1e-4 for the right law, p < 1e-4 for a wrong scale) that a correct conversion
fails with probability about 1e-4 and a wrong one passes with negligible probability.
"""

import math

import numpy as np
import pytest
from scipy import stats

from ppdinfer.interop import from_noise, from_opendp
from ppdinfer.mechanisms import DiscreteGaussian, DiscreteLaplace, Gaussian, Laplace

from release_checks import assert_rejection_matches_exact_posterior, chi_square_p_value

dp = pytest.importorskip("opendp.prelude")
dp.enable_features("contrib")

INTEGERS = dp.atom_domain(T=int), dp.absolute_distance(T=int)
FLOATS = dp.atom_domain(T=float, nan=False), dp.absolute_distance(T=float)
INTEGER_VECTORS = dp.vector_domain(dp.atom_domain(T=int))


@pytest.mark.parametrize(
    "make, metric, family, scale, wrong_scale",
    [(dp.m.make_laplace, dp.l1_distance(T=int), "laplace", 2.0, 2.5),
     (dp.m.make_gaussian, dp.l2_distance(T=int), "gaussian", 1.5, 1.8)],
)
def test_opendp_integer_releases_follow_the_converted_pmf(make, metric, family, scale, wrong_scale):
    measurement = make(INTEGER_VECTORS, metric, scale=scale)
    mechanism = from_opendp(measurement)
    x = 7
    noise = np.asarray(measurement([x] * 20_000)) - x
    assert chi_square_p_value(noise, mechanism, 6) > 1e-4
    assert chi_square_p_value(noise, from_noise(family, wrong_scale, integer=True), 6) < 1e-4


def test_opendp_float_laplace_releases_follow_the_converted_density():
    float_vectors = dp.vector_domain(dp.atom_domain(T=float, nan=False))
    measurement = dp.m.make_laplace(float_vectors, dp.l1_distance(T=float), scale=0.5)
    mechanism = from_opendp(measurement)
    noise = np.asarray(measurement([3.0] * 20_000)) - 3.0
    e = np.linspace(-3, 3, 7)
    reference = stats.laplace(scale=0.5)
    np.testing.assert_allclose(mechanism.logpdf(0, e), reference.logpdf(e), rtol=1e-12)
    assert stats.kstest(noise, reference.cdf).pvalue > 1e-4
    assert stats.kstest(noise, stats.laplace(scale=0.6).cdf).pvalue < 1e-4


@pytest.mark.parametrize("scale", [0.7, 2.0, 13.0])
def test_scale_conversion_is_exact_in_log_pmf_ratios(scale):
    k = np.arange(-5, 6)
    for mechanism, log_kernel in [
        (from_noise("laplace", scale, integer=True), -np.abs(k) / scale),
        (from_noise("laplace", scale, integer=False), -np.abs(k) / scale),
        (from_noise("gaussian", scale, integer=True), -(k**2) / (2 * scale**2)),
        (from_noise("gaussian", scale, integer=False), -(k**2) / (2 * scale**2)),
    ]:
        ratios = mechanism.logpdf(0, k) - mechanism.logpdf(0, np.zeros(1))
        np.testing.assert_allclose(ratios, log_kernel, rtol=1e-14, atol=1e-14)


def test_from_opendp_reads_the_family_domain_and_scale():
    assert from_opendp(dp.m.make_laplace(*INTEGERS, scale=2.0)) == DiscreteLaplace(1.0, 2.0)
    assert from_opendp(dp.m.make_geometric(*INTEGERS, scale=2.0)) == DiscreteLaplace(1.0, 2.0)
    assert from_opendp(INTEGERS >> dp.m.then_gaussian(scale=3.0)) == DiscreteGaussian(3.0)
    noise = dp.m.make_noise(*INTEGERS, dp.zero_concentrated_divergence(), scale=3.0)
    assert from_opendp(noise) == DiscreteGaussian(3.0)
    assert from_opendp(dp.m.make_laplace(*FLOATS, scale=0.5)) == Laplace(1.0, 0.5)
    assert from_opendp(dp.m.make_gaussian(*FLOATS, scale=0.5)) == Gaussian(0.5)


def test_privacy_of_the_opendp_measurement_matches_the_converted_rate():
    measurement = dp.m.make_laplace(*INTEGERS, scale=4.0)
    mechanism = from_opendp(measurement)
    assert math.isclose(measurement.map(3), 3 * mechanism.rate, rel_tol=1e-12)


def test_posterior_from_an_opendp_release_matches_the_exact_posterior():
    measurement = dp.m.make_laplace(*INTEGERS, scale=2.0)
    assert_rejection_matches_exact_posterior(from_opendp(measurement), measurement(20))


@pytest.mark.parametrize(
    "build, unsupported",
    [
        (lambda: dp.t.make_sum(dp.vector_domain(dp.atom_domain(bounds=(0, 10))), dp.symmetric_distance())
         >> dp.m.then_laplace(scale=2.0), "make_chain_mt"),
        (lambda: dp.m.make_randomized_response_bool(0.75), "make_randomized_response_bool"),
        (lambda: dp.m.make_geometric(*INTEGERS, scale=2.0, bounds=(0, 10)), "bounds"),
        (lambda: dp.m.make_laplace(*FLOATS, scale=2.0, k=0), "k=0"),
        (lambda: object(), "object"),
    ],
)
def test_unsupported_measurements_raise_naming_what(build, unsupported):
    with pytest.raises(ValueError, match=unsupported):
        from_opendp(build())


def test_from_noise_rejects_an_unknown_family_and_a_bad_scale():
    with pytest.raises(ValueError, match="distribution"):
        from_noise("cauchy", 1.0, integer=True)
    with pytest.raises(ValueError, match="scale"):
        from_noise("laplace", -1.0, integer=True)
