"""The DP tests and confidence interval for a binomial proportion from a Tulap release
(ppdinfer.frequentist.binomial; Awan & Slavkovic 2018, 2020)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import optimize, stats

import ppdinfer as pp
from ppdinfer.mechanisms import Tulap
from ppdinfer.mechanisms.canonical import CanonicalNoise

ALPHA = 0.05
RELEASES = 20_000


def _releases(n, theta, epsilon, delta, size, seed):
    """Z = X + N for X ~ Binomial(n, theta), N the (eps, delta) Tulap noise, drawn by ppdinfer."""
    rng = np.random.default_rng(seed)
    x = rng.binomial(n, theta, size).astype(float)
    return CanonicalNoise.approximate(epsilon, delta).release(x, random_seed=rng)


def _monte_carlo_tolerance(probability, size):
    """Four Monte Carlo standard errors of a proportion estimated from ``size`` draws."""
    return 4 * math.sqrt(probability * (1 - probability) / size)


# --- reference values -------------------------------------------------------------------------


def test_opendp_reference_pvalues():
    """OpenDP's BinomialCND.p_value: Z = 3 (right tail) and Z = 1 (two-sided), n = 10, eps = 0.5, delta = 1e-8."""
    right = pp.binomial_test(3.0, 10, 0.5, 0.5, 1e-8, alternative="greater")
    two = pp.binomial_test(1.0, 10, 0.5, 0.5, 1e-8, alternative="two-sided")
    assert right == pytest.approx(0.7616207531435369, rel=1e-9)
    assert two == pytest.approx(0.1841407488015684, rel=1e-9)
    # the release is continuous, so the two one-sided p-values add to one
    assert pp.binomial_test(3.0, 10, 0.5, 0.5, 1e-8, alternative="less") == pytest.approx(1 - right, abs=1e-14)


def test_pvalues_match_opendp_on_a_grid():
    canonical = pytest.importorskip("opendp.extras.numpy.canonical")
    for z in [-2.3, 0.0, 3.7, 6.2, 11.4]:
        for theta0 in [0.1, 0.5, 0.83]:
            for epsilon, delta in [(0.5, 1e-8), (1.0, 0.0), (2.0, 0.05)]:
                d_out = (epsilon, delta)
                assert pp.binomial_test(z, 10, theta0, epsilon, delta) == pytest.approx(
                    canonical.one_sided_pvalue(z, 1.0, d_out, 10, theta0, "right"), rel=1e-9, abs=1e-15
                )
                assert pp.binomial_test(z, 10, theta0, epsilon, delta, alternative="less") == pytest.approx(
                    canonical.one_sided_pvalue(z, 1.0, d_out, 10, theta0, "left"), rel=1e-9, abs=1e-15
                )
                assert pp.binomial_test(z, 10, theta0, epsilon, delta, alternative="two-sided") == pytest.approx(
                    canonical.two_sided_pvalue(z, 1.0, d_out, 10, theta0), rel=1e-9, abs=1e-15
                )


def test_pure_dp_pvalue_is_the_tulap_convolution():
    """delta = 0: P(X + N >= z) summed with the Tulap class's own closed-form CDF; arrays give one each."""
    n, theta0, epsilon = 7, 0.3, 0.8
    z = np.array([-1.2, 2.0, 2.5, 9.9])
    k = np.arange(n + 1)
    expected = [(stats.binom.pmf(k, n, theta0) * (1 - Tulap(epsilon).cdf(value - k))).sum() for value in z]
    np.testing.assert_allclose(pp.binomial_test(z, n, theta0, epsilon), expected, rtol=1e-12)
    assert pp.binomial_test(z.reshape(2, 2), n, theta0, epsilon).shape == (2, 2)


def test_degenerate_nulls():
    """theta0 = 0 or 1: X is known, so the p-values are the noise's tails around 0 or n."""
    noise = Tulap(1.0)
    assert pp.binomial_test(1.7, 5, 0.0, 1.0) == pytest.approx(float(noise.sf(1.7)), rel=1e-13)
    assert pp.binomial_test(3.2, 5, 1.0, 1.0, alternative="less") == pytest.approx(float(noise.cdf(-1.8)), rel=1e-13)
    assert pp.binomial_test(3.2, 5, 1.0, 1.0, alternative="two-sided") == pytest.approx(
        2 * float(noise.cdf(-1.8)), rel=1e-13
    )


def test_opendp_interval_is_the_plug_in_acceptance_region_not_the_inversion():
    """OpenDP's 95 % interval for Z = 100, n = 1000, eps = 0.1, delta = 1e-8 is (0.06555..., 0.13444...).

    It keeps theta0 = Z / n = 0.1 and returns the releases B n at which the two-sided p-value is
    alpha, divided by n (hence its symmetry about 0.1). Our p-value reproduces those ends; the
    interval that inverts the test (the theta0 whose p-value at the observed Z is alpha) differs.
    """
    n, epsilon, delta = 1000, 0.1, 1e-8

    def plug_in_excess(b):
        return pp.binomial_test(b * n, n, 0.1, epsilon, delta, alternative="two-sided") - ALPHA

    low = optimize.brentq(plug_in_excess, 0.0, 0.1, xtol=1e-15)
    high = optimize.brentq(plug_in_excess, 0.1, 1.0, xtol=1e-15)
    assert low == pytest.approx(0.06555402885319662, rel=1e-9)
    assert high == pytest.approx(0.13444597114680337, rel=1e-9)

    inverted = pp.binomial_interval(100.0, n, epsilon, delta)
    assert inverted == pytest.approx((0.06691955627, 0.13580681965), abs=1e-10)
    for end in inverted:  # each end is a theta0 that the test at the observed Z rejects at exactly alpha
        assert pp.binomial_test(100.0, n, end, epsilon, delta, alternative="two-sided") == pytest.approx(
            ALPHA, rel=1e-9
        )


def test_interval_matches_binomialdp_example():
    """binomialDP's CITwoSide(alpha = 0.05, Z = 18, size = 30, b = exp(-1), q = 0.05) = (0.411, 0.767)."""
    b, q = math.exp(-1), 0.05
    delta = q * (1 - b) / (2 * b * (1 - q))  # q = 2 delta b / (1 - b + 2 delta b), solved for delta
    low, high = pp.binomial_interval(18.0, 30, 1.0, delta)
    assert (round(low, 3), round(high, 3)) == (0.411, 0.767)


def test_interval_edges():
    # Z = 0.3 of 10 with eps = 1: theta0 = 0 is not rejected, so the interval starts at 0
    low, high = pp.binomial_interval(0.3, 10, 1.0)
    assert low == 0.0 and pp.binomial_test(0.3, 10, 0.0, 1.0, alternative="two-sided") > ALPHA
    assert pp.binomial_test(0.3, 10, high, 1.0, alternative="two-sided") == pytest.approx(ALPHA, rel=1e-9)
    # a release far outside [0, n] is rejected under every theta0: the empty interval at the clipped estimate
    lows, highs = pp.binomial_interval([-30.0, 45.0], 10, 1.0)
    np.testing.assert_array_equal(lows, [0.0, 1.0])
    np.testing.assert_array_equal(highs, [0.0, 1.0])
    # a higher level gives a wider interval
    narrow, wide = pp.binomial_interval(4.0, 10, 1.0, level=0.8), pp.binomial_interval(4.0, 10, 1.0, level=0.99)
    assert wide[0] < narrow[0] < 0.4 < narrow[1] < wide[1]


# --- size, power and coverage by simulation ----------------------------------------------------


@pytest.mark.parametrize("alternative", ["greater", "less", "two-sided"])
def test_size_at_theta0(alternative):
    """Each p-value is Uniform(0, 1) under theta0: rejection rates about alpha for several alpha."""
    n, theta0, epsilon, delta = 30, 0.3, 1.0, 1e-3
    z = _releases(n, theta0, epsilon, delta, RELEASES, seed=11)
    p = pp.binomial_test(z, n, theta0, epsilon, delta, alternative=alternative)
    for alpha in [0.01, ALPHA, 0.2, 0.5]:
        assert abs(np.mean(p <= alpha) - alpha) < _monte_carlo_tolerance(alpha, RELEASES)


@pytest.mark.parametrize("alternative", ["greater", "less"])
def test_one_sided_rejection_rates_off_the_null_match_the_exact_power(alternative):
    """At theta = 0.2 < theta0 = 0.3 (inside H0 of "greater", inside H1 of "less") the test rejects
    when Z passes the critical value c (p(c; theta0) = alpha), with probability p(c; theta): below
    alpha for "greater" and the power for "less"; the simulated rates agree with it."""
    n, theta0, theta, epsilon, delta = 30, 0.3, 0.2, 1.0, 1e-3

    def excess(c):
        return pp.binomial_test(c, n, theta0, epsilon, delta, alternative=alternative) - ALPHA

    critical = optimize.brentq(excess, -10.0, n + 10.0, xtol=1e-12)
    exact = pp.binomial_test(critical, n, theta, epsilon, delta, alternative=alternative)
    assert exact < 0.01 if alternative == "greater" else exact > 0.25
    z = _releases(n, theta, epsilon, delta, RELEASES, seed=12)
    rate = np.mean(pp.binomial_test(z, n, theta0, epsilon, delta, alternative=alternative) <= ALPHA)
    assert abs(rate - exact) < _monte_carlo_tolerance(exact, RELEASES)


def _two_sided_power(theta, n, theta0, epsilon):
    """The exact rejection probability at level alpha: reject when |Z - n theta0| >= c."""

    def excess(c):
        return pp.binomial_test(n * theta0 + c, n, theta0, epsilon, alternative="two-sided") - ALPHA

    c = optimize.brentq(excess, 0.0, 10.0 * n, xtol=1e-13)
    return pp.binomial_test(n * theta0 + c, n, theta, epsilon) + pp.binomial_test(
        n * theta0 - c, n, theta, epsilon, alternative="less"
    )


def test_two_sided_test_is_unbiased_at_one_half_only_asymptotically_elsewhere():
    n, epsilon = 10, 1.0
    near = np.linspace(0.4, 0.6, 21)
    power = np.array([_two_sided_power(t, n, 0.5, epsilon) for t in near])
    assert power.min() >= ALPHA - 1e-12 and power[10] == pytest.approx(ALPHA, abs=1e-12)
    # at theta0 = 0.2 the power dips below alpha just below theta0: the test is not exactly UMPU there
    assert _two_sided_power(0.155, n, 0.2, epsilon) < 0.047


def test_interval_coverage():
    """Coverage of the 95 % interval over simulated releases, and theta in C(z) exactly when p(z; theta) > alpha."""
    n, theta, epsilon, delta, size = 30, 0.3, 1.0, 1e-3, 10_000
    z = _releases(n, theta, epsilon, delta, size, seed=13)
    low, high = pp.binomial_interval(z, n, epsilon, delta)
    covered = (low <= theta) & (theta <= high)
    assert abs(covered.mean() - 0.95) < _monte_carlo_tolerance(0.95, size)
    accepted = pp.binomial_test(z, n, theta, epsilon, delta, alternative="two-sided") > ALPHA
    np.testing.assert_array_equal(covered, accepted)


# --- argument checks ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "call, name",
    [
        (lambda: pp.binomial_test(3.0, 10, 1.5, 1.0), "theta0"),
        (lambda: pp.binomial_test(3.0, 10, -0.1, 1.0), "theta0"),
        (lambda: pp.binomial_test(3.0, 0, 0.5, 1.0), "n"),
        (lambda: pp.binomial_test(3.0, 2.5, 0.5, 1.0), "n"),
        (lambda: pp.binomial_test(3.0, 10, 0.5, 0.0), "epsilon"),
        (lambda: pp.binomial_test(3.0, 10, 0.5, -1.0), "epsilon"),
        (lambda: pp.binomial_test(3.0, 10, 0.5, 1.0, delta=1.0), "delta"),
        (lambda: pp.binomial_test(3.0, 10, 0.5, 1.0, delta=-1e-3), "delta"),
        (lambda: pp.binomial_test(math.nan, 10, 0.5, 1.0), "z"),
        (lambda: pp.binomial_test([1.0, math.inf], 10, 0.5, 1.0), "z"),
        (lambda: pp.binomial_test(3.0, 10, 0.5, 1.0, alternative="bigger"), "alternative"),
        (lambda: pp.binomial_interval(math.inf, 10, 1.0), "z"),
        (lambda: pp.binomial_interval(3.0, 0, 1.0), "n"),
        (lambda: pp.binomial_interval(3.0, 10, 0.0), "epsilon"),
        (lambda: pp.binomial_interval(3.0, 10, 1.0, delta=2.0), "delta"),
        (lambda: pp.binomial_interval(3.0, 10, 1.0, level=1.0), "level"),
    ],
)
def test_bad_input(call, name):
    with pytest.raises(ValueError, match=name):
        call()
