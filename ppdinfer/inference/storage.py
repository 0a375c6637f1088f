"""Saving a result to one netCDF file and loading it back, attributes included.

A result is an ``xarray.DataTree``, which xarray writes with ``DataTree.to_netcdf`` (each
group a netCDF group; the ``h5netcdf`` backend, a dependency of ppdinfer) and reads with
``xarray.open_datatree``. The values, dims and coordinates survive those calls, but netCDF
attributes hold only numbers, strings and arrays of them: a boolean attribute (the rejection
sampler's ``complete``) is refused, and a list of one element (``theta_names`` of a model with
one parameter) comes back as that element. :func:`save` stores every attribute that netCDF
would not return unchanged as JSON text and lists their names in the attribute
``ppdinfer_json_attrs`` of its group; :func:`load` decodes them, so a loaded result equals the
saved one, attributes included.
"""

from __future__ import annotations

import json
import numbers
import os

import numpy as np
import xarray as xr

#: The attribute of a group that names the attributes stored as JSON text.
JSON_ATTRS = "ppdinfer_json_attrs"
ENGINE = "h5netcdf"


def save(result: xr.DataTree, path: str | os.PathLike) -> None:
    """Write a result (any ``xarray.DataTree``) to the netCDF file ``path``, attributes included.

    Every group becomes a netCDF group (HDF5 format, through h5netcdf). Attributes that are
    numbers (not booleans), strings or numeric arrays of two or more values are written as they
    are; the others (booleans, None, lists, tuples, dicts, one-element arrays) as JSON text,
    which :func:`load` decodes (tuples and arrays of one element come back as lists).

    Parameters
    ----------
    result : xarray.DataTree
        A sampler's result, or any DataTree (a PyMC result, one with a posterior predictive).
    path : str or os.PathLike
        The file to write (replaced if it exists).

    Examples
    --------
    >>> import os, tempfile
    >>> import ppdinfer as pp
    >>> from ppdinfer import generators, mechanisms, priors
    >>> model = pp.PPDModel(priors.Beta(1, 1), generators.Binomial(100), mechanisms.DiscreteLaplace(0.5), names="p")
    >>> result = pp.rejection_sample(model, 40, draws=200, random_seed=1, progressbar=False)
    >>> path = os.path.join(tempfile.mkdtemp(), "result.nc")
    >>> pp.save(result, path)
    >>> loaded = pp.load(path)
    >>> loaded.attrs["theta_names"], loaded.attrs["complete"]
    (['p'], True)
    >>> loaded.identical(result)
    True
    """
    if not isinstance(result, xr.DataTree):
        raise ValueError(f"result must be an xarray.DataTree, got {type(result).__name__}")
    encoded = result.copy()
    for node in encoded.subtree:
        if JSON_ATTRS in node.attrs:
            raise ValueError(f"result: group {node.path!r} has an attribute named {JSON_ATTRS!r}, which save reserves")
        as_json = sorted(key for key, value in node.attrs.items() if not _netcdf_safe(value))
        for key in as_json:
            try:
                node.attrs[key] = json.dumps(node.attrs[key], default=_json_default)
            except TypeError as error:
                raise ValueError(
                    f"result: attribute {key!r} of group {node.path!r} is neither a netCDF value "
                    f"nor JSON-serializable ({error})"
                ) from None
        if as_json:
            node.attrs[JSON_ATTRS] = json.dumps(as_json)
    encoded.to_netcdf(path, engine=ENGINE)


def load(path: str | os.PathLike) -> xr.DataTree:
    """Read a result written by :func:`save` into memory (the file is closed on return).

    Parameters
    ----------
    path : str or os.PathLike
        A netCDF file written by :func:`save` (or by ``DataTree.to_netcdf``).

    Returns
    -------
    xarray.DataTree
        The result, with the attributes that :func:`save` stored as JSON decoded.

    Examples
    --------
    >>> import os, tempfile
    >>> import ppdinfer as pp
    >>> from ppdinfer import generators, mechanisms, priors
    >>> model = pp.PPDModel(priors.Beta(1, 1), generators.Binomial(100), mechanisms.DiscreteLaplace(0.5), names="p")
    >>> result = pp.exact_posterior(model, 40, draws=100, random_seed=1)
    >>> path = os.path.join(tempfile.mkdtemp(), "exact.nc")
    >>> pp.save(result, path)
    >>> pp.summary(pp.load(path)).equals(pp.summary(result))
    True
    """
    if not os.path.isfile(path):
        raise ValueError(f"path {os.fspath(path)!r} is not a file")
    with xr.open_datatree(path, engine=ENGINE) as stored:
        result = stored.load().copy()
    for node in result.subtree:
        for key in json.loads(node.attrs.pop(JSON_ATTRS, "[]")):
            node.attrs[key] = json.loads(node.attrs[key])
    return result


def _netcdf_safe(value) -> bool:
    """True when netCDF stores ``value`` and returns it unchanged (up to numpy scalar types)."""
    if isinstance(value, (bool, np.bool_)):
        return False
    if isinstance(value, (str, numbers.Real)):  # numbers.Real holds the integers, not complex
        return True
    return isinstance(value, np.ndarray) and value.ndim == 1 and value.size >= 2 and value.dtype.kind in "iuf"


def _json_default(value):
    """numpy scalars and arrays as Python numbers and lists, for json.dumps."""
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    raise TypeError(f"{type(value).__name__} is not JSON-serializable")
