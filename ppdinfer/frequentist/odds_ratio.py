r"""The Semi-DP test of the odds ratio of a 2 x 2 table with public margins (Cho & Awan, Theorem 37).

The margins t = (n1., n2., n.1) are released exactly (invariants); the free cell H = n11 is
released as U = H + N with N drawn from a canonical noise distribution F of a tradeoff function
f (``ppdinfer.mechanisms.canonical.CanonicalNoise`` or ``Tulap``). Two semi-adjacent tables
(the same margins, a(t) record changes apart) differ by 0 or +-(1, -1, -1, 1), so H moves by at
most one and U is f-Semi-DP.

Where the direction comes from. Each record of row i falls in column 1 with probability
theta_i, so n_i1 ~ Binomial(n_i., theta_i) independently. Given the margins,

.. math::

    P(H = k \mid t) \propto \binom{n_{1\cdot}}{k} \theta_1^k (1 - \theta_1)^{n_{1\cdot} - k}
        \binom{n_{2\cdot}}{n_{\cdot 1} - k} \theta_2^{n_{\cdot 1} - k} (1 - \theta_2)^{n_{2\cdot} - n_{\cdot 1} + k}
    \propto \binom{n_{1\cdot}}{k} \binom{n_{2\cdot}}{n_{\cdot 1} - k} \psi^k, \qquad
    \psi = \frac{\theta_1 / (1 - \theta_1)}{\theta_2 / (1 - \theta_2)},

Fisher's noncentral hypergeometric law (``ppdinfer.generators.FisherTable2x2``) in the odds
ratio psi, the population version of n11 n22 / (n12 n21). Its likelihood ratio in k increases
with psi, so (Awan & Vadhan 2023, Theorem 4.8) the most powerful f-DP test of psi = 1 against any
psi > 1 rejects for large U, with the p-value

.. math::

    p_{>}(u) = P_{\psi = 1}(H + N \ge u) = \sum_k P_{\psi=1}(H = k) \, \bigl(1 - F(u - k)\bigr)
             = \sum_k P_{\psi=1}(H = k) \, F(k - u),

the last form by the symmetry of F. This is the paper's formula (6), E F(X11 - U). Erratum: the
paper states H1 as w > 1 with w = odds2 / odds1 = 1 / psi, for which (6) rejects in the wrong
tail (its power is below alpha); its proof works with H = n21, whose parameter is w, and
rejecting for large n21 = n.1 - n11 is rejecting for small n11. So the paper's H1: w > 1 is
``alternative="less"`` here,

.. math::

    p_{<}(u) = P_{\psi = 1}(H + N \le u) = \sum_k P_{\psi=1}(H = k) \, F(u - k),

and ``alternative="two-sided"`` reports ``min(1, 2 min(p_>, p_<))`` (valid, not UMPU). Under
psi = 1, U is continuous and ``p_>`` is its survival function, so ``p_>`` is exactly Uniform(0, 1).
"""

from __future__ import annotations

import numpy as np
from scipy import optimize

from ..generators import FisherTable2x2
from ..validation import finite_array, nonnegative_counts, probability

__all__ = ["odds_ratio_power", "odds_ratio_test"]

_ALTERNATIVES = ("greater", "less", "two-sided")


def odds_ratio_test(u, row_totals, col_total, noise, alternative: str = "greater"):
    r"""The p-value of the Semi-DP test of the odds ratio psi = 1 from the noisy cell U = n11 + N.

    With P_1 the (central) hypergeometric law of n11 given the margins and F the noise CDF,

    .. math::

        p_{>}(u) = \sum_k P_1(k) \, F(k - u) \quad (H_1: \psi > 1), \qquad
        p_{<}(u) = \sum_k P_1(k) \, F(u - k) \quad (H_1: \psi < 1),

    where psi = [theta_1 / (1 - theta_1)] / [theta_2 / (1 - theta_2)] is the odds ratio of
    column 1 in row 1 against row 2 (the parameter of Fisher's noncentral hypergeometric law of
    n11). The paper's w = odds2 / odds1 is 1 / psi: its H1: w > 1 is ``alternative="less"``
    (see the module docstring for the derivation and the erratum).

    Parameters
    ----------
    u : float or array_like
        The released noisy n11 (any real values; an array gives one p-value each).
    row_totals : sequence of two ints
        The public row totals (n1., n2.).
    col_total : int
        The public first column total n.1.
    noise : CanonicalNoise or Tulap
        The noise of the release; it must offer ``cdf`` and ``sf`` (its scale included). For the
        test to be the UMPU f-Semi-DP test it is the canonical noise of f at sensitivity 1.
    alternative : {"greater", "less", "two-sided"}
        H1: psi > 1, psi < 1, or psi != 1.

    Returns
    -------
    float or ndarray
        The p-value(s).

    Raises
    ------
    ValueError
        For bad margins (named as passed), and for margins with an empty row or column, which
        fix n11: the odds ratio is then not identified by the release.

    See Also
    --------
    ppdinfer.odds_ratio_power : Its power.
    ppdinfer.mechanisms.CanonicalNoise : The noise of the release.

    References
    ----------
    .. [1] Y. H. Cho and J. Awan, "Formal privacy guarantees with invariant statistics." Theorem 37.
    .. [2] J. Awan and S. Vadhan, "Canonical noise distributions and private hypothesis tests," The
        Annals of Statistics 51(2), 2023.

    Examples
    --------
    >>> from ppdinfer.frequentist.odds_ratio import odds_ratio_test
    >>> from ppdinfer.mechanisms.canonical import CanonicalNoise
    >>> noise = CanonicalNoise.pure(epsilon=1.0)           # U = n11 + Tulap: 1-Semi-DP
    >>> round(odds_ratio_test(30.0, [50, 50], 50, noise), 4)         # 25 expected in cell 11 if psi = 1
    0.0413
    >>> round(odds_ratio_test(30.0, [50, 50], 50, noise, alternative="less"), 4)
    0.9587
    >>> round(odds_ratio_test(30.0, [50, 50], 50, noise, alternative="two-sided"), 4)
    0.0826
    >>> odds_ratio_test([22.5, 31.7], [50, 50], 50, noise).round(4)
    array([0.8136, 0.0104])
    """
    if alternative not in _ALTERNATIVES:
        raise ValueError(f"alternative must be one of {_ALTERNATIVES}, got {alternative!r}")
    u = finite_array(u, "u")
    support, null_pmf = _law(row_totals, col_total)
    cdf, sf = _noise_functions(noise)
    shift = u[..., None] - support  # u - k
    if alternative == "greater":
        p = sf(shift) @ null_pmf
    elif alternative == "less":
        p = cdf(shift) @ null_pmf
    else:  # each tail computed directly, so a tiny p-value keeps its precision
        p = np.minimum(1.0, 2 * np.minimum(sf(shift) @ null_pmf, cdf(shift) @ null_pmf))
    p = np.clip(p, 0.0, 1.0)
    return float(p) if p.ndim == 0 else p


def odds_ratio_power(
    odds_ratio, row_totals, col_total, noise, alpha: float = 0.05, alternative: str = "greater"
) -> float:
    r"""The exact rejection probability P_psi(p(U) <= alpha) of ``odds_ratio_test`` at odds ratio psi.

    The p-value ``p_>`` decreases in u, so the test rejects exactly when U >= m with ``p_>(m) = alpha``
    (found by root finding); then

    .. math::

        P_\psi(\text{reject}) = \sum_k P_\psi(H = k) \, \bigl(1 - F(m - k)\bigr),

    and likewise U <= m' for ``p_<``, and both tails at alpha / 2 for the two-sided test. At psi = 1
    this is the size, alpha exactly.

    Parameters
    ----------
    odds_ratio : float
        psi > 0, the odds ratio of the law of n11 (see ``odds_ratio_test``).
    row_totals, col_total, noise, alternative
        As for ``odds_ratio_test``; ``noise`` must also offer ``ppf``.
    alpha : float
        The level, in (0, 1).

    Returns
    -------
    float
        The probability of rejecting H0: psi = 1.

    See Also
    --------
    ppdinfer.odds_ratio_test : The test.

    References
    ----------
    .. [1] Y. H. Cho and J. Awan, "Formal privacy guarantees with invariant statistics." Theorem 37.

    Examples
    --------
    >>> from ppdinfer.frequentist.odds_ratio import odds_ratio_power
    >>> from ppdinfer.mechanisms.canonical import CanonicalNoise
    >>> noise = CanonicalNoise.pure(epsilon=1.0)
    >>> round(odds_ratio_power(1.0, [50, 50], 50, noise), 6)          # the size
    0.05
    >>> round(odds_ratio_power(3.0, [50, 50], 50, noise), 4)          # power at psi = 3
    0.7748
    >>> round(odds_ratio_power(1 / 3, [50, 50], 50, noise), 4)        # the wrong tail: below alpha
    0.0001
    """
    if alternative not in _ALTERNATIVES:
        raise ValueError(f"alternative must be one of {_ALTERNATIVES}, got {alternative!r}")
    alpha = probability(alpha, "alpha")
    odds_ratio = finite_array(odds_ratio, "odds_ratio")
    if odds_ratio.ndim != 0 or odds_ratio <= 0:
        raise ValueError(f"odds_ratio must be a positive number, got {odds_ratio!r}")
    support, pmf = _law(row_totals, col_total, float(odds_ratio))
    cdf, sf = _noise_functions(noise)
    if alternative == "greater":
        return float(sf(_critical(alpha, row_totals, col_total, noise, "greater") - support) @ pmf)
    if alternative == "less":
        return float(cdf(_critical(alpha, row_totals, col_total, noise, "less") - support) @ pmf)
    upper = _critical(alpha / 2, row_totals, col_total, noise, "greater")
    lower = _critical(alpha / 2, row_totals, col_total, noise, "less")
    return float((sf(upper - support) + cdf(lower - support)) @ pmf)


def _critical(alpha: float, row_totals, col_total, noise, alternative: str) -> float:
    """The release m at which the one-sided p-value equals alpha (it is monotone in u)."""
    support, _ = _law(row_totals, col_total)
    if not callable(getattr(noise, "ppf", None)):
        raise ValueError(f"noise must offer ppf(p) (a CanonicalNoise or Tulap), got {noise!r}")
    reach = float(noise.ppf(1 - alpha))
    # p_>(u) lies between sf(u - min k) and sf(u - max k): the root is within these bounds
    low, high = support[0] + reach - 1.0, support[-1] + reach + 1.0
    if alternative == "less":
        low, high = support[0] - reach - 1.0, support[-1] - reach + 1.0

    def gap(u):
        return odds_ratio_test(u, row_totals, col_total, noise, alternative) - alpha

    return float(optimize.brentq(gap, low, high, xtol=1e-12))


def _law(row_totals, col_total, odds_ratio: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """The support of n11 given the margins and its pmf (central hypergeometric at odds ratio 1)."""
    z = _margins(row_totals, col_total)
    table = FisherTable2x2()
    support = table.support(z)
    return support, np.exp(table.logpmf(support, [odds_ratio], z)[0])


def _margins(row_totals, col_total) -> dict:
    """The margins as z, checked under the names the caller used; refused when they fix n11 (psi not identified)."""
    rows = nonnegative_counts(row_totals, "row_totals")
    col = nonnegative_counts(col_total, "col_total")
    if rows.shape != (2,):
        raise ValueError(f"row_totals must hold two counts (n1., n2.), got {row_totals!r}")
    if col.ndim != 0:
        raise ValueError(f"col_total must be one count (n.1), got {col_total!r}")
    if col > rows.sum():
        raise ValueError(
            f"col_total = {int(col)} exceeds the table total {int(rows.sum())}: no table has these margins"
        )
    if 0 in rows:
        empty = f"row_totals = {rows.tolist()}: row {int(np.argmin(rows)) + 1} is empty"
    elif col in (0, rows.sum()):
        empty = f"col_total = {int(col)}: column {1 if col == 0 else 2} is empty"
    else:
        return {"row_totals": rows, "col_total": col}
    raise ValueError(
        f"{empty}, so the margins fix n11: the release carries no information on the odds ratio "
        "(it is not identified) and no test of it exists"
    )


def _noise_functions(noise):
    """The noise's cdf and sf, checked to exist."""
    cdf, sf = getattr(noise, "cdf", None), getattr(noise, "sf", None)
    if not (callable(cdf) and callable(sf)):
        raise ValueError(f"noise must offer cdf(t) and sf(t) (a CanonicalNoise or Tulap), got {noise!r}")
    return cdf, sf
