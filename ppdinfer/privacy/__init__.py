"""Privacy accounting with public information: Wasserstein-infinity sensitivities and eps-TP rules.

- `wasserstein`: exact W_inf on the real line through the quantile coupling.
- `sensitivity`: Delta_z for the examples of Seeman, Reimherr & Slavkovic (normal mean, counts
  under SDL properties, correlated counts).
- `accounting`: sequential and parallel composition, conditioning on a public subset.
- `figures`: the paper's Figure 4.
"""

from .accounting import condition_on_public_subset, parallel_composition, sequential_composition
from .figures import plot_correlated_counts
from .sensitivity import (
    CountSensitivity,
    delta_conditional_normal_mean,
    delta_correlated_counts,
    delta_normal_mean,
    delta_sdl_counts,
    k_anonymous_counts,
    t_close_counts,
)
from .wasserstein import QuantileCoupling, quantile_coupling, w_inf, w_inf_samples

__all__ = [
    "CountSensitivity",
    "QuantileCoupling",
    "condition_on_public_subset",
    "delta_conditional_normal_mean",
    "delta_correlated_counts",
    "delta_normal_mean",
    "delta_sdl_counts",
    "k_anonymous_counts",
    "parallel_composition",
    "plot_correlated_counts",
    "quantile_coupling",
    "sequential_composition",
    "t_close_counts",
    "w_inf",
    "w_inf_samples",
]
