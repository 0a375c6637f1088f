"""ppdinfer.census.aggregate: district sums against loops over leaves, refusals, PL94 margins, the summary."""

import tracemalloc

import arviz as az
import numpy as np
import pytest
import xarray as xr

from ppdinfer.census import Geography, TableSpec, census_queries, gls_estimate, sample_cells
from ppdinfer.census.districts import aggregate, district_summary
from ppdinfer.census.pl94 import PERSON
from ppdinfer.mechanisms import NoisyMeasurements

UNITS = ["s", "c1", "c2", "t1", "t2", "t3", "b1", "b2", "b3", "b4", "b5"]
PARENTS = [None, "s", "s", "c1", "c2", "c1", "t1", "t2", "t1", "t3", "t2"]
GEO = Geography(UNITS, PARENTS, ["State", "County", "Tract", "Block_Group"])
LEAVES = [str(v) for v in GEO.ids[GEO.leaves]]  # breadth-first: b1 b3 b2 b5 b4
PLAN = {"across": ["b1", "t2"], "county": ["c2"], "scattered": ["b3", "b4", "b5"], "empty": []}


def draws(K=3, chains=2, n=7, seed=0, leaves=LEAVES, labels=None):
    rng = np.random.default_rng(seed)
    cells = rng.integers(0, 50, size=(chains, n, len(leaves), K)).astype(np.int32)
    labels = [f"k{k}" for k in range(K)] if labels is None else list(labels)
    return xr.DataArray(cells, dims=("chain", "draw", "unit", "cell"), coords={"unit": leaves, "cell": labels})


def leaves_under(unit):
    """The leaf ids below ``unit`` (or itself), by walking the parents given to the geography."""
    parent = dict(zip(UNITS, PARENTS))
    out = []
    for leaf in LEAVES:
        node = leaf
        while node is not None and node != unit:
            node = parent[node]
        if node == unit:
            out.append(leaf)
    return out


def test_district_sums_match_loops_over_leaves():
    cells = draws()
    out = aggregate(cells, PLAN, census=GEO)
    assert out["table"].dims == ("chain", "draw", "district", "cell")
    assert out["district"].values.tolist() == list(PLAN)
    x = cells.values
    for name, members in PLAN.items():
        want = np.zeros((2, 7, 3), dtype=np.int64)
        for unit in members:
            for leaf in leaves_under(unit):
                want += x[:, :, LEAVES.index(leaf)]
        np.testing.assert_array_equal(out["table"].sel(district=name).values, want)
        np.testing.assert_array_equal(out["total"].sel(district=name).values, want.sum(-1))
        shares = out["shares"].sel(district=name).values
        if want.sum() == 0:
            assert np.isnan(shares).all()
        else:
            np.testing.assert_allclose(shares, want / want.sum(-1, keepdims=True), rtol=1e-15)
    assert out["table"].dtype == np.int64  # int32 draws summed in 64 bits
    assert (out["total"].sel(district="empty") == 0).all()


def test_a_single_district_chunks_leaves_and_the_datatree_forms():
    cells = draws(seed=1)
    one = aggregate(cells, ["c1"], census=GEO)
    assert "district" not in one.dims and one["total"].dims == ("chain", "draw")
    np.testing.assert_array_equal(one["table"].values, cells.sel(unit=leaves_under("c1")).sum("unit").values)
    # a few bytes per chunk: one draw at a time, the same sums
    small = aggregate(cells, PLAN, census=GEO, chunk_bytes=1)
    np.testing.assert_array_equal(small["table"].values, aggregate(cells, PLAN, census=GEO)["table"].values)
    # without a geography the ids are the draws' leaves; the Dataset and DataTree forms read the same cells
    tree = xr.DataTree.from_dict({"posterior": xr.Dataset({"cells": cells})})
    for form in (cells, cells.to_dataset(name="cells"), tree):
        np.testing.assert_array_equal(aggregate(form, ["b2", "b4"])["table"].values, one["table"].values * 0 +
                                      cells.sel(unit=["b2", "b4"]).sum("unit").values)  # fmt: skip
    # the draws' units in another order: each leaf is still found by its id
    shuffled = cells.isel(unit=[3, 0, 4, 2, 1])
    np.testing.assert_array_equal(
        aggregate(shuffled, PLAN, census=GEO)["table"], aggregate(cells, PLAN, census=GEO)["table"]
    )


def test_overlapping_unknown_and_malformed_districts_are_refused():
    cells = draws()
    with pytest.raises(ValueError, match=r"'b1'.*'t1'.*overlap|'t1'.*'b1'.*overlap"):
        aggregate(cells, {"d": ["t1", "b1"]}, census=GEO)  # a tract and one of its block groups
    with pytest.raises(ValueError, match="overlap"):
        aggregate(cells, ["c1", "t3"], census=GEO)  # a county and one of its tracts
    with pytest.raises(ValueError, match="overlap"):
        aggregate(cells, ["b2", "b2"], census=GEO)
    with pytest.raises(ValueError, match=r"unknown units \['zz', 'yy'\]"):
        aggregate(cells, ["b1", "zz", "yy"], census=GEO)
    with pytest.raises(ValueError, match=r"unknown units \['t1'\]"):
        aggregate(cells, ["t1"])  # no geography: only leaf ids are known
    with pytest.raises(TypeError, match="collection of unit ids"):
        aggregate(cells, "b1", census=GEO)
    with pytest.raises(ValueError, match="names no district"):
        aggregate(cells, {}, census=GEO)
    with pytest.raises(ValueError, match="must have dims"):
        aggregate(cells.rename(unit="leaf"), ["b1"])
    with pytest.raises(ValueError, match="no cells of 1 leaves"):
        aggregate(cells.isel(unit=slice(0, 4)), ["b1"], census=GEO)
    with pytest.raises(TypeError, match="needs census as CensusQueries"):
        aggregate(np.zeros((5, 3)), ["b1"], census=GEO)
    with pytest.raises(ValueError, match="chunk_bytes"):
        aggregate(cells, ["b1"], chunk_bytes=0)
    # overlap across districts is allowed: two plans may share units
    both = aggregate(cells, {"a": ["t1"], "b": ["b1"]}, census=GEO)
    assert (both["total"].sel(district="a") >= both["total"].sel(district="b")).all()


def test_point_estimates_aggregate_like_a_single_draw():
    q = census_queries(GEO, TableSpec(("a", "b")), {"State": ["total"], "Block_Group": ["detailed"]})
    rng = np.random.default_rng(2)
    y = rng.integers(0, 40, size=q.n_queries)
    fit = gls_estimate(q, y, 2.0).cell_estimate  # real, leaves x K, in the geography's leaf order
    out = aggregate(fit, PLAN, census=q)
    assert out["table"].dims == ("district", "cell") and out.attrs["source"] == "point estimate"
    want = sum(fit[LEAVES.index(leaf)] for unit in PLAN["across"] for leaf in leaves_under(unit))
    np.testing.assert_allclose(out["table"].sel(district="across").values, want, rtol=1e-12)
    as_draw = xr.DataArray(
        fit[None, None], dims=("chain", "draw", "unit", "cell"), coords={"unit": LEAVES, "cell": ["a", "b"]}
    )
    np.testing.assert_array_equal(out["table"].values, aggregate(as_draw, PLAN, census=q)["table"].values[0, 0])
    with pytest.raises(ValueError, match="shape"):
        aggregate(fit[:, :1], PLAN, census=q)


def parse(label):
    return dict(part.split("=") for part in label.split(", "))


def test_pl94_margins_match_sums_over_the_labels():
    labels = PERSON.labels()
    rng = np.random.default_rng(3)
    x = rng.poisson(0.05, size=(1, 4, 2, PERSON.n_cells))  # sparse, as real block groups are
    cells = xr.DataArray(x, dims=("chain", "draw", "unit", "cell"), coords={"unit": ["u0", "u1"], "cell": list(labels)})
    out = aggregate(cells, {"both": ["u0", "u1"], "one": ["u1"]})
    summed = x.sum(axis=2)  # "both", per draw
    parsed = [parse(label) for label in labels]
    major = lambda race: "two_or_more" if "-" in race else race  # noqa: E731

    def by(keys, adults=False):
        acc = {}
        for k, p in enumerate(parsed):
            if adults and p["votingage"] != "18+":
                continue
            key = tuple(f(p) for f in keys)
            acc[key] = acc.get(key, 0) + summed[0, :, k]
        return acc

    both = out.sel(district="both")
    for key, value in by([lambda p: p["cenrace"]], adults=True).items():
        np.testing.assert_array_equal(both["voting_age_by_race"].sel(cenrace=key[0]).values[0], value)
    for key, value in by([lambda p: major(p["cenrace"])], adults=True).items():
        np.testing.assert_array_equal(both["voting_age_by_major_race"].sel(major_race=key[0]).values[0], value)
    for key, value in by([lambda p: p["hispanic"], lambda p: p["votingage"]]).items():
        got = both["hispanic_by_voting_age"].sel(hispanic=key[0], votingage=key[1]).values[0]
        np.testing.assert_array_equal(got, value)
    for key, value in by([lambda p: p["hispanic"], lambda p: major(p["cenrace"])], adults=True).items():
        got = both["voting_age_hispanic_by_major_race"].sel(hispanic=key[0], major_race=key[1]).values[0]
        np.testing.assert_array_equal(got, value)
    for key, value in by([lambda p: p["hhgq"]]).items():
        np.testing.assert_array_equal(both["by_group_quarters"].sel(hhgq=key[0]).values[0], value)
    np.testing.assert_array_equal(both["voting_age"].values[0], sum(by([lambda p: 0], adults=True).values()))
    assert out["voting_age_by_race"].sizes["cenrace"] == 63 and out["by_race"].sizes == {
        "chain": 1,
        "draw": 4,
        "district": 2,
        "cenrace": 63,
    }
    assert out["by_major_race"]["major_race"].values.tolist() == [
        "white",
        "black",
        "aian",
        "asian",
        "nhopi",
        "sor",
        "two_or_more",
    ]
    np.testing.assert_array_equal(out["by_race"].sum("cenrace"), out["total"])
    np.testing.assert_array_equal(out["voting_age_by_race"].sum("cenrace"), out["voting_age"])


def test_coarse_fourteen_cell_and_unlabelled_tables_get_the_margins_they_allow():
    coarse = PERSON.coarsen({"votingage": None, "hispanic": None, "cenrace": "major"}).table.labels
    out = aggregate(draws(K=28, labels=coarse), PLAN, census=GEO)
    assert {"voting_age_by_race", "hispanic_by_voting_age", "by_race", "voting_age"} <= set(out.data_vars)
    assert "voting_age_by_major_race" not in out and "by_group_quarters" not in out  # 7 groups already; no hhgq axis
    x = draws(K=28, labels=coarse).values
    leaves = [LEAVES.index(leaf) for leaf in leaves_under("c2")]
    adults_white = [k for k, label in enumerate(coarse) if "votingage=18+" in label and label.endswith("cenrace=white")]
    np.testing.assert_array_equal(
        out["voting_age_by_race"].sel(district="county", cenrace="white").values,
        x[:, :, leaves][..., adults_white].sum(axis=(2, 3)),
    )
    fourteen = TableSpec.hispanic_race().labels
    out = aggregate(draws(K=14, labels=fourteen), PLAN, census=GEO)
    assert {"by_race", "by_hispanic"} <= set(out.data_vars) and not any("voting_age" in v for v in out.data_vars)
    x = draws(K=14, labels=fourteen).values
    np.testing.assert_array_equal(
        out["by_race"].sel(district="county", cenrace="asian").values, x[:, :, leaves][..., [3, 10]].sum(axis=(2, 3))
    )
    np.testing.assert_array_equal(
        out["by_hispanic"].sel(hispanic="hispanic").sum("district"),
        out["table"].isel(cell=slice(7, 14)).sum(("district", "cell")),
    )
    plain = aggregate(draws(), PLAN, census=GEO)
    assert set(plain.data_vars) == {"table", "total", "shares"}


def test_summary_statistics_match_numpy_and_arviz():
    rng = np.random.default_rng(4)
    ar = rng.normal(size=(2, 300, 5, 3))
    for t in range(1, 300):  # autocorrelated, so that ESS < draws
        ar[:, t] += 0.8 * ar[:, t - 1]
    cells = xr.DataArray(np.round(20 + 3 * ar).astype(np.int64), dims=("chain", "draw", "unit", "cell"),
                         coords={"unit": LEAVES, "cell": ["x", "y", "z"]})  # fmt: skip
    agg = aggregate(cells, PLAN, census=GEO)
    s = district_summary(agg)
    assert s["stat"].values.tolist() == ["mean", "sd", "q5", "q95", "ess_bulk", "r_hat"]
    assert s["table"].dims == ("stat", "district", "cell")
    values = agg["total"].sel(district="county").values.astype(float)
    got = s["total"].sel(district="county")
    np.testing.assert_allclose(got.sel(stat="mean"), values.mean(), rtol=1e-12)
    np.testing.assert_allclose(got.sel(stat="sd"), values.std(ddof=1), rtol=1e-12)
    np.testing.assert_allclose(got.sel(stat="q95"), np.quantile(values, 0.95), rtol=1e-12)
    np.testing.assert_allclose(got.sel(stat="ess_bulk"), float(az.ess(values)), rtol=1e-8)
    np.testing.assert_allclose(got.sel(stat="r_hat"), float(az.rhat(values)), rtol=1e-8)
    share = agg["shares"].sel(district="across", cell="y").values
    np.testing.assert_allclose(
        s["shares"].sel(district="across", cell="y", stat="ess_bulk"), float(az.ess(share)), rtol=1e-8
    )
    assert 20 < float(got.sel(stat="ess_bulk")) < 300  # the autocorrelation shows
    assert np.isnan(s["shares"].sel(district="empty", stat="mean")).all()
    one = district_summary(agg, "total", quantiles=[0.5])
    assert list(one.data_vars) == ["total"] and "q50" in one["stat"].values
    with pytest.raises(ValueError, match="not quantities"):
        district_summary(agg, ["nope"])
    with pytest.raises(ValueError, match="quantiles"):
        district_summary(agg, quantiles=[1.5])
    with pytest.raises(ValueError, match="posterior draws"):
        district_summary(
            aggregate(
                cells.values[0, 0],
                PLAN,
                census=census_queries(GEO, TableSpec(("x", "y", "z")), {"Block_Group": ["detailed"]}),
            )
        )


def test_sampler_draws_aggregate_without_a_copy_of_the_draws():
    geo = Geography(["t", "b1", "b2", "b3"], [None, "t", "t", "t"])
    q = census_queries(geo, TableSpec(("a", "b")), {"level1": ["total", "detailed"]})
    mech = NoisyMeasurements(q.matrix, 1.0, invariants=q.unit_invariants(["t"], [30]))
    y = mech.release([5, 5, 3, 7, 6, 4], random_seed=1)
    tree = sample_cells(q, mech, y, draws=40, tune=20, random_seed=2, progressbar=False)
    out = aggregate(tree, {"all": ["t"], "pair": ["b1", "b3"]}, census=q)
    assert (out["total"].sel(district="all") == 30).all()  # the invariant, in every draw
    cells = tree["posterior"]["cells"]
    np.testing.assert_array_equal(out["table"].sel(district="pair"), cells.sel(unit=["b1", "b3"]).sum("unit"))
    # 40 MB of int32 draws: the sums take no converted copy (peak memory a small fraction of the draws)
    big = draws(K=2016, chains=2, n=25, leaves=[f"l{i}" for i in range(100)])
    tracemalloc.start()
    aggregate(big, {"a": [f"l{i}" for i in range(0, 100, 2)], "b": [f"l{i}" for i in range(30, 90)]})
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 0.25 * big.nbytes, (peak, big.nbytes)
