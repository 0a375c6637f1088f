"""Public data sets used by the seed papers: the UCI Adult extract (1994 US Census).

:func:`load_adult` reads ``adult.data`` (header line, comma-separated values with a leading
space, ``?`` for a missing value) from a path the caller gives: the data are never copied into
the repository. :func:`default_adult_path` finds the shared copy. The education levels come in
two orders: :data:`EDUCATION_ORDER`, the natural order of ``education_num``, and
:data:`KANTOROVICH_EDUCATION_ORDER`, the 14-level index order of the Kantorovich-mechanism paper
(which drops 5th-6th and Preschool, although both races it compares have records there).
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pandas as pd

__all__ = ["ADULT_COLUMNS", "ADULT_ENV", "EDUCATION_ORDER", "KANTOROVICH_EDUCATION_ORDER", "default_adult_path",
           "find_shared_data", "load_adult"]

#: The 15 columns of adult.data under their clean names (the file's header, lower case, "-" as "_").
ADULT_COLUMNS = ("age", "workclass", "fnlwgt", "education", "education_num", "marital_status", "occupation",
                 "relationship", "race", "sex", "capital_gain", "capital_loss", "hours_per_week", "native_country",
                 "salary")
_INTEGER_COLUMNS = ("age", "fnlwgt", "education_num", "capital_gain", "capital_loss", "hours_per_week")

#: The 16 education levels in the order of education_num (Preschool = 1, ..., Doctorate = 16).
EDUCATION_ORDER = ("Preschool", "1st-4th", "5th-6th", "7th-8th", "9th", "10th", "11th", "12th", "HS-grad",
                   "Some-college", "Assoc-voc", "Assoc-acdm", "Bachelors", "Masters", "Prof-school", "Doctorate")

#: The Kantorovich paper's 14 education levels in its index order 1..14 (no 5th-6th, no Preschool).
KANTOROVICH_EDUCATION_ORDER = ("Bachelors", "Some-college", "11th", "HS-grad", "Prof-school", "Assoc-acdm",
                               "Assoc-voc", "9th", "7th-8th", "12th", "Masters", "1st-4th", "10th", "Doctorate")

#: Environment variable naming the adult.data file when no path is given.
ADULT_ENV = "PPDINFER_ADULT_DATA"
#: Where adult.data is looked for, from the current folder and from the repository root.
ADULT_RELATIVE = Path("..", "shared", "data", "adult", "adult.data")


def find_shared_data(relative: Path, env: str, what: str, hint: str = "its path", anchor=__file__) -> Path:
    """``$env`` if set, else the first existing ``relative`` (a file or folder under ``../shared/data``) from the
    current folder or from the repository root (the first folder above ``anchor``, a module's file, holding
    pyproject.toml).

    Raises FileNotFoundError ("no ``what``: pass ``hint`` or set ``env``", with the places looked in)
    when there is none.

    Examples
    --------
    >>> import os
    >>> from pathlib import Path
    >>> from unittest import mock
    >>> from ppdinfer.datasets import find_shared_data
    >>> with mock.patch.dict(os.environ, {"MY_DATA": "/data/x.csv"}):
    ...     print(find_shared_data(Path("..", "shared", "data", "x.csv"), "MY_DATA", "x.csv").as_posix())
    /data/x.csv
    """
    if os.environ.get(env):
        return Path(os.environ[env])
    places = [Path.cwd() / relative]
    root = next((folder for folder in Path(anchor).resolve().parents if (folder / "pyproject.toml").is_file()), None)
    if root is not None:
        places.append(root / relative)
    for place in places:
        if place.exists():
            return place.resolve()
    raise FileNotFoundError(f"no {what}: pass {hint} or set {env} "
                            f"(looked in {' and '.join(str(place) for place in places)})")


def default_adult_path() -> Path:
    """The adult.data file: $PPDINFER_ADULT_DATA if set, else the first existing
    ``../shared/data/adult/adult.data`` from the current folder or from the repository root.

    Raises FileNotFoundError naming the places looked in when there is none.

    Examples
    --------
    >>> import os
    >>> from unittest import mock
    >>> from ppdinfer.datasets import ADULT_ENV, default_adult_path
    >>> with mock.patch.dict(os.environ, {ADULT_ENV: "/data/adult.data"}):
    ...     print(default_adult_path().as_posix())
    /data/adult.data
    """
    return find_shared_data(ADULT_RELATIVE, ADULT_ENV, "adult.data")


def load_adult(path, *, drop_missing: bool = False) -> pd.DataFrame:
    """Read the UCI Adult file ``adult.data`` into a clean DataFrame.

    Column names are :data:`ADULT_COLUMNS`; strings are stripped; ``?`` becomes a missing value;
    the six numeric columns are int64 and the others pandas Categoricals (``education`` ordered
    as :data:`EDUCATION_ORDER`, the others in sorted order). Every row must have the 15 fields,
    integers where integers belong, and an ``education_num`` that is the position of its
    ``education`` in :data:`EDUCATION_ORDER`.

    Parameters
    ----------
    path : str or Path
        The file (e.g. :func:`default_adult_path`). The shared copy has 32,561 records, 2,399 of
        them with a missing value (30,162 complete).
    drop_missing : bool
        Drop the rows with any missing value. ``frame.attrs["rows_dropped"]`` records how many
        rows were dropped (0 when nothing is dropped).

    Returns
    -------
    pandas.DataFrame

    Raises
    ------
    FileNotFoundError
        No file at ``path``.
    ValueError
        The file is not adult.data: the message names the path, the line (the header being
        line 1) and what was expected.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> from ppdinfer.datasets import load_adult
    >>> text = ("age, workclass, fnlwgt, education, education-num, marital-status, occupation, relationship, "
    ...         "race, sex, capital-gain, capital-loss, hours-per-week, native-country, Salary\\n"
    ...         "39, State-gov, 77516, Bachelors, 13, Never-married, Adm-clerical, Not-in-family, White, Male, "
    ...         "2174, 0, 40, United-States, <=50K\\n"
    ...         "54, ?, 180211, Some-college, 10, Married-civ-spouse, ?, Husband, Asian-Pac-Islander, Male, "
    ...         "0, 0, 60, South, >50K\\n")
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "adult.data"
    >>> _ = path.write_text(text)
    >>> frame = load_adult(path)
    >>> frame["race"].tolist(), int(frame["hours_per_week"].sum())
    (['White', 'Asian-Pac-Islander'], 100)
    >>> complete = load_adult(path, drop_missing=True)
    >>> len(complete), complete.attrs["rows_dropped"]
    (1, 1)
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such file (expected the UCI Adult file adult.data)")
    _check_field_counts(path)
    try:
        raw = pd.read_csv(path, dtype=str, keep_default_na=False, skipinitialspace=True, skip_blank_lines=True)
    except (pd.errors.ParserError, pd.errors.EmptyDataError) as err:
        raise ValueError(f"{path}: not a readable adult.data file ({err})") from err
    header = tuple(name.strip().lower().replace("-", "_") for name in raw.columns)
    if header != ADULT_COLUMNS:
        raise ValueError(f"{path}: line 1: expected the header {', '.join(ADULT_COLUMNS)} (with - or _), "
                         f"got {', '.join(map(str, raw.columns))}")
    raw.columns = list(ADULT_COLUMNS)
    raw = raw.apply(lambda column: column.str.strip())
    empty = (raw == "").to_numpy()
    if empty.any():
        row, column = np.argwhere(empty)[0]
        raise ValueError(f"{path}: line {row + 2}: {ADULT_COLUMNS[column]} is empty (a missing value is written ?)")
    frame = raw.mask(raw == "?")
    for column in _INTEGER_COLUMNS:
        frame[column] = _integers(frame[column], column, path)
    _check_education(frame, path)
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
    return frame


def _check_field_counts(path: Path) -> None:
    """Every non-blank line of ``path`` must hold the 15 fields (14 commas)."""
    try:
        with path.open(encoding="utf-8") as lines:
            for number, line in enumerate(lines, start=1):
                if line.strip() and line.count(",") != len(ADULT_COLUMNS) - 1:
                    raise ValueError(f"{path}: line {number}: expected {len(ADULT_COLUMNS)} comma-separated fields, "
                                     f"got {line.count(',') + 1}")
    except UnicodeDecodeError as err:
        raise ValueError(f"{path}: not a text file in UTF-8 (expected the UCI Adult file adult.data)") from err


def _line(bad: np.ndarray) -> int:
    """The file line of the first flagged row (the header is line 1)."""
    return int(np.flatnonzero(bad)[0]) + 2


def _integers(values: pd.Series, column: str, path: Path) -> pd.Series:
    bad = ~values.str.fullmatch(r"[+-]?\d+").fillna(False).to_numpy(dtype=bool)
    if bad.any():
        raise ValueError(f"{path}: line {_line(bad)}: {column} must be an integer, got {values.iloc[_line(bad) - 2]!r}")
    return values.astype(np.int64)


def _check_education(frame: pd.DataFrame, path: Path) -> None:
    education = frame["education"]
    unknown = (~education.isin(EDUCATION_ORDER)).to_numpy()
    if unknown.any():
        raise ValueError(f"{path}: line {_line(unknown)}: education must be one of {', '.join(EDUCATION_ORDER)}, "
                         f"got {education.iloc[_line(unknown) - 2]!r}")
    expected = education.map({level: rank for rank, level in enumerate(EDUCATION_ORDER, start=1)})
    mismatch = (frame["education_num"] != expected).to_numpy()
    if mismatch.any():
        row = _line(mismatch) - 2
        raise ValueError(f"{path}: line {row + 2}: education_num must be {int(expected.iloc[row])} for "
                         f"{education.iloc[row]!r}, got {int(frame['education_num'].iloc[row])}")
