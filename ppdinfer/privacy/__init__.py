"""Privacy accounting with public information: Wasserstein-infinity sensitivities and eps-TP rules.

- W_inf (the exact quantile coupling) and `SensitivitySpace` live in ``ppdinfer.geometry``, below
  the mechanisms, and are re-exported here.
- `sensitivity`: Delta_z for the examples of Seeman, Reimherr & Slavkovic (normal mean, counts
  under SDL properties, correlated counts).
- `sufficient_statistics`: the L1 and L2 sensitivities of the sufficient statistics of clipped data (counts,
  sums, squares, cross-products, least squares' X'X, X'y and y'y), per statistic and jointly, for replace-one
  and add/remove-one neighbours.
- `accounting`: sequential and parallel composition, conditioning on a public subset (eps-TP);
  tradeoff functions, mu-GDP and zCDP conversions to (eps, delta) and group privacy (Semi-DP).
- `figures`: the paper's Figure 4.
- `semi_adjacency`: Semi-DP adjacency: the semi-adjacent parameter a(t) (Definition 13, and as seen
  from a fixed dataset), the sensitivity spaces of tables with public margins.
- `kantorovich`: Ding's Kantorovich mechanism for Pufferfish privacy: conditional pmfs of the
  released value given the secret, the comonotone plan and its sensitivity, the calibrations of
  Theorems 1-3 and exact privacy-loss audits.
- `congenial_privacy`: Gong & Meng's congenial (conditioned) mechanisms: gamma* of Theorem 2.1 and an exact
  privacy-loss audit on small finite invariant sets.
- `attacker`: the Bayesian attacker of a Pufferfish secret: P(s | y) and the posterior / prior odds.
"""

from ..geometry import QuantileCoupling, SensitivitySpace, quantile_coupling, w_inf, w_inf_samples
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
from .attacker import (
    MonteCarloSecretPosterior,
    plot_prior_posterior_odds,
    posterior_odds_ratio,
    secret_log_likelihood,
    secret_posterior,
    secret_posterior_mc,
)
from .congenial_privacy import conforming_probability, congenial_gamma, congenial_privacy_loss, double_geometric_pmf
from .figures import plot_correlated_counts
from .kantorovich import (
    ABSENT,
    ConditionalPmfs,
    KantorovichPlan,
    counting_query_conditionals,
    empirical_conditionals,
    kantorovich_gaussian,
    kantorovich_laplace,
    kantorovich_plan,
    plan_sensitivity,
    privacy_delta,
    privacy_loss,
    relaxed_laplace_scale,
    separable_query_conditionals,
    separable_sensitivity,
    smallest_gaussian_sigma,
    smallest_laplace_scale,
    support_diameter,
    theorem3_constant,
)
from .semi_adjacency import (
    contingency_sensitivities,
    contingency_sensitivity_space,
    dp_table_sensitivity_space,
    enumerate_datasets,
    enumerated_sensitivity_space,
    margin_free_projection,
    one_way_margins,
    record_changes,
    semi_adjacent_parameter,
    semi_adjacent_parameter_from,
    semi_adjacent_parameters,
    table_rectangles,
    table_three_cycles,
    theorem16_bound,
)
from .sensitivity import (
    CountSensitivity,
    delta_conditional_normal_mean,
    delta_correlated_counts,
    delta_normal_mean,
    delta_sdl_counts,
    k_anonymous_counts,
    t_close_counts,
)
from .sufficient_statistics import (
    StatisticsSensitivity,
    count_sensitivity,
    product_sum_sensitivity,
    regression_sensitivity,
    square_sum_sensitivity,
    sum_sensitivity,
)

__all__ = [
    "ABSENT",
    "ConditionalPmfs",
    "CountSensitivity",
    "KantorovichPlan",
    "MonteCarloSecretPosterior",
    "QuantileCoupling",
    "SensitivitySpace",
    "StatisticsSensitivity",
    "ZCDPGroupAccount",
    "condition_on_public_subset",
    "conforming_probability",
    "congenial_gamma",
    "congenial_privacy_loss",
    "contingency_sensitivities",
    "contingency_sensitivity_space",
    "count_sensitivity",
    "counting_query_conditionals",
    "delta_conditional_normal_mean",
    "delta_correlated_counts",
    "delta_normal_mean",
    "delta_sdl_counts",
    "double_geometric_pmf",
    "dp_table_sensitivity_space",
    "empirical_conditionals",
    "enumerate_datasets",
    "enumerated_sensitivity_space",
    "gaussian_tradeoff",
    "gaussian_zcdp_epsilon",
    "gdp_delta",
    "gdp_epsilon",
    "gdp_group",
    "k_anonymous_counts",
    "kantorovich_gaussian",
    "kantorovich_laplace",
    "kantorovich_plan",
    "laplace_tradeoff",
    "margin_free_projection",
    "one_way_margins",
    "parallel_composition",
    "plan_sensitivity",
    "plot_correlated_counts",
    "plot_prior_posterior_odds",
    "posterior_odds_ratio",
    "privacy_delta",
    "privacy_loss",
    "product_sum_sensitivity",
    "quantile_coupling",
    "record_changes",
    "regression_sensitivity",
    "relaxed_laplace_scale",
    "secret_log_likelihood",
    "secret_posterior",
    "secret_posterior_mc",
    "semi_adjacent_parameter",
    "semi_adjacent_parameter_from",
    "semi_adjacent_parameters",
    "separable_query_conditionals",
    "separable_sensitivity",
    "sequential_composition",
    "smallest_gaussian_sigma",
    "smallest_laplace_scale",
    "square_sum_sensitivity",
    "sum_sensitivity",
    "support_diameter",
    "t_close_counts",
    "table_rectangles",
    "table_three_cycles",
    "theorem16_bound",
    "theorem3_constant",
    "w_inf",
    "w_inf_samples",
    "zcdp_epsilon",
    "zcdp_group",
    "zcdp_group_account",
]
