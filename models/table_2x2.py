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

PyMC twin (:meth:`Table2x2Model.to_pymc`): x has at most min(n1., n.1) + 1 values, so it is
summed out (PyMC has no Fisher noncentral hypergeometric distribution to keep it latent);
NUTS samples log psi, and ``odds_ratio`` is recorded as a deterministic.
"""

from __future__ import annotations

import numpy as np

from scipy import stats

from .._validation import positive_finite
from ..generators import FisherTable2x2
from ..inference import PPDModel
from ..mechanisms import DiscreteLaplace


class Table2x2Model(PPDModel):
    """The 2 x 2 table PPD model, with its PyMC twin (see the module docstring for the math).

    Examples
    --------
    >>> from ppdinfer.models import table_2x2
    >>> model = table_2x2.model(epsilon=1.0)
    >>> twin = model.to_pymc(14, table_2x2.public_information(row_totals=[20, 30], col_total=25))
    >>> [v.name for v in twin.free_RVs], [v.name for v in twin.deterministics]
    (['log_odds_ratio'], ['odds_ratio'])
    """

    def __init__(self, epsilon: float, log_odds_sd: float):
        self.log_odds_sd = positive_finite(log_odds_sd, "log_odds_sd")
        super().__init__(stats.lognorm(s=self.log_odds_sd), FisherTable2x2(), DiscreteLaplace(epsilon),
                         names="odds_ratio", x_name="n11")

    def to_pymc(self, y, z=None):
        """The PyMC twin: n11 summed out over its support, NUTS on the log odds ratio."""
        import pymc as pm

        from ._pymc_helpers import marginal_release

        y, z, _, _ = self.prepare(y, z)
        support = self.simulate.support(z)
        log_base = self.simulate.logpmf(support, np.array([1.0]), z)[0]  # the pmf at psi = 1, up to psi^k
        with pm.Model() as twin:
            log_odds = pm.Normal("log_odds_ratio", 0.0, self.log_odds_sd)
            pm.Deterministic("odds_ratio", pm.math.exp(log_odds))
            marginal_release("y", support, log_base + log_odds * support, self.mechanism, y)
        return twin


def model(epsilon: float = 1.0, log_odds_sd: float = 1.0) -> Table2x2Model:
    """The 2 x 2 table PPD model; z must hold ``row_totals`` (2 counts) and ``col_total``.

    The prior is a scipy.stats frozen log-normal, which PPDModel accepts as it is.

    Examples
    --------
    >>> import ppdinfer as pp
    >>> from ppdinfer.models import table_2x2
    >>> model = table_2x2.model(epsilon=1.0, log_odds_sd=1.0)
    >>> z = table_2x2.public_information(row_totals=[20, 30], col_total=25)
    >>> exact = pp.exact_posterior(model, 14, z)
    >>> round(float(exact["exact"]["theta_mean"][0]), 1)        # the posterior mean odds ratio
    3.0
    """
    return Table2x2Model(epsilon, log_odds_sd)


def public_information(row_totals, col_total) -> dict:
    """z for the model: the public margins (validated by the data model when sampling).

    Examples
    --------
    >>> from ppdinfer.models import table_2x2
    >>> table_2x2.public_information(row_totals=[20, 30], col_total=25)
    {'row_totals': [20, 30], 'col_total': 25}
    """
    return {"row_totals": list(row_totals), "col_total": col_total}
