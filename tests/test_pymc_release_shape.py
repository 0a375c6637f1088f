"""A release whose shape is not x's (mechanism.release_shape) inside a hand-written PyMC model: the cells of
a NoisyMeasurements file (1 tract, 2 block groups x 2 cells: 2 block-group totals, the tract total and the 4
cells measured) against exact enumeration."""

import itertools
import warnings

import arviz as az
import numpy as np
import pymc as pm
import pytest
from scipy import stats

from ppdinfer.census import Geography, TableSpec, census_queries
from ppdinfer.mechanisms import Laplace, NoisyMeasurements
from ppdinfer.pymc import Release, sample

RATE, SUPPORT = 2.0, 15  # each cell Poisson(2), enumerated on 0..14 (the mass beyond: < 1e-9)


def tiny_file():
    geo = Geography(["t", "b0", "b1"], [None, "t", "t"])
    q = census_queries(geo, TableSpec(("a", "b")), {"level0": ["total"], "level1": ["total", "detailed"]})
    mech = NoisyMeasurements(q.matrix, 1.3)
    return mech, mech.release(np.array([1, 3, 2, 0]), random_seed=7)


def enumerated_means(mech, y):
    tables = np.array(list(itertools.product(range(SUPPORT), repeat=4)))
    logp = mech.logpdf(y, tables) + stats.poisson.logpmf(tables, RATE).sum(axis=1)
    w = np.exp(logp - logp.max())
    return (w / w.sum()) @ tables


def test_release_shape_defaults_to_x_and_noisy_measurements_gives_its_queries():
    mech, y = tiny_file()
    assert Laplace(1.0).release_shape((4,)) == (4,)
    assert mech.release_shape((4,)) == (7,) == y.shape
    with pytest.raises(ValueError, match="one count per cell"):
        mech.release_shape((7,))


def test_a_non_square_release_in_pymc_matches_enumeration():
    """ppdinfer.pymc.sample gives x its data-augmentation step (PrivacyAugmentation), which reads the
    release through mechanism.logpdf: the cells' posterior means within 4 MCSE of enumeration."""
    mech, y = tiny_file()
    with pm.Model() as model:
        x = pm.Poisson("x", RATE, shape=4)
        Release("y", mech, x, observed=y)
    logp = model.compile_logp()
    point = {"x": np.array([1, 3, 2, 0])}
    assert np.isclose(logp(point), mech.logpdf(y, point["x"])[0] + stats.poisson.logpmf(point["x"], RATE).sum())
    with model, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        prior = pm.sample_prior_predictive(draws=5, random_seed=1)
        idata = sample(draws=2000, tune=300, chains=2, random_seed=3, progressbar=False)
    assert prior.prior_predictive["y"].shape == (1, 5, 7)
    assert idata.posterior.attrs["ppdinfer_method"] == "augment"
    draws = idata.posterior["x"].values.astype(float)  # chain, draw, cell
    exact = enumerated_means(mech, y)
    for k in range(4):
        ess = float(az.ess(draws[..., k]))
        mcse = draws[..., k].std() / np.sqrt(ess)
        assert abs(draws[..., k].mean() - exact[k]) < 4 * mcse, (k, draws[..., k].mean(), exact[k], mcse)


def test_a_release_of_the_wrong_shape_is_refused():
    mech, y = tiny_file()
    with pm.Model():
        x = pm.DiscreteUniform("x", 0, 4, shape=4)
        with pytest.raises(ValueError, match=r"releases shape \(7,\)"):
            Release("y", mech, x, observed=y[:4])
        z = pm.DiscreteUniform("z", 0, 4, shape=5)
        with pytest.raises(ValueError, match="cannot release"):
            Release("w", mech, z, observed=y)
