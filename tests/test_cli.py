import subprocess
import sys

import numpy as np

from ppdinfer.cli import main
from ppdinfer.demo import run_demo


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


def test_covid_commands_end_to_end(tmp_path):
    from pathlib import Path

    import pytest

    data = Path(__file__).resolve().parents[2] / "shared" / "data" / "covid_pa"
    if not data.exists():
        pytest.skip(f"real data not found at {data}")
    common = ["--data", str(data), "--results", str(tmp_path), "--counties", "Allegheny", "Cameron", "Forest"]
    months = ["--months", "2020-12", "2021-01"]
    assert main(["covid", "synthesize", *common, *months, "--replicates", "1", "--sweeps", "20", "--workers", "1",
                 "--no-progress"]) == 0
    assert len(list(tmp_path.glob("*.nc"))) == 8
    assert main(["covid", "report", *common, *months]) == 0
    report = (tmp_path / "report" / "report.md").read_text()
    assert "Claim 1" in report and "figure1" in report
