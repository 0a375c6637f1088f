"""sample_people on a state's block groups with the full 2,016-cell histogram: set-up, seconds per sweep, memory,
mixing.

What is measured
----------------
A synthetic state (``synthetic_pl94_state`` of ``--counties``, default all 67 of Pennsylvania, State..Block_Group,
seed 2020) is written with ``write_nmf`` and read back with ``read_nmf`` (``state_total`` the truth's), then:

1. ``grouped_release`` of the full histogram (no query matrix): seconds, values held, peak RSS;
2. ``sample_people`` (2 chains in 2 threads, the default ``PersonMoves``, recording voting age x Hispanic origin
   x 7 race groups), twice with one seed: ``--tune`` + 1 draw, then ``--tune`` + ``--draws`` draws; the difference
   of the sampler's own clocks (attrs ``sampling_seconds``) over the extra draws is the seconds per sweep, the
   rest the set-up (start, Fenwick trees, residuals). Moves per sweep and the cost per move follow, and the
   sweeps the 30-minute target allows;
3. of the second run's draws: the smallest and median bulk ESS and the largest R-hat of the block groups' 28-cell
   tables, and their RMSE against the truth, beside GLS's on the 28-cell release (``NoisyMeasurementFile.release``
   of the coarse table, whose query matrix a state's block groups do allow).

The peak RSS is the process's (``ru_maxrss``). Run with ``.venv/bin/python benchmarks/census_people.py [--counties
Adams,Lancaster] [--tune 20] [--draws 20] [--tmp DIR]``; the whole state takes about 40 minutes on 2 cores (most of
it in sweeps of about 40 s), one or two counties a minute.
"""

from __future__ import annotations

import argparse
import json
import resource
import tempfile
import time
import warnings

import numpy as np

COARSE = {"votingage": None, "hispanic": None, "cenrace": "major"}
LEVELS = ("State", "County", "Tract", "Block_Group")


def peak_gib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 / 2**30


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--counties", default=None, help="comma-separated county names (default: all 67)")
    parser.add_argument("--tune", type=int, default=20)
    parser.add_argument("--draws", type=int, default=20)
    parser.add_argument("--tmp", default=None)
    args = parser.parse_args()
    import arviz as az

    from ppdinfer.census import (
        PERSON,
        gls_estimate,
        grouped_release,
        pa_county_populations,
        read_nmf,
        sample_people,
        synthetic_pl94_state,
        write_nmf,
    )

    counties = list(pa_county_populations().index) if args.counties is None else args.counties.split(",")
    out: dict = {"counties": len(counties)}
    start = time.perf_counter()
    state = synthetic_pl94_state(counties, random_seed=2020, levels=LEVELS)
    root = tempfile.mkdtemp(dir=args.tmp)
    write_nmf(root, state, random_seed=1, workers=2)
    out["write_s"] = time.perf_counter() - start
    people = int(state.persons.sum())
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        nmf = read_nmf(root, 42, state_total=people)
    out["read_s"] = time.perf_counter() - start
    start = time.perf_counter()
    release = grouped_release(nmf)
    out.update(grouped_s=time.perf_counter() - start, values=release.n_values, peak_after_release_gib=peak_gib())
    geo = release.geography
    out.update(people=people, block_groups=geo.n_leaves, cells=geo.n_leaves * release.table.n_cells)
    coarse = PERSON.coarsen(COARSE)
    runs = []
    for draws in (1, args.draws):
        tree = sample_people(release, draws=draws, tune=args.tune, record=coarse, random_seed=3, progressbar=False)
        runs.append(tree.attrs["sampling_seconds"])
    per_sweep = (runs[1] - runs[0]) / (args.draws - 1)
    moves = tree.attrs["moves_per_sweep"]
    out.update(
        seconds_per_sweep=per_sweep,
        setup_and_tuning_s=runs[0] - per_sweep,
        moves_per_sweep=moves,
        ns_per_move_per_chain=per_sweep / moves * 1e9,
        sweeps_in_30_min=1800 / per_sweep,
        peak_gib=peak_gib(),
        accept=float(tree["sample_stats"]["accept"].mean()),
    )
    cells = tree["posterior"]["cells"].astype(float)
    diag = tree["posterior"].to_dataset()[["cells"]].astype(float)
    ess, rhat = az.ess(diag, method="bulk")["cells"], az.rhat(diag)["cells"]
    level = state.geography.level("Block_Group")
    rows = np.searchsorted(level, [state.geography.index(u) for u in geo.ids[geo.leaves]])
    fine = state.aggregate("Block_Group")
    truth = coarse.collapse(np.asarray(fine.todense() if hasattr(fine, "todense") else fine)[rows])
    estimate = cells.mean(("chain", "draw")).values
    census, mechanism, y = nmf.release(coarse)
    gls = gls_estimate(census, y, mechanism.sigmas).cell_estimate.reshape(truth.shape)
    out.update(
        ess_bulk_min=float(ess.min()),
        ess_bulk_median=float(ess.median()),
        rhat_max=float(rhat.max()),
        rmse_people=float(np.sqrt(((estimate - truth) ** 2).mean())),
        rmse_gls=float(np.sqrt(((gls - truth) ** 2).mean())),
    )
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
