"""Posterior inference for the case study: intervals, coverage bookkeeping, agreement with exact methods."""

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from ppdinfer.case_studies.covid_pa import load_monthly
from ppdinfer.case_studies.covid_pa.inference import (
    coverage_study,
    coverage_summary,
    laplace_quantile,
    subproblem_check,
    wem_coordinate_quantile,
)
from ppdinfer.datasets import COVID_PA_DATA
from ppdinfer.mechanisms import DiscreteLaplace

DATA = COVID_PA_DATA  # the table shipped with the package
pytestmark = pytest.mark.filterwarnings("ignore:Numba will use object mode")


@pytest.fixture(scope="module")
def table():
    return load_monthly(DATA)


def test_laplace_quantile_is_the_smallest_covering_radius():
    for epsilon in (0.01, 0.5, 1.0):
        mechanism = DiscreteLaplace(epsilon, 2.0)
        k = laplace_quantile(mechanism, 0.9)
        support = np.arange(-k - 1, k + 2)
        mass = np.exp(mechanism.logpdf(0, support))
        assert mass[1:-1].sum() >= 0.9 > mass[2:-2].sum()


def test_pymc_agrees_with_exact_samplers_on_small_counties(table):
    check = subproblem_check(table, "2020-07", ["Cameron", "Sullivan", "Forest", "Fulton", "Potter"])
    for method in ("rejection", "importance", "pymc"):
        assert np.allclose(check[method], check["exact"], atol=0.12), (method, check)


def test_wem_coordinate_quantile_matches_the_lattice_mechanism():
    from ppdinfer.pymc.distributions import lattice_l2_draws

    draws = lattice_l2_draws(np.zeros((300, 20)), 1.0, 2.0, None, np.random.default_rng(1))
    empirical = np.quantile(np.abs(draws[:, 0]), 0.9)
    assert wem_coordinate_quantile(20, 1.0, 2.0, 0.9) == pytest.approx(empirical, rel=0.2)


def test_coverage_study_bookkeeping(table):
    small = table.subset(counties=["Allegheny", "Erie", "Cameron", "Forest"])
    study = coverage_study(
        small, "2021-01", replicates=2, draws=300, tune=200, progressbar=False, executor=ThreadPoolExecutor(1)
    )  # in this process: no workers to start
    assert len(study) == 2 * 2 * 2 * 4  # releases x epsilons x replicates x counties
    assert (study["bayes_lower"] <= study["bayes_mean"]).all() and (study["bayes_mean"] <= study["bayes_upper"]).all()
    for end in ("bayes_lower", "bayes_upper"):  # intervals of counts are counts (discrete quantiles)
        counts = study[end] * study["population"] / 1e5
        assert np.allclose(counts, np.round(counts), rtol=0, atol=1e-6)
    t = small.month_index("2021-01")
    allegheny = study[study["county"] == "Allegheny"].iloc[0]
    j = small.counties.index("Allegheny")
    assert allegheny["true_rate"] == pytest.approx(small.cases[t, j] * 1e5 / small.population[j])
    summary = coverage_summary(study, small_share=0.25)
    assert set(summary.index.get_level_values("size")) == {"small", "large"}
    row = summary.loc[("laplace", 1.0, "large", "plugin")]
    large = study[(study["county"] == "Allegheny") & (study["epsilon"] == 1.0) & (study["release"] == "laplace")]
    inside = ((large["plugin_lower"] <= large["true_rate"]) & (large["true_rate"] <= large["plugin_upper"])).mean()
    assert row["coverage"] == pytest.approx(inside) and row["n"] == 2
    # at eps = 1 the Bayes interval of a large county is a few counts wide, not thousands
    assert (large["bayes_upper"] - large["bayes_lower"]).max() < 30 * 1e5 / small.population[j]


def test_coverage_summary_gives_counts_and_wilson_intervals():
    import pandas as pd

    rows = [
        {
            "release": "laplace",
            "epsilon": 1.0,
            "replicate": r,
            "county": county,
            "population": population,
            "true_rate": 5.0,
            "bayes_lower": 4.0 if r < 2 else 6.0,
            "bayes_upper": 7.0,
            "plugin_lower": 4.0,
            "plugin_upper": 6.0,
        }
        for county, population in (("a", 10), ("b", 20), ("c", 30))
        for r in range(6)
    ]
    summary = coverage_summary(pd.DataFrame(rows))
    small = summary.loc[("laplace", 1.0, "small", "bayes")]
    assert (small["covered"], small["n"], small["coverage"]) == (2, 6, pytest.approx(1 / 3))
    # Wilson: (p + z^2 / 2n +- z sqrt(p (1 - p) / n + z^2 / 4n^2)) / (1 + z^2 / n), z = 1.96
    assert (small["coverage_low"], small["coverage_high"]) == (
        pytest.approx(0.0968, abs=1e-3),
        pytest.approx(0.7000, abs=1e-3),
    )
    assert summary.loc[("laplace", 1.0, "large", "plugin"), "coverage_high"] == 1.0
