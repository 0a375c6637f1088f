"""Releases written in plain PyMC, and plain pm.sample on a ppdinfer release (issue 32, items 1-2).

- ``pm.Normal("y", mu=x, sigma=s)`` / ``pm.Laplace("y", mu=x, b=b)`` on an integer latent x with one
  constant scale get the compiled step that ``Release`` gets (the same rate, power and noise size; the
  compiled sweeps run, the Python-likelihood ones never), and the same posterior as the ``Release``
  version (means within 4 Monte Carlo standard errors of their difference, seed fixed); where the plain
  release misses the kernel (a scale varying by coordinate, mu not x itself) an AugmentationWarning says
  why and what to write.
- Plain ``pm.sample`` on a model whose integer latent feeds a ``Release`` warns, naming
  ``ppdinfer.pymc.sample``; ``ppdinfer.pymc.sample`` does not.
"""

from __future__ import annotations

import warnings

import arviz as az
import numpy as np
import pymc as pm
import pytest

import ppdinfer.pymc as ppm
import ppdinfer.pymc.augmentation as augmentation
from ppdinfer import mechanisms
from ppdinfer.pymc.sampling import assign_steps

pytestmark = pytest.mark.filterwarnings("ignore:Numba will use object mode")
EXPOSURE, Y = np.array([2.0, 5.0, 9.0]), np.array([7.4, 11.2, 30.1])
SAMPLE = dict(tune=300, chains=2, cores=1, progressbar=False, compute_convergence_checks=False)


def counts_model(release: str, scale=3.0, centre=lambda x: x) -> pm.Model:
    """rate_k ~ Gamma(2, 1), x_k ~ Poisson(e_k rate_k), y released by ``release`` with ``scale``."""
    with pm.Model() as model:
        rate = pm.Gamma("rate", 2.0, 1.0, shape=3)
        x = pm.Poisson("x", rate * EXPOSURE, initval=np.round(Y).astype(int))
        if release == "normal":
            pm.Normal("y", mu=centre(x), sigma=scale, observed=Y)
        elif release == "laplace":
            pm.Laplace("y", mu=centre(x), b=scale, observed=Y)
        elif release == "gaussian_release":
            ppm.Release("y", mechanisms.Gaussian(scale), x, observed=Y)
        else:
            ppm.Release("y", mechanisms.Laplace(1 / scale), x, observed=Y)
    return model


PAIRS = {"normal": "gaussian_release", "laplace": "laplace_release"}


@pytest.mark.parametrize("plain", PAIRS)
def test_a_plain_release_of_x_gets_the_compiled_step_of_release(plain):
    with warnings.catch_warnings():
        warnings.simplefilter("error", ppm.AugmentationWarning)  # nothing to warn about here
        step = assign_steps(counts_model(plain))[0]
    reference = assign_steps(counts_model(PAIRS[plain]))[0]
    assert step.compiled and reference.compiled
    mine, theirs = step._likelihood, reference._likelihood
    assert (mine.rate, mine.power, mine.norm) == pytest.approx((theirs.rate, theirs.power, theirs.norm), rel=1e-12)
    assert mine.noise_sd == pytest.approx(theirs.noise_sd, rel=1e-12)
    assert step.family.name == "gamma_poisson"


def test_the_compiled_sweeps_run_for_a_plain_normal_release(monkeypatch):
    calls = []
    compiled = augmentation.augmentation_sweeps

    def counted(*args):
        calls.append(1)
        return compiled(*args)

    def refused(*args):
        raise AssertionError("the Python-likelihood sweeps ran")

    monkeypatch.setattr(augmentation, "augmentation_sweeps", counted)
    monkeypatch.setattr(augmentation, "generic_sweeps", refused)
    with counts_model("normal"):
        ppm.sample(
            draws=20,
            tune=10,
            chains=1,
            cores=1,
            random_seed=1,
            progressbar=False,
            compute_convergence_checks=False,
            method="augment",
        )
    assert len(calls) == 30  # one call per step (the three counts in one block)


@pytest.mark.parametrize("plain", PAIRS)
def test_a_plain_release_gives_the_posterior_of_release(plain):
    fits = []
    for name in (plain, PAIRS[plain]):
        with counts_model(name), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fits.append(ppm.sample(draws=1000, random_seed=5, **SAMPLE))
    for variable in ("x", "rate"):
        means = [fit["posterior"][variable].mean(("chain", "draw")).values for fit in fits]
        ses = [np.asarray(az.mcse(fit, var_names=[variable])[variable]) for fit in fits]
        assert np.all(np.abs(means[0] - means[1]) <= 4 * np.hypot(*ses)), (variable, means, ses)


@pytest.mark.parametrize(
    "scale, centre, reason",
    [
        (np.array([1.0, 2.0, 3.0]), lambda x: x, "its sigma varies by coordinate"),
        (3.0, lambda x: x + 1, "its mu is not x itself"),
    ],
    ids=["sigma_by_coordinate", "mu_not_x"],
)
def test_a_plain_release_the_kernel_cannot_take_is_named(scale, centre, reason):
    model = counts_model("normal", scale=scale, centre=centre)
    with pytest.warns(ppm.AugmentationWarning, match=reason) as caught:
        step = assign_steps(model)[0]
    assert not step.compiled
    assert "ppdinfer.pymc.Release('y', ppdinfer.mechanisms.Gaussian(sigma), x, observed=y)" in str(caught[0].message)


# -- plain pm.sample on a ppdinfer release ------------------------------------------------------------------


def _plain_sample_warnings(run) -> list[str]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run()
    return [str(w.message) for w in caught if issubclass(w.category, ppm.AugmentationWarning)]


def test_plain_pm_sample_on_a_release_warns_naming_ppdinfer_sample():
    model = counts_model("gaussian_release")
    quick = dict(draws=5, tune=5, chains=1, cores=1, random_seed=2, progressbar=False, compute_convergence_checks=False)

    def inside():
        with model:
            pm.sample(**quick)

    for run in (inside, lambda: pm.sample(model=model, **quick)):  # with and without the model's context
        found = _plain_sample_warnings(run)
        assert len(found) == 1 and "ppdinfer.pymc.sample" in found[0] and found[0].startswith("x is an integer")

    def ours():
        with model:
            ppm.sample(**quick)

    assert _plain_sample_warnings(ours) == []
    # a latent of no release, or a continuous one, is left alone
    with pm.Model() as other:
        pm.Poisson("n", 3.0)
        mu = pm.Normal("mu", 0.0, 1.0)
        ppm.Release("y", mechanisms.Gaussian(1.0), mu, observed=0.3)
    assert _plain_sample_warnings(lambda: pm.sample(model=other, **quick)) == []
