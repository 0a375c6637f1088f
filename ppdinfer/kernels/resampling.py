"""Resampling kernels: the index of each sorted point in a cumulative sum (one merge pass), the running
sums of weights, and one block's share of a stratified resample in a single call (so that threads
sharing the work do not pass the GIL back and forth between many short NumPy calls)."""

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


@njit(cache=True, nogil=True)
def running_sums(weights):
    """The cumulative sums of ``weights`` (in order, as ``np.cumsum``, so the same weights give
    the same bits) and the sum of their squares.

    Examples
    --------
    >>> import numpy as np
    >>> running_sums(np.array([1.0, 3.0, 2.0]))
    (array([1., 4., 6.]), 14.0)
    """
    cumulative = np.empty(weights.shape[0])
    total = 0.0
    square = 0.0
    for i in range(weights.shape[0]):
        total += weights[i]
        cumulative[i] = total
        square += weights[i] * weights[i]
    return cumulative, square


@njit(cache=True, nogil=True)
def stratum_search(cumulative, uniforms, first_stratum, draws, total, start, end, scale):
    """The strata of a stratified resample that fall on one stretch of the cumulative weight, and
    their proposals. Stratum k = ``first_stratum`` + i has the point p_k = (k + uniforms[i]) /
    ``draws`` * ``total``; the stretch [``start``, ``end``) holds the proposals whose cumulative
    weights, divided by ``scale``, are ``cumulative``. Returns the first and one past the last
    of ``uniforms``' strata whose point lies in the stretch, and for each of them the first
    position j with cumulative[j] > (p_k - start) / scale (as :func:`sorted_search`).

    Examples
    --------
    >>> import numpy as np
    >>> stratum_search(np.array([1.0, 2.0, 4.0]), np.array([0.5, 0.5, 0.5, 0.5]), 0, 4, 4.0, 0.0, 4.0, 1.0)
    (0, 4, array([0, 1, 2, 2]))
    """
    n = uniforms.shape[0]
    first = n
    stop = n
    for i in range(n):
        point = (first_stratum + i + uniforms[i]) / draws * total
        if first == n and point >= start:
            first = i
        if point >= end:
            stop = i
            break
    if stop < first:
        stop = first
    targets = np.empty(stop - first)
    for i in range(first, stop):
        targets[i - first] = ((first_stratum + i + uniforms[i]) / draws * total - start) / scale
    return first, stop, sorted_search(cumulative, targets)


@njit(cache=True, nogil=True)
def take_rows(source, index, target, start):
    """target[start + i] = source[index[i]] for each i, for 2-D arrays, without a temporary.

    Examples
    --------
    >>> import numpy as np
    >>> target = np.zeros((4, 2), dtype=np.int64)
    >>> take_rows(np.array([[1, 2], [3, 4], [5, 6]]), np.array([2, 0]), target, 1)
    >>> target.tolist()
    [[0, 0], [5, 6], [1, 2], [0, 0]]
    """
    for i in range(index.shape[0]):
        row = index[i]
        for j in range(source.shape[1]):
            target[start + i, j] = source[row, j]


@njit(cache=True, nogil=True)
def resample_block(
    relative, log_w, log_total, uniforms, first_stratum, draws, total, start, end, scale, theta, x, theta_out, x_out
):
    """One block's part of a stratified resample, in one call: the strata whose points fall on the
    block's stretch [``start``, ``end``) of the cumulative weight (as :func:`stratum_search`, from
    the block's weights ``relative`` to its largest, divided by ``scale``), their proposals' rows
    of ``theta`` and ``x`` copied to the strata's rows of ``theta_out`` and ``x_out``, and the
    block's ``log_w`` normalized in place (``log_total`` subtracted). Returns the first stratum
    and their number.

    Examples
    --------
    >>> import numpy as np
    >>> relative, theta, x = np.array([0.5, 0.5, 1.0]), np.array([[0.1], [0.2], [0.3]]), np.array([[1], [2], [3]])
    >>> log_w, theta_out, x_out = np.log(relative), np.zeros((4, 1)), np.zeros((4, 1), dtype=np.int64)
    >>> resample_block(relative, log_w, np.log(2.0), np.full(4, 0.5), 0, 4, 2.0, 0.0, 2.0, 1.0, theta, x, theta_out, x_out)
    (0, 4)
    >>> x_out.ravel().tolist(), np.exp(log_w).tolist()
    ([1, 2, 3, 3], [0.25, 0.25, 0.5])
    """
    cumulative, _ = running_sums(relative)
    for i in range(log_w.shape[0]):
        log_w[i] -= log_total
    first, stop, index = stratum_search(cumulative, uniforms, first_stratum, draws, total, start, end, scale)
    take_rows(theta, index, theta_out, first_stratum + first)
    take_rows(x, index, x_out, first_stratum + first)
    return first_stratum + first, stop - first


@njit(cache=True, nogil=True)
def draw_columns(log_weights, u):
    """For each column j of ``log_weights`` (values x columns), the row drawn with probability proportional to
    exp(log_weights[:, j]): the first row whose running sum of exp(log_weights - the column's max) exceeds
    u[j] times the column's total (u uniform on [0, 1)); rows of weight 0 are never drawn. Row by row, so that
    every pass reads memory in order.

    Examples
    --------
    >>> import numpy as np
    >>> draw_columns(np.log(np.array([[1.0, 0.0], [1.0, 1.0], [2.0, 0.0]])), np.array([0.3, 0.9]))
    array([1, 1])
    """
    rows, columns = log_weights.shape
    top = log_weights[0].copy()
    for i in range(1, rows):
        for j in range(columns):
            top[j] = max(top[j], log_weights[i, j])
    weights = np.empty((rows, columns))
    total = np.zeros(columns)
    for i in range(rows):
        for j in range(columns):
            weights[i, j] = np.exp(log_weights[i, j] - top[j])
            total[j] += weights[i, j]
    threshold = u * total
    out = np.full(columns, -1, dtype=np.int64)
    last = np.zeros(columns, dtype=np.int64)  # the last row of positive weight so far: where rounding ends
    running = np.zeros(columns)
    for i in range(rows):
        for j in range(columns):
            if out[j] < 0 and weights[i, j] > 0:
                last[j] = i
                running[j] += weights[i, j]
                if running[j] > threshold[j]:
                    out[j] = i
    for j in range(columns):
        if out[j] < 0:
            out[j] = last[j]
    return out
