"""Rebuild the monthly county table from JHU CSSE's public US time series, and fetch those files.

JHU CSSE COVID-19 Data Repository (CC BY 4.0), ``csse_covid_19_data/csse_covid_19_time_series/``:
``time_series_covid19_confirmed_US.csv`` and ``time_series_covid19_deaths_US.csv``, one row per
US county or pseudo-county (columns UID, iso2, iso3, code3, FIPS, Admin2, Province_State,
Country_Region, Lat, Long_, Combined_Key, Population in the deaths file only) and one cumulative
count per day (columns m/d/yy).

County rows. A row is a county when Admin2 is neither empty, "Unassigned" nor "Out of ..." and
its FIPS is a county code: a whole number SSCCC with state part 01 .. 79 and county part > 0.
This drops JHU's "Out of <state>" (FIPS 800SS) and "Unassigned" (900SS) rows and rows without
a FIPS (e.g. correctional facilities in some states), whose cases belong to no county.

Monthly counts are differences of month-end cumulative counts; the cumulative count before a
file's first date is taken as 0 (the series start on 2020-01-22, before Pennsylvania's first
case). Negative differences (reporting corrections, in cases or deaths) are netted against the
county's earlier months as in :mod:`.data` and recorded as adjustments.
"""

from __future__ import annotations

import http.client
import re
import shutil
import urllib.error
import urllib.request
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path

import numpy as np
import pandas as pd

from ...validation import positive_finite
from .data import DataError, integers, net_negative, no_duplicates, read_csv
from .table import CovidTable, month_labels, previous_month

__all__ = ["CONFIRMED_URL", "DEATHS_URL", "DownloadError", "download", "load_jhu_timeseries"]

_BASE = "https://raw.githubusercontent.com/CSSEGISandData/COVID-19/master/csse_covid_19_data/csse_covid_19_time_series/"
CONFIRMED_URL = _BASE + "time_series_covid19_confirmed_US.csv"
DEATHS_URL = _BASE + "time_series_covid19_deaths_US.csv"
FIRST_MONTH = "2020-03"

_DATE = re.compile(r"\d{1,2}/\d{1,2}/\d{2}")
_META = ["FIPS", "Admin2", "Province_State"]


class DownloadError(OSError):
    """The JHU files could not be fetched; the message says how to get them by hand."""


def load_jhu_timeseries(
    confirmed_csv: str | Path,
    deaths_csv: str | Path,
    state: str = "Pennsylvania",
    *,
    months: Sequence[str] | None = None,
) -> CovidTable:
    """Monthly new cases and deaths of ``state``'s counties from JHU's US time-series files.

    Parameters
    ----------
    confirmed_csv, deaths_csv : ``time_series_covid19_confirmed_US.csv`` and ``..._deaths_US.csv``.
    state : the Province_State to keep.
    months : consecutive 'YYYY-MM' labels; by default 2020-03 .. the last month whose last day
        is a column of both files.

    Returns
    -------
    CovidTable with counties in alphabetical order, populations from the deaths file's
    Population column and the previous counts of ``months[0]`` from the same files.
    """
    confirmed_csv, deaths_csv = Path(confirmed_csv), Path(deaths_csv)
    confirmed = _county_rows(confirmed_csv, state, _META)
    deaths = _county_rows(deaths_csv, state, [*_META, "Population"])
    _same_counties(confirmed, deaths, confirmed_csv, deaths_csv)
    deaths = deaths.set_index("fips").loc[confirmed["fips"]].reset_index()
    population = integers(deaths, "Population", deaths_csv)
    if np.any(population <= 0):
        row = deaths[population <= 0].iloc[0]
        raise DataError(
            f"{deaths_csv}: line {row['line']}: Population {row['Population']} of {row['Admin2']} is not positive"
        )
    months = _months(months, confirmed, deaths)
    start = min(_first_date(confirmed), _first_date(deaths)).strftime("%Y-%m")
    history = month_labels(min(start, previous_month(months[0])), months[-1])
    counties, fips = list(confirmed["Admin2"]), confirmed["fips"].to_numpy()
    source = f"{confirmed_csv}; {deaths_csv} ({state})"
    new = {}
    adjustments = []
    for series, frame, path in [("cases", confirmed, confirmed_csv), ("deaths", deaths, deaths_csv)]:
        counts = np.diff(_month_end_counts(frame, path, history), axis=0, prepend=0)
        new[series], made = net_negative(counts, history, counties, fips, series, source)
        adjustments += made
    zeros = np.zeros(len(counties), dtype=np.int64)
    table = CovidTable(
        history,
        counties,
        fips,
        population,
        new["cases"],
        new["deaths"],
        zeros,
        zeros,
        sorted(adjustments, key=lambda a: (a.month, a.county, a.series)),
        source,
    ).subset(months=months)
    _check_order(table)
    return table


def _county_rows(path: Path, state: str, columns: list[str]) -> pd.DataFrame:
    """The county rows of ``state`` in a time-series file, alphabetical, with an int ``fips`` column."""
    frame = read_csv(path, columns)
    if not _dates(frame):
        raise DataError(f"{path}: line 1: no date columns m/d/yy")
    return county_rows(frame, path, state)


def county_rows(frame: pd.DataFrame, path: Path, state: str) -> pd.DataFrame:
    """The county rows of ``state`` (module docstring) of a JHU file read by :func:`.data.read_csv`, alphabetical,
    with an int ``fips`` column (time series and daily reports alike: both have FIPS, Admin2, Province_State)."""
    frame = frame[frame["Province_State"].str.strip() == state]
    code = pd.to_numeric(frame["FIPS"].str.strip(), errors="coerce")
    admin = frame["Admin2"].str.strip()
    county = (
        code.notna()
        & (code % 1 == 0)
        & (code >= 1000)
        & (code < 80000)
        & (code % 1000 > 0)
        & (admin != "")
        & (admin != "Unassigned")
        & ~admin.str.startswith("Out of")
    )
    if not county.any():
        raise DataError(f"{path}: no county rows for Province_State {state!r}")
    frame = frame[county].assign(Admin2=admin[county], fips=code[county].astype(np.int64))
    no_duplicates(frame, ["fips"], path)
    return frame.sort_values(["Admin2", "fips"]).reset_index(drop=True)


def _same_counties(confirmed: pd.DataFrame, deaths: pd.DataFrame, confirmed_csv: Path, deaths_csv: Path) -> None:
    for frame, path, other, other_path in [
        (confirmed, confirmed_csv, deaths, deaths_csv),
        (deaths, deaths_csv, confirmed, confirmed_csv),
    ]:
        missing = sorted(set(other["fips"]) - set(frame["fips"]))
        if missing:
            raise DataError(f"{path}: no row for county FIPS {missing} present in {other_path}")


def _dates(frame: pd.DataFrame) -> dict[pd.Timestamp, str]:
    """The date columns of a JHU file, by date."""
    return {
        pd.Timestamp(datetime.strptime(column, "%m/%d/%y")): column
        for column in frame.columns
        if _DATE.fullmatch(column)
    }


def _first_date(frame: pd.DataFrame) -> pd.Timestamp:
    return min(_dates(frame))


def _months(months: Sequence[str] | None, *frames: pd.DataFrame) -> list[str]:
    """The requested months, checked to be consecutive; by default 2020-03 .. the last complete month."""
    if months is None:
        ends = set.intersection(*({date for date in _dates(frame) if date.is_month_end} for frame in frames))
        if not ends or max(ends).strftime("%Y-%m") < FIRST_MONTH:
            raise DataError(f"the files have no month-end column from {FIRST_MONTH} on")
        return month_labels(FIRST_MONTH, max(ends).strftime("%Y-%m"))
    months = [str(month) for month in ([months] if isinstance(months, str) else months)]
    try:
        expected = month_labels(months[0], months[-1]) if months else []
    except ValueError as err:
        raise ValueError(f"months must be labels 'YYYY-MM', got {months!r}") from err
    if not months or expected != months:
        raise ValueError(f"months must be consecutive labels 'YYYY-MM' in order, got {months!r}")
    start = max(_first_date(frame) for frame in frames)
    if pd.Period(months[0], freq="M").end_time.normalize() < start:
        raise DataError(f"month {months[0]} ends before the files' first date {start:%Y-%m-%d}")
    return months


def _month_end_counts(frame: pd.DataFrame, path: Path, months: list[str]) -> np.ndarray:
    """Cumulative counts (len(months), rows) at each month's last day; 0 before the file's first date."""
    dates, first = _dates(frame), _first_date(frame)
    counts = np.zeros((len(months), len(frame)), dtype=np.int64)
    for t, month in enumerate(months):
        end = pd.Period(month, freq="M").end_time.normalize()
        if end < first:
            continue
        if end not in dates:
            raise DataError(f"{path}: no column {end.month}/{end.day}/{end:%y} (the last day of {month})")
        counts[t] = integers(frame, dates[end], path)
        if np.any(counts[t] < 0):
            row = frame[counts[t] < 0].iloc[0]
            raise DataError(
                f"{path}: line {row['line']}: {dates[end]} {row[dates[end]]} of {row['Admin2']} "
                "is a negative cumulative count"
            )
    return counts


def _check_order(table: CovidTable) -> None:
    """Cases >= deaths in every county and month of the table, including the previous month."""
    checks = [(previous_month(table.months[0]), table.previous_cases, table.previous_deaths)]
    for name, cases, deaths in checks + list(zip(table.months, table.cases, table.deaths)):
        wrong = np.flatnonzero(deaths > cases)
        if wrong.size:
            j = wrong[0]
            raise DataError(
                f"{table.source}: county {table.counties[j]}, month {name}: new deaths {deaths[j]} "
                f"exceed new cases {cases[j]} (after netting corrections)"
            )


def download(dest_dir: str | Path, timeout: float = 10.0) -> tuple[Path, Path]:
    """Fetch the confirmed and deaths US time series from JHU CSSE's GitHub into ``dest_dir``.

    Each network operation gives up after ``timeout`` seconds. Returns the paths of the
    confirmed and deaths files (pass them to :func:`load_jhu_timeseries`); raises
    :class:`DownloadError` when the network is unreachable, leaving no partial file.
    """
    timeout = positive_finite(timeout, "timeout")
    dest_dir = Path(dest_dir)
    dest_dir.mkdir(parents=True, exist_ok=True)
    return _fetch(CONFIRMED_URL, dest_dir, timeout), _fetch(DEATHS_URL, dest_dir, timeout)


def _fetch(url: str, dest_dir: Path, timeout: float) -> Path:
    """Download ``url`` into ``dest_dir`` through a ``.part`` file renamed when complete."""
    target = dest_dir / url.rsplit("/", 1)[1]
    partial = target.with_name(target.name + ".part")
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response, partial.open("wb") as out:
            shutil.copyfileobj(response, out)
        partial.replace(target)
    except (urllib.error.URLError, TimeoutError, ConnectionError, http.client.HTTPException) as err:
        raise DownloadError(
            f"could not download {url}: {getattr(err, 'reason', err)}. Where the network is unreachable (or slower "
            f"than the {timeout} s timeout), get the files by hand on a machine with internet access: save\n"
            f"  {CONFIRMED_URL}\n  {DEATHS_URL}\n(JHU CSSE COVID-19 repository, github.com/CSSEGISandData/COVID-19) "
            f"into {dest_dir} and call load_jhu_timeseries(confirmed_csv, deaths_csv)."
        ) from err
    finally:
        partial.unlink(missing_ok=True)
    return target
