"""The COVID-19 tables shipped with the package: their checksums against PROVENANCE.md, equality with the
project's shared copy where it is present, and the rebuild script (month-end counts from JHU's time series and
daily reports, monthly differences, populations) reproducing them."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from ppdinfer.case_studies.covid_pa.data import MONTHLY_FILE, POPULATION_FILE, default_data, load_monthly
from ppdinfer.case_studies.covid_pa.rebuild import (
    CONFIRMED_FILE,
    DEATHS_FILE,
    main,
    monthend_counts,
    monthly_rows,
    population_rows,
    rebuild,
    sha256,
)
from ppdinfer.datasets import COVID_PA_DATA

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data" / "covid_pa"
needs_shared = pytest.mark.skipif(
    not SHARED.is_dir(),
    reason=(
        "compares the shipped COVID-19 tables with the maintainers' copy, which this checkout lacks (optional: "
        "the shipped tables are checked against PROVENANCE.md's checksums anyway); to run it, put the two CSV "
        f"files in {SHARED}, rebuilt from their public sources with "
        "`python -m ppdinfer.case_studies.covid_pa.rebuild --jhu JHU_DIR --census co-est2021-alldata.csv --out "
        f"{SHARED}`"
    ),
)


def _provenance_checksums() -> dict[str, str]:
    text = (COVID_PA_DATA / "PROVENANCE.md").read_text()
    return dict(re.findall(r"^\| (\S+\.csv) \| .* \| ([0-9a-f]{64}) \|$", text, flags=re.MULTILINE))


def test_shipped_files_match_their_provenance_and_load():
    checksums = _provenance_checksums()
    assert set(checksums) == {MONTHLY_FILE, POPULATION_FILE}
    assert sorted(path.name for path in COVID_PA_DATA.iterdir()) == sorted([*checksums, "PROVENANCE.md"])
    for name, checksum in checksums.items():
        assert sha256(COVID_PA_DATA / name) == checksum, name
    table = load_monthly(default_data())
    assert table.source == str(COVID_PA_DATA) and table.cases.shape == (24, 67)
    assert int(table.cases.sum()) == 2_757_425 and int(table.deaths.sum()) == 43_216


@needs_shared
def test_shipped_files_equal_the_shared_copy():
    for name in (MONTHLY_FILE, POPULATION_FILE):
        assert (COVID_PA_DATA / name).read_bytes() == (SHARED / name).read_bytes(), name


def test_the_monthly_file_is_the_differences_of_its_month_end_counts():
    shipped = pd.read_csv(COVID_PA_DATA / MONTHLY_FILE)
    ends = shipped.assign(
        date=(pd.PeriodIndex(shipped["month"], freq="M").end_time.strftime("%Y-%m-%d")),
        cases=shipped["cum_cases_month_end"],
        deaths=shipped["cum_deaths_month_end"],
    )
    base = ends[ends["month"] == "2020-03"].assign(date="2020-02-29", cases=0, deaths=0)
    monthend = pd.concat([base, ends])[["date", "county", "fips", "cases", "deaths"]]
    written = monthly_rows(monthend).to_csv(index=False, lineterminator="\r\n").encode()
    assert written == (COVID_PA_DATA / MONTHLY_FILE).read_bytes()
    assert (monthly_rows(monthend)["new_deaths"] < 0).sum() == 4  # the corrections stay as published


def _time_series(daily: pd.DataFrame, column: str, population: pd.Series | None) -> pd.DataFrame:
    """JHU's wide time-series layout from long daily cumulative counts (plus a row of another state)."""
    wide = daily.pivot(index=["fips", "county"], columns="date", values=column).reset_index()
    wide.columns = [
        c if c in ("fips", "county") else f"{pd.Timestamp(c).month}/{pd.Timestamp(c).day}/{c[2:4]}"
        for c in wide.columns
    ]
    wide = wide.rename(columns={"county": "Admin2"}).assign(Province_State="Pennsylvania", FIPS=wide["fips"] * 1.0)
    other = wide.iloc[:1].assign(Province_State="Ohio", FIPS=39001.0, Admin2="Adams")
    wide = pd.concat([wide, other], ignore_index=True)
    if population is not None:
        wide.insert(0, "Population", wide["fips"].map(population).fillna(1).astype(int))
    return wide.drop(columns="fips")


@needs_shared
def test_month_end_counts_from_the_time_series_and_daily_reports_are_the_shared_ones(tmp_path):
    expected = pd.read_csv(SHARED / "pa_monthend_cumulative.csv")
    # the time series as of 2020-08-18 (the shared daily cumulative counts, JHU's pseudo-counties included)
    daily = pd.read_csv(SHARED / "pa_daily_cumulative_2020-01-22_to_2020-08-18.csv")
    for column, name in [("cases", CONFIRMED_FILE), ("deaths", DEATHS_FILE)]:
        _time_series(daily, column, None).to_csv(tmp_path / name, index=False)
    for month in ["2020-08", "2020-09"]:  # two daily reports in JHU's layout
        end = pd.Period(month, freq="M").end_time
        rows = expected[expected["date"] == f"{end:%Y-%m-%d}"]
        pd.DataFrame(
            {
                "FIPS": rows["fips"],
                "Admin2": rows["county"],
                "Province_State": "Pennsylvania",
                "Country_Region": "US",
                "Confirmed": rows["cases"],
                "Deaths": rows["deaths"],
            }
        ).to_csv(tmp_path / f"{end:%m-%d-%Y}.csv", index=False)
    counts = monthend_counts(tmp_path, "2020-03", "2020-09")
    counties = expected[(expected["fips"] < 80000) & expected["date"].isin(counts["date"])]  # no pseudo-counties
    assert len(counts) == 8 * 67  # 2020-02-29 (the base) .. 2020-09-30
    pd.testing.assert_frame_equal(
        counts,
        counties[["date", "county", "fips", "cases", "deaths"]].sort_values(["date", "county"], ignore_index=True),
        check_dtype=False,
    )


def test_population_rows_and_the_rebuild(tmp_path):
    shipped = pd.read_csv(COVID_PA_DATA / POPULATION_FILE)
    meta = "UID,FIPS,Admin2,Province_State,Population,2/29/20,3/31/20,4/30/20\n"
    rows = list(shipped[["county", "fips", "pop_jhu_lookup_v2019"]].itertuples(index=False))
    (tmp_path / DEATHS_FILE).write_text(
        meta
        + "".join(f"1,{fips}.0,{county},Pennsylvania,{pop},0,0,0\n" for county, fips, pop in rows)
        + "1,80042,Out of PA,Pennsylvania,0,0,0,0\n"
    )
    (tmp_path / CONFIRMED_FILE).write_text(
        meta.replace("Population,", "")
        + "".join(f"1,{fips}.0,{county},Pennsylvania,0,0,{j}\n" for j, (county, fips, _) in enumerate(rows))
    )
    census = [
        "SUMLEV,STATE,COUNTY,STNAME,CTYNAME,ESTIMATESBASE2020,POPESTIMATE2020,POPESTIMATE2021",
        "040,42,000,Pennsylvania,Pennsylvania,13002689,13011844,12964056",
        "050,35,013,New Mexico,Doña Ana County,219561,219998,223337",
    ]
    census += [
        f"050,42,{fips % 1000:03d},Pennsylvania,{county} County,{base},{p20},{p21}"
        for county, fips, base, p20, p21 in shipped[
            ["county", "fips", "census_estimatesbase_2020_04_01", "popestimate_2020_07_01", "popestimate_2021_07_01"]
        ].itertuples(index=False)
    ]
    (tmp_path / "co-est2021-alldata.csv").write_bytes(("\n".join(census) + "\n").encode("latin-1"))
    rows = population_rows(tmp_path / DEATHS_FILE, tmp_path / "co-est2021-alldata.csv")
    assert rows.to_csv(index=False, lineterminator="\r\n").encode() == (COVID_PA_DATA / POPULATION_FILE).read_bytes()
    out = tmp_path / "out"
    written = rebuild(tmp_path, tmp_path / "co-est2021-alldata.csv", out, "2020-03", "2020-04")
    assert written[out / POPULATION_FILE] == sha256(COVID_PA_DATA / POPULATION_FILE)
    monthly = pd.read_csv(out / MONTHLY_FILE)
    assert len(monthly) == 2 * 67 and np.array_equal(monthly[monthly["month"] == "2020-04"]["new_cases"], np.arange(67))
    missing = tmp_path / "no_reports"
    missing.mkdir()
    with pytest.raises(ValueError, match="time_series_covid19_confirmed_US.csv: file not found"):  # the command
        main(["--jhu", str(missing), "--census", str(tmp_path / "co-est2021-alldata.csv"), "--out", str(out)])
