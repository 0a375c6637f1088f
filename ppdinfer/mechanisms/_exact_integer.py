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
over the digits of g and prod_i (1 + q^(2^i)) = 1 / (1 - q). A geometric is therefore m
digit trials plus one trial for "G >= 2^m" (probability q^(2^m)), with m the smallest
integer such that 2^m rate >= 45 (so q^(2^m) <= e^-45 < 2^-64), and each trial's bounds
lo, hi come from a 128-bit enclosure computed once per rate. A discrete Laplace draw,
P(K = k) proportional to q^|k|, is G1 - G2 for two independent geometrics: 2 (m + 1) words
compared with fixed thresholds, the same array operations whatever the value. The discrete
Gaussian is CKS Algorithm 3 (discrete Laplace candidates with t = floor(sigma) + 1, each
accepted with probability exp(-(|K| - sigma^2 / t)^2 / (2 sigma^2))) run in batches of a
fixed number of candidates per value; the acceptance bounds are float64 values with a
rigorous error bound, and the first accepted candidate of each value is selected with array
arithmetic. A value with no accepted candidate gets another batch: in rejection sampling the
accepted value is independent of the number of rejections, so the number of rounds carries
no information about the noise.

Residual leaks: value-dependent extra work happens only (a) when G >= 2^m (probability below
2^-64 per geometric), (b) when a word falls between lo and hi (at most 2^-63 per digit trial, so
below 2^-56 per discrete Laplace value; below 2^-45 per Gaussian acceptance trial, the width of
its float64 enclosure), and (c) in numpy's elementwise arithmetic, which is branch-free but not
guaranteed constant-time.
"""

from __future__ import annotations

import functools
import math
import secrets
from fractions import Fraction

import numpy as np
from mpmath.ctx_iv import MPIntervalContext

#: The fixed digits m of a geometric draw: the smallest m with 2^m rate >= _TAIL, so that the
#: rare path (G >= 2^m) has probability exp(-2^m rate) <= e^-45 < 2^-64.
_TAIL = 45
#: At most 62 fixed digits: |noise| < 2^62 keeps a release of a count up to 2^53 inside int64.
_MAX_DIGITS = 62
#: Values sampled per vectorized chunk (bounds the memory; the work per value does not change).
_CHUNK = 4096
_U64_MAX = np.uint64(2**64 - 1)
#: Bit generators whose raw output is one uniform 64-bit word (the words Generator.integers would give).
_RAW_64 = (np.random.PCG64, np.random.PCG64DXSM, np.random.SFC64, np.random.Philox)
#: A private interval context, so that its precision does not disturb mpmath.iv.
_IV = MPIntervalContext()


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
    return _IV.mpf(value.numerator) / value.denominator


def _floor_scaled(end: tuple, digits: int) -> int:
    """floor(x 2^digits) for a non-negative mpmath number x given as its raw (sign, man, exp, bc) tuple."""
    shift = end[2] + digits
    return end[1] << shift if shift >= 0 else end[1] >> -shift


def decide(probability, word: int, bits: RandomBits) -> bool:
    """Exactly whether V < p, for V uniform in [0, 1) whose first 64 binary digits are ``word``.

    ``probability()`` returns an interval enclosing p at ``_IV``'s current precision. Each round
    appends 64 random digits to V and encloses p 64 digits beyond them, until V's digits lie
    entirely below or above the enclosure (each round ends the loop with probability about 1 - 2^-64).
    """
    prefix, digits = word, 64
    while True:
        prefix = (prefix << 64) | int(bits(1)[0])
        digits += 64
        _IV.prec = digits + 64
        low, high = (_floor_scaled(end, digits) for end in probability()._mpi_)
        if prefix < low:
            return True
        if prefix > high:
            return False


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
    _IV.prec = 128
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
        return _IV.exp(-_exact(rate * 2**m))
    return 1 / (1 + _IV.exp(_exact(rate * 2**i)))


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


def discrete_laplace(scale: Fraction, count: int, bits: RandomBits) -> np.ndarray:
    """``count`` draws with P(K = k) proportional to exp(-|k| / scale): differences of two geometrics."""
    pairs = geometric(1 / scale, 2 * count, bits).reshape(count, 2)
    return pairs[:, 0] - pairs[:, 1]


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
    return _IV.exp(-((k - _exact(centre)) ** 2) / (2 * _exact(sigma_squared)))


def discrete_gaussian(sigma_squared: Fraction, count: int, bits: RandomBits) -> np.ndarray:
    """``count`` draws with P(K = k) proportional to exp(-k^2 / (2 sigma^2)) (CKS Algorithm 3, batched).

    Each pending value gets a fixed number of discrete Laplace candidates and acceptance trials;
    the first accepted candidate is selected with a cumulative sum, and values with none accepted
    are pending for the next round.
    """
    t, centre, c, h, batch = _gaussian_plan(sigma_squared)
    out = np.zeros(count, dtype=np.int64)
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
    """An int64 array of the given shape of independent draws ``draw(parameter, count, bits)``."""
    bits = RandomBits(rng, secure=secure)
    size = math.prod(shape)
    chunks = [draw(parameter, min(_CHUNK, size - start), bits) for start in range(0, size, _CHUNK)]
    return np.concatenate(chunks or [np.zeros(0, dtype=np.int64)]).reshape(shape)
