import math

import numpy as np
import pytest
from mechanism_registry import CASES
from scipy import stats

from ppdinfer.mechanisms import (
    AdditiveNoiseMechanism,
    DiscreteGaussian,
    DiscreteLaplace,
    Gaussian,
    Laplace,
    analytic_gaussian_sigma,
    classical_gaussian_sigma,
    gaussian_delta,
)

K = np.arange(-3000, 3001)
ADDITIVE = [case for case in CASES if isinstance(case.mechanism, AdditiveNoiseMechanism)]


@pytest.mark.parametrize(
    "mechanism",
    [
        DiscreteLaplace(0.05),
        DiscreteLaplace(1.0),
        DiscreteLaplace(4.0, 2.0),
        DiscreteGaussian(0.2),
        DiscreteGaussian(0.9),
        DiscreteGaussian(1.0),
        DiscreteGaussian(7.5),
        DiscreteGaussian(120.0),
    ],
)
def test_discrete_pmf_sums_to_one(mechanism):
    total = np.exp(mechanism.logpdf(0, K)).sum()
    assert total == pytest.approx(1.0, abs=1e-12)


def test_log_densities_match_scipy():
    x = np.array([-3.0, 0.0, 2.5, 10.0])
    assert np.allclose(Laplace(0.5, 2.0).logpdf(1.0, x), stats.laplace(loc=x, scale=4.0).logpdf(1.0))
    assert np.allclose(Gaussian(2.0).logpdf(1.0, x), stats.norm(loc=x, scale=2.0).logpdf(1.0))
    # the registry's instances, whose releases tests/test_mechanism_contract.py checks against logpdf
    assert np.allclose(Laplace(0.7, 2.0).logpdf(1.0, x), stats.laplace(loc=x, scale=2.0 / 0.7).logpdf(1.0))
    assert np.allclose(Gaussian(1.3).logpdf(1.0, x), stats.norm(loc=x, scale=1.3).logpdf(1.0))
    xi = np.array([-3, 0, 2, 10])
    assert np.allclose(DiscreteLaplace(0.8).logpdf(1, xi), stats.dlaplace(0.8).logpmf(1 - xi))
    sigma = 1.7
    k = np.arange(-200, 201)
    log_norm = np.log(np.exp(-(k**2) / (2 * sigma**2)).sum())
    assert np.allclose(DiscreteGaussian(sigma).logpdf(1, xi), -((1 - xi) ** 2) / (2 * sigma**2) - log_norm)


def test_logpdf_sums_over_coordinates_and_batches():
    m = DiscreteLaplace(1.0)
    y = np.array([3, -1, 4])
    x = np.array([[3, -1, 4], [0, 0, 0]])
    expected = [3 * m.log_norm, 3 * m.log_norm - 8.0]
    assert np.allclose(m.logpdf(y, x), expected)
    assert m.logpdf(y, y).shape == (1,)


@pytest.mark.parametrize("case", ADDITIVE, ids=[case.name for case in ADDITIVE])
def test_additive_log_bound_is_the_peak_times_the_size(case):
    # log_bound >= logpdf for every mechanism: tests/test_mechanism_contract.py; here the additive form
    mechanism = case.mechanism
    assert mechanism.logpdf(case.x, case.x)[0] == pytest.approx(mechanism.log_bound(size=case.x.size))
    if mechanism.coordinates is None:  # one scale for every coordinate; else the size is the number of scales
        assert mechanism.log_bound(size=3) == pytest.approx(3 * mechanism.log_bound())


def test_release_is_reproducible_and_keeps_shape():
    m = DiscreteGaussian(3.0)
    x = np.arange(12).reshape(3, 4)
    assert np.array_equal(m.release(x, random_seed=1), m.release(x, random_seed=1))
    assert m.release(x, random_seed=1).shape == (3, 4)


def test_secure_release():
    y = DiscreteLaplace(1.0).release(np.full(2000, 5), secure=True)
    assert y.dtype == np.int64 and abs(np.mean(y) - 5) < 0.2
    with pytest.raises(ValueError, match="secure"):
        Laplace(1.0).release([1.0], secure=True)


def test_gaussian_calibrations():
    sigma = analytic_gaussian_sigma(1.0, 1e-5)
    assert gaussian_delta(sigma, 1.0) == pytest.approx(1e-5, rel=1e-6)
    assert gaussian_delta(sigma * 0.999, 1.0) > 1e-5
    # Dwork & Roth: sigma = sqrt(2 ln(1.25 / delta)) / epsilon
    assert classical_gaussian_sigma(0.5, 1e-5) == pytest.approx(math.sqrt(2 * math.log(1.25e5)) / 0.5)
    # the analytic calibration is never noisier than the classical one
    assert analytic_gaussian_sigma(0.5, 1e-5) < classical_gaussian_sigma(0.5, 1e-5)
    assert Gaussian.from_epsilon_delta(1.0, 1e-5).sigma == pytest.approx(sigma)
    assert Gaussian.from_epsilon_delta(0.5, 1e-5, sensitivity=2, method="classical").sigma == pytest.approx(
        2 * classical_gaussian_sigma(0.5, 1e-5)
    )


@pytest.mark.parametrize("bad", [0, -1.0, float("nan"), float("inf"), "1", None, True])
def test_bad_privacy_parameters(bad):
    for factory, name in [
        (DiscreteLaplace, "epsilon"),
        (Laplace, "epsilon"),
        (Gaussian, "sigma"),
        (DiscreteGaussian, "sigma"),
    ]:
        with pytest.raises(ValueError, match=name):
            factory(bad)
    with pytest.raises(ValueError, match="sensitivity"):
        DiscreteLaplace(1.0, sensitivity=bad)


def test_bad_calibration_arguments():
    with pytest.raises(ValueError, match="delta"):
        Gaussian.from_epsilon_delta(1.0, 1.5)
    with pytest.raises(ValueError, match="epsilon must be < 1"):
        Gaussian.from_epsilon_delta(2.0, 1e-5, method="classical")
    with pytest.raises(ValueError, match="method"):
        Gaussian.from_epsilon_delta(0.5, 1e-5, method="other")


def test_discrete_mechanism_rejects_non_integer_values():
    with pytest.raises(ValueError, match="y must hold integers"):
        DiscreteLaplace(1.0).logpdf(1.5, np.array([1, 2]))
    with pytest.raises(ValueError, match="x must hold integers"):
        DiscreteGaussian(1.0).release([0.5])


@pytest.mark.parametrize("mechanism", [DiscreteLaplace(1.0), DiscreteGaussian(1.0)])
def test_count_release_names_a_bad_count(mechanism):
    with pytest.raises(ValueError, match=r"x must be non-negative, got \[-1, 3\]"):
        mechanism.release([-1, 3])
    with pytest.raises(ValueError, match=r"x must hold integers, got \[1.5\]"):
        mechanism.release([1.5])


def test_repr_and_equality():
    assert repr(DiscreteLaplace(0.5)) == "DiscreteLaplace(epsilon=0.5, sensitivity=1.0)"
    assert DiscreteLaplace(0.5) == DiscreteLaplace(0.5) != DiscreteLaplace(0.6)
    assert repr(Gaussian(2.0)) == "Gaussian(sigma=2.0)"
