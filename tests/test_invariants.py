"""Invariants: membership, feasibility and enumeration of the conforming set, checked by brute force."""

import itertools
import math
import time

import numpy as np
import pytest

from ppdinfer.invariants import InfeasibleInvariants, LinearInvariants


def brute_force(invariants, low, high):
    """Every table with cells in [low, high] that conforms, in lexicographic order."""
    tables = np.array(list(itertools.product(range(low, high + 1), repeat=invariants.n_cells)))
    tables = tables.reshape(-1, *invariants.shape)
    return tables[invariants.contains(tables)]


def test_grand_total_enumerates_the_compositions():
    for cells, total in [(1, 4), (3, 0), (3, 5), (5, 6)]:
        inv = LinearInvariants.grand_total(cells, total) & LinearInvariants.nonnegative(cells)
        tables = inv.enumerate()
        assert len(tables) == math.comb(total + cells - 1, cells - 1)
        assert np.all(tables.sum(axis=1) == total) and np.all(tables >= 0)
        assert len({tuple(t) for t in tables}) == len(tables)


@pytest.mark.parametrize("rows, cols", [([3, 2], [1, 4]), ([2, 2, 1], [3, 0, 2]), ([4, 0], [1, 1, 2])])
def test_margins_match_brute_force(rows, cols):
    shape = (len(rows), len(cols))
    inv = LinearInvariants.margins(rows, cols) & LinearInvariants.nonnegative(shape)
    expected = brute_force(inv, 0, max(rows))
    assert np.array_equal(inv.enumerate(), expected)
    assert all(np.array_equal(t.sum(axis=1), rows) and np.array_equal(t.sum(axis=0), cols) for t in expected)


def test_the_paper_table_1_invariants():
    # Gong & Meng Table 1's invariants on a smaller table: grand total, the first row's total, and the
    # total of the last columns of both rows, every cell >= 0 (here 2 x 4, last 3 columns).
    shape = (2, 4)
    grand = LinearInvariants.grand_total(shape, 6)
    first_row = LinearInvariants([[1, 1, 1, 1, 0, 0, 0, 0]], [3], shape=shape)
    adults = LinearInvariants([[0, 1, 1, 1, 0, 1, 1, 1]], [5], shape=shape)
    inv = grand & first_row & adults & LinearInvariants.nonnegative(shape)
    assert np.array_equal(inv.enumerate(), brute_force(inv, 0, 3))  # no cell exceeds a row total of 3
    confidential = np.array([[1, 0, 2, 0], [0, 1, 1, 1]])
    assert inv.contains(confidential)
    inv.check(confidential)


def test_contains_and_check_name_the_broken_invariant():
    inv = LinearInvariants.margins([2, 1], [1, 2]) & LinearInvariants.nonnegative((2, 2))
    assert inv.contains([[0, 2], [1, 0]]) and not inv.contains([[1, 1], [1, 0]])
    assert inv.contains(np.array([[[0, 2], [1, 0]], [[2, 0], [-1, 2]]])).tolist() == [True, False]
    with pytest.raises(ValueError, match="breaks equality"):
        inv.check([[1, 1], [1, 0]])
    with pytest.raises(ValueError, match="breaks inequality 2"):
        inv.check([[2, 0], [-1, 2]])


def test_feasibility_check():
    inv = LinearInvariants.margins([2, 5], [4, 3]) & LinearInvariants.nonnegative((2, 2))
    table = inv.check_feasible()
    assert inv.contains(table)
    with pytest.raises(InfeasibleInvariants, match="row_totals sum to 3 but col_totals to 4"):
        LinearInvariants.margins([1, 2], [2, 2])
    # integer infeasible although the real relaxation is feasible: 2 s1 = 1
    with pytest.raises(InfeasibleInvariants, match="no integer table"):
        LinearInvariants([[2, 0]], [1]).check_feasible()
    with pytest.raises(InfeasibleInvariants):
        (LinearInvariants.grand_total(3, -2) & LinearInvariants.nonnegative(3)).enumerate()


def test_enumeration_refuses_rather_than_hangs():
    with pytest.raises(ValueError, match="unbounded"):
        LinearInvariants.grand_total(3, 5).enumerate()  # no non-negativity: infinitely many tables
    inv = LinearInvariants.grand_total(6, 200) & LinearInvariants.nonnegative(6)  # C(205, 5) ~ 2.9e9 tables
    start = time.perf_counter()
    with pytest.raises(ValueError, match="more than limit = 1000 tables"):
        inv.enumerate(limit=1000)
    assert time.perf_counter() - start < 5


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda: LinearInvariants([[1, 1]], [1, 2]), "A has 1 rows but a has 2 values"),
        (lambda: LinearInvariants([[1, 0.5]], [1]), "A must hold integers"),
        (lambda: LinearInvariants([[1, 1]], None), "give A and a together"),
        (lambda: LinearInvariants(None, None), "at least one equality"),
        (lambda: LinearInvariants([[1, 1]], [1], [[1, 1, 1]], [0]), "B has 3 columns but A has 2"),
        (lambda: LinearInvariants([[1, 1, 1]], [1], shape=(2, 2)), "shape \\(2, 2\\) has 4 cells"),
        (lambda: LinearInvariants.margins([1, 2]), "give the table's shape"),
        (lambda: LinearInvariants.margins([1, 2], [3], shape=(2, 2)), "do not fit a 2 x 2 table"),
        (lambda: LinearInvariants.grand_total(2, 1.5), "total must hold integers"),
        (lambda: LinearInvariants.grand_total(2, 1).contains([1, 2, 3]), "s must be a table of shape \\(2,\\)"),
        (lambda: LinearInvariants.grand_total(2, 1) & LinearInvariants.nonnegative(3), "shapes \\(2,\\) and \\(3,\\)"),
    ],
)
def test_bad_input(make, message):
    with pytest.raises(ValueError, match=message):
        make()


def test_linked_invariants_are_refused_after_max_nodes_not_searched_forever():
    """Grand total, first-row total and a column-block total together: the one-row-at-a-time check
    explores fillings of the first row that no second row completes (Gong & Meng's Table 1 shape)."""
    shape = (2, 23)
    block = np.zeros(shape, dtype=int)
    block[:, 4:] = 1
    linked = LinearInvariants(
        np.vstack([np.ones(46), np.r_[np.ones(23), np.zeros(23)], block.reshape(-1)]), [256, 130, 213], shape=shape
    ) & LinearInvariants.nonnegative(shape)
    start = time.perf_counter()
    with pytest.raises(ValueError, match="max_nodes = 5000"):
        linked.enumerate(max_nodes=5000)
    assert time.perf_counter() - start < 5
    with pytest.raises(ValueError, match="max_nodes"):
        linked.enumerate(max_nodes=0)


# -- counting before listing ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "make, low, high",
    [
        (lambda: LinearInvariants.grand_total(4, 6) & LinearInvariants.nonnegative(4), 0, 6),
        (lambda: LinearInvariants.margins([3, 2], [1, 4]) & LinearInvariants.nonnegative((2, 2)), 0, 4),
        (lambda: LinearInvariants.margins([2, 2, 1], [1, 3, 1]) & LinearInvariants.nonnegative((3, 3)), 0, 2),
        (lambda: LinearInvariants([[1, 2, -1, 0], [0, 1, 1, 1]], [3, 4], np.eye(4, dtype=int), [0, 0, 0, 0]), 0, 8),
        (
            lambda: LinearInvariants(
                [[2, 0, 1]], [7], np.vstack([np.eye(3, dtype=int), -np.eye(3, dtype=int)]), [-1, 0, 0, -3, -5, -2]
            ),
            -1,
            5,
        ),
    ],
)
def test_count_and_enumerate_agree_with_brute_force(make, low, high):
    inv = make()
    expected = brute_force(inv, low, high)
    assert inv.count() == len(expected)
    assert np.array_equal(inv.enumerate(), expected)


def test_enumeration_refuses_a_large_set_before_listing_it():
    """C(35, 5) = 324,632 tables: the search used to list 200,000 of them (17-32 s) before refusing."""
    inv = LinearInvariants.grand_total(6, 30) & LinearInvariants.nonnegative(6)
    start = time.perf_counter()
    with pytest.raises(ValueError, match="more than limit = 200000 tables"):
        inv.enumerate()
    with pytest.raises(ValueError, match="more than limit = 200000 tables"):
        inv.count()
    assert inv.count(limit=10**6) == math.comb(35, 5)
    assert time.perf_counter() - start < 2
