"""The PyMC layer: any mechanism as an observed ``Release``, privacy-noise distributions, and the
privacy-aware data-augmentation step that ``sample`` assigns to every integer latent a release reads."""

from ._backend_warnings import quiet_blas_warning
from ._warmup import warm_up
from .augmentation import PrivacyAugmentation
from .distributions import DiscreteGaussian, DiscreteLaplace, WassersteinNaive
from .families import ConjugateBeta, ConjugateDirichlet, ConjugateGamma
from .from_model import feasible_total_start, from_model, sample_model, theta_variable
from .likelihood import MechanismLogLikelihood
from .release import Release
from .sampling import AugmentationWarning, sample

__all__ = [
    "AugmentationWarning",
    "ConjugateBeta",
    "ConjugateDirichlet",
    "ConjugateGamma",
    "DiscreteGaussian",
    "DiscreteLaplace",
    "MechanismLogLikelihood",
    "PrivacyAugmentation",
    "Release",
    "WassersteinNaive",
    "feasible_total_start",
    "from_model",
    "quiet_blas_warning",
    "sample",
    "sample_model",
    "theta_variable",
    "warm_up",
]
