"""Saving a result to one netCDF file and loading it back, attributes included.

A result is an ``xarray.DataTree``, which xarray writes with ``DataTree.to_netcdf`` (each
group a netCDF group; the ``h5netcdf`` backend, a dependency of ppdinfer) and reads with
``xarray.open_datatree``. The values, dims and coordinates survive those calls, but netCDF
attributes hold only numbers, strings and arrays of them: a boolean attribute is refused (so
ppdinfer's samplers store their flags, such as ``complete``, as 0 or 1), and a list of one
element (``theta_names`` of a model with one parameter) comes back as that element.
:func:`save` stores every attribute that netCDF would not return unchanged as JSON text and
lists their names in the attribute ``ppdinfer_json_attrs`` of its group; :func:`load` decodes
them, so a loaded result equals the saved one, attributes included.

:func:`save` never leaves a damaged file behind: it writes a temporary file in the target's
folder and renames it onto ``path`` only once the write is complete, so a save that fails or
is interrupted leaves an earlier file at ``path`` as it was. :func:`load` refuses, with a
``ValueError`` naming the file and what is wrong, a file that is empty, truncated, not HDF5
(text, netCDF-3), holds no variables, or carries attributes that are not valid JSON.
"""

from __future__ import annotations

import json
import numbers
import os
import secrets

import numpy as np
import xarray as xr

#: The attribute of a group that names the attributes stored as JSON text.
JSON_ATTRS = "ppdinfer_json_attrs"
ENGINE = "h5netcdf"
#: The first bytes of an HDF5 file (netCDF-4 is HDF5) and of a netCDF-3 file.
HDF5_SIGNATURE = b"\x89HDF\r\n\x1a\n"
NETCDF3_SIGNATURE = b"CDF"
_INT64 = np.iinfo(np.int64)


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
        The file to write (replaced if it exists, and only once the new file is complete: the
        result goes to a temporary file in the same folder, renamed onto ``path`` at the end;
        if writing fails or is interrupted, an earlier file at ``path`` is left unchanged).

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
    >>> loaded.attrs["theta_names"], bool(loaded.attrs["complete"])   # flags are 0 / 1
    (['p'], True)
    >>> loaded.identical(result)
    True
    """
    if not isinstance(result, xr.DataTree):
        raise ValueError(f"result must be an xarray.DataTree, got {type(result).__name__}")
    path = _check_path(path)
    folder = os.path.dirname(os.path.abspath(path))
    if os.path.isdir(path):
        raise ValueError(f"path {path!r} is a folder, not a file")
    if not os.path.isdir(folder):
        raise ValueError(f"path {path!r}: its folder {folder!r} does not exist")
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
    # a hidden name in the same folder (os.replace is atomic only within one file system)
    temporary = os.path.join(folder, f".{os.path.basename(path)}.{secrets.token_hex(4)}.tmp")
    try:
        encoded.to_netcdf(temporary, engine=ENGINE)
        os.replace(temporary, path)
    except BaseException as error:  # Ctrl-C too: the earlier file stays, the partial one goes
        if os.path.exists(temporary):
            os.remove(temporary)
        if isinstance(error, Exception):
            error.add_note(f"pp.save: {path!r} was not written; a file that was there before is unchanged")
        raise


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

    Raises
    ------
    ValueError
        Naming the file and what is wrong with it: not a file, empty, not HDF5 (a text or
        netCDF-3 file), truncated or damaged, holding no result (no variables in any group), or
        with attributes that :func:`save` marked as JSON but are not.

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
    path = _check_path(path)
    if not os.path.isfile(path):
        raise ValueError(f"path {path!r} is not a file")
    with open(path, "rb") as file:
        head = file.read(len(HDF5_SIGNATURE))
    if not head:
        raise ValueError(f"path {path!r} is an empty file, not a result written by pp.save")
    if head.startswith(NETCDF3_SIGNATURE):
        raise ValueError(
            f"path {path!r} is a netCDF-3 file; pp.load reads netCDF-4 (HDF5) files as pp.save writes "
            "them (xarray.open_dataset reads netCDF-3)"
        )
    if head != HDF5_SIGNATURE:
        raise ValueError(f"path {path!r} is not a netCDF-4 (HDF5) file: it begins with {head!r}")
    try:
        with xr.open_datatree(path, engine=ENGINE) as stored:
            result = stored.load().copy()
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise ValueError(f"path {path!r} is a damaged or truncated netCDF-4 file ({error})") from None
    if not any(node.data_vars for node in result.subtree):
        raise ValueError(
            f"path {path!r} holds no result: no group of it has a variable (is it a file that an interrupted "
            "write left empty?)"
        )
    for node in result.subtree:
        for key in _decode(path, node, JSON_ATTRS, node.attrs.pop(JSON_ATTRS, "[]")):
            if key not in node.attrs:
                raise ValueError(
                    f"path {path!r}: group {node.path!r} lists attribute {key!r} as JSON, but has no such attribute"
                )
            node.attrs[key] = _decode(path, node, key, node.attrs[key])
    return result


def _check_path(path) -> str:
    """``path`` as a str; bytes are refused (xarray would read them as a file's content, not its name)."""
    if isinstance(path, bytes) or not isinstance(path, (str, os.PathLike)):
        raise ValueError(f"path must be a str or os.PathLike (a file name), got {type(path).__name__}")
    path = os.fspath(path)
    if isinstance(path, bytes):  # a PathLike whose __fspath__ returns bytes
        raise ValueError("path must name the file as text, got a PathLike of bytes")
    return path


def _decode(path: str, node, key: str, text):
    """The JSON attribute ``key`` of ``node`` decoded, or a ValueError naming the file, group and attribute."""
    try:
        return json.loads(text)
    except (TypeError, ValueError) as error:  # json.JSONDecodeError is a ValueError
        raise ValueError(
            f"path {path!r}: attribute {key!r} of group {node.path!r} should be JSON text written by pp.save, "
            f"but is not ({error}): {str(text)[:80]!r}"
        ) from None


def _netcdf_safe(value) -> bool:
    """True when netCDF stores ``value`` and returns it unchanged (up to numpy scalar types)."""
    if isinstance(value, (bool, np.bool_)):
        return False
    if isinstance(value, numbers.Integral):  # netCDF integers are at most 64 bits; larger ones go as JSON
        return _INT64.min <= int(value) <= _INT64.max
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
