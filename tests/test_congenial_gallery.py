"""The congenial-count gallery model: rejection, importance and exchange sampling against its exact posterior."""

import numpy as np
import pytest
from conftest import matches_exact, theta_mean_z_scores, x_chi_square_pvalue, x_draws

import ppdinfer as pp
from ppdinfer.models import congenial_counts

EPSILON, TOTAL, J = 0.5, 5, 3
Y = [4, 1, 0]  # near the boundary of S*, where c(x) varies most


def batch_means(values, batches=40):
    n = len(values) // batches * batches
    means = values[:n].reshape(batches, -1).mean(axis=1)
    return values.mean(), means.std(ddof=1) / np.sqrt(batches)


@pytest.fixture(scope="module")
def setup():
    model = congenial_counts.model(epsilon=EPSILON, total=TOTAL, n_categories=J)
    z = congenial_counts.public_information(total=TOTAL)
    exact = pp.exact_posterior(model, Y, z, draws=10, random_seed=0)
    return model, z, exact


def exact_x_mean(exact):
    support = exact["exact"]["x_support"].values.reshape(exact["exact"].sizes["support"], -1)
    return exact["exact"]["x_pmf"].values @ support


def test_release_satisfies_the_invariants(setup):
    model, _, _ = setup
    y = model.mechanism.release([2, 2, 1], random_seed=0, size=200)
    assert y.shape == (200, J) and np.all(y.sum(axis=1) == TOTAL) and np.all(y >= 0)
    assert np.all(model.invariants.contains(y))


def test_rejection_matches_exact(setup):
    model, z, exact = setup
    result = pp.rejection_sample(model, Y, z, draws=3000, random_seed=1, progressbar=False)
    assert result["posterior"]["counts"].dims == ("chain", "draw", "category")
    assert matches_exact(result, exact, "share")
    assert np.all(np.abs(theta_mean_z_scores(result, exact, "share", 3000)) < 4.5)
    assert x_chi_square_pvalue(x_draws(result), exact) > 1e-4


def test_importance_matches_exact(setup):
    model, z, exact = setup
    result = pp.importance_sample(model, Y, z, draws=20_000, random_seed=2)
    proposal = result["proposal"]
    w = np.exp(proposal["log_weight"].values.reshape(-1))
    w /= w.sum()
    ess = 1.0 / np.sum(w**2)
    assert ess > 1000
    x = proposal["counts"].values.reshape(len(w), -1)
    mean = w @ x
    sd = np.sqrt(w @ (x - exact_x_mean(exact)) ** 2)
    assert np.all(np.abs(mean - exact_x_mean(exact)) < 4.5 * sd / np.sqrt(ess))
    theta = proposal["share"].values.reshape(len(w), -1)
    theta_mean, theta_sd = exact["exact"]["theta_mean"].values, exact["exact"]["theta_sd"].values
    assert np.all(np.abs(w @ theta - theta_mean) < 4.5 * theta_sd / np.sqrt(ess))


def test_exchange_matches_exact(setup):
    model, z, exact = setup
    chain = pp.exchange_sample(model, Y, z, draws=8000, tune=500, random_seed=3, progressbar=False)
    x = chain["posterior"]["counts"].values[0]
    assert np.all(x.sum(axis=1) == TOTAL)
    exact_mean = exact_x_mean(exact)
    for j in range(J):
        mean, se = batch_means(x[:, j].astype(float))
        assert abs(mean - exact_mean[j]) < 4 * se, (j, mean, exact_mean[j], se)


def test_total_must_agree_and_y_conform(setup):
    model, z, _ = setup
    with pytest.raises(ValueError, match="total = 5"):
        pp.exact_posterior(model, Y, congenial_counts.public_information(total=6))
    with pytest.raises(ValueError, match="not a congenial release"):
        pp.exact_posterior(model, [6, 0, -1], z)


def test_pymc_twin_observes_the_congenial_release(setup):
    # c(x) has no symbolic form: the twin's release is the mechanism's own log density (the
    # hand-written twin is sampled against enumeration in tests/test_pymc_release.py)
    model, z, _ = setup
    twin = model.to_pymc(Y, z)
    release = twin.compile_fn(twin.logp(vars=[twin["release"]]), inputs=[twin.rvs_to_values[twin["counts"]]])
    x = np.array([1, 2, 2])
    assert release({"counts": x}) == pytest.approx(model.mechanism.logpdf(np.asarray(Y), x[None], z)[0])
