"""Figures 2-5 of the reproduction, built without pyplot from the tables of ``experiments.py`` and ``attack.py``."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from scipy import stats

from .data import QUERY_NAMES

__all__ = ["figure2", "figure3", "figure4", "figure5"]

_COLORS = {
    "ExpM(G)": "tab:blue",
    "EigM(G)": "tab:orange",
    "DauM(G)": "tab:green",
    "GroupDP(G)": "tab:red",
    "DP(G)": "tab:purple",
}


def figure2(table: pd.DataFrame) -> Figure:
    """Mean L2 error against eps, classical (solid) and analytic (dashed) calibration, one line per mechanism.

    Examples
    --------
    >>> table = pd.DataFrame({"mechanism": ["ExpM(G)"] * 2, "calibration": ["classical"] * 2,
    ...                       "epsilon": [1.0, 5.0], "error": [35.0, 7.0]})
    >>> len(figure2(table).axes)
    1
    """
    fig = Figure(figsize=(6.5, 4.5), layout="constrained")
    ax = fig.subplots()
    for (mechanism, calibration), rows in table.groupby(["mechanism", "calibration"], sort=False):
        ax.plot(
            rows["epsilon"],
            rows["error"],
            color=_COLORS[mechanism],
            marker="o",
            linestyle="-" if calibration == "classical" else "--",
            label=f"{mechanism}, {calibration}",
        )
    ax.set(
        xscale="log",
        yscale="log",
        xlabel="epsilon (delta = 0.001)",
        ylabel="mean L2 error",
        title="Figure 2 / Table 2: income, Delta_p = 0.1",
    )
    ax.legend(fontsize=7, ncol=2)
    return fig


def figure3(table: pd.DataFrame) -> Figure:
    """Expected L2 error against Delta_p at one eps (classical), the DP Gaussians as references.

    Examples
    --------
    >>> table = pd.DataFrame({"mechanism": ["DauM(G)", "DauM(G)", "DP(G)", "DP(G)"], "calibration": ["classical"] * 4,
    ...                       "gap": [0.1, 0.2] * 2, "expected_error": [13.0, 27.0, 15.0, 15.0], "epsilon": [1.0] * 4})
    >>> len(figure3(table).axes)
    1
    """
    fig = Figure(figsize=(6.5, 4.5), layout="constrained")
    ax = fig.subplots()
    rows = table[table["calibration"] == "classical"]
    for mechanism, lines in rows.groupby("mechanism", sort=False):
        ax.plot(
            lines["gap"],
            lines["expected_error"],
            color=_COLORS[mechanism],
            marker="o",
            linestyle=":" if mechanism in ("DP(G)", "GroupDP(G)") else "-",
            label=mechanism,
        )
    ax.set(
        yscale="log",
        xlabel="Delta_p (secrets 0.5 -+ Delta_p / 2)",
        ylabel="expected L2 error",
        title=f"Figure 3: income, eps = {rows['epsilon'].iloc[0]:g}, delta = 0.001 (classical c)",
    )
    ax.legend(fontsize=8)
    return fig


def figure4(accuracy: pd.DataFrame) -> Figure:
    """Attack accuracy against eps per defense (classical): naive attacker solid, informed dashed, Phi(m / 2) dotted.

    Examples
    --------
    >>> accuracy = pd.DataFrame({"mechanism": ["none", "DauM(G)"], "calibration": ["", "classical"],
    ...     "attacker": ["naive", "naive"],
    ...     "epsilon": [np.nan, 5.0], "delta": [np.nan, 1e-3], "accuracy": [0.75, 0.74], "accuracy_se": [0.01, 0.01],
    ...     "best_accuracy": [0.75, 0.75]})
    >>> len(figure4(accuracy).axes)
    1
    """
    fig = Figure(figsize=(6.5, 4.5), layout="constrained")
    ax = fig.subplots()
    none = accuracy[accuracy["mechanism"] == "none"].iloc[0]
    ax.axhline(none["accuracy"], color="black", linewidth=0.8, label="no defense")
    ax.axhline(0.5, color="grey", linewidth=0.8)
    rows = accuracy[(accuracy["calibration"] == "classical") & np.isclose(accuracy["delta"], 1e-3)]
    for (mechanism, attacker), lines in rows.groupby(["mechanism", "attacker"], sort=False):
        ax.errorbar(
            lines["epsilon"],
            lines["accuracy"],
            yerr=2 * lines["accuracy_se"],
            color=_COLORS[mechanism],
            marker="o",
            capsize=2,
            linestyle="-" if attacker == "naive" else "--",
            label=f"{mechanism}, {attacker} attacker",
        )
        if attacker == "naive":
            ax.plot(lines["epsilon"], lines["best_accuracy"], color=_COLORS[mechanism], linestyle=":")
    ax.set(
        xscale="log",
        xlabel="epsilon (delta = 0.001, classical c)",
        ylabel="meta-classifier accuracy",
        title="Figure 4: attack on p_I = 0.45 vs 0.55 (dotted: Phi(m/2))",
    )
    ax.legend(fontsize=7, ncol=2)
    return fig


def figure5(queries: Mapping[float, np.ndarray], components=(0, 3)) -> Figure:
    """Histograms of components of F across subsets for each secret, with the fitted normal densities.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> len(figure5({0.45: rng.normal(size=(50, 5)), 0.55: rng.normal(size=(50, 5))}).axes)
    2
    """
    fig = Figure(figsize=(10, 4), layout="constrained")
    axes = fig.subplots(1, len(components))
    for ax, component in zip(np.atleast_1d(axes), components):
        for (share, rows), color in zip(queries.items(), ("tab:green", "tab:purple")):
            values = rows[:, component]
            ax.hist(
                values,
                bins=30,
                density=True,
                alpha=0.45,
                color=color,
                label=f"p_I = {share:g} (variance {values.var(ddof=1):.2f})",
            )
            grid = np.linspace(values.min(), values.max(), 200)
            ax.plot(grid, stats.norm.pdf(grid, values.mean(), values.std(ddof=1)), color=color)
        ax.set(xlabel=QUERY_NAMES[component], ylabel="density")
        ax.legend(fontsize=8)
    fig.suptitle("Figure 5: Gaussian approximations of F over subsets of 100 records")
    return fig
