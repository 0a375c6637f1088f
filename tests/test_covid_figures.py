"""Figures and report of the COVID-19 case study, on a tiny synthesis of the real table."""

from __future__ import annotations

import re
import shutil
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pandas as pd
import pytest

from ppdinfer.case_studies.covid_pa import load_monthly
from ppdinfer.case_studies.covid_pa.figures import (
    FIGURES,
    METHOD_DIM,
    extreme_counties,
    figure1,
    relative_errors,
    save_all,
)
from ppdinfer.case_studies.covid_pa.inference import coverage_summary
from ppdinfer.case_studies.covid_pa.report import (
    claim_numbers,
    contraction_by_group,
    error_quantiles,
    signal_correlations,
    size_groups,
    write_report,
)
from ppdinfer.case_studies.covid_pa.synthesis import EPSILONS, FLAGS, METHODS, load_results, run_synthesis
from ppdinfer.datasets import COVID_PA_DATA

REAL = COVID_PA_DATA  # the table shipped with the package
COUNTIES = ["Allegheny", "Erie", "Cameron", "Adams", "Forest"]
MONTHS = ["2020-11", "2020-12", "2021-01"]
REPLICATES = 3


@pytest.fixture(scope="module")
def table():
    return load_monthly(REAL).subset(counties=COUNTIES, months=MONTHS)


@pytest.fixture(scope="module")
def results_dir(table, tmp_path_factory):
    results_dir = tmp_path_factory.mktemp("covid_results")
    run_synthesis(
        table, results_dir, replicates=REPLICATES, seed=7, sweeps=50, progressbar=False, executor=ThreadPoolExecutor(1)
    )
    return results_dir


@pytest.fixture(scope="module")
def results(results_dir):
    return load_results(results_dir)


@pytest.fixture(scope="module")
def report_dir(table, results, tmp_path_factory):
    out_dir = tmp_path_factory.mktemp("covid_report")
    write_report(table, results, out_dir)
    return out_dir


def _cases(results, method, epsilon, replicate, month, county):
    """One synthetic case count, read straight from the results Dataset."""
    return float(
        results["y"].sel(
            {
                METHOD_DIM: method,
                "epsilon": epsilon,
                "replicate": replicate,
                "month": month,
                "series": "cases",
                "county": county,
            }
        )
    )


# ---------------------------------------------------------------- figures


def test_save_all_writes_every_figure(table, results, tmp_path):
    paths = save_all(table, results, tmp_path)
    assert list(paths) == list(FIGURES)
    for path in paths.values():
        assert path.is_file() and path.stat().st_size > 20_000
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_figure_axes(table, results):
    n_eps = len(EPSILONS)
    assert len(FIGURES["figure1_case_rates"](table, results).axes) == 3 * n_eps
    assert len(FIGURES["figure2_relative_error"](table, results).axes) == n_eps
    assert len(FIGURES["figure3_contractions"](table, results).axes) == len(FLAGS)
    assert len(FIGURES["figure4_correlated_counts"](table, results).axes) == 4


def test_figure1_skips_absent_counties(table, results):
    smaller = table.subset(counties=["Allegheny", "Cameron", "Adams"])
    figure = figure1(smaller, results)
    assert len(figure.axes) == 2 * len(EPSILONS)
    assert "Erie" not in " ".join(ax.get_title() for ax in figure.axes)
    with pytest.raises(ValueError, match="none of"):
        figure1(table.subset(counties=["Adams"]), results)


def test_extreme_counties(table):
    assert extreme_counties(table, 5) == ["Allegheny", "Erie", "Adams", "Forest", "Cameron"]
    assert extreme_counties(table, 1) == ["Allegheny", "Cameron"]


# ---------------------------------------------------------------- numbers


def test_relative_error_by_hand(table, results):
    true = table.cases[table.months.index("2020-12"), table.counties.index("Cameron")]
    synthetic = _cases(results, "postprocess", 0.01, 1, "2020-12", "Cameron")
    error = relative_errors(table, results).sel(
        {METHOD_DIM: "postprocess", "epsilon": 0.01, "replicate": 1, "month": "2020-12", "county": "Cameron"}
    )
    assert float(error) == pytest.approx(100 * (synthetic - true) / true)


def test_error_quantiles_by_hand(table, results):
    errors = relative_errors(table, results)
    by_hand = np.median(
        [
            abs(100 * (_cases(results, "wem_prior", 1.0, r, m, c) - x) / x)
            for r in range(REPLICATES)
            for m in MONTHS
            for c in ["Cameron", "Forest"]
            for x in [table.cases[table.months.index(m), table.counties.index(c)]]
        ]
    )
    assert error_quantiles(errors, 0.5, ["Cameron", "Forest"])[1.0]["wem_prior"] == pytest.approx(by_hand)


def test_size_groups(table):
    assert size_groups(table) == {"small": ["Cameron"], "large": ["Allegheny"]}


def test_contraction_frequency_by_hand(results):
    flags = results["contracted_death_zeros"].sel({METHOD_DIM: "postprocess", "epsilon": 0.01})
    by_hand = np.mean(
        [
            flags.sel(replicate=r, month=m, county=c).item()
            for r in range(REPLICATES)
            for m in MONTHS
            for c in ["Forest", "Cameron"]
        ]
    )
    shares = contraction_by_group(results, {"small": ["Forest", "Cameron"]})
    assert shares["contracted_death_zeros"][0.01]["small"] == pytest.approx(by_hand)


def test_signal_correlation_by_hand(table, results):
    t = MONTHS.index("2021-01")
    population = table.population
    correlations = []
    for r in range(REPLICATES):
        synthetic = [_cases(results, "postprocess", 0.01, r, "2021-01", c) for c in table.counties]
        correlations.append(np.corrcoef(np.array(synthetic) / population, table.cases[t - 1] / population)[0, 1])
    numbers = signal_correlations(table.subset(months=["2021-01"]), results, 0.01)
    assert numbers["postprocess"]["previous"] == pytest.approx(np.median(correlations))


def test_claim_numbers_shape(table, results):
    numbers = claim_numbers(table, results)
    assert numbers["run"] == {"replicates": REPLICATES, "months": len(MONTHS), "counties": len(COUNTIES)}
    assert set(numbers["median_error"]) == set(EPSILONS)
    assert set(numbers["signal"]) == set(METHODS)
    assert set(numbers["contractions"]) == set(FLAGS)
    assert all(
        0 <= share <= 1 for flag in FLAGS for eps in EPSILONS for share in numbers["contractions"][flag][eps].values()
    )


def test_claim_numbers_need_every_method(table, results):
    with pytest.raises(ValueError, match="wem_prior"):
        claim_numbers(table, results.sel({METHOD_DIM: ["postprocess", "wem_naive", "wem_congenial"]}))


# ---------------------------------------------------------------- report


def test_report_embeds_figures_and_states_claims(report_dir):
    text = (report_dir / "report.md").read_text(encoding="utf-8")
    for name in FIGURES:
        assert f"]({name}.png)" in text
        assert (report_dir / f"{name}.png").is_file()
    for k in range(1, 5):
        assert f"### Claim {k}:" in text
    assert text.count("**Verdict: ") == 4
    # the seed, sweeps and replicates are the results' own
    assert "JHU CSSE" in text and "| seed | 7 |" in text
    # how each WEM released: exact (naive, few counties) or a chain, with what a chain guarantees
    assert "| WEM release | WEM naive: exact; WEM congenial: chain of 50 sweeps;" in text
    assert "(ε, (1 + e^ε) δ)-TP" in text and "below the checked minimum" in text
    assert f"| replicates | {REPLICATES} per method and ε |" in text and "Unequal replicates" not in text
    assert f"{REPLICATES} replicates, {len(MONTHS)} months, {len(COUNTIES)} counties" in text


def test_report_states_the_numbers(table, results, report_dir):
    text = (report_dir / "report.md").read_text(encoding="utf-8")
    worst = claim_numbers(table, results)["small_worst"][0.01]
    stated = re.search(r"is ([\d,.]+) % for post-processing and ([\d,.]+) % for the prior-congenial WEM", text)
    assert stated is not None
    post, prior = (float(value.replace(",", "")) for value in stated.groups())
    assert post == pytest.approx(worst["postprocess"], rel=5e-3, abs=0.5)
    assert prior == pytest.approx(worst["wem_prior"], rel=5e-3, abs=0.5)


def test_report_says_when_some_method_has_fewer_replicates(table, results_dir, tmp_path):
    unfinished = tmp_path / "results"
    shutil.copytree(results_dir, unfinished)
    (unfinished / "wem_prior_eps0.01_rep002.nc").unlink()
    text = write_report(table, load_results(unfinished), tmp_path / "report", figures={}).read_text(encoding="utf-8")
    assert f"| replicates | {REPLICATES} per method and ε, except WEM" in text
    assert re.search(r"\*\*Unequal replicates\.\*\* .*ε = 0.01: 2, of 3\)", text)


def test_report_refuses_results_of_another_table(table, results, tmp_path):
    with pytest.raises(ValueError, match="another table \\(counties .* in the results, Allegheny, Erie given"):
        write_report(table.subset(counties=["Allegheny", "Erie"]), results, tmp_path, figures={})


def _study(covered: dict[str, int], replicates: int) -> pd.DataFrame:
    """A coverage study by hand: per county, the Bayes interval covers the truth in its first ``covered`` replicates."""

    rows = []
    for population, (county, hits) in enumerate(covered.items(), start=1):
        for r in range(replicates):
            inside = r < hits
            rows.append(
                {
                    "release": "laplace",
                    "epsilon": 1.0,
                    "replicate": r,
                    "county": county,
                    "population": 1000 * population,
                    "true_rate": 5.0,
                    "bayes_mean": 5.0,
                    "bayes_lower": 4.0 if inside else 6.0,
                    "bayes_upper": 7.0,
                    "plugin": 5.0,
                    "plugin_lower": 4.0,
                    "plugin_upper": 6.0,
                }
            )
    return pd.DataFrame(rows)


def test_report_gives_coverage_with_its_cases_interval_and_caveat(table, results, tmp_path):
    import pandas as pd

    summary = coverage_summary(_study({"Cameron": 2, "Adams": 6, "Allegheny": 6}, replicates=6))
    check = pd.DataFrame(
        {"true": [3], "release": [4], "exact": [3.1], "pymc": [3.2]}, index=pd.Index(["Cameron"], name="county")
    )
    config = {
        "month": "2021-01",
        "check_month": "2020-07",
        "seed": 11,
        "replicates": 6,
        "epsilons": [1.0],
        "concentration": 1000.0,
        "counties": ["Adams", "Allegheny", "Cameron"],
        "version": "0.1.0",
    }
    text = write_report(table, results, tmp_path, figures={}, inference=(summary, check, config)).read_text()
    # Cameron is the small county: 2 of 6 covered, Wilson 95 % interval 0.097 to 0.700
    assert "| laplace | 1 | small | bayes | 0.333 | 0.10 to 0.70 | 6 |" in text
    assert "| laplace | 1 | large | plugin | 1.000 | 0.61 to 1.00 | 6 |" in text
    assert "**Few cases.** Some coverages rest on only 6 cases" in text
    assert (
        "Run: month 2021-01, seed 11, 6 replicates, ε = 1, prior concentration 1000, 3 counties "
        "(Adams, Allegheny, Cameron); check month 2020-07"
    ) in text
