r"""Integer priors of any elementwise log pmf, evaluated on a window of candidate values.

A latent x whose prior is ``pm.Truncated`` of a discrete distribution, a ``pm.CustomDist`` of integer dtype, or a
coordinatewise prior (Poisson, Binomial, DiscreteUniform) that a ``pm.Potential`` also reads has a log pmf the
kernels hold no formula for. :func:`tabulated_prior` takes it from the model: x's own log density plus the
Potentials that read x, one graph of a value v of x's shape (x's parents and the Potentials' other inputs held), and
checks that it is elementwise (its element i reads v_i alone; a Potential that couples x's elements, such as one of
``x.sum()``, is declined with the reason). Evaluated on a grid whose row j is lo + j, that graph gives every
coordinate's log prior at W candidates in one call, O(size of x x W):

- the data-augmentation step (:class:`WindowTable`) draws each coordinate's window lo_i, ..., lo_i + W - 1
  uniformly among the W windows that hold x_i's current value (an auxiliary variable drawn from its exact
  conditional), evaluates the table once per step, and its moves read the prior's ratios from it and reject a
  candidate outside the window: every move leaves p(x | window, rest) invariant, so the step leaves the posterior
  invariant; the prior move draws from the prior restricted to the window (O(W) a draw);
- summing out (:func:`ppdinfer.pymc.marginal.marginalize`) evaluates it on its own window around the release.

The bounds of a ``DiscreteUniform`` or ``Truncated`` prior are read from its graph where they are constants (they
close a summed-out window's edge); a candidate outside any support has log prior -inf and is never accepted.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass

import numpy as np
import pymc as pm
import pytensor.tensor as pt
from pymc.distributions.custom import CustomDistRV, CustomSymbolicDistRV
from pymc.distributions.discrete import DiscreteUniformRV
from pymc.distributions.truncated import TruncatedRV
from pytensor.graph.replace import graph_replace, vectorize_graph
from pytensor.tensor.random.basic import BinomialRV, PoissonRV

from ._constants import NotConstantError, graph_constant

__all__ = ["TABLE_MAX_WIDTH", "TABLE_WIDTH_SCALES", "TabulatedPrior", "WindowTable", "tabulated_prior"]

#: priors tabulated whatever reads them (PyMC gives their log pmf; the kernels have no formula for it)
TABULATED_OPS = (TruncatedRV, CustomDistRV, CustomSymbolicDistRV)
#: priors with a family of their own, tabulated where a Potential also reads x
POTENTIAL_OPS = (PoissonRV, BinomialRV, DiscreteUniformRV)
#: the augmentation's window: this many move scales wide (the local move's typical step), at most TABLE_MAX_WIDTH
TABLE_WIDTH_SCALES = 4.0
TABLE_MAX_WIDTH = 4097


@dataclass(frozen=True)
class TabulatedPrior:
    """x's prior as one elementwise graph: x's own log density and the ``potentials`` that read x; ``lower`` and
    ``upper`` the support's bounds per coordinate where the graph has them as constants (else -inf, inf).

    Examples
    --------
    >>> import pymc as pm
    >>> from ppdinfer.pymc.tabulated import tabulated_prior
    >>> with pm.Model() as model:
    ...     n = pm.DiscreteUniform("n", 10, 40, shape=2)
    ...     tilt = pm.Potential("tilt", -0.1 * n)
    >>> found = tabulated_prior(model, n)
    >>> [p.name for p in found.potentials], found.lower.tolist(), found.upper.tolist()
    (['tilt'], [10.0, 10.0], [40.0, 40.0])
    """

    x: object
    potentials: tuple
    lower: np.ndarray
    upper: np.ndarray

    @property
    def prior_sd(self) -> np.ndarray:
        """A flat prior's standard deviation over the bounds (inf where one is open): the moves' scale."""
        return (self.upper - self.lower + 1) / np.sqrt(12.0)

    def on_grid(self, grid, x=None, potentials=None, read=None):
        """log p(x_i = grid[j, i]) plus the Potentials' element i there, a graph of ``grid``'s shape (rows of x's
        shape). ``x`` (the random variable), ``potentials`` and ``read`` (the variable by which they read x) default
        to the model's own; pass the fgraph's where the model is rebuilt."""
        x = self.x if x is None else x
        potentials, read = (self.potentials, x) if potentials is None else (potentials, read)
        value = x.type()
        logp = pt.cast(pm.logp(x, value), "float64")
        for potential in potentials:
            logp = logp + pt.cast(graph_replace(potential, {read: value}, strict=False), "float64")
        grid = pt.cast(pt.as_tensor_variable(grid), x.dtype)
        return pt.broadcast_to(vectorize_graph(logp, {value: grid}), grid.shape)


#: tabulated_prior's answers per model, keyed by x and the Potentials that read it (the check compiles a function)
_FOUND: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def tabulated_prior(model: pm.Model, x_rv) -> TabulatedPrior | str:
    """x's prior as a :class:`TabulatedPrior`, or why not (a str): x must be a free integer variable with a
    ``pm.Truncated`` or integer ``pm.CustomDist`` prior, or a Poisson, Binomial or DiscreteUniform prior that a
    ``pm.Potential`` reads, and its log density and each Potential elementwise in x (checked numerically at the
    model's start point and at a moved one: element i of the log density at a grid of candidates must not change
    when the other elements' candidates are shuffled).

    Examples
    --------
    >>> import pymc as pm
    >>> from ppdinfer.pymc.tabulated import tabulated_prior
    >>> with pm.Model() as model:
    ...     n = pm.DiscreteUniform("n", 10, 40, shape=3)
    ...     total = pm.Potential("total", -((n.sum() - 75.0) ** 2) / 50.0)
    >>> tabulated_prior(model, n)
    'the Potential total is not elementwise in n (its value at one element reads the others)'
    """
    from .families import dependents  # the families module reads this one

    potentials = tuple(term for term in dependents(model, x_rv) if term in model.potentials)
    cache = _FOUND.setdefault(model, {})
    key = (x_rv, potentials)
    if key not in cache:
        cache[key] = _tabulated(model, x_rv, potentials)
    return cache[key]


def _tabulated(model, x_rv, potentials):
    op = getattr(x_rv.owner, "op", None)
    if x_rv not in model.free_RVs or not x_rv.dtype.startswith("int"):
        return f"{x_rv.name} is not a free integer variable"
    if not isinstance(op, TABULATED_OPS) and not (isinstance(op, POTENTIAL_OPS) and potentials):
        return (
            f"{x_rv.name}'s prior is a {type(op).__name__.removesuffix('RV')}, neither a Truncated nor a CustomDist, "
            "and no Potential reads it"
        )
    try:
        shape = tuple(int(s) for s in model.initial_point()[model.rvs_to_values[x_rv].name].shape)
    except (KeyError, TypeError) as err:
        return f"{x_rv.name}'s shape is not known ({err})"
    lower, upper = _bounds(x_rv, shape)
    for what, terms in ((f"{x_rv.name}'s log density", ()), *((f"the Potential {p.name}", (p,)) for p in potentials)):
        prior = TabulatedPrior(x_rv, terms, lower, upper)
        if not _elementwise(model, prior, shape):
            return f"{what} is not elementwise in {x_rv.name} (its value at one element reads the others)"
    return TabulatedPrior(x_rv, potentials, lower, upper)


def _bounds(x_rv, shape):
    """(lower, upper) of x's support per coordinate: a DiscreteUniform's or a Truncated's bounds, where constants;
    0 (and a Binomial's n) for counts; else -inf and inf."""
    op, inputs = x_rv.owner.op, x_rv.owner.inputs
    graphs = (None, None)
    if isinstance(op, DiscreteUniformRV):
        graphs = inputs[2:4]
    elif isinstance(op, TruncatedRV):
        graphs = inputs[-2:]
    elif isinstance(op, BinomialRV):
        graphs = (0, inputs[2])
    elif isinstance(op, PoissonRV):
        graphs = (0, None)
    bounds = [np.full(shape, -np.inf), np.full(shape, np.inf)]
    for i, graph in enumerate(graphs):
        try:
            if graph is not None:
                bounds[i] = np.broadcast_to(graph_constant(graph, f"the bounds of {x_rv.name}"), shape).copy()
        except NotConstantError:
            pass
    return bounds[0], bounds[1]


def _elementwise(model, prior: TabulatedPrior, shape, rows: int = 6) -> bool:
    """Whether element i of ``prior`` on a grid reads grid[:, i] alone: the table of a grid whose columns are shuffled
    independently must be the table's columns shuffled alike (start point and a moved one)."""
    from .children import start_and_moved

    size = int(np.prod(shape, dtype=int))
    if size <= 1:
        return True
    grid = pt.tensor("grid", dtype="int64", shape=(rows, *shape))
    (table,) = model.replace_rvs_by_values([prior.on_grid(grid)])
    function = model.compile_fn(table, inputs=[*model.value_vars, grid], on_unused_input="ignore")
    rng = np.random.default_rng(0)
    start = np.asarray(model.initial_point()[model.rvs_to_values[prior.x].name]).reshape(-1)
    base = start[None] - rows // 2 + np.arange(rows)[:, None]
    order = np.argsort(rng.random((rows, size)), axis=0)  # a permutation of the rows per column
    shuffled = np.take_along_axis(base, order, axis=0)
    for point in start_and_moved(model, rng):
        first = np.asarray(function({**point, "grid": base.reshape(rows, *shape)})).reshape(rows, size)
        second = np.asarray(function({**point, "grid": shuffled.reshape(rows, *shape)})).reshape(rows, size)
        if not np.allclose(second, np.take_along_axis(first, order, axis=0), rtol=1e-10, atol=1e-12, equal_nan=True):
            return False
    return True


class WindowTable:
    """The tabulated prior of the data-augmentation step: per step, each coordinate's window drawn uniformly among
    the ``width`` windows that hold its current value, and the log prior on it (one compiled call, O(size x width)),
    packed as the kernel's ``TABLE`` rows (lo, width, the log prior values, their normalized cumulative sums).

    Examples
    --------
    >>> import numpy as np
    >>> import pymc as pm
    >>> from ppdinfer.pymc.tabulated import WindowTable, tabulated_prior
    >>> with pm.Model() as model:
    ...     n = pm.Truncated("n", pm.Poisson.dist(20.0), lower=15, upper=30, shape=2)
    >>> table = WindowTable(model, tabulated_prior(model, n))
    >>> params = table.packed(model.initial_point(), np.array([16, 29]), 5, np.random.default_rng(1))
    >>> params.shape, bool(np.all(params[:, 0] <= [16, 29])), bool(np.all(params[:, 0] + 4 >= [16, 29]))
    ((2, 12), True, True)
    """

    def __init__(self, model, prior: TabulatedPrior, compile_kwargs=None):
        self.prior = prior
        shape = prior.lower.shape
        grid = pt.tensor("grid", dtype="int64", shape=(None, *shape))
        (table,) = model.replace_rvs_by_values([prior.on_grid(grid)])
        self._function = model.compile_fn(
            table, inputs=[*model.value_vars, grid], on_unused_input="ignore", **(compile_kwargs or {})
        )

    def width(self, scale) -> int:
        """The window's width for moves of typical size ``scale``: ``TABLE_WIDTH_SCALES`` scales, at most
        ``TABLE_MAX_WIDTH`` and the support's size."""
        support = np.max(self.prior.upper - self.prior.lower + 1)
        return int(min(np.ceil(TABLE_WIDTH_SCALES * np.max(scale)) + 1, TABLE_MAX_WIDTH, support))

    def packed(self, point, x: np.ndarray, width: int, rng) -> np.ndarray:
        """The kernel's rows (x's shape, then lo, width, the ``width`` log prior values and their normalized cumulative
        sums): windows holding x."""
        lo = x - rng.integers(width, size=x.shape)
        grid = lo[None] + np.arange(width).reshape((width,) + (1,) * x.ndim)
        table = np.moveaxis(np.asarray(self._function({**point, "grid": grid}), dtype=float), 0, -1)
        cumulative = np.cumsum(np.exp(table - table.max(axis=-1, keepdims=True)), axis=-1)
        cumulative /= cumulative[..., -1:]  # x's own value has positive weight: the last entry is positive
        return np.concatenate(
            [lo[..., None].astype(float), np.full((*x.shape, 1), float(width)), table, cumulative], axis=-1
        )
