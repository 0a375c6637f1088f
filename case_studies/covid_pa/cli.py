"""``ppdinfer covid ...``: download, synthesize, figures and report of the COVID-19 case study."""

from __future__ import annotations

from pathlib import Path

from .data import DATA_ENV

DEFAULT_RESULTS = Path("covid_results")


def register(commands) -> None:
    """Add the ``covid`` command and its subcommands to an argparse subparsers object."""
    from ...cli import non_negative_int, positive_float, positive_int

    covid = commands.add_parser(
        "covid",
        help="the COVID-19 case study on Pennsylvania county data",
        description="Reproduce the COVID-19 case study (paper section 4) on real Pennsylvania county counts.",
    )
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
    synthesize.add_argument(
        "--scheduler", default=None, help="address of a dask.distributed scheduler (needs the 'dask' extra)"
    )
    synthesize.add_argument(
        "--fresh",
        action="store_true",
        help="delete the results folder's results first (needed to change the seed, table or "
        "sweeps of a run; more replicates, methods or epsilons extend it)",
    )
    synthesize.add_argument("--no-progress", action="store_true")
    synthesize.set_defaults(handler=_synthesize)

    infer = sub.add_parser("infer", help="posterior intervals vs plug-in intervals: coverage over replicates")
    _add_table_arguments(infer)
    infer.add_argument("--month", default="2021-01", help="the month to analyse (default 2021-01)")
    infer.add_argument("--replicates", type=positive_int, default=50)
    infer.add_argument("--epsilons", nargs="+", type=positive_float, default=[0.01, 1.0])
    infer.add_argument(
        "--concentration",
        type=positive_float,
        default=1000.0,
        help="prior concentration of the Dirichlet centred on last month (default 1000)",
    )
    infer.add_argument("--seed", type=non_negative_int, default=2024)
    infer.add_argument(
        "--check-month",
        default="2020-07",
        help="month of the few-county check against exact samplers (small counts; default 2020-07)",
    )
    infer.add_argument("--workers", type=positive_int, default=None, help="local processes (default: all cores)")
    infer.add_argument(
        "--scheduler", default=None, help="address of a dask.distributed scheduler (needs the 'dask' extra)"
    )
    infer.add_argument(
        "--fresh",
        action="store_true",
        help="delete the finished fits of an earlier study first (needed to change its seed, "
        "table, month or concentration; more replicates or epsilons extend it)",
    )
    infer.add_argument("--no-progress", action="store_true")
    infer.set_defaults(handler=_infer)

    national = sub.add_parser(
        "national", help="all months of a synthetic national county panel, one fit per month on the workers"
    )
    national.add_argument("--counties", type=positive_int, default=3000, help="counties (default 3000)")
    national.add_argument("--months", type=positive_int, default=24, help="released months (default 24)")
    national.add_argument(
        "--results", type=Path, default=DEFAULT_RESULTS, help=f"results folder (default {DEFAULT_RESULTS})"
    )
    national.add_argument("--seed", type=non_negative_int, default=2026, help="seed of the panel and the fits")
    national.add_argument("--draws", type=positive_int, default=1000, help="draws per chain (default 1000)")
    national.add_argument("--tune", type=non_negative_int, default=300, help="tuning steps per chain (default 300)")
    national.add_argument("--chains", type=positive_int, default=2, help="chains per month (default 2)")
    national.add_argument(
        "--sweeps", type=positive_int, default=10, help="augmentation sweeps per iteration (default 10)"
    )
    national.add_argument("--workers", type=positive_int, default=None, help="local processes (default: all cores)")
    national.add_argument(
        "--scheduler", default=None, help="address of a dask.distributed scheduler (needs the 'dask' extra)"
    )
    national.add_argument("--fresh", action="store_true", help="delete the finished months of an earlier run first")
    national.add_argument("--no-progress", action="store_true")
    national.set_defaults(handler=_national)

    report = sub.add_parser("report", help="Figures 1-4 and report.md from the synthesis (and inference) results")
    _add_table_arguments(report, restrict=" (default: the results'; others are refused)")
    report.set_defaults(handler=_report)


def _add_table_arguments(parser, restrict: str = "") -> None:
    parser.add_argument(
        "--data",
        type=Path,
        default=None,
        help=f"data folder (default: ${DATA_ENV}, else the table shipped with the package)",
    )
    parser.add_argument(
        "--results", type=Path, default=DEFAULT_RESULTS, help=f"results folder (default {DEFAULT_RESULTS})"
    )
    parser.add_argument("--counties", nargs="+", default=None, help=f"restrict to these counties{restrict}")
    parser.add_argument("--months", nargs="+", default=None, help=f"restrict to these months (YYYY-MM){restrict}")


def _load_table(args):
    from .pipeline import load_table

    return load_table(args.data, args.counties, args.months)


def _download(args) -> None:
    from .jhu import download

    for path in download(args.dest):
        print(f"wrote {path}")


def _executor(args):
    if args.scheduler is None:
        return None  # the pipeline's own local pool
    try:
        from distributed import Client
    except ImportError as err:
        raise ImportError("--scheduler needs dask.distributed: pip install 'ppdinfer[dask]'") from err
    return Client(args.scheduler).get_executor()


def _synthesize(args) -> None:
    from .pipeline import synthesize_step

    synthesize_step(
        _load_table(args),
        args.results,
        methods=args.methods,
        epsilons=args.epsilons,
        replicates=args.replicates,
        seed=args.seed,
        sweeps=args.sweeps,
        workers=args.workers,
        executor=_executor(args),
        fresh=args.fresh,
        progressbar=not args.no_progress,
    )


def _infer(args) -> None:
    from .pipeline import infer_step

    infer_step(
        _load_table(args),
        args.results,
        month=args.month,
        check_month=args.check_month,
        replicates=args.replicates,
        epsilons=args.epsilons,
        concentration=args.concentration,
        seed=args.seed,
        workers=args.workers,
        executor=_executor(args),
        fresh=args.fresh,
        progressbar=not args.no_progress,
    )


def _report(args) -> None:
    from .pipeline import report_step

    report_step(args.results, data=args.data, counties=args.counties, months=args.months)


def _national(args) -> None:
    from .national import national_step

    national_step(
        args.counties,
        args.months,
        results=args.results,
        seed=args.seed,
        draws=args.draws,
        tune=args.tune,
        chains=args.chains,
        sweeps=args.sweeps,
        workers=args.workers,
        executor=_executor(args),
        fresh=args.fresh,
        progressbar=not args.no_progress,
    )
