"""Gallery of complete partially-private-data models, one module each.

- :mod:`~ppdinfer.models.beta_binomial`: a proportion, released count with discrete Laplace noise.
- :mod:`~ppdinfer.models.congenial_counts`: category counts with a public total, released by the
  congenial mechanism (noise conditioned on the invariants; no PyMC twin).
- :mod:`~ppdinfer.models.county_counts`: county counts given a public total, with a Dirichlet
  prior centred on last month's public counts.
- :mod:`~ppdinfer.models.linear_regression`: linear regression from Laplace-noised sufficient statistics
  (sum x, sum y, X'X, X'y, y'y), their normal approximation given theta, fitted by NUTS.
- :mod:`~ppdinfer.models.logistic_regression`: logistic regression from Laplace-noised sums (sum x, sum y,
  X'X, X'y), their normal approximation given theta with Gauss-Hermite moments, fitted by NUTS.
- :mod:`~ppdinfer.models.property_secret`: a global property of a dataset as the secret (distribution
  privacy): the attacker's posterior over candidate values, in closed form and by the samplers.
- :mod:`~ppdinfer.models.regression_records`: the linear and logistic regressions' exact posteriors by
  record-level data augmentation (d covariates for the linear model, one for the logistic; the reference
  for small n).
- :mod:`~ppdinfer.models.regression_sbc`: simulation-based calibration of both regression samplers on
  record-level simulations (clipping included).
- :mod:`~ppdinfer.models.pufferfish_secret`: a secret correlated with the data (Pufferfish): the
  attacker's posterior of the secret given a release.
- :mod:`~ppdinfer.models.semidp_table`: an r x c table with public margins released by the Semi-DP
  Gaussian mechanism; the uniform association (log local odds ratio) as parameter.
- :mod:`~ppdinfer.models.table_2x2`: a 2 x 2 table with public margins, odds ratio as parameter
  (discrete Laplace, Tulap or any canonical noise on the free cell).
"""

from . import (
    beta_binomial,
    congenial_counts,
    county_counts,
    linear_regression,
    logistic_regression,
    property_secret,
    pufferfish_secret,
    regression_records,
    regression_sbc,
    semidp_table,
    table_2x2,
)

__all__ = [
    "beta_binomial",
    "congenial_counts",
    "county_counts",
    "linear_regression",
    "logistic_regression",
    "property_secret",
    "pufferfish_secret",
    "regression_records",
    "regression_sbc",
    "semidp_table",
    "table_2x2",
]
