"""The census noisy-measurement case study: the quick run end to end (its block step's numbers against the truth),
the coverage study's executors and resuming, a block truth out of the file's order refused."""

import dataclasses
import json
import re
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pandas as pd
import pytest
import xarray as xr

from ppdinfer.case_studies.census_nmf.analysis import randomized_coverage
from ppdinfer.case_studies.census_nmf.block_coverage import block_coverage_summary
from ppdinfer.case_studies.census_nmf.blocks import block_errors, block_file, district_errors
from ppdinfer.case_studies.census_nmf.coverage import LocalPool, load_replicates, run_coverage
from ppdinfer.case_studies.census_nmf.pipeline import QUICK, SEED, block_coverage_step, blocks_step
from ppdinfer.case_studies.covid_pa.results_dir import ResultsError
from ppdinfer.census import synthetic_pl94_state, synthetic_state
from ppdinfer.reproduce import case_studies

TINY = {"counties": ["Cameron"], "draws": 30, "tune": 30}


def test_quick_run_writes_the_report_with_numbers_and_figures(tmp_path):
    report = case_studies()["census_nmf"].run(tmp_path / "census", True, False)
    assert report == tmp_path / "census" / "report" / "report.md"
    text = report.read_text()
    claims = text.split("## Claims")[1].split("\n\n")[1].splitlines()
    assert claims[0].startswith("| claim | measured | verdict")
    rows = claims[2:]
    # 4 coverage claims, 4 of the randomized intervals, 6 RMSE claims; then the blocks' 5 RMSE claims (4 size
    # classes and all), 4 coverage claims, 2 district claims, the ESS and the R-hat claims
    assert len(rows) == 14 + 13
    for row in rows:
        measured, verdict = row.split(" | ")[-2:]
        assert re.search(r"\d\.\d", measured), row
        assert verdict.rstrip(" |") in ("met", "not met"), row
    block_rows = rows[14:]
    assert all("block" in row or "district" in row or "R-hat" in row for row in block_rows), block_rows
    assert "smallest bulk ESS at least 400" in block_rows[-2] and "R-hat at most 1.01" in block_rows[-1]
    for figure in ("error_by_size.png", "coverage_by_level.png", "calibration.png", "block_errors.png",
                   "district_intervals.png"):  # fmt: skip
        assert (report.parent / figure).stat().st_size > 10_000
        assert f"]({figure})" in text
    assert "RMSE posterior" in text and "majority-minority" in text
    # the full-histogram study: 2 randomized-coverage and 2 RMSE claims per level (County, Tract, Block group),
    # each with a measured number
    full = text.split("## The full histogram")[1].split("\n\n")[2].splitlines()[2:]
    assert len(full) == 3 * 4 and all(re.search(r"\d\.\d{3}", row) for row in full), full
    _check_blocks(tmp_path / "census")


def _check_blocks(results):
    """The quick run's block step: its files, their numbers against the truth, reuse on a rerun."""
    blocks = pd.read_csv(results / "blocks" / "blocks.csv.gz", dtype={"block": str})
    # the truth, drawn again and matched by geocode (not by position): a misaligned truth fails here
    state = synthetic_pl94_state(QUICK["block_counties"], random_seed=SEED)
    ids = state.geography.ids[state.geography.leaves].astype(str)
    totals = pd.Series(np.asarray(state.persons.sum(axis=1)).ravel(), index=ids)
    assert len(blocks) == len(ids) and np.array_equal(blocks["truth"], totals[blocks["block"]].to_numpy())
    # a block with no housing unit and no facility holds nobody, in truth and in every draw
    empty = blocks[blocks["empty"]]
    assert len(empty) > 10 and (empty["truth"] == 0).all() and (empty["post_mean"] == 0).all()
    errors = block_errors(blocks)
    assert errors.loc["all", "ratio_post_mean"] < 0.3  # the exposure prior and the sums above: far below GLS
    assert 20 < errors.loc["all", "rmse_gls"] < 100  # a block total's sd is tens of persons by GLS
    assert errors.loc["all", "rmse_topdown"] < errors.loc["all", "rmse_gls"]
    # the closed 90 % interval covers most blocks; the randomized one close to 90 % (3 short replicates: loosely)
    assert 0.7 < blocks["post_closed"].mean() <= 1.0
    districts = district_errors(pd.read_csv(results / "blocks" / "districts.csv"))
    assert districts.loc["posterior", "rmse_total"] < districts.loc["gls", "rmse_total"]
    assert 0.5 < districts.loc["posterior", "coverage_total"] <= 1.0
    data, config = load_replicates(results / "coverage_blocks")
    summary = block_coverage_summary(data, config)
    assert summary.loc["all", "replicates"] == QUICK["block_replicates"] and summary.loc["all", "blocks"] == len(ids)
    assert 0.75 < summary.loc["all", "coverage_randomized"] < 1.0 and summary.loc["all", "ratio"] < 0.3
    info = json.loads((results / "blocks" / "info.json").read_text())
    for name in ("block_totals", "block_vap_cells", "districts"):
        mixing = info["diagnostics"][name]
        assert 1 < mixing["ess_min"] <= mixing["ess_median"] and mixing["rhat_max"] > 1.0, (name, mixing)
    # a rerun reuses the finished block fit and replicates; another configuration is refused
    files = [results / "blocks" / "info.json", *sorted((results / "coverage_blocks").glob("replicate_*.nc"))]
    stamps = [path.stat().st_mtime_ns for path in files]
    assert len(files) == 1 + QUICK["block_replicates"]
    blocks_step(results, QUICK)
    with ThreadPoolExecutor(1) as pool:
        block_coverage_step(results, QUICK, executor=pool, progressbar=False)
    assert [path.stat().st_mtime_ns for path in files] == stamps
    with pytest.raises(ResultsError, match="another configuration"):
        blocks_step(results, {**QUICK, "block_draws": 11})


def test_a_block_truth_out_of_the_files_order_is_refused(tmp_path):
    # people moved one block along: some land in a block with no housing unit and no facility, which the file's
    # hhgq upper bounds say holds nobody
    state = synthetic_pl94_state(["Cameron"], random_seed=SEED)
    assert block_file(state, tmp_path / "a", release_seed=1).truth.sum() == state.persons.sum()
    rolled = dataclasses.replace(state, persons=state.persons[np.roll(np.arange(state.persons.shape[0]), 1)])
    with pytest.raises(RuntimeError, match="not in the file's order"):
        block_file(rolled, tmp_path / "b", release_seed=1)


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
