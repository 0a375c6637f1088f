"""The COVID-19 case study (Seeman, Reimherr & Slavkovic, section 4) on Pennsylvania county counts.

See README.md in this folder. The data (JHU CSSE):

- :func:`load_monthly` reads the prepared monthly table (``pa_monthly_new_by_county.csv`` and
  ``pa_county_population.csv``, shipped with the package: see ``ppdinfer/data/covid_pa/PROVENANCE.md``,
  and ``rebuild.py`` for the script that makes them from JHU's files);
- :func:`load_jhu_timeseries` rebuilds the same table from JHU's public time-series files, which
  :func:`download` fetches;
- both return a :class:`CovidTable`, whose ``x(t)`` and ``z(t)`` are the case study's confidential
  and public data for month t.
"""

from ...reproduce import CaseStudy, LazyFunction, lazy_exports

# the code is imported on first use, so that ``ppdinfer --help`` stays fast
__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "register": ".cli",
        **dict.fromkeys(["DOCUMENTED_DEATH_CORRECTIONS", "DataError", "load_monthly"], ".data"),
        **dict.fromkeys(["DownloadError", "download", "load_jhu_timeseries"], ".jhu"),
        "reproduce": ".pipeline",
        **dict.fromkeys(["Adjustment", "CovidTable"], ".table"),
    },
)

CASE_STUDY = CaseStudy(
    name="covid_pa",
    title="COVID-19 county case rates released under DP with public totals: synthesis by four methods, "
    "the paper's four claims, and posterior interval coverage",
    paper="J. Seeman, M. Reimherr, A. Slavkovic, Formal Privacy for Partially Private Data, section 4",
    minutes=(14, 1.2),  # the quick run: 69 s on 2 cores
    run=LazyFunction(f"{__name__}.pipeline", "reproduce"),
)

__all__ = [
    "CASE_STUDY",
    "DOCUMENTED_DEATH_CORRECTIONS",
    "Adjustment",
    "CovidTable",
    "DataError",
    "DownloadError",
    "download",
    "load_jhu_timeseries",
    "load_monthly",
    "register",
    "reproduce",
]
