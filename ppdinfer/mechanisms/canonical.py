r"""Canonical noise: Lemma 36's construction for any symmetric tradeoff function, and Tulap.

A canonical noise distribution (CND) for a symmetric tradeoff function f is a continuous,
symmetric CDF F with F(F^{-1}(1 - alpha) - 1) = f(alpha) (Awan & Vadhan 2023; Lemma 36 of Cho &
Awan): adding ``sensitivity`` times a draw from F to a statistic attains f exactly, with no slack.

- ``CanonicalNoise`` builds F from f by the recursion of Lemma 36 (any symmetric f; exact log-space
  tails for the Gaussian G_mu, pure eps-DP and (eps, delta)-DP).
- ``Tulap`` is the closed form for f_{eps,0} (pure eps-DP): the Tulap distribution with q = 0
  (Awan & Slavkovic 2018),

.. math::

    T = G_1 - G_2 + U, \qquad G_1, G_2 \sim \mathrm{Geometric}(1 - b) \text{ on } \{0, 1, \dots\},
    \quad U \sim \mathrm{Uniform}(-1/2, 1/2), \quad b = e^{-\epsilon},

whose density is constant on each interval (k - 1/2, k + 1/2], equal there to the discrete
Laplace pmf (1 - b) / (1 + b) b^{|k|}. ``CanonicalNoise.pure`` reproduces it.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from scipy import optimize, special

from ..rng import SeedLike, as_generator
from ..validation import finite_array, positive_finite, positive_int
from .base import Mechanism, as_batch
from .guarantee import Guarantee

#: The smallest epsilon Tulap accepts: numpy's geometric draws (int64) overflow near eps = 1e-19 and
#: would then add almost no noise while the likelihood assumes a scale of 1 / eps.
TULAP_MIN_EPSILON = 1e-15
#: The narrowest central piece 1 - 2c that CanonicalNoise accepts: F(-1/2) = c is stored to about 1e-16,
#: so below this the piece's slope, the density's maximum, loses its digits (eps or mu below ~1e-9).
MIN_CENTRAL_WIDTH = 1e-9


# --- what Tulap and CanonicalNoise share: sensitivity * N for a noise N symmetric about 0 ---------------
#
# Each class supplies N's lower tail at unit scale: lower_cdf(s) = P(N <= s) for s <= 0, and
# lower_ppf(q), the s <= 0 with P(N <= s) = q, for q in (0, 1/2]. The upper tail follows by symmetry,
# so neither tail loses precision to cancellation.


def _unit_values(t, sensitivity: float) -> np.ndarray:
    """t / sensitivity as a float array; a NaN in t is a ValueError."""
    t = np.asarray(t, dtype=np.float64)
    if np.any(np.isnan(t)):
        raise ValueError(f"t must not be NaN, got {t!r}")
    return t / sensitivity


def _symmetric_cdf(t, sensitivity: float, lower_cdf: Callable):
    """P(sensitivity * N <= t) from the lower tail on both sides: F(s) for s <= 0 and 1 - F(-s) above."""
    s = _unit_values(t, sensitivity)
    lower = lower_cdf(-np.abs(s))
    out = np.where(s > 0, 1.0 - lower, lower)
    return float(out) if out.ndim == 0 else out


def _symmetric_ppf(p, sensitivity: float, lower_ppf: Callable):
    """The t with P(sensitivity * N <= t) = p, for p in (0, 1): the lower tail's quantile of min(p, 1 - p)."""
    p = np.asarray(p, dtype=np.float64)
    if np.any(~((p > 0) & (p < 1))):
        raise ValueError(f"p must lie in (0, 1), got {p!r}")
    s = lower_ppf(np.minimum(p, 1.0 - p))
    # for p > 1/2 use the symmetry ppf(p) = -ppf(1 - p); 1 - p is exact for p >= 1/2
    out = sensitivity * np.where(p > 0.5, -s, s)
    return float(out) if out.ndim == 0 else out


def _unit_offsets(y, x, sensitivity: float) -> np.ndarray:
    """The noise (y - x) / sensitivity at unit scale for each row of ``x``; shape (B, y.size)."""
    y = finite_array(y, "y")
    x = finite_array(x, "x")
    return (y.reshape(1, -1) - as_batch(x, y)) / sensitivity


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
        The privacy parameter, at least ``TULAP_MIN_EPSILON`` = 1e-15 (delta = 0).
    sensitivity : float
        The L1 sensitivity Delta of the released statistic, > 0.

    See Also
    --------
    ppdinfer.mechanisms.CanonicalNoise : Canonical noise for any tradeoff function.
    ppdinfer.binomial_test : The test that uses Tulap noise.

    References
    ----------
    .. [1] J. Awan and A. Slavkovic, "Differentially private uniformly most powerful tests for binomial
        data," NeurIPS 2018.
    .. [2] J. Awan and S. Vadhan, "Canonical noise distributions and private hypothesis tests," The
        Annals of Statistics 51(2), 2023.

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
    separable = True
    smooth = False  # piecewise constant density (flat on unit pieces): no useful gradient in x

    def __init__(self, epsilon: float, sensitivity: float = 1.0):
        self.epsilon = positive_finite(epsilon, "epsilon")
        if self.epsilon < TULAP_MIN_EPSILON:
            raise ValueError(
                f"epsilon must be at least {TULAP_MIN_EPSILON:g} for Tulap, got {self.epsilon!r}: the "
                f"geometric draws of scale 1 / epsilon overflow (the release would carry almost no noise)"
            )
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

    def _guarantee(self) -> Guarantee:
        return Guarantee("pure", epsilon=self.epsilon, sensitivity=self.sensitivity)

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
        k = np.floor(_unit_offsets(y, x, self.sensitivity) + 0.5)
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
        return _symmetric_cdf(t, self.sensitivity, self._lower_cdf)

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
        return _symmetric_ppf(p, self.sensitivity, self._lower_ppf)

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


# --- Lemma 36: the canonical noise distribution of a symmetric tradeoff function ----------------
#
# Convention (as in ppdinfer.privacy): f(alpha) is the smallest type-II error at type-I error alpha.
# The paper writes tradeoff functions in the 1 - alpha convention, g(alpha) = f(1 - alpha); its
# "c with f(1 - c) = c" is the fixed point f(c) = c here, its F(x) = f(F(x + 1)) reads
# F(x) = f(1 - F(x + 1)), and its identity F(F^{-1}(alpha) - 1) = f(alpha) reads
# F(F^{-1}(1 - alpha) - 1) = f(alpha).
#
# Every lower-tail value of F is an iterate of h(p) = f(1 - p) (one unit outward) started on the
# central piece; its inverse is h^{-1}(q) = 1 - f(q) (one unit inward, as f is its own inverse).
# A tail object gives, in log space, ``outward(log_p, steps, density)`` = (log h^k(p), log of the
# product of the slopes h' along the way) and ``inward(log_q, log_c)`` = (the number k of inward
# steps that brings q up to c or above, log h^{-k}(q)). For G_mu and f_{eps,delta} both are closed
# forms (exact, any k); a general callable is iterated one unit at a time.


@dataclass(frozen=True)
class _GaussianTail:
    """G_mu(alpha) = Phi(Phi^{-1}(1 - alpha) - mu): k steps of h(p) = Phi(Phi^{-1}(p) - mu) in closed form."""

    mu: float

    def fixed_point(self) -> float:
        return float(special.ndtr(-self.mu / 2))

    def outward(self, log_p, steps, density=True):
        # h^k(p) = Phi(z - k mu) with z = Phi^{-1}(p); the slopes multiply to phi(z - k mu) / phi(z)
        z = special.ndtri_exp(log_p)
        shift = steps * self.mu
        return special.log_ndtr(z - shift), shift * z - shift**2 / 2

    def inward(self, log_q, log_c):
        # h^{-k}(q) = Phi(z + k mu): the first k with z + k mu >= Phi^{-1}(c) = -mu / 2
        z = special.ndtri_exp(log_q)
        steps = np.maximum(np.ceil((-self.mu / 2 - z) / self.mu), 0.0)
        return steps, special.log_ndtr(z + steps * self.mu)

    def guarantee(self, sensitivity: float) -> Guarantee:
        return Guarantee("gdp", mu=self.mu, sensitivity=sensitivity)

    def parameters(self) -> dict[str, float]:
        return {"mu": self.mu}


@dataclass(frozen=True)
class _DPTail:
    """f_{eps,delta}: h(p) = e^{-eps} (p - delta)^+ and h^{-1}(q) = delta + e^{eps} q, k steps in closed form."""

    epsilon: float
    delta: float

    def fixed_point(self) -> float:
        return (1.0 - self.delta) * float(special.expit(-self.epsilon))

    def outward(self, log_p, steps, density=True):
        # h^k(p) = e^{-k eps} (p + d) - d with d = delta / (e^eps - 1), while positive; slope e^{-k eps}
        decay = -steps * self.epsilon
        if self.delta == 0.0:
            return log_p + decay, decay
        d = self.delta / math.expm1(self.epsilon)
        with np.errstate(divide="ignore"):
            log_value = np.log(np.maximum(np.exp(decay) * (np.exp(log_p) + d) - d, 0.0))
        return log_value, np.where(np.isfinite(log_value), decay, -np.inf)

    def inward(self, log_q, log_c):
        # h^{-k}(q) = e^{k eps} (q + d) - d: the first k with h^{-k}(q) >= c
        if self.delta == 0.0:
            steps = np.maximum(np.ceil((log_c - log_q) / self.epsilon), 0.0)
            return steps, log_q + steps * self.epsilon
        d = self.delta / math.expm1(self.epsilon)
        q = np.exp(log_q)
        steps = np.maximum(np.ceil((math.log(math.exp(log_c) + d) - np.log(q + d)) / self.epsilon), 0.0)
        return steps, np.log(np.exp(steps * self.epsilon) * (q + d) - d)

    def guarantee(self, sensitivity: float) -> Guarantee:
        if self.delta > 0:
            return Guarantee("approximate", epsilon=self.epsilon, delta=self.delta, sensitivity=sensitivity)
        return Guarantee("pure", epsilon=self.epsilon, sensitivity=sensitivity)

    def parameters(self) -> dict[str, float]:
        return {"epsilon": self.epsilon, "delta": self.delta} if self.delta > 0 else {"epsilon": self.epsilon}


#: A general callable's lower tail is reported as 0 (log density -inf) below log F = -10000 ...
_LOG_FLOOR = -1.0e4
#: ... and its CDF alone once below log F = -746, where it rounds to 0.0 (the smallest double is e^-744.4).
_LOG_CDF_FLOOR = -746.0


#: Slack of the grid checks of a general tradeoff function (rounding in the user's f).
_SHAPE_TOLERANCE = 1e-6


def _check_tradeoff_shape(grid: np.ndarray, values: np.ndarray, f: Callable) -> None:
    """Refuse a tradeoff function that is not convex, below 1 - alpha, and symmetric, on the grid.

    Symmetry (f equal to its inverse) is checked as f(f(alpha)) = alpha where f(alpha) > 0, and
    f(0) <= alpha where f(alpha) = 0 (the flat end at level 0): the region above the graph is
    then mirror-symmetric about the diagonal. Lemma 36's noise attains f only for such f.
    """
    above = values - (1 - grid)
    if np.max(above) > _SHAPE_TOLERANCE:
        worst = int(np.argmax(above))
        raise ValueError(
            f"tradeoff must satisfy f(alpha) <= 1 - alpha, got f({grid[worst]:.4g}) = {float(values[worst])!r}"
        )
    curvature = values[:-2] - 2 * values[1:-1] + values[2:]
    if np.min(curvature) < -_SHAPE_TOLERANCE:
        worst = int(np.argmin(curvature)) + 1
        raise ValueError(f"tradeoff must be convex, but it bends down near alpha = {grid[worst]:.4g}")
    back = f(values)
    positive = values > 0
    mismatch = np.where(positive, np.abs(back - grid), np.maximum(values[0] - grid, 0.0))
    if np.max(mismatch) > _SHAPE_TOLERANCE:
        worst = int(np.argmax(mismatch))
        raise ValueError(
            f"tradeoff must be symmetric (its own inverse, f(f(alpha)) = alpha), got "
            f"f(f({grid[worst]:.4g})) = {float(back[worst])!r}"
        )


@dataclass(frozen=True)
class _CallableTail:
    """Any symmetric tradeoff function given as a callable, iterated one unit at a time.

    h(p) = f(1 - p) rounds 1 - p for tiny p, so the far tails are as accurate as f near 1 allows.
    """

    tradeoff: Callable
    derivative: Callable | None
    max_steps: int = field(compare=False)

    def _f(self, alpha):
        alpha = np.asarray(alpha, dtype=np.float64)
        value = np.asarray(self.tradeoff(alpha), dtype=np.float64)
        if value.shape != alpha.shape:
            raise ValueError(
                f"tradeoff must map an array of levels to an array of the same shape, "
                f"got shape {value.shape} for shape {alpha.shape}"
            )
        return value

    def fixed_point(self) -> float:
        grid = np.linspace(0.0, 1.0, 1001)
        values = self._f(grid)
        if not np.all(np.isfinite(values)) or np.any(values < 0) or np.any(values > 1):
            raise ValueError("tradeoff must take values in [0, 1] on [0, 1]")
        if np.any(np.diff(values) > 1e-12):
            raise ValueError("tradeoff must be non-increasing on [0, 1]")
        if values[500] >= 0.5:
            raise ValueError(f"tradeoff must be nontrivial (f(1/2) < 1/2), got f(1/2) = {values[500]!r}")
        _check_tradeoff_shape(grid, values, self._f)
        if values[0] == 0.0:
            return 0.0
        return float(
            optimize.brentq(lambda a: float(self._f(a)) - a, 0.0, 0.5, xtol=1e-16, rtol=4 * np.finfo(float).eps)
        )

    def _log_slope(self, log_p):
        alpha = -np.expm1(log_p)  # h'(p) = -f'(1 - p), 1 - p in (c, 1]
        if self.derivative is not None:
            slope = -np.asarray(self.derivative(alpha), dtype=np.float64)
        else:
            # second-order one-sided differences that stay inside (c, 1], where f has no kink at c
            step = 1e-6
            h = np.where(alpha + 2 * step <= 1.0, step, -step)
            slope = -(-3 * self._f(alpha) + 4 * self._f(alpha + h) - self._f(alpha + 2 * h)) / (2 * h)
        with np.errstate(divide="ignore"):
            return np.log(np.maximum(slope, 0.0))

    def outward(self, log_p, steps, density: bool = True):
        log_p = log_p.copy()
        log_slope = np.zeros(log_p.shape) if density else None
        floor = _LOG_FLOOR if density else _LOG_CDF_FLOOR
        remaining = steps.copy()
        active = np.flatnonzero((remaining > 0) & (log_p > floor))
        taken = 0
        while active.size:
            taken += 1
            if taken > self.max_steps:
                raise ValueError(
                    f"a noise value lies more than max_steps = {self.max_steps} units into the tail: raise max_steps"
                )
            current = log_p[active]
            if density:
                log_slope[active] += self._log_slope(current)
            with np.errstate(divide="ignore"):
                log_p[active] = np.log(self._f(-np.expm1(current)))
            remaining[active] -= 1
            active = active[(remaining[active] > 0) & (log_p[active] > floor)]
        cut = remaining > 0  # stopped at the floor
        log_p[cut] = -np.inf
        if density:
            log_slope[cut] = -np.inf
        return log_p, log_slope

    def inward(self, log_q, log_c):
        log_q = log_q.copy()
        steps = np.zeros(log_q.shape)
        active = np.flatnonzero(log_q < log_c)
        taken = 0
        while active.size:
            taken += 1
            if taken > self.max_steps:
                raise ValueError(
                    f"a quantile lies more than max_steps = {self.max_steps} units into the tail: raise max_steps"
                )
            previous = log_q[active]
            value = self._f(np.exp(previous))
            with np.errstate(divide="ignore"):
                log_q[active] = np.log1p(-value)
            stalled = np.flatnonzero(~(log_q[active] > previous))
            if stalled.size:  # 1 - f(q) <= q: the walk would never reach c (f loses precision this deep)
                q, f_q = float(np.exp(previous[stalled[0]])), float(value[stalled[0]])
                raise ValueError(
                    f"a quantile this far into the tail cannot be followed in: the tradeoff gives f({q:.3g}) = "
                    f"{f_q!r}, so the next level 1 - f is no larger than {q:.3g} (a callable that computes "
                    "f(alpha) through 1 - alpha loses it below alpha ~ 1e-16)"
                )
            steps[active] += 1
            active = active[log_q[active] < log_c]
        return steps, log_q

    def guarantee(self, sensitivity: float) -> Guarantee:
        return Guarantee(
            "f-dp",
            sensitivity=sensitivity,
            note=f"the tradeoff function given, fixed point c = {self.fixed_point():.6g}",
        )

    def parameters(self) -> dict[str, float]:
        return {"c": self.fixed_point()}


class CanonicalNoise(Mechanism):
    r"""y = x + sensitivity * N with N ~ F_f, the canonical noise distribution of Lemma 36 for f.

    For a symmetric nontrivial tradeoff function f (type-II error at type-I error alpha), let c
    be its fixed point, f(c) = c, with 0 <= c < 1/2. Lemma 36 (Awan & Vadhan 2023, Theorem 3.9)
    defines the CDF

    .. math::

        F_f(x) = \begin{cases}
            f\bigl(1 - F_f(x + 1)\bigr), & x < -1/2, \\
            c \, (1/2 - x) + (1 - c) (x + 1/2), & -1/2 \le x \le 1/2, \\
            1 - f\bigl(F_f(x - 1)\bigr), & x > 1/2,
        \end{cases}
        \qquad F_f\bigl(F_f^{-1}(1 - \alpha) - 1\bigr) = f(\alpha),

    so the test of x against x + sensitivity from one release has tradeoff exactly f (the paper
    writes f in the 1 - alpha convention, f(1 - c) = c and F(F^{-1}(alpha) - 1) = f(alpha)).
    The density is the derivative of the recursion: with x = x_0 - k, x_0 in [-1/2, 1/2),

    .. math::

        F_f(x) = h^{k}\bigl(F_f(x_0)\bigr), \quad h(p) = f(1 - p), \qquad
        F_f'(x) = (1 - 2c) \prod_{j=0}^{k-1} h'\bigl(h^{j}(F_f(x_0))\bigr),

    and by symmetry on x > 0. As f is convex and crosses the diagonal with slope -1 or steeper,
    h' <= 1 on the tails, so the density is largest on the central piece:
    log M = d (log(1 - 2c) - log sensitivity) for d coordinates. The quantile function inverts
    the recursion with h^{-1}(q) = 1 - f(q) (f is its own inverse), and the release is an
    inverse-CDF draw.

    Numerics: for the constructors ``gaussian``, ``pure`` and ``approximate`` the k-fold recursion
    and its slopes are closed forms in log space (h^k(p) = Phi(Phi^{-1}(p) - k mu), and
    e^{-k eps} (p + d) - d with d = delta / (e^eps - 1)), so both tails are exact to rounding
    at any distance (relative error ~1e-14 even at F ~ 1e-300). A general callable f is
    iterated one unit at a time as given: h(p) = f(1 - p) rounds 1 - p, so its tails are
    accurate to about 1e-16 / p relative; without ``derivative`` the density uses second-order
    finite differences (relative error about 1e-6 or better). Its tail is reported as 0 below
    log F = -10000 (log density -inf; the CDF alone stops at -746, where it rounds to 0.0), and
    a point more than ``max_steps`` units out that has not got there raises a ValueError.

    Note that this F differs from other CNDs of the same f: for G_mu the Lemma 36 distribution
    is not N(0, 1 / mu^2), though both are canonical (for f_{eps,0} the CND is unique: Tulap).

    Parameters
    ----------
    tradeoff : callable
        alpha -> f(alpha) on arrays of levels in [0, 1]: symmetric (f equals its inverse),
        convex, non-increasing, f(alpha) <= 1 - alpha, with f(1/2) < 1/2; e.g.
        ``lambda a: gaussian_tradeoff(a, mu)``. Each property is checked on a grid of 1001
        levels (to 1e-6) and a violation is a ValueError: for any other f the release would
        not attain the tradeoff f it claims.
    sensitivity : float
        The sensitivity Delta of the released statistic, > 0; the noise is Delta N.
    derivative : callable, optional
        alpha -> f'(alpha), used for the density; finite differences when omitted.
    max_steps : int
        The most unit steps of the recursion one evaluation of a general f may take.

    See Also
    --------
    ppdinfer.mechanisms.Tulap : The canonical noise of pure epsilon-DP.

    References
    ----------
    .. [1] J. Awan and S. Vadhan, "Canonical noise distributions and private hypothesis tests," The
        Annals of Statistics 51(2), 2023.
    .. [2] Y. H. Cho and J. Awan, "Formal privacy guarantees with invariant statistics." Lemma 36.

    Examples
    --------
    >>> import numpy as np
    >>> from ppdinfer.mechanisms.canonical import CanonicalNoise
    >>> from ppdinfer.privacy import gaussian_tradeoff
    >>> m = CanonicalNoise(lambda a: gaussian_tradeoff(a, 1.0))
    >>> round(m.c, 6)                                   # Phi(-mu / 2): G_mu(c) = c
    0.308538
    >>> alpha = np.array([0.01, 0.05, 0.3])
    >>> np.round(m.sf(m.ppf(alpha) + 1) - gaussian_tradeoff(alpha, 1.0), 12) + 0.0   # F(F^-1(1 - a) - 1) = f(a)
    array([0., 0., 0.])
    >>> m == CanonicalNoise.gaussian(1.0)               # the callable is not compared by value
    False
    >>> from scipy import stats                          # Lemma 36's CND of G_1 is not N(0, 1)
    >>> round(float(CanonicalNoise.gaussian(1.0).cdf(-1.7)), 6), round(float(stats.norm.cdf(-1.7)), 6)
    (0.043823, 0.044565)
    """

    discrete = False
    separable = True
    smooth = False  # uniform on the central piece, kinked between pieces: no useful gradient in x

    def __init__(
        self,
        tradeoff: Callable,
        sensitivity: float = 1.0,
        *,
        derivative: Callable | None = None,
        max_steps: int = 100_000,
    ):
        if not callable(tradeoff):
            raise ValueError(f"tradeoff must be a callable alpha -> f(alpha), got {tradeoff!r}")
        if derivative is not None and not callable(derivative):
            raise ValueError(f"derivative must be a callable alpha -> f'(alpha) or None, got {derivative!r}")
        self._setup(_CallableTail(tradeoff, derivative, positive_int(max_steps, "max_steps")), sensitivity)

    @classmethod
    def gaussian(cls, mu: float, sensitivity: float = 1.0) -> CanonicalNoise:
        r"""Lemma 36's CND for mu-GDP, f = G_mu, with exact log-space tails.

        .. math::

            c = \Phi(-\mu / 2), \qquad h(p) = \Phi\bigl(\Phi^{-1}(p) - \mu\bigr), \qquad
            h'(p) = \exp\bigl(\mu \, \Phi^{-1}(p) - \mu^2 / 2\bigr).

        Examples
        --------
        >>> from ppdinfer.mechanisms.canonical import CanonicalNoise
        >>> m = CanonicalNoise.gaussian(mu=1.0)
        >>> m
        CanonicalNoise(mu=1.0, sensitivity=1.0)
        >>> round(float(m.pdf(0.0)), 6), round(float(m.cdf(-0.5)), 6)   # 1 - 2c and c
        (0.382925, 0.308538)
        """
        noise = cls.__new__(cls)
        noise._setup(_GaussianTail(positive_finite(mu, "mu")), sensitivity)
        return noise

    @classmethod
    def pure(cls, epsilon: float, sensitivity: float = 1.0) -> CanonicalNoise:
        r"""Lemma 36's CND for eps-DP, f = f_{eps,0}: the Tulap distribution (q = 0).

        .. math::

            c = \frac{1}{1 + e^{\epsilon}}, \qquad h(p) = e^{-\epsilon} p, \qquad
            F'(x) = \tanh(\epsilon / 2) \, e^{-\epsilon k} \text{ on the k-th piece out}.

        Examples
        --------
        >>> from ppdinfer.mechanisms import Tulap
        >>> from ppdinfer.mechanisms.canonical import CanonicalNoise
        >>> m = CanonicalNoise.pure(epsilon=1.0)
        >>> round(float(m.cdf(-2.3)), 12) == round(float(Tulap(1.0).cdf(-2.3)), 12)
        True
        """
        noise = cls.__new__(cls)
        noise._setup(_DPTail(positive_finite(epsilon, "epsilon"), 0.0), sensitivity)
        return noise

    @classmethod
    def approximate(cls, epsilon: float, delta: float, sensitivity: float = 1.0) -> CanonicalNoise:
        r"""Lemma 36's CND for (eps, delta)-DP, f = f_{eps,delta}: Tulap with q > 0 (bounded support).

        On the tails h(p) = e^{-eps} (p - delta)^+, so F reaches 0 at a finite point. It is the
        truncated Tulap distribution of Awan & Slavkovic (2018): Tulap(0, b, q) with b = e^{-eps},
        q = 2 delta b / (1 - b + 2 delta b), whose CDF is (G(x) - q / 2) / (1 - q) on its support
        for G the Tulap(0, b, 0) CDF.

        .. math::

            f_{\epsilon,\delta}(\alpha) = \max\bigl(0, 1 - \delta - e^{\epsilon} \alpha,
            e^{-\epsilon} (1 - \delta - \alpha)\bigr), \qquad c = \frac{1 - \delta}{1 + e^{\epsilon}}.

        Examples
        --------
        >>> from ppdinfer.mechanisms.canonical import CanonicalNoise
        >>> m = CanonicalNoise.approximate(epsilon=1.0, delta=0.05)
        >>> round(m.c, 6), float(m.cdf(-3.0))          # the support ends before -3
        (0.255494, 0.0)
        """
        delta = float(delta) if isinstance(delta, (int, float)) and not isinstance(delta, bool) else math.nan
        if not 0 <= delta < 1:
            raise ValueError(f"delta must lie in [0, 1), got {delta!r}")
        noise = cls.__new__(cls)
        noise._setup(_DPTail(positive_finite(epsilon, "epsilon"), delta), sensitivity)
        return noise

    def _setup(self, tail, sensitivity) -> None:
        self.sensitivity = positive_finite(sensitivity, "sensitivity")
        self._tail = tail
        #: the fixed point f(c) = c: F(-1/2) = c
        self.c = tail.fixed_point()
        width = 1 - 2 * self.c
        if not width >= MIN_CENTRAL_WIDTH:
            name = next(iter(tail.parameters())) if not isinstance(tail, _CallableTail) else "tradeoff"
            raise ValueError(
                f"{name}: the canonical noise's central density 1 - 2c = {width:.3g} is below "
                f"{MIN_CENTRAL_WIDTH:g}: f is too close to the trivial tradeoff 1 - alpha for double "
                f"precision (c = F(-1/2) is stored to about 1e-16); got {tail.parameters()}"
            )
        self._log_c = math.log(self.c) if self.c > 0 else -math.inf
        self._log_width = math.log1p(-2 * self.c)  # log of the central density 1 - 2c

    def _guarantee(self) -> Guarantee:
        return self._tail.guarantee(self.sensitivity)

    def parameters(self) -> dict[str, float]:
        """The tradeoff function's parameters (``c`` for a general callable) and ``sensitivity``.

        Examples
        --------
        >>> from ppdinfer.mechanisms.canonical import CanonicalNoise
        >>> CanonicalNoise.approximate(0.5, 0.01, sensitivity=2.0).parameters()
        {'epsilon': 0.5, 'delta': 0.01, 'sensitivity': 2.0}
        """
        return {**self._tail.parameters(), "sensitivity": self.sensitivity}

    def __eq__(self, other) -> bool:
        return type(self) is type(other) and (self._tail, self.sensitivity) == (other._tail, other.sensitivity)

    def __hash__(self) -> int:
        return hash((type(self), self._tail, self.sensitivity))

    def release(self, x, z=None, random_seed: SeedLike = None) -> np.ndarray:
        """The release x + sensitivity * N by inverse-CDF sampling, a float array of the shape of ``x``.

        A lower-tail probability q ~ Uniform(0, 1/2] and a fair sign give N = sign F^{-1}(q), so
        both tails are drawn to full relative precision.

        Examples
        --------
        >>> from ppdinfer.mechanisms.canonical import CanonicalNoise
        >>> CanonicalNoise.gaussian(1.0).release(np.zeros((2, 3)), random_seed=1).shape
        (2, 3)
        """
        x = finite_array(x, "x")
        rng = as_generator(random_seed)
        q = 0.5 * (1.0 - rng.random(x.shape))  # in (0, 1/2]
        sign = np.where(rng.random(x.shape) < 0.5, -1.0, 1.0)
        return x + self.sensitivity * sign * self._lower_ppf(q)

    def logpdf(self, y, x, z=None) -> np.ndarray:
        """log pi(y | x) = sum_j [log F'((y_j - x_j) / Delta) - log Delta] for each row of ``x``; shape (B,).

        Examples
        --------
        >>> from ppdinfer.mechanisms.canonical import CanonicalNoise
        >>> CanonicalNoise.pure(1.0).logpdf([0.0, 0.0], [[0.2, -0.4], [1.0, 0.0]]).round(4)   # as Tulap(1.0)
        array([-1.5439, -2.5439])
        """
        s = _unit_offsets(y, x, self.sensitivity)
        distance, index = np.unique(np.abs(s), return_inverse=True)  # x often repeats (counts)
        log_density = self._lower(-distance, density=True)[1] - math.log(self.sensitivity)
        return log_density[index.reshape(s.shape)].sum(axis=1)

    def log_bound(self, z=None, size: int = 1) -> float:
        """log M = size * (log(1 - 2c) - log sensitivity): the density's maximum, on the central piece.

        Examples
        --------
        >>> from ppdinfer.mechanisms.canonical import CanonicalNoise
        >>> round(CanonicalNoise.pure(1.0).log_bound(size=2), 6)      # 2 log tanh(1/2), as Tulap
        -1.543874
        """
        return size * (self._log_width - math.log(self.sensitivity))

    def cdf(self, t):
        """The CDF of the noise sensitivity * N at ``t``, from the lower tail on both sides (no cancellation).

        Examples
        --------
        >>> from ppdinfer.mechanisms.canonical import CanonicalNoise
        >>> m = CanonicalNoise.gaussian(2.0)
        >>> float(m.cdf(0.0)), round(float(m.cdf(-1.0) + m.cdf(1.0)), 12)
        (0.5, 1.0)
        """
        return _symmetric_cdf(t, self.sensitivity, self._lower_cdf)

    def sf(self, t):
        """The survival function 1 - cdf(t) of the noise, accurate in the upper tail (sf(t) = cdf(-t)).

        Examples
        --------
        >>> from ppdinfer.mechanisms.canonical import CanonicalNoise
        >>> m = CanonicalNoise.gaussian(1.0)
        >>> bool(m.sf(4.2) == m.cdf(-4.2)), float(m.sf(4.2)) > 0
        (True, True)
        """
        return self.cdf(-np.asarray(t, dtype=np.float64))

    def pdf(self, t):
        """The density of the noise sensitivity * N at ``t`` (the derivative of the recursion).

        Examples
        --------
        >>> from ppdinfer.mechanisms.canonical import CanonicalNoise
        >>> m = CanonicalNoise.pure(1.0)
        >>> np.round(m.pdf([0.3, 1.0, -1.6]), 6)       # the discrete Laplace pmf at 0, 1, 2, as Tulap
        array([0.462117, 0.170003, 0.062541])
        """
        s = _unit_values(t, self.sensitivity)
        out = np.exp(self._lower(-np.abs(s), density=True)[1]) / self.sensitivity
        return float(out) if out.ndim == 0 else out

    def ppf(self, p):
        """The quantile function of the noise: the t with cdf(t) = p, for p in (0, 1).

        The recursion is run inward from p with h^{-1}(q) = 1 - f(q) until q reaches the central
        piece, then the linear piece is inverted: no root finding.

        Examples
        --------
        >>> from ppdinfer.mechanisms.canonical import CanonicalNoise
        >>> m = CanonicalNoise.gaussian(1.0)
        >>> float(m.ppf(0.5)), round(float(m.cdf(m.ppf(1e-9))) / 1e-9, 12)
        (0.0, 1.0)
        """
        return _symmetric_ppf(p, self.sensitivity, self._lower_ppf)

    # -- unit-scale helpers ---------------------------------------------------------------------
    def _lower_cdf(self, s: np.ndarray) -> np.ndarray:
        """F(s) for s <= 0 at unit scale."""
        return np.exp(self._lower(s)[0])

    def _lower(self, s: np.ndarray, density: bool = False):
        """log F(s) and (with ``density``) log F'(s) for s <= 0 at unit scale, by the outward recursion."""
        shape = np.shape(s)
        s = np.asarray(s, dtype=np.float64).ravel()
        log_p = np.full(s.shape, -np.inf)
        log_d = np.full(s.shape, -np.inf)
        finite = np.isfinite(s)
        s = s[finite]
        steps = np.where(s < -0.5, np.ceil(-s - 0.5), 0.0)  # s = x_0 - steps with x_0 in [-1/2, 1/2)
        x0 = np.clip(s + steps, -0.5, 0.5)
        with np.errstate(divide="ignore"):
            start = np.log(self.c + (1 - 2 * self.c) * (x0 + 0.5))
        log_p[finite], log_slope = self._tail.outward(start, steps, density)
        if not density:
            return log_p.reshape(shape), None
        log_d[finite] = self._log_width + log_slope
        return log_p.reshape(shape), log_d.reshape(shape)

    def _lower_ppf(self, q: np.ndarray) -> np.ndarray:
        """The s <= 0 with F(s) = q, for q in (0, 1/2], by the inward recursion."""
        shape = np.shape(q)
        steps, log_q0 = self._tail.inward(np.log(np.asarray(q, dtype=np.float64).ravel()), self._log_c)
        x0 = np.clip((np.exp(log_q0) - self.c) / (1 - 2 * self.c) - 0.5, -0.5, 0.5)
        return np.minimum(x0 - steps, 0.0).reshape(shape)
