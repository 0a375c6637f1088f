"""Per-unit and hierarchical models: vector priors, hyperpriors, per-unit data models, exact
per-unit rejection and their PyMC twins (issue 23).

Exact references: scipy's densities for the priors and data models; for the per-unit Beta-Binomial
units pp.exact_posterior of each unit's scalar model; for Gamma-Poisson units the closed form
E(lambda | y) = sum_x pi(x | y) (a + x) / (b + e) over the negative-binomial marginal of x; for
the hierarchical Beta-Binomial a quadrature over (m, k) on grids of equal prior mass. Rejection
draws are iid, so their means must lie within 4 standard errors; PyMC's within 4 MCSE.
"""

from __future__ import annotations

import warnings

import arviz as az
import numpy as np
import pytest
from scipy import special, stats

import ppdinfer as pp
from ppdinfer import generators, mechanisms, priors
from ppdinfer.mechanisms.base import Mechanism
from ppdinfer.pymc import from_model, sample_model

pytestmark = pytest.mark.filterwarnings("ignore:Numba will use object mode")


# -- priors ------------------------------------------------------------------------------------
def test_vector_gamma_and_beta_are_products_of_their_units():
    rates = priors.Gamma(2.0, [1.0, 2.0, 4.0])
    probabilities = priors.Beta([1.0, 2.0], 3.0, size=2)
    assert (rates.units, probabilities.units) == (3, 2)
    theta = rates.rvs(5, random_state=0)
    assert theta.shape == (5, 3)
    expected = stats.gamma.logpdf(theta, 2.0, scale=1 / np.array([1.0, 2.0, 4.0])).sum(axis=1)
    np.testing.assert_allclose(rates.logpdf(theta), expected)
    p = probabilities.rvs(4, random_state=1)
    np.testing.assert_allclose(probabilities.logpdf(p), stats.beta.logpdf(p, [1.0, 2.0], 3.0).sum(axis=1))
    assert priors.Gamma(2.0, 1.0, size=200).rvs(3, random_state=0).shape == (3, 200)
    assert repr(rates.unit(2)) == "Gamma(shape=2.0, rate=4.0)"
    draws = priors.Gamma(2.0, [1.0, 4.0]).rvs(20_000, random_state=2)
    np.testing.assert_allclose(draws.mean(axis=0), [2.0, 0.5], rtol=0.03)  # mean shape / rate per unit


def test_vector_prior_errors_summarise_the_values():
    with pytest.raises(
        ValueError,
        match=r"shape must hold positive finite numbers: 1 of its 200 values are not, "
        r"the first -1.0 at index 7",
    ) as info:
        priors.Gamma([2.0] * 7 + [-1.0] + [2.0] * 192, 1.0)
    assert len(str(info.value)) < 150
    with pytest.raises(ValueError, match="alpha has 3 values but size=4"):
        priors.Beta([1.0, 2.0, 3.0], 1.0, size=4)
    with pytest.raises(ValueError, match="shape and rate have 2 and 3 values"):
        priors.Gamma([1.0, 2.0], [1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="size must be a positive integer"):
        priors.Gamma(2.0, 1.0, size=0)
    assert len(repr(priors.Gamma(2.0, 1.0, size=200))) < 200


def test_hierarchical_gamma_density_and_draws():
    prior = priors.HierarchicalGamma(shape=priors.Gamma(3.0, 1.0), mean=priors.Gamma(2.0, 4.0), size=4)
    assert prior.blocks == {"shape": (), "mean": (), "rate": (4,)} and prior.dim == 6
    theta = prior.rvs(6, random_state=0)
    a, m, rate = theta[:, 0], theta[:, 1], theta[:, 2:]
    expected = (
        stats.gamma.logpdf(a, 3.0)
        + stats.gamma.logpdf(m, 2.0, scale=1 / 4.0)
        + stats.gamma.logpdf(rate, a[:, None], scale=(m / a)[:, None]).sum(axis=1)
    )
    np.testing.assert_allclose(prior.logpdf(theta), expected)
    # given (a, m) the rates are Gamma(a, a / m): E(rate / m) = 1, Var(rate / m) = 1 / a
    draws = prior.rvs(20_000, random_state=1)
    ratio = draws[:, 2:] / draws[:, [1]]
    assert abs(ratio.mean() - 1) < 0.01
    assert abs((ratio.var(axis=1, ddof=1) * draws[:, 0]).mean() - 1) < 0.05


def test_hierarchical_beta_density_and_refusals():
    prior = priors.HierarchicalBeta(mean=priors.Beta(2.0, 3.0), concentration=priors.Gamma(5.0, 0.5), size=3)
    theta = prior.rvs(5, random_state=0)
    m, k, p = theta[:, 0], theta[:, 1], theta[:, 2:]
    expected = (
        stats.beta.logpdf(m, 2.0, 3.0)
        + stats.gamma.logpdf(k, 5.0, scale=2.0)
        + stats.beta.logpdf(p, (m * k)[:, None], ((1 - m) * k)[:, None]).sum(axis=1)
    )
    np.testing.assert_allclose(prior.logpdf(theta), expected)
    assert prior.logpdf([[1.5, 2.0, 0.5, 0.5, 0.5]])[0] == -np.inf  # a mean outside (0, 1)
    with pytest.raises(ValueError, match="mean must be a scalar priors.Beta or priors.Gamma"):
        priors.HierarchicalBeta(mean=priors.Beta(1.0, 1.0, size=3), concentration=priors.Gamma(1.0, 1.0), size=3)


# -- data models ----------------------------------------------------------------------------------
def test_per_unit_poisson_and_binomial():
    rng = np.random.default_rng(0)
    poisson = generators.Poisson([1.0, 10.0, 100.0])
    rates = np.array([[0.5, 0.2, 0.03], [2.0, 1.0, 0.1]])
    x = poisson(rates, None, rng)
    assert x.shape == (2, 3)
    expected = stats.poisson.logpmf(x[None], rates[:, None] * [1.0, 10.0, 100.0]).sum(axis=-1)
    np.testing.assert_allclose(poisson.logpmf(x, rates), expected)
    assert poisson(np.array([0.1, 0.2]), None, rng).shape == (2, 3)  # a shared rate, as before
    many = poisson(np.tile([2.0, 1.0, 0.1], (20_000, 1)), None, rng)
    np.testing.assert_allclose(many.mean(axis=0), [2.0, 10.0, 10.0], rtol=0.03)

    binomial = generators.Binomial([3, 5])
    p = np.array([[0.2, 0.7]])
    support = binomial.support()
    assert support.shape == (24, 2)
    pmf = np.exp(binomial.logpmf(support, p))[0]
    np.testing.assert_allclose(pmf, stats.binom.pmf(support, [3, 5], [0.2, 0.7]).prod(axis=1))
    assert abs(pmf.sum() - 1) < 1e-12
    with pytest.raises(ValueError, match="theta has 3 values per draw .* but n has 2 entries"):
        binomial(np.full((1, 3), 0.5), None, rng)
    with pytest.raises(ValueError, match=r"n must hold positive integers: 1 of its 3 values"):
        generators.Binomial([3, 0, 5])
    assert generators.Binomial(4).support(theta_dim=2).shape == (25, 2)  # two units of 4 each


# -- the model ------------------------------------------------------------------------------------
def test_prepare_names_both_sizes_and_shapes():
    model = pp.PPDModel(
        priors.Gamma(2.0, 1.0, size=150),
        generators.Poisson(np.ones(200)),
        mechanisms.Laplace(1.0),
        names="rate",
        dims={"rate": "hospital", "x": "hospital"},
    )
    with pytest.raises(
        ValueError,
        match=r"the prior has 150 units \(rate, dims \('hospital',\)\) but the data "
        r"model Poisson has 200",
    ):
        model.prepare(np.zeros(200), None)
    model = pp.PPDModel(
        priors.Gamma(2.0, 1.0, size=3),
        generators.Poisson(np.ones(3)),
        mechanisms.Laplace(1.0),
        names="rate",
        dims={"x": "hospital"},
    )
    with pytest.raises(
        ValueError,
        match=r"y has shape \(4,\) but the model's x has shape \(3,\) "
        r"\(dims \('hospital',\)\)",
    ):
        model.prepare(np.zeros(4), None)
    with pytest.raises(ValueError, match="names has 2 entries but the prior has 3 blocks"):
        pp.PPDModel(
            priors.HierarchicalGamma(priors.Gamma(1.0, 1.0), priors.Gamma(1.0, 1.0), size=3),
            generators.Poisson(np.ones(3)),
            mechanisms.Laplace(1.0),
            names=["a", "m"],
        )


@pytest.mark.filterwarnings("ignore::ppdinfer.ImportanceWarning")
def test_the_data_model_sees_only_the_unit_parameters():
    seen = []

    def simulate(theta, z, rng):
        seen.append(np.array(theta))
        return rng.poisson(theta)

    prior = priors.HierarchicalGamma(priors.Gamma(5.0, 1.0), priors.Gamma(2.0, 1.0), size=3)
    model = pp.PPDModel(prior, simulate, mechanisms.Laplace(1.0))
    assert model.names == ("shape", "mean", "rate") and model.unit_name == "rate"
    result = pp.importance_sample(model, [1.0, 2.0, 3.0], draws=50, random_seed=0)
    assert all(theta.shape[1:] == (3,) for theta in seen)
    posterior = result["posterior"]
    assert posterior["shape"].dims == ("chain", "draw") and posterior["rate"].shape == (1, 50, 3)
    # the unit block is exactly the part of theta the data model saw (x = Poisson(rate) has mean rate)
    proposal = result["proposal"]
    assert proposal["rate"].shape[-1] == 3 and "theta" not in posterior


# -- exact per-unit rejection -----------------------------------------------------------------------
def _assert_mean_within(draws, exact, sd, n):
    assert np.all(np.abs(draws - exact) <= 4 * sd / np.sqrt(n)), (draws, exact, sd)


def test_per_unit_rejection_matches_per_unit_enumeration():
    alpha, beta, n = [1.0, 2.0, 4.0], [2.0, 2.0, 1.0], [5, 8, 6]
    mechanism = mechanisms.DiscreteLaplace(0.7)
    model = pp.PPDModel(priors.Beta(alpha, beta), generators.Binomial(n), mechanism, names="p")
    y = np.array([1, 6, 7])
    result = pp.rejection_sample(model, y, draws=3000, random_seed=3, progressbar=False)
    assert result.attrs["per_unit"] and result.attrs["complete"]
    posterior = result["posterior"]
    draws = posterior["p"].values.reshape(-1, 3)
    x = posterior["x"].values.reshape(-1, 3)
    for k in range(3):
        unit = pp.PPDModel(priors.Beta(alpha[k], beta[k]), generators.Binomial(n[k]), mechanism, names="p")
        exact = pp.exact_posterior(unit, y[k])["exact"]
        _assert_mean_within(draws[:, k].mean(), float(exact["theta_mean"][0]), float(exact["theta_sd"][0]), 3000)
        pmf = exact["x_pmf"].values
        x_mean = pmf @ np.arange(n[k] + 1)
        x_sd = np.sqrt(pmf @ np.arange(n[k] + 1) ** 2 - x_mean**2)
        _assert_mean_within(x[:, k].mean(), x_mean, x_sd, 3000)
    # each unit had its own acceptance rate p(y_k) / M
    assert result["sample_stats"]["acceptance_rate"].shape == (3,)
    assert abs(np.corrcoef(draws[:, 0], draws[:, 1])[0, 1]) < 0.1  # independent units


def _gamma_poisson_exact(shape, rate, exposure, y, mechanism, top=400):
    """E(lambda | y) and sd from the negative-binomial marginal of x and the release density."""
    x = np.arange(top)
    log_prior_x = stats.nbinom.logpmf(x, shape, rate / (rate + exposure))
    weights = np.exp(
        log_prior_x
        + mechanism.logpdf(np.array([y]), x[:, None])
        - special.logsumexp(log_prior_x + mechanism.logpdf(np.array([y]), x[:, None]))
    )
    a, b = shape + x, rate + exposure
    mean = weights @ (a / b)
    second = weights @ (a * (a + 1) / b**2)
    return mean, np.sqrt(second - mean**2)


def test_per_unit_rejection_matches_the_gamma_poisson_closed_form():
    exposure = np.array([0.5, 2.0, 5.0, 10.0])
    mechanism = mechanisms.Gaussian(1.5)
    model = pp.PPDModel(priors.Gamma(2.0, 1.0, size=4), generators.Poisson(exposure), mechanism, names="rate")
    y = np.array([0.3, 4.1, 12.5, 14.0])
    result = pp.rejection_sample(model, y, draws=3000, random_seed=4, progressbar=False)
    draws = result["posterior"]["rate"].values.reshape(-1, 4)
    for k in range(4):
        mean, sd = _gamma_poisson_exact(2.0, 1.0, exposure[k], y[k], mechanism)
        _assert_mean_within(draws[:, k].mean(), mean, sd, 3000)
    # the joint acceptance rate would be the product of the per-unit rates
    assert float(np.prod(result["sample_stats"]["acceptance_rate"])) < 0.01


def test_a_budget_stops_the_per_unit_run_with_the_draws_every_unit_has():
    model = pp.PPDModel(
        priors.Gamma(2.0, 1.0, size=3), generators.Poisson([1.0, 2.0, 3.0]), mechanisms.Laplace(3.0), names="rate"
    )
    with pytest.warns(pp.BudgetWarning, match="max_proposals=16384 in unit 1 of 3"):
        result = pp.rejection_sample(
            model, [2.0, 30.0, 3.0], draws=500, max_proposals=16384, random_seed=0, progressbar=False
        )
    assert not result.attrs["complete"] and result["posterior"].sizes["draw"] == 0
    assert result["sample_stats"]["total_proposals"].values.tolist()[2] == 0  # unit 2 never ran


class _Coupled(Mechanism):
    """Laplace noise, but not declared separable (any mechanism the package cannot split)."""

    discrete = False

    def __init__(self):
        self._inner = mechanisms.Laplace(1.0)

    def logpdf(self, y, x, z=None):
        return self._inner.logpdf(y, x, z)

    def log_bound(self, z=None, size=1):
        return self._inner.log_bound(z, size)

    def parameters(self):
        return {}


def test_exact_samplers_refuse_where_the_posterior_does_not_factorize():
    hierarchical = pp.PPDModel(
        priors.HierarchicalGamma(priors.Gamma(2.0, 1.0), priors.Gamma(2.0, 1.0), size=3),
        generators.Poisson(np.ones(3)),
        mechanisms.Laplace(1.0),
        names=["a", "m", "rate"],
    )
    with pytest.raises(ValueError, match="hyperprior of HierarchicalGamma couples the units.*sample_model"):
        pp.rejection_sample(hierarchical, [1.0, 2.0, 3.0], draws=10)
    with pytest.raises(ValueError, match="sample_model"):
        pp.exact_posterior(hierarchical, [1.0, 2.0, 3.0])
    coupled = pp.PPDModel(priors.Gamma(2.0, 1.0, size=3), generators.Poisson(np.ones(3)), _Coupled(), names="rate")
    with pytest.raises(ValueError, match="not separable over coordinates.*sample_model"):
        pp.rejection_sample(coupled, [1.0, 2.0, 3.0], draws=10)
    per_unit = pp.PPDModel(priors.Beta(1.0, 1.0, size=2), generators.Binomial([3, 4]), mechanisms.Laplace(1.0))
    with pytest.raises(ValueError, match="rejection_sample draws them exactly"):
        pp.exact_posterior(per_unit, [1.0, 2.0])


# -- the PyMC twins -----------------------------------------------------------------------------------
SAMPLE = dict(tune=500, chains=2, cores=1, random_seed=11, progressbar=False, compute_convergence_checks=False)


def _assert_within_mcse(idata, name, exact):
    mean = idata["posterior"][name].mean(("chain", "draw")).values.ravel()
    se = np.asarray(az.mcse(idata, var_names=[name])[name]).ravel()
    assert np.all(np.abs(mean - exact) <= 4 * se), (name, mean, exact, se)


def test_from_model_builds_vector_and_hierarchical_variables():
    model = pp.PPDModel(
        priors.HierarchicalGamma(priors.Gamma(2.0, 1.0), priors.Gamma(2.0, 1.0), size=3),
        generators.Poisson([1.0, 2.0, 3.0]),
        mechanisms.Gaussian(1.0),
        names=["a", "m", "rate"],
        dims={"rate": "hospital", "x": "hospital"},
        coords={"hospital": ["p", "q", "r"]},
    )
    twin = from_model(model, [1.0, 2.0, 3.0])
    assert [v.name for v in twin.free_RVs] == ["a", "m", "rate", "x"]
    assert twin.named_vars_to_dims["rate"] == ("hospital",) and list(twin.coords["hospital"]) == ["p", "q", "r"]
    point = {"a": 2.0, "m": 0.5, "rate": np.array([0.2, 0.5, 1.0]), "x": np.array([0, 1, 2])}
    # the joint log density at a point: the hyperpriors, rate ~ Gamma(a, a / m), x ~ Poisson(rate * e), the release
    expected = (
        stats.gamma.logpdf(2.0, 2.0)
        + stats.gamma.logpdf(0.5, 2.0)
        + stats.gamma.logpdf([0.2, 0.5, 1.0], 2.0, scale=0.25).sum()
        + stats.poisson.logpmf([0, 1, 2], np.array([0.2, 0.5, 1.0]) * [1.0, 2.0, 3.0]).sum()
        + stats.norm.logpdf([1.0, 2.0, 3.0], [0, 1, 2]).sum()
    )
    logp = twin.compile_logp(jacobian=False)
    values = {"a_log__": np.log(2.0), "m_log__": np.log(0.5), "rate_log__": np.log(point["rate"]), "x": point["x"]}
    assert abs(float(logp(values)) - expected) < 1e-8


def test_sample_model_per_unit_gamma_poisson_matches_the_closed_form():
    exposure = np.array([0.5, 2.0, 5.0])
    mechanism = mechanisms.Laplace(1.0)
    model = pp.PPDModel(priors.Gamma(2.0, 1.0, size=3), generators.Poisson(exposure), mechanism, names="rate")
    y = np.array([0.3, 4.1, 12.5])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        idata = sample_model(model, y, draws=1000, **SAMPLE)
    exact = [_gamma_poisson_exact(2.0, 1.0, exposure[k], y[k], mechanism)[0] for k in range(3)]
    _assert_within_mcse(idata, "rate", np.array(exact))


def _hierarchical_beta_exact(mean_prior, concentration_prior, n, y, mechanism, grid=300):
    """Posterior means of m, k and p_i by quadrature over (m, k) on grids of equal prior mass."""
    q = (np.arange(grid) + 0.5) / grid
    m = stats.beta(mean_prior.alpha, mean_prior.beta).ppf(q)[:, None]
    k = stats.gamma(concentration_prior.shape, scale=1 / concentration_prior.rate).ppf(q)[None, :]
    log_weight = np.zeros((grid, grid))
    unit_means = []
    for n_i, y_i in zip(n, y, strict=True):
        x = np.arange(n_i + 1)
        lik = np.exp(mechanism.logpdf(np.array([y_i]), x[:, None]))
        pmf = stats.betabinom.pmf(x[:, None, None], n_i, m * k, (1 - m) * k)  # (x, m, k)
        evidence = np.tensordot(lik, pmf, axes=1)
        log_weight += np.log(evidence)
        unit_means.append(np.tensordot(lik, pmf * (m * k + x[:, None, None]) / (k + n_i), axes=1) / evidence)
    weight = np.exp(log_weight - log_weight.max())
    weight /= weight.sum()
    return (
        float((weight * m).sum()),
        float((weight * k).sum()),
        np.array([(weight * mean).sum() for mean in unit_means]),
    )


def test_sample_model_hierarchical_beta_matches_quadrature():
    mean_prior, concentration_prior = priors.Beta(2.0, 2.0), priors.Gamma(4.0, 0.5)
    n, y = [6, 9], np.array([1.2, 7.4])
    mechanism = mechanisms.Laplace(1.0)
    model = pp.PPDModel(
        priors.HierarchicalBeta(mean_prior, concentration_prior, size=2),
        generators.Binomial(n),
        mechanism,
        names=["m", "k", "p"],
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        idata = sample_model(model, y, draws=1500, **SAMPLE)
    m, k, p = _hierarchical_beta_exact(mean_prior, concentration_prior, n, y, mechanism)
    _assert_within_mcse(idata, "m", m)
    _assert_within_mcse(idata, "k", k)
    _assert_within_mcse(idata, "p", p)
