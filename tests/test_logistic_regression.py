"""The gallery's logistic regression from privatized sufficient statistics: the quadrature moments against direct
integration and Monte Carlo, the sensitivities against sufficient_statistics' helpers, the exact record-level
posterior against importance sampling, the normal approximation against the exact posterior, bad input."""

import warnings

import arviz as az
import numpy as np
import pytest
import xarray as xr
from scipy import integrate, special

from ppdinfer.models import linear_regression, regression_records
from ppdinfer.models import logistic_regression as lg
from ppdinfer.privacy import sufficient_statistics as ss


def _direct_moments(beta, mu, sd):
    """E g and E g g' for one covariate by adaptive quadrature over x, y summed out: g = (x, y, x^2, x y)."""

    def g(x, y):
        return np.array([x, y, x * x, x * y])

    def expect(f):
        def integrand(x):
            p = special.expit(beta[0] + beta[1] * x)
            return (
                (p * f(x, 1.0) + (1 - p) * f(x, 0.0)) * np.exp(-0.5 * ((x - mu) / sd) ** 2) / (sd * np.sqrt(2 * np.pi))
            )

        return integrate.quad(integrand, mu - 12 * sd, mu + 12 * sd, epsabs=1e-12, epsrel=1e-11, limit=200)[0]

    m = np.array([expect(lambda x, y, i=i: g(x, y)[i]) for i in range(4)])
    second = np.array([[expect(lambda x, y, i=i, j=j: g(x, y)[i] * g(x, y)[j]) for j in range(4)] for i in range(4)])
    return m, second - np.outer(m, m)


@pytest.mark.parametrize("beta, mu, sd", [((-0.5, 1.5), 0.3, 1.2), ((1.0, -3.0), -0.5, 0.7)])
def test_quadrature_moments_match_direct_integration(beta, mu, sd):
    m, V = lg.record_moments(beta, [mu], [[sd**2]])
    m_ref, V_ref = _direct_moments(beta, mu, sd)
    # 24 nodes: errors about 1e-6 for these slopes (a statistic's mean off by < 1e-4 of its sd at n = 2,000)
    np.testing.assert_allclose(m, m_ref, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(V, V_ref, rtol=1e-5, atol=1e-5)
    # too few nodes for the steeper logistic is visibly off (the rule converges, it is not exact)
    m4, _ = lg.record_moments(beta, [mu], [[sd**2]], nodes=3)
    assert np.max(np.abs(m4 - m_ref)) > 1e-4


def test_quadrature_moments_match_monte_carlo_with_two_covariates():
    beta, mu_x, cov_x = np.array([0.3, 1.0, -0.7]), np.array([0.2, -0.4]), np.array([[1.0, 0.4], [0.4, 0.6]])
    m, V = lg.record_moments(beta, mu_x, cov_x, nodes=16)
    x, y = lg.synthetic_records(400_000, beta, mu_x, cov_x, random_seed=2)
    w = np.column_stack([np.ones(len(x)), x, y])
    pairs = np.array(linear_regression._pairs(2)[:-1])
    g = w[:, pairs[:, 0]] * w[:, pairs[:, 1]]
    se = g.std(axis=0) / np.sqrt(len(g))
    assert np.all(np.abs(g.mean(axis=0) - m) < 4.5 * se)
    sd = np.sqrt(np.diag(V))
    assert np.max(np.abs(np.cov(g.T) - V) / np.outer(sd, sd)) < 0.02
    # the symbolic path (the PyMC graph) computes the same numbers
    import pytensor.tensor as pt

    tensors = [pt.constant(v) for v in (beta, mu_x, cov_x)]
    tensors[2] = pt.specify_shape(tensors[2], (2, 2))
    m_sym, V_sym = lg.record_moments(*tensors, nodes=16)
    np.testing.assert_allclose(m_sym.eval(), m, rtol=1e-10)
    np.testing.assert_allclose(V_sym.eval(), V, rtol=1e-10, atol=1e-12)


def test_sensitivities_are_those_of_the_helpers():
    box = [(-1.0, 2.0), (0.5, 3.0)]
    model = lg.model(n=10, epsilon=2.0, x_bounds=box)
    assert model.names == ("x0", "x1", "y", "x0*x0", "x0*x1", "x0*y", "x1*x1", "x1*y")
    kw = {"neighbours": "replace"}
    expected = [
        ss.sum_sensitivity(*box[0], **kw),
        ss.sum_sensitivity(*box[1], **kw),
        ss.sum_sensitivity(0, 1, **kw),
        ss.square_sum_sensitivity(*box[0], **kw),
        ss.product_sum_sensitivity(box[0], box[1], **kw),
        ss.product_sum_sensitivity(box[0], (0, 1), **kw),
        ss.square_sum_sensitivity(*box[1], **kw),
        ss.product_sum_sensitivity(box[1], (0, 1), **kw),
    ]
    np.testing.assert_allclose(model.noise_scale * 2.0 / 8, expected)  # equal shares of epsilon 2
    np.testing.assert_allclose(model.mechanism.sensitivity, np.array(expected) * 8)
    x, y = np.array([[3.0, 1.0], [-2.0, 0.5]]), np.array([1.0, 0.0])  # clipped: (2, 1) and (-1, 0.5)
    by_hand = [2.0 - 1.0, 1.0 + 0.5, 1.0, 4.0 + 1.0, 2.0 - 0.5, 2.0, 1.0 + 0.25, 1.0]
    np.testing.assert_allclose(lg.statistics(x, y, box), by_hand)


N, BOX = 5, (-1.2, 1.2)  # a tight box: clipping is active


def _importance_reference(model, released, draws, seed):
    """Posterior means and sds of (beta_0, beta_1, mu_x, sd_x): prior draws of theta and the records, weighted by
    the Laplace likelihood of the released statistics (exact, clipping included); and the ESS."""
    rng = np.random.default_rng(seed)
    scale = model.prior_scale
    b0, b1, mu = rng.normal(0.0, scale, (3, draws))
    sd = np.abs(rng.normal(0.0, scale, draws))
    x = mu[:, None] + sd[:, None] * rng.standard_normal((draws, N))
    y = (rng.random((draws, N)) < special.expit(b0[:, None] + b1[:, None] * x)).astype(float)
    u = np.clip(x, *BOX)
    t = np.stack([u.sum(1), y.sum(1), (u * u).sum(1), (u * y).sum(1)], axis=1)
    log_w = -(np.abs(released - t) / model.noise_scale).sum(axis=1)
    w = np.exp(log_w - log_w.max())
    w /= w.sum()
    theta = np.stack([b0, b1, mu, sd])
    mean = theta @ w
    return mean, np.sqrt((theta**2) @ w - mean**2), 1.0 / (w**2).sum()


def _draws(fit):
    post = fit["posterior"]
    return np.stack([post["beta"][..., 0], post["beta"][..., 1], post["mu_x"][..., 0], post["sd_x"][..., 0]], axis=-1)


def test_record_level_logistic_matches_importance_sampling():
    model = lg.LogisticRegressionModel(N, [BOX], 10.0, prior_scale=1.5)
    x, y = lg.synthetic_records(N, beta=(0.3, 1.5), random_seed=4)
    released = model.release(x, y, random_seed=5)
    mean, sd, ess_is = _importance_reference(model, released, 1_000_000, seed=0)
    assert ess_is > 3000
    fit = regression_records.fit_records(model, released, draws=4000, tune=500, chains=2, passes=5, random_seed=1)
    draws = _draws(fit)
    ess = np.array([float(az.ess(draws[..., k])) for k in range(4)])
    z = (draws.mean(axis=(0, 1)) - mean) / np.sqrt(sd**2 / ess + sd**2 / ess_is)
    assert np.all(np.abs(z) < 4.5), z
    np.testing.assert_allclose(draws.std(axis=(0, 1)), sd, rtol=0.15)
    assert "sigma" not in fit["posterior"] and list(fit["posterior"]["T"].statistic.values) == list(model.names)


def test_normal_approximation_matches_the_exact_posterior_at_moderate_n():
    n = 1000
    model = lg.model(n=n, epsilon=4.0)
    x, y = lg.synthetic_records(n, random_seed=n)
    released = model.release(x, y, random_seed=n + 1)
    exact = _draws(regression_records.fit_records(model, released, draws=2000, tune=200, random_seed=1))
    ess = np.array([float(az.ess(exact[..., k])) for k in range(4)])
    with warnings.catch_warnings():
        warnings.simplefilter("error", lg.QuadratureWarning)
        approx = _draws(model.fit(released, draws=500, tune=500, chains=1, random_seed=1))
    sd = exact.std(axis=(0, 1))
    diff = (approx.mean(axis=(0, 1)) - exact.mean(axis=(0, 1))) / sd
    # the approximation's bias is well under its posterior sd; the rest is Monte Carlo error (ESS of both chains)
    assert np.all(np.abs(diff) < 0.25 + 3 * np.sqrt(1 / ess + 1 / 250)), (diff, ess)
    np.testing.assert_allclose(approx.std(axis=(0, 1)), sd, rtol=0.3)


def test_quadrature_check_warns_for_too_few_nodes():
    draws = {"beta": (("chain", "draw", "coef"), np.full((1, 3, 2), [0.0, 1.0])),
             "mu_x": (("chain", "draw", "covariate"), np.zeros((1, 3, 1))),
             "sd_x": (("chain", "draw", "covariate"), np.ones((1, 3, 1)))}  # fmt: skip
    fit = xr.DataTree.from_dict({"posterior": xr.Dataset(draws)})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert lg.model(n=2000).check_quadrature(fit) < 1e-4
    with pytest.warns(lg.QuadratureWarning, match="raise nodes"):
        assert lg.model(n=2000, nodes=3).check_quadrature(fit) > 0.05
    assert fit.attrs["quadrature_error"] > 0.05


def test_arguments_are_checked():
    with pytest.raises(ValueError, match="shares"):
        lg.model(n=10, shares=[0.5, 0.5, 0.5, 0.1])
    with pytest.raises(ValueError, match="nodes"):
        lg.model(n=10, nodes=0)
    with pytest.raises(ValueError, match="nodes must be at most 150"):
        lg.model(n=10, nodes=200)
    with pytest.raises(ValueError, match="centring"):
        lg.model(n=10, centring="data")
    with pytest.raises(ValueError, match="epsilon"):
        lg.model(n=10, epsilon=-1.0)
    model = lg.model(n=3, epsilon=1.0)
    with pytest.raises(ValueError, match="released"):
        model.to_pymc([1.0, 2.0, 3.0, 4.0, 5.0])
    with pytest.raises(ValueError, match="records"):
        model.release(np.zeros((4, 1)), np.zeros(4))
    with pytest.raises(ValueError, match="binary"):
        model.release(np.zeros((3, 1)), [0.0, 0.5, 1.0])
    with pytest.raises(ValueError, match="bounds"):
        lg.public_information(10, [(1.0, -1.0)])
    with pytest.raises(ValueError, match="released must hold the 4"):
        regression_records.fit_records(model, np.zeros(5))
    with pytest.raises(ValueError, match="epsilon is None"):
        regression_records.fit_records(lg.model(n=10, epsilon=None), np.zeros(4))
    with pytest.raises(ValueError, match="one covariate"):
        regression_records.fit_records(lg.model(n=10, x_bounds=[(-1, 1), (-1, 1)]), np.zeros(8))
    with pytest.raises(TypeError, match="LogisticRegressionModel"):
        regression_records.fit_records("model", np.zeros(4))
