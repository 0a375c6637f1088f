"""The PL94 histograms: the race combinations in the Bureau's order, query groups in C order, coarser tables."""

import numpy as np
import pytest
import scipy.sparse

from ppdinfer.census.pl94 import CENRACE, MAJOR_RACES, PERSON, PERSON_QUERIES, UNIT


def test_cenrace_order_matches_the_bureaus_list():
    # Positions from the DAS schema (source/programs/schema/attributes/cenrace.py).
    assert len(CENRACE) == 63 and len(set(CENRACE)) == 63
    assert CENRACE[:6] == ("white", "black", "aian", "asian", "nhopi", "sor")
    assert (CENRACE[6], CENRACE[20], CENRACE[21], CENRACE[40], CENRACE[41], CENRACE[56], CENRACE[62]) == (
        "white-black",
        "nhopi-sor",
        "white-black-aian",
        "asian-nhopi-sor",
        "white-black-aian-asian",
        "white-black-aian-asian-nhopi",
        "white-black-aian-asian-nhopi-sor",
    )
    sizes = np.bincount([label.count("-") + 1 for label in CENRACE])
    assert sizes[1:].tolist() == [6, 15, 20, 15, 6, 1]
    assert sum(len(group) for group in MAJOR_RACES) == 63 and MAJOR_RACES[6] == tuple(range(6, 63))


def test_labels_follow_the_c_order_index():
    labels = PERSON.labels()
    h, v, hi, c = 3, 1, 1, 21
    assert (
        labels[((h * 2 + v) * 2 + hi) * 63 + c]
        == "hhgq=nursing, votingage=18+, hispanic=hispanic, cenrace=white-black-aian"
    )
    assert UNIT.labels() == ("h1=vacant", "h1=occupied")


@pytest.mark.parametrize("query", PERSON_QUERIES)
def test_every_query_partitions_the_cells(query):
    groups = PERSON.query_groups(query)
    assert len(groups) == int(np.prod(PERSON.query_shape(query)))
    flat = np.sort(np.concatenate([np.asarray(g) for g in groups]))
    np.testing.assert_array_equal(flat, np.arange(2016))


def test_query_values_in_c_order_over_the_kept_axes():
    cells = np.random.default_rng(3).integers(0, 9, size=2016)
    cube = cells.reshape(8, 2, 2, 63)
    value = [cells[list(g)].sum() for g in PERSON.query_groups("votingage * hispanic * cenrace")]
    np.testing.assert_array_equal(value, cube.sum(axis=0).ravel())
    value = [cells[list(g)].sum() for g in PERSON.query_groups("hispanic * cenrace")]
    np.testing.assert_array_equal(value, cube.sum(axis=(0, 1)).ravel())
    value = [cells[list(g)].sum() for g in PERSON.query_groups("hhinstlevels")]
    by_hhgq = cube.sum(axis=(1, 2, 3))
    assert value == [by_hhgq[0], by_hhgq[1:5].sum(), by_hhgq[5:].sum()]
    assert PERSON.query_shape("total") == () and PERSON.query_shape("detailed") == (8, 2, 2, 63)


def test_coarse_table_keeps_exactly_the_queries_it_determines():
    coarse = PERSON.coarsen({"votingage": None, "hispanic": None, "cenrace": "major"})
    assert coarse.table.n_cells == 28
    assert set(coarse.kept) == {"total", "hispanic", "votingage", "votingage * hispanic"}
    cells = np.random.default_rng(4).integers(0, 5, size=(3, 2016))
    small = coarse.collapse(cells)
    assert small.shape == (3, 28)
    np.testing.assert_array_equal(coarse.collapse(scipy.sparse.csr_matrix(cells)), small)  # a state's blocks: sparse
    np.testing.assert_array_equal(small.sum(axis=1), cells.sum(axis=1))
    for query in coarse.kept:
        fine = [cells[:, list(g)].sum(axis=1) for g in PERSON.query_groups(query)]
        coarse_groups = coarse.table.groups(query)
        np.testing.assert_array_equal(fine, [small[:, list(g)].sum(axis=1) for g in coarse_groups])
    full_race = PERSON.coarsen({"hispanic": None, "cenrace": None})
    assert full_race.table.n_cells == 126 and "hispanic * cenrace" in full_race.kept and "detailed" in full_race.dropped


def test_bad_queries_and_coarsenings_are_refused():
    with pytest.raises(ValueError, match="'race'"):
        PERSON.query_groups("hispanic * race")
    with pytest.raises(ValueError, match="order"):
        PERSON.query_shape("cenrace * hispanic")
    with pytest.raises(ValueError, match="'age'"):
        PERSON.coarsen({"age": None})
    with pytest.raises(ValueError, match="split its levels"):
        PERSON.coarsen({"hhgq": (((0,), (1, 2)), ("a", "b"))})
    with pytest.raises(ValueError, match="last axis"):
        PERSON.coarsen({"hispanic": None}).collapse(np.zeros(14))


def test_summed_measurements_are_the_finest_functions_of_the_coarse_cells():
    coarse = PERSON.coarsen({"votingage": None, "hispanic": None, "cenrace": "major"})
    # cenrace: the six races alone stay single values, the 57 combinations sum into one
    assert coarse.sums["cenrace"] == tuple((k,) for k in range(6)) + (tuple(range(6, 63)),)
    assert coarse.sums["hhgq"] == (tuple(range(8)),)  # hhgq summed out: only its total is a function
    assert len(coarse.sums["detailed"]) == 28 and max(len(s) for s in coarse.sums["detailed"]) == 8 * 57
    cells = np.random.default_rng(5).integers(0, 4, size=2016)
    small = coarse.collapse(cells)
    for query, sums in coarse.sums.items():
        values = np.array([cells[list(g)].sum() for g in PERSON.query_groups(query)])
        summed = [values[list(s)].sum() for s in sums]
        groups = coarse.summed_table.groups(query)
        assert summed == [small[list(g)].sum() for g in groups], query


def test_summed_noise_error_is_measured_not_assumed():
    from ppdinfer.census.summed_noise import summed_noise_error
    from ppdinfer.mechanisms import DiscreteGaussian

    assert summed_noise_error([4.06] * 456) < 1e-8  # production block-group detailed cells
    assert summed_noise_error([2.0]) == 0.0
    # sd 0.3: the convolution of two discrete Gaussians, by direct sums, is far from one
    k = np.arange(-30, 31)
    one, two = DiscreteGaussian(0.3), DiscreteGaussian(np.sqrt(0.18))
    pmf = np.exp(-(k**2) / (2 * 0.09) + one.log_norm)
    direct = np.convolve(pmf, pmf)[30:-30]
    target = np.exp(-(k**2) / (2 * 0.18) + two.log_norm)
    near = np.abs(k) <= 5 * np.sqrt(0.18)
    assert summed_noise_error([0.09, 0.09]) == pytest.approx(
        np.max(np.abs(np.log(direct[near] / target[near]))), rel=1e-6
    )
    with pytest.raises(ValueError, match="variances"):
        summed_noise_error([1.0, 0.0])
