"""Answers a user can trust: importance diagnostics that warn, ArviZ on weighted results,
finite Dirichlet densities, integer intervals for integer variables."""

import warnings

import arviz as az
import numpy as np
import pytest
from scipy import stats

import ppdinfer as pp
from ppdinfer.models import beta_binomial


def test_tiny_ess_warns_even_when_pareto_k_is_undefined():
    # y far in the prior's tail: one proposal takes all the weight, and the tied (zero) tail
    # weights leave Pareto k undefined
    model = beta_binomial.model(n=10**6, epsilon=1.0, a=2, b=20)
    with pytest.warns(pp.ImportanceWarning, match="ESS 1 of 1000"):
        result = pp.importance_sample(model, 900_000, draws=1000, random_seed=1)
    assert np.isnan(float(result["sample_stats"]["pareto_k"]))
    assert float(result["sample_stats"]["ess"]) < 1.01


@pytest.mark.parametrize("draws", [1, 4, 24])
def test_too_few_draws_for_psis_skip_it_and_warn(draws):
    model = beta_binomial.model(n=30, epsilon=1.0, a=2, b=2)
    with pytest.warns(pp.ImportanceWarning, match="ESS"):
        result = pp.importance_sample(model, 12, draws=draws, random_seed=1)
    assert np.isnan(float(result["sample_stats"]["pareto_k"]))
    assert result["posterior"].sizes["draw"] == draws


def test_a_discrete_tail_leaves_pareto_k_undefined_and_the_ess_decides():
    # discrete Laplace weights take a handful of values: a Pareto fit to them reported k = 5.7
    model = beta_binomial.model(n=1000, epsilon=2.0, a=2, b=2)
    with pytest.warns(pp.ImportanceWarning, match="effective sample size"):
        result = pp.importance_sample(model, 400, draws=20_000, random_seed=1)
    assert np.isnan(float(result["sample_stats"]["pareto_k"]))
    assert float(result["sample_stats"]["ess"]) < 100


def test_continuous_weights_keep_their_pareto_k():
    # a proposal other than the prior makes the weights depend on theta continuously
    model = beta_binomial.model(n=50, epsilon=1.0, a=2, b=2)
    result = pp.importance_sample(model, 10, draws=20_000, proposal=stats.beta(1, 3), random_seed=1)
    assert np.isfinite(float(result["sample_stats"]["pareto_k"]))


def test_good_importance_run_does_not_warn():
    model = beta_binomial.model(n=30, epsilon=1.0, a=2, b=2)
    with warnings.catch_warnings():
        warnings.simplefilter("error", pp.ImportanceWarning)
        pp.importance_sample(model, 12, draws=20_000, random_seed=1)


@pytest.fixture(scope="module")
def far_from_prior():
    """Beta(2, 2) prior (mean 0.5); the release pulls the posterior to about 0.22."""
    model = beta_binomial.model(n=50, epsilon=1.0, a=2, b=2)
    exact = pp.exact_posterior(model, 10, random_seed=0)
    return model, exact, pp.importance_sample(model, 10, draws=20_000, random_seed=1)


def test_arviz_summary_of_an_importance_result_is_the_posterior(far_from_prior):
    model, exact, result = far_from_prior
    ess = float(result["sample_stats"]["ess"])
    table = az.summary(result, var_names=["p", "x"], round_to="none")
    truth = pp.summary(exact, prob=0.89)
    for name in ("p", "x"):
        z = (table.loc[name, "mean"] - truth.loc[name, "mean"]) / (truth.loc[name, "sd"] / np.sqrt(ess))
        assert abs(z) < 4.5, (name, table.loc[name, "mean"], truth.loc[name, "mean"])
    assert abs(table.loc["p", "eti89_lb"] - truth.loc["p", "lower"]) < 0.01
    assert abs(table.loc["p", "eti89_ub"] - truth.loc["p", "upper"]) < 0.01
    # duplicates of a proposal sit side by side, so ArviZ's own ESS sees them (and not 20000 draws)
    assert table.loc["p", "ess_bulk"] < 2 * ess
    lower, upper = az.hdi(result, prob=0.89)["p"].values
    assert truth.loc["p", "lower"] - 0.03 < lower < upper < truth.loc["p", "upper"] + 0.03


def test_importance_layout(far_from_prior):
    model, exact, result = far_from_prior
    assert set(result.children) == {"posterior", "proposal", "sample_stats", "observed_data", "constant_data"}
    posterior, proposal = result["posterior"], result["proposal"]
    assert posterior.sizes["draw"] == proposal.sizes["draw"] == 20_000
    assert posterior.attrs["ess"] == float(result["sample_stats"]["ess"])
    assert posterior.attrs["proposals"] == 20_000 and posterior.attrs["resampling"] == "stratified"
    assert set(proposal.data_vars) == {"p", "x", "log_weight", "psis_log_weight"}
    # the resample holds proposals only, and every proposal with weight >= 2 / draws appears
    w = np.exp(proposal["log_weight"].values.reshape(-1))
    kept = set(posterior["p"].values.reshape(-1))
    assert kept <= set(proposal["p"].values.reshape(-1))
    assert set(proposal["p"].values.reshape(-1)[w >= 2 / 20_000]) <= kept
    # weighted_mean and pp.summary use all the weighted proposals, not the resample
    mean = float(pp.weighted_mean(result)["p"])
    assert mean == pytest.approx(float((w * proposal["p"].values.reshape(-1)).sum()))
    assert pp.summary(result).loc["p", "mean"] == pytest.approx(mean)
    resampled = pp.resample(result, draws=500, random_seed=2)
    assert set(resampled.children) == {"posterior", "observed_data", "constant_data"}
    assert resampled["posterior"].sizes["draw"] == 500
    with pytest.raises(ValueError, match="importance weights"):
        pp.weighted_mean(exact)


# -- Dirichlet with concentrations below 1 --


def test_dirichlet_logpdf_is_finite_at_its_own_draws():
    prior = pp.priors.Dirichlet([0.05, 0.05, 0.05])
    theta = prior.rvs(20_000, np.random.default_rng(0))
    assert np.all(np.isfinite(prior.logpdf(theta)))
    assert np.allclose(theta.sum(axis=1), 1.0) and np.all(theta >= 0)
    # each component is Beta(0.05, 0.10), down to tiny values (numpy's sampler puts 8 % of the
    # last component at exactly 0, where the probability of < 1e-200 is 7e-11)
    q = np.array([1e-200, 1e-20, 1e-5, 0.5])
    expected = stats.beta(0.05, 0.10).cdf(q)
    observed = (theta[:, :, None] < q).mean(axis=0)
    assert np.all(np.abs(observed - expected) <= 4.5 * np.sqrt(expected * (1 - expected) / len(theta)))
    regular = theta[np.all(theta > 1e-300, axis=1)][:5]
    assert np.allclose(prior.logpdf(regular), [stats.dirichlet([0.05] * 3).logpdf(t) for t in regular])


def test_importance_with_a_sparse_dirichlet_prior_has_finite_weights():
    prior = pp.priors.Dirichlet([0.05, 0.05, 0.05])
    model = pp.PPDModel(prior, pp.generators.MultinomialTotal(), pp.mechanisms.DiscreteLaplace(1.0), names="share")
    y, z = [11, 0, 1], {"total": 12}  # a posterior near a face of the simplex
    result = pp.importance_sample(model, y, z, draws=20_000, proposal=prior, random_seed=3)
    log_w = result["proposal"]["log_weight"].values
    assert np.all(np.isfinite(log_w) | np.isneginf(log_w))
    exact = pp.exact_posterior(model, y, z, random_seed=0)["exact"]
    ess = float(result["sample_stats"]["ess"])
    z_scores = (pp.weighted_mean(result)["share"].values - exact["theta_mean"].values) / (
        exact["theta_sd"].values / np.sqrt(ess)
    )
    assert np.all(np.abs(z_scores) < 4.5)


# -- integer variables get integer intervals --


def test_intervals_of_integer_x_are_discrete_quantiles():
    model = beta_binomial.model(n=30, epsilon=1.0, a=2, b=2)
    exact = pp.exact_posterior(model, 12, random_seed=0)
    prob = 0.9
    row = pp.summary(exact, prob=prob).loc["x"]
    assert row["lower"] == int(row["lower"]) and row["upper"] == int(row["upper"])
    support, pmf = exact["exact"]["x_support"].values, exact["exact"]["x_pmf"].values
    tail = (1 - prob) / 2
    assert pmf[support < row["lower"]].sum() <= tail < pmf[support <= row["lower"]].sum()
    assert pmf[support > row["upper"]].sum() <= tail < pmf[support >= row["upper"]].sum()
    for result in (
        pp.importance_sample(model, 12, draws=5000, random_seed=1),
        pp.rejection_sample(model, 12, draws=500, random_seed=1, progressbar=False),
    ):
        table = pp.summary(result, prob=prob)
        assert table.loc["x", "lower"] == int(table.loc["x", "lower"])
        assert table.loc["x", "upper"] == int(table.loc["x", "upper"])
        assert table["mean"].dtype == table["sd"].dtype == np.float64
