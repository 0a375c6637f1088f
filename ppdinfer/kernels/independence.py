"""A block of the congenial Metropolized independence sampler: proposals, weights and accept steps in one pass."""

from __future__ import annotations

import math

import numpy as np
from numba import njit

_TO_UNIT = 2.0**-53


@njit(cache=True, nogil=True)
def _unit(word):
    """A uniform in (0, 1) from a 64-bit word: (its top 53 bits + 1/2) 2^-53."""
    return ((word >> np.uint64(11)) + 0.5) * _TO_UNIT


@njit(cache=True, nogil=True)
def independence_block(
    x, free, solved, solve, a_free, a, lower, upper, rows, b, noise, proposal, alias, words, state, chain, kept
):
    """Run len(words) iterations of the MIS; write kept states into ``kept``; update ``state`` and ``chain``.

    Iteration t draws the steps of the free cells from words[t, :-1], a double geometric with ratio
    exp(-proposal): from Walker's alias table ``alias`` = (cut, keep, other) of 2^bits buckets (bucket
    the word's top bits, kept when its next 53 bits as a fraction are below the cut), or, when the table
    is empty, by inversion (one logarithm each). It solves the other cells, s[solved] =
    solve (a - a_free s[free]), and gives s the weight log w = -rate sum |s - x|^power + proposal sum |step|
    (-inf unless lower <= s <= upper and rows s >= b); it moves to s when
    log(unit(words[t, -1])) <= log w - log w(state). ``noise`` = (rate, power); ``chain`` holds
    (iteration, weight, accepted moves, burn_in, thin, next kept index) as float64 and is updated.
    """
    rate, power = noise[0], noise[1]
    ratio = math.exp(-proposal)
    middle = 1.0 / (1.0 + ratio)  # P(step <= 0)
    log_scale = math.log1p(ratio)
    n_free, n_solved, n_rows = free.size, solved.size, b.size
    cut, keep, other = alias
    bits = np.uint64(1)  # cut.size = 2^bits when the table is used
    while (1 << bits) < cut.size:
        bits += np.uint64(1)
    candidate = np.empty(x.size, dtype=np.int64)
    rhs = np.empty(a.size, dtype=np.int64)
    iteration, weight, accepted = np.int64(chain[0]), chain[1], np.int64(chain[2])
    burn_in, thin, index = np.int64(chain[3]), np.int64(chain[4]), np.int64(chain[5])
    for t in range(words.shape[0]):
        steps = 0.0
        for k in range(n_free):
            word = words[t, k]
            if cut.size:
                bucket = word >> (np.uint64(64) - bits)
                step = keep[bucket] if ((word << bits) >> np.uint64(11)) * _TO_UNIT < cut[bucket] else other[bucket]
            else:
                v = _unit(word)
                low = v < middle  # step <= 0: -floor(z) with z from v; else ceil(z) - 1 with z from 1 - v
                z = (math.log(v if low else 1.0 - v) + log_scale) / -proposal
                step = (
                    np.int64(math.ceil(z)) - 1 - np.int64(low) * (np.int64(math.ceil(z)) - 1 + np.int64(math.floor(z)))
                )
            candidate[free[k]] = x[free[k]] + step
            steps += abs(step)
        for r in range(a.size):
            total = a[r]
            for k in range(n_free):
                total -= a_free[r, k] * candidate[free[k]]
            rhs[r] = total
        for k in range(n_solved):
            value = np.int64(0)
            for r in range(a.size):
                value += solve[k, r] * rhs[r]
            candidate[solved[k]] = value
        feasible = True
        for c in range(x.size):
            feasible &= (lower[c] <= candidate[c]) & (candidate[c] <= upper[c])
        for r in range(n_rows):
            total = np.int64(0)
            for c in range(x.size):
                total += rows[r, c] * candidate[c]
            feasible &= total >= b[r]
        distance = 0.0
        for k in range(x.size):
            gap = abs(candidate[k] - x[k])
            distance += gap if power == 1 else gap * gap
        log_w = proposal * steps - rate * distance if feasible else -np.inf
        if math.log(_unit(words[t, n_free])) <= log_w - weight:
            state[:] = candidate
            weight = log_w
            accepted += 1
        if iteration >= burn_in and (iteration - burn_in + 1) % thin == 0 and index < kept.shape[0]:
            kept[index] = state
            index += 1
        iteration += 1
    chain[0], chain[1], chain[2], chain[5] = iteration, weight, accepted, index
