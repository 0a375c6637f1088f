r"""A synthetic Pennsylvania and its noisy-measurement release, as the 2020 Census would publish it.

**From a file** (:func:`file_release`, what the case study runs): a synthetic state with the full PL94
histogram down to blocks (:func:`ppdinfer.census.synthetic_pl94_state`), its Noisy Measurement File
written in the Bureau's layout with the production allocation of all eleven queries at every level
(:func:`ppdinfer.census.write_nmf`), read back (:func:`ppdinfer.census.read_nmf`, levels State to
Block_Group) and released over the target table :data:`TABLE`, voting age x Hispanic origin x the 7 race
groups of the published tables (28 cells): every measurement enters exactly or summed into values of
those cells (:mod:`ppdinfer.census.nmf_release`).

**The older 14-cell release** (:func:`make_release`, kept for comparison and the teaching notebook):

*Geography and tables*: :func:`ppdinfer.census.synthetic_state`, whose docstring gives the seeded
process: the 67 real county populations (:func:`ppdinfer.census.pa_county_populations`) split into
about 3,400 tracts and 10,000 block groups, each with the 14 cells of Hispanic origin x 7 race groups
from a Dirichlet hierarchy around :data:`ppdinfer.census.STATE_SHARES` (concentrations 30, 8, 50:
about 10 % of tracts are majority-minority).

*Release*: 'total', 'hispanic' and 'detailed' (Hispanic origin x race) queries at State, County,
Tract and Block_Group, each with discrete Gaussian noise of the production PL94 scale
(:func:`ppdinfer.census.production_sigmas`; PROVENANCE.md derives every sigma; the production
'hispanic * cenrace' query has 126 cells, so 14 cells given its share are an approximation), and the
state total published exactly (the 2020 invariant).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ...census import (
    PERSON,
    CensusQueries,
    Geography,
    GroupedRelease,
    TableSpec,
    census_queries,
    grouped_release,
    production_sigmas,
    read_nmf,
    synthetic_pl94_state,
    synthetic_state,
    write_nmf,
)
from ...mechanisms import NoisyMeasurements

__all__ = ["LEVELS", "QUERIES", "TABLE", "CensusRelease", "file_release", "make_release"]

#: The geographic levels, root first.
LEVELS = ("State", "County", "Tract", "Block_Group")
#: The queries measured at every level (the three production PL94 queries a Hispanic x race table reads).
QUERIES = {level: ["total", "hispanic", "detailed"] for level in LEVELS}
#: The target table of the release read from a file: voting age x Hispanic origin x 7 race groups.
TABLE = PERSON.coarsen({"votingage": None, "hispanic": None, "cenrace": "major"})
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
    #: The same file's measurements of the full PL94 histogram (:func:`ppdinfer.census.grouped_release`), for
    #: :func:`ppdinfer.census.sample_people`; None unless ``file_release(..., full=True)``.
    full: GroupedRelease | None = None

    def level_truth(self, level: str) -> np.ndarray:
        """The true (units x K) table of every unit at ``level`` (sums of its block groups).

        Examples
        --------
        >>> setup = make_release(["Fulton"], seed=0)
        >>> int(setup.level_truth("County").sum()) == int(setup.truth.sum())
        True
        """
        return aggregate(self.geography, self.truth, level, axis=0)

    def sigma_table(self) -> pd.DataFrame:
        """The smallest and largest noise scale of each (level, query kind), as this release uses them (summed
        values of a query have larger ones).

        Examples
        --------
        >>> make_release(["Fulton"], seed=0).sigma_table().loc[("Block_Group", "detailed"), "sigma_max"].round(3)
        np.float64(2.227)
        """
        frame = self.census.frame().assign(sigma=self.sigmas)
        grouped = frame.groupby(["level", "kind"], sort=False)["sigma"]
        return pd.DataFrame({"sigma_min": grouped.min(), "sigma_max": grouped.max()})


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


def file_release(
    counties=None, seed: int = 2020, *, folder, release_seed=None, full: bool = False
) -> tuple[CensusRelease, np.ndarray]:
    """The synthetic PL94 state of ``counties``, its Noisy Measurement File written into ``folder`` and read back,
    released over :data:`TABLE`: ``(setup, y)``, y the file's measurements (summed where TABLE needs); with
    ``full``, ``setup.full`` holds the same measurements over the full histogram.

    ``seed`` draws the state, ``release_seed`` (default ``seed``) the file's noise. The setup's mechanism
    draws further releases of the same queries (the coverage study's replicates): a summed query's noise
    is then one discrete Gaussian of the summed variance, within 1e-8 in log pmf of the file's sum of
    noises at production variances (:func:`ppdinfer.census.summed_noise_error`).

    Examples
    --------
    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     setup, y = file_release(["Cameron"], seed=0, folder=folder, full=True)
    >>> setup.census.table.n_cells, setup.geography.level_names[-1], y.size == setup.census.n_queries
    (28, 'Block_Group', True)
    >>> setup.full.table.n_cells, setup.full.geography.n_leaves == setup.geography.n_leaves
    (2016, True)
    """
    state = synthetic_pl94_state(counties, random_seed=seed)
    write_nmf(folder, state, random_seed=seed if release_seed is None else release_seed, overwrite=True)
    total = int(state.persons.sum())
    nmf = read_nmf(folder, state.partition, levels=LEVELS, state_total=total)
    census, mechanism, y = nmf.release(TABLE)
    geo = census.geography
    block_groups = state.geography.level("Block_Group")
    row = {state.geography.ids[u]: i for i, u in enumerate(block_groups)}
    fine = state.aggregate("Block_Group")[[row[unit] for unit in geo.ids[geo.leaves]]]
    truth = TABLE.collapse(np.asarray(fine.todense())).astype(np.int64)
    whole = grouped_release(nmf) if full else None
    if whole is not None and not np.array_equal(whole.geography.ids, geo.ids):
        raise RuntimeError("the full histogram's release and the target table's have different geographies")
    invariants = (mechanism.invariant_matrix, mechanism.invariant_values)
    return CensusRelease(geo, truth, census, mechanism.sigmas, invariants, mechanism, whole), y
