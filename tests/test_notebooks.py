"""The teaching notebooks run from top to bottom, quickly, with their figures inline and their
exercises' solutions hidden but checked."""

import time
from pathlib import Path

import pytest
from conftest import GET_ADULT, adult_here

NOTEBOOKS = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("*.ipynb"))
#: Each notebook must run in under a minute on a quiet 2-core machine; the test allows headroom for load.
RUN_TIME_LIMIT_S = 120
SOLUTION_TAGS = {"hide-cell", "solution"}


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_runs(path, tmp_path):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    notebook = nbformat.read(path, as_version=4)
    if any("load_adult(" in cell.source for cell in notebook.cells) and adult_here() is None:
        pytest.skip(f"{path.name} reads UCI Adult, which is not here: {GET_ADULT}")
    start = time.perf_counter()
    nbclient.NotebookClient(
        notebook, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    ).execute()
    elapsed = time.perf_counter() - start
    print(f"{path.name}: {elapsed:.1f} s")
    errors = [
        output
        for cell in notebook.cells
        if cell.cell_type == "code"
        for output in cell.get("outputs", [])
        if output.get("output_type") == "error"
    ]
    assert not errors
    assert elapsed < RUN_TIME_LIMIT_S, f"{path.name} took {elapsed:.0f} s"
    # Figures show inline: a cell that draws must display a PNG (a non-interactive backend would show nothing).
    drawing = [cell for cell in notebook.cells if cell.cell_type == "code" and "plt." in cell.source]
    for cell in drawing:
        assert any("image/png" in output.get("data", {}) for output in cell.get("outputs", [])), cell.source[:80]


def test_notebooks_are_stored_without_outputs():
    nbformat = pytest.importorskip("nbformat")
    for path in NOTEBOOKS:
        cells = nbformat.read(path, as_version=4).cells
        assert not any(cell.get("outputs") for cell in cells if cell.cell_type == "code"), path.name


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_exercises_have_hidden_checked_solutions(path):
    """Every "### Exercise" cell is followed by one hidden solution cell that asserts its answer."""
    nbformat = pytest.importorskip("nbformat")
    cells = nbformat.read(path, as_version=4).cells
    exercises = [
        i for i, cell in enumerate(cells) if cell.cell_type == "markdown" and cell.source.startswith("### Exercise")
    ]
    assert len(exercises) >= 2, f"{path.name} has {len(exercises)} exercises"
    for i in exercises:
        solution = cells[i + 1]
        assert solution.cell_type == "code" and solution.source.startswith("# Solution"), cells[i].source[:60]
        assert SOLUTION_TAGS <= set(solution.metadata.get("tags", [])), cells[i].source[:60]
        assert solution.metadata.get("jupyter", {}).get("source_hidden") is True, cells[i].source[:60]
        assert "assert " in solution.source, cells[i].source[:60]


def test_the_census_notebook_builds_its_data_from_the_public_api():
    """Notebook 08 teaches ppdinfer.census: its code imports no case study's helpers."""
    nbformat = pytest.importorskip("nbformat")
    (path,) = [path for path in NOTEBOOKS if path.name.startswith("08_")]
    code = "\n".join(cell.source for cell in nbformat.read(path, as_version=4).cells if cell.cell_type == "code")
    assert "from ppdinfer.census import" in code and "case_studies" not in code
