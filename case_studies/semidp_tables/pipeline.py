"""The whole Semi-DP reproduction: both experiments, their figures and the report."""

from __future__ import annotations

from pathlib import Path

from tqdm import tqdm

from .experiments import gaussian_designs, knorm_designs, simulate_costs
from .figures import figure2, figure3
from .report import write_report

__all__ = ["FULL", "QUICK", "reproduce"]

#: Figure 2: k = 2..10 at mu = 0.1; Figure 3: k in {2, 3}, eps in {0.1, 0.5, 1}; 30 tables per cell.
FULL = {
    "figure2_sizes": list(range(2, 11)),
    "mu": 0.1,
    "figure3_sizes": [2, 3],
    "epsilons": [0.1, 0.5, 1.0],
    "replicates": 30,
    "seed": 2025,
}
QUICK = {**FULL, "figure2_sizes": [2, 3, 4], "replicates": 10}


def reproduce(results: Path, quick: bool = False, progressbar: bool = True) -> Path:
    """Run the plan ``FULL`` (or ``QUICK``) into ``results``; return the path of ``report.md``."""
    plan = QUICK if quick else FULL
    results = Path(results)
    results.mkdir(parents=True, exist_ok=True)
    cells = 2 * (len(plan["figure2_sizes"]) + len(plan["figure3_sizes"]) * len(plan["epsilons"]))
    with tqdm(total=cells, desc="semidp_tables", unit="cell", disable=not progressbar) as bar:
        fig2 = simulate_costs(
            plan["figure2_sizes"], [plan["mu"]], gaussian_designs, plan["replicates"], plan["seed"], progress=bar
        )
        fig3 = simulate_costs(
            plan["figure3_sizes"], plan["epsilons"], knorm_designs, plan["replicates"], plan["seed"] + 1, progress=bar
        )
    fig2.to_netcdf(results / "figure2_costs.nc")
    fig3.to_netcdf(results / "figure3_costs.nc")
    figures = {}
    for name, figure in (
        ("figure2_gaussian", figure2(fig2)),
        ("figure2_gaussian_clamped", figure2(fig2, "cost_clamped")),
        ("figure3_knorm", figure3(fig3)),
        ("figure3_knorm_clamped", figure3(fig3, "cost_clamped")),
    ):
        figures[name] = results / f"{name}.png"
        figure.savefig(figures[name], dpi=110)
    return write_report(fig2, fig3, figures, results, plan)
