r"""Test a release mechanism of your own in one call: the checks every ppdinfer mechanism passes.

A mechanism is a sampler and a likelihood at once (:class:`ppdinfer.mechanisms.Mechanism`); the
two must agree, and the samplers rely on a few promises more. Describe one instance with a
:class:`MechanismCase` (a confidential value x it releases, other values ``x_batch``, the public
z, and where its releases live: a finite ``support`` for a discrete release, a ``line`` for a
continuous one) and :func:`check_mechanism` runs every check that applies:

- the pmf sums to one over the support, for x and every row of ``x_batch`` (or the density
  integrates to one along the line);
- releases follow ``logpdf`` (chi-square on the support, or Kolmogorov-Smirnov on the line);
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
['log_bound', 'logpdf_batch_shape', 'noise_scale', 'pmf_sums_to_one', 'releases_follow_logpdf', 'seeded_releases']
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np
from scipy import integrate, stats

from .mechanisms.base import Mechanism

__all__ = [
    "MechanismCase",
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
        x + t u, t real, the density taken with respect to dt.
    t_range : tuple of float, optional
        Where the density's mass along the line lies (outside it below 1e-12).
    kinks : tuple of float
        Values of t where the density jumps or bends.
    normalized : bool
        False where ``logpdf`` omits a constant normalizer (the same for every x): the sum over the
        support is then checked to be equal across x_batch rather than equal to one.
    draws : int
        Releases drawn for the goodness-of-fit check.

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

    @property
    def shape(self) -> tuple[int, ...]:
        """S, the shape of one release."""
        return np.shape(self.x)


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
    draws = np.asarray(draws).reshape(len(draws), -1)
    support = np.asarray(support).reshape(len(support), -1)
    lookup = {tuple(row): i for i, row in enumerate(support)}
    index = [lookup.get(tuple(row), -1) for row in draws]
    if min(index) < 0:
        return 0.0
    observed = np.bincount(index, minlength=len(pmf)).astype(float)
    expected = np.asarray(pmf, dtype=float) / np.sum(pmf) * len(draws)
    small = expected < 5
    observed = np.append(observed[~small], observed[small].sum())
    expected = np.append(expected[~small], expected[small].sum())
    if expected[-1] < 1e-9:
        observed, expected = observed[:-1], expected[:-1]
    return float(stats.chisquare(observed, expected * observed.sum() / expected.sum()).pvalue)


def _releases(case: MechanismCase, size: int | None = None, seed: int = 20261125) -> np.ndarray:
    """``size`` (default ``case.draws``) releases of case.x from one seeded generator, stacked (size, *S)."""
    rng = np.random.default_rng(seed)
    return np.array([case.mechanism.release(case.x, case.z, random_seed=rng) for _ in range(size or case.draws)])


def _pmf_table(case: MechanismCase) -> np.ndarray:
    """pi(y | x_b, z) for every y of the support (rows) and every row x_b of x_batch (columns)."""
    return np.exp(np.array([case.mechanism.logpdf(y, case.x_batch, case.z) for y in case.support]))


def _line_density(case: MechanismCase, t, mechanism: Mechanism | None = None) -> np.ndarray:
    mechanism = mechanism or case.mechanism
    return np.exp([mechanism.logpdf(case.x + s * case.line, case.x, case.z)[0] for s in np.atleast_1d(t)])


def _line_cdf(case: MechanismCase, mechanism: Mechanism | None = None):
    """The CDF of t on a grid over t_range (both sides of every kink), by the trapezoid rule on the density."""
    lo, hi = case.t_range
    kinks = np.array([k for k in case.kinks if lo < k < hi])
    eps = 1e-9 * (hi - lo)
    grid = np.unique(np.concatenate([np.linspace(lo, hi, 2001), kinks - eps, kinks + eps]))
    density = _line_density(case, grid, mechanism)
    cdf = np.concatenate([[0.0], np.cumsum(np.diff(grid) * (density[1:] + density[:-1]) / 2)])
    return grid, density, cdf / cdf[-1]


def _line_coordinates(case: MechanismCase, draws: np.ndarray) -> np.ndarray:
    """t for each release y = x + t u, after checking the release lies on that line."""
    u = case.line
    t = np.tensordot(draws - case.x, u, axes=u.ndim) / np.sum(u * u)
    on_line = case.x + np.multiply.outer(t, u)
    np.testing.assert_allclose(draws, on_line, atol=1e-8 * (1 + np.abs(draws).max()))
    return t


def check_pmf_sums_to_one(case: MechanismCase) -> np.ndarray:
    """The pmf sums to one over ``case.support`` for x and every row of x_batch; returns the sums.

    Examples
    --------
    >>> from ppdinfer.mechanisms import DiscreteGaussian
    >>> case = MechanismCase("dg", DiscreteGaussian(1.0), np.array(2), np.array([0, 2]), support=window(2, 30))
    >>> check_pmf_sums_to_one(case).round(12)
    array([1., 1.])
    """
    totals = _pmf_table(case).sum(axis=0)
    if case.normalized:
        np.testing.assert_allclose(totals, 1.0, rtol=0, atol=1e-12, err_msg=f"{case.name}: the pmf does not sum to one")
    else:
        np.testing.assert_allclose(totals, totals[0], rtol=1e-12, err_msg=f"{case.name}: the sums differ across x")
    return totals


def check_density_integrates_to_one(case: MechanismCase) -> float:
    """The density of the releases of x along ``case.line`` integrates to one over t_range; returns the integral.

    Examples
    --------
    >>> from ppdinfer.mechanisms import Laplace
    >>> case = MechanismCase("l", Laplace(1.0), np.array(0.5), np.array([0.0]), line=np.array(1.0),
    ...                      t_range=(-40.0, 40.0), kinks=(0.0,))
    >>> round(check_density_integrates_to_one(case), 9)
    1.0
    """
    lo, hi = case.t_range
    points = [k for k in case.kinks if lo < k < hi]
    total, _ = integrate.quad(
        lambda t: _line_density(case, t)[0], lo, hi, points=points or None, limit=50 * (len(points) + 1), epsabs=1e-11
    )
    assert abs(total - 1.0) < 1e-8, f"{case.name}: the density integrates to {total!r} along the line, not 1"
    return float(total)


def check_releases_follow_logpdf(
    case: MechanismCase, mechanism: Mechanism | None = None, p_min: float = P_MIN
) -> float:
    """Releases of x follow ``logpdf`` of ``mechanism`` (default the case's): chi-square on the support or KS
    along the line; returns the p-value (an AssertionError below ``p_min``).

    Examples
    --------
    >>> from ppdinfer.mechanisms import DiscreteLaplace
    >>> case = MechanismCase("dl", DiscreteLaplace(0.7), np.array(3), np.array([3]), support=window(3, 60), draws=3000)
    >>> check_releases_follow_logpdf(case) > 1e-3
    True
    """
    mechanism = mechanism or case.mechanism
    draws = _releases(case)
    if case.support is not None:
        pmf = np.exp([mechanism.logpdf(y, case.x, case.z)[0] for y in case.support])
        pvalue = chi_square_pvalue(draws, case.support, pmf)
    elif case.line is not None:
        grid, _, cdf = _line_cdf(case, mechanism)
        pvalue = float(stats.kstest(_line_coordinates(case, draws), lambda s: np.interp(s, grid, cdf)).pvalue)
    else:
        raise ValueError(f"case {case.name!r} has neither a support nor a line: its releases cannot be checked")
    assert pvalue > p_min, f"{case.name}: releases do not follow logpdf (p = {pvalue:.3g} <= {p_min:g})"
    return pvalue


def check_log_bound(case: MechanismCase) -> float:
    """``log_bound`` is finite and dominates ``logpdf`` at releases, at x_batch, and over the support or line;
    returns log M.

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
    ys = list(_releases(case, size=40)) + list(case.x_batch)
    values = np.array([mechanism.logpdf(y, case.x_batch, case.z) for y in ys]).ravel()
    with np.errstate(divide="ignore"):  # a zero of the pmf or density is -inf, below any bound
        if case.support is not None:
            values = np.concatenate([values, np.log(_pmf_table(case)).ravel()])
        if case.line is not None:
            values = np.concatenate([values, np.log(_line_cdf(case)[1])])
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

    Examples
    --------
    >>> from ppdinfer.mechanisms import Gaussian
    >>> case = MechanismCase("g", Gaussian(1.3), np.array(0.5), np.array([-2.5, 0.5, 7.5]), line=np.array(1.0),
    ...                      t_range=(-12.0, 12.0), kinks=(0.0,), draws=2000)
    >>> found = check_mechanism(case, pymc=False)
    >>> round(found["density_integrates_to_one"], 6), found["releases_follow_logpdf"] > 1e-3
    (1.0, True)
    """
    found: dict[str, object] = {}
    if case.support is not None:
        found["pmf_sums_to_one"] = check_pmf_sums_to_one(case)
    if case.line is not None:
        found["density_integrates_to_one"] = check_density_integrates_to_one(case)
    if case.support is not None or case.line is not None:
        found["releases_follow_logpdf"] = check_releases_follow_logpdf(case)
    found["log_bound"] = check_log_bound(case)
    check_logpdf_batch_shape(case)
    found["logpdf_batch_shape"] = True
    check_seeded_releases(case)
    found["seeded_releases"] = True
    found["noise_scale"] = check_noise_scale(case)
    if pymc:
        found["release_posterior"] = check_release_posterior(case)
    return found
