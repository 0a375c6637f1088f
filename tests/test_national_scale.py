"""The county model's sampler at national scale (issue 26): the release move, its adaptation, the same posterior.

- The release move alone (the kernel, no PyMC) leaves the exact posterior of a small problem
  invariant: its draws match enumeration for a collapsed multinomial x and a Poisson x.
- The default sampler (prior and release moves, frequencies adapted during tuning) gives the same
  posterior as the step's previous settings (prior and local moves on every pair) on the
  benchmark's synthetic 67-county problem: each posterior mean and standard deviation of the 67
  shares and 67 counts agrees within 3 Monte Carlo standard errors of the difference (the two runs'
  MCSEs combined), up to 1% of the 268 comparisons (a correct sampler exceeds 3 MCSE with
  probability 0.27% each) and none beyond 4; the same check fails when the sampler is given a wrong
  epsilon (0.7 instead of 1: the counts' posterior spread changes).
"""

from __future__ import annotations

import itertools
import sys
import warnings
from pathlib import Path

import arviz as az
import numpy as np
import pymc as pm
import pytest
from scipy.special import gammaln

import ppdinfer.pymc as ppm
from ppdinfer.kernels.augmentation import DIRICHLET_MULTINOMIAL, LOCAL, POISSON, PRIOR, RELEASE, augmentation_sweeps

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
from national_pymc import synthetic_problem  # the benchmark's problem, not a copy

pytestmark = pytest.mark.filterwarnings("ignore:Numba will use object mode")
RELEASE_ONLY = np.array([0.0, 1.0, 0.0])


def _release_chain(kind, x, y, params, rate, sweeps=40_000):
    """Draws of the release move alone (one sweep between draws), discrete Laplace noise of ``rate``; ``params``
    the packed prior parameters, one row per coordinate."""
    sd = np.sqrt(2 * np.exp(-rate)) / (1 - np.exp(-rate))
    scale = np.full(x.size, 2 * sd)
    draws = np.empty((sweeps, x.size))
    for sweep in range(sweeps):
        augmentation_sweeps(kind, x, y, params, rate, 1, False, scale, y, RELEASE_ONLY, 1, sweep)
        draws[sweep] = x
    return draws[1000:]


def _close(draws, exact, k=4.0):
    """Every coordinate's mean within k batch-means standard errors of the exact mean."""
    batches = draws.reshape(50, -1, draws.shape[1]).mean(axis=1)
    se = batches.std(axis=0, ddof=1) / np.sqrt(50)
    return np.all(np.abs(draws.mean(axis=0) - exact) <= k * se), draws.mean(axis=0), exact, se


@pytest.mark.parametrize(
    "rate, y", [(1.0, [2.0, 9.0, 0.0, 5.0]), (0.3, [-3.0, 7.0, 12.0, 4.0]), (0.05, [30.0, -20.0, 2.0, 5.0])]
)
def test_release_move_keeps_the_dirichlet_multinomial_posterior(rate, y):
    y, alpha, total = np.array(y), np.array([0.7, 2.0, 1.0, 3.0]), 12
    support = np.array(
        [s + (total - sum(s),) for s in itertools.product(range(total + 1), repeat=3) if sum(s) <= total]
    )
    log_post = (gammaln(support + alpha) - gammaln(support + 1)).sum(axis=1) - rate * np.abs(y - support).sum(axis=1)
    weights = np.exp(log_post - log_post.max())
    exact = weights @ support / weights.sum()
    draws = _release_chain(
        DIRICHLET_MULTINOMIAL, np.full(4, 3, dtype=np.int64), y, np.stack([np.full(4, total), alpha], axis=1), rate
    )
    assert (draws.sum(axis=1) == total).all()
    ok, *detail = _close(draws, exact)
    assert ok, detail


def test_release_move_keeps_the_poisson_posterior():
    y, mean, rate = np.array([4.0, -2.0, 15.5]), np.array([3.0, 1.5, 9.0]), 0.4
    support = np.arange(80)
    log_post = support[:, None] * np.log(mean) - gammaln(support + 1)[:, None] - rate * np.abs(y - support[:, None])
    pmf = np.exp(log_post - log_post.max(axis=0))
    exact = (support[:, None] * pmf).sum(axis=0) / pmf.sum(axis=0)
    draws = _release_chain(POISSON, np.array([4, 0, 12], dtype=np.int64), y, mean[:, None], rate)
    ok, *detail = _close(draws, exact)
    assert ok, detail


def _fit(model, y, z, seed, **options):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return ppm.sample(
            ppm.from_model(model, y, z),
            tune=500,
            cores=1,
            random_seed=seed,
            progressbar=False,
            compute_convergence_checks=False,
            **options,
        )


def _z_scores(reference, result):
    """|difference| / combined MCSE of the posterior mean and sd of every share and count."""
    scores = []
    for name in ("share", "cases"):
        for statistic, method in ((np.mean, "mean"), (np.std, "sd")):
            a, b = (statistic(run.posterior[name].values, axis=(0, 1)) for run in (reference, result))
            se = np.hypot(
                *(np.asarray(az.mcse(run, var_names=[name], method=method)[name]) for run in (reference, result))
            )
            scores.append(np.abs(a - b) / se)
    return np.concatenate(scores)


@pytest.fixture(scope="module")
def reference():
    """The previous settings (prior and local moves on every pair, 5 J pair moves an iteration), long."""
    model, y, z, _ = synthetic_problem(67, 2026)
    return _fit(model, y, z, 1, moves=("prior", "local"), sweeps=10, chains=4, draws=2500)


def test_default_sampler_matches_the_previous_settings_on_67_counties(reference):
    model, y, z, _ = synthetic_problem(67, 2026)
    result = _fit(model, y, z, 2, chains=2, draws=1000)
    scores = _z_scores(reference, result)
    assert np.mean(scores > 3) <= 0.01 and scores.max() <= 4, np.sort(scores)[-5:]
    frequency = result["sample_stats"]
    assert float(frequency["accept_release"].mean()) > 0.9 > 0.1 > float(frequency["accept_prior"].mean())
    assert 0 < float(frequency["accept_local"].mean()) < 0.9  # kept at a frequency set by its acceptance rate


def test_the_comparison_detects_a_wrong_epsilon(reference):
    _, y, z, _ = synthetic_problem(67, 2026)
    wrong = synthetic_problem(67, 2026, epsilon=0.7)[0]
    scores = _z_scores(reference, _fit(wrong, y, z, 2, chains=2, draws=1000))
    assert np.mean(scores > 3) > 0.2  # the counts' posterior sds


def test_frequencies_adapt_during_tuning_only():
    model, y, z, _ = synthetic_problem(67, 2026)
    with ppm.from_model(model, y, z) as twin:
        x = twin["cases"]
        step = ppm.PrivacyAugmentation([x], collapse=True)
        point = twin.initial_point()
        step.setup_chain(np.random.default_rng(1), tune=20, draws=5)
        for _ in range(20):
            point, _ = step.step(point)
        tuned = step.frequency.copy()
        accepted, tried = step.tuning_counts
        rates = accepted / np.maximum(tried, 1)
        # each move is made in proportion to its acceptance rate over the best one's (the release move's)
        assert tuned[RELEASE] == 1 and tuned[PRIOR] == pytest.approx(max(rates[PRIOR] / rates[RELEASE], 0.05))
        assert tuned[LOCAL] == pytest.approx(max(rates[LOCAL] / rates[RELEASE], 0.05))
        assert tuned[PRIOR] < 0.2 and tuned[LOCAL] < 1
        step.stop_tuning()
        for _ in range(5):
            point, _ = step.step(point)
        assert np.array_equal(step.frequency, tuned)  # fixed after tuning
        step.setup_chain(np.random.default_rng(2), tune=0, draws=5)
        assert np.array_equal(step.frequency, [1.0, 1.0, 1.0])  # a new chain starts again
        for moves in ("prior", (), ("prior", "gibbs")):
            with pytest.raises(ValueError, match="moves must be"):
                ppm.PrivacyAugmentation([x], moves=moves)


def test_the_release_move_needs_a_release_of_x_itself():
    with pm.Model() as model:
        rate = pm.Gamma("rate", 2.0, 1.0)
        x = pm.Poisson("x", rate, shape=2)
        ppm.DiscreteLaplace("y", mu=x.sum(), epsilon=1.0, observed=6)
        step = ppm.PrivacyAugmentation([x], moves=("release",))
        with pytest.raises(ValueError, match="release move needs"):
            step.step(model.initial_point())
