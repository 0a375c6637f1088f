r"""Sensitivities of the sufficient statistics of clipped data: counts, sums, squares, cross-products, regression.

Every statistic here is a sum over records, T(D) = sum_r g(u_r), of a function g of one record u whose
coordinates are clipped to a box: u_t in [a_t, b_t]. Neighbouring datasets differ in one record, so the
change of T is that of one term:

- ``neighbours="replace"`` (bounded DP, n public and fixed): one record u becomes v, and T changes by
  g(v) - g(u) for u, v in the box;
- ``neighbours="add-remove"`` (unbounded DP): one record u is added or removed, and T changes by
  +-g(u) for u in the box.

The L_p sensitivity is the largest ||change||_p over those changes. For one statistic it is the range
max g - min g (replace) or max |g| (add-remove) over the box, computed exactly: a product u_j u_k of two
coordinates is bilinear, so its extremes lie at the four corners of their rectangle, and a square u_t^2
takes its extremes at a_t, b_t or (when a_t < 0 < b_t) at 0.

For a vector of statistics the ranges need not be reached by the same pair of records, so the norm of the
per-statistic sensitivities is an upper bound on the joint sensitivity, not always the exact value: with
u_1, u_2 in [-1, 1], u_1 u_2 changes by 2 only between (1, -1) and (1, 1), where u_1^2 and u_2^2 do not
change. :class:`StatisticsSensitivity` reports that bound (valid whatever the data) together with the
largest norm reached by records on the grid of candidate values {a_t, b_t, 0 if a_t < 0 < b_t} (a lower
bound, since those are records of the box), and says the bound is tight when the two agree.

Give the per-statistic sensitivities to a mechanism with one scale per coordinate (a budget per statistic,
e.g. ``Laplace(epsilon, sensitivity=per_statistic / shares)`` with shares summing to at most one), or the
joint L1 (Laplace) or L2 (Gaussian) sensitivity to a mechanism with one scale for the whole vector.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

from ..validation import finite_array

__all__ = [
    "NEIGHBOURS",
    "StatisticsSensitivity",
    "count_sensitivity",
    "product_sum_sensitivity",
    "regression_sensitivity",
    "square_sum_sensitivity",
    "sum_sensitivity",
]

#: The neighbouring relations: one record replaced (n fixed), or one record added or removed.
NEIGHBOURS = ("replace", "add-remove")

#: Relative slack within which the attained joint norm counts as reaching the upper bound.
TIGHT_RTOL = 1e-12


@dataclass(frozen=True)
class StatisticsSensitivity:
    """The sensitivities of a vector of statistics: one per statistic, and the joint L1 and L2 norms.

    Attributes
    ----------
    names : tuple of str
        The statistics, in order (e.g. ``"x0*x1"`` for sum_r x_r0 x_r1).
    per_statistic : numpy.ndarray
        Each statistic's own sensitivity (exact); zero for a statistic that neighbours cannot change
        (the count under ``"replace"``), which is then public and left out of a release.
    l1, l2 : float
        Upper bounds on the joint L1 and L2 sensitivities of the whole vector: the norms of
        ``per_statistic``. They are valid for every dataset in the box.
    l1_attained, l2_attained : float
        The largest L1 and L2 norms of a change between records of the candidate grid: lower bounds on the
        joint sensitivities.
    neighbours : str
        ``"replace"`` or ``"add-remove"``.

    Examples
    --------
    >>> from ppdinfer.privacy.sufficient_statistics import regression_sensitivity
    >>> s = regression_sensitivity([(1, 1), (0, 1)], (0, 1), neighbours="replace")   # intercept, x, y
    >>> s.names
    ('x0*x0', 'x0*x1', 'x0*y', 'x1*x1', 'x1*y', 'y*y')
    >>> s.per_statistic.tolist(), s.l1, s.tight
    ([0.0, 1.0, 1.0, 1.0, 1.0, 1.0], 5.0, True)
    """

    names: tuple[str, ...]
    per_statistic: np.ndarray
    l1: float
    l2: float
    l1_attained: float
    l2_attained: float
    neighbours: str

    @property
    def l1_tight(self) -> bool:
        """Whether ``l1`` is the exact joint L1 sensitivity (records of the box reach it)."""
        return bool(self.l1_attained >= self.l1 * (1 - TIGHT_RTOL))

    @property
    def l2_tight(self) -> bool:
        """Whether ``l2`` is the exact joint L2 sensitivity (records of the box reach it)."""
        return bool(self.l2_attained >= self.l2 * (1 - TIGHT_RTOL))

    @property
    def tight(self) -> bool:
        """Whether both ``l1`` and ``l2`` are exact."""
        return self.l1_tight and self.l2_tight


def count_sensitivity(*, neighbours: str) -> float:
    """The sensitivity of a count n: 0 under ``"replace"`` (n is public), 1 under ``"add-remove"``.

    Examples
    --------
    >>> count_sensitivity(neighbours="replace"), count_sensitivity(neighbours="add-remove")
    (0.0, 1.0)
    """
    return 0.0 if _neighbours(neighbours) == "replace" else 1.0


def sum_sensitivity(lower, upper, *, neighbours: str) -> float:
    """The sensitivity of sum_r x_r with x clipped to [lower, upper].

    Replace: the change x' - x is largest for x = lower, x' = upper, so upper - lower. Add-remove: the
    change is +-x, so max(|lower|, |upper|).

    Examples
    --------
    >>> sum_sensitivity(-1, 3, neighbours="replace"), sum_sensitivity(-1, 3, neighbours="add-remove")
    (4.0, 3.0)
    """
    return _spread(_interval((lower, upper), "lower, upper"), neighbours)


def square_sum_sensitivity(lower, upper, *, neighbours: str) -> float:
    """The sensitivity of sum_r x_r^2 with x clipped to [lower, upper].

    x^2 on [a, b] is largest at an end, max(a^2, b^2), and smallest at 0 when a <= 0 <= b, otherwise at
    the end nearer 0, min(a^2, b^2). Replace: the range max - min. Add-remove: max(a^2, b^2).

    Examples
    --------
    >>> square_sum_sensitivity(-1, 3, neighbours="replace"), square_sum_sensitivity(2, 3, neighbours="replace")
    (9.0, 5.0)
    """
    return _spread(np.square(_candidates(*_interval((lower, upper), "lower, upper"))), neighbours)


def product_sum_sensitivity(bounds_x, bounds_y, *, neighbours: str) -> float:
    """The sensitivity of sum_r x_r y_r with x clipped to ``bounds_x`` and y to ``bounds_y`` (each (lower, upper)).

    x y is bilinear, so over the rectangle its largest and smallest values lie among the four corner
    products. Replace: their range. Add-remove: the largest |corner product|.

    Examples
    --------
    >>> product_sum_sensitivity((-1, 2), (0, 3), neighbours="replace")       # corners 0, 0, -3, 6
    9.0
    >>> product_sum_sensitivity((-1, 2), (0, 3), neighbours="add-remove")
    6.0
    """
    return _spread(np.outer(_interval(bounds_x, "bounds_x"), _interval(bounds_y, "bounds_y")), neighbours)


def regression_sensitivity(x_bounds, y_bounds, *, neighbours: str, count: bool = False) -> StatisticsSensitivity:
    """The sensitivities of the sufficient statistics of least squares, X'X (upper triangle), X'y and y'y.

    Each record is a row x = (x_0, ..., x_{d-1}) of the design with x_j clipped to ``x_bounds[j]`` and a
    response y clipped to ``y_bounds``. The statistics are, in order, sum_r x_rj x_rk for j <= k (row by
    row), sum_r x_rj y_r for each j and sum_r y_r^2, preceded by the count n when ``count`` is True. An
    intercept column has bounds (1, 1): its X'X entry is n (no sensitivity under replace, 1 under
    add-remove), its cross-products with x_j are the sums sum_r x_rj, and its X'y entry is sum_r y_r.

    Each statistic's sensitivity is exact (see the module). ``l1`` and ``l2`` are the norms of the
    per-statistic sensitivities, upper bounds on the joint ones; records at the candidate values
    {a_t, b_t, and 0 if a_t < 0 < b_t} of each coordinate give the attained lower bounds, and the
    result is ``tight`` when they agree. Under add-remove both bounds are always tight: every |x_j x_k|,
    |x_j y| and y^2 is largest at the corner where each coordinate has its largest magnitude.

    Parameters
    ----------
    x_bounds : array_like, shape (d, 2)
        (lower, upper) for each column of the design, lower <= upper.
    y_bounds : array_like, shape (2,)
        (lower, upper) for the response.
    neighbours : {"replace", "add-remove"}
        One record replaced (n fixed) or one record added or removed.
    count : bool
        Put the count n first (for a design without an intercept column).

    Returns
    -------
    StatisticsSensitivity

    Raises
    ------
    ValueError
        Bounds that are not finite (lower, upper) pairs with lower <= upper, or an unknown ``neighbours``.

    Examples
    --------
    >>> s = regression_sensitivity([(-1, 1)], (-1, 1), neighbours="replace")  # x, y in [-1, 1], no intercept
    >>> s.names, s.per_statistic.tolist()
    (('x0*x0', 'x0*y', 'y*y'), [1.0, 2.0, 1.0])
    >>> s.l1, s.l1_attained, s.l1_tight                     # no pair of records changes all three at once
    (4.0, 3.0, False)
    """
    neighbours = _neighbours(neighbours)
    x_bounds = finite_array(x_bounds, "x_bounds")
    if x_bounds.ndim != 2 or x_bounds.shape[1] != 2 or x_bounds.shape[0] == 0:
        raise ValueError(f"x_bounds must be (lower, upper) pairs, one per column, shape (d, 2); got {x_bounds.shape}")
    box = [_interval(pair, f"x_bounds[{j}]") for j, pair in enumerate(x_bounds)] + [_interval(y_bounds, "y_bounds")]
    labels = [f"x{j}" for j in range(len(box) - 1)] + ["y"]
    pairs = [(j, k) for j in range(len(box)) for k in range(j, len(box))]
    names = [f"{labels[j]}*{labels[k]}" for j, k in pairs]
    records = np.array(list(itertools.product(*(_candidates(a, b) for a, b in box))))
    values = np.stack([records[:, j] * records[:, k] for j, k in pairs], axis=1)
    if count:
        names.insert(0, "n")
        values = np.concatenate([np.ones((len(records), 1)), values], axis=1)
    if neighbours == "replace":
        per_statistic = values.max(axis=0) - values.min(axis=0)
        changes = (values[:, None, :] - values[None, :, :]).reshape(-1, values.shape[1])
    else:
        per_statistic = np.abs(values).max(axis=0)
        changes = values
    per_statistic.flags.writeable = False
    return StatisticsSensitivity(
        names=tuple(names),
        per_statistic=per_statistic,
        l1=float(np.abs(per_statistic).sum()),
        l2=float(np.sqrt(np.square(per_statistic).sum())),
        l1_attained=float(np.abs(changes).sum(axis=1).max()),
        l2_attained=float(np.sqrt(np.square(changes).sum(axis=1)).max()),
        neighbours=neighbours,
    )


def _spread(values, neighbours: str) -> float:
    """The sensitivity of a statistic whose per-record values have their extremes among ``values``."""
    values = np.asarray(values, dtype=float)
    if _neighbours(neighbours) == "replace":
        return float(values.max() - values.min())
    return float(np.abs(values).max())


def _candidates(lower: float, upper: float) -> tuple[float, ...]:
    """The values of one coordinate at which a product of coordinates, or a square, takes its extremes."""
    return (lower, upper, 0.0) if lower < 0 < upper else (lower, upper)


def _interval(bounds, name: str) -> tuple[float, float]:
    pair = finite_array(bounds, name)
    if pair.shape != (2,) or pair[0] > pair[1]:
        raise ValueError(f"{name} must be finite (lower, upper) with lower <= upper, got {bounds!r}")
    return float(pair[0]), float(pair[1])


def _neighbours(value) -> str:
    if value not in NEIGHBOURS:
        raise ValueError(f"neighbours must be one of {NEIGHBOURS}, got {value!r}")
    return value
