"""The generic checks every mechanism passes (ppdinfer.testing), run over the one list in
tests/mechanism_registry.py.

For each case: the pmf sums to one over its window for x and every row of x_batch (or the density
integrates to one along its line), releases of x follow ``logpdf``, ``log_bound`` dominates
``logpdf``, ``logpdf`` keeps the batch shape contract of ``Mechanism.logpdf``, a seed reproduces
the releases, ``noise_scale`` is positive and finite, a ``Release`` in a hand-written PyMC model
gives the enumerated posterior over x_batch, and for a scalar count the rejection sampler agrees
with enumeration (Beta(1, 1), Binomial(20)). Every concrete ``Mechanism`` subclass must have a
case. Mechanism-specific properties (papers' numbers, edge cases) stay in the per-family test files.
"""

import importlib
import pkgutil

import numpy as np
import pytest
from mechanism_registry import CASES
from release_checks import assert_rejection_matches_exact_posterior

import ppdinfer
from ppdinfer import testing
from ppdinfer.mechanisms import AdditiveNoise, AdditiveNoiseMechanism, DiscreteLaplace, Laplace, Mechanism

IDS = [case.name for case in CASES]
DISCRETE = [case for case in CASES if case.support is not None]
ON_A_LINE = [case for case in CASES if case.line is not None]
COUNTS = [case for case in CASES if case.shape == () and case.z is None]  # one count x: a Binomial model


# -- the list is complete ----------------------------------------------------------------------------


def concrete_mechanisms():
    """Every public Mechanism subclass of the package (all modules imported)."""
    for module in pkgutil.walk_packages(ppdinfer.__path__, "ppdinfer."):
        importlib.import_module(module.name)
    found, stack = set(), [Mechanism]
    while stack:
        for sub in stack.pop().__subclasses__():
            stack.append(sub)
            if not sub.__name__.startswith("_") and sub.__module__.startswith("ppdinfer."):
                found.add(sub)
    return found - {AdditiveNoiseMechanism}


def test_every_mechanism_class_has_a_case():
    covered = {type(case.mechanism) for case in CASES}
    missing = sorted(cls.__qualname__ for cls in concrete_mechanisms() - covered)
    assert not missing, f"add a Case to tests/mechanism_registry.py for {missing}"


# -- normalisation -----------------------------------------------------------------------------------


@pytest.mark.parametrize("case", DISCRETE, ids=[c.name for c in DISCRETE])
def test_pmf_sums_to_one_on_the_window(case):
    testing.check_pmf_sums_to_one(case)


@pytest.mark.parametrize("case", ON_A_LINE, ids=[c.name for c in ON_A_LINE])
def test_density_integrates_to_one_along_the_line(case):
    testing.check_density_integrates_to_one(case)


# -- releases follow logpdf --------------------------------------------------------------------------


@pytest.mark.parametrize("case", DISCRETE + ON_A_LINE, ids=[c.name for c in DISCRETE + ON_A_LINE])
def test_releases_follow_logpdf(case):
    testing.check_releases_follow_logpdf(case)


def test_the_release_checks_detect_a_wrong_law():
    discrete = next(case for case in DISCRETE if case.mechanism == DiscreteLaplace(0.7))
    with pytest.raises(AssertionError, match="do not follow"):
        testing.check_releases_follow_logpdf(discrete, DiscreteLaplace(0.8))
    line = next(case for case in ON_A_LINE if case.mechanism == Laplace(0.7, 2.0))
    with pytest.raises(AssertionError, match="do not follow"):
        testing.check_releases_follow_logpdf(line, Laplace(0.9, 2.0))  # a scale 22 % off


# -- samplers -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("case", COUNTS, ids=[c.name for c in COUNTS])
def test_rejection_matches_enumeration_for_a_count(case):
    y = case.mechanism.release(case.x, case.z, random_seed=3)
    assert_rejection_matches_exact_posterior(case.mechanism, y, n=20)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_release_in_a_pymc_model_matches_enumeration(case):
    testing.check_release_posterior(case)


def test_the_release_check_detects_a_wrong_declaration():
    case = next(case for case in DISCRETE if case.mechanism == DiscreteLaplace(0.7))
    wrong = testing.MechanismCase("misdeclared", _Misdeclared(0.7), case.x, case.x_batch, support=case.support)
    with pytest.raises(AssertionError, match="differs from enumeration"):
        testing.check_release_posterior(wrong)


class _Misdeclared(DiscreteLaplace):
    """DiscreteLaplace whose declared noise (which the PyMC layer compiles) has a rate 20 % off its logpdf's."""

    @property
    def additive_noise(self):
        return AdditiveNoise(self.log_norm, 1.2 * self.rate, self.power, True)


# -- the bound -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_log_bound_dominates_logpdf(case):
    testing.check_log_bound(case)


# -- the shape contract of logpdf ------------------------------------------------------------------------


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_logpdf_batch_shape_contract(case):
    testing.check_logpdf_batch_shape(case)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_releases_are_reproducible_from_the_seed(case):
    testing.check_seeded_releases(case)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_noise_scale_is_positive_and_finite(case):
    testing.check_noise_scale(case)


def _wrong_shape_params():
    lenient = "PostProcessedRelease reads any x as rows of its raw dimension (documented in Mechanism.logpdf)"
    return [
        pytest.param(
            case,
            id=case.name,
            marks=pytest.mark.xfail(strict=True, reason=lenient)
            if type(case.mechanism).__name__ == "PostProcessedRelease"
            else (),
        )
        for case in CASES
    ]


@pytest.mark.parametrize("case", _wrong_shape_params())
def test_logpdf_refuses_a_batch_of_another_shape(case):
    y = case.mechanism.release(case.x, case.z, random_seed=1)
    with pytest.raises(ValueError, match="x|y|shape"):
        case.mechanism.logpdf(y, np.stack([case.x_batch, case.x_batch], axis=-1), case.z)
