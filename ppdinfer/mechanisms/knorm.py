r"""The Wasserstein K-norm gradient mechanism (Seeman, Reimherr & Slavkovic, Theorem 10), L2 norm, box outputs.

For a loss with gradient grad L_x(y) = y - x (the quadratic loss of a mean or a count, whose
minimizer x is the statistic), the K-norm gradient density with the L2 norm is

.. math::

    \pi(y \mid x) = \exp(-\epsilon \lVert y - x \rVert_2 / (2 \sigma)) \, 1\{y \in Y\} / Z(x),

with sigma = sigma_y(Delta_z) the gradient's sensitivity and Y a box [lower, upper] in R^d
(bounds may be infinite), so the base measure is Lebesgue measure on Y. The paper's examples:
the mean of n records in [-D/2, D/2] (Example 1: sigma = D / n, Y = [-D/2, D/2]) and a count of
n records (Examples 2 and 4: sigma = Delta_z, Y = [0, n]); :meth:`KNormGradient.mean` and
:meth:`KNormGradient.count` build them, in d dimensions.

Release: y = x + R U with R ~ Gamma(d, rate) and U uniform on the unit sphere has density
proportional to exp(-rate ||y - x||) on R^d (polar coordinates); candidates outside Y are
rejected, which leaves exactly the truncated density.

Normalizer: Z(x) depends on x unless Y = R^d. Splitting Y - x into orthants and each orthant's
box into cones around the axes gives Z(x) = sum over cones of the integral over directions of
P(d, rate * r_max(direction)) Gamma(d) / rate^d, with P the regularized lower incomplete gamma
function and r_max the distance to the box's face. In d = 1 this is closed form; in d = 2 each
cone is an angle [0, atan(q / p)], integrated by 64-point Gauss-Legendre quadrature. For d >= 3
(unless Y = R^d) logpdf refuses and log_bound is +inf, so the samplers refuse too.
"""

from __future__ import annotations

import math

import numpy as np

from ..rng import SeedLike, as_generator
from ..validation import finite_array, positive_finite, positive_int
from .base import Mechanism
from .guarantee import Guarantee

#: Candidates drawn per release before giving up (the acceptance rate is P(x + R U in Y)).
MAX_CANDIDATES = 10_000_000
_NODES, _WEIGHTS = np.polynomial.legendre.leggauss(64)


class KNormGradient(Mechanism):
    """Theorem 10's mechanism with the L2 norm on a box; see the module docstring.

    Parameters
    ----------
    epsilon : float
    sigma : float
        sigma_y(Delta_z): the bound on ||grad L_x(y) - grad L_x'(y)||_2 over d(x, x') <= Delta_z.
    lower, upper : array_like
        The output box Y, one bound per dimension (scalars for d = 1); may be infinite.

    See Also
    --------
    ppdinfer.mechanisms.WassersteinExponential : Theorem 9's mechanism.

    References
    ----------
    .. [1] J. Seeman, M. Reimherr and A. Slavkovic, "Formal privacy for partially private data,"
        arXiv:2204.01102, 2022. Theorem 10.
    .. [2] M. Reimherr and J. Awan, "KNG: the K-norm gradient mechanism," NeurIPS 2019.

    Examples
    --------
    >>> from ppdinfer.mechanisms import KNormGradient
    >>> mechanism = KNormGradient.count(epsilon=1.0, n=50)   # a count of 50 records, Y = [0, 50]
    >>> mechanism
    KNormGradient(epsilon=1.0, sigma=1.0, lower_0=0.0, upper_0=50.0)
    >>> y = mechanism.release(20, random_seed=0)
    >>> bool(0 <= y <= 50)
    True
    >>> loglik = mechanism.logpdf(y, [20.0, 25.0])          # the density exp(-|y - x| / 2) / Z(x)
    >>> bool(loglik[0] > loglik[1]), bool(loglik.max() <= mechanism.log_bound())
    (True, True)
    """

    discrete = False

    def __init__(self, epsilon: float, sigma: float, lower=-math.inf, upper=math.inf):
        self.epsilon = positive_finite(epsilon, "epsilon")
        self.sigma = positive_finite(sigma, "sigma")
        lower = np.atleast_1d(np.asarray(lower, dtype=float))
        upper = np.atleast_1d(np.asarray(upper, dtype=float))
        if lower.ndim != 1 or lower.shape != upper.shape or np.any(np.isnan(lower)) or np.any(np.isnan(upper)):
            raise ValueError(f"lower and upper must be two vectors of the same length, got {lower!r} and {upper!r}")
        if not np.all(lower < upper):
            raise ValueError(f"lower must be below upper in every dimension, got {lower!r} and {upper!r}")
        self.lower, self.upper = lower, upper
        self.dim = lower.size
        self.rate = self.epsilon / (2 * self.sigma)

    @classmethod
    def mean(cls, epsilon: float, bound: float, n: int, dim: int = 1) -> KNormGradient:
        """The mean of n records in [-bound/2, bound/2]^dim: sigma = bound sqrt(dim) / n (Example 1 for dim = 1)."""
        bound = positive_finite(bound, "bound")
        n, dim = positive_int(n, "n"), positive_int(dim, "dim")
        return cls(epsilon, bound * math.sqrt(dim) / n, np.full(dim, -bound / 2), np.full(dim, bound / 2))

    @classmethod
    def count(cls, epsilon: float, n: int, sensitivity: float = 1.0, dim: int = 1) -> KNormGradient:
        """dim counts of n records each on [0, n]^dim with sigma = Delta_z = ``sensitivity``."""
        n, dim = positive_int(n, "n"), positive_int(dim, "dim")
        return cls(epsilon, sensitivity, np.zeros(dim), np.full(dim, float(n)))

    def _guarantee(self) -> Guarantee:
        return Guarantee("pufferfish", epsilon=self.epsilon, note="Theorem 10 (K-norm gradient mechanism)")

    def parameters(self) -> dict[str, float]:
        bounds = {f"lower_{k}": float(v) for k, v in enumerate(self.lower)}
        bounds.update({f"upper_{k}": float(v) for k, v in enumerate(self.upper)})
        return {"epsilon": self.epsilon, "sigma": self.sigma, **bounds}

    # -- release ---------------------------------------------------------------------------
    def release(self, x, z=None, random_seed: SeedLike = None) -> np.ndarray:
        """A release for the statistic x (shape (d,), or a scalar for d = 1)."""
        x = np.asarray(x)
        centers = self._centers(x)
        if centers.shape[0] != 1:
            raise ValueError(f"x must be one statistic of shape ({self.dim},), got shape {x.shape}")
        rng = as_generator(random_seed)
        batch = 1024
        for _ in range(MAX_CANDIDATES // batch):
            directions = rng.standard_normal((batch, self.dim))
            directions /= np.linalg.norm(directions, axis=1, keepdims=True)
            candidates = centers[0] + rng.gamma(self.dim, 1 / self.rate, size=(batch, 1)) * directions
            inside = np.flatnonzero(self._inside(candidates))
            if inside.size:
                return candidates[inside[0]].reshape(x.shape)
        raise ValueError(
            f"no candidate of {MAX_CANDIDATES} fell inside the output box: the box is too small "
            f"for rate {self.rate:g} around x = {x!r}"
        )

    # -- likelihood ------------------------------------------------------------------------
    def logpdf(self, y, x, z=None) -> np.ndarray:
        """log pi(y | x) for each row of x ((B, d), (B,) for d = 1, or one statistic); -inf outside the box."""
        y = finite_array(y, "y").reshape(-1)
        if y.size != self.dim:
            raise ValueError(f"y must have {self.dim} components, got {y.size}")
        centers = self._centers(np.asarray(x))
        distance = np.linalg.norm(centers - y, axis=1)
        log_density = -self.rate * distance - self.log_normalizer(centers)
        return log_density if self._inside(y[None])[0] else np.full(centers.shape[0], -np.inf)

    def log_bound(self, z=None, size: int = 1) -> float:
        """log M: the density's peak 1 / Z(x) is largest at a corner of the box (log Z is concave)."""
        if size != self.dim:
            raise ValueError(f"size must be the dimension {self.dim}, got {size}")
        if not self._normalizer_known():
            return math.inf
        corner = np.where(np.isfinite(self.lower), self.lower, np.where(np.isfinite(self.upper), self.upper, 0.0))
        return float(-self.log_normalizer(corner[None])[0])

    def log_normalizer(self, centers: np.ndarray) -> np.ndarray:
        """log Z(x) for centers of shape (B, d) inside the box."""
        if not self._normalizer_known():
            raise ValueError(
                f"the normalizer Z(x) depends on x and is computed for d <= 2 or an unbounded box only; "
                f"this box has d = {self.dim}: the likelihood cannot be computed here"
            )
        if np.all(np.isinf(self.lower)) and np.all(np.isinf(self.upper)):
            log_sphere = math.log(2) + self.dim / 2 * math.log(math.pi) - math.lgamma(self.dim / 2)
            value = log_sphere + math.lgamma(self.dim) - self.dim * math.log(self.rate)
            return np.full(centers.shape[0], value)
        below = centers - self.lower  # distances to the faces, >= 0
        above = self.upper - centers
        if self.dim == 1:
            mass = -np.expm1(-self.rate * below[:, 0]) - np.expm1(-self.rate * above[:, 0])
            return np.log(mass) - math.log(self.rate)
        p = np.concatenate([below[:, :1], below[:, :1], above[:, :1], above[:, :1]], axis=1)
        q = np.concatenate([below[:, 1:], above[:, 1:], below[:, 1:], above[:, 1:]], axis=1)
        return np.log(_quadrants(self.rate, p, q)) - 2 * math.log(self.rate)

    # -- helpers ---------------------------------------------------------------------------
    def _normalizer_known(self) -> bool:
        return self.dim <= 2 or bool(np.all(np.isinf(self.lower)) and np.all(np.isinf(self.upper)))

    def _inside(self, points: np.ndarray) -> np.ndarray:
        return np.all((points >= self.lower) & (points <= self.upper), axis=1)

    def _centers(self, x: np.ndarray) -> np.ndarray:
        """x as a batch (B, d) of statistics, checked to be finite and inside the box."""
        x = finite_array(x, "x")
        if self.dim == 1 and x.ndim <= 1:
            centers = x.reshape(-1, 1)
        elif x.shape[-1:] == (self.dim,) and x.ndim <= 2:
            centers = x.reshape(-1, self.dim)
        else:
            raise ValueError(f"x must have shape ({self.dim},) or (B, {self.dim}), got shape {x.shape}")
        if not np.all(self._inside(centers)):
            raise ValueError(
                f"x must lie in the output box [{self.lower}, {self.upper}]: the statistic minimizes "
                "the loss over the box"
            )
        return centers


def _quadrants(rate: float, p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """rate^2 times the integral of exp(-rate ||u||) over the rectangles [0, p] x [0, q], summed per row.

    p and q (shape (B, 4), >= 0, maybe inf) are the legs of the four quadrants around each center.
    A diagonal splits each rectangle into two triangles; in polar coordinates a triangle with leg
    a along its axis and b across is int_0^{atan(b / a)} P(2, rate a / cos(phi)) d phi.
    """
    a = np.concatenate([p, q], axis=1)
    b = np.concatenate([q, p], axis=1)
    angle = np.arctan2(b, a)  # atan(b / a); 0 when b = 0, pi / 2 when a = 0
    phi = (angle[..., None] / 2) * (_NODES + 1)
    integrals = angle / 2 * (_gamma_2_cdf(rate * a[..., None] / np.cos(phi)) @ _WEIGHTS)
    return integrals.sum(axis=1)


def _gamma_2_cdf(t: np.ndarray) -> np.ndarray:
    """P(2, t) = 1 - e^-t (1 + t), to about 1e-16 absolutely: enough for a sum of masses."""
    t = np.minimum(t, 1e3)  # P(2, t) rounds to 1 beyond; avoids inf * 0
    return -np.expm1(-t) - t * np.exp(-t)
