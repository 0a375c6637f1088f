r"""County counts given a public total, released with discrete Laplace noise per county.

Public information z: last month's counts ``previous`` (length J) and this month's statewide
``total`` s. The model:

.. math::

    \theta \sim \mathrm{Dirichlet}(\alpha), \quad
    \alpha_j = c \, \frac{\mathrm{previous}_j + 1}{\sum_k (\mathrm{previous}_k + 1)}, \qquad
    x \mid \theta, z \sim \mathrm{Multinomial}(s, \theta), \qquad
    y_j \mid x \sim x_j + \mathrm{DLap}(\epsilon / \Delta) \text{ independently},

theta being the counties' shares of this month's cases. The prior is centred on last month's
shares with total concentration c; the pseudocount 1 keeps a county with zero cases last
month possible. This is the COVID-19 case study's structure (Seeman, Reimherr & Slavkovic,
section 4) for one month and cases only. The exact posterior enumerates every split of s over
the J counties (theta is integrated out: Dirichlet-multinomial), practical for small J and s.

PyMC twin (:meth:`CountyCountsModel.to_pymc`): the splits of s are far too many to sum out
(C(s + J - 1, J - 1)), so x stays an integer latent, started at y clipped and rescaled to the
total. :func:`ppdinfer.pymc.sample` updates it with sum-preserving data-augmentation moves and
theta with the exact Dirichlet update theta | x ~ Dirichlet(alpha + x) (or NUTS).
"""

from __future__ import annotations

import numpy as np

from ..generators import MultinomialTotal
from ..inference import PPDModel
from ..mechanisms import DiscreteLaplace
from ..priors import Dirichlet
from ..rng import as_generator
from ..validation import nonnegative_counts


class CountyCountsModel(PPDModel):
    """The county-count PPD model, with its PyMC twin (see the module docstring for the math).

    Examples
    --------
    >>> from ppdinfer.models import county_counts
    >>> model = county_counts.model(epsilon=1.0)
    >>> z = county_counts.public_information(previous=[6, 1, 4, 1], total=12)
    >>> twin = model.to_pymc([8, 3, 0, 0], z)
    >>> [v.name for v in twin.free_RVs]          # cases stays an integer latent
    ['share', 'cases']
    """

    def __init__(self, epsilon: float, concentration: float, sensitivity: float):
        super().__init__(
            Dirichlet.centered("previous", concentration=concentration),
            MultinomialTotal("total"),
            DiscreteLaplace(epsilon, sensitivity),
            names="share",
            x_name="cases",
            dims={"share": "county", "cases": "county"},
        )

    def to_pymc(self, y, z=None, *, mutable: bool = False):
        """The PyMC twin; ``mutable=True`` holds y in ``pm.Data("y_release")`` so that one model
        (and its compiled functions) can be refitted to new releases with the same z via
        ``pm.set_data({"y_release": y_new})``."""
        import pymc as pm

        from ..pymc import feasible_total_start
        from ._pymc_helpers import noise_likelihood

        y, z, _, _ = self.prepare(y, z)
        total = self.simulate.total(z)
        with pm.Model(coords={"county": np.arange(y.size)}) as twin:
            share = pm.Dirichlet("share", a=self.prior.concentration_vector(z), dims="county")
            cases = pm.Multinomial("cases", n=total, p=share, dims="county", initval=feasible_total_start(y, total))
            observed = pm.Data("y_release", y, dims="county") if mutable else y
            noise_likelihood("y", cases, self.mechanism, observed)
        return twin


def model(epsilon: float = 1.0, concentration: float = 50.0, sensitivity: float = 1.0) -> CountyCountsModel:
    """The county-count PPD model; z must hold ``previous`` (J counts) and ``total``.

    Results put ``share`` and ``cases`` (and y) on the dimension ``county``.

    Examples
    --------
    >>> import ppdinfer as pp
    >>> from ppdinfer.models import county_counts
    >>> model = county_counts.model(epsilon=1.0, concentration=50.0)
    >>> z = county_counts.public_information(previous=[6, 1, 4, 1], total=12)
    >>> exact = pp.exact_posterior(model, [8, 3, 0, 0], z)
    >>> exact["posterior"]["cases"].dims
    ('chain', 'draw', 'county')
    >>> print(pp.summary(exact).loc["cases[0]"].round(2).to_dict())
    {'mean': 7.76, 'sd': 0.86, 'lower': 6.0, 'upper': 9.0}
    """
    return CountyCountsModel(epsilon, concentration, sensitivity)


def public_information(previous, total) -> dict:
    """z for the model: last month's counts and this month's total, validated.

    Examples
    --------
    >>> from ppdinfer.models import county_counts
    >>> county_counts.public_information(previous=[6, 1, 4, 1], total=12)
    {'previous': array([6, 1, 4, 1]), 'total': 12}
    """
    previous = nonnegative_counts(previous, "previous")
    if previous.ndim != 1 or previous.size < 2:
        raise ValueError(f"previous must list at least 2 county counts, got {previous!r}")
    total = nonnegative_counts(total, "total")
    if total.ndim != 0:
        raise ValueError(f"total must be a single count, got {total!r}")
    return {"previous": previous, "total": int(total)}


def synthetic_month(n_counties: int = 5, total: int = 30, random_seed=None):
    """A small synthetic month: returns (previous counts, this month's counts x).

    County sizes decrease geometrically; last month's counts and this month's are both
    multinomial splits of their totals over the same shares.

    Examples
    --------
    >>> from ppdinfer.models import county_counts
    >>> previous, current = county_counts.synthetic_month(n_counties=4, total=12, random_seed=1)
    >>> previous.shape, int(previous.sum()), int(current.sum())
    ((4,), 12, 12)
    """
    rng = as_generator(random_seed)
    shares = 0.6 ** np.arange(n_counties)
    shares /= shares.sum()
    previous = rng.multinomial(total, shares)
    current = rng.multinomial(total, shares)
    return previous, current
