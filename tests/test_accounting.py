"""f-DP, Gaussian DP and zCDP accounting for Semi-DP (Cho & Awan; ppdinfer.privacy.accounting)."""

import math
import warnings

import mpmath
import numpy as np
import pytest
from scipy import integrate, optimize, stats

from ppdinfer.privacy import (
    ZCDPGroupAccount,
    gaussian_tradeoff,
    gaussian_zcdp_epsilon,
    gdp_delta,
    gdp_epsilon,
    gdp_group,
    laplace_tradeoff,
    zcdp_epsilon,
    zcdp_group,
    zcdp_group_account,
)

MUS = [1e-3, 0.01, 0.1, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0]
EPSILONS = [1e-3, 0.01, 0.1, 0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0, 300.0]


def precise_delta(mu, epsilon, digits=80):
    """delta(eps) of mu-GDP evaluated directly in `digits`-digit arithmetic."""
    with mpmath.workdps(digits):
        mu, epsilon = mpmath.mpf(mu), mpmath.mpf(epsilon)
        return +(mpmath.ncdf(-epsilon / mu + mu / 2) - mpmath.exp(epsilon) * mpmath.ncdf(-epsilon / mu - mu / 2))


def pld_delta(mu, epsilon):
    """delta(eps) = E[(1 - e^(eps - L))_+] with the privacy loss L ~ N(mu^2 / 2, mu^2), by quadrature."""
    loss = stats.norm(mu**2 / 2, mu)
    value, _ = integrate.quad(
        lambda l: -math.expm1(epsilon - l) * loss.pdf(l), epsilon, np.inf, epsabs=0, epsrel=1e-12, limit=200
    )
    return value


# --- tradeoff functions ------------------------------------------------------------------------


@pytest.mark.parametrize("mu", [0.1, 1.0, 3.0])
def test_gaussian_tradeoff_closed_forms(mu):
    assert gaussian_tradeoff(0.5, mu) == pytest.approx(stats.norm.cdf(-mu), rel=1e-14)
    assert gaussian_tradeoff(0.0, mu) == 1.0 and gaussian_tradeoff(1.0, mu) == 0.0
    alpha = np.linspace(0.0, 1.0, 201)
    curve = gaussian_tradeoff(alpha, mu)
    # G_mu is the type-II error of the Neyman-Pearson test of N(0, 1) against N(mu, 1)
    threshold = stats.norm.isf(alpha[1:-1])
    assert np.allclose(curve[1:-1], stats.norm.cdf(threshold, loc=mu), rtol=1e-12, atol=0)
    # symmetric (its own inverse), decreasing, convex, below 1 - alpha
    assert np.allclose(gaussian_tradeoff(curve, mu), alpha, atol=1e-12)
    assert np.all(np.diff(curve) < 0) and np.all(np.diff(curve, 2) > -1e-15)
    assert np.all(curve[1:-1] < 1 - alpha[1:-1])


def test_gaussian_tradeoff_far_tail():
    """Phi^{-1}(1 - alpha) with alpha = 1e-300 is lost in 1 - alpha; -Phi^{-1}(alpha) is not."""
    alpha, mu = 1e-300, 40.0
    with mpmath.workdps(50):
        z = mpmath.findroot(lambda z: mpmath.log(mpmath.ncdf(-z)) - mpmath.log(mpmath.mpf(alpha)), 37)
        expected = float(mpmath.ncdf(z - mu))
    assert 1e-3 < expected < 1e-2
    assert gaussian_tradeoff(alpha, mu) == pytest.approx(expected, rel=1e-10)


@pytest.mark.parametrize("epsilon", [0.1, 1.0, 3.0])
def test_laplace_tradeoff_closed_forms(epsilon):
    alpha = np.linspace(0.0, 1.0, 101)
    curve = laplace_tradeoff(alpha, epsilon)
    expected = np.maximum.reduce(
        [np.zeros_like(alpha), 1 - math.exp(epsilon) * alpha, math.exp(-epsilon) * (1 - alpha)]
    )
    assert np.allclose(curve, expected, rtol=1e-14, atol=1e-16)
    kink = 1 / (1 + math.exp(epsilon))
    assert laplace_tradeoff(kink, epsilon) == pytest.approx(kink, rel=1e-14)
    assert np.allclose(laplace_tradeoff(curve, epsilon), alpha, atol=1e-12)  # symmetric
    assert np.all(np.diff(curve) <= 0)


def test_laplace_tradeoff_large_epsilon_no_overflow():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        values = laplace_tradeoff([0.0, 1e-300, 0.5, 1.0], 800.0)
    assert values[0] == 1.0 and values[2] == 0.0 and values[3] == 0.0
    assert values[1] == 0.0  # e^800 * 1e-300 > 1


def test_gaussian_tradeoff_dominates_its_delta_curve():
    """delta(eps) = max_alpha 1 - G_mu(alpha) - e^eps alpha: the tradeoff and the curve agree."""
    for mu, epsilon in [(0.5, 0.2), (1.0, 1.0), (2.0, 1.5), (3.0, 4.0)]:
        best = optimize.minimize_scalar(
            lambda a: -(1 - gaussian_tradeoff(a, mu) - math.exp(epsilon) * a),
            bounds=(0.0, 1.0),
            method="bounded",
            options={"xatol": 1e-12},
        )
        assert -best.fun == pytest.approx(gdp_delta(mu, epsilon), rel=1e-7, abs=1e-12)


# --- the exact GDP curve -------------------------------------------------------------------------


def test_gdp_delta_closed_form():
    assert gdp_delta(1.0, 1.0) == pytest.approx(stats.norm.cdf(-0.5) - math.e * stats.norm.cdf(-1.5), rel=1e-13)


def test_gdp_delta_against_80_digits():
    worst = 0.0
    for mu in MUS:
        for epsilon in EPSILONS:
            exact = precise_delta(mu, epsilon)
            got = gdp_delta(mu, epsilon)
            if exact < 1e-300:  # below the float range (gaussian_delta flushes to 0 there)
                assert got <= 1e-290
                continue
            worst = max(worst, float(abs(got - exact) / exact))
    assert worst < 1e-9  # measured 1.5e-10 (mu = 1e-3, eps = 0.01, delta = 7.5e-28)


@pytest.mark.parametrize(
    "mu, epsilon", [(0.3, 0.1), (0.5, 1.0), (1.0, 0.5), (1.0, 2.0), (2.0, 1.0), (3.0, 5.0), (5.0, 3.0)]
)
def test_gdp_delta_against_privacy_loss_integral(mu, epsilon):
    assert gdp_delta(mu, epsilon) == pytest.approx(pld_delta(mu, epsilon), rel=1e-9)


def test_gdp_delta_monotone():
    epsilons = np.geomspace(1e-3, 50, 60)
    for mu in [0.1, 1.0, 4.0]:
        curve = np.array([gdp_delta(mu, e) for e in epsilons])
        positive = curve > 0  # far enough out it is below the smallest float
        assert np.all(np.diff(curve) <= 0) and np.all(np.diff(curve[positive]) < 0)
    mus = np.geomspace(0.05, 10, 60)
    for epsilon in [0.1, 1.0, 5.0]:
        curve = np.array([gdp_delta(m, epsilon) for m in mus])
        positive = curve > 0
        assert np.all(np.diff(curve) >= 0) and np.all(np.diff(curve[positive]) > 0)


def test_gdp_delta_extremes():
    assert gdp_delta(1.0, 800.0) == 0.0  # e^800 would overflow; the log scale does not
    assert gdp_delta(40.0, 1e-3) == 1.0  # 1 - 1e-89 rounds to 1
    assert gdp_delta(8.0, 1e-3) == pytest.approx(float(precise_delta(8.0, 1e-3)), rel=1e-14)
    assert gdp_delta(1e-6, 1e-3) == pytest.approx(float(precise_delta(1e-6, 1e-3)), rel=1e-9)


# --- the inverse ---------------------------------------------------------------------------------


@pytest.mark.parametrize("mu", [0.05, 0.5, 1.0, 3.0, 10.0])
@pytest.mark.parametrize("delta", [1e-100, 1e-10, 1e-5, 0.01])
def test_gdp_epsilon_conservative_round_trip(mu, delta):
    epsilon = gdp_epsilon(mu, delta)
    total_variation = 2 * stats.norm.cdf(mu / 2) - 1
    if delta >= total_variation:
        assert epsilon == 0.0
        return
    assert precise_delta(mu, epsilon) <= delta  # never more than the target
    assert float(precise_delta(mu, epsilon * (1 - 1e-8))) > delta  # and not needlessly large
    assert gdp_epsilon(mu, gdp_delta(mu, epsilon)) == pytest.approx(epsilon, rel=1e-8)


def test_gdp_epsilon_zero_above_total_variation():
    mu = 0.05  # delta(0) = 2 Phi(mu / 2) - 1 = 0.0199
    assert gdp_epsilon(mu, 0.03) == 0.0
    assert gdp_epsilon(mu, 0.019) > 0


def test_gdp_epsilon_monotone():
    deltas = np.geomspace(1e-12, 1e-2, 25)
    eps = [gdp_epsilon(1.0, d) for d in deltas]
    assert np.all(np.diff(eps) < 0)
    eps = [gdp_epsilon(m, 1e-6) for m in np.geomspace(0.1, 10, 25)]
    assert np.all(np.diff(eps) > 0)


# --- zCDP ----------------------------------------------------------------------------------------


def test_zcdp_epsilon_closed_form():
    assert zcdp_epsilon(0.5, math.exp(-2)) == pytest.approx(0.5 + 2 * math.sqrt(0.5 * 2), rel=1e-15)


# the 2020 Census persons budget (rho = 2.56) and its Semi-DP group version (4 rho), at delta = 1e-10
CENSUS_EPSILONS = {"standard": (17.91528, 40.95057), "optimal": (17.15831, 39.82257), "gaussian": (16.47939, 38.40502)}


@pytest.mark.parametrize("bound", sorted(CENSUS_EPSILONS))
def test_zcdp_bounds_census_numbers(bound):
    eps = [zcdp_epsilon(rho, 1e-10, bound=bound) for rho in (2.56, 10.24)]
    assert [round(e, 5) for e in eps] == list(CENSUS_EPSILONS[bound])
    assert zcdp_epsilon(2.56, 1e-10) == zcdp_epsilon(2.56, 1e-10, bound="standard")
    assert zcdp_epsilon(2.56, 1e-10, bound="gaussian") == gaussian_zcdp_epsilon(2.56, 1e-10)


@pytest.mark.parametrize("rho", [1e-6, 0.01, 0.5, 2.56, 100.0, 1e4])
@pytest.mark.parametrize("delta", [1e-300, 1e-10, 0.1, 0.9])
def test_optimal_zcdp_bound_is_the_minimum_over_renyi_orders(rho, delta):
    """Canonne, Kamath & Steinke (2020), Proposition 12 at tau = alpha rho, minimized over a dense grid of alpha."""
    log_excess = np.linspace(-30.0, 30.0, 600_001)  # log(alpha - 1)
    alpha = 1.0 + np.exp(log_excess)
    objective = alpha * rho + (-math.log(delta) - log_excess + alpha * (log_excess - np.log(alpha))) / (alpha - 1)
    on_grid = max(0.0, objective.min())
    eps = zcdp_epsilon(rho, delta, bound="optimal")
    assert eps <= on_grid * (1 + 1e-12)
    assert on_grid - eps <= 1e-8 * on_grid


@pytest.mark.parametrize("rho", [1e-4, 0.01, 0.1, 0.5, 1.0, 2.56, 10.24, 100.0])
@pytest.mark.parametrize("delta", [1e-300, 1e-10, 1e-5, 0.1, 0.9])
def test_zcdp_bounds_are_ordered(rho, delta):
    """The exact Gaussian eps <= the optimal conversion <= the standard bound, everywhere on the grid."""
    gaussian = zcdp_epsilon(rho, delta, bound="gaussian")
    assert gaussian == gaussian_zcdp_epsilon(rho, delta) == gdp_epsilon(math.sqrt(2 * rho), delta)
    optimal = zcdp_epsilon(rho, delta, bound="optimal")
    assert gaussian <= optimal < zcdp_epsilon(rho, delta, bound="standard")


def test_optimal_zcdp_bound_matches_opendp():
    """OpenDP's zCDP -> (eps, delta) cast is the same conversion (up to delta = 0.3: near delta = 1 it
    searches fewer orders and reports a larger eps, e.g. 4.59 against 3.10 at rho = 10, delta = 0.999)."""
    dp = pytest.importorskip("opendp.prelude")
    dp.enable_features("contrib")
    for rho in [1e-3, 0.1, 2.56, 10.24, 1e3]:
        gaussian = dp.m.make_gaussian(
            dp.atom_domain(T=float, nan=False), dp.absolute_distance(T=float), scale=1 / math.sqrt(2 * rho)
        )
        profile = dp.c.make_zCDP_to_approxDP(gaussian).map(1.0)
        for delta in [1e-300, 1e-10, 1e-5, 0.01, 0.3]:
            assert zcdp_epsilon(rho, delta, bound="optimal") == pytest.approx(profile.epsilon(delta), rel=1e-9)


# --- group privacy -------------------------------------------------------------------------------


@pytest.mark.parametrize("k", [1, 2, 3, 7])
def test_group_rules(k):
    assert gdp_group(0.3, k) == pytest.approx(0.3 * k)
    assert zcdp_group(0.3, k) == pytest.approx(0.3 * k**2)
    mu = 0.7  # rho = mu^2 / 2: the two rules agree
    assert zcdp_group(mu**2 / 2, k) == pytest.approx(gdp_group(mu, k) ** 2 / 2, rel=1e-14)
    # a Gaussian query of sensitivity 1 moves by at most k over k record changes: G_{k mu}
    assert gdp_delta(gdp_group(mu, k), 1.0) == pytest.approx(precise_delta(k * mu, 1.0), rel=1e-9)
    assert gdp_group(mu, 1) == mu and zcdp_group(mu, 1) == mu


def test_group_size_must_be_whole():
    assert gdp_group(1.0, 2.0) == 2.0  # a whole float is accepted
    with pytest.raises(ValueError, match="k must be a positive integer"):
        gdp_group(1.0, 1.5)


# --- the 2020 Census (Semi-DP paper, Section 6) --------------------------------------------------


def test_census_numbers_of_section_6():
    """rho = 2.56 (persons tables), delta = 1e-10, a(t) = 2 for the state-population invariant."""
    dp = zcdp_group_account(2.56, 1e-10)
    semi = zcdp_group_account(2.56, 1e-10, k=2)
    assert isinstance(dp, ZCDPGroupAccount) and dp.k == 1 and semi.k == 2
    assert dp.rho == 2.56 and semi.rho == pytest.approx(10.24, rel=1e-15)
    # printed in the paper (Lemma 40, the standard bound), to its 5 decimals
    assert round(dp.epsilon_bound, 5) == 17.91528
    assert round(semi.epsilon_bound, 5) == 40.95057
    # the exact conversion for a continuous Gaussian mechanism: smaller (not in the paper)
    with mpmath.workdps(40):
        for account in (dp, semi):
            mu = mpmath.sqrt(2 * mpmath.mpf(account.rho))
            root = mpmath.findroot(
                lambda e: mpmath.log(precise_delta(mu, e, 40)) - mpmath.log(mpmath.mpf(1e-10)),
                (0.5, 80),
                solver="anderson",
            )
            assert account.epsilon_gaussian == pytest.approx(float(root), rel=1e-10)
    assert round(dp.epsilon_gaussian, 4) == 16.4794 and round(semi.epsilon_gaussian, 4) == 38.4050
    assert dp.epsilon_gaussian < dp.epsilon_bound and semi.epsilon_gaussian < semi.epsilon_bound


# --- bad input -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "call, name",
    [
        (lambda: gaussian_tradeoff(0.5, 0.0), "mu"),
        (lambda: gaussian_tradeoff(0.5, -1.0), "mu"),
        (lambda: gaussian_tradeoff(1.5, 1.0), "alpha"),
        (lambda: gaussian_tradeoff([0.1, -0.1], 1.0), "alpha"),
        (lambda: gaussian_tradeoff(float("nan"), 1.0), "alpha"),
        (lambda: laplace_tradeoff(0.5, 0.0), "epsilon"),
        (lambda: laplace_tradeoff(-0.5, 1.0), "alpha"),
        (lambda: gdp_delta(0.0, 1.0), "mu"),
        (lambda: gdp_delta(float("inf"), 1.0), "mu"),
        (lambda: gdp_delta(1.0, 0.0), "epsilon"),
        (lambda: gdp_delta(1.0, -1.0), "epsilon"),
        (lambda: gdp_epsilon(-1.0, 1e-5), "mu"),
        (lambda: gdp_epsilon(1.0, 0.0), "delta"),
        (lambda: gdp_epsilon(1.0, 1.0), "delta"),
        (lambda: zcdp_epsilon(0.0, 1e-5), "rho"),
        (lambda: zcdp_epsilon(1.0, 1.5), "delta"),
        (lambda: zcdp_epsilon(0.0, 1e-5, bound="optimal"), "rho"),
        (lambda: zcdp_epsilon(1.0, 0.0, bound="optimal"), "delta"),
        (lambda: zcdp_epsilon(-1.0, 1e-5, bound="gaussian"), "rho"),
        (lambda: zcdp_epsilon(1.0, 1e-5, bound="tight"), "bound"),
        (lambda: gaussian_zcdp_epsilon(-2.0, 1e-5), "rho"),
        (lambda: gaussian_zcdp_epsilon(1.0, 0.0), "delta"),
        (lambda: gdp_group(0.0, 2), "mu"),
        (lambda: gdp_group(1.0, 0), "k"),
        (lambda: zcdp_group(-1.0, 2), "rho"),
        (lambda: zcdp_group(1.0, -3), "k"),
        (lambda: zcdp_group_account(2.56, 1e-10, k=0), "k"),
        (lambda: zcdp_group_account(0.0, 1e-10), "rho"),
        (lambda: zcdp_group_account(1.0, 2.0), "delta"),
        (lambda: gdp_delta("1", 1.0), "mu"),
        (lambda: gdp_delta(True, 1.0), "mu"),
    ],
)
def test_bad_input_names_the_parameter(call, name):
    with pytest.raises(ValueError, match=rf"^{name} must"):
        call()
