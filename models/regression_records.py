r"""Exact record-level data augmentation for :mod:`~ppdinfer.models.linear_regression` (d covariates) and
:mod:`~ppdinfer.models.logistic_regression` (one covariate).

The normal approximation of :mod:`~ppdinfer.models.linear_regression` (and of the logistic model) replaces the statistics' distribution given
theta by a Gaussian and ignores clipping. This sampler makes neither approximation: its latents are the n records
themselves (x_r, y_r), unclipped, and its target is the exact posterior

.. math::

    \pi(\theta, x, y \mid s) \propto \pi(\theta) \prod_r N(x_r; \mu_x, \Sigma_x)\, N(y_r; \beta_0 + x_r^\top \beta_1,
    \sigma^2) \prod_k \mathrm{Laplace}(s_k; T_k(x, y), b_k),

T the statistics of the clipped records. A Gibbs sweep

- redraws each record from its model given theta and accepts with the Laplace likelihood ratio (the prior
  proposal of Ju, Awan, Gong & Rao 2022; compiled, ``ppdinfer.kernels.regression_records.record_pass``), and
- draws theta given the records: the coefficients given sigma and mu_x given Sigma_x exactly (normal priors), the
  scales by an independence Metropolis-Hastings step from their conditional without the HalfNormal prior (a
  gamma in 1 / scale^2; the prior's ratio accepts). For d > 1, Sigma_x likewise: proposed from its conditional
  under the prior |Sigma_x|^(-d/2) (inverse-Wishart, n - 1 degrees of freedom, scale the centred records'
  cross-products; for d = 1 the scales' proposal) and accepted with the ratio of the true prior to that one.
  With Sigma_x = D R D, D the sds, the prior's density is prod_i HN(D_ii) LKJ_2(R) / (2^d prod_i D_ii^d) (the
  Jacobian of (D, R) -> Sigma_x), so that ratio is prod_i HN(D_ii) det(R)^(1 + d/2).

Its priors are those of the twin's ``"regression"`` parametrization: Normal(0, prior_scale) on the coefficients
and on mu_x, HalfNormal(prior_scale) on sigma and the sds of x, and for d > 1 an LKJ(2) prior on x's
correlations.

For the logistic model y_r | x_r ~ Bernoulli(logit^-1(beta_0 + beta_1 x_r)) replaces the normal response (the
record pass draws y_r from it; the statistics are sum x, sum y, sum x^2, sum x y), and the coefficients given the
records, which have no conjugate law, are drawn by an independence Metropolis-Hastings step from a multivariate
t at their complete-data posterior's mode (Newton's method) with the inverse curvature there as its scale; the
priors are the logistic twin's (Normal(0, prior_scale) on the coefficients and mu_x, HalfNormal on sd_x).

Each pass costs O(n d^2), but theta moves by about its complete-data posterior's width, 1 / sqrt(n), per draw while
the release's noise leaves it far wider, so the chain mixes ever more slowly as n grows (measured, n = 2,000,
epsilon 1: bulk ESS 9-650 in 20,000 draws, 16 s). It is the exact reference for small n and a check of the normal
approximation, not the fast path.
"""

from __future__ import annotations

from functools import partial

import numpy as np
import xarray as xr
from scipy import special, stats

from ..kernels.regression_records import LOGISTIC, NORMAL, logistic_coefficients, record_pass
from ..rng import as_generator
from ..validation import finite_array, positive_int
from .linear_regression import LinearRegressionModel, _pairs
from .linear_regression import statistics as linear_statistics
from .logistic_regression import LogisticRegressionModel
from .logistic_regression import statistics as logistic_statistics

__all__ = ["fit_records"]


def _scale_draw(rng, residual_ss, n, prior_scale, current):
    """An independence MH draw of a scale given its residual sum of squares under a HalfNormal(prior_scale) prior:
    proposal 1 / scale^2 ~ Gamma((n - 1) / 2, rate residual_ss / 2), accepted with the prior's remaining ratio."""
    tau = rng.gamma(0.5 * (n - 1), 2.0 / max(residual_ss, 1e-300))
    log_ratio = (-1.0 / tau + 1.0 / current**-2) / (2.0 * prior_scale**2)
    return tau**-0.5 if np.log(rng.random()) < log_ratio else current


def _log_cov_weight(cov, prior_scale):
    """log of the LKJ(2) x HalfNormal(prior_scale) prior density of a covariance over the inverse-Wishart proposal's
    prior |cov|^(-d/2): sum_i log HN(sd_i) + (1 + d / 2) log det(corr), up to a constant (module docstring)."""
    sd = np.sqrt(np.diag(cov))
    corr = cov / np.outer(sd, sd)
    return -0.5 * float((sd**2).sum()) / prior_scale**2 + (1.0 + 0.5 * len(sd)) * np.linalg.slogdet(corr)[1]


def _cov_draw(rng, centred, prior_scale, current):
    """An independence MH draw of x's covariance (d > 1) given the centred records: proposal inverse-Wishart with
    n - 1 degrees of freedom and scale centred' centred, accepted with the ratio of :func:`_log_cov_weight`."""
    proposal = np.atleast_2d(stats.invwishart.rvs(df=len(centred) - 1, scale=centred.T @ centred, random_state=rng))
    log_ratio = _log_cov_weight(proposal, prior_scale) - _log_cov_weight(current, prior_scale)
    return proposal if np.log(rng.random()) < log_ratio else current


def _x_step(rng, x, cov, prior_scale):
    """(mu_x, cov_x) given the covariates x (n, d): mu_x exactly (normal prior), then the covariance by
    ``_scale_draw`` (d = 1) or ``_cov_draw``."""
    n, d = x.shape
    inverse = np.linalg.inv(cov)
    precision = n * inverse + np.eye(d) / prior_scale**2
    chol = np.linalg.cholesky(precision)
    mu = np.linalg.solve(precision, inverse @ x.sum(axis=0)) + np.linalg.solve(chol.T, rng.standard_normal(d))
    if d == 1:
        cov = np.array([[_scale_draw(rng, float(((x - mu) ** 2).sum()), n, prior_scale, np.sqrt(cov[0, 0])) ** 2]])
    else:
        cov = _cov_draw(rng, x - mu, prior_scale, cov)
    return mu, cov


def _linear_step(rng, x, y, theta, prior_scale):
    """theta = (beta, sigma, mu_x, cov_x) given the records (x of shape (n, d)), one Gibbs scan."""
    n, d = x.shape
    _, sigma, _, cov = theta
    design = np.column_stack([np.ones(n), x])
    precision = design.T @ design / sigma**2 + np.eye(d + 1) / prior_scale**2
    chol = np.linalg.cholesky(precision)
    mean = np.linalg.solve(precision, design.T @ y / sigma**2)
    beta = mean + np.linalg.solve(chol.T, rng.standard_normal(d + 1))
    sigma = _scale_draw(rng, float(((y - design @ beta) ** 2).sum()), n, prior_scale, sigma)
    return (beta, sigma, *_x_step(rng, x, cov, prior_scale))


def _logistic_step(rng, x, y, theta, prior_scale, df=4.0):
    """theta = (beta, -, mu_x, cov_x) given the records (one covariate): the coefficients by an independence
    Metropolis-Hastings step from a bivariate t (``df``) at their complete-data posterior's mode
    (``ppdinfer.kernels.regression_records.logistic_coefficients``), then (mu_x, cov_x) as for the linear model."""
    beta, sigma, _, cov = theta
    beta = np.array(logistic_coefficients(x[:, 0], y, beta, prior_scale, df, int(rng.integers(2**62))))
    return (beta, sigma, *_x_step(rng, x, cov, prior_scale))


def _start(model, released, rng, family):
    """theta from the released statistics' moments (clamped to sensible values) and records drawn given it."""
    n, d = model.n, model.d
    if family == LOGISTIC:
        mx, my = released[0] / n, released[1] / n
        vx = max(released[2] / n - mx**2, 0.05)
        theta = (np.array([special.logit(np.clip(my, 0.05, 0.95)), 0.0]), 1.0, np.array([mx]), np.array([[vx]]))
        x = mx + np.sqrt(vx) * rng.standard_normal((n, 1))
        return theta, x, (rng.random(n) < special.expit(theta[0][0])).astype(float)
    moments = np.eye(d + 2)  # E[w w'], w = (1, x, y), from the released sums
    for value, (j, k) in zip(released / n, _pairs(d)):
        moments[j, k] = moments[k, j] = value
    mean, cov = moments[0, 1:], moments[1:, 1:] - np.outer(moments[0, 1:], moments[0, 1:])
    values, vectors = np.linalg.eigh(cov[:d, :d])
    cov_x = (vectors * np.maximum(values, 0.05)) @ vectors.T
    slopes = np.clip(np.linalg.solve(cov_x, cov[:d, d]), -5.0, 5.0)
    sigma = np.sqrt(max(cov[d, d] - slopes @ cov_x @ slopes, 0.05))
    theta = (np.concatenate([[mean[d] - mean[:d] @ slopes], slopes]), sigma, mean[:d], cov_x)
    x = rng.multivariate_normal(theta[2], cov_x, size=n)
    y = theta[0][0] + x @ slopes + sigma * rng.standard_normal(n)
    return theta, x, y


def _family(model):
    """(kernel family, theta step, statistics of records (x, y), y's bounds, released pairs) of a regression model."""
    if isinstance(model, LogisticRegressionModel):  # y binary: y^2 = y is not released
        statistics = partial(logistic_statistics, x_bounds=model.x_bounds)
        return LOGISTIC, _logistic_step, statistics, (0.0, 1.0), _pairs(model.d)[:-1]
    if isinstance(model, LinearRegressionModel):
        statistics = partial(linear_statistics, x_bounds=model.x_bounds, y_bounds=model.y_bounds)
        return NORMAL, _linear_step, statistics, model.y_bounds, _pairs(model.d)
    raise TypeError(f"model must be a LinearRegressionModel or LogisticRegressionModel, got {type(model).__name__}")


def fit_records(model, released, *, draws=1000, tune=500, chains=2, passes=1, random_seed=None) -> xr.DataTree:
    """The exact posterior of the regression by record-level data augmentation (module docstring).

    Parameters
    ----------
    model : LinearRegressionModel or LogisticRegressionModel
        With a noisy release (``epsilon`` not None); a logistic model with one covariate.
    released : array_like
        The released statistics, in ``model.names``' order.
    draws, tune, chains : int
        Kept draws, discarded sweeps and independent chains.
    passes : int
        Record passes per theta update (one draw).
    random_seed : int, Generator or None

    Returns
    -------
    xarray.DataTree
        ``posterior`` with ``beta`` (coef: intercept, x0, ...), ``sigma`` (the linear model only), ``mu_x`` and ``sd_x`` (covariate), for
        d > 1 ``corr_x`` (covariate, covariate_bis: x's correlations), and ``T`` (the exact statistics, dim
        statistic), named as the PyMC twin's; ``sample_stats.accept`` (the records' acceptance rate per draw).

    Examples
    --------
    >>> from ppdinfer.models import linear_regression, regression_records
    >>> model = linear_regression.model(n=50, epsilon=1.0)
    >>> x, y = linear_regression.synthetic_records(50, random_seed=0)
    >>> fit = regression_records.fit_records(model, model.release(x, y, random_seed=1), draws=200, tune=100,
    ...                                      random_seed=2)
    >>> fit["posterior"]["beta"].shape
    (2, 200, 2)
    """
    family, theta_step, statistics, y_bounds, pairs = _family(model)
    if family == LOGISTIC and model.d != 1:
        raise ValueError(f"model: record-level augmentation of the logistic model supports one covariate (d = 1), "
                         f"got d = {model.d}")  # fmt: skip
    if model.mechanism is None:
        raise ValueError("model: epsilon is None (statistics released exactly); fit the normal approximation instead")
    if model.n < model.d + 2:
        raise ValueError(f"model: n must be at least d + 2 = {model.d + 2} for the scales' conditionals, got {model.n}")
    released = finite_array(released, "released")
    k = len(model.names)
    if released.shape != (k,):
        raise ValueError(f"released must hold the {k} statistics {model.names}, got shape {released.shape}")
    draws, tune, chains, passes = (positive_int(v, k) for v, k in ((draws, "draws"), (tune + 1, "tune"),
                                                                 (chains, "chains"), (passes, "passes")))  # fmt: skip
    tune -= 1
    d = model.d
    lower, upper = np.vstack([model.x_bounds, y_bounds]).T.copy()
    pairs = np.array(pairs, dtype=np.int64)
    scale = np.asarray(model.noise_scale, dtype=float)
    out = {name: np.zeros((chains, draws) + shape) for name, shape in
           (("beta", (d + 1,)), ("sigma", ()), ("mu_x", (d,)), ("cov_x", (d, d)), ("T", (k,)), ("accept", ()))}  # fmt: skip
    for c, stream in enumerate(as_generator(random_seed).spawn(chains)):
        theta, x, y = _start(model, released, stream, family)
        for i in range(tune + draws):
            t = statistics(x, y)  # exact each draw: no drift
            beta, sigma, mu, cov = theta
            chol = np.linalg.cholesky(cov)
            accepted = 0
            for _ in range(passes):
                accepted += record_pass(x, y, t, released, scale, lower, upper, pairs, beta, sigma, mu, chol,
                                        int(stream.integers(2**62)), family)  # fmt: skip
            theta = theta_step(stream, x, y, theta, model.prior_scale)
            if i >= tune:
                for name, value in zip(("beta", "sigma", "mu_x", "cov_x", "T"), (*theta, t)):
                    out[name][c, i - tune] = value
                out["accept"][c, i - tune] = accepted / (passes * model.n)
    sd_x = np.sqrt(np.diagonal(out["cov_x"], axis1=-2, axis2=-1))
    covariates = [f"x{j}" for j in range(d)]
    variables = {
        "beta": (("chain", "draw", "coef"), out["beta"]),
        "sigma": (("chain", "draw"), out["sigma"]),
        "mu_x": (("chain", "draw", "covariate"), out["mu_x"]),
        "sd_x": (("chain", "draw", "covariate"), sd_x),
        "T": (("chain", "draw", "statistic"), out["T"]),
    }
    if family == LOGISTIC:
        del variables["sigma"]
    if d > 1:
        corr = out["cov_x"] / (sd_x[..., :, None] * sd_x[..., None, :])
        variables["corr_x"] = (("chain", "draw", "covariate", "covariate_bis"), corr)
    posterior = xr.Dataset(
        variables,
        coords={
            "chain": np.arange(chains),
            "draw": np.arange(draws),
            "coef": ["intercept", *covariates],
            "covariate": covariates,
            **({"covariate_bis": covariates} if d > 1 else {}),
            "statistic": list(model.names),
        },
    )
    sample_stats = xr.Dataset(
        {"accept": (("chain", "draw"), out["accept"])}, coords=posterior[["chain", "draw"]].coords
    )
    tree = xr.DataTree.from_dict({"posterior": posterior, "sample_stats": sample_stats})
    tree.attrs.update(sampler="record-level data augmentation", passes=passes, n=model.n)
    return tree
