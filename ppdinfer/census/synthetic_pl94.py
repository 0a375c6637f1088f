r"""A seeded synthetic state in the shape of the DAS spine, down to blocks: PL94 persons, housing units, group quarters.

**Geography.** County populations are given (by default Pennsylvania's 67 counties, as in
:func:`ppdinfer.census.synthetic.synthetic_state`). County c of :math:`N_c` people gets ``round(N_c /
tract_people)`` tracts (at least one), sizes multinomial over a Dirichlet(20) split; a tract of T people
gets ``round(T / block_group_people)`` block groups (1 to 9), sizes multinomial over a Dirichlet(10)
split; a block group of N people gets ``B = round(N / block_people)`` blocks (1 to 1,000). With 3,800,
1,300 and 39 people, Pennsylvania comes out at about 3,400 tracts, 10,000 block groups and 330,000
blocks.

**Group quarters.** In a block group of N people the facilities of GQ type t (hhgq 1..7: correctional,
juvenile, nursing, other institutional, college, military, other non-institutional) number
:math:`F_t \sim \mathrm{Poisson}(N\,\gamma\,s_t / m_t)` (gamma = ``gq_share``, s_t the type's share of the
GQ population and m_t its mean facility size, :data:`GQ_TYPES`); a facility holds
:math:`\mathrm{Geometric}(1 / m_t) \ge 1` people (facilities that would overflow N are dropped) and
sits in a uniformly chosen block of its block group.

**Households.** The :math:`H = N - \text{(GQ people)}` household people of a block group fall in its
blocks as :math:`\mathrm{Multinomial}(H, w / \sum w)` with block weights :math:`w_j = 0` with probability
``empty_share`` and else :math:`\mathrm{LogNormal}(0, 1)`: many empty blocks and a long right tail (about
28 % of the blocks end up with nobody, a realistic shape: Pennsylvania's 2020 blocks were about as often
empty; not an official figure). A block of h household people has :math:`O = 1[h > 0] +
\mathrm{Binomial}(h - 1, 1/2.5)` occupied housing units and :math:`V \sim \mathrm{Poisson}(0.11\,O + 0.3\,1[h
= 0])` vacant ones.

**Composition.** Hispanic origin x race (2 x 63 = 126 cells) shares follow a Dirichlet hierarchy around
illustrative statewide shares :data:`PL94_STATE_SHARES` (mostly single races; two or more races spread
over the 57 combinations, white-black, white-aian, white-asian and white-sor the common ones; not official
figures), and the adult share (votingage 18+) varies by tract:

.. math::

    q_c \sim \mathrm{Dir}(\kappa_c q_s + \epsilon), \quad q_t \sim \mathrm{Dir}(\kappa_t q_{c(t)} + \epsilon),
    \quad q_b \sim \mathrm{Dir}(\kappa_b q_{t(b)} + \epsilon), \quad a_t \sim \mathrm{Beta}(80 a, 80 (1 - a)),

with (kappa_c, kappa_t, kappa_b) = (30, 8, 50), epsilon = 0.001 and a = ``adult_share`` (0.78). A block's
household people are :math:`\mathrm{Multinomial}(h, ((1 - a_t) q_b, a_t q_b))` over votingage x hispanic x
cenrace (hhgq = household); a facility's s people are adults with the type's probability (1 for
correctional and nursing facilities and military quarters, so no minor is ever in a nursing facility,
the production structural zero ``nurse_nva_0``), then hispanic x cenrace by :math:`q_b`.

**Geocodes** (a documented choice: a reader infers widths from the data). State: the AIAN-branch flag
"0" + the 2-digit state FIPS ("042"); County: + the 3-digit county FIPS (Pennsylvania's counties, in
:func:`~ppdinfer.census.synthetic.pa_county_populations` order, are 001, 003, ..., 133, their real codes; other names get 001, 003,
... in the order given). The units are in geocode order, the counties too whatever order they were given in,
as a file written from the state reads back; Tract: + a 4-digit spine index (0001, ...); Block_Group: + a 2-digit index (01,
...); Block: + the 16-character tabulation identity SS CCC TTTTTT G BBBB (state, county, tabulation tract
code, block-group digit, block code whose first digit is that digit). Here spine tracts and block groups
are the tabulation ones (tract code = 100 x the spine index); in the real file the spine's block groups
are "optimized" and differ from tabulation block groups.

The truth is sparse (``scipy.sparse.csr_matrix``, blocks x 2,016): Pennsylvania's blocks dense
would take 5.3 GB.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from ..rng import SeedLike, block_generator, root_seed
from ..validation import positive_int, probability
from .geography import Geography
from .pl94 import CENRACE, PERSON
from .synthetic import _county_populations, pa_county_populations

__all__ = ["GQ_TYPES", "LEVELS", "PL94_STATE_SHARES", "SyntheticPL94State", "synthetic_pl94_state"]

#: The spine levels, top down (the US level is national and not made here).
LEVELS = ("State", "County", "Tract", "Block_Group", "Block")
#: GQ types 1..7 (hhgq order): share of the GQ population, mean facility size, share of adults (illustrative).
GQ_TYPES = {
    "correctional": (0.200, 250.0, 1.0),
    "juvenile": (0.010, 20.0, 0.15),
    "nursing": (0.220, 90.0, 1.0),
    "other_institutional": (0.020, 30.0, 0.9),
    "college": (0.350, 300.0, 0.99),
    "military": (0.003, 150.0, 1.0),
    "other_noninstitutional": (0.197, 25.0, 0.85),
}
_GQ = np.array(list(GQ_TYPES.values()))
_HOUSEHOLD_SIZE = 2.5
_VACANCY = (0.11, 0.3)
_EPSILON = 1e-3


def _state_shares() -> np.ndarray:
    """Illustrative statewide hispanic x cenrace shares (126 cells, hispanic * 63 + cenrace), roughly
    Pennsylvania's 2020 pattern; not official figures."""
    named = {
        0: {"white": 0.735, "black": 0.100, "aian": 0.0012, "asian": 0.038, "nhopi": 0.0003, "sor": 0.0045,
            "white-black": 0.0085, "white-aian": 0.0045, "white-asian": 0.0040, "white-sor": 0.0060},
        1: {"white": 0.0150, "black": 0.0060, "aian": 0.0007, "asian": 0.0003, "nhopi": 0.0001, "sor": 0.0270,
            "white-black": 0.0020, "white-aian": 0.0015, "white-asian": 0.0003, "white-sor": 0.0250},
    }  # fmt: skip
    rest = {0: 0.006, 1: 0.008}  # the other 53 combinations, in proportion to 0.25 ** (races - 2)
    shares = np.zeros((2, 63))
    for hispanic, cells in named.items():
        weight = np.array([0.0 if race in cells else 0.25 ** (race.count("-") - 1) for race in CENRACE])
        weight[:6] = 0.0
        shares[hispanic] = rest[hispanic] * weight / weight.sum()
        for race, share in cells.items():
            shares[hispanic, CENRACE.index(race)] = share
    return (shares / shares.sum()).ravel()


#: Illustrative statewide shares of the 126 hispanic x cenrace cells (hispanic * 63 + cenrace; not official).
PL94_STATE_SHARES = _state_shares()


@dataclass(frozen=True, eq=False)
class SyntheticPL94State:
    """A synthetic state's truth on its geography's leaves (blocks, or block groups when blocks are not kept).

    Attributes
    ----------
    geography : Geography
        Ids are spine geocodes, the root the State unit; level names as in the file.
    persons : scipy.sparse.csr_matrix
        Leaves x 2,016 (``pl94.PERSON`` cells), int64, in the geography's leaf order.
    units : numpy.ndarray
        Leaves x 2: vacant and occupied housing units (int64).
    gq_facilities : numpy.ndarray
        Leaves x 8: facilities of each hhgq type; type 0 (households) counts housing units (vacant + occupied).
    tabulation_geoid : numpy.ndarray
        The tabulation GEOID of every unit (geography order): state 2, county 5, tract 11, block group 12 and
        block 15 digits.
    county_names : dict
        County geocode -> county name.
    """

    geography: Geography
    persons: sp.csr_matrix
    units: np.ndarray
    gq_facilities: np.ndarray
    tabulation_geoid: np.ndarray
    county_names: dict

    @property
    def partition(self) -> str:
        """The state's partition id ('042'): the root's geocode."""
        return str(self.geography.ids[0])

    def indicator(self, level: str) -> sp.csr_matrix:
        """The 0/1 matrix (units of ``level`` x leaves) of which leaves each unit holds, units in geography order."""
        geo = self.geography
        at = geo.level(level)
        indptr = np.append(geo.leaf_start[at], geo.leaf_stop[at[-1]])
        data = np.ones(geo.n_leaves, dtype=np.int64)
        return sp.csr_matrix((data, np.arange(geo.n_leaves), indptr), shape=(at.size, geo.n_leaves))

    def aggregate(self, level: str, values=None):
        """``values`` (leaves x k, dense or sparse; default ``persons``) summed to the units of ``level``.

        Examples
        --------
        >>> state = synthetic_pl94_state(["Cameron"], random_seed=1)
        >>> counties = state.aggregate("County")
        >>> counties.shape, int(counties.sum()) == int(pa_county_populations()["Cameron"])
        ((1, 2016), True)
        """
        values = self.persons if values is None else values
        summed = self.indicator(level) @ values
        return summed.tocsr() if sp.issparse(summed) else np.asarray(summed)


def synthetic_pl94_state(
    populations=None,
    random_seed: SeedLike = None,
    *,
    levels=LEVELS,
    state_fips: int = 42,
    tract_people: int = 3800,
    block_group_people: int = 1300,
    block_people: int = 39,
    empty_share: float = 0.29,
    adult_share: float = 0.78,
    gq_share: float = 0.033,
    concentrations=(30.0, 8.0, 50.0),
) -> SyntheticPL94State:
    """A synthetic state down to blocks with the PL94 persons histogram, housing units and GQ facilities.

    Parameters
    ----------
    populations : pandas.Series, dict, int or sequence of str, optional
        County populations as in :func:`ppdinfer.census.synthetic.synthetic_state` (default Pennsylvania's 67).
    random_seed : int or Generator
        The same seed and counties give the same state (the k-th county asked for draws from stream k).
    levels : sequence of str
        The levels kept, top down, 'State' first (a subset of :data:`LEVELS`); without 'Block' the leaves
        are the finest level kept, their truth summed over its blocks (the same blocks for a seed).
    state_fips : int
        The 2-digit state FIPS code (1 to 99).
    tract_people, block_group_people, block_people : int
        Typical tract, block-group and block populations (the block figure counts empty blocks).
    empty_share : float
        The probability that a block gets no household weight (module docstring).
    adult_share : float
        The mean share aged 18 and over.
    gq_share : float
        The expected share of people in group quarters.
    concentrations : tuple of 3 floats
        (kappa_c, kappa_t, kappa_b) of the Dirichlet hierarchy.

    Examples
    --------
    >>> state = synthetic_pl94_state(["Fulton"], random_seed=0)
    >>> state.geography.level_names, state.persons.shape[1], state.partition
    (('State', 'County', 'Tract', 'Block_Group', 'Block'), 2016, '042')
    >>> state.geography.ids[1], state.tabulation_geoid[1]       # Fulton County is FIPS 42057
    ('042057', '42057')
    >>> leaf = state.geography.ids[state.geography.leaves[0]]
    >>> len(leaf), leaf[:12], leaf[12:]
    (28, '042057000101', '4205700010011000')
    """
    populations = _county_populations(populations)
    levels = _levels(levels)
    fips = positive_int(state_fips, "state_fips")
    if fips > 99:
        raise ValueError(f"state_fips must be a 2-digit FIPS code (1 to 99), got {state_fips!r}")
    empty_share = probability(empty_share, "empty_share", open_interval=False)
    if empty_share == 1:
        raise ValueError("empty_share must be below 1 (some block must be able to hold people)")
    adult_share = probability(adult_share, "adult_share")
    gq_share = probability(gq_share, "gq_share", open_interval=False)
    kappa = np.asarray(concentrations, dtype=float)
    if kappa.shape != (3,) or np.any(~np.isfinite(kappa) | (kappa <= 0)):
        raise ValueError(f"concentrations must be 3 finite positive numbers, got {concentrations!r}")
    params = _Params(
        positive_int(tract_people, "tract_people"),
        positive_int(block_group_people, "block_group_people"),
        positive_int(block_people, "block_people"),
        empty_share,
        adult_share,
        gq_share,
        kappa,
    )
    _check_blocks(populations, params.block_people)
    root = root_seed(random_seed)
    counties = [
        _county(block_generator(root, k), int(people), params) for k, people in enumerate(populations.to_numpy())
    ]
    # counties in geocode order, as a file written from the state reads back, whatever order they were asked in
    order = np.argsort(_county_codes(populations.index.tolist()), kind="stable")
    names = populations.index[order].tolist()
    return _assemble(names, [counties[k] for k in order], f"{fips:02d}", levels)


@dataclass(frozen=True)
class _Params:
    tract_people: int
    block_group_people: int
    block_people: int
    empty_share: float
    adult_share: float
    gq_share: float
    kappa: np.ndarray


def _levels(levels) -> tuple:
    """``levels`` checked: distinct names of :data:`LEVELS` in top-down order, 'State' first."""
    if isinstance(levels, str):
        raise ValueError(f"levels must be a sequence of level names, not one string ({[levels]!r})")
    levels = tuple(levels)
    unknown = [level for level in levels if level not in LEVELS]
    if unknown:
        raise ValueError(f"levels: {unknown!r} are not levels of {LEVELS}")
    order = [LEVELS.index(level) for level in levels]
    if not levels or levels[0] != "State" or order != sorted(set(order)):
        raise ValueError(f"levels must be distinct levels of {LEVELS} in that order, 'State' first, got {levels!r}")
    return levels


def _check_blocks(populations, block_people: int) -> None:
    """Refuse a state of more than 10 million blocks (the US has 8.1 million)."""
    blocks = populations.sum() / block_people
    if blocks > 10_000_000:
        raise ValueError(
            f"populations and block_people make about {blocks:,.0f} blocks, more than 10,000,000 (the US has "
            f"8.1 million): check the populations ({populations.sum():,} people) and block_people ({block_people})"
        )


def _county(rng: np.random.Generator, people: int, params: _Params) -> dict:
    """One county: block groups per tract, blocks per block group, household cells (blocks x 252: votingage x
    hispanic x cenrace, hhgq 0), facilities (block within the county, type) with their 252 cells, housing units."""
    q_county = rng.dirichlet(params.kappa[0] * PL94_STATE_SHARES + _EPSILON)
    n_tracts = max(1, round(people / params.tract_people))
    tract_sizes = rng.multinomial(people, rng.dirichlet(np.full(n_tracts, 20.0)))
    out = {"groups": [], "blocks": [], "households": [], "facilities": [], "gq_cells": [], "n_blocks": 0}
    for tract_size in tract_sizes:
        q_tract = rng.dirichlet(params.kappa[1] * q_county + _EPSILON)
        adults = rng.beta(80 * params.adult_share, 80 * (1 - params.adult_share))
        n_groups = min(9, max(1, round(int(tract_size) / params.block_group_people)))
        out["groups"].append(n_groups)
        for group_size in rng.multinomial(int(tract_size), rng.dirichlet(np.full(n_groups, 10.0))):
            q_group = rng.dirichlet(params.kappa[2] * q_tract + _EPSILON)
            _block_group(rng, int(group_size), np.concatenate([(1 - adults) * q_group, adults * q_group]), params, out)
    households = np.concatenate(out["households"])
    people_in = households.sum(axis=1)
    occupied = (people_in > 0) + rng.binomial(np.maximum(people_in - 1, 0), 1 / _HOUSEHOLD_SIZE)
    vacant = rng.poisson(_VACANCY[0] * occupied + _VACANCY[1] * (people_in == 0))
    return {
        "groups": np.array(out["groups"]),
        "blocks": np.array(out["blocks"]),
        "households": sp.coo_matrix(households),
        "facilities": np.concatenate(out["facilities"]),
        "gq_cells": sp.coo_matrix(np.concatenate(out["gq_cells"])),
        "units": np.column_stack([vacant, occupied]).astype(np.int64),
    }


def _block_group(rng: np.random.Generator, people: int, shares: np.ndarray, params: _Params, out: dict) -> None:
    """One block group of ``people`` into ``out``: its blocks' household cells and its facilities (``shares``:
    the 252 votingage x hispanic x cenrace shares of its households)."""
    n_blocks = min(1000, max(1, round(people / params.block_people)))
    types = np.repeat(np.arange(1, 8), rng.poisson(people * params.gq_share * _GQ[:, 0] / _GQ[:, 1]))
    sizes = rng.geometric(1 / _GQ[types - 1, 1])
    fits = np.cumsum(sizes) <= people
    types, sizes = types[fits], sizes[fits]
    weights = np.where(rng.random(n_blocks) < params.empty_share, 0.0, rng.lognormal(0.0, 1.0, n_blocks))
    if weights.sum() == 0:
        weights[rng.integers(n_blocks)] = 1.0
    in_households = rng.multinomial(people - int(sizes.sum()), weights / weights.sum())
    out["households"].append(rng.multinomial(in_households, shares))
    origin = shares[:126] + shares[126:]
    grown = rng.binomial(sizes, _GQ[types - 1, 2])
    cells = np.concatenate([rng.multinomial(sizes - grown, origin), rng.multinomial(grown, origin)], axis=1)
    where = out["n_blocks"] + rng.integers(n_blocks, size=types.size)
    out["facilities"].append(np.column_stack([where, types]))
    out["gq_cells"].append(cells.reshape(-1, 252))
    out["blocks"].append(n_blocks)
    out["n_blocks"] += n_blocks


def _county_codes(names: list) -> list:
    """3-digit county FIPS codes: Pennsylvania's real ones when every name is a Pennsylvania county, else 001, 003,
    ... in the order given."""
    known = pa_county_populations().index.tolist()
    position = [known.index(name) for name in names] if all(name in known for name in names) else range(len(names))
    return [f"{2 * k + 1:03d}" for k in position]


def _assemble(names: list, counties: list, state: str, levels: tuple) -> SyntheticPL94State:
    """The kept levels' units (geocodes, parents, tabulation GEOIDs) and the leaves' truth from the counties' blocks."""
    spine = {level: [] for level in LEVELS}  # per level: (geocode, parent index in the level above, GEOID)
    spine["State"].append(("0" + state, -1, state))
    county_names = {}
    for name, code, county in zip(names, _county_codes(names), counties, strict=True):
        geocode = spine["State"][0][0] + code
        county_names[geocode] = name
        spine["County"].append((geocode, 0, state + code))
        groups, blocks = iter(county["groups"]), iter(county["blocks"])
        for t in range(1, county["groups"].size + 1):
            tract = (geocode + f"{t:04d}", len(spine["County"]) - 1, state + code + f"{100 * t:06d}")
            spine["Tract"].append(tract)
            for g in range(1, next(groups) + 1):
                group = (tract[0] + f"{g:02d}", len(spine["Tract"]) - 1, tract[2] + str(g))
                spine["Block_Group"].append(group)
                parent = len(spine["Block_Group"]) - 1
                for j in range(next(blocks)):
                    block = f"{g}{j:03d}"
                    spine["Block"].append((group[0] + group[2] + block, parent, tract[2] + block))
    persons, units, facilities = _block_truth(counties)
    leaf_of = np.arange(len(spine["Block"]))  # each block's unit at the finest kept level
    for level in LEVELS[:0:-1]:
        if level == levels[-1]:
            break
        leaf_of = np.array([parent for _, parent, _ in spine[level]])[leaf_of]
    to_leaf = sp.csr_matrix((np.ones(leaf_of.size, dtype=np.int64), (leaf_of, np.arange(leaf_of.size))))
    ids, parents = [spine["State"][0][0]], [None]
    for upper, level in zip(levels, levels[1:]):
        ids += [geocode for geocode, _, _ in spine[level]]
        parents += [spine[upper][k][0] for k in _ancestors(spine, upper, level)]
    geography = Geography(ids, parents, levels)
    geoid = {geocode: tab for level in levels for geocode, _, tab in spine[level]}
    return SyntheticPL94State(
        geography,
        (to_leaf @ persons).tocsr(),
        np.asarray(to_leaf @ units),
        np.asarray(to_leaf @ facilities),
        np.array([geoid[unit] for unit in geography.ids], dtype=object),
        county_names,
    )


def _ancestors(spine: dict, upper: str, level: str) -> np.ndarray:
    """For each unit of ``level``, the index of its ancestor among the units of ``upper``."""
    up = np.arange(len(spine[level]))
    for between in LEVELS[LEVELS.index(level) : LEVELS.index(upper) : -1]:
        up = np.array([parent for _, parent, _ in spine[between]], dtype=np.int64)[up]
    return up


def _block_truth(counties: list):
    """The blocks' persons (sparse blocks x 2,016), housing units (blocks x 2) and facilities (blocks x 8)."""
    rows, cells, counts, offset = [], [], [], 0
    units = np.concatenate([county["units"] for county in counties])
    facilities = np.zeros((units.shape[0], 8), dtype=np.int64)
    for county in counties:
        households, gq_cells = county["households"], county["gq_cells"]
        where, types = county["facilities"].T
        rows += [households.row + offset, where[gq_cells.row] + offset]
        cells += [households.col, types[gq_cells.row] * 252 + gq_cells.col]
        counts += [households.data, gq_cells.data]
        np.add.at(facilities, (where + offset, types), 1)
        offset += households.shape[0]
    facilities[:, 0] = units.sum(axis=1)
    persons = sp.csr_matrix(
        (np.concatenate(counts), (np.concatenate(rows), np.concatenate(cells))), shape=(offset, PERSON.n_cells)
    )
    persons.sum_duplicates()
    return persons.astype(np.int64), units, facilities
