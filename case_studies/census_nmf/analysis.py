"""The three estimators on one release, their errors by level and cell size, and the tract estimand.

For each geographic level (County, Tract, Block_Group) every unit's 14 cells are estimated by

- the **posterior** of :func:`ppdinfer.census.sample_cells` (hierarchical prior, hyperparameters
  learned): its mean and equal-tailed 90 % interval (the 5 % and 95 % quantiles of the draws of the
  unit's summed cells);
- **GLS** (:func:`ppdinfer.census.gls_estimate`): the estimate and its normal 90 % interval
  (estimate +- 1.645 sd, the sd from the estimator's covariance);
- the **TopDown-like** estimate (:func:`ppdinfer.census.topdown_estimate`), which has no interval;
- with :func:`fit_full_histogram`, the posterior of the file's **full histogram** (2,016 cells per block
  group, :func:`ppdinfer.census.sample_people`), its draws recorded over the same cells.

The tract estimand: each tract's Hispanic share (Hispanic cells / total) and whether it is
majority-minority (non-Hispanic white below half of the total): the posterior probability of it, the
GLS normal probability P(w - N / 2 < 0) from the tract's covariance, and TopDown's 0/1 answer.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ...census import aggregate as sum_units
from ...census import gls_estimate, sample_cells, sample_people, topdown_estimate
from ...inference.diagnostics import ess_rhat
from .synthetic import CensusRelease, aggregate

__all__ = [
    "ESTIMATORS",
    "SIZE_CLASSES",
    "Z90",
    "cell_frame",
    "error_table",
    "estimand_cells",
    "fit_full_histogram",
    "fit_release",
    "random_districts",
    "randomized_coverage",
]

Z90 = 1.6448536269514722
ESTIMATORS = ("posterior", "gls", "topdown")
#: Cells are classed by their true count: small (< 50) and large (>= 50).
SIZE_CLASSES = ("< 50", ">= 50")
SUMMARY_LEVELS = ("County", "Tract", "Block_Group")


def estimand_cells(labels) -> tuple[np.ndarray, np.ndarray]:
    """Boolean masks over a table's cells: non-Hispanic white, and Hispanic (any race, any other axis).

    Reads the labels of ``TableSpec.hispanic_race()`` ('not_hispanic:white') and of the PL94 tables
    ('votingage=18+, hispanic=not, cenrace=white').

    Examples
    --------
    >>> white, hispanic = estimand_cells(["not_hispanic:white", "not_hispanic:black", "hispanic:white"])
    >>> white.tolist(), hispanic.tolist()
    ([True, False, False], [False, False, True])
    >>> estimand_cells(["hispanic=not, cenrace=white", "hispanic=hispanic, cenrace=white"])[1].tolist()
    [False, True]
    """
    fields = [dict(part.split("=", 1) for part in label.split(", ")) if "=" in label else None for label in labels]
    if all(f is None for f in fields):
        white = np.array([label == "not_hispanic:white" for label in labels])
        hispanic = np.array([label.startswith("hispanic:") for label in labels])
    else:
        white = np.array([f.get("hispanic") == "not" and f.get("cenrace") == "white" for f in fields])
        hispanic = np.array([f.get("hispanic") == "hispanic" for f in fields])
    if not white.any() or not hispanic.any():
        raise ValueError(f"the table's labels name no non-Hispanic white or no Hispanic cell: {list(labels)[:4]} ...")
    return white, hispanic


def randomized_coverage(draws: np.ndarray, truth: np.ndarray, level: float = 0.9) -> np.ndarray:
    """The probability that the randomized equal-tailed ``level`` interval of integer draws covers ``truth``.

    With F the draws' distribution function, the truth's randomized PIT is uniform on [F(t - 1), F(t)]
    (Czado, Gneiting & Held 2009) and the interval covers it when the PIT falls in [(1 - level) / 2,
    (1 + level) / 2]: this returns that chance, the share of [F(t - 1), F(t)] inside (a point mass
    F(t - 1) = F(t) is covered or not). Unlike the closed integer range between two quantiles, which
    holds more than ``level`` of a discrete posterior (all of it for a cell that is 0 in every draw),
    the randomized interval holds exactly ``level``, so a calibrated posterior covers ``level`` of
    the time.

    ``draws``: (n, ...) integer draws; ``truth``: the true values, shaped like one draw.

    Examples
    --------
    >>> import numpy as np
    >>> draws = np.repeat(np.arange(10), 10)[:, None]       # uniform on 0..9
    >>> randomized_coverage(draws, np.array([0])), randomized_coverage(draws, np.array([5]))
    (array([0.5]), array([1.]))
    """
    draws = np.asarray(draws)
    truth = np.asarray(truth)
    below = (draws < truth).mean(axis=0)
    at_most = (draws <= truth).mean(axis=0)
    low, high = (1 - level) / 2, (1 + level) / 2
    overlap = np.clip(np.minimum(at_most, high) - np.maximum(below, low), 0.0, None)
    width = at_most - below
    point = ((below >= low) & (below <= high)).astype(float)
    return np.where(width > 0, overlap / np.where(width > 0, width, 1.0), point)


def _posterior_summary(cells: np.ndarray, geo, level: str, truth: np.ndarray, chunk: int = 400):
    """Mean, 5 % and 95 % quantiles, randomized coverage of ``truth`` and rank-normalized R-hat
    (``ppdinfer.inference.diagnostics.ess_rhat``, ArviZ's) of the unit-summed draws, level by level."""
    chains, draws = cells.shape[:2]
    units = geo.level(level)
    out = {key: [] for key in ("mean", "lo", "hi", "mass", "cover", "rhat")}
    for start in range(0, units.size, chunk):
        part = units[start : start + chunk]
        lo_leaf, hi_leaf = geo.leaf_start[part[0]], geo.leaf_stop[part[-1]]
        block = cells[:, :, lo_leaf:hi_leaf].astype(np.int64)
        summed = np.add.reduceat(block, geo.leaf_start[part] - lo_leaf, axis=2)  # (chains, draws, units, K)
        flat = summed.reshape(chains * draws, *summed.shape[2:])
        out["mean"].append(flat.mean(axis=0))
        lo, hi = np.quantile(flat, [0.05, 0.95], axis=0)
        out["lo"].append(lo)
        out["hi"].append(hi)
        out["mass"].append(((flat >= lo) & (flat <= hi)).mean(axis=0))  # the draws' share inside [lo, hi]
        out["cover"].append(randomized_coverage(flat, truth[start : start + chunk]))
        out["rhat"].append(ess_rhat(summed)[1])
    return {key: np.concatenate(value) for key, value in out.items()}


def fit_full_histogram(
    setup: CensusRelease, *, draws: int, tune: int, chains: int = 2, random_seed=None, cores: int | None = None
) -> tuple[pd.DataFrame, dict]:
    """The posterior of ``setup.full`` (the file's full histogram) summarized over :data:`.synthetic.TABLE`'s cells.

    Returns a frame whose rows are those of :func:`fit_release`'s cell frame (level, unit, cell, truth) with
    the posterior's columns named ``full_mean``, ``full_lo``, ``full_hi``, ``full_mass``, ``full_cover`` and
    ``full_rhat``, and the sampler's seconds, acceptance rate and learned alpha, phi.

    Examples
    --------
    >>> import tempfile
    >>> from ppdinfer.case_studies.census_nmf.synthetic import file_release
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     setup, _ = file_release(["Cameron"], seed=0, folder=folder, full=True)
    >>> frame, info = fit_full_histogram(setup, draws=20, tune=20, random_seed=1)
    >>> units = sum(setup.geography.level(level).size for level in SUMMARY_LEVELS)
    >>> list(frame.columns[:5]), len(frame) == 28 * units
    (['level', 'unit', 'cell', 'truth', 'full_mean'], True)
    """
    import time

    from .synthetic import TABLE

    if setup.full is None:
        raise ValueError("setup has no full-histogram release (setup.full): build it with file_release(..., full=True)")
    start = time.perf_counter()
    tree = sample_people(
        setup.full, draws=draws, tune=tune, chains=chains, random_seed=random_seed, cores=cores, record=TABLE,
        progressbar=False,
    )  # fmt: skip
    info = {
        "full_s": time.perf_counter() - start,
        "full_accept": float(tree["sample_stats"]["accept"].mean()),
        "full_alpha": float(tree["posterior"]["alpha"].mean()),
        "full_phi": float(tree["posterior"]["phi"].mean()),
    }
    return _posterior_frame(tree["posterior"]["cells"].values, setup, "full"), info


def _posterior_frame(draws_cells: np.ndarray, setup: CensusRelease, prefix: str) -> pd.DataFrame:
    """One row per (level, unit, cell) of :data:`SUMMARY_LEVELS`: level, unit, cell, truth and the draws' summary
    (:func:`_posterior_summary`) in columns ``{prefix}_mean``, ``_lo``, ``_hi``, ``_mass``, ``_cover``, ``_rhat``."""
    geo = setup.geography
    frames = []
    for level in SUMMARY_LEVELS:
        truth = setup.level_truth(level)
        post = _posterior_summary(draws_cells, geo, level, truth)
        units, K = geo.level(level), truth.shape[1]
        frame = {"level": level, "unit": np.repeat(geo.ids[units].astype(str), K),
                 "cell": np.tile(np.arange(K), units.size), "truth": truth.ravel()}  # fmt: skip
        frame.update({f"{prefix}_{key}": value.ravel() for key, value in post.items()})
        frames.append(pd.DataFrame(frame))
    return pd.concat(frames, ignore_index=True)


def _majority_minority(
    cells: np.ndarray, geo, white, hispanic
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per tract, from draws: P(majority-minority), Hispanic share mean, 5 % and 95 % quantiles."""
    tracts = geo.level("Tract")
    summed = np.add.reduceat(cells.astype(np.int64), geo.leaf_start[tracts], axis=2)
    flat = summed.reshape(-1, *summed.shape[2:])
    total = np.maximum(flat.sum(axis=-1), 1)
    white_share = flat[..., white].sum(axis=-1) / total
    share = flat[..., hispanic].sum(axis=-1) / total
    return (white_share < 0.5).mean(axis=0), share.mean(axis=0), *np.quantile(share, [0.05, 0.95], axis=0)


def fit_release(
    setup: CensusRelease,
    y,
    *,
    draws: int,
    tune: int,
    thin: int = 1,
    chains: int = 2,
    random_seed=None,
    cores: int | None = None,
    districts: dict | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame, dict]:
    """The three estimators on release ``y``: a cell frame (every unit's cells at every level) and a tract frame.

    With ``districts`` (name -> unit ids, :func:`ppdinfer.census.aggregate`), ``info['districts']`` is a
    frame of every district's cells by the three estimators (posterior mean, 90 % interval, randomized
    coverage and R-hat; GLS and TopDown point estimates: GLS's covariance across units is not kept, so
    it has no district interval).

    Returns
    -------
    cells : DataFrame
        One row per (level, unit, cell): truth, post_mean, post_lo, post_hi, post_mass (the share of the
        draws inside [post_lo, post_hi]: at least 0.9, more for integer cells near 0), post_cover (the
        chance that the randomized 90 % interval covers the truth: :func:`randomized_coverage`), post_rhat, gls, gls_sd,
        gls_lo, gls_hi, topdown.
    tracts : DataFrame
        One row per tract: true Hispanic share and majority-minority indicator; the posterior's
        P(majority-minority) and share (mean, 5 %, 95 %); GLS's and TopDown's share and probability.
    info : dict
        Seconds of each estimator, the posterior's acceptance rate and learned alpha, phi.

    Examples
    --------
    >>> from ppdinfer.case_studies.census_nmf.synthetic import make_release
    >>> setup = make_release(["Fulton"], seed=0)
    >>> y = setup.mechanism.release(setup.truth.ravel(), random_seed=1)
    >>> cells, tracts, info = fit_release(setup, y, draws=50, tune=50, random_seed=2)
    >>> sorted(cells["level"].unique()), len(tracts)
    (['Block_Group', 'County', 'Tract'], 4)
    """
    import time

    geo, census = setup.geography, setup.census
    info = {}
    start = time.perf_counter()
    gls = gls_estimate(census, y, setup.sigmas, setup.invariants)
    info["gls_s"] = time.perf_counter() - start
    start = time.perf_counter()
    td = topdown_estimate(census, y, setup.sigmas, setup.invariants)
    info["topdown_s"] = time.perf_counter() - start
    start = time.perf_counter()
    tree = sample_cells(
        census, setup.mechanism, y, draws=draws, tune=tune, thin=thin, chains=chains,
        random_seed=random_seed, cores=cores, progressbar=False,
    )  # fmt: skip
    info["posterior_s"] = time.perf_counter() - start
    info["accept"] = float(tree["sample_stats"]["accept"].mean())
    info["alpha"] = float(tree["posterior"]["alpha"].mean())
    info["phi"] = float(tree["posterior"]["phi"].mean())
    if districts:
        info["districts"] = _district_frame(tree, districts, census, setup, gls, td)
    draws_cells = tree["posterior"]["cells"].values
    del tree
    cells = _posterior_frame(draws_cells, setup, "post")
    units = np.concatenate([geo.level(level) for level in SUMMARY_LEVELS])
    estimate = gls.unit_estimate[units]
    sd = np.sqrt(np.maximum(np.diagonal(gls.unit_covariance[units], axis1=1, axis2=2), 0.0))
    cells = cells.assign(
        gls=estimate.ravel(), gls_sd=sd.ravel(), gls_lo=(estimate - Z90 * sd).ravel(),
        gls_hi=(estimate + Z90 * sd).ravel(),
        topdown=np.concatenate([aggregate(geo, td, level).ravel() for level in SUMMARY_LEVELS]),
    )  # fmt: skip
    tracts = geo.level("Tract")
    truth = setup.level_truth("Tract")
    white, hispanic = estimand_cells(census.table.labels)
    p_post, share_mean, share_lo, share_hi = _majority_minority(draws_cells, geo, white, hispanic)
    estimate, covariance = gls.unit_estimate[tracts], gls.unit_covariance[tracts]
    contrast = -0.5 * np.ones(estimate.shape[1])
    contrast[white] += 1.0
    margin = estimate @ contrast
    margin_sd = np.sqrt(np.maximum(np.einsum("k,ukl,l->u", contrast, covariance, contrast), 1e-12))
    normal_cdf = np.vectorize(lambda v: 0.5 * math.erfc(-v / math.sqrt(2)))
    td_tract = aggregate(geo, td, "Tract")
    tract_frame = pd.DataFrame(
        {
            "unit": geo.ids[tracts].astype(str),
            "total": truth.sum(axis=1),
            "true_share": truth[:, hispanic].sum(axis=1) / np.maximum(truth.sum(axis=1), 1),
            "true_majority_minority": truth[:, white].sum(axis=1) < 0.5 * truth.sum(axis=1),
            "post_prob": p_post,
            "post_share": share_mean,
            "post_share_lo": share_lo,
            "post_share_hi": share_hi,
            "gls_prob": normal_cdf(-margin / margin_sd),
            "gls_share": estimate[:, hispanic].sum(axis=1) / np.maximum(estimate.sum(axis=1), 1),
            "topdown_prob": (td_tract[:, white].sum(axis=1) < 0.5 * td_tract.sum(axis=1)).astype(float),
            "topdown_share": td_tract[:, hispanic].sum(axis=1) / np.maximum(td_tract.sum(axis=1), 1),
        }
    )
    info["max_rhat"] = float(np.nanmax(cells["post_rhat"])) if cells["post_rhat"].notna().any() else float("nan")
    return cells, tract_frame, info


def _district_frame(tree, districts: dict, census, setup, gls, td) -> pd.DataFrame:
    """Every district's cells: truth, the posterior's summary of its summed draws, GLS's and TopDown's sums."""
    post = sum_units(tree, districts, census=census)["table"]  # (chain, draw, district, cell)
    names = list(post["district"].values)
    truth = sum_units(setup.truth, districts, census=census)["table"].values
    summed = post.transpose("chain", "draw", "district", "cell").values
    flat = summed.reshape(-1, *summed.shape[2:])
    lo, hi = np.quantile(flat, [0.05, 0.95], axis=0)
    K = summed.shape[-1]
    return pd.DataFrame(
        {
            "district": np.repeat(names, K),
            "cell": np.tile(np.arange(K), len(names)),
            "truth": truth.ravel(),
            "post_mean": flat.mean(axis=0).ravel(),
            "post_lo": lo.ravel(),
            "post_hi": hi.ravel(),
            "post_cover": randomized_coverage(flat, truth).ravel(),
            "post_rhat": ess_rhat(summed)[1].ravel(),
            "gls": sum_units(gls.cell_estimate, districts, census=census)["table"].values.ravel(),
            "topdown": sum_units(td, districts, census=census)["table"].values.ravel(),
        }
    )


def random_districts(geography, count: int, sizes: tuple, seed: int) -> dict:
    """``count`` districts, each a run of consecutive block groups (leaf order: across tract and county lines)
    of a random length in ``sizes`` (low, high), from a seeded stream.

    Examples
    --------
    >>> from ppdinfer.census import Geography
    >>> geo = Geography(["s", "t1", "t2", "a", "b", "c"], [None, "s", "s", "t1", "t1", "t2"])
    >>> sorted(random_districts(geo, 2, (2, 3), seed=0))
    ['district_00', 'district_01']
    """
    rng = np.random.default_rng(seed)
    leaves = geography.ids[geography.leaves]
    out = {}
    for d in range(count):
        length = int(rng.integers(sizes[0], min(sizes[1], leaves.size) + 1))
        start = int(rng.integers(0, leaves.size - length + 1))
        out[f"district_{d:02d}"] = list(leaves[start : start + length])
    return out


def cell_frame(cells: pd.DataFrame) -> pd.DataFrame:
    """The cell frame with its size class ('< 50' or '>= 50' by true count) added.

    Examples
    --------
    >>> cell_frame(pd.DataFrame({"truth": [3, 50]}))["size"].tolist()
    ['< 50', '>= 50']
    """
    return cells.assign(size=np.where(cells["truth"] < 50, SIZE_CLASSES[0], SIZE_CLASSES[1]))


def _all_sizes(cells):
    for level, group in cells.groupby("level", sort=False):
        yield (level, "all"), group


def error_table(cells: pd.DataFrame) -> pd.DataFrame:
    """RMSE and bias (estimate - truth) of each estimator by level and size class, with the cell counts.

    Examples
    --------
    >>> frame = pd.DataFrame({"level": "Tract", "truth": [10, 100], "post_mean": [11.0, 100.0],
    ...                       "gls": [9.0, 98.0], "topdown": [10, 103]})
    >>> error_table(frame).loc[("Tract", "< 50"), ["cells", "rmse_posterior", "bias_gls"]].tolist()
    [1.0, 1.0, -1.0]
    """
    cells = cell_frame(cells)
    columns = {"posterior": "post_mean", "gls": "gls", "topdown": "topdown"}
    rows = {}
    groups = [*cells.groupby(["level", "size"], sort=False), *((k, g) for k, g in _all_sizes(cells))]
    for (level, size), group in groups:
        row = {"cells": float(len(group))}
        for name, column in columns.items():
            error = group[column].to_numpy(float) - group["truth"].to_numpy(float)
            row[f"rmse_{name}"] = float(np.sqrt(np.mean(error**2)))
            row[f"bias_{name}"] = float(np.mean(error))
        rows[(level, size)] = row
    order = [(lv, sz) for lv in SUMMARY_LEVELS for sz in (*SIZE_CLASSES, "all") if (lv, sz) in rows]
    return pd.DataFrame.from_dict(rows, orient="index").loc[order].rename_axis(["level", "size"])
