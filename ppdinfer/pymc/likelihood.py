r"""A mechanism's log density as a PyTensor graph: ``(y, x) -> log pi(y | x, z)``.

Additive noise (Laplace, Gaussian and their discrete forms) is written symbolically, so NUTS
gets exact gradients where x is continuous; any other mechanism enters through
:class:`MechanismLogLikelihood`, an Op that calls ``mechanism.logpdf`` (gradient in x by
central differences when x is continuous; none is needed for an integer x).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytensor.tensor as pt
from pytensor.graph.basic import Apply
from pytensor.graph.op import Op
from pytensor.link.numba.dispatch.basic import generate_fallback_impl, numba_funcify


def release_log_density(mechanism, z, y, x):
    """The scalar graph log pi(y | x, z), summed over the release's coordinates.

    Examples
    --------
    >>> import numpy as np
    >>> import pytensor.tensor as pt
    >>> from ppdinfer.mechanisms import Laplace, Tulap
    >>> from ppdinfer.pymc.likelihood import release_log_density
    >>> x = pt.dvector("x")
    >>> y = np.array([1.5, 3.0])
    >>> round(float(release_log_density(Laplace(2.0), None, y, x).eval({x: [1.0, 3.0]})), 4)  # 2 log 1 - 2 (0.5 + 0)
    -1.0
    >>> value = release_log_density(Tulap(1.0), None, y, x).eval({x: [1.0, 3.0]})
    >>> bool(np.isclose(value, Tulap(1.0).logpdf(y, [[1.0, 3.0]])[0]))
    True
    """
    noise = mechanism.additive_noise
    if noise is not None:
        distance = pt.abs(pt.cast(y, "float64") - pt.cast(x, "float64"))
        terms = distance if noise.power == 1 else pt.sqr(distance)
        return pt.cast(pt.as_tensor_variable(y).size, "float64") * noise.log_norm - noise.rate * pt.sum(terms)
    return MechanismLogLikelihood(mechanism, z)(y, x)


class MechanismLogLikelihood(Op):
    r"""The PyTensor Op ``(y, x) -> log pi(y | x, z)``, from ``mechanism.logpdf``.

    .. math::

        \ell(y, x) = \texttt{mechanism.logpdf}(y, x, z).

    The gradient in a continuous x is the central difference of ``logpdf`` (step 1e-6 times
    max(1, |x_k|) per coordinate, all coordinates in one batched call); an integer x has none
    (NUTS never updates it), and y is data.

    Examples
    --------
    >>> import numpy as np
    >>> import pytensor.tensor as pt
    >>> from ppdinfer.mechanisms import Laplace
    >>> from ppdinfer.pymc import MechanismLogLikelihood
    >>> x = pt.lvector("x")
    >>> loglik = MechanismLogLikelihood(Laplace(2.0))(np.array([1.5, 3.0]), x)
    >>> round(float(loglik.eval({x: np.array([1, 3])})), 4)      # 2 log(1) - 2 (0.5 + 0)
    -1.0
    """

    def __init__(self, mechanism, z=None):
        self.mechanism = mechanism
        self.z = z

    def make_node(self, y, x):
        y, x = pt.as_tensor_variable(y), pt.as_tensor_variable(x)
        return Apply(self, [y, x], [pt.dscalar()])

    def perform(self, node, inputs, outputs):
        y, x = inputs
        outputs[0][0] = np.asarray(self.loglik(y, np.asarray(x)[None])[0], dtype=np.float64)

    def loglik(self, y, x_batch: np.ndarray) -> np.ndarray:
        """log pi(y | x, z) for a batch of x of shape ``(B, *y.shape)``."""
        return np.asarray(self.mechanism.logpdf(np.asarray(y), x_batch, self.z), dtype=float)

    def pullback(self, inputs, outputs, cotangents):
        """The vector-Jacobian product PyTensor's reverse mode asks for: zero for y (data), the cotangent times
        the central-difference gradient for a continuous x, zero for an integer x."""
        y, x = inputs
        if x.type.dtype.startswith("float"):
            return [y.zeros_like(dtype="float64"), cotangents[0] * _CentralDifference(self)(y, x)]
        return [y.zeros_like(dtype="float64"), x.zeros_like(dtype="float64")]


class _CentralDifference(Op):
    """d/dx log pi(y | x, z) by central differences of the mechanism's logpdf, one batched call."""

    def __init__(self, likelihood: MechanismLogLikelihood):
        self.likelihood = likelihood

    def make_node(self, y, x):
        return Apply(self, [y, x], [x.type()])

    def perform(self, node, inputs, outputs):
        y, x = inputs
        x = np.asarray(x, dtype=float)
        steps = 1e-6 * np.maximum(1.0, np.abs(x)).reshape(-1)
        shifts = np.diag(steps).reshape(x.size, *x.shape)
        values = self.likelihood.loglik(y, np.concatenate([x + shifts, x - shifts]))
        forward, backward = values[: x.size], values[x.size :]
        outputs[0][0] = ((forward - backward) / (2 * steps)).reshape(x.shape).astype(node.outputs[0].dtype)


@numba_funcify.register(MechanismLogLikelihood)
@numba_funcify.register(_CentralDifference)
def _python_perform(op, node=None, storage_map=None, **kwargs):
    """PyTensor's numba backend runs these Ops' ``perform`` (the mechanism's Python ``logpdf``) in object mode,
    by design: its warning that it does so says nothing the user can act on, so it is silenced here, where the
    fallback is built (``ppdinfer.pymc.sample``, plain ``pm.sample`` and ``pm.sample_posterior_predictive``
    alike). Not cached: the Op holds a Python mechanism."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Numba will use object mode", category=UserWarning)
        return generate_fallback_impl(op, node, storage_map, **kwargs)
