"""Figure 4 of the paper: Delta_z of correlated counts."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .. import validation as _checks
from ..validation import positive_int
from .sensitivity import delta_correlated_counts


def plot_correlated_counts(
    ns: Sequence[int] = (10, 50, 100, 500), z0_values: Sequence[float] = (0.01, 0.05, 0.1, 0.25, 0.5), z1_grid=None
):
    """Plot Delta_z = W_inf(1 + Bin(n - 1, z1), Bin(n - 1, z0)) against z1, one panel per n.

    The paper (Section 4.4, Figure 4) evaluates Delta_z "at different choices for n, z1, and z0"
    without printing the grid; here each panel holds one line per z0, drawn over the z1 in
    ``z1_grid`` (default 101 points on [0, 1]) with z1 >= z0. Each line starts at 1 (z1 = z0,
    no dependence) and reaches n at z1 = 1. z0 = 0 would give n for every z1 > 0, hence the default
    starts at 0.01. The figure is built without pyplot, so it needs no display.

    Returns
    -------
    matplotlib.figure.Figure
        One row of ``len(ns)`` axes, each with ``len(z0_values)`` lines.

    References
    ----------
    .. [1] J. Seeman, M. Reimherr and A. Slavkovic, "Formal privacy for partially private data,"
        arXiv:2204.01102, 2022. Section 4.4 and Figure 4.

    Examples
    --------
    >>> import numpy as np
    >>> from ppdinfer.privacy import plot_correlated_counts
    >>> figure = plot_correlated_counts(ns=(10, 50), z0_values=(0.1,), z1_grid=np.linspace(0, 1, 11))
    >>> len(figure.axes), len(figure.axes[0].lines)
    (2, 1)
    >>> figure.savefig("figure4.png")                    # doctest: +SKIP
    """
    ns = [positive_int(n, f"ns[{i}]") for i, n in enumerate(ns)]
    if not ns:
        raise ValueError("ns must hold at least one n")
    z0_values = _checks.vector(_checks.unit_interval(z0_values, "z0_values"), "z0_values")
    z1_grid = np.linspace(0.0, 1.0, 101) if z1_grid is None else _checks.unit_interval(z1_grid, "z1_grid")
    z1_grid = np.sort(_checks.vector(z1_grid, "z1_grid"))
    from matplotlib.figure import Figure  # matplotlib on first use: import ppdinfer stays light

    figure = Figure(figsize=(3.2 * len(ns), 3.4), layout="constrained")
    axes = figure.subplots(1, len(ns), squeeze=False)[0]
    for ax, n in zip(axes, ns):
        for z0 in z0_values:
            z1 = z1_grid[z1_grid >= z0]
            ax.plot(z1, delta_correlated_counts(n, z0, z1), label=f"$z_0 = {z0:g}$")
        ax.set(title=f"$n = {n}$", xlabel="$z_1$", xlim=(0.0, 1.0), ylim=(0.0, 1.05 * n))
    axes[0].set_ylabel(r"$\Delta_z$")
    axes[-1].legend(loc="upper left", fontsize="small")
    figure.suptitle(r"$\Delta_z$ of correlated counts under different distributional assumptions")
    return figure
