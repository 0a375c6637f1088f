r"""Category counts with a public grand total, released by the congenial mechanism.

Public information z: the grand total s (e.g. a county's cases split over a few age groups,
whose total is published exactly). The confidential counts x (J categories) are released
with discrete Laplace noise conditioned on the invariants (Gong & Meng's congenial
mechanism, :class:`ppdinfer.mechanisms.Congenial`), so the release y is itself a table of
J non-negative integers summing to s:

.. math::

    \theta \sim \mathrm{Dirichlet}(\alpha), \qquad
    x \mid \theta, z \sim \mathrm{Multinomial}(s, \theta), \qquad
    p^*(y \mid x) = \frac{p(y - x) \, 1\{y \in S^*\}}{c(x)},

    S^* = \{t \in \mathbb{Z}^J : \textstyle\sum_j t_j = s, \; t \ge 0\}, \qquad
    c(x) = \sum_{t \in S^*} p(t - x), \qquad
    p(u) = \prod_j \frac{1 - e^{-\epsilon}}{1 + e^{-\epsilon}} e^{-\epsilon |u_j|},

theta being the categories' shares. The prior is symmetric, alpha_j = c / J for a total
concentration c (default J: uniform on the simplex). Unlike plain additive noise, c(x)
depends on x (a table near the boundary of S* loses more noise mass outside it), and
dropping it biases the posterior. For small totals S* has C(s + J - 1, J - 1) tables, and
c(x) is computed exactly by enumerating them; the exact posterior enumerates x over the
same set (theta integrated out: Dirichlet-multinomial).

Where the mechanism gets the total. The invariants are facts about the public total, so
the factory :func:`model` takes ``total`` and builds the mechanism's S* with it; z (built by
:func:`public_information`) carries the same total for the data model, and the model checks
that the two agree (and that y conforms to S*) before any sampling.

Samplers: :func:`ppdinfer.exact_posterior` (small s), :func:`ppdinfer.rejection_sample` (exact
draws, c(x) enumerated), :func:`ppdinfer.importance_sample`, :func:`ppdinfer.exchange_sample`
(which never needs c(x)), and the PyMC twin (:meth:`CongenialCountsModel.to_pymc`): c(x) has no
symbolic form, so the release enters through :class:`ppdinfer.pymc.Release`, which calls the
mechanism's own log density (c(x) enumerated), and :func:`ppdinfer.pymc.sample` updates the
counts by pair moves that keep the total.
"""

from __future__ import annotations

import numpy as np

from ..generators import MultinomialTotal
from ..inference import PPDModel
from ..invariants import LinearInvariants
from ..mechanisms import Congenial, DiscreteLaplace
from ..priors import Dirichlet
from ..validation import nonnegative_counts, positive_finite, positive_int


class CongenialCountsModel(PPDModel):
    r"""Category counts with a public total under a congenial release (math in the module docstring).

    The mechanism is ``Congenial(DiscreteLaplace(epsilon), S*)`` with
    S* = {t : sum_j t_j = total, t >= 0}; ``total`` is fixed at construction and z["total"]
    must equal it.

    Examples
    --------
    >>> import ppdinfer as pp
    >>> from ppdinfer.models import congenial_counts
    >>> model = congenial_counts.model(epsilon=0.5, total=5, n_categories=3)
    >>> model.mechanism.normalizer
    'enumerated (exact, |S*| = 21)'
    >>> twin = model.to_pymc([3, 2, 0], congenial_counts.public_information(total=5))
    >>> [v.name for v in twin.free_RVs], [v.name for v in twin.observed_RVs]
    (['share', 'counts'], ['release'])
    """

    def __init__(self, epsilon: float, total: int, n_categories: int, concentration: float | None = None):
        self.total = int(nonnegative_counts(total, "total"))
        self.n_categories = positive_int(n_categories, "n_categories")
        if self.n_categories < 2:
            raise ValueError(f"n_categories must be at least 2, got {n_categories!r}")
        concentration = float(self.n_categories) if concentration is None else concentration
        self.concentration = positive_finite(concentration, "concentration")
        self.invariants = LinearInvariants.grand_total(self.n_categories, self.total) & LinearInvariants.nonnegative(
            self.n_categories
        )
        alpha = np.full(self.n_categories, self.concentration / self.n_categories)
        super().__init__(
            Dirichlet(alpha),
            MultinomialTotal("total"),
            Congenial(DiscreteLaplace(epsilon), self.invariants),
            names="share",
            x_name="counts",
            dims={"share": "category", "counts": "category"},
        )

    def prepare(self, y, z, rng=None):
        """PPDModel.prepare, plus: z["total"] must be the model's total and y must conform to S*."""
        y, z, theta_shape, x_shape = super().prepare(y, z, rng)
        if self.simulate.total(z) != self.total:
            raise ValueError(
                f"z['total'] = {z['total']!r} but the mechanism's invariants were built for "
                f"total = {self.total}: build the model with the published total"
            )
        if not self.invariants.contains(np.asarray(y).astype(np.int64)):
            raise ValueError(
                f"y = {np.asarray(y).tolist()!r} is not a congenial release: its counts must be "
                f"non-negative integers summing to {self.total}"
            )
        return y, z, theta_shape, x_shape

    def to_pymc(self, y, z=None):
        """The PyMC twin: the Dirichlet shares, the multinomial counts with the public total, and the
        congenial release through :class:`ppdinfer.pymc.Release` (sample it with :func:`ppdinfer.pymc.sample`)."""
        from ..pymc import from_model

        return from_model(self, y, z)


def model(
    epsilon: float = 1.0, total: int = 10, n_categories: int = 3, concentration: float | None = None
) -> CongenialCountsModel:
    """The congenial-count PPD model for ``n_categories`` counts summing to the public ``total``.

    ``concentration`` is the Dirichlet's total concentration c (alpha_j = c / J; default J,
    uniform). Results put ``share`` and ``counts`` (and y) on the dimension ``category``.

    Examples
    --------
    >>> import ppdinfer as pp
    >>> from ppdinfer.models import congenial_counts
    >>> model = congenial_counts.model(epsilon=0.5, total=5, n_categories=3)
    >>> z = congenial_counts.public_information(total=5)
    >>> y = model.mechanism.release([3, 2, 0], random_seed=1)
    >>> int(y.sum()), bool((y >= 0).all())
    (5, True)
    >>> exact = pp.exact_posterior(model, [3, 2, 0], z)
    >>> exact["posterior"]["counts"].dims
    ('chain', 'draw', 'category')
    >>> print(pp.summary(exact).loc["counts[0]"].round(2).to_dict())
    {'mean': 2.59, 'sd': 1.23, 'lower': 0.0, 'upper': 5.0}
    """
    return CongenialCountsModel(epsilon, total, n_categories, concentration)


def public_information(total) -> dict:
    """z for the model: the published grand total, validated.

    Examples
    --------
    >>> from ppdinfer.models import congenial_counts
    >>> congenial_counts.public_information(total=5)
    {'total': 5}
    """
    total = nonnegative_counts(total, "total")
    if total.ndim != 0:
        raise ValueError(f"total must be a single count, got {total!r}")
    return {"total": int(total)}
