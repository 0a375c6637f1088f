"""Inner loop of the record-level data augmentation for regression from released statistics (d covariates).

The latent records (x_r, y_r) are redrawn one at a time from their model given theta (the prior proposal of
Ju, Awan, Gong & Rao 2022) and accepted with the ratio of the release's Laplace likelihood: the released
statistics s = T + Laplace(scale), T = sum_r g(clip(x_r), clip(y_r)), g the products w_j w_k of
w = (1, x_1..x_d, y) listed in ``pairs`` (those of ``ppdinfer.models.linear_regression``; the logistic model's
lack y^2, y being binary). The prior terms cancel against the proposal, so the acceptance reads only the
statistics. For the logistic model the coefficients given the records are drawn here too
(:func:`logistic_coefficients`).
"""

from __future__ import annotations

import numpy as np
from numba import njit

#: y | x ~ N(b0 + x'b1, sigma^2)
NORMAL = 0
#: y | x ~ Bernoulli(1 / (1 + exp(-(b0 + x'b1))))
LOGISTIC = 1


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
def record_pass(x, y, t, released, scale, lower, upper, pairs, beta, sigma, mu, chol, seed, family=NORMAL):
    """One pass over the records in order; updates x (n, d), y (n,) and their statistics t in place; returns the
    number accepted.

    ``lower``, ``upper``: the box of (x_1..x_d, y); ``beta`` = (intercept, slopes); x ~ N(mu, chol chol');
    ``sigma`` is unused by the logistic ``family``.
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
        eta = beta[0]
        noise = 0.0 if family == LOGISTIC else sigma * np.random.standard_normal()
        for j in range(d):
            value = mu[j]
            for i in range(j + 1):
                value += chol[j, i] * z[i]
            xn[j] = value
            eta += beta[j + 1] * value
        if family == LOGISTIC:
            yn = 1.0 if np.random.random() * (1.0 + np.exp(-eta)) < 1.0 else 0.0
        else:
            yn = eta + noise
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


@njit(cache=True, nogil=True)
def _log_target(b0, b1, x, y, precision):
    """The complete-data log posterior of logistic coefficients (b0, b1) under N(0, 1 / precision) priors."""
    total = -0.5 * precision * (b0 * b0 + b1 * b1)
    for r in range(x.size):
        eta = b0 + b1 * x[r]
        total += y[r] * eta - (eta + np.log1p(np.exp(-eta)) if eta > 0 else np.log1p(np.exp(eta)))
    return total


@njit(cache=True, nogil=True)
def _information(b0, b1, x, precision):
    """The negative Hessian of ``_log_target``: (h00, h01, h11)."""
    h00, h01, h11 = precision, 0.0, precision
    for r in range(x.size):
        p = 1.0 / (1.0 + np.exp(-(b0 + b1 * x[r])))
        v = p * (1.0 - p)
        h00 += v
        h01 += v * x[r]
        h11 += v * x[r] * x[r]
    return h00, h01, h11


@njit(cache=True, nogil=True)
def logistic_coefficients(x, y, beta, prior_scale, df, seed):
    """One independence Metropolis-Hastings draw of logistic coefficients beta = (b0, b1) given records (x, y).

    The proposal is a bivariate t with ``df`` degrees of freedom at the mode of the complete-data posterior (Newton's
    method with step halving; the target is strictly concave) scaled by the inverse curvature there: it depends on
    the records only, so the step leaves the conditional posterior invariant. Returns the new (b0, b1).
    """
    np.random.seed(seed)
    precision = 1.0 / (prior_scale * prior_scale)
    m0, m1 = beta[0], beta[1]
    target = _log_target(m0, m1, x, y, precision)
    for _ in range(100):
        g0, g1 = -precision * m0, -precision * m1
        for r in range(x.size):
            residual = y[r] - 1.0 / (1.0 + np.exp(-(m0 + m1 * x[r])))
            g0 += residual
            g1 += residual * x[r]
        h00, h01, h11 = _information(m0, m1, x, precision)
        det = h00 * h11 - h01 * h01
        s0, s1 = (h11 * g0 - h01 * g1) / det, (h00 * g1 - h01 * g0) / det
        trial = _log_target(m0 + s0, m1 + s1, x, y, precision)
        while trial < target and s0 * s0 + s1 * s1 > 1e-24:
            s0, s1 = 0.5 * s0, 0.5 * s1
            trial = _log_target(m0 + s0, m1 + s1, x, y, precision)
        m0, m1 = m0 + s0, m1 + s1
        target = max(trial, target)
        if s0 * s0 + s1 * s1 < 1e-20:
            break
    h00, h01, h11 = _information(m0, m1, x, precision)
    # Cholesky of the information, L = [[l00, 0], [l10, l11]]; a proposal is mode + L^-T e / sqrt(chi2 / df)
    l00 = np.sqrt(h00)
    l10 = h01 / l00
    l11 = np.sqrt(h11 - l10 * l10)
    e0, e1 = np.random.standard_normal(), np.random.standard_normal()
    w = np.sqrt(np.random.chisquare(df) / df)
    d1 = e1 / l11 / w
    d0 = (e0 / w - l10 * d1) / l00
    new0, new1 = m0 + d0, m1 + d1

    def log_ratio(b0, b1):  # log target - log proposal, up to constants; z = L^T (b - mode)
        z0 = l00 * (b0 - m0) + l10 * (b1 - m1)
        z1 = l11 * (b1 - m1)
        return _log_target(b0, b1, x, y, precision) + 0.5 * (df + 2.0) * np.log1p((z0 * z0 + z1 * z1) / df)

    if np.log(np.random.random()) < log_ratio(new0, new1) - log_ratio(beta[0], beta[1]):
        return new0, new1
    return beta[0], beta[1]
