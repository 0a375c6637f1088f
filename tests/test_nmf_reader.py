"""read_nmf: a tiny Noisy Measurement File written here with plain pyarrow, every number read back.

The fixture is Oklahoma-like (two branch partitions, '040' and '140') with widths no real file has
(State 3, County 9, Tract 14, Block_Group 15, Block 31), every production query at every level, a
bypassed block group, int32 and int64 list parts, compact and full-axes query shapes, rows out of order,
a constraint part without ``sign``, another state's partition and a national level that must not be read.
"""

from __future__ import annotations

import shutil

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import scipy.sparse

from ppdinfer.census import gls_estimate
from ppdinfer.census.nmf import ROOT_ID, read_nmf
from ppdinfer.census.pl94 import PERSON, PERSON_QUERIES

FOLDER = "US_Person_PL_PROD"
LEVELS = ("State", "County", "Tract", "Block_Group", "Block")
# branch -> county -> tract -> block group -> blocks (16-character tabulation ids: SS CCC TTTTTT G BBBB)
TREE = {
    "040": {
        "040900001": {
            "04090000100011": {
                "040900001000111": ["4000100010011001", "4000100010011002"],
                "040900001000112": ["4000100010022001"],
            },
            "04090000100012": {"040900001000121": ["4000100020011001", "4000100030011001"]},
        },
        "040900003": {
            "04090000300031": {
                "040900003000311": ["4000300010011001", "4000300010011002"],
                "040900003000319": ["4000300010011003"],
            }
        },
    },
    "140": {"140900001": {"14090000100011": {"140900001000111": ["4000100010011005"]}}},
}
BYPASSED = "040900003000319"
BROKEN_UB = "04090000100012"  # its hhgq upper bound for households is one below the truth
QUERIES = (
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
# the query shapes over every axis (hhgq, votingage, hispanic, cenrace), 1 where an axis is summed out
FULL_SHAPES = {
    "total": [1, 1, 1, 1],
    "cenrace": [1, 1, 1, 63],
    "hispanic": [1, 1, 2, 1],
    "votingage": [1, 2, 1, 1],
    "hhinstlevels": [3, 1, 1, 1],
    "hhgq": [8, 1, 1, 1],
    "hispanic * cenrace": [1, 1, 2, 63],
    "votingage * cenrace": [1, 2, 1, 63],
    "votingage * hispanic": [1, 2, 2, 1],
    "votingage * hispanic * cenrace": [1, 2, 2, 63],
    "detailed": [8, 2, 2, 63],
}
AXES = ("hhgq", "votingage", "hispanic", "cenrace")


def units_by_level():
    """{level: [(geocode, [blocks' geocodes below it])]} of the fixture's tree."""
    out = {level: [] for level in LEVELS}

    def walk(node, code, depth):
        if isinstance(node, list):  # block group: its blocks' tabulation ids
            blocks = [code + tab for tab in node]
            out["Block_Group"].append((code, blocks))
            out["Block"].extend((b, [b]) for b in blocks)
            return blocks
        blocks = [b for child, sub in node.items() for b in walk(sub, child, depth + 1)]
        if code is not None:
            out[LEVELS[depth]].append((code, blocks))
        return blocks

    walk(TREE, None, -1)
    return out


def query_values(cells):
    """Every production query of one unit's 2,016 cells, summed with numpy (hhgq x votingage x hispanic x cenrace)."""
    h = cells.reshape(8, 2, 2, 63)
    institutions = np.stack([h[0], h[1:5].sum(0), h[5:].sum(0)])
    return {
        "total": np.array([h.sum()]),
        "cenrace": h.sum((0, 1, 2)),
        "hispanic": h.sum((0, 1, 3)),
        "votingage": h.sum((0, 2, 3)),
        "hhinstlevels": institutions.sum((1, 2, 3)),
        "hhgq": h.sum((1, 2, 3)),
        "hispanic * cenrace": h.sum((0, 1)).ravel(),
        "votingage * cenrace": h.sum((0, 2)).ravel(),
        "votingage * hispanic": h.sum((0, 3)).ravel(),
        "votingage * hispanic * cenrace": h.sum(0).ravel(),
        "detailed": h.ravel(),
    }


def variance_of(level, query):
    return 0.5 + LEVELS.index(level) + 0.25 * QUERIES.index(query)  # exact in float32


def axis_columns(query):
    parts = [p.strip() for p in query.split("*")]
    column = {}
    for axis in AXES:
        if query == "detailed":
            column[axis] = "detailed"
        else:
            named = [p for p in parts if p == axis or (axis == "hhgq" and p == "hhinstlevels")]
            column[axis] = named[0] if named else "*"
    return column


def write(path, rows, list_type, sign=True):
    path.parent.mkdir(parents=True, exist_ok=True)
    data = {
        "geocode": pa.array([r["geocode"] for r in rows], pa.string()),
        "query_name": pa.array([r["query_name"] for r in rows], pa.string()),
        **{axis: pa.array([r.get(axis, "*") for r in rows], pa.string()) for axis in AXES},
        "query_shape": pa.array([r["query_shape"] for r in rows], pa.list_(list_type)),
        "value": pa.array([[int(v) for v in r["value"]] for r in rows], pa.list_(list_type)),
    }
    if "variance" in rows[0]:
        data["variance"] = pa.array([r["variance"] for r in rows], pa.float32())
        data["plb"] = pa.array([0.1] * len(rows), pa.float64())
    if "sign" in rows[0] and sign:
        data["sign"] = pa.array([r["sign"] for r in rows], pa.string())
    pq.write_table(pa.table(data), path, row_group_size=7)


def build(root):
    """Write the fixture under ``root``; return (truth by geocode, noise by (geocode, query))."""
    rng = np.random.default_rng(20260101)
    units = units_by_level()
    truth = {}
    for b, _ in units["Block"]:
        cells = rng.poisson(0.25, PERSON.n_cells)
        cells.reshape(8, 2, 2, 63)[3, 0] = 0  # no minors in nursing facilities
        truth[b] = cells
    big = [b for b, _ in units["Block"] if b.startswith("040900003000311")]
    truth[big[0]][0], truth[big[1]][1] = 20000, 20000  # their block group's total needs int32
    for level in LEVELS[:-1]:
        for code, blocks in units[level]:
            truth[code] = sum(truth[b] for b in blocks)
    noise = {}
    for level in LEVELS:
        for branch in TREE:
            mine = [code for code, _ in units[level] if code.startswith(branch)]
            dpq, con = [], []
            for code in mine:
                for query, exact in query_values(truth[code]).items():
                    if code == BYPASSED:
                        continue
                    noise[code, query] = rng.integers(-5, 6, exact.size)
                    dpq.append(
                        {
                            "geocode": code,
                            "query_name": f"{query}_dpq",
                            **axis_columns(query),
                            "query_shape": FULL_SHAPES[query],
                            "value": exact + noise[code, query],
                            "variance": variance_of(level, query),
                        }
                    )
                hhgq = query_values(truth[code])["hhgq"]
                upper = hhgq + 2
                upper[0] -= 3 if code == BROKEN_UB else 0
                full = [1, 1, 1, 1]
                con += [
                    {"geocode": code, "query_name": "hhgq_total_lb_con", "query_shape": [8, 1, 1, 1],
                     "value": np.maximum(hhgq - 1, 0), "sign": ">="},
                    {"geocode": code, "query_name": "hhgq_total_ub_con", "query_shape": [8, 1, 1, 1],
                     "value": upper, "sign": "<="},
                    {"geocode": code, "query_name": "nurse_nva_0_con", "query_shape": full, "value": [0], "sign": "="},
                ]  # fmt: skip
                if level == "Block":
                    con.append(
                        {"geocode": code, "query_name": "total_con", "query_shape": full,
                         "value": [truth[code].sum()], "sign": "="}
                    )  # fmt: skip
            base = root / FOLDER / f"{level}.parquet"
            dpq.sort(key=lambda r: (r["query_name"], r["geocode"]))
            first, second = dpq[::2], dpq[1::2]
            for r in second:  # compact shapes, as the schema writes them
                r["query_shape"] = [n for n in r["query_shape"] if n != 1]
            second = [second[i] for i in rng.permutation(len(second))]
            write(base / "DPQuery" / f"State={branch}" / "part-00000.parquet", first, pa.int32())
            write(base / "DPQuery" / f"State={branch}" / "part-00001.parquet", second, pa.int64())
            no_sign = level == "Block" and branch == "140"
            list_type = pa.int32() if branch == "140" else pa.int64()
            write(base / "Constraint" / f"State={branch}" / "part-00000.parquet", con, list_type, sign=not no_sign)
    other = {"geocode": "042", "query_name": "total_dpq", "query_shape": [1], "value": [5], "variance": 1.0}
    write(root / FOLDER / "State.parquet" / "DPQuery" / "State=042" / "part-00000.parquet", [other], pa.int64())
    national = {"geocode": "", "query_name": "total_dpq", "query_shape": [1], "value": [9], "variance": 1.0}
    write(root / FOLDER / "US.parquet" / "DPQuery" / "part-00000.parquet", [national], pa.int64())
    return truth, noise


@pytest.fixture(scope="module")
def fixture(tmp_path_factory):
    root = tmp_path_factory.mktemp("nmf")
    truth, noise = build(root)
    return root, truth, noise


@pytest.fixture(scope="module")
def nmf(fixture):
    root, truth, _ = fixture
    state_total = int(sum(truth[code].sum() for code in TREE))
    return read_nmf(root, 40, state_total=state_total)


def test_geography_has_one_root_over_both_branches_and_the_files_levels(nmf):
    geo = nmf.geography
    units = units_by_level()
    assert geo.level_names == ("US", *LEVELS) and nmf.partitions == ("040", "140") and nmf.state == "40"
    assert geo.ids[0] == ROOT_ID and geo.ids[geo.children[: geo.child_ptr[1]]].tolist() == ["040", "140"]
    for level in LEVELS:
        assert geo.ids[geo.level(level)].tolist() == sorted(code for code, _ in units[level])
    parent_of = {code: geo.ids[geo.parent[geo.index(code)]] for code in geo.ids[1:]}
    assert parent_of["140900001"] == "140" and parent_of["04090000100012"] == "040900001"
    assert parent_of["040900003000319" + "4000300010011003"] == BYPASSED
    assert "042" not in set(geo.ids) and geo.n_leaves == 9


def test_every_value_and_variance_reads_back_exactly(nmf, fixture):
    _, truth, noise = fixture
    geo = nmf.geography
    for level in LEVELS:
        assert nmf.queries(level) == QUERIES
        for query in QUERIES:
            units, values, variances = nmf.measurements(level, query)
            codes = geo.ids[units]
            assert codes.tolist() == sorted(c for c in geo.ids[geo.level(level)] if c != BYPASSED)
            expected = np.array([query_values(truth[c])[query] + noise[c, query] for c in codes])
            np.testing.assert_array_equal(values, expected)
            assert np.all(variances == variance_of(level, query))
    assert nmf.measurements("Block", "detailed")[1].dtype == np.int16
    assert nmf.measurements("Block_Group", "total")[1].dtype == np.int32  # 40,000 + noise does not fit int16


def test_bypassed_block_group_has_constraints_but_no_measurement(nmf):
    geo = nmf.geography
    assert geo.ids[nmf.bypassed("Block_Group")].tolist() == [BYPASSED]
    assert all(nmf.bypassed(level).size == 0 for level in LEVELS if level != "Block_Group")
    units, values, sign = nmf.constraints("Block_Group", "nurse_nva_0_con")
    assert BYPASSED in geo.ids[units] and sign == "=" and values.tolist() == [[0]] * units.size
    frame = nmf.units()
    assert frame.loc[frame["bypassed"], "unit"].tolist() == [BYPASSED]


def test_constraints_keep_values_and_signs_also_where_a_part_has_no_sign(nmf, fixture):
    _, truth, _ = fixture
    geo = nmf.geography
    assert nmf.constraint_names("Block") == ("hhgq_total_lb_con", "hhgq_total_ub_con", "nurse_nva_0_con", "total_con")
    units, values, sign = nmf.constraints("Block", "total_con")  # branch 140's part has no sign column
    assert sign == "=" and values[:, 0].tolist() == [truth[c].sum() for c in geo.ids[units]]
    units, values, sign = nmf.constraints("Tract", "hhgq_total_lb_con")
    assert sign == ">=" and values.tolist() == [
        np.maximum(query_values(truth[c])["hhgq"] - 1, 0).tolist() for c in geo.ids[units]
    ]
    assert nmf.constraints("County", "hhgq_total_ub_con")[2] == "<="


def test_release_rows_are_the_right_sums_plus_the_noise_written(nmf, fixture):
    _, truth, noise = fixture
    geo = nmf.geography
    census, mechanism, y = nmf.release()
    x = np.concatenate([truth[c] for c in geo.ids[geo.leaves]])
    written = np.array([noise[geo.ids[u], k][p] for u, k, p in zip(census.unit, census.kind, census.part)])
    np.testing.assert_array_equal(y, census.matrix @ x + written)
    n_measured = sum(nmf.measurements(level, q)[1].size for level in LEVELS for q in QUERIES)
    assert y.shape == (n_measured,) and y.dtype == np.int64
    assert geo.index(BYPASSED) not in set(census.unit.tolist())
    key = np.array([census.unit, [QUERIES.index(k) for k in census.kind], census.part])
    assert np.all(np.diff(key[0]) >= 0) and list(map(tuple, key.T)) == sorted(map(tuple, key.T))
    variances = [variance_of(geo.level_names[geo.depth[u]], k) for u, k in zip(census.unit, census.kind)]
    np.testing.assert_allclose(mechanism.sigmas**2, variances, rtol=1e-14)
    # invariants: the state total, 9 block totals and the nursing zero of 24 units
    assert mechanism.invariant_matrix.shape[0] == 1 + 9 + 24 and mechanism.satisfies_invariants(x)[0]
    moved, person = x.copy(), int(np.flatnonzero(x[: PERSON.n_cells])[0])
    moved[[person, (3 * 2 + 0) * 2 * 63]] += [-1, 1]  # one person of leaf 0 into a nursing facility, aged 0-17
    assert not mechanism.satisfies_invariants(moved)[0]


def test_release_of_some_levels_and_queries(nmf, fixture, monkeypatch):
    _, truth, noise = fixture
    census, mechanism, y = nmf.release(levels=["County"], queries=["total", "hispanic"])
    codes = sorted(c for c, _ in units_by_level()["County"])
    expected = [v for c in codes for q in ("total", "hispanic") for v in query_values(truth[c])[q] + noise[c, q]]
    assert y.tolist() == expected and census.kind.tolist() == ["total", "hispanic", "hispanic"] * 3
    _, mechanism, _ = nmf.release(table=PERSON.coarsen({"hhgq": None, "votingage": None}), levels=["Block"])
    leaves = nmf.geography.ids[nmf.geography.leaves]  # the root's total, each level's nursing zeros, block totals
    assert mechanism.invariant_values.tolist() == [nmf.state_total] + [0] * 24 + [truth[c].sum() for c in leaves]
    census, _, y = nmf.release(table=PERSON.coarsen({"hispanic": None}), levels=["County"], queries=["hhgq"])
    totals = [query_values(truth[c])["hhgq"].sum() + noise[c, "hhgq"].sum() for c in codes]
    assert census.kind.tolist() == ["hhgq"] * 3 and y.tolist() == totals  # hhgq summed: a function of these cells
    with pytest.raises(ValueError, match="was not read"):
        nmf.release(levels=["Nation"])
    monkeypatch.setattr("ppdinfer.census.nmf_release.DENSE_INVARIANT_BYTES", 1000)
    with pytest.raises(ValueError, match="34 invariants over 18144 cells"):
        nmf.release(queries=["total"])
    assert nmf.release(queries=["total"], invariants=False)[1].invariant_matrix is None


def test_coarsened_release_feeds_gls_which_matches_a_dense_constrained_solve(fixture):
    root, truth, _ = fixture
    total = int(sum(truth[code].sum() for code in TREE))
    nmf = read_nmf(root, "40", levels=["State", "County", "Tract"], state_total=total)
    coarse = PERSON.coarsen({"votingage": None, "hispanic": None})
    with pytest.warns(UserWarning, match="State 'cenrace': 1 sums of its values are left out"):
        census, mechanism, y = nmf.release(coarse)  # the state's cenrace variance, 1.75, is too small to sum 63
    assert set(census.kind) == set(PERSON_QUERIES)  # every query: exact, or summed into values of these cells
    below_state = len(nmf.geography.level("County")) + len(nmf.geography.level("Tract"))
    assert (census.kind == "cenrace").sum() == below_state  # one sum of the 63 values per county and tract
    invariants = (mechanism.invariant_matrix, mechanism.invariant_values)
    assert invariants[0].shape[0] == 1  # the nursing zero is no function of these cells
    fit = gls_estimate(census, y, mechanism.sigmas, invariants=invariants)
    Q, w = census.matrix.toarray().astype(float), 1.0 / mechanism.sigmas**2
    A = invariants[0].astype(float)
    kkt = np.block([[Q.T @ (w[:, None] * Q), A.T], [A, np.zeros((1, 1))]])
    solution = np.linalg.solve(kkt, np.concatenate([Q.T @ (w * y), invariants[1]]))[: Q.shape[1]]
    np.testing.assert_allclose(fit.cell_estimate.ravel(), solution, rtol=1e-9, atol=1e-7)
    assert abs(fit.cell_estimate.sum() - total) < 1e-6


def test_county_filter_reads_only_those_counties_under_the_root(nmf, fixture):
    root, _, _ = fixture
    one = read_nmf(root, 40, counties=["040900001", "140900001"])
    geo = one.geography
    assert geo.level_names == ("US", "County", "Tract", "Block_Group", "Block")
    assert geo.ids[geo.level("County")].tolist() == ["040900001", "140900001"] and geo.n_leaves == 6
    assert all(c.startswith(("040900001", "140900001")) for c in geo.ids[1:])
    for level in ("County", "Block"):
        units, values, variances = one.measurements(level, "detailed")
        full_units, full_values, _ = nmf.measurements(level, "detailed")
        keep = np.isin(nmf.geography.ids[full_units], geo.ids[units])
        np.testing.assert_array_equal(values, full_values[keep])
    with pytest.raises(ValueError, match="only levels from County down"):
        read_nmf(root, 40, counties=["040900001"], levels=["State", "County"])
    with pytest.raises(ValueError, match="'040900002' is not in the file"):
        read_nmf(root, 40, counties=["040900001", "040900002"])
    with pytest.raises(ValueError, match=r"no rows .* counties \('040900002',\)"):
        read_nmf(root, 40, counties=["040900002"])


def test_one_branch_and_a_skipped_middle_level(fixture):
    root, _, _ = fixture
    branch = read_nmf(root, "140")
    assert branch.partitions == ("140",) and branch.state == "140" and branch.geography.n_leaves == 1
    skipped = read_nmf(root, 40, levels=["Block", "County"])
    geo = skipped.geography
    assert geo.level_names == ("US", "County", "Block")
    block = "040900001000121" + "4000100030011001"
    assert geo.ids[geo.parent[geo.index(block)]] == "040900001"


def test_tabulation_geoids_from_the_block_suffix(nmf, fixture):
    expected = {
        ROOT_ID: None,
        "040": "40",
        "140": "40",
        "040900001": "40001",
        "040900003": "40003",
        "04090000100011": "40001000100",
        "04090000100012": None,  # its blocks lie in two tabulation tracts
        "040900001000112": "400010001002",
        "040900001000121": None,
        "040900001000111" + "4000100010011002": "400010001001002",
    }
    assert {u: nmf.tabulation_geoid(u) for u in expected} == expected
    frame = nmf.units().set_index("unit")
    assert frame.loc["140900001", "tabulation_geoid"] == "40001" and frame.loc["140900001", "parent"] == "140"
    no_blocks = read_nmf(fixture[0], 40, levels=["County", "Tract"])
    assert set(no_blocks.units()["tabulation_geoid"]) == {None}


def test_summary_repr_and_check_constraints(nmf, fixture):
    _, truth, _ = fixture
    frame = nmf.summary()
    assert len(frame) == len(LEVELS) * len(QUERIES)
    row = frame.set_index(["level", "query"]).loc[("Block_Group", "detailed")]
    assert (row["units"], row["values_per_unit"], row["level_units"], row["bypassed"]) == (5, 2016, 6, 1)
    assert row["variance_min"] == row["variance_max"] == variance_of("Block_Group", "detailed")
    assert "state='40'" in repr(nmf) and "Block 9" in repr(nmf)
    geo = nmf.geography
    held = nmf.check_constraints(np.stack([truth[c] for c in geo.ids[geo.leaves]]))
    assert set(held) == {(level, name) for level in LEVELS for name in ("hhgq_total_lb_con", "hhgq_total_ub_con")}
    units = nmf.constraints("Tract", "hhgq_total_ub_con")[0]
    assert held["Tract", "hhgq_total_ub_con"].tolist() == [c != BROKEN_UB for c in geo.ids[units]]
    assert all(v.all() for key, v in held.items() if key != ("Tract", "hhgq_total_ub_con"))
    # a state's blocks come as a sparse matrix: the same verdicts, never densified
    dense = np.stack([truth[c] for c in geo.ids[geo.leaves]])
    from_sparse = nmf.check_constraints(scipy.sparse.csr_matrix(dense))
    assert {key: v.tolist() for key, v in from_sparse.items()} == {key: v.tolist() for key, v in held.items()}
    with pytest.raises(ValueError, match="integers"):
        nmf.check_constraints(scipy.sparse.csr_matrix(dense + 0.5))


def test_missing_root_table_partition_and_level_are_refused(fixture, tmp_path):
    root, _, _ = fixture
    with pytest.raises(FileNotFoundError, match="root"):
        read_nmf(tmp_path / "absent", 40)
    with pytest.raises(FileNotFoundError, match="US_Unit_PL_PROD"):
        read_nmf(root, 40, table="unit")
    with pytest.raises(FileNotFoundError, match=r"partitions found: \['040', '042', '140'\]"):
        read_nmf(root, 41)
    with pytest.raises(FileNotFoundError, match="level 'County'"):
        read_nmf(root, 42)  # the other state has a State partition only
    with pytest.raises(ValueError, match="unknown level 'Tracts'"):
        read_nmf(root, 40, levels=["Tracts"])
    with pytest.raises(ValueError, match="national level"):
        read_nmf(root, 40, levels=["US"])


def bad_part(fixture, tmp_path, level, row):
    """A copy of the fixture with one more DPQuery part holding ``row`` in branch 040 of ``level``."""
    root = tmp_path / "copy"
    shutil.copytree(fixture[0], root)
    full = {"query_name": "hispanic_dpq", "query_shape": [1, 1, 2, 1], "value": [1, 2], "variance": 2.0, **row}
    write(root / FOLDER / f"{level}.parquet" / "DPQuery" / "State=040" / "part-00009.parquet", [full], pa.int64())
    return root


@pytest.mark.parametrize(
    ("level", "row", "message"),
    [
        ("Block_Group", {"geocode": BYPASSED, "query_name": "bogus_dpq"}, "unknown query 'bogus_dpq'"),
        ("Block_Group", {"geocode": BYPASSED, "query_shape": [1, 1, 3, 1], "value": [1, 2, 3]}, "disagrees"),
        ("Block_Group", {"geocode": BYPASSED, "value": [1, 2, 3]}, f"'{BYPASSED}' has 3 values"),
        ("Block_Group", {"geocode": BYPASSED, "variance": 0.0}, f"'{BYPASSED}' has variance 0.0"),
        ("Block_Group", {"geocode": BYPASSED, "variance": float("nan")}, "hispanic_dpq.*variance nan"),
        ("Block_Group", {"geocode": BYPASSED, "variance": float("inf")}, "variance inf"),
        ("Block", {"geocode": "040900003000318" + "4000300010011009"}, "no parent '040900003000318'"),
        ("Tract", {"geocode": "0409000010009"}, r"mixed widths \[13, 14\]"),
        ("Block_Group", {"geocode": "040900001000111"}, "'040900001000111' is measured twice for query 'hispanic'"),
    ],
)
def test_bad_rows_are_refused_naming_the_problem(fixture, tmp_path, level, row, message):
    root = bad_part(fixture, tmp_path, level, row)
    with pytest.raises(ValueError, match=message):
        read_nmf(root, 40)
