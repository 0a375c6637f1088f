"""Laplace and discrete Laplace (two-sided geometric) noise mechanisms."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np  # noqa: F401  (the examples use np)

from ..validation import positive_finite
from . import exact_integer
from .base import AdditiveNoiseMechanism
from .guarantee import Guarantee


class _LaplaceFamily(AdditiveNoiseMechanism):
    """Noise with log density log_norm - (epsilon / sensitivity) |e|."""

    power = 1

    def __init__(self, epsilon: float, sensitivity: float = 1.0):
        self.epsilon = positive_finite(epsilon, "epsilon")
        self.sensitivity = positive_finite(sensitivity, "sensitivity")
        self.rate = self.epsilon / self.sensitivity

    def parameters(self) -> dict[str, float]:
        return {"epsilon": self.epsilon, "sensitivity": self.sensitivity}

    def _guarantee(self) -> Guarantee:
        return Guarantee("pure", epsilon=self.epsilon, sensitivity=self.sensitivity)


class Laplace(_LaplaceFamily):
    """y = x + Laplace(0, sensitivity / epsilon) noise: epsilon-DP for the given L1 sensitivity.

    Density per coordinate: epsilon / (2 sensitivity) * exp(-epsilon |y - x| / sensitivity).

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
    """

    discrete = False

    def __init__(self, epsilon: float, sensitivity: float = 1.0):
        super().__init__(epsilon, sensitivity)
        self.log_norm = math.log(self.rate / 2)

    def _noise(self, shape, rng, secure):
        return rng.laplace(0.0, 1.0 / self.rate, size=shape)


class DiscreteLaplace(_LaplaceFamily):
    """y = x + K on the integers with pmf P(K = k) = (1 - a) / (1 + a) a^|k|, a = exp(-epsilon / sensitivity).

    epsilon-DP for integer-valued queries of L1 sensitivity ``sensitivity``. Releases are drawn
    exactly, in a time that does not depend on the noise (see ``exact_integer``).

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
        self.log_norm = math.log(math.tanh(self.rate / 2))

    @property
    def a(self) -> float:
        """The geometric ratio exp(-epsilon / sensitivity)."""
        return math.exp(-self.rate)

    def _noise(self, shape, rng, secure):
        scale = Fraction(self.sensitivity) / Fraction(self.epsilon)
        return exact_integer.sample_array(exact_integer.discrete_laplace, scale, shape, rng, secure)
