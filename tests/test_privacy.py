import itertools
import math
from bisect import bisect_left, bisect_right
from fractions import Fraction

import numpy as np
import pytest
from scipy import optimize

from ppdinfer.privacy import (
    condition_on_public_subset,
    delta_conditional_normal_mean,
    delta_correlated_counts,
    delta_normal_mean,
    delta_sdl_counts,
    k_anonymous_counts,
    parallel_composition,
    plot_correlated_counts,
    quantile_coupling,
    sequential_composition,
    t_close_counts,
    w_inf,
    w_inf_samples,
)


def lp_w_inf(p, q, support):
    """Smallest t among pairwise distances for which a coupling of p and q uses only pairs |x - y| <= t."""
    x = np.asarray(support, dtype=float)
    m = x.size
    distance = np.abs(x[:, None] - x[None, :])
    for t in np.unique(distance):
        pairs = np.argwhere(distance <= t)
        a_eq = np.zeros((2 * m, len(pairs)))
        a_eq[pairs[:, 0], np.arange(len(pairs))] = 1.0
        a_eq[m + pairs[:, 1], np.arange(len(pairs))] = 1.0
        result = optimize.linprog(np.zeros(len(pairs)), A_eq=a_eq, b_eq=np.r_[p, q], bounds=(0, None), method="highs")
        if result.status == 0:
            return t
    raise AssertionError("no coupling found")


def exact_w_inf(p, q):
    """W_inf of pmfs on {0, 1, ...} given as Fractions, by the quantile coupling in exact arithmetic."""
    cum_p, cum_q = list(itertools.accumulate(p)), list(itertools.accumulate(q))
    assert cum_p[-1] == cum_q[-1] == 1
    return max(
        abs(bisect_left(cum_p, level) - bisect_left(cum_q, level)) for level in set(cum_p) | set(cum_q) if level > 0
    )


def binomial_pmf(size, z, length):
    """Exact Bin(size, z) pmf on {0, ..., length - 1} as Fractions."""
    return [
        Fraction(math.comb(size, k)) * z**k * (1 - z) ** (size - k) if k <= size else Fraction(0) for k in range(length)
    ]


# --- Wasserstein-infinity -----------------------------------------------------------------------


def test_point_masses():
    coupling = quantile_coupling([1, 0, 0], [0, 0, 1], [0.0, 1.0, 2.0])
    assert coupling.x.tolist() == [0.0] and coupling.y.tolist() == [2.0]
    assert coupling.mass.tolist() == [1.0] and coupling.max_displacement == 2.0
    assert w_inf([0, 1, 0], [0, 1, 0], [-1, 4, 9]) == 0.0


def test_shift_moves_every_point_by_the_shift():
    coupling = quantile_coupling([0.2, 0.3, 0.5, 0, 0], [0, 0, 0.2, 0.3, 0.5], np.arange(5))
    assert coupling.x.tolist() == [0, 1, 2] and coupling.y.tolist() == [2, 3, 4]
    assert np.allclose(coupling.mass, [0.2, 0.3, 0.5])
    assert coupling.max_displacement == 2.0


def test_two_point_example():
    # P = (1/4, 3/4) and Q = (3/4, 1/4) on {0, 1}: u <= 1/4 pairs (0, 0), 1/4 < u <= 3/4 pairs (1, 0), the rest (1, 1).
    coupling = quantile_coupling([0.25, 0.75], [0.75, 0.25], [0, 1])
    assert coupling.x.tolist() == [0, 1, 1] and coupling.y.tolist() == [0, 0, 1]
    assert np.allclose(coupling.mass, [0.25, 0.5, 0.25])
    assert coupling.max_displacement == 1.0


def test_sup_not_average_and_zero_mass_points_skipped():
    # Lower halves pair 0 with 1, upper halves 3 with 7: W_inf = 4 (W_1 would be 2.5).
    coupling = quantile_coupling([0.5, 0, 0.5, 0], [0, 0.5, 0, 0.5], [0, 1, 3, 7])
    assert coupling.x.tolist() == [0, 3] and coupling.y.tolist() == [1, 7]
    assert coupling.max_displacement == 4.0


def test_floating_point_tie_in_cumulative_sums():
    # 0.1 + 0.2 != 0.3 in binary: exactly, a sliver of 3e-17 pairs 2 with 0 and the distance is 2 (the safe side) ...
    p, q, support = [0.1, 0.2, 0.7, 0], [0.3, 0, 0, 0.7], [0, 1, 2, 3]
    exact = quantile_coupling(p, q, support)
    assert exact.max_displacement == 2.0 and exact.mass.min() < 1e-16
    # ... and a tie tolerance for inputs with rounding merges the two levels.
    coupling = quantile_coupling(p, q, support, tie_tolerance=1e-12)
    assert coupling.x.tolist() == [0, 1, 2] and coupling.y.tolist() == [0, 0, 3]
    assert coupling.max_displacement == 1.0


def cut_w_inf(p, q, support):
    """W_inf by the dual of the coupling LP, in exact arithmetic: the smallest distance t with
    F_P(x) <= F_Q(x + t) and F_Q(x) <= F_P(x + t) at every support point x (max-flow / min-cut on the line)."""
    p = [Fraction(v) for v in p]
    q = [Fraction(v) for v in q]
    p = [v / sum(p) for v in p]
    q = [v / sum(q) for v in q]
    cum_p, cum_q = list(itertools.accumulate(p)), list(itertools.accumulate(q))

    def cdf(cum, point):
        k = bisect_right(support, point + 1e-9) - 1  # + 1e-9: x + t rounds below a support point
        return cum[k] if k >= 0 else 0

    for t in sorted({abs(a - b) for a in support for b in support}):
        if all(cdf(cum_p, x) <= cdf(cum_q, x + t) and cdf(cum_q, x) <= cdf(cum_p, x + t) for x in support):
            return t
    raise AssertionError("unreachable")


def test_tiny_interior_mass_counts():
    # P puts 1e-12 at 1 between two halves, Q nothing: the sliver (0.5, 0.5 + 1e-12] pairs 1 with 50.
    # Before: levels within 1e-10 were merged and W_inf came out 0.
    p, q, support = [0.5, 1e-12, 0.5 - 1e-12], [0.5, 0.0, 0.5], [0.0, 1.0, 50.0]
    assert w_inf(p, q, support) == cut_w_inf(p, q, support) == 49.0
    for mass in [1e-30, 1e-200]:
        p = [0.25, 0.25, mass, 0.5, 0.0]
        q = [0.0, 0.5, 0.0, 0.0, 0.5]
        support = [0.0, 1.0, 2.0, 10.0, 30.0]
        assert w_inf(p, q, support) == cut_w_inf(p, q, support) == 28.0  # 2 meets 30 on a sliver of width `mass`


def test_tail_mass_far_below_rounding_counts():
    # W_inf is an essential supremum: a mass of 1e-20 (invisible in 1 - 1e-20) still moves 3.
    assert w_inf([1.0, 0, 0, 1e-20], [1.0, 0, 0, 0], [0, 1, 2, 3]) == 3.0
    assert w_inf([1e-20, 0, 1.0], [0, 0, 1.0], [0, 1, 2]) == 2.0


def test_matches_linear_program_on_random_small_supports():
    rng = np.random.default_rng(20240601)
    for case in range(40):
        m = int(rng.integers(2, 7))
        support = np.sort(rng.choice(np.arange(-8, 9), size=m, replace=False)) + rng.uniform(0, 0.5) * (case % 2)
        if case % 3 == 0:  # masses on a 1/10 grid: many ties between cumulative levels
            p, q = rng.multinomial(10, np.ones(m) / m, size=2) / 10
        else:  # continuous masses with some points empty
            p, q = rng.dirichlet(np.ones(m), size=2) * (rng.uniform(size=(2, m)) > 0.3)
            p[0] += p.sum() == 0
            q[-1] += q.sum() == 0
            p, q = p / p.sum(), q / q.sum()
        coupling = quantile_coupling(p, q, support, tie_tolerance=1e-12)  # decimal grid: rounding in the inputs
        assert coupling.max_displacement == pytest.approx(lp_w_inf(p, q, support), abs=1e-12)
        assert w_inf(p, q, support) == cut_w_inf(p, q, support.tolist())
        # The coupling has marginals p and q and is monotone.
        assert np.allclose(np.bincount(np.searchsorted(support, coupling.x), coupling.mass, m), p, atol=1e-12)
        assert np.allclose(np.bincount(np.searchsorted(support, coupling.y), coupling.mass, m), q, atol=1e-12)
        assert np.all(np.diff(coupling.x) >= 0) and np.all(np.diff(coupling.y) >= 0)
        assert np.all(coupling.mass > 0)


def test_samples_hand_computed():
    assert w_inf_samples([0, 1, 2], [0, 1, 2, 3]) == 1.0
    assert w_inf_samples([10, 0], [0, 0, 10, 0]) == 10.0  # u in (1/2, 3/4] pairs 10 with 0
    assert w_inf_samples([3.5], [1.0, 1.0]) == 2.5
    assert w_inf_samples([2, 1, 3], [3, 2, 1]) == 0.0


def test_samples_agree_with_pmf_version():
    rng = np.random.default_rng(7)
    for m, k in [(3, 6), (7, 12), (5, 5), (10, 4)]:
        a, b = rng.integers(0, 6, size=m), rng.integers(0, 6, size=k)
        support = np.union1d(a, b)
        p = np.bincount(np.searchsorted(support, a), minlength=support.size) / m
        q = np.bincount(np.searchsorted(support, b), minlength=support.size) / k
        assert w_inf_samples(a, b) == w_inf(p, q, support) == lp_w_inf(p, q, support)


# --- Example 1: normal mean --------------------------------------------------------------------


def test_normal_mean_without_public_information():
    assert delta_normal_mean(4, 2.0) == 0.5
    assert delta_normal_mean(100, 3.0) == pytest.approx(0.03)
    # The general formula reduces to width / n: no Z, and a Z independent of the records.
    sigma2, n = 3.0, 4
    no_z = [[sigma2 / n, sigma2 / n], [sigma2 / n, sigma2]]
    independent_z = [[sigma2 / n, sigma2 / n, 0.0], [sigma2 / n, sigma2, 0.0], [0.0, 0.0, 7.0]]
    assert delta_conditional_normal_mean(2.0, no_z) == pytest.approx(0.5)
    assert delta_conditional_normal_mean(2.0, independent_z) == pytest.approx(0.5)


def test_conditional_normal_mean_hand_computed():
    # n = 4 iid N(mu, 1) and Z = X_2 - 2 X_1: Sigma_VZ = [[1, -2], [-2, 5]] (inverse [[5, 2], [2, 1]]),
    # Sigma_XVZ = (1/4, -1/4), beta = (3/4, 1/4): changing X_1 by D moves Xbar by 3 D / 4 given Z.
    cov = [[0.25, 0.25, -0.25], [0.25, 1.0, -2.0], [-0.25, -2.0, 5.0]]
    assert delta_conditional_normal_mean(2.0, cov) == pytest.approx(1.5)
    # Z = the mean of the other records: beta_1 = 1 / n again.
    n = 5
    cov = [[1 / n, 1 / n, (n - 1) / n**2], [1 / n, 1.0, 0.0], [(n - 1) / n**2, 0.0, (n - 1) / n**2]]
    assert delta_conditional_normal_mean(1.0, cov) == pytest.approx(1 / n)


def test_conditional_normal_mean_is_unbounded_over_dependence():
    n, width = 4, 2.0
    for a in [1.0, 10.0, 100.0]:  # Z = X_2 - a X_1: Delta_z = (1 + a) width / n
        cov = [[1 / n, 1 / n, (1 - a) / n], [1 / n, 1.0, -a], [(1 - a) / n, -a, 1 + a**2]]
        assert delta_conditional_normal_mean(width, cov) == pytest.approx((1 + a) * width / n)


# --- Example 2 / 4: counts under SDL properties --------------------------------------------------


def brute_force_sdl(n, allowed, thetas):
    """Remaining secret pairs and Delta_z by enumerating {0, 1}^n (W_inf by linear programming)."""
    databases = np.array(list(itertools.product([0, 1], repeat=n)))
    counts = databases.sum(axis=1)
    keep = np.isin(counts, allowed)
    pairs = tuple(i for i in range(n) if len(set(databases[keep, i])) == 2)
    delta = 0
    for theta in thetas:
        weight = theta**counts * (1 - theta) ** (n - counts) * keep
        for i in {pairs[0], pairs[-1]} if pairs else ():
            one, zero = (np.bincount(counts[databases[:, i] == j], weight[databases[:, i] == j], n + 1) for j in (1, 0))
            delta = max(delta, lp_w_inf(one / one.sum(), zero / zero.sum(), np.arange(n + 1)))
    return pairs, delta


@pytest.mark.parametrize(
    "n, allowed",
    [
        (6, k_anonymous_counts(6, 2)),
        (6, k_anonymous_counts(6, 3)),
        (5, k_anonymous_counts(5, 1)),
        (5, t_close_counts(5, 0.1, 0.1)),
        (6, t_close_counts(6, 0.2, 0.6)),
        (4, [0]),
        (4, [4]),
        (4, [0, 4]),
        (5, [1, 4]),
        (5, [0, 2, 5]),
        (5, np.arange(6)),
    ],
)
def test_sdl_counts_match_enumeration(n, allowed):
    thetas = [0.2, 0.5, 0.7]
    result = delta_sdl_counts(n, allowed, thetas)
    assert (result.secret_pairs, result.delta) == brute_force_sdl(n, allowed, thetas)


def test_sdl_counts_values():
    assert k_anonymous_counts(6, 2).tolist() == [2, 3, 4]
    assert t_close_counts(10, 0.1, 0.3).tolist() == [2, 3, 4]  # 0.4 - 0.3 = 0.1 is on the boundary
    assert t_close_counts(5, 0.1, 0.1).tolist() == [0, 1]
    # SDL on an interval keeps the sensitivity of the plain count, 1 ...
    for n, allowed in [(6, k_anonymous_counts(6, 2)), (10, t_close_counts(10, 0.1, 0.3)), (8, np.arange(9))]:
        result = delta_sdl_counts(n, allowed)
        assert result.delta == 1 and result.secret_pairs == tuple(range(n))
    # ... unless it discloses the count (0) or every record (no pair left).
    assert delta_sdl_counts(6, k_anonymous_counts(6, 3)).delta == 0
    assert delta_sdl_counts(6, [3]).secret_pairs == tuple(range(6))
    assert delta_sdl_counts(4, [0]).secret_pairs == () and delta_sdl_counts(4, [0]).delta == 0
    # Sets with holes are not intervals: there the records at the ends move the count a lot.
    assert delta_sdl_counts(6, [0, 6]).delta == 6
    assert delta_sdl_counts(6, [1, 5]).delta == 4


# --- Section 4.4: correlated counts ------------------------------------------------------------


@pytest.mark.parametrize("n", [1, 2, 10, 500])
def test_correlated_counts_extremes(n):
    assert delta_correlated_counts(n, 0.0, 1.0) == n
    z = np.array([0.0, 0.2, 0.5, 0.93, 1.0])
    assert delta_correlated_counts(n, z, z).tolist() == [1] * 5  # 1 + Bin(n-1, z) is Bin(n-1, z) shifted by one
    # Positive mass at the far end is enough: z0 = 0 < z1 or z0 < 1 = z1 gives n.
    assert delta_correlated_counts(n, 0.0, [0.01, 0.5]).tolist() == [n, n]
    assert delta_correlated_counts(n, [0.5, 0.99], 1.0).tolist() == [n, n]


def test_correlated_counts_hand_computed():
    # n = 2: P = 1 + Bernoulli(z1), Q = Bernoulli(z0); for z0 < z1, u in (1 - z1, 1 - z0] pairs 2 with 0.
    z0, z1 = np.meshgrid(np.linspace(0, 1, 11), np.linspace(0, 1, 11), indexing="ij")
    upper = z0 <= z1
    assert np.array_equal(delta_correlated_counts(2, z0[upper], z1[upper]), 1 + (z0[upper] < z1[upper]))
    # n = 10, z0 = 0.3, z1 = 0.7: 10 pairs with Q's 96% quantile 5 (P(Q >= 6) = 0.025 < 0.7^9 = 0.040).
    assert delta_correlated_counts(10, 0.3, 0.7) == 5


@pytest.mark.parametrize(
    "n, z0, z1, expected",
    [
        (10, Fraction(1, 4), Fraction(3, 4), 6),
        (100, Fraction(1, 64), Fraction(1, 2), 71),
        (100, Fraction(1, 1024), Fraction(1, 2), 85),
        (200, Fraction(1, 128), Fraction(1, 4), 118),
    ],
)
def test_correlated_counts_match_exact_arithmetic(n, z0, z1, expected):
    # Linear-scale float cumulative sums lose the tails that decide the last three (68, 76, 80).
    exact = exact_w_inf([Fraction(0)] + binomial_pmf(n - 1, z1, n), binomial_pmf(n - 1, z0, n + 1))
    assert exact == expected
    assert delta_correlated_counts(n, float(z0), float(z1)) == expected


@pytest.mark.parametrize("n", [10, 50])
def test_correlated_counts_monotone_and_vectorized(n):
    grid = np.linspace(0, 1, 21)
    z0, z1 = np.meshgrid(grid, grid, indexing="ij")
    upper = z0 <= z1
    table = np.zeros(z0.shape, dtype=int)
    table[upper] = delta_correlated_counts(n, z0[upper], z1[upper])
    assert table[upper].min() == 1 and table[upper].max() == n
    for i in range(grid.size):
        assert np.all(np.diff(table[i, i:]) >= 0)  # non-decreasing in z1
        assert np.all(np.diff(table[: i + 1, i]) <= 0)  # non-increasing in z0
    # Broadcasting agrees with scalar calls.
    block = delta_correlated_counts(n, [[0.1], [0.3]], [0.3, 0.6, 0.9])
    assert block.shape == (2, 3)
    assert block.tolist() == [[delta_correlated_counts(n, a, b) for b in (0.3, 0.6, 0.9)] for a in (0.1, 0.3)]


def test_figure_4(tmp_path):
    figure = plot_correlated_counts(ns=(10, 50, 100, 500), z0_values=(0.05, 0.25), z1_grid=np.linspace(0, 1, 21))
    assert len(figure.axes) == 4
    for axis, n in zip(figure.axes, (10, 50, 100, 500)):
        assert len(axis.lines) == 2 and axis.get_title() == f"$n = {n}$"
        for line, z0 in zip(axis.lines, (0.05, 0.25)):
            z1, delta = line.get_xdata(), line.get_ydata()
            assert z1.min() >= z0 and delta[-1] == n
            assert np.array_equal(delta, delta_correlated_counts(n, z0, z1))
    figure.savefig(tmp_path / "figure4.png")
    assert (tmp_path / "figure4.png").stat().st_size > 0
    default = plot_correlated_counts()
    assert [len(axis.lines) for axis in default.axes] == [5, 5, 5, 5]


# --- eps-TP accounting -------------------------------------------------------------------------


def test_accounting():
    assert sequential_composition([0.5, 0.25, 1.0]) == 1.75
    assert sequential_composition(np.array([0.1])) == 0.1
    assert parallel_composition([0.5, 0.25, 1.0]) == 1.0
    assert parallel_composition(e for e in [0.3, 0.3]) == 0.3
    assert condition_on_public_subset(0.3) == 0.6


# --- bad input ---------------------------------------------------------------------------------

BAD_INPUT = [
    (lambda: w_inf([-0.5, 1.5], [0.5, 0.5], [0, 1]), "p must be non-negative"),
    (lambda: w_inf([0.5, 0.5], [0.5, 0.6], [0, 1]), "q must sum to 1"),
    (lambda: w_inf([0.5, 0.5], [1.0], [0, 1]), "q must hold one mass per support point"),
    (lambda: w_inf([0.5, 0.5], [0.5, 0.5], [1, 0]), "support must be strictly increasing"),
    (lambda: w_inf([0.5, 0.5], [0.5, 0.5], [1, 1]), "support must be strictly increasing"),
    (lambda: w_inf([np.nan, 1.0], [0.5, 0.5], [0, 1]), "p must be finite"),
    (lambda: w_inf([[0.5, 0.5]], [0.5, 0.5], [0, 1]), "p must be a non-empty 1-D array"),
    (lambda: w_inf([], [], []), "support must be a non-empty 1-D array"),
    (lambda: w_inf_samples([], [1.0]), "a must be a non-empty 1-D array"),
    (lambda: w_inf_samples([1.0], [np.inf]), "b must be finite"),
    (lambda: delta_correlated_counts(0, 0.2, 0.5), "n must be a positive integer"),
    (lambda: delta_correlated_counts(2.5, 0.2, 0.5), "n must be a positive integer"),
    (lambda: delta_correlated_counts(10, 0.6, 0.5), "z0 must not exceed z1"),
    (lambda: delta_correlated_counts(10, -0.1, 0.5), r"z0 must lie in \[0, 1\]"),
    (lambda: delta_correlated_counts(10, 0.1, 1.5), r"z1 must lie in \[0, 1\]"),
    (lambda: delta_correlated_counts(10, [0.1, 0.2], [0.3, 0.4, 0.5]), "z0 and z1 must broadcast"),
    (lambda: k_anonymous_counts(6, 4), "k must be at most n / 2"),
    (lambda: k_anonymous_counts(6, 1.5), "k must be a positive integer"),
    (lambda: k_anonymous_counts(-6, 1), "n must be a positive integer"),
    (lambda: t_close_counts(2, 0.1, 0.25), "t = 0.1 is too small"),
    (lambda: t_close_counts(5, -0.1, 0.5), "t must lie in"),
    (lambda: t_close_counts(5, 0.1, 2.0), "t_star must lie in"),
    (lambda: delta_sdl_counts(6, [-1, 2]), "allowed must be non-negative"),
    (lambda: delta_sdl_counts(6, [1.5, 2]), "allowed must hold integers"),
    (lambda: delta_sdl_counts(6, [2, 7]), "allowed must be a non-empty set of counts in 0..6"),
    (lambda: delta_sdl_counts(6, []), "allowed must be a non-empty set"),
    (lambda: delta_sdl_counts(6, [2, 3], thetas=[0.0, 0.5]), r"thetas must lie in \(0, 1\)"),
    (lambda: delta_normal_mean(0, 1.0), "n must be a positive integer"),
    (lambda: delta_normal_mean(5, 0.0), "width must be a positive finite number"),
    (lambda: delta_conditional_normal_mean(-1.0, [[1, 0], [0, 1]]), "width must be a positive finite number"),
    (lambda: delta_conditional_normal_mean(1.0, [[1, 0, 0], [0, 1, 0]]), "cov must be a square matrix"),
    (lambda: delta_conditional_normal_mean(1.0, [[1, 0.5], [0.2, 1]]), "cov must be symmetric"),
    (lambda: delta_conditional_normal_mean(1.0, [[1, 2], [2, 1]]), "cov must be positive semi-definite"),
    (lambda: delta_conditional_normal_mean(1.0, [[1, 1, 1], [1, 1, 1], [1, 1, 1]]), "covariance of \\(X_1, Z\\)"),
    (lambda: sequential_composition([0.5, 0.0]), r"epsilons\[1\] must be a positive finite number"),
    (lambda: sequential_composition([]), "epsilons must hold at least one"),
    (lambda: parallel_composition([0.5, -1.0]), r"epsilons\[1\] must be a positive finite number"),
    (lambda: parallel_composition(0.5), "epsilons must be a collection"),
    (lambda: condition_on_public_subset(0.0), "epsilon must be a positive finite number"),
    (lambda: condition_on_public_subset(math.inf), "epsilon must be a positive finite number"),
    (lambda: plot_correlated_counts(ns=[]), "ns must hold at least one n"),
    (lambda: plot_correlated_counts(ns=[10, 0]), r"ns\[1\] must be a positive integer"),
    (lambda: plot_correlated_counts(z0_values=[1.5]), r"z0_values must lie in \[0, 1\]"),
]


@pytest.mark.parametrize("call, message", BAD_INPUT)
def test_bad_input_raises_value_error_naming_the_parameter(call, message):
    with pytest.raises(ValueError, match=message):
        call()
