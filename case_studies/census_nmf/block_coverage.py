"""Coverage down to blocks: replicate Noisy Measurement Files of one small county, each fitted at the Block level.

The county's truth (:func:`ppdinfer.census.synthetic_pl94_state` of the study's seed) is drawn once; replicate r
writes and reads its own person and housing-unit files (:func:`.blocks.block_file`) with the stream
``SeedSequence(seed, spawn_key=(STREAM, r))`` (its first child seeds the files' noise, its second the chains),
fits the block posterior (:func:`.blocks.fit_blocks`) and GLS over the 28 cells at every level to the Block, and
writes one checksummed netCDF file of its blocks (posterior mean, randomized and closed coverage of the 90 %
interval of each block's total, GLS's estimate and normal-interval coverage; the smallest and median bulk ESS and
largest R-hat of the block totals), by the same machinery as :mod:`.coverage` (:func:`.coverage.run_replicates`:
any executor, resumed after an interruption, a folder of another configuration refused).
"""

from __future__ import annotations

import tempfile
from concurrent.futures import Executor
from pathlib import Path

import numpy as np
import pandas as pd
import xarray as xr

from ... import __version__
from ...census import gls_estimate, synthetic_pl94_state
from ..covid_pa import results_dir as rundir
from .blocks import BLOCK_CLASSES, block_class, block_file, block_frame, fit_blocks
from .coverage import _RELEASE_LOCK, _filename, _replicate_se, run_replicates

__all__ = ["block_coverage_config", "block_coverage_summary", "run_block_coverage"]

#: The first spawn key of the replicates' streams (apart from :mod:`.coverage`'s, which use (r,)).
STREAM = 43
#: The per-block quantities a replicate file keeps.
BLOCK_COLUMNS = ("truth", "post_mean", "post_cover", "post_closed", "gls", "gls_closed")


def block_coverage_config(counties, seed: int, draws: int, tune: int) -> dict:
    """What the block coverage study's results depend on (besides the replicate number).

    Examples
    --------
    >>> block_coverage_config(["Cameron"], 1, 50, 50)["study"]
    'census_nmf block coverage'
    """
    if int(seed) != seed or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    for name, value in (("draws", draws), ("tune", tune)):
        if int(value) != value or value < 4:
            raise ValueError(f"{name} must be an integer >= 4, got {value!r}")
    return {"study": "census_nmf block coverage", "counties": [str(c) for c in counties], "seed": int(seed),
            "draws": int(draws), "tune": int(tune), "version": __version__}  # fmt: skip


def study_state(config: dict):
    """The study's truth: the synthetic state of its counties down to blocks."""
    return synthetic_pl94_state(config["counties"], random_seed=config["seed"])


def _replicate(state, replicate: int, config: dict, folder: str) -> int:
    """One replicate: write and read its files, fit, write its result (a task: top level, for processes)."""
    release_seed, chain_seed = np.random.SeedSequence(config["seed"], spawn_key=(STREAM, replicate)).spawn(2)
    with _RELEASE_LOCK, tempfile.TemporaryDirectory(prefix="census-blocks-") as tmp:
        blocks = block_file(state, tmp, release_seed)
    gls = gls_estimate(blocks.census, blocks.y, blocks.mechanism.sigmas, blocks.invariants)
    tree = fit_blocks(blocks, draws=config["draws"], tune=config["tune"], random_seed=chain_seed, cores=1)
    frame, diagnostics = block_frame(tree, blocks, gls)
    data = {name: (("block",), frame[name].to_numpy(float)) for name in BLOCK_COLUMNS}
    totals = diagnostics["block_totals"]
    data.update({name: ((), totals[name]) for name in ("ess_min", "ess_median", "rhat_max")})
    data["seconds"] = ((), float(tree.attrs["sampling_seconds"]))
    dataset = xr.Dataset(data, coords={"block": frame["block"].to_numpy(str)}, attrs={"replicate": int(replicate)})
    rundir.write_atomically(
        Path(folder) / _filename(replicate), rundir.stamp(dataset, config).to_netcdf(engine="scipy")
    )
    return replicate


def run_block_coverage(
    results_dir, *, counties, replicates: int, seed: int = 2020, draws: int = 400, tune: int = 400,
    executor: Executor | None = None, workers: int | None = None, fresh: bool = False, progressbar: bool = True,
) -> list[int]:  # fmt: skip
    """Run every missing replicate into ``results_dir`` (as :func:`.coverage.run_coverage`); returns those run.

    Examples
    --------
    >>> run_block_coverage("unused", counties=["Cameron"], replicates=0)
    Traceback (most recent call last):
    ValueError: replicates must be a positive integer, got 0

    :func:`block_coverage_summary` runs one.
    """
    if int(replicates) != replicates or replicates < 1:
        raise ValueError(f"replicates must be a positive integer, got {replicates!r}")
    config = block_coverage_config(counties, seed, draws, tune)
    return run_replicates(
        results_dir, config, replicates, _replicate, study_state, executor=executor, workers=workers, fresh=fresh,
        progressbar=progressbar,
    )  # fmt: skip


def block_coverage_summary(data: xr.Dataset, config: dict) -> pd.DataFrame:
    """Coverage and error of the replicates' block totals by size class (:data:`.blocks.BLOCK_CLASSES`, and all).

    The truth is the study's state's (drawn again from ``config``, matched to the files' blocks by geocode, and
    checked against the totals the files recorded). Columns: blocks (per replicate), replicates; the coverage of
    the posterior's randomized 90 % interval (``coverage_randomized``), of its closed interval and of GLS's normal
    interval, each with its binomial standard error (over every replicate x block pair) and replicate standard
    error; RMSE of the posterior mean and GLS and their ratio (replicate se); the replicates' smallest bulk ESS
    and largest R-hat of the block totals are in ``attrs``.

    Examples
    --------
    >>> import tempfile, concurrent.futures
    >>> from ppdinfer.case_studies.census_nmf.coverage import load_replicates
    >>> with tempfile.TemporaryDirectory() as folder, concurrent.futures.ThreadPoolExecutor(1) as pool:
    ...     _ = run_block_coverage(folder, counties=["Cameron"], replicates=2, draws=10, tune=10, executor=pool,
    ...                            progressbar=False)
    ...     summary = block_coverage_summary(*load_replicates(folder))
    >>> summary.index.tolist(), summary.loc["all", ["blocks", "replicates"]].tolist()
    (['0', '1-9', '10-49', '50+', 'all'], [117.0, 2.0])
    """
    state = study_state(config)
    position = {leaf: i for i, leaf in enumerate(state.geography.ids[state.geography.leaves].astype(str))}
    rows = [position[str(b)] for b in data["block"].values]
    truth = np.asarray(state.persons[rows].sum(axis=1)).ravel().astype(float)
    if not np.array_equal(data["truth"].values, np.broadcast_to(truth, data["truth"].shape)):
        raise rundir.ResultsError("the replicate files' block totals are not the study's truth")
    R = data.sizes["replicate"]
    size = block_class(truth)
    covers = {"randomized": "post_cover", "closed": "post_closed", "gls": "gls_closed"}
    summary = {}
    for name in (*BLOCK_CLASSES, "all"):
        mask = np.ones(truth.size, bool) if name == "all" else size == name
        n = int(mask.sum())
        if not n:
            continue
        row = {"blocks": float(n), "replicates": float(R)}
        for key, column in covers.items():
            cover = data[column].values[:, mask]
            p = float(cover.mean())
            row[f"coverage_{key}"] = p
            row[f"se_binomial_{key}"] = float(np.sqrt(p * (1 - p) / (n * R)))
            row[f"se_replicate_{key}"] = _replicate_se(cover.mean(axis=1))
        rmse = {k: np.sqrt(((data[k].values[:, mask] - truth[mask]) ** 2).mean(axis=1)) for k in ("post_mean", "gls")}
        for key, value in rmse.items():
            row[f"rmse_{key}"] = float(np.sqrt((value**2).mean()))
        row["ratio"] = row["rmse_post_mean"] / max(row["rmse_gls"], 1e-12)
        row["se_ratio"] = _replicate_se(rmse["post_mean"] / np.maximum(rmse["gls"], 1e-12))
        summary[name] = row
    frame = pd.DataFrame.from_dict(summary, orient="index").rename_axis("size")
    frame.attrs.update(ess_min=float(data["ess_min"].min()), ess_median=float(data["ess_median"].median()),
                       rhat_max=float(data["rhat_max"].max()), seconds=float(data["seconds"].mean()))  # fmt: skip
    return frame
