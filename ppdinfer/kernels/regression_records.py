"""Inner loop of the record-level data augmentation for regression from released statistics (d = 1).

The latent records (x_r, y_r) are redrawn one at a time from their model given theta (the prior proposal of
Ju, Awan, Gong & Rao 2022) and accepted with the ratio of the release's Laplace likelihood: the released
statistics s = T + Laplace(scale), T = sum_r g(clip(x_r), clip(y_r)), g = (x, y, x^2, x y, y^2) for the linear
model and its first four coordinates for the logistic one (y binary: y^2 = y). The prior terms cancel against
the proposal, so the acceptance reads only the statistics.
"""

from __future__ import annotations

import numpy as np
from numba import njit

#: y | x ~ N(b0 + b1 x, sigma^2)
NORMAL = 0
#: y | x ~ Bernoulli(1 / (1 + exp(-(b0 + b1 x))))
LOGISTIC = 1


@njit(cache=True, nogil=True)
def _g(x, y, lo_x, hi_x, lo_y, hi_y, out):
    u = min(max(x, lo_x), hi_x)
    v = min(max(y, lo_y), hi_y)
    out[0] = u
    out[1] = v
    out[2] = u * u
    out[3] = u * v
    if out.size > 4:
        out[4] = v * v


@njit(cache=True, nogil=True)
def record_pass(x, y, t, released, scale, bounds, theta, seed, family=NORMAL):
    """One pass over the records in order; updates x, y and their statistics t in place; returns the accepted.

    ``bounds`` = (lo_x, hi_x, lo_y, hi_y), ``theta`` = (intercept, slope, sigma, mu_x, sd_x) (sigma unused by
    the logistic ``family``); the statistics are the first ``t.size`` coordinates of g (5 or 4).
    """
    np.random.seed(seed)
    lo_x, hi_x, lo_y, hi_y = bounds[0], bounds[1], bounds[2], bounds[3]
    b0, b1, sigma, mu, sd = theta[0], theta[1], theta[2], theta[3], theta[4]
    k_max = t.size
    old = np.empty(k_max)
    new = np.empty(k_max)
    trial = np.empty(k_max)
    current = 0.0
    for k in range(k_max):
        current += abs(released[k] - t[k]) / scale[k]
    accepted = 0
    for r in range(x.size):
        xn = mu + sd * np.random.standard_normal()
        if family == LOGISTIC:
            yn = 1.0 if np.random.random() * (1.0 + np.exp(-(b0 + b1 * xn))) < 1.0 else 0.0
        else:
            yn = b0 + b1 * xn + sigma * np.random.standard_normal()
        _g(x[r], y[r], lo_x, hi_x, lo_y, hi_y, old)
        _g(xn, yn, lo_x, hi_x, lo_y, hi_y, new)
        proposed = 0.0
        for k in range(k_max):
            trial[k] = t[k] + new[k] - old[k]
            proposed += abs(released[k] - trial[k]) / scale[k]
        if np.log(np.random.random()) < current - proposed:
            x[r] = xn
            y[r] = yn
            for k in range(k_max):
                t[k] = trial[k]
            current = proposed
            accepted += 1
    return accepted
