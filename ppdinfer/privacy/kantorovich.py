r"""Ni Ding's Kantorovich mechanism for Pufferfish privacy: X + noise calibrated to an optimal plan.

A secret S is correlated with the released value X; the curator releases Y = X + N. For every
discriminative pair of secrets (s_i, s_j) the conditional pmfs P(X | s_i) and P(X | s_j) are
coupled by the Kantorovich optimal transport plan. On the line, with a convex cost, that plan is
the comonotone (quantile) coupling of `quantile_coupling`, read off the two CDFs

.. math::

    \pi^*((-\infty, x], (-\infty, x']) = \min\{F(x \mid s_i), F(x' \mid s_j)\},

and its sensitivity, the largest displacement max over the plan's support of abs(x - x'), is the
Wasserstein-infinity distance. The calibrations (each returns an existing mechanism of
``ppdinfer.mechanisms`` with the calibrated scale):

- Lemma 1 / Theorem 1: Laplace noise of scale theta = max Delta / eps (`kantorovich_laplace`).
- Theorem 2 (relaxed): per row and column of each plan one root z* > 1 of a polynomial in
  z = e^(1 / theta); the largest theta = 1 / ln z* (``kantorovich_laplace(..., relaxed=True)``).
- Theorem 3: Gaussian noise theta = c Delta / eps for (eps, delta) (`kantorovich_gaussian`), with
  the corrected constant 0.4187 in case (b) (the paper prints 0.41, slightly anti-conservative).

`privacy_loss` and `privacy_delta` audit a calibration exactly on the mixtures P(Y | s), and
`smallest_laplace_scale` / `smallest_gaussian_sigma` find the least noise that passes the audit,
so the slack of every calibration can be reported. The conditional pmfs come from data
(`empirical_conditionals`) or from a model of V independent users answering a separable query
(`separable_query_conditionals`, `counting_query_conditionals`; Lemma 2: `separable_sensitivity`).
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from scipy import optimize, special

from .. import validation as _checks
from ..geometry.wasserstein import quantile_coupling
from ..kernels.mixture import laplace_mixture_logpdf
from ..mechanisms import DiscreteLaplace, Gaussian, Guarantee, Laplace, classical_gaussian_sigma
from ..mechanisms.gaussian import raise_until
from ..validation import finite_array, integer_valued, positive_finite, probability

__all__ = [
    "ABSENT",
    "CORRECTED_CONSTANT",
    "PRINTED_CONSTANT",
    "ConditionalPmfs",
    "KantorovichPlan",
    "counting_query_conditionals",
    "empirical_conditionals",
    "kantorovich_gaussian",
    "kantorovich_laplace",
    "kantorovich_plan",
    "plan_sensitivity",
    "privacy_delta",
    "privacy_loss",
    "relaxed_laplace_scale",
    "separable_query_conditionals",
    "separable_sensitivity",
    "smallest_gaussian_sigma",
    "smallest_laplace_scale",
    "support_diameter",
    "theorem3_constant",
]

ABSENT = "absent"
"""The key of the pmf P(X | S_i = absent) (user i not in the data) in `separable_query_conditionals`."""

PRINTED_CONSTANT = 0.41
"""Theorem 3(b)'s constant as printed: half of 0.84, below half of (2/e)^(1/3) (2/pi)^(1/6) = 0.41866."""

CORRECTED_CONSTANT = 0.4187
"""Theorem 3(b)'s constant rounded up from (2/e)^(1/3) (2/pi)^(1/6) / 2 = 0.418660 (the notes' erratum)."""

_SEARCH_STEPS = 200
"""Budget of halvings and bisection steps in the searches for the smallest scale."""
_LOSS_RESOLUTION = 2.0**-40
"""Smallest epsilon `smallest_laplace_scale` searches for: losses are differences of logarithms of
mixture densities, exact to about 1e-16 absolute, so below 2^-40 (9.1e-13) rounding would decide more
than 1e-4 of the answer (and below ~1e-16 no scale passes the audit at all)."""

_REEVALUATED = 16
"""Support points at which `privacy_loss` evaluates the largest log ratios again, directly."""

_GRID_PER_SIGMA = 32
"""Grid points per standard deviation on which `privacy_delta` locates the sign changes of the loss."""

_GRID_LIMIT = 200_000
"""Most grid points `privacy_delta` evaluates per pair and direction (sigma at least span / 6000)."""


# --------------------------------------------------------------------------------------------------
# Conditional distributions P(X | s)


@dataclass(frozen=True)
class ConditionalPmfs:
    """Conditional pmfs P(X | S = s) on one common support.

    Attributes
    ----------
    support : ndarray
        Strictly increasing points (positions 1..K for categories).
    pmfs : dict
        One pmf (ndarray over ``support``) per secret value.
    categories : tuple
        What each support point stands for (the released categories in order, or the query values).

    Examples
    --------
    >>> pmfs = counting_query_conditionals([0.5, 0.5])
    >>> pmfs.support.tolist(), pmfs.pmfs[1].tolist()
    ([0.0, 1.0, 2.0], [0.0, 0.5, 0.5])
    >>> pmfs.plan(0, 1).sensitivity
    1.0
    """

    support: np.ndarray
    pmfs: dict
    categories: tuple

    def plan(self, secret_i: Hashable, secret_j: Hashable, *, tie_tolerance: float = 0.0) -> KantorovichPlan:
        """The Kantorovich plan between P(X | ``secret_i``) and P(X | ``secret_j``)."""
        for name, secret in (("secret_i", secret_i), ("secret_j", secret_j)):
            if secret not in self.pmfs:
                raise ValueError(f"{name} must be one of {list(self.pmfs)}, got {secret!r}")
        return kantorovich_plan(self.pmfs[secret_i], self.pmfs[secret_j], self.support, tie_tolerance=tie_tolerance)


def empirical_conditionals(
    frame, secret: str, released: str, order: Sequence[Hashable], secrets: Sequence[Hashable] | None = None
) -> ConditionalPmfs:
    r"""The empirical P(released | secret) of a data frame, the released categories placed at 1..K in ``order``.

    .. math::

        P(X = k \mid S = s) = \frac{\#\{\text{records with } S = s,\ X = \text{order}[k - 1]\}}
                                   {\#\{\text{records with } S = s,\ X \in \text{order}\}}.

    Records whose released value is not in ``order`` are left out (the conditioning is on X being
    one of the listed categories); a listed category that no record has is an error (a typo guard).

    Parameters
    ----------
    frame : pandas.DataFrame
        The records.
    secret, released : str
        Column names of the secret S and of the released attribute X.
    order : sequence
        The released categories in the order that defines their positions 1..K (the plan and its
        sensitivity depend on it).
    secrets : sequence, optional
        The secret values wanted (default: every value in the column, sorted).

    References
    ----------
    .. [1] N. Ding, "Kantorovich mechanism for Pufferfish privacy." Appendix C.

    Examples
    --------
    >>> import pandas as pd
    >>> frame = pd.DataFrame({"s": ["a", "a", "b", "b"], "x": ["lo", "hi", "hi", "hi"]})
    >>> pmfs = empirical_conditionals(frame, "s", "x", order=["lo", "hi"])
    >>> pmfs.support.tolist(), pmfs.pmfs["a"].tolist(), pmfs.pmfs["b"].tolist()
    ([1.0, 2.0], [0.5, 0.5], [0.0, 1.0])
    """
    for name, column in (("secret", secret), ("released", released)):
        if column not in frame.columns:
            raise ValueError(f"{name} must name a column of frame, got {column!r}")
    order = tuple(order)
    if not order or len(set(order)) != len(order):
        raise ValueError(f"order must list distinct categories, got {order!r}")
    present = set(frame[released].unique())
    missing = [category for category in order if category not in present]
    if missing:
        raise ValueError(f"order lists categories that no record of column {released!r} has: {missing!r}")
    kept = frame[frame[released].isin(order)]
    available = sorted(kept[secret].unique()) if secrets is None else list(secrets)
    position = {category: k for k, category in enumerate(order)}
    pmfs = {}
    for value in available:
        codes = kept.loc[kept[secret] == value, released].map(position).to_numpy(dtype=np.int64)
        if codes.size == 0:
            raise ValueError(f"secrets: no record has {secret} = {value!r} and {released} in order")
        pmfs[value] = np.bincount(codes, minlength=len(order)) / codes.size
    return ConditionalPmfs(np.arange(1.0, len(order) + 1), pmfs, order)


def separable_query_conditionals(
    values: Sequence[Sequence[int]], probabilities: Sequence[Sequence[float]], user: int = 0
) -> ConditionalPmfs:
    r"""P(X | S_user = a) for a separable query X = sum_i f_i(S_i) over V independent users.

    User i's secret S_i takes its a-th value with probability ``probabilities[i][a]`` and then
    contributes the integer ``values[i][a]`` = f_i(a). Conditioning on S_user = a fixes that
    user's term:

    .. math::

        P(X = x \mid S_u = a) = P\Big(f_u(a) + \sum_{i \ne u} f_i(S_i) = x\Big),
        \qquad P(X = x \mid S_u = \bot) = \sum_a P(S_u = a) P(X = x \mid S_u = a),

    the last being the pmf when the user's presence is the secret (key `ABSENT`; the paper's
    P(X | bot), the unconditional pmf). Each pmf is a convolution, on the integers from the
    smallest to the largest possible sum.

    References
    ----------
    .. [1] N. Ding, "Kantorovich mechanism for Pufferfish privacy." Lemma 2.

    Examples
    --------
    >>> pmfs = separable_query_conditionals([[0, 2], [0, 1]], [[0.5, 0.5], [0.5, 0.5]], user=0)
    >>> pmfs.support.tolist(), pmfs.pmfs[1].tolist()
    ([0.0, 1.0, 2.0, 3.0], [0.0, 0.0, 0.5, 0.5])
    >>> pmfs.plan(0, 1).sensitivity, separable_sensitivity([[0, 2], [0, 1]])
    (2.0, 2.0)
    """
    values, probabilities = _user_alphabets(values, probabilities)
    if isinstance(user, bool) or not isinstance(user, (int, np.integer)) or not 0 <= user < len(values):
        raise ValueError(f"user must be an index in [0, {len(values)}), got {user!r}")
    low = sum(int(v.min()) for v in values)
    high = sum(int(v.max()) for v in values)
    others = np.ones(1)  # pmf of the other users' sum, from offset others_low
    others_low = 0
    for index, (vals, probs) in enumerate(zip(values, probabilities)):
        if index == user:
            continue
        step = np.zeros(int(vals.max() - vals.min()) + 1)
        np.add.at(step, vals - vals.min(), probs)
        others = np.convolve(others, step)
        others_low += int(vals.min())
    pmfs = {}
    for a, value in enumerate(values[user].tolist()):
        pmf = np.zeros(high - low + 1)
        start = others_low + value - low
        pmf[start : start + others.size] = others
        pmfs[a] = pmf
    pmfs[ABSENT] = sum(prob * pmfs[a] for a, prob in enumerate(probabilities[user].tolist()))
    support = np.arange(low, high + 1, dtype=np.float64)
    return ConditionalPmfs(support, pmfs, tuple(range(low, high + 1)))


def counting_query_conditionals(
    probabilities: Sequence[float], user: int = 0, bit_given_secret: Mapping[Hashable, float] | None = None
) -> ConditionalPmfs:
    r"""P(X | S_user = s) for the count X of V independent bits (binomial or Poisson-binomial).

    User i's bit is 1 with probability ``probabilities[i]``; X is binomial when they are equal
    and Poisson-binomial otherwise (the paper's Figures 1, 2 and 5). By default the secret is the
    user's bit itself (keys 0 and 1, a separable query with f_i(0) = 0 and f_i(1) = 1, see
    `separable_query_conditionals`) or the user's presence (key `ABSENT`):

    .. math::

        P(X = x \mid S_u = a) = P\Big(a + \sum_{i \ne u} S_i = x\Big), \qquad S_i \sim \mathrm{Bernoulli}(p_i).

    With ``bit_given_secret`` (a mapping s -> P(bit = 1 | S_u = s)) the secret only shifts the
    user's bit probability, and P(X | S_u = s) = (1 - r_s) P(X | bit 0) + r_s P(X | bit 1).

    References
    ----------
    .. [1] N. Ding, "Kantorovich mechanism for Pufferfish privacy." Appendix C.

    Examples
    --------
    >>> pmfs = counting_query_conditionals([0.7] * 25)
    >>> [pmfs.plan(0, 1).sensitivity, pmfs.plan(0, ABSENT).sensitivity]
    [1.0, 1.0]
    >>> local = counting_query_conditionals([0.5] * 3, bit_given_secret={"yes": 0.75, "no": 0.25})
    >>> local.pmfs["yes"].tolist(), local.plan("yes", "no").sensitivity
    ([0.0625, 0.3125, 0.4375, 0.1875], 1.0)
    """
    probabilities = _checks.unit_interval(probabilities, "probabilities")
    if probabilities.ndim != 1 or probabilities.size == 0:
        raise ValueError(f"probabilities must be a non-empty 1-D sequence, got shape {probabilities.shape}")
    bits = separable_query_conditionals(
        [[0, 1]] * probabilities.size, [[1.0 - p, p] for p in probabilities.tolist()], user
    )
    if bit_given_secret is None:
        return bits
    rates = {
        secret: probability(rate, "bit_given_secret", open_interval=False)
        for secret, rate in dict(bit_given_secret).items()
    }
    if not rates:
        raise ValueError("bit_given_secret must map at least one secret to P(bit = 1 | secret)")
    pmfs = {secret: (1.0 - rate) * bits.pmfs[0] + rate * bits.pmfs[1] for secret, rate in rates.items()}
    return ConditionalPmfs(bits.support, pmfs, bits.categories)


def separable_sensitivity(values: Sequence[Sequence[int]]) -> float:
    r"""Lemma 2: the sensitivity of X = sum_i f_i(S_i) is the largest per-user range of f_i.

    .. math::

        \Delta_f = \max_i \max_{a, b} \lvert f_i(a) - f_i(b) \rvert;

    for the pair (S_i = a, S_i = b) the plan moves every x by exactly f_i(a) - f_i(b).

    See Also
    --------
    ppdinfer.privacy.separable_query_conditionals : The conditionals of such a query.

    References
    ----------
    .. [1] N. Ding, "Kantorovich mechanism for Pufferfish privacy." Lemma 2.

    Examples
    --------
    >>> separable_sensitivity([[0, 1], [0, 1], [0, 3]])
    3.0
    """
    values = [integer_valued(v, "values") for v in values]
    if not values or any(v.ndim != 1 or v.size == 0 for v in values):
        raise ValueError("values must hold one non-empty sequence of integers per user")
    return float(max(int(v.max() - v.min()) for v in values))


def _user_alphabets(values, probabilities) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Check the users' query values (integers) and the pmfs of their secrets, one each per user."""
    if len(values) == 0 or len(values) != len(probabilities):
        raise ValueError(
            f"values and probabilities must describe the same users (got {len(values)} and {len(probabilities)})"
        )
    checked_values, checked_probabilities = [], []
    for index, (vals, probs) in enumerate(zip(values, probabilities)):
        vals = integer_valued(vals, f"values[{index}]")
        if vals.ndim != 1 or vals.size == 0:
            raise ValueError(f"values[{index}] must be a non-empty 1-D sequence of integers")
        checked_values.append(vals)
        checked_probabilities.append(_checks.pmf(probs, f"probabilities[{index}]", vals.size))
    return checked_values, checked_probabilities


# --------------------------------------------------------------------------------------------------
# The plan


@dataclass(frozen=True)
class KantorovichPlan:
    """The Kantorovich (comonotone) plan between pmfs ``p`` and ``q`` on ``support``, stored sparsely.

    Attributes
    ----------
    support : ndarray
        Strictly increasing points.
    p, q : ndarray
        The two pmfs (P(X | s_i) and P(X | s_j)).
    rows, cols : ndarray
        Indices into ``support`` of the pairs (x, x') the plan uses, in quantile order.
    mass : ndarray
        The plan's mass on each pair.
    sensitivity : float
        max abs(x - x') over the pairs: the plan's sensitivity, W_inf(p, q).

    References
    ----------
    .. [1] N. Ding, "Kantorovich mechanism for Pufferfish privacy." Section 3.

    Examples
    --------
    >>> plan = kantorovich_plan([0.5, 0.5, 0.0], [0.0, 0.5, 0.5], [1, 2, 3])
    >>> plan.matrix().tolist()
    [[0.0, 0.5, 0.0], [0.0, 0.0, 0.5], [0.0, 0.0, 0.0]]
    """

    support: np.ndarray
    p: np.ndarray
    q: np.ndarray
    rows: np.ndarray
    cols: np.ndarray
    mass: np.ndarray
    sensitivity: float

    def matrix(self) -> np.ndarray:
        """The plan as a dense K x K matrix: entry (i, j) is the mass moved from support[i] to support[j]."""
        size = self.support.size
        if size > 20_000:
            raise ValueError(f"a dense plan over {size} support points is too large; use rows, cols and mass")
        dense = np.zeros((size, size))
        dense[self.rows, self.cols] = self.mass
        return dense

    @property
    def displacement(self) -> np.ndarray:
        """abs(x - x') of each pair."""
        return np.abs(self.support[self.rows] - self.support[self.cols])


def kantorovich_plan(p, q, support, *, tie_tolerance: float = 0.0) -> KantorovichPlan:
    r"""The Kantorovich optimal plan between pmfs ``p`` and ``q`` on the line: the quantile coupling.

    For any convex cost of x - x' the optimal plan is comonotone, the second difference of

    .. math::

        \pi^*((-\infty, x], (-\infty, x']) = \min\{F_p(x), F_q(x')\}

    (the north-west corner rule on the sorted support). It is computed exactly by
    `quantile_coupling` (no floating-point crumbs: every pair carries mass).

    Parameters
    ----------
    p, q : array_like
        Pmfs over ``support`` (one mass per point, each summing to 1).
    support : array_like
        Strictly increasing points shared by both pmfs.
    tie_tolerance : float
        Passed to `quantile_coupling`: merges cumulative levels that differ only by rounding.

    See Also
    --------
    ppdinfer.privacy.plan_sensitivity : The largest displacement a plan uses.
    ppdinfer.privacy.quantile_coupling : The same coupling, as paired quantiles.

    References
    ----------
    .. [1] N. Ding, "Kantorovich mechanism for Pufferfish privacy." Section 3.

    Examples
    --------
    Appendix C, example 1 (Song et al. 2017): sensitivity 1.

    >>> plan = kantorovich_plan([1/3, 1/6, 1/3, 1/6], [1/4, 1/4, 1/6, 1/3], [1, 2, 3, 4], tie_tolerance=1e-12)
    >>> [(int(i) + 1, int(j) + 1, round(float(m), 4)) for i, j, m in zip(plan.rows, plan.cols, plan.mass)]
    [(1, 1, 0.25), (1, 2, 0.0833), (2, 2, 0.1667), (3, 3, 0.1667), (3, 4, 0.1667), (4, 4, 0.1667)]
    >>> plan.sensitivity
    1.0
    """
    coupling = quantile_coupling(p, q, support, tie_tolerance=tie_tolerance)
    points = np.asarray(support, dtype=np.float64)
    return KantorovichPlan(
        points,
        _checks.pmf(p, "p", points.size),
        _checks.pmf(q, "q", points.size),
        np.searchsorted(points, coupling.x),
        np.searchsorted(points, coupling.y),
        coupling.mass,
        coupling.max_displacement,
    )


def plan_sensitivity(
    plan, support, *, p=None, q=None, mass_tolerance: float = 0.0, marginal_tolerance: float = 1e-9
) -> float:
    r"""The sensitivity of any coupling given as a K x K matrix: the largest displacement it uses.

    .. math::

        \Delta(\pi) = \max \{ \lvert x_i - x_j \rvert : \pi_{ij} > \text{mass\_tolerance} \}.

    For the optimal plan of `kantorovich_plan` this is its ``sensitivity``; use this function for a
    plan from elsewhere (an LP solver, whose optimum with cost abs(x - x') is not unique and may
    use longer moves). ``mass_tolerance`` ignores solver crumbs.

    The matrix must be a coupling: no entry below ``-mass_tolerance`` (a solver's crumbs may be
    slightly negative), total mass 1, and, when the pmfs ``p`` and ``q`` are given, row sums
    ``p`` and column sums ``q``, each within ``marginal_tolerance``. Anything else is refused: its
    "sensitivity" would not bound the displacement between P(X | s_i) and P(X | s_j).

    Parameters
    ----------
    plan : array_like, shape (K, K)
        Entry (i, j): the mass moved from support[i] to support[j].
    support : array_like, shape (K,)
        Strictly increasing points.
    p, q : array_like, optional
        The pmfs the plan must couple (its row and column sums).
    mass_tolerance : float
        Entries at most this large count as empty (and as negative as this, as zero); in [0, 1e-3].
    marginal_tolerance : float
        The largest discrepancy allowed in the total mass and in each marginal; in [0, 1e-3].

    See Also
    --------
    ppdinfer.privacy.support_diameter : The baseline sensitivity.

    References
    ----------
    .. [1] N. Ding, "Kantorovich mechanism for Pufferfish privacy." Section 3.

    Examples
    --------
    >>> plan_sensitivity([[0.5, 0.0], [0.0, 0.5]], [0, 10])
    0.0
    >>> plan_sensitivity([[0.0, 0.5], [0.5, 1e-17]], [0, 10], mass_tolerance=1e-12)
    10.0
    >>> plan_sensitivity([[0.5, 0.0], [0.0, 0.5]], [0, 10], p=[0.5, 0.5], q=[0.0, 1.0])
    Traceback (most recent call last):
    ...
    ValueError: plan's column sums must equal q (within marginal_tolerance 1e-09): off by up to 0.5
    """
    support = _checks.support_points(support)
    matrix = finite_array(plan, "plan")
    if matrix.shape != (support.size, support.size):
        raise ValueError(f"plan must be a {support.size} x {support.size} matrix, got shape {matrix.shape}")
    mass_tolerance = _checks.tolerance(mass_tolerance, "mass_tolerance")
    marginal_tolerance = _checks.tolerance(marginal_tolerance, "marginal_tolerance")
    if matrix.min() < -mass_tolerance:
        raise ValueError(f"plan must be non-negative (a coupling); its smallest entry is {float(matrix.min())!r}")
    total = float(matrix.sum())
    if abs(total - 1.0) > marginal_tolerance:
        raise ValueError(f"plan must carry total mass 1 (a coupling of two pmfs), got {total!r}")
    for name, pmf, sums, label in (("p", p, matrix.sum(axis=1), "row"), ("q", q, matrix.sum(axis=0), "column")):
        if pmf is None:
            continue
        gap = float(np.max(np.abs(sums - _checks.pmf(pmf, name, support.size))))
        if gap > marginal_tolerance:
            raise ValueError(
                f"plan's {label} sums must equal {name} (within marginal_tolerance "
                f"{marginal_tolerance!r}): off by up to {gap:.3g}"
            )
    rows, cols = np.nonzero(matrix > mass_tolerance)
    if rows.size == 0:
        raise ValueError("plan must carry mass above mass_tolerance")
    return float(np.max(np.abs(support[rows] - support[cols])))


def support_diameter(p, q, support) -> float:
    r"""The baseline sensitivity (the paper's (9)): the largest distance between the two supports.

    .. math::

        \Delta_f = \max \{ \lvert x - x' \rvert : p(x) > 0,\ q(x') > 0 \}.

    See Also
    --------
    ppdinfer.privacy.plan_sensitivity : The plan's (smaller) sensitivity.

    References
    ----------
    .. [1] N. Ding, "Kantorovich mechanism for Pufferfish privacy." Equation (9).

    Examples
    --------
    >>> support_diameter([0.5, 0.5, 0.0], [0.0, 0.5, 0.5], [1, 2, 3])
    2.0
    """
    support = _checks.support_points(support)
    in_p = support[_checks.pmf(p, "p", support.size) > 0]
    in_q = support[_checks.pmf(q, "q", support.size) > 0]
    return float(max(in_p.max() - in_q.min(), in_q.max() - in_p.min()))


# --------------------------------------------------------------------------------------------------
# Calibrations


def kantorovich_laplace(plans, epsilon: float, *, relaxed: bool = False, discrete: bool = False):
    r"""Laplace noise for (eps, S)-Pufferfish privacy from the plans of every secret pair.

    Lemma 1 / Theorem 1 (``relaxed=False``): the exponential mechanism with d(z) = abs(z) and
    eta(theta) = 1 / theta, scale

    .. math::

        \theta = \eta^{-1}\Big(\frac{\epsilon}{\max \Delta}\Big) = \frac{\max_{(s_i, s_j)} \Delta(\pi^*_{ij})}{\epsilon}.

    Theorem 2 (``relaxed=True``): the scale of `relaxed_laplace_scale`, never larger. In the example
    (Appendix C's second) column 5 gives 0.125 z^2 + 0.075 z = 0.2 e, z* = 1.807, theta = 1.6902.

    Returns a `ppdinfer.mechanisms.Laplace` (``discrete=True``: ``DiscreteLaplace``, the same
    exponential family on the integers, for an integer X) with that scale: its ``epsilon`` is the
    target and its ``sensitivity`` is epsilon times the scale (the plan sensitivity for Theorem 1).

    See Also
    --------
    ppdinfer.privacy.kantorovich_gaussian : Gaussian noise for (eps, delta).
    ppdinfer.privacy.privacy_loss : The exact privacy loss of the calibrated noise.
    ppdinfer.privacy.relaxed_laplace_scale : Theorem 2's scale.

    References
    ----------
    .. [1] N. Ding, "Kantorovich mechanism for Pufferfish privacy." Lemma 1 and Theorems 1-2.
    .. [2] D. Kifer and A. Machanavajjhala, "Pufferfish: a framework for mathematical privacy
        definitions," ACM Transactions on Database Systems 39(1), 2014.

    Examples
    --------
    >>> plan = kantorovich_plan([0.2, 0.225, 0.5, 0.075, 0], [0, 0.075, 0.5, 0.225, 0.2], [1, 2, 3, 4, 5])
    >>> kantorovich_laplace([plan], 1.0)
    Laplace(epsilon=1.0, sensitivity=2.0)
    >>> round(1 / kantorovich_laplace([plan], 1.0, relaxed=True).rate, 4)
    1.6902
    """
    epsilon = positive_finite(epsilon, "epsilon")
    plans = _plans(plans)
    sensitivity = max(plan.sensitivity for plan in plans)
    if sensitivity == 0:
        raise ValueError("plans: every plan keeps all its mass in place (p = q): no noise is needed")
    family = DiscreteLaplace if discrete else Laplace
    if relaxed:
        scale = relaxed_laplace_scale(plans, epsilon)
        if scale < sensitivity / epsilon:  # equal (up to rounding) when a row or column moves one distance only
            return _pufferfish(family(epsilon, epsilon * scale), epsilon, 0.0, "Theorem 2 (relaxed Laplace scale)")
    return _pufferfish(family(epsilon, sensitivity), epsilon, 0.0, "Lemma 1 / Theorem 1 (Kantorovich mechanism)")


def _pufferfish(mechanism, epsilon: float, delta: float, construction: str):
    """``mechanism`` stating the (epsilon, delta)-Pufferfish privacy of ``construction`` (Ding et al.)."""
    stated = Guarantee("pufferfish", epsilon=epsilon, delta=delta or None, note=construction)
    return mechanism.with_guarantee(stated)


def relaxed_laplace_scale(plans, epsilon: float) -> float:
    r"""Theorem 2: the Laplace scale from one root per row and column of each plan; the largest one.

    With z = e^(1 / theta), each column x' of a plan (the mass arriving at x') gives

    .. math::

        \sum_x z^{\lvert x - x' \rvert} \pi^*(x, x') = e^{\epsilon} q(x'),

    and each row x the same with p(x); for integer displacements a polynomial in z. Its left side
    equals q(x') at z = 1 and increases, so there is exactly one root z* > 1 when the column moves
    any mass; theta = 1 / ln z*. Columns and rows whose mass all stays in place are skipped. The
    root is found in u = ln z (bracketed, then rounded down so that theta errs large).

    See Also
    --------
    ppdinfer.privacy.kantorovich_laplace : The calibration that uses it.

    References
    ----------
    .. [1] N. Ding, "Kantorovich mechanism for Pufferfish privacy." Theorem 2.

    Examples
    --------
    >>> plan = kantorovich_plan([0.5, 0.5, 0.0], [0.0, 0.5, 0.5], [0, 1, 2])
    >>> round(relaxed_laplace_scale([plan], 1.0), 6)   # each column: 0.5 z = e 0.5, so z* = e
    1.0
    """
    epsilon = positive_finite(epsilon, "epsilon")
    scales = [0.0]
    for plan in _plans(plans):
        keep = plan.mass > 0
        distance, mass = plan.displacement[keep], plan.mass[keep]
        for index in (plan.rows[keep], plan.cols[keep]):
            for group in np.unique(index):
                chosen = index == group
                if np.any(distance[chosen] > 0):
                    # The root is at least epsilon / (largest distance): there every term is <= e^eps.
                    rate = _relaxed_rate(distance[chosen], mass[chosen], epsilon)
                    scales.append(1.0 / max(rate, epsilon / float(distance[chosen].max())))
    return max(scales)


def _relaxed_rate(distance: np.ndarray, mass: np.ndarray, epsilon: float) -> float:
    """The root u > 0 of log sum(mass e^(u distance)) = epsilon + log sum(mass), rounded down."""
    log_mass = np.log(mass)
    log_total = float(special.logsumexp(log_mass))
    excess = lambda u: float(special.logsumexp(log_mass + u * distance)) - log_total - epsilon  # noqa: E731
    moved = distance > 0
    # One moved entry alone reaches the level by the smallest of these u; twice it the excess is >= epsilon.
    high = 2 * float(np.min((epsilon + log_total - log_mass[moved]) / distance[moved]))
    rate = optimize.brentq(excess, 0.0, high, xtol=1e-15, rtol=4 * np.finfo(float).eps)
    for _ in range(_SEARCH_STEPS):
        if excess(rate) <= 0:
            return rate
        rate = float(np.nextafter(rate, 0.0))
    raise RuntimeError(f"Theorem 2 root: no rate with a non-positive excess found within {_SEARCH_STEPS} steps")


def theorem3_constant(
    epsilon: float, delta: float, method: str = "bound", constant: float = CORRECTED_CONSTANT
) -> float:
    r"""Theorem 3's factor c in theta = c Delta / eps for Gaussian noise and (eps, delta).

    (a) ``method="classical"``: c = sqrt(2 ln(1.25 / delta)), for eps < 1. (b) ``method="bound"``:

    .. math::

        c = k \delta^{-1/3} + \sqrt{(k \delta^{-1/3})^2 + \epsilon / 2}, \qquad
        k = \tfrac12 (2/e)^{1/3} (2/\pi)^{1/6} = 0.41866 \to 0.4187,

    the root of c - eps / (2c) = 2 k delta^(-1/3) (the proof's tail condition). The paper prints
    k = 0.41 (`PRINTED_CONSTANT`), below the proof's value; pass it as ``constant`` to compare.

    See Also
    --------
    ppdinfer.privacy.kantorovich_gaussian : The calibration that uses it.

    References
    ----------
    .. [1] N. Ding, "Kantorovich mechanism for Pufferfish privacy." Theorem 3.

    Examples
    --------
    >>> round(theorem3_constant(0.5, 1e-5, "classical"), 4)
    4.8448
    >>> round(theorem3_constant(2.0, 1e-5), 4)
    38.8944
    """
    epsilon = positive_finite(epsilon, "epsilon")
    delta = probability(delta, "delta")
    if method == "classical":
        return classical_gaussian_sigma(epsilon, delta) * epsilon
    if method == "bound":
        half = positive_finite(constant, "constant") * delta ** (-1 / 3)
        return half + math.sqrt(half**2 + epsilon / 2)
    raise ValueError(f"method must be 'classical' or 'bound', got {method!r}")


def kantorovich_gaussian(
    plans, epsilon: float, delta: float, method: str = "bound", constant: float = CORRECTED_CONSTANT
) -> Gaussian:
    r"""Theorem 3: Gaussian noise with standard deviation theta = c max Delta / eps for (eps, delta).

    .. math::

        \theta = \frac{c\, \max_{(s_i, s_j)} \Delta(\pi^*_{ij})}{\epsilon},

    c from `theorem3_constant` (``method`` "classical" or "bound"). ``method="analytic"`` instead
    calibrates Balle and Wang's exact Gaussian mechanism to max Delta: by joint convexity of the
    hockey-stick divergence the mixtures are then (eps, delta)-indistinguishable too.

    See Also
    --------
    ppdinfer.privacy.kantorovich_laplace : Laplace noise for pure Pufferfish privacy.
    ppdinfer.privacy.privacy_delta : The exact delta of the calibrated noise.
    ppdinfer.privacy.theorem3_constant : Its factor c.

    References
    ----------
    .. [1] N. Ding, "Kantorovich mechanism for Pufferfish privacy." Theorem 3.

    Examples
    --------
    >>> plan = kantorovich_plan([0.5, 0.5, 0.0], [0.0, 0.5, 0.5], [0, 1, 2])
    >>> round(kantorovich_gaussian([plan], 0.5, 1e-5, method="classical").sigma, 3)
    9.69
    """
    epsilon = positive_finite(epsilon, "epsilon")
    delta = probability(delta, "delta")
    sensitivity = max(plan.sensitivity for plan in _plans(plans))
    if sensitivity == 0:
        raise ValueError("plans: every plan keeps all its mass in place (p = q): no noise is needed")
    if method == "analytic":
        noise = Gaussian.from_epsilon_delta(epsilon, delta, sensitivity)
    else:
        noise = Gaussian(theorem3_constant(epsilon, delta, method, constant) * sensitivity / epsilon)
    return _pufferfish(noise, epsilon, delta, f"Theorem 3 (Kantorovich Gaussian mechanism, {method})")


def _plans(plans) -> list[KantorovichPlan]:
    plans = [plans] if isinstance(plans, KantorovichPlan) else list(plans)
    if not plans or not all(isinstance(plan, KantorovichPlan) for plan in plans):
        raise ValueError("plans must be a KantorovichPlan or a non-empty sequence of them")
    return plans


# --------------------------------------------------------------------------------------------------
# Exact audits


def privacy_loss(plans, mechanism) -> float:
    r"""The exact Pufferfish privacy loss of X + Laplace noise: the largest abs(log ratio) of the mixtures.

    .. math::

        L = \max_{(s_i, s_j)} \sup_{y \in \mathbb{R}}
            \Big\lvert \log \frac{\sum_x p(x) e^{-\lvert y - x\rvert / \theta}}
                                  {\sum_x q(x) e^{-\lvert y - x\rvert / \theta}} \Big\rvert.

    Between two neighbouring support points both mixtures have the form A e^(-y/theta) +
    B e^(y/theta), so the ratio is a Moebius function of e^(2y/theta), monotone; beyond the end
    points it is constant. The supremum is therefore attained at a support point, where it is
    evaluated in log space at all K points at once in O(K) time (each mixture splits into the
    points left of y and those right of it, and each part follows from its neighbour's by one
    factor). ``mechanism`` is a ``Laplace`` (or a ``DiscreteLaplace`` with an
    integer support: the integers include every support point).

    See Also
    --------
    ppdinfer.privacy.kantorovich_laplace : The Laplace calibration.
    ppdinfer.privacy.kantorovich_gaussian : The Gaussian calibration.
    ppdinfer.privacy.privacy_delta : The Gaussian counterpart.

    References
    ----------
    .. [1] N. Ding, "Kantorovich mechanism for Pufferfish privacy." Section 3.
    .. [2] D. Kifer and A. Machanavajjhala, "Pufferfish: a framework for mathematical privacy
        definitions," ACM Transactions on Database Systems 39(1), 2014.

    Examples
    --------
    >>> plan = kantorovich_plan([1/3, 1/6, 1/3, 1/6], [1/4, 1/4, 1/6, 1/3], [1, 2, 3, 4])
    >>> round(privacy_loss([plan], kantorovich_laplace([plan], 1.0)), 4)
    0.2945
    """
    noise = _additive_noise(mechanism, power=1, kind="a Laplace or DiscreteLaplace")
    plans = _plans(plans)
    if noise.discrete and any(np.any(plan.support != np.round(plan.support)) for plan in plans):
        raise ValueError("mechanism: a DiscreteLaplace needs integer support points")
    return max(_laplace_loss(plan, 1.0 / noise.rate) for plan in plans)


def _additive_noise(mechanism, power: int, kind: str, continuous: bool = False):
    """The mechanism's iid additive noise of the given power (1: Laplace shapes, 2: Gaussian), or a ValueError."""
    noise = getattr(mechanism, "additive_noise", None)
    if noise is None or noise.power != power or (continuous and noise.discrete):
        raise ValueError(f"mechanism must be {kind} with one noise scale for every coordinate, got {mechanism!r}")
    return noise


def _laplace_loss(plan: KantorovichPlan, scale: float) -> float:
    """max over the support points y of abs(log f_p(y) - log f_q(y)) for Laplace noise of ``scale``; O(K).

    The O(K) recursion ranks the points; its rounding grows with K (to about 1e-13), so the
    `_REEVALUATED` points it ranks highest are evaluated again directly, one log-sum-exp each, to
    the last bits (a calibration exactly at the limit, as Theorem 1's in a pure shift, stays there).
    """
    with np.errstate(divide="ignore"):
        log_p, log_q = np.log(plan.p), np.log(plan.q)
    rate = 1.0 / scale
    ranked = np.abs(
        laplace_mixture_logpdf(log_p, plan.support, rate) - laplace_mixture_logpdf(log_q, plan.support, rate)
    )
    count = min(_REEVALUATED, ranked.size)
    top = np.argpartition(ranked, ranked.size - count)[ranked.size - count :]
    kernel = -np.abs(plan.support[top, None] - plan.support[None, :]) / scale
    difference = special.logsumexp(kernel + log_p, axis=1) - special.logsumexp(kernel + log_q, axis=1)
    return float(np.max(np.abs(difference)))


def privacy_delta(plans, mechanism: Gaussian, epsilon: float) -> float:
    r"""The exact delta at ``epsilon`` of X + Gaussian noise: the hockey-stick divergence of the mixtures.

    .. math::

        \delta(\epsilon) = \max_{(s_i, s_j),\ \text{both directions}}
            \int \big(f_i(y) - e^{\epsilon} f_j(y)\big)_+ \, dy,
        \qquad f_i(y) = \sum_x p(x)\, \varphi_\sigma(y - x).

    The standard (eps, delta) guarantee (not the paper's pointwise "delta-approximation"). The
    sets where f_i > e^eps f_j are located on a grid of 32 points per sigma reaching 40 sigma past
    the support, refined by root finding; their masses are then sums of normal CDFs. An interval
    narrower than the grid spacing could be missed.

    See Also
    --------
    ppdinfer.privacy.privacy_loss : The Laplace counterpart.
    ppdinfer.privacy.smallest_gaussian_sigma : The smallest sigma it allows.

    References
    ----------
    .. [1] N. Ding, "Kantorovich mechanism for Pufferfish privacy." Theorem 3.
    .. [2] D. Kifer and A. Machanavajjhala, "Pufferfish: a framework for mathematical privacy
        definitions," ACM Transactions on Database Systems 39(1), 2014.

    Examples
    --------
    >>> plan = kantorovich_plan([1.0, 0.0], [0.0, 1.0], [0, 1])   # a single shift by 1
    >>> round(privacy_delta([plan], Gaussian(1.0), 1.0), 4)          # = gaussian_delta(1, 1)
    0.1269
    """
    sigma = math.sqrt(0.5 / _additive_noise(mechanism, power=2, kind="a Gaussian", continuous=True).rate)
    epsilon = positive_finite(epsilon, "epsilon")
    worst = 0.0
    for plan in _plans(plans):
        worst = max(
            worst,
            _hockey_stick(plan.p, plan.q, plan.support, sigma, epsilon),
            _hockey_stick(plan.q, plan.p, plan.support, sigma, epsilon),
        )
    return worst


def _hockey_stick(p: np.ndarray, q: np.ndarray, support: np.ndarray, sigma: float, epsilon: float) -> float:
    """integral of (f_p - e^eps f_q)_+ for the Gaussian mixtures f_p, f_q of standard deviation ``sigma``."""
    with np.errstate(divide="ignore"):
        log_p, log_q = np.log(p), np.log(q)

    def excess(y):
        y = np.atleast_1d(np.asarray(y, dtype=np.float64))[:, None]
        kernel = -0.5 * ((y - support[None, :]) / sigma) ** 2
        return special.logsumexp(kernel + log_p, axis=1) - special.logsumexp(kernel + log_q, axis=1) - epsilon

    low, high = support[0] - 40 * sigma, support[-1] + 40 * sigma
    points = int(math.ceil((high - low) / sigma * _GRID_PER_SIGMA)) + 1
    if points > _GRID_LIMIT:
        raise ValueError(
            f"mechanism: sigma = {sigma!r} is too small against the support's span "
            f"{support[-1] - support[0]!r} for the grid audit ({points} > {_GRID_LIMIT} points)"
        )
    grid = np.linspace(low, high, points)
    signs = np.concatenate([excess(chunk) for chunk in np.array_split(grid, max(1, grid.size // 4096))]) > 0
    edges = [-math.inf] if signs[0] else []
    for k in np.flatnonzero(signs[1:] != signs[:-1]).tolist():
        edges.append(optimize.brentq(lambda y: float(excess(y)[0]), grid[k], grid[k + 1], xtol=1e-14 * sigma))
    if signs[-1]:
        edges.append(math.inf)
    total = 0.0
    for a, b in zip(edges[0::2], edges[1::2]):
        total += _interval_mass(p, support, sigma, a, b) - math.exp(epsilon) * _interval_mass(q, support, sigma, a, b)
    return max(total, 0.0)


def _interval_mass(weights: np.ndarray, support: np.ndarray, sigma: float, a: float, b: float) -> float:
    """P(a < Y < b) for Y = X + N(0, sigma^2), X ~ weights; each term in its more accurate tail."""
    right = (a - support) > 0  # the interval lies right of the atom: upper tails, no cancellation
    upper = special.ndtr((support - a) / sigma) - special.ndtr((support - b) / sigma)
    lower = special.ndtr((b - support) / sigma) - special.ndtr((a - support) / sigma)
    return float(np.sum(weights * np.where(right, upper, lower)))


def smallest_laplace_scale(plans, epsilon: float, *, rtol: float = 1e-9) -> float:
    r"""The smallest Laplace scale whose exact `privacy_loss` is at most ``epsilon`` (bisection).

    .. math::

        \theta_{\min} = \min \{\theta : L(\theta) \le \epsilon\},

    searched between Theorem 1's scale (always enough) and its halvings. The loss does not
    increase with theta (Laplace(theta') is Laplace(theta) plus independent noise for theta' >
    theta), so bisection applies; the returned scale errs large, by at most ``rtol`` relative.

    Examples
    --------
    >>> plan = kantorovich_plan([0.2, 0.225, 0.5, 0.075, 0], [0, 0.075, 0.5, 0.225, 0.2], [1, 2, 3, 4, 5])
    >>> round(smallest_laplace_scale([plan], 1.0), 4)   # Theorem 1: 2, Theorem 2: 1.6902
    1.1545
    """
    epsilon = positive_finite(epsilon, "epsilon")
    plans = _plans(plans)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratios = [np.abs(np.log(plan.p) - np.log(plan.q))[(plan.p > 0) | (plan.q > 0)] for plan in plans]
    if max(float(ratio.max()) for ratio in ratios) <= epsilon:
        return 0.0  # X itself is epsilon-indistinguishable: the limit of the loss as the scale goes to 0
    if epsilon < _LOSS_RESOLUTION:
        raise ValueError(
            f"epsilon={epsilon!r} is below what the float64 audit resolves ({_LOSS_RESOLUTION:.3g}: the loss is a "
            "difference of logarithms, exact to a few units in the last place); use epsilon >= "
            f"{_LOSS_RESOLUTION:.3g}, or Theorem 1's scale max sensitivity / epsilon, which is always enough"
        )
    high = max(plan.sensitivity for plan in plans) / epsilon
    limit = high * 2.0**20  # Theorem 1's scale is enough in exact arithmetic: far past it, only rounding fails

    def enough(scale: float) -> bool:
        loss = max(_laplace_loss(plan, scale) for plan in plans)
        if loss > epsilon and scale > limit:
            raise ValueError(
                f"epsilon={epsilon!r} is below what the float64 audit resolves for these plans: the computed loss "
                f"at 2^20 times Theorem 1's scale is still {loss:.3g}; use a larger epsilon, or Theorem 1's scale "
                f"{high:.6g}, which is always enough"
            )
        return loss <= epsilon

    return _bisect_scale(enough, high, rtol)


def smallest_gaussian_sigma(plans, epsilon: float, delta: float, *, rtol: float = 1e-6) -> float:
    r"""The smallest Gaussian sigma whose exact `privacy_delta` at ``epsilon`` is at most ``delta``.

    .. math::

        \sigma_{\min} = \min \{\sigma : \delta_\sigma(\epsilon) \le \delta\},

    by bisection below the analytic Gaussian calibration to the largest plan sensitivity (always
    enough). delta_sigma(eps) does not increase with sigma (adding independent noise).

    Examples
    --------
    >>> plan = kantorovich_plan([1.0, 0.0], [0.0, 1.0], [0, 1])
    >>> round(smallest_gaussian_sigma([plan], 1.0, 1e-5), 3)   # a shift: the analytic Gaussian
    3.731
    """
    epsilon = positive_finite(epsilon, "epsilon")
    delta = probability(delta, "delta")
    plans = _plans(plans)
    unnoised = max(
        max(
            np.maximum(plan.p - math.exp(epsilon) * plan.q, 0).sum(),
            np.maximum(plan.q - math.exp(epsilon) * plan.p, 0).sum(),
        )
        for plan in plans
    )
    if unnoised <= delta:
        return 0.0  # X itself is (epsilon, delta)-indistinguishable: the limit as sigma goes to 0
    sensitivity = max(plan.sensitivity for plan in plans)
    high = Gaussian.from_epsilon_delta(epsilon, delta, sensitivity).sigma
    return _bisect_scale(lambda sigma: privacy_delta(plans, Gaussian(sigma), epsilon) <= delta, high, rtol)


def _bisect_scale(enough, high: float, rtol: float) -> float:
    """The smallest scale for which the monotone predicate ``enough`` holds, given that ``high`` passes."""
    high = raise_until(high, enough)  # a sufficient scale may miss the audit by rounding alone
    low = high / 2
    for _ in range(_SEARCH_STEPS):
        if not enough(low):
            break
        high, low = low, low / 2
    else:
        return 0.0  # every halving passed: no noise is needed up to the float range
    for _ in range(_SEARCH_STEPS):
        if high - low <= rtol * high:
            return high
        middle = 0.5 * (low + high)
        high, low = (middle, low) if enough(middle) else (high, middle)
    raise RuntimeError(f"bisection did not reach rtol {rtol} within {_SEARCH_STEPS} steps")
