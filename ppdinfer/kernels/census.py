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

from .special import log_gamma_step

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
def _exp_relative(line, count, best):
    """line[:count] = exp(line[:count] - best) in place; returns their sum."""
    total = 0.0
    for t in range(count):
        line[t] = math.exp(line[t] - best)
        total += line[t]
    return total


@njit(cache=True, nogil=True)
def _pick(line, count, total, rng):
    """An index t < count drawn with probability line[t] / total (one uniform)."""
    pick = _uniform(rng) * total
    running = 0.0
    for t in range(count):
        running += line[t]
        if pick < running:
            return t
    return count - 1


@njit(cache=True, nogil=True)
def _weighted_other(weights, skip, rng):
    """A category k != skip drawn with probability proportional to weights[k] (skip < 0: any category)."""
    total = 0.0
    for k in range(weights.size):
        if k != skip:
            total += weights[k]
    pick = _uniform(rng) * total
    last = -1
    for k in range(weights.size):
        if k != skip:
            last = k
            pick -= weights[k]
            if pick < 0.0:
                return k
    return last


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
def _add_touched(cell, coef, cq_ptr, cq_idx, shift, stamp, touched, tick, n_touched):
    """Add the queries containing ``cell`` to the move's touched set (stamped ``tick``), each changing by
    ``coef`` more when the cell changes by ``coef``; returns the new size of the set."""
    for p in range(cq_ptr[cell], cq_ptr[cell + 1]):
        q = cq_idx[p]
        if stamp[q] == tick:
            shift[q] += coef
        else:
            stamp[q] = tick
            shift[q] = coef
            touched[n_touched] = q
            n_touched += 1
    return n_touched


@njit(cache=True, nogil=True)
def _touch(i, di, j, dj, cq_ptr, cq_idx, shift, stamp, touched, tick):
    """The queries containing cell i or j (j < 0: none) and how much each changes when i += di and j += dj."""
    n_touched = _add_touched(i, di, cq_ptr, cq_idx, shift, stamp, touched, tick, 0)
    if j >= 0:
        n_touched = _add_touched(j, dj, cq_ptr, cq_idx, shift, stamp, touched, tick, n_touched)
    return n_touched


@njit(cache=True, nogil=True)
def _quadratic(touched, n_touched, shift, y, values, rate, ni):
    """Gaussian noise along a move's line: the log likelihood of state t relative to t = 0 is
    t slope - t^2 curve; num / curve is the likelihood's peak in n_i (cell i now at ni)."""
    slope = 0.0
    curve = 0.0
    num = 0.0
    for u in range(n_touched):
        q = touched[u]
        sq = shift[q]
        if sq != 0:
            slope += 2.0 * rate[q] * sq * (y[q] - values[q])
            curve += rate[q] * sq * sq
            num += rate[q] * sq * ((y[q] - values[q]) + ni * sq)
    return slope, curve, num


@njit(cache=True, nogil=True)
def _log_step(t, slope, curve, power, touched, n_touched, shift, y, values, rate):
    """The change of the log likelihood from state t to state t + 1 of a move's line."""
    if power == 2:
        return slope - curve * (2.0 * t + 1.0)
    out = 0.0
    for u in range(n_touched):
        q = touched[u]
        sq = shift[q]
        if sq != 0:
            out += _query_ll(y[q], values[q] + (t + 1) * sq, rate[q], power) - _query_ll(
                y[q], values[q] + t * sq, rate[q], power
            )
    return out


@njit(cache=True, nogil=True)
def _nb_change(n, phi, m, new_phi, new_m):
    """log NB(n; mean new_m, size new_phi) - log NB(n; mean m, size phi), no large terms cancelling (n up to 2^53)."""
    out = log_gamma_step(n + phi, new_phi - phi) - log_gamma_step(phi, new_phi - phi)
    out += phi * math.log1p(m / phi) - new_phi * math.log1p(new_m / new_phi)
    return out + n * (math.log1p(phi / m) - math.log1p(new_phi / new_m))


@njit(cache=True, nogil=True)
def _phi_change(leaf_total, leaf_parent, leaves, phi, new_phi, log_mean, p, new_log_mean):
    """The change of sum over ``leaves`` of the negative binomial log pmf of N_l (mean m of its parent, size phi)
    when phi becomes ``new_phi`` and parent p's log mean ``new_log_mean`` (p < 0: no mean changes)."""
    total = 0.0
    for t in range(leaves.size):
        leaf = leaves[t]
        m = math.exp(log_mean[leaf_parent[leaf]])
        new_m = math.exp(new_log_mean) if leaf_parent[leaf] == p else m
        total += _nb_change(leaf_total[leaf], phi, m, new_phi, new_m)
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
def _beta_change(cells, leaf_total, K, leaves, k, old_beta, new_beta, old_sum):
    """The change of the Dirichlet-multinomial log pmf of a group's leaves when beta_k becomes ``new_beta`` (and
    the sum of beta with it; the terms that do not depend on the leaf, of the sum and of beta_k, counted once per
    leaf), by log-gamma steps (:func:`log_gamma_step`), exact at any count."""
    delta = new_beta - old_beta
    out = 0.0
    nonzero = 0
    for t in range(leaves.size):
        leaf = leaves[t]
        out -= log_gamma_step(leaf_total[leaf] + old_sum, delta)
        n = cells[leaf * K + k]
        if n > 0:
            nonzero += 1
            out += log_gamma_step(n + old_beta, delta)
    out += leaves.size * log_gamma_step(old_sum, delta)
    return out - nonzero * log_gamma_step(old_beta, delta)


@njit(cache=True, nogil=True)
def _scale_change(cells, leaf_total, K, leaves, beta_row, shift):
    """The change of the Dirichlet-multinomial log pmf of a group's leaves when every beta_k is multiplied by
    exp(``shift``) (an empty cell's terms cancel), by log-gamma steps, exact at any count."""
    grow = math.expm1(shift)
    old_sum = 0.0
    for k in range(K):
        old_sum += beta_row[k]
    out = 0.0
    for t in range(leaves.size):
        leaf = leaves[t]
        out += log_gamma_step(old_sum, old_sum * grow) - log_gamma_step(leaf_total[leaf] + old_sum, old_sum * grow)
        for k in range(K):
            n = cells[leaf * K + k]
            if n > 0:
                b = beta_row[k]
                out += log_gamma_step(n + b, b * grow) - log_gamma_step(b, b * grow)
    return out


@njit(cache=True, nogil=True)
def _prior_ratio(t, ni, nj, j, li, lj, aqi, aqj, alpha_i, alpha_j, n_total_i, n_total_j, phi):
    """The prior ratio of the line's state t + 1 to state t, less the exp(N log(m / (phi + m))) factors."""
    a = ni + t
    top = a + aqi
    bottom = a + 1.0
    if j < 0:
        top *= n_total_i + t + phi
        bottom *= n_total_i + t + alpha_i
    else:
        b = nj - t
        top *= b
        bottom *= b - 1.0 + aqj
        if lj != li:
            m = n_total_j - t
            top *= (n_total_i + t + phi) * (m - 1.0 + alpha_j)
            bottom *= (n_total_i + t + alpha_i) * (m - 1.0 + phi)
    return top / bottom


@njit(cache=True, nogil=True)
def _line_draw(
    i, j, li, lj, K, cells, leaf_total, values, y, rate, power, shift, touched, n_touched,
    beta, beta_sum, leaf_group, leaf_parent, log_mean, phi, kmax, line, window, p_local, rng,
):  # fmt: skip
    """Draw t along n + t (e_i - e_j) (e_i alone when j < 0) from its exact conditional on a window; return t.

    Two kernels, each reversible for the conditional on the line. The *wide* kernel (Gaussian
    noise, ``window`` > 0, probability 1 - ``p_local``) takes a window that depends on the line
    only, never on the position on it: the likelihood's peak along the line, computed from the
    residuals at the line's point n_i = 0 (the same integers from every state of the line, so the
    same floating-point result) +- ``window`` noise sds, reaching down to n_i = 0 (and up to n_j = 0)
    when within that distance; a state outside its window stays. The *local* kernel places a
    window of ``kmax`` + 1 states holding t = 0 at a uniform offset. The conditional is built by
    increments of the log prior (a ratio of products, one log per state) and of the likelihood.
    """
    ni = cells[i]
    nj = cells[j] if j >= 0 else 0
    slope, curve, num = _quadratic(touched, n_touched, shift, y, values, rate, ni)
    lo = 0
    hi = 0
    wide = power == 2 and window > 0.0 and curve > 0.0 and (p_local <= 0.0 or _uniform(rng) >= p_local)
    if wide:
        w = int(math.ceil(window / math.sqrt(2.0 * curve))) + 1
        center = int(math.floor(num / curve))
        low = center - w
        high = center + w + 1
        if low <= w:
            low = 0
        if j >= 0:
            reach = ni + nj
            if high >= reach - w:
                high = reach
            if high > reach:
                high = reach
            if low > reach:
                return 0
        if high < 0:
            return 0
        if high - low + 1 > line.size:
            wide = False  # too wide for the buffer (a property of the line): the local kernel
        else:
            lo = low - ni
            hi = high - ni
            if lo > 0 or hi < 0:
                return 0  # outside the line's window: stay
    if not wide:
        offset = _below(rng, kmax + 1)
        lo, hi = -offset, kmax - offset
        if -ni > lo:
            lo = -ni
        if j >= 0 and nj < hi:
            hi = nj
    if hi - lo < 1:
        return 0
    gi = leaf_group[li]
    aqi = beta[gi, i - li * K]
    alpha_i = beta_sum[gi]
    mi = math.exp(log_mean[leaf_parent[li]])
    ri = math.log(mi / (phi + mi))
    aqj = 0.0
    alpha_j = 0.0
    rj = 0.0
    if j >= 0:
        gj = leaf_group[lj]
        aqj = beta[gj, j - lj * K]
        alpha_j = beta_sum[gj]
        mj = math.exp(log_mean[leaf_parent[lj]])
        rj = math.log(mj / (phi + mj))
    n_total_i = leaf_total[li]
    n_total_j = leaf_total[lj] if j >= 0 else 0
    total = 0.0
    if power == 2:
        # unnormalized probabilities by products from the likelihood's peak outwards: no log or exp per state
        extra = ri if j < 0 else (ri - rj if lj != li else 0.0)
        gain = math.exp(extra)
        step_down = math.exp(-2.0 * curve)
        anchor = int(math.floor(0.5 * slope / curve + 0.5)) if curve > 0.0 else lo  # curve 0: a flat likelihood
        if anchor < lo:
            anchor = lo
        if anchor > hi:
            anchor = hi
        line[anchor - lo] = 1.0
        lik = math.exp(slope - curve * (2.0 * anchor + 1.0))  # exp of the likelihood increment at anchor
        p = 1.0
        for t in range(anchor, hi):
            p *= _prior_ratio(t, ni, nj, j, li, lj, aqi, aqj, alpha_i, alpha_j, n_total_i, n_total_j, phi) * gain * lik
            line[t + 1 - lo] = p
            lik *= step_down
        lik = math.exp(slope - curve * (2.0 * anchor - 1.0))
        p = 1.0
        for t in range(anchor - 1, lo - 1, -1):
            p /= _prior_ratio(t, ni, nj, j, li, lj, aqi, aqj, alpha_i, alpha_j, n_total_i, n_total_j, phi) * gain * lik
            line[t - lo] = p
            lik /= step_down
        for t in range(hi - lo + 1):
            total += line[t]
    if not (total > 0.0 and total < np.inf):
        line[0] = 0.0
        best = 0.0
        value = 0.0
        for t in range(lo, hi):  # the log ratio of state t + 1 to state t
            value += math.log(_prior_ratio(t, ni, nj, j, li, lj, aqi, aqj, alpha_i, alpha_j, n_total_i, n_total_j, phi))
            value += ri if j < 0 else (ri - rj if lj != li else 0.0)
            value += _log_step(t, slope, curve, power, touched, n_touched, shift, y, values, rate)
            line[t + 1 - lo] = value
            if value > best:
                best = value
        total = _exp_relative(line, hi - lo + 1, best)
    return lo + _pick(line, hi - lo + 1, total, rng)


@njit(cache=True, nogil=True)
def _spread_move(
    i, lj, m, K, cells, values, y, rate, power, cq_ptr, cq_idx, cell_class, beta, leaf_group, order, shift, stamp,
    touched, tick, others, line, rng,
):  # fmt: skip
    """A Gibbs draw along n + t (m e_i - sum_{s in S} e_s), S: the m other categories of i's leaf of largest
    beta; with a sibling leaf ``lj`` >= 0, along n + t (m e_i - sum_S e_s - m e_j + sum_{S'} e_s'), j and S'
    the same categories in leaf lj.

    Cell i moves m at a time while m cells of its leaf give one each, so the leaf's total and every
    invariant of the leaf's class stay, and a rare cell can jump between 0 and a bump of m or more
    people, which no pair move crosses cheaply (a pair's partner would absorb it all in its own
    queries). The sibling form takes the m people from i's category in the sibling leaf and sends
    one person of each category of S back: both leaves keep their totals and the parent's count of
    every category stays, so a rare category's people pass between block groups unseen by the
    parent's queries. S is read from ``order`` (the group's categories by decreasing beta, fixed
    during the sweep), never from the cells. t is drawn from the exact conditional on a window of 5
    states holding t = 0 at a uniform offset: the prior by ratios of neighbouring states, the
    likelihood as a quadratic in t for Gaussian noise. Applies the draw to ``cells`` and ``values``
    and returns t (0: no move).
    """
    li = i // K
    ki = i - li * K
    g = leaf_group[li]
    r = 0
    for u in range(K):
        if r == m:
            break
        if order[g, u] != ki:
            others[r] = li * K + order[g, u]
            r += 1
    offset = _below(rng, 5)
    move = (lj - li) * K  # from a cell of leaf li to the same category of leaf lj
    c = cell_class[i]
    for r in range(m):
        if cell_class[others[r]] != c or (lj >= 0 and cell_class[others[r] + move] != c):
            return 0
    if lj >= 0 and cell_class[i + move] != c:
        return 0
    n_touched = _add_touched(i, m, cq_ptr, cq_idx, shift, stamp, touched, tick, 0)
    for r in range(m):
        n_touched = _add_touched(others[r], -1, cq_ptr, cq_idx, shift, stamp, touched, tick, n_touched)
    ni = cells[i]
    nj = cells[i + move] if lj >= 0 else 0
    lo, hi = -offset, 4 - offset
    low_i = -(ni // m)  # n_i + m t >= 0
    if low_i > lo:
        lo = low_i
    for r in range(m):
        if cells[others[r]] < hi:
            hi = cells[others[r]]
    if lj >= 0:
        n_touched = _add_touched(i + move, -m, cq_ptr, cq_idx, shift, stamp, touched, tick, n_touched)
        for r in range(m):
            n_touched = _add_touched(others[r] + move, 1, cq_ptr, cq_idx, shift, stamp, touched, tick, n_touched)
            if -cells[others[r] + move] > lo:
                lo = -cells[others[r] + move]
        if nj // m < hi:  # n_j - m t >= 0
            hi = nj // m
    if hi - lo < 1:
        return 0
    slope, curve, _ = _quadratic(touched, n_touched, shift, y, values, rate, ni)
    bi = beta[g, ki]
    gj = leaf_group[lj] if lj >= 0 else g
    bj = beta[gj, ki]
    value = 0.0  # the log conditional of state t relative to state lo, built upward from lo
    best = 0.0
    line[0] = 0.0
    for t in range(lo, hi):  # log ratio of state t + 1 to state t
        ratio = 1.0
        base = ni + m * t
        for s_ in range(m):
            ratio *= (base + s_ + bi) / (base + s_ + 1.0)
        for r in range(m):
            n = cells[others[r]] - t
            ratio *= n / (n - 1.0 + beta[g, others[r] - li * K])
        if lj >= 0:
            base = nj - m * t
            for s_ in range(m):
                ratio *= (base - s_) / (base - s_ - 1.0 + bj)
            for r in range(m):
                n = cells[others[r] + move] + t
                ratio *= (n + beta[gj, others[r] - li * K]) / (n + 1.0)
        value += math.log(ratio)
        value += _log_step(t, slope, curve, power, touched, n_touched, shift, y, values, rate)
        line[t + 1 - lo] = value
        if value > best:
            best = value
    total = _exp_relative(line, hi - lo + 1, best)
    d = lo + _pick(line, hi - lo + 1, total, rng)
    if d != 0:
        cells[i] += m * d
        for r in range(m):
            cells[others[r]] -= d
        if lj >= 0:
            cells[i + move] -= m * d
            for r in range(m):
                cells[others[r] + move] += d
        for u in range(n_touched):
            values[touched[u]] += d * shift[touched[u]]
    return d


@njit(cache=True, nogil=True)
def _sibling_leaf(li, leaf_parent, parent_ptr, parent_leaves, rng):
    """Another leaf of leaf li's parent, uniformly (-1 when li has no sibling; no random number used then)."""
    p0 = leaf_parent[li]
    m = parent_ptr[p0 + 1] - parent_ptr[p0]
    if m < 2:
        return -1
    l2 = parent_leaves[parent_ptr[p0] + _below(rng, m - 1)]
    if l2 == li:
        l2 = parent_leaves[parent_ptr[p0 + 1] - 1]
    return l2


@njit(cache=True, nogil=True)
def _partner(
    i, K, cell_class, class_ptr, class_cells, leaf_parent, leaf_group, parent_ptr, parent_leaves, weights, n_leaves,
    p_leaf, p_sibling, p_near, near, rng,
):  # fmt: skip
    """The partner j of cell i's paired move (-1: i moves alone; -2: no move this time), see census_sweeps."""
    c = cell_class[i]
    kind = _uniform(rng)
    if c < 0 and kind < 0.5:
        return -1  # a single move: no invariant holds this cell
    li = i // K
    if kind < p_leaf or (c < 0 and kind < 0.5 + p_leaf):
        if K < 2:
            return -2
        j = li * K + _weighted_other(weights[leaf_group[li]], i - li * K, rng)
    elif kind < p_leaf + p_sibling or c < 0:
        l2 = _sibling_leaf(li, leaf_parent, parent_ptr, parent_leaves, rng)  # the same category there
        if l2 < 0:
            return -2
        j = l2 * K + (i - li * K)
    else:
        size = class_ptr[c + 1] - class_ptr[c]
        if size < 2:
            return -2
        lj = -1
        if _uniform(rng) < p_near:  # a leaf at most ``near`` places away (in cache), if of i's class
            lj = li + 1 + _below(rng, near)
            if _uniform(rng) < 0.5:
                lj = li - 1 - _below(rng, near)
            if lj < 0 or lj >= n_leaves or cell_class[lj * K] != c:
                lj = -1
        j = -1
        if lj < 0:
            j = class_cells[class_ptr[c] + _below(rng, size - 1)]
            if j == i:
                j = class_cells[class_ptr[c + 1] - 1]
            lj = j // K
        if lj != li:  # another leaf of the class: its category by the weights (a leaf's cells share a class)
            j = lj * K + _weighted_other(weights[leaf_group[lj]], -1, rng)
    if cell_class[j] != c:
        return -2
    return j


@njit(cache=True, nogil=True)
def _record_tuning(cells, stats, k):
    """Add tuning sweep k's cells to the running sums (of x, x^2, x_t x_{t-1}), keeping the first and last x."""
    for c in range(cells.size):
        x = float(cells[c])
        stats[0, c] += x
        stats[1, c] += x * x
        if k > 0:
            stats[2, c] += x * stats[3, c]
        else:
            stats[4, c] = x
        stats[3, c] = x


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
    window,
    p_local,
    hyper_rounds,
    p_leaf,
    p_sibling,
    p_spread,
    spread_max,
    p_floor,
    p_near,
    near,
    spread_cells,
    extra,
    tune_stats,
    p_spread_sibling,
    peak,
):
    """Run sweeps ``first .. first + count - 1`` of one chain, keeping every ``thin``-th sweep after ``tune``.

    A sweep visits every cell 1 + ``extra[i]`` times. A visit: first, with probability ``p_spread`` for
    a ``spread_cells`` cell of a category with beta < 1, a spread move (m in 2..``spread_max``; with
    probability ``p_spread_sibling`` its sibling form, with a sibling leaf drawn uniformly); then a
    Gibbs draw along the line of a paired move (a partner j: another category of the same leaf, the
    same category of a sibling leaf, or a cell of another leaf of its invariant class, with
    probability ``p_near`` one at most ``near`` leaves away; categories by the group's share +
    ``p_floor``; j must share i's class) or, for a cell under no invariant, half the time along its
    own axis (``_line_draw``'s wide or local window, ``window`` and ``p_local``); then, when
    ``learn``, ``hyper_rounds`` of random-walk Metropolis on log phi, each parent's log mean size and
    each group's log beta_k one at a time, and once per sweep each group's alpha alone (every log beta_k
    shifted together; step sizes adapted during ``tune``). Over the second half
    of tuning, when ``tune_stats`` has a column per cell, each sweep's cells are added to its running
    sums (``_record_tuning``), from which the caller sets ``extra`` between tuning and sampling.
    ``log_phi`` is a one-element array; ``peak[0]`` keeps the largest cell stored in ``out_cells``, whose
    dtype the caller chose from a bound on the cells. Returns the sweeps run.
    """
    n_cells = cells.size
    n_leaves = n_cells // K
    n_groups = log_beta.shape[0]
    n_parents = log_mean.size
    tick = scratch_stamp.max() + 1
    line = np.empty(max(kmax + 1, 1024))
    others = np.empty(K, dtype=np.int64)
    scaled = np.empty(K)
    beta = np.exp(log_beta)
    beta_sum = np.empty(n_groups)
    for g in range(n_groups):
        beta_sum[g] = beta[g].sum()
    weights = np.empty((n_groups, K))
    order = np.empty((n_groups, K), dtype=np.int64)
    for sweep in range(first, first + count):
        for g in range(n_groups):  # partner weights and categories by share (both fixed during the sweep)
            for k in range(K):
                weights[g, k] = beta[g, k] / beta_sum[g] + p_floor
            order[g] = np.argsort(-beta[g])
        accepted = 0
        attempted = 0
        phi = math.exp(log_phi[0])
        for i in range(n_cells):
            li = i // K
            rare = beta[leaf_group[li], i - li * K] < 1.0
            for _visit in range(1 + extra[i]):
                if p_spread > 0.0 and K > 2 and spread_cells[i] and rare and _uniform(rng) < p_spread:
                    m = 2 + _below(rng, min(spread_max, K - 1) - 1)
                    lj = -1
                    if p_spread_sibling > 0.0 and _uniform(rng) < p_spread_sibling:
                        lj = _sibling_leaf(li, leaf_parent, parent_ptr, parent_leaves, rng)
                    tick += 1
                    _spread_move(
                        i, lj, m, K, cells, values, y, rate, power, cq_ptr, cq_idx, cell_class, beta, leaf_group,
                        order, scratch_shift, scratch_stamp, scratch_touched, tick, others, line, rng,
                    )  # fmt: skip
                j = _partner(
                    i, K, cell_class, class_ptr, class_cells, leaf_parent, leaf_group, parent_ptr, parent_leaves,
                    weights, n_leaves, p_leaf, p_sibling, p_near, near, rng,
                )  # fmt: skip
                if j < -1:
                    continue
                attempted += 1
                tick += 1
                n_touched = _touch(i, 1, j, -1, cq_ptr, cq_idx, scratch_shift, scratch_stamp, scratch_touched, tick)
                lj = -1 if j < 0 else j // K
                d = _line_draw(
                    i, j, li, lj, K, cells, leaf_total, values, y, rate, power, scratch_shift, scratch_touched,
                    n_touched, beta, beta_sum, leaf_group, leaf_parent, log_mean, phi, kmax, line, window, p_local, rng,
                )  # fmt: skip
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
        for _round in range(hyper_rounds if learn else 0):
            adapt = sweep < tune
            # phi
            new_log = log_phi[0] + steps[0] * _normal(rng)
            lr = _phi_change(leaf_total, leaf_parent, all_leaves, phi, math.exp(new_log), log_mean, -1, 0.0)
            lr += 0.5 * ((log_phi[0] - prior[2]) / prior[3]) ** 2 - 0.5 * ((new_log - prior[2]) / prior[3]) ** 2
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
                proposal = current + steps[1 + p] * _normal(rng)
                lr = _phi_change(leaf_total, leaf_parent, leaves, phi, phi, log_mean, p, proposal)
                lr += 0.5 * ((current - prior[4]) / prior[5]) ** 2 - 0.5 * ((proposal - prior[4]) / prior[5]) ** 2
                ok = lr >= 0.0 or _uniform(rng) < math.exp(lr)
                if ok:
                    log_mean[p] = proposal
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
                    lr += _beta_change(cells, leaf_total, K, leaves, k, beta[g, k], new_beta, beta_sum[g])
                    ok = lr >= 0.0 or _uniform(rng) < math.exp(lr)
                    if ok:
                        beta[g, k] = new_beta
                        beta_sum[g] = new_sum
                    else:
                        log_beta[g, k] = current
                    if adapt:
                        steps[slot] *= math.exp(0.05 * ((1.0 if ok else 0.0) - 0.3))
        if learn:  # each group's alpha alone: all its beta_k scaled together, its shares q kept
            adapt = sweep < tune
            for g in range(n_groups):
                slot = 1 + n_parents + n_groups * K + g
                shift = steps[slot] * _normal(rng)
                for k in range(K):
                    scaled[k] = log_beta[g, k] + shift
                new_sum = beta_sum[g] * math.exp(shift)
                lr = _beta_prior(scaled, new_sum, prior) - _beta_prior(log_beta[g], beta_sum[g], prior)
                lr += _scale_change(cells, leaf_total, K, group_leaves[group_ptr[g] : group_ptr[g + 1]], beta[g], shift)
                ok = lr >= 0.0 or _uniform(rng) < math.exp(lr)
                if ok:
                    for k in range(K):
                        log_beta[g, k] = scaled[k]
                        beta[g, k] = math.exp(scaled[k])
                    beta_sum[g] = beta[g].sum()
                if adapt:
                    steps[slot] *= math.exp(0.05 * ((1.0 if ok else 0.0) - 0.3))
        if tune_stats.shape[1] == n_cells and tune // 2 <= sweep < tune:
            _record_tuning(cells, tune_stats, sweep - tune // 2)
        done = sweep - tune
        if done >= 0 and (done + 1) % thin == 0:
            row = done // thin
            for c in range(n_cells):
                out_cells[row, c] = cells[c]
                if cells[c] > peak[0]:
                    peak[0] = cells[c]
            out_phi[row] = log_phi[0]
            for p in range(n_parents):
                out_mean[row, p] = log_mean[p]
            for g in range(n_groups):
                for k in range(K):
                    out_beta[row, g, k] = log_beta[g, k]
            out_accept[row] = accepted / max(attempted, 1)
    return count
