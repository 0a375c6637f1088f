"""The UCI Adult loader: counts of the shared copy, clean values, the two education orders, bad files."""

from __future__ import annotations

import pandas as pd
import pytest

from ppdinfer.datasets import (ADULT_COLUMNS, ADULT_ENV, EDUCATION_ORDER, KANTOROVICH_EDUCATION_ORDER,
                               default_adult_path, load_adult)

HEADER = ("age, workclass, fnlwgt, education, education-num, marital-status, occupation, relationship, race, sex, "
          "capital-gain, capital-loss, hours-per-week, native-country, Salary\n")
ROW = ("39, State-gov, 77516, Bachelors, 13, Never-married, Adm-clerical, Not-in-family, White, Male, 2174, 0, 40, "
       "United-States, <=50K\n")


@pytest.fixture(scope="module")
def adult_path():
    try:
        return default_adult_path()
    except FileNotFoundError:
        pytest.skip("the shared adult.data is not available")


@pytest.fixture(scope="module")
def adult(adult_path):
    return load_adult(adult_path)


def test_the_shared_file_has_its_documented_size(adult, adult_path):
    assert len(adult) == 32_561 and tuple(adult.columns) == ADULT_COLUMNS
    assert adult.attrs["rows_dropped"] == 0
    complete = load_adult(adult_path, drop_missing=True)
    assert len(complete) == 30_162 and complete.attrs["rows_dropped"] == 2_399
    assert not complete.isna().any().any()


def test_values_are_stripped_typed_and_missing_marks_are_gone(adult):
    assert adult["education"].cat.ordered and tuple(adult["education"].cat.categories) == EDUCATION_ORDER
    for column in ["workclass", "race", "sex", "native_country", "salary"]:
        categories = adult[column].cat.categories
        assert "?" not in categories and all(value == value.strip() for value in categories)
    assert set(adult["salary"].cat.categories) == {"<=50K", ">50K"}
    assert adult["age"].dtype == "int64" and adult["education_num"].between(1, 16).all()
    assert adult[["workclass", "occupation", "native_country"]].isna().any(axis=1).sum() == 2_399


def test_both_races_have_records_at_all_sixteen_education_levels(adult):
    # The Kantorovich paper drops 5th-6th and Preschool; both races it compares have records there.
    counts = pd.crosstab(adult["race"], adult["education"]).reindex(columns=list(EDUCATION_ORDER))
    for race in ["White", "Asian-Pac-Islander"]:
        assert (counts.loc[race] > 0).all(), race
    assert counts.loc["Asian-Pac-Islander", ["5th-6th", "Preschool"]].tolist() == [18, 6]


def test_the_two_education_orders():
    assert len(EDUCATION_ORDER) == 16 == len(set(EDUCATION_ORDER))
    assert len(KANTOROVICH_EDUCATION_ORDER) == 14 == len(set(KANTOROVICH_EDUCATION_ORDER))
    assert set(EDUCATION_ORDER) - set(KANTOROVICH_EDUCATION_ORDER) == {"5th-6th", "Preschool"}
    assert KANTOROVICH_EDUCATION_ORDER[0] == "Bachelors" and KANTOROVICH_EDUCATION_ORDER[13] == "Doctorate"


@pytest.mark.parametrize("text, message", [
    ("", "not a readable adult.data"),
    ("a, b, c\n1, 2, 3\n", "line 1: expected 15 comma-separated fields"),
    (HEADER.replace("age", "years") + ROW, "line 1: expected the header"),
    (HEADER + ROW.replace("State-gov", ""), "line 2: workclass is empty"),
    (HEADER + ROW + "39, State-gov, 77516, Bachelors, 13\n", "line 3: expected 15 comma-separated fields"),
    (HEADER + ROW.replace("39,", "x9,"), "line 2: age must be an integer"),
    (HEADER + ROW.replace("Bachelors", "Kindergarten"), "line 2: education must be one of"),
    (HEADER + ROW.replace("Bachelors, 13", "Bachelors, 12"), "line 2: education_num must be 13"),
])
def test_a_malformed_file_is_refused_naming_path_and_problem(tmp_path, text, message):
    path = tmp_path / "adult.data"
    path.write_text(text)
    with pytest.raises(ValueError, match=message) as caught:
        load_adult(path)
    assert str(path) in str(caught.value)


def test_a_missing_file_is_refused(tmp_path):
    with pytest.raises(FileNotFoundError, match="no such file"):
        load_adult(tmp_path / "adult.data")


def test_the_environment_variable_names_the_file(monkeypatch, tmp_path):
    monkeypatch.setenv(ADULT_ENV, str(tmp_path / "mine.data"))
    assert default_adult_path() == tmp_path / "mine.data"


def test_race_to_education_w_inf_depends_on_the_levels_kept_and_their_order(adult):
    # The Kantorovich paper's Adult example: plan sensitivity (W_inf on the level indices) between
    # P(education | White) and P(education | Asian-Pac-Islander). Its 14 levels give its 2; keeping
    # all 16 (5th-6th and Preschool appended as levels 15 and 16) or the natural order gives 3.
    from ppdinfer.privacy import w_inf

    counts = pd.crosstab(adult["race"], adult["education"])

    def sensitivity(order):
        table = counts.loc[["White", "Asian-Pac-Islander"], list(order)].to_numpy(float)
        pmfs = table / table.sum(axis=1, keepdims=True)
        return w_inf(pmfs[0], pmfs[1], range(1, len(order) + 1))

    assert sensitivity(KANTOROVICH_EDUCATION_ORDER) == 2.0
    assert sensitivity(KANTOROVICH_EDUCATION_ORDER + ("5th-6th", "Preschool")) == 3.0
    assert sensitivity(EDUCATION_ORDER) == 3.0
