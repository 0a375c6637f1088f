"""The PL94 production allocation, the synthetic PL94 state down to blocks and the synthetic NMF writer.

The written files are read back with plain pyarrow (no reader of ours), and checked against the truth and
against the allocation's figures computed here from the published shares.
"""

import multiprocessing
from concurrent.futures import ProcessPoolExecutor
from fractions import Fraction as F
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import scipy.sparse as sp

from ppdinfer.census.nmf_writer import NMFQuirks, write_nmf
from ppdinfer.census.pl94 import PERSON, PERSON_QUERIES
from ppdinfer.census.production import (
    PL94_QUERY_SHARES,
    PRODUCTION_LEVEL_SHARES,
    PRODUCTION_QUERY_SHARES,
    PRODUCTION_RHO,
    UNIT_LEVEL_SHARES,
    UNIT_RHO,
    pl94_budget_shares,
    pl94_variances,
)
from ppdinfer.census.synthetic import pa_county_populations
from ppdinfer.census.synthetic_pl94 import LEVELS, synthetic_pl94_state
from ppdinfer.datasets import COVID_PA_DATA
from ppdinfer.privacy import zcdp_epsilon

COUNTIES = ["Cameron", "Fulton"]


# -- the allocation ----------------------------------------------------------------------------------------------


def test_every_levels_query_shares_sum_to_one_and_name_the_production_queries():
    for level, shares in PL94_QUERY_SHARES.items():
        assert sum(shares.values()) == 1, level
        assert tuple(shares) == (PERSON_QUERIES[1:] if level == "US" else PERSON_QUERIES)
    assert sum(PRODUCTION_LEVEL_SHARES.values()) == 1 and sum(UNIT_LEVEL_SHARES.values()) == 1
    # spot checks against strategies.py (ProductionCandidate20210527US_mult8_add02_dsepJune3), typed from the file
    assert PL94_QUERY_SHARES["US"]["detailed"] == F(189, 241)
    assert PL94_QUERY_SHARES["Tract"]["cenrace"] == F(4, 2051)
    assert PL94_QUERY_SHARES["Block_Group"]["votingage * hispanic * cenrace"] == F(24, 4099)
    assert PL94_QUERY_SHARES["Block"]["detailed"] == F(3945, 4097)
    # the 14-cell approximation keeps the production 'total', 'hispanic' and 'hispanic * cenrace' shares
    for level, shares in PRODUCTION_QUERY_SHARES.items():
        assert shares["detailed"] == PL94_QUERY_SHARES[level]["hispanic * cenrace"]
        assert shares["hispanic"] == PL94_QUERY_SHARES[level]["hispanic"]


@pytest.mark.parametrize(
    ("level", "query", "sigma", "digits"),
    [
        ("State", "total", 1.10, 2),
        ("County", "total", 2.17, 2),
        ("Tract", "total", 2.47, 2),
        ("Block_Group", "total", 1.75, 2),
        ("Block", "total", 89.2, 1),
        ("Block", "detailed", 3.18, 2),
        ("Tract", "hispanic * cenrace", 2.23, 2),
        ("Block_Group", "hispanic * cenrace", 2.23, 2),
    ],
)
def test_production_sigmas_match_the_published_figures(level, query, sigma, digits):
    # figures of ../shared/notes/census_nmf.md (rho = (542/339)^2, level x query shares)
    assert round(pl94_variances(level)[query] ** 0.5, digits) == sigma


def test_variances_are_exact_fractions_of_the_allocation():
    exact = pl94_variances("State", exact=True)["total"]
    assert exact == 1 / (F(542, 339) ** 2 * F(1440, 4099) * F(3773, 4097))
    assert pl94_variances("State", rho=2 * PRODUCTION_RHO)["total"] == pytest.approx(float(exact) / 2, rel=1e-12)
    assert pl94_budget_shares("Block")["total"] == F(825, 16793603)
    assert set(pl94_variances("County", table="unit")) == {"detailed"}
    for bad in ({"level": "Nation"}, {"level": "State", "table": "housing"}, {"level": "State", "rho": -1.0}):
        with pytest.raises(ValueError):
            pl94_variances(**bad)


def test_certificates_epsilons_follow_from_the_rhos():
    # The production certificates state epsilon at delta 1e-10: persons 17849145/1041158 from rho (542/339)^2,
    # housing units 1455307/588081 from rho 11417641/152349649 (Canonne, Kamath & Steinke's conversion).
    assert zcdp_epsilon(PRODUCTION_RHO, 1e-10, "optimal") == pytest.approx(17849145 / 1041158, abs=1e-6)
    assert UNIT_RHO == pytest.approx(11417641 / 152349649, rel=1e-15)
    assert zcdp_epsilon(UNIT_RHO, 1e-10, "optimal") == pytest.approx(1455307 / 588081, abs=1e-6)
    assert round(pl94_variances("Block", table="unit")["detailed"] ** 0.5, 2) == 10.51


# -- the synthetic state -------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def state():
    return synthetic_pl94_state(COUNTIES, random_seed=3)


def _prefix_sums(state, level):
    """Persons per unit of ``level`` by geocode prefix over the leaves (independent of the geography's ranges)."""
    geo = state.geography
    leaves = geo.ids[geo.leaves]
    totals = np.asarray(state.persons.sum(axis=1)).ravel()
    return {code: int(totals[[leaf.startswith(code) for leaf in leaves]].sum()) for code in geo.ids[geo.level(level)]}


def test_the_state_has_the_counties_fips_sizes_and_geocodes(state):
    geo = state.geography
    populations = pa_county_populations()[COUNTIES]
    fips = pd.read_csv(COVID_PA_DATA / "pa_county_population.csv").set_index("county")["fips"]
    assert geo.level_names == LEVELS and geo.ids[0] == "042" and state.tabulation_geoid[0] == "42"
    counties = geo.ids[geo.level("County")].tolist()
    assert counties == [f"0{fips[name]}" for name in COUNTIES]
    assert state.county_names == dict(zip(counties, COUNTIES, strict=True))
    assert _prefix_sums(state, "County") == dict(zip(counties, populations.tolist(), strict=True))
    tracts = [code[:6] for code in geo.ids[geo.level("Tract")]]
    assert [tracts.count(c) for c in counties] == [max(1, round(p / 3800)) for p in populations]
    widths = {level: {len(code) for code in geo.ids[geo.level(level)]} for level in LEVELS}
    assert widths == {"State": {3}, "County": {6}, "Tract": {10}, "Block_Group": {12}, "Block": {28}}
    for k in geo.leaves[::37]:
        block, group = geo.ids[k], geo.ids[geo.parent[k]]
        identity = block[12:]
        assert block.startswith(group) and identity[:5] == group[1:6] and identity[11] == identity[12]
        assert state.tabulation_geoid[k] == identity[:11] + identity[12:]
        assert state.tabulation_geoid[geo.parent[k]] == identity[:12]


def test_counties_asked_out_of_order_come_in_geocode_order_as_a_file_reads_back():
    asked = ["Montour", "Cameron"]  # FIPS 42093, 42023
    state = synthetic_pl94_state(asked, random_seed=3, levels=("State", "County", "Tract"))
    counties = state.geography.ids[state.geography.level("County")].tolist()
    assert counties == ["042023", "042093"]
    assert state.county_names == {"042023": "Cameron", "042093": "Montour"}
    assert _prefix_sums(state, "County") == {"042023": 4547, "042093": 18136}


def test_the_truth_is_sparse_consistent_and_respects_the_structural_zeros(state):
    persons = state.persons
    assert isinstance(persons, sp.csr_matrix)
    assert persons.dtype == np.int64 and persons.shape == (state.geography.n_leaves, 2016)
    assert persons.data.min() > 0 and persons.nnz < 0.03 * np.prod(persons.shape)
    cells = persons.toarray().reshape(-1, 8, 2, 2, 63)
    assert cells[:, 3, 0].sum() == 0 and cells[:, 1, 0].sum() == 0  # no minors in nursing or correctional GQs
    in_type = cells.sum(axis=(2, 3, 4))
    facilities, units = state.gq_facilities, state.units
    assert np.all(facilities[:, 0] == units.sum(axis=1)) and units.min() >= 0
    assert np.all(in_type[:, 1:] >= facilities[:, 1:]) and np.all((in_type[:, 1:] > 0) == (facilities[:, 1:] > 0))
    occupied = units[:, 1]
    assert np.all((occupied >= 1) == (in_type[:, 0] >= 1)) and np.all(occupied <= in_type[:, 0])
    for level in ("Tract", "Block_Group"):
        totals = np.asarray(state.aggregate(level).sum(axis=1)).ravel()
        assert totals.tolist() == list(_prefix_sums(state, level).values())
    adults = cells[:, :, 1].sum() / cells.sum()
    assert 0.70 < adults < 0.86
    empty = np.mean(in_type.sum(axis=1) == 0)
    assert 0.18 < empty < 0.40


def test_a_seed_gives_the_same_state_and_block_groups_sum_its_blocks(state):
    again = synthetic_pl94_state(COUNTIES, random_seed=3)
    assert (again.persons != state.persons).nnz == 0 and np.array_equal(again.units, state.units)
    other = synthetic_pl94_state(COUNTIES, random_seed=4)
    assert other.persons.shape != state.persons.shape or (other.persons != state.persons).nnz > 0
    groups = synthetic_pl94_state(COUNTIES, random_seed=3, levels=("State", "County", "Tract", "Block_Group"))
    assert groups.geography.level_names == ("State", "County", "Tract", "Block_Group")
    assert (groups.persons != state.aggregate("Block_Group")).nnz == 0
    assert np.array_equal(groups.gq_facilities, state.aggregate("Block_Group", state.gq_facilities))
    skipped = synthetic_pl94_state(COUNTIES, random_seed=3, levels=("State", "Tract"))
    assert skipped.geography.ids[1] == state.geography.ids[state.geography.level("Tract")[0]]


@pytest.mark.parametrize(
    "bad",
    [
        {"levels": ("County", "Tract")},
        {"levels": ("State", "Block", "Tract")},
        {"levels": ("State", "Zip")},
        {"levels": "State"},
        {"state_fips": 100},
        {"empty_share": 1.0},
        {"block_people": 0},
        {"concentrations": (1.0, 2.0)},
    ],
)
def test_the_state_refuses_bad_arguments(bad):
    with pytest.raises(ValueError):
        synthetic_pl94_state(["Cameron"], random_seed=0, **bad)


# -- the writer ----------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def written(state, tmp_path_factory):
    root = tmp_path_factory.mktemp("nmf")
    person = write_nmf(root, state, random_seed=11, units_per_part=128)
    unit = write_nmf(root, state, table="unit", random_seed=11, units_per_part=128)
    return root, person, unit


def _read(folder: Path) -> list:
    """Every part file of a partition folder, read with plain pyarrow, in part order."""
    return [pq.read_table(path) for path in sorted(folder.glob("part-*.parquet"))]


def _folder(root, table, level, kind):
    return Path(root) / table / f"{level}.parquet" / kind / "State=042"


def test_the_layout_and_column_types(written, state):
    root, person, unit = written
    files = sorted(str(p.relative_to(root)) for p in Path(root).rglob("*.parquet") if p.is_file())
    for table in ("US_Person_PL_PROD", "US_Unit_PL_PROD"):
        for level in LEVELS:
            for kind in ("DPQuery", "Constraint"):
                assert f"{table}/{level}.parquet/{kind}/State=042/part-00000.parquet" in files
    assert not any("US.parquet" in name for name in files)
    assert len(_read(_folder(root, "US_Person_PL_PROD", "Block", "DPQuery"))) == -(-state.geography.n_leaves // 128)
    dp = _read(_folder(root, "US_Person_PL_PROD", "Tract", "DPQuery"))[0]
    assert dp.schema.names == [
        "geocode", "query_name", "hhgq", "votingage", "hispanic", "cenrace", "query_shape", "value", "variance", "plb"
    ]  # fmt: skip
    assert dp.schema.field("query_shape").type == pa.list_(pa.int32())
    assert dp.schema.field("value").type == pa.list_(pa.int64())
    assert dp.schema.field("variance").type == pa.float32() and dp.schema.field("geocode").type == pa.string()
    con = _read(_folder(root, "US_Person_PL_PROD", "State", "Constraint"))[0]
    assert "sign" in con.schema.names and set(con.column("query_name").to_pylist()) == {
        "hhgq_total_lb_con", "hhgq_total_ub_con", "nurse_nva_0_con", "total_con"
    }  # fmt: skip
    unit_dp = _read(_folder(root, "US_Unit_PL_PROD", "Block", "DPQuery"))[0].to_pylist()
    assert {row["query_name"] for row in unit_dp} == {"detailed_dpq"} and unit_dp[0]["h1"] == "h1"
    assert unit_dp[0]["query_shape"] == [2] and unit_dp[0]["plb"] == "99/820"
    assert person["levels"]["Block"]["dpquery_rows"] == 11 * state.geography.n_leaves
    assert unit["levels"]["County"]["constraint_rows"] == 2 and person["levels"]["Block"]["bypassed"] == 0


def test_every_query_row_has_its_axes_shape_variance_and_share(written):
    root = written[0]
    rows = pa.concat_tables(_read(_folder(root, "US_Person_PL_PROD", "Block_Group", "DPQuery"))).to_pylist()
    variances = pl94_variances("Block_Group")
    shares = {q: PRODUCTION_LEVEL_SHARES["Block_Group"] * s for q, s in PL94_QUERY_SHARES["Block_Group"].items()}
    per_unit = {}
    for row in rows:
        query = row["query_name"].removesuffix("_dpq")
        per_unit.setdefault(row["geocode"], []).append(query)
        shape = list(PERSON.query_shape(query)) or [1]
        assert row["query_shape"] == shape and len(row["value"]) == int(np.prod(shape))
        assert row["variance"] == np.float32(variances[query]) and F(row["plb"]) == shares[query]
        kept = {a: row[a] for a in ("hhgq", "votingage", "hispanic", "cenrace") if row[a] != "*"}
        expected = {"hhinstlevels": {"hhgq": "hhinstlevels"}, "total": {}}.get(
            query, {a: a for a in ("hhgq", "votingage", "hispanic", "cenrace") if query == "detailed" or a in query}
        )
        assert kept == expected, query
    assert all(sorted(queries) == sorted(PERSON_QUERIES) for queries in per_unit.values())


def _values(tables, query_name):
    """geocode -> value array of one query, over part files."""
    out = {}
    for table in tables:
        rows = table.filter(pa.compute.equal(table.column("query_name"), query_name))
        values = rows.column("value").combine_chunks()
        width = len(values[0]) if len(values) else 0
        flat = values.flatten().to_numpy().reshape(-1, width)
        out.update(zip(rows.column("geocode").to_pylist(), flat, strict=True))
    return out


def test_the_noise_is_centred_with_the_written_variance(written, state):
    # A sigma off by 10 % moves the variance by 21 %: 150 standard errors at the blocks' ~1e6 detailed values,
    # about 6 at the block groups' 1,890 'hispanic * cenrace' values.
    root, geo = written[0], state.geography
    checks = [("Block", "detailed", 0.02), ("Block_Group", "hispanic * cenrace", 0.12)]
    for level, query, tolerance in checks:
        tables = _read(_folder(root, "US_Person_PL_PROD", level, "DPQuery"))
        values = _values(tables, query + "_dpq")
        truth = state.aggregate(level)
        groups = PERSON.query_groups(query)
        indicator = sp.csr_matrix((np.ones(2016), np.concatenate(groups), np.arange(0, 2017, 2016 // len(groups))))
        exact = (truth @ indicator.T).toarray()
        units = geo.level(level)
        noise = np.concatenate([values[geo.ids[u]] - exact[k] for k, u in enumerate(units)]).astype(float)
        variance = pl94_variances(level)[query]
        assert abs(noise.mean()) < 4 * np.sqrt(variance / noise.size), (level, query)
        assert abs(noise.var() / variance - 1) < tolerance, (level, query, noise.var(), variance)
    totals = _values(_read(_folder(root, "US_Person_PL_PROD", "State", "DPQuery")), "total_dpq")["042"][0]
    assert abs(totals - state.persons.sum()) < 6 * 1.1


def test_the_truth_satisfies_every_constraint(written, state):
    root, geo = written[0], state.geography
    for level in LEVELS:
        tables = _read(_folder(root, "US_Person_PL_PROD", level, "Constraint"))
        lower, upper = _values(tables, "hhgq_total_lb_con"), _values(tables, "hhgq_total_ub_con")
        nurse = _values(tables, "nurse_nva_0_con")
        cells = state.aggregate(level).toarray().reshape(-1, 8, 2, 2, 63)
        per_type = cells.sum(axis=(2, 3, 4))
        for k, u in enumerate(geo.level(level)):
            code = geo.ids[u]
            assert np.all(lower[code] <= per_type[k]) and np.all(per_type[k] <= upper[code]), code
            assert nurse[code].tolist() == [0] == [cells[k, 3, 0].sum()]
        units = state.aggregate(level, state.units).sum(axis=1)
        unit_totals = _values(_read(_folder(root, "US_Unit_PL_PROD", level, "Constraint")), "total_con")
        assert [unit_totals[geo.ids[u]][0] for u in geo.level(level)] == units.tolist()
    state_rows = pa.concat_tables(_read(_folder(root, "US_Person_PL_PROD", "State", "Constraint"))).to_pylist()
    signs = {row["query_name"]: row["sign"] for row in state_rows}
    assert signs == {"hhgq_total_lb_con": ">=", "hhgq_total_ub_con": "<=", "nurse_nva_0_con": "=", "total_con": "="}
    total = next(row for row in state_rows if row["query_name"] == "total_con")
    assert total["value"] == [state.persons.sum()] and total["variance"] == 0.0
    lb = next(row for row in state_rows if row["query_name"] == "hhgq_total_lb_con")["value"]
    assert lb[0] == 0 and lb[1:] == state.gq_facilities[:, 1:].sum(axis=0).tolist()


def test_quirks_leave_the_other_measurements_as_they_were(written, state, tmp_path):
    root = written[0]
    bypassed_tract = state.geography.ids[state.geography.level("Tract")[1]]
    quirks = NMFQuirks(True, True, (bypassed_tract,), 0.2, True)
    summary = write_nmf(tmp_path, state, random_seed=11, units_per_part=128, quirks=quirks)
    types = set()
    for level in LEVELS:
        for kind in ("DPQuery", "Constraint"):
            for table in _read(_folder(tmp_path, "US_Person_PL_PROD", level, kind)):
                types.add(table.schema.field("value").type.value_type)
                has_sign = "sign" in table.schema.names
                assert kind == "DPQuery" or has_sign == (level not in ("County", "Block_Group")), (level, kind)
    assert types == {pa.int32(), pa.int64()}
    groups = summary["levels"]["Block_Group"]
    assert groups["bypassed"] == round(0.2 * groups["units"]) and summary["levels"]["Tract"]["bypassed"] == 1
    for level in ("Tract", "Block_Group", "Block"):
        plain = _values(_read(_folder(root, "US_Person_PL_PROD", level, "DPQuery")), "detailed_dpq")
        quirky = _values(_read(_folder(tmp_path, "US_Person_PL_PROD", level, "DPQuery")), "detailed_dpq")
        constrained = _values(_read(_folder(tmp_path, "US_Person_PL_PROD", level, "Constraint")), "nurse_nva_0_con")
        assert set(constrained) == set(plain) and set(quirky) <= set(plain)
        assert all(np.array_equal(plain[code], quirky[code]) for code in quirky)
        assert len(plain) - len(quirky) == summary["levels"][level]["bypassed"]
    state_rows = _read(_folder(tmp_path, "US_Person_PL_PROD", "State", "Constraint"))[0]
    assert "total_con" not in state_rows.column("query_name").to_pylist()


def test_mixed_widths_keep_int64_where_int32_would_overflow(tmp_path):
    # Two counties of 60,000: about 25,000 housing units each, so 99,999 per unit exceeds int32 (2.1e9).
    big = synthetic_pl94_state({"A": 60_000, "B": 60_000}, random_seed=0, levels=("State", "County"))
    write_nmf(tmp_path, big, random_seed=0, units_per_part=1, quirks=NMFQuirks(mixed_widths=True))
    dp = _read(_folder(tmp_path, "US_Person_PL_PROD", "County", "DPQuery"))
    con = _read(_folder(tmp_path, "US_Person_PL_PROD", "County", "Constraint"))
    assert [t.schema.field("value").type.value_type for t in dp] == [pa.int32(), pa.int64()]
    assert [t.schema.field("value").type.value_type for t in con] == [pa.int64(), pa.int64()]  # 2nd: too wide
    upper = _values(con, "hhgq_total_ub_con")
    housing = big.units.sum(axis=1)
    assert [upper[code][0] for code in big.geography.ids[1:]] == (99_999 * housing).tolist()
    assert min(upper[code][0] for code in upper) > np.iinfo(np.int32).max
    state_con = _read(_folder(tmp_path, "US_Person_PL_PROD", "State", "Constraint"))[0]
    assert state_con.schema.field("value").type.value_type == pa.int32()  # bounded by the state total


def test_workers_do_not_change_the_file(written, state, tmp_path):
    root = written[0]
    with ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("spawn")) as pool:
        write_nmf(tmp_path, state, random_seed=11, units_per_part=128, levels=["Block"], workers=pool)
    for kind in ("DPQuery", "Constraint"):
        ours, theirs = (_read(_folder(r, "US_Person_PL_PROD", "Block", kind)) for r in (root, tmp_path))
        assert len(ours) == len(theirs) > 1 and all(a.equals(b) for a, b in zip(ours, theirs, strict=True))


def test_the_writer_refuses_bad_arguments(written, state, tmp_path):
    root = written[0]
    with pytest.raises(FileExistsError):
        write_nmf(root, state, random_seed=1, levels=["County"])
    with pytest.raises(TypeError):
        write_nmf(tmp_path, state.persons)
    with pytest.raises(TypeError):
        write_nmf(tmp_path, state, quirks="all")
    for bad in (
        {"table": "household"},
        {"levels": ["Place"]},
        {"levels": "County"},
        {"units_per_part": 0},
        {"quirks": NMFQuirks(bypassed=("0429999",))},
        {"quirks": NMFQuirks(bypassed_share=1.5)},
    ):
        with pytest.raises(ValueError):
            write_nmf(tmp_path, state, **bad)
