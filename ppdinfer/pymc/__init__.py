"""The PyMC layer: privacy-noise distributions and the privacy-aware data-augmentation step."""

from .augmentation import ConjugateDirichlet, PrivacyAugmentation
from .distributions import DiscreteGaussian, DiscreteLaplace, WassersteinNaive
from .sampling import sample

__all__ = ["ConjugateDirichlet", "DiscreteGaussian", "DiscreteLaplace", "PrivacyAugmentation", "WassersteinNaive", "sample"]
