r"""A synthetic Noisy Measurement File in the Census Bureau's published parquet layout, with exact production noise.

From a :class:`~ppdinfer.census.synthetic_pl94.SyntheticPL94State` (the truth), :func:`write_nmf` writes
for every level below the US (the US level is national and not written)::

    <root>/US_Person_PL_PROD/<Level>.parquet/DPQuery/State=SSS/part-00000.parquet
    <root>/US_Person_PL_PROD/<Level>.parquet/Constraint/State=SSS/part-00000.parquet
    <root>/US_Unit_PL_PROD/<Level>.parquet/{DPQuery,Constraint}/State=SSS/part-00000.parquet

SSS is the state's geocode ('042'; read it as a string: pyarrow's hive partitioning would infer the integer
42); a level of more than ``units_per_part`` units gets several part files (part-00000, part-00001, ...:
consecutive runs of units in geography order).

**DPQuery rows** (one per unit and query): ``geocode``, ``query_name`` (the query + '_dpq'), one string
column per histogram axis (``hhgq``, ``votingage``, ``hispanic``, ``cenrace``; ``h1`` for units) holding
'*' where the query sums the axis out and else the name the query gives it ('hhinstlevels' in ``hhgq``
for that recode), ``query_shape`` (list<int32>: ``PERSON.query_shape``, [1] for total), ``value``
(list<int64>: truth + noise in C order over query_shape), ``variance`` (float32) and ``plb`` (the
query's share of the file's total rho, level share x query share, as the exact fraction 'a/b' that
``str(fractions.Fraction)`` prints). The persons file measures the eleven production queries at every
level, the housing-unit file 'detailed' (h1: vacant, occupied) alone (its total is invariant).

**Noise.** value = truth + e with e exact discrete Gaussian of variance :math:`1 / (\rho g p)`
(:func:`~ppdinfer.census.production.pl94_variances`, the exact Fraction) drawn by
``ppdinfer.mechanisms.exact_integer.discrete_gaussian`` (Canonne, Kamath & Steinke 2020). Each
(table, level, part) has its own stream under ``random_seed``, its queries drawn in order, so a seed and
``units_per_part`` give the same file whatever ``workers`` (4 to 6 million values a second per core).

**Constraint rows** (the same columns plus ``sign``; ``variance`` 0, ``plb`` '0'). Persons, every unit of
every level: ``hhgq_total_lb_con`` (shape [8], '>=') and ``hhgq_total_ub_con`` (shape [8], '<='), the
production bounds on the persons of each hhgq type from its unit counts u_t (housing units for type 0,
facilities for the GQ types): lower u_t (0 for households: vacant units hold nobody), upper 99,999 u_t;
at the State, whose total N is invariant, the lower bound is N where no other type has units and the upper
bound at most N minus the other types' lower bounds (DAS_2020_Redistricting_Production_Code,
``source/programs/constraints/querybase_constraints.py`` ``calculateRightHandSideHhgqTotal`` and
``Constraints_PL94_2020.py``); ``nurse_nva_0_con`` (shape [1], '=', [0]: nobody under 18 in a nursing
facility; axis columns ``hhgq`` = 'gqNursingTotal', ``votingage`` = 'nonvoting', the DAS recode names of
``source/constants.py``); at the State ``total_con`` (shape [1], '=', the state total). Housing units:
``total_con`` (the units' total, '=') at every level.

**Quirks** of the real file, off by default (:class:`NMFQuirks`): integer widths that differ between part
files, Constraint parts without ``sign``, units bypassed by the spine optimization (Constraint rows, no
DPQuery rows), no state total.
"""

from __future__ import annotations

import functools
import multiprocessing
import os
import time
from concurrent.futures import Executor, ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import scipy.sparse as sp

from ..mechanisms.exact_integer import discrete_gaussian, sample_array
from ..rng import SeedLike, root_seed
from ..validation import positive_int, probability
from .pl94 import PERSON, UNIT
from .production import pl94_budget_shares, pl94_variances
from .synthetic_pl94 import LEVELS, SyntheticPL94State

__all__ = ["NMFQuirks", "write_nmf"]

_FOLDERS = {"person": "US_Person_PL_PROD", "unit": "US_Unit_PL_PROD"}
_SCHEMAS = {"person": PERSON, "unit": UNIT}
#: The production cap on the persons per housing unit or GQ facility (``hhgq_cap``).
_HHGQ_CAP = 99_999
_DEFAULT_WIDTHS = (pa.int64(), pa.int32())  # value, query_shape
_INT32 = np.iinfo(np.int32)
#: Below this many values a level is written in this process (about 5 s of noise: starting processes costs more).
_PARALLEL_VALUES = 1 << 25


@dataclass(frozen=True)
class NMFQuirks:
    """The real file's quirks, for testing a reader (all off by default; ``quirks=True`` turns on every one,
    with 5 % of block groups bypassed).

    Attributes
    ----------
    mixed_widths : bool
        Every other part file (by level, folder and part number) holds int32 ``value`` and ``query_shape``
        lists, the others int64 (a Constraint part whose values do not fit int32 stays int64).
    missing_sign : bool
        The Constraint parts of the County and Block_Group levels lack the ``sign`` column.
    bypassed : tuple of str
        Geocodes written with Constraint rows but no DPQuery rows.
    bypassed_share : float
        A share of the block groups (drawn under ``random_seed``) bypassed too.
    omit_state_total : bool
        No State ``total_con`` row (the published file lacks the state total).
    """

    mixed_widths: bool = False
    missing_sign: bool = False
    bypassed: tuple = ()
    bypassed_share: float = 0.0
    omit_state_total: bool = False


@dataclass(frozen=True)
class _Query:
    name: str
    columns: tuple  # one string per histogram axis
    shape: tuple
    span: slice  # its rows in the stacked query matrix


@functools.cache
def _plan(table: str) -> tuple:
    """The measured queries of ``table`` and their stacked 0/1 matrix (values x cells, C order within each)."""
    schema = _SCHEMAS[table]
    queries, rows, start = [], [], 0
    for name in schema.default_queries() if table == "person" else ("detailed",):
        groups = schema.query_groups(name)
        columns = dict.fromkeys(schema.axis_names, "*")
        for part in schema.query_axes(name):
            columns[schema.recodes[part][0] if part in schema.recodes else part] = part
        queries.append(
            _Query(name, tuple(columns.values()), schema.query_shape(name) or (1,), slice(start, start + len(groups)))
        )
        rows += groups
        start += len(groups)
    indptr = np.cumsum([0] + [len(group) for group in rows])
    matrix = sp.csr_matrix(
        (np.ones(indptr[-1], dtype=np.int64), np.concatenate(rows), indptr), shape=(start, schema.n_cells)
    )
    return tuple(queries), matrix


@dataclass(frozen=True)
class _Part:
    """One part file of DPQuery rows and one of Constraint rows: a run of units of one level."""

    table: str
    level: str
    index: int
    dpquery: str
    constraint: str
    geocodes: list
    truth: sp.csr_matrix | np.ndarray
    facilities: np.ndarray | None
    measured: np.ndarray
    state_total: bool
    variances: dict
    shares: dict
    seed: tuple  # (entropy, spawn_key)
    mixed_widths: bool
    with_sign: bool


def write_nmf(
    root,
    state: SyntheticPL94State,
    *,
    table: str = "person",
    levels=None,
    random_seed: SeedLike = None,
    rho=None,
    quirks=None,
    units_per_part: int = 2048,
    workers: int | Executor = 1,
    overwrite: bool = False,
) -> dict:
    """Write a synthetic Noisy Measurement File of ``state`` (persons or housing units) under ``root``.

    Parameters
    ----------
    root : str or os.PathLike
        The folder that holds ``US_Person_PL_PROD`` / ``US_Unit_PL_PROD`` (created if missing).
    state : SyntheticPL94State
        The truth (:func:`~ppdinfer.census.synthetic_pl94.synthetic_pl94_state`).
    table : str
        'person' or 'unit'.
    levels : sequence of str, optional
        The levels to write (default every level of the state's geography).
    random_seed : int or Generator
        The noise (and the bypassed block groups) under this seed.
    rho : float or Fraction, optional
        The file's total budget (default the production rho of the table).
    quirks : NMFQuirks or bool, optional
        The real file's quirks (None or False: none; True: all, 5 % of block groups bypassed).
    units_per_part : int
        Units per part file (at most 500,000); part boundaries, and so the streams, depend on it.
    workers : int or concurrent.futures.Executor
        1 (default): write the part files in this process; n > 1: in n new processes for the levels of more
        than 2^25 values (started by 'spawn': a script must call it under ``if __name__ == "__main__":``); an
        Executor: every part submitted to it (left open).
    overwrite : bool
        Replace the part files of a partition already written (else a FileExistsError).

    Returns
    -------
    dict
        ``root``, ``table``, ``folder``, ``partition``, ``seconds`` and ``levels``: level -> ``units``,
        ``bypassed``, ``dpquery_rows``, ``constraint_rows``, ``parts``, ``dpquery`` and ``constraint``
        (partition folders) and ``seconds``.

    Examples
    --------
    >>> import tempfile, pyarrow.parquet as pq
    >>> from ppdinfer.census.synthetic_pl94 import synthetic_pl94_state
    >>> state = synthetic_pl94_state(["Cameron"], random_seed=0, levels=("State", "County", "Tract"))
    >>> with tempfile.TemporaryDirectory() as root:
    ...     written = write_nmf(root, state, random_seed=1, workers=1)
    ...     rows = pq.read_table(written["levels"]["County"]["dpquery"]).to_pylist()
    >>> written["levels"]["Tract"]["dpquery_rows"], rows[0]["query_name"], rows[0]["query_shape"]
    (11, 'total_dpq', [1])
    >>> rows[-1]["query_name"], rows[-1]["hhgq"], len(rows[-1]["value"]), rows[-1]["plb"]
    ('detailed_dpq', 'hhgq', 2016, '337038/16793603')
    """
    started = time.perf_counter()
    if not isinstance(state, SyntheticPL94State):
        raise TypeError(f"state must be a SyntheticPL94State (synthetic_pl94_state), got {type(state).__name__}")
    if table not in _FOLDERS:
        raise ValueError(f"table must be 'person' or 'unit', got {table!r}")
    geo = state.geography
    levels = _written_levels(levels, geo.level_names)
    quirks = _quirks(quirks)
    units_per_part = positive_int(units_per_part, "units_per_part")
    if units_per_part > 500_000:
        raise ValueError(f"units_per_part must be at most 500,000 (list offsets are int32), got {units_per_part}")
    if not isinstance(workers, Executor):
        workers = positive_int(workers, "workers")
    seed = root_seed(random_seed)
    measured = ~np.isin(geo.ids, _bypassed(state, quirks, seed))
    folder = Path(os.fspath(root)) / _FOLDERS[table]
    parts = {
        level: _parts(state, table, level, folder, seed, rho, quirks, units_per_part, measured) for level in levels
    }
    _prepare([job for level in levels for job in parts[level]], overwrite)
    summary = {"root": str(root), "table": table, "folder": str(folder), "partition": state.partition, "levels": {}}
    with _Runner(workers) as runner:
        for level in levels:
            level_started = time.perf_counter()
            counts = runner.map(parts[level])
            units = geo.level(level)
            summary["levels"][level] = {
                "units": int(units.size),
                "bypassed": int((~measured[units]).sum()),
                "dpquery_rows": sum(rows for rows, _ in counts),
                "constraint_rows": sum(rows for _, rows in counts),
                "parts": len(counts),
                "dpquery": str(Path(parts[level][0].dpquery).parent),
                "constraint": str(Path(parts[level][0].constraint).parent),
                "seconds": time.perf_counter() - level_started,
            }
    summary["seconds"] = time.perf_counter() - started
    return summary


def _written_levels(levels, available: tuple) -> tuple:
    """``levels`` checked against the state's levels (default all of them), in the geography's order."""
    if levels is None:
        return available
    if isinstance(levels, str):
        raise ValueError(f"levels must be a sequence of level names, not one string ({[levels]!r})")
    levels = list(levels)
    unknown = [level for level in levels if level not in available]
    if not levels or unknown or len(set(levels)) != len(levels):
        raise ValueError(f"levels must be distinct levels of the state {available}, got {levels!r}")
    return tuple(level for level in available if level in levels)


def _quirks(quirks) -> NMFQuirks:
    if quirks is None or quirks is False:
        return NMFQuirks()
    if quirks is True:
        return NMFQuirks(True, True, (), 0.05, True)
    if not isinstance(quirks, NMFQuirks):
        raise TypeError(f"quirks must be None, a bool or an NMFQuirks, got {type(quirks).__name__}")
    probability(quirks.bypassed_share, "quirks.bypassed_share", open_interval=False)
    if isinstance(quirks.bypassed, str):
        raise ValueError(f"quirks.bypassed must be a sequence of geocodes, not one string ({[quirks.bypassed]!r})")
    return quirks


def _bypassed(state: SyntheticPL94State, quirks: NMFQuirks, seed: np.random.SeedSequence) -> np.ndarray:
    """The geocodes written without DPQuery rows: the given ones and a share of the block groups."""
    geo = state.geography
    given = [str(code) for code in quirks.bypassed]
    unknown = sorted(set(given) - set(geo.ids.tolist()))
    if unknown:
        raise ValueError(f"quirks.bypassed: {unknown[:5]!r} are not geocodes of the state")
    drawn = []
    if quirks.bypassed_share > 0 and "Block_Group" in geo.level_names:
        groups = geo.ids[geo.level("Block_Group")]
        rng = np.random.Generator(np.random.PCG64(np.random.SeedSequence(seed.entropy, spawn_key=(*seed.spawn_key, 2))))
        drawn = rng.choice(groups, size=round(quirks.bypassed_share * groups.size), replace=False).tolist()
    return np.array(given + drawn, dtype=object)


def _parts(state, table, level, folder, seed, rho, quirks, units_per_part, measured) -> list:
    """The part jobs of one level: its units' truth in runs of ``units_per_part``."""
    geo = state.geography
    units = geo.level(level)
    truth = state.aggregate(level, state.persons if table == "person" else state.units)
    facilities = state.aggregate(level, state.gq_facilities) if table == "person" else None
    variances = pl94_variances(level, rho, table=table, exact=True)
    shares = pl94_budget_shares(level, table)
    depth = LEVELS.index(level)
    partition = f"State={state.partition}"
    jobs = []
    for index, start in enumerate(range(0, units.size, units_per_part)):
        run = slice(start, start + units_per_part)
        name = f"part-{index:05d}.parquet"
        jobs.append(
            _Part(
                table,
                level,
                index,
                str(folder / f"{level}.parquet" / "DPQuery" / partition / name),
                str(folder / f"{level}.parquet" / "Constraint" / partition / name),
                geo.ids[units[run]].tolist(),
                truth[run],
                None if facilities is None else facilities[run],
                measured[units[run]],
                level == "State" and not quirks.omit_state_total,
                variances,
                shares,
                (seed.entropy, (*seed.spawn_key, 0 if table == "person" else 1, depth, index)),
                quirks.mixed_widths,
                not (quirks.missing_sign and depth % 2 == 1),
            )
        )
    return jobs


def _prepare(jobs: list, overwrite: bool) -> None:
    """Create the partition folders of ``jobs``; refuse (or, with ``overwrite``, remove) part files already there,
    before writing anything."""
    folders = sorted({Path(job.dpquery).parent for job in jobs} | {Path(job.constraint).parent for job in jobs})
    old = {folder: sorted(folder.glob("part-*.parquet")) for folder in folders if folder.is_dir()}
    taken = [folder for folder, paths in old.items() if paths]
    if taken and not overwrite:
        raise FileExistsError(f"{taken[0]} already holds part files (pass overwrite=True to replace them)")
    for folder in folders:
        for path in old.get(folder, []):
            path.unlink()
        folder.mkdir(parents=True, exist_ok=True)


class _Runner:
    """Runs part jobs: on the Executor given, else in this process when one process is asked for or a level has
    fewer than ``_PARALLEL_VALUES`` values, else in processes started (by 'spawn') for the first such level and
    closed on exit."""

    def __init__(self, workers):
        self.workers, self.pool = workers, None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self.pool is not None:
            self.pool.shutdown()
        return False

    def map(self, jobs: list) -> list:
        if isinstance(self.workers, Executor):
            return list(self.workers.map(_write_part, jobs))
        values = sum(len(job.geocodes) for job in jobs) * _plan(jobs[0].table)[1].shape[0]
        if self.workers == 1 or len(jobs) == 1 or values < _PARALLEL_VALUES:
            return [_write_part(job) for job in jobs]
        if self.pool is None:
            self.pool = ProcessPoolExecutor(self.workers, mp_context=multiprocessing.get_context("spawn"))
        return list(self.pool.map(_write_part, jobs))


def _write_part(part: _Part) -> tuple[int, int]:
    """Write one part's DPQuery and Constraint files; the rows of each."""
    queries, matrix = _plan(part.table)
    exact = (sp.csr_matrix(part.truth) @ matrix.T).toarray()
    rng = np.random.Generator(np.random.PCG64(np.random.SeedSequence(part.seed[0], spawn_key=part.seed[1])))
    measured = []  # (name, axis columns, shape, values, variance, plb, sign) of each query
    for query in queries:
        values = exact[:, query.span]
        values = values + sample_array(discrete_gaussian, part.variances[query.name], values.shape, rng)
        variance, share = np.float32(part.variances[query.name]), str(part.shares[query.name])
        measured.append((query.name + "_dpq", query.columns, query.shape, values[part.measured], variance, share, None))
    constrained = [
        (name, columns, (values.shape[1],), values, np.float32(0), "0", sign if part.with_sign else None)
        for name, columns, values, sign in _constraints(part, exact, queries)
    ]
    geocodes = pa.array(part.geocodes, pa.string())
    files = (
        (part.dpquery, geocodes.filter(pa.array(part.measured)), measured),
        (part.constraint, geocodes, constrained),
    )
    rows = []
    for folder, (path, units, queries_rows) in enumerate(files):
        widths = _widths(part, folder, [row[3] for row in queries_rows])
        table = pa.concat_tables([_rows(units, _SCHEMAS[part.table].axis_names, *row, widths) for row in queries_rows])
        pq.write_table(table, path)
        rows.append(table.num_rows)
    return rows[0], rows[1]


def _widths(part: _Part, folder: int, values: list) -> tuple:
    """(value, query_shape) list types of a file: the default, or under mixed widths int32 in every other file
    (by level, folder and part number) whose values all fit, else int64."""
    if not part.mixed_widths:
        return _DEFAULT_WIDTHS
    fits = all(v.size == 0 or (v.min() >= _INT32.min and v.max() <= _INT32.max) for v in values)
    narrow = (part.index + LEVELS.index(part.level) + folder) % 2 == 1 and fits
    return (pa.int32(), pa.int32()) if narrow else (pa.int64(), pa.int64())


def _constraints(part: _Part, exact: np.ndarray, queries: tuple) -> list:
    """(name, axis columns, values (units x k), sign) of the part's constraints, from the truth."""
    if part.table == "unit":
        return [("total_con", ("*",), exact.sum(axis=1, keepdims=True), "=")]
    total = exact[:, queries[0].span]  # 'total' is the first person query
    lower, upper = _hhgq_bounds(part.facilities, total[:, 0] if part.level == "State" else None)
    out = [
        ("hhgq_total_lb_con", ("hhgq", "*", "*", "*"), lower, ">="),
        ("hhgq_total_ub_con", ("hhgq", "*", "*", "*"), upper, "<="),
        ("nurse_nva_0_con", ("gqNursingTotal", "nonvoting", "*", "*"), np.zeros_like(total), "="),
    ]
    if part.state_total:
        out.append(("total_con", ("*", "*", "*", "*"), total, "="))
    return out


def _hhgq_bounds(units: np.ndarray, total=None) -> tuple:
    """The production lower and upper bounds on the persons of each hhgq type from its unit counts (units x 8),
    with the invariant total (per unit) where given."""
    per_unit = np.ones(units.shape[1], dtype=np.int64)
    per_unit[0] = 0  # vacant housing units hold nobody
    lower = units * per_unit
    upper = units * _HHGQ_CAP
    if total is None:
        return lower, upper
    total = np.asarray(total)[:, None]
    others = units.sum(axis=1, keepdims=True) - units
    upper = np.minimum(np.where(units > 0, total - (lower.sum(axis=1, keepdims=True) - lower), 0), upper)
    return np.where(others > 0, lower, total), upper


def _rows(geocodes, axes, name, columns, shape, values, variance, plb, sign, widths) -> pa.Table:
    """The rows of one query (or constraint) for ``geocodes``: values (units x k) in C order over ``shape``."""
    n, k = values.shape
    value_type, shape_type = widths
    data = {"geocode": geocodes, "query_name": pa.array([name] * n, pa.string())}
    data.update({axis: pa.array([column] * n, pa.string()) for axis, column in zip(axes, columns, strict=True)})
    data["query_shape"] = _lists(np.tile(np.asarray(shape), n), len(shape), shape_type)
    data["value"] = _lists(values.ravel(), k, value_type)
    data["variance"] = pa.array(np.full(n, variance, dtype=np.float32))
    if sign is not None:
        data["sign"] = pa.array([sign] * n, pa.string())
    data["plb"] = pa.array([plb] * n, pa.string())
    return pa.table(data)


def _lists(flat: np.ndarray, width: int, value_type) -> pa.ListArray:
    """A list array of ``flat`` cut into lists of ``width`` values."""
    offsets = pa.array(np.arange(0, flat.size + 1, width, dtype=np.int32))
    return pa.ListArray.from_arrays(offsets, pa.array(flat.astype(value_type.to_pandas_dtype()), value_type))
