"""ppdinfer: Bayesian inference from partially private data.

A release mechanism is both a sampler and a likelihood; a model is the triple
(prior, data model, mechanism); samplers return ArviZ-style ``xarray.DataTree`` results.
"""

from . import datasets, generators, interop, invariants, mechanisms, priors, privacy, projection
from .inference import (
    BudgetWarning,
    ImportanceWarning,
    MonteCarloSecretPosterior,
    PPDModel,
    exact_posterior,
    exchange_sample,
    importance_sample,
    odds_ratio_power,
    odds_ratio_test,
    plot_prior_posterior_odds,
    posterior_odds_ratio,
    rejection_sample,
    resample,
    secret_log_likelihood,
    secret_posterior,
    secret_posterior_mc,
    summary,
    weighted_mean,
)

__version__ = "0.1.0"

__all__ = [
    "BudgetWarning",
    "ImportanceWarning",
    "MonteCarloSecretPosterior",
    "PPDModel",
    "datasets",
    "exact_posterior",
    "exchange_sample",
    "generators",
    "interop",
    "importance_sample",
    "invariants",
    "mechanisms",
    "odds_ratio_power",
    "odds_ratio_test",
    "plot_prior_posterior_odds",
    "posterior_odds_ratio",
    "priors",
    "privacy",
    "projection",
    "rejection_sample",
    "resample",
    "secret_log_likelihood",
    "secret_posterior",
    "secret_posterior_mc",
    "summary",
    "weighted_mean",
]
