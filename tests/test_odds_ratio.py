"""The Semi-DP test of the 2 x 2 odds ratio (Cho & Awan, Theorem 37) and the direction erratum."""

import math

import numpy as np
import pytest
from scipy import stats

from ppdinfer.frequentist.odds_ratio import odds_ratio_power, odds_ratio_test
from ppdinfer.generators import FisherTable2x2
from ppdinfer.mechanisms import Tulap
from ppdinfer.mechanisms.canonical import CanonicalNoise

ROWS, COL = [50, 50], 50
ALPHA = 0.05
NOISES = {
    "pure eps=1": CanonicalNoise.pure(1.0),
    "gaussian mu=1": CanonicalNoise.gaussian(1.0),
    "tulap eps=0.5": Tulap(0.5),
}


def releases(odds_ratio, noise, size, seed, rows=ROWS, col=COL):
    """U = H + N with H ~ Fisher's noncentral hypergeometric(odds_ratio) given the margins."""
    rng = np.random.default_rng(seed)
    h = FisherTable2x2()(np.full(size, float(odds_ratio)), {"row_totals": rows, "col_total": col}, rng)
    return noise.release(h.astype(float), random_seed=rng)


def within(rate, expected, size, z=4.5):
    return abs(rate - expected) <= z * math.sqrt(expected * (1 - expected) / size)


@pytest.mark.parametrize("name", NOISES)
def test_p_value_is_uniform_under_the_null(name):
    noise = NOISES[name]
    size = 20_000
    u = releases(1.0, noise, size, seed=1)
    for alternative in ("greater", "less"):
        p = odds_ratio_test(u, ROWS, COL, noise, alternative)
        assert stats.kstest(p, "uniform").pvalue > 1e-3  # exactly Uniform(0, 1) at psi = 1
        assert within(np.mean(p <= ALPHA), ALPHA, size)
        assert math.isclose(odds_ratio_power(1.0, ROWS, COL, noise, ALPHA, alternative), ALPHA, abs_tol=1e-9)
    two_sided = odds_ratio_test(u, ROWS, COL, noise, "two-sided")
    assert np.mean(two_sided <= ALPHA) <= ALPHA + 4.5 * math.sqrt(ALPHA * (1 - ALPHA) / size)
    assert math.isclose(odds_ratio_power(1.0, ROWS, COL, noise, ALPHA, "two-sided"), ALPHA, abs_tol=1e-9)
    # inside H0: psi <= 1 the one-sided test is conservative
    assert odds_ratio_power(0.7, ROWS, COL, noise, ALPHA) < ALPHA


@pytest.mark.parametrize("name", NOISES)
def test_power_against_a_larger_odds_ratio(name):
    noise = NOISES[name]
    size = 20_000
    u = releases(3.0, noise, size, seed=2)
    rate = np.mean(odds_ratio_test(u, ROWS, COL, noise) <= ALPHA)
    exact = odds_ratio_power(3.0, ROWS, COL, noise, ALPHA)
    assert within(rate, exact, size)
    assert exact > 0.3 > ALPHA
    # the power grows with psi and with the privacy budget
    assert odds_ratio_power(1.5, ROWS, COL, noise) < odds_ratio_power(2.0, ROWS, COL, noise) < exact
    assert odds_ratio_power(3.0, ROWS, COL, noise, alternative="less") < ALPHA


def test_more_privacy_means_less_power():
    powers = [odds_ratio_power(3.0, ROWS, COL, CanonicalNoise.pure(eps)) for eps in (0.1, 0.5, 1.0, 5.0)]
    assert np.all(np.diff(powers) > 0)


def test_the_printed_direction_has_power_below_alpha():
    # The paper's model: n_i1 ~ Binomial(n_i., theta_i), w = odds2 / odds1 = 3 (its H1: w > 1),
    # conditioned on the public column total by rejection.
    rng = np.random.default_rng(3)
    odds1 = 1 / math.sqrt(3)
    theta1, theta2 = odds1 / (1 + odds1), 3 * odds1 / (1 + 3 * odds1)
    x11 = rng.binomial(ROWS[0], theta1, size=400_000)
    x21 = rng.binomial(ROWS[1], theta2, size=400_000)
    x11 = x11[x11 + x21 == COL]
    size = x11.size
    assert size > 20_000
    # given the margins n11 has Fisher's law with parameter 1 / w, not w (the erratum)
    table, z = FisherTable2x2(), {"row_totals": ROWS, "col_total": COL}
    support = table.support(z)
    counts = np.bincount(x11 - support[0], minlength=support.size)
    for psi, fits in ((1 / 3, True), (3.0, False)):
        expected = np.exp(table.logpmf(support, [psi], z)[0]) * size
        keep = expected > 5
        rest = counts[~keep].sum(), expected[~keep].sum()
        chi2 = stats.chisquare(np.append(counts[keep], rest[0]), np.append(expected[keep], rest[1])).pvalue
        assert (chi2 > 1e-4) if fits else (chi2 < 1e-12)
    noise = CanonicalNoise.pure(1.0)
    u = noise.release(x11.astype(float), random_seed=4)
    # formula (6) as printed: p = E_{X11 ~ Hyper(w = 1)} F(X11 - U), for H1: w > 1
    null_pmf = np.exp(table.logpmf(support, [1.0], z)[0])
    printed = noise.cdf(support[None, :] - u[:, None]) @ null_pmf
    printed_rate = np.mean(printed <= ALPHA)
    corrected_rate = np.mean(odds_ratio_test(u, ROWS, COL, noise, alternative="less") <= ALPHA)
    assert printed_rate < ALPHA - 4.5 * math.sqrt(ALPHA * (1 - ALPHA) / size)  # power below alpha
    assert corrected_rate > 0.5
    assert within(corrected_rate, odds_ratio_power(1 / 3, ROWS, COL, noise, alternative="less"), size)
    assert within(printed_rate, odds_ratio_power(1 / 3, ROWS, COL, noise, alternative="greater"), size)


@pytest.mark.parametrize("name", NOISES)
@pytest.mark.parametrize("u", [13.2, 24.9, 31.05])
def test_p_value_matches_monte_carlo(name, u):
    noise = NOISES[name]
    size = 100_000
    rows, col = [30, 45], 40
    null = releases(1.0, noise, size, seed=5, rows=rows, col=col)
    for alternative, hits in (("greater", null >= u), ("less", null <= u)):
        estimate = hits.mean()
        exact = odds_ratio_test(u, rows, col, noise, alternative)
        assert abs(estimate - exact) <= 4.5 * math.sqrt(max(exact * (1 - exact), 1e-6) / size)
    p_two = odds_ratio_test(u, rows, col, noise, "two-sided")
    greater, less = (odds_ratio_test(u, rows, col, noise, a) for a in ("greater", "less"))
    assert math.isclose(p_two, min(1.0, 2 * min(greater, less)))
    assert math.isclose(greater + less, 1.0, rel_tol=1e-12)


@pytest.mark.parametrize("rows, col", [([0, 50], 20), ([50, 0], 20), ([50, 50], 0), ([50, 50], 100)])
def test_margins_that_fix_the_cell_are_refused(rows, col):
    """An empty row or column fixes n11: every odds ratio gives the release one law, and no test exists
    (the p-value 5e-14 returned before was meaningless)."""
    noise = CanonicalNoise.pure(1.0)
    support = FisherTable2x2().support({"row_totals": rows, "col_total": col})
    assert support.size == 1  # n11 is fixed by the margins
    with pytest.raises(ValueError, match="not identified"):
        odds_ratio_test(30.0, rows, col, noise)
    with pytest.raises(ValueError, match="not identified"):
        odds_ratio_power(3.0, rows, col, noise)


def test_odds_ratio_test_checks_its_input():
    noise = CanonicalNoise.pure(1.0)
    with pytest.raises(ValueError, match="alternative"):
        odds_ratio_test(3.0, ROWS, COL, noise, alternative="bigger")
    with pytest.raises(ValueError, match="alternative"):
        odds_ratio_power(3.0, ROWS, COL, noise, alternative="two_sided")
    with pytest.raises(ValueError, match="u must"):
        odds_ratio_test(math.nan, ROWS, COL, noise)
    with pytest.raises(ValueError, match="noise must offer cdf"):
        odds_ratio_test(3.0, ROWS, COL, noise=1.0)
    with pytest.raises(ValueError, match="col_total"):
        odds_ratio_test(3.0, ROWS, 101, noise)
    with pytest.raises(ValueError, match="row_totals"):
        odds_ratio_test(3.0, [50, -1], 10, noise)
    with pytest.raises(ValueError, match="alpha"):
        odds_ratio_power(2.0, ROWS, COL, noise, alpha=1.5)
    for bad in (0.0, -1.0, math.inf, [1.0, 2.0]):
        with pytest.raises(ValueError, match="odds_ratio"):
            odds_ratio_power(bad, ROWS, COL, noise)
    assert isinstance(odds_ratio_test(3.0, ROWS, COL, noise), float)
    # errors name the arguments the caller passed, not the data model's z entries
    for rows, col, name in (
        ([50, -1], 10, "row_totals"),
        ([50, 50, 1], 10, "row_totals"),
        (ROWS, 101, "col_total"),
        (ROWS, 2.5, "col_total"),
    ):
        with pytest.raises(ValueError, match=f"^{name}") as caught:
            odds_ratio_test(3.0, rows, col, noise)
        assert "z[" not in str(caught.value)
    assert odds_ratio_test([[3.0, 4.0]], ROWS, COL, noise).shape == (1, 2)


# --- the Bayesian twin: the posterior of the odds ratio given U and the margins ------------------

import ppdinfer as pp  # noqa: E402
from ppdinfer.mechanisms import DiscreteLaplace  # noqa: E402
from ppdinfer.models import table_2x2  # noqa: E402

TWIN_ROWS, TWIN_COL, TWIN_U = [30, 45], 40, 21.37


def grid_posterior(noise, u, rows, col, log_odds_sd=1.0):
    """E[log psi | u] and E[psi | u] by brute force on a fine grid of log psi (independent of exact_posterior)."""
    beta = np.linspace(-10, 10, 20001) * log_odds_sd
    z = {"row_totals": rows, "col_total": col}
    table = FisherTable2x2()
    support = table.support(z)
    log_prior_x = table.logpmf(support, np.exp(beta), z)  # (grid, support)
    log_release = noise.logpdf(u, support.astype(float))
    log_post = stats.norm.logpdf(beta, scale=log_odds_sd) + np.logaddexp.reduce(log_prior_x + log_release, axis=1)
    weights = np.exp(log_post - log_post.max())
    weights /= weights.sum()
    mean = weights @ beta
    return mean, math.sqrt(weights @ (beta - mean) ** 2), weights @ np.exp(beta), beta, log_post


@pytest.fixture(scope="module", params=["tulap", "gaussian"])
def twin(request):
    noise = "tulap" if request.param == "tulap" else CanonicalNoise.gaussian(1.0)
    model = table_2x2.model(epsilon=1.0, noise=noise) if request.param == "tulap" else table_2x2.model(noise=noise)
    z = table_2x2.public_information(TWIN_ROWS, TWIN_COL)
    return model, z, grid_posterior(model.mechanism, TWIN_U, TWIN_ROWS, TWIN_COL)


def test_exact_posterior_of_the_odds_ratio_given_a_continuous_release(twin):
    model, z, (log_mean, log_sd, mean, _, _) = twin
    exact = pp.exact_posterior(model, TWIN_U, z, random_seed=0)
    assert math.isclose(float(exact["exact"]["theta_mean"][0]), mean, rel_tol=2e-3)
    assert math.isclose(float(exact["exact"]["x_pmf"].sum()), 1.0, rel_tol=1e-12)
    draws = np.log(exact["posterior"]["odds_ratio"].values.reshape(-1))
    assert abs(draws.mean() - log_mean) < 4.5 * log_sd / math.sqrt(draws.size)


def test_rejection_and_importance_sampling_agree_with_the_exact_posterior(twin):
    model, z, (log_mean, log_sd, _, _, _) = twin
    rejection = pp.rejection_sample(model, TWIN_U, z, draws=3000, random_seed=11, progressbar=False)
    assert rejection.attrs["complete"]
    log_draws = np.log(rejection["posterior"]["odds_ratio"].values.reshape(-1))
    assert abs(log_draws.mean() - log_mean) < 4.5 * log_sd / math.sqrt(log_draws.size)
    importance = pp.importance_sample(model, TWIN_U, z, draws=20_000, random_seed=12)
    weights = np.exp(importance["proposal"]["log_weight"].values.reshape(-1))
    proposals = np.log(importance["proposal"]["odds_ratio"].values.reshape(-1))
    ess = float(importance["sample_stats"]["ess"])
    assert abs(weights @ proposals - log_mean) < 4.5 * log_sd / math.sqrt(ess)


def test_tulap_posterior_is_the_discrete_laplace_posterior_of_the_rounded_release():
    # Tulap = discrete Laplace + Uniform(-1/2, 1/2): the uniform part carries no information
    z = table_2x2.public_information(TWIN_ROWS, TWIN_COL)
    tulap = pp.exact_posterior(table_2x2.model(epsilon=0.7, noise="tulap"), TWIN_U, z)
    laplace = pp.exact_posterior(table_2x2.model(epsilon=0.7), round(TWIN_U), z)
    assert np.allclose(tulap["exact"]["x_pmf"], laplace["exact"]["x_pmf"], rtol=1e-12)
    assert math.isclose(float(tulap["exact"]["theta_mean"][0]), float(laplace["exact"]["theta_mean"][0]), rel_tol=1e-12)


def test_pymc_twin_with_canonical_noise_has_the_exact_log_posterior(twin):
    model, z, (_, _, _, beta, log_post) = twin
    pymc_model = model.to_pymc(TWIN_U, z)
    assert [v.name for v in pymc_model.potentials] == ["release"] and not pymc_model.observed_RVs
    logp = pymc_model.compile_logp()
    points = [-1.0, 0.0, 0.8, 2.0]
    values = np.array([logp({"log_odds_ratio": b}) for b in points])
    reference = np.interp(points, beta, log_post)  # the grid holds these points exactly
    assert np.allclose(values - values[1], reference - reference[1], atol=1e-8)


def test_table_model_noise_options():
    assert table_2x2.model().mechanism == DiscreteLaplace(1.0)  # the default is unchanged
    assert table_2x2.model(epsilon=0.5, noise="tulap").mechanism == Tulap(0.5)
    gaussian = CanonicalNoise.gaussian(2.0)
    assert table_2x2.model(noise=gaussian).mechanism is gaussian
    with pytest.raises(ValueError, match="epsilon must be left out"):
        table_2x2.model(epsilon=1.0, noise=gaussian)
    with pytest.raises(ValueError, match="noise must be one of"):
        table_2x2.model(noise="laplace")
    with pytest.raises(ValueError, match="integers"):  # the discrete Laplace release is an integer
        pp.exact_posterior(table_2x2.model(), TWIN_U, table_2x2.public_information(TWIN_ROWS, TWIN_COL))
