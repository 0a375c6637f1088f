"""ppdinfer: Bayesian inference from partially private data.

A release mechanism is both a sampler and a likelihood; a model is the triple
(prior, data model, mechanism); samplers return ArviZ-style ``xarray.DataTree`` results.
"""

from . import generators, invariants, mechanisms, priors, privacy, projection
from .inference import (
    BudgetWarning,
    ImportanceWarning,
    PPDModel,
    exact_posterior,
    exchange_sample,
    importance_sample,
    odds_ratio_power,
    odds_ratio_test,
    rejection_sample,
    resample,
    summary,
    weighted_mean,
)

__version__ = "0.1.0"

__all__ = [
    "BudgetWarning",
    "ImportanceWarning",
    "PPDModel",
    "exact_posterior",
    "exchange_sample",
    "generators",
    "importance_sample",
    "invariants",
    "mechanisms",
    "odds_ratio_power",
    "odds_ratio_test",
    "priors",
    "privacy",
    "projection",
    "rejection_sample",
    "resample",
    "summary",
    "weighted_mean",
]
