"""The teaching notebooks run from top to bottom."""

from pathlib import Path

import pytest

NOTEBOOKS = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("*.ipynb"))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_runs(path, tmp_path):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    notebook = nbformat.read(path, as_version=4)
    nbclient.NotebookClient(notebook, timeout=600, kernel_name="python3",
                            resources={"metadata": {"path": str(tmp_path)}}).execute()
    errors = [output for cell in notebook.cells if cell.cell_type == "code"
              for output in cell.get("outputs", []) if output.get("output_type") == "error"]
    assert not errors
    # Figures show inline: a cell that draws must display a PNG (a non-interactive backend would show nothing).
    drawing = [cell for cell in notebook.cells if cell.cell_type == "code" and "plt." in cell.source]
    for cell in drawing:
        assert any("image/png" in output.get("data", {}) for output in cell.get("outputs", [])), cell.source[:80]


def test_notebooks_are_stored_without_outputs():
    nbformat = pytest.importorskip("nbformat")
    for path in NOTEBOOKS:
        cells = nbformat.read(path, as_version=4).cells
        assert not any(cell.get("outputs") for cell in cells if cell.cell_type == "code"), path.name
