"""Kernels for additive-noise mechanisms and the rejection sampler's acceptance test.

Every additive mechanism in the package (Laplace, discrete Laplace, Gaussian, discrete
Gaussian) has a log density of the form

    log pi(y | x) = sum_k [ log_norm - rate * |y_k - x_k| ** power ],   power in {1, 2},

so one kernel serves all of them.
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def additive_noise_loglik(y, x, log_norm, rate, power):
    """Log density of release ``y`` (shape (d,)) under each row of ``x`` (shape (B, d))."""
    n_rows, dim = x.shape
    out = np.empty(n_rows)
    constant = dim * log_norm
    for i in range(n_rows):
        acc = 0.0
        for k in range(dim):
            diff = abs(y[k] - x[i, k])
            acc += diff if power == 1 else diff * diff
        out[i] = constant - rate * acc
    return out


@njit(cache=True, nogil=True)
def select_accepted(loglik, uniforms, log_bound):
    """Indices i with ``uniforms[i] <= exp(loglik[i] - log_bound)`` (the corrected Algorithm 1 test)."""
    keep = np.empty(loglik.shape[0], dtype=np.int64)
    n_keep = 0
    for i in range(loglik.shape[0]):
        ratio = loglik[i] - log_bound
        if ratio > 1e-12:
            raise ValueError("log likelihood exceeds the mechanism's bound M")
        if uniforms[i] <= np.exp(ratio):
            keep[n_keep] = i
            n_keep += 1
    return keep[:n_keep]
