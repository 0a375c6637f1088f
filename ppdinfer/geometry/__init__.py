"""Distances and sensitivity spaces: the geometry that both mechanisms and privacy accounting rest on.

- `wasserstein`: exact W_inf on the real line through the quantile coupling.
- `sensitivity_space`: the sensitivity space S of a statistic under invariants (Semi-DP): span,
  projection, l1 / l2 / l_inf sensitivities and the gauge of its convex hull.

This package sits below :mod:`ppdinfer.mechanisms` and :mod:`ppdinfer.privacy` and imports
neither. Users find its public names in :mod:`ppdinfer.privacy`, which re-exports them
(``ppdinfer.privacy.SensitivitySpace``, ``ppdinfer.privacy.w_inf``, ...).
"""

from .sensitivity_space import SensitivitySpace
from .wasserstein import QuantileCoupling, quantile_coupling, w_inf, w_inf_samples

__all__ = ["QuantileCoupling", "SensitivitySpace", "quantile_coupling", "w_inf", "w_inf_samples"]
