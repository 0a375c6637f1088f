"""The monthly county table of the COVID-19 case study and its per-month (x_t, z_t) views."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
import xarray as xr

__all__ = ["Adjustment", "CovidTable", "month_labels", "previous_month"]


def month_labels(first: str, last: str) -> list[str]:
    """The consecutive months ``first`` .. ``last`` as 'YYYY-MM' labels."""
    return list(pd.period_range(first, last, freq="M").strftime("%Y-%m"))


def previous_month(month: str) -> str:
    """The 'YYYY-MM' label of the month before ``month``."""
    return (pd.Period(month, freq="M") - 1).strftime("%Y-%m")


@dataclass(frozen=True)
class Adjustment:
    """A negative monthly count (a reporting correction) netted against earlier months.

    Attributes
    ----------
    county, fips : the county.
    series : "cases" or "deaths".
    month : the month whose reported difference was negative.
    reported : that difference (< 0); the month's count is set to 0.
    netted : (month, amount) pairs subtracted from the same county's earlier months, latest
        first; the amounts sum to ``-reported``, so cumulative counts from ``month`` on are
        unchanged.
    """

    county: str
    fips: int
    series: str
    month: str
    reported: int
    netted: tuple[tuple[str, int], ...]

    @property
    def months(self) -> tuple[str, ...]:
        """Every month whose count the adjustment changed."""
        return (self.month, *(month for month, _ in self.netted))

    def __str__(self) -> str:
        taken = ", ".join(f"{amount} from {month}" for month, amount in self.netted)
        return (
            f"{self.county} ({self.fips}) {self.series} {self.month}: reported {self.reported}, "
            f"set to 0; netted against earlier months: {taken}"
        )


@dataclass(frozen=True, eq=False)
class CovidTable:
    """New cases and deaths of J counties over T consecutive months (read-only int64 arrays).

    Attributes
    ----------
    months : T labels 'YYYY-MM', consecutive.
    counties : J county names, alphabetical for the loaders of this package.
    fips : (J,) county FIPS codes.
    population : (J,) county populations.
    cases, deaths : (T, J) new cases and new deaths per month and county.
    previous_cases, previous_deaths : (J,) counts of the month before ``months[0]`` (zeros for
        Pennsylvania from 2020-03: the state's first cases were reported in March 2020).
    adjustments : the negative reported counts netted by the loader (see :class:`Adjustment`).
    source : where the table was read from.
    """

    months: tuple[str, ...]
    counties: tuple[str, ...]
    fips: np.ndarray
    population: np.ndarray
    cases: np.ndarray
    deaths: np.ndarray
    previous_cases: np.ndarray
    previous_deaths: np.ndarray
    adjustments: tuple[Adjustment, ...] = ()
    source: str = ""

    def __post_init__(self):
        shape = (len(self.months), len(self.counties))
        for name, expected in [
            ("fips", shape[1:]),
            ("population", shape[1:]),
            ("cases", shape),
            ("deaths", shape),
            ("previous_cases", shape[1:]),
            ("previous_deaths", shape[1:]),
        ]:
            values = np.array(getattr(self, name), dtype=np.int64)
            if values.shape != expected:
                raise ValueError(f"{name} must have shape {expected}, got {values.shape}")
            values.flags.writeable = False
            object.__setattr__(self, name, values)
        object.__setattr__(self, "months", tuple(self.months))
        object.__setattr__(self, "counties", tuple(self.counties))
        object.__setattr__(self, "adjustments", tuple(self.adjustments))

    @property
    def n_months(self) -> int:
        """T, the number of months."""
        return len(self.months)

    @property
    def n_counties(self) -> int:
        """J, the number of counties."""
        return len(self.counties)

    def month_index(self, t: int | str) -> int:
        """The row of month ``t``: an index in [0, T) or a label 'YYYY-MM'."""
        if isinstance(t, str):
            if t not in self.months:
                raise ValueError(f"t: month {t!r} is not in the table ({self.months[0]} .. {self.months[-1]})")
            return self.months.index(t)
        if isinstance(t, bool) or not isinstance(t, (int, np.integer)) or not 0 <= t < self.n_months:
            raise ValueError(f"t must be a month label or an index in [0, {self.n_months}), got {t!r}")
        return int(t)

    def x(self, t: int | str) -> np.ndarray:
        """The confidential counts of month ``t``: int64 (2, J), row 0 cases, row 1 deaths."""
        t = self.month_index(t)
        return np.stack([self.cases[t], self.deaths[t]])

    def z(self, t: int | str) -> dict:
        """The public information of month ``t``.

        Returns
        -------
        dict with ``previous_cases`` and ``previous_deaths`` (int64 (J,), the month before t;
        the table's ``previous_cases`` / ``previous_deaths`` for t = 0) and ``total`` (int, this
        month's case total over the table's counties, the statewide total for the full table).
        """
        t = self.month_index(t)
        if t == 0:
            previous_cases, previous_deaths = self.previous_cases, self.previous_deaths
        else:
            previous_cases, previous_deaths = self.cases[t - 1], self.deaths[t - 1]
        return {
            "previous_cases": previous_cases.copy(),
            "previous_deaths": previous_deaths.copy(),
            "total": int(self.cases[t].sum()),
        }

    def subset(self, counties: Sequence[str] | None = None, months: Sequence[str] | None = None) -> CovidTable:
        """A smaller table: some counties (kept in table order) and a run of consecutive months.

        The previous counts of the new first month come from this table, so ``z`` is unchanged
        except ``total``, which sums the kept counties. Adjustments are kept when they changed a
        kept county in a kept month or in the month before them.
        """
        columns = self._county_columns(counties)
        rows = self._month_rows(months)
        first = rows[0]
        previous = (
            (self.previous_cases, self.previous_deaths)
            if first == 0
            else (self.cases[first - 1], self.deaths[first - 1])
        )
        kept_months = {self.months[t] for t in rows} | {previous_month(self.months[first])}
        kept_counties = {self.counties[j] for j in columns}
        adjustments = [a for a in self.adjustments if a.county in kept_counties and kept_months & set(a.months)]
        return CovidTable(
            months=[self.months[t] for t in rows],
            counties=[self.counties[j] for j in columns],
            fips=self.fips[columns],
            population=self.population[columns],
            cases=self.cases[np.ix_(rows, columns)],
            deaths=self.deaths[np.ix_(rows, columns)],
            previous_cases=previous[0][columns],
            previous_deaths=previous[1][columns],
            adjustments=adjustments,
            source=self.source,
        )

    def _county_columns(self, counties: Sequence[str] | None) -> list[int]:
        if counties is None:
            return list(range(self.n_counties))
        if isinstance(counties, str):
            counties = [counties]
        unknown = [name for name in counties if name not in self.counties]
        if unknown:
            raise ValueError(f"counties: {unknown} not in the table")
        if not counties or len(set(counties)) != len(counties):
            raise ValueError(f"counties must name distinct counties, got {list(counties)!r}")
        return sorted(self.counties.index(name) for name in counties)

    def _month_rows(self, months: Sequence[str] | None) -> list[int]:
        if months is None:
            return list(range(self.n_months))
        if isinstance(months, str):
            months = [months]
        rows = [self.month_index(str(month)) for month in months]
        if not rows or rows != list(range(rows[0], rows[0] + len(rows))):
            raise ValueError(f"months must be consecutive months of the table in order, got {list(months)!r}")
        return rows

    def to_xarray(self) -> xr.Dataset:
        """The table as an ``xarray.Dataset`` with dims (month, county).

        Variables ``cases``, ``deaths`` (month, county) and ``population``, ``previous_cases``,
        ``previous_deaths`` (county); coordinate ``fips`` on county; attributes ``source`` and
        ``adjustments`` (one line per adjustment).
        """
        return xr.Dataset(
            {
                "cases": (("month", "county"), self.cases),
                "deaths": (("month", "county"), self.deaths),
                "population": ("county", self.population),
                "previous_cases": ("county", self.previous_cases),
                "previous_deaths": ("county", self.previous_deaths),
            },
            coords={"month": list(self.months), "county": list(self.counties), "fips": ("county", self.fips)},
            attrs={"source": self.source, "adjustments": "\n".join(map(str, self.adjustments))},
        )
