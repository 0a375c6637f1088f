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

The noise. By default the discrete Laplace noise above (an integer release). With
``noise="tulap"`` the release is the continuous U = n11 + T, T ~ Tulap(epsilon), the canonical
noise of f_{eps,0}: the eps-Semi-DP release of Cho & Awan's Theorem 37, whose frequentist test is
``ppdinfer.frequentist.odds_ratio``; this model is its Bayesian twin, the posterior of psi
given U and the margins. Any other mechanism for one value can be passed as ``noise`` (for
instance ``CanonicalNoise.gaussian(mu)``, the mu-GDP canonical noise). Every sampler works
with any of them: the likelihood is the mechanism's ``logpdf``, x is summed exactly over its
support.

PyMC twin (:meth:`Table2x2Model.to_pymc`): x has at most min(n1., n.1) + 1 values, so it is
summed out (PyMC has no Fisher noncentral hypergeometric distribution to keep it latent);
NUTS samples log psi, and ``odds_ratio`` is recorded as a deterministic. With the discrete
Laplace noise the release is an observed mixture ``y``; with any other noise the likelihood of
y at each n11 = k of the support is a fixed vector, and the mixture over k enters as the
potential ``release`` (no posterior predictive of y then).
"""

from __future__ import annotations

import numpy as np
from scipy import stats

from ..generators import FisherTable2x2
from ..inference import PPDModel
from ..mechanisms import DiscreteLaplace, Mechanism, Tulap
from ..validation import positive_finite

#: The named noises of ``model(noise=...)``, each built from ``epsilon``.
NOISES = {"discrete_laplace": DiscreteLaplace, "tulap": Tulap}


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

    def __init__(self, epsilon: float | None, log_odds_sd: float, noise: str | Mechanism = "discrete_laplace"):
        self.log_odds_sd = positive_finite(log_odds_sd, "log_odds_sd")
        super().__init__(
            stats.lognorm(s=self.log_odds_sd),
            FisherTable2x2(),
            _noise_mechanism(noise, epsilon),
            names="odds_ratio",
            x_name="n11",
        )

    def to_pymc(self, y, z=None):
        """The PyMC twin: n11 summed out over its support, NUTS on the log odds ratio.

        Examples
        --------
        >>> from ppdinfer.models import table_2x2
        >>> model = table_2x2.model(epsilon=1.0, noise="tulap")
        >>> twin = model.to_pymc(14.3, table_2x2.public_information(row_totals=[20, 30], col_total=25))
        >>> [v.name for v in twin.free_RVs], [v.name for v in twin.potentials]
        (['log_odds_ratio'], ['release'])
        """
        import pymc as pm
        import pytensor.tensor as pt

        from ._pymc_helpers import marginal_release

        y, z, _, _ = self.prepare(y, z)
        support = self.simulate.support(z)
        log_base = self.simulate.logpmf(support, np.array([1.0]), z)[0]  # the pmf at psi = 1, up to psi^k
        with pm.Model() as twin:
            log_odds = pm.Normal("log_odds_ratio", 0.0, self.log_odds_sd)
            pm.Deterministic("odds_ratio", pm.math.exp(log_odds))
            log_weights = log_base + log_odds * support
            if type(self.mechanism) is DiscreteLaplace:
                marginal_release("y", support, log_weights, self.mechanism, y)
            else:
                log_release = self.mechanism.logpdf(y, support)  # log pi(y | n11 = k), fixed numbers
                pm.Potential("release", pt.logsumexp(log_weights + log_release) - pt.logsumexp(log_weights))
        return twin


def model(
    epsilon: float | None = None, log_odds_sd: float = 1.0, noise: str | Mechanism = "discrete_laplace"
) -> Table2x2Model:
    """The 2 x 2 table PPD model; z must hold ``row_totals`` (2 counts) and ``col_total``.

    The prior is a scipy.stats frozen log-normal, which PPDModel accepts as it is.

    Parameters
    ----------
    epsilon : float, optional
        The privacy parameter of a named noise (default 1.0); leave it out when ``noise`` is a
        mechanism, which carries its own.
    log_odds_sd : float
        tau, the prior standard deviation of log psi.
    noise : {"discrete_laplace", "tulap"} or Mechanism
        The noise on n11: the discrete Laplace (integer release, the default), Tulap (the
        canonical noise of f_{eps,0}: a continuous release, Theorem 37's Semi-DP release), or
        any mechanism for one value, such as ``CanonicalNoise.gaussian(mu)``.

    Examples
    --------
    >>> import ppdinfer as pp
    >>> from ppdinfer.models import table_2x2
    >>> model = table_2x2.model(epsilon=1.0, log_odds_sd=1.0)
    >>> z = table_2x2.public_information(row_totals=[20, 30], col_total=25)
    >>> exact = pp.exact_posterior(model, 14, z)
    >>> round(float(exact["exact"]["theta_mean"][0]), 1)        # the posterior mean odds ratio
    3.0
    >>> semi_dp = table_2x2.model(epsilon=1.0, noise="tulap")   # U = n11 + Tulap: continuous
    >>> round(float(pp.exact_posterior(semi_dp, 14.3, z)["exact"]["theta_mean"][0]), 1)
    3.0

    Tulap noise is discrete Laplace noise plus an independent Uniform(-1/2, 1/2), which carries
    no information: the posterior given U = 14.3 is the discrete Laplace one given round(U) = 14.
    """
    return Table2x2Model(epsilon, log_odds_sd, noise)


def _noise_mechanism(noise, epsilon) -> Mechanism:
    """The mechanism on n11: a named noise built from epsilon (default 1.0), or the mechanism given."""
    if isinstance(noise, Mechanism):
        if epsilon is not None:
            raise ValueError(
                f"epsilon must be left out when noise is a mechanism ({noise!r} has its own "
                f"privacy parameters), got epsilon={epsilon!r}"
            )
        return noise
    if not isinstance(noise, str) or noise not in NOISES:
        raise ValueError(f"noise must be one of {sorted(NOISES)} or a Mechanism, got {noise!r}")
    return NOISES[noise](1.0 if epsilon is None else epsilon)


def public_information(row_totals, col_total) -> dict:
    """z for the model: the public margins (validated by the data model when sampling).

    Examples
    --------
    >>> from ppdinfer.models import table_2x2
    >>> table_2x2.public_information(row_totals=[20, 30], col_total=25)
    {'row_totals': [20, 30], 'col_total': 25}
    """
    return {"row_totals": list(row_totals), "col_total": col_total}
