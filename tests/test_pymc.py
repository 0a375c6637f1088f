"""The PyMC layer against the mechanisms and against exact_posterior."""

import numpy as np
import pymc as pm
import pytest

import ppdinfer as pp
import ppdinfer.pymc as ppm
from ppdinfer import mechanisms
from ppdinfer.models import beta_binomial, county_counts, table_2x2

pytestmark = pytest.mark.filterwarnings("ignore:Numba will use object mode")

K = np.arange(-400, 401)


@pytest.mark.parametrize("epsilon, sensitivity", [(0.05, 1.0), (0.7, 1.0), (3.0, 2.0)])
def test_discrete_laplace_matches_mechanism(epsilon, sensitivity):
    dist = ppm.DiscreteLaplace.dist(mu=4, epsilon=epsilon, sensitivity=sensitivity)
    logp = pm.logp(dist, K).eval()
    assert np.allclose(logp, mechanisms.DiscreteLaplace(epsilon, sensitivity).logpdf(4, K))
    if epsilon > 0.5:
        assert np.exp(logp).sum() == pytest.approx(1.0, abs=1e-12)
        assert np.allclose(np.exp(pm.logcdf(dist, K).eval()), np.cumsum(np.exp(logp)), atol=1e-12)


@pytest.mark.parametrize("sigma", [0.3, 0.999, 1.0, 4.0, 40.0])
def test_discrete_gaussian_matches_mechanism(sigma):
    logp = pm.logp(ppm.DiscreteGaussian.dist(mu=-2, sigma=sigma), K).eval()
    assert np.allclose(logp, mechanisms.DiscreteGaussian(sigma).logpdf(-2, K), rtol=1e-12, atol=1e-12)
    assert np.exp(logp).sum() == pytest.approx(1.0, abs=1e-12)


def test_parameter_checks_and_draws():
    with pytest.raises(Exception, match="epsilon > 0"):
        pm.logp(ppm.DiscreteLaplace.dist(mu=0, epsilon=-1.0), 0).eval()
    with pytest.raises(Exception, match="sigma > 0"):
        pm.logp(ppm.DiscreteGaussian.dist(mu=0, sigma=0.0), 0).eval()
    draws = pm.draw(ppm.DiscreteLaplace.dist(mu=[0, 100], epsilon=1.0, size=(2000, 2)), random_seed=1)
    assert draws.dtype == np.int64 and draws.shape == (2000, 2)
    assert np.allclose(draws.mean(axis=0), [0, 100], atol=0.15)
    again = pm.draw(ppm.DiscreteLaplace.dist(mu=[0, 100], epsilon=1.0, size=(2000, 2)), random_seed=1)
    assert np.array_equal(draws, again)
    gauss = pm.draw(ppm.DiscreteGaussian.dist(mu=5, sigma=2.0), draws=3000, random_seed=2)
    assert abs(gauss.mean() - 5) < 0.15 and abs(gauss.var() - 4) < 0.4


def test_prior_predictive_in_a_model():
    with pm.Model():
        x = pm.Poisson("x", 20.0)
        ppm.DiscreteLaplace("y", mu=x, epsilon=0.5)
        prior = pm.sample_prior_predictive(draws=500, random_seed=3)
    y = prior.prior["y"].values.reshape(-1)
    x = prior.prior["x"].values.reshape(-1)
    assert y.dtype == np.int64 and abs(np.var(y - x) - 2 * np.exp(-0.5) / (1 - np.exp(-0.5)) ** 2) < 2.5


# -- the twins against exact_posterior --

TWINS = {
    "beta_binomial": (beta_binomial.model(n=30, epsilon=1.0, a=2, b=2), 12, None, {}),
    "beta_binomial_latent": (beta_binomial.model(n=30, epsilon=1.0, a=2, b=2), 12, None, {"marginalize": False}),
    "county_counts": (
        county_counts.model(epsilon=1.0, concentration=20.0),
        [6, 2, 5],
        county_counts.public_information([5, 3, 3], 12),
        {},
    ),
    "table_2x2": (table_2x2.model(epsilon=1.0), 3, table_2x2.public_information([10, 12], 9), {}),
}


def _check_against_exact(idata, model, y, z):
    import arviz as az

    exact = pp.exact_posterior(model, y, z, draws=10)
    name = model.names[0]
    summary = az.summary(idata, var_names=[name])
    assert np.all(summary["r_hat"] <= 1.01)
    draws = idata.posterior[name].values.reshape(-1, exact["exact"].sizes["component"])
    ess = az.ess(idata, var_names=[name])[name].values.reshape(-1)
    z_scores = (draws.mean(axis=0) - exact["exact"]["theta_mean"].values) / (
        exact["exact"]["theta_sd"].values / np.sqrt(ess)
    )
    assert np.all(np.abs(z_scores) < 4.5), z_scores
    return exact


@pytest.mark.parametrize("name", TWINS)
def test_twin_matches_exact(name):
    model, y, z, kwargs = TWINS[name]
    with model.to_pymc(y, z, **kwargs):
        idata = ppm.sample(draws=1500, tune=500, chains=2, random_seed=4, progressbar=False)
    exact = _check_against_exact(idata, model, y, z)
    if "cases" in idata.posterior:  # every state of the latent counts keeps the public total
        assert np.all(idata.posterior["cases"].sum("county") == 12)
        means = idata.posterior["cases"].mean(("chain", "draw")).values
        exact_means = (exact["exact"]["x_support"].values * exact["exact"]["x_pmf"].values[:, None]).sum(axis=0)
        assert np.allclose(means, exact_means, atol=0.12)


def test_sampling_with_the_default_progress_bar():
    model, y, z, _ = TWINS["county_counts"]
    with model.to_pymc(y, z):
        idata = ppm.sample(draws=50, tune=20, chains=1, random_seed=1, compute_convergence_checks=False)
    assert idata.posterior.sizes["draw"] == 50


def test_latent_counts_with_nuts_for_theta():
    model, y, z, _ = TWINS["county_counts"]
    with model.to_pymc(y, z):
        idata = ppm.sample(conjugate=False, draws=1000, tune=500, chains=2, random_seed=5, progressbar=False)
    assert "accept_prior" in idata.sample_stats and "diverging" in idata.sample_stats
    _check_against_exact(idata, model, y, z)


def test_step_refuses_a_start_outside_the_public_total():
    model, y, z, _ = TWINS["county_counts"]
    with model.to_pymc(y, z), pytest.raises(Exception, match="cases"):
        ppm.sample(
            draws=10,
            tune=0,
            chains=1,
            initvals={"cases": np.array([6, 2, 5])},
            progressbar=False,
            compute_convergence_checks=False,
        )


def test_step_needs_a_privacy_release_and_a_supported_prior():
    with pm.Model():
        x = pm.Poisson("x", 3.0)
        with pytest.raises(ValueError, match="nothing in the model depends on x"):
            ppm.PrivacyAugmentation([x])
    with pm.Model():
        x = pm.NegativeBinomial("x", 3.0, 2.0)
        ppm.DiscreteLaplace("y", mu=x, epsilon=1.0, observed=4)
        with pytest.raises(ValueError, match="Multinomial, Binomial, Poisson or DiscreteUniform"):
            ppm.PrivacyAugmentation([x])


def test_bad_release_for_a_twin():
    model, y, z, _ = TWINS["county_counts"]
    with pytest.raises(ValueError, match="y has shape"):
        model.to_pymc([1, 2], z)
    with pytest.raises(ValueError, match="total"):
        model.to_pymc(y, {"previous": [5, 3, 3], "total": -1})


def test_parallel_chains_reproduce_sequential_ones():
    model, y, z, _ = TWINS["county_counts"]
    runs = []
    for cores in (1, 2):
        with model.to_pymc(y, z):
            runs.append(
                ppm.sample(
                    draws=200,
                    tune=100,
                    chains=2,
                    cores=cores,
                    random_seed=9,
                    progressbar=False,
                    mp_ctx="spawn",  # no fork of a process with threads (numba, dask)
                    compute_convergence_checks=False,
                )
            )
    assert np.array_equal(runs[0].posterior["cases"].values, runs[1].posterior["cases"].values)
    assert np.allclose(runs[0].posterior["share"].values, runs[1].posterior["share"].values)


def test_collapse_needs_a_conjugate_dirichlet():
    with pm.Model():
        x = pm.Poisson("x", 3.0)
        ppm.DiscreteLaplace("y", mu=x, epsilon=1.0, observed=4)
        with pytest.raises(ValueError, match="collapse=True"):
            ppm.PrivacyAugmentation([x], collapse=True)


def test_wasserstein_naive_release_posterior_matches_enumeration():
    """The L2 Wasserstein mechanism couples the counts; the step must still target the posterior."""
    from scipy import special

    from ppdinfer.generators import compositions

    alpha, total, epsilon, sigma = np.array([3.0, 2.0, 1.0]), 10, 1.0, 2.0
    y = np.array([6, 1, 4])
    support = compositions(total, 3)
    log_prior = (special.gammaln(support + alpha) - special.gammaln(support + 1)).sum(axis=1)
    log_post = log_prior - epsilon / (2 * sigma) * np.sqrt(((support - y) ** 2).sum(axis=1))
    pmf = np.exp(log_post - special.logsumexp(log_post))
    exact_mean = pmf @ support
    exact_sd = np.sqrt(pmf @ (support - exact_mean) ** 2)
    with pm.Model():
        share = pm.Dirichlet("share", a=alpha)
        cases = pm.Multinomial("cases", n=total, p=share, initval=np.array([5, 1, 4]))
        ppm.WassersteinNaive("y", mu=cases, epsilon=epsilon, sigma=sigma, observed=y)
        idata = ppm.sample(
            draws=2000, tune=300, chains=2, random_seed=3, progressbar=False, compute_convergence_checks=False
        )
    import arviz as az

    draws = idata.posterior["cases"].values.reshape(-1, 3)
    ess = az.ess(idata, var_names=["cases"])["cases"].values
    z_scores = (draws.mean(axis=0) - exact_mean) / (exact_sd / np.sqrt(ess))
    assert np.all(np.abs(z_scores) < 4.5), z_scores
    # ignoring the coupling (treating the release as separable Laplace noise) gives another posterior
    separable = log_prior - epsilon / (2 * sigma) * np.abs(support - y).sum(axis=1)
    other = np.exp(separable - special.logsumexp(separable)) @ support
    assert np.max(np.abs(other - exact_mean) / (exact_sd / np.sqrt(ess))) > 4.5


def test_wasserstein_naive_draws_and_logp():
    dist = ppm.WassersteinNaive.dist(mu=np.array([10, 20, 30]), epsilon=1.0, sigma=2.0)
    value = np.array([12, 20, 27])
    assert pm.logp(dist, value).eval() == pytest.approx(-0.25 * np.sqrt(4 + 9))
    draws = pm.draw(dist, draws=200, random_seed=1)
    assert draws.shape == (200, 3) and draws.dtype == np.int64
    assert np.allclose(draws.mean(axis=0), [10, 20, 30], atol=3.0)
