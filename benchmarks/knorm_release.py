"""Throughput of the Semi-DP K-norm sampler (Cho & Awan, Algorithm 3) against its random numbers.

What is measured
----------------
For r x c tables with public one-way margins, S is the set of "rectangles" (+1 at (i, j) and
(k, l), -1 at (i, l) and (k, j)), of rank s = (r - 1)(c - 1). One K-norm draw is a radius
r ~ Gamma(s + 1, rate epsilon) and a direction uniform in K = conv(S), found by rejection from a
box in s basis coordinates: each candidate costs s uniforms and one gauge evaluation (a product
with the facets of K), and a fraction vol(K) / vol(box) of them is accepted.

Three timings per table, each for the same wall-clock budget:

1. ``batched``: ``KNormMechanism.noise(batch)``, many draws per call (candidates in batches).
2. ``one by one``: ``KNormMechanism.release(x)``, one release per call, as a curator calls it.
3. ``rng only``: the random numbers the draws of (1) need, and nothing else: s uniforms per
   expected candidate (draws / acceptance rate) and one gamma per draw. This is the floor.

The table shows draws per second, the time per draw against the RNG-only floor, the box
acceptance rate (exact, from the hull's volume, and observed), and the mean K-norm of the noise
against its expectation s / epsilon (the K-norm is Gamma(s, epsilon)), as a check.

The hull's facets come from Qhull, whose facet count grows quickly with s (30 for 3 x 3, 866 for
4 x 4, where building the space takes about 10 s); the acceptance rate falls about tenfold per
added dimension (0.16 for 3 x 3, 8e-4 for 4 x 4). A 5 x 5 table (s = 16) is out of reach: Qhull
does not finish enumerating the facets in 10 minutes, and box rejection would then accept very few
candidates. ``--tables`` chooses the tables.

All timings are single-threaded: the sampler's matrix products are small, and on a busy
machine a multi-threaded BLAS slows them down several times, so the script sets
``OPENBLAS_NUM_THREADS=1`` (and the OpenMP / MKL twins) unless they are set already; the random
numbers are single-threaded anyway.

Run with ``.venv/bin/python benchmarks/knorm_release.py``.
"""

from __future__ import annotations

import os

for _variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_variable, "1")  # before numpy is imported

import argparse
import itertools
import math
import time
from dataclasses import dataclass

import numpy as np

from ppdinfer.mechanisms.semidp import KNormMechanism
from ppdinfer.privacy import SensitivitySpace

EPSILON = 1.0
BATCH = 4096  # draws per call of the batched sampler, fewer where a draw needs many candidates
BATCH_CANDIDATES = 2**20  # ... so that one call tests at most about this many box candidates
AGREEMENT_SIGMAS = 4.0
CHECK_DRAWS = 100_000  # draws for the untimed check of the K-norm, fewer where a draw needs many candidates
CHECK_CANDIDATES = 2_500_000  # box candidates for that check and for the observed acceptance rate


def rectangles(rows: int, cols: int) -> np.ndarray:
    """The sensitivity vectors of an r x c table with public one-way margins, flattened."""
    vectors = []
    for (i, k), (j, l) in itertools.product(
        itertools.combinations(range(rows), 2), itertools.permutations(range(cols), 2)
    ):
        v = np.zeros((rows, cols))
        v[i, j] = v[k, l] = 1
        v[i, l] = v[k, j] = -1
        vectors.append(v.ravel())
    return np.array(vectors)


@dataclass
class Row:
    table: str
    rank: int
    setup_seconds: float
    acceptance: float  # vol(K) / vol(box), exact
    observed_acceptance: float
    batched: float  # draws per second
    one_by_one: float
    rng_only: float
    mean_norm: float
    mean_norm_se: float


def timed_draws(draw, seconds: float) -> tuple[int, float]:
    """Call ``draw()`` (returning how many draws it made) until ``seconds`` have passed."""
    made, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        made += draw()
    return made, time.perf_counter() - start


def observed_acceptance(mechanism: KNormMechanism, rng: np.random.Generator, candidates: int) -> float:
    """The fraction of box candidates inside K, counted directly (in chunks, to bound the memory)."""
    s, inside, chunk = mechanism.space.rank, 0, 16_384
    for start in range(0, candidates, chunk):
        w = rng.uniform(-1.0, 1.0, size=(min(chunk, candidates - start), s)) * mechanism.half_widths
        inside += int(np.count_nonzero(mechanism.space.gauge_coordinates(w) <= 1.0))
    return inside / candidates


def measure(rows: int, cols: int, seconds: float, seed: int) -> Row:
    start = time.perf_counter()
    space = SensitivitySpace(rectangles(rows, cols), shape=(rows, cols))
    mechanism = KNormMechanism(EPSILON, space)
    setup = time.perf_counter() - start
    s, rate = space.rank, mechanism.acceptance_rate
    rng = np.random.default_rng(seed)
    x = np.full((rows, cols), 10.0)
    batch = int(np.clip(BATCH_CANDIDATES * rate, 16, BATCH))

    mechanism.noise(batch, rng)  # warm up
    made, elapsed = timed_draws(lambda: mechanism.noise(batch, rng).shape[0], seconds)
    singles, single_elapsed = timed_draws(lambda: mechanism.release(x, random_seed=rng) is not None, seconds)

    uniforms_per_batch = math.ceil(batch / rate) * s

    def rng_only() -> int:
        rng.uniform(-1.0, 1.0, size=uniforms_per_batch)
        rng.gamma(s + 1, 1.0 / EPSILON, size=batch)
        return batch

    floor, floor_elapsed = timed_draws(rng_only, seconds)
    check_draws = int(min(CHECK_DRAWS, CHECK_CANDIDATES * rate))
    norms = space.gauge(mechanism.noise(check_draws, rng))  # untimed: the K-norm is Gamma(s, epsilon)
    return Row(
        f"{rows} x {cols}",
        s,
        setup,
        rate,
        observed_acceptance(mechanism, rng, CHECK_CANDIDATES),
        made / elapsed,
        singles / single_elapsed,
        floor / floor_elapsed,
        float(norms.mean()),
        float(norms.std() / math.sqrt(norms.size)),
    )


def format_table(rows: list[Row]) -> str:
    header = (
        "table",
        "s",
        "setup s",
        "box acceptance",
        "observed",
        "draws/s batched",
        "vs RNG-only",
        "releases/s one by one",
        "RNG-only draws/s",
    )
    lines = [header]
    for r in rows:
        lines.append(
            (
                r.table,
                str(r.rank),
                f"{r.setup_seconds:.2f}",
                f"{r.acceptance:.4g}",
                f"{r.observed_acceptance:.4g}",
                f"{r.batched:,.0f}",
                f"{r.rng_only / r.batched:.2f}x",
                f"{r.one_by_one:,.0f}",
                f"{r.rng_only:,.0f}",
            )
        )
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    out = []
    for j, line in enumerate(lines):
        out.append("  ".join([line[0].ljust(widths[0])] + [c.rjust(w) for c, w in zip(line[1:], widths[1:])]))
        if j == 0:
            out.append("  ".join("-" * w for w in widths))
    return "\n".join(out)


def agreement_lines(rows: list[Row]) -> list[str]:
    """The mean K-norm of the noise against s / epsilon (the K-norm is Gamma(s, epsilon))."""
    lines = []
    for r in rows:
        expected = r.rank / EPSILON
        z = (r.mean_norm - expected) / r.mean_norm_se
        verdict = "ok" if abs(z) <= AGREEMENT_SIGMAS else "DISAGREES"
        lines.append(
            f"  {r.table}: mean ||noise||_K = {r.mean_norm:.4f}, expected s / eps = {expected:g} "
            f"(z = {z:+.2f}, {verdict})"
        )
    return lines


def parse_tables(text: str) -> list[tuple[int, int]]:
    try:
        tables = [tuple(int(k) for k in item.lower().split("x")) for item in text.split(",")]
    except ValueError as err:
        raise argparse.ArgumentTypeError(f"tables must look like 2x2,3x3, got {text!r}") from err
    if any(len(t) != 2 or min(t) < 2 for t in tables):
        raise argparse.ArgumentTypeError(f"tables must look like 2x2,3x3 with sides >= 2, got {text!r}")
    return tables


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--tables",
        type=parse_tables,
        default=parse_tables("2x2,3x3,3x4,4x4"),
        help="comma-separated r x c tables (default 2x2,3x3,3x4,4x4)",
    )
    parser.add_argument("--seconds", type=float, default=2.0, help="wall-clock budget per timing and table (default 2)")
    parser.add_argument("--seed", type=int, default=20240611, help="random seed (default 20240611)")
    args = parser.parse_args(argv)

    print(
        f"K-norm mechanism (Algorithm 3, radius Gamma(s + 1)), epsilon = {EPSILON:g}, rectangles of "
        f"r x c tables with public margins; batches of up to {BATCH} draws; {args.seconds:g} s per timing"
    )
    rows = [measure(r, c, args.seconds, args.seed) for r, c in args.tables]
    print()
    print(format_table(rows))
    print()
    print("check of the sampler:")
    print("\n".join(agreement_lines(rows)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
