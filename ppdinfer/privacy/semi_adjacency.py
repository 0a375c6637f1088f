r"""Semi-DP adjacency with invariants: the semi-adjacent parameter a(t) and the sensitivity space S.

Cho & Awan release a private statistic M(X) together with exact invariants t = T(X). Only the
conforming datasets D_t = {X : T(X) = t} then matter, and two of them may differ in more than one
record. With d the Hamming distance between datasets of n records and
D_t^i = {x : X_i = x for some X in D_t} the values individual i can take, Definition 13 sets

.. math::

    a(t) = \sup_{i \in [n]} \sup_{x, y \in D_t^i}
           \inf\{d(X, Y) : X, Y \in D_t,\ X_i = x,\ Y_i = y\},

the worst case, over individuals and pairs of their values, of the fewest record changes that
swap the individual's value while keeping t. Semi-DP asks for f-DP between conforming datasets
within a(t) changes; the statistic phi then moves by a vector of the sensitivity space

.. math::

    S = \{\phi(X) - \phi(X') : T(X) = T(X') = t,\ d(X, X') \le a(t)\}.

**Datasets as histograms.** Records come from a finite domain {0, ..., m - 1} (the cells of an
r x c table in row-major order, the points of {0, 1}^p, ...), and T and phi are assumed symmetric,
i.e. functions of the count vector h (h_k records take value k). Then the sup over i is moot, the
fewest changes between datasets with histograms h and h' is half the l1 distance of h and h'
(:func:`record_changes`), and the inner infimum of Definition 13 is, for x != y,

.. math::

    1 + \min\{\lVert (h - e_x) - (h' - e_y) \rVert_1 / 2 :
              h, h' \in D_t,\ h_x \ge 1,\ h'_y \ge 1\},

which :func:`semi_adjacent_parameter` evaluates by enumerating every histogram of n records
(refusing, with a ValueError, when there are more than ``max_datasets``).

**Two readings of a(t).** Definition 13 takes the infimum over *all* conforming X and Y. For
public one-way margins of a table this gives a(t) = 2 whenever D_t^i has two values (checked by
brute force on 2 x 2, 2 x 3 and 3 x 3 tables with n <= 5), including the margins of Example 5,
where the paper finds 3: an X holding both x and y swaps the two records. The paper's 3 appears
only when the changes are counted from the fixed confidential dataset X* (the individual's record
x is one of X*'s, and only Y varies), which :func:`semi_adjacent_parameter_from` computes:

.. math::

    a_{X^*}(t) = \max_{x \in X^*,\ y \in D_t^i,\ y \ne x}
                 \Bigl(1 + \min\{\lVert (h^* - e_x) - (h' - e_y) \rVert_1 / 2 :
                 h' \in D_t,\ h'_y \ge 1\}\Bigr).

Theorem 16's bound p + 1 for one-way margins of p features (:func:`theorem16_bound`) holds for
both readings on every small case checked (p = 2 and 3); the fixed-dataset reading attains it.

**Erratum to Proposition 32.** For an r x c table with public one-way margins and phi the table,
the paper lists the "rectangles" v_ijkl (:func:`table_rectangles`) as the whole of S. That is right
under two record changes, and for 2 x c tables under three, but for r, c >= 3 under three
changes (the paper's a(t) = 3) the 3-cycles (:func:`table_three_cycles`; +1 at (1,1), (2,2),
(3,3), -1 at (1,2), (2,3), (3,1), with l2 norm sqrt 6) are in S too: Delta_1 = 6 and
Delta_2 = sqrt 6, not 4 and 2. :func:`contingency_sensitivity_space` gives the corrected closed
form; :func:`enumerated_sensitivity_space` computes S by enumeration for any small domain. Under Definition
13's a(t) = 2 the 3-cycles are not adjacent differences and S is the rectangles alone, so
Proposition 32's S matches Definition 13 but not the a(t) = 3 the paper goes on to use.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Hashable

import numpy as np

from ..geometry import SensitivitySpace
from ..validation import nonnegative_counts, positive_int

__all__ = [
    "contingency_sensitivities",
    "contingency_sensitivity_space",
    "dp_table_sensitivity_space",
    "enumerate_datasets",
    "enumerated_sensitivity_space",
    "margin_free_projection",
    "one_way_margins",
    "record_changes",
    "semi_adjacent_parameter",
    "semi_adjacent_parameter_from",
    "semi_adjacent_parameters",
    "table_rectangles",
    "table_three_cycles",
    "theorem16_bound",
]

#: Most histograms :func:`enumerate_datasets` lists before refusing.
MAX_DATASETS = 200_000
#: Most pairs of conforming datasets compared within one D_t before refusing.
MAX_PAIRS = 1_000_000

_Invariant = Callable[[np.ndarray], Hashable]


def enumerate_datasets(domain_size, n, *, max_datasets=MAX_DATASETS) -> np.ndarray:
    r"""Every dataset of ``n`` records from a domain of ``domain_size`` values, as histograms.

    A dataset is a multiset of records, i.e. a count vector h with h_k >= 0 and sum n; there are

    .. math::

        \binom{n + m - 1}{m - 1}

    of them for m = ``domain_size`` values, listed in lexicographically increasing order.

    Parameters
    ----------
    domain_size : int
        Number m of possible record values, >= 1.
    n : int
        Number of records, >= 1.
    max_datasets : int, optional
        Refuse (ValueError) rather than list more histograms than this.

    Returns
    -------
    numpy.ndarray of int64, shape (N, m)

    Examples
    --------
    >>> enumerate_datasets(2, 3).tolist()       # {0, 1}^3 up to order: 0, 1, 2 or 3 zeros
    [[0, 3], [1, 2], [2, 1], [3, 0]]
    >>> enumerate_datasets(9, 30, max_datasets=1000)
    Traceback (most recent call last):
    ...
    ValueError: max_datasets: 30 records over 9 values make 48903492 datasets, more than max_datasets = 1000
    """
    m = positive_int(domain_size, "domain_size")
    n = positive_int(n, "n")
    limit = positive_int(max_datasets, "max_datasets")
    count = math.comb(n + m - 1, m - 1)
    if count > limit:
        raise ValueError(
            f"max_datasets: {n} records over {m} values make {count} datasets, more than max_datasets = {limit}"
        )
    bars = np.array(list(itertools.combinations(range(n + m - 1), m - 1)), dtype=np.int64)
    bars = bars.reshape(count, m - 1)
    edges = np.hstack([np.full((count, 1), -1), bars, np.full((count, 1), n + m - 1)])
    return np.diff(edges, axis=1) - 1


def one_way_margins(levels) -> _Invariant:
    r"""The invariant T of Section 3.4: each feature's counts, for records on a grid of levels.

    Records are the cells of an n_1 x ... x n_p grid in row-major order (for p = 2, the cells of
    an r x c table); the histogram h, reshaped to the grid, is the contingency table, and

    .. math::

        T(h) = \bigl(T_1(h), \dots, T_p(h)\bigr), \qquad
        T_j(h)_k = \#\{i : X^{(i)}_j = k\} = \sum_{\text{cells with } j\text{-th level } k} h.

    Parameters
    ----------
    levels : sequence of int
        Number of levels of each feature, each >= 1.

    Returns
    -------
    callable
        ``T(h)``: a tuple of p tuples of ints (hashable, so it can index the classes D_t).

    References
    ----------
    .. [1] Y. H. Cho and J. Awan, "Formal privacy guarantees with invariant statistics." Section 3.4.

    Examples
    --------
    >>> margins = one_way_margins((2, 2))
    >>> margins([1, 1, 1, 0])           # the table [[1, 1], [1, 0]]
    ((2, 1), (2, 1))
    """
    levels = tuple(positive_int(k, "levels") for k in levels)
    if not levels:
        raise ValueError("levels must name at least one feature")

    def margins(histogram) -> tuple[tuple[int, ...], ...]:
        table = np.asarray(histogram).reshape(levels)
        axes = range(table.ndim)
        return tuple(tuple(int(v) for v in table.sum(axis=tuple(a for a in axes if a != j))) for j in axes)

    return margins


def record_changes(x, y) -> int:
    r"""The fewest record changes between two datasets given as histograms (Hamming, best order).

    .. math::

        d(h, h') = \min_{\text{orderings}} \#\{i : X_i \ne Y_i\} = \lVert h - h' \rVert_1 / 2.

    References
    ----------
    .. [1] Y. H. Cho and J. Awan, "Formal privacy guarantees with invariant statistics." Definition 13.

    Examples
    --------
    >>> record_changes([1, 1, 1, 0], [2, 0, 0, 1])   # a 2 x 2 rectangle: two changes
    2
    """
    x = nonnegative_counts(x, "x")
    y = nonnegative_counts(y, "y")
    if x.shape != y.shape or x.sum() != y.sum():
        raise ValueError(f"x and y must be histograms of the same length and size, got {x.tolist()} and {y.tolist()}")
    return int(np.abs(x - y).sum()) // 2


def _classes(domain_size, n, invariant, max_datasets) -> dict[Hashable, np.ndarray]:
    """The conforming sets D_t of every value t of ``invariant`` over all datasets of n records."""
    datasets = enumerate_datasets(domain_size, n, max_datasets=max_datasets)
    members: dict[Hashable, list[int]] = {}
    for row, histogram in enumerate(datasets):
        members.setdefault(invariant(histogram), []).append(row)
    return {t: datasets[rows] for t, rows in members.items()}


def _conforming(domain_size, n, invariant, t, max_datasets) -> np.ndarray:
    return _class_of(_classes(domain_size, n, invariant, max_datasets), t, n)


def _class_of(classes: dict[Hashable, np.ndarray], t, n) -> np.ndarray:
    if t not in classes:
        raise ValueError(f"t: no dataset of {n} records has invariant value {t!r}")
    return classes[t]


def _check_pairs(left: int, right: int, max_pairs) -> None:
    limit = positive_int(max_pairs, "max_pairs")
    if left * right > limit:
        raise ValueError(f"max_pairs: comparing {left} x {right} conforming datasets exceeds max_pairs = {limit}")


def _swap_changes(first: np.ndarray, second: np.ndarray) -> np.ndarray:
    r"""C[x, y] = 1 + min ||(h - e_x) - (h' - e_y)||_1 / 2 over h in first with h_x >= 1, h' in second with h'_y >= 1.

    For x = y the entry is 0 (take Y = X) when both sets hold x; pairs (x, y) with no such datasets get -1.
    """
    m = first.shape[1]
    diff = first[:, None, :] - second[None, :, :]  # (N1, N2, m)
    base = np.abs(diff).sum(axis=2)
    changes = np.full((m, m), -1, dtype=np.int64)
    for x in range(m):
        has_x = first[:, x] >= 1
        if not has_x.any():
            continue
        for y in range(m):
            has_y = second[:, y] >= 1
            if not has_y.any():
                continue
            if x == y:
                changes[x, y] = 0
                continue
            # taking x out of h and y out of h' turns |diff_x| into |diff_x - 1|, |diff_y| into |diff_y + 1|
            dx, dy = diff[:, :, x], diff[:, :, y]
            l1 = base + np.abs(dx - 1) - np.abs(dx) + np.abs(dy + 1) - np.abs(dy)
            changes[x, y] = 1 + int(l1[np.ix_(has_x, has_y)].min()) // 2
    return changes


def semi_adjacent_parameter(domain_size, n, invariant, t, *, max_datasets=MAX_DATASETS, max_pairs=MAX_PAIRS) -> int:
    r"""a(t) of Definition 13: the worst-case fewest changes to swap one individual's value in D_t.

    .. math::

        a(t) = \max_{x, y \in D_t^i}\ \min\{d(X, Y) : X, Y \in D_t,\ X_i = x,\ Y_i = y\},

    with the infimum over *all* conforming pairs X, Y (the definition as printed), by brute force
    over the histograms of ``n`` records (see the module docstring). For the changes counted from a
    fixed confidential dataset, the reading behind Example 5's value 3, see
    :func:`semi_adjacent_parameter_from`.

    Parameters
    ----------
    domain_size : int
        Number m of record values.
    n : int
        Number of records.
    invariant : callable
        T(h) for a histogram h (length m), returning a hashable value.
    t : hashable
        The public invariant value; some dataset of n records must have it.
    max_datasets, max_pairs : int, optional
        Refuse (ValueError) rather than enumerate more datasets, or compare more pairs of
        conforming datasets, than these.

    Returns
    -------
    int
        a(t); 0 when the conforming datasets together hold a single record value (nothing to
        protect).

    See Also
    --------
    ppdinfer.privacy.semi_adjacent_parameter_from : Seen from a fixed dataset.
    ppdinfer.privacy.semi_adjacent_parameters : For every value of the invariant.
    ppdinfer.privacy.theorem16_bound : Theorem 16's bound.

    References
    ----------
    .. [1] Y. H. Cho and J. Awan, "Formal privacy guarantees with invariant statistics." Definition 13.

    Examples
    --------
    Example 3: three binary records, T = number of ones.

    >>> ones = lambda h: int(h[1])
    >>> semi_adjacent_parameter(2, 3, ones, t=2), semi_adjacent_parameter(2, 3, ones, t=0)
    (2, 0)

    Example 5's margins (the 2 x 2 table [[1, 1], [1, 0]]): 2 by Definition 13, not the paper's 3.

    >>> semi_adjacent_parameter(4, 3, one_way_margins((2, 2)), t=((2, 1), (2, 1)))
    2
    """
    conforming = _conforming(domain_size, n, invariant, t, max_datasets)
    _check_pairs(len(conforming), len(conforming), max_pairs)
    return max(0, int(_swap_changes(conforming, conforming).max()))


def semi_adjacent_parameters(
    domain_size, n, invariant, *, max_datasets=MAX_DATASETS, max_pairs=MAX_PAIRS
) -> dict[Hashable, int]:
    r"""a(t) of Definition 13 for every value t the invariant takes on datasets of ``n`` records.

    .. math::

        t \mapsto a(t), \qquad t \in \{T(X) : X \in \mathcal{X}^n\}.

    See :func:`semi_adjacent_parameter` for the parameters.

    See Also
    --------
    ppdinfer.privacy.semi_adjacent_parameter : a(t) for one t.

    References
    ----------
    .. [1] Y. H. Cho and J. Awan, "Formal privacy guarantees with invariant statistics." Definition 13.

    Examples
    --------
    >>> values = semi_adjacent_parameters(4, 3, one_way_margins((2, 2)))
    >>> sorted(set(values.values()))      # 2 x 2 tables of 3 records: never 3
    [0, 2]
    """
    parameters = {}
    for t, conforming in _classes(domain_size, n, invariant, max_datasets).items():
        _check_pairs(len(conforming), len(conforming), max_pairs)
        parameters[t] = max(0, int(_swap_changes(conforming, conforming).max()))
    return parameters


def semi_adjacent_parameter_from(dataset, invariant, *, max_datasets=MAX_DATASETS, max_pairs=MAX_PAIRS) -> int:
    r"""a(t) seen from a fixed confidential dataset X*: changes counted from X*, not minimised over X.

    With t = T(X*) and h* the histogram of X*,

    .. math::

        a_{X^*}(t) = \max_{x:\ h^*_x \ge 1,\ y \in D_t^i,\ y \ne x}
                     \Bigl(1 + \min_{h' \in D_t,\ h'_y \ge 1}
                     \lVert (h^* - e_x) - (h' - e_y) \rVert_1 / 2\Bigr),

    0 when D_t^i is a single value. This is the reading under which Example 5 finds a(t) = 3; it is
    at least Definition 13's a(t) (:func:`semi_adjacent_parameter`) and depends on X*, not only on t.

    Parameters
    ----------
    dataset : array_like of int
        The histogram h* of the confidential dataset (its length is the domain size).
    invariant : callable
        T(h), returning a hashable value.
    max_datasets, max_pairs : int, optional
        As in :func:`semi_adjacent_parameter`.

    See Also
    --------
    ppdinfer.privacy.semi_adjacent_parameter : Definition 13's a(t).

    References
    ----------
    .. [1] Y. H. Cho and J. Awan, "Formal privacy guarantees with invariant statistics." Definition 13 and Example 5.

    Examples
    --------
    Example 5: the 2 x 2 table [[1, 1], [1, 0]]; moving the (1, 1) record to (2, 2) takes 3 changes.

    >>> semi_adjacent_parameter_from([1, 1, 1, 0], one_way_margins((2, 2)))
    3
    """
    confidential = nonnegative_counts(dataset, "dataset")
    if confidential.ndim != 1 or confidential.sum() < 1:
        raise ValueError(f"dataset must be a histogram (1-D counts) of at least one record, got {dataset!r}")
    conforming = _conforming(
        confidential.size, int(confidential.sum()), invariant, invariant(confidential), max_datasets
    )
    _check_pairs(1, len(conforming), max_pairs)
    return max(0, int(_swap_changes(confidential[None, :], conforming).max()))


def theorem16_bound(p) -> int:
    r"""Theorem 16's bound on a(t) for public one-way margins of ``p`` features (Hamming distance).

    .. math::

        a(t) \le p + 1.

    References
    ----------
    .. [1] Y. H. Cho and J. Awan, "Formal privacy guarantees with invariant statistics." Theorem 16.

    Examples
    --------
    >>> theorem16_bound(2)           # contingency tables: a(t) <= 3
    3
    """
    return positive_int(p, "p") + 1


def enumerated_sensitivity_space(
    domain_size, n, invariant, statistic=None, *, t=None, changes=None, max_datasets=MAX_DATASETS, max_pairs=MAX_PAIRS
) -> SensitivitySpace:
    r"""The sensitivity space S of a statistic under an invariant, by enumerating datasets.

    .. math::

        S = \{\phi(X) - \phi(X') : T(X) = T(X') = t,\ d(X, X') \le k\},

    with k = ``changes`` or, by default, a(t) of Definition 13 for each t; over one value t, or the
    union over every value the invariant takes on datasets of ``n`` records (``t=None``).

    Parameters
    ----------
    domain_size, n, invariant
        As in :func:`semi_adjacent_parameter`.
    statistic : callable, optional
        phi(h) for a histogram h, returning a numeric array (its shape becomes the space's
        ``shape``); default the histogram itself.
    t : hashable, optional
        One invariant value; default all of them.
    changes : int, optional
        The number k of record changes that count as adjacent; default a(t).
    max_datasets, max_pairs : int, optional
        As in :func:`semi_adjacent_parameter`.

    Returns
    -------
    SensitivitySpace
        S less its zero vector; a ValueError if S = {0} (no noise is needed).

    See Also
    --------
    ppdinfer.privacy.contingency_sensitivity_space : The closed form for tables.

    References
    ----------
    .. [1] Y. H. Cho and J. Awan, "Formal privacy guarantees with invariant statistics." Section 4.

    Examples
    --------
    2 x 3 tables of 2 records with public one-way margins: the rectangles of Section 5.

    >>> space = enumerated_sensitivity_space(6, 2, one_way_margins((2, 3)), lambda h: h.reshape(2, 3))
    >>> space.rank, space.l1, space.l2, len(space.vectors)
    (2, 4.0, 2.0, 6)
    """
    classes = _classes(domain_size, n, invariant, max_datasets)
    if t is not None:
        classes = {t: _class_of(classes, t, n)}
    limit = None if changes is None else positive_int(changes, "changes")
    phi = (lambda h: h) if statistic is None else statistic
    differences, shape = [], None
    for conforming in classes.values():
        _check_pairs(len(conforming), len(conforming), max_pairs)
        k = limit if limit is not None else max(0, int(_swap_changes(conforming, conforming).max()))
        distance = np.abs(conforming[:, None, :] - conforming[None, :, :]).sum(axis=2) // 2
        first, second = np.nonzero((distance <= k) & (distance > 0))
        if first.size == 0:
            continue
        values = np.array([np.asarray(phi(h), dtype=float) for h in conforming])
        shape = values.shape[1:]
        flat = values.reshape(len(conforming), -1)
        differences.append(np.unique(flat[first] - flat[second], axis=0))
    if not differences:
        raise ValueError("the sensitivity space is {0}: no two distinct conforming datasets are adjacent")
    return SensitivitySpace(np.vstack(differences), shape=shape)


def _table_shape(r, c) -> tuple[int, int]:
    return positive_int(r, "r"), positive_int(c, "c")


def _contingency_shape(r, c, changes) -> tuple[int, int]:
    """Check a table shape and an adjacency for the closed forms of Section 5."""
    r, c = _table_shape(r, c)
    if r < 2 or c < 2:
        raise ValueError(
            f"r and c must be at least 2 (a table with one row or column is fixed by its margins), got {r} x {c}"
        )
    if positive_int(changes, "changes") not in (2, 3):
        raise ValueError(
            f"changes must be 2 or 3 for the closed form, got {changes} "
            "(use enumerated_sensitivity_space to enumerate other adjacencies)"
        )
    return r, c


def table_rectangles(r, c) -> np.ndarray:
    r"""The rectangles v_ijkl of Section 5: the table moves of two records that keep both margins.

    .. math::

        v_{ijkl} = e_{ij} + e_{kl} - e_{il} - e_{kj}, \qquad i < k,\ j < l,

    one of each pair +-v (the other is v_ilkj); C(r, 2) C(c, 2) tables.

    Returns
    -------
    numpy.ndarray of int64, shape (C(r, 2) C(c, 2), r, c)

    See Also
    --------
    ppdinfer.privacy.table_three_cycles : The three-record moves.

    References
    ----------
    .. [1] Y. H. Cho and J. Awan, "Formal privacy guarantees with invariant statistics." Section 5.

    Examples
    --------
    >>> table_rectangles(2, 2).tolist()
    [[[1, -1], [-1, 1]]]
    >>> table_rectangles(3, 4).shape
    (18, 3, 4)
    """
    r, c = _table_shape(r, c)
    moves = []
    for (i, k), (j, l) in itertools.product(itertools.combinations(range(r), 2), itertools.combinations(range(c), 2)):
        move = np.zeros((r, c), dtype=np.int64)
        move[i, j] = move[k, l] = 1
        move[i, l] = move[k, j] = -1
        moves.append(move)
    return np.array(moves, dtype=np.int64).reshape(-1, r, c)


def table_three_cycles(r, c) -> np.ndarray:
    r"""The 3-cycles missing from Proposition 32: three-record table moves that keep both margins.

    For rows i_1 < i_2 < i_3, columns j_1 < j_2 < j_3 and permutations sigma != tau of {1, 2, 3}
    of the same parity,

    .. math::

        w = \sum_{a=1}^{3} e_{i_a j_{\sigma(a)}} - \sum_{a=1}^{3} e_{i_a j_{\tau(a)}},

    e.g. +1 at (1,1), (2,2), (3,3) and -1 at (1,2), (2,3), (3,1), of l1 norm 6 and l2 norm sqrt 6.
    One of each pair +-w: 6 C(r, 3) C(c, 3) tables (none when r < 3 or c < 3). Each is the sum of
    two rectangles sharing a cell, and so needs three record changes.

    Returns
    -------
    numpy.ndarray of int64, shape (6 C(r, 3) C(c, 3), r, c)

    See Also
    --------
    ppdinfer.privacy.table_rectangles : The two-record moves.

    References
    ----------
    .. [1] Y. H. Cho and J. Awan, "Formal privacy guarantees with invariant statistics." Proposition 32.

    Examples
    --------
    >>> cycles = table_three_cycles(3, 3)
    >>> cycles.shape, int(np.abs(cycles).sum(axis=(1, 2)).max())
    ((6, 3, 3), 6)
    >>> table_three_cycles(2, 5).shape
    (0, 2, 5)
    """
    r, c = _table_shape(r, c)
    permutations = list(itertools.permutations(range(3)))
    pairs = [(s, u) for s, u in itertools.combinations(permutations, 2) if _parity(s) == _parity(u)]
    moves = []
    for rows, cols in itertools.product(itertools.combinations(range(r), 3), itertools.combinations(range(c), 3)):
        for plus, minus in pairs:
            move = np.zeros((r, c), dtype=np.int64)
            for a in range(3):
                move[rows[a], cols[plus[a]]] += 1
                move[rows[a], cols[minus[a]]] -= 1
            moves.append(move)
    return np.array(moves, dtype=np.int64).reshape(-1, r, c)


def _parity(permutation) -> int:
    """0 for an even permutation, 1 for an odd one (by counting inversions)."""
    return sum(a > b for a, b in itertools.combinations(permutation, 2)) % 2


def contingency_sensitivity_space(r, c, changes=3) -> SensitivitySpace:
    r"""S for an r x c table released with public one-way margins: Proposition 32, corrected.

    .. math::

        S = \{0, \pm v_{ijkl}\} \cup \{\pm w : w \text{ a 3-cycle}\ (k = 3,\ r, c \ge 3)\},

    the rectangles (:func:`table_rectangles`) under k = 2 record changes, with the 3-cycles
    (:func:`table_three_cycles`) added under k = 3 changes, the paper's a(t) = p + 1 = 3. The paper
    prints the rectangles alone, which is S only for k = 2 or 2 x c tables (see the module
    docstring). Every element lies in the tables with zero margins, so P = (I_r - J_r / r)
    kron (I_c - J_c / c) (:func:`margin_free_projection`), of rank (r - 1)(c - 1).

    Parameters
    ----------
    r, c : int
        Table shape, each >= 2.
    changes : int, optional
        The adjacency k, 2 or 3 (default 3). One change cannot keep the margins (S = {0});
        four or more add further moves (two disjoint rectangles, 4-cycles): use
        :func:`enumerated_sensitivity_space` for those.

    See Also
    --------
    ppdinfer.privacy.enumerated_sensitivity_space : S by enumeration.
    ppdinfer.privacy.contingency_sensitivities : Its norms.
    ppdinfer.privacy.dp_table_sensitivity_space : S without invariants.

    Notes
    -----
    :class:`~ppdinfer.privacy.SensitivitySpace` computes the facets of K = conv(S) when they are
    first needed, which is quick up to rank about 6 (3 x 4 tables) but takes seconds at rank 8 and 9
    (4 x 4 tables, k = 2) and is refused beyond (4 x 4 tables under k = 3: 264 vectors of rank 9;
    see :attr:`~ppdinfer.privacy.SensitivitySpace.hull_cost`). A Gaussian mechanism needs only P
    and Delta_2: take them from :func:`margin_free_projection` and
    :func:`contingency_sensitivities` for larger tables.

    References
    ----------
    .. [1] Y. H. Cho and J. Awan, "Formal privacy guarantees with invariant statistics." Proposition 32.

    Examples
    --------
    >>> space = contingency_sensitivity_space(3, 3)
    >>> space.rank, space.l1, round(space.l2 ** 2, 6), space.linf
    (4, 6.0, 6.0, 1.0)
    >>> contingency_sensitivity_space(3, 3, changes=2).l2    # rectangles only
    2.0
    """
    r, c = _contingency_shape(r, c, changes)
    moves = table_rectangles(r, c)
    if changes == 3:
        moves = np.concatenate([moves, table_three_cycles(r, c)])
    return SensitivitySpace(moves.reshape(len(moves), r * c), shape=(r, c))


def contingency_sensitivities(r, c, changes=3) -> dict[str, float]:
    r"""Delta_1, Delta_2 and Delta_inf of :func:`contingency_sensitivity_space`, without building it.

    .. math::

        (\Delta_1, \Delta_2, \Delta_\infty) =
        \begin{cases} (6, \sqrt{6}, 1) & k = 3,\ r, c \ge 3 \text{ (3-cycles)}, \\
                       (4, 2, 1) & \text{otherwise (rectangles)}. \end{cases}

    Proposition 30 and Section 5 print (4, 2, 1) for every table; that holds for k = 2 or 2 x c tables.

    Parameters
    ----------
    r, c : int
        Table shape, each >= 2.
    changes : int, optional
        The adjacency k, 2 or 3 (default 3).

    Returns
    -------
    dict
        ``{"l1": ..., "l2": ..., "linf": ...}``.

    References
    ----------
    .. [1] Y. H. Cho and J. Awan, "Formal privacy guarantees with invariant statistics." Section 5.

    Examples
    --------
    >>> contingency_sensitivities(2, 2)
    {'l1': 4.0, 'l2': 2.0, 'linf': 1.0}
    >>> round(contingency_sensitivities(10, 10)["l2"] ** 2, 6)     # sqrt 6, not 2
    6.0
    """
    r, c = _contingency_shape(r, c, changes)
    if changes == 3 and min(r, c) >= 3:
        return {"l1": 6.0, "l2": math.sqrt(6.0), "linf": 1.0}
    return {"l1": 4.0, "l2": 2.0, "linf": 1.0}


def margin_free_projection(r, c) -> np.ndarray:
    r"""The projection onto the r x c tables with zero row and column sums (span of S), row-major.

    .. math::

        P = \Bigl(I_r - \frac{J_r}{r}\Bigr) \otimes \Bigl(I_c - \frac{J_c}{c}\Bigr),
        \qquad \operatorname{rank} P = (r - 1)(c - 1),

    with J the matrix of ones.

    References
    ----------
    .. [1] Y. H. Cho and J. Awan, "Formal privacy guarantees with invariant statistics." Section 5.

    Examples
    --------
    >>> (margin_free_projection(2, 2) * 4).astype(int).tolist()     # v v^T / 4, v = (1, -1, -1, 1)
    [[1, -1, -1, 1], [-1, 1, 1, -1], [-1, 1, 1, -1], [1, -1, -1, 1]]
    """
    r, c = _table_shape(r, c)
    centre_rows = np.eye(r) - np.full((r, r), 1.0 / r)
    centre_cols = np.eye(c) - np.full((c, c), 1.0 / c)
    return np.kron(centre_rows, centre_cols)


def dp_table_sensitivity_space(r, c) -> SensitivitySpace:
    r"""S_DP for an r x c table without invariants: one record moved from one cell to another.

    .. math::

        S_{DP} = \{e_a - e_b : a \ne b \text{ cells}\}, \qquad
        \Delta_1 = 2,\ \Delta_2 = \sqrt{2},\ \Delta_\infty = 1,

    the sensitivities of the naive l1 / l2 / l_inf baselines of Section 5 (Figure 3).

    References
    ----------
    .. [1] Y. H. Cho and J. Awan, "Formal privacy guarantees with invariant statistics." Appendix B.

    Examples
    --------
    >>> space = dp_table_sensitivity_space(2, 2)
    >>> space.rank, space.l1, round(space.l2, 6), space.linf
    (3, 2.0, 1.414214, 1.0)
    """
    r, c = _table_shape(r, c)
    cells = r * c
    if cells < 2:
        raise ValueError("a 1 x 1 table has one cell: moving a record changes nothing (S_DP = {0})")
    identity = np.eye(cells)
    first, second = np.triu_indices(cells, k=1)
    return SensitivitySpace(identity[first] - identity[second], shape=(r, c))
