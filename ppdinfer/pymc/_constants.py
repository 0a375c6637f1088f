"""The one rule for a value frozen into a shortcut: it must be a constant of the model's graph.

A compiled kernel's noise scale, a summed-out window's edge, a conjugate step's concentration are read once,
before sampling. Evaluating a graph that holds a random variable does not fail: it returns one random draw, which
the shortcut would then keep. :func:`graph_constant` evaluates a graph only where no random variable is among its
ancestors and every input is a constant or data (a shared variable such as ``pm.Data``, read when the shortcut is
built); otherwise it raises :class:`NotConstantError` naming the model variable, and the caller takes its general
path.
"""

from __future__ import annotations

import numpy as np
import pytensor.tensor as pt
from pymc.distributions.distribution import SymbolicRandomVariable
from pytensor.compile.sharedvalue import SharedVariable
from pytensor.graph.basic import Constant
from pytensor.graph.rewriting.utils import rewrite_graph
from pytensor.graph.traversal import ancestors
from pytensor.tensor.random.op import RandomVariable

__all__ = ["NotConstantError", "constant_shape", "graph_constant"]


class NotConstantError(ValueError):
    """A value a shortcut would freeze depends on a model variable (``variable``: its name).

    Examples
    --------
    >>> import pymc as pm
    >>> from ppdinfer.pymc._constants import NotConstantError, graph_constant
    >>> with pm.Model():
    ...     s = pm.HalfNormal("s", 1.0)
    >>> try:
    ...     graph_constant(2 * s, "the noise scale")
    ... except NotConstantError as err:
    ...     err.variable
    's'
    """

    def __init__(self, what: str, variable: str):
        self.what, self.variable = what, variable
        super().__init__(
            f"{what} depends on the model's variables ({variable}): a value frozen before sampling must be a constant "
            "of the graph (no random variable among its ancestors)"
        )


def _non_constant_input(graph) -> str | None:
    """The name of a random variable among ``graph``'s ancestors, or of an input that is neither a constant nor
    data; None where there is none."""
    for var in ancestors([graph]):
        node = var.owner
        if node is not None and isinstance(node.op, RandomVariable | SymbolicRandomVariable):
            return node.default_output().name or str(node.default_output())
        if node is None and not isinstance(var, Constant | SharedVariable):
            return var.name or str(var)
    return None


def graph_constant(graph, what: str) -> np.ndarray:
    """The value of ``graph`` (as floats) where it is a constant of the graph; else :class:`NotConstantError`.

    ``what`` names the value in the error ("y's noise scale").

    Examples
    --------
    >>> import numpy as np
    >>> import pymc as pm
    >>> from ppdinfer.pymc._constants import graph_constant
    >>> with pm.Model():
    ...     sigma = pm.Data("sigma", np.array([1.5, 2.0]))
    >>> graph_constant(2 * sigma, "the noise scale").tolist()
    [3.0, 4.0]
    """
    graph = pt.as_tensor_variable(graph)
    variable = _non_constant_input(graph)
    if variable is not None:
        raise NotConstantError(what, variable)
    return np.asarray(graph.eval(), dtype=float)


def constant_shape(graph, what: str) -> tuple[int, ...]:
    """The shape of ``graph`` where it is a constant once inferred from the graph's inputs (a random variable's
    shape follows from its parameters' shapes, not from a draw); else :class:`NotConstantError`.

    Examples
    --------
    >>> import pymc as pm
    >>> from ppdinfer.pymc._constants import constant_shape
    >>> with pm.Model():
    ...     rate = pm.Gamma("rate", 2.0, 1.0, shape=3)
    ...     x = pm.Poisson("x", rate[:, None] * [[1.0, 2.0]])
    >>> constant_shape(x, "x's shape")
    (3, 2)
    """
    graph = pt.as_tensor_variable(graph)
    if all(n is not None for n in graph.type.shape):
        return tuple(int(n) for n in graph.type.shape)
    shape = rewrite_graph(graph.shape, include=("canonicalize", "ShapeOpt"))
    return tuple(int(n) for n in graph_constant(shape, what))
