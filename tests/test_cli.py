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
