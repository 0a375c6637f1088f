"""Figures 2 and 3 from :func:`~.experiments.simulate_costs` results, built without pyplot."""

from __future__ import annotations

import xarray as xr
from matplotlib.figure import Figure

__all__ = ["DESIGN_LABELS", "figure2", "figure3"]

DESIGN_LABELS = {
    "semidp_rectangles": "Semi-DP Gaussian, rectangles (sigma = 2/mu, as printed)",
    "semidp_enumerated": "Semi-DP Gaussian, 3-change space (sigma = sqrt 6/mu for k >= 3)",
    "naive": "naive Gaussian (sigma = 3 sqrt 2/mu)",
    "knorm_rectangles": "K-norm, rectangles",
    "knorm_enumerated": "K-norm, 3-change space",
    "naive_l1": "naive l1 (eps/3)",
    "naive_l2": "naive l2 (eps/3)",
    "naive_linf": "naive l_inf (eps/3)",
}
_STYLE = {
    "semidp_rectangles": ("tab:blue", "o"),
    "semidp_enumerated": ("tab:cyan", "s"),
    "naive": ("tab:red", "^"),
    "knorm_rectangles": ("tab:blue", "o"),
    "knorm_enumerated": ("tab:cyan", "s"),
    "naive_l1": ("tab:red", "^"),
    "naive_l2": ("tab:orange", "v"),
    "naive_linf": ("tab:purple", "D"),
}


def figure2(costs: xr.Dataset, variable: str = "cost") -> Figure:
    """Mean L2 cost against k, one panel per model, one line per design (the single mu of the run)."""
    fig = Figure(figsize=(10, 4), layout="constrained")
    axes = fig.subplots(1, costs.sizes["model"], sharey=True)
    mu = float(costs["level"][0])
    for ax, model in zip(axes, costs["model"].values):
        for design in costs["design"].values:
            color, marker = _STYLE[design]
            values = costs[variable].sel(model=model, design=design).isel(level=0)
            ax.plot(costs["k"], values, color=color, marker=marker, label=DESIGN_LABELS[design])
        ax.set(title=f"Model {model}", xlabel="table size k (k x k)", yscale="log")
    axes[0].set_ylabel(
        f"mean L2 cost over {costs.attrs['replicates']} tables" + (" (clamped at 0)" if "clamped" in variable else "")
    )
    axes[-1].legend(fontsize=8)
    fig.suptitle(f"Figure 2: Semi-DP Gaussian vs naive Gaussian, mu = {mu:g}")
    return fig


def figure3(costs: xr.Dataset, variable: str = "cost") -> Figure:
    """Mean L2 cost against eps for each (model, k), one line per design."""
    models, sizes = costs["model"].values, costs["k"].values
    fig = Figure(figsize=(4 * len(sizes) * len(models), 4), layout="constrained")
    axes = fig.subplots(1, len(models) * len(sizes), sharey=False)
    for ax, (model, k) in zip(axes, [(m, k) for m in models for k in sizes]):
        for design in costs["design"].values:
            color, marker = _STYLE[design]
            ax.plot(
                costs["level"],
                costs[variable].sel(model=model, k=k, design=design),
                color=color,
                marker=marker,
                label=DESIGN_LABELS[design],
            )
        ax.set(title=f"Model {model}, k = {k}", xlabel="epsilon", xscale="log", yscale="log")
    axes[0].set_ylabel(
        f"mean L2 cost over {costs.attrs['replicates']} tables" + (" (clamped at 0)" if "clamped" in variable else "")
    )
    axes[-1].legend(fontsize=8)
    fig.suptitle("Figure 3: optimal K-norm vs naive norm mechanisms")
    return fig
