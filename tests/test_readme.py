"""The README's example prints what the README says it prints.

The test takes the first fenced ``python`` block of README.md and the fenced ``text`` block
that follows it, runs the code in a fresh interpreter and compares the printed lines with the
README's, tolerant only of trailing whitespace. When a change to a mechanism's stream, a
sampler or the summary changes the output, update the README's output block to what the code
prints (the failure shows both).
"""

import re
import subprocess
import sys
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def example_and_output(text: str) -> tuple[str, str]:
    """The first fenced python block and the fenced text block right after it."""
    found = re.search(r"^```python\n(.*?)^```\n\s*^```text\n(.*?)^```", text, flags=re.DOTALL | re.MULTILINE)
    assert found, "README.md: no ```python block followed by a ```text block of its output"
    return found.group(1), found.group(2)


def lines(text: str) -> list[str]:
    return [line.rstrip() for line in text.rstrip().splitlines()]


def test_the_readme_example_prints_its_output():
    code, expected = example_and_output(README.read_text(encoding="utf-8"))
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600, cwd=README.parent)
    assert run.returncode == 0, f"the README's example failed:\n{run.stderr}"
    assert lines(run.stdout) == lines(expected), (
        "README.md's example output differs from what the code prints; update the README's text block to:\n"
        + run.stdout
    )


def test_the_extraction_finds_the_blocks():
    code, output = example_and_output("intro\n```python\nprint(1)\n```\n\n```text\n1\n```\nmore\n")
    assert (code, output) == ("print(1)\n", "1\n")
    assert lines("a  \nb\n\n") == ["a", "b"]


# -- what installing prints: `make demo` says what it installs, setuptools has nothing to warn about -----------

ROOT = README.parent


def test_every_data_folder_of_the_package_is_declared():
    """setuptools warns "Package would be ignored" (40 lines each) for a folder under the package that is
    neither a listed package nor excluded; data folders are listed as packages with their package-data."""
    import tomllib

    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    listed = set(config["packages"])
    undeclared = []
    for folder, prefix in [
        ("ppdinfer", "ppdinfer"),
        ("models", "ppdinfer.models"),
        ("case_studies", "ppdinfer.case_studies"),
    ]:
        for path in (ROOT / folder).rglob("*"):
            if not path.is_file() or "__pycache__" in path.parts or path.suffix == ".py":
                continue
            parts = path.parent.relative_to(ROOT / folder).parts
            package = ".".join([prefix, *parts])
            if package not in listed:
                undeclared.append(f"{package} ({path.name})")
    assert not undeclared, f"list these data folders in [tool.setuptools] packages and package-data: {undeclared}"
    data = config["package-data"]
    assert all(package in listed for package in data), data


def test_make_says_what_it_installs_and_lets_pip_show_progress():
    makefile = (ROOT / "Makefile").read_text()
    install = [line for line in makefile.splitlines() if "pip install" in line and "'.[test]'" in line]
    assert install and all("--quiet" not in line for line in install), install
    assert "about 3 minutes on first use" in makefile
    readme = README.read_text(encoding="utf-8")
    assert "`make test` takes about 14 minutes" in readme and "the first `make demo` takes about 4 minutes" in readme
