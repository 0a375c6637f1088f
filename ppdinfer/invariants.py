r"""Invariants: statistics of an integer table published exactly, as a set of conforming tables.

A table s (any shape, read in row-major order as a vector in Z^d) conforms when

.. math::

    S^* = \{ s \in \mathbb{Z}^d : A s = a, \; B s \ge b \},

A s = a holding the equalities (a grand total, margins) and B s >= b the inequalities (e.g.
every cell non-negative). Gong & Meng's congenial mechanisms condition a release on S*, and
Semi-DP's sensitivities are taken over neighbours that stay in it.

:class:`LinearInvariants` holds (A, a, B, b) and the table's shape; ``&`` intersects two sets
of invariants. Constructors: :meth:`~LinearInvariants.grand_total`,
:meth:`~LinearInvariants.margins` (one-way margins of an r x c table) and
:meth:`~LinearInvariants.nonnegative`. :meth:`~LinearInvariants.contains` tests tables,
:meth:`~LinearInvariants.check_feasible` finds an integer table in S* (or says there is none)
and :meth:`~LinearInvariants.enumerate` lists S* for small bounded sets, refusing beyond a limit
instead of running without end. :func:`checked_invariants` checks a pair (A, a) of exact sums of
non-negative integer cells (a census's unit totals), refusing one that no table satisfies: the one
check of :class:`~ppdinfer.mechanisms.NoisyMeasurements` and the census baselines.
"""

from __future__ import annotations

import math

import numpy as np
import scipy.sparse
from scipy import optimize

from .validation import integer_valued, positive_int

#: Largest number of tables :meth:`LinearInvariants.enumerate` returns by default.
ENUMERATION_LIMIT = 200_000
#: Partial tables the enumeration visits before it refuses (about ten seconds of search).
ENUMERATION_NODES = 400_000


class InfeasibleInvariants(ValueError):
    """No integer table satisfies the invariants.

    Examples
    --------
    >>> try:
    ...     LinearInvariants.margins([1, 2], [2, 2])
    ... except InfeasibleInvariants as err:
    ...     print(err)
    row_totals sum to 3 but col_totals to 4: no table has both margins
    """


class LinearInvariants:
    """S* = {s : A s = a, B s >= b} over integer tables of a given shape.

    Parameters
    ----------
    A, a : array_like of int
        Equalities: A has shape (m, d) with d the number of cells, a has length m. ``None``
        (or zero rows) for none.
    B, b : array_like of int, optional
        Inequalities B s >= b, B of shape (k, d).
    shape : tuple of int, optional
        The table's shape (default (d,)); tables are flattened in row-major order.

    Examples
    --------
    >>> inv = LinearInvariants([[1, 1, 1]], [5], B=np.eye(3, dtype=int), b=[0, 0, 0])
    >>> inv.contains([[2, 3, 0], [2, 4, -1]])
    array([ True, False])
    >>> len(inv.enumerate())  # compositions of 5 into 3 parts
    21
    """

    def __init__(self, A, a, B=None, b=None, *, shape=None):
        self.A, self.a = _rows(A, a, "A", "a")
        self.B, self.b = _rows(B, b, "B", "b", width=self.A.shape[1] if self.A.size else None)
        width = self.A.shape[1] if self.A.shape[0] else self.B.shape[1]
        if self.A.shape[0] and self.B.shape[0] and self.B.shape[1] != width:
            raise ValueError(f"B has {self.B.shape[1]} columns but A has {width}: both need one per cell")
        if width == 0:
            raise ValueError("give at least one equality (A, a) or inequality (B, b)")
        self.A, self.B = self.A.reshape(-1, width), self.B.reshape(-1, width)
        shape = (width,) if shape is None else tuple(positive_int(n, "shape") for n in np.atleast_1d(shape))
        if math.prod(shape) != width:
            raise ValueError(f"shape {shape} has {math.prod(shape)} cells but the invariants have {width} columns")
        self.shape = shape

    @property
    def n_cells(self) -> int:
        """d, the number of cells."""
        return self.A.shape[1]

    def __repr__(self) -> str:
        return f"LinearInvariants(shape={self.shape}, {self.A.shape[0]} equalities, {self.B.shape[0]} inequalities)"

    # -- constructors ------------------------------------------------------------------------
    @classmethod
    def grand_total(cls, shape, total: int) -> LinearInvariants:
        """The sum of all cells equals ``total``.

        Examples
        --------
        >>> LinearInvariants.grand_total((2, 2), 7).contains([[3, 4], [0, 0]])
        True
        """
        shape = tuple(np.atleast_1d(shape))
        cells = math.prod(shape)
        return cls(np.ones((1, cells), dtype=np.int64), [_count(total, "total")], shape=shape)

    @classmethod
    def margins(cls, row_totals=None, col_totals=None, shape=None) -> LinearInvariants:
        """One-way margins of an r x c table: row sums ``row_totals`` and/or column sums ``col_totals``.

        With both, their sums must agree (one of the r + c equalities is then redundant and is
        dropped). ``shape`` is needed only when one margin alone cannot tell it.

        Examples
        --------
        >>> inv = LinearInvariants.margins([3, 2], [1, 4]) & LinearInvariants.nonnegative((2, 2))
        >>> inv.enumerate().tolist()  # the 2 x 2 tables with these margins
        [[[0, 3], [1, 1]], [[1, 2], [0, 2]]]
        """
        rows = None if row_totals is None else integer_valued(row_totals, "row_totals").reshape(-1)
        cols = None if col_totals is None else integer_valued(col_totals, "col_totals").reshape(-1)
        if rows is None and cols is None:
            raise ValueError("give row_totals, col_totals or both")
        if rows is not None and cols is not None and rows.sum() != cols.sum():
            raise InfeasibleInvariants(
                f"row_totals sum to {rows.sum()} but col_totals to {cols.sum()}: no table has both margins"
            )
        if shape is None:
            if rows is None or cols is None:
                raise ValueError("with one margin only, give the table's shape")
            shape = (rows.size, cols.size)
        r, c = (positive_int(n, "shape") for n in shape)
        if (rows is not None and rows.size != r) or (cols is not None and cols.size != c):
            raise ValueError(
                f"margins of lengths {None if rows is None else rows.size} and "
                f"{None if cols is None else cols.size} do not fit a {r} x {c} table"
            )
        equalities, values = [], []
        if rows is not None:
            equalities += [np.kron(np.eye(r, dtype=np.int64)[i], np.ones(c, dtype=np.int64)) for i in range(r)]
            values += rows.tolist()
        if cols is not None:
            start = 1 if rows is not None else 0  # the first column sum follows from the others and the rows
            equalities += [np.kron(np.ones(r, dtype=np.int64), np.eye(c, dtype=np.int64)[j]) for j in range(start, c)]
            values += cols[start:].tolist()
        return cls(np.array(equalities), values, shape=(r, c))

    @classmethod
    def nonnegative(cls, shape) -> LinearInvariants:
        """Every cell is at least 0.

        Examples
        --------
        >>> LinearInvariants.nonnegative(3).contains([0, 2, -1])
        False
        """
        shape = tuple(np.atleast_1d(shape))
        cells = math.prod(shape)
        return cls(None, None, np.eye(cells, dtype=np.int64), np.zeros(cells, dtype=np.int64), shape=shape)

    def __and__(self, other: LinearInvariants) -> LinearInvariants:
        """Both sets of invariants at once (the intersection of the two conforming sets)."""
        if not isinstance(other, LinearInvariants):
            return NotImplemented
        if other.shape != self.shape:
            raise ValueError(f"cannot combine invariants of tables of shapes {self.shape} and {other.shape}")
        return LinearInvariants(
            np.vstack([self.A, other.A]),
            np.concatenate([self.a, other.a]),
            np.vstack([self.B, other.B]),
            np.concatenate([self.b, other.b]),
            shape=self.shape,
        )

    # -- membership ----------------------------------------------------------------------------
    def contains(self, s):
        """Whether the table ``s`` (or each of a batch of tables, shape ``(N, *shape)``) conforms.

        Examples
        --------
        >>> LinearInvariants.grand_total(3, 4).contains([[1, 1, 2], [4, 0, 1]])
        array([ True, False])
        """
        tables = integer_valued(s, "s")
        single = tables.shape == self.shape
        flat = self._flatten(tables, "s")
        inside = np.all(flat @ self.A.T == self.a, axis=1) & np.all(flat @ self.B.T >= self.b, axis=1)
        return bool(inside[0]) if single else inside

    def check(self, s, name: str = "s") -> None:
        """Raise ValueError naming the first invariant that the table ``s`` breaks.

        Examples
        --------
        >>> LinearInvariants.grand_total(2, 4).check([1, 2])
        Traceback (most recent call last):
        ...
        ValueError: s breaks equality 0 of the invariants: 3 != 4
        """
        flat = self._flatten(integer_valued(s, name), name)[0]
        for i, (lhs, rhs) in enumerate(zip(self.A @ flat, self.a)):
            if lhs != rhs:
                raise ValueError(f"{name} breaks equality {i} of the invariants: {lhs} != {rhs}")
        for i, (lhs, rhs) in enumerate(zip(self.B @ flat, self.b)):
            if lhs < rhs:
                raise ValueError(f"{name} breaks inequality {i} of the invariants: {lhs} < {rhs}")

    def check_feasible(self) -> np.ndarray:
        """An integer table in S* (by mixed-integer programming); :class:`InfeasibleInvariants` if none.

        Examples
        --------
        >>> table = (LinearInvariants.margins([2, 1], [1, 2]) & LinearInvariants.nonnegative((2, 2))).check_feasible()
        >>> table.sum(axis=1).tolist(), table.sum(axis=0).tolist()
        ([2, 1], [1, 2])
        >>> (LinearInvariants.grand_total(2, -1) & LinearInvariants.nonnegative(2)).check_feasible()
        Traceback (most recent call last):
        ...
        ppdinfer.invariants.InfeasibleInvariants: no integer table satisfies the invariants (LinearInvariants(shape=(2,), 1 equalities, 2 inequalities))
        """
        point = _integer_point(
            [(m, lo, hi) for m, lo, hi in [(self.A, self.a, self.a), (self.B, self.b, np.inf)] if m.shape[0]],
            self.n_cells,
            lower=-np.inf,
        )
        if point is None:
            raise InfeasibleInvariants(f"no integer table satisfies the invariants ({self!r})")
        return point.reshape(self.shape)

    # -- enumeration ---------------------------------------------------------------------------
    def cell_bounds(self) -> tuple[np.ndarray, np.ndarray]:
        """The smallest and largest integer value of each cell over the real relaxation of S* (by LP),
        as floats: -inf or inf where a cell is unbounded.

        Examples
        --------
        >>> lo, hi = (LinearInvariants.grand_total(3, 4) & LinearInvariants.nonnegative(3)).cell_bounds()
        >>> lo.tolist(), hi.tolist()
        ([0.0, 0.0, 0.0], [4.0, 4.0, 4.0])
        """
        lows, highs = np.empty(self.n_cells), np.empty(self.n_cells)
        equalities = {"A_eq": self.A, "b_eq": self.a} if self.A.shape[0] else {}
        inequalities = {"A_ub": -self.B, "b_ub": -self.b} if self.B.shape[0] else {}
        for j in range(self.n_cells):
            for sign, out in ((1.0, lows), (-1.0, highs)):
                cost = np.zeros(self.n_cells)
                cost[j] = sign
                result = optimize.linprog(cost, **equalities, **inequalities, bounds=(None, None), method="highs")
                if result.status == 2:
                    raise InfeasibleInvariants(f"no table satisfies the invariants ({self!r})")
                out[j] = sign * result.fun if result.status == 0 else sign * np.inf
        return np.ceil(lows - 1e-9) + 0.0, np.floor(highs + 1e-9) + 0.0  # + 0.0: no -0.0

    def count(self, limit: int = ENUMERATION_LIMIT, max_nodes: int = ENUMERATION_NODES) -> int:
        """The number of integer tables in S*, counted without listing them.

        The depth-first search of :meth:`enumerate` with memoization: two partial tables that
        leave the same sums to reach for the invariants still open have the same number of
        completions, counted once. Refuses (ValueError) when S* is unbounded, when the count
        passes ``limit`` (it stops there), or after ``max_nodes`` distinct partial states.

        Examples
        --------
        >>> inv = LinearInvariants.grand_total(3, 4) & LinearInvariants.nonnegative(3)
        >>> inv.count()                      # C(6, 2) compositions of 4 into 3 parts
        15
        >>> big = LinearInvariants.grand_total(6, 200) & LinearInvariants.nonnegative(6)
        >>> big.count(limit=10**10)          # C(205, 5), no table listed
        2872408791
        """
        search = self._search(limit, max_nodes)
        memo: dict[tuple[int, bytes], int] = {}

        def completions(cell: int, partial: np.ndarray) -> int:
            if cell == self.n_cells:
                return 1
            key = (cell, partial[search.open_rows[cell]].tobytes())
            if key in memo:
                return memo[key]
            search.visit("distinct partial tables while counting")
            low, high = search.value_range(partial, cell)
            total = 0
            for value in range(low, high + 1):
                total += completions(cell + 1, partial + search.rows[:, cell] * value)
                if total > limit:
                    raise ValueError(f"S* holds more than limit = {limit} tables: too many to enumerate")
            memo[key] = total
            return total

        return completions(0, search.start) if search.feasible else 0

    def enumerate(self, limit: int = ENUMERATION_LIMIT, max_nodes: int = ENUMERATION_NODES) -> np.ndarray:
        """Every integer table in S*, shape ``(N, *shape)``, in lexicographic order.

        Refuses (ValueError) when S* is unbounded or holds more than ``limit`` tables, without
        listing them first: :meth:`count` counts S* first (memoized, stopping as soon as the count
        passes the limit), and only then are the tables listed, by a depth-first search over the
        cells whose partial sums are checked against every invariant. The check sees one
        invariant at a time, so linked invariants (a grand total, a row total and a column-block
        total together) can leave it exploring partial tables that no completion satisfies;
        after ``max_nodes`` partial tables it refuses too, rather than run on.

        Examples
        --------
        >>> inv = LinearInvariants.grand_total(3, 2) & LinearInvariants.nonnegative(3)
        >>> inv.enumerate().tolist()
        [[0, 0, 2], [0, 1, 1], [0, 2, 0], [1, 0, 1], [1, 1, 0], [2, 0, 0]]
        """
        size = self.count(limit, max_nodes)
        search = self._search(limit, max_nodes)
        found = np.empty((size, self.n_cells), dtype=np.int64)
        table = np.zeros(self.n_cells, dtype=np.int64)
        listed = [0]

        def visit(cell: int, partial: np.ndarray) -> None:
            if cell == self.n_cells:
                found[listed[0]] = table
                listed[0] += 1
                return
            search.visit("partial tables")
            low, high = search.value_range(partial, cell)
            for value in range(low, high + 1):
                table[cell] = value
                visit(cell + 1, partial + search.rows[:, cell] * value)

        if size:
            visit(0, search.start)
        return found.reshape(size, *self.shape)

    def _search(self, limit, max_nodes) -> _TableSearch:
        """The shared setup of :meth:`count` and :meth:`enumerate`, after checking their arguments."""
        positive_int(limit, "limit")
        max_nodes = positive_int(max_nodes, "max_nodes")
        lows, highs = self.cell_bounds()
        if not (np.all(np.isfinite(lows)) and np.all(np.isfinite(highs))):
            raise ValueError(
                "the invariants leave some cell unbounded: S* is infinite (add bounds such as non-negativity)"
            )
        return _TableSearch(
            np.vstack([self.A, self.B]),
            np.concatenate([self.a, self.b]),
            self.A.shape[0],
            lows.astype(np.int64),
            highs.astype(np.int64),
            max_nodes,
        )

    def _flatten(self, tables: np.ndarray, name: str) -> np.ndarray:
        if tables.shape == self.shape:
            return tables.reshape(1, -1)
        if tables.shape[1:] != self.shape:
            raise ValueError(
                f"{name} must be a table of shape {self.shape} or a batch (N, *{self.shape}), got shape {tables.shape}"
            )
        return tables.reshape(tables.shape[0], -1)


#: Seconds the search for a non-negative integer solution of A n = a may take before it gives up.
FEASIBILITY_SECONDS = 30.0


def _integer_point(rows, n_cells: int, lower: float) -> np.ndarray | None:
    """An integer point with every coordinate >= ``lower`` and lo <= M x <= hi for each (M, lo, hi) of
    ``rows`` (dense or sparse M), by mixed-integer programming; None when there is none."""
    result = optimize.milp(
        np.zeros(n_cells),
        constraints=[optimize.LinearConstraint(m, lo, hi) for m, lo, hi in rows],
        integrality=np.ones(n_cells),
        bounds=optimize.Bounds(lower, np.inf),
        options={"time_limit": FEASIBILITY_SECONDS},
    )
    if result.status == 2:
        return None
    if result.x is None:
        raise RuntimeError(f"the feasibility search failed (after at most {FEASIBILITY_SECONDS} s): {result.message}")
    return np.round(result.x).astype(np.int64)


#: Most rows the exact reasoning for nested totals takes (it compares every pair of rows).
NESTED_ROWS = 2_000


def _nested_totals_feasible(A: scipy.sparse.csr_matrix, a: np.ndarray) -> bool | None:
    """Whether A n = a has a non-negative integer solution, decided exactly when the rows are 0/1 totals
    of nested-or-disjoint sets of cells (a census's unit totals); None (undecided) for any other A.

    Such a set holds its own cells and its largest subsets': it is satisfiable exactly when every total
    is at least the sum of its largest subsets' totals, equal to it when they cover all its cells, and
    two rows of the same cells agree.
    """
    if A.nnz == 0 or np.any(A.data != 1) or A.shape[0] > NESTED_ROWS:
        return None
    overlap = (A @ A.T).toarray()
    size = np.diag(overlap)
    if not np.all((overlap == 0) | (overlap == size[:, None]) | (overlap == size[None, :])):
        return None  # two rows overlap without one containing the other
    inside = overlap == size[:, None]  # inside[i, j]: row i's cells lie within row j's
    same = inside & inside.T
    if np.any(same & (a[:, None] != a[None, :])):
        return False
    first = np.argmax(same, axis=1) == np.arange(a.size)  # one row of each set of cells
    for r in np.flatnonzero(first):
        within = np.flatnonzero(first & inside[:, r] & ~same[:, r])
        # the largest subsets: those inside no other strict subset of r
        largest = [i for i in within if not np.any(inside[i, within] & ~same[i, within])]
        parts = a[largest].sum()
        if a[r] < parts or (a[r] != parts and size[largest].sum() == size[r]):
            return False
    return True


def checked_invariants(invariants, n_cells: int, name: str = "invariants") -> tuple[np.ndarray, np.ndarray]:
    """``invariants`` = (A, a), exact sums A n = a of ``n_cells`` non-negative integer cells, checked.

    A (dense or sparse, or one row) and a must be integers of matching shapes, and some table of
    non-negative integers must satisfy every row: contradictory rows (two totals of one unit, a
    total below the sum of parts that cover it) and unsatisfiable ones (2 n0 = 3) are refused, by a
    mixed-integer feasibility search (milliseconds for the unit totals of a state's 100,000 cells).

    Examples
    --------
    >>> A, a = checked_invariants(([[1, 1, 1], [1, 0, 0]], [5, 2]), 3)
    >>> A.tolist(), a.tolist()
    ([[1, 1, 1], [1, 0, 0]], [5, 2])
    >>> checked_invariants(([[1, 0], [1, 1]], [5, 3]), 2)
    Traceback (most recent call last):
    ...
    ppdinfer.invariants.InfeasibleInvariants: invariants: no table of non-negative integer cells satisfies A n = a ...
    """
    try:
        A, a = invariants
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a pair (A, a) with A n = a") from None
    A = integer_valued(A.toarray() if hasattr(A, "toarray") else A, f"{name} A")
    A = A.reshape(1, -1) if A.ndim == 1 else A
    a = integer_valued(a, f"{name} a").reshape(-1)
    if A.ndim != 2 or A.shape[1] != n_cells or A.shape[0] != a.size:
        raise ValueError(f"{name}: A must be (m, {n_cells}) and a of length m, got {A.shape} and {a.shape}")
    for r in range(A.shape[0]):
        if not A[r].any() and a[r] != 0:
            raise ValueError(f"{name}: row {r} sums no cell but requires {int(a[r])}")
        if np.all(A[r] >= 0) and a[r] < 0:
            raise ValueError(
                f"{name}: row {r} requires a sum of non-negative cells to be {int(a[r])} < 0, outside the support"
            )
    sparse = scipy.sparse.csr_matrix(A)
    nested = _nested_totals_feasible(sparse, a)
    if nested is False or (nested is None and _integer_point([(sparse, a, a)], n_cells, lower=0.0) is None):
        raise InfeasibleInvariants(
            f"{name}: no table of non-negative integer cells satisfies A n = a (the rows contradict each other, "
            f"or ask for a sum that whole non-negative counts cannot make); {A.shape[0]} rows over {n_cells} cells"
        )
    return A, a


def _rows(matrix, values, matrix_name: str, values_name: str, width: int | None = None):
    """(matrix, values) as int64 arrays of shapes (m, d) and (m,); (0, width) and (0,) for None."""
    if matrix is None or values is None:
        if (matrix is None) != (values is None):
            raise ValueError(f"give {matrix_name} and {values_name} together")
        return np.zeros((0, width or 0), dtype=np.int64), np.zeros(0, dtype=np.int64)
    matrix = integer_valued(matrix, matrix_name)
    values = integer_valued(values, values_name).reshape(-1)
    if matrix.ndim != 2:
        raise ValueError(f"{matrix_name} must be a 2-D matrix (one row per invariant), got shape {matrix.shape}")
    if matrix.shape[0] != values.size:
        raise ValueError(f"{matrix_name} has {matrix.shape[0]} rows but {values_name} has {values.size} values")
    return matrix, values


def _count(value, name: str) -> int:
    value = integer_valued(value, name)
    if value.ndim != 0:
        raise ValueError(f"{name} must be a single integer, got {value!r}")
    return int(value)


class _TableSearch:
    """The depth-first search over the cells of a table in S*: each cell's admissible values.

    A row of ``rows`` (equalities first, then inequalities B s >= b) is open at a cell while some
    later cell has a nonzero coefficient in it; once closed, the value ranges have forced it to
    hold, so only the open rows' partial sums matter for the completions.
    """

    def __init__(self, rows, targets, n_eq, lows, highs, max_nodes):
        self.rows, self.targets, self.lows, self.highs = rows, targets, lows, highs
        self.max_nodes, self.nodes = max_nodes, 0
        self.is_equality = np.arange(rows.shape[0]) < n_eq
        # The least and largest contribution of cells j.. to each invariant, over the cells' bounds.
        least = np.minimum(rows * lows, rows * highs)
        most = np.maximum(rows * lows, rows * highs)
        zero = np.zeros(rows.shape[0], np.int64)
        self.tail_least = np.vstack([np.cumsum(least[:, ::-1], axis=1)[:, ::-1].T, zero])
        self.tail_most = np.vstack([np.cumsum(most[:, ::-1], axis=1)[:, ::-1].T, zero])
        nonzero = rows != 0
        last = np.where(nonzero.any(axis=1), rows.shape[1] - 1 - np.argmax(nonzero[:, ::-1], axis=1), -1)
        self.open_rows = [np.flatnonzero(last >= cell) for cell in range(rows.shape[1])]
        self.start = zero
        equal = self.targets[:n_eq]
        self.feasible = bool(
            np.all(self.tail_least[0][:n_eq] <= equal)
            and np.all(equal <= self.tail_most[0][:n_eq])
            and np.all(self.tail_most[0][n_eq:] >= self.targets[n_eq:])
        )

    def visit(self, what: str) -> None:
        """Count one node of the search; past ``max_nodes`` refuse, naming the budget."""
        self.nodes += 1
        if self.nodes > self.max_nodes:
            raise ValueError(
                f"enumerating S* visited max_nodes = {self.max_nodes} {what}: too large or too constrained to list"
            )

    def value_range(self, partial: np.ndarray, cell: int) -> tuple[int, int]:
        """The values of ``cell`` that leave every invariant reachable by the cells after it."""
        coef = self.rows[:, cell]
        unbounded = np.iinfo(np.int64).max
        # coef * value must lie in [targets - partial - tail_most, targets - partial - tail_least]
        # (only the lower end for an inequality B s >= b).
        lo = self.targets - partial - self.tail_most[cell + 1]
        hi = np.where(self.is_equality, self.targets - partial - self.tail_least[cell + 1], unbounded)
        low, high = int(self.lows[cell]), int(self.highs[cell])
        for a, l, h in zip(coef[coef != 0], lo[coef != 0], hi[coef != 0]):
            if a > 0:
                low, high = max(low, -(-l // a)), min(high, h // a if h != unbounded else high)
            else:
                low = max(low, -(h // -a) if h != unbounded else low)
                high = min(high, l // a)
        return low, high
