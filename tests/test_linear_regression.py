"""The gallery's regression from privatized sufficient statistics: the normal approximation's moments
against Monte Carlo, the posterior without noise against the conjugate one, the clipping check."""

import warnings

import numpy as np
import pytest
import xarray as xr

from ppdinfer.models import linear_regression as lr
from ppdinfer.privacy.sufficient_statistics import regression_sensitivity


def _records_statistics(x, y):
    w = np.column_stack([np.ones(len(x)), x, y])
    pairs = np.array(lr._pairs(x.shape[1]))
    return w[:, pairs[:, 0]] * w[:, pairs[:, 1]]


def test_record_moments_match_monte_carlo():
    beta, sigma = np.array([0.5, 1.0, -0.5]), 0.8
    mu_x, cov_x = np.array([0.3, -0.2]), np.array([[1.0, 0.3], [0.3, 0.5]])
    m, V = lr.record_moments(beta, sigma, mu_x, cov_x)
    x, y = lr.synthetic_records(200_000, beta, sigma, mu_x, cov_x, random_seed=1)
    g = _records_statistics(x, y)
    se = g.std(axis=0) / np.sqrt(len(g))
    assert np.all(np.abs(g.mean(axis=0) - m) < 4.5 * se)
    sd = np.sqrt(np.diag(V))
    # covariances on the correlation scale: the Monte Carlo error of fourth-order moments is about 1%
    assert np.max(np.abs(np.cov(g.T) - V) / np.outer(sd, sd)) < 0.05
    # a covariance that forgets the mean terms (Isserlis on uncentred w) is far off
    _, V0 = lr.record_moments(np.array([0.0, 1.0, -0.5]), sigma, np.zeros(2), cov_x)
    assert np.max(np.abs(np.cov(g.T) - V0) / np.outer(sd, sd)) > 0.2


def test_statistics_follow_the_sensitivity_order():
    model = lr.model(n=10, epsilon=1.0, x_bounds=[(-1, 2), (0, 3)], y_bounds=(-2, 2))
    full = regression_sensitivity([(1, 1), (-1, 2), (0, 3)], (-2, 2), neighbours="replace")
    assert full.names[0] == "x0*x0" and full.per_statistic[0] == 0.0  # the count, public
    assert model.names == ("x0", "x1", "y", "x0*x0", "x0*x1", "x0*y", "x1*x1", "x1*y", "y*y")
    np.testing.assert_allclose(model.noise_scale, full.per_statistic[1:] * 9)
    x, y = np.array([[3.0, 1.0], [0.5, -1.0]]), np.array([5.0, 1.0])
    xc, yc = np.array([[2.0, 1.0], [0.5, 0.0]]), np.array([2.0, 1.0])  # clipped by hand
    np.testing.assert_allclose(lr.statistics(x, y, model.x_bounds, model.y_bounds), _records_statistics(xc, yc).sum(0))


def _conjugate(stats, n, d, v0=100.0, a0=1.0, b0=1.0):
    """The normal-inverse-gamma posterior of beta from the exact statistics (multivariate t margin)."""
    xtx = np.empty((d + 1, d + 1))
    xtx[0, 0] = n
    xtx[0, 1:] = xtx[1:, 0] = stats[:d]
    iu = np.triu_indices(d)
    block = np.zeros((d, d))
    block[iu] = stats[d + 1 : d + 1 + len(iu[0])]
    xtx[1:, 1:] = block + np.triu(block, 1).T
    xty = np.concatenate([[stats[d]], stats[d + 1 + len(iu[0]) : -1]])
    precision = xtx + np.eye(d + 1) / v0
    vn = np.linalg.inv(precision)
    mn = vn @ xty
    an, bn = a0 + n / 2, b0 + (stats[-1] - mn @ precision @ mn) / 2
    sd = np.sqrt(bn / an * np.diag(vn) * an / (an - 1))
    return mn, sd


def test_no_noise_posterior_matches_conjugate():
    n = 2000
    model = lr.model(n=n, epsilon=None)
    x, y = lr.synthetic_records(n, random_seed=3)
    released = model.release(x, y)
    fit = model.fit(released, draws=600, tune=500, chains=1, random_seed=5)
    draws = fit["posterior"]["beta"].values.reshape(-1, 2)
    mean, sd = _conjugate(released, n, 1)
    assert np.all(np.abs(draws.mean(0) - mean) < 0.25 * sd)
    np.testing.assert_allclose(draws.std(0), sd, rtol=0.15)
    assert fit.attrs["clipped_fraction"] < 1e-3


def _posterior(mean, sd):
    dims = ("chain", "draw", "variable")
    ds = xr.Dataset({"mu": (dims, np.full((1, 4, 2), mean)), "chol_stds": (dims, np.full((1, 4, 2), sd))})
    return xr.DataTree.from_dict({"posterior": ds})


def test_clipping_check_warns_where_the_box_clips():
    model = lr.model(n=100, epsilon=1.0)  # x in [-4, 4], y in [-6, 6]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert model.check_clipping(_posterior([0.0, 0.5], [1.0, 1.5])) < 1e-3
    with pytest.warns(lr.ClippingWarning, match="clipped"):
        fraction = model.check_clipping(_posterior([0.0, 0.5], [2.0, 1.5]))  # P(|x| > 4) ~ 0.046
    assert 0.04 < fraction < 0.1
    # the regression parametrization's bound: the same margins through beta, sigma and x's law
    regression = lr.model(n=100, epsilon=1.0, parametrization="regression")
    assert regression.clipped_fraction([0.5, 1.0], np.sqrt(1.25), [0.0], [[1.0]]) < 1e-3
    assert 0.04 < regression.clipped_fraction([0.5, 0.0], 1.5, [0.0], [[4.0]]) < 0.1


def test_arguments_are_checked():
    with pytest.raises(ValueError, match="shares"):
        lr.model(n=10, shares=[0.5, 0.5, 0.5, 0.1, 0.1])
    with pytest.raises(ValueError, match="parametrization"):
        lr.model(n=10, parametrization="centred")
    model = lr.model(n=10, epsilon=1.0)
    with pytest.raises(ValueError, match="released"):
        model.to_pymc([1.0, 2.0])
    with pytest.raises(ValueError, match="records"):
        model.release(np.zeros((3, 1)), np.zeros(3))
    shares = np.array([0.1, 0.1, 0.2, 0.3, 0.3])
    weighted = lr.model(n=10, epsilon=2.0, shares=shares)
    np.testing.assert_allclose(weighted.noise_scale, weighted.sensitivity.per_statistic[1:] / shares / 2.0)
