r"""The files of a 2020 Noisy Measurement File and the two passes that turn their rows into arrays.

The Bureau's release (the 2020 P.L. 94-171 NMF, AWS Open Data ``2020-pl94-nmf-state-partitioned``) lays
out one folder per table and geographic level, each split into noisy measurements and constraints, and
those by state branch::

    <root>/US_Person_PL_PROD/<Level>.parquet/DPQuery/State=SSS/part-*.parquet
    <root>/US_Person_PL_PROD/<Level>.parquet/Constraint/State=SSS/part-*.parquet
    <root>/US_Unit_PL_PROD/...                       (housing units, the same layout)
    <root>/US_Person_PL_PROD/US.parquet/DPQuery/part-*.parquet   (the nation: no State partition)

``SSS`` is the AIAN-branch flag and the 2-digit state FIPS code ('042' Pennsylvania; Oklahoma has '040'
and '140'). Files are opened one at a time, so part files whose integer widths differ (int32 or int64
lists) or that lack a column (some constraint parts have no ``sign``) are each read as they are.

A level is read in two passes with column projection, both under the same row filter:
``scan_level`` reads geocodes and query names (the level's units, the rows of each query) and the
constraint rows; after ``build_geography`` has placed every unit, ``fill_level`` reads the
value lists batch by batch and writes each straight from the arrow buffers into its row of a
preallocated array (int16, widened only when a value needs it).

Sources (facts, no code): uscensusbureau/DAS_2020_GLS_Uncertainty_Evaluation (``GLS/main_two_pass_alg.py``:
one folder per level, DPQuery and Constraint; units bypassed by the spine optimization have constraint
rows only; each level's geocodes one width; constraint signs '=', '<=', '>='); google-research/census-bluedown
(``constants.py``: the ``State=0SS`` / ``State=1SS`` branch folders); sbaldasty/dpvalue
(``src/noisyvalue/census.py``: query shapes over every axis, 1 for an axis summed out).
"""

from __future__ import annotations

import numbers
import re
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds

from .geography import Geography
from .pl94 import HistogramSchema

#: The documented names; the others serve :mod:`.nmf` (the two passes, the geography).
__all__ = ["KINDS", "LEVELS", "ROOT_ID", "TABLE_FOLDERS", "NMFLayout", "geocode_filter", "state_key"]

#: The PL94 levels of the DAS spine, top down (``source/configs/production/pl94/person_US.ini``).
LEVELS = ("US", "State", "County", "Tract", "Block_Group", "Block")
#: The folder of each table under the root.
TABLE_FOLDERS = {"person": "US_Person_PL_PROD", "unit": "US_Unit_PL_PROD"}
#: The two datasets of every level: noisy measurements and constraints.
KINDS = ("DPQuery", "Constraint")
#: Rows per record batch: a batch of detailed queries (2,016 values each) stays near 16 MB as int64.
BATCH_ROWS = 1024
#: The id of the artificial root unit (level 'US') that holds a state's branches or the selected counties.
ROOT_ID = "US"
_SIGNS = {"=": "=", "==": "=", "eq": "=", "<=": "<=", "le": "<=", ">=": ">=", "ge": ">="}
_VALUE_TYPES = (np.int16, np.int32, np.int64)


def state_key(state) -> tuple[str, str | None]:
    """(2-digit FIPS code, 3-character partition id or None) of a ``state`` argument.

    An int or a string of one or two digits names a state (every branch of it); a string of three
    characters names one partition.

    Examples
    --------
    >>> state_key(42), state_key("042"), state_key("6")
    (('42', None), ('42', '042'), ('06', None))
    """
    if isinstance(state, bool) or not isinstance(state, numbers.Integral | str):
        raise TypeError(f"state must be a FIPS code (int or str) or a 3-character partition id, got {state!r}")
    if isinstance(state, numbers.Integral):
        if not 0 < int(state) < 100:
            raise ValueError(f"state must be a 2-digit FIPS code (1..99), got {state!r}")
        return f"{int(state):02d}", None
    text = state.strip()
    if not text.isdigit() or len(text) > 3:
        raise ValueError(f"state must be a FIPS code ('42') or a partition id ('042', '142'), got {state!r}")
    if len(text) == 3:
        return text[1:], text
    return text.zfill(2), None


@dataclass(frozen=True)
class NMFLayout:
    """The folder of one table of an NMF and the levels found in it.

    Examples
    --------
    >>> NMFLayout.open("/no/such/root", "person")
    Traceback (most recent call last):
    ...
    FileNotFoundError: root: no NMF folder /no/such/root
    """

    table_dir: Path
    levels: tuple

    @classmethod
    def open(cls, root, table: str) -> NMFLayout:
        """The layout of ``table`` ('person' or 'unit') under ``root``; FileNotFoundError where either is missing."""
        if table not in TABLE_FOLDERS:
            raise ValueError(f"table must be one of {tuple(TABLE_FOLDERS)}, got {table!r}")
        root = Path(root)
        if not root.is_dir():
            raise FileNotFoundError(f"root: no NMF folder {root}")
        table_dir = root / TABLE_FOLDERS[table]
        if not table_dir.is_dir():
            found = sorted(p.name for p in root.iterdir() if p.is_dir())
            raise FileNotFoundError(f"table {table!r}: no folder {table_dir} (folders in root: {found})")
        levels = tuple(level for level in LEVELS if (table_dir / f"{level}.parquet").is_dir())
        if not levels:
            raise FileNotFoundError(f"table {table!r}: no <Level>.parquet folder of {LEVELS} in {table_dir}")
        return cls(table_dir, levels)

    def kind_dir(self, level: str, kind: str) -> Path:
        """The folder of one level's DPQuery or Constraint dataset."""
        return self.table_dir / f"{level}.parquet" / kind

    def partitions(self, level: str) -> tuple:
        """The State=SSS partition ids of a level (over both kinds), sorted."""
        found = set()
        for kind in KINDS:
            folder = self.kind_dir(level, kind)
            if folder.is_dir():
                found.update(p.name.split("=", 1)[1] for p in folder.glob("State=*") if p.is_dir())
        return tuple(sorted(found))

    def files(self, level: str, kind: str, partitions) -> list:
        """The parquet files of ``kind`` at ``level`` in the given partitions, sorted by path."""
        folder = self.kind_dir(level, kind)
        return sorted(path for p in partitions for path in (folder / f"State={p}").rglob("*.parquet"))


def geocode_filter(prefixes) -> ds.Expression | None:
    """Rows whose geocode starts with one of ``prefixes``, as byte ranges [p, p with its last character
    incremented): comparisons that parquet row-group statistics can prune, unlike ``starts_with``.

    Examples
    --------
    >>> str(geocode_filter(["0401"]))
    '((geocode >= "0401") and (geocode < "0402"))'
    """
    if prefixes is None:
        return None
    expression = None
    for prefix in prefixes:
        upper = prefix[:-1] + chr(ord(prefix[-1]) + 1)
        term = (ds.field("geocode") >= prefix) & (ds.field("geocode") < upper)
        expression = term if expression is None else expression | term
    return expression


def scan(path: Path, columns, optional=(), where=None):
    """Record batches of ``columns`` (and those of ``optional`` the file has) of one parquet file, rows
    kept by the filter ``where``; a ValueError names a missing column and the file."""
    dataset = ds.dataset(path, format="parquet")
    names = set(dataset.schema.names)
    missing = [c for c in columns if c not in names]
    if missing:
        raise ValueError(f"{path}: no column {missing[0]!r} (columns: {dataset.schema.names})")
    wanted = list(columns) + [c for c in optional if c in names]
    # one batch read ahead, no pre-buffering of whole row groups, no decoding threads: a few MB in flight
    # (the defaults hold 300 MB more while a state's block file is read, at no gain in time on 2 cores)
    options = ds.ParquetFragmentScanOptions(pre_buffer=False)
    scanner = dataset.scanner(
        columns=wanted,
        filter=where,
        batch_size=BATCH_ROWS,
        batch_readahead=1,
        fragment_readahead=1,
        fragment_scan_options=options,
        use_threads=False,
    )
    yield from scanner.to_batches()


def list_values(array: pa.Array, what: str) -> tuple[np.ndarray, np.ndarray]:
    """(offsets, flat values) of a list column: row r holds ``flat[offsets[r]:offsets[r + 1]]``, no copy
    of the values; nulls (a null list or a null inside one) are refused."""
    if array.null_count or array.values.null_count:
        raise ValueError(f"{what}: a null list or a null inside one")
    offsets = array.offsets.to_numpy()
    return offsets, array.values.to_numpy()


def strings(array: pa.Array) -> pa.Array:
    """A string column as plain (32-bit offset) strings, whatever string type the file wrote."""
    if pa.types.is_dictionary(array.type):
        array = array.dictionary_decode()
    return array if array.type == pa.string() else pc.cast(array, pa.string())


@dataclass(frozen=True)
class Rows:
    """The rows of one (level, query) or (level, constraint): sorted unit indices and their values."""

    units: np.ndarray
    values: np.ndarray
    variances: np.ndarray | None = None
    sign: str | None = None


def _query_of(raw, schema: HistogramSchema, where: str) -> str:
    """The query name of a DPQuery row's ``query_name`` ('hispanic * cenrace_dpq' -> 'hispanic * cenrace')."""
    if not isinstance(raw, str) or not raw.endswith("_dpq"):
        raise ValueError(f"{where}: query_name {raw!r} is not a noisy query name (<query>_dpq)")
    query = raw[: -len("_dpq")]
    try:
        schema.query_shape(query)
    except (TypeError, ValueError) as error:
        raise ValueError(f"{where}: unknown query {raw!r} for the {schema.name} histogram: {error}") from None
    return query


def _names(batch: pa.RecordBatch, where: str):
    """(row codes, distinct names) of a batch's query_name column."""
    column = pc.dictionary_encode(strings(batch.column("query_name")))
    if column.null_count:
        raise ValueError(f"{where}: a row has no query_name")
    return column.indices.to_numpy(), column.dictionary.to_pylist()


def _grouped(codes: np.ndarray, names: list):
    """(name, rows) for each name present."""
    for k, name in enumerate(names):
        rows = np.flatnonzero(codes == k)
        if rows.size:
            yield name, rows


def _squeezed(shape) -> tuple:
    return tuple(int(n) for n in shape if n != 1)


def _distinct_shapes(column: pa.Array, rows: np.ndarray, where: str) -> list:
    """The distinct query_shape lists of the given rows."""
    offsets, flat = list_values(column, f"{where}: query_shape")
    lengths = np.diff(offsets)[rows]
    shapes = []
    for length in np.unique(lengths):
        chosen = rows[lengths == length]
        matrix = flat[offsets[chosen][:, None] + np.arange(length)]
        same = np.all(matrix == matrix[:1])  # the usual case: one shape, no sort
        shapes.extend(matrix[:1].tolist() if same else np.unique(matrix, axis=0).tolist())
    return shapes


def _check_shapes(column: pa.Array, rows: np.ndarray, expected: tuple, where: str) -> None:
    """Every row's query_shape equals ``expected`` up to axes of size 1 ([1, 1, 2, 63] is (2, 63))."""
    for shape in _distinct_shapes(column, rows, where):
        if _squeezed(shape) != _squeezed(expected):
            raise ValueError(f"{where}: query_shape {shape} disagrees with the schema's {list(expected)}")


def _row_block(offsets: np.ndarray, flat: np.ndarray, rows: np.ndarray, width: int) -> np.ndarray:
    """The (rows, width) values of the given rows (each of ``width`` values): a view when they are adjacent."""
    first = offsets[rows[0]]
    if rows[-1] - rows[0] + 1 == rows.size and offsets[rows[-1] + 1] - first == rows.size * width:
        return flat[first : first + rows.size * width].reshape(rows.size, width)
    return flat[offsets[rows][:, None] + np.arange(width)]


def _narrowest(low: int, high: int, at_least) -> type:
    for dtype in _VALUE_TYPES:
        info = np.iinfo(dtype)
        if info.min <= low and high <= info.max and np.dtype(dtype).itemsize >= np.dtype(at_least).itemsize:
            return dtype
    raise ValueError(f"values in [{low}, {high}] do not fit in int64")


class _Store:
    """Preallocated values and variances of one (level, query), rows in the order of its sorted units."""

    def __init__(self, units: np.ndarray, width: int):
        self.units = units
        self.values = np.empty((units.size, width), dtype=np.int16)
        self.variances = np.empty(units.size, dtype=np.float64)
        self.filled = 0

    def put(self, dest: np.ndarray, block: np.ndarray, variances: np.ndarray) -> None:
        low, high = int(block.min()), int(block.max())
        info = np.iinfo(self.values.dtype)
        if low < info.min or high > info.max:
            self.values = self.values.astype(_narrowest(low, high, self.values.dtype))
        if np.all(np.diff(dest) == 1):
            self.values[dest[0] : dest[-1] + 1] = block
            self.variances[dest[0] : dest[-1] + 1] = variances
        else:
            self.values[dest] = block
            self.variances[dest] = variances
        self.filled += dest.size


def _sign_of(name: str) -> str:
    """The sign a constraint's name implies: lb -> '>=', ub -> '<=', else '='."""
    if re.search(r"(^|_)lb(_|$)", name):
        return ">="
    if re.search(r"(^|_)ub(_|$)", name):
        return "<="
    return "="


def constraint_groups(name: str, schema: HistogramSchema):
    """The fine-cell groups a constraint this reader interprets sums, or None."""
    if name == "total_con":
        return (tuple(range(schema.n_cells)),)
    if schema.name != "person":
        return None
    if name == "nurse_nva_0_con":
        labels = dict(schema.axes)
        index = np.arange(schema.n_cells).reshape(schema.shape)
        cells = index[labels["hhgq"].index("nursing"), labels["votingage"].index("0-17")]
        return (tuple(int(k) for k in np.sort(cells.ravel())),)
    if name in ("hhgq_total_lb_con", "hhgq_total_ub_con"):
        return schema.query_groups("hhgq")
    return None


@dataclass(frozen=True)
class LevelScan:
    """A level after the first pass: its DPQuery files and the row filter (the second pass uses both), its
    unit geocodes (sorted; also as fixed-width bytes, ``keys``, of the level's one ``width``), the geocodes
    of each query's rows, its constraint rows (name -> geocodes, values, sign)."""

    files: list
    where: ds.Expression | None
    units: pa.Array
    keys: np.ndarray
    width: int
    measured: dict
    constraints: dict


def _string_offsets(array: pa.Array) -> np.ndarray:
    """The offsets of a (32-bit) string array into its data buffer."""
    return np.frombuffer(array.buffers()[1], dtype=np.int32)[array.offset : array.offset + len(array) + 1]


def _fixed_width(geocodes: pa.Array, width: int, what: str) -> np.ndarray:
    """Geocodes of one width as numpy bytes of that width, read from the arrow buffer without a copy."""
    offsets = _string_offsets(geocodes)
    if geocodes.null_count or np.any(np.diff(offsets) != width):
        raise ValueError(f"{what}: a geocode that is missing or not {width} characters long")
    data = np.frombuffer(geocodes.buffers()[2], dtype=np.uint8)[offsets[0] : offsets[-1]]
    return data.view(f"S{width}")


def _scan_measurements(files: list, schema: HistogramSchema, where) -> tuple[dict, list]:
    measured, seen, known = defaultdict(list), [], {}
    for path in files:
        for batch in scan(path, ["geocode", "query_name"], where=where):
            geocode = strings(batch.column("geocode"))
            codes, names = _names(batch, str(path))
            seen.append(pc.unique(geocode))
            for raw, rows in _grouped(codes, names):
                query = known[raw] if raw in known else known.setdefault(raw, _query_of(raw, schema, str(path)))
                measured[query].append(geocode.take(pa.array(rows)))
    return {q: pa.concat_arrays(parts) for q, parts in measured.items()}, seen


def _scan_constraints(files: list, schema: HistogramSchema, where) -> tuple[dict, list]:
    parts, seen = defaultdict(lambda: ([], [], set())), []
    for path in files:
        for batch in scan(path, ["geocode", "query_name", "value"], ["query_shape", "sign"], where=where):
            geocode = strings(batch.column("geocode"))
            codes, names = _names(batch, str(path))
            offsets, flat = list_values(batch.column("value"), f"{path}: value")
            lengths = np.diff(offsets)
            has_shape = "query_shape" in batch.schema.names
            seen.append(pc.unique(geocode))
            for name, rows in _grouped(codes, names):
                here = f"{path}: constraint {name!r}"
                width = int(lengths[rows[0]])
                if np.any(lengths[rows] != width):
                    raise ValueError(f"{here}: value lists of different lengths {np.unique(lengths[rows]).tolist()}")
                shapes = _distinct_shapes(batch.column("query_shape"), rows, here) if has_shape else []
                for shape in shapes:
                    if int(np.prod(shape)) != width:
                        raise ValueError(f"{here}: {width} values but query_shape {shape}")
                geocodes, values, signs = parts[name]
                geocodes.append(geocode.take(pa.array(rows)))
                values.append(_row_block(offsets, flat, rows, width).astype(np.int64))
                given = batch.column("sign").take(pa.array(rows)) if "sign" in batch.schema.names else None
                if given is None or given.null_count:
                    signs.add(_sign_of(name))
                for sign in [] if given is None else pc.unique(given.drop_null()).to_pylist():
                    if sign not in _SIGNS:
                        raise ValueError(f"{here}: unknown sign {sign!r} (known: {sorted(_SIGNS)})")
                    signs.add(_SIGNS[sign])
    out = {}
    for name, (geocodes, values, signs) in parts.items():
        if len(signs) > 1 or len({v.shape[1] for v in values}) > 1:
            raise ValueError(f"constraint {name!r}: rows with different signs {sorted(signs)} or value counts")
        groups, sign = constraint_groups(name, schema), signs.pop()
        if groups is not None and (values[0].shape[1] != len(groups) or sign != _sign_of(name)):
            raise ValueError(
                f"constraint {name!r}: {values[0].shape[1]} values with sign {sign!r}, expected {len(groups)} "
                f"with sign {_sign_of(name)!r}"
            )
        out[name] = (pa.concat_arrays(geocodes), np.concatenate(values), sign)
    return out, seen


def scan_level(layout: NMFLayout, level: str, partitions, schema: HistogramSchema, counties=None) -> LevelScan:
    """The first pass over a level: geocodes and query names of its DPQuery rows, its constraint rows, in the
    given partitions (and counties: a geocode prefix filter); refuses mixed geocode widths."""
    where = geocode_filter(counties)
    files = layout.files(level, "DPQuery", partitions)
    measured, seen = _scan_measurements(files, schema, where)
    constraints, seen_too = _scan_constraints(layout.files(level, "Constraint", partitions), schema, where)
    units = pc.unique(pa.concat_arrays(seen + seen_too)) if seen or seen_too else pa.array([], pa.string())
    if len(units) == 0:
        among = "" if counties is None else f" of counties {counties}"
        raise ValueError(f"level {level!r}: no rows{among} in partitions {list(partitions)}")
    if units.null_count:
        raise ValueError(f"level {level!r}: a row has no geocode")
    units = units.take(pc.sort_indices(units))
    lengths = np.diff(_string_offsets(units))
    widths = np.unique(lengths)
    if widths.size > 1:
        examples = [str(units[int(np.flatnonzero(lengths == w)[0])]) for w in widths]
        raise ValueError(f"level {level!r}: geocodes of mixed widths {widths.tolist()} (e.g. {examples})")
    width = int(widths[0])
    keys = _fixed_width(units, width, f"level {level!r}")
    return LevelScan(files, where, units, keys, width, measured, constraints)


def build_geography(scans: dict) -> Geography:
    """The units of the levels read, each under the unit of the level above whose geocode prefixes it."""
    ids, parents, above = [ROOT_ID], [None], None
    for level, found in scans.items():
        if above is None:
            parents.extend([ROOT_ID] * len(found.units))
        else:
            if found.width <= above.width:
                raise ValueError(
                    f"level {level!r}: geocodes of width {found.width} are no longer than the level above's"
                )
            prefix = pc.utf8_slice_codeunits(found.units, 0, above.width)
            missing = pc.is_null(pc.index_in(prefix, value_set=above.units)).to_numpy(zero_copy_only=False)
            if missing.any():
                orphan = str(found.units[int(np.flatnonzero(missing)[0])])
                raise ValueError(
                    f"level {level!r}: geocode {orphan!r} has no parent {orphan[: above.width]!r} at the level above"
                )
            parents.extend(prefix.to_pylist())
        ids.extend(found.units.to_pylist())
        above = found
    geography = Geography(ids, parents, ["US", *scans])
    if not np.array_equal(geography.ids, np.array(ids, dtype=object)):  # each level sorted: breadth first already
        raise RuntimeError("the units of a level are not grouped by parent in geocode order")
    return geography


def unit_indices(geocodes: pa.Array, found: LevelScan, first: int) -> np.ndarray:
    """Geography indices of geocodes of a level scanned as ``found`` (its sorted units start at index ``first``),
    by binary search in its fixed-width keys."""
    keys = _fixed_width(geocodes, found.width, "geocodes")
    position = np.searchsorted(found.keys, keys)
    if np.any(found.keys[np.minimum(position, found.keys.size - 1)] != keys):
        raise RuntimeError("a geocode of the second pass was not met in the first: did the files change?")
    return first + position.astype(np.int64)


def sorted_rows(units: np.ndarray, level: str, what: str, geography: Geography) -> np.ndarray:
    """The order that sorts ``units``; a unit listed twice is refused."""
    order = np.argsort(units, kind="stable")
    repeated = np.flatnonzero(np.diff(units[order]) == 0)
    if repeated.size:
        unit = geography.ids[units[order][repeated[0]]]
        raise ValueError(f"level {level!r}: unit {unit!r} is measured twice for {what}")
    return order


def fill_level(found: LevelScan, level: str, first: int, geography: Geography, schema: HistogramSchema) -> dict:
    """The second pass over a level's DPQuery files: values and variances into preallocated arrays."""
    stores, shapes = {}, {}
    for query, geocodes in found.measured.items():
        units = unit_indices(geocodes, found, first)
        order = sorted_rows(units, level, f"query {query!r}", geography)
        shapes[f"{query}_dpq"] = (query, schema.query_shape(query))
        stores[query] = _Store(units[order], int(np.prod(shapes[f"{query}_dpq"][1])))
    columns = ["geocode", "query_name", "query_shape", "value", "variance"]
    for path in found.files:
        for batch in scan(path, columns, where=found.where):
            units = unit_indices(strings(batch.column("geocode")), found, first)
            offsets, flat = list_values(batch.column("value"), f"{path}: value")
            lengths = np.diff(offsets)
            variances = batch.column("variance").to_numpy(zero_copy_only=False).astype(np.float64)
            codes, names = _names(batch, str(path))
            for raw, rows in _grouped(codes, names):
                query, expected = shapes[raw]
                store, here = stores[query], f"{path}: query {raw!r}"
                _check_shapes(batch.column("query_shape"), rows, expected, here)
                width = store.values.shape[1]
                wrong = np.flatnonzero(lengths[rows] != width)
                if wrong.size:
                    unit = geography.ids[units[rows[wrong[0]]]]
                    raise ValueError(
                        f"{here}: geocode {unit!r} has {int(lengths[rows[wrong[0]]])} values, but query_shape "
                        f"{list(expected)} holds {width}"
                    )
                bad = np.flatnonzero(~np.isfinite(variances[rows]) | (variances[rows] <= 0))
                if bad.size:
                    unit = geography.ids[units[rows[bad[0]]]]
                    raise ValueError(
                        f"{here}: geocode {unit!r} has variance {variances[rows[bad[0]]]}; it must be finite and > 0"
                    )
                dest = np.searchsorted(store.units, units[rows])
                store.put(dest, _row_block(offsets, flat, rows, width), variances[rows])
    for query, store in stores.items():
        if store.filled != store.units.size:
            raise RuntimeError(f"level {level!r}, query {query!r}: the files changed between the two passes")
    return {query: Rows(s.units, s.values, s.variances) for query, s in stores.items()}


def chosen_levels(layout: NMFLayout, levels, counties) -> tuple:
    """The levels to read, top down: ``levels`` checked, or every level found below the nation (from County
    down with ``counties``)."""
    below = LEVELS[LEVELS.index("County") :]
    if levels is None:
        chosen = [level for level in layout.levels if level != "US" and (counties is None or level in below)]
    else:
        if isinstance(levels, str):
            levels = [levels]
        for level in levels:
            if level == "US":
                raise ValueError("levels: 'US' is the national level, not read for a state")
            if level not in LEVELS:
                raise ValueError(f"levels: unknown level {level!r}; the levels of a state are {LEVELS[1:]}")
            if level not in layout.levels:
                raise FileNotFoundError(f"levels: no folder {level}.parquet in {layout.table_dir}")
            if counties is not None and level not in below:
                raise ValueError(f"levels: with counties, only levels from County down can be read, not {level!r}")
        chosen = sorted(set(levels), key=LEVELS.index)
    if not chosen:
        raise ValueError(f"levels: nothing to read (levels found: {layout.levels})")
    return tuple(chosen)


def state_partitions(layout: NMFLayout, levels, state) -> tuple:
    """The partitions of ``state`` (every branch of a FIPS code, or one partition id), present at every level."""
    fips, explicit = state_key(state)
    chosen = set()
    for level in levels:
        here = layout.partitions(level)
        mine = [p for p in here if (p == explicit if explicit else len(p) == 3 and p[1:] == fips)]
        if not mine:
            raise FileNotFoundError(
                f"state {state!r}: no partition at level {level!r} in {layout.table_dir} (partitions found: {list(here)})"
            )
        chosen.update(mine)
    return tuple(sorted(chosen))


def checked_counties(counties) -> tuple | None:
    """``counties`` as a tuple of non-empty geocode strings (None stays None)."""
    if counties is None:
        return None
    if isinstance(counties, str) or not np.iterable(counties):
        raise TypeError(f"counties must be a list of county geocodes, got {counties!r}")
    counties = tuple(counties)
    if not counties or not all(isinstance(c, str) and c for c in counties):
        raise ValueError(f"counties must be a non-empty list of county geocodes (non-empty strings), got {counties!r}")
    return counties
