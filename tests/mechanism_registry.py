"""Every release mechanism the package has, as a small instance with the values it takes.

``CASES`` is the one list the generic mechanism checks of :mod:`ppdinfer.testing` run over
(tests/test_mechanism_contract.py): the pmf sums to one on a finite window (or the density
integrates to one along a line), releases follow ``logpdf``, ``log_bound`` dominates ``logpdf``,
``logpdf`` keeps its batch shape contract, seeds reproduce releases, ``noise_scale`` is positive,
and a ``Release`` in a hand-written PyMC model gives the enumerated posterior over ``x_batch``. A
new mechanism gets a ``Case`` (a :class:`ppdinfer.testing.MechanismCase`) here; the contract test
fails for a concrete ``Mechanism`` subclass that has none. The fields are documented there; a
case with neither a support nor a line has its normalisation and releases left unchecked (a
density on two or more dimensions).
"""

from __future__ import annotations

import numpy as np

from ppdinfer.geometry import SensitivitySpace
from ppdinfer.interop import _clipped_at_zero, from_noise
from ppdinfer.invariants import LinearInvariants
from ppdinfer.mechanisms import (
    CanonicalNoise,
    Congenial,
    DiscreteGaussian,
    DiscreteLaplace,
    Gaussian,
    KNormGradient,
    KNormMechanism,
    Laplace,
    NoisyMeasurements,
    NormBallMechanism,
    PostProcessedRelease,
    SemiDPGaussian,
    Tulap,
    WassersteinExponential,
)
from ppdinfer.mechanisms.distribution import CorrelatedGaussian
from ppdinfer.mechanisms.wem import CongenialBase
from ppdinfer.privacy import gaussian_tradeoff
from ppdinfer.projection import L1ConvexCombination
from ppdinfer.testing import MechanismCase as Case
from ppdinfer.testing import window


def _scalar_additive(name, mechanism, x, half_width, draws=2000):
    """A scalar additive-noise case: a window for a discrete one, the real line for a continuous one."""
    x_batch = np.array([x - 3, x, x + 7], dtype=type(x))
    if mechanism.discrete:
        return Case(name, mechanism, np.array(x), x_batch, support=window(x, half_width), draws=draws)
    return Case(
        name,
        mechanism,
        np.array(x),
        x_batch,
        line=np.array(1.0),
        t_range=(-half_width, half_width),
        kinks=(0.0,),
        draws=draws,
    )


def _unit_pieces(sensitivity, count, edge=None):
    """The jumps of a canonical-noise density: (k + 1/2) sensitivity, and +-edge for a bounded support."""
    points = tuple((np.arange(-count, count + 1) + 0.5) * sensitivity)
    return points + ((-edge, edge) if edge is not None else ())


def _canonical(name, noise, reach, bounded=False):
    """A scalar canonical-noise case at x = 0.7, integrated over its pieces within ``reach`` (and up to the
    end of its support where it is ``bounded``, delta > 0)."""
    edge = float(-noise.ppf(1e-300)) if bounded else None
    count = int(np.ceil(reach / noise.sensitivity))
    return Case(
        name,
        noise,
        np.array(0.7),
        np.array([-2.0, 0.7, 5.3]),
        line=np.array(1.0),
        t_range=(-reach, reach),
        kinks=_unit_pieces(noise.sensitivity, count, edge),
    )


def _congenial(noise, invariants, x, name):
    """A congenial case: x_batch and the support are every table that conforms to the invariants."""
    support = invariants.enumerate()
    return Case(f"Congenial({noise!r}, {name})", Congenial(noise, invariants), np.array(x), support, support=support)


TOTAL3 = LinearInvariants.grand_total(3, 4) & LinearInvariants.nonnegative(3)
MARGINS = LinearInvariants.margins([4, 4], [4, 4]) & LinearInvariants.nonnegative((2, 2))
#: The 2 x 2 table with public margins: the span of one vector v = (1, -1, -1, 1), of length 2.
MARGIN_SPACE = SensitivitySpace([[1, -1, -1, 1]], shape=(2, 2))
MARGIN_DIRECTION = np.array([[1.0, -1.0], [-1.0, 1.0]]) / 2.0
TABLE = np.array([[3.0, 1.0], [2.0, 4.0]])
TABLES = np.stack([TABLE, TABLE + 2 * MARGIN_DIRECTION, TABLE - 3 * MARGIN_DIRECTION])
CORRELATED = np.array([1.0, 2.0]) / np.sqrt(5.0)
WEM_Z = {"total": 5}
WEM_TABLE = np.array([[3, 2], [1, 0]])
WEM_TABLES = np.array([[[3, 2], [1, 0]], [[5, 0], [2, 0]], [[0, 5], [0, 3]]])


CASES: list[Case] = [
    _scalar_additive("DiscreteLaplace(0.7)", DiscreteLaplace(0.7), 3, 60, draws=6000),
    Case(
        "DiscreteLaplace(3.0, sensitivity=2.0) on 2 cells",
        DiscreteLaplace(3.0, 2.0),
        np.array([2, 5]),
        np.array([[2, 5], [0, 0], [9, 1]]),
        support=window([2, 5], 25),
        draws=6000,
    ),
    Case(
        "DiscreteLaplace(3.0, sensitivity=[1.0, 2.0]): one scale per cell",
        DiscreteLaplace(3.0, [1.0, 2.0]),
        np.array([2, 5]),
        np.array([[2, 5], [0, 0], [9, 1]]),
        support=window([2, 5], 25),
        draws=6000,
    ),
    Case(
        "DiscreteGaussian([0.8, 2.0]): one scale per cell",
        DiscreteGaussian([0.8, 2.0]),
        np.array([3, 4]),
        np.array([[3, 4], [0, 0], [8, 1]]),
        support=window([3, 4], 25),
        draws=6000,
    ),
    _scalar_additive("DiscreteGaussian(0.6)", DiscreteGaussian(0.6), 4, 20, draws=6000),
    _scalar_additive("DiscreteGaussian(2.5)", DiscreteGaussian(2.5), 7, 30, draws=6000),
    _scalar_additive("Laplace(0.7, sensitivity=2.0)", Laplace(0.7, 2.0), 1.5, 80.0, draws=20_000),
    _scalar_additive("Gaussian(1.3)", Gaussian(1.3), 0.5, 12.0, draws=20_000),
    _scalar_additive(
        "interop from_noise('laplace', 2.0, integer=True)", from_noise("laplace", 2.0, integer=True), 4, 70
    ),
    _scalar_additive(
        "interop from_noise('gaussian', 1.5, integer=False)", from_noise("gaussian", 1.5, integer=False), 2.5, 12.0
    ),
    Case(
        "Tulap(0.8, sensitivity=2.0)",
        Tulap(0.8, 2.0),
        np.array(1.0),
        np.array([-4.0, 1.0, 2.6]),
        line=np.array(1.0),
        t_range=(-70.0, 70.0),
        kinks=_unit_pieces(2.0, 35),
    ),
    _canonical("CanonicalNoise.gaussian(1.0)", CanonicalNoise.gaussian(1.0), 12.0),
    _canonical("CanonicalNoise.pure(0.7, sensitivity=3.0)", CanonicalNoise.pure(0.7, 3.0), 120.0),
    _canonical("CanonicalNoise.approximate(1.0, 0.1)", CanonicalNoise.approximate(1.0, 0.1), 40.0, bounded=True),
    _canonical("CanonicalNoise(G_1 as a callable)", CanonicalNoise(lambda a: gaussian_tradeoff(a, 1.0)), 12.0),
    *[
        _congenial(noise, invariants, x, name)
        for noise in (DiscreteLaplace(0.7), DiscreteGaussian(1.5))
        for invariants, x, name in (
            (TOTAL3, [2, 1, 1], "total 4 in 3 cells"),
            (MARGINS, [[1, 3], [3, 1]], "2 x 2 margins"),
        )
    ],
    Case(
        "SemiDPGaussian(1.0, 2 x 2 margins)",
        SemiDPGaussian(1.0, MARGIN_SPACE),
        TABLE,
        TABLES,
        line=MARGIN_DIRECTION,
        t_range=(-20.0, 20.0),
    ),
    Case(
        "KNormMechanism(1.0, 2 x 2 margins)",
        KNormMechanism(1.0, MARGIN_SPACE),
        TABLE,
        TABLES,
        line=MARGIN_DIRECTION,
        t_range=(-90.0, 90.0),
        kinks=(0.0,),
    ),
    Case(
        "NormBallMechanism(2.0, 1.0, inf) on one coordinate",
        NormBallMechanism(2.0, 1.0, norm=np.inf),
        np.array(3.0),
        np.array([0.0, 3.0, 4.5]),
        line=np.array(1.0),
        t_range=(-20.0, 20.0),
        kinks=(0.0,),
    ),
    Case(
        "NormBallMechanism(1.0, sqrt 2, 2) on two coordinates",
        NormBallMechanism(1.0, np.sqrt(2), norm=2),
        np.array([3.0, 4.0]),
        np.array([[3.0, 4.0], [0.0, 0.0], [5.5, -1.0]]),
    ),
    Case(
        "KNormGradient.count(1.0, n=20)",
        KNormGradient.count(1.0, n=20),
        np.array(8.0),
        np.array([0.0, 8.0, 20.0]),
        line=np.array(1.0),
        t_range=(-8.0, 12.0),
        kinks=(0.0,),
    ),
    Case(
        "CorrelatedGaussian(rank one)",
        CorrelatedGaussian(4.0 * np.outer(CORRELATED, CORRELATED)),
        np.array([1.0, 2.0]),
        np.array([[1.0, 2.0], [1.0 + CORRELATED[0], 2.0 + CORRELATED[1]], [-3.0, -6.0]]),
        line=CORRELATED,
        t_range=(-20.0, 20.0),
    ),
    Case(
        "L1ConvexCombination(1.0, beta=0.8)",
        L1ConvexCombination(1.0, beta=0.8),
        np.array([30.0, 20.0]),
        np.array([[30.0, 20.0], [29.0, 21.0], [45.5, 4.5]]),
        line=np.array([1.0, -1.0]),
        t_range=(-60.0, 60.0),
        kinks=(0.0,),
    ),
    Case(
        "WassersteinExponential(8.0, 1.0, naive) on one county",
        WassersteinExponential(8.0, 1.0, base_measure="naive"),
        np.array([[3], [1]]),
        np.array([[[3], [1]], [[0], [0]], [[6], [4]]]),
        support=window([[3], [1]], 10),
        normalized=False,
    ),
    Case(
        "WassersteinExponential(1.0, 2.0, congenial)",
        WassersteinExponential(1.0, 2.0, base_measure="congenial"),
        WEM_TABLE,
        WEM_TABLES,
        z=WEM_Z,
        support=CongenialBase().support(WEM_Z, 2),
    ),
    Case(
        "WassersteinExponential(1.0, 2.0, prior_congenial)",
        WassersteinExponential(1.0, 2.0, base_measure="prior_congenial"),
        WEM_TABLE,
        WEM_TABLES,
        z={"total": 5, "previous_cases": np.array([4, 0])},
        support=CongenialBase().support(WEM_Z, 2),
    ),
    Case(
        "PostProcessedRelease(DiscreteLaplace(1.0), clipped at 0)",
        PostProcessedRelease(DiscreteLaplace(1.0), lambda y, z: np.maximum(y, 0), box=np.arange(-60, 80)[:, None]),
        np.array(2),
        np.array([0, 2, 10]),
        support=np.arange(0, 60),
    ),
    # what from_opendp returns for an OpenDP u32 measurement (OpenDP itself is an optional dependency)
    Case(
        "interop: OpenDP u32 Gaussian(3.0), clipped at 0",
        _clipped_at_zero(from_noise("gaussian", 3.0, integer=True), "gaussian", 3.0, 20, 2**32 - 1),
        np.array(1),
        np.array([0, 1, 20]),
        support=np.arange(0, 50),
    ),
    # a noisy-measurement file over 2 block groups x 2 cells under one tract: the tract total, block group
    # 1's total and one cell of each (a square query matrix, so y and x share a shape), state total 10
    Case(
        "NoisyMeasurements(4 queries over 2 x 2 cells, total 10)",
        NoisyMeasurements(
            [[1, 1, 1, 1], [1, 1, 0, 0], [1, 0, 0, 0], [0, 0, 1, 0]],
            [0.6, 0.65, 0.6, 0.65],
            invariants=(np.ones((1, 4), dtype=np.int64), [10]),
        ),
        np.array([3, 2, 4, 1]),
        np.array([[3, 2, 4, 1], [2, 3, 4, 1], [3, 2, 3, 2]]),
        support=window([10, 5, 3, 4], 6),
    ),
]
