"""Pennsylvania county COVID-19 counts (JHU CSSE), the data of the COVID-19 case study.

- :func:`load_monthly` reads the prepared monthly table (``pa_monthly_new_by_county.csv`` and
  ``pa_county_population.csv``, see ``shared/data/README.md``);
- :func:`load_jhu_timeseries` rebuilds the same table from JHU's public time-series files, which
  :func:`download` fetches;
- both return a :class:`CovidTable`, whose ``x(t)`` and ``z(t)`` are the case study's confidential
  and public data for month t.
"""

from .data import DOCUMENTED_DEATH_CORRECTIONS, DataError, load_monthly
from .jhu import DownloadError, download, load_jhu_timeseries
from .table import Adjustment, CovidTable

__all__ = [
    "DOCUMENTED_DEATH_CORRECTIONS",
    "Adjustment",
    "CovidTable",
    "DataError",
    "DownloadError",
    "download",
    "load_jhu_timeseries",
    "load_monthly",
]
