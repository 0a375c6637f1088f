r"""Posteriors of any union of census units: a district's table, total, shares and PL94 margins, draw by draw.

A redistricting plan is a set of districts, each a union of geographic units at any levels (block
groups across tracts and counties, whole tracts plus some block groups). The district's table in one
posterior draw is the sum of its leaves' cells,

.. math::

    T_{d,k} = \sum_{l \in \mathrm{leaves}(d)} n_{l,k},

so the posterior of any function of :math:`T_d` (its total, its shares, the voting-age population by
race) comes from the cell draws of :func:`ppdinfer.census.sampler.sample_cells` with no new sampling. The sum
is the indicator matrix (districts x leaves) times the draws; since the leaves of any unit are one
contiguous range (:class:`~ppdinfer.census.geography.Geography`), each row of the indicator is a few runs of
consecutive leaves, and the product is a sum of slices of the draws, accumulated in 64 bits without
a converted copy of the draws, a chunk of draws at a time (draws stored on disk are read chunk by
chunk). A point estimate (GLS, TopDown: leaves x K) is summed the same way, so an analysis compares
them with the posterior.

Where the table's labels name its axes ('axis=level, axis=level', those of
:mod:`ppdinfer.census.pl94`, or the 14 cells of :meth:`~ppdinfer.census.geography.TableSpec.hispanic_race`), the result also
holds the margins of the published redistricting tables: population by race (P1), by Hispanic
origin and race (P2), the voting-age (18+) population by race (P3) and by Hispanic origin and race
(P4), by group-quarters type (P5), and Hispanic origin by voting age; a 63-combination race axis
also gets each race margin over the seven groups of the published tables (``pl94.MAJOR_RACES``).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import xarray as xr

from ..inference.diagnostics import ess_rhat
from ..validation import positive_int
from .geography import CensusQueries, Geography, TableSpec
from .pl94 import CENRACE, MAJOR_RACES

__all__ = ["aggregate", "district_summary"]

_CELL_DIMS = ("chain", "draw", "unit", "cell")
_MAJOR_LABELS = (*CENRACE[:6], "two_or_more")
_VOTING_AGE = ("votingage", "18+")
#: The margins of the published tables: name -> (axes kept, whether it counts the voting-age population only).
_MARGINS = {
    "by_race": (("cenrace",), False),
    "by_hispanic": (("hispanic",), False),
    "hispanic_by_race": (("hispanic", "cenrace"), False),
    "by_group_quarters": (("hhgq",), False),
    "voting_age": ((), True),
    "voting_age_by_race": (("cenrace",), True),
    "voting_age_hispanic_by_race": (("hispanic", "cenrace"), True),
    "hispanic_by_voting_age": (("hispanic", "votingage"), False),
}


def aggregate(draws, units, *, census: CensusQueries | Geography | None = None, chunk_bytes: int = 2**26) -> xr.Dataset:
    """The table, total, shares and margins of one or several unions of units, per posterior draw.

    Parameters
    ----------
    draws : xarray.DataTree, Dataset, DataArray or array_like
        The result of :func:`~ppdinfer.census.sampler.sample_cells` (or its posterior Dataset, or its ``cells``
        DataArray with dims (chain, draw, unit, cell), unit = leaf ids); or a point estimate, leaves x K in
        the geography's leaf order (``gls_estimate(...).cell_estimate``, ``topdown_estimate(...)``), which
        needs ``census`` as CensusQueries for its leaves and labels.
    units : collection of unit ids, or dict name -> collection
        A district: ids of units at any levels (a list, not a lone string), none inside another (a person
        would count twice); an empty one sums no leaf. A dict gives several districts (a ``district``
        dimension); different districts may overlap (alternative plans).
    census : CensusQueries or Geography, optional
        The geography whose units the ids name; without it, the ids must be leaf ids of the draws.
    chunk_bytes : int
        Draws read at a time: about this many bytes of cells.

    Returns
    -------
    xarray.Dataset
        ``table`` (..., cell) the summed cells, ``total``, ``shares`` (table / total; NaN for an empty
        district) and, for labelled axes (module docstring), the margins ``by_race``, ``by_hispanic``,
        ``hispanic_by_race``, ``by_group_quarters``, ``voting_age``, ``voting_age_by_race``,
        ``voting_age_hispanic_by_race``, ``hispanic_by_voting_age`` that the table's axes allow, and their
        ``major_race`` twins for the 63 race combinations. Dims (chain, draw, district, ...), chain and
        draw absent for a point estimate, district absent for a single collection.

    Raises
    ------
    ValueError
        Unknown unit ids (named), units that overlap within a district, draws of the wrong shape, or draws
        that lack a leaf of the geography.
    TypeError
        A lone string as a district, or a point estimate without CensusQueries.

    Examples
    --------
    >>> import numpy as np, xarray as xr
    >>> from ppdinfer.census import Geography
    >>> geo = Geography(["s", "t1", "t2", "a", "b", "c"], [None, "s", "s", "t1", "t1", "t2"])
    >>> cells = xr.DataArray(np.arange(12).reshape(1, 2, 3, 2), dims=("chain", "draw", "unit", "cell"),
    ...                      coords={"unit": ["a", "b", "c"], "cell": ["x", "y"]})
    >>> out = aggregate(cells, {"one": ["t1"], "two": ["b", "t2"]}, census=geo)
    >>> out["total"].values.tolist()        # per draw: t1 = a + b, two = b + c
    [[[6, 14], [30, 38]]]
    >>> out["table"].sel(district="two", cell="y").values.tolist()
    [[8, 20]]
    """
    chunk_bytes = positive_int(chunk_bytes, "chunk_bytes")
    cells, point = _cells(draws, census)
    names, districts = _districts(units, census, [str(v) for v in cells["unit"].values])
    table = _summed(cells, districts, chunk_bytes)
    dims = ("chain", "draw", "district")
    coords = {"chain": cells["chain"].values, "draw": cells["draw"].values, "district": names}
    out = _quantities(table, dims, coords, tuple(str(v) for v in cells["cell"].values))
    if point:
        out = out.squeeze(("chain", "draw"), drop=True)
    if not isinstance(units, Mapping):
        out = out.squeeze("district", drop=True)
    out.attrs["source"] = "point estimate" if point else "posterior draws"
    return out


def district_summary(aggregated: xr.Dataset, var_names=None, *, quantiles=(0.05, 0.95)) -> xr.Dataset:
    """Mean, sd, quantiles, bulk ESS and R-hat of every quantity of an :func:`aggregate` result.

    ESS and R-hat are ArviZ's (``arviz.ess`` bulk, ``arviz.rhat`` rank), computed by
    ``ppdinfer.inference.diagnostics.ess_rhat``, vectorized over the cells of all districts.

    Parameters
    ----------
    aggregated : xarray.Dataset
        An :func:`aggregate` result of posterior draws (dims chain and draw).
    var_names : str or list of str, optional
        The quantities (default all).
    quantiles : sequence of float
        Probabilities in [0, 1] (default the 5 % and 95 % quantiles), labelled 'q5', 'q95'.

    Returns
    -------
    xarray.Dataset
        The same variables with (chain, draw) replaced by a ``stat`` dimension: 'mean', 'sd', the
        quantiles, 'ess_bulk', 'r_hat'.

    Examples
    --------
    >>> import numpy as np, xarray as xr
    >>> cells = xr.DataArray(np.random.default_rng(0).poisson(5, (2, 100, 2, 3)), dims=("chain", "draw", "unit", "cell"),
    ...                      coords={"unit": ["a", "b"], "cell": ["x", "y", "z"]})
    >>> s = district_summary(aggregate(cells, ["a", "b"]), "total")
    >>> s["stat"].values.tolist()
    ['mean', 'sd', 'q5', 'q95', 'ess_bulk', 'r_hat']
    >>> bool(abs(float(s["total"].sel(stat="mean")) - 30) < 1)
    True
    """
    if not isinstance(aggregated, xr.Dataset):
        raise TypeError(f"aggregated must be an xarray Dataset (from aggregate), got {type(aggregated).__name__}")
    if var_names is None:
        var_names = list(aggregated.data_vars)
    elif isinstance(var_names, str):
        var_names = [var_names]
    missing = [v for v in var_names if v not in aggregated.data_vars]
    if missing:
        raise ValueError(f"var_names: {missing} are not quantities of aggregated ({list(aggregated.data_vars)})")
    probs = np.asarray(quantiles, dtype=float).ravel()
    if probs.size == 0 or np.any(~np.isfinite(probs) | (probs < 0) | (probs > 1)):
        raise ValueError(f"quantiles must be probabilities in [0, 1], got {quantiles!r}")
    stats = ["mean", "sd", *(f"q{100 * p:g}" for p in probs), "ess_bulk", "r_hat"]
    out = {}
    for name in var_names:
        values = aggregated[name]
        if values.dims[:2] != ("chain", "draw"):
            raise ValueError(
                f"aggregated[{name!r}] has dims {values.dims}: district_summary needs posterior draws (chain, draw)"
            )
        x = np.asarray(values.values, dtype=float)
        ess, rhat = ess_rhat(x)
        rows = [x.mean(axis=(0, 1)), x.std(axis=(0, 1), ddof=1), *np.quantile(x, probs, axis=(0, 1)), ess, rhat]
        out[name] = (("stat", *values.dims[2:]), np.stack(rows))
    coords = {k: v for k, v in aggregated.coords.items() if k not in ("chain", "draw")}
    return xr.Dataset(out, coords={**coords, "stat": stats})


def _cells(draws, census) -> tuple[xr.DataArray, bool]:
    """The cells as a (chain, draw, unit, cell) DataArray, and whether they are a point estimate."""
    if isinstance(draws, xr.DataTree):
        if "posterior" not in draws.children or "cells" not in draws["posterior"].data_vars:
            raise ValueError("draws: a DataTree must hold posterior/cells (a sample_cells result)")
        draws = draws["posterior"].to_dataset()
    if isinstance(draws, xr.Dataset):
        if "cells" not in draws.data_vars:
            raise ValueError(f"draws: the Dataset has no 'cells' variable (it has {list(draws.data_vars)})")
        draws = draws["cells"]
    if isinstance(draws, xr.DataArray):
        if set(draws.dims) != set(_CELL_DIMS):
            raise ValueError(f"draws must have dims {_CELL_DIMS}, got {draws.dims}")
        for dim in ("unit", "cell"):
            if dim not in draws.coords:
                draws = draws.assign_coords({dim: np.arange(draws.sizes[dim])})
        return draws.transpose(*_CELL_DIMS), False
    if not isinstance(census, CensusQueries):
        raise TypeError(
            "draws: a point estimate (leaves x K array) needs census as CensusQueries, for its leaves and cell "
            f"labels; got census={type(census).__name__}"
        )
    estimate = np.asarray(draws)
    leaf_ids, labels = census.cell_coords()
    if estimate.dtype.kind not in "iuf" or estimate.shape != (leaf_ids.size, len(labels)):
        raise ValueError(
            f"draws: a point estimate must be numbers of shape (leaves, K) = {(leaf_ids.size, len(labels))}, got "
            f"shape {estimate.shape} ({estimate.dtype})"
        )
    units = [str(v) for v in leaf_ids]
    array = xr.DataArray(estimate[None, None], dims=_CELL_DIMS, coords={"unit": units, "cell": list(labels)})
    return array.assign_coords(chain=[0], draw=[0]), True


def _districts(units, census, leaf_ids: list[str]) -> tuple[list[str], list[list[tuple[int, int]]]]:
    """District names and, for each, its runs (start, stop) of consecutive positions in the draws' leaves."""
    if isinstance(units, Mapping):
        if not units:
            raise ValueError("units: the dict names no district")
        named = [(str(name), members) for name, members in units.items()]
        if len({name for name, _ in named}) != len(named):
            raise ValueError(f"units: district names must be distinct as strings, got {list(units)}")
    else:
        named = [("district", units)]
    position = {leaf: i for i, leaf in enumerate(leaf_ids)}
    if len(position) != len(leaf_ids):
        raise ValueError("draws: the unit coordinate repeats a leaf id")
    if census is None:
        ranges = {leaf: (i, i + 1) for leaf, i in position.items()}
        resolve, to_draws = (lambda unit: ranges.get(str(unit))), np.arange(len(leaf_ids))
    else:
        geo = census.geography if isinstance(census, CensusQueries) else census
        if not isinstance(geo, Geography):
            raise TypeError(f"census must be CensusQueries or a Geography, got {type(census).__name__}")
        geo_leaves = [str(v) for v in geo.ids[geo.leaves]]
        absent = [leaf for leaf in geo_leaves if leaf not in position]
        if absent:
            raise ValueError(f"draws hold no cells of {len(absent)} leaves of census's geography (e.g. {absent[:3]})")
        by_name = {str(v): u for u, v in enumerate(geo.ids)}
        to_draws = np.array([position[leaf] for leaf in geo_leaves], dtype=np.int64)

        def resolve(unit):
            try:
                u = geo.index(unit)
            except (TypeError, ValueError):
                u = by_name.get(str(unit))
                if u is None:
                    return None
            return int(geo.leaf_start[u]), int(geo.leaf_stop[u])

    return [name for name, _ in named], [_runs(name, members, resolve, to_draws) for name, members in named]


def _runs(name: str, members, resolve, to_draws: np.ndarray) -> list[tuple[int, int]]:
    """One district's leaves (ranges from ``resolve``) checked for unknown ids and overlaps, as runs of draws' leaves."""
    if isinstance(members, str | bytes) or not np.iterable(members):
        raise TypeError(f"units: district {name!r} must be a collection of unit ids (a list), got {members!r}")
    members = list(members)
    spans = [resolve(unit) for unit in members]
    unknown = [unit for unit, span in zip(members, spans) if span is None]
    if unknown:
        raise ValueError(f"units: district {name!r} names unknown units {unknown[:10]!r}")
    order = sorted(range(len(members)), key=lambda i: (spans[i][0], -spans[i][1]))
    for before, after in zip(order, order[1:]):
        if spans[after][0] < spans[before][1]:
            raise ValueError(
                f"units: district {name!r} holds {members[after]!r} and {members[before]!r}, which overlap (one is "
                "inside the other, or listed twice): its people would count twice"
            )
    leaves = np.sort(np.concatenate([to_draws[a:b] for a, b in spans] or [np.zeros(0, np.int64)]))
    breaks = np.flatnonzero(np.diff(leaves) != 1) + 1
    return [(int(run[0]), int(run[-1]) + 1) for run in np.split(leaves, breaks) if run.size]


def _summed(cells: xr.DataArray, districts: list, chunk_bytes: int) -> np.ndarray:
    """(chain, draw, district, cell) sums of the districts' runs of leaves, in int64 (float64 for real cells)."""
    chains, n_draws, n_units, K = (cells.sizes[d] for d in _CELL_DIMS)
    kind = np.dtype(cells.dtype).kind
    if kind not in "iuf":
        raise ValueError(f"draws: cells must be numbers, got dtype {cells.dtype}")
    accumulate = np.float64 if kind == "f" else np.int64
    out = np.zeros((chains, n_draws, len(districts), K), dtype=accumulate)
    step = max(1, chunk_bytes // max(1, n_units * K * np.dtype(cells.dtype).itemsize))
    for c in range(chains):
        for start in range(0, n_draws, step):
            block = cells.isel(chain=c, draw=slice(start, start + step)).values  # (n, unit, cell): a view in memory
            for d, runs in enumerate(districts):
                target = out[c, start : start + step, d]
                for a, b in runs:
                    target += block[:, a:b].sum(axis=1, dtype=accumulate)
    return out


def _quantities(table: np.ndarray, dims: tuple, coords: dict, labels: tuple) -> xr.Dataset:
    total = table.sum(axis=-1)
    shares = np.full(table.shape, np.nan)
    np.divide(table, total[..., None], out=shares, where=total[..., None] > 0)
    data = {"table": ((*dims, "cell"), table), "total": (dims, total), "shares": ((*dims, "cell"), shares)}
    coords = {**coords, "cell": list(labels)}
    axes = _axes(labels)
    if axes is not None:
        margins, levels = _margins(table, dims, axes)
        data.update(margins)
        coords.update(levels)
    return xr.Dataset(data, coords=coords)


def _axes(labels: tuple):
    """The table's axes [(name, levels)] when its labels are their C-order product, else None."""
    if labels == TableSpec.hispanic_race().labels:
        races = tuple(label.split(":")[1] for label in labels[:7])
        return [("hispanic", ("not_hispanic", "hispanic")), ("cenrace", races)]
    parsed = [[part.split("=", 1) for part in label.split(", ")] for label in labels]
    if any(len(part) != 2 for row in parsed for part in row):
        return None
    names = tuple(axis for axis, _ in parsed[0])
    if len(set(names)) != len(names) or any(tuple(axis for axis, _ in row) != names for row in parsed):
        return None
    levels = [tuple(dict.fromkeys(row[i][1] for row in parsed)) for i in range(len(names))]
    product = np.indices([len(v) for v in levels]).reshape(len(names), -1).T
    if product.shape[0] != len(labels):
        return None
    for row, index in zip(parsed, product):
        if any(row[i][1] != levels[i][index[i]] for i in range(len(names))):
            return None
    return list(zip(names, levels))


def _margins(table: np.ndarray, dims: tuple, axes: list) -> tuple[dict, dict]:
    """The published tables' margins (``_MARGINS``) that the axes allow, their major-race twins, and their coords."""
    names = [axis for axis, _ in axes]
    levels = dict(axes)
    lead = table.ndim - 1
    grid = table.reshape(*table.shape[:-1], *(len(v) for _, v in axes))
    out, used = {}, set()
    for name, (kept, adults) in _MARGINS.items():
        if not set(kept) <= set(names) or set(kept) == set(names):
            continue  # an axis it needs is absent, or it would be the table itself
        view = grid
        if adults:
            axis, level = _VOTING_AGE
            if axis not in names or level not in levels[axis]:
                continue
            view = np.take(grid, [levels[axis].index(level)], axis=lead + names.index(axis))
        kept_dims = tuple(axis for axis in names if axis in kept)  # in the table's order
        values = view.sum(axis=tuple(lead + i for i, axis in enumerate(names) if axis not in kept))
        out[name] = ((*dims, *kept_dims), values)
        used.update(kept_dims)
        if "cenrace" in kept_dims and levels["cenrace"] == CENRACE:
            at = lead + kept_dims.index("cenrace")
            major = np.stack([np.take(values, list(g), axis=at).sum(axis=at) for g in MAJOR_RACES], axis=at)
            major_dims = tuple("major_race" if axis == "cenrace" else axis for axis in kept_dims)
            out[name.replace("race", "major_race")] = ((*dims, *major_dims), major)
            used.add("major_race")
    coords = {axis: list(levels[axis]) for axis in names if axis in used}
    if "major_race" in used:
        coords["major_race"] = list(_MAJOR_LABELS)
    return out, coords
