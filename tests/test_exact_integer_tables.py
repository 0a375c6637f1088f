"""The discrete Laplace tables of the exact integer sampler: thresholds against the digit-product pmf in high
precision, the law of every kind of grouping, and the rare paths (undecided words, the tail) decided exactly."""

import math
from fractions import Fraction

import mpmath
import numpy as np
import pytest
from scipy import stats

from ppdinfer.mechanisms import DiscreteLaplace
from ppdinfer.mechanisms import exact_integer as exact

# Groupings: [8, 12] (w = 3, two words), [8, 7, 8] (a bounded group between), [16, 15, 15, 11], [2, 5] (w = 1);
# [1, 1] (w = 0: K != 0 has probability 4e-22, so only its thresholds are checked).
RATES = [Fraction(1, 2), Fraction(1, 10), Fraction(1, 1000), Fraction(5)]


def _chi_square(draws, rate):
    """Chi-square p-value of draws against the discrete Laplace pmf; cells expected below 5 pooled."""
    mechanism = DiscreteLaplace(float(rate))
    support = np.arange(draws.min(), draws.max() + 1)
    expected = np.exp(mechanism.logpdf(0, support)) * draws.size
    keep = expected >= 5
    observed = np.bincount(draws - draws.min())
    observed = np.append(observed[keep], observed[~keep].sum())
    expected = np.append(expected[keep], draws.size - expected[keep].sum())
    return stats.chisquare(observed, expected).pvalue


def _digit_probability(q, digit, value):
    """P(digit of G = value) = q^(2^i) / (1 + q^(2^i)) for value 1: the independent binary digits of G."""
    one = q ** (2**digit) / (1 + q ** (2**digit))
    return one if value else 1 - one


def _threshold(rate, tables, group, j):
    """Threshold j of ``group``, in 300-bit arithmetic, from the digit products (not the code's closed forms)."""
    q = mpmath.exp(-mpmath.mpf(rate.numerator) / rate.denominator)
    w = tables.width
    if group == tables.bounded + 1:  # the rest H = G >> s: P(H <= j) = sum_h (1 - Q) Q^h
        big_q = q ** (2 ** int(tables.shifts[-1]))
        return mpmath.fsum((1 - big_q) * big_q**h for h in range(j + 1))

    def block(value):  # P(digits [start, start + w) of G read value)
        start = w * group
        return mpmath.fprod(_digit_probability(q, start + b, (value >> b) & 1) for b in range(w))

    if group > 0:
        return mpmath.fsum(block(v) for v in range(j + 1))
    zero = (1 - q) / (1 + q)
    return zero + (1 - zero) * mpmath.fsum(block(v) for v in range(j))


@pytest.mark.parametrize("rate", [*RATES, Fraction(50)], ids=str)
def test_thresholds_enclose_the_digit_product_cdf(rate):
    tables = exact._laplace_tables(rate)
    assert int(tables.lengths.sum()) <= exact._MAX_TABLE
    with mpmath.workprec(300):
        for group, length in enumerate(tables.lengths):
            digits = 63 if group == 0 else 64
            for j in range(length):
                scaled = _threshold(rate, tables, group, j) * 2**digits
                low, high = int(tables.low[group, j]), int(tables.high[group, j])
                assert low <= scaled <= high + 1 and high - low <= 1


@pytest.mark.parametrize("rate", RATES, ids=str)
def test_every_grouping_draws_the_discrete_laplace_pmf(rate):
    draws = exact.discrete_laplace(1 / rate, 300_000, exact.RandomBits(np.random.default_rng(21)))
    assert _chi_square(draws, rate) > 1e-4


def test_a_wrong_threshold_is_detected():
    # The same test catches a sampler whose P(K = 0) threshold is 3% too high.
    tables = exact._laplace_tables(Fraction(1, 2))
    low, high = tables.low.copy(), tables.high.copy()
    try:
        for table in (tables.low, tables.high):
            table[0, 0] = np.uint64(int(table[0, 0]) * 103 // 100)
        draws = exact.discrete_laplace(Fraction(2), 300_000, exact.RandomBits(np.random.default_rng(21)))
    finally:
        tables.low[:], tables.high[:] = low, high
    assert _chi_square(draws, Fraction(1, 2)) < 1e-6


class _FirstWords(exact.RandomBits):
    """Random words whose first request is replaced by ``words`` (then the generator's)."""

    def __init__(self, words, rng):
        super().__init__(rng)
        self._first = words

    def __call__(self, *shape):
        if self._first is not None:
            words, self._first = self._first.reshape(shape), None
            return words
        return super().__call__(*shape)


def test_undecided_words_are_decided_exactly():
    # Group 0's word with U = floor(p 2^63) for p = P(K = 0) leaves K = 0 open: K = 0 with probability
    # frac(p 2^63), and else |K| = 1 (the second word 0 makes H = 0; the low bit 1 makes the sign -).
    tables = exact._laplace_tables(Fraction(1, 2))
    word = int(tables.low[0, 0])
    assert word == int(tables.high[0, 0])
    with mpmath.workprec(200):
        fraction = float(mpmath.tanh(mpmath.mpf(1) / 4) * 2**63 - word)
    rng = np.random.default_rng(5)
    values = [
        int(
            exact.discrete_laplace(Fraction(2), 1, _FirstWords(np.array([(word << 1) | 1, 0], dtype=np.uint64), rng))[0]
        )
        for _ in range(4000)
    ]
    assert set(values) <= {0, -1}
    zero = values.count(0) / len(values)
    assert abs(zero - fraction) < 4.5 * math.sqrt(fraction * (1 - fraction) / len(values))


@pytest.fixture
def frequent_tail(monkeypatch):
    """Short tables, so that the tail H >= T (redone exactly in Python) is frequent."""
    exact._laplace_tables.cache_clear()
    exact._geometric_table.cache_clear()
    monkeypatch.setattr(exact, "_TAIL", 1)
    yield
    exact._laplace_tables.cache_clear()
    exact._geometric_table.cache_clear()


def test_tail_path_is_exact(frequent_tail):
    tables = exact._laplace_tables(Fraction(1, 2))
    shift, length = int(tables.shifts[-1]), int(tables.lengths[-1])
    tail = math.exp(-0.5 * 2**shift * length)  # P(H >= T)
    draws = exact.discrete_laplace(Fraction(2), 40_000, exact.RandomBits(np.random.default_rng(8)))
    beyond = np.abs(draws) > (length << shift)
    assert tail > 0.01 and beyond.mean() > 0.5 * tail * (1 - math.tanh(0.25))
    assert _chi_square(draws, Fraction(1, 2)) > 1e-4


def test_draws_write_in_place_and_do_not_depend_on_chunks(monkeypatch):
    first = DiscreteLaplace(0.5).release(np.zeros(10_000, dtype=np.int64), random_seed=3)
    monkeypatch.setattr(exact, "_CHUNK", 999)
    assert np.array_equal(DiscreteLaplace(0.5).release(np.zeros(10_000, dtype=np.int64), random_seed=3), first)
    out = np.full(5, 7, dtype=np.int64)
    result = exact.discrete_laplace(Fraction(2), 5, exact.RandomBits(np.random.default_rng(3)), out)
    assert result is out and np.array_equal(out, first[:5])


def test_each_thread_encloses_at_its_own_precision():
    """A thread raising the interval precision for an undecided trial leaves other threads' enclosures
    alone, so a seed's releases do not depend on the threads running beside them."""
    import threading

    from ppdinfer.mechanisms import DiscreteGaussian, exact_integer

    exact_integer._iv().prec = 128
    seen = []
    other = threading.Thread(target=lambda: (setattr(exact_integer._iv(), "prec", 640), seen.append(1)))
    other.start()
    other.join()
    assert seen and exact_integer._iv().prec == 128
    sequential = [DiscreteGaussian(2.5).release(np.zeros(2000, dtype=int), random_seed=s) for s in range(4)]
    threaded = [None] * 4

    def release(s):
        threaded[s] = DiscreteGaussian(2.5).release(np.zeros(2000, dtype=int), random_seed=s)

    workers = [threading.Thread(target=release, args=(s,)) for s in range(4)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert all(np.array_equal(a, b) for a, b in zip(sequential, threaded))
