"""The Kantorovich mechanism for Pufferfish privacy (ppdinfer.privacy.kantorovich, Ni Ding)."""

import itertools
import math

import numpy as np
import ot
import pandas as pd
import pytest
from scipy import integrate, stats

from ppdinfer.mechanisms import DiscreteLaplace, Gaussian, Laplace, gaussian_delta
from ppdinfer.privacy import w_inf
from ppdinfer.privacy.kantorovich import (
    ABSENT,
    CORRECTED_CONSTANT,
    PRINTED_CONSTANT,
    counting_query_conditionals,
    empirical_conditionals,
    kantorovich_gaussian,
    kantorovich_laplace,
    kantorovich_plan,
    plan_sensitivity,
    privacy_delta,
    privacy_loss,
    relaxed_laplace_scale,
    separable_query_conditionals,
    separable_sensitivity,
    smallest_gaussian_sigma,
    smallest_laplace_scale,
    support_diameter,
    theorem3_constant,
)

EXAMPLE1 = ([1 / 3, 1 / 6, 1 / 3, 1 / 6], [1 / 4, 1 / 4, 1 / 6, 1 / 3], [1, 2, 3, 4])
EXAMPLE2 = ([0.2, 0.225, 0.5, 0.075, 0.0], [0.0, 0.075, 0.5, 0.225, 0.2], [1, 2, 3, 4, 5])
# Appendix C, Tables 3 and 6: the nonzeros (x, x') -> mass, 1-based.
EXAMPLE1_PLAN = {(1, 1): 1 / 4, (1, 2): 1 / 12, (2, 2): 1 / 6, (3, 3): 1 / 6, (3, 4): 1 / 6, (4, 4): 1 / 6}
EXAMPLE2_PLAN = {(1, 2): 0.075, (1, 3): 0.125, (2, 3): 0.225, (3, 3): 0.15, (3, 4): 0.225, (3, 5): 0.125, (4, 5): 0.075}


def _nonzeros(plan):
    return {(int(i) + 1, int(j) + 1): float(m) for i, j, m in zip(plan.rows, plan.cols, plan.mass)}


def _random_pmfs(rng, size, zeros=0):
    p, q = rng.dirichlet(np.ones(size)), rng.dirichlet(np.ones(size))
    p[rng.choice(size, zeros, replace=False)] = 0
    return p / p.sum(), q


# ---------------------------------------------------------------------------------------------- plans


@pytest.mark.parametrize(
    "example, expected, sensitivity", [(EXAMPLE1, EXAMPLE1_PLAN, 1.0), (EXAMPLE2, EXAMPLE2_PLAN, 2.0)]
)
def test_appendix_c_plans_and_sensitivities(example, expected, sensitivity):
    plan = kantorovich_plan(*example, tie_tolerance=1e-12)
    found = _nonzeros(plan)
    assert found.keys() == expected.keys()
    assert all(math.isclose(found[key], expected[key], abs_tol=1e-15) for key in expected)
    assert plan.sensitivity == sensitivity == w_inf(*example, tie_tolerance=1e-12)
    dense = plan.matrix()
    np.testing.assert_allclose(dense.sum(axis=1), example[0], atol=1e-15)
    np.testing.assert_allclose(dense.sum(axis=0), example[1], atol=1e-15)
    assert plan_sensitivity(dense, example[2]) == sensitivity


def test_tolerance_removes_floating_point_crumbs():
    # 1/3 + 1/6 + 1/3 and 1/4 + 1/4 + 1/6 differ in binary: the exact coupling keeps a 1e-17 sliver (3, 2).
    exact = _nonzeros(kantorovich_plan(*EXAMPLE1))
    assert (3, 2) in exact and exact[(3, 2)] < 1e-16
    assert (3, 2) not in _nonzeros(kantorovich_plan(*EXAMPLE1, tie_tolerance=1e-12))


def test_support_diameter_baseline():
    assert support_diameter(*EXAMPLE1) == 3.0
    assert support_diameter(*EXAMPLE2) == 4.0  # supp p = {1..4}, supp q = {2..5}: 5 - 1


def test_lp_with_absolute_cost_can_return_a_plan_with_a_larger_sensitivity():
    # With cost abs(x - x') the optimum is not unique; POT's network simplex picks a longer move.
    for p, q, support in [([0.5, 0.5, 0.0], [0.0, 0.5, 0.5], [0.0, 1.0, 2.0]), EXAMPLE2]:
        support = np.asarray(support, dtype=float)
        lp_plan = ot.emd(np.asarray(p), np.asarray(q), np.abs(np.subtract.outer(support, support)))
        ours = kantorovich_plan(p, q, support, tie_tolerance=1e-12)
        cost = np.abs(np.subtract.outer(support, support))
        assert math.isclose((lp_plan * cost).sum(), (ours.matrix() * cost).sum(), abs_tol=1e-12)  # both optimal
        assert plan_sensitivity(lp_plan, support, mass_tolerance=1e-12) > ours.sensitivity


@pytest.mark.parametrize("seed", range(5))
def test_squared_cost_lp_gives_the_comonotone_plan(seed):
    rng = np.random.default_rng(seed)
    size = 12
    p, q = _random_pmfs(rng, size, zeros=3)
    support = np.sort(rng.choice(100, size, replace=False)).astype(float)
    lp_plan = ot.emd(p, q, np.subtract.outer(support, support) ** 2)
    ours = kantorovich_plan(p, q, support, tie_tolerance=1e-12)
    np.testing.assert_allclose(lp_plan, ours.matrix(), atol=1e-12)
    assert plan_sensitivity(lp_plan, support, mass_tolerance=1e-12) == ours.sensitivity


def test_plan_is_sparse_and_monotone():
    rng = np.random.default_rng(1)
    p, q = _random_pmfs(rng, 10**4)
    plan = kantorovich_plan(p, q, np.arange(10**4))
    assert plan.rows.size <= 2 * 10**4 - 1 and np.all(np.diff(plan.rows) >= 0) and np.all(np.diff(plan.cols) >= 0)
    assert math.isclose(plan.mass.sum(), 1.0)


# ---------------------------------------------------------------------------------- conditionals


def test_counting_query_binomial_figures_1_and_5():
    pmfs = counting_query_conditionals([0.7] * 25)
    np.testing.assert_allclose(pmfs.pmfs[0], np.r_[stats.binom.pmf(np.arange(25), 24, 0.7), 0.0], atol=1e-15)
    np.testing.assert_allclose(pmfs.pmfs[ABSENT], stats.binom.pmf(np.arange(26), 25, 0.7), atol=1e-15)
    plan = pmfs.plan(0, 1, tie_tolerance=1e-10)
    assert plan.sensitivity == 1.0 and np.all(plan.cols - plan.rows == 1)  # one off-diagonal (Figure 1a)
    absent = pmfs.plan(0, ABSENT, tie_tolerance=1e-10)
    assert absent.sensitivity == 1.0 and set((absent.cols - absent.rows).tolist()) == {0, 1}  # Figure 1b


def test_poisson_binomial_against_enumeration_figure_2():
    probabilities = [0.1, 0.35, 0.6, 0.85]
    pmfs = counting_query_conditionals(probabilities, user=2)
    brute = {0: np.zeros(5), 1: np.zeros(5)}
    for bits in itertools.product([0, 1], repeat=4):
        weight = np.prod([p if b else 1 - p for i, (p, b) in enumerate(zip(probabilities, bits)) if i != 2])
        brute[bits[2]][sum(bits)] += weight  # the other users' bits, with user 2's bit fixed
    for a in (0, 1):
        np.testing.assert_allclose(pmfs.pmfs[a], brute[a], atol=1e-15)
    ten = counting_query_conditionals(np.linspace(0.05, 0.95, 10), user=0)
    for pair in [(0, 1), (0, ABSENT), (1, ABSENT)]:
        assert ten.plan(*pair, tie_tolerance=1e-10).sensitivity == 1.0


def test_counting_query_with_a_secret_that_only_shifts_the_bit_probability():
    # The secret sets P(bit = 1) (local randomization): a mixture of the two shifted Poisson binomials.
    probabilities = [0.2, 0.6, 0.9, 0.4]
    rates = {"low": 0.1, "mid": 0.5, "high": 0.8}
    pmfs = counting_query_conditionals(probabilities, user=1, bit_given_secret=rates)
    others = counting_query_conditionals(probabilities[:1] + probabilities[2:], user=0).pmfs[ABSENT]
    for secret, rate in rates.items():
        expected = (1 - rate) * np.r_[others, 0.0] + rate * np.r_[0.0, others]
        np.testing.assert_allclose(pmfs.pmfs[secret], expected, atol=1e-15)
    for pair in itertools.combinations(rates, 2):
        plan = pmfs.plan(*pair, tie_tolerance=1e-10)
        assert plan.sensitivity == 1.0 and set(np.abs(plan.cols - plan.rows).tolist()) <= {0, 1}
    with pytest.raises(ValueError, match="bit_given_secret"):
        counting_query_conditionals(probabilities, bit_given_secret={"x": 1.5})


@pytest.mark.parametrize("seed", range(4))
def test_lemma2_separable_sensitivity_is_the_largest_per_user_range(seed):
    rng = np.random.default_rng(seed)
    values = [np.sort(rng.choice(np.arange(-3, 4), size=rng.integers(2, 4), replace=False)) for _ in range(5)]
    probabilities = [rng.dirichlet(np.ones(v.size)) for v in values]
    worst = 0.0
    for user, user_values in enumerate(values):
        pmfs = separable_query_conditionals(values, probabilities, user=user)
        np.testing.assert_allclose(sum(pmf.sum() for key, pmf in pmfs.pmfs.items() if key != ABSENT), user_values.size)
        for a, b in itertools.combinations(range(user_values.size), 2):
            plan = pmfs.plan(a, b, tie_tolerance=1e-10)
            shift = user_values[a] - user_values[b]
            assert plan.sensitivity == abs(shift)  # (13): x - x' = f_i(a) - f_i(b)
            np.testing.assert_array_equal(pmfs.support[plan.rows] - pmfs.support[plan.cols], shift)
            worst = max(worst, plan.sensitivity)
        for a in range(user_values.size):  # Lemma 2(b): the presence pair is no worse
            assert pmfs.plan(a, ABSENT, tie_tolerance=1e-10).sensitivity <= separable_sensitivity(values)
    assert worst == separable_sensitivity(values)


def test_empirical_conditionals_order_and_dropped_categories():
    frame = pd.DataFrame({"race": ["A"] * 4 + ["B"] * 4, "edu": ["lo", "mid", "hi", "other", "hi", "hi", "mid", "lo"]})
    pmfs = empirical_conditionals(frame, "race", "edu", order=["lo", "mid", "hi"])
    assert pmfs.categories == ("lo", "mid", "hi") and pmfs.support.tolist() == [1.0, 2.0, 3.0]
    np.testing.assert_allclose(pmfs.pmfs["A"], [1 / 3, 1 / 3, 1 / 3])  # "other" left out
    np.testing.assert_allclose(pmfs.pmfs["B"], [0.25, 0.25, 0.5])
    reordered = empirical_conditionals(frame, "race", "edu", order=["hi", "lo", "mid"], secrets=["B"])
    np.testing.assert_allclose(reordered.pmfs["B"], [0.5, 0.25, 0.25])
    with pytest.raises(ValueError, match="order lists categories"):
        empirical_conditionals(frame, "race", "edu", order=["lo", "HI"])
    with pytest.raises(ValueError, match="secret must name a column"):
        empirical_conditionals(frame, "sex", "edu", order=["lo"])


# ---------------------------------------------------------------------------------- calibrations


def test_laplace_loss_is_attained_at_the_support_points():
    # A dense grid of y over the whole line (tails included) never beats the atom maximum.
    for example in (EXAMPLE1, EXAMPLE2):
        plan = kantorovich_plan(*example, tie_tolerance=1e-12)
        for scale in (0.3, 1.0, 4.0):
            y = np.linspace(-60, 66, 200_001)[:, None]
            support = plan.support[None, :]
            log_f = [np.log(np.sum(w * np.exp(-np.abs(y - support) / scale), axis=1)) for w in (plan.p, plan.q)]
            grid = float(np.max(np.abs(log_f[0] - log_f[1])))
            exact = privacy_loss(plan, Laplace(1.0, scale))
            assert grid <= exact + 1e-9 and grid >= exact - 1e-6


@pytest.mark.parametrize("example", [EXAMPLE1, EXAMPLE2], ids=["example1", "example2"])
@pytest.mark.parametrize("epsilon", [0.8, 1.5, 4.0])
def test_every_laplace_calibration_meets_its_epsilon(example, epsilon):
    plan = kantorovich_plan(*example, tie_tolerance=1e-12)
    theorem1 = kantorovich_laplace(plan, epsilon)
    theorem2 = kantorovich_laplace(plan, epsilon, relaxed=True)
    assert math.isclose(1 / theorem1.rate, plan.sensitivity / epsilon)
    assert 1 / theorem2.rate <= 1 / theorem1.rate
    for mechanism in (theorem1, theorem2, kantorovich_laplace(plan, epsilon, discrete=True)):
        assert privacy_loss(plan, mechanism) <= epsilon
    smallest = smallest_laplace_scale(plan, epsilon)
    assert smallest <= 1 / theorem2.rate * (1 + 1e-9)
    if smallest > 0:
        assert privacy_loss(plan, Laplace(1.0, smallest)) <= epsilon
        assert privacy_loss(plan, Laplace(1.0, 0.95 * smallest)) > epsilon  # under-calibrated


def test_theorems_1_and_2_hold_on_random_pmfs_with_gaps():
    rng = np.random.default_rng(5)
    worst = 0.0
    for _ in range(80):
        size = int(rng.integers(2, 9))
        p, q = _random_pmfs(rng, size, zeros=int(rng.integers(0, size)))
        support = np.sort(rng.choice(20, size, replace=False)).astype(float)
        plan = kantorovich_plan(p, q, support)
        if plan.sensitivity == 0:
            continue
        epsilon = float(rng.uniform(0.1, 4.0))
        theorem1, theorem2 = kantorovich_laplace(plan, epsilon), kantorovich_laplace(plan, epsilon, relaxed=True)
        assert 1 / theorem2.rate <= 1 / theorem1.rate
        worst = max(worst, privacy_loss(plan, theorem1) / epsilon, privacy_loss(plan, theorem2) / epsilon)
    assert 0.5 < worst <= 1.0  # some calibrations come close to their target, none exceeds it


def test_under_calibrated_shift_exceeds_epsilon():
    plan = kantorovich_plan([0.5, 0.5, 0.0], [0.0, 0.5, 0.5], [0, 1, 2])  # a shift by one: loss = 1 / theta
    assert math.isclose(privacy_loss(plan, Laplace(1.0, 1.0)), 1.0)
    assert privacy_loss(plan, Laplace(1.0, 0.9)) > 1.0
    assert math.isclose(smallest_laplace_scale(plan, 1.0), 1.0, rel_tol=1e-8)


def test_theorem2_root_is_the_polynomial_root():
    plan = kantorovich_plan(*EXAMPLE2, tie_tolerance=1e-12)
    # Column x' = 5 (and row x = 1): 0.125 z^2 + 0.075 z - 0.2 e = 0, the binding equation.
    roots = np.roots([0.125, 0.075, -0.2 * math.e])
    root = float(roots[roots.real > 1].real[0])
    assert math.isclose(relaxed_laplace_scale(plan, 1.0), 1 / math.log(root), rel_tol=1e-12)
    # Several plans: the largest scale wins.
    other = kantorovich_plan(*EXAMPLE1, tie_tolerance=1e-12)
    assert relaxed_laplace_scale([plan, other], 1.0) == max(
        relaxed_laplace_scale(plan, 1.0), relaxed_laplace_scale(other, 1.0)
    )


def test_theorem2_on_counting_query_is_no_worse_than_theorem1():
    pmfs = counting_query_conditionals([0.7] * 25)
    plans = [pmfs.plan(0, 1, tie_tolerance=1e-10), pmfs.plan(0, ABSENT, tie_tolerance=1e-10)]
    for epsilon in (0.5, 2.0):
        theorem1, theorem2 = kantorovich_laplace(plans, epsilon), kantorovich_laplace(plans, epsilon, relaxed=True)
        assert 1 / theorem2.rate <= 1 / theorem1.rate
        assert privacy_loss(plans, theorem2) <= epsilon and privacy_loss(plans, theorem1) <= epsilon


def test_gaussian_privacy_delta_matches_quadrature_and_the_shift_formula():
    shift = kantorovich_plan([1.0, 0.0], [0.0, 1.0], [0.0, 2.0])
    assert math.isclose(privacy_delta(shift, Gaussian(1.5), 0.7), gaussian_delta(1.5, 0.7, 2.0), rel_tol=1e-9)
    plan = kantorovich_plan(*EXAMPLE2, tie_tolerance=1e-12)
    sigma, epsilon = 1.2, 0.5
    density = [lambda y, w=w: float(np.sum(w * stats.norm.pdf(y, plan.support, sigma))) for w in (plan.p, plan.q)]
    quad = max(
        integrate.quad(
            lambda y: max(density[a](y) - math.exp(epsilon) * density[b](y), 0.0),
            -30,
            36,
            limit=400,
            points=plan.support.tolist(),
            epsabs=1e-13,
        )[0]
        for a, b in ((0, 1), (1, 0))
    )
    assert math.isclose(privacy_delta(plan, Gaussian(sigma), epsilon), quad, rel_tol=1e-6)


@pytest.mark.parametrize("epsilon, delta", [(0.5, 1e-5), (0.9, 0.01), (3.0, 1e-3)])
def test_every_gaussian_calibration_meets_its_delta(epsilon, delta):
    plan = kantorovich_plan(*EXAMPLE2, tie_tolerance=1e-12)
    methods = ["bound", "analytic"] + (["classical"] if epsilon < 1 else [])
    for method in methods:
        mechanism = kantorovich_gaussian(plan, epsilon, delta, method=method)
        assert privacy_delta(plan, mechanism, epsilon) <= delta
    smallest = smallest_gaussian_sigma(plan, epsilon, delta)
    assert smallest <= kantorovich_gaussian(plan, epsilon, delta, method="analytic").sigma
    assert privacy_delta(plan, Gaussian(0.9 * smallest), epsilon) > delta


def _mills_tail_over_delta(constant, delta, epsilon=1.0):
    """The proof's bound 2 phi(t) / t on P(abs Z > t), divided by delta, at t = c - eps / (2c)."""
    c = theorem3_constant(epsilon, delta, "bound", constant)
    t = c - epsilon / (2 * c)
    return 2 * stats.norm.pdf(t) / t / delta


def test_theorem3_printed_constant_is_anti_conservative_and_the_corrected_one_is_not():
    deltas = np.geomspace(1e-12, 0.99, 400)
    corrected = [_mills_tail_over_delta(CORRECTED_CONSTANT, d) for d in deltas]
    printed = [_mills_tail_over_delta(PRINTED_CONSTANT, d) for d in deltas]
    assert max(corrected) < 1.0  # the proof's tail condition holds for every delta
    assert max(printed) > 1.0  # and fails with 0.41 (near delta = 0.3)
    assert _mills_tail_over_delta(PRINTED_CONSTANT, 0.3) > 1.0
    assert math.isclose(2 * CORRECTED_CONSTANT, (2 / math.e) ** (1 / 3) * (2 / math.pi) ** (1 / 6), abs_tol=1e-4)
    assert math.isclose(theorem3_constant(0.5, 1e-5, "classical"), math.sqrt(2 * math.log(1.25e5)))


# ----------------------------------------------------------------------------------------- bad input


def test_bad_input_names_the_parameter():
    with pytest.raises(ValueError, match="q must hold one mass per support point"):
        kantorovich_plan([0.5, 0.5], [0.2, 0.3, 0.5], [1, 2])
    with pytest.raises(ValueError, match="p must sum to 1"):
        kantorovich_plan([0.5, 0.4], [0.5, 0.5], [1, 2])
    with pytest.raises(ValueError, match="support must be strictly increasing"):
        kantorovich_plan([0.5, 0.5], [0.5, 0.5], [2, 1])
    plan = kantorovich_plan(*EXAMPLE1, tie_tolerance=1e-12)
    for epsilon in (0.0, -1.0, math.inf):
        with pytest.raises(ValueError, match="epsilon"):
            kantorovich_laplace(plan, epsilon)
    for delta in (0.0, 1.0, 1.5):
        with pytest.raises(ValueError, match="delta"):
            kantorovich_gaussian(plan, 1.0, delta)
    with pytest.raises(ValueError, match="method"):
        theorem3_constant(1.0, 1e-5, "tight")
    with pytest.raises(ValueError, match="plans"):
        kantorovich_laplace([], 1.0)
    with pytest.raises(ValueError, match="no noise is needed"):
        kantorovich_laplace(kantorovich_plan([0.5, 0.5], [0.5, 0.5], [1, 2]), 1.0)
    with pytest.raises(ValueError, match="mechanism"):
        privacy_loss(plan, Gaussian(1.0))
    with pytest.raises(ValueError, match="integer support"):
        privacy_loss(kantorovich_plan([0.5, 0.5], [0.25, 0.75], [0.5, 1.0]), DiscreteLaplace(1.0))
    with pytest.raises(ValueError, match="plan must be a 4 x 4"):
        plan_sensitivity(np.eye(3) / 3, [1, 2, 3, 4])
    with pytest.raises(ValueError, match="probabilities"):
        counting_query_conditionals([0.5, 1.2])
    with pytest.raises(ValueError, match="user"):
        counting_query_conditionals([0.5, 0.5], user=2)
    with pytest.raises(ValueError, match=r"probabilities\[1\] must sum to 1"):
        separable_query_conditionals([[0, 1], [0, 2]], [[0.5, 0.5], [0.5, 0.6]])
    with pytest.raises(ValueError, match=r"values\[0\] must hold integers"):
        separable_query_conditionals([[0, 0.5]], [[0.5, 0.5]])
    with pytest.raises(ValueError, match="secret_j"):
        counting_query_conditionals([0.5]).plan(0, 7)


# ------------------------------------------------------------------------- couplings and fast audits


def test_plan_sensitivity_refuses_what_is_not_a_coupling():
    support = [0, 1, 10]
    good = np.array([[0.25, 0.25, 0.0], [0.0, 0.25, 0.0], [0.0, 0.0, 0.25]])
    assert plan_sensitivity(good, support, p=good.sum(axis=1), q=good.sum(axis=0)) == 1.0
    negative = good + np.array([[-0.5, 0.0, 0.5], [0.0, 0.0, 0.0], [0.0, 0.0, 0.0]])  # total kept, one entry < 0
    with pytest.raises(ValueError, match="plan must be non-negative"):
        plan_sensitivity(negative, support)
    with pytest.raises(ValueError, match="total mass 1"):
        plan_sensitivity(good * 1.2, support)
    with pytest.raises(ValueError, match="row sums must equal p"):
        plan_sensitivity(good, support, p=[0.25, 0.5, 0.25])
    with pytest.raises(ValueError, match="column sums must equal q"):
        plan_sensitivity(good, support, q=[0.25, 0.25, 0.5])
    with pytest.raises(ValueError, match="mass_tolerance"):
        plan_sensitivity(good, support, mass_tolerance=-1.0)
    # a solver's crumbs, slightly negative, are still accepted within mass_tolerance
    crumbs = good.copy()
    crumbs[0, 2], crumbs[0, 0] = -1e-15, 0.25 + 1e-15
    assert plan_sensitivity(crumbs, support, mass_tolerance=1e-12) == 1.0


def _slow_laplace_loss(plan, scale):
    """The audit as it was: every support point against every support point, O(K^2)."""
    with np.errstate(divide="ignore"):
        log_p, log_q = np.log(plan.p), np.log(plan.q)
    kernel = -np.abs(plan.support[:, None] - plan.support[None, :]) / scale
    from scipy import special

    return float(np.max(np.abs(special.logsumexp(kernel + log_p, axis=1) - special.logsumexp(kernel + log_q, axis=1))))


def _random_plan(rng):
    size = int(rng.integers(2, 400))
    p, q = _random_pmfs(rng, size, zeros=int(rng.integers(0, size // 2 + 1)))
    if rng.random() < 0.3:  # long empty stretches of one pmf
        q[: size // 3] = 0
        q /= q.sum()
    gaps = rng.choice([1.0, 0.01, 50.0]) * rng.exponential(size=size) + 1e-3
    return kantorovich_plan(p, q, np.cumsum(gaps) - 7.5)


def test_fast_privacy_loss_matches_the_quadratic_audit_on_random_cases():
    rng = np.random.default_rng(2025)
    import ppdinfer.privacy.kantorovich as module

    for _ in range(60):
        plan = _random_plan(rng)
        span = float(plan.support[-1] - plan.support[0])
        for scale in span * np.array([1e-4, 0.01, 0.3, 5.0]):
            fast, slow = module._laplace_loss(plan, scale), _slow_laplace_loss(plan, scale)
            assert math.isclose(fast, slow, rel_tol=1e-12, abs_tol=1e-12), (plan.support.size, scale, fast, slow)
        assert privacy_loss(plan, Laplace(1.0, 0.1 * span)) == pytest.approx(
            _slow_laplace_loss(plan, 0.1 * span), rel=1e-12, abs=1e-12
        )


def test_fast_smallest_laplace_scale_matches_the_quadratic_search(monkeypatch):
    rng = np.random.default_rng(7)
    import ppdinfer.privacy.kantorovich as module

    cases = [[_random_plan(rng)] for _ in range(8)] + [[kantorovich_plan(*EXAMPLE2, tie_tolerance=1e-12)]]
    fast = [smallest_laplace_scale(plans, epsilon) for plans in cases for epsilon in (0.5, 2.0)]
    monkeypatch.setattr(module, "_laplace_loss", _slow_laplace_loss)
    slow = [smallest_laplace_scale(plans, epsilon) for plans in cases for epsilon in (0.5, 2.0)]
    assert fast == pytest.approx(slow, rel=3e-9)  # the search's rtol 1e-9, twice, plus rounding


def test_privacy_loss_and_smallest_scale_are_fast_on_large_supports():
    """Today's O(K^2) audit took 225 s at 20,000 points and the scale search 27.5 s at 2,000."""
    import time

    size = 60_000
    count = stats.binom(size - 1, 0.5).pmf(np.arange(size))
    plan = kantorovich_plan(np.append(count, 0.0), np.insert(count, 0, 0.0), np.arange(size + 1.0))  # X + 1
    start = time.perf_counter()
    loss = privacy_loss(plan, Laplace(1.0, 1.0))
    assert loss == pytest.approx(1.0, abs=1e-9)  # a pure shift by 1: the tails reach e^(1 / scale)
    scale = smallest_laplace_scale(plan, 0.5)
    assert time.perf_counter() - start < 10
    assert privacy_loss(plan, Laplace(1.0, scale)) <= 0.5 < privacy_loss(plan, Laplace(1.0, 0.999 * scale))
