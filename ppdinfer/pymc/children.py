"""The other children of an integer latent x: likelihood terms, besides x's release, that read x.

An epidemiologist's model releases a county's population N with noise and observes its deaths exactly,
``d ~ Poisson(r N / 1e5)``: N has two children. :func:`affine_children` recognizes the children that the compiled
data-augmentation kernel and the summing out evaluate per coordinate: an observed Poisson whose mean is affine in x
(mean = a + b x, a and b elementwise, possibly functions of other parameters), a Binomial with n = x, and a Normal
whose mean is affine in x. Affinity is checked numerically, at the model's start point and at a point whose
continuous values are moved at random: the mean at x = 0 and x = 1 gives a and b, and the mean at x = 2 and at a
random x (a different value per coordinate, which catches a mean that mixes coordinates, such as one reading
``x.sum()``) must equal a + b x. Any other child declines (None and
why), and the caller falls back to the model's log density.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pymc as pm
import pytensor.tensor as pt
from pytensor.graph.replace import graph_replace
from pytensor.graph.traversal import ancestors
from pytensor.tensor.random.basic import BinomialRV, NormalRV, PoissonRV

from ..kernels.augmentation import CHILD_BINOMIAL, CHILD_NORMAL, CHILD_POISSON
from ._constants import NotConstantError, graph_constant
from .families import rv_shape


class AffineChild(NamedTuple):
    """One recognized child: its name, kernel code (``CHILD_POISSON``, ``CHILD_BINOMIAL``, ``CHILD_NORMAL``) and
    graphs of the model's value variables for its observation, a, b and c (x's shape each).

    For a Poisson, a + b x is the mean; for a binomial, a is the probability (n = x); for a normal, a + b x is
    the mean and c the standard deviation.

    Examples
    --------
    >>> import pymc as pm
    >>> from ppdinfer.mechanisms import Gaussian
    >>> from ppdinfer.pymc import Release
    >>> from ppdinfer.pymc.children import affine_children
    >>> with pm.Model() as model:
    ...     rate = pm.Gamma("rate", 2.0, 1.0)
    ...     n = pm.Poisson("n", 200.0, shape=2)
    ...     y = Release("y", Gaussian(5.0), n, observed=[190.0, 210.0])
    ...     d = pm.Poisson("d", rate * n / 100, observed=[3, 2])
    >>> found, why = affine_children(model, n, [d])
    >>> [(child.name, child.code) for child in found], why
    ([('d', 0)], None)
    """

    name: str
    code: int
    graphs: tuple  # (observed, a, b, c): graphs of the value variables
    rv_graphs: tuple = ()  # (a, b, c): graphs of the model's random variables (x not among them)
    child: object = None  # the child itself


def _replaced(model, graph, x_rv, by):
    """``graph`` with x replaced by ``by``: (as a graph of the model's random variables, of its value variables)."""
    graph = graph_replace(graph, {x_rv: by}, strict=False)
    (values,) = model.replace_rvs_by_values([graph])
    return graph, values


def _reads(graph, var) -> bool:
    return var in ancestors([graph])


def affine_children(model: pm.Model, x_rv, children: list):
    """(a list of :class:`AffineChild`, None) where every one of ``children`` is an observed Poisson with a mean
    affine in x, a Binomial with n = x, or a Normal with a mean affine in x (and a scale free of x), each of x's
    shape; else (None, why not).

    Examples
    --------
    >>> import pymc as pm
    >>> from ppdinfer.pymc.children import affine_children
    >>> with pm.Model() as model:
    ...     n = pm.Poisson("n", 200.0, shape=2)
    ...     d = pm.Poisson("d", n**2 / 100, observed=[3, 2])
    >>> affine_children(model, n, [d])[1]
    'the mean of d is not affine in n'
    """
    x_value = model.rvs_to_values[x_rv]
    shape = rv_shape(x_rv)
    found = []
    for child in children:
        op = getattr(child.owner, "op", None)
        if child not in model.observed_RVs:
            return None, f"{child.name} is not observed"
        if not isinstance(op, PoissonRV | BinomialRV | NormalRV):
            return None, f"{child.name} is a {type(op).__name__}, not a Poisson, Binomial or Normal"
        observed = model.rvs_to_values[child]
        try:  # a graph with a random variable among its ancestors would evaluate to one prior draw
            observed_value = graph_constant(observed, f"{child.name}'s observed value")
        except NotConstantError:
            return None, f"{child.name}'s observed value is not a constant"
        if observed_value.shape != tuple(shape):
            return None, f"{child.name} does not have {x_rv.name}'s shape {tuple(shape)}"
        params = child.owner.inputs[2:]
        zeros = pt.zeros(tuple(shape), dtype=x_rv.dtype)
        ones = pt.ones(tuple(shape), dtype=x_rv.dtype)
        if isinstance(op, BinomialRV):
            n, p = params
            if n is not x_rv:
                return None, f"{child.name}'s n is not {x_rv.name} itself"
            if _reads(p, x_rv):
                return None, f"{child.name}'s p reads {x_rv.name}"
            a, b, c = _replaced(model, p, x_rv, zeros), (zeros, zeros), (ones, ones)
            code, mean = CHILD_BINOMIAL, None
        else:
            mean = params[0]
            c = (ones, ones)
            if isinstance(op, NormalRV):
                if _reads(params[1], x_rv):
                    return None, f"{child.name}'s sigma reads {x_rv.name}"
                c = _replaced(model, params[1], x_rv, zeros)
            a = _replaced(model, mean, x_rv, zeros)
            one = _replaced(model, mean, x_rv, ones)
            b = (one[0] - a[0], one[1] - a[1])
            code = CHILD_NORMAL if isinstance(op, NormalRV) else CHILD_POISSON

        def full(g):
            return pt.cast(pt.broadcast_to(g, shape), "float64")

        graphs = tuple(full(g) for g in (observed, a[1], b[1], c[1]))
        if mean is not None and not _affine(model, mean, x_value, graphs[1], graphs[2], shape):
            return None, f"the mean of {child.name} is not affine in {x_rv.name}"
        found.append(AffineChild(child.name, code, graphs, tuple(full(g[0]) for g in (a, b, c)), child))
    return found, None


def _affine(model, mean, x_value, a, b, shape) -> bool:
    """Whether mean(x) = a + b x at the start point for x = 2 and for a random x (a different value per coordinate)."""
    trial = pt.tensor("trial", shape=tuple(shape), dtype="float64")
    (at,) = model.replace_rvs_by_values([mean])
    at = graph_replace(at, {x_value: pt.cast(trial, x_value.dtype)}, strict=False)
    function = model.compile_fn(
        [pt.broadcast_to(at, shape), a, b], inputs=[*model.value_vars, trial], on_unused_input="ignore"
    )
    rng = np.random.default_rng(0)
    for point in start_and_moved(model, rng):
        for values in (np.full(shape, 2.0), rng.integers(3, 1000, size=shape).astype(float)):
            got, a_value, b_value = function({**point, "trial": values})
            if not np.allclose(got, a_value + b_value * values, rtol=1e-9, atol=1e-12, equal_nan=True):
                return False
    return True


def start_and_moved(model, rng) -> tuple[dict, dict]:
    """The model's start point, and one whose continuous (transformed) values are moved at random: a numerical check
    of a graph's form (affine, elementwise) at both catches a term whose coefficient vanishes at the start point alone.

    Examples
    --------
    >>> import numpy as np
    >>> import pymc as pm
    >>> from ppdinfer.pymc.children import start_and_moved
    >>> with pm.Model() as model:
    ...     mu = pm.Normal("mu", 0.0, 1.0)
    ...     n = pm.Poisson("n", 5.0)
    >>> start, moved = start_and_moved(model, np.random.default_rng(0))
    >>> bool(start["mu"] != moved["mu"]), bool(start["n"] == moved["n"])
    (True, True)
    """
    start = model.initial_point()
    moved = {
        name: value + rng.normal(size=np.shape(value)) if np.issubdtype(np.asarray(value).dtype, np.floating) else value
        for name, value in start.items()
    }
    return start, moved


class ChildTerms:
    """The recognized children evaluated at a point: arrays (codes, observations, a, b, c) for
    ``ppdinfer.kernels.augmentation.child_sweeps``, each of shape (children, coordinates).

    Examples
    --------
    >>> import pymc as pm
    >>> from ppdinfer.pymc.children import ChildTerms, affine_children
    >>> with pm.Model() as model:
    ...     n = pm.Poisson("n", 200.0, shape=2)
    ...     d = pm.Binomial("d", n=n, p=0.1, observed=[20, 18])
    >>> terms = ChildTerms(model, affine_children(model, n, [d])[0])
    >>> codes, observed, a, b, c = terms(model.initial_point())
    >>> codes.tolist(), observed.tolist(), a.tolist()
    ([1], [[20.0, 18.0]], [[0.1, 0.1]])
    """

    def __init__(self, model, found, compile_kwargs=None):
        self.names = [child.name for child in found]
        self.codes = np.array([child.code for child in found], dtype=np.int64)
        graphs = [g for child in found for g in child.graphs]
        self._function = model.compile_fn(
            graphs, inputs=model.value_vars, on_unused_input="ignore", **(compile_kwargs or {})
        )

    def __call__(self, point):
        values = self._function(point)
        stacked = [
            np.stack([np.asarray(values[4 * c + i], dtype=float).reshape(-1) for c in range(len(self.codes))])
            for i in range(4)
        ]
        return (self.codes, *(np.ascontiguousarray(v) for v in stacked))
