"""The PyMC layer: privacy-noise distributions and the privacy-aware data-augmentation step."""

from .augmentation import ConjugateDirichlet, MechanismAugmentation, PrivacyAugmentation
from .distributions import DiscreteGaussian, DiscreteLaplace, WassersteinNaive
from .from_model import feasible_total_start, from_model, sample_model, theta_variable
from .likelihood import MechanismLogLikelihood
from .sampling import sample

__all__ = ["ConjugateDirichlet", "DiscreteGaussian", "DiscreteLaplace", "MechanismAugmentation",
           "MechanismLogLikelihood", "PrivacyAugmentation", "WassersteinNaive", "feasible_total_start", "from_model", "sample",
           "sample_model", "theta_variable"]
