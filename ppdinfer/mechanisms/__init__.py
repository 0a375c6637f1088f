"""Release mechanisms. Each one releases y from x and is the likelihood pi(y | x, z).

The distribution-privacy designs of Chen & Ohrimenko are the subpackage
:mod:`ppdinfer.mechanisms.distribution`.
"""

from .base import AdditiveNoiseMechanism, Mechanism
from .gaussian import (
    DiscreteGaussian,
    Gaussian,
    analytic_gaussian_sigma,
    classical_gaussian_sigma,
    discrete_gaussian_log_normalizer,
    gaussian_delta,
)
from .guarantee import AdditiveNoise, Guarantee
from .laplace import DiscreteLaplace, Laplace

__all__ = [
    "AdditiveNoise",
    "AdditiveNoiseMechanism",
    "DiscreteGaussian",
    "DiscreteLaplace",
    "Gaussian",
    "Guarantee",
    "Laplace",
    "Mechanism",
    "analytic_gaussian_sigma",
    "classical_gaussian_sigma",
    "discrete_gaussian_log_normalizer",
    "gaussian_delta",
]

from .canonical import CanonicalNoise, Tulap
from .congenial import Congenial
from .knorm import KNormGradient
from .noisy_measurements import NoisyMeasurements
from .postprocessed import BoxMassWarning, PostProcessedRelease
from .semidp import KNormMechanism, NormBallMechanism, SemiDPGaussian, naive_gaussian
from .wem import BaseMeasure, CongenialBase, Naive, PriorCongenial, WassersteinExponential

__all__ += [
    "BaseMeasure",
    "BoxMassWarning",
    "CanonicalNoise",
    "Congenial",
    "CongenialBase",
    "KNormGradient",
    "KNormMechanism",
    "Naive",
    "NoisyMeasurements",
    "NormBallMechanism",
    "PostProcessedRelease",
    "PriorCongenial",
    "SemiDPGaussian",
    "Tulap",
    "WassersteinExponential",
    "naive_gaussian",
]
