"""The figures, built without pyplot: Figure 3 (conditionals and plan), Figure 4 (Laplace variances),
the counting-query plans (Figures 1 and 2)."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from ppdinfer.privacy.kantorovich import KantorovichPlan

__all__ = ["counting_figure", "figure3", "figure4"]


def _plan_image(ax, plan: KantorovichPlan, labels=None) -> None:
    dense = np.ma.masked_equal(plan.matrix(), 0.0)
    image = ax.imshow(dense, origin="lower", cmap="viridis")
    ax.figure.colorbar(image, ax=ax, shrink=0.8, label="plan mass")
    ticks = np.arange(plan.support.size)
    shown = labels if labels is not None else [f"{value:g}" for value in plan.support]
    step = max(1, plan.support.size // 14)
    ax.set_xticks(ticks[::step], shown[::step], rotation=90, fontsize=7)
    ax.set_yticks(ticks[::step], shown[::step], fontsize=7)
    ax.set(xlabel="x' (second secret)", ylabel="x (first secret)")


def figure3(plan: KantorovichPlan, order, secrets) -> Figure:
    """(a) P(education | race) for the two races, (b) the Kantorovich plan between them."""
    fig = Figure(figsize=(12, 4.8), layout="constrained")
    left, right = fig.subplots(1, 2)
    positions = np.arange(len(order))
    for offset, (pmf, secret) in zip((-0.2, 0.2), ((plan.p, secrets[0]), (plan.q, secrets[1]))):
        left.bar(positions + offset, pmf, width=0.4, label=f"S = {secret}")
    left.set_xticks(positions, [f"{k + 1}: {name}" for k, name in enumerate(order)], rotation=90, fontsize=7)
    left.set(ylabel="P(X | S)", title="(a) education given race")
    left.legend()
    _plan_image(right, plan, [str(k + 1) for k in range(len(order))])
    right.set_title(f"(b) Kantorovich plan, sensitivity {plan.sensitivity:g}")
    fig.suptitle(f"Figure 3: Adult, race -> education ({len(order)} levels)")
    return fig


def figure4(curves: Mapping[str, pd.DataFrame]) -> Figure:
    """Laplace noise variance 2 theta^2 against epsilon: Theorem 1, Theorem 2, the exact smallest."""
    fig = Figure(figsize=(7, 4.5), layout="constrained")
    ax = fig.subplots()
    for (name, frame), color in zip(curves.items(), ("tab:blue", "tab:orange", "tab:green")):
        ax.plot(frame["epsilon"], frame["theorem1"], color=color, linestyle="-", label=f"Theorem 1, {name}")
        ax.plot(frame["epsilon"], frame["theorem2"], color=color, linestyle="--", label=f"Theorem 2, {name}")
        ax.plot(frame["epsilon"], frame["smallest"], color=color, linestyle=":", label=f"exact smallest, {name}")
    ax.set(
        xlabel="privacy budget epsilon",
        ylabel="utility loss VAR[N] = 2 theta^2",
        title="Figure 4: Laplace noise variance, White vs Asian-Pac-Islander",
    )
    ax.legend(fontsize=7)
    return fig


def counting_figure(plans: Mapping[str, Mapping[str, KantorovichPlan]]) -> Figure:
    """The plans of the counting-query systems (Figures 1 and 2), one panel per system and pair."""
    panels = [(system, pair, plan) for system, pairs in plans.items() for pair, plan in pairs.items()]
    fig = Figure(figsize=(4.5 * len(panels), 4.2), layout="constrained")
    for ax, (system, pair, plan) in zip(fig.subplots(1, len(panels)), panels):
        _plan_image(ax, plan)
        ax.set_title(f"{system}\npair {pair}: sensitivity {plan.sensitivity:g}", fontsize=9)
    fig.suptitle("Figures 1 and 2: Kantorovich plans of the counting query")
    return fig
