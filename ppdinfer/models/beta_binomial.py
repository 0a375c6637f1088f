r"""Beta-binomial model released with discrete Laplace noise.

.. math::

    \theta \sim \mathrm{Beta}(a, b), \qquad
    x \mid \theta \sim \mathrm{Binomial}(n, \theta), \qquad
    y \mid x \sim x + \mathrm{DLap}(\epsilon),

where DLap(epsilon) has pmf (1 - e^{-epsilon}) / (1 + e^{-epsilon}) e^{-epsilon |k|}: an
epsilon-DP release of the count of n binary records (sensitivity 1). No public information
(z = None). theta is integrated out exactly (beta-binomial), so the exact posterior
enumerates x in {0, ..., n}.
"""

from __future__ import annotations

from ..generators import Binomial
from ..inference import PPDModel
from ..mechanisms import DiscreteLaplace
from ..priors import Beta


def model(n: int = 100, epsilon: float = 1.0, a: float = 1.0, b: float = 1.0) -> PPDModel:
    """The beta-binomial PPD model for ``n`` records released at privacy level ``epsilon``."""
    return PPDModel(Beta(a, b), Binomial(n), DiscreteLaplace(epsilon), names="p")
