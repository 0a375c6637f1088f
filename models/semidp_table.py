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
summed out over the same tables; NUTS samples theta. The table is then drawn exactly from its
finite conditional given each draw of theta,

.. math::

    \pi(x \mid \theta, y, z) \propto \pi(x \mid \theta, z) \, \pi(y \mid x, z)
        \text{ over the tables with margins z}

(:meth:`SemiDPTableModel.draw_tables`; :meth:`SemiDPTableModel.sample_pymc` does both), so the
PyMC route gives draws of (theta, x) from the same joint posterior as the exact samplers.
"""

from __future__ import annotations

import numpy as np
import xarray as xr
from scipy import special, stats

from ..generators import AssociationTable, draw_from_support
from ..inference import PPDModel
from ..inference.results import dimension_names
from ..mechanisms import SemiDPGaussian
from ..privacy import contingency_sensitivity_space
from ..rng import SeedLike, as_generator, block_generator, root_seed
from ..validation import positive_finite, positive_int


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
        super().__init__(
            stats.norm(0.0, self.association_sd),
            AssociationTable(),
            SemiDPGaussian(mu, space),
            names="association",
            x_name="table",
        )

    def prepare(self, y, z, rng=None):
        """PPDModel.prepare, plus: z fits the model's shape and y keeps the public margins."""
        rows, cols = self.simulate.margins(z)
        if (len(rows), len(cols)) != self.shape:
            raise ValueError(
                f"z holds margins of a {len(rows)} x {len(cols)} table but the model was built for "
                f"{self.shape[0]} x {self.shape[1]}"
            )
        y, z, theta_shape, x_shape = super().prepare(y, z, rng)
        y = np.asarray(y, dtype=float)
        if not (np.allclose(y.sum(axis=1), rows, atol=1e-6) and np.allclose(y.sum(axis=0), cols, atol=1e-6)):
            raise ValueError(
                f"y has row sums {y.sum(axis=1).round(6).tolist()} and column sums "
                f"{y.sum(axis=0).round(6).tolist()}, not the public margins {list(rows)} and "
                f"{list(cols)}: a Semi-DP release keeps them exactly"
            )
        return y, z, theta_shape, x_shape

    def to_pymc(self, y, z=None):
        """The PyMC twin: the table summed out over the tables with margins z, NUTS on theta."""
        import pymc as pm
        import pytensor.tensor as pt

        _, scores, log_base, log_release = self._table_terms(y, z)
        with pm.Model() as twin:
            theta = pm.Normal("association", 0.0, self.association_sd)
            log_prior_x = log_base + theta * scores
            log_prior_x = log_prior_x - pt.logsumexp(log_prior_x)
            pm.Potential("release", pt.logsumexp(log_prior_x + log_release))
        return twin

    def draw_tables(self, idata, y, z=None, *, random_seed: SeedLike = None, chunk: int = 1024):
        r"""Add exact draws of the table, one per posterior draw of theta, to a result of the twin.

        The twin sums the table out, so its draws hold theta alone. For each draw theta_i the
        table is drawn from its finite conditional over the K tables with margins z,

        .. math::

            P(x_k \mid \theta_i, y, z) \propto \pi(x_k \mid \theta_i, z) \, \pi(y \mid x_k, z),

        so (theta_i, x_i) are draws from the joint posterior. Work goes in chunks of ``chunk``
        draws (memory ``chunk`` x K).

        Parameters
        ----------
        idata : xarray.DataTree
            The result of sampling :meth:`to_pymc` (a ``posterior`` with ``association``).
        y, z
            The release and the public margins the twin was built with.
        random_seed : int, Generator or None
            The seed of the table draws.
        chunk : int
            Draws of theta handled at once.

        Returns
        -------
        xarray.DataTree
            A copy of ``idata`` whose posterior holds ``table`` (dims chain, draw and the
            table's two axes, named as the exact samplers name them), with ``y`` as
            ``observed_data`` when it had none and the attribute ``x_name``.

        Examples
        --------
        >>> import numpy as np
        >>> import xarray as xr
        >>> from ppdinfer.models import semidp_table
        >>> model = semidp_table.model(mu=1.0, shape=(2, 2))
        >>> z = semidp_table.public_information([6, 4], [5, 5])
        >>> y = [[3.6, 2.4], [1.4, 2.6]]
        >>> draws = xr.DataTree.from_dict({"posterior": xr.Dataset({"association": (("chain", "draw"), [[0.0, 2.0]])})})
        >>> tables = model.draw_tables(draws, y, z, random_seed=1)["posterior"]["table"]
        >>> tables.dims, tables.sum("table_dim_1").values.tolist()       # every draw keeps the margins
        (('chain', 'draw', 'table_dim_0', 'table_dim_1'), [[[6, 4], [6, 4]]])
        """
        tables, scores, log_base, log_release = self._table_terms(y, z)
        chunk = positive_int(chunk, "chunk")
        if (
            not isinstance(idata, xr.DataTree)
            or "posterior" not in idata.children
            or self.names[0] not in idata["posterior"].data_vars
        ):
            raise ValueError(f"idata must be a DataTree whose posterior holds {self.names[0]!r} (a result of the twin)")
        theta = idata["posterior"][self.names[0]].transpose("chain", "draw")
        rng = as_generator(random_seed)
        flat = theta.values.reshape(-1)
        drawn = np.empty((flat.size, *self.shape), dtype=tables.dtype)
        for start in range(0, flat.size, chunk):
            log_p = log_base + flat[start : start + chunk, None] * scores + log_release
            drawn[start : start + chunk] = draw_from_support(tables, log_p, rng)
        dims = dimension_names(self.x_name, 2, self.dims)
        result = idata.copy()
        posterior = result["posterior"].to_dataset()
        posterior[self.x_name] = (("chain", "draw", *dims), drawn.reshape(*theta.shape, *self.shape))
        result["posterior"] = xr.DataTree(posterior)
        if "observed_data" not in result.children:
            result["observed_data"] = xr.DataTree(xr.Dataset({"y": (dims, np.asarray(y, dtype=float))}))
        result.attrs["x_name"] = self.x_name
        return result

    def sample_pymc(self, y, z=None, *, random_seed: SeedLike = None, **kwargs):
        """Sample the twin (:func:`ppdinfer.pymc.sample`, NUTS on theta), then draw the tables (:meth:`draw_tables`).

        ``kwargs`` go to ``ppdinfer.pymc.sample`` (draws, tune, chains, ...). The seed feeds
        both steps through two independent streams.

        Examples
        --------
        >>> from ppdinfer.models import semidp_table
        >>> model = semidp_table.model(mu=1.0, shape=(2, 2))
        >>> idata = model.sample_pymc([[3.6, 2.4], [1.4, 2.6]], semidp_table.public_information([6, 4], [5, 5]),
        ...                           draws=50, tune=50, chains=1, random_seed=1, progressbar=False,
        ...                           compute_convergence_checks=False)
        >>> idata["posterior"]["table"].shape
        (1, 50, 2, 2)
        """
        from ..pymc import sample

        root = root_seed(random_seed)
        with self.to_pymc(y, z):
            idata = sample(random_seed=int(block_generator(root, 0).integers(2**31)), **kwargs)
        return self.draw_tables(idata, y, z, random_seed=block_generator(root, 1))

    def _table_terms(self, y, z):
        """The tables with margins z and, per table, its association score, log base measure and log pi(y | x)."""
        y, z, _, _ = self.prepare(y, z)
        tables = self.simulate.support(z)
        scores = (tables * np.outer(np.arange(self.shape[0]), np.arange(self.shape[1]))).sum(axis=(1, 2))
        log_base = -special.gammaln(tables + 1.0).sum(axis=(1, 2))
        return tables, scores, log_base, self.mechanism.logpdf(y, tables)  # log pi(y | x_k): fixed numbers


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
