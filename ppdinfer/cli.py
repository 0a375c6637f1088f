"""The ``ppdinfer`` command line."""

from __future__ import annotations

import argparse
from pathlib import Path

from .case_studies.covid_pa import cli as covid_cli


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="ppdinfer", description="Bayesian inference from partially private data.")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    demo = commands.add_parser(
        "demo",
        help="five synthetic counties: release, then rejection, importance and exact posteriors",
        description="Release noisy county counts with a public total, fit the posterior with the rejection "
                    "sampler, the importance sampler and exact enumeration, print a comparison table and "
                    "write a figure.",
    )
    demo.add_argument("--output", type=Path, default=Path("demo_output"), help="folder for the figure")
    demo.add_argument("--epsilon", type=float, default=1.0, help="privacy level of the release (default 1)")
    demo.add_argument("--draws", type=int, default=2000, help="rejection draws (default 2000)")
    demo.add_argument("--seed", type=int, default=2026, help="random seed (default 2026)")
    demo.add_argument("--no-progress", action="store_true", help="hide progress bars")
    demo.set_defaults(handler=_demo)
    covid_cli.register(commands)
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 0
    args.handler(args)
    return 0


def _demo(args) -> None:
    from .demo import run_demo

    run_demo(args.output, epsilon=args.epsilon, draws=args.draws, seed=args.seed, progressbar=not args.no_progress)


if __name__ == "__main__":
    raise SystemExit(main())
