"""Bayesian inference for the cells of a census noisy-measurement file (the 2020 DAS).

The mechanism itself is :class:`ppdinfer.mechanisms.NoisyMeasurements`; this package builds its
queries from a geography (:mod:`.geography`), gives the Bureau's estimators (:mod:`.baselines`),
the production allocation (:mod:`.production`), the (eps, delta) conversion (:mod:`.privacy`) and a
compiled posterior sampler for the latent cells (:mod:`.sampler`).
"""

from .baselines import GLSResult, gls_estimate, largest_remainder, project_columns, topdown_estimate
from .geography import CensusQueries, Geography, TableSpec, census_queries
from .privacy import epsilon_delta
from .production import (
    PRODUCTION_LEVEL_SHARES,
    PRODUCTION_QUERY_SHARES,
    PRODUCTION_RHO,
    production_allocation,
    production_sigmas,
)
from .sampler import CellPrior, hierarchical_log_prior, sample_cells
from .synthetic import STATE_SHARES, pa_county_populations, synthetic_state

__all__ = [
    "PRODUCTION_LEVEL_SHARES",
    "PRODUCTION_QUERY_SHARES",
    "PRODUCTION_RHO",
    "STATE_SHARES",
    "CellPrior",
    "CensusQueries",
    "GLSResult",
    "Geography",
    "TableSpec",
    "census_queries",
    "epsilon_delta",
    "gls_estimate",
    "hierarchical_log_prior",
    "largest_remainder",
    "pa_county_populations",
    "production_allocation",
    "production_sigmas",
    "project_columns",
    "sample_cells",
    "synthetic_state",
    "topdown_estimate",
]
