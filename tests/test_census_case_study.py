"""The census noisy-measurement case study: the quick run end to end, the coverage study's executors and
resuming, the fast TopDown against the library's."""

import re
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
import xarray as xr

from ppdinfer.case_studies.census_nmf.analysis import randomized_coverage
from ppdinfer.case_studies.census_nmf.coverage import LocalPool, load_replicates, run_coverage
from ppdinfer.case_studies.covid_pa.results_dir import ResultsError
from ppdinfer.census import synthetic_state
from ppdinfer.reproduce import case_studies

TINY = {"counties": ["Cameron"], "draws": 30, "tune": 30}


def test_quick_run_writes_the_report_with_numbers_and_figures(tmp_path):
    report = case_studies()["census_nmf"].run(tmp_path / "census", True, False)
    assert report == tmp_path / "census" / "report" / "report.md"
    text = report.read_text()
    claims = text.split("## Claims")[1].split("\n\n")[1].splitlines()
    assert claims[0].startswith("| claim | measured | verdict")
    rows = claims[2:]
    assert len(rows) == 14  # 4 coverage claims, 4 of the randomized intervals, 6 RMSE claims
    for row in rows:
        measured, verdict = row.split(" | ")[-2:]
        assert re.search(r"\d\.\d{3}", measured), row
        assert verdict.rstrip(" |") in ("met", "not met"), row
    for figure in ("error_by_size.png", "coverage_by_level.png", "calibration.png"):
        assert (report.parent / figure).stat().st_size > 10_000
        assert f"]({figure})" in text
    assert "RMSE posterior" in text and "majority-minority" in text
    # the full-histogram study: 2 randomized-coverage and 2 RMSE claims per level (County, Tract, Block group),
    # each with a measured number
    full = text.split("## The full histogram")[1].split("\n\n")[2].splitlines()[2:]
    assert len(full) == 3 * 4 and all(re.search(r"\d\.\d{3}", row) for row in full), full


def test_randomized_intervals_cover_ninety_percent_of_truths_drawn_from_a_discrete_posterior():
    # a posterior on a few integers (Poisson 0.7: 50 % at 0): the closed integer range between its 5 %
    # and 95 % quantiles holds more than 90 % of it, the randomized interval exactly 90 %
    rng = np.random.default_rng(3)
    draws = rng.poisson(0.7, size=(20_000, 1))
    truths = rng.poisson(0.7, size=(50_000, 1))
    lo, hi = np.quantile(draws, [0.05, 0.95])
    closed = ((truths >= lo) & (truths <= hi)).mean()
    randomized = np.array([randomized_coverage(draws, np.array([t]))[0] for t in range(8)])  # per true value
    expected = float(np.bincount(truths.ravel(), minlength=8)[:8] @ randomized / truths.size)
    assert closed > 0.95
    assert abs(expected - 0.90) < 0.01
    # a truth the draws never reach is never covered; one inside the interval always is
    assert randomized_coverage(draws, np.array([40]))[0] == 0.0
    assert randomized_coverage(rng.poisson(50, size=(5_000, 1)), np.array([50]))[0] == 1.0


def test_coverage_is_the_same_on_one_and_two_workers_and_resumes(tmp_path):
    with LocalPool(1) as one:
        assert run_coverage(tmp_path / "one", replicates=4, executor=one, progressbar=False, **TINY) == [0, 1, 2, 3]
    with LocalPool(2) as two:
        run_coverage(tmp_path / "two", replicates=4, executor=two, progressbar=False, **TINY)
    first, _ = load_replicates(tmp_path / "one")
    second, _ = load_replicates(tmp_path / "two")
    xr.testing.assert_identical(first, second)
    # an interruption: two replicates lost (one never written, one cut short); a rerun redoes only those
    (tmp_path / "two" / "replicate_0001.nc").unlink()
    (tmp_path / "two" / "replicate_0003.nc").write_bytes(b"cut")
    with ThreadPoolExecutor(2) as pool:
        assert run_coverage(tmp_path / "two", replicates=4, executor=pool, progressbar=False, **TINY) == [1, 3]
        assert run_coverage(tmp_path / "two", replicates=4, executor=pool, progressbar=False, **TINY) == []
    xr.testing.assert_identical(first, load_replicates(tmp_path / "two")[0])
    # another configuration is refused, unless fresh
    with pytest.raises(ResultsError, match="another configuration"):
        run_coverage(tmp_path / "two", replicates=1, executor=None, progressbar=False, **{**TINY, "draws": 31})
    with pytest.raises(ValueError, match="histogram must be one of"):
        run_coverage(tmp_path / "three", replicates=1, progressbar=False, histogram="fine", **TINY)


def test_synthetic_state_is_seeded_and_sized_like_pennsylvania():
    geo, cells = synthetic_state(["Fulton", "Potter"], random_seed=5)
    again = synthetic_state(["Fulton", "Potter"], random_seed=5)[1]
    assert np.array_equal(cells, again) and cells.sum() == 14556 + 16396
    with pytest.raises(ValueError, match="counties"):
        synthetic_state(["Atlantis"])
