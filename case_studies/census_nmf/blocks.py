"""Down to blocks: one Noisy Measurement File's block and district posteriors against the truth, GLS and TopDown.

A synthetic state of a few counties (:func:`ppdinfer.census.synthetic_pl94_state`, down to blocks) has its person
and housing-unit files written (:func:`ppdinfer.census.write_nmf`) and read back (:func:`block_file`): the full
2,016-cell histogram of every block (:func:`ppdinfer.census.grouped_release`) with each block's housing units and
group-quarters facilities (:func:`ppdinfer.census.file_exposure`) for :func:`ppdinfer.census.sample_people`, and
the same measurements over the 28-cell target table :data:`.synthetic.TABLE` down to the Block level for GLS
(:func:`ppdinfer.census.gls_estimate`) and TopDown (:func:`ppdinfer.census.topdown_estimate`). The posterior's
draws are recorded over the same 28 cells (voting age x Hispanic origin x 7 race groups), so every estimator gives
each block's total, its voting-age population (VAP) and its VAP by Hispanic origin x race.

Blocks are classed by their true total (:data:`BLOCK_CLASSES`: 0, 1-9, 10-49, 50+ persons). The posterior's
interval is the randomized equal-tailed 90 % interval of the discrete draws (its chance of covering the truth,
:func:`.analysis.randomized_coverage`: the truth's randomized PIT, uniform on [F(t - 1), F(t)], inside [0.05,
0.95]); GLS's is its normal interval. Districts are runs of consecutive blocks in the file's geography order
(:func:`.analysis.random_districts`, across block-group, tract and county lines), summed draw by draw
(:func:`ppdinfer.census.aggregate`).
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ...census import (
    CensusQueries,
    GroupedRelease,
    LeafExposure,
    PersonMoves,
    SyntheticPL94State,
    aggregate,
    file_exposure,
    gls_estimate,
    grouped_release,
    read_nmf,
    sample_people,
    topdown_estimate,
    write_nmf,
)
from ...inference.diagnostics import ess_rhat
from ...mechanisms import NoisyMeasurements
from ...rng import root_seed
from .analysis import Z90, randomized_coverage
from .synthetic import TABLE

__all__ = [
    "BLOCK_CLASSES",
    "HYPERPARAMETERS",
    "MOVES",
    "BlockFile",
    "block_class",
    "block_errors",
    "block_file",
    "block_frame",
    "district_errors",
    "fit_block_file",
    "fit_blocks",
]

#: The block-size classes by true total: 0, 1-9, 10-49 and 50+ persons (lower bounds in :data:`CLASS_EDGES`).
BLOCK_CLASSES = ("0", "1-9", "10-49", "50+")
CLASS_EDGES = (0, 1, 10, 50)
#: The block sampler's moves: one line draw and three relocations per person, turns on the hhgq axis only, half the line
#: draws turning (half of those turns on voting age too), ten rare lines per person of a block that may hold a facility
#: (benchmarks/census_blocks.py, Cameron County, 600 sweeps: smallest / median bulk ESS of the block totals 11 / 185
#: with line draws alone, 134 / 507 with the relocations; Adams County, 400 sweeps: 15 blocks of R-hat above 1.1,
#: largest 3.4, with turns on any axis, 8 and 1.6 with turns on hhgq; 300 sweeps, two seeds: the facility-only blocks'
#: three smallest ESS 4-8 without line draws that turn, 6-19 with them; 150 + 150 sweeps, two seeds: the median ESS of
#: the 36 facility block groups' GQ populations 45 and 45 without rare lines, 89 and 69 with them; with half of the line
#: draws' turns on voting age too, the facility-only blocks' three smallest ESS, mean, 48 and 57 against 14 and 24).
MOVES = PersonMoves(lines=1.0, relocations=3.0, turn_axis=0, line_turns=0.5, rare_lines=10.0, second_turns=0.5,
                    second_axis=1)  # fmt: skip
#: The block fit's hyperparameters besides the library's defaults (all learned): the shares' Dirichlet prior a0 = 0.02
#: rather than 1 over the 2,016 cells, most of which hold nobody in a county (with a0 = 1 the empty cells' mass drove
#: alpha down: Cameron's household concentration fell from 32 to 1.7 in 400 sweeps and was still falling; with 0.02 it
#: stayed at 16-30). The zero-inflation (``vacant``) is left off: with it, a block's chains can stick at 0 people
#: (docs/census_nmf_file.md).
HYPERPARAMETERS = {"share_prior": 0.02}
#: The 28 cells' voting-age mask (label 'votingage=18+, ...').
ADULT = np.array([label.startswith("votingage=18+") for label in TABLE.table.labels])


def block_class(totals) -> np.ndarray:
    """The size class (:data:`BLOCK_CLASSES`) of each true block total.

    Examples
    --------
    >>> block_class([0, 1, 9, 10, 49, 50, 700]).tolist()
    ['0', '1-9', '1-9', '10-49', '10-49', '50+', '50+']
    """
    totals = np.asarray(totals)
    if totals.size and totals.min() < 0:
        raise ValueError("totals must be >= 0")
    return np.asarray(BLOCK_CLASSES)[np.searchsorted(CLASS_EDGES, totals, side="right") - 1]


@dataclass(frozen=True, eq=False)
class BlockFile:
    """A written-and-read Noisy Measurement File down to blocks and the truth of its blocks (module docstring).

    Attributes
    ----------
    release : GroupedRelease
        The person file's full histogram, levels State to Block, for :func:`ppdinfer.census.sample_people`.
    exposure : LeafExposure
        The blocks' housing units and facilities (the unit file's exact totals, the person file's hhgq bounds).
    census, mechanism, y
        The same measurements over a coarser table (:data:`.synthetic.TABLE`) at every level to the Block (GLS,
        TopDown).
    truth : numpy.ndarray
        (blocks, cells) true cells of the release's table (:data:`.synthetic.TABLE`: 28), in the file's block order.
    """

    release: GroupedRelease
    exposure: LeafExposure
    census: CensusQueries
    mechanism: NoisyMeasurements
    y: np.ndarray
    truth: np.ndarray

    @property
    def block_ids(self) -> np.ndarray:
        """The blocks' geocodes, in the file's order."""
        geo = self.release.geography
        return geo.ids[geo.leaves].astype(str)

    @property
    def invariants(self) -> tuple:
        """The 28-cell release's exact invariants (A, a), for GLS and TopDown."""
        return self.mechanism.invariant_matrix, self.mechanism.invariant_values


def _aligned_truth(state: SyntheticPL94State, nmf):
    """The state's full-histogram truth (blocks x 2,016, sparse) in the order of ``nmf``'s blocks, checked against
    the file.

    Every inequality constraint the file holds (the hhgq bounds: facilities and housing units) must hold for it,
    so a truth misaligned with the file's blocks (people placed in a block with no housing unit or facility) is
    refused (RuntimeError).
    """
    position = {leaf: i for i, leaf in enumerate(state.geography.ids[state.geography.leaves].astype(str))}
    ids = nmf.geography.ids[nmf.geography.leaves].astype(str)
    missing = [leaf for leaf in ids[:3] if leaf not in position]
    if missing or len(ids) != len(position):
        raise ValueError(f"state: its blocks are not the file's ({len(position)} against {len(ids)}; {missing})")
    truth = state.persons[[position[leaf] for leaf in ids]]  # sparse: a state's blocks would be 5 GiB dense
    broken = [key for key, held in nmf.check_constraints(truth).items() if not held.all()]
    if broken:
        raise RuntimeError(f"the block truth breaks the file's constraints {broken}: it is not in the file's order")
    return truth


def block_file(state: SyntheticPL94State, folder, release_seed, *, table=TABLE, workers: int = 1) -> BlockFile:
    """Write ``state``'s person and housing-unit files into ``folder`` (noise from ``release_seed``), read them back.

    ``table`` (a coarsening of :data:`ppdinfer.census.PERSON`) is the table of the GLS and TopDown release and of
    ``truth`` (the analyses here need the default, :data:`.synthetic.TABLE`); ``workers`` goes to
    :func:`ppdinfer.census.write_nmf`.

    Examples
    --------
    >>> import tempfile
    >>> from ppdinfer.census import synthetic_pl94_state
    >>> state = synthetic_pl94_state(["Cameron"], random_seed=0)
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     blocks = block_file(state, folder, release_seed=1)
    >>> blocks.truth.shape, int(blocks.truth.sum()) == int(state.persons.sum())
    ((117, 28), True)
    """
    person_seed, unit_seed = root_seed(release_seed).spawn(2)
    write_nmf(folder, state, random_seed=np.random.default_rng(person_seed), overwrite=True, workers=workers)
    write_nmf(folder, state, random_seed=np.random.default_rng(unit_seed), table="unit", overwrite=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the reader's notes on a file without a Block-level GEOID table
        nmf = read_nmf(folder, state.partition, state_total=int(state.persons.sum()))
        units = read_nmf(folder, state.partition, table="unit")
    release = grouped_release(nmf)
    census, mechanism, y = nmf.release(table)
    if not np.array_equal(census.geography.ids, release.geography.ids):
        raise RuntimeError("the 28-cell release and the full histogram's have different geographies")
    truth = table.collapse(_aligned_truth(state, nmf)).astype(np.int64)
    return BlockFile(release, file_exposure(release, units), census, mechanism, y, truth)


def fit_blocks(blocks: BlockFile, *, draws: int, tune: int, random_seed, cores: int | None = None):
    """The block posterior: :func:`ppdinfer.census.sample_people` with the blocks' exposure, :data:`MOVES` and
    :data:`HYPERPARAMETERS`, its draws recorded over :data:`.synthetic.TABLE` (2 chains); returns the DataTree.

    Examples
    --------
    >>> import tempfile
    >>> from ppdinfer.census import synthetic_pl94_state
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     blocks = block_file(synthetic_pl94_state(["Cameron"], random_seed=0), folder, release_seed=1)
    >>> tree = fit_blocks(blocks, draws=10, tune=10, random_seed=2)
    >>> tree["posterior"]["cells"].shape
    (2, 10, 117, 28)
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the convergence warning: the diagnostics are reported, not hidden
        return sample_people(
            blocks.release, draws=draws, tune=tune, record=TABLE, exposure=blocks.exposure, moves=MOVES,
            hyperparameters=dict(HYPERPARAMETERS), random_seed=random_seed, cores=cores, progressbar=False,
        )  # fmt: skip


def _diagnostics(summed: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Bulk ESS and R-hat of (chain, draw, ...) draws; NaN where a quantity is constant (a block that holds nobody)."""
    ess, rhat = ess_rhat(summed.astype(float))
    constant = (summed == summed.reshape(-1, *summed.shape[2:])[0]).all(axis=(0, 1))
    return np.where(constant, np.nan, ess), np.where(constant, np.nan, rhat)


def _interval(flat: np.ndarray, truth: np.ndarray) -> dict:
    """Mean, 5 % and 95 % quantiles, randomized coverage and closed coverage of (draws, ...) integer draws."""
    lo, hi = np.quantile(flat, [0.05, 0.95], axis=0)
    return {"mean": flat.mean(axis=0), "lo": lo, "hi": hi, "cover": randomized_coverage(flat, truth),
            "closed": ((lo <= truth) & (truth <= hi)).astype(float)}  # fmt: skip


def block_frame(tree, blocks: BlockFile, gls=None, topdown=None) -> tuple[pd.DataFrame, dict]:
    """One row per block: its true total, VAP and class; the posterior's total (mean, 90 % interval, randomized
    and closed coverage, bulk ESS, R-hat) and VAP mean; GLS's total with its normal interval and VAP; TopDown's.

    Returns the frame and the diagnostics: the smallest and median bulk ESS and the largest R-hat of the block
    totals and of the blocks' VAP by Hispanic origin x race (14 cells each), over the quantities that vary.

    Examples
    --------
    >>> import tempfile
    >>> from ppdinfer.census import synthetic_pl94_state
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     blocks = block_file(synthetic_pl94_state(["Cameron"], random_seed=0), folder, release_seed=1)
    >>> frame, diagnostics = block_frame(fit_blocks(blocks, draws=10, tune=10, random_seed=2), blocks)
    >>> bool((frame.loc[frame["empty"], "post_mean"] == 0).all()), sorted(diagnostics)
    (True, ['block_totals', 'block_vap_cells'])
    """
    cells = tree["posterior"]["cells"].values  # (chain, draw, block, 28)
    if cells.shape[2:] != blocks.truth.shape:
        raise ValueError(f"tree: draws of {cells.shape[2:]} cells, the blocks have {blocks.truth.shape}")
    totals = cells.sum(axis=3, dtype=np.int64)
    truth = blocks.truth.sum(axis=1)
    flat = totals.reshape(-1, totals.shape[2])
    post = _interval(flat, truth)
    ess, rhat = _diagnostics(totals)
    vap_ess, vap_rhat = _diagnostics(cells[..., ADULT])
    frame = pd.DataFrame(
        {
            "block": blocks.block_ids, "truth": truth, "truth_vap": blocks.truth[:, ADULT].sum(axis=1),
            "size": block_class(truth), "empty": blocks.exposure.empty, **{f"post_{k}": v for k, v in post.items()},
            "post_vap": cells[..., ADULT].sum(axis=3).reshape(flat.shape).mean(axis=0), "post_ess": ess,
            "post_rhat": rhat,
        }
    )  # fmt: skip
    if gls is not None:
        leaves = blocks.census.geography.leaves
        sd = np.sqrt(np.maximum(gls.unit_covariance[leaves].sum(axis=(1, 2)), 0.0))
        estimate = gls.cell_estimate.sum(axis=1)
        frame = frame.assign(gls=estimate, gls_sd=sd, gls_closed=(np.abs(estimate - truth) <= Z90 * sd).astype(float),
                             gls_vap=gls.cell_estimate[:, ADULT].sum(axis=1))  # fmt: skip
    if topdown is not None:
        frame = frame.assign(topdown=topdown.sum(axis=1), topdown_vap=topdown[:, ADULT].sum(axis=1))
    diagnostics = {}
    for name, (e, r) in {"block_totals": (ess, rhat), "block_vap_cells": (vap_ess, vap_rhat)}.items():
        varying = np.isfinite(r)
        diagnostics[name] = {
            "ess_min": float(e[varying].min()) if varying.any() else float("nan"),
            "ess_median": float(np.median(e[varying])) if varying.any() else float("nan"),
            "rhat_max": float(r[varying].max()) if varying.any() else float("nan"),
            "varying": int(varying.sum()),
        }
    return frame, diagnostics


def _district_frame(tree, blocks: BlockFile, districts: dict, gls, topdown) -> tuple[pd.DataFrame, dict]:
    """One row per district (blocks summed draw by draw): true total and voting-age share; the posterior's
    (mean, 90 % interval, randomized coverage of the total, bulk ESS and R-hat of the total), GLS's and TopDown's
    (a point estimate's share clipped to [0, 1])."""
    post = aggregate(tree, districts, census=blocks.census)
    truth = aggregate(blocks.truth, districts, census=blocks.census)
    points = {name: aggregate(np.asarray(v, float), districts, census=blocks.census) for name, v in
              (("gls", gls.cell_estimate), ("topdown", topdown))}  # fmt: skip
    total = post["total"].transpose("chain", "draw", "district").values
    share = (post["voting_age"].transpose("chain", "draw", "district").values / np.maximum(total, 1)).astype(float)
    true_total = truth["total"].values
    true_share = truth["voting_age"].values / np.maximum(true_total, 1)
    totals = _interval(total.reshape(-1, total.shape[2]), true_total)
    shares = _interval(share.reshape(-1, share.shape[2]), true_share)
    ess, rhat = _diagnostics(total)
    frame = pd.DataFrame(
        {
            "district": post["district"].values, "blocks": [len(v) for v in districts.values()], "truth": true_total,
            "truth_share": true_share, **{f"post_{k}": v for k, v in totals.items()},
            **{f"post_share_{k}": shares[k] for k in ("mean", "lo", "hi", "closed")}, "post_ess": ess,
            "post_rhat": rhat,
            **{name: p["total"].values for name, p in points.items()},
            **{f"{name}_share": np.clip(p["voting_age"].values / np.maximum(p["total"].values, 1), 0, 1)
               for name, p in points.items()},
        }
    )  # fmt: skip
    varying = np.isfinite(rhat)
    diagnostics = {"ess_min": float(ess[varying].min()), "ess_median": float(np.median(ess[varying])),
                   "rhat_max": float(rhat[varying].max()), "varying": int(varying.sum())}  # fmt: skip
    return frame, diagnostics


def fit_block_file(blocks: BlockFile, districts: dict, *, draws: int, tune: int, random_seed) -> tuple:
    """The three estimators on one block file: ``(blocks frame, districts frame, info)`` (seconds, diagnostics).

    ``districts``: name -> block ids (:func:`.analysis.random_districts` of the file's geography).

    Examples
    --------
    >>> import tempfile
    >>> from ppdinfer.census import synthetic_pl94_state
    >>> from ppdinfer.case_studies.census_nmf.analysis import random_districts
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     blocks = block_file(synthetic_pl94_state(["Cameron"], random_seed=0), folder, release_seed=1)
    >>> districts = random_districts(blocks.release.geography, 3, (5, 10), seed=0)
    >>> frame, district_frame, info = fit_block_file(blocks, districts, draws=10, tune=10, random_seed=2)
    >>> len(frame), len(district_frame), sorted(info["diagnostics"])
    (117, 3, ['block_totals', 'block_vap_cells', 'districts'])
    """
    info = {}
    start = time.perf_counter()
    gls = gls_estimate(blocks.census, blocks.y, blocks.mechanism.sigmas, blocks.invariants)
    info["gls_s"] = time.perf_counter() - start
    start = time.perf_counter()
    td = topdown_estimate(blocks.census, blocks.y, blocks.mechanism.sigmas, blocks.invariants)
    info["topdown_s"] = time.perf_counter() - start
    tree = fit_blocks(blocks, draws=draws, tune=tune, random_seed=random_seed)
    info.update(posterior_s=tree.attrs["sampling_seconds"], moves_per_sweep=tree.attrs["moves_per_sweep"],
                accept=float(tree["sample_stats"]["accept"].mean()))  # fmt: skip
    frame, info["diagnostics"] = block_frame(tree, blocks, gls, td)
    districts_frame, info["diagnostics"]["districts"] = _district_frame(tree, blocks, districts, gls, td)
    return frame, districts_frame, info


def _rmse(error) -> float:
    return float(np.sqrt(np.mean(np.square(error)))) if len(error) else float("nan")


def block_errors(frame: pd.DataFrame, estimators=("post_mean", "gls", "topdown")) -> pd.DataFrame:
    """RMSE of each estimator's block totals (and VAP) by size class and over all blocks, with the ratio to GLS's.

    Examples
    --------
    >>> frame = pd.DataFrame({"truth": [0, 5, 60], "truth_vap": [0, 4, 40], "post_mean": [0.0, 6.0, 58.0],
    ...     "post_vap": [0.0, 4.0, 40.0], "gls": [3.0, 9.0, 50.0], "gls_vap": [2.0, 4.0, 40.0]})
    >>> table = block_errors(frame, ("post_mean", "gls"))
    >>> table.loc["all", ["blocks", "rmse_post_mean", "ratio_post_mean"]].round(3).tolist()
    [3.0, 1.291, 0.2]
    """
    frame = frame.assign(size=block_class(frame["truth"]))
    rows = {}
    for size in (*BLOCK_CLASSES, "all"):
        group = frame if size == "all" else frame[frame["size"] == size]
        row = {"blocks": float(len(group))}
        for name in estimators:
            vap = "post_vap" if name == "post_mean" else f"{name}_vap"
            row[f"rmse_{name}"] = _rmse(group[name] - group["truth"])
            if vap in group:
                row[f"rmse_vap_{name}"] = _rmse(group[vap] - group["truth_vap"])
        for name in estimators:
            row[f"ratio_{name}"] = row[f"rmse_{name}"] / max(row["rmse_gls"], 1e-12) if len(group) else np.nan
        rows[size] = row
    return pd.DataFrame.from_dict(rows, orient="index").rename_axis("size")


def district_errors(frame: pd.DataFrame) -> pd.DataFrame:
    """RMSE of the districts' totals and voting-age shares by estimator, and the posterior's coverage.

    Examples
    --------
    >>> frame = pd.DataFrame({"truth": [100, 200], "truth_share": [0.8, 0.7], "post_mean": [101.0, 199.0],
    ...     "post_share_mean": [0.8, 0.7], "gls": [90.0, 210.0], "gls_share": [0.75, 0.7], "topdown": [100, 202],
    ...     "topdown_share": [0.8, 0.72], "post_cover": [1.0, 0.8], "post_share_closed": [1.0, 1.0]})
    >>> district_errors(frame).loc["posterior", ["rmse_total", "rmse_share"]].tolist()
    [1.0, 0.0]
    """
    rows = {}
    for name, total, share in (("posterior", "post_mean", "post_share_mean"), ("gls", "gls", "gls_share"),
                               ("topdown", "topdown", "topdown_share")):  # fmt: skip
        rows[name] = {"rmse_total": _rmse(frame[total] - frame["truth"]),
                      "rmse_share": _rmse(frame[share] - frame["truth_share"])}  # fmt: skip
    table = pd.DataFrame.from_dict(rows, orient="index")
    n = len(frame)
    for column, name in (("post_cover", "total"), ("post_share_closed", "share")):
        p = float(frame[column].mean())
        table.loc["posterior", f"coverage_{name}"] = p
        table.loc["posterior", f"se_{name}"] = float(np.sqrt(p * (1 - p) / n))
    return table
