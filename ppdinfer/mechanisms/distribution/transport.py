r"""W_inf and (W, delta)-closeness of two discrete laws on R^m with the L1 ground metric.

Both are bottleneck transport problems. For a threshold t, let T(t) be the largest mass a
partial coupling of P and Q can move along pairs (x, y) with ||x - y||_1 <= t (a max-flow,
solved as a linear program by HiGHS). A partial coupling completes to a full one, so P and Q are
(t, delta)-close (Definition 3.2) exactly when T(t) >= 1 - delta, and

.. math::

    W_\infty(P, Q) = \min\{t : T(t) = 1\}, \qquad
    W_\delta(P, Q) = \min\{t : T(t) \ge 1 - \delta\}.

T is non-decreasing and only changes at the pairwise distances, so both minima are found by
bisection over the sorted distances (about log2(k1 k2) linear programs). On the line (m = 1)
:func:`~.wasserstein_inf` uses the exact quantile coupling of ``ppdinfer.privacy.w_inf`` instead.
"""

from __future__ import annotations

import numpy as np
from scipy import optimize, sparse

from ...geometry import w_inf
from ...validation import probability
from .family import DiscreteLaw

__all__ = ["closeness_radius", "transportable_mass", "wasserstein_inf"]

#: Mass below which a shortfall of T(t) counts as rounding in the linear program, not as real mass.
MASS_TOLERANCE = 1e-9


def _pair(a, b) -> tuple[DiscreteLaw, DiscreteLaw]:
    for name, law in (("a", a), ("b", b)):
        if not isinstance(law, DiscreteLaw):
            raise ValueError(f"{name} must be a DiscreteLaw, got {law!r}")
    if a.dim != b.dim:
        raise ValueError(f"a and b must be laws on the same space R^m, got dimensions {a.dim} and {b.dim}")
    return a, b


def _distances(a: DiscreteLaw, b: DiscreteLaw) -> np.ndarray:
    """||x - y||_1 for every support point x of a (rows) and y of b (columns)."""
    return np.abs(a.points[:, None, :] - b.points[None, :, :]).sum(axis=2)


def _flow(a: DiscreteLaw, b: DiscreteLaw, allowed: np.ndarray) -> float:
    """The largest mass of a partial coupling of a and b supported on the ``allowed`` pairs."""
    rows, cols = np.nonzero(allowed)
    n_edges = rows.size
    if n_edges == 0:
        return 0.0
    edges = np.arange(n_edges)
    constraints = sparse.vstack(
        [
            sparse.csr_matrix((np.ones(n_edges), (rows, edges)), shape=(a.weights.size, n_edges)),
            sparse.csr_matrix((np.ones(n_edges), (cols, edges)), shape=(b.weights.size, n_edges)),
        ]
    )
    result = optimize.linprog(
        -np.ones(n_edges),
        A_ub=constraints,
        b_ub=np.concatenate([a.weights, b.weights]),
        bounds=(0, None),
        method="highs",
    )
    if result.status != 0:
        raise RuntimeError(f"the transport linear program failed: {result.message}")
    return float(-result.fun)


def transportable_mass(a, b, threshold: float) -> float:
    r"""T(t): the most mass a coupling of ``a`` and ``b`` moves by at most ``threshold`` in L1 distance.

    .. math::

        T(t) = \max \Bigl\{ \textstyle\sum_{x, y} \gamma(x, y) :
        \gamma \ge 0,\ \gamma(x, y) = 0 \text{ if } \lVert x - y \rVert_1 > t,\
        \sum_y \gamma(x, y) \le P(x),\ \sum_x \gamma(x, y) \le Q(y) \Bigr\}.

    Examples
    --------
    >>> mu = DiscreteLaw([1, 2, 3, 100], [0.6, 0.2, 0.0, 0.2])
    >>> nu = DiscreteLaw([1, 2, 3, 100], [0.4, 0.3, 0.2, 0.1])
    >>> [round(transportable_mass(mu, nu, t), 4) for t in (0, 1, 97)]
    [0.7, 0.9, 1.0]
    """
    a, b = _pair(a, b)
    return _flow(a, b, _distances(a, b) <= float(threshold))


def closeness_radius(a, b, delta: float = 0.0) -> float:
    r"""The smallest W for which ``a`` and ``b`` are (W, delta)-close (Definition 3.2); W_inf at delta = 0.

    .. math::

        W_\delta(P, Q) = \min\{t : T(t) \ge 1 - \delta\},

    found by bisection over the pairwise L1 distances (see the module docstring); a shortfall of
    T below ``MASS_TOLERANCE`` (1e-9) counts as rounding.

    See Also
    --------
    ppdinfer.mechanisms.distribution.wasserstein_inf : Its value at delta = 0.
    ppdinfer.mechanisms.distribution.transportable_mass : The mass a coupling moves.

    References
    ----------
    .. [1] M. Chen and O. Ohrimenko, "Protecting global properties of datasets with distribution
        privacy mechanisms." Definition 3.2.

    Examples
    --------
    >>> mu = DiscreteLaw([1, 2, 3, 100], [0.6, 0.2, 0.0, 0.2])   # Figure 1 of the paper
    >>> nu = DiscreteLaw([1, 2, 3, 100], [0.4, 0.3, 0.2, 0.1])
    >>> closeness_radius(mu, nu), closeness_radius(mu, nu, delta=0.1)
    (97.0, 1.0)
    """
    a, b = _pair(a, b)
    delta = 0.0 if delta == 0 else probability(delta, "delta")
    distances = _distances(a, b)
    candidates = np.unique(distances)
    low, high = 0, candidates.size - 1  # the largest distance allows every pair: T = 1
    while low < high:
        middle = (low + high) // 2
        if _flow(a, b, distances <= candidates[middle]) >= 1 - delta - MASS_TOLERANCE:
            high = middle
        else:
            low = middle + 1
    return float(candidates[low])


def wasserstein_inf(a, b) -> float:
    r"""W_inf(a, b) with the L1 ground metric: exact on the line, by bisection and linear programs in R^m.

    .. math::

        W_\infty(P, Q) = \inf_{\gamma \in \Gamma(P, Q)}
        \max_{(x, y) \in \operatorname{supp} \gamma} \lVert x - y \rVert_1.

    See Also
    --------
    ppdinfer.mechanisms.distribution.closeness_radius : Its approximate version.
    ppdinfer.privacy.w_inf : W_inf of pmfs on a common support.

    References
    ----------
    .. [1] M. Chen and O. Ohrimenko, "Protecting global properties of datasets with distribution
        privacy mechanisms." Section 3.
    .. [2] S. Song, Y. Wang and K. Chaudhuri, "Pufferfish privacy mechanisms for correlated data,"
        SIGMOD 2017.

    Examples
    --------
    >>> mu = DiscreteLaw([1, 2, 3, 100], [0.6, 0.2, 0.0, 0.2])
    >>> nu = DiscreteLaw([1, 2, 3, 100], [0.4, 0.3, 0.2, 0.1])
    >>> wasserstein_inf(mu, nu)
    97.0
    >>> wasserstein_inf(DiscreteLaw([[0, 0], [1, 1]]), DiscreteLaw([[1, 0], [3, 1]]))
    2.0
    """
    a, b = _pair(a, b)
    if a.dim > 1:
        return closeness_radius(a, b)
    support, where = np.unique(np.concatenate([a.points[:, 0], b.points[:, 0]]), return_inverse=True)
    p, q = np.zeros(support.size), np.zeros(support.size)
    np.add.at(p, where[: a.weights.size], a.weights)
    np.add.at(q, where[a.weights.size :], b.weights)
    return w_inf(p, q, support)
