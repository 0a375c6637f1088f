"""Results a statistician keeps: pp.summary of draws, and pp.save / pp.load round trips of every sampler's result."""

import os

import numpy as np
import pytest
import xarray as xr

import ppdinfer as pp
import ppdinfer.pymc as ppm
from ppdinfer import generators, mechanisms, priors
from ppdinfer.models import beta_binomial, semidp_table

BETA_BINOMIAL = beta_binomial.model(n=50, epsilon=0.5)
COUNTS = pp.PPDModel(
    priors.Dirichlet([1.0, 1.0, 1.0]),
    generators.MultinomialTotal("total"),
    mechanisms.DiscreteLaplace(0.3),
    names="share",
    x_name="cases",
    dims={"cases": ("county",)},
)


@pytest.fixture(scope="module")
def results():
    z = {"total": 20}
    out = {
        "rejection": pp.rejection_sample(BETA_BINOMIAL, 20, draws=300, random_seed=1, progressbar=False),
        "importance": pp.importance_sample(COUNTS, [8, 7, 6], z, draws=2000, random_seed=2),
        "exact": pp.exact_posterior(COUNTS, [8, 7, 6], z, draws=200, random_seed=3),
        "pymc": ppm.sample_model(
            COUNTS,
            [8, 7, 6],
            z,
            draws=100,
            tune=100,
            chains=2,
            random_seed=4,
            progressbar=False,
            compute_convergence_checks=False,
        ),
        "semidp_pymc": semidp_table.model(mu=1.0, shape=(2, 2)).sample_pymc(
            [[3.6, 2.4], [1.4, 2.6]],
            semidp_table.public_information([6, 4], [5, 5]),
            draws=100,
            tune=100,
            chains=1,
            random_seed=5,
            progressbar=False,
            compute_convergence_checks=False,
        ),
    }
    out["predictive"] = pp.posterior_predictive(out["exact"], COUNTS, random_seed=6)
    return out


@pytest.mark.parametrize("name", ["rejection", "importance", "exact", "pymc", "semidp_pymc", "predictive"])
def test_save_and_load_give_the_same_result(results, name, tmp_path):
    result = results[name]
    path = tmp_path / f"{name}.nc"
    pp.save(result, path)
    loaded = pp.load(path)
    assert loaded.identical(result)  # values, dims, coordinates and attributes
    for original, back in zip(result.subtree, loaded.subtree):
        assert original.path == back.path
        assert {k: type(v) for k, v in original.attrs.items() if isinstance(v, (bool, list, str))} == {
            k: type(v) for k, v in back.attrs.items() if isinstance(v, (bool, list, str))
        }
        for variable in original.data_vars:
            assert back[variable].dtype == original[variable].dtype
    assert pp.summary(loaded).equals(pp.summary(result))
    assert "ppdinfer_json_attrs" not in loaded.attrs


def test_attributes_that_netcdf_cannot_hold_survive(results, tmp_path):
    rejection = results["rejection"]
    assert rejection.attrs["theta_names"] == ["p"] and rejection.attrs["complete"] == 1
    tree = rejection.copy()
    tree["posterior"].attrs.update(
        {"nested": {"a": [1, 2.5], "b": None}, "one": np.array([3.0]), "flag": np.bool_(False), "pair": (1, 2)}
    )
    pp.save(tree, tmp_path / "r.nc")
    loaded = pp.load(tmp_path / "r.nc")
    assert loaded.attrs["theta_names"] == ["p"] and loaded.attrs["complete"] == 1
    assert loaded["posterior"].attrs["nested"] == {"a": [1, 2.5], "b": None}
    assert loaded["posterior"].attrs["one"] == [3.0] and loaded["posterior"].attrs["flag"] is False
    assert loaded["posterior"].attrs["pair"] == [1, 2]
    assert "nested" not in rejection["posterior"].attrs and tree.attrs["complete"] == 1  # inputs untouched
    np.testing.assert_array_equal(loaded["posterior"]["x"].values, rejection["posterior"]["x"].values)


def test_plain_xarray_calls_read_a_saved_result(results, tmp_path):
    """The file is ordinary netCDF-4: xarray.open_datatree reads it (JSON attributes stay text)."""
    exact = results["exact"]
    pp.save(exact, tmp_path / "e.nc")
    with xr.open_datatree(tmp_path / "e.nc") as plain:
        assert sorted(plain.children) == sorted(exact.children)
        np.testing.assert_array_equal(plain["exact"]["x_pmf"].values, exact["exact"]["x_pmf"].values)
        assert plain["posterior"]["cases"].dims == ("chain", "draw", "county")
        assert plain.attrs["theta_names"] == '["share"]'


def test_save_and_load_refuse_bad_input(results, tmp_path):
    with pytest.raises(ValueError, match="result must be an xarray.DataTree"):
        pp.save(results["exact"]["posterior"].to_dataset(), tmp_path / "x.nc")
    tree = results["exact"].copy()
    tree.attrs["model"] = object()
    with pytest.raises(ValueError, match="attribute 'model' of group '/'"):
        pp.save(tree, tmp_path / "x.nc")
    tree = results["exact"].copy()
    tree.attrs["ppdinfer_json_attrs"] = "[]"
    with pytest.raises(ValueError, match="reserves"):
        pp.save(tree, tmp_path / "x.nc")
    with pytest.raises(ValueError, match="path .* is not a file"):
        pp.load(tmp_path / "missing.nc")


# -- pp.summary of draws ------------------------------------------------------------------


def test_summary_of_a_dataset_equals_that_of_the_tree(results):
    rejection = results["rejection"]
    assert pp.summary(rejection["posterior"].to_dataset()).equals(pp.summary(rejection))
    pymc = results["pymc"]
    assert pp.summary(pymc["posterior"].to_dataset(), include_x=True).equals(pp.summary(pymc))


def test_summary_of_a_function_of_x(results):
    """A DataArray computed from the draws: mean, sd and integer quantiles by hand."""
    draws = results["pymc"]["posterior"]["cases"]
    first_two = draws.isel(county=[0, 1]).sum("county")
    table = pp.summary(first_two, prob=0.8)
    values = first_two.values.reshape(-1)
    assert list(table.index) == ["cases"]
    assert table.loc["cases", "mean"] == pytest.approx(values.mean())
    assert table.loc["cases", "sd"] == pytest.approx(values.std())
    counts = np.array([np.mean(values <= v) for v in range(21)])
    lower = np.flatnonzero(counts > 0.1)[0]  # smallest v with P(X <= v) > 0.1
    upper = max(v for v in range(21) if np.mean(values >= v) > 0.1)  # largest v with P(X >= v) > 0.1
    assert (table.loc["cases", "lower"], table.loc["cases", "upper"]) == (lower, upper)
    # an unnamed array, its dims in another order, with an event axis
    unnamed = (draws * 1.0).rename(None).transpose("county", "draw", "chain")
    by_hand = draws.values.reshape(-1, 3).mean(axis=0)
    table = pp.summary(unnamed)
    assert list(table.index) == ["value[0]", "value[1]", "value[2]"]
    np.testing.assert_allclose(table["mean"].values, by_hand)


def test_summary_refuses_what_is_not_draws(results):
    with pytest.raises(ValueError, match="'chain' and 'draw'"):
        pp.summary(results["exact"]["exact"]["x_pmf"])
    with pytest.raises(ValueError, match="result must be an xarray DataTree, Dataset or DataArray"):
        pp.summary(np.zeros((1, 10)))
    with pytest.raises(ValueError, match="at least one variable"):
        pp.summary(xr.Dataset())


# -- a save that fails or is interrupted keeps the earlier file; load says what is wrong with a file ----------


def _leftovers(folder):
    return sorted(name for name in os.listdir(folder) if name.endswith(".tmp"))


def test_a_failed_save_keeps_the_earlier_file(results, tmp_path):
    path = tmp_path / "r.nc"
    pp.save(results["exact"], path)
    tree = results["exact"].copy()
    mixed = np.array([1, "a"], dtype=object)  # an object variable netCDF cannot hold
    tree["posterior"] = xr.DataTree(tree["posterior"].to_dataset().assign(mixed=("extra", mixed)))
    with pytest.raises(Exception) as caught:
        pp.save(tree, path)
    assert any("was not written" in note for note in getattr(caught.value, "__notes__", []))
    assert pp.load(path).identical(results["exact"])
    assert _leftovers(tmp_path) == []


def test_an_interrupted_save_keeps_the_earlier_file(results, tmp_path, monkeypatch):
    path = tmp_path / "r.nc"
    pp.save(results["exact"], path)

    def interrupted(self, target, **kwargs):
        with open(target, "wb") as file:  # half a file, then Ctrl-C
            file.write(b"\x89HDF\r\n\x1a\n" + bytes(100))
        raise KeyboardInterrupt

    monkeypatch.setattr(xr.DataTree, "to_netcdf", interrupted)
    with pytest.raises(KeyboardInterrupt):
        pp.save(results["rejection"], path)
    monkeypatch.undo()
    assert pp.load(path).identical(results["exact"])
    assert _leftovers(tmp_path) == []


def test_integers_beyond_64_bits_round_trip(results, tmp_path):
    tree = results["exact"].copy()
    tree.attrs.update(big=2**70, small=-(2**63), plain=7)
    pp.save(tree, tmp_path / "big.nc")
    loaded = pp.load(tmp_path / "big.nc")
    assert (loaded.attrs["big"], loaded.attrs["small"], loaded.attrs["plain"]) == (2**70, -(2**63), 7)


def test_load_says_what_is_wrong_with_a_file(results, tmp_path):
    def refused(path, match):
        with pytest.raises(ValueError, match=match) as caught:
            pp.load(path)
        assert str(path) in str(caught.value)
        assert caught.value.__cause__ is None and caught.value.__suppress_context__ is (
            caught.value.__context__ is not None
        )
        return caught.value

    (tmp_path / "empty.nc").write_bytes(b"")
    refused(tmp_path / "empty.nc", "is an empty file")
    (tmp_path / "notes.txt").write_text("draws, chains\n1, 2\n")
    refused(tmp_path / "notes.txt", "is not a netCDF-4 \\(HDF5\\) file: it begins with b'draws")
    xr.Dataset({"a": ("x", [1.0, 2.0])}).to_netcdf(tmp_path / "classic.nc", engine="scipy")
    refused(tmp_path / "classic.nc", "is a netCDF-3 file")
    pp.save(results["exact"], tmp_path / "whole.nc")
    whole = (tmp_path / "whole.nc").read_bytes()
    (tmp_path / "half.nc").write_bytes(whole[: len(whole) // 2])
    refused(tmp_path / "half.nc", "damaged or truncated")
    xr.DataTree().to_netcdf(tmp_path / "nothing.nc", engine="h5netcdf")
    refused(tmp_path / "nothing.nc", "holds no result")
    with pytest.raises(ValueError, match="path must be a str or os.PathLike .* got bytes"):
        pp.load(whole)
    with pytest.raises(ValueError, match="path must be a str or os.PathLike .* got bytes"):
        pp.save(results["exact"], b"r.nc")


def test_load_names_attributes_that_are_not_json(results, tmp_path):
    tree = results["exact"].copy()
    tree.attrs["ppdinfer_json_attrs"] = '["theta_names"]'
    tree.attrs["theta_names"] = "['share'"  # as a hand edit might leave it
    tree.to_netcdf(tmp_path / "edited.nc", engine="h5netcdf")
    with pytest.raises(ValueError, match="attribute 'theta_names' of group '/' should be JSON text") as caught:
        pp.load(tmp_path / "edited.nc")
    assert "edited.nc" in str(caught.value) and caught.value.__cause__ is None
    tree.attrs["ppdinfer_json_attrs"] = "[not json"
    tree.to_netcdf(tmp_path / "edited.nc", engine="h5netcdf")
    with pytest.raises(ValueError, match="attribute 'ppdinfer_json_attrs' of group '/'"):
        pp.load(tmp_path / "edited.nc")


# -- every sampler's result writes with xarray's own to_netcdf -------------------------------------------


@pytest.fixture(scope="module")
def tiny_pymc_fit():
    import pymc as pm

    with pm.Model(coords={"county": ["a", "b", "c"]}):
        share = pm.Dirichlet("share", a=np.ones(3), dims="county")
        cases = pm.Multinomial("cases", n=20, p=share, initval=np.array([7, 7, 6]), dims="county")
        ppm.DiscreteLaplace("y", mu=cases, epsilon=0.3, observed=[8, 7, 6], dims="county")
        return ppm.sample(
            draws=50, tune=50, chains=1, random_seed=7, progressbar=False, compute_convergence_checks=False
        )


@pytest.mark.parametrize("name", ["rejection", "importance", "exact", "pymc", "semidp_pymc", "predictive", "tiny"])
def test_results_write_with_xarrays_own_to_netcdf(results, tiny_pymc_fit, name, tmp_path):
    """No boolean attributes (netCDF has none): result.to_netcdf(path) works, open_datatree reads it back."""
    result = tiny_pymc_fit if name == "tiny" else results[name]
    result.to_netcdf(tmp_path / "plain.nc")
    with xr.open_datatree(tmp_path / "plain.nc") as back:
        assert sorted(back.children) == sorted(result.children)
        for group in result.children:
            for variable in result[group].data_vars:
                np.testing.assert_array_equal(back[group][variable].values, result[group][variable].values)


def test_the_rejection_flags_read_as_true_and_false(results):
    rejection = results["rejection"]
    assert rejection.attrs["complete"] == 1 and rejection.attrs["per_unit"] == 0
    assert rejection.attrs["complete"] and not rejection.attrs["per_unit"]


def test_summary_of_a_pymc_fit_uses_its_coords(tiny_pymc_fit):
    table = pp.summary(tiny_pymc_fit)
    assert sorted(table.index) == ["cases[a]", "cases[b]", "cases[c]", "share[a]", "share[b]", "share[c]"]


def test_summary_with_a_nan_draw_gives_no_interval(results):
    draws = results["rejection"]["posterior"]["p"].copy()
    draws[0, 3] = np.nan
    row = pp.summary(draws).loc["p"]
    assert row.isna().all()  # mean, sd and the interval: NaN, not an interval of the other draws
    with pytest.raises(ValueError, match="include_x must be True or False, got 'no'"):
        pp.summary(results["rejection"], include_x="no")
    assert list(pp.summary(results["rejection"], include_x=np.False_).index) == ["p"]
