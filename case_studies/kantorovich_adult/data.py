"""The race and education columns of UCI Adult, read by :func:`ppdinfer.datasets.load_adult`.

The file is a local copy (``$PPDINFER_ADULT_DATA``, else ``../shared/data/adult/adult.data`` from the
current folder or from the repository root), else UCI's original, downloaded into the user cache on
first use (:func:`ppdinfer.datasets.adult_path`).
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from ...datasets import ADULT_ENV, adult_path, load_adult

__all__ = ["COLUMNS", "DATA_ENV", "default_data", "load_race_education"]

#: Environment variable naming the adult.data file.
DATA_ENV = ADULT_ENV
#: The columns read: the secret, the released attribute and education's numeric code.
COLUMNS = ("race", "education", "education_num")


def default_data(download: bool = True) -> Path:
    """The adult.data file the case study reads by default (see the module docstring); ``download=False``
    raises FileNotFoundError rather than fetch it."""
    return adult_path("adult.data", download=download)


def load_race_education(path: Path | None = None) -> pd.DataFrame:
    """The columns ``COLUMNS`` of adult.data as strings, one row per record (all 32,561 rows)."""
    frame = load_adult(default_data() if path is None else Path(path))
    return frame[list(COLUMNS)].astype(str)
