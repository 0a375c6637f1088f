import subprocess
import sys
from pathlib import Path

import numpy as np

from ppdinfer.case_studies.covid_pa import data as covid_data
from ppdinfer.cli import main
from ppdinfer.datasets import COVID_PA_DATA
from ppdinfer.demo import run_demo

DATA = COVID_PA_DATA  # the table shipped with the package


def test_help_lists_the_commands():
    out = subprocess.run([sys.executable, "-m", "ppdinfer.cli", "--help"], capture_output=True, text=True, check=True)
    assert "demo" in out.stdout


def test_demo_runs_end_to_end(tmp_path, capsys):
    table = run_demo(tmp_path, draws=400, seed=3, progressbar=False)
    assert (tmp_path / "demo_posteriors.png").stat().st_size > 10_000
    printed = capsys.readouterr().out
    assert "rejection" in printed and "importance" in printed and "exact" in printed
    # the three methods agree on the posterior means (400 draws: loose but not vacuous)
    means = table.xs("mean", axis=1, level=1)
    assert np.allclose(means["rejection"], means["exact"], atol=0.03)
    assert np.allclose(means["importance"], means["exact"], atol=0.03)


def test_cli_demo_entry_point(tmp_path):
    assert main(["demo", "--output", str(tmp_path), "--draws", "200", "--no-progress"]) == 0
    assert (tmp_path / "demo_posteriors.png").exists()


def test_covid_commands_end_to_end(tmp_path, monkeypatch):
    results = tmp_path / "results"
    assert main(["covid", "synthesize", "--data", str(DATA), "--results", str(results), "--counties", "Allegheny",
                 "Cameron", "Forest", "--months", "2020-12", "2021-01", "--replicates", "1", "--sweeps", "20",
                 "--workers", "1", "--no-progress"]) == 0
    assert len(list(results.glob("*.nc"))) == 8
    # from another folder, without --data: the shipped table, which is the results'
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv(covid_data.DATA_ENV, raising=False)
    assert main(["covid", "report", "--results", str(results)]) == 0
    report = (results / "report" / "report.md").read_text()
    assert "Claim 1" in report and "figure1" in report and "| counties | 3: Allegheny, Cameron, Forest |" in report


def test_default_data_folder(monkeypatch):
    monkeypatch.setenv(covid_data.DATA_ENV, "/some/where")
    assert covid_data.default_data() == Path("/some/where")
    monkeypatch.delenv(covid_data.DATA_ENV)
    assert covid_data.default_data() == DATA and (DATA / "PROVENANCE.md").is_file()  # the shipped copy
