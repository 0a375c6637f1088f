"""The Markdown report: settings, the paper's claims checked in numbers, Table 2 and the attack tables, figures."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pandas as pd

from ...mechanisms.distribution import classical_constant
from ...mechanisms.gaussian import gaussian_delta
from ...reproduce import Claim, claims_table, markdown_table
from .data import QUERY_NAMES
from .experiments import DISTRIBUTION_MECHANISMS, GROUP_SIZE, audited_delta

__all__ = [
    "PAPER_ATTACK",
    "PAPER_CROSSOVER",
    "PAPER_FEMALE_VARIANCE",
    "PAPER_TABLE2",
    "PAPER_TABLE3_EPS5",
    "TABLE2_EPSILONS",
    "TABLE2_TOLERANCE",
    "assess",
    "crossover_gap",
    "write_report",
]

TABLE2_EPSILONS = (0.2, 1.0, 5.0)
#: Table 2 of the paper (delta = 0.001, Delta_p = 0.1, classical c).
PAPER_TABLE2 = {
    "ExpM(G)": (177.28, 34.98, 7.11),
    "EigM(G)": (175.65, 34.87, 4.89),
    "DauM(G)": (69.85, 13.40, 1.24),
    "GroupDP(G)": (7394.67, 1539.93, 293.17),
}
#: A Table 2 cell agrees when measured / paper is within this relative distance of 1 (our data: adult.data only).
TABLE2_TOLERANCE = 0.15
#: Section 5.2: DauM(G) beats the DP Gaussian for Delta_p up to about 0.12 (eps = 1); agreement within 0.02.
PAPER_CROSSOVER, CROSSOVER_TOLERANCE = 0.12, 0.02
#: Appendix C.1: the variance of the count of women at p_I = 0.45 and 0.55.
PAPER_FEMALE_VARIANCE = {0.45: 18.31, 0.55: 18.03}
#: Section 5.3 and Table 3: attack accuracy with no defense, DauM(G) at eps = 5, every mechanism at eps = 0.1.
PAPER_ATTACK = {"none": 0.75, "DauM(G) eps = 5": 0.739, "eps = 0.1": 0.50}
#: Table 3 at eps = 5, delta = 0.001.
PAPER_TABLE3_EPS5 = {"ExpM(G)": 0.539, "EigM(G)": 0.550, "DauM(G)": 0.739}
ATTACK_TOLERANCE = 0.05
#: EigM(G)'s audited delta may exceed the target by this fraction (its basis is only approximately shared).
EIGENVECTOR_SLACK = 0.05
#: An accuracy is consistent with the bound Phi(m / 2) when it exceeds it by less than this many SEs.
BOUND_Z = 3.0


def crossover_gap(sweep: pd.DataFrame, mechanism: str = "DauM(G)", reference: str = "DP(G)") -> float:
    """The Delta_p where ``mechanism``'s expected error (classical) first reaches ``reference``'s (interpolated).

    NaN when it never does within the sweep.

    Examples
    --------
    >>> sweep = pd.DataFrame({"mechanism": ["DauM(G)"] * 2 + ["DP(G)"] * 2, "calibration": ["classical"] * 4,
    ...                       "gap": [0.1, 0.2, 0.1, 0.2], "expected_error": [10.0, 20.0, 15.0, 15.0]})
    >>> round(crossover_gap(sweep), 3)
    0.15
    """
    rows = sweep[sweep["calibration"] == "classical"]
    ours = rows[rows["mechanism"] == mechanism].sort_values("gap")
    theirs = rows[rows["mechanism"] == reference].set_index("gap")["expected_error"]
    gaps = ours["gap"].to_numpy()
    excess = ours["expected_error"].to_numpy() - theirs.loc[gaps].to_numpy()
    above = np.flatnonzero(excess >= 0)
    if above.size == 0 or above[0] == 0:
        return float("nan") if above.size == 0 else float(gaps[0])
    k = above[0]
    return float(gaps[k - 1] + (gaps[k] - gaps[k - 1]) * -excess[k - 1] / (excess[k] - excess[k - 1]))


def _cell(table: pd.DataFrame, mechanism: str, calibration: str, epsilon: float) -> pd.Series:
    rows = table[
        (table["mechanism"] == mechanism)
        & (table["calibration"] == calibration)
        & np.isclose(table["epsilon"], epsilon)
    ]
    return rows.iloc[0]


def _attack_row(attack: pd.DataFrame, mechanism: str, calibration: str, epsilon: float, delta: float) -> pd.Series:
    rows = attack[
        (attack["mechanism"] == mechanism)
        & (attack["calibration"] == calibration)
        & np.isclose(attack["epsilon"], epsilon)
        & np.isclose(attack["delta"], delta)
    ]
    return rows.iloc[0]


def _table2_claims(table2: pd.DataFrame) -> list[Claim]:
    claims = []
    for mechanism, printed in PAPER_TABLE2.items():
        ratios = [
            float(_cell(table2, mechanism, "classical", eps)["expected_error"]) / value
            for eps, value in zip(TABLE2_EPSILONS, printed)
        ]
        claims.append(
            Claim(
                f"Table 2, {mechanism} (classical c): L2 error at eps = 0.2 / 1 / 5 within "
                f"{TABLE2_TOLERANCE:.0%} of the paper (expected error of our calibration)",
                " / ".join(f"{v:g}" for v in printed),
                " / ".join(
                    f"{_cell(table2, mechanism, 'classical', eps)['expected_error']:.2f}" for eps in TABLE2_EPSILONS
                )
                + " (ratios "
                + ", ".join(f"{r:.2f}" for r in ratios)
                + ")",
                all(abs(r - 1) <= TABLE2_TOLERANCE for r in ratios),
            )
        )
    return claims


def _ordering_claims(table2: pd.DataFrame, delta: float) -> list[Claim]:
    epsilons = sorted(table2["epsilon"].unique())
    expected = table2.set_index(["mechanism", "calibration", "epsilon"])["expected_error"]
    order = all(
        expected[("DauM(G)", c, e)] < expected[("EigM(G)", c, e)] <= expected[("ExpM(G)", c, e)] * (1 + 1e-9)
        for c in ("classical", "analytic")
        for e in epsilons
    )
    mean_order = all(
        _cell(table2, "DauM(G)", c, e)["error"] < _cell(table2, "ExpM(G)", c, e)["error"]
        for c in ("classical", "analytic")
        for e in epsilons
    )
    group = min(expected[("GroupDP(G)", "classical", e)] / expected[("ExpM(G)", "classical", e)] for e in epsilons)
    analytic = table2[table2["calibration"] == "analytic"]
    exact = analytic[analytic["mechanism"].isin(["ExpM(G)", "DauM(G)"])]
    worst_exact = float(exact["delta_audited"].max())
    worst_eig = float(analytic[analytic["mechanism"] == "EigM(G)"]["delta_audited"].max())
    largest_eps = max(epsilons)
    classical_delta = gaussian_delta(1.0, largest_eps, largest_eps / classical_constant(delta))
    small = [e for e in epsilons if e <= 1]
    cheaper = all(expected[("ExpM(G)", "analytic", e)] < expected[("ExpM(G)", "classical", e)] for e in small)
    dp = table2[(table2["mechanism"] == "DP(G)") & (table2["calibration"] == "classical")]
    dp_delta = float(dp.loc[np.isclose(dp["epsilon"], 1.0), "delta_audited"].max()) if small else float("nan")
    return [
        Claim(
            "Directional and eigenvector noise help: expected error DauM(G) < EigM(G) <= ExpM(G) at every eps, both "
            "calibrations; and the mean over repetitions DauM(G) < ExpM(G)",
            "Table 2, Figure 2",
            f"eps = {', '.join(f'{e:g}' for e in epsilons)}",
            order and mean_order,
        ),
        Claim(
            f"Group DP (k = {GROUP_SIZE}) is an order of magnitude noisier than ExpM(G)",
            "Table 2: 41x to 44x",
            f"at least {group:.1f}x",
            group >= 10,
        ),
        Claim(
            f"The analytic ExpM(G) and DauM(G) keep delta = {delta:g} at every eps (exact audit, each pair with the "
            "shared covariance Sigma_i)",
            "not in the paper",
            f"largest audited delta {worst_exact:.6g}",
            worst_exact <= delta * (1 + 1e-9),
        ),
        Claim(
            "EigM(G) on the eigenvectors of the pooled covariance (the authors' code): Theorem 4.5 needs them "
            f"shared by every Sigma_theta, so its analytic delta is met only approximately (within "
            f"{EIGENVECTOR_SLACK:.0%})",
            "not in the paper",
            f"largest audited delta {worst_eig:.4g}",
            worst_eig <= delta * (1 + EIGENVECTOR_SLACK),
        ),
        Claim(
            f"Erratum: c = sqrt(2 ln(1.25/delta)) is invalid beyond eps = 1; at eps = {largest_eps:g} a release at "
            "Mahalanobis distance eps / c (ExpM(G) under its translation model) has delta above the target",
            "c used up to eps = 10 without comment",
            f"delta = {classical_delta:.3g}",
            classical_delta > delta,
        ),
        Claim(
            "ExpM(G): the analytic sigma is below the classical one for eps <= 1 and above it at the largest eps "
            "(where the classical c is too small)",
            "not in the paper",
            f"analytic / classical at eps = {largest_eps:g}: "
            f"{expected[('ExpM(G)', 'analytic', largest_eps)] / expected[('ExpM(G)', 'classical', largest_eps)]:.3f}",
            cheaper
            and (expected[("ExpM(G)", "analytic", largest_eps)] > expected[("ExpM(G)", "classical", largest_eps)]),
        ),
        Claim(
            "Differential privacy is no distribution privacy: the record-level DP Gaussian (k = 1) at eps = 1 "
            "leaves the income share exposed beyond delta",
            "Section 5.2 (no number)",
            f"audited delta {dp_delta:.3g}",
            dp_delta > delta,
        ),
    ]


def _sweep_claim(sweep: pd.DataFrame) -> Claim:
    gap = crossover_gap(sweep)
    epsilon = float(sweep["epsilon"].iloc[0])
    return Claim(
        f"Figure 3 (eps = {epsilon:g}): DauM(G) has less error than the DP Gaussian (k = 1) up to "
        f"Delta_p of about {PAPER_CROSSOVER:g} (within {CROSSOVER_TOLERANCE:g})",
        f"Delta_p <= {PAPER_CROSSOVER:g}",
        f"crossover at Delta_p = {gap:.3f}",
        bool(abs(gap - PAPER_CROSSOVER) <= CROSSOVER_TOLERANCE),
    )


def _variance_claim(queries: Mapping[float, np.ndarray]) -> Claim:
    female = QUERY_NAMES.index("female")
    measured, zs = [], []
    for share, printed in PAPER_FEMALE_VARIANCE.items():
        rows = queries[share][:, female]
        variance = rows.var(ddof=1)
        se = variance * np.sqrt(2 / (rows.size - 1))
        measured.append(f"{variance:.2f} ± {se:.2f}")
        zs.append(abs(variance - printed) / se)
    return Claim(
        "Figure 5: variance of the count of women across subsets at p_I = 0.45 / 0.55 (within 3 SE)",
        " / ".join(f"{v:g}" for v in PAPER_FEMALE_VARIANCE.values()),
        " / ".join(measured),
        max(zs) <= 3,
    )


def _attack_claims(attack: pd.DataFrame, delta: float) -> list[Claim]:
    naive, informed = (attack[attack["attacker"] == name] for name in ("naive", "informed"))
    none = naive[naive["mechanism"] == "none"].iloc[0]
    daum = _attack_row(naive, "DauM(G)", "classical", 5.0, delta)
    low = [_attack_row(naive, m, "classical", 0.1, delta)["accuracy"] for m in DISTRIBUTION_MECHANISMS]
    table3 = {m: _attack_row(naive, m, "classical", 5.0, delta) for m in ("ExpM(G)", "EigM(G)")}
    knows = _attack_row(informed, "ExpM(G)", "classical", 5.0, delta)
    gain_z = (knows["accuracy"] - table3["ExpM(G)"]["accuracy"]) / np.hypot(
        knows["accuracy_se"], table3["ExpM(G)"]["accuracy_se"]
    )
    binomial = np.sqrt(attack["best_accuracy"] * (1 - attack["best_accuracy"]) / attack["releases"])
    excess = float(((attack["accuracy"] - attack["best_accuracy"]) / np.fmax(attack["accuracy_se"], binomial)).max())
    return [
        Claim(
            "Attack with no defense (meta-classifier trained on 200 shadow releases)",
            f"about {PAPER_ATTACK['none']:.0%}",
            f"{none['accuracy']:.3f} ± {none['accuracy_se']:.3f} (Phi(m/2) = {none['best_accuracy']:.3f})",
            abs(none["accuracy"] - PAPER_ATTACK["none"]) <= ATTACK_TOLERANCE,
        ),
        Claim(
            "DauM(G), eps = 5 (classical c) barely slows the attack (naive attacker, within 0.05)",
            f"{PAPER_ATTACK['DauM(G) eps = 5']}",
            f"{daum['accuracy']:.3f} ± {daum['accuracy_se']:.3f} (Phi(m/2) = {daum['best_accuracy']:.3f})",
            abs(daum["accuracy"] - PAPER_ATTACK["DauM(G) eps = 5"]) <= ATTACK_TOLERANCE,
        ),
        Claim(
            "At eps = 0.1 every distribution mechanism brings the attack near chance (within 0.05)",
            "about 0.50",
            ", ".join(f"{m} {a:.3f}" for m, a in zip(DISTRIBUTION_MECHANISMS, low)),
            all(abs(a - PAPER_ATTACK["eps = 0.1"]) <= ATTACK_TOLERANCE for a in low),
        ),
        Claim(
            "Table 3, eps = 5, delta = 0.001: attack accuracy against ExpM(G) / EigM(G), naive attacker (shadows "
            "without noise; within 0.05)",
            " / ".join(f"{PAPER_TABLE3_EPS5[m]}" for m in table3),
            " / ".join(f"{row['accuracy']:.3f} ± {row['accuracy_se']:.3f}" for row in table3.values()),
            all(abs(row["accuracy"] - PAPER_TABLE3_EPS5[m]) <= ATTACK_TOLERANCE for m, row in table3.items()),
        ),
        Claim(
            "Not in the paper: an informed attacker (shadows noised like the release) does better than the paper's "
            "numbers; ExpM(G), eps = 5 (more than 3 SE above the naive attacker)",
            f"{PAPER_TABLE3_EPS5['ExpM(G)']}",
            f"informed {knows['accuracy']:.3f} ± {knows['accuracy_se']:.3f}, naive "
            f"{table3['ExpM(G)']['accuracy']:.3f} (Phi(m/2) = {knows['best_accuracy']:.3f})",
            bool(gain_z > 3),
        ),
        Claim(
            f"No attack beats the Bayes accuracy Phi(m/2) by more than {BOUND_Z:g} SE (SE at least the binomial "
            "one of all test releases)",
            "not in the paper",
            f"largest (accuracy - Phi(m/2)) / SE = {excess:.2f}",
            excess <= BOUND_Z,
        ),
    ]


def _delta_claim(attack: pd.DataFrame) -> Claim | None:
    table3 = attack[
        attack["mechanism"].isin(DISTRIBUTION_MECHANISMS)
        & (attack["calibration"] == "classical")
        & (attack["attacker"] == "naive")
    ]
    if table3["delta"].nunique() < 2:
        return None
    over_delta = table3.groupby(["mechanism", "epsilon"])["accuracy"].agg(np.ptp).max()
    over_eps = table3.groupby(["mechanism", "delta"])["accuracy"].agg(np.ptp).max()
    return Claim(
        "Table 3 (naive attacker): delta from 1e-4 to 1e-2 moves the attack much less than eps does "
        "(largest spread over delta below half that over eps)",
        "largest spread over delta 0.030, over eps 0.233",
        f"largest spread over delta {over_delta:.3f}, over eps {over_eps:.3f}",
        over_delta < over_eps / 2,
    )


def assess(
    table2: pd.DataFrame,
    sweep: pd.DataFrame,
    attack: pd.DataFrame,
    queries: Mapping[float, np.ndarray],
    delta: float = 1e-3,
) -> list[Claim]:
    """The paper's claims (and the notes' errata) judged on the run's tables."""
    claims = [
        *_table2_claims(table2),
        *_ordering_claims(table2, delta),
        _sweep_claim(sweep),
        _variance_claim(queries),
        *_attack_claims(attack, delta),
    ]
    extra = _delta_claim(attack)
    return claims + ([extra] if extra is not None else [])


def _errormarkdown_table(table2: pd.DataFrame) -> str:
    rows = []
    for (mechanism, calibration), cells in table2.groupby(["mechanism", "calibration"], sort=False):
        printed = PAPER_TABLE2.get(mechanism) if calibration == "classical" else None
        for _, cell in cells.iterrows():
            paper = ""
            if printed is not None and np.isclose(TABLE2_EPSILONS, cell["epsilon"]).any():
                paper = f"{printed[int(np.argmax(np.isclose(TABLE2_EPSILONS, cell['epsilon'])))]:g}"
            rows.append(
                [
                    mechanism,
                    calibration,
                    f"{cell['epsilon']:g}",
                    f"{cell['error']:.2f} ± {cell['error_se']:.2f}",
                    f"{cell['expected_error']:.2f}",
                    paper,
                    f"{cell['delta_audited']:.3g}",
                ]
            )
    header = ["mechanism", "calibration", "eps", "mean L2 error ± SE", "expected", "paper", "audited delta"]
    return markdown_table(header, rows)


def _attackmarkdown_table(attack: pd.DataFrame) -> str:
    rows = [
        [
            r["mechanism"],
            r["calibration"] if isinstance(r["calibration"], str) else "",
            r["attacker"],
            "" if np.isnan(r["epsilon"]) else f"{r['epsilon']:g}",
            "" if np.isnan(r["delta"]) else f"{r['delta']:g}",
            f"{r['accuracy']:.3f} ± {r['accuracy_se']:.3f}",
            f"{r['best_accuracy']:.3f}",
        ]
        for _, r in attack.iterrows()
    ]
    return markdown_table(["defense", "calibration", "attacker", "eps", "delta", "accuracy ± SE", "Phi(m/2)"], rows)


def write_report(
    table2: pd.DataFrame,
    sweep: pd.DataFrame,
    attack: pd.DataFrame,
    facts: Mapping[str, object],
    figures: Mapping[str, Path],
    out_dir: Path,
    settings: Mapping[str, object],
) -> Path:
    """Write ``out_dir/report.md`` and return its path.

    ``facts`` holds ``files`` (the Adult files read), ``records``, ``positive``, ``sensitivities``, ``record_l2``, ``family`` and ``queries``.
    """
    delta = float(settings["delta"])
    claims = assess(table2, sweep, attack, facts["queries"], delta)
    family = facts["family"]
    means = {share: law.mean for share, law in family.laws.items()}
    no_noise = audited_delta(family, np.zeros((family.dim, family.dim)), 5.0)
    daum5 = table2[
        (table2["mechanism"] == "DauM(G)") & (table2["calibration"] == "analytic") & np.isclose(table2["epsilon"], 5.0)
    ]["expected_error"]
    lines = [
        "# Distribution privacy on UCI Adult: Table 2, Figures 2-5, the attack (Chen & Ohrimenko)",
        "",
        "Settings: " + ", ".join(f"{key} = {value}" for key, value in settings.items()) + ".",
        "",
        f"- Data: {' and '.join(facts['files'])}, {facts['records']} complete records ({facts['positive']} with "
        "income >50K); the paper used adult.data and adult.test (45,222 complete records) and kept 20,000 of them "
        "for the attack. Expect agreement to some per cent, not digits.",
        f"- F on 100 records: {', '.join(QUERY_NAMES)}. Fitted means at p_I = "
        + "; ".join(f"{s:g}: {np.array2string(m, precision=2)}" for s, m in means.items())
        + f"; Delta_E,2 = {family.mean_distance(2):.3f}.",
        "- Per-record sensitivities (range / 100 for the means, 1 for the counts): "
        + ", ".join(f"{v:.2f}" for v in facts["sensitivities"])
        + f"; L2 norm {facts['record_l2']:.4f} "
        f"(the paper's GroupDP(G) uses group size k = {GROUP_SIZE}).",
        "- Classical c = sqrt(2 ln(1.25/delta)) at every eps, as the paper does (proved for eps < 1 only); the "
        "analytic (exact) calibration beside it. Audits: the exact delta at eps of each calibrated release, each "
        "ordered pair (theta_i, theta_j) taken with the shared covariance Sigma_i (Theorems 4.4, 4.5, Algorithm 1).",
        f"- Inherent uncertainty: F released without noise has audited delta {no_noise:.3g} at eps = 5 "
        "(Theorem 4.4 with the exact curve), so the analytic DauM(G) needs little noise there (expected error "
        + (f"{float(daum5.iloc[0]):.2f})." if len(daum5) else "not run).")
        + " With the classical c, DauM(G) adds "
        "none at eps = 10.",
        "- Expected errors are E||N(0, C)||_2 of the calibrated noise (50,000 draws); Table 2 is compared on them, "
        "the means over repetitions carrying Monte Carlo error (large for DauM's one-dimensional noise).",
        "- The attack: records split at random into an auxiliary half (shadows) and a test half; per repetition "
        f"{settings['per_class'][0]} shadow and {settings['per_class'][1]} test subsets per class (the paper's 200 "
        "and 200 in all), standardized features, logistic regression, test releases noised by the defense. The naive "
        "attacker trains on noiseless shadows (this reproduces the paper's Table 3); the informed one noises its "
        "shadows with the defense. Phi(m/2): Bayes accuracy with the pooled covariance plus the noise.",
        "",
        "## The paper's claims on this run",
        "",
        claims_table(claims),
        "",
        "## Figures",
        "",
        *[f"![{name}]({path.relative_to(out_dir).as_posix()})" for name, path in figures.items()],
        "",
        "## Table 2 and Figure 2: L2 error (Delta_p = 0.1, delta = 0.001)",
        "",
        _errormarkdown_table(table2),
        "",
        "## The Bayesian attacker (not in the paper)",
        "",
        f"The posterior odds of p_I = 0.55 against 0.45 after one release, P(y | 0.55) / P(y | 0.45) times the prior "
        f"odds, in closed form (the gallery's ``property_secret`` model), over {facts['bayes']['DauM(G)'].size:,} "
        f"releases drawn half under each share, with no noise and with the analytic DauM(G) at eps = "
        f"{facts['bayes_epsilon']:g}. (eps, delta) privacy does not cap every factor at e^eps: it bounds "
        "P(L > eps) - e^eps P(L' < -eps) by delta, so the share of releases outside the band may exceed delta, "
        "as measured here; what it guarantees is that the factor is rarely far outside.",
        "",
        markdown_table(
            [
                "release",
                "median abs(log factor)",
                "largest abs(log factor)",
                f"share outside e^(+-{facts['bayes_epsilon']:g})",
            ],
            [
                [
                    name,
                    f"{np.median(np.abs(v)):.3f}",
                    f"{np.abs(v).max():.3f}",
                    f"{np.mean(np.abs(v) > facts['bayes_epsilon']):.4f}",
                ]
                for name, v in facts["bayes"].items()
            ],
        ),
        "",
        "## Figure 4 and Table 3: attack accuracy",
        "",
        _attackmarkdown_table(attack),
        "",
    ]
    path = out_dir / "report.md"
    path.write_text("\n".join(lines))
    return path
