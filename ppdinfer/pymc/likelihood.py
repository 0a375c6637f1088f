"""The release's log density as a PyTensor Op: ``x -> log pi(y | x, z)`` from ``mechanism.logpdf``."""

from __future__ import annotations

import numpy as np
import pytensor
import pytensor.tensor as pt
from pytensor.graph.basic import Apply
from pytensor.graph.op import Op


class MechanismLogLikelihood(Op):
    r"""The PyTensor Op ``x -> log pi(y | x, z)`` of a fixed release y, from ``mechanism.logpdf``.

    .. math::

        \ell(x) = \texttt{mechanism.logpdf}(y, x, z).

    x is an integer variable, so the Op has no gradient with respect to it (NUTS never
    differentiates through it: it updates theta only).

    Examples
    --------
    >>> import numpy as np
    >>> import pytensor.tensor as pt
    >>> from ppdinfer.mechanisms import Laplace
    >>> from ppdinfer.pymc import MechanismLogLikelihood
    >>> x = pt.lvector("x")
    >>> loglik = MechanismLogLikelihood(Laplace(2.0), np.array([1.5, 3.0]))(x)
    >>> round(float(loglik.eval({x: np.array([1, 3])})), 4)      # 2 log(1) - 2 (0.5 + 0)
    -1.0
    """

    def __init__(self, mechanism, y, z=None):
        self.mechanism = mechanism
        self.y = np.asarray(y)
        self.z = z

    def make_node(self, x):
        x = pt.as_tensor_variable(x)
        return Apply(self, [x], [pt.dscalar()])

    def perform(self, node, inputs, outputs):
        (x,) = inputs
        outputs[0][0] = np.asarray(self.loglik(np.asarray(x)[None])[0], dtype=np.float64)

    def loglik(self, x_batch: np.ndarray) -> np.ndarray:
        """log pi(y | x, z) for a batch of x of shape ``(B, *y.shape)``."""
        return np.asarray(self.mechanism.logpdf(self.y, x_batch, self.z), dtype=float)

    def grad(self, inputs, output_grads):
        return [inputs[0].zeros_like(dtype=pytensor.config.floatX)]
