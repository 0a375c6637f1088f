"""ppdinfer: Bayesian inference from partially private data.

A release mechanism is both a sampler and a likelihood; a model is the triple
(prior, data model, mechanism); samplers return ArviZ-style ``xarray.DataTree`` results.
"""

from . import datasets, frequentist, generators, interop, invariants, mechanisms, priors, privacy, projection
from .frequentist import binomial_interval, binomial_test, odds_ratio_power, odds_ratio_test
from .inference import (
    BudgetWarning,
    ImportanceWarning,
    PPDModel,
    exact_posterior,
    exchange_sample,
    importance_sample,
    load,
    plot_posterior_predictive,
    posterior_predictive,
    posterior_predictive_pvalue,
    rejection_sample,
    resample,
    save,
    summary,
    weighted_mean,
)
from .privacy import (
    plot_prior_posterior_odds,
    posterior_odds_ratio,
    secret_log_likelihood,
    secret_posterior,
    secret_posterior_mc,
)
from .simulation_based_calibration import SBCResult, sbc

__version__ = "0.1.0"

__all__ = [
    "BudgetWarning",
    "ImportanceWarning",
    "PPDModel",
    "SBCResult",
    "binomial_interval",
    "binomial_test",
    "datasets",
    "exact_posterior",
    "exchange_sample",
    "frequentist",
    "generators",
    "interop",
    "importance_sample",
    "invariants",
    "load",
    "mechanisms",
    "odds_ratio_power",
    "odds_ratio_test",
    "plot_posterior_predictive",
    "plot_prior_posterior_odds",
    "posterior_odds_ratio",
    "posterior_predictive",
    "posterior_predictive_pvalue",
    "priors",
    "privacy",
    "projection",
    "rejection_sample",
    "resample",
    "sbc",
    "save",
    "secret_log_likelihood",
    "secret_posterior",
    "secret_posterior_mc",
    "summary",
    "weighted_mean",
]
