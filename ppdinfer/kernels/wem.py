"""Kernels of the Wasserstein exponential mechanism on county count tables.

A table is a flat int64 vector of length 2J: entries 0..J-1 are case counts, J..2J-1 death
counts. The target pmf is proportional to exp(-rate * L(y - x)) nu(y), where L is the L1 or
L2 norm (``power`` 1 or 2) and nu is one of

- NAIVE: the counting measure on Z^{2J};
- CONGENIAL: the counting measure on tables whose cases sum to the public total, with
  cases >= deaths >= 0 in every county;
- PRIOR_CONGENIAL: CONGENIAL weighted by the Dirichlet-multinomial pmf of the cases.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

NAIVE, CONGENIAL, PRIOR_CONGENIAL = 0, 1, 2


@njit(cache=True, nogil=True)
def _term(e, power):
    """|e| ** power as a float (summed, then rooted for L2)."""
    a = float(abs(e))
    return a if power == 1 else a * a


@njit(cache=True, nogil=True)
def _norm(acc, power):
    return acc if power == 1 else math.sqrt(acc)


@njit(cache=True, nogil=True)
def loss_rows(y, xs, power):
    """L(y - x) for each row x of ``xs`` (shape (B, d)); y has shape (d,)."""
    out = np.empty(xs.shape[0])
    for i in range(xs.shape[0]):
        acc = 0.0
        for k in range(y.shape[0]):
            acc += _term(y[k] - xs[i, k], power)
        out[i] = _norm(acc, power)
    return out


@njit(cache=True, nogil=True)
def _log_cell(count, concentration):
    """One county's factor of the Dirichlet-multinomial pmf, in logs, without its constant -log Gamma(a_j)."""
    return math.lgamma(count + concentration) - math.lgamma(count + 1.0)


@njit(cache=True, nogil=True)
def dirichlet_multinomial_logpmf(cases, concentration):
    """Standard log pmf of each row of ``cases`` (shape (S, J)) given its total and a_j > 0.

    Gamma(A) Gamma(s + 1) / Gamma(s + A) prod_j Gamma(y_j + a_j) / (Gamma(a_j) Gamma(y_j + 1)).
    """
    big_a = concentration.sum()
    head = math.lgamma(big_a)
    for j in range(concentration.shape[0]):
        head -= math.lgamma(concentration[j])
    out = np.empty(cases.shape[0])
    for i in range(cases.shape[0]):
        total = 0.0
        acc = head
        for j in range(cases.shape[1]):
            total += cases[i, j]
            acc += _log_cell(cases[i, j], concentration[j])
        out[i] = acc + math.lgamma(total + 1.0) - math.lgamma(total + big_a)
    return out


@njit(cache=True, nogil=True)
def log_normalizer_and_peak(support, log_weight, xs, rate, power):
    """For each row x of ``xs``: log C(x) = log sum_s exp(log_weight[s] - rate L(support[s] - x)),
    and the largest term, so that the peak of the pmf given x is exp(peak - log C(x))."""
    log_c = np.empty(xs.shape[0])
    peak = np.empty(xs.shape[0])
    for i in range(xs.shape[0]):
        terms = log_weight - rate * loss_rows(xs[i], support, power)
        top = terms.max()
        log_c[i] = top + math.log(np.exp(terms - top).sum())
        peak[i] = top
    return log_c, peak


@njit(cache=True, nogil=True)
def _step(log_steps):
    """A symmetric non-zero integer step whose size is log-uniform on 1..max_step (log_steps = log(max_step + 1))."""
    u = 2.0 * np.random.random()
    sign = 1
    if u >= 1.0:
        u -= 1.0
        sign = -1
    return sign * int(math.exp(u * log_steps))


@njit(cache=True, nogil=True)
def _accept(log_ratio):
    """The Metropolis test: accept with probability min(1, exp(log_ratio))."""
    return log_ratio >= 0.0 or math.log(np.random.random()) <= log_ratio


@njit(cache=True, nogil=True)
def _sweeps(y, x, kind, power, rate, concentration, max_step, sweeps):
    """Run ``sweeps`` Metropolis sweeps on the table y in place.

    y must start inside the support of nu. A sweep proposes 2J moves, each a symmetric step
    from :func:`_step`: NAIVE moves one entry at a time; the congenial measures propose J case
    transfers between two counties (which keep the total) and J death moves within
    [0, cases]. Proposals that leave the support are rejected, so every state visited is in it.
    """
    dim = y.shape[0]
    n = dim // 2
    log_steps = math.log(max_step + 1.0) * (1.0 - 1e-12)  # keeps every step <= max_step
    acc = 0.0
    for k in range(dim):
        acc += _term(y[k] - x[k], power)
    loss = _norm(acc, power)
    cells = np.zeros(n)  # current Dirichlet-multinomial factors
    if kind == PRIOR_CONGENIAL:
        for j in range(n):
            cells[j] = _log_cell(y[j], concentration[j])
    for _ in range(sweeps):
        for move in range(dim):
            step = _step(log_steps)
            if kind == NAIVE or move >= n:  # one entry; for the congenial measures a death count
                k = np.random.randint(dim) if kind == NAIVE else n + np.random.randint(n)
                value = y[k] + step
                if kind != NAIVE and (value < 0 or value > y[k - n]):
                    continue
                new_acc = acc - _term(y[k] - x[k], power) + _term(value - x[k], power)
                new_loss = _norm(new_acc, power)
                if _accept(-rate * (new_loss - loss)):
                    y[k], acc, loss = value, new_acc, new_loss
            elif n >= 2:  # transfer `step` cases from county j to county i
                i = np.random.randint(n)
                j = np.random.randint(n - 1)
                if j >= i:
                    j += 1
                ci, cj = y[i] + step, y[j] - step
                if ci < y[n + i] or cj < y[n + j]:
                    continue
                new_acc = (acc - _term(y[i] - x[i], power) - _term(y[j] - x[j], power)
                           + _term(ci - x[i], power) + _term(cj - x[j], power))
                new_loss = _norm(new_acc, power)
                log_ratio = -rate * (new_loss - loss)
                cell_i, cell_j = 0.0, 0.0
                if kind == PRIOR_CONGENIAL:
                    cell_i = _log_cell(ci, concentration[i])
                    cell_j = _log_cell(cj, concentration[j])
                    log_ratio += cell_i - cells[i] + cell_j - cells[j]
                if _accept(log_ratio):
                    y[i], y[j], acc, loss = ci, cj, new_acc, new_loss
                    cells[i], cells[j] = cell_i, cell_j


@njit(cache=True, nogil=True)
def wem_chains(x, kind, power, rate, concentration, max_step, sweeps, replicates, seed):
    """Final states (shape (replicates, 2J)) of independent chains of ``sweeps`` sweeps, each started at x."""
    np.random.seed(seed)
    out = np.empty((replicates, x.shape[0]), dtype=np.int64)
    for r in range(replicates):
        y = x.copy()
        _sweeps(y, x, kind, power, rate, concentration, max_step, sweeps)
        out[r] = y
    return out
