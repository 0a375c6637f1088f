r"""y = x + N(0, C) with a fixed positive semi-definite covariance C, possibly singular.

The Gaussian mechanisms with adversarial uncertainty add correlated noise: EigM along the
eigenvectors with sigma_k > 0, DauM along one direction v. When C has rank r < m the noise lies
in range(C) and the release in the affine subspace x + range(C); as for the Semi-DP mechanisms
(``ppdinfer.mechanisms.semidp``), ``logpdf`` is then the density with respect to Lebesgue measure
on that subspace, in orthonormal coordinates w = U^T (y - x) of range(C), and -inf off it. With
C = 0 (no noise needed) the release is x itself and the density is the point mass at x.
"""

from __future__ import annotations

import math

import numpy as np

from ...rng import SeedLike, as_generator
from ...validation import finite_array
from ..base import Mechanism
from .family import covariance_matrix

__all__ = ["CorrelatedGaussian"]

#: Eigenvalues of C below this fraction of the largest count as zero (the rank of C).
RANK_TOLERANCE = 1e-12
#: A release is in x + range(C) when its residual off the range is below this fraction of max(1, ||x||_2, ||y||_2).
SPAN_TOLERANCE = 1e-9


class CorrelatedGaussian(Mechanism):
    r"""y = x + N(0, C): correlated Gaussian noise, a density on the affine subspace x + range(C).

    With C = U diag(s) U^T, U (m x r) orthonormal, s > 0, and w = U^T (y - x),

    .. math::

        \log \pi(y \mid x) = -\frac{r}{2} \log(2 \pi) - \frac{1}{2} \sum_{k=1}^{r} \log s_k
        - \frac{1}{2} \sum_{k=1}^{r} \frac{w_k^2}{s_k}
        \quad \text{if } y - x \in \operatorname{range}(C), \qquad -\infty \text{ otherwise;}

    the component of y - x orthogonal to range(C) is zero: that part of x is released exactly.

    Parameters
    ----------
    covariance : array_like, shape (m, m)
        Symmetric positive semi-definite noise covariance.

    Examples
    --------
    >>> v = np.array([1.0, 2.0]) / np.sqrt(5)
    >>> mechanism = CorrelatedGaussian(4.0 * np.outer(v, v))       # noise 2 Y v, Y ~ N(0, 1)
    >>> mechanism.rank
    1
    >>> x = np.array([100.0, 101.0])
    >>> y = mechanism.release(x, random_seed=0)
    >>> bool(abs((y - x) @ np.array([2.0, -1.0])) < 1e-9)          # nothing moves across v
    True
    >>> mechanism.logpdf(x + v, [x, x + [1.0, 0.0]]).round(4)
    array([-1.7371,    -inf])
    """

    discrete = False

    def __init__(self, covariance):
        covariance = finite_array(covariance, "covariance")
        if covariance.ndim != 2 or covariance.shape[0] != covariance.shape[1] or covariance.size == 0:
            raise ValueError(f"covariance must be a square (m, m) matrix, got shape {covariance.shape}")
        self.covariance = covariance_matrix(covariance, "covariance", covariance.shape[0])
        values, vectors = np.linalg.eigh(self.covariance)
        keep = values > RANK_TOLERANCE * max(float(values.max()), 0.0)
        self.variances = values[keep]
        self.basis = vectors[:, keep]

    @property
    def dim(self) -> int:
        """m, the dimension of a release."""
        return self.covariance.shape[0]

    @property
    def rank(self) -> int:
        """r, the rank of C: the dimension of the subspace the noise lies in."""
        return self.variances.size

    def release(self, x, z=None, random_seed: SeedLike = None) -> np.ndarray:
        """The release x + U (sqrt(s) * N(0, I_r)) of x of shape (m,), or of each row of a batch (B, m)."""
        x = finite_array(x, "x")
        if x.shape != (self.dim,) and (x.ndim != 2 or x.shape[1] != self.dim):
            raise ValueError(f"x must have shape ({self.dim},) or (B, {self.dim}), got {x.shape}")
        rng = as_generator(random_seed)
        return x + (np.sqrt(self.variances) * rng.standard_normal((*x.shape[:-1], self.rank))) @ self.basis.T

    def logpdf(self, y, x, z=None) -> np.ndarray:
        """log pi(y | x) for one x (shape (m,)) or a batch (B, m): the density on x + range(C), -inf off it."""
        y = self._statistic(y, "y")
        x = finite_array(x, "x")
        if x.shape != (self.dim,) and (x.ndim != 2 or x.shape[1] != self.dim):
            raise ValueError(f"x must have shape ({self.dim},) or (B, {self.dim}), got {x.shape}")
        offsets = y - x.reshape(-1, self.dim)
        w = offsets @ self.basis
        residual = np.linalg.norm(offsets - w @ self.basis.T, axis=1)
        magnitude = np.maximum(np.linalg.norm(x.reshape(-1, self.dim), axis=1), np.linalg.norm(y))
        inside = residual <= SPAN_TOLERANCE * np.maximum(1.0, magnitude)  # y - x is rounded to about 1e-16 of it
        values = self.log_bound(size=self.dim) - 0.5 * (w**2 / self.variances).sum(axis=1)
        return np.where(inside, values, -np.inf)

    def log_bound(self, z=None, size: int = 1) -> float:
        """log M: the density at y = x, its largest value; ``size`` must be the dimension m."""
        if size != self.dim:
            raise ValueError(f"size must be the dimension {self.dim} of the release, got {size}")
        return float(-0.5 * self.rank * math.log(2 * math.pi) - 0.5 * np.log(self.variances).sum())

    def noise_covariance(self, dim: int) -> np.ndarray:
        """C itself; ``dim`` must be its dimension m."""
        if dim != self.dim:
            raise ValueError(f"dim: this noise has dimension {self.dim}, got {dim!r}")
        return self.covariance

    def parameters(self) -> dict[str, float]:
        """The dimension m, the rank r and the total variance trace(C)."""
        return {"dim": float(self.dim), "rank": float(self.rank), "trace": float(np.trace(self.covariance))}

    def __eq__(self, other) -> bool:
        return type(self) is type(other) and np.array_equal(self.covariance, other.covariance)

    def __hash__(self) -> int:
        return hash((type(self), self.covariance.tobytes()))

    def _statistic(self, values, name: str) -> np.ndarray:
        values = finite_array(values, name)
        if values.shape != (self.dim,):
            raise ValueError(f"{name} must have shape ({self.dim},), got {values.shape}")
        return values
