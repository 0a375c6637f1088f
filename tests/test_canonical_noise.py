"""The Tulap mechanism: canonical noise for f_{eps,0}, its exact CDF and density, and its use as a likelihood."""

import math

import numpy as np
import pytest
from conftest import matches_exact
from scipy import integrate, stats

import ppdinfer as pp
from ppdinfer.mechanisms import DiscreteLaplace, Tulap
from ppdinfer.privacy import laplace_tradeoff

SETTINGS = [(1.0, 1.0), (0.1, 1.0), (3.0, 2.5), (0.5, 0.2)]


def noise_density(m, t):
    return np.exp(m.logpdf(0.0, -np.asarray(t, dtype=float)))


@pytest.mark.parametrize("epsilon, sensitivity", SETTINGS)
def test_density_integrates_to_one_over_the_pieces(epsilon, sensitivity):
    m = Tulap(epsilon, sensitivity)
    width = int(math.ceil(40 / epsilon))  # b^width < 1e-17
    total = 0.0
    for k in range(-width, width + 1):
        lo, hi = (k - 0.5) * sensitivity, (k + 0.5) * sensitivity
        piece = integrate.quad(lambda t: float(noise_density(m, [t])[0]), lo, hi)[0]
        total += piece
        # each piece carries the CDF's increment over it
        assert math.isclose(piece, m.cdf(hi) - m.cdf(lo), rel_tol=1e-10, abs_tol=1e-15)
    assert abs(total - 1.0) < 1e-10


@pytest.mark.parametrize("epsilon", [0.1, 1.0, 3.0])
def test_density_is_the_discrete_laplace_pmf_on_each_unit_interval(epsilon):
    m = Tulap(epsilon)
    k = np.arange(-40, 41)
    pmf = np.exp(DiscreteLaplace(epsilon).logpdf(0, k))
    u = np.random.default_rng(0).uniform(-0.5, 0.5, size=(50, k.size))
    u[0] = 0.4999999  # near both ends of each piece
    u[1] = -0.4999999
    for row in u:
        assert np.allclose(noise_density(m, k + row), pmf, rtol=1e-12, atol=0)
    # the formula's form: (1 - b) / (1 + b) b^|k|
    b = math.exp(-epsilon)
    assert np.allclose(pmf, (1 - b) / (1 + b) * b ** np.abs(k), rtol=1e-12)
    # log_bound is the density's maximum, attained on the central piece
    assert math.isclose(m.log_bound(size=3), float(m.logpdf(np.zeros(3), np.full((1, 3), 0.3))[0]), rel_tol=1e-14)
    assert np.all(m.logpdf(0.0, np.linspace(-5, 5, 1001)) <= m.log_bound() + 1e-15)


@pytest.mark.parametrize("epsilon, sensitivity", SETTINGS)
def test_cdf_matches_releases(epsilon, sensitivity):
    m = Tulap(epsilon, sensitivity)
    x = 7.25
    y = m.release(np.full(100_000, x), random_seed=2026)
    result = stats.kstest(y - x, m.cdf)
    assert result.pvalue > 1e-3, result
    # symmetry, limits, and the quantile function inverts the CDF
    t = np.linspace(-30, 30, 2001) * sensitivity
    assert np.allclose(m.cdf(t) + m.cdf(-t), 1.0, atol=1e-15)
    assert np.all(np.diff(m.cdf(t)) >= 0)
    p = np.linspace(1e-6, 1 - 1e-6, 1001)
    assert np.allclose(m.cdf(m.ppf(p)), p, atol=1e-14)


@pytest.mark.parametrize("epsilon, sensitivity", SETTINGS + [(1e-3, 1.0), (20.0, 1.0)])
def test_tulap_is_canonical_for_pure_dp(epsilon, sensitivity):
    # location family with monotone likelihood ratio: T(alpha) = F(F^-1(1 - alpha) - Delta),
    # evaluated through the symmetry F^-1(1 - alpha) = -F^-1(alpha) as sf(F^-1(alpha) + Delta)
    m = Tulap(epsilon, sensitivity)
    alpha = np.concatenate([np.logspace(-14, -2, 300), np.linspace(0.001, 0.999, 2001), 1 - np.logspace(-2, -12, 100)])
    tradeoff = m.sf(m.ppf(alpha) + sensitivity)
    assert np.max(np.abs(tradeoff - laplace_tradeoff(alpha, epsilon))) < 1e-12
    if epsilon <= 3:  # the literal form loses 1 - alpha's rounding only
        literal = m.cdf(m.ppf(1 - alpha) - sensitivity)
        assert np.max(np.abs(literal - laplace_tradeoff(alpha, epsilon))) < 1e-12


def test_scaling_by_the_sensitivity_matters():
    # unit-scale Tulap with b = exp(-eps / Delta) (no scaling) is eps-DP at integer Delta but not canonical
    epsilon, delta = 1.0, 2.0
    unit = Tulap(epsilon / delta)
    alpha = np.linspace(0.01, 0.99, 99)
    gap = unit.sf(unit.ppf(alpha) + delta) - laplace_tradeoff(alpha, epsilon)
    assert gap.max() > 1e-3 and gap.min() > -1e-12


@pytest.mark.parametrize("epsilon, sensitivity", SETTINGS)
def test_privacy_loss_is_exactly_epsilon(epsilon, sensitivity):
    m = Tulap(epsilon, sensitivity)
    rng = np.random.default_rng(1)
    # points inside the pieces (the density's jumps are a null set where rounding of (y - x) / Delta
    # may pick either neighbour)
    k = np.repeat(np.arange(-12, 13), 400)
    u = np.concatenate([np.linspace(-0.5 + 1e-6, 0.5 - 1e-6, 200), rng.uniform(-0.4999, 0.4999, 200)])
    for x in (0.0, 3.3):
        y = x + (k + np.tile(u, 25)) * sensitivity
        loss = m.logpdf(0.0, x - y) - m.logpdf(0.0, x + sensitivity - y)
        assert abs(np.max(np.abs(loss)) - epsilon) < 1e-12
        assert np.allclose(np.abs(loss), epsilon, rtol=1e-12)  # |loss| = epsilon on every piece
        # and a shift by less than the sensitivity never loses more
        small = m.logpdf(0.0, x - y) - m.logpdf(0.0, x + 0.6 * sensitivity - y)
        assert np.max(np.abs(small)) <= epsilon + 1e-12


@pytest.fixture(scope="module")
def beta_binomial_tulap():
    model = pp.PPDModel(pp.priors.Beta(2, 2), pp.generators.Binomial(20), Tulap(1.0), names="p")
    y = 13.37
    return model, y, pp.exact_posterior(model, y, random_seed=0)


def test_rejection_sampler_matches_exact_posterior(beta_binomial_tulap):
    model, y, exact = beta_binomial_tulap
    result = pp.rejection_sample(model, y, draws=3000, random_seed=11, progressbar=False)
    assert result.attrs["complete"]
    assert matches_exact(result, exact, "p")
    expected = np.exp(float(exact["exact"]["log_evidence"]) - float(result["sample_stats"]["log_bound"]))
    observed = float(result["sample_stats"]["acceptance_rate"])
    n = int(result["sample_stats"]["total_proposals"])
    assert abs(observed - expected) < 4.5 * np.sqrt(expected * (1 - expected) / n)


def test_exact_posterior_by_hand(beta_binomial_tulap):
    model, y, exact = beta_binomial_tulap
    x = np.arange(21)
    from scipy.special import betaln, gammaln
    log_prior_x = gammaln(21) - gammaln(x + 1) - gammaln(21 - x) + betaln(x + 2, 20 - x + 2) - betaln(2, 2)
    # Tulap(1) density at y - x: pmf of the discrete Laplace at round(y - x) = 13 - x
    log_post = log_prior_x + np.log(math.tanh(0.5)) - np.abs(13 - x)
    post = np.exp(log_post - log_post.max())
    post /= post.sum()
    mean = post @ ((x + 2) / 24)
    assert math.isclose(float(exact["exact"]["theta_mean"].values.reshape(-1)[0]), mean, rel_tol=1e-9)


def test_bad_input():
    for bad in (0.0, -1.0, math.inf, math.nan, "1"):
        with pytest.raises(ValueError, match="epsilon"):
            Tulap(bad)
        with pytest.raises(ValueError, match="sensitivity"):
            Tulap(1.0, bad)
    m = Tulap(1.0)
    for bad in ([1.0, math.nan], [math.inf], -math.inf):
        with pytest.raises(ValueError, match="x"):
            m.release(bad, random_seed=0)
        with pytest.raises(ValueError, match="x"):
            m.logpdf(0.0, np.atleast_1d(bad))
    with pytest.raises(ValueError, match="y"):
        m.logpdf(math.nan, [0.0])
    with pytest.raises(ValueError, match="p must"):
        m.ppf([0.0, 0.5])
    with pytest.raises(ValueError, match="t must"):
        m.cdf(math.nan)
    assert m.cdf(-math.inf) == 0.0 and m.cdf(math.inf) == 1.0


def test_release_is_reproducible_and_shaped():
    m = Tulap(0.7, 3.0)
    a = m.release([[1.0, 2.5], [3.0, -4.0]], random_seed=5)
    assert a.shape == (2, 2) and a.dtype == np.float64
    assert np.array_equal(a, m.release([[1.0, 2.5], [3.0, -4.0]], random_seed=5))
    assert m == Tulap(0.7, 3.0) and repr(m) == "Tulap(epsilon=0.7, sensitivity=3.0)"
    assert "Tulap" in pp.mechanisms.__all__
