"""Record-level data augmentation for regression from released statistics, against importance sampling."""

import arviz as az
import numpy as np
import pytest

from ppdinfer.models import linear_regression, regression_records

N, BOX_X, BOX_Y = 5, (-1.2, 1.2), (-2.0, 2.0)  # a tight box: clipping is active


def _importance_reference(model, released, draws, seed):
    """Posterior means and sds of (beta_0, beta_1, sigma, mu_x, sd_x): prior draws of theta and the records,
    weighted by the Laplace likelihood of the released statistics (exact, clipping included); and the ESS."""
    rng = np.random.default_rng(seed)
    scale = model.prior_scale
    b0, b1, mu = rng.normal(0.0, scale, (3, draws))
    sigma, sd = np.abs(rng.normal(0.0, scale, (2, draws)))
    x = mu[:, None] + sd[:, None] * rng.standard_normal((draws, N))
    y = b0[:, None] + b1[:, None] * x + sigma[:, None] * rng.standard_normal((draws, N))
    u, v = np.clip(x, *BOX_X), np.clip(y, *BOX_Y)
    t = np.stack([u.sum(1), v.sum(1), (u * u).sum(1), (u * v).sum(1), (v * v).sum(1)], axis=1)
    log_w = -(np.abs(released - t) / model.noise_scale).sum(axis=1)
    w = np.exp(log_w - log_w.max())
    w /= w.sum()
    theta = np.stack([b0, b1, sigma, mu, sd])
    mean = theta @ w
    return mean, np.sqrt((theta**2) @ w - mean**2), 1.0 / (w**2).sum()


def test_record_level_augmentation_matches_importance_sampling():
    model = linear_regression.LinearRegressionModel(N, [BOX_X], BOX_Y, 10.0, prior_scale=1.0)
    x, y = linear_regression.synthetic_records(N, beta=(0.3, 0.8), sigma=0.7, random_seed=4)
    released = model.release(x, y, random_seed=5)
    mean, sd, ess_is = _importance_reference(model, released, 1_000_000, seed=0)
    assert ess_is > 3000
    fit = regression_records.fit_records(model, released, draws=3000, tune=500, chains=2, passes=5, random_seed=1)
    post = fit["posterior"]
    draws = np.stack([post["beta"][..., 0], post["beta"][..., 1], post["sigma"], post["mu_x"][..., 0],
                      post["sd_x"][..., 0]], axis=-1)  # fmt: skip
    ess = np.array([float(az.ess(draws[..., k])) for k in range(5)])
    got = draws.mean(axis=(0, 1))
    z = (got - mean) / np.sqrt(sd**2 / ess + sd**2 / ess_is)
    assert np.all(np.abs(z) < 4.5), z
    assert np.allclose(draws.std(axis=(0, 1)), sd, rtol=0.15)
    assert 0.0 < float(fit["sample_stats"]["accept"].mean()) < 1.0


def _lkj2_correlation(rng, size):
    """The correlation of a 2 x 2 LKJ(2) draw: (r + 1) / 2 ~ Beta(2, 2)."""
    return 2.0 * rng.beta(2.0, 2.0, size) - 1.0


def test_two_covariates_match_importance_sampling():
    """d = 2 (the covariance step's inverse-Wishart proposal and LKJ(2) prior ratio), clipping active."""
    n, box = 6, [(-1.2, 1.2), (-1.0, 1.5)]
    model = linear_regression.LinearRegressionModel(n, box, (-2.0, 2.0), 8.0, prior_scale=1.0)
    x, y = linear_regression.synthetic_records(n, beta=(0.2, 0.7, -0.4), sigma=0.6, mu_x=(0.1, 0.2),
                                               cov_x=((0.6, 0.2), (0.2, 0.5)), random_seed=8)  # fmt: skip
    released = model.release(x, y, random_seed=9)
    rng, draws = np.random.default_rng(0), 400_000
    beta = rng.normal(0.0, 1.0, (draws, 3))
    sigma, s1, s2 = np.abs(rng.normal(0.0, 1.0, (3, draws)))
    mu, r = rng.normal(0.0, 1.0, (draws, 2)), _lkj2_correlation(rng, draws)
    z = rng.standard_normal((draws, n, 2))
    x1 = mu[:, None, 0] + s1[:, None] * z[..., 0]
    x2 = mu[:, None, 1] + s2[:, None] * (r[:, None] * z[..., 0] + np.sqrt(1 - r[:, None] ** 2) * z[..., 1])
    yy = (
        beta[:, None, 0]
        + beta[:, None, 1] * x1
        + beta[:, None, 2] * x2
        + sigma[:, None] * rng.standard_normal((draws, n))
    )
    u1, u2, v = np.clip(x1, *box[0]), np.clip(x2, *box[1]), np.clip(yy, -2.0, 2.0)
    t = np.stack([u1, u2, v, u1 * u1, u1 * u2, u1 * v, u2 * u2, u2 * v, v * v], axis=-1).sum(axis=1)
    log_w = -(np.abs(released - t) / model.noise_scale).sum(axis=1)
    w = np.exp(log_w - log_w.max())
    w /= w.sum()
    ess_is = 1.0 / (w**2).sum()
    assert ess_is > 2000
    theta = np.column_stack([beta, sigma, s1, s2, r])
    mean = w @ theta
    sd = np.sqrt(w @ theta**2 - mean**2)
    fit = regression_records.fit_records(model, released, draws=2500, tune=300, chains=2, passes=5, random_seed=3)
    post = fit["posterior"]
    got = np.concatenate([post["beta"].values, post["sigma"].values[..., None], post["sd_x"].values,
                          post["corr_x"].values[..., 0, 1:]], axis=-1)  # fmt: skip
    ess = np.array([float(az.ess(got[..., k])) for k in range(got.shape[-1])])
    z_scores = (got.mean(axis=(0, 1)) - mean) / np.sqrt(sd**2 / ess + sd**2 / ess_is)
    assert np.all(np.abs(z_scores) < 4.5), z_scores
    assert np.allclose(got.std(axis=(0, 1)), sd, rtol=0.2), (got.std(axis=(0, 1)), sd)


def test_record_level_augmentation_refuses_what_it_cannot_fit():
    small = linear_regression.model(n=3, epsilon=1.0, x_bounds=[(-4, 4), (-4, 4)])
    with pytest.raises(ValueError, match="at least d"):
        regression_records.fit_records(small, np.zeros(9))
    exact = linear_regression.model(n=50, epsilon=None)
    with pytest.raises(ValueError, match="epsilon is None"):
        regression_records.fit_records(exact, np.zeros(5))
    model = linear_regression.model(n=50, epsilon=1.0)
    with pytest.raises(ValueError, match="released must hold"):
        regression_records.fit_records(model, np.zeros(4))
    with pytest.raises(ValueError, match="passes"):
        regression_records.fit_records(model, np.zeros(5), passes=0)
    with pytest.raises(TypeError, match="LinearRegressionModel"):
        regression_records.fit_records("model", np.zeros(5))


def test_a_record_pass_keeps_the_statistics_of_the_clipped_records():
    from ppdinfer.kernels.regression_records import record_pass

    model = linear_regression.LinearRegressionModel(40, [BOX_X], BOX_Y, 1.0)
    x, y = linear_regression.synthetic_records(40, sigma=2.0, random_seed=3)  # many records outside the box
    y = y.copy()
    t = linear_regression.statistics(x, y, model.x_bounds, model.y_bounds)
    pairs = np.array(linear_regression._pairs(1))
    lower, upper = np.array([BOX_X[0], BOX_Y[0]]), np.array([BOX_X[1], BOX_Y[1]])
    beta, chol = np.array([0.0, 1.0]), np.array([[1.5]])
    accepted = record_pass(x, y, t, t + 1.0, model.noise_scale, lower, upper, pairs, beta, 2.0, np.zeros(1), chol, 7)
    assert accepted > 20 and np.mean(np.abs(x) > BOX_X[1]) > 0.1
    assert np.allclose(t, linear_regression.statistics(x, y, model.x_bounds, model.y_bounds))
