"""The congenial mechanism (Gong & Meng): releases against the exact pmf p*, the normalizer c(s),
the MIS's index set, refusals, and exact posteriors through the samplers."""

import math

import numpy as np
import pytest
from mechanism_registry import MARGINS, TOTAL3
from scipy import stats
from scipy.special import gammaln, logsumexp

import ppdinfer as pp
from ppdinfer.invariants import LinearInvariants
from ppdinfer.mechanisms import Congenial, DiscreteGaussian, DiscreteLaplace


def exact_pmf(mech, x):
    support = mech.invariants.enumerate()
    return support, np.exp([mech.logpdf(t, x)[0] for t in support])


def counts_of(draws, support):
    flat = draws.reshape(len(draws), -1)
    keys = {tuple(t): i for i, t in enumerate(support.reshape(len(support), -1))}
    counts = np.zeros(len(support))
    for row in flat:
        counts[keys[tuple(row)]] += 1
    return counts


def chi_square_p(counts, pmf):
    expected = counts.sum() * pmf
    return stats.chisquare(counts, expected).pvalue


# p*(t | x) sums to one over S* for every conforming x, under log_bound: tests/test_mechanism_contract.py
# (DiscreteLaplace(0.7) and DiscreteGaussian(1.5), on TOTAL3 and MARGINS, in tests/mechanism_registry.py).


@pytest.mark.parametrize("inv, x", [(TOTAL3, [4, 0, 0]), (MARGINS, [[1, 3], [3, 1]])], ids=["total", "margins"])
def test_rejection_release_matches_exact_pmf(inv, x):
    mech = Congenial(DiscreteLaplace(0.8), inv)
    draws = mech.release(x, random_seed=1, method="rejection", size=20_000)
    assert mech.last_method == "rejection"
    support, pmf = exact_pmf(mech, x)
    assert chi_square_p(counts_of(draws, support), pmf) > 1e-3
    # The acceptance rate is c(x).
    c = float(np.exp(mech.log_normalizer(np.asarray(x).reshape(1, -1))[0]))
    assert mech.last_acceptance_rate == pytest.approx(c, rel=0.05)


@pytest.mark.parametrize("noise", [DiscreteLaplace(0.8), DiscreteGaussian(1.5)], ids=["laplace", "gaussian"])
@pytest.mark.parametrize("inv, x", [(TOTAL3, [4, 0, 0]), (MARGINS, [[1, 3], [3, 1]])], ids=["total", "margins"])
def test_mis_release_is_stationary_at_exact_pmf(inv, x, noise):
    mech = Congenial(noise, inv)
    draws = mech.release(x, random_seed=2, method="mis", size=5_000, burn_in=1_000, thin=20)
    assert mech.last_method == "mis" and 0.05 < mech.last_acceptance_rate < 1
    support, pmf = exact_pmf(mech, x)
    counts = counts_of(draws, support)
    assert chi_square_p(counts, pmf) > 1e-3
    assert 0.5 * np.abs(counts / counts.sum() - pmf).sum() < 0.03


def test_auto_uses_rejection_when_affordable_and_mis_otherwise():
    mech = Congenial(DiscreteLaplace(1.0), TOTAL3)
    mech.release([2, 1, 1], random_seed=0)
    assert mech.last_method == "rejection"
    mech.release([2, 1, 1], random_seed=0, max_proposals=10)  # 1 / c(x) > max_proposals / 10
    assert mech.last_method == "mis"


def test_unimodularity_of_the_solved_cells_is_checked():
    inv = LinearInvariants([[1, 2, 1]], [4], np.eye(3, dtype=int), [0, 0, 0])
    mech = Congenial(DiscreteLaplace(1.0), inv)
    with pytest.raises(ValueError, match="determinant 2, not"):
        mech.release([2, 1, 0], random_seed=0, method="mis", free_cells=[0, 2])
    assert mech.free_cells([1, 2]).tolist() == [1, 2]  # A[:, [0]] = [[1]]
    assert mech.free_cells().tolist() == [0, 1]  # the default solves the last cell
    draws = mech.release([2, 1, 0], random_seed=0, method="mis", size=200, burn_in=50, thin=2)
    assert np.all(inv.contains(draws))
    with pytest.raises(ValueError, match="2 distinct cell indices"):
        mech.free_cells([0])


def test_nonconforming_x_and_bad_arguments_are_refused():
    mech = Congenial(DiscreteLaplace(1.0), TOTAL3)
    with pytest.raises(ValueError, match="x breaks equality 0"):
        mech.release([1, 1, 1], random_seed=0)
    with pytest.raises(ValueError, match="x breaks inequality 2"):
        mech.release([3, 2, -1], random_seed=0)
    with pytest.raises(ValueError, match="method must be"):
        mech.release([2, 1, 1], method="gibbs")
    with pytest.raises(ValueError, match="DiscreteLaplace or DiscreteGaussian"):
        Congenial(pp.mechanisms.Laplace(1.0), TOTAL3)


def test_rejection_budget_refusal_names_the_acceptance_rate():
    mech = Congenial(DiscreteLaplace(0.1), TOTAL3)
    with pytest.raises(ValueError, match=r"acceptance rate .*exact acceptance rate c\(x\) is"):
        mech.release([4, 0, 0], random_seed=0, method="rejection", max_proposals=3)


def test_non_conforming_y_or_x_has_zero_likelihood():
    mech = Congenial(DiscreteLaplace(1.0), TOTAL3)
    assert mech.logpdf([1, 1, 1], [2, 1, 1])[0] == -np.inf
    out = mech.logpdf([2, 1, 1], [[2, 1, 1], [2, 2, 1], [5, 0, -1]])
    assert np.isfinite(out[0]) and np.all(out[1:] == -np.inf)


def test_unknown_normalizer_is_refused_not_dropped():
    # y1 + y2 = 3 and y1 >= 0: S* is infinite and c(s) depends on s.
    mech = Congenial(DiscreteLaplace(1.0), LinearInvariants([[1, 1]], [3], [[1, 0]], [0]))
    with pytest.raises(ValueError, match=r"depends on s .*dropping c\(s\)"):
        mech.logpdf([1, 2], [1, 2])
    assert mech.log_bound(size=2) == math.inf
    assert mech.normalizer.startswith("unavailable")


def test_equalities_only_constant_normalizer():
    a = math.exp(-1.0)
    mech = Congenial(DiscreteLaplace(1.0), LinearInvariants.grand_total(2, 3))
    # c = P(u1 + u2 = 0) = sum_k p(k)^2 for the two-sided geometric.
    c = ((1 - a) / (1 + a)) ** 2 * (1 + 2 * a**2 / (1 - a**2))
    assert mech.normalizer.startswith("constant")
    np.testing.assert_allclose(np.exp(mech.log_normalizer([[0, 3], [9, -6]])), c, rtol=1e-12)
    # The conditional pmf sums to one over the (infinite) line y1 + y2 = 3.
    ys = np.stack([np.arange(-60, 64), 3 - np.arange(-60, 64)], axis=1)
    total = sum(np.exp(mech.logpdf(y, [1, 2])[0]) for y in ys)
    assert total == pytest.approx(1.0, rel=1e-12)


def test_dropping_the_normalizer_changes_the_posterior():
    """c(s) depends on s under non-negativity, so the likelihood ratio without it is wrong."""
    mech = Congenial(DiscreteLaplace(0.5), TOTAL3)
    support = TOTAL3.enumerate()
    log_c = mech.log_normalizer(support)
    assert log_c.max() - log_c.min() > 0.3
    y = np.array([2, 1, 1])
    exact = mech.logpdf(y, support)
    dropped = exact + log_c  # log p(y - x) 1{y in S*} alone
    post_exact = np.exp(exact - logsumexp(exact))  # uniform prior on S*
    post_dropped = np.exp(dropped - logsumexp(dropped))
    assert 0.5 * np.abs(post_exact - post_dropped).sum() > 0.02
    i, j = (next(k for k, t in enumerate(support) if t.tolist() == v) for v in ([1, 1, 2], [4, 0, 0]))
    ratio_exact = exact[i] - exact[j]  # the likelihood ratio of an inner and a corner table
    ratio_dropped = dropped[i] - dropped[j]
    assert abs(ratio_exact - ratio_dropped) > 0.1


def brute_force_posterior(mech, y, alpha):
    support = TOTAL3.enumerate()
    n = 4
    log_dm = (
        gammaln(n + 1)
        + gammaln(alpha.sum())
        - gammaln(n + alpha.sum())
        + (gammaln(support + alpha) - gammaln(alpha) - gammaln(support + 1)).sum(axis=1)
    )
    log_post = log_dm + mech.logpdf(y, support)
    return support, np.exp(log_post - logsumexp(log_post))


def test_exact_posterior_and_rejection_sampler_agree_with_brute_force():
    alpha = np.array([1.0, 2.0, 0.5])
    mech = Congenial(DiscreteLaplace(0.7), TOTAL3)
    model = pp.PPDModel(pp.priors.Dirichlet(alpha), pp.generators.MultinomialTotal(), mech)
    z, y = {"total": 4}, np.array([3, 0, 1])
    support, pmf = brute_force_posterior(mech, y, alpha)
    exact = pp.exact_posterior(model, y, z, draws=10, random_seed=0)["exact"]
    got = {tuple(t): p for t, p in zip(exact["x_support"].values.reshape(-1, 3), exact["x_pmf"].values)}
    np.testing.assert_allclose([got[tuple(t)] for t in support], pmf, rtol=1e-9, atol=1e-15)
    draws = pp.rejection_sample(model, y, z, draws=3000, random_seed=1, progressbar=False)
    x = draws.posterior["x"].values.reshape(-1, 3)
    mean = pmf @ support
    se = np.sqrt(pmf @ (support - mean) ** 2 / len(x))
    assert np.all(np.abs(x.mean(axis=0) - mean) < 5 * se)
