"""Assembly of sampler output into an ArviZ-style ``xarray.DataTree``.

Groups: ``posterior`` (theta and x with dims (chain, draw, ...), equal-weight draws that any
ArviZ function may summarise), ``sample_stats``, ``observed_data`` (y), ``constant_data`` (z and
the mechanism's parameters), and a sampler's own groups (``proposal``: the weighted draws of
importance sampling; ``exact``: the exact posterior).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import xarray as xr

from .model import PPDModel


def dimension_names(name: str, ndim: int, dims: dict | None = None) -> list[str]:
    """Dimension names of a variable: ``dims[name]`` (a model's ``dims``) if given, else ``{name}_dim_{i}``.

    Examples
    --------
    >>> dimension_names("cases", 2), dimension_names("cases", 1, {"cases": ["county"]})
    (['cases_dim_0', 'cases_dim_1'], ['county'])
    """
    if dims and name in dims:
        return list(dims[name])
    return [f"{name}_dim_{i}" for i in range(ndim)]


def posterior_dataset(
    model: PPDModel, theta: np.ndarray, x: np.ndarray, theta_shape, x_shape, chains: int = 1
) -> xr.Dataset:
    """theta (N, k) and x (N, d) as a Dataset with dims (chain, draw, ...)."""
    n = theta.shape[0] // chains
    data = {}
    if model.blocks is not None:  # each block of a hierarchical theta its own variable
        start = 0
        for name, shape in model.blocks.items():
            stop = start + int(np.prod(shape))
            data[name] = (
                ["chain", "draw", *dimension_names(name, len(shape), model.dims)],
                theta[:, start:stop].reshape(chains, n, *shape),
            )
            start = stop
    elif len(model.names) == 1:
        name = model.names[0]
        values = theta.reshape(chains, n, *theta_shape)
        data[name] = (["chain", "draw", *dimension_names(name, len(theta_shape), model.dims)], values)
    else:
        for i, name in enumerate(model.names):
            data[name] = (["chain", "draw"], theta[:, i].reshape(chains, n))
    x_dims = dimension_names(model.x_name, len(x_shape), model.dims)
    data[model.x_name] = (["chain", "draw", *x_dims], x.reshape(chains, n, *x_shape))
    return xr.Dataset(data, coords={"chain": np.arange(chains), "draw": pd.RangeIndex(n)})  # a range, not n integers


def observed_dataset(model: PPDModel, y: np.ndarray) -> xr.Dataset:
    return xr.Dataset({"y": (dimension_names(model.x_name, y.ndim, model.dims), y)})


def constant_dataset(model: PPDModel, z) -> xr.Dataset:
    data = {}
    for key, value in (z or {}).items():
        value = np.asarray(value)
        data[key] = (dimension_names(key, value.ndim), value)
    for key, value in model.mechanism.parameters().items():
        value = np.asarray(value)  # a tuple: one setting per coordinate (a vector sensitivity)
        data[f"mechanism_{key}"] = (dimension_names(f"mechanism_{key}", value.ndim), value)
    guarantee = model.mechanism.guarantee()
    return xr.Dataset(data, attrs={"mechanism": repr(model.mechanism), **guarantee.attrs()})


def assemble(
    model: PPDModel,
    y,
    z,
    posterior: xr.Dataset,
    sample_stats: xr.Dataset | None = None,
    attrs: dict | None = None,
    labels: tuple[dict, dict] | None = None,
    **extra_groups: xr.Dataset,
) -> xr.DataTree:
    """The DataTree of one sampler run.

    ``labels`` is ``model.labels(y, z)`` computed from the data as the user gave them (a pandas y
    keeps its index there); by default the model's own dims and coords. Every group's default
    dimension names ``{name}_dim_{i}`` are renamed to the labelled ones and the coordinates attached.
    """
    groups = {"posterior": posterior}
    if sample_stats is not None:
        groups["sample_stats"] = sample_stats
    groups["observed_data"] = observed_dataset(model, y)
    groups["constant_data"] = constant_dataset(model, z)
    groups.update(extra_groups)
    dims, coords = model.labels(y, z) if labels is None else labels
    renames = {
        default: label
        for name, names in dims.items()
        if name not in model.dims
        for default, label in zip(dimension_names(name, len(names)), names, strict=True)
        if default != label
    }
    for key, dataset in groups.items():
        dataset = dataset.rename({old: new for old, new in renames.items() if old in dataset.dims})
        groups[key] = dataset.assign_coords({dim: values for dim, values in coords.items() if dim in dataset.dims})
    tree = xr.DataTree.from_dict(groups)
    tree.attrs.update({"theta_names": list(model.names), "x_name": model.x_name, **netcdf_flags(attrs or {})})
    return tree


def netcdf_flags(attrs: dict) -> dict:
    """``attrs`` with every boolean stored as the integer 0 or 1, which netCDF holds (it has no booleans).

    A result's flags (the rejection sampler's ``complete`` and ``per_unit``) so stay true or false
    to ``if`` and ``not`` while ``result.to_netcdf(path)`` writes the result as it is.

    Examples
    --------
    >>> netcdf_flags({"complete": True, "per_unit": False, "sampler": "rejection"})
    {'complete': 1, 'per_unit': 0, 'sampler': 'rejection'}
    """
    return {key: int(value) if isinstance(value, (bool, np.bool_)) else value for key, value in attrs.items()}
