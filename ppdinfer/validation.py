"""Argument checks: numbers, counts, probabilities, vectors, supports and pmfs.

Every failure is a ValueError naming the parameter and what it must be, so a function of your own
(a data model, a mechanism, a case study) refuses bad input the way ppdinfer's do. The whole
package uses these checks.
"""

from __future__ import annotations

import math
import numbers
import reprlib

import numpy as np


def positive_finite(value, name: str) -> float:
    """Return ``value`` as a float after checking that it is a finite number > 0.

    Examples
    --------
    >>> positive_finite(2, "epsilon")
    2.0
    >>> positive_finite(0.0, "epsilon")
    Traceback (most recent call last):
    ...
    ValueError: epsilon must be a positive finite number, got 0.0
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValueError(f"{name} must be a positive finite number, got {value!r}")
    value = float(value)
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"{name} must be a positive finite number, got {value!r}")
    return value


def probability(value, name: str, *, open_interval: bool = True) -> float:
    """Return ``value`` as a float in (0, 1) (or [0, 1] when ``open_interval`` is False).

    Examples
    --------
    >>> probability(0.25, "delta"), probability(1, "p", open_interval=False)
    (0.25, 1.0)
    >>> probability("1", "p", open_interval=False)
    Traceback (most recent call last):
    ...
    ValueError: p must be a number in [0, 1], got '1'
    """
    bounds = "(0, 1)" if open_interval else "[0, 1]"
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValueError(f"{name} must be a number in {bounds}, got {value!r}")
    value = float(value)
    inside = 0 < value < 1 if open_interval else 0 <= value <= 1
    if not inside:
        raise ValueError(f"{name} must lie in {bounds}, got {value!r}")
    return value


def positive_int(value, name: str) -> int:
    """Return ``value`` as an int after checking that it is a whole number >= 1 (not a bool).

    Examples
    --------
    >>> positive_int(3.0, "draws")
    3
    >>> positive_int(True, "draws")
    Traceback (most recent call last):
    ...
    ValueError: draws must be a positive integer, got the bool True
    """
    if isinstance(value, bool | np.bool_):
        raise ValueError(f"{name} must be a positive integer, got the bool {value!r}")
    if not isinstance(value, numbers.Integral):
        if not (isinstance(value, numbers.Real) and float(value).is_integer()):
            raise ValueError(f"{name} must be a positive integer, got {value!r}")
    value = int(value)
    if value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    return value


def non_negative_int(value, name: str) -> int:
    """Return ``value`` as an int after checking that it is one whole number >= 0 (not a bool), at most 2^53.

    Examples
    --------
    >>> non_negative_int(0, "tune"), non_negative_int(5.0, "tune")
    (0, 5)
    >>> non_negative_int(-1, "tune")
    Traceback (most recent call last):
    ...
    ValueError: tune must be non-negative, got -1
    """
    if isinstance(value, bool | np.bool_) or np.ndim(value) != 0:
        raise ValueError(f"{name} must be a whole number >= 0, got {value!r}")
    return int(nonnegative_counts(value, name))


#: Largest magnitude of an integer value: 2^53, so that the float64 likelihood kernels see it exactly
#: and a release (value + noise) stays far inside int64.
MAX_INTEGER = 2**53
_LARGEST, _SMALLEST = np.int64(MAX_INTEGER), np.int64(-MAX_INTEGER)


def as_array(values, name: str, dtype=None) -> np.ndarray:
    """``np.asarray(values, dtype)``, with a ValueError naming ``name`` where NumPy cannot make one array of it:
    ragged rows, or (with a numeric ``dtype``) entries that are not numbers.

    Examples
    --------
    >>> as_array([[1, 2], [3, 4]], "table").shape
    (2, 2)
    >>> as_array([[1, 2], [3]], "table")
    Traceback (most recent call last):
    ...
    ValueError: table must be a rectangular array of numbers (rows of one length), got [[1, 2], [3]]
    """
    try:
        return np.asarray(values, dtype=dtype)
    except (TypeError, ValueError) as err:
        raise ValueError(
            f"{name} must be a rectangular array of numbers (rows of one length), got {reprlib.repr(values)}"
        ) from err


def integer_valued(values, name: str) -> np.ndarray:
    """Return ``values`` as an int64 array after checking every entry is a whole number of magnitude <= 2^53.

    Examples
    --------
    >>> integer_valued([3.0, -2], "y")
    array([ 3, -2])
    """
    arr = as_array(values, name)
    if arr.dtype.kind not in "iuf":  # not bools, complex numbers, text or objects
        raise ValueError(f"{name} must hold integers, got {values!r}")
    if arr.dtype.kind in "iu":  # whole numbers already: only the magnitude to check, by two reductions
        # compared with NumPy scalars: a Python int of a value above 256 (which CPython does not cache)
        # would take longer to make, and a release's time would then depend on the confidential counts
        too_large = arr.size > 0 and bool((arr.max() > _LARGEST) | (arr.min() < _SMALLEST))
    else:
        if not np.all(np.isfinite(arr)) or np.any(arr != np.round(arr)):
            raise ValueError(f"{name} must hold integers, got {values!r}")
        too_large = np.any(np.abs(arr.astype(np.float64)) > MAX_INTEGER)
    if too_large:
        raise ValueError(
            f"{name} must hold integers of magnitude at most 2^53 = {MAX_INTEGER:,} (beyond it "
            f"float64 likelihoods and int64 releases lose them), got {values!r}"
        )
    return arr.astype(np.int64)


def nonnegative_counts(values, name: str) -> np.ndarray:
    """Return ``values`` as an int64 array after checking every entry is a whole number >= 0.

    Examples
    --------
    >>> nonnegative_counts([4, 0, 7], "x")
    array([4, 0, 7])
    """
    arr = integer_valued(values, name)
    if np.any(arr < 0):
        raise ValueError(f"{name} must be non-negative, got {values!r}")
    return arr


def finite_array(values, name: str) -> np.ndarray:
    """Return ``values`` as a float64 array after checking every entry is finite.

    Examples
    --------
    >>> finite_array([1, 2.5], "y")
    array([1. , 2.5])
    """
    arr = as_array(values, name, np.float64)
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must be finite, got {values!r}")
    return arr


def probability_vector(values, name: str, tolerance: float = 1e-9) -> np.ndarray:
    """``values`` as a float vector of at least 2 non-negative entries summing to 1 (within
    ``tolerance``, then divided by their sum); ValueError naming ``name`` otherwise.

    Examples
    --------
    >>> probability_vector([0.25, 0.75], "shares")
    array([0.25, 0.75])
    """
    vector = as_array(values, name, np.float64)
    if vector.ndim != 1 or vector.size < 2 or not np.all(np.isfinite(vector)) or np.any(vector < 0):
        raise ValueError(f"{name} must be a vector of at least 2 non-negative finite numbers, got {values!r}")
    if abs(vector.sum() - 1) > tolerance:
        raise ValueError(f"{name} must sum to 1, got a sum of {vector.sum()!r}")
    return vector / vector.sum()


def summarize(values: np.ndarray) -> str:
    """A short description of an array for error messages: its values when few, else shape and range.

    Examples
    --------
    >>> summarize(np.arange(3)), summarize(np.arange(10))
    ('[0, 1, 2]', 'an array of shape (10,) ranging over [0, 9]')
    """
    values = np.asarray(values)
    if values.size <= 6:
        return repr(values.tolist())
    return f"an array of shape {values.shape} ranging over [{values.min().item()!r}, {values.max().item()!r}]"


def unit_parameter(value, name: str, check, requirement: str, size: int | None = None):
    """A scalar (returned as ``check(value, name)``) or a vector of per-unit values meeting ``requirement``.

    A vector must be 1-D, of length ``size`` when given; the error for bad entries counts them and
    names the first, instead of printing every value.

    Examples
    --------
    >>> unit_parameter([2, 3], "n", positive_int, "positive integer", size=2)
    array([2, 3])
    """
    array = as_array(value, name)
    if array.ndim == 0:
        return check(value, name)
    if array.ndim != 1 or array.size == 0 or not np.issubdtype(array.dtype, np.number) or array.dtype == bool:
        raise ValueError(f"{name} must be a {requirement} or a 1-D array of them, got {summarize(array)}")
    if size is not None and array.size != size:
        raise ValueError(f"{name} has {array.size} values but size={size}: give one value per unit or a scalar")
    bad = []
    for index, entry in enumerate(array.tolist()):
        try:
            check(entry, name)
        except ValueError:
            bad.append(index)
    if bad:
        raise ValueError(
            f"{name} must hold {requirement}s: {len(bad)} of its {array.size} values are not, "
            f"the first {array[bad[0]].item()!r} at index {bad[0]}"
        )
    return array.astype(float if check is positive_finite else np.int64)


#: Coarsest float64 spacing of y, as a fraction of the noise's standard deviation, at which y - x keeps
#: x's effect on the likelihood: log p(y - x) is then off by at most about 2^-10 nats per coordinate.
NOISE_RESOLUTION = 2.0**-10


def resolvable_release(y, noise, name: str = "y") -> None:
    """Refuse a continuous additive-noise release ``y`` whose float64 spacing is coarse against the noise.

    ``noise`` is a mechanism's ``additive_noise`` (rate, power, discrete) or None (nothing to check).
    Near |y| = 1e17, y - x rounds to multiples of 16: a Laplace(1) likelihood can no longer tell
    the x of a prior near 0 apart, and the posterior is silently wrong. Discrete releases are exact
    integers below 2^53 (`integer_valued` holds them there).

    Examples
    --------
    >>> from ppdinfer.mechanisms import Laplace
    >>> resolvable_release([3.5, 1e6], Laplace(1.0).additive_noise)      # fine
    >>> resolvable_release([1e17], Laplace(1.0).additive_noise)
    Traceback (most recent call last):
    ...
    ValueError: y = 1e+17 is too large for the noise (standard deviation 1.41): ...
    """
    values = as_array(y, name, np.float64)
    if noise is None or noise.discrete or values.size == 0:
        return
    scale = math.sqrt(2.0) / noise.rate if noise.power == 1 else math.sqrt(0.5 / noise.rate)
    largest = float(np.max(np.abs(values)))
    spacing = float(np.spacing(largest))
    if spacing > NOISE_RESOLUTION * scale:
        raise ValueError(
            f"{name} = {largest:.6g} is too large for the noise (standard deviation {scale:.3g}): float64 "
            f"resolves {name} - x there only to {spacing:.3g}, coarser than 2^-10 of the noise, so the "
            f"likelihood loses x's effect; check {name}, or express {name} and x relative to a public "
            f"offset (or in larger units)"
        )


# --- arrays: vectors, supports, pmfs ----------------------------------------------------------------

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
