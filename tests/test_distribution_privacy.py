"""Distribution privacy mechanisms (Chen & Ohrimenko): worked examples, errata, exact audits, samplers.

References are computed independently here: POT's network simplex for the transport problems,
numpy's Cholesky for the authors' bisection, hand-written Mahalanobis distances for the audits.
"""

import math
import warnings

import numpy as np
import ot
import pytest
from scipy import stats

from ppdinfer.mechanisms import Gaussian, Laplace, analytic_gaussian_sigma
from ppdinfer.mechanisms.distribution import (
    CorrelatedGaussian,
    DiscreteLaw,
    DistributionFamily,
    DistributionPrivacyWarning,
    GaussianLaw,
    approximate_wasserstein_mechanism,
    classical_constant,
    closeness_radius,
    concentration_radius,
    directional_gaussian,
    directional_laplace,
    eigenvector_gaussian,
    expected_value_gaussian,
    expected_value_laplace,
    mahalanobis_distances,
    mahalanobis_limit,
    misspecified_guarantee,
    noiseless_release_is_private,
    release_delta,
    transportable_mass,
    wasserstein_correction,
    wasserstein_inf,
    wasserstein_mechanism,
)
from ppdinfer.privacy import gdp_delta, w_inf

FIGURE1 = ([1, 2, 3, 100], [0.6, 0.2, 0.0, 0.2], [0.4, 0.3, 0.2, 0.1])
SIGMA = np.array([[22.0, -6.0], [-6.0, 13.0]])


def figure1_laws():
    support, mu, nu = FIGURE1
    return DiscreteLaw(support, mu), DiscreteLaw(support, nu)


def eigm_family(covariance=SIGMA):
    """The paper's EigM example: mu1 = (100, 101), mu2 = (99, 102), one covariance."""
    return DistributionFamily({1: GaussianLaw([100, 101], covariance), 2: GaussianLaw([99, 102], covariance)})


def quiet(function, *args, **kwargs):
    """Call ``function`` with the classical-calibration warning silenced (the paper's own settings)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DistributionPrivacyWarning)
        return function(*args, **kwargs)


def random_discrete_law(rng, k, dim):
    return DiscreteLaw(rng.integers(0, 6, size=(k, dim)).astype(float), rng.dirichlet(np.ones(k)))


# --- Wasserstein mechanisms -----------------------------------------------------------------------


def test_figure1_w_inf_is_97_and_the_laws_are_1_0_1_close():
    mu, nu = figure1_laws()
    assert wasserstein_inf(mu, nu) == 97.0  # exact quantile coupling (1-D)
    assert closeness_radius(mu, nu) == 97.0  # bisection and linear programs
    assert closeness_radius(mu, nu, delta=0.1) == 1.0  # Figure 1: drop the mass moved from 100 to 3
    assert closeness_radius(mu, nu, delta=0.09) == 97.0  # 0.1 must move 97: less delta does not help
    assert [round(transportable_mass(mu, nu, t), 12) for t in (0, 1, 96, 97)] == [0.7, 0.9, 0.9, 1.0]
    family = DistributionFamily({"mu": mu, "nu": nu})
    assert wasserstein_mechanism(family, 0.5) == Laplace(0.5, 97.0)
    assert approximate_wasserstein_mechanism(family, 0.5, delta=0.1) == Laplace(0.5, 1.0)


def release_log_density(mechanism, law, grid):
    """log density of F + noise on ``grid`` (1-D), F ~ law: a mixture of the mechanism's likelihoods."""
    log_terms = np.array([mechanism.logpdf(y, law.points[:, 0]) for y in grid]) + np.log(law.weights)
    return np.logaddexp.reduce(log_terms, axis=1)


def test_figure1_wasserstein_mechanisms_are_private_end_to_end():
    """Theorems 3.1 / 3.2 checked on the release laws built from the mechanisms' own likelihoods."""
    mu, nu = figure1_laws()
    mu, nu = DiscreteLaw(mu.points[mu.weights > 0], mu.weights[mu.weights > 0]), nu  # log(0) mass dropped
    family = DistributionFamily({"mu": mu, "nu": nu})
    grid = np.linspace(-150.0, 250.0, 8_001)
    exact = wasserstein_mechanism(family, 1.0)
    log_mu, log_nu = release_log_density(exact, mu, grid), release_log_density(exact, nu, grid)
    assert np.abs(log_mu - log_nu).max() <= 1.0 + 1e-9  # (1, 0)
    approximate = approximate_wasserstein_mechanism(family, 0.5, delta=0.1)  # W = 1 instead of 97
    log_mu, log_nu = release_log_density(approximate, mu, grid), release_log_density(approximate, nu, grid)
    step = grid[1] - grid[0]
    hockey_sticks = [
        np.maximum(np.exp(first) - np.exp(0.5 + second), 0.0).sum() * step
        for first, second in ((log_mu, log_nu), (log_nu, log_mu))
    ]
    assert 0.01 < max(hockey_sticks) <= 0.1  # (0.5, 0.1), and not (0.5, 0)


@pytest.mark.parametrize("seed", range(3))
def test_transport_matches_pot_network_simplex(seed):
    """T(t) = 1 - (least mass moved farther than t), the latter by POT's exact emd2 with 0/1 costs."""
    rng = np.random.default_rng(seed)
    a, b = random_discrete_law(rng, 6, 2), random_discrete_law(rng, 7, 2)
    distances = np.abs(a.points[:, None, :] - b.points[None, :, :]).sum(axis=2)
    pot_w_inf = None
    for t in np.unique(distances):
        moved_far = ot.emd2(a.weights, b.weights, (distances > t).astype(float))
        assert transportable_mass(a, b, t) == pytest.approx(1 - moved_far, abs=1e-9)
        if pot_w_inf is None and moved_far <= 1e-9:
            pot_w_inf = t
    assert wasserstein_inf(a, b) == pot_w_inf
    # ||E a - E b||_1 <= E ||X - Y||_1 <= W_inf for any coupling, the optimal one included.
    assert np.abs(a.mean - b.mean).sum() <= wasserstein_inf(a, b) + 1e-12


@pytest.mark.parametrize("seed", range(5))
def test_bisection_matches_the_exact_quantile_coupling_on_the_line(seed):
    rng = np.random.default_rng(10 + seed)
    support = np.sort(rng.choice(50, size=8, replace=False)).astype(float)
    p, q = rng.dirichlet(np.ones(8)), rng.dirichlet(np.ones(8))
    exact = w_inf(p, q, support)
    assert closeness_radius(DiscreteLaw(support, p), DiscreteLaw(support, q)) == exact
    assert wasserstein_inf(DiscreteLaw(support, p), DiscreteLaw(support[::-1], q[::-1])) == exact  # any order


def test_theorem_3_3_radius_bounds_the_exact_closeness_radius():
    mu, nu = figure1_laws()
    family = DistributionFamily({"mu": mu, "nu": nu})
    for delta in (0.1, 0.3, 0.5):
        deviation = max(law.deviation_quantile(1 - delta / 2) for law in (mu, nu))
        radius = concentration_radius(family, deviation)
        assert radius >= closeness_radius(mu, nu, delta)
        assert approximate_wasserstein_mechanism(family, 1.0, delta, radius=radius) == Laplace(1.0, radius)
    # mean distance 21 - 11.6 = 9.4; at delta = 0.5 the 75% deviation quantiles are 19 (mu) and 9.6 (nu)
    assert concentration_radius(family, 19.0) == pytest.approx(9.4 + 38.0)


# --- expected value mechanisms --------------------------------------------------------------------


def test_classical_constants_match_the_notes():
    assert [round(classical_constant(d), 4) for d in (1e-4, 1e-3, 1e-2)] == [4.3436, 3.7765, 3.1075]


def test_expected_value_mechanisms_are_the_library_laplace_and_gaussian():
    family = eigm_family()
    assert expected_value_laplace(family, 0.5) == Laplace(0.5, 2.0)
    classical = expected_value_gaussian(family, 0.5, 1e-3, calibration="classical")
    assert isinstance(classical, Gaussian)
    assert classical.sigma == pytest.approx(classical_constant(1e-3) * math.sqrt(2) / 0.5, rel=1e-14)
    assert expected_value_gaussian(family, 5.0, 1e-3) == Gaussian(analytic_gaussian_sigma(5.0, 1e-3, math.sqrt(2)))


def test_classical_calibration_warns_from_epsilon_one():
    family = eigm_family()
    with pytest.warns(DistributionPrivacyWarning, match="epsilon < 1 only"):
        expected_value_gaussian(family, 1.0, 1e-3, calibration="classical")
    with pytest.warns(DistributionPrivacyWarning, match="calibration='analytic'"):
        directional_gaussian(family, 10.0, 1e-3, calibration="classical")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        expected_value_gaussian(family, 0.99, 1e-3, calibration="classical")
        eigenvector_gaussian(family, 10.0, 1e-3)  # the analytic calibration is exact at any eps


def test_eigm_worked_example():
    family = eigm_family()
    v1, v2 = np.array([1.0, 2.0]) / math.sqrt(5), np.array([2.0, -1.0]) / math.sqrt(5)
    assert v1 @ SIGMA @ v1 == pytest.approx(10.0) and v2 @ SIGMA @ v2 == pytest.approx(25.0)
    target = (classical_constant(1e-3) * family.mean_distance(2) / 1.0) ** 2
    assert round(target, 2) == 28.52
    noise = quiet(eigenvector_gaussian, family, 1.0, 1e-3, calibration="classical").covariance
    assert round(v1 @ noise @ v1, 2) == 18.52 and round(v2 @ noise @ v2, 2) == 3.52
    assert abs(v1 @ noise @ v2) < 1e-10


def test_eigm_erratum_lambda_are_eigenvalues_not_squared():
    """Read as squared eigenvalues (100, 625) the paper's formula adds no noise, which fails Corollary A.1."""
    family = eigm_family()
    target = (classical_constant(1e-3) * math.sqrt(2)) ** 2
    printed = np.maximum(target - np.array([10.0, 25.0]) ** 2, 0.0)
    assert np.all(printed == 0)
    limit = quiet(mahalanobis_limit, 1.0, 1e-3, "classical")
    assert mahalanobis_distances(family).max() > limit  # printed reading: not covered
    noise = quiet(eigenvector_gaussian, family, 1.0, 1e-3, calibration="classical").covariance
    assert mahalanobis_distances(family, noise).max() <= limit  # eigenvalue reading: covered
    assert quiet(noiseless_release_is_private, family, 1.0, 1e-3, "classical", noise)
    assert not quiet(noiseless_release_is_private, family, 1.0, 1e-3, "classical")


def test_eigm_uses_the_pooled_eigenvectors_and_the_worst_theta():
    family = DistributionFamily({1: GaussianLaw([100, 101], SIGMA), 2: GaussianLaw([99, 102], 2 * SIGMA)})
    noise = eigenvector_gaussian(family, 0.5, 1e-3).covariance
    target = (math.sqrt(2) / mahalanobis_limit(0.5, 1e-3)) ** 2
    v1, v2 = np.array([1.0, 2.0]) / math.sqrt(5), np.array([2.0, -1.0]) / math.sqrt(5)
    assert v1 @ noise @ v1 == pytest.approx(max(target - 10.0, 0.0), rel=1e-9)  # theta 1 has the smaller eigenvalues
    assert v2 @ noise @ v2 == pytest.approx(max(target - 25.0, 0.0), rel=1e-9, abs=1e-9)
    with pytest.warns(DistributionPrivacyWarning, match="does not diagonalize"):
        eigenvector_gaussian(family, 0.5, 1e-3, basis=np.eye(2))


def dau_bisection(covariance, direction, alpha_scaled, tolerance=1e-10):
    """The authors' Algorithm 1, line 7: the smallest s with Sigma + (s - alpha_scaled^2) v v^T positive definite."""

    def positive_definite(s):
        try:
            np.linalg.cholesky(covariance + (s - alpha_scaled**2) * np.outer(direction, direction))
            return True
        except np.linalg.LinAlgError:
            return False

    low, high = 0.0, alpha_scaled**2 + 1.0
    if positive_definite(low):
        return 0.0
    while high - low > tolerance:
        middle = (low + high) / 2
        low, high = (low, middle) if positive_definite(middle) else (middle, high)
    return high


@pytest.mark.parametrize("epsilon", [0.3, 0.9])
def test_daum_closed_form_matches_the_authors_bisection(epsilon):
    rng = np.random.default_rng(4)
    root = rng.normal(size=(3, 3))
    covariance = root @ root.T + 0.5 * np.eye(3)
    direction = np.array([1.0, -2.0, 0.5]) / np.linalg.norm([1.0, -2.0, 0.5])
    family = DistributionFamily(
        {"lo": GaussianLaw(np.zeros(3), covariance), "hi": GaussianLaw(1.5 * direction, covariance)}
    )
    mechanism = directional_gaussian(family, epsilon, 1e-3, calibration="classical")
    closed = float(np.trace(mechanism.covariance))
    alpha_scaled = 1.5 * classical_constant(1e-3) / epsilon
    assert closed > 0 and closed == pytest.approx(dau_bisection(covariance, direction, alpha_scaled), abs=1e-6)
    # the closed form puts the worst pair exactly at the Mahalanobis limit eps / c
    limit = epsilon / classical_constant(1e-3)
    assert mahalanobis_distances(family, mechanism.covariance).max() == pytest.approx(limit)


def test_theorem_4_4_no_noise_check():
    family = eigm_family()  # m^2 = 23 / 250 = 0.092
    assert mahalanobis_distances(family) ** 2 == pytest.approx([0.092, 0.092])
    assert not noiseless_release_is_private(family, 0.9, 1e-3, "classical")  # (0.9 / 3.7765)^2 = 0.0568
    assert noiseless_release_is_private(family, 0.9, 1e-3)  # exact: m* = 0.353
    close = DistributionFamily({1: GaussianLaw([0, 0], SIGMA), 2: GaussianLaw([0.1, 0], SIGMA)})
    assert noiseless_release_is_private(close, 0.5, 1e-3, "classical")
    assert directional_gaussian(eigm_family(), 0.9, 1e-3).rank == 0  # DauM: no noise needed


def hand_delta(family, noise, epsilon):
    """Exact delta of the worst pair: two Gaussians with one covariance at Mahalanobis distance m."""
    worst = 0.0
    for i, j in family.pairs:
        d = family.laws[i].mean - family.laws[j].mean
        m = math.sqrt(d @ np.linalg.solve(family.laws[i].covariance + noise, d))
        worst = max(worst, gdp_delta(m, epsilon))
    return worst


@pytest.mark.parametrize("epsilon", [0.5, 1.0, 5.0, 10.0])
def test_exact_audit_analytic_calibrations_meet_delta(epsilon):
    tight = eigm_family(covariance=np.diag([0.05, 0.02]))  # little adversarial uncertainty: noise is needed
    for family in (eigm_family(), tight):
        for build in (eigenvector_gaussian, directional_gaussian):
            noise = build(family, epsilon, 1e-3).covariance
            actual = hand_delta(family, noise, epsilon)
            assert actual <= 1e-3
            assert release_delta(family, noise, epsilon) == pytest.approx(actual, rel=1e-9)
        sigma = expected_value_gaussian(family, epsilon, 1e-3).sigma
        assert hand_delta(family, sigma**2 * np.eye(2), epsilon) <= 1e-3
    # the analytic calibration is tight: DauM puts the worst pair at delta itself
    noise = directional_gaussian(tight, epsilon, 1e-3).covariance
    assert hand_delta(tight, noise, epsilon) == pytest.approx(1e-3, rel=1e-6)


def test_exact_audit_classical_calibration_fails_at_epsilon_10():
    """Erratum: the paper's c at eps = 10, delta = 1e-3 gives an actual delta of 3.4e-3 > 1e-3."""
    tight = eigm_family(covariance=np.diag([0.05, 0.02]))
    for build in (eigenvector_gaussian, directional_gaussian):
        noise = quiet(build, tight, 10.0, 1e-3, calibration="classical").covariance
        assert hand_delta(tight, noise, 10.0) > 1e-3
    assert (
        round(
            hand_delta(tight, quiet(directional_gaussian, tight, 10.0, 1e-3, calibration="classical").covariance, 10.0),
            5,
        )
        == 0.00336
    )
    sigma = quiet(expected_value_gaussian, tight, 10.0, 1e-3, calibration="classical").sigma
    assert hand_delta(tight, sigma**2 * np.eye(2), 10.0) > 1e-3
    # and at eps < 1, where it is proved, it holds
    noise = directional_gaussian(tight, 0.5, 1e-3, calibration="classical").covariance
    assert hand_delta(tight, noise, 0.5) <= 1e-3


# --- secrets with different covariances (issue 25) ------------------------------------------------


def unequal_family():
    """The issue's reproducer: N((0, 0), I) and N((1, 0), diag(1, 1.2)); the mean difference is along v = (1, 0)."""
    return DistributionFamily({0: GaussianLaw([0, 0], np.eye(2)), 1: GaussianLaw([1, 0], np.diag([1.0, 1.2]))})


def grid_delta(family, noise, epsilon, size=1601):
    """max over the pairs of the integral of (p_i - e^eps p_j)_+ on a grid: quadrature of the true 2-D release laws."""
    spread = np.sqrt(max(np.diag(law.covariance + noise).max() for law in family.laws.values()))
    axis = np.linspace(-12 * spread, 12 * spread, size) + 0.5
    cell = (axis[1] - axis[0]) ** 2
    points = np.dstack(np.meshgrid(axis, axis))
    density = {
        label: stats.multivariate_normal(law.mean, law.covariance + noise).pdf(points)
        for label, law in family.laws.items()
    }
    return max(np.maximum(density[i] - math.exp(epsilon) * density[j], 0).sum() * cell for i, j in family.pairs)


def test_release_delta_audits_per_secret_covariances_as_quadrature_does():
    family = unequal_family()
    noise = quiet(directional_gaussian, family, 0.2, 1e-3).covariance
    shared = DistributionFamily({label: GaussianLaw(law.mean, np.eye(2)) for label, law in family.laws.items()})
    assert release_delta(shared, noise, 0.2) == pytest.approx(1e-3, rel=1e-6)  # what the calibration assumed
    actual = release_delta(family, noise, 0.2)
    assert actual == pytest.approx(grid_delta(family, noise, 0.2), rel=1e-5)  # the true release laws
    assert round(actual, 5) == 0.01602  # 16x the target
    # one dimension, N(0, 1.2) against N(0, 1): {L > eps} is |y| > r, so delta is two normal tails
    one = DistributionFamily({"wide": GaussianLaw([0], [[1.2]]), "narrow": GaussianLaw([0], [[1.0]])})
    for epsilon in (0.05, 0.2, 1.0):
        r = math.sqrt((epsilon + 0.5 * math.log(1.2)) / (0.5 - 0.5 / 1.2))
        exact = 2 * stats.norm.sf(r / math.sqrt(1.2)) - math.exp(epsilon) * 2 * stats.norm.sf(r)
        assert release_delta(one, None, epsilon) == pytest.approx(exact, rel=1e-8)
    # covariances a hair apart: the contour integral agrees with the shared-covariance closed form
    near = eigm_family()
    near.laws[2] = GaussianLaw(near.laws[2].mean, SIGMA * (1 + 1e-7))
    for epsilon in (0.1, 1.0):
        assert release_delta(near, None, epsilon) == pytest.approx(
            release_delta(eigm_family(), None, epsilon), rel=1e-5
        )


def test_daum_warns_when_the_covariances_differ():
    family = unequal_family()
    with pytest.warns(DistributionPrivacyWarning, match=r"actual delta at epsilon = 0.2 is 0.016"):
        directional_gaussian(family, 0.2, 1e-3)
    with pytest.warns(DistributionPrivacyWarning, match="calibration='audited'"):
        directional_gaussian(family, 1.0, 1e-3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        directional_gaussian(eigm_family(), 0.2, 1e-3)  # shared covariances: the closed form is exact


def test_audited_daum_meets_delta_on_the_true_release_laws():
    family = unequal_family()
    closed = quiet(directional_gaussian, family, 1.0, 1e-3).covariance
    audited = directional_gaussian(family, 1.0, 1e-3, calibration="audited")
    assert audited.rank == 1 and np.allclose(audited.covariance[1], 0)  # still noise along v only
    assert grid_delta(family, closed, 1.0) > 2e-3  # the closed form misses
    true_delta = grid_delta(family, audited.covariance, 1.0)
    assert 0.999e-3 < true_delta <= 1e-3  # met, and tight
    # shared covariances: the audit lands on the analytic closed form
    tight = eigm_family(covariance=np.diag([0.05, 0.02]))
    assert directional_gaussian(tight, 0.5, 1e-3, calibration="audited").covariance == pytest.approx(
        directional_gaussian(tight, 0.5, 1e-3).covariance, rel=2e-4
    )
    # noise along v cannot hide the variance difference across v at eps = 0.2: refused, with the floor
    with pytest.raises(ValueError, match=r"noise along v alone.*leaves delta = 0.0127"):
        directional_gaussian(family, 0.2, 1e-3, calibration="audited")


# --- samplers against densities -------------------------------------------------------------------


def test_correlated_gaussian_full_rank_matches_scipy():
    covariance = np.array([[3.0, 1.0], [1.0, 2.0]])
    mechanism = CorrelatedGaussian(covariance)
    x = np.array([1.0, -2.0])
    y = np.array([2.5, 0.0])
    batch = np.array([x, x + 1.0, [0.0, 0.0]])
    expected = stats.multivariate_normal(np.zeros(2), covariance).logpdf(y - batch)
    assert mechanism.logpdf(y, batch) == pytest.approx(expected, rel=1e-12)
    peak = stats.multivariate_normal(np.zeros(2), covariance).logpdf([0, 0])
    assert mechanism.log_bound(size=2) == pytest.approx(peak)
    rng = np.random.default_rng(7)
    draws = np.array([mechanism.release(x, random_seed=rng) for _ in range(4000)]) - x
    se = np.sqrt(np.diag(covariance) / 4000)
    assert np.all(np.abs(draws.mean(axis=0)) < 4.5 * se)
    assert np.cov(draws.T) == pytest.approx(covariance, rel=0.1, abs=0.1)


def test_correlated_gaussian_releases_a_batch_of_rows():
    covariance = np.array([[3.0, 1.0], [1.0, 2.0]])
    x = np.array([1.0, -2.0])
    offsets = CorrelatedGaussian(covariance).release(np.tile(x, (20_000, 1)), random_seed=3) - x
    assert offsets.shape == (20_000, 2)
    assert np.all(np.abs(offsets.mean(axis=0)) < 4.5 * np.sqrt(np.diag(covariance) / 20_000))
    assert np.cov(offsets.T) == pytest.approx(covariance, rel=0.05, abs=0.05)
    line = directional_gaussian(eigm_family(covariance=np.diag([0.05, 0.02])), 0.5, 1e-3)  # rank 1
    across = line.release(np.zeros((500, 2)), random_seed=4) @ np.array([1.0, 1.0])
    assert np.abs(across).max() < 1e-9 * math.sqrt(np.trace(line.covariance))  # nothing off the line
    with pytest.raises(ValueError, match=r"x must have shape \(2,\) or \(B, 2\)"):
        line.release(np.zeros((3, 3)))


def test_daum_release_lies_on_the_line_with_the_gaussian_law():
    tight = eigm_family(covariance=np.diag([0.05, 0.02]))
    mechanism = directional_gaussian(tight, 0.5, 1e-3)
    v = np.array([1.0, -1.0]) / math.sqrt(2)
    sigma = math.sqrt(np.trace(mechanism.covariance))
    x = np.array([100.0, 101.0])
    rng = np.random.default_rng(8)
    offsets = np.array([mechanism.release(x, random_seed=rng) for _ in range(3000)]) - x
    along = offsets @ v
    assert np.abs(offsets - np.outer(along, v)).max() < 1e-9 * sigma  # nothing across v
    assert stats.kstest(along, stats.norm(0, sigma).cdf).pvalue > 1e-3
    w = np.array([0.3, -1.2]) * sigma
    on_line = mechanism.logpdf(x, x - np.outer(w, v))
    assert on_line == pytest.approx(stats.norm(0, sigma).logpdf(w), rel=1e-12)
    assert mechanism.logpdf(x, [x + [0.01, 0.0]])[0] == -np.inf
    assert mechanism.log_bound(size=2) == pytest.approx(stats.norm(0, sigma).logpdf(0.0))


def test_dirm_release_lies_on_the_line_with_the_laplace_law():
    family = eigm_family()
    mechanism = directional_laplace(family, 0.5)
    v = np.array([1.0, -1.0]) / math.sqrt(2)
    scale = math.sqrt(2) / 0.5
    x = np.array([100.0, 101.0])
    rng = np.random.default_rng(9)
    offsets = np.array([mechanism.release(x, random_seed=rng) for _ in range(3000)]) - x
    along = offsets @ v
    assert np.abs(offsets - np.outer(along, v)).max() < 1e-9 * scale
    assert stats.kstest(along, stats.laplace(0, scale).cdf).pvalue > 1e-3
    w = np.array([0.0, 2.0, -5.0])
    assert mechanism.logpdf(x, x - np.outer(w, v)) == pytest.approx(stats.laplace(0, scale).logpdf(w), rel=1e-12)
    assert mechanism.logpdf(x, [x + [0.01, 0.0]])[0] == -np.inf


def test_no_noise_mechanism_is_the_point_mass():
    mechanism = CorrelatedGaussian(np.zeros((2, 2)))
    x = np.array([3.0, 4.0])
    assert np.array_equal(mechanism.release(x, random_seed=0), x)
    assert list(mechanism.logpdf(x, [x, x + [0.0, 1e-3]])) == [0.0, -np.inf]
    assert mechanism.log_bound(size=2) == 0.0


# --- misspecification -----------------------------------------------------------------------------


def test_misspecification_guarantees():
    eps, delta, slack, eta = 1.0, 1e-3, 0.2, 1e-5
    guarantee = misspecified_guarantee(eps, delta, slack, eta)
    assert guarantee.definition == "distribution"
    assert (guarantee.epsilon, guarantee.delta) == pytest.approx(
        (eps + 2 * slack, (1 + math.exp(eps + slack)) * eta + math.exp(slack) * delta)
    )
    noise, guarantee = wasserstein_correction(eps, delta, slack, distance=0.3)
    assert noise == Laplace(slack, 0.3)  # Laplace(W / lambda) per coordinate
    assert (guarantee.epsilon, guarantee.delta) == pytest.approx((eps + 2 * slack, math.exp(slack) * delta))


# --- bad input ------------------------------------------------------------------------------------


def test_bad_input_names_the_parameter():
    mu, nu = figure1_laws()
    family = DistributionFamily({"mu": mu, "nu": nu})
    with pytest.raises(ValueError, match="weights must sum to 1"):
        DiscreteLaw([1, 2, 3], [0.5, 0.4, 0.2])
    with pytest.raises(ValueError, match="weights must hold one mass per support point"):
        DiscreteLaw([1, 2, 3], [0.5, 0.5])
    with pytest.raises(ValueError, match="a and b must be laws on the same space"):
        wasserstein_inf(mu, DiscreteLaw([[1, 2]]))
    with pytest.raises(ValueError, match="laws must all have one dimension"):
        DistributionFamily({"mu": mu, "2d": DiscreteLaw([[1, 2]])})
    with pytest.raises(ValueError, match="pairs must hold pairs"):
        DistributionFamily({"mu": mu, "nu": nu}, pairs=[("mu", "other")])
    for bad in (0.0, -1.0, math.inf):
        with pytest.raises(ValueError, match="epsilon"):
            wasserstein_mechanism(family, bad)
        with pytest.raises(ValueError, match="epsilon"):
            expected_value_gaussian(eigm_family(), bad, 1e-3)
    for bad in (0.0, 1.0, 1.5, -0.1):
        with pytest.raises(ValueError, match="delta"):
            expected_value_gaussian(eigm_family(), 0.5, bad)
        with pytest.raises(ValueError, match="delta"):
            approximate_wasserstein_mechanism(family, 0.5, bad)
    with pytest.raises(ValueError, match="calibration"):
        eigenvector_gaussian(eigm_family(), 0.5, 1e-3, calibration="exact")
    with pytest.raises(ValueError, match="must be a GaussianLaw"):
        eigenvector_gaussian(family, 0.5, 1e-3)
    with pytest.raises(ValueError, match="must be a DiscreteLaw"):
        wasserstein_mechanism(eigm_family(), 0.5)
    with pytest.raises(ValueError, match="direction"):
        directional_gaussian(eigm_family(), 0.5, 1e-3, direction=[1.0, 0.0])
    with pytest.raises(ValueError, match="covariance must be positive semi-definite"):
        GaussianLaw([0, 0], [[1, 2], [2, 1]])
    with pytest.raises(ValueError, match="calibration must be one of"):
        directional_gaussian(eigm_family(), 0.5, 1e-3, calibration="exact")
    with pytest.raises(ValueError, match="Delta_W is 0"):
        wasserstein_mechanism(DistributionFamily({"a": mu, "b": DiscreteLaw(*FIGURE1[:2])}), 1.0)
