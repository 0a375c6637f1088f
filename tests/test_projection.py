"""The projection baselines: closed form vs. general solver, KKT conditions, brute force for L1."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import optimize, stats

from ppdinfer.invariants import InfeasibleInvariants, LinearInvariants
from ppdinfer.projection import L1ConvexCombination, project_l1_integer, project_l2

TOTAL4 = LinearInvariants.grand_total(3, 4) & LinearInvariants.nonnegative(3)
MARGINS = LinearInvariants.margins([3, 2], [1, 4]) & LinearInvariants.nonnegative((2, 2))


def kkt_residuals(y, s, inv):
    """(primal violation, stationarity residual, complementary slackness) of s for projecting y."""
    y, s = np.ravel(y).astype(float), np.ravel(s).astype(float)
    A, a, B, b = (m.astype(float) for m in (inv.A, inv.a, inv.B, inv.b))
    slack = B @ s - b
    primal = max(np.max(np.abs(A @ s - a), initial=0.0), np.max(-slack, initial=0.0))
    active = slack <= 1e-7
    M = np.vstack([A, B[active]]).T
    lower = np.concatenate([np.full(A.shape[0], -np.inf), np.zeros(int(active.sum()))])
    fit = optimize.lsq_linear(M, s - y, bounds=(lower, np.inf), tol=1e-14)
    stationarity = np.max(np.abs(M @ fit.x - (s - y)))
    mu = fit.x[A.shape[0] :]
    slackness = np.max(np.abs(mu * slack[active]), initial=0.0)
    return primal, stationarity, slackness


def test_closed_form_matches_the_general_solver():
    rng = np.random.default_rng(1)
    A = rng.integers(-2, 3, size=(3, 6))
    x = rng.integers(0, 5, size=6)
    equalities = LinearInvariants(A, A @ x)
    # The same equalities plus a slack inequality that never binds send project_l2 down the SLSQP path.
    general = equalities & LinearInvariants(None, None, np.ones((1, 6), dtype=int), [-(10**6)])
    for _ in range(5):
        y = x + rng.normal(0, 3, size=6)
        closed = project_l2(y, equalities)
        np.testing.assert_allclose(closed, project_l2(y, general), atol=1e-9)
        # An independent general solver: the KKT system [[I, A^T], [A, 0]] (A has full row rank here).
        kkt = np.block([[np.eye(6), A.T], [A, np.zeros((3, 3))]])
        np.testing.assert_allclose(closed, np.linalg.solve(kkt, np.concatenate([y, A @ x]))[:6], atol=1e-9)
        np.testing.assert_allclose(A @ closed, A @ x, atol=1e-9)
        # The residual y - s is orthogonal to the null space of A: the closed form is the projection.
        null = np.linalg.svd(A)[2][3:]
        np.testing.assert_allclose(null @ (closed - y), 0.0, atol=1e-9)


def test_nnl2_matches_an_independent_qp_solver():
    rng = np.random.default_rng(4)
    for inv in (TOTAL4, MARGINS):
        A, a, B, b = (m.astype(float) for m in (inv.A, inv.a, inv.B, inv.b))
        for _ in range(3):
            y = rng.normal(1.0, 2.5, size=inv.n_cells)
            reference = optimize.minimize(
                lambda s: 0.5 * np.sum((s - y) ** 2),
                np.zeros(inv.n_cells),
                jac=lambda s: s - y,
                method="trust-constr",
                constraints=[optimize.LinearConstraint(A, a, a), optimize.LinearConstraint(B, b, np.inf)],
                options={"gtol": 1e-12, "xtol": 1e-12, "maxiter": 5000},
            )
            # trust-constr is an interior-point method: it stops about 1e-5 inside the boundary.
            np.testing.assert_allclose(project_l2(y.reshape(inv.shape), inv).ravel(), reference.x, atol=1e-4)


def test_redundant_equalities_use_the_pseudo_inverse():
    inv = LinearInvariants([[1, 1, 1], [2, 2, 2]], [4, 8])
    np.testing.assert_allclose(project_l2([1.0, 2.0, 4.0], inv), [0.0, 1.0, 3.0], atol=1e-12)


@pytest.mark.parametrize("inv", [TOTAL4, MARGINS, LinearInvariants.nonnegative((2, 3))])
def test_l2_projection_satisfies_the_kkt_conditions(inv):
    rng = np.random.default_rng(2)
    tables = inv.enumerate() if inv.A.shape[0] else np.zeros((0, *inv.shape))
    for _ in range(6):
        y = rng.normal(1.0, 2.5, size=inv.shape)
        s = project_l2(y, inv)
        primal, stationarity, slackness = kkt_residuals(y, s, inv)
        assert primal < 1e-9 and stationarity < 1e-8 and slackness < 1e-8
        # No conforming integer table is closer; with non-negativity alone the projection clips at 0.
        assert all(np.sum((s - y) ** 2) <= np.sum((table - y) ** 2) + 1e-9 for table in tables)
        if not inv.A.shape[0]:
            np.testing.assert_allclose(s, np.maximum(y, 0.0), atol=1e-9)


def test_l2_projection_moves_a_negative_cell_to_zero_and_keeps_the_total():
    s = project_l2([-1.2, 3.1, 2.6], TOTAL4)
    np.testing.assert_allclose(s, [0.0, 2.25, 1.75], atol=1e-12)
    assert s.sum() == pytest.approx(4.0, abs=1e-12)
    # Without non-negativity the closed form leaves the cell negative.
    assert project_l2([-1.2, 3.1, 2.6], LinearInvariants.grand_total(3, 4))[0] < 0


@pytest.mark.parametrize("inv", [TOTAL4, MARGINS])
def test_l1_integer_projection_matches_brute_force(inv):
    tables = inv.enumerate()
    flat = tables.reshape(len(tables), -1)
    rng = np.random.default_rng(3)
    for _ in range(15):
        y = rng.normal(1.5, 2.0, size=inv.shape)
        s = project_l1_integer(y, inv)
        assert s.dtype == np.int64 and inv.contains(s)
        distances = np.abs(flat - y.ravel()).sum(axis=1)
        assert np.abs(s - y).sum() == pytest.approx(distances.min(), abs=1e-9)
        # Ties: the lexicographically smallest minimizer (enumerate() lists tables in that order).
        first = flat[np.flatnonzero(distances <= distances.min() + 1e-9)[0]]
        np.testing.assert_array_equal(s.ravel(), first)


def test_l1_ties_are_broken_lexicographically():
    # [0, 2, 2] and [0, 3, 1] are both at distance 2.9; y = [1, 1.5, 1.5] ties [1, 1, 2] and [1, 2, 1].
    assert project_l1_integer([-1.2, 3.1, 2.6], TOTAL4).tolist() == [0, 2, 2]
    assert project_l1_integer([1.0, 1.5, 1.5], TOTAL4).tolist() == [1, 1, 2]


@pytest.mark.parametrize("project", [project_l2, project_l1_integer])
def test_bad_input(project):
    with pytest.raises(ValueError, match="y must be a table of shape"):
        project([1.0, 2.0], TOTAL4)
    with pytest.raises(ValueError, match="y must be finite"):
        project([1.0, np.nan, 2.0], TOTAL4)
    with pytest.raises(ValueError, match="invariants must be a LinearInvariants"):
        project([1.0, 2.0, 3.0], None)
    infeasible = LinearInvariants.grand_total(2, -1) & LinearInvariants.nonnegative(2)
    with pytest.raises(InfeasibleInvariants):
        project([1.0, 2.0], infeasible)


def test_infeasible_equalities_without_inequalities():
    with pytest.raises(InfeasibleInvariants):
        project_l2([1.0, 2.0], LinearInvariants([[1, 1], [1, 1]], [1, 2]))
    with pytest.raises(InfeasibleInvariants):
        project_l1_integer([1.0, 2.0], LinearInvariants([[2, 0]], [1]))  # real but no integer solution


# -- extreme inputs --------------------------------------------------------------------------------


def simplex_projection(y, total):
    """Projection onto {s >= 0, sum s = total} by the sort-and-threshold rule (an independent method)."""
    u = np.sort(y)[::-1]
    cumulative = np.cumsum(u) - total
    k = np.flatnonzero(u - cumulative / np.arange(1, len(u) + 1) > 0)[-1]
    return np.maximum(y - cumulative[k] / (k + 1), 0.0)


@pytest.mark.parametrize("big", [1e10, 1e12, 1e15])
def test_l2_projection_of_a_huge_cell(big):
    assert np.allclose(project_l2([big, 3.1, 2.6], TOTAL4), [4.0, 0.0, 0.0], rtol=0, atol=1e-12)


def test_l2_projection_matches_the_simplex_rule_at_every_scale():
    rng = np.random.default_rng(11)
    for scale in (1.0, 1e4, 1e8, 1e12):
        inv = LinearInvariants.grand_total(5, 20) & LinearInvariants.nonnegative(5)
        for _ in range(5):
            y = rng.normal(4.0, scale, size=5)
            assert np.allclose(project_l2(y, inv), simplex_projection(y, 20.0), rtol=0, atol=1e-9 * (1 + scale))


@pytest.mark.parametrize("big", [1e9, 1e10, 1e15, 2.0**52])
def test_l1_projection_of_a_huge_cell(big):
    assert project_l1_integer([big, 3.1, 2.6], TOTAL4).tolist() == [0, 2, 2]  # as for y = [4, 3.1, 2.6]


def test_l1_projection_refuses_values_beyond_2_to_the_53():
    with pytest.raises(ValueError, match="y must lie within 2\\^53"):
        project_l1_integer([2.0**60, 3.1, 2.6], TOTAL4)


# -- Gong & Meng's f_L1 (Example 4.1) ----------------------------------------------------------------


def convex_combination_density(t, beta, eps):
    """(A.1), the density of beta u1 + (1 - beta) u2 for u iid Laplace(2 / eps), from the paper's form."""
    b1, b2 = 2 * beta / eps, 2 * (1 - beta) / eps
    return (b1 * np.exp(-np.abs(t) / b1) - b2 * np.exp(-np.abs(t) / b2)) / (2 * (b1**2 - b2**2))


@pytest.mark.parametrize("beta", [0.0, 0.2, 0.5, 0.5 + 1e-9, 0.9, 1.0])
def test_l1_convex_combination_density(beta):
    eps = 1.3
    mechanism = L1ConvexCombination(eps, beta)
    t = np.linspace(-60, 60, 240_001)
    density = np.exp(mechanism.logpdf([30.0, 20.0], np.column_stack([30.0 - t, 20.0 + t])))
    assert np.trapezoid(density, t) == pytest.approx(1.0, abs=1e-6)
    assert np.trapezoid(t**2 * density, t) == pytest.approx(8 * (beta**2 + (1 - beta) ** 2) / eps**2, rel=1e-5)
    assert density.max() == pytest.approx(np.exp(mechanism.log_bound()), rel=1e-12)
    if beta in (0.2, 0.9):
        assert np.allclose(density, convex_combination_density(t, beta, eps), rtol=1e-9, atol=1e-300)
    if beta in (0.0, 1.0):
        assert np.allclose(density, stats.laplace(scale=2 / eps).pdf(t), rtol=1e-12)
    if beta == 0.5:
        assert np.allclose(density, eps / 4 * (1 + eps * np.abs(t)) * np.exp(-eps * np.abs(t)), rtol=1e-12)


@pytest.mark.parametrize("beta", [0.0, 0.2, 0.5, 0.75])
def test_l1_convex_combination_privacy_is_eps_over_twice_max_beta(beta):
    """The loss between s and its neighbour (s1 - 1, s2 + 1): sup_y of the log ratio, approached in the tails."""
    eps = 1.3
    mechanism = L1ConvexCombination(eps, beta)
    # y = (30, 20) against x = y - (t, -t) and its neighbour x - (1, -1): log g(t) - log g(t + 1)
    far = np.geomspace(1e3, 1e9, 200)
    t = np.sort(np.concatenate([np.linspace(-400, 400, 20_001), far, -far]))
    log_ratio = mechanism.logpdf([30.0, 20.0], np.column_stack([30.0 - t, 20.0 + t])) - mechanism.logpdf(
        [30.0, 20.0], np.column_stack([29.0 - t, 21.0 + t])
    )
    assert np.all(np.diff(log_ratio) >= -1e-6)  # monotone (g is log-concave), to rounding at t ~ 1e9
    loss = float(np.max(np.abs(log_ratio)))
    assert loss <= mechanism.privacy_epsilon + 1e-6
    assert loss == pytest.approx(mechanism.privacy_epsilon, abs=1e-6)  # beta = 1/2 approaches it as 1 / t
    assert mechanism.privacy_epsilon == pytest.approx(eps / (2 * max(beta, 1 - beta)))


def test_l1_convex_combination_is_unbiased_and_the_baseline_is_not():
    """Example 4.1 with s = (30, 20), eps = 1: f_L1 centres on s1; the lexicographic MILP tie-break does not."""
    eps, s = 1.0, np.array([30, 20])
    mechanism = L1ConvexCombination(eps, beta=0.8)
    rng = np.random.default_rng(5)
    releases = np.array([mechanism.release(s, random_seed=rng) for _ in range(20_000)])
    assert np.all(releases.sum(axis=1) == pytest.approx(50.0))
    se = math.sqrt(8 * (0.8**2 + 0.2**2) / eps**2 / len(releases))
    assert abs(releases[:, 0].mean() - 30.0) < 4 * se
    # the releases follow the likelihood: KS against the CDF integrated from logpdf
    grid = np.linspace(-40, 40, 80_001)
    density = np.exp(mechanism.logpdf([30.0, 20.0], np.column_stack([30.0 - grid, 20.0 + grid])))
    cdf = np.concatenate([[0.0], np.cumsum((density[1:] + density[:-1]) / 2 * np.diff(grid))])
    assert stats.kstest(releases[:, 0] - 30.0, lambda v: np.interp(v, grid, cdf)).pvalue > 1e-3
    total = LinearInvariants.grand_total(2, 50) & LinearInvariants.nonnegative(2)
    noisy = s + rng.laplace(0.0, 2 / eps, size=(200, 2))
    baseline = np.array([project_l1_integer(m, total)[0] for m in noisy])
    # biased low by the tie-break: about 28.9 (1,000 releases: 28.93, SE 0.08); here SE about 0.16
    assert baseline.mean() + 4 * baseline.std() / math.sqrt(len(baseline)) < 30.0


def test_l1_convex_combination_checks_its_input():
    with pytest.raises(ValueError, match="beta"):
        L1ConvexCombination(1.0, beta=1.5)
    with pytest.raises(ValueError, match="epsilon"):
        L1ConvexCombination(0.0)
    mechanism = L1ConvexCombination(1.0)
    with pytest.raises(ValueError, match="two-bin histogram"):
        mechanism.release([1, 2, 3])
    with pytest.raises(ValueError, match="size must be 2"):
        mechanism.log_bound(size=3)
    assert mechanism.logpdf([3.0, 5.0], [[3, 4]])[0] == -np.inf  # another total
