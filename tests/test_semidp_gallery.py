"""The Semi-DP table gallery model: rejection, importance and PyMC against its exact posterior; its PyMC
route's table draws (x | theta, y exactly)."""

import arviz as az
import numpy as np
import pytest
import xarray as xr
from conftest import chi_square_pvalue, matches_exact, theta_mean_z_scores

import ppdinfer as pp
import ppdinfer.pymc as ppm
from ppdinfer.models import semidp_table, table_2x2

ROWS, COLS = [5, 4], [3, 2, 4]
TABLE = np.array([[3, 1, 1], [0, 1, 3]])


@pytest.fixture(scope="module")
def setup():
    model = semidp_table.model(mu=1.5, shape=(2, 3), association_sd=1.0)
    z = semidp_table.public_information(ROWS, COLS)
    y = model.mechanism.release(TABLE, random_seed=3)
    exact = pp.exact_posterior(model, y, z, draws=10, random_seed=0)
    return model, z, y, exact


def test_release_keeps_the_margins_and_the_exact_posterior_is_normalized(setup):
    model, z, y, exact = setup
    assert np.allclose(y.sum(axis=1), ROWS) and np.allclose(y.sum(axis=0), COLS)
    assert np.isclose(float(exact["exact"]["x_pmf"].sum()), 1.0)
    support = exact["exact"]["x_support"].values
    assert np.all(support.sum(axis=2) == ROWS) and np.all(support.sum(axis=1) == COLS)


def test_rejection_and_importance_match_exact(setup):
    model, z, y, exact = setup
    rejection = pp.rejection_sample(model, y, z, draws=3000, random_seed=1, progressbar=False)
    assert matches_exact(rejection, exact, "association")
    importance = pp.importance_sample(model, y, z, draws=20_000, random_seed=2)
    ess = importance["posterior"].attrs["ess"]
    assert ess > 1000
    assert np.all(np.abs(theta_mean_z_scores(importance, exact, "association", ess)) < 4.5)


def test_pymc_twin_matches_exact(setup):
    import arviz as az

    model, z, y, exact = setup
    with model.to_pymc(y, z):
        idata = ppm.sample(draws=1000, tune=500, chains=2, random_seed=4, progressbar=False)
    draws = idata.posterior["association"].values.reshape(-1)
    ess = float(az.ess(idata, var_names=["association"])["association"])
    z_score = (draws.mean() - float(exact["exact"]["theta_mean"][0])) / (
        float(exact["exact"]["theta_sd"][0]) / np.sqrt(ess)
    )
    assert abs(z_score) < 4.5


def test_two_by_two_is_the_odds_ratio_model_with_gaussian_noise_on_the_free_cell():
    """On a 2 x 2 table y - x = (g/2) v, v = (1, -1, -1, 1): n11 + g/2 with g ~ N(0, sigma^2), sigma = 2/mu."""
    mu = 0.8
    model = semidp_table.model(mu=mu, shape=(2, 2), association_sd=1.0)
    z = semidp_table.public_information([7, 6], [5, 8])
    y = np.array([[3.6, 3.4], [1.4, 4.6]])
    twin = table_2x2.model(log_odds_sd=1.0, noise=pp.mechanisms.Gaussian(sigma=1 / mu))
    ours = pp.exact_posterior(model, y, z, draws=10)
    theirs = pp.exact_posterior(twin, 3.6, table_2x2.public_information([7, 6], 5), draws=10)
    # theta = log(psi): compare the posterior of x (the same enumeration on both sides).
    assert np.allclose(ours["exact"]["x_pmf"].values, theirs["exact"]["x_pmf"].values, atol=1e-3)


def test_bad_input():
    model = semidp_table.model(mu=1.0, shape=(2, 3))
    with pytest.raises(ValueError, match="built for 2 x 3"):
        pp.exact_posterior(model, np.zeros((2, 2)), semidp_table.public_information([1, 1], [1, 1]))
    with pytest.raises(ValueError, match="not the public margins"):
        pp.exact_posterior(model, np.zeros((2, 3)), semidp_table.public_information(ROWS, COLS))
    with pytest.raises(ValueError, match="mu"):
        semidp_table.model(mu=0.0)


# -- table draws from the PyMC route ---------------------------------------------------------


def test_table_draws_given_theta_follow_the_exact_conditional(setup):
    """5,000 draws at theta = 0.7 against pi(x | theta, z) pi(y | x) computed by the data model and the mechanism."""
    model, z, y, _ = setup
    theta = xr.DataTree.from_dict(
        {"posterior": xr.Dataset({"association": (("chain", "draw"), np.full((1, 5000), 0.7))})}
    )
    tables = model.draw_tables(theta, y, z, random_seed=1)["posterior"]["table"].values.reshape(-1, 2, 3)
    support = model.simulate.support(z)
    log_p = model.simulate.logpmf(support, [0.7], z)[0] + model.mechanism.logpdf(y, support)
    pmf = np.exp(log_p - log_p.max())
    assert chi_square_pvalue(tables, support, pmf) > 1e-3
    assert chi_square_pvalue(tables, support, np.exp(model.simulate.logpmf(support, [0.7], z)[0])) < 1e-6  # prior alone


def test_pymc_route_table_means_match_exact_posterior(setup):
    model, z, y, exact = setup
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
    summary = pp.summary(idata)  # x_name is recorded: the table has rows too
    assert "table[1,2]" in summary.index and "association" in summary.index
    again = model.sample_pymc(
        y, z, draws=50, tune=50, chains=1, random_seed=4, progressbar=False, compute_convergence_checks=False
    )
    same = model.sample_pymc(
        y, z, draws=50, tune=50, chains=1, random_seed=4, progressbar=False, compute_convergence_checks=False
    )
    np.testing.assert_array_equal(again["posterior"]["table"].values, same["posterior"]["table"].values)


def test_table_draws_refuse_bad_input(setup):
    model, z, y, _ = setup
    with pytest.raises(ValueError, match="idata must be a DataTree whose posterior holds 'association'"):
        model.draw_tables(xr.DataTree(), y, z)
    with pytest.raises(ValueError, match="chunk"):
        model.draw_tables(xr.DataTree(), y, z, chunk=0)
    with pytest.raises(ValueError, match="not the public margins"):
        model.draw_tables(xr.DataTree(), np.zeros((2, 3)), z)
