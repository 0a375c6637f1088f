"""Checks of vectors, supports, pmfs and probabilities on top of ``ppdinfer._validation``: ValueErrors naming the parameter.

Shared by ``ppdinfer.geometry``, ``ppdinfer.privacy`` and ``ppdinfer.mechanisms.distribution``.
"""

from __future__ import annotations

import numpy as np

from ._validation import finite_array

PMF_ATOL = 1e-9
"""A pmf may miss a total of 1 by at most this much (it is then renormalized)."""


def vector(values, name: str) -> np.ndarray:
    """Return ``values`` as a non-empty 1-D float64 array of finite numbers.

    Examples
    --------
    >>> vector([1, 2], "support")
    array([1., 2.])
    """
    arr = finite_array(values, name)
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError(f"{name} must be a non-empty 1-D array, got shape {arr.shape}")
    return arr


def support_points(values, name: str = "support") -> np.ndarray:
    """Return ``values`` as a strictly increasing 1-D float64 array.

    Examples
    --------
    >>> support_points([0, 1, 3])
    array([0., 1., 3.])
    """
    arr = vector(values, name)
    if np.any(np.diff(arr) <= 0):
        raise ValueError(f"{name} must be strictly increasing (sorted, no repeats), got {values!r}")
    return arr


def pmf(values, name: str, size: int, normalize: bool = True) -> np.ndarray:
    """Return ``values`` as a pmf of length ``size``: non-negative, summing to 1 within ``PMF_ATOL``.

    With ``normalize`` (the default) the masses are divided by their total; otherwise returned as given.

    Examples
    --------
    >>> pmf([0.5, 0.5], "p", 2)
    array([0.5, 0.5])
    """
    arr = vector(values, name)
    if arr.size != size:
        raise ValueError(f"{name} must hold one mass per support point ({size}), got {arr.size}")
    if np.any(arr < 0):
        raise ValueError(f"{name} must be non-negative, got {values!r}")
    total = arr.sum()
    if abs(total - 1.0) > PMF_ATOL:
        raise ValueError(f"{name} must sum to 1, got a total of {total!r}")
    return arr / total if normalize else arr


def unit_interval(values, name: str, *, open_interval: bool = False) -> np.ndarray:
    """Return ``values`` (any shape) as a float64 array with every entry in [0, 1] (or (0, 1)).

    Examples
    --------
    >>> unit_interval([0.0, 0.3], "alpha")
    array([0. , 0.3])
    """
    arr = finite_array(values, name)
    inside = (arr > 0) & (arr < 1) if open_interval else (arr >= 0) & (arr <= 1)
    if not np.all(inside):
        bounds = "(0, 1)" if open_interval else "[0, 1]"
        raise ValueError(f"{name} must lie in {bounds}, got {values!r}")
    return arr


def tolerance(value, name: str) -> float:
    """Return ``value`` as a float in [0, 1e-3]: a relative tolerance for rounding, not for real mass.

    Examples
    --------
    >>> tolerance(1e-9, "tie_tolerance")
    1e-09
    """
    if isinstance(value, bool) or not isinstance(value, (int, float, np.floating, np.integer)):
        raise ValueError(f"{name} must be a number in [0, 1e-3], got {value!r}")
    value = float(value)
    if not 0.0 <= value <= 1e-3:
        raise ValueError(f"{name} must be a number in [0, 1e-3], got {value!r}")
    return value
