"""``ppdinfer covid ...``: download, synthesize, figures and report of the COVID-19 case study."""

from __future__ import annotations

import os
import time
from pathlib import Path

#: Environment variable naming the data folder when --data is not given.
DATA_ENV = "PPDINFER_COVID_DATA"
#: Where the data folder is looked for, from the current folder and from the repository root.
DATA_RELATIVE = Path("..", "shared", "data", "covid_pa")
DEFAULT_RESULTS = Path("covid_results")


def default_data() -> Path:
    """$PPDINFER_COVID_DATA if set, else the first existing ../shared/data/covid_pa from the current
    folder or from the repository root (the folder above this module holding pyproject.toml)."""
    if os.environ.get(DATA_ENV):
        return Path(os.environ[DATA_ENV])
    places = [Path.cwd() / DATA_RELATIVE]
    root = next((folder for folder in Path(__file__).resolve().parents if (folder / "pyproject.toml").is_file()), None)
    if root is not None:
        places.append(root / DATA_RELATIVE)
    for place in places:
        if place.is_dir():
            return place.resolve()
    raise FileNotFoundError(f"no data folder: pass --data DIR or set {DATA_ENV} "
                            f"(looked in {' and '.join(str(place) for place in places)})")


def register(commands) -> None:
    """Add the ``covid`` command and its subcommands to an argparse subparsers object."""
    from ...cli import non_negative_int, positive_float, positive_int

    covid = commands.add_parser("covid", help="the COVID-19 case study on Pennsylvania county data",
                                description="Reproduce the COVID-19 case study (paper section 4) on real "
                                            "Pennsylvania county counts.")
    sub = covid.add_subparsers(dest="covid_command", metavar="SUBCOMMAND", required=True)

    download = sub.add_parser("download", help="fetch the JHU CSSE time series (needs a network)")
    download.add_argument("--dest", type=Path, required=True, help="folder for the two CSV files")
    download.set_defaults(handler=_download)

    synthesize = sub.add_parser("synthesize", help="synthesize the table by every method, resumably")
    _add_table_arguments(synthesize)
    synthesize.add_argument("--replicates", type=positive_int, default=100, help="replicates per method and epsilon")
    synthesize.add_argument("--methods", nargs="+", default=None, help="subset of the methods (default all)")
    synthesize.add_argument("--epsilons", nargs="+", type=float, default=None, help="subset of 0.01 1")
    synthesize.add_argument("--seed", type=non_negative_int, default=2024)
    synthesize.add_argument("--sweeps", type=positive_int, default=None, help="MCMC sweeps per WEM release")
    synthesize.add_argument("--workers", type=positive_int, default=None, help="local processes (default: all cores)")
    synthesize.add_argument("--scheduler", default=None,
                            help="address of a dask.distributed scheduler (needs the 'dask' extra)")
    synthesize.add_argument("--fresh", action="store_true",
                            help="delete the results folder's results first (needed to change the seed, table or "
                                 "sweeps of a run; more replicates, methods or epsilons extend it)")
    synthesize.add_argument("--no-progress", action="store_true")
    synthesize.set_defaults(handler=_synthesize)

    infer = sub.add_parser("infer", help="posterior intervals vs plug-in intervals: coverage over replicates")
    _add_table_arguments(infer)
    infer.add_argument("--month", default="2021-01", help="the month to analyse (default 2021-01)")
    infer.add_argument("--replicates", type=positive_int, default=50)
    infer.add_argument("--epsilons", nargs="+", type=positive_float, default=[0.01, 1.0])
    infer.add_argument("--concentration", type=positive_float, default=1000.0,
                       help="prior concentration of the Dirichlet centred on last month (default 1000)")
    infer.add_argument("--seed", type=non_negative_int, default=2024)
    infer.add_argument("--check-month", default="2020-07",
                       help="month of the few-county check against exact samplers (small counts; default 2020-07)")
    infer.add_argument("--no-progress", action="store_true")
    infer.set_defaults(handler=_infer)

    report = sub.add_parser("report", help="Figures 1-4 and report.md from the synthesis (and inference) results")
    _add_table_arguments(report, restrict=" (default: the results'; others are refused)")
    report.set_defaults(handler=_report)


def _add_table_arguments(parser, restrict: str = "") -> None:
    parser.add_argument("--data", type=Path, default=None,
                        help=f"data folder (default: ${DATA_ENV}, else {DATA_RELATIVE} from the current folder "
                             "or from the repository)")
    parser.add_argument("--results", type=Path, default=DEFAULT_RESULTS,
                        help=f"results folder (default {DEFAULT_RESULTS})")
    parser.add_argument("--counties", nargs="+", default=None, help=f"restrict to these counties{restrict}")
    parser.add_argument("--months", nargs="+", default=None, help=f"restrict to these months (YYYY-MM){restrict}")


def _load_table(args, counties=None, months=None):
    from .data import load_monthly

    table = load_monthly(args.data or default_data())
    counties, months = args.counties or counties, args.months or months
    return table.subset(counties=counties, months=months) if counties or months else table


def _download(args) -> None:
    from .jhu import download

    for path in download(args.dest):
        print(f"wrote {path}")


def _executor(args):
    if args.scheduler is None:
        from .synthesis import LocalPool

        return LocalPool(args.workers)
    try:
        from distributed import Client
    except ImportError as err:
        raise ImportError("--scheduler needs dask.distributed: pip install 'ppdinfer[dask]'") from err
    return Client(args.scheduler).get_executor()


def _synthesize(args) -> None:
    from .synthesis import EPSILONS, METHODS, LocalPool, run_synthesis

    table = _load_table(args)
    executor = _executor(args)
    start = time.perf_counter()
    try:
        done = run_synthesis(table, args.results, methods=args.methods or METHODS, epsilons=args.epsilons or EPSILONS,
                             replicates=args.replicates, seed=args.seed, executor=executor, sweeps=args.sweeps,
                             progressbar=not args.no_progress, fresh=args.fresh)
    except KeyboardInterrupt as err:
        if isinstance(executor, LocalPool):
            executor.stop()
        raise KeyboardInterrupt(f"interrupted: finished tasks are kept in {args.results}; "
                                "run the same command to resume") from err
    finally:
        executor.shutdown(wait=False, cancel_futures=True)
    print(f"{len(done)} tasks written to {args.results} in {time.perf_counter() - start:.0f} s "
          f"({table.n_counties} counties x {table.n_months} months)")


def _infer(args) -> None:
    from ... import __version__
    from .inference import coverage_study, coverage_summary, enumerable_counties, subproblem_check
    from .results_dir import locked, write_json

    table = _load_table(args)
    out = args.results / "inference"
    out.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    with locked(out):
        (out / "run.json").unlink(missing_ok=True)  # written last: its presence marks a finished study
        study = coverage_study(table, args.month, epsilons=args.epsilons, replicates=args.replicates,
                               concentration=args.concentration, seed=args.seed, progressbar=not args.no_progress)
        study.to_csv(out / "coverage_study.csv", index=False)
        summary = coverage_summary(study)
        summary.to_csv(out / "coverage_summary.csv")
        print(summary.round(3).to_string())
        counties = enumerable_counties(table, args.check_month)
        check = subproblem_check(table, args.check_month, counties, concentration=args.concentration,
                                 seed=args.seed)
        check.to_csv(out / "subproblem_check.csv")
        print(check.round(3).to_string())
        write_json(out / "run.json", {
            "month": args.month, "check_month": args.check_month, "seed": args.seed, "replicates": args.replicates,
            "epsilons": args.epsilons, "concentration": args.concentration, "counties": list(table.counties),
            "version": __version__})
    print(f"written to {out} in {time.perf_counter() - start:.0f} s")


def _report(args) -> None:
    import pandas as pd

    from .report import write_report
    from .results_dir import read_json
    from .synthesis import load_results

    results = load_results(args.results)
    table = _load_table(args, results.attrs["counties"], results.attrs["months"])
    inference = None
    folder = args.results / "inference"
    if (folder / "run.json").exists():
        summary = pd.read_csv(folder / "coverage_summary.csv", index_col=[0, 1, 2, 3])
        check = pd.read_csv(folder / "subproblem_check.csv", index_col=0)
        inference = (summary, check, read_json(folder / "run.json"))
    elif folder.exists():
        print(f"left out {folder}: no run.json (an unfinished or older `ppdinfer covid infer`; run it again)")
    path = write_report(table, results, args.results / "report", inference=inference)
    print(f"report: {path}")
