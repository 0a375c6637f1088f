r"""A 2 x 2 table with public margins; noise on the free cell; the odds ratio is the parameter.

Public information z: the row totals (n1., n2.) and the first column total n.1. Given the
margins, the table is determined by its free cell x = n11, which follows Fisher's noncentral
hypergeometric distribution in the odds ratio psi:

.. math::

    \log \psi \sim \mathrm{Normal}(0, \tau^2), \qquad
    P(x = k \mid \psi, z) \propto \binom{n_{1\cdot}}{k} \binom{n_{2\cdot}}{n_{\cdot 1} - k} \psi^k,
    \qquad y \mid x \sim x + \mathrm{DLap}(\epsilon),

on max(0, n.1 - n2.) <= k <= min(n1., n.1). Releasing the margins exactly and noising only
n11 protects the cell counts while keeping the totals public. The exact posterior sums psi
over a grid of equal prior mass.
"""

from __future__ import annotations

from scipy import stats

from .._validation import positive_finite
from ..generators import FisherTable2x2
from ..inference import PPDModel
from ..mechanisms import DiscreteLaplace


def model(epsilon: float = 1.0, log_odds_sd: float = 1.0) -> PPDModel:
    """The 2 x 2 table PPD model; z must hold ``row_totals`` (2 counts) and ``col_total``.

    The prior is a scipy.stats frozen log-normal, which PPDModel accepts as it is.
    """
    log_odds_sd = positive_finite(log_odds_sd, "log_odds_sd")
    return PPDModel(stats.lognorm(s=log_odds_sd), FisherTable2x2(), DiscreteLaplace(epsilon), names="odds_ratio",
                    x_name="n11")


def margins(row_totals, col_total) -> dict:
    """z for the model: the public margins (validated by the data model when sampling)."""
    return {"row_totals": list(row_totals), "col_total": col_total}
