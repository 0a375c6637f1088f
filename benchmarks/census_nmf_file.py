"""Writing, reading and fitting a Pennsylvania-size Noisy Measurement File: seconds, GB, peak memory.

What is measured
----------------
Three steps, each in its own Python process (so each peak resident memory, ``ru_maxrss``, is its own),
on files written to a temporary folder that is deleted at the end:

1. **write**: ``synthetic_pl94_state`` (all 67 counties down to blocks, seed 2020; ``--quick``: Adams
   and Lancaster), then ``write_nmf`` of the persons and the housing-unit files (``--workers``
   processes: their peak is ``RUSAGE_CHILDREN``): seconds, GB on disk, peak RSS.
2. **read**: ``read_nmf(root, 42)`` (every level, persons) and ``read_nmf(root, 42, counties=[c])`` for
   the smallest and the largest county written. Targets (the issue): the state in <= 3 min and <= 4 GiB,
   one county in <= 5 s.
3. **fit**: ``read_nmf`` of State..Block_Group with ``state_total`` the truth's total, then
   ``release(table=PERSON.coarsen({"votingage": None, "hispanic": None, "cenrace": "major"}))`` (28 cells
   per block group), ``gls_estimate`` and ``topdown_estimate`` on it (seconds, RMSE against the true coarse
   cells: a check that the pipeline fits what was written), and ``sample_cells`` (2 chains in 2 threads)
   twice after an untimed warm-up that loads the compiled kernels, with the same seed, ``--tune`` sweeps
   and ``--thin``: 1 draw, then ``--draws`` draws. Both tune alike, so the sampler's own clock (attrs
   ``sampling_seconds``) gives the seconds per sampling sweep (their difference) and per tuning sweep; the
   rest of a call is its set-up (the starting point, the rounded GLS estimate, and the result's
   assembly). Sampling sweeps cost more than tuning sweeps: after tuning, the cells that mixed slowest
   during its second half get ``revisit`` extra visits, and which cells those are depends on the tuning's
   length, so ``--tune`` defaults to the target's 200 (with 20, the state's sampling sweeps cost 2.8 times
   its tuning sweeps). The extrapolation to 2 chains x (``--target-tune`` 200 + ``--target-draws`` 1,250
   x ``--target-thin`` 4) sweeps is set-up + 200 tuning sweeps + 5,000 sampling sweeps, beside the issue's
   30-minute target, with the memory the kept draws would take. That target is stated for the full
   2,016-cell histogram at the block groups (about 20 million cells), whose release cannot be built at
   state scale (``NoisyMeasurementFile.release``'s matrix alone has levels x queries x leaves x cells
   entries); the coarse table's 28 cells per block group are what is fitted here. Last,
   ``aggregate`` of the second run's draws to the counties: seconds.

The machine is shared: the 1-minute load average is printed after each step.

Run with ``.venv/bin/python benchmarks/census_nmf_file.py [--quick] [--workers 2] [--draws 20] [--tune 200]
[--thin 4] [--seed 2020] [--tmp DIR]`` (the full state: about 15 minutes on 2 cores and 1.1 GB of
temporary disk; ``--quick``: under a minute).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

QUICK_COUNTIES = ["Adams", "Lancaster"]
FIT_LEVELS = ("State", "County", "Tract", "Block_Group")
COARSE = {"votingage": None, "hispanic": None, "cenrace": "major"}
GIB = 2**30
TARGETS = {"read_s": 180.0, "read_peak_gib": 4.0, "read_county_s": 5.0, "fit_target_min": 30.0}


def peaks() -> dict:
    """This process's peak RSS and its largest waited-for child's, GiB."""
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 / GIB
    children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024 / GIB
    return {"peak_gib": own, "children_peak_gib": children, "load": os.getloadavg()[0]}


def timed(call, *args, **kwargs):
    """(result, seconds) of one call."""
    start = time.perf_counter()
    out = call(*args, **kwargs)
    return out, time.perf_counter() - start


# -- the three steps, each run in a fresh process ------------------------------------------------------------


def write_step(root: str, truth: str, counties, seed: int, workers: int) -> dict:
    from ppdinfer.census import PERSON, pa_county_populations, synthetic_pl94_state, write_nmf

    state, synth_s = timed(synthetic_pl94_state, counties, random_seed=seed)
    person, person_s = timed(write_nmf, root, state, table="person", random_seed=seed + 1, workers=workers)
    _, unit_s = timed(write_nmf, root, state, table="unit", random_seed=seed + 2, workers=workers)
    geo = state.geography
    groups = geo.level("Block_Group")
    coarse = PERSON.coarsen(COARSE).collapse(state.aggregate("Block_Group").toarray())
    np.savez(truth, ids=geo.ids[groups].astype(str), cells=coarse)
    people = pa_county_populations()
    by_size = sorted(state.county_names, key=lambda code: int(people[state.county_names[code]]))
    row = {"synth_s": synth_s, "write_person_s": person_s, "write_unit_s": unit_s,
           "state_total": int(state.persons.sum()), "counties": geo.level("County").size,
           "tracts": geo.level("Tract").size, "block_groups": groups.size, "blocks": geo.n_leaves,
           "dpquery_rows": sum(level["dpquery_rows"] for level in person["levels"].values()),
           "smallest": by_size[0], "largest": by_size[-1],
           "names": {code: state.county_names[code] for code in (by_size[0], by_size[-1])}}  # fmt: skip
    return row | peaks()


def read_step(root: str, counties: list) -> dict:
    from ppdinfer.census import read_nmf

    nmf, read_s = timed(read_nmf, root, 42)
    summary = nmf.summary()
    row = {"read_s": read_s, "units": int(nmf.geography.n_units), "measurements": len(summary),
           "stored_gib": sum(nmf.measurements(lv, q)[1].nbytes for lv, q in summary[["level", "query"]].values) / GIB}  # fmt: skip
    row |= peaks()
    del nmf, summary
    for county in counties:
        _, row[f"read_{county}_s"] = timed(read_nmf, root, 42, counties=[county])
    return row


def fit_step(
    root: str, truth: str, state_total: int, draws: int, tune: int, thin: int, seed: int, target: tuple
) -> dict:
    from ppdinfer.census import PERSON, aggregate, gls_estimate, read_nmf, sample_cells, topdown_estimate

    _warm_up(sample_cells)
    nmf, read_s = timed(read_nmf, root, 42, levels=FIT_LEVELS, state_total=state_total)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        (census, mechanism, y), release_s = timed(nmf.release, table=PERSON.coarsen(COARSE), levels=FIT_LEVELS)
    row = {"read_bg_s": read_s, "release_s": release_s, "queries": census.n_queries, "cells": census.n_cells,
           "invariants": int(mechanism.invariant_values.size),
           "release_warnings": len(caught)}  # fmt: skip
    known = np.load(truth)
    ids = census.cell_coords()[0].astype(str)
    order = np.argsort(known["ids"])
    cells = known["cells"][order[np.searchsorted(known["ids"], ids, sorter=order)]]
    invariants = (mechanism.invariant_matrix, mechanism.invariant_values)
    gls, row["gls_s"] = timed(gls_estimate, census, y, mechanism.sigmas, invariants)
    topdown, row["topdown_s"] = timed(topdown_estimate, census, y, mechanism.sigmas, invariants)
    row["rmse_gls"] = float(np.sqrt(np.mean((gls.cell_estimate - cells) ** 2)))
    row["rmse_topdown"] = float(np.sqrt(np.mean((topdown - cells) ** 2)))
    fits = []
    for kept in (1, draws):
        tree, total_s = timed(sample_cells, census, mechanism, y, draws=kept, tune=tune, thin=thin, chains=2,
                              random_seed=seed, progressbar=False)  # fmt: skip
        fits.append((total_s, tree.attrs["sampling_seconds"]))
    (total1, sweeps1), (total2, sweeps2) = fits
    # the same seed: both runs tune alike; run 1 adds thin sampling sweeps, run 2 draws x thin
    row["setup_s"] = (total1 - sweeps1 + total2 - sweeps2) / 2
    row["draw_sweep_s"] = max(sweeps2 - sweeps1, 0.0) / ((draws - 1) * thin)
    row["tune_sweep_s"] = max(sweeps1 - thin * row["draw_sweep_s"], 0.0) / tune
    target_tune, target_draws, target_thin = target
    row["fit_target_min"] = (
        row["setup_s"] + target_tune * row["tune_sweep_s"] + target_draws * target_thin * row["draw_sweep_s"]
    ) / 60
    itemsize = np.dtype(tree.attrs["cells_dtype"]).itemsize
    row["target_draws_gib"] = 2 * target_draws * census.n_cells * itemsize / GIB
    counties = {code: [code] for code in census.geography.ids[census.geography.level("County")]}
    _, row["aggregate_s"] = timed(aggregate, tree, counties, census=census)
    return row | peaks()


def _warm_up(sample_cells) -> None:
    """Load the compiled sweep kernels (numba's cache) on a tiny problem, untimed."""
    from ppdinfer.census import Geography, TableSpec, census_queries
    from ppdinfer.mechanisms import NoisyMeasurements

    geo = Geography(["t", "b1", "b2"], [None, "t", "t"])
    q = census_queries(geo, TableSpec(("a", "b")), {"level1": ["total", "detailed"]})
    mechanism = NoisyMeasurements(q.matrix, 1.0, invariants=q.unit_invariants(["t"], [40]))
    y = mechanism.release([10, 5, 15, 10], random_seed=1)
    sample_cells(q, mechanism, y, draws=5, tune=5, random_seed=2, progressbar=False)


STEPS = {"write": write_step, "read": read_step, "fit": fit_step}


def child(step: str, **kwargs) -> dict:
    """Run one step in a fresh process; its row, or {'error': ...} with the tail of what it printed."""
    done = subprocess.run(
        [sys.executable, __file__, "--step", step, json.dumps(kwargs)], capture_output=True, text=True
    )
    if done.returncode != 0:
        return {"error": f"exit {done.returncode}: {(done.stderr or done.stdout)[-1500:]}"}
    return json.loads(done.stdout.strip().splitlines()[-1])


def disk_gb(folder: Path) -> float:
    return sum(path.stat().st_size for path in folder.rglob("*") if path.is_file()) / 1e9


# -- the table ---------------------------------------------------------------------------------------------


def report(write: dict, read: dict, fit: dict, gb: float, target: tuple) -> list:
    """(step, measure, value, target or ratio) rows."""
    rows = [("write", "state (synthetic_pl94_state) s", write.get("synth_s"), ""),
            ("write", "person file s", write.get("write_person_s"), ""),
            ("write", "unit file s", write.get("write_unit_s"), ""),
            ("write", "GB on disk", gb, ""),
            ("write", "peak RSS GiB (this process)", write.get("peak_gib"), ""),
            ("write", "peak RSS GiB (largest worker)", write.get("children_peak_gib"), ""),
            ("write", "load average", write.get("load"), ""),
            ("read", "read_nmf(root, 42) s", read.get("read_s"), _ratio(read.get("read_s"), "read_s")),
            ("read", "peak RSS GiB", read.get("peak_gib"), _ratio(read.get("peak_gib"), "read_peak_gib")),
            ("read", "values stored GiB", read.get("stored_gib"), ""),
            ("read", "units / (level, query) arrays", _pair(read.get("units"), read.get("measurements")), "")]  # fmt: skip
    for key in ("smallest", "largest"):
        code = write.get(key)
        seconds = read.get(f"read_{code}_s")
        name = write.get("names", {}).get(code)
        rows.append(("read", f"one county ({name}, {code}) s", seconds, _ratio(seconds, "read_county_s")))
    rows.append(("read", "load average", read.get("load"), ""))
    gls, topdown = fit.get("gls_s"), fit.get("topdown_s")
    tune, draws, thin = target
    rows += [("fit", "read State..Block_Group s", fit.get("read_bg_s"), ""),
             ("fit", "release (28 cells per block group) s", fit.get("release_s"), ""),
             ("fit", "queries / cells", _pair(fit.get("queries"), fit.get("cells")), ""),
             ("fit", "invariants / release warnings", _pair(fit.get("invariants"), fit.get("release_warnings")), ""),
             ("fit", "GLS s", gls, ""),
             ("fit", "TopDown s", topdown, f"{topdown / gls:.3g} x GLS" if gls and topdown else ""),
             ("fit", "RMSE GLS / TopDown (cells)", _pair(fit.get("rmse_gls"), fit.get("rmse_topdown")), ""),
             ("fit", "sampler set-up s (start + assembly)", fit.get("setup_s"), ""),
             ("fit", "sampler s per tuning sweep (2 chains)", fit.get("tune_sweep_s"), ""),
             ("fit", "sampler s per sampling sweep (2 chains)", fit.get("draw_sweep_s"),
              f"{fit['draw_sweep_s'] / gls:.3g} x GLS" if gls and fit.get("draw_sweep_s") else ""),
             ("fit", f"extrapolated min: tune {tune} + {draws} x thin {thin}", fit.get("fit_target_min"),
              _ratio(fit.get("fit_target_min"), "fit_target_min")),
             ("fit", "its kept draws GiB", fit.get("target_draws_gib"), ""),
             ("fit", "aggregate to counties s", fit.get("aggregate_s"), ""),
             ("fit", "peak RSS GiB", fit.get("peak_gib"), ""),
             ("fit", "load average", fit.get("load"), "")]  # fmt: skip
    return rows


def _ratio(value, key: str) -> str:
    if value is None:
        return ""
    limit = TARGETS[key]
    return f"{value / limit:.2f} of <= {limit:g} ({'met' if value <= limit else 'missed'})"


def _pair(a, b) -> str | None:
    return None if a is None or b is None else f"{_number(a)} / {_number(b)}"


def _number(value) -> str:
    return f"{value:,}" if isinstance(value, int) else f"{value:,.4g}"


def show(rows: list) -> None:
    width = max(len(measure) for _, measure, _, _ in rows)
    for step, measure, value, note in rows:
        text = "failed" if value is None else value if isinstance(value, str) else _number(value)
        print(f"{step:<6} {measure:<{width}}  {text:>16}  {note}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help=f"only {' and '.join(QUICK_COUNTIES)} counties")
    parser.add_argument("--workers", type=int, default=2, help="write_nmf's processes")
    parser.add_argument("--draws", type=int, default=20, help="draws of the second timed fit (at least 2)")
    parser.add_argument("--tune", type=int, default=200, help="tuning sweeps of both timed fits (at least 20)")
    parser.add_argument("--thin", type=int, default=4)
    parser.add_argument("--target-draws", type=int, default=1250)
    parser.add_argument("--target-tune", type=int, default=200)
    parser.add_argument("--target-thin", type=int, default=4)
    parser.add_argument("--seed", type=int, default=2020)
    parser.add_argument("--tmp", default=None, help="where the temporary folder goes (default the system's)")
    parser.add_argument("--step", choices=tuple(STEPS), help=argparse.SUPPRESS)
    parser.add_argument("arguments", nargs="?", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.step:
        print(json.dumps(STEPS[args.step](**json.loads(args.arguments))))
        return
    if args.draws < 2 or args.tune < 20 or args.thin < 1:
        parser.error("--draws must be at least 2, --tune at least 20 (the slow cells' revisits) and --thin at least 1")
    target = (args.target_tune, args.target_draws, args.target_thin)
    counties = QUICK_COUNTIES if args.quick else None
    print(f"{'quick: ' + ', '.join(QUICK_COUNTIES) if args.quick else 'Pennsylvania, 67 counties'}; "
          f"load average at start {os.getloadavg()[0]:.2f}, {os.cpu_count()} CPUs", flush=True)  # fmt: skip
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="census_nmf_file_", dir=args.tmp) as folder:
        root, truth = Path(folder) / "nmf", str(Path(folder) / "truth.npz")
        write = child("write", root=str(root), truth=truth, counties=counties, seed=args.seed, workers=args.workers)
        gb = disk_gb(root)
        read, fit = {}, {}
        if "error" not in write:
            read = child("read", root=str(root), counties=[write["smallest"], write["largest"]])
            fit = child("fit", root=str(root), truth=truth, state_total=write["state_total"], draws=args.draws,
                        tune=args.tune, thin=args.thin, seed=args.seed + 3, target=target)  # fmt: skip
    for step, row in (("write", write), ("read", read), ("fit", fit)):
        if "error" in row:
            print(f"{step} failed: {row['error']}")
    if "error" not in write:
        print(f"{write['counties']} counties, {write['tracts']:,} tracts, {write['block_groups']:,} block groups, "
              f"{write['blocks']:,} blocks, {write['state_total']:,} people, {write['dpquery_rows']:,} DPQuery rows")  # fmt: skip
    show(report(write, read, fit, gb, target))
    print(f"total {time.perf_counter() - started:.0f} s; load average at end {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
