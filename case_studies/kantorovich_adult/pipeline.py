"""The whole reproduction: plans, calibrations, figures and the report."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from tqdm import tqdm

from ...privacy import plot_prior_posterior_odds
from .data import load_race_education
from .experiments import (
    SECRETS,
    adult_plans,
    appendix_c_plans,
    attacker_odds,
    calibrations,
    counting_plans,
    figure4_variances,
)
from .figures import counting_figure, figure3, figure4
from .report import assess, attacker_claims, write_report

__all__ = ["FULL", "QUICK", "reproduce"]

#: Figure 4 from eps = 0.8 to 5.5 in steps of 0.1; Laplace audits at six eps (two below 0.8, where X itself
#: is not eps-private), Gaussian ones at three (eps, delta).
FULL = {
    "epsilons": np.round(np.arange(0.8, 5.51, 0.1), 2).tolist(),
    "laplace": [0.3, 0.5, 0.8, 1.0, 2.0, 5.5],
    "gaussian": [(0.5, 1e-5), (0.9, 1e-3), (2.0, 1e-5)],
}
QUICK = {**FULL, "epsilons": [0.8, 1.0, 1.5, 2.0, 3.0, 4.0, 5.5], "laplace": [0.5, 2.0], "gaussian": [(0.5, 1e-5)]}
#: The Bayesian attacker: releases per secret at eps = 0.5 (below X's own 0.772, so noise is needed).
ATTACK = {"epsilon": 0.5, "releases": {False: 5000, True: 500}, "seed": 2017}


def reproduce(results: Path, quick: bool = False, progressbar: bool = True, data: Path | None = None) -> Path:
    """Run the plan ``FULL`` (or ``QUICK``) into ``results``; return the path of ``report.md``."""
    plan = QUICK if quick else FULL
    results = Path(results)
    results.mkdir(parents=True, exist_ok=True)
    with tqdm(total=4, desc="kantorovich_adult", unit="step", disable=not progressbar) as bar:
        frame = load_race_education(data)
        appendix, counting, adult = appendix_c_plans(), counting_plans(), adult_plans(frame)
        bar.update()
        curves = {
            name: figure4_variances(adult[name].plan, plan["epsilons"])
            for name in ("paper, 14 levels", "paper order, all 16 levels")
        }
        bar.update()
        settings = [(eps, None) for eps in plan["laplace"]] + list(plan["gaussian"])
        table = calibrations(adult["paper, 14 levels"].plan, settings)
        bar.update()
        paper, full = adult["paper, 14 levels"], adult["paper order, all 16 levels"]
        attacks = attacker_odds(paper.plan, ATTACK["epsilon"], ATTACK["releases"][quick], ATTACK["seed"])
        figures = {}
        for name, figure in (
            ("figure3_adult_plan", figure3(paper.plan, paper.order, SECRETS)),
            ("figure3_adult_plan_16_levels", figure3(full.plan, full.order, SECRETS)),
            ("figure4_laplace_variance", figure4(curves)),
            ("figures1_2_counting_plans", counting_figure(counting)),
            *(
                (
                    f"attacker_odds_{k}",
                    plot_prior_posterior_odds(np.exp(attack.log_factors), attack.epsilon, max_lines=500),
                )
                for k, attack in enumerate(attacks, start=1)
            ),
        ):
            figures[name] = results / f"{name}.png"
            figure.savefig(figures[name], dpi=110)
        bar.update()
    claims = assess(appendix, counting, adult, len(frame), curves, table) + attacker_claims(attacks)
    settings_text = {
        "data": "adult.data",
        "Figure 4 eps": f"{plan['epsilons'][0]:g} .. {plan['epsilons'][-1]:g} ({len(plan['epsilons'])} values)",
        "quick": quick,
    }
    return write_report(claims, adult, curves, table, figures, results, settings_text)
