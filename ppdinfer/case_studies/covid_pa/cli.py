"""``ppdinfer covid ...``: download, synthesize, figures and report of the COVID-19 case study."""

from __future__ import annotations

import time
from pathlib import Path

DEFAULT_DATA = Path("../shared/data/covid_pa")
DEFAULT_RESULTS = Path("covid_results")


def register(commands) -> None:
    """Add the ``covid`` command and its subcommands to an argparse subparsers object."""
    covid = commands.add_parser("covid", help="the COVID-19 case study on Pennsylvania county data",
                                description="Reproduce the COVID-19 case study (paper section 4) on real "
                                            "Pennsylvania county counts.")
    sub = covid.add_subparsers(dest="covid_command", metavar="SUBCOMMAND", required=True)

    download = sub.add_parser("download", help="fetch the JHU CSSE time series (needs a network)")
    download.add_argument("--dest", type=Path, required=True, help="folder for the two CSV files")
    download.set_defaults(handler=_download)

    synthesize = sub.add_parser("synthesize", help="synthesize the table by every method, resumably")
    _add_table_arguments(synthesize)
    synthesize.add_argument("--replicates", type=int, default=100, help="replicates per method and epsilon")
    synthesize.add_argument("--methods", nargs="+", default=None, help="subset of the methods (default all)")
    synthesize.add_argument("--epsilons", nargs="+", type=float, default=None, help="subset of 0.01 1")
    synthesize.add_argument("--seed", type=int, default=2024)
    synthesize.add_argument("--sweeps", type=int, default=None, help="MCMC sweeps per WEM release")
    synthesize.add_argument("--workers", type=int, default=None, help="local processes (default: all cores)")
    synthesize.add_argument("--scheduler", default=None,
                            help="address of a dask.distributed scheduler (needs the 'dask' extra)")
    synthesize.add_argument("--no-progress", action="store_true")
    synthesize.set_defaults(handler=_synthesize)

    infer = sub.add_parser("infer", help="posterior intervals vs plug-in intervals: coverage over replicates")
    _add_table_arguments(infer)
    infer.add_argument("--month", default="2021-01", help="the month to analyse (default 2021-01)")
    infer.add_argument("--replicates", type=int, default=50)
    infer.add_argument("--epsilons", nargs="+", type=float, default=[0.01, 1.0])
    infer.add_argument("--concentration", type=float, default=1000.0,
                       help="prior concentration of the Dirichlet centred on last month (default 1000)")
    infer.add_argument("--seed", type=int, default=2024)
    infer.add_argument("--check-month", default="2020-07",
                       help="month of the few-county check against exact samplers (small counts; default 2020-07)")
    infer.add_argument("--no-progress", action="store_true")
    infer.set_defaults(handler=_infer)

    report = sub.add_parser("report", help="Figures 1-4 and report.md from the synthesis (and inference) results")
    _add_table_arguments(report)
    report.add_argument("--seed", type=int, default=2024, help="the synthesis seed, for the report's inputs table")
    report.set_defaults(handler=_report)


def _add_table_arguments(parser) -> None:
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help=f"data folder (default {DEFAULT_DATA})")
    parser.add_argument("--results", type=Path, default=DEFAULT_RESULTS,
                        help=f"results folder (default {DEFAULT_RESULTS})")
    parser.add_argument("--counties", nargs="+", default=None, help="restrict to these counties")
    parser.add_argument("--months", nargs="+", default=None, help="restrict to these months (YYYY-MM)")


def _load_table(args):
    from .data import load_monthly

    table = load_monthly(args.data)
    if args.counties or args.months:
        table = table.subset(counties=args.counties, months=args.months)
    return table


def _download(args) -> None:
    from .jhu import download

    for path in download(args.dest):
        print(f"wrote {path}")


def _executor(args):
    if args.scheduler is None:
        from .synthesis import local_executor

        return local_executor(args.workers)
    try:
        from distributed import Client
    except ImportError as err:
        raise SystemExit("--scheduler needs dask.distributed: pip install 'ppdinfer[dask]'") from err
    return Client(args.scheduler).get_executor()


def _synthesize(args) -> None:
    from .synthesis import EPSILONS, METHODS, run_synthesis

    table = _load_table(args)
    executor = _executor(args)
    start = time.perf_counter()
    try:
        done = run_synthesis(table, args.results, methods=args.methods or METHODS, epsilons=args.epsilons or EPSILONS,
                             replicates=args.replicates, seed=args.seed, executor=executor, sweeps=args.sweeps,
                             progressbar=not args.no_progress)
    except KeyboardInterrupt as err:
        raise SystemExit(f"interrupted: finished tasks are kept in {args.results}; "
                         "run the same command to resume") from err
    finally:
        executor.shutdown(wait=False, cancel_futures=True)
    print(f"{len(done)} tasks written to {args.results} in {time.perf_counter() - start:.0f} s "
          f"({table.n_counties} counties x {table.n_months} months)")


def _infer(args) -> None:
    from .inference import coverage_study, coverage_summary, enumerable_counties, subproblem_check

    table = _load_table(args)
    out = args.results / "inference"
    out.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    study = coverage_study(table, args.month, epsilons=args.epsilons, replicates=args.replicates,
                           concentration=args.concentration, seed=args.seed, progressbar=not args.no_progress)
    study.to_csv(out / "coverage_study.csv", index=False)
    summary = coverage_summary(study)
    summary.to_csv(out / "coverage_summary.csv")
    print(summary.round(3).to_string())
    counties = enumerable_counties(table, args.check_month)
    check = subproblem_check(table, args.check_month, counties, concentration=args.concentration, seed=args.seed)
    check.to_csv(out / "subproblem_check.csv")
    print(check.round(3).to_string())
    print(f"written to {out} in {time.perf_counter() - start:.0f} s")


def _report(args) -> None:
    import pandas as pd

    from .report import write_report
    from .synthesis import load_results

    table = _load_table(args)
    results = load_results(args.results)
    inference = None
    folder = args.results / "inference"
    if (folder / "coverage_summary.csv").exists() and (folder / "subproblem_check.csv").exists():
        summary = pd.read_csv(folder / "coverage_summary.csv", index_col=[0, 1, 2, 3])
        inference = (summary, pd.read_csv(folder / "subproblem_check.csv", index_col=0))
    path = write_report(table, results, args.results / "report", seed=args.seed, inference=inference)
    print(f"report: {path}")
