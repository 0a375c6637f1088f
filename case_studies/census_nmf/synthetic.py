r"""A synthetic Pennsylvania and its noisy-measurement release, as the 2020 Census would publish it.

**Geography.** The 67 real county populations (2020 Census estimates base, shipped with the
package: :func:`ppdinfer.census.pa_county_populations`). County c of N_c people gets
``round(N_c / tract_people)`` tracts (at least one) whose sizes are multinomial over a symmetric
Dirichlet(20) split of N_c; a tract of T people gets ``round(T / block_group_people)`` block groups
(at least one), sizes multinomial over a Dirichlet(10) split. With 3,800 and 1,300 people the whole
state has about 3,400 tracts and 10,000 block groups (Pennsylvania had about 3,450 and 10,200 in
2020).

**Tables.** Each block group holds the 14 cells of Hispanic origin x 7 race groups
(:meth:`ppdinfer.census.TableSpec.hispanic_race`), drawn through a Dirichlet hierarchy around the
illustrative statewide shares :data:`ppdinfer.census.STATE_SHARES`:

.. math::

    q_c \sim \mathrm{Dir}(\kappa_c q_s + \epsilon), \quad q_t \sim \mathrm{Dir}(\kappa_t q_{c(t)} + \epsilon),
    \quad p_b \sim \mathrm{Dir}(\kappa_b q_{t(b)} + \epsilon), \quad n_b \sim \mathrm{Multinomial}(N_b, p_b),

with (kappa_c, kappa_t, kappa_b) = (30, 8, 50) and epsilon = 0.001. The small tract concentration
makes neighbourhoods differ as they do (about 10 % of tracts are majority-minority: non-Hispanic
white below half); :func:`ppdinfer.census.synthetic_state` uses (200, 100, 50), under which almost
no tract is.

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
    STATE_SHARES,
    CensusQueries,
    Geography,
    TableSpec,
    census_queries,
    pa_county_populations,
    production_sigmas,
)
from ...mechanisms import NoisyMeasurements

__all__ = ["LEVELS", "QUERIES", "CensusRelease", "make_release", "synthetic_pennsylvania"]

#: The geographic levels, root first.
LEVELS = ("State", "County", "Tract", "Block_Group")
#: The queries measured at every level (the three production PL94 queries a Hispanic x race table reads).
QUERIES = {level: ["total", "hispanic", "detailed"] for level in LEVELS}
#: Dirichlet concentrations (county around state, tract around county, block group around tract).
CONCENTRATIONS = (30.0, 8.0, 50.0)


def synthetic_pennsylvania(
    counties=None,
    random_seed=None,
    *,
    tract_people: int = 3800,
    block_group_people: int = 1300,
    concentrations=CONCENTRATIONS,
) -> tuple[Geography, np.ndarray]:
    """A seeded synthetic Pennsylvania: its Geography and true cells (block groups x 14), as the module says.

    Parameters
    ----------
    counties : sequence of str, optional
        County names (default all 67, in the shipped order); each keeps its real 2020 population.
    random_seed : int or SeedSequence
        The same seed and counties give the same state.
    tract_people, block_group_people : int
        Typical tract and block-group populations.
    concentrations : tuple of 3 floats
        (kappa_c, kappa_t, kappa_b) of the Dirichlet hierarchy.

    Examples
    --------
    >>> geo, cells = synthetic_pennsylvania(["Fulton"], random_seed=0)
    >>> geo.level_names, cells.shape[1], int(cells.sum())
    (('State', 'County', 'Tract', 'Block_Group'), 14, 14556)
    >>> len(geo.level("Tract")), geo.n_leaves
    (4, 11)
    """
    populations = pa_county_populations()
    if counties is not None:
        counties = [str(c) for c in counties]
        unknown = [c for c in counties if c not in populations.index]
        if not counties or unknown:
            raise ValueError(
                f"counties: {unknown or counties!r} are not Pennsylvania counties (see pa_county_populations)"
            )
        populations = populations[counties]
    for name, value in (("tract_people", tract_people), ("block_group_people", block_group_people)):
        if not isinstance(value, (int, np.integer)) or value < 1:
            raise ValueError(f"{name} must be a positive integer, got {value!r}")
    kappa = np.asarray(concentrations, dtype=float)
    if kappa.shape != (3,) or np.any(~np.isfinite(kappa) | (kappa <= 0)):
        raise ValueError(f"concentrations must be 3 finite positive numbers, got {concentrations!r}")
    rng = np.random.default_rng(random_seed)
    units, parents, made = ["State"], [None], {}
    for county, people in populations.items():
        units.append(county)
        parents.append("State")
        q_county = rng.dirichlet(kappa[0] * STATE_SHARES + 1e-3)
        n_tracts = max(1, round(int(people) / tract_people))
        tract_sizes = rng.multinomial(int(people), rng.dirichlet(np.full(n_tracts, 20.0)))
        for t, tract_size in enumerate(tract_sizes):
            tract = f"{county}-T{t:03d}"
            units.append(tract)
            parents.append(county)
            q_tract = rng.dirichlet(kappa[1] * q_county + 1e-3)
            n_bg = max(1, round(int(tract_size) / block_group_people))
            bg_sizes = rng.multinomial(int(tract_size), rng.dirichlet(np.full(n_bg, 10.0)))
            for b, size in enumerate(bg_sizes):
                name = f"{tract}-BG{b}"
                units.append(name)
                parents.append(tract)
                made[name] = rng.multinomial(int(size), rng.dirichlet(kappa[2] * q_tract + 1e-3))
    geo = Geography(units, parents, list(LEVELS))
    return geo, np.array([made[name] for name in geo.ids[geo.leaves]], dtype=np.int64)


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
    geo, truth = synthetic_pennsylvania(counties, random_seed=seed)
    census = census_queries(geo, TableSpec.hispanic_race(), QUERIES)
    sigmas = production_sigmas(census)
    invariants = census.unit_invariants(["State"], [int(truth.sum())])
    mechanism = NoisyMeasurements(census.matrix, sigmas, invariants=invariants)
    return CensusRelease(geo, truth, census, sigmas, invariants, mechanism)
