"""A latent with two children (its release and another likelihood term) against hand-summed posteriors (issue 44).

The epidemiologist's model in small: counties' populations N_i released with discrete Gaussian noise, deaths d_i
observed exactly, d_i ~ Poisson(2 + r N_i) with one rate r = exp(lr). The reference is a quadrature over lr
with exact sums over each N_i; a step (or summing out) that dropped the deaths' term from N's update would put N's
posterior at p(N | y) instead, several posterior standard deviations away.
"""

from __future__ import annotations

import warnings

import arviz as az
import numpy as np
import pymc as pm
import pytensor.tensor as pt
import pytest
from scipy import special, stats

import ppdinfer.pymc as ppm
from ppdinfer.mechanisms import Gaussian
from ppdinfer.pymc import DiscreteGaussian
from ppdinfer.pymc.children import affine_children

PRIOR_MEAN, SIGMA = 60.0, 8.0
Y = np.array([50.0, 71.0, 62.0])
DEATHS = np.array([75, 52, 82])  # mean 2 + r N near 62: the deaths pull N against its release
LR_SD = 0.1
GRID_N = np.arange(0, 221)


def epidemiologist():
    with pm.Model() as model:
        lr = pm.Normal("lr", 0.0, LR_SD)
        n = pm.Poisson("N", PRIOR_MEAN, shape=Y.size)
        DiscreteGaussian("y", mu=n, sigma=SIGMA, observed=Y)
        pm.Poisson("d", 2.0 + pt.exp(lr) * n, observed=DEATHS)
    return model


def reference():
    """Posterior means of lr and of each N_i: a quadrature over lr, exact sums over N."""
    lr = np.linspace(-8 * LR_SD, 8 * LR_SD, 1601)
    log_prior_n = stats.poisson.logpmf(GRID_N, PRIOR_MEAN) - (Y[:, None] - GRID_N) ** 2 / (2 * SIGMA**2)
    mean = 2.0 + np.exp(lr)[:, None, None] * GRID_N  # (lr, county, N)
    terms = log_prior_n[None] + stats.poisson.logpmf(DEATHS[None, :, None], mean)
    per_county = special.logsumexp(terms, axis=2)  # (lr, county)
    log_post = stats.norm.logpdf(lr, 0, LR_SD) + per_county.sum(axis=1)
    weight = np.exp(log_post - special.logsumexp(log_post))
    n_given_lr = np.exp(terms - per_county[..., None]) @ GRID_N  # E[N_i | lr]
    return float(weight @ lr), weight @ n_given_lr


def _check(idata, names=("lr", "N")):
    lr_mean, n_mean = reference()
    expected = {"lr": np.array([lr_mean]), "N": n_mean}
    for name in names:
        draws = idata.posterior[name]
        got = np.atleast_1d(draws.mean(("chain", "draw")).values)
        mcse = np.atleast_1d(az.mcse(idata, var_names=[name])[name].values)
        assert np.all(np.abs(got - expected[name]) < 4.5 * mcse + 1e-9), (name, got, expected[name], mcse)


@pytest.mark.parametrize("method", ["augment", "marginalize"])
def test_two_children_match_the_hand_summed_posterior(method):
    with epidemiologist(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        idata = ppm.sample(draws=1000, tune=500, chains=2, cores=1, method=method, random_seed=3, progressbar=False)
    assert idata.posterior.attrs["ppdinfer_method"] == method
    np.testing.assert_array_equal(idata["observed_data"]["d"].values, DEATHS)  # the child kept, summed out or not
    if method == "augment":
        assert idata.posterior.attrs["ppdinfer_augmentation"] == "N: the compiled kernel (with the children d)"
    _check(idata)
    # the deaths move N: the posterior is not p(N | y) (what a step without the child's term would sample)
    alone = stats.poisson.logpmf(GRID_N, PRIOR_MEAN) - (Y[:, None] - GRID_N) ** 2 / (2 * SIGMA**2)
    without = np.exp(alone - special.logsumexp(alone, axis=1, keepdims=True)) @ GRID_N
    assert np.all(np.abs(reference()[1] - without) > 3.0)


def binomial_model(child):
    with pm.Model() as model:
        n = pm.Poisson("N", 30.0, shape=2)
        DiscreteGaussian("y", mu=n, sigma=4.0, observed=[26.0, 35.0])
        if child == "binomial":
            pm.Binomial("d", n=n, p=0.6, observed=[21, 17])
        else:
            pm.Normal("d", mu=1.0 + 0.5 * n, sigma=1.5, observed=[16.0, 14.0])
    return model


@pytest.mark.parametrize("child", ["binomial", "normal"])
def test_binomial_and_normal_children_match_enumeration(child):
    grid = np.arange(0, 121)
    log_terms = stats.poisson.logpmf(grid, 30.0) - (np.array([[26.0], [35.0]]) - grid) ** 2 / 32.0
    if child == "binomial":
        log_terms = log_terms + stats.binom.logpmf(np.array([[21], [17]]), grid, 0.6)
    else:
        log_terms = log_terms + stats.norm.logpdf(np.array([[16.0], [14.0]]), 1.0 + 0.5 * grid, 1.5)
    expected = np.exp(log_terms - special.logsumexp(log_terms, axis=1, keepdims=True)) @ grid
    with binomial_model(child), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        idata = ppm.sample(draws=1000, tune=300, chains=2, cores=1, method="augment", random_seed=5, progressbar=False)
    assert "with the children d" in idata.posterior.attrs["ppdinfer_augmentation"]
    got = idata.posterior["N"].mean(("chain", "draw")).values
    mcse = az.mcse(idata, var_names=["N"])["N"].values
    assert np.all(np.abs(got - expected) < 4.5 * mcse), (got, expected, mcse)


def test_a_mean_not_affine_in_x_declines_to_the_model_density():
    with pm.Model() as model:
        n = pm.Poisson("N", 30.0, shape=2)
        DiscreteGaussian("y", mu=n, sigma=4.0, observed=[26.0, 35.0])
        coupled = pm.Poisson("c", n.sum() / 10.0 + 0 * n, observed=[6, 6])
        squared = pm.Poisson("s", n**2 / 100.0, observed=[9, 12])
        lr = pm.Normal("lr", 0.0, 1.0)  # starts at 0, where the x^2 term of h vanishes
        hidden = pm.Poisson("h", 1.0 + n + pt.abs(lr) * n**2, observed=[30, 40])
    assert affine_children(model, n, [coupled])[1] == "the mean of c is not affine in N"
    assert affine_children(model, n, [squared])[1] == "the mean of s is not affine in N"
    assert affine_children(model, n, [hidden])[1] == "the mean of h is not affine in N"
    with model, pytest.warns(ppm.AugmentationWarning, match="the mean of c is not affine in N: N's moves run on"):
        step = ppm.PrivacyAugmentation([n])
    assert not step.compiled and "the model's log density" in step.kernel


def test_an_unsupported_prior_is_named_once():
    with pm.Model() as model:
        x = pm.Geometric("x", 0.05, shape=2)
        ppm.Release("y", Gaussian(2.0), x, observed=[18.3, 25.1])
    with model, warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ppm.sample(draws=10, tune=10, chains=1, random_seed=1, progressbar=False)
    said = [w for w in caught if issubclass(w.category, ppm.AugmentationWarning)]
    assert len(said) == 1 and "Geometric" in str(said[0].message)


@pytest.mark.parametrize("method", ["augment", "marginalize"])
def test_a_flat_prior_is_augmented_and_summed_out(method):
    """N ~ DiscreteUniform(10, 40): the release of 12 puts N's posterior against its lower end, which it must not cross;
    a Binomial child of n = N joins it."""
    grid = np.arange(10, 41)
    released, deaths = np.array([[12.0], [30.0]]), np.array([[5], [20]])
    log_terms = -((released - grid) ** 2) / 32.0 + stats.binom.logpmf(deaths, grid, 0.5)
    expected = np.exp(log_terms - special.logsumexp(log_terms, axis=1, keepdims=True)) @ grid
    with pm.Model() as model:
        n = pm.DiscreteUniform("N", 10, 40, shape=2)
        DiscreteGaussian("y", mu=n, sigma=4.0, observed=released.ravel())
        pm.Binomial("d", n=n, p=0.5, observed=deaths.ravel())
    with model, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        idata = ppm.sample(draws=1000, tune=300, chains=2, cores=1, method=method, random_seed=7, progressbar=False)
    assert idata.posterior.attrs["ppdinfer_method"] == method
    draws = idata.posterior["N"].values
    assert draws.min() >= 10 and draws.max() <= 40
    got = draws.mean(axis=(0, 1))
    mcse = az.mcse(idata, var_names=["N"])["N"].values
    assert np.all(np.abs(got - expected) < 4.5 * mcse), (got, expected, mcse)


def test_a_child_the_kernel_declines_runs_on_the_model_density_and_matches_enumeration():
    grid = np.arange(0, 121)
    released, deaths = np.array([[26.0], [35.0]]), np.array([[12], [9]])
    log_terms = stats.poisson.logpmf(grid, 30.0) - (released - grid) ** 2 / 32.0
    log_terms = log_terms + stats.poisson.logpmf(deaths, grid**2 / 100.0)
    expected = np.exp(log_terms - special.logsumexp(log_terms, axis=1, keepdims=True)) @ grid
    with pm.Model() as model:
        n = pm.Poisson("N", 30.0, shape=2)
        DiscreteGaussian("y", mu=n, sigma=4.0, observed=released.ravel())
        pm.Poisson("d", n**2 / 100.0, observed=deaths.ravel())
    with model, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        idata = ppm.sample(draws=800, tune=200, chains=2, cores=1, method="auto", random_seed=4, progressbar=False)
    assert idata.posterior.attrs["ppdinfer_method"] == "augment"
    assert idata.posterior.attrs["ppdinfer_augmentation"].startswith("N: the model's log density")
    got = idata.posterior["N"].mean(("chain", "draw")).values
    mcse = az.mcse(idata, var_names=["N"])["N"].values
    assert np.all(np.abs(got - expected) < 4.5 * mcse), (got, expected, mcse)


def test_a_multinomial_latent_with_a_child_matches_enumeration():
    """Pair transfers keep the total; the Binomial child of n = x adds a term for each of the pair's two cells."""
    p, released, deaths = np.array([0.3, 0.3, 0.4]), np.array([5.0, 7.0, 9.0]), np.array([4, 2, 5])
    states = np.array([(a, b, 20 - a - b) for a in range(21) for b in range(21 - a)])
    log_weight = (
        stats.multinomial.logpmf(states, 20, p)
        - ((released - states) ** 2).sum(axis=1) / 8.0
        + stats.binom.logpmf(deaths, states, 0.5).sum(axis=1)
    )
    weight = np.exp(log_weight - special.logsumexp(log_weight))
    expected = weight @ states
    with pm.Model() as model:
        x = pm.Multinomial("x", n=20, p=p, initval=np.array([6, 6, 8]))
        DiscreteGaussian("y", mu=x, sigma=2.0, observed=released)
        pm.Binomial("d", n=x, p=0.5, observed=deaths)
    with model, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        idata = ppm.sample(draws=1000, tune=300, chains=2, cores=1, method="augment", random_seed=8, progressbar=False)
    assert "with the children d" in idata.posterior.attrs["ppdinfer_augmentation"]
    draws = idata.posterior["x"].values
    assert np.all(draws.sum(axis=-1) == 20)
    mcse = az.mcse(idata, var_names=["x"])["x"].values
    assert np.all(np.abs(draws.mean(axis=(0, 1)) - expected) < 4.5 * mcse), (draws.mean(axis=(0, 1)), expected, mcse)


EXPOSURE = np.array([1.0, 2.0, 4.0])


def gamma_rate_model(child):
    """N_i ~ Poisson(e_i rate_i), rate_i ~ Gamma(a, a / 50) integrated out with N, and N's second child ``child``."""
    with pm.Model() as model:
        a = pm.Gamma("a", 4.0, 1.0)
        rate = pm.Gamma("rate", alpha=a, beta=a / 50.0, shape=3)
        n = pm.Poisson("N", rate * EXPOSURE)
        DiscreteGaussian("y", mu=n, sigma=5.0, observed=[48.0, 95.0, 210.0])
        lr = pm.Normal("lr", 0.0, 0.3)
        if child == "poisson":
            pm.Poisson("d", pt.exp(lr) * n / 10.0, observed=[6, 8, 25])
        elif child == "binomial":
            pm.Binomial("d", n=n, p=pm.math.sigmoid(lr - 1.0), observed=[8, 30, 50])
        elif child == "normal":
            pm.Normal("d", mu=lr + 0.5 * n, sigma=3.0, observed=[25.0, 45.0, 110.0])
        else:  # an intercept in the Poisson mean: not linear in N after the log
            pm.Poisson("d", 2.0 + pt.exp(lr) * n / 10.0, observed=[6, 8, 25])
    return model


@pytest.mark.parametrize("child", ["poisson", "binomial", "normal", "intercept"])
def test_a_gamma_rate_with_another_child_is_summed_by_recurrence_as_the_plain_sum(child):
    """The recurrence's log density, gradient and window weights (what x's draws read) equal the plain window
    sum's at the start point and at moved points; a child whose log density is not linear in N after the log keeps
    the plain sum and says why."""
    from ppdinfer.pymc.marginal import marginalize

    model = gamma_rate_model(child)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fast, plain = marginalize(model), marginalize(model, recurrence=False)
    assert fast.latents[0].conjugate == "rate" and fast.latents[0].children == ("d",)
    assert plain.latents[0].window_sum == "plain (recurrence=False)"
    if child == "intercept":
        assert fast.latents[0].window_sum == "plain (the mean of d is not proportional to N (a + b N, a != 0))"
        return
    assert fast.latents[0].window_sum == "recurrence"
    logp = [m.model.compile_logp() for m in (fast, plain)]
    dlogp = [m.model.compile_dlogp(vars=[m.model["a"], m.model["lr"]]) for m in (fast, plain)]
    rng = np.random.default_rng(0)
    start = fast.model.initial_point()
    for point in [start] + [{k: v + rng.normal(0, 0.5, np.shape(v)) for k, v in start.items()} for _ in range(3)]:
        np.testing.assert_allclose(logp[0](point), logp[1](point), rtol=1e-10)
        np.testing.assert_allclose(dlogp[0](point), dlogp[1](point), rtol=1e-7, atol=1e-9)
        values = {"a": np.exp(point["a_log__"]), "lr": point["lr"]}
        weights = [m.log_terms(m.latents[0], values) for m in (fast, plain)]
        normalized = [w - special.logsumexp(w, axis=0) for w in weights]
        np.testing.assert_allclose(np.exp(normalized[0]), np.exp(normalized[1]), atol=1e-12)
