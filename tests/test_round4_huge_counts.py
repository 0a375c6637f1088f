"""Issue 41 item 19: the augmentation kernel's prior ratios at huge counts, and three argument checkers.

At x = 4e15 a log prior is a log-gamma of about 1.4e17, which float64 holds only to +-16, so a ratio taken
as the difference of two log priors is rounding. The kernel's ratios are checked against mpmath at ordinary
and huge counts, and a Poisson(4e15) count observed with Normal(x, 3) noise against the enumerated posterior.
"""

from __future__ import annotations

import math
import warnings

import mpmath
import numpy as np
import pymc as pm
import pytest
from scipy import stats

import ppdinfer.pymc as ppm
from ppdinfer import validation
from ppdinfer.kernels.augmentation import (
    BETA_BINOMIAL,
    BINOMIAL,
    DIRICHLET_MULTINOMIAL,
    GAMMA_POISSON,
    MULTINOMIAL,
    POISSON,
    pair_local_move,
    seed_moves,
    site_local_move,
    site_prior_move,
)
from ppdinfer.kernels.special import POISSON_EXACT
from ppdinfer.mechanisms import Laplace

MP = mpmath.MPContext()  # its own precision, not mpmath.mp's (shared with other tests)
MP.dps = 60
COUNTS = (10, 10**7, 4 * 10**15)


def assert_ratio(log_ratio, exact, step):
    """The kernel's log ratio against the exact one (None off the support: -inf)."""
    if exact is None:
        assert log_ratio == -np.inf, (step, log_ratio)
    else:
        assert abs(log_ratio - float(exact)) < 1e-9, (step, log_ratio, float(exact))


def exact_site_log_prior(code, x, row):
    """The coordinate's unnormalized log prior at x, in mpmath (the kernel's families, written independently);
    None off the support."""
    if x < 0 or (code in (BINOMIAL, BETA_BINOMIAL) and x > row[0]):
        return None
    x = MP.mpf(int(x))
    log_factorial = MP.loggamma(x + 1)
    if code == POISSON:
        return x * MP.log(row[0]) - log_factorial
    if code == GAMMA_POISSON:
        r, q = map(MP.mpf, row)
        return MP.loggamma(x + r) - log_factorial + x * MP.log(q / (1 + q))
    n = MP.mpf(row[0])
    if code == BINOMIAL:
        p = MP.mpf(row[1])
        return x * MP.log(p) + (n - x) * MP.log(1 - p) - log_factorial - MP.loggamma(n - x + 1)
    a, b = map(MP.mpf, row[1:])  # BETA_BINOMIAL
    return MP.loggamma(x + a) + MP.loggamma(n - x + b) - log_factorial - MP.loggamma(n - x + 1)


def site_row(code, x):
    """Parameters with x near the prior's bulk."""
    return {
        POISSON: [x + 3.0],
        GAMMA_POISSON: [2.5, x / 2.5],
        BINOMIAL: [2.0 * x, 0.5],
        BETA_BINOMIAL: [2.0 * x, 1.5, 2.5],
    }[code]


@pytest.mark.parametrize("code", [POISSON, GAMMA_POISSON, BINOMIAL, BETA_BINOMIAL])
@pytest.mark.parametrize("x", COUNTS)
def test_the_site_moves_log_prior_ratio_matches_mpmath_at_any_count(code, x):
    params = np.array([site_row(code, x)])
    state = np.array([x], dtype=np.int64)
    seed_moves(3)
    for scale in (1.0, 3.0, 30.0):  # steps of 1 to 4, then past the pair kernel's product shortcut
        for _ in range(8):
            candidate, log_ratio = site_local_move(code, state, params, np.array([scale]), 0)
            exact = exact_site_log_prior(code, candidate, params[0])
            exact = None if exact is None else exact - exact_site_log_prior(code, x, params[0])
            assert_ratio(log_ratio, exact, candidate - x)


def exact_pair_log_prior(collapsed, cells, weights):
    """The pair's unnormalized log prior: sum of x log p - log x! (multinomial) or log Gamma(x + alpha) - log x!;
    None off the support."""
    if min(cells) < 0:
        return None
    total = MP.mpf(0)
    for x, w in zip(cells, weights):
        x = MP.mpf(int(x))
        total += (MP.loggamma(x + w) if collapsed else x * MP.log(w)) - MP.loggamma(x + 1)
    return total


@pytest.mark.parametrize("code", [MULTINOMIAL, DIRICHLET_MULTINOMIAL])
@pytest.mark.parametrize("x", COUNTS)
def test_the_pair_moves_log_prior_ratio_matches_mpmath_at_any_count(code, x):
    weights = [0.3, 0.7] if code == MULTINOMIAL else [1.5, 4.0]
    params = np.array([[2.0 * x + 1.0, weights[0]], [2.0 * x + 1.0, weights[1]]])
    state = np.array([x, x + 1], dtype=np.int64)
    seed_moves(5)
    for scale in (1.0, 3.0, 30.0):
        for _ in range(8):
            xi, xj, log_ratio = pair_local_move(code, state, params, np.full(2, scale), 0, 1)
            exact = exact_pair_log_prior(code == DIRICHLET_MULTINOMIAL, (xi, xj), weights)
            before = exact_pair_log_prior(code == DIRICHLET_MULTINOMIAL, state, weights)
            exact = None if exact is None else exact - before
            assert_ratio(log_ratio, exact, xi - x)


def test_a_shortcut_product_that_underflows_takes_the_general_path():
    """Eight one-step ratios of 1e-200 underflow to 0: the log ratio is still the exact -3,700 or so."""
    weights = [1e-200, 1.0]
    params = np.array([[100.0, weights[0]], [100.0, weights[1]]])
    state = np.array([0, 100], dtype=np.int64)
    seed_moves(0)
    for _ in range(40):
        xi, xj, log_ratio = pair_local_move(MULTINOMIAL, state, params, np.full(2, 6.0), 0, 1)
        exact = exact_pair_log_prior(False, (xi, xj), weights)
        assert_ratio(log_ratio, None if exact is None else exact - exact_pair_log_prior(False, state, weights), xi)


def prior_draws(mean, size, seed):
    """Draws of the site prior move of a Poisson(mean) coordinate."""
    seed_moves(seed)
    return np.array([site_prior_move(POISSON, np.array([[mean]]), 0) for _ in range(size)])


def test_the_prior_move_draws_a_poisson_of_mean_4e15_with_its_sd_and_tails():
    """NumPy's generator, which the kernel used, gives sd 1.23 sqrt(mean) there and 10 times the tails."""
    z = (prior_draws(4e15, 20_000, 1) - 4e15) / np.sqrt(4e15)
    assert abs(z.mean()) < 0.03 and abs(z.std() - 1.0) < 0.03, (z.mean(), z.std())
    assert np.mean(np.abs(z) > 3.0) < 0.0045  # the normal limit's 0.0027, to ~1e-8 at this mean


def test_the_prior_moves_exact_poisson_generator_matches_scipys_cdf():
    mean = 2.5 * POISSON_EXACT
    edges = np.floor(mean + np.sqrt(mean) * np.array([-3.0, -2.0, -1.0, -0.5, 0.0, 0.5, 1.0, 2.0, 3.0]))
    observed = np.bincount(np.searchsorted(edges, prior_draws(mean, 20_000, 2), side="left"), minlength=10)
    expected = np.diff(stats.poisson.cdf(edges, mean), prepend=0.0, append=1.0) * 20_000
    assert stats.chisquare(observed, expected).pvalue > 1e-3


def enumerated_offset_moments(mean, y, sd, half_width=60):
    """Mean and sd of x - y under Poisson(mean) x Normal(y | x, sd), by enumeration in mpmath."""
    offsets = range(-half_width, half_width + 1)
    log_w = [(y + k) * MP.log(mean) - MP.loggamma(y + k + 1) - MP.mpf(k) ** 2 / (2 * sd**2) for k in offsets]
    top = max(log_w)
    w = [MP.exp(v - top) for v in log_w]
    first = sum(k * v for k, v in zip(offsets, w)) / sum(w)
    second = sum(k * k * v for k, v in zip(offsets, w)) / sum(w)
    return float(first), float(MP.sqrt(second - first**2))


def test_a_poisson_count_of_4e15_has_the_enumerated_posterior():
    mean, y = 4 * 10**15, 4 * 10**15 + 7
    with pm.Model() as model:
        x = pm.Poisson("x", float(mean), initval=y)
        pm.Normal("obs", x, 3.0, observed=float(y))
    with model, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        idata = ppm.sample(
            method="augment", draws=600, tune=200, chains=1, random_seed=11, progressbar=False,
            compute_convergence_checks=False,
        )  # fmt: skip
    offsets = idata["posterior"]["x"].values.ravel() - y
    exact_mean, exact_sd = enumerated_offset_moments(mean, y, 3.0)
    assert abs(exact_mean) < 1e-6 and abs(exact_sd - 3.0) < 0.01  # the prior is flat over the window
    assert abs(offsets.mean() - exact_mean) < 0.75, offsets.mean()
    assert abs(offsets.std() - exact_sd) < 0.6, offsets.std()


def test_summing_out_refuses_counts_whose_log_pmf_float64_cannot_difference():
    """pm.logp of Poisson(4e15) over a window jumps by +-16 (exact changes ~1e-15): summed out, E(x - y) came out
    -7.0 (sd 0.72) against 0 (sd 3); marginalize now refuses, and auto augments (exact, as above)."""
    mean, y = 4 * 10**15, 4 * 10**15 + 0.5
    with pm.Model() as model:
        x = pm.Poisson("x", float(mean), initval=int(y))
        pm.Normal("obs", x, 3.0, observed=y)
    with model, pytest.raises(ValueError, match="window reaches counts of 4e.15.*method='augment'"):
        ppm.sample(method="marginalize", draws=10, tune=10, chains=1, progressbar=False)
    with model, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        idata = ppm.sample(
            draws=300, tune=100, chains=1, random_seed=3, progressbar=False, compute_convergence_checks=False
        )
    assert idata["posterior"].attrs["ppdinfer_method"] == "augment"
    assert "window reaches counts" in idata["posterior"].attrs["ppdinfer_method_reason"]
    offsets = idata["posterior"]["x"].values.ravel() - y
    assert abs(offsets.mean()) < 1.0 and abs(offsets.std() - 3.0) < 0.8


def test_the_poisson_data_model_draws_a_mean_of_4e15_with_its_sd_and_tails():
    """NumPy's rng.poisson at 4e15: sd 1.23 sqrt(mean), 3 % beyond 3 sd; the data model's draws are exact there and
    NumPy's own below NUMPY_POISSON_LIMIT (the same seeds give the same draws as before)."""
    from ppdinfer.generators import Poisson

    z = (Poisson()(np.full(20_000, 4e15), None, np.random.default_rng(5)) - 4e15) / np.sqrt(4e15)
    assert abs(z.mean()) < 0.03 and abs(z.std() - 1.0) < 0.02 and (np.abs(z) > 3).mean() < 0.005
    ordinary = Poisson(exposure=[2.0, 3.0])(np.array([[1.0, 2.0]] * 5), None, np.random.default_rng(6))
    np.testing.assert_array_equal(ordinary, np.random.default_rng(6).poisson(np.array([[2.0, 6.0]] * 5)))
    with pytest.raises(ValueError, match="exceeds 2\\^53"):
        Poisson()(np.array([1e17]), None, np.random.default_rng(0))


# -- the argument checkers ---------------------------------------------------------------------------


def test_non_negative_int_takes_whole_numbers_from_zero_and_names_the_parameter():
    check = validation.non_negative_int
    assert check(0, "tune") == 0 and check(np.int64(7), "tune") == 7 and check(3.0, "tune") == 3
    assert type(check(np.int64(7), "tune")) is int
    problems = {-1: "be non-negative", 2.5: "hold integers", True: "be a whole number >= 0", "3": "hold integers"}
    problems.update({np.bool_(False): "be a whole number >= 0", (1,): "be a whole number >= 0", math.inf: "hold"})
    problems.update({2.0**60: "hold integers of magnitude at most 2\\^53", None: "hold integers"})
    for bad, problem in problems.items():
        with pytest.raises(ValueError, match=f"tune must {problem}"):
            check(bad, "tune")


@pytest.mark.parametrize("open_interval, bounds", [(True, r"\(0, 1\)"), (False, r"\[0, 1\]")])
def test_probability_names_the_interval_it_requires_for_a_non_number(open_interval, bounds):
    for bad in ("a", None, True):
        with pytest.raises(ValueError, match=rf"p must be a number in {bounds}, got"):
            validation.probability(bad, "p", open_interval=open_interval)


@pytest.mark.parametrize(
    "check",
    [
        lambda v: validation.integer_valued(v, "y"),
        lambda v: validation.nonnegative_counts(v, "y"),
        lambda v: validation.probability_vector(v, "y"),
        lambda v: validation.unit_parameter(v, "y", validation.positive_int, "positive integer"),
        lambda v: validation.resolvable_release(v, Laplace(1.0).additive_noise, "y"),
    ],
    ids=["integer_valued", "nonnegative_counts", "probability_vector", "unit_parameter", "resolvable_release"],
)
def test_ragged_input_is_refused_naming_the_parameter(check):
    with pytest.raises(ValueError, match="y must be a rectangular array of numbers"):
        check([[1, 2], [3]])


def test_integer_valued_refuses_complex_and_probability_vector_text():
    with pytest.raises(ValueError, match="y must hold integers"):
        validation.integer_valued([1 + 2j], "y")
    with pytest.raises(ValueError, match="y must be a rectangular array of numbers"):
        validation.probability_vector(["a", "b"], "y")
