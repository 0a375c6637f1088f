"""NoisyMeasurements: releases follow logpdf, the zCDP accounting, (eps, delta), bad input."""

import numpy as np
import pytest
import scipy.sparse as sp
from conftest import chi_square_pvalue

from ppdinfer.census import Geography, TableSpec, census_queries, epsilon_delta, production_sigmas
from ppdinfer.mechanisms import DiscreteGaussian, DiscreteLaplace, NoisyMeasurements
from ppdinfer.privacy import zcdp_epsilon


def census_mechanism():
    geo = Geography(
        ["s", "c", "t1", "t2", "b1", "b2", "b3"],
        [None, "s", "c", "c", "t1", "t1", "t2"],
        ["State", "County", "Tract", "Block_Group"],
    )
    q = census_queries(
        geo,
        TableSpec.hispanic_race(),
        {
            "State": ["total"],
            "County": ["total", "detailed"],
            "Tract": ["total", "detailed"],
            "Block_Group": ["total", "hispanic", "detailed"],
        },
    )
    return q, production_sigmas(q)


def test_logpdf_is_the_sum_of_the_queries_discrete_gaussian_logpmfs():
    q, sigmas = census_mechanism()
    mech = NoisyMeasurements(q.matrix, sigmas)
    x = np.random.default_rng(1).integers(0, 30, size=q.n_cells)
    y = mech.release(x, random_seed=2)
    values = q.matrix @ x
    expected = sum(DiscreteGaussian(s).logpdf(int(yq), int(vq))[0] for s, yq, vq in zip(sigmas, y, values))
    assert mech.logpdf(y, x)[0] == pytest.approx(expected, rel=1e-12)
    batch = np.stack([x, x + 1, np.maximum(x - 1, 0)])
    np.testing.assert_allclose(mech.logpdf(y, batch), [mech.logpdf(y, row)[0] for row in batch], rtol=1e-12)
    assert mech.logpdf(y, batch).max() <= mech.log_bound(size=q.n_queries)


def test_laplace_noise_logpdf_and_pure_guarantee():
    mech = NoisyMeasurements([[1, 1], [0, 1]], [2.0, 0.5], noise="laplace")
    y, x = np.array([3, 1]), np.array([1, 2])
    expected = DiscreteLaplace(0.5).logpdf(3, 3)[0] + DiscreteLaplace(2.0).logpdf(1, 2)[0]
    assert mech.logpdf(y, x)[0] == pytest.approx(expected)
    assert mech.guarantee().definition == "pure"
    assert mech.guarantee().epsilon == pytest.approx(0.5 + 2.0)
    with pytest.raises(ValueError, match="not zCDP"):
        epsilon_delta(mech, 1e-6)


def test_releases_follow_the_noise_of_each_query():
    mech = NoisyMeasurements([[1, 1, 0], [0, 1, 1]], [0.8, 1.7])
    x = np.array([2, 3, 4])
    rng = np.random.default_rng(5)
    draws = np.array([mech.release(x, random_seed=rng) for _ in range(3000)])
    for column, sigma, centre in ((0, 0.8, 5), (1, 1.7, 7)):
        support = np.arange(centre - 15, centre + 16)
        pmf = np.exp(DiscreteGaussian(sigma).logpdf(0, support - centre))
        assert chi_square_pvalue(draws[:, column], support, pmf) > 1e-3


def test_zcdp_accounting_is_the_largest_per_cell_sum():
    q, sigmas = census_mechanism()
    mech = NoisyMeasurements(q.matrix, sigmas)
    dense = q.matrix.toarray()
    per_cell = (dense * (1 / (2 * sigmas**2))[:, None]).sum(axis=0)
    assert mech.guarantee().rho == pytest.approx(per_cell.max(), rel=1e-12)
    np.testing.assert_allclose(mech.cell_loss(), per_cell, rtol=1e-12)
    # with production shares, a cell's rho is the sum of the shares of the queries it is in, over 2
    for delta in (1e-6, 1e-10):
        for bound in ("standard", "optimal"):
            eps, d = epsilon_delta(mech, delta, bound)
            assert d == delta and eps == pytest.approx(zcdp_epsilon(per_cell.max(), delta, bound), rel=1e-12)


def test_invariants_and_reproducibility():
    A = np.ones((1, 3), dtype=np.int64)
    mech = NoisyMeasurements(np.eye(3, dtype=int), 1.0, invariants=(A, [6]))
    assert np.array_equal(mech.release([1, 2, 3], random_seed=3), mech.release([1, 2, 3], random_seed=3))
    y = mech.release([1, 2, 3], random_seed=3)
    out = mech.logpdf(y, [[1, 2, 3], [1, 2, 4]])
    assert np.isfinite(out[0]) and np.isneginf(out[1])
    with pytest.raises(ValueError, match="breaks the invariants"):
        mech.release([1, 2, 4])


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"queries": [[1, 2], [0, 1]], "sigmas": 1.0}, "query 0 has entry 2 at cell 1"),
        ({"queries": [[1, 0], [0, 0]], "sigmas": 1.0}, "query 1 sums no cell"),
        ({"queries": [[1, 0], [0, 1]], "sigmas": [1.0, -1.0]}, "query 1 has noise scale -1.0"),
        ({"queries": [[1, 0], [0, 1]], "sigmas": [np.nan, 1.0]}, "query 0 has noise scale nan"),
        ({"queries": [[1, 0], [0, 1]], "sigmas": [1.0, 1.0, 1.0]}, "one scale per query"),
        ({"queries": [[1, 0], [0, 1]], "sigmas": 1.0, "noise": "uniform"}, "noise must be one of"),
        ({"queries": [[1, 0], [0, 1]], "sigmas": 1.0, "invariants": ([[1, 1], [1, 1]], [3, 4])}, "contradict"),
        ({"queries": [[1, 0], [0, 1]], "sigmas": 1.0, "invariants": ([[1, 1]], [-2])}, "outside the support"),
        ({"queries": [[1, 0], [0, 1]], "sigmas": 1.0, "invariants": ([[1, 1, 1]], [2])}, "invariants: A must be"),
    ],
)
def test_bad_input_is_refused_naming_the_query(kwargs, match):
    with pytest.raises(ValueError, match=match):
        NoisyMeasurements(**kwargs)


def test_shapes_are_checked_and_sparse_input_accepted():
    mech = NoisyMeasurements(sp.csr_matrix(np.array([[1, 1, 0], [0, 1, 1]])), [1.0, 2.0])
    assert mech.n_queries == 2 and mech.n_cells == 3
    with pytest.raises(ValueError, match="x must have shape"):
        mech.logpdf([1, 2], [1, 2])
    with pytest.raises(ValueError, match="y must have shape"):
        mech.logpdf([1, 2, 3], [1, 2, 3])
    with pytest.raises(ValueError, match="size must be"):
        mech.log_bound(size=3)
    assert mech == NoisyMeasurements([[1, 1, 0], [0, 1, 1]], [1.0, 2.0])
    assert mech != NoisyMeasurements([[1, 1, 0], [1, 1, 1]], [1.0, 2.0])
