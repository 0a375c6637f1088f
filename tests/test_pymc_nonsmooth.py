"""Continuous releases without a useful gradient, and clean PyMC runs (issue 34, part 4).

- Mechanisms declare ``smooth``: False for Tulap, CanonicalNoise and a post-processed release, True for
  Laplace / Gaussian-like densities.
- ``ppdinfer.pymc.sample`` gives a continuous x observed through such a release PyMC's slice sampler (not NUTS
  with a zero gradient), says so on PyMC's logger, leaves a user's own step alone, and gets the posterior of a
  Tulap-released mean that quadrature gives (within 4 Monte Carlo standard errors); plain ``pm.sample`` warns.
- ``MechanismLogLikelihood`` implements ``pullback`` (PyTensor's FutureWarning about ``grad`` is gone) and keeps
  the central-difference gradient; no warning (object mode, pullback) leaks from ``ppdinfer.pymc.sample``,
  ``pm.sample`` or ``pm.sample_posterior_predictive`` on a Release.
"""

from __future__ import annotations

import logging
import warnings

import arviz as az
import numpy as np
import pymc as pm
import pytensor.tensor as pt
import pytest
from pymc.sampling.mcmc import assign_step_methods
from pymc.step_methods import STEP_METHODS
from pytensor.graph.op import Op
from scipy import stats

import ppdinfer.pymc as ppm
from ppdinfer import mechanisms
from ppdinfer.mechanisms.canonical import CanonicalNoise
from ppdinfer.mechanisms.semidp import NormBallMechanism
from ppdinfer.pymc import AugmentationWarning, MechanismLogLikelihood
from ppdinfer.pymc._slice import SeparableSlice
from ppdinfer.pymc.sampling import gradient_free_steps, nonsmooth_latents

QUIET = dict(progressbar=False, compute_convergence_checks=False)


def tulap_model(y, epsilon=1.0) -> pm.Model:
    """mu ~ Normal(0, 10), x_i ~ Normal(mu, 1), y_i = x_i + Tulap(epsilon) noise."""
    with pm.Model() as model:
        mu = pm.Normal("mu", 0.0, 10.0)
        x = pm.Normal("x", mu, 1.0, shape=len(y))
        ppm.Release("y", mechanisms.Tulap(epsilon), x, observed=y)
    return model


def exact_mu(y, epsilon=1.0):
    """Mean and sd of mu | y by quadrature: x_i integrated out in closed form (Tulap's density is the
    discrete Laplace pmf on unit intervals), then a grid over mu."""
    b, k = np.exp(-epsilon), np.arange(-60, 61)
    pmf = (1 - b) / (1 + b) * b ** np.abs(k)
    grid = np.linspace(-8.0, 10.0, 8001)
    upper = np.asarray(y)[:, None, None] - k[None, :, None] + 0.5 - grid
    log_post = np.log(np.einsum("k,ukg->ug", pmf, stats.norm.cdf(upper) - stats.norm.cdf(upper - 1))).sum(0)
    weights = np.exp(log_post + stats.norm.logpdf(grid, 0, 10) - (log_post + stats.norm.logpdf(grid, 0, 10)).max())
    weights /= weights.sum()
    mean = weights @ grid
    return mean, np.sqrt(weights @ (grid - mean) ** 2)


def test_mechanisms_declare_whether_their_gradient_helps():
    noise = mechanisms.DiscreteLaplace(1.0)
    clipped = mechanisms.PostProcessedRelease(noise, lambda y, z: np.maximum(y, 0), box=np.arange(-30, 40)[:, None])
    for mechanism in (mechanisms.Tulap(1.0), CanonicalNoise.gaussian(1.0), clipped):
        assert mechanism.smooth is False, mechanism
    for mechanism in (mechanisms.Laplace(1.0), mechanisms.Gaussian(1.0), NormBallMechanism(1.0, 1.0, norm=2)):
        assert mechanism.smooth is True, mechanism


def test_sample_gives_a_tulap_released_x_the_slice_step_and_says_so(caplog):
    model = tulap_model([0.3, 1.4, -0.2])
    assert [rv.name for rv in nonsmooth_latents(model)] == ["x"]
    with caplog.at_level(logging.INFO, logger="pymc"), model:
        idata = ppm.sample(draws=30, tune=30, chains=1, random_seed=1, **QUIET)
    assert "SeparableSlice (gradient-free): [x], observed through y (Tulap(" in caplog.text
    assert "NUTS: [mu]" in caplog.text and "SeparableSlice: [x]" in caplog.text
    assert {"slice_evaluations", "step_size"} <= set(idata["sample_stats"].data_vars)  # slice's and NUTS's stats
    with model:  # a user's own step on x stays: no second step on it
        assert gradient_free_steps(model, taken=pm.Metropolis([model["x"]]).vars) == []


def test_a_release_of_an_expression_of_x_gets_pymc_slice_and_the_same_posterior():
    """x + 0 is not x itself: no SeparableSlice, PyMC's Slice (one coordinate at a time), and the posterior of
    the slice-per-coordinate step agrees with SeparableSlice's and quadrature's."""
    y = mechanisms.Tulap(1.0).release(np.random.default_rng(5).normal(1.0, 1.0, 4), random_seed=6)
    with pm.Model() as model:
        mu = pm.Normal("mu", 0.0, 10.0)
        x = pm.Normal("x", mu, 1.0, shape=len(y))
        ppm.Release("y", mechanisms.Tulap(1.0), x + 0.0, observed=y)
    with model:
        assert [type(step).__name__ for step in gradient_free_steps(model)] == ["Slice"]
        idata = ppm.sample(draws=600, tune=300, chains=2, cores=1, random_seed=4, **QUIET)
    mean, _ = exact_mu(y)
    mcse = float(az.mcse(idata["posterior"], var_names=["mu"])["mu"])
    assert abs(float(idata["posterior"]["mu"].mean()) - mean) <= 4 * mcse


def test_separable_slice_refuses_what_it_cannot_update():
    with pm.Model() as model:
        x = pm.MvNormal("x", np.zeros(2), np.eye(2))
        ppm.Release("y", mechanisms.Tulap(1.0), x, observed=[0.3, 1.2])
        with pytest.raises(ValueError, match="not conditionally independent"):
            SeparableSlice([x])
    assert [type(step).__name__ for step in gradient_free_steps(model)] == ["Slice"]


def test_smooth_generic_release_keeps_nuts():
    with pm.Model() as model:
        x = pm.Normal("x", 0.0, 3.0, shape=2)
        ppm.Release("y", NormBallMechanism(1.0, 1.0, norm=2), x, observed=[0.5, 1.0])
    assert nonsmooth_latents(model) == [] and gradient_free_steps(model) == []


def test_plain_pm_sample_warns_that_nuts_steps_blind():
    model = tulap_model([0.3, 1.4])
    with model, pytest.warns(AugmentationWarning, match=r"x is continuous.*ppdinfer\.pymc\.sample"):
        assign_step_methods(model, methods=STEP_METHODS)


def test_tulap_released_mean_matches_quadrature():
    y = mechanisms.Tulap(1.0).release(np.random.default_rng(5).normal(1.0, 1.0, 8), random_seed=6)
    mean, sd = exact_mu(y)
    with tulap_model(y):
        idata = ppm.sample(draws=1000, tune=400, chains=2, cores=1, random_seed=3, **QUIET)
    draws = idata["posterior"]["mu"]
    mcse = float(az.mcse(idata["posterior"], var_names=["mu"])["mu"])
    assert float(az.ess(idata["posterior"], var_names=["mu"])["mu"]) > 150
    assert abs(float(draws.mean()) - mean) <= 4 * mcse, (float(draws.mean()), mean, mcse)
    assert abs(float(draws.std()) / sd - 1) < 0.2, (float(draws.std()), sd)


def test_pullback_is_the_central_difference_gradient():
    assert MechanismLogLikelihood.grad is Op.grad and MechanismLogLikelihood.L_op is Op.L_op  # pullback only
    x = pt.dvector("x")
    y = np.array([1.5, 3.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        gradient = pt.grad(MechanismLogLikelihood(mechanisms.Laplace(2.0))(y, x), x)
        value = gradient.eval({x: [1.0, 3.5]})
    np.testing.assert_allclose(value, [2.0, -2.0], rtol=1e-6)  # rate 2: d/dx -2 |y - x| = 2 sign(y - x)


def test_no_warning_leaks_from_plain_pm_sample_on_a_generic_release():
    """Every warning is an error here: PyTensor's pullback FutureWarning and numba's object-mode UserWarning
    (for the Python log density, its central differences and the Python release draws) must not appear."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pm.Model():
            x = pm.Normal("x", 0.0, 3.0, shape=2)
            ppm.Release("y", NormBallMechanism(1.0, 1.0, norm=2), x, observed=[0.5, 1.0])
            idata = pm.sample(draws=20, tune=20, chains=1, random_seed=1, nuts_sampler="pymc", **QUIET)
            predictive = pm.sample_posterior_predictive(idata, random_seed=2, progressbar=False)
    assert predictive["posterior_predictive"]["y"].shape == (1, 20, 2)


def test_no_warning_leaks_from_ppdinfer_sample():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with tulap_model([0.3, 1.4]):
            idata = ppm.sample(draws=20, tune=20, chains=1, random_seed=1, **QUIET)
            predictive = pm.sample_posterior_predictive(idata, random_seed=2, progressbar=False)
    assert predictive["posterior_predictive"]["y"].shape == (1, 20, 2)


def test_release_draws_under_numba_are_the_mechanisms():
    draws = pm.draw(ppm.Release.dist(mechanisms.Gaussian(2.0), np.zeros(3)), draws=2000, random_seed=1)
    assert draws.shape == (2000, 3) and np.all(np.abs(draws.std(axis=0) - 2.0) < 0.15)
    counts = pm.draw(ppm.Release.dist(mechanisms.DiscreteLaplace(1.0), 5), draws=200, random_seed=1)
    again = pm.draw(ppm.Release.dist(mechanisms.DiscreteLaplace(1.0), 5), draws=200, random_seed=1)
    assert counts.dtype == np.int64 and np.array_equal(counts, again)  # seeded from the graph's generator
