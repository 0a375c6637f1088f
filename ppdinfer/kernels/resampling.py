"""Resampling kernels: the index of each sorted point in a cumulative sum, by one merge pass."""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def sorted_search(cumulative, points):
    """For ascending ``points``, the first index j with ``cumulative[j] > point`` (as
    ``np.searchsorted(cumulative, points, side="right")``), capped at the first index where
    ``cumulative`` reaches its last value (the last positive weight: a point that rounding puts
    at or past the end never lands on a trailing zero weight); O(n + m).

    Examples
    --------
    >>> import numpy as np
    >>> sorted_search(np.array([0.2, 0.5, 1.0, 1.0]), np.array([0.1, 0.2, 0.7, 1.0]))
    array([0, 1, 2, 2])
    """
    out = np.empty(points.shape[0], dtype=np.int64)
    last = cumulative.shape[0] - 1
    while last > 0 and cumulative[last - 1] == cumulative[last]:
        last -= 1
    j = 0
    for i in range(points.shape[0]):
        while j < last and cumulative[j] <= points[i]:
            j += 1
        out[i] = j
    return out
