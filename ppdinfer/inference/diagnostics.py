r"""Bulk ESS and rank-normalized split R-hat of many variables at once, as ArviZ computes them.

``arviz.ess`` (method 'bulk') and ``arviz.rhat`` (method 'rank') loop over the variables in Python;
for the 100,000 cells of a census fit that takes minutes. :func:`ess_rhat` computes the same
numbers (Vehtari, Gelman, Simpson, Carpenter & Bürkner 2021) with array operations over the
variables, in blocks that bound the memory.

**Bulk ESS.** Each chain is split in two halves; the pooled draws of each variable are replaced by
their normal scores :math:`z = \Phi^{-1}((r - 3/8) / (S + 1/4))` (r: the average rank among the S
draws); the autocorrelations :math:`\hat\rho_t` of z are pooled over the split chains and summed in
pairs up to the first non-positive pair, made monotone (Geyer's initial monotone sequence), giving
:math:`\hat\tau` and ESS = S / max(tau, 1 / log10 S).

**R-hat.** The larger of the split R-hat of z and of the normal scores of the draws' distance from
their median (the folded, tail R-hat).

The reference: Vehtari, A., Gelman, A., Simpson, D., Carpenter, B. & Bürkner, P.-C. (2021). Rank-normalization,
folding, and localization: an improved R-hat for assessing convergence of MCMC. Bayesian Analysis
16(2), 667-718.
"""

from __future__ import annotations

import warnings

import numpy as np
from scipy import fft as sfft
from scipy import special, stats

__all__ = ["ConvergenceWarning", "check_convergence", "ess_rhat"]

#: R-hat above this flags a variable as unconverged (Vehtari et al. 2021's recommendation).
RHAT_LIMIT = 1.01


class ConvergenceWarning(UserWarning):
    """Draws whose chains disagree (R-hat above 1.01) or carry little information (bulk ESS below 100 per chain)."""


def _ranks(pooled: np.ndarray) -> np.ndarray:
    """Average ranks (1..S, ties sharing their mean rank) within each row of (V, S): by counting when the
    rows hold whole numbers spanning fewer than S values (counts, as a census cell's draws are), else by
    sorting."""
    lo = pooled.min(axis=1, keepdims=True)
    span = np.max(pooled.max(axis=1, keepdims=True) - lo, initial=0.0)
    if not span < pooled.shape[1] or not np.array_equal(pooled, np.round(pooled)):  # NaN spans sort too
        return stats.rankdata(pooled, axis=1, method="average")
    width = int(span) + 1
    slot = (pooled - lo).astype(np.int64) + (np.arange(pooled.shape[0]) * width)[:, None]
    counts = np.bincount(slot.ravel(), minlength=pooled.shape[0] * width)
    below = (np.cumsum(counts.reshape(-1, width), axis=1) - counts.reshape(-1, width)).ravel()
    return (below + (counts + 1) / 2)[slot]


def _scores(split: np.ndarray) -> np.ndarray:
    """Normal scores of split chains (V, chains, n), ranked over each variable's pooled draws."""
    pooled = split.reshape(split.shape[0], -1)
    return special.ndtri((_ranks(pooled) - 0.375) / (pooled.shape[1] + 0.25)).reshape(split.shape)


def _split_rhat(z: np.ndarray) -> np.ndarray:
    n = z.shape[2]
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = n * z.mean(axis=2).var(axis=1, ddof=1) / z.var(axis=2, ddof=1).mean(axis=1)
    return np.sqrt((ratio + n - 1) / n)


def _ess(z: np.ndarray) -> np.ndarray:
    """ESS of each variable of z (V, chains, n) by Geyer's initial monotone sequence."""
    n_vars, chains, n = z.shape
    means = z.mean(axis=2)
    centred = z - means[..., None]
    spectrum = sfft.rfft(centred, n=sfft.next_fast_len(2 * n, real=True), axis=2)
    acov = sfft.irfft(spectrum * np.conjugate(spectrum), axis=2)[..., :n] / n
    within = acov[..., 0].mean(axis=1) * n / (n - 1)
    var_plus = within * (n - 1) / n + (means.var(axis=1, ddof=1) if chains > 1 else 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        rho = 1 - (within[:, None] - acov.mean(axis=1)) / var_plus[:, None]
    rho[:, 0] = 1.0
    last = max((n - 3) // 2, 0)
    pairs = rho[:, : 2 * last + 2].reshape(n_vars, -1, 2)
    sums = pairs.sum(axis=2)
    stop = np.where((sums <= 0).any(axis=1), np.argmax(sums <= 0, axis=1), last)
    kept = np.arange(sums.shape[1]) < stop[:, None]
    monotone = np.minimum.accumulate(np.where(kept, sums, np.inf), axis=1)
    rows = np.arange(n_vars)
    even = pairs[rows, stop, 0]
    tail = np.where(stop == 0, 1.0, np.where((sums[rows, stop] >= 0) | (even > 0), even, 0.0))
    tau = -1 + 2 * np.where(kept, monotone, 0.0).sum(axis=1) + tail
    size = chains * n
    ess = size / np.maximum(tau, 1 / np.log10(size))
    ess[np.isnan(rho).any(axis=1)] = np.nan
    return ess


def ess_rhat(draws, *, block: int = 4096) -> tuple[np.ndarray, np.ndarray]:
    """Bulk ESS and rank-normalized split R-hat of every variable of ``draws`` (chain, draw, ...).

    The same numbers as ``arviz.ess(..., method="bulk")`` and ``arviz.rhat(..., method="rank")``,
    vectorized over the variables (``block`` variables at a time). A constant variable gets the ESS
    of all the split draws (chains x 2 floor(draws / 2)), as in ArviZ; R-hat is NaN for one chain.

    Parameters
    ----------
    draws : array_like
        Shape ``(chains, draws, *variables)``, at least 4 draws per chain.
    block : int
        Variables handled at once (memory: about 40 x block x chains x draws bytes).

    Returns
    -------
    (ess, rhat) : tuple of ndarray
        Each of shape ``variables``.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> ess, rhat = ess_rhat(rng.normal(size=(4, 500, 3)))
    >>> ess.shape, bool((ess > 1000).all()), bool((rhat < 1.01).all())
    ((3,), True, True)
    """
    draws = np.asarray(draws)  # converted to float one block at a time (integer draws stay small)
    if draws.ndim < 2 or draws.shape[1] < 4:
        raise ValueError(f"draws must have shape (chains, draws >= 4, ...), got {draws.shape}")
    block = max(int(block), 1)
    chains, n = draws.shape[:2]
    shape = draws.shape[2:]
    flat = draws.reshape(chains, n, -1)
    ess = np.empty(flat.shape[2])
    rhat = np.empty(flat.shape[2])
    half = n // 2
    for start in range(0, flat.shape[2], block):
        part = flat[:, :, start : start + block].astype(float)
        split = np.concatenate([part[:, :half], part[:, n - half :]], axis=0).transpose(2, 0, 1)
        constant = np.ptp(split.reshape(split.shape[0], -1), axis=1) < np.finfo(float).resolution
        z = _scores(split)
        e = _ess(z)
        e[constant] = 2 * chains * half  # the split draws, as ArviZ counts them
        ess[start : start + block] = e
        if chains > 1:
            median = np.median(split.reshape(split.shape[0], -1), axis=1)[:, None, None]
            # folded about the median; doubled, which keeps the ranks and keeps counts whole
            r = np.fmax(_split_rhat(z), _split_rhat(_scores(np.abs(2 * split - 2 * median))))
        else:
            r = np.full(split.shape[0], np.nan)
        rhat[start : start + block] = r
    return ess.reshape(shape), rhat.reshape(shape)


def check_convergence(draws, what: str, attrs: dict) -> None:
    """Warn (:class:`ConvergenceWarning`) where some of ``draws`` (chains, draws, variables) have R-hat above 1.01
    or bulk ESS below 100 per chain, and record ``max_rhat``, ``min_ess`` and ``unconverged`` in ``attrs``.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> stuck = rng.normal(size=(2, 200, 3)) + np.array([0.0, 3.0])[:, None, None]   # chains apart
    >>> attrs = {}
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     check_convergence(stuck, "block totals", attrs)
    >>> attrs["unconverged"], caught[0].category.__name__
    (3, 'ConvergenceWarning')
    """
    draws = np.asarray(draws, dtype=float)
    chains, n = draws.shape[:2]
    if chains < 2 or n < 4 or draws.size == 0:
        return
    ess, rhat = ess_rhat(draws.reshape(chains, n, -1))
    varying = np.isfinite(rhat)
    bad = varying & ((rhat > RHAT_LIMIT) | (ess < 100 * chains))
    attrs.update(
        max_rhat=float(np.max(rhat[varying], initial=1.0)),
        min_ess=float(np.min(ess[varying], initial=np.inf)),
        unconverged=int(bad.sum()),
    )
    if bad.any():
        warnings.warn(
            f"{int(bad.sum())} of {rhat.size} {what} have R-hat above {RHAT_LIMIT} or bulk ESS below {100 * chains} "
            f"(largest R-hat {attrs['max_rhat']:.3f}, smallest ESS {attrs['min_ess']:.0f}): the chains have not "
            "converged; run more tuning and draws (or a thin) before reading these draws",
            ConvergenceWarning,
            stacklevel=3,
        )
