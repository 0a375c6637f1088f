r"""The Bureau's estimators from a noisy-measurement file: tree GLS and TopDown-like post-processing.

**GLS.** With s_u in R^K the table of unit u (the sum of its leaves' cells), every measurement of u
is ``y_u = H_u s_u + e_u``, e_u ~ N(0, R_u) (R_u diagonal, the queries' sigma^2; an invariant is a row
of zero variance), and ``s_u = sum_{c child of u} s_c``. The weighted least squares estimate of all
cells is the posterior mean under a flat prior on the leaves, computed in two passes over the tree,
O(units x K^3), never a dense solve:

- upward: a leaf's subtree estimate is ``P_l = (H_l^T R_l^{-1} H_l)^{-1}``, ``s_l = P_l H_l^T R_l^{-1} y_l``
  (the finest level must measure every cell); an inner node sums its children's estimates
  (``s = sum s_c``, ``P = sum P_c``) and combines the sum with its own measurements by inverse-variance
  weighting (a Kalman update: ``G = P H^T (H P H^T + R)^{-1}``, ``s_u = s + G (y_u - H s)``,
  ``P_u = P - G H P``);
- downward: the root's estimate is final; each child takes its share of its parent's correction in
  proportion to its variance, ``s~_c = s_c + P_c P^+ (s~_u - s)``, with
  ``P~_c = P_c - P_c P^+ P_c + P_c P^+ P~_u P^+ P_c``.

This is Hay et al.'s (2010) two-pass consistent estimator generalised to per-query variances and a
K-cell table per node (Cumings-Menon et al. describe the same structure for the 2020 noisy measurements).

**TopDown.** Level by level from the root: the root's table by non-negative weighted least squares
(the invariant total kept), then for each unit the children's tables by non-negative weighted least
squares given the unit's fixed table (the children's cells of each category sum to the parent's),
each followed by largest-remainder controlled rounding that keeps the parent's sums. This follows
the structure of the Bureau's TopDown algorithm (Abowd et al. 2022), not its production optimizer
(multi-pass, query ordering, Gurobi).

References
----------
Abowd, J. M. et al. (2022). The 2020 Census Disclosure Avoidance System TopDown Algorithm.
Harvard Data Science Review, Special Issue 2.
Hay, M., Rastogi, V., Miklau, G. & Suciu, D. (2010). Boosting the accuracy of differentially private
histograms through consistency. PVLDB 3(1).
Cormode, G., Procopiuc, C., Srivastava, D., Shen, E. & Yu, T. (2012). Differentially private spatial
decompositions. ICDE.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.optimize import lsq_linear

from .geography import CensusQueries

__all__ = ["GLSResult", "gls_estimate", "largest_remainder", "topdown_estimate"]


@dataclass(frozen=True, eq=False)
class GLSResult:
    """The GLS estimates: every query's implied value and sd, every cell's, every unit's table and covariance.

    Examples
    --------
    >>> import numpy as np
    >>> from ppdinfer.census import Geography, TableSpec, census_queries
    >>> geo = Geography(["t", "b1", "b2"], [None, "t", "t"])
    >>> q = census_queries(geo, TableSpec(("a",)), {"level0": ["total"], "level1": ["detailed"]})
    >>> fit = gls_estimate(q, [10, 4, 5], 1.0)
    >>> np.round(fit.query_estimate, 4).tolist()     # the residual 1 split evenly over 3 equal variances
    [9.6667, 4.3333, 5.3333]
    """

    query_estimate: np.ndarray
    query_sd: np.ndarray
    cell_estimate: np.ndarray
    cell_sd: np.ndarray
    unit_estimate: np.ndarray
    unit_covariance: np.ndarray


def _checked(census: CensusQueries, y, sigmas):
    if not isinstance(census, CensusQueries):
        raise ValueError(f"census must be CensusQueries (from census_queries), got {type(census).__name__}")
    y = np.asarray(y, dtype=float)
    if y.shape != (census.n_queries,) or not np.all(np.isfinite(y)):
        raise ValueError(f"y must hold {census.n_queries} finite values (one per query), got shape {y.shape}")
    sigmas = np.asarray(sigmas, dtype=float)
    if sigmas.ndim == 0:
        sigmas = np.full(census.n_queries, float(sigmas))
    if sigmas.shape != (census.n_queries,):
        raise ValueError(f"sigmas must be a scalar or one value per query ({census.n_queries}), got {sigmas.shape}")
    bad = np.flatnonzero(~np.isfinite(sigmas) | (sigmas <= 0))
    if bad.size:
        raise ValueError(f"sigmas: query {int(bad[0])} has noise scale {float(sigmas[bad[0]])}; must be finite and > 0")
    return y, sigmas


def _unit_totals(census: CensusQueries, invariants) -> dict[int, float]:
    """Invariant rows that are unit totals, as {unit index: total}; any other row is refused."""
    if invariants is None:
        return {}
    A, a = invariants
    A = np.atleast_2d(np.asarray(A.toarray() if hasattr(A, "toarray") else A))
    a = np.asarray(a).reshape(-1)
    geo, width = census.geography, census.table.n_cells
    out = {}
    for r in range(A.shape[0]):
        support = np.flatnonzero(A[r])
        if support.size == 0 or np.any(A[r, support] != 1):
            raise ValueError(f"invariants: row {r} is not the total of a unit (a 0/1 sum of one unit's cells)")
        lo, hi = support[0] // width, support[-1] // width + 1
        candidates = np.flatnonzero((geo.leaf_start == lo) & (geo.leaf_stop == hi))
        if candidates.size == 0 or support.size != (hi - lo) * width or support[-1] - support[0] + 1 != support.size:
            raise ValueError(f"invariants: row {r} is not the total of a unit (a 0/1 sum of one unit's cells)")
        out[int(candidates[0])] = float(a[r])
    return out


def _observations(census: CensusQueries, y, sigmas, totals):
    """Per unit: (H, y, variances) of its measurements, invariant totals appended with variance 0."""
    K = census.table.n_cells
    rows: dict[int, list] = {}
    for q in range(census.n_queries):
        u = int(census.unit[q])
        h = np.zeros(K)
        h[list(census.table.groups(str(census.kind[q]))[int(census.part[q])])] = 1.0
        rows.setdefault(u, []).append((h, y[q], sigmas[q] ** 2))
    for u, total in totals.items():
        rows.setdefault(u, []).append((np.ones(K), total, 0.0))
    return {
        u: (np.array([r[0] for r in v]), np.array([r[1] for r in v]), np.array([r[2] for r in v]))
        for u, v in rows.items()
    }


def _condition(s, P, H, obs, var):
    """The Kalman update of N(s, P) by obs = H s + e, e ~ N(0, diag(var)) (var 0: exact)."""
    S = H @ P @ H.T + np.diag(var)
    gain = np.linalg.lstsq(S, H @ P, rcond=None)[0].T  # P H^T S^+ (S symmetric)
    s_new = s + gain @ (obs - H @ s)
    P_new = P - gain @ H @ P
    return s_new, (P_new + P_new.T) / 2


def gls_estimate(census: CensusQueries, y, sigmas, invariants=None) -> GLSResult:
    r"""The weighted least squares estimate of every cell and query from noisy measurements, in linear time.

    Minimises :math:`\sum_q (y_q - (Q n)_q)^2 / \sigma_q^2` over real cells n subject to the unit-total
    invariants, by the two-pass tree algorithm of the module docstring; the standard deviations are
    those of the estimator (its covariance ``(Q^T W Q)^{-1}`` restricted to the invariants), computed
    in the same passes.

    Parameters
    ----------
    census : CensusQueries
        The query structure (the finest level must have the 'detailed' query).
    y : array_like
        One noisy value per query.
    sigmas : float or array_like
        The noise standard deviations, one per query (or one for all).
    invariants : tuple (A, a), optional
        Exact unit totals (each row of A the 0/1 indicator of one unit's cells).

    Returns
    -------
    GLSResult

    Examples
    --------
    >>> from ppdinfer.census import Geography, TableSpec, census_queries
    >>> geo = Geography(["t", "b1", "b2"], [None, "t", "t"])
    >>> q = census_queries(geo, TableSpec(("a", "b")), {"level1": ["detailed"]})
    >>> fit = gls_estimate(q, [3, 4, 5, 6], 1.0, invariants=q.unit_invariants(["t"], [20]))
    >>> fit.cell_estimate.tolist()      # each cell moves by (20 - 18) / 4
    [[3.5, 4.5], [5.5, 6.5]]

    References
    ----------
    Hay, M., Rastogi, V., Miklau, G. & Suciu, D. (2010). Boosting the accuracy of differentially
    private histograms through consistency. PVLDB 3(1).
    Abowd, J. M. et al. (2022). The 2020 Census Disclosure Avoidance System TopDown Algorithm. HDSR.
    """
    y, sigmas = _checked(census, y, sigmas)
    geo, K = census.geography, census.table.n_cells
    totals = _unit_totals(census, invariants)
    obs = _observations(census, y, sigmas, totals)
    n = geo.n_units
    up_s, up_P = np.zeros((n, K)), np.zeros((n, K, K))
    sum_s, sum_P = np.zeros((n, K)), np.zeros((n, K, K))
    for u in range(n - 1, -1, -1):  # breadth-first order reversed: children before parents
        kids = geo.children[geo.child_ptr[u] : geo.child_ptr[u + 1]]
        H, values, var = obs.get(u, (np.zeros((0, K)), np.zeros(0), np.zeros(0)))
        if kids.size == 0:
            noisy = var > 0
            info = H[noisy].T @ (H[noisy] / var[noisy, None])
            if np.linalg.matrix_rank(info) < K:
                raise ValueError(
                    f"gls_estimate: unit {geo.ids[u]!r} (finest level) does not measure every cell; "
                    "the finest level needs the 'detailed' query"
                )
            P = np.linalg.inv(info)
            s = P @ (H[noisy].T @ (values[noisy] / var[noisy]))
            if np.any(~noisy):
                s, P = _condition(s, (P + P.T) / 2, H[~noisy], values[~noisy], var[~noisy])
        else:
            sum_s[u], sum_P[u] = up_s[kids].sum(axis=0), up_P[kids].sum(axis=0)
            s, P = sum_s[u], sum_P[u]
            if H.shape[0]:
                s, P = _condition(s, P, H, values, var)
        up_s[u], up_P[u] = s, P
    est, cov = up_s.copy(), up_P.copy()
    for u in range(n):
        kids = geo.children[geo.child_ptr[u] : geo.child_ptr[u + 1]]
        if kids.size == 0:
            continue
        inverse = np.linalg.pinv(sum_P[u], hermitian=True)
        gains = up_P[kids] @ inverse  # (m, K, K)
        est[kids] = up_s[kids] + gains @ (est[u] - sum_s[u])
        middle = cov[u] - sum_P[u]
        cov[kids] = up_P[kids] + gains @ middle @ np.transpose(gains, (0, 2, 1))
    groups = np.zeros((census.n_queries, K))
    for q in range(census.n_queries):
        groups[q, list(census.table.groups(str(census.kind[q]))[int(census.part[q])])] = 1.0
    q_est = np.einsum("qk,qk->q", groups, est[census.unit])
    q_var = np.einsum("qk,qkl,ql->q", groups, cov[census.unit], groups)
    leaves = geo.leaves
    cell_var = np.diagonal(cov[leaves], axis1=1, axis2=2)
    return GLSResult(
        q_est,
        np.sqrt(np.maximum(q_var, 0.0)),
        est[leaves],
        np.sqrt(np.maximum(cell_var, 0.0)),
        est,
        cov,
    )


def largest_remainder(values, total: int) -> np.ndarray:
    """Non-negative integers summing to ``total``, as close as possible to ``values`` rescaled to that sum.

    Each value is scaled so the sum is ``total``, floored, and the shortfall goes one by one to the
    largest fractional parts (ties to the first). Zero values stay zero unless all are zero (then the
    total is spread evenly).

    Examples
    --------
    >>> largest_remainder([1.4, 2.6, 0.0, 3.0], 7).tolist()
    [1, 3, 0, 3]
    """
    values = np.maximum(np.asarray(values, dtype=float), 0.0)
    total = int(total)
    if total < 0:
        raise ValueError(f"total must be >= 0, got {total}")
    if values.sum() <= 0:
        values = np.ones_like(values)
    scaled = values * (total / values.sum())
    floor = np.floor(scaled).astype(np.int64)
    short = total - int(floor.sum())
    if short > 0:
        order = np.argsort(-(scaled - floor), kind="stable")
        floor[order[:short]] += 1
    elif short < 0:  # floating point only: take back from the largest
        order = np.argsort(-floor, kind="stable")
        floor[order[:-short]] -= 1
    return floor


def topdown_estimate(census: CensusQueries, y, sigmas, invariants=None) -> np.ndarray:
    """TopDown-like non-negative integer cells: weighted NNLS level by level, then controlled rounding.

    The root's table: non-negative weighted least squares on the root's measurements, its total fixed
    to the invariant when one is given, rounded by :func:`largest_remainder`. Then for each unit, its
    children's tables (m x K): non-negative weighted least squares on the children's measurements with
    the children of each category summing to the unit's (fixed, integer) count, and each category's
    column rounded by largest remainder to that count. The result is non-negative integers whose every
    unit sums to its parent's fixed table and whose grand total is the invariant.

    Parameters
    ----------
    census : CensusQueries
    y : array_like
        One noisy value per query.
    sigmas : float or array_like
        The noise standard deviations (inverse-variance weights).
    invariants : tuple (A, a), optional
        Only the root's total is supported (the state total of the 2020 release).

    Returns
    -------
    numpy.ndarray
        int64 cells, shape (leaves, K).

    Examples
    --------
    >>> from ppdinfer.census import Geography, TableSpec, census_queries
    >>> geo = Geography(["t", "b1", "b2"], [None, "t", "t"])
    >>> q = census_queries(geo, TableSpec(("a", "b")), {"level0": ["total", "detailed"], "level1": ["detailed"]})
    >>> topdown_estimate(q, [9, 8, 1, 3, -1, 5, 2], 1.0, invariants=q.unit_invariants(["t"], [10])).tolist()
    [[3, 0], [6, 1]]

    References
    ----------
    Abowd, J. M. et al. (2022). The 2020 Census Disclosure Avoidance System TopDown Algorithm. HDSR.
    """
    y, sigmas = _checked(census, y, sigmas)
    geo, K = census.geography, census.table.n_cells
    totals = _unit_totals(census, invariants)
    if set(totals) - {0}:
        raise ValueError("topdown_estimate: only an invariant total of the root unit is supported")
    obs = _observations(census, y, sigmas, {})
    fixed = np.zeros((geo.n_units, K), dtype=np.int64)
    # the root
    H, values, var = obs.get(0, (np.zeros((0, K)), np.zeros(0), np.zeros(0)))
    weights = 1.0 / np.sqrt(var) if var.size else np.zeros(0)
    big = 1e4 * (weights.max() if weights.size else 1.0)
    rows, targets = [H * weights[:, None]], [values * weights]
    if 0 in totals:
        rows.append(big * np.ones((1, K)))
        targets.append(np.array([big * totals[0]]))
    rows.append(1e-6 * np.eye(K))  # a tiny ridge: a root that measures only its total is still solvable
    targets.append(np.zeros(K))
    solution = lsq_linear(np.vstack(rows), np.concatenate(targets), bounds=(0, np.inf), method="bvls").x
    root_total = int(totals[0]) if 0 in totals else int(round(solution.sum()))
    fixed[0] = largest_remainder(solution, max(root_total, 0))
    for u in range(geo.n_units):
        kids = geo.children[geo.child_ptr[u] : geo.child_ptr[u + 1]]
        if kids.size == 0:
            continue
        m = kids.size
        rows, targets = [], []
        scale = 1.0
        for j, c in enumerate(kids):
            H, values, var = obs.get(int(c), (np.zeros((0, K)), np.zeros(0), np.zeros(0)))
            if not H.shape[0]:
                continue
            w = 1.0 / np.sqrt(var)
            scale = max(scale, w.max())
            block = np.zeros((H.shape[0], m * K))
            block[:, j * K : (j + 1) * K] = H * w[:, None]
            rows.append(block)
            targets.append(values * w)
        equality = np.zeros((K, m * K))
        for j in range(m):
            equality[:, j * K : (j + 1) * K] = np.eye(K)
        rows.append(1e4 * scale * equality)
        targets.append(1e4 * scale * fixed[u].astype(float))
        rows.append(1e-6 * np.eye(m * K))
        targets.append(np.zeros(m * K))
        solution = lsq_linear(np.vstack(rows), np.concatenate(targets), bounds=(0, np.inf), method="bvls").x
        table = solution.reshape(m, K)
        for k in range(K):
            fixed[kids, k] = largest_remainder(table[:, k], fixed[u, k])
    return fixed[geo.leaves]
