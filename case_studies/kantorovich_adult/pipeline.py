"""The whole reproduction: plans, calibrations, figures and the report."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from tqdm import tqdm

from .data import load_race_education
from .experiments import SECRETS, adult_plans, appendix_c_plans, calibrations, counting_plans, figure4_variances
from .figures import counting_figure, figure3, figure4
from .report import assess, write_report

__all__ = ["FULL", "QUICK", "reproduce"]

#: Figure 4 from eps = 0.8 to 5.5 in steps of 0.1; Laplace audits at six eps (two below 0.8, where X itself
#: is not eps-private), Gaussian ones at three (eps, delta).
FULL = {"epsilons": np.round(np.arange(0.8, 5.51, 0.1), 2).tolist(),
        "laplace": [0.3, 0.5, 0.8, 1.0, 2.0, 5.5], "gaussian": [(0.5, 1e-5), (0.9, 1e-3), (2.0, 1e-5)]}
QUICK = {**FULL, "epsilons": [0.8, 1.0, 1.5, 2.0, 3.0, 4.0, 5.5], "laplace": [0.5, 2.0], "gaussian": [(0.5, 1e-5)]}


def reproduce(results: Path, quick: bool = False, progressbar: bool = True, data: Path | None = None) -> Path:
    """Run the plan ``FULL`` (or ``QUICK``) into ``results``; return the path of ``report.md``."""
    plan = QUICK if quick else FULL
    results = Path(results)
    results.mkdir(parents=True, exist_ok=True)
    with tqdm(total=4, desc="kantorovich_adult", unit="step", disable=not progressbar) as bar:
        frame = load_race_education(data)
        appendix, counting, adult = appendix_c_plans(), counting_plans(), adult_plans(frame)
        bar.update()
        curves = {name: figure4_variances(adult[name].plan, plan["epsilons"])
                  for name in ("paper, 14 levels", "paper order, all 16 levels")}
        bar.update()
        settings = [(eps, None) for eps in plan["laplace"]] + list(plan["gaussian"])
        table = calibrations(adult["paper, 14 levels"].plan, settings)
        bar.update()
        paper, full = adult["paper, 14 levels"], adult["paper order, all 16 levels"]
        figures = {}
        for name, figure in (("figure3_adult_plan", figure3(paper.plan, paper.order, SECRETS)),
                             ("figure3_adult_plan_16_levels", figure3(full.plan, full.order, SECRETS)),
                             ("figure4_laplace_variance", figure4(curves)),
                             ("figures1_2_counting_plans", counting_figure(counting))):
            figures[name] = results / f"{name}.png"
            figure.savefig(figures[name], dpi=110)
        bar.update()
    claims = assess(appendix, counting, adult, len(frame), curves, table)
    settings_text = {"data": "adult.data", "Figure 4 eps": f"{plan['epsilons'][0]:g} .. {plan['epsilons'][-1]:g} "
                     f"({len(plan['epsilons'])} values)", "quick": quick}
    return write_report(claims, adult, curves, table, figures, results, settings_text)
