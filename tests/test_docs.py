"""The documentation: every docstring example runs as a doctest, and the site builds strictly.

The doctests import each module under its installed name (``ppdinfer.models.county_counts``,
not ``models.county_counts``): the gallery and the case studies use relative imports into the
library, so pytest's own ``--doctest-modules``, which imports files by path, cannot load them.
"""

from __future__ import annotations

import doctest
import importlib
import io
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from matplotlib.image import imsave

ROOT = Path(__file__).resolve().parents[1]
SOURCES = {"ppdinfer": ROOT / "ppdinfer", "ppdinfer.models": ROOT / "models",
           "ppdinfer.case_studies": ROOT / "case_studies"}


def modules_with_examples() -> list[str]:
    """Every module of the package whose source holds a doctest, by its import name."""
    names = []
    for package, folder in SOURCES.items():
        for path in sorted(folder.rglob("*.py")):
            if path.name != "__main__.py" and ">>> " in path.read_text():
                module = path.relative_to(folder).with_suffix("")
                parts = module.parts[:-1] if module.name == "__init__" else module.parts
                names.append(".".join((package, *parts)))
    return names


@pytest.mark.parametrize("name", modules_with_examples())
def test_docstring_examples(name):
    module = importlib.import_module(name)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    report = io.StringIO()
    for test in doctest.DocTestFinder().find(module, name):
        runner.run(test, out=report.write)
    assert runner.tries > 0
    assert runner.failures == 0, report.getvalue()


def test_every_public_name_has_an_example_and_the_site_builds_strictly(tmp_path):
    """``make docs`` in a temporary folder: any warning fails, including docs/_ext/ppd_docscheck.py's."""
    figures = tmp_path / "figures"  # stand-ins for a case study's results folder
    figures.mkdir()
    for name in ["figure1_case_rates", "figure2_relative_error", "figure3_contractions", "figure4_correlated_counts"]:
        imsave(figures / f"{name}.png", np.array([[0.0, 1.0]]))
    build = subprocess.run(
        [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-n", "-q", "-b", "html",
         "-d", str(tmp_path / "doctrees"), str(ROOT / "docs"), str(tmp_path / "html")],
        capture_output=True, text=True, timeout=300, env={**os.environ, "PPDINFER_DOCS_FIGURES": str(figures)},
    )
    assert build.returncode == 0, build.stderr[-5000:]
    html = tmp_path / "html"
    assert (html / "notebooks" / "00_privatized_count.html").exists()  # rendered as stored, not executed
    assert (html / "_images" / "figure4_correlated_counts.png").exists()
