"""UCI Adult: the loader (counts of the real file, clean values, the two education orders, UCI's original
format, bad files), the local copy, the fetch into the cache from a local HTTP server (checksum mismatch
included), the skip when it is absent, and ``ppdinfer data``."""

from __future__ import annotations

import hashlib
import http.server
import os
import subprocess
import sys
import threading
from pathlib import Path

import pandas as pd
import pytest
from conftest import GET_ADULT, adult_here, require_adult

from ppdinfer import datasets
from ppdinfer.cli import main
from ppdinfer.datasets import (
    ADULT_COLUMNS,
    ADULT_ENV,
    CACHE_ENV,
    COVID_PA_DATA,
    EDUCATION_ORDER,
    KANTOROVICH_EDUCATION_ORDER,
    adult_path,
    fetch_adult,
    load_adult,
)

ROOT = Path(__file__).resolve().parents[1]

HEADER = (
    "age, workclass, fnlwgt, education, education-num, marital-status, occupation, relationship, race, sex, "
    "capital-gain, capital-loss, hours-per-week, native-country, Salary\n"
)
ROW = (
    "39, State-gov, 77516, Bachelors, 13, Never-married, Adm-clerical, Not-in-family, White, Male, 2174, 0, 40, "
    "United-States, <=50K\n"
)


@pytest.fixture(scope="module")
def real_path():
    return require_adult()


@pytest.fixture(scope="module")
def adult(real_path):
    return load_adult(real_path)


def test_the_real_file_has_its_documented_size(adult, real_path):
    assert len(adult) == 32_561 and tuple(adult.columns) == ADULT_COLUMNS
    assert adult.attrs["rows_dropped"] == 0
    complete = load_adult(real_path, drop_missing=True)
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


@pytest.mark.parametrize(
    "text, message",
    [
        ("", "not a readable Adult file"),
        ("a, b, c\n1, 2, 3\n", "line 1: expected 15 comma-separated fields"),
        (HEADER.replace("age", "years") + ROW, "line 1: expected the header"),
        (HEADER + ROW.replace("State-gov", ""), "line 2: workclass is empty"),
        (HEADER + ROW + "39, State-gov, 77516, Bachelors, 13\n", "line 3: expected 15 comma-separated fields"),
        (HEADER + ROW.replace("39,", "x9,"), "line 2: age must be an integer"),
        (HEADER + ROW.replace("Bachelors", "Kindergarten"), "line 2: education must be one of"),
        (HEADER + ROW.replace("Bachelors, 13", "Bachelors, 12"), "line 2: education_num must be 13"),
    ],
)
def test_a_malformed_file_is_refused_naming_path_and_problem(tmp_path, text, message):
    path = tmp_path / "adult.data"
    path.write_text(text)
    with pytest.raises(ValueError, match=message) as caught:
        load_adult(path)
    assert str(path) in str(caught.value)


def test_a_missing_file_is_refused(tmp_path):
    with pytest.raises(FileNotFoundError, match="no such file"):
        load_adult(tmp_path / "adult.data")


def test_the_environment_variable_names_the_file_or_its_folder(monkeypatch, tmp_path):
    (tmp_path / "mine.data").write_text(ROW)
    (tmp_path / "adult.test").write_text(ROW)
    monkeypatch.setenv(ADULT_ENV, str(tmp_path / "mine.data"))
    assert adult_path() == tmp_path / "mine.data" and adult_path("adult.test") == tmp_path / "adult.test"
    monkeypatch.setenv(ADULT_ENV, str(tmp_path))
    assert adult_path("adult.test", download=False) == tmp_path / "adult.test"
    monkeypatch.setenv(ADULT_ENV, str(tmp_path / "typo.data"))  # a path that is nothing: said, not downloaded
    with pytest.raises(FileNotFoundError, match=f"{ADULT_ENV}=.*typo.data: no such file or folder"):
        adult_path()
    with pytest.raises(ValueError, match="name must be one of adult.data, adult.test, got 'adult.names'"):
        adult_path("adult.names")
    with pytest.raises(ValueError, match="path must be a file or a non-empty sequence"):
        load_adult([])


# ---------------------------------------------------------------- UCI's original format


def _uci(rows: list[str], test: bool = False) -> str:
    """Records in UCI's original layout: no header; adult.test opens with a comment and ends labels with '.'."""
    if test:
        return "|1x3 Cross validator\n" + "".join(row.replace("K\n", "K.\n") for row in rows) + "\n"
    return "".join(rows) + "\n"


OTHER = "50, Private, 83311, HS-grad, 9, Divorced, ?, Not-in-family, Asian-Pac-Islander, Female, 0, 0, 13, ?, >50K\n"


def test_uci_original_files_read_as_the_header_copy(tmp_path):
    (tmp_path / "header.data").write_text(HEADER + ROW + OTHER)
    (tmp_path / "adult.data").write_text(_uci([ROW, OTHER]))
    (tmp_path / "adult.test").write_text(_uci([OTHER, ROW, ROW], test=True))
    header, data = load_adult(tmp_path / "header.data"), load_adult(tmp_path / "adult.data")
    pd.testing.assert_frame_equal(header, data)
    both = load_adult([tmp_path / "adult.data", tmp_path / "adult.test"])
    assert len(both) == 5 and both.attrs["files"] == ["adult.data", "adult.test"]
    assert both["salary"].tolist() == ["<=50K", ">50K", ">50K", "<=50K", "<=50K"]
    assert list(both["salary"].cat.categories) == ["<=50K", ">50K"]
    assert both["race"].tolist()[:3] == ["White", "Asian-Pac-Islander", "Asian-Pac-Islander"]
    complete = load_adult([tmp_path / "adult.data", tmp_path / "adult.test"], drop_missing=True)
    assert len(complete) == 3 and complete.attrs["rows_dropped"] == 2
    # line numbers count UCI's layout: adult.test's comment is line 1, its second record line 3
    (tmp_path / "adult.test").write_text(_uci([OTHER, ROW.replace("39,", "x9,")], test=True))
    with pytest.raises(ValueError, match="adult.test: line 3: age must be an integer, got 'x9'"):
        load_adult([tmp_path / "adult.data", tmp_path / "adult.test"])
    (tmp_path / "adult.data").write_text(_uci([ROW, OTHER.replace("HS-grad, 9", "HS-grad, 10")]))
    with pytest.raises(ValueError, match="adult.data: line 2: education_num must be 9"):
        load_adult(tmp_path / "adult.data")


# ---------------------------------------------------------------- fetching into the cache


class _Server:
    """A local HTTP server (127.0.0.1 only) serving a folder; counts the requests it answers."""

    def __init__(self, folder: Path):
        outer = self
        self.requests = 0

        class Handler(http.server.SimpleHTTPRequestHandler):
            def __init__(self, *args, **kwargs):
                super().__init__(*args, directory=str(folder), **kwargs)

            def do_GET(self):
                outer.requests += 1
                super().do_GET()

            def log_message(self, *args):
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.timeout = 5
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(timeout=5)


@pytest.fixture
def server(tmp_path):
    folder = tmp_path / "served"
    folder.mkdir()
    running = _Server(folder)
    yield running, folder
    running.close()


@pytest.fixture
def synthetic(tmp_path, server, monkeypatch):
    """Small files in UCI's format served locally, registered with their own checksums; empty local copy and cache."""
    running, folder = server
    files = {"adult.data": _uci([ROW, OTHER]), "adult.test": _uci([OTHER], test=True)}
    for name, text in files.items():
        (folder / name).write_text(text)
    monkeypatch.setattr(
        datasets,
        "ADULT_FILES",
        {name: (f"md5:{hashlib.md5(text.encode()).hexdigest()}", len(text)) for name, text in files.items()},
    )
    monkeypatch.setattr(datasets, "ADULT_URL", running.url)
    (tmp_path / "no_copy").mkdir()
    monkeypatch.setenv(ADULT_ENV, str(tmp_path / "no_copy"))
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "cache"))
    return running, folder, tmp_path / "cache" / "adult"


def test_fetch_on_first_use_into_the_cache_then_from_it(synthetic):
    running, folder, cached = synthetic
    with pytest.raises(FileNotFoundError, match="adult.data is not here .*ppdinfer data fetch adult"):
        adult_path(download=False)
    assert adult_path() == cached / "adult.data" and running.requests == 1
    assert (cached / "adult.data").read_bytes() == (folder / "adult.data").read_bytes()
    assert adult_path() == cached / "adult.data" and adult_path(download=False) == cached / "adult.data"
    assert fetch_adult("adult.data") == cached / "adult.data" and running.requests == 1  # checksum matches: no download
    frame = load_adult([adult_path(), adult_path("adult.test")])
    assert len(frame) == 3 and running.requests == 2 and frame["salary"].tolist()[-1] == ">50K"


def test_a_checksum_mismatch_is_refused_and_nothing_is_cached(synthetic):
    running, folder, cached = synthetic
    (folder / "adult.data").write_text(_uci([ROW, ROW]))  # not the registered file
    with pytest.raises(ValueError, match="is not UCI's adult.data, refused and not cached"):
        adult_path()
    assert running.requests == 1 and not (cached / "adult.data").exists()
    assert not [path for path in cached.parent.rglob("*") if path.is_file()]
    with pytest.raises(FileNotFoundError):
        adult_path(download=False)


def test_an_unreachable_host_is_an_oserror_saying_what_to_do(synthetic, monkeypatch):
    running, _, cached = synthetic
    address = running.url
    running.close()  # nothing listens there now
    with pytest.raises(OSError, match=f"could not download {address}adult.data: .*set {ADULT_ENV}"):
        fetch_adult(url=address, timeout=2)
    assert not (cached / "adult.data").exists()
    with pytest.raises(ValueError, match="timeout"):
        fetch_adult(timeout=0)


def test_the_real_files_checksums_through_the_fetch(tmp_path, server, monkeypatch):
    """UCI's adult.data is the real copy without its header line: fetched with the real checksum and size."""
    real = require_adult()
    running, folder = server
    lines = real.read_bytes().split(b"\n", 1)
    original = lines[1] if lines[0].startswith(b"age") else real.read_bytes()
    (folder / "adult.data").write_bytes(original)
    path = fetch_adult(url=running.url, cache=tmp_path / "cache")
    assert path == tmp_path / "cache" / "adult" / "adult.data" and path.stat().st_size == 3_974_305
    frame = load_adult(path)
    assert len(frame) == 32_561 and load_adult(path, drop_missing=True).attrs["rows_dropped"] == 2_399


# ---------------------------------------------------------------- ppdinfer data, and the skip when absent


def test_data_commands(synthetic, capsys):
    running, _, cached = synthetic
    assert main(["data", "path", "covid_pa"]) == 0
    assert capsys.readouterr().out == f"{COVID_PA_DATA}\n"
    assert main(["data", "path", "adult"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("ppdinfer: error: adult.data is not here") and GET_ADULT.split(" or ")[0][4:] in err
    assert err.count("\n") == 1 and running.requests == 0
    assert main(["data", "fetch", "--no-progress"]) == 0
    assert capsys.readouterr().out.split() == [str(cached / "adult.data"), str(cached / "adult.test")]
    assert main(["data", "path", "adult"]) == 0
    assert capsys.readouterr().out.split() == [str(cached / "adult.data"), str(cached / "adult.test")]
    assert main(["data", "list"]) == 0
    listing = capsys.readouterr().out
    assert (
        f"adult.data: {cached / 'adult.data'}" in listing and "CC BY 4.0" in listing and str(COVID_PA_DATA) in listing
    )
    assert running.requests == 2


def test_without_adult_the_tests_that_need_it_skip_with_one_line(tmp_path, monkeypatch):
    (tmp_path / "empty").mkdir()
    monkeypatch.setenv(ADULT_ENV, str(tmp_path / "empty"))
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "empty"))
    assert adult_here() is None and adult_here("adult.test") is None
    with pytest.raises(pytest.skip.Exception, match="adult.data is not here: run `ppdinfer data fetch adult`"):
        require_adult()
    # the suite itself, with the data location pointed at the empty folder: skipped, nothing fails or downloads
    tests = [
        "tests/test_kantorovich_adult.py::test_quick_reproduction_writes_the_report_and_the_claims_hold_except"
        "_the_errata",
        "tests/test_distribution_privacy_adult.py::test_quick_reproduction_writes_the_report_and_its_numbers_hold",
        "tests/test_notebooks.py::test_notebook_runs[06_pufferfish.ipynb]",
        "tests/test_datasets.py::test_the_real_file_has_its_documented_size",
    ]
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", *tests],
        cwd=ROOT,
        env={**os.environ, ADULT_ENV: str(tmp_path / "empty"), CACHE_ENV: str(tmp_path / "empty")},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stdout[-2000:]
    skips = [line for line in run.stdout.splitlines() if line.startswith("SKIPPED")]
    assert len(skips) == 4 and all("not here" in line and "ppdinfer data fetch adult" in line for line in skips)
    assert "4 skipped" in run.stdout and not any(tmp_path.joinpath("empty").iterdir())


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
