"""The ``ppdinfer`` command line.

An error prints one line, ``ppdinfer: error: ...``, to stderr and exits with status 1 (130 on
an interrupt); ``--debug`` shows the traceback instead.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

from . import reproduce

#: Errors a user can meet in normal use (bad input, missing files or packages): their message suffices.
EXPECTED_ERRORS = (ValueError, OSError, ImportError)


def _number(kind, name: str, minimum: float, strict: bool):
    """An argparse ``type``: ``kind(text)``, refused unless finite and above (or at, if not ``strict``) ``minimum``."""

    def parse(text: str):
        try:
            value = kind(text)
        except ValueError:
            value = None
        if value is None or not math.isfinite(value) or value < minimum or (strict and value == minimum):
            raise argparse.ArgumentTypeError(f"must be {name}, got {text!r}")
        return value

    parse.__name__ = name
    return parse


positive_int = _number(int, "a positive integer", 0, strict=True)
non_negative_int = _number(int, "a non-negative integer", 0, strict=False)
positive_float = _number(float, "a positive number", 0.0, strict=True)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="ppdinfer", description="Bayesian inference from partially private data.")
    parser.add_argument("--debug", action="store_true", help="on an error, show its traceback")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    demo = commands.add_parser(
        "demo",
        help="five synthetic counties: release, then rejection, importance and exact posteriors",
        description="Release noisy county counts with a public total, fit the posterior with the rejection "
        "sampler, the importance sampler and exact enumeration, print a comparison table and "
        "write a figure.",
    )
    demo.add_argument("--output", type=Path, default=Path("demo_output"), help="folder for the figure")
    demo.add_argument("--epsilon", type=positive_float, default=1.0, help="privacy level of the release (default 1)")
    demo.add_argument("--draws", type=positive_int, default=2000, help="rejection draws (default 2000)")
    demo.add_argument("--seed", type=non_negative_int, default=2026, help="random seed (default 2026)")
    demo.add_argument("--no-progress", action="store_true", help="hide progress bars")
    demo.set_defaults(handler=_demo)
    warmup = commands.add_parser(
        "warmup",
        help="compile the PyMC layer's numba kernels into the cache, so the first PyMC fit starts at once",
        description="Run one tiny ppdinfer.pymc fit so that numba compiles the data-augmentation kernels into "
        "its on-disk cache (about 25 s once; a few seconds when they are cached already). `make demo` runs it "
        "after installing.",
    )
    warmup.set_defaults(handler=_warmup)
    _add_reproduce(commands)
    _add_data(commands)
    for module in reproduce.modules().values():  # a case study's own commands, e.g. ``ppdinfer covid ...``
        if hasattr(module, "register"):
            module.register(commands)
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 0
    try:
        args.handler(args)
    except (Exception, KeyboardInterrupt) as err:
        if args.debug:
            raise
        if isinstance(err, KeyboardInterrupt):
            print(f"ppdinfer: {str(err) or 'interrupted'}", file=sys.stderr)
            return 130
        if isinstance(err, EXPECTED_ERRORS):
            print(f"ppdinfer: error: {err}", file=sys.stderr)
        else:
            print(f"ppdinfer: error: {type(err).__name__}: {err} (--debug shows the traceback)", file=sys.stderr)
        return 1
    return 0


def _add_reproduce(commands) -> None:
    command = commands.add_parser(
        "reproduce",
        help="run a case study (a seed paper's reproduction) and write its report.md",
        description="Run a case study end to end and write its report.md, whose claims table checks the paper's "
        "statements in numbers. --list shows them all.",
    )
    command.add_argument("names", nargs="*", metavar="NAME", help="case studies to run (see --list)")
    command.add_argument("--list", action="store_true", help="list the case studies with their papers and commands")
    command.add_argument("--all", action="store_true", help="run every case study")
    command.add_argument("--quick", action="store_true", help="the quick variant (minutes; what the tests run)")
    command.add_argument(
        "--results",
        type=Path,
        default=None,
        help="results folder (one name only; default results/NAME or results/NAME_quick)",
    )
    command.add_argument(
        "--fresh",
        action="store_true",
        help="delete the results of an earlier run of another configuration in the results folder "
        "first (for case studies that resume runs)",
    )
    command.add_argument("--no-progress", action="store_true", help="hide progress bars")
    command.set_defaults(handler=_reproduce)


def _reproduce(args) -> None:
    studies = reproduce.case_studies()
    names = list(studies) if args.all else args.names
    unknown = [name for name in names if name not in studies]
    if unknown or not (names or args.list):
        problem = f"unknown case study {unknown[0]!r}" if unknown else "name a case study or pass --all"
        raise ValueError(f"{problem}; choose from {sorted(studies)} (ppdinfer reproduce --list)")
    if args.list:
        print(reproduce.listing(names or None))
        return
    if args.results is not None and len(names) > 1:
        raise ValueError("--results takes one case study; leave it out to use results/NAME for each")
    refusing = [name for name in names if args.fresh and not studies[name].takes_fresh]
    if refusing:
        raise ValueError(f"--fresh: {', '.join(refusing)} keeps no results between runs to delete; leave it out")
    for name in names:
        results = args.results or reproduce.default_results(name, args.quick)
        start = time.perf_counter()
        fresh = {"fresh": True} if args.fresh else {}
        report = studies[name].run(results, args.quick, not args.no_progress, **fresh)
        print(f"{name}: {report} ({time.perf_counter() - start:.0f} s)")


#: The data sets ``ppdinfer data`` knows: the COVID-19 tables ship, UCI Adult is fetched.
DATA_SETS = ("adult", "covid_pa")


def _add_data(commands) -> None:
    command = commands.add_parser(
        "data",
        help="the data sets: list them, fetch UCI Adult, print where a data set's files are",
        description="The COVID-19 tables ship with the package; UCI Adult (adult.data, adult.test) is downloaded "
        "into the user cache ($PPDINFER_CACHE) on first use, unless a local copy is found "
        "($PPDINFER_ADULT_DATA, else ../shared/data/adult).",
    )
    actions = command.add_subparsers(dest="action", metavar="ACTION", required=True)
    actions.add_parser("list", help="each data set, its licence and where its files are").set_defaults(
        handler=_data_list
    )
    fetch = actions.add_parser("fetch", help="download UCI Adult into the cache (checksums verified)")
    fetch.add_argument("names", nargs="*", choices=["adult"], metavar="NAME", help="adult (the default)")
    fetch.add_argument("--no-progress", action="store_true", help="hide progress bars")
    fetch.set_defaults(handler=_data_fetch)
    path = actions.add_parser("path", help="print the paths of a data set's files (downloads nothing)")
    path.add_argument("name", choices=DATA_SETS, metavar="NAME", help=" or ".join(DATA_SETS))
    path.set_defaults(handler=_data_path)


def _data_list(args) -> None:
    from .datasets import listing

    print(listing())


def _data_fetch(args) -> None:
    from .datasets import ADULT_FILES, adult_path

    for name in ADULT_FILES:
        print(adult_path(name, progressbar=not args.no_progress))


def _data_path(args) -> None:
    from .datasets import ADULT_FILES, COVID_PA_DATA, adult_path

    if args.name == "covid_pa":
        print(COVID_PA_DATA)
        return
    for name in ADULT_FILES:
        print(adult_path(name, download=False))


def _demo(args) -> None:
    from .demo import run_demo

    run_demo(args.output, epsilon=args.epsilon, draws=args.draws, seed=args.seed, progressbar=not args.no_progress)


def _warmup(args) -> None:
    from .pymc import warm_up

    report = warm_up()
    kernels = ", ".join(f"{name} ({count})" for name, count in sorted(report["kernels"].items()))
    print(
        f"ppdinfer warmup: {len(report['kernels'])} kernels compiled or loaded in {report['seconds']:.1f} s: {kernels}"
    )


if __name__ == "__main__":
    raise SystemExit(main())
