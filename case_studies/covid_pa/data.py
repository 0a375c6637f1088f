"""Load and validate the prepared monthly table of Pennsylvania county COVID-19 counts.

The data folder holds ``pa_monthly_new_by_county.csv`` (month, county, fips, new_cases,
new_deaths and the month-end cumulative counts) and ``pa_county_population.csv``. Both ship with
the package (:data:`ppdinfer.datasets.COVID_PA_DATA`, with their sources, licences and checksums
in its ``PROVENANCE.md``; :mod:`.rebuild` makes them again from JHU's files), and
:func:`default_data` uses that copy unless ``$PPDINFER_COVID_DATA`` names another folder. :func:`load_monthly` checks the table
(67 counties, the 24 months 2020-03 .. 2022-02, one row per county and month, integer counts,
cases >= deaths, a population for every county) and raises :class:`DataError` naming the file,
the line (1-based, the header being line 1) or the county and month, and the problem.

Death corrections. JHU's cumulative deaths fall by one from one month-end to the next four times
(:data:`DOCUMENTED_DEATH_CORRECTIONS`): a death reported earlier was withdrawn. Each negative
monthly count is set to 0 and netted against the same county's latest earlier months with
deaths (skipping months with 0), so no month is negative, the 24-month totals are unchanged and
the cumulative counts from the correction month on stay exact (those of the months in between
fall by the correction). Each change is recorded as an :class:`~.table.Adjustment`. Any other
negative count is an error.
"""

from __future__ import annotations

import os
import re
from collections.abc import Collection, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from ...datasets import COVID_PA_DATA
from .table import Adjustment, CovidTable, month_labels

__all__ = [
    "DATA_ENV",
    "DOCUMENTED_DEATH_CORRECTIONS",
    "DataError",
    "default_data",
    "integers",
    "load_monthly",
    "net_negative",
    "no_duplicates",
    "read_csv",
]

MONTHLY_FILE = "pa_monthly_new_by_county.csv"
POPULATION_FILE = "pa_county_population.csv"
MONTHS = tuple(month_labels("2020-03", "2022-02"))
N_COUNTIES = 67
POPULATION_COLUMN = "census_estimatesbase_2020_04_01"

#: (county, month, reported new deaths) of the reporting corrections in the JHU-based table.
DOCUMENTED_DEATH_CORRECTIONS = frozenset(
    {
        ("Wayne", "2020-07", -1),
        ("Cameron", "2021-03", -1),
        ("Cameron", "2021-05", -1),
        ("Wyoming", "2021-06", -1),
    }
)

_INTEGER = re.compile(r"[+-]?\d+")
_MONTH = re.compile(r"\d{4}-(0[1-9]|1[0-2])")


#: Environment variable naming the data folder when --data is not given.
DATA_ENV = "PPDINFER_COVID_DATA"


def default_data() -> Path:
    """The data folder read when none is given: ``$PPDINFER_COVID_DATA`` if set, else the copy shipped
    with the package (:data:`ppdinfer.datasets.COVID_PA_DATA`).

    Examples
    --------
    >>> import os
    >>> from unittest import mock
    >>> from ppdinfer.datasets import COVID_PA_DATA
    >>> with mock.patch.dict(os.environ, {DATA_ENV: ""}):
    ...     default_data() == COVID_PA_DATA
    True
    """
    return Path(os.environ[DATA_ENV]) if os.environ.get(DATA_ENV) else COVID_PA_DATA


class DataError(ValueError):
    """A data file is missing or breaks the table's rules; the message names file, row and problem."""


def read_csv(path: Path, columns: Sequence[str]) -> pd.DataFrame:
    """Read ``path`` as strings with a ``line`` column (the header is line 1); check ``columns``."""
    if not path.is_file():
        raise DataError(f"{path}: file not found")
    try:
        frame = pd.read_csv(path, dtype=str, keep_default_na=False, skip_blank_lines=False)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as err:
        raise DataError(f"{path}: not a readable CSV file ({err})") from err
    missing = [column for column in columns if column not in frame.columns]
    if missing:
        raise DataError(f"{path}: line 1: missing column(s) {missing}")
    return frame.assign(line=np.arange(2, len(frame) + 2))


def integers(frame: pd.DataFrame, column: str, path: Path) -> np.ndarray:
    """The int64 values of a string ``column``; a non-integer entry is a DataError naming its line."""
    values = frame[column].str.strip()
    bad = ~values.str.fullmatch(_INTEGER)
    if bad.any():
        row = frame[bad].iloc[0]
        raise DataError(f"{path}: line {row['line']}: {column} {row[column]!r} is not an integer")
    return values.astype(np.int64).to_numpy()


def net_negative(
    counts: np.ndarray, months: Sequence[str], counties: Sequence[str], fips: Sequence[int], series: str, source: str
) -> tuple[np.ndarray, list[Adjustment]]:
    """Set each negative count of ``counts`` (T, J) to 0, netting it against earlier months.

    The correction is subtracted from the same county's latest earlier months first, skipping
    months with count 0. Returns the corrected copy and one :class:`Adjustment` per negative
    count; raises DataError when the earlier months hold too little to absorb a correction.
    """
    counts = np.array(counts, dtype=np.int64)
    adjustments = []
    for t, j in zip(*np.nonzero(counts < 0)):
        reported, need, netted = int(counts[t, j]), int(-counts[t, j]), []
        counts[t, j] = 0
        for k in range(t - 1, -1, -1):
            take = min(need, int(counts[k, j]))
            if take:
                counts[k, j] -= take
                netted.append((months[k], take))
                need -= take
            if not need:
                break
        if need:
            raise DataError(
                f"{source}: county {counties[j]}, month {months[t]}: {series} {reported} exceeds "
                f"the {series} of the earlier months, so the correction cannot be netted"
            )
        adjustments.append(Adjustment(counties[j], int(fips[j]), series, months[t], reported, tuple(netted)))
    return counts, sorted(adjustments, key=lambda a: (a.month, a.county))


def load_monthly(
    data_dir: str | Path,
    *,
    population_column: str = POPULATION_COLUMN,
    death_corrections: Collection[tuple[str, str, int]] = DOCUMENTED_DEATH_CORRECTIONS,
) -> CovidTable:
    """Load the monthly county table of ``data_dir`` (see the module docstring).

    Parameters
    ----------
    data_dir : directory holding ``pa_monthly_new_by_county.csv`` and ``pa_county_population.csv``.
    population_column : column of the population file to use; the default is the Census
        estimates base of 2020-04-01 (``pop_jhu_lookup_v2019`` gives JHU's Vintage 2019 figures).
    death_corrections : the (county, month, new_deaths) rows allowed a negative death count;
        they are netted against earlier months.

    Returns
    -------
    CovidTable with counties in alphabetical order and months 2020-03 .. 2022-02; the previous
    counts of 2020-03 are zeros (Pennsylvania reported no case before March 2020).
    """
    data_dir = Path(data_dir)
    if not data_dir.is_dir():
        raise DataError(f"{data_dir}: data directory not found (expected {MONTHLY_FILE} and {POPULATION_FILE})")
    counties, fips, population = _read_population(data_dir / POPULATION_FILE, population_column)
    path = data_dir / MONTHLY_FILE
    frame = read_csv(path, ["month", "county", "fips", "new_cases", "new_deaths"])
    cases, deaths = _check_rows(frame, path, dict(zip(counties, fips)), death_corrections)
    lines = _grid(frame, frame["line"].to_numpy(), counties, path)
    cases, deaths = _grid(frame, cases, counties, path), _grid(frame, deaths, counties, path)
    _check_cumulative(frame, path, cases, deaths, lines, counties)
    deaths, adjustments = net_negative(deaths, MONTHS, counties, fips, "deaths", str(path))
    zeros = np.zeros(len(counties), dtype=np.int64)
    return CovidTable(MONTHS, counties, fips, population, cases, deaths, zeros, zeros, adjustments, str(data_dir))


def _read_population(path: Path, column: str) -> tuple[list[str], np.ndarray, np.ndarray]:
    """Alphabetical county names, FIPS codes and populations; each county once, populations > 0."""
    frame = read_csv(path, ["county", "fips", column])
    _check_names(frame, path)
    fips, population = integers(frame, "fips", path), integers(frame, column, path)
    if np.any(population <= 0):
        row = frame[population <= 0].iloc[0]
        raise DataError(f"{path}: line {row['line']}: {column} {row[column]} of {row['county']} is not positive")
    no_duplicates(frame, ["county"], path)
    if len(frame) != N_COUNTIES:
        raise DataError(f"{path}: {len(frame)} counties, expected the {N_COUNTIES} counties of Pennsylvania")
    order = np.argsort(frame["county"].to_numpy())
    return list(frame["county"].to_numpy()[order]), fips[order], population[order]


def _check_names(frame: pd.DataFrame, path: Path) -> None:
    empty = frame["county"].str.strip() == ""
    if empty.any():
        raise DataError(f"{path}: line {frame[empty]['line'].iloc[0]}: county name is empty")


def no_duplicates(frame: pd.DataFrame, key: list[str], path: Path) -> None:
    """Raise a DataError naming the lines of the first rows that repeat ``key``."""
    repeated = frame[frame.duplicated(key, keep=False)]
    if len(repeated):
        first = repeated.iloc[0]
        lines = repeated[(repeated[key] == first[key]).all(axis=1)]["line"].tolist()
        label = ", ".join(f"{column} {first[column]}" for column in key)
        raise DataError(f"{path}: lines {lines}: duplicate rows for {label}")


def _check_rows(
    frame: pd.DataFrame, path: Path, county_fips: dict[str, int], death_corrections: Collection[tuple[str, str, int]]
) -> tuple[np.ndarray, np.ndarray]:
    """Row-wise checks in file order; returns new cases and new deaths as int64 (rows,)."""
    _check_names(frame, path)
    bad_month = ~frame["month"].str.fullmatch(_MONTH)
    if bad_month.any():
        row = frame[bad_month].iloc[0]
        raise DataError(f"{path}: line {row['line']}: month {row['month']!r} is not a month 'YYYY-MM'")
    fips, cases, deaths = (integers(frame, column, path) for column in ("fips", "new_cases", "new_deaths"))
    allowed = set(death_corrections)
    for line, month, county, f, c, d in zip(frame["line"], frame["month"], frame["county"], fips, cases, deaths):
        where = f"{path}: line {line} ({county}, {month})"
        if county not in county_fips:
            raise DataError(f"{where}: county {county!r} has no row in {POPULATION_FILE}")
        if f != county_fips[county]:
            raise DataError(f"{where}: fips {f} differs from {county_fips[county]} in {POPULATION_FILE}")
        if month not in MONTHS:
            raise DataError(f"{where}: month outside {MONTHS[0]} .. {MONTHS[-1]}")
        if c < 0:
            raise DataError(f"{where}: negative new_cases {c}")
        if d < 0 and (county, month, int(d)) not in allowed:
            raise DataError(f"{where}: negative new_deaths {d} is not a documented death correction")
        if d > c:
            raise DataError(f"{where}: new_deaths {d} exceed new_cases {c}")
    no_duplicates(frame, ["month", "county"], path)
    return cases, deaths


def _grid(frame: pd.DataFrame, values: np.ndarray, counties: list[str], path: Path) -> np.ndarray:
    """Row values placed on the (month, county) grid; a missing county-month is a DataError."""
    t = pd.Index(MONTHS).get_indexer(frame["month"])
    j = pd.Index(counties).get_indexer(frame["county"])
    grid = np.full((len(MONTHS), len(counties)), -1, dtype=np.int64)
    present = np.zeros(grid.shape, dtype=bool)
    grid[t, j], present[t, j] = values, True
    if not present.all():
        missing_months = [MONTHS[k] for k in np.flatnonzero(~present.any(axis=1))]
        if missing_months:
            raise DataError(
                f"{path}: no rows for month(s) {missing_months} "
                f"(expected the {len(MONTHS)} months {MONTHS[0]} .. {MONTHS[-1]})"
            )
        k, m = np.argwhere(~present)[0]
        raise DataError(f"{path}: no row for county {counties[m]}, month {MONTHS[k]}")
    return grid


def _check_cumulative(
    frame: pd.DataFrame, path: Path, cases: np.ndarray, deaths: np.ndarray, lines: np.ndarray, counties: list[str]
) -> None:
    """When the file has month-end cumulative columns, they must equal the running sums."""
    for column, new in [("cum_cases_month_end", cases), ("cum_deaths_month_end", deaths)]:
        if column not in frame.columns:
            continue
        stated = _grid(frame, integers(frame, column, path), counties, path)
        wrong = np.argwhere(stated != np.cumsum(new, axis=0))
        if len(wrong):
            t, j = wrong[0]
            raise DataError(
                f"{path}: line {lines[t, j]} ({counties[j]}, {MONTHS[t]}): {column} {stated[t, j]} "
                f"differs from the running sum {np.cumsum(new, axis=0)[t, j]} of the new counts"
            )
