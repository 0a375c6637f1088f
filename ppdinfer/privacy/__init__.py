"""Privacy accounting with public information: Wasserstein-infinity sensitivities and eps-TP rules.

- `wasserstein`: exact W_inf on the real line through the quantile coupling.
- `sensitivity`: Delta_z for the examples of Seeman, Reimherr & Slavkovic (normal mean, counts
  under SDL properties, correlated counts).
- `accounting`: sequential and parallel composition, conditioning on a public subset (eps-TP);
  tradeoff functions, mu-GDP and zCDP conversions to (eps, delta) and group privacy (Semi-DP).
- `figures`: the paper's Figure 4.
- `sensitivity_space`: the sensitivity space S of a statistic under invariants (Semi-DP): span,
  projection, l1 / l2 / l_inf sensitivities and the gauge of its convex hull.
- `congenial`: Gong & Meng's congenial (conditioned) mechanisms: gamma* of Theorem 2.1 and an exact
  privacy-loss audit on small finite invariant sets.
"""

from .accounting import (
    ZCDPGroupAccount,
    condition_on_public_subset,
    gaussian_tradeoff,
    gaussian_zcdp_epsilon,
    gdp_delta,
    gdp_epsilon,
    gdp_group,
    laplace_tradeoff,
    parallel_composition,
    sequential_composition,
    zcdp_epsilon,
    zcdp_group,
    zcdp_group_account,
)
from .congenial import conforming_probability, congenial_gamma, congenial_privacy_loss, double_geometric_pmf
from .figures import plot_correlated_counts
from .sensitivity_space import SensitivitySpace
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
    "SensitivitySpace",
    "ZCDPGroupAccount",
    "condition_on_public_subset",
    "conforming_probability",
    "congenial_gamma",
    "congenial_privacy_loss",
    "delta_conditional_normal_mean",
    "delta_correlated_counts",
    "delta_normal_mean",
    "delta_sdl_counts",
    "double_geometric_pmf",
    "gaussian_tradeoff",
    "gaussian_zcdp_epsilon",
    "gdp_delta",
    "gdp_epsilon",
    "gdp_group",
    "k_anonymous_counts",
    "laplace_tradeoff",
    "parallel_composition",
    "plot_correlated_counts",
    "quantile_coupling",
    "sequential_composition",
    "t_close_counts",
    "w_inf",
    "w_inf_samples",
    "zcdp_epsilon",
    "zcdp_group",
    "zcdp_group_account",
]
