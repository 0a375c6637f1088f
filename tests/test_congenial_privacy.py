"""Gong & Meng's congenial privacy: Theorem 2.1's gamma*, exact privacy-loss audits, Examples 4.1 and 5.2.

Each numbered claim is checked so that the printed version, where the notes list an erratum,
would fail: Table 2's L2 expectation (sbar, sbar) and Section 5.1's gamma = -0.5 under the
paper's own substitution adjacency.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy.signal import fftconvolve

from ppdinfer.invariants import LinearInvariants
from ppdinfer.privacy import (
    conforming_probability,
    congenial_gamma,
    congenial_privacy_loss,
    double_geometric_pmf,
)

EPS = 1.0


def counts(x):
    """s(x) = (#0, #1) of a binary vector."""
    ones = int(sum(x))
    return [len(x) - ones, ones]


def substitution_pairs(n):
    """Every (x, x') in {0,1}^n differing in one record (bounded adjacency)."""
    for x in itertools.product((0, 1), repeat=n):
        for i in range(n):
            yield x, x[:i] + (1 - x[i],) + x[i + 1 :]


def add_remove_pairs(n):
    """Every (x, x') with x' = x plus one record (unbounded adjacency, distance 1)."""
    for x in itertools.product((0, 1), repeat=n):
        for bit in (0, 1):
            yield x, x + (bit,)


def total_with_far_bounds(n, far=40):
    """S* = {y in Z^2 : y1 + y2 = n, y >= -far}: the total invariant of Example 4.1, bounded far away
    so that S* is finite; the bound changes c(x) by about exp(-eps * far), far below the tolerances."""
    return LinearInvariants([[1, 1]], [n], B=np.eye(2, dtype=int), b=[-far, -far])


# -- Example 4.1, discrete analogue (double geometric, a = exp(-eps/2) per cell ~ Laplace(2/eps)) -----


def test_example_4_1_gamma_is_zero_under_substitution_adjacency():
    n = 4
    pmf = double_geometric_pmf(EPS, sensitivity=2)  # s has L1 sensitivity 2 under substitution
    inv = total_with_far_bounds(n)
    gamma_star = congenial_gamma(pmf, counts, inv, substitution_pairs(n), EPS, k=1)
    loss = congenial_privacy_loss(pmf, counts, inv, substitution_pairs(n))
    effective_gamma = loss / (1 * EPS) - 1
    assert gamma_star == pytest.approx(0.0, abs=1e-12)
    assert loss == pytest.approx(EPS, abs=1e-12)
    assert effective_gamma == pytest.approx(0.0, abs=1e-12)  # the paper's -0.5 fails here
    assert abs(effective_gamma - (-0.5)) > 0.4


def test_example_4_1_gamma_minus_half_needs_add_remove_adjacency():
    n = 4
    pmf = double_geometric_pmf(EPS, sensitivity=2)
    inv = total_with_far_bounds(n)
    # Adding or removing a record breaks the total: no conforming neighbours at distance 1 ...
    with pytest.raises(ValueError, match="neighbours"):
        congenial_gamma(pmf, counts, inv, add_remove_pairs(n), EPS, k=1)
    # ... the nearest conforming pairs are a removal plus an addition (k = 2); with M counted
    # eps-DP per add/remove step as in Section 5.1, (1 + gamma) 2 eps = eps gives gamma = -0.5.
    loss = congenial_privacy_loss(pmf, counts, inv, substitution_pairs(n))
    assert loss / (2 * EPS) - 1 == pytest.approx(-0.5, abs=1e-12)


def test_example_4_1_with_nonnegativity_theorem_2_1_is_attained():
    """With y >= 0 the boundary makes c(x) depend on x: gamma* > 0 and the loss is exactly (1 + gamma*) eps."""
    n = 4
    pmf = double_geometric_pmf(EPS, sensitivity=2)
    inv = LinearInvariants.grand_total(2, n) & LinearInvariants.nonnegative(2)
    gamma_star = congenial_gamma(pmf, counts, inv, substitution_pairs(n), EPS)
    loss = congenial_privacy_loss(pmf, counts, inv, substitution_pairs(n))
    b = math.exp(-EPS)  # p*(y1 | j) is proportional to b^|y1 - j| on {0..n}
    c0, c1 = sum(b**m for m in range(n + 1)), sum(b ** abs(m - 1) for m in range(n + 1))
    assert gamma_star == pytest.approx(math.log(c1 / c0) / EPS, rel=1e-12)
    assert 0 < gamma_star <= 1
    assert loss == pytest.approx((1 + gamma_star) * EPS, rel=1e-12)


@pytest.mark.parametrize("eps, k", [(0.7, 1), (0.4, 2), (1.5, 1)])
def test_theorem_2_1_bound_on_three_category_counts(eps, k):
    """Records in {0, 1, 2}, s = counts, total and non-negativity invariant, pairs at substitution distance k."""
    n = 3

    def three_counts(x):
        return [sum(1 for v in x if v == c) for c in range(3)]

    pairs = [
        (x, y)
        for x in itertools.product(range(3), repeat=n)
        for y in itertools.product(range(3), repeat=n)
        if sum(a != b for a, b in zip(x, y)) == k
    ]
    pmf = double_geometric_pmf(eps, sensitivity=2)  # M is eps-DP per substitution
    inv = LinearInvariants.grand_total(3, n) & LinearInvariants.nonnegative(3)
    gamma_star = congenial_gamma(pmf, three_counts, inv, pairs, eps, k=k)
    loss = congenial_privacy_loss(pmf, three_counts, inv, pairs)
    assert 0 <= gamma_star <= 1
    assert loss <= (1 + gamma_star) * k * eps + 1e-12


def test_conforming_probability_matches_closed_form():
    pmf = double_geometric_pmf(EPS, sensitivity=2)
    inv = LinearInvariants.grand_total(2, 2) & LinearInvariants.nonnegative(2)
    a = math.exp(-EPS / 2)
    norm = ((1 - a) / (1 + a)) ** 2
    expected = norm * sum(a ** (2 * abs(y1 - 1)) for y1 in range(3))  # s = (1, 1)
    assert conforming_probability(pmf, [1, 1], inv) == pytest.approx(expected, rel=1e-14)


# -- Example 5.2: rounding and secrecy ------------------------------------------------------------------


def test_example_5_2_singleton_invariant_is_zero_dp():
    n, eps = 60, 0.8
    pmf = double_geometric_pmf(eps, sensitivity=1)
    groups = lambda x: [math.ceil(sum(x) / 10)]  # noqa: E731
    inv = LinearInvariants(None, None, [[1], [-1]], [5, -5])  # S* = {5}: sum x in [41, 50]
    assert inv.enumerate().tolist() == [[5]]
    database = lambda m: (1,) * m + (0,) * (n - m)  # noqa: E731  s depends on the count only
    pairs = [(database(m), database(m + 1)) for m in range(35, 56)]  # 40/41 and 50/51 do not conform
    assert conforming_probability(pmf, [5], inv) == pytest.approx((1 - math.exp(-eps)) / (1 + math.exp(-eps)))
    assert congenial_gamma(pmf, groups, inv, pairs, eps) == 0.0
    loss = congenial_privacy_loss(pmf, groups, inv, pairs)
    assert loss == 0.0
    assert loss / eps - 1 == -1.0  # gamma = -1: P(M*(x) = 5) = 1 for every conforming x


# -- Example 4.1, continuous Laplace(2/eps) per cell: the three rules of Table 2 ----------------------


def laplace_pdf(u, scale):
    return np.exp(-np.abs(u) / scale) / (2 * scale)


GRID = np.linspace(-80.0, 80.0, 320_001)  # step 5e-4; the tails beyond carry < e^-40 of the mass
STEP = GRID[1] - GRID[0]


def moments(density):
    mass = np.trapezoid(density, GRID)
    mean = np.trapezoid(GRID * density, GRID) / mass
    return mass, mean, np.trapezoid((GRID - mean) ** 2 * density, GRID) / mass


def test_table_2_congenial_variance():
    """M* = (s1 + u, s2 - u): u has density proportional to f(u) f(-u), f the Laplace(2/eps) pdf."""
    _, mean, var = moments(laplace_pdf(GRID, 2 / EPS) ** 2)
    assert mean == pytest.approx(0.0, abs=1e-12)
    assert var == pytest.approx(2 / EPS**2, rel=1e-6)


def test_table_2_l2_projection_is_centred_on_s_not_sbar():
    s1, s2 = 3.0, 1.0
    # (u1 - u2)/2 is the sum of two independent Laplace(1/eps): density (eps/4)(1 + eps|u|) e^(-eps|u|).
    printed = EPS / 4 * (1 + EPS * np.abs(GRID)) * np.exp(-EPS * np.abs(GRID))
    convolved = fftconvolve(laplace_pdf(GRID, 1 / EPS), laplace_pdf(GRID, 1 / EPS), mode="same") * STEP
    assert np.max(np.abs(convolved - printed)) < 1e-6
    mass, mean, var = moments(printed)
    assert mass == pytest.approx(1.0, abs=1e-9)
    assert var == pytest.approx(4 / EPS**2, rel=1e-6)
    expectation = (s1 + mean, s2 - mean)
    assert expectation == pytest.approx((s1, s2), abs=1e-9)
    sbar = (s1 + s2) / 2
    assert abs(expectation[0] - sbar) > 0.9  # Table 2's (sbar, sbar) is wrong
    # and by simulation of the projection itself: argmin over y1 + y2 = n of ||M(x) - y||_2
    rng = np.random.default_rng(41)
    m = np.array([s1, s2]) + rng.laplace(scale=2 / EPS, size=(400_000, 2))
    projected = m - (m.sum(axis=1, keepdims=True) - (s1 + s2)) / 2
    se = projected[:, 0].std() / math.sqrt(len(m))
    assert abs(projected[:, 0].mean() - s1) < 4 * se
    assert abs(projected[:, 0].mean() - sbar) > 50 * se


def l1_rule_log_density(t, beta, eps):
    """log of (A.1), the density of beta u1 + (1 - beta) u2, computed stably (beta != 1/2)."""
    b_big, b_small = sorted([2 * beta / eps, 2 * (1 - beta) / eps], reverse=True)
    t = np.abs(t)
    return (
        -t / b_big
        + np.log(b_big - b_small * np.exp(-t * (1 / b_small - 1 / b_big)))
        - math.log(2 * (b_big**2 - b_small**2))
    )


@pytest.mark.parametrize("beta", [0.0, 0.2, 0.5, 0.9])
def test_table_2_l1_rule_variance(beta):
    expected = 8 * (beta**2 + (1 - beta) ** 2) / EPS**2
    rng = np.random.default_rng(7)
    u = rng.laplace(scale=2 / EPS, size=(2, 1_000_000))
    assert np.var(beta * u[0] + (1 - beta) * u[1]) == pytest.approx(expected, rel=0.01)
    if beta not in (0.0, 0.5):
        density = np.exp(l1_rule_log_density(GRID, beta, EPS))
        mass, _, var = moments(density)
        assert mass == pytest.approx(1.0, abs=1e-6)
        assert var == pytest.approx(expected, rel=1e-5)


@pytest.mark.parametrize("beta", [0.2, 0.6, 0.9])
def test_l1_rule_privacy_is_eps_over_twice_max_beta(beta):
    """The release s1 + u~ under substitution (s1 moves by 1) has privacy loss sup_t |log g(t)/g(t+1)|.

    g, a convolution of two Laplace pdfs, is log-concave, so t -> log g(t) - log g(t+1) is monotone and its
    supremum is the limit at +-infinity, 1/(largest scale) = eps / (2 max(beta, 1 - beta)): the grid's
    maximum approaches it from below and never passes it.
    """
    eps = 1.3
    target = eps / (2 * max(beta, 1 - beta))
    t = np.linspace(-300 / eps, 300 / eps, 600_001)
    # (A.1) against a numerical convolution, to trust the closed form
    conv = fftconvolve(laplace_pdf(GRID, 2 * beta / eps), laplace_pdf(GRID, 2 * (1 - beta) / eps), mode="same") * STEP
    assert np.max(np.abs(conv - np.exp(l1_rule_log_density(GRID, beta, eps)))) < 1e-5
    log_ratio = l1_rule_log_density(t, beta, eps) - l1_rule_log_density(t + 1, beta, eps)
    assert np.all(np.diff(log_ratio) >= -1e-12)  # monotone
    loss = np.max(np.abs(log_ratio))
    assert loss <= target + 1e-12
    assert loss == pytest.approx(target, abs=1e-9)
    assert loss < eps - 0.1  # strictly better than eps for beta != 1/2


def test_l1_rule_privacy_at_half_is_eps():
    eps = 1.3
    t = np.array([1e3, 1e6, 1e9])  # (A.2): log ratio = eps + log((1 + eps t) / (1 + eps (t + 1))) -> eps
    log_ratio = eps + np.log1p(eps * t) - np.log1p(eps * (t + 1))
    assert np.all(log_ratio < eps)
    assert log_ratio[-1] == pytest.approx(eps / (2 * 0.5), abs=1e-8)


# -- errors ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"epsilon": 0.0}, "epsilon"),
        ({"epsilon": -1.0}, "epsilon"),
        ({"k": 0}, "k"),
        ({"invariants": LinearInvariants.grand_total(2, 2)}, "invariants.*infinite"),
        ({"neighbours": [((0, 0), (0, 0, 1))]}, "neighbours"),
        ({"neighbours": [(0, 0, 1)]}, "neighbours"),
        ({"noise_pmf": 3}, "noise_pmf"),
    ],
)
def test_bad_input_names_the_parameter(kwargs, match):
    args = {
        "noise_pmf": double_geometric_pmf(EPS, 2),
        "statistic": counts,
        "invariants": LinearInvariants.grand_total(2, 2) & LinearInvariants.nonnegative(2),
        "neighbours": list(substitution_pairs(2)),
        "epsilon": EPS,
        "k": 1,
    }
    args.update(kwargs)
    with pytest.raises(ValueError, match=match):
        congenial_gamma(**args)


def test_double_geometric_pmf_sums_to_one_and_rejects_bad_epsilon():
    u = np.arange(-200, 201).reshape(-1, 1)
    assert double_geometric_pmf(0.5)(u).sum() == pytest.approx(1.0, abs=1e-12)
    with pytest.raises(ValueError, match="epsilon"):
        double_geometric_pmf(0)
