"""ppdinfer.pymc.from_model / sample_model: a PyMC sampler for any PPDModel, checked against enumeration.

Each case compares the posterior means of theta and x from sample_model with the exact ones
of pp.exact_posterior (its ``exact`` group, not its random draws), within 4 Monte Carlo
standard errors (ArviZ's mcse, from the bulk ESS). Draws are few to keep the file fast.
"""

from __future__ import annotations

import warnings

import arviz as az
import numpy as np
import pytest

import ppdinfer as pp
from ppdinfer.pymc import MechanismLogLikelihood, PrivacyAugmentation, from_model, sample_model

M = pp.mechanisms
pytestmark = pytest.mark.filterwarnings("ignore:Numba will use object mode")
SAMPLE = dict(tune=300, chains=2, cores=1, random_seed=7, progressbar=False, compute_convergence_checks=False)


def binomial_model(mechanism):
    return pp.PPDModel(pp.priors.Beta(2, 3), pp.generators.Binomial(30), mechanism, names="p")


def multinomial_model(mechanism):
    return pp.PPDModel(
        pp.priors.Dirichlet([1.0, 2.0, 1.0]),
        pp.generators.MultinomialTotal("total"),
        mechanism,
        names="share",
        x_name="cases",
    )


def exact_means(model, y, z):
    exact = pp.exact_posterior(model, y, z)["exact"]
    support = np.asarray(exact["x_support"].values).reshape(exact["x_pmf"].size, -1)
    return exact["theta_mean"].values, exact["x_pmf"].values @ support


def assert_matches_enumeration(model, y, z=None, draws=1500):
    theta_mean, x_mean = exact_means(model, y, z)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        idata = sample_model(model, y, z, draws=draws, **SAMPLE)
    for name, exact in ((model.names[0], theta_mean), (model.x_name, x_mean)):
        mean = idata["posterior"][name].mean(("chain", "draw")).values.ravel()
        se = np.asarray(az.mcse(idata, var_names=[name])[name]).ravel()
        assert np.all(np.abs(mean - exact) <= 4 * se), (name, mean, exact, se)
    return idata


def test_continuous_laplace_on_a_binomial_count_matches_enumeration():
    # the case: continuous Laplace noise on an integer count, where PyMC's generic
    # Metropolis on x has no guarantee; the mechanism-driven augmentation agrees with enumeration
    idata = assert_matches_enumeration(binomial_model(M.Laplace(0.5)), 13.3)
    assert idata["posterior"]["x"].dtype.kind == "i"


@pytest.mark.parametrize(
    "mechanism, y",
    [
        (M.Gaussian(sigma=2.0), 13.3),
        (M.DiscreteGaussian(sigma=2.0), 13),
        (M.Tulap(0.5), 13.3),  # not additive: the generic (Python) moves
    ],
    ids=["Gaussian", "DiscreteGaussian", "Tulap"],
)
def test_binomial_count_matches_enumeration(mechanism, y):
    assert_matches_enumeration(binomial_model(mechanism), y, draws=1000)


@pytest.mark.parametrize(
    "mechanism, y",
    [
        (M.DiscreteLaplace(0.5), [12, 9, 5]),  # compiled kernel, theta integrated out then drawn exactly
        (M.Tulap(0.5), [12.2, 9.5, 5.1]),  # generic pair moves
    ],
    ids=["DiscreteLaplace", "Tulap"],
)
def test_multinomial_cells_match_enumeration_and_keep_the_total(mechanism, y):
    idata = assert_matches_enumeration(multinomial_model(mechanism), y, {"total": 25}, draws=1000)
    assert bool((idata["posterior"]["cases"].sum(axis=-1) == 25).all())


def test_release_is_the_mechanism_logpdf():
    mechanism = M.Tulap(0.7)
    twin = from_model(multinomial_model(mechanism), [3.2, 1.1, 0.4], {"total": 5})
    release = twin.compile_fn(twin.logp(vars=[twin["release"]]), inputs=[twin.rvs_to_values[twin["cases"]]])
    x = np.array([2, 2, 1])
    expected = mechanism.logpdf(np.array([3.2, 1.1, 0.4]), x[None])[0]
    assert release({"cases": x}) == pytest.approx(expected)


def test_poisson_count_starts_at_the_release_and_gets_the_augmentation_step():
    model = pp.PPDModel(
        pp.priors.Gamma(2.0, 0.1), pp.generators.Poisson([1.0, 2.0]), M.Laplace(1.0), names="rate", x_name="counts"
    )
    twin = from_model(model, [4.6, -1.2])
    assert twin.initial_point()["counts"].tolist() == [5, 0]
    with twin:
        step = PrivacyAugmentation([twin["counts"]])
    assert step.compiled and step._likelihood.rate == 1.0


def test_named_components_of_theta_match_enumeration():
    model = pp.PPDModel(
        pp.priors.Dirichlet([1.0, 2.0, 1.0]),
        pp.generators.MultinomialTotal("total"),
        M.DiscreteLaplace(0.5),
        names=["north", "centre", "south"],
        x_name="cases",
    )
    theta_mean, _ = exact_means(model, [12, 9, 5], {"total": 25})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        idata = sample_model(model, [12, 9, 5], {"total": 25}, draws=1000, **SAMPLE)
    for name, exact in zip(model.names, theta_mean, strict=True):  # reported under their names, like the exact samplers
        draws = idata["posterior"][name]
        assert draws.dims == ("chain", "draw")
        assert abs(float(draws.mean()) - exact) <= 4 * float(az.mcse(idata, var_names=[name])[name])
    np.testing.assert_allclose(idata["posterior"]["theta"].values[..., 0], idata["posterior"]["north"].values)
    clash = pp.PPDModel(model.prior, model.simulate, model.mechanism, names=["theta", "theta_vector", "c"])
    with pytest.raises(ValueError, match="rename one"):
        from_model(clash, [12, 9, 5], {"total": 25})


def test_unsupported_parts_raise_clear_errors():
    mechanism = M.Laplace(1.0)
    categorical = pp.PPDModel(pp.priors.Categorical([0.5, 0.5]), pp.generators.Binomial(3), mechanism)
    with pytest.raises(ValueError, match="priors Beta, Gamma and Dirichlet, not Categorical"):
        from_model(categorical, 1.0)

    def my_counts(theta, z, rng):
        return rng.binomial(5, theta)

    custom = pp.PPDModel(pp.priors.Beta(1, 1), my_counts, mechanism)
    with pytest.raises(ValueError, match="data models Binomial, Poisson and MultinomialTotal, not my_counts"):
        from_model(custom, 1.0)
    with pytest.raises(ValueError, match="must be a ppdinfer.PPDModel"):
        from_model("model", 1.0)
    with from_model(binomial_model(mechanism), 3.0) as twin:  # p ~ Beta integrates out of x's update
        assert PrivacyAugmentation([twin["x"]], collapse=True).family.name == "beta_binomial"


def test_op_is_the_mechanism_logpdf():
    op = MechanismLogLikelihood(M.DiscreteLaplace(1.0))
    assert (
        op.loglik(np.array([2, 3]), np.array([[2, 3], [3, 3]])).round(4).tolist()
        == M.DiscreteLaplace(1.0).logpdf([2, 3], [[2, 3], [3, 3]]).round(4).tolist()
    )
