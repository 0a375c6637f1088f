"""Public data sets: the COVID-19 tables that ship with the package, and UCI Adult, fetched on first use.

**COVID-19, Pennsylvania** (:data:`COVID_PA_DATA`): the monthly county table of new cases and
deaths and the county populations that the ``covid_pa`` case study reads (JHU CSSE, CC BY 4.0;
Census Bureau estimates, public domain). They are package data: every install carries them,
with their provenance (sources, licences, SHA-256 checksums, the rebuild command) in
``PROVENANCE.md`` beside them.

**UCI Adult** (1994 US Census extract, CC BY 4.0): ``adult.data`` (32,561 records) and
``adult.test`` (16,281). :func:`adult_path` uses a local copy when there is one
(``$PPDINFER_ADULT_DATA``, else ``../shared/data/adult/`` from the current folder or from the
repository root), else the user cache (``$PPDINFER_CACHE``, else the platform's cache folder),
downloading the file there on first use from the UCI archive (:func:`fetch_adult`, checked
against its MD5 checksum). ``ppdinfer data list | fetch | path`` does the same from the command
line. :func:`load_adult` reads UCI's original files (no header; ``adult.test`` opens with a
comment line and ends its labels with ``.``) as well as a copy with a header line.

The education levels come in two orders: :data:`EDUCATION_ORDER`, the natural order of
``education_num``, and :data:`KANTOROVICH_EDUCATION_ORDER`, the 14-level index order of the
Kantorovich-mechanism paper (which drops 5th-6th and Preschool, although both races it
compares have records there).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

import numpy as np
import pandas as pd

__all__ = [
    "ADULT_COLUMNS",
    "ADULT_ENV",
    "ADULT_FILES",
    "ADULT_URL",
    "CACHE_ENV",
    "COVID_PA_DATA",
    "EDUCATION_ORDER",
    "KANTOROVICH_EDUCATION_ORDER",
    "adult_path",
    "cache_dir",
    "fetch_adult",
    "listing",
    "load_adult",
]

#: The 15 columns of adult.data under their clean names (the file's header, lower case, "-" as "_").
ADULT_COLUMNS = (
    "age",
    "workclass",
    "fnlwgt",
    "education",
    "education_num",
    "marital_status",
    "occupation",
    "relationship",
    "race",
    "sex",
    "capital_gain",
    "capital_loss",
    "hours_per_week",
    "native_country",
    "salary",
)
_INTEGER_COLUMNS = ("age", "fnlwgt", "education_num", "capital_gain", "capital_loss", "hours_per_week")

#: The 16 education levels in the order of education_num (Preschool = 1, ..., Doctorate = 16).
EDUCATION_ORDER = (
    "Preschool",
    "1st-4th",
    "5th-6th",
    "7th-8th",
    "9th",
    "10th",
    "11th",
    "12th",
    "HS-grad",
    "Some-college",
    "Assoc-voc",
    "Assoc-acdm",
    "Bachelors",
    "Masters",
    "Prof-school",
    "Doctorate",
)

#: The Kantorovich paper's 14 education levels in its index order 1..14 (no 5th-6th, no Preschool).
KANTOROVICH_EDUCATION_ORDER = (
    "Bachelors",
    "Some-college",
    "11th",
    "HS-grad",
    "Prof-school",
    "Assoc-acdm",
    "Assoc-voc",
    "9th",
    "7th-8th",
    "12th",
    "Masters",
    "1st-4th",
    "10th",
    "Doctorate",
)

#: The folder of the shipped COVID-19 tables (pa_monthly_new_by_county.csv, pa_county_population.csv, PROVENANCE.md).
COVID_PA_DATA = Path(__file__).resolve().parent / "data" / "covid_pa"

#: Environment variable naming a local copy of UCI Adult: the adult.data file (adult.test beside it) or their folder.
ADULT_ENV = "PPDINFER_ADULT_DATA"
#: Environment variable naming the cache folder for downloaded data (default: the platform's user cache).
CACHE_ENV = "PPDINFER_CACHE"
#: The UCI archive's folder of the Adult files.
ADULT_URL = "https://archive.ics.uci.edu/ml/machine-learning-databases/adult/"
#: UCI's original Adult files: name -> (checksum "md5:...", size in bytes).
ADULT_FILES = {
    "adult.data": ("md5:5d7c39d7b8804f071cdd1f2a7c460872", 3_974_305),
    "adult.test": ("md5:35238206dfdf7f1fe215bbb874adecdc", 2_003_153),
}
#: Where a local copy of the Adult files is looked for, from the current folder and from the repository root.
_SHARED_ADULT = Path("..", "shared", "data", "adult")
_HOW_TO_GET = f"run `ppdinfer data fetch adult` (downloads from UCI) or set {ADULT_ENV} to a copy"


def cache_dir() -> Path:
    """The folder downloads go to: ``$PPDINFER_CACHE`` if set, else the platform's user cache folder for ppdinfer.

    Examples
    --------
    >>> import os
    >>> from unittest import mock
    >>> from ppdinfer.datasets import CACHE_ENV, cache_dir
    >>> with mock.patch.dict(os.environ, {CACHE_ENV: "/data/cache"}):
    ...     print(cache_dir().as_posix())
    /data/cache
    """
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV])
    import pooch

    return Path(pooch.os_cache("ppdinfer"))


def _adult_name(name: str) -> str:
    if name not in ADULT_FILES:
        raise ValueError(f"name must be one of {', '.join(ADULT_FILES)}, got {name!r}")
    return name


def _local_places(name: str) -> list[Path]:
    """Where a local copy of ``name`` may be: from ``$PPDINFER_ADULT_DATA`` alone when it is set (a folder
    holding the file, or the adult.data file with adult.test beside it), else ``../shared/data/adult`` from
    the current folder and from the repository root (the first folder above this module holding pyproject.toml)."""
    if os.environ.get(ADULT_ENV):
        given = Path(os.environ[ADULT_ENV])
        if given.is_dir():
            return [given / name]
        return [given if name == "adult.data" else given.with_name(name)]
    places = [Path.cwd() / _SHARED_ADULT / name]
    root = next((folder for folder in Path(__file__).resolve().parents if (folder / "pyproject.toml").is_file()), None)
    if root is not None:
        places.append(root / _SHARED_ADULT / name)
    return list(dict.fromkeys(place.resolve() for place in places))


def adult_path(name: str = "adult.data", *, download: bool = True, progressbar: bool = False) -> Path:
    """The path of a UCI Adult file: a local copy if there is one, else the cached download.

    A local copy is ``$PPDINFER_ADULT_DATA`` (the adult.data file with adult.test beside it, or a
    folder holding both) or, when that is not set, ``../shared/data/adult/`` from the current
    folder or from the repository root. Without one, the file is taken from
    ``cache_dir() / "adult"``, downloaded there first (:func:`fetch_adult`) when it is not yet
    cached and ``download`` is true.

    Parameters
    ----------
    name : {"adult.data", "adult.test"}
    download : bool
        Fetch the file when there is no copy; False answers only from what is already here.
    progressbar : bool
        Show a progress bar while downloading.

    Returns
    -------
    pathlib.Path

    Raises
    ------
    FileNotFoundError
        ``$PPDINFER_ADULT_DATA`` names nothing, or there is no copy and ``download`` is false; the
        message names the places looked in and how to get the file.
    OSError
        The download failed (no network, the host unreachable).

    Examples
    --------
    >>> import os, pathlib, tempfile
    >>> from unittest import mock
    >>> from ppdinfer.datasets import ADULT_ENV, adult_path
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (folder / "adult.data").write_text("")
    >>> with mock.patch.dict(os.environ, {ADULT_ENV: str(folder)}):
    ...     adult_path("adult.data") == folder / "adult.data"
    True
    """
    name = _adult_name(name)
    given = os.environ.get(ADULT_ENV)
    if given and not Path(given).exists():
        raise FileNotFoundError(
            f"{ADULT_ENV}={given}: no such file or folder (set it to a copy of adult.data, or to "
            "the folder holding adult.data and adult.test)"
        )
    places = _local_places(name)
    for place in places:
        if place.is_file():
            return place
    cached = cache_dir() / "adult" / name
    if cached.is_file():  # only ever written by fetch_adult, after its checksum matched
        return cached
    if not download:
        looked = ", ".join(str(place) for place in [*places, cached])
        raise FileNotFoundError(f"{name} is not here (looked in {looked}): {_HOW_TO_GET}")
    return fetch_adult(name, progressbar=progressbar)


def fetch_adult(
    name: str = "adult.data",
    *,
    url: str | None = None,
    cache: str | Path | None = None,
    progressbar: bool = False,
    timeout: float = 30.0,
) -> Path:
    """Download a UCI Adult file into the cache, checked against its MD5 checksum (:data:`ADULT_FILES`).

    A file already cached with the right checksum is not downloaded again. A download whose
    checksum differs is refused and nothing is cached.

    Parameters
    ----------
    name : {"adult.data", "adult.test"}
    url : str, optional
        The folder to download from (default :data:`ADULT_URL`, the UCI archive; a mirror serving
        the same files works too).
    cache : str or Path, optional
        The cache folder (default :func:`cache_dir`); the file goes to ``cache / "adult" / name``.
    progressbar : bool
        Show a progress bar.
    timeout : float
        Seconds each network operation may wait.

    Returns
    -------
    pathlib.Path

    Raises
    ------
    ValueError
        The downloaded file's checksum differs from the expected one (nothing is cached).
    OSError
        The download failed; the message says how to get the file by hand.

    Examples
    --------
    >>> from ppdinfer.datasets import ADULT_FILES, ADULT_URL
    >>> ADULT_URL + "adult.test", ADULT_FILES["adult.test"][1]     # what fetch_adult("adult.test") downloads
    ('https://archive.ics.uci.edu/ml/machine-learning-databases/adult/adult.test', 2003153)
    """
    from .validation import positive_finite

    name = _adult_name(name)
    timeout = positive_finite(timeout, "timeout")
    source = (ADULT_URL if url is None else str(url)).rstrip("/") + "/" + name
    folder = (cache_dir() if cache is None else Path(cache)) / "adult"
    checksum, _ = ADULT_FILES[name]

    import pooch

    try:
        path = pooch.retrieve(
            source,
            known_hash=checksum,
            fname=name,
            path=folder,
            progressbar=progressbar,
            downloader=pooch.HTTPDownloader(progressbar=progressbar, timeout=timeout),
        )
    except OSError as err:  # requests' errors are OSErrors
        raise OSError(
            f"could not download {source}: {err}. Where the network is unreachable, save UCI's {name} "
            f"from a machine with internet access and set {ADULT_ENV} to its folder"
        ) from err
    except ValueError as err:
        raise ValueError(f"{source} is not UCI's {name}, refused and not cached: {err}") from err
    return Path(path)


def listing() -> str:
    """The data sets, their licences and where each file is (what ``ppdinfer data list`` prints); downloads nothing.

    Examples
    --------
    >>> from ppdinfer.datasets import listing
    >>> print(listing().splitlines()[0])
    covid_pa: Pennsylvania county COVID-19 counts, monthly 2020-03 .. 2022-02, with populations (shipped)
    """
    lines = [
        "covid_pa: Pennsylvania county COVID-19 counts, monthly 2020-03 .. 2022-02, with populations (shipped)",
        "    licence: JHU CSSE COVID-19 Data Repository, CC BY 4.0; Census Bureau estimates, public domain",
        f"    folder:  {COVID_PA_DATA} (see PROVENANCE.md there)",
        "adult: UCI Adult, 1994 US Census extract (fetched on first use)",
        "    licence: CC BY 4.0, UCI Machine Learning Repository",
    ]
    for name, (checksum, size) in ADULT_FILES.items():
        try:
            where = str(adult_path(name, download=False))
        except FileNotFoundError:
            where = "not here: ppdinfer data fetch adult"
        lines.append(f"    {name}: {where}  ({size:,} bytes, {checksum})")
    return "\n".join(lines)


def load_adult(path, *, drop_missing: bool = False) -> pd.DataFrame:
    """Read UCI Adult files (``adult.data``, ``adult.test``) into one clean DataFrame.

    Each file is UCI's original (no header; ``adult.test`` opens with a ``|1x3 Cross validator``
    line and writes its labels ``<=50K.`` and ``>50K.``) or a copy with a header line. Column
    names are :data:`ADULT_COLUMNS`; strings are stripped; a label's final ``.`` is dropped; ``?``
    becomes a missing value; the six numeric columns are int64 and the others pandas
    Categoricals (``education`` ordered as :data:`EDUCATION_ORDER`, the others in sorted order).
    Every row must have the 15 fields, integers where integers belong, and an
    ``education_num`` that is the position of its ``education`` in :data:`EDUCATION_ORDER`.

    Parameters
    ----------
    path : str, Path, or a sequence of them
        The file (e.g. ``adult_path()``), or several read one after the other (e.g. adult.data
        and adult.test: 48,842 records, 45,222 of them complete). adult.data alone has 32,561
        records, 2,399 of them with a missing value (30,162 complete).
    drop_missing : bool
        Drop the rows with any missing value. ``frame.attrs["rows_dropped"]`` records how many
        rows were dropped (0 when nothing is dropped); ``frame.attrs["files"]`` names the files read.

    Returns
    -------
    pandas.DataFrame

    Raises
    ------
    FileNotFoundError
        No file at ``path``.
    ValueError
        A file is not an Adult file: the message names the path, the line and what was expected.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> from ppdinfer.datasets import load_adult
    >>> text = ("39, State-gov, 77516, Bachelors, 13, Never-married, Adm-clerical, Not-in-family, White, Male, "
    ...         "2174, 0, 40, United-States, <=50K\\n"
    ...         "54, ?, 180211, Some-college, 10, Married-civ-spouse, ?, Husband, Asian-Pac-Islander, Male, "
    ...         "0, 0, 60, South, >50K\\n")
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (folder / "adult.data").write_text(text)
    >>> _ = (folder / "adult.test").write_text("|1x3 Cross validator\\n" + text.replace("K\\n", "K.\\n"))
    >>> frame = load_adult(folder / "adult.data")
    >>> frame["race"].tolist(), int(frame["hours_per_week"].sum())
    (['White', 'Asian-Pac-Islander'], 100)
    >>> both = load_adult([folder / "adult.data", folder / "adult.test"], drop_missing=True)
    >>> both["salary"].tolist(), both.attrs["rows_dropped"], both.attrs["files"]
    (['<=50K', '<=50K'], 2, ['adult.data', 'adult.test'])
    """
    paths = [Path(path)] if isinstance(path, (str, os.PathLike)) else [Path(p) for p in _sequence(path)]
    frame = pd.concat([_read_file(p) for p in paths], ignore_index=True)
    for column in ADULT_COLUMNS:
        if column == "education":
            frame[column] = pd.Categorical(frame[column], categories=EDUCATION_ORDER, ordered=True)
        elif column not in _INTEGER_COLUMNS:
            frame[column] = pd.Categorical(frame[column])
    rows_dropped = 0
    if drop_missing:
        complete = frame.notna().all(axis=1)
        rows_dropped = int((~complete).sum())
        frame = frame[complete].reset_index(drop=True)
    frame.attrs["rows_dropped"] = rows_dropped
    frame.attrs["files"] = [p.name for p in paths]
    return frame


def _sequence(path) -> list:
    if not isinstance(path, Iterable) or not (paths := list(path)):
        raise ValueError(f"path must be a file or a non-empty sequence of files, got {path!r}")
    return paths


def _read_file(path: Path) -> pd.DataFrame:
    """One Adult file, validated: int64 columns typed, the others stripped strings (NaN for ``?``)."""
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such file (expected a UCI Adult file, adult.data or adult.test)")
    first = _check_lines(path)
    try:
        raw = pd.read_csv(
            path,
            header=None,
            skiprows=first - 1,
            dtype=str,
            keep_default_na=False,
            skipinitialspace=True,
            skip_blank_lines=True,
        )
    except (pd.errors.ParserError, pd.errors.EmptyDataError) as err:
        raise ValueError(f"{path}: not a readable Adult file ({err})") from err
    raw.columns = list(ADULT_COLUMNS)
    raw = raw.apply(lambda column: column.str.strip())
    raw["salary"] = raw["salary"].str.removesuffix(".")
    empty = (raw == "").to_numpy()
    if empty.any():
        row, column = np.argwhere(empty)[0]
        raise ValueError(f"{path}: line {row + first}: {ADULT_COLUMNS[column]} is empty (a missing value is written ?)")
    frame = raw.mask(raw == "?")
    for column in _INTEGER_COLUMNS:
        frame[column] = _integers(frame[column], column, path, first)
    _check_education(frame, path, first)
    return frame


def _check_lines(path: Path) -> int:
    """Check the first line (a header, UCI's comment line of adult.test, or a record) and that every other
    non-blank line holds the 15 fields; returns the line number of the first record."""
    try:
        with path.open(encoding="utf-8") as lines:
            first = 1
            for number, line in enumerate(lines, start=1):
                if number == 1 and line.startswith("|"):  # adult.test's "|1x3 Cross validator"
                    first = 2
                    continue
                if line.strip() and line.count(",") != len(ADULT_COLUMNS) - 1:
                    raise ValueError(
                        f"{path}: line {number}: expected {len(ADULT_COLUMNS)} comma-separated fields, "
                        f"got {line.count(',') + 1}"
                    )
                if number == 1 and not line.split(",")[0].strip().isdigit():
                    header = tuple(name.strip().lower().replace("-", "_") for name in line.split(","))
                    if header != ADULT_COLUMNS:
                        raise ValueError(
                            f"{path}: line 1: expected the header {', '.join(ADULT_COLUMNS)} "
                            f"(with - or _) or a record, got {line.strip()}"
                        )
                    first = 2
    except UnicodeDecodeError as err:
        raise ValueError(f"{path}: not a text file in UTF-8 (expected a UCI Adult file)") from err
    return first


def _row(bad: np.ndarray) -> int:
    """The position of the first flagged row."""
    return int(np.flatnonzero(bad)[0])


def _integers(values: pd.Series, column: str, path: Path, first: int) -> pd.Series:
    bad = ~values.str.fullmatch(r"[+-]?\d+").fillna(False).to_numpy(dtype=bool)
    if bad.any():
        row = _row(bad)
        raise ValueError(f"{path}: line {row + first}: {column} must be an integer, got {values.iloc[row]!r}")
    return values.astype(np.int64)


def _check_education(frame: pd.DataFrame, path: Path, first: int) -> None:
    education = frame["education"]
    unknown = (~education.isin(EDUCATION_ORDER)).to_numpy()
    if unknown.any():
        row = _row(unknown)
        raise ValueError(
            f"{path}: line {row + first}: education must be one of {', '.join(EDUCATION_ORDER)}, "
            f"got {education.iloc[row]!r}"
        )
    expected = education.map({level: rank for rank, level in enumerate(EDUCATION_ORDER, start=1)})
    mismatch = (frame["education_num"] != expected).to_numpy()
    if mismatch.any():
        row = _row(mismatch)
        raise ValueError(
            f"{path}: line {row + first}: education_num must be {int(expected.iloc[row])} for "
            f"{education.iloc[row]!r}, got {int(frame['education_num'].iloc[row])}"
        )
