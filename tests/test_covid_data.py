"""The COVID-19 case study's data: the prepared monthly table, the JHU loader, the download."""

from __future__ import annotations

import io
import urllib.error
import urllib.request

import numpy as np
import pandas as pd
import pytest

from ppdinfer.case_studies.covid_pa import (
    CovidTable,
    DataError,
    DownloadError,
    download,
    load_jhu_timeseries,
    load_monthly,
)
from ppdinfer.case_studies.covid_pa.data import MONTHLY_FILE, POPULATION_FILE, net_negative
from ppdinfer.case_studies.covid_pa.jhu import CONFIRMED_URL, DEATHS_URL
from ppdinfer.datasets import COVID_PA_DATA

REAL = COVID_PA_DATA  # the table shipped with the package


@pytest.fixture(scope="module")
def table():
    return load_monthly(REAL)


# ---------------------------------------------------------------- the real table


def test_real_table_matches_readme(table):
    assert table.n_months == 24 and table.n_counties == 67
    assert table.months[0] == "2020-03" and table.months[-1] == "2022-02" and table.months[12] == "2021-03"
    assert list(table.counties) == sorted(table.counties)
    assert table.cases.dtype == table.deaths.dtype == np.int64 and table.cases.shape == (24, 67)
    assert table.cases.sum() == 2_757_425 and table.deaths.sum() == 43_216
    for county, cases, deaths in [("Allegheny", 260_712, 3_200), ("Erie", 56_490, 736), ("Cameron", 811, 19)]:
        j = table.counties.index(county)
        assert (table.cases[:, j].sum(), table.deaths[:, j].sum()) == (cases, deaths)
    assert table.population[table.counties.index("Allegheny")] == 1_250_578
    assert np.all(table.deaths >= 0) and np.all(table.cases >= table.deaths) and np.all(table.population > 0)
    assert not table.cases.flags.writeable


def test_death_corrections_are_netted_against_earlier_months(table):
    found = [(a.county, a.series, a.month, a.reported, a.netted) for a in table.adjustments]
    assert found == [
        ("Wayne", "deaths", "2020-07", -1, (("2020-06", 1),)),
        ("Cameron", "deaths", "2021-03", -1, (("2021-01", 1),)),
        ("Cameron", "deaths", "2021-05", -1, (("2021-04", 1),)),
        ("Wyoming", "deaths", "2021-06", -1, (("2021-05", 1),)),
    ]
    # cumulative deaths equal the file's except between a debited month and its correction
    raw = pd.read_csv(REAL / MONTHLY_FILE).pivot(index="month", columns="county", values="cum_deaths_month_end")
    gap = np.cumsum(table.deaths, axis=0) - raw.loc[list(table.months), list(table.counties)].to_numpy()
    lowered = {(table.months[t], table.counties[j]) for t, j in np.argwhere(gap)}
    assert set(gap[gap != 0]) == {-1}
    assert lowered == {
        ("2020-06", "Wayne"),
        ("2021-01", "Cameron"),
        ("2021-02", "Cameron"),
        ("2021-04", "Cameron"),
        ("2021-05", "Wyoming"),
    }
    assert "Wayne (42127) deaths 2020-07: reported -1" in str(table.adjustments[0])


def test_x_and_z(table):
    x = table.x(5)
    assert x.shape == (2, 67) and x.dtype == np.int64
    np.testing.assert_array_equal(x, np.stack([table.cases[5], table.deaths[5]]))
    z0 = table.z(0)
    assert not z0["previous_cases"].any() and not z0["previous_deaths"].any()
    assert z0["total"] == 4_963 and isinstance(z0["total"], int)
    z = table.z("2021-03")
    np.testing.assert_array_equal(z["previous_cases"], table.x(11)[0])
    np.testing.assert_array_equal(z["previous_deaths"], table.x("2021-02")[1])
    assert z["total"] == table.cases[12].sum()
    for bad in (24, -1, "2022-03", True):
        with pytest.raises(ValueError, match="t"):
            table.x(bad)


def test_subset_keeps_previous_month_and_relevant_adjustments(table):
    small = table.subset(counties=["Erie", "Cameron", "Allegheny"], months=["2021-03", "2021-04", "2021-05"])
    assert small.counties == ("Allegheny", "Cameron", "Erie") and small.months == ("2021-03", "2021-04", "2021-05")
    columns = [table.counties.index(name) for name in small.counties]
    np.testing.assert_array_equal(small.cases, table.cases[12:15, columns])
    np.testing.assert_array_equal(small.z(0)["previous_deaths"], table.deaths[11, columns])
    assert small.z(1)["total"] == table.cases[13, columns].sum()
    assert [(a.county, a.month) for a in small.adjustments] == [("Cameron", "2021-03"), ("Cameron", "2021-05")]
    assert table.subset(months=["2020-03"]).z(0)["total"] == 4_963
    with pytest.raises(ValueError, match="consecutive"):
        table.subset(months=["2021-03", "2021-05"])
    with pytest.raises(ValueError, match="Atlantis"):
        table.subset(counties=["Erie", "Atlantis"])


def test_xarray_view(table):
    ds = table.to_xarray()
    assert ds["cases"].dims == ("month", "county") and ds.sizes == {"month": 24, "county": 67}
    assert int(ds["deaths"].sel(county="Erie").sum()) == 736
    assert int(ds["fips"].sel(county="Allegheny")) == 42003
    assert ds.attrs["adjustments"].count("\n") == 3


def test_table_checks_shapes():
    with pytest.raises(ValueError, match="cases must have shape"):
        CovidTable(["2020-03"], ["A"], [1], [10], [[1, 2]], [[0]], [0], [0])


# ---------------------------------------------------------------- errors of load_monthly


@pytest.fixture
def copies(tmp_path):
    """The real files as string frames and a writer putting (monthly, population) into tmp_path."""
    read = dict(dtype=str, keep_default_na=False)
    monthly, population = pd.read_csv(REAL / MONTHLY_FILE, **read), pd.read_csv(REAL / POPULATION_FILE, **read)

    def write(monthly, population):
        monthly.to_csv(tmp_path / MONTHLY_FILE, index=False)
        population.to_csv(tmp_path / POPULATION_FILE, index=False)
        return tmp_path

    return monthly, population, write


def _row(monthly, month, county):
    return monthly.index[(monthly["month"] == month) & (monthly["county"] == county)][0]


def _set(frame, index, **values):
    frame = frame.copy()
    for column, value in values.items():
        frame.loc[index, column] = value
    return frame


def _corruptions():
    """(name, corrupt(monthly, population) -> (monthly, population, file, expected substrings))."""

    def missing_month(m, p):
        return m[m["month"] != "2021-05"], p, MONTHLY_FILE, ["month(s) ['2021-05']"]

    def missing_county_month(m, p):
        return m.drop(index=_row(m, "2021-01", "Erie")), p, MONTHLY_FILE, ["county Erie, month 2021-01"]

    def missing_county(m, p):
        return m[m["county"] != "Forest"], p[p["county"] != "Forest"], POPULATION_FILE, ["66 counties"]

    def duplicate_row(m, p):
        return pd.concat([m, m.loc[[100]]]), p, MONTHLY_FILE, [f"lines [102, {len(m) + 2}]", "duplicate"]

    def non_integer(m, p):
        return _set(m, 200, new_cases="12.5"), p, MONTHLY_FILE, ["line 202", "new_cases '12.5' is not an integer"]

    def empty_count(m, p):
        return _set(m, 300, new_deaths=""), p, MONTHLY_FILE, ["line 302", "new_deaths '' is not an integer"]

    def negative_cases(m, p):
        return _set(m, 400, new_cases="-3"), p, MONTHLY_FILE, ["line 402", "negative new_cases -3"]

    def undocumented_death_correction(m, p):
        i = _row(m, "2021-01", "Erie")
        return _set(m, i, new_deaths="-1"), p, MONTHLY_FILE, [f"line {i + 2}", "Erie, 2021-01", "not a documented"]

    def deaths_exceed_cases(m, p):
        i = _row(m, "2020-05", "Tioga")
        return _set(m, i, new_deaths="2"), p, MONTHLY_FILE, [f"line {i + 2}", "new_deaths 2 exceed new_cases 1"]

    def wrong_cumulative(m, p):
        return (
            _set(m, 500, cum_cases_month_end="1"),
            p,
            MONTHLY_FILE,
            ["line 502", "cum_cases_month_end 1 differs from the running sum"],
        )

    def bad_month(m, p):
        return _set(m, 7, month="2020-13"), p, MONTHLY_FILE, ["line 9", "'2020-13' is not a month"]

    def month_outside(m, p):
        return _set(m, 8, month="2022-03"), p, MONTHLY_FILE, ["line 10", "month outside 2020-03 .. 2022-02"]

    def unknown_county(m, p):
        return _set(m, 9, county="Atlantis"), p, MONTHLY_FILE, ["line 11", "'Atlantis' has no row"]

    def wrong_fips(m, p):
        return _set(m, 10, fips="42999"), p, MONTHLY_FILE, ["line 12", "fips 42999 differs"]

    def population_blank(m, p):
        return m, _set(p, 5, census_estimatesbase_2020_04_01=""), POPULATION_FILE, ["line 7", "is not an integer"]

    def population_zero(m, p):
        return m, _set(p, 6, census_estimatesbase_2020_04_01="0"), POPULATION_FILE, ["line 8", "not positive"]

    def missing_column(m, p):
        return m.drop(columns="new_deaths"), p, MONTHLY_FILE, ["line 1", "missing column(s) ['new_deaths']"]

    return [
        (f.__name__, f)
        for f in (
            missing_month,
            missing_county_month,
            missing_county,
            duplicate_row,
            non_integer,
            empty_count,
            negative_cases,
            undocumented_death_correction,
            deaths_exceed_cases,
            wrong_cumulative,
            bad_month,
            month_outside,
            unknown_county,
            wrong_fips,
            population_blank,
            population_zero,
            missing_column,
        )
    ]


@pytest.mark.parametrize("name, corrupt", _corruptions(), ids=[name for name, _ in _corruptions()])
def test_load_monthly_reports_file_row_and_problem(copies, name, corrupt):
    monthly, population, write = copies
    monthly, population, file, expected = corrupt(monthly, population)
    directory = write(monthly, population)
    with pytest.raises(DataError) as info:
        load_monthly(directory)
    message = str(info.value)
    assert str(directory / file) in message
    for part in expected:
        assert part in message


def test_clean_copy_loads_like_the_original(copies, table):
    copy = load_monthly(copies[2](*copies[:2]))
    np.testing.assert_array_equal(copy.deaths, table.deaths)
    assert copy.adjustments == table.adjustments


def test_missing_directory_and_files(tmp_path, copies):
    with pytest.raises(DataError, match="data directory not found"):
        load_monthly(tmp_path / "nowhere")
    directory = copies[2](*copies[:2])
    (directory / MONTHLY_FILE).unlink()
    with pytest.raises(DataError, match=f"{MONTHLY_FILE}: file not found"):
        load_monthly(directory)
    (directory / POPULATION_FILE).unlink()
    with pytest.raises(DataError, match=f"{POPULATION_FILE}: file not found"):
        load_monthly(directory)


def test_net_negative_goes_back_past_empty_months():
    months, county = ["m0", "m1", "m2", "m3"], (["A", "B"], [1, 2])
    counts = np.array([[2, 1], [0, 1], [0, 0], [-1, -2]])
    netted, adjustments = net_negative(counts, months, *county, "deaths", "src")
    np.testing.assert_array_equal(netted, [[1, 0], [0, 0], [0, 0], [0, 0]])
    assert [a.netted for a in adjustments] == [(("m0", 1),), (("m1", 1), ("m0", 1))]
    assert netted.sum() == counts.sum()
    with pytest.raises(DataError, match="src: county B, month m1: deaths -2 exceeds"):
        net_negative(np.array([[0, 1], [0, -2]]), months, *county, "deaths", "src")


# ---------------------------------------------------------------- JHU time series

_DATES = pd.date_range("2020-01-22", "2020-06-15")
# (FIPS, Admin2, Province_State, population, monthly new cases Jan..Jun, monthly new deaths Jan..Jun)
_JHU_ROWS = [
    ("42003", "Allegheny", "Pennsylvania", 1216045, [0, 0, 300, 1000, 800, 100], [0, 0, 2, 40, 30, 1]),
    ("42001", "Adams", "Pennsylvania", 103009, [0, 0, 5, -2, 20, 7], [0, 0, 1, 0, 2, 0]),
    ("42023", "Cameron", "Pennsylvania", 4447, [0, 0, 3, 3, 2, 0], [0, 0, 2, -1, 1, 0]),
    ("80042", "Out of PA", "Pennsylvania", 0, [0, 0, 90, 90, 90, 0], [0, 0, 9, 9, 9, 0]),
    ("90042", "Unassigned", "Pennsylvania", 0, [0, 0, 70, 70, 70, 0], [0, 0, 7, 7, 7, 0]),
    ("", "", "Pennsylvania", 0, [0, 0, 50, 50, 50, 0], [0, 0, 5, 5, 5, 0]),
    ("39001", "Adams", "Ohio", 27698, [0, 0, 60, 60, 60, 0], [0, 0, 6, 6, 6, 0]),
]


def _daily(monthly):
    """Daily cumulative counts: each month's new count arrives on its 25th (January) or 10th."""
    steps = pd.Series(0, index=_DATES)
    for month, new in enumerate(monthly, start=1):
        steps[pd.Timestamp(2020, month, 25 if month == 1 else 10)] += new
    return steps.cumsum()


def _jhu_frame(kind):
    rows = []
    for k, (fips, admin2, state, population, cases, deaths) in enumerate(_JHU_ROWS):
        meta = {
            "UID": 84000000 + k,
            "iso2": "US",
            "iso3": "USA",
            "code3": 840,
            "FIPS": f"{fips}.0" if fips else "",
            "Admin2": admin2,
            "Province_State": state,
            "Country_Region": "US",
            "Lat": 40.0,
            "Long_": -77.0,
            "Combined_Key": f"{admin2}, {state}, US",
        }
        if kind == "deaths":
            meta["Population"] = population
        daily = _daily(cases if kind == "confirmed" else deaths)
        if kind == "confirmed" and admin2 == "Allegheny":  # a mid-month dip: only month-ends matter
            daily[pd.Timestamp("2020-05-20")] -= 3
        rows.append(meta | {f"{d.month}/{d.day}/{d:%y}": v for d, v in daily.items()})
    return pd.DataFrame(rows)


@pytest.fixture
def jhu(tmp_path):
    def write(confirmed=None, deaths=None):
        paths = tmp_path / "confirmed.csv", tmp_path / "deaths.csv"
        (_jhu_frame("confirmed") if confirmed is None else confirmed).to_csv(paths[0], index=False)
        (_jhu_frame("deaths") if deaths is None else deaths).to_csv(paths[1], index=False)
        return paths

    return write


def test_jhu_rebuilds_the_monthly_table(jhu):
    table = load_jhu_timeseries(*jhu())
    assert table.months == ("2020-03", "2020-04", "2020-05")  # June is incomplete
    assert table.counties == ("Adams", "Allegheny", "Cameron")
    np.testing.assert_array_equal(table.fips, [42001, 42003, 42023])
    np.testing.assert_array_equal(table.population, [103009, 1216045, 4447])
    np.testing.assert_array_equal(table.cases, [[3, 300, 3], [0, 1000, 3], [20, 800, 2]])
    np.testing.assert_array_equal(table.deaths, [[1, 2, 1], [0, 40, 0], [2, 30, 1]])
    assert not table.previous_cases.any() and not table.previous_deaths.any()
    found = [(a.county, a.series, a.month, a.reported, a.netted) for a in table.adjustments]
    assert found == [
        ("Adams", "cases", "2020-04", -2, (("2020-03", 2),)),
        ("Cameron", "deaths", "2020-04", -1, (("2020-03", 1),)),
    ]


def test_jhu_months_argument_sets_previous_counts(jhu):
    table = load_jhu_timeseries(*jhu(), months=["2020-04", "2020-05"])
    np.testing.assert_array_equal(table.z(0)["previous_cases"], [3, 300, 3])
    np.testing.assert_array_equal(table.z(0)["previous_deaths"], [1, 2, 1])
    assert table.z(1)["total"] == 822
    with pytest.raises(ValueError, match="consecutive"):
        load_jhu_timeseries(*jhu(), months=["2020-03", "2020-05"])
    with pytest.raises(DataError, match="no column 6/30/20"):
        load_jhu_timeseries(*jhu(), months=["2020-06"])


def test_jhu_errors(jhu):
    confirmed, deaths = _jhu_frame("confirmed").astype(str), _jhu_frame("deaths").astype(str)
    with pytest.raises(DataError, match="no county rows for Province_State 'Delaware'"):
        load_jhu_timeseries(*jhu(), state="Delaware")
    paths = jhu(deaths=deaths[deaths["Admin2"] != "Cameron"])
    with pytest.raises(DataError, match=r"deaths.csv: no row for county FIPS \[42023\]"):
        load_jhu_timeseries(*paths)
    paths = jhu(confirmed=confirmed.drop(columns="4/30/20"))
    with pytest.raises(DataError, match=r"confirmed.csv: no column 4/30/20 \(the last day of 2020-04\)"):
        load_jhu_timeseries(*paths)
    paths = jhu(confirmed=_set(confirmed, 2, **{"3/31/20": "x"}))
    with pytest.raises(DataError, match="confirmed.csv: line 4: 3/31/20 'x' is not an integer"):
        load_jhu_timeseries(*paths)
    paths = jhu(deaths=_set(deaths, 0, **{"5/31/20": "5000"}))
    with pytest.raises(DataError, match="county Allegheny, month 2020-05: new deaths 4958 exceed new cases 800"):
        load_jhu_timeseries(*paths)


# ---------------------------------------------------------------- download (no network is contacted)


def test_download_fails_clearly_without_network(tmp_path, monkeypatch):
    def unreachable(url, timeout):
        raise urllib.error.URLError("[Errno -3] Temporary failure in name resolution")

    monkeypatch.setattr(urllib.request, "urlopen", unreachable)
    with pytest.raises(DownloadError, match="network is unreachable") as info:
        download(tmp_path / "jhu", timeout=0.5)
    assert CONFIRMED_URL in str(info.value) and DEATHS_URL in str(info.value) and "by hand" in str(info.value)
    assert not any((tmp_path / "jhu").iterdir())


def test_download_writes_both_files(tmp_path, monkeypatch):
    calls = []

    def fake(url, timeout):
        calls.append((url, timeout))
        return io.BytesIO(url.encode())

    monkeypatch.setattr(urllib.request, "urlopen", fake)
    confirmed, deaths = download(tmp_path, timeout=3.0)
    assert calls == [(CONFIRMED_URL, 3.0), (DEATHS_URL, 3.0)]
    assert confirmed.read_text() == CONFIRMED_URL and deaths.name == "time_series_covid19_deaths_US.csv"
    assert sorted(p.name for p in tmp_path.iterdir()) == [confirmed.name, deaths.name]
