"""Frequentist companions of a private release: tests and intervals computed from the release alone.

- `binomial`: the uniformly most powerful test of a binomial proportion from a Tulap release, and the
  confidence interval that inverts it.
- `odds_ratio`: the Semi-DP test of the odds ratio of a 2 x 2 table with public margins (Cho & Awan,
  Theorem 37) and its exact power.
"""

from .binomial import binomial_interval, binomial_test
from .odds_ratio import odds_ratio_power, odds_ratio_test

__all__ = ["binomial_interval", "binomial_test", "odds_ratio_power", "odds_ratio_test"]
