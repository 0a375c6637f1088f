"""measurement_release: a file's measurements over the full histogram or a coarser table, exact sums, summed noise."""

import numpy as np
import pytest

from ppdinfer.census import Geography
from ppdinfer.census.nmf_release import measurement_release, truncated_geography
from ppdinfer.census.pl94 import PERSON

LEVELS = ("US", "State", "County", "Block_Group")


class FakeFile:
    """Measurements computed from a known fine truth (leaves x 2016), without noise, one variance per level/query."""

    schema = PERSON

    def __init__(self, truth, bypassed=(), queries=("total", "cenrace", "hhgq", "votingage * hispanic", "detailed")):
        self.geography = Geography(
            ["US", "042", "042001", "042003", "042001a", "042001b", "042003a"],
            [None, "US", "042", "042", "042001", "042001", "042003"],
            list(LEVELS),
        )
        self.levels = ("State", "County", "Block_Group")
        self.truth, self.bypassed, self._queries = truth, set(bypassed), queries
        self.state_total = None
        geo = self.geography
        self.unit_truth = np.array(
            [truth[geo.leaf_start[u] : geo.leaf_stop[u]].sum(axis=0) for u in range(geo.n_units)]
        )

    def queries(self, level):
        return self._queries

    def constraint_names(self, level):
        return ()

    def measurements(self, level, query):
        geo = self.geography
        units = np.array([u for u in geo.level(level) if geo.ids[u] not in self.bypassed], dtype=np.int64)
        groups = PERSON.query_groups(query)
        values = np.array([[self.unit_truth[u][list(g)].sum() for g in groups] for u in units])
        variance = np.full(units.size, 4.0 + LEVELS.index(level) + len(groups) / 100)
        return units, values, variance


@pytest.fixture(scope="module")
def truth():
    rng = np.random.default_rng(7)
    cells = np.zeros((3, 2016), dtype=np.int64)
    for leaf in range(3):
        hit = rng.choice(2016, size=40, replace=False)
        cells[leaf, hit] = rng.integers(1, 30, size=40)
    return cells


def test_full_histogram_rows_are_the_file_values(truth):
    source = FakeFile(truth)
    census, mechanism, y = measurement_release(source)
    np.testing.assert_array_equal(census.matrix @ truth.ravel(), y)
    assert census.n_cells == 3 * 2016 and mechanism.n_queries == y.size == 6 * (
        1 + 63 + 8 + 4 + 2016
    )  # 6 units below the root
    assert list(census.unit) == sorted(census.unit)  # unit major
    state = census.unit == 1
    assert list(census.kind[state][:2]) == ["total", "cenrace"]
    np.testing.assert_allclose(mechanism.sigmas[state][0] ** 2, 5.01)


def test_coarse_table_sums_values_and_variances(truth):
    source = FakeFile(truth)
    coarse = PERSON.coarsen({"votingage": None, "hispanic": None, "cenrace": "major"})
    source.state_total = int(truth.sum())
    census, mechanism, y = measurement_release(source, coarse)
    np.testing.assert_array_equal(census.matrix @ coarse.collapse(truth).ravel(), y)
    detailed = (census.kind == "detailed") & (census.unit == 4)
    assert detailed.sum() == 28
    # a two-or-more-races cell sums 8 x 57 fine values; its variance sums theirs
    variance = mechanism.sigmas[detailed] ** 2
    np.testing.assert_allclose(sorted(set(np.round(variance, 6))), [8 * 27.16, 8 * 57 * 27.16])
    assert mechanism.invariant_values.tolist() == [int(truth.sum())]


def test_bypassed_units_have_no_rows_and_levels_cut_the_geography(truth):
    source = FakeFile(truth, bypassed={"042001b"})
    census, _, y = measurement_release(source, PERSON.coarsen({"hispanic": None}), levels=["State", "County"])
    assert census.geography.level_names == ("US", "State", "County") and census.n_cells == 2 * 2
    assert (census.matrix @ PERSON.coarsen({"hispanic": None}).collapse(source.unit_truth[[2, 3]]).ravel() == y).all()
    census, _, _ = measurement_release(source, PERSON.coarsen({"hispanic": None}))
    assert census.geography.index("042001b") not in set(census.unit.tolist())


def test_summed_noise_beyond_tolerance_is_left_out_with_a_warning(truth):
    source = FakeFile(truth)
    source.measurements = lambda level, query, f=source.measurements: (lambda u, v, w: (u, v, w * 0 + 0.09))(
        *f(level, query)
    )
    with pytest.warns(UserWarning, match="left out"):
        census, mechanism, y = measurement_release(source, PERSON.coarsen({"votingage": None}), levels=["Block_Group"])
    assert np.all(mechanism.sigmas == pytest.approx(0.3))  # only unsummed values remain


def test_truncated_geography_and_bad_levels(truth):
    source = FakeFile(truth)
    cut, index = truncated_geography(source.geography, "County")
    assert cut.n_leaves == 2 and list(source.geography.ids[index]) == list(cut.ids)
    with pytest.raises(ValueError, match="'Tract' was not read"):
        measurement_release(source, levels=["Tract"])
    with pytest.raises(TypeError, match="Coarsening"):
        measurement_release(source, table="votingage")
