"""Gallery of complete partially-private-data models, one module each.

- :mod:`~ppdinfer.models.beta_binomial`: a proportion, released count with discrete Laplace noise.
- :mod:`~ppdinfer.models.congenial_counts`: category counts with a public total, released by the
  congenial mechanism (noise conditioned on the invariants; no PyMC twin).
- :mod:`~ppdinfer.models.county_counts`: county counts given a public total, with a Dirichlet
  prior centred on last month's public counts.
- :mod:`~ppdinfer.models.table_2x2`: a 2 x 2 table with public margins, odds ratio as parameter.
"""

from . import beta_binomial, congenial_counts, county_counts, table_2x2

__all__ = ["beta_binomial", "congenial_counts", "county_counts", "table_2x2"]
