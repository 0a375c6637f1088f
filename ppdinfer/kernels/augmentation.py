"""Inner loops of the privacy-aware data-augmentation step (ppdinfer.pymc.augmentation).

The latent x is observed through a release y with one of two likelihoods (up to constants):

- separable additive noise: log L(x) = -rate * sum_k |y_k - x_k| ** power (discrete Laplace,
  power 1; discrete Gaussian, power 2);
- a norm (the Wasserstein exponential mechanism with the L2 loss and the naive base measure):
  log L(x) = -rate * ||y - x||_2, which couples the coordinates. The kernels carry the squared
  norm and update it move by move.

Three Metropolis-Hastings moves, each leaving the conditional posterior of x given theta
invariant:

- *prior* (Ju, Awan, Gong & Rao 2022): propose from the conditional prior given theta and the
  other coordinates, accept with the likelihood ratio; it mixes where the release says little;
- *release*: where the release has a centre c (y itself for a release of x), propose from
  q(t) proportional to b ** dist(t, [lo, hi]) on the integers, [lo, hi] the values of the coordinate that
  the centre points to (c_k for a single coordinate; c_i and total - c_j for a pair, whose
  likelihood of discrete Laplace noise has exactly this shape) and b from the noise's size; an
  independence proposal on the move's fibre, accepted with prior ratio times likelihood ratio times
  q(old) / q(new). It mixes where the release pins x (the prior move is then rarely accepted);
- *local*: a symmetric integer step, accepted with prior ratio times likelihood ratio; the
  fallback where no centre is known.

A sweep draws each move with its frequency (``frequency[PRIOR]`` etc., 1 = always; the PyMC
step adapts them during tuning from the acceptance rates), so that a move that is rarely accepted
costs little.

A Poisson x whose rate has its own Gamma prior (one rate per coordinate) may have the rate
integrated out (*Gamma-Poisson*, a negative binomial prior), as the Dirichlet below; so may a
binomial x whose probability has its own Beta prior (*Beta-Binomial*).

x's prior is a *family* (``ppdinfer.pymc.families``): an integer code for the kernel's dispatch and
a packed per-coordinate parameter array ``params`` of shape (coordinates, columns), whose columns
each family names (``COLUMNS[code]``):

- Poisson: (mean,);
- binomial: (trials, prob);
- multinomial: (total, prob), the row's total repeated on each cell;
- Dirichlet-multinomial: (total, alpha);
- Gamma-Poisson: (shape, ratio), rate ~ Gamma(shape, rate b) integrated out of Poisson(e rate),
  ratio = e / b;
- Beta-Binomial: (trials, a, b), prob ~ Beta(a, b) integrated out of Binomial(trials, prob);
- discrete uniform: (lower, upper), a flat prior on lower, ..., upper;
- tabulated: (lo, width), then ``width`` log prior values, those of lo, ..., lo + width - 1, then their
  normalized cumulative sums (the prior move's inverse CDF): any elementwise log pmf, evaluated by the caller on a
  window of candidates (``ppdinfer.pymc.tabulated``); a candidate outside the window is rejected.

A move's prior ratio is taken whole, by log-gamma steps (``ppdinfer.kernels.special.log_gamma_step``), never
as the difference of two log priors, which float64 rounds by +-16 at a count of 4e15; a prior draw of a
Poisson count of mean 1e7 or more comes from ``ppdinfer.kernels.special.poisson_draw``, not NumPy's generator.

For a multinomial x (a public total) the moves act on a pair (i, j) and keep x_i + x_j,
so every state visited has the public total exactly; a sweep pairs the cells at random (disjoint
pairs from a random permutation), so each cell is moved once per sweep. With a conjugate Dirichlet(alpha) on the
cell probabilities, the *collapsed* kind integrates them out: x then has the
Dirichlet-multinomial prior, the pair's conditional prior is BetaBinomial(x_i + x_j, alpha_i,
alpha_j), and x mixes without waiting for theta. The kernels seed numba's generator from the
caller, so a chain is reproducible from its numpy Generator.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from .special import log_gamma_step, poisson_draw

MULTINOMIAL, BINOMIAL, POISSON, DIRICHLET_MULTINOMIAL, GAMMA_POISSON, BETA_BINOMIAL, UNIFORM, TABLE = range(8)
#: the named columns of each family's packed parameters (the kernels read them by position)
COLUMNS = {
    MULTINOMIAL: ("total", "prob"),
    BINOMIAL: ("trials", "prob"),
    POISSON: ("mean",),
    DIRICHLET_MULTINOMIAL: ("total", "alpha"),
    GAMMA_POISSON: ("shape", "ratio"),
    BETA_BINOMIAL: ("trials", "a", "b"),
    UNIFORM: ("lower", "upper"),
    TABLE: ("lo", "width"),  # then the window's log prior values and their cumulative distribution
}
#: the moves, indexing ``frequency`` and the rows of the counts that the sweeps return
PRIOR, RELEASE, LOCAL = 0, 1, 2


@njit(cache=True, nogil=True)
def _term(y, x, power):
    d = abs(y - x)
    return d if power == 1 else d * d


@njit(cache=True, nogil=True)
def _change(y, x, i, new_i, j, new_j, rate, power, norm, state):
    """Log-likelihood change when x_i -> new_i and (j >= 0) x_j -> new_j.

    ``state[0]`` is the current sum of terms; the new sum is stored in ``state[1]`` for
    :func:`_commit`.
    """
    total = state[0] - _term(y[i], x[i], power) + _term(y[i], new_i, power)
    if j >= 0:
        total += _term(y[j], new_j, power) - _term(y[j], x[j], power)
    state[1] = total
    if norm:
        return -rate * (math.sqrt(max(total, 0.0)) - math.sqrt(max(state[0], 0.0)))
    return -rate * (total - state[0])


@njit(cache=True, nogil=True)
def _commit(state):
    state[0] = state[1]


@njit(cache=True, nogil=True)
def pair_family(code):
    """Whether the family of ``code`` moves pairs of cells of a row (a public total), not single coordinates."""
    return code == MULTINOMIAL or code == DIRICHLET_MULTINOMIAL


@njit(cache=True, nogil=True)
def _upper(code, params, k):
    """The largest value coordinate k may take: its trials for a binomial family, the upper end of a discrete
    uniform, the window's last value for a tabulated prior, else infinite."""
    if code == UNIFORM:
        return params[k, 1]
    if code == TABLE:
        return params[k, 0] + params[k, 1] - 1.0
    return params[k, 0] if code == BINOMIAL or code == BETA_BINOMIAL else np.inf


@njit(cache=True, nogil=True)
def _lower(code, params, k):
    """The smallest value coordinate k may take: the lower end of a discrete uniform (the window's first value for a
    tabulated prior), else 0."""
    return params[k, 0] if code == UNIFORM or code == TABLE else 0.0


@njit(cache=True, nogil=True)
def _power_log_ratio(x, d, log_p):
    """w(x + d) - w(x) for w(x) = x log p - log x! (a Poisson or multinomial cell), by a log-gamma step."""
    return d * log_p - log_gamma_step(x + 1.0, d)


@njit(cache=True, nogil=True)
def _rising_log_ratio(x, d, a):
    """w(x + d) - w(x) for w(x) = log Gamma(x + a) - log x! (a cell with a conjugate prior integrated out)."""
    return log_gamma_step(x + a, d) - log_gamma_step(x + 1.0, d)


@njit(cache=True, nogil=True)
def _log_prior_ratio(code, x, candidate, params, k):
    """log prior(candidate) - log prior(x) of coordinate k (x in the support), -inf off the support.

    Each family's ratio is taken whole, by log-gamma steps (binomial: trials n, prob p; Poisson: mean;
    Gamma-Poisson: a rate ~ Gamma(shape r, rate b) integrated out of Poisson(e rate), ratio e / b, a negative
    binomial; Beta-Binomial: trials n and the Beta's a, b): the two log priors themselves reach 1.4e17 at
    x = 4e15, where float64 holds them only to +-16.
    """
    if candidate < _lower(code, params, k) or candidate > _upper(code, params, k):
        return -np.inf
    d = float(candidate - x)
    if d == 0.0 or code == UNIFORM:  # also where a log weight is -inf (a probability 0 or 1 at its one value)
        return 0.0
    if code == TABLE:  # the window's log prior values follow its (lo, width)
        lo = params[k, 0]
        return params[k, 2 + int(candidate - lo)] - params[k, 2 + int(x - lo)]
    if code == GAMMA_POISSON:
        r, q = params[k, 0], params[k, 1]
        return _rising_log_ratio(x, d, r) + d * math.log(q / (1.0 + q))
    if code == BINOMIAL:
        n, p = params[k, 0], params[k, 1]
        return _power_log_ratio(x, d, math.log(p)) + _power_log_ratio(n - x, -d, math.log1p(-p))
    if code == BETA_BINOMIAL:  # C(n, x) B(x + a, n - x + b)
        n, a, b = params[k, 0], params[k, 1], params[k, 2]
        return _rising_log_ratio(x, d, a) + _rising_log_ratio(n - x, -d, b)
    return _power_log_ratio(x, d, math.log(params[k, 0]))


@njit(cache=True, nogil=True)
def _local_step(scale):
    """A symmetric non-zero integer step of typical size ``scale``."""
    step = int(round(np.random.normal() * scale))
    if step == 0:
        step = 1 if np.random.random() < 0.5 else -1
    return step


@njit(cache=True, nogil=True)
def _cell_log_ratio(collapsed, x, d, p):
    """A cell's log prior weight from x to x + d: that of log Gamma(x + alpha) - log x! (collapsed, p = alpha)
    or of x log p - log x! (multinomial)."""
    return _rising_log_ratio(x, d, p) if collapsed else _power_log_ratio(x, d, math.log(p))


# -- the moves: one implementation, shared by the compiled sweeps below and by the sweeps
# whose likelihood is a Python callable (ppdinfer.pymc.augmentation.generic_sweeps) --------------


@njit(cache=True, nogil=True)
def seed_moves(seed):
    """Seed the generator of the moves (numba's own), so a chain is reproducible."""
    np.random.seed(seed)


@njit(cache=True, nogil=True)
def log_uniform():
    """log U, U ~ Uniform(0, 1), from the moves' generator: the Metropolis-Hastings test is log U <= log ratio."""
    return np.log(np.random.random())


@njit(cache=True, nogil=True)
def choose_pair(dim):
    """Two distinct cells (i, j), uniformly among the ordered pairs (the WEM release chain's move)."""
    i = np.random.randint(dim)
    j = np.random.randint(dim - 1)
    if j >= i:
        j += 1
    return i, j


@njit(cache=True, nogil=True)
def pair_order(dim):
    """A random permutation of the cells: a sweep moves the disjoint pairs (order[0], order[1]), (order[2],
    order[3]), ... (an odd cell out waits for the next sweep)."""
    return np.random.permutation(dim)


@njit(cache=True, nogil=True)
def make_move(frequency, move):
    """Whether this pair (or coordinate) gets ``move``: always at frequency 1, else with that probability."""
    return frequency[move] >= 1.0 or (frequency[move] > 0.0 and np.random.random() < frequency[move])


@njit(cache=True, nogil=True)
def _decay(sd):
    """The ratio b of successive probabilities of the discrete Laplace law whose standard deviation is ``sd``
    (at least 0.5): sd ** 2 = 2 b / (1 - b) ** 2."""
    s2 = max(sd, 0.5) ** 2
    return ((s2 + 1.0) - math.sqrt(2.0 * s2 + 1.0)) / s2


@njit(cache=True, nogil=True)
def _distance(t, lo, hi):
    return lo - t if t < lo else (t - hi if t > hi else 0.0)


@njit(cache=True, nogil=True)
def _interval_draw(lo, hi, b):
    """t on the integers with probability proportional to b ** dist(t, [lo, hi]) (lo <= hi, 0 < b < 1)."""
    first, last = math.ceil(lo), math.floor(hi)
    middle = max(last - first + 1, 0)
    left = b ** (lo - (first - 1)) / (1.0 - b)
    right = b ** ((last + 1) - hi) / (1.0 - b)
    u = np.random.random() * (middle + left + right)
    if u < middle:
        return first + int(u)
    k = int(math.floor(math.log(1.0 - np.random.random()) / math.log(b)))  # P(k) proportional to b ** k
    return first - 1 - k if u < middle + left else last + 1 + k


@njit(cache=True, nogil=True)
def _cell_ratio(collapsed, x, p):
    """A cell's one-step prior ratio from x to x + 1: (x + alpha) / (x + 1), or p / (x + 1)."""
    return (x + p) / (x + 1.0) if collapsed else p / (x + 1.0)


#: The longest transfer whose prior ratio is a product of one-step ratios (one log instead of four log-gamma steps)
SHORT_TRANSFER = 8


@njit(cache=True, nogil=True)
def _pair_log_prior_ratio(collapsed, x, params, i, new_i, j, new_j):
    """log prior(new) - log prior(x) of a transfer within the pair (i, j); -inf off the support.

    A transfer of at most ``SHORT_TRANSFER`` multiplies the cells' one-step ratios where that product is a
    positive finite number; otherwise (a longer transfer, a product that under- or overflows) each cell's ratio
    is taken by log-gamma steps, so that no two large log-gammas cancel.
    """
    pi, pj = params[i, 1], params[j, 1]
    if new_i < 0 or new_j < 0 or not pi > 0 or not pj > 0:
        return -np.inf
    step = new_i - x[i]
    if abs(step) <= SHORT_TRANSFER:
        up, down, p_up, p_down = (i, j, pi, pj) if step >= 0 else (j, i, pj, pi)
        ratio = 1.0
        for k in range(abs(step)):  # cell ``up`` climbs, cell ``down`` falls
            ratio *= _cell_ratio(collapsed, x[up] + k, p_up) / _cell_ratio(collapsed, x[down] - k - 1, p_down)
        if 0.0 < ratio < np.inf:
            return math.log(ratio)
    return _cell_log_ratio(collapsed, x[i], float(step), pi) + _cell_log_ratio(collapsed, x[j], float(-step), pj)


@njit(cache=True, nogil=True)
def pair_prior_move(code, x, params, i, j):
    """x_i | x_i + x_j from the conditional prior: Binomial(total, p_i / (p_i + p_j)), or BetaBinomial
    for the Dirichlet-multinomial (column 1 is then the Dirichlet concentration). Returns (new x_i, new x_j, ok)."""
    total = x[i] + x[j]
    pi, pj = params[i, 1], params[j, 1]
    if total <= 0 or not pi + pj > 0:
        return x[i], x[j], False
    share = np.random.beta(pi, pj) if code == DIRICHLET_MULTINOMIAL else pi / (pi + pj)
    xi = np.random.binomial(total, share)
    return xi, total - xi, True


@njit(cache=True, nogil=True)
def pair_release_move(code, x, params, centre, scale, i, j):
    """x_i | x_i + x_j from q(t) proportional to b ** dist(t, [lo, hi]), [lo, hi] spanned by c_i and total - c_j
    (clipped to [0, total]), b from the noise sizes ``scale / 2`` of both cells: (new x_i, new x_j, log ratio),
    the ratio being prior ratio times q(old) / q(new), -inf off the support."""
    total = x[i] + x[j]
    u = min(max(centre[i], 0.0), float(total))
    v = min(max(total - centre[j], 0.0), float(total))
    lo, hi = min(u, v), max(u, v)
    b = _decay(0.5 * scale[i]) * _decay(0.5 * scale[j])  # the fibre's likelihood decays with both rates
    xi = _interval_draw(lo, hi, b)
    xj = total - xi
    log_ratio = _pair_log_prior_ratio(code == DIRICHLET_MULTINOMIAL, x, params, i, xi, j, xj)
    return xi, xj, log_ratio + (_distance(x[i], lo, hi) - _distance(xi, lo, hi)) * math.log(b)


@njit(cache=True, nogil=True)
def pair_local_move(code, x, params, scale, i, j):
    """A symmetric transfer of a step from cell j to cell i: (new x_i, new x_j, log prior ratio),
    the ratio -inf where the move leaves the support (a negative cell, a cell of probability 0)."""
    step = _local_step(0.5 * (scale[i] + scale[j]))
    xi, xj = x[i] + step, x[j] - step
    return xi, xj, _pair_log_prior_ratio(code == DIRICHLET_MULTINOMIAL, x, params, i, xi, j, xj)


@njit(cache=True, nogil=True)
def site_prior_move(code, params, k):
    """A draw of coordinate k from its prior: Binomial(n_k, p_k), Poisson(mean_k), Poisson(ratio_k G) with
    G ~ Gamma(shape_k, 1) (Gamma-Poisson: the negative binomial), Binomial(n_k, P) with P ~ Beta(a_k, b_k),
    uniform on lower_k, ..., upper_k, or a tabulated prior restricted to its window (an inverse-CDF draw)."""
    if code == TABLE:
        return _table_draw(params, k)
    if code == BINOMIAL:
        return np.random.binomial(int(params[k, 0]), params[k, 1])
    if code == GAMMA_POISSON:
        return poisson_draw(np.random.gamma(params[k, 0], 1.0) * params[k, 1])
    if code == BETA_BINOMIAL:
        return np.random.binomial(int(params[k, 0]), np.random.beta(params[k, 1], params[k, 2]))
    if code == UNIFORM:
        return int(params[k, 0]) + np.random.randint(int(params[k, 1]) - int(params[k, 0]) + 1)
    return poisson_draw(params[k, 0])


@njit(cache=True, nogil=True)
def _table_draw(params, k):
    """A draw from coordinate k's window of a tabulated prior: lo_k + j with probability proportional to
    exp(params[k, 2 + j]), by bisection on the window's cumulative distribution (the row's last ``width`` columns,
    ending at 1): O(log width)."""
    width = int(params[k, 1])
    u = np.random.random()
    first, last = 0, width - 1  # the first j whose cumulative probability exceeds u: one of positive weight
    while first < last:
        middle = (first + last) // 2
        if params[k, 2 + width + middle] > u:
            last = middle
        else:
            first = middle + 1
    return int(params[k, 0]) + first


@njit(cache=True, nogil=True)
def site_release_move(code, x, params, centre, scale, k):
    """Coordinate k from q(t) proportional to b ** |t - c_k| (c_k clipped to the support), b from the noise
    size ``scale_k / 2``: (candidate, log prior ratio + log q(old) - log q(new)), -inf off the support."""
    c = min(max(centre[k], _lower(code, params, k)), _upper(code, params, k))
    b = _decay(0.5 * scale[k])
    candidate = _interval_draw(c, c, b)
    log_ratio = _log_prior_ratio(code, x[k], candidate, params, k)
    return candidate, log_ratio + (abs(x[k] - c) - abs(candidate - c)) * math.log(b)


@njit(cache=True, nogil=True)
def site_local_move(code, x, params, scale, k):
    """A symmetric step of coordinate k: (candidate, log prior ratio), -inf off the support."""
    candidate = x[k] + _local_step(scale[k])
    return candidate, _log_prior_ratio(code, x[k], candidate, params, k)


@njit(cache=True, nogil=True)
def accept(log_ratio):
    """The Metropolis-Hastings test log U <= log ratio; U is drawn only for a negative ratio."""
    return log_ratio >= 0.0 or log_uniform() <= log_ratio


#: the children's families in :func:`child_sweeps`: a Poisson of mean a + b x, a binomial of n = x (a holds the
#: probability), a normal of mean a + b x (c holds its sd)
CHILD_POISSON, CHILD_BINOMIAL, CHILD_NORMAL = 0, 1, 2


@njit(cache=True, nogil=True)
def _child_logp(code, obs, a, b, c, t):
    """The log density of one child's observation ``obs`` at x = t, up to terms free of t; -inf off its support."""
    if code == CHILD_BINOMIAL:  # log C(t, obs) + (t - obs) log(1 - p), a = p
        if t < obs:
            return -np.inf
        if a >= 1.0:
            return 0.0 if t == obs else -np.inf
        return math.lgamma(t + 1.0) - math.lgamma(t - obs + 1.0) + (t - obs) * math.log1p(-a)
    mean = a + b * t
    if code == CHILD_NORMAL:
        z = (obs - mean) / c
        return -0.5 * z * z
    if mean <= 0.0:  # Poisson
        return 0.0 if (mean == 0.0 and obs == 0.0) else -np.inf
    return obs * math.log(mean) - mean


@njit(cache=True, nogil=True)
def _children_change(ccode, cobs, ca, cb, cc, k, old, new):
    """The children's log-likelihood change when x_k goes from ``old`` to ``new`` (one term per child: O(1))."""
    total = 0.0
    for c in range(ccode.shape[0]):
        before = _child_logp(ccode[c], cobs[c, k], ca[c, k], cb[c, k], cc[c, k], old)
        after = _child_logp(ccode[c], cobs[c, k], ca[c, k], cb[c, k], cc[c, k], new)
        if after == -np.inf:
            return -np.inf
        total += after - before
    return total


@njit(cache=True, nogil=True)
def _try_pair(x, y, i, new_i, j, new_j, log_ratio, rate, power, norm, state, counts, move, kids):
    counts[1, move] += 1
    if log_ratio > -np.inf and kids[0].shape[0] > 0:
        ccode, cobs, ca, cb, cc = kids
        log_ratio += _children_change(ccode, cobs, ca, cb, cc, i, x[i], new_i)
        if j >= 0 and log_ratio > -np.inf:
            log_ratio += _children_change(ccode, cobs, ca, cb, cc, j, x[j], new_j)
    if log_ratio > -np.inf and accept(log_ratio + _change(y, x, i, new_i, j, new_j, rate, power, norm, state)):
        x[i] = new_i
        if j >= 0:
            x[j] = new_j
        _commit(state)
        counts[0, move] += 1


@njit(cache=True, nogil=True)
def _pair_moves(code, x, y, params, rate, power, norm, scale, centre, frequency, state, counts, kids):
    """One sweep of pair moves for a multinomial x over disjoint random pairs."""
    order = pair_order(x.shape[0])
    for pair in range(x.shape[0] // 2):
        i, j = order[2 * pair], order[2 * pair + 1]
        if make_move(frequency, PRIOR):
            xi, xj, ok = pair_prior_move(code, x, params, i, j)
            _try_pair(x, y, i, xi, j, xj, 0.0 if ok else -np.inf, rate, power, norm, state, counts, PRIOR, kids)
        if make_move(frequency, RELEASE):
            xi, xj, log_ratio = pair_release_move(code, x, params, centre, scale, i, j)
            _try_pair(x, y, i, xi, j, xj, log_ratio, rate, power, norm, state, counts, RELEASE, kids)
        if make_move(frequency, LOCAL):
            xi, xj, log_ratio = pair_local_move(code, x, params, scale, i, j)
            _try_pair(x, y, i, xi, j, xj, log_ratio, rate, power, norm, state, counts, LOCAL, kids)


@njit(cache=True, nogil=True)
def _site_moves(code, x, y, params, rate, power, norm, scale, centre, frequency, state, counts, kids):
    """One sweep of single-coordinate moves for independent coordinates (every family but the multinomials)."""
    for k in range(x.shape[0]):
        if make_move(frequency, PRIOR):
            _try_pair(
                x, y, k, site_prior_move(code, params, k), -1, 0, 0.0, rate, power, norm, state, counts, PRIOR, kids
            )
        if make_move(frequency, RELEASE):
            candidate, log_ratio = site_release_move(code, x, params, centre, scale, k)
            _try_pair(x, y, k, candidate, -1, 0, log_ratio, rate, power, norm, state, counts, RELEASE, kids)
        if make_move(frequency, LOCAL):
            candidate, log_ratio = site_local_move(code, x, params, scale, k)
            _try_pair(x, y, k, candidate, -1, 0, log_ratio, rate, power, norm, state, counts, LOCAL, kids)


@njit(cache=True, nogil=True)
def augmentation_sweeps(code, x, y, params, rate, power, norm, scale, centre, frequency, sweeps, seed):
    """Run ``sweeps`` sweeps in place on x (int64); return the counts of (accepted, tried) moves, shape (2, 3),
    columns (PRIOR, RELEASE, LOCAL).

    ``norm`` selects the likelihood -rate * ||y - x||_2 (power must be 2) instead of the separable
    -rate * sum |y - x| ** power; ``centre`` is the release move's centre (read only where
    ``frequency[RELEASE] > 0``) and ``frequency`` the probability of each move per pair or coordinate.
    ``code`` is x's prior family and ``params`` its packed parameters, one row per coordinate (``COLUMNS``).
    """
    none = np.zeros((0, x.shape[0]))
    kids = (np.zeros(0, dtype=np.int64), none, none, none, none)
    return _sweeps(code, x, y, params, rate, power, norm, scale, centre, frequency, sweeps, seed, kids)


@njit(cache=True, nogil=True)
def child_sweeps(
    code, x, y, params, rate, power, norm, scale, centre, frequency, sweeps, seed, ccode, cobs, ca, cb, cc
):
    """:func:`augmentation_sweeps` with x's other children in the likelihood: child ``c`` observes ``cobs[c, k]``
    given x_k through the family ``ccode[c]`` (``CHILD_POISSON``: mean ``ca + cb x``; ``CHILD_BINOMIAL``: n = x,
    probability ``ca``; ``CHILD_NORMAL``: mean ``ca + cb x``, sd ``cc``), arrays of shape (children, coordinates)
    evaluated at the current point by the caller. A move of x_k adds one term per child: a sweep stays O(size of x).
    """
    return _sweeps(
        code, x, y, params, rate, power, norm, scale, centre, frequency, sweeps, seed, (ccode, cobs, ca, cb, cc)
    )


@njit(cache=True, nogil=True)
def _sweeps(code, x, y, params, rate, power, norm, scale, centre, frequency, sweeps, seed, kids):
    seed_moves(seed)
    counts = np.zeros((2, 3))
    state = np.zeros(2)
    for _ in range(sweeps):
        state[0] = 0.0  # recomputed every sweep, so rounding cannot drift
        for k in range(x.shape[0]):
            state[0] += _term(y[k], x[k], power)
        if pair_family(code):
            _pair_moves(code, x, y, params, rate, power, norm, scale, centre, frequency, state, counts, kids)
        else:
            _site_moves(code, x, y, params, rate, power, norm, scale, centre, frequency, state, counts, kids)
    return counts
