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
from .predictive import plot_posterior_predictive, posterior_predictive, posterior_predictive_pvalue
from .rejection import BudgetWarning, rejection_sample
from .sbc import SBCResult, sbc
from .storage import load, save
from .summary import summary

__all__ = [
    "BudgetWarning",
    "ImportanceWarning",
    "MonteCarloSecretPosterior",
    "PPDModel",
    "SBCResult",
    "exact_posterior",
    "exchange_sample",
    "importance_sample",
    "load",
    "odds_ratio_power",
    "odds_ratio_test",
    "plot_posterior_predictive",
    "plot_prior_posterior_odds",
    "posterior_odds_ratio",
    "posterior_predictive",
    "posterior_predictive_pvalue",
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
