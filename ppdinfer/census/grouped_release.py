r"""A noisy-measurement release held by its structure, not by a query matrix: what a state's full histogram needs.

Every query of a noisy-measurement file has the same form: at one level, for each unit u, value v of query q
sums the target cells k with ``group[q][k] == v`` over the leaves under u. A :class:`GroupedRelease` keeps,
per (level, query), that map from cells to values (K integers), the releases (units x values) and one noise
rate per unit, and, per leaf, the index of its ancestor at every level. A query's value of a leaf's cell is
then found in O(1) (``offset + ancestor * n_values + group[k]``), and a state's block groups with the full
2,016-cell histogram take the size of the release (about 35 million values), where the query matrix would
hold a billion entries. :func:`~ppdinfer.census.people.sample_people` samples it.

Invariants are the ones a noisy-measurement file has: exact unit totals (nested, as units of a geography
are) and structural zeros (target cells zero in every leaf, e.g. no persons under 18 in nursing facilities);
its inequality constraints (the bounds on each unit's persons per group-quarters type) are :class:`BoundBlock`\ s.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from ..validation import integer_valued
from .geography import CensusQueries, Geography, TableSpec
from .nmf_layout import constraint_groups
from .nmf_release import _checked_sums, _chosen_queries, _target, truncated_geography

__all__ = ["BoundBlock", "GroupedRelease", "MeasurementBlock", "group_sums", "grouped_release", "leaf_table"]

#: A bound that does not bind (a unit with no inequality of a kind).
UNBOUNDED = 2**62


def group_sums(cells, groups: np.ndarray, n: int) -> np.ndarray:
    """(leaves x n): each leaf's sum of its cells k with ``groups[k] == v`` (groups -1: in none); ``cells`` dense
    or a scipy sparse table.

    Examples
    --------
    >>> group_sums([[1, 2, 3], [4, 5, 6]], np.array([0, 1, 0]), 2).tolist()
    [[4, 2], [10, 5]]
    """
    return np.asarray((leaf_table(cells) @ _indicator(groups, n)).toarray())


def leaf_table(cells) -> sp.csr_array:
    """``cells`` (leaves x K, dense or scipy sparse) as an int64 CSR table of its non-zero counts, indices sorted.

    Examples
    --------
    >>> leaf_table([[0, 2], [1, 0]]).nnz
    2
    """
    if sp.issparse(cells):
        table = sp.csr_array(cells, dtype=np.int64)
        if table.nnz and not np.array_equal(table.data, np.asarray(cells.tocsr().data)):
            raise ValueError("cells must be whole numbers")
    else:
        table = sp.csr_array(integer_valued(cells, "cells"), dtype=np.int64)
    table.eliminate_zeros()
    table.sort_indices()
    return table


def _indicator(groups: np.ndarray, n: int) -> sp.csr_array:
    """The (K x n) 0/1 matrix of cell k in value ``groups[k]`` (none where -1)."""
    read = np.flatnonzero(groups >= 0)
    return sp.csr_array((np.ones(read.size, dtype=np.int64), (read, groups[read])), shape=(groups.size, n))


@dataclass(frozen=True)
class MeasurementBlock:
    """One query at one level: ``groups[k]`` is the value target cell k falls in (-1: none), ``y`` the releases
    (level units x values), ``rate`` each unit's noise rate and ``scale`` each value's factor of it (log
    likelihood ``-rate[u] * scale[v] * |y - v| ** power``; rate 0 for a unit not measured; a sum of s values of
    a coarser table has scale 1 / s)."""

    level: int
    query: str
    groups: np.ndarray
    y: np.ndarray
    rate: np.ndarray
    scale: np.ndarray

    @property
    def n_values(self) -> int:
        """Values per unit."""
        return int(self.y.shape[1])


@dataclass(frozen=True)
class BoundBlock:
    """Inequalities at one level: each unit's sums of the target cells by ``groups`` (K values, -1: in none) lie in
    [lower, upper] (level units x values; +-``UNBOUNDED`` where a unit has no bound), e.g. the hhgq bounds of a file.

    Examples
    --------
    >>> b = BoundBlock(1, "hhgq_total_lb_con", np.array([0, 1]), np.array([[0, 1], [0, 0]]), np.full((2, 2), UNBOUNDED))
    >>> b.n_values
    2
    """

    level: int
    name: str
    groups: np.ndarray
    lower: np.ndarray
    upper: np.ndarray

    @property
    def n_values(self) -> int:
        """Values per unit."""
        return int(self.lower.shape[1])


class GroupedRelease:
    """A release of count queries over a geography's leaves held per (level, query): see the module docstring.

    Attributes
    ----------
    geography : Geography
    table : TableSpec
        The target cells of each leaf.
    blocks : tuple of MeasurementBlock
    power : int
        2 (discrete Gaussian noise) or 1 (discrete Laplace).
    level_units : tuple of ndarray
        Per depth, the geography's unit indices of that level (a block's rows, in order).
    ancestors : ndarray
        (levels, leaves): the row of each leaf's ancestor in its level's ``level_units``.
    unit_totals : dict
        Unit index -> exact total of its leaves' cells.
    structural_zeros : ndarray of bool
        (K,): target cells zero in every leaf.
    shape : tuple of int
        The cells' axes in C order (default one axis of K): cells differing in one axis are neighbours.
    bounds : tuple of BoundBlock
        Inequalities the cells must meet (the posterior is zero off them).

    Examples
    --------
    >>> geo = Geography(["t", "b1", "b2"], [None, "t", "t"])
    >>> block = MeasurementBlock(1, "detailed", np.array([0, 1]), np.array([[3, 0], [1, 2]]), np.full(2, 0.5),
    ...                          np.ones(2))
    >>> release = GroupedRelease(geo, TableSpec(("a", "b")), [block], power=2, unit_totals={0: 6})
    >>> release.log_likelihood([[3, 0], [1, 2]]), release.log_likelihood([[2, 0], [1, 3]])
    (0.0, -1.0)
    """

    def __init__(self, geography: Geography, table: TableSpec, blocks, power: int, unit_totals=None,
                 structural_zeros=None, shape=None, bounds=()):  # fmt: skip
        if power not in (1, 2):
            raise ValueError(f"power must be 2 (Gaussian) or 1 (Laplace), got {power!r}")
        self.geography, self.table, self.power = geography, table, int(power)
        K = table.n_cells
        self.shape = (K,) if shape is None else tuple(int(n) for n in shape)
        if int(np.prod(self.shape)) != K or min(self.shape) < 1:
            raise ValueError(f"shape must be the cells' axes (their product {K}), got {shape!r}")
        self.level_units = tuple(geography.level(name) for name in geography.level_names)
        self.ancestors = np.zeros((geography.n_levels, geography.n_leaves), dtype=np.int64)
        unit = geography.leaves.copy()
        for depth in range(geography.n_levels - 1, -1, -1):
            self.ancestors[depth] = np.searchsorted(self.level_units[depth], unit)
            unit = np.where(geography.parent[unit] >= 0, geography.parent[unit], unit)
        self.blocks = tuple(blocks)
        for b in self.blocks:
            n_rows = self.level_units[b.level].size
            if b.groups.shape != (K,) or b.y.shape[0] != n_rows or b.rate.shape != (n_rows,):
                raise ValueError(
                    f"block {b.query!r} at level {geography.level_names[b.level]}: groups must hold {K} cells, y and "
                    f"rate {n_rows} rows; got {b.groups.shape}, {b.y.shape}, {b.rate.shape}"
                )
            if b.groups.max(initial=-1) >= b.n_values or b.groups.min(initial=0) < -1:
                raise ValueError(f"block {b.query!r}: groups must be -1 or a value index below {b.n_values}")
            if not np.all(np.isfinite(b.rate) & (b.rate >= 0)):
                raise ValueError(f"block {b.query!r}: rates must be finite and >= 0")
            if b.scale.shape != (b.n_values,) or not np.all(np.isfinite(b.scale) & (b.scale > 0)):
                raise ValueError(f"block {b.query!r}: scale must hold {b.n_values} finite numbers > 0")
        self.unit_totals = {} if unit_totals is None else {int(u): int(t) for u, t in unit_totals.items()}
        for u, total in self.unit_totals.items():
            if not 0 <= u < geography.n_units or total < 0:
                raise ValueError(f"unit_totals: unit {u} (total {total}) is not a unit index with a total >= 0")
        zeros = np.zeros(K, dtype=bool) if structural_zeros is None else np.asarray(structural_zeros, dtype=bool)
        if zeros.shape != (K,) or zeros.all():
            raise ValueError(f"structural_zeros must mark some, not all, of the {K} cells; got shape {zeros.shape}")
        self.structural_zeros = zeros
        self.bounds = tuple(bounds)
        for b in self.bounds:
            n_rows = self.level_units[b.level].size
            if b.groups.shape != (K,) or b.lower.shape != b.upper.shape or b.lower.shape[0] != n_rows:
                raise ValueError(f"bounds {b.name!r}: groups must hold {K} cells, lower and upper {n_rows} rows alike")
            if np.any(b.lower > b.upper):
                raise ValueError(f"bounds {b.name!r}: a lower bound above its upper bound")
        read = np.zeros(K, dtype=bool)
        for b in self.blocks:
            read |= (b.groups >= 0) & (b.rate > 0).any()
        unread = np.flatnonzero(~read & ~zeros)
        if unread.size:
            raise ValueError(
                f"{unread.size} target cells are read by no measurement (the first: {table.labels[unread[0]]!r}); "
                "the release says nothing of them"
            )

    @property
    def n_values(self) -> int:
        """The number of released values."""
        return int(sum(b.y.size for b in self.blocks))

    def __repr__(self) -> str:
        geo = self.geography
        return (
            f"GroupedRelease({geo.n_leaves} leaves x {self.table.n_cells} cells, {len(self.blocks)} (level, query) "
            f"blocks, {self.n_values:,} values, {len(self.unit_totals)} unit totals, "
            f"{int(self.structural_zeros.sum())} structural zeros)"
        )

    def level_sums(self, cells, level: int, groups: np.ndarray, n: int, rows=None) -> np.ndarray:
        """(units of ``level`` x n): each unit's sums of the target cells k with ``groups[k] == v`` over its leaves,
        ``cells`` (leaves x K) dense or scipy sparse (never expanded: O(non-zero cells + units x n)); ``rows``: a
        range (start, stop) of the level's units, their rows only."""
        L, K = self.geography.n_leaves, self.table.n_cells
        cells = cells if sp.issparse(cells) else integer_valued(cells, "cells").reshape(L, K)
        if cells.shape != (L, K):
            raise ValueError(f"cells must be {L} leaves x {K} cells, got {cells.shape}")
        units = self.level_units[level]
        start, stop = (0, units.size) if rows is None else rows
        a, b = (
            (0, 0)
            if start >= stop
            else (self.geography.leaf_start[units[start]], self.geography.leaf_stop[units[stop - 1]])
        )
        row = self.ancestors[level][a:b] - start
        ancestor = sp.csr_array((np.ones(b - a, dtype=np.int64), (row, np.arange(b - a))), shape=(stop - start, b - a))
        return np.asarray(((ancestor @ leaf_table(cells[a:b])) @ _indicator(groups, n)).toarray())

    def bound_values(self, cells) -> list:
        """Per bound block, the (level units x values) sums of ``cells`` (leaves x K, dense or sparse) it bounds."""
        return [self.level_sums(cells, b.level, b.groups, b.n_values) for b in self.bounds]

    def meets_bounds(self, cells) -> bool:
        """Whether ``cells`` (leaves x K, dense or sparse) meet every bound."""
        return all(bool(np.all((b.lower <= v) & (v <= b.upper))) for b, v in zip(self.bounds, self.bound_values(cells)))

    def log_likelihood(self, cells) -> float:
        """The log likelihood of (leaves x K, dense or sparse) cells, up to a constant: ``-sum rate * |y - v| ** power``."""
        out = 0.0
        for b in self.blocks:
            values = self.level_sums(cells, b.level, b.groups, b.n_values)
            out -= float(b.rate @ (np.abs(b.y - values).astype(float) ** self.power @ b.scale))
        return out

    @classmethod
    def from_census(cls, census: CensusQueries, mechanism, y, shape=None) -> GroupedRelease:
        """The grouped form of a release built by :func:`~ppdinfer.census.geography.census_queries` (each row checked to
        be the unit's sum of its kind's group); invariants: unit totals and rows of value 0 (structural zeros,
        the same cells in every leaf); ``shape``: the cells' axes (e.g. ``PERSON.shape``), default one."""
        if not isinstance(census, CensusQueries):
            raise ValueError(f"census must be CensusQueries, got {type(census).__name__}")
        y = integer_valued(y, "y")
        if y.shape != (census.n_queries,):
            raise ValueError(f"y must hold one integer per query ({census.n_queries}), got shape {y.shape}")
        geo, spec, K = census.geography, census.table, census.table.n_cells
        depth = geo.depth[census.unit]
        level_units = [geo.level(name) for name in geo.level_names]
        matrix = census.matrix.tocsr()
        blocks = []
        for level in range(geo.n_levels):
            for kind in dict.fromkeys(census.kind[depth == level]):
                rows = np.flatnonzero((depth == level) & (census.kind == kind))
                groups = np.full(K, -1, dtype=np.int64)
                parts = spec.groups(kind)
                for v, cells in enumerate(parts):
                    groups[list(cells)] = v
                _check_rows(matrix, rows, census, groups, K, kind)
                unit_row = np.searchsorted(level_units[level], census.unit[rows])
                block_y = np.zeros((level_units[level].size, len(parts)), dtype=np.int64)
                block_y[unit_row, census.part[rows]] = y[rows]
                rates = np.zeros(block_y.shape)
                rates[unit_row, census.part[rows]] = np.asarray(mechanism.rates)[rows]
                measured = np.unique(unit_row)
                rate = np.zeros(level_units[level].size)
                rate[measured] = rates[measured, 0]
                scale = rates[measured[0]] / rate[measured[0]]
                if np.any(np.abs(rates[measured] - rate[measured, None] * scale) > 1e-9 * rates[measured]):
                    raise ValueError(
                        f"from_census: the {kind!r} queries at level {geo.level_names[level]} need every value of a "
                        "measured unit, with noise rates a unit's rate times a value's factor"
                    )
                blocks.append(MeasurementBlock(level, str(kind), groups, block_y, rate, scale))
        totals, zeros = _census_invariants(census, mechanism)
        return cls(geo, spec, blocks, mechanism.power, totals, zeros, shape)


def _check_rows(matrix: sp.csr_matrix, rows: np.ndarray, census: CensusQueries, groups, K: int, kind) -> None:
    """Each row must sum exactly its unit's leaves' cells of its group (the structure the grouped form assumes)."""
    geo = census.geography
    sub = matrix[rows]
    row_of = np.repeat(np.arange(rows.size), np.diff(sub.indptr))
    leaf, k = np.divmod(sub.indices, K)
    unit = census.unit[rows]
    inside = (leaf >= geo.leaf_start[unit][row_of]) & (leaf < geo.leaf_stop[unit][row_of])
    right = inside & (groups[k] == census.part[rows][row_of]) & (sub.data == 1)
    size = np.bincount(groups[groups >= 0], minlength=groups.max() + 1)
    expected = (geo.leaf_stop[unit] - geo.leaf_start[unit]) * size[census.part[rows]]
    if not right.all() or np.any(np.diff(sub.indptr) != expected):
        bad = rows[row_of[~right][0]] if not right.all() else rows[np.flatnonzero(np.diff(sub.indptr) != expected)[0]]
        raise ValueError(
            f"from_census: query {int(bad)} ({kind!r} of unit {geo.ids[census.unit[bad]]!s}) is not its unit's sum "
            "of its group's cells"
        )


def _census_invariants(census: CensusQueries, mechanism) -> tuple[dict, np.ndarray]:
    """Unit totals and structural zeros from a mechanism's invariant rows; any other row is refused."""
    geo, K = census.geography, census.table.n_cells
    zeros = np.zeros((geo.n_leaves, K), dtype=bool)
    totals = {}
    A, a = mechanism.invariant_matrix, mechanism.invariant_values
    for r in range(0 if A is None else A.shape[0]):
        cells = np.flatnonzero(A[r])
        if np.any(A[r][cells] != 1):
            raise ValueError(f"invariant row {r}: sample_people keeps unit totals and structural zeros only (0/1 rows)")
        leaves = np.unique(cells // K)
        units = np.flatnonzero((geo.leaf_start == leaves[0]) & (geo.leaf_stop == leaves[-1] + 1)) if cells.size else []
        if len(units) and cells.size == leaves.size * K and leaves.size == leaves[-1] - leaves[0] + 1:
            totals[int(units[0])] = int(a[r])  # a unit's total, 0 included (a unit that holds nobody)
        elif a[r] == 0 and cells.size:
            zeros.ravel()[cells] = True
        else:
            raise ValueError(f"invariant row {r} is neither a unit's total nor a zero: sample_people keeps only those")
    if np.any(zeros != zeros[:1]):
        raise ValueError("structural zeros must be the same cells in every leaf")
    return totals, zeros[0]


def grouped_release(source, table=None, levels=None, queries=None, *, invariants: bool = True) -> GroupedRelease:
    """The measurements of a noisy measurement file as a :class:`GroupedRelease` (no query matrix).

    The arguments are those of :meth:`~ppdinfer.census.nmf.NoisyMeasurementFile.release`, and the values are the
    same (summed values of a coarser table, with the same check of their summed noise); invariants: the
    root's total (``state_total``), each 'total_con' unit total, and the equality constraints of value zero that
    the target cells determine ('nurse_nva_0_con': structural zeros); bounds: the inequality constraints whose
    groups the target cells determine ('hhgq_total_lb_con', 'hhgq_total_ub_con' for the full histogram).

    Examples
    --------
    >>> import tempfile
    >>> from ppdinfer.census import read_nmf, synthetic_pl94_state, write_nmf
    >>> state = synthetic_pl94_state(["Fulton"], random_seed=1, levels=("State", "County", "Tract", "Block_Group"))
    >>> root = tempfile.mkdtemp()
    >>> _ = write_nmf(root, state, random_seed=2)
    >>> release = grouped_release(read_nmf(root, "42", state_total=int(state.persons.sum())))
    >>> release.table.n_cells, len(release.blocks), int(release.structural_zeros.sum())
    (2016, 44, 126)
    """
    spec, sums, cell_of = _target(source.schema, table)
    for level in [] if levels is None else list(levels):
        if level not in source.levels:
            raise ValueError(f"levels: level {level!r} was not read; levels read: {tuple(source.levels)}")
    levels = [level for level in source.levels if levels is None or level in levels]
    if not levels:
        raise ValueError("levels must name at least one level read")
    finest = max(levels, key=source.geography.level_names.index)
    geo, index = truncated_geography(source.geography, finest)
    position = np.full(source.geography.n_units, -1, dtype=np.int64)
    position[index] = np.arange(index.size)
    level_units = [geo.level(name) for name in geo.level_names]
    blocks = []
    for level in levels:
        depth = geo.level_names.index(level)
        for query in _chosen_queries(source, levels, queries):
            if query not in source.queries(level):
                continue
            if query not in sums:
                raise ValueError(
                    f"the file's query {query!r} at {level} is not a query of the {source.schema.name} histogram"
                )
            units, values, variances = source.measurements(level, query)
            rows = np.searchsorted(level_units[depth], position[np.asarray(units)])
            variances = np.asarray(variances, dtype=float)
            parts = sums[query]
            keep = _checked_sums(variances, parts, query, level)
            if not keep.any():
                continue
            groups = np.full(spec.n_cells, -1, dtype=np.int64)
            kept = [v for v in range(len(parts)) if keep[v]]
            for new, v in enumerate(kept):
                groups[list(spec.groups(query)[v])] = new
            values = np.asarray(values)
            reach = np.abs(values).max(initial=0) * max(len(parts[v]) for v in kept)
            width = next(t for t in (np.int16, np.int32, np.int64) if reach < np.iinfo(t).max)  # a block's cells: int16
            block_y = np.zeros((level_units[depth].size, len(kept)), dtype=width)
            for new, v in enumerate(kept):
                block_y[rows, new] = values[:, list(parts[v])].sum(axis=1, dtype=np.int64)
            rate = np.zeros(level_units[depth].size)
            rate[rows] = 1.0 / (2.0 * variances)
            scale = 1.0 / np.array(
                [len(parts[v]) for v in kept], dtype=float
            )  # a sum of s values: s times the variance
            blocks.append(MeasurementBlock(depth, query, groups, block_y, rate, scale))
    if not blocks:
        raise ValueError(f"no measurement at levels {tuple(levels)}")
    totals, zeros = _file_invariants(source, geo, position, spec, cell_of) if invariants else ({}, None)
    bounds = _file_bounds(source, geo, position, spec, cell_of) if invariants else ()
    shape = source.schema.shape if np.array_equal(cell_of, np.arange(source.schema.n_cells)) else None
    return GroupedRelease(geo, spec, blocks, 2, totals, zeros, shape, bounds)


def _file_bounds(source, geo: Geography, position: np.ndarray, spec: TableSpec, cell_of: np.ndarray) -> tuple:
    """The inequality constraints of a file whose every group is a union of target cells, one block each."""
    out = []
    for level in geo.level_names[1:]:
        depth = geo.level_names.index(level)
        rows_of_level = geo.level(level)
        for name in source.constraint_names(level):
            units, values, sign = source.constraints(level, name)
            groups = constraint_groups(name, source.schema)
            if sign == "=" or groups is None:
                continue
            target = np.full(spec.n_cells, -1, dtype=np.int64)
            whole = True
            for v, group in enumerate(groups):
                hit = np.unique(cell_of[list(group)])
                if np.bincount(cell_of, minlength=spec.n_cells)[hit].sum() != len(group):
                    whole = False  # the group splits a target cell: no function of the cells
                target[hit] = v
            if not whole:
                continue
            rows = np.searchsorted(rows_of_level, position[np.asarray(units)])
            lower = np.full((rows_of_level.size, len(groups)), -UNBOUNDED, dtype=np.int64)
            upper = np.full_like(lower, UNBOUNDED)
            (lower if sign == ">=" else upper)[rows] = np.asarray(values, dtype=np.int64)
            out.append(BoundBlock(depth, name, target, lower, upper))
    return tuple(out)


def _file_invariants(source, geo: Geography, position: np.ndarray, spec: TableSpec, cell_of: np.ndarray):
    """Unit totals and structural zeros of a file, as :func:`grouped_release` imposes them."""
    totals = {} if source.state_total is None else {0: int(source.state_total)}
    zeros = np.zeros(spec.n_cells, dtype=bool)
    size = np.bincount(cell_of, minlength=spec.n_cells)
    for level in geo.level_names[1:]:
        for name in source.constraint_names(level):
            units, values, sign = source.constraints(level, name)
            groups = constraint_groups(name, source.schema)
            if sign != "=" or groups is None or len(groups) != 1:
                continue
            hit, counts = np.unique(cell_of[list(groups[0])], return_counts=True)
            if np.any(counts != size[hit]):
                continue  # the constraint splits a target cell: no function of them
            values = np.asarray(values).sum(axis=1)
            if hit.size == spec.n_cells:
                totals.update({int(position[u]): int(v) for u, v in zip(units, values, strict=True)})
            elif not values.any() and np.isin(geo.level(level), position[np.asarray(units)]).all():
                zeros[hit] = True  # zero in every unit of a level: zero in every leaf
            else:
                raise ValueError(
                    f"{level} {name!r}: an equality constraint other than a unit total or a zero in every unit"
                )
    return totals, zeros
