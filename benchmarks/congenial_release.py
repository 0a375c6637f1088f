"""Throughput of the congenial mechanism's two release algorithms on Gong & Meng's Table 1.

What is measured
----------------
The 2 x 23 sex-by-age table of the case study ``case_studies/congenial_2x23`` with its invariants
(grand total 256, female total 130, voting-age total 213, every cell >= 0) and double geometric noise at
epsilon = 0.5 per cell:

1. MIS (Algorithm 1; free cells all but I^c = {1, 23, 46}, proposal eps~ = 0.6, chains started at s*):
   iterations per second.

   - ``ppdinfer``: ``Congenial.release(method="mis")``, chains of ``--chain`` iterations;
   - ``numpy``: the algorithm written out below with plain NumPy: the paper's inverse-CDF double geometric
     sampler for the proposals (Appendix B), the solved cells by the integer inverse of A[:, I^c],
     the weights vectorized over a chain, the accept/reject steps in a Python loop.

2. Exact rejection (draw s* + noise until the draw conforms; c(x) is about 1e-5 here): proposals per second.

   - ``ppdinfer``: ``Congenial.release(method="rejection")``, one release after another; only the proposals
     up to each accepted one count (the rest of its block is drawn and wasted, on ppdinfer's time);
   - ``numpy``: blocks of 100,000 proposals by the same inverse-CDF sampler, tested with A y = a, y >= 0.
     That sampler is float arithmetic: neither exact nor timing-safe, so it is not quite the same algorithm;
   - ``numpy exact``: blocks of 10,000 proposals whose noise comes from ppdinfer's exact timing-safe sampler
     written in plain NumPy (the same random words, threshold tables and comparisons, by broadcasting).

The implementations take turns in short rounds (``--rounds``) so that the load of a shared machine falls
on all alike, after a warm-up. The acceptance rates are printed beside the throughputs: the MIS rates of
the two implementations estimate the same number (their chains are sticky, so expect differences of a few
tenths of a percent), and the conforming fraction of the rejection proposals estimates c(x). The issue's
target is ppdinfer at least 3x each baseline; the last lines say which targets are met.

Run with ``.venv/bin/python benchmarks/congenial_release.py [--seconds 5]``.
"""

from __future__ import annotations

import argparse
import math
import time
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from ppdinfer.case_studies.congenial_2x23.data import CONFIDENTIAL, SOLVED_CELLS, free_cells, invariant_matrix
from ppdinfer.case_studies.congenial_2x23.table1 import (
    EPSILON,
    PAPER_PROPOSAL_EPSILON,
    PROPOSALS_PER_DRAW,
    congenial_mechanism,
    mis_release,
)
from ppdinfer.mechanisms.exact_integer import RandomBits, _exact_laplace_value, _laplace_tables

NUMPY_BLOCK = 100_000
#: The exact sampler in NumPy broadcasts a (values, thresholds) comparison: smaller blocks bound its memory.
NUMPY_EXACT_BLOCK = 10_000
TARGET = 3.0


@dataclass
class Measurement:
    name: str
    steps: int  # MIS iterations or rejection proposals
    accepted: int
    seconds: float

    @property
    def per_second(self) -> float:
        return self.steps / self.seconds

    @property
    def rate(self) -> float:
        return self.accepted / self.steps


# -- plain NumPy ------------------------------------------------------------------------------


def double_geometric(epsilon: float, size, rng: np.random.Generator) -> np.ndarray:
    """The paper's inverse-CDF sampler: v ~ U(0, 1); ceil((-log v - log(1 + a)) / log a) if v <= 1 / (1 + a),
    else floor((log(1 - v) + log(1 + a)) / log a), with a = exp(-epsilon)."""
    a = math.exp(-epsilon)
    v = rng.random(size)
    low = v <= 1 / (1 + a)
    with np.errstate(divide="ignore"):
        left = np.ceil((-np.log(v) - math.log1p(a)) / -epsilon)
        right = np.floor((np.log1p(-v) + math.log1p(a)) / -epsilon)
    return np.where(low, left, right).astype(np.int64)


def numpy_mis_chain(x: np.ndarray, iterations: int, rng: np.random.Generator) -> int:
    """One chain of Algorithm 1 from s* = x; the number of accepted moves."""
    A = invariant_matrix()
    a = A @ x
    free, solved = free_cells(), np.array(SOLVED_CELLS)
    solve = np.rint(np.linalg.inv(A[:, solved])).astype(np.int64)
    steps = double_geometric(PAPER_PROPOSAL_EPSILON, (iterations, free.size), rng)
    proposals = np.empty((iterations, x.size), dtype=np.int64)
    proposals[:, free] = x[free] + steps
    proposals[:, solved] = (a - proposals[:, free] @ A[:, free].T) @ solve.T
    log_w = -EPSILON * np.abs(proposals - x).sum(axis=1) + PAPER_PROPOSAL_EPSILON * np.abs(steps).sum(axis=1)
    log_w[proposals.min(axis=1) < 0] = -np.inf
    log_u = np.log(rng.random(iterations))
    current, accepted = 0.0, 0
    for t in range(iterations):
        if log_u[t] <= log_w[t] - current:
            current = log_w[t]
            accepted += 1
    return accepted


def exact_discrete_laplace(epsilon: float, size: int, rng: np.random.Generator) -> np.ndarray:
    """ppdinfer's exact timing-safe discrete Laplace in plain NumPy: one random word per group of the
    threshold tables, each word compared with every threshold of its group (by broadcasting); a value with
    an undecided comparison or in the tail (probability below 2^-56) is finished by the library."""
    tables = _laplace_tables(Fraction(epsilon))  # the rate epsilon / sensitivity, sensitivity 1
    words = rng.bit_generator.random_raw((size, len(tables.lengths)))
    counts = []
    unsure = np.zeros(size, dtype=bool)
    for group, length in enumerate(tables.lengths):
        u = words[:, group] >> np.uint64(1) if group == 0 else words[:, group]
        counts.append((u[:, None] > tables.high[group, :length]).sum(axis=1))
        unsure |= (u[:, None] >= tables.low[group, :length]).sum(axis=1) != counts[-1]
    unsure |= counts[-1] == tables.lengths[-1]
    magnitude = sum(count << shift for count, shift in zip(counts, tables.shifts))
    values = np.where(counts[0] > 0, magnitude, 0) * (1 - 2 * (words[:, 0] & np.uint64(1)).astype(np.int64))
    for i in np.flatnonzero(unsure):
        values[i] = _exact_laplace_value(tables, words[i], RandomBits(rng))
    return values


def numpy_rejection_block(x: np.ndarray, size: int, rng: np.random.Generator, exact: bool = False) -> int:
    """Conforming draws among ``size`` proposals s* + noise (inverse-CDF noise, or the exact sampler)."""
    A = invariant_matrix()
    if exact:
        noise = exact_discrete_laplace(EPSILON, size * x.size, rng).reshape(size, x.size)
    else:
        noise = double_geometric(EPSILON, (size, x.size), rng)
    y = x + noise
    return int(np.count_nonzero(np.all(y @ A.T == A @ x, axis=1) & np.all(y >= 0, axis=1)))


# -- the runs ---------------------------------------------------------------------------------


@dataclass
class Run:
    """One implementation's running totals over its rounds; ``step(rng)`` does one unit of work and
    returns (steps, accepted)."""

    name: str
    step: object
    steps: int = 0
    accepted: int = 0
    seconds: float = 0.0

    def round(self, seconds: float, rng: np.random.Generator) -> None:
        start = time.perf_counter()
        while time.perf_counter() - start < seconds:
            steps, accepted = self.step(rng)
            self.steps += steps
            self.accepted += accepted
        self.seconds += time.perf_counter() - start

    def measurement(self) -> Measurement:
        return Measurement(self.name, self.steps, self.accepted, self.seconds)


def mis_runs(chain: int) -> list[Run]:
    mechanism = congenial_mechanism(CONFIDENTIAL)
    x = CONFIDENTIAL.reshape(-1)

    def library(rng):
        mis_release(mechanism, CONFIDENTIAL, rng, burn_in=chain - 1)
        return chain, round(mechanism.last_acceptance_rate * chain)

    return [Run("ppdinfer", library), Run("numpy", lambda rng: (chain, numpy_mis_chain(x, chain, rng)))]


def rejection_runs() -> list[Run]:
    mechanism = congenial_mechanism(CONFIDENTIAL)
    x = CONFIDENTIAL.reshape(-1)

    def library(rng):
        mechanism.release(CONFIDENTIAL, random_seed=rng, method="rejection", max_proposals=PROPOSALS_PER_DRAW)
        return round(1 / mechanism.last_acceptance_rate), 1

    return [
        Run("ppdinfer", library),
        Run("numpy", lambda rng: (NUMPY_BLOCK, numpy_rejection_block(x, NUMPY_BLOCK, rng))),
        Run("numpy exact", lambda rng: (NUMPY_EXACT_BLOCK, numpy_rejection_block(x, NUMPY_EXACT_BLOCK, rng, True))),
    ]


def interleaved(runs: list[Run], seconds: float, rounds: int, seed: int) -> list[Measurement]:
    """``rounds`` turns of ``seconds / rounds`` each, the implementations in turn (each its own stream)."""
    rngs = [np.random.default_rng([seed, i]) for i in range(len(runs))]
    for _ in range(rounds):
        for run, rng in zip(runs, rngs):
            run.round(seconds / rounds, rng)
    return [run.measurement() for run in runs]


def format_table(title: str, unit: str, results: list[Measurement]) -> str:
    baseline = next(m for m in results if m.name == "numpy")
    rows = [(title, f"{unit}/s", "accepted", "acceptance rate", "vs numpy")]
    for m in results:
        rows.append(
            (
                m.name,
                f"{m.per_second:,.0f}",
                f"{m.accepted:,} of {m.steps:,}",
                f"{m.rate:.3g}",
                f"{m.per_second / baseline.per_second:.2f}x",
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = []
    for j, row in enumerate(rows):
        lines.append("  ".join([row[0].ljust(widths[0])] + [c.rjust(w) for c, w in zip(row[1:], widths[1:])]))
        if j == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


def verdict(label: str, library: Measurement, baseline: Measurement) -> str:
    ratio = library.per_second / baseline.per_second
    return f"{label}: {ratio:.2f}x ({TARGET:g}x target {'met' if ratio >= TARGET else 'missed'})"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=5.0, help="wall-clock budget per implementation (default 5)")
    parser.add_argument("--rounds", type=int, default=5, help="turns the budget is split into (default 5)")
    parser.add_argument("--chain", type=int, default=100_000, help="MIS iterations per chain (default 100000)")
    parser.add_argument("--seed", type=int, default=20200801, help="random seed (default 20200801)")
    args = parser.parse_args(argv)

    print(
        f"Table 1 (2 x 23, d = 46), double geometric eps = {EPSILON:g}, MIS eps~ = {PAPER_PROPOSAL_EPSILON:g}, "
        f"chains of {args.chain:,}; {args.seconds:g} s per implementation in {args.rounds} rounds"
    )
    interleaved(mis_runs(1_000) + rejection_runs(), 0.6, 1, 0)  # warm-up: compilation, tables, caches
    mis = interleaved(mis_runs(args.chain), args.seconds, args.rounds, args.seed)
    rejection = interleaved(rejection_runs(), args.seconds, args.rounds, args.seed)
    print()
    print(format_table("MIS", "iterations", mis))
    print()
    print(format_table("rejection", "proposals", rejection))
    print()
    print("numpy: the inverse-CDF double geometric in float64 (not exact, not timing-safe); MIS proposals are")
    print("float samplers in both implementations. numpy exact: ppdinfer's exact timing-safe sampler in NumPy.")
    print(verdict("MIS, ppdinfer / numpy", *mis))
    print(verdict("rejection, ppdinfer / numpy (inexact noise)", rejection[0], rejection[1]))
    print(verdict("rejection, ppdinfer / numpy exact (same sampler)", rejection[0], rejection[2]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
