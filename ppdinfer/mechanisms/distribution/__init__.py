"""Distribution privacy mechanisms (Chen & Ohrimenko): hide a global property theta of the data.

- `family`: the laws f_theta of the query under each theta (:class:`~.DiscreteLaw`,
  :class:`~.GaussianLaw`) and the pairs Psi (:class:`~.DistributionFamily`).
- `transport`: W_inf and (W, delta)-closeness with the L1 ground metric (bottleneck transport).
- `noise`: :class:`~.CorrelatedGaussian`, y = x + N(0, C) with C possibly singular.
- `calibration`: the Wasserstein mechanisms (Theorems 3.1-3.3), the expected value mechanisms
  ExpM(L), ExpM(G), DirM(L), EigM(G), DauM(G), the no-noise check (Theorem 4.4), an exact audit of
  the Gaussian calibrations, and the guarantees under misspecification (Theorems 4.6, 4.7).
"""

from .calibration import (
    DistributionPrivacyWarning,
    approximate_wasserstein_mechanism,
    classical_constant,
    concentration_radius,
    directional_gaussian,
    directional_laplace,
    eigenvector_gaussian,
    expected_value_gaussian,
    expected_value_laplace,
    mahalanobis_distances,
    mahalanobis_limit,
    mean_direction,
    misspecified_guarantee,
    noiseless_release_is_private,
    release_delta,
    wasserstein_correction,
    wasserstein_mechanism,
    wasserstein_sensitivity,
)
from .family import DiscreteLaw, DistributionFamily, GaussianLaw
from .noise import CorrelatedGaussian
from .transport import closeness_radius, transportable_mass, wasserstein_inf

__all__ = [
    "CorrelatedGaussian",
    "DiscreteLaw",
    "DistributionFamily",
    "DistributionPrivacyWarning",
    "GaussianLaw",
    "approximate_wasserstein_mechanism",
    "classical_constant",
    "closeness_radius",
    "concentration_radius",
    "directional_gaussian",
    "directional_laplace",
    "eigenvector_gaussian",
    "expected_value_gaussian",
    "expected_value_laplace",
    "mahalanobis_distances",
    "mahalanobis_limit",
    "mean_direction",
    "misspecified_guarantee",
    "noiseless_release_is_private",
    "release_delta",
    "transportable_mass",
    "wasserstein_correction",
    "wasserstein_inf",
    "wasserstein_mechanism",
    "wasserstein_sensitivity",
]
