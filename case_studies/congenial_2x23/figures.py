"""The figures: Figure 1 (distances by method), Appendix C's Figure 2 (acceptance rate against eps~)
and Figure 3 (MIS trace plots). Each function writes one PNG and returns its path (matplotlib's object
API: no pyplot, no backend chosen).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
from matplotlib.figure import Figure

from .comparison import METHODS
from .data import AGE_GROUPS, ROWS, SHAPE
from .table1 import AcceptanceCurve

__all__ = ["cell_label", "plot_acceptance_curve", "plot_distances", "plot_traces"]


def cell_label(cell: int) -> str:
    """A flat cell index as the paper numbers it (1-based) with its row and age group.

    Examples
    --------
    >>> cell_label(1), cell_label(45)
    ('cell 2 (female, 6-10)', 'cell 46 (male, 85+)')
    """
    row, column = divmod(int(cell), SHAPE[1])
    return f"cell {cell + 1} ({ROWS[row]}, {AGE_GROUPS[column]})"


def plot_distances(distances: np.ndarray, path: Path) -> Path:
    """Figure 1: box plots over the tables of the mean L1 (left) and L2 (right) distance, per method.

    ``distances`` has shape (n_tables, 4, 2), as :func:`.comparison.method_distances` returns.
    """
    fig = Figure(figsize=(11, 4.2))
    axes = fig.subplots(1, 2)
    labels = [label.replace(", eps", "\neps") for _, label in METHODS]
    for k, (ax, name) in enumerate(zip(axes, ["L1", "L2"])):
        ax.boxplot([distances[:, m, k] for m in range(len(METHODS))], tick_labels=labels)
        ax.set_title(f"mean {name} distance to the confidential table")
        ax.set_ylabel(f"{name} distance (mean over releases)")
        ax.tick_params(axis="x", labelsize=8)
    fig.suptitle(f"{len(distances)} synthetic 2 x 23 tables, cells iid NegBin(100, 0.05)")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    return path


def plot_acceptance_curve(curve: AcceptanceCurve, paper_rate: float, paper_epsilon: float, path: Path) -> Path:
    """Appendix C, Figure 2: the MIS acceptance rate against eps~ (+- 2 batch-means SE), and the paper's."""
    fig = Figure(figsize=(6, 4))
    ax = fig.subplots()
    mean, se = 100 * curve.mean, 100 * np.nan_to_num(curve.standard_error)
    ax.errorbar(curve.grid, mean, yerr=2 * se, marker="o", capsize=3, label="measured (+- 2 batch-means SE)")
    ax.plot([paper_epsilon], [100 * paper_rate], "r*", markersize=12, label="paper (printed)")
    ax.set_xlabel("proposal parameter eps~")
    ax.set_ylabel("acceptance rate (%)")
    ax.set_title(f"Algorithm 1 on Table 1: {curve.chains} chains x {curve.iterations:,} iterations per eps~")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    return path


def plot_traces(states: np.ndarray, cells: Sequence[int], solved: Sequence[int], path: Path) -> Path:
    """Appendix C, Figure 3: the value of each of ``cells`` along the MIS chain ``states`` (iterations, 2, 23)."""
    flat = states.reshape(len(states), -1)
    columns = min(2, len(cells))
    rows = -(-len(cells) // columns)
    fig = Figure(figsize=(6 * columns, 3 * rows))
    axes = fig.subplots(rows, columns, squeeze=False)
    for ax, cell in zip(axes.flat, cells):
        ax.plot(np.arange(1, len(flat) + 1), flat[:, cell], lw=0.7)
        role = "solved, in I^c" if cell in solved else "proposed, in I"
        ax.set_title(f"{cell_label(cell)}: {role}", fontsize=10)
        ax.set_xlabel("iteration")
        ax.set_ylabel("cell value")
    for ax in axes.flat[len(cells) :]:
        ax.set_visible(False)
    fig.suptitle(f"Algorithm 1 on Table 1: {len(flat):,} iterations from s*")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    return path
