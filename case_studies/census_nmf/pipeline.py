"""The case study's steps: the state fit, the coverage studies, the report; :func:`reproduce` runs them all.

``results/state/`` holds the fit of the whole synthetic state (one release): every unit's cells
at County, Tract and Block_Group by the three estimators (``cells.csv.gz``), the tract estimand
(``tracts.csv``) and ``info.json`` (its configuration, timings and diagnostics, written last: a
state fit whose ``info.json`` matches the configuration is reused). ``results/coverage/`` holds the
coverage study's replicate files (:mod:`.coverage`), ``results/coverage_full/`` those of the full
histogram's study; ``results/blocks/`` the block fit of one file (:mod:`.blocks`: ``blocks.csv.gz``,
``districts.csv``, ``info.json`` last, reused as the state fit is), ``results/coverage_blocks/`` the block
coverage study's replicate files (:mod:`.block_coverage`); ``results/report/`` the report and figures.
"""

from __future__ import annotations

import time
from concurrent.futures import Executor
from pathlib import Path

import numpy as np
import pandas as pd

from ... import __version__
from ..covid_pa import results_dir as rundir
from .coverage import SOURCE

#: The quick variant (what the tests and the docs run): two counties for the state fit, two small
#: ones and 20 replicates for the coverage study, three replicate files of the smallest county for the
#: full histogram; one file of that county fitted at the Block level and three replicate files of it with
#: short chains for the block coverage study.
QUICK = {
    "state_counties": ["Adams", "Lancaster"],
    "state_draws": 300,
    "state_tune": 300,
    "state_thin": 1,
    "districts": 50,
    "district_sizes": (2, 12),
    "coverage_counties": ["Fulton", "Potter"],
    "replicates": 20,
    "draws": 400,
    "tune": 400,
    "full_counties": ["Cameron"],
    "full_replicates": 3,
    "full_draws": 60,
    "full_tune": 60,
    "block_counties": ["Cameron"],
    "block_draws": 200,
    "block_tune": 200,
    "block_districts": 50,
    "block_district_sizes": (5, 30),
    "block_coverage_counties": ["Cameron"],
    "block_replicates": 3,
    "block_coverage_draws": 100,
    "block_coverage_tune": 100,
}
#: The full run: all 67 counties (about 140,000 cells; the state fit of benchmarks/census_nmf.py, whose
#: every cell has a bulk ESS of at least 400), 200 replicates of four small counties, and 200 replicate
#: files of one county fitted over the full histogram too (``results/coverage_full``); four small counties at
#: the Block level (about 32,000 people, 800 blocks) and 200 replicate files of Cameron for the block coverage.
FULL = {
    "state_counties": None,
    "state_draws": 1250,
    "state_tune": 200,
    "state_thin": 4,
    "districts": 50,
    "district_sizes": (20, 200),
    "coverage_counties": ["Fulton", "Potter", "Montour", "Juniata"],
    "replicates": 200,
    "draws": 400,
    "tune": 400,
    "full_counties": ["Fulton"],
    "full_replicates": 200,
    "full_draws": 400,
    "full_tune": 400,
    "block_counties": ["Cameron", "Forest", "Sullivan", "Fulton"],
    "block_draws": 1000,
    "block_tune": 1000,
    "block_districts": 50,
    "block_district_sizes": (20, 200),
    "block_coverage_counties": ["Cameron"],
    "block_replicates": 200,
    "block_coverage_draws": 400,
    "block_coverage_tune": 400,
}
SEED = 2020
#: The state fit's files (``info.json`` last).
STATE_FILES = ("cells.csv.gz", "tracts.csv", "districts.csv", "info.json")
#: The block fit's files (``info.json`` last).
BLOCK_FILES = ("blocks.csv.gz", "districts.csv", "info.json")


def state_config(plan: dict, seed: int = SEED) -> dict:
    """What the state fit depends on.

    Examples
    --------
    >>> state_config(QUICK)["counties"]
    ['Adams', 'Lancaster']
    """
    return {"counties": plan["state_counties"], "seed": int(seed), "draws": plan["state_draws"], "source": SOURCE,
            "tune": plan["state_tune"], "thin": plan["state_thin"], "districts": plan["districts"],
            "district_sizes": list(plan["district_sizes"]), "version": __version__}  # fmt: skip


def _reusable_fit(out: Path, config: dict, fresh: bool, files=STATE_FILES) -> bool:
    """Whether ``out`` holds the finished fit of ``config`` (its ``files``); a fit of another configuration is
    refused (:class:`ResultsError`) unless ``fresh``, which deletes it. A fit without ``info.json`` (written last)
    was cut short: it is redone."""
    info_path = out / "info.json"
    if fresh or not info_path.exists():
        info_path.unlink(missing_ok=True)
        return False
    info = rundir.read_json(info_path)
    recorded = info.get("config") if isinstance(info, dict) else None
    if recorded != config:
        raise rundir.ResultsError(
            f"{out} holds a fit of another configuration ({rundir.differences(recorded or {}, config)}); "
            "choose another results folder, or start afresh with --fresh (fresh=True), which deletes its results"
        )
    if all((out / name).exists() for name in files):
        return True
    info_path.unlink()  # a file of the fit is missing: redo it
    return False


def state_step(results, plan: dict, *, seed: int = SEED, fresh: bool = False) -> Path:
    """Release the synthetic state once, fit it by the three estimators, and write ``results/state``.

    A finished fit of the same configuration is reused; one of another configuration is refused unless
    ``fresh`` (which deletes it); the folder is locked while the fit runs.

    Examples
    --------
    >>> import tempfile
    >>> plan = dict(QUICK, state_counties=["Cameron"], state_draws=30, state_tune=30)
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     out = state_step(folder, plan)
    ...     sorted(p.name for p in out.iterdir() if not p.name.startswith("."))
    ['cells.csv.gz', 'districts.csv', 'info.json', 'tracts.csv']
    """
    config = state_config(plan, seed)
    out = Path(results) / "state"
    out.mkdir(parents=True, exist_ok=True)
    with rundir.locked(out):
        if not _reusable_fit(out, config, fresh):
            _fit_state(out, config, seed)
    return out


def _fit_state(out: Path, config: dict, seed: int) -> None:
    """The state fit of ``config`` into ``out``: the cell and tract frames, then ``info.json`` (atomically).

    The release is read from a file: the synthetic state's Noisy Measurement File is written to a temporary
    folder with :func:`ppdinfer.census.write_nmf` and read back with :func:`ppdinfer.census.read_nmf`.
    """
    import tempfile

    from .analysis import fit_release, random_districts
    from .synthetic import file_release

    start = time.perf_counter()
    release_seed, chain_seed = np.random.SeedSequence([seed, 1]).spawn(2)
    with tempfile.TemporaryDirectory(prefix="census-nmf-") as folder:
        setup, y = file_release(config["counties"], seed=seed, folder=folder, release_seed=release_seed)
        file_s = time.perf_counter() - start
    districts = random_districts(setup.geography, config["districts"], tuple(config["district_sizes"]), seed)
    cells, tracts, info = fit_release(
        setup, y, draws=config["draws"], tune=config["tune"], thin=config["thin"], random_seed=chain_seed,
        districts=districts,
    )  # fmt: skip
    info["file_s"] = file_s
    info.pop("districts").to_csv(out / "districts.csv", index=False)
    cells.to_csv(out / "cells.csv.gz", index=False)
    tracts.to_csv(out / "tracts.csv", index=False)
    geo = setup.geography
    info.update(
        config=config,
        seconds=time.perf_counter() - start,
        counties=len(geo.level("County")),
        tracts=len(geo.level("Tract")),
        block_groups=geo.n_leaves,
        cells=int(setup.census.n_cells),
        queries=int(setup.census.n_queries),
        population=int(setup.truth.sum()),
        rho=float(setup.mechanism.guarantee().rho),
        rhat_above_1_05=float((cells["post_rhat"] > 1.05).mean()),
        sigmas={
            f"{level}/{kind}": [float(r.sigma_min), float(r.sigma_max)]
            for (level, kind), r in setup.sigma_table().iterrows()
        },  # fmt: skip
    )
    rundir.write_json(out / "info.json", info)


def block_config(plan: dict, seed: int = SEED) -> dict:
    """What the block fit depends on.

    Examples
    --------
    >>> block_config(QUICK)["counties"]
    ['Cameron']
    """
    return {"study": "census_nmf blocks", "counties": list(plan["block_counties"]), "seed": int(seed),
            "draws": plan["block_draws"], "tune": plan["block_tune"], "districts": plan["block_districts"],
            "district_sizes": list(plan["block_district_sizes"]), "version": __version__}  # fmt: skip


def blocks_step(results, plan: dict, *, seed: int = SEED, fresh: bool = False) -> Path:
    """One block file of the plan's ``block_counties``, fitted at the Block level by the three estimators, into
    ``results/blocks`` (:mod:`.blocks`: ``blocks.csv.gz``, one row per block; ``districts.csv``; ``info.json``).

    Reused, refused or redone as :func:`state_step`.

    Examples
    --------
    >>> import tempfile
    >>> plan = dict(QUICK, block_draws=10, block_tune=10, block_districts=3)
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     out = blocks_step(folder, plan)
    ...     sorted(p.name for p in out.iterdir() if not p.name.startswith("."))
    ['blocks.csv.gz', 'districts.csv', 'info.json']
    """
    import tempfile

    from ...census import synthetic_pl94_state
    from .analysis import random_districts
    from .blocks import block_file, fit_block_file

    config = block_config(plan, seed)
    out = Path(results) / "blocks"
    out.mkdir(parents=True, exist_ok=True)
    with rundir.locked(out):
        if _reusable_fit(out, config, fresh, BLOCK_FILES):
            return out
        start = time.perf_counter()
        release_seed, chain_seed = np.random.SeedSequence([seed, 43]).spawn(2)
        state = synthetic_pl94_state(config["counties"], random_seed=seed)
        with tempfile.TemporaryDirectory(prefix="census-blocks-") as folder:
            blocks = block_file(state, folder, release_seed)
        file_s = time.perf_counter() - start
        districts = random_districts(blocks.release.geography, config["districts"],
                                     tuple(config["district_sizes"]), seed)  # fmt: skip
        frame, district_frame, info = fit_block_file(
            blocks, districts, draws=config["draws"], tune=config["tune"], random_seed=chain_seed
        )
        frame.to_csv(out / "blocks.csv.gz", index=False)
        district_frame.to_csv(out / "districts.csv", index=False)
        geo = blocks.release.geography
        info.update(config=config, file_s=file_s, seconds=time.perf_counter() - start, blocks=geo.n_leaves,
                    block_groups=len(geo.level("Block_Group")), people=int(blocks.truth.sum()),
                    empty_blocks=int((blocks.truth.sum(axis=1) == 0).sum()),
                    blocks_without_housing=int(blocks.exposure.empty.sum()))  # fmt: skip
        rundir.write_json(out / "info.json", info)
    return out


def block_coverage_step(
    results, plan: dict, *, seed: int = SEED, executor: Executor | None = None, workers: int | None = None,
    fresh: bool = False, progressbar: bool = True,
) -> Path:  # fmt: skip
    """The block coverage study of the plan into ``results/coverage_blocks`` (:mod:`.block_coverage`; resumes).

    Examples
    --------
    >>> import tempfile, concurrent.futures
    >>> plan = dict(QUICK, block_replicates=1, block_coverage_draws=10, block_coverage_tune=10)
    >>> with tempfile.TemporaryDirectory() as folder, concurrent.futures.ThreadPoolExecutor(1) as pool:
    ...     out = block_coverage_step(folder, plan, executor=pool, progressbar=False)
    ...     [p.name for p in out.glob("replicate_*.nc")]
    ['replicate_0000.nc']
    """
    from .block_coverage import run_block_coverage

    out = Path(results) / "coverage_blocks"
    run_block_coverage(
        out, counties=plan["block_coverage_counties"], replicates=plan["block_replicates"], seed=seed,
        draws=plan["block_coverage_draws"], tune=plan["block_coverage_tune"], executor=executor, workers=workers,
        fresh=fresh, progressbar=progressbar,
    )  # fmt: skip
    return out


def coverage_step(
    results, plan: dict, *, seed: int = SEED, executor: Executor | None = None, workers: int | None = None,
    fresh: bool = False, progressbar: bool = True,
) -> Path:  # fmt: skip
    """The coverage study of the plan into ``results/coverage`` (resumes; ``fresh`` deletes it first).

    Examples
    --------
    >>> import tempfile, concurrent.futures
    >>> plan = dict(QUICK, coverage_counties=["Cameron"], replicates=2, draws=20, tune=20)
    >>> with tempfile.TemporaryDirectory() as folder, concurrent.futures.ThreadPoolExecutor(1) as pool:
    ...     out = coverage_step(folder, plan, executor=pool, progressbar=False)
    ...     len(list(out.glob("replicate_*.nc")))
    2
    """
    from .coverage import run_coverage

    out = Path(results) / "coverage"
    run_coverage(
        out, counties=plan["coverage_counties"], replicates=plan["replicates"], seed=seed, draws=plan["draws"],
        tune=plan["tune"], executor=executor, workers=workers, fresh=fresh, progressbar=progressbar,
    )  # fmt: skip
    return out


def full_histogram_step(
    results, plan: dict, *, seed: int = SEED, executor: Executor | None = None, workers: int | None = None,
    fresh: bool = False, progressbar: bool = True,
) -> Path:  # fmt: skip
    """The coverage study of the full histogram into ``results/coverage_full``: replicate files of the plan's
    ``full_counties``, each fitted by both posteriors and GLS (:mod:`.coverage`, ``histogram="full"``).

    Examples
    --------
    >>> import tempfile, concurrent.futures
    >>> plan = dict(QUICK, full_replicates=1, full_draws=20, full_tune=20)
    >>> with tempfile.TemporaryDirectory() as folder, concurrent.futures.ThreadPoolExecutor(1) as pool:
    ...     out = full_histogram_step(folder, plan, executor=pool, progressbar=False)
    ...     [p.name for p in out.glob("replicate_*.nc")]
    ['replicate_0000.nc']
    """
    from .coverage import run_coverage

    out = Path(results) / "coverage_full"
    run_coverage(
        out, counties=plan["full_counties"], replicates=plan["full_replicates"], seed=seed, draws=plan["full_draws"],
        tune=plan["full_tune"], executor=executor, workers=workers, fresh=fresh, progressbar=progressbar,
        histogram="full",
    )  # fmt: skip
    return out


def reproduce(
    results: Path,
    quick: bool = False,
    progressbar: bool = True,
    fresh: bool = False,
    workers: int | None = None,
    executor: Executor | None = None,
) -> Path:
    """The whole case study (the plan ``FULL``, or ``QUICK``) into ``results``; returns ``report/report.md``.

    An interrupted run resumes (the state fit once finished, the coverage replicates one by one);
    ``fresh`` deletes the earlier results first.
    """
    from .report import write_report

    plan = QUICK if quick else FULL
    results = Path(results)
    start = time.perf_counter()
    state_step(results, plan, fresh=fresh)
    state_s = time.perf_counter() - start
    coverage_step(results, plan, executor=executor, workers=workers, fresh=fresh, progressbar=progressbar)
    coverage_s = time.perf_counter() - start - state_s
    full_histogram_step(results, plan, executor=executor, workers=workers, fresh=fresh, progressbar=progressbar)
    full_s = time.perf_counter() - start - state_s - coverage_s
    blocks_step(results, plan, fresh=fresh)
    blocks_s = time.perf_counter() - start - state_s - coverage_s - full_s
    block_coverage_step(results, plan, executor=executor, workers=workers, fresh=fresh, progressbar=progressbar)
    block_coverage_s = time.perf_counter() - start - state_s - coverage_s - full_s - blocks_s
    timing = pd.Series({"state fit, this call (reused if done)": state_s, "coverage study, this call": coverage_s,
                        "full-histogram study, this call": full_s, "block fit, this call (reused if done)": blocks_s,
                        "block coverage study, this call": block_coverage_s})  # fmt: skip
    return write_report(results, plan, timing=timing)
