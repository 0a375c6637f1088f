"""The documentation: every docstring example runs as a doctest, and the site builds strictly.

The doctests import each module under its installed name (``ppdinfer.models.county_counts``,
not ``models.county_counts``): the gallery and the case studies use relative imports into the
library, so pytest's own ``--doctest-modules``, which imports files by path, cannot load them.
"""

from __future__ import annotations

import ast
import doctest
import importlib
import io
import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from matplotlib.image import imsave

from ppdinfer.reproduce import case_studies

ROOT = Path(__file__).resolve().parents[1]
SOURCES = {
    "ppdinfer": ROOT / "ppdinfer",
    "ppdinfer.models": ROOT / "models",
    "ppdinfer.case_studies": ROOT / "case_studies",
}


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


CONTROL_BYTES = re.compile(rb"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def test_no_source_file_holds_a_control_character():
    """Bytes 0x00-0x08, 0x0B, 0x0C, 0x0E-0x1F and 0x7F: a ``\\a`` or ``\\b`` meant as LaTeX in a
    non-raw docstring is a BEL or a backspace, which breaks the strict docs build and ``help()``."""
    found = []
    for folder in SOURCES.values():
        for path in sorted(folder.rglob("*.py")):
            source = path.read_bytes()
            for number, line in enumerate(source.split(b"\n"), 1):
                for byte in CONTROL_BYTES.findall(line):
                    found.append(f"{path.relative_to(ROOT)}:{number}: byte 0x{byte[0]:02x}")
            # an escape such as "\\a" in a non-raw docstring is no control byte in the file, only in the string
            for node in ast.walk(ast.parse(source)):
                if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                    doc = ast.get_docstring(node, clean=False)
                    if doc and CONTROL_BYTES.search(doc.encode()):
                        line = node.body[0].lineno
                        found.append(f"{path.relative_to(ROOT)}:{line}: a control character in the docstring")
    assert found == [], "control characters in the sources:\n" + "\n".join(found)


def sphinx(source: Path, out: Path, *options: str, timeout: int = 300) -> subprocess.CompletedProcess:
    """``sphinx-build -W --keep-going -n`` of ``source`` into ``out/html`` (doctrees in ``out/doctrees``)."""
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "sphinx",
            "-W",
            "--keep-going",
            "-n",
            "-q",
            "-b",
            "html",
            "-d",
            str(out / "doctrees"),
            *options,
            str(source),
            str(out / "html"),
        ],
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def test_every_public_name_has_an_example_and_the_site_builds_strictly(tmp_path):
    """``make docs`` in a temporary folder, any warning failing it (docs/_ext/ppd_docscheck.py's included).

    Without executing the notebooks (tests/test_notebooks.py does) or running the case studies
    (their tests run the quick variants): one case study's quick run is a stand-in in the cache,
    and its page must show its claims table and figure; the others show a note.
    """
    cache = tmp_path / "cache"
    run = cache / "case_studies" / "semidp_tables"
    run.mkdir(parents=True)
    imsave(run / "stand_in_figure.png", np.array([[0.0, 1.0]]))
    (run / "report.md").write_text(
        "# Stand-in report\n\n## Claims\n\n| # | claim | holds |\n|---|---|---|\n"
        "| 1 | a stand-in claim | yes |\n\n![a stand-in figure](stand_in_figure.png)\n"
    )
    (cache / "case_studies" / "semidp_tables.json").write_text(
        json.dumps({"report": "report.md", "seconds": 7.0, "digest": "0123456789abcdef", "version": "0"})
    )
    build = sphinx(
        ROOT / "docs",
        tmp_path,
        "-D",
        "nb_execution_mode=off",
        "-D",
        "ppd_case_study_runs=0",
        "-D",
        f"ppd_cache={cache}",
    )
    assert build.returncode == 0, build.stderr[-5000:]
    html = tmp_path / "html"
    assert (html / "notebooks" / "00_privatized_count.html").exists()
    page = (html / "case_studies" / "semidp_tables.html").read_text()
    assert "a stand-in claim" in page and "code digest 0123456789abcdef" in page
    assert (html / "_images" / "stand_in_figure.png").exists()
    assert "No quick run is shown here" in (html / "case_studies" / "covid_pa.html").read_text()
    index = (html / "case_studies.html").read_text()
    for name in case_studies():
        assert f'href="case_studies/{name}.html"' in index, name


NOTEBOOK_CONF = """
import sys
sys.path.insert(0, {ext!r})
extensions = ["myst_nb", "ppd_results"]
nb_execution_mode = "cache"
nb_execution_show_tb = True
nb_execution_in_temp = True
ppd_case_study_runs = False
ppd_case_study_pages = ""
ppd_data_absent_errors = ["FileNotFoundError"]
"""


def notebook(*sources: str):
    nbformat = pytest.importorskip("nbformat")
    return nbformat.v4.new_notebook(
        cells=[nbformat.v4.new_markdown_cell("# A notebook")]
        + [nbformat.v4.new_code_cell(source) for source in sources]
    )


def test_a_notebook_whose_data_are_absent_is_shown_without_outputs_and_another_failure_fails(tmp_path):
    """The executed-notebook build: absent data (FileNotFoundError) gives a note; any other error fails it."""
    nbformat = pytest.importorskip("nbformat")
    source = tmp_path / "source"
    source.mkdir()
    (source / "conf.py").write_text(NOTEBOOK_CONF.format(ext=str(ROOT / "docs" / "_ext")))
    (source / "index.md").write_text("# Index\n\n```{toctree}\nreads_data\n```\n")
    nbformat.write(notebook("print('first' + 'output')", "open('no-such-data.csv')"), source / "reads_data.ipynb")
    build = sphinx(source, tmp_path / "absent")
    assert build.returncode == 0, build.stderr[-3000:]
    page = (tmp_path / "absent" / "html" / "reads_data.html").read_text()
    assert "Shown without outputs" in page and "No such file or directory" in page
    assert "firstoutput" not in page  # the partial outputs are gone, the cells stay
    assert page.count("cell_input") == 2

    nbformat.write(notebook("print('first' + 'output')", "raise ValueError('a bug')"), source / "reads_data.ipynb")
    build = sphinx(source, tmp_path / "bug")
    assert build.returncode != 0
    assert "Executing notebook failed" in build.stderr and "ValueError" in build.stderr


def test_data_absent_reads_the_error_line_of_a_traceback():
    sys.path.insert(0, str(ROOT / "docs" / "_ext"))
    from ppd_results import data_absent

    traceback = (
        "nbclient.exceptions.CellExecutionError: An error occurred\n------------------\n"
        "raise FileNotFoundError('x')\n------------------\n\n"
        "\x1b[31mFileNotFoundError\x1b[39m: no adult data: set PPDINFER_ADULT_DATA\n"
    )
    assert data_absent(traceback, ["FileNotFoundError"]) == "FileNotFoundError: no adult data: set PPDINFER_ADULT_DATA"
    assert data_absent(traceback.replace("FileNotFoundError", "KeyError"), ["FileNotFoundError"]) is None


def test_readme_fits_a_screen_and_lists_every_case_study_from_the_registry():
    sys.path.insert(0, str(ROOT / "docs" / "_ext"))
    from ppd_results import readme_table

    readme = (ROOT / "README.md").read_text()
    assert len(readme) <= 8500, len(readme)
    assert "make demo" in readme and "make test" in readme and "pip install ." in readme
    table = readme_table()
    assert table in readme, f"README.md's case-study table differs from the registry; it should read:\n{table}"
    figure = ROOT / "docs" / "_static" / "demo_posteriors.png"
    assert f"]({figure.relative_to(ROOT).as_posix()})" in readme
    assert figure.stat().st_size < 200_000
    assert (ROOT / "LICENSE").read_text().startswith("MIT License")
    links = re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", readme)
    assert {"docs/index.md", "docs/api/index.md", "LICENSE"} <= set(links)
    assert [link for link in links if not (ROOT / link).exists()] == []
