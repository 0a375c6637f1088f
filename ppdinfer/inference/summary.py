"""One table of posterior means, sds and central intervals for any result of the package.

Rejection and MCMC draws count equally; an importance result counts all its proposals by
their weights (not its resampled ``posterior``); an exact result uses its exact moments and
CDFs (theta) and its exact pmf (x).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import xarray as xr

from ..validation import probability


def _flatten(da: xr.DataArray) -> tuple[np.ndarray, list[str]]:
    """(N, m) values of a posterior variable with dims (chain, draw, ...) and their labels."""
    values = da.values.reshape(da.sizes["chain"] * da.sizes["draw"], -1)
    shape = da.shape[2:]
    if not shape:
        return values, [da.name]
    ticks = [_ticks(da, dim) for dim in da.dims[2:]]
    labels = [f"{da.name}[{','.join(tick[i] for tick, i in zip(ticks, idx))}]" for idx in np.ndindex(*shape)]
    return values, labels


def _ticks(da: xr.DataArray, dim: str) -> list[str]:
    """The labels of ``dim``'s positions: its coordinate's values where it has one (as arviz.summary), else 0, 1, ..."""
    if dim in da.coords:
        return [str(value) for value in da.coords[dim].values]
    return [str(i) for i in range(da.sizes[dim])]


def _weighted_rows(values, weights, labels, prob):
    """Rows (mean, sd, lower, upper) of the weighted distribution of each column of ``values``."""
    weights = weights / weights.sum()
    tail = (1 - prob) / 2
    integer = values.dtype.kind in "iub"
    rows = {}
    for column, label in zip(values.T, labels):
        order = np.argsort(column, kind="stable")
        sorted_values, sorted_weights = column[order], weights[order]
        cdf = np.cumsum(sorted_weights)
        cdf /= cdf[-1]
        mean = np.sum(weights * column)
        sd = np.sqrt(np.sum(weights * (column - mean) ** 2))
        if np.isnan(mean):  # a NaN draw (or weight): no interval either, rather than one of the other draws
            rows[label] = (np.nan, np.nan, np.nan, np.nan)
            continue
        if integer:  # discrete quantiles: see summary()
            lower = sorted_values[np.searchsorted(cdf, tail, side="right")]
            upper = sorted_values[np.searchsorted(cdf, 1 - tail, side="left")]
        else:
            lower, upper = np.interp([tail, 1 - tail], cdf - sorted_weights / 2, sorted_values)
        rows[label] = (mean, sd, lower, upper)
    return rows


def summary(result: xr.DataTree | xr.Dataset | xr.DataArray, prob: float = 0.9, include_x: bool = True) -> pd.DataFrame:
    """Posterior mean, sd and central ``prob`` interval of every parameter (and x).

    Returns a DataFrame indexed like ``arviz.summary``: ``theta[0]``, ``x[3]``, or the
    coordinate's values where a dimension has them (``lam[hosp_00]``, ``cases[Adams,2020-04]``),
    with float columns ``mean``, ``sd``, ``lower``, ``upper``. For a real-valued variable the interval is
    equal-tailed, interpolated between draws (or read off the exact CDF). For an integer-valued
    variable (integer dtype, such as the counts x) ``lower`` and ``upper`` are integers (held as
    floats, as the columns are shared with theta): ``lower`` is the smallest value v with
    P(X <= v) > (1 - prob) / 2 and ``upper`` the largest with P(X >= v) > (1 - prob) / 2, so
    each tail outside the interval has probability at most (1 - prob) / 2 and the interval
    covers at least ``prob``. A variable with a NaN draw gets NaN in every column.

    Parameters
    ----------
    result : xarray.DataTree, xarray.Dataset or xarray.DataArray
        A sampler's result (its ``posterior`` group; the weighted proposals of an importance
        result; the exact moments, CDFs and pmf of an exact result), or draws with dims
        (chain, draw, ...): a Dataset such as a ``posterior`` group, or one DataArray, for
        instance a function of x computed from the draws. Draws count equally; an unnamed
        DataArray is labelled ``value``.
    prob : float
        The probability of the central interval, in (0, 1).
    include_x : bool
        Whether to include the confidential data x (the result's ``x_name``; ``x`` for draws).

    Examples
    --------
    >>> import ppdinfer as pp
    >>> from ppdinfer import generators, mechanisms, priors
    >>> model = pp.PPDModel(priors.Beta(1, 1), generators.Binomial(100), mechanisms.DiscreteLaplace(0.5), names="p")
    >>> print(pp.summary(pp.exact_posterior(model, 40), prob=0.9).round(2))
       mean    sd  lower  upper
    p   0.4  0.06   0.31   0.49
    x  40.0  2.80  35.00  45.00

    A quantity computed from the draws, here the share of failures 1 - x / 100:

    >>> draws = pp.rejection_sample(model, 40, draws=500, random_seed=1, progressbar=False)
    >>> share = (1 - draws["posterior"]["x"] / 100).rename("failures")
    >>> table = pp.summary(share)
    >>> list(table.index), bool(0.5 < table.loc["failures", "mean"] < 0.7)
    (['failures'], True)
    """
    prob = probability(prob, "prob")
    if not isinstance(include_x, (bool, np.bool_)):
        raise ValueError(f"include_x must be True or False, got {include_x!r}")
    exact, weights = None, None
    if isinstance(result, xr.DataTree):
        x_name = result.attrs.get("x_name", "x")
        exact = result["exact"] if "exact" in result.children else None
        names, draws = list(result["posterior"].data_vars), result["posterior"]
        if "proposal" in result.children:  # importance: the weighted proposals, not the resample
            draws = result["proposal"]
            weights = np.exp(draws["log_weight"].values.reshape(-1))
    elif isinstance(result, (xr.Dataset, xr.DataArray)):
        x_name = result.attrs.get("x_name", "x")
        draws = _draws_dataset(result)
        names = list(draws.data_vars)
    else:
        raise ValueError(f"result must be an xarray DataTree, Dataset or DataArray, got {type(result).__name__}")
    rows = {}
    component = 0  # position of the next theta component in the exact group
    for name in names:
        if name == x_name and not include_x:
            continue
        values, labels = _flatten(draws[name])
        if exact is not None and name == x_name:
            support = exact["x_support"].values.reshape(exact.sizes["support"], -1)
            rows.update(_weighted_rows(support, exact["x_pmf"].values, labels, prob))
        elif exact is not None:
            rows.update(_exact_theta_rows(exact, labels, prob, component))
            component += len(labels)
        else:
            w = np.ones(values.shape[0]) if weights is None else weights
            rows.update(_weighted_rows(values, w, labels, prob))
    table = pd.DataFrame.from_dict(rows, orient="index", columns=["mean", "sd", "lower", "upper"], dtype=float)
    table.attrs["prob"] = prob
    return table


def _draws_dataset(draws: xr.Dataset | xr.DataArray) -> xr.Dataset:
    """Draws as a Dataset whose variables have dims (chain, draw, ...), in that order."""
    if isinstance(draws, xr.DataArray):
        draws = draws.to_dataset(name="value" if draws.name is None else draws.name)
    if not draws.data_vars:
        raise ValueError("result must hold at least one variable of draws")
    for name, variable in draws.data_vars.items():
        if "chain" not in variable.dims or "draw" not in variable.dims:
            raise ValueError(
                f"result: variable {name!r} has dims {variable.dims}; draws need the dims 'chain' and 'draw'"
            )
    return draws.transpose("chain", "draw", ...)


def _exact_theta_rows(exact, labels, prob, first):
    rows = {}
    for j, label in enumerate(labels, start=first):
        grid = exact["theta_grid"].values[:, j]
        cdf = exact["theta_cdf"].values[:, j]
        lower, upper = np.interp([(1 - prob) / 2, (1 + prob) / 2], cdf, grid)
        rows[label] = (float(exact["theta_mean"][j]), float(exact["theta_sd"][j]), lower, upper)
    return rows
