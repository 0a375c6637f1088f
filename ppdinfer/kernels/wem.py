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

from .augmentation import choose_pair

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
def min_log_normalizer(support, log_weight, xs, rate, power):
    """min over the rows x of ``xs`` of log C(x) (see log_normalizer_and_peak), as one float: a
    returned tuple of arrays would turn a Ctrl-C during the call into a SystemError."""
    return log_normalizer_and_peak(support, log_weight, xs, rate, power)[0].min()


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
def _pick(ok, new, old):
    """new if ok else old, in arithmetic rather than a branch (exact for finite values)."""
    return ok * new + (1 - ok) * old


@njit(cache=True, nogil=True)
def _sweeps(y, x, kind, power, rate, concentration, max_step, sweeps):
    """Run ``sweeps`` Metropolis sweeps on the table y in place.

    y must start inside the support of nu. A sweep proposes 2J moves, each a symmetric step
    from :func:`_step`: NAIVE moves one entry at a time; the congenial measures propose J case
    transfers between two counties (which keep the total) and J death moves within
    [0, cases]. Proposals that leave the support are rejected, so every state visited is in it.
    Every proposal does the same work, feasible or not, accepted or not (the loss, the prior
    factors, one uniform, updates in arithmetic rather than branches), so the run time does not
    depend on how often the chain meets the support's boundary or accepts.
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
            log_u = math.log(np.random.random())
            if kind == NAIVE or move >= n:  # one entry; for the congenial measures a death count
                k = np.random.randint(dim) if kind == NAIVE else n + np.random.randint(n)
                value = y[k] + step
                feasible = (kind == NAIVE) | ((value >= 0) & (value <= y[k - n]))
                new_acc = acc - _term(y[k] - x[k], power) + _term(value - x[k], power)
                new_loss = _norm(new_acc, power)
                ok = feasible & (log_u <= -rate * (new_loss - loss))
                y[k] += ok * step
                acc, loss = _pick(ok, new_acc, acc), _pick(ok, new_loss, loss)
            elif n >= 2:  # transfer `step` cases from county j to county i (the pair as the augmentation moves pick it)
                i, j = choose_pair(n)
                ci, cj = y[i] + step, y[j] - step
                feasible = (ci >= y[n + i]) & (cj >= y[n + j])
                new_acc = (
                    acc
                    - _term(y[i] - x[i], power)
                    - _term(y[j] - x[j], power)
                    + _term(ci - x[i], power)
                    + _term(cj - x[j], power)
                )
                new_loss = _norm(new_acc, power)
                log_ratio = -rate * (new_loss - loss)
                cell_i, cell_j = 0.0, 0.0
                if kind == PRIOR_CONGENIAL:
                    cell_i = _log_cell(max(ci, 0), concentration[i])
                    cell_j = _log_cell(max(cj, 0), concentration[j])
                    log_ratio += cell_i - cells[i] + cell_j - cells[j]
                ok = feasible & (log_u <= log_ratio)
                y[i] += ok * step
                y[j] -= ok * step
                acc, loss = _pick(ok, new_acc, acc), _pick(ok, new_loss, loss)
                cells[i], cells[j] = _pick(ok, cell_i, cells[i]), _pick(ok, cell_j, cells[j])


@njit(cache=True, nogil=True)
def wem_advance(states, x, kind, power, rate, concentration, max_step, sweeps, seed):
    """Advance each chain (row of ``states``, in place) by ``sweeps`` sweeps, one after the other,
    drawing from numba's generator seeded with ``seed``."""
    np.random.seed(seed)
    for r in range(states.shape[0]):
        _sweeps(states[r], x, kind, power, rate, concentration, max_step, sweeps)


@njit(cache=True, nogil=True)
def wem_chains(x, kind, power, rate, concentration, max_step, sweeps, replicates, seed):
    """Final states (shape (replicates, 2J)) of independent chains of ``sweeps`` sweeps, each started at x."""
    out = np.empty((replicates, x.shape[0]), dtype=np.int64)
    for r in range(replicates):
        out[r] = x
    wem_advance(out, x, kind, power, rate, concentration, max_step, sweeps, seed)
    return out


# -- exact release ----------------------------------------------------------------------------
# Bernoulli(exp(-gamma)) by Canonne, Kamath & Steinke (2020), Algorithm 1: gamma is cut into m >= gamma
# pieces g = gamma / m <= 1, and a piece passes when the count k of successive successes of
# Bernoulli(g / k), k = 1, 2, ..., stops at an odd k. Uniforms come from numba's generator: randint
# is exact (rejection on random bits) and random() is u / 2^53 for a uniform integer u.

#: Allowance for the rounding of the double-precision decisions in _bernoulli_exp_minus, relative to
#: the operands' magnitude: 2^8 times the worst case of its few correctly rounded IEEE 754 operations.
SLACK = 2.0**-45
_TWO53 = 2.0**53


@njit(cache=True, nogil=True)
def _bernoulli_exp_minus_rational(numerator, denominator):
    """Bernoulli(exp(-numerator / denominator)) for 0 <= numerator <= denominator, in integer arithmetic."""
    k = 1
    while np.random.randint(0, denominator * k) < numerator:
        k += 1
    return k % 2 == 1


@njit(cache=True, nogil=True)
def _discrete_laplace(numerator, denominator):
    """One draw with pmf proportional to exp(-|v| numerator / denominator) (CKS Algorithm 2)."""
    while True:
        u = np.random.randint(0, denominator)
        if not _bernoulli_exp_minus_rational(u, denominator):
            continue
        v = 0
        while _bernoulli_exp_minus_rational(1, 1):
            v += 1
        magnitude = (u + denominator * v) // numerator
        negative = np.random.randint(0, 2) == 1
        if not (negative and magnitude == 0):
            return -magnitude if negative else magnitude


@njit(cache=True, nogil=True)
def _bernoulli_exp_minus(gamma, scale, state):
    """Bernoulli(exp(-gamma)) for gamma >= 0 known in double precision to within 2^-50 scale.

    Each trial U < g / k is decided on 53 random bits u (U uniform on [u, u + 1) / 2^53) when
    g / k, rounded, stays SLACK * scale / (m k) away from them. Returns 1 or 0; or -1 when a
    trial is too close to call, with (k, pieces left, u, m) in ``state`` for the caller to
    finish in exact arithmetic.
    """
    pieces = max(1.0, math.ceil(gamma + SLACK * scale))
    left = pieces
    k = 1.0
    while True:
        d = pieces * k
        p = gamma / d
        margin = SLACK * scale / d + 2.0**-1000
        u = np.random.random() * _TWO53
        if u + 1.0 <= (p - margin) * _TWO53:
            k += 1.0
        elif u >= (p + margin) * _TWO53:
            if k % 2.0 == 0.0:
                return 0
            left -= 1.0
            if left == 0.0:
                return 1
            k = 1.0
        else:
            state[0], state[1], state[2], state[3] = k, left, u, pieces
            return -1


@njit(cache=True, nogil=True)
def lattice_l2_proposals(noise, status, state, numerator, denominator, rate, seed):
    """Fill ``noise`` (proposals, dim) with draws of prod_k DiscreteLaplace(a), a = numerator /
    denominator <= rate / sqrt(dim), and ``status`` with their acceptance Bernoulli(exp(-(rate
    ||v||_2 - a ||v||_1))): 1, 0, or -1 with ``state`` (see _bernoulli_exp_minus).

    Outputs are filled in place: a returned tuple of arrays would turn a Ctrl-C during the call
    into a SystemError."""
    np.random.seed(seed)
    envelope_rate = numerator / denominator
    for i in range(noise.shape[0]):
        squares, absolute = 0, 0
        for k in range(noise.shape[1]):
            v = _discrete_laplace(numerator, denominator)
            noise[i, k] = v
            squares += v * v
            absolute += abs(v)
        root, linear = rate * math.sqrt(squares), envelope_rate * absolute
        status[i] = _bernoulli_exp_minus(root - linear, root + linear, state[i])


@njit(cache=True, nogil=True)
def congenial_proposals(index, status, state, support, x, weight, thin, rate, power, seed):
    """Fill ``index`` with uniform proposals (rows of ``support``) and ``status`` with their acceptance
    weight[s] * thin * exp(-rate L(support[s] - x)): 1, 0, or -1 with ``state`` (see
    _bernoulli_exp_minus). Every proposal does the same work, whichever coin decides it."""
    np.random.seed(seed)
    for i in range(index.shape[0]):
        s = np.random.randint(0, support.shape[0])
        index[i] = s
        base = np.random.random() < weight[s]
        thinned = np.random.random() < thin
        acc = 0.0
        for k in range(x.shape[0]):
            acc += _term(support[s, k] - x[k], power)
        root = rate * _norm(acc, power)
        decided = _bernoulli_exp_minus(root, root, state[i])
        status[i] = decided if base and thinned else 0
