"""PyMC distributions for privacy noise: ``DiscreteLaplace`` and ``DiscreteGaussian``.

Both are distributions of an integer y centred on an integer ``mu`` (the confidential value
a mechanism releases). Log densities are normalized and agree with
:mod:`ppdinfer.mechanisms`; random draws come from the exact integer samplers.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytensor.tensor as pt
from pymc.distributions.dist_math import check_parameters
from pymc.distributions.distribution import Discrete
from pymc.distributions.shape_utils import rv_size_is_none
from pytensor.graph.basic import Constant
from pytensor.tensor.random.op import RandomVariable
from pytensor.tensor.sharedvar import TensorSharedVariable

from ..mechanisms import exact_integer
from ..validation import positive_finite

_DIRECT_TERMS = np.arange(1, 41, dtype="float64")  # enough for sigma < 1: exp(-40^2 / 2) underflows
_DUAL_TERMS = np.arange(1, 4, dtype="float64")


def _broadcast_draws(draw, noise_parameter, mu, parameters, size, rng):
    """Exact integer draws round(mu) + noise, one per element of the broadcast arguments (and ``size``).

    Elements that share parameters are drawn together, with noise parameter ``noise_parameter(*values)``.
    """
    arrays = np.broadcast_arrays(mu, *parameters)
    shape = arrays[0].shape if size is None else tuple(np.atleast_1d(size))
    mu, *parameters = (np.broadcast_to(a, shape).reshape(-1) for a in arrays)
    groups, inverse = np.unique(np.stack(parameters, axis=1), axis=0, return_inverse=True)
    noise = np.empty(mu.size, dtype=np.int64)
    for group, values in enumerate(groups):
        members = inverse.reshape(-1) == group
        noise[members] = exact_integer.sample_array(draw, noise_parameter(*values), (int(members.sum()),), rng)
    return (np.round(mu).astype(np.int64) + noise).reshape(shape)


def _laplace_scale(epsilon, sensitivity):
    if not (epsilon > 0 and sensitivity > 0):
        raise ValueError("DiscreteLaplace needs epsilon > 0 and sensitivity > 0")
    return Fraction(float(sensitivity)) / Fraction(float(epsilon))


def _gaussian_variance(sigma):
    if not sigma > 0:
        raise ValueError("DiscreteGaussian needs sigma > 0")
    return Fraction(float(sigma)) ** 2


def _rounded_centre(size, mu):
    """The support point of a noise distribution centred on mu: mu rounded, broadcast to ``size``."""
    point = pt.round(mu)
    return point if rv_size_is_none(size) else pt.full(size, point)


def _float64(value):
    """A float64 tensor: pytensor would store an exactly representable Python float as float32."""
    return pt.cast(pt.as_tensor_variable(value), "float64")


def known_value(value) -> np.ndarray | None:
    """``value`` as an array when it is known without running the model (a number, an array, a
    constant, data), else None (a model variable or an expression of one)."""
    if isinstance(value, Constant):
        return np.asarray(value.data)
    if isinstance(value, TensorSharedVariable):
        return np.asarray(value.get_value())
    if hasattr(value, "owner"):  # any other graph variable
        return None
    return np.asarray(value)


def _positive_parameters(cls, **parameters) -> None:
    """Refuse a known noise parameter that is not a positive finite number (where PyMC would fail
    later as 'Bad initial energy' or divide by zero), naming it."""
    for name, value in parameters.items():
        known = known_value(value)
        if known is None:
            continue
        try:
            for entry in known.reshape(-1).tolist() if known.dtype != object else [value]:
                positive_finite(entry, name)
        except ValueError as err:
            raise ValueError(f"{cls.__name__}: {err} ({name} > 0 is required)") from None


def integer_centre(mu, who: str):
    """``mu`` as a tensor after checking it holds integers: an integer dtype, or known integer values.

    An integer-valued release's pmf is normalized over y in Z for an integer centre only; at a
    real-valued mu it would be evaluated at non-integers and give a silently wrong posterior.
    """
    tensor = pt.as_tensor_variable(mu)
    if tensor.dtype.startswith(("int", "uint")) or tensor.dtype == "bool":
        return tensor
    known = known_value(mu)
    if known is None:
        raise ValueError(
            f"{who} releases integers and needs an integer-valued x (mu), but got a {tensor.dtype} expression "
            f"{mu}: use an integer latent (pm.Binomial, pm.Poisson, pm.Multinomial, ...), or round a "
            "real one explicitly (pt.round(x).astype('int64')), or use a continuous mechanism"
        )
    if not np.all(np.isfinite(known)) or np.any(known != np.round(known)):
        raise ValueError(
            f"{who} releases integers and needs an integer-valued x (mu), but got {known.tolist()!r}: give "
            "whole numbers, or use a continuous mechanism"
        )
    return tensor


class DiscreteLaplaceRV(RandomVariable):
    name = "discrete_laplace"
    signature = "(),(),()->()"
    dtype = "int64"
    _print_name = ("DiscreteLaplace", "\\operatorname{DiscreteLaplace}")

    @classmethod
    def rng_fn(cls, rng, mu, epsilon, sensitivity, size):
        return _broadcast_draws(exact_integer.discrete_laplace, _laplace_scale, mu, (epsilon, sensitivity), size, rng)


class DiscreteGaussianRV(RandomVariable):
    name = "discrete_gaussian"
    signature = "(),()->()"
    dtype = "int64"
    _print_name = ("DiscreteGaussian", "\\operatorname{DiscreteGaussian}")

    @classmethod
    def rng_fn(cls, rng, mu, sigma, size):
        return _broadcast_draws(exact_integer.discrete_gaussian, _gaussian_variance, mu, (sigma,), size, rng)


class LatticeL2RV(RandomVariable):
    name = "lattice_l2"
    signature = "(n),(),()->(n)"
    dtype = "int64"
    _print_name = ("WassersteinNaive", "\\operatorname{WassersteinNaive}")

    @classmethod
    def rng_fn(cls, rng, mu, epsilon, sigma, size):
        return lattice_l2_draws(mu, epsilon, sigma, size, rng)


def lattice_l2_draws(mu, epsilon, sigma, size, rng) -> np.ndarray:
    """Releases y ~ exp(-epsilon ||y - mu||_2 / (2 sigma)) on the integer lattice, as the naive-base
    :class:`ppdinfer.mechanisms.wem.WassersteinExponential` releases them: exactly (rejection from
    a discrete Laplace envelope) where that costs at most ``EXACT_PROPOSAL_LIMIT`` expected
    proposals (up to about 36 coordinates), else by its MCMC chain of WEM_SWEEPS sweeps."""
    from ..kernels.wem import NAIVE, wem_chains
    from ..mechanisms.wem import EXACT_PROPOSAL_LIMIT, lattice_l2_plan

    mu = np.asarray(mu)
    shape = mu.shape if size is None else (*tuple(np.atleast_1d(size)), mu.shape[-1])
    centres = np.broadcast_to(np.round(mu), shape).reshape(-1, shape[-1]).astype(np.int64)
    rate = float(epsilon) / (2 * float(sigma))
    proposals, exact = lattice_l2_plan(rate, shape[-1])
    if proposals <= EXACT_PROPOSAL_LIMIT:
        return np.stack([exact(centre, 1, rng)[0] for centre in centres]).reshape(shape)
    max_step = max(1, int(np.ceil(2 * np.sqrt(shape[-1]) / rate)))
    out = np.empty_like(centres)
    for row, centre in enumerate(centres):
        out[row] = wem_chains(centre, NAIVE, 2, rate, np.zeros(1), max_step, WEM_SWEEPS, 1, int(rng.integers(2**31)))[0]
    return out.reshape(shape)


discrete_laplace = DiscreteLaplaceRV()
discrete_gaussian = DiscreteGaussianRV()
lattice_l2 = LatticeL2RV()
#: MCMC sweeps per random draw of WassersteinNaive (as the mechanism's release default).
WEM_SWEEPS = 2000


class _IntegerRelease(Discrete):
    """A distribution of integer releases: an observed y with a non-integer value is refused (PyMC
    would cast it to integers silently, truncating 3.5 to 3)."""

    def __new__(cls, name, *args, observed=None, **kwargs):
        if observed is not None:
            values = np.asarray(observed.get_value() if hasattr(observed, "get_value") else observed)
            if np.issubdtype(values.dtype, np.number) and np.any(values != np.round(values)):
                raise ValueError(
                    f"{cls.__name__} {name!r} releases integers, but observed holds non-integer values "
                    f"(e.g. {values[values != np.round(values)].flat[0]!r}): use ppdinfer.pymc.Release "
                    "with a continuous mechanism for a real-valued release"
                )
        return super().__new__(cls, name, *args, observed=observed, **kwargs)


class DiscreteLaplace(_IntegerRelease):
    r"""Discrete Laplace (two-sided geometric) distribution centred on an integer ``mu``.

    .. math:: f(y \mid \mu, \epsilon, \Delta) = \frac{1 - a}{1 + a} a^{|y - \mu|},
              \qquad a = e^{-\epsilon / \Delta}

    the law of an epsilon-DP release y = mu + noise of an integer statistic with L1
    sensitivity Delta. ``mu`` must be integer-valued (the pmf is normalized over y in Z
    for integer mu). Random draws are exact (Canonne, Kamath & Steinke 2020).

    See Also
    --------
    ppdinfer.mechanisms.DiscreteLaplace : The same noise as a mechanism.
    ppdinfer.pymc.DiscreteGaussian : Gaussian noise on the integers.

    References
    ----------
    .. [1] A. Ghosh, T. Roughgarden and M. Sundararajan, "Universally utility-maximizing privacy
        mechanisms," SIAM Journal on Computing 41(6), 2012.

    Examples
    --------
    >>> import pymc as pm
    >>> round(float(pm.logp(DiscreteLaplace.dist(mu=10, epsilon=1.0), 10).eval()), 4)
    -0.7719
    """

    rv_op = discrete_laplace

    @classmethod
    def dist(cls, mu, epsilon, sensitivity=1.0, **kwargs):
        mu = integer_centre(mu, cls.__name__)
        _positive_parameters(cls, epsilon=epsilon, sensitivity=sensitivity)
        return super().dist([pt.as_tensor_variable(mu), _float64(epsilon), _float64(sensitivity)], **kwargs)

    def support_point(rv, size, mu, epsilon, sensitivity):
        return _rounded_centre(size, mu)

    def logp(value, mu, epsilon, sensitivity):
        rate = epsilon / sensitivity
        res = pt.log(pt.tanh(rate / 2)) - rate * pt.abs(value - mu)
        return check_parameters(res, epsilon > 0, sensitivity > 0, msg="epsilon > 0, sensitivity > 0")

    def logcdf(value, mu, epsilon, sensitivity):
        # P(Y <= y) = a^(mu - y) / (1 + a) below mu, 1 - a^(y - mu + 1) / (1 + a) from mu on.
        rate = epsilon / sensitivity
        k = pt.floor(value) - mu
        log1p_a = pt.log1p(pt.exp(-rate))
        below = rate * k - log1p_a
        above = pt.log1mexp(-rate * (k + 1) - log1p_a)
        res = pt.switch(pt.lt(k, 0), below, above)
        return check_parameters(res, epsilon > 0, sensitivity > 0, msg="epsilon > 0, sensitivity > 0")


def discrete_gaussian_log_normalizer(sigma):
    """Symbolic log sum_k exp(-k^2 / (2 sigma^2)): direct sum below sigma = 1, Poisson dual above.

    Matches :func:`ppdinfer.mechanisms.discrete_gaussian_log_normalizer` to double precision.
    """
    safe_small = pt.minimum(sigma, 1.0)
    direct = pt.log1p(2 * pt.sum(pt.exp(-(_DIRECT_TERMS**2) / (2 * safe_small[..., None] ** 2)), axis=-1))
    safe_large = pt.maximum(sigma, 1.0)
    dual = (
        0.5 * np.log(2 * np.pi)
        + pt.log(safe_large)
        + pt.log1p(2 * pt.sum(pt.exp(-2 * np.pi**2 * safe_large[..., None] ** 2 * _DUAL_TERMS**2), axis=-1))
    )
    return pt.switch(pt.lt(sigma, 1.0), direct, dual)


class DiscreteGaussian(_IntegerRelease):
    r"""Discrete Gaussian distribution centred on an integer ``mu``.

    .. math:: f(y \mid \mu, \sigma) = \frac{e^{-(y - \mu)^2 / (2 \sigma^2)}}
              {\sum_{k \in \mathbb{Z}} e^{-k^2 / (2 \sigma^2)}}

    ``mu`` must be integer-valued. No closed-form CDF exists, so there is no logcdf. Random
    draws are exact (Canonne, Kamath & Steinke 2020).

    See Also
    --------
    ppdinfer.mechanisms.DiscreteGaussian : The same noise as a mechanism.
    ppdinfer.pymc.DiscreteLaplace : Laplace noise on the integers.

    References
    ----------
    .. [1] C. L. Canonne, G. Kamath and T. Steinke, "The discrete Gaussian for differential privacy," 2020.

    Examples
    --------
    >>> import pymc as pm
    >>> k = np.arange(-30, 31)
    >>> round(float(np.exp(pm.logp(DiscreteGaussian.dist(mu=0, sigma=2.0), k).eval()).sum()), 12)
    1.0
    """

    rv_op = discrete_gaussian

    @classmethod
    def dist(cls, mu, sigma, **kwargs):
        mu = integer_centre(mu, cls.__name__)
        _positive_parameters(cls, sigma=sigma)
        return super().dist([pt.as_tensor_variable(mu), _float64(sigma)], **kwargs)

    def support_point(rv, size, mu, sigma):
        return _rounded_centre(size, mu)

    def logp(value, mu, sigma):
        res = -((value - mu) ** 2) / (2 * sigma**2) - discrete_gaussian_log_normalizer(sigma)
        return check_parameters(res, sigma > 0, msg="sigma > 0")


class WassersteinNaive(_IntegerRelease):
    r"""The Wasserstein exponential mechanism with the L2 loss and the naive base measure.

    .. math:: f(y \mid \mu) \propto \exp\left(-\frac{\epsilon}{2 \sigma} \lVert y - \mu \rVert_2\right),
              \qquad y \in \mathbb{Z}^n

    (Seeman, Reimherr & Slavkovic, Theorem 9, with sigma = Delta_z for the L2 loss). The
    normalizer is the same for every integer ``mu`` (the lattice is translation invariant), so
    ``logp`` omits it: it is exact up to a constant, which is all a posterior over mu needs, but
    not a normalized pmf. Random draws are the mechanism's release: exact for small dimensions,
    else its MCMC chain (2000 sweeps).

    See Also
    --------
    ppdinfer.mechanisms.WassersteinExponential : The mechanism.

    References
    ----------
    .. [1] J. Seeman, M. Reimherr and A. Slavkovic, "Formal privacy for partially private data,"
        arXiv:2204.01102, 2022. Theorem 9 and Section 4.

    Examples
    --------
    >>> import pymc as pm
    >>> float(pm.logp(WassersteinNaive.dist(mu=np.array([5, 3]), epsilon=1.0, sigma=2.0), np.array([8, 7])).eval())
    -1.25
    """

    rv_op = lattice_l2

    @classmethod
    def dist(cls, mu, epsilon, sigma, **kwargs):
        mu = integer_centre(mu, cls.__name__)
        _positive_parameters(cls, epsilon=epsilon, sigma=sigma)
        return super().dist([pt.as_tensor_variable(mu), _float64(epsilon), _float64(sigma)], **kwargs)

    def support_point(rv, size, mu, epsilon, sigma):
        point = pt.round(mu)
        if not rv_size_is_none(size):
            point = pt.full((*size, mu.shape[-1]), point)
        return point

    def logp(value, mu, epsilon, sigma):
        res = -epsilon / (2 * sigma) * pt.sqrt(pt.sum((value - mu) ** 2, axis=-1))
        return check_parameters(res, epsilon > 0, sigma > 0, msg="epsilon > 0, sigma > 0")
