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


# --- CanonicalNoise: Lemma 36's construction for any symmetric tradeoff function ---------------

from ppdinfer.mechanisms.canonical import CanonicalNoise  # noqa: E402
from ppdinfer.privacy import gaussian_tradeoff  # noqa: E402

LEVELS = np.concatenate([np.logspace(-14, -2, 300), np.linspace(0.001, 0.999, 2001), 1 - np.logspace(-2, -12, 100)])


def tradeoff_of(noise, alpha):
    """T(F, F(. - 1))(alpha) = F(F^{-1}(1 - alpha) - 1), through the symmetry as sf(F^{-1}(alpha) + 1)."""
    return noise.sf(noise.ppf(alpha) + noise.sensitivity)


@pytest.mark.parametrize("mu", [0.1, 0.5, 1.0, 2.0, 5.0])
def test_lemma_36_is_canonical_for_gaussian_dp(mu):
    exact = CanonicalNoise.gaussian(mu)
    general = CanonicalNoise(lambda a: gaussian_tradeoff(a, mu))
    for noise in (exact, general):
        assert abs(noise.c - stats.norm.cdf(-mu / 2)) < 1e-14
        assert np.max(np.abs(tradeoff_of(noise, LEVELS) - gaussian_tradeoff(LEVELS, mu))) < 1e-12
    # the exact tails keep full relative precision far out, where F ~ 1e-200
    far = np.array([1e-200, 1e-100, 1e-30])
    assert np.allclose(exact.cdf(exact.ppf(far)), far, rtol=1e-10, atol=0)
    assert np.allclose(tradeoff_of(exact, far), gaussian_tradeoff(far, mu), rtol=1e-9, atol=0)


@pytest.mark.parametrize("mu", [0.5, 1.0, 2.0])
def test_gaussian_cnd_of_lemma_36_is_not_the_normal(mu):
    # erratum: N(0, 1 / mu^2) is canonical for G_mu too, but it is not Lemma 36's distribution
    normal = stats.norm(scale=1 / mu)
    assert np.max(np.abs(normal.sf(normal.ppf(LEVELS) + 1) - gaussian_tradeoff(LEVELS, mu))) < 1e-12
    lemma = CanonicalNoise.gaussian(mu)
    # both map Phi^{-1}(F(x - 1)) = Phi^{-1}(F(x)) - mu, so they agree on the half-integers ...
    half = np.arange(-12, 13) / 2 / max(mu, 1.0)
    half = np.round(half * 2) / 2
    assert np.allclose(lemma.cdf(half), normal.cdf(half), rtol=1e-12, atol=1e-300)
    # ... and differ in between: Lemma 36 is linear on [-1/2, 1/2], the normal is not
    quarter = np.arange(-8, 8) + 0.25
    gap = np.abs(lemma.cdf(quarter) - normal.cdf(quarter))
    assert gap.max() > 1e-4
    assert np.allclose(np.diff(lemma.cdf(np.linspace(-0.5, 0.5, 11))), (1 - 2 * lemma.c) / 10, rtol=1e-12)


@pytest.mark.parametrize("epsilon, sensitivity", SETTINGS + [(20.0, 1.0)])
def test_lemma_36_for_pure_dp_is_tulap(epsilon, sensitivity):
    tulap = Tulap(epsilon, sensitivity)
    exact = CanonicalNoise.pure(epsilon, sensitivity)
    general = CanonicalNoise(lambda a: laplace_tradeoff(a, epsilon), sensitivity)
    t = (np.linspace(-25, 25, 5001) + 0.0137) * sensitivity
    assert np.max(np.abs(exact.cdf(t) - tulap.cdf(t))) < 1e-15
    assert np.max(np.abs(general.cdf(t) - tulap.cdf(t))) < 1e-14
    # the density is the derivative of the recursion: Tulap's, piece by piece
    density = noise_density(tulap, t)
    assert np.allclose(exact.pdf(t), density, rtol=1e-12, atol=0)
    assert np.allclose(exact.logpdf(0.0, -t), tulap.logpdf(0.0, -t), rtol=1e-12, atol=1e-12)
    moderate = tulap.cdf(-np.abs(t)) > 1e-8  # a general callable rounds 1 - p in the far tails
    assert np.allclose(general.pdf(t[moderate]), density[moderate], rtol=1e-8, atol=0)
    assert math.isclose(exact.log_bound(size=3), tulap.log_bound(size=3), rel_tol=1e-14, abs_tol=1e-15)
    assert np.max(np.abs(tradeoff_of(exact, LEVELS) - laplace_tradeoff(LEVELS, epsilon))) < 1e-12


@pytest.mark.parametrize("epsilon, sensitivity", SETTINGS + [(20.0, 1.0), (1e-3, 1.0)])
def test_tulap_cdf_sf_ppf_equal_lemma_36_for_pure_dp_into_the_far_tails(epsilon, sensitivity):
    # Tulap's closed form and Lemma 36's recursion for f_{eps,0} are computed independently (the
    # shared symmetric wrappers aside): relative agreement down to F ~ 1e-300 in both tails
    tulap, lemma = Tulap(epsilon, sensitivity), CanonicalNoise.pure(epsilon, sensitivity)
    reach = 700 / epsilon  # F(-reach) ~ e^-700
    pieces = np.arange(-30, 31)
    t = sensitivity * np.concatenate([np.linspace(-reach, reach, 4001) + 0.0137, pieces + 0.5, pieces - 0.5, [0.0]])
    assert tulap.cdf(-reach * sensitivity) < 1e-290
    for name in ("cdf", "sf"):
        ours, theirs = getattr(tulap, name)(t), getattr(lemma, name)(t)
        assert np.all(theirs > 0)
        assert np.max(np.abs(ours / theirs - 1)) < 1e-12, name
    tiny = np.logspace(-300, -1, 300)
    p = np.concatenate([tiny, np.linspace(0.01, 0.99, 99), 1 - tiny[tiny > 1e-16], [0.5]])
    ours, theirs = tulap.ppf(p), lemma.ppf(p)
    assert np.all(np.abs(ours - theirs) <= 1e-12 * np.maximum(np.abs(theirs), sensitivity))
    assert np.all(np.sign(ours[p != 0.5]) == np.sign(p[p != 0.5] - 0.5))  # the upper half mirrors the lower
    # and both are the closed form at the piece ends: F(-(j + 1/2) Delta) = b^(j + 1) / (1 + b), by either tail
    j = np.unique(np.linspace(0, reach - 1, 200).astype(int))
    ends = (j + 0.5) * sensitivity
    closed = np.exp(-(j + 1) * epsilon - math.log1p(math.exp(-epsilon)))
    for noise in (tulap, lemma):
        assert np.allclose(noise.cdf(-ends), closed, rtol=1e-12, atol=0)
        assert np.allclose(noise.sf(ends), closed, rtol=1e-12, atol=0)
        assert np.allclose(noise.cdf(ends), 1 - closed, rtol=0, atol=1e-15)
        assert np.allclose(noise.ppf(closed), -ends, rtol=1e-12, atol=0)
        assert np.allclose(noise.ppf(1 - closed[closed > 1e-3]), ends[closed > 1e-3], rtol=1e-12, atol=0)
    # the general callable iterates f itself: equal to rounding where its tails are resolved
    general = CanonicalNoise(lambda a: laplace_tradeoff(a, epsilon), sensitivity)
    near = t[np.abs(t) <= 40 * sensitivity]
    assert np.max(np.abs(general.cdf(near) - tulap.cdf(near))) < 1e-12
    assert np.max(np.abs(general.sf(near) - tulap.sf(near))) < 1e-12


@pytest.mark.parametrize("epsilon, delta", [(1.0, 0.05), (0.5, 0.001), (2.0, 0.2)])
def test_approximate_dp_gives_the_truncated_tulap(epsilon, delta):
    noise = CanonicalNoise.approximate(epsilon, delta)
    b = math.exp(-epsilon)
    q = 2 * delta * b / (1 - b + 2 * delta * b)  # Awan & Vadhan: Tulap(0, b, q) is the CND of f_{eps,delta}
    t = np.linspace(-15, 15, 3001) + 0.0137
    truncated = np.clip((Tulap(epsilon).cdf(t) - q / 2) / (1 - q), 0, 1)
    assert np.max(np.abs(noise.cdf(t) - truncated)) < 1e-15

    def f(alpha):
        steep = 1 - delta - math.exp(epsilon) * alpha
        return np.maximum(np.maximum(0, steep), math.exp(-epsilon) * (1 - delta - alpha))

    assert np.max(np.abs(tradeoff_of(noise, LEVELS) - f(LEVELS))) < 1e-12
    assert noise.pdf(-20.0) == 0.0 and noise.cdf(-20.0) == 0.0  # bounded support


@pytest.mark.parametrize(
    "noise",
    [
        CanonicalNoise.gaussian(1.0),
        CanonicalNoise.gaussian(0.3, 2.0),
        CanonicalNoise.pure(0.7, 3.0),
        CanonicalNoise.approximate(1.0, 0.1),
    ],
    ids=repr,
)
def test_canonical_noise_distribution_is_consistent(noise):
    # symmetry, monotonicity, quantiles invert the CDF
    t = np.linspace(-30, 30, 2001) * noise.sensitivity
    assert np.allclose(noise.cdf(t) + noise.cdf(-t), 1.0, atol=1e-15)
    assert np.all(np.diff(noise.cdf(t)) >= 0)
    p = np.linspace(1e-6, 1 - 1e-6, 1001)
    assert np.allclose(noise.cdf(noise.ppf(p)), p, rtol=1e-12, atol=1e-15)
    # the density integrates to the CDF's increments, and log_bound is its maximum
    for lo, hi in [(-3.3, -1.2), (-0.7, 0.4), (1.1, 5.2)]:
        lo, hi = lo * noise.sensitivity, hi * noise.sensitivity
        edge = -noise.ppf(1e-300)  # the end of a bounded support (delta > 0), where the density jumps
        kinks = np.append((np.arange(-6, 7) + 0.5) * noise.sensitivity, [-edge, edge])
        inside = kinks[(kinks > lo) & (kinks < hi)]
        piece = integrate.quad(lambda v: float(noise.pdf(v)), lo, hi, points=inside, limit=200)[0]
        assert math.isclose(piece, noise.cdf(hi) - noise.cdf(lo), rel_tol=1e-9, abs_tol=1e-14)
    assert np.max(noise.logpdf(0.0, t)) <= noise.log_bound() + 1e-13
    assert math.isclose(float(noise.logpdf(0.0, [0.1])[0]), noise.log_bound(), rel_tol=1e-13)
    # inverse-CDF releases follow the CDF
    x = -4.5
    y = noise.release(np.full(50_000, x), random_seed=2027)
    assert stats.kstest(y - x, noise.cdf).pvalue > 1e-3


def test_canonical_noise_as_a_likelihood_matches_its_density():
    noise = CanonicalNoise.gaussian(0.8, sensitivity=2.0)
    y = np.array([1.0, -3.5])
    x = np.array([[0.0, 0.0], [4.0, -3.0], [1.0, -30.0]])
    expected = np.log(noise.pdf(y - x)).sum(axis=1)
    assert np.allclose(noise.logpdf(y, x), expected, rtol=1e-13)
    assert np.isfinite(noise.logpdf(0.0, [1e9])[0])  # closed-form tails: no floor
    general = CanonicalNoise(lambda a: laplace_tradeoff(a, 1.0))
    assert general.logpdf(0.0, [1e5])[0] == -np.inf  # a general f: beyond the documented floor the density is 0


def test_canonical_noise_checks_its_input():
    with pytest.raises(ValueError, match="tradeoff must be a callable"):
        CanonicalNoise(0.5)
    with pytest.raises(ValueError, match="nontrivial"):
        CanonicalNoise(lambda a: 1 - a)
    with pytest.raises(ValueError, match="non-increasing"):
        CanonicalNoise(lambda a: a)
    with pytest.raises(ValueError, match="same shape"):
        CanonicalNoise(lambda a: 0.1)
    with pytest.raises(ValueError, match="derivative"):
        CanonicalNoise(lambda a: laplace_tradeoff(a, 1.0), derivative=3)
    for bad in (0.0, -1.0, math.inf, math.nan):
        with pytest.raises(ValueError, match="mu"):
            CanonicalNoise.gaussian(bad)
        with pytest.raises(ValueError, match="epsilon"):
            CanonicalNoise.pure(bad)
        with pytest.raises(ValueError, match="sensitivity"):
            CanonicalNoise.pure(1.0, bad)
    for bad in (-0.1, 1.0, math.nan, "0.1"):
        with pytest.raises(ValueError, match="delta"):
            CanonicalNoise.approximate(1.0, bad)
    noise = CanonicalNoise(lambda a: laplace_tradeoff(a, 1e-3), max_steps=50)
    with pytest.raises(ValueError, match="max_steps"):
        noise.cdf(-100.0)
    with pytest.raises(ValueError, match="max_steps"):
        noise.ppf(1e-6)
    with pytest.raises(ValueError, match="p must"):
        noise.ppf([0.0, 0.5])
    # a callable computing f through 1 - alpha gives f = 1 below alpha ~ 1e-16: refused at once, not after max_steps
    gdp = CanonicalNoise(lambda a: stats.norm.cdf(stats.norm.ppf(1 - a) - 1.0))
    assert gdp.ppf(1e-10) == pytest.approx(CanonicalNoise.gaussian(1.0).ppf(1e-10), rel=1e-8)
    for deep in (1e-17, 1e-300):
        with pytest.raises(ValueError, match=r"cannot be followed in: the tradeoff gives f\(1e-\d+\) = 1.0"):
            gdp.ppf(deep)
    with pytest.raises(ValueError, match="t must"):
        noise.cdf(math.nan)
    assert noise.cdf(-math.inf) == 0.0 and noise.cdf(math.inf) == 1.0
    with pytest.raises(ValueError, match="x"):
        noise.release([1.0, math.inf], random_seed=0)


def test_canonical_noise_identity_and_repr():
    assert CanonicalNoise.gaussian(1.0) == CanonicalNoise.gaussian(1.0) != CanonicalNoise.gaussian(1.0, 2.0)
    assert CanonicalNoise.pure(1.0) != CanonicalNoise.approximate(1.0, 0.01)
    assert repr(CanonicalNoise.gaussian(0.5)) == "CanonicalNoise(mu=0.5, sensitivity=1.0)"
    assert repr(CanonicalNoise.approximate(1.0, 0.01)) == "CanonicalNoise(epsilon=1.0, delta=0.01, sensitivity=1.0)"
    general = CanonicalNoise(lambda a: laplace_tradeoff(a, 1.0))
    assert general.parameters()["c"] == pytest.approx(1 / (1 + math.e), abs=1e-15)
    assert len({CanonicalNoise.pure(1.0), CanonicalNoise.pure(1.0), general}) == 2
    a = CanonicalNoise.pure(0.7).release([[1.0, 2.5], [3.0, -4.0]], random_seed=5)
    again = CanonicalNoise.pure(0.7).release([[1.0, 2.5], [3.0, -4.0]], random_seed=5)
    assert a.shape == (2, 2) and np.array_equal(a, again)


# -- extreme and invalid parameters ------------------------------------------------------------------


def test_tulap_refuses_an_epsilon_whose_geometric_draws_overflow():
    with pytest.raises(ValueError, match="epsilon must be at least 1e-15"):
        Tulap(1e-300)
    with pytest.raises(ValueError, match="epsilon must be at least"):
        Tulap(1e-19)
    # at the limit the noise is as large as the likelihood says: |T| of order 1 / eps
    m = Tulap(1e-15)
    noise = m.release(np.zeros(2000), random_seed=3)
    assert np.median(np.abs(noise)) > 1e14
    assert np.isfinite(m.logpdf(noise[:1], np.zeros((1, 1)))).all()


@pytest.mark.parametrize(
    "make, name",
    [
        (lambda: CanonicalNoise.pure(1e-16), "epsilon"),
        (lambda: CanonicalNoise.pure(1e-10), "epsilon"),
        (lambda: CanonicalNoise.approximate(1e-16, 1e-12), "epsilon"),
        (lambda: CanonicalNoise.gaussian(1e-12), "mu"),
    ],
)
def test_canonical_noise_too_close_to_trivial_is_refused_clearly(make, name):
    with pytest.raises(ValueError, match=f"^{name}: the canonical noise's central density"):
        make()


def test_canonical_noise_at_a_small_but_resolvable_epsilon_matches_tulap():
    m, reference = CanonicalNoise.pure(1e-6), Tulap(1e-6)
    t = np.array([0.2, 3.7, 2e6])
    assert np.allclose(m.pdf(t), np.exp(reference.logpdf(0.0, -t)), rtol=1e-6)


@pytest.mark.parametrize(
    "tradeoff, message",
    [
        (lambda a: np.maximum(0.0, 1 - 2 * a), "symmetric"),  # not its own inverse
        (lambda a: np.interp(a, [0, 0.3, 0.4, 0.6, 1], [1, 0.6, 0.4, 0.3, 0]), "convex"),  # symmetric, bends down
        (
            lambda a: np.interp(a, [0, 0.02, 0.3, 0.99, 1], [1, 0.99, 0.3, 0.02, 0]),
            "1 - alpha",
        ),  # symmetric, above 1 - a
        (lambda a: laplace_tradeoff(np.minimum(1.0, 1.5 * a), 1.0), "symmetric"),  # convex, asymmetric
    ],
)
def test_canonical_noise_refuses_tradeoffs_it_cannot_attain(tradeoff, message):
    with pytest.raises(ValueError, match=message):
        CanonicalNoise(tradeoff)


def test_canonical_noise_accepts_genuine_symmetric_tradeoffs():
    from ppdinfer.privacy import gaussian_tradeoff

    for f in (
        lambda a: gaussian_tradeoff(a, 0.3),
        lambda a: laplace_tradeoff(a, 2.0),
        lambda a: np.maximum(0.0, np.maximum(1 - 0.01 - np.e * a, (1 - 0.01 - a) / np.e)),
    ):
        assert 0 <= CanonicalNoise(f).c < 0.5
