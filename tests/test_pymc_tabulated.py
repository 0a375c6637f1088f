"""Bounded integer priors of any log pmf (issue 44): ``pm.Truncated``, an integer ``pm.CustomDist``, a
``pm.DiscreteUniform`` with a ``pm.Potential``, against enumerated and hand-summed posteriors.

Each release sits near a bound, so a step or a sum that ignored the truncation, the Potential or the bounds would
put the posterior means several Monte Carlo standard errors away (each test checks that the answer without it is
far from the reference).
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
from ppdinfer.pymc import DiscreteGaussian
from ppdinfer.pymc.tabulated import tabulated_prior

pytestmark = pytest.mark.filterwarnings("ignore:Numba will use object mode")

Y = np.array([12.0, 30.0, 43.0])
SIGMA = 4.0
LOWER, UPPER = 10, 45
GRID = np.arange(LOWER, UPPER + 1)


def _noise(grid=GRID):
    return -((Y[:, None] - grid) ** 2) / (2 * SIGMA**2)


def _means(log_terms, grid=GRID):
    return np.exp(log_terms - special.logsumexp(log_terms, axis=-1, keepdims=True)) @ grid


def _sample(model, method, seed, draws=1000):
    with model, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return ppm.sample(draws=draws, tune=300, chains=2, cores=1, method=method, random_seed=seed, progressbar=False)


def _close(idata, name, expected, k=4.5):
    got = np.atleast_1d(idata.posterior[name].mean(("chain", "draw")).values)
    mcse = np.atleast_1d(az.mcse(idata, var_names=[name])[name].values)
    assert np.all(np.abs(got - expected) < k * mcse + 1e-9), (name, got, expected, mcse)


T_Y, T_SIGMA, T_LOWER, T_UPPER = np.array([14.0, 22.0, 31.0]), 5.0, 15, 30


def truncated_model():
    """mu free (a Gamma), N_i ~ Poisson(mu) truncated to [15, 30]: the truncation's normalization reads mu."""
    with pm.Model() as model:
        mu = pm.Gamma("mu", 30.0, 1.2)
        n = pm.Truncated("N", pm.Poisson.dist(mu), lower=T_LOWER, upper=T_UPPER, shape=T_Y.size)
        DiscreteGaussian("y", mu=n, sigma=T_SIGMA, observed=T_Y)
    return model


def truncated_reference(truncate=True):
    """E[mu | y] and E[N_i | y]: a quadrature over mu, exact sums over each N_i."""
    mu = np.linspace(3.0, 80.0, 2201)
    grid = np.arange(T_LOWER, T_UPPER + 1) if truncate else np.arange(0, 200)
    log_pmf = stats.poisson.logpmf(grid, mu[:, None])
    if truncate:
        log_pmf -= np.log(stats.poisson.cdf(T_UPPER, mu) - stats.poisson.cdf(T_LOWER - 1, mu))[:, None]
    terms = log_pmf[:, None, :] - ((T_Y[:, None] - grid) ** 2 / (2 * T_SIGMA**2))[None]  # (mu, county, N)
    per_county = special.logsumexp(terms, axis=2)
    log_post = stats.gamma.logpdf(mu, 30.0, scale=1 / 1.2) + per_county.sum(axis=1)
    weight = np.exp(log_post - special.logsumexp(log_post))
    return float(weight @ mu), weight @ (np.exp(terms - per_county[..., None]) @ grid)


@pytest.mark.parametrize("method", ["augment", "marginalize"])
def test_a_truncated_poisson_matches_the_hand_summed_posterior(method):
    idata = _sample(truncated_model(), method, seed=11)
    attrs = idata.posterior.attrs
    assert attrs["ppdinfer_method"] == method
    if method == "augment":
        assert attrs["ppdinfer_augmentation"] == "N: the compiled kernel"
    draws = idata.posterior["N"].values
    assert draws.min() >= T_LOWER and draws.max() <= T_UPPER
    mu_mean, n_mean = truncated_reference()
    _close(idata, "mu", mu_mean)
    _close(idata, "N", n_mean)
    # without the truncation (its bounds and the normalization in mu) the answer is far off
    untruncated = truncated_reference(truncate=False)
    assert abs(untruncated[0] - mu_mean) > 0.5 and np.min(np.abs(untruncated[1] - n_mean)) > 0.2


def flat_tilted_model():
    with pm.Model() as model:
        n = pm.DiscreteUniform("N", LOWER, UPPER, shape=Y.size)
        pm.Potential("tilt", -0.15 * n)  # an elementwise Potential: part of N's prior
        DiscreteGaussian("y", mu=n, sigma=SIGMA, observed=Y)
    return model


@pytest.mark.parametrize("method", ["augment", "marginalize"])
def test_a_discrete_uniform_with_a_potential_matches_enumeration(method):
    idata = _sample(flat_tilted_model(), method, seed=12)
    assert idata.posterior.attrs["ppdinfer_method"] == method
    if method == "augment":
        assert idata.posterior.attrs["ppdinfer_augmentation"] == "N: the compiled kernel"
    else:
        assert "tilt" not in idata.posterior  # summed with N
    expected = _means(-0.15 * GRID + _noise())
    _close(idata, "N", expected)
    assert np.max(np.abs(_means(_noise()) - expected)) > 1.0  # the Potential matters


def test_an_integer_custom_dist_matches_enumeration():
    """A bounded discrete Laplace prior written as a CustomDist (support 0..40 by its -inf), with a Binomial child."""

    def logp(value, centre):
        inside = (value >= 0) & (value <= 40)
        return pt.switch(inside, -pt.abs(value - centre) / 3.0, -np.inf)

    deaths = np.array([6, 15, 20])
    with pm.Model() as model:
        n = pm.CustomDist("N", 25.0, logp=logp, dtype="int64", shape=Y.size, initval=np.array([12, 30, 40]))
        DiscreteGaussian("y", mu=n, sigma=SIGMA, observed=Y)
        pm.Binomial("d", n=n, p=0.5, observed=deaths)
    idata = _sample(model, "augment", seed=13)
    assert idata.posterior.attrs["ppdinfer_augmentation"] == "N: the compiled kernel (with the children d)"
    grid = np.arange(0, 41)
    log_terms = -np.abs(grid - 25.0) / 3.0 + _noise(grid) + stats.binom.logpmf(deaths[:, None], grid, 0.5)
    draws = idata.posterior["N"].values
    assert draws.min() >= 0 and draws.max() <= 40
    _close(idata, "N", _means(log_terms, grid))


def test_a_potential_coupling_the_elements_declines_once_and_matches_enumeration():
    """A Potential of N.sum() is not elementwise: no table, no summing out; the generic moves on the model's log
    density still sample the joint posterior (enumerated over all 36^3 states)."""
    with pm.Model() as model:
        n = pm.DiscreteUniform("N", LOWER, UPPER, shape=Y.size)
        pm.Potential("total", -((n.sum() - 80.0) ** 2) / 50.0)
        DiscreteGaussian("y", mu=n, sigma=SIGMA, observed=Y)
    assert tabulated_prior(model, n).startswith("the Potential total is not elementwise in N")
    with model, warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        idata = ppm.sample(draws=1000, tune=300, chains=2, cores=1, random_seed=14, progressbar=False)
    said = [str(w.message) for w in caught if issubclass(w.category, ppm.AugmentationWarning)]
    assert len(said) == 1 and said[0].startswith("the Potential total is not elementwise in N"), said
    attrs = idata.posterior.attrs
    assert attrs["ppdinfer_method"] == "augment"
    assert "the Potential total is not elementwise in N" in attrs["ppdinfer_method_reason"]
    assert attrs["ppdinfer_augmentation"].startswith("N: the model's log density (the Potential total")
    a, b, c = np.meshgrid(GRID, GRID, GRID, indexing="ij")
    noise = _noise()
    log_weight = noise[0][:, None, None] + noise[1][None, :, None] + noise[2][None, None, :]
    log_weight = log_weight - ((a + b + c - 80.0) ** 2) / 50.0
    weight = np.exp(log_weight - special.logsumexp(log_weight))
    expected = np.array([(weight * v).sum() for v in (a, b, c)])
    _close(idata, "N", expected)
    assert np.max(np.abs(_means(noise) - expected)) > 1.0


def test_a_coupled_truncated_prior_gets_no_step_and_says_why_once():
    def logp(value):
        return -((value.sum() - 60.0) ** 2) / 20.0 + 0.0 * value  # reads every element

    with pm.Model() as model:
        n = pm.CustomDist("N", logp=logp, dtype="int64", shape=2, initval=np.array([20, 40]))
        DiscreteGaussian("y", mu=n, sigma=SIGMA, observed=[22.0, 37.0])
    with model, warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        idata = ppm.sample(draws=20, tune=20, chains=1, random_seed=1, progressbar=False)
    said = [str(w.message) for w in caught if issubclass(w.category, ppm.AugmentationWarning)]
    assert len(said) == 1 and "N's log density is not elementwise in N" in said[0], said
    assert idata.posterior.attrs["ppdinfer_method"] == "none"
    assert "N's log density is not elementwise in N" in idata.posterior.attrs["ppdinfer_method_reason"]


def test_the_prior_move_draws_from_the_window_table():
    """The step's window table (a truncated Poisson's log pmf on a window holding x, packed with its cumulative
    distribution) and the kernel's prior move on it draw lo + j with the prior's probability restricted to the window,
    never a value outside the support: a chi-square test over 40,000 draws."""
    from ppdinfer.kernels.augmentation import TABLE, seed_moves, site_prior_move
    from ppdinfer.pymc.tabulated import WindowTable

    with pm.Model() as model:
        n = pm.Truncated("n", pm.Poisson.dist(6.0), lower=4, upper=30, shape=1)
    params = WindowTable(model, tabulated_prior(model, n)).packed(
        model.initial_point(), np.array([5]), 7, np.random.default_rng(3)
    )
    lo = int(params[0, 0])
    assert lo <= 5 <= lo + 6 and lo < 4  # the window reaches below the support
    seed_moves(5)
    draws = np.array([site_prior_move(TABLE, params, 0) for _ in range(40_000)])
    values = np.arange(lo, lo + 7)
    weight = np.where(values >= 4, stats.poisson.pmf(values, 6.0), 0.0)
    counts = np.array([(draws == v).sum() for v in values])
    assert counts.sum() == draws.size and np.all(counts[weight == 0] == 0)
    expected = draws.size * weight / weight.sum()
    assert stats.chisquare(counts[weight > 0], expected[weight > 0]).pvalue > 1e-4
