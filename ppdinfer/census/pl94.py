r"""The histograms of the 2020 redistricting (P.L. 94-171) noisy measurements: axes, queries, coarser tables.

**Persons.** hhgq (8) x votingage (2) x hispanic (2) x cenrace (63) = 2,016 cells, in C order: cell
``((hhgq * 2 + votingage) * 2 + hispanic) * 63 + cenrace``. The 63 race codes are the non-empty
combinations of six races (white, black, aian, asian, nhopi, sor), by number of races and then in the
order of the six. A query keeps some axes and sums the rest out; its values are in C order over the
axes it keeps (``hhinstlevels`` recodes hhgq into household, institutional and non-institutional group
quarters). **Housing units.** One axis, h1: vacant, occupied.

Sources (published code and settings; facts cited, no code copied):
uscensusbureau/DAS_2020_Redistricting_Production_Code, ``source/configs/production/pl94/person_default.ini``
(``Person.histogram = hhgq votingage hispanic cenrace_das``), ``source/programs/schema/attributes/``
(``hhgq_person_simple.py``: the 8 hhgq levels and the hhinstlevels recode; ``votingage.py``, ``hisp.py``,
``cenrace.py``: the 63 race combinations; ``h1.py``), ``source/programs/strategies/strategies.py``
(the eleven production queries of ``ProductionCandidate20210527US_mult8_add02_dsepJune3``).

A coarser table (e.g. voting age x Hispanic origin x 7 race groups, 28 cells) sums fine cells; the
measurements whose every group is a union of its cells are exact functions of it and keep their exact
likelihood, the others are dropped (:meth:`HistogramSchema.coarsen` says which).
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations, product

import numpy as np
import scipy.sparse as sp

from .geography import TableSpec

__all__ = [
    "CENRACE",
    "MAJOR_RACES",
    "PERSON",
    "PERSON_QUERIES",
    "UNIT",
    "Coarsening",
    "HistogramSchema",
]

_RACES = ("white", "black", "aian", "asian", "nhopi", "sor")
#: The 63 race combinations of the cenrace axis, in the file's order.
CENRACE = tuple("-".join(combo) for size in range(1, 7) for combo in combinations(_RACES, size))
#: The seven race groups of the published tables: the six races alone, then two or more races.
MAJOR_RACES = tuple((k,) for k in range(6)) + (tuple(range(6, 63)),)
_MAJOR_RACE_LABELS = (*_RACES, "two_or_more")

#: The production queries of every level below the US, in the strategy's order (the US has no 'total').
PERSON_QUERIES = (
    "total",
    "cenrace",
    "hispanic",
    "votingage",
    "hhinstlevels",
    "hhgq",
    "hispanic * cenrace",
    "votingage * cenrace",
    "votingage * hispanic",
    "votingage * hispanic * cenrace",
    "detailed",
)


@dataclass(frozen=True)
class Coarsening:
    """A coarser table of a histogram: which coarse cell each fine cell falls in, and which queries stay exact.

    ``cell_of[k]`` is the coarse cell of fine cell k; ``table`` the coarse TableSpec (its margins: the kept
    queries other than total and detailed, named as in the file); ``kept`` and ``dropped`` name the
    queries that are, and are not, exact functions of the coarse cells.

    ``sums[query]`` lists, for every query, the finest sums of its values that are functions of the coarse
    cells (the connected components of its values linked by a shared coarse cell; one value each for a
    kept query), and ``summed_table`` is the coarse TableSpec whose margins are those sums: a dropped
    query's values, summed so, are measurements of the coarse cells whose noise is a sum of independent
    noises (see :func:`ppdinfer.census.summed_noise.summed_noise_error` for how close such a sum is to one discrete
    Gaussian).
    """

    cell_of: np.ndarray
    table: TableSpec
    kept: tuple
    dropped: tuple
    sums: dict
    summed_table: TableSpec

    def collapse(self, cells) -> np.ndarray:
        """Fine cells (..., n_fine) summed into coarse cells (..., n_coarse); a scipy sparse (rows, n_fine) matrix
        gives a dense (rows, n_coarse) array."""
        n_fine = self.cell_of.size
        indicator = sp.csr_matrix((np.ones(n_fine, dtype=np.int64), (self.cell_of, np.arange(n_fine))))
        if sp.issparse(cells):
            if cells.shape[-1] != n_fine:
                raise ValueError(f"cells: the last axis must hold {n_fine} fine cells, got shape {cells.shape}")
            return np.asarray((cells @ indicator.T).todense())
        cells = np.asarray(cells)
        if cells.shape[-1] != self.cell_of.size:
            raise ValueError(f"cells: the last axis must hold {n_fine} fine cells, got shape {cells.shape}")
        flat = cells.reshape(-1, n_fine)
        return np.asarray((indicator @ flat.T).T).reshape(*cells.shape[:-1], self.table.n_cells)


@dataclass(frozen=True)
class HistogramSchema:
    """The axes of a histogram and the recodes its queries may use.

    Parameters
    ----------
    name : str
        'person' or 'unit'.
    axes : tuple of (axis name, level labels)
        In the file's (C) order.
    recodes : dict
        Query axis name -> (histogram axis, groups of that axis's levels), e.g. hhinstlevels.

    Examples
    --------
    >>> PERSON.shape, PERSON.n_cells
    ((8, 2, 2, 63), 2016)
    >>> PERSON.query_shape("votingage * hispanic")
    (2, 2)
    >>> PERSON.labels()[2015]
    'hhgq=other_noninstitutional, votingage=18+, hispanic=hispanic, cenrace=white-black-aian-asian-nhopi-sor'
    """

    name: str
    axes: tuple
    recodes: dict

    @property
    def axis_names(self) -> tuple:
        """The histogram's axis names, in order."""
        return tuple(axis for axis, _ in self.axes)

    @property
    def shape(self) -> tuple:
        """The number of levels of each axis."""
        return tuple(len(levels) for _, levels in self.axes)

    @property
    def n_cells(self) -> int:
        """The number of histogram cells."""
        return int(np.prod(self.shape))

    def labels(self) -> tuple:
        """One label per cell: 'axis=level' joined by ', ', in C order."""
        return tuple(
            ", ".join(f"{axis}={level}" for axis, level in zip(self.axis_names, levels, strict=True))
            for levels in product(*(levels for _, levels in self.axes))
        )

    def query_axes(self, query: str) -> tuple:
        """The axes a query keeps: () for 'total', all for 'detailed', else its ' * '-separated names."""
        if not isinstance(query, str):
            raise TypeError(f"query must be a query name (str), got {query!r}")
        if query == "total":
            return ()
        if query == "detailed":
            return self.axis_names
        names = tuple(part.strip() for part in query.split("*"))
        for part in names:
            if part not in self.axis_names and part not in self.recodes:
                raise ValueError(
                    f"query {query!r}: {part!r} is not an axis {self.axis_names} or recode {tuple(self.recodes)} "
                    f"of the {self.name} histogram"
                )
        axes = [self.recodes[part][0] if part in self.recodes else part for part in names]
        if len(set(axes)) != len(axes) or axes != sorted(axes, key=self.axis_names.index):
            raise ValueError(
                f"query {query!r}: its axes must be distinct and in the histogram's order {self.axis_names}"
            )
        return names

    def _axis_groups(self, part: str) -> tuple:
        if part in self.recodes:
            return self.recodes[part][1]
        return tuple((level,) for level in range(self.shape[self.axis_names.index(part)]))

    def query_shape(self, query: str) -> tuple:
        """The shape of a query's values (its kept axes' sizes, recodes counted by their groups)."""
        return tuple(len(self._axis_groups(part)) for part in self.query_axes(query))

    def query_groups(self, query: str) -> tuple:
        """The fine cells each value of ``query`` sums, in C order over its shape."""
        parts = self.query_axes(query)
        index = np.arange(self.n_cells).reshape(self.shape)
        groups = []
        for choice in product(*(self._axis_groups(part) for part in parts)):
            selector = [slice(None)] * len(self.shape)
            for part, levels in zip(parts, choice, strict=True):
                axis = self.recodes[part][0] if part in self.recodes else part
                selector[self.axis_names.index(axis)] = list(levels)
            groups.append(tuple(int(k) for k in np.sort(_select(index, selector).ravel())))
        return tuple(groups)

    def table(self, queries=None) -> TableSpec:
        """The TableSpec of the full histogram, with a margin for each query (default all production queries
        of the person histogram, the detailed query alone for the unit one) other than total and detailed."""
        queries = self.default_queries() if queries is None else tuple(queries)
        margins = {q: self.query_groups(q) for q in queries if q not in ("total", "detailed")}
        return TableSpec(self.labels(), margins)

    def default_queries(self) -> tuple:
        """The production queries of this histogram."""
        return PERSON_QUERIES if self.name == "person" else ("total", "detailed")

    def coarsen(self, keep: dict, queries=None) -> Coarsening:
        """A coarser table: ``keep`` maps each axis kept to None (all its levels) or (groups, labels).

        Axes left out are summed over. The queries (default the production ones) whose every group is a
        union of coarse cells are kept; the others are dropped.

        Examples
        --------
        >>> c = PERSON.coarsen({"votingage": None, "hispanic": None, "cenrace": "major"})
        >>> c.table.n_cells, c.kept    # the 63-combination race queries are not functions of 7 groups
        (28, ('total', 'hispanic', 'votingage', 'votingage * hispanic'))
        >>> c.table.labels[0]
        'votingage=0-17, hispanic=not, cenrace=white'
        """
        if not isinstance(keep, dict) or not keep:
            raise ValueError(f"keep must be a non-empty dict axis -> None | 'major' | (groups, labels), got {keep!r}")
        per_axis = []
        for axis, levels in self.axes:
            if axis not in keep:
                per_axis.append(((tuple(range(len(levels))),), None))
                continue
            spec = keep[axis]
            if spec is None:
                per_axis.append((tuple((k,) for k in range(len(levels))), levels))
            elif spec == "major" and axis == "cenrace":
                per_axis.append((MAJOR_RACES, _MAJOR_RACE_LABELS))
            else:
                groups, names = spec
                per_axis.append((_partition(groups, len(levels), axis), tuple(str(n) for n in names)))
                if len(per_axis[-1][1]) != len(per_axis[-1][0]):
                    raise ValueError(f"keep: axis {axis!r} has {len(groups)} groups but {len(names)} labels")
        unknown = set(keep) - set(self.axis_names)
        if unknown:
            raise ValueError(f"keep: {sorted(unknown)} are not axes of the {self.name} histogram {self.axis_names}")
        cell_of = np.empty(self.n_cells, dtype=np.int64)
        coarse_shape = tuple(len(groups) for groups, _ in per_axis)
        for fine, levels in enumerate(product(*(range(n) for n in self.shape))):
            coords = [
                next(g for g, group in enumerate(groups) if level in group)
                for (groups, _), level in zip(per_axis, levels)
            ]
            cell_of[fine] = np.ravel_multi_index(coords, coarse_shape)
        kept_axes = [(axis, labels) for (axis, _), (_, labels) in zip(self.axes, per_axis, strict=True) if labels]
        labels = tuple(
            ", ".join(f"{axis}={level}" for (axis, _), level in zip(kept_axes, choice, strict=True))
            for choice in product(*(labels for _, labels in kept_axes))
        )
        queries = self.default_queries() if queries is None else tuple(queries)
        kept, dropped, margins, sums, summed_margins = [], [], {}, {}, {}
        for query in queries:
            groups = self.query_groups(query)
            sums[query], coarse_groups = _components(groups, cell_of)
            if query == "detailed":  # one sum per coarse cell (each fine cell is one value): in the coarse cells' order
                order = np.argsort([cells[0] for cells in coarse_groups])
                sums[query], coarse_groups = (
                    tuple(sums[query][i] for i in order),
                    tuple(coarse_groups[i] for i in order),
                )
            if query not in ("total", "detailed"):
                summed_margins[query] = coarse_groups
            if len(sums[query]) < len(groups):
                dropped.append(query)
                continue
            kept.append(query)
            if query not in ("total", "detailed"):
                margins[query] = coarse_groups
        return Coarsening(
            cell_of, TableSpec(labels, margins), tuple(kept), tuple(dropped), sums, TableSpec(labels, summed_margins)
        )


def _select(index: np.ndarray, selector: list) -> np.ndarray:
    out = index
    for axis, chosen in enumerate(selector):
        if not isinstance(chosen, slice):
            out = np.take(out, chosen, axis=axis)
    return out


def _partition(groups, n_levels: int, axis: str) -> tuple:
    """``groups`` checked to be a partition of 0..n_levels - 1."""
    groups = tuple(tuple(int(k) for k in group) for group in groups)
    flat = sorted(k for group in groups for k in group)
    if flat != list(range(n_levels)) or any(not group for group in groups):
        raise ValueError(
            f"keep: the groups of axis {axis!r} must split its levels 0..{n_levels - 1} exactly once, got {groups!r}"
        )
    return groups


def _components(groups: tuple, cell_of: np.ndarray) -> tuple[tuple, tuple]:
    """The finest sums of a query's values that are functions of the coarse cells: (value indices of each sum,
    coarse cells of each sum), ordered by their first value. Two values touching one coarse cell must be summed
    together (the coarse cell's people may be in either), so the sums are the connected components."""
    root = list(range(len(groups)))

    def find(i: int) -> int:
        while root[i] != i:
            root[i] = root[root[i]]
            i = root[i]
        return i

    owner: dict[int, int] = {}
    for value, group in enumerate(groups):
        for coarse in np.unique(cell_of[list(group)]).tolist():
            if coarse in owner:
                root[find(value)] = find(owner[coarse])
            else:
                owner[coarse] = value
    members: dict[int, list[int]] = {}
    for value in range(len(groups)):
        members.setdefault(find(value), []).append(value)
    components = sorted(members.values())
    cells = tuple(
        tuple(sorted({c for v in comp for c in np.unique(cell_of[list(groups[v])]).tolist()})) for comp in components
    )
    return tuple(tuple(comp) for comp in components), cells


_HHGQ = (
    "household",
    "correctional",
    "juvenile",
    "nursing",
    "other_institutional",
    "college",
    "military",
    "other_noninstitutional",
)

#: The PL94 persons histogram.
PERSON = HistogramSchema(
    "person",
    (("hhgq", _HHGQ), ("votingage", ("0-17", "18+")), ("hispanic", ("not", "hispanic")), ("cenrace", CENRACE)),
    {"hhinstlevels": ("hhgq", ((0,), (1, 2, 3, 4), (5, 6, 7)))},
)
#: The PL94 housing-unit histogram (occupancy status).
UNIT = HistogramSchema("unit", (("h1", ("vacant", "occupied")),), {})
