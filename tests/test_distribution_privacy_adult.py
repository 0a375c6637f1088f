"""The distribution privacy reproduction (case_studies/distribution_privacy_adult) in its quick variant."""

import math

import numpy as np
import pandas as pd
import pytest
from conftest import require_adult

from ppdinfer.case_studies.distribution_privacy_adult import CASE_STUDY
from ppdinfer.case_studies.distribution_privacy_adult.attack import best_accuracy
from ppdinfer.case_studies.distribution_privacy_adult.data import IncomePools, record_sensitivities, subset_queries
from ppdinfer.case_studies.distribution_privacy_adult.experiments import (
    audited_delta,
    build_mechanisms,
    expected_error,
    fit_family,
    secret_queries,
)
from ppdinfer.case_studies.distribution_privacy_adult.pipeline import adult_files
from ppdinfer.case_studies.distribution_privacy_adult.report import PAPER_TABLE2, assess
from ppdinfer.mechanisms.distribution import DistributionFamily, GaussianLaw, classical_constant


def test_quick_reproduction_writes_the_report_and_its_numbers_hold(tmp_path):
    require_adult()
    pytest.importorskip("sklearn")  # the attack's classifier (optional extra "pufferfish")
    report = CASE_STUDY.run(tmp_path, True, False)
    text = report.read_text()
    used = " and ".join(path.name for path in adult_files())  # adult.test too when it is here
    assert f"- Data: {used}, " in text
    assert "**no**" not in text and "7394.67" in text and "Phi(m/2)" in text
    for name in [
        "figure2_error_vs_epsilon",
        "figure3_error_vs_gap",
        "figure4_attack",
        "figure5_gaussian_fits",
        "bayes_odds_daum",
    ]:
        assert (tmp_path / f"{name}.png").stat().st_size > 10_000
    # The Bayesian attacker: DauM(G) keeps far more releases' odds factors inside e^(+-eps) than no defense.
    rows = {
        line.split("|")[1].strip(): float(line.split("|")[4])
        for line in text.splitlines()
        if line.startswith("| no defense |") or line.startswith("| DauM(G) | 0.")
    }
    assert rows["DauM(G)"] < 0.1 < 0.5 < rows["no defense"]
    table2 = pd.read_csv(tmp_path / "table2_errors.csv")
    sweep = pd.read_csv(tmp_path / "figure3_gap_sweep.csv")
    attack = pd.read_csv(tmp_path / "attack_accuracy.csv", keep_default_na=True)
    expected = table2.set_index(["mechanism", "calibration", "epsilon"])["expected_error"]
    for calibration in ("classical", "analytic"):
        for eps in table2["epsilon"].unique():
            assert expected[("DauM(G)", calibration, eps)] < expected[("ExpM(G)", calibration, eps)]
    analytic = table2[(table2["calibration"] == "analytic") & table2["mechanism"].isin(["ExpM(G)", "DauM(G)"])]
    assert (analytic["delta_audited"] <= 1e-3 * (1 + 1e-9)).all()
    # GroupDP(G), classical: sigma = c k 1.8750 / eps per coordinate, E||.|| = sigma sqrt 2 Gamma(3) / Gamma(5/2).
    sigma = classical_constant(1e-3) * 100 * 1.875 / 1.0
    closed = sigma * math.sqrt(2) * math.gamma(3) / math.gamma(2.5)
    assert math.isclose(expected[("GroupDP(G)", "classical", 1.0)], closed, rel_tol=0.01)
    assert abs(closed / PAPER_TABLE2["GroupDP(G)"][1] - 1) < 0.05
    none = attack[attack["mechanism"] == "none"].iloc[0]
    assert none["accuracy"] > 0.6 and none["best_accuracy"] > 0.7
    low = attack[np.isclose(attack["epsilon"], 0.1) & (attack["calibration"] == "classical")]
    assert (low["accuracy"] < 0.6).all()
    # The claims can fail: make DauM noisier than the DP Gaussian everywhere and the Figure 3 claim fails.
    queries = {share: np.random.default_rng(0).normal(size=(300, 5)) for share in (0.45, 0.55)}  # variance 1
    broken = sweep.copy()
    broken.loc[broken["mechanism"] == "DauM(G)", "expected_error"] *= 100
    claims = {c.statement.split(":")[0]: c.holds for c in assess(table2, broken, attack, queries)}
    assert not claims["Figure 3 (eps = 1)"]
    assert not claims["Figure 5"]


def test_stratified_subsets_and_record_sensitivities():
    pools = IncomePools(np.ones((200, 5)), np.zeros((200, 5)))
    rows = subset_queries(pools, 0.45, 3, random_seed=0)
    assert np.allclose(rows, [0.45, 0.45, 45, 45, 0.45])
    with pytest.raises(ValueError, match="positive pool"):
        subset_queries(IncomePools(np.ones((10, 5)), np.zeros((200, 5))), 0.45, 1)
    # Adult's ranges (age 17-90, education 1-16, hours 1-99) give the notes' sensitivities and L2 1.8750.
    sensitivities = record_sensitivities(np.array([[17, 1, 0, 0, 1], [90, 16, 1, 1, 99]]))
    assert np.allclose(sensitivities, [0.73, 0.15, 1, 1, 0.98])
    assert round(float(np.linalg.norm(sensitivities)), 4) == 1.875


def test_calibrations_audit_and_bayes_bound():
    rng = np.random.default_rng(3)
    pools = IncomePools(rng.normal([45, 11, 15, 20, 45], 3, (400, 5)), rng.normal([37, 9, 40, 40, 38], 3, (400, 5)))
    family = fit_family(secret_queries(pools, 0.1, 200, random_seed=4))
    for eps in (0.2, 1.0):
        built = build_mechanisms(family, eps, 1e-3, "analytic", record_sensitivity=1.875)
        for name in ("ExpM(G)", "DauM(G)"):
            covariance = built[name].covariance if name == "DauM(G)" else built[name].sigma ** 2 * np.eye(5)
            assert audited_delta(family, covariance, eps) <= 1e-3 * (1 + 1e-9)
    # DauM's analytic noise puts the worst pair exactly at the limit: its audit equals delta when it adds noise.
    daum = build_mechanisms(family, 0.2, 1e-3, "analytic", 1.875)["DauM(G)"]
    assert daum.rank == 1 and math.isclose(audited_delta(family, daum.covariance, 0.2), 1e-3, rel_tol=1e-6)
    # E||N(0, s^2 I_5)|| = s sqrt 2 Gamma(3) / Gamma(5/2).
    assert math.isclose(expected_error(4 * np.eye(5)), 2 * math.sqrt(2) * 2 / math.gamma(2.5), rel_tol=0.01)
    two = DistributionFamily({0: GaussianLaw([0.0, 0.0], np.eye(2)), 1: GaussianLaw([3.0, 4.0], np.eye(2))})
    assert math.isclose(best_accuracy(two, np.zeros((2, 2))), 0.5 * (1 + math.erf(2.5 / math.sqrt(2))))
