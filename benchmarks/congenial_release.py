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

   - ``ppdinfer``: ``Congenial.release(method="rejection")``, one release after another;
   - ``numpy``: blocks of 100,000 proposals by the same inverse-CDF sampler, tested with A y = a, y >= 0.

Each runs for the same wall-clock budget after a warm-up. The acceptance rates are printed beside the
throughputs: the MIS rates of the two implementations estimate the same number (their chains are sticky,
so expect differences of a few tenths of a percent), and the conforming fraction of the rejection
proposals estimates c(x).

Run with ``.venv/bin/python benchmarks/congenial_release.py [--seconds 5]``.
"""

from __future__ import annotations

import argparse
import math
import time
from dataclasses import dataclass

import numpy as np

from ppdinfer.case_studies.congenial_2x23.data import CONFIDENTIAL, SOLVED_CELLS, free_cells, invariant_matrix
from ppdinfer.case_studies.congenial_2x23.table1 import (
    EPSILON,
    PAPER_PROPOSAL_EPSILON,
    PROPOSALS_PER_DRAW,
    congenial_mechanism,
    mis_release,
)

NUMPY_BLOCK = 100_000


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


def numpy_rejection_block(x: np.ndarray, size: int, rng: np.random.Generator) -> int:
    """Conforming draws among ``size`` proposals s* + noise."""
    A = invariant_matrix()
    y = x + double_geometric(EPSILON, (size, x.size), rng)
    return int(np.count_nonzero(np.all(y @ A.T == A @ x, axis=1) & np.all(y >= 0, axis=1)))


# -- the runs ---------------------------------------------------------------------------------


def run_ppdinfer_mis(seconds: float, chain: int, seed: int) -> Measurement:
    mechanism = congenial_mechanism(CONFIDENTIAL)
    rng = np.random.default_rng(seed)
    steps = accepted = 0
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        mis_release(mechanism, CONFIDENTIAL, rng, burn_in=chain - 1)
        steps += chain
        accepted += round(mechanism.last_acceptance_rate * chain)
    return Measurement("ppdinfer", steps, accepted, time.perf_counter() - start)


def run_numpy_mis(seconds: float, chain: int, seed: int) -> Measurement:
    x = CONFIDENTIAL.reshape(-1)
    rng = np.random.default_rng(seed)
    steps = accepted = 0
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        accepted += numpy_mis_chain(x, chain, rng)
        steps += chain
    return Measurement("numpy", steps, accepted, time.perf_counter() - start)


def run_ppdinfer_rejection(seconds: float, seed: int) -> Measurement:
    mechanism = congenial_mechanism(CONFIDENTIAL)
    rng = np.random.default_rng(seed)
    steps = accepted = 0
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        mechanism.release(CONFIDENTIAL, random_seed=rng, method="rejection", max_proposals=PROPOSALS_PER_DRAW)
        steps += round(1 / mechanism.last_acceptance_rate)
        accepted += 1
    return Measurement("ppdinfer", steps, accepted, time.perf_counter() - start)


def run_numpy_rejection(seconds: float, seed: int) -> Measurement:
    x = CONFIDENTIAL.reshape(-1)
    rng = np.random.default_rng(seed)
    steps = accepted = 0
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        accepted += numpy_rejection_block(x, NUMPY_BLOCK, rng)
        steps += NUMPY_BLOCK
    return Measurement("numpy", steps, accepted, time.perf_counter() - start)


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


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=5.0, help="wall-clock budget per implementation (default 5)")
    parser.add_argument("--chain", type=int, default=100_000, help="MIS iterations per chain (default 100000)")
    parser.add_argument("--seed", type=int, default=20200801, help="random seed (default 20200801)")
    args = parser.parse_args(argv)

    print(
        f"Table 1 (2 x 23, d = 46), double geometric eps = {EPSILON:g}, MIS eps~ = {PAPER_PROPOSAL_EPSILON:g}, "
        f"chains of {args.chain:,}; {args.seconds:g} s per implementation"
    )
    run_ppdinfer_mis(0.2, 1_000, 0)  # warm-up
    run_numpy_mis(0.2, 1_000, 0)
    mis = [run_ppdinfer_mis(args.seconds, args.chain, args.seed), run_numpy_mis(args.seconds, args.chain, args.seed)]
    rejection = [run_ppdinfer_rejection(args.seconds, args.seed), run_numpy_rejection(args.seconds, args.seed)]
    print()
    print(format_table("MIS", "iterations", mis))
    print()
    print(format_table("rejection", "proposals", rejection))
    print()
    print(
        f"ppdinfer / numpy throughput: MIS {mis[0].per_second / mis[1].per_second:.2f}x, "
        f"rejection {rejection[0].per_second / rejection[1].per_second:.2f}x"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
