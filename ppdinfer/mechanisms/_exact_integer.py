"""Exact samplers for the discrete Laplace and discrete Gaussian distributions.

These follow Canonne, Kamath & Steinke (2020), "The Discrete Gaussian for Differential
Privacy": every random decision is a Bernoulli trial with a rational success probability,
decided by comparing a uniform random integer with the numerator. No floating point number
touches the released value, so rounding cannot leak the confidential input.

Parameters arrive as floats; ``fractions.Fraction`` represents each float exactly, so the
distribution sampled is exactly the one whose pmf the mechanism reports.
"""

from __future__ import annotations

import math
import secrets
from fractions import Fraction

import numpy as np


class IntegerSource:
    """Uniform random integers in ``[0, n)`` for any positive Python int ``n``.

    Backed by a numpy Generator (reproducible) or, with ``secure=True``, by the operating
    system's cryptographically secure generator (``secrets``), which ignores any seed.
    """

    def __init__(self, rng: np.random.Generator | None = None, *, secure: bool = False):
        if not secure and rng is None:
            raise ValueError("rng is required unless secure=True")
        self._rng = rng
        self.secure = secure

    def randbelow(self, n: int) -> int:
        if self.secure:
            return secrets.randbelow(n)
        if n < 2**63:
            return int(self._rng.integers(n))
        bits = n.bit_length()
        while True:  # rejection from the next power of two: exact and expected < 2 rounds
            value = 0
            for _ in range(0, bits, 32):
                value = (value << 32) | int(self._rng.integers(2**32, dtype=np.uint64))
            value >>= (-bits) % 32
            if value < n:
                return value

    def bernoulli(self, p: Fraction) -> bool:
        """One trial with success probability ``p`` (a Fraction in [0, 1])."""
        return self.randbelow(p.denominator) < p.numerator


def bernoulli_exp_minus(gamma: Fraction, source: IntegerSource) -> bool:
    """One trial with success probability exp(-gamma), gamma >= 0 rational (CKS Algorithm 1)."""
    while gamma > 1:
        if not bernoulli_exp_minus(Fraction(1), source):
            return False
        gamma -= 1
    k = 1
    while source.bernoulli(gamma / k):
        k += 1
    return k % 2 == 1


def _geometric_exp_minus_one(source: IntegerSource) -> int:
    """Number of successes before the first failure of Bernoulli(exp(-1)) trials."""
    count = 0
    while bernoulli_exp_minus(Fraction(1), source):
        count += 1
    return count


def discrete_laplace(scale: Fraction, source: IntegerSource) -> int:
    """One draw with pmf proportional to exp(-|k| / scale) on the integers (CKS Algorithm 2)."""
    rate = 1 / scale  # = s / t in lowest terms
    s, t = rate.numerator, rate.denominator
    while True:
        u = source.randbelow(t)
        if not bernoulli_exp_minus(Fraction(u, t), source):
            continue
        magnitude = (u + t * _geometric_exp_minus_one(source)) // s
        negative = source.randbelow(2) == 1
        if negative and magnitude == 0:
            continue
        return -magnitude if negative else magnitude


def discrete_gaussian(sigma_squared: Fraction, source: IntegerSource) -> int:
    """One draw with pmf proportional to exp(-k^2 / (2 sigma^2)) (CKS Algorithm 3)."""
    t = Fraction(int(_floor_sqrt(sigma_squared)) + 1)
    while True:
        candidate = discrete_laplace(t, source)
        gamma = (abs(candidate) - sigma_squared / t) ** 2 / (2 * sigma_squared)
        if bernoulli_exp_minus(gamma, source):
            return candidate


def _floor_sqrt(value: Fraction) -> int:
    """floor(sqrt(value)) computed exactly for a non-negative Fraction."""
    root = math.isqrt(value.numerator // value.denominator)
    while Fraction(root + 1) ** 2 <= value:
        root += 1
    return root


def sample_array(draw_one, parameter: Fraction, shape, rng, secure: bool) -> np.ndarray:
    """An int64 array of independent draws ``draw_one(parameter, source)`` of the given shape."""
    source = IntegerSource(rng, secure=secure)
    size = int(np.prod(shape, dtype=np.int64))
    values = [draw_one(parameter, source) for _ in range(size)]
    return np.asarray(values, dtype=np.int64).reshape(shape)
