import itertools

import numpy as np
import pytest
from scipy import optimize

from ppdinfer.postprocessing import PostProcessed, _integer_step, postprocess


def random_instance(rng, j, low=-20, high=40, max_total=100):
    y_c = rng.integers(low, high, size=j)
    y_d = rng.integers(low, high, size=j)
    return y_c, y_d, int(rng.integers(0, max_total + 1))


def scipy_projection(y_c, y_d, total):
    """Step (a) by SLSQP on x = (c, d); the objective is scaled down, without which SLSQP
    stops about 1e-5 short of the optimum on these instances."""
    j = len(y_c)
    y = np.concatenate([y_c, y_d]).astype(float)
    eye = np.eye(j)
    sum_row, order, nonneg = np.r_[np.ones(j), np.zeros(j)], np.hstack([eye, -eye]), np.hstack([0 * eye, eye])
    constraints = [
        {"type": "eq", "fun": lambda x: sum_row @ x - total, "jac": lambda x: sum_row},
        {"type": "ineq", "fun": lambda x: order @ x, "jac": lambda x: order},
        {"type": "ineq", "fun": lambda x: nonneg @ x, "jac": lambda x: nonneg},
    ]
    x0 = np.r_[np.full(j, total / j), np.zeros(j)]
    res = optimize.minimize(
        lambda x: ((x - y) ** 2).sum() / 1000,
        x0,
        jac=lambda x: (x - y) / 500,
        method="SLSQP",
        constraints=constraints,
        options={"ftol": 1e-12, "maxiter": 1000},
    )
    assert res.success, res.message
    return res.x[:j], res.x[j:]


def l1_cost(cases, deaths, proj_c, proj_d):
    return np.abs(cases - proj_c).sum(axis=-1) + np.abs(deaths - proj_d).sum(axis=-1)


def brute_force_cost(proj_c, proj_d, total):
    """Smallest L1 cost of step (b) over all (u, v) in {0,1}^2J."""
    fc, fd = np.floor(proj_c), np.floor(proj_d)
    bits = np.array(list(itertools.product([0, 1], repeat=len(proj_c))))
    cases, deaths = fc + bits[:, None, :], fd + bits[None, :, :]
    feasible = (cases.sum(axis=-1) == total) & np.all(cases >= deaths, axis=-1)
    return np.where(feasible, l1_cost(cases, deaths, proj_c, proj_d), np.inf).min()


def assert_integer_step_valid(cases, deaths, proj_c, proj_d, total):
    fc, fd = np.floor(proj_c), np.floor(proj_d)
    assert cases.sum() == total and np.all(cases >= deaths) and np.all(deaths >= 0)
    assert np.all(np.isin(cases - fc, [0, 1])) and np.all(np.isin(deaths - fd, [0, 1]))
    assert l1_cost(cases, deaths, proj_c, proj_d) == pytest.approx(brute_force_cost(proj_c, proj_d, total), abs=1e-9)


def test_hand_computed_examples():
    # lam = 0: county 0 is pulled to the apex (0, 0), county 1 is feasible already.
    out = postprocess([-5, 10], [0, 2], 10)
    assert isinstance(out, PostProcessed)
    assert np.array_equal(out.projection_cases, [0, 10]) and np.array_equal(out.projection_deaths, [0, 2])
    assert np.array_equal(out.cases, [0, 10]) and np.array_equal(out.deaths, [0, 2])
    assert out.contracted_case_zeros.tolist() == [True, False]
    assert out.contracted_death_zeros.tolist() == [True, False]
    assert out.contracted_rates.tolist() == [False, False]
    # lam = -2/3: county 0 lands on the edge c = d = 11/3, county 1 at (19/3, 0). Case budget 1:
    # county 0 gets it (delta = -1/3 - 1/3 < 1/3), which lets its deaths round up too.
    out = postprocess([3, 7], [5, 0], 10)
    assert np.allclose(out.projection_cases, [11 / 3, 19 / 3], rtol=0, atol=1e-14)
    assert np.allclose(out.projection_deaths, [11 / 3, 0], rtol=0, atol=1e-14)
    assert np.array_equal(out.cases, [4, 6]) and np.array_equal(out.deaths, [4, 0])
    assert out.contracted_rates.tolist() == [True, False]
    assert out.contracted_death_zeros.tolist() == [False, True]
    assert out.contracted_case_zeros.tolist() == [False, False]


@pytest.mark.parametrize(
    "y_d, expected_d, flags",
    [
        (-2, 0, (False, True, False)),
        (3, 3, (False, False, False)),
        (7, 5, (False, False, True)),  # moved onto the face cases = deaths
        (5, 5, (False, False, True)),  # already on that face: a range of y_d collapses onto it
    ],
)
def test_single_county(y_d, expected_d, flags):
    out = postprocess([-9], [y_d], 5)  # J = 1: c~ = total, d~ = clip(y_d, 0, total)
    assert out.cases.tolist() == [5] and out.deaths.tolist() == [expected_d]
    got = (out.contracted_case_zeros[0], out.contracted_death_zeros[0], out.contracted_rates[0])
    assert got == flags


def test_positive_noisy_count_can_contract_to_zero():
    # A small total forces lam = -40, so the noisy case count 1 is projected to 0 as well.
    out = postprocess([1, 50], [0, 0], 10)
    assert np.array_equal(out.projection_cases, [0, 10])
    assert out.contracted_case_zeros.tolist() == [True, False]


def test_zero_total():
    out = postprocess([4, -3, 12], [9, 2, -1], 0)
    assert not out.cases.any() and not out.deaths.any()
    assert out.contracted_case_zeros.all() and out.contracted_death_zeros.all()
    assert not out.contracted_rates.any()


def test_congenial_input_is_unchanged():
    y_c, y_d = np.array([12, 5, 40, 2]), np.array([3, 1, 7, 1])
    out = postprocess(y_c, y_d, int(y_c.sum()))
    assert np.array_equal(out.projection_cases, y_c) and np.array_equal(out.projection_deaths, y_d)
    assert np.array_equal(out.cases, y_c) and np.array_equal(out.deaths, y_d)
    assert not (out.contracted_case_zeros.any() or out.contracted_death_zeros.any() or out.contracted_rates.any())


def test_projection_matches_scipy():
    rng = np.random.default_rng(0)
    for _ in range(60):
        y_c, y_d, total = random_instance(rng, int(rng.integers(1, 11)))
        out = postprocess(y_c, y_d, total)
        c, d = scipy_projection(y_c, y_d, total)
        assert np.allclose(out.projection_cases, c, rtol=0, atol=1e-6)
        assert np.allclose(out.projection_deaths, d, rtol=0, atol=1e-6)
        ours = ((out.projection_cases - y_c) ** 2).sum() + ((out.projection_deaths - y_d) ** 2).sum()
        theirs = ((c - y_c) ** 2).sum() + ((d - y_d) ** 2).sum()
        assert ours <= theirs + 1e-9


def test_constraints_hold_exactly_at_scale():
    rng = np.random.default_rng(1)
    x_c = rng.poisson(rng.lognormal(5, 2, size=(300, 67)))
    noise = rng.laplace(0, 200, size=(2, 300, 67)).round().astype(np.int64)
    total = x_c.sum(axis=1)
    out = postprocess(x_c + noise[0], np.minimum(x_c, rng.poisson(5, size=(300, 67))) + noise[1], total)
    assert np.allclose(out.projection_cases.sum(axis=1), total, rtol=1e-9, atol=0)
    assert np.all(out.projection_cases >= out.projection_deaths) and np.all(out.projection_deaths >= 0)
    assert np.array_equal(out.cases.sum(axis=1), total)
    assert np.all(out.cases >= out.deaths) and np.all(out.deaths >= 0)
    for step, proj in ((out.cases, out.projection_cases), (out.deaths, out.projection_deaths)):
        assert np.all((step - np.floor(proj) >= 0) & (step - np.floor(proj) <= 1))
    assert out.contracted_case_zeros.any() and out.contracted_death_zeros.any() and out.contracted_rates.any()


def test_integer_step_matches_brute_force():
    rng = np.random.default_rng(2)
    for _ in range(300):
        y_c, y_d, total = random_instance(rng, int(rng.integers(1, 6)), low=-3, high=9, max_total=15)
        out = postprocess(y_c, y_d, total)
        assert_integer_step_valid(out.cases, out.deaths, out.projection_cases, out.projection_deaths, total)


def uncoupled_rounding(num_c, num_d, q, total):
    """Cases: +1 on the largest fractional parts; deaths: to nearest (half down) where allowed."""
    fc, fd = num_c // q, num_d // q
    top = np.argsort(-(num_c % q), kind="stable")[: total - fc.sum()]
    cases = fc + np.isin(np.arange(len(num_c)), top)
    return cases, np.where((2 * (num_d % q) > q) & (cases > fd), fd + 1, fd)


def test_integer_step_couples_cases_and_deaths():
    # c~ = (0.65, 1.67, 0.68), d~ = (0.65, 0, 0), total 3: two case increments. The largest
    # fractional parts are counties 1 and 2, but then county 0's deaths must stay at 0
    # (cost 0.65 + 0.65 + 0.33 + 0.32 = 1.95); counties 0 and 2 cost 0.35 + 0.35 + 0.67 + 0.32.
    num_c, num_d = np.array([[65, 167, 68]]), np.array([[65, 0, 0]])
    cases, deaths = _integer_step(num_c, num_d, np.array([100]), np.array([3]))
    assert cases.tolist() == [[1, 1, 1]] and deaths.tolist() == [[1, 0, 0]]
    assert uncoupled_rounding(num_c[0], num_d[0], 100, 3)[0].tolist() == [0, 2, 1]


def test_integer_step_is_exact_for_any_fractional_projection():
    # Projections of integer releases put the largest fractional parts on counties with
    # cases = deaths, where the ordering never changes the choice; arbitrary fractions
    # c~ >= d~ >= 0 with close case and death values exercise the coupling.
    rng = np.random.default_rng(5)
    uncoupled_worse = 0
    for _ in range(400):
        j, q = int(rng.integers(1, 7)), int(rng.integers(2, 31))
        num_d = rng.integers(0, 4 * q, size=j)
        num_c = num_d + rng.integers(0, q // 3 + 1, size=j)
        num_c[0] += -num_c.sum() % q
        total = int(num_c.sum() // q)
        cases, deaths = _integer_step(num_c[None], num_d[None], np.array([q]), np.array([total]))
        pc, pd = num_c / q, num_d / q
        assert_integer_step_valid(cases[0], deaths[0], pc, pd, total)
        uncoupled_worse += (
            l1_cost(*uncoupled_rounding(num_c, num_d, q, total), pc, pd) > l1_cost(cases[0], deaths[0], pc, pd) + 1e-9
        )
    assert uncoupled_worse > 0


def test_batch_matches_single_calls():
    rng = np.random.default_rng(3)
    y_c, y_d = rng.integers(-30, 60, size=(2, 25, 8))
    totals = rng.integers(0, 200, size=25)
    batch = postprocess(y_c, y_d, totals)
    for r in range(25):
        one = postprocess(y_c[r], y_d[r], totals[r])
        for name in PostProcessed.__dataclass_fields__:
            assert np.array_equal(getattr(batch, name)[r], getattr(one, name)), name
    shared = postprocess(y_c, y_d, 50)
    assert np.array_equal(shared.cases.sum(axis=1), np.full(25, 50))


def test_result_types():
    out = postprocess(np.array([3.0, -1.0]), [1, 4], 6.0)
    assert out.cases.dtype == np.int64 and out.deaths.dtype == np.int64
    assert out.projection_cases.dtype == np.float64 and out.contracted_rates.dtype == bool
    with pytest.raises(ValueError):
        out.cases[0] = 7


@pytest.mark.parametrize(
    "y_cases, y_deaths, total, name",
    [
        ([1, 2], [0, 1], -1, "total"),
        ([1, 2], [0, 1], 2.5, "total"),
        ([1, 2], [0, 1], [3, 3], "total"),
        ([[1, 2]], [[0, 1]], [3, 3], "total"),
        ([1.5, 2], [0, 1], 3, "y_cases"),
        ([1, 2], [0, np.nan], 3, "y_deaths"),
        ([1, 2], [0, 1, 1], 3, "y_deaths"),
        ([], [], 0, "y_cases"),
        ([[[1]]], [[[1]]], 0, "y_cases"),
        ([2**60, 0], [0, 0], 3, r"magnitude at most 2\^53"),
        ([2**53] * 100, [0] * 100, 3, "too large for exact int64 arithmetic"),
    ],
)
def test_bad_input(y_cases, y_deaths, total, name):
    with pytest.raises(ValueError, match=name):
        postprocess(y_cases, y_deaths, total)
