"""Bayesian inference for the cells of a census noisy-measurement file (the 2020 DAS).

The mechanism itself is :class:`ppdinfer.mechanisms.NoisyMeasurements`; this package builds its
queries from a geography (:mod:`.geography`), gives the Bureau's estimators (:mod:`.baselines`),
the production allocation (:mod:`.production`), the (eps, delta) conversion (:mod:`.privacy`) and a
compiled posterior sampler for the latent cells (:mod:`.sampler`). It reads the Bureau's 2020 Noisy
Measurement File (:mod:`.nmf`, :mod:`.nmf_layout`) over the PL94 histograms (:mod:`.pl94`), turns its
measurements into a release over a target table (:mod:`.nmf_release`, :mod:`.summed_noise`), writes
synthetic files in the same layout (:mod:`.nmf_writer`, :mod:`.synthetic_pl94`) and sums posterior draws
over districts (:mod:`.districts`).
"""

from .baselines import GLSResult, gls_estimate, largest_remainder, project_columns, topdown_estimate
from .decomposition import Decomposition
from .districts import aggregate, district_summary
from .exposure import LeafExposure, file_exposure
from .geography import CensusQueries, Geography, TableSpec, census_queries
from .grouped_release import BoundBlock, GroupedRelease, MeasurementBlock, grouped_release
from .nmf import NoisyMeasurementFile, read_nmf
from .nmf_release import measurement_release
from .nmf_writer import NMFQuirks, write_nmf
from .people import PersonMoves, sample_people
from .pl94 import PERSON, UNIT, Coarsening, HistogramSchema
from .privacy import epsilon_delta
from .production import (
    PL94_QUERY_SHARES,
    PRODUCTION_LEVEL_SHARES,
    PRODUCTION_QUERY_SHARES,
    PRODUCTION_RHO,
    pl94_variances,
    production_allocation,
    production_sigmas,
)
from .sampler import CellPrior, hierarchical_log_prior, sample_cells
from .summed_noise import summed_noise_error
from .synthetic import STATE_SHARES, pa_county_populations, synthetic_state
from .synthetic_pl94 import SyntheticPL94State, synthetic_pl94_state

__all__ = [
    "PERSON",
    "PL94_QUERY_SHARES",
    "UNIT",
    "BoundBlock",
    "Coarsening",
    "Decomposition",
    "GroupedRelease",
    "MeasurementBlock",
    "PersonMoves",
    "LeafExposure",
    "file_exposure",
    "HistogramSchema",
    "NMFQuirks",
    "NoisyMeasurementFile",
    "SyntheticPL94State",
    "aggregate",
    "district_summary",
    "grouped_release",
    "measurement_release",
    "pl94_variances",
    "read_nmf",
    "summed_noise_error",
    "synthetic_pl94_state",
    "write_nmf",
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
    "sample_people",
    "synthetic_state",
    "topdown_estimate",
]
