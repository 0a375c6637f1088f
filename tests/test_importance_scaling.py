"""importance_sample's work over all the proposals, done block by block: the same numbers as one pass
over all the weights (normalization, ESS, Pareto k and the smoothed weights), and a stratified
resample whose law is the one of resampling all the proposals at once."""

import warnings

import numpy as np
import pytest
from arviz_stats.base import array_stats
from scipy import special, stats

import ppdinfer as pp
from ppdinfer.inference.importance import (
    _Normalizer,
    _Proposals,
    _relative_weights,
    _stratified,
    _Uniforms,
)
from ppdinfer.inference.parallel import empty_for_threads
from ppdinfer.inference.rejection import BLOCK_SIZE
from ppdinfer.kernels import sorted_search
from ppdinfer.kernels.resampling import running_sums
from ppdinfer.models import beta_binomial
from ppdinfer.rng import block_generator, root_seed

MODEL = beta_binomial.model(n=50, epsilon=1.0, a=2, b=2)
PROPOSAL = stats.beta(1, 3)  # not the prior: weights that vary continuously with theta


def continuous(draws, cores=2):
    """An importance run with continuous weights (PSIS applies) and its log weights recomputed from scratch."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pp.ImportanceWarning)  # small runs: a low ESS, on purpose
        result = pp.importance_sample(MODEL, 10, draws=draws, proposal=PROPOSAL, random_seed=4, cores=cores)
    p = result["proposal"]["p"].values.reshape(-1)
    x = result["proposal"]["x"].values.reshape(-1, 1)
    y, z, _, _ = MODEL.prepare(10, None)
    log_w = MODEL.loglik(y, x, z) + MODEL.prior.logpdf(p) - PROPOSAL.logpdf(p)
    return result, log_w - special.logsumexp(log_w)


@pytest.mark.parametrize("draws", [100, 300, 3 * BLOCK_SIZE + 123])
def test_weights_ess_and_pareto_k_equal_one_pass_over_all_the_weights(draws):
    # 100: a tail of S / 5 weights; 300: 3 sqrt(S); the last: four blocks, the last one partial
    result, log_w = continuous(draws)
    proposal, stats_ = result["proposal"], result["sample_stats"]
    np.testing.assert_allclose(proposal["log_weight"].values.reshape(-1), log_w, rtol=0, atol=1e-10)
    w = np.exp(log_w)
    assert float(stats_["ess"]) == pytest.approx(1 / np.sum(w**2), rel=1e-10)
    smoothed, k = array_stats.psislw(-log_w)  # arviz-stats on all the weights at once
    assert np.isfinite(k) and float(stats_["pareto_k"]) == pytest.approx(float(k), rel=0, abs=1e-10)
    np.testing.assert_allclose(
        proposal["psis_log_weight"].values.reshape(-1), smoothed - special.logsumexp(smoothed), rtol=0, atol=1e-10
    )
    assert not np.allclose(proposal["psis_log_weight"].values, proposal["log_weight"].values)  # it did smooth


def test_the_resample_is_one_stratified_resample_of_all_the_proposals():
    # every stratum of every block: the draws at or before proposal j are D * (weight up to j) to
    # within one, the signature of a stratified resample (a multinomial one strays by sqrt(D))
    result, _ = continuous(3 * BLOCK_SIZE + 123)
    p = result["proposal"]["p"].values.reshape(-1)
    order = np.argsort(p)
    assert np.unique(p).size == p.size  # each draw names its proposal
    index = order[np.searchsorted(p[order], result["posterior"]["p"].values.reshape(-1))]
    assert np.all(np.diff(index) >= 0)  # kept in proposal order
    drawn = np.cumsum(np.bincount(index, minlength=p.size))
    expected = p.size * np.cumsum(np.exp(result["proposal"]["log_weight"].values.reshape(-1)))
    assert np.max(np.abs(drawn - expected)) <= 1 + 1e-6


def chi_square(result, support, pmf, ess):
    """Pearson's statistic of the resampled x against ``pmf``, with ESS for the sample size (bins of
    fewer than 5 expected draws pooled), and its degrees of freedom."""
    x = result["posterior"]["x"].values.reshape(-1)
    observed = np.array([np.mean(x == value) for value in support])
    keep = pmf * ess >= 5
    observed = np.append(observed[keep], observed[~keep].sum())
    expected = np.append(pmf[keep], pmf[~keep].sum())
    return ess * np.sum((observed - expected) ** 2 / expected), keep.sum()


def test_resampled_draws_follow_the_exact_posterior():
    model = beta_binomial.model(n=30, epsilon=1.0, a=2, b=2)
    result = pp.importance_sample(model, 12, draws=6 * BLOCK_SIZE + 5, random_seed=8, cores=2)
    ess = float(result["sample_stats"]["ess"])
    exact = pp.exact_posterior(model, 12)["exact"]
    support = exact["x_support"].values
    statistic, df = chi_square(result, support, exact["x_pmf"].values, ess)
    # the ESS understates the resample's precision (the statistic runs near 0.3 df over 20 seeds):
    # conservative, and a posterior with half the epsilon is still rejected by a factor of hundreds
    assert statistic < stats.chi2.isf(1e-4, df)
    wrong = pp.exact_posterior(beta_binomial.model(n=30, epsilon=0.5, a=2, b=2), 12)["exact"]["x_pmf"].values
    assert chi_square(result, support, wrong, ess)[0] > 10 * stats.chi2.isf(1e-4, df)


def blockwise_resample(log_w, draws, uniforms):
    """What importance_sample does, block by block: each block's share of the stratified resample."""
    blocks = [log_w[start : start + BLOCK_SIZE] for start in range(0, log_w.size, BLOCK_SIZE)]
    summaries = [(peak, *running_sums(relative)) for peak, relative in map(_relative_weights, blocks)]
    peaks, sums, squares = (np.array(part) for part in zip(*[(p, c[-1], s) for p, c, s in summaries]))
    weights = _Normalizer.from_blocks(peaks, sums, squares)
    index = np.full(draws, -1)
    for b, (_, cumulative, _) in enumerate(summaries):
        strata, local = _stratified(
            cumulative, weights.starts[b], weights.ends[b], weights.scale[b], weights.total, draws, uniforms
        )
        assert np.all(index[strata] == -1)  # no stratum twice
        index[strata] = b * BLOCK_SIZE + local
    return index, weights


@pytest.mark.parametrize("draws", [1, 999, 50_000])
def test_blocks_share_out_the_strata_exactly_even_around_blocks_of_zero_weight(draws):
    rng = np.random.default_rng(3)
    log_w = rng.normal(0, 3, 6 * BLOCK_SIZE + 77)
    for empty in (0, 2, 5, 6):  # first, middle, last full and last partial blocks weigh nothing
        log_w[empty * BLOCK_SIZE : (empty + 1) * BLOCK_SIZE] = -np.inf
    log_w[3 * BLOCK_SIZE + 10] = 20.0  # one proposal with most of the weight: many strata in one block
    uniforms = _Uniforms(root_seed(5), 0)
    index, weights = blockwise_resample(log_w, draws, uniforms)
    # the stratified resample of all the proposals at once, from the same uniforms
    w = np.exp(log_w - log_w.max())
    cumulative = np.cumsum(w)
    points = (np.arange(draws) + uniforms(0, draws)) / draws * cumulative[-1]
    np.testing.assert_array_equal(index, np.searchsorted(cumulative, points, side="right"))
    assert np.all(w[index] > 0)
    assert weights.ess == pytest.approx(w.sum() ** 2 / np.sum(w**2), rel=1e-12)
    assert weights.peak + np.log(weights.total) == pytest.approx(special.logsumexp(log_w), rel=1e-14)


def test_a_point_rounded_up_to_the_total_weight_still_has_a_block():
    # k + U rounds to k + 1 for U this close to 1 and k near 2^20: the last point lands on the total
    # weight itself, which belongs to the last block of positive weight (not to the empty one after it)
    log_w = np.concatenate([np.zeros(2 * BLOCK_SIZE), np.full(BLOCK_SIZE, -np.inf)])
    draws = 2**20
    index, _ = blockwise_resample(log_w, draws, lambda start, stop: np.full(stop - start, np.nextafter(1.0, 0.0)))
    assert (draws - 1 + np.nextafter(1.0, 0.0)) / draws == 1.0
    assert index.min() >= 0 and index[-1] == 2 * BLOCK_SIZE - 1


def test_uniforms_of_any_range_are_their_blocks_streams():
    root = root_seed(9)
    uniforms = _Uniforms(root, 4)
    whole = np.concatenate([block_generator(root, 4 + block).random(BLOCK_SIZE) for block in range(3)])
    for start, stop in [(0, 1), (5, BLOCK_SIZE), (BLOCK_SIZE - 3, BLOCK_SIZE + 2), (100, 3 * BLOCK_SIZE)]:
        np.testing.assert_array_equal(uniforms(start, stop), whole[start:stop])
    assert stats.kstest(uniforms(0, 3 * BLOCK_SIZE), "uniform").pvalue > 1e-3


def test_sorted_search_never_lands_on_a_trailing_zero_weight():
    cumulative = np.cumsum([0.0, 0.5, 0.0, 0.5, 0.0, 0.0])
    np.testing.assert_array_equal(sorted_search(cumulative, np.array([0.0, 0.5, 0.99, 1.0, 1.5])), [1, 3, 3, 3, 3])
    np.testing.assert_array_equal(sorted_search(np.zeros(3), np.array([0.0])), [0])


def test_blocks_that_disagree_on_a_dtype_are_refused():
    store = _Proposals(4)
    store.put(0, np.zeros((2, 1)), np.zeros((2, 1), dtype=np.int64), np.zeros(2))
    store.put(2, np.zeros((2, 1)), np.zeros((2, 1), dtype=np.int32), np.zeros(2))  # casts safely
    with pytest.raises(ValueError, match="x of dtype float64"):
        store.put(2, np.zeros((2, 1)), np.full((2, 1), 0.5), np.zeros(2))


def test_every_weight_zero_is_refused():
    with pytest.raises(ValueError, match="every importance weight is zero"):
        _Normalizer.from_blocks(np.array([-np.inf, -np.inf]), np.zeros(2), np.zeros(2))


def test_identical_results_on_one_and_two_cores_with_smoothed_weights():
    one, two = (continuous(2 * BLOCK_SIZE + 1, cores)[0] for cores in (1, 2))
    for group, name in [("proposal", "log_weight"), ("proposal", "psis_log_weight"), ("posterior", "p")]:
        np.testing.assert_array_equal(one[group][name].values, two[group][name].values)
    assert float(one["sample_stats"]["pareto_k"]) == float(two["sample_stats"]["pareto_k"])


class NaNProposal:
    """Beta(2, 2), except that its log density is NaN above 0.9."""

    def rvs(self, size=None, random_state=None):
        return stats.beta(2, 2).rvs(size=size, random_state=random_state)

    def logpdf(self, theta):
        return np.where(np.asarray(theta) > 0.9, np.nan, stats.beta(2, 2).logpdf(theta))


def test_a_nan_log_weight_is_refused_not_dropped():
    # a block whose largest log weight is NaN must not pass for a block of zero weights
    with pytest.raises(ValueError, match="log weight is NaN"):
        pp.importance_sample(MODEL, 10, draws=5000, proposal=NaNProposal(), random_seed=1)


@pytest.mark.parametrize("advice", [True, False])
def test_arrays_for_threads_leave_numpy_huge_page_advice_as_it_was(advice):
    set_advice = np._core.multiarray._set_madvise_hugepage
    before = set_advice(advice)
    try:
        array = empty_for_threads((1_000_000, 2), np.int64)  # 16 MB: numpy would advise huge pages
        assert array.shape == (1_000_000, 2) and array.dtype == np.int64 and array.flags.c_contiguous
        assert set_advice(advice) is advice
    finally:
        set_advice(before)
