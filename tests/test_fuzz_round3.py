"""The third fuzz round's input-handling findings (issue 32): hangs, silent wrong answers, obscure errors.

One test per finding: each failed (hung, answered wrongly, or raised an unhelpful error) before its fix.
"""

from __future__ import annotations

import time
import warnings

import numpy as np
import pymc as pm
import pytest
from scipy import stats

import ppdinfer as pp
import ppdinfer.pymc as ppm
from ppdinfer import generators, mechanisms, priors
from ppdinfer.frequentist import binomial_test
from ppdinfer.privacy import kantorovich_plan, smallest_laplace_scale
from ppdinfer.projection import L1ConvexCombination
from ppdinfer.pymc import Release
from ppdinfer.rng import as_generator

# --- hangs --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("epsilon", [1e-16, 1e-300])
def test_smallest_laplace_scale_refuses_an_epsilon_below_the_audits_resolution(epsilon):
    plan = kantorovich_plan([0.2, 0.225, 0.5, 0.075, 0], [0, 0.075, 0.5, 0.225, 0.2], [1, 2, 3, 4, 5])
    start = time.perf_counter()
    with pytest.raises(ValueError, match="epsilon=.*below what the float64 audit resolves"):
        smallest_laplace_scale([plan], epsilon)
    assert time.perf_counter() - start < 5
    assert smallest_laplace_scale([plan], 1e-12) == pytest.approx(1.1e12, rel=1e-4)  # still answered


def test_per_unit_rejection_at_tiny_acceptance_respects_the_budget_and_warns():
    """Acceptance ~1e-11 in unit 0: the time budget stops the run with a BudgetWarning, as the joint path does."""
    model = pp.PPDModel(
        priors.Beta(1, 1, size=2), generators.Binomial([10**12, 10]), mechanisms.Laplace(1.0), names="p"
    )
    start = time.perf_counter()
    with pytest.warns(pp.BudgetWarning, match="stopped by max_seconds.*in unit 0 of 2"):
        result = pp.rejection_sample(model, [4e11, 3], draws=100, max_seconds=1.5, random_seed=1, progressbar=False)
    assert time.perf_counter() - start < 30
    assert result.attrs["per_unit"] and not result.attrs["complete"]


# --- silent wrong answers --------------------------------------------------------------------------------


def test_discrete_release_of_a_non_integer_x_is_refused():
    with pm.Model(), pytest.raises(ValueError, match="integer-valued x"):
        Release("y", mechanisms.DiscreteLaplace(1.0), pm.Normal("x", 5, 1), observed=4)
    with pm.Model(), pytest.raises(ValueError, match="integer-valued x"):
        Release("y", mechanisms.DiscreteGaussian(1.0), pm.Gamma("x", 5, 1), observed=4)
    with pm.Model(), pytest.raises(ValueError, match="integer-valued x"):
        ppm.DiscreteLaplace("y", mu=pm.Normal("x", 5, 1), epsilon=1.0, observed=4)
    with pm.Model(), pytest.raises(ValueError, match="integer-valued x.*13.7"):
        Release("y", mechanisms.DiscreteLaplace(1.0), 13.7, observed=4)
    with pm.Model():  # integer latents and whole constants still work
        Release("y", mechanisms.DiscreteLaplace(1.0), pm.Poisson("x", 5), observed=4)
        Release("w", mechanisms.DiscreteLaplace(1.0), 13.0, observed=4)


def test_set_data_of_an_invalid_release_is_refused_where_the_data_is_read():
    with pm.Model() as model:
        p = pm.Beta("p", 1, 1)
        x = pm.Binomial("x", n=10, p=p)
        y = pm.Data("y_data", 4.0)
        Release("y", mechanisms.DiscreteLaplace(1.0), x, observed=y)
    logp = model.compile_logp()
    assert np.isfinite(logp({"p_logodds__": 0.0, "x": 4}))
    pm.set_data({"y_data": 4.5}, model=model)  # PyMC would read it as 4
    with pytest.raises(AssertionError, match="integers for the discrete mechanism"):
        model.compile_logp()({"p_logodds__": 0.0, "x": 4})
    pm.set_data({"y_data": np.nan}, model=model)
    with pytest.raises(AssertionError, match="finite numbers"):
        model.compile_logp()({"p_logodds__": 0.0, "x": 4})


def test_laplace_release_too_large_for_float64_against_the_noise_is_refused():
    """At y = 1e17, y - x rounds to multiples of 16: the x means came out 26.3 against the exact 28.35."""
    model = pp.PPDModel(priors.Gamma(30.0, 1.0), generators.Poisson(), mechanisms.Laplace(1.0), names="rate")
    for y in (1e17, 1e300):
        with pytest.raises(ValueError, match="too large for the noise"):
            pp.importance_sample(model, y, draws=100, random_seed=1)
    with pm.Model(), pytest.raises(ValueError, match="too large for the noise"):
        Release("y", mechanisms.Laplace(1.0), pm.Normal("x", 0, 1), observed=1e17)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pp.importance_sample(model, 1e6, draws=100, random_seed=1)  # a large y the noise still resolves


def test_hierarchical_beta_refuses_a_mean_prior_beyond_zero_one():
    with pytest.raises(ValueError, match="mean must be a scalar priors.Beta"):
        priors.HierarchicalBeta(mean=priors.Gamma(2.0, 1.0), concentration=priors.Gamma(1.0, 1.0), size=3)


def test_l1_convex_combination_refuses_non_count_histograms():
    with pytest.raises(ValueError, match="x must be non-negative"):
        L1ConvexCombination(1.0).release([-5, 3])
    with pytest.raises(ValueError, match="x must hold integers"):
        L1ConvexCombination(1.0).release([2.5, 3])
    assert L1ConvexCombination(1.0).release([3, 5], random_seed=1).sum() == 8


def test_latent_binomial_with_a_non_integer_n_is_refused():
    with pm.Model(), pytest.raises(ValueError, match="non-integer number of trials n = 2.5"):
        n = pm.Data("n", 2.5)
        x = pm.Binomial("x", n=n, p=pm.Beta("p", 1, 1))
        Release("y", mechanisms.DiscreteLaplace(1.0), x, observed=2)


@pytest.mark.parametrize(
    "call, name",
    [
        (lambda: generators.Binomial(True), "n"),
        (lambda: priors.Gamma(size=True), "size"),
        (lambda: binomial_test(3.0, n=True, theta0=0.5, epsilon=1.0), "n"),
        (lambda: as_generator(True), "random_seed"),
        (lambda: ppm.sample(pm.Model(), conjugate="no"), "conjugate"),
    ],
)
def test_booleans_are_not_taken_as_numbers_or_flags(call, name):
    with pytest.raises(ValueError, match=name):
        call()


# --- obscure errors --------------------------------------------------------------------------------------


@pytest.mark.parametrize("epsilon", [0.0, -1.0, float("nan")])
def test_pymc_noise_distributions_check_constant_parameters(epsilon):
    with pytest.raises(ValueError, match="DiscreteLaplace: epsilon must be a positive finite number"):
        ppm.DiscreteLaplace.dist(mu=3, epsilon=epsilon)
    with pytest.raises(ValueError, match="WassersteinNaive: epsilon must be a positive finite number"):
        ppm.WassersteinNaive.dist(mu=np.array([3, 4]), epsilon=epsilon, sigma=1.0)
    with pytest.raises(ValueError, match="DiscreteGaussian: sigma must be a positive finite number"):
        ppm.DiscreteGaussian.dist(mu=3, sigma=epsilon)


def test_release_that_no_x_allows_is_named_up_front():
    clipped = mechanisms.PostProcessedRelease(
        mechanisms.DiscreteLaplace(1.0), lambda y, z=None: np.maximum(y, 0), np.arange(-40, 91)[:, None]
    )
    with pm.Model(), pytest.raises(ValueError, match="cannot be released whatever x is.*outside the post-processing"):
        Release("y", clipped, pm.Binomial("x", n=50, p=0.5), observed=-3)


def test_binomial_data_model_refuses_a_prior_beyond_zero_one_by_name():
    with pytest.raises(ValueError, match=r"prior scipy.stats.norm\(loc=0.5, scale=0.1\) has support"):
        pp.PPDModel(stats.norm(loc=0.5, scale=0.1), generators.Binomial(10), mechanisms.Laplace(1.0))
    with pytest.raises(ValueError, match=r"prior Gamma\(shape=2.0, rate=1.0\) has support \[0, inf\]"):
        pp.PPDModel(priors.Gamma(2.0, 1.0), generators.Binomial(10), mechanisms.Laplace(1.0))
    pp.PPDModel(stats.beta(2, 3), generators.Binomial(10), mechanisms.Laplace(1.0))


@pytest.mark.parametrize(
    "arguments, name",
    [
        ({"draws": 0}, "draws"),
        ({"chains": 0}, "chains"),
        ({"random_seed": "abc"}, "random_seed"),
        ({"step": "nuts"}, "step"),
        ({"tune": -1}, "tune"),
    ],
)
def test_pymc_sample_checks_its_arguments_before_pymc(arguments, name):
    with pm.Model() as model:
        pm.Normal("theta", 0, 1)
    with pytest.raises(ValueError, match=f"^{name} must"):
        ppm.sample(model, progressbar=False, **arguments)


def test_gaussian_from_epsilon_and_delta_names_the_calibration():
    with pytest.raises(TypeError, match=r"Gaussian.from_epsilon_delta\(epsilon, delta"):
        mechanisms.Gaussian(epsilon=1, delta=1e-6)
    assert mechanisms.Gaussian(2.0).sigma == 2.0
