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
