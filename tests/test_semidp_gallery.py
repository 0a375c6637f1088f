"""The Semi-DP table gallery model: rejection, importance and PyMC against its exact posterior."""

import numpy as np
import pytest

import ppdinfer as pp
import ppdinfer.pymc as ppm
from conftest import matches_exact, theta_mean_z_scores
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
    z_score = (draws.mean() - float(exact["exact"]["theta_mean"][0])) / (float(exact["exact"]["theta_sd"][0]) / np.sqrt(ess))
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
