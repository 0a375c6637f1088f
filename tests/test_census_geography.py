"""The geography of a noisy-measurement file: tree checks, breadth-first order, the query matrix."""

import numpy as np
import pandas as pd
import pytest

from ppdinfer.census import Geography, TableSpec, census_queries

LEVELS = ["State", "County", "Tract", "Block_Group"]


def small_state():
    units = ["s", "c1", "c2", "t1", "t2", "t3", "b1", "b2", "b3", "b4", "b5"]
    parents = [None, "s", "s", "c1", "c2", "c1", "t1", "t2", "t1", "t3", "t2"]
    return Geography(units, parents, LEVELS)


def test_breadth_first_order_makes_every_unit_s_leaves_contiguous():
    geo = small_state()
    assert geo.ids[0] == "s" and geo.n_leaves == 5
    for u in range(geo.n_units):
        leaves = [leaf for leaf in range(geo.n_leaves) if _ancestor(geo, geo.leaves[leaf], u)]
        assert leaves == list(range(geo.leaf_start[u], geo.leaf_stop[u]))


def _ancestor(geo, node, u):
    while node != -1:
        if node == u:
            return True
        node = geo.parent[node]
    return False


def test_query_matrix_sums_the_descendants_cells():
    geo = small_state()
    table = TableSpec.hispanic_race()
    q = census_queries(geo, table, {"State": ["total"], "County": ["total", "hispanic"], "Block_Group": ["detailed"]})
    rng = np.random.default_rng(0)
    cells = rng.integers(0, 50, size=(geo.n_leaves, table.n_cells))
    values = q.matrix @ cells.ravel()
    frame = q.frame()
    assert values[0] == cells.sum()
    c1 = geo.index("c1")
    county = frame.index[(frame["unit"] == "c1") & (frame["kind"] == "hispanic")].tolist()
    block = cells[geo.leaf_start[c1] : geo.leaf_stop[c1]]
    assert values[county].tolist() == [block[:, :7].sum(), block[:, 7:].sum()]
    assert q.n_queries == 1 + 2 * 3 + 5 * 14
    # each cell's queries: the state total, its county's total and hispanic margin, its own detailed cell
    assert all(q.cell_queries(c).size == 4 for c in range(q.n_cells))
    assert set(np.unique(q.matrix.data)) == {1}


def test_from_frame_and_level():
    frame = pd.DataFrame({"unit": ["s", "a", "b"], "parent": [np.nan, "s", "s"]})
    geo = Geography.from_frame(frame, level_names=["State", "County"])
    assert geo.level("County").tolist() == [1, 2]
    with pytest.raises(ValueError, match="column 'id'"):
        Geography.from_frame(frame, unit="id")


@pytest.mark.parametrize(
    "units, parents, match",
    [
        (["s", "a", "b"], [None, "s", "x"], "'b' has parent 'x'.*orphan"),
        (["s", "a", "b"], [None, None, "s"], "more than one root"),
        (["s", "a", "b"], [None, "b", "a"], "'a' is on a cycle"),
        (["s", "a", "b"], ["b", "s", "a"], "no unit is a root"),
        (["s", "a", "a"], [None, "s", "s"], "'a' appears twice"),
        (["s", "a"], [None, "a"], "'a' is its own parent"),
        (["s", "a", "b", "c"], [None, "s", "s", "a"], "'b' is a leaf at depth 1"),
    ],
)
def test_bad_geographies_are_refused_naming_the_unit(units, parents, match):
    with pytest.raises(ValueError, match=match):
        Geography(units, parents)


def test_bad_queries_and_tables_are_refused():
    geo = small_state()
    with pytest.raises(ValueError, match="level 'Block'"):
        census_queries(geo, TableSpec(("a",)), {"Block": ["total"]})
    with pytest.raises(ValueError, match="kind 'race'"):
        census_queries(geo, TableSpec(("a",)), {"State": ["race"]})
    with pytest.raises(ValueError, match="level_names"):
        Geography(["s", "a"], [None, "s"], ["State"])
    with pytest.raises(ValueError, match="margin 'm'"):
        TableSpec(("a", "b"), {"m": ((0, 2),)})
    q = census_queries(geo, TableSpec(("a", "b")), {"Block_Group": ["detailed"]})
    with pytest.raises(ValueError, match="totals must hold one value per unit"):
        q.unit_invariants(["s"], [1, 2])
    with pytest.raises(ValueError, match="unit 'zz'"):
        q.unit_invariants(["zz"], [1])
