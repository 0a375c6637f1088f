r"""``Release``: any ppdinfer mechanism as the observed release of a hand-written PyMC model.

.. math::

    y \mid x \sim \pi(\cdot \mid x, z), \qquad \log p(y \mid x) = \texttt{mechanism.logpdf}(y, x, z),

the whole release being one event (a mechanism's log density is joint over its coordinates:
a congenial release, a Semi-DP table, a WEM release couple them). x may be any PyMC variable or
expression: integer latent counts, continuous values, a table. Draws (prior and posterior
predictive) come from ``mechanism.release`` itself. :func:`ppdinfer.pymc.sample` gives every
integer latent feeding a release the data-augmentation step.
"""

from __future__ import annotations

import numba
import numpy as np
import pytensor.tensor as pt
from pymc.distributions.distribution import Distribution, _call_rv_op
from pymc.logprob.abstract import _logprob
from pytensor.graph.traversal import ancestors
from pytensor.link.numba.dispatch.random import numba_core_rv_funcify
from pytensor.raise_op import Assert
from pytensor.scalar.basic import Cast
from pytensor.tensor.random.basic import BinomialRV
from pytensor.tensor.random.op import RandomVariable

from ..mechanisms.base import Mechanism
from ..validation import resolvable_release
from ._constants import NotConstantError, constant_shape
from .distributions import integer_centre, known_value
from .likelihood import release_log_density


class _Source:
    """The mechanism and public information of one release; compared by identity, so two releases
    never merge in a graph unless they are the same object."""

    def __init__(self, mechanism: Mechanism, z):
        self.mechanism, self.z = mechanism, z

    def __repr__(self) -> str:
        return repr(self.mechanism)


class ReleaseRV(RandomVariable):
    """The random variable y ~ mechanism(x, z) of one release; y is one event of shape
    ``mechanism.release_shape(x's shape)`` (x's own for most mechanisms)."""

    name = "release"
    _print_name = ("Release", "\\operatorname{Release}")
    __props__ = ("name", "signature", "dtype", "inplace", "source")

    def __init__(self, source: _Source, signature: str, dtype: str, name=None, inplace=False):
        self.source = source
        super().__init__(name=name, signature=signature, dtype=dtype, inplace=inplace)

    @property
    def mechanism(self) -> Mechanism:
        return self.source.mechanism

    @property
    def z(self):
        return self.source.z

    def rng_fn(self, rng, x, size):
        x = np.asarray(x)
        core = self.ndims_params[0]  # x's event dimensions (y's may differ: release_shape)
        event = x.shape[x.ndim - core :]
        batch = x.shape[: x.ndim - core] if size is None else tuple(size)
        rows = np.broadcast_to(x, (*batch, *event)).reshape(-1, *event)
        draws = [self.mechanism.release(row, self.z, random_seed=rng) for row in rows]
        return np.asarray(draws, dtype=self.dtype).reshape((*batch, *self.mechanism.release_shape(event)))


@_logprob.register(ReleaseRV)
def _release_logprob(op, values, rng, size, x, **kwargs):
    return release_log_density(op.mechanism, op.z, _checked_observed(op.mechanism, values[0]), x)


def _checked_observed(mechanism, y):
    """y, checked where the model reads it when it is data (pm.set_data bypasses the checks of
    ``Release``): finite values, and integers for a discrete mechanism."""
    data = y
    while data.owner is not None and isinstance(getattr(data.owner.op, "scalar_op", None), Cast):
        data = data.owner.inputs[0]  # PyMC casts data to the release's dtype: 4.5 would read as 4
    if known_value(data) is None or isinstance(data, pt.TensorConstant):
        return y  # a constant was checked when the Release was made
    fine = pt.all(pt.isfinite(data))
    message = "Release: observed y (set with pm.set_data?) must hold finite numbers"
    if getattr(mechanism, "discrete", False):
        fine = fine & pt.all(pt.eq(data, pt.round(data)))
        message += f", and integers for the discrete mechanism {mechanism!r}"
    return Assert(message)(y, fine)


def _signature(ndim: int, release_shape: tuple | None = None) -> str:
    """x's core dimensions -> y's: the same (x's shape) or, for a release of another shape, its fixed sizes."""
    core = ",".join(f"d{axis}" for axis in range(ndim))
    if release_shape is None:
        return f"({core})->({core})"
    return f"({core})->({','.join(str(int(n)) for n in release_shape)})"


def _release_shape(mechanism, x_shape) -> tuple | None:
    """y's shape when it is not x's (x's static shape known), else None."""
    if any(n is None for n in x_shape):
        return None
    shape = tuple(mechanism.release_shape(tuple(x_shape)))
    return None if shape == tuple(x_shape) else shape


class Release(Distribution):
    r"""The observed release y of x through a ppdinfer mechanism, inside any PyMC model.

    .. math::

        \log p(y \mid x) = \log \pi(y \mid x, z) = \texttt{mechanism.logpdf}(y, x, z).

    Parameters
    ----------
    name : str
        The observed variable's name.
    mechanism : ppdinfer.mechanisms.Mechanism
        Any mechanism: Laplace / Gaussian and their discrete forms (written symbolically: exact
        gradients for a continuous x), Tulap, CanonicalNoise, Congenial, SemiDPGaussian,
        KNormMechanism, WassersteinExponential, PostProcessedRelease, and whatever
        :mod:`ppdinfer.interop` returns (through ``mechanism.logpdf``).
    x : tensor_like
        The confidential value: a PyMC variable or expression (integer counts, continuous
        values, a table), of y's shape, or of any shape whose release has y's shape
        (``mechanism.release_shape``: e.g. the cells of a NoisyMeasurements file, y its queries).
    z : dict, optional
        Public information the mechanism reads.
    observed : array_like
        The published release y. A discrete mechanism's y must hold integers.
    dims : str or tuple, optional
        Dimension names of y (x's).

    Examples
    --------
    >>> import numpy as np
    >>> import pymc as pm
    >>> from ppdinfer.mechanisms import Tulap
    >>> from ppdinfer.pymc import Release
    >>> with pm.Model() as model:
    ...     p = pm.Beta("p", 2, 3)
    ...     x = pm.Binomial("x", n=30, p=p)
    ...     y = Release("y", Tulap(1.0), x, observed=13.3)
    >>> logp = model.compile_logp(vars=[y])
    >>> point = {"p_logodds__": 0.0, "x": 13}
    >>> bool(np.isclose(logp(point), Tulap(1.0).logpdf(13.3, [13])[0]))
    True
    """

    rv_type = ReleaseRV

    def __new__(cls, name, mechanism, x, z=None, *, observed=None, **kwargs):
        if observed is None:
            raise ValueError(f"Release {name!r} needs observed=y, the published release")
        _check_release(name, mechanism, x, observed, z)
        return super().__new__(cls, name, mechanism, x, z, observed=observed, **kwargs)

    @classmethod
    def dist(cls, mechanism, x, z=None, **kwargs):
        if not isinstance(mechanism, Mechanism):
            raise ValueError(f"mechanism must be a ppdinfer.mechanisms.Mechanism, got {mechanism!r}")
        return super().dist([pt.as_tensor_variable(x)], source=_Source(mechanism, z), **kwargs)

    @classmethod
    def rv_op(cls, x, *, source, size=None, rng=None):
        dtype = "int64" if source.mechanism.discrete else "float64"
        shape = _release_shape(source.mechanism, x.type.shape)
        op = ReleaseRV(source, _signature(x.type.ndim, shape), dtype)
        return _call_rv_op(op, x, size=size, rng=rng)[1]

    def support_point(rv, size, x):
        shape = _release_shape(rv.owner.op.mechanism, x.type.shape)
        if shape is not None:  # y is not of x's shape: zeros of y's
            return pt.zeros((*(() if size is None else tuple(size)), *shape), dtype=rv.dtype)
        return pt.cast(x, rv.dtype) if size is None else pt.full(size, x, dtype=rv.dtype)


def _check_release(name: str, mechanism, x, observed, z=None) -> None:
    """Refuse a y that cannot be a release of x: a non-integer y of a discrete mechanism, a y no x
    allows (``mechanism.impossible_release``), a y too large for float64 to resolve against the noise,
    a y whose shape is not ``mechanism.release_shape`` of x's (when x's shape is known without running
    the model); and an x that
    does not fit: a real-valued x of a discrete mechanism, a binomial latent with a non-integer n."""
    if not isinstance(mechanism, Mechanism):
        raise ValueError(f"mechanism must be a ppdinfer.mechanisms.Mechanism, got {mechanism!r}")
    y = np.asarray(observed.get_value() if hasattr(observed, "get_value") else observed)
    if not np.issubdtype(y.dtype, np.number) or not np.all(np.isfinite(y)):
        raise ValueError(f"Release {name!r}: observed must be finite numbers, got {y!r}")
    if mechanism.discrete and np.any(y != np.round(y)):
        raise ValueError(
            f"Release {name!r}: the discrete mechanism {mechanism!r} releases integers, "
            f"but observed holds non-integer values (e.g. {y[y != np.round(y)].flat[0]!r})"
        )
    reason = mechanism.impossible_release(y, z)
    if reason is not None:
        raise ValueError(f"Release {name!r}: y cannot be released whatever x is: {reason}")
    try:
        resolvable_release(y, mechanism.additive_noise)
    except ValueError as err:
        raise ValueError(f"Release {name!r}: {err}") from None
    if mechanism.discrete:
        integer_centre(x, f"Release {name!r} through the discrete mechanism {mechanism!r}")
    check_binomial_counts(x, f"Release {name!r}")
    x = pt.as_tensor_variable(x)
    try:
        x_shape = constant_shape(x, f"Release {name!r}: the shape of x")
    except NotConstantError:  # a shape that depends on model variables: PyMC checks it when sampling
        return
    try:
        expected = tuple(mechanism.release_shape(x_shape))
    except ValueError as err:
        raise ValueError(
            f"Release {name!r}: x has shape {x_shape}, which {mechanism!r} cannot release: {err}"
        ) from None
    if expected != y.shape:
        if expected == x_shape:
            raise ValueError(f"Release {name!r}: observed y has shape {y.shape} but x has shape {x_shape}")
        raise ValueError(
            f"Release {name!r}: observed y has shape {y.shape} but {mechanism!r} releases shape {expected} "
            f"for an x of shape {x_shape}"
        )


def check_binomial_counts(x, who: str) -> None:
    """Refuse a binomial latent feeding ``x`` whose number of trials n is known and not a whole number.

    PyMC evaluates Binomial(n=2.5) with n truncated in places and as 2.5 in others, and the data
    augmentation would move x over a support that is not the prior's; a validation the PyMC layer
    (``PrivacyAugmentation``) can call on any latent. (A Python float n, such as ``n=2.5``, PyMC
    truncates to 2 before any graph exists: it cannot be seen here.)
    """
    for variable in ancestors([pt.as_tensor_variable(x)]):
        if variable.owner is None or not isinstance(variable.owner.op, BinomialRV):
            continue
        n = variable.owner.inputs[2]
        known = known_value(n)
        if known is not None and (not np.all(np.isfinite(known)) or np.any(known != np.round(known))):
            raise ValueError(
                f"{who}: the latent binomial {variable.name or variable} has a non-integer number of trials "
                f"n = {known.tolist()!r}; give n as whole numbers (a binomial count has an integer n)"
            )


@numba_core_rv_funcify.register(ReleaseRV)
def _numba_release(op: ReleaseRV, node):
    """The release draw under PyTensor's numba backend (prior and posterior predictive): a seed from the graph's
    numba generator, then ``mechanism.release`` in object mode, declared here so that PyTensor's generic
    fallback (and its warning that it uses object mode, which nothing can change) is never reached. Not cached:
    the mechanism is a Python object."""
    dtype = np.dtype(op.dtype)
    scalar = op.ndim_supp == 0
    out_type = numba.from_dtype(dtype) if scalar else numba.types.Array(numba.from_dtype(dtype), op.ndim_supp, "C")
    mechanism, z = op.mechanism, op.z

    def release(x, seed):
        draw = np.asarray(mechanism.release(np.asarray(x), z, random_seed=int(seed)), dtype=dtype)
        if scalar:
            return draw.item()
        return np.ascontiguousarray(draw if draw.ndim == op.ndim_supp else draw.reshape(np.shape(x)))

    @numba.njit
    def random_fn(rng, x):
        seed = rng.integers(0, 2**62)
        with numba.objmode(out=out_type):
            out = release(x, seed)
        return out

    return random_fn, None
