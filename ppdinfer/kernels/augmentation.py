"""Inner loops of the privacy-aware data-augmentation step (ppdinfer.pymc.augmentation).

The latent x is observed through a release y with one of two likelihoods (up to constants):

- separable additive noise: log L(x) = -rate * sum_k |y_k - x_k| ** power (discrete Laplace,
  power 1; discrete Gaussian, power 2);
- a norm (the Wasserstein exponential mechanism with the L2 loss and the naive base measure):
  log L(x) = -rate * ||y - x||_2, which couples the coordinates. The kernels carry the squared
  norm and update it move by move.

Two Metropolis-Hastings moves, each leaving the conditional posterior of x given theta
invariant:

- *prior* (Ju, Awan, Gong & Rao 2022): propose from the conditional prior given theta and the
  other coordinates, accept with the likelihood ratio;
- *local*: a symmetric integer step, accepted with prior ratio times likelihood ratio; it
  mixes where the prior is much wider than the likelihood.

A Poisson x whose rate has its own Gamma prior (one rate per coordinate) may have the rate
integrated out (*Gamma-Poisson*, a negative binomial prior), as the Dirichlet below.

For a multinomial x (a public total) both moves act on a pair (i, j) and keep x_i + x_j,
so every state visited has the public total exactly. With a conjugate Dirichlet(alpha) on the
cell probabilities, the *collapsed* kind integrates them out: x then has the
Dirichlet-multinomial prior, the pair's conditional prior is BetaBinomial(x_i + x_j, alpha_i,
alpha_j), and x mixes without waiting for theta. The kernels seed numba's generator from the
caller, so a chain is reproducible from its numpy Generator.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

MULTINOMIAL, BINOMIAL, POISSON, DIRICHLET_MULTINOMIAL, GAMMA_POISSON = 0, 1, 2, 3, 4


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
def _log_prior(kind, x, n, p):
    """Unnormalized log prior of one coordinate (binomial: n trials, p; Poisson: mean p; Gamma-Poisson:
    a rate ~ Gamma(shape n, rate b) integrated out of Poisson(e rate), p = e / b, a negative binomial)."""
    if x < 0 or (kind == BINOMIAL and x > n):
        return -np.inf
    if kind == GAMMA_POISSON:
        return math.lgamma(x + n) - math.lgamma(x + 1.0) + (x * math.log(p / (1.0 + p)) if x > 0 else 0.0)
    if kind == BINOMIAL:
        return (
            -math.lgamma(x + 1.0)
            - math.lgamma(n - x + 1.0)
            + (x * math.log(p) if x > 0 else 0.0)
            + ((n - x) * math.log1p(-p) if n > x else 0.0)
        )
    return (x * math.log(p) if x > 0 else 0.0) - math.lgamma(x + 1.0)


@njit(cache=True, nogil=True)
def _local_step(scale):
    """A symmetric non-zero integer step of typical size ``scale``."""
    step = int(round(np.random.normal() * scale))
    if step == 0:
        step = 1 if np.random.random() < 0.5 else -1
    return step


@njit(cache=True, nogil=True)
def _cell_log_weight(collapsed, x, p):
    """log prior weight of one cell: x log p - log x! (multinomial) or log Gamma(x + alpha) - log x!."""
    if collapsed:
        return math.lgamma(x + p) - math.lgamma(x + 1.0)
    return (x * math.log(p) if x > 0 else 0.0) - math.lgamma(x + 1.0)


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
    """Two distinct cells (i, j), uniformly among the ordered pairs."""
    i = np.random.randint(dim)
    j = np.random.randint(dim - 1)
    if j >= i:
        j += 1
    return i, j


@njit(cache=True, nogil=True)
def pair_prior_move(collapsed, x, p, i, j):
    """x_i | x_i + x_j from the conditional prior: Binomial(total, p_i / (p_i + p_j)), or BetaBinomial
    when ``collapsed`` (``p`` is then the Dirichlet concentration). Returns (new x_i, new x_j, ok)."""
    total = x[i] + x[j]
    if total <= 0 or not p[i] + p[j] > 0:
        return x[i], x[j], False
    share = np.random.beta(p[i], p[j]) if collapsed else p[i] / (p[i] + p[j])
    xi = np.random.binomial(total, share)
    return xi, total - xi, True


@njit(cache=True, nogil=True)
def pair_local_move(collapsed, x, p, scale, i, j):
    """A symmetric transfer of a step from cell j to cell i: (new x_i, new x_j, log prior ratio),
    the ratio -inf where the move leaves the support (a negative cell, a cell of probability 0)."""
    step = _local_step(0.5 * (scale[i] + scale[j]))
    xi, xj = x[i] + step, x[j] - step
    if xi < 0 or xj < 0 or not p[i] > 0 or not p[j] > 0:
        return xi, xj, -np.inf
    return (
        xi,
        xj,
        (
            _cell_log_weight(collapsed, xi, p[i])
            + _cell_log_weight(collapsed, xj, p[j])
            - _cell_log_weight(collapsed, x[i], p[i])
            - _cell_log_weight(collapsed, x[j], p[j])
        ),
    )


@njit(cache=True, nogil=True)
def site_prior_move(kind, n, p, k):
    """A draw of coordinate k from its prior: Binomial(n_k, p_k), Poisson(p_k), or Poisson(p_k G) with
    G ~ Gamma(n_k, 1) (Gamma-Poisson: the negative binomial)."""
    if kind == BINOMIAL:
        return np.random.binomial(int(n[k]), p[k])
    if kind == GAMMA_POISSON:
        return np.random.poisson(np.random.gamma(n[k], 1.0) * p[k])
    return np.random.poisson(p[k])


@njit(cache=True, nogil=True)
def site_local_move(kind, x, n, p, scale, k):
    """A symmetric step of coordinate k: (candidate, log prior ratio), -inf off the support."""
    candidate = x[k] + _local_step(scale[k])
    return candidate, _log_prior(kind, candidate, n[k], p[k]) - _log_prior(kind, x[k], n[k], p[k])


@njit(cache=True, nogil=True)
def _try_pair(x, y, i, new_i, j, new_j, log_ratio, rate, power, norm, state, accepted, move):
    if log_ratio > -np.inf and log_uniform() <= log_ratio + _change(y, x, i, new_i, j, new_j, rate, power, norm, state):
        x[i] = new_i
        if j >= 0:
            x[j] = new_j
        _commit(state)
        accepted[move] += 1


@njit(cache=True, nogil=True)
def _pair_moves(collapsed, x, y, p, rate, power, norm, scale, state, accepted):
    """One sweep of pair moves for a multinomial x; ``accepted`` counts (prior, local) acceptances."""
    for _ in range(x.shape[0]):
        i, j = choose_pair(x.shape[0])
        xi, xj, ok = pair_prior_move(collapsed, x, p, i, j)
        if ok:
            _try_pair(x, y, i, xi, j, xj, 0.0, rate, power, norm, state, accepted, 0)
        xi, xj, log_ratio = pair_local_move(collapsed, x, p, scale, i, j)
        _try_pair(x, y, i, xi, j, xj, log_ratio, rate, power, norm, state, accepted, 1)


@njit(cache=True, nogil=True)
def _site_moves(kind, x, y, n, p, rate, power, norm, scale, state, accepted):
    """One sweep of single-coordinate moves for independent binomial or Poisson coordinates."""
    for k in range(x.shape[0]):
        _try_pair(x, y, k, site_prior_move(kind, n, p, k), -1, 0, 0.0, rate, power, norm, state, accepted, 0)
        candidate, log_ratio = site_local_move(kind, x, n, p, scale, k)
        _try_pair(x, y, k, candidate, -1, 0, log_ratio, rate, power, norm, state, accepted, 1)


@njit(cache=True, nogil=True)
def augmentation_sweeps(kind, x, y, n, p, rate, power, norm, scale, sweeps, seed):
    """Run ``sweeps`` sweeps in place on x (int64); return acceptance rates of (prior, local) moves.

    ``norm`` selects the likelihood -rate * ||y - x||_2 (power must be 2) instead of the separable
    -rate * sum |y - x| ** power.
    """
    seed_moves(seed)
    accepted = np.zeros(2)
    state = np.zeros(2)
    for _ in range(sweeps):
        state[0] = 0.0  # recomputed every sweep, so rounding cannot drift
        for k in range(x.shape[0]):
            state[0] += _term(y[k], x[k], power)
        if kind == MULTINOMIAL or kind == DIRICHLET_MULTINOMIAL:
            _pair_moves(kind == DIRICHLET_MULTINOMIAL, x, y, p, rate, power, norm, scale, state, accepted)
        else:
            _site_moves(kind, x, y, n, p, rate, power, norm, scale, state, accepted)
    return accepted / (sweeps * x.shape[0])
