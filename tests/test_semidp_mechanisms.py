"""Semi-DP mechanisms with invariants (Cho & Awan): the Gaussian, the K-norm and the naive baselines.

Each sampler is checked against its own density, each density is checked to integrate to one,
and the privacy claims are audited through the likelihoods that the samplers of ppdinfer use.
"""

import itertools
import math

import numpy as np
import pytest
from scipy import integrate, special, stats

from ppdinfer.mechanisms import Gaussian, Laplace, semidp
from ppdinfer.mechanisms.semidp import KNormMechanism, NormBallMechanism, SemiDPGaussian, naive_gaussian
from ppdinfer.privacy import SensitivitySpace, gaussian_tradeoff

KS_LEVEL = 1e-3


def rectangles(rows, cols):
    """+1 at (i, j), (k, l) and -1 at (i, l), (k, j) for all i < k, j != l, flattened."""
    vectors = []
    for (i, k), (j, l) in itertools.product(
        itertools.combinations(range(rows), 2), itertools.permutations(range(cols), 2)
    ):
        v = np.zeros((rows, cols))
        v[i, j] = v[k, l] = 1
        v[i, l] = v[k, j] = -1
        vectors.append(v.ravel())
    return np.array(vectors)


def three_cycles():
    """The 3 x 3 "3-cycles" the notes' erratum adds under three record changes (||.||_2 = sqrt 6)."""
    vectors = []
    for rows in itertools.permutations(range(3)):
        v = np.zeros((3, 3))
        for a in range(3):
            v[a, rows[a]] += 1
            v[a, rows[(a + 1) % 3]] -= 1
        vectors.append(v.ravel())
    return np.array(vectors)


TWO_BY_TWO = SensitivitySpace([[1, -1, -1, 1]], shape=(2, 2))
THREE_BY_THREE = SensitivitySpace(rectangles(3, 3), shape=(3, 3))
X3 = np.array([[12, 5, 7], [3, 9, 4], [6, 2, 8]], dtype=float)


def margins(table):
    return np.concatenate([table.sum(axis=-1).ravel(), table.sum(axis=-2).ravel()])


# -- Algorithm 1: the Semi-DP Gaussian --------------------------------------------------------


def test_gaussian_noise_lies_in_the_span_with_covariance_sigma_squared_p():
    mechanism = SemiDPGaussian(mu=1.0, space=THREE_BY_THREE)
    assert mechanism.sigma == pytest.approx(2.0)  # Delta_2 = 2 for rectangles
    noise = mechanism.noise(40_000, random_seed=1)
    assert np.abs(margins(noise.reshape(-1, 3, 3))).max() < 1e-9
    covariance = np.cov(noise.T)
    # each entry's Monte Carlo SE is at most sigma^2 sqrt(2 / n) ~ 0.03
    assert np.abs(covariance - mechanism.covariance).max() < 5 * 4.0 * math.sqrt(2 / noise.shape[0])
    radius_squared = (THREE_BY_THREE.coordinates(noise) ** 2).sum(axis=1) / mechanism.sigma**2
    assert stats.kstest(radius_squared, stats.chi2(THREE_BY_THREE.rank).cdf).pvalue > KS_LEVEL


def test_gaussian_release_keeps_the_margins():
    y = SemiDPGaussian(0.5, THREE_BY_THREE).release(X3, random_seed=2)
    assert y.shape == X3.shape
    np.testing.assert_allclose(margins(y), margins(X3), atol=1e-9)
    assert not np.allclose(y, X3)


def test_gaussian_logpdf_is_the_density_in_basis_coordinates():
    mechanism = SemiDPGaussian(mu=0.8, space=THREE_BY_THREE)
    y = mechanism.release(X3, random_seed=3)
    xs = y - mechanism.noise(50, random_seed=4).reshape(-1, 3, 3)  # conforming tables
    reference = stats.multivariate_normal(np.zeros(4), mechanism.sigma**2 * np.eye(4))
    expected = reference.logpdf(THREE_BY_THREE.coordinates(y - xs))
    np.testing.assert_allclose(mechanism.logpdf(y, xs), expected, rtol=1e-12)
    np.testing.assert_allclose(mechanism.logpdf(y.ravel(), xs.reshape(50, 9)), expected, rtol=1e-12)
    assert mechanism.log_bound(size=9) == pytest.approx(reference.logpdf(np.zeros(4)))
    assert mechanism.logpdf(y, xs).max() <= mechanism.log_bound(size=9)
    off_span = xs[:3] + np.array([[1, 0, 0], [0, 0, 0], [0, 0, 0]])
    assert np.all(mechanism.logpdf(y, off_span) == -np.inf)


def _empirical_tradeoff(mechanism, shift, alphas, draws, seed):
    """Type-II errors of the likelihood-ratio test of x against x + shift at type-I errors ``alphas``.

    The log likelihood ratio L(y) = log pi(y | x + u) - log pi(y | x) comes from ``logpdf``; the
    test rejects x when L exceeds its (1 - alpha) quantile under x.
    """
    y0 = np.zeros(mechanism.space.dim)
    noise = mechanism.noise(draws, random_seed=seed)
    under_x = mechanism.logpdf(y0, y0 - noise + shift) - mechanism.logpdf(y0, y0 - noise)  # y = x + v
    under_shift = mechanism.logpdf(y0, y0 - noise) - mechanism.logpdf(y0, y0 - noise - shift)  # y = x + u + v
    thresholds = np.quantile(under_x, 1 - np.asarray(alphas))
    return np.array([np.mean(under_shift <= c) for c in thresholds])


def test_gaussian_tradeoff_between_neighbours_is_g_of_norm_over_sigma():
    # Rectangles and the erratum's 3-cycles: Delta_2 = sqrt 6, so a rectangle gives 2 / sigma < mu.
    space = SensitivitySpace(np.vstack([rectangles(3, 3), three_cycles()]), shape=(3, 3))
    mu = 1.2
    mechanism = SemiDPGaussian(mu, space)
    assert mechanism.sigma == pytest.approx(math.sqrt(6) / mu)
    norms = np.linalg.norm(space.vectors, axis=1) / mechanism.sigma
    assert norms.max() == pytest.approx(mu)  # the worst neighbours are exactly mu apart
    alphas = np.array([0.02, 0.1, 0.3, 0.6])
    for u in (rectangles(3, 3)[0], three_cycles()[0]):
        m = np.linalg.norm(u) / mechanism.sigma
        beta = _empirical_tradeoff(mechanism, u, alphas, 40_000, seed=5)
        np.testing.assert_allclose(beta, gaussian_tradeoff(alphas, m), atol=0.015)
        # the check can tell G_m from G with a 20% larger parameter
        assert np.abs(gaussian_tradeoff(alphas, 1.2 * m) - gaussian_tradeoff(alphas, m)).max() > 0.05


# -- Algorithms 2-3: the K-norm mechanism ---------------------------------------------------------


def test_knorm_noise_norm_is_gamma_shape_s():
    epsilon = 0.7
    mechanism = KNormMechanism(epsilon, THREE_BY_THREE)
    noise = mechanism.noise(20_000, random_seed=6)
    np.testing.assert_allclose(margins(noise.reshape(-1, 3, 3)), 0.0, atol=1e-9)
    k_norm = THREE_BY_THREE.gauge(noise)
    s = THREE_BY_THREE.rank
    assert stats.kstest(k_norm, stats.gamma(s, scale=1 / epsilon).cdf).pvalue > KS_LEVEL
    # the authors' radius Gamma(s) would make the K-norm Gamma(s - 1): rejected
    assert stats.kstest(k_norm, stats.gamma(s - 1, scale=1 / epsilon).cdf).pvalue < 1e-10


def test_knorm_mean_l2_error_of_a_2x2_table_is_2_over_epsilon():
    epsilon = 0.5
    noise = KNormMechanism(epsilon, TWO_BY_TWO).noise(40_000, random_seed=7)
    error = np.linalg.norm(noise, axis=1)
    se = error.std() / math.sqrt(error.size)
    assert abs(error.mean() - 2 / epsilon) < 4 * se
    assert abs(error.mean() - 1 / epsilon) > 50 * se  # the published code's Gamma(s) radius


def test_knorm_directions_are_uniform_in_k_and_the_box_acceptance_is_vol_ratio():
    mechanism = KNormMechanism(1.0, THREE_BY_THREE)
    s = THREE_BY_THREE.rank
    w = mechanism.uniform_in_hull(20_000, random_seed=8)
    gauge = THREE_BY_THREE.gauge_coordinates(w)
    assert gauge.max() <= 1.0
    assert stats.kstest(gauge**s, "uniform").pvalue > KS_LEVEL  # P(||V||_K <= t) = t^s
    # the box acceptance estimated directly: vol(K) from Qhull against a hit count
    rng = np.random.default_rng(9)
    n = 200_000
    hits = np.mean(THREE_BY_THREE.gauge_coordinates(rng.uniform(-1, 1, (n, s)) * mechanism.half_widths) <= 1)
    rate = mechanism.acceptance_rate
    assert abs(hits - rate) < 5 * math.sqrt(rate * (1 - rate) / n)


def test_knorm_density_integrates_to_one_for_s_1():
    epsilon = 0.9
    mechanism = KNormMechanism(epsilon, TWO_BY_TWO)
    x = np.array([[4.0, 1.0], [2.0, 6.0]])
    unit = TWO_BY_TWO.basis[:, 0].reshape(2, 2)

    def density(t):
        return float(np.exp(mechanism.logpdf(x + t * unit, x)[0]))

    total = sum(integrate.quad(density, a, b, epsabs=1e-12)[0] for a, b in [(-np.inf, 0), (0, np.inf)])
    assert total == pytest.approx(1.0, abs=1e-8)
    # in the unit coordinate t, K = [-2, 2]: the density is Laplace(scale 2 / eps)
    t = np.linspace(-5, 5, 11)
    logpdf = mechanism.logpdf(x, x - t[:, None, None] * unit)
    np.testing.assert_allclose(logpdf, stats.laplace(scale=2 / epsilon).logpdf(t), rtol=1e-12)


def test_knorm_density_integrates_to_one_for_s_4_by_monte_carlo():
    epsilon = 1.3
    mechanism = KNormMechanism(epsilon, THREE_BY_THREE)
    s = THREE_BY_THREE.rank
    # proposal: Laplace coordinates with scales s * box / (0.9 eps); the weight is then bounded,
    # since sum_i |w_i| / box_i <= s ||w||_K
    scales = s * mechanism.half_widths / (0.9 * epsilon)
    rng = np.random.default_rng(10)
    w = rng.laplace(0.0, scales, size=(200_000, s))
    log_proposal = stats.laplace(scale=scales).logpdf(w).sum(axis=1)
    offsets = w @ THREE_BY_THREE.basis.T
    weights = np.exp(mechanism.logpdf(np.zeros(9), -offsets) - log_proposal)
    se = weights.std() / math.sqrt(weights.size)
    assert se < 0.01
    assert abs(weights.mean() - 1.0) < 4 * se


def test_knorm_privacy_loss_is_at_most_epsilon_and_attains_it():
    epsilon = 0.8
    mechanism = KNormMechanism(epsilon, THREE_BY_THREE)
    y0 = np.zeros(9)
    noise = mechanism.noise(4_000, random_seed=11)
    worst = []
    for u in THREE_BY_THREE.vectors:
        # log pi(y | x) - log pi(y | x + u) with y = x + v: eps (||v - u||_K - ||v||_K)
        loss = mechanism.logpdf(y0, y0 - noise) - mechanism.logpdf(y0, y0 - noise + u)
        assert loss.max() <= epsilon + 1e-9
        along = np.array([-2.0, -0.5, 0.0, 3.0])[:, None] * u  # v = -t u, t >= 0, attains eps
        loss_along = mechanism.logpdf(y0, y0 - along) - mechanism.logpdf(y0, y0 - along + u)
        np.testing.assert_allclose(loss_along[:3], epsilon, rtol=1e-9)
        worst.append(loss.max())
    assert min(worst) > 0.5 * epsilon  # random noise comes close to the bound for every u


def test_knorm_direction_sampler_has_a_budget(monkeypatch):
    monkeypatch.setattr(semidp, "MAX_DIRECTION_CANDIDATES", 50)
    mechanism = KNormMechanism(1.0, THREE_BY_THREE)
    with pytest.raises(RuntimeError, match="acceptance rate"):
        mechanism.uniform_in_hull(1_000, random_seed=0)


# -- shapes, validation, equality ------------------------------------------------------------------


@pytest.mark.parametrize("make", [lambda space: SemiDPGaussian(1.0, space), lambda space: KNormMechanism(1.0, space)])
def test_subspace_mechanisms_check_their_inputs(make):
    mechanism = make(THREE_BY_THREE)
    y = mechanism.release(X3, random_seed=0)
    assert mechanism.logpdf(y, X3).shape == (1,)
    assert mechanism.logpdf(y, np.stack([X3, X3, X3])).shape == (3,)
    assert mechanism.release(X3.ravel(), random_seed=0).shape == (9,)
    with pytest.raises(ValueError, match="y must be one statistic"):
        mechanism.logpdf(y[:2], X3)
    with pytest.raises(ValueError, match="x must be one statistic"):
        mechanism.logpdf(y, np.zeros((2, 4, 4)))
    with pytest.raises(ValueError, match=r"sensitivity space is for statistics of shape \(3, 3\)"):
        mechanism.release(np.zeros((2, 2)))
    with pytest.raises(ValueError, match="size"):
        mechanism.log_bound(size=4)
    with pytest.raises(ValueError, match="space"):
        make([[1, -1, -1, 1]])


def test_privacy_parameters_must_be_positive():
    for bad in (0.0, -1.0, math.inf):
        with pytest.raises(ValueError, match="mu"):
            SemiDPGaussian(bad, TWO_BY_TWO)
        with pytest.raises(ValueError, match="epsilon"):
            KNormMechanism(bad, TWO_BY_TWO)
        with pytest.raises(ValueError, match="epsilon"):
            NormBallMechanism(bad)
    with pytest.raises(ValueError, match="norm"):
        NormBallMechanism(1.0, norm=3)


def test_equality_sees_the_space():
    assert KNormMechanism(1.0, THREE_BY_THREE) == KNormMechanism(1.0, SensitivitySpace(rectangles(3, 3), (3, 3)))
    other = SensitivitySpace(np.vstack([rectangles(3, 3), three_cycles()]), shape=(3, 3))
    assert KNormMechanism(1.0, THREE_BY_THREE) != KNormMechanism(1.0, other)
    assert SemiDPGaussian(1.0, TWO_BY_TWO) != KNormMechanism(1.0, TWO_BY_TWO)


# -- Appendix B: the naive l1 / l2 / l_inf mechanisms and Figure 2's naive Gaussian -------------


@pytest.mark.parametrize("norm", [1, 2, math.inf])
def test_norm_ball_noise_norm_is_gamma_d(norm):
    epsilon, sensitivity, d = 0.6, 1.5, 9
    mechanism = NormBallMechanism(epsilon, sensitivity, norm)
    noise = mechanism.noise(20_000, dim=d, random_seed=12)
    scaled = np.linalg.norm(noise, ord=norm, axis=1) * epsilon / sensitivity
    assert stats.kstest(scaled, stats.gamma(d).cdf).pvalue > KS_LEVEL
    se = scaled.std() / math.sqrt(scaled.size)
    assert abs(scaled.mean() - d) < 4 * se
    assert np.abs(noise.mean(axis=0)).max() < 5 * noise.std() / math.sqrt(noise.shape[0])


@pytest.mark.parametrize("norm", [1, 2, math.inf])
def test_norm_ball_density_integrates_to_one(norm):
    mechanism = NormBallMechanism(1.2, 0.7, norm)
    one_d = integrate.quad(lambda t: float(np.exp(mechanism.logpdf(t, np.array([0.0]))[0])), -40, 40, points=[0.0])[0]
    assert one_d == pytest.approx(1.0, abs=1e-8)
    # d = 5 by importance sampling from Laplace coordinates of rate 0.9 rate / d^(1 - 1/q): since
    # ||v||_1 <= d^(1 - 1/q) ||v||_q the weights are bounded
    d = 5
    proposal = stats.laplace(scale=d ** (1 - 1 / norm) / (0.9 * mechanism.rate))
    v = proposal.rvs(size=(200_000, d), random_state=np.random.default_rng(16))
    weights = np.exp(mechanism.logpdf(np.zeros(d), v) - proposal.logpdf(v).sum(axis=1))
    se = weights.std() / math.sqrt(weights.size)
    assert se < 0.01
    assert abs(weights.mean() - 1.0) < 4 * se


def test_norm_ball_l1_is_the_laplace_mechanism():
    mechanism = NormBallMechanism(0.4, 2.0, norm=1)
    y = np.array([[3.0, 1.5], [0.0, 7.0]])
    xs = np.random.default_rng(13).normal(size=(5, 2, 2)) * 3
    np.testing.assert_allclose(mechanism.logpdf(y, xs), Laplace(0.4, 2.0).logpdf(y, xs), rtol=1e-12)
    assert mechanism.log_bound(size=4) == pytest.approx(Laplace(0.4, 2.0).log_bound(size=4))


def test_norm_ball_linf_release_and_bound():
    mechanism = NormBallMechanism.naive_group(1.0, norm="inf")
    assert mechanism.parameters() == {"epsilon": 1 / 3, "sensitivity": 1.0, "norm": math.inf}
    y = mechanism.release(X3, random_seed=14)
    assert y.shape == X3.shape
    values = mechanism.logpdf(y, np.stack([X3, y]))
    assert values[1] == pytest.approx(mechanism.log_bound(size=9)) and values[0] < values[1]
    # normalizer: rate^d / (d! 2^d)
    assert mechanism.log_bound(size=9) == pytest.approx(9 * math.log(1 / 3) - math.lgamma(10) - 9 * math.log(2))
    with pytest.raises(ValueError, match="x must have the shape"):
        mechanism.logpdf(y, np.zeros((2, 4)))


def test_naive_designs_use_group_privacy_and_lose_to_semidp():
    assert NormBallMechanism.naive_group(0.3, norm=2).parameters() == pytest.approx(
        {"epsilon": 0.1, "sensitivity": math.sqrt(2), "norm": 2.0}
    )
    naive = naive_gaussian(mu=1.0)
    assert isinstance(naive, Gaussian) and naive.sigma == pytest.approx(3 * math.sqrt(2))
    # mean L2 errors, E ||N(0, sigma^2 I_k)||_2 = sigma sqrt 2 Gamma((k + 1) / 2) / Gamma(k / 2), k = 3 table
    semi = SemiDPGaussian(1.0, THREE_BY_THREE)
    error = np.linalg.norm(semi.noise(5_000, random_seed=15), axis=1)
    expected = {
        name: sigma * math.sqrt(2) * math.exp(special.gammaln((k + 1) / 2) - special.gammaln(k / 2))
        for name, sigma, k in [("semi", semi.sigma, 4), ("naive", naive.sigma, 9)]
    }
    assert abs(error.mean() - expected["semi"]) < 4 * error.std() / math.sqrt(error.size)
    assert expected["naive"] > 3 * expected["semi"]


# -- sizes and magnitudes beyond reach -----------------------------------------------------------------


@pytest.mark.parametrize(
    "rows, cols, changes, size", [(5, 5, 2, "200 vectors of rank 16"), (4, 4, 3, "264 vectors of rank 9")]
)
def test_knorm_refuses_a_hull_beyond_qhull_at_once(rows, cols, changes, size):
    """Both sat in Qhull for over 5 (4 x 4) or 10 (5 x 5) minutes, deaf to Ctrl-C."""
    import time

    from ppdinfer.privacy import contingency_sensitivity_space

    space = contingency_sensitivity_space(rows, cols, changes=changes)
    start = time.perf_counter()
    with pytest.raises(ValueError, match=f"space: the convex hull of S \\({size}\\) is out of reach"):
        KNormMechanism(1.0, space)
    with pytest.raises(ValueError, match="HULL_COST_LIMIT"):
        space.gauge(np.zeros(rows * cols))
    assert time.perf_counter() - start < 1.0
    assert space.rank == (rows - 1) * (cols - 1) and space.l2 > 0  # what needs no hull still works
    SemiDPGaussian(1.0, space)


def test_hull_cost_predicts_from_size_and_rank():
    assert THREE_BY_THREE.hull_cost == pytest.approx(18.0**2)  # 18 vectors (9 rectangles, +-), rank 4
    from ppdinfer.geometry import sensitivity_space

    assert THREE_BY_THREE.hull_cost < sensitivity_space.HULL_COST_LIMIT


def test_semidp_gaussian_refuses_noise_that_overflows():
    with pytest.raises(ValueError, match="mu: sigma = Delta_2 / mu"):
        SemiDPGaussian(1e-300, TWO_BY_TWO)
    y = SemiDPGaussian(1e-140, TWO_BY_TWO).release(np.zeros((2, 2)), random_seed=0)  # sigma 2e140: still finite
    assert np.all(np.isfinite(y))


def test_sensitivity_space_norms_of_huge_vectors():
    space = SensitivitySpace([[1e200, -1e200, -1e200, 1e200]], shape=(2, 2))
    assert space.l2 == pytest.approx(2e200, rel=1e-15)
    assert space.l1 == pytest.approx(4e200) and space.linf == 1e200
    tiny = SensitivitySpace([[1e-200, -1e-200, -1e-200, 1e-200]], shape=(2, 2))
    assert tiny.l2 == pytest.approx(2e-200, rel=1e-15)
    assert THREE_BY_THREE.l2 == 2.0  # exact for integer vectors
