"""The prior families of the data-augmentation step (ppdinfer.pymc.families): one record each.

- ``sample`` assigns every family's steps: a tiny model per family (the table of models must
  cover FAMILIES, so a new family without one fails), whose PrivacyAugmentation is of that family and
  whose conjugate variable, where the family has one, gets the family's conjugate step.
- The Beta-Binomial collapse (p ~ Beta(a, b), x ~ Binomial(n, p), p read by nothing else) against
  exact enumeration over x's support: x's marginal pmfs and p's posterior mean and second moment
  (a mixture of Beta(a + x, b + n - x)) within 4 Monte Carlo standard errors (ArviZ's mcse), seed fixed.
- The family records agree with the kernel's columns; bad input names its parameter.
"""

from __future__ import annotations

import warnings

import arviz as az
import numpy as np
import pymc as pm
import pytest
import xarray as xr
from scipy import stats

import ppdinfer.pymc as ppm
from ppdinfer import mechanisms
from ppdinfer.kernels.augmentation import COLUMNS
from ppdinfer.pymc.families import FAMILIES, ConjugateStep, PriorFamily, family_named, latent_family
from ppdinfer.pymc.sampling import assign_steps

pytestmark = pytest.mark.filterwarnings("ignore:Numba will use object mode")


def _poisson():
    x = pm.Poisson("x", 4.0, shape=2)
    ppm.Release("y", mechanisms.DiscreteLaplace(1.0), x, observed=[3, 6])
    return None


def _binomial():
    x = pm.Binomial("x", n=10, p=0.3, shape=2)
    ppm.Release("y", mechanisms.DiscreteLaplace(1.0), x, observed=[3, 6])
    return None


def _multinomial():
    x = pm.Multinomial("x", n=10, p=[0.2, 0.3, 0.5], initval=np.array([3, 3, 4]))
    ppm.DiscreteLaplace("y", mu=x, epsilon=1.0, observed=[2, 3, 5])
    return None


def _dirichlet_multinomial():
    share = pm.Dirichlet("share", a=np.ones(3))
    x = pm.Multinomial("x", n=10, p=share, initval=np.array([3, 3, 4]))
    ppm.DiscreteLaplace("y", mu=x, epsilon=1.0, observed=[2, 3, 5])
    return share


def _gamma_poisson():
    rate = pm.Gamma("rate", 2.0, 1.0, shape=2)
    x = pm.Poisson("x", rate * np.array([3.0, 5.0]))
    ppm.Release("y", mechanisms.Gaussian(2.0), x, observed=[4.1, 9.7])
    return rate


def _beta_binomial():
    p = pm.Beta("p", 2.0, 3.0, shape=2)
    x = pm.Binomial("x", n=[10, 20], p=p)
    ppm.Release("y", mechanisms.DiscreteLaplace(1.0), x, observed=[3, 9])
    return p


def _discrete_uniform():
    x = pm.DiscreteUniform("x", 0, 40, shape=2)
    ppm.Release("y", mechanisms.Gaussian(2.0), x, observed=[4.1, 9.7])
    return None


def _tabulated():
    x = pm.Truncated("x", pm.Poisson.dist(6.0), lower=2, upper=30, shape=2)
    ppm.Release("y", mechanisms.Gaussian(2.0), x, observed=[4.1, 9.7])
    return None


#: a tiny model of each family (its builder returns the conjugate variable, or None)
TINY = {
    "poisson": _poisson,
    "binomial": _binomial,
    "multinomial": _multinomial,
    "dirichlet_multinomial": _dirichlet_multinomial,
    "gamma_poisson": _gamma_poisson,
    "beta_binomial": _beta_binomial,
    "discrete_uniform": _discrete_uniform,
    "tabulated": _tabulated,
}


def test_every_family_has_a_tiny_model():
    assert set(TINY) == {family.name for family in FAMILIES}, "add a tiny model of the new family to TINY"


@pytest.mark.parametrize("family", FAMILIES, ids=[family.name for family in FAMILIES])
def test_sample_assigns_every_family_its_steps(family, monkeypatch):
    assigned = []

    def fake_sample(step=None, **kwargs):  # what ppdinfer.pymc.sample hands pm.sample
        assigned.extend(step)
        return None

    with pm.Model() as model:
        conjugate = TINY[family.name]()
    monkeypatch.setattr(pm, "sample", fake_sample)
    with model:
        ppm.sample(draws=10, tune=0, chains=1, method="augment")  # the steps: auto would sum x out
    augmentation = [step for step in assigned if isinstance(step, ppm.PrivacyAugmentation)]
    assert len(augmentation) == 1 and augmentation[0].vars[0].name == "x"
    assert augmentation[0].family is family and augmentation[0].kind == family.code
    conjugate_steps = [step for step in assigned if isinstance(step, ConjugateStep)]
    if family.step is None:
        assert conjugate is None and conjugate_steps == []
    else:
        assert [type(step) for step in conjugate_steps] == [family.step]
        assert conjugate_steps[0].vars[0] is model.rvs_to_values[conjugate]
    # conjugate=False: the plain family of the same latent, no conjugate step
    with model:
        plain = assign_steps(model, conjugate=False)
    assert not plain[0].family.collapsed and plain[0].family.latent is family.latent
    assert not any(isinstance(step, ConjugateStep) for step in plain)


def test_family_records_agree_with_the_kernel():
    for family in FAMILIES:
        assert family.columns == COLUMNS[family.code]
        assert family.pairs == (getattr(family.latent, "__name__", "") == "MultinomialRV")
    assert len({family.code for family in FAMILIES}) == len(FAMILIES)
    poisson = family_named("poisson")
    with pytest.raises(ValueError, match="columns .* are not the kernel's"):
        PriorFamily("wrong", poisson.code, poisson.latent, ("rate",), poisson.detect, poisson.pack)
    with pytest.raises(ValueError, match="name must be one of"):
        family_named("negative_binomial")


def test_a_packed_beta_binomial_has_named_columns():
    family = family_named("beta_binomial")
    params, prior_sd = family.packed([np.array([10.0, 20.0]), np.array(2.0), np.array([3.0, 1.0])], {}, (2,))
    assert params.shape == (2, 3)
    assert params[:, family.columns.index("trials")].tolist() == [10.0, 20.0]
    assert params[:, family.columns.index("b")].tolist() == [3.0, 1.0]
    assert np.allclose(prior_sd, [stats.betabinom(10, 2, 3).std(), stats.betabinom(20, 2, 1).std()])


def test_shared_or_non_beta_probabilities_do_not_collapse():
    with pm.Model() as model:
        shared = pm.Beta("shared", 1.0, 1.0)
        w = pm.Binomial("w", n=[10, 20], p=shared)  # one p for two coordinates
        q = pm.Uniform("q", 0.0, 1.0)
        v = pm.Binomial("v", n=5, p=q)
        ppm.DiscreteLaplace("y", mu=w, epsilon=1.0, observed=[3, 9])
        ppm.DiscreteLaplace("u", mu=v, epsilon=1.0, observed=2)
    assert latent_family(model, w, collapse=True).family.name == "binomial"
    assert latent_family(model, v, collapse=True).family.name == "binomial"
    with model, pytest.raises(ValueError, match="collapse=True needs w's prior parameter to be the Beta"):
        ppm.PrivacyAugmentation([w], collapse=True)
    with model, pytest.raises(ValueError, match="shared must be the Beta probability of exactly one Binomial"):
        ppm.ConjugateBeta([shared])
    with model, pytest.raises(ValueError, match="ConjugateBeta updates one Beta variable, got 2"):
        ppm.ConjugateBeta([shared, q])


# -- the Beta-Binomial collapse against enumeration ---------------------------------------------------


def test_beta_binomial_collapse_matches_enumeration():
    n, a, b = np.array([8, 15, 25]), np.array([2.0, 0.7, 5.0]), np.array([3.0, 1.2, 2.0])
    y, epsilon = np.array([3, 11, 27]), 0.5
    mechanism = mechanisms.DiscreteLaplace(epsilon)
    with pm.Model() as model:
        p = pm.Beta("p", alpha=a, beta=b)
        x = pm.Binomial("x", n=n, p=p, initval=np.minimum(y, n))
        ppm.Release("y", mechanism, x, observed=y)
    steps = assign_steps(model)
    assert [type(step).__name__ for step in steps] == ["PrivacyAugmentation", "ConjugateBeta"]
    assert steps[0].family.name == "beta_binomial" and steps[0].compiled
    with model, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        idata = ppm.sample(
            draws=2000, tune=500, chains=2, cores=1, random_seed=21, progressbar=False, compute_convergence_checks=False
        )
    posterior = idata["posterior"]

    def within(draws: xr.DataArray, exact: float, what: str, k: float = 4.0):
        se = float(az.mcse(draws.to_dataset(name="v"))["v"])
        assert abs(float(draws.mean()) - exact) <= k * se, (what, float(draws.mean()), exact, se)

    for k in range(3):
        support = np.arange(n[k] + 1)
        log_w = stats.betabinom.logpmf(support, n[k], a[k], b[k]) + mechanism.logpdf(y[k : k + 1], support[:, None])
        pmf = np.exp(log_w - log_w.max())
        pmf /= pmf.sum()
        xk, pk = posterior["x"].isel(x_dim_0=k), posterior["p"].isel(p_dim_0=k)
        within(xk, pmf @ support, f"E x_{k}")
        for value in support[pmf > 0.02]:  # the marginal pmf where it has mass
            within((xk == value).astype(float), pmf[value], f"P(x_{k} = {value})")
        # p | y is the mixture over x of Beta(a + x, b + n - x)
        total = a[k] + b[k] + n[k]
        within(pk, pmf @ ((a[k] + support) / total), f"E p_{k}")
        second = pmf @ ((a[k] + support) * (a[k] + support + 1) / (total * (total + 1)))
        within(pk**2, second, f"E p_{k}^2")
