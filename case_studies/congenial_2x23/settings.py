"""The run sizes of the full and the quick reproduction.

The paper fixes the mechanism (double geometric, epsilon = 0.5 per cell), the proposal
(eps~ = 0.6), the 20 synthetic tables and the 100 releases per table; it leaves the MIS's start,
burn-in and chain lengths unstated. Here every chain starts at the confidential table s*
(the library's choice) and each release is the state after ``burn_in`` iterations of its own
chain, so releases are independent runs of the mechanism, as a curator's would be.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["FULL", "QUICK", "Settings"]


@dataclass(frozen=True)
class Settings:
    """How much of each experiment to run.

    Attributes
    ----------
    proposal_grid : the eps~ values of the acceptance-rate curve (Appendix C, Figure 2).
    grid_chains, grid_iterations : independent MIS chains per eps~, and counted iterations per chain.
    grid_warm_up : iterations at the start of each of those chains that the acceptance rate does not count
        (a chain from s* accepts more often at first).
    trace_iterations : length of the traced chain (Figure 3: 10,000).
    burn_in : MIS iterations before a release (the release is the next state).
    rejection_budget : proposals the exact rejection sampler may spend on Table 1.
    check_releases : MIS releases of Table 1 compared with the exact rejection draws.
    n_tables, releases_per_table : Figure 1's 20 synthetic tables and 100 releases each.
    seed : the root seed of the run.

    Examples
    --------
    >>> QUICK.n_tables, len(FULL.proposal_grid), FULL.proposal_grid[6]
    (20, 15, 0.6)
    """

    proposal_grid: tuple[float, ...]
    grid_chains: int
    grid_iterations: int
    grid_warm_up: int
    trace_iterations: int
    burn_in: int
    rejection_budget: int
    check_releases: int
    n_tables: int
    releases_per_table: int
    seed: int = 20200801


#: The full run: eps~ = 0.30, 0.35, ..., 1.00, 6 chains of 200,000 counted iterations each after 10,000
#: uncounted ones; 100 releases per table.
FULL = Settings(
    proposal_grid=tuple(round(float(e), 2) for e in np.arange(0.30, 1.001, 0.05)),
    grid_chains=6,
    grid_iterations=200_000,
    grid_warm_up=10_000,
    trace_iterations=10_000,
    burn_in=10_000,
    rejection_budget=4_000_000,
    check_releases=200,
    n_tables=20,
    releases_per_table=100,
)
#: The quick run (well under a minute): three eps~, six short chains each (too short to tell 0.6 from 0.7 or
#: 1.52% from 1.68%: its report says so), 5 releases per table.
QUICK = Settings(
    proposal_grid=(0.5, 0.6, 0.7),
    grid_chains=6,
    grid_iterations=20_000,
    grid_warm_up=2_000,
    trace_iterations=10_000,
    burn_in=2_000,
    rejection_budget=100_000,
    check_releases=20,
    n_tables=20,
    releases_per_table=5,
)
