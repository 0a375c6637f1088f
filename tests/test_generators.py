import math

import numpy as np
import pytest
from conftest import chi_square_pvalue
from scipy import stats

from ppdinfer import priors
from ppdinfer.generators import AssociationTable, Binomial, FisherTable2x2, MultinomialTotal, Poisson, compositions


def test_compositions_are_complete_and_distinct():
    rows = compositions(6, 4)
    assert rows.shape == (math.comb(9, 3), 4)
    assert np.all(rows.sum(axis=1) == 6) and np.all(rows >= 0)
    assert len({tuple(r) for r in rows}) == rows.shape[0]


@pytest.mark.parametrize(
    "generator, z, theta, dim",
    [
        (Binomial(12), None, np.array([0.1, 0.7]), 1),
        (MultinomialTotal(), {"total": 7}, np.array([[0.2, 0.3, 0.5], [0.6, 0.2, 0.2]]), 3),
        (FisherTable2x2(), {"row_totals": [8, 11], "col_total": 9}, np.array([0.3, 4.0]), 1),
        (AssociationTable(), {"row_totals": [4, 4, 4], "col_totals": [3, 4, 5]}, np.array([-0.5, 0.0, 0.8]), 1),
    ],
)
def test_logpmf_sums_to_one_over_support(generator, z, theta, dim):
    support = generator.support(z, dim)
    total = np.exp(generator.logpmf(support, theta, z)).sum(axis=1)
    assert np.allclose(total, 1.0)


def test_fisher_matches_scipy():
    z = {"row_totals": [8, 11], "col_total": 9}
    f = FisherTable2x2()
    k = f.support(z)
    # scipy: M total, n first row, N first column
    expected = stats.nchypergeom_fisher(19, 8, 9, 2.5).logpmf(k)
    assert np.allclose(f.logpmf(k, np.array([2.5]), z)[0], expected)


@pytest.mark.parametrize(
    "generator, z, theta, dim",
    [
        (MultinomialTotal(), {"total": 5}, np.array([0.2, 0.3, 0.5]), 3),
        (FisherTable2x2(), {"row_totals": [8, 11], "col_total": 9}, np.array([2.5]), 1),
        (AssociationTable(), {"row_totals": [3, 4, 2], "col_totals": [5, 4]}, np.array([0.6]), 1),
    ],
)
def test_simulate_matches_logpmf(generator, z, theta, dim):
    rng = np.random.default_rng(4)
    draws = generator(np.repeat(theta[None, :] if dim > 1 else theta, 20000, axis=0), z, rng).reshape(20000, -1)
    support = generator.support(z, dim).reshape(-1, draws.shape[1])
    pmf = np.exp(generator.logpmf(support, theta[None, :] if dim > 1 else theta, z)[0])
    assert chi_square_pvalue(draws, support, pmf) > 1e-3


def test_association_table_is_fisher_for_2x2_and_refuses_other_margins():
    z = {"row_totals": [8, 11], "col_totals": [9, 10]}
    tables = AssociationTable().support(z)
    log_p = AssociationTable().logpmf(tables, np.array([0.9]), z)[0]
    expected = FisherTable2x2().logpmf(
        tables[:, 0, 0], np.array([math.exp(0.9)]), {"row_totals": [8, 11], "col_total": 9}
    )
    assert np.allclose(log_p, expected[0])
    assert np.isneginf(AssociationTable().logpmf([[9, 0], [0, 10]], [0.9], z)).all()  # other margins
    # A local odds ratio of e^theta: independence at 0, positive association above.
    draws = AssociationTable()(
        np.full(4000, 1.0), {"row_totals": [30, 30], "col_totals": [30, 30]}, np.random.default_rng(2)
    )
    assert np.mean(draws[:, 0, 0] * draws[:, 1, 1] > draws[:, 0, 1] * draws[:, 1, 0]) > 0.9
    with pytest.raises(ValueError, match="sum to 5 but"):
        AssociationTable().check_z({"row_totals": [2, 3], "col_totals": [3, 3]})


def test_poisson_logpmf_matches_scipy():
    g = Poisson(exposure=[1.0, 2.0])
    x = np.array([[1, 3], [0, 2]])
    theta = np.array([0.5, 1.5])
    expected = stats.poisson(theta[:, None, None] * np.array([1.0, 2.0])).logpmf(x[None]).sum(axis=-1)
    assert np.allclose(g.logpmf(x, theta), expected)


def test_bad_public_information():
    with pytest.raises(ValueError, match="total"):
        MultinomialTotal().check_z({"total": -3})
    with pytest.raises(ValueError, match="total"):
        MultinomialTotal().check_z({})
    with pytest.raises(ValueError, match="col_total"):
        FisherTable2x2().check_z({"row_totals": [3, 4], "col_total": 9})
    with pytest.raises(ValueError, match="row_totals"):
        FisherTable2x2().check_z({"row_totals": [3, -4], "col_total": 2})
    with pytest.raises(ValueError, match="n"):
        Binomial(0)
    with pytest.raises(ValueError, match="exposure"):
        Poisson(-1.0)


def test_public_total_is_one_count():
    with pytest.raises(ValueError, match=r"z\['total'\] must hold integers, got '10'"):
        MultinomialTotal().check_z({"total": "10"})
    with pytest.raises(ValueError, match=r"z\['total'\] must be a single count"):
        MultinomialTotal().check_z({"total": [3, 4]})


def test_dirichlet_centered_on_public_counts():
    prior = priors.Dirichlet.centered("previous", concentration=10.0)
    alpha = prior.concentration_vector({"previous": [4, 0, 1]})
    assert np.allclose(alpha, 10 * np.array([5, 1, 2]) / 8)
    draws = prior.rvs(4000, np.random.default_rng(0), z={"previous": [4, 0, 1]})
    assert np.allclose(draws.mean(axis=0), alpha / alpha.sum(), atol=0.02)
    assert np.allclose(
        prior.logpdf(draws[:3], z={"previous": [4, 0, 1]}), [stats.dirichlet(alpha).logpdf(d) for d in draws[:3]]
    )
    with pytest.raises(ValueError, match="previous"):
        prior.rvs(3, None, z={})
    with pytest.raises(ValueError, match="alpha"):
        priors.Dirichlet([1.0, -2.0])
    with pytest.raises(ValueError, match="concentration"):
        priors.Dirichlet.centered("previous", concentration=0)


def test_scalar_priors_match_scipy():
    assert np.allclose(priors.Beta(2, 3).logpdf([0.2, 0.5]), stats.beta(2, 3).logpdf([0.2, 0.5]))
    assert np.allclose(priors.Gamma(2, 4).logpdf([0.2, 1.5]), stats.gamma(2, scale=0.25).logpdf([0.2, 1.5]))
    with pytest.raises(ValueError, match="alpha"):
        priors.Beta(0, 1)
