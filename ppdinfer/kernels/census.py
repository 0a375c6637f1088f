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
def _alpha_part(cells, leaf_total, K, alpha, shares, leaf_group):
    """sum over leaves of lgamma(alpha) - lgamma(N + alpha) + sum_k [lgamma(n + alpha q) - lgamma(alpha q)]."""
    total = 0.0
    la = math.lgamma(alpha)
    for leaf in range(leaf_total.size):
        total += la - math.lgamma(leaf_total[leaf] + alpha)
        g = leaf_group[leaf]
        for k in range(K):
            n = cells[leaf * K + k]
            if n > 0:
                aq = alpha * shares[g, k]
                total += math.lgamma(n + aq) - math.lgamma(aq)
    return total


@njit(cache=True, nogil=True)
def _phi_part(leaf_total, phi, log_mean, leaf_parent, leaves):
    total = 0.0
    lp = math.lgamma(phi)
    for t in range(leaves.size):
        leaf = leaves[t]
        m = math.exp(log_mean[leaf_parent[leaf]])
        n = leaf_total[leaf]
        total += math.lgamma(n + phi) - lp + phi * math.log(phi / (phi + m)) + n * math.log(m / (phi + m))
    return total


@njit(cache=True, nogil=True)
def _group_part(cells, K, alpha, share_row, leaves):
    total = 0.0
    for t in range(leaves.size):
        leaf = leaves[t]
        for k in range(K):
            n = cells[leaf * K + k]
            if n > 0:
                aq = alpha * share_row[k]
                total += math.lgamma(n + aq) - math.lgamma(aq)
    return total


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
    hyper,
    log_mean,
    log_gamma,
    shares,
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
    out_hyper,
    out_mean,
    out_shares,
    out_accept,
    scratch_shift,
    scratch_stamp,
    scratch_touched,
):
    """Run sweeps ``first .. first + count - 1`` of one chain, keeping every ``thin``-th sweep after ``tune``.

    A sweep visits every cell once: a paired move (d to or from a partner j: another category of the
    same leaf, the same category of a sibling leaf, or any cell of its invariant class, each proposal
    symmetric; j must share i's invariant class) or, for a cell under no invariant, half the time a
    single move; then updates the hyperparameters when ``learn``
    (random-walk Metropolis on log alpha, log phi, each parent's log mean size and each group's log
    gamma vector, with step sizes adapted during ``tune``). Returns the number of sweeps run.
    """
    n_cells = cells.size
    n_groups = shares.shape[0]
    n_parents = log_mean.size
    tick = scratch_stamp.max() + 1
    proposal = np.empty(K)
    for sweep in range(first, first + count):
        accepted = 0
        attempted = 0
        alpha = math.exp(hyper[0])
        phi = math.exp(hyper[1])
        for i in range(n_cells):
            c = cell_class[i]
            d = 1 + _below(rng, kmax)
            if _uniform(rng) < 0.5:
                d = -d
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
                if cell_class[j] != c or cells[j] - d < 0:
                    continue
            if cells[i] + d < 0:
                continue
            attempted += 1
            li = i // K
            ki = i - li * K
            gi = leaf_group[li]
            mi = math.exp(log_mean[leaf_parent[li]])
            ri = math.log(mi / (phi + mi))
            aqi = alpha * shares[gi, ki]
            prior_delta = _cell_h(cells[i] + d, aqi) - _cell_h(cells[i], aqi)
            if j < 0:
                prior_delta += _leaf_g(leaf_total[li] + d, alpha, phi, ri) - _leaf_g(leaf_total[li], alpha, phi, ri)
            else:
                lj = j // K
                kj = j - lj * K
                aqj = alpha * shares[leaf_group[lj], kj]
                prior_delta += _cell_h(cells[j] - d, aqj) - _cell_h(cells[j], aqj)
                if lj != li:
                    mj = math.exp(log_mean[leaf_parent[lj]])
                    rj = math.log(mj / (phi + mj))
                    prior_delta += _leaf_g(leaf_total[li] + d, alpha, phi, ri) - _leaf_g(leaf_total[li], alpha, phi, ri)
                    prior_delta += _leaf_g(leaf_total[lj] - d, alpha, phi, rj) - _leaf_g(leaf_total[lj], alpha, phi, rj)
            tick += 1
            lik, n_touched = _lik_delta(
                i, d, j, -d, cq_ptr, cq_idx, y, values, rate, power, scratch_shift, scratch_stamp, scratch_touched, tick
            )
            log_ratio = prior_delta + lik
            if log_ratio >= 0.0 or _uniform(rng) < math.exp(log_ratio):
                accepted += 1
                cells[i] += d
                leaf_total[li] += d
                if j >= 0:
                    cells[j] -= d
                    leaf_total[j // K] -= d
                for t in range(n_touched):
                    q = scratch_touched[t]
                    values[q] += scratch_shift[q]
        if learn:
            adapt = sweep < tune
            # alpha
            old = _alpha_part(cells, leaf_total, K, alpha, shares, leaf_group)
            new_log = hyper[0] + steps[0] * _normal(rng)
            new = _alpha_part(cells, leaf_total, K, math.exp(new_log), shares, leaf_group)
            lr = (
                new - old - 0.5 * ((new_log - prior[0]) / prior[1]) ** 2 + 0.5 * ((hyper[0] - prior[0]) / prior[1]) ** 2
            )
            ok = lr >= 0.0 or _uniform(rng) < math.exp(lr)
            if ok:
                hyper[0] = new_log
                alpha = math.exp(new_log)
            if adapt:
                steps[0] *= math.exp(0.05 * ((1.0 if ok else 0.0) - 0.3))
            # phi
            old = _phi_part(leaf_total, phi, log_mean, leaf_parent, all_leaves)
            new_log = hyper[1] + steps[1] * _normal(rng)
            new = _phi_part(leaf_total, math.exp(new_log), log_mean, leaf_parent, all_leaves)
            lr = (
                new - old - 0.5 * ((new_log - prior[2]) / prior[3]) ** 2 + 0.5 * ((hyper[1] - prior[2]) / prior[3]) ** 2
            )
            ok = lr >= 0.0 or _uniform(rng) < math.exp(lr)
            if ok:
                hyper[1] = new_log
                phi = math.exp(new_log)
            if adapt:
                steps[1] *= math.exp(0.05 * ((1.0 if ok else 0.0) - 0.3))
            # each parent's mean size
            for p in range(n_parents):
                leaves = parent_leaves[parent_ptr[p] : parent_ptr[p + 1]]
                current = log_mean[p]
                old = _phi_part(leaf_total, phi, log_mean, leaf_parent, leaves)
                log_mean[p] = current + steps[2 + p] * _normal(rng)
                new = _phi_part(leaf_total, phi, log_mean, leaf_parent, leaves)
                lr = new - old - 0.5 * ((log_mean[p] - prior[4]) / prior[5]) ** 2
                lr += 0.5 * ((current - prior[4]) / prior[5]) ** 2
                ok = lr >= 0.0 or _uniform(rng) < math.exp(lr)
                if not ok:
                    log_mean[p] = current
                if adapt:
                    steps[2 + p] *= math.exp(0.05 * ((1.0 if ok else 0.0) - 0.3))
            # each group's shares (gamma_k ~ Gamma(prior[6], 1), q = gamma / sum gamma)
            for g in range(n_groups):
                leaves = group_leaves[group_ptr[g] : group_ptr[g + 1]]
                step = steps[2 + n_parents + g]
                old = _group_part(cells, K, alpha, shares[g], leaves)
                lr = 0.0
                total = 0.0
                for k in range(K):
                    value = log_gamma[g, k] + step * _normal(rng)
                    lr += prior[6] * (value - log_gamma[g, k]) - (math.exp(value) - math.exp(log_gamma[g, k]))
                    proposal[k] = value
                    total += math.exp(value)
                new_shares = np.empty(K)
                for k in range(K):
                    new_shares[k] = math.exp(proposal[k]) / total
                lr += _group_part(cells, K, alpha, new_shares, leaves) - old
                ok = lr >= 0.0 or _uniform(rng) < math.exp(lr)
                if ok:
                    for k in range(K):
                        log_gamma[g, k] = proposal[k]
                        shares[g, k] = new_shares[k]
                if adapt:
                    steps[2 + n_parents + g] *= math.exp(0.05 * ((1.0 if ok else 0.0) - 0.3))
        done = sweep - tune
        if done >= 0 and (done + 1) % thin == 0:
            row = done // thin
            for c in range(n_cells):
                out_cells[row, c] = cells[c]
            out_hyper[row, 0] = hyper[0]
            out_hyper[row, 1] = hyper[1]
            for p in range(n_parents):
                out_mean[row, p] = log_mean[p]
            for g in range(n_groups):
                for k in range(K):
                    out_shares[row, g, k] = shares[g, k]
            out_accept[row] = accepted / max(attempted, 1)
    return count
