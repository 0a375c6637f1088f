"""How the command line reports errors: one line to stderr and a non-zero status; tracebacks under --debug."""

from pathlib import Path

import pytest

from ppdinfer.case_studies.covid_pa import data as covid_data
from ppdinfer.case_studies.covid_pa import synthesis
from ppdinfer.cli import main

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "covid_pa"


@pytest.mark.parametrize("argument, value, message", [
    ("--workers", "0", "must be a positive integer, got '0'"),
    ("--seed", "-1", "must be a non-negative integer, got '-1'"),
    ("--replicates", "0", "must be a positive integer, got '0'"),
    ("--replicates", "-3", "must be a positive integer, got '-3'"),
    ("--sweeps", "0", "must be a positive integer, got '0'"),
    ("--sweeps", "two", "must be a positive integer, got 'two'"),
])
def test_the_parser_refuses_bad_numbers(tmp_path, capsys, argument, value, message):
    with pytest.raises(SystemExit) as exit_:
        main(["covid", "synthesize", "--data", str(tmp_path / "none"), "--results", str(tmp_path), argument, value])
    assert exit_.value.code == 2
    assert f"error: argument {argument}: {message}" in capsys.readouterr().err


def test_an_error_is_one_line_without_traceback(tmp_path, capsys):
    assert main(["covid", "report", "--results", str(tmp_path)]) == 1
    out = capsys.readouterr()
    assert out.err == f"ppdinfer: error: no synthesis results in {tmp_path}\n" and out.out == ""


def test_debug_shows_the_traceback(tmp_path):
    with pytest.raises(FileNotFoundError, match="no synthesis results"):
        main(["--debug", "covid", "report", "--results", str(tmp_path)])


def test_no_data_folder_is_one_line_naming_data(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv(covid_data.DATA_ENV, raising=False)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(covid_data, "__file__", str(tmp_path / "installed" / "data.py"))
    assert main(["covid", "synthesize", "--results", str(tmp_path / "results")]) == 1
    err = capsys.readouterr().err
    assert err.startswith("ppdinfer: error: no data folder: pass --data DIR") and err.count("\n") == 1


def test_an_unexpected_error_names_its_type(monkeypatch, capsys):
    def broken(args):
        raise RuntimeError("boom")

    monkeypatch.setattr("ppdinfer.cli._demo", broken)
    assert main(["demo"]) == 1
    assert capsys.readouterr().err == "ppdinfer: error: RuntimeError: boom (--debug shows the traceback)\n"


@pytest.mark.skipif(not DATA.exists(), reason=f"real data not found at {DATA}")
def test_an_interrupted_synthesis_says_how_to_resume(tmp_path, capsys, monkeypatch):
    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(synthesis, "run_synthesis", interrupted)
    assert main(["covid", "synthesize", "--data", str(DATA), "--results", str(tmp_path), "--workers", "1"]) == 130
    assert capsys.readouterr().err == (f"ppdinfer: interrupted: finished tasks are kept in {tmp_path}; "
                                       "run the same command to resume\n")
