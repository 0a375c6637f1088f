"""Issue 41, items 1-4: the PyMC layer's shortcuts check what they assume.

A summed-out window must hold the posterior mass (prior times likelihood), not only the noise's tail, at the start
point and on the posterior draws; a value frozen into a kernel, a window or a conjugate step must be a constant of
the graph (``ppdinfer.pymc._constants``), else the general path runs. Every answer is checked against enumeration
over x or quadrature over the one continuous parameter.
"""

from __future__ import annotations

import warnings

import arviz as az
import numpy as np
import pymc as pm
import pytest
from scipy import special, stats

import ppdinfer.pymc as ppm
import ppdinfer.pymc.marginal as marginal_module
from ppdinfer.kernels.windows import gamma_poisson_window_checked_draws, window_edge_mass
from ppdinfer.mechanisms import Laplace
from ppdinfer.pymc._constants import NotConstantError, constant_shape, graph_constant
from ppdinfer.pymc.marginal import choose_method, marginalize
from ppdinfer.pymc.sampling import assign_steps

QUIET = {"progressbar": False, "compute_convergence_checks": False}


def _moments(logjoint, k):
    """(mean, sd) of the pmf proportional to exp(logjoint) over the values k."""
    weights = np.exp(logjoint - special.logsumexp(logjoint))
    mean = float(weights @ k)
    return mean, float(np.sqrt(weights @ (k - mean) ** 2))


def _close(idata, name, exact, spread=4.0):
    """The posterior mean of ``name`` within ``spread`` Monte Carlo standard errors of ``exact``."""
    mean = idata["posterior"][name].mean(("chain", "draw")).values
    mcse = az.mcse(idata, var_names=[name])[name].values
    assert np.all(np.abs(mean - exact) <= spread * mcse + 1e-9), (name, mean, exact, mcse)


# -- item 1: the window holds the posterior, not only the noise's tail ----------------------------------------


@pytest.mark.parametrize("noise", ["normal", "laplace"])
def test_window_holds_the_posterior_where_the_prior_disagrees_with_y(noise):
    # x ~ Poisson(50) released at 200: the posterior of x lies far below y, outside the noise's own window
    k = np.arange(0, 800)
    with pm.Model() as model:
        x = pm.Poisson("x", 50.0)
        if noise == "normal":
            pm.Normal("y", mu=x, sigma=10.0, observed=200.0)
            loglik = stats.norm.logpdf(200.0, k, 10.0)
        else:
            ppm.Release("y", Laplace(0.2), x, observed=200.0)  # b = 5
            loglik = stats.laplace.logpdf(200.0, k, 5.0)
    mean, sd = _moments(stats.poisson.logpmf(k, 50.0) + loglik, k)
    idata = ppm.sample(model=model, draws=2000, chains=1, random_seed=4, **QUIET)
    attrs = idata["posterior"].attrs
    assert attrs["ppdinfer_method"] == "marginalize" and attrs["ppdinfer_window_widened"].startswith("x: ")
    assert attrs["ppdinfer_omitted_mass_bound"] <= 1e-12 and attrs["ppdinfer_omitted_mass_start"] <= 1e-12
    draws = idata["posterior"]["x"].values.ravel()  # exact independent draws: nothing continuous is left
    assert abs(draws.mean() - mean) <= 4 * sd / np.sqrt(draws.size), (draws.mean(), mean)
    assert abs(draws.std() - sd) <= 0.1 * sd, (draws.std(), sd)


def test_window_is_rechecked_on_the_posterior_draws():
    # the start point (mu = 20) agrees with y = 20, the posterior (mu near 500, from w) does not: the draws show it
    w = np.array([500, 510, 490])
    with pm.Model() as model:
        mu = pm.Gamma("mu", 2.0, 0.1)
        pm.Poisson("w", mu, observed=w)
        x = pm.Poisson("x", mu)
        pm.Normal("y", mu=x, sigma=10.0, observed=20.0)
    assert marginalize(model).latents[0].widened is None  # the start point needs no more than the noise's window
    idata = ppm.sample(model=model, draws=500, tune=300, chains=2, random_seed=2, **QUIET)
    attrs = idata["posterior"].attrs
    assert attrs["ppdinfer_method"] == "marginalize" and "rerun with windows widened" in attrs["ppdinfer_method_reason"]
    assert attrs["ppdinfer_omitted_mass_bound"] <= 1e-12
    grid = np.linspace(200.0, 650.0, 2251)
    k = np.arange(0, 800)
    per_mu = special.logsumexp(
        stats.poisson.logpmf(k[None], grid[:, None]) + stats.norm.logpdf(20.0, k[None], 10.0), axis=1
    )
    log_mu = stats.gamma.logpdf(grid, 2.0, scale=10.0) + stats.poisson.logpmf(w[:, None], grid).sum(0) + per_mu
    weights = np.exp(log_mu - special.logsumexp(log_mu))
    x_given_mu = np.exp(
        stats.poisson.logpmf(k[None], grid[:, None]) + stats.norm.logpdf(20.0, k[None], 10.0) - per_mu[:, None]
    )
    _close(idata, "mu", float(weights @ grid))
    _close(idata, "x", float(weights @ (x_given_mu @ k)))


def test_window_that_cannot_hold_the_posterior_is_refused_and_warned(monkeypatch):
    monkeypatch.setattr(marginal_module, "_SEARCH_WIDTHS", 0)  # no search beyond the noise's window
    with pm.Model() as model:
        mu = pm.Gamma("mu", 2.0, 0.1)
        pm.Poisson("w", mu, observed=[500, 510, 490])
        x = pm.Poisson("x", mu)
        pm.Normal("y", mu=x, sigma=10.0, observed=20.0)
    marginal = marginalize(model)
    idata = marginal.draw_latents(_tree({"mu": np.full((1, 4), 500.0)}), 1)
    assert idata["posterior"].attrs["ppdinfer_omitted_mass_bound"] > 1e-3
    with pytest.raises(ValueError, match="may omit .* of the posterior mass it keeps"):
        marginal.widened_for(idata)
    with pm.Model() as far:
        mu = pm.Gamma("mu", 2.0, 0.1)
        pm.Normal("y", mu=pm.Poisson("x", mu), sigma=1.0, observed=2000.0)
    latent = marginalize(far, conjugate=False).latents[
        0
    ]  # its start point (mu = 20) may lie far from the posterior: not refused
    assert latent.widened is not None and latent.start_bound > 1e-12
    with pm.Model() as fixed:
        pm.Normal("y", mu=pm.Poisson("x", 20.0), sigma=1.0, observed=2000.0)
    with pytest.raises(ValueError, match="may omit"):  # nothing left to sample: its start point is the posterior
        marginalize(fixed)
    with pytest.warns(marginal_module.OmittedMassWarning, match="use method='augment'"):
        fit = ppm.sample(model=model, method="marginalize", draws=100, tune=100, chains=1, random_seed=1, **QUIET)
    assert fit["posterior"].attrs["ppdinfer_omitted_mass_bound"] > 1e-3


def _tree(values):
    import xarray as xr

    dataset = xr.Dataset({name: (("chain", "draw"), value) for name, value in values.items()})
    return xr.DataTree(children={"posterior": xr.DataTree(dataset)})


def test_edge_mass_bounds_the_omitted_mass_against_brute_force():
    rng = np.random.default_rng(5)
    k_all = np.arange(0, 3000)
    checked = 0
    for _ in range(40):
        mean, sigma, y = rng.uniform(1, 400), rng.uniform(0.5, 20), rng.uniform(0, 400)
        lo, width = int(max(y - 5 * sigma, 0)), int(10 * sigma) + 2
        terms = stats.poisson.logpmf(k_all, mean) + (
            stats.norm.logpdf(y, k_all, sigma) if rng.random() < 0.5 else stats.laplace.logpdf(y, k_all, sigma)
        )
        inside = (k_all >= lo) & (k_all < lo + width)
        kept, omitted = special.logsumexp(terms[inside]), special.logsumexp(terms[~inside])
        bound = window_edge_mass(terms[inside][:, None], np.array([lo]), np.array([np.inf]))[0]
        assert bound == 1.0 or np.exp(omitted - kept) <= bound * (1 + 1e-9), (mean, sigma, y)  # 1: no bound
        checked += bound < 1e-3
    assert checked >= 10  # windows that hold most of the mass, their bound checked
    # the recurrence's draws report the same bound as the terms themselves
    k = np.arange(40, 70)[:, None]
    constant = stats.norm.logpdf(55.3, k, 3.0) - special.gammaln(k + 1.0)
    shape, log_q = np.array([[3.0]]), np.log(np.array([[0.9]]))
    terms = special.gammaln(k + 3.0) + k * np.log(0.9) + constant
    _, edge = gamma_poisson_window_checked_draws(
        shape, log_q, np.array([40]), np.exp(np.diff(constant, axis=0)), np.array([int(np.argmax(constant))]),
        constant, np.array([[0.5]]),
    )  # fmt: skip
    assert edge[0] == pytest.approx(window_edge_mass(terms, np.array([40]), np.array([np.inf]))[0], rel=1e-9)


# -- the rule: a frozen value is a constant of the graph -------------------------------------------------------


def test_graph_constant_names_the_model_variable_and_accepts_data():
    with pm.Model() as model:
        s = pm.HalfNormal("s", 1.0)
        data = pm.Data("scale", np.array([2.0, 3.0]))
        n = pm.Poisson("n", 3.0)
        z = pm.Normal("z", 0.0, 1.0, size=n + 1)
    assert graph_constant(data * 2, "the scale").tolist() == [4.0, 6.0]
    for graph, name in ((pm.math.exp(s) + data, "s"), (model.rvs_to_values[s] * 2, "s_log__")):
        with pytest.raises(NotConstantError, match=rf"the noise scale depends on the model's variables \({name}\)"):
            graph_constant(graph, "the noise scale")
    with pytest.raises(NotConstantError, match=r"model's variables \(n\)"):
        constant_shape(z, "z's shape")


# -- item 2: a free noise scale is not frozen into the compiled kernel ---------------------------------------


def test_free_noise_scale_takes_the_model_density():
    y = np.array([7.5, 10.6, 5.8])
    with pm.Model() as model:
        s = pm.HalfNormal("s", 5.0)
        x = pm.Poisson("x", 9.0, shape=3)
        pm.Normal("y", mu=x, sigma=s, observed=y)
    method, reason, _ = choose_method(model)
    assert method == "augment" and "its scale depends on the model's variables (s)" in reason
    with pytest.warns(ppm.AugmentationWarning, match="depends on the model variable s"):
        (step,) = assign_steps(model)
    assert not step.compiled
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ppm.AugmentationWarning)
        idata = ppm.sample(model=model, sweeps=2, draws=600, tune=300, chains=2, cores=1, random_seed=3, **QUIET)
    assert (
        idata["posterior"].attrs["ppdinfer_augmentation"].startswith("x: the model's log density (y: its sigma depends")
    )
    sigma = np.linspace(0.01, 20.0, 4000)
    k = np.arange(0, 80)
    per_unit = special.logsumexp(
        stats.poisson.logpmf(k, 9.0)[None, :, None] + stats.norm.logpdf(y, k[None, :, None], sigma[:, None, None]),
        axis=1,
    )
    log_post = stats.halfnorm.logpdf(sigma, scale=5.0) + per_unit.sum(axis=1)
    _close(idata, "s", float(np.exp(log_post - special.logsumexp(log_post)) @ sigma))


@pytest.mark.parametrize("noise", ["DiscreteLaplace", "DiscreteGaussian"])
def test_free_discrete_noise_parameter_is_not_frozen(noise):
    with pm.Model() as model:
        scale = pm.HalfNormal("scale", 2.0)
        x = pm.Poisson("x", 9.0, shape=3)
        if noise == "DiscreteLaplace":
            ppm.DiscreteLaplace("y", mu=x, epsilon=scale, observed=[8, 11, 9])
        else:
            ppm.DiscreteGaussian("y", mu=x, sigma=scale, observed=[8, 11, 9])
    assert choose_method(model)[0] == "augment"
    (step,) = assign_steps(model)
    assert not step.compiled and "depends on the model's variables (scale)" in step.kernel


# -- item 3: a Dirichlet whose concentration is a model variable is not collapsed ----------------------------


def _compositions(total, cells):
    if cells == 1:
        return [[total]]
    return [[first, *rest] for first in range(total + 1) for rest in _compositions(total - first, cells - 1)]


def test_dirichlet_with_a_free_concentration_is_not_collapsed():
    base, w, y, total = np.array([1.0, 2.0, 3.0]), np.array([3, 4, 3, 5, 4]), np.array([5, 2, 1]), 8
    with pm.Model() as model:
        c = pm.Gamma("c", 2.0, 0.1)
        pm.Poisson("w", c, observed=w)  # pins c near 3.8, where its prior's mean is 20
        share = pm.Dirichlet("share", a=c * base)
        cases = pm.Multinomial("cases", n=total, p=share, initval=np.array([5, 2, 1]))
        ppm.DiscreteLaplace("y", mu=cases, epsilon=1.0, observed=y)
    steps = assign_steps(model)
    assert [type(step).__name__ for step in steps] == ["PrivacyAugmentation"]
    assert steps[0].family.name == "multinomial"
    idata = ppm.sample(model=model, draws=600, tune=400, chains=2, cores=1, random_seed=5, **QUIET)
    assert idata["posterior"].attrs["ppdinfer_conjugate"] == ""  # share is sampled, not drawn given a frozen c
    # exact: the Dirichlet-multinomial over the 45 tables of 8 in 3 cells, the concentration by quadrature
    xs = np.array(_compositions(total, 3), dtype=float)
    grid = np.linspace(1e-3, 15.0, 3000)
    alpha = grid[:, None] * base  # (c, cell)
    log_dm = (
        special.gammaln(total + 1.0)
        + special.gammaln(alpha.sum(1))[:, None]
        - special.gammaln(alpha.sum(1) + total)[:, None]
        + (special.gammaln(xs[None] + alpha[:, None]) - special.gammaln(alpha[:, None]) - special.gammaln(xs + 1))
        .sum(-1)
    )  # fmt: skip
    rate = 1.0
    log_release = (np.log(np.tanh(rate / 2)) - rate * np.abs(y - xs)).sum(-1)
    log_c = stats.gamma.logpdf(grid, 2.0, scale=10.0) + stats.poisson.logpmf(w[:, None], grid).sum(0)
    log_joint = log_c[:, None] + log_dm + log_release[None]
    weights = np.exp(log_joint - special.logsumexp(log_joint))  # (c, table)
    share_mean = np.einsum("ct,ctj->j", weights, (alpha[:, None] + xs[None]) / (alpha.sum(1)[:, None, None] + total))
    _close(idata, "share", share_mean)
    _close(idata, "c", float(weights.sum(1) @ grid))


# -- item 4: a binomial's free n is not frozen into the window ------------------------------------------------


def test_binomial_with_a_free_n_is_augmented():
    with pm.Model() as model:
        n = pm.DiscreteUniform("n", 20, 60)
        x = pm.Binomial("x", n=n, p=0.7)
        pm.Normal("y", mu=x, sigma=3.0, observed=38.0)
    method, reason, _ = choose_method(model)
    assert method == "augment" and "the number of trials n of x depends on the model's variables (n)" in reason
    with pytest.raises(ValueError, match=r"model's variables \(n\)"):
        marginalize(model)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ppm.AugmentationWarning)
        idata = ppm.sample(model=model, draws=1000, tune=300, chains=2, cores=1, random_seed=2, **QUIET)
    assert idata["posterior"].attrs["ppdinfer_method"] == "augment"
    ns, k = np.arange(20, 61), np.arange(0, 61)
    log_joint = stats.binom.logpmf(k[None], ns[:, None], 0.7) + stats.norm.logpdf(38.0, k[None], 3.0)
    weights = np.exp(log_joint - special.logsumexp(log_joint))
    _close(idata, "x", float(weights.sum(0) @ k))
    _close(idata, "n", float(weights.sum(1) @ ns))
