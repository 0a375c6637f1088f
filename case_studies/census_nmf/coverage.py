"""The coverage study: replicate releases of a small geography, each fitted by the three estimators.

The geography (a few counties of the synthetic Pennsylvania, their Noisy Measurement File written and
read back: :func:`.synthetic.file_release`) and its true cells are drawn once from the study's seed;
replicate r releases the same queries again (the file's mechanism) with the
stream ``SeedSequence(seed, spawn_key=(r,))`` (its first child seeds the release, its second the
posterior's chains) and fits the posterior, GLS and TopDown. A replicate is one task on any
``concurrent.futures`` executor (a local pool of processes, :class:`LocalPool`, or dask's), and
writes one checksummed netCDF file, atomically, into the study's folder with the run's
configuration (the COVID study's machinery: ``covid_pa.results_dir`` and ``covid_pa.synthesis``'s
:func:`run_tasks`). A rerun skips the sound files, so an interrupted study resumes, and the results
do not depend on the executor, the number of workers or the order tasks finish in.

**The full histogram** (``histogram="full"``): replicate r writes its own Noisy Measurement File (the
release stream seeds :func:`ppdinfer.census.write_nmf`) and reads it back both over the 28-cell target table
(the three estimators, as above) and over the full 2,016-cell histogram, whose posterior
(:func:`.analysis.fit_full_histogram`, seeded by the stream's third child) is summarized over the same cells
(``full_*`` columns): the two posteriors and GLS meet the same measurements.
"""

from __future__ import annotations

import tempfile
import threading
from concurrent.futures import Executor
from pathlib import Path

import numpy as np
import pandas as pd
import xarray as xr

from ... import __version__
from ..covid_pa import results_dir as rundir
from ..covid_pa.synthesis import LocalPool, run_tasks
from .analysis import SIZE_CLASSES, SUMMARY_LEVELS, estimand_cells, fit_full_histogram, fit_release
from .synthetic import TABLE, file_release

__all__ = ["LocalPool", "coverage_config", "coverage_summary", "load_replicates", "run_coverage", "run_replicates"]

#: The per-cell quantities a replicate file keeps (the truth and the units are in every file too).
CELL_COLUMNS = ("post_mean", "post_lo", "post_hi", "post_mass", "post_cover", "gls", "gls_lo", "gls_hi", "topdown")
FULL_COLUMNS = ("full_mean", "full_lo", "full_hi", "full_mass", "full_cover")
#: The histograms a study can fit: the target table alone, or the full histogram too.
HISTOGRAMS = ("target", "full")
TRACT_COLUMNS = ("post_prob", "gls_prob", "topdown_prob", "post_share_lo", "post_share_hi")
#: One release at a time in a process. The exact discrete Gaussian sampler keeps module-level state (its
#: interval arithmetic's precision); once, replicates redone on two threads of one process differed from
#: the same replicates made in worker processes, which this lock is meant to rule out (not reproduced since).
_RELEASE_LOCK = threading.Lock()


def coverage_config(counties, seed: int, draws: int, tune: int, histogram: str = "target") -> dict:
    """What a coverage study's results depend on (besides the replicate number).

    Examples
    --------
    >>> sorted(coverage_config(["Fulton"], 1, 100, 100))
    ['counties', 'draws', 'histogram', 'seed', 'source', 'study', 'tune', 'version']
    """
    if histogram not in HISTOGRAMS:
        raise ValueError(f"histogram must be one of {HISTOGRAMS}, got {histogram!r}")
    if int(seed) != seed or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    for name, value in (("draws", draws), ("tune", tune)):
        if int(value) != value or value < 1:
            raise ValueError(f"{name} must be a positive integer, got {value!r}")
    return {"study": "census_nmf coverage", "source": SOURCE, "counties": [str(c) for c in counties],
            "seed": int(seed), "draws": int(draws), "tune": int(tune), "histogram": histogram,
            "version": __version__}  # fmt: skip


#: What the replicates release: the queries of a Noisy Measurement File read back over the 28-cell TABLE.
SOURCE = f"nmf file, {TABLE.table.n_cells} cells"


def study_setup(config: dict):
    """The study's geography, truth and mechanism: its counties' file written to a temporary folder and read back."""
    with tempfile.TemporaryDirectory(prefix="census-nmf-") as folder:
        return file_release(config["counties"], seed=config["seed"], folder=folder)[0]


def _filename(replicate: int) -> str:
    return f"replicate_{replicate:04d}.nc"


def _replicate(setup, replicate: int, config: dict, folder: str) -> int:
    """One replicate: release, fit, write its file (a task: top level, so that processes can run it)."""
    release_seed, chain_seed, full_seed = np.random.SeedSequence(config["seed"], spawn_key=(replicate,)).spawn(3)
    full = config.get("histogram") == "full"
    with _RELEASE_LOCK:
        if full:
            with tempfile.TemporaryDirectory(prefix="census-nmf-") as tmp:
                setup, y = file_release(
                    config["counties"], seed=config["seed"], folder=tmp, release_seed=release_seed, full=True
                )
        else:
            y = setup.mechanism.release(setup.truth.ravel(), random_seed=np.random.default_rng(release_seed))
    cells, tracts, info = fit_release(
        setup, y, draws=config["draws"], tune=config["tune"], random_seed=chain_seed, cores=1
    )
    data = {name: (("row",), cells[name].to_numpy(float)) for name in CELL_COLUMNS}
    data.update({name: (("tract",), tracts[name].to_numpy(float)) for name in TRACT_COLUMNS})
    data["max_rhat"] = ((), info["max_rhat"])
    if full:
        frame, full_info = fit_full_histogram(
            setup, draws=config["draws"], tune=config["tune"], random_seed=full_seed, cores=1
        )
        if not np.array_equal(frame["truth"].to_numpy(), cells["truth"].to_numpy()):
            raise RuntimeError("the full histogram's cell frame is not in the order of the target table's")
        data.update({name: (("row",), frame[name].to_numpy(float)) for name in FULL_COLUMNS})
        data["full_max_rhat"] = ((), float(np.nanmax(frame["full_rhat"])))
        data["full_seconds"] = ((), full_info["full_s"])
    dataset = xr.Dataset(data, attrs={"replicate": int(replicate)})
    path = Path(folder) / _filename(replicate)
    rundir.write_atomically(path, rundir.stamp(dataset, config).to_netcdf(engine="scipy"))
    return replicate


def run_coverage(
    results_dir,
    *,
    counties,
    replicates: int,
    seed: int = 2020,
    draws: int = 400,
    tune: int = 400,
    executor: Executor | None = None,
    workers: int | None = None,
    fresh: bool = False,
    progressbar: bool = True,
    histogram: str = "target",
) -> list[int]:
    """Run every missing replicate into ``results_dir`` and return those run in this call.

    Parameters
    ----------
    results_dir : path
        The study's folder (``run.json`` and one ``replicate_NNNN.nc`` per replicate).
    counties : sequence of str
        The small geography.
    replicates : int
        Replicates 0 .. replicates - 1 (more replicates later extend the study).
    seed, draws, tune : int
        The study's seed and the posterior's draws and tuning sweeps per chain (2 chains).
    executor : concurrent.futures.Executor, optional
        Default: a :class:`LocalPool` of ``workers`` processes (default all cores).
    fresh : bool
        Delete the folder's results first (needed for another configuration).
    histogram : {"target", "full"}
        "full": each replicate its own file, fitted over the full histogram too (module docstring).

    Examples
    --------
    >>> import tempfile, concurrent.futures
    >>> with tempfile.TemporaryDirectory() as folder, concurrent.futures.ThreadPoolExecutor(1) as pool:
    ...     run_coverage(folder, counties=["Cameron"], replicates=2, draws=20, tune=20, executor=pool,
    ...                  progressbar=False)
    [0, 1]
    """
    if int(replicates) != replicates or replicates < 1:
        raise ValueError(f"replicates must be a positive integer, got {replicates!r}")
    config = coverage_config(counties, seed, draws, tune, histogram)
    return run_replicates(
        results_dir, config, replicates, _replicate, study_setup, executor=executor, workers=workers, fresh=fresh,
        progressbar=progressbar,
    )  # fmt: skip


def run_replicates(
    results_dir, config: dict, replicates: int, task, setup, *, executor: Executor | None = None,
    workers: int | None = None, fresh: bool = False, progressbar: bool = True,
) -> list[int]:  # fmt: skip
    """``task(setup(config), r, config, folder)`` for every replicate r < ``replicates`` whose file
    ``replicate_NNNN.nc`` in ``results_dir`` is missing or damaged (``setup`` is called only if one is); returns
    those run, in order. The folder is locked and its ``run.json`` checked against ``config`` (:func:`run_coverage`).

    Examples
    --------
    >>> import tempfile, concurrent.futures
    >>> def task(setup, r, config, folder):
    ...     data = rundir.stamp(xr.Dataset({"r": ((), float(r))}), config).to_netcdf(engine="scipy")
    ...     rundir.write_atomically(Path(folder) / _filename(r), data)
    ...     return r
    >>> with tempfile.TemporaryDirectory() as folder, concurrent.futures.ThreadPoolExecutor(1) as pool:
    ...     first = run_replicates(folder, {"study": "x"}, 2, task, dict, executor=pool, progressbar=False)
    ...     first, run_replicates(folder, {"study": "x"}, 3, task, dict, executor=pool, progressbar=False)
    ([0, 1], [2])
    """
    folder = Path(results_dir)
    with rundir.task_folder(folder, config, fresh, "census-coverage-") as folder:
        todo = [r for r in range(int(replicates)) if not rundir.usable(folder / _filename(r), config)]
        if not todo:
            return []
        shared = setup(config)
        own = executor is None
        pool = LocalPool(workers) if own else executor
        try:
            done = run_tasks(
                task, todo, shared, config, str(folder), executor=pool, desc="coverage replicates",
                progressbar=progressbar,
            )  # fmt: skip
        finally:
            if own:
                pool.shutdown(wait=True, cancel_futures=True)
    return sorted(done)


def load_replicates(results_dir, replicates: int | None = None) -> tuple[xr.Dataset, dict]:
    """Every sound replicate file of a study (stacked along 'replicate', in replicate order) and its configuration.

    Examples
    --------
    >>> import tempfile, concurrent.futures
    >>> with tempfile.TemporaryDirectory() as folder, concurrent.futures.ThreadPoolExecutor(1) as pool:
    ...     _ = run_coverage(folder, counties=["Cameron"], replicates=2, draws=20, tune=20, executor=pool,
    ...                      progressbar=False)
    ...     data, config = load_replicates(folder)
    >>> data.sizes["replicate"], config["counties"]
    (2, ['Cameron'])
    """
    folder = Path(results_dir)
    config = rundir.read_json(folder / rundir.MANIFEST)
    paths = sorted(folder.glob("replicate_*.nc"))
    if replicates is not None:
        paths = [p for p in paths if int(p.stem.split("_")[1]) < replicates]
    if not paths:
        raise rundir.ResultsError(f"{folder} holds no replicate files")
    datasets = []
    for path in paths:
        dataset, recorded = rundir.read_result(path)
        if recorded != config:
            raise rundir.ResultsError(f"{path} is of another configuration than {folder}")
        datasets.append(dataset.drop_attrs())
    return xr.concat(datasets, dim="replicate"), config


def _rows(setup) -> pd.DataFrame:
    """Level, unit and truth of each row of a replicate's cell arrays (the order :func:`fit_release` gives)."""
    frames = []
    for level in SUMMARY_LEVELS:
        truth = setup.level_truth(level)
        frames.append(pd.DataFrame({"level": level, "truth": truth.ravel()}))
    return pd.concat(frames, ignore_index=True)


def _replicate_se(per_replicate: np.ndarray) -> float:
    """The standard error of a mean over replicates (nan for one replicate)."""
    R = per_replicate.size
    return float(per_replicate.std(ddof=1) / np.sqrt(R)) if R > 1 else float("nan")


def coverage_summary(data: xr.Dataset, config: dict) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Coverage and error of the replicates by level and size class, and per replicate.

    Returns
    -------
    summary : DataFrame
        Indexed by (level, size): cells (per replicate), replicates, coverage of the posterior and GLS
        90 % intervals with binomial standard errors (over all replicate x cell pairs) and replicate
        standard errors (the sd of the per-replicate coverage / sqrt(R), which allows for cells of one
        release being correlated); the same for the posterior's randomized 90 % intervals
        (``coverage_randomized``: :func:`.analysis.randomized_coverage`); RMSE and bias of the three estimators, and
        the ratio RMSE(posterior) / RMSE(GLS) with its replicate standard error. A study of the full histogram
        adds the same for its posterior (``coverage_full``, ``coverage_randomized_full``, ``rmse_full``,
        ``rmse_ratio_full`` ...).
    per_replicate : DataFrame
        The same quantities for each replicate (coverage and RMSE).

    Examples
    --------
    >>> import tempfile, concurrent.futures
    >>> with tempfile.TemporaryDirectory() as folder, concurrent.futures.ThreadPoolExecutor(1) as pool:
    ...     _ = run_coverage(folder, counties=["Cameron"], replicates=2, draws=20, tune=20, executor=pool,
    ...                      progressbar=False)
    ...     summary, _ = coverage_summary(*load_replicates(folder))
    >>> summary.loc[("Tract", "< 50"), "replicates"]
    np.float64(2.0)
    """
    setup = study_setup(config)
    rows = _rows(setup)
    truth = rows["truth"].to_numpy(float)[None, :]
    full = "full_mean" in data
    intervals = {"posterior": "post", "gls": "gls", **({"full": "full"} if full else {})}
    hits = {
        name: (data[f"{p}_lo"].values <= truth) & (truth <= data[f"{p}_hi"].values) for name, p in intervals.items()
    }
    means = {"posterior": "post_mean", "gls": "gls", "topdown": "topdown", **({"full": "full_mean"} if full else {})}
    errors = {name: data[column].values - truth for name, column in means.items()}
    randomized = {"randomized": "post_cover", **({"randomized_full": "full_cover"} if full else {})}
    ratios = {"": "posterior", **({"_full": "full"} if full else {})}  # RMSE / RMSE(GLS), by column suffix
    R = data.sizes["replicate"]
    summary, per_rep = {}, []
    for level in SUMMARY_LEVELS:
        for size in (*SIZE_CLASSES, "all"):
            small = rows["truth"] < 50
            chosen = {SIZE_CLASSES[0]: small, SIZE_CLASSES[1]: ~small, "all": small | ~small}[size]
            mask = ((rows["level"] == level) & chosen).to_numpy()
            if not mask.any():
                continue
            n = int(mask.sum())
            row = {"cells": float(n), "replicates": float(R)}
            # coverage of the closed intervals, and the randomized interval's chance of covering (exactly 90 %
            # posterior mass; absent from files of earlier versions)
            covered = {name: hit[:, mask] for name, hit in hits.items()}
            covered.update(
                {name: data[column].values[:, mask] for name, column in randomized.items() if column in data}
            )
            for name, cover in covered.items():
                p = float(cover.mean())
                row[f"coverage_{name}"] = p
                row[f"se_binomial_{name}"] = float(np.sqrt(p * (1 - p) / (n * R)))
                row[f"se_replicate_{name}"] = _replicate_se(cover.mean(axis=1))
            # the share of the draws inside the posterior's interval (absent from files of earlier versions)
            row["mass_posterior"] = float(data["post_mass"].values[:, mask].mean()) if "post_mass" in data else np.nan
            rmse = {name: np.sqrt((error[:, mask] ** 2).mean(axis=1)) for name, error in errors.items()}
            for name, error in errors.items():
                row[f"rmse_{name}"] = float(np.sqrt((error[:, mask] ** 2).mean()))
                row[f"bias_{name}"] = float(error[:, mask].mean())
            for suffix, name in ratios.items():
                row[f"rmse_ratio{suffix}"] = row[f"rmse_{name}"] / max(row["rmse_gls"], 1e-12)
                row[f"se_rmse_ratio{suffix}"] = _replicate_se(rmse[name] / np.maximum(rmse["gls"], 1e-12))
            summary[(level, size)] = row
            per_rep.append(
                pd.DataFrame(
                    {
                        "level": level,
                        "size": size,
                        "replicate": np.arange(R),
                        **{f"coverage_{name}": hit[:, mask].mean(axis=1) for name, hit in hits.items()},
                        **{f"rmse_{k}": v for k, v in rmse.items()},
                    }
                )  # fmt: skip
            )
    frame = pd.DataFrame.from_dict(summary, orient="index").rename_axis(["level", "size"])
    truth_share = setup.level_truth("Tract")
    hispanic = estimand_cells(setup.census.table.labels)[1]
    share = truth_share[:, hispanic].sum(axis=1) / np.maximum(truth_share.sum(axis=1), 1)
    inside = (data["post_share_lo"].values <= share) & (share <= data["post_share_hi"].values)
    p = float(inside.mean())
    frame.attrs["share_coverage"] = (p, float(np.sqrt(p * (1 - p) / inside.size)), int(inside.size))
    return frame, pd.concat(per_rep, ignore_index=True)
