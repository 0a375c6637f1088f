"""Rebuild the shipped COVID-19 tables (:data:`ppdinfer.datasets.COVID_PA_DATA`) from their public sources.

The month-end cumulative counts of each Pennsylvania county come from the JHU CSSE COVID-19
Data Repository (CC BY 4.0): up to 2020-07 from the US time series
``time_series_covid19_confirmed_US.csv`` and ``time_series_covid19_deaths_US.csv`` as they
stood on 2020-08-18, from 2020-08 on from the daily reports
``csse_covid_19_daily_reports/MM-DD-YYYY.csv`` of each month's last day. The monthly counts
are their differences, written as they are (the four death corrections of -1 stay negative:
:func:`.data.load_monthly` nets them). County rows are those of :mod:`.jhu`. Populations:
the deaths series' ``Population`` column (Census Vintage 2019) and the Census Bureau's county
estimates ``co-est2021-alldata.csv`` (public domain).

From the command line, with the JHU files in one folder::

    python -m ppdinfer.case_studies.covid_pa.rebuild --jhu JHU_DIR --census co-est2021-alldata.csv --out DIR

writes ``pa_monthly_new_by_county.csv`` and ``pa_county_population.csv`` into DIR and prints
their SHA-256 checksums, to compare with ``PROVENANCE.md`` beside the shipped copy.
"""

from __future__ import annotations

import argparse
import hashlib
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from .data import MONTHLY_FILE, POPULATION_FILE, DataError, integers, read_csv
from .jhu import _META, _county_rows, _month_end_counts, county_rows
from .table import month_labels, previous_month

__all__ = ["DAILY_FROM", "main", "monthend_counts", "monthly_rows", "population_rows", "rebuild", "sha256"]

#: The first month whose month-end count comes from a daily report (the earlier ones from the time series).
DAILY_FROM = "2020-08"
#: The time-series files (in the JHU folder) and the daily report of a day, e.g. 08-31-2020.csv.
CONFIRMED_FILE, DEATHS_FILE = "time_series_covid19_confirmed_US.csv", "time_series_covid19_deaths_US.csv"
#: The Census columns kept, under the names they have in the population file.
CENSUS_COLUMNS = {
    "ESTIMATESBASE2020": "census_estimatesbase_2020_04_01",
    "POPESTIMATE2020": "popestimate_2020_07_01",
    "POPESTIMATE2021": "popestimate_2021_07_01",
}


def _daily_name(month: str) -> str:
    end = pd.Period(month, freq="M").end_time
    return f"{end:%m-%d-%Y}.csv"


def monthend_counts(
    jhu_dir: str | Path,
    first: str = "2020-03",
    last: str = "2022-02",
    *,
    state: str = "Pennsylvania",
    daily_from: str = DAILY_FROM,
) -> pd.DataFrame:
    """Cumulative cases and deaths of ``state``'s counties at the end of each month ``previous(first)`` .. ``last``.

    Months before ``daily_from`` are read from the two time series in ``jhu_dir``, the others
    from the daily report of their last day there (``MM-DD-YYYY.csv``). Returns the columns
    date, county, fips, cases, deaths, one row per month-end and county (alphabetical).

    Examples
    --------
    >>> import pathlib, tempfile
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> meta = "UID,FIPS,Admin2,Province_State"
    >>> _ = (folder / CONFIRMED_FILE).write_text(f"{meta},2/29/20,3/31/20\\n1,42023.0,Cameron,Pennsylvania,0,5\\n")
    >>> _ = (folder / DEATHS_FILE).write_text(f"{meta},Population,2/29/20,3/31/20\\n"
    ...                                       "1,42023.0,Cameron,Pennsylvania,4447,0,1\\n")
    >>> _ = (folder / "04-30-2020.csv").write_text("FIPS,Admin2,Province_State,Confirmed,Deaths\\n"
    ...                                            "42023,Cameron,Pennsylvania,9,1\\n")
    >>> monthend_counts(folder, "2020-03", "2020-04", daily_from="2020-04")[["date", "cases", "deaths"]]
             date  cases  deaths
    0  2020-02-29      0       0
    1  2020-03-31      5       1
    2  2020-04-30      9       1
    """
    jhu_dir = Path(jhu_dir)
    months = month_labels(previous_month(first), last)
    series_months = [month for month in months if month < daily_from]
    frames = []
    if series_months:
        for column, name in [("cases", CONFIRMED_FILE), ("deaths", DEATHS_FILE)]:
            rows = _county_rows(jhu_dir / name, state, _META)
            counts = _month_end_counts(rows, jhu_dir / name, series_months)
            frames.append(_long(rows, series_months, counts, column))
    series = frames[0].merge(frames[1], on=["date", "county", "fips"], how="outer") if frames else None
    daily = [_daily(jhu_dir / _daily_name(month), month, state) for month in months if month >= daily_from]
    table = pd.concat([frame for frame in [series, *daily] if frame is not None], ignore_index=True)
    if table[["cases", "deaths"]].isna().any().any():
        missing = table[table[["cases", "deaths"]].isna().any(axis=1)].iloc[0]
        raise DataError(f"{jhu_dir}: {missing['county']} ({missing['fips']}) is in one time series only")
    _same_counties(table)
    return table.astype({"cases": np.int64, "deaths": np.int64}).sort_values(["date", "county"], ignore_index=True)[
        ["date", "county", "fips", "cases", "deaths"]
    ]


def _long(rows: pd.DataFrame, months: Sequence[str], counts: np.ndarray, column: str) -> pd.DataFrame:
    """(month, row) counts as rows date, county, fips, ``column``."""
    dates = [pd.Period(month, freq="M").end_time.strftime("%Y-%m-%d") for month in months]
    return pd.DataFrame(
        {
            "date": np.repeat(dates, len(rows)),
            "county": np.tile(rows["Admin2"].to_numpy(), len(months)),
            "fips": np.tile(rows["fips"].to_numpy(), len(months)),
            column: counts.ravel(),
        }
    )


def _daily(path: Path, month: str, state: str) -> pd.DataFrame:
    """The county rows of one daily report as rows date, county, fips, cases, deaths."""
    rows = county_rows(read_csv(path, ["FIPS", "Admin2", "Province_State", "Confirmed", "Deaths"]), path, state)
    counts = np.column_stack([integers(rows, "Confirmed", path), integers(rows, "Deaths", path)])
    return _long(rows, [month], counts[:, 0][None], "cases").assign(deaths=counts[:, 1])


def _same_counties(table: pd.DataFrame) -> None:
    """Every month-end must list the same counties."""
    counties = table.groupby("date")["fips"].apply(frozenset)
    if counties.nunique() != 1:
        first = counties.iloc[0]
        date, other = next((date, fips) for date, fips in counties.items() if fips != first)
        raise DataError(
            f"the counties of {date} differ from those of {counties.index[0]}: FIPS {sorted(first ^ other)}"
        )


def monthly_rows(monthend: pd.DataFrame) -> pd.DataFrame:
    """The rows of ``pa_monthly_new_by_county.csv`` from month-end cumulative counts (:func:`monthend_counts`).

    The first month-end is the base: each later month's new counts are the differences from the
    month-end before, kept as they are (a reporting correction stays negative).

    Examples
    --------
    >>> monthend = pd.DataFrame({"date": ["2020-02-29", "2020-03-31", "2020-04-30"], "county": "Cameron",
    ...                          "fips": 42023, "cases": [0, 5, 9], "deaths": [0, 2, 1]})
    >>> print(monthly_rows(monthend).to_csv(index=False).strip())
    month,county,fips,new_cases,new_deaths,cum_cases_month_end,cum_deaths_month_end
    2020-03,Cameron,42023,5,2,5,2
    2020-04,Cameron,42023,4,-1,9,1
    """
    wide = monthend.pivot(index="date", columns=["county", "fips"], values=["cases", "deaths"]).sort_index()
    new = wide.diff().iloc[1:].astype(np.int64)
    cumulative = wide.iloc[1:]
    frame = pd.DataFrame(
        {
            "new_cases": new["cases"].stack(["county", "fips"]),
            "new_deaths": new["deaths"].stack(["county", "fips"]),
            "cum_cases_month_end": cumulative["cases"].stack(["county", "fips"]),
            "cum_deaths_month_end": cumulative["deaths"].stack(["county", "fips"]),
        }
    ).reset_index()
    frame.insert(0, "month", frame.pop("date").str[:7])
    return frame.sort_values(["month", "county"], ignore_index=True)


def population_rows(deaths_csv: str | Path, census_csv: str | Path, state: str = "Pennsylvania") -> pd.DataFrame:
    """The rows of ``pa_county_population.csv``: JHU's Population column and the Census county estimates.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (folder / "deaths.csv").write_text("UID,FIPS,Admin2,Province_State,Population,3/31/20\\n"
    ...                                        "1,42023.0,Cameron,Pennsylvania,4447,1\\n")
    >>> _ = (folder / "census.csv").write_text("SUMLEV,STATE,COUNTY,STNAME,CTYNAME,ESTIMATESBASE2020,POPESTIMATE2020,"
    ...                                        "POPESTIMATE2021\\n050,42,023,Pennsylvania,Cameron County,4547,4536,4492\\n")
    >>> print(population_rows(folder / "deaths.csv", folder / "census.csv").to_csv(index=False).strip())
    county,fips,pop_jhu_lookup_v2019,census_estimatesbase_2020_04_01,popestimate_2020_07_01,popestimate_2021_07_01
    Cameron,42023,4447,4547,4536,4492
    """
    deaths_csv, census_csv = Path(deaths_csv), Path(census_csv)
    jhu = _county_rows(deaths_csv, state, [*_META, "Population"])
    frame = pd.DataFrame(
        {"county": jhu["Admin2"], "fips": jhu["fips"], "pop_jhu_lookup_v2019": integers(jhu, "Population", deaths_csv)}
    )
    census = _read_census(census_csv)
    census = census[(census["STNAME"] == state) & (census["COUNTY"].str.strip() != "000")]
    fips = integers(census, "STATE", census_csv) * 1000 + integers(census, "COUNTY", census_csv)
    values = pd.DataFrame(
        {name: integers(census, column, census_csv) for column, name in CENSUS_COLUMNS.items()}, index=fips
    )
    missing = sorted(set(frame["fips"]) - set(values.index))
    if missing:
        raise DataError(f"{census_csv}: no row for county FIPS {missing} of {deaths_csv}")
    return pd.concat([frame.reset_index(drop=True), values.loc[frame["fips"]].reset_index(drop=True)], axis=1)


def _read_census(path: Path) -> pd.DataFrame:
    """The Census file as strings with a ``line`` column (the Census Bureau writes Latin-1)."""
    if not path.is_file():
        raise DataError(f"{path}: file not found")
    frame = pd.read_csv(path, dtype=str, keep_default_na=False, encoding="latin-1")
    missing = [column for column in ["STATE", "COUNTY", "STNAME", *CENSUS_COLUMNS] if column not in frame.columns]
    if missing:
        raise DataError(f"{path}: line 1: missing column(s) {missing}")
    return frame.assign(line=np.arange(2, len(frame) + 2))


def rebuild(
    jhu_dir: str | Path,
    census_csv: str | Path,
    out_dir: str | Path,
    first: str = "2020-03",
    last: str = "2022-02",
    *,
    state: str = "Pennsylvania",
) -> dict[Path, str]:
    """Write the monthly table and the population file into ``out_dir``; returns each file's SHA-256.

    ``jhu_dir`` holds the time series and daily reports :func:`monthend_counts` reads, ``census_csv``
    the Census county estimates (:func:`population_rows`). The files are written as the shipped
    ones are: comma-separated, CRLF line ends.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> meta = "UID,FIPS,Admin2,Province_State"
    >>> _ = (folder / CONFIRMED_FILE).write_text(f"{meta},2/29/20,3/31/20\\n1,42023.0,Cameron,Pennsylvania,0,5\\n")
    >>> _ = (folder / DEATHS_FILE).write_text(f"{meta},Population,2/29/20,3/31/20\\n"
    ...                                       "1,42023.0,Cameron,Pennsylvania,4447,0,1\\n")
    >>> _ = (folder / "census.csv").write_text("STATE,COUNTY,STNAME,ESTIMATESBASE2020,POPESTIMATE2020,"
    ...                                        "POPESTIMATE2021\\n42,023,Pennsylvania,4547,4536,4492\\n")
    >>> written = rebuild(folder, folder / "census.csv", folder / "out", "2020-03", "2020-03")
    >>> print((folder / "out" / MONTHLY_FILE).read_text().splitlines()[1])
    2020-03,Cameron,42023,5,1,5,1
    >>> sorted(path.name for path in written), len(written[folder / "out" / MONTHLY_FILE])
    (['pa_county_population.csv', 'pa_monthly_new_by_county.csv'], 64)
    """
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    tables = {
        out_dir / MONTHLY_FILE: monthly_rows(monthend_counts(jhu_dir, first, last, state=state)),
        out_dir / POPULATION_FILE: population_rows(Path(jhu_dir) / DEATHS_FILE, census_csv, state),
    }
    for path, table in tables.items():
        table.to_csv(path, index=False, lineterminator="\r\n")  # the line ends of the shipped files
    return {path: sha256(path) for path in tables}


def sha256(path: str | Path) -> str:
    """The SHA-256 checksum of a file, in hexadecimal.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "empty.csv"
    >>> _ = path.write_bytes(b"")
    >>> sha256(path)[:16]
    'e3b0c44298fc1c14'
    """
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m ppdinfer.case_studies.covid_pa.rebuild --jhu DIR --census FILE --out DIR`` (see the module docstring).

    Examples
    --------
    >>> import contextlib, io
    >>> with contextlib.redirect_stdout(io.StringIO()) as text, contextlib.suppress(SystemExit):
    ...     main(["--help"])
    >>> "--census" in text.getvalue()
    True
    """
    parser = argparse.ArgumentParser(
        prog="python -m ppdinfer.case_studies.covid_pa.rebuild",
        description="Rebuild the shipped COVID-19 tables from JHU CSSE's files.",
    )
    parser.add_argument(
        "--jhu",
        type=Path,
        required=True,
        help=f"folder with {CONFIRMED_FILE}, {DEATHS_FILE} (as of 2020-08-18) and the daily reports "
        f"MM-DD-YYYY.csv of the month-ends from {DAILY_FROM} on",
    )
    parser.add_argument("--census", type=Path, required=True, help="the Census Bureau's co-est2021-alldata.csv")
    parser.add_argument("--out", type=Path, required=True, help="folder for the two CSV files")
    args = parser.parse_args(argv)
    for path, checksum in rebuild(args.jhu, args.census, args.out).items():
        print(f"{checksum}  {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
