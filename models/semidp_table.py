r"""An r x c table with public one-way margins, released by the Semi-DP Gaussian mechanism.

Public information z: the row and column totals (invariants published exactly). The
confidential table x is released with Gaussian noise on the span of its sensitivity space
(Cho & Awan's Algorithm 1, :class:`ppdinfer.mechanisms.SemiDPGaussian`), so the release y
keeps the margins exactly. The parameter is the uniform association theta, the log of every
local odds ratio (theta = 0: independence given the margins):

.. math::

    \theta \sim \mathrm{Normal}(0, \tau^2), \qquad
    \pi(x \mid \theta, z) \propto \frac{\exp(\theta \sum_{i,j} i j \, x_{ij})}{\prod_{i,j} x_{ij}!}
        \text{ on tables with margins } z, \qquad
    y \mid x \sim x + \mathrm{N}\bigl(0, (\Delta_2 / \mu)^2 P\bigr),

with P the projection onto the tables with zero margins and Delta_2 the l2 sensitivity of the
table's sensitivity space: 2 for the rectangles of two record changes (a(t) = 2, Definition 13,
the default) and sqrt 6 when three changes are protected on a table of 3 x 3 or more (the
3-cycles; ``changes=3``). The release is mu-GDP over semi-adjacent tables (Semi-DP).
For 2 x 2 tables theta is the log odds ratio and the model is ``table_2x2`` with a Gaussian
release of the whole table.

Samplers. y - x lies in the span for every x with the public margins, where the release has a
density (its ``logpdf``), so exact enumeration (small
tables: x is summed over the tables with margins z, theta over a grid), rejection and
importance sampling work as for any model. PyMC twin (:meth:`SemiDPTableModel.to_pymc`): x is
summed out over the same tables; NUTS samples theta.
"""

from __future__ import annotations

import numpy as np
from scipy import special, stats

from .._validation import positive_finite
from ..generators import AssociationTable
from ..inference import PPDModel
from ..mechanisms import SemiDPGaussian
from ..privacy import contingency_sensitivity_space


class SemiDPTableModel(PPDModel):
    """The Semi-DP table PPD model (the math is in the module docstring).

    Examples
    --------
    >>> from ppdinfer.models import semidp_table
    >>> model = semidp_table.model(mu=1.0, shape=(2, 3))
    >>> model.mechanism.space.rank                      # (r - 1)(c - 1) free directions
    2
    >>> twin = model.to_pymc([[3.2, 0.9, 0.9], [0.8, 2.1, 3.1]],
    ...                      semidp_table.public_information([5, 6], [4, 3, 4]))
    >>> [v.name for v in twin.free_RVs]
    ['association']
    """

    def __init__(self, mu: float, shape, association_sd: float, changes: int):
        self.association_sd = positive_finite(association_sd, "association_sd")
        rows, cols = (int(n) for n in shape)
        self.shape = (rows, cols)
        space = contingency_sensitivity_space(rows, cols, changes=changes)
        super().__init__(stats.norm(0.0, self.association_sd), AssociationTable(), SemiDPGaussian(mu, space),
                         names="association", x_name="table")

    def prepare(self, y, z, rng=None):
        """PPDModel.prepare, plus: z fits the model's shape and y keeps the public margins."""
        rows, cols = self.simulate.margins(z)
        if (len(rows), len(cols)) != self.shape:
            raise ValueError(f"z holds margins of a {len(rows)} x {len(cols)} table but the model was built for "
                             f"{self.shape[0]} x {self.shape[1]}")
        y, z, theta_shape, x_shape = super().prepare(y, z, rng)
        y = np.asarray(y, dtype=float)
        if not (np.allclose(y.sum(axis=1), rows, atol=1e-6) and np.allclose(y.sum(axis=0), cols, atol=1e-6)):
            raise ValueError(f"y has row sums {y.sum(axis=1).round(6).tolist()} and column sums "
                             f"{y.sum(axis=0).round(6).tolist()}, not the public margins {list(rows)} and "
                             f"{list(cols)}: a Semi-DP release keeps them exactly")
        return y, z, theta_shape, x_shape

    def to_pymc(self, y, z=None):
        """The PyMC twin: the table summed out over the tables with margins z, NUTS on theta."""
        import pymc as pm
        import pytensor.tensor as pt

        y, z, _, _ = self.prepare(y, z)
        tables = self.simulate.support(z)
        scores = (tables * np.outer(np.arange(self.shape[0]), np.arange(self.shape[1]))).sum(axis=(1, 2))
        log_base = -special.gammaln(tables + 1.0).sum(axis=(1, 2))
        log_release = self.mechanism.logpdf(y, tables)  # log pi(y | x_k), fixed numbers
        with pm.Model() as twin:
            theta = pm.Normal("association", 0.0, self.association_sd)
            log_prior_x = log_base + theta * scores
            log_prior_x = log_prior_x - pt.logsumexp(log_prior_x)
            pm.Potential("release", pt.logsumexp(log_prior_x + log_release))
        return twin


def model(mu: float = 1.0, shape=(2, 2), association_sd: float = 1.0, changes: int = 2) -> SemiDPTableModel:
    """The Semi-DP table model for an r x c table (``shape``) with public margins.

    ``changes`` is the number of record changes the Semi-DP guarantee covers (2 = a(t) for
    one-way margins by Definition 13; 3 adds the 3-cycles to the sensitivity space).

    Examples
    --------
    >>> import ppdinfer as pp
    >>> from ppdinfer.models import semidp_table
    >>> model = semidp_table.model(mu=1.0, shape=(2, 2))
    >>> z = semidp_table.public_information(row_totals=[6, 4], col_totals=[5, 5])
    >>> y = model.mechanism.release([[4, 2], [1, 3]], random_seed=0)
    >>> y.sum(axis=1).round(12).tolist(), y.sum(axis=0).round(12).tolist()   # the margins survive
    ([6.0, 4.0], [5.0, 5.0])
    >>> exact = pp.exact_posterior(model, y, z)
    >>> round(float(exact["exact"]["theta_mean"][0]), 2)                      # posterior mean association
    0.37
    """
    return SemiDPTableModel(mu, shape, association_sd, changes)


def public_information(row_totals, col_totals) -> dict:
    """z for the model: the published row and column totals (validated when sampling).

    Examples
    --------
    >>> from ppdinfer.models import semidp_table
    >>> semidp_table.public_information([6, 4], [5, 5])
    {'row_totals': [6, 4], 'col_totals': [5, 5]}
    """
    return {"row_totals": list(row_totals), "col_totals": list(col_totals)}
