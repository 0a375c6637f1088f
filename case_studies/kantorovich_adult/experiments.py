"""The computations: Appendix C's plans, the counting-query systems, Adult's race -> education plans,
Figure 4's Laplace variances and every calibration next to its exact privacy loss."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ppdinfer.datasets import KANTOROVICH_EDUCATION_ORDER
from ppdinfer.mechanisms import Laplace
from ppdinfer.privacy import posterior_odds_ratio
from ppdinfer.privacy.kantorovich import (
    ABSENT,
    ConditionalPmfs,
    KantorovichPlan,
    counting_query_conditionals,
    empirical_conditionals,
    kantorovich_gaussian,
    kantorovich_laplace,
    kantorovich_plan,
    privacy_delta,
    privacy_loss,
    smallest_gaussian_sigma,
    smallest_laplace_scale,
    support_diameter,
)

__all__ = [
    "APPENDIX_C",
    "COUNTING_SYSTEMS",
    "PAPER_ORDER",
    "SECRETS",
    "TIE_TOLERANCE",
    "AdultPlan",
    "AttackerOdds",
    "adult_plans",
    "appendix_c_plans",
    "attacker_odds",
    "calibrations",
    "counting_plans",
    "figure4_variances",
    "orders",
]

#: Masses of the examples are decimals or thirds: merge cumulative levels closer than this (rounding only).
TIE_TOLERANCE = 1e-12

#: Appendix C (Song et al. 2017, section 3.1): (p, q, support) and the printed plan's nonzeros (x, x') -> mass.
APPENDIX_C = {
    "example 1": (
        ([1 / 3, 1 / 6, 1 / 3, 1 / 6], [1 / 4, 1 / 4, 1 / 6, 1 / 3], [1, 2, 3, 4]),
        {(1, 1): 1 / 4, (1, 2): 1 / 12, (2, 2): 1 / 6, (3, 3): 1 / 6, (3, 4): 1 / 6, (4, 4): 1 / 6},
        1.0,
    ),
    "example 2": (
        ([0.2, 0.225, 0.5, 0.075, 0.0], [0.0, 0.075, 0.5, 0.225, 0.2], [1, 2, 3, 4, 5]),
        {(1, 2): 0.075, (1, 3): 0.125, (2, 3): 0.225, (3, 3): 0.15, (3, 4): 0.225, (3, 5): 0.125, (4, 5): 0.075},
        2.0,
    ),
}

#: Figures 1 and 5: V = 25 users with p = 0.7; Figure 2: V = 10 users with their own p_i (the paper
#: prints none; these are spread over (0, 1)).
COUNTING_SYSTEMS = {
    "binomial V = 25, p = 0.7": [0.7] * 25,
    "Poisson-binomial V = 10": np.linspace(0.05, 0.95, 10).round(2).tolist(),
}

#: The secret pair of Section 4.
SECRETS = ("White", "Asian-Pac-Islander")
#: The paper's 14 education levels in its index order (Figure 3's axis): it drops 5th-6th and Preschool.
PAPER_ORDER = KANTOROVICH_EDUCATION_ORDER


def appendix_c_plans() -> dict[str, KantorovichPlan]:
    """The plans of Appendix C's two examples."""
    return {
        name: kantorovich_plan(*example, tie_tolerance=TIE_TOLERANCE) for name, (example, _, _) in APPENDIX_C.items()
    }


def counting_plans() -> dict[str, dict[str, KantorovichPlan]]:
    """Per counting system, the plans of the pairs (S_1 = 0, S_1 = 1) and (S_1 = 0, S_1 absent)."""
    plans = {}
    for name, probabilities in COUNTING_SYSTEMS.items():
        pmfs = counting_query_conditionals(probabilities, user=0)
        plans[name] = {
            "(0, 1)": pmfs.plan(0, 1, tie_tolerance=1e-10),
            "(0, absent)": pmfs.plan(0, ABSENT, tie_tolerance=1e-10),
        }
    return plans


def orders(frame: pd.DataFrame) -> dict[str, tuple[str, ...]]:
    """The category orders compared: the paper's 14, the paper's order with the two dropped levels
    appended (adult.names' order), and all 16 by education-num."""
    by_number = frame.drop_duplicates("education").assign(number=lambda d: d["education_num"].astype(int))
    return {
        "paper, 14 levels": PAPER_ORDER,
        "paper order, all 16 levels": PAPER_ORDER + ("5th-6th", "Preschool"),
        "education-num, all 16 levels": tuple(by_number.sort_values("number")["education"]),
    }


@dataclass(frozen=True)
class AdultPlan:
    """One order's conditionals P(education | race) and the plan of the pair White / Asian-Pac-Islander."""

    order: tuple[str, ...]
    conditionals: ConditionalPmfs
    records: dict[str, int]
    plan: KantorovichPlan
    diameter: float


def adult_plans(frame: pd.DataFrame) -> dict[str, AdultPlan]:
    """For each order of `orders`: the empirical conditionals, the plan, the support-diameter baseline."""
    found = {}
    for name, order in orders(frame).items():
        pmfs = empirical_conditionals(frame, "race", "education", order, secrets=SECRETS)
        records = {race: int(((frame["race"] == race) & frame["education"].isin(order)).sum()) for race in SECRETS}
        plan = pmfs.plan(*SECRETS, tie_tolerance=TIE_TOLERANCE)
        found[name] = AdultPlan(order, pmfs, records, plan, support_diameter(plan.p, plan.q, plan.support))
    return found


def figure4_variances(plan: KantorovichPlan, epsilons) -> pd.DataFrame:
    """Laplace variance 2 theta^2 by Theorem 1, Theorem 2 and the exact audit, and each one's exact loss."""
    rows = []
    for epsilon in epsilons:
        theorem1 = kantorovich_laplace(plan, epsilon)
        theorem2 = kantorovich_laplace(plan, epsilon, relaxed=True)
        smallest = smallest_laplace_scale(plan, epsilon)
        rows.append(
            {
                "epsilon": epsilon,
                "theorem1": 2 / theorem1.rate**2,
                "theorem2": 2 / theorem2.rate**2,
                "smallest": 2 * smallest**2,
                "loss_theorem1": privacy_loss(plan, theorem1),
                "loss_theorem2": privacy_loss(plan, theorem2),
            }
        )
    return pd.DataFrame(rows)


def calibrations(plan: KantorovichPlan, settings) -> pd.DataFrame:
    """Each calibration at each (epsilon, delta) of ``settings``: its scale, its exact loss (Laplace:
    epsilon; Gaussian: delta at epsilon) and the smallest scale that passes the same audit."""
    rows = []
    for epsilon, delta in settings:
        if delta is None:
            smallest = smallest_laplace_scale(plan, epsilon)
            for label, relaxed in (("Laplace, Theorem 1", False), ("Laplace, Theorem 2", True)):
                mechanism = kantorovich_laplace(plan, epsilon, relaxed=relaxed)
                rows.append(
                    {
                        "calibration": label,
                        "epsilon": epsilon,
                        "delta": np.nan,
                        "scale": 1 / mechanism.rate,
                        "exact": privacy_loss(plan, mechanism),
                        "target": epsilon,
                        "smallest": smallest,
                    }
                )
            continue
        smallest = smallest_gaussian_sigma(plan, epsilon, delta)
        methods = (["classical"] if epsilon < 1 else []) + ["bound", "analytic"]
        for method in methods:
            mechanism = kantorovich_gaussian(plan, epsilon, delta, method=method)
            label = {
                "classical": "Gaussian, Theorem 3(a)",
                "bound": "Gaussian, Theorem 3(b), k = 0.4187",
                "analytic": "Gaussian, analytic (Balle & Wang) at the plan sensitivity",
            }[method]
            rows.append(
                {
                    "calibration": label,
                    "epsilon": epsilon,
                    "delta": delta,
                    "scale": mechanism.sigma,
                    "exact": privacy_delta(plan, mechanism, epsilon),
                    "target": delta,
                    "smallest": smallest,
                }
            )
    return pd.DataFrame(rows)


@dataclass(frozen=True)
class AttackerOdds:
    """The attacker's posterior odds factor r(y) = P(y | White) / P(y | API) over simulated releases."""

    label: str
    scale: float
    epsilon: float
    log_factors: np.ndarray

    @property
    def largest(self) -> float:
        """The largest abs(log r(y)) over the releases: at most eps when the release is eps-Pufferfish private."""
        return float(np.abs(self.log_factors).max())


def attacker_odds(plan: KantorovichPlan, epsilon: float, releases: int, seed: int) -> list[AttackerOdds]:
    """Posterior odds factors of the Bayesian attacker for Theorem 1's Laplace scale at ``epsilon`` and for
    half the smallest scale that meets ``epsilon`` exactly (under-calibrated), over ``releases`` releases of
    each secret's records."""
    rng = np.random.default_rng(seed)
    calibrated = kantorovich_laplace([plan], epsilon)
    under = Laplace(epsilon=1.0, sensitivity=smallest_laplace_scale([plan], epsilon) / 2)
    x = np.concatenate(
        [rng.choice(plan.support, size=releases, p=plan.p), rng.choice(plan.support, size=releases, p=plan.q)]
    )
    found = []
    for label, mechanism in (("Theorem 1", calibrated), ("half the exact scale", under)):
        y = mechanism.release(x.astype(float), random_seed=rng)
        factors = posterior_odds_ratio(np.vstack([plan.p, plan.q]), plan.support, mechanism, y)
        found.append(AttackerOdds(label, 1.0 / mechanism.rate, epsilon, np.log(factors)))
    return found
