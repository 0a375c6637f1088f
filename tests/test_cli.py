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
    assert (
        main(
            [
                "covid",
                "synthesize",
                "--data",
                str(DATA),
                "--results",
                str(results),
                "--counties",
                "Allegheny",
                "Cameron",
                "Forest",
                "--months",
                "2020-12",
                "2021-01",
                "--replicates",
                "1",
                "--sweeps",
                "20",
                "--workers",
                "1",
                "--no-progress",
            ]
        )
        == 0
    )
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


def test_help_and_listings_import_no_heavy_module():
    # ppdinfer --help, data list, reproduce --list and covid --help in a fresh interpreter: case studies are
    # found and their commands registered without importing PyMC, matplotlib or a case study's pipeline
    code = (
        "import contextlib, io, sys\n"
        "from ppdinfer.cli import main\n"
        "for argv in (['--help'], ['data', 'list'], ['reproduce', '--list'], ['covid', '--help']):\n"
        "    with contextlib.redirect_stdout(io.StringIO()) as out, contextlib.suppress(SystemExit):\n"
        "        main(argv)\n"
        "    assert out.getvalue(), argv\n"
        "print(' '.join(sorted(sys.modules)))"
    )
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    heavy = [
        m
        for m in loaded
        if m.split(".")[0] in ("pymc", "pytensor", "matplotlib")
        or (m.startswith("ppdinfer.case_studies.") and m.endswith((".pipeline", ".figures", ".report")))
    ]
    assert heavy == []
    assert {f"ppdinfer.case_studies.{name}" for name in ("covid_pa", "congenial_2x23")} <= set(loaded)
