"""Exact discrete Laplace and discrete Gaussian samplers whose running time does not reveal the noise.

Exactness. Every random decision is a trial "V < p" for a uniform V in [0, 1) and an exact
real p (irrational in general), as in Canonne, Kamath & Steinke (2020), "The Discrete Gaussian
for Differential Privacy". V's binary digits are drawn 64 at a time: with integers
lo <= p 2^64 <= hi + 1, the first word U of V decides the trial (success when U < lo,
failure when U > hi); only when lo <= U <= hi are more words drawn and p enclosed in mpmath
interval arithmetic, at rising precision, until the enclosure decides. Parameters arrive as
floats and are converted exactly (Fraction), so the draws follow exactly the pmf the mechanism
reports; no rounding error reaches a released value.

Constant time. A geometric G with P(G = g) = (1 - q) q^g, q = exp(-rate), has independent
binary digits: P(digit i = 1) = q^(2^i) / (1 + q^(2^i)), because (1 - q) q^g factorizes
over the digits of g and prod_i (1 + q^(2^i)) = 1 / (1 - q). Any groups of its digits are
therefore independent too: digits i .. i + w - 1 form a geometric with ratio q^(2^i) truncated to
2^w values, and the digits from i on an untruncated geometric with ratio q^(2^i). A discrete
Laplace draw, P(K = k) proportional to q^|k|, is 0 with probability (1 - q) / (1 + q) and
otherwise +-(1 + G) with a fair sign. It takes one 64-bit word per group of G's digits
(:func:`_laplace_tables` picks the grouping: two words for rates above about 0.12): group 0
decides K = 0 or the first w digits from the word's top 63 bits (its lowest bit is the sign),
each further group its digits, and the last group the rest H, up to a table end T with
P(H >= T) <= e^-45 < 2^-64. Each word is compared with every threshold of its group's cumulative
table, a fixed sequence of compiled, vectorized comparisons (``kernels.integer_tables``); the
thresholds' bounds lo, hi come from a 128-bit enclosure computed once per rate. (``geometric``
draws a geometric one digit per word, for the rare tail.) The discrete Gaussian is CKS
Algorithm 3 (discrete Laplace candidates with t = floor(sigma) + 1, each
accepted with probability exp(-(|K| - sigma^2 / t)^2 / (2 sigma^2))) run in batches of a
fixed number of candidates per value; the acceptance bounds are float64 values with a
rigorous error bound, and the first accepted candidate of each value is selected with array
arithmetic. A value with no accepted candidate gets another batch: in rejection sampling the
accepted value is independent of the number of rejections, so the number of rounds carries
no information about the noise.

Residual leaks: value-dependent extra work happens only (a) in the tail (H >= T, or G >= 2^m for
``geometric``: probability below 2^-64 per draw), (b) when a word falls between lo and hi (at most
2^-63 per threshold, so below 2^-56 per discrete Laplace value with its at most 128 thresholds; below
2^-45 per Gaussian acceptance trial, the width of its float64 enclosure), and (c) in the compiled
and numpy elementwise arithmetic, which is branch-free but not guaranteed constant-time.
"""

from __future__ import annotations

import functools
import math
import secrets
import threading
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
from mpmath.ctx_iv import MPIntervalContext

from ..kernels.integer_tables import table_laplace

#: The fixed digits m of a geometric draw: the smallest m with 2^m rate >= _TAIL, so that the
#: rare path (G >= 2^m) has probability exp(-2^m rate) <= e^-45 < 2^-64.
_TAIL = 45
#: At most 62 fixed digits: |noise| < 2^62 keeps a release of a count up to 2^53 inside int64.
_MAX_DIGITS = 62
#: The discrete Laplace tables: one random word costs about as much as _WORD_COST threshold comparisons; at
#: most _MAX_WIDTH digits per bounded group and _MAX_TABLE thresholds in all (so that a value meets an
#: undecided comparison with probability below 2^7 2^-63 = 2^-56).
_WORD_COST = 20
_MAX_WIDTH = 6
_MAX_TABLE = 128
#: Values sampled per vectorized chunk (bounds the memory; the work per value does not change).
_CHUNK = 1 << 16
_U64_MAX = np.uint64(2**64 - 1)
#: Bit generators whose raw output is one uniform 64-bit word (the words Generator.integers would give).
_RAW_64 = (np.random.PCG64, np.random.PCG64DXSM, np.random.SFC64, np.random.Philox)


class _IntervalContexts(threading.local):
    """One private interval context per thread: its precision does not disturb mpmath.iv, and a thread
    raising it for a rare undecided trial does not change the precision another thread's enclosures get
    (which would change how many random words that thread's trial reads, so a seed's releases would
    depend on the threads running beside it)."""

    def __init__(self):
        self.ctx = MPIntervalContext()


_CONTEXTS = _IntervalContexts()


def _iv() -> MPIntervalContext:
    """This thread's interval context."""
    return _CONTEXTS.ctx


class RandomBits:
    """Uniform 64-bit words from a numpy Generator (reproducible) or, with ``secure=True``, from the
    operating system's cryptographically secure generator (``secrets``, which ignores any seed)."""

    def __init__(self, rng: np.random.Generator | None = None, *, secure: bool = False):
        if not secure and rng is None:
            raise ValueError("rng is required unless secure=True")
        self._rng = rng
        self.secure = secure

    def __call__(self, *shape: int) -> np.ndarray:
        if self.secure:
            return np.frombuffer(secrets.token_bytes(8 * math.prod(shape)), dtype=np.uint64).reshape(shape)
        if isinstance(self._rng.bit_generator, _RAW_64):
            return self._rng.bit_generator.random_raw(shape)
        return self._rng.integers(0, 2**64, size=shape, dtype=np.uint64)


def _exact(value: Fraction):
    """An interval enclosing the rational ``value`` at the current precision."""
    return _iv().mpf(value.numerator) / value.denominator


def _floor_scaled(end: tuple, digits: int) -> int:
    """floor(x 2^digits) for a non-negative mpmath number x given as its raw (sign, man, exp, bc) tuple."""
    shift = end[2] + digits
    return end[1] << shift if shift >= 0 else end[1] >> -shift


def decide(probability, word: int, bits: RandomBits) -> bool:
    """Exactly whether V < p, for V uniform in [0, 1) whose first 64 binary digits are ``word``.

    ``probability()`` returns an interval enclosing p at this thread's interval context's (``_iv()``) current precision (see :func:`resolve`).
    """
    return resolve([probability], word, 64, bits)[0]


def resolve(probabilities, prefix: int, digits: int, bits: RandomBits) -> list[bool]:
    """Exactly whether V < p for each p, for one V uniform in [0, 1) whose first ``digits`` binary digits
    are ``prefix``.

    ``probabilities[i]()`` returns an interval enclosing p_i at this thread's interval context's (``_iv()``) current precision. Each round
    appends 64 random digits to V and encloses every open p_i 64 digits beyond them, until V's digits lie
    entirely below or above each enclosure (each round closes a trial with probability about 1 - 2^-64).
    """
    below: dict[int, bool] = {}
    while len(below) < len(probabilities):
        prefix = (prefix << 64) | int(bits(1)[0])
        digits += 64
        _iv().prec = digits + 64
        for i, probability in enumerate(probabilities):
            if i not in below:
                low, high = (_floor_scaled(end, digits) for end in probability()._mpi_)
                if prefix < low or prefix > high:
                    below[i] = prefix < low
    return [below[i] for i in range(len(probabilities))]


def trials(words: np.ndarray, low: np.ndarray, high: np.ndarray, enclosure, bits: RandomBits) -> np.ndarray:
    """Trials V < p, one per word (V's first 64 digits), given low <= p 2^64 <= high + 1.

    Words below ``low`` succeed, above ``high`` fail; each rare word in between is decided by
    :func:`decide`, with ``enclosure(index)`` enclosing that trial's p.
    """
    success = words < low
    unsure = (words >= low) & (words <= high)
    if unsure.any():
        for index in zip(*np.nonzero(unsure)):
            success[index] = decide(functools.partial(enclosure, index), int(words[index]), bits)
    return success


@functools.lru_cache(maxsize=256)
def _geometric_table(rate: Fraction):
    """The fixed digits m of a geometric with ratio exp(-rate), their values 2^i, and the bounds of
    its m + 1 trials (:func:`_digit_enclosure`)."""
    m = (math.ceil(_TAIL / rate) - 1).bit_length()
    if m > _MAX_DIGITS:
        raise ValueError(
            f"the noise scale {float(1 / rate):.4g} is too large: draws could leave the int64 range "
            f"(the largest scale is {2**_MAX_DIGITS / _TAIL:.4g})"
        )
    _iv().prec = 128
    bounds = np.array(
        [[_floor_scaled(end, 64) for end in _digit_enclosure(rate, m, (i,))._mpi_] for i in range(m + 1)],
        dtype=np.uint64,
    )
    return m, 1 << np.arange(m, dtype=np.int64), bounds[:, 0], bounds[:, 1]


def _digit_enclosure(rate: Fraction, m: int, index: tuple):
    """The probability of trial i = index[-1] of a geometric: digit i is 1 (1 / (1 + exp(2^i rate)))
    for i < m, G >= 2^m (exp(-2^m rate)) for i = m."""
    i = index[-1]
    if i == m:
        return _iv().exp(-_exact(rate * 2**m))
    return 1 / (1 + _iv().exp(_exact(rate * 2**i)))


def geometric(rate: Fraction, count: int, bits: RandomBits) -> np.ndarray:
    """``count`` draws with P(G = g) = (1 - q) q^g, q = exp(-rate), from independent binary digits."""
    m, powers, low, high = _geometric_table(rate)
    digits = trials(bits(count, m + 1), low, high, functools.partial(_digit_enclosure, rate, m), bits)
    values = digits[:, :m] @ powers
    beyond = digits[:, m]
    if beyond.any():  # G >= 2^m, probability below 2^-64: G >> m is 1 + a geometric with ratio q^(2^m)
        upper = 1 + geometric(rate * 2**m, int(beyond.sum()), bits)
        if upper.max() >= 2 ** (_MAX_DIGITS - m):
            raise OverflowError("a noise draw left the int64 range (an event of probability below 2^-64)")
        values[beyond] += upper << m
    return values


@dataclass(frozen=True)
class _LaplaceTables:
    """The groups of the discrete Laplace sampler for q = exp(-rate) (:func:`_laplace_tables`)."""

    rate: Fraction
    width: int  # w: binary digits of G per bounded group
    bounded: int  # k: bounded groups after group 0
    low: np.ndarray  # (k + 2, T) uint64: low <= p 2^digits <= high + 1 per threshold
    high: np.ndarray
    lengths: np.ndarray  # thresholds per group
    shifts: np.ndarray  # the digit of G (plus one, for group 0's J) where each group's count lands

    @property
    def tail_shift(self) -> int:
        return int(self.shifts[-1])


def _table_threshold(rate: Fraction, width: int, bounded: int, group: int, j: int):
    """Threshold j of ``group`` as an interval: the count of the group is the number of thresholds V reaches.

    Group 0: P(K = 0) = (1 - q) / (1 + q) for j = 0, then P(K = 0) + P(K != 0) P(L <= j - 1) for the low
    digits L of G (a geometric with ratio q truncated to 2^w values); groups 1 .. k: P(L_g <= j) for G's
    next w digits L_g (ratio Q = q^(2^(w g)), truncated); the last group: P(H <= j) = 1 - Q^(j + 1) for the
    rest H = G >> (w (k + 1)), an untruncated geometric with ratio Q = q^(2^(w (k + 1))).
    """
    if group == bounded + 1:
        return 1 - _iv().exp(-_exact(rate * 2 ** (width * group) * (j + 1)))
    start = width * group
    values = 2**width

    def truncated(c):  # P(L_g <= c) for the truncated geometric with ratio q^(2^start) on 0 .. 2^w - 1
        return (1 - _iv().exp(-_exact(rate * 2**start * (c + 1)))) / (1 - _iv().exp(-_exact(rate * 2**start * values)))

    if group > 0:
        return truncated(j)
    q = _iv().exp(-_exact(rate))
    zero = (1 - q) / (1 + q)
    return zero if j == 0 else zero + (1 - zero) * truncated(j - 1)


@functools.lru_cache(maxsize=256)
def _laplace_tables(rate: Fraction) -> _LaplaceTables:
    """The discrete Laplace sampler's tables for q = exp(-rate): the cheapest grouping of G's binary digits.

    K = 0 with probability (1 - q) / (1 + q), else +-(1 + G) with G geometric (ratio q). G's binary digits
    are independent, so groups of them are: group 0 (K = 0 or G's first w digits), k groups of w digits,
    and the rest, each drawn by one word compared with its cumulative table (2^w, 2^w - 1 and T thresholds,
    T with Q^T <= e^-_TAIL). The grouping minimizes _WORD_COST words plus thresholds per value, with at most
    _MAX_TABLE thresholds.
    """
    m = _geometric_table(rate)[0]  # refuses a scale whose draws could leave int64
    best = None
    for width in range(_MAX_WIDTH + 1):
        for bounded in range(m + 1 if width else 1):
            tail = math.ceil(_TAIL / (rate * 2 ** (width * (bounded + 1))))
            thresholds = 2**width + bounded * (2**width - 1) + tail
            cost = _WORD_COST * (bounded + 2) + thresholds
            if thresholds <= _MAX_TABLE and (best is None or cost < best[0]):
                best = (cost, width, bounded, tail)
            if tail == 1:
                break
    _, width, bounded, tail = best
    lengths = np.array([2**width] + [2**width - 1] * bounded + [tail], dtype=np.int64)
    low = np.zeros((bounded + 2, lengths.max()), dtype=np.uint64)
    high = np.zeros_like(low)
    _iv().prec = 128
    for group, length in enumerate(lengths):
        digits = 63 if group == 0 else 64  # group 0's word keeps one bit for the sign
        for j in range(length):
            ends = _table_threshold(rate, width, bounded, group, j)._mpi_
            low[group, j], high[group, j] = (min(_floor_scaled(end, digits), 2**digits - 1) for end in ends)
    shifts = np.array([0] + [width * g for g in range(1, bounded + 2)], dtype=np.int64)
    return _LaplaceTables(rate, width, bounded, low, high, lengths, shifts)


def _exact_laplace_value(tables: _LaplaceTables, words: np.ndarray, bits: RandomBits) -> int:
    """The value of one flagged value's words (one per group): undecided trials resolved exactly, the tail drawn."""
    counts = []
    for group, word in enumerate(int(w) for w in words):
        prefix, digits = (word >> 1, 63) if group == 0 else (word, 64)
        length = int(tables.lengths[group])
        low, high = tables.low[group, :length].astype(object), tables.high[group, :length].astype(object)
        count = int(np.sum(high < prefix))
        unsure = np.flatnonzero((low <= prefix) & (prefix <= high))
        thresholds = [
            functools.partial(_table_threshold, tables.rate, tables.width, tables.bounded, group, int(j))
            for j in unsure
        ]
        count += sum(not below for below in resolve(thresholds, prefix, digits, bits))
        counts.append(count)
    magnitude = sum(count << int(shift) for count, shift in zip(counts, tables.shifts))
    if counts[-1] == tables.lengths[-1]:  # H >= T (probability below e^-45): H - T is a geometric with ratio Q
        magnitude += int(geometric(tables.rate * 2**tables.tail_shift, 1, bits)[0]) << tables.tail_shift
        if magnitude >= 2**_MAX_DIGITS:
            raise OverflowError("a noise draw left the int64 range (an event of probability below 2^-64)")
    sign = 1 - 2 * (int(words[0]) & 1)
    return sign * magnitude if counts[0] else 0


def discrete_laplace(scale: Fraction, count: int, bits: RandomBits, out: np.ndarray | None = None) -> np.ndarray:
    """``count`` draws with P(K = k) proportional to exp(-|k| / scale), by the tables of :func:`_laplace_tables`
    (into ``out``, an int64 array of ``count`` values, when given).

    Each value takes one word per group, compared (compiled) with every threshold of its group; a value
    with an undecided trial or in the tail (probability below 2^-56 per value) is redone exactly.
    """
    tables = _laplace_tables(1 / scale)
    words = bits(count, len(tables.lengths))  # row i: value i's word per group, so chunks do not matter
    values = np.empty(count, dtype=np.int64) if out is None else out
    flagged = np.empty(count, dtype=np.bool_)
    table_laplace(words, tables.low, tables.high, tables.lengths, tables.shifts, values, flagged)
    for i in np.flatnonzero(flagged):
        values[i] = _exact_laplace_value(tables, words[i], bits)
    return values


@functools.lru_cache(maxsize=256)
def _gaussian_plan(sigma_squared: Fraction):
    """t = floor(sigma) + 1, the centre sigma^2 / t (exact and in float64), h = 1 / (2 sigma^2) in
    float64, and the candidates per value: enough that all are rejected with probability at most
    0.1. The acceptance rate is (1 - q) / (1 + q) exp(-sigma^2 / (2 t^2)) Z with q = exp(-1 / t)
    and Z = sum_k exp(-k^2 / (2 sigma^2)) (approximate: it only sizes the batch): 0.44 to 0.77."""
    t = _floor_sqrt(sigma_squared) + 1
    sigma = math.sqrt(sigma_squared)
    if sigma < 100:
        k = np.arange(1, math.ceil(12 * sigma) + 2)
        z = 1 + 2 * np.exp(-(k**2) / (2 * sigma**2)).sum()
    else:
        z = math.sqrt(2 * math.pi) * sigma
    accept = math.tanh(1 / (2 * t)) * math.exp(-float(sigma_squared / (2 * t * t))) * z
    centre = sigma_squared / t
    batch = math.ceil(math.log(0.1) / math.log1p(-accept))
    return Fraction(t), centre, float(centre), float(1 / (2 * sigma_squared)), batch


def acceptance_bounds(candidates: np.ndarray, c: float, h: float):
    """uint64 arrays low <= a 2^64 <= high + 1, a = exp(-(|K| - centre)^2 h) per candidate, given c and h,
    the centre and h = 1 / (2 sigma^2) correctly rounded to float64.

    Float64 with a rigorous error bound (unit roundoff u = 2^-53 for each rounding, and numpy's
    exp within 2^-49 relative, i.e. 8 ulps): |d_float - d| <= D = 2u (k + c + |d|) for
    d = |K| - centre, and the exponent gamma = d^2 h is within E = 2^-50 gamma + 3 D (2 |d| + D) h
    of the computed one. Exponents are clipped to [0, 50] (exp(-50) 2^64 < 1), so every operation
    stays on normal numbers.
    """
    k = np.abs(candidates).astype(np.float64)
    d = np.abs(k - c)
    gamma = (d * h) * d
    slack = 2.0**-52 * (k + c + d)
    error = 2.0**-50 * gamma + 3 * slack * ((2 * d + slack) * h)
    largest = np.minimum((gamma + error) * (1 + 2.0**-51), 50.0)
    smallest = np.clip((gamma - error) * (1 - 2.0**-51), 0.0, 50.0)
    low = np.floor(np.exp(-largest) * ((1 - 2.0**-48) * 2.0**64)).astype(np.uint64)
    high = np.exp(-smallest) * ((1 + 2.0**-48) * 2.0**64)
    over = high >= 2.0**64
    return low, np.where(over, _U64_MAX, np.floor(np.where(over, 0.0, high)).astype(np.uint64))


def _acceptance_enclosure(candidates: np.ndarray, centre: Fraction, sigma_squared: Fraction, index: tuple):
    """The acceptance probability exp(-(|K| - centre)^2 / (2 sigma^2)) of candidate K = candidates[index]."""
    k = abs(int(candidates[index]))
    return _iv().exp(-((k - _exact(centre)) ** 2) / (2 * _exact(sigma_squared)))


def discrete_gaussian(
    sigma_squared: Fraction, count: int, bits: RandomBits, out: np.ndarray | None = None
) -> np.ndarray:
    """``count`` draws with P(K = k) proportional to exp(-k^2 / (2 sigma^2)) (CKS Algorithm 3, batched; into
    ``out``, an int64 array of ``count`` values, when given).

    Each pending value gets a fixed number of discrete Laplace candidates and acceptance trials;
    the first accepted candidate is selected with a cumulative sum, and values with none accepted
    are pending for the next round.
    """
    t, centre, c, h, batch = _gaussian_plan(sigma_squared)
    out = np.zeros(count, dtype=np.int64) if out is None else out
    pending = np.arange(count)
    while pending.size:
        candidates = discrete_laplace(t, pending.size * batch, bits).reshape(-1, batch)
        low, high = acceptance_bounds(candidates, c, h)
        enclosure = functools.partial(_acceptance_enclosure, candidates, centre, sigma_squared)
        accepted = trials(bits(*candidates.shape), low, high, enclosure, bits)
        first = accepted & (np.cumsum(accepted, axis=1) == 1)
        out[pending] = (candidates * first).sum(axis=1)
        pending = pending[~first.any(axis=1)]
    return out


def _floor_sqrt(value: Fraction) -> int:
    """floor(sqrt(value)) computed exactly for a non-negative Fraction."""
    root = math.isqrt(value.numerator // value.denominator)
    while Fraction(root + 1) ** 2 <= value:
        root += 1
    return root


def sample_array(draw, parameter: Fraction, shape, rng, secure: bool = False) -> np.ndarray:
    """An int64 array of the given shape of independent draws ``draw(parameter, count, bits, out)``, made
    in chunks of ``_CHUNK`` values written in place."""
    bits = RandomBits(rng, secure=secure)
    out = np.empty(math.prod(shape), dtype=np.int64)
    for start in range(0, out.size, _CHUNK):
        chunk = out[start : start + _CHUNK]
        draw(parameter, chunk.size, bits, chunk)
    return out.reshape(shape)


def sample_per_coordinate(draw, parameters: list[Fraction], rng, secure: bool = False) -> np.ndarray:
    """An int64 vector whose entry i is an independent draw ``draw(parameters[i], ...)``: one `sample_array`
    per distinct parameter, in the order of their first appearance."""
    out = np.empty(len(parameters), dtype=np.int64)
    for parameter in dict.fromkeys(parameters):
        where = np.array([value == parameter for value in parameters])
        out[where] = sample_array(draw, parameter, (int(where.sum()),), rng, secure)
    return out


# -- single trials and Bernoulli(exp(-gamma)), for the Wasserstein exponential mechanism -----------------
# ppdinfer.kernels.wem decides the trials of its Bernoulli(exp(-gamma)) acceptances in double precision
# with a margin; the rare one too close to call is finished here (mechanisms/wem.py), with the same
# exact trials V < p as the samplers above.


def trial(probability, bits: RandomBits, prefix: int = 0, digits: int = 0) -> bool:
    """Exactly whether V < p, for V uniform in [0, 1) whose first ``digits`` (at most 64) binary digits,
    already drawn, are ``prefix``; ``probability()`` encloses p as in :func:`decide`.

    The rest of V's first word is drawn and compared with a 128-bit enclosure of p 2^64; a word
    inside it is decided by :func:`decide`.
    """
    word = (prefix << (64 - digits)) | (int(bits(1)[0]) >> digits)
    _iv().prec = 128
    low, high = (_floor_scaled(end, 64) for end in probability()._mpi_)
    return word < low or (word <= high and decide(probability, word, bits))


def root_plus_linear(root_rate, q: int, linear_rate, s: int):
    """An interval enclosing gamma = root_rate sqrt(q) + linear_rate s, known to be >= 0, at the current
    precision; the rates (floats or Fractions) are converted exactly."""
    value = _exact(Fraction(root_rate)) * _iv().sqrt(q) + _exact(Fraction(linear_rate)) * s
    return value if value.a >= 0 else _iv().mpf([0, value.b])  # rounding may reach below 0 when gamma ~ 0


def _quotient(enclosure, divisor: int):
    """An interval enclosing the value that ``enclosure()`` encloses, divided by ``divisor``."""
    return enclosure() / divisor


def bernoulli_exp_minus(
    gamma, pieces: int, bits: RandomBits, *, counter: int = 1, left: int | None = None, prefix: int = 0, digits: int = 0
) -> bool:
    """Exactly Bernoulli(exp(-gamma)), 0 <= gamma <= ``pieces``, by Canonne, Kamath & Steinke (2020), Algorithm 1.

    gamma is cut into ``pieces`` pieces g = gamma / pieces <= 1; a piece passes when the count k of
    successive successes of the trials V < g / k, k = 1, 2, ..., stops at an odd k, and the result
    is whether every piece passes. ``gamma()`` encloses gamma as in :func:`decide`. A run begun
    elsewhere resumes at counter k = ``counter`` with ``left`` pieces still to pass (all by default),
    the pending trial's V beginning with the ``digits`` binary digits ``prefix``.
    """
    left = pieces if left is None else left
    k = counter
    while True:
        if trial(functools.partial(_quotient, gamma, pieces * k), bits, prefix, digits):
            k += 1
        elif k % 2 == 0:
            return False
        else:
            left -= 1
            if left == 0:
                return True
            k = 1
        prefix = digits = 0
