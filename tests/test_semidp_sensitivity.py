"""Semi-DP (Cho & Awan): a(t) by Definition 13 and from a fixed dataset, and the sensitivity space S."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ppdinfer.privacy import SensitivitySpace
from ppdinfer.privacy.semi_adjacency import (
    contingency_sensitivities,
    contingency_sensitivity_space,
    dp_table_sensitivity_space,
    enumerate_datasets,
    enumerated_sensitivity_space,
    margin_free_projection,
    one_way_margins,
    record_changes,
    semi_adjacent_parameter,
    semi_adjacent_parameter_from,
    semi_adjacent_parameters,
    table_rectangles,
    table_three_cycles,
    theorem16_bound,
)

TABLES = [(2, 2), (2, 3), (3, 3)]


def table_statistic(r, c):
    return lambda h: h.reshape(r, c)


def rows_as_set(vectors) -> set[tuple[float, ...]]:
    return {tuple(float(x) for x in row) for row in np.asarray(vectors).reshape(len(vectors), -1)}


# --- enumeration -------------------------------------------------------------------------------------


@pytest.mark.parametrize(("m", "n"), [(1, 4), (2, 3), (4, 5), (9, 3)])
def test_enumerate_datasets_lists_every_histogram_once(m, n):
    datasets = enumerate_datasets(m, n)
    assert datasets.shape == (math.comb(n + m - 1, m - 1), m)
    assert np.all(datasets >= 0) and np.all(datasets.sum(axis=1) == n)
    assert len(np.unique(datasets, axis=0)) == len(datasets)


def test_enumeration_refuses_past_its_limit_instead_of_hanging():
    with pytest.raises(ValueError, match="max_datasets"):
        enumerate_datasets(9, 30)
    with pytest.raises(ValueError, match="max_datasets"):
        semi_adjacent_parameters(9, 6, one_way_margins((3, 3)), max_datasets=100)
    with pytest.raises(ValueError, match="max_pairs"):
        semi_adjacent_parameter(4, 6, one_way_margins((2, 2)), t=((3, 3), (3, 3)), max_pairs=10)


def test_bad_arguments_raise_value_errors_naming_them():
    with pytest.raises(ValueError, match="n must be a positive integer"):
        enumerate_datasets(3, 0)
    with pytest.raises(ValueError, match="t: no dataset"):
        semi_adjacent_parameter(4, 3, one_way_margins((2, 2)), t=((3, 0), (1, 1)))
    with pytest.raises(ValueError, match="changes must be 2 or 3"):
        contingency_sensitivity_space(3, 3, changes=4)
    with pytest.raises(ValueError, match="x and y"):
        record_changes([1, 2], [1, 1])
    with pytest.raises(ValueError, match=r"S = \{0\}|is \{0\}"):  # one conforming dataset: nothing moves
        enumerated_sensitivity_space(2, 3, lambda h: int(h[1]), t=2)


def test_record_changes_is_half_the_l1_distance_of_the_histograms():
    assert record_changes([3, 0, 0], [3, 0, 0]) == 0
    assert record_changes([3, 0, 0], [2, 1, 0]) == 1
    assert record_changes([1, 1, 1, 0], [0, 2, 1, 0]) == 1
    assert record_changes([1, 0, 0, 1, 0, 0, 1, 0, 0], [0, 1, 0, 0, 1, 0, 0, 0, 1]) == 3


# --- a(t): Definition 13 and the reading from a fixed dataset -----------------------------------------


def test_example3_binary_records_with_their_number_of_ones_public():
    ones = lambda h: int(h[1])  # noqa: E731  (records in {0, 1}, n = 3)
    assert semi_adjacent_parameter(2, 3, ones, t=2) == 2
    assert semi_adjacent_parameter(2, 3, ones, t=0) == 0
    assert semi_adjacent_parameters(2, 3, ones) == {0: 0, 1: 2, 2: 2, 3: 0}


@pytest.mark.parametrize("table", [[[1, 1], [1, 0]], [[2, 1], [1, 0]], [[1, 2], [3, 0]]])
def test_example5_gives_2_by_definition13_and_3_from_the_confidential_table(table):
    """x22 = 0 with the other cells positive: the paper's a(t) = 3 needs distances from X* itself."""
    histogram = np.ravel(table)
    margins = one_way_margins((2, 2))
    t = margins(histogram)
    assert semi_adjacent_parameter(4, int(histogram.sum()), margins, t) == 2
    assert semi_adjacent_parameter_from(histogram, margins) == 3


@pytest.mark.parametrize(("r", "c"), TABLES)
def test_definition13_gives_2_for_every_one_way_margin(r, c):
    """The erratum: a(t) = 2 whenever D_t^i holds two values (else 0), for every t with n <= 5."""
    margins = one_way_margins((r, c))
    for n in range(1, 6):
        datasets = enumerate_datasets(r * c, n)
        support: dict = {}
        for h in datasets:
            t = margins(h)
            support[t] = support.get(t, np.zeros(r * c, dtype=bool)) | (h > 0)
        for t, a in semi_adjacent_parameters(r * c, n, margins).items():
            assert a == (2 if support[t].sum() >= 2 else 0), (r, c, n, t)


def test_the_reading_from_a_dataset_is_at_least_definition13():
    margins = one_way_margins((2, 3))
    for n in range(1, 5):
        a = semi_adjacent_parameters(6, n, margins)
        for h in enumerate_datasets(6, n):
            assert semi_adjacent_parameter_from(h, margins) >= a[margins(h)]


@pytest.mark.parametrize(("levels", "n_max"), [((2, 2), 5), ((2, 3), 4), ((3, 3), 3), ((2, 2, 2), 4)])
def test_theorem16_bound_holds_for_both_readings_and_is_attained_from_a_dataset(levels, n_max):
    p = len(levels)
    m = int(np.prod(levels))
    margins = one_way_margins(levels)
    assert theorem16_bound(p) == p + 1
    worst = 0
    for n in range(1, n_max + 1):
        assert max(semi_adjacent_parameters(m, n, margins).values()) <= theorem16_bound(p)
        for h in enumerate_datasets(m, n):
            worst = max(worst, semi_adjacent_parameter_from(h, margins))
    assert worst == theorem16_bound(p)  # tight under the fixed-dataset reading (n >= p + 1)


# --- the sensitivity space for tables with public one-way margins -------------------------------------


def test_rectangles_and_three_cycles_are_the_moves_that_keep_the_margins():
    for r, c in [(2, 2), (3, 3), (3, 4), (4, 5)]:
        rectangles, cycles = table_rectangles(r, c), table_three_cycles(r, c)
        assert len(rectangles) == math.comb(r, 2) * math.comb(c, 2)
        assert len(cycles) == 6 * math.comb(r, 3) * math.comb(c, 3)
        for moves, l1 in [(rectangles, 4), (cycles, 6)]:
            assert np.all(moves.sum(axis=1) == 0) and np.all(moves.sum(axis=2) == 0)
            assert np.all(np.abs(moves).sum(axis=(1, 2)) == l1) and np.all(np.abs(moves).max(axis=(1, 2)) == 1)
        both = np.concatenate([rectangles, -rectangles, cycles, -cycles]).reshape(-1, r * c)
        assert len(np.unique(both, axis=0)) == len(both)
    cycle = np.array([[1, -1, 0], [0, 1, -1], [-1, 0, 1]])
    assert rows_as_set(cycle[None]) <= rows_as_set(table_three_cycles(3, 3))


@pytest.mark.parametrize(("r", "c"), TABLES)
@pytest.mark.parametrize("changes", [2, 3])
def test_enumerated_space_equals_the_closed_form(r, c, changes):
    enumerated = enumerated_sensitivity_space(r * c, 3, one_way_margins((r, c)), table_statistic(r, c), changes=changes)
    closed = contingency_sensitivity_space(r, c, changes=changes)
    assert enumerated.shape == closed.shape == (r, c)
    assert rows_as_set(enumerated.vectors) == rows_as_set(closed.vectors)


def test_three_by_three_under_three_changes_holds_a_three_cycle_beyond_proposition32():
    """Proposition 32 as printed (rectangles only) gives Delta_2 = 2; the true S has sqrt 6."""
    enumerated = enumerated_sensitivity_space(9, 3, one_way_margins((3, 3)), table_statistic(3, 3), changes=3)
    printed = SensitivitySpace(table_rectangles(3, 3).reshape(-1, 9), shape=(3, 3))
    cycle = (1, -1, 0, 0, 1, -1, -1, 0, 1)
    assert tuple(float(x) for x in cycle) in rows_as_set(enumerated.vectors)
    assert enumerated.l2 == pytest.approx(math.sqrt(6))
    assert enumerated.l1 == 6.0
    assert printed.l2 == 2.0
    assert rows_as_set(enumerated.vectors) != rows_as_set(printed.vectors)


def test_definition13_adjacency_gives_rectangles_only_on_three_by_three():
    """With k = a(t) = 2 for every t (Definition 13), the 3-cycles are not adjacent differences."""
    by_definition = enumerated_sensitivity_space(9, 3, one_way_margins((3, 3)), table_statistic(3, 3))
    assert rows_as_set(by_definition.vectors) == rows_as_set(contingency_sensitivity_space(3, 3, changes=2).vectors)


@pytest.mark.parametrize(("r", "c", "changes"), [(2, 2, 3), (2, 5, 3), (3, 3, 2), (3, 4, 2)])
def test_rectangle_spaces_have_the_paper_sensitivities(r, c, changes):
    space = contingency_sensitivity_space(r, c, changes=changes)
    assert (space.l1, space.l2, space.linf) == (4.0, 2.0, 1.0)
    assert contingency_sensitivities(r, c, changes=changes) == {"l1": 4.0, "l2": 2.0, "linf": 1.0}


@pytest.mark.parametrize(("r", "c"), [(3, 3), (3, 4)])
def test_closed_form_sensitivities_match_the_three_change_space(r, c):
    space = contingency_sensitivity_space(r, c, changes=3)
    assert contingency_sensitivities(r, c) == {"l1": space.l1, "l2": pytest.approx(space.l2), "linf": space.linf}
    assert contingency_sensitivities(10, 10)["l2"] == pytest.approx(math.sqrt(6))  # no hull needed


@pytest.mark.parametrize(("r", "c"), [(2, 2), (2, 4), (3, 3), (3, 4)])
@pytest.mark.parametrize("changes", [2, 3])
def test_rank_and_projection_are_those_of_the_zero_margin_tables(r, c, changes):
    space = contingency_sensitivity_space(r, c, changes=changes)
    assert space.rank == (r - 1) * (c - 1)
    np.testing.assert_allclose(space.projection, margin_free_projection(r, c), atol=1e-12)


@pytest.mark.parametrize(("r", "c"), [(2, 2), (3, 5), (4, 4)])
def test_margin_free_projection_is_the_kronecker_product_of_centrings_and_fixes_every_move(r, c):
    projection = margin_free_projection(r, c)
    kron = np.kron(np.eye(r) - np.ones((r, r)) / r, np.eye(c) - np.ones((c, c)) / c)
    np.testing.assert_allclose(projection, kron, atol=1e-15)
    np.testing.assert_allclose(projection @ projection, projection, atol=1e-12)
    assert round(np.trace(projection)) == (r - 1) * (c - 1)
    moves = np.concatenate([table_rectangles(r, c), table_three_cycles(r, c)]).reshape(-1, r * c)
    np.testing.assert_allclose(moves @ projection, moves, atol=1e-12)


def test_two_by_two_space_is_plus_minus_one_vector_with_projection_vvT_over_4():
    space = contingency_sensitivity_space(2, 2)
    v = np.array([1.0, -1.0, -1.0, 1.0])
    assert rows_as_set(space.vectors) == {tuple(v), tuple(-v)}
    assert (space.rank, space.l1, space.l2, space.linf) == (1, 4.0, 2.0, 1.0)
    np.testing.assert_allclose(space.projection, np.outer(v, v) / 4, atol=1e-12)


# --- the K-norm gauge -------------------------------------------------------------------------------


def test_two_by_two_gauge_is_the_absolute_first_cell_on_the_span():
    space = contingency_sensitivity_space(2, 2)
    a = np.random.default_rng(4).normal(scale=3.0, size=20)
    points = a[:, None] * np.array([1.0, -1.0, -1.0, 1.0])
    np.testing.assert_allclose(space.gauge(points), np.abs(points[:, 0]), rtol=1e-12)
    assert space.gauge([1.0, 0.0, 0.0, 0.0])[0] == np.inf


@pytest.mark.parametrize(("r", "c", "changes"), [(2, 2, 2), (2, 3, 2), (3, 3, 2), (3, 3, 3), (3, 4, 3)])
def test_every_element_of_s_has_gauge_at_most_one_and_the_generators_exactly_one(r, c, changes):
    space = contingency_sensitivity_space(r, c, changes=changes)
    assert np.all(space.gauge(space.vectors) <= 1 + 1e-9)
    np.testing.assert_allclose(space.gauge(table_rectangles(r, c).reshape(-1, r * c)), 1.0, atol=1e-9)
    cycles = table_three_cycles(r, c).reshape(-1, r * c)
    if changes == 3 and len(cycles):  # measured: the 3-cycles are vertices of K as well
        np.testing.assert_allclose(space.gauge(cycles), 1.0, atol=1e-9)


@pytest.mark.parametrize(("r", "c", "changes"), [(2, 3, 2), (3, 3, 2), (3, 3, 3)])
def test_facet_gauge_equals_the_linear_program_on_random_points_of_the_span(r, c, changes):
    space = contingency_sensitivity_space(r, c, changes=changes)
    rng = np.random.default_rng(11)
    points = rng.normal(size=(25, r * c)) @ space.projection
    facets = space.gauge(points)
    programs = np.array([space.gauge_lp(v) for v in points])
    np.testing.assert_allclose(facets, programs, rtol=1e-7, atol=1e-9)


# --- the naive (DP) space -----------------------------------------------------------------------------


@pytest.mark.parametrize(("r", "c"), [(2, 2), (2, 3), (3, 2)])
def test_dp_space_moves_one_record_between_two_cells(r, c):
    space = dp_table_sensitivity_space(r, c)
    cells = r * c
    assert len(space.vectors) == cells * (cells - 1)
    assert (space.l1, space.linf) == (2.0, 1.0)
    assert space.l2 == pytest.approx(math.sqrt(2))
    assert space.rank == cells - 1
    assert space.shape == (r, c)


def test_dp_space_is_the_enumerated_space_with_no_invariant_but_n():
    total = lambda h: int(h.sum())  # noqa: E731  (n is fixed anyway: nothing more is public)
    enumerated = enumerated_sensitivity_space(4, 2, total, table_statistic(2, 2), changes=1)
    assert rows_as_set(enumerated.vectors) == rows_as_set(dp_table_sensitivity_space(2, 2).vectors)
