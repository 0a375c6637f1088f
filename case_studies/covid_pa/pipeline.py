"""The case study's steps as functions: synthesis, coverage study, report, and the whole reproduction.

``ppdinfer covid synthesize | infer | report`` call the steps one at a time;
``ppdinfer reproduce covid_pa [--quick]`` (:func:`reproduce`) runs all three into one folder.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Sequence
from concurrent.futures import Executor
from pathlib import Path

from ...mechanisms.wem import MIN_SWEEPS
from .data import default_data, load_monthly
from .table import CovidTable

#: The quick variant: six counties (the three of Figure 1 and three of the smallest), three months,
#: three replicates and the shortest checked WEM chains; the whole pipeline in a minute or two.
QUICK = {
    "counties": ["Allegheny", "Erie", "Cameron", "Forest", "Potter", "Sullivan"],
    "months": ["2020-11", "2020-12", "2021-01"],
    "replicates": 3,
    "sweeps": MIN_SWEEPS,
    "infer_replicates": 3,
}
#: The full run: every county and month, 100 replicates, the mechanism's chain length, 50 coverage replicates.
FULL = {"counties": None, "months": None, "replicates": 100, "sweeps": None, "infer_replicates": 50}


def load_table(
    data: Path | None = None, counties: Sequence[str] | None = None, months: Sequence[str] | None = None
) -> CovidTable:
    """The monthly table from ``data`` (default :func:`.data.default_data`), restricted if asked."""
    table = load_monthly(data or default_data())
    return table.subset(counties=counties, months=months) if counties or months else table


@contextlib.contextmanager
def _pool(workers: int | None, executor: Executor | None, results: Path):
    """``executor``, or a local pool of ``workers`` processes made and ended here, at once on
    Ctrl-C; an interrupt says how to resume."""
    from .synthesis import LocalPool

    own = executor is None
    executor = LocalPool(workers) if own else executor
    try:
        yield executor
    except KeyboardInterrupt as err:
        if own:
            executor.stop()
        raise KeyboardInterrupt(
            f"interrupted: finished tasks are kept in {results}; run the same command to resume"
        ) from err
    finally:
        if own:
            executor.shutdown(wait=False, cancel_futures=True)


def synthesize_step(
    table: CovidTable,
    results: Path,
    *,
    replicates: int,
    seed: int = 2024,
    sweeps: int | None = None,
    methods: Sequence[str] | None = None,
    epsilons: Sequence[float] | None = None,
    workers: int | None = None,
    executor: Executor | None = None,
    fresh: bool = False,
    progressbar: bool = True,
) -> list:
    """:func:`.synthesis.run_synthesis` on a local pool of ``workers`` processes (or ``executor``),
    ending the pool at once on Ctrl-C; prints what it wrote."""
    from .synthesis import EPSILONS, METHODS, run_synthesis

    start = time.perf_counter()
    with _pool(workers, executor, results) as pool:
        done = run_synthesis(
            table,
            results,
            methods=methods or METHODS,
            epsilons=epsilons or EPSILONS,
            replicates=replicates,
            seed=seed,
            executor=pool,
            sweeps=sweeps,
            progressbar=progressbar,
            fresh=fresh,
        )
    print(
        f"{len(done)} tasks written to {results} in {time.perf_counter() - start:.0f} s "
        f"({table.n_counties} counties x {table.n_months} months)"
    )
    return done


def infer_step(
    table: CovidTable,
    results: Path,
    *,
    month: str = "2021-01",
    check_month: str = "2020-07",
    replicates: int = 50,
    epsilons: Sequence[float] = (0.01, 1.0),
    concentration: float = 1000.0,
    seed: int = 2024,
    workers: int | None = None,
    executor: Executor | None = None,
    fresh: bool = False,
    progressbar: bool = True,
) -> Path:
    """The coverage study and the few-county check into ``results/inference`` (``run.json`` last).

    The study's fits run as tasks on a local pool of ``workers`` processes (or ``executor``), each
    checkpointed in ``results/inference/tasks``: a rerun resumes; ``fresh`` deletes them first.
    """
    from ... import __version__
    from .inference import coverage_study, coverage_summary, enumerable_counties, subproblem_check
    from .results_dir import locked, table_digest, write_json

    out = Path(results) / "inference"
    out.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    with locked(out):
        with _pool(workers, executor, out / "tasks") as pool:
            study = coverage_study(
                table,
                month,
                epsilons=epsilons,
                replicates=replicates,
                concentration=concentration,
                seed=seed,
                results_dir=out / "tasks",
                executor=pool,
                fresh=fresh,
                progressbar=progressbar,
            )
        # the new study is complete: from here the folder's files change, and run.json (written
        # last) marks them finished again; a refused or interrupted study leaves an earlier one whole
        (out / "run.json").unlink(missing_ok=True)
        study.to_csv(out / "coverage_study.csv", index=False)
        summary = coverage_summary(study)
        summary.to_csv(out / "coverage_summary.csv")
        print(summary.round(3).to_string())
        counties = enumerable_counties(table, check_month)
        check = subproblem_check(table, check_month, counties, concentration=concentration, seed=seed)
        check.to_csv(out / "subproblem_check.csv")
        print(check.round(3).to_string())
        write_json(
            out / "run.json",
            {
                "month": month,
                "check_month": check_month,
                "seed": seed,
                "replicates": replicates,
                "epsilons": list(epsilons),
                "concentration": concentration,
                "counties": list(table.counties),
                "months": list(table.months),
                "data": table_digest(table),
                "version": __version__,
            },
        )
    print(f"written to {out} in {time.perf_counter() - start:.0f} s")
    return out


def report_step(
    results: Path,
    *,
    data: Path | None = None,
    counties: Sequence[str] | None = None,
    months: Sequence[str] | None = None,
) -> Path:
    """Figures 1-4 and ``results/report/report.md`` from the synthesis (and inference, if finished)."""
    import pandas as pd

    from .report import write_report
    from .results_dir import ResultsError, differences, read_json, table_digest
    from .synthesis import load_results

    results = Path(results)
    synthesis = load_results(results)
    table = load_table(data, counties or synthesis.attrs["counties"], months or synthesis.attrs["months"])
    inference = None
    folder = results / "inference"
    config = read_json(folder / "run.json") if (folder / "run.json").exists() else None
    if config is not None and "data" in config:
        used = {key: config[key] for key in ("counties", "months", "data")}
        inference_table = load_table(data, config["counties"], config["months"])
        given = {
            "counties": list(inference_table.counties),
            "months": list(inference_table.months),
            "data": table_digest(inference_table),
        }
        if used != given:
            raise ResultsError(
                f"{folder} was made on other data than the report's "
                f"({differences(used, given, ('there', 'now'))}), so it would not describe the same "
                "table as the synthesis: run `ppdinfer covid infer` again on this data, or delete "
                "the folder"
            )
        summary = pd.read_csv(folder / "coverage_summary.csv", index_col=[0, 1, 2, 3])
        check = pd.read_csv(folder / "subproblem_check.csv", index_col=0)
        inference = (summary, check, config)
    elif folder.exists():
        problem = "no run.json" if config is None else "its run.json records no digest of the data it was made on"
        print(f"left out {folder}: {problem} (an unfinished or older `ppdinfer covid infer`; run it again)")
    path = write_report(table, synthesis, results / "report", inference=inference)
    print(f"report: {path}")
    return path


def reproduce(
    results: Path, quick: bool = False, progressbar: bool = True, data: Path | None = None, fresh: bool = False
) -> Path:
    """The whole case study (the plan ``FULL``, or ``QUICK``) into ``results``; resumes an interrupted run.

    ``fresh`` (``ppdinfer reproduce covid_pa --fresh``) deletes the results of an earlier run first,
    which a run of another configuration (seed, table, sweeps) needs.
    """
    plan = QUICK if quick else FULL
    synthesize_step(
        load_table(data, plan["counties"], plan["months"]),
        results,
        replicates=plan["replicates"],
        sweeps=plan["sweeps"],
        fresh=fresh,
        progressbar=progressbar,
    )
    # every month: the coverage study's month and the earlier one of the few-county check
    infer_step(
        load_table(data, plan["counties"]),
        results,
        replicates=plan["infer_replicates"],
        fresh=fresh,
        progressbar=progressbar,
    )
    return report_step(results, data=data)
