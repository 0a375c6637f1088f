"""Two-stage post-processing of noisy county counts (COVID-19 case study, method 1).

Noisy case and death counts ``y_c, y_d`` of J counties (discrete Laplace noise, possibly
negative) are made congenial with the public statewide case total ``s`` in two steps:

(a) L2 projection::

        (c~, d~) = argmin ||(c, d) - (y_c, y_d)||_2^2  over c, d in R^J
                   s.t.  sum_j c_j = s,  c_j >= d_j >= 0 for every j;

(b) integer step (with the plus sign restored, ERRATUM 4 of the project notes)::

        (c*, d*) = (floor c~, floor d~) + argmin_{(u, v) in {0,1}^2J}
                   sum_j |floor c~_j + u_j - c~_j| + |floor d~_j + v_j - d~_j|
                   s.t.  sum_j (floor c~_j + u_j) = s,
                         floor c~_j + u_j >= floor d~_j + v_j >= 0 for every j.

As printed in the paper, both the case and the death floors receive a 0/1 vector; only the
case total is constrained. Both steps are solved exactly in int64 arithmetic: with integer
inputs the projection is rational with a common denominator 2k per release (``_project``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .validation import integer_valued, nonnegative_counts

__all__ = ["PostProcessed", "postprocess"]

# int64 arithmetic stays exact while 4 * total + 12 * J * max|y| < 2**62 (see _check_magnitude).
_LIMIT = 2**62


@dataclass(frozen=True)
class PostProcessed:
    """Result of :func:`postprocess`; every array has the shape of ``y_cases``.

    Attributes
    ----------
    cases, deaths : ndarray of int64
        Integer post-processed counts: ``cases.sum(-1) == total`` and ``cases >= deaths >= 0``.
    projection_cases, projection_deaths : ndarray of float64
        The L2 projection (c~, d~) of step (a).
    contracted_case_zeros : ndarray of bool
        ContractedCaseZeros: the projection puts the county's cases at 0 (c~_j = 0). The
        nonnegativity face of the constraint set is then reached, so a whole range of noisy
        case counts (every y_c,j at or below the county's threshold) collapses onto 0.
    contracted_death_zeros : ndarray of bool
        ContractedDeathZeros: the same for deaths (d~_j = 0).
    contracted_rates : ndarray of bool
        ContractedRates: the projection lands on the face cases = deaths > 0 (c~_j = d~_j > 0),
        so a range of noisy (case, death) pairs collapses onto survival rate
        1 - d~_j / c~_j = 0.

    Examples
    --------
    >>> from ppdinfer.postprocessing import postprocess
    >>> result = postprocess(y_cases=[12, -3, 7], y_deaths=[1, 2, 0], total=15)
    >>> result.projection_cases, result.contracted_death_zeros
    (array([10.,  0.,  5.]), array([False,  True,  True]))
    """

    cases: np.ndarray
    deaths: np.ndarray
    projection_cases: np.ndarray
    projection_deaths: np.ndarray
    contracted_case_zeros: np.ndarray
    contracted_death_zeros: np.ndarray
    contracted_rates: np.ndarray


def postprocess(y_cases, y_deaths, total) -> PostProcessed:
    """Project noisy county counts onto the public constraints, then round to integers.

    Parameters
    ----------
    y_cases, y_deaths : array_like of int, shape (J,) or (R, J)
        Noisy case and death counts of J >= 1 counties (negative values allowed); a 2-D
        input is a batch of R independent releases.
    total : int or array_like of int, shape () or (R,)
        Public statewide case total(s), >= 0.

    Returns
    -------
    PostProcessed
        Integer counts, the real-valued projection and the contraction indicators.

    Raises
    ------
    ValueError
        Naming the parameter: non-integer or mismatched ``y_cases``/``y_deaths``, no county,
        negative or non-integer ``total``, or values too large for exact int64 arithmetic.

    See Also
    --------
    ppdinfer.projection.project_l2 : The projection onto general invariants.
    ppdinfer.mechanisms.PostProcessedRelease : The likelihood of a post-processed release.

    Notes
    -----
    Every total >= 0 is attainable, so there is no infeasible input: (c, d) = (s e_1, 0)
    meets the constraints of (a), whose strictly convex objective then has a unique minimizer,
    and step (b) is feasible because its case budget ``s - sum floor c~`` equals the sum of
    the fractional parts of c~, an integer in [0, J). The L1 minimizer of (b) need not be
    unique: ties go to the county with the lower index, and a death projection with
    fractional part exactly 1/2 is rounded down.

    References
    ----------
    .. [1] J. Seeman, M. Reimherr and A. Slavkovic, "Formal privacy for partially private data,"
        arXiv:2204.01102, 2022. Section 4.
    .. [2] R. Gong and X.-L. Meng, "Congenial differential privacy under mandated disclosure,"
        Proceedings of the 2020 ACM-IMS Foundations of Data Science Conference (FODS), 2020.

    Examples
    --------
    >>> from ppdinfer.postprocessing import postprocess
    >>> result = postprocess(y_cases=[12, -3, 7], y_deaths=[1, 2, 0], total=15)
    >>> result.cases, result.deaths               # cases sum to 15, cases >= deaths >= 0
    (array([10,  0,  5]), array([1, 0, 0]))
    >>> result.contracted_case_zeros              # the noisy -3 collapsed onto 0
    array([False,  True, False])
    """
    y_c, y_d, s = _validated(y_cases, y_deaths, total)
    num_c, num_d, denom = _project(y_c, y_d, s)
    cases, deaths = _integer_step(num_c, num_d, denom, s)
    shape = np.shape(y_cases)
    fields = {
        "cases": cases,
        "deaths": deaths,
        "projection_cases": num_c / denom[:, None],
        "projection_deaths": num_d / denom[:, None],
        "contracted_case_zeros": num_c == 0,
        "contracted_death_zeros": num_d == 0,
        "contracted_rates": (num_c == num_d) & (num_c > 0),
    }
    return PostProcessed(**{name: _frozen(value.reshape(shape)) for name, value in fields.items()})


def _validated(y_cases, y_deaths, total) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Return (y_c, y_d) as int64 (R, J) and the totals as int64 (R,)."""
    y_c = integer_valued(y_cases, "y_cases")
    y_d = integer_valued(y_deaths, "y_deaths")
    if y_c.ndim not in (1, 2):
        raise ValueError(f"y_cases must have shape (J,) or (R, J), got shape {y_c.shape}")
    if y_d.shape != y_c.shape:
        raise ValueError(f"y_deaths must have the shape of y_cases {y_c.shape}, got {y_d.shape}")
    if y_c.shape[-1] < 1:
        raise ValueError("y_cases must hold at least one county (J >= 1)")
    s = nonnegative_counts(total, "total")
    batch = y_c.shape[:-1]
    if s.shape not in ((), batch):
        raise ValueError(f"total must be a scalar or have shape {batch}, got shape {s.shape}")
    y_c, y_d = y_c.reshape(-1, y_c.shape[-1]), y_d.reshape(-1, y_c.shape[-1])
    s = np.broadcast_to(s, y_c.shape[:1])
    _check_magnitude(y_c, y_d, s)
    return y_c, y_d, s


def _check_magnitude(y_c: np.ndarray, y_d: np.ndarray, s: np.ndarray) -> None:
    """Refuse inputs whose intermediate numerators in ``_project`` could overflow int64.

    With M = max|y| and J counties the breakpoints are bounded by 2M, their partial sums by
    4JM, and the numerators 2k y_c + 2n by 4 total + 12 J M.
    """
    if y_c.size == 0:
        return
    big_y = max(-int(y_c.min()), int(y_c.max()), -int(y_d.min()), int(y_d.max()))
    if 4 * int(s.max()) + 12 * y_c.shape[1] * big_y >= _LIMIT:
        raise ValueError("y_cases, y_deaths and total are too large for exact int64 arithmetic")


def _project(y_c: np.ndarray, y_d: np.ndarray, s: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Exact L2 projection (a) per row, as int64 numerators over a common denominator.

    Returns ``(num_c, num_d, denom)`` with c~ = num_c / denom[:, None], d~ = num_d / denom[:, None].
    """
    # Dualize the sum constraint with multiplier lam (the constraints are linear, so strong
    # duality holds and any lam whose separated solution meets the sum is optimal). Per county
    # the remaining problem is min (c - a)^2 + (d - b)^2 s.t. c >= d >= 0, a = y_c + lam,
    # b = y_d: the Euclidean projection of (a, b) onto the wedge W generated by the rays
    # (1, 0) and (1, 1). Its closed form, by region:
    #   a >= b >= 0          (a, b) is in W:                        (c, d) = (a, b)
    #   b < 0, a > 0         nearest point of the ray (1, 0):       (a, 0)
    #   b > a, a + b > 0     nearest point of the ray (1, 1):       ((a + b) / 2, (a + b) / 2)
    #   a <= min(0, -b)      polar cone of W (p.(1,0) <= 0, p.(1,1) <= 0): (0, 0)
    # which is c = max(a, (a + b+) / 2, 0) and d = min(c, b+) with b+ = max(b, 0) (checked
    # region by region). As a function of lam, c = (lam - p1)+ / 2 + (lam - p2)+ / 2 with
    # breakpoints p1 = -b+ - y_c <= p2 = b+ - y_c, so
    #   S(lam) = sum_j c_j(lam) = (1/2) sum over all 2J breakpoints p of (lam - p)+,
    # continuous, convex, non-decreasing, from 0 to infinity. With the breakpoints sorted,
    # 2 S(p_(m)) = m p_(m) - (p_(1) + ... + p_(m)) is integer; k is the last m with
    # S(p_(m)) <= s (k >= 1 as S(p_(1)) = 0), and on [p_(k), p_(k+1)] S is linear, giving
    # lam = n / k with n = 2 s + p_(1) + ... + p_(k). Then 2k c and 2k d are integers.
    b = np.maximum(y_d, 0)
    p = np.sort(np.concatenate([-b - y_c, b - y_c], axis=1), axis=1)
    partial = np.cumsum(p, axis=1)
    m = np.arange(1, p.shape[1] + 1)
    k = np.count_nonzero(m * p - partial <= 2 * s[:, None], axis=1)
    n = 2 * s + np.take_along_axis(partial, (k - 1)[:, None], axis=1)[:, 0]
    k, n = k[:, None], n[:, None]
    num_a = 2 * k * y_c + 2 * n  # 2k a
    num_mid = k * (y_c + b) + n  # 2k (a + b+) / 2
    num_c = np.maximum(np.maximum(num_a, num_mid), 0)
    num_d = np.minimum(num_c, 2 * k * b)
    return num_c, num_d, 2 * k[:, 0]


def _integer_step(
    num_c: np.ndarray, num_d: np.ndarray, denom: np.ndarray, s: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Exact integer step (b) per row, from the projection's numerators over ``denom``."""
    # Write Fc, Fd for the floors, fc, fd for the fractional parts and u, v for the 0/1
    # additions. The objective is sum_j fc_j + fd_j + u_j (1 - 2 fc_j) + v_j (1 - 2 fd_j).
    # c~ >= d~ gives Fc >= Fd, so the ordering Fc + u >= Fd + v can only fail where
    # Fc_j = Fd_j ("tied" counties), and there it reads v_j <= u_j; Fd + v >= 0 always holds.
    # For fixed u the v_j separate: v_j = 1 exactly when 1 - 2 fd_j < 0 and it is allowed.
    # The cost is then sum_j phi_j(0) + sum_{j: u_j = 1} delta_j with
    #   delta_j = phi_j(1) - phi_j(0) = (1 - 2 fc_j) + [tied_j] min(1 - 2 fd_j, 0),
    # so under sum_j u_j = K = s - sum_j Fc_j (= sum_j fc_j, an integer in [0, J)) the K
    # smallest delta_j are optimal: any other choice of K counties swaps in a delta that is
    # not smaller. Everything is kept in units of 1 / denom, so comparisons are exact.
    # (For projections of integer releases the coupling term never reorders the counties:
    # only counties with c~ = d~ > 0 can have fd > 1/2, and theirs are then the largest fc.)
    q = denom[:, None]
    floor_c, rem_c = np.divmod(num_c, q)
    floor_d, rem_d = np.divmod(num_d, q)
    death_gain = np.minimum(q - 2 * rem_d, 0)
    tied = floor_c == floor_d
    delta = q - 2 * rem_c + np.where(tied, death_gain, 0)
    budget = s - floor_c.sum(axis=1)
    order = np.argsort(delta, axis=1, kind="stable")
    add_c = np.zeros(delta.shape, dtype=bool)
    np.put_along_axis(add_c, order, np.arange(delta.shape[1]) < budget[:, None], axis=1)
    add_d = (death_gain < 0) & (add_c | ~tied)
    return floor_c + add_c, floor_d + add_d


def _frozen(array: np.ndarray) -> np.ndarray:
    """Return ``array`` marked read-only, matching the frozen result object."""
    array.flags.writeable = False
    return array
