"""Checks shared by the interop tests: another library's releases against ppdinfer's likelihood."""

import math

import numpy as np
from scipy import stats

import ppdinfer as pp


def chi_square_p_value(noise, mechanism, half_width, min_expected=5.0):
    """p-value of integer noise against the mechanism's pmf on -w..w plus two tail bins, w <= half_width
    the largest at which each tail bin expects at least ``min_expected`` counts (with fewer, the
    chi-square approximation fails and a correct sampler is rejected far more often than the p-value says)."""
    for width in range(half_width, 0, -1):
        k = np.arange(-width, width + 1)
        pmf = np.exp(mechanism.logpdf(0, k))
        tail = (1 - pmf.sum()) / 2
        if tail * noise.size >= min_expected:
            break
    observed = np.concatenate([[np.sum(noise < -width)], [np.sum(noise == v) for v in k], [np.sum(noise > width)]])
    expected = np.concatenate([[tail], pmf, [tail]]) * noise.size
    return stats.chisquare(observed, expected).pvalue


def assert_rejection_matches_exact_posterior(mechanism, y, n=50):
    """Beta(1, 1), Binomial(n) and the converted mechanism: 2,000 rejection draws of p agree with
    the exact posterior mean within 4 Monte Carlo standard errors."""
    model = pp.PPDModel(pp.priors.Beta(1, 1), pp.generators.Binomial(n), mechanism, names="p")
    exact = pp.exact_posterior(model, y)
    draws = pp.rejection_sample(model, y, draws=2000, random_seed=1, progressbar=False)
    exact_mean = float(exact["exact"]["theta_mean"].values[0])
    exact_sd = float(exact["exact"]["theta_sd"].values[0])
    sampled = draws["posterior"]["p"].values.ravel()
    assert abs(sampled.mean() - exact_mean) < 4 * exact_sd / math.sqrt(sampled.size)
