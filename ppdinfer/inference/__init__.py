"""Inference from partially private data: the model triple and its samplers."""

from .enumeration import exact_posterior
from .exchange import exchange_sample
from .importance import ImportanceWarning, importance_sample, resample, weighted_mean
from .model import PPDModel
from .predictive import plot_posterior_predictive, posterior_predictive, posterior_predictive_pvalue
from .rejection import BudgetWarning, rejection_sample
from .storage import load, save
from .summary import summary

__all__ = [
    "BudgetWarning",
    "ImportanceWarning",
    "PPDModel",
    "exact_posterior",
    "exchange_sample",
    "importance_sample",
    "load",
    "plot_posterior_predictive",
    "posterior_predictive",
    "posterior_predictive_pvalue",
    "rejection_sample",
    "resample",
    "save",
    "summary",
    "weighted_mean",
]
