r"""Canonical noise: the Tulap distribution, the canonical noise distribution of f_{eps,0}.

A canonical noise distribution for a symmetric tradeoff function f is a continuous, symmetric
CDF F with F(F^{-1}(alpha) - 1) = f(alpha) (Awan & Vadhan 2023; Lemma 36 of Cho & Awan): adding
``sensitivity`` times a draw from F to a statistic attains f exactly, with no slack. For
f_{eps,0} (pure eps-DP) it is the Tulap distribution with q = 0 (Awan & Slavkovic 2018),

.. math::

    T = G_1 - G_2 + U, \qquad G_1, G_2 \sim \mathrm{Geometric}(1 - b) \text{ on } \{0, 1, \dots\},
    \quad U \sim \mathrm{Uniform}(-1/2, 1/2), \quad b = e^{-\epsilon},

whose density is constant on each interval (k - 1/2, k + 1/2], equal there to the discrete
Laplace pmf (1 - b) / (1 + b) b^{|k|}.
"""

from __future__ import annotations

import math

import numpy as np

from .._random import SeedLike, as_generator
from .._validation import finite_array, positive_finite
from .base import Mechanism, _as_batch


class Tulap(Mechanism):
    r"""y = x + sensitivity * T with T ~ Tulap(0, b = exp(-epsilon), q = 0): canonical eps-DP noise.

    The noise T = G_1 - G_2 + U (two iid geometrics on {0, 1, ...} with success probability
    1 - b, and U ~ Uniform(-1/2, 1/2)) has the piecewise constant density and the CDF

    .. math::

        f_T(t) = \frac{1 - b}{1 + b} \, b^{|k|}, \quad k = \lfloor t + 1/2 \rfloor, \qquad
        F_T(t) = \begin{cases}
            \dfrac{b^{-k}}{1 + b} \bigl(b + (t - k + \tfrac12)(1 - b)\bigr), & k \le 0, \\[1ex]
            1 - F_T(-t), & t > 0,
        \end{cases}

    so on each unit interval (k - 1/2, k + 1/2] the density is the discrete Laplace pmf at k.
    With Delta = ``sensitivity``, the likelihood of a release of d coordinates is

    .. math::

        \log \pi(y \mid x) = \sum_{j=1}^{d} \Bigl[\log \tanh(\epsilon / 2) - \log \Delta
            - \epsilon \, \bigl|\lfloor (y_j - x_j) / \Delta + 1/2 \rfloor\bigr|\Bigr],

    largest (log M = d (log tanh(eps / 2) - log Delta)) when every |y_j - x_j| <= Delta / 2.
    Shifting x by Delta moves every piece by one, so the density ratio is e^{+-eps} everywhere
    (eps-DP), and the tradeoff function between x and x + Delta is exactly
    f_{eps,0}(alpha) = max(0, 1 - e^eps alpha, e^-eps (1 - alpha)): no eps-DP additive
    mechanism is more powerful for the test of x against x + Delta. The noise is scaled by
    Delta (rather than b = exp(-epsilon / Delta) at unit scale) so that this holds for every
    sensitivity; the two agree at Delta = 1.

    Parameters
    ----------
    epsilon : float
        The privacy parameter, > 0 (delta = 0).
    sensitivity : float
        The L1 sensitivity Delta of the released statistic, > 0.

    Examples
    --------
    >>> from ppdinfer.mechanisms import Tulap
    >>> m = Tulap(epsilon=1.0)
    >>> y = m.release([3.0, 5.0], random_seed=0)            # continuous releases
    >>> y.shape, y.dtype.kind
    ((2,), 'f')
    >>> np.exp(m.logpdf(0.3, [0.0, 1.0, -1.6])).round(6)  # pmf(0), pmf(1), pmf(2) of the discrete Laplace
    array([0.462117, 0.170003, 0.062541])
    >>> round(float(np.exp(m.log_bound())), 6)              # tanh(1/2)
    0.462117
    >>> float(m.cdf(0.0)), round(float(m.cdf(0.5)), 6)      # F(1/2) = 1 - b / (1 + b)
    (0.5, 0.731059)
    """

    discrete = False

    def __init__(self, epsilon: float, sensitivity: float = 1.0):
        self.epsilon = positive_finite(epsilon, "epsilon")
        self.sensitivity = positive_finite(sensitivity, "sensitivity")
        # log of (1 - b) / (1 + b) = tanh(epsilon / 2), accurate for tiny and large epsilon alike
        self._log_norm = math.log(math.tanh(self.epsilon / 2))

    @property
    def b(self) -> float:
        """The geometric ratio b = exp(-epsilon) of the unit-scale noise T.

        Examples
        --------
        >>> round(Tulap(2.0, sensitivity=3.0).b, 6)
        0.135335
        """
        return math.exp(-self.epsilon)

    def parameters(self) -> dict[str, float]:
        """The settings ``epsilon`` and ``sensitivity``.

        Examples
        --------
        >>> Tulap(0.5, 2.0).parameters()
        {'epsilon': 0.5, 'sensitivity': 2.0}
        """
        return {"epsilon": self.epsilon, "sensitivity": self.sensitivity}

    def release(self, x, z=None, random_seed: SeedLike = None) -> np.ndarray:
        """The release x + sensitivity * (G_1 - G_2 + U), a float array of the shape of ``x``.

        ``x`` may be any finite real values.

        Examples
        --------
        >>> Tulap(1.0).release(np.zeros((2, 3)), random_seed=1).shape
        (2, 3)
        """
        x = finite_array(x, "x")
        rng = as_generator(random_seed)
        p = -math.expm1(-self.epsilon)  # success probability 1 - b
        # numpy's geometric counts trials (support 1, 2, ...); the shift cancels in the difference
        g1 = rng.geometric(p, size=x.shape)
        g2 = rng.geometric(p, size=x.shape)
        u = rng.uniform(-0.5, 0.5, size=x.shape)
        return x + self.sensitivity * ((g1 - g2) + u)

    def logpdf(self, y, x, z=None) -> np.ndarray:
        """log pi(y | x) for each row of ``x`` (shape ``(B, *y.shape)``, or ``(B,)`` for scalar y); shape (B,).

        Examples
        --------
        >>> Tulap(1.0).logpdf([0.0, 0.0], [[0.2, -0.4], [1.0, 0.0]]).round(4)
        array([-1.5439, -2.5439])
        """
        y = finite_array(y, "y")
        x = finite_array(x, "x")
        x2 = _as_batch(x, y)
        k = np.floor((y.reshape(1, -1) - x2) / self.sensitivity + 0.5)
        per = self._log_norm - math.log(self.sensitivity) - self.epsilon * np.abs(k)
        return per.sum(axis=1)

    def log_bound(self, z=None, size: int = 1) -> float:
        """log M = size * (log tanh(epsilon / 2) - log sensitivity), the log of the density's maximum.

        Examples
        --------
        >>> round(Tulap(1.0).log_bound(size=2), 6)
        -1.543874
        """
        return size * (self._log_norm - math.log(self.sensitivity))

    def cdf(self, t) -> np.ndarray:
        r"""The exact CDF of the noise sensitivity * T at ``t`` (so P(y <= x + t) for a release y).

        Evaluated from the lower tail, F(t) for t <= 0 and 1 - F(-t) above, so neither tail loses
        precision to cancellation.

        Examples
        --------
        >>> m = Tulap(1.0)
        >>> float(m.cdf(0.0)), round(float(m.cdf(-0.5)), 6), round(float(m.cdf(-0.5) + m.cdf(0.5)), 12)
        (0.5, 0.268941, 1.0)
        """
        t = np.asarray(t, dtype=np.float64)
        if np.any(np.isnan(t)):
            raise ValueError(f"t must not be NaN, got {t!r}")
        s = t / self.sensitivity
        lower = self._lower_cdf(-np.abs(s))
        out = np.where(s > 0, 1.0 - lower, lower)
        return float(out) if out.ndim == 0 else out

    def sf(self, t) -> np.ndarray:
        """The survival function 1 - cdf(t) of the noise, accurate in the upper tail (sf(t) = cdf(-t)).

        Examples
        --------
        >>> m = Tulap(1.0)
        >>> bool(m.sf(2.7) == m.cdf(-2.7))
        True
        """
        return self.cdf(-np.asarray(t, dtype=np.float64))

    def ppf(self, p) -> np.ndarray:
        """The exact quantile function of the noise: the t with cdf(t) = p, for p in (0, 1).

        Examples
        --------
        >>> m = Tulap(1.0)
        >>> abs(round(float(m.ppf(0.5)), 12)), round(float(m.ppf(0.99)), 6), round(float(m.cdf(m.ppf(0.01))), 12)
        (0.0, 3.900498, 0.01)
        """
        p = np.asarray(p, dtype=np.float64)
        if np.any(~((p > 0) & (p < 1))):
            raise ValueError(f"p must lie in (0, 1), got {p!r}")
        q = np.minimum(p, 1.0 - p)  # lower-tail probability, <= 1/2
        s = self._lower_ppf(q)
        # for p > 1/2 use the symmetry ppf(p) = -ppf(1 - p); 1 - p is exact for p >= 1/2
        out = self.sensitivity * np.where(p > 0.5, -s, s)
        return float(out) if out.ndim == 0 else out

    # -- unit-scale helpers ---------------------------------------------------------------------
    def _lower_cdf(self, s: np.ndarray) -> np.ndarray:
        """F_T(s) for s <= 0 at unit scale."""
        b = self.b
        s = np.maximum(s, -1e300)  # F(-inf) = 0 without inf - inf
        k = np.floor(s + 0.5)
        frac = s - k + 0.5  # position inside the piece, in [0, 1)
        with np.errstate(over="ignore", under="ignore"):
            # b^{-k} / (1 + b) (b + frac (1 - b)), with -k >= 0
            return np.exp(k * self.epsilon) / (1 + b) * (b + frac * (-math.expm1(-self.epsilon)))

    def _lower_ppf(self, q: np.ndarray) -> np.ndarray:
        """The s <= 0 with F_T(s) = q, for q in (0, 1/2]."""
        b, one_minus_b = self.b, -math.expm1(-self.epsilon)
        # the piece k <= 0 holds q when F(k - 1/2) = b^{1-k} / (1 + b) <= q < F(k + 1/2) = b^{-k} / (1 + b)
        # that is, log(q (1 + b)) / epsilon < k <= log(q (1 + b)) / epsilon + 1
        m = np.minimum(np.floor(np.log(q * (1 + b)) / self.epsilon) + 1, 0.0)
        for _ in range(2):  # guard the floor against rounding, one piece either way
            m = np.where(self._lower_cdf(m - 0.5) > q, m - 1, m)
            m = np.where((m < 0) & (self._lower_cdf(m + 0.5) <= q), m + 1, m)
        start = self._lower_cdf(m - 0.5)
        density = one_minus_b / (1 + b) * np.exp(m * self.epsilon)  # b^{|m|}, m <= 0
        return np.minimum(m - 0.5 + (q - start) / density, 0.0)
