"""Inner loop of the record-level data augmentation for regression from released statistics (d covariates).

The latent records (x_r, y_r) are redrawn one at a time from their model given theta (the prior proposal of
Ju, Awan, Gong & Rao 2022) and accepted with the ratio of the release's Laplace likelihood: the released
statistics s = T + Laplace(scale), T = sum_r g(clip(x_r), clip(y_r)), g the products w_j w_k of
w = (1, x_1..x_d, y) listed in ``pairs`` (those of ``ppdinfer.models.linear_regression``). The prior terms
cancel against the proposal, so the acceptance reads only the statistics.
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def _g(x, y, lower, upper, pairs, w, out):
    """g of one record into ``out``, through the work vector w = (1, clip(x), clip(y))."""
    d = x.size
    w[0] = 1.0
    for j in range(d):
        w[j + 1] = min(max(x[j], lower[j]), upper[j])
    w[d + 1] = min(max(y, lower[d]), upper[d])
    for k in range(pairs.shape[0]):
        out[k] = w[pairs[k, 0]] * w[pairs[k, 1]]


@njit(cache=True, nogil=True)
def record_pass(x, y, t, released, scale, lower, upper, pairs, beta, sigma, mu, chol, seed):
    """One pass over the records in order; updates x (n, d), y (n,) and their statistics t in place; returns the
    number accepted.

    ``lower``, ``upper``: the box of (x_1..x_d, y); ``beta`` = (intercept, slopes); x ~ N(mu, chol chol').
    """
    np.random.seed(seed)
    n, d = x.shape
    k_stats = t.size
    old = np.empty(k_stats)
    new = np.empty(k_stats)
    trial = np.empty(k_stats)
    w = np.empty(d + 2)
    z = np.empty(d)
    xn = np.empty(d)
    current = 0.0
    for k in range(k_stats):
        current += abs(released[k] - t[k]) / scale[k]
    accepted = 0
    for r in range(n):
        for j in range(d):
            z[j] = np.random.standard_normal()
        yn = beta[0] + sigma * np.random.standard_normal()
        for j in range(d):
            value = mu[j]
            for i in range(j + 1):
                value += chol[j, i] * z[i]
            xn[j] = value
            yn += beta[j + 1] * value
        _g(x[r], y[r], lower, upper, pairs, w, old)
        _g(xn, yn, lower, upper, pairs, w, new)
        proposed = 0.0
        for k in range(k_stats):
            trial[k] = t[k] + new[k] - old[k]
            proposed += abs(released[k] - trial[k]) / scale[k]
        if np.log(np.random.random()) < current - proposed:
            for j in range(d):
                x[r, j] = xn[j]
            y[r] = yn
            for k in range(k_stats):
                t[k] = trial[k]
            current = proposed
            accepted += 1
    return accepted
