"""Shared checks: compare sampler output with the exact posterior at fixed seeds; skip where data are absent."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from scipy import stats

#: How to get UCI Adult, said in one line by every skip for want of it.
GET_ADULT = "run `ppdinfer data fetch adult` or set PPDINFER_ADULT_DATA to a copy"


def adult_here(name: str = "adult.data") -> Path | None:
    """The Adult file ``name`` if it is here without a download (a local copy or the cache), else None."""
    from ppdinfer.datasets import adult_path

    try:
        return adult_path(name, download=False)
    except FileNotFoundError:
        return None


def require_adult(name: str = "adult.data") -> Path:
    """The Adult file ``name``, or skip the calling test with one line saying how to get it (never downloads)."""
    path = adult_here(name)
    if path is None:
        pytest.skip(f"UCI Adult {name} is not here: {GET_ADULT}")
    return path


def theta_draws(result, name):
    values = result["posterior"][name].values
    return values.reshape(values.shape[0] * values.shape[1], -1)


def x_draws(result):
    name = result.attrs["x_name"]
    values = result["posterior"][name].values
    return values.reshape(values.shape[0] * values.shape[1], -1)


def theta_mean_z_scores(result, exact, name, n_eff, weights=None):
    """(sampler mean - exact mean) / (exact sd / sqrt(n_eff)) per component of theta."""
    draws = theta_draws(result, name)
    w = np.ones(draws.shape[0]) if weights is None else weights
    mean = (w[:, None] * draws).sum(axis=0) / w.sum()
    exact_mean = exact["exact"]["theta_mean"].values
    exact_sd = exact["exact"]["theta_sd"].values
    return (mean - exact_mean) / (exact_sd / np.sqrt(n_eff))


def chi_square_pvalue(draws, support, pmf):
    """Chi-square goodness of fit of iid draws (rows) to ``pmf`` on ``support`` (rows).

    Cells expected to hold fewer than 5 draws are pooled into one; any draw outside the
    support is an immediate failure (p = 0).
    """
    draws = np.asarray(draws).reshape(len(draws), -1)
    support = np.asarray(support).reshape(len(support), -1)
    lookup = {tuple(row): i for i, row in enumerate(support)}
    index = [lookup.get(tuple(row), -1) for row in draws]
    if min(index) < 0:
        return 0.0
    observed = np.bincount(index, minlength=len(pmf)).astype(float)
    expected = np.asarray(pmf) / np.sum(pmf) * len(draws)
    small = expected < 5
    observed = np.append(observed[~small], observed[small].sum())
    expected = np.append(expected[~small], expected[small].sum())
    if expected[-1] < 1e-9:
        observed, expected = observed[:-1], expected[:-1]
    return stats.chisquare(observed, expected * observed.sum() / expected.sum()).pvalue


def x_chi_square_pvalue(draws, exact):
    """Chi-square goodness of fit of iid x draws to the exact posterior pmf of x."""
    support = exact["exact"]["x_support"].values.reshape(exact["exact"].sizes["support"], -1)
    return chi_square_pvalue(draws, support, exact["exact"]["x_pmf"].values)


def matches_exact(result, exact, name, n_eff=None, weights=None, z_tol=4.5, p_min=1e-4):
    """True when theta means are within z_tol Monte Carlo SEs and (iid draws) x passes chi-square."""
    draws = theta_draws(result, name)
    n_eff = draws.shape[0] if n_eff is None else n_eff
    z = theta_mean_z_scores(result, exact, name, n_eff, weights)
    if np.any(np.abs(z) > z_tol):
        return False
    if weights is None:
        return x_chi_square_pvalue(x_draws(result), exact) > p_min
    return True
