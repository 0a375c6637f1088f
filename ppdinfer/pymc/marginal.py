r"""Summing integer latents out: a privacy release that pins x to a window makes the model continuous.

Where an integer latent x_i is observed through additive noise with a known tail (a
:class:`~ppdinfer.pymc.Release` of a mechanism that declares ``additive_noise``, a
``DiscreteLaplace`` / ``DiscreteGaussian``, or a plain ``pm.Normal`` / ``pm.Laplace`` with mu = x
and a constant scale), its likelihood given the parameters is a sum over x_i's support, and
nearly all of the sum lies in a window around y_i:

.. math::

    p(y_i \mid \theta) = \sum_{k} p(x_i = k \mid \theta)\, \pi(y_i \mid k)
    \approx \sum_{k = lo_i}^{hi_i} p(x_i = k \mid \theta)\, \pi(y_i \mid k).

The noise density f(e) = exp(log_norm - rate |e|^power) decreases in |e|, so the omitted part is at
most 2 (f(d) + \int_d^\infty f) whatever theta is (p(k | theta) <= 1), with d the half-width of the
window; :func:`marginalize` starts from the smallest whole d whose bound is below ``tol`` (1e-12 by default:
about 7.3 noise sds for Gaussian noise), intersected with the prior's support (x >= 0; x <= n for a binomial
with constant n). That bound is absolute; what matters is the omitted part relative to the kept part, which is
small only where the prior agrees with y. The terms p(k | theta) pi(y_i | k) are log-concave in k for the
supported priors and noises, so beyond an edge where they fall they fall at least geometrically, and the edge
terms bound the omitted mass relative to the kept mass
(``ppdinfer.kernels.windows.window_edge_mass``). That bound is checked at the model's start point before
sampling (a window that fails it is widened to where the start point's posterior of x lies, or the model is
refused: ``method="auto"`` then augments), and again on every posterior draw when x is drawn: the largest is the
posterior's ``ppdinfer_omitted_mass_bound``; above ``tol``, :func:`ppdinfer.pymc.sample` reruns once with
windows widened at the draws that fell short, then augments (``method="auto"``) or warns
(``method="marginalize"``, :class:`OmittedMassWarning`). A window's edges, the noise's scale and a binomial's n
must be constants of the graph (no random variable among their ancestors); otherwise x is not summed out.

:func:`marginalize` returns a clone of the model with x (and, with ``conjugate``, a Gamma rate of a
Poisson x or a Beta probability of a binomial x, integrated out in closed form: the negative
binomial and beta-binomial marginals) removed and the release replaced by a ``pm.Potential`` holding
the windowed logsumexp: every remaining variable is continuous, so any of PyMC's NUTS backends samples
it. :meth:`MarginalModel.draw_latents` then draws x exactly from p(x | theta, y) (the normalized
window weights) for each posterior draw, and the conjugate variable from its conditional given x, so
the result has the same variables as the augmented one. :func:`sample_marginal` does both, and
:func:`choose_method` is the rule :func:`ppdinfer.pymc.sample` follows with ``method="auto"``.
"""

from __future__ import annotations

import os
import threading
import time
import warnings
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import NamedTuple

import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt
import xarray as xr
from pymc.distributions.discrete import DiscreteUniformRV
from pymc.initial_point import make_initial_point_fn
from pymc.logprob.transforms import LogOddsTransform, LogTransform
from pymc.model.fgraph import fgraph_from_model, model_from_fgraph, model_potential
from pytensor.graph.replace import graph_replace
from pytensor.graph.traversal import ancestors
from pytensor.tensor.random.basic import (
    BinomialRV,
    LaplaceRV,
    MultinomialRV,
    NegBinomialRV,
    NormalRV,
    PoissonRV,
)
from scipy import special

from ..kernels.augmentation import CHILD_BINOMIAL, CHILD_NORMAL
from ..kernels.resampling import draw_columns
from ..kernels.windows import gamma_poisson_window_checked_draws, window_edge_mass
from ..mechanisms import discrete_gaussian_log_normalizer
from ..rng import root_seed
from ._constants import graph_constant
from .augmentation import AugmentationWarning, no_latent_reason, privacy_latents
from .children import affine_children
from .distributions import DiscreteGaussianRV, DiscreteLaplaceRV
from .families import dependents, latent_family, rv_shape
from .independence import INDEPENDENCE_MAX_DIM, Declined, sample_independence
from .release import ReleaseRV
from .tabulated import tabulated_prior
from .window_ops import child_recurrence_terms, gamma_poisson_window_logp, window_constants

__all__ = [
    "AUGMENT_SECONDS_PER_SITE",
    "AUGMENT_SECONDS_PER_STEP",
    "COLLAPSE_MIN_UNITS",
    "INDEPENDENCE_SECONDS_PER_CELL",
    "INDEPENDENCE_SECONDS_PER_DRAW",
    "MARGINAL_SECONDS_PER_CELL",
    "MARGINAL_SECONDS_PER_CHILD_CELL",
    "MARGINAL_SECONDS_PER_DRAW",
    "MAX_SUMMED_COUNT",
    "NUTPIE_COMPILE_SECONDS",
    "PROCESS_START_SECONDS",
    "MarginalModel",
    "OmittedMassWarning",
    "SummedOut",
    "choose_method",
    "marginalize",
    "sample_marginal",
    "window_half_width",
]

#: The largest count a window may reach: its terms hold log-gammas of about k log k, which float64 carries to about
#: 1e-16 of that (2e-7 at 1e8, but +-16 at 4e15, more than the terms' differences); beyond it x is augmented, whose
#: moves take the prior's ratios exactly (``ppdinfer.kernels.special.log_gamma_step``).
MAX_SUMMED_COUNT = 1e8
#: priors whose log pmf PyMC evaluates elementwise on a window (the families' latents, and NegBin)
_SUMMABLE_PRIORS = (PoissonRV, BinomialRV, NegBinomialRV, DiscreteUniformRV)
#: noise distributions written as the release (their class, scale parameter, and what the noise is)
_PLAIN_NOISE = (NormalRV, LaplaceRV, DiscreteLaplaceRV, DiscreteGaussianRV)


def _tail_bound(d, log_norm, rate, power) -> np.ndarray:
    """2 (f(d) + int_d^inf f(e) de) for f(e) = exp(log_norm - rate |e|^power): a bound on the sum of f over the
    integers k with |k - y| > d (each term beyond the first is at most the integral over the unit before it)."""
    d, log_norm, rate = np.broadcast_arrays(np.asarray(d, float), np.asarray(log_norm, float), np.asarray(rate, float))
    if power == 1:
        log_integral = log_norm - rate * d - np.log(rate)
    else:
        log_integral = log_norm + 0.5 * np.log(np.pi / (4 * rate)) + np.log(special.erfc(d * np.sqrt(rate)))
    return 2 * (np.exp(log_norm - rate * d**power) + np.exp(log_integral))


def window_half_width(log_norm, rate, power: int, tol: float = 1e-12) -> np.ndarray:
    r"""The smallest whole d >= 1 with 2 (f(d) + \int_d^\infty f) <= tol for the noise f(e) = exp(log_norm - rate |e|^power).

    Dropping every k with |k - y| > d from sum_k p(k | theta) pi(y | k) then omits at most ``tol``.

    Examples
    --------
    >>> from ppdinfer.pymc.marginal import window_half_width
    >>> sigma = 3.0   # Gaussian noise: about 7.3 sigma for 1e-12
    >>> int(window_half_width(-0.5 * np.log(2 * np.pi * sigma**2), 1 / (2 * sigma**2), 2))
    22
    """
    if not (isinstance(tol, float | int) and 0 < tol < 1):
        raise ValueError(f"tol must be a number in (0, 1), got {tol!r}")
    if power not in (1, 2):
        raise ValueError(f"power must be 1 or 2, got {power!r}")
    log_norm, rate = np.broadcast_arrays(np.asarray(log_norm, float), np.asarray(rate, float))
    d = np.maximum(np.floor((np.maximum(np.log(1 / tol) + log_norm, 1e-9) / rate) ** (1 / power)), 1.0)
    for _ in range(10_000):
        short = _tail_bound(d, log_norm, rate, power) > tol
        if not short.any():
            return d
        d = d + short * np.maximum(1.0, np.floor(1e-3 * d))  # steps of 0.1% of d: d is at most that wide
    raise ValueError(f"no window bounds the noise's tail below tol = {tol}")


def _observed_constant(model, child) -> np.ndarray:
    """A child's observed value in its own dtype (``graph_constant``: refused where it is not a constant)."""
    value = model.rvs_to_values[child]
    return graph_constant(value, f"{child.name}'s observed value").astype(value.dtype)


@dataclass(frozen=True)
class SummedOut:
    """One latent x summed out of a model: its window and the bound on the omitted mass.

    ``lo`` is the window's first value per coordinate (x's shape), ``width`` the number of values (one
    for every coordinate), ``half_width`` the noise distance d that sets it, ``bound`` the largest bound
    over the coordinates on the omitted part of each coordinate's sum from the noise's tail alone (below
    ``tol``), ``start_bound`` the largest bound on the omitted mass relative to the kept mass (prior times
    likelihood) at the model's start point (below ``tol``: the window is widened until it is), ``widened`` the
    width before that (None where the noise's window sufficed), ``family`` the prior summed (``"gamma_poisson"``:
    x's Gamma rate integrated out too, ``conjugate`` its name).

    Examples
    --------
    >>> import pymc as pm
    >>> from ppdinfer.mechanisms import Gaussian
    >>> from ppdinfer.pymc import Release
    >>> from ppdinfer.pymc.marginal import marginalize
    >>> with pm.Model() as model:
    ...     x = pm.Poisson("x", 20.0, shape=2)
    ...     y = Release("y", Gaussian(2.0), x, observed=[18.3, 25.1])
    >>> found = marginalize(model).latents[0]
    >>> found.name, found.width, found.lo.tolist(), found.bound < 1e-12, found.start_bound < 1e-12
    ('x', 30, [4, 11], True, True)
    """

    name: str
    release: str
    family: str
    conjugate: str | None
    dims: tuple
    lo: np.ndarray
    width: int
    half_width: np.ndarray
    bound: float
    tol: float
    start_bound: float = float("nan")
    widened: int | None = None
    #: the names of x's other children summed with it (``ppdinfer.pymc.children``)
    children: tuple = ()
    #: how the window is summed: "recurrence" (a collapsed gamma-Poisson, ``ppdinfer.pymc.window_ops``) or "plain"
    #: (a logsumexp over every cell; for a gamma-Poisson, why not the recurrence)
    window_sum: str = "plain"
    # the largest value of x's support per coordinate (inf where there is none): an edge there omits nothing
    _top: object = field(repr=False, default=None)
    # the smallest value of x's support per coordinate (None: 0): an edge there omits nothing
    _bottom: object = field(repr=False, default=None)
    # the other children's observed values by name (they leave the model with x, and return in observed_data)
    _children_observed: object = field(repr=False, default=None)
    # what draw_latents reads: the window's log weights per coordinate, and the conjugate's parameters
    _weights: object = field(repr=False, default=None)
    _conjugate_draw: object = field(repr=False, default=None)
    # a collapsed gamma-Poisson summed by recurrence: (step, peak, constant), and _weights then gives shape and log q
    _window: object = field(repr=False, default=None)

    @property
    def units(self) -> int:
        """The number of coordinates of x."""
        return int(self.lo.size)

    @property
    def cells(self) -> int:
        """Window values summed per log density evaluation: ``width * units``."""
        return self.width * self.units


def _noise(model, x_rv, release):
    """(log pi(y | k) as a function of a grid of k, y, log_norm, rate, power) of a release of x itself with
    additive noise of a known tail; a ValueError saying why not."""
    op = release.owner.op
    name = f"{release.name} (the release of {x_rv.name})"
    _, _, centre, *params = release.owner.inputs
    if centre is not x_rv:
        raise ValueError(f"{name} is not centred on {x_rv.name} itself: it cannot be summed out")
    y = graph_constant(model.rvs_to_values[release], f"{release.name}'s observed value")
    if isinstance(op, ReleaseRV):
        noise = op.mechanism.additive_noise
        if noise is None:
            raise ValueError(
                f"{name}: its mechanism {op.mechanism!r} declares no additive noise (mechanism.additive_noise is "
                "None), so no window bounds the omitted mass: it cannot be summed out; use method='augment'"
            )
        log_norm, rate, power = float(noise.log_norm), float(noise.rate), int(noise.power)

        def loglik(grid):
            distance = np.abs(y - grid)
            return log_norm - rate * (distance if power == 1 else distance**2)

        return loglik, y, log_norm, rate, power
    if not isinstance(op, _PLAIN_NOISE):
        raise ValueError(
            f"{name} is a {type(op).__name__}, not additive noise with a known tail (a ppdinfer Release of an "
            "additive mechanism, DiscreteLaplace, DiscreteGaussian, pm.Normal or pm.Laplace): it cannot be summed out"
        )
    values = [graph_constant(p, f"{name}: its scale") for p in params]
    if isinstance(op, NormalRV):
        sigma = values[0]
        log_norm, rate, power = -0.5 * np.log(2 * np.pi * sigma**2), 1 / (2 * sigma**2), 2
    elif isinstance(op, LaplaceRV):
        b = values[0]
        log_norm, rate, power = -np.log(2 * b), 1 / b, 1
    elif isinstance(op, DiscreteLaplaceRV):
        rate = values[0] / values[1]
        log_norm, power = np.log(np.tanh(rate / 2)), 1
    else:  # DiscreteGaussian
        sigma = values[0]
        log_norm = -np.vectorize(discrete_gaussian_log_normalizer)(sigma)
        rate, power = 1 / (2 * sigma**2), 2

    def loglik(grid):
        distance = np.abs(y - grid)
        return log_norm - rate * (distance if power == 1 else distance**2)

    return loglik, y, log_norm, rate, power


def _shifted_gammaln(grid: np.ndarray, shape):
    """gammaln(grid + shape) for a constant integer grid: where ``shape`` is one number for every coordinate and
    the grid spans fewer distinct values than cells, gammaln of each distinct value once, gathered (its gradient
    a scatter-add): the window's cells share few values (about the counts' range plus the width)."""
    low, high = int(grid.min()), int(grid.max())
    if all(length == 1 for length in shape.type.shape):  # one value, broadcast (PyMC's (1,) parameters)
        shape = shape.reshape(())
    if shape.type.ndim == 0 and high - low + 1 < grid.size // 2:
        table = pt.gammaln(shape + np.arange(low, high + 1, dtype=float))
        return table[pt.as_tensor_variable((grid - low).astype(np.int64))]
    return pt.gammaln(pt.as_tensor_variable(grid.astype(float)) + shape)


def _betaln(a, b):
    return pt.gammaln(a) + pt.gammaln(b) - pt.gammaln(a + b)


def _prior_logp(x_rv, found, grid, conjugate: bool):
    """((cells, per_unit, constant), the conjugate's draw or None, family name, (shape, log q) or None):
    log p(x = grid | parameters) = cells + per_unit + constant, ``cells`` a graph over the grid, ``per_unit`` one
    over x's coordinates (or 0), and ``constant`` an array over the grid (or 0); the last, for a collapsed
    gamma-Poisson, what :func:`~ppdinfer.pymc.window_ops.gamma_poisson_window_logp` sums the window from."""
    if conjugate and found is not None and found.family.name == "gamma_poisson":
        shape, scale = (pt.cast(p, "float64") for p in found.parameters)  # float32 constants: gammaln in float32
        exposure = found.constants["exposure"]
        ratio = scale * exposure
        k = pt.as_tensor_variable(grid.astype(float))
        # per cell: what varies with k and the parameters; per coordinate: what does not vary with k (outside the
        # logsumexp); constant: -gammaln(k + 1), added to the noise's constant log density in NumPy
        cells = _shifted_gammaln(grid, shape) + k * (pt.log(ratio) - pt.log1p(ratio))
        per_unit = -pt.gammaln(shape) - shape * pt.log1p(ratio)

        def draw(rng, x, shape_value, scale_value):
            return rng.gamma(shape_value + x, 1.0 / (1.0 / scale_value + exposure))

        recurrence = (shape, pt.log(ratio) - pt.log1p(ratio))  # gamma_poisson_window_logp's shape and log q
        return (cells, per_unit, -special.gammaln(grid + 1.0)), (draw, (shape, scale)), "gamma_poisson", recurrence
    if conjugate and found is not None and found.family.name == "beta_binomial":
        n, a, b = (pt.cast(p, "float64") for p in found.parameters)
        k = pt.as_tensor_variable(grid.astype(float))
        inside = pt.ge(k, 0) & pt.le(k, n)
        logp = (
            pt.gammaln(n + 1)
            - pt.gammaln(k + 1)
            - pt.gammaln(pt.maximum(n - k, 0) + 1)
            + _betaln(k + a, pt.maximum(n - k, 0) + b)
            - _betaln(a, b)
        )

        def draw(rng, x, n_value, a_value, b_value):
            return rng.beta(a_value + x, b_value + n_value - x)

        return (pt.switch(inside, logp, -np.inf), 0.0, 0.0), (draw, (n, a, b)), "beta_binomial", None
    prior = pm.logp(x_rv, grid.astype(x_rv.dtype))
    return (prior, 0.0, 0.0), None, type(x_rv.owner.op).__name__.removesuffix("RV").lower(), None


def _latent_window(x_rv, y, log_norm, rate, power, tol, table=None):
    """(lo, width, half_width, bound, top, bottom): the noise's window of x around y, inside x's support, whose
    largest value per coordinate is ``top`` (a binomial's n or a discrete uniform's upper end, else inf) and
    smallest ``bottom`` (a discrete uniform's lower end, else 0); a tabulated prior's bounds where ``table``."""
    d = np.broadcast_to(window_half_width(log_norm, rate, power, tol), y.shape)
    top, bottom = np.full(y.shape, np.inf), np.zeros(y.shape)
    if table is not None:  # its bounds where the graph has them as constants, else open (-inf, inf)
        bottom, top = np.broadcast_to(table.lower, y.shape), np.broadcast_to(table.upper, y.shape)
    elif isinstance(x_rv.owner.op, BinomialRV):  # a window edge frozen at n: n must be a constant
        top = np.broadcast_to(graph_constant(x_rv.owner.inputs[2], f"the number of trials n of {x_rv.name}"), y.shape)
    if isinstance(x_rv.owner.op, DiscreteUniformRV):  # both edges frozen: constants
        lower, upper = (graph_constant(v, f"the bounds of {x_rv.name}") for v in x_rv.owner.inputs[2:4])
        bottom, top = np.broadcast_to(lower, y.shape), np.broadcast_to(upper, y.shape)
    lo, hi = _noise_window(y, d, top, bottom)
    if np.max(hi) > MAX_SUMMED_COUNT:
        raise ValueError(
            f"{x_rv.name}'s window reaches counts of {np.max(hi):.3g}: its terms' log pmfs (about k log k) are carried "
            f"by float64 only to about {np.max(hi) * np.log(np.max(hi)) * 2.2e-16:.2g}, too coarse for their differences "
            f"(summing out takes counts up to {MAX_SUMMED_COUNT:.0e}); use method='augment', exact at any count"
        )
    width = int(max(np.max(hi - lo + 1), 1))
    bound = float(np.max(_tail_bound(d, log_norm, rate, power)))
    return lo.astype(np.int64), width, d, bound, top, bottom


def marginalize(
    model: pm.Model | None = None, *, tol: float = 1e-12, conjugate: bool = True, recurrence: bool = True
) -> MarginalModel:
    r"""The model with every integer latent observed through additive noise summed out over a window.

    Each latent x of ``ppdinfer.pymc.augmentation.privacy_latents`` must have a Poisson, Binomial or
    NegativeBinomial prior (with ``conjugate``, a Gamma rate of a Poisson x or a Beta probability of a
    binomial x, one per coordinate and read by x alone, is integrated out with it) and one child that is a release of
    x itself with additive noise of a constant scale; any other child must be an observed Poisson or Normal of mean
    affine in x or a Binomial of n = x (:func:`ppdinfer.pymc.children.affine_children`), whose log density joins each
    value's term in the window. Its release becomes ``pm.Potential(f"{y}_summed", ...)``:

    .. math::

        \sum_i \log \sum_{k = lo_i}^{lo_i + W - 1} \exp\big(\log p(x_i = k \mid \theta) + \log \pi(y_i \mid k)\big),

    with the window [lo_i, lo_i + W) covering |k - y_i| <= d (:func:`window_half_width`), so the omitted
    mass is below ``tol`` per coordinate whatever theta is (``SummedOut.bound``), and, at the model's start point,
    below ``tol`` relative to the mass the window keeps (``SummedOut.start_bound``; the window is widened where it
    is not, ``SummedOut.widened``). The noise's scale and a binomial's n must be constants of the graph.

    Parameters
    ----------
    model : pm.Model, optional
        The model (the one in context by default); it is not changed.
    tol : float
        The bound on each coordinate's omitted mass, in (0, 1).
    conjugate : bool
        Integrate a conjugate Gamma rate or Beta probability out with x (its conditional draw follows).
    recurrence : bool
        Sum a collapsed gamma-Poisson window by the compiled recurrence of
        :func:`~ppdinfer.pymc.window_ops.gamma_poisson_window_logp` (the same value, a few multiplications per
        cell); False keeps the plain graph, which every backend compiles (JAX, for NumPyro, included).

    Returns
    -------
    MarginalModel
        ``.model`` the marginal model (continuous), ``.latents`` a :class:`SummedOut` per latent.

    Examples
    --------
    >>> import numpy as np
    >>> import pymc as pm
    >>> from ppdinfer.mechanisms import Gaussian
    >>> from ppdinfer.pymc import Release
    >>> from ppdinfer.pymc.marginal import marginalize
    >>> with pm.Model() as model:
    ...     m = pm.Gamma("m", 2.0, 0.1)
    ...     rate = pm.Gamma("rate", 2.0, 2.0 / m, shape=3)
    ...     x = pm.Poisson("x", rate * np.array([1.0, 2.0, 3.0]))
    ...     y = Release("y", Gaussian(2.0), x, observed=[18.3, 25.1, 60.2])
    >>> marginal = marginalize(model)
    >>> [rv.name for rv in marginal.model.free_RVs], marginal.latents[0].family, marginal.latents[0].conjugate
    (['m'], 'gamma_poisson', 'rate')
    """

    model = pm.modelcontext(model)
    if not isinstance(conjugate, bool | np.bool_):
        raise ValueError(f"conjugate must be True or False, got {conjugate!r}")
    window_half_width(0.0, 1.0, 1, tol)  # checks tol
    latents = privacy_latents(model)
    if not latents:
        raise ValueError(f"{no_latent_reason(model)}: nothing to sum out")
    plans = []
    removed = set()
    for x_rv in latents:
        table = tabulated_prior(model, x_rv)  # a Truncated or CustomDist prior, or one a Potential reads
        children = dependents(model, x_rv)
        if isinstance(table, str) and any(term in model.potentials for term in children):
            raise ValueError(f"{table}: {x_rv.name} cannot be summed out; use method='augment'")
        table = None if isinstance(table, str) else table
        if table is None and (
            isinstance(x_rv.owner.op, MultinomialRV) or not isinstance(x_rv.owner.op, _SUMMABLE_PRIORS)
        ):
            raise ValueError(
                f"{x_rv.name} has a {type(x_rv.owner.op).__name__} prior: only coordinatewise Poisson, Binomial, "
                "NegativeBinomial and DiscreteUniform latents, and elementwise Truncated and integer CustomDist ones, "
                "can be summed out (a multinomial's cells are coupled by its total); use method='augment'"
            )
        prior_terms = () if table is None else table.potentials
        children = [term for term in children if term not in prior_terms]
        release, others = _release_and_others(model, x_rv, children)
        loglik, y, log_norm, rate, power = _noise(model, x_rv, release)
        if y.shape != rv_shape(x_rv):
            raise ValueError(f"{release.name} has shape {y.shape} but {x_rv.name} has another shape")
        found = latent_family(model, x_rv, collapse=True) if conjugate else None
        if found is not None and not found.family.collapsed:
            found = None
        lo, width, d, bound, top, bottom = _latent_window(x_rv, y, log_norm, rate, power, tol, table)
        plans.append(_Plan(x_rv, release, found, loglik, y, lo, width, d, bound, top, tuple(others), bottom, table))
        removed |= {x_rv, release} | {child.child for child in others} | set(prior_terms)
        removed |= {found.conjugate} if found is not None else set()
    for det in model.deterministics:
        reads = removed & set(ancestors([det], blockers=set(model.basic_RVs) - removed))
        if reads:
            raise ValueError(
                f"the Deterministic {det.name} reads {sorted(v.name for v in reads)}, which are summed out: "
                "remove it or use method='augment'"
            )
    for plan in plans:  # a Potential of x's prior that reads another latent summed out would couple their sums
        for potential in () if plan.table is None else plan.table.potentials:
            reads = (removed - {plan.x_rv, potential}) & set(ancestors([potential], blockers=set(model.basic_RVs)))
            if reads:
                raise ValueError(
                    f"the Potential {potential.name} of {plan.x_rv.name}'s prior also reads "
                    f"{sorted(v.name for v in reads)}, summed out too: use method='augment'"
                )
    return _checked_at(model, plans, tol, conjugate, recurrence)


class _Plan(NamedTuple):
    """One latent's summing out, before the model is built: x, its release, its family, the noise, the window."""

    x_rv: object
    release: object
    found: object
    loglik: object
    y: np.ndarray
    lo: np.ndarray
    width: int
    d: np.ndarray
    bound: float
    top: np.ndarray
    children: tuple = ()  # x's other children (``AffineChild``), summed with it
    bottom: object = 0.0  # the smallest value of x's support per coordinate (a discrete uniform's lower end)
    table: object = None  # a tabulated prior (``ppdinfer.pymc.tabulated.TabulatedPrior``): its graph is x's prior


def _release_and_others(model, x_rv, children):
    """(x's release, its other children as ``AffineChild`` records): the release is the child whose noise
    :func:`_noise` reads; every other child must be an observed Poisson or Normal of mean affine in x or a Binomial
    of n = x (``ppdinfer.pymc.children.affine_children``), else a ValueError."""
    if not children or any(c not in model.observed_RVs for c in children):
        raise ValueError(
            f"{x_rv.name} feeds {[c.name for c in children]}: it can be summed out only where its children are "
            "observed; use method='augment'"
        )
    if len(children) == 1:
        return children[0], []
    for release in children:
        try:
            _noise(model, x_rv, release)
        except ValueError:
            continue
        found, why = affine_children(model, x_rv, [c for c in children if c is not release])
        if found is None:
            raise ValueError(
                f"{x_rv.name} feeds {[c.name for c in children]}: besides its release {release.name}, its child "
                f"{why}, so it cannot be summed out; use method='augment'"
            )
        return release, found
    raise ValueError(
        f"{x_rv.name} feeds {[c.name for c in children]}, none of them a release of {x_rv.name} itself with additive "
        "noise: it cannot be summed out; use method='augment'"
    )


def _children_logp(children, grid, memo, free_rvs):
    """The children's log densities at each value of the window's grid (width x x's shape), a graph of the fgraph's
    variables (``memo``)."""
    total = 0.0
    for child in children:
        a, b, c = graph_replace(list(child.rv_graphs), {rv: memo[rv] for rv in free_rvs}, strict=False)
        observed = child.graphs[0]
        if child.code == CHILD_BINOMIAL:
            total = total + pm.logp(pm.Binomial.dist(n=grid, p=a), observed)
        elif child.code == CHILD_NORMAL:
            total = total + pm.logp(pm.Normal.dist(mu=a + b * grid, sigma=c), observed)
        else:
            total = total + pm.logp(pm.Poisson.dist(mu=a + b * grid), observed)
    return total


#: How far :func:`marginalize` looks past the noise's window for the posterior's mass at the start point (widths on
#: each side), and the most cells it evaluates there
_SEARCH_WIDTHS = 8
_SEARCH_CELLS = 4_000_000


def _checked_at(model, plans, tol, conjugate, recurrence, points=None) -> MarginalModel:
    """The marginal model whose every window omits at most ``tol`` of the mass it keeps (prior times likelihood,
    ``ppdinfer.kernels.windows.window_edge_mass``) at each of ``points`` (untransformed values by name; by
    default the model's start point): the noise's windows where they do, else windows widened to where the
    points' posteriors of x lie. Where even those do not, a ValueError (so ``method="auto"`` augments) if the points
    are where the posterior lies (posterior draws, or the start point of a model with nothing left to sample);
    else (a start point that may lie far from the posterior) the widened model, whose draws are checked."""
    marginal = _build(model, plans, tol, conjugate, recurrence)
    posterior = points is not None or not marginal.model.free_RVs
    points = [_start_point(marginal.model)] if points is None else points
    marginal = marginal.with_start_bounds(points)
    short = [latent.start_bound > tol for latent in marginal.latents]
    if not any(short):
        return marginal
    searched = [_searched(plan) if wide else plan for plan, wide in zip(plans, short, strict=True)]
    search = _build(model, searched, tol, conjugate, recurrence)
    widened = [
        _posterior_window(plan, [search.log_terms(latent, point) for point in points], tol) if wide else plan
        for plan, latent, wide in zip(searched, search.latents, short, strict=True)
    ]
    marginal = _build(model, widened, tol, conjugate, recurrence).with_start_bounds(points)
    for latent in marginal.latents:
        if posterior and latent.start_bound > tol:
            raise ValueError(
                f"{latent.name}: its window (widened to {latent.width} values) may omit {latent.start_bound:.2g} of "
                f"the posterior mass it keeps, more than tol = {tol:g}: the release does not pin x near y; use "
                "method='augment'"
            )
    marginal.latents = tuple(
        replace(latent, widened=plan.width if wide else None)
        for latent, plan, wide in zip(marginal.latents, plans, short, strict=True)
    )
    return marginal


def _start_point(model) -> dict:
    """The marginal model's start point: its free variables' initial values (untransformed), by name."""
    start = model.initial_point()
    point = {}
    for rv in model.free_RVs:
        backward = _NUMPY_BACKWARD.get(type(model.rvs_to_transforms.get(rv)))
        if backward is None:  # another transform: PyMC's own untransformed start point (a function to compile)
            return make_initial_point_fn(model=model, return_transformed=False)(0)
        point[rv.name] = backward(start[model.rvs_to_values[rv].name])
    return point


#: the inverse of PyMC's log and log-odds transforms (and of none) in NumPy: no function to compile
_NUMPY_BACKWARD = {type(None): np.asarray, LogTransform: np.exp, LogOddsTransform: special.expit}


def _searched(plan: _Plan) -> _Plan:
    """``plan`` with its window extended ``_SEARCH_WIDTHS`` widths on each side (inside x's support, at most
    ``_SEARCH_CELLS`` cells)."""
    extra = min(_SEARCH_WIDTHS * plan.width, _SEARCH_CELLS // (2 * plan.lo.size))
    lo = np.maximum(plan.lo - extra, plan.bottom)
    hi = np.minimum(plan.lo + plan.width - 1 + extra, plan.top)
    return plan._replace(lo=lo, width=int(np.max(hi - lo + 1)))


def _posterior_window(plan: _Plan, log_terms: list, tol: float) -> _Plan:
    """The window of ``plan`` (a searched one) cut down to the noise's window's values plus every value outside it
    that holds more than a hundredth of ``tol`` of x's posterior at one of the points (``log_terms``: one width x
    coordinates array per point)."""
    lo, hi = _noise_window(plan.y, plan.d, plan.top, plan.bottom)
    for terms in log_terms:
        mass = np.exp(terms - special.logsumexp(terms, axis=0, keepdims=True))
        below, above = np.cumsum(mass, axis=0), np.cumsum(mass[::-1], axis=0)[::-1]
        keep = (below > tol / 100) & (above > tol / 100)
        first = np.where(keep.any(axis=0), keep.argmax(axis=0), 0)
        last = np.where(keep.any(axis=0), plan.width - 1 - keep[::-1].argmax(axis=0), plan.width - 1)
        lo = np.minimum(lo, plan.lo + first.reshape(plan.lo.shape))
        hi = np.maximum(hi, plan.lo + last.reshape(plan.lo.shape))
    return plan._replace(lo=lo.astype(np.int64), width=int(np.max(hi - lo + 1)))


def _noise_window(y, d, top, bottom=0.0):
    """(lo, hi): the values within d of y, inside the support bottom, ..., top (at least one value of it)."""
    lo = np.minimum(np.maximum(np.ceil(y - d), bottom), top)
    return lo, np.maximum(np.minimum(np.floor(y + d), top), lo)


def _build(model, plans, tol, conjugate, recurrence) -> MarginalModel:
    initvals = dict(model.rvs_to_initial_values)
    kept_initvals = {rv.name: value for rv, value in initvals.items() if value is not None}
    model.rvs_to_initial_values.update(dict.fromkeys(initvals))  # fgraph_from_model refuses initial values
    try:
        fgraph, memo = fgraph_from_model(model)
    finally:
        model.rvs_to_initial_values.update(initvals)
    summed = []
    drop = []
    potentials = []
    for plan in plans:
        x_rv, release, found, loglik, y, lo, width, d, bound, top = plan[:10]
        grid = lo[None] + np.arange(width).reshape((width,) + (1,) * lo.ndim)
        noise_logp = loglik(grid)  # a constant: the noise's scale and y are fixed
        x_fg = memo[x_rv].owner.inputs[0]
        found_fg = found
        if found is not None:
            parameters = graph_replace(list(found.parameters), {rv: memo[rv] for rv in model.free_RVs}, strict=False)
            found_fg = type(found)(found.family, x_fg, memo[found.conjugate], tuple(parameters), found.constants)
        if plan.table is None:
            (cells, per_unit, constant), conjugate_draw, family, steps = _prior_logp(x_fg, found_fg, grid, conjugate)
        else:  # x's log density and the Potentials of its prior, on the window
            terms = [memo[potential].owner.inputs[0] for potential in plan.table.potentials]
            cells = plan.table.on_grid(grid, x=x_fg, potentials=terms, read=memo[x_rv])
            per_unit, constant, conjugate_draw, family, steps = 0.0, 0.0, None, "tabulated", None
            drop += [memo[potential] for potential in plan.table.potentials]
        weights = cells + pt.as_tensor_variable(noise_logp + constant)  # up to per_unit: enough for x's draws
        if plan.children:  # x's other children, per value of x in the window
            weights = weights + _children_logp(plan.children, pt.as_tensor_variable(grid), memo, model.free_RVs)
        window = None
        window_sum = "plain" if steps is None else "plain (recurrence=False)"
        if recurrence and steps is not None and plan.children:  # the children's terms, split for the recurrence
            split = [
                child_recurrence_terms(
                    model,
                    child,
                    x_rv.name,
                    grid,
                    graph_replace(list(child.rv_graphs), {rv: memo[rv] for rv in model.free_RVs}, strict=False),
                )
                for child in plan.children
            ]
            why = next((terms for terms in split if isinstance(terms, str)), None)
            if why is None:
                steps = (steps[0], steps[1] + sum(terms[1] for terms in split))
                per_unit = per_unit + sum(terms[0] for terms in split)
                constant = constant + sum(terms[2] for terms in split)
            else:
                window_sum = f"plain ({why})"
                steps = None
        if recurrence and steps is not None:
            window_sum = "recurrence"
            window_constant = np.asarray(noise_logp + constant, dtype=float).reshape(width, -1)
            summed_window = gamma_poisson_window_logp(*steps, window_constant, lo)
            _, step, peak, _ = window_constants(window_constant, lo)
            window = ([pt.broadcast_to(pt.cast(v, "float64"), lo.shape) for v in steps], (step, peak, window_constant))
        else:
            summed_window = pt.sum(pt.logsumexp(weights, axis=0))
        potential = summed_window + pt.sum(pt.broadcast_to(per_unit, lo.shape))
        potentials.append(model_potential(potential, f"{release.name}_summed"))
        drop += [memo[x_rv], memo[release]] + ([memo[found.conjugate]] if found is not None else [])
        drop += [memo[child.child] for child in plan.children]
        summed.append(
            (
                SummedOut(
                    name=x_rv.name,
                    release=release.name,
                    family=family,
                    conjugate=None if found is None else found.conjugate.name,
                    dims=tuple(model.named_vars_to_dims.get(x_rv.name, ()) or ()),
                    lo=lo,
                    width=width,
                    half_width=d,
                    bound=bound,
                    tol=tol,
                    children=tuple(child.name for child in plan.children),
                    window_sum=window_sum,
                    _children_observed={child.name: _observed_constant(model, child.child) for child in plan.children},
                    _top=top,
                    _bottom=np.broadcast_to(plan.bottom, lo.shape),
                ),
                weights,
                conjugate_draw,
                found,
                y,
                window,
            )
        )
    for var in drop:
        fgraph.remove_output(fgraph.outputs.index(var))
    for var in potentials:
        fgraph.add_output(var, import_missing=True)
    new = model_from_fgraph(fgraph, mutate_fgraph=True)
    for name, value in kept_initvals.items():
        if name in new.named_vars and new[name] in new.free_RVs:
            new.set_initval(new[name], value)
    # functions of the kept free variables (untransformed): the window's log weights and the conjugate's parameters
    inputs = {rv.name: rv.type() for rv in new.free_RVs}
    new_by_name = {rv.name: rv for rv in new.free_RVs}
    latents = []
    for record, weights, conjugate_draw, _found, _y, window in summed:
        first = [weights] if window is None else window[0]  # the window's log weights, or its shape and log q
        outputs = first + (list(conjugate_draw[1]) if conjugate_draw is not None else [])
        outputs = _in_new_model(outputs, fgraph, new)
        graphs = graph_replace(outputs, {new_by_name[n]: inputs[n] for n in inputs}, strict=False)
        used = [name for name in inputs if any(inputs[name] in ancestors([g]) for g in graphs)]
        function = pytensor.function([inputs[n] for n in used], graphs, on_unused_input="ignore", mode="FAST_RUN")
        latents.append(
            replace(
                record,
                _weights=(function, used),
                _conjugate_draw=None if conjugate_draw is None else conjugate_draw[0],
                _window=None if window is None else window[1],
            )
        )
    observed = {rec.name: y for rec, _, _, _, y, _ in summed}
    return MarginalModel(new, tuple(latents), model, observed, (tuple(plans), tol, conjugate, recurrence))


def _in_new_model(outputs, fgraph, new):
    """``outputs`` (graphs over the fgraph's model variables) as graphs over ``new``'s variables."""
    # after model_from_fgraph(mutate_fgraph=True) the fgraph's dummy model variables were replaced in place by
    # the new model's variables, so the graphs already read them; the dummy nodes left in ``outputs`` are
    # replaced by what they wrap
    from pymc.model.fgraph import ModelVar

    def unwrap(var):
        while var.owner is not None and isinstance(var.owner.op, ModelVar):
            var = var.owner.inputs[0]
        return var

    dummies = [v for v in ancestors(outputs) if v.owner is not None and isinstance(v.owner.op, ModelVar)]
    return graph_replace(outputs, {v: unwrap(v) for v in dummies}, strict=False) if dummies else outputs


@dataclass
class MarginalModel:
    """A model with integer latents summed out (:func:`marginalize`): the marginal ``model``, a
    :class:`SummedOut` record per latent, and ``draw_latents`` to put them back into a posterior.

    Examples
    --------
    >>> import pymc as pm
    >>> from ppdinfer.mechanisms import Laplace
    >>> from ppdinfer.pymc import Release
    >>> from ppdinfer.pymc.marginal import marginalize
    >>> with pm.Model() as model:
    ...     mu = pm.Gamma("mu", 2.0, 0.2)
    ...     x = pm.Poisson("x", mu, shape=2)
    ...     y = Release("y", Laplace(1.0), x, observed=[7.5, 12.0])
    >>> marginal = marginalize(model)
    >>> marginal.latents[0].width, marginal.bound < 1e-12, [rv.name for rv in marginal.model.potentials]
    (42, True, ['y_summed'])
    """

    model: pm.Model
    latents: tuple
    original: pm.Model
    observed: dict
    # what built it (the plans, tol, conjugate, recurrence): widened_for rebuilds from it
    _source: tuple = field(repr=False, default=())

    @property
    def bound(self) -> float:
        """The largest bound on one coordinate's omitted mass, over every latent."""
        return max(latent.bound for latent in self.latents)

    @property
    def cells(self) -> int:
        """Window values summed per log density evaluation, over every latent."""
        return sum(latent.cells for latent in self.latents)

    def seconds_per_draw(self) -> float:
        """The predicted seconds of one NUTS draw on the marginal model (``MARGINAL_SECONDS_PER_DRAW`` +
        ``MARGINAL_SECONDS_PER_CELL`` x cells)."""
        return MARGINAL_SECONDS_PER_DRAW + MARGINAL_SECONDS_PER_CELL * self.cells + self.child_seconds()

    def child_seconds(self) -> float:
        """The predicted extra seconds per draw of the latents' other children: ``MARGINAL_SECONDS_PER_CHILD_CELL``
        x cells x children, summed over the latents."""
        return MARGINAL_SECONDS_PER_CHILD_CELL * sum(latent.cells * len(latent.children) for latent in self.latents)

    def log_terms(self, latent: SummedOut, values: dict) -> np.ndarray:
        """log p(x = k | theta) + log pi(y | k) over ``latent``'s window (width x coordinates, up to a constant per
        coordinate) at the free variables' untransformed ``values`` (by name)."""
        function, used = latent._weights
        outputs = [np.asarray(out, dtype=float) for out in function(*(values[name] for name in used))]
        if latent._window is None:
            return outputs[0].reshape(latent.width, -1)
        shape, log_q = (np.broadcast_to(out, latent.lo.shape).reshape(-1) for out in outputs[:2])
        grid = latent.lo.reshape(-1) + np.arange(latent.width)[:, None]
        return special.gammaln(grid + shape) + grid * log_q + latent._window[2]

    def with_start_bounds(self, points: list) -> MarginalModel:
        """This model with each latent's ``start_bound``: the largest bound over its coordinates and ``points``
        (untransformed values by name) on the mass its window omits relative to the mass it keeps
        (``ppdinfer.kernels.windows.window_edge_mass``)."""
        latents = tuple(
            replace(latent, start_bound=max(self._omitted(latent, point) for point in points))
            for latent in self.latents
        )
        return replace(self, latents=latents)

    def widened_for(self, idata, most: int = 8) -> MarginalModel:
        """This model rebuilt with windows that hold the posterior mass at the ``most`` draws of ``idata`` (a fit of
        this model) whose windows omit the most; a ValueError where no window within reach does."""
        posterior = idata["posterior"]
        names = [rv.name for rv in self.model.free_RVs]
        flat = {name: posterior[name].values.reshape(-1, *posterior[name].shape[2:]) for name in names}
        draws = [
            {name: flat[name][i] for name in names} for i in range(posterior.sizes["chain"] * posterior.sizes["draw"])
        ]
        omitted = [max(self._omitted(latent, draw) for latent in self.latents) for draw in draws]
        worst = [draws[i] for i in np.argsort(omitted)[::-1][:most]]
        plans, tol, conjugate, recurrence = self._source
        return _checked_at(self.original, plans, tol, conjugate, recurrence, worst)

    def _omitted(self, latent: SummedOut, point: dict) -> float:
        """The largest bound over ``latent``'s coordinates on the relative omitted mass at ``point``."""
        return float(np.max(self._edge_mass(latent, self.log_terms(latent, point))))

    @staticmethod
    def _edge_mass(latent: SummedOut, log_terms: np.ndarray) -> np.ndarray:
        """Per coordinate, the bound on the omitted mass relative to the kept mass of ``log_terms``."""
        lo = latent.lo.reshape(-1)
        bottom = 0.0 if latent._bottom is None else np.asarray(latent._bottom, dtype=float).reshape(-1)
        bottom = np.where(np.isfinite(bottom), bottom, lo - 1.0)  # no lower bound: the low edge is open
        lo, top = lo - bottom, np.asarray(latent._top, dtype=float).reshape(-1) - bottom
        return window_edge_mass(log_terms, lo, top)

    def draw_latents(self, idata, random_seed=None):
        """``idata`` with each summed-out latent x (and its conjugate variable) drawn exactly per posterior draw.

        x_i | theta, y is the window's normalized weights p(k | theta) pi(y_i | k) (an inverse-CDF draw per
        coordinate); a collapsed Gamma rate or Beta probability is then drawn from its conditional given x.
        x goes into the posterior group under its name with its dims, and y into ``observed_data``. The same
        weights bound, per draw, the mass each window omits relative to the mass it keeps
        (``ppdinfer.kernels.windows.window_edge_mass``): the largest over the draws is the posterior's
        ``ppdinfer_omitted_mass_bound``, and ``ppdinfer_omitted_mass_start`` the same at the start point.
        """
        posterior = idata["posterior"].to_dataset()
        n_chain, n_draw = posterior.sizes["chain"], posterior.sizes["draw"]
        chain_seeds = root_seed(random_seed).spawn(n_chain)
        new_vars = {}
        edge = np.zeros((n_chain, n_draw))  # the largest relative omitted mass per draw, over every latent
        for latent in self.latents:
            x = np.empty((n_chain, n_draw, *latent.lo.shape), dtype=np.int64)
            conj = None if latent._conjugate_draw is None else np.empty((n_chain, n_draw, *latent.lo.shape))
            values = {name: posterior[name].values for name in latent._weights[1]}
            lock = threading.Lock()  # the compiled weights are one function with its own storage: one call at a time
            # chains in threads where a draw's inverse-CDF work (without the GIL) outweighs passing the GIL around
            workers = min(n_chain, os.cpu_count() or 1) if latent.cells >= _THREADED_CELLS else 1
            with ThreadPoolExecutor(max_workers=workers) as pool:
                draw_chain = self._draw_chain if latent._window is None else self._draw_chain_by_recurrence
                jobs = [
                    pool.submit(draw_chain, latent, values, c, np.random.default_rng(seed), x, conj, edge, lock)
                    for c, seed in enumerate(chain_seeds)
                ]
                for job in jobs:
                    job.result()
            dims = latent.dims or tuple(f"{latent.name}_dim_{i}" for i in range(latent.lo.ndim))
            coords = {dim: np.asarray(self.original.coords[dim]) for dim in dims if dim in (self.original.coords or {})}
            new_vars[latent.name] = xr.DataArray(x, dims=("chain", "draw", *dims), coords=coords)
            if conj is not None:
                conj_dims = tuple(self.original.named_vars_to_dims.get(latent.conjugate, ()) or ()) or tuple(
                    f"{latent.conjugate}_dim_{i}" for i in range(latent.lo.ndim)
                )
                conj_coords = {
                    dim: np.asarray(self.original.coords[dim]) for dim in conj_dims if dim in self.original.coords
                }
                new_vars[latent.conjugate] = xr.DataArray(conj, dims=("chain", "draw", *conj_dims), coords=conj_coords)
        posterior = posterior.assign(new_vars)
        posterior.attrs.update(
            {
                "ppdinfer_method": "marginalize",
                "ppdinfer_summed_out": ", ".join(latent.name for latent in self.latents),
                "ppdinfer_omitted_mass_bound": float(edge.max(initial=0.0)),
                "ppdinfer_omitted_mass_start": max(latent.start_bound for latent in self.latents),
                "ppdinfer_noise_tail_bound": self.bound,
                "ppdinfer_window_cells": self.cells,
                "ppdinfer_window_sum": "; ".join(f"{latent.name}: {latent.window_sum}" for latent in self.latents),
                "ppdinfer_window_widened": ", ".join(
                    f"{latent.name}: {latent.widened} -> {latent.width} values"
                    for latent in self.latents
                    if latent.widened is not None
                ),
            }
        )
        idata["posterior"] = xr.DataTree(posterior)
        observed = idata["observed_data"].to_dataset() if "observed_data" in idata.children else xr.Dataset()
        for latent in self.latents:
            dims = latent.dims or tuple(f"{latent.release}_dim_{i}" for i in range(latent.lo.ndim))
            coords = {dim: np.asarray(self.original.coords[dim]) for dim in dims if dim in (self.original.coords or {})}
            observed[latent.release] = xr.DataArray(self.observed[latent.name], dims=dims, coords=coords)
            for name, value in (latent._children_observed or {}).items():
                dims = tuple(self.original.named_vars_to_dims.get(name, ()) or ()) or tuple(
                    f"{name}_dim_{i}" for i in range(value.ndim)
                )
                coords = {d: np.asarray(self.original.coords[d]) for d in dims if d in (self.original.coords or {})}
                observed[name] = xr.DataArray(value, dims=dims, coords=coords)
        idata["observed_data"] = xr.DataTree(observed)
        return idata

    @staticmethod
    def _draw_chain_by_recurrence(latent, values, c, rng, x, conj, edge, lock):
        """As :meth:`_draw_chain` for a collapsed gamma-Poisson summed by recurrence: every draw's shape and log q
        (and the conjugate's parameters), then all the chain's counts in one compiled call and its rates in one."""
        function, used = latent._weights
        step, peak, constant = latent._window
        n_draw, shape = x.shape[1], latent.lo.shape
        with lock:
            outputs = [
                [
                    np.broadcast_to(np.asarray(out, dtype=float), shape)
                    for out in function(*(values[n][c, d] for n in used))
                ]
                for d in range(n_draw)
            ]
        stacked = [np.stack([row[k] for row in outputs]) for k in range(len(outputs[0]))]  # each (draws, *shape)
        flat = [a.reshape(n_draw, -1) for a in stacked[:2]]
        u = rng.random(flat[0].shape)
        counts, omitted = gamma_poisson_window_checked_draws(
            flat[0], flat[1], latent.lo.reshape(-1), step, peak, constant, u
        )
        x[c] = counts.reshape(n_draw, *shape)
        edge[c] = np.maximum(edge[c], omitted)
        if conj is not None:
            conj[c] = latent._conjugate_draw(rng, x[c].astype(float), *stacked[2:])

    @staticmethod
    def _draw_chain(latent, values, c, rng, x, conj, edge, lock):
        """Chain c's draws of ``latent`` (and its conjugate) into ``x[c]`` (and ``conj[c]``), and each draw's bound
        on the relative omitted mass into ``edge[c]``, given the parameters' draws ``values``: the window's weights
        computed under ``lock``, the inverse-CDF draws (compiled, without the GIL) in parallel with the other
        chains'."""
        function, used = latent._weights
        for d in range(x.shape[1]):
            with lock:
                outputs = [np.array(out, dtype=float) for out in function(*(values[name][c, d] for name in used))]
            log_weights = outputs[0].reshape(latent.width, -1)
            edge[c, d] = max(edge[c, d], float(np.max(MarginalModel._edge_mass(latent, log_weights))))
            x[c, d] = latent.lo + draw_columns(log_weights, rng.random(log_weights.shape[1])).reshape(latent.lo.shape)
            if conj is not None:
                params = [np.broadcast_to(p, latent.lo.shape) for p in outputs[1:]]
                conj[c, d] = latent._conjugate_draw(rng, x[c, d].astype(float), *params)


# -- the rule of method="auto" ------------------------------------------------------------------------------

#: Seconds per draw of NUTS on a marginal model: a fixed part (PyMC's Python work per NUTS step) and a part per window
#: cell (the log density and its gradient, about 4 evaluations a draw). Measured on the hospital model (Gaussian
#: sigma 4.22: width 62) at 50, 200 and 800 hospitals, PyMC's NUTS, one chain at a time, 2 cores under load ~7.
MARGINAL_SECONDS_PER_DRAW = 1.5e-3
MARGINAL_SECONDS_PER_CELL = 5e-8
#: The extra seconds per draw per window cell and per other child of the latent (a Poisson's log mean and its gradient
#: through the parameters it reads, per cell): benchmarks/epidemiologist_pymc.py, 30 counties (22,000 cells, one child),
#: 9 ms per NUTS draw against 2.6 ms predicted without it, 2 cores under load.
MARGINAL_SECONDS_PER_CHILD_CELL = 3e-7
#: The same for the independence sampler (1-2 transitions and the latents' exact draws per draw), hospital model at
#: 50, 200 and 800 hospitals, load ~1: 16-22 ns per cell with the gamma-Poisson recurrence; 25 ns allows for the
#: plain window sum (6.8 ns per cell and evaluation) of other families.
INDEPENDENCE_SECONDS_PER_DRAW = 2e-5
INDEPENDENCE_SECONDS_PER_CELL = 2.5e-8
#: Seconds per draw of the augmentation path: fixed per step (PyMC's compound step, the conjugate draw, NUTS on the
#: hyperparameters) and per coordinate per sweep (the compiled kernel); same models and machine: 3.5, 5.1 and 7.4 ms
#: per draw at 50, 200 and 800 hospitals.
AUGMENT_SECONDS_PER_STEP = 3e-3
AUGMENT_SECONDS_PER_SITE = 1e-6
#: Seconds to compile a model for nutpie (numba) and to start PyMC's worker processes, same machine: below these, the
#: marginal path runs PyMC's own NUTS (where no ``nuts_sampler`` is given) and its chains one after the other.
NUTPIE_COMPILE_SECONDS = 8.0
#: Below this many coordinates, a conjugate rate (probability) stays a variable of the marginal model rather than being
#: integrated out with x: NUTS on it has about twice the bulk ESS per draw of its exact conditional draws (hospital
#: model, 50 hospitals: min ESS 3,125 vs 1,555, 197 vs 154 ESS per second), which pays while the dimension is small;
#: at 200 the collapsed model's 2-dimensional NUTS is 3.3x the 202-dimensional one (benchmarks/expert_alternatives.py).
COLLAPSE_MIN_UNITS = 100
PROCESS_START_SECONDS = 4.0


def choose_method(
    model: pm.Model | None = None,
    *,
    tol: float = 1e-12,
    conjugate: bool = True,
    sweeps: int = 5,
    recurrence: bool = True,
    independence: bool = True,
):
    r"""(``"marginalize"`` or ``"augment"``, the reason, the :class:`MarginalModel` or None): the rule of
    ``ppdinfer.pymc.sample(method="auto")``.

    Summing out is possible where every privacy latent is a coordinatewise count observed through additive
    noise of a constant scale (:func:`marginalize`); where it is not, the data augmentation runs. Where it is,
    the predicted seconds per draw are compared:

    .. math::

        t_\mathrm{marginal} = c_\mathrm{draw} + c_\mathrm{cell} \sum_x W_x n_x, \qquad
        t_\mathrm{augment} = c_\mathrm{step} + c_\mathrm{site}\, \mathrm{sweeps} \sum_x n_x,

    with W_x the window width and n_x the coordinates of latent x, and the constants
    ``MARGINAL_SECONDS_PER_DRAW``, ``MARGINAL_SECONDS_PER_CELL`` (NUTS), ``AUGMENT_SECONDS_PER_STEP``,
    ``AUGMENT_SECONDS_PER_SITE`` measured on the hospital model (benchmarks/expert_alternatives.py); where
    ``independence`` and the marginal model leaves at most ``INDEPENDENCE_MAX_DIM`` unconstrained dimensions (the
    independence sampler then runs), ``INDEPENDENCE_SECONDS_PER_DRAW`` and ``INDEPENDENCE_SECONDS_PER_CELL``
    replace NUTS's. The cheaper one is chosen.

    Examples
    --------
    >>> import pymc as pm
    >>> from ppdinfer.mechanisms import Gaussian, Tulap
    >>> from ppdinfer.pymc import Release
    >>> from ppdinfer.pymc.marginal import choose_method
    >>> with pm.Model() as model:
    ...     x = pm.Poisson("x", 20.0, shape=2)
    ...     y = Release("y", Gaussian(2.0), x, observed=[18.3, 25.1])
    >>> choose_method(model)[0]
    'marginalize'
    >>> with pm.Model() as tulap:
    ...     x = pm.Poisson("x", 20.0, shape=2)
    ...     y = Release("y", Tulap(1.0), x, observed=[18.3, 25.1])
    >>> method, reason, _ = choose_method(tulap)
    >>> method, "declares no additive noise" in reason
    ('augment', True)
    """
    try:
        marginal = marginalize(model, tol=tol, conjugate=conjugate, recurrence=recurrence)
    except ValueError as err:
        return "augment", f"cannot be summed out: {err}", None
    cells = marginal.cells
    units = sum(latent.units for latent in marginal.latents)
    if independence and independence_eligible(marginal.model, {}) is None:
        t_marginal = INDEPENDENCE_SECONDS_PER_DRAW + INDEPENDENCE_SECONDS_PER_CELL * cells + marginal.child_seconds()
    else:
        t_marginal = marginal.seconds_per_draw()
    t_augment = AUGMENT_SECONDS_PER_STEP + AUGMENT_SECONDS_PER_SITE * sweeps * units
    reason = (
        f"predicted {1e3 * t_marginal:.2g} ms per draw summing out ({cells} window cells) against "
        f"{1e3 * t_augment:.2g} ms augmenting ({units} coordinates x {sweeps} sweeps)"
    )
    return ("marginalize" if t_marginal <= t_augment else "augment"), reason, marginal


def sample_marginal(marginal: MarginalModel, *, marginal_step: str = "auto", **kwargs):
    """The continuous model ``marginal.model`` sampled, then the summed-out latents drawn exactly.

    ``marginal_step`` picks the sampler of the continuous variables: ``"nuts"`` (``pm.sample``, any
    ``nuts_sampler``), ``"independence"`` (:func:`ppdinfer.pymc.independence.sample_independence`: an
    independence Metropolis sampler with a multivariate t fitted at the mode, for a few unconstrained dimensions;
    an error if it declines), or ``"auto"`` (the default: the independence sampler where the model has at most
    :data:`~ppdinfer.pymc.independence.INDEPENDENCE_MAX_DIM` unconstrained dimensions, no ``nuts_sampler`` or
    other NUTS setting is given and the sampler does not decline; NUTS otherwise). ``kwargs`` go to ``pm.sample``
    (the independence sampler reads ``draws``, ``tune``, ``chains``, ``random_seed``, ``progressbar`` and
    ``compute_convergence_checks``); the
    latents' draws are seeded from ``random_seed``. A short NUTS run (predicted from
    :meth:`MarginalModel.seconds_per_draw`) uses PyMC's own NUTS unless ``nuts_sampler`` is given, and runs its
    chains in one process (same draws). Where nothing is left to sample (every parameter integrated out), the
    draws of x are independent and exact. The posterior's attrs record the method, the sampler of the continuous
    variables and why (``ppdinfer_step``, ``ppdinfer_step_reason``), the latents summed out, the bounds on the
    omitted mass relative to the kept mass (``ppdinfer_omitted_mass_bound``, the largest over the draws;
    ``ppdinfer_omitted_mass_start``, at the start point), the noise's own tail bound
    (``ppdinfer_noise_tail_bound``), the windows widened (``ppdinfer_window_widened``), and
    ``sampling_time_latents`` the seconds the exact draws of x took.

    Examples
    --------
    >>> import pymc as pm
    >>> from ppdinfer.mechanisms import Gaussian
    >>> from ppdinfer.pymc import Release
    >>> from ppdinfer.pymc.marginal import marginalize, sample_marginal
    >>> with pm.Model() as model:
    ...     mu = pm.Gamma("mu", 2.0, 0.1)
    ...     x = pm.Poisson("x", mu, shape=2)
    ...     y = Release("y", Gaussian(2.0), x, observed=[18.3, 25.1])
    >>> idata = sample_marginal(marginalize(model), draws=50, tune=50, chains=1, random_seed=1,
    ...                         progressbar=False, compute_convergence_checks=False)
    >>> idata["posterior"]["x"].shape, idata["posterior"].attrs["ppdinfer_method"]
    ((1, 50, 2), 'marginalize')
    >>> idata["posterior"].attrs["ppdinfer_step"]
    'independence'
    """
    seed = kwargs.get("random_seed")
    if kwargs.get("return_inferencedata") is False:
        raise ValueError("return_inferencedata=False is not supported where latents are summed out")
    if not marginal.model.free_RVs:  # nothing left to sample: the posterior of x is its window weights, exactly
        chains, draws = int(kwargs.get("chains") or 2), int(kwargs.get("draws", 1000))
        empty = xr.Dataset(coords={"chain": np.arange(chains), "draw": np.arange(draws)})
        idata = xr.DataTree(children={"posterior": xr.DataTree(empty)})
        step, why = "none", "no continuous variable is left"
    else:
        idata, step, why = _sample_continuous(marginal, marginal_step, kwargs)
    if not isinstance(idata, xr.DataTree):
        raise ValueError("return_inferencedata=False is not supported where latents are summed out")
    start = time.perf_counter()
    latent_seed = np.random.SeedSequence([*_seed_entropy(seed), 34])
    idata = marginal.draw_latents(idata, latent_seed)
    idata["posterior"].attrs.update(
        {"sampling_time_latents": time.perf_counter() - start, "ppdinfer_step": step, "ppdinfer_step_reason": why}
    )
    return idata


#: Window cells of a latent from which its chains' exact draws run in threads (hospital model: 200 units, 12,400
#: cells, the same seconds either way; 800 units 0.43 s against 0.86 s; 50 units 0.25 s against 0.15 s)
_THREADED_CELLS = 20_000

#: pm.sample's keyword arguments the independence sampler honours (others configure NUTS: "auto" then runs NUTS)
_INDEPENDENCE_KWARGS = frozenset(
    {"draws", "tune", "chains", "cores", "random_seed", "progressbar", "compute_convergence_checks",
     "return_inferencedata", "discard_tuned_samples"}
)  # fmt: skip


def independence_eligible(model: pm.Model, kwargs: dict) -> str | None:
    """None where ``marginal_step="auto"`` tries the independence sampler on ``model``, else the reason it does not."""
    nuts_settings = sorted(
        key for key, value in kwargs.items() if key not in _INDEPENDENCE_KWARGS and value is not None
    )
    if nuts_settings:
        return f"NUTS settings given ({', '.join(nuts_settings)})"
    dim = sum(int(np.size(value)) for value in model.initial_point().values())
    if not 1 <= dim <= INDEPENDENCE_MAX_DIM:
        return f"{dim} unconstrained dimensions (the independence sampler takes 1 to {INDEPENDENCE_MAX_DIM})"
    if kwargs.get("discard_tuned_samples") is False:
        return "discard_tuned_samples=False (the independence sampler keeps no tuning draws)"
    return None


def _sample_continuous(marginal: MarginalModel, marginal_step: str, kwargs: dict):
    """(idata, the step's name, why): the continuous variables sampled by the step ``marginal_step`` picks."""
    if marginal_step not in ("auto", "nuts", "independence"):
        raise ValueError(f"marginal_step must be 'auto', 'nuts' or 'independence', got {marginal_step!r}")
    why = "marginal_step='nuts'"
    if marginal_step != "nuts":
        not_eligible = independence_eligible(marginal.model, kwargs)
        if not_eligible and marginal_step == "independence":
            raise ValueError(f"marginal_step='independence': {not_eligible}")
        why = not_eligible
        if not not_eligible:
            chains = int(kwargs.get("chains") or max(2, min(4, os.cpu_count() or 1)))
            try:
                idata = sample_independence(
                    marginal.model,
                    draws=int(kwargs.get("draws", 1000)),
                    tune=int(kwargs.get("tune", 1000)),
                    chains=chains,
                    random_seed=kwargs.get("random_seed"),
                    progressbar=bool(kwargs.get("progressbar", True)),
                    convergence_checks=bool(kwargs.get("compute_convergence_checks", True)),
                )
            except Declined as declined:
                if marginal_step == "independence":
                    raise ValueError(f"marginal_step='independence': the sampler declined: {declined}") from None
                why = f"the independence sampler declined: {declined}"
            else:
                attrs = idata["posterior"].attrs
                reason = f"{attrs['ppdinfer_step_description']}; acceptance rate {attrs['acceptance_rate']:.2f}"
                return idata, "independence", reason
    with marginal.model:
        idata = pm.sample(**_backend(marginal, kwargs))
    return idata, "nuts", why


def _backend(marginal: MarginalModel, kwargs: dict) -> dict:
    """``kwargs`` with the NUTS backend and the chains' processes chosen for a short run: where a chain is predicted
    to take less than ``PROCESS_START_SECONDS``, PyMC's own NUTS runs the chains one after the other (the same
    draws as in parallel: each chain has its own seed), and where no ``nuts_sampler`` is given and the whole run is
    predicted below ``NUTPIE_COMPILE_SECONDS``, PyMC's own NUTS is used rather than PyMC's default (nutpie,
    where installed, whose compilation would dominate)."""
    kwargs = dict(kwargs)
    chains = int(kwargs.get("chains") or 2)
    per_chain = (int(kwargs.get("tune", 1000)) + int(kwargs.get("draws", 1000))) * marginal.seconds_per_draw()
    if kwargs.get("nuts_sampler") is None and per_chain * chains < NUTPIE_COMPILE_SECONDS:
        kwargs["nuts_sampler"] = "pymc"
    if kwargs.get("nuts_sampler") == "pymc" and per_chain < PROCESS_START_SECONDS:
        kwargs["cores"] = 1
    return kwargs


def _seed_entropy(seed) -> list[int]:
    if seed is None:
        return [int(np.random.SeedSequence().entropy % 2**32)]
    if isinstance(seed, int | np.integer):
        return [int(seed)]
    if isinstance(seed, list | tuple):
        return [e for entry in seed for e in _seed_entropy(entry)]
    if isinstance(seed, np.random.SeedSequence):
        return [int(seed.entropy % 2**32)]
    return [int(np.random.default_rng(seed).integers(2**32))]


def sum_out_if_chosen(model, method, tol, conjugate, sweeps, kwargs, marginal_step="auto"):
    """(the marginal fit, its reason) where ``method`` (or, for ``"auto"``, :func:`choose_method`) sums the latents
    out, else (None, the reason to augment): what :func:`ppdinfer.pymc.sample` runs first.

    Examples
    --------
    >>> import pymc as pm
    >>> from ppdinfer.mechanisms import Gaussian
    >>> from ppdinfer.pymc import Release
    >>> from ppdinfer.pymc.marginal import sum_out_if_chosen
    >>> with pm.Model() as model:
    ...     x = pm.Poisson("x", 20.0, shape=2)
    ...     y = Release("y", Gaussian(2.0), x, observed=[18.3, 25.1])
    >>> sum_out_if_chosen(model, "augment", 1e-12, True, 5, {})
    (None, "method='augment'")
    """
    if method not in ("auto", "augment", "marginalize"):
        raise ValueError(f"method must be 'auto', 'augment' or 'marginalize', got {method!r}")
    if method == "augment":
        return None, "method='augment'"
    recurrence = kwargs.get("nuts_sampler") not in ("numpyro", "blackjax")  # JAX has no compiled window sum
    nuts_settings = any(key not in _INDEPENDENCE_KWARGS and value is not None for key, value in kwargs.items())
    if method == "marginalize":
        found, reason = marginalize(model, tol=tol, conjugate=conjugate, recurrence=recurrence), "method='marginalize'"
    else:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            chosen, reason, found = choose_method(
                model,
                tol=tol,
                conjugate=conjugate,
                sweeps=sweeps,
                recurrence=recurrence,
                independence=marginal_step != "nuts" and not nuts_settings,
            )
        for said in caught:  # the augmentation's steps say what they do not support themselves: once
            if not (chosen == "augment" and issubclass(said.category, AugmentationWarning)):
                warnings.warn_explicit(said.message, said.category, said.filename, said.lineno)
        if chosen == "augment":
            return None, reason
    collapsed = [latent for latent in found.latents if latent.conjugate is not None]
    independence = marginal_step != "nuts" and independence_eligible(found.model, kwargs) is None
    if collapsed and not independence and sum(latent.units for latent in collapsed) < COLLAPSE_MIN_UNITS:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", AugmentationWarning)  # said by the first summing out
            found = marginalize(model, tol=tol, conjugate=False, recurrence=recurrence)
        reason += (
            f"; the conjugate {', '.join(latent.conjugate for latent in collapsed)} kept for NUTS (fewer than "
            f"{COLLAPSE_MIN_UNITS} coordinates)"
        )
    if kwargs.get("step"):
        raise ValueError(
            "step: the model's integer latents are summed out (method), so its variables are all continuous and "
            "NUTS samples them; pass step only with method='augment'"
        )
    kwargs = {key: value for key, value in kwargs.items() if key != "step"}
    idata = sample_marginal(found, marginal_step=marginal_step, **kwargs)
    short = _short_windows(idata, tol)
    if short:  # the posterior lies where the windows hold little: once more, with windows widened at those draws
        try:
            found = found.widened_for(idata)
        except ValueError as err:
            short = f"{short}; {err}"
        else:
            idata = sample_marginal(found, marginal_step=marginal_step, **kwargs)
            widened = idata["posterior"].attrs["ppdinfer_window_widened"]
            reason += f"; rerun with windows widened at the draws where the first run's fell short ({widened})"
            short = _short_windows(idata, tol)
    if short and method == "auto":
        return None, f"{short}: augmented instead"
    if short:
        warnings.warn(f"method='marginalize': {short}; use method='augment'", OmittedMassWarning, stacklevel=3)
    return record_method(idata, "marginalize", reason), reason


def _short_windows(idata, tol: float) -> str | None:
    """Why the windows of a marginal fit fall short on its posterior draws (its ``ppdinfer_omitted_mass_bound``
    above ``tol``), or None."""
    omitted = idata["posterior"].attrs["ppdinfer_omitted_mass_bound"]
    if omitted <= tol:
        return None
    return (
        f"summing out: on the posterior draws the windows may omit {omitted:.2g} of the mass they keep, more than "
        f"tol = {tol:g} (the release does not pin x where the posterior lies)"
    )


class OmittedMassWarning(UserWarning):
    """``method="marginalize"`` summed x out over windows that, on the posterior draws, may omit more than ``tol``
    of the posterior mass they keep (the posterior's ``ppdinfer_omitted_mass_bound``); ``method="auto"`` augments
    instead.

    Examples
    --------
    >>> from ppdinfer.pymc.marginal import OmittedMassWarning
    >>> issubclass(OmittedMassWarning, UserWarning)
    True
    """


def record_method(idata, method: str, reason: str):
    """``idata`` with ``ppdinfer_method`` and ``ppdinfer_method_reason`` in its posterior's attrs.

    Examples
    --------
    >>> import xarray as xr
    >>> from ppdinfer.pymc.marginal import record_method
    >>> tree = record_method(xr.DataTree(children={"posterior": xr.DataTree()}), "augment", "method='augment'")
    >>> tree["posterior"].attrs["ppdinfer_method"]
    'augment'
    """
    if isinstance(idata, xr.DataTree) and "posterior" in idata.children:
        idata["posterior"].attrs.update({"ppdinfer_method": method, "ppdinfer_method_reason": reason})
    return idata
