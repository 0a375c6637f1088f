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
from .nmf_layout import constraint_groups
from .pl94 import Coarsening, HistogramSchema
from .summed_noise import SUMMED_NOISE_TOLERANCE, summed_noise_error

__all__ = ["DENSE_INVARIANT_BYTES", "measurement_release", "truncated_geography"]


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
    return cut, np.array([geography.index(unit) for unit in cut.ids], dtype=np.int64)


def _target(schema: HistogramSchema, table) -> tuple[TableSpec, dict, np.ndarray]:
    """The target TableSpec, per query the sums of its values (value indices) that measure the target's cells, and
    the target cell of each fine cell."""
    if table is None:
        table = schema.table()
    if isinstance(table, Coarsening):
        return table.summed_table, dict(table.sums), table.cell_of
    if isinstance(table, TableSpec):
        if table.labels != schema.labels():
            raise ValueError("table: a TableSpec target must be the file's own histogram; use schema.coarsen(...)")
        sums = {}
        for query in ("total", "detailed", *table.margins):
            if table.groups(query) != schema.query_groups(query):
                raise ValueError(f"table: margin {query!r} is not the file's query {query!r} (other groups)")
            sums[query] = tuple((k,) for k in range(len(table.groups(query))))
        return table, sums, np.arange(schema.n_cells)
    raise TypeError(f"table must be None, a Coarsening (schema.coarsen(...)) or the file's TableSpec, got {table!r}")


def _group_rows(groups, n_cells: int) -> sp.csr_matrix:
    """(groups x cells) 0/1."""
    indptr = np.concatenate([[0], np.cumsum([len(g) for g in groups])])
    indices = np.concatenate([np.asarray(g, dtype=np.int64) for g in groups])
    return sp.csr_matrix((np.ones(indices.size, dtype=np.int64), indices, indptr), shape=(len(groups), n_cells))


def _leaf_rows(geo: Geography, units: np.ndarray) -> sp.csr_matrix:
    """(units x leaves) 0/1: the leaves under each unit."""
    start, stop = geo.leaf_start[units], geo.leaf_stop[units]
    n = stop - start
    indices = np.arange(n.sum()) - np.repeat(np.cumsum(n) - n, n) + np.repeat(start, n)
    indptr = np.concatenate([[0], np.cumsum(n)])
    return sp.csr_matrix((np.ones(indices.size, dtype=np.int64), indices, indptr), shape=(units.size, geo.n_leaves))


def _checked_sums(variances: np.ndarray, parts: tuple, query: str, level: str) -> np.ndarray:
    """Which sums of a query are close enough to one discrete Gaussian (each distinct variance and size once)."""
    keep = np.ones(len(parts), dtype=bool)
    sizes = np.array([len(part) for part in parts])
    for variance in np.unique(variances):
        for size in np.unique(sizes[sizes > 1]):
            if summed_noise_error([float(variance)] * int(size)) > SUMMED_NOISE_TOLERANCE:
                keep[sizes == size] = False
    if not keep.all():
        warnings.warn(
            f"{level} {query!r}: {int((~keep).sum())} sums of its values are left out: their summed noise is "
            f"further than {SUMMED_NOISE_TOLERANCE:g} (log pmf within 5 sds) from one discrete Gaussian",
            stacklevel=3,
        )
    return keep


def _chosen_queries(source, levels, queries) -> list:
    """The queries used: default every one measured at the levels; given ones checked."""
    order = source.schema.default_queries()
    found = {q for level in levels for q in source.queries(level)}
    if queries is None:
        return sorted(found, key=lambda q: (order.index(q) if q in order else len(order), q))
    queries = [queries] if isinstance(queries, str) else list(queries)
    for query in queries:
        if query not in found:
            raise ValueError(f"queries: {query!r} is not measured at the levels used {tuple(levels)}")
    return queries


def measurement_release(source, table=None, levels=None, queries=None, *, invariants: bool = True):
    """``(census, mechanism, y)`` for the measurements of ``source`` over a target table.

    Parameters
    ----------
    source : NoisyMeasurementFile
        Anything with ``geography``, ``schema``, ``levels``, ``state_total``, ``queries(level)``,
        ``measurements(level, query) -> (unit indices, values, variances)``, ``constraint_names(level)`` and
        ``constraints(level, name) -> (units, values, sign)``.
    table : Coarsening or TableSpec, optional
        The target table: by default the full histogram; a ``schema.coarsen(...)`` for a coarser one.
    levels : sequence of str, optional
        The levels whose measurements are used (default all read); the finest of them is the leaf level.
    queries : sequence of str, optional
        The queries used (default every one measured).
    invariants : bool
        Impose the state total (if the source has one) and the equality constraints of the levels read down
        to the leaf level that are exact functions of the target cells; refused as a dense matrix beyond
        ``DENSE_INVARIANT_BYTES``.

    Returns
    -------
    (CensusQueries, NoisyMeasurements, numpy.ndarray)
        Queries ordered by unit (breadth first), then query as in the production strategy, then part.
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
    queries = _chosen_queries(source, levels, queries)
    blocks = []  # (query, its rank, (row units, row parts), rows, values, variances): group major
    for level in levels:
        for rank, query in enumerate(queries):
            if query not in source.queries(level):
                continue
            if query not in sums:
                raise ValueError(
                    f"the file's query {query!r} at {level} is not a query of the {source.schema.name} histogram"
                )
            units, values, variances = source.measurements(level, query)
            units, parts, variances = position[np.asarray(units)], sums[query], np.asarray(variances, dtype=float)
            keep = _checked_sums(variances, parts, query, level)
            if not keep.any():
                continue
            kept = [part for part, k in zip(parts, keep, strict=True) if k]
            values = np.asarray(values)
            summed = np.stack([values[:, list(part)].sum(axis=1, dtype=np.int64) for part in kept])
            var = np.stack([variances * len(part) for part in kept])
            groups = [group for group, k in zip(spec.groups(query), keep, strict=True) if k]
            rows = sp.kron(_group_rows(groups, spec.n_cells), _leaf_rows(geo, units), "csr")  # (part, unit) rows
            cells = _leaf_major(rows, geo.n_leaves, spec.n_cells)
            labels = (np.tile(units, len(kept)), np.repeat(np.flatnonzero(keep), units.size))
            blocks.append((query, rank, labels, cells, summed, var))
    if not blocks:
        raise ValueError(f"no measurement of queries {queries} at levels {tuple(levels)}")
    exact = _invariants(source, geo, position, geo.level_names[1:], spec, cell_of) if invariants else None
    return _assemble(geo, spec, blocks, exact)


def _leaf_major(rows: sp.csr_matrix, n_leaves: int, width: int) -> sp.csr_matrix:
    """Columns of kron(groups, leaves) (cell k * n_leaves + leaf) renumbered leaf major (leaf * width + k)."""
    rows = rows.tocsr()
    k, leaf = np.divmod(rows.indices, n_leaves)
    out = sp.csr_matrix((rows.data, leaf * width + k, rows.indptr), shape=(rows.shape[0], n_leaves * width))
    out.sort_indices()
    return out


#: The largest dense invariant matrix (bytes) handed to NoisyMeasurements, which checks invariants densely.
DENSE_INVARIANT_BYTES = 2**30


def _invariants(source, geo: Geography, position: np.ndarray, levels, spec: TableSpec, cell_of: np.ndarray):
    """(A, a): the state total and the equality constraints of ``levels`` that the target cells determine."""
    blocks, totals = [], []
    n_cells = geo.n_leaves * spec.n_cells
    if source.state_total is not None:
        blocks.append(sp.csr_matrix(np.ones((1, n_cells), dtype=np.int64)))
        totals.append(np.array([source.state_total]))
    size = np.bincount(cell_of, minlength=spec.n_cells)
    for level in levels:
        for name in source.constraint_names(level):
            units, values, sign = source.constraints(level, name)
            groups = constraint_groups(name, source.schema)
            if sign != "=" or groups is None or len(groups) != 1:
                continue
            hit, counts = np.unique(cell_of[list(groups[0])], return_counts=True)
            if np.any(counts != size[hit]):
                continue  # the constraint splits a target cell: no function of them
            rows = sp.kron(_leaf_rows(geo, position[np.asarray(units)]), _group_rows([hit], spec.n_cells), "csr")
            blocks.append(rows)
            totals.append(np.asarray(values).sum(axis=1))
    if not blocks:
        return None
    A = sp.vstack(blocks, format="csr")
    if A.shape[0] * A.shape[1] * 8 > DENSE_INVARIANT_BYTES:
        raise ValueError(
            f"release: {A.shape[0]} invariants over {A.shape[1]} cells would take {A.shape[0] * A.shape[1] * 8 / 2**30:.1f} "
            "GiB as the dense matrix NoisyMeasurements checks; use a coarser table, fewer leaves (levels, counties) "
            "or invariants=False"
        )
    return A, np.concatenate(totals).astype(np.int64)


def _assemble(geo: Geography, spec: TableSpec, blocks: list, invariants):
    """One CensusQueries, mechanism and y from the per-(level, query) blocks, rows sorted (unit, query, part)."""
    unit = np.concatenate([b[2][0] for b in blocks])
    part = np.concatenate([b[2][1] for b in blocks])
    rank = np.concatenate([np.full(b[2][0].size, b[1]) for b in blocks])
    kind = np.concatenate([np.full(b[2][0].size, b[0], dtype=object) for b in blocks])
    matrix = sp.vstack([b[3] for b in blocks], format="csr")
    y = np.concatenate([b[4].ravel() for b in blocks])
    variance = np.concatenate([b[5].ravel() for b in blocks])
    perm = np.lexsort((part, rank, unit))
    matrix = matrix[perm]
    matrix.sort_indices()
    census = CensusQueries(geo, spec, matrix, unit[perm], kind[perm].astype(str), part[perm])
    mechanism = NoisyMeasurements(matrix, np.sqrt(variance[perm]), invariants=invariants)
    return census, mechanism, y[perm]
