"""One table of posterior means, sds and equal-tailed intervals for any result of the package.

Rejection and MCMC draws count equally; importance draws by their weights; an exact result
uses its exact moments and CDFs (theta) and its exact pmf (x).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import xarray as xr

from .._validation import probability


def _flatten(da: xr.DataArray) -> tuple[np.ndarray, list[str]]:
    """(N, m) values of a posterior variable with dims (chain, draw, ...) and their labels."""
    values = da.values.reshape(da.sizes["chain"] * da.sizes["draw"], -1)
    shape = da.shape[2:]
    if not shape:
        return values, [da.name]
    labels = [f"{da.name}[{','.join(map(str, idx))}]" for idx in np.ndindex(*shape)]
    return values, labels


def _weighted_rows(values, weights, labels, prob):
    weights = weights / weights.sum()
    rows = {}
    for column, label in zip(values.T, labels):
        order = np.argsort(column, kind="stable")
        sorted_values, sorted_weights = column[order], weights[order]
        mid = np.cumsum(sorted_weights) - sorted_weights / 2
        mean = np.sum(weights * column)
        sd = np.sqrt(max(np.sum(weights * column**2) - mean**2, 0.0))
        lower, upper = np.interp([(1 - prob) / 2, (1 + prob) / 2], mid, sorted_values)
        rows[label] = (mean, sd, lower, upper)
    return rows


def summary(result: xr.DataTree, prob: float = 0.9, include_x: bool = True) -> pd.DataFrame:
    """Posterior mean, sd and central ``prob`` interval of every parameter (and x).

    Returns a DataFrame indexed like ``arviz.summary`` (``theta[0]``, ``x[3]``, ...), with
    columns ``mean``, ``sd``, ``lower``, ``upper``.
    """
    prob = probability(prob, "prob")
    x_name = result.attrs.get("x_name", "x")
    exact = result["exact"] if "exact" in result.children else None
    weights = None
    if "sample_stats" in result.children and "log_weight" in result["sample_stats"]:
        weights = np.exp(result["sample_stats"]["log_weight"].values.reshape(-1))
    rows = {}
    component = 0  # position of the next theta component in the exact group
    for name, da in result["posterior"].data_vars.items():
        if name == x_name and not include_x:
            continue
        values, labels = _flatten(da)
        if exact is not None and name == x_name:
            support = exact["x_support"].values.reshape(exact.sizes["support"], -1).astype(float)
            rows.update(_weighted_rows(support, exact["x_pmf"].values, labels, prob))
        elif exact is not None:
            rows.update(_exact_theta_rows(exact, labels, prob, component))
            component += len(labels)
        else:
            w = np.ones(values.shape[0]) if weights is None else weights
            rows.update(_weighted_rows(values, w, labels, prob))
    table = pd.DataFrame.from_dict(rows, orient="index", columns=["mean", "sd", "lower", "upper"])
    table.attrs["prob"] = prob
    return table


def _exact_theta_rows(exact, labels, prob, first):
    rows = {}
    for j, label in enumerate(labels, start=first):
        grid = exact["theta_grid"].values[:, j]
        cdf = exact["theta_cdf"].values[:, j]
        lower, upper = np.interp([(1 - prob) / 2, (1 + prob) / 2], cdf, grid)
        rows[label] = (float(exact["theta_mean"][j]), float(exact["theta_sd"][j]), lower, upper)
    return rows
