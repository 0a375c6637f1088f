r"""Test a release mechanism of your own in one call: the checks every ppdinfer mechanism passes.

A mechanism is a sampler and a likelihood at once (:class:`ppdinfer.mechanisms.Mechanism`); the
two must agree, and the samplers rely on a few promises more. Describe one instance with a
:class:`MechanismCase` (a confidential value x it releases, other values ``x_batch``, the public
z, and where its releases live: a finite ``support`` for a discrete release, a ``line`` for a
continuous one) and :func:`check_mechanism` runs every check that applies:

- the pmf sums to one over the support, for x and every row of ``x_batch`` (or the density
  integrates to one along the line, for each of them);
- releases follow ``logpdf`` (chi-square on the support, or Kolmogorov-Smirnov on the line), at
  x and at other rows of ``x_batch``, so a release that ignores x fails;
- a declared ``additive_noise`` is ``logpdf``: log_norm - rate |y - x|^power at several y and x
  (the compiled kernels and the PyMC layer read the declaration instead of ``logpdf``);
- ``log_bound`` dominates ``logpdf`` (the exact rejection sampler needs M >= sup pi);
- ``logpdf`` keeps the batch-shape contract of :meth:`ppdinfer.mechanisms.Mechanism.logpdf`;
- a seed reproduces the releases; ``noise_scale`` is positive and finite;
- in a hand-written PyMC model (:class:`ppdinfer.pymc.Release`), the posterior over the candidate
  values ``x_batch`` equals the one enumerated from ``logpdf`` (:func:`check_release_posterior`).

Each check raises an ``AssertionError`` saying what failed, so the functions work inside pytest
or alone. The package's own registry of mechanisms (``tests/mechanism_registry.py``) runs them
all, mechanism by mechanism.

Examples
--------
>>> import numpy as np
>>> from ppdinfer.mechanisms import DiscreteLaplace
>>> from ppdinfer.testing import MechanismCase, check_mechanism, window
>>> case = MechanismCase("DiscreteLaplace(1)", DiscreteLaplace(1.0), np.array(3), np.array([0, 3, 9]),
...                      support=window(3, 40), draws=2000)
>>> sorted(check_mechanism(case, pymc=False))
['additive_noise', 'log_bound', 'logpdf_batch_shape', 'noise_scale', 'pmf_sums_to_one', 'release_points', 'releases_follow_logpdf', 'seeded_releases']
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np
from scipy import integrate, stats

from .mechanisms.base import Mechanism
from .validation import finite_array, positive_finite, positive_int, probability

__all__ = [
    "MechanismCase",
    "check_additive_noise",
    "check_density_integrates_to_one",
    "check_log_bound",
    "check_logpdf_batch_shape",
    "check_mechanism",
    "check_noise_scale",
    "check_pmf_sums_to_one",
    "check_release_posterior",
    "check_releases_follow_logpdf",
    "check_seeded_releases",
    "chi_square_pvalue",
    "window",
]

#: The goodness-of-fit threshold of the release checks (their seeds are fixed, so a pass is reproducible).
P_MIN = 1e-3
#: Rows of x_batch other than x at which releases are drawn too (each with a tenth of the draws, at least 100).
OTHER_RELEASE_POINTS = 2


@dataclass(frozen=True, eq=False)
class MechanismCase:
    """One mechanism with a value x it releases, other values x_batch valid for z, and its support or line.

    Attributes
    ----------
    name : str
        A label for messages.
    mechanism : Mechanism
    x : numpy.ndarray
        One confidential value, shape S (what ``release`` takes).
    x_batch : numpy.ndarray
        Other values valid for ``z``, shape ``(B, *S)``.
    z : object
        The public information, or None.
    support : numpy.ndarray, optional
        Discrete releases: every release y (rows of shape S) that carries mass, on a window wide
        enough that the pmf outside it is below 1e-12 for x and for every row of x_batch.
    line : numpy.ndarray, optional
        Continuous releases on a line: a direction u of shape S such that the releases of x are
        x + t u, t real, the density taken with respect to dt (those of a row x_b of x_batch:
        x_b + t u).
    t_range : tuple of float, optional
        Where the density's mass along the line lies (outside it below 1e-12); required with a line.
        For a row x_b = x + s u + r (r orthogonal to u) the checks measure t from x + r and use
        t_range and kinks together with their shifts by s: a translated density's and a fixed
        support's are both covered.
    kinks : tuple of float
        Values of t where the density jumps or bends.
    normalized : bool
        False where ``logpdf`` omits a constant normalizer (the same for every x): the sum over the
        support is then checked to be equal across x_batch rather than equal to one.
    draws : int
        Releases of x drawn for the goodness-of-fit check (a tenth of them, at least 100, at each
        other row of x_batch it also checks).

    Raises
    ------
    TypeError
        ``mechanism`` is not a :class:`~ppdinfer.mechanisms.Mechanism`.
    ValueError
        A field of the wrong shape or value (x_batch not ``(B, *S)``, support rows not of the release's
        shape, a line that is zero or not of shape S, a line without t_range, t_range not increasing,
        kinks not finite, draws not a positive integer).

    Examples
    --------
    >>> import numpy as np
    >>> from ppdinfer.mechanisms import Laplace
    >>> case = MechanismCase("Laplace(1)", Laplace(1.0), np.array(0.5), np.array([0.0, 2.0]),
    ...                      line=np.array(1.0), t_range=(-40.0, 40.0), kinks=(0.0,))
    >>> case.shape
    ()
    """

    name: str
    mechanism: Mechanism
    x: np.ndarray
    x_batch: np.ndarray
    z: object = None
    support: np.ndarray | None = None
    line: np.ndarray | None = None
    t_range: tuple[float, float] | None = None
    kinks: tuple[float, ...] = ()
    normalized: bool = True
    draws: int = 1000

    def __post_init__(self):
        if not isinstance(self.mechanism, Mechanism):
            raise TypeError(f"mechanism must be a ppdinfer Mechanism, got {type(self.mechanism).__name__}")
        x, x_batch = np.asarray(self.x), np.asarray(self.x_batch)
        if x_batch.ndim != x.ndim + 1 or x_batch.shape[1:] != x.shape or len(x_batch) == 0:
            raise ValueError(f"x_batch must have shape (B, *{x.shape}) with B >= 1, got shape {x_batch.shape}")
        object.__setattr__(self, "x", x)
        object.__setattr__(self, "x_batch", x_batch)
        object.__setattr__(self, "draws", positive_int(self.draws, "draws"))
        object.__setattr__(self, "kinks", tuple(finite_array(self.kinks, "kinks").reshape(-1).tolist()))
        if self.support is not None:
            object.__setattr__(self, "support", self._checked_support())
        if self.line is not None:
            object.__setattr__(self, "line", self._checked_line())
            object.__setattr__(self, "t_range", self._checked_t_range())

    def _checked_support(self) -> np.ndarray:
        support = np.asarray(self.support)
        shape = tuple(self.mechanism.release_shape(self.shape))
        if support.ndim != len(shape) + 1 or support.shape[1:] != shape or len(support) == 0:
            raise ValueError(f"support must hold releases as rows, shape (n, *{shape}), got shape {support.shape}")
        return support

    def _checked_line(self) -> np.ndarray:
        line = finite_array(self.line, "line")
        if line.shape != self.shape or not np.any(line):
            raise ValueError(f"line must be a non-zero direction of x's shape {self.shape}, got {self.line!r}")
        return line

    def _checked_t_range(self) -> tuple[float, float]:
        bounds = None if self.t_range is None else finite_array(self.t_range, "t_range")
        if bounds is None or bounds.shape != (2,) or not bounds[0] < bounds[1]:
            raise ValueError(
                f"t_range must be (lo, hi) with lo < hi, finite, for a case with a line; got {self.t_range!r}"
            )
        return float(bounds[0]), float(bounds[1])

    @property
    def shape(self) -> tuple[int, ...]:
        """S, the shape of one release."""
        return np.shape(self.x)

    @property
    def points(self) -> np.ndarray:
        """x and then every row of x_batch that differs from it, stacked ``(n, *S)``."""
        others = [row for row in self.x_batch if not np.array_equal(row, self.x)]
        return np.stack([self.x, *others])


def window(center, half_width: int) -> np.ndarray:
    """Every integer array of the shape of ``center`` within ``half_width`` of it in each coordinate.

    Examples
    --------
    >>> window([0, 5], 1).shape
    (9, 2)
    """
    center = np.asarray(center, dtype=np.int64)
    offsets = np.array(list(itertools.product(range(-half_width, half_width + 1), repeat=center.size)))
    return (center.reshape(1, -1) + offsets).reshape((-1, *center.shape))


def chi_square_pvalue(draws, support, pmf) -> float:
    """Chi-square goodness of fit of iid draws (rows) to ``pmf`` on ``support`` (rows).

    Cells expected to hold fewer than 5 draws are pooled into one; any draw outside the support is
    an immediate failure (p = 0).

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> draws = rng.integers(0, 4, size=4000)
    >>> chi_square_pvalue(draws, np.arange(4), np.full(4, 0.25)) > 1e-3
    True
    >>> chi_square_pvalue(draws, np.arange(4), [0.4, 0.2, 0.2, 0.2]) < 1e-3
    True
    """
    draws, support = np.asarray(draws), np.asarray(support)
    masses = finite_array(pmf, "pmf").reshape(-1)
    if len(draws) == 0 or len(support) == 0:
        raise ValueError(
            f"draws and support must be non-empty, got {len(draws)} draws and {len(support)} support points"
        )
    if masses.size != len(support) or np.any(masses < 0) or not masses.sum() > 0:
        raise ValueError(f"pmf must hold {len(support)} non-negative masses (one per support point), not all zero")
    draws, support = draws.reshape(len(draws), -1), support.reshape(len(support), -1)
    lookup = {tuple(row): i for i, row in enumerate(support)}
    index = [lookup.get(tuple(row), -1) for row in draws]
    if min(index) < 0:
        return 0.0
    observed = np.bincount(index, minlength=masses.size).astype(float)
    expected = masses / masses.sum() * len(draws)
    small = expected < 5
    observed = np.append(observed[~small], observed[small].sum())
    expected = np.append(expected[~small], expected[small].sum())
    if expected[-1] < 1e-9:
        observed, expected = observed[:-1], expected[:-1]
    return float(stats.chisquare(observed, expected * observed.sum() / expected.sum()).pvalue)


def _releases(case: MechanismCase, size: int | None = None, seed: int = 20261125, x=None) -> np.ndarray:
    """``size`` (default ``case.draws``) releases of ``x`` (default case.x) from one seeded generator, (size, *S)."""
    x = case.x if x is None else x
    rng = np.random.default_rng(seed)
    return np.array([case.mechanism.release(x, case.z, random_seed=rng) for _ in range(size or case.draws)])


def _release_points(case: MechanismCase) -> np.ndarray:
    """x, then up to ``OTHER_RELEASE_POINTS`` other rows of x_batch that ``release`` takes (its first, its last,
    then the rest in order; a row it refuses with a ValueError, e.g. a non-integer one for counts, is left out)."""
    others = list(case.points[1:])
    candidates = others[:1] + others[1:][-1:] + others[1:-1]
    chosen = itertools.islice((row for row in candidates if _releasable(case, row)), OTHER_RELEASE_POINTS)
    return np.stack([case.x, *chosen])


def _releasable(case: MechanismCase, x) -> bool:
    try:
        case.mechanism.release(x, case.z, random_seed=0)
    except ValueError:
        return False
    return True


def _pmf_table(case: MechanismCase, x_values=None, mechanism: Mechanism | None = None) -> np.ndarray:
    """pi(y | x_b, z) for every y of the support (rows) and every x_b of ``x_values`` (default x_batch) (columns)."""
    mechanism = mechanism or case.mechanism
    x_values = case.x_batch if x_values is None else x_values
    return np.exp(np.array([mechanism.logpdf(y, x_values, case.z) for y in case.support]))


@dataclass(frozen=True, eq=False)
class _Line:
    """The releases of the values ``xs`` (rows) along a case's line: y = origin + t u, their mass in t_range,
    jumps or bends at kinks; ``index`` says which of the values given to `_lines` they are."""

    index: np.ndarray
    xs: np.ndarray
    origin: np.ndarray
    t_range: tuple[float, float]
    kinks: tuple[float, ...]


def _lines(case: MechanismCase, xs) -> list[_Line]:
    """The lines of the releases of each x of ``xs``, x = case.x + s u + r (r orthogonal to u): t measured from
    case.x + r, the case's t_range together with its shift by s (a fixed support's and a translated density's),
    its kinks shifted by s; the values that share r share one line (their ranges and kinks joined)."""
    u, xs = case.line, np.asarray(xs, dtype=float)
    shifts = np.tensordot(xs - case.x, u, axes=u.ndim) / np.sum(u * u)
    origins = xs - np.multiply.outer(shifts, u)
    lines, left = [], np.arange(len(xs))
    while left.size:
        same = np.array([np.allclose(origins[i], origins[left[0]], rtol=1e-12, atol=1e-12) for i in left])
        index, left = left[same], left[~same]
        lo, hi = case.t_range
        moved = shifts[index]
        kinks = tuple(sorted({k + s for k in case.kinks for s in moved}))
        t_range = (min(lo, lo + moved.min()), max(hi, hi + moved.max()))
        lines.append(_Line(index, xs[index], origins[index[0]], t_range, kinks))
    return lines


def _line_density(case: MechanismCase, line: _Line, t, mechanism: Mechanism | None = None) -> np.ndarray:
    """The density at origin + t u of the releases of each of the line's values: shape (len(t), len(xs))."""
    mechanism = mechanism or case.mechanism
    return np.exp([mechanism.logpdf(line.origin + s * case.line, line.xs, case.z) for s in np.atleast_1d(t)])


def _line_cdf(case: MechanismCase, line: _Line, mechanism: Mechanism | None = None):
    """The CDF of t for each of the line's values (columns) on a grid over its t_range (both sides of every
    kink), by the trapezoid rule; returns the grid, the densities and the CDFs."""
    lo, hi = line.t_range
    kinks = np.array([k for k in line.kinks if lo < k < hi])
    eps = 1e-9 * (hi - lo)
    grid = np.unique(np.concatenate([np.linspace(lo, hi, 2001), kinks - eps, kinks + eps]))
    density = _line_density(case, line, grid, mechanism)
    steps = np.diff(grid)[:, None] * (density[1:] + density[:-1]) / 2
    cdf = np.concatenate([np.zeros((1, density.shape[1])), np.cumsum(steps, axis=0)])
    return grid, density, cdf / cdf[-1]


def _line_coordinates(case: MechanismCase, line: _Line, draws: np.ndarray) -> np.ndarray:
    """t for each release y = origin + t u, after checking the release lies on that line."""
    u = case.line
    t = np.tensordot(draws - line.origin, u, axes=u.ndim) / np.sum(u * u)
    on_line = line.origin + np.multiply.outer(t, u)
    np.testing.assert_allclose(draws, on_line, atol=1e-8 * (1 + np.abs(draws).max()))
    return t


def check_pmf_sums_to_one(case: MechanismCase) -> np.ndarray:
    """The pmf sums to one over ``case.support`` for x and every row of x_batch; returns the sums (x's first).

    Examples
    --------
    >>> from ppdinfer.mechanisms import DiscreteGaussian
    >>> case = MechanismCase("dg", DiscreteGaussian(1.0), np.array(2), np.array([0, 2]), support=window(2, 30))
    >>> check_pmf_sums_to_one(case).round(12)
    array([1., 1.])
    """
    totals = _pmf_table(case, case.points).sum(axis=0)
    if case.normalized:
        np.testing.assert_allclose(totals, 1.0, rtol=0, atol=1e-12, err_msg=f"{case.name}: the pmf does not sum to one")
    else:
        np.testing.assert_allclose(totals, totals[0], rtol=1e-12, err_msg=f"{case.name}: the sums differ across x")
    return totals


def check_density_integrates_to_one(case: MechanismCase) -> np.ndarray:
    """The density of the releases along ``case.line`` integrates to one, for x and every row of x_batch (over
    t_range, shifted as ``MechanismCase`` says); returns the integrals (x's first).

    Examples
    --------
    >>> from ppdinfer.mechanisms import Laplace
    >>> case = MechanismCase("l", Laplace(1.0), np.array(0.5), np.array([0.0]), line=np.array(1.0),
    ...                      t_range=(-40.0, 40.0), kinks=(0.0,))
    >>> check_density_integrates_to_one(case).round(9)
    array([1., 1.])
    """
    points = case.points
    totals = np.array([_integral_along(case, _lines(case, x[None])[0]) for x in points])
    off = np.flatnonzero(np.abs(totals - 1.0) >= 1e-8)
    assert not off.size, (
        f"{case.name}: at x = {points[off[0]].tolist()} the density integrates to {float(totals[off[0]])!r} along the line, "
        f"not 1"
    )
    return totals


def _integral_along(case: MechanismCase, line: _Line) -> float:
    """The integral over the line's t_range of the density of its one value, piece by piece between its kinks."""
    lo, hi = line.t_range
    points = [k for k in line.kinks if lo < k < hi]
    total, _ = integrate.quad(
        lambda t: _line_density(case, line, t)[0, 0], lo, hi, points=points or None,
        limit=50 * (len(points) + 1), epsabs=1e-11,
    )  # fmt: skip
    return float(total)


def check_releases_follow_logpdf(
    case: MechanismCase, mechanism: Mechanism | None = None, p_min: float = P_MIN
) -> float:
    """Releases follow ``logpdf`` of ``mechanism`` (default the case's), at x and at other rows of x_batch:
    chi-square on the support or KS along the line, at each; returns their Bonferroni p-value (the smallest
    times their number, at most 1; an AssertionError at or below ``p_min``).

    ``case.draws`` releases of x, a tenth of that (at least 100) at each of up to ``OTHER_RELEASE_POINTS``
    other rows, so a release that ignores x, or reads it wrongly, fails.

    Examples
    --------
    >>> from ppdinfer.mechanisms import DiscreteLaplace
    >>> case = MechanismCase("dl", DiscreteLaplace(0.7), np.array(3), np.array([3, 8]), support=window(3, 60), draws=3000)
    >>> check_releases_follow_logpdf(case) > 1e-3
    True
    """
    mechanism = mechanism or case.mechanism
    p_min = probability(p_min, "p_min")
    if case.support is None and case.line is None:
        raise ValueError(f"case {case.name!r} has neither a support nor a line: its releases cannot be checked")
    points = _release_points(case)
    sizes = [case.draws] + [max(100, case.draws // 10)] * (len(points) - 1)
    draws = [_releases(case, size, 20261125 + i, x) for i, (x, size) in enumerate(zip(points, sizes, strict=True))]
    pvalues = _release_pvalues(case, mechanism, points, draws)
    worst = points[int(np.argmin(pvalues))].tolist()
    adjusted = min(1.0, len(points) * float(pvalues.min()))
    assert adjusted > p_min, (
        f"{case.name}: releases of x = {worst} do not follow logpdf (p = {adjusted:.3g} <= {p_min:g}, Bonferroni over "
        f"{len(points)} values of x)"
    )
    return adjusted


def _release_pvalues(case: MechanismCase, mechanism: Mechanism, points: np.ndarray, draws: list) -> np.ndarray:
    """The p-value of each point's releases: chi-square against the pmf on the support, or KS along the line."""
    if case.support is not None:
        table = _pmf_table(case, points, mechanism)
        return np.array([chi_square_pvalue(d, case.support, table[:, i]) for i, d in enumerate(draws)])
    pvalues = np.empty(len(points))
    for line in _lines(case, points):
        grid, _, cdf = _line_cdf(case, line, mechanism)
        for column, i in enumerate(line.index):
            pvalues[i] = _ks_pvalue(_line_coordinates(case, line, draws[i]), grid, cdf[:, column])
    return pvalues


def _ks_pvalue(t: np.ndarray, grid: np.ndarray, cdf: np.ndarray) -> float:
    """Kolmogorov-Smirnov p-value of the coordinates t against the CDF tabulated on grid."""
    return float(stats.kstest(t, lambda s: np.interp(s, grid, cdf)).pvalue)


def check_additive_noise(case: MechanismCase) -> float | None:
    r"""A declared ``additive_noise`` is ``logpdf``; returns the largest difference (None where none is declared).

    The compiled kernels, the symbolic PyMC likelihood and the summed-out window read the
    declaration instead of ``logpdf``, so over the d coordinates

    .. math::

        \log \pi(y \mid x, z) = d \, \texttt{log\_norm} - \texttt{rate} \sum_{k=1}^{d} |y_k - x_k|^{\texttt{power}}

    must hold, and ``discrete`` must be the mechanism's. It is checked for x and every row of
    x_batch, at y = each of them and at releases of x and of other rows of x_batch.

    Examples
    --------
    >>> from ppdinfer.mechanisms import DiscreteGaussian
    >>> check_additive_noise(MechanismCase("dg", DiscreteGaussian(1.5), np.array(4), np.array([0, 4, 9]))) < 1e-9
    True
    """
    mechanism, noise = case.mechanism, case.mechanism.additive_noise
    if noise is None:
        return None
    assert noise.discrete == mechanism.discrete, (
        f"{case.name}: additive_noise says discrete={noise.discrete}, the mechanism discrete={mechanism.discrete}"
    )
    points = case.points
    releases = [_releases(case, 5, 31 + i, x) for i, x in enumerate(_release_points(case))]
    flat = points.reshape(len(points), -1).astype(float)
    worst = 0.0
    for y in np.concatenate([*releases, points]):
        errors = np.abs(y.reshape(-1) - flat) ** noise.power
        declared = flat.shape[1] * noise.log_norm - noise.rate * errors.sum(axis=1)
        actual = np.asarray(mechanism.logpdf(y, points, case.z), dtype=float)
        np.testing.assert_allclose(
            actual, declared, rtol=1e-12, atol=1e-9,
            err_msg=f"{case.name}: logpdf at y = {y.tolist()} is not its declared additive_noise {noise}",
        )  # fmt: skip
        worst = max(worst, float(np.max(np.abs(actual - declared))))
    return worst


def check_log_bound(case: MechanismCase) -> float:
    """``log_bound`` is finite and dominates ``logpdf`` at releases (of x and of other rows of x_batch), at
    x_batch, and over the support or line; returns log M.

    Examples
    --------
    >>> from ppdinfer.mechanisms import Laplace
    >>> case = MechanismCase("l", Laplace(2.0), np.array(0.5), np.array([0.0, 2.0]), line=np.array(1.0),
    ...                      t_range=(-20.0, 20.0), kinks=(0.0,))
    >>> check_log_bound(case)
    0.0
    """
    mechanism, size = case.mechanism, int(np.prod(case.shape))
    log_bound = mechanism.log_bound(case.z, size=size)
    assert math.isfinite(log_bound), f"{case.name}: log_bound is {log_bound!r}"
    releases = [_releases(case, 40 if i == 0 else 10, 20261125 + i, x) for i, x in enumerate(_release_points(case))]
    ys = [*np.concatenate(releases), *case.x_batch]
    values = np.array([mechanism.logpdf(y, case.x_batch, case.z) for y in ys]).ravel()
    with np.errstate(divide="ignore"):  # a zero of the pmf or density is -inf, below any bound
        if case.support is not None:
            values = np.concatenate([values, np.log(_pmf_table(case)).ravel()])
        if case.line is not None:
            values = np.concatenate([values, np.log(_line_cdf(case, _lines(case, case.x[None])[0])[1]).ravel()])
    worst = float(values.max())
    assert worst <= log_bound + 1e-9 * max(1.0, abs(log_bound)), f"{case.name}: logpdf {worst} > log_bound {log_bound}"
    return float(log_bound)


def check_logpdf_batch_shape(case: MechanismCase) -> None:
    """``release`` returns shape S of the right dtype and ``logpdf`` keeps the batch contract: (1,) for one x,
    (B,) for a batch, equal to one x at a time.

    Examples
    --------
    >>> from ppdinfer.mechanisms import Gaussian
    >>> check_logpdf_batch_shape(MechanismCase("g", Gaussian(1.0), np.array([0.5, 1.0]), np.zeros((3, 2))))
    """
    mechanism, x_batch = case.mechanism, case.x_batch
    y = mechanism.release(case.x, case.z, random_seed=1)
    assert y.shape == case.shape, f"{case.name}: a release has shape {y.shape}, x has {case.shape}"
    expected = np.int64 if mechanism.discrete else np.float64
    assert y.dtype == expected, f"{case.name}: a release has dtype {y.dtype}, expected {np.dtype(expected)}"
    assert mechanism.logpdf(y, case.x, case.z).shape == (1,), f"{case.name}: logpdf of one x is not of shape (1,)"
    assert mechanism.logpdf(y, x_batch[:1], case.z).shape == (1,), f"{case.name}: a batch of one is not (1,)"
    batch = mechanism.logpdf(y, x_batch, case.z)
    assert batch.shape == (len(x_batch),), f"{case.name}: logpdf of {len(x_batch)} x has shape {batch.shape}"
    one_at_a_time = np.concatenate([mechanism.logpdf(y, x, case.z) for x in x_batch])
    np.testing.assert_allclose(batch, one_at_a_time, rtol=1e-12, err_msg=f"{case.name}: batch != one x at a time")


def check_seeded_releases(case: MechanismCase) -> None:
    """A seed (an int or a Generator) reproduces the releases, and another seed changes them.

    Examples
    --------
    >>> from ppdinfer.mechanisms import DiscreteLaplace
    >>> check_seeded_releases(MechanismCase("dl", DiscreteLaplace(1.0), np.array(3), np.array([3])))
    """
    first = _releases(case, size=20, seed=9)
    assert np.array_equal(first, _releases(case, size=20, seed=9)), f"{case.name}: a seeded Generator does not repeat"
    assert not np.array_equal(first, _releases(case, size=20, seed=10)), f"{case.name}: the seed changes nothing"
    again = case.mechanism.release(case.x, case.z, random_seed=4), case.mechanism.release(case.x, case.z, random_seed=4)
    assert np.array_equal(*again), f"{case.name}: random_seed=4 does not repeat"


def check_noise_scale(case: MechanismCase) -> float:
    """``noise_scale`` is a positive finite float; returns it.

    Examples
    --------
    >>> from ppdinfer.mechanisms import Laplace
    >>> round(check_noise_scale(MechanismCase("l", Laplace(1.0), np.array(0.0), np.array([0.0]))), 4)
    1.4142
    """
    scale = case.mechanism.noise_scale(case.x, case.z)
    assert isinstance(scale, float) and 0 < scale < math.inf, f"{case.name}: noise_scale is {scale!r}"
    return scale


def check_release_posterior(case: MechanismCase, y=None, atol: float = 1e-9) -> np.ndarray:
    r"""A :class:`ppdinfer.pymc.Release` in a hand-written PyMC model gives the enumerated posterior.

    The model draws x uniformly from the candidates ``x_batch`` (a categorical index) and observes
    ``y`` (default: a seeded release of ``case.x``) through the mechanism:

    .. math::

        P(x = x_b \mid y) = \frac{\pi(y \mid x_b, z)}{\sum_{b'} \pi(y \mid x_{b'}, z)}.

    The model's joint log density at each index, normalized, must equal the enumeration from
    ``logpdf`` to ``atol``: the Release's likelihood is the mechanism's, with its normalizer, for
    every candidate. Returns the posterior probabilities.

    Examples
    --------
    >>> from ppdinfer.mechanisms import DiscreteLaplace
    >>> case = MechanismCase("dl", DiscreteLaplace(1.0), np.array(3), np.array([0, 3, 9]))
    >>> check_release_posterior(case, y=4).round(4)
    array([0.0466, 0.9362, 0.0171])
    """
    import pymc as pm

    from .pymc import Release

    atol = positive_finite(atol, "atol")
    y = case.mechanism.release(case.x, case.z, random_seed=5) if y is None else np.asarray(y)
    x_batch = np.asarray(case.x_batch)
    loglik = np.asarray(case.mechanism.logpdf(y, x_batch, case.z), dtype=float)
    if not np.isfinite(loglik).any():
        raise ValueError(f"case {case.name!r}: y has likelihood zero at every row of x_batch")
    exact = np.exp(loglik - loglik.max())
    exact /= exact.sum()
    with pm.Model() as model:
        index = pm.Categorical("index", p=np.full(len(x_batch), 1 / len(x_batch)))
        Release("y", case.mechanism, pm.math.constant(x_batch)[index], case.z, observed=y)
    logp = model.compile_logp()
    joint = np.array([logp({"index": b}) for b in range(len(x_batch))], dtype=float)
    posterior = np.exp(joint - joint.max())
    posterior /= posterior.sum()
    np.testing.assert_allclose(
        posterior, exact, rtol=0, atol=atol, err_msg=f"{case.name}: the Release posterior differs from enumeration"
    )
    return posterior


def check_mechanism(case: MechanismCase, *, pymc: bool = True) -> dict[str, object]:
    """Every check that applies to ``case``; returns what each found, by name (an AssertionError on a failure).

    ``pymc=False`` leaves out :func:`check_release_posterior` (which compiles a PyMC model).
    ``release_points`` records the values of x at which releases were checked (x first).

    Examples
    --------
    >>> from ppdinfer.mechanisms import Gaussian
    >>> case = MechanismCase("g", Gaussian(1.3), np.array(0.5), np.array([-2.5, 0.5, 7.5]), line=np.array(1.0),
    ...                      t_range=(-12.0, 12.0), kinks=(0.0,), draws=2000)
    >>> found = check_mechanism(case, pymc=False)
    >>> found["density_integrates_to_one"].round(6).tolist(), found["releases_follow_logpdf"] > 1e-3
    ([1.0, 1.0, 1.0], True)
    """
    found: dict[str, object] = {}
    if case.mechanism.additive_noise is not None:
        found["additive_noise"] = check_additive_noise(case)
    if case.support is not None:
        found["pmf_sums_to_one"] = check_pmf_sums_to_one(case)
    if case.line is not None:
        found["density_integrates_to_one"] = check_density_integrates_to_one(case)
    if case.support is not None or case.line is not None:
        found["releases_follow_logpdf"] = check_releases_follow_logpdf(case)
        found["release_points"] = _release_points(case)
    found["log_bound"] = check_log_bound(case)
    check_logpdf_batch_shape(case)
    found["logpdf_batch_shape"] = True
    check_seeded_releases(case)
    found["seeded_releases"] = True
    found["noise_scale"] = check_noise_scale(case)
    if pymc:
        found["release_posterior"] = check_release_posterior(case)
    return found
