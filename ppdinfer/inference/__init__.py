"""Inference from partially private data: the model triple and its samplers."""

from .attacker import (
    MonteCarloSecretPosterior,
    plot_prior_posterior_odds,
    posterior_odds_ratio,
    secret_log_likelihood,
    secret_posterior,
    secret_posterior_mc,
)
from .enumeration import exact_posterior
from .exchange import exchange_sample
from .importance import ImportanceWarning, importance_sample, resample, weighted_mean
from .model import PPDModel
from .odds_ratio_test import odds_ratio_power, odds_ratio_test
from .rejection import BudgetWarning, rejection_sample
from .summary import summary

__all__ = [
    "BudgetWarning",
    "ImportanceWarning",
    "MonteCarloSecretPosterior",
    "PPDModel",
    "exact_posterior",
    "exchange_sample",
    "importance_sample",
    "odds_ratio_power",
    "odds_ratio_test",
    "plot_prior_posterior_odds",
    "posterior_odds_ratio",
    "rejection_sample",
    "resample",
    "secret_log_likelihood",
    "secret_posterior",
    "secret_posterior_mc",
    "summary",
    "weighted_mean",
]
