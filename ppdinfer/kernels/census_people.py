"""Compiled sweeps of the person-move sampler (ppdinfer.census.people): moves of people, residual cache, hyperparameters.

The cells are a leaf-slot store (:mod:`ppdinfer.kernels.leaf_slots`: per leaf, its non-zero cells in order with a
Fenwick tree over them), so a person of a leaf is drawn uniformly (its cell with probability n_k / N) in
O(log cap) and a count read in O(log cap). A move takes t people of one cell to another cell of the same leaf, to
the same cell of another leaf, or (leaves under no invariant) in or out of a leaf; its likelihood ratio reads, for
each (level, query) block, the one or two released values whose sums change (``offset + ancestor row * values +
group of the cell``) against a cached residual y - v: ``resid`` = (narrow, wide, refused), the residuals of
blocks whose values start far inside int16 in the narrow array (half the memory of a state's 900 million values), the
others in the wide one, a move that would take a narrow residual out of its type refused and counted. The cost of
a move is O(blocks + log K) (a cell new to its leaf: + O(its slots)), of a sweep O(people + non-zero cells): empty
cells are never stored or visited. A sweep that finds its allocation range short of one move's room stops before the
move and is resumed where it stopped.

The random numbers are those of :mod:`ppdinfer.kernels.census` (a xoshiro256** stream per chain).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from .census import _below, _nb_change, _normal, _uniform
from .leaf_slots import add_people, count_of, find_person, group_counts
from .special import log_gamma_step

#: A turn on one axis only (the ``second`` of :func:`_turn`: exchanges' and relocations' turns).
ONE_AXIS = (0.0, -1)


@njit(cache=True, nogil=True)
def _n(cells, leaf, k):
    """The people of cell k of ``leaf`` (``cells``: a leaf-slot store, P and its allocation range)."""
    return count_of(cells[0], leaf, k, cells[1])


@njit(cache=True, nogil=True)
def _find(cells, leaf, target):
    """The cell of person number ``target`` (0 <= target < the leaf's total)."""
    return find_person(cells[0], leaf, target)


@njit(cache=True, nogil=True)
def _cell_change(n, beta, t):
    """Change of lgamma(n + beta) - lgamma(n + 1) (a cell's Dirichlet-multinomial term) when n becomes n + t."""
    return log_gamma_step(n + beta, t) - log_gamma_step(n + 1.0, t)


@njit(cache=True, nogil=True)
def _total_change(N, t, phi, m, alpha, vacant):
    """Change of lgamma(N + phi) + N log(m / (phi + m)) - lgamma(N + alpha) (a leaf's total terms), N -> N + t
    (-inf where the mean m or the Dirichlet total alpha is 0: the leaf holds nobody), and where the leaf stops or
    starts being empty, the zero-inflation's term (:func:`_filled_odds`)."""
    if m <= 0.0 or alpha <= 0.0:
        return -np.inf
    out = log_gamma_step(N + phi, t) - t * math.log1p(phi / m) - log_gamma_step(N + alpha, t)
    if vacant > 0.0 and t != 0 and (N == 0 or N + t == 0):
        z = _filled_odds(m, phi, vacant)
        out += z if N == 0 else -z
    return out


@njit(cache=True, nogil=True)
def _empty_log(m, phi, vacant):
    """log P(N = 0) of the zero-inflated negative binomial: log(v + (1 - v) NB(0; mean m, size phi))."""
    return np.logaddexp(math.log(vacant), math.log1p(-vacant) - phi * math.log1p(m / phi))


@njit(cache=True, nogil=True)
def _filled_odds(m, phi, vacant):
    """log((1 - v) NB(0) / (v + (1 - v) NB(0))): what a leaf's log prior gains, beyond the negative binomial's
    change, when it stops being empty (v the chance that a leaf with a positive mean is empty whatever its mean)."""
    return math.log1p(-vacant) - phi * math.log1p(m / phi) - _empty_log(m, phi, vacant)


@njit(cache=True, nogil=True)
def _zinb_change(n, phi, m, new_phi, new_m, vacant):
    """The change of the zero-inflated negative binomial log pmf of n when (m, phi) becomes (new_m, new_phi)."""
    if vacant > 0.0 and n == 0:
        return _empty_log(new_m, new_phi, vacant) - _empty_log(m, phi, vacant)
    return _nb_change(n, phi, m, new_phi, new_m)


@njit(cache=True, nogil=True)
def _leaf_alpha(leaf, log_alpha, leaf_group, composition):
    """The Dirichlet total of the cells ``leaf`` may hold: alpha_g times their share (exactly alpha_g where it may hold
    every class of cells). ``composition``: (leaf kind, kinds' open classes, open share per group and kind, classes'
    pointers into cats, each cat's class)."""
    g = leaf_group[leaf]
    return math.exp(log_alpha[g]) * composition[2][g, composition[0][leaf]]


@njit(cache=True, nogil=True)
def _loss(r, power):
    return float(r * r) if power == 2 else float(abs(r))


@njit(cache=True, nogil=True)
def _code(blk_off, blk_nv, b, u, g):
    """The residual code of value g of unit u of block b: its position in the narrow array (>= 0), or -1 - its position
    in the wide one (a wide block's offset is stored as -1 - its offset there)."""
    off = blk_off[b]
    if off >= 0:
        return off + u * blk_nv[b] + g
    return off - u * blk_nv[b] - g


@njit(cache=True, nogil=True)
def _value(resid, code):
    """The residual of ``code`` in the store ``resid`` = (narrow, wide, refused)."""
    if code >= 0:
        return np.int64(resid[0][code])
    return np.int64(resid[1][-1 - code])


@njit(cache=True, nogil=True)
def _shift(resid, code, d):
    """Residual ``code`` plus d (a narrow one wraps if it leaves its type: only in a compound move that
    :func:`_fits` has refused, whose undoing wraps it back)."""
    if code >= 0:
        resid[0][code] += d
    else:
        resid[1][-1 - code] += d


@njit(cache=True, nogil=True)
def _fits(resid, code, r):
    """Whether residual value r may be held at ``code``; else the move is refused and counted in resid[2] (such a
    state lies 32,767 persons from a measurement; the sampler warns if any move was refused)."""
    if code < 0 or abs(r) <= np.iinfo(resid[0].dtype).max:
        return True
    resid[2][0] += 1
    return False


@njit(cache=True, nogil=True)
def _lik_change(lf, kf, lt, kt, t, resid, rates, scales, blk_scale, power, blk_level, blk_off, blk_nv, blk_rate, blk_groups, anc,
                touched, dr):  # fmt: skip
    """The log-likelihood change of moving t people from cell (lf, kf) to (lt, kt) (lf < 0: they arrive, lt < 0:
    they leave), and the number of residuals it changes (their indices and changes in touched, dr)."""
    n = 0
    out = 0.0
    for b in range(blk_level.size):
        lv = blk_level[b]
        gf = -1
        gt = -1
        uf = -1
        ut = -1
        if lf >= 0:
            gf = blk_groups[b, kf]
            uf = anc[lv, lf]
        if lt >= 0:
            gt = blk_groups[b, kt]
            ut = anc[lv, lt]
        if gf == gt and uf == ut:
            continue
        if gf >= 0:
            rate = rates[blk_rate[b] + uf] * scales[blk_scale[b] + gf]
            if rate > 0.0:
                idx = _code(blk_off, blk_nv, b, uf, gf)
                r = _value(resid, idx)
                out -= rate * (_loss(r + t, power) - _loss(r, power)) if _fits(resid, idx, r + t) else np.inf
                touched[n] = idx
                dr[n] = t
                n += 1
        if gt >= 0:
            rate = rates[blk_rate[b] + ut] * scales[blk_scale[b] + gt]
            if rate > 0.0:
                idx = _code(blk_off, blk_nv, b, ut, gt)
                r = _value(resid, idx)
                out -= rate * (_loss(r - t, power) - _loss(r, power)) if _fits(resid, idx, r - t) else np.inf
                touched[n] = idx
                dr[n] = -t
                n += 1
    return out, n


@njit(cache=True, nogil=True)
def _apply(lf, kf, lt, kt, t, cells, totals, rec, cmap, resid, touched, dr, n):
    if lf >= 0:
        add_people(cells[0], lf, kf, -t, cells[1], cells[2])
        totals[lf] -= t
        rec[lf, cmap[kf]] -= t
    if lt >= 0:
        add_people(cells[0], lt, kt, t, cells[1], cells[2])
        totals[lt] += t
        rec[lt, cmap[kt]] += t
    for s in range(n):
        _shift(resid, touched[s], dr[s])


@njit(cache=True, nogil=True)
def _destination(cum, cats, rng):
    """An allowed cell drawn by the cumulative weights ``cum`` (one group's row), by bisection."""
    u = _uniform(rng) * cum[cum.size - 1]
    lo, hi = 0, cum.size - 1
    while lo < hi:
        mid = (lo + hi) // 2
        if cum[mid] > u:
            hi = mid
        else:
            lo = mid + 1
    return cats[lo]


@njit(cache=True, nogil=True)
def _jump(rng, p_jump, max_jump):
    if max_jump > 1 and _uniform(rng) < p_jump:
        return 2 + _below(rng, max_jump - 1)
    return 1


@njit(cache=True, nogil=True)
def _accept(lr, rng):
    return lr >= 0.0 or _uniform(rng) < math.exp(lr)


@njit(cache=True, nogil=True)
def _other(a, b, skip, rng):
    """A leaf in [a, b) other than ``skip`` (b - a >= 2), uniformly."""
    out = a + _below(rng, b - a - 1)
    return out + 1 if out >= skip else out


@njit(cache=True, nogil=True)
def _bound_step(lf, kf, lt, kt, t, anc, bnd, bval, bidx, bdelta, nb):
    """Apply to the bounded values ``bval`` the change of moving t people from (lf, kf) to (lt, kt) (lf or lt < 0:
    none), appending the indices and changes to bidx, bdelta from position nb; returns the new count."""
    level, off, nv, groups = bnd[0], bnd[1], bnd[2], bnd[3]
    for b in range(level.size):
        lv = level[b]
        gf = groups[b, kf] if lf >= 0 else -1
        gt = groups[b, kt] if lt >= 0 else -1
        uf = anc[lv, lf] if lf >= 0 else -1
        ut = anc[lv, lt] if lt >= 0 else -1
        if gf == gt and uf == ut:
            continue
        if gf >= 0:
            idx = off[b] + uf * nv[b] + gf
            bval[idx] -= t
            bidx[nb], bdelta[nb] = idx, -t
            nb += 1
        if gt >= 0:
            idx = off[b] + ut * nv[b] + gt
            bval[idx] += t
            bidx[nb], bdelta[nb] = idx, t
            nb += 1
    return nb


@njit(cache=True, nogil=True)
def _bounds_hold(bval, bidx, nb, bnd):
    """Whether every bounded value touched (bidx[:nb]) is within its bounds."""
    lo, hi = bnd[4], bnd[5]
    for s in range(nb):
        v = bval[bidx[s]]
        if v < lo[bidx[s]] or v > hi[bidx[s]]:
            return False
    return True


@njit(cache=True, nogil=True)
def _bounds_revert(bval, bidx, bdelta, nb):
    for s in range(nb - 1, -1, -1):
        bval[bidx[s]] -= bdelta[s]


@njit(cache=True, nogil=True)
def _try_move(lr, lf, kf, lt, kt, t, cells, totals, rec, cmap, resid, rates, scales, blk_scale, power, blk_level,
              blk_off, blk_nv, blk_rate, blk_groups, anc, bnd, bval, bidx, bdelta, touched, dr, rng):  # fmt: skip
    """A simple move of t people from (lf, kf) to (lt, kt) whose log prior and proposal ratio is ``lr``: refused
    off the bounds, else accepted with the likelihood ratio; returns 1 if made."""
    nb = _bound_step(lf, kf, lt, kt, t, anc, bnd, bval, bidx, bdelta, 0)
    if not _bounds_hold(bval, bidx, nb, bnd):
        _bounds_revert(bval, bidx, bdelta, nb)
        return 0
    lik, n = _lik_change(lf, kf, lt, kt, t, resid, rates, scales, blk_scale, power, blk_level, blk_off, blk_nv,
                         blk_rate, blk_groups, anc, touched, dr)  # fmt: skip
    if _accept(lr + lik, rng):
        _apply(lf, kf, lt, kt, t, cells, totals, rec, cmap, resid, touched, dr, n)
        return 1
    _bounds_revert(bval, bidx, bdelta, nb)
    return 0


@njit(cache=True, nogil=True)
def _step(lf, kf, lt, kt, t, cells, totals, rec, cmap, resid, rates, scales, blk_scale, power, blk_level, blk_off,
          blk_nv, blk_rate, blk_groups, anc, beta, leaf_group, touched, dr):  # fmt: skip
    """Make one sub-move of a compound move (t people from cell (lf, kf) to (lt, kt)) and return its change of the
    cells' log prior terms and of the log likelihood (a compound move whose leaves keep their totals sums these)."""
    lr = _cell_change(_n(cells, lf, kf), beta[leaf_group[lf], kf], -t)
    lr += _cell_change(_n(cells, lt, kt), beta[leaf_group[lt], kt], t)
    lik, n = _lik_change(lf, kf, lt, kt, t, resid, rates, scales, blk_scale, power, blk_level, blk_off, blk_nv,
                         blk_rate, blk_groups, anc, touched, dr)  # fmt: skip
    _apply(lf, kf, lt, kt, t, cells, totals, rec, cmap, resid, touched, dr, n)
    return lr + lik


@njit(cache=True, nogil=True)
def _available(cells, leaf, picks, n, skip):
    """Whether cells picks[:n] of ``leaf`` (with repeats) each hold a person for every time drawn, none ``skip``."""
    for s in range(n):
        if picks[s] == skip:
            return False
        times = 0
        for r in range(n):
            if picks[r] == picks[s]:
                times += 1
        if _n(cells, leaf, picks[s]) < times:
            return False
    return True


@njit(cache=True, nogil=True)
def _bump_move(leaf, other, g, bump_max, cells, totals, rec, cmap, resid, rates, scales, blk_scale, power,
               blk_level, blk_off, blk_nv, blk_rate, blk_groups, anc, beta, leaf_group, cum, cats, picks, bnd, bval, bidx,
               bdelta, touched, dr, rng):  # fmt: skip
    """A rare category's bump moved whole, its place taken by one person of each of n cells drawn by group g's shares.

    With ``other`` >= 0 (a *bump trade*), a person of one leaf (``leaf`` or ``other``, by a coin) is drawn
    uniformly; all n (1..bump_max) people of their cell i move to i, empty, in the other leaf, and one person of
    each of n cells j_s drawn by the shares comes back: both totals stay, and the reverse is the same move from the
    other side (proposal ratio N_src / N_dst: a person of cell i drawn there). With ``other`` < 0 (a *spread*),
    inside ``leaf``: a coin either scatters the n people of a person's cell i into n drawn cells (one each), or
    gathers one person of each of m drawn cells (m uniform in 1..bump_max) into a cell i, empty, drawn uniformly
    among the allowed ones; the reverse is the other half (proposal ratio N / (n Ka bump_max) or its inverse).
    Returns 1 if accepted."""
    gather = False
    if other >= 0:
        src, dst = (leaf, other) if _uniform(rng) < 0.5 else (other, leaf)
        Ns = totals[src]
        if Ns == 0:
            return 0
        i = _find(cells, src, _below(rng, Ns))
        n = _n(cells, src, i)
        if n > bump_max or _n(cells, dst, i) != 0 or totals[dst] < n:
            return 0
        lr = math.log(Ns) - math.log(totals[dst])
    else:
        src = dst = leaf
        N = totals[leaf]
        gather = _uniform(rng) < 0.5
        if gather:
            i = cats[_below(rng, cats.size)]
            n = 1 + _below(rng, bump_max)
            if _n(cells, leaf, i) != 0 or N < n:
                return 0
            lr = math.log(n * cats.size * bump_max) - math.log(N)
        else:
            if N == 0:
                return 0
            i = _find(cells, leaf, _below(rng, N))
            n = _n(cells, leaf, i)
            if n > bump_max:
                return 0
            lr = math.log(N) - math.log(n * cats.size * bump_max)
    for s in range(n):
        picks[s] = _destination(cum[g], cats, rng)
    give = dst if other >= 0 or gather else -1  # the leaf whose drawn cells give a person each
    if give >= 0 and not _available(cells, give, picks, n, i):
        return 0
    if give < 0:
        for s in range(n):
            if picks[s] == i:
                return 0
    nb = 0
    if other >= 0:
        nb = _bound_step(src, i, dst, i, n, anc, bnd, bval, bidx, bdelta, nb)
        lr += _step(src, i, dst, i, n, cells, totals, rec, cmap, resid, rates, scales, blk_scale, power, blk_level,
                    blk_off, blk_nv, blk_rate, blk_groups, anc, beta, leaf_group, touched, dr)  # fmt: skip
    for s in range(n):
        j = picks[s]
        a, ka, b, kb = (dst, j, src, j) if other >= 0 else ((leaf, j, leaf, i) if gather else (leaf, i, leaf, j))
        nb = _bound_step(a, ka, b, kb, 1, anc, bnd, bval, bidx, bdelta, nb)
        lr += _step(a, ka, b, kb, 1, cells, totals, rec, cmap, resid, rates, scales, blk_scale, power, blk_level,
                    blk_off, blk_nv, blk_rate, blk_groups, anc, beta, leaf_group, touched, dr)  # fmt: skip
    if _bounds_hold(bval, bidx, nb, bnd) and _accept(lr, rng):
        return 1
    _bounds_revert(bval, bidx, bdelta, nb)
    for s in range(n - 1, -1, -1):  # undo, last first
        j = picks[s]
        a, ka, b, kb = (dst, j, src, j) if other >= 0 else ((leaf, j, leaf, i) if gather else (leaf, i, leaf, j))
        _step(b, kb, a, ka, 1, cells, totals, rec, cmap, resid, rates, scales, blk_scale, power, blk_level,
              blk_off, blk_nv, blk_rate, blk_groups, anc, beta, leaf_group, touched, dr)  # fmt: skip
    if other >= 0:
        _step(dst, i, src, i, n, cells, totals, rec, cmap, resid, rates, scales, blk_scale, power, blk_level,
              blk_off, blk_nv, blk_rate, blk_groups, anc, beta, leaf_group, touched, dr)  # fmt: skip
    return 0


@njit(cache=True, nogil=True)
def _line_terms(a, ka, b, kb, resid, rates, scales, blk_scale, blk_level, blk_off, blk_nv, blk_rate, blk_groups, anc,
                touched, sign, weight):  # fmt: skip
    """The released values whose residuals change when people of cell ka of leaf a pass to cell kb of leaf b: their
    indices, the sign of the change (+1: the residual grows by t) and their rates; returns how many."""
    n = 0
    for blk in range(blk_level.size):
        lv = blk_level[blk]
        ga, gb = blk_groups[blk, ka], blk_groups[blk, kb]
        ua, ub = anc[lv, a], anc[lv, b]
        if ga == gb and ua == ub:
            continue
        for u, g, sg in ((ua, ga, 1), (ub, gb, -1)):
            if g < 0:
                continue
            rate = rates[blk_rate[blk] + u] * scales[blk_scale[blk] + g]
            if rate > 0.0:
                touched[n] = _code(blk_off, blk_nv, blk, u, g)
                sign[n] = sg
                weight[n] = rate
                n += 1
    return n


@njit(cache=True, nogil=True)
def _line_bounds(a, ka, b, kb, anc, bnd, bval, lo_t, hi_t):
    """The range [lo_t, hi_t] of t (people of cell ka of leaf a to cell kb of leaf b; negative: from b to a) that the
    bounds allow, narrowed from the given one."""
    level, off, nv, groups, lower, upper = bnd[0], bnd[1], bnd[2], bnd[3], bnd[4], bnd[5]
    for blk in range(level.size):
        lv = level[blk]
        ga, gb = groups[blk, ka], groups[blk, kb]
        ua, ub = anc[lv, a], anc[lv, b]
        if ga == gb and ua == ub:
            continue
        if ga >= 0:  # value at a: bval[ia] - t in [lower, upper]
            ia = off[blk] + ua * nv[blk] + ga
            lo_t, hi_t = max(lo_t, bval[ia] - upper[ia]), min(hi_t, bval[ia] - lower[ia])
        if gb >= 0:  # at b: bval[ib] + t
            ib = off[blk] + ub * nv[blk] + gb
            lo_t, hi_t = max(lo_t, lower[ib] - bval[ib]), min(hi_t, upper[ib] - bval[ib])
    return lo_t, hi_t


@njit(cache=True, nogil=True)
def _line_move(a, b, window, cells, totals, rec, cmap, resid, rates, scales, blk_scale, power, blk_level, blk_off,
               blk_nv, blk_rate, blk_groups, anc, beta, leaf_group, mu, log_alpha, composition, phi, vacant, bnd, bval, bidx,
               bdelta, touched, dr, sign, weight, logp, p_turn, turn_axis, second, axes, strides, logw, rng):  # fmt: skip
    """People pass between cell ka of leaf a and cell kb of leaf b by a draw from their exact conditional along the
    line (n_a,ka - t, n_b,kb + t) on a window of ``window`` + 1 values of t placed at random around t = 0 (every
    state of a window would place it with the same chance), then a Metropolis-Hastings correction for the
    state-dependent choice of the pair: a person drawn in a or b, by a coin, gives one cell; the other is, with
    probability ``p_turn``, a turn of it (:func:`_turn`, on a second axis too by ``second``: e.g. a facility's people
    and a household sibling's of the same age and race trade places as the measurements allow), else, or where the
    turn finds no level open, the same cell. Accepted with sel(t) / sel(0), sel(t) = n_a,ka(t) / N_a(t) w_a +
    n_b,kb(t) / N_b(t) w_b, w the chance of the pair's other cell from that side. Returns 1 if people moved."""
    side, other = (a, b) if _uniform(rng) < 0.5 else (b, a)
    if totals[side] == 0:
        return 0
    k = _find(cells, side, _below(rng, totals[side]))
    ka, kb, wa, wb = k, k, 1.0, 1.0
    j = -1
    if p_turn > 0.0 and _uniform(rng) < p_turn:
        j, forward, back = _turn(k, side, other, axes, strides, turn_axis, second, anc, bnd, logw, leaf_group, rng)
    if j >= 0:
        if side == a:
            kb, wa, wb = j, 1.0 / forward, 1.0 / back
        else:
            ka, wa, wb = j, 1.0 / back, 1.0 / forward
    elif p_turn > 0.0:  # the same cell, by the coin or a turn that found no level: the chance of that from each side
        wa = 1.0 - p_turn + p_turn * _turn_fails(k, b, axes, strides, turn_axis, second, anc, bnd, logw, leaf_group)
        wb = 1.0 - p_turn + p_turn * _turn_fails(k, a, axes, strides, turn_axis, second, anc, bnd, logw, leaf_group)
    na, nb_, Na, Nb = _n(cells, a, ka), _n(cells, b, kb), totals[a], totals[b]
    offset = _below(rng, window + 1)
    lo_t, hi_t = max(-offset, -nb_), min(window - offset, na)
    lo_t, hi_t = _line_bounds(a, ka, b, kb, anc, bnd, bval, lo_t, hi_t)
    if lo_t >= hi_t:
        return 0
    n = _line_terms(a, ka, b, kb, resid, rates, scales, blk_scale, blk_level, blk_off, blk_nv, blk_rate, blk_groups,
                    anc, touched, sign, weight)  # fmt: skip
    ga, gb = leaf_group[a], leaf_group[b]
    alpha_a = _leaf_alpha(a, log_alpha, leaf_group, composition)
    alpha_b = _leaf_alpha(b, log_alpha, leaf_group, composition)
    top = -np.inf
    for t in range(lo_t, hi_t + 1):
        lp = 0.0
        if t != 0:
            lp = _cell_change(na, beta[ga, ka], -t) + _cell_change(nb_, beta[gb, kb], t)
            lp += _total_change(Na, -t, phi, mu[a], alpha_a, vacant) + _total_change(Nb, t, phi, mu[b], alpha_b, vacant)
            for s in range(n):
                r = _value(resid, touched[s])
                if _fits(resid, touched[s], r + sign[s] * t):
                    lp -= weight[s] * (_loss(r + sign[s] * t, power) - _loss(r, power))
                else:
                    lp = -np.inf
        logp[t - lo_t] = lp
        top = max(top, lp)
    total = 0.0
    for t in range(lo_t, hi_t + 1):
        logp[t - lo_t] = math.exp(logp[t - lo_t] - top)
        total += logp[t - lo_t]
    u = _uniform(rng) * total
    pick = hi_t
    for t in range(lo_t, hi_t + 1):
        u -= logp[t - lo_t]
        if u < 0.0:
            pick = t
            break
    if pick == 0:
        return 0
    sel0 = (na / Na * wa if Na > 0 else 0.0) + (nb_ / Nb * wb if Nb > 0 else 0.0)
    sel1 = (na - pick) / (Na - pick) * wa if Na > pick else 0.0
    sel1 += (nb_ + pick) / (Nb + pick) * wb if Nb + pick > 0 else 0.0
    if not _accept(math.log(sel1) - math.log(sel0) if sel1 > 0.0 else -np.inf, rng):
        return 0
    src, ks, dst, kd, m = (a, ka, b, kb, pick) if pick > 0 else (b, kb, a, ka, -pick)
    _bound_step(src, ks, dst, kd, m, anc, bnd, bval, bidx, bdelta, 0)
    _, nr = _lik_change(src, ks, dst, kd, m, resid, rates, scales, blk_scale, power, blk_level, blk_off, blk_nv,
                          blk_rate, blk_groups, anc, touched, dr)  # fmt: skip
    _apply(src, ks, dst, kd, m, cells, totals, rec, cmap, resid, touched, dr, nr)
    return 1


@njit(cache=True, nogil=True)
def _relocation(a, b, cells, totals, rec, cmap, resid, rates, scales, blk_scale, power, blk_level, blk_off, blk_nv,
                blk_rate, blk_groups, anc, beta, leaf_group, mu, log_alpha, composition, phi, vacant, bnd, bval, bidx,
                bdelta, touched, dr, p_turn, turn_axis, axes, strides, logw, rng):  # fmt: skip
    """A *relocation*: all n people of a drawn person's cell i of one leaf (a or b, by a coin) pass to cell j, empty,
    of the other, so both totals move by n at once (a household-like cluster changing block): j = i, or with
    probability ``p_turn`` a turn of i (:func:`_turn`, whose proposal ratio it adds). The reverse is the same move
    from the other side: proposal ratio N_src / (N_dst + n). Returns 1 if accepted."""
    src, dst = (a, b) if _uniform(rng) < 0.5 else (b, a)
    Ns, Nd = totals[src], totals[dst]
    if Ns == 0:
        return 0
    i = _find(cells, src, _below(rng, Ns))
    j, lr = i, 0.0
    if _uniform(rng) < p_turn:
        j, forward, back = _turn(i, src, dst, axes, strides, turn_axis, ONE_AXIS, anc, bnd, logw, leaf_group, rng)
        if j < 0:
            return 0
        lr = math.log(forward) - math.log(back)
    if _n(cells, dst, j) != 0:
        return 0
    n = _n(cells, src, i)
    lr += _total_change(Ns, -n, phi, mu[src], _leaf_alpha(src, log_alpha, leaf_group, composition), vacant)
    lr += _total_change(Nd, n, phi, mu[dst], _leaf_alpha(dst, log_alpha, leaf_group, composition), vacant)
    if lr == -np.inf:
        return 0
    lr += _cell_change(n, beta[leaf_group[src], i], -n) + _cell_change(0, beta[leaf_group[dst], j], n)
    lr += math.log(Ns) - math.log(Nd + n)
    return _try_move(lr, src, i, dst, j, n, cells, totals, rec, cmap, resid, rates, scales, blk_scale, power,
                     blk_level, blk_off, blk_nv, blk_rate, blk_groups, anc, bnd, bval, bidx, bdelta, touched, dr, rng)  # fmt: skip


@njit(cache=True, nogil=True)
def _other_level(k, axis, axes, strides, rng):
    """Cell k with axis ``axis`` moved to another of its levels, drawn uniformly (a symmetric proposal)."""
    level = (k // strides[axis]) % axes[axis]
    other = _below(rng, axes[axis] - 1)
    if other >= level:
        other += 1
    return k + (other - level) * strides[axis]


@njit(cache=True, nogil=True)
def _random_axis(axes, rng, skip=-1):
    """An axis other than ``skip`` drawn uniformly among those with two or more levels (-1 where there is none)."""
    count = 0
    for a in range(axes.size):
        if axes[a] > 1 and a != skip:
            count += 1
    if count == 0:
        return -1
    pick = _below(rng, count)
    for a in range(axes.size):
        if axes[a] > 1 and a != skip:
            if pick == 0:
                return a
            pick -= 1
    return -1


@njit(cache=True, nogil=True)
def _neighbour(k, axes, strides, rng):
    """Cell k with one axis (drawn uniformly among those with two or more levels) moved to another of its levels,
    drawn uniformly: a symmetric proposal (-1 where no axis has two levels)."""
    axis = _random_axis(axes, rng)
    return -1 if axis < 0 else _other_level(k, axis, axes, strides, rng)


@njit(cache=True, nogil=True)
def _open(leaf, k, anc, bnd, logw, leaf_group):
    """Whether cell k of ``leaf`` may hold anybody: not a structural zero, and no bound caps its group at 0 in a unit
    holding the leaf (a cell that holds people is open)."""
    if logw[leaf_group[leaf], k] == -np.inf:
        return False
    level, off, nv, groups, hi = bnd[0], bnd[1], bnd[2], bnd[3], bnd[5]
    for b in range(level.size):
        g = groups[b, k]
        if g >= 0 and hi[off[b] + anc[level[b], leaf] * nv[b] + g] <= 0:
            return False
    return True


@njit(cache=True, nogil=True)
def _open_level(leaf, k, axis, axis2, axes, strides, anc, bnd, logw, leaf_group, pick):
    """The cells k with axis ``axis`` (and, where ``axis2`` >= 0, axis ``axis2`` too) at another level open in
    ``leaf``: their count (``pick`` < 0), else the ``pick``-th of them."""
    level = (k // strides[axis]) % axes[axis]
    level2, levels2, stride2 = -1, 1, 0  # no second axis: one pass of w, adding nothing
    if axis2 >= 0:
        level2, levels2, stride2 = (k // strides[axis2]) % axes[axis2], axes[axis2], strides[axis2]
    count = 0
    for v in range(axes[axis]):
        if v == level:
            continue
        for w in range(levels2):
            if w == level2:
                continue
            j = k + (v - level) * strides[axis] + (w - level2) * stride2
            if _open(leaf, j, anc, bnd, logw, leaf_group):
                if count == pick:
                    return j
                count += 1
    return count


@njit(cache=True, nogil=True)
def _second_axis(axes, axis, second_axis, rng):
    """A two-axis turn's second axis: ``second_axis`` where it is >= 0 and not ``axis``, else one drawn uniformly
    among the others with two levels or more (-1 where it has fewer, or there is none)."""
    if second_axis >= 0 and second_axis != axis:
        return second_axis if axes[second_axis] >= 2 else -1
    return _random_axis(axes, rng, axis)


@njit(cache=True, nogil=True)
def _turn(k, src, dst, axes, strides, turn_axis, second, anc, bnd, logw, leaf_group, rng):
    """A *turn* of people of cell k of leaf ``src`` on their way to leaf ``dst``: the level of axis ``turn_axis``
    (or, where it is < 0, of an axis drawn uniformly among those with two levels or more) changes; with probability
    ``second[0]`` the level of a second axis too (:func:`_second_axis` of ``second[1]``: e.g. a facility's adults
    become a household's children). The new cell is drawn uniformly among those so changed that are open in ``dst``
    (:func:`_open`: e.g. from a facility's cell to the household cell of the same age and race, for a block with
    housing units and no such facility). Returns the cell, the number A_dst of cells it was drawn among and the
    number A_src among which the reverse turn draws k (the proposal ratio is A_dst / A_src); (-1, 0, 0) where
    ``dst`` has none open."""
    axis = _random_axis(axes, rng) if turn_axis < 0 else turn_axis
    if axis < 0 or axes[axis] < 2:
        return -1, 0, 0
    axis2 = -1
    if second[0] > 0.0 and _uniform(rng) < second[0]:
        axis2 = _second_axis(axes, axis, second[1], rng)
        if axis2 < 0:
            return -1, 0, 0
    forward = _open_level(dst, k, axis, axis2, axes, strides, anc, bnd, logw, leaf_group, -1)
    if forward == 0:
        return -1, 0, 0
    j = _open_level(dst, k, axis, axis2, axes, strides, anc, bnd, logw, leaf_group, _below(rng, forward))
    back = _open_level(src, j, axis, axis2, axes, strides, anc, bnd, logw, leaf_group, -1)  # k among them
    return j, forward, back


@njit(cache=True, nogil=True)
def _turn_fails(k, dst, axes, strides, turn_axis, second, anc, bnd, logw, leaf_group):
    """The chance that :func:`_turn` of cell k into leaf ``dst`` finds no cell open (over the axes, and second axes,
    it may draw)."""
    p_second, second_axis = second
    count, failed = 0, 0.0
    for axis in range(axes.size):
        if (turn_axis < 0 or axis == turn_axis) and axes[axis] >= 2:
            count += 1
            fails = 1.0 if _open_level(dst, k, axis, -1, axes, strides, anc, bnd, logw, leaf_group, -1) == 0 else 0.0
            if p_second > 0.0:
                fixed, drawn, fails2 = second_axis >= 0 and second_axis != axis, 0, 0
                for b in range(axes.size):
                    if b != axis and axes[b] >= 2 and (not fixed or b == second_axis):
                        drawn += 1
                        fails2 += _open_level(dst, k, axis, b, axes, strides, anc, bnd, logw, leaf_group, -1) == 0
                fails = (1.0 - p_second) * fails + p_second * (fails2 / drawn if drawn > 0 else 1.0)
            failed += fails
    return 1.0 if count == 0 else failed / count


@njit(cache=True, nogil=True)
def _partner_leaf(leaf, lo, hi, a_sib, b_sib, near, p_sibling, p_near, rng):
    """Another leaf of [lo, hi): a sibling, one at most ``near`` places away, or any; -1 where there is none."""
    u = _uniform(rng)
    if u < p_sibling:
        a, b = a_sib, b_sib
    elif u < p_sibling + p_near:
        a, b = max(lo, leaf - near), min(hi, leaf + near + 1)
    else:
        a, b = lo, hi
    return _other(a, b, leaf, rng) if b - a >= 2 else -1


@njit(cache=True, nogil=True)
def _partner(leaf, lo, hi, a_sib, b_sib, near, p_sibling, p_near, mates, rng):
    """The other leaf of an exchange, line draw or relocation: where ``leaf`` may hold a *rare* group of cells (one
    that most leaves' bounds cap at 0: a group-quarters type), with probability p_mate a *mate*, a leaf at most
    mate_near places away from it in the list of the leaves that may hold one of its rare groups (drawn uniformly);
    else :func:`_partner_leaf`. The draw reads only the release's bounds, never the state, so each pair's move keeps
    the posterior as before. -1 where there is none in [lo, hi)."""
    leaf_ptr, leaf_rare, rare_ptr, rare_leaves, p_mate, mate_near = mates
    held = leaf_ptr[leaf + 1] - leaf_ptr[leaf]
    if held > 0 and p_mate > 0 and _uniform(rng) < p_mate:
        r = leaf_rare[leaf_ptr[leaf] + _below(rng, held)]
        a, b = rare_ptr[r], rare_ptr[r + 1]
        step = _below(rng, 2 * mate_near) - mate_near
        at = a + np.searchsorted(rare_leaves[a:b], leaf) + step + (step >= 0)
        if at < a or at >= b:
            return -1
        other = rare_leaves[at]
        return other if lo <= other < hi else -1
    return _partner_leaf(leaf, lo, hi, a_sib, b_sib, near, p_sibling, p_near, rng)


@njit(cache=True, nogil=True)
def _kind_count(kind, leaf, within, exchanges, lines, swaps, bumps, spreads, flips, births, relocations, rare_lines,
                in_class, several):  # fmt: skip
    """The moves of one kind (0..9: within, exchanges, lines, swaps, bumps, spreads, flips, births, relocations, rare
    lines) of a leaf in a sweep (exchanges, lines, relocations and rare lines only with another leaf of its class,
    bumps only with another leaf in the span)."""
    if kind == 0:
        return within[leaf]
    if kind == 1:
        return exchanges[leaf] if in_class else 0
    if kind == 2:
        return lines[leaf] if in_class else 0
    if kind == 3:
        return swaps[leaf]
    if kind == 4:
        return bumps[leaf] if several else 0
    if kind == 5:
        return spreads[leaf]
    if kind == 6:
        return flips[leaf]
    if kind == 7:
        return births[leaf]
    if kind == 8:
        return relocations[leaf] if in_class else 0
    return rare_lines[leaf] if in_class else 0


@njit(cache=True, nogil=True)
def composition_tables(log_alpha, shares, cats, floor, g_lo, g_hi, tables):
    """Rows g_lo..g_hi - 1 of the sweeps' tables (beta, logw, cum, counts' pointers): each group's Dirichlet
    parameters alpha x shares, the log destination weights of its allowed cells ``cats`` (share + ``floor``,
    normalized; other cells keep the -inf they are allocated with) and their running sums."""
    beta, logw, cum = tables[0], tables[1], tables[2]
    K, Ka = shares.shape[1], cats.size
    for g in range(g_lo, g_hi):
        alpha = math.exp(log_alpha[g])
        norm = 1.0 + Ka * floor
        running = 0.0
        for a in range(Ka):
            k = cats[a]
            w = (shares[g, k] + floor) / norm
            logw[g, k] = math.log(w)
            running += w
            cum[g, a] = running
        for k in range(K):
            beta[g, k] = alpha * shares[g, k]


@njit(cache=True, nogil=True)
def people_sweeps(
    start, count, tune, thin, cells, totals, rec, cmap, resid, rates, scales, blk_scale, power, blk_level, blk_off, blk_nv,
    blk_rate, blk_groups, anc, within, exchanges, swaps, births, class_lo, class_hi, sib_lo, sib_hi, near, p_sibling,
    p_near, p_jump, max_jump, bumps, spreads, flips, axes, strides, bump_max, floor, cats, leaf_parent, leaf_group, parent_ptr, parent_leaves, group_ptr,
    group_leaves, all_leaves, log_phi, log_mean, log_alpha, shares, learn, hyper_rounds, steps, prior, rng,
    bnd, bval, bidx, bdelta, touched, dr, out_rec, out_phi, out_mean, out_alpha, out_shares, out_accept,
    mu, units, gq_ptr, gq_leaves, gq_count, log_gq, out_gq, lines, line_window, sign, weight, logp, p_turn, span_lo,
    span_hi, resume, room, relocations, turn_axis, mates, p_line_turn, tables, own_tables, rare_lines, second_turn,
    composition, occupancy,
):  # fmt: skip
    """Sweeps start..start + count - 1 of one chain (tune of them tuning); every thin-th after tuning is stored.

    Per leaf, in order: ``within[l]`` moves inside the leaf, ``exchanges[l]`` with another leaf of its
    invariant class (a sibling, a leaf at most ``near`` places away, or any; or a mate: :func:`_partner`), ``lines[l]`` draws of a cell's people
    passing to or from such a leaf from their conditional on a window (:func:`_line_move`), ``swaps[l]`` trades of cells
    with another leaf (both totals kept), ``bumps`` bump trades and ``spreads`` spreads (:func:`_bump_move`),
    ``flips`` moves of one person or of a whole cell (into an empty one) to a neighbouring cell (:func:`_neighbour`),
    ``births[l]`` in or out (leaves under no invariant), ``relocations[l]`` moves of a whole cell's people to the
    same cell, empty, of such a leaf (:func:`_relocation`), ``rare_lines[l]`` line draws that always turn, with a
    mate or a sibling (where a leaf may hold a rare group: a facility's block, its households and its mates); a line
    draw's turn changes a second axis too with probability ``second_turn[0]`` (:func:`_turn`). Then
    ``hyper_rounds`` updates of phi, the mean sizes, each group's alpha and its shares (pairs of shares with their sum
    kept), step sizes adapted while tuning.

    Only the leaves span_lo..span_hi - 1 move, each with partners in that span alone (0, L: all of them): a unit's
    moves that keep every cell's sum over the unit (exchanges and line draws that do not turn, swaps, bump trades,
    relocations) change no value above it, so disjoint units may run in parallel threads, each with its own scratch
    arrays and random stream (:mod:`ppdinfer.census.decomposition`), and its own allocation range in ``cells``.

    ``tables`` (:func:`composition_tables`, allocated once per chain) are recomputed for the span's groups at each
    sweep where ``own_tables``; else, as in a local round whose hyperparameters are held, the caller computed them
    once for all the units, which read them in parallel.

    ``cells`` is (store, P, allocation range); before each move, where the range has less than ``room`` free
    positions, the sweeps stop and save where (``resume``: sweep, leaf, kind, move, attempted, accepted) and return
    1; called again with the same arguments (the store repacked) they go on from there, so the draws do not depend
    on the pool's size. Returns 0 when the sweeps are done.
    """
    L, K = totals.size, shares.shape[1]
    alloc = cells[2]
    G = shares.shape[0]
    R = rec.shape[1]
    n_parents = log_mean.size
    beta, logw, cum, gk_ptr = tables[0], tables[1], tables[2], tables[3]
    picks = np.empty(max(bump_max, 1), dtype=np.int64)
    g_lo, g_hi = G, 0
    for leaf in range(span_lo, span_hi):
        g_lo, g_hi = min(g_lo, leaf_group[leaf]), max(g_hi, leaf_group[leaf] + 1)
    for sweep in range(resume[0] if resume[0] >= 0 else start, start + count):
        phi = math.exp(log_phi[0])
        vacant = occupancy[0][0]
        if own_tables:
            composition_tables(log_alpha, shares, cats, floor, g_lo, g_hi, tables)
        attempted = 0
        accepted = 0
        leaf0, kind0, it0 = span_lo, 0, 0
        if resume[0] == sweep:  # resumed after the pool grew
            leaf0, kind0, it0, attempted, accepted = resume[1], resume[2], resume[3], resume[4], resume[5]
            resume[0] = -1
        for leaf in range(leaf0, span_hi):
            g = leaf_group[leaf]
            m = mu[leaf]
            a_sib, b_sib = max(sib_lo[leaf], span_lo), min(sib_hi[leaf], span_hi)
            lo, hi = max(class_lo[leaf], span_lo), min(class_hi[leaf], span_hi)
            alpha = _leaf_alpha(leaf, log_alpha, leaf_group, composition)
            for kind in range(kind0, 10):
                n_moves = _kind_count(kind, leaf, within, exchanges, lines, swaps, bumps, spreads, flips, births,
                                      relocations, rare_lines, hi - lo >= 2, span_hi - span_lo > 1)  # fmt: skip
                it = it0
                it0 = 0
                while it < n_moves:
                    if alloc[0] + room > alloc[1]:  # too little room for one move's growth: the caller repacks
                        resume[0], resume[1], resume[2], resume[3] = sweep, leaf, kind, it
                        resume[4], resume[5] = attempted, accepted
                        return 1
                    it += 1
                    if kind == 0:
                        N = totals[leaf]
                        if N == 0:
                            break
                        i = _find(cells, leaf, _below(rng, N))
                        t = _jump(rng, p_jump, max_jump)
                        j = _destination(cum[g], cats, rng)
                        attempted += 1
                        ni = _n(cells, leaf, i)
                        if ni < t or j == i:
                            continue
                        nj = _n(cells, leaf, j)
                        lr = _cell_change(ni, beta[g, i], -t) + _cell_change(nj, beta[g, j], t)
                        lr += math.log(nj + t) - math.log(ni) + logw[g, i] - logw[g, j]
                        accepted += _try_move(lr, leaf, i, leaf, j, t, cells, totals, rec, cmap, resid, rates, scales,
                                              blk_scale, power, blk_level, blk_off, blk_nv, blk_rate, blk_groups, anc, bnd, bval,
                                              bidx, bdelta, touched, dr, rng)  # fmt: skip
                    elif kind == 1:
                        other = _partner(leaf, lo, hi, a_sib, b_sib, near, p_sibling, p_near, mates, rng)
                        if other < 0:
                            continue
                        src, dst = (leaf, other) if _uniform(rng) < 0.5 else (other, leaf)
                        Ns = totals[src]
                        attempted += 1
                        if Ns == 0:
                            continue
                        k = _find(cells, src, _below(rng, Ns))
                        t = _jump(rng, p_jump, max_jump)
                        ns = _n(cells, src, k)
                        if ns < t:
                            continue
                        kd, lr = k, 0.0
                        if _uniform(rng) < p_turn:  # the people change cell on the way: one axis
                            kd, forward, back = _turn(k, src, dst, axes, strides, turn_axis, ONE_AXIS, anc, bnd,
                                                      logw, leaf_group, rng)  # fmt: skip
                            if kd < 0:
                                continue
                            lr = math.log(forward) - math.log(back)
                        nd, Nd = _n(cells, dst, kd), totals[dst]
                        gs, gd = leaf_group[src], leaf_group[dst]
                        lr += _cell_change(ns, beta[gs, k], -t) + _cell_change(nd, beta[gd, kd], t)
                        lr += _total_change(Ns, -t, phi, mu[src], _leaf_alpha(src, log_alpha, leaf_group, composition),
                                            vacant)  # fmt: skip
                        lr += _total_change(Nd, t, phi, mu[dst], _leaf_alpha(dst, log_alpha, leaf_group, composition),
                                            vacant)  # fmt: skip
                        lr += math.log(nd + t) - math.log(Nd + t) - math.log(ns) + math.log(Ns)
                        accepted += _try_move(lr, src, k, dst, kd, t, cells, totals, rec, cmap, resid, rates, scales,
                                              blk_scale, power, blk_level, blk_off, blk_nv, blk_rate, blk_groups, anc, bnd, bval,
                                              bidx, bdelta, touched, dr, rng)  # fmt: skip
                    elif kind == 2 or kind == 9:
                        # a line draw; a rare line (9) always turns, with a mate or else a sibling: a facility's people
                        # and a household sibling's trade places, or a distant facility's
                        ps, pn, pt = (1.0, 0.0, 1.0) if kind == 9 else (p_sibling, p_near, p_line_turn)
                        other = _partner(leaf, lo, hi, a_sib, b_sib, near, ps, pn, mates, rng)
                        if other < 0:
                            continue
                        attempted += 1
                        accepted += _line_move(leaf, other, line_window, cells, totals, rec, cmap, resid, rates, scales,
                                               blk_scale, power, blk_level, blk_off, blk_nv, blk_rate, blk_groups, anc, beta,
                                               leaf_group, mu, log_alpha, composition, phi, vacant, bnd, bval, bidx, bdelta, touched,
                                               dr, sign, weight, logp, pt, turn_axis, second_turn, axes, strides, logw,
                                               rng)  # fmt: skip
                    elif kind == 3:
                        # t people of cell i of this leaf and t of cell j of another trade cells: both totals kept
                        other = _partner_leaf(leaf, span_lo, span_hi, a_sib, b_sib, near, p_sibling, p_near, rng)
                        N, No = totals[leaf], totals[other] if other >= 0 else 0
                        attempted += 1
                        if N == 0 or No == 0:
                            continue
                        i = _find(cells, leaf, _below(rng, N))
                        j = _find(cells, other, _below(rng, No))
                        t = _jump(rng, p_jump, max_jump)
                        ni, nj, go = _n(cells, leaf, i), _n(cells, other, j), leaf_group[other]
                        if i == j or ni < t or nj < t:
                            continue
                        mj, oi = _n(cells, leaf, j), _n(cells, other, i)
                        lr = _cell_change(ni, beta[g, i], -t) + _cell_change(mj, beta[g, j], t)
                        lr += _cell_change(nj, beta[go, j], -t) + _cell_change(oi, beta[go, i], t)
                        lr += math.log(mj + t) + math.log(oi + t) - math.log(ni) - math.log(nj)
                        nb = _bound_step(leaf, i, leaf, j, t, anc, bnd, bval, bidx, bdelta, 0)
                        nb = _bound_step(other, j, other, i, t, anc, bnd, bval, bidx, bdelta, nb)
                        if not _bounds_hold(bval, bidx, nb, bnd):
                            _bounds_revert(bval, bidx, bdelta, nb)
                            continue
                        lik, n = _lik_change(leaf, i, leaf, j, t, resid, rates, scales, blk_scale, power, blk_level, blk_off,
                                             blk_nv, blk_rate, blk_groups, anc, touched, dr)  # fmt: skip
                        for s in range(n):  # the first half applied to the residuals, so the second reads them
                            _shift(resid, touched[s], dr[s])
                        lik2, n2 = _lik_change(other, j, other, i, t, resid, rates, scales, blk_scale, power, blk_level,
                                               blk_off, blk_nv, blk_rate, blk_groups, anc, touched[n:], dr[n:])  # fmt: skip
                        for s in range(n):
                            _shift(resid, touched[s], -dr[s])
                        if _accept(lr + lik + lik2, rng):
                            accepted += 1
                            _apply(leaf, i, leaf, j, t, cells, totals, rec, cmap, resid, touched, dr, n)
                            _apply(other, j, other, i, t, cells, totals, rec, cmap, resid, touched[n:], dr[n:], n2)
                        else:
                            _bounds_revert(bval, bidx, bdelta, nb)
                    elif kind == 4:
                        other = _partner_leaf(leaf, span_lo, span_hi, a_sib, b_sib, near, p_sibling, p_near, rng)
                        if other >= 0:
                            accepted += _bump_move(leaf, other, g, bump_max, cells, totals, rec, cmap, resid, rates, scales,
                                                   blk_scale, power, blk_level, blk_off, blk_nv, blk_rate, blk_groups, anc,
                                                   beta, leaf_group, cum, cats, picks, bnd, bval, bidx, bdelta, touched, dr, rng)  # fmt: skip
                    elif kind == 5:
                        accepted += _bump_move(leaf, -1, g, bump_max, cells, totals, rec, cmap, resid, rates, scales,
                                               blk_scale, power, blk_level, blk_off, blk_nv, blk_rate, blk_groups, anc, beta,
                                               leaf_group, cum, cats, picks, bnd, bval, bidx, bdelta, touched, dr, rng)  # fmt: skip
                    elif kind == 6:
                        N = totals[leaf]
                        if N == 0:
                            break
                        i = _find(cells, leaf, _below(rng, N))
                        ni = _n(cells, leaf, i)
                        j = _neighbour(i, axes, strides, rng)
                        if j < 0 or logw[g, j] == -np.inf:
                            continue
                        nj = _n(cells, leaf, j)
                        attempted += 1
                        if (
                            _uniform(rng) < 0.5
                        ):  # the whole cell, into an empty neighbour (the reverse draws ni of N too)
                            if nj != 0 or ni > bump_max:
                                continue
                            t = ni
                            lr = 0.0
                        else:
                            t = 1
                            lr = math.log(nj + 1) - math.log(ni)
                        lr += _cell_change(ni, beta[g, i], -t) + _cell_change(nj, beta[g, j], t)
                        accepted += _try_move(lr, leaf, i, leaf, j, t, cells, totals, rec, cmap, resid, rates, scales,
                                              blk_scale, power, blk_level, blk_off, blk_nv, blk_rate, blk_groups, anc, bnd, bval,
                                              bidx, bdelta, touched, dr, rng)  # fmt: skip
                    elif kind == 8:
                        other = _partner(leaf, lo, hi, a_sib, b_sib, near, p_sibling, p_near, mates, rng)
                        if other < 0:
                            continue
                        attempted += 1
                        accepted += _relocation(leaf, other, cells, totals, rec, cmap, resid, rates, scales,
                                                blk_scale, power, blk_level, blk_off, blk_nv, blk_rate, blk_groups, anc,
                                                beta, leaf_group, mu, log_alpha, composition, phi, vacant, bnd, bval, bidx,
                                                bdelta, touched, dr, p_turn, turn_axis, axes, strides, logw, rng)  # fmt: skip
                    elif kind == 7:
                        N = totals[leaf]
                        t = _jump(rng, p_jump, max_jump)
                        attempted += 1
                        if _uniform(rng) < 0.5:
                            j = _destination(cum[g], cats, rng)
                            nj = _n(cells, leaf, j)
                            lr = _cell_change(nj, beta[g, j], t) + _total_change(N, t, phi, m, alpha, vacant)
                            lr += math.log(nj + t) - math.log(N + t) - logw[g, j]
                            accepted += _try_move(lr, -1, 0, leaf, j, t, cells, totals, rec, cmap, resid, rates, scales,
                                                  blk_scale, power, blk_level, blk_off, blk_nv, blk_rate, blk_groups, anc, bnd,
                                                  bval, bidx, bdelta, touched, dr, rng)  # fmt: skip
                        elif N > 0:
                            i = _find(cells, leaf, _below(rng, N))
                            ni = _n(cells, leaf, i)
                            if ni < t:
                                continue
                            lr = _cell_change(ni, beta[g, i], -t) + _total_change(N, -t, phi, m, alpha, vacant)
                            lr += logw[g, i] - math.log(ni) + math.log(N)
                            accepted += _try_move(lr, leaf, i, -1, 0, t, cells, totals, rec, cmap, resid, rates, scales,
                                                  blk_scale, power, blk_level, blk_off, blk_nv, blk_rate, blk_groups, anc, bnd,
                                                  bval, bidx, bdelta, touched, dr, rng)  # fmt: skip
            kind0 = 0
        if learn:
            gk_n = group_counts(cells[0], leaf_group, G, K, gk_ptr)
            adapt = sweep < tune
            for _round in range(hyper_rounds):
                _hyper_round(totals, leaf_parent, parent_ptr, parent_leaves, group_ptr, group_leaves, all_leaves,
                             log_phi, log_mean, log_alpha, shares, cats, gk_ptr, gk_n, K, steps, prior, adapt, composition,
                             rng)  # fmt: skip
                _mean_round(totals, leaf_parent, parent_ptr, parent_leaves, all_leaves, log_phi, log_mean, mu, units,
                            gq_ptr, gq_leaves, gq_count, log_gq, steps, prior, adapt, occupancy[0], rng)  # fmt: skip
        done = sweep - tune
        if done >= 0 and (done + 1) % thin == 0:
            row = done // thin
            for leaf in range(L):
                for c in range(R):
                    out_rec[row, leaf, c] = rec[leaf, c]
            out_phi[row] = log_phi[0]
            for p in range(n_parents):
                out_mean[row, p] = log_mean[p]
            for q in range(log_gq.size):
                out_gq[row, q] = log_gq[q]
            occupancy[1][row] = occupancy[0][0]
            for g in range(G):
                out_alpha[row, g] = log_alpha[g]
                for c in range(R):
                    out_shares[row, g, c] = 0.0
                for k in range(K):
                    out_shares[row, g, cmap[k]] += shares[g, k]
            out_accept[row] = accepted / max(attempted, 1)
    return 0


@njit(cache=True, nogil=True)
def _counts_change(gk_ptr, gk_n, slot, old_beta, new_beta):
    """Change of sum over a (group, cell)'s non-zero counts n of lgamma(n + beta) - lgamma(beta)."""
    d = new_beta - old_beta
    out = 0.0
    for e in range(gk_ptr[slot], gk_ptr[slot + 1]):
        out += log_gamma_step(gk_n[e] + old_beta, d)
    return out - (gk_ptr[slot + 1] - gk_ptr[slot]) * log_gamma_step(old_beta, d)


@njit(cache=True, nogil=True)
def _adapted(steps, s, ok, rate, target):
    steps[s] *= math.exp(rate * ((1.0 if ok else 0.0) - target))


@njit(cache=True, nogil=True)
def _logit_split(qa, qb, step, rng):
    """qa + qb split anew by a random walk of ``step`` on log(qa / qb): the new pair (a part may round to 0)."""
    s = qa + qb
    z = math.log(qa) - math.log(qb) + step * _normal(rng)
    u = 1.0 / (1.0 + math.exp(-z)) if z > -700.0 else 0.0
    return s * u, s * (1.0 - u)


@njit(cache=True, nogil=True)
def _class_share(shares, g, cats, class_ptr, c):
    """Group g's share of class c (the sum of its cells' shares)."""
    total = 0.0
    for a in range(class_ptr[c], class_ptr[c + 1]):
        total += shares[g, cats[a]]
    return total


@njit(cache=True, nogil=True)
def _hyper_round(totals, leaf_parent, parent_ptr, parent_leaves, group_ptr, group_leaves, all_leaves, log_phi,
                 log_mean, log_alpha, shares, cats, gk_ptr, gk_n, K, steps, prior, adapt, composition, rng):  # fmt: skip
    """One update of each group's alpha (shares kept) and its shares: in pairs of one class of cells (the cells no
    leaf-level bound tells apart), then a class's shares scaled against another's (:func:`_class_move`). ``steps``:
    phi, the mean sizes, each group's alpha, its shares' and its class moves', then the facility sizes'."""
    leaf_kind, open_share, class_ptr, cat_class = composition[0], composition[2], composition[3], composition[4]
    n_parents, G, Ka = log_mean.size, log_alpha.size, cats.size
    for g in range(G):
        alpha = math.exp(log_alpha[g])
        new = log_alpha[g] + steps[1 + n_parents + g] * _normal(rng)
        new_alpha = math.exp(new)
        lr = 0.5 * ((log_alpha[g] - prior[0]) / prior[1]) ** 2 - 0.5 * ((new - prior[0]) / prior[1]) ** 2
        for s in range(group_ptr[g], group_ptr[g + 1]):
            leaf = group_leaves[s]
            N = totals[leaf]
            if N == 0:
                continue
            share = open_share[g, leaf_kind[leaf]]  # the leaf's Dirichlet total is alpha x share
            a_old, a_new = alpha * share, new_alpha * share
            lr += log_gamma_step(a_old, a_new - a_old) - log_gamma_step(N + a_old, a_new - a_old)
        for a in range(Ka):
            k = cats[a]
            lr += _counts_change(gk_ptr, gk_n, g * K + k, alpha * shares[g, k], new_alpha * shares[g, k])
        ok = _accept(lr, rng)
        if ok:
            log_alpha[g] = new
            alpha = new_alpha
        if adapt:
            _adapted(steps, 1 + n_parents + g, ok, 0.05, 0.3)
        slot = 1 + n_parents + G + g
        for a in range(Ka):
            lo, hi = class_ptr[cat_class[a]], class_ptr[cat_class[a] + 1]
            if hi - lo < 2:
                continue
            b = lo + _below(rng, hi - lo - 1)
            if b >= a:
                b += 1
            k, j = cats[a], cats[b]
            qk, qj = shares[g, k], shares[g, j]
            new_k, new_j = _logit_split(qk, qj, steps[slot], rng)
            if new_k <= 0.0 or new_j <= 0.0:
                ok = False
            else:
                # Dirichlet(a0) density times the logit proposal's Jacobian u (1 - u) = q_k q_j / s^2
                lr = prior[6] * (math.log(new_k) + math.log(new_j) - math.log(qk) - math.log(qj))
                lr += _counts_change(gk_ptr, gk_n, g * K + k, alpha * qk, alpha * new_k)
                lr += _counts_change(gk_ptr, gk_n, g * K + j, alpha * qj, alpha * new_j)
                ok = _accept(lr, rng)
                if ok:
                    shares[g, k], shares[g, j] = new_k, new_j
            if adapt:
                _adapted(steps, slot, ok, 0.01, 0.3)
        C = class_ptr.size - 1
        if C >= 2:
            open_shares(shares, cats, composition, g, g + 1)  # the pairs' rounding; each accepted class move refreshes
            for c in range(C):
                _class_move(g, c, totals, group_ptr, group_leaves, alpha, shares, cats, gk_ptr, gk_n, K, steps,
                            1 + n_parents + 2 * G + g, prior[6], adapt, composition, rng)  # fmt: skip


@njit(cache=True, nogil=True)
def _class_move(g, c, totals, group_ptr, group_leaves, alpha, shares, cats, gk_ptr, gk_n, K, steps, slot, a0, adapt,
                composition, rng):  # fmt: skip
    """Group g's shares of class c and of another class d, drawn uniformly, scaled by r_c and r_d (their sum kept,
    a random walk on log(Q_c / Q_d) of the classes' shares Q, proportions within each class kept). The Dirichlet(a0)
    density with the move's Jacobian gives r_c^(a0 n_c) r_d^(a0 n_d) (n: the classes' cells); the counts' terms
    change for the cells of both, and the Dirichlet-multinomial's normaliser Gamma(A_l) / Gamma(N_l + A_l) for each
    leaf l with people that may hold one of the two classes and not the other (A_l = alpha_g x its open share)."""
    leaf_kind, kind_open, open_share, class_ptr = composition[0], composition[1], composition[2], composition[3]
    C = class_ptr.size - 1
    d = _below(rng, C - 1)
    if d >= c:
        d += 1
    qc, qd = _class_share(shares, g, cats, class_ptr, c), _class_share(shares, g, cats, class_ptr, d)
    if qc <= 0.0 or qd <= 0.0:
        return
    new_c, new_d = _logit_split(qc, qd, steps[slot], rng)
    ok = False
    if new_c > 0.0 and new_d > 0.0:
        rc, rd = new_c / qc, new_d / qd
        n_c, n_d = class_ptr[c + 1] - class_ptr[c], class_ptr[d + 1] - class_ptr[d]
        lr = a0 * (n_c * math.log(rc) + n_d * math.log(rd))
        for a in range(class_ptr[c], class_ptr[c + 1]):
            q = shares[g, cats[a]]
            lr += _counts_change(gk_ptr, gk_n, g * K + cats[a], alpha * q, alpha * q * rc)
        for a in range(class_ptr[d], class_ptr[d + 1]):
            q = shares[g, cats[a]]
            lr += _counts_change(gk_ptr, gk_n, g * K + cats[a], alpha * q, alpha * q * rd)
        for s_ in range(group_ptr[g], group_ptr[g + 1]):
            leaf = group_leaves[s_]
            N = totals[leaf]
            kind = leaf_kind[leaf]
            change = kind_open[kind, c] * (new_c - qc) + kind_open[kind, d] * (new_d - qd)
            if N == 0 or change == 0.0:
                continue
            a_old = alpha * open_share[g, kind]
            lr += log_gamma_step(a_old, alpha * change) - log_gamma_step(N + a_old, alpha * change)
        ok = _accept(lr, rng)
        if ok:
            for a in range(class_ptr[c], class_ptr[c + 1]):
                shares[g, cats[a]] *= rc
            for a in range(class_ptr[d], class_ptr[d + 1]):
                shares[g, cats[a]] *= rd
            open_shares(shares, cats, composition, g, g + 1)
    if adapt:
        _adapted(steps, slot, ok, 0.01, 0.3)


@njit(cache=True, nogil=True)
def open_shares(shares, cats, composition, g_lo, g_hi):
    """Rows g_lo..g_hi - 1 of ``composition``'s open shares: per group and leaf kind, the shares of the classes of cells
    that kind may hold (exactly 1 for a kind that may hold every class)."""
    kind_open, open_share, class_ptr = composition[1], composition[2], composition[3]
    C = class_ptr.size - 1
    sums = np.zeros(C)
    for g in range(g_lo, g_hi):
        for c in range(C):
            sums[c] = _class_share(shares, g, cats, class_ptr, c)
        for kind in range(kind_open.shape[0]):
            every, total = True, 0.0
            for c in range(C):
                if kind_open[kind, c] > 0.0:
                    total += sums[c]
                else:
                    every = False
            open_share[g, kind] = 1.0 if every else total


@njit(cache=True, nogil=True)
def _mean_change(totals, leaves, mu, phi, new_phi, part, d, vacant):
    """The change of sum over ``leaves`` of the (zero-inflated by ``vacant``) negative binomial log pmf of N_l (mean
    mu_l, size phi) when phi becomes ``new_phi`` and mu_l becomes mu_l + d part_l (leaves of mean 0 hold nobody and
    are skipped)."""
    total = 0.0
    for s in range(leaves.size):
        leaf = leaves[s]
        m = mu[leaf]
        if m > 0.0:
            total += _zinb_change(totals[leaf], phi, m, new_phi, m + d * part[leaf], vacant)
    return total


@njit(cache=True, nogil=True)
def _mean_round(totals, leaf_parent, parent_ptr, parent_leaves, all_leaves, log_phi, log_mean, mu, units, gq_ptr,
                gq_leaves, gq_count, log_gq, steps, prior, adapt, vacancy, rng):  # fmt: skip
    """One update of phi, of each parent's mean per unit m_p and of each group-quarters type's mean per facility
    c_t, the leaves' means mu_l = m_p units_l + sum_t c_t facilities_lt (computed afresh, then kept in step), and
    where ``vacancy[0]`` (the zero-inflation v) is above 0, of v (a random walk on its logit, normal prior
    ``prior[9:11]``, its step before the facility sizes')."""
    n_parents = log_mean.size
    for leaf in range(mu.size):
        mu[leaf] = math.exp(log_mean[leaf_parent[leaf]]) * units[leaf]
    for q in range(log_gq.size):
        for s in range(gq_ptr[q], gq_ptr[q + 1]):
            mu[gq_leaves[s]] += math.exp(log_gq[q]) * gq_count[s]
    phi = math.exp(log_phi[0])
    new = log_phi[0] + steps[0] * _normal(rng)
    vacant = vacancy[0]
    lr = _mean_change(totals, all_leaves, mu, phi, math.exp(new), units, 0.0, vacant)
    lr += 0.5 * ((log_phi[0] - prior[2]) / prior[3]) ** 2 - 0.5 * ((new - prior[2]) / prior[3]) ** 2
    ok = _accept(lr, rng)
    if ok:
        log_phi[0] = new
        phi = math.exp(new)
    if adapt:
        _adapted(steps, 0, ok, 0.05, 0.3)
    for p in range(n_parents):
        leaves = parent_leaves[parent_ptr[p] : parent_ptr[p + 1]]
        new = log_mean[p] + steps[1 + p] * _normal(rng)
        d = math.exp(new) - math.exp(log_mean[p])
        lr = _mean_change(totals, leaves, mu, phi, phi, units, d, vacant)
        lr += 0.5 * ((log_mean[p] - prior[4]) / prior[5]) ** 2 - 0.5 * ((new - prior[4]) / prior[5]) ** 2
        ok = _accept(lr, rng)
        if ok:
            log_mean[p] = new
            for s in range(leaves.size):
                if mu[leaves[s]] > 0.0:
                    mu[leaves[s]] += d * units[leaves[s]]
        if adapt:
            _adapted(steps, 1 + p, ok, 0.05, 0.3)
    base = steps.size - log_gq.size
    for q in range(log_gq.size):
        leaves = gq_leaves[gq_ptr[q] : gq_ptr[q + 1]]
        count = gq_count[gq_ptr[q] : gq_ptr[q + 1]]
        new = log_gq[q] + steps[base + q] * _normal(rng)
        d = math.exp(new) - math.exp(log_gq[q])
        lr = 0.5 * ((log_gq[q] - prior[7]) / prior[8]) ** 2 - 0.5 * ((new - prior[7]) / prior[8]) ** 2
        for s in range(leaves.size):
            lr += _zinb_change(totals[leaves[s]], phi, mu[leaves[s]], phi, mu[leaves[s]] + d * count[s], vacant)
        ok = _accept(lr, rng)
        if ok:
            log_gq[q] = new
            for s in range(leaves.size):
                mu[leaves[s]] += d * count[s]
        if adapt:
            _adapted(steps, base + q, ok, 0.05, 0.3)
    if vacant > 0.0:
        _vacancy_update(totals, all_leaves, mu, phi, vacancy, steps, base - 1, prior, adapt, rng)


@njit(cache=True, nogil=True)
def _vacancy_update(totals, leaves, mu, phi, vacancy, steps, slot, prior, adapt, rng):
    """One random-walk update of the logit of the zero-inflation v = ``vacancy[0]``: every leaf with a positive mean
    reads log(v + (1 - v) NB(0)) where empty, log(1 - v) + log NB(N) where not."""
    v = vacancy[0]
    x = math.log(v) - math.log1p(-v)
    new = x + steps[slot] * _normal(rng)
    w = 1.0 / (1.0 + math.exp(-new))
    if not 0.0 < w < 1.0:
        return
    lr = 0.5 * ((x - prior[9]) / prior[10]) ** 2 - 0.5 * ((new - prior[9]) / prior[10]) ** 2
    filled = 0
    for s in range(leaves.size):
        leaf = leaves[s]
        m = mu[leaf]
        if m <= 0.0:
            continue
        if totals[leaf] == 0:
            lr += _empty_log(m, phi, w) - _empty_log(m, phi, v)
        else:
            filled += 1
    lr += filled * (math.log1p(-w) - math.log1p(-v))
    ok = _accept(lr, rng)
    if ok:
        vacancy[0] = w
    if adapt:
        _adapted(steps, slot, ok, 0.05, 0.3)
