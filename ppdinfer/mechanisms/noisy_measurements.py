r"""A noisy-measurement release: linear count queries of a table, each with its own integer noise.

The 2020 Census Disclosure Avoidance System publishes, for every geographic unit, count queries of
the person table with discrete Gaussian noise (the Noisy Measurement File), plus exact invariants.
Over a latent table of non-negative integer cells :math:`n \in \mathbb{Z}_{\ge 0}^C`, with a 0/1
query matrix :math:`Q` (queries x cells) and exact invariants :math:`A n = a`,

.. math::

    y_q = (Q n)_q + e_q, \qquad e_q \sim \mathcal{N}_{\mathbb{Z}}(0, \sigma_q^2)
    \ \text{or}\ \mathrm{DLap}(s_q), \quad \text{independent},

    \log \pi(y \mid n) = \sum_q \log p_q\big(y_q - (Q n)_q\big) \ \text{if}\ A n = a, \ -\infty \ \text{otherwise}.

Privacy (add or remove one person, who is in exactly one cell c and changes by 1 every query that
contains c): by zCDP composition of the discrete Gaussian (Canonne, Kamath & Steinke 2020, Theorem
14; Bun & Steinke 2016, Lemma 2.3)

.. math::

    \rho = \max_c \sum_{q \ni c} \frac{1}{2 \sigma_q^2},

and with discrete Laplace noise of scale s_q, :math:`\varepsilon = \max_c \sum_{q \ni c} 1 / s_q`. The
Bureau's own accounting uses replace-one neighbours (a person changes category), whose bound is at
most twice this rho.

References
----------
Abowd, J. M. et al. (2022). The 2020 Census Disclosure Avoidance System TopDown Algorithm.
Harvard Data Science Review, Special Issue 2.
Canonne, C. L., Kamath, G. & Steinke, T. (2020). The discrete Gaussian for differential privacy. NeurIPS.
Bun, M. & Steinke, T. (2016). Concentrated differential privacy: simplifications, extensions, and
lower bounds. TCC.
"""

from __future__ import annotations

import math

import numpy as np
import scipy.sparse as sp

from ..invariants import checked_invariants
from ..rng import SeedLike, as_generator
from ..validation import integer_valued, nonnegative_counts
from .base import Mechanism
from .gaussian import DiscreteGaussian
from .guarantee import Guarantee
from .laplace import DiscreteLaplace

__all__ = ["NoisyMeasurements"]

_NOISES = ("gaussian", "laplace")


def _query_matrix(queries) -> sp.csr_matrix:
    """The queries as a CSR matrix of 0/1 integers, refusing any other entry (named by row and cell)."""
    try:
        matrix = sp.csr_matrix(queries)
    except (TypeError, ValueError) as error:
        raise ValueError(f"queries must be a 2-d array or scipy sparse matrix: {error}") from None
    if matrix.ndim != 2 or matrix.shape[0] == 0 or matrix.shape[1] == 0:
        raise ValueError(f"queries must be a non-empty 2-d matrix (queries x cells), got shape {matrix.shape}")
    matrix = matrix.copy()
    matrix.sum_duplicates()
    matrix.eliminate_zeros()
    data = np.asarray(matrix.data, dtype=float)
    bad = np.flatnonzero(data != 1)
    if bad.size:
        row = int(np.searchsorted(matrix.indptr, bad[0], side="right") - 1)
        raise ValueError(
            f"queries: query {row} has entry {matrix.data[bad[0]].item()} at cell {int(matrix.indices[bad[0]])}; "
            "every query must be a 0/1 sum of cells"
        )
    empty = np.flatnonzero(np.diff(matrix.indptr) == 0)
    if empty.size:
        raise ValueError(f"queries: query {int(empty[0])} sums no cell")
    out = sp.csr_matrix((np.ones(matrix.nnz, dtype=np.int64), matrix.indices, matrix.indptr), shape=matrix.shape)
    out.sort_indices()
    return out


def _scales(sigmas, n_queries: int) -> np.ndarray:
    arr = np.asarray(sigmas, dtype=float)
    if arr.ndim == 0:
        arr = np.full(n_queries, float(arr))
    if arr.shape != (n_queries,):
        raise ValueError(f"sigmas must be a scalar or hold one scale per query ({n_queries}), got shape {arr.shape}")
    bad = np.flatnonzero(~np.isfinite(arr) | (arr <= 0))
    if bad.size:
        raise ValueError(
            f"sigmas: query {int(bad[0])} has noise scale {float(arr[bad[0]])}; scales must be finite and > 0"
        )
    return arr


def _families(sigmas: np.ndarray, noise: str) -> dict:
    """One noise law per distinct scale (DiscreteGaussian(sigma), or DiscreteLaplace of scale s), each
    checked as it is built: a scale whose log density double precision cannot compute (a NaN at
    sigma = 1e-160, an overflow at 1e155) is refused, naming the query and the range."""
    families = {}
    for scale in np.unique(sigmas):
        try:
            families[scale] = (
                DiscreteGaussian(float(scale)) if noise == "gaussian" else DiscreteLaplace(1.0 / float(scale))
            )
        except ValueError as error:
            query = int(np.flatnonzero(sigmas == scale)[0])
            raise ValueError(f"sigmas: query {query} has noise scale {float(scale)!r}: {error}") from None
    return families


class NoisyMeasurements(Mechanism):
    r"""Noisy count queries of a table of non-negative integer cells, with exact invariants.

    ``y = Q n + e``: each query q (a 0/1 row of ``queries``) gets independent discrete Gaussian noise
    of scale sigma_q (or discrete Laplace noise P(e) proportional to exp(-|e| / s_q)). The confidential
    value x is the cell vector n (shape (C,)); the release y has one entry per query (shape (Q,)).
    Releases are drawn exactly (Canonne, Kamath & Steinke 2020).

    .. math::

        \log \pi(y \mid n) = \sum_q \Big[ \log Z_q^{-1} - \frac{(y_q - (Q n)_q)^2}{2 \sigma_q^2} \Big],
        \qquad \rho = \max_c \sum_{q \ni c} \frac{1}{2 \sigma_q^2},

    and -inf where ``A n != a``.

    Parameters
    ----------
    queries : array_like or scipy.sparse matrix
        (Q, C) 0/1 query matrix; every row sums at least one cell.
    sigmas : float or array_like
        One noise scale per query, or one for all: for Gaussian noise in [1e-100, 1e15] (those of
        :class:`DiscreteGaussian`, whose log density double precision computes), for Laplace noise any
        whose rate 1 / s is finite; refused otherwise, naming the query.
    noise : {'gaussian', 'laplace'}
        The noise family.
    invariants : tuple (A, a), optional
        Exact linear invariants A n = a (integer A and a), published without noise; refused unless some
        table of non-negative integer cells satisfies them (:func:`ppdinfer.invariants.checked_invariants`).

    Examples
    --------
    >>> import numpy as np
    >>> Q = np.array([[1, 1, 1, 1], [1, 1, 0, 0], [1, 0, 0, 0], [0, 0, 1, 0]])
    >>> mech = NoisyMeasurements(Q, [1.0, 2.0, 2.0, 2.0], invariants=(np.ones((1, 4)), [10]))
    >>> y = mech.release([3, 2, 4, 1], random_seed=0)
    >>> y.shape, mech.logpdf(y, [[3, 2, 4, 1], [3, 2, 4, 2]]).shape
    ((4,), (2,))
    >>> bool(np.isneginf(mech.logpdf(y, [3, 2, 4, 2])[0]))     # breaks the invariant total 10
    True
    >>> round(mech.guarantee().rho, 4)                         # cell 0: 1/2 + 2 * 1/8
    0.75

    References
    ----------
    Abowd, J. M. et al. (2022). The 2020 Census Disclosure Avoidance System TopDown Algorithm. HDSR.
    Canonne, C. L., Kamath, G. & Steinke, T. (2020). The discrete Gaussian for differential privacy.
    Bun, M. & Steinke, T. (2016). Concentrated differential privacy.
    """

    discrete = True

    def __init__(self, queries, sigmas, noise: str = "gaussian", invariants=None):
        if noise not in _NOISES:
            raise ValueError(f"noise must be one of {_NOISES}, got {noise!r}")
        self.noise = noise
        self.queries = _query_matrix(queries)
        self.sigmas = _scales(sigmas, self.queries.shape[0])
        self.invariant_matrix, self.invariant_values = (
            (None, None) if invariants is None else checked_invariants(invariants, self.queries.shape[1])
        )
        self._families = _families(self.sigmas, noise)
        self.power = 2 if noise == "gaussian" else 1
        self.rates = np.array([self._families[s].rate for s in self.sigmas])
        self.log_norms = np.array([self._families[s].log_norm for s in self.sigmas])
        self._by_cell = self.queries.tocsc()

    @property
    def n_queries(self) -> int:
        """The number of queries (the length of a release)."""
        return int(self.queries.shape[0])

    @property
    def n_cells(self) -> int:
        """The number of cells (the length of x)."""
        return int(self.queries.shape[1])

    def cell_loss(self) -> np.ndarray:
        """For each cell c, the sum over the queries containing c of 1 / (2 sigma_q^2) (Gaussian) or 1 / s_q.

        Examples
        --------
        >>> NoisyMeasurements([[1, 1], [1, 0]], [1.0, 2.0]).cell_loss().tolist()
        [0.625, 0.5]
        """
        per_query = self.rates if self.noise == "gaussian" else 1.0 / self.sigmas
        return np.asarray(self._by_cell.T @ per_query).ravel()

    def _guarantee(self) -> Guarantee:
        loss = float(self.cell_loss().max())
        note = "add/remove one person (in one cell); replace-one neighbours at most double it"
        if self.noise == "gaussian":
            return Guarantee("zcdp", rho=loss, sensitivity=1.0, note=note)
        return Guarantee("pure", epsilon=loss, sensitivity=1.0, note=note)

    def _check_x(self, x) -> np.ndarray:
        x = integer_valued(x, "x")
        if x.ndim not in (1, 2) or x.shape[-1] != self.n_cells:
            raise ValueError(f"x must have shape ({self.n_cells},) or (B, {self.n_cells}), got shape {x.shape}")
        return x

    def _check_y(self, y) -> np.ndarray:
        y = integer_valued(y, "y")
        if y.shape != (self.n_queries,):
            raise ValueError(f"y must have shape ({self.n_queries},) (one value per query), got shape {y.shape}")
        return y

    def release_shape(self, x_shape) -> tuple[int, ...]:
        """One value per query, (n_queries,), for cells of shape (n_cells,).

        Examples
        --------
        >>> mech = NoisyMeasurements([[1, 1, 0], [0, 1, 1]], 2.0)
        >>> mech.release_shape((3,))
        (2,)
        """
        if tuple(x_shape) != (self.n_cells,):
            raise ValueError(f"x must have shape ({self.n_cells},) (one count per cell), got shape {tuple(x_shape)}")
        return (self.n_queries,)

    def satisfies_invariants(self, x) -> np.ndarray:
        """Whether each row of x (or x) satisfies A x = a (all True without invariants)."""
        x2 = np.atleast_2d(self._check_x(x))
        if self.invariant_matrix is None:
            return np.ones(x2.shape[0], dtype=bool)
        return np.all(x2 @ self.invariant_matrix.T == self.invariant_values[None, :], axis=1)

    def release(self, x, z=None, random_seed: SeedLike = None, *, secure: bool = False) -> np.ndarray:
        """The noisy query values Q x + e (int64, shape (Q,)); x must be counts satisfying the invariants."""
        x = nonnegative_counts(x, "x")
        if x.shape != (self.n_cells,):
            raise ValueError(f"x must have shape ({self.n_cells},), got shape {x.shape}")
        if not self.satisfies_invariants(x)[0]:
            raise ValueError("x breaks the invariants A x = a")
        rng = as_generator(random_seed)
        exact = np.asarray(self.queries @ x, dtype=np.int64)
        noise = np.empty(self.n_queries, dtype=np.int64)
        for scale, family in self._families.items():
            where = np.flatnonzero(self.sigmas == scale)
            noise[where] = family.release(np.zeros(where.size, dtype=np.int64), random_seed=rng, secure=secure)
        return exact + noise

    def logpdf(self, y, x, z=None) -> np.ndarray:
        """log pi(y | x): y of shape (Q,), x of shape (C,) or (B, C); shape (B,), -inf off the invariants."""
        y = self._check_y(y)
        x = self._check_x(x)
        x2 = np.atleast_2d(x)
        values = np.asarray(self.queries @ x2.T.astype(float)).T  # (B, Q)
        residual = np.abs(y[None, :] - values)
        out = (self.log_norms.sum() - (residual**self.power) @ self.rates).astype(float)
        if self.invariant_matrix is not None:
            out[~self.satisfies_invariants(x2)] = -np.inf
        return out

    def log_bound(self, z=None, size: int | None = None) -> float:
        """The sum of the queries' log normalizers (zero noise everywhere); ``size`` must be Q."""
        if size is not None and size != 1 and size != self.n_queries:
            raise ValueError(f"size must be the number of queries {self.n_queries}, got {size}")
        return float(self.log_norms.sum())

    def parameters(self) -> dict:
        return {
            "noise": self.noise,
            "n_queries": self.n_queries,
            "n_cells": self.n_cells,
            "n_invariants": 0 if self.invariant_matrix is None else int(self.invariant_matrix.shape[0]),
            "sigma_min": float(self.sigmas.min()),
            "sigma_max": float(self.sigmas.max()),
        }

    def noise_scale(self, x=None, z=None) -> float:
        """The root mean square noise standard deviation over queries (continuous approximation)."""
        if self.noise == "gaussian":
            return float(math.sqrt(np.mean(self.sigmas**2)))
        return float(math.sqrt(2.0 * np.mean(self.sigmas**2)))

    def __eq__(self, other) -> bool:
        if type(self) is not type(other) or self.parameters() != other.parameters():
            return False
        same_a = (self.invariant_matrix is None) or (
            np.array_equal(self.invariant_matrix, other.invariant_matrix)
            and np.array_equal(self.invariant_values, other.invariant_values)
        )
        return bool(same_a and (self.queries != other.queries).nnz == 0 and np.array_equal(self.sigmas, other.sigmas))

    def __hash__(self) -> int:
        return hash((type(self), tuple(self.parameters().items())))

    def __repr__(self) -> str:
        p = self.parameters()
        return (
            f"NoisyMeasurements({p['n_queries']} queries over {p['n_cells']} cells, noise={self.noise!r}, "
            f"sigma in [{p['sigma_min']:.4g}, {p['sigma_max']:.4g}], {p['n_invariants']} invariants)"
        )
