r"""A synthetic Pennsylvania and its noisy-measurement release, as the 2020 Census would publish it.

**Geography and tables**: :func:`ppdinfer.census.synthetic_state`, whose docstring gives the seeded
process: the 67 real county populations (:func:`ppdinfer.census.pa_county_populations`) split into
about 3,400 tracts and 10,000 block groups, each with the 14 cells of Hispanic origin x 7 race groups
from a Dirichlet hierarchy around :data:`ppdinfer.census.STATE_SHARES` (concentrations 30, 8, 50:
about 10 % of tracts are majority-minority).

**Release.** 'total', 'hispanic' and 'detailed' (Hispanic origin x race) queries at State, County,
Tract and Block_Group, each with discrete Gaussian noise of the production PL94 scale
(:func:`ppdinfer.census.production_sigmas`; PROVENANCE.md derives every sigma), and the state total
published exactly (the 2020 invariant).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ...census import (
    CensusQueries,
    Geography,
    TableSpec,
    census_queries,
    production_sigmas,
    synthetic_state,
)
from ...mechanisms import NoisyMeasurements

__all__ = ["LEVELS", "QUERIES", "CensusRelease", "make_release"]

#: The geographic levels, root first.
LEVELS = ("State", "County", "Tract", "Block_Group")
#: The queries measured at every level (the three production PL94 queries a Hispanic x race table reads).
QUERIES = {level: ["total", "hispanic", "detailed"] for level in LEVELS}
#: Dirichlet concentrations (county around state, tract around county, block group around tract).
CONCENTRATIONS = (30.0, 8.0, 50.0)


@dataclass(frozen=True, eq=False)
class CensusRelease:
    """A synthetic geography, its true cells and the production noisy-measurement mechanism over them.

    Examples
    --------
    >>> setup = make_release(["Fulton"], seed=0)
    >>> setup.census.n_cells, round(float(setup.sigmas.min()), 3), int(setup.invariants[1][0])
    (154, 1.1, 14556)
    """

    geography: Geography
    truth: np.ndarray
    census: CensusQueries
    sigmas: np.ndarray
    invariants: tuple
    mechanism: NoisyMeasurements

    def level_truth(self, level: str) -> np.ndarray:
        """The true (units x 14) table of every unit at ``level`` (sums of its block groups).

        Examples
        --------
        >>> setup = make_release(["Fulton"], seed=0)
        >>> int(setup.level_truth("County").sum()) == int(setup.truth.sum())
        True
        """
        return aggregate(self.geography, self.truth, level, axis=0)

    def sigma_table(self) -> pd.DataFrame:
        """The noise scale of each (level, query kind), as this release uses it.

        Examples
        --------
        >>> make_release(["Fulton"], seed=0).sigma_table().loc[("Block_Group", "detailed"), "sigma"].round(3)
        np.float64(2.227)
        """
        frame = self.census.frame().assign(sigma=self.sigmas)
        return frame.groupby(["level", "kind"], sort=False)[["sigma"]].first()


def aggregate(geography: Geography, leaf_values: np.ndarray, level: str, axis: int = 0) -> np.ndarray:
    """Sums of leaf values over the leaves of each unit at ``level`` (leaves contiguous, along ``axis``).

    Examples
    --------
    >>> geo = Geography(["s", "a", "b", "a1", "a2", "b1"], [None, "s", "s", "a", "a", "b"])
    >>> aggregate(geo, np.array([[1, 2], [3, 4], [5, 6]]), "level1").tolist()
    [[4, 6], [5, 6]]
    """
    units = geography.level(level)
    starts = geography.leaf_start[units]
    return np.add.reduceat(leaf_values, starts, axis=axis)


def make_release(counties=None, seed: int = 2020) -> CensusRelease:
    """The synthetic state of ``counties`` (seeded by ``seed``) and its production release mechanism.

    Examples
    --------
    >>> setup = make_release(["Fulton", "Potter"], seed=1)
    >>> setup.geography.n_leaves, setup.mechanism.n_queries
    (24, 595)
    """
    geo, truth = synthetic_state(counties, random_seed=seed)
    census = census_queries(geo, TableSpec.hispanic_race(), QUERIES)
    sigmas = production_sigmas(census)
    invariants = census.unit_invariants(["State"], [int(truth.sum())])
    mechanism = NoisyMeasurements(census.matrix, sigmas, invariants=invariants)
    return CensusRelease(geo, truth, census, sigmas, invariants, mechanism)
