r"""The secret's family: the law f_theta of the query F under each theta, and the pairs Psi to hide.

Distribution privacy (Chen & Ohrimenko) asks that the release M(F) not tell theta_i from theta_j
for every pair (theta_i, theta_j) in Psi, F(Data) being drawn from f_theta. A
:class:`~.DistributionFamily` holds the laws, as :class:`~.DiscreteLaw` (a pmf on points of R^m, or
equally weighted samples: what the Wasserstein mechanisms need) or :class:`~.GaussianLaw` (mean
mu_theta and covariance Sigma_theta: what the Gaussian mechanisms need), and the pairs. Its mean
sensitivity is

.. math::

    \Delta_{E,n} = \max_{(\theta_i, \theta_j) \in \Psi} \lVert \mu_{\theta_i} - \mu_{\theta_j} \rVert_n.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping

import numpy as np

from ... import validation as _checks
from ...validation import finite_array, probability

__all__ = ["DiscreteLaw", "DistributionFamily", "GaussianLaw"]

#: Relative tolerance of the symmetry and positive semi-definiteness checks of a covariance.
COVARIANCE_TOLERANCE = 1e-10


class DiscreteLaw:
    r"""f_theta as a pmf on finitely many points of R^m (equal weights: an empirical law of samples).

    Parameters
    ----------
    points : array_like, shape (k,) or (k, m)
        The support points (a 1-D array for a scalar query).
    weights : array_like, shape (k,), optional
        Their masses, non-negative and summing to 1 (within 1e-9); equal weights when omitted.

    Examples
    --------
    >>> law = DiscreteLaw([1, 2, 3, 100], [0.6, 0.2, 0.0, 0.2])
    >>> law.dim, law.mean.round(2)
    (1, array([21.]))
    """

    def __init__(self, points, weights=None):
        points = finite_array(points, "points")
        if points.ndim == 1:
            points = points[:, None]
        if points.ndim != 2 or points.shape[0] == 0:
            raise ValueError(f"points must be a non-empty array of shape (k,) or (k, m), got shape {points.shape}")
        k = points.shape[0]
        self.points = points
        self.weights = np.full(k, 1.0 / k) if weights is None else _checks.pmf(weights, "weights", k)

    @property
    def dim(self) -> int:
        """m, the dimension of the query."""
        return self.points.shape[1]

    @property
    def mean(self) -> np.ndarray:
        """E[F], shape (m,)."""
        return self.weights @ self.points

    def deviation_quantile(self, level: float) -> float:
        r"""The smallest c' with P(||F - E F||_1 <= c') >= ``level``: Theorem 3.3's c' at level 1 - delta / 2.

        Examples
        --------
        >>> DiscreteLaw([0, 1, 2, 10]).deviation_quantile(0.75)   # mean 3.25; distances 3.25, 2.25, 1.25, 6.75
        3.25
        """
        level = probability(level, "level", open_interval=False)
        deviations = np.abs(self.points - self.mean).sum(axis=1)
        order = np.argsort(deviations)
        reached = np.cumsum(self.weights[order]) >= level - _checks.PMF_ATOL
        return float(deviations[order][np.argmax(reached)])


class GaussianLaw:
    r"""f_theta = N(mu_theta, Sigma_theta) on R^m.

    Parameters
    ----------
    mean : array_like, shape (m,)
    covariance : array_like, shape (m, m)
        Symmetric positive semi-definite.

    Examples
    --------
    >>> law = GaussianLaw([100, 101], [[22, -6], [-6, 13]])
    >>> law.dim, law.mean
    (2, array([100., 101.]))
    """

    def __init__(self, mean, covariance):
        mean = finite_array(mean, "mean")
        if mean.ndim != 1 or mean.size == 0:
            raise ValueError(f"mean must be a non-empty 1-D array, got shape {mean.shape}")
        self.mean = mean
        self.covariance = covariance_matrix(covariance, "covariance", mean.size)

    @property
    def dim(self) -> int:
        """m, the dimension of the query."""
        return self.mean.size


def covariance_matrix(values, name: str, dim: int) -> np.ndarray:
    """Return ``values`` as a symmetric positive semi-definite (dim, dim) matrix, or raise ValueError."""
    matrix = finite_array(values, name)
    if matrix.shape != (dim, dim):
        raise ValueError(f"{name} must have shape ({dim}, {dim}), got {matrix.shape}")
    scale = max(float(np.abs(matrix).max()), 1e-300)
    if np.abs(matrix - matrix.T).max() > COVARIANCE_TOLERANCE * scale:
        raise ValueError(f"{name} must be symmetric")
    matrix = (matrix + matrix.T) / 2
    if np.linalg.eigvalsh(matrix).min() < -COVARIANCE_TOLERANCE * scale:
        raise ValueError(f"{name} must be positive semi-definite")
    return matrix


class DistributionFamily:
    r"""The laws f_theta of the query under each theta, and the pairs Psi that must look alike.

    Parameters
    ----------
    laws : mapping
        theta label -> :class:`~.DiscreteLaw` or :class:`~.GaussianLaw`, all of one dimension m.
    pairs : sequence of (label, label), optional
        Psi; every ordered pair of distinct labels when omitted.

    References
    ----------
    .. [1] M. Chen and O. Ohrimenko, "Protecting global properties of datasets with distribution
        privacy mechanisms." Section 2.
    .. [2] Y. Kawamoto and T. Murakami, "Local obfuscation mechanisms for hiding probability
        distributions," ESORICS 2019.

    Examples
    --------
    >>> family = DistributionFamily({0.45: GaussianLaw([100, 101], np.eye(2)),
    ...                              0.55: GaussianLaw([99, 102], np.eye(2))})
    >>> family.pairs
    [(0.45, 0.55), (0.55, 0.45)]
    >>> round(family.mean_distance(1), 4), round(family.mean_distance(2), 4)
    (2.0, 1.4142)
    """

    def __init__(self, laws, pairs=None):
        if not isinstance(laws, Mapping) or len(laws) < 2:
            raise ValueError(f"laws must be a mapping of at least two theta labels to laws, got {laws!r}")
        for label, law in laws.items():
            if not isinstance(law, (DiscreteLaw, GaussianLaw)):
                raise ValueError(f"laws[{label!r}] must be a DiscreteLaw or a GaussianLaw, got {law!r}")
        dims = {law.dim for law in laws.values()}
        if len(dims) != 1:
            raise ValueError(f"laws must all have one dimension m (the query's), got dimensions {sorted(dims)}")
        self.laws = dict(laws)
        self.dim = dims.pop()
        if pairs is None:
            pairs = list(itertools.permutations(self.laws, 2))
        self.pairs = [tuple(pair) for pair in pairs]
        if not self.pairs:
            raise ValueError("pairs must hold at least one pair (theta_i, theta_j)")
        for pair in self.pairs:
            if len(pair) != 2 or any(label not in self.laws for label in pair) or pair[0] == pair[1]:
                raise ValueError(f"pairs must hold pairs of two different labels of laws, got {pair!r}")

    def mean_differences(self) -> np.ndarray:
        """mu_i - mu_j for each pair of Psi, shape (number of pairs, m).

        Examples
        --------
        >>> family = DistributionFamily({"a": DiscreteLaw([0, 2]), "b": DiscreteLaw([3])}, pairs=[("a", "b")])
        >>> family.mean_differences()
        array([[-2.]])
        """
        return np.array([self.laws[i].mean - self.laws[j].mean for i, j in self.pairs])

    def mean_distance(self, order: float = 2) -> float:
        r"""Delta_{E,n} = max over Psi of ||mu_i - mu_j||_n (``order`` = n: 1, 2 or inf).

        Examples
        --------
        >>> family = DistributionFamily({"a": DiscreteLaw([[0, 0]]), "b": DiscreteLaw([[3, 4]])})
        >>> family.mean_distance(1), family.mean_distance(2)
        (7.0, 5.0)
        """
        if order not in (1, 2, np.inf):
            raise ValueError(f"order must be 1, 2 or inf, got {order!r}")
        return float(np.linalg.norm(self.mean_differences(), ord=order, axis=1).max())

    def _laws_of(self, kind: type) -> dict:
        """The laws, after checking each is of ``kind`` (DiscreteLaw or GaussianLaw, as a mechanism needs)."""
        for label, law in self.laws.items():
            if not isinstance(law, kind):
                raise ValueError(
                    f"laws[{label!r}] must be a {kind.__name__} for this mechanism, got {type(law).__name__}"
                )
        return self.laws
