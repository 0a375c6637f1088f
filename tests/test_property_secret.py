"""The property-secret gallery model: rejection and importance sampling against the closed-form attacker posterior."""

import numpy as np
import pytest

import ppdinfer as pp
from ppdinfer.mechanisms.distribution import CorrelatedGaussian
from ppdinfer.models import property_secret

MEANS = [[0.0, 0.0], [1.0, 0.5], [2.0, -0.5]]
COVARIANCES = [[[1.0, 0.3], [0.3, 1.0]], [[1.2, 0.0], [0.0, 0.8]], [[1.0, -0.2], [-0.2, 1.5]]]
DIRECTION = np.array([1.0, 2.0]) / np.sqrt(5)


@pytest.mark.parametrize(
    "noise",
    [0.7, CorrelatedGaussian(2.0 * np.outer(DIRECTION, DIRECTION) + 0.1 * np.eye(2))],
    ids=["isotropic", "correlated"],
)
def test_samplers_match_the_closed_form_posterior(noise):
    model = property_secret.model(MEANS, COVARIANCES, noise, prior=[0.5, 0.3, 0.2])
    y = np.array([1.2, 0.1])
    exact = model.secret_posterior(y)
    rejection = pp.rejection_sample(model, y, draws=3000, random_seed=1, progressbar=False)
    draws = rejection["posterior"]["candidate"].values.reshape(-1)
    frequencies = np.bincount(draws.astype(int), minlength=3) / draws.size
    assert np.all(np.abs(frequencies - exact) < 4.5 * np.sqrt(exact * (1 - exact) / draws.size))
    importance = pp.importance_sample(model, y, draws=40_000, random_seed=2)
    proposal = importance["proposal"]
    weights = np.exp(proposal["log_weight"].values.reshape(-1))
    weights /= weights.sum()
    candidates = proposal["candidate"].values.reshape(-1)
    estimate = np.array([weights[candidates == k].sum() for k in range(3)])
    ess = 1 / np.sum(weights**2)
    assert np.all(np.abs(estimate - exact) < 4.5 * np.sqrt(exact * (1 - exact) / ess))


def test_a_release_off_the_noise_line_is_impossible_and_dropping_the_noise_is_detectable():
    noise = CorrelatedGaussian(2.0 * np.outer(DIRECTION, DIRECTION))
    model = property_secret.model(MEANS[:2], COVARIANCES[:2], noise)
    # The query's own spread makes every y possible; the noise only widens the law along v.
    with_noise = model.secret_posterior([1.5, 1.5])
    without = property_secret.model(MEANS[:2], COVARIANCES[:2], 0.0).secret_posterior([1.5, 1.5])
    assert np.isclose(with_noise.sum(), 1) and abs(with_noise[1] - without[1]) > 0.01


def test_bad_input():
    with pytest.raises(ValueError, match="covariances must have shape"):
        property_secret.model(MEANS, COVARIANCES[:2], 1.0)
    with pytest.raises(ValueError, match="positive definite"):
        property_secret.model(MEANS[:2], [[[1.0, 2.0], [2.0, 1.0]]] * 2, 1.0)
    with pytest.raises(ValueError, match="prior has 2 candidates"):
        property_secret.model(MEANS, COVARIANCES, 1.0, prior=[0.5, 0.5])
    with pytest.raises(ValueError, match="noise must be"):
        property_secret.model(MEANS, COVARIANCES, -1.0)
    with pytest.raises(NotImplementedError, match="discrete"):
        property_secret.model(MEANS, COVARIANCES, 1.0).to_pymc([0.0, 0.0])
