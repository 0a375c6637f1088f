"""Pieces shared by the gallery's PyMC twins."""

from __future__ import annotations

import numpy as np
import pytensor.tensor as pt


def noise_likelihood(name: str, mu, mechanism, observed):
    """The release y ~ mechanism centred on mu, as a PyMC observed variable."""
    from ..pymc import DiscreteLaplace

    return DiscreteLaplace(name, mu=mu, epsilon=mechanism.epsilon, sensitivity=mechanism.sensitivity, observed=observed)


def marginal_release(name: str, support: np.ndarray, log_weights, mechanism, observed):
    """y ~ sum_k w_k DiscreteLaplace(support_k): the release with x summed out over its support."""
    import pymc as pm

    from ..pymc import DiscreteLaplace

    components = DiscreteLaplace.dist(mu=support, epsilon=mechanism.epsilon, sensitivity=mechanism.sensitivity)
    weights = pt.exp(log_weights - pt.logsumexp(log_weights))
    return pm.Mixture(name, w=weights, comp_dists=components, observed=observed)
