"""Case studies as first-class citizens: the registry behind ``ppdinfer reproduce``.

A case study is a package ``case_studies/<name>/`` (installed as ``ppdinfer.case_studies.<name>``)
whose ``__init__`` defines ``CASE_STUDY``, a :class:`CaseStudy`: what it reproduces, from which
paper, how long it takes, and ``run(results, quick, progressbar) -> report.md``. It may also
define ``register(commands)`` to add its own subcommands to ``ppdinfer``. The library never
imports a case study; this module finds them when the command line asks.

A case study's ``__init__`` stays light, so that ``ppdinfer --help`` and ``ppdinfer reproduce
--list`` import neither PyMC nor matplotlib: it names its public functions with
:func:`lazy_exports` and its ``run`` with :class:`LazyFunction`, and its code is imported when
first used.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class CaseStudy:
    """One reproduction.

    Attributes
    ----------
    name : the folder name, e.g. ``covid_pa``.
    title : what it reproduces, in a line.
    paper : the seed paper (authors, title, section).
    minutes : rough run time on 2 cores, (full, quick).
    run : ``run(results, quick, progressbar)`` runs the whole reproduction into the folder
        ``results`` and returns the path of its ``report.md``, whose claims table checks the
        paper's statements in numbers. A case study that resumes runs in its folder (and refuses
        a folder of another configuration) also takes ``fresh=True``: delete those results first
        (``ppdinfer reproduce NAME --fresh``).

    Examples
    --------
    >>> from ppdinfer.reproduce import CaseStudy
    >>> def run(results, quick, progressbar):
    ...     return results / "report.md"
    >>> study = CaseStudy("demo", "a demonstration", "no paper", (1, 0.5), run=run)
    >>> study.command(quick=True), study.takes_fresh
    ('ppdinfer reproduce demo --quick', False)
    """

    name: str
    title: str
    paper: str
    minutes: tuple[float, float]
    run: Callable[[Path, bool, bool], Path]

    def command(self, quick: bool = False) -> str:
        """The command line that runs it."""
        return f"ppdinfer reproduce {self.name}" + (" --quick" if quick else "")

    @property
    def takes_fresh(self) -> bool:
        """Whether ``run`` takes ``fresh`` (it keeps results between runs, which ``--fresh`` deletes)."""
        return "fresh" in inspect.signature(self.run).parameters


class LazyFunction:
    """The function ``name`` of the module ``module``, imported on its first call.

    A case study's ``CASE_STUDY.run`` is one, so that listing the case studies imports none of
    their code. Its signature is the function's (``inspect.signature`` imports the module).

    Parameters
    ----------
    module : str
        The absolute name of the module, e.g. ``"ppdinfer.case_studies.covid_pa.pipeline"``.
    name : str
        The function's name in that module.

    Examples
    --------
    >>> import inspect, sys
    >>> from ppdinfer.reproduce import LazyFunction
    >>> _ = sys.modules.pop("colorsys", None)  # not imported yet
    >>> hls = LazyFunction("colorsys", "rgb_to_hls")
    >>> "colorsys" in sys.modules
    False
    >>> hls(1.0, 0.0, 0.0), list(inspect.signature(hls).parameters)
    ((0.0, 0.5, 1.0), ['r', 'g', 'b'])
    """

    def __init__(self, module: str, name: str):
        for label, value in (("module", module), ("name", name)):
            if not isinstance(value, str) or not value:
                raise ValueError(f"{label} must be a non-empty string, got {value!r}")
        self.module, self.name = module, name

    def resolve(self) -> Callable:
        """The function itself (its module imported now, once)."""
        return getattr(importlib.import_module(self.module), self.name)

    def __call__(self, *args, **kwargs):
        return self.resolve()(*args, **kwargs)

    @property
    def __signature__(self) -> inspect.Signature:
        return inspect.signature(self.resolve())

    def __repr__(self) -> str:
        return f"LazyFunction({self.module!r}, {self.name!r})"


def lazy_exports(package: str, exports: Mapping[str, str]) -> tuple[Callable[[str], object], Callable[[], list[str]]]:
    """A package's ``__getattr__`` and ``__dir__`` (PEP 562) that import its public names on first use.

    Parameters
    ----------
    package : str
        The package's ``__name__``.
    exports : mapping of str to str
        Each public name and the module that defines it, relative to ``package`` (e.g.
        ``{"reproduce": ".pipeline"}``: ``package.reproduce`` imports ``package.pipeline`` then)
        or absolute.

    Returns
    -------
    (__getattr__, __dir__)
        To assign at the package's top level; ``from package import name`` works as before.

    Examples
    --------
    >>> import sys, types
    >>> from ppdinfer.reproduce import lazy_exports
    >>> _ = sys.modules.pop("colorsys", None)  # not imported yet
    >>> demo = types.ModuleType("lazy_demo")
    >>> demo.__getattr__, demo.__dir__ = lazy_exports("lazy_demo", {"hls_to_rgb": "colorsys"})
    >>> sys.modules["lazy_demo"] = demo
    >>> "colorsys" in sys.modules, "hls_to_rgb" in dir(demo)
    (False, True)
    >>> demo.hls_to_rgb(0.0, 0.5, 1.0), "colorsys" in sys.modules
    ((1.0, 0.0, 0.0), True)
    >>> demo.nothing
    Traceback (most recent call last):
    ...
    AttributeError: module 'lazy_demo' has no attribute 'nothing'
    """
    if not isinstance(package, str) or not package:
        raise ValueError(f"package must be a package's __name__, got {package!r}")
    exports = dict(exports)

    def __getattr__(name: str) -> object:
        if name not in exports:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(exports[name], package), name)
        setattr(sys.modules[package], name, value)  # found directly from now on
        return value

    def __dir__() -> list[str]:
        return sorted(set(vars(sys.modules[package])) | set(exports))

    return __getattr__, __dir__


def modules() -> dict[str, object]:
    """Every case study package, by name (imported now: each ``__init__`` is light, its code imported lazily)."""
    from . import case_studies

    return {
        info.name: importlib.import_module(f"{case_studies.__name__}.{info.name}")
        for info in pkgutil.iter_modules(case_studies.__path__)
        if info.ispkg
    }


def case_studies() -> dict[str, CaseStudy]:
    """Every registered case study, by name; a package without ``CASE_STUDY`` is an error."""
    found = {}
    for name, module in modules().items():
        study = getattr(module, "CASE_STUDY", None)
        if not isinstance(study, CaseStudy) or study.name != name:
            raise RuntimeError(
                f"case_studies/{name}/__init__.py must define CASE_STUDY = CaseStudy(name={name!r}, ...)"
            )
        found[name] = study
    return found


def default_results(name: str, quick: bool) -> Path:
    """Where a reproduction writes when no folder is given: ``results/<name>`` (``_quick`` for quick runs)."""
    return Path("results") / (f"{name}_quick" if quick else name)


def listing(names: Sequence[str] | None = None) -> str:
    """The table printed by ``ppdinfer reproduce --list [NAME ...]``: every case study, or those named.

    Examples
    --------
    >>> from ppdinfer.reproduce import listing
    >>> listing(["covid_pa"]).splitlines()[2].split("(")[0].strip()
    'run:   ppdinfer reproduce covid_pa'
    """
    lines = []
    studies = case_studies()
    for study in (studies[name] for name in names) if names else studies.values():
        full, quick = study.minutes
        lines += [
            f"{study.name}: {study.title}",
            f"    paper: {study.paper}",
            f"    run:   {study.command()}  (about {full:g} min on 2 cores; results in "
            f"{default_results(study.name, False)}/)",
            f"    quick: {study.command(quick=True)}  (about {quick:g} min)",
        ]
    return "\n".join(lines)


@dataclass(frozen=True)
class Claim:
    """One statement of a paper (or of the notes' errata), the printed value, what a run measured, whether it holds.

    Examples
    --------
    >>> from ppdinfer.reproduce import Claim
    >>> Claim("eps of the Census release", "17.91528", "17.91528", True).holds
    True
    """

    statement: str
    paper: str
    measured: str
    holds: bool


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """A Markdown table of strings.

    Examples
    --------
    >>> from ppdinfer.reproduce import markdown_table
    >>> print(markdown_table(["a", "b"], [["1", "2"]]))
    | a | b |
    |---|---|
    | 1 | 2 |
    """
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return "\n".join(lines + ["| " + " | ".join(row) + " |" for row in rows])


def claims_table(claims: Sequence[Claim]) -> str:
    """The claims table of a report: number, claim, paper, measured, and "yes" or a bold "no".

    Examples
    --------
    >>> from ppdinfer.reproduce import Claim, claims_table
    >>> print(claims_table([Claim("W_inf of Figure 1", "97", "97", True)]))
    | # | claim | paper | measured | holds |
    |---|---|---|---|---|
    | 1 | W_inf of Figure 1 | 97 | 97 | yes |
    """
    return markdown_table(
        ["#", "claim", "paper", "measured", "holds"],
        [
            [str(i), c.statement, c.paper, c.measured, "yes" if c.holds else "**no**"]
            for i, c in enumerate(claims, start=1)
        ],
    )
