"""Issue 41, items 7, 8 and 21, and the census helpers' argument checks.

The mechanism contract checks (ppdinfer.testing) must catch a declared additive noise that is not
``logpdf``, a release that ignores x (releases drawn at several x, not only ``case.x``) and a density
whose normalizer is wrong away from ``case.x``; ``MechanismCase`` refuses a malformed case.
``epsilon_delta`` refuses the continuous-Gaussian conversion for a discrete release, and
``production_allocation``, ``production_sigmas`` and ``synthetic_state`` refuse bad arguments with a
ValueError naming them (``synthetic_state`` takes a dict of populations as the Series it means).
"""

import dataclasses
import math

import numpy as np
import pandas as pd
import pytest
from mechanism_registry import CASES
from scipy import stats

from ppdinfer.census import (
    Geography,
    TableSpec,
    census_queries,
    epsilon_delta,
    production_allocation,
    production_sigmas,
    synthetic_state,
)
from ppdinfer.mechanisms import (
    DiscreteGaussian,
    DiscreteLaplace,
    Gaussian,
    Guarantee,
    Laplace,
    NoisyMeasurements,
    Tulap,
)
from ppdinfer.testing import (
    MechanismCase,
    check_additive_noise,
    check_density_integrates_to_one,
    check_mechanism,
    check_releases_follow_logpdf,
    window,
)

# -- item 7: the declared additive noise is logpdf ----------------------------------------------------


class _WrongNorm(DiscreteLaplace):
    """DiscreteLaplace declaring a log_norm 0.4 too large (the summed-out window's size reads it)."""

    @property
    def additive_noise(self):
        noise = super().additive_noise
        return dataclasses.replace(noise, log_norm=noise.log_norm + 0.4)


class _WrongPower(Laplace):
    """Laplace declaring Gaussian-shaped noise (power 2)."""

    @property
    def additive_noise(self):
        return dataclasses.replace(super().additive_noise, power=2)


def _discrete_case(mechanism, name="dl"):
    return MechanismCase(name, mechanism, np.array(3), np.array([0, 3, 10]), support=window(3, 60), draws=2000)


def _line_case(mechanism, name="l"):
    return MechanismCase(
        name, mechanism, np.array(0.5), np.array([-2.5, 0.5, 7.5]), line=np.array(1.0), t_range=(-40.0, 40.0),
        kinks=(0.0,), draws=2000,
    )  # fmt: skip


def test_check_mechanism_refuses_a_wrong_declared_log_norm():
    with pytest.raises(AssertionError, match="additive_noise"):
        check_mechanism(_discrete_case(_WrongNorm(0.7)), pymc=False)


def test_check_additive_noise_refuses_a_wrong_power_and_passes_the_true_one():
    with pytest.raises(AssertionError, match="additive_noise"):
        check_additive_noise(_line_case(_WrongPower(1.0)))
    assert check_additive_noise(_line_case(Laplace(1.0))) < 1e-9
    assert check_additive_noise(MechanismCase("none", Tulap(1.0), np.array(0.0), np.array([0.0]))) is None


ADDITIVE = [case for case in CASES if case.mechanism.additive_noise is not None]


@pytest.mark.parametrize("case", ADDITIVE, ids=[case.name for case in ADDITIVE])
def test_declared_additive_noise_is_logpdf_for_the_registry(case):
    assert check_additive_noise(case) < 1e-9


# -- item 8: releases at several x --------------------------------------------------------------------


class _StuckDiscrete(DiscreteLaplace):
    """Releases noise around 3 whatever x is."""

    def release(self, x, z=None, random_seed=None, *, secure=False):
        return super().release(np.full(np.shape(x), 3), z, random_seed, secure=secure)


class _StuckLine(Laplace):
    """Releases noise around 0.5 whatever x is."""

    def release(self, x, z=None, random_seed=None, *, secure=False):
        return super().release(np.full(np.shape(x), 0.5), z, random_seed, secure=secure)


class _DriftingNormalizer(Laplace):
    """Laplace whose density at x integrates to exp(-0.05 (x - 0.5)^2): right at x = 0.5 only."""

    @property
    def additive_noise(self):  # its logpdf is no longer additive noise
        return None

    def logpdf(self, y, x, z=None):
        return super().logpdf(y, x, z) - 0.05 * (np.asarray(x, dtype=float).reshape(-1) - 0.5) ** 2


def test_check_mechanism_refuses_a_release_that_ignores_x():
    with pytest.raises(AssertionError, match="do not follow"):
        check_mechanism(_discrete_case(_StuckDiscrete(0.7)), pymc=False)
    with pytest.raises(AssertionError, match="do not follow"):
        check_mechanism(_line_case(_StuckLine(1.0)), pymc=False)


def test_check_mechanism_refuses_a_density_wrong_away_from_case_x():
    with pytest.raises(AssertionError, match="integrates to"):
        check_mechanism(_line_case(_DriftingNormalizer(1.0)), pymc=False)


def test_the_release_and_density_checks_pass_a_true_mechanism_at_every_x():
    case = _line_case(Laplace(1.0))
    # the integral of the Laplace density at each x, against its closed-form mass over the union range
    lo, hi = -40.0 - 3.0, 40.0 + 7.0
    exact = [stats.laplace.cdf(hi - s) - stats.laplace.cdf(lo - s) for s in (0.0, -3.0, 7.0)]
    np.testing.assert_allclose(check_density_integrates_to_one(case), exact, rtol=0, atol=1e-9)
    assert check_releases_follow_logpdf(case) > 1e-3


# -- MechanismCase refuses a malformed case ------------------------------------------------------------


@pytest.mark.parametrize(
    ("fields", "match"),
    [
        ({"x_batch": np.zeros((3, 2))}, "x_batch"),
        ({"draws": 0}, "draws"),
        ({"draws": 10.5}, "draws"),
        ({"line": np.array(1.0)}, "t_range"),
        ({"line": np.array(0.0), "t_range": (-1.0, 1.0)}, "line"),
        ({"line": np.array([1.0, 0.0]), "t_range": (-1.0, 1.0)}, "line"),
        ({"line": np.array(1.0), "t_range": (1.0, -1.0)}, "t_range"),
        ({"support": np.zeros((4, 2))}, "support"),
        ({"kinks": (np.nan,)}, "kinks"),
    ],
)
def test_mechanism_case_refuses_a_malformed_case(fields, match):
    base = {"name": "dl", "mechanism": DiscreteLaplace(1.0), "x": np.array(3), "x_batch": np.array([0, 3])}
    with pytest.raises(ValueError, match=match):
        MechanismCase(**{**base, **fields})


def test_mechanism_case_refuses_a_non_mechanism():
    with pytest.raises(TypeError, match="mechanism"):
        MechanismCase("no", lambda y, x: 0.0, np.array(3), np.array([3]))


# -- item 21: the continuous-Gaussian conversion is refused for a discrete release ----------------------


@pytest.mark.parametrize(
    "mechanism", [NoisyMeasurements(np.eye(2, dtype=int), 1.0), DiscreteGaussian(1.0)], ids=["nmf", "dg"]
)
def test_epsilon_delta_refuses_the_gaussian_bound_for_discrete_noise(mechanism):
    with pytest.raises(ValueError, match="bound='gaussian'.*continuous Gaussian"):
        epsilon_delta(mechanism, 1e-6, bound="gaussian")
    assert epsilon_delta(mechanism, 1e-6, bound="optimal")[0] > 0


def test_epsilon_delta_keeps_the_exact_conversion_for_continuous_gaussian_noise():
    # Gaussian(sigma) on sensitivity 1 is mu-GDP with mu = 1 / sigma; its exact delta(eps) (Balle & Wang 2018)
    # at the returned eps must be delta
    sigma, delta = 2.0, 1e-6
    eps, _ = epsilon_delta(Gaussian(sigma), delta, bound="gaussian")
    mu = 1 / sigma
    exact_delta = stats.norm.cdf(-eps / mu + mu / 2) - math.exp(eps) * stats.norm.cdf(-eps / mu - mu / 2)
    assert exact_delta == pytest.approx(delta, rel=1e-6)


def test_epsilon_delta_refuses_a_zcdp_guarantee_without_rho_and_bad_arguments():
    stated = Gaussian(1.0).with_guarantee(Guarantee("zcdp", note="no rho"))
    with pytest.raises(ValueError, match="rho"):
        epsilon_delta(stated, 1e-6)
    with pytest.raises(ValueError, match="mechanism"):
        epsilon_delta(object(), 1e-6)
    with pytest.raises(ValueError, match="bound"):
        epsilon_delta(Gaussian(1.0), 1e-6, bound="exact")


# -- production_allocation and production_sigmas --------------------------------------------------------


@pytest.mark.parametrize("rho", [math.nan, 0, -1, math.inf, "2.56", True])
def test_production_allocation_refuses_a_bad_rho(rho):
    with pytest.raises(ValueError, match="rho"):
        production_allocation(rho=rho)


@pytest.mark.parametrize("levels", ["State", (), ("State", "State"), ("Nation",), (3,)])
def test_production_allocation_refuses_bad_levels(levels):
    with pytest.raises(ValueError, match="levels"):
        production_allocation(levels)


def _census():
    geo = Geography(["s", "c"], [None, "s"], ["State", "County"])
    return census_queries(geo, TableSpec.hispanic_race(), {"State": ["total"], "County": ["total"]})


def test_production_sigmas_checks_its_arguments():
    census = _census()
    # a NumPy float rho is a number like any other
    np.testing.assert_allclose(production_sigmas(census, rho=np.float32(2.0)), production_sigmas(census, rho=2.0))
    with pytest.raises(ValueError, match="rho"):
        production_sigmas(census, rho=math.nan)
    with pytest.raises(ValueError, match="levels"):
        production_sigmas(census, levels=["State", "County"])
    with pytest.raises(TypeError, match="census"):
        production_sigmas(census.geography)


# -- synthetic_state ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("populations", "match"),
    [
        (pd.Series({"A": 5000.0, "B": math.nan}), "populations.*nan"),
        (pd.Series({"A": 1000.7}), "populations.*1000.7"),
        (pd.Series({"A": 5000, "B": 0}), "populations"),
        (pd.Series(["many"], index=["A"]), "populations"),
        (pd.Series([5000, 3000], index=["A", "A"]), "populations.*'A'.*twice"),
        ({"A": 5000, "B": -3}, "populations"),
        (68, "populations.*67"),
        (5.5, "populations"),
        (True, "populations"),
        ("Fulton", "populations.*one string"),
        (["Fulton", "Fulton"], "populations.*'Fulton'.*twice"),
        ([], "populations"),
        (["Atlantis"], "populations.*Atlantis"),
        ([3, 4], "populations"),
        ({"A": 10**12}, "populations.*more than 2,000,000"),
    ],
)
def test_synthetic_state_refuses_bad_populations(populations, match):
    with pytest.raises(ValueError, match=match):
        synthetic_state(populations, random_seed=0)


def test_synthetic_state_takes_a_dict_of_populations_as_a_series():
    populations = {"A": 5000, "B": 3000}
    geo, cells = synthetic_state(populations, random_seed=4)
    same_geo, same_cells = synthetic_state(pd.Series(populations), random_seed=4)
    assert geo.ids.tolist() == same_geo.ids.tolist() and np.array_equal(cells, same_cells)
    # each county holds exactly its population: the dict's values are read, not its keys alone
    for county, people in populations.items():
        unit = geo.index(county)
        assert cells[geo.leaf_start[unit] : geo.leaf_stop[unit]].sum() == people


@pytest.mark.parametrize(
    ("fields", "match"),
    [({"tract_people": 0}, "tract_people"), ({"block_group_people": 12.5}, "block_group_people"),
     ({"concentrations": (1.0, 2.0)}, "concentrations"), ({"random_seed": -1}, "random_seed"),
     ({"tract_people": 1, "block_group_people": 1, "populations": {"A": 13_000_000}}, "tract_people")],
)  # fmt: skip
def test_synthetic_state_refuses_bad_settings(fields, match):
    with pytest.raises(ValueError, match=match):
        synthetic_state(**{"populations": {"A": 5000}, "random_seed": 0, **fields})
