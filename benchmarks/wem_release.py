"""The Wasserstein exponential mechanism's release: chain throughput, exact against chain, chain checks.

Default run: steps per second of the release chain
--------------------------------------------------
One month of the case study: J = 67 Pennsylvania counties, cases and deaths (134 coordinates),
public z = this month's statewide case total and last month's county cases, the L2 loss with
Delta_z = 2 and the prior-congenial base measure (or ``--base-measure congenial``). Every
implementation runs the same Metropolis chain (case transfers between two counties and death
steps within [0, cases], log-uniform step sizes, see ppdinfer.kernels.wem):

1. ``numba``: :meth:`WassersteinExponential.release` with ``replicates``: the compiled kernel.
2. ``numpy (R chains)``: R chains advanced together, one vectorized NumPy update per move.
3. ``python loop``: chains one after the other, one move at a time in plain Python (``random``, ``math``).

A step is one proposed move of one chain. The table reports steps per second and numba's
speed-up. All implementations target the same pmf, so the mean loss ||y - x||_2 of their final
states must agree (within 4.5 standard errors); the script checks it. Compile time is excluded
(the kernel is warmed up first).

Then seconds per release (one call per release, as the case study makes them) of the exact
samplers and of the default chain, in turn in this run, with their ratio: on small tables
(1-18 counties, synthetic or the month's first counties) at eps = 1 and 0.01, and the chain
alone on the 67-county table, where no exact sampler is available. 30-60 s in all.

``--mixing``: the check behind MIN_SWEEPS
-----------------------------------------
For each base measure and eps in {1, 0.01}: 200 releases after 50, 200 and 500 sweeps against
200 after 8000, two-sample KS p-values on the loss ||y - x||_2 and on the case counts of
Allegheny, Erie and Cameron (the smallest of the four is reported; below 0.01 the chain has not
mixed). About 5 minutes.

``--audit``: empirical privacy loss
-----------------------------------
max |log f(y) / f'(y)| over outputs seen at least 500 times in both of ``--releases`` releases
of neighbouring one-county tables (naive: cases 5 and 7, deaths 2; congenial: total 8, deaths 3
and 5; eps = 1, Delta_z = 2), for chains of 1, 2, 5, 20 and 2000 sweeps and for the exact
release. The ideal mechanism's value is 0.5, the claim eps = 1. About 5 minutes at 200 000.

Run with ``.venv/bin/python benchmarks/wem_release.py [--data DIR] [--month 2021-01] [--epsilon 1]
[--mixing | --audit]``.
"""

from __future__ import annotations

import argparse
import math
import random
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import special, stats

from ppdinfer.mechanisms import WassersteinExponential
from ppdinfer.mechanisms.wem import DEFAULT_SWEEPS, EXACT_PROPOSAL_LIMIT, ChainLengthWarning

DEFAULT_DATA = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "covid_pa"
DELTA_Z = 2.0
EPSILONS = (1.0, 0.01)
MEASURES = ("naive", "congenial", "prior_congenial")


@dataclass
class Chain:
    """The chain's numbers as the reference implementations need them."""

    x: np.ndarray  # flat table, cases then deaths
    concentration: np.ndarray | None  # Dirichlet-multinomial concentration, None for "congenial"
    rate: float
    max_step: int


@dataclass
class Measurement:
    name: str
    chains: int
    steps: int
    seconds: float
    losses: np.ndarray  # ||y - x||_2 of each chain's final state

    @property
    def steps_per_second(self) -> float:
        return self.steps / self.seconds


def load_month(data: Path, month: str) -> tuple[np.ndarray, dict, list[str]]:
    """x (2, J) of ``month`` and z (total, previous_cases) from the monthly county file."""
    table = pd.read_csv(data / "pa_monthly_new_by_county.csv").sort_values(["month", "fips"])
    months = list(dict.fromkeys(table["month"]))
    if month not in months[1:]:
        raise SystemExit(f"--month must be one of {months[1:]} (the previous month is public information)")
    current = table[table["month"] == month]
    previous = table[table["month"] == months[months.index(month) - 1]]
    x = np.array([current["new_cases"].to_numpy(), current["new_deaths"].to_numpy()], dtype=np.int64)
    if np.any(x < 0) or np.any(x[0] < x[1]):
        raise SystemExit(
            f"{month} has negative counts or deaths above cases (reporting corrections): pick another month"
        )
    z = {"total": int(x[0].sum()), "previous_cases": previous["new_cases"].to_numpy()}
    return x, z, list(current["county"])


def run_numba(mechanism, x, z, chains: int, sweeps: int, seed: int) -> Measurement:
    start = time.perf_counter()
    draws = mechanism.release(x, z, random_seed=seed, sweeps=sweeps, replicates=chains)
    seconds = time.perf_counter() - start
    return Measurement("numba", chains, chains * sweeps * x.size, seconds, _losses(draws.reshape(chains, -1), x))


def run_numpy(chain: Chain, chains: int, sweeps: int, seed: int) -> Measurement:
    """``chains`` chains at once: each move is one vectorized update of every chain."""
    rng = np.random.default_rng(seed)
    x = chain.x
    n = x.size // 2
    y = np.tile(x, (chains, 1))
    acc = np.zeros(chains)  # sum of squared deviations from x: 0 at the start
    loss = np.zeros(chains)
    cells = np.zeros((chains, n))
    if chain.concentration is not None:
        cells[:] = _log_cells(y[:, :n], chain.concentration)
    log_steps = math.log(chain.max_step + 1.0) * (1.0 - 1e-12)
    start = time.perf_counter()
    with np.errstate(invalid="ignore", divide="ignore"):  # infeasible proposals may hold NaN weights
        _numpy_sweeps(chain, y, acc, loss, cells, log_steps, sweeps, rng)
    seconds = time.perf_counter() - start
    return Measurement(f"numpy ({chains} chains)", chains, chains * sweeps * x.size, seconds, _losses(y, x))


def _numpy_sweeps(chain, y, acc, loss, cells, log_steps, sweeps, rng) -> None:
    x = chain.x
    chains, n = y.shape[0], x.size // 2
    rows = np.arange(chains)
    for _ in range(sweeps):
        for move in range(2 * n):
            u = 2.0 * rng.random(chains)
            size = np.exp((u % 1.0) * log_steps).astype(np.int64)
            step = np.where(u >= 1.0, -size, size)
            log_ratio = np.zeros(chains)
            if move >= n:  # a death step in a random county
                k = n + rng.integers(n, size=chains)
                value = y[rows, k] + step
                feasible = (value >= 0) & (value <= y[rows, k - n])
                new_acc = acc - (y[rows, k] - x[k]) ** 2.0 + (value - x[k]) ** 2.0
            else:  # a case transfer from county j to county i
                i = rng.integers(n, size=chains)
                j = rng.integers(n - 1, size=chains)
                j += j >= i
                ci, cj = y[rows, i] + step, y[rows, j] - step
                feasible = (ci >= y[rows, n + i]) & (cj >= y[rows, n + j])
                new_acc = (
                    acc
                    - (y[rows, i] - x[i]) ** 2.0
                    - (y[rows, j] - x[j]) ** 2.0
                    + (ci - x[i]) ** 2.0
                    + (cj - x[j]) ** 2.0
                )
                if chain.concentration is not None:
                    cell_i = _log_cells(ci, chain.concentration[i])
                    cell_j = _log_cells(cj, chain.concentration[j])
                    log_ratio = cell_i - cells[rows, i] + cell_j - cells[rows, j]
            new_loss = np.sqrt(new_acc)
            log_ratio = log_ratio - chain.rate * (new_loss - loss)
            accept = feasible & (np.log(rng.random(chains)) <= log_ratio)
            r = rows[accept]
            if move >= n:
                y[r, k[accept]] = value[accept]
            else:
                y[r, i[accept]], y[r, j[accept]] = ci[accept], cj[accept]
                if chain.concentration is not None:
                    cells[r, i[accept]], cells[r, j[accept]] = cell_i[accept], cell_j[accept]
            acc[accept], loss[accept] = new_acc[accept], new_loss[accept]


def _log_cells(cases, concentration):
    """log Gamma(c + a) - log Gamma(c + 1): a county's Dirichlet-multinomial factor up to constants."""
    return special.gammaln(cases + concentration) - special.gammaln(cases + 1.0)


def run_python(chain: Chain, chains: int, sweeps: int, seed: int) -> Measurement:
    """``chains`` chains one after the other, one move at a time."""
    rng = random.Random(seed)
    finals = []
    start = time.perf_counter()
    for _ in range(chains):
        finals.append(_python_chain(chain, sweeps, rng))
    seconds = time.perf_counter() - start
    steps = chains * sweeps * chain.x.size
    return Measurement("python loop", chains, steps, seconds, _losses(np.array(finals), chain.x))


def _python_chain(chain: Chain, sweeps: int, rng: random.Random) -> list[int]:
    x = chain.x.tolist()
    a = None if chain.concentration is None else chain.concentration.tolist()
    y = list(x)
    n = len(x) // 2
    cells = [0.0] * n if a is None else [math.lgamma(y[j] + a[j]) - math.lgamma(y[j] + 1.0) for j in range(n)]
    acc, loss = 0.0, 0.0
    log_steps = math.log(chain.max_step + 1.0) * (1.0 - 1e-12)
    for _ in range(sweeps):
        for move in range(2 * n):
            u = 2.0 * rng.random()
            size = int(math.exp((u % 1.0) * log_steps))
            step = -size if u >= 1.0 else size
            if move >= n:
                k = n + rng.randrange(n)
                value = y[k] + step
                if value < 0 or value > y[k - n]:
                    continue
                new_acc = acc - (y[k] - x[k]) ** 2 + (value - x[k]) ** 2
                new_loss = math.sqrt(new_acc)
                log_ratio = -chain.rate * (new_loss - loss)
                if log_ratio >= 0 or math.log(rng.random()) <= log_ratio:
                    y[k], acc, loss = value, new_acc, new_loss
            else:
                i = rng.randrange(n)
                j = rng.randrange(n - 1)
                j += j >= i
                ci, cj = y[i] + step, y[j] - step
                if ci < y[n + i] or cj < y[n + j]:
                    continue
                new_acc = acc - (y[i] - x[i]) ** 2 - (y[j] - x[j]) ** 2 + (ci - x[i]) ** 2 + (cj - x[j]) ** 2
                new_loss = math.sqrt(new_acc)
                log_ratio = -chain.rate * (new_loss - loss)
                cell_i = cell_j = 0.0
                if a is not None:
                    cell_i = math.lgamma(ci + a[i]) - math.lgamma(ci + 1.0)
                    cell_j = math.lgamma(cj + a[j]) - math.lgamma(cj + 1.0)
                    log_ratio += cell_i - cells[i] + cell_j - cells[j]
                if log_ratio >= 0 or math.log(rng.random()) <= log_ratio:
                    y[i], y[j], acc, loss = ci, cj, new_acc, new_loss
                    cells[i], cells[j] = cell_i, cell_j
    return y


def _standard_error(values: np.ndarray) -> float:
    return float(values.std(ddof=1) / math.sqrt(values.size))


def _losses(tables: np.ndarray, x: np.ndarray) -> np.ndarray:
    return np.linalg.norm(tables.reshape(tables.shape[0], -1) - x.reshape(-1), axis=1)


def format_table(results: list[Measurement]) -> str:
    numba = results[0].steps_per_second
    lines = [
        f"{'implementation':<22}{'chains':>8}{'steps':>13}{'seconds':>9}{'steps/s':>12}{'numba speed-up':>16}"
        f"{'mean loss':>12}"
    ]
    for m in results:
        se = _standard_error(m.losses)
        lines.append(
            f"{m.name:<22}{m.chains:>8}{m.steps:>13,}{m.seconds:>9.2f}{m.steps_per_second:>12.3g}"
            f"{numba / m.steps_per_second:>15.1f}x{m.losses.mean():>8.0f} ± {se:.0f}"
        )
    return "\n".join(lines)


def seconds_per_release(mechanism, x, z, method: str, budget: float = 0.5) -> float:
    """Mean seconds of single-release calls, over ``budget`` seconds (at most 1000 calls) after a warm-up call."""
    mechanism.release(x, z, method=method)
    rng = np.random.default_rng(0)
    calls, start = 0, time.perf_counter()
    while calls < 1000 and time.perf_counter() - start < budget:
        mechanism.release(x, z, random_seed=rng, method=method)
        calls += 1
    return (time.perf_counter() - start) / calls


def exact_against_chain(x: np.ndarray, z: dict, month: str) -> str:
    """Seconds per release, exact and default chain, on small tables and on the month's table."""
    tables = [("1 county", np.array([[5], [2]]), {"total": 5, "previous_cases": [4]})]
    for total, n in ((4, 3), (100, 2)):
        cases = np.full(n, total // n)
        cases[0] += total - cases.sum()
        tables.append(
            (
                f"{n} counties, total {total}",
                np.array([cases, cases // 2]),
                {"total": total, "previous_cases": np.arange(1, n + 1) * 10},
            )
        )
    for n in (5, 10, 18, x.shape[1]):
        part = x[:, :n]
        tables.append(
            (f"{n} counties ({month})", part, {"total": int(part[0].sum()), "previous_cases": z["previous_cases"][:n]})
        )
    lines = [
        f"{'table':<26}{'measure':<17}{'eps':>6}{'proposals':>11}{'exact s':>10}{'chain s':>10}{'chain/exact':>13}"
    ]
    for name, table, public in tables:
        for measure in MEASURES:
            for epsilon in EPSILONS:
                mechanism = WassersteinExponential(epsilon, DELTA_Z, base_measure=measure)
                proposals = mechanism.exact_proposals(public, table.shape[1])
                chain = seconds_per_release(mechanism, table, public, "mcmc")
                if proposals <= EXACT_PROPOSAL_LIMIT:
                    exact = seconds_per_release(mechanism, table, public, "exact")
                    cells = f"{proposals:>11.3g}{exact:>10.2e}{chain:>10.2e}{chain / exact:>12.1f}x"
                else:
                    cells = f"{proposals:>11.3g}{'-':>10}{chain:>10.2e}{'-':>13}"
                lines.append(f"{name:<26}{measure:<17}{epsilon:>6g}{cells}")
    return "\n".join(lines)


def mixing(
    x: np.ndarray,
    z: dict,
    counties: list[str],
    seed: int,
    sweeps=(50, 200, 500),
    reference: int = 8000,
    chains: int = 200,
) -> str:
    """Smallest KS p-value of ``chains`` releases after each of ``sweeps`` against ``reference`` sweeps."""
    picked = [counties.index(name) for name in ("Allegheny", "Erie", "Cameron")]

    def statistics(draws):
        return [_losses(draws.reshape(chains, -1), x), *(draws[:, 0, j] for j in picked)]

    lines = [f"{'measure':<17}{'eps':>6}" + "".join(f"{s:>10}" for s in sweeps) + "   (smallest KS p-value)"]
    for measure in MEASURES:
        for epsilon in EPSILONS:
            mechanism = WassersteinExponential(epsilon, DELTA_Z, base_measure=measure, method="mcmc")
            target = statistics(mechanism.release(x, z, random_seed=seed, sweeps=reference, replicates=chains))
            cells = []
            for s in sweeps:
                draws = statistics(mechanism.release(x, z, random_seed=seed + s, sweeps=s, replicates=chains))
                cells.append(min(stats.ks_2samp(a, b).pvalue for a, b in zip(draws, target)))
            lines.append(f"{measure:<17}{epsilon:>6g}" + "".join(f"{p:>10.2g}" for p in cells))
    return "\n".join(lines)


def privacy_loss(draws: np.ndarray, other: np.ndarray, min_count: int = 500) -> float:
    """max |log(f(y) / f'(y))| over the outputs seen at least ``min_count`` times in both equal-size samples."""
    counts = []
    for sample in (draws, other):
        values, n = np.unique(sample.reshape(len(sample), -1), axis=0, return_counts=True)
        counts.append({row.tobytes(): c for row, c in zip(values, n)})
    return max(
        abs(math.log(counts[0][key] / counts[1][key]))
        for key in counts[0]
        if min(counts[0][key], counts[1].get(key, 0)) >= min_count
    )


def audit(releases: int, seed: int, sweeps=(1, 2, 5, 20, DEFAULT_SWEEPS)) -> str:
    """Empirical privacy loss of chains of each length and of the exact release on one-county neighbours."""
    cases = {
        "naive": (None, np.array([[5], [2]]), np.array([[7], [2]])),
        "congenial": ({"total": 8}, np.array([[8], [3]]), np.array([[8], [5]])),
    }
    lines = [f"{'measure':<11}" + "".join(f"{s:>9}" for s in sweeps) + f"{'exact':>9}   (eps = 1, ideal 0.5)"]
    for measure, (z, x, neighbour) in cases.items():
        mechanism = WassersteinExponential(1.0, DELTA_Z, base_measure=measure)
        runs = [{"sweeps": s, "method": "mcmc"} for s in sweeps] + [{"method": "exact"}]
        losses = [
            privacy_loss(
                *(
                    mechanism.release(t, z, random_seed=seed + i, replicates=releases, **run)
                    for i, t in enumerate((x, neighbour))
                )
            )
            for run in runs
        ]
        lines.append(f"{measure:<11}" + "".join(f"{loss:>9.2f}" for loss in losses))
    return "\n".join(lines)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="folder with pa_monthly_new_by_county.csv")
    parser.add_argument("--month", default="2021-01")
    parser.add_argument("--epsilon", type=float, default=1.0)
    parser.add_argument("--base-measure", choices=["prior_congenial", "congenial"], default="prior_congenial")
    parser.add_argument("--sweeps", type=int, default=500, help="sweeps per chain (500 mix at eps = 1 and 0.01)")
    parser.add_argument("--seed", type=int, default=0)
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--mixing", action="store_true", help="the chain-length check behind MIN_SWEEPS")
    mode.add_argument("--audit", action="store_true", help="empirical privacy loss by chain length and exact")
    parser.add_argument("--releases", type=int, default=200_000, help="releases per table for --audit")
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore", ChainLengthWarning)  # short chains are what --mixing and --audit measure

    x, z, counties = load_month(args.data, args.month)
    if args.mixing:
        print(f"Chain mixing on {args.month} (J = {x.shape[1]}, total {z['total']:,}), L2, Delta_z = {DELTA_Z}")
        print(mixing(x, z, counties, args.seed))
        return
    if args.audit:
        print(f"Empirical privacy loss, {args.releases:,} releases per table")
        print(audit(args.releases, args.seed))
        return
    mechanism = WassersteinExponential(args.epsilon, DELTA_Z, base_measure=args.base_measure, method="mcmc")
    n = x.shape[1]
    concentration = mechanism.base_measure.concentration(z, n) if args.base_measure == "prior_congenial" else None
    chain = Chain(x.reshape(-1), concentration, mechanism.rate, mechanism.max_step(z, n))
    mechanism.release(x, z, random_seed=args.seed, sweeps=1)  # compile (or load the cache)

    results = [
        run_numba(mechanism, x, z, chains=200, sweeps=args.sweeps, seed=args.seed),
        run_numpy(chain, chains=100, sweeps=args.sweeps, seed=args.seed),
        run_python(chain, chains=10, sweeps=args.sweeps, seed=args.seed),
    ]
    print(
        f"WEM release chain, {args.month}: J = {n} counties, {x.size} coordinates, total {z['total']:,} cases, "
        f"eps = {args.epsilon}, Delta_z = {DELTA_Z}, L2 loss, {args.base_measure} base measure, "
        f"{args.sweeps} sweeps per chain, max step {chain.max_step}"
    )
    print(format_table(results))
    reference = results[0].losses
    for m in results[1:]:
        se = math.hypot(_standard_error(reference), _standard_error(m.losses))
        z_score = (m.losses.mean() - reference.mean()) / se
        print(f"{m.name}: mean loss {'agrees' if abs(z_score) < 4.5 else 'DISAGREES'} with numba (z = {z_score:+.1f})")
    print(
        f"\nSeconds per release (one call each), exact and {DEFAULT_SWEEPS}-sweep chain measured in turn; "
        f"'-': above EXACT_PROPOSAL_LIMIT = {EXACT_PROPOSAL_LIMIT:,} or no exact sampler"
    )
    print(exact_against_chain(x, z, args.month))


if __name__ == "__main__":
    main()
