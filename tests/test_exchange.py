"""The exchange algorithm (Murray, Ghahramani & MacKay 2006) against the exact posterior, a negative
control without the auxiliary release, and refusals."""

import numpy as np
import pytest
from scipy import stats

import ppdinfer as pp
from ppdinfer import generators, mechanisms, priors
from ppdinfer.inference import exchange
from ppdinfer.invariants import LinearInvariants
from ppdinfer.mechanisms import Congenial, DiscreteLaplace

TOTAL3 = LinearInvariants.grand_total(3, 4) & LinearInvariants.nonnegative(3)
Y, Z = [4, 0, 0], {"total": 4}  # at the boundary of S*, where c(x) varies most across x
DRAWS, TUNE = 12_000, 500
THIN = 40
#: The negative control needs no release, so it runs longer (a smaller Monte Carlo error).
CONTROL_DRAWS = 100_000


def tiny_model():
    return pp.PPDModel(
        priors.Dirichlet([1.0, 1.0, 1.0]), generators.MultinomialTotal(), Congenial(DiscreteLaplace(0.5), TOTAL3)
    )


def batch_means(values, batches=40):
    """Mean and its Monte Carlo standard error by batch means (robust to autocorrelation)."""
    n = len(values) // batches * batches
    means = values[:n].reshape(batches, -1).mean(axis=1)
    return values.mean(), means.std(ddof=1) / np.sqrt(batches)


def support_indices(draws, support):
    keys = {tuple(t): i for i, t in enumerate(support)}
    return np.array([keys[tuple(row)] for row in draws])


def merged_chi_square_p(counts, pmf, minimum=5.0):
    """Chi-square p-value, cells with expected counts below ``minimum`` pooled into one."""
    expected = counts.sum() * pmf
    small = expected < minimum
    obs = np.append(counts[~small], counts[small].sum())
    exp = np.append(expected[~small], expected[small].sum())
    keep = exp > 0
    return stats.chisquare(obs[keep], exp[keep]).pvalue


@pytest.fixture(scope="module")
def exact():
    model = tiny_model()
    result = pp.exact_posterior(model, Y, Z, draws=10, random_seed=0)
    support = result["exact"]["x_support"].values.reshape(-1, 3)
    pmf = result["exact"]["x_pmf"].values
    return model, support, pmf


@pytest.fixture(scope="module")
def chain(exact):
    model = exact[0]
    return pp.exchange_sample(model, Y, Z, draws=DRAWS, tune=TUNE, random_seed=3, progressbar=False)


def test_exchange_matches_exact_posterior(exact, chain):
    model, support, pmf = exact
    x = chain["posterior"]["x"].values[0]
    assert x.shape == (DRAWS, 3) and np.all(x.sum(axis=1) == 4)
    exact_mean = pmf @ support
    for j in range(3):
        mean, se = batch_means(x[:, j].astype(float))
        assert abs(mean - exact_mean[j]) < 4 * se, (j, mean, exact_mean[j], se)
    # Chi-square on draws thinned to near independence (lag-THIN autocorrelation checked small).
    x0 = x[:, 0].astype(float) - x[:, 0].mean()
    assert abs(np.dot(x0[:-THIN], x0[THIN:]) / np.dot(x0, x0)) < 0.1
    thinned = support_indices(x[::THIN], support)
    counts = np.bincount(thinned, minlength=len(support)).astype(float)
    assert merged_chi_square_p(counts, pmf) > 1e-3
    # theta from its conjugate conditional; sample_stats carry the acceptance rate.
    theta = chain["posterior"]["theta"].values[0]
    np.testing.assert_allclose(theta.sum(axis=1), 1.0)
    rate = chain["sample_stats"].attrs["acceptance_rate"]
    assert 0.05 < rate < 0.9
    assert rate == pytest.approx(chain["sample_stats"]["accepted"].values.mean())
    assert chain.attrs["sampler"] == "exchange"


def test_dropping_the_auxiliary_release_is_detectably_wrong(exact):
    """The same chain without w targets pi(x) p(y - x), i.e. drops 1 / c(x): its mean is off."""
    model, support, pmf = exact
    mech = model.mechanism
    log_c = mech.log_normalizer(support)
    assert np.ptp(log_c) > 0.4  # c(x) varies with x here
    target = model_log_target(model, support)
    index = {tuple(row): i for i, row in enumerate(support)}
    rng = np.random.default_rng(3)
    start = int(np.argmax(target))
    states, _ = exchange._run_chain(
        support, target, index, exchange._moves(support, 3), start, CONTROL_DRAWS + TUNE, rng, None, None
    )
    x = support[states[TUNE:]]
    wrong = pmf * np.exp(log_c)
    wrong /= wrong.sum()
    mean, se = batch_means(x[:, 0].astype(float))
    assert abs(mean - (wrong @ support)[0]) < 4 * se  # it samples the c-less target...
    assert abs(mean - (pmf @ support)[0]) > 6 * se  # ...which is not the posterior


def model_log_target(model, support):
    from ppdinfer.inference.conjugate import conjugate_pair

    pair = conjugate_pair(model.prior, model.simulate)
    return pair.log_marginal(support, Z) + model.mechanism.unnormalized_logpdf(Y, support)


def test_unnormalized_logpdf_differs_from_logpdf_by_log_c():
    mech = Congenial(DiscreteLaplace(0.5), TOTAL3)
    support = TOTAL3.enumerate()
    gap = mech.unnormalized_logpdf(Y, support) - mech.logpdf(Y, support)
    np.testing.assert_allclose(gap, mech.log_normalizer(support))
    assert mech.unnormalized_logpdf(Y, [5, -1, 0])[0] == -np.inf
    assert np.all(mech.unnormalized_logpdf([5, -1, 0], support) == -np.inf)


def test_refusals():
    with pytest.raises(ValueError, match="unnormalized_logpdf"):
        pp.exchange_sample(
            pp.PPDModel(
                priors.Dirichlet([1.0, 1.0, 1.0]), generators.MultinomialTotal(), mechanisms.DiscreteLaplace(0.5)
            ),
            Y,
            Z,
            draws=10,
            progressbar=False,
        )
    with pytest.raises(ValueError, match="conjugate"):
        pp.exchange_sample(
            pp.PPDModel(
                priors.Gamma(2.0, 1.0),
                generators.Poisson(),
                Congenial(DiscreteLaplace(0.5), LinearInvariants.nonnegative(1)),
            ),
            3,
            draws=10,
            progressbar=False,
        )
    with pytest.raises(ValueError, match="proposal"):
        pp.exchange_sample(tiny_model(), Y, Z, draws=10, proposal="gibbs", progressbar=False)
    with pytest.raises(ValueError, match="tune"):
        pp.exchange_sample(tiny_model(), Y, Z, draws=10, tune=-1, progressbar=False)
