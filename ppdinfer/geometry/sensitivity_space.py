r"""The sensitivity space of a statistic released with invariants, and the norms built on it.

With invariants t = T(X) public, a statistic phi only moves, between two conforming datasets
X and X' that count as neighbours, by a vector of

.. math::

    S = \{\phi(X) - \phi(X') : T(X) = T(X') = t,\ X \sim X'\},

which for linear invariants lies in a proper subspace (for a table with public one-way margins,
the tables with zero margins). :class:`SensitivitySpace` holds a symmetric finite S (the
generators g_1, ..., g_m and their negatives) and derives what a Semi-DP mechanism needs: an
orthonormal basis of span(S), the projection onto it, the l1 / l2 / l_inf sensitivities, and the
gauge of the convex hull K = conv(S),

.. math::

    \lVert v \rVert_K = \min\{\lambda \ge 0 : v \in \lambda K\}
    = \min\Bigl\{\textstyle\sum_i (\lambda_i^+ + \lambda_i^-) :
      \sum_i (\lambda_i^+ - \lambda_i^-) g_i = v,\ \lambda^\pm \ge 0\Bigr\},

a linear program (:meth:`SensitivitySpace.gauge_lp`); :meth:`SensitivitySpace.gauge` evaluates
the same norm from the facets of K, computed once, for batches of points.
"""

from __future__ import annotations

import functools

import numpy as np
from scipy import optimize, spatial

from ..validation import finite_array

__all__ = ["SensitivitySpace"]

#: Singular values below this fraction of the largest are treated as zero (rank of S).
RANK_TOLERANCE = 1e-10

#: The largest predicted cost m^(s/2) (m vectors, rank s) for which the hull of S is built. Qhull
#: cannot be interrupted (Ctrl-C waits for it), so larger hulls are refused before it starts. Measured
#: on one core: 72^4.5 = 2.3e8 (4 x 4 rectangles) and 180^4 = 1.0e9 (3 x 5, three changes) take about
#: 3 s; 90^5 = 5.9e9 (3 x 6 rectangles) took 130 s and 264^4.5 = 7.6e10 (4 x 4, three changes) over
#: 5 minutes. Raise it at your own risk.
HULL_COST_LIMIT = 2e9


class SensitivitySpace:
    r"""A finite, symmetric set S of sensitivity vectors in R^d: its span, norms and hull gauge.

    Parameters
    ----------
    vectors : array_like, shape (m, d)
        Differences phi(X) - phi(X') over neighbouring conforming datasets; zero rows are
        dropped, negatives added and duplicates removed (S is symmetric by construction).
    shape : tuple of int, optional
        The shape of one statistic (e.g. ``(r, c)`` for a table); the vectors are flat.

    Notes
    -----
    With B (d x s) an orthonormal basis of span(S), s = rank, P = B B^T, and the sensitivities
    Delta_q = max over u in S of ||u||_q. Points of span(S) are handled in basis coordinates
    w = B^T v, where K has the facets {w : h_j . w <= 1} (from Qhull for s >= 2; K is an
    interval for s = 1), so ||v||_K = max_j h_j . w for v in span(S) and +inf outside it.

    References
    ----------
    .. [1] Y. H. Cho and J. Awan, "Formal privacy guarantees with invariant statistics." Section 4.
    .. [2] M. Hardt and K. Talwar, "On the geometry of differential privacy," STOC 2010.

    Examples
    --------
    >>> import numpy as np
    >>> from ppdinfer.privacy import SensitivitySpace
    >>> space = SensitivitySpace([[1, -1, -1, 1]], shape=(2, 2))   # a 2 x 2 table, public margins
    >>> space.rank, space.l1, space.l2, space.linf
    (1, 4.0, 2.0, 1.0)
    >>> np.allclose(space.projection, np.outer([1, -1, -1, 1], [1, -1, -1, 1]) / 4)
    True
    >>> space.gauge([[2.5, -2.5, -2.5, 2.5], [1, 0, 0, 0]])     # outside the span: inf
    array([2.5, inf])
    """

    def __init__(self, vectors, shape=None):
        vectors = finite_array(vectors, "vectors")
        if vectors.ndim != 2 or vectors.shape[1] == 0:
            raise ValueError(f"vectors must be a 2-D array (m, d), got shape {vectors.shape}")
        d = vectors.shape[1]
        self.shape = (d,) if shape is None else tuple(int(k) for k in shape)
        if int(np.prod(self.shape)) != d:
            raise ValueError(f"shape {self.shape} does not hold vectors of length {d}")
        vectors = vectors[np.any(vectors != 0, axis=1)]
        if vectors.shape[0] == 0:
            raise ValueError("vectors must hold at least one nonzero difference (S = {0} needs no noise)")
        both = np.unique(np.vstack([vectors, -vectors]), axis=0)
        self.vectors = both
        _, singular, vt = np.linalg.svd(both, full_matrices=False)
        rank = int(np.sum(singular > RANK_TOLERANCE * singular[0]))
        self.basis = vt[:rank].T.copy()
        self.rank = rank
        self.dim = d

    def __repr__(self) -> str:
        return f"SensitivitySpace({self.vectors.shape[0]} vectors, shape={self.shape}, rank={self.rank})"

    @property
    def projection(self) -> np.ndarray:
        """P = B B^T, the orthogonal projection of R^d onto span(S)."""
        return self.basis @ self.basis.T

    @property
    def l1(self) -> float:
        """Delta_1 = max over u in S of ||u||_1."""
        return float(np.abs(self.vectors).sum(axis=1).max())

    @property
    def l2(self) -> float:
        """Delta_2 = max over u in S of ||u||_2; each row scaled by a power of two first (no overflow, exact)."""
        scale = np.ldexp(1.0, np.frexp(np.abs(self.vectors).max(axis=1))[1])
        return float((scale * np.sqrt(((self.vectors / scale[:, None]) ** 2).sum(axis=1))).max())

    @property
    def linf(self) -> float:
        """Delta_inf = max over u in S of ||u||_inf."""
        return float(np.abs(self.vectors).max())

    @property
    def hull_cost(self) -> float:
        r"""The predicted cost m^(s/2) of Qhull's hull of S (m vectors of rank s), compared with `HULL_COST_LIMIT`.

        A polytope with m vertices in s dimensions has up to about m^(s/2) facets (the upper bound
        theorem), and Qhull's time follows their number; the measured times are in the note on
        `HULL_COST_LIMIT`. The facets, the volume and the gauge need the hull; a space whose
        cost exceeds the limit refuses them (ValueError) instead of running Qhull for minutes.

        Examples
        --------
        >>> from ppdinfer.privacy import SensitivitySpace
        >>> SensitivitySpace([[1, 0, 0], [0, 1, 0]]).hull_cost        # 4 vectors of rank 2
        4.0
        """
        return float(self.vectors.shape[0]) ** (self.rank / 2)

    @functools.cached_property
    def _hull(self) -> spatial.ConvexHull | None:
        """Qhull's hull of S in basis coordinates (None for rank 1), built on first use; refused past the cost limit."""
        if self.rank == 1:
            return None
        if self.hull_cost > HULL_COST_LIMIT:
            raise ValueError(
                f"the convex hull of S ({self.vectors.shape[0]} vectors of rank {self.rank}) is out of reach: its "
                f"predicted cost {self.vectors.shape[0]}^({self.rank}/2) = {self.hull_cost:.2g} exceeds "
                f"HULL_COST_LIMIT = {HULL_COST_LIMIT:.2g} (Qhull would run for minutes or hours and cannot be "
                f"interrupted); the facets, volume and gauge need it. A Gaussian release needs only the span and "
                f"Delta_2 (SemiDPGaussian)"
            )
        return spatial.ConvexHull(self.vectors @ self.basis)

    @functools.cached_property
    def _facets(self) -> np.ndarray:
        """Rows h_j with K = {w : h_j . w <= 1} in basis coordinates."""
        if self._hull is None:
            return np.array([[1.0], [-1.0]]) / np.abs(self.vectors @ self.basis).max()
        normals, offsets = self._hull.equations[:, :-1], self._hull.equations[:, -1]  # normal . w + offset <= 0
        return np.unique(np.round(normals / (-offsets)[:, None], 12), axis=0)

    @property
    def volume(self) -> float:
        """The s-dimensional volume of K = conv(S) in basis coordinates (a length for s = 1)."""
        if self._hull is None:
            return float(2 * np.abs(self.vectors @ self.basis).max())
        return float(self._hull.volume)

    def coordinates(self, v) -> np.ndarray:
        """w = B^T v: the basis coordinates of (the projection of) each row of ``v``."""
        return np.asarray(v, dtype=float).reshape(-1, self.dim) @ self.basis

    def in_span(self, v, atol: float = 1e-9) -> np.ndarray:
        """Whether each row of ``v`` lies in span(S), to ``atol`` in the l2 norm."""
        v = np.asarray(v, dtype=float).reshape(-1, self.dim)
        residual = v - (v @ self.basis) @ self.basis.T
        return np.sqrt((residual**2).sum(axis=1)) <= atol * np.maximum(1.0, np.sqrt((v**2).sum(axis=1)))

    def gauge(self, v) -> np.ndarray:
        r"""||v||_K for each row of ``v`` (shape (n, d) or (d,)): max_j h_j . B^T v; +inf off the span."""
        v = np.asarray(v, dtype=float).reshape(-1, self.dim)
        values = self.gauge_coordinates(v @ self.basis)
        values[~self.in_span(v)] = np.inf
        return values

    def gauge_coordinates(self, w) -> np.ndarray:
        """||B w||_K for basis coordinates w (shape (n, s)): the largest facet value, at least 0."""
        w = np.asarray(w, dtype=float).reshape(-1, self.rank)
        return np.maximum((w @ self._facets.T).max(axis=1), 0.0)

    def gauge_lp(self, v) -> float:
        r"""||v||_K by the linear program of the module docstring (the facet-free reference)."""
        v = np.asarray(v, dtype=float).reshape(self.dim)
        if not self.in_span(v)[0]:
            return float("inf")
        generators = self.vectors  # symmetric, so lambda >= 0 over S covers the +- pairs
        result = optimize.linprog(
            np.ones(generators.shape[0]), A_eq=generators.T, b_eq=v, bounds=(0, None), method="highs"
        )
        if result.status != 0:
            raise RuntimeError(f"the gauge LP failed: {result.message}")
        return float(result.fun)

    def box(self) -> np.ndarray:
        """Half-widths of the smallest box around K in basis coordinates: max over S of |w_i|."""
        return np.abs(self.vectors @ self.basis).max(axis=0)
