"""Laplace and discrete Laplace (two-sided geometric) noise mechanisms."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from ..validation import positive_finite, unit_parameter
from . import exact_integer
from .base import AdditiveNoiseMechanism, recorded
from .guarantee import Guarantee


class _LaplaceFamily(AdditiveNoiseMechanism):
    """Noise with log density log_norm - (epsilon / sensitivity) |e|, sensitivity a scalar or one per coordinate."""

    power = 1

    def __init__(self, epsilon: float, sensitivity=1.0):
        self.epsilon = positive_finite(epsilon, "epsilon")
        self.sensitivity = unit_parameter(sensitivity, "sensitivity", positive_finite, "positive finite number")
        if np.ndim(self.sensitivity):
            self.sensitivity.flags.writeable = False
        self.rate = self.epsilon / self.sensitivity

    def parameters(self) -> dict[str, float | tuple[float, ...]]:
        return {"epsilon": self.epsilon, "sensitivity": recorded(self.sensitivity)}

    def _guarantee(self) -> Guarantee:
        if self.coordinates is None:
            return Guarantee("pure", epsilon=self.epsilon, sensitivity=self.sensitivity)
        return Guarantee(
            "pure",
            epsilon=self.epsilon,
            sensitivity=recorded(self.sensitivity),
            note="a budget per coordinate: for neighbours with sum_i |f_i(x) - f_i(x')| / sensitivity_i <= 1",
        )


class Laplace(_LaplaceFamily):
    """y = x + Laplace(0, sensitivity / epsilon) noise: epsilon-DP for the given L1 sensitivity.

    Density per coordinate: epsilon / (2 sensitivity) * exp(-epsilon |y - x| / sensitivity).

    A vector ``sensitivity`` (Delta_1, ..., Delta_d) gives coordinate i of the flattened release its own
    scale b_i = Delta_i / epsilon (a budget per statistic), and a release of exactly d coordinates. The
    largest log density ratio of a release between query values f(x) and f(x') is exactly
    epsilon sum_i |f_i(x) - f_i(x')| / Delta_i (reached by the y beyond both values in every coordinate),
    so the release is epsilon-DP for the neighbours whose query values differ within the weighted L1 ball
    sum_i |f_i(x) - f_i(x')| / Delta_i <= 1. A statistic of sensitivity s_i given the share w_i of epsilon
    (shares summing to at most one) takes Delta_i = s_i / w_i; the s_i of sufficient statistics of clipped
    data are in :mod:`ppdinfer.privacy.sufficient_statistics`.

    See Also
    --------
    ppdinfer.mechanisms.DiscreteLaplace : The same noise on the integers.

    References
    ----------
    .. [1] C. Dwork, F. McSherry, K. Nissim and A. Smith, "Calibrating noise to sensitivity in private
        data analysis," Theory of Cryptography Conference (TCC), 2006.

    Examples
    --------
    >>> m = Laplace(epsilon=1.0, sensitivity=2.0)
    >>> round(float(m.logpdf(3.0, [3.0])[0]), 4), round(m.log_bound(), 4)
    (-1.3863, -1.3863)
    >>> per_statistic = Laplace(epsilon=1.0, sensitivity=[1.0, 4.0])   # scales 1 and 4
    >>> round(float(per_statistic.logpdf([0.0, 0.0], [1.0, 4.0])[0]), 4)  # log(1/2) - 1 + log(1/8) - 1
    -4.7726
    """

    discrete = False

    def __init__(self, epsilon: float, sensitivity: float = 1.0):
        super().__init__(epsilon, sensitivity)
        self.log_norm = math.log(self.rate / 2) if self.coordinates is None else np.log(self.rate / 2)

    def _noise(self, shape, rng, secure):
        scale = 1.0 / self.rate
        return rng.laplace(0.0, scale if self.coordinates is None else scale.reshape(shape), size=shape)


class DiscreteLaplace(_LaplaceFamily):
    """y = x + K on the integers with pmf P(K = k) = (1 - a) / (1 + a) a^|k|, a = exp(-epsilon / sensitivity).

    epsilon-DP for integer-valued queries of L1 sensitivity ``sensitivity``. Releases are drawn
    exactly, in a time that does not depend on the noise (see ``exact_integer``). A vector
    ``sensitivity`` gives each coordinate its own a_i = exp(-epsilon / Delta_i), with the weighted L1
    guarantee of :class:`Laplace`: epsilon-DP where sum_i |f_i(x) - f_i(x')| / Delta_i <= 1.

    See Also
    --------
    ppdinfer.mechanisms.Laplace : The same noise on the real line.

    References
    ----------
    .. [1] A. Ghosh, T. Roughgarden and M. Sundararajan, "Universally utility-maximizing privacy
        mechanisms," SIAM Journal on Computing 41(6), 2012.
    .. [2] R. Gong and X.-L. Meng, "Congenial differential privacy under mandated disclosure,"
        Proceedings of the 2020 ACM-IMS Foundations of Data Science Conference (FODS), 2020.

    Examples
    --------
    >>> round(DiscreteLaplace(1.0).a, 4)
    0.3679
    >>> y = DiscreteLaplace(1.0).release([3, 5], random_seed=0)
    >>> y.dtype.kind, y.shape
    ('i', (2,))
    >>> k = np.arange(-60, 61)
    >>> round(float(np.exp(DiscreteLaplace(1.0).logpdf(0, k)).sum()), 12)  # the pmf sums to one
    1.0
    """

    discrete = True

    def __init__(self, epsilon: float, sensitivity: float = 1.0):
        super().__init__(epsilon, sensitivity)
        # (1 - a) / (1 + a) = tanh(rate / 2), accurate for tiny and large rates alike.
        if self.coordinates is None:
            self.log_norm = math.log(math.tanh(self.rate / 2))
        else:
            self.log_norm = np.log(np.tanh(self.rate / 2))

    @property
    def a(self) -> float | np.ndarray:
        """The geometric ratio exp(-epsilon / sensitivity) (one per coordinate for a vector sensitivity)."""
        return math.exp(-self.rate) if self.coordinates is None else np.exp(-self.rate)

    def _noise(self, shape, rng, secure):
        epsilon = Fraction(self.epsilon)
        if self.coordinates is None:
            scale = Fraction(self.sensitivity) / epsilon
            return exact_integer.sample_array(exact_integer.discrete_laplace, scale, shape, rng, secure)
        scales = [Fraction(value) / epsilon for value in self.sensitivity.tolist()]
        return exact_integer.sample_per_coordinate(exact_integer.discrete_laplace, scales, rng, secure).reshape(shape)
