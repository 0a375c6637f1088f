"""The exact integer samplers: exact distributions, and release times independent of the noise and the data."""

import gc
import math
import time
from fractions import Fraction

import mpmath
import numpy as np
import pytest
from scipy import stats

from ppdinfer.mechanisms import DiscreteGaussian, DiscreteLaplace
from ppdinfer.mechanisms import exact_integer as exact


def _pmf_chi_square(draws, mechanism):
    """Chi-square p-value of noise draws against the mechanism's pmf; cells expected below 5 and the
    mass beyond the draws are pooled into one cell."""
    support = np.arange(draws.min(), draws.max() + 1)
    observed = np.bincount(draws - draws.min()).astype(float)
    expected = np.exp(mechanism.logpdf(0, support)) * draws.size
    small = expected < 5
    pooled_expected = expected[small].sum() + draws.size - expected.sum()
    observed = np.append(observed[~small], observed[small].sum())
    expected = np.append(expected[~small], pooled_expected)
    return stats.chisquare(observed, expected * observed.sum() / expected.sum()).pvalue


@pytest.mark.parametrize(
    "mechanism",
    [
        DiscreteLaplace(1.0),
        DiscreteLaplace(3.0, 2.0),
        DiscreteLaplace(1e-3),
        DiscreteGaussian(0.3),
        DiscreteGaussian(2.5),
        DiscreteGaussian(1000.0),
    ],
)
def test_million_draws_match_the_pmf(mechanism):
    noise = mechanism.release(np.zeros(10**6, dtype=np.int64), random_seed=11)
    assert _pmf_chi_square(noise, mechanism) > 1e-4


def test_chi_square_detects_a_slightly_wrong_scale():
    noise = DiscreteGaussian(2.5).release(np.zeros(10**6, dtype=np.int64), random_seed=11)
    assert _pmf_chi_square(noise, DiscreteGaussian(2.5 * 1.01)) < 1e-6


@pytest.mark.parametrize(
    "mechanism, continuous",
    [(DiscreteLaplace(1e-15), stats.laplace(scale=1e15)), (DiscreteGaussian(1e15), stats.norm(scale=1e15))],
)
def test_huge_scales_keep_their_shape_and_low_digits(mechanism, continuous):
    noise = mechanism.release(np.zeros(200_000, dtype=np.int64), random_seed=5)
    assert stats.kstest(noise, continuous.cdf).pvalue > 1e-4
    # beyond 2^53 float64 would round: the low digits must stay uniform
    assert stats.chisquare(np.bincount(noise % 256, minlength=256)).pvalue > 1e-4


def test_scale_beyond_int64_is_refused():
    with pytest.raises(ValueError, match="int64"):
        DiscreteLaplace(1e-18).release([3], random_seed=1)


def test_geometric_binary_digits_are_independent():
    # (1 - q) q^g = prod_i p_i^digit_i (1 - p_i)^(1 - digit_i) with p_i = q^(2^i) / (1 + q^(2^i)), for every g
    g = np.arange(5000)
    for q in [0.05, 0.5, 0.9, 0.999]:
        i = np.arange(64)
        log_one = 2.0**i * math.log(q) - np.log1p(q ** (2.0**i))  # log p_i
        log_zero = -np.log1p(q ** (2.0**i))  # log(1 - p_i)
        digits = (g[:, None] >> i) & 1
        product = np.where(digits == 1, log_one, log_zero).sum(axis=1)
        assert np.allclose(product, np.log1p(-q) + g * np.log(q), rtol=0, atol=1e-11)


@pytest.fixture
def frequent_tail(monkeypatch):
    """Few fixed digits, so that the rare path G >= 2^m (and its recursion) runs often."""
    exact._geometric_table.cache_clear()
    monkeypatch.setattr(exact, "_TAIL", 1)
    yield
    exact._geometric_table.cache_clear()


def test_rare_tail_path_is_exact(frequent_tail):
    rate = Fraction(1, 10)  # m = 4, P(G >= 16) = exp(-1.6) = 0.2
    draws = exact.geometric(rate, 100_000, exact.RandomBits(np.random.default_rng(3)))
    assert (draws >= 16).mean() == pytest.approx(math.exp(-1.6), abs=0.01)
    q = math.exp(-0.1)
    support = np.arange(draws.max() + 1)
    expected = (1 - q) * q**support * draws.size
    keep = expected >= 5
    observed = np.bincount(draws)
    observed = np.append(observed[keep], observed[~keep].sum())
    expected = np.append(expected[keep], draws.size - expected[keep].sum())
    assert stats.chisquare(observed, expected).pvalue > 1e-4


def test_unsure_words_are_decided_exactly():
    # A word equal to floor(p 2^64) leaves the trial open: it succeeds with probability frac(p 2^64).
    with mpmath.workprec(200):
        p = mpmath.exp(-mpmath.mpf(1) / 3)
        word = int(mpmath.floor(p * 2**64))
        fraction = float(p * 2**64 - word)
    bits = exact.RandomBits(np.random.default_rng(4))

    def enclosure():
        return exact._iv().exp(-exact._exact(Fraction(1, 3)))

    hits = sum(exact.decide(enclosure, word, bits) for _ in range(10_000))
    assert abs(hits / 10_000 - fraction) < 4.5 * math.sqrt(fraction * (1 - fraction) / 10_000)
    words = np.array([word - 1, word, word + 1], dtype=np.uint64)
    bound = np.uint64(word)
    calls = []
    decided = exact.trials(words, bound, bound, lambda index: calls.append(index) or enclosure(), bits)
    assert decided[0] and not decided[2] and calls == [(1,)]


@pytest.mark.parametrize("sigma", [1e-100, 0.3, 1.0, 2.5, 1000.0, 1e15])
def test_float_acceptance_bounds_enclose_the_exact_threshold(sigma):
    sigma_squared = Fraction(sigma) ** 2
    t, centre, c, h, _ = exact._gaussian_plan(sigma_squared)
    rng = np.random.default_rng(6)
    candidates = exact.discrete_laplace(t, 300, exact.RandomBits(rng))
    nearest = round(centre)
    candidates = np.concatenate([candidates, [0, 1, nearest, nearest + 1, -nearest, 2**53 + 1, 2**61]])
    low, high = exact.acceptance_bounds(candidates, c, h)
    with mpmath.workprec(300):
        for k, lo, hi in zip(candidates, low, high):
            gamma = (abs(int(k)) - mpmath.mpf(centre.numerator) / centre.denominator) ** 2 / (
                2 * mpmath.mpf(sigma_squared.numerator) / sigma_squared.denominator
            )
            assert int(lo) <= mpmath.exp(-gamma) * 2**64 <= int(hi) + 1
            assert int(hi) - int(lo) <= 2**19  # a relative width of at most about 2^-46


@pytest.mark.parametrize("mechanism", [DiscreteLaplace(0.5), DiscreteGaussian(4.0)])
def test_seeds_reproduce_and_secure_mode_is_exact(mechanism):
    x = np.arange(20).reshape(4, 5)
    assert np.array_equal(mechanism.release(x, random_seed=9), mechanism.release(x, random_seed=9))
    assert not np.array_equal(mechanism.release(x, random_seed=9), mechanism.release(x, random_seed=10))
    noise = mechanism.release(np.zeros(100_000, dtype=np.int64), random_seed=9, secure=True)
    assert noise.dtype == np.int64 and _pmf_chi_square(noise, mechanism) > 1e-4
    assert mechanism.release(np.zeros((0, 3), dtype=np.int64), random_seed=1).shape == (0, 3)


def test_pymc_draws_group_parameters():
    from ppdinfer.pymc.distributions import DiscreteLaplaceRV

    rng = np.random.default_rng(8)
    epsilon = np.array([0.5, 2.0, 0.5])
    draws = DiscreteLaplaceRV.rng_fn(rng, np.array([0, 100, -50]), epsilon, 1.0, (20_000, 3))
    assert draws.shape == (20_000, 3) and draws.dtype == np.int64
    assert np.allclose(draws.mean(axis=0), [0, 100, -50], atol=0.1)
    variance = 2 * np.exp(-epsilon) / (1 - np.exp(-epsilon)) ** 2
    assert np.allclose(draws.var(axis=0), variance, rtol=0.05)


def _timed_releases(mechanism, releases=10_000):
    """Release times (ns) of one count each, after a warm-up, with the absolute noise and the counts.

    Load on the machine only adds time unrelated to the noise, so it weakens a correlation but cannot
    create one: single timings suffice for a rank correlation.
    """
    rng = np.random.default_rng(0)
    counts = rng.integers(0, 1000, releases)
    for count in counts[:500]:  # warm up caches and code paths
        mechanism.release(np.array([count]), random_seed=rng)
    times = np.empty(releases)
    noise = np.empty(releases)
    gc.disable()
    try:
        for i, count in enumerate(counts):
            x = np.array([count])
            start = time.perf_counter_ns()
            y = mechanism.release(x, random_seed=rng)
            times[i] = time.perf_counter_ns() - start
            noise[i] = abs(y[0] - count)
    finally:
        gc.enable()
    return times, noise, counts


@pytest.mark.parametrize("mechanism", [DiscreteLaplace(1.0), DiscreteGaussian(3.0)])
def test_release_time_is_independent_of_noise_and_data(mechanism):
    # Before (CKS in Python loops): correlation with |noise| 0.37 to 0.49 (Laplace), 0.11 to 0.17 (Gaussian).
    times, noise, counts = _timed_releases(mechanism)
    assert abs(stats.spearmanr(times, noise).statistic) < 0.05
    assert abs(stats.spearmanr(times, counts).statistic) < 0.05
