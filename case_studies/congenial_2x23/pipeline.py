"""The whole reproduction: :func:`reproduce` runs every experiment into one folder and writes the report.

Steps (each with its own child seed of ``Settings.seed``): one MIS release of Table 1 (asserted to keep
every invariant), the acceptance curve over eps~, the Figure 3 trace, exact rejection releases with a
bounded budget and MIS releases to compare them with, and Figure 1's four methods on 20 synthetic tables.

BLAS runs single-threaded during the run: the NNL2 projections are many tiny quadratic programmes,
which multi-threaded BLAS on a shared 2-core machine slowed about thirtyfold.
"""

from __future__ import annotations

import time
from contextlib import contextmanager
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits
from tqdm.auto import tqdm

from .comparison import method_distances
from .data import CONFIDENTIAL, SOLVED_CELLS, synthetic_tables
from .figures import plot_acceptance_curve, plot_distances, plot_traces
from .report import PAPER_ACCEPTANCE, Measurements, write_report
from .settings import FULL, QUICK, Settings
from .table1 import (
    PAPER_PROPOSAL_EPSILON,
    acceptance_curve,
    congenial_mechanism,
    mis_release,
    mis_trace,
    rejection_estimate,
)

__all__ = ["TRACE_CELLS", "measure", "reproduce"]

#: Figure 3's cells (0-based): the paper's cell 2 (proposed) and cell 1 (solved), and the male
#: row's first (proposed) and last (solved) cells.
TRACE_CELLS = (1, 0, 23, 45)


@contextmanager
def _timed(seconds: dict[str, float], name: str):
    start = time.perf_counter()
    yield
    seconds[name] = time.perf_counter() - start


def measure(settings: Settings, quick: bool = False, progressbar: bool = False) -> tuple[Measurements, np.ndarray]:
    """Run every experiment; the measurements and the traced chain (iterations, 2, 23).

    Examples
    --------
    >>> from dataclasses import replace
    >>> tiny = replace(QUICK, proposal_grid=(0.6,), grid_iterations=500, grid_warm_up=0, trace_iterations=200,
    ...                burn_in=200, rejection_budget=1, check_releases=3, n_tables=2, releases_per_table=2)
    >>> m, states = measure(tiny, quick=True)
    >>> m.distances.shape, states.shape
    ((2, 4, 2), (200, 2, 23))
    """
    seeds = iter(np.random.SeedSequence(settings.seed).spawn(7))
    seconds: dict[str, float] = {}
    bars = {"disable": not progressbar, "leave": False}
    with _timed(seconds, "Table 1 release"):
        mechanism = congenial_mechanism(CONFIDENTIAL)
        release = mis_release(mechanism, CONFIDENTIAL, next(seeds), burn_in=settings.burn_in)
        mechanism.invariants.check(release, "the MIS release")  # raises naming any invariant it breaks
        release_acceptance = mechanism.last_acceptance_rate
    with (
        _timed(seconds, "acceptance curve"),
        tqdm(total=len(settings.proposal_grid) * settings.grid_chains, desc="acceptance curve", **bars) as bar,
    ):
        curve = acceptance_curve(
            CONFIDENTIAL,
            settings.proposal_grid,
            settings.grid_chains,
            settings.grid_iterations,
            next(seeds),
            advance=bar.update,
            warm_up=settings.grid_warm_up,
        )
    with _timed(seconds, "trace"):
        states, trace_rate = mis_trace(CONFIDENTIAL, settings.trace_iterations, next(seeds))
    with (
        _timed(seconds, "exact rejection"),
        tqdm(total=settings.rejection_budget, desc="exact rejection (proposals)", **bars) as bar,
    ):
        rejection = rejection_estimate(CONFIDENTIAL, settings.rejection_budget, next(seeds), advance=bar.update)
    with _timed(seconds, "MIS releases for the exact check"):
        rng = np.random.default_rng(next(seeds))
        start = time.perf_counter()
        check = np.array(
            [
                mis_release(mechanism, CONFIDENTIAL, rng, burn_in=settings.burn_in)
                for _ in tqdm(range(settings.check_releases), desc="MIS releases", **bars)
            ]
        )
        per_release = (time.perf_counter() - start) / settings.check_releases
    with _timed(seconds, "Figure 1"), tqdm(total=settings.n_tables, desc="Figure 1 (tables)", **bars) as bar:
        tables = synthetic_tables(settings.n_tables, next(seeds))
        distances = method_distances(
            tables, settings.releases_per_table, burn_in=settings.burn_in, random_seed=next(seeds), advance=bar.update
        )
    measurements = Measurements(
        settings=settings,
        quick=quick,
        release=release,
        release_acceptance=release_acceptance,
        curve=curve,
        trace_rate=trace_rate,
        trace_cells=TRACE_CELLS,
        rejection=rejection,
        mis_check_l1=np.abs(check - CONFIDENTIAL).reshape(len(check), -1).sum(axis=1),
        mis_seconds_per_release=per_release,
        distances=distances,
        seconds=seconds,
    )
    return measurements, states


def reproduce(results: Path, quick: bool = False, progressbar: bool = True) -> Path:
    """Run the reproduction (``QUICK`` or ``FULL`` settings) into ``results``; the path of its ``report.md``."""
    results = Path(results)
    results.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    with threadpool_limits(limits=1, user_api="blas"):
        measurements, states = measure(QUICK if quick else FULL, quick, progressbar)
        figures = {
            "Figure 1: distances by method": plot_distances(measurements.distances, results / "figure1_distances.png"),
            "Figure 2: MIS acceptance rate": plot_acceptance_curve(
                measurements.curve, PAPER_ACCEPTANCE, PAPER_PROPOSAL_EPSILON, results / "figure2_acceptance.png"
            ),
            "Figure 3: MIS traces": plot_traces(states, TRACE_CELLS, SOLVED_CELLS, results / "figure3_traces.png"),
        }
    measurements.seconds["total"] = time.perf_counter() - start
    return write_report(measurements, results, figures)
