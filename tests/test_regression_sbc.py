"""Simulation-based calibration of the exact record-level sampler on the release's true law (clipping active)."""

import functools

import numpy as np
import pytest

from ppdinfer.models import linear_regression, regression_records, regression_sbc

BOX_X, BOX_Y = [(-1.5, 1.5)], (-2.0, 2.0)  # the prior's records leave it often: clipping matters


def _calibrate(prior_scale, simulations):
    """SBC of fit_records fitted with ``prior_scale`` to simulations from the prior of scale 1."""
    truth = linear_regression.LinearRegressionModel(5, BOX_X, BOX_Y, 5.0, prior_scale=1.0)
    fitted = linear_regression.LinearRegressionModel(5, BOX_X, BOX_Y, 5.0, prior_scale=prior_scale)
    fit = functools.partial(regression_records.fit_records, draws=200, tune=30, chains=1, passes=3)
    return regression_sbc.calibrate(truth, lambda _, released, random_seed: fit(fitted, released,
                                    random_seed=random_seed), simulations=simulations, draws=19, bins=4, random_seed=1)  # fmt: skip


def test_exact_sampler_is_calibrated_and_a_wrong_prior_is_caught():
    result = _calibrate(1.0, 40)
    assert result.calibrated and result.p_value > 0.05, result.p_values
    assert set(result.ranks.data_vars) == set(regression_sbc.NAMES) and result.ranks.sizes["simulation"] == 40
    wrong = _calibrate(0.5, 30)  # the posterior of a narrower prior: ranks pile up at the ends
    assert wrong.p_value < 1e-3, wrong.p_values


def test_prior_draws_follow_the_priors():
    model = linear_regression.model(n=10, epsilon=1.0, x_bounds=[(-4, 4)] * 3, prior_scale=2.0)
    draws = regression_sbc.prior_draws(model, 4000, random_seed=0)
    assert draws["beta"].shape == (4000, 4) and draws["cov_x"].shape == (4000, 3, 3)
    np.testing.assert_allclose(draws["beta"].std(0), 2.0, rtol=0.05)
    np.testing.assert_allclose(np.sqrt(np.diagonal(draws["cov_x"], axis1=1, axis2=2)), draws["sd_x"])
    corr = draws["cov_x"][:, 0, 1] / (draws["sd_x"][:, 0] * draws["sd_x"][:, 1])
    assert abs(np.var(corr) - 1 / (2 * 2 + 1 + 1)) < 0.01  # LKJ(2) in 3 dimensions: Var r = 1 / (2 eta + d - 1)
    with pytest.raises(ValueError, match="names"):
        regression_sbc.calibrate(model, None, names=("slope",))
