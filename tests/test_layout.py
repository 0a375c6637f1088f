"""The design card's layout: the library in ppdinfer/, the gallery in models/, one folder per
reproduction in case_studies/, all installed under ``ppdinfer``; case studies registered."""

import ast
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import ppdinfer
from ppdinfer import reproduce

ROOT = Path(__file__).resolve().parents[1]
#: Modules of the command line: the only library modules that may reach the gallery or the case studies.
COMMAND_LINE = {"cli.py", "demo.py", "reproduce.py"}


def packages_on_disk() -> set[str]:
    """Every package folder of the three trees, by the name it installs under."""
    found = set()
    for folder, prefix in [
        ("ppdinfer", "ppdinfer"),
        ("models", "ppdinfer.models"),
        ("case_studies", "ppdinfer.case_studies"),
    ]:
        for init in (ROOT / folder).rglob("__init__.py"):
            parts = init.parent.relative_to(ROOT / folder).parts
            found.add(".".join([prefix, *parts]))
    return found


def test_top_level_is_the_design_card():
    for name in ["pyproject.toml", "ppdinfer", "models", "tests", "case_studies", "README.md"]:
        assert (ROOT / name).exists(), name
    assert not (ROOT / "ppdinfer" / "models").exists() and not (ROOT / "ppdinfer" / "case_studies").exists()


def test_every_package_folder_is_installed():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    missing = packages_on_disk() - set(config["packages"])
    assert not missing, f"add {sorted(missing)} to [tool.setuptools] packages in pyproject.toml"
    assert config["package-dir"] == {"ppdinfer.models": "models", "ppdinfer.case_studies": "case_studies"}


def test_the_library_never_imports_the_gallery_or_the_case_studies():
    for path in (ROOT / "ppdinfer").rglob("*.py"):
        if path.name in COMMAND_LINE and path.parent.name == "ppdinfer":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                name = "." * node.level + (node.module or "")
                names = [name] + [f"{name}.{alias.name}" for alias in node.names]
            elif isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            else:
                continue
            assert not any("models" in n.split(".") or "case_studies" in n.split(".") for n in names), (
                f"{path.relative_to(ROOT)} imports {names[0]}"
            )
    loaded = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys, ppdinfer, ppdinfer.pymc, ppdinfer.privacy; "
            "print(sorted(m for m in sys.modules if m.startswith(('ppdinfer.models', "
            "'ppdinfer.case_studies'))))",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    assert loaded.stdout.strip() == "[]"


def test_every_case_study_is_registered_with_a_readme():
    studies = reproduce.case_studies()
    assert set(studies) == {p.name for p in (ROOT / "case_studies").iterdir() if (p / "__init__.py").exists()}
    for name, study in studies.items():
        readme = (ROOT / "case_studies" / name / "README.md").read_text()
        assert study.command(quick=True) in readme and "Reproduces" in readme and "Results" in readme
        assert study.paper and study.title and study.minutes[1] <= study.minutes[0]
    listing = subprocess.run(
        [sys.executable, "-m", "ppdinfer.cli", "reproduce", "--list"], capture_output=True, text=True, check=True
    ).stdout
    assert all(f"ppdinfer reproduce {name}" in listing for name in studies)


def test_non_editable_install_runs_the_demo_outside_the_repository(tmp_path):
    # A regular (non-editable) build of the package into its own folder, dependencies from this environment.
    source, target = tmp_path / "source", tmp_path / "site"  # a copy: the build leaves build/ in its source
    source.mkdir()
    for name in ["pyproject.toml", "README.md"]:
        shutil.copy(ROOT / name, source / name)
    for name in ["ppdinfer", "models", "case_studies"]:
        shutil.copytree(ROOT / name, source / name, ignore=shutil.ignore_patterns("__pycache__"))
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--no-deps",
            "--no-build-isolation",
            "--target",
            str(target),
            str(source),
        ],
        check=True,
        capture_output=True,
    )
    assert (target / "ppdinfer" / "models" / "county_counts.py").exists()
    assert (target / "ppdinfer" / "case_studies" / "covid_pa" / "synthesis.py").exists()
    shipped = target / "ppdinfer" / "data" / "covid_pa"  # package data: the COVID-19 tables and their provenance
    assert sorted(p.name for p in shipped.iterdir()) == [
        "PROVENANCE.md",
        "pa_county_population.csv",
        "pa_monthly_new_by_county.csv",
    ]
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    env = {**os.environ, "PYTHONPATH": str(target)}
    where = subprocess.run(
        [
            sys.executable,
            "-c",
            "import ppdinfer.models, ppdinfer.case_studies.covid_pa as c; "
            "print(ppdinfer.models.__file__); print(c.__file__)",
        ],
        cwd=outside,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert all(path.startswith(str(target)) for path in where)
    table = subprocess.run(
        [
            sys.executable,
            "-c",
            "from ppdinfer.case_studies.covid_pa import load_monthly; "
            "from ppdinfer.case_studies.covid_pa.data import default_data; "
            "t = load_monthly(default_data()); print(t.source, t.cases.shape)",
        ],
        cwd=outside,
        env={**env, "PPDINFER_COVID_DATA": ""},
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert table == f"{shipped} (24, 67)\n"
    demo = subprocess.run(
        [
            sys.executable,
            "-m",
            "ppdinfer.cli",
            "demo",
            "--draws",
            "200",
            "--no-progress",
            "--output",
            str(outside / "demo"),
        ],
        cwd=outside,
        env=env,
        capture_output=True,
        text=True,
    )
    assert demo.returncode == 0, demo.stderr
    assert "exact" in demo.stdout and (outside / "demo" / "demo_posteriors.png").exists()


def test_quick_reproduction_writes_its_report(tmp_path):
    report = reproduce.case_studies()["covid_pa"].run(tmp_path / "covid", True, False)
    text = report.read_text()
    assert report == tmp_path / "covid" / "report" / "report.md"
    assert text.count("**Verdict:") == 4 and "Inference the paper could not do" in text
    assert ppdinfer.__version__ in text


def test_import_ppdinfer_does_not_import_matplotlib():
    # plotting is imported on first use: `import ppdinfer` stays light (issue 24: it took 3.6 s)
    import subprocess
    import sys

    code = "import sys, ppdinfer, ppdinfer.inference, ppdinfer.privacy; print('matplotlib' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "False"


def module_name(path: Path) -> str:
    """The import name of a library file (``ppdinfer/mechanisms/__init__.py`` -> ``ppdinfer.mechanisms``)."""
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_modules(path: Path) -> set[str]:
    """Every module a file imports anywhere (functions included), relative imports resolved to absolute names."""
    name = module_name(path)
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            module = ".".join([*base, *([node.module] if node.module else [])])
            found.add(module)
            found.update(f"{module}.{alias.name}" for alias in node.names)  # `from .. import privacy`
    return found


def imports_of(folder: str, forbidden: tuple[str, ...]) -> dict[str, list[str]]:
    """The files under ``folder`` (relative to the repository) that import any of the ``forbidden`` packages."""
    offending = {}
    for path in sorted((ROOT / folder).rglob("*.py")):
        bad = sorted(m for m in imported_modules(path) if any(m == f or m.startswith(f + ".") for f in forbidden))
        if bad:
            offending[str(path.relative_to(ROOT))] = bad
    return offending


def test_imported_modules_resolves_relative_imports(tmp_path, monkeypatch):
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    folder = tmp_path / "ppdinfer" / "mechanisms" / "distribution"
    folder.mkdir(parents=True)
    (folder / "family.py").write_text(
        "import numpy\nfrom ...privacy import _checks\nfrom ... import privacy\n"
        "def f():\n    from ..base import Mechanism\n"
    )
    (folder / "__init__.py").write_text("from .family import f\nfrom .. import laplace\n")
    assert imported_modules(folder / "family.py") == {
        "numpy",
        "ppdinfer",
        "ppdinfer.privacy",
        "ppdinfer.privacy._checks",
        "ppdinfer.mechanisms.base",
        "ppdinfer.mechanisms.base.Mechanism",
    }
    assert imported_modules(folder / "__init__.py") == {
        "ppdinfer.mechanisms.distribution.family",
        "ppdinfer.mechanisms.distribution.family.f",
        "ppdinfer.mechanisms",
        "ppdinfer.mechanisms.laplace",
    }
    assert imports_of("ppdinfer/mechanisms", ("ppdinfer.privacy",)) == {
        "ppdinfer/mechanisms/distribution/family.py": ["ppdinfer.privacy", "ppdinfer.privacy._checks"]
    }


def test_mechanisms_never_import_privacy_and_geometry_imports_neither():
    # privacy/ sits above mechanisms/ (accounting and the Kantorovich calibrations use the mechanisms);
    # what both need (sensitivity spaces, W_inf, the argument and array checks of validation.py) sits below both (issue 24, part 6).
    assert imports_of("ppdinfer/mechanisms", ("ppdinfer.privacy",)) == {}
    below = ("ppdinfer.privacy", "ppdinfer.mechanisms")
    assert imports_of("ppdinfer/geometry", below) == {}
    assert not {m for m in imported_modules(ROOT / "ppdinfer" / "validation.py") if m.startswith(below)}


def test_ppdinfer_imports_whichever_mechanisms_module_comes_first(tmp_path):
    # A copy of the library whose mechanisms/__init__.py imports one submodule before anything else, then
    # `import ppdinfer` in a fresh interpreter: the layering, not the order of those lines, must make it work.
    shutil.copytree(ROOT / "ppdinfer", tmp_path / "ppdinfer", ignore=shutil.ignore_patterns("__pycache__"))
    init = tmp_path / "ppdinfer" / "mechanisms" / "__init__.py"
    original = init.read_text()
    names = [
        module_name(p)
        for p in sorted((ROOT / "ppdinfer" / "mechanisms").rglob("*.py"))
        if p != ROOT / "ppdinfer" / "mechanisms" / "__init__.py"
    ]
    code = "import ppdinfer; print(ppdinfer.__file__)"
    failed = {}
    for name in names:
        init.write_text(f"import {name}  # first\n" + original)
        run = subprocess.run(
            [sys.executable, "-c", code],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            env={**os.environ, "PYTHONPATH": str(tmp_path)},
        )
        if run.returncode or not run.stdout.startswith(str(tmp_path)):
            failed[name] = (run.stderr.strip().splitlines() or [run.stdout])[-1]
    assert len(names) > 10 and not failed, failed


def _mechanism_class_names() -> set[str]:
    """The names of every Mechanism subclass of the package (every module imported)."""
    import importlib
    import pkgutil

    from ppdinfer.mechanisms import Mechanism

    for module in pkgutil.walk_packages(ppdinfer.__path__, "ppdinfer."):
        importlib.import_module(module.name)
    found, stack = {"Mechanism"}, [Mechanism]
    while stack:
        for sub in stack.pop().__subclasses__():
            stack.append(sub)
            if sub.__module__.startswith("ppdinfer."):
                found.add(sub.__name__)
    return found


def test_only_mechanisms_test_for_a_mechanism_class():
    """Samplers, the PyMC layer, the predictive, the accounting, models and case studies read what a
    mechanism declares (separable, additive_noise, guarantee(), ...), never which class it is: a new
    mechanism then needs no list outside its own module. ``isinstance(m, Mechanism)`` (is it one at
    all?) is allowed."""
    classes = _mechanism_class_names() - {"Mechanism"}
    offenders = []
    for folder in ("ppdinfer", "models", "case_studies"):
        for path in (ROOT / folder).rglob("*.py"):
            if path.is_relative_to(ROOT / "ppdinfer" / "mechanisms"):
                continue
            for node in ast.walk(ast.parse(path.read_text())):
                if not (isinstance(node, ast.Call) and getattr(node.func, "id", None) == "isinstance"):
                    continue
                kinds = node.args[1].elts if isinstance(node.args[1], ast.Tuple) else [node.args[1]]
                named = {getattr(kind, "id", getattr(kind, "attr", None)) for kind in kinds}
                if named & classes:
                    offenders.append(
                        f"{path.relative_to(ROOT)}:{node.lineno} isinstance(..., {sorted(named & classes)})"
                    )
    assert not offenders, "read the mechanism's declarations instead: " + "; ".join(offenders)


def _package_of(path: Path) -> list[str]:
    """The installed package a source file belongs to, as components (``ppdinfer.models`` for models/)."""
    parts = path.relative_to(ROOT).parts[:-1]
    top = {"ppdinfer": ["ppdinfer"], "models": ["ppdinfer", "models"], "case_studies": ["ppdinfer", "case_studies"]}
    return top[parts[0]] + list(parts[1:])


def _is_module(components: list[str]) -> bool:
    """Whether ppdinfer.<...> names a module or package of the source tree (else a name inside a module)."""
    roots = {"models": ROOT / "models", "case_studies": ROOT / "case_studies"}
    rest = components[1:]
    base = roots.get(rest[0], None) if rest else None
    path = (base.joinpath(*rest[1:]) if base else (ROOT / "ppdinfer").joinpath(*rest)) if rest else ROOT / "ppdinfer"
    return path.with_suffix(".py").exists() or (path / "__init__.py").exists()


def test_no_private_name_crosses_a_folder():
    """A name (or module) with a leading underscore is used only inside its own folder: what another
    folder, the gallery or a case study needs is public and documented (ppdinfer.validation, ppdinfer.rng)."""
    crossings = []
    for folder in ("ppdinfer", "models", "case_studies"):
        for path in (ROOT / folder).rglob("*.py"):
            package = _package_of(path)
            for node in ast.walk(ast.parse(path.read_text())):
                if not isinstance(node, ast.ImportFrom) or node.module == "__future__":
                    continue
                base = package[: len(package) - node.level + 1] if node.level else []
                target = base + (node.module.split(".") if node.module else [])
                if node.level == 0 and (not target or target[0] != "ppdinfer"):
                    continue  # another library's names are its own business
                for alias in node.names:
                    full = target + [alias.name]
                    private = [p for p in full if p.startswith("_") and not p.startswith("__")]
                    if not private:
                        continue
                    index = full.index(private[0])
                    # a private module belongs to the package above it; a private name to its module's package
                    owner = full[:index] if _is_module(full[: index + 1]) else full[: index - 1]
                    if owner != package:
                        crossings.append(f"{path.relative_to(ROOT)}: {'.'.join(full)}")
    assert not crossings, "make these public (documented) or keep them in their folder: " + "; ".join(crossings)
