"""The summed-out gamma-Poisson window as one PyTensor Op, computed by ``ppdinfer.kernels.windows``.

:func:`gamma_poisson_window_logp` is what :func:`ppdinfer.pymc.marginal.marginalize` puts in the potential of a
Poisson count whose Gamma rate is integrated out: the same value as the plain graph (a gathered log-gamma and a
logsumexp over every window cell) at a few multiplications per cell, with its gradient. PyTensor's C and numba
backends (hence PyMC's NUTS and nutpie) and the independence sampler run it compiled; JAX has no implementation
(``marginalize(recurrence=False)`` keeps the plain graph for NumPyro).

Where x has other children (``ppdinfer.pymc.children.AffineChild``), :func:`child_recurrence_terms` splits each
child's log density at x = k into a part per coordinate, a slope in k (added to log q) and a constant over the
window (added to the window's constant), so the recurrence still sums the window: an observed Poisson of mean b x
(b may read the parameters: log Poisson(d | b k) = d log b - b k + d log k - log d!), a Binomial of n = x (slope
log(1 - p)), a Normal of mean a + b x with b and sigma constants (slope (d - a) b / sigma^2). A Poisson of mean
a + b x with a != 0, or a Normal whose slope or sigma reads the model, is not linear in k after the log: the plain
window sum then runs, and the summed-out record says why.
"""

from __future__ import annotations

import numpy as np
import pytensor.tensor as pt
from numba import njit
from pytensor.gradient import disconnected_type
from pytensor.graph.basic import Apply
from pytensor.graph.op import Op
from pytensor.link.numba.dispatch.basic import register_funcify_default_op_cache_key
from scipy import special

from ..kernels.augmentation import CHILD_BINOMIAL, CHILD_POISSON
from ..kernels.windows import gamma_poisson_window, gamma_poisson_window_value
from ._constants import graph_constant

__all__ = ["child_recurrence_terms", "gamma_poisson_window_logp", "window_constants"]


class GammaPoissonWindow(Op):
    """The sum of the coordinates' windowed log likelihoods; inputs shape and log_q (one per coordinate) and the
    window's constants lo, step, peak, peak_log (``ppdinfer.kernels.windows``). Its gradient is
    :class:`GammaPoissonWindowGradient`'s, a separate Op, so a graph of the value alone never computes it."""

    __props__ = ()

    def make_node(self, shape, log_q, lo, step, peak, peak_log):
        inputs = [pt.as_tensor_variable(v) for v in (shape, log_q, lo, step, peak, peak_log)]
        return Apply(self, inputs, [pt.dscalar()])

    def perform(self, node, inputs, outputs):
        outputs[0][0] = np.asarray(gamma_poisson_window_value(*inputs))

    def connection_pattern(self, node):
        return [[True], [True]] + [[False]] * 4

    def pullback(self, inputs, outputs, cotangents):
        """The vector-Jacobian product: the cotangent times the gradient in shape and in log_q; the window's
        constants are disconnected."""
        d_shape, d_log_q = _GRADIENT(*inputs)
        return [cotangents[0] * d_shape, cotangents[0] * d_log_q] + [disconnected_type() for _ in range(4)]


class GammaPoissonWindowGradient(Op):
    """The gradient of :class:`GammaPoissonWindow` in shape and in log_q, one value per coordinate."""

    __props__ = ()

    def make_node(self, shape, log_q, lo, step, peak, peak_log):
        inputs = [pt.as_tensor_variable(v) for v in (shape, log_q, lo, step, peak, peak_log)]
        return Apply(self, inputs, [pt.dvector(), pt.dvector()])

    def perform(self, node, inputs, outputs):
        _, outputs[0][0], outputs[1][0] = gamma_poisson_window(*inputs)


@register_funcify_default_op_cache_key(GammaPoissonWindow)
def _numba_value(op, node=None, **kwargs):
    """The kernel for PyTensor's numba backend (nutpie's too), its scalar as the 0-d array it expects."""
    return _value_0d


@register_funcify_default_op_cache_key(GammaPoissonWindowGradient)
def _numba_gradient(op, node=None, **kwargs):
    return _gradient


@njit(cache=True, nogil=True)
def _value_0d(shape, log_q, lo, step, peak, peak_log):
    total = np.empty(())
    total[()] = gamma_poisson_window_value(shape, log_q, lo, step, peak, peak_log)
    return total


@njit(cache=True, nogil=True)
def _gradient(shape, log_q, lo, step, peak, peak_log):
    _, d_shape, d_log_q = gamma_poisson_window(shape, log_q, lo, step, peak, peak_log)
    return d_shape, d_log_q


_GRADIENT = GammaPoissonWindowGradient()
_GAMMA_POISSON_WINDOW = GammaPoissonWindow()


def window_constants(constant: np.ndarray, lo: np.ndarray):
    """(lo, step, peak, peak_log), flat over the coordinates: what ``ppdinfer.kernels.windows`` reads of the
    window's constant part ``constant`` (width x coordinates).

    Examples
    --------
    >>> import numpy as np
    >>> lo, step, peak, peak_log = window_constants(np.log([[0.2], [0.5], [0.3]]), np.array([4]))
    >>> step.ravel().round(2).tolist(), peak.tolist()
    ([2.5, 0.6], [1])
    """
    lo = np.asarray(lo, dtype=np.int64).reshape(-1)
    constant = np.asarray(constant, dtype=float).reshape(-1, lo.size)
    peak = np.argmax(constant, axis=0).astype(np.int64)
    peak_log = constant[peak, np.arange(lo.size)]
    with np.errstate(over="ignore"):
        step = np.exp(np.diff(constant, axis=0))  # an overflow below the peak gives a term of 0: negligible there
    return lo, step, peak, peak_log


def gamma_poisson_window_logp(shape, log_q, constant: np.ndarray, lo: np.ndarray):
    """sum_i log sum_k exp(gammaln(k + shape_i) + k log_q_i + constant[k - lo_i, i]) over each coordinate's window
    (``constant``: width x coordinates, finite and concave down each column, e.g. a Gaussian or Laplace noise's
    log density minus log k!), as a PyTensor graph; ``shape`` and ``log_q`` broadcast to the coordinates.

    Examples
    --------
    >>> import numpy as np
    >>> from scipy import special, stats
    >>> k = np.arange(3, 9)[:, None] + np.array([0, 10])          # two coordinates' windows
    >>> constant = stats.norm.logpdf(np.array([5.2, 14.1]), k, 1.5) - special.gammaln(k + 1)
    >>> graph = gamma_poisson_window_logp(2.5, np.log(0.7), constant, np.array([3, 13]))
    >>> plain = special.logsumexp(special.gammaln(k + 2.5) + k * np.log(0.7) + constant, axis=0).sum()
    >>> bool(abs(graph.eval() - plain) < 1e-11)
    True
    """
    lo_shape = np.shape(lo)
    lo, step, peak, peak_log = window_constants(constant, lo)
    shape, log_q = (pt.broadcast_to(pt.cast(v, "float64"), lo_shape).reshape((lo.size,)) for v in (shape, log_q))
    return _GAMMA_POISSON_WINDOW(shape, log_q, lo, step, peak, peak_log)


def child_recurrence_terms(model, child, x_name: str, grid: np.ndarray, graphs):
    """(per_unit, slope, constant) with the log density of x's other ``child`` (an
    :class:`~ppdinfer.pymc.children.AffineChild` of ``model``) at x = k equal to per_unit + slope k + constant[k]:
    ``per_unit`` and ``slope`` graphs of x's shape, ``constant`` an array over the window's ``grid`` (finite); or a
    str, why not. ``graphs`` are the child's (a, b, c) as graphs of the variables the window's sum reads. A Poisson's
    intercept must be 0 and a Normal's slope and sigma constants: checked numerically, as the affinity is, at the
    model's start point and a moved one (``ppdinfer.pymc.children.start_and_moved``).

    Examples
    --------
    >>> import numpy as np
    >>> import pymc as pm
    >>> from scipy import stats
    >>> from ppdinfer.pymc.children import affine_children
    >>> from ppdinfer.pymc._constants import graph_constant
    >>> from ppdinfer.pymc.window_ops import child_recurrence_terms
    >>> with pm.Model() as model:
    ...     n = pm.Poisson("n", 200.0, shape=2)
    ...     d = pm.Poisson("d", 0.03 * n, observed=[5, 8])
    >>> (found,), _ = affine_children(model, n, [d])
    >>> grid = np.arange(190, 195)[:, None] + np.array([0, 20])
    >>> per_unit, slope, constant = child_recurrence_terms(model, found, "n", grid, found.rv_graphs)
    >>> per_unit, slope = (graph_constant(g, "the child's term") for g in (per_unit, slope))  # refuses an RV input
    >>> total = per_unit + slope * grid + constant
    >>> bool(np.allclose(total, stats.poisson.logpmf([5, 8], 0.03 * grid)))
    True
    """
    observed = graph_constant(child.graphs[0], f"{child.name}'s observed value")
    k = np.asarray(grid, dtype=float)
    a, b, c = (pt.cast(g, "float64") for g in graphs)
    with np.errstate(divide="ignore", invalid="ignore"):
        if child.code == CHILD_POISSON:
            intercept = _fixed(model, child.graphs[1])
            if intercept is None or np.any(intercept != 0):
                return f"the mean of {child.name} is not proportional to {x_name} (a + b {x_name}, a != 0)"
            constant = special.xlogy(observed, k) - special.gammaln(observed + 1.0)
            per_unit, slope = pt.as_tensor_variable(observed) * pt.log(b), -b
        elif child.code == CHILD_BINOMIAL:
            constant = np.where(
                k >= observed,
                special.gammaln(k + 1.0) - special.gammaln(k - observed + 1.0) - special.gammaln(observed + 1.0),
                -np.inf,
            )
            per_unit, slope = pt.as_tensor_variable(observed) * (pt.log(a) - pt.log1p(-a)), pt.log1p(-a)
        else:  # a Normal: the k^2 term must be a constant
            b0, c0 = (_fixed(model, g) for g in child.graphs[2:])
            if b0 is None or c0 is None:
                return f"the slope or sigma of {child.name}'s mean reads the model's variables"
            constant = -((b0 * k) ** 2) / (2 * c0**2) - np.log(c0) - 0.5 * np.log(2 * np.pi)
            residual = pt.as_tensor_variable(observed) - a
            per_unit, slope = -(residual**2) / (2 * c0**2), residual * b0 / c0**2
    if not np.all(np.isfinite(constant)):
        return f"{child.name}'s log density is -inf at part of the window (the recurrence needs finite terms)"
    return per_unit, slope, np.broadcast_to(constant, k.shape)


def _fixed(model, graph):
    """The value of ``graph`` (of the model's value variables) where it is the same at the model's start point and at
    a moved one, else None."""
    from .children import start_and_moved  # the children module reads the kernels this one wraps

    function = model.compile_fn(graph, inputs=model.value_vars, on_unused_input="ignore")
    values = [np.asarray(function(point), dtype=float) for point in start_and_moved(model, np.random.default_rng(1))]
    return values[0] if np.allclose(values[0], values[1], rtol=1e-12, atol=0.0) else None
