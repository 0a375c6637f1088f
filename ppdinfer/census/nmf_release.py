r"""From a noisy measurement file's measurements to a release over a target table: queries, mechanism and y.

A file measures queries of the fine histogram (2,016 person cells). A target table is the fine table
itself or a :class:`~ppdinfer.census.pl94.Coarsening` (e.g. voting age x Hispanic origin x 7 race
groups). Each measured query contributes, per unit, its finest sums of values that are functions of the
target's cells (``Coarsening.sums``: one value each where the query is an exact function of the
target table). A summed value :math:`\tilde y = \sum_{i \in S} y_i` measures :math:`\sum_{i \in S} v_i` with
noise :math:`\sum_{i \in S} e_i`, taken to be discrete Gaussian of variance :math:`\sum_{i \in S}
\sigma_i^2`; :func:`~ppdinfer.census.summed_noise.summed_noise_error` measures that approximation for
every distinct sum met, and a sum beyond ``SUMMED_NOISE_TOLERANCE`` is left out, with a warning. The
likelihood is then that of the summed data (a function of the file), exact up to that bound: no
measurement is lost to the coarser table but the contrasts inside a sum, which the coarse cells cannot
explain.

The query matrix is built level by level and query by query for all units at once (no loop over units).
"""

from __future__ import annotations

import warnings

import numpy as np
import scipy.sparse as sp

from ..mechanisms import NoisyMeasurements
from .geography import CensusQueries, Geography, TableSpec
from .pl94 import Coarsening, HistogramSchema
from .summed_noise import SUMMED_NOISE_TOLERANCE, summed_noise_error

__all__ = ["measurement_release", "truncated_geography"]


def truncated_geography(geography: Geography, finest: str) -> tuple[Geography, np.ndarray]:
    """The geography cut below level ``finest`` and, for each kept unit, its index in ``geography``.

    Examples
    --------
    >>> geo = Geography(["s", "c", "b1", "b2"], [None, "s", "c", "c"], ["State", "County", "Block"])
    >>> cut, index = truncated_geography(geo, "County")
    >>> cut.level_names, index.tolist()
    (('State', 'County'), [0, 1])
    """
    if finest not in geography.level_names:
        raise ValueError(f"levels: {finest!r} is not a level of the file's geography {geography.level_names}")
    depth = geography.level_names.index(finest)
    if depth == geography.n_levels - 1:
        return geography, np.arange(geography.n_units)
    kept = np.flatnonzero(geography.depth <= depth)
    parents = [None if p < 0 else geography.ids[p] for p in geography.parent[kept]]
    cut = Geography(list(geography.ids[kept]), parents, geography.level_names[: depth + 1])
    return cut, kept[[int(np.searchsorted(kept, geography.index(unit))) for unit in cut.ids]]


def _target(schema: HistogramSchema, table) -> tuple[TableSpec, dict]:
    """The target TableSpec and, per query, the sums of its values (value indices) that measure it."""
    if table is None:
        spec = schema.table()
        return spec, {q: tuple((k,) for k in range(len(schema.query_groups(q)))) for q in schema.default_queries()}
    if isinstance(table, Coarsening):
        return table.summed_table, dict(table.sums)
    if isinstance(table, TableSpec):
        if table.labels != schema.labels():
            raise ValueError("table: a TableSpec target must be the file's own histogram; use schema.coarsen(...)")
        return table, {
            q: tuple((k,) for k in range(len(table.groups(q)))) for q in ("total", "detailed", *table.margins)
        }
    raise TypeError(f"table must be None, a Coarsening (schema.coarsen(...)) or the file's TableSpec, got {table!r}")


def _rows(geo: Geography, units: np.ndarray, groups: tuple, width: int) -> tuple[np.ndarray, np.ndarray]:
    """CSR (indptr, indices) of the queries (unit u, group g) for every unit in ``units`` and group, group major.

    A unit's cells of a group are its leaves' cells of that group, leaf by leaf: one vectorized block per group.
    """
    starts, n = geo.leaf_start[units], geo.leaf_stop[units] - geo.leaf_start[units]
    leaves = np.arange(n.sum()) - np.repeat(np.cumsum(n) - n, n) + np.repeat(starts, n)
    indptr, indices = [np.zeros(1, dtype=np.int64)], []
    for group in groups:
        group = np.asarray(group, dtype=np.int64)
        indices.append((leaves[:, None] * width + group[None, :]).ravel())
        indptr.append(indptr[-1][-1] + np.cumsum(n * group.size))
    return np.concatenate(indptr), np.concatenate(indices)


def measurement_release(source, table=None, levels=None, state_total=None):
    """``(census, mechanism, y)`` for the measurements of ``source`` over a target table.

    Parameters
    ----------
    source
        A :class:`~ppdinfer.census.NoisyMeasurementFile` (anything with ``geography``, ``schema``,
        ``levels``, ``queries(level)`` and ``measurements(level, query) -> (unit indices, values, variances)``).
    table : Coarsening or TableSpec, optional
        The target table: by default the full histogram; a ``schema.coarsen(...)`` for a coarser one.
    levels : sequence of str, optional
        The levels whose measurements are used (default all read); the finest of them is the leaf level.
    state_total : int, optional
        The exact total of the root (the state's population, published outside the file).

    Returns
    -------
    (CensusQueries, NoisyMeasurements, numpy.ndarray)
        Queries ordered by unit (breadth first), then query as in the file's strategy, then part.
    """
    spec, sums = _target(source.schema, table)
    levels = list(source.levels if levels is None else levels)
    unknown = [level for level in levels if level not in source.levels]
    if unknown or not levels:
        raise ValueError(f"levels: {unknown or levels!r} not among the levels read {tuple(source.levels)}")
    finest = max(levels, key=source.geography.level_names.index)
    geo, index = truncated_geography(source.geography, finest)
    position = np.full(source.geography.n_units, -1, dtype=np.int64)
    position[index] = np.arange(index.size)
    order = list(sums)
    blocks = []  # (query, its rank, (row units, row parts), indptr, indices, values, variances): group major
    for level in levels:
        for query in source.queries(level):
            if query not in sums:
                raise ValueError(f"the file's query {query!r} at {level} has no place in the target table")
            units, values, variances = source.measurements(level, query)
            units = position[np.asarray(units)]
            parts, values = sums[query], np.asarray(values)
            summed = np.stack([values[:, list(part)].sum(axis=1) for part in parts], axis=1).astype(np.int64)
            variances = np.asarray(variances, dtype=float)
            var = variances[:, None] * np.array([len(part) for part in parts], dtype=float)[None, :]
            keep = _checked_sums(variances, parts, query, level)
            if not keep.any():
                continue
            groups = tuple(group for group, kept in zip(spec.groups(query), keep, strict=True) if kept)
            indptr, indices = _rows(geo, units, groups, spec.n_cells)
            parts_kept = np.flatnonzero(keep)
            rows = (np.tile(units, parts_kept.size), np.repeat(parts_kept, units.size))
            blocks.append((query, order.index(query), rows, indptr, indices, summed[:, keep].T, var[:, keep].T))
    return _assemble(geo, spec, blocks, state_total)


def _assemble(geo: Geography, spec: TableSpec, blocks: list, state_total):
    """One CensusQueries, mechanism and y from the per-(level, query) blocks, rows sorted (unit, query, part)."""
    if not blocks:
        raise ValueError("the levels chosen hold no measurement")
    unit = np.concatenate([b[2][0] for b in blocks])
    part = np.concatenate([b[2][1] for b in blocks])
    rank = np.concatenate([np.full(b[2][0].size, b[1]) for b in blocks])
    kind = np.concatenate([np.full(b[2][0].size, b[0], dtype=object) for b in blocks])
    offsets = np.cumsum([0] + [b[3][-1] for b in blocks[:-1]])
    indptr = np.concatenate([[0]] + [b[3][1:] + off for b, off in zip(blocks, offsets, strict=True)])
    indices = np.concatenate([b[4] for b in blocks])
    y = np.concatenate([b[5].ravel() for b in blocks])
    variance = np.concatenate([b[6].ravel() for b in blocks])
    n_cells = geo.n_leaves * spec.n_cells
    matrix = sp.csr_matrix((np.ones(indices.size, dtype=np.int64), indices, indptr), shape=(unit.size, n_cells))
    perm = np.lexsort((part, rank, unit))
    matrix = matrix[perm]
    census = CensusQueries(geo, spec, matrix, unit[perm], kind[perm].astype(str), part[perm])
    invariants = None
    if state_total is not None:
        invariants = census.unit_invariants([geo.ids[0]], [state_total])
    mechanism = NoisyMeasurements(matrix, np.sqrt(variance[perm]), invariants=invariants)
    return census, mechanism, y[perm]


def _checked_sums(variances: np.ndarray, parts: tuple, query: str, level: str) -> np.ndarray:
    """Which sums of a query are close enough to one discrete Gaussian (each distinct variance checked once)."""
    keep = np.ones(len(parts), dtype=bool)
    for variance in np.unique(variances):
        for p, part in enumerate(parts):
            if len(part) > 1 and summed_noise_error([variance] * len(part)) > SUMMED_NOISE_TOLERANCE:
                keep[p] = False
    if not keep.all():
        warnings.warn(
            f"{level} {query!r}: {int((~keep).sum())} sums of its values are left out: their summed noise is "
            f"further than {SUMMED_NOISE_TOLERANCE:g} (log pmf) from one discrete Gaussian",
            stacklevel=3,
        )
    return keep
