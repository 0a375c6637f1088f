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

:class:`L1ConvexCombination` is the exception, for Gong & Meng's Example 4.1 (a two-bin histogram
with a public total): the L1 minimizers there form a segment, and their "L1 post-processing"
picks a fixed convex combination of its ends, a mechanism with a closed-form likelihood, unbiased,
with privacy eps / (2 max(beta, 1 - beta)).
"""

from __future__ import annotations

import math

import numpy as np
from scipy import optimize

from .invariants import InfeasibleInvariants, LinearInvariants
from .mechanisms.base import Mechanism, as_batch
from .mechanisms.guarantee import Guarantee
from .rng import SeedLike, as_generator
from .validation import MAX_INTEGER, finite_array, nonnegative_counts, positive_finite, probability

__all__ = ["L1ConvexCombination", "project_l1_integer", "project_l2"]

#: Tolerance of the projections: the constraint violation allowed, relative to the scale of the
#: answer and of the invariants' right-hand sides, and a negative multiplier's, relative to ``max |s - y|``.
TOLERANCE = 1e-9
#: Singular values of the active constraints below this fraction of the largest count as zero.
RANK_TOLERANCE = 1e-12
#: Beyond this magnitude of y the L1 projection first clips y to the cells' bounds over S* (which
#: changes every candidate's distance by the same constant), so that the programme stays well scaled.
L1_CLIP_ABOVE = 1e6


def project_l2(y, invariants: LinearInvariants) -> np.ndarray:
    r"""Least-squares projection of a noisy table onto the real relaxation of the invariants.

    .. math::

        \hat s = \operatorname*{arg\,min}_{s \in \mathbb{R}^d} \lVert s - y \rVert_2^2
        \quad \text{subject to} \quad A s = a, \; B s \ge b,

    a strictly convex quadratic programme, so the minimizer is unique. With equalities only (or
    once the active inequalities are known, as equalities) it is the closed form

    .. math::

        \hat s = s_0 + N N^\top (y - s_0), \qquad s_0 = M^{+} m,

    with M s = m the equalities, s_0 their least-norm solution and N an orthonormal basis of
    the null space of M (an SVD; redundant equalities are fine). Computed this way, no
    coordinate that the equalities fix is ever formed as a difference of large numbers: y = [1e15,
    3.1, 2.6] with total 4 and non-negativity gives [4, 0, 0] exactly.

    With inequalities (e.g. non-negativity, giving the "NNL2" projection of Gong & Meng) SLSQP
    (``scipy.optimize.minimize``, ``ftol=1e-14``) suggests the active set, which a primal-dual
    active-set loop then corrects: solve with the active inequalities as equalities, add the
    most violated inequality, or drop the one with the most negative multiplier, until the
    KKT conditions

    .. math::

        \hat s - y = A^\top \lambda + B^\top \mu, \quad \mu \ge 0, \quad
        \mu_i (B \hat s - b)_i = 0,

    hold: every invariant within ``TOLERANCE (1 + max(|s|, |a|, |b|))`` and the multipliers
    within ``TOLERANCE (1 + max |s - y|)`` (``TOLERANCE = 1e-9``). A cell held at an active
    single-cell bound (non-negativity) is returned at the bound exactly.

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

    See Also
    --------
    ppdinfer.projection.project_l1_integer : The integer L1 projection.
    ppdinfer.mechanisms.Congenial : Conditioning instead of projecting.

    References
    ----------
    .. [1] R. Gong and X.-L. Meng, "Congenial differential privacy under mandated disclosure,"
        Proceedings of the 2020 ACM-IMS Foundations of Data Science Conference (FODS), 2020. Section 4.
    .. [2] J. Seeman, M. Reimherr and A. Slavkovic, "Formal privacy for partially private data,"
        arXiv:2204.01102, 2022. Section 4.

    Examples
    --------
    A negative noisy cell is moved to 0 while the total 4 is kept:

    >>> from ppdinfer.invariants import LinearInvariants
    >>> inv = LinearInvariants.grand_total(3, 4) & LinearInvariants.nonnegative(3)
    >>> project_l2([-1.2, 3.1, 2.6], inv).round(6).tolist()
    [0.0, 2.25, 1.75]
    >>> project_l2([1e15, 3.1, 2.6], inv).tolist()                    # no cancellation
    [4.0, 0.0, 0.0]
    >>> project_l2([2.0, 3.0, 5.0], LinearInvariants.grand_total(3, 7)).round(6).tolist()  # closed form
    [1.0, 2.0, 4.0]
    """
    invariants, target = _inputs(y, invariants)
    A, a = invariants.A.astype(float), invariants.a.astype(float)
    B, b = invariants.B.astype(float), invariants.b.astype(float)
    if B.shape[0] == 0:
        solution = _closed_form(target, A, a)
        if solution is None:
            raise InfeasibleInvariants(f"no real table satisfies the equalities of the invariants ({invariants!r})")
        return solution.reshape(invariants.shape)
    start = _feasible_point(invariants, A, a, B, b)
    constraints = [{"type": "ineq", "fun": lambda s: B @ s - b, "jac": lambda s: B}]
    if A.shape[0]:
        constraints.append({"type": "eq", "fun": lambda s: A @ s - a, "jac": lambda s: A})
    result = optimize.minimize(
        lambda s: 0.5 * np.sum((s - target) ** 2),
        start,
        jac=lambda s: s - target,
        method="SLSQP",
        constraints=constraints,
        options={"ftol": 1e-14, "maxiter": 1000},
    )
    solution = result.x if np.all(np.isfinite(result.x)) else start
    guess = B @ solution - b <= 1e-6 * (1.0 + np.max(np.abs(solution)))
    polished = _active_set(target, A, a, B, b, guess)
    if polished is not None:
        return polished.reshape(invariants.shape)
    if not result.success or _violation(solution, A, a, B, b) > 1e3 * _feasibility_tolerance(solution, a, b):
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

    This baseline is **biased**: the tie-break always favours small early cells, so the first
    cell is pulled down (in Gong & Meng's Example 4.1, a two-bin histogram with its total public,
    the first count is released as the smallest integer of the segment of L1 minimizers). Their
    unbiased "L1 post-processing", a fixed convex combination of the segment's ends with a known
    privacy loss, is :class:`L1ConvexCombination`.

    Where max abs(y) exceeds ``L1_CLIP_ABOVE`` (1e6), each y_j is first clipped to the range of
    cell j over S* (``invariants.cell_bounds()``, where finite): beyond its range abs(s_j - y_j)
    differs from abs(s_j - clip(y_j)) by a constant, so the minimizers are the same, and the
    programme stays well scaled (y = [1e10, 3.1, 2.6] with total 4 is projected as [4, 3.1, 2.6]
    would be). Entries of y beyond 2^53 in magnitude are refused: no table of integers that
    float64 represents exactly is near them.

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
        If ``y`` has the wrong shape, is not finite, or has an entry beyond 2^53 in magnitude.
    InfeasibleInvariants
        If no integer table satisfies the invariants.

    See Also
    --------
    ppdinfer.projection.project_l2 : The least-squares projection.

    References
    ----------
    .. [1] R. Gong and X.-L. Meng, "Congenial differential privacy under mandated disclosure,"
        Proceedings of the 2020 ACM-IMS Foundations of Data Science Conference (FODS), 2020. Section 4.
    .. [2] J. Seeman, M. Reimherr and A. Slavkovic, "Formal privacy for partially private data,"
        arXiv:2204.01102, 2022. Section 4.

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
    if np.max(np.abs(target)) > MAX_INTEGER:
        raise ValueError(
            f"y must lie within 2^53 = {MAX_INTEGER:,} in magnitude for an integer projection, got an "
            f"entry of {float(np.max(np.abs(target))):.6g}"
        )
    if np.max(np.abs(target)) > L1_CLIP_ABOVE:
        lows, highs = invariants.cell_bounds()
        target = np.clip(target, lows, highs)
    d = invariants.n_cells
    A, a = invariants.A.astype(float), invariants.a.astype(float)
    B, b = invariants.B.astype(float), invariants.b.astype(float)
    identity = np.eye(d)
    # |s - y| <= t as  s - t <= y  and  s + t >= y.
    constraints = [
        optimize.LinearConstraint(np.hstack([identity, -identity]), -np.inf, target),
        optimize.LinearConstraint(np.hstack([identity, identity]), target, np.inf),
    ]
    if A.shape[0]:
        constraints.append(optimize.LinearConstraint(np.hstack([A, np.zeros_like(A)]), a, a))
    if B.shape[0]:
        constraints.append(optimize.LinearConstraint(np.hstack([B, np.zeros_like(B)]), b, np.inf))
    integrality = np.concatenate([np.ones(d), np.zeros(d)])
    lower, upper = np.full(2 * d, -np.inf), np.full(2 * d, np.inf)
    lower[d:] = 0.0
    options = {"mip_rel_gap": 0.0}

    def solve(cost):
        result = optimize.milp(
            cost,
            constraints=constraints,
            integrality=integrality,
            bounds=optimize.Bounds(lower, upper),
            options=options,
        )
        if result.status == 2:
            raise InfeasibleInvariants(f"no integer table satisfies the invariants ({invariants!r})")
        if result.x is None or result.status != 0:
            raise RuntimeError(f"the L1 projection failed: {result.message}")
        return result

    best = solve(np.concatenate([np.zeros(d), np.ones(d)]))
    table = np.round(best.x[:d])
    distance = float(np.sum(np.abs(table - target)))
    constraints.append(
        optimize.LinearConstraint(
            np.concatenate([np.zeros(d), np.ones(d)])[None, :], -np.inf, distance + 1e-9 * (1.0 + distance)
        )
    )
    for j in range(d):
        cost = np.zeros(2 * d)
        cost[j] = 1.0
        value = np.round(solve(cost).x[j])
        lower[j] = upper[j] = value
    table = lower[:d]
    return table.astype(np.int64).reshape(invariants.shape)


class L1ConvexCombination(Mechanism):
    r"""Gong & Meng's L1 post-processing f_L1 of Example 4.1: a two-bin histogram with a public total.

    The confidential histogram s = (s_1, s_2) has a public total n = s_1 + s_2. Each bin gets
    Laplace(2 / eps) noise (eps-DP under substitution, whose L1 sensitivity is 2), M = s + u; the
    tables of total n nearest to M in L1 distance form the segment between (M_1, n - M_1) and
    (n - M_2, M_2), and f_L1 releases its point at weight ``beta`` on the first end:

    .. math::

        \tilde s_1 = \beta M_1 + (1 - \beta)(n - M_2) = s_1 + \beta u_1 - (1 - \beta) u_2,
        \qquad \tilde s_2 = n - \tilde s_1 .

    So E[s~_1] = s_1 (unbiased, unlike the lexicographic tie-break of :func:`project_l1_integer`)
    and Var = 8 (beta^2 + (1 - beta)^2) / eps^2. The noise t = s~_1 - s_1 is a sum of independent
    Laplace variables of scales b_1 = 2 max(beta, 1 - beta) / eps and b_2 = 2 min(...) / eps, with
    the density (Gong & Meng's (A.1), written stably for every beta)

    .. math::

        g(t) = \frac{\epsilon}{4}\, e^{-\lvert t\rvert / b_1}
               \Bigl(1 + \frac{1 - e^{-\delta \lvert t\rvert}}{\delta\, b_1}\Bigr),
        \qquad \delta = \frac{1}{b_2} - \frac{1}{b_1}

    (the bracket is 1 + abs(t) / b_1 when beta = 1/2, and 1 when beta is 0 or 1). ``logpdf``
    is log g(y_1 - s_1) when y_1 + y_2 = s_1 + s_2 (the total, to rounding) and -inf otherwise,
    a density on the line of total n; g is largest at 0, so log M = log(eps / 4). g is
    log-concave, so log g(t) - log g(t + 1) is monotone in t and the privacy loss between s and
    a neighbour (s_1 - 1, s_2 + 1) is its limit as abs(t) grows,

    .. math::

        \epsilon_{\text{f}_{L_1}} = 1 / b_1 = \frac{\epsilon}{2 \max(\beta, 1 - \beta)}
        \in [\epsilon / 2, \epsilon]

    (`privacy_epsilon`; Appendix A of Gong & Meng): beta = 1/2 (the L2 projection) keeps eps,
    beta in {0, 1} (one bin's noise alone) halves it.

    Parameters
    ----------
    epsilon : float
        The privacy parameter of the noisy histogram M, > 0 (Laplace scale 2 / eps per bin).
    beta : float
        The weight in [0, 1] of the end (M_1, n - M_1); default 1/2.

    References
    ----------
    .. [1] R. Gong and X.-L. Meng, "Congenial differential privacy under mandated disclosure,"
        Proceedings of the 2020 ACM-IMS Foundations of Data Science Conference (FODS), 2020. Example 4.1 and Appendix A.

    Examples
    --------
    >>> from ppdinfer.projection import L1ConvexCombination
    >>> mechanism = L1ConvexCombination(epsilon=1.0, beta=0.8)
    >>> mechanism.privacy_epsilon                       # eps / (2 * 0.8)
    0.625
    >>> y = mechanism.release([30, 20], random_seed=0)
    >>> float(y.sum())                                  # the total is kept
    50.0
    >>> np.exp(mechanism.logpdf([30.0, 20.0], [[30, 20], [29, 21], [30, 19]])).round(4)
    array([0.25  , 0.1716, 0.    ])
    """

    discrete = False

    def __init__(self, epsilon: float, beta: float = 0.5):
        self.epsilon = positive_finite(epsilon, "epsilon")
        self.beta = probability(beta, "beta", open_interval=False)
        wide = 2 * max(self.beta, 1 - self.beta) / self.epsilon
        narrow = 2 * min(self.beta, 1 - self.beta) / self.epsilon
        self._wide = wide
        self._gap = math.inf if narrow == 0 else 1 / narrow - 1 / wide  # delta of the density

    @property
    def privacy_epsilon(self) -> float:
        """The exact privacy loss eps / (2 max(beta, 1 - beta)) of a release between neighbours.

        Examples
        --------
        >>> L1ConvexCombination(2.0).privacy_epsilon, L1ConvexCombination(2.0, beta=1.0).privacy_epsilon
        (2.0, 1.0)
        """
        return self.epsilon / (2 * max(self.beta, 1 - self.beta))

    def _guarantee(self) -> Guarantee:
        # Laplace(2 / eps) per bin under substitution (L1 sensitivity 2), then post-processing
        return Guarantee("pure", epsilon=self.epsilon, sensitivity=2.0)

    def parameters(self) -> dict[str, float]:
        """The settings ``epsilon`` and ``beta``.

        Examples
        --------
        >>> L1ConvexCombination(0.5, 0.25).parameters()
        {'epsilon': 0.5, 'beta': 0.25}
        """
        return {"epsilon": self.epsilon, "beta": self.beta}

    def release(self, x, z=None, random_seed: SeedLike = None) -> np.ndarray:
        """f_L1 of the noisy histogram x + u, u iid Laplace(2 / eps): a float array (2,) of total sum(x).

        Examples
        --------
        >>> L1ConvexCombination(1.0).release([3, 5], random_seed=1).shape
        (2,)
        """
        x = self._histogram(nonnegative_counts(x, "x"), "x")  # a histogram: counts, whole numbers >= 0
        noisy = x + as_generator(random_seed).laplace(0.0, 2.0 / self.epsilon, size=2)
        total = float(x.sum())
        first = self.beta * noisy[0] + (1 - self.beta) * (total - noisy[1])
        return np.array([first, total - first])

    def logpdf(self, y, x, z=None) -> np.ndarray:
        """log g(y_1 - x_1) for each histogram x (shape (2,) or (B, 2)) of the total of y; -inf otherwise.

        Examples
        --------
        >>> L1ConvexCombination(1.0, beta=0.0).logpdf([3.0, 5.0], [[3, 5], [4, 4]]).round(4)   # Laplace(2)
        array([-1.3863, -1.8863])
        """
        y = self._histogram(finite_array(y, "y"), "y")
        x = as_batch(finite_array(x, "x"), y)
        t = np.abs(y[0] - x[:, 0])
        if math.isinf(self._gap):
            bracket = np.zeros_like(t)
        elif self._gap == 0.0:
            bracket = t / self._wide
        else:
            bracket = -np.expm1(-self._gap * t) / (self._gap * self._wide)
        values = math.log(self.epsilon / 4) - t / self._wide + np.log1p(bracket)
        totals = x.sum(axis=1)
        off = np.abs(y.sum() - totals) > TOLERANCE * (1.0 + np.abs(totals))
        return np.where(off, -np.inf, values)

    def log_bound(self, z=None, size: int = 2) -> float:
        """log M = log(eps / 4), the density at y = x; ``size`` must be 2 (the two bins).

        Examples
        --------
        >>> round(L1ConvexCombination(1.0).log_bound(), 4)
        -1.3863
        """
        if size != 2:
            raise ValueError(f"size must be 2 (a two-bin histogram), got {size!r}")
        return math.log(self.epsilon / 4)

    def noise_scale(self, x=None, z=None) -> float:
        """The standard deviation of one bin's noise, sqrt(8 (beta^2 + (1 - beta)^2)) / eps.

        Examples
        --------
        >>> round(L1ConvexCombination(1.0, beta=1.0).noise_scale(), 4)    # Laplace(2): sqrt(8)
        2.8284
        """
        return math.sqrt(8 * (self.beta**2 + (1 - self.beta) ** 2)) / self.epsilon

    @staticmethod
    def _histogram(values: np.ndarray, name: str) -> np.ndarray:
        if values.shape != (2,):
            raise ValueError(f"{name} must be a two-bin histogram of shape (2,), got shape {values.shape}")
        return values


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
    """argmin ||s - y||_2 subject to M s = m: s0 + N N^T (y - s0), s0 = M^+ m, N a basis of null(M).

    Returns None when the equalities are inconsistent (M s0 misses m).
    """
    if M.shape[0] == 0:
        return y.copy()
    u, singular, vt = np.linalg.svd(M)
    rank = int(np.sum(singular > RANK_TOLERANCE * singular[0])) if singular.size else 0
    s0 = vt[:rank].T @ ((u[:, :rank].T @ m) / singular[:rank])
    if np.max(np.abs(M @ s0 - m)) > _feasibility_tolerance(s0, m, m):
        return None
    null = vt[rank:]
    return s0 + null.T @ (null @ (y - s0)) if null.shape[0] else s0


def _violation(s, A, a, B, b) -> float:
    worst = 0.0
    if A.shape[0]:
        worst = max(worst, float(np.max(np.abs(A @ s - a))))
    if B.shape[0]:
        worst = max(worst, float(np.max(b - B @ s, initial=0.0)))
    return worst


def _feasible_point(invariants, A, a, B, b):
    """A point of the real relaxation (by LP), or InfeasibleInvariants."""
    result = optimize.linprog(
        np.zeros(invariants.n_cells),
        A_eq=A if A.shape[0] else None,
        b_eq=a if A.shape[0] else None,
        A_ub=-B,
        b_ub=-b,
        bounds=(None, None),
        method="highs",
    )
    if result.status == 2:
        raise InfeasibleInvariants(f"no real table satisfies the invariants ({invariants!r})")
    if result.x is None:
        raise RuntimeError(f"the feasibility search failed: {result.message}")
    return result.x


def _feasibility_tolerance(s, a, b) -> float:
    """The constraint violation allowed: TOLERANCE relative to the answer's and the right-hand sides' scale."""
    return TOLERANCE * (
        1.0 + max(np.max(np.abs(s), initial=0.0), np.max(np.abs(a), initial=0.0), np.max(np.abs(b), initial=0.0))
    )


def _active_set(y, A, a, B, b, active):
    """The projection by a primal-dual active-set loop from the guess ``active``; None if it fails."""
    active = active.copy()
    for _ in range(4 * B.shape[0] + 8):
        candidate = _closed_form(y, np.vstack([A, B[active]]), np.concatenate([a, b[active]]))
        if candidate is None:
            return None
        slack = B @ candidate - b
        if np.min(slack) < -_feasibility_tolerance(candidate, a, b):
            active[int(np.argmin(slack))] = True
            continue
        M = np.vstack([A, B[active]]).T
        if M.shape[1] == 0:
            return candidate
        multipliers = np.linalg.lstsq(M, candidate - y, rcond=None)[0][A.shape[0] :]
        tolerance = TOLERANCE * (1.0 + np.max(np.abs(candidate - y)))
        if (
            multipliers.size == 0
            or np.min(multipliers) >= -tolerance
            or _nonnegative_fit(M, candidate - y, A.shape[0], tolerance)
        ):
            return _on_bounds(candidate, B[active], b[active])
        active[np.flatnonzero(active)[int(np.argmin(multipliers))]] = False
    return None


def _on_bounds(s, B, b):
    """``s`` with each cell that an active single-cell bound (e.g. s_j >= 0) holds set to the bound exactly."""
    s = s.copy()
    single = np.count_nonzero(B, axis=1) == 1
    cells = np.argmax(B[single] != 0, axis=1)
    s[cells] = b[single] / B[single, cells]
    return s + 0.0  # no -0.0


def _nonnegative_fit(M, gradient, n_free, tolerance) -> bool:
    """Whether gradient = M nu has a solution with nu's last entries >= 0 (redundant constraints)."""
    lower = np.concatenate([np.full(n_free, -np.inf), np.zeros(M.shape[1] - n_free)])
    fit = optimize.lsq_linear(M, gradient, bounds=(lower, np.inf), tol=1e-14, lsmr_tol="auto")
    return float(np.max(np.abs(M @ fit.x - gradient), initial=0.0)) <= tolerance
