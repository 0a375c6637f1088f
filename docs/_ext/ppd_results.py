"""Pictures for the documentation: the notebooks executed, the case studies' quick runs.

**Notebooks.** myst-nb executes them (``nb_execution_mode = "cache"`` in ``conf.py``) into a
jupyter-cache under ``<ppd_cache>/notebooks/<digest>``, where ``<digest>`` is :func:`code_digest`
of the package's sources: a changed library re-executes them, an unchanged one reuses the outputs
(jupyter-cache itself keys each notebook by its code cells). A notebook that fails because the
data it reads are absent here (its error is one of ``ppd_data_absent_errors``) is shown as stored,
without outputs, under a one-line note, and the build goes on; any other failure stays a warning,
which fails the strict build.

**Case studies.** In a page, the block

    ```{case-study-run} NAME
    ```

stands for the report of NAME's quick run (``ppdinfer reproduce NAME --quick``), made in a child
process at the start of the build into ``<ppd_cache>/case_studies/NAME/`` and kept while the code
digest is unchanged: its claims table and figures are included in the page. A run that fails for
absent data leaves a note saying so; another failure is a warning. With ``ppd_case_study_runs``
off nothing runs and the pages show what the cache holds. The block

    ```{case-study-table}
    ```

stands for the table of every registered case study (:mod:`ppdinfer.reproduce`), each linked to its
page ``case_studies/NAME``; a registered case study without such a page is a warning (the folder is
``ppd_case_study_pages``; empty: no check).
:func:`readme_table` is the README's table, which ``tests/test_docs.py`` checks against the registry.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

from docutils import nodes
from sphinx.util import logging as sphinx_logging

logger = sphinx_logging.getLogger(__name__)

ROOT = Path(__file__).resolve().parents[2]
#: The folders whose files decide what the notebooks and the case studies show.
CODE_FOLDERS = ("ppdinfer", "models", "case_studies")

_RUN = re.compile(r"^```\{case-study-run\}[ \t]+(\w+)[ \t]*\n```[ \t]*$", re.MULTILINE)
_TABLE = re.compile(r"^```\{case-study-table\}[ \t]*\n```[ \t]*$", re.MULTILINE)
_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_ERROR_LINE = re.compile(r"^([A-Za-z_][\w.]*): (.*)$", re.MULTILINE)


def code_digest(root: Path = ROOT) -> str:
    """SHA-256 (16 hex digits) of the package's files: ``CODE_FOLDERS`` less caches and Markdown."""
    digest = hashlib.sha256()
    for folder in CODE_FOLDERS:
        for path in sorted((root / folder).rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts and path.suffix not in {".pyc", ".md"}:
                digest.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def cache_root(app) -> Path:
    """``ppd_cache`` (relative to the docs folder unless absolute)."""
    return Path(app.srcdir, app.config.ppd_cache).resolve()


def _studies() -> dict:
    from ppdinfer.reproduce import case_studies

    return case_studies()


# --- the case studies' table, in the docs and the README ---------------------------------------------------------


def docs_table(here: str) -> str:
    """The registry as a Markdown table for the page ``here`` (a docname), each study linked to its page."""
    from ppdinfer.reproduce import markdown_table

    base = os.path.dirname(here)
    rows = [
        [
            f"[{s.name}]({os.path.relpath(f'case_studies/{s.name}.md', base or '.')})",
            s.title,
            s.paper,
            f"{s.minutes[0]:g} / {s.minutes[1]:g}",
        ]
        for s in _studies().values()
    ]
    return markdown_table(["case study", "reproduces", "paper", "minutes (full / quick)"], rows)


def readme_table() -> str:
    """The README's table of case studies, from the registry (``tests/test_docs.py`` checks the README holds it)."""
    from ppdinfer.reproduce import markdown_table

    rows = [
        [f"[`{s.name}`](case_studies/{s.name}/README.md)", s.paper, f"{s.minutes[0]:g} / {s.minutes[1]:g}"]
        for s in _studies().values()
    ]
    return markdown_table(["case study", "reproduces", "minutes (full / quick)"], rows)


# --- the quick runs --------------------------------------------------------------------------------------------------

_CHILD = """\
import json, sys, time
from pathlib import Path
from ppdinfer.reproduce import case_studies
name, folder, outcome = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3])
start = time.perf_counter()
try:
    report = case_studies()[name].run(folder, True, False)
    result = {"report": str(Path(report).resolve().relative_to(folder.resolve()))}
except Exception as err:
    result = {"error": type(err).__name__, "errors": [c.__name__ for c in type(err).__mro__],
              "message": str(err).splitlines()[0] if str(err) else ""}
result["seconds"] = round(time.perf_counter() - start, 1)
outcome.write_text(json.dumps(result))
"""


def _stamp(root: Path, name: str) -> dict | None:
    try:
        return json.loads((root / f"{name}.json").read_text())
    except (OSError, ValueError):
        return None


def run_case_studies(app) -> None:
    """Run each registered case study's quick variant whose cached run is missing or from other code."""
    root = cache_root(app) / "case_studies"
    app.env.ppd_case_study_notes = notes = {}
    if not app.config.ppd_case_study_runs:
        return
    digest = code_digest()
    root.mkdir(parents=True, exist_ok=True)
    for name in _studies():
        stamp = _stamp(root, name)
        if stamp is not None and stamp.get("digest") == digest and (root / name / stamp["report"]).is_file():
            continue
        folder = root / name
        shutil.rmtree(folder, ignore_errors=True)
        (root / f"{name}.json").unlink(missing_ok=True)
        outcome = root / f"{name}.outcome.json"
        logger.info(f"ppd_results: running {name} --quick into {folder}")
        start = time.perf_counter()
        try:
            child = subprocess.run(
                [sys.executable, "-c", _CHILD, name, str(folder), str(outcome)],
                cwd=ROOT,
                capture_output=True,
                text=True,
                timeout=app.config.ppd_case_study_timeout,
            )
            result = (
                json.loads(outcome.read_text())
                if outcome.is_file()
                else {
                    "error": "ChildProcessError",
                    "errors": ["ChildProcessError"],
                    "message": f"exit status {child.returncode}: {child.stderr.strip()[-300:]}",
                }
            )
        except subprocess.TimeoutExpired:
            result = {
                "error": "TimeoutError",
                "errors": ["TimeoutError"],
                "message": f"no report after {app.config.ppd_case_study_timeout} s",
            }
        outcome.unlink(missing_ok=True)
        if "report" in result:
            result.update(digest=digest, version=_version())
            (root / f"{name}.json").write_text(json.dumps(result))
            logger.info(f"ppd_results: {name} --quick took {time.perf_counter() - start:.0f} s")
            continue
        notes[name] = f"{result['error']}: {result['message']}"
        if set(result["errors"]) & set(app.config.ppd_data_absent_errors):
            logger.info(f"ppd_results: {name} not run, its data are absent here ({notes[name]})")
        else:
            logger.warning(f"case study {name}: the quick run failed: {notes[name]}")


def _version() -> str:
    import ppdinfer

    return ppdinfer.__version__


def _run_markdown(app, docname: str, name: str) -> str:
    """What ``{case-study-run} NAME`` stands for in the page ``docname``."""
    root = cache_root(app) / "case_studies"
    stamp = _stamp(root, name)
    command = f"`ppdinfer reproduce {name} --quick`"
    if stamp is None or not (root / name / stamp["report"]).is_file():
        why = app.env.ppd_case_study_notes.get(name, "case study runs are off in this build (ppd_case_study_runs)")
        return (
            f"No quick run is shown here: {why}. {command} makes one (its report.md has the claims table and "
            f"the figures); `make docs` runs it and shows it on this page."
        )
    report = root / name / stamp["report"]
    app.env.note_dependency(str(report))
    include = os.path.relpath(report, Path(app.srcdir, docname).parent)
    return (
        f"From the quick run ({command}, {stamp['seconds']:.0f} s) made when these pages were built, with "
        f"ppdinfer {stamp['version']} (code digest {stamp['digest']}): its report follows, claims table and "
        f"figures included. The full run (`ppdinfer reproduce {name}`) checks the same claims on more "
        f"replicates.\n\n```{{include}} {include}\n:relative-images:\n:heading-offset: 2\n```\n"
    )


def expand_blocks(app, docname: str, source: list[str]) -> None:
    """``source-read``: replace the ``case-study-run`` and ``case-study-table`` blocks by their Markdown."""
    text = _TABLE.sub(lambda _: docs_table(docname), source[0])
    source[0] = _RUN.sub(lambda match: _run_markdown(app, docname, match.group(1)), text)


def check_pages(app, env) -> None:
    """``env-check-consistency``: every registered case study has its page ``<ppd_case_study_pages>/NAME``."""
    folder = app.config.ppd_case_study_pages
    for name in _studies() if folder else ():
        if f"{folder}/{name}" not in env.found_docs:
            logger.warning(f"case study {name} has no page docs/{folder}/{name}.md")


# --- notebooks whose data are absent ---------------------------------------------------------------------------------


def data_absent(message: str, errors) -> str | None:
    """The error line of a failed notebook's traceback when its error is one of ``errors``, else None."""
    lines = _ERROR_LINE.findall(_ANSI.sub("", message))
    if lines and lines[-1][0].rsplit(".", 1)[-1] in set(errors):
        return ": ".join(lines[-1])
    return None


class _DataAbsentFilter(logging.Filter):
    """Turns myst-nb's "Executing notebook failed" warning into a note when the notebook's data are absent."""

    def __init__(self, app, docname: str):
        super().__init__()
        self.app, self.docname = app, docname

    def filter(self, record):
        message = record.getMessage()
        if record.levelno < logging.WARNING:
            return True
        if message.startswith("Executing notebook failed"):
            line = data_absent(message, self.app.config.ppd_data_absent_errors)
            if line is None:
                return True
            self.app.env.ppd_unexecuted[self.docname] = line
            message = f"{self.docname}: shown without outputs, its data are absent here ({line})"
        elif not (
            message.startswith("Notebook exception traceback saved in") and self.docname in self.app.env.ppd_unexecuted
        ):
            return True
        record.levelno, record.levelname = logging.INFO, "INFO"
        record.msg, record.args = message, ()
        return True


def notebook_cache(app, config) -> None:
    """``config-inited``: execute into the jupyter-cache of this code digest (older ones are removed)."""
    if config.nb_execution_mode != "cache" or config.nb_execution_cache_path:
        return
    folder, digest = cache_root(app) / "notebooks", code_digest()
    for old in folder.glob("*"):
        if old.name != digest:
            shutil.rmtree(old, ignore_errors=True)
    config.nb_execution_cache_path = str(folder / digest)


def watch_notebook(app, docname: str, source: list[str]) -> None:
    """``source-read``: before myst-nb executes a notebook, the filter that notes its data being absent."""
    if not hasattr(app.env, "ppd_unexecuted"):
        app.env.ppd_unexecuted = {}
    if Path(app.env.doc2path(docname)).suffix == ".ipynb":
        notebook_logger = logging.getLogger(f"sphinx.mystnb-{docname}")
        for old in [f for f in notebook_logger.filters if isinstance(f, _DataAbsentFilter)]:
            notebook_logger.removeFilter(old)  # one from an earlier build in this process
        notebook_logger.addFilter(_DataAbsentFilter(app, docname))


def strip_unexecuted(app, doctree) -> None:
    """``doctree-read``: a notebook whose data were absent shows its cells without the partial outputs."""
    line = getattr(app.env, "ppd_unexecuted", {}).pop(app.env.docname, None)
    if line is None:
        return
    for output in list(doctree.findall(lambda n: isinstance(n, nodes.container) and "cell_output" in n["classes"])):
        output.parent.remove(output)
    section = next(doctree.findall(nodes.section), doctree)
    note = nodes.note(
        "",
        nodes.paragraph(
            text=f"Shown without outputs: the data this notebook reads are absent where "
            f"these pages were built ({line})."
        ),
    )
    section.insert(1 if section is not doctree else 0, note)


def setup(app):
    app.add_config_value("ppd_cache", "_build/ppd_cache", "env")
    app.add_config_value("ppd_case_study_runs", True, "env")
    app.add_config_value("ppd_case_study_timeout", 600, "env")
    app.add_config_value("ppd_data_absent_errors", ["FileNotFoundError"], "env")
    app.add_config_value("ppd_case_study_pages", "case_studies", "env")
    app.connect("config-inited", notebook_cache)
    app.connect("builder-inited", run_case_studies)
    app.connect("source-read", expand_blocks)
    app.connect("source-read", watch_notebook)
    app.connect("doctree-read", strip_unexecuted)
    app.connect("env-check-consistency", check_pages)
    # the case-study pages depend on the runs: read them every time
    app.connect(
        "env-get-outdated",
        lambda app, env, added, changed, removed: [
            d for d in env.found_docs if d.startswith(f"{app.config.ppd_case_study_pages}/")
        ],
    )
    return {"version": "1", "parallel_read_safe": False, "parallel_write_safe": True}
