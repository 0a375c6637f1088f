r"""Exact record-level data augmentation for :mod:`~ppdinfer.models.linear_regression` and
:mod:`~ppdinfer.models.logistic_regression` (one covariate).

The normal approximation of :mod:`~ppdinfer.models.linear_regression` (and of the logistic model) replaces the statistics' distribution given
theta by a Gaussian and ignores clipping. This sampler makes neither approximation: its latents are the n records
themselves (x_r, y_r), unclipped, and its target is the exact posterior

.. math::

    \pi(\theta, x, y \mid s) \propto \pi(\theta) \prod_r N(x_r; \mu_x, \sigma_x^2)\, N(y_r; \beta_0 + \beta_1 x_r,
    \sigma^2) \prod_k \mathrm{Laplace}(s_k; T_k(x, y), b_k),

T the statistics of the clipped records. A Gibbs sweep

- redraws each record from its model given theta and accepts with the Laplace likelihood ratio (the prior
  proposal of Ju, Awan, Gong & Rao 2022; compiled, ``ppdinfer.kernels.regression_records.record_pass``), and
- draws theta given the records: the coefficients given sigma and mu_x given sigma_x exactly (normal priors), the
  two scales by an independence Metropolis-Hastings step from their conditional without the HalfNormal prior (a
  gamma in 1 / scale^2; the prior's ratio accepts).

Its priors are those of the twin's ``"regression"`` parametrization: Normal(0, prior_scale) on the coefficients
and on mu_x, HalfNormal(prior_scale) on sigma and sigma_x.

For the logistic model y_r | x_r ~ Bernoulli(logit^-1(beta_0 + beta_1 x_r)) replaces the normal response (the
record pass draws y_r from it; the statistics are sum x, sum y, sum x^2, sum x y), and the coefficients given the
records, which have no conjugate law, are drawn by an independence Metropolis-Hastings step from a multivariate
t at their complete-data posterior's mode (Newton's method) with the inverse curvature there as its scale; the
priors are the logistic twin's (Normal(0, prior_scale) on the coefficients and mu_x, HalfNormal on sd_x).

Each pass costs O(n), but theta moves by about its complete-data posterior's width, 1 / sqrt(n), per draw while
the release's noise leaves it far wider, so the chain mixes ever more slowly as n grows (measured, n = 2,000,
epsilon 1: bulk ESS 9-650 in 20,000 draws, 16 s). It is the exact reference for small n and a check of the normal
approximation, not the fast path.
"""

from __future__ import annotations

from functools import partial

import numpy as np
import xarray as xr
from scipy import special

from ..kernels.regression_records import LOGISTIC, NORMAL, logistic_coefficients, record_pass
from ..rng import as_generator
from ..validation import finite_array, positive_int
from .linear_regression import LinearRegressionModel
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


def _x_step(rng, x, mu, sd, prior_scale):
    """(mu_x, sd_x) given the covariates: mu_x exactly (normal prior), then sd_x by ``_scale_draw``."""
    precision = x.size / sd**2 + 1.0 / prior_scale**2
    mu = x.sum() / sd**2 / precision + rng.standard_normal() / np.sqrt(precision)
    return mu, _scale_draw(rng, float(((x - mu) ** 2).sum()), x.size, prior_scale, sd)


def _linear_step(rng, x, y, theta, prior_scale):
    """theta = (intercept, slope, sigma, mu_x, sd_x) given the records, one Gibbs scan."""
    n = x.size
    _, _, sigma, mu, sd = theta
    design = np.column_stack([np.ones(n), x])
    precision = design.T @ design / sigma**2 + np.eye(2) / prior_scale**2
    chol = np.linalg.cholesky(precision)
    mean = np.linalg.solve(precision, design.T @ y / sigma**2)
    beta = mean + np.linalg.solve(chol.T, rng.standard_normal(2))
    sigma = _scale_draw(rng, float(((y - design @ beta) ** 2).sum()), n, prior_scale, sigma)
    return np.array([beta[0], beta[1], sigma, *_x_step(rng, x, mu, sd, prior_scale)])


def _logistic_step(rng, x, y, theta, prior_scale, df=4.0):
    """theta = (intercept, slope, -, mu_x, sd_x) given the records: the coefficients by an independence
    Metropolis-Hastings step from a bivariate t (``df``) at their complete-data posterior's mode
    (``ppdinfer.kernels.regression_records.logistic_coefficients``), then (mu_x, sd_x) as for the linear model."""
    beta = logistic_coefficients(x, y, theta[:2], prior_scale, df, int(rng.integers(2**62)))
    return np.array([beta[0], beta[1], theta[2], *_x_step(rng, x, theta[3], theta[4], prior_scale)])


def _start(model, released, rng, family):
    """theta from the released statistics' moments (clamped to sensible values) and records drawn given it."""
    n = model.n
    mx, my = released[0] / n, released[1] / n
    vx = max(released[2] / n - mx**2, 0.05)
    if family == LOGISTIC:
        theta = np.array([special.logit(np.clip(my, 0.05, 0.95)), 0.0, 1.0, mx, np.sqrt(vx)])
        x = theta[3] + theta[4] * rng.standard_normal(n)
        return theta, x, (rng.random(n) < special.expit(theta[0])).astype(float)
    slope = (released[3] / n - mx * my) / vx
    slope = float(np.clip(slope, -5.0, 5.0))
    vy = max(released[4] / n - my**2 - slope**2 * vx, 0.05)
    theta = np.array([my - slope * mx, slope, np.sqrt(vy), mx, np.sqrt(vx)])
    x = theta[3] + theta[4] * rng.standard_normal(n)
    y = theta[0] + theta[1] * x + theta[2] * rng.standard_normal(n)
    return theta, x, y


def _family(model):
    """(kernel family, theta step, statistics of records (x, y), y's bounds) of a regression model."""
    if isinstance(model, LogisticRegressionModel):
        return LOGISTIC, _logistic_step, partial(logistic_statistics, x_bounds=model.x_bounds), (0.0, 1.0)
    if isinstance(model, LinearRegressionModel):
        statistics = partial(linear_statistics, x_bounds=model.x_bounds, y_bounds=model.y_bounds)
        return NORMAL, _linear_step, statistics, model.y_bounds
    raise TypeError(f"model must be a LinearRegressionModel or LogisticRegressionModel, got {type(model).__name__}")


def fit_records(model, released, *, draws=1000, tune=500, chains=2, passes=1, random_seed=None) -> xr.DataTree:
    """The exact posterior of the regression by record-level data augmentation (module docstring).

    Parameters
    ----------
    model : LinearRegressionModel or LogisticRegressionModel
        With one covariate and a noisy release (``epsilon`` not None).
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
        ``posterior`` with ``beta`` (coef: intercept, x0), ``sigma`` (the linear model only), ``mu_x``, ``sd_x``
        (covariate: x0) and ``T`` (the exact statistics, dim statistic), named as the PyMC twin's;
        ``sample_stats.accept`` (the records' acceptance rate per draw).

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
    family, theta_step, statistics, y_bounds = _family(model)
    if model.d != 1:
        raise ValueError(f"model: record-level augmentation supports one covariate (d = 1), got d = {model.d}")
    if model.mechanism is None:
        raise ValueError("model: epsilon is None (statistics released exactly); fit the normal approximation instead")
    if model.n < 3:
        raise ValueError(f"model: n must be at least 3 for the scales' conditionals, got {model.n}")
    released = finite_array(released, "released")
    k = len(model.names)
    if released.shape != (k,):
        raise ValueError(f"released must hold the {k} statistics {model.names}, got shape {released.shape}")
    draws, tune, chains, passes = (positive_int(v, k) for v, k in ((draws, "draws"), (tune + 1, "tune"),
                                                                 (chains, "chains"), (passes, "passes")))  # fmt: skip
    tune -= 1
    bounds = np.array([*model.x_bounds[0], *y_bounds], dtype=float)
    scale = np.asarray(model.noise_scale, dtype=float)
    out = {name: np.zeros((chains, draws) + shape) for name, shape in
           (("theta", (5,)), ("T", (k,)), ("accept", ()))}  # fmt: skip
    for c, stream in enumerate(as_generator(random_seed).spawn(chains)):
        theta, x, y = _start(model, released, stream, family)
        for i in range(tune + draws):
            t = statistics(x, y)  # exact each draw: no drift
            accepted = 0
            for _ in range(passes):
                accepted += record_pass(x, y, t, released, scale, bounds, theta, int(stream.integers(2**62)), family)
            theta = theta_step(stream, x, y, theta, model.prior_scale)
            if i >= tune:
                out["theta"][c, i - tune], out["T"][c, i - tune] = theta, t
                out["accept"][c, i - tune] = accepted / (passes * model.n)
    theta = out["theta"]
    variables = {
        "beta": (("chain", "draw", "coef"), theta[..., :2]),
        "sigma": (("chain", "draw"), theta[..., 2]),
        "mu_x": (("chain", "draw", "covariate"), theta[..., 3:4]),
        "sd_x": (("chain", "draw", "covariate"), theta[..., 4:5]),
        "T": (("chain", "draw", "statistic"), out["T"]),
    }
    if family == LOGISTIC:
        del variables["sigma"]
    posterior = xr.Dataset(
        variables,
        coords={
            "chain": np.arange(chains),
            "draw": np.arange(draws),
            "coef": ["intercept", "x0"],
            "covariate": ["x0"],
            "statistic": list(model.names),
        },  # fmt: skip
    )
    stats = xr.Dataset({"accept": (("chain", "draw"), out["accept"])}, coords=posterior[["chain", "draw"]].coords)
    tree = xr.DataTree.from_dict({"posterior": posterior, "sample_stats": stats})
    tree.attrs.update(sampler="record-level data augmentation", passes=passes, n=model.n)
    return tree
