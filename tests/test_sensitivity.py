"""Sensitivities of clipped sufficient statistics against brute force, and mechanisms with one scale per coordinate.

The brute force enumerates neighbouring datasets of one to three records on a grid of each box (the ends,
0 where the box holds it, and interior points) and takes the largest change of the statistics.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy import stats

from ppdinfer.mechanisms import Congenial, DiscreteGaussian, DiscreteLaplace, Gaussian, Laplace
from ppdinfer.mechanisms.guarantee import Guarantee
from ppdinfer.privacy import kantorovich_plan, privacy_loss, regression_sensitivity
from ppdinfer.privacy.sufficient_statistics import (
    count_sensitivity,
    product_sum_sensitivity,
    square_sum_sensitivity,
    sum_sensitivity,
)

NEIGHBOURS = ("replace", "add-remove")
INTERVALS = [(-1.0, 1.0), (0.0, 2.0), (-3.0, 0.5), (1.0, 4.0), (-2.0, -0.5), (1.0, 1.0)]


def grid(lower, upper, points=7):
    """The ends, 0 when inside, and interior points of [lower, upper]."""
    inside = [0.0] if lower < 0 < upper else []
    return np.unique(np.concatenate([np.linspace(lower, upper, points), inside]))


def brute_force(statistics, box, neighbours, records=(1, 2, 3), points=5):
    """Largest L1 and L2 change of the summed ``statistics(record)`` over neighbouring datasets on the grid.

    Replace: datasets of k records and the same with record 0 replaced; add-remove: datasets of k records
    and the same without record 0 (k = 1 leaves the empty dataset, whose statistics are 0).
    """
    values = np.array([statistics(np.array(u)) for u in itertools.product(*(grid(a, b, points) for a, b in box))])
    l1 = l2 = 0.0
    for k in records:
        for rows in itertools.product(range(len(values)), repeat=k):
            total = values[list(rows)].sum(axis=0)
            rest = total - values[rows[0]]
            others = [rest + values[v] for v in range(len(values))] if neighbours == "replace" else [rest]
            change = np.abs(np.array(others) - total)
            l1 = max(l1, float(change.sum(axis=1).max()))
            l2 = max(l2, float(np.sqrt((change**2).sum(axis=1)).max()))
        if len(values) ** k > 2000:
            break  # larger datasets repeat the same one-record changes; the smallest ones suffice
    return l1, l2


@pytest.mark.parametrize("neighbours", NEIGHBOURS)
def test_count(neighbours):
    assert count_sensitivity(neighbours=neighbours) == brute_force(lambda u: np.array([1.0]), [(0, 0)], neighbours)[0]


@pytest.mark.parametrize("neighbours", NEIGHBOURS)
@pytest.mark.parametrize("bounds", INTERVALS)
def test_sum_and_square_sum_are_exact(bounds, neighbours):
    assert sum_sensitivity(*bounds, neighbours=neighbours) == pytest.approx(
        brute_force(lambda u: u, [bounds], neighbours)[0], abs=1e-12
    )
    assert square_sum_sensitivity(*bounds, neighbours=neighbours) == pytest.approx(
        brute_force(lambda u: u**2, [bounds], neighbours)[0], abs=1e-12
    )


def test_the_formulas():
    assert sum_sensitivity(2, 5, neighbours="replace") == 3.0
    assert sum_sensitivity(-4, 1, neighbours="add-remove") == 4.0
    assert square_sum_sensitivity(-1, 2, neighbours="replace") == 4.0  # min 0 (inside), max 4
    assert square_sum_sensitivity(-3, -1, neighbours="replace") == 8.0  # 9 - 1
    assert square_sum_sensitivity(-3, -1, neighbours="add-remove") == 9.0
    assert product_sum_sensitivity((-2, 1), (-1, 3), neighbours="replace") == 9.0  # corners 2, -6, -1, 3


@pytest.mark.parametrize("neighbours", NEIGHBOURS)
@pytest.mark.parametrize("first, second", [(INTERVALS[0], INTERVALS[2]), (INTERVALS[1], INTERVALS[3]), INTERVALS[4:6]])
def test_product_sum_is_exact(first, second, neighbours):
    brute = brute_force(lambda u: u[:1] * u[1:], [first, second], neighbours, points=9)[0]
    assert product_sum_sensitivity(first, second, neighbours=neighbours) == pytest.approx(brute, abs=1e-12)


def regression_statistics(d, count):
    def statistics(u):
        pairs = [u[j] * u[k] for j in range(d + 1) for k in range(j, d + 1)]
        return np.array(([1.0] if count else []) + pairs)

    return statistics


REGRESSIONS = [
    ([(1, 1), (0, 1)], (0, 1), False),  # intercept, x and y in [0, 1]: tight
    ([(-1, 1)], (-1, 1), False),  # symmetric boxes: the per-statistic ranges are not reached together
    ([(1, 1), (-2, 1)], (-1, 3), True),
    ([(0, 2), (-1, 0.5)], (0.5, 2), False),
]


@pytest.mark.parametrize("neighbours", NEIGHBOURS)
@pytest.mark.parametrize("x_bounds, y_bounds, count", REGRESSIONS)
def test_regression_bounds_the_brute_force_and_is_exact_where_it_says_so(x_bounds, y_bounds, count, neighbours):
    s = regression_sensitivity(x_bounds, y_bounds, neighbours=neighbours, count=count)
    d = len(x_bounds)
    box = [*x_bounds, y_bounds]
    statistics = regression_statistics(d, count)
    assert len(s.names) == len(s.per_statistic) == statistics(np.zeros(d + 1)).size
    l1, l2 = brute_force(statistics, box, neighbours, records=(1, 2))
    assert s.l1_attained - 1e-12 <= l1 <= s.l1 + 1e-12 and s.l2_attained - 1e-12 <= l2 <= s.l2 + 1e-12
    if s.l1_tight:
        assert s.l1 == pytest.approx(l1, rel=1e-12)
    if s.l2_tight:
        assert s.l2 == pytest.approx(l2, rel=1e-12)
    for i in range(len(s.names)):  # each statistic alone: exact
        alone = brute_force(lambda u, i=i: statistics(u)[i : i + 1], box, neighbours, records=(1,))[0]
        assert s.per_statistic[i] == pytest.approx(alone, abs=1e-12), s.names[i]
    assert s.l1 == pytest.approx(s.per_statistic.sum()) and s.l2 == pytest.approx(np.linalg.norm(s.per_statistic))


def test_regression_tightness_and_intercept():
    tight = regression_sensitivity([(1, 1), (0, 1)], (0, 1), neighbours="replace")
    assert tight.tight and tight.per_statistic[0] == 0.0 and tight.l1 == 5.0  # n is public under replace
    loose = regression_sensitivity([(-1, 1)], (-1, 1), neighbours="replace")
    assert not loose.l1_tight and (loose.l1, loose.l1_attained) == (4.0, 3.0)
    added = regression_sensitivity([(1, 1), (0, 1)], (0, 1), neighbours="add-remove")
    assert added.per_statistic[0] == 1.0 and added.tight  # the intercept's X'X entry is n
    with_count = regression_sensitivity([(0, 1)], (0, 1), neighbours="add-remove", count=True)
    assert with_count.names[0] == "n" and with_count.per_statistic[0] == 1.0


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: sum_sensitivity(2, 1, neighbours="replace"), "lower, upper"),
        (lambda: sum_sensitivity(0, np.inf, neighbours="replace"), "lower, upper"),
        (lambda: sum_sensitivity(0, 1, neighbours="bounded"), "neighbours"),
        (lambda: product_sum_sensitivity((0, 1, 2), (0, 1), neighbours="replace"), "bounds_x"),
        (lambda: regression_sensitivity([0, 1], (0, 1), neighbours="replace"), "x_bounds"),
        (lambda: regression_sensitivity([(0, 1), (3, 2)], (0, 1), neighbours="replace"), r"x_bounds\[1\]"),
        (lambda: regression_sensitivity([(0, 1)], (1, 0), neighbours="replace"), "y_bounds"),
    ],
)
def test_bad_inputs_name_the_parameter(call, match):
    with pytest.raises(ValueError, match=match):
        call()


# --- mechanisms with one scale per coordinate -------------------------------------------------------------


def test_laplace_noise_has_the_scale_of_each_coordinate():
    sensitivity = np.array([0.5, 1.0, 4.0])
    mechanism, rng = Laplace(2.0, sensitivity=sensitivity), np.random.default_rng(2)
    noise = np.stack([mechanism.release(np.zeros(3), random_seed=rng) for _ in range(4000)])
    scale = np.abs(noise).mean(axis=0)  # E|e| = b for Laplace(0, b); the sd of the mean of 4,000 is b / 63
    np.testing.assert_allclose(scale, sensitivity / 2.0, rtol=0.06)  # a scale off by 10 % fails


def test_gaussian_and_discrete_noise_have_the_scale_of_each_coordinate():
    rng = np.random.default_rng(3)
    sigma = np.array([0.7, 2.0, 5.0])
    draws = np.stack([Gaussian(sigma).release(np.zeros(3), random_seed=rng) for _ in range(3000)])
    np.testing.assert_allclose(draws.std(axis=0), sigma, rtol=0.06)  # sd of the estimate: sigma / 77
    counts = np.stack([DiscreteGaussian([1.0, 4.0]).release([50, 50], random_seed=rng) for _ in range(3000)]) - 50
    np.testing.assert_allclose(counts.std(axis=0), [1.0, 4.0], rtol=0.06)
    geometric = np.stack([DiscreteLaplace(1.0, [1.0, 3.0]).release([50, 50], random_seed=rng) for _ in range(3000)])
    a = np.exp(-1.0 / np.array([1.0, 3.0]))
    np.testing.assert_allclose((geometric - 50).std(axis=0), np.sqrt(2 * a) / (1 - a), rtol=0.06)


def test_logpdf_is_the_sum_of_the_coordinates_densities():
    y, x = np.array([0.3, -2.0, 5.0]), np.array([[0.0, 0.0, 0.0], [1.0, -1.0, 4.5]])
    b = np.array([0.5, 1.0, 4.0]) / 2.0
    expected = stats.laplace.logpdf(y, x, b).sum(axis=1)
    np.testing.assert_allclose(Laplace(2.0, sensitivity=[0.5, 1.0, 4.0]).logpdf(y, x), expected, rtol=1e-14)
    sigma = np.array([0.5, 1.0, 3.0])
    np.testing.assert_allclose(Gaussian(sigma).logpdf(y, x), stats.norm.logpdf(y, x, sigma).sum(axis=1), rtol=1e-14)
    k, centre = np.array([3, 7]), np.array([[3, 5], [0, 9]])
    a = np.exp(-1.5 / np.array([1.0, 2.0]))
    by_hand = (np.log((1 - a) / (1 + a)) + np.abs(k - centre) * np.log(a)).sum(axis=1)
    np.testing.assert_allclose(DiscreteLaplace(1.5, [1.0, 2.0]).logpdf(k, centre), by_hand, rtol=1e-13)
    mechanism = Laplace(2.0, sensitivity=[0.5, 1.0, 4.0])
    assert mechanism.log_bound(size=3) == pytest.approx(np.log(1 / (2 * b)).sum(), rel=1e-14)


def test_scalar_behaviour_is_unchanged():
    scalar, equal = Laplace(0.5, 2.0), Laplace(0.5, [2.0, 2.0])
    assert scalar.coordinates is None and scalar.separable and scalar.additive_noise is not None
    assert scalar.parameters() == {"epsilon": 0.5, "sensitivity": 2.0}
    assert scalar.guarantee() == Guarantee("pure", epsilon=0.5, sensitivity=2.0)
    y, x = np.array([1.0, 4.0]), np.array([[0.0, 0.0], [2.0, 3.0]])
    np.testing.assert_allclose(equal.logpdf(y, x), scalar.logpdf(y, x), rtol=1e-14)
    np.testing.assert_array_equal(equal.release([1.0, 2.0], random_seed=5), scalar.release([1.0, 2.0], random_seed=5))
    assert Gaussian(2.0).noise_covariance(2).tolist() == [[4.0, 0.0], [0.0, 4.0]]
    assert Gaussian([1.0, 2.0]).noise_covariance(2).tolist() == [[1.0, 0.0], [0.0, 4.0]]


def test_guarantees_state_the_weighted_balls():
    laplace = Laplace(1.0, sensitivity=[1.0, 4.0]).guarantee()
    assert laplace.definition == "pure" and laplace.sensitivity == (1.0, 4.0) and "sensitivity_i <= 1" in laplace.note
    calibrated = Gaussian.from_epsilon_delta(1.0, 1e-5, sensitivity=[1.0, 3.0])
    scalar = Gaussian.from_epsilon_delta(1.0, 1e-5, sensitivity=3.0)
    assert calibrated.sigma[1] == scalar.sigma and calibrated.guarantee().sensitivity == (1.0, 3.0)
    zcdp = Gaussian([2.0, 6.0]).guarantee()  # rho = 1 / (2 * 2^2) for sum_i (change_i / s_i)^2 <= 1, s = (1, 3)
    assert (zcdp.rho, zcdp.sensitivity) == (0.125, (1.0, 3.0))
    assert Guarantee("pure", epsilon=1.0, sensitivity=[1, 2]).attrs()["guarantee_sensitivity"] == (1.0, 2.0)


def test_laplace_privacy_loss_is_epsilon_at_the_helpers_sensitivity():
    """The worst log density ratio between neighbouring statistic vectors is epsilon, for one scale and per statistic."""
    s = regression_sensitivity([(1, 1), (0, 1)], (0, 1), neighbours="replace")
    assert s.tight
    released = s.per_statistic > 0
    statistics = regression_statistics(2, False)  # records (1, x, y)
    u, v = np.array([1.0, 0.0, 0.0]), np.array([1.0, 1.0, 1.0])  # the pair that reaches the bound
    rest = statistics(np.array([1.0, 0.4, 0.7]))
    before, after = (rest + statistics(u))[released], (rest + statistics(v))[released]
    y = np.where(after > before, after + 10.0, before - 10.0)  # beyond both values: the ratio is largest there
    epsilon = 0.8
    shares = np.array([0.1, 0.15, 0.25, 0.3, 0.2])
    for mechanism in (Laplace(epsilon, s.l1), Laplace(epsilon, sensitivity=s.per_statistic[released] / shares)):
        loss = np.subtract(*mechanism.logpdf(y, np.stack([after, before])))  # log pi(y | after) / pi(y | before)
        assert loss == pytest.approx(epsilon, abs=1e-9)
        inside = mechanism.logpdf((before + after) / 2, np.stack([after, before]))  # elsewhere it is smaller
        assert abs(np.diff(inside)[0]) < epsilon


@pytest.mark.parametrize(
    "mechanism",
    [Laplace(1.0, [1.0, 2.0]), DiscreteLaplace(1.0, [1.0, 2.0]), Gaussian([1.0, 2.0]), DiscreteGaussian([1.0, 2.0])],
    ids=repr,
)
def test_a_release_of_another_length_is_refused(mechanism):
    three = np.array([1, 2, 3])
    name = "sigma" if isinstance(mechanism, (Gaussian, DiscreteGaussian)) else "sensitivity"
    for call in (
        lambda: mechanism.release(three, random_seed=0),
        lambda: mechanism.logpdf(three, three),
        lambda: mechanism.log_bound(size=3),
    ):
        with pytest.raises(ValueError, match=f"{name}.*2 values, one per released coordinate"):
            call()
    assert mechanism.coordinates == 2 and not mechanism.separable and mechanism.additive_noise is None


def test_bad_vector_settings_are_refused():
    with pytest.raises(ValueError, match="sensitivity"):
        Laplace(1.0, sensitivity=[1.0, -2.0])
    with pytest.raises(ValueError, match="sensitivity"):
        Laplace(1.0, sensitivity=[[1.0, 2.0]])
    with pytest.raises(ValueError, match="sigma"):
        Gaussian([1.0, 0.0])
    with pytest.raises(ValueError, match="sensitivity"):
        Gaussian.from_epsilon_delta(1.0, 1e-5, sensitivity=[1.0, np.nan])


def test_consumers_that_need_one_scale_refuse_a_vector():
    from ppdinfer.invariants import LinearInvariants

    with pytest.raises(ValueError, match="one noise scale for every cell"):
        Congenial(DiscreteLaplace(1.0, [1.0, 2.0]), LinearInvariants(np.ones((1, 2), dtype=int), [3]))
    plan = kantorovich_plan([0.5, 0.5], [0.25, 0.75], [0, 1])
    with pytest.raises(ValueError, match="one noise scale for every coordinate"):
        privacy_loss([plan], Laplace(1.0, [1.0, 2.0]))
