"""ppdinfer.pymc.Release inside hand-written PyMC models, sampled by ppdinfer.pymc.sample.

Every mechanism family is observed through ``Release`` in a model written by hand, and the
posterior means from ``sample`` are compared with the exact ones (enumeration by
``pp.exact_posterior`` or by hand over a finite support, quadrature for a continuous x) within
4 Monte Carlo standard errors (ArviZ's mcse). The data-augmentation moves exist once: the
Python-likelihood sweeps and the compiled ones make identical chains from one seed.
"""

from __future__ import annotations

import warnings

import arviz as az
import numpy as np
import pymc as pm
import pytensor.tensor as pt
import pytest
from scipy import stats

import ppdinfer as pp
import ppdinfer.pymc as ppm
from ppdinfer.kernels.augmentation import (
    BETA_BINOMIAL,
    BINOMIAL,
    DIRICHLET_MULTINOMIAL,
    GAMMA_POISSON,
    MULTINOMIAL,
    POISSON,
    augmentation_sweeps,
)
from ppdinfer.models import congenial_counts
from ppdinfer.privacy import contingency_sensitivity_space
from ppdinfer.pymc.augmentation import gamma_poisson_rate, generic_sweeps

M = pp.mechanisms
pytestmark = pytest.mark.filterwarnings("ignore:Numba will use object mode")
SAMPLE = dict(tune=300, chains=2, cores=1, progressbar=False, compute_convergence_checks=False)


def fit(model, draws=1000, seed=7, method="augment"):
    """The data-augmentation fit these tests check (``method="auto"`` would sum additive releases out)."""
    with model, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return ppm.sample(draws=draws, random_seed=seed, method=method, **SAMPLE)


def assert_mean(idata, name, exact, k=4.0):
    mean = idata["posterior"][name].mean(("chain", "draw")).values.ravel()
    se = np.asarray(az.mcse(idata, var_names=[name])[name]).ravel()
    assert np.all(np.abs(mean - np.ravel(exact)) <= k * se), (name, mean, exact, se)


# -- one implementation of the moves ----------------------------------------------------------------


@pytest.mark.parametrize("kind", [MULTINOMIAL, DIRICHLET_MULTINOMIAL, BINOMIAL, POISSON, GAMMA_POISSON, BETA_BINOMIAL])
@pytest.mark.parametrize(
    "frequency", [(1.0, 1.0, 0.0), (0.5, 1.0, 0.0), (1.0, 0.0, 1.0)], ids=["release", "adapted", "local"]
)
def test_python_likelihood_sweeps_are_the_compiled_sweeps(kind, frequency):
    y = np.array([3.4, 9.1, 0.2, 5.5, 7.0])
    rate, power = 0.7, 1
    x = np.array([4, 6, 1, 5, 2], dtype=np.int64)
    n = np.full(5, 16.0 if kind in (BINOMIAL, BETA_BINOMIAL) else 2.5)  # trials, a Gamma-Poisson's shape, a total
    p = np.array([0.2, 0.4, 0.1, 0.2, 0.1]) if kind != POISSON else np.array([3.0, 8.0, 1.0, 5.0, 6.0])
    if kind == DIRICHLET_MULTINOMIAL:
        p = np.array([1.0, 2.0, 0.5, 1.5, 1.0])
    # the packed parameters, one row per coordinate (the columns of COLUMNS[kind])
    params = {POISSON: p[:, None], BETA_BINOMIAL: np.stack([n, 1 + y / 2, 1 + (n - y) / 2], axis=1)}.get(
        kind, np.stack([n, p], axis=1)
    )
    scale, frequency = np.full(5, 2.0), np.array(frequency)
    compiled, generic = x.copy(), x.copy()
    compiled_counts = augmentation_sweeps(kind, compiled, y, params, rate, power, False, scale, y, frequency, 7, 123)
    generic_counts = generic_sweeps(
        kind, generic, params, scale, y, frequency, 7, lambda v: -rate * np.abs(y - v).sum(), 123
    )
    assert np.array_equal(compiled, generic) and np.array_equal(compiled_counts, generic_counts)
    made = frequency > 0
    assert compiled_counts[0, made].min() > 0 and not compiled_counts[1, ~made].any()  # every move made and accepted
    if frequency[0] < 1:
        assert 0 < compiled_counts[1, 0] < compiled_counts[1, 1]  # the prior move on about half the pairs
    if kind in (MULTINOMIAL, DIRICHLET_MULTINOMIAL):
        assert compiled.sum() == x.sum()


# -- every mechanism family against enumeration --------------------------------------------------------


def _coarsened(mechanism):
    """A discrete Laplace release published in bins of 4 (post-processed)."""
    return M.PostProcessedRelease(mechanism, lambda y, z: 4 * np.floor_divide(y, 4), box=np.arange(-40, 75)[:, None])


def _opendp_laplace():
    import opendp.prelude as dp

    dp.enable_features("contrib")
    space = dp.atom_domain(T=int), dp.absolute_distance(T=int)
    return pp.interop.from_opendp(dp.m.make_laplace(*space, scale=2.0))


BINOMIAL_RELEASES = {
    "Laplace": (lambda: M.Laplace(0.5), 13.3),
    "Gaussian": (lambda: M.Gaussian(2.0), 13.3),
    "DiscreteLaplace": (lambda: M.DiscreteLaplace(0.5), 13),
    "DiscreteGaussian": (lambda: M.DiscreteGaussian(2.0), 13),
    "Tulap": (lambda: M.Tulap(0.5), 13.3),
    "CanonicalNoise": (lambda: M.CanonicalNoise.approximate(0.5, 1e-3), 13.3),
    "PostProcessedRelease": (lambda: _coarsened(M.DiscreteLaplace(0.5)), 12),
    "OpenDP": (_opendp_laplace, 13),
}


@pytest.mark.parametrize("name", BINOMIAL_RELEASES)
def test_release_of_a_binomial_count_matches_enumeration(name):
    mechanism, y = BINOMIAL_RELEASES[name][0](), BINOMIAL_RELEASES[name][1]
    exact = pp.exact_posterior(pp.PPDModel(pp.priors.Beta(2, 3), pp.generators.Binomial(30), mechanism, names="p"), y)[
        "exact"
    ]
    with pm.Model() as model:
        p = pm.Beta("p", 2, 3)
        x = pm.Binomial("x", n=30, p=p)
        ppm.Release("y", mechanism, x, observed=y)
    idata = fit(model)
    assert_mean(idata, "p", exact["theta_mean"].values)
    assert_mean(idata, "x", exact["x_pmf"].values @ exact["x_support"].values.reshape(-1))
    assert "accept_prior" in idata["sample_stats"]  # x had the augmentation step, not Metropolis
    if mechanism.additive_noise is not None:  # summed out (issue 34): the same posterior
        summed = fit(model, method="marginalize")
        assert summed["posterior"].attrs["ppdinfer_method"] == "marginalize"
        assert_mean(summed, "p", exact["theta_mean"].values)
        assert_mean(summed, "x", exact["x_pmf"].values @ exact["x_support"].values.reshape(-1))


def test_congenial_release_of_counts_with_a_public_total_matches_enumeration():
    gallery = congenial_counts.model(epsilon=0.5, total=5, n_categories=3)
    y, z = np.array([3, 2, 0]), congenial_counts.public_information(total=5)
    exact = pp.exact_posterior(gallery, y, z)["exact"]
    with pm.Model() as model:
        share = pm.Dirichlet("share", a=np.ones(3))
        counts = pm.Multinomial("counts", n=5, p=share, initval=ppm.feasible_total_start(y, 5))
        ppm.Release("y", gallery.mechanism, counts, observed=y)
    idata = fit(model, draws=600)  # the congenial logpdf costs 0.2 ms a call
    assert bool((idata["posterior"]["counts"].sum("counts_dim_0") == 5).all())
    assert_mean(idata, "counts", exact["x_pmf"].values @ exact["x_support"].values.reshape(exact["x_pmf"].size, -1))
    assert_mean(idata, "share", exact["theta_mean"].values)


def _table(n11):
    """The 2 x 2 table with rows (6, 5) and columns (4, 7) whose first cell is n11 (0..4)."""
    return pt.stack([pt.stack([n11, 6 - n11]), pt.stack([4 - n11, 1 + n11])])


@pytest.mark.parametrize(
    "mechanism",
    [
        M.SemiDPGaussian(1.0, contingency_sensitivity_space(2, 2)),
        M.KNormMechanism(1.0, contingency_sensitivity_space(2, 2)),
    ],
    ids=["SemiDPGaussian", "KNormMechanism"],
)
def test_semidp_release_of_a_table_with_public_margins_matches_enumeration(mechanism):
    # x is an expression of one integer latent: the table with the public margins
    support = np.arange(5)
    tables = np.array([[[k, 6 - k], [4 - k, 1 + k]] for k in support])
    y = mechanism.release(tables[1], random_seed=3)
    log_post = stats.binom.logpmf(support, 4, 0.4) + mechanism.logpdf(y, tables)
    weights = np.exp(log_post - log_post.max())
    with pm.Model() as model:
        n11 = pm.Binomial("n11", n=4, p=0.4)
        ppm.Release("y", mechanism, _table(n11), observed=y)
    idata = fit(model, draws=1500)
    assert_mean(idata, "n11", weights @ support / weights.sum())


def test_wasserstein_exponential_release_of_cases_and_deaths_matches_enumeration():
    # two integer latents feed the (2, J) release: cases (a multinomial with the public total)
    # and deaths given cases (binomial): each gets its step, the moves read the whole model
    mechanism = M.WassersteinExponential(1.0, 2.0)
    y = mechanism.release(np.array([[3, 1], [1, 0]]), random_seed=5)
    rows = []
    for c0 in range(5):
        cases = np.array([c0, 4 - c0])
        for d0 in range(c0 + 1):
            for d1 in range(4 - c0 + 1):
                rows.append((cases, np.array([d0, d1])))
    tables = np.array([np.stack([c, d]) for c, d in rows])
    log_prior = np.array(
        [stats.multinomial.logpmf(c, 4, [0.5, 0.5]) + stats.binom.logpmf(d, c, 0.3).sum() for c, d in rows]
    )
    log_post = log_prior + mechanism.logpdf(y, tables)
    weights = np.exp(log_post - log_post.max())
    weights /= weights.sum()
    with pm.Model() as model:
        cases = pm.Multinomial("cases", n=4, p=[0.5, 0.5], initval=np.array([2, 2]))
        deaths = pm.Binomial("deaths", n=cases, p=0.3, initval=np.array([1, 0]))
        ppm.Release("y", mechanism, pt.stack([cases, deaths]), observed=y)
    idata = fit(model, draws=1500)
    assert_mean(idata, "cases", weights @ tables[:, 0])
    assert_mean(idata, "deaths", weights @ tables[:, 1])


@pytest.mark.parametrize("mechanism", [M.DiscreteLaplace(0.5), M.Tulap(0.5)], ids=["compiled", "generic"])
def test_rows_of_a_table_keep_their_totals_and_match_enumeration(mechanism):
    # a (2, 3) table of multinomial rows with public row totals; the rows are independent a posteriori
    totals, y = np.array([9, 6]), np.array([[5, 3, 1], [0, 4, 2]])
    row_model = pp.PPDModel(pp.priors.Dirichlet([1.0, 1.0, 1.0]), pp.generators.MultinomialTotal("total"), mechanism)
    exact = [pp.exact_posterior(row_model, y[r], {"total": int(totals[r])})["exact"] for r in range(2)]
    with pm.Model() as model:
        share = pm.Dirichlet("share", a=np.ones((2, 3)))
        table = pm.Multinomial("table", n=totals, p=share, initval=np.array([[3, 3, 3], [2, 2, 2]]))
        ppm.Release("y", mechanism, table, observed=y)
    idata = fit(model)
    assert bool((idata["posterior"]["table"].sum("table_dim_1") == totals).all())
    assert_mean(idata, "table", [e["x_pmf"].values @ e["x_support"].values.reshape(e["x_pmf"].size, -1) for e in exact])


# -- continuous x: gradients for NUTS ------------------------------------------------------------------


def test_gaussian_release_of_continuous_values_matches_the_conjugate_posterior():
    y, tau, sigma = np.array([1.2, -0.7, 3.1]), 2.0, 1.5
    with pm.Model() as model:
        mu = pm.Normal("mu", 0.0, tau, shape=3)
        ppm.Release("y", M.Gaussian(sigma), mu, observed=y)
    idata = fit(model)
    assert_mean(idata, "mu", y * tau**2 / (tau**2 + sigma**2))
    sd = idata["posterior"]["mu"].std(("chain", "draw")).values
    assert np.all(np.abs(sd - np.sqrt(1 / (1 / tau**2 + 1 / sigma**2))) < 0.08), sd


def test_non_additive_release_of_a_continuous_value_matches_quadrature():
    # canonical noise for 1-GDP is not Gaussian; NUTS runs on the central-difference gradient of its logpdf
    mechanism, y = M.CanonicalNoise.gaussian(1.0), 1.3
    grid = np.linspace(-12, 14, 20001)
    log_post = stats.norm(0, 3).logpdf(grid) + mechanism.logpdf(y, grid)
    weights = np.exp(log_post - log_post.max())
    with pm.Model() as model:
        mu = pm.Normal("mu", 0.0, 3.0)
        ppm.Release("y", mechanism, mu, observed=y)
    idata = fit(model, draws=800)
    assert_mean(idata, "mu", weights @ grid / weights.sum())


# -- models users write, and what sample assigns ---------------------------------------------------------


def test_a_plain_normal_release_of_poisson_counts_gets_the_augmentation_step():
    # the model a user writes without ppdinfer: x ~ Poisson(e lambda), y ~ Normal(x, sigma)
    exposure, sigma, y = np.array([2.0, 5.0]), 3.0, np.array([7.4, 11.2])
    with pm.Model() as model:
        rate = pm.Gamma("rate", 2.0, 1.0, shape=2)
        x = pm.Poisson("x", rate * exposure)
        pm.Normal("y", mu=x, sigma=sigma, observed=y)
    idata = fit(model)
    assert "accept_prior" in idata["sample_stats"]
    support = np.arange(80)
    for k in range(2):  # x_k's prior is negative binomial (Gamma-Poisson)
        log_post = stats.nbinom.logpmf(support, 2.0, 1 / (1 + exposure[k])) + stats.norm.logpdf(y[k], support, sigma)
        weights = np.exp(log_post - log_post.max())
        mean = weights @ support / weights.sum()
        draws = idata["posterior"]["x"].isel(x_dim_0=k)
        assert abs(float(draws.mean()) - mean) <= 4 * float(az.mcse(draws.to_dataset(name="v"))["v"])


def test_gamma_rates_integrated_out_of_poisson_counts_match_quadrature():
    # rate_k ~ Gamma(2, 1) per hospital, x_k ~ Poisson(e_k rate_k): sample collapses the rates out of
    # x's update (negative binomial moves) and draws rate | x exactly (ConjugateGamma)
    exposure, sigma, y = np.array([3.0, 40.0, 150.0]), 4.0, np.array([4.6, 95.2, 262.9])
    with pm.Model() as model:
        rate = pm.Gamma("rate", alpha=2.0, beta=1.0, shape=3)
        x = pm.Poisson("x", rate * exposure, initval=np.round(y).astype(int))
        ppm.Release("y", M.Gaussian(sigma), x, observed=y)
    found, found_exposure = gamma_poisson_rate(model, model["x"])
    assert found is model["rate"] and np.array_equal(found_exposure, exposure)
    idata = fit(model, draws=1500)
    assert float(idata["sample_stats"]["accept_prior"].mean()) > 0
    support = np.arange(600)
    for k in range(3):
        log_post = stats.nbinom.logpmf(support, 2.0, 1 / (1 + exposure[k])) + stats.norm.logpdf(y[k], support, sigma)
        weights = np.exp(log_post - log_post.max())
        weights /= weights.sum()
        for name, exact in (("x", weights @ support), ("rate", weights @ ((2.0 + support) / (1.0 + exposure[k])))):
            draws = idata["posterior"][name].isel({f"{name}_dim_0": k})
            assert abs(float(draws.mean()) - exact) <= 4 * float(az.mcse(draws.to_dataset(name="v"))["v"]), (name, k)


def test_a_latent_without_an_augmentation_step_is_named():
    with pm.Model() as model:
        x = pm.NegativeBinomial("x", 3.0, 2.0)
        ppm.Release("y", M.Laplace(1.0), x, observed=2.5)
    with model, pytest.warns(ppm.AugmentationWarning, match="x is an integer latent observed through y"):
        ppm.sample(draws=20, tune=20, chains=1, progressbar=False, compute_convergence_checks=False, random_seed=1)


def test_posterior_predictive_releases_come_from_the_mechanism():
    mechanism = M.DiscreteLaplace(1.0)
    with pm.Model() as model:
        x = pm.Poisson("x", 10.0, shape=2)
        ppm.Release("y", mechanism, x, observed=[9, 12])
    idata = fit(model, draws=500)
    with model:
        replicated = pm.sample_posterior_predictive(idata, random_seed=2, progressbar=False)
    y_rep = replicated["posterior_predictive"]["y"].values
    x = idata["posterior"]["x"].values
    assert y_rep.shape == x.shape and y_rep.dtype.kind == "i"
    noise = (y_rep - x).ravel()  # discrete Laplace noise, variance 2a / (1 - a)^2
    a = np.exp(-1.0)
    assert abs(noise.var() - 2 * a / (1 - a) ** 2) < 0.15 and abs(noise.mean()) < 0.1


# -- bad input -------------------------------------------------------------------------------------------


def test_bad_releases_are_refused():
    with pm.Model():
        x = pm.Poisson("x", 3.0, shape=2)
        with pytest.raises(ValueError, match="discrete mechanism .* non-integer"):
            ppm.Release("y", M.DiscreteLaplace(1.0), x, observed=[3.5, 2.0])
        with pytest.raises(ValueError, match=r"observed y has shape \(3,\) but x has shape \(2,\)"):
            ppm.Release("y", M.Laplace(1.0), x, observed=[3.0, 2.0, 1.0])
        with pytest.raises(ValueError, match="needs observed=y"):
            ppm.Release("y", M.Laplace(1.0), x)
        with pytest.raises(ValueError, match="mechanism must be a ppdinfer.mechanisms.Mechanism"):
            ppm.Release("y", "laplace", x, observed=[3.0, 2.0])
        with pytest.raises(ValueError, match="non-integer"):
            ppm.DiscreteGaussian("w", mu=x, sigma=2.0, observed=[3.5, 2.9])
        with pytest.raises(ValueError, match="non-integer"):
            ppm.DiscreteLaplace("v", mu=x, epsilon=1.0, observed=[3.5, 2.9])


def test_sample_records_each_releases_guarantee_in_the_constant_data(tmp_path):
    mechanism = M.Gaussian.from_epsilon_delta(1.0, 1e-6)
    with pm.Model() as model:
        p = pm.Beta("p", 2, 3)
        x = pm.Binomial("x", n=30, p=p)
        ppm.Release("y", mechanism, x, observed=13.3)
    idata = fit(model, draws=50)
    attrs = idata["constant_data"].attrs
    assert attrs["y_guarantee"] == "approximate"
    assert (attrs["y_guarantee_epsilon"], attrs["y_guarantee_delta"]) == (1.0, 1e-6)
    assert attrs["y_mechanism"] == repr(mechanism)
    idata.to_netcdf(tmp_path / "fit.nc")  # plain strings and floats: netCDF-safe
