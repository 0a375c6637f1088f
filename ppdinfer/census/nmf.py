r"""Read one state of the Census Bureau's 2020 Noisy Measurement File (parquet), streaming, into arrays.

:func:`read_nmf` reads the state's partitions of each level in two projected passes
(:mod:`.nmf_layout`). The result, a :class:`NoisyMeasurementFile`, holds for every (level, query) the
measured units, a 2-D array of their values (units x values, C order over the query's shape) and their
variances, plus the constraint rows, and turns them into the count queries and the mechanism of
:mod:`ppdinfer.census` (:meth:`NoisyMeasurementFile.release`).

**Geography.** The DAS spine: each level's geocodes have one width (inferred from the data, never
assumed), and a unit's parent is the unit of the nearest level read above whose geocode is a prefix of
its own. One artificial root, id ``ROOT_ID`` ('US') at level 'US', holds the state's branch units (the
non-AIAN '0SS...' and AIAN '1SS...' parts), or the selected counties. Block geocodes end with the
16-character tabulation block identity (state 2, county 3, tract 6, block-group digit, block 4), from
which :meth:`NoisyMeasurementFile.units` derives tabulation GEOIDs.

**Storage.** Values are kept in the narrowest integer type that holds every value of the (level, query)
(int16, else int32, else int64): every value of a synthetic Pennsylvania (its blocks' detailed queries
alone are about 330,000 x 2,016 values) fits int16, and all of them take 1.7 GiB (benchmarks/
census_nmf_file.py) rather than about 3.4 GiB as int32; cast before arithmetic that could leave that range.

**Constraints.** Stored as read; :meth:`NoisyMeasurementFile.release` imposes the equality constraints
that are exact functions of the target table's cells ('total_con' and, where the table separates
nursing-facility residents under 18, 'nurse_nva_0_con') and the given state total; the inequality
constraints ('hhgq_total_lb_con', 'hhgq_total_ub_con') are not (a NoisyMeasurements mechanism has none):
:meth:`NoisyMeasurementFile.check_constraints` says whether given cells satisfy them, and
:func:`~ppdinfer.census.grouped_release.grouped_release` reads them as bounds that :func:`~ppdinfer.census.people.sample_people` keeps.

Sources (facts, no code): the geography and bypassed units as in uscensusbureau/DAS_2020_GLS_Uncertainty_Evaluation
(``GLS/main_two_pass_alg.py``); the block GEOID from the last 16 characters as in sbaldasty/dpvalue
(``src/noisyvalue/census.py``).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import scipy.sparse as sp

from ..validation import integer_valued, non_negative_int
from .nmf_layout import (
    ROOT_ID,
    NMFLayout,
    Rows,
    build_geography,
    checked_counties,
    chosen_levels,
    constraint_groups,
    fill_level,
    scan_level,
    sorted_rows,
    state_key,
    state_partitions,
    unit_indices,
)
from .nmf_release import measurement_release
from .pl94 import PERSON, UNIT

__all__ = ["ROOT_ID", "NoisyMeasurementFile", "read_nmf"]

_SCHEMAS = {"person": PERSON, "unit": UNIT}
#: Tabulation GEOID widths of the levels above blocks (state, county, tract, block group).
_TABULATION_WIDTHS = {"State": 2, "County": 5, "Tract": 11, "Block_Group": 12}


def read_nmf(root, state, *, table: str = "person", levels=None, counties=None, state_total=None):
    """Read one state of a 2020 Noisy Measurement File (parquet) into a :class:`NoisyMeasurementFile`.

    Parameters
    ----------
    root : str or Path
        The folder holding ``US_Person_PL_PROD`` and/or ``US_Unit_PL_PROD``.
    state : int or str
        A FIPS code (42 or '42': every branch partition of the state found, '042' and '142') or a
        3-character partition id ('042': that branch only).
    table : {'person', 'unit'}
        Persons (:data:`~ppdinfer.census.pl94.PERSON`, 2,016 cells) or housing units (:data:`~ppdinfer.census.pl94.UNIT`).
    levels : sequence of str, optional
        The levels to read (default every level folder found but the national 'US'); a level left out
        in the middle is fine: parents are found by geocode prefix.
    counties : sequence of str, optional
        County geocodes as in the file (spine codes): read only their rows (a filter on the geocode
        prefix, pushed into the parquet scan); levels above County are then not read and the root holds
        the counties.
    state_total : int, optional
        The state's exact population (not in the file): the invariant total of the root.

    Raises
    ------
    FileNotFoundError
        No root, no table folder, no level folder, or no partition of the state (the message lists those found).
    ValueError
        An unknown level or query name, a query_shape that disagrees with the schema, a value list of the
        wrong length, a variance not finite and > 0, a geocode without a parent, mixed geocode widths in
        one level, a unit measured twice for one query; the message names the file, unit and query.

    Examples
    --------
    A county of two tracts of housing units (occupancy: vacant, occupied), written with pyarrow:

    >>> import tempfile, pathlib, pyarrow as pa, pyarrow.parquet as pq
    >>> root = pathlib.Path(tempfile.mkdtemp())
    >>> def write(level, kind, rows):
    ...     folder = root / "US_Unit_PL_PROD" / f"{level}.parquet" / kind / "State=042"
    ...     folder.mkdir(parents=True)
    ...     pq.write_table(pa.table(rows), folder / "part-0.parquet")
    >>> for level, codes in [("County", ["042001"]), ("Tract", ["04200101", "04200102"])]:
    ...     n = len(codes)
    ...     write(level, "DPQuery", {"geocode": codes, "query_name": ["detailed_dpq"] * n,
    ...                              "query_shape": [[2]] * n, "value": [[3, 5]] * n, "variance": [4.0] * n})
    ...     write(level, "Constraint", {"geocode": codes, "query_name": ["total_con"] * n, "query_shape": [[1]] * n,
    ...                                 "value": [[8 * (3 - n)]] * n, "sign": ["="] * n})
    >>> nmf = read_nmf(root, 42, table="unit")
    >>> nmf.geography.ids.tolist(), nmf.queries("Tract")
    (['US', '042001', '04200101', '04200102'], ('detailed',))
    >>> units, values, variances = nmf.measurements("Tract", "detailed")
    >>> values.tolist(), variances.tolist()
    ([[3, 5], [3, 5]], [4.0, 4.0])
    >>> census, mechanism, y = nmf.release()
    >>> y.tolist(), mechanism.invariant_values.tolist()    # the county's and the tracts' exact totals
    ([3, 5, 3, 5, 3, 5], [16, 8, 8])
    """
    if table not in _SCHEMAS:
        raise ValueError(f"table must be one of {tuple(_SCHEMAS)}, got {table!r}")
    schema = _SCHEMAS[table]
    layout = NMFLayout.open(root, table)
    counties = checked_counties(counties)
    levels = chosen_levels(layout, levels, counties)
    partitions = state_partitions(layout, levels, state)
    state_total = None if state_total is None else non_negative_int(state_total, "state_total")
    scans = {level: scan_level(layout, level, partitions, schema, counties) for level in levels}
    if counties is not None:
        top, units = levels[0], set(scans[levels[0]].units.to_pylist())
        for county in counties:
            if (county not in units) if top == "County" else not any(u.startswith(county) for u in units):
                raise ValueError(f"counties: county {county!r} is not in the file's {top} level of state {state!r}")
    geography = build_geography(scans)
    measured, constraints = {}, {}
    for level, found in scans.items():
        first = int(geography.level(level)[0])
        for query, rows in fill_level(found, level, first, geography, schema).items():
            measured[level, query] = rows
        for name, (geocodes, values, sign) in found.constraints.items():
            units = unit_indices(geocodes, found, first)
            order = sorted_rows(units, level, f"constraint {name!r}", geography)
            constraints[level, name] = Rows(units[order], values[order], sign=sign)
    fips, explicit = state_key(state)
    return NoisyMeasurementFile(
        geography, schema, explicit or fips, table, partitions, measured, constraints, state_total
    )


class NoisyMeasurementFile:
    """The noisy measurements and constraints of one state (or some of its counties), read by :func:`read_nmf`.

    Attributes
    ----------
    geography : Geography
        Root ``ROOT_ID`` (level 'US'), then the levels read; ids are the file's geocodes.
    schema : HistogramSchema
        :data:`~ppdinfer.census.pl94.PERSON` or :data:`~ppdinfer.census.pl94.UNIT`.
    state, table : str
        The state (2-digit FIPS or partition id) and 'person' or 'unit'.
    partitions : tuple of str
        The State=SSS partitions read.
    state_total : int or None
        The root's exact total, if given.

    Examples
    --------
    One county's occupancy (vacant, occupied) measured once (see :func:`read_nmf` for a longer example):

    >>> import tempfile, pathlib, pyarrow as pa, pyarrow.parquet as pq
    >>> root = pathlib.Path(tempfile.mkdtemp())
    >>> folder = root / "US_Unit_PL_PROD" / "County.parquet" / "DPQuery" / "State=042"
    >>> folder.mkdir(parents=True)
    >>> rows = {"geocode": ["042001"], "query_name": ["detailed_dpq"], "query_shape": [[2]], "value": [[3, 5]],
    ...         "variance": [4.0]}
    >>> pq.write_table(pa.table(rows), folder / "part-0.parquet")
    >>> nmf = read_nmf(root, "42", table="unit")
    >>> nmf.summary()[["level", "query", "units", "values_per_unit", "dtype"]].values.tolist()
    [['County', 'detailed', 1, 2, 'int16']]
    >>> nmf.bypassed("County").tolist(), nmf.tabulation_geoid("042001")   # no Block level: no GEOID
    ([], None)
    """

    def __init__(self, geography, schema, state, table, partitions, measured, constraints, state_total=None):
        self.geography, self.schema, self.state, self.table = geography, schema, state, table
        self.partitions, self.state_total = tuple(partitions), state_total
        self._measured, self._constraints = measured, constraints
        self._tabulation = None

    @property
    def levels(self) -> tuple:
        """The levels read, top down (the root's 'US' excluded)."""
        return self.geography.level_names[1:]

    def _level(self, level: str) -> str:
        if level not in self.levels:
            raise ValueError(f"level {level!r} was not read; levels read: {self.levels}")
        return level

    def queries(self, level: str) -> tuple:
        """The queries measured at ``level``, in the production order."""
        self._level(level)
        return self._in_order({q for lv, q in self._measured if lv == level})

    def _in_order(self, queries) -> tuple:
        """Query names in the production order, any other after them by name."""
        order = self.schema.default_queries()
        return tuple(sorted(queries, key=lambda q: (order.index(q) if q in order else len(order), q)))

    def measurements(self, level: str, query: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(unit indices into the geography, ascending; values (units x prod(query shape)), C order; variances).

        Values are in the narrowest integer type holding them (int16, int32 or int64): cast before arithmetic.
        """
        if query not in self.queries(level):
            raise ValueError(f"query {query!r} is not measured at level {level!r} (measured: {self.queries(level)})")
        rows = self._measured[level, query]
        return rows.units, rows.values, rows.variances

    def bypassed(self, level: str) -> np.ndarray:
        """The unit indices of ``level`` with no noisy measurement (bypassed by the spine optimization)."""
        units = self.geography.level(self._level(level))
        measured = np.zeros(self.geography.n_units, dtype=bool)
        for q in self.queries(level):
            measured[self._measured[level, q].units] = True
        return units[~measured[units]]

    def constraint_names(self, level: str) -> tuple:
        """The constraint names with rows at ``level``, sorted."""
        self._level(level)
        return tuple(sorted(name for lv, name in self._constraints if lv == level))

    def constraints(self, level: str, name: str) -> tuple[np.ndarray, np.ndarray, str]:
        """(unit indices, values (units x values, int64), sign '=', '<=' or '>=') of one constraint at ``level``."""
        if name not in self.constraint_names(level):
            raise ValueError(f"no constraint {name!r} at level {level!r} (found: {self.constraint_names(level)})")
        rows = self._constraints[level, name]
        return rows.units, rows.values, rows.sign

    def summary(self) -> pd.DataFrame:
        """One row per (level, query): units measured, values per unit, storage type, variance range, and
        the level's units and bypassed units."""
        records = []
        for level in self.levels:
            n_level, n_bypassed = self.geography.level(level).size, self.bypassed(level).size
            for q in self.queries(level):
                rows = self._measured[level, q]
                records.append(
                    {
                        "level": level,
                        "query": q,
                        "units": rows.units.size,
                        "values_per_unit": rows.values.shape[1],
                        "dtype": str(rows.values.dtype),
                        "variance_min": float(rows.variances.min()),
                        "variance_max": float(rows.variances.max()),
                        "level_units": n_level,
                        "bypassed": n_bypassed,
                    }
                )
        return pd.DataFrame(records)

    def __repr__(self) -> str:
        geo = self.geography
        counts = ", ".join(f"{level} {geo.level(level).size}" for level in self.levels)
        return (
            f"NoisyMeasurementFile(table={self.table!r}, state={self.state!r}, partitions={list(self.partitions)}, "
            f"units: {counts}; {len(self._measured)} (level, query) measurements)"
        )

    # -- tabulation geography -------------------------------------------------------------------------------

    def _tabulation_ids(self) -> np.ndarray:
        if self._tabulation is not None:
            return self._tabulation
        geo = self.geography
        out = np.full(geo.n_units, None, dtype=object)
        if "Block" in self.levels:
            tails = [str(g)[-16:] for g in geo.ids[geo.leaves]]
            out[geo.leaves] = [t[:11] + t[12:] for t in tails]
            for level in self.levels[:-1]:
                if level not in _TABULATION_WIDTHS:
                    continue
                prefixes, codes = np.unique([t[: _TABULATION_WIDTHS[level]] for t in tails], return_inverse=True)
                units = geo.level(level)
                low = np.minimum.reduceat(codes, geo.leaf_start[units])
                high = np.maximum.reduceat(codes, geo.leaf_start[units])
                out[units[low == high]] = prefixes[low[low == high]]
        self._tabulation = out
        return out

    def tabulation_geoid(self, unit):
        """The tabulation GEOID of a unit (id or index): a block's 15 digits (its last 16 characters without
        the block-group digit); above blocks, the prefix of that width (state 2, county 5, tract 11, block
        group 12) its blocks share, else None; None for the root and when no Block level was read."""
        index = unit if isinstance(unit, int | np.integer) else self.geography.index(unit)
        if not 0 <= index < self.geography.n_units:
            raise ValueError(f"unit index {unit!r} is outside 0..{self.geography.n_units - 1}")
        return self._tabulation_ids()[index]

    def units(self) -> pd.DataFrame:
        """One row per unit (breadth-first order): id, level, parent id, bypassed, tabulation GEOID."""
        geo = self.geography
        bypassed = np.zeros(geo.n_units, dtype=bool)
        for level in self.levels:
            bypassed[self.bypassed(level)] = True
        parent = np.where(geo.parent >= 0, geo.ids[np.maximum(geo.parent, 0)], None)
        return pd.DataFrame(
            {
                "unit": geo.ids,
                "level": np.array(geo.level_names)[geo.depth],
                "parent": parent,
                "bypassed": bypassed,
                "tabulation_geoid": self._tabulation_ids(),
            }
        )

    # -- the release as count queries ---------------------------------------------------------------------

    def release(self, table=None, levels=None, queries=None, *, invariants: bool = True):
        """The release as ``(census, mechanism, y)``: count queries over the leaves' cells, the mechanism, the values.

        One query per measured (unit, query, value), or per sum of values where the target table is coarser
        (:mod:`ppdinfer.census.nmf_release`), in the order of :func:`~ppdinfer.census.geography.census_queries` (unit breadth first,
        then query kind in production order, then part); bypassed units have none. The cells are the target
        table's at the leaves: the finest of the levels used. The matrix has levels x queries x leaves x
        table cells entries: a county's blocks, or a state's block groups of a coarser table, not a state's
        blocks of the full histogram.

        Parameters
        ----------
        table : TableSpec or pl94.Coarsening, optional
            The target table: default the full histogram with every query; a ``schema.coarsen(...)``.
        levels : sequence of str, optional
            The read levels whose measurements are used (default all); the finest is the leaf level.
        queries : sequence of str, optional
            The queries used (default every measured one).
        invariants : bool
            Whether the mechanism keeps the exact invariants (below); :class:`~ppdinfer.mechanisms.NoisyMeasurements` checks them
            as a dense matrix (invariants x cells), refused beyond 1 GiB.

        Returns
        -------
        census : CensusQueries
        mechanism : NoisyMeasurements
            Discrete Gaussian noise of sigma = sqrt(variance) (summed variances for summed values);
            invariants: the root's total (if ``state_total`` was given) and every equality constraint of the
            levels used that is an exact function of the table's cells ('total_con'; 'nurse_nva_0_con' where
            the table separates nursing x 0-17). Inequality constraints are not imposed (see
            :meth:`check_constraints`).
        y : ndarray of int64
        """
        return measurement_release(self, table, levels, queries, invariants=invariants)

    def check_constraints(self, cells) -> dict:
        """Whether ``cells`` (leaves x cells of the full histogram) satisfy each inequality constraint read.

        Returns {(level, name): bool array, one per unit of :meth:`constraints` (level, name)}, True where
        every value of the unit's constraint holds ('hhgq_total_lb_con': hhgq totals >= the bounds,
        'hhgq_total_ub_con': <=); constraints this reader does not interpret are left out. ``cells`` may be a
        scipy sparse matrix (a state's blocks: 333,000 x 2,016 cells, mostly zero), which is never densified.
        """
        geo, K = self.geography, self.schema.n_cells
        if sp.issparse(cells):
            if cells.dtype.kind not in "iu":
                raise ValueError(f"cells must hold integers, got a sparse matrix of {cells.dtype}")
            cells = sp.csr_array(cells)
        else:
            cells = integer_valued(cells, "cells")
        if cells.shape == (geo.n_leaves * K,):
            cells = cells.reshape(geo.n_leaves, K)
        if cells.shape != (geo.n_leaves, K):
            raise ValueError(
                f"cells must have shape ({geo.n_leaves}, {K}) (leaves x histogram cells), got {cells.shape}"
            )
        out = {}
        for (level, name), rows in self._constraints.items():
            groups = constraint_groups(name, self.schema)
            if rows.sign == "=" or groups is None:
                continue
            in_group = np.zeros((K, len(groups)), dtype=np.int64)  # cell k counts towards group j
            for j, group in enumerate(groups):
                in_group[list(group), j] = 1
            per_leaf = np.asarray(cells @ in_group)  # each leaf's group totals, then summed over the level's units
            level_units = geo.level(level)
            values = np.add.reduceat(per_leaf, geo.leaf_start[level_units], axis=0)[
                np.searchsorted(level_units, rows.units)
            ]
            held = values <= rows.values if rows.sign == "<=" else values >= rows.values
            out[level, name] = held.all(axis=1)
        return out
