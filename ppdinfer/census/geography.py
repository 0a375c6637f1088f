r"""A geographic hierarchy, a table of cells per finest unit, and the count queries of a noisy-measurement file.

The 2020 Census Disclosure Avoidance System measures, for every unit of a hierarchy (state > county >
tract > block group), count queries of a person table: the unit's total, the detailed table and some
of its margins. Every query is a sum of finest cells: cell (l, k) is the count of category k in
finest unit (leaf) l, and the query of kind ``kind`` of a unit u is

.. math::

    v_{u, g} = \sum_{l \in \mathrm{leaves}(u)} \sum_{k \in G_g} n_{l, k},

with G_g the cells of part g of the kind (all cells for 'total', one cell per part for 'detailed', the
groups of a margin). :class:`Geography` checks the hierarchy and orders its units so that the leaves
under any unit are contiguous; :func:`~ppdinfer.census.geography.census_queries` builds the sparse 0/1 query matrix (queries x
cells) and the two CSR views the sampler reads (for each cell its queries, for each query its cells).

**References.**

Abowd, J. M. et al. (2022). The 2020 Census Disclosure Avoidance System TopDown Algorithm.
Harvard Data Science Review, Special Issue 2.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
import pandas as pd
import scipy.sparse as sp

from ..invariants import checked_invariants
from ..validation import integer_valued, nonnegative_counts

__all__ = ["CensusQueries", "Geography", "TableSpec", "census_queries"]


def _is_root_marker(value) -> bool:
    if value is None:
        return True
    if isinstance(value, str):
        return value == ""
    try:
        return bool(pd.isna(value))
    except (TypeError, ValueError):
        return False


def _sequence(values, name: str) -> list:
    """``values`` as a list; a lone string (a sequence of characters, not of ids or names) is refused."""
    if isinstance(values, str) or not np.iterable(values):
        raise TypeError(f"{name} must be a sequence (a list or array), got {values!r}")
    return list(values)


def _hashable(value, name: str) -> None:
    try:
        hash(value)
    except TypeError:
        raise TypeError(f"{name} must be a hashable id, got {value!r} ({type(value).__name__})") from None


class Geography:
    r"""A hierarchy of geographic units: ids, parents, one root, every leaf at the finest level.

    Units are reordered breadth first (the root, then its children in the order given, then their
    children grouped by parent, ...), so the leaves under any unit form one contiguous range
    ``leaf_start[u]:leaf_stop[u]``.

    Parameters
    ----------
    units : sequence
        Unit ids (any hashable values, unique).
    parents : sequence
        The parent id of each unit; None, NaN or '' for the root.
    level_names : sequence of str, optional
        A name for each depth, root first (default 'level0', 'level1', ...).

    Raises
    ------
    ValueError
        A duplicate id, an orphan (parent id not present), no root or more than one root, a unit on a
        cycle, leaves at different depths, or level_names of the wrong length or repeated; the message
        names the unit.
    TypeError
        units, parents or level_names a string rather than a sequence, or an id that is not hashable.

    Examples
    --------
    >>> geo = Geography(["PA", "c1", "c2", "t1", "t2", "t3"], [None, "PA", "PA", "c1", "c1", "c2"],
    ...                 level_names=["State", "County", "Tract"])
    >>> geo.ids[geo.leaves].tolist(), geo.n_levels
    (['t1', 't2', 't3'], 3)
    >>> int(geo.leaf_start[1]), int(geo.leaf_stop[1])   # county c1 holds leaves 0 and 1
    (0, 2)
    """

    def __init__(self, units, parents, level_names=None):
        units, parents = _sequence(units, "units"), _sequence(parents, "parents")
        if len(units) != len(parents):
            raise ValueError(f"units and parents must have the same length, got {len(units)} and {len(parents)}")
        if not units:
            raise ValueError("units must hold at least one unit")
        position: dict = {}
        for i, unit in enumerate(units):
            if _is_root_marker(unit):
                raise ValueError(f"units: unit number {i} has no id ({unit!r})")
            _hashable(unit, f"units: unit number {i}")
            if unit in position:
                raise ValueError(f"units: unit {unit!r} appears twice")
            position[unit] = i
        roots = [units[i] for i, p in enumerate(parents) if _is_root_marker(p)]
        for i, p in enumerate(parents):
            if not _is_root_marker(p):
                _hashable(p, f"parents: the parent of unit {units[i]!r}")
            if not _is_root_marker(p) and p not in position:
                raise ValueError(f"parents: unit {units[i]!r} has parent {p!r}, which is not a unit (an orphan)")
            if not _is_root_marker(p) and p == units[i]:
                raise ValueError(f"parents: unit {units[i]!r} is its own parent (a cycle)")
        if not roots:
            raise ValueError("parents: no unit is a root (every unit has a parent, so the hierarchy has a cycle)")
        if len(roots) > 1:
            raise ValueError(f"parents: more than one root: {roots[:5]!r}; a geography has exactly one")
        children: list[list[int]] = [[] for _ in units]
        for i, p in enumerate(parents):
            if not _is_root_marker(p):
                children[position[p]].append(i)
        order, depth_of = [position[roots[0]]], {position[roots[0]]: 0}
        head = 0
        while head < len(order):
            u = order[head]
            head += 1
            for c in children[u]:
                depth_of[c] = depth_of[u] + 1
                order.append(c)
        if len(order) != len(units):
            stray = next(units[i] for i in range(len(units)) if i not in depth_of)
            raise ValueError(f"parents: unit {stray!r} is on a cycle (it never reaches the root {roots[0]!r})")
        new_index = np.empty(len(units), dtype=np.int64)
        new_index[np.array(order)] = np.arange(len(units))
        self.ids = np.empty(len(units), dtype=object)  # filled, not built: tuple ids stay one id each
        self.ids[:] = [units[i] for i in order]
        self._position = {unit: int(k) for k, unit in enumerate(self.ids)}
        self.parent = np.array([-1 if _is_root_marker(parents[i]) else new_index[position[parents[i]]] for i in order])
        self.parent = self.parent.astype(np.int64)
        self.depth = np.array([depth_of[i] for i in order], dtype=np.int64)
        n_children = np.bincount(self.parent[1:], minlength=len(units))
        is_leaf = n_children == 0
        finest = int(self.depth.max())
        shallow = np.flatnonzero(is_leaf & (self.depth != finest))
        if shallow.size:
            raise ValueError(
                f"parents: unit {self.ids[shallow[0]]!r} is a leaf at depth {int(self.depth[shallow[0]])} but the "
                f"finest level is at depth {finest}: every leaf must be at the finest level"
            )
        self.n_levels = finest + 1
        if level_names is None:
            level_names = [f"level{d}" for d in range(self.n_levels)]
        level_names = [str(name) for name in _sequence(level_names, "level_names")]
        if len(level_names) != self.n_levels:
            raise ValueError(f"level_names must name {self.n_levels} levels (root first), got {level_names!r}")
        if len(set(level_names)) != len(level_names):
            raise ValueError(
                f"level_names must be distinct (a repeated name could never be addressed), got {level_names!r}"
            )
        self.level_names = tuple(level_names)
        self.child_ptr = np.concatenate([[0], np.cumsum(n_children)]).astype(np.int64)
        self.children = np.arange(1, len(units), dtype=np.int64)  # breadth first: children grouped by parent
        self.leaves = np.flatnonzero(is_leaf)
        leaf_number = np.full(len(units), -1, dtype=np.int64)
        leaf_number[self.leaves] = np.arange(self.leaves.size)
        self.leaf_start = np.zeros(len(units), dtype=np.int64)
        self.leaf_stop = np.zeros(len(units), dtype=np.int64)
        for u in range(len(units) - 1, -1, -1):
            if is_leaf[u]:
                self.leaf_start[u], self.leaf_stop[u] = leaf_number[u], leaf_number[u] + 1
            else:
                kids = self.children[self.child_ptr[u] : self.child_ptr[u + 1]]
                self.leaf_start[u], self.leaf_stop[u] = self.leaf_start[kids].min(), self.leaf_stop[kids].max()

    @classmethod
    def from_frame(cls, frame: pd.DataFrame, unit: str = "unit", parent: str = "parent", level_names=None):
        """A geography from a DataFrame's unit and parent columns.

        Examples
        --------
        >>> import pandas as pd
        >>> frame = pd.DataFrame({"unit": ["s", "a", "b"], "parent": [None, "s", "s"]})
        >>> Geography.from_frame(frame).n_units
        3
        """
        if not isinstance(frame, pd.DataFrame):
            raise TypeError(f"frame must be a pandas DataFrame, got {type(frame).__name__}")
        for column in (unit, parent):
            if column not in frame.columns:
                raise ValueError(f"frame has no column {column!r} (columns: {list(frame.columns)})")
        return cls(frame[unit].tolist(), frame[parent].tolist(), level_names)

    @property
    def n_units(self) -> int:
        """The number of units."""
        return int(self.ids.size)

    @property
    def n_leaves(self) -> int:
        """The number of finest units."""
        return int(self.leaves.size)

    def level(self, name: str) -> np.ndarray:
        """The unit indices (breadth-first order) at the level called ``name``.

        Examples
        --------
        >>> Geography(["s", "a", "b"], [None, "s", "s"], ["State", "County"]).level("County").tolist()
        [1, 2]
        """
        if name not in self.level_names:
            raise ValueError(f"level {name!r} is not one of {self.level_names}")
        return np.flatnonzero(self.depth == self.level_names.index(name))

    def index(self, unit) -> int:
        """The position of unit id ``unit`` in breadth-first order.

        Examples
        --------
        >>> Geography([("PA", 0), ("PA", 1)], [None, ("PA", 0)]).index(("PA", 1))
        1
        """
        _hashable(unit, "unit")
        if unit not in self._position:
            raise ValueError(f"unit {unit!r} is not in the geography")
        return self._position[unit]


def _cell_group(group, margin: str, n_cells: int) -> tuple:
    """One group of a margin: distinct whole cell indices in 0..n_cells - 1 (a repeat would count a cell twice)."""
    cells = integer_valued(_sequence(group, f"a group of margin {margin!r}"), f"a group of margin {margin!r}")
    if cells.ndim != 1 or cells.size == 0 or cells.min() < 0 or cells.max() >= n_cells:
        raise ValueError(f"margins: margin {margin!r} has a group {group!r} outside 0..{n_cells - 1} or empty")
    if np.unique(cells).size != cells.size:
        raise ValueError(f"margins: margin {margin!r} has a group {group!r} that lists a cell twice")
    return tuple(int(k) for k in cells)


@dataclass(frozen=True)
class TableSpec:
    """The cells of the table of every finest unit and the margins a query may read.

    Parameters
    ----------
    labels : tuple of str
        One label per cell.
    margins : dict
        Margin name -> groups of cell indices (each group is one query of that margin).

    Examples
    --------
    >>> spec = TableSpec.hispanic_race()
    >>> spec.n_cells, spec.labels[0], len(spec.margins["hispanic"])
    (14, 'not_hispanic:white', 2)
    """

    labels: tuple
    margins: dict = field(default_factory=dict)

    def __post_init__(self):
        labels = tuple(str(label) for label in _sequence(self.labels, "labels"))
        if not labels:
            raise ValueError("labels must name at least one cell")
        if len(set(labels)) != len(labels):
            raise ValueError(f"labels must be distinct, got {labels!r}")
        object.__setattr__(self, "labels", labels)
        margins = {}
        for name, groups in dict(self.margins).items():
            name = str(name)
            if name in ("total", "detailed") or name in margins:
                raise ValueError(f"margins: {name!r} is a reserved query kind or named twice")
            groups = tuple(_cell_group(group, name, len(labels)) for group in _sequence(groups, f"margin {name!r}"))
            if not groups:
                raise ValueError(f"margins: margin {name!r} has no group (it would make no query)")
            margins[name] = groups
        object.__setattr__(self, "margins", margins)

    @property
    def n_cells(self) -> int:
        """Cells per finest unit."""
        return len(self.labels)

    @classmethod
    def hispanic_race(cls) -> TableSpec:
        """Hispanic origin (2) x race (7 groups): 14 cells, with the 'hispanic' and 'race' margins.

        Examples
        --------
        >>> TableSpec.hispanic_race().margins["race"][0]
        (0, 7)
        """
        races = ("white", "black", "aian", "asian", "nhpi", "other", "two_or_more")
        labels = tuple(f"{h}:{r}" for h in ("not_hispanic", "hispanic") for r in races)
        return cls(
            labels, {"hispanic": (tuple(range(7)), tuple(range(7, 14))), "race": tuple((k, k + 7) for k in range(7))}
        )

    @cached_property
    def _whole_and_cells(self) -> dict:
        """The groups of 'total' and 'detailed', built once (queries ask for them per row)."""
        return {"total": (tuple(range(self.n_cells)),), "detailed": tuple((k,) for k in range(self.n_cells))}

    def groups(self, kind: str) -> tuple:
        """The cell groups of a query kind: one group of every cell ('total'), one per cell ('detailed'),
        or the margin's groups."""
        if kind in ("total", "detailed"):
            return self._whole_and_cells[kind]
        if kind not in self.margins:
            raise ValueError(f"query kind {kind!r} is not 'total', 'detailed' or a margin of {sorted(self.margins)}")
        return self.margins[kind]


@dataclass(frozen=True, eq=False)
class CensusQueries:
    """The count queries of a noisy-measurement file over the cells of a geography's finest units.

    Cell ``l * K + k`` is category k of leaf l (leaves in the geography's breadth-first order).
    ``matrix`` is the sparse 0/1 query matrix (queries x cells, CSR); ``unit``, ``kind``, ``part``
    say for each query which unit, which kind and which group of that kind it counts.

    Examples
    --------
    >>> geo = Geography(["t", "b1", "b2"], [None, "t", "t"], ["Tract", "Block_Group"])
    >>> q = census_queries(geo, TableSpec(("a", "b")), {"Tract": ["total"], "Block_Group": ["detailed"]})
    >>> q.matrix.toarray().tolist()
    [[1, 1, 1, 1], [1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1]]
    >>> q.cell_queries(2).tolist()     # cell 2 (leaf b2, category a): the tract total and its own
    [0, 3]
    """

    geography: Geography
    table: TableSpec
    matrix: sp.csr_matrix
    unit: np.ndarray
    kind: np.ndarray
    part: np.ndarray

    @property
    def n_queries(self) -> int:
        """The number of queries."""
        return int(self.matrix.shape[0])

    @property
    def n_cells(self) -> int:
        """The number of cells (leaves x table cells)."""
        return int(self.matrix.shape[1])

    @property
    def by_cell(self) -> sp.csc_matrix:
        """The same matrix in CSC form: ``indptr``/``indices`` list each cell's queries."""
        return self.matrix.tocsc()

    def cell_queries(self, cell: int) -> np.ndarray:
        """The query indices containing cell ``cell`` (0 <= cell < n_cells)."""
        index = integer_valued(cell, "cell")
        if index.ndim != 0 or not 0 <= index < self.n_cells:
            raise ValueError(f"cell must be one cell index in 0..{self.n_cells - 1}, got {cell!r}")
        cell = int(index)
        csc = self.by_cell
        return csc.indices[csc.indptr[cell] : csc.indptr[cell + 1]]

    def frame(self) -> pd.DataFrame:
        """One row per query: unit id, level, kind, part and the number of cells it sums.

        Examples
        --------
        >>> geo = Geography(["t", "b"], [None, "t"])
        >>> census_queries(geo, TableSpec(("a", "b")), {"level0": ["total"]}).frame()["kind"].tolist()
        ['total']
        """
        geo = self.geography
        return pd.DataFrame(
            {
                "unit": geo.ids[self.unit],
                "level": [geo.level_names[d] for d in geo.depth[self.unit]],
                "kind": self.kind,
                "part": self.part,
                "cells": np.diff(self.matrix.indptr),
            }
        )

    def unit_invariants(self, units, totals) -> tuple[np.ndarray, np.ndarray]:
        """(A, a): the invariants 'the total of unit u is totals[i]' for each listed unit id.

        The totals must be whole non-negative counts that some table satisfies (a unit's total at least
        the sum of its listed parts, a unit listed twice with one total): refused otherwise.

        Examples
        --------
        >>> geo = Geography(["t", "b1", "b2"], [None, "t", "t"])
        >>> q = census_queries(geo, TableSpec(("a", "b")), {"level1": ["detailed"]})
        >>> A, a = q.unit_invariants(["t"], [10])
        >>> A.tolist(), a.tolist()
        ([[1, 1, 1, 1]], [10])
        """
        units = _sequence(units, "units")
        totals = nonnegative_counts(totals, "totals")
        if totals.shape != (len(units),):
            raise ValueError(f"totals must hold one value per unit ({len(units)}), got shape {totals.shape}")
        geo, width = self.geography, self.table.n_cells
        A = np.zeros((len(units), self.n_cells), dtype=np.int64)
        for row, unit in enumerate(units):
            u = geo.index(unit)
            A[row, geo.leaf_start[u] * width : geo.leaf_stop[u] * width] = 1
        return checked_invariants((A, totals), self.n_cells, "unit_invariants")

    def cell_coords(self) -> tuple[np.ndarray, tuple]:
        """(unit ids of the leaves, table labels): the coordinates of a (unit, cell) array of cells."""
        return self.geography.ids[self.geography.leaves], self.table.labels


def census_queries(geography: Geography, table: TableSpec, queries: dict) -> CensusQueries:
    """The query matrix of a geography and table: ``queries`` maps level names to query kinds.

    Kinds are 'total', 'detailed' (one query per cell of the table) or a margin of ``table``. Queries
    are ordered by unit (breadth first), then kind (as listed), then part.

    Examples
    --------
    >>> geo = Geography(["s", "c", "b1", "b2"], [None, "s", "c", "c"], ["State", "County", "Block_Group"])
    >>> q = census_queries(geo, TableSpec.hispanic_race(), {"State": ["total"], "Block_Group": ["total", "detailed"]})
    >>> q.n_queries, q.n_cells
    (31, 28)
    """
    if not isinstance(geography, Geography):
        raise ValueError(f"geography must be a Geography, got {type(geography).__name__}")
    if not isinstance(table, TableSpec):
        raise ValueError(f"table must be a TableSpec, got {type(table).__name__}")
    if not isinstance(queries, dict) or not queries:
        raise ValueError(f"queries must be a non-empty dict level name -> kinds, got {queries!r}")
    kinds_by_depth: dict[int, list[str]] = {}
    for level, kinds in queries.items():
        if level not in geography.level_names:
            raise ValueError(f"queries: level {level!r} is not one of {geography.level_names}")
        kinds = [kinds] if isinstance(kinds, str) else _sequence(kinds, f"queries: the kinds of level {level!r}")
        if not kinds:
            raise ValueError(f"queries: level {level!r} lists no query kind")
        for kind in kinds:
            table.groups(kind)  # refuses an unknown kind, naming it
        if len(set(kinds)) != len(kinds):
            raise ValueError(f"queries: level {level!r} lists a kind twice: {kinds!r}")
        kinds_by_depth[geography.level_names.index(level)] = kinds
    width = table.n_cells
    rows, cols, unit_of, kind_of, part_of = [], [], [], [], []
    row = 0
    for u in range(geography.n_units):
        kinds = kinds_by_depth.get(int(geography.depth[u]))
        if not kinds:
            continue
        leaves = np.arange(geography.leaf_start[u], geography.leaf_stop[u]) * width
        for kind in kinds:
            for g, group in enumerate(table.groups(kind)):
                cells = (leaves[:, None] + np.asarray(group)[None, :]).ravel()
                rows.append(np.full(cells.size, row, dtype=np.int64))
                cols.append(cells)
                unit_of.append(u)
                kind_of.append(kind)
                part_of.append(g)
                row += 1
    n_cells = geography.n_leaves * width
    rows_a, cols_a = np.concatenate(rows), np.concatenate(cols)
    matrix = sp.csr_matrix((np.ones(rows_a.size, dtype=np.int64), (rows_a, cols_a)), shape=(row, n_cells))
    matrix.sort_indices()
    return CensusQueries(
        geography, table, matrix, np.array(unit_of, dtype=np.int64), np.array(kind_of), np.array(part_of)
    )
