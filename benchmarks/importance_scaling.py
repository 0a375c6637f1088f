"""Scaling of importance_sample from 1 core to 2, and the share of its serial tail.

What is measured
----------------
The beta-binomial benchmark of ``rejection_throughput.py`` (n = 1000 records, discrete Laplace
noise at epsilon = 1, prior Beta(1, 1), y = 400): :func:`ppdinfer.importance_sample` with 10^6
proposals, on 1 core and on 2 (``cores=1`` and ``cores=2``: the same weights and draws).

The serial tail is the time of a call spent outside the parallel phases (the time spent inside
``BlockPool.map``, measured by a subclass that times it): before this version, normalizing the
log weights, the PSIS check, the ESS, the stratified resample and the gathering of its draws ran
on one thread over all 10^6 proposals, about a quarter of a one-core call; now each block returns
its largest log weight, its weights' sum and sum of squares and its largest weights, and a second
pass by blocks normalizes, smooths and resamples, leaving the combination of the blocks' summaries,
the PSIS fit on the tail and the DataTree to one thread. Two more things kept 2 cores from
scaling, and are gone: the arrays the threads fill were in transparent huge pages, whose first
touch costs milliseconds on this project's virtual machines and serializes the threads (now
small pages: ``parallel.empty_for_threads``), and the second pass made a dozen short NumPy calls
per block, each handing the GIL between the threads (now one compiled call per block).

Baseline, in the same run: the previous implementation, copied below (``previous_importance_sample``:
the same blocks of proposals, then the serial tail as it was), timed the same way. Each round runs
the four configurations back to back (previous and current, 1 and 2 cores), so that the load of a
shared machine, which drifts over seconds, weighs on all four alike; the script reports medians.
For reference it prints the same 1 -> 2 speed-up of the random numbers alone (the machine's
ceiling for any sampler built on NumPy's generators, from ``rejection_throughput.py``).

Target: 2 cores at least 1.7x the speed of 1 core.

Run with ``.venv/bin/python benchmarks/importance_scaling.py [--rounds 7]`` (about 30 s on an idle
machine with 2 cores).
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
import xarray as xr
from rejection_throughput import EPSILON, N_RECORDS, Y_OBSERVED, make_setup, rng_block_rate
from scipy import special

import ppdinfer as pp
from ppdinfer.inference import importance
from ppdinfer.inference.model import draw_theta
from ppdinfer.inference.parallel import BlockPool
from ppdinfer.inference.rejection import BLOCK_SIZE
from ppdinfer.inference.results import assemble, posterior_dataset
from ppdinfer.kernels import sorted_search
from ppdinfer.models import beta_binomial
from ppdinfer.rng import block_generator, root_seed

DRAWS = 1_000_000
TARGET = 1.7


class TimedBlockPool(BlockPool):
    """A BlockPool that adds the wall time of each ``map`` (from its call to its last chunk) to ``parallel``."""

    parallel = 0.0

    def map(self, function, chunks):
        start = time.perf_counter()
        yield from super().map(function, chunks)
        TimedBlockPool.parallel += time.perf_counter() - start


# -- the previous implementation (before the blocks summarized their weights) -----------------


def _previous_block(model, y, z, root, draws, block):
    rng = block_generator(root, block)
    theta = draw_theta(model.prior, min(BLOCK_SIZE, draws - block * BLOCK_SIZE), rng, z)
    x = model.simulate_x(theta, z, rng)
    return theta, x, model.loglik(y, x, z)


def _previous_pareto_smooth(log_w):
    from arviz_stats.base import array_stats

    tail = int(np.ceil(min(0.2 * log_w.size, 3 * np.sqrt(log_w.size))))
    if np.unique(np.partition(log_w, log_w.size - tail)[-tail:]).size < tail / 2:
        return log_w, float("nan")
    smoothed, k = array_stats.psislw(-log_w)
    return smoothed - special.logsumexp(smoothed), float(k)


def _previous_dataset(model, theta, x, theta_shape, x_shape):
    # the draw coordinate was an array of integers then (now a range)
    dataset = posterior_dataset(model, theta, x, theta_shape, x_shape)
    return dataset.assign_coords(draw=np.arange(dataset.sizes["draw"]))


def previous_importance_sample(model, y, draws: int, random_seed: int, cores: int) -> xr.DataTree:
    """importance_sample as it was: the blocks return theta, x and log weights, the rest runs on one thread."""
    root = root_seed(random_seed)
    labels = model.labels(y, None)
    y, z, theta_shape, x_shape = model.prepare(y, None)
    n_blocks = -(-draws // BLOCK_SIZE)
    with TimedBlockPool(cores) as pool:
        chunks = pool.map(
            lambda block: _previous_block(model, y, z, root, draws, block), pool.even_chunks(range(n_blocks))
        )
        theta, x, log_w = (np.concatenate(part) for part in zip(*(parts for _, parts in chunks)))
    top = log_w.max()
    weights = np.exp(log_w - top)
    total = weights.sum()
    log_w, weights = log_w - (top + np.log(total)), weights / total
    psis_log_w, pareto_k = _previous_pareto_smooth(log_w)
    ess = float(1 / np.dot(weights, weights))
    proposals = _previous_dataset(model, theta, x, theta_shape, x_shape)
    cumulative = np.cumsum(weights)
    rng = block_generator(root, n_blocks)
    index = sorted_search(cumulative, (np.arange(draws) + rng.random(draws)) / draws * cumulative[-1])
    posterior = _previous_dataset(model, theta[index], x[index], theta_shape, x_shape)
    posterior.attrs.update(resampling="stratified", proposals=draws, ess=ess)
    proposals = proposals.assign(
        log_weight=(["chain", "draw"], log_w.reshape(1, -1)),
        psis_log_weight=(["chain", "draw"], psis_log_w.reshape(1, -1)),
    )
    stats = xr.Dataset({"ess": ((), ess), "pareto_k": ((), pareto_k)})
    return assemble(model, y, z, posterior, stats, attrs={"sampler": "importance"}, labels=labels, proposal=proposals)


def current_importance_sample(model, y, draws: int, random_seed: int, cores: int) -> xr.DataTree:
    """pp.importance_sample, its BlockPools timed."""
    importance.BlockPool = TimedBlockPool
    try:
        return pp.importance_sample(model, y, draws=draws, random_seed=random_seed, cores=cores)
    finally:
        importance.BlockPool = BlockPool


def timed(sample, model, cores: int, seed: int) -> tuple[float, float, xr.DataTree]:
    """Seconds of one call with ``DRAWS`` proposals, the share of them outside the parallel phases, and the result."""
    TimedBlockPool.parallel = 0.0
    start = time.perf_counter()
    result = sample(model, Y_OBSERVED, DRAWS, seed, cores)
    seconds = time.perf_counter() - start
    return seconds, 1 - TimedBlockPool.parallel / seconds, result


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=7, help="rounds of the four configurations (default 7)")
    parser.add_argument("--cores", type=int, default=2, help="the cores compared with one (default 2)")
    parser.add_argument("--seed", type=int, default=20240611, help="random seed (default 20240611)")
    args = parser.parse_args(argv)

    warnings.simplefilter("ignore", pp.ImportanceWarning)  # this y's ESS is small on purpose: weights matter
    model = beta_binomial.model(n=N_RECORDS, epsilon=EPSILON)
    versions = {"previous version": previous_importance_sample, "this version": current_importance_sample}
    for sample in versions.values():  # compile and import everything outside the timings
        for cores in (1, args.cores):
            sample(model, Y_OBSERVED, 20 * BLOCK_SIZE, 0, cores)
    runs = {(name, cores): [] for name in versions for cores in (1, args.cores)}
    ceiling = []
    for _ in range(args.rounds):
        for (name, cores), times in runs.items():
            times.append(timed(versions[name], model, cores, args.seed)[:2])
        s = make_setup(model, Y_OBSERVED)
        ceiling.append(rng_block_rate(s, args.cores, seconds=0.5) / rng_block_rate(s, 1, seconds=0.5))
    _, _, one = timed(current_importance_sample, model, 1, args.seed)
    _, _, several = timed(current_importance_sample, model, args.cores, args.seed)
    identical = all(
        np.array_equal(one[group][name].values, several[group][name].values)
        for group, name in [("proposal", "log_weight"), ("proposal", "psis_log_weight"), ("posterior", "x")]
    )

    print(
        f"importance_sample, {DRAWS:,} proposals of the beta-binomial benchmark (n = {N_RECORDS}, epsilon = "
        f"{EPSILON:g}, y = {Y_OBSERVED}): medians of {args.rounds} rounds"
    )
    header = (
        "",
        "1 core",
        f"{args.cores} cores",
        "speed-up",
        "serial tail, 1 core",
        f"serial tail, {args.cores} cores",
    )
    rows, speedups, serial = [header], {}, {}
    for name in versions:
        (t1, s1), (t2, s2) = (np.median(np.array(runs[name, cores]), axis=0) for cores in (1, args.cores))
        speedups[name] = float(np.median([a[0] / b[0] for a, b in zip(runs[name, 1], runs[name, args.cores])]))
        serial[name] = s1
        rows.append((name, f"{t1:.3f} s", f"{t2:.3f} s", f"{speedups[name]:.2f}x", f"{s1:.0%}", f"{s2:.0%}"))
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    for row in rows:
        print("  ".join([row[0].ljust(widths[0])] + [cell.rjust(w) for cell, w in zip(row[1:], widths[1:])]))
    print(
        f"the random numbers alone on {args.cores} threads: {np.median(ceiling):.2f}x the speed of 1 "
        f"({min(ceiling):.2f}x to {max(ceiling):.2f}x), this machine's ceiling"
    )
    c = float(np.median(ceiling))
    print(
        "  at that ceiling c, a serial share s of one core's call allows at most 1 / (s + (1 - s) / c): "
        + ", ".join(f"{name} {1 / (s + (1 - s) / c):.2f}x" for name, s in serial.items())
        + f"; on a machine whose {args.cores} threads give {args.cores}x: "
        + ", ".join(f"{name} {1 / (s + (1 - s) / args.cores):.2f}x" for name, s in serial.items())
    )
    scaling = speedups["this version"]
    print(
        f"importance_sample on {args.cores} cores: {scaling:.2f}x the speed of 1 core (median of the rounds' "
        f"ratios; target >= {TARGET}x): {'met' if scaling >= TARGET else 'MISSED'}"
    )
    print(f"the same weights and draws on 1 and {args.cores} cores: {identical}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
