r"""Beta-binomial model released with discrete Laplace noise.

.. math::

    \theta \sim \mathrm{Beta}(a, b), \qquad
    x \mid \theta \sim \mathrm{Binomial}(n, \theta), \qquad
    y \mid x \sim x + \mathrm{DLap}(\epsilon),

where DLap(epsilon) has pmf (1 - e^{-epsilon}) / (1 + e^{-epsilon}) e^{-epsilon |k|}: an
epsilon-DP release of the count of n binary records (sensitivity 1). No public information
(z = None). theta is integrated out exactly (beta-binomial), so the exact posterior
enumerates x in {0, ..., n}.

PyMC twin (:meth:`BetaBinomialModel.to_pymc`): x has the small support {0, ..., n}, so by
default it is summed out, y ~ sum_x Binomial(x | n, p) DLap(y - x), and NUTS samples p alone.
With ``marginalize=False`` x stays an integer latent for :func:`ppdinfer.pymc.sample`'s
data-augmentation step (useful to validate that step against the marginalized model).
"""

from __future__ import annotations

import numpy as np

from ..generators import Binomial
from ..inference import PPDModel
from ..mechanisms import DiscreteLaplace
from ..priors import Beta


class BetaBinomialModel(PPDModel):
    """The beta-binomial PPD model, with its PyMC twin (see the module docstring for the math).

    Examples
    --------
    >>> from ppdinfer.models import beta_binomial
    >>> model = beta_binomial.model(n=100, epsilon=0.5)
    >>> [v.name for v in model.to_pymc(40).free_RVs]                     # x summed out
    ['p']
    >>> [v.name for v in model.to_pymc(40, marginalize=False).free_RVs]  # x kept as a latent
    ['p', 'x']
    """

    def __init__(self, n: int, epsilon: float, a: float, b: float):
        super().__init__(Beta(a, b), Binomial(n), DiscreteLaplace(epsilon), names="p")

    def to_pymc(self, y, z=None, *, marginalize: bool = True):
        """The PyMC twin: x summed out (``marginalize=True``) or an integer latent for ppdinfer.pymc.sample."""
        import pymc as pm

        from ._pymc_helpers import marginal_release, noise_likelihood

        y, z, _, _ = self.prepare(y, z)
        n = self.simulate.n
        with pm.Model() as twin:
            p = pm.Beta("p", alpha=self.prior.alpha, beta=self.prior.beta)
            if marginalize:
                support = np.arange(n + 1)
                log_weights = pm.logp(pm.Binomial.dist(n=n, p=p), support)
                marginal_release("y", support, log_weights, self.mechanism, y)
            else:
                x = pm.Binomial("x", n=n, p=p, initval=int(np.clip(y, 0, n)))
                noise_likelihood("y", x, self.mechanism, y)
        return twin


def model(n: int = 100, epsilon: float = 1.0, a: float = 1.0, b: float = 1.0) -> BetaBinomialModel:
    """The beta-binomial PPD model for ``n`` records released at privacy level ``epsilon``.

    p ~ Beta(a, b), x | p ~ Binomial(n, p), y = x + DLap(epsilon); no public information.

    Examples
    --------
    >>> import ppdinfer as pp
    >>> from ppdinfer.models import beta_binomial
    >>> model = beta_binomial.model(n=100, epsilon=0.5)
    >>> y = model.mechanism.release(37, random_seed=1)
    >>> exact = pp.exact_posterior(model, y)
    >>> bool(0.25 < float(exact["exact"]["theta_mean"][0]) < 0.5)
    True
    """
    return BetaBinomialModel(n, epsilon, a, b)
