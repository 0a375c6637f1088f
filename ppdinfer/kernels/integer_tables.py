"""Inner loops of the exact integer samplers and of the congenial rejection release.

``table_laplace`` turns random words into discrete Laplace values by fixed threshold tables (the
same comparisons whatever the value); ``conforming`` tests the invariants A y = a, B y >= b, with the
inequalities on one cell as bounds.
"""

from __future__ import annotations

import numpy as np
from numba import njit

#: Values per tile of ``table_laplace``: its counters stay in the first-level cache, the comparisons vectorize.
_TILE = 256


@njit(cache=True, nogil=True)
def table_laplace(words, low, high, lengths, shifts, out, flagged):
    """Discrete Laplace values from words (n, G), one word per value and group of the tables ``low``, ``high``.

    Group g's count is the number of its thresholds j < lengths[g] with U > high[g, j], where
    U = word >> 1 for group 0 (whose lowest bit is the sign) and U = word otherwise. A word with
    low[g, j] <= U <= high[g, j] for some threshold (its trial is undecided), or a last group at its
    table's end (the tail), sets ``flagged``: the caller redoes that value exactly. Group 0's count J
    is 0 for K = 0, else 1 + the low digits of G = |K| - 1; group g >= 1 adds its count << shifts[g].
    Every word goes through every comparison of its group (in tiles of values, the same array
    operations whatever the values).
    """
    n, groups = words.shape
    u = np.zeros(_TILE, dtype=np.uint64)
    sign = np.zeros(_TILE, dtype=np.int64)
    # Per value: (thresholds with U > high) + 2^32 (thresholds with U >= low); the two differ when undecided.
    counts = np.zeros(_TILE, dtype=np.int64)
    above = np.zeros(_TILE, dtype=np.int64)
    first = np.zeros(_TILE, dtype=np.int64)
    magnitude = np.zeros(_TILE, dtype=np.int64)
    unsure = np.zeros(_TILE, dtype=np.int64)
    for start in range(0, n, _TILE):
        size = min(_TILE, n - start)
        for v in range(size):
            u[v] = words[start + v, 0] >> np.uint64(1)
            sign[v] = 1 - 2 * np.int64(words[start + v, 0] & np.uint64(1))
            magnitude[v] = 0
            unsure[v] = 0
        for g in range(groups):
            if g > 0:
                for v in range(size):
                    u[v] = words[start + v, g]
            counts[:size] = 0
            for j in range(lengths[g]):
                top, bottom = high[g, j], low[g, j]
                for v in range(size):
                    counts[v] += np.int64(u[v] > top) + (np.int64(u[v] >= bottom) << 32)
            for v in range(size):
                above[v] = counts[v] & 0xFFFFFFFF
                unsure[v] |= (counts[v] >> 32) != above[v]
                magnitude[v] += above[v] << shifts[g]
            if g == 0:
                first[:size] = above[:size]
        last = lengths[groups - 1]
        for v in range(size):
            out[start + v] = (first[v] != 0) * magnitude[v] * sign[v]
            flagged[start + v] = (unsure[v] | (above[v] == last)) != 0
    return out


@njit(cache=True, nogil=True)
def conforming(tables, offset, lower, upper, rows, targets, n_equalities, out):
    """Whether each y = offset + tables[i] (tables (n, d)) has lower <= y <= upper cellwise, rows[r] y ==
    targets[r] for r < n_equalities and rows[r] y >= targets[r] after; every test of every table is evaluated
    (no early exit). Returns ``out``; ``tables`` becomes y."""
    n, d = tables.shape
    for i in range(n):
        inside = True
        for c in range(d):
            y = tables[i, c] + offset[c]
            tables[i, c] = y
            inside &= (lower[c] <= y) & (y <= upper[c])
        for r in range(targets.size):
            total = np.int64(0)
            for c in range(d):
                total += rows[r, c] * tables[i, c]
            inside &= total == targets[r] if r < n_equalities else total >= targets[r]
        out[i] = inside
    return out
