r"""Projection baselines: force a noisy table onto the invariants by optimization.

Gong & Meng compare congenial releases (the noisy table *conditioned* on the invariant set
S* = {s : A s = a, B s >= b}) with the usual post-processing by optimization, which moves the
noisy table y to the nearest point of S*:

.. math::

    f(y; S^*) = \operatorname*{arg\,min}_{s \in S^*} \lVert s - y \rVert .

Two baselines are provided for comparison:

* :func:`project_l2`, the real-valued least-squares projection onto the real relaxation
  {s in R^d : A s = a, B s >= b} (with non-negativity as B s >= b this is the paper's "NNL2");
* :func:`project_l1_integer`, the L1-nearest *integer* table of S*, by mixed-integer linear
  programming.

Neither is covered by the DP post-processing theorem, since S* depends on the confidential data,
and neither has a tractable likelihood: they are baselines, not release mechanisms.
"""

from __future__ import annotations

import numpy as np
from scipy import linalg, optimize

from .invariants import InfeasibleInvariants, LinearInvariants

__all__ = ["project_l1_integer", "project_l2"]

#: Tolerance of the projections: constraint violation and the KKT stationarity residual allowed,
#: relative to ``1 + max |y|``.
TOLERANCE = 1e-9


def project_l2(y, invariants: LinearInvariants) -> np.ndarray:
    r"""Least-squares projection of a noisy table onto the real relaxation of the invariants.

    .. math::

        \hat s = \operatorname*{arg\,min}_{s \in \mathbb{R}^d} \lVert s - y \rVert_2^2
        \quad \text{subject to} \quad A s = a, \; B s \ge b,

    a strictly convex quadratic programme, so the minimizer is unique. With equalities only it is
    the closed form

    .. math::

        \hat s = y - A^\top (A A^\top)^{+} (A y - a)

    (the Moore-Penrose inverse copes with redundant equalities). With inequalities (e.g.
    non-negativity, giving the "NNL2" projection of Gong & Meng) it is solved by SLSQP
    (``scipy.optimize.minimize``, ``ftol=1e-14``) and then polished: the inequalities active at
    SLSQP's answer (within ``1e-6 (1 + max|y|)``) are made equalities and the closed form above
    is applied to them, which is kept when it satisfies every invariant within
    ``TOLERANCE (1 + max|y|)`` and the KKT conditions

    .. math::

        \hat s - y = A^\top \lambda + B^\top \mu, \quad \mu \ge 0, \quad
        \mu_i (B \hat s - b)_i = 0,

    hold with a stationarity residual within the same tolerance (``TOLERANCE = 1e-9``).

    Parameters
    ----------
    y : array_like of float
        The noisy table, of shape ``invariants.shape``.
    invariants : LinearInvariants
        The set S*; only its real relaxation is used (the answer need not be integer).

    Returns
    -------
    numpy.ndarray of float, shape ``invariants.shape``

    Raises
    ------
    ValueError
        If ``y`` has the wrong shape or is not finite.
    InfeasibleInvariants
        If no real table satisfies the invariants.

    Examples
    --------
    A negative noisy cell is moved to 0 while the total 4 is kept:

    >>> from ppdinfer.invariants import LinearInvariants
    >>> inv = LinearInvariants.grand_total(3, 4) & LinearInvariants.nonnegative(3)
    >>> project_l2([-1.2, 3.1, 2.6], inv).round(6).tolist()
    [0.0, 2.25, 1.75]
    >>> project_l2([2.0, 3.0, 5.0], LinearInvariants.grand_total(3, 7)).round(6).tolist()  # closed form
    [1.0, 2.0, 4.0]
    """
    invariants, target = _inputs(y, invariants)
    A, a = invariants.A.astype(float), invariants.a.astype(float)
    B, b = invariants.B.astype(float), invariants.b.astype(float)
    scale = 1.0 + np.max(np.abs(target))
    tol = TOLERANCE * scale
    if B.shape[0] == 0:
        solution = _closed_form(target, A, a)
        if A.shape[0] and np.max(np.abs(A @ solution - a)) > tol * (1.0 + np.max(np.abs(a))):
            raise InfeasibleInvariants(f"no real table satisfies the equalities of the invariants ({invariants!r})")
        return solution.reshape(invariants.shape)
    start = _feasible_point(invariants, A, a, B, b)
    constraints = [{"type": "ineq", "fun": lambda s: B @ s - b, "jac": lambda s: B}]
    if A.shape[0]:
        constraints.append({"type": "eq", "fun": lambda s: A @ s - a, "jac": lambda s: A})
    result = optimize.minimize(lambda s: 0.5 * np.sum((s - target) ** 2), start, jac=lambda s: s - target,
                               method="SLSQP", constraints=constraints,
                               options={"ftol": 1e-14, "maxiter": 1000})
    solution = result.x if np.all(np.isfinite(result.x)) else start
    polished = _polish(target, solution, A, a, B, b, scale)
    if polished is not None:
        return polished.reshape(invariants.shape)
    if not result.success or _violation(solution, A, a, B, b) > 1e3 * tol:
        raise RuntimeError(f"the L2 projection did not converge: {result.message}")
    return solution.reshape(invariants.shape)


def project_l1_integer(y, invariants: LinearInvariants) -> np.ndarray:
    r"""The integer table of S* nearest to a noisy table in L1 distance.

    .. math::

        \hat s = \operatorname*{arg\,min}_{s \in \mathbb{Z}^d,\; A s = a,\; B s \ge b}
        \sum_j \lvert s_j - y_j \rvert ,

    solved as the mixed-integer linear programme (``scipy.optimize.milp``, HiGHS, with a zero
    relative gap) in (s, t):

    .. math::

        \min \sum_j t_j \quad \text{subject to} \quad t \ge s - y, \; t \ge y - s, \;
        A s = a, \; B s \ge b, \; s \in \mathbb{Z}^d .

    The L1 minimizer is often not unique. Ties are broken deterministically: of the tables whose
    distance is within ``1e-9 (1 + D)`` of the least distance D, the lexicographically smallest
    in row-major order is returned, found by up to d further programmes that minimize the cells
    one at a time (cell 0 first), each fixing the cells before it at their least values.

    Parameters
    ----------
    y : array_like of float
        The noisy table, of shape ``invariants.shape``.
    invariants : LinearInvariants
        The set S* of integer tables.

    Returns
    -------
    numpy.ndarray of int64, shape ``invariants.shape``

    Raises
    ------
    ValueError
        If ``y`` has the wrong shape or is not finite.
    InfeasibleInvariants
        If no integer table satisfies the invariants.

    Examples
    --------
    Both [0, 2, 2] and [0, 3, 1] are at L1 distance 2.9 from y; the lexicographically smaller wins:

    >>> from ppdinfer.invariants import LinearInvariants
    >>> inv = LinearInvariants.grand_total(3, 4) & LinearInvariants.nonnegative(3)
    >>> project_l1_integer([-1.2, 3.1, 2.6], inv).tolist()
    [0, 2, 2]
    >>> margins = LinearInvariants.margins([3, 2], [1, 4]) & LinearInvariants.nonnegative((2, 2))
    >>> project_l1_integer([[0.4, 2.2], [-0.3, 2.5]], margins).tolist()
    [[1, 2], [0, 2]]
    """
    invariants, target = _inputs(y, invariants)
    d = invariants.n_cells
    A, a = invariants.A.astype(float), invariants.a.astype(float)
    B, b = invariants.B.astype(float), invariants.b.astype(float)
    identity = np.eye(d)
    # |s - y| <= t as  s - t <= y  and  s + t >= y.
    constraints = [optimize.LinearConstraint(np.hstack([identity, -identity]), -np.inf, target),
                   optimize.LinearConstraint(np.hstack([identity, identity]), target, np.inf)]
    if A.shape[0]:
        constraints.append(optimize.LinearConstraint(np.hstack([A, np.zeros_like(A)]), a, a))
    if B.shape[0]:
        constraints.append(optimize.LinearConstraint(np.hstack([B, np.zeros_like(B)]), b, np.inf))
    integrality = np.concatenate([np.ones(d), np.zeros(d)])
    lower, upper = np.full(2 * d, -np.inf), np.full(2 * d, np.inf)
    lower[d:] = 0.0
    options = {"mip_rel_gap": 0.0}

    def solve(cost):
        result = optimize.milp(cost, constraints=constraints, integrality=integrality,
                               bounds=optimize.Bounds(lower, upper), options=options)
        if result.status == 2:
            raise InfeasibleInvariants(f"no integer table satisfies the invariants ({invariants!r})")
        if result.x is None or result.status != 0:
            raise RuntimeError(f"the L1 projection failed: {result.message}")
        return result

    best = solve(np.concatenate([np.zeros(d), np.ones(d)]))
    table = np.round(best.x[:d])
    distance = float(np.sum(np.abs(table - target)))
    constraints.append(optimize.LinearConstraint(np.concatenate([np.zeros(d), np.ones(d)])[None, :], -np.inf,
                                                 distance + 1e-9 * (1.0 + distance)))
    for j in range(d):
        cost = np.zeros(2 * d)
        cost[j] = 1.0
        value = np.round(solve(cost).x[j])
        lower[j] = upper[j] = value
    table = lower[:d]
    return table.astype(np.int64).reshape(invariants.shape)


# -- helpers -----------------------------------------------------------------------------------
def _inputs(y, invariants):
    if not isinstance(invariants, LinearInvariants):
        raise ValueError(f"invariants must be a LinearInvariants, got {type(invariants).__name__}")
    try:
        target = np.asarray(y, dtype=float)
    except (TypeError, ValueError) as err:
        raise ValueError(f"y must be a table of numbers: {err}") from None
    if target.shape != invariants.shape:
        raise ValueError(f"y must be a table of shape {invariants.shape} (the invariants'), got shape {target.shape}")
    if not np.all(np.isfinite(target)):
        raise ValueError("y must be finite")
    return invariants, target.reshape(-1)


def _closed_form(y, M, m):
    """argmin ||s - y||_2 subject to M s = m: y - M^T (M M^T)^+ (M y - m)."""
    if M.shape[0] == 0:
        return y.copy()
    return y - M.T @ (linalg.pinv(M @ M.T) @ (M @ y - m))


def _violation(s, A, a, B, b) -> float:
    worst = 0.0
    if A.shape[0]:
        worst = max(worst, float(np.max(np.abs(A @ s - a))))
    if B.shape[0]:
        worst = max(worst, float(np.max(b - B @ s, initial=0.0)))
    return worst


def _feasible_point(invariants, A, a, B, b):
    """A point of the real relaxation (by LP), or InfeasibleInvariants."""
    result = optimize.linprog(np.zeros(invariants.n_cells), A_eq=A if A.shape[0] else None,
                              b_eq=a if A.shape[0] else None, A_ub=-B, b_ub=-b, bounds=(None, None), method="highs")
    if result.status == 2:
        raise InfeasibleInvariants(f"no real table satisfies the invariants ({invariants!r})")
    if result.x is None:
        raise RuntimeError(f"the feasibility search failed: {result.message}")
    return result.x


def _kkt_multipliers(y, s, A, B_active):
    """Multipliers (lambda free, mu >= 0) best fitting s - y = A^T lambda + B_active^T mu, and the residual."""
    M = np.vstack([A, B_active]).T
    if M.shape[1] == 0:
        return np.zeros(0), float(np.max(np.abs(s - y), initial=0.0))
    lower = np.concatenate([np.full(A.shape[0], -np.inf), np.zeros(B_active.shape[0])])
    fit = optimize.lsq_linear(M, s - y, bounds=(lower, np.inf), tol=1e-14, lsmr_tol="auto")
    return fit.x, float(np.max(np.abs(M @ fit.x - (s - y)), initial=0.0))


def _polish(y, s, A, a, B, b, scale):
    """Solve exactly on the active set of ``s``; None unless the result satisfies the KKT conditions."""
    tol = TOLERANCE * scale
    active = B @ s - b <= 1e-6 * scale
    M, m = np.vstack([A, B[active]]), np.concatenate([a, b[active]])
    candidate = _closed_form(y, M, m)
    if _violation(candidate, A, a, B, b) > tol:
        return None
    _, residual = _kkt_multipliers(y, candidate, A, B[active])
    return candidate if residual <= tol else None
