"""Compiled sweeps of the census cell sampler (ppdinfer.census.sampler): cell moves, query cache, hyperparameters.

One move changes one or two cells; its likelihood ratio reads only the queries containing them (the
cell -> queries CSR arrays, O(depth)), against a cached vector of the current query values. The
random numbers come from a xoshiro256** stream held in a 4-word state array per chain, so a chain
is reproducible whichever thread runs it.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

_M53 = 1.0 / 9007199254740992.0


@njit(cache=True, nogil=True)
def _rotl(x, k):
    return (x << np.uint64(k)) | (x >> np.uint64(64 - k))


@njit(cache=True, nogil=True)
def _next(state):
    s0, s1, s2, s3 = state[0], state[1], state[2], state[3]
    result = _rotl(s1 * np.uint64(5), 7) * np.uint64(9)
    t = s1 << np.uint64(17)
    s2 ^= s0
    s3 ^= s1
    s1 ^= s2
    s0 ^= s3
    s2 ^= t
    s3 = _rotl(s3, 45)
    state[0], state[1], state[2], state[3] = s0, s1, s2, s3
    return result


@njit(cache=True, nogil=True)
def _uniform(state):
    return float(_next(state) >> np.uint64(11)) * _M53


@njit(cache=True, nogil=True)
def _below(state, n):
    out = int(_uniform(state) * n)
    return n - 1 if out >= n else out


@njit(cache=True, nogil=True)
def _normal(state):
    u1 = _uniform(state)
    while u1 <= 0.0:
        u1 = _uniform(state)
    return math.sqrt(-2.0 * math.log(u1)) * math.cos(2.0 * math.pi * _uniform(state))


@njit(cache=True, nogil=True)
def _query_ll(y, value, rate, power):
    r = abs(y - value)
    return -rate * (r * r if power == 2 else r)


@njit(cache=True, nogil=True)
def _leaf_g(total, alpha, phi, log_ratio):
    """The total-dependent part of a leaf's log prior: lgamma(N + phi) - lgamma(N + alpha) + N log(m / (phi + m))."""
    return math.lgamma(total + phi) - math.lgamma(total + alpha) + total * log_ratio


@njit(cache=True, nogil=True)
def _cell_h(n, aq):
    return math.lgamma(n + aq) - math.lgamma(n + 1.0)


@njit(cache=True, nogil=True)
def _lik_delta(i, di, j, dj, cq_ptr, cq_idx, y, values, rate, power, shift, stamp, touched, tick):
    """The log-likelihood change of cells i += di and j += dj (j < 0: none); fills shift for the touched queries."""
    n_touched = 0
    for p in range(cq_ptr[i], cq_ptr[i + 1]):
        q = cq_idx[p]
        stamp[q] = tick
        shift[q] = di
        touched[n_touched] = q
        n_touched += 1
    if j >= 0:
        for p in range(cq_ptr[j], cq_ptr[j + 1]):
            q = cq_idx[p]
            if stamp[q] == tick:
                shift[q] += dj
            else:
                stamp[q] = tick
                shift[q] = dj
                touched[n_touched] = q
                n_touched += 1
    delta = 0.0
    for t in range(n_touched):
        q = touched[t]
        if shift[q] != 0:
            delta += _query_ll(y[q], values[q] + shift[q], rate[q], power) - _query_ll(y[q], values[q], rate[q], power)
    return delta, n_touched


@njit(cache=True, nogil=True)
def _phi_part(leaf_total, phi, log_mean, leaf_parent, leaves):
    """sum over ``leaves`` of the negative binomial log pmf of N_l (mean m of its parent, size phi), less log N!."""
    total = 0.0
    lp = math.lgamma(phi)
    for t in range(leaves.size):
        leaf = leaves[t]
        m = math.exp(log_mean[leaf_parent[leaf]])
        n = leaf_total[leaf]
        total += math.lgamma(n + phi) - lp + phi * math.log(phi / (phi + m)) + n * math.log(m / (phi + m))
    return total


@njit(cache=True, nogil=True)
def _beta_prior(log_beta_row, beta_sum, prior):
    """log prior of one group's Dirichlet parameters beta = alpha q (alpha lognormal, q ~ Dirichlet(a0)),
    as a density of log beta: -((log alpha - mu) / s)^2 / 2 - K log alpha + (a0 - 1) sum log q + sum log beta."""
    K = log_beta_row.size
    log_alpha = math.log(beta_sum)
    out = -0.5 * ((log_alpha - prior[0]) / prior[1]) ** 2 - K * log_alpha
    for k in range(K):
        out += (prior[6] - 1.0) * (log_beta_row[k] - log_alpha) + log_beta_row[k]
    return out


@njit(cache=True, nogil=True)
def _beta_change(cells, leaf_total, K, leaves, k, old_beta, new_beta, old_sum, new_sum):
    """The change of the Dirichlet-multinomial log pmf of a group's leaves when beta_k and sum beta change."""
    out = 0.0
    for t in range(leaves.size):
        leaf = leaves[t]
        n_total = leaf_total[leaf]
        out += (
            math.lgamma(new_sum)
            - math.lgamma(n_total + new_sum)
            - math.lgamma(old_sum)
            + math.lgamma(n_total + old_sum)
        )
        n = cells[leaf * K + k]
        if n > 0:
            out += math.lgamma(n + new_beta) - math.lgamma(new_beta) - math.lgamma(n + old_beta) + math.lgamma(old_beta)
    return out


@njit(cache=True, nogil=True)
def census_sweeps(
    first,
    count,
    tune,
    thin,
    cells,
    leaf_total,
    values,
    y,
    rate,
    power,
    cq_ptr,
    cq_idx,
    cell_class,
    class_ptr,
    class_cells,
    kmax,
    K,
    leaf_parent,
    leaf_group,
    log_phi,
    log_mean,
    log_beta,
    learn,
    steps,
    prior,
    parent_ptr,
    parent_leaves,
    group_ptr,
    group_leaves,
    all_leaves,
    rng,
    out_cells,
    out_phi,
    out_mean,
    out_beta,
    out_accept,
    scratch_shift,
    scratch_stamp,
    scratch_touched,
):
    """Run sweeps ``first .. first + count - 1`` of one chain, keeping every ``thin``-th sweep after ``tune``.

    A sweep visits every cell once: a Gibbs draw along the line of a paired move (a partner j: another
    category of the same leaf, the same category of a sibling leaf, or any cell of its invariant
    class; j must share i's class) or, for a cell under no invariant, half the time along its own
    axis, over a randomly placed window of ``kmax`` + 1 states; then, when ``learn``, random-walk
    Metropolis on log phi, each parent's log mean size and each group's log beta_k one at a time
    (step sizes adapted during ``tune``). ``log_phi`` is a one-element array. Returns the sweeps run.
    """
    n_cells = cells.size
    n_groups = log_beta.shape[0]
    n_parents = log_mean.size
    tick = scratch_stamp.max() + 1
    line = np.empty(kmax + 1)
    beta = np.exp(log_beta)
    beta_sum = np.empty(n_groups)
    for g in range(n_groups):
        beta_sum[g] = beta[g].sum()
    for sweep in range(first, first + count):
        accepted = 0
        attempted = 0
        phi = math.exp(log_phi[0])
        for i in range(n_cells):
            c = cell_class[i]
            j = -1
            kind = _uniform(rng)
            if c < 0 and kind < 0.5:
                j = -1  # a single move: no invariant holds this cell
            else:
                li0 = i // K
                if kind < 0.25 or (c < 0 and kind < 0.75):
                    if K < 2:
                        continue
                    k2 = _below(rng, K - 1)  # another category of the same leaf
                    if k2 >= i - li0 * K:
                        k2 += 1
                    j = li0 * K + k2
                elif kind < 0.6 or c < 0:
                    p0 = leaf_parent[li0]
                    m = parent_ptr[p0 + 1] - parent_ptr[p0]
                    if m < 2:
                        continue
                    l2 = parent_leaves[parent_ptr[p0] + _below(rng, m - 1)]  # a sibling leaf, same category
                    if l2 == li0:
                        l2 = parent_leaves[parent_ptr[p0 + 1] - 1]
                    j = l2 * K + (i - li0 * K)
                else:
                    size = class_ptr[c + 1] - class_ptr[c]
                    if size < 2:
                        continue
                    j = class_cells[class_ptr[c] + _below(rng, size - 1)]
                    if j == i:
                        j = class_cells[class_ptr[c + 1] - 1]
                if cell_class[j] != c:
                    continue
            # a Gibbs draw of t along n + t (e_i - e_j) (e_i alone for a single move) over a random window
            # of kmax + 1 points that holds t = 0 (every state of the window picks it with the same
            # probability, so the exact conditional on it leaves the posterior invariant)
            offset = _below(rng, kmax + 1)
            lo, hi = -offset, kmax - offset
            if -cells[i] > lo:
                lo = -cells[i]
            if j >= 0 and cells[j] < hi:
                hi = cells[j]
            if hi - lo < 1:
                continue
            attempted += 1
            tick += 1
            _, n_touched = _lik_delta(
                i, 1, j, -1, cq_ptr, cq_idx, y, values, rate, power, scratch_shift, scratch_stamp, scratch_touched, tick
            )
            slope = 0.0
            curve = 0.0
            for t in range(n_touched):
                q = scratch_touched[t]
                sq = scratch_shift[q]
                if sq != 0:
                    slope += 2.0 * rate[q] * sq * (y[q] - values[q])
                    curve += rate[q] * sq * sq
            li = i // K
            ki = i - li * K
            mi = math.exp(log_mean[leaf_parent[li]])
            ri = math.log(mi / (phi + mi))
            gi = leaf_group[li]
            aqi = beta[gi, ki]
            alpha_i = beta_sum[gi]
            lj = -1
            if j >= 0:
                lj = j // K
                gj = leaf_group[lj]
                aqj = beta[gj, j - lj * K]
                alpha_j = beta_sum[gj]
                mj = math.exp(log_mean[leaf_parent[lj]])
                rj = math.log(mj / (phi + mj))
            best = -np.inf
            for t in range(lo, hi + 1):
                value = _cell_h(cells[i] + t, aqi)
                if j < 0:
                    value += _leaf_g(leaf_total[li] + t, alpha_i, phi, ri)
                else:
                    value += _cell_h(cells[j] - t, aqj)
                    if lj != li:
                        value += _leaf_g(leaf_total[li] + t, alpha_i, phi, ri) + _leaf_g(
                            leaf_total[lj] - t, alpha_j, phi, rj
                        )
                if power == 2:
                    value += slope * t - curve * t * t
                else:
                    for u in range(n_touched):
                        q = scratch_touched[u]
                        sq = scratch_shift[q]
                        if sq != 0:
                            value += _query_ll(y[q], values[q] + t * sq, rate[q], power) - _query_ll(
                                y[q], values[q], rate[q], power
                            )
                line[t - lo] = value
                if value > best:
                    best = value
            total = 0.0
            for t in range(hi - lo + 1):
                line[t] = math.exp(line[t] - best)
                total += line[t]
            pick = _uniform(rng) * total
            d = hi
            running = 0.0
            for t in range(hi - lo + 1):
                running += line[t]
                if pick < running:
                    d = lo + t
                    break
            if d != 0:
                accepted += 1
                cells[i] += d
                leaf_total[li] += d
                if j >= 0:
                    cells[j] -= d
                    leaf_total[lj] -= d
                for t in range(n_touched):
                    q = scratch_touched[t]
                    values[q] += d * scratch_shift[q]
        if learn:
            adapt = sweep < tune
            # phi
            old = _phi_part(leaf_total, phi, log_mean, leaf_parent, all_leaves)
            new_log = log_phi[0] + steps[0] * _normal(rng)
            new = _phi_part(leaf_total, math.exp(new_log), log_mean, leaf_parent, all_leaves)
            lr = (
                new
                - old
                - 0.5 * ((new_log - prior[2]) / prior[3]) ** 2
                + 0.5 * ((log_phi[0] - prior[2]) / prior[3]) ** 2
            )
            ok = lr >= 0.0 or _uniform(rng) < math.exp(lr)
            if ok:
                log_phi[0] = new_log
                phi = math.exp(new_log)
            if adapt:
                steps[0] *= math.exp(0.05 * ((1.0 if ok else 0.0) - 0.3))
            # each parent's mean size
            for p in range(n_parents):
                leaves = parent_leaves[parent_ptr[p] : parent_ptr[p + 1]]
                current = log_mean[p]
                old = _phi_part(leaf_total, phi, log_mean, leaf_parent, leaves)
                log_mean[p] = current + steps[1 + p] * _normal(rng)
                new = _phi_part(leaf_total, phi, log_mean, leaf_parent, leaves)
                lr = new - old - 0.5 * ((log_mean[p] - prior[4]) / prior[5]) ** 2
                lr += 0.5 * ((current - prior[4]) / prior[5]) ** 2
                ok = lr >= 0.0 or _uniform(rng) < math.exp(lr)
                if not ok:
                    log_mean[p] = current
                if adapt:
                    steps[1 + p] *= math.exp(0.05 * ((1.0 if ok else 0.0) - 0.3))
            # each group's Dirichlet parameters beta_k = alpha q_k, one at a time
            for g in range(n_groups):
                leaves = group_leaves[group_ptr[g] : group_ptr[g + 1]]
                for k in range(K):
                    slot = 1 + n_parents + g * K + k
                    current = log_beta[g, k]
                    old_prior = _beta_prior(log_beta[g], beta_sum[g], prior)
                    value = current + steps[slot] * _normal(rng)
                    new_beta = math.exp(value)
                    new_sum = beta_sum[g] - beta[g, k] + new_beta
                    log_beta[g, k] = value
                    lr = _beta_prior(log_beta[g], new_sum, prior) - old_prior
                    lr += _beta_change(cells, leaf_total, K, leaves, k, beta[g, k], new_beta, beta_sum[g], new_sum)
                    ok = lr >= 0.0 or _uniform(rng) < math.exp(lr)
                    if ok:
                        beta[g, k] = new_beta
                        beta_sum[g] = new_sum
                    else:
                        log_beta[g, k] = current
                    if adapt:
                        steps[slot] *= math.exp(0.05 * ((1.0 if ok else 0.0) - 0.3))
        done = sweep - tune
        if done >= 0 and (done + 1) % thin == 0:
            row = done // thin
            for c in range(n_cells):
                out_cells[row, c] = cells[c]
            out_phi[row] = log_phi[0]
            for p in range(n_parents):
                out_mean[row, p] = log_mean[p]
            for g in range(n_groups):
                for k in range(K):
                    out_beta[row, g, k] = log_beta[g, k]
            out_accept[row] = accepted / max(attempted, 1)
    return count
