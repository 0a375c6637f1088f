"""The Semi-DP table's PyMC route gives table draws: x | theta, y exactly, and means that match exact_posterior."""

import arviz as az
import numpy as np
import pytest
import xarray as xr

import ppdinfer as pp
from conftest import chi_square_pvalue
from ppdinfer.models import semidp_table

ROWS, COLS = [5, 4], [3, 2, 4]
TABLE = np.array([[3, 1, 1], [0, 1, 3]])


@pytest.fixture(scope="module")
def setup():
    model = semidp_table.model(mu=1.5, shape=(2, 3), association_sd=1.0)
    z = semidp_table.public_information(ROWS, COLS)
    y = model.mechanism.release(TABLE, random_seed=3)
    return model, z, y


def test_table_draws_given_theta_follow_the_exact_conditional(setup):
    """5,000 draws at theta = 0.7 against pi(x | theta, z) pi(y | x) computed by the data model and the mechanism."""
    model, z, y = setup
    theta = xr.DataTree.from_dict({"posterior": xr.Dataset({"association": (("chain", "draw"), np.full((1, 5000), 0.7))})})
    tables = model.draw_tables(theta, y, z, random_seed=1)["posterior"]["table"].values.reshape(-1, 2, 3)
    support = model.simulate.support(z)
    log_p = model.simulate.logpmf(support, [0.7], z)[0] + model.mechanism.logpdf(y, support)
    pmf = np.exp(log_p - log_p.max())
    assert chi_square_pvalue(tables, support, pmf) > 1e-3
    assert chi_square_pvalue(tables, support, np.exp(model.simulate.logpmf(support, [0.7], z)[0])) < 1e-6  # prior alone


def test_pymc_route_table_means_match_exact_posterior(setup):
    model, z, y = setup
    exact = pp.exact_posterior(model, y, z, draws=10, random_seed=0)
    support = exact["exact"]["x_support"].values
    pmf = exact["exact"]["x_pmf"].values
    exact_mean = np.tensordot(pmf, support, axes=1)
    exact_sd = np.sqrt(np.tensordot(pmf, support**2.0, axes=1) - exact_mean**2)
    idata = model.sample_pymc(y, z, draws=1000, tune=500, chains=2, random_seed=4, progressbar=False)
    tables = idata["posterior"]["table"]
    assert tables.dims == ("chain", "draw", "table_dim_0", "table_dim_1") == exact["posterior"]["table"].dims
    assert np.all(tables.sum("table_dim_1") == ROWS) and np.all(tables.sum("table_dim_0") == COLS)
    ess = az.ess(idata, var_names=["table"])["table"].values
    z_scores = (tables.mean(("chain", "draw")).values - exact_mean) / (exact_sd / np.sqrt(ess))
    assert np.all(np.abs(z_scores) < 4.5), z_scores
    summary = pp.summary(idata)                               # x_name is recorded: the table has rows too
    assert "table[1,2]" in summary.index and "association" in summary.index
    again = model.sample_pymc(y, z, draws=50, tune=50, chains=1, random_seed=4, progressbar=False,
                              compute_convergence_checks=False)
    same = model.sample_pymc(y, z, draws=50, tune=50, chains=1, random_seed=4, progressbar=False,
                             compute_convergence_checks=False)
    np.testing.assert_array_equal(again["posterior"]["table"].values, same["posterior"]["table"].values)


def test_bad_input(setup):
    model, z, y = setup
    with pytest.raises(ValueError, match="idata must be a DataTree whose posterior holds 'association'"):
        model.draw_tables(xr.DataTree(), y, z)
    with pytest.raises(ValueError, match="chunk"):
        model.draw_tables(xr.DataTree(), y, z, chunk=0)
    with pytest.raises(ValueError, match="not the public margins"):
        model.draw_tables(xr.DataTree(), np.zeros((2, 3)), z)
