"""How the command line reports errors: one line to stderr and a non-zero status; tracebacks under --debug."""

import json
from dataclasses import replace

import pytest

from ppdinfer.case_studies.covid_pa import data as covid_data
from ppdinfer.case_studies.covid_pa import synthesis
from ppdinfer.cli import main
from ppdinfer.datasets import COVID_PA_DATA

DATA = COVID_PA_DATA  # the table shipped with the package


@pytest.mark.parametrize(
    "argument, value, message",
    [
        ("--workers", "0", "must be a positive integer, got '0'"),
        ("--seed", "-1", "must be a non-negative integer, got '-1'"),
        ("--replicates", "0", "must be a positive integer, got '0'"),
        ("--replicates", "-3", "must be a positive integer, got '-3'"),
        ("--sweeps", "0", "must be a positive integer, got '0'"),
        ("--sweeps", "two", "must be a positive integer, got 'two'"),
    ],
)
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
    monkeypatch.setenv(covid_data.DATA_ENV, str(tmp_path / "missing"))
    assert main(["covid", "synthesize", "--results", str(tmp_path / "results")]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"ppdinfer: error: {tmp_path / 'missing'}: data directory not found") and err.count("\n") == 1


def test_an_unexpected_error_names_its_type(monkeypatch, capsys):
    def broken(args):
        raise RuntimeError("boom")

    monkeypatch.setattr("ppdinfer.cli._demo", broken)
    assert main(["demo"]) == 1
    assert capsys.readouterr().err == "ppdinfer: error: RuntimeError: boom (--debug shows the traceback)\n"


def test_an_interrupted_synthesis_says_how_to_resume(tmp_path, capsys, monkeypatch):
    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(synthesis, "run_synthesis", interrupted)
    assert main(["covid", "synthesize", "--data", str(DATA), "--results", str(tmp_path), "--workers", "1"]) == 130
    assert capsys.readouterr().err == (
        f"ppdinfer: interrupted: finished tasks are kept in {tmp_path}; run the same command to resume\n"
    )


def test_an_interrupt_without_a_message_says_interrupted(monkeypatch, capsys):
    def interrupted(args):
        raise KeyboardInterrupt

    monkeypatch.setattr("ppdinfer.cli._demo", interrupted)
    assert main(["demo"]) == 130
    assert capsys.readouterr().err == "ppdinfer: interrupted\n"


def test_reproduce_list_refuses_an_unknown_name_and_lists_a_known_one(capsys):
    assert main(["reproduce", "--list", "nosuch"]) == 1
    assert capsys.readouterr().err.startswith("ppdinfer: error: unknown case study 'nosuch'; choose from")
    assert main(["reproduce", "--list", "covid_pa"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("covid_pa: ") and "kantorovich_adult" not in out


def test_reproduce_takes_the_fresh_its_refusal_advises(monkeypatch, tmp_path, capsys):
    from ppdinfer import reproduce
    from ppdinfer.case_studies.covid_pa import results_dir

    (tmp_path / results_dir.MANIFEST).write_text(json.dumps({"seed": 1}))
    with pytest.raises(results_dir.ResultsError, match="start afresh with --fresh") as refused:
        results_dir.prepare(tmp_path, {"seed": 2})
    calls = []
    studies = reproduce.case_studies()
    study = studies["covid_pa"]
    assert study.takes_fresh and not studies["kantorovich_adult"].takes_fresh

    def run(results, quick, progressbar, fresh=False):
        calls.append((results, quick, fresh))
        return results / "report.md"

    monkeypatch.setattr(reproduce, "case_studies", lambda: {**studies, "covid_pa": replace(study, run=run)})
    assert main(["reproduce", "covid_pa", "--quick", "--fresh", "--results", str(tmp_path)]) == 0
    assert calls == [(tmp_path, True, True)] and "--fresh" in str(refused.value)
    assert main(["reproduce", "kantorovich_adult", "--fresh"]) == 1
    assert "--fresh: kantorovich_adult keeps no results" in capsys.readouterr().err
