"""Summing integer latents out (ppdinfer.pymc.marginal; issue 34, part 1): the windowed likelihood against brute-force
sums, the reported bound on the omitted mass, the posterior against enumeration, the latents' draws, the auto rule,
and the errors."""

from __future__ import annotations

import importlib.util
import warnings

import arviz as az
import numpy as np
import pymc as pm
import pytest
from scipy import special, stats

import ppdinfer.pymc as ppm
import ppdinfer.pymc.marginal as marginal_module
from ppdinfer.mechanisms import Gaussian, Laplace, Tulap
from ppdinfer.pymc.marginal import choose_method, marginalize, window_half_width

QUIET = {"progressbar": False, "compute_convergence_checks": False}


def _potential(marginal, point):
    """The marginal model's summed-out terms (its potentials) at ``point`` (untransformed values by name)."""
    model = marginal.model
    values = {}
    for rv in model.free_RVs:
        value_var = model.rvs_to_values[rv]
        transform = model.rvs_to_transforms.get(rv)
        raw = np.asarray(point[rv.name], dtype=float)
        values[value_var.name] = raw if transform is None else transform.forward(raw).eval()
    total = model.replace_rvs_by_values([pm.math.sum([pm.math.sum(p) for p in model.potentials])])[0]
    fn = model.compile_fn(total, inputs=model.value_vars, on_unused_input="ignore")
    return float(fn(values))


def _brute(logprior_k, y, noise_logpdf, k):
    """log sum_k p(x_i = k) pi(y_i | k) per coordinate i over the wide grid k (one column per coordinate)."""
    return special.logsumexp(logprior_k + noise_logpdf(y[None, :], k), axis=0)


def _agrees(marginal, summed, per_unit):
    """The summed-out total equals the brute-force sum to 1e-10, up to what the truncation may omit: at most
    ``bound`` per coordinate, i.e. bound / p(y_i | theta) on each coordinate's log (and never more mass)."""
    expected = float(per_unit.sum())
    allowed = 1e-10 + float(np.sum(marginal.bound / np.exp(per_unit)))
    return expected - allowed <= summed <= expected + 1e-10


def _gauss(sigma):
    return lambda y, k: stats.norm.logpdf(y, k, sigma)


def _laplace(b):
    return lambda y, k: stats.laplace.logpdf(y, k, b)


@pytest.mark.parametrize("release", ["Release Gaussian", "Release Laplace", "pm.Normal", "pm.Laplace"])
def test_summed_poisson_equals_brute_force(release):
    y = np.array([3.7, 21.2, 40.4])
    exposure = np.array([1.0, 2.0, 4.0])
    with pm.Model() as model:
        rate = pm.Gamma("rate", 2.0, 0.2, shape=3)
        x = pm.Poisson("x", rate * exposure)
        if release == "Release Gaussian":
            ppm.Release("y", Gaussian(2.5), x, observed=y)
            noise = _gauss(2.5)
        elif release == "Release Laplace":
            ppm.Release("y", Laplace(0.5), x, observed=y)  # epsilon 0.5: b = 2
            noise = _laplace(2.0)
        elif release == "pm.Normal":
            pm.Normal("y", mu=x, sigma=1.5, observed=y)
            noise = _gauss(1.5)
        else:
            pm.Laplace("y", mu=x, b=1.2, observed=y)
            noise = _laplace(1.2)
    marginal = marginalize(model, conjugate=False)
    assert [rv.name for rv in marginal.model.free_RVs] == ["rate"]
    k = np.arange(0, 400)[:, None]
    for rates in ([5.0, 10.0, 10.0], [1.0, 3.0, 20.0]):
        mu = np.asarray(rates) * exposure
        per_unit = _brute(stats.poisson.logpmf(k, mu), y, noise, k)
        assert _agrees(marginal, _potential(marginal, {"rate": rates}), per_unit)


def test_summed_gamma_poisson_and_beta_binomial_equal_brute_force():
    y = np.array([12.3, 55.9])
    exposure = np.array([10.0, 30.0])
    with pm.Model() as model:
        a = pm.Gamma("a", 2.0, 1.0)
        rate = pm.Gamma("rate", alpha=a, beta=a / 2.0, shape=2)
        x = pm.Poisson("x", rate * exposure)
        ppm.Release("y", Gaussian(3.0), x, observed=y)
    marginal = marginalize(model)
    assert marginal.latents[0].family == "gamma_poisson" and marginal.latents[0].conjugate == "rate"
    k = np.arange(0, 600)[:, None]
    for a_value in (0.7, 2.0, 9.0):
        # rate ~ Gamma(a, a / 2) integrated out: x ~ NegBin(a, p = (a / 2) / (a / 2 + e))
        logprior = stats.nbinom.logpmf(k, a_value, (a_value / 2) / (a_value / 2 + exposure))
        assert _agrees(marginal, _potential(marginal, {"a": a_value}), _brute(logprior, y, _gauss(3.0), k))
    n = np.array([20, 40])
    yb = np.array([7.2, 31.5])
    with pm.Model() as binomial:
        p = pm.Beta("p", 2.0, 3.0, shape=2)
        xb = pm.Binomial("x", n=n, p=p)
        ppm.Release("y", Gaussian(2.0), xb, observed=yb)
    beta = marginalize(binomial)
    assert beta.latents[0].family == "beta_binomial" and beta.latents[0].lo.min() >= 0
    assert beta.latents[0].lo.max() + beta.latents[0].width - 1 <= 40 + beta.latents[0].width
    kb = np.arange(0, 41)[:, None]
    logprior = np.where(kb <= n, stats.betabinom.logpmf(kb, n, 2.0, 3.0), -np.inf)
    assert _agrees(beta, _potential(beta, {}), _brute(logprior, yb, _gauss(2.0), kb))


@pytest.mark.parametrize("tol", [1e-4, 1e-8, 1e-12])
def test_truncation_bound_is_reported_and_holds(tol):
    y = np.array([0.4, 15.0, 80.2])
    with pm.Model() as model:
        rate = pm.Gamma("rate", 2.0, 0.1, shape=3)
        x = pm.Poisson("x", rate)
        ppm.Release("y", Laplace(0.8), x, observed=y)  # heavy tails: b = 1.25
    marginal = marginalize(model, tol=tol, conjugate=False)
    latent = marginal.latents[0]
    assert 0 < latent.bound <= tol and marginal.bound == latent.bound
    k = np.arange(0, 1000)[:, None]
    window = (k >= latent.lo) & (k < latent.lo + latent.width)
    for mu in ([1.0, 15.0, 80.0], [40.0, 3.0, 200.0], [0.01, 500.0, 80.0]):
        joint = np.exp(stats.poisson.logpmf(k, mu) + stats.laplace.logpdf(y, k, 1.25))
        omitted = np.where(window, 0.0, joint).sum(axis=0)
        assert np.all(omitted <= latent.bound)
    # the half-width grows like log(1 / tol) for Laplace noise
    assert np.all(latent.half_width >= 1.25 * np.log(1 / tol) - 1)
    with pytest.raises(ValueError, match="tol must be a number in"):
        window_half_width(0.0, 1.0, 1, tol=0.0)


def _grid_posterior(y, sigma, prior_shape, prior_rate):
    """mu ~ Gamma, x_i ~ Poisson(mu), y_i = x_i + N(0, sigma^2): E[mu | y] and E[x_i | y] by enumeration."""
    mu = np.linspace(1e-3, 120.0, 6001)
    k = np.arange(0, 300)
    logjoint = stats.poisson.logpmf(k[None, :, None], mu[:, None, None]) + stats.norm.logpdf(y, k[None, :, None], sigma)
    per_unit = special.logsumexp(logjoint, axis=1)  # (mu, unit)
    logpost = stats.gamma.logpdf(mu, prior_shape, scale=1 / prior_rate) + per_unit.sum(axis=1)
    weights = np.exp(logpost - logpost.max())
    weights /= weights.sum()
    x_given_mu = np.exp(logjoint - per_unit[:, None, :])  # p(x | mu, y)
    x_mean = np.einsum("m,mku,k->u", weights, x_given_mu, k.astype(float))
    return float(weights @ mu), x_mean


@pytest.mark.parametrize("step", ["nuts", "independence"])
def test_marginalized_posterior_matches_enumeration(step):
    y = np.array([18.3, 25.1, 9.6])
    backend = {"nuts_sampler": "pymc"} if step == "nuts" else {}
    with pm.Model(coords={"unit": ["a", "b", "c"]}):
        mu = pm.Gamma("mu", 2.0, 0.1)
        x = pm.Poisson("x", mu, dims="unit")
        ppm.Release("y", Gaussian(3.0), x, observed=y, dims="unit")
        idata = ppm.sample(
            method="marginalize", draws=1500, tune=500, chains=2, cores=1, random_seed=3, **backend, **QUIET
        )
    assert idata["posterior"].attrs["ppdinfer_step"] == step
    mu_exact, x_exact = _grid_posterior(y, 3.0, 2.0, 0.1)
    post = idata["posterior"]
    for name, exact in (("mu", mu_exact), ("x", x_exact)):
        mean = post[name].mean(("chain", "draw")).values
        mcse = az.mcse(idata, var_names=[name])[name].values
        assert np.all(np.abs(mean - exact) <= 4 * mcse), (name, mean, exact, mcse)
    x_draws = post["x"]
    assert x_draws.dims == ("chain", "draw", "unit") and list(x_draws["unit"].values) == ["a", "b", "c"]
    assert np.issubdtype(x_draws.dtype, np.integer) and int(x_draws.min()) >= 0
    assert post.attrs["ppdinfer_method"] == "marginalize" and post.attrs["ppdinfer_omitted_mass_bound"] <= 1e-12
    assert "y" in idata["observed_data"] and idata["observed_data"]["y"].dims == ("unit",)


@pytest.mark.parametrize("collapse_min_units", [1, 100])
def test_collapsed_latents_and_rates_have_their_dims(collapse_min_units, monkeypatch):
    monkeypatch.setattr(marginal_module, "COLLAPSE_MIN_UNITS", collapse_min_units)
    exposure = np.array([20.0, 50.0, 80.0, 120.0])
    with pm.Model(coords={"hospital": np.arange(4)}):
        a = pm.Gamma("a", 2.0, 1.0)
        m = pm.Gamma("m", 2.0, 1.0)
        rate = pm.Gamma("rate", alpha=a, beta=a / m, dims="hospital")
        x = pm.Poisson("x", rate * exposure, dims="hospital", initval=np.array([40, 100, 160, 240]))
        ppm.Release("y", Gaussian(4.0), x, observed=[41.2, 97.0, 170.3, 236.9], dims="hospital")
        idata = ppm.sample(
            method="marginalize", nuts_sampler="pymc", draws=200, tune=200, chains=1, random_seed=1, **QUIET
        )
    post = idata["posterior"]
    assert set(post.data_vars) >= {"a", "m", "rate", "x"}
    # 4 coordinates: the rates stay NUTS's below COLLAPSE_MIN_UNITS, else they are integrated out and drawn exactly
    assert ("rate kept for NUTS" in post.attrs["ppdinfer_method_reason"]) == (collapse_min_units > 4)
    assert post["rate"].dims == ("chain", "draw", "hospital") and post["x"].dims == ("chain", "draw", "hospital")
    assert float(post["rate"].min()) > 0
    # rate | x, a, m ~ Gamma(a + x, a / m + e): its mean is near x / e for these large exposures
    ratio = (post["rate"] * exposure).mean(("chain", "draw")) / post["x"].mean(("chain", "draw"))
    assert np.allclose(ratio, 1.0, atol=0.05)


def test_auto_rule_picks_each_method_where_documented():
    with pm.Model() as small:
        x = pm.Poisson("x", 20.0, shape=2)
        ppm.Release("y", Gaussian(2.0), x, observed=[18.3, 25.1])
    assert choose_method(small)[0] == "marginalize"
    with pm.Model() as wide:  # Laplace noise of scale 2,000: a window of ~110,000 values per coordinate
        x = pm.Poisson("x", 2000.0, shape=2)
        ppm.Release("y", Laplace(5e-4), x, observed=[1800.3, 2500.1])
    method, reason, _ = choose_method(wide)
    assert method == "augment" and "window cells" in reason
    with pm.Model() as tulap:
        x = pm.Poisson("x", 20.0, shape=2)
        ppm.Release("y", Tulap(1.0), x, observed=[18.3, 25.1])
    method, reason, _ = choose_method(tulap)
    assert method == "augment" and "declares no additive noise" in reason
    with pm.Model() as table:
        share = pm.Dirichlet("share", a=np.ones(3))
        cells = pm.Multinomial("cells", n=30, p=share, initval=np.array([10, 10, 10]))
        ppm.DiscreteLaplace("y", mu=cells, epsilon=1.0, observed=[12, 9, 8])
    method, reason, _ = choose_method(table)
    assert method == "augment" and "Multinomial" in reason
    with tulap:
        idata = ppm.sample(draws=20, tune=20, chains=1, random_seed=1, **QUIET)
    assert idata["posterior"].attrs["ppdinfer_method"] == "augment"
    with small:
        idata = ppm.sample(method="augment", draws=20, tune=20, chains=1, random_seed=1, **QUIET)
    assert idata["posterior"].attrs["ppdinfer_method"] == "augment"
    assert idata["posterior"].attrs["ppdinfer_method_reason"] == "method='augment'"


def test_a_model_with_nothing_to_augment_or_sum_out_says_so():
    """Continuous statistics released with Laplace noise (no integer latent): the method is "none", for auto and
    augment alike; an integer latent of a Geometric prior is named with its prior, as sample records it and
    as method='marginalize' refuses it."""
    with pm.Model() as continuous:
        mu = pm.Normal("mu", 0.0, 10.0)
        spread = pm.HalfNormal("spread", 5.0)
        ppm.Release("y", Laplace(0.5), pm.math.stack([mu, mu + spread]), observed=[1.2, 4.0])
    for method in ("auto", "augment"):
        attrs = ppm.sample(model=continuous, method=method, draws=20, tune=20, chains=1, random_seed=1, **QUIET)[
            "posterior"
        ].attrs
        assert attrs["ppdinfer_method"] == "none", method
        assert attrs["ppdinfer_method_reason"] == (
            "the model has no integer latent observed through a release: nothing to augment or sum out"
        )
    with pytest.raises(ValueError, match="no integer latent observed through a release: nothing to sum out"):
        marginalize(continuous)
    with pm.Model() as uniform:
        x = pm.Geometric("x", 0.05, shape=2)
        ppm.Release("y", Gaussian(2.0), x, observed=[18.3, 25.1])
    with warnings.catch_warnings():
        warnings.simplefilter(
            "ignore", ppm.AugmentationWarning
        )  # x has no augmentation step: said, and tested, elsewhere
        with pytest.raises(ValueError, match="x has a Geometric prior, which ppdinfer neither augments nor sums"):
            ppm.sample(model=uniform, method="marginalize", draws=10, tune=10, chains=1)
        attrs = ppm.sample(model=uniform, draws=20, tune=20, chains=1, random_seed=1, **QUIET)["posterior"].attrs
    assert attrs["ppdinfer_method"] == "none"
    assert attrs["ppdinfer_method_reason"].startswith("x has a Geometric prior, which ppdinfer neither")
    assert "no integer latent" not in attrs["ppdinfer_method_reason"]


def test_errors_name_the_problem():
    with pm.Model() as tulap:
        x = pm.Poisson("x", 20.0, shape=2)
        ppm.Release("y", Tulap(1.0), x, observed=[18.3, 25.1])
    with pytest.raises(ValueError, match="declares no additive noise .* cannot be summed out"):
        ppm.sample(model=tulap, method="marginalize", draws=10, tune=10, chains=1)
    with pytest.raises(ValueError, match="method must be 'auto', 'augment' or 'marginalize'"):
        ppm.sample(model=tulap, method="sum", draws=10, tune=10, chains=1)
    with pm.Model() as varying:
        s = pm.HalfNormal("s", 2.0)
        x = pm.Poisson("x", 20.0, shape=2)
        pm.Normal("y", mu=x, sigma=s, observed=[18.3, 25.1])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(ValueError, match="its scale depends on the model's variables"):
            marginalize(varying)
    with pm.Model() as derived:
        x = pm.Poisson("x", 20.0, shape=2)
        pm.Deterministic("total", x.sum())
        ppm.Release("y", Gaussian(2.0), x, observed=[18.3, 25.1])
    with pytest.raises(ValueError, match="Deterministic total reads"):
        marginalize(derived)
    with pm.Model() as plain:
        x = pm.Poisson("x", 20.0, shape=2)
        ppm.Release("y", Gaussian(2.0), x, observed=[18.3, 25.1])
        with pytest.raises(ValueError, match="step: the model's integer latents are summed out"):
            ppm.sample(method="marginalize", step=pm.Metropolis([x]), draws=10, tune=10, chains=1)
    with pytest.raises(ValueError, match="conjugate must be True or False"):
        marginalize(plain, conjugate="yes")


@pytest.mark.parametrize("backend", ["numpyro", "nutpie"])
def test_fast_backends_sample_the_marginal_model(backend):
    if importlib.util.find_spec(backend) is None:
        pytest.skip(f"{backend} is not installed (the optional extra ppdinfer[fast])")
    with pm.Model():
        mu = pm.Gamma("mu", 2.0, 0.1)
        x = pm.Poisson("x", mu, shape=3)
        ppm.Release("y", Gaussian(3.0), x, observed=[18.3, 25.1, 9.6])
        idata = ppm.sample(nuts_sampler=backend, draws=300, tune=300, chains=1, random_seed=2, **QUIET)
    assert idata["posterior"].attrs["ppdinfer_method"] == "marginalize"
    assert idata["posterior"]["x"].shape == (1, 300, 3)
    mu_exact, _ = _grid_posterior(np.array([18.3, 25.1, 9.6]), 3.0, 2.0, 0.1)
    mean, mcse = float(idata["posterior"]["mu"].mean()), float(az.mcse(idata, var_names=["mu"])["mu"])
    assert abs(mean - mu_exact) <= 5 * mcse


def test_summed_out_equals_the_augmented_models_sum_over_x():
    """The marginal model's potential against the augmented (original) model's own joint log density of x and y,
    summed over every x on a wide grid."""
    y = np.array([6.4, 11.8])
    with pm.Model() as model:
        mu = pm.Gamma("mu", 2.0, 0.2)
        x = pm.Poisson("x", mu, shape=2)
        ppm.Release("y", Gaussian(1.5), x, observed=y)
    joint = model.compile_fn(model.logp(vars=[x, model["y"]]), inputs=model.value_vars, on_unused_input="ignore")
    marginal = marginalize(model)
    k1, k2 = np.meshgrid(np.arange(60), np.arange(60), indexing="ij")
    for mu_value in (3.0, 9.5):
        point = {"mu_log__": np.log(mu_value)}
        terms = [joint({**point, "x": np.array([a, b])}) for a, b in zip(k1.ravel(), k2.ravel(), strict=True)]
        expected = special.logsumexp(terms)
        assert _potential(marginal, {"mu": mu_value}) == pytest.approx(expected, abs=1e-10)
