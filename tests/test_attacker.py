"""The Bayesian attacker of a Pufferfish secret, and the gallery model whose parameter is the secret.

Pufferfish eps-privacy for a pair of secrets means the posterior odds move by at most e^eps for
every prior and every release: checked for Laplace noise calibrated by W_inf / eps (Theorem 1 of
the Kantorovich mechanism) and refuted for half that scale.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from matplotlib.figure import Figure
from scipy import stats

import ppdinfer as pp
from ppdinfer.mechanisms import DiscreteLaplace, Gaussian, Laplace, Mechanism
from ppdinfer.models import pufferfish_secret
from ppdinfer.priors import Categorical
from ppdinfer.privacy import w_inf
from ppdinfer.privacy.attacker import (
    plot_prior_posterior_odds,
    posterior_odds_ratio,
    secret_log_likelihood,
    secret_posterior,
    secret_posterior_mc,
)

# Example 2 of the Kantorovich paper's Appendix C (Song et al. 2017): plan sensitivity 2.
P = np.array([0.2, 0.225, 0.5, 0.075, 0.0])
Q = np.array([0.0, 0.075, 0.5, 0.225, 0.2])
SUPPORT = np.arange(1.0, 6.0)
ROUNDING = 1e-9


def max_log_ratio(conditionals, support, mechanism, y, pair=(0, 1)):
    return float(np.abs(np.log(posterior_odds_ratio(conditionals, support, mechanism, y, pair))).max())


def binomial_conditionals(n_users, p):
    """X given one user's bit: the bit plus Binomial(V - 1, p), on 0..V."""
    x = np.arange(n_users + 1)
    others = stats.binom.pmf(x, n_users - 1, p)
    return np.stack([others, np.concatenate([[0.0], others[:-1]])]), x


def test_secret_posterior_is_bayes_rule_summed_over_x():
    conditionals = np.stack([P, Q])
    prior = np.array([0.3, 0.7])
    y = np.array([-1.5, 2.2, 4.0, 9.0])
    laplace_pdf = stats.laplace.pdf(y[:, None], loc=SUPPORT[None, :], scale=0.8)  # (R, S)
    joint = prior[None, :] * (laplace_pdf @ conditionals.T)
    expected = joint / joint.sum(axis=1, keepdims=True)
    mechanism = Laplace(1.0, sensitivity=0.8)
    np.testing.assert_allclose(secret_posterior(prior, conditionals, SUPPORT, mechanism, y), expected, rtol=1e-12)
    np.testing.assert_allclose(
        secret_posterior(Categorical(prior), conditionals, SUPPORT, mechanism, y[1]), expected[1], rtol=1e-12
    )
    np.testing.assert_allclose(
        np.exp(secret_log_likelihood(conditionals, SUPPORT, mechanism, y)), laplace_pdf @ conditionals.T, rtol=1e-12
    )


@pytest.mark.parametrize("epsilon", [0.25, 1.0, 3.0])
def test_w_inf_calibrated_laplace_keeps_every_posterior_odds_ratio_within_e_eps(epsilon):
    conditionals = np.stack([P, Q])
    sensitivity = w_inf(P, Q, SUPPORT)
    assert sensitivity == 2.0
    calibrated = Laplace(epsilon, sensitivity=sensitivity)  # scale W_inf / eps
    grid = np.linspace(-80.0, 86.0, 4001)  # the atoms, between them and the tails
    assert max_log_ratio(conditionals, SUPPORT, calibrated, grid) <= epsilon * (1 + ROUNDING)
    under = Laplace(epsilon, sensitivity=sensitivity / 2)  # half the scale
    assert max_log_ratio(conditionals, SUPPORT, under, grid) > epsilon * 1.05


def test_the_bound_holds_for_any_prior_and_many_releases_of_three_secrets():
    epsilon = 0.8
    third = np.array([0.1, 0.1, 0.2, 0.3, 0.3])
    conditionals = np.stack([P, Q, third])
    sensitivity = max(w_inf(a, b, SUPPORT) for a, b in [(P, Q), (P, third), (Q, third)])
    mechanism = Laplace(epsilon, sensitivity=sensitivity)
    rng = np.random.default_rng(7)
    x = rng.choice(SUPPORT, size=3000, p=third)
    releases = mechanism.release(x, random_seed=8)
    largest = 0.0
    for prior in rng.dirichlet([0.5, 0.5, 0.5], size=20):  # priors far from uniform included
        posterior = secret_posterior(prior, conditionals, SUPPORT, mechanism, releases)
        for i, j in [(0, 1), (0, 2), (1, 2)]:
            log_ratio = np.log(posterior[:, i] / posterior[:, j]) - np.log(prior[i] / prior[j])
            largest = max(largest, float(np.abs(log_ratio).max()))
    assert largest <= epsilon * (1 + ROUNDING)
    assert largest > 0.5 * epsilon  # the releases do move the odds


@pytest.mark.parametrize("epsilon", [0.5, 2.0])
def test_binomial_counting_query_one_users_bit(epsilon):
    # V = 25 users with p = 0.7 (Figures 1, 2, 5): the conditionals are shifted by one, W_inf = 1.
    conditionals, support = binomial_conditionals(25, 0.7)
    assert w_inf(conditionals[0], conditionals[1], support) == 1.0
    grid = np.linspace(-60.0, 85.0, 2901)
    calibrated = max_log_ratio(conditionals, support, Laplace(epsilon, sensitivity=1.0), grid)
    assert epsilon * (1 - 1e-3) <= calibrated <= epsilon * (1 + ROUNDING)  # tight: reached in the tails
    assert max_log_ratio(conditionals, support, Laplace(epsilon, sensitivity=0.5), grid) > 1.9 * epsilon
    integers = np.arange(-60, 86)  # the discrete Laplace too
    assert max_log_ratio(conditionals, support, DiscreteLaplace(epsilon), integers) <= epsilon * (1 + ROUNDING)


def test_one_user_secret_matches_the_binomial_and_handles_heterogeneous_users():
    conditionals, support = pufferfish_secret.one_user_secret([0.7] * 25)
    expected, expected_support = binomial_conditionals(25, 0.7)
    np.testing.assert_allclose(conditionals, expected, atol=1e-15)
    np.testing.assert_array_equal(support, expected_support)
    q = np.linspace(0.05, 0.95, 10)  # V = 10 heterogeneous users
    conditionals, support = pufferfish_secret.one_user_secret(q, user=3)
    draws = np.random.default_rng(3).random((200_000, 10)) < q
    others = draws.sum(axis=1) - draws[:, 3]
    np.testing.assert_allclose(conditionals[0, :10], np.bincount(others, minlength=10) / 200_000, atol=0.004)
    assert w_inf(conditionals[0], conditionals[1], support) == 1.0
    with pytest.raises(ValueError, match="user"):
        pufferfish_secret.one_user_secret(q, user=10)


def test_monte_carlo_posterior_agrees_with_the_exact_sum():
    conditionals = np.stack([P, Q])
    mechanism = Laplace(1.0, sensitivity=2.0)
    samplers = [lambda size, rng, pmf=pmf: rng.choice(SUPPORT, size=size, p=pmf) for pmf in conditionals]
    y = np.array([0.0, 3.0, 6.5])
    prior = np.array([0.4, 0.6])
    exact = secret_posterior(prior, conditionals, SUPPORT, mechanism, y)
    estimate = secret_posterior_mc(prior, samplers, mechanism, y, draws=20_000, random_seed=5)
    se = exact[:, 0] * exact[:, 1] * np.sqrt((estimate.relative_se**2).sum(axis=1))  # delta method
    assert np.all(np.abs(estimate.probabilities[:, 0] - exact[:, 0]) <= 5 * se)
    assert np.all(se > 0) and estimate.probabilities.shape == (3, 2)


def test_monte_carlo_posterior_for_continuous_x():
    # x given s ~ N(mu_s, 1), Laplace noise of scale 1: p(y | s) by quadrature.
    mechanism = Laplace(1.0)
    mus = [0.0, 1.5]
    samplers = [lambda size, rng, mu=mu: rng.normal(mu, 1.0, size) for mu in mus]
    y = 1.0
    likelihood = [stats.norm(mu).expect(lambda x: stats.laplace.pdf(y - x), lb=-30, ub=30) for mu in mus]
    exact = np.array(likelihood) / np.sum(likelihood)
    estimate = secret_posterior_mc([0.5, 0.5], samplers, mechanism, y, draws=40_000, random_seed=2)
    se = exact[0] * exact[1] * np.sqrt((estimate.relative_se**2).sum())
    assert abs(estimate.probabilities[0] - exact[0]) <= 5 * se


def test_bad_arguments_are_refused_by_name():
    conditionals = np.stack([P, Q])
    mechanism = Laplace(1.0)
    with pytest.raises(ValueError, match="conditionals must have shape"):
        secret_posterior([0.5, 0.5], conditionals[:, :4], SUPPORT, mechanism, 1.0)
    with pytest.raises(ValueError, match=r"conditionals\[1\] must sum to 1"):
        secret_posterior([0.5, 0.5], [P, Q * 2], SUPPORT, mechanism, 1.0)
    with pytest.raises(ValueError, match="prior has 3 secrets"):
        secret_posterior([0.2, 0.3, 0.5], conditionals, SUPPORT, mechanism, 1.0)
    with pytest.raises(ValueError, match="y must be one release"):
        secret_posterior([0.5, 0.5], conditionals, SUPPORT, mechanism, np.zeros((2, 2)))
    with pytest.raises(ValueError, match="pair must be two different"):
        posterior_odds_ratio(conditionals, SUPPORT, mechanism, 1.0, pair=(0, 0))
    with pytest.raises(ValueError, match="mechanism must be"):
        secret_posterior([0.5, 0.5], conditionals, SUPPORT, "laplace", 1.0)
    with pytest.raises(ValueError, match="samplers must hold"):
        secret_posterior_mc([0.5, 0.5], [lambda size, rng: rng.random(size)], mechanism, 1.0)


class UniformNoise(Mechanism):
    """y = x + Uniform(-1/2, 1/2): a density that is zero away from x."""

    def logpdf(self, y, x, z=None):
        return np.where(np.abs(float(y) - np.asarray(x, dtype=float).reshape(-1)) <= 0.5, 0.0, -np.inf)


def test_log_space_survives_tiny_densities_and_an_impossible_release_is_refused():
    conditionals = np.array([[1.0, 0.0], [0.0, 1.0]])
    # Densities of e^-40000 underflow as numbers but not as logs: the posterior is still exact.
    posterior = secret_posterior([0.5, 0.5], conditionals, [0.0, 50.0], DiscreteLaplace(800.0), 49)
    np.testing.assert_array_equal(posterior, [0.0, 1.0])
    assert secret_posterior([0.5, 0.5], conditionals, [0.0, 50.0], DiscreteLaplace(800.0), 26)[1] == 1.0
    with pytest.raises(ValueError, match="probability zero under every secret"):
        secret_posterior([1.0, 0.0], conditionals, [0.0, 50.0], UniformNoise(), 50.2)


def test_the_odds_plot_flags_the_releases_outside_the_band():
    conditionals = np.stack([P, Q])
    y = np.linspace(-20.0, 26.0, 300)
    calibrated = plot_prior_posterior_odds(posterior_odds_ratio(conditionals, SUPPORT, Laplace(1.0, 2.0), y), 1.0)
    assert isinstance(calibrated, Figure)
    assert calibrated.axes[0].get_title().startswith("0 of 300 releases")
    under = plot_prior_posterior_odds(
        posterior_odds_ratio(conditionals, SUPPORT, Laplace(1.0, 1.0), y), 1.0, max_lines=50
    )
    outside = int(under.axes[0].get_title().split()[0])
    assert outside > 0 and len(under.axes[0].collections[-1].get_segments()) == 50
    with pytest.raises(ValueError, match="odds_ratios"):
        plot_prior_posterior_odds([1.0, -2.0], 1.0)


# -- the gallery model -------------------------------------------------------------------------


def secret_frequencies(result):
    draws = result["posterior"]["secret"].values.reshape(-1)
    return np.bincount(draws.astype(int), minlength=2), draws.size


@pytest.mark.parametrize("prior", [None, [0.2, 0.8]])
def test_exact_posterior_on_the_secret_grid_is_the_attackers_posterior(prior):
    model = pufferfish_secret.model(np.stack([P, Q]), SUPPORT, epsilon=1.0, prior=prior)
    assert model.sensitivity == 2.0 and model.mechanism == Laplace(1.0, sensitivity=2.0)
    for y in [0.3, 3.0, 5.7]:
        exact = pp.exact_posterior(model, y, theta_grid=model.theta_grid, random_seed=0)
        density = exact["exact"]["theta_density"].values[:, 0]
        np.testing.assert_allclose(density[:2], model.secret_posterior(y), rtol=1e-10)
        assert density[2] == 0.0


def test_exact_posterior_with_three_secrets_and_no_padding():
    third = np.array([0.1, 0.1, 0.2, 0.3, 0.3])
    model = pufferfish_secret.model(np.stack([P, Q, third]), SUPPORT, epsilon=0.5, prior=[0.5, 0.3, 0.2])
    exact = pp.exact_posterior(model, 4.2, theta_grid=model.theta_grid)
    np.testing.assert_allclose(exact["exact"]["theta_density"].values[:, 0], model.secret_posterior(4.2), rtol=1e-10)
    with pytest.raises(ValueError, match="ppf"):
        pp.exact_posterior(model, 4.2)


def test_rejection_and_importance_sampling_agree_with_the_exact_posterior():
    conditionals, support = pufferfish_secret.one_user_secret([0.7] * 25)
    model = pufferfish_secret.model(conditionals, support, epsilon=0.5, prior=[0.3, 0.7])
    y = 20.0
    exact = model.secret_posterior(y)
    rejected = pp.rejection_sample(model, y, draws=4000, random_seed=1, progressbar=False)
    counts, n = secret_frequencies(rejected)
    assert abs(counts[1] / n - exact[1]) <= 4 * np.sqrt(exact[0] * exact[1] / n)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no ImportanceWarning expected
        weighted = pp.importance_sample(model, y, draws=20_000, random_seed=2)
    ess = float(weighted["sample_stats"]["ess"])
    mean = float(pp.weighted_mean(weighted)["secret"])
    assert abs(mean - exact[1]) <= 4 * np.sqrt(exact[0] * exact[1] / ess)


def test_the_model_takes_a_gaussian_or_discrete_mechanism():
    conditionals, support = pufferfish_secret.one_user_secret([0.6] * 8)
    gaussian = pufferfish_secret.model(conditionals, support, epsilon=None, noise=Gaussian(1.5))
    probabilities = stats.norm.pdf(3.3, loc=support, scale=1.5) @ conditionals.T
    np.testing.assert_allclose(gaussian.secret_posterior(3.3), probabilities / probabilities.sum(), rtol=1e-12)
    discrete = pufferfish_secret.model(conditionals, support, epsilon=None, noise=DiscreteLaplace(1.0))
    exact = pp.exact_posterior(discrete, 4, theta_grid=discrete.theta_grid)
    np.testing.assert_allclose(exact["exact"]["theta_density"].values[:2, 0], discrete.secret_posterior(4), rtol=1e-10)


def test_the_data_model_draws_its_conditionals_and_the_model_refuses_bad_settings():
    conditionals = np.stack([P, Q])
    data = pufferfish_secret.SecretConditional(conditionals, SUPPORT)
    draws = data(np.ones(40_000), None, np.random.default_rng(4))
    observed = np.array([(draws == value).sum() for value in SUPPORT])
    expected = Q * 40_000
    keep = expected > 0
    assert observed[~keep].sum() == 0
    assert stats.chisquare(observed[keep], expected[keep]).pvalue > 1e-3
    with pytest.raises(ValueError, match="secret indices"):
        data(np.array([0.5]), None, np.random.default_rng(0))
    with pytest.raises(ValueError, match="strictly increasing"):
        pufferfish_secret.SecretConditional(conditionals, SUPPORT[::-1])
    with pytest.raises(ValueError, match="epsilon must be None"):
        pufferfish_secret.model(conditionals, SUPPORT, epsilon=1.0, noise=Gaussian(1.0))
    with pytest.raises(ValueError, match="prior has 3 secrets"):
        pufferfish_secret.model(conditionals, SUPPORT, prior=[0.2, 0.3, 0.5])
    with pytest.raises(NotImplementedError, match="discrete parameter"):
        pufferfish_secret.model(conditionals, SUPPORT).to_pymc(1.0)


def test_gallery_sensitivity_ignores_rounding_crumbs_of_floating_point_conditionals():
    """A household of 3 answering as one: W_inf is 3 (Lemma 2), not 4 from a renormalization crumb."""
    from ppdinfer.privacy.kantorovich import separable_query_conditionals, separable_sensitivity

    values, probabilities = [[0, 3]] + [[0, 1]] * 27, [[0.7, 0.3]] * 28
    conditionals = separable_query_conditionals(values=values, probabilities=probabilities)
    rows = np.stack([conditionals.pmfs[0], conditionals.pmfs[1]])
    model = pufferfish_secret.model(rows, conditionals.support, epsilon=1.0)
    assert model.sensitivity == 3.0 == separable_sensitivity(values)
    assert model.mechanism == pp.mechanisms.Laplace(1.0, 3.0)
    exact_ties = pufferfish_secret.model(rows, conditionals.support, epsilon=1.0, tie_tolerance=0.0)
    assert exact_ties.sensitivity == 4.0  # the crumb the default tolerance absorbs
