"""write_nmf -> read_nmf: what the reader returns is what the writer wrote, quirks included; the release is the truth's
queries plus noise of the written variances."""

import numpy as np
import pyarrow.dataset as ds
import pytest

from ppdinfer.census.nmf import read_nmf
from ppdinfer.census.nmf_writer import write_nmf
from ppdinfer.census.pl94 import PERSON
from ppdinfer.census.synthetic_pl94 import synthetic_pl94_state


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    root = tmp_path_factory.mktemp("nmf")
    state = synthetic_pl94_state(["Fulton", "Montour"], random_seed=3)
    write_nmf(root, state, random_seed=4, quirks=True, units_per_part=40)
    write_nmf(root, state, table="unit", random_seed=5)
    return root, state


def _raw(root, folder, level):
    """Every DPQuery row of a level as written, read with pyarrow alone: {(geocode, query): (values, variance)}."""
    files = sorted((root / folder / f"{level}.parquet" / "DPQuery").rglob("*.parquet"))
    out = {}
    for path in files:
        table = ds.dataset(path, format="parquet").to_table(columns=["geocode", "query_name", "value", "variance"])
        for code, name, value, variance in zip(*(table[c].to_pylist() for c in table.column_names), strict=True):
            out[code, name.removesuffix("_dpq")] = (value, variance)
    return out


@pytest.mark.parametrize("table, folder", [("person", "US_Person_PL_PROD"), ("unit", "US_Unit_PL_PROD")])
def test_the_reader_returns_every_value_written(written, table, folder):
    root, state = written
    nmf = read_nmf(root, 42, table=table)
    assert nmf.levels == ("State", "County", "Tract", "Block_Group", "Block")
    geo = nmf.geography
    assert sorted(geo.ids[geo.leaves]) == sorted(state.geography.ids[state.geography.leaves])
    for level in nmf.levels:
        raw = _raw(root, folder, level)
        seen = 0
        for query in nmf.queries(level):
            units, values, variances = nmf.measurements(level, query)
            for u, value, variance in zip(units, values, variances, strict=True):
                assert raw[geo.ids[u], query] == (value.tolist(), pytest.approx(float(variance), rel=1e-7))
            seen += units.size
        assert seen == len(raw)  # nothing written is missing, nothing read is invented


def test_bypassed_block_groups_and_the_release_of_the_truth(written):
    root, state = written
    nmf = read_nmf(root, 42, levels=["State", "County", "Tract", "Block_Group"], state_total=int(state.persons.sum()))
    assert nmf.bypassed("Block_Group").size > 0  # quirks=True bypasses 5 % of them
    coarse = PERSON.coarsen({"votingage": None, "hispanic": None, "cenrace": "major"})
    census, mechanism, y = nmf.release(coarse)
    truth = state.aggregate("Block_Group")  # block groups x 2016, sparse
    order = [
        state.geography.level("Block_Group").tolist().index(state.geography.index(c))
        for c in census.geography.ids[census.geography.leaves]
    ]
    cells = coarse.collapse(np.asarray(truth[order].todense())).ravel()
    assert mechanism.satisfies_invariants(cells)[0]
    z = (y - census.matrix @ cells) / mechanism.sigmas
    assert abs(z.mean()) < 4 / np.sqrt(z.size) and abs(z.var() - 1) < 0.1  # noise of the written variances


def test_topdown_over_the_files_unmeasured_root_follows_the_measurements(written):
    # the file's geography has an unmeasured root ('US') over the state: TopDown used to split its categories
    # evenly and bind every child to that split (county cells off by thousands); now the root's table is GLS's
    from ppdinfer.census import gls_estimate, topdown_estimate

    root, state = written
    nmf = read_nmf(root, 42, levels=["State", "County", "Tract", "Block_Group"], state_total=int(state.persons.sum()))
    coarse = PERSON.coarsen({"hispanic": None, "cenrace": "major"})
    census, mechanism, y = nmf.release(coarse)
    invariants = (mechanism.invariant_matrix, mechanism.invariant_values)
    geo = census.geography
    counties = geo.level("County")
    truth = np.array(
        [coarse.collapse(np.asarray(state.aggregate("County")[i].todense()))[0] for i in range(len(counties))]
    )
    order = [list(state.geography.ids[state.geography.level("County")]).index(c) for c in geo.ids[counties]]
    truth = truth[order]
    td = topdown_estimate(census, y, mechanism.sigmas, invariants)
    td_counties = np.add.reduceat(td, geo.leaf_start[counties], axis=0)
    gls = gls_estimate(census, y, mechanism.sigmas, invariants).unit_estimate[counties]
    rmse_td, rmse_gls = (np.sqrt(np.mean((e - truth) ** 2)) for e in (td_counties, gls))
    assert rmse_td < 3 * rmse_gls + 3, (rmse_td, rmse_gls)
