"""sample_people down to the blocks of a county: the full 2,016-cell histogram, the blocks' housing units and
group-quarters facilities as the prior's exposure; seconds per sweep, cost per person, mixing, error.

What is measured
----------------
A synthetic state of ``--counties`` (``synthetic_pl94_state``, seed 2020, down to blocks) is written with
``write_nmf`` (persons and housing units) and read back by the case study's ``census_nmf.blocks.block_file``:
``grouped_release`` keeps every level to the Block level, ``file_exposure`` reads each block's housing units (the
unit file's ``total_con``) and facilities (the person file's ``hhgq_total_lb_con``), and the truth is put in the
file's block order and checked against the file's constraints. Then, with ``PersonMoves(**--moves)`` (a Python dict
literal; default the block case study's ``census_nmf.blocks.MOVES``, one line draw and three relocations per person:
Cameron County, 600 sweeps, smallest / median bulk ESS of the block totals 5 / 205 with the default 0.25 line draws,
11 / 185 with one, 94 / 398 with one relocation per person besides, 134 / 507 with three) and the
hyperparameters ``--hyperparameters`` (a dict literal; default the case study's ``census_nmf.blocks.HYPERPARAMETERS``):

1. ``sample_people`` (2 chains in 2 threads, recording voting age per block) with ``--tune`` tuning sweeps and
   ``--draws`` draws: seconds per sweep (the sampler's own clock over all sweeps, set-up excluded), moves per
   sweep, microseconds per person per sweep per chain; phi's and (where on) the zero-inflation v's mean, ESS, R-hat;
2. of the draws: the smallest and median bulk ESS and the largest R-hat of the block totals, and the share of
   blocks with R-hat <= 1.01, the smallest ESS by kind of block (facility-only, housing units and a facility,
   households only); the smallest ESS and largest R-hat of the composition's concentration alpha, of alpha times
   the households' share (the concentration a households-only block's composition reads), of the blocks'
   voting-age populations and of each county's population by hhgq level (which only turns change); the RMSE of
   the posterior-mean block totals against the truth, beside GLS's on the one-cell (total) table of the same file
   (``NoisyMeasurementFile.release``, no housing-unit information); the share of blocks whose total lies in its
   central 90 % interval, by block size (0, 1-9, 10-49, 50+ people, ``census_nmf.blocks.block_class``: one
   release, so a rough check, not the case study's replicate study).

``--fits plain,County`` fits the same file twice, the second time with ``Decomposition("County")``: the counties'
local sweeps between whole sweeps, on a local dask ``Client(processes=False)`` of ``--workers`` one-thread workers
(0: one after another). The seconds of each phase (file, GLS, each fit, its summaries) and the peak RSS after the
release and after each fit are printed to standard error as each ends, so a run stopped early keeps its figures.

Run with ``.venv/bin/python benchmarks/census_blocks.py [--counties Adams | all] [--tune 300] [--draws 300]
[--moves "{'lines': 1.0}"] [--fits plain] [--tmp DIR]``: Adams County (103,852 people, 2,661 blocks) takes about
15-20 minutes at the defaults on 2 cores, Cameron (4,547 people) a minute.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import json
import resource
import sys
import tempfile
import time
import warnings

import numpy as np


def peak_gib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 / 2**30


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--counties", default="Adams", help="comma-separated county names, or all")
    parser.add_argument("--tune", type=int, default=300)
    parser.add_argument("--draws", type=int, default=300)
    parser.add_argument(
        "--moves", default=None, help="PersonMoves settings, a dict literal (default: the case study's)"
    )
    parser.add_argument("--chains", type=int, default=2)
    parser.add_argument(
        "--fits", default="plain", help="comma-separated: plain, and/or a level (e.g. County) whose units move "
        "in parallel (Decomposition), each fitted to the same file"
    )  # fmt: skip
    parser.add_argument("--local-sweeps", type=int, default=1)
    parser.add_argument(
        "--hyperparameters",
        default=None,
        help="sample_people's hyperparameters, a dict literal (default: the case study's)",
    )
    parser.add_argument("--local-moves", default="{'lines': 1.0}", help="the units' local PersonMoves, a dict")
    parser.add_argument(
        "--workers", type=int, default=2, help="workers of a local dask Client(processes=False); 0: none"
    )
    parser.add_argument("--tmp", default=None)
    args = parser.parse_args()
    if args.draws < 4:  # the summaries' ESS and R-hat need four draws per chain: refuse before the fit, not after
        parser.error(f"--draws must be at least 4, got {args.draws}")

    from ppdinfer.case_studies.census_nmf.blocks import block_file
    from ppdinfer.census import PERSON, gls_estimate, synthetic_pl94_state

    counties = None if args.counties == "all" else args.counties.split(",")  # all: the 67 counties
    out: dict = {"counties": counties or "all"}
    total = PERSON.coarsen({"votingage": (((0, 1),), ("all",))})  # one cell: the block total
    start = time.perf_counter()
    state = synthetic_pl94_state(counties, random_seed=2020)
    people = int(state.persons.sum())
    # the case study's chain: person and unit files written and read back, the blocks' exposure, the truth in the
    # file's block order (checked against the file's constraints), GLS's release over the one-cell table
    blocks = block_file(state, tempfile.mkdtemp(dir=args.tmp), release_seed=1, table=total, workers=2)
    del state
    release, exposure = blocks.release, blocks.exposure
    out.update(file_s=time.perf_counter() - start, values=release.n_values, peak_after_release_gib=peak_gib())
    truth = blocks.truth[:, 0]
    out.update(people=people, blocks=release.geography.n_leaves, empty_blocks=int((truth == 0).sum()),
               blocks_without_housing=int(exposure.empty.sum()))  # fmt: skip
    start = time.perf_counter()
    gls = gls_estimate(blocks.census, blocks.y, blocks.mechanism.sigmas).cell_estimate.ravel()
    out.update(gls_s=time.perf_counter() - start, rmse_gls_totals=float(np.sqrt(((gls - truth) ** 2).mean())))
    progress(out)
    for fit in args.fits.split(","):
        out[fit] = fitted(blocks, truth, people, args, None if fit == "plain" else fit)
        progress(out)
    print(json.dumps(out, indent=1))


def progress(out: dict) -> None:
    """The figures so far, on standard error (a long run's partial results)."""
    print(json.dumps(out), file=sys.stderr, flush=True)


def fitted(blocks, truth: np.ndarray, people: int, args, level: str | None) -> dict:
    """One fit to the file (decomposed by ``level``'s units on a local dask cluster where given) and its figures."""
    from ppdinfer.case_studies.census_nmf.blocks import HYPERPARAMETERS, MOVES, block_class
    from ppdinfer.census import PERSON, Decomposition, PersonMoves, sample_people
    from ppdinfer.inference.diagnostics import ess_rhat

    out: dict = {}
    moves = MOVES if args.moves is None else PersonMoves(**ast.literal_eval(args.moves))
    hyperparameters = HYPERPARAMETERS if args.hyperparameters is None else ast.literal_eval(args.hyperparameters)
    record = PERSON.coarsen({"hhgq": None, "votingage": None})  # 8 x 2 cells, voting age the faster axis
    with contextlib.ExitStack() as stack:
        decompose = None
        if level is not None:
            executor = None
            if args.workers > 0:
                import distributed

                # no memory limit: the workers share this process, whose size is the table's, not theirs
                client = stack.enter_context(distributed.Client(processes=False, n_workers=args.workers,
                                                                threads_per_worker=1, memory_limit=0,
                                                                dashboard_address=None))  # fmt: skip
                executor = client.get_executor(pure=False)
            local = PersonMoves(**ast.literal_eval(args.local_moves))
            decompose = Decomposition(level, sweeps=args.local_sweeps, moves=local, executor=executor)
            out.update(decomposition=repr(decompose), workers=args.workers)
        stack.enter_context(warnings.catch_warnings())
        warnings.simplefilter("ignore")
        start = time.perf_counter()
        tree = sample_people(blocks.release, draws=args.draws, tune=args.tune, record=record, random_seed=3,
                             exposure=blocks.exposure, moves=moves, progressbar=False, chains=args.chains,
                             hyperparameters=dict(hyperparameters),
                             decompose=decompose)  # fmt: skip
        fit_s = time.perf_counter() - start
    sweeps = args.draws + args.tune
    per_sweep = tree.attrs["sampling_seconds"] / sweeps
    out.update(
        moves=repr(moves),
        hyperparameters=repr(hyperparameters),
        fit_s=fit_s,
        seconds_per_sweep=per_sweep,
        moves_per_sweep=tree.attrs["moves_per_sweep"],
        local_moves_per_sweep=tree.attrs.get("local_moves_per_sweep", 0),
        us_per_person_per_sweep_per_chain=per_sweep / people * 1e6,
        sampling_s=tree.attrs["sampling_seconds"],
        peak_gib=peak_gib(),
        residuals=tree.attrs["residuals"],
        residual_refusals=tree.attrs.get("residual_refusals", 0),
    )
    start = time.perf_counter()
    cells = tree["posterior"]["cells"].values  # chain, draw, block, hhgq x (under 18, 18+)
    alpha = tree["posterior"]["alpha"].values
    # what a households-only block's composition reads: alpha times the households' share, which stays identified
    # where alpha alone trades off with cells no block holds
    shares = tree["posterior"]["shares"]
    household = np.char.startswith(shares["cell"].values.astype(str), "hhgq=household")
    households = alpha * shares.values[..., household].sum(axis=-1)
    scalars = {name: tree["posterior"][name].values for name in ("phi", "vacant") if name in tree["posterior"]}
    del tree
    draws = cells.sum(axis=3).astype(float)
    ess, rhat = ess_rhat(draws)
    # each county's population of each GQ type (and in households): only turns move it
    county = blocks.release.ancestors[1]
    hhgq = cells.reshape(*cells.shape[:3], 8, 2).sum(axis=4)
    by_county = np.stack([hhgq[:, :, county == c].sum(axis=2) for c in np.unique(county)], axis=2)
    for name, value in scalars.items():
        e, r = ess_rhat(value[..., None].astype(float))
        out.update({f"{name}_mean": float(value.mean()), f"{name}_ess_bulk": float(e[0]), f"{name}_rhat": float(r[0])})
    for name, value in (
        ("alpha", alpha),
        ("alpha_households", households),
        ("voting_age", cells[..., 1::2].sum(axis=3)),
        ("county_hhgq", by_county),
    ):
        flat = value.reshape(*value.shape[:2], -1).astype(float)
        e, r = ess_rhat(flat)
        kept = np.isfinite(r) & (flat.std(axis=(0, 1)) > 0)  # a block that holds nobody is left out
        if kept.any():
            out.update({f"{name}_ess_bulk_min": float(e[kept].min()), f"{name}_rhat_max": float(r[kept].max())})
    varying = np.isfinite(rhat)
    exposure = blocks.exposure
    facility = exposure.facilities.sum(axis=1) > 0
    kinds = {"facility_only": facility & (exposure.units == 0), "with_facility": facility & (exposure.units > 0),
             "households_only": ~facility}  # fmt: skip
    out["ess_bulk_min_by_kind"] = {
        kind: float(ess[varying & held].min()) for kind, held in kinds.items() if (varying & held).any()
    }
    estimate = draws.mean(axis=(0, 1))
    lo, hi = np.quantile(draws, [0.05, 0.95], axis=(0, 1))
    covered = (lo <= truth) & (truth <= hi)
    size = block_class(truth)
    coverage = {c: [float(covered[size == c].mean()), int((size == c).sum())] for c in np.unique(size)}
    if varying.any():  # R-hat needs two chains
        out.update(
            ess_bulk_min=float(ess[varying].min()),
            ess_bulk_median=float(np.median(ess[varying])),
            rhat_max=float(rhat[varying].max()),
            share_rhat_below_1_01=float((rhat[varying] <= 1.01).mean()),
        )
    out.update(
        rmse_people=float(np.sqrt(((estimate - truth) ** 2).mean())),
        coverage_90_by_size=coverage,
        summaries_s=time.perf_counter() - start,
    )
    return out


if __name__ == "__main__":
    main()
