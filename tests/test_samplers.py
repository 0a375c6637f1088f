"""Every sampler against the exact posterior, on every gallery model, at fixed seeds."""

import warnings

import numpy as np
import pytest
from conftest import matches_exact, theta_mean_z_scores
from scipy import special, stats

import ppdinfer as pp
from ppdinfer.inference.rejection import BLOCK_SIZE
from ppdinfer.inference.results import assemble, posterior_dataset
from ppdinfer.mechanisms import Mechanism
from ppdinfer.models import beta_binomial, county_counts, table_2x2

GALLERY = {
    "beta_binomial": (beta_binomial.model(n=30, epsilon=1.0, a=2, b=2), 12, None),
    "county_counts": (
        county_counts.model(epsilon=1.0, concentration=20.0),
        [6, 2, 5],
        county_counts.public_information([5, 3, 3], 12),
    ),
    "table_2x2": (table_2x2.model(epsilon=1.0), 3, table_2x2.public_information([10, 12], 9)),
}


@pytest.fixture(scope="module")
def exact_results():
    return {name: pp.exact_posterior(m, y, z, random_seed=0) for name, (m, y, z) in GALLERY.items()}


@pytest.mark.parametrize("name", GALLERY)
def test_rejection_matches_exact(name, exact_results):
    model, y, z = GALLERY[name]
    result = pp.rejection_sample(model, y, z, draws=3000, random_seed=11, progressbar=False)
    assert result.attrs["complete"]
    assert matches_exact(result, exact_results[name], model.names[0])
    # the acceptance rate is p(y | z) / M
    expected = np.exp(float(exact_results[name]["exact"]["log_evidence"]) - float(result["sample_stats"]["log_bound"]))
    observed = float(result["sample_stats"]["acceptance_rate"])
    n = int(result["sample_stats"]["total_proposals"])
    assert abs(observed - expected) < 4.5 * np.sqrt(expected * (1 - expected) / n)


@pytest.mark.parametrize("name", GALLERY)
def test_importance_matches_exact(name, exact_results):
    model, y, z = GALLERY[name]
    result = pp.importance_sample(model, y, z, draws=40000, random_seed=5)
    ess = float(result["sample_stats"]["ess"])
    assert 100 < ess <= 40000
    weights = np.exp(result["proposal"]["log_weight"].values.reshape(-1))
    assert np.isclose(weights.sum(), 1.0)
    proposals = result["proposal"][model.names[0]].values.reshape(weights.size, -1)
    exact = exact_results[name]["exact"]
    z_scores = (weights @ proposals - exact["theta_mean"].values) / (exact["theta_sd"].values / np.sqrt(ess))
    assert np.all(np.abs(z_scores) < 4.5)
    means = pp.weighted_mean(result)
    assert np.allclose(means[model.names[0]].values.reshape(-1), weights @ proposals)
    # the posterior group is an equal-weight resample: unweighted means match too
    assert np.all(np.abs(theta_mean_z_scores(result, exact_results[name], model.names[0], ess)) < 4.5)
    resampled = pp.resample(result, draws=2000, random_seed=1)
    assert resampled["posterior"].sizes["draw"] == 2000 and "sample_stats" not in resampled.children
    assert np.all(np.abs(theta_mean_z_scores(resampled, exact_results[name], model.names[0], min(ess, 2000))) < 4.5)


def test_exact_posterior_grid_agrees_with_conjugate_sum():
    """The same posterior two ways: Beta prior integrated analytically, and scipy's beta on a grid."""
    conjugate = beta_binomial.model(n=30, epsilon=0.5, a=2, b=3)
    gridded = pp.PPDModel(stats.beta(2, 3), conjugate.simulate, conjugate.mechanism, names="p")
    a = pp.exact_posterior(conjugate, 9, draws=10)
    b = pp.exact_posterior(gridded, 9, draws=10, grid_size=4000)
    assert np.allclose(a["exact"]["x_pmf"], b["exact"]["x_pmf"], atol=1e-5)
    assert float(a["exact"]["theta_mean"][0]) == pytest.approx(float(b["exact"]["theta_mean"][0]), abs=1e-5)
    assert float(a["exact"]["theta_sd"][0]) == pytest.approx(float(b["exact"]["theta_sd"][0]), rel=1e-3)
    assert float(a["exact"]["log_evidence"]) == pytest.approx(float(b["exact"]["log_evidence"]), abs=1e-5)
    qa, qb = pp.summary(a).loc["p"], pp.summary(b).loc["p"]
    assert qa["lower"] == pytest.approx(qb["lower"], abs=2e-3) and qa["upper"] == pytest.approx(qb["upper"], abs=2e-3)
    # user-supplied grid
    c = pp.exact_posterior(gridded, 9, draws=10, theta_grid=np.linspace(1e-6, 1 - 1e-6, 6001))
    assert float(c["exact"]["theta_mean"][0]) == pytest.approx(float(a["exact"]["theta_mean"][0]), abs=1e-4)


def test_exact_posterior_by_hand():
    """A two-point check: x in {0, 1, 2}, theta integrated by hand."""
    model = beta_binomial.model(n=2, epsilon=1.0, a=1, b=1)  # beta-binomial(2, 1, 1) is uniform on {0,1,2}
    a = np.exp(-1.0)
    lik = a ** np.abs(1 - np.arange(3))
    pmf = lik / lik.sum()
    exact = pp.exact_posterior(model, 1, draws=10)
    assert np.allclose(exact["exact"]["x_pmf"], pmf)
    # theta | x ~ Beta(1 + x, 3 - x): mean (1 + x) / 4
    assert float(exact["exact"]["theta_mean"][0]) == pytest.approx(np.sum(pmf * (1 + np.arange(3)) / 4))


# -- the errata: an implementation that copies the printed Algorithm 1 must fail these checks --


class BoundedDiscreteLaplace(Mechanism):
    """y in {0..n} with pi(y | x) proportional to a^|y - x|: its normalizer C(x) depends on x."""

    discrete = True

    def __init__(self, epsilon, n):
        self.epsilon, self.n = epsilon, n

    def parameters(self):
        return {"epsilon": self.epsilon, "n": self.n}

    def log_normalizer(self, x):
        y = np.arange(self.n + 1)
        return special.logsumexp(-self.epsilon * np.abs(y[None, :] - np.asarray(x).reshape(-1, 1)), axis=1)

    def logpdf(self, y, x, z=None):
        x = np.asarray(x).reshape(-1)
        return -self.epsilon * np.abs(float(np.asarray(y).reshape(-1)[0]) - x) - self.log_normalizer(x)

    def log_bound(self, z=None, size=1):
        return float(np.max(-self.log_normalizer(np.arange(self.n + 1))))

    def release(self, x, z=None, random_seed=None):
        rng = np.random.default_rng(random_seed)
        y = np.arange(self.n + 1)
        return np.array([rng.choice(y, p=np.exp(self.logpdf(v, y))) for v in np.atleast_1d(x)])


def printed_algorithm_1(model, y, z, draws, rng, *, inverted=False, x_dependent_bound=False):
    """Algorithm 1 as printed, with either erratum: 'accept if ratio <= U', or M = sup_y pi(y | x*)."""
    thetas, xs = [], []
    y = np.asarray(y)
    while sum(len(t) for t in thetas) < draws:
        theta = model.sample_prior(20000, rng, z)
        x = model.simulate_x(theta, z, rng)
        loglik = model.loglik(y, x, z)
        if x_dependent_bound:
            log_m = -model.mechanism.log_normalizer(x)  # sup over y of pi(y | x) is at y = x
        else:
            log_m = model.mechanism.log_bound(z, size=y.size)
        ratio = np.exp(loglik - log_m)
        u = rng.random(ratio.size)
        keep = ratio <= u if inverted else u <= ratio
        thetas.append(theta[keep])
        xs.append(x[keep])
    theta, x = np.concatenate(thetas)[:draws], np.concatenate(xs)[:draws]
    return assemble(model, y, z, posterior_dataset(model, theta, x, (), (1,) if y.ndim else ()))


@pytest.fixture(scope="module")
def bounded_case():
    # y = 0 sits at the edge of the output range, where C(x) varies most with x
    model = pp.PPDModel(pp.priors.Beta(2, 2), pp.generators.Binomial(10), BoundedDiscreteLaplace(0.5, 10), names="p")
    return model, 0, pp.exact_posterior(model, 0, random_seed=0)


def test_rejection_is_exact_when_the_normalizer_depends_on_x(bounded_case):
    model, y, exact = bounded_case
    result = pp.rejection_sample(model, y, draws=3000, random_seed=2, progressbar=False)
    assert matches_exact(result, exact, "p")


def test_x_dependent_bound_is_detected(bounded_case):
    model, y, exact = bounded_case
    wrong = printed_algorithm_1(model, y, None, 3000, np.random.default_rng(2), x_dependent_bound=True)
    assert not matches_exact(wrong, exact, "p")


def test_inverted_acceptance_is_detected():
    model, y, z = GALLERY["beta_binomial"]
    exact = pp.exact_posterior(model, y, z)
    wrong = printed_algorithm_1(model, y, z, 3000, np.random.default_rng(3), inverted=True)
    assert not matches_exact(wrong, exact, "p")
    # and the corrected rule in the same helper passes: the check itself is sound
    right = printed_algorithm_1(model, y, z, 3000, np.random.default_rng(3))
    assert matches_exact(right, exact, "p")


def test_rejection_refuses_without_a_bound():
    class Unbounded(BoundedDiscreteLaplace):
        def log_bound(self, z=None, size=1):
            return np.inf

    model = pp.PPDModel(pp.priors.Beta(2, 2), pp.generators.Binomial(10), Unbounded(1.0, 10))
    with pytest.raises(ValueError, match="no finite bound"):
        pp.rejection_sample(model, 1, draws=10, progressbar=False)


def test_rejection_detects_a_bound_that_is_too_small():
    class TooSmall(BoundedDiscreteLaplace):
        def log_bound(self, z=None, size=1):
            return -5.0

    model = pp.PPDModel(pp.priors.Beta(2, 2), pp.generators.Binomial(10), TooSmall(1.0, 10))
    with pytest.raises(ValueError, match="exceeds the mechanism's bound"):
        pp.rejection_sample(model, 1, draws=10, progressbar=False)


# -- simulation-based calibration --


def _sbc_ranks(sampler, replicates, draws, seed):
    model = beta_binomial.model(n=20, epsilon=0.25, a=2, b=2)
    rng = np.random.default_rng(seed)
    ranks = []
    for _ in range(replicates):
        p = rng.beta(2, 2)
        y = model.mechanism.release(rng.binomial(20, p), random_seed=rng)
        posterior = sampler(model, y, rng)
        ranks.append(int(np.sum(posterior < p)))
    return np.array(ranks)


def _uniform_pvalue(ranks, draws, bins=10):
    counts = np.bincount(ranks * bins // (draws + 1), minlength=bins)
    return stats.chisquare(counts).pvalue


def test_simulation_based_calibration():
    """Ranks of the true p among posterior draws are uniform for the rejection sampler.

    Negative control: the naive analysis that treats the noisy count as the true count,
    Beta(2 + y, 2 + n - y), is overconfident, and the same test rejects it.
    """
    draws = 99

    def ours(model, y, rng):
        result = pp.rejection_sample(model, y, draws=draws, random_seed=rng, progressbar=False)
        return result["posterior"]["p"].values.reshape(-1)

    def naive(model, y, rng):
        count = np.clip(y, 0, 20)
        return rng.beta(2 + count, 2 + 20 - count, size=draws)

    assert _uniform_pvalue(_sbc_ranks(ours, 200, draws, seed=8), draws) > 1e-3
    assert _uniform_pvalue(_sbc_ranks(naive, 200, draws, seed=8), draws) < 1e-3


# -- reproducibility and budgets --


def test_same_seed_same_draws_whatever_the_batch_size():
    model, y, z = GALLERY["county_counts"]
    runs = [
        pp.rejection_sample(model, y, z, draws=700, random_seed=42, batch_size=b, progressbar=False)
        for b in (BLOCK_SIZE, 5 * BLOCK_SIZE, "auto")
    ]
    for other in runs[1:]:
        assert np.array_equal(runs[0]["posterior"]["share"].values, other["posterior"]["share"].values)
        assert np.array_equal(runs[0]["posterior"]["cases"].values, other["posterior"]["cases"].values)
        assert int(runs[0]["sample_stats"]["total_proposals"]) == int(other["sample_stats"]["total_proposals"])
    different = pp.rejection_sample(model, y, z, draws=700, random_seed=43, progressbar=False)
    assert not np.array_equal(runs[0]["posterior"]["share"].values, different["posterior"]["share"].values)


def test_proposal_budget_stops_with_partial_draws_and_a_projection():
    model = beta_binomial.model(n=1000, epsilon=1.0)
    with pytest.warns(pp.BudgetWarning, match=r"max_proposals=8192 .* need about"):
        result = pp.rejection_sample(model, 400, draws=1000, max_proposals=8192, random_seed=1, progressbar=False)
    assert not result.attrs["complete"]
    assert 0 < result["posterior"].sizes["draw"] < 1000
    assert int(result["sample_stats"]["total_proposals"]) == 8192
    assert int(result["sample_stats"]["proposals"].sum()) <= 8192


def test_time_budget_stops_the_sampler():
    model = beta_binomial.model(n=1000, epsilon=0.01)  # y far in the tail: acceptance is tiny
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = pp.rejection_sample(model, -5000, draws=1000, max_seconds=1.5, random_seed=1, progressbar=False)
    messages = [str(w.message) for w in caught if issubclass(w.category, pp.BudgetWarning)]
    assert any("max_seconds=1.5" in m for m in messages)
    assert float(result["sample_stats"]["seconds"]) < 5
    assert not result.attrs["complete"]


def test_importance_warns_on_heavy_tailed_weights():
    model, y, z = GALLERY["beta_binomial"]
    with pytest.warns(pp.ImportanceWarning, match="Pareto k"):
        result = pp.importance_sample(model, y, z, draws=4000, proposal=pp.priors.Beta(40, 2), random_seed=1)
    assert float(result["sample_stats"]["pareto_k"]) > 0.7


# -- layout --


def test_result_layout_is_arviz_ready(exact_results):
    import arviz as az

    model, y, z = GALLERY["county_counts"]
    result = pp.rejection_sample(model, y, z, draws=300, random_seed=1, progressbar=False)
    assert set(result.children) == {"posterior", "sample_stats", "observed_data", "constant_data"}
    posterior = result["posterior"]
    assert posterior["share"].dims == ("chain", "draw", "county")
    assert posterior["cases"].dims == ("chain", "draw", "county")
    assert np.all(posterior["cases"].sum("county") == 12)
    assert list(result["observed_data"]["y"].values) == [6, 2, 5]
    assert result["constant_data"]["total"] == 12 and list(result["constant_data"]["previous"].values) == [5, 3, 3]
    assert float(result["constant_data"]["mechanism_epsilon"]) == 1.0
    assert int(result["sample_stats"]["proposals"].sum()) == int(result["sample_stats"]["total_proposals"])
    table = az.summary(result, var_names=["share"])
    assert len(table) == 3 and np.all(np.isfinite(table["mean"]))
    assert set(pp.summary(exact_results["county_counts"]).index) == {
        "share[0]",
        "share[1]",
        "share[2]",
        "cases[0]",
        "cases[1]",
        "cases[2]",
    }


def test_component_names():
    model, y, z = GALLERY["county_counts"]
    named = pp.PPDModel(model.prior, model.simulate, model.mechanism, names=["a", "b", "c"])
    result = pp.rejection_sample(named, y, z, draws=50, random_seed=1, progressbar=False)
    assert {"a", "b", "c", "x"} <= set(result["posterior"].data_vars)
    with pytest.raises(ValueError, match="names has 2 entries"):
        pp.rejection_sample(
            pp.PPDModel(model.prior, model.simulate, model.mechanism, names=["a", "b"]),
            y,
            z,
            draws=5,
            progressbar=False,
        )


# -- bad input --


@pytest.mark.parametrize("sampler", [pp.rejection_sample, pp.importance_sample, pp.exact_posterior])
def test_bad_draws(sampler):
    model, y, z = GALLERY["beta_binomial"]
    for draws in (0, -3, 2.5):
        with pytest.raises(ValueError, match="draws"):
            sampler(model, y, z, draws=draws)


@pytest.mark.parametrize("sampler", [pp.rejection_sample, pp.importance_sample, pp.exact_posterior])
def test_bad_release_and_public_information(sampler):
    model, y, z = GALLERY["county_counts"]
    with pytest.raises(ValueError, match="y has shape"):
        sampler(model, [1, 2], z, draws=10)
    with pytest.raises(ValueError, match="integers"):
        sampler(model, [1.5, 2, 3], z, draws=10)
    with pytest.raises(ValueError, match="total"):
        sampler(model, y, {"previous": [5, 3, 3], "total": -4}, draws=10)
    with pytest.raises(ValueError, match="previous"):
        sampler(model, y, {"total": 12}, draws=10)
    table, ty, tz = GALLERY["table_2x2"]
    with pytest.raises(ValueError, match="col_total"):
        sampler(table, ty, table_2x2.public_information([3, 4], 9), draws=10)


def test_bad_model_parts():
    with pytest.raises(ValueError, match="prior"):
        pp.PPDModel(object(), pp.generators.Binomial(3), pp.mechanisms.DiscreteLaplace(1.0))
    with pytest.raises(ValueError, match="mechanism"):
        pp.PPDModel(pp.priors.Beta(), pp.generators.Binomial(3), "laplace")
    with pytest.raises(ValueError, match="random_seed"):
        pp.rejection_sample(GALLERY["beta_binomial"][0], 3, draws=5, random_seed=-1)
    with pytest.raises(ValueError, match="batch_size"):
        pp.rejection_sample(GALLERY["beta_binomial"][0], 3, draws=5, batch_size=0)
